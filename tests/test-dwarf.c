/*
 * Tests of the DWARF reader (dwarf*.c) on small hand-made sections: what no
 * compiler emits (reference cycles, absurd nesting, forms and versions that
 * do not exist, indexes past their tables, truncation anywhere) must give
 * an error or an unknown frame, never a crash or a hang.  Well-formed input
 * is covered against llvm-symbolizer by tests/oracle-symbolize.py; the
 * one well-formed unit here checks the expectations written into its bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf.h"
#include "dwarf/dwarf-private.h"
#include "test.h"

struct bytes {
	uint8_t d[1 << 16];
	size_t n;
};

static void u8(struct bytes *b, uint64_t v)
{
	if (b->n < sizeof(b->d))
		b->d[b->n++] = (uint8_t)v;
}

static void un(struct bytes *b, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		u8(b, v >> (8 * i));
}

static void uleb(struct bytes *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		u8(b, c | (v ? 0x80 : 0));
	} while (v);
}

static void str(struct bytes *b, const char *s)
{
	do
		u8(b, (uint8_t)*s);
	while (*s++);
}

static void patch32(struct bytes *b, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->d[at + i] = (uint8_t)(v >> (8 * i));
}

enum variant {
	WELL_FORMED,
	ORIGIN_CYCLE, /* the inlined call's origin points at itself, then at a pair */
	DEEP,         /* lexical blocks nested far past any real program */
	BAD_FORM,     /* an attribute form that does not exist */
	BAD_CODE,     /* a DIE with an abbreviation code the table lacks */
	ALL_FORMS,    /* attributes of every varying form, in DIEs read and DIEs skipped */
};

static struct bytes abbrev, info, line;

static void make_abbrev(void)
{
	abbrev.n = 0;
	/* 1: compile unit */
	uleb(&abbrev, 1), uleb(&abbrev, 0x11), u8(&abbrev, 1);
	uleb(&abbrev, 0x03), uleb(&abbrev, 0x08); /* name string */
	uleb(&abbrev, 0x1b), uleb(&abbrev, 0x08); /* comp_dir string */
	uleb(&abbrev, 0x11), uleb(&abbrev, 0x01); /* low_pc addr */
	uleb(&abbrev, 0x12), uleb(&abbrev, 0x06); /* high_pc data4 */
	uleb(&abbrev, 0x10), uleb(&abbrev, 0x17); /* stmt_list sec_offset */
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 2: subprogram with code */
	uleb(&abbrev, 2), uleb(&abbrev, 0x2e), u8(&abbrev, 1);
	uleb(&abbrev, 0x03), uleb(&abbrev, 0x08);
	uleb(&abbrev, 0x11), uleb(&abbrev, 0x01);
	uleb(&abbrev, 0x12), uleb(&abbrev, 0x06);
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 3: inlined subroutine */
	uleb(&abbrev, 3), uleb(&abbrev, 0x1d), u8(&abbrev, 0);
	uleb(&abbrev, 0x31), uleb(&abbrev, 0x13); /* abstract_origin ref4 */
	uleb(&abbrev, 0x11), uleb(&abbrev, 0x01);
	uleb(&abbrev, 0x12), uleb(&abbrev, 0x06);
	uleb(&abbrev, 0x58), uleb(&abbrev, 0x0b); /* call_file data1 */
	uleb(&abbrev, 0x59), uleb(&abbrev, 0x0b); /* call_line data1 */
	uleb(&abbrev, 0x57), uleb(&abbrev, 0x0b); /* call_column data1 */
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 4: abstract subprogram: a name */
	uleb(&abbrev, 4), uleb(&abbrev, 0x2e), u8(&abbrev, 0);
	uleb(&abbrev, 0x03), uleb(&abbrev, 0x08);
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 5: a subprogram with only an origin */
	uleb(&abbrev, 5), uleb(&abbrev, 0x2e), u8(&abbrev, 0);
	uleb(&abbrev, 0x31), uleb(&abbrev, 0x13);
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 6: lexical block with children */
	uleb(&abbrev, 6), uleb(&abbrev, 0x0b), u8(&abbrev, 1);
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 7: a form that does not exist */
	uleb(&abbrev, 7), uleb(&abbrev, 0x34), u8(&abbrev, 0);
	uleb(&abbrev, 0x02), uleb(&abbrev, 0x7777);
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 8: a variable with attributes of every form whose size varies, and some that do not */
	uleb(&abbrev, 8), uleb(&abbrev, 0x34), u8(&abbrev, 0);
	static const uint16_t forms[] = {0x08, 0x0d, 0x0f, 0x18, 0x0a, 0x03, 0x04, 0x09,
					 0x1e, 0x19, 0x21, 0x1a, 0x16, 0x0b, 0x07};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		uleb(&abbrev, 0x2000 + i), uleb(&abbrev, forms[i]);
		if (forms[i] == 0x21)
			uleb(&abbrev, 42); /* the implicit constant */
	}
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	/* 9: a subprogram with attributes the reader skips, of varying sizes */
	uleb(&abbrev, 9), uleb(&abbrev, 0x2e), u8(&abbrev, 1);
	uleb(&abbrev, 0x3a), uleb(&abbrev, 0x0f); /* decl_file udata */
	uleb(&abbrev, 0x03), uleb(&abbrev, 0x08);
	uleb(&abbrev, 0x40), uleb(&abbrev, 0x18); /* frame_base exprloc */
	uleb(&abbrev, 0x11), uleb(&abbrev, 0x01);
	uleb(&abbrev, 0x3b), uleb(&abbrev, 0x0d); /* decl_line sdata */
	uleb(&abbrev, 0x12), uleb(&abbrev, 0x06);
	uleb(&abbrev, 0x2007 + 1), uleb(&abbrev, 0x08); /* a vendor string */
	uleb(&abbrev, 0), uleb(&abbrev, 0);
	uleb(&abbrev, 0);
}

