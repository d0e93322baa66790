/*
 * The Darwin backend's capture (injector/darwin/capture-mach.c) and thread
 * list (threads-mach.c), compiled for Linux against a scripted fake of the
 * Mach calls they make.  Each case scripts what thread_suspend,
 * thread_get_state, thread_info, vm_read_overwrite, task_threads and the
 * port calls answer, and the fake records what was called, in order, so a
 * case can check: one suspend and one resume per capture, the resume on
 * every error path, KERN_ABORTED retried with the count reset, a vanished
 * thread reported as -ESRCH, the page-by-page fallback keeping the readable
 * prefix, every port and array the list was given released once.
 *
 * The capture objects are linked with --wrap for the calls that take locks
 * (malloc and friends, stdio, pthread mutexes, dyld-like lookups): any such
 * call while the fake holds a thread fails the test.  The same test built
 * from a copy of capture-mach.c with a planted malloc() between suspend and
 * resume must fail (meson's should_fail), which proves the check bites.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mach/mach.h>
#include <mach/mach_time.h>
#include <mach/mach_vm.h>

#include "darwin/darwin.h"
#include "test.h"

/* ---- the fake ---- */

#define MAX_CALLS 64
#define SELF_PORT 0x707
#define STACK_SZ  (64 * 1024)

enum call {
	C_SUSPEND,
	C_RESUME,
	C_STATE,
	C_INFO,
	C_READ,
	C_THREADS,
	C_VMDEALLOC,
	C_PORTDEALLOC,
	C_REGION
};

static struct {
	enum call calls[MAX_CALLS];
	int ncalls;
	int held;       /* suspend count of the thread under test */
	int lock_calls; /* lock-taking calls while held */
	kern_return_t suspend_kr;
	kern_return_t state_kr[8]; /* answers of successive thread_get_state calls */
	int state_calls;
	int bad_counts; /* thread_get_state called with a count not reset */
	kern_return_t resume_kr;
	int run_state;
	bool bulk_fails;      /* the bulk read fails even where pages are readable */
	uint64_t readable_hi; /* reads at or past this address fail */
	int reads;
	/* thread list */
	mach_port_t ports[8];
	int nports;
	int port_deallocs[8];
	int array_deallocs;
	vm_size_t array_size;
} f;

static uint8_t stack_mem[STACK_SZ] __attribute__((aligned(4096)));
static uint64_t fake_sp;

mach_port_t mach_task_self_ = 0x103;

static void record(enum call c)
{
	if (f.ncalls < MAX_CALLS)
		f.calls[f.ncalls++] = c;
}

static void reset(void)
{
	memset(&f, 0, sizeof(f));
	f.resume_kr = KERN_SUCCESS;
	f.run_state = TH_STATE_RUNNING;
	f.readable_hi = (uint64_t)(uintptr_t)(stack_mem + STACK_SZ);
	fake_sp = (uint64_t)(uintptr_t)(stack_mem + STACK_SZ - 3 * 4096 - 64);
	for (size_t i = 0; i < STACK_SZ; i++)
		stack_mem[i] = (uint8_t)(i * 7 + 1);
}

kern_return_t thread_suspend(thread_act_t th)
{
	(void)th;
	record(C_SUSPEND);
	if (f.suspend_kr == KERN_SUCCESS)
		f.held++;
	return f.suspend_kr;
}

kern_return_t thread_resume(thread_act_t th)
{
	(void)th;
	record(C_RESUME);
	if (f.held > 0)
		f.held--;
	return f.resume_kr;
}

static void fill_state(thread_state_t state)
{
#if defined(__x86_64__)
	x86_thread_state64_t *st = (x86_thread_state64_t *)state;
	memset(st, 0, sizeof(*st));
	st->__rsp = fake_sp;
	st->__rbp = fake_sp + 32;
	st->__rip = 0x401234;
#else
	arm_thread_state64_t *st = (arm_thread_state64_t *)state;
	memset(st, 0, sizeof(*st));
	st->__sp = fake_sp;
	st->__fp = fake_sp + 32;
	st->__lr = 0x401000;
	st->__pc = 0x401234;
#endif
}

