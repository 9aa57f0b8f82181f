/*
 * symtab.c — an ELF file's function symbols, sorted for lookup. It owns
 * reading symbol sections through libelf and everything after: filtering,
 * ranking aliases, cutting version suffixes, and the search. It was the
 * second half of elfimg.c, which keeps the file itself (mapping, program
 * headers, notes, sections, the unwinder's byte reads) and decides when
 * the table is built; the two share nothing but the Elf handle. The
 * starts live in a dense array of their own beside the details, so the
 * binary search touches only addresses; a lookup is O(log n) plus a short
 * bounded walk back for nested functions, guided by a running maximum of
 * the ends so that the walk stops as soon as nothing earlier can contain
 * the address.
 */
#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "unwind/symtab.h"

/* Details of the symbol at starts[i]. */
struct symtab_sym {
	uint64_t end;    /* start+size; for a size-0 symbol the next start, within its section */
	uint64_t maxend; /* the largest end of a sized symbol among 0..i */
	const char *name;
	int sized;
};

/* A candidate symbol while loading. */
struct symtab_cand {
	uint64_t start, end;
	const char *name;
	size_t namelen;
	int sized, notype, rank, under;
};

void symtab_init(struct symtab *t)
{
	t->starts = NULL;
	t->syms = NULL;
	t->names = NULL;
	t->n = 0;
	t->capped = 0;
}

void symtab_release(struct symtab *t)
{
	free(t->starts);
	free(t->syms);
	free(t->names);
	symtab_init(t);
}

static int symtab_rank(unsigned bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : bind == STB_LOCAL ? 2 : 3;
}

/* Order by address, then the alias we prefer first. */
static int symtab_cand_cmp(const void *a, const void *b)
{
	const struct symtab_cand *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->notype != y->notype)
		return x->notype - y->notype;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	if (x->under != y->under)
		return x->under - y->under;
	if (x->namelen != y->namelen)
		return x->namelen < y->namelen ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The end of the allocated section shndx if it holds addr, else addr. */
static uint64_t symtab_section_end(Elf *elf, size_t shndx, uint64_t addr)
{
	Elf_Scn *scn = elf_getscn(elf, shndx);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || addr < sh.sh_addr ||
	    addr - sh.sh_addr >= sh.sh_size)
		return addr;
	return sh.sh_addr + sh.sh_size;
}

/*
 * A symbol without a type counts when it labels code: defined in a
 * section of instructions, named as a person would (no "$x"/"$d" mapping
 * symbol, no ".L" local label). Hand-written assembly (x86inc's SIMD
 * kernels) declares its functions so: global, no type, no size.
 */
static int symtab_code_label(Elf *elf, const GElf_Sym *s, const char *name)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (GELF_ST_TYPE(s->st_info) != STT_NOTYPE || s->st_shndx >= SHN_LORESERVE ||
	    !name[0] || name[0] == '$' || name[0] == '.')
		return 0;
	scn = elf_getscn(elf, s->st_shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
	       (sh.sh_flags & SHF_ALLOC);
}

/*
 * Collect the function symbols of the symbol table scn into *out (grown as
 * needed, at most SYMTAB_MAX_SYMBOLS). Returns how many, or -1 on no memory.
 */
static long symtab_collect(Elf *elf, Elf_Scn *scn, struct symtab_cand **out, int *capped)
{
	struct symtab_cand *v = NULL, *t;
	Elf_Data *sd, *strd;
	Elf_Scn *strscn;
	GElf_Shdr sh, strsh;
	GElf_Sym s;
	const char *strs;
	size_t strsz, nsym, i, n = 0, cap = 0, j;

	if (!gelf_getshdr(scn, &sh) || sh.sh_entsize != sizeof(Elf64_Sym))
		return 0;
	strscn = elf_getscn(elf, sh.sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB)
		return 0;
	sd = elf_getdata(scn, NULL);
	strd = elf_getdata(strscn, NULL);
	if (!sd || !strd || !sd->d_buf || !strd->d_buf || sd->d_type != ELF_T_SYM)
		return 0;
	strs = strd->d_buf;
	/* Names must end in a NUL inside the table: cut at its last NUL once. */
	strsz = strd->d_size;
	while (strsz > 0 && strs[strsz - 1] != 0)
		strsz--;
	nsym = sd->d_size / sizeof(Elf64_Sym);
	for (i = 0; i < nsym; i++) {
		unsigned type;

		if (!gelf_getsym(sd, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || s.st_value == 0 || s.st_name >= strsz ||
		    s.st_size > UINT64_MAX - s.st_value)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    !symtab_code_label(elf, &s, strs + s.st_name))
			continue;
		if (n == SYMTAB_MAX_SYMBOLS) {
			*capped = 1;
			break;
		}
		t = array_grow(v, &cap, n + 1, sizeof(*v), SYMTAB_MAX_SYMBOLS);
		if (!t)
			goto err;
		v = t;
		t = &v[n++];
		t->start = s.st_value;
		t->name = strs + s.st_name;
		t->namelen = strnlen(t->name, SYMTAB_MAX_NAME + 1);
		if (t->namelen > SYMTAB_MAX_NAME) {
			n--;
			continue;
		}
		t->rank = symtab_rank(GELF_ST_BIND(s.st_info));
		t->notype = type == STT_NOTYPE;
		for (j = 0; t->name[j] == '_'; j++)
			;
		t->under = j > 255 ? 255 : (int)j;
		t->sized = s.st_size != 0;
		t->end = t->start + s.st_size;
		if (!t->sized && s.st_shndx < SHN_LORESERVE)
			t->end = symtab_section_end(elf, s.st_shndx, t->start);
	}
	*out = v;
	return (long)n;
err:
	free(v);
	return -1;
}

