/*
 * fuzz_push.c — libFuzzer harness for the push module's untrusted-input
 * parsers (attach/push/parse.c): any bytes as a spool entry's metadata
 * file, and as a server's reply body. A metadata text that parses must
 * hold NUL-terminated printable name and kind within their arrays and
 * until >= from, and must come out of spool_meta_format() and back
 * unchanged; a reply message must be a non-empty line of printable ASCII
 * within its buffer, for every buffer size. Run by `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attach/push/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void printable(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap), i;

	if (n == cap)
		__builtin_trap();
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spool_meta m, m2;
	char text[SPOOL_META_MAX + 1], msg[256];
	size_t caps[] = { 16, 17, 64, sizeof(msg) }, i;
	int n;

	if (spool_meta_parse((const char *)data, size, &m) == 0) {
		if (strnlen(m.name, sizeof(m.name)) == sizeof(m.name) ||
		    strnlen(m.kind, sizeof(m.kind)) == sizeof(m.kind) || m.until_ns < m.from_ns ||
		    !m.name[0] || !m.kind[0] || m.pid <= 0)
			__builtin_trap();
		n = spool_meta_format(&m, text, sizeof(text));
		if (n >= 0) {
			if (spool_meta_parse(text, (size_t)n, &m2) < 0 || memcmp(&m, &m2, sizeof(m)))
				__builtin_trap();
		}
	}
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		memset(msg, 'X', sizeof(msg));
		reply_message((const char *)data, size, msg, caps[i]);
		printable(msg, caps[i]);
		/* Nothing written past the cap: msg[cap] keeps its 'X'. */
		if (!msg[0] || (caps[i] < sizeof(msg) && msg[caps[i]] != 'X'))
			__builtin_trap();
	}
	return 0;
}
