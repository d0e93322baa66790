/*
 * A stand-in for the Darwin agent, linked by tests/test-dylib-check.py into
 * a dylib of each target; each PLANT_* macro adds one defect that
 * check-dylib must name.
 */
#include <stddef.h>

#define API __attribute__((visibility("default")))

typedef unsigned int mach_port_t;
extern mach_port_t mach_task_self_;
extern void *malloc(size_t);
extern void free(void *);
extern unsigned long long mach_absolute_time(void);
extern void *CFRunLoopGetMain(void);
extern const void *kCFRunLoopCommonModes;
extern int thread_suspend(mach_port_t);

volatile unsigned long long swa_sink;

static void sink(const void *p)
{
	swa_sink += (unsigned long long)(size_t)p;
}

API void stallwatch_before_wait(void)
{
	void *p = malloc(16);
	sink(p);
	free(p);
	sink(CFRunLoopGetMain());
	sink(kCFRunLoopCommonModes);
	swa_sink += mach_absolute_time();
#ifdef PLANT_DLADDR
	extern int dladdr(const void *, void *);
	swa_sink += (unsigned long long)dladdr(p, NULL);
#endif
#ifdef PLANT_OBJC
	extern void *objc_msgSend(void *, void *);
	sink(objc_msgSend(p, p));
#endif
#ifdef PLANT_UNLISTED
	extern int thread_suspend(mach_port_t);
	swa_sink += (unsigned long long)thread_suspend(mach_task_self_);
#endif
#ifdef PLANT_WRONG_LIBRARY
	extern void *CFStringCreateCopy(void *, void *);
	sink(CFStringCreateCopy(p, p));
#endif
#ifdef PLANT_EXTRA_LIBRARY
	extern int extra_call(void);
	swa_sink += (unsigned long long)extra_call();
#endif
}

#ifndef PLANT_MISSING_EXPORT
API
#endif
    void
    stallwatch_after_wait(void)
{
	swa_sink++;
}

#ifdef PLANT_EXTRA_EXPORT
API void swa_internal_helper(void)
{
	swa_sink--;
}
#endif
