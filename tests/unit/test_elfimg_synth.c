/*
 * test_elfimg_synth.c — unit tests for unwind/elfimg on a small ELF built
 * here byte by byte, so that every expected answer is known exactly: the
 * choice among aliases, size-0 symbols, nested functions, the kinds of
 * symbols that are ignored, .symtab over .dynsym, notes found through
 * segments or sections, and bytes by virtual address. The same image is
 * then corrupted field by field (offsets and counts out of range, note
 * sizes that wrap) and by 20,000 seeded random byte flips: each must be
 * refused or give an image whose every function returns safely.
 */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/elfimg.h"
#include "tests/unit/elfimg_check.h"

/* ---- a small ELF built here, to pin the symbol rules down ---- */

struct ssym {
	const char *name; /* NULL: a name offset outside the string table */
	uint64_t value, size;
	int bind, type, shndx;
};

#define G STB_GLOBAL
#define W STB_WEAK
#define L STB_LOCAL
#define F STT_FUNC
static const struct ssym synth_syms[] = {
	{ "outer", 0x2000, 0x100, G, F, 2 },      { "__alpha", 0x1000, 0x100, G, F, 1 },
	{ "w", 0x1200, 0x80, W, F, 1 },           { "inner", 0x2010, 0x10, G, F, 2 },
	{ "_alpha", 0x1000, 0x100, G, F, 1 },     { "bare", 0x1500, 0, G, F, 1 },
	{ "zeta_long", 0x1000, 0x100, G, F, 1 },  { "l", 0x1200, 0x80, L, F, 1 },
	{ "sized", 0x1400, 0x10, G, F, 1 },       { "foo2", 0x1000, 0x100, G, F, 1 },
	{ "label", 0x2040, 0, L, F, 2 },          { "__x", 0x1200, 0x80, W, F, 1 },
	{ "after_bare", 0x1800, 0x20, G, F, 1 },  { "bar2", 0x1000, 0x100, G, F, 1 },
	{ "ww", 0x1200, 0x80, W, F, 1 },          { "weak0", 0x1000, 0x100, W, F, 1 },
	{ "a", 0x1000, 0x100, L, F, 1 },          { "tail_bare", 0x1f00, 0, L, F, 1 },
	{ "bare3", 0x4f00, 0, G, F, 3 },          { "lbl_alias", 0x2400, 0, G, F, 2 },
	{ "sized_fn", 0x2400, 0x40, G, F, 2 },    { "ifn", 0x2600, 0x10, G, STT_GNU_IFUNC, 2 },
	{ "undef", 0x2700, 0x10, G, F, SHN_UNDEF }, { "zero", 0, 0x10, G, F, 1 },
	{ "obj", 0x2800, 0x10, G, STT_OBJECT, 2 }, { "nt", 0x2900, 0x10, G, STT_NOTYPE, 2 },
	{ NULL, 0x2a00, 0x10, G, F, 2 },          { "absbare", 0x6000, 0, G, F, SHN_ABS },
	{ "huge", 0x2b00, UINT64_MAX, G, F, 2 },
	/* Hand-written assembly: a label without type or size after crtstuff's size-0 function. */
	{ "frame_dummy", 0x1900, 0, L, F, 1 },    { "asm_kernel", 0x1a00, 0, G, STT_NOTYPE, 1 },
	{ "$x", 0x1c00, 0, L, STT_NOTYPE, 1 },    { ".Lloop", 0x1d00, 0, L, STT_NOTYPE, 1 },
	{ "note_label", 0x10, 0, G, STT_NOTYPE, 4 },
	{ "tailname", 0x3800, 0x10, G, F, 2 }, /* last: its name ends the table */
};
#undef G
#undef W
#undef L
#undef F
#define NSYNTH (sizeof(synth_syms) / sizeof(synth_syms[0]))

struct lookup {
	uint64_t addr;
	const char *name;
	uint64_t start;
};

