#ifndef CPROF_PUSH_LABEL_H
#define CPROF_PUSH_LABEL_H
/*
 * label — the series name of a pushed profile, "APP{k=v,...}", which
 * Pyroscope parses into service_name (APP) and labels, and the default
 * spool directory.
 *
 * Invariants:
 *  - a name built here always parses back, under Pyroscope's rules, into
 *    exactly the labels given: user labels are checked
 *    (push_label_check), found values (host name) are cleaned;
 *  - the name fits the size given or is refused with a message.
 */
#include <stddef.h>

struct push_options;
struct target;

/*
 * Check one --label value: KEY=VALUE with KEY of [A-Za-z0-9_.] not
 * starting "__", VALUE non-empty without ',', '}', '{', '"' or control
 * characters (Pyroscope's name syntax has no escaping). 0, or -1 with a
 * message.
 */
int push_label_check(const char *kv);

/*
 * "APP{labels...,hostname=H,pid=P}" into out[cap]: APP is --app (checked)
 * or the target's executable name (cleaned); hostname and pid unless the
 * labels give them. 0, or -1 with a message.
 */
int push_name_build(const struct push_options *po, const struct target *t, char *out, size_t cap);

#endif
