/* Fixture for test-macho: a dylib whose exported names survive stripping in the export trie. */
static int __attribute__((noinline)) lib_local(int x)
{
	return x + 5;
}

int __attribute__((noinline)) lib_twice(int x)
{
	return lib_local(x) * 2;
}

int __attribute__((noinline)) lib_thrice(int x)
{
	return lib_twice(x) + x;
}
