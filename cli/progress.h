/*
 * Progress on standard error for work that takes long (symbol search and
 * indexing can take tens of seconds): shown only on a terminal, only after
 * STALLWATCH_PROGRESS_AFTER_MS (1000) of the same work, as one line redrawn
 * in place and erased when the work ends or another message is printed.
 */
#ifndef SW_CLI_PROGRESS_H
#define SW_CLI_PROGRESS_H

/* Says what is being done now ("symbolicating stall 3"); starts the clock when idle. */
void sw_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The work is over: the line goes. */
void sw_progress_done(void);
/* Erases the line before another message; the work goes on. */
void sw_progress_clear(void);

#endif
