/*
 * ring.c — records out of a perf ring buffer (ring.h): the walk from tail
 * to head, the copy of a record that wraps, and the parsers of the few
 * record types the perf source reads. A cursor over one record's bytes
 * checks every read against what remains; nothing here trusts a length
 * it has not checked.
 */
#include <string.h>

#include "attach/perf/ring.h"

#define MISC_COMM_EXEC (1u << 13) /* PERF_RECORD_MISC_COMM_EXEC */
#define MISC_SWITCH_OUT (1u << 13) /* PERF_RECORD_MISC_SWITCH_OUT */
#define MISC_SWITCH_PREEMPT (1u << 14) /* PERF_RECORD_MISC_SWITCH_OUT_PREEMPT */

/* linux/perf_event.h's x86_64 register numbers (asm/perf_regs.h). */
enum {
	XR_AX, XR_BX, XR_CX, XR_DX, XR_SI, XR_DI, XR_BP, XR_SP, XR_IP, XR_FLAGS, XR_CS,
	XR_SS, XR_DS, XR_ES, XR_FS, XR_GS, XR_R8, XR_R9, XR_R10, XR_R11, XR_R12, XR_R13,
	XR_R14, XR_R15, XR_COUNT
};

/* For each perf register, its DWARF number, or -1 when the unwinder has no use for it. */
static const int8_t dwarf_of[XR_COUNT] = {
	[XR_AX] = 0, [XR_DX] = 1, [XR_CX] = 2, [XR_BX] = 3, [XR_SI] = 4, [XR_DI] = 5,
	[XR_BP] = 6, [XR_SP] = 7, [XR_R8] = 8, [XR_R9] = 9, [XR_R10] = 10, [XR_R11] = 11,
	[XR_R12] = 12, [XR_R13] = 13, [XR_R14] = 14, [XR_R15] = 15, [XR_IP] = 16,
	[XR_FLAGS] = -1, [XR_CS] = -1, [XR_SS] = -1, [XR_DS] = -1, [XR_ES] = -1,
	[XR_FS] = -1, [XR_GS] = -1,
};

#define LAYOUT_KNOWN                                                                       \
	(PERF_LAYOUT_TID | PERF_LAYOUT_TIME | PERF_LAYOUT_CPU | PERF_LAYOUT_PERIOD |       \
	 PERF_LAYOUT_CALLCHAIN | PERF_LAYOUT_RAW | PERF_LAYOUT_REGS_USER |                \
	 PERF_LAYOUT_STACK_USER)

/* A cursor over one record's bytes. */
struct cursor {
	const unsigned char *p;
	size_t left;
};

static int take(struct cursor *c, void *out, size_t n)
{
	if (n > c->left)
		return -1;
	memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return 0;
}

static int take_u64(struct cursor *c, uint64_t *v)
{
	return take(c, v, sizeof(*v));
}

int ring_layout_valid(const struct perf_layout *l)
{
	if (l->sample_type & ~(uint64_t)LAYOUT_KNOWN)
		return 0;
	return __builtin_popcountll(l->regs_mask) <= PERF_MAX_REGS;
}

/* Copy n bytes at ring offset pos (which may wrap) into out. */
static void ring_copy(const struct perf_ring *r, uint64_t pos, void *out, size_t n)
{
	uint64_t off = pos & (r->size - 1);
	size_t first = n;

	if (off + n > r->size)
		first = (size_t)(r->size - off);
	memcpy(out, r->data + off, first);
	memcpy((unsigned char *)out + first, r->data, n - first);
}

