#ifndef CPROF_PROFILE_H
#define CPROF_PROFILE_H
/*
 * profile — a profile in memory, shaped like pprof's profile.proto but
 * knowing nothing of protobuf, ptrace or ELF.
 *
 * Invariants:
 *  - strings are interned: each distinct string is stored once and named by
 *    its index in the string table; index 0 is always "";
 *  - mappings, functions and locations have 1-based ids, dense and in
 *    insertion order (id i is element i-1 of the array returned by the
 *    accessors); id 0 means "none";
 *  - functions are interned by (name, system_name, filename, start_line);
 *    locations by (mapping_id, address, lines) — interning the same key
 *    twice returns the same id;
 *  - samples are merged: adding a sample whose location list and label set
 *    equal an existing sample's adds the values element-wise; label order
 *    does not matter for equality;
 *  - the sample types are fixed before the first sample; every sample has
 *    exactly profile_nvalues() values;
 *  - every table has a hard cap (PROFILE_MAX_*); an add past it fails, is
 *    counted in profile_dropped(), and leaves the profile valid.
 *
 * The profile is not thread-safe: one thread builds it.
 */
#include <stddef.h>
#include <stdint.h>

#define PROFILE_MAX_VALUES 8           /* sample types */
#define PROFILE_MAX_STACK 1024         /* locations in one sample */
#define PROFILE_MAX_LABELS 16          /* labels on one sample */
#define PROFILE_MAX_STRINGS (1u << 22)
#define PROFILE_MAX_MAPPINGS (1u << 16)
#define PROFILE_MAX_FUNCTIONS (1u << 22)
#define PROFILE_MAX_LOCATIONS (1u << 22)
#define PROFILE_MAX_SAMPLES (1u << 22)
#define PROFILE_MAX_COMMENTS 64

/* The mapping that holds kernel frames, named as perf names it (pprof -focus/-ignore reach it). */
#define PROFILE_KERNEL_MAPPING "[kernel.kallsyms]"

struct profile;

/* A label as the caller supplies it: key with either str or num. */
struct profile_label_in {
	const char *key;
	const char *str;      /* string value, or NULL for a numeric label */
	int64_t num;          /* numeric value when str is NULL */
	const char *num_unit; /* unit of num, or NULL */
};

