/*
 * fuzz_perfmap.c — libFuzzer harness for the perf map parser
 * (unwind/perfmap.c): any bytes as /tmp/perf-PID.map. The table must come
 * out sorted and disjoint, every name NUL-terminated inside the names
 * block, no longer than PERFMAP_MAX_NAME and free of control characters,
 * and a lookup of every entry's first and last byte must find that entry.
 * Run by `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwind/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;
	uint64_t start;
	const char *name;
	size_t i, len;

	perfmap_init(&m);
	if (perfmap_parse(&m, (const char *)data, size) < 0)
		return 0;
	for (i = 0; i < m.n; i++) {
		const struct perfmap_entry *e = &m.v[i];

		if (e->start >= e->end || (i && m.v[i - 1].end > e->start) || e->name >= m.names_len)
			__builtin_trap();
		name = m.names + e->name;
		len = strnlen(name, m.names_len - e->name);
		if (len == m.names_len - e->name || len > PERFMAP_MAX_NAME || len == 0)
			__builtin_trap();
		for (size_t k = 0; k < len; k++)
			if ((unsigned char)name[k] < 0x20 || name[k] == 0x7f)
				__builtin_trap();
		if (perfmap_find(&m, e->start, &start) != name || start != e->start ||
		    perfmap_find(&m, e->end - 1, NULL) != name)
			__builtin_trap();
	}
	perfmap_release(&m);
	return 0;
}