int ring_next(struct perf_ring *r, uint64_t head, const unsigned char **rec, size_t *len)
{
	unsigned char hdr[8];
	uint64_t avail = head - r->tail, off;
	uint16_t size;

	if (head == r->tail)
		return 0;
	/*
	 * The head is the kernel's, read from shared memory: more than a
	 * ring's worth ahead (or behind, which wraps to huge) is not a state
	 * the kernel leaves, nor is a partial header.
	 */
	if (r->size < 8 || (r->size & (r->size - 1)) || avail > r->size || avail < sizeof(hdr))
		goto corrupt;
	ring_copy(r, r->tail, hdr, sizeof(hdr));
	memcpy(&size, hdr + 6, sizeof(size));
	if (size < sizeof(hdr) || size > avail)
		goto corrupt;
	off = r->tail & (r->size - 1);
	if (off + size <= r->size) {
		*rec = r->data + off;
	} else {
		if (!r->scratch)
			goto corrupt;
		ring_copy(r, r->tail, r->scratch, size);
		*rec = r->scratch;
	}
	*len = size;
	r->tail += size;
	return 1;
corrupt:
	r->corrupt++;
	r->tail = head;
	return -1;
}

int ring_record_time(const struct perf_layout *l, const unsigned char *rec, size_t len,
		     uint64_t *time)
{
	size_t trailer = 0, at;

	if (!(l->sample_type & PERF_LAYOUT_TIME))
		return -1;
	/* sample_id's order: TID, TIME, (ID, STREAM_ID,) CPU. */
	trailer += (l->sample_type & PERF_LAYOUT_TID) ? 8 : 0;
	at = trailer;
	trailer += 8;
	trailer += (l->sample_type & PERF_LAYOUT_CPU) ? 8 : 0;
	if (len < 8 + trailer)
		return -1;
	memcpy(time, rec + len - trailer + at, sizeof(*time));
	return 0;
}

uint32_t ring_record_type(const unsigned char *rec, size_t len)
{
	uint32_t type;

	if (len < 8)
		return 0;
	memcpy(&type, rec, sizeof(type));
	return type;
}

int ring_parse_sample(const struct perf_layout *l, const unsigned char *rec, size_t len,
		      struct perf_sample *s)
{
	struct cursor c = { rec, len };
	uint64_t v, size;
	unsigned i, n;
	uint32_t two[2];

	memset(s, 0, sizeof(*s));
	if (!ring_layout_valid(l) || len < 8 || ring_record_type(rec, len) != PERF_REC_SAMPLE)
		return -1;
	c.p += 8;
	c.left -= 8;
	if (l->sample_type & PERF_LAYOUT_TID) {
		if (take(&c, two, sizeof(two)) < 0)
			return -1;
		s->pid = two[0];
		s->tid = two[1];
	}
	if ((l->sample_type & PERF_LAYOUT_TIME) && take_u64(&c, &s->time) < 0)
		return -1;
	if (l->sample_type & PERF_LAYOUT_CPU) {
		if (take(&c, two, sizeof(two)) < 0)
			return -1;
		s->cpu = two[0];
	}
	if ((l->sample_type & PERF_LAYOUT_PERIOD) && take_u64(&c, &s->period) < 0)
		return -1;
	if (l->sample_type & PERF_LAYOUT_CALLCHAIN) {
		/* nr, then nr addresses (and context markers): unaligned, read with memcpy. */
		if (take_u64(&c, &v) < 0 || v > c.left / 8)
			return -1;
		s->chain = v ? c.p : NULL;
		s->nchain = v < PERF_CHAIN_MAX ? v : PERF_CHAIN_MAX;
		c.p += v * 8;
		c.left -= v * 8;
	}
	if (l->sample_type & PERF_LAYOUT_RAW) {
		uint32_t raw;

		/* A u32 size, then the bytes (padded by the kernel to a multiple of 8 with the size). */
		if (take(&c, &raw, sizeof(raw)) < 0 || raw > c.left || raw > PERF_RAW_MAX)
			return -1;
		s->raw = raw ? c.p : NULL;
		s->raw_len = raw;
		c.p += raw;
		c.left -= raw;
	}
	if (l->sample_type & PERF_LAYOUT_REGS_USER) {
		if (take_u64(&c, &s->abi) < 0)
			return -1;
		if (s->abi) {
			n = (unsigned)__builtin_popcountll(l->regs_mask);
			for (i = 0; i < n; i++)
				if (take_u64(&c, &s->regs[i]) < 0)
					return -1;
			s->nregs = n;
		}
	}
	if (l->sample_type & PERF_LAYOUT_STACK_USER) {
		if (take_u64(&c, &size) < 0)
			return -1;
		if (size) {
			/* size bytes, then the dynamic size: how many of them are valid. */
			if (size > c.left || c.left - size < sizeof(v))
				return -1;
			s->stack = c.p;
			c.p += size;
			c.left -= size;
			take_u64(&c, &v);
			if (v > size)
				return -1;
			s->stack_len = v;
			if (!v)
				s->stack = NULL;
		}
	}
	return 0;
}

