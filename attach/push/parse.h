#ifndef CPROF_PUSH_PARSE_H
#define CPROF_PUSH_PARSE_H
/*
 * parse — the two untrusted inputs of pushing: a spool entry's metadata
 * file (written by a cprof-attach, maybe another version, maybe cut short
 * by a crash or edited by hand) and a server's reply body (whatever the
 * other end of the network sends). No libcurl here, so the fuzz harness
 * (tests/fuzz/fuzz_push.c) builds without it.
 *
 * Invariants:
 *  - a parser reads at most the length it is given and writes at most the
 *    size it is given; nothing is assumed NUL-terminated;
 *  - a metadata text either parses completely into a valid struct
 *    spool_meta (every required key, each value within its limits) or is
 *    refused as a whole; unknown keys are ignored (a newer writer may add
 *    some), a repeated key is refused;
 *  - a reply message is one line of printable ASCII, at most the size
 *    given, never empty.
 */
#include <stddef.h>
#include <stdint.h>

#define SPOOL_META_MAX 4096u   /* bytes of a metadata file read at most */
#define SPOOL_NAME_MAX 1024u   /* "APP{k=v,...}", NUL included */
#define SPOOL_KIND_MAX 32u
#define SPOOL_META_VERSION 1u

/* What a spool entry needs to be sent: the request's query, and the kind for its sample-type configuration. */
struct spool_meta {
	char name[SPOOL_NAME_MAX]; /* Pyroscope's name parameter, APP{labels} */
	char kind[SPOOL_KIND_MAX]; /* cprof's profile type: cpu, block, ... */
	uint64_t from_ns;          /* capture start, ns since the epoch */
	uint64_t until_ns;         /* capture end, >= from_ns */
	unsigned capture;          /* its number in the series that took it */
	int pid;                   /* the profiled process */
};

/* Parse a metadata text of len bytes into m. 0, or -1 when it is not a valid one. */
int spool_meta_parse(const char *text, size_t len, struct spool_meta *m);

/* Write m as metadata text into out (size cap). Returns the length, or -1 when it does not fit. */
int spool_meta_format(const struct spool_meta *m, char *out, size_t cap);

/*
 * The human message in a server's reply body: the "message" of
 * Pyroscope's JSON error ({"code":...,"message":"..."}), else the first
 * line of the text; control and non-ASCII bytes become '?'. An empty
 * reply gives "(no message)". out has room for cap bytes (cap >= 16).
 */
void reply_message(const char *body, size_t len, char *out, size_t cap);

#endif
