/*
 * array.c — growing an array by doubling up to a hard cap. It was the
 * model's alone (model/arena.c) while unwind/ grew its arrays one element
 * per realloc or in fixed steps; here every module below the command line
 * may use it. Doubling keeps appends amortized O(1); the cap is checked
 * before the multiplication, so size * max cannot overflow.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/array.h"

void *array_grow(void *arr, size_t *cap, size_t need, size_t size, size_t max)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return arr;
	if (need > max || max > SIZE_MAX / size) {
		errno = EFBIG;
		return NULL;
	}
	ncap = *cap ? *cap : ARRAY_MIN_CAP;
	while (ncap < need)
		ncap = ncap > max / 2 ? max : ncap * 2;
	if (ncap > max)
		ncap = max;
	p = realloc(arr, ncap * size);
	if (p)
		*cap = ncap;
	return p;
}
