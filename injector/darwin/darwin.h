/*
 * What the files of the Darwin backend share.  capture-mach.c, the code
 * that runs while a thread is held, sees only this header and the Mach
 * declarations: its object file may import Mach calls and nothing else.
 */
#ifndef SWA_DARWIN_H
#define SWA_DARWIN_H

#include <stdbool.h>
#include <stdint.h>

#include <mach/mach.h>
#include <mach/mach_time.h>

#include "../platform.h"

/*
 * The bytes below the stack pointer that Apple's ABIs keep from signals and
 * interrupts, on arm64 and x86-64 alike: an epilogue's call-frame
 * information may still name slots there, so stack copies start this far
 * below it (capture-mach.c).
 */
#define SWA_DARWIN_RED_ZONE 128u

/* The calling thread's port for the watchdog (captures never hold it). */
extern mach_port_t swa_darwin_self_port;

/* From the capture TU: a Mach error as -errno (KERN_TERMINATED -> -ESRCH). */
int swa_darwin_errno(kern_return_t kr);

/*
 * Holds t with thread_suspend(), reads its registers and copies its live
 * stack, bounded by t->stack_lo/stack_hi, into cap, and resumes it on every
 * path.  Calls Mach functions only.
 */
int swa_darwin_capture(const struct swa_thread *t, struct swa_capture *cap);

/* The system-wide id samples carry for a thread (threads-mach.c). */
uint64_t swa_darwin_thread_id(thread_act_t th);

/* Registers the dyld image callbacks (images-darwin.c). */
void swa_darwin_images_start(void);
/* Reads the main bundle's identifier and version, once (hooks-darwin.c). */
void swa_darwin_read_bundle(void);

/* Whether the process runs translated by Rosetta (sampling is off then). */
bool swa_darwin_translated(void);

#endif