static const struct lookup synth_lookups[] = {
	{ 0x1000, "bar2", 0x1000 },  { 0x10ff, "bar2", 0x1000 },   { 0x1100, NULL, 0 },
	{ 0x1200, "w", 0x1200 },     { 0x127f, "w", 0x1200 },      { 0x1280, NULL, 0 },
	{ 0x1400, "sized", 0x1400 }, { 0x140f, "sized", 0x1400 },  { 0x1410, NULL, 0 },
	{ 0x1500, "bare", 0x1500 },  { 0x17ff, "bare", 0x1500 },   { 0x1810, "after_bare", 0x1800 },
	{ 0x1820, NULL, 0 },         { 0x1fff, "tail_bare", 0x1f00 }, { 0x2000, "outer", 0x2000 },
	{ 0x2018, "inner", 0x2010 }, { 0x2020, "outer", 0x2000 },  { 0x2048, "outer", 0x2000 },
	{ 0x20ff, "outer", 0x2000 }, { 0x2100, "label", 0x2040 },  { 0x2420, "sized_fn", 0x2400 },
	{ 0x2440, NULL, 0 },         { 0x2608, "ifn", 0x2600 },    { 0x2708, NULL, 0 },
	{ 0x2808, NULL, 0 },         { 0x2908, "nt", 0x2900 },     { 0x2a08, NULL, 0 },
	{ 0x19ff, "frame_dummy", 0x1900 }, { 0x1a00, "asm_kernel", 0x1a00 },
	{ 0x1c08, "asm_kernel", 0x1a00 }, { 0x1d08, "asm_kernel", 0x1a00 },
	{ 0x1eff, "asm_kernel", 0x1a00 }, { 0x18, NULL, 0 },
	{ 0x2b08, NULL, 0 },         { 0x4fff, "bare3", 0x4f00 },  { 0x5000, NULL, 0 },
	{ 0x6000, NULL, 0 },         { 0xfff, NULL, 0 },           { 0, NULL, 0 },
};

enum { SYN_DYNSYM = 1, SYN_NO_PT_NOTE = 2, SYN_UNTERMINATED = 4, SYN_EXTRA_DYNSYM = 8 };

struct synth {
	unsigned char *d;
	size_t len;
	size_t phoff, shoff, note_off, text_off, shnum; /* section 5 is the symbols, 6 their names */
};

static size_t synth_put(struct synth *s, const void *p, size_t n, size_t align)
{
	size_t off = (s->len + align - 1) & ~(align - 1);

	assert_true(off + n <= 16384);
	memcpy(s->d + off, p, n);
	s->len = off + n;
	return off;
}

static Elf64_Phdr synth_ph(uint32_t type, uint32_t flags, uint64_t off, uint64_t va, uint64_t fsz,
			   uint64_t msz, uint64_t align)
{
	Elf64_Phdr p = { type, flags, off, va, va, fsz, msz, align };
	return p;
}

static Elf64_Shdr synth_sh(uint32_t name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t off,
			   uint64_t size, uint32_t link, uint64_t entsize)
{
	Elf64_Shdr h = { name, type, flags, addr, off, size, link, 1, 8, entsize };
	return h;
}

/* Symbol table + its strings; returns the symbols' offset; the strings' go to stroff and strsz. */
static size_t synth_symtab(struct synth *s, const struct ssym *v, size_t n, int unterminated,
			   size_t *stroff, size_t *strsz)
{
	unsigned char str[1024], sym[64 * sizeof(Elf64_Sym)];
	size_t sl = 1, i, nl;
	Elf64_Sym e;

	str[0] = 0;
	memset(sym, 0, sizeof(Elf64_Sym)); /* symbol 0 */
	for (i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		e.st_name = 0xfffff;
		if (v[i].name) {
			nl = strlen(v[i].name) + (unterminated && i == n - 1 ? 0 : 1);
			memcpy(str + sl, v[i].name, nl);
			e.st_name = (uint32_t)sl;
			sl += nl;
		}
		e.st_info = (unsigned char)ELF64_ST_INFO(v[i].bind, v[i].type);
		e.st_shndx = (uint16_t)v[i].shndx;
		e.st_value = v[i].value;
		e.st_size = v[i].size;
		memcpy(sym + (i + 1) * sizeof(e), &e, sizeof(e));
	}
	*stroff = synth_put(s, str, sl, 1);
	*strsz = sl;
	return synth_put(s, sym, (n + 1) * sizeof(e), 8);
}

