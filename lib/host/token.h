/*
 * The token a client proves itself with to an agent on this machine
 * (stallwatch-agent(7)): read from the file the agent wrote, or made anew
 * for an agent `run` starts.
 */
#ifndef SW_HOST_TOKEN_H
#define SW_HOST_TOKEN_H

#include <stddef.h>

/*
 * Reads the token of the agent listening at connect ("HOST:PORT" or
 * "unix:PATH") from DIR/agent-PORT.token (DIR: $XDG_RUNTIME_DIR/stallwatch,
 * else $TMPDIR or /tmp, then /stallwatch-UID) or PATH.token.  0, or -errno
 * when there is none to read (the client then sends no token).  The file's
 * path goes to path (cap path_cap) whenever it can be named, so that a
 * refusal can say where the token was looked for.
 */
int sw_host_agent_token(const char *connect, char *buf, size_t cap, char *path, size_t path_cap);

/* 128 random bits as 32 hex digits; 0 or -errno. */
int sw_host_new_token(char *buf, size_t cap);

#endif
