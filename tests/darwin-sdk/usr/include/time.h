/* Stand-in: POSIX clocks as Darwin numbers them. */
#ifndef SW_SDK_TIME_H
#define SW_SDK_TIME_H
#include <sys/types.h>
struct timespec {
	time_t tv_sec;
	long tv_nsec;
};
typedef enum {
	CLOCK_REALTIME = 0,
	CLOCK_MONOTONIC_RAW = 4,
	CLOCK_MONOTONIC = 6,
	CLOCK_UPTIME_RAW = 8,
} clockid_t;
int clock_gettime(clockid_t clock, struct timespec *ts);
#endif
