/*
 * fuzz_sigframe.c — libFuzzer harness for the signal-frame finder
 * (attach/sigframe.c): the first 8 bytes are the thread's sp, the rest the
 * stack copied from it. Every read must stay inside the copy, and a frame
 * found must satisfy what the tracer relies on. Run by `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attach/ptrace/sigframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sigframe f, g;
	uint64_t base;

	if (size < 8)
		return 0;
	memcpy(&base, data, 8);
	if (sigframe_find(data + 8, base, size - 8, &f) == 0) {
		if (f.addr < base || f.addr - base + SIGFRAME_LEN > size - 8)
			__builtin_trap();
		if (base < f.alt_lo || f.addr + SIGFRAME_LEN > f.alt_hi || f.alt_hi <= f.alt_lo)
			__builtin_trap();
		if ((f.sp >= f.alt_lo && f.sp < f.alt_hi) || !f.sp || !f.pc || !f.restorer)
			__builtin_trap();
		if (sigframe_check(data + 8, base, size - 8, f.addr, &g) != 0 || g.sp != f.sp)
			__builtin_trap();
	}
	return 0;
}
