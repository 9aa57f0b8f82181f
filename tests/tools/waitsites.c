/*
 * waitsites — the block and mutex numbers of a running process's
 * libcprof.so segment, per site, read through cprof-attach's own reader
 * (attach/source/segread.c), so that the shim's accuracy can be checked against
 * a target's own measurements without the attacher's block and mutex
 * writers. A bucket's site is its innermost frame in the main executable
 * that is not the C++ standard library's (so a wait inside libstdc++'s
 * condition_variable::wait, or an instantiation of one of its templates
 * in the program, is charged to the program function that called it),
 * named from the executable's symbol table.
 *
 * Usage: waitsites PID
 * Prints
 *   header BLOCK_RATE MUTEX_FRACTION UNTRACKED TORN INVALID
 *   block SITE EVENTS CONTENTIONS DELAY_NS     (estimates, summed per site)
 *   mutex SITE EVENTS CONTENTIONS DELAY_NS
 * Exit 0, or 1 with a message (no segment, unreadable, another layout).
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/source/segread.h"

struct sym {
	uint64_t lo, hi;
	char *name;
};

struct site {
	uint32_t kind;
	char *name;
	uint64_t events;
	double contentions, delay;
};

static struct sym *syms;
static size_t nsyms;

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The executable's functions (file addresses), from .symtab or .dynsym. */
static int load_syms(const char *path)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *e;
	int fd, pass;

	elf_version(EV_CURRENT);
	if ((fd = open(path, O_RDONLY)) < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)))
		return -1;
	for (pass = 0; pass < 2 && nsyms == 0; pass++) {
		while ((scn = elf_nextscn(e, scn)) != NULL) {
			Elf_Data *d;
			size_t i, n;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || sh.sh_entsize == 0)
				continue;
			d = elf_getdata(scn, NULL);
			n = sh.sh_size / sh.sh_entsize;
			syms = realloc(syms, (nsyms + n) * sizeof(*syms));
			for (i = 0; d && i < n; i++) {
				GElf_Sym s;
				const char *name;

				if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    s.st_value == 0 || s.st_size == 0 ||
				    !(name = elf_strptr(e, sh.sh_link, s.st_name)))
					continue;
				syms[nsyms++] = (struct sym){ s.st_value, s.st_value + s.st_size,
							      strdup(name) };
			}
		}
	}
	elf_end(e);
	close(fd);
	qsort(syms, nsyms, sizeof(*syms), sym_cmp);
	return 0;
}

static const char *sym_at(uint64_t a)
{
	size_t lo = 0, hi = nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a < syms[mid].lo)
			hi = mid;
		else if (a >= syms[mid].hi)
			lo = mid + 1;
		else
			return syms[mid].name;
	}
	return NULL;
}

/* The executable's load bias: where its offset-0 mapping starts (PIE), or 0. */
static uint64_t exe_bias(int pid, const char *exe, int pie)
{
	char p[64], line[PATH_MAX + 128], path[PATH_MAX];
	unsigned long long lo, hi, off;
	uint64_t bias = 0;
	FILE *f;

	if (!pie)
		return 0;
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	if (!(f = fopen(p, "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi, &off, path) >= 3 &&
		    off == 0 && strcmp(path, exe) == 0) {
			bias = lo;
			break;
		}
	}
	fclose(f);
	return bias;
}

static int is_pie(const char *path)
{
	unsigned char h[18];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, h, sizeof(h)) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof(h) && h[16] == 3; /* ET_DYN */
}

int main(int argc, char **argv)
{
	char exe[PATH_MAX], link[64], why[256];
	struct site *sites = NULL;
	size_t nsites = 0, i, j, k;
	struct seg_copy c;
	uint64_t addr, len, bias;
	ssize_t n;
	int pid;

	if (argc != 2 || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: waitsites PID\n");
		return 2;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	if ((n = readlink(link, exe, sizeof(exe) - 1)) <= 0) {
		perror("waitsites: readlink");
		return 1;
	}
	exe[n] = 0;
	if (load_syms(link) != 0) {
		fprintf(stderr, "waitsites: cannot read the symbols of %s\n", exe);
		return 1;
	}
	bias = exe_bias(pid, exe, is_pie(link));
	if (segment_find(pid, &addr, &len) != 1) {
		fprintf(stderr, "waitsites: no libcprof.so segment in %d\n", pid);
		return 1;
	}
	if (segment_copy(&c, segment_read_process, (void *)(intptr_t)pid, addr, len, why,
			 sizeof(why)) != 0) {
		fprintf(stderr, "waitsites: %s\n", why);
		return 1;
	}
	printf("header %llu %llu %llu %zu %zu\n", (unsigned long long)c.h.block_rate,
	       (unsigned long long)c.h.mutex_fraction, (unsigned long long)c.h.waits_untracked,
	       c.torn, c.invalid);
	for (i = 0; i < c.n; i++) {
		const struct seg_bucket *b = &c.b[i];
		const char *name = NULL;
		struct segment_wait v;

		if (b->kind != SEG_KIND_BLOCK && b->kind != SEG_KIND_MUTEX)
			continue;
		for (j = 0; j < b->nframes && !name; j++) {
			name = b->frames[j] ? sym_at(b->frames[j] - 1 - bias) : NULL;
			if (name && (!strncmp(name, "_ZNSt", 5) || !strncmp(name, "_ZSt", 4) ||
				     !strncmp(name, "_ZNKSt", 6)))
				name = NULL; /* std::, look further out */
		}
		if (!name)
			name = "?";
		segment_wait_values(b, NULL, &v);
		for (k = 0; k < nsites; k++)
			if (sites[k].kind == b->kind && strcmp(sites[k].name, name) == 0)
				break;
		if (k == nsites) {
			sites = realloc(sites, (nsites + 1) * sizeof(*sites));
			sites[nsites++] = (struct site){ b->kind, strdup(name), 0, 0, 0 };
		}
		sites[k].events += v.events;
		sites[k].contentions += v.contentions;
		sites[k].delay += v.delay_ns;
	}
	for (k = 0; k < nsites; k++) {
		printf("%s %s %llu %.0f %.0f\n", segment_kind_name(sites[k].kind), sites[k].name,
		       (unsigned long long)sites[k].events, sites[k].contentions, sites[k].delay);
		free(sites[k].name);
	}
	free(sites);
	for (k = 0; k < nsyms; k++)
		free(syms[k].name);
	free(syms);
	segment_release(&c);
	return 0;
}
