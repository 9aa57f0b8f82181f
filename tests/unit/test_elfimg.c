/*
 * test_elfimg.c — unit tests for unwind/elfimg. Real files (this test's own
 * executable, the libc it runs with, the vDSO) are checked against what the
 * dynamic loader put in memory, which is an independent reading of the same
 * bytes: build IDs from the in-memory notes, code bytes from the mapped
 * text, function addresses from the linker. Truncations and seeded header
 * flips of the real executable must either be refused or answer every
 * query without touching memory outside the image; run under ASan or
 * valgrind to make that check strict. The symbol rules and hand-made
 * corruptions are in test_elfimg_synth.c.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/elfimg.h"
#include "unwind/maps.h"
#include "tests/unit/elfimg_check.h"

/* A function with a known name and some length, for symbol lookups. */
int elfimg_test_marker(int x);
__attribute__((noinline)) int elfimg_test_marker(int x)
{
	volatile int acc = x;
	int i;

	for (i = 0; i < x; i++)
		acc = acc * 31 + i;
	return acc;
}

/* The same as a local symbol. */
static __attribute__((noinline)) int local_marker(int x)
{
	volatile int acc = x;

	return acc * 7 + 1;
}

/* ---- what the dynamic loader knows ---- */

struct loaded {
	const char *want; /* substring of the object's name; "" for the program */
	int found;
	uintptr_t bias;
	const ElfW(Phdr) *phdr;
	int phnum;
	char name[512];
};

static int loaded_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loaded *l = arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	(void)size;
	if (l->want[0] ? !strstr(name, l->want) : name[0] != 0)
		return 0;
	l->found = 1;
	l->bias = info->dlpi_addr;
	l->phdr = info->dlpi_phdr;
	l->phnum = info->dlpi_phnum;
	snprintf(l->name, sizeof(l->name), "%s", name);
	return 1;
}

static void loaded_find(struct loaded *l, const char *want)
{
	memset(l, 0, sizeof(*l));
	l->want = want;
	dl_iterate_phdr(loaded_cb, l);
	assert_true(l->found);
}

/* The build ID from the loaded object's PT_NOTE segments, read in memory. */
static void loaded_build_id(const struct loaded *l, char *out, size_t cap)
{
	int i;

	out[0] = 0;
	for (i = 0; i < l->phnum; i++) {
		const unsigned char *p = (const unsigned char *)(l->bias + l->phdr[i].p_vaddr);
		size_t len = l->phdr[i].p_filesz, pos = 0, al = l->phdr[i].p_align == 8 ? 8 : 4;

		if (l->phdr[i].p_type != PT_NOTE)
			continue;
		while (pos + 12 <= len) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(p + pos);
			size_t name = pos + 12, desc = name + ((nh->n_namesz + al - 1) & ~(al - 1)), k;

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(p + name, "GNU", 4)) {
				assert_true(2 * nh->n_descsz < cap);
				for (k = 0; k < nh->n_descsz; k++)
					snprintf(out + 2 * k, 3, "%02x", p[desc + k]);
				return;
			}
			pos = desc + ((nh->n_descsz + al - 1) & ~(al - 1));
		}
	}
}

static struct elf_image *open_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct elf_image *img;

	assert_true(fd >= 0);
	img = elf_image_open(fd);
	close(fd);
	return img;
}

static unsigned char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *d;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	d = malloc((size_t)n);
	assert_non_null(d);
	assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return d;
}

/* ---- real files ---- */

static void test_self_exe(void **state)
{
	struct loaded self;
	struct elf_image *img;
	const struct elf_segment *seg;
	char mem_id[256];
	uint64_t eh, ehsz, fn;
	const unsigned char *p;
	size_t n, i, nx = 0;

	(void)state;
	loaded_find(&self, "");
	loaded_build_id(&self, mem_id, sizeof(mem_id));
	img = open_path("/proc/self/exe");
	assert_non_null(img);
	assert_true(elf_image_type(img) == ET_DYN || elf_image_type(img) == ET_EXEC);
	assert_int_equal(strlen(elf_image_build_id(img)), 40);
	assert_true(is_hex(elf_image_build_id(img)));
	assert_string_equal(elf_image_build_id(img), mem_id);

	seg = elf_image_segments(img, &n);
	assert_true(n >= 2);
	for (i = 0; i < n; i++) {
		if (!(seg[i].flags & PF_X))
			continue;
		nx++;
		/* The text as mapped by the loader is the text in the file. */
		p = elf_image_ptr(img, seg[i].vaddr, seg[i].filesz);
		assert_non_null(p);
		assert_memory_equal(p, (const void *)(self.bias + seg[i].vaddr),
				    seg[i].filesz < 4096 ? seg[i].filesz : 4096);
		assert_non_null(elf_image_ptr(img, seg[i].vaddr + seg[i].filesz - 1, 1));
		assert_null(elf_image_ptr(img, seg[i].vaddr + seg[i].filesz - 1, 2));
		assert_null(elf_image_ptr(img, seg[i].vaddr + seg[i].filesz, 1));
	}
	assert_int_equal(nx, 1);

	fn = (uint64_t)(uintptr_t)elfimg_test_marker - self.bias;
	p = elf_image_ptr(img, fn, 16);
	assert_non_null(p);
	assert_memory_equal(p, (const void *)(uintptr_t)elfimg_test_marker, 16);

	/* .eh_frame_hdr: version 1, inside a segment. */
	assert_int_equal(elf_image_eh_frame_hdr(img, &eh, &ehsz), 0);
	assert_true(ehsz >= 8);
	p = elf_image_ptr(img, eh, ehsz);
	assert_non_null(p);
	assert_int_equal(p[0], 1);
	elf_image_free(img);
	elf_image_free(NULL);
}

