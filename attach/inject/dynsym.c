/*
 * dynsym.c — dynsym.h. Invariant: only .dynsym, .dynstr and .gnu.version
 * are read, each as the bytes elf_image_section() vouches for; a string
 * index past .dynstr or a version table shorter than the symbols is "not
 * found", never a read out of bounds.
 */
#include <elf.h>
#include <string.h>

#include "attach/inject/dynsym.h"
#include "unwind/elfimg.h"

#define VERSYM_HIDDEN 0x8000u

int dynsym_lookup(int fd, const char *name, uint64_t *value)
{
	const unsigned char *sy, *st, *ve = NULL;
	size_t nsy, nst, nve = 0, i, len = strlen(name);
	uint64_t va;
	int z, rc = -1, best_hidden = 2;
	struct elf_image *img = elf_image_open(fd);

	if (!img)
		return -1;
	if (elf_image_section(img, ".dynsym", &sy, &nsy, &va, &z) < 0 || z ||
	    elf_image_section(img, ".dynstr", &st, &nst, &va, &z) < 0 || z)
		goto out;
	if (elf_image_section(img, ".gnu.version", &ve, &nve, &va, &z) < 0 || z)
		ve = NULL;
	for (i = 1; i < nsy / sizeof(Elf64_Sym); i++) {
		Elf64_Sym s;
		uint16_t v = 0;
		int hidden, type;

		memcpy(&s, sy + i * sizeof(s), sizeof(s));
		type = ELF64_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_OBJECT))
			continue;
		if (s.st_name >= nst || nst - s.st_name < len + 1 ||
		    memcmp(st + s.st_name, name, len + 1))
			continue;
		if (ve && (i + 1) * 2 <= nve)
			memcpy(&v, ve + i * 2, 2);
		hidden = (v & VERSYM_HIDDEN) != 0;
		if (hidden < best_hidden) {
			best_hidden = hidden;
			*value = s.st_value;
			rc = 0;
		}
	}
out:
	elf_image_free(img);
	return rc;
}
