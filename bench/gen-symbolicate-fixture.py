#!/usr/bin/env python3
"""Writes the C sources of the symbolication benchmark's binary.

usage: gen-symbolicate-fixture.py OUTDIR [FUNCTIONS] [UNITS]

FUNCTIONS functions (20,000 by default) spread over UNITS units (40), each
with a few lines of its own and a three-deep chain of always_inline helpers,
so that the DWARF holds inlined subroutines, many line rows and names: about
5 MB of it with clang -g -O1.
"""
import os
import sys


def unit(u, per_unit, nunits):
    lines = ["/* generated unit %d */" % u, "extern volatile unsigned sink%d;" % u,
             "volatile unsigned sink%d;" % u]
    lines.append("""
static inline __attribute__((always_inline)) unsigned leaf%(u)d(unsigned x, unsigned k)
{
	x ^= x >> (k & 7);
	x *= 0x9e3779b1u + k;
	return x;
}

static inline __attribute__((always_inline)) unsigned mid%(u)d(unsigned x, unsigned k)
{
	unsigned y = leaf%(u)d(x, k);
	if (y & 16)
		y += leaf%(u)d(y, k + 1);
	return y;
}

static inline __attribute__((always_inline)) unsigned top%(u)d(unsigned x, unsigned k)
{
	unsigned z = mid%(u)d(x + k, k);
	sink%(u)d = z;
	return z ^ mid%(u)d(z, k ^ 5);
}
""" % {"u": u})
    for i in range(per_unit):
        f = u * per_unit + i
        callee = "fn_%d_%d" % (u, i - 1) if i else None
        body = ["	unsigned a = x + %du;" % f,
                "	a = top%d(a, %du);" % (u, f % 97),
                "	if (a & 1)",
                "		a += %du;" % (f * 7 % 1000),
                "	a ^= sink%d;" % u]
        if callee and f % 3 == 0:
            body.append("	a += %s(a >> 1);" % callee)
        body.append("	return a;")
        lines.append("__attribute__((noinline)) unsigned fn_%d_%d(unsigned x)\n{\n%s\n}\n" %
                     (u, i, "\n".join(body)))
    return "\n".join(lines)


def main():
    out = sys.argv[1]
    nfunc = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    nunits = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    per_unit = nfunc // nunits
    os.makedirs(out, exist_ok=True)
    for u in range(nunits):
        with open(os.path.join(out, "unit%d.c" % u), "w") as f:
            f.write(unit(u, per_unit, nunits))
    with open(os.path.join(out, "main.c"), "w") as f:
        decls = "".join("unsigned fn_%d_%d(unsigned);\n" % (u, per_unit - 1)
                        for u in range(nunits))
        calls = "".join("	r += fn_%d_%d(r);\n" % (u, per_unit - 1) for u in range(nunits))
        f.write("%s\nint main(int argc, char **argv)\n{\n	unsigned r = (unsigned)argc;\n%s"
                "	return (int)(r & 1);\n}\n" % (decls, calls))


if __name__ == "__main__":
    main()
