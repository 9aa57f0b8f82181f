/*
 * dwguard.c — what libdw may do with a file before it does it: the bytes
 * its compressed DWARF sections will inflate to, charged to a budget per
 * object and across the process (libdw inflates every compressed debug
 * section when a file is opened, into a buffer of the declared size), and
 * the empty alt file set so that libdw never looks for a dwz file itself.
 */
#include <elf.h>
#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "common/err.h"
#include "unwind/dwguard.h"
#include "unwind/elfimg.h"

/* Bytes the open debug files' inflated sections hold between them. */
static _Atomic uint64_t inflated_live;
static atomic_int total_noted;

uint64_t dwguard_inflated_size(const void *data, size_t size)
{
	const unsigned char *p = data;
	Elf64_Ehdr eh;
	Elf64_Shdr sh, names;
	Elf64_Chdr ch;
	uint64_t total = 0, v, i, shnum;
	const char *n;

	if (!elf_image_libelf_ok(data, size))
		return 0; /* libelf is not given the file at all */
	memcpy(&eh, p, sizeof(eh));
	if (eh.e_shoff == 0)
		return 0;
	memcpy(&sh, p + eh.e_shoff, sizeof(sh));
	shnum = eh.e_shnum ? eh.e_shnum : sh.sh_size;
	i = eh.e_shstrndx == SHN_XINDEX ? sh.sh_link : eh.e_shstrndx;
	memset(&names, 0, sizeof(names));
	if (i != SHN_UNDEF && i < shnum)
		memcpy(&names, p + eh.e_shoff + i * sizeof(names), sizeof(names));
	if (names.sh_offset > size || names.sh_size > size - names.sh_offset)
		names.sh_size = 0;
	for (i = 0; i < shnum; i++) {
		memcpy(&sh, p + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_NOBITS || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			continue; /* libelf gives no data for it */
		v = 0;
		if ((sh.sh_flags & SHF_COMPRESSED) && sh.sh_size >= sizeof(ch)) {
			memcpy(&ch, p + sh.sh_offset, sizeof(ch));
			v = ch.ch_size;
		} else if (sh.sh_name < names.sh_size &&
			   memchr(n = (const char *)p + names.sh_offset + sh.sh_name, 0,
				  names.sh_size - sh.sh_name) &&
			   !strncmp(n, ".zdebug", 7) && sh.sh_size >= 12 &&
			   !memcmp(p + sh.sh_offset, "ZLIB", 4)) {
			memcpy(&v, p + sh.sh_offset + 4, sizeof(v));
			v = be64toh(v);
		}
		total = v > UINT64_MAX - total ? UINT64_MAX : total + v;
	}
	return total;
}

int dwguard_charge(const void *data, size_t size, const char *name, uint64_t *charged)
{
	uint64_t need = dwguard_inflated_size(data, size), live;

	*charged = 0;
	if (!need)
		return 0;
	if (need > DWGUARD_MAX_INFLATE) {
		note("%s: its compressed DWARF sections inflate to %llu MiB, more than the cap of "
		     "%llu MiB per object: no source lines for it (its frames keep their names)",
		     name, (unsigned long long)(need >> 20),
		     (unsigned long long)(DWGUARD_MAX_INFLATE >> 20));
		return -1;
	}
	live = atomic_fetch_add(&inflated_live, need);
	if (live + need > DWGUARD_MAX_INFLATE_TOTAL) {
		atomic_fetch_sub(&inflated_live, need);
		if (!atomic_exchange(&total_noted, 1))
			note("%s: its compressed DWARF sections (%llu MiB inflated) would take the "
			     "DWARF cprof holds past %llu MiB, the cap across objects: no source lines "
			     "for it or for later objects past the cap (their frames keep their names)",
			     name, (unsigned long long)(need >> 20),
			     (unsigned long long)(DWGUARD_MAX_INFLATE_TOTAL >> 20));
		return -1;
	}
	*charged = need;
	return 0;
}

void dwguard_release(uint64_t charged)
{
	atomic_fetch_sub(&inflated_live, charged);
}

/*
 * A file with no DWARF but an empty line table, for libdw to take as an
 * alt file that holds nothing: set, it stops libdw from looking for one.
 */
static unsigned char standin[320] __attribute__((aligned(8)));
static size_t standin_len;
static pthread_once_t standin_once = PTHREAD_ONCE_INIT;

static void standin_build(void)
{
	static const char names[] = "\0.shstrtab\0.debug_line";
	Elf64_Ehdr eh = { .e_type = ET_REL, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_ehsize = sizeof(Elf64_Ehdr), .e_shentsize = sizeof(Elf64_Shdr),
			  .e_shnum = 3, .e_shstrndx = 1 };
	Elf64_Shdr sh[3];
	size_t names_off = sizeof(eh), line_off = names_off + sizeof(names);

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_shoff = (line_off + 1 + 7) & ~7ul;
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = names_off,
			      .sh_size = sizeof(names), .sh_addralign = 1 };
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = line_off,
			      .sh_size = 1, .sh_addralign = 1 };
	memcpy(standin, &eh, sizeof(eh));
	memcpy(standin + names_off, names, sizeof(names));
	memcpy(standin + eh.e_shoff, sh, sizeof(sh));
	standin_len = eh.e_shoff + sizeof(sh);
}

const void *dwguard_standin(size_t *len)
{
	pthread_once(&standin_once, standin_build);
	*len = standin_len;
	return standin;
}
