/* Fixture for test-symsearch: one small program per VARIANT, each with its own build-id. */
#ifndef VARIANT
#define VARIANT 0
#endif

int __attribute__((noinline)) variant_value(int x)
{
	return x * 13 + VARIANT;
}

int main(int argc, char **argv)
{
	(void)argv;
	return variant_value(argc) & 1;
}
