/* Stand-in: the libdispatch calls the agent uses, seen from C. */
#ifndef SW_SDK_DISPATCH_H
#define SW_SDK_DISPATCH_H
#include <stdint.h>
typedef struct dispatch_semaphore_s *dispatch_semaphore_t;
typedef struct dispatch_queue_s *dispatch_queue_t;
typedef uint64_t dispatch_time_t;
typedef void (*dispatch_function_t)(void *);
#define DISPATCH_TIME_NOW     (0ull)
#define DISPATCH_TIME_FOREVER (~0ull)
dispatch_semaphore_t dispatch_semaphore_create(long value);
long dispatch_semaphore_signal(dispatch_semaphore_t sem);
long dispatch_semaphore_wait(dispatch_semaphore_t sem, dispatch_time_t timeout);
dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta);
void dispatch_async_f(dispatch_queue_t queue, void *context, dispatch_function_t work);
/* the main queue is a global object of libdispatch */
extern struct dispatch_queue_s _dispatch_main_q;
#define dispatch_get_main_queue() (&_dispatch_main_q)
#endif