static void synth_build(struct synth *s, int flags)
{
	static const char shstr[] = "\0.text\0.text2\0.text3\0.note\0.symtab\0.strtab\0.dynsym\0"
				    ".dynstr\0.shstrtab\0.dynsym";
	static const struct ssym dyn = { "dyn_only", 0x1000, 0x100, STB_GLOBAL, STT_FUNC, 1 };
	unsigned char note[36], text[0x100];
	Elf64_Phdr ph[4];
	Elf64_Shdr sh[10];
	Elf64_Ehdr eh;
	size_t i, symoff, stroff, strsz, dsymoff = 0, dstroff = 0, dstrsz = 0, shstroff, n = 0;

	memset(s, 0, sizeof(*s));
	s->d = calloc(1, 16384);
	assert_non_null(s->d);
	s->len = sizeof(eh) + sizeof(ph);
	s->phoff = sizeof(eh);
	memcpy(note, "\4\0\0\0\24\0\0\0\3\0\0\0GNU\0", 16);
	for (i = 0; i < 20; i++)
		note[16 + i] = (unsigned char)(0xa0 + i);
	s->note_off = synth_put(s, note, sizeof(note), 4);
	for (i = 0; i < sizeof(text); i++)
		text[i] = (unsigned char)i;
	s->text_off = synth_put(s, text, sizeof(text), 16);
	symoff = synth_symtab(s, synth_syms, NSYNTH, flags & SYN_UNTERMINATED, &stroff, &strsz);
	if (flags & SYN_EXTRA_DYNSYM)
		dsymoff = synth_symtab(s, &dyn, 1, 0, &dstroff, &dstrsz);
	shstroff = synth_put(s, shstr, sizeof(shstr), 1);

	ph[0] = synth_ph(PT_LOAD, PF_R | PF_X, s->text_off, 0x1000, 0x100, 0x3000, 0x1000);
	ph[1] = synth_ph(flags & SYN_NO_PT_NOTE ? PT_NULL : PT_NOTE, PF_R, s->note_off, 0, 36, 36, 4);
	ph[2] = synth_ph(PT_LOAD, PF_R, 0, 0x10000, 64, 64, 0x1000);
	ph[3] = synth_ph(PT_GNU_EH_FRAME, PF_R, s->text_off + 0x10, 0x1010, 0x20, 0x20, 4);
	memset(&sh[n++], 0, sizeof(sh[0]));
	sh[n++] = synth_sh(1, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, s->text_off, 0x1000, 0, 0);
	sh[n++] = synth_sh(7, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, 0x2000, s->text_off, 0x1000, 0, 0);
	sh[n++] = synth_sh(14, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, 0x4000, s->text_off, 0x1000, 0, 0);
	sh[n++] = synth_sh(21, SHT_NOTE, SHF_ALLOC, 0, s->note_off, 36, 0, 0);
	sh[n++] = synth_sh(flags & SYN_DYNSYM ? 44 : 27, flags & SYN_DYNSYM ? SHT_DYNSYM : SHT_SYMTAB, 0, 0,
			   symoff, (NSYNTH + 1) * sizeof(Elf64_Sym), 6, sizeof(Elf64_Sym));
	sh[n++] = synth_sh(35, SHT_STRTAB, 0, 0, stroff, strsz, 0, 0);
	if (flags & SYN_EXTRA_DYNSYM) {
		sh[n++] = synth_sh(44, SHT_DYNSYM, SHF_ALLOC, 0, dsymoff, 2 * sizeof(Elf64_Sym), 8,
				   sizeof(Elf64_Sym));
		sh[n++] = synth_sh(52, SHT_STRTAB, SHF_ALLOC, 0, dstroff, dstrsz, 0, 0);
	}
	sh[n++] = synth_sh(60, SHT_STRTAB, 0, 0, shstroff, sizeof(shstr), 0, 0);
	for (i = 0; i < n; i++)
		sh[i].sh_addralign = i == 4 ? 4 : sh[i].sh_addralign;
	s->shnum = n;
	s->shoff = synth_put(s, sh, n * sizeof(sh[0]), 8);

	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = s->phoff;
	eh.e_shoff = s->shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 4;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)n;
	eh.e_shstrndx = (uint16_t)(n - 1);
	memcpy(s->d, &eh, sizeof(eh));
	memcpy(s->d + s->phoff, ph, sizeof(ph));
}

