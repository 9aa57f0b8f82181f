/*
 * test_bounds.c — bounded decoding of files a target controls (issue 25):
 * a registered mapping whose file is truncated reads zeros and counts the
 * damage, while a SIGBUS elsewhere still kills (the handler chains); an
 * image whose file shrinks under it answers nothing and never crashes;
 * the sizes that compressed DWARF sections declare are summed and a file
 * past the cap gets no dwlines; libelf is kept from a compressed section
 * name table and from absurd section counts; MiniDebugInfo whose xz index
 * declares more than the cap is refused without being decoded.
 */
#include <elf.h>
#include <endian.h>
#include <lzma.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/filefault.h"
#include "unwind/dwguard.h"
#include "unwind/dwlines.h"
#include "unwind/elfimg.h"
#include "unwind/minidebug.h"

/* A file of n pages of 'A' in memory. */
static int pages_file(size_t n)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *buf = malloc(n * (size_t)ps);
	int fd = memfd_create("bounds", MFD_CLOEXEC);

	assert_non_null(buf);
	assert_true(fd >= 0);
	memset(buf, 'A', n * (size_t)ps);
	assert_int_equal(write(fd, buf, n * (size_t)ps), (ssize_t)(n * (size_t)ps));
	free(buf);
	return fd;
}

/*
 * cmocka puts its own SIGBUS handler in place for each test, over
 * filefault's: the fault tests run in a child that starts from the
 * default action and makes its first filefault mapping itself.
 */
#define CHILD_CHECK(c)                                                                  \
	do {                                                                            \
		if (!(c)) {                                                             \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);         \
			_exit(1);                                                       \
		}                                                                       \
	} while (0)

/* Run fn in a child; its wait status. */
static int in_child(void (*fn)(void))
{
	struct sigaction dfl;
	pid_t pid;
	int st;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGBUS, &dfl, NULL);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void truncated_mapping_reads_zeros(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	struct filefault_map m;
	volatile const char *p;
	int fd = pages_file(3);

	CHILD_CHECK(filefault_map(fd, 3 * (size_t)ps, PROT_READ, &m) == 0);
	p = m.data;
	CHILD_CHECK(p[2 * ps] == 'A');
	CHILD_CHECK(!filefault_damaged(&m));
	CHILD_CHECK(ftruncate(fd, ps) == 0);
	CHILD_CHECK(p[0] == 'A');    /* still in the file */
	CHILD_CHECK(p[2 * ps] == 0); /* past its end: a zero page, not SIGBUS */
	CHILD_CHECK(p[2 * ps + 7] == 0);
	CHILD_CHECK(filefault_damaged(&m));
	CHILD_CHECK(filefault_hits(&m) == 1); /* one page replaced, read twice */
	CHILD_CHECK(filefault_total() == 1);
	filefault_unmap(&m);
	CHILD_CHECK(m.data == NULL);
	close(fd);
}

static void test_truncated_mapping_reads_zeros(void **state)
{
	int st = in_child(truncated_mapping_reads_zeros);

	(void)state;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void other_sigbus(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	struct filefault_map m;
	volatile const char *p;
	int fd = pages_file(2);

	/* The handler is in place; this second mapping is not registered. */
	CHILD_CHECK(filefault_map(fd, 2 * (size_t)ps, PROT_READ, &m) == 0);
	p = mmap(NULL, 2 * (size_t)ps, PROT_READ, MAP_PRIVATE, fd, 0);
	CHILD_CHECK(p != MAP_FAILED);
	CHILD_CHECK(ftruncate(fd, 0) == 0);
	(void)p[ps];
	_exit(4); /* not reached: the default action kills */
}

static void test_other_sigbus_still_kills(void **state)
{
	int st = in_child(other_sigbus);

	(void)state;
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGBUS);
}

/* This executable copied into a memory file (its .symtab and headers lie at the end). */
static int self_copy(void)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
	struct stat st;

	CHILD_CHECK(in >= 0 && fstat(in, &st) == 0);
	out = memfd_create("self", MFD_CLOEXEC);
	CHILD_CHECK(out >= 0);
	CHILD_CHECK(sendfile(out, in, NULL, (size_t)st.st_size) == st.st_size);
	close(in);
	return out;
}

static void image_truncated_under_it(void)
{
	struct elf_image *img;
	const unsigned char *data;
	uint64_t vaddr, start;
	size_t size;
	int fd = self_copy(), z;

	img = elf_image_open(fd);
	CHILD_CHECK(img != NULL);
	CHILD_CHECK(!elf_image_damaged(img));
	CHILD_CHECK(ftruncate(fd, 4096) == 0);
	/* The symbols are read now, from pages that are gone: zeros, then nothing. */
	CHILD_CHECK(!elf_image_symbol(img, (uint64_t)(uintptr_t)image_truncated_under_it, &start));
	CHILD_CHECK(elf_image_damaged(img));
	CHILD_CHECK(elf_image_section(img, ".text", &data, &size, &vaddr, &z) == -1);
	CHILD_CHECK(!elf_image_ptr(img, 0, 1));
	elf_image_free(img);
	close(fd);
}

