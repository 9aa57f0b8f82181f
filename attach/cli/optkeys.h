#ifndef CPROF_OPTKEYS_H
#define CPROF_OPTKEYS_H
/*
 * optkeys — the getopt values of cprof-attach's long-only options, past
 * any short letter: optable.c's rows carry them, commands.c names those a
 * command refuses.
 */
enum {
	OPT_STACK = 256, OPT_STATS, OPT_FORMAT, OPT_EVERY, OPT_COUNT, OPT_SUMMARY, OPT_TOP,
	OPT_CHILDREN, OPT_NO_LINES, OPT_NO_LINE_CACHE, OPT_NO_KERNEL, OPT_LINES, OPT_SAMPLER,
	OPT_GROUP_BY, OPT_PUSH, OPT_APP, OPT_LABEL, OPT_SPOOL, OPT_SPOOL_MAX, OPT_PUSH_TIMEOUT,
	OPT_TENANT, OPT_BASIC_AUTH, OPT_BEARER_TOKEN, OPT_DEBUG_DIR, OPT_MIN_WAIT, OPT_WAKER_STACKS,
	OPT_INTERVAL,
};

#endif
