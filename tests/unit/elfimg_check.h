#ifndef CPROF_TEST_ELFIMG_CHECK_H
#define CPROF_TEST_ELFIMG_CHECK_H
/*
 * elfimg_check.h — helpers shared by the elfimg unit tests (two programs,
 * so one file each stays readable): exercise() asks an image everything
 * and touches every byte it hands out, and a seeded PRNG for corruptions.
 * Include after <cmocka.h> and "unwind/elfimg.h".
 */
#include <stdint.h>
#include <string.h>

static inline int is_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/*
 * Ask an image everything and touch every byte it hands out, so that a
 * pointer outside the image faults or trips ASan. Returns a checksum so
 * the reads are not optimised away.
 */
static inline unsigned exercise(struct elf_image *img)
{
	const struct elf_segment *seg;
	const unsigned char *p;
	const char *bid, *name;
	uint64_t v, sz, start, a;
	unsigned sum = 0;
	size_t n, i, k;

	sum += (unsigned)elf_image_type(img);
	bid = elf_image_build_id(img);
	assert_true(strlen(bid) <= 128 && strlen(bid) % 2 == 0 && is_hex(bid));
	seg = elf_image_segments(img, &n);
	for (i = 0; i < n; i++) {
		uint64_t probe[4] = { seg[i].vaddr, seg[i].vaddr + seg[i].filesz - 1,
				      seg[i].vaddr + seg[i].filesz / 2, seg[i].vaddr + seg[i].memsz };
		for (k = 0; k < 4; k++) {
			p = elf_image_ptr(img, probe[k], 1);
			if (p)
				sum += p[0];
		}
		p = elf_image_ptr(img, seg[i].vaddr, seg[i].filesz);
		if (p && seg[i].filesz)
			sum += p[0] + p[seg[i].filesz - 1];
		for (k = 0; k < 16; k++) {
			a = seg[i].vaddr + seg[i].memsz / 16 * k;
			name = elf_image_symbol(img, a, &start);
			if (name) {
				sum += (unsigned)strlen(name);
				assert_true(start <= a);
			}
		}
	}
	if (elf_image_eh_frame_hdr(img, &v, &sz) == 0) {
		p = elf_image_ptr(img, v, sz > 4096 ? 4096 : sz);
		if (p && sz)
			sum += p[0];
	}
	sum += (unsigned)elf_image_nsymbols(img);
	assert_null(elf_image_ptr(img, UINT64_MAX, 2));
	return sum;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64: the same corruptions on every run and every machine. */

static inline uint64_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#endif
