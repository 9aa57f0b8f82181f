/*
 * remcall — a remote call from the command line, for the injection tests
 * and bench/inject: calls the function at ADDR with ARG on thread TID of
 * PID (attach/inject/remcall.h), N times, and prints each stop. Invariant:
 * it adds nothing to remcall_call(); what it measures is the primitive.
 *
 * Usage: remcall PID TID ADDR [ARG [N [DEADLINE_MS]]]
 * Output: "stop_ns NS syscalls N" per call; exit 0, or 3 with the cause.
 */
#include <stdio.h>
#include <stdlib.h>

#include "attach/inject/remcall.h"

int main(int argc, char **argv)
{
	struct remcall_req req = { 0 };
	struct remcall_res res;
	const char *why;
	long n, i;
	pid_t pid, tid;
	int rc;

	if (argc < 4) {
		fprintf(stderr, "usage: remcall PID TID ADDR [ARG [N [DEADLINE_MS]]]\n");
		return 2;
	}
	pid = (pid_t)atoi(argv[1]);
	tid = (pid_t)atoi(argv[2]);
	req.fn = strtoull(argv[3], NULL, 0);
	req.args[0] = argc > 4 ? strtoull(argv[4], NULL, 0) : 0;
	n = argc > 5 ? atol(argv[5]) : 1;
	req.deadline_ms = argc > 6 ? strtoull(argv[6], NULL, 0) : 0;
	req.blob_arg = -1;
	if (remcall_find_restorer(pid, &req.restorer, &why) < 0) {
		fprintf(stderr, "remcall: process %d: %s\n", (int)pid, why);
		return 3;
	}
	for (i = 0; i < n; i++) {
		rc = remcall_call(pid, tid, &req, &res);
		if (rc != REMCALL_OK) {
			fprintf(stderr, "remcall: process %d: %s\n", (int)pid, res.why);
			return 3;
		}
		printf("stop_ns %llu syscalls %u\n", (unsigned long long)res.stop_ns, res.syscalls);
	}
	return 0;
}
