/*
 * Finding the demo app of `stallwatch demo`: $STALLWATCH_DEMO, then beside
 * the agent (where it is installed), then beside the stallwatch command
 * (in a build tree).
 */
#ifndef SW_HOST_DEMO_H
#define SW_HOST_DEMO_H

#include <stddef.h>

#include "util/error.h"

#define SW_DEMO_NAME "stallwatch-demo"

int sw_host_find_demo(char *buf, size_t cap, struct sw_error *err);

#endif