static void fill(struct bytes *b, uint8_t v, size_t n)
{
	while (n--)
		u8(b, v);
}

/* A DIE of abbreviation 8: one value of each form, long ones where lengths vary. */
static void all_forms_die(struct bytes *b)
{
	uleb(b, 8);
	str(b, "a variable with a name");      /* string */
	uleb(b, (uint64_t)-300000 & 0x1fffff); /* sdata, three bytes */
	uleb(b, 1u << 30);                     /* udata, five bytes */
	uleb(b, 200), fill(b, 0x99, 200);      /* exprloc of 200 bytes */
	u8(b, 3), un(b, 0x1234, 3);            /* block1 */
	un(b, 5, 2), fill(b, 0, 5);            /* block2 */
	un(b, 2, 4), fill(b, 0, 2);            /* block4 */
	uleb(b, 130), fill(b, 0, 130);         /* block, a two-byte length */
	un(b, 0xabcdef, 8), un(b, 0, 8);       /* data16 */
	/* flag_present and implicit_const: no bytes */
	uleb(b, 1000);                   /* strx, two bytes */
	uleb(b, 0x05), un(b, 7, 2);      /* indirect: data2 */
	u8(b, 1);                        /* data1 */
	un(b, 0x1122334455667788ull, 8); /* data8 */
}

static void make_line(void)
{
	line.n = 0;
	un(&line, 0, 4); /* unit length, patched */
	un(&line, 4, 2);
	size_t hlen_at = line.n;
	un(&line, 0, 4); /* header length, patched */
	size_t hstart = line.n;
	u8(&line, 1), u8(&line, 1), u8(&line, 1), u8(&line, (uint8_t)-5), u8(&line, 14),
	    u8(&line, 13);
	static const uint8_t std[12] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
	for (int i = 0; i < 12; i++)
		u8(&line, std[i]);
	u8(&line, 0); /* no include directories */
	str(&line, "a.c"), uleb(&line, 0), uleb(&line, 0), uleb(&line, 0);
	u8(&line, 0);
	patch32(&line, hlen_at, (uint32_t)(line.n - hstart));
	u8(&line, 0), uleb(&line, 9), u8(&line, 2), un(&line, 0x1000, 8); /* set_address */
	u8(&line, 1);                                                     /* copy: line 1 */
	u8(&line, 2), uleb(&line, 0x20);                                  /* advance_pc */
	u8(&line, 3), uleb(&line, 4);                                     /* advance_line: 5 */
	u8(&line, 5), uleb(&line, 9);                                     /* column 9 */
	u8(&line, 1);
	u8(&line, 2), uleb(&line, 0xe0);
	u8(&line, 0), uleb(&line, 1), u8(&line, 1); /* end_sequence at 0x1100 */
	patch32(&line, 0, (uint32_t)(line.n - 4));
}

