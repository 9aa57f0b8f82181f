/*
 * callsite.c — recognising call instructions by the bytes before a return
 * address. Only the forms that end exactly at ret are tried: e8 rel32 (5
 * bytes), and ff /2 (opcode ff, ModRM reg field 2) optionally preceded by
 * a REX prefix, with each ModRM addressing form's length: register (2),
 * [reg] (2), [reg+disp8] (3), [reg+disp32] / [rip+disp32] (6), and each of
 * those with a SIB byte (+1). An 8-byte window read once covers them all.
 */
#include <string.h>

#include "unwind/callsite.h"
#include "unwind/space.h"

/* Length of an ff /2 instruction whose ModRM byte is m, or 0 when not /2. */
static int ff2_len(unsigned char m, unsigned char sib)
{
	int mod = m >> 6, rm = m & 7, n = 2;

	if (((m >> 3) & 7) != 2)
		return 0;
	if (mod == 3)
		return 2;
	if (rm == 4) {
		n++; /* SIB */
		if (mod == 0 && (sib & 7) == 5)
			n += 4; /* no base: disp32 */
	} else if (mod == 0 && rm == 5) {
		n += 4; /* rip+disp32 */
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return n;
}

int callsite_classify(struct space *s, uint64_t ret, uint64_t *target)
{
	unsigned char b[8], probe;
	int32_t rel;
	int k, len;

	if (ret < sizeof(b) || space_read(s, ret - sizeof(b), b, sizeof(b)) < 0)
		return CALLSITE_NONE;
	/*
	 * e8 rel32, when it goes into an object: the bytes before an
	 * indirect call can read as one too (a mov whose displacement holds
	 * e8), whose target is then nowhere. Such a reading is not taken.
	 */
	if (b[3] == 0xe8) {
		memcpy(&rel, b + 4, sizeof(rel));
		*target = ret + (uint64_t)(int64_t)rel;
		if (space_read(s, *target, &probe, 1) == 0)
			return CALLSITE_DIRECT;
	}
	/* ff /2 of length len ends at ret: opcode at 8-len, ModRM after it. */
	for (len = 2; len <= 7; len++) {
		k = 8 - len;
		if (b[k] != 0xff)
			continue;
		/* A REX prefix before the opcode does not change what follows it. */
		if (ff2_len(b[k + 1], k + 2 < 8 ? b[k + 2] : 0) == len)
			return CALLSITE_INDIRECT;
	}
	return CALLSITE_NONE;
}

int callsite_is_stub(struct space *s, uint64_t addr)
{
	unsigned char b[11];
	size_t i = 0;

	if (space_read(s, addr, b, sizeof(b)) < 0)
		return 0;
	if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		i = 4; /* endbr64 */
	if (b[i] == 0xf2)
		i++; /* bnd */
	return b[i] == 0xff && b[i + 1] == 0x25; /* jmp *disp32(%rip) */
}
