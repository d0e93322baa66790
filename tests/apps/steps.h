/*
 * The stalls the agent's integration tests provoke, shared by the poll-loop
 * and the GLib test apps.  Each step runs inside one loop iteration and
 * prints "step KIND begin NS" / "step KIND end NS elapsed_ms=X" with
 * CLOCK_MONOTONIC nanoseconds on stdout, so the test can match the agent's
 * stalls to what really happened.
 */
#ifndef STALLAPP_STEPS_H
#define STALLAPP_STEPS_H

/* Runs one step ("busy:400", "mutex:600", ...); returns -1 for an unknown step. */
int run_step(const char *step);
/* Milliseconds the loop stays idle between steps (from "gap:MS", default 200). */
extern int step_gap_ms;

/* The steps of hazards.c: 0, or -1 for an unknown step. */
int hazard_step(const char *kind, int a, int b);
/* What the image exec:MS starts runs instead of its steps. */
int hazard_exec_child(void);

#endif