static void make_info(enum variant v)
{
	info.n = 0;
	un(&info, 0, 4);
	un(&info, 4, 2);
	un(&info, 0, 4);
	u8(&info, 8);
	uleb(&info, 1);
	str(&info, "a.c"), str(&info, "/src"), un(&info, 0x1000, 8), un(&info, 0x100, 4),
	    un(&info, 0, 4);
	size_t abstract = info.n;
	if (v == ORIGIN_CYCLE) {
		uleb(&info, 5), un(&info, abstract, 4); /* points at itself */
		size_t a = info.n;
		uleb(&info, 5), un(&info, a + 5, 4); /* a -> b */
		uleb(&info, 5), un(&info, a, 4);     /* b -> a */
	} else {
		uleb(&info, 4), str(&info, "inner");
	}
	if (v == ALL_FORMS) {
		all_forms_die(&info);
		uleb(&info, 9), uleb(&info, 300), str(&info, "outer"), uleb(&info, 3),
		    un(&info, 0x56789a, 3), un(&info, 0x1000, 8), uleb(&info, 0x7fff),
		    un(&info, 0x80, 4), str(&info, "skipped");
		all_forms_die(&info);
	} else {
		uleb(&info, 2), str(&info, "outer"), un(&info, 0x1000, 8), un(&info, 0x80, 4);
	}
	int nest = v == DEEP ? 5000 : 0;
	for (int i = 0; i < nest; i++)
		uleb(&info, 6);
	uleb(&info, 3), un(&info, abstract, 4), un(&info, 0x1020, 8), un(&info, 0x10, 4),
	    u8(&info, 1), u8(&info, 7), u8(&info, 3);
	if (v == ORIGIN_CYCLE)
		uleb(&info, 3), un(&info, abstract + 5, 4), un(&info, 0x1040, 8),
		    un(&info, 0x10, 4), u8(&info, 1), u8(&info, 8), u8(&info, 2);
	if (v == BAD_FORM)
		uleb(&info, 7), u8(&info, 0);
	if (v == BAD_CODE)
		uleb(&info, 99);
	for (int i = 0; i < nest; i++)
		u8(&info, 0);
	u8(&info, 0); /* end of outer's children */
	u8(&info, 0); /* end of the unit's children */
	patch32(&info, 0, (uint32_t)(info.n - 4));
}

static struct sw_dwarf_sections sections(size_t info_size)
{
	struct sw_dwarf_sections s = {.addr_size = 8};
	s.info = (struct sw_section){info.d, info_size, 0};
	s.abbrev = (struct sw_section){abbrev.d, abbrev.n, 0};
	s.line = (struct sw_section){line.d, line.n, 0};
	return s;
}

/* The frames' strings belong to the reader: it lives until the next call. */
static struct sw_dwarf *last;
static struct sw_dwarf_sections last_sections;

static int lookup(size_t info_size, uint64_t addr, struct sw_dwarf_frame *fr, size_t max,
		  struct sw_error *err)
{
	sw_dwarf_free(last);
	last = NULL;
	last_sections = sections(info_size);
	int r = sw_dwarf_new(&last_sections, &last, err);
	if (r >= 0)
		r = sw_dwarf_lookup(last, addr, 0, fr, max, err);
	return r;
}

static void test_well_formed(enum variant v)
{
	make_info(v);
	struct sw_dwarf_frame fr[4];
	struct sw_error err = {0};
	CHECK_INT(lookup(info.n, 0x1025, fr, 4, &err), 2);
	CHECK_STR(fr[0].function, "inner");
	CHECK_STR(fr[0].file, "/src/a.c");
	CHECK_INT(fr[0].line, 5);
	CHECK_INT(fr[0].column, 9);
	CHECK_STR(fr[1].function, "outer");
	CHECK_STR(fr[1].file, "/src/a.c");
	CHECK_INT(fr[1].line, 7);
	CHECK_INT(fr[1].column, 3);
	CHECK_INT(lookup(info.n, 0x1005, fr, 4, &err), 1);
	CHECK_STR(fr[0].function, "outer");
	CHECK_INT(fr[0].line, 1);
	CHECK_INT(lookup(info.n, 0x2000, fr, 4, &err), 0);
	/* room for one frame: the innermost */
	CHECK_INT(lookup(info.n, 0x1025, fr, 1, &err), 1);
	CHECK_STR(fr[0].function, "inner");
}

