#ifndef CPROF_PRIVDIR_H
#define CPROF_PRIVDIR_H
/*
 * privdir — a directory private to this user under the cache directory
 * (the spool of --push, the cache of source lines): where it is, and the
 * one check that it is ours alone before anything in it is trusted or
 * written there.
 *
 * Invariants:
 *  - a directory is refused when its last component is a symbolic link,
 *    when it is not a directory, when another user owns it or when its
 *    group or others may write to it: someone else could then read what
 *    we keep there or plant files for us to read;
 *  - the check is made on the opened directory (fstat of an O_NOFOLLOW
 *    descriptor), so the directory cannot be swapped between check and use
 *    of that descriptor;
 *  - directories it creates (and their missing parents) get mode 0700;
 *  - nothing is printed: a refusal is a one-line message in the caller's
 *    buffer, naming the directory and the cause.
 */
#include <stddef.h>

/* Root's cache when neither XDG_CACHE_HOME nor HOME says: a directory only root may create in. */
#define PRIVDIR_ROOT_CACHE "/var/cache/cprof"

/*
 * $XDG_CACHE_HOME/cprof/SUB when XDG_CACHE_HOME is absolute, else
 * $HOME/.cache/cprof/SUB when HOME is, else PRIVDIR_ROOT_CACHE/SUB for
 * root, into out[cap]. out, or NULL when none applies (or the name does
 * not fit): never a name in a directory others may write to, like /tmp,
 * that another user could create first.
 */
const char *privdir_cache(const char *sub, char *out, size_t cap);

/*
 * Open directory dir, named what in messages ("spool directory"), as a
 * read-only O_DIRECTORY descriptor and check it as the header says. With
 * write, create it (and missing parents) first and check that we may
 * write there. The descriptor, or -1 with a message in why[cap] and errno
 * set (ENOENT: without write, the directory does not exist; EPERM: it was
 * refused).
 */
int privdir_open(const char *dir, const char *what, int write, char *why, size_t cap);

#endif
