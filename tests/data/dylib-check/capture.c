/*
 * A stand-in for the capture TU (from thread_suspend to thread_resume),
 * compiled by tests/test-dylib-check.py; PLANT_MALLOC and PLANT_LOCK add
 * calls that must never run while a thread is held.
 */
typedef unsigned int mach_port_t;
typedef int kern_return_t;
extern mach_port_t mach_task_self_;
extern kern_return_t thread_suspend(mach_port_t);
extern kern_return_t thread_resume(mach_port_t);
extern kern_return_t thread_get_state(mach_port_t, int, unsigned *, unsigned *);
extern kern_return_t vm_read_overwrite(mach_port_t, unsigned long, unsigned long, unsigned long,
				       unsigned long *);

int swa_capture_thread(mach_port_t t, unsigned *state, unsigned long lo, unsigned long n,
		       void *copy);
int swa_capture_thread(mach_port_t t, unsigned *state, unsigned long lo, unsigned long n,
		       void *copy)
{
	unsigned count = 68;
	unsigned long got = 0;
	kern_return_t kr = thread_suspend(t);

	if (kr)
		return -1;
	kr = thread_get_state(t, 6, state, &count);
	if (!kr)
		kr = vm_read_overwrite(mach_task_self_, lo, n, (unsigned long)copy, &got);
#ifdef PLANT_MALLOC
	extern void *malloc(unsigned long);
	state[0] = (unsigned)(unsigned long)malloc(8);
#endif
#ifdef PLANT_LOCK
	extern int pthread_mutex_lock(void *);
	pthread_mutex_lock(copy);
#endif
	thread_resume(t);
	return kr ? -1 : (int)got;
}
