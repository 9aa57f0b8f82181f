/*
 * fuzz_maps.c — libFuzzer harness for the /proc/PID/maps parser
 * (unwind/maps.c): any text, then lookups that must agree with a linear
 * search of what was parsed. Run by `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwind/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maps m;
	size_t i, j;

	maps_init(&m);
	if (maps_parse(&m, (const char *)data, size) == 0) {
		for (i = 0; i < m.n; i++) {
			const struct map_entry *e = &m.v[i];

			if (e->start >= e->end || !e->path || (i && m.v[i - 1].end > e->start))
				__builtin_trap();
			if (maps_find(&m, e->start) != e || maps_find(&m, e->end - 1) != e)
				__builtin_trap();
			for (j = 0; e->path[j]; j++)
				;
			if (j >= MAPS_MAX_PATH)
				__builtin_trap();
		}
	}
	maps_release(&m);
	return 0;
}