kern_return_t thread_get_state(thread_act_t th, thread_state_flavor_t flavor, thread_state_t state,
			       mach_msg_type_number_t *count)
{
	(void)th;
#if defined(__x86_64__)
	mach_msg_type_number_t want = 42;
	CHECK_INT(flavor, x86_THREAD_STATE64);
#else
	mach_msg_type_number_t want = 68;
	CHECK_INT(flavor, ARM_THREAD_STATE64);
#endif
	if (f.held) /* the list reads a stack pointer unheld: only count the capture's */
		record(C_STATE);
	if (*count != want)
		f.bad_counts++;
	kern_return_t kr =
	    f.held ? f.state_kr[f.state_calls < 8 ? f.state_calls : 7] : KERN_SUCCESS;
	if (f.held)
		f.state_calls++;
	if (kr != KERN_SUCCESS) {
		*count = 0; /* what a failed call may leave behind */
		return kr;
	}
	fill_state(state);
	*count = want;
	return KERN_SUCCESS;
}

kern_return_t thread_info(thread_act_t th, thread_flavor_t flavor, thread_info_t info,
			  mach_msg_type_number_t *count)
{
	record(C_INFO);
	if (flavor == THREAD_BASIC_INFO) {
		CHECK_INT(*count, 10);
		struct thread_basic_info *b = (struct thread_basic_info *)info;
		memset(b, 0, sizeof(*b));
		b->run_state = f.run_state;
		b->user_time.seconds = 1;
		b->system_time.microseconds = 500;
		return KERN_SUCCESS;
	}
	if (flavor == THREAD_IDENTIFIER_INFO) {
		CHECK_INT(*count, 6);
		struct thread_identifier_info *id = (struct thread_identifier_info *)info;
		memset(id, 0, sizeof(*id));
		id->thread_id = 1000 + th;
		return KERN_SUCCESS;
	}
	if (flavor == THREAD_EXTENDED_INFO) {
		CHECK_INT(*count, 28);
		struct thread_extended_info *x = (struct thread_extended_info *)info;
		memset(x, 'n', sizeof(*x)); /* a name filling all 64 bytes, unterminated */
		if (th == 2)
			snprintf(x->pth_name, sizeof(x->pth_name), "com.apple.main-thread");
		return KERN_SUCCESS;
	}
	return KERN_INVALID_ARGUMENT;
}

kern_return_t vm_read_overwrite(vm_map_t task, vm_address_t addr, vm_size_t size, vm_address_t data,
				vm_size_t *out_size)
{
	CHECK_INT(task, mach_task_self_);
	record(C_READ);
	f.reads++;
	uint64_t lo = (uint64_t)(uintptr_t)stack_mem;
	if (addr < lo || addr + size > f.readable_hi || (f.bulk_fails && size > 4096))
		return KERN_INVALID_ADDRESS;
	memcpy((void *)data, (const void *)addr, size);
	*out_size = size;
	return KERN_SUCCESS;
}

kern_return_t task_threads(task_t task, thread_act_array_t *list, mach_msg_type_number_t *count)
{
	CHECK_INT(task, mach_task_self_);
	record(C_THREADS);
	f.array_size = (vm_size_t)f.nports * sizeof(thread_act_t);
	*list = malloc(f.array_size); /* the fake's own vm_allocate */
	memcpy(*list, f.ports, f.array_size);
	*count = (mach_msg_type_number_t)f.nports;
	return KERN_SUCCESS;
}

kern_return_t vm_deallocate(vm_map_t task, vm_address_t addr, vm_size_t size)
{
	(void)task;
	record(C_VMDEALLOC);
	CHECK_INT(size, f.array_size);
	f.array_deallocs++;
	free((void *)addr);
	return KERN_SUCCESS;
}

