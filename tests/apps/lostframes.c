/*
 * A program whose stacks cannot all be unwound, for the agent's tests
 * (x86-64): lost_spin() is built without unwind tables and spins with a
 * frame pointer that points nowhere, so samples taken inside it stop after
 * their first frame.  Two stalls with the same path from main:
 *
 *   lostframes lost    400 ms, a third of it in lost_spin(), the rest in c_spin()
 *   lostframes plain   400 ms in c_spin() only
 *
 * run one after the other with the loop idle between them.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void lost_spin(unsigned long n)
{
	__asm__ volatile("push %%rbp\n\t"
			 "mov $0x10, %%rbp\n\t"
			 "1: dec %0\n\t"
			 "jnz 1b\n\t"
			 "pop %%rbp\n\t"
			 : "+r"(n)
			 :
			 : "memory", "cc");
}

__attribute__((noinline)) static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sink++;
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) static void c_spin(unsigned long n)
{
	for (unsigned long k = 0; k < n; k++)
		sink++;
	sink++;
}

/* lost: about a third of the time in lost_spin(), the rest in c_spin() */
__attribute__((noinline)) static void lost_outer(int ms, int lost)
{
	long long end = now_ms() + ms;
	while (now_ms() < end) {
		c_spin(3000000);
		if (lost)
			lost_spin(3000000);
	}
	sink++;
}

__attribute__((noinline)) static void idle(int n)
{
	for (int i = 0; i < n; i++)
		poll(NULL, 0, 10);
}

int main(int argc, char **argv)
{
	idle(10);
	for (int i = 1; i < argc; i++) {
		lost_outer(400, !strcmp(argv[i], "lost"));
		idle(30);
	}
	printf("done\n");
	return 0;
}