static void test_self_symbols(void **state)
{
	struct loaded self;
	struct elf_image *img;
	uint64_t fn, start = 0;
	int (*volatile fp)(int);
	const char *name;

	(void)state;
	assert_int_equal(elfimg_test_marker(3), ((3 * 31 + 0) * 31 + 1) * 31 + 2);
	loaded_find(&self, "");
	img = open_path("/proc/self/exe");
	assert_non_null(img);
	assert_true(elf_image_nsymbols(img) > 20);

	fn = (uint64_t)(uintptr_t)elfimg_test_marker - self.bias;
	name = elf_image_symbol(img, fn, &start);
	assert_non_null(name);
	assert_string_equal(name, "elfimg_test_marker");
	assert_int_equal(start, fn);
	start = 0;
	name = elf_image_symbol(img, fn + 8, &start);
	assert_non_null(name);
	assert_string_equal(name, "elfimg_test_marker");
	assert_int_equal(start, fn);
	fp = local_marker;
	assert_int_equal(fp(2), 15);
	name = elf_image_symbol(img, (uint64_t)(uintptr_t)fp - self.bias + 1, NULL);
	assert_non_null(name);
	assert_string_equal(name, "local_marker"); /* STB_LOCAL, from .symtab */

	assert_null(elf_image_symbol(img, 0, &start));
	assert_null(elf_image_symbol(img, UINT64_MAX, &start));
	elf_image_free(img);
}

static void test_libc(void **state)
{
	struct loaded libc;
	struct elf_image *img;
	void *h, *qs;
	char mem_id[256];
	uint64_t va, start = 0;
	const char *name;

	(void)state;
	loaded_find(&libc, "libc.so");
	loaded_build_id(&libc, mem_id, sizeof(mem_id));
	img = open_path(libc.name);
	assert_non_null(img);
	assert_int_equal(elf_image_type(img), ET_DYN);
	assert_int_equal(strlen(elf_image_build_id(img)), 40);
	assert_string_equal(elf_image_build_id(img), mem_id);
	assert_int_equal(elf_image_eh_frame_hdr(img, &va, &start), 0);

	h = dlopen(libc.name, RTLD_NOLOAD | RTLD_LAZY);
	assert_non_null(h);
	qs = dlsym(h, "qsort");
	assert_non_null(qs);
	va = (uint64_t)(uintptr_t)qs - libc.bias;
	name = elf_image_symbol(img, va, &start);
	assert_non_null(name);
	assert_string_equal(name, "qsort");
	assert_int_equal(start, va);
	name = elf_image_symbol(img, va + 4, &start);
	assert_non_null(name);
	assert_string_equal(name, "qsort");
	assert_true(elf_image_nsymbols(img) > 1000);
	dlclose(h);
	elf_image_free(img);
}

static void test_vdso(void **state)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	const struct map_entry *e;
	struct elf_image *img;
	struct loaded vdso;
	struct maps m;
	char mem_id[256];
	size_t n;

	(void)state;
	if (!base)
		skip();
	maps_init(&m);
	assert_int_equal(maps_read(&m, getpid()), 0);
	e = maps_find(&m, base);
	assert_non_null(e);
	assert_string_equal(e->path, "[vdso]");
	img = elf_image_from_mem((const void *)base, (size_t)(e->end - base));
	assert_non_null(img);
	assert_int_equal(elf_image_type(img), ET_DYN);
	assert_non_null(elf_image_segments(img, &n));
	assert_int_equal(n, 1);
	assert_true(elf_image_nsymbols(img) >= 4);
	loaded_find(&vdso, "vdso");
	loaded_build_id(&vdso, mem_id, sizeof(mem_id));
	assert_string_equal(elf_image_build_id(img), mem_id);
	exercise(img);
	elf_image_free(img);
	maps_release(&m);
}

