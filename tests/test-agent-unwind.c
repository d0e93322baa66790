/*
 * Unit test of the agent's capture and unwinder, in a real process: threads
 * stop at a known depth (spinning, or blocked in read()), the agent captures
 * and unwinds them, and the result must agree with glibc's backtrace() taken
 * by the same thread on its way down (libgcc's unwinder: an independent
 * oracle).  Then the CFI reader is fed hostile tables.
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "test.h"
#include "unwind.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#define OMIT_FP
#else
#define NOINLINE __attribute__((noinline, noclone))
#define OMIT_FP  __attribute__((optimize("omit-frame-pointer")))
#endif

static void *oracle[64];
static int oracle_n;
static _Atomic int ready;
static _Atomic int quit;
static int pipefd[2];
static volatile unsigned long sink;

NOINLINE OMIT_FP static void spin_leaf(void)
{
	oracle_n = backtrace(oracle, 64);
	atomic_store(&ready, 1);
	while (!atomic_load_explicit(&quit, memory_order_relaxed))
		sink++;
}

NOINLINE static void spin_mid(void)
{
	spin_leaf();
	sink++;
}

NOINLINE OMIT_FP static void spin_top(void)
{
	spin_mid();
	sink++;
}

NOINLINE static void block_leaf(void)
{
	char c;
	oracle_n = backtrace(oracle, 64);
	atomic_store(&ready, 1);
	ssize_t n = read(pipefd[0], &c, 1);
	sink += (unsigned long)n;
}

NOINLINE OMIT_FP static void block_top(void)
{
	block_leaf();
	sink++;
}

#if defined(__x86_64__)
/*
 * Threads held where the call-frame information names a register's slot
 * below the stack pointer.  epilogue_spin spins after `pop %rbx` while the
 * CFI still says rbx was saved at CFA-16, as GCC leaves it: a slot now in
 * the red zone (Debian's -O2 binaries, redis and libc among them, are full
 * of such epilogues), and its caller outer_rbx finds its own CFA through
 * rbx, so unwinding past it needs the value the red zone holds.
 * far_slot's CFI claims r12 was saved far below the stack pointer, out of
 * any copy: only r12 is lost, not the step.  Both call the oracle on their
 * way in.  A step that could not read such a slot once gave up and left
 * the frame-pointer walk to guess, which dropped frames.
 */
volatile int epilogue_quit;
void epilogue_spin(void (*oracle_fn)(void));
void outer_rbx(void (*oracle_fn)(void));
void far_slot(void (*oracle_fn)(void));
__asm__(".text\n"
	".globl epilogue_spin\n"
	".type epilogue_spin, @function\n"
	"epilogue_spin:\n"
	".cfi_startproc\n"
	"push %rbx\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbx, -16\n"
	"call *%rdi\n"
	"mov $0x5eed, %ebx\n"
	"pop %rbx\n"
	".cfi_def_cfa_offset 8\n"
	"1: cmpl $0, epilogue_quit(%rip)\n"
	"je 1b\n"
	"ret\n"
	".cfi_endproc\n"
	".size epilogue_spin, .-epilogue_spin\n"
	".globl outer_rbx\n"
	".type outer_rbx, @function\n"
	"outer_rbx:\n"
	".cfi_startproc\n"
	"push %rbx\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbx, -16\n"
	"mov %rsp, %rbx\n"
	".cfi_def_cfa_register %rbx\n"
	"call epilogue_spin\n"
	"mov %rbx, %rsp\n"
	"pop %rbx\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size outer_rbx, .-outer_rbx\n"
	".globl far_slot\n"
	".type far_slot, @function\n"
	"far_slot:\n"
	".cfi_startproc\n"
	"sub $8, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %r12, -4096\n"
	"call *%rdi\n"
	"1: cmpl $0, epilogue_quit(%rip)\n"
	"je 1b\n"
	"add $8, %rsp\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size far_slot, .-far_slot\n");

static void epilogue_oracle(void)
{
	oracle_n = backtrace(oracle, 64);
	atomic_store(&ready, 1);
}

NOINLINE static void epilogue_top(void)
{
	outer_rbx(epilogue_oracle);
	sink++;
}

NOINLINE static void far_top(void)
{
	far_slot(epilogue_oracle);
	sink++;
}
#endif

/* A thread's entry: the top of the stack it builds, set before it starts. */
static void (*thread_top)(void);

static void *thread_main(void *arg)
{
	(void)arg;
	thread_top();
	return NULL;
}

static uint8_t copy[256 * 1024];
static uint64_t frames[600];

