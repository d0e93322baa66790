/*
 * A minimal test harness for the unit test programs: checks that report the
 * file, line and the values involved, and keep going so one run shows every
 * failure.  main() ends with `return sw_test_end();` (1 on any failure, 77
 * when sw_test_skip() was called: meson's "skipped").
 */
#ifndef SW_TEST_H
#define SW_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sw_test_failures;
static int sw_test_checks;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		sw_test_checks++;                                                                  \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			sw_test_failures++;                                                        \
		}                                                                                  \
	} while (0)

#define CHECK_INT(a, b)                                                                            \
	do {                                                                                       \
		long long va_ = (long long)(a), vb_ = (long long)(b);                              \
		sw_test_checks++;                                                                  \
		if (va_ != vb_) {                                                                  \
			fprintf(stderr, "%s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, \
				#b, va_, vb_);                                                     \
			sw_test_failures++;                                                        \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *sa_ = (a), *sb_ = (b);                                                 \
		sw_test_checks++;                                                                  \
		if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                       \
			fprintf(stderr, "%s:%d: %s == %s: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
				#a, #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");               \
			sw_test_failures++;                                                        \
		}                                                                                  \
	} while (0)

static inline void sw_test_skip(const char *why)
{
	printf("SKIP: %s\n", why);
	exit(77);
}

static inline int sw_test_end(void)
{
	printf("%d checks, %d failed\n", sw_test_checks, sw_test_failures);
	return sw_test_failures ? 1 : 0;
}

#endif
