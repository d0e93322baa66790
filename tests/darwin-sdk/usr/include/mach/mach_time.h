/* Stand-in: Mach absolute time (stops in sleep) and continuous time (does not). */
#ifndef SW_SDK_MACH_TIME_H
#define SW_SDK_MACH_TIME_H
#include <mach/mach.h>
typedef struct {
	uint32_t numer;
	uint32_t denom;
} mach_timebase_info_data_t;
typedef mach_timebase_info_data_t *mach_timebase_info_t;
kern_return_t mach_timebase_info(mach_timebase_info_t info);
uint64_t mach_absolute_time(void);
uint64_t mach_continuous_time(void);
kern_return_t mach_wait_until(uint64_t deadline);
#endif
