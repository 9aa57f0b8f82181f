/*
 * fuzz_elf.c — libFuzzer harness for the ELF reader (unwind/elfimg.c and
 * its symbol table, unwind/symtab.c): any bytes as an ELF image; every
 * accessor, symbol lookups across the loadable segments, and reads
 * through elf_image_ptr() that must stay inside the image. Run by
 * `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwind/elfimg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct elf_segment *seg;
	struct elf_image *img;
	uint64_t v, sz, start;
	volatile uint8_t sink = 0;
	size_t n, i, k;
	const uint8_t *p;
	const char *name;

	img = elf_image_from_mem(data, size);
	if (!img)
		return 0;
	(void)elf_image_type(img);
	name = elf_image_build_id(img);
	sink ^= (uint8_t)name[0];
	if (elf_image_eh_frame_hdr(img, &v, &sz) == 0 && (p = elf_image_ptr(img, v, 12)))
		sink ^= p[11];
	seg = elf_image_segments(img, &n);
	for (i = 0; i < n && i < 16; i++) {
		for (k = 0; k < 8; k++) {
			v = seg[i].vaddr + k * (seg[i].memsz / 8 + 1);
			if ((p = elf_image_ptr(img, v, 8)))
				sink ^= p[7];
			name = elf_image_symbol(img, v, &start);
			if (name) {
				sink ^= (uint8_t)name[0];
				if (start > v)
					__builtin_trap();
			}
		}
	}
	(void)elf_image_nsymbols(img);
	elf_image_free(img);
	return sink & 0;
}
