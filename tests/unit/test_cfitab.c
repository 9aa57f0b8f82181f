/*
 * test_cfitab.c — unit tests for unwind/cfitab: an .eh_frame and a
 * .debug_frame built here record by record (so every entry is known), the
 * conversion of .debug_frame records into .eh_frame form (32- and 64-bit
 * DWARF, CIE versions 1 and 4), the table of this test's own executable
 * against the .eh_frame_hdr its linker wrote, the cap on what all tables
 * hold together, malformed sections, and
 * 20,000 seeded random byte flips that must all return safely.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/cfitab.h"
#include "unwind/elfimg.h"

/* A section under construction. */
struct sec {
	unsigned char b[4096];
	size_t n;
};

static void put(struct sec *s, const void *p, size_t n)
{
	assert_true(s->n + n <= sizeof(s->b));
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void put32(struct sec *s, uint32_t v)
{
	put(s, &v, 4);
}

static void put64(struct sec *s, uint64_t v)
{
	put(s, &v, 8);
}

static void put8(struct sec *s, uint8_t v)
{
	put(s, &v, 1);
}

static void patch32(struct sec *s, size_t at, uint32_t v)
{
	memcpy(s->b + at, &v, 4);
}

/* .eh_frame CIE "zR", pcrel|sdata4. Returns its offset. */
static size_t eh_cie(struct sec *s)
{
	size_t at = s->n;

	put32(s, 0);
	put32(s, 0);          /* CIE id */
	put8(s, 1);           /* version */
	put(s, "zR", 3);      /* augmentation */
	put8(s, 1);           /* code align */
	put8(s, 0x78);        /* data align -8 */
	put8(s, 16);          /* return column */
	put8(s, 1);           /* augmentation length */
	put8(s, 0x1b);        /* pcrel | sdata4 */
	put(s, "\x0c\x07\x08\x90\x01\0\0", 7); /* def_cfa rsp+8; offset rip */
	patch32(s, at, (uint32_t)(s->n - at - 4));
	return at;
}

/* .eh_frame FDE for [start, start+len) with the section at vaddr. */
static size_t eh_fde(struct sec *s, size_t cie, uint64_t vaddr, uint64_t start, uint32_t len)
{
	size_t at = s->n;

	put32(s, 0);
	put32(s, (uint32_t)(s->n - cie));
	put32(s, (uint32_t)(int32_t)(start - (vaddr + s->n)));
	put32(s, len);
	put8(s, 0); /* augmentation length */
	put(s, "\0\0\0", 3);
	patch32(s, at, (uint32_t)(s->n - at - 4));
	return at;
}

static void test_eh_frame(void **state)
{
	const uint64_t va = 0x400000;
	struct sec s = { .n = 0 };
	struct cfitab t;
	size_t c, f1, f2, f3;

	(void)state;
	c = eh_cie(&s);
	f3 = eh_fde(&s, c, va, 0x403000, 0x80);
	f1 = eh_fde(&s, c, va, 0x401000, 0x100);
	eh_fde(&s, c, va, 0x402800, 0); /* zero length: left out */
	f2 = eh_fde(&s, c, va, 0x402000, 0x40);
	put32(&s, 0); /* terminator */
	eh_fde(&s, c, va, 0x409000, 0x10); /* after the terminator: not read */

	cfitab_init(&t);
	assert_int_equal(cfitab_build_eh_frame(&t, s.b, s.n, va), 0);
	assert_int_equal(t.kind, CFITAB_EH_FRAME);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.base, 0x401000);
	assert_int_equal(t.end, 0x403080);
	assert_int_equal(t.frame_vaddr, va);
	assert_null(t.frame);
	assert_int_equal(t.ent[0].start, 0);
	assert_int_equal(t.ent[0].fde, (int32_t)f1);
	assert_int_equal(t.ent[1].start, 0x1000);
	assert_int_equal(t.ent[1].fde, (int32_t)f2);
	assert_int_equal(t.ent[2].start, 0x2000);
	assert_int_equal(t.ent[2].fde, (int32_t)f3);
	assert_int_equal(cfitab_find(&t, 0x400fff), -1);
	assert_int_equal(cfitab_find(&t, 0x401000), 0);
	assert_int_equal(cfitab_find(&t, 0x402fff), 1);
	assert_int_equal(cfitab_find(&t, 0x40307f), 2);
	assert_int_equal(cfitab_find(&t, 0x403080), -1);
	cfitab_release(&t);
	assert_int_equal(t.n, 0);
}