static void test_open_refused(void **state)
{
	static const unsigned char junk[128] = "not an elf file at all";
	unsigned char hdr[64];
	int fd;

	(void)state;
	fd = memfd_create("junk", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_null(elf_image_open(fd)); /* empty */
	assert_int_equal(write(fd, junk, sizeof(junk)), sizeof(junk));
	assert_null(elf_image_open(fd));
	close(fd);
	fd = open("/proc/self", O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_null(elf_image_open(fd));
	close(fd);
	assert_null(elf_image_open(-1));
	assert_null(elf_image_from_mem(junk, sizeof(junk)));
	assert_null(elf_image_from_mem(junk, 0));

	/* 32-bit and big-endian headers are refused. */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, ELFMAG, SELFMAG);
	hdr[EI_CLASS] = ELFCLASS32;
	hdr[EI_DATA] = ELFDATA2LSB;
	assert_null(elf_image_from_mem(hdr, sizeof(hdr)));
	hdr[EI_CLASS] = ELFCLASS64;
	hdr[EI_DATA] = ELFDATA2MSB;
	assert_null(elf_image_from_mem(hdr, sizeof(hdr)));
	hdr[EI_DATA] = ELFDATA2LSB;
	assert_null(elf_image_from_mem(hdr, sizeof(hdr) - 1));
}

/* Truncations and header flips of the real executable. */
static void test_real_corrupt(void **state)
{
	unsigned char *d;
	size_t len, cut, phend, i, at;
	struct elf_image *img, *full;
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	size_t cuts[4096], ncut = 0;
	int fd;

	(void)state;
	d = read_whole("/proc/self/exe", &len);
	memcpy(&eh, d, sizeof(eh));
	phend = eh.e_phoff + (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	for (cut = 0; cut <= 1200 && cut < len; cut++)
		cuts[ncut++] = cut;
	for (i = 1; i <= 400; i++)
		cuts[ncut++] = len / 401 * i;
	for (i = 0; i < eh.e_shnum && ncut + 6 <= 4096; i++) {
		memcpy(&sh, d + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		cuts[ncut++] = sh.sh_offset - 1;
		cuts[ncut++] = sh.sh_offset + 1;
		cuts[ncut++] = sh.sh_offset + sh.sh_size - 1;
		cuts[ncut++] = sh.sh_offset + sh.sh_size;
		cuts[ncut++] = eh.e_shoff + i * sizeof(sh) + 1;
	}
	cuts[ncut++] = len - 1;
	for (i = 0; i < ncut; i++) {
		cut = cuts[i];
		if (cut > len)
			continue;
		img = elf_image_from_mem(d, cut);
		if (cut < sizeof(Elf64_Ehdr) || cut < phend)
			assert_null(img);
		else
			assert_non_null(img); /* the program headers are all we insist on */
		if (img) {
			exercise(img);
			elf_image_free(img);
		}
	}
	/* A few through files. */
	for (i = 0; i < 16; i++) {
		fd = memfd_create("cut", MFD_CLOEXEC);
		assert_true(fd >= 0);
		cut = i < 8 ? i * 40 : len / 16 * i;
		assert_int_equal(write(fd, d, cut), (ssize_t)cut);
		img = elf_image_open(fd);
		close(fd);
		if (img) {
			exercise(img);
			elf_image_free(img);
		}
	}

	/* Seeded flips in the ELF, program and section headers. */
	full = elf_image_from_mem(d, len);
	assert_non_null(full);
	assert_true(elf_image_nsymbols(full) > 20);
	rng_state = 0x2545f4914f6cdd1dull;
	for (i = 0; i < 600; i++) {
		uint64_t r = rng_next();
		unsigned char old;

		at = r % 3 == 0 ? (r >> 8) % sizeof(Elf64_Ehdr)
		   : r % 3 == 1 ? eh.e_phoff + (r >> 8) % (phend - eh.e_phoff)
				: eh.e_shoff + (r >> 8) % ((size_t)eh.e_shnum * sizeof(Elf64_Shdr));
		old = d[at];
		d[at] = (unsigned char)(r >> 32);
		img = elf_image_from_mem(d, len);
		d[at] = old;
		if (img) {
			exercise(img);
			elf_image_free(img);
		}
	}
	elf_image_free(full);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_exe),
		cmocka_unit_test(test_self_symbols),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_open_refused),
		cmocka_unit_test(test_real_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