kern_return_t mach_port_deallocate(ipc_space_t task, mach_port_name_t name)
{
	(void)task;
	record(C_PORTDEALLOC);
	for (int i = 0; i < f.nports; i++)
		if (f.ports[i] == name)
			f.port_deallocs[i]++;
	return KERN_SUCCESS;
}

kern_return_t mach_vm_region(vm_map_t task, mach_vm_address_t *addr, mach_vm_size_t *size,
			     vm_region_flavor_t flavor, vm_region_info_t info,
			     mach_msg_type_number_t *count, mach_port_t *object_name)
{
	(void)task;
	(void)info;
	record(C_REGION);
	CHECK_INT(flavor, VM_REGION_BASIC_INFO_64);
	CHECK_INT(*count, 9);
	*addr = (uint64_t)(uintptr_t)stack_mem;
	*size = STACK_SZ;
	*object_name = MACH_PORT_NULL;
	return KERN_SUCCESS;
}

uint64_t mach_absolute_time(void)
{
	return 42;
}

/* ---- calls that take locks: forbidden while the fake holds a thread ---- */

#define FORBIDDEN(ret, name, params, args)                                                         \
	ret __real_##name params;                                                                  \
	ret __wrap_##name params;                                                                  \
	ret __wrap_##name params                                                                   \
	{                                                                                          \
		if (f.held)                                                                        \
			f.lock_calls++;                                                            \
		return __real_##name args;                                                         \
	}

FORBIDDEN(void *, malloc, (size_t n), (n))
FORBIDDEN(void *, calloc, (size_t n, size_t s), (n, s))
FORBIDDEN(void *, realloc, (void *p, size_t n), (p, n))
FORBIDDEN(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))
FORBIDDEN(int, puts, (const char *s), (s))
FORBIDDEN(int, dladdr, (const void *a, Dl_info *i), (a, i))

void __real_free(void *p);
void __wrap_free(void *p);
void __wrap_free(void *p)
{
	if (f.held)
		f.lock_calls++;
	__real_free(p);
}

/* ---- the cases ---- */

static const struct swa_thread target = {.id = 1, .handle = 0x2003, .stack_lo = 0, .stack_hi = 0};

static struct swa_thread stack_target(void)
{
	struct swa_thread t = target;
	t.stack_lo = (uint64_t)(uintptr_t)stack_mem;
	t.stack_hi = (uint64_t)(uintptr_t)(stack_mem + STACK_SZ);
	return t;
}

static uint8_t copy[STACK_SZ];

static int capture(const struct swa_thread *t, struct swa_capture *cap)
{
	memset(cap, 0, sizeof(*cap));
	cap->copy = copy;
	cap->copy_cap = sizeof(copy);
	memset(copy, 0, sizeof(copy));
	return swa_darwin_capture(t, cap);
}

static int count_calls(enum call c)
{
	int n = 0;
	for (int i = 0; i < f.ncalls; i++)
		n += f.calls[i] == c;
	return n;
}

/* One suspend, one resume, nothing after the resume, nothing held at the end. */
static void check_balanced(const char *what)
{
	int s = count_calls(C_SUSPEND), r = count_calls(C_RESUME);
	if (s != 1 || r != 1 || f.held)
		fprintf(stderr, "%s: %d suspends, %d resumes, held %d\n", what, s, r, f.held);
	CHECK_INT(s, 1);
	CHECK_INT(r, 1);
	CHECK_INT(f.held, 0);
	CHECK(f.ncalls > 0 && f.calls[f.ncalls - 1] == C_RESUME);
	CHECK_INT(f.lock_calls, 0);
}

