#ifndef CPROF_ENGINE_CHLDWAKE_H
#define CPROF_ENGINE_CHLDWAKE_H
/*
 * chldwake — one SIGCHLD, several tracers. A tracee's stop raises SIGCHLD
 * for the whole tracing process, and standard signals do not queue: with
 * one tracer thread per process of a family (--children), each reading
 * its own signalfd, the tracer that read a SIGCHLD was often not the one
 * whose thread had stopped, and that one waited out its poll (1 ms: every
 * pause of a --children capture). So a tracer that reads a SIGCHLD wakes
 * every other tracer waiting for a stop, through an eventfd of each.
 *
 * Invariants:
 *  - a tracer marks itself waiting (chldwake_waiting) before its first
 *    waitpid of a wait, and clears the mark when the wait ends: a SIGCHLD
 *    read by another after that waitpid wakes it; one read before, it did
 *    not need;
 *  - only waiting tracers are woken: a stop costs the tracers that wait
 *    for one a wake-up each, not the whole family;
 *  - at most CHLDWAKE_MAX tracers at once; past that, or without an
 *    eventfd, a tracer has no slot (-1) and waits out its poll as before;
 *  - thread-safe; a slot's eventfd is closed only by its owner.
 */

#define CHLDWAKE_MAX 512

/* A slot for this tracer: its index (0..), *fd its eventfd to poll; or -1. */
int chldwake_open(int *fd);

/* Give the slot back (-1: nothing). */
void chldwake_close(int slot);

/* Mark the slot waiting for a stop (on) or not. */
void chldwake_waiting(int slot, int on);

/* This tracer (slot, or -1) read a SIGCHLD: wake every other waiting one. */
void chldwake_broadcast(int slot);

/* Empty the slot's eventfd after a wake-up. */
void chldwake_drain(int fd);

#endif