static void synth_check_symbols(struct elf_image *img, int flags)
{
	uint64_t start;
	size_t i;

	assert_int_equal(elf_image_nsymbols(img), flags & SYN_UNTERMINATED ? 16 : 17);
	for (i = 0; i < sizeof(synth_lookups) / sizeof(synth_lookups[0]); i++) {
		const struct lookup *l = &synth_lookups[i];
		const char *name;

		start = 1;
		name = elf_image_symbol(img, l->addr, &start);
		if (!l->name) {
			if (name)
				fail_msg("0x%llx: got %s, want none", (unsigned long long)l->addr, name);
			continue;
		}
		if (!name)
			fail_msg("0x%llx: got none, want %s", (unsigned long long)l->addr, l->name);
		assert_string_equal(name, l->name);
		assert_int_equal(start, l->start);
	}
	if (flags & SYN_UNTERMINATED)
		assert_null(elf_image_symbol(img, 0x3808, NULL));
	else
		assert_string_equal(elf_image_symbol(img, 0x3808, NULL), "tailname");
}

static void test_synth(void **state)
{
	static const int variants[] = { 0, SYN_DYNSYM, SYN_NO_PT_NOTE, SYN_EXTRA_DYNSYM, SYN_UNTERMINATED };
	const struct elf_segment *seg;
	const unsigned char *p, *q;
	struct elf_image *img;
	struct synth s;
	uint64_t va, sz;
	size_t v, n;
	int fd;

	(void)state;
	for (v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		synth_build(&s, variants[v]);
		img = elf_image_from_mem(s.d, s.len);
		assert_non_null(img);
		assert_int_equal(elf_image_type(img), ET_DYN);
		assert_string_equal(elf_image_build_id(img), "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3");
		seg = elf_image_segments(img, &n);
		assert_int_equal(n, 2);
		assert_int_equal(seg[0].vaddr, 0x1000);
		assert_int_equal(seg[0].memsz, 0x3000);
		assert_int_equal(seg[0].offset, s.text_off);
		assert_int_equal(seg[0].filesz, 0x100);
		assert_int_equal(seg[0].flags, PF_R | PF_X);
		assert_int_equal(seg[1].vaddr, 0x10000);
		assert_int_equal(elf_image_eh_frame_hdr(img, &va, &sz), 0);
		assert_int_equal(va, 0x1010);
		assert_int_equal(sz, 0x20);

		/* Bytes at a vaddr; switching segments back and forth. */
		p = elf_image_ptr(img, 0x1000, 0x100);
		assert_non_null(p);
		assert_int_equal(p[0], 0);
		assert_int_equal(p[0xff], 0xff);
		q = elf_image_ptr(img, 0x10000, 64);
		assert_non_null(q);
		assert_memory_equal(q, s.d, 64);
		p = elf_image_ptr(img, 0x10fa, 6);
		assert_non_null(p);
		assert_int_equal(p[0], 0xfa);
		assert_null(elf_image_ptr(img, 0x1000, 0x101));
		assert_null(elf_image_ptr(img, 0x1100, 1)); /* memsz beyond filesz */
		assert_null(elf_image_ptr(img, 0xfff, 2));
		assert_null(elf_image_ptr(img, 0x1001, SIZE_MAX));
		assert_null(elf_image_ptr(img, 0x10000 + 63, 2));
		assert_int_equal(*(const unsigned char *)elf_image_ptr(img, 0x10000 + 63, 1), s.d[63]);
		assert_null(elf_image_ptr(img, UINT64_MAX, 1));

		synth_check_symbols(img, variants[v]);
		elf_image_free(img);
		free(s.d);
	}

	/* The same through a file. */
	synth_build(&s, 0);
	fd = memfd_create("synth", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, s.d, s.len), (ssize_t)s.len);
	img = elf_image_open(fd);
	close(fd);
	assert_non_null(img);
	synth_check_symbols(img, 0);
	assert_int_equal(strlen(elf_image_build_id(img)), 40);
	elf_image_free(img);
	free(s.d);
}

