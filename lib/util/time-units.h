/*
 * Time units of the host library and the command, defined once: the wire
 * carries nanoseconds (and the configuration milliseconds and
 * microseconds), the output prints milliseconds and seconds.  The agent
 * has its own copy in injector/platform.h, as it shares only wire/ with
 * the host library.
 */
#ifndef SW_TIME_UNITS_H
#define SW_TIME_UNITS_H

#include <stdint.h>
#include <time.h>

#define SW_NS_PER_US 1000ull
#define SW_NS_PER_MS 1000000ull
#define SW_NS_PER_S  1000000000ull
#define SW_US_PER_MS 1000u
#define SW_MS_PER_S  1000u

static inline uint64_t sw_timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * SW_NS_PER_S + (uint64_t)ts->tv_nsec;
}

static inline uint64_t sw_timespec_ms(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * SW_MS_PER_S + (uint64_t)ts->tv_nsec / SW_NS_PER_MS;
}

/* Adds ms to ts, carrying into seconds. */
static inline void sw_timespec_add_ms(struct timespec *ts, uint64_t ms)
{
	ts->tv_sec += (time_t)(ms / SW_MS_PER_S);
	ts->tv_nsec += (long)(ms % SW_MS_PER_S * SW_NS_PER_MS);
	if (ts->tv_nsec >= (long)SW_NS_PER_S) {
		ts->tv_sec++;
		ts->tv_nsec -= (long)SW_NS_PER_S;
	}
}

static inline double sw_ns_to_ms(uint64_t ns)
{
	return (double)ns / (double)SW_NS_PER_MS;
}

static inline double sw_ns_to_s(uint64_t ns)
{
	return (double)ns / (double)SW_NS_PER_S;
}

#endif