static void test_plain(void)
{
	reset();
	struct swa_thread t = stack_target();
	struct swa_capture cap;
	CHECK_INT(capture(&t, &cap), 0);
	check_balanced("plain");
	CHECK_INT(f.bad_counts, 0);
	CHECK_INT(cap.regs.r[SWA_REG_SP], fake_sp);
	CHECK_INT(cap.regs.pc, 0x401234);
	/* the copy starts at the red zone below sp */
	CHECK_INT(cap.stack_lo, fake_sp - SWA_DARWIN_RED_ZONE);
	CHECK_INT(cap.copy_len, t.stack_hi - cap.stack_lo);
	CHECK(memcmp(cap.copy, (const void *)(uintptr_t)cap.stack_lo, cap.copy_len) == 0);
	CHECK_INT(cap.flags, 0);
	CHECK_INT(f.reads, 1); /* one bulk read */
	/* sp nearer the stack's bottom than the red zone: from the bottom */
	reset();
	fake_sp = t.stack_lo + 8;
	CHECK_INT(capture(&t, &cap), 0);
	CHECK_INT(cap.stack_lo, t.stack_lo);
	CHECK_INT(cap.copy_len, t.stack_hi - t.stack_lo);
}

static void test_aborted_retried(void)
{
	reset();
	f.state_kr[0] = KERN_ABORTED;
	f.state_kr[1] = KERN_ABORTED;
	struct swa_thread t = stack_target();
	struct swa_capture cap;
	CHECK_INT(capture(&t, &cap), 0);
	check_balanced("aborted");
	CHECK_INT(f.state_calls, 3);
	CHECK_INT(f.bad_counts, 0); /* the count was reset before each call */
	CHECK_INT(cap.regs.pc, 0x401234);
}

static void test_aborted_forever(void)
{
	reset();
	for (int i = 0; i < 8; i++)
		f.state_kr[i] = KERN_ABORTED;
	struct swa_thread t = stack_target();
	struct swa_capture cap;
	CHECK(capture(&t, &cap) < 0);
	check_balanced("aborted forever");
	CHECK(f.state_calls >= 2 && f.state_calls <= 8);
	CHECK_INT(f.bad_counts, 0);
	CHECK_INT(f.reads, 0);
}

static void test_state_fails(void)
{
	reset();
	f.state_kr[0] = KERN_FAILURE;
	struct swa_thread t = stack_target();
	struct swa_capture cap;
	CHECK_INT(capture(&t, &cap), -EIO);
	check_balanced("state fails");
	CHECK_INT(f.reads, 0);
}

static void test_vanished(void)
{
	/* gone before the suspend: nothing to resume */
	reset();
	f.suspend_kr = MACH_SEND_INVALID_DEST;
	struct swa_thread t = stack_target();
	struct swa_capture cap;
	CHECK_INT(capture(&t, &cap), -ESRCH);
	CHECK_INT(count_calls(C_RESUME), 0);
	CHECK_INT(count_calls(C_STATE), 0);
	reset();
	f.suspend_kr = KERN_TERMINATED;
	CHECK_INT(capture(&t, &cap), -ESRCH);
	/* gone while held: still resumed */
	reset();
	f.state_kr[0] = KERN_TERMINATED;
	f.resume_kr = KERN_TERMINATED;
	CHECK_INT(capture(&t, &cap), -ESRCH);
	check_balanced("vanished while held");
	enum swa_thread_state st;
	reset();
	CHECK_INT(swa_plat_thread_state(&t, &st), 0);
	CHECK_INT(st, SWA_THREAD_RUNNING);
}

static void test_page_fallback(void)
{
	reset();
	f.bulk_fails = true;
	/* readable: sp up to one page below the top (the top page is unmapped) */
	f.readable_hi = (uint64_t)(uintptr_t)(stack_mem + STACK_SZ - 4096);
	struct swa_thread t = stack_target();
	struct swa_capture cap;
	CHECK_INT(capture(&t, &cap), 0);
	check_balanced("page fallback");
	size_t want = (size_t)(f.readable_hi - (fake_sp - SWA_DARWIN_RED_ZONE));
	CHECK_INT(cap.copy_len, want);
	CHECK(cap.flags & SWA_CAPTURE_PARTIAL);
	CHECK(memcmp(cap.copy, (const void *)(uintptr_t)cap.stack_lo, cap.copy_len) == 0);
	CHECK(f.reads >= 3); /* the bulk, then one page at a time */
	/* every page read is within one page */
	reset();
	f.bulk_fails = true;
	CHECK_INT(capture(&t, &cap), 0);
	CHECK_INT(cap.copy_len, t.stack_hi - (fake_sp - SWA_DARWIN_RED_ZONE));
	CHECK_INT(cap.flags & SWA_CAPTURE_PARTIAL, 0);
}

