/*
 * pltspin — a test target that calls an ifunc'd libc function (strlen) in
 * a tight loop, so that built static its samples often land on the .plt
 * stub the linker made for the ifunc, code without CFI. Prints "ready PID".
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void strlen_loop(void);

static volatile size_t sink;
static const char *volatile empty = "";

__attribute__((noinline)) void strlen_loop(void)
{
	for (;;)
		sink += strlen(empty);
}

int main(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	strlen_loop();
	return 0;
}