static void test_image_truncated_under_it(void **state)
{
	int st = in_child(image_truncated_under_it);

	(void)state;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * A minimal ELF file: a null section, .shstrtab, then one section named
 * name with flags and contents data[0..len). shstr_flags go on .shstrtab.
 */
static unsigned char *synth(const char *name, uint64_t flags, const void *data, size_t len,
			    uint64_t shstr_flags, size_t *out_len)
{
	char names[64];
	size_t nlen, off_names = sizeof(Elf64_Ehdr), off_data, off_sh, total;
	Elf64_Ehdr eh;
	Elf64_Shdr sh[3];
	unsigned char *f;

	memset(names, 0, sizeof(names));
	strcpy(names + 1, ".shstrtab");
	strcpy(names + 11, name);
	nlen = 11 + strlen(name) + 1;
	off_data = (off_names + nlen + 7) & ~(size_t)7;
	off_sh = (off_data + len + 7) & ~(size_t)7;
	total = off_sh + sizeof(sh);
	f = calloc(1, total);
	assert_non_null(f);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = off_sh;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 1;
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + off_names, names, nlen);
	memcpy(f + off_data, data, len);
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_flags = shstr_flags,
			      .sh_offset = off_names, .sh_size = nlen, .sh_addralign = 1 };
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_flags = flags,
			      .sh_offset = off_data, .sh_size = len, .sh_addralign = 1 };
	memcpy(f + off_sh, sh, sizeof(sh));
	*out_len = total;
	return f;
}

static void test_inflate_caps(void **state)
{
	unsigned char chdr_blob[sizeof(Elf64_Chdr) + 16], gnu[12 + 16], *f;
	Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = 1ull << 40, .ch_addralign = 1 };
	uint64_t be = htobe64(3ull << 30);
	size_t len;

	(void)state;
	memset(chdr_blob, 0, sizeof(chdr_blob));
	memcpy(chdr_blob, &ch, sizeof(ch));
	f = synth(".debug_info", SHF_COMPRESSED, chdr_blob, sizeof(chdr_blob), 0, &len);
	assert_int_equal(elf_image_libelf_ok(f, len), 1);
	assert_true(dwguard_inflated_size(f, len) == 1ull << 40);
	assert_null(dwlines_open_mem(f, len)); /* past the cap: refused before libdw */
	free(f);

	memset(gnu, 0, sizeof(gnu));
	memcpy(gnu, "ZLIB", 4);
	memcpy(gnu + 4, &be, 8);
	f = synth(".zdebug_info", 0, gnu, sizeof(gnu), 0, &len);
	assert_true(dwguard_inflated_size(f, len) == 3ull << 30);
	assert_null(dwlines_open_mem(f, len));
	free(f);

	/* Under the cap: counted, then libdw finds no DWARF it can use. */
	ch.ch_size = 1u << 20;
	memcpy(chdr_blob, &ch, sizeof(ch));
	f = synth(".debug_info", SHF_COMPRESSED, chdr_blob, sizeof(chdr_blob), 0, &len);
	assert_true(dwguard_inflated_size(f, len) == 1u << 20);
	assert_null(dwlines_open_mem(f, len));
	free(f);

	/* elf_strptr() would inflate a compressed name table: libelf never sees it. */
	f = synth(".debug_info", 0, gnu, sizeof(gnu), SHF_COMPRESSED, &len);
	assert_int_equal(elf_image_libelf_ok(f, len), 0);
	assert_true(dwguard_inflated_size(f, len) == 0);
	free(f);
}

static void test_section_count_cap(void **state)
{
	unsigned char data[16] = { 0 }, *f;
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	size_t len;

	(void)state;
	f = synth(".text", 0, data, sizeof(data), 0, &len);
	assert_int_equal(elf_image_libelf_ok(f, len), 1);
	/* e_shnum 0: the count is sh0.sh_size, here far more than the file holds. */
	memcpy(&eh, f, sizeof(eh));
	eh.e_shnum = 0;
	memcpy(f, &eh, sizeof(eh));
	memcpy(&sh0, f + eh.e_shoff, sizeof(sh0));
	sh0.sh_size = ELF_MAX_SECTIONS + 1;
	memcpy(f + eh.e_shoff, &sh0, sizeof(sh0));
	assert_int_equal(elf_image_libelf_ok(f, len), 0);
	free(f);
}

static void test_minidebug_declared_too_big(void **state)
{
	size_t n = MINIDEBUG_MAX_OUT + (1u << 20), cap = 1u << 20, xzlen = 0, len;
	unsigned char *zeros = calloc(1, n), *xz = malloc(cap), *f;
	struct elf_image *img;

	(void)state;
	assert_non_null(zeros);
	assert_non_null(xz);
	assert_int_equal(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC32, NULL, zeros, n, xz, &xzlen, cap),
			 LZMA_OK);
	free(zeros);
	f = synth(".gnu_debugdata", 0, xz, xzlen, 0, &len);
	img = elf_image_from_mem(f, len);
	assert_non_null(img);
	assert_null(minidebug_open(img)); /* refused by its declared size, with a note */
	elf_image_free(img);
	free(f);
	free(xz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_mapping_reads_zeros),
		cmocka_unit_test(test_other_sigbus_still_kills),
		cmocka_unit_test(test_image_truncated_under_it),
		cmocka_unit_test(test_inflate_caps),
		cmocka_unit_test(test_section_count_cap),
		cmocka_unit_test(test_minidebug_declared_too_big),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
