/*
 * What the files of the Linux backend share.
 */
#ifndef SWA_LINUX_H
#define SWA_LINUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

pid_t swa_linux_gettid(void);
int swa_linux_read_file(const char *path, char *buf, size_t cap);
int swa_linux_task_path(char *buf, size_t cap, uint64_t tid, const char *file);
int swa_linux_task_state(uint64_t tid, char *ret_state);
/* process_vm_readv() is missing: we run under an emulator such as qemu-user. */
bool swa_linux_emulated(void);
int swa_linux_capture_init(void);
/* The real-time signal used to capture running threads. */
int swa_linux_capture_signal(void);

/* The interposed waits (interpose.c): reporting, or noting the main loop runs. */
int swa_linux_waits_start(bool only_trigger);
void swa_linux_waits_stop(void);
void swa_linux_waits_report(void);
extern _Atomic bool swa_linux_main_waited;

/* For the benchmark: when the last capture handler started and ended. */
void swa_linux_last_handler_times(uint64_t *entered, uint64_t *left);

#endif
