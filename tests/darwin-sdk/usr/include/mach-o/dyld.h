/* Stand-in: dyld's image list, its callbacks and the executable's path. */
#ifndef SW_SDK_MACHO_DYLD_H
#define SW_SDK_MACHO_DYLD_H
#include <stdint.h>
#include <mach-o/loader.h>
uint32_t _dyld_image_count(void);
const struct mach_header *_dyld_get_image_header(uint32_t index);
const char *_dyld_get_image_name(uint32_t index);
void _dyld_register_func_for_add_image(void (*fn)(const struct mach_header *mh, intptr_t slide));
void _dyld_register_func_for_remove_image(void (*fn)(const struct mach_header *mh, intptr_t slide));
int _NSGetExecutablePath(char *buf, uint32_t *size);
#endif
