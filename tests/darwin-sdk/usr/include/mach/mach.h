/*
 * Stand-in: the Mach types, constants and calls the agent uses (thread
 * control and inspection, the thread list, reading our own memory), as the
 * 64-bit ABI of iOS and macOS defines them.
 */
#ifndef SW_SDK_MACH_H
#define SW_SDK_MACH_H
#include <stdint.h>

typedef unsigned int natural_t;
typedef int integer_t;
typedef int kern_return_t;
typedef int boolean_t;
typedef natural_t mach_port_t;
typedef natural_t mach_port_name_t;
typedef mach_port_t thread_act_t;
typedef mach_port_t task_t;
typedef mach_port_t vm_map_t;
typedef mach_port_t ipc_space_t;
typedef thread_act_t *thread_act_array_t;
typedef natural_t mach_msg_type_number_t;
typedef uintptr_t vm_address_t;
typedef uintptr_t vm_size_t;
typedef uint64_t mach_vm_address_t;
typedef uint64_t mach_vm_size_t;
typedef natural_t *thread_state_t;
typedef int thread_state_flavor_t;
typedef integer_t *thread_info_t;
typedef natural_t thread_flavor_t;
typedef int vm_region_flavor_t;
typedef int *vm_region_info_t;
typedef int vm_prot_t;
typedef unsigned int vm_inherit_t;
typedef int vm_behavior_t;
typedef uint64_t memory_object_offset_t;

#define MACH_PORT_NULL ((mach_port_t)0)

#define KERN_SUCCESS            0
#define KERN_INVALID_ADDRESS    1
#define KERN_PROTECTION_FAILURE 2
#define KERN_INVALID_ARGUMENT   4
#define KERN_FAILURE            5
#define KERN_ABORTED            14
#define KERN_TERMINATED         37
#define MACH_SEND_INVALID_DEST  0x10000003

/* the task's own port, set up by libSystem before any constructor runs */
extern mach_port_t mach_task_self_;
#define mach_task_self() mach_task_self_
mach_port_t mach_thread_self(void);

/* ---- thread state ---- */
typedef struct {
	uint64_t __x[29];
	uint64_t __fp;
	uint64_t __lr;
	uint64_t __sp;
	uint64_t __pc;
	uint32_t __cpsr;
	uint32_t __pad;
} arm_thread_state64_t;
#define ARM_THREAD_STATE64 6
#define ARM_THREAD_STATE64_COUNT                                                                   \
	((mach_msg_type_number_t)(sizeof(arm_thread_state64_t) / sizeof(uint32_t)))
/* the SDK's accessors, which arm64e's opaque fields require */
#define arm_thread_state64_get_pc(ts) ((ts).__pc)
#define arm_thread_state64_get_lr(ts) ((ts).__lr)
#define arm_thread_state64_get_sp(ts) ((ts).__sp)
#define arm_thread_state64_get_fp(ts) ((ts).__fp)

typedef struct {
	uint64_t __rax, __rbx, __rcx, __rdx, __rdi, __rsi, __rbp, __rsp;
	uint64_t __r8, __r9, __r10, __r11, __r12, __r13, __r14, __r15;
	uint64_t __rip, __rflags, __cs, __fs, __gs;
} x86_thread_state64_t;
#define x86_THREAD_STATE64 4
#define x86_THREAD_STATE64_COUNT                                                                   \
	((mach_msg_type_number_t)(sizeof(x86_thread_state64_t) / sizeof(int)))

/* ---- thread information ---- */
typedef struct {
	integer_t seconds;
	integer_t microseconds;
} time_value_t;

struct thread_basic_info {
	time_value_t user_time;
	time_value_t system_time;
	integer_t cpu_usage;
	integer_t policy;
	integer_t run_state;
	integer_t flags;
	integer_t suspend_count;
	integer_t sleep_time;
};
#define THREAD_BASIC_INFO 3
#define THREAD_BASIC_INFO_COUNT                                                                    \
	((mach_msg_type_number_t)(sizeof(struct thread_basic_info) / sizeof(natural_t)))

struct thread_identifier_info {
	uint64_t thread_id;
	uint64_t thread_handle;
	uint64_t dispatch_qaddr;
};
#define THREAD_IDENTIFIER_INFO 4
#define THREAD_IDENTIFIER_INFO_COUNT                                                               \
	((mach_msg_type_number_t)(sizeof(struct thread_identifier_info) / sizeof(natural_t)))

#define MAXTHREADNAMESIZE 64
struct thread_extended_info {
	uint64_t pth_user_time;
	uint64_t pth_system_time;
	int32_t pth_cpu_usage;
	int32_t pth_policy;
	int32_t pth_run_state;
	int32_t pth_flags;
	int32_t pth_sleep_time;
	int32_t pth_curpri;
	int32_t pth_priority;
	int32_t pth_maxpriority;
	char pth_name[MAXTHREADNAMESIZE];
};
#define THREAD_EXTENDED_INFO 5
#define THREAD_EXTENDED_INFO_COUNT                                                                 \
	((mach_msg_type_number_t)(sizeof(struct thread_extended_info) / sizeof(natural_t)))

#define TH_STATE_RUNNING         1
#define TH_STATE_STOPPED         2
#define TH_STATE_WAITING         3
#define TH_STATE_UNINTERRUPTIBLE 4
#define TH_STATE_HALTED          5

/* ---- memory regions ---- */
#pragma pack(push, 4)
struct vm_region_basic_info_64 {
	vm_prot_t protection;
	vm_prot_t max_protection;
	vm_inherit_t inheritance;
	boolean_t shared;
	boolean_t reserved;
	memory_object_offset_t offset;
	vm_behavior_t behavior;
	unsigned short user_wired_count;
};
#pragma pack(pop)
typedef struct vm_region_basic_info_64 vm_region_basic_info_data_64_t;
#define VM_REGION_BASIC_INFO_64 9
#define VM_REGION_BASIC_INFO_COUNT_64                                                              \
	((mach_msg_type_number_t)(sizeof(vm_region_basic_info_data_64_t) / sizeof(int)))

/* ---- calls ---- */
kern_return_t thread_suspend(thread_act_t thread);
kern_return_t thread_resume(thread_act_t thread);
kern_return_t thread_get_state(thread_act_t thread, thread_state_flavor_t flavor,
			       thread_state_t state, mach_msg_type_number_t *count);
kern_return_t thread_info(thread_act_t thread, thread_flavor_t flavor, thread_info_t info,
			  mach_msg_type_number_t *count);
kern_return_t task_threads(task_t task, thread_act_array_t *list, mach_msg_type_number_t *count);
kern_return_t vm_read_overwrite(vm_map_t task, vm_address_t addr, vm_size_t size, vm_address_t data,
				vm_size_t *out_size);
kern_return_t vm_deallocate(vm_map_t task, vm_address_t addr, vm_size_t size);
kern_return_t mach_port_deallocate(ipc_space_t task, mach_port_name_t name);
#endif