static void test_cycles(void)
{
	make_info(ORIGIN_CYCLE);
	struct sw_dwarf_frame fr[4];
	struct sw_error err = {0};
	CHECK_INT(lookup(info.n, 0x1025, fr, 4, &err), 2);
	CHECK(fr[0].function == NULL);
	CHECK_STR(fr[1].function, "outer");
	CHECK_INT(lookup(info.n, 0x1045, fr, 4, &err), 2);
	CHECK(fr[0].function == NULL);
	CHECK_INT(fr[1].line, 8);
}

static void test_errors(void)
{
	struct sw_dwarf_frame fr[4];
	struct sw_error err = {0};

	make_info(DEEP);
	CHECK_INT(lookup(info.n, 0x1025, fr, 4, &err), -E2BIG);
	CHECK(strstr(err.msg, "nested") != NULL);

	make_info(BAD_FORM);
	sw_error_clear(&err);
	CHECK(lookup(info.n, 0x1025, fr, 4, &err) < 0);
	CHECK(strstr(err.msg, "form 0x7777") != NULL);

	make_info(BAD_CODE);
	sw_error_clear(&err);
	CHECK(lookup(info.n, 0x1025, fr, 4, &err) < 0);
	CHECK(strstr(err.msg, "abbreviation 99") != NULL);

	/* a version that does not exist */
	make_info(WELL_FORMED);
	info.d[4] = 9;
	sw_error_clear(&err);
	CHECK(lookup(info.n, 0x1025, fr, 4, &err) < 0);
	CHECK(strstr(err.msg, "version 9") != NULL);

	/* a line table claiming more than its section */
	make_info(WELL_FORMED);
	make_line();
	patch32(&line, 0, 0xfff00000);
	sw_error_clear(&err);
	CHECK(lookup(info.n, 0x1025, fr, 4, &err) < 0);
	CHECK(strstr(err.msg, "line table") != NULL);
	make_line();
}

/* Every prefix and many corruptions of every section: no crash, no hang. */
static void test_hostile(void)
{
	struct sw_dwarf_frame fr[8];
	struct sw_error err;
	for (int v = WELL_FORMED; v <= ORIGIN_CYCLE; v++) {
		make_info((enum variant)v);
		for (size_t n = 0; n <= info.n; n++)
			lookup(n, 0x1025, fr, 8, &err);
	}
	struct bytes *secs[] = {&info, &abbrev, &line};
	srand(4);
	for (int i = 0; i < 20000; i++) {
		make_abbrev();
		make_info((enum variant)(i % 2));
		make_line();
		struct bytes *b = secs[i % 3];
		int k = 1 + rand() % 4;
		for (int j = 0; j < k; j++)
			b->d[(size_t)rand() % b->n] = (uint8_t)rand();
		lookup(info.n, 0x1000 + (uint64_t)(rand() % 0x120), fr, 8, &err);
	}
	make_abbrev();
	make_line();
	CHECK(1); /* reaching here is the test */
}

/*
 * A package's unit index (DWARF 5 section 7.3.5.3): nslots slots of ids
 * and rows, the columns' section ids, then each row's offsets and sizes.
 */
struct pkg_unit {
	uint64_t id;
	uint32_t off[3], size[3];
};

static void make_index(struct bytes *b, uint32_t version, uint32_t nslots,
		       const struct pkg_unit *units, uint32_t nunits)
{
	static const uint32_t cols[3] = {1, 3, 6}; /* info, abbrev, str_offsets */
	b->n = 0;
	un(b, version, 4);
	un(b, 3, 4), un(b, nunits, 4), un(b, nslots, 4);
	uint64_t ids[64] = {0};
	uint32_t rows[64] = {0};
	for (uint32_t r = 0; r < nunits; r++) {
		uint64_t mask = nslots - 1, h = units[r].id & mask;
		uint64_t step = ((units[r].id >> 32) & mask) | 1;
		while (rows[h])
			h = (h + step) & mask;
		ids[h] = units[r].id;
		rows[h] = r + 1;
	}
	for (uint32_t i = 0; i < nslots; i++)
		un(b, ids[i], 8);
	for (uint32_t i = 0; i < nslots; i++)
		un(b, rows[i], 4);
	for (int c = 0; c < 3; c++)
		un(b, cols[c], 4);
	for (uint32_t r = 0; r < nunits; r++)
		for (int c = 0; c < 3; c++)
			un(b, units[r].off[c], 4);
	for (uint32_t r = 0; r < nunits; r++)
		for (int c = 0; c < 3; c++)
			un(b, units[r].size[c], 4);
}

