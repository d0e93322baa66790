/*
 * The translation of a failure into an exit status (status.h): the one
 * place that decides which status a kind of failure gets.
 */
#include <errno.h>

#include "status.h"

enum sw_exit_status sw_exit_status(enum sw_failure what, int err)
{
	if (err == -ENOMEM)
		return SW_EXIT_SOFTWARE;
	switch (what) {
	case SW_FAIL_USAGE:
		return SW_EXIT_USAGE;
	case SW_FAIL_DEVICE:
		return SW_EXIT_DEVICE;
	case SW_FAIL_AGENT:
		return SW_EXIT_AGENT;
	case SW_FAIL_INPUT:
		return SW_EXIT_INPUT;
	case SW_FAIL_SYMBOLS:
		return SW_EXIT_SYMBOLS;
	case SW_FAIL_OUTPUT:
		return SW_EXIT_OUTPUT;
	}
	return SW_EXIT_SOFTWARE;
}