/* What a mapping is, as the caller supplies it. */
struct profile_mapping_in {
	uint64_t start, limit, offset;
	const char *filename;  /* NULL or "" when unknown */
	const char *build_id;  /* hex string, NULL or "" when unknown */
	int has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

/* One line of a location: a function and a source line (0 if unknown). */
struct profile_line {
	uint64_t function_id;
	int64_t line;
};

/* The stored forms, read by writers. Strings are string-table indices. */
struct profile_value_type {
	int64_t type, unit;
};

struct profile_mapping {
	uint64_t id, start, limit, offset;
	int64_t filename, build_id;
	int has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct profile_function {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
};

struct profile_location {
	uint64_t id, mapping_id, address;
	const struct profile_line *lines;
	size_t nlines;
	/* address - the start of its (outermost) function, for the text forms'
	 * "function+0xOFF"; -1 when unknown. Not part of profile.proto. */
	int64_t symbol_offset;
};

struct profile_label {
	int64_t key, str, num, num_unit;
};

struct profile_sample {
	const uint64_t *location_ids; /* leaf first */
	size_t nlocations;
	const int64_t *values;        /* profile_nvalues() of them */
	const struct profile_label *labels;
	size_t nlabels;
};

/*
 * Multiply value vi of every sample by factor(ctx, sample), rounded; for
 * a sampler whose totals are measured only after its samples were added
 * (the perf source scales each thread's samples to its CPU clock).
 * Merged samples stay merged: the factor sees the labels a key is made of.
 */
void profile_scale_values(struct profile *p, size_t vi,
			  double (*factor)(void *ctx, const struct profile_sample *s), void *ctx);

/*
 * Create an empty profile; NULL when out of memory. A profile is a heap
 * object (its layout is private to model/): profile_new() and
 * profile_free() are a deliberate pair, as is pprof_read() (writer/pprof.h)
 * with profile_free().
 */
struct profile *profile_new(void);

/* Free a profile and everything it holds; NULL is fine. */
void profile_free(struct profile *p);

/* Intern a string; returns its index (>= 0), or -1 when the table is full. */
int64_t profile_intern_string(struct profile *p, const char *s);

/* Append a sample type; returns its index or -1 (too many, or samples exist). */
int profile_add_sample_type(struct profile *p, const char *type, const char *unit);

/* Set period_type and period. */
int profile_set_period(struct profile *p, const char *type, const char *unit, int64_t period);

/* Set time_nanos (collection start, since the epoch) and duration_nanos. */
void profile_set_time(struct profile *p, int64_t time_nanos, int64_t duration_nanos);

/* Set default_sample_type by the name of one of the sample types. */
int profile_set_default_sample_type(struct profile *p, const char *type);

/* Add a free-form comment line; 0 or -1. */
int profile_add_comment(struct profile *p, const char *text);

/* Add a mapping; returns its id, or 0 when the table is full. */
uint64_t profile_add_mapping(struct profile *p, const struct profile_mapping_in *m);

/* Change the symbolization flags of an existing mapping; 0 or -1. */
int profile_mapping_set_flags(struct profile *p, uint64_t id, int has_functions,
			      int has_filenames, int has_line_numbers, int has_inline_frames);

/* Intern a function; returns its id, or 0 on failure. */
uint64_t profile_intern_function(struct profile *p, const char *name, const char *system_name,
				 const char *filename, int64_t start_line);

/*
 * Intern a location at address in mapping_id (0: no mapping) with nlines
 * lines (inlined callees first, the caller last; nlines may be 0 for an
 * unsymbolized address). Returns its id, or 0 on failure.
 */
uint64_t profile_intern_location(struct profile *p, uint64_t mapping_id, uint64_t address,
				 const struct profile_line *lines, size_t nlines);

/*
 * Replace the lines of location id (a symbolizer that learnt more after
 * the capture: source lines, inlined frames). Same order as for
 * profile_intern_location(); every function id must exist. The location
 * keeps its id, so samples need no change; a later intern of the new key
 * finds it. 0 or -1 (unknown id, bad lines, memory).
 */
int profile_location_set_lines(struct profile *p, uint64_t id, const struct profile_line *lines,
			       size_t nlines);

/* Record how far into its function a location's address is. 0 or -1. */
int profile_location_set_offset(struct profile *p, uint64_t id, int64_t offset);

/*
 * Add a sample: nloc location ids (leaf first), profile_nvalues() values
 * and nlabels labels. Merges with an equal existing sample. 0 or -1.
 */
int profile_add_sample(struct profile *p, const uint64_t *location_ids, size_t nloc,
		       const int64_t *values, const struct profile_label_in *labels,
		       size_t nlabels);

/*
 * The labels cprof gives samples itself, in this order: "thread", "tid",
 * "state", "syscall", "pid", "process", "waker" (and "waker_tid", which
 * goes with it) (attach/source's LABEL_* bits are 1 << index). A program's label with one of these keys is dropped (the
 * CPU settling finds samples by "tid"), and the writers tell them from
 * the program's own. The index of key, or -1.
 */
#define PROFILE_OWN_LABELS 7
int profile_own_label(const char *key);

/* Read access for writers. Arrays stay valid until the next add. */
size_t profile_nstrings(const struct profile *p);
const char *profile_string(const struct profile *p, int64_t index); /* "" if out of range */
size_t profile_nvalues(const struct profile *p);
const struct profile_value_type *profile_sample_types(const struct profile *p);
struct profile_value_type profile_period_type(const struct profile *p);
int64_t profile_period(const struct profile *p);
int64_t profile_time_nanos(const struct profile *p);
int64_t profile_duration_nanos(const struct profile *p);
int64_t profile_default_sample_type(const struct profile *p); /* string index, 0 if unset */
const int64_t *profile_comments(const struct profile *p, size_t *n);
const struct profile_mapping *profile_mappings(const struct profile *p, size_t *n);
const struct profile_function *profile_functions(const struct profile *p, size_t *n);
const struct profile_location *profile_locations(const struct profile *p, size_t *n);
const struct profile_sample *profile_samples(const struct profile *p, size_t *n);

/* Lookups by id; NULL when the id is 0 or unknown. */
const struct profile_mapping *profile_mapping(const struct profile *p, uint64_t id);
const struct profile_function *profile_function(const struct profile *p, uint64_t id);
const struct profile_location *profile_location(const struct profile *p, uint64_t id);

/* How many adds failed because a cap was reached or memory ran out. */
uint64_t profile_dropped(const struct profile *p);

#endif
