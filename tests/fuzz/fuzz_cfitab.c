/*
 * fuzz_cfitab.c — libFuzzer harness for the CFI table builder
 * (unwind/cfitab.c). The first byte chooses what the rest is: an .eh_frame
 * section (loaded at an address taken from the next 4 bytes), a
 * .debug_frame section, or an ELF file whose sections cfitab_load() finds
 * and decompresses. Every table built must be sorted with strictly
 * increasing starts and, for .debug_frame, FDE offsets inside the converted
 * bytes; every lookup must return an index in range. Run by `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwind/cfitab.h"
#include "unwind/elfimg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cfitab *t)
{
	long k;
	size_t i;

	for (i = 1; i < t->n; i++)
		if (t->ent[i].start <= t->ent[i - 1].start)
			__builtin_trap();
	for (i = 0; i < t->n; i++) {
		if (t->ent[i].start < 0 || t->ent[i].fde < 0)
			__builtin_trap();
		if (t->kind == CFITAB_DEBUG_FRAME && (size_t)t->ent[i].fde >= t->frame_len)
			__builtin_trap();
	}
	if (t->n) {
		k = cfitab_find(t, t->base + (uint64_t)t->ent[t->n / 2].start);
		if (k < 0 || (size_t)k >= t->n)
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_image *img;
	struct cfitab t;
	uint32_t va;

	if (size < 5)
		return 0;
	cfitab_init(&t);
	memcpy(&va, data + 1, 4);
	switch (data[0] % 3) {
	case 0:
		cfitab_build_eh_frame(&t, data + 5, size - 5, va);
		check(&t);
		break;
	case 1:
		cfitab_build_debug_frame(&t, data + 5, size - 5);
		check(&t);
		break;
	default:
		img = elf_image_from_mem(data + 5, size - 5);
		if (!img)
			break;
		if (cfitab_load(&t, img, CFITAB_EH_FRAME) == 0)
			check(&t);
		if (cfitab_load(&t, img, CFITAB_DEBUG_FRAME) == 0)
			check(&t);
		elf_image_free(img);
		break;
	}
	cfitab_release(&t);
	return 0;
}
