/*
 * Reaching an agent: a TCP connection to a loopback (or any given) address,
 * or a unix socket, with a timeout.  Device transports (usbmuxd) come later
 * and will hand back a file descriptor the same way.
 */
#ifndef SW_TRANSPORT_H
#define SW_TRANSPORT_H

#include "util/error.h"

/*
 * Connects to spec: "unix:PATH", "HOST:PORT" or "[V6ADDR]:PORT", waiting at
 * most timeout_ms.  On success *ret_fd is a blocking, close-on-exec socket
 * the caller owns.
 */
int sw_transport_connect(const char *spec, int timeout_ms, int *ret_fd, struct sw_error *err);

/* 1 when fd is readable, 0 after timeout_ms (-1: no limit), -errno on error. */
int sw_transport_wait(int fd, int timeout_ms);

#endif