/*
 * Shared objects' .symtab names versioned definitions "name@@VERSION";
 * people know the function as "name". Copy the cut names into one block
 * (a failed allocation keeps the versioned names, which are still right).
 */
static void symtab_unversion(struct symtab *tab)
{
	size_t i, len, total = 0;
	const char *at;
	char *p;

	for (i = 0; i < tab->n; i++)
		if ((at = strchr(tab->syms[i].name, '@')) && at != tab->syms[i].name)
			total += (size_t)(at - tab->syms[i].name) + 1;
	if (!total || total > SYMTAB_MAX_COPIES || !(tab->names = malloc(total)))
		return;
	p = tab->names;
	for (i = 0; i < tab->n; i++) {
		at = strchr(tab->syms[i].name, '@');
		if (!at || at == tab->syms[i].name)
			continue;
		len = (size_t)(at - tab->syms[i].name);
		memcpy(p, tab->syms[i].name, len);
		p[len] = 0;
		tab->syms[i].name = p;
		p += len + 1;
	}
}

/* Sort, merge aliases and build the lookup arrays. */
static int symtab_index(struct symtab *tab, struct symtab_cand *v, size_t n)
{
	size_t i, j, k = 0;
	uint64_t maxend = 0;

	qsort(v, n, sizeof(*v), symtab_cand_cmp);
	tab->starts = malloc((n ? n : 1) * sizeof(*tab->starts));
	tab->syms = malloc((n ? n : 1) * sizeof(*tab->syms));
	if (!tab->starts || !tab->syms)
		goto err;
	for (i = 0; i < n; i = j) {
		uint64_t sized_end = 0, bare_end = v[i].start;
		int sized = 0;

		/* v[i] is the preferred alias; the group's extent is the widest. */
		for (j = i; j < n && v[j].start == v[i].start; j++) {
			if (v[j].sized) {
				sized = 1;
				sized_end = v[j].end > sized_end ? v[j].end : sized_end;
			} else if (v[j].end > bare_end) {
				bare_end = v[j].end;
			}
		}
		tab->starts[k] = v[i].start;
		tab->syms[k].name = v[i].name;
		tab->syms[k].sized = sized;
		tab->syms[k].end = sized ? sized_end : bare_end;
		if (sized && sized_end > maxend)
			maxend = sized_end;
		tab->syms[k].maxend = maxend;
		k++;
	}
	tab->n = k;
	/*
	 * A size-0 symbol ends where the next one starts, as perf reads
	 * them: reaching to its section's end, crtstuff's frame_dummy named
	 * the assembly function after it (nearly all of its samples).
	 */
	for (i = 0; i + 1 < k; i++)
		if (!tab->syms[i].sized && tab->syms[i].end > tab->starts[i + 1])
			tab->syms[i].end = tab->starts[i + 1];
	symtab_unversion(tab);
	return 0;
err:
	free(tab->starts);
	free(tab->syms);
	tab->starts = NULL;
	tab->syms = NULL;
	return -1;
}

void symtab_load(struct symtab *tab, struct Elf *elf)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	struct symtab_cand *v = NULL;
	GElf_Shdr sh;
	long n = 0;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
	}
	if (symtab)
		n = symtab_collect(elf, symtab, &v, &tab->capped);
	if (n == 0 && dynsym)
		n = symtab_collect(elf, dynsym, &v, &tab->capped);
	if (n > 0)
		symtab_index(tab, v, (size_t)n);
	free(v);
}

const char *symtab_find(const struct symtab *tab, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = tab->n, mid, i, j, steps;
	const struct symtab_sym *s;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (tab->starts[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	i = lo - 1;
	/*
	 * The innermost sized symbol containing vaddr wins. Symbols before i
	 * can only contain vaddr while their running maximum end passes it;
	 * the walk is bounded so a hostile table cannot make lookups linear.
	 */
	for (j = i, steps = 0; steps < SYMTAB_WALK; j--, steps++) {
		s = &tab->syms[j];
		if (s->sized && vaddr < s->end) {
			if (start)
				*start = tab->starts[j];
			return s->name;
		}
		if (j == 0 || tab->syms[j - 1].maxend <= vaddr)
			break;
	}
	/* A size-0 symbol: only the nearest one, only within its section. */
	s = &tab->syms[i];
	if (!s->sized && vaddr < s->end) {
		if (start)
			*start = tab->starts[i];
		return s->name;
	}
	return NULL;
}