/* Our frames from some index on must equal the oracle's from `from` on. */
static void compare(const uint64_t *fr, uint32_t depth, int from, const char *what)
{
	uint32_t at = 0;
	while (at < depth && fr[at] != (uint64_t)(uintptr_t)oracle[from])
		at++;
	if (at == depth) {
		fprintf(stderr, "%s: oracle frame %d (%p) not in our %u frames\n", what, from,
			oracle[from], depth);
		CHECK(at < depth);
		return;
	}
	int n = 0;
	for (int i = from; i < oracle_n && at < depth; i++, at++, n++) {
		if (fr[at] != (uint64_t)(uintptr_t)oracle[i]) {
			fprintf(stderr, "%s: frame %u is %#llx, backtrace says %p\n", what, at,
				(unsigned long long)fr[at], oracle[i]);
			CHECK(fr[at] == (uint64_t)(uintptr_t)oracle[i]);
			return;
		}
	}
	fprintf(stderr, "%s: %d frames agree with backtrace()\n", what, n);
	CHECK(n >= 4);
}

/* oracle[from] is the first return address the capture's unwinding must show */
static void capture_and_compare(void (*top)(void), const char *what, bool blocked, int from)
{
	pthread_t t;
	atomic_store(&ready, 0);
	atomic_store(&quit, 0);
#if defined(__x86_64__)
	epilogue_quit = 0;
#endif
	thread_top = top;
	pthread_create(&t, NULL, thread_main, NULL);
	while (!atomic_load(&ready))
		usleep(1000);
	usleep(20000); /* into the spin or the read */
	struct swa_thread th = {0};
	pid_t tids[256];
	(void)tids;
	/* the newest thread of the process is ours */
	struct swa_thread list[256];
	int n = swa_plat_list_threads(list, 256);
	uint64_t best = 0;
	for (int i = 0; i < n; i++)
		if (list[i].id > best && list[i].id != (uint64_t)getpid())
			best = list[i].id, th = list[i];
	swa_plat_prepare_capture();
	struct swa_capture cap = {.copy = copy, .copy_cap = sizeof(copy)};
	int r = swa_plat_capture(&th, &cap, 100000000);
	CHECK_INT(r, 0);
	CHECK_INT((cap.flags & SWA_CAPTURE_BLOCKED) != 0, blocked);
	uint32_t flags = 0;
	uint32_t depth = r == 0 ? swa_unwind(&cap, frames, 600, &flags) : 0;
	CHECK(!(flags & SWA_UNWIND_TRUNCATED));
	CHECK(flags & SWA_UNWIND_CFI);
	compare(frames, depth, from, what);
	/* the depth cap */
	uint32_t capped = r == 0 ? swa_unwind(&cap, frames, 3, &flags) : 0;
	CHECK_INT(capped, 3);
	CHECK(flags & SWA_UNWIND_TRUNCATED);
	atomic_store(&quit, 1);
#if defined(__x86_64__)
	epilogue_quit = 1;
#endif
	if (blocked) {
		ssize_t w = write(pipefd[1], "x", 1);
		(void)w;
	}
	pthread_join(t, NULL);
}

/* Hostile tables: a fake image whose .eh_frame_hdr is random bytes. */
static void hostile(void)
{
	static uint8_t junk[8192];
	srand(1);
	int survived = 0;
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)rand();
		junk[0] = 1;    /* version */
		junk[1] = 0x1b; /* pcrel sdata4 */
		junk[2] = 0x03; /* udata4 count */
		junk[3] = 0x3b; /* datarel sdata4 */
		junk[8] = (uint8_t)(round % 50 + 1);
		junk[9] = junk[10] = junk[11] = 0;
		struct swa_image im = {.eh_hdr = (uint64_t)(uintptr_t)junk};
		swa_mem_invalidate();
		if (swa_cfi_index(&im) == 0) {
			struct swa_regs regs = {0};
			regs.pc = (uint64_t)(uintptr_t)junk + (uint64_t)(rand() % 8192);
			swa_regs_set(&regs, SWA_REG_SP, (uint64_t)(uintptr_t)copy);
			struct swa_capture cap = {.copy = copy,
						  .copy_cap = sizeof(copy),
						  .copy_len = 4096,
						  .stack_lo = (uint64_t)(uintptr_t)copy,
						  .stack_hi = (uint64_t)(uintptr_t)copy + 4096};
			struct swa_unwind_ctx uc = {.cap = &cap};
			bool sig;
			swa_cfi_step(&uc, &im, &regs, false, &sig);
		}
		survived++;
	}
	CHECK_INT(survived, 2000);
}

static uint8_t ring_buf[1 << 16];

int main(void)
{
	if (pipe(pipefd) < 0)
		return 1;
	swa_ring_init(&swa_ring, ring_buf, sizeof(ring_buf));
	CHECK_INT(swa_plat_init(), 0);
	swa_images_refresh();
	capture_and_compare(spin_top, "running thread (signal)", false, 1);
	capture_and_compare(block_top, "blocked thread (/proc)", true, 1);
#if defined(__x86_64__)
	/* the oracle's frame, then the return into the spinning function: the spin is past both */
	capture_and_compare(epilogue_top, "thread in an epilogue (signal)", false, 2);
	capture_and_compare(far_top, "thread with a slot out of reach (signal)", false, 2);
#endif
	hostile();
	return sw_test_end();
}