/* ---- corrupted images ---- */

static void put64(unsigned char *d, size_t off, uint64_t v)
{
	memcpy(d + off, &v, sizeof(v));
}

static void put32(unsigned char *d, size_t off, uint32_t v)
{
	memcpy(d + off, &v, sizeof(v));
}

static void put16(unsigned char *d, size_t off, uint16_t v)
{
	memcpy(d + off, &v, sizeof(v));
}

static void test_synth_bad_fields(void **state)
{
	struct synth s;
	struct elf_image *img;
	unsigned char *d;
	size_t sh5, sh6, k, n, lens[3];
	unsigned i;
	const unsigned char *p;

	(void)state;
	synth_build(&s, 0);
	d = malloc(s.len);
	assert_non_null(d);
	sh5 = s.shoff + 5 * sizeof(Elf64_Shdr);
	sh6 = s.shoff + 6 * sizeof(Elf64_Shdr);
	lens[0] = s.len;
	lens[1] = s.len - 1;
	lens[2] = UINT64_MAX;
	for (i = 0; i < 60; i++) {
		memcpy(d, s.d, s.len);
		k = lens[i % 3];
		switch (i / 3) {
		case 0: put64(d, offsetof(Elf64_Ehdr, e_phoff), k); break;
		case 1: /* PN_XNUM: the count is in section 0's sh_info */
			put16(d, offsetof(Elf64_Ehdr, e_phnum), PN_XNUM);
			put32(d, s.shoff + offsetof(Elf64_Shdr, sh_info), k == s.len ? 4 : (uint32_t)k);
			break;
		case 2: put16(d, offsetof(Elf64_Ehdr, e_phentsize), (uint16_t)(i * 7)); break;
		case 3: put64(d, offsetof(Elf64_Ehdr, e_shoff), k); break;
		case 4: put16(d, offsetof(Elf64_Ehdr, e_shnum), (uint16_t)(0xffff - i)); break;
		case 5: put16(d, offsetof(Elf64_Ehdr, e_shnum), 0); put64(d, s.shoff + 32, k); break;
		case 6: put16(d, offsetof(Elf64_Ehdr, e_shstrndx), (uint16_t)(0xfffe - i)); break;
		case 7: put64(d, sh5 + offsetof(Elf64_Shdr, sh_offset), k); break;
		case 8: put64(d, sh5 + offsetof(Elf64_Shdr, sh_size), k); break;
		case 9: put32(d, sh5 + offsetof(Elf64_Shdr, sh_link), (uint32_t)(k ^ i)); break;
		case 10: put64(d, sh6 + offsetof(Elf64_Shdr, sh_offset), k - 1); break;
		case 11: put64(d, sh6 + offsetof(Elf64_Shdr, sh_size), k); break;
		case 12: put64(d, s.phoff + offsetof(Elf64_Phdr, p_offset), k - 10); break;
		case 13: put64(d, s.phoff + offsetof(Elf64_Phdr, p_filesz), k); break;
		case 14: put64(d, s.phoff + offsetof(Elf64_Phdr, p_vaddr), UINT64_MAX - i); break;
		case 15: put64(d, s.phoff + 56 + offsetof(Elf64_Phdr, p_offset), k - 4); break;
		case 16: put64(d, s.phoff + 56 + offsetof(Elf64_Phdr, p_filesz), k); break;
		case 17: put32(d, s.note_off, (uint32_t)(0xffffffff - i)); break;
		case 18: put32(d, s.note_off + 4, i == 54 ? 65 : (uint32_t)(0xffffffff - i)); break;
		case 19: put64(d, s.phoff + 3 * 56 + offsetof(Elf64_Phdr, p_memsz), k); break;
		}
		img = elf_image_from_mem(d, s.len);
		if (i / 3 == 0 || (i / 3 == 1 && k != s.len) || (i / 3 == 2 && i * 7 != 56)) {
			assert_null(img); /* program headers outside the file */
			continue;
		}
		if (!img) fail_msg("case %u refused", i);
		exercise(img);
		if (i / 3 == 1)
			assert_non_null(elf_image_segments(img, &n) && n == 2 ? img : NULL);
		if (i / 3 == 3) {
			/* No section headers: no symbols, but segments and the build id. */
			assert_int_equal(elf_image_nsymbols(img), 0);
			assert_int_equal(strlen(elf_image_build_id(img)), 40);
		}
		if (i / 3 == 12 && k == s.len) {
			/* A segment whose file part is cut by the end of the file. */
			p = elf_image_ptr(img, 0x1000, 10);
			assert_non_null(p);
			assert_ptr_equal(p, elf_image_ptr(img, 0x1000, 1));
			assert_null(elf_image_ptr(img, 0x1000, 11));
		}
		if (i / 3 == 14) {
			/* Clamped below 2^64: the very last byte is not addressable. */
			assert_non_null(elf_image_ptr(img, UINT64_MAX - i, i));
			assert_null(elf_image_ptr(img, UINT64_MAX - i, i + 1));
		}
		if (i / 3 == 17 || i / 3 == 18)
			assert_string_equal(elf_image_build_id(img), "");
		elf_image_free(img);
	}
	free(d);
	free(s.d);
}