int ring_parse_switch(const struct perf_layout *l, const unsigned char *rec, size_t len,
		      struct perf_switch *sw)
{
	uint32_t two[2];
	uint16_t misc;

	memset(sw, 0, sizeof(*sw));
	if (ring_record_type(rec, len) != PERF_REC_SWITCH || !(l->sample_type & PERF_LAYOUT_TID) ||
	    ring_record_time(l, rec, len, &sw->time) < 0)
		return -1;
	/* The record has no body: its sample_id (TID, TIME, ...) follows the header. */
	if (len < 8 + sizeof(two))
		return -1;
	memcpy(two, rec + 8, sizeof(two));
	sw->pid = two[0];
	sw->tid = two[1];
	memcpy(&misc, rec + 4, sizeof(misc));
	sw->out = !!(misc & MISC_SWITCH_OUT);
	sw->preempt = sw->out && (misc & MISC_SWITCH_PREEMPT);
	return 0;
}

int ring_parse_lost(const unsigned char *rec, size_t len, uint64_t *lost)
{
	struct cursor c = { rec, len };
	uint64_t id;

	if (ring_record_type(rec, len) != PERF_REC_LOST)
		return -1;
	c.p += 8;
	c.left -= 8;
	if (take_u64(&c, &id) < 0 || take_u64(&c, lost) < 0)
		return -1;
	return 0;
}

int ring_parse_comm(const unsigned char *rec, size_t len, uint32_t *pid, uint32_t *tid,
		    char name[16], int *exec)
{
	struct cursor c = { rec, len };
	uint32_t two[2];
	uint16_t misc;
	size_t i;

	if (ring_record_type(rec, len) != PERF_REC_COMM)
		return -1;
	memcpy(&misc, rec + 4, sizeof(misc));
	c.p += 8;
	c.left -= 8;
	if (take(&c, two, sizeof(two)) < 0)
		return -1;
	*pid = two[0];
	*tid = two[1];
	/* The name runs to a NUL, or to the record's end: never past it. */
	for (i = 0; i < 15 && i < c.left && c.p[i]; i++)
		name[i] = (char)c.p[i];
	name[i] = 0;
	*exec = !!(misc & MISC_COMM_EXEC);
	return 0;
}

int ring_sample_image(const struct perf_sample *s, uint64_t mask, struct thread_image *img)
{
	unsigned bit, i = 0;

	memset(img, 0, sizeof(*img));
	if (!s->abi || s->nregs != (unsigned)__builtin_popcountll(mask))
		return -1;
	for (bit = 0; bit < 64 && i < s->nregs; bit++) {
		if (!(mask & (1ull << bit)))
			continue;
		if (bit < XR_COUNT && dwarf_of[bit] >= 0) {
			img->regs.r[dwarf_of[bit]] = s->regs[i];
			img->regs.valid |= 1u << dwarf_of[bit];
		}
		i++;
	}
	if (!(img->regs.valid & (1u << DWARF_RSP)) || !(img->regs.valid & (1u << DWARF_RIP)))
		return -1;
	if (s->stack && s->stack_len) {
		img->nstacks = 1;
		img->stack[0].addr = img->regs.r[DWARF_RSP];
		img->stack[0].len = (size_t)s->stack_len;
		img->stack[0].bytes = s->stack;
	}
	return 0;
}
