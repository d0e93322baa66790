/*
 * The thread list on Darwin, from Mach calls only (so the scripted fake of
 * the Mach calls can test it beside the capture): task_threads() gives a
 * send right per thread and a vm-allocated array on every call; the array
 * goes back at once, the rights after the round (swa_plat_release_threads).
 * Names, run state and CPU time come from thread_info(), never from pthread
 * calls that take the thread-list lock.  A thread's stack bounds are the VM
 * region holding its stack pointer, looked up here, before it is held.
 */
#include <errno.h>
#include <string.h>

#include <mach/mach_vm.h>

#include "darwin.h"

mach_port_t swa_darwin_self_port;

static void name_of(thread_act_t th, char name[SWA_THREAD_NAME_MAX])
{
	struct thread_extended_info info;
	mach_msg_type_number_t count = THREAD_EXTENDED_INFO_COUNT;
	name[0] = '\0';
	if (thread_info(th, THREAD_EXTENDED_INFO, (thread_info_t)&info, &count) != KERN_SUCCESS)
		return;
	size_t n = 0;
	while (n < SWA_THREAD_NAME_MAX - 1 && n < sizeof(info.pth_name) && info.pth_name[n])
		n++;
	memcpy(name, info.pth_name, n);
	name[n] = '\0';
}

uint64_t swa_darwin_thread_id(thread_act_t th)
{
	struct thread_identifier_info info;
	mach_msg_type_number_t count = THREAD_IDENTIFIER_INFO_COUNT;
	if (thread_info(th, THREAD_IDENTIFIER_INFO, (thread_info_t)&info, &count) != KERN_SUCCESS)
		return th;
	return info.thread_id;
}

/* The VM region holding the thread's stack pointer, read without holding it. */
static void stack_of(thread_act_t th, uint64_t *lo, uint64_t *hi)
{
	struct swa_regs regs = {0};
#if defined(__aarch64__)
	arm_thread_state64_t st;
	mach_msg_type_number_t count = ARM_THREAD_STATE64_COUNT;
	if (thread_get_state(th, ARM_THREAD_STATE64, (thread_state_t)&st, &count) != KERN_SUCCESS)
		return;
	regs.r[SWA_REG_SP] = (uint64_t)arm_thread_state64_get_sp(st);
#else
	x86_thread_state64_t st;
	mach_msg_type_number_t count = x86_THREAD_STATE64_COUNT;
	if (thread_get_state(th, x86_THREAD_STATE64, (thread_state_t)&st, &count) != KERN_SUCCESS)
		return;
	regs.r[SWA_REG_SP] = st.__rsp;
#endif
	mach_vm_address_t addr = regs.r[SWA_REG_SP];
	mach_vm_size_t size = 0;
	vm_region_basic_info_data_64_t info;
	mach_msg_type_number_t icount = VM_REGION_BASIC_INFO_COUNT_64;
	mach_port_t object = MACH_PORT_NULL;
	if (mach_vm_region(mach_task_self(), &addr, &size, VM_REGION_BASIC_INFO_64,
			   (vm_region_info_t)&info, &icount, &object) != KERN_SUCCESS)
		return;
	if (addr > regs.r[SWA_REG_SP])
		return; /* the stack pointer is in no region: the next one came back */
	*lo = addr;
	*hi = addr + size;
}

int swa_plat_list_threads(struct swa_thread *out, size_t cap)
{
	thread_act_array_t list = NULL;
	mach_msg_type_number_t count = 0;
	kern_return_t kr = task_threads(mach_task_self(), &list, &count);
	if (kr != KERN_SUCCESS)
		return swa_darwin_errno(kr);
	size_t n = 0;
	for (mach_msg_type_number_t i = 0; i < count; i++) {
		if (n == cap || list[i] == swa_darwin_self_port) {
			mach_port_deallocate(mach_task_self(), list[i]);
			continue;
		}
		struct swa_thread *t = &out[n++];
		memset(t, 0, sizeof(*t));
		t->handle = list[i];
		t->id = swa_darwin_thread_id(list[i]);
		name_of(list[i], t->name);
		stack_of(list[i], &t->stack_lo, &t->stack_hi);
	}
	vm_deallocate(mach_task_self(), (vm_address_t)list, count * sizeof(list[0]));
	return (int)n;
}

void swa_plat_release_threads(struct swa_thread *threads, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (threads[i].handle)
			mach_port_deallocate(mach_task_self(), (mach_port_t)threads[i].handle);
		threads[i].handle = 0;
	}
}

int swa_plat_thread_cpu_ns(const struct swa_thread *t, uint64_t *ret)
{
	struct thread_basic_info info;
	mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
	kern_return_t kr =
	    thread_info((thread_act_t)t->handle, THREAD_BASIC_INFO, (thread_info_t)&info, &count);
	if (kr != KERN_SUCCESS)
		return swa_darwin_errno(kr);
	uint64_t us =
	    ((uint64_t)info.user_time.seconds + (uint64_t)info.system_time.seconds) * 1000000u +
	    (uint64_t)info.user_time.microseconds + (uint64_t)info.system_time.microseconds;
	*ret = us * 1000u;
	return 0;
}

int swa_plat_thread_state(const struct swa_thread *t, enum swa_thread_state *ret)
{
	struct thread_basic_info info;
	mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
	kern_return_t kr =
	    thread_info((thread_act_t)t->handle, THREAD_BASIC_INFO, (thread_info_t)&info, &count);
	if (kr != KERN_SUCCESS) {
		int e = swa_darwin_errno(kr);
		if (e != -ESRCH)
			return e;
		*ret = SWA_THREAD_GONE;
		return 0;
	}
	switch (info.run_state) {
	case TH_STATE_RUNNING:
		*ret = SWA_THREAD_RUNNING;
		break;
	case TH_STATE_WAITING:
	case TH_STATE_UNINTERRUPTIBLE:
		*ret = SWA_THREAD_BLOCKED;
		break;
	case TH_STATE_STOPPED:
		*ret = SWA_THREAD_STOPPED;
		break;
	default:
		*ret = SWA_THREAD_GONE;
		break;
	}
	return 0;
}