static void test_synth_flips(void **state)
{
	struct synth s;
	struct elf_image *img;
	unsigned char *d;
	unsigned i, k, nflip, refused = 0;
	size_t at;

	(void)state;
	synth_build(&s, SYN_EXTRA_DYNSYM);
	d = malloc(s.len);
	assert_non_null(d);
	rng_state = 0x9e3779b97f4a7c15ull;
	for (i = 0; i < 20000; i++) {
		memcpy(d, s.d, s.len);
		nflip = 1 + (unsigned)(rng_next() % 4);
		for (k = 0; k < nflip; k++) {
			uint64_t r = rng_next();

			/* Half the flips in the headers, half anywhere. */
			if (r & 1)
				at = (r >> 8) % 2 ? (r >> 16) % (s.phoff + 4 * 56)
						  : s.shoff + (r >> 16) % (s.len - s.shoff);
			else
				at = (r >> 8) % s.len;
			d[at] ^= (unsigned char)(1u << ((r >> 40) % 8));
			if ((r >> 50) % 4 == 0)
				d[at] = (unsigned char)(r >> 56);
		}
		img = elf_image_from_mem(d, s.len);
		if (!img) {
			refused++;
			continue;
		}
		exercise(img);
		elf_image_free(img);
	}
	assert_true(refused > 0 && refused < 20000);
	free(d);
	free(s.d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth),
		cmocka_unit_test(test_synth_bad_fields),
		cmocka_unit_test(test_synth_flips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