/* A .debug_frame CIE: 32-bit version 1, or 64-bit version 4. */
static size_t dbg_cie(struct sec *s, int is64)
{
	size_t at = s->n;

	if (is64) {
		put32(s, 0xffffffffu);
		put64(s, 0);
		put64(s, ~(uint64_t)0);
		put8(s, 4);
		put8(s, 0);  /* augmentation "" */
		put8(s, 8);  /* address size */
		put8(s, 0);  /* segment selector size */
	} else {
		put32(s, 0);
		put32(s, 0xffffffffu);
		put8(s, 1);
		put8(s, 0);
	}
	put8(s, 1);
	put8(s, 0x7c); /* -4, as Go writes */
	put8(s, 16);
	put(s, "\x0c\x07\x08\x90\x02", 5);
	if (is64)
		memcpy(s->b + at + 4, &(uint64_t){ s->n - at - 12 }, 8);
	else
		patch32(s, at, (uint32_t)(s->n - at - 4));
	return at;
}

static size_t dbg_fde(struct sec *s, int is64, size_t cie, uint64_t start, uint64_t len)
{
	size_t at = s->n;

	if (is64) {
		put32(s, 0xffffffffu);
		put64(s, 0);
		put64(s, cie);
	} else {
		put32(s, 0);
		put32(s, (uint32_t)cie);
	}
	put64(s, start);
	put64(s, len);
	put(s, "\x0e\x10\0", 3); /* def_cfa_offset 16; nop */
	if (is64)
		memcpy(s->b + at + 4, &(uint64_t){ s->n - at - 12 }, 8);
	else
		patch32(s, at, (uint32_t)(s->n - at - 4));
	return at;
}

/* Check one converted FDE: its CIE, addresses and instructions. */
static void check_converted(const struct cfitab *t, size_t i, uint64_t start, uint64_t len)
{
	const unsigned char *f = t->frame + t->ent[i].fde, *cie;
	uint32_t flen, cptr, clen;
	uint64_t v;

	memcpy(&flen, f, 4);
	memcpy(&cptr, f + 4, 4);
	assert_true(t->ent[i].fde + 4 + (size_t)flen <= t->frame_len);
	assert_int_equal(flen, 4 + 16 + 3);
	cie = f + 4 - cptr;
	assert_true(cie >= t->frame);
	memcpy(&clen, cie, 4);
	assert_int_equal(memcmp(cie + 4, "\0\0\0\0\3\0\1\x7c\x10", 9), 0); /* id 0, v3, "" */
	assert_int_equal(memcmp(cie + 13, "\x0c\x07\x08\x90\x02", 5), 0);
	assert_int_equal(clen, 9 + 5);
	memcpy(&v, f + 8, 8);
	assert_int_equal(v, start);
	memcpy(&v, f + 16, 8);
	assert_int_equal(v, len);
	assert_int_equal(memcmp(f + 24, "\x0e\x10\0", 3), 0);
}

