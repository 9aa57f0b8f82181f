#ifndef CPROF_FUNCSTART_H
#define CPROF_FUNCSTART_H
/*
 * funcstart — where the function holding an address starts, from the
 * object's call frame information rather than its symbols: every FDE of
 * .eh_frame (or .debug_frame) covers one function, so stripped code keeps
 * its function structure and can be named "module+0xOFF" by its start.
 *
 * Invariants:
 *  - the tables are read through struct space (the object's file, never
 *    the live target): .eh_frame_hdr's sorted table when the object has
 *    one, else cprof's own table over .eh_frame or .debug_frame
 *    (space_cfi());
 *  - an FDE's own range is checked where its encoding is the one every
 *    toolchain emits (pc-relative 4-byte pointers): an address in a gap
 *    between functions has no start;
 *  - the search is a bounded binary search: a hostile count cannot make it
 *    read outside the table or loop.
 */
#include <stdint.h>

struct space;
struct space_obj;

/*
 * The runtime start address of the function holding runtime address addr
 * in obj, by its FDE. 0 with *start set, or -1 when no FDE covers addr.
 */
int funcstart_find(struct space *s, struct space_obj *obj, uint64_t addr, uint64_t *start);

#endif