static void test_package_index(void)
{
	static uint8_t sec[256];
	static struct bytes ix;
	struct sw_dwarf_sections pkg = {.info = {.data = sec, .size = 100},
					.abbrev = {.data = sec + 100, .size = 30},
					.str_offsets = {.data = sec + 130, .size = 24},
					.str = {.data = sec + 154, .size = 50}};
	/* b's home slot is a's: the second hash takes it elsewhere */
	const struct pkg_unit u[2] = {{0x1111111100000001ull, {0, 0, 0}, {40, 10, 8}},
				      {0x2222222200000001ull, {40, 10, 8}, {60, 20, 16}}};
	struct sw_dwarf_sections got;
	for (uint32_t version = 2; version <= 5; version += 3) {
		make_index(&ix, version, 4, u, 2);
		pkg.cu_index = (struct sw_section){.data = ix.d, .size = ix.n};
		CHECK_INT(dw_package_unit(&pkg, u[0].id, &got), 1);
		CHECK(got.info.data == sec && got.info.size == 40);
		CHECK(got.abbrev.data == sec + 100 && got.abbrev.size == 10);
		CHECK(got.str.data == sec + 154 && got.str.size == 50); /* shared, not cut */
		CHECK_INT(dw_package_unit(&pkg, u[1].id, &got), 1);
		CHECK(got.info.data == sec + 40 && got.info.size == 60);
		CHECK(got.str_offsets.data == sec + 138 && got.str_offsets.size == 16);
		/* an id not there: its home slot empty, or its probe through full ones */
		CHECK_INT(dw_package_unit(&pkg, 0x2, &got), 0);
		CHECK_INT(dw_package_unit(&pkg, 0x3333333300000001ull, &got), 0);
	}
	/* every slot full, the id absent: the probe ends */
	const struct pkg_unit full[2] = {{0x10, {0, 0, 0}, {1, 1, 1}},
					 {0x11, {1, 1, 1}, {1, 1, 1}}};
	make_index(&ix, 5, 2, full, 2);
	pkg.cu_index = (struct sw_section){.data = ix.d, .size = ix.n};
	CHECK_INT(dw_package_unit(&pkg, 0x12, &got), 0);
	/* malformed: slots not a power of two, no such version, a contribution past its section */
	make_index(&ix, 5, 4, u, 2);
	patch32(&ix, 12, 3);
	pkg.cu_index = (struct sw_section){.data = ix.d, .size = ix.n};
	CHECK_INT(dw_package_unit(&pkg, u[0].id, &got), -EINVAL);
	make_index(&ix, 7, 4, u, 2);
	pkg.cu_index = (struct sw_section){.data = ix.d, .size = ix.n};
	CHECK_INT(dw_package_unit(&pkg, u[0].id, &got), -EINVAL);
	const struct pkg_unit past[1] = {{0x5, {90, 0, 0}, {20, 1, 1}}};
	make_index(&ix, 5, 2, past, 1);
	pkg.cu_index = (struct sw_section){.data = ix.d, .size = ix.n};
	CHECK_INT(dw_package_unit(&pkg, 0x5, &got), -EINVAL);
	/* every prefix of a good index: refused or answered, never read past */
	make_index(&ix, 5, 4, u, 2);
	size_t whole = ix.n;
	int answered = 0;
	for (size_t n = 0; n < whole; n++) {
		pkg.cu_index = (struct sw_section){.data = ix.d, .size = n};
		answered += dw_package_unit(&pkg, u[1].id, &got) == 1;
	}
	CHECK_INT(answered, 0);
}

int main(void)
{
	make_abbrev();
	make_line();
	test_well_formed(WELL_FORMED);
	/* the same answers past DIEs of every form, read and skipped */
	test_well_formed(ALL_FORMS);
	test_cycles();
	test_errors();
	test_hostile();
	test_package_index();
	sw_dwarf_free(last);
	return sw_test_end();
}