static void test_debug_frame(void **state)
{
	struct sec s = { .n = 0 };
	struct cfitab t;
	size_t c32, c64;

	(void)state;
	c32 = dbg_cie(&s, 0);
	dbg_fde(&s, 0, c32, 0x402000, 0x20);
	c64 = dbg_cie(&s, 1);
	dbg_fde(&s, 1, c64, 0x401000, 0x10);
	dbg_fde(&s, 0, c64, 0x401800, 0x8); /* a 32-bit FDE of a 64-bit CIE */
	dbg_fde(&s, 0, 3, 0x405000, 0x8);   /* CIE pointer to no CIE: skipped */
	dbg_fde(&s, 0, 0x7ffff, 0x406000, 0x8); /* outside the section: skipped */

	cfitab_init(&t);
	assert_int_equal(cfitab_build_debug_frame(&t, s.b, s.n), 0);
	assert_int_equal(t.kind, CFITAB_DEBUG_FRAME);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.skipped, 2);
	assert_int_equal(t.base, 0x401000);
	assert_int_equal(t.end, 0x402020);
	assert_non_null(t.frame);
	assert_int_equal(t.ent[0].start, 0);
	assert_int_equal(t.ent[1].start, 0x800);
	assert_int_equal(t.ent[2].start, 0x1000);
	check_converted(&t, 0, 0x401000, 0x10);
	check_converted(&t, 1, 0x401800, 0x8);
	check_converted(&t, 2, 0x402000, 0x20);
	cfitab_release(&t);
}

/*
 * What tables hold is counted process-wide; a table that would pass the
 * total cap is not built, and the cap frees up as tables are released.
 */
static void test_total_cap(void **state)
{
	struct sec s = { .n = 0 };
	struct cfitab a, b;
	size_t c, before = cfitab_held();

	(void)state;
	c = dbg_cie(&s, 0);
	dbg_fde(&s, 0, c, 0x401000, 0x10);
	dbg_fde(&s, 0, c, 0x402000, 0x10);
	cfitab_init(&a);
	cfitab_init(&b);
	assert_int_equal(cfitab_build_debug_frame(&a, s.b, s.n), 0);
	assert_true(a.held >= a.n * sizeof(*a.ent) + a.frame_len && a.held > 0);
	assert_int_equal(cfitab_held(), before + a.held);
	/* Room for a but not for a second copy. */
	cfitab_limit_total(before + a.held + a.held / 2);
	assert_int_equal(cfitab_build_debug_frame(&b, s.b, s.n), -1);
	assert_int_equal(b.n, 0);
	assert_null(b.frame);
	assert_int_equal(cfitab_held(), before + a.held);
	cfitab_release(&a);
	assert_int_equal(cfitab_held(), before);
	assert_int_equal(cfitab_build_debug_frame(&b, s.b, s.n), 0);
	cfitab_release(&b);
	assert_int_equal(cfitab_held(), before);
	cfitab_limit_total(0);
}

/* Sections that are not what they claim: refused or skipped, never followed. */
static void test_malformed(void **state)
{
	static const unsigned char huge[] = { 0xf0, 0xff, 0xff, 0xff, 0, 0, 0, 0 };
	static const unsigned char trunc64[] = { 0xff, 0xff, 0xff, 0xff, 1, 0 };
	struct sec s = { .n = 0 };
	struct cfitab t;
	size_t c;

	(void)state;
	cfitab_init(&t);
	assert_int_equal(cfitab_build_eh_frame(&t, huge, sizeof(huge), 0), -1);
	assert_int_equal(cfitab_build_eh_frame(&t, trunc64, sizeof(trunc64), 0), -1);
	assert_int_equal(cfitab_build_debug_frame(&t, trunc64, sizeof(trunc64)), -1);
	assert_int_equal(cfitab_build_eh_frame(&t, huge, 0, 0), -1);
	assert_int_equal(t.n, 0);

	/* An FDE whose CIE pointer points before the section. */
	put32(&s, 12);
	put32(&s, 0x1000);
	put32(&s, 0);
	put32(&s, 16);
	assert_int_equal(cfitab_build_eh_frame(&t, s.b, s.n, 0x1000), -1);

	/* A CIE with an augmentation we cannot skip, then its FDE. */
	s.n = 0;
	c = s.n;
	put32(&s, 0);
	put32(&s, 0);
	put8(&s, 1);
	put(&s, "zXR", 4);
	put(&s, "\1\x78\x10\2\0\x1b", 6);
	patch32(&s, c, (uint32_t)(s.n - c - 4));
	eh_fde(&s, c, 0x1000, 0x2000, 0x10);
	assert_int_equal(cfitab_build_eh_frame(&t, s.b, s.n, 0x1000), -1);
	cfitab_release(&t);
}

