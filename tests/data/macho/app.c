/* Fixture for test-macho: static and exported functions, a C++ unit beside it. */
int cxx_entry(int x);
int lib_twice(int x);

static int __attribute__((noinline)) static_helper(int x)
{
	return x * 7 + 3;
}

static int __attribute__((noinline)) static_other(int x)
{
	return static_helper(x) ^ 0x55;
}

int __attribute__((noinline)) exported_alpha(int x)
{
	return static_other(x) + 11;
}

int __attribute__((noinline)) exported_beta(int x)
{
	int s = 0;

	for (int i = 0; i < x; i++)
		s += exported_alpha(i);
	return s;
}

__attribute__((visibility("hidden"))) int __attribute__((noinline)) hidden_gamma(int x)
{
	return exported_beta(x) - 1;
}

int main(void)
{
	return hidden_gamma(3) + cxx_entry(2);
}
