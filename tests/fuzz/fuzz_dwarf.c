/*
 * fuzz_dwarf.c — libFuzzer harness for what cprof reads of debug
 * information (unwind/dwlines.c through libdw, unwind/debugfind.c's debug
 * link, unwind/minidebug.c's .gnu_debugdata): any bytes as an ELF file
 * with DWARF. Lookups at addresses across its loadable segments must give
 * bounded chains of NUL-terminated names; the debug link and the
 * MiniDebugInfo section, when present, are parsed and decompressed. Run
 * by `make fuzz`; the seeds are small -g builds. libdw 0.188's
 * dwarf_getscopes() leaks a few bytes on some malformed DIE trees (inside
 * libdw, on its error path): allocations made during a lookup are not
 * counted as leaks here, everything else is.
 */
#include <sanitizer/lsan_interface.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwind/debugfind.h"
#include "unwind/dwlines.h"
#include "unwind/elfimg.h"
#include "unwind/minidebug.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dwlines_frame fr[DWLINES_MAX_FRAMES];
	const struct elf_segment *seg;
	struct elf_image *img, *mini;
	const unsigned char *sec;
	volatile uint8_t sink = 0;
	struct dwlines *d;
	const char *name;
	uint64_t vaddr;
	size_t nseg = 0, i, k, j, n, len;
	uint32_t crc;
	int z;

	img = elf_image_from_mem(data, size);
	d = dwlines_open_mem(data, size);
	seg = img ? elf_image_segments(img, &nseg) : NULL;
	for (i = 0; d && i < nseg && i < 8; i++) {
		for (k = 0; k < 16; k++) {
			__lsan_disable();
			n = dwlines_lookup(d, seg[i].vaddr + k * (seg[i].memsz / 16 + 1), fr,
					   DWLINES_MAX_FRAMES);
			__lsan_enable();
			if (n > DWLINES_MAX_FRAMES)
				__builtin_trap();
			for (j = 0; j < n; j++)
				sink ^= (uint8_t)(fr[j].name[0] ^ fr[j].file[0] ^ strlen(fr[j].file));
		}
	}
	/* Lookups outside every segment, too. */
	if (d) {
		__lsan_disable();
		(void)dwlines_lookup(d, size, fr, DWLINES_MAX_FRAMES);
		__lsan_enable();
	}
	dwlines_free(d);
	if (img && elf_image_section(img, ".gnu_debuglink", &sec, &len, &vaddr, &z) == 0 &&
	    debugfind_parse_link(sec, len, &name, &crc) == 0)
		sink ^= (uint8_t)(name[0] ^ strlen(name));
	if (img && (mini = minidebug_open(img))) {
		(void)elf_image_nsymbols(mini);
		elf_image_free(mini);
	}
	elf_image_free(img);
	return sink & 0;
}
