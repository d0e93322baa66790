/* Stand-in: the 64-bit VM calls (mach_vm_region). */
#ifndef SW_SDK_MACH_VM_H
#define SW_SDK_MACH_VM_H
#include <mach/mach.h>
kern_return_t mach_vm_region(vm_map_t task, mach_vm_address_t *addr, mach_vm_size_t *size,
			     vm_region_flavor_t flavor, vm_region_info_t info,
			     mach_msg_type_number_t *count, mach_port_t *object_name);
#endif
