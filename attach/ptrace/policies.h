#ifndef CPROF_POLICIES_H
#define CPROF_POLICIES_H
/*
 * policies — the ptrace-based profile types' rows (sampler.h's struct
 * policy): which threads a tick samples and what a sample weighs. The
 * kinds table names one per ptrace kind.
 *
 * Invariants:
 *  - cpu: only threads whose CPU clock moved are sampled, weighted by the
 *    CPU they used since their last sample; a stop that finds the thread
 *    asleep gives that CPU to where it was last found running
 *    (doc/how-it-works.md: "A CPU sample stands for CPU used where the
 *    thread ran"); a tick that finds the thread count changed reads the
 *    list first (POLICY_EAGER),
 *    so short-lived threads alive at it are sampled; at the end, a thread
 *    never found running has its CPU under one marker frame, and the
 *    process clock's CPU beyond all the samples goes to one "[short-lived
 *    threads]" marker (tid 0), which the source may spread over the
 *    samples of threads that ended (source/settle.h);
 *  - wall: every thread at every tick, weighted by elapsed time; a thread
 *    whose clock has not moved is where it was, and its ticks are added up
 *    and given to its last stack in one sample;
 *  - once: every thread once, weight 1.
 */
#include "attach/ptrace/sampler.h"

extern const struct policy policy_cpu;
extern const struct policy policy_wall;
extern const struct policy policy_once;

#endif