/* This executable's .eh_frame gives the same table as its .eh_frame_hdr. */
static void test_own_eh_frame(void **state)
{
	const unsigned char *h, *p;
	struct elf_image *img;
	uint64_t vaddr, size, eh_vaddr;
	struct cfitab t;
	int32_t hs, hf;
	uint32_t count;
	size_t i;
	int fd;

	(void)state;
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	img = elf_image_open(fd);
	close(fd);
	assert_non_null(img);
	assert_int_equal(elf_image_eh_frame_hdr(img, &vaddr, &size), 0);
	h = elf_image_ptr(img, vaddr, 12);
	assert_non_null(h);
	memcpy(&count, h + 8, 4);
	cfitab_init(&t);
	assert_int_equal(cfitab_load(&t, img, CFITAB_EH_FRAME), 0);
	assert_int_equal(t.n, count);
	eh_vaddr = t.frame_vaddr;
	for (i = 0; i < count; i++) {
		p = elf_image_ptr(img, vaddr + 12 + 8 * i, 8);
		assert_non_null(p);
		memcpy(&hs, p, 4);
		memcpy(&hf, p + 4, 4);
		assert_int_equal(vaddr + (int64_t)hs, t.base + (uint64_t)t.ent[i].start);
		assert_int_equal(vaddr + (int64_t)hf, eh_vaddr + (uint64_t)t.ent[i].fde);
	}
	cfitab_release(&t);
	elf_image_free(img);
}

/* Random corruption of both kinds of section: every result is safe. */
static void test_random_flips(void **state)
{
	struct sec e = { .n = 0 }, d = { .n = 0 };
	unsigned char buf[4096];
	struct cfitab t;
	unsigned seed = 12345;
	size_t c, i, k, j;

	(void)state;
	c = eh_cie(&e);
	for (i = 0; i < 8; i++)
		eh_fde(&e, c, 0x400000, 0x401000 + 0x100 * i, 0x80);
	c = dbg_cie(&d, 0);
	for (i = 0; i < 4; i++)
		dbg_fde(&d, 0, c, 0x401000 + 0x100 * i, 0x80);
	c = dbg_cie(&d, 1);
	for (i = 0; i < 4; i++)
		dbg_fde(&d, 1, c, 0x402000 + 0x100 * i, 0x80);
	cfitab_init(&t);
	for (i = 0; i < 20000; i++) {
		const struct sec *s = i & 1 ? &d : &e;

		memcpy(buf, s->b, s->n);
		for (k = 0; k < 1 + i % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			buf[(seed >> 8) % s->n] ^= (unsigned char)(1u << ((seed >> 4) & 7));
		}
		seed = seed * 1103515245u + 12345u;
		if (i & 1)
			cfitab_build_debug_frame(&t, buf, s->n - (seed >> 8) % 4);
		else
			cfitab_build_eh_frame(&t, buf, s->n - (seed >> 8) % 4, 0x400000);
		for (j = 1; j < t.n; j++)
			assert_true(t.ent[j].start > t.ent[j - 1].start);
		for (j = 0; j < t.n && t.frame; j++)
			assert_true((size_t)t.ent[j].fde < t.frame_len);
		cfitab_release(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eh_frame),
		cmocka_unit_test(test_debug_frame),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_total_cap),
		cmocka_unit_test(test_own_eh_frame),
		cmocka_unit_test(test_random_flips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
