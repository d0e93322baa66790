// Fixture for test-macho: C++ methods (mangled names in the symbol table).
namespace fixture {
class Counter {
public:
	explicit Counter(int start) : value_(start) {}
	__attribute__((noinline)) int bump(int by);
	__attribute__((noinline)) static int twice(int x);

private:
	int value_;
};

int Counter::bump(int by)
{
	value_ += by;
	return value_;
}

int Counter::twice(int x)
{
	return x * 2;
}
} // namespace fixture

extern "C" int cxx_entry(int x)
{
	fixture::Counter c(x);
	return c.bump(fixture::Counter::twice(x));
}