static void test_bounds(void)
{
	/* no bounds known: nothing is read outside them, the thread is still resumed */
	reset();
	struct swa_capture cap;
	CHECK_INT(capture(&target, &cap), 0);
	check_balanced("no bounds");
	CHECK_INT(cap.copy_len, 0);
	CHECK(cap.flags & SWA_CAPTURE_PARTIAL);
	CHECK_INT(f.reads, 0);
	/* a stack larger than the buffer: the part nearest sp */
	reset();
	struct swa_thread t = stack_target();
	memset(&cap, 0, sizeof(cap));
	cap.copy = copy;
	cap.copy_cap = 1000;
	CHECK_INT(swa_darwin_capture(&t, &cap), 0);
	CHECK_INT(cap.copy_len, 1000);
	CHECK(cap.flags & SWA_CAPTURE_PARTIAL);
	check_balanced("capped");
	/* a waiting thread */
	reset();
	f.run_state = TH_STATE_WAITING;
	CHECK_INT(capture(&t, &cap), 0);
	CHECK(cap.flags & SWA_CAPTURE_BLOCKED);
	CHECK(!(cap.flags & SWA_CAPTURE_STILL)); /* resumed before the unwind */
	/* never the calling thread */
	reset();
	swa_darwin_self_port = 0x2003;
	CHECK_INT(capture(&target, &cap), -EINVAL);
	CHECK_INT(count_calls(C_SUSPEND), 0);
	swa_darwin_self_port = SELF_PORT;
}

static void test_thread_list(void)
{
	reset();
	swa_darwin_self_port = SELF_PORT;
	mach_port_t ports[] = {2, SELF_PORT, 5, 6};
	memcpy(f.ports, ports, sizeof(ports));
	f.nports = 4;
	struct swa_thread out[2];
	int n = swa_plat_list_threads(out, 2);
	CHECK_INT(n, 2);
	CHECK_INT(out[0].handle, 2);
	CHECK_INT(out[0].id, 1002);
	CHECK_STR(out[0].name, "com.apple.main-thread");
	CHECK_INT(strlen(out[1].name), SWA_THREAD_NAME_MAX - 1); /* cut, terminated */
	CHECK_INT(out[1].handle, 5);
	CHECK_INT(out[0].stack_lo, (uint64_t)(uintptr_t)stack_mem);
	CHECK_INT(out[0].stack_hi, (uint64_t)(uintptr_t)(stack_mem + STACK_SZ));
	CHECK_INT(f.array_deallocs, 1);
	/* the agent's own port and the one past the cap went back at once */
	CHECK_INT(f.port_deallocs[1], 1);
	CHECK_INT(f.port_deallocs[3], 1);
	CHECK_INT(f.port_deallocs[0], 0);
	swa_plat_release_threads(out, (size_t)n);
	for (int i = 0; i < 4; i++)
		CHECK_INT(f.port_deallocs[i], 1);
	swa_plat_release_threads(out, (size_t)n); /* twice: nothing more */
	for (int i = 0; i < 4; i++)
		CHECK_INT(f.port_deallocs[i], 1);
	uint64_t ns = 0;
	CHECK_INT(swa_plat_thread_cpu_ns(&out[0], &ns), 0);
}

int main(void)
{
	test_plain();
	test_aborted_retried();
	test_aborted_forever();
	test_state_fails();
	test_vanished();
	test_page_fallback();
	test_bounds();
	test_thread_list();
	return sw_test_end();
}
