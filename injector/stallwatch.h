/*
 * stallwatch: loop hooks for event loops the agent cannot see by itself.
 *
 * The agent notices a poll/epoll/select-based main loop on its own (it
 * interposes those calls).  A loop that waits some other way -- io_uring,
 * a raw syscall(), a statically linked program, a condition variable --
 * calls these two functions instead, the pair CFRunLoop calls
 * BeforeWaiting and AfterWaiting:
 *
 *     for (;;) {
 *             stallwatch_before_wait();
 *             wait_for_work();
 *             stallwatch_after_wait();
 *             do_work();
 *     }
 *
 * Each call costs a clock read or an atomic store, nothing more.  Only the
 * main thread's calls count.  When the agent is not loaded, link against
 * nothing and declare them weak to make them optional:
 *
 *     #pragma weak stallwatch_before_wait
 *     #pragma weak stallwatch_after_wait
 *     if (stallwatch_before_wait) stallwatch_before_wait();
 */
#ifndef STALLWATCH_H
#define STALLWATCH_H

#ifdef __cplusplus
extern "C" {
#endif

#define STALLWATCH_API_VERSION 1

/* The loop is about to wait for work: it is idle from now on. */
void stallwatch_before_wait(void);
/* The loop got work: a new iteration begins; a stall is measured from here. */
void stallwatch_after_wait(void);

#ifdef __cplusplus
}
#endif

#endif
