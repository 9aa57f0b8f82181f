/*
 * zombie — a test target that keeps an unreaped child: it forks a child
 * that exits at once, prints "ready CHILD" once the child is a zombie, and
 * sleeps without ever calling wait().
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

int main(void)
{
	char path[64], buf[512];
	FILE *f;
	pid_t c = fork();

	if (c < 0)
		return 1;
	if (c == 0)
		_exit(0);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)c);
	for (;;) {
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && strstr(buf, ") Z ")) {
			fclose(f);
			break;
		}
		if (f)
			fclose(f);
		usleep(1000);
	}
	printf("ready %d\n", (int)c);
	fflush(stdout);
	for (;;)
		pause();
}
