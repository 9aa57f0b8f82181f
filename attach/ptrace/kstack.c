/*
 * kstack.c — a sleeping thread's kernel stack from /proc (kstack.h). Each
 * line reads "[<ADDRESS>] NAME+0xOFF/0xSIZE", the address zero unless
 * kptr_restrict allows; only the name is kept.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attach/ptrace/kstack.h"
#include "common/proc.h"

#define KSTACK_FILE_MAX 4096 /* 32 frames of ~60 bytes, with room */

static int kstack_symbol_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '$';
}

void kstack_parse(const char *text, size_t len, struct kstack *k)
{
	const char *p = text, *end = text + len, *nl, *q;
	size_t n;

	k->n = 0;
	while (p < end && k->n < KSTACK_MAX) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		/* "[<...>] " */
		if (nl - p < 4 || p[0] != '[' || p[1] != '<')
			return;
		q = memchr(p, ']', (size_t)(nl - p));
		if (!q || q[-1] != '>' || q + 2 > nl || q[1] != ' ')
			return;
		q += 2;
		for (n = 0; q + n < nl && kstack_symbol_char(q[n]) && n < KSTACK_NAME - 1; n++)
			;
		if (n == 0)
			return;
		memcpy(k->name[k->n], q, n);
		k->name[k->n][n] = '\0';
		k->n++;
		p = nl + 1;
	}
}

int kstack_read(pid_t pid, pid_t tid, struct kstack *k)
{
	char path[64], buf[KSTACK_FILE_MAX];
	ssize_t len;

	k->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
	len = proc_read(path, buf, sizeof(buf));
	if (len < 0)
		return -1;
	kstack_parse(buf, (size_t)len, k);
	return 0;
}
