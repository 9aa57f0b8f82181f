/*
 * views.c — the segment-based profile types' views (views.h). Values are
 * the shim's unbiased estimates, rounded; the legacy text form gets the
 * raw sample counts instead (raw), because pprof scales those itself.
 */
#include <math.h>

#include "attach/source/segread.h"
#include "attach/source/views.h"

static int64_t round_est(double v)
{
	if (!(v > -9e18 && v < 9e18))
		return 0; /* NaN or absurd: untrusted input */
	return (int64_t)llround(v);
}

/* alloc_objects, alloc_space, inuse_objects, inuse_space. */
static int heap_values(const struct seg_bucket *b, const struct seg_bucket *base, int raw,
		       int64_t *v)
{
	double ao, ab, fo, fb;

	if (raw) {
		ao = (double)b->alloc_samples - (base ? (double)base->alloc_samples : 0);
		ab = (double)b->alloc_sampled_bytes - (base ? (double)base->alloc_sampled_bytes : 0);
		fo = (double)b->free_samples - (base ? (double)base->free_samples : 0);
		fb = (double)b->free_sampled_bytes - (base ? (double)base->free_sampled_bytes : 0);
	} else {
		ao = b->alloc_objects - (base ? base->alloc_objects : 0);
		ab = b->alloc_bytes - (base ? base->alloc_bytes : 0);
		fo = b->free_objects - (base ? base->free_objects : 0);
		fb = b->free_bytes - (base ? base->free_bytes : 0);
	}
	v[0] = round_est(ao);
	v[1] = round_est(ab);
	v[2] = round_est(ao - fo);
	v[3] = round_est(ab - fb);
	return v[0] || v[1] || v[2] || v[3];
}

static int64_t heap_period(const struct seg_header *h)
{
	return (int64_t)h->sample_rate;
}

const struct shim_view view_heap = {
	.bucket = SEG_KIND_ALLOC,
	.window = "allocated",
	.bytes_label = 1,
	.off_warning = 1,
	.values = heap_values,
	.period = heap_period,
};

/* Every thread creation is recorded: the count is exact. */
static int thread_values(const struct seg_bucket *b, const struct seg_bucket *base, int raw,
			 int64_t *v)
{
	(void)raw;
	v[0] = (int64_t)(b->alloc_samples - (base ? base->alloc_samples : 0));
	return v[0] != 0;
}

static int64_t count_period(const struct seg_header *h)
{
	(void)h;
	return 1;
}

const struct shim_view view_threads = {
	.bucket = SEG_KIND_THREAD,
	.window = "created",
	.values = thread_values,
	.period = count_period,
};

/*
 * contentions/count and delay/nanoseconds, the shim's unbiased estimates
 * (each recorded wait carries its own weight); the legacy text form gets
 * them too, since it says no sampling period for pprof to apply.
 */
static int wait_values(const struct seg_bucket *b, const struct seg_bucket *base, int raw,
		       int64_t *v)
{
	struct segment_wait w;

	(void)raw;
	segment_wait_values(b, base, &w);
	v[0] = round_est(w.contentions);
	v[1] = round_est(w.delay_ns);
	return v[0] || v[1];
}

static int block_enabled(const struct seg_header *h, char *why, size_t cap)
{
	return segment_wait_enabled(h, SEG_KIND_BLOCK, why, cap);
}

static int mutex_enabled(const struct seg_header *h, char *why, size_t cap)
{
	return segment_wait_enabled(h, SEG_KIND_MUTEX, why, cap);
}

const struct shim_view view_block = {
	.bucket = SEG_KIND_BLOCK,
	.window = "waited",
	.values = wait_values,
	.period = count_period,
	.enabled = block_enabled,
};

const struct shim_view view_mutex = {
	.bucket = SEG_KIND_MUTEX,
	.window = "waited",
	.values = wait_values,
	.period = count_period,
	.enabled = mutex_enabled,
};
