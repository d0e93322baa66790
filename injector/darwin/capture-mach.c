/*
 * Capturing a thread on Darwin: everything between thread_suspend() and
 * thread_resume(), in a translation unit of its own so that its object file
 * can be checked to import Mach calls and nothing else.  While the thread
 * is held it may own any lock of the process (malloc's, dyld's, the
 * Objective-C runtime's, the pthread list's), so nothing here allocates,
 * logs, asks dyld or pthread, or touches the heap: the registers go into
 * cap->regs, the stack into the buffer the watchdog prepared.
 *
 * thread_get_state() is called with the count reset each time and retried
 * on KERN_ABORTED (the kernel was interrupted, not refused).  The live stack,
 * from the stack pointer up to the top the thread list gave, is copied with
 * one vm_read_overwrite(); when that fails (a guard page, a stack shrunk
 * under us) the copy goes page by page and keeps the readable prefix,
 * flagged partial.  thread_resume() runs on every path, errors included.
 */
#include <errno.h>

#include "darwin.h"

#define STATE_RETRIES 4
#define PAGE_BYTES    4096u

int swa_darwin_errno(kern_return_t kr)
{
	switch (kr) {
	case KERN_SUCCESS:
		return 0;
	case KERN_TERMINATED:
	case KERN_INVALID_ARGUMENT:
	case MACH_SEND_INVALID_DEST:
		return -ESRCH;
	case KERN_ABORTED:
		return -EINTR;
	case KERN_INVALID_ADDRESS:
	case KERN_PROTECTION_FAILURE:
		return -EFAULT;
	default:
		return -EIO;
	}
}

#if defined(__aarch64__)
static kern_return_t get_regs(thread_act_t th, struct swa_regs *regs)
{
	arm_thread_state64_t st;
	kern_return_t kr = KERN_ABORTED;
	for (int i = 0; i < STATE_RETRIES && kr == KERN_ABORTED; i++) {
		mach_msg_type_number_t count = ARM_THREAD_STATE64_COUNT;
		kr = thread_get_state(th, ARM_THREAD_STATE64, (thread_state_t)&st, &count);
	}
	if (kr != KERN_SUCCESS)
		return kr;
	for (unsigned i = 0; i < 29; i++)
		swa_regs_set(regs, i, st.__x[i]);
	swa_regs_set(regs, 29, (uint64_t)arm_thread_state64_get_fp(st));
	swa_regs_set(regs, 30, (uint64_t)arm_thread_state64_get_lr(st));
	swa_regs_set(regs, 31, (uint64_t)arm_thread_state64_get_sp(st));
	regs->pc = (uint64_t)arm_thread_state64_get_pc(st);
	return KERN_SUCCESS;
}
#elif defined(__x86_64__)
static kern_return_t get_regs(thread_act_t th, struct swa_regs *regs)
{
	x86_thread_state64_t st;
	kern_return_t kr = KERN_ABORTED;
	for (int i = 0; i < STATE_RETRIES && kr == KERN_ABORTED; i++) {
		mach_msg_type_number_t count = x86_THREAD_STATE64_COUNT;
		kr = thread_get_state(th, x86_THREAD_STATE64, (thread_state_t)&st, &count);
	}
	if (kr != KERN_SUCCESS)
		return kr;
	/* DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, 16 = rip */
	const uint64_t v[17] = {st.__rax, st.__rdx, st.__rcx, st.__rbx, st.__rsi, st.__rdi,
				st.__rbp, st.__rsp, st.__r8,  st.__r9,  st.__r10, st.__r11,
				st.__r12, st.__r13, st.__r14, st.__r15, st.__rip};
	for (unsigned i = 0; i < 17; i++)
		swa_regs_set(regs, i, v[i]);
	regs->pc = st.__rip;
	return KERN_SUCCESS;
}
#endif

/* Copies [lo, lo + len) page by page; returns the readable prefix's length. */
static size_t copy_pages(uint64_t lo, uint8_t *dst, size_t len)
{
	size_t done = 0;
	while (done < len) {
		uint64_t addr = lo + done;
		size_t chunk = PAGE_BYTES - (size_t)(addr & (PAGE_BYTES - 1));
		if (chunk > len - done)
			chunk = len - done;
		vm_size_t got = 0;
		kern_return_t kr = vm_read_overwrite(mach_task_self(), (vm_address_t)addr, chunk,
						     (vm_address_t)(dst + done), &got);
		if (kr != KERN_SUCCESS || got != chunk)
			break;
		done += chunk;
	}
	return done;
}

static void copy_stack(const struct swa_thread *t, struct swa_capture *cap)
{
	uint64_t sp = cap->regs.r[SWA_REG_SP];
	cap->stack_lo = sp;
	cap->stack_hi = t->stack_hi;
	cap->copy_len = 0;
	if (!t->stack_hi || sp < t->stack_lo || sp >= t->stack_hi) {
		/* a stack pointer outside the known stack (a signal stack, a fiber) */
		cap->stack_hi = 0;
		cap->flags |= SWA_CAPTURE_PARTIAL;
		return;
	}
	/* from the red zone up: an epilogue's call-frame information may name slots there */
	uint64_t lo =
	    sp - t->stack_lo > SWA_DARWIN_RED_ZONE ? sp - SWA_DARWIN_RED_ZONE : t->stack_lo;
	cap->stack_lo = lo;
	size_t len = (size_t)(t->stack_hi - lo);
	if (len > cap->copy_cap) {
		len = cap->copy_cap;
		cap->flags |= SWA_CAPTURE_PARTIAL;
	}
	vm_size_t got = 0;
	kern_return_t kr = vm_read_overwrite(mach_task_self(), (vm_address_t)lo, len,
					     (vm_address_t)cap->copy, &got);
	if (kr == KERN_SUCCESS && got == len) {
		cap->copy_len = len;
		return;
	}
	cap->copy_len = copy_pages(lo, cap->copy, len);
	if (cap->copy_len < len)
		cap->flags |= SWA_CAPTURE_PARTIAL;
}

static bool was_waiting(thread_act_t th)
{
	struct thread_basic_info info;
	mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
	if (thread_info(th, THREAD_BASIC_INFO, (thread_info_t)&info, &count) != KERN_SUCCESS)
		return false;
	return info.run_state == TH_STATE_WAITING || info.run_state == TH_STATE_UNINTERRUPTIBLE;
}

int swa_darwin_capture(const struct swa_thread *t, struct swa_capture *cap)
{
	thread_act_t th = (thread_act_t)t->handle;
	if (th == MACH_PORT_NULL || th == swa_darwin_self_port)
		return -EINVAL; /* never the watchdog itself: it would never resume */
	uint64_t t0 = mach_absolute_time();
	kern_return_t kr = thread_suspend(th);
	if (kr != KERN_SUCCESS)
		return swa_darwin_errno(kr);
	cap->flags = 0;
	cap->regs.valid = 0;
	kr = get_regs(th, &cap->regs);
	if (kr == KERN_SUCCESS) {
		if (was_waiting(th))
			cap->flags |= SWA_CAPTURE_BLOCKED;
		copy_stack(t, cap);
	}
	kern_return_t rr = thread_resume(th);
	cap->held_ns = mach_absolute_time() - t0; /* ticks; the caller converts */
	if (kr != KERN_SUCCESS)
		return swa_darwin_errno(kr);
	return rr == KERN_SUCCESS ? 0 : swa_darwin_errno(rr);
}
