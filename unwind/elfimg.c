/*
 * elfimg.c — an ELF file held read-only in memory (a private mapping, or a
 * malloc'd copy for the vDSO) with the few things the unwinder and the
 * symbolizer ask of it. It owns the file: the ELF header, program headers
 * and notes, parsed by hand with explicit bounds checks because the
 * unwinder needs them even when the section headers are missing or broken
 * (libelf then refuses the file, and we carry on without symbols);
 * sections, through libelf, which checks their offsets against the image;
 * and reads at virtual addresses. The symbol table is a job of its own,
 * unwind/symtab.c; this file decides when it is built (on the first
 * lookup, once, under the lock that serialises every use of libelf) and
 * hands it the Elf handle. elf_image_ptr() sits on the unwinder's hot
 * path (libunwind reads .eh_frame word by word through it), so it keeps a
 * precomputed, already-clamped table of segments and remembers the last
 * one hit: a hit costs a load and two compares. Thread-safety: lookups and
 * ptr() may run concurrently once the image is open.
 */
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/filefault.h"
#include "unwind/elfimg.h"
#include "unwind/symtab.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "elfimg reads little-endian ELF fields with memcpy: little-endian hosts only"
#endif

#define ELF_MAX_IMAGE (4ull << 30)
#define ELF_MAX_BUILD_ID 64        /* bytes; SHA-1 ids are 20 */
#define ELF_MAX_LOADS 1024         /* PT_LOADs; linkers emit a handful, this bounds a ptr() miss */
#define ELF_MAX_NAME 256           /* bytes of an image's name in messages */

/* A PT_LOAD's file-backed part, clamped to the image: [vaddr, vaddr+len) -> data. */
struct elf_fastseg {
	uint64_t vaddr, len;
	const unsigned char *data;
};

struct elf_image {
	unsigned char *data;
	size_t size;
	int mapped;                /* data is map's mapping (else malloc) */
	struct filefault_map map;  /* the file's registered mapping (unwind on truncation) */
	atomic_int damaged;        /* a read hit a truncated page: noted, nothing trusted */
	_Atomic size_t *pool;      /* a budget charged for this image, or NULL */
	size_t charged;            /* bytes charged to it */
	char name[ELF_MAX_NAME];   /* for messages: the file's path, "" unknown */
	Elf *elf;   /* NULL when libelf refused the sections */
	int type;
	const unsigned char *ph; /* the program headers, inside data */
	size_t phnum;
	struct elf_segment *segs;
	struct elf_fastseg *fast;
	size_t nsegs;
	_Atomic size_t last; /* index of the segment ptr() hit last */
	int have_eh;
	uint64_t eh_vaddr, eh_size;
	char build_id[2 * ELF_MAX_BUILD_ID + 1];

	pthread_mutex_t elf_lock; /* held for every use of elf: libelf is not thread-safe */
	atomic_int sym_loaded;    /* symtab is built (set once, under elf_lock) */
	struct symtab symtab;
};

static pthread_once_t elf_version_once = PTHREAD_ONCE_INIT;
static int elf_version_ok;

static void elf_image_version_init(void)
{
	elf_version_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static uint32_t elf_rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Find the NT_GNU_BUILD_ID note in p[0..len) (notes aligned to align). */
static int elf_image_scan_notes(struct elf_image *img, const unsigned char *p, size_t len,
				size_t align)
{
	static const char hex[] = "0123456789abcdef";
	size_t pos = 0, namesz, descsz, pad, i;
	uint32_t type;

	while (len - pos >= 12) {
		namesz = elf_rd32(p + pos);
		descsz = elf_rd32(p + pos + 4);
		type = elf_rd32(p + pos + 8);
		pos += 12;
		pad = (namesz + align - 1) & ~(align - 1);
		if (pad > len - pos)
			return -1;
		if (namesz == 4 && memcmp(p + pos, "GNU", 4) == 0 && type == NT_GNU_BUILD_ID &&
		    descsz > 0 && descsz <= ELF_MAX_BUILD_ID && descsz <= len - pos - pad) {
			const unsigned char *d = p + pos + pad;

			for (i = 0; i < descsz; i++) {
				img->build_id[2 * i] = hex[d[i] >> 4];
				img->build_id[2 * i + 1] = hex[d[i] & 15];
			}
			img->build_id[2 * descsz] = 0;
			return 0;
		}
		pos += pad;
		pad = (descsz + align - 1) & ~(align - 1);
		if (pad > len - pos)
			return -1;
		pos += pad;
	}
	return -1;
}

static void elf_image_find_build_id(struct elf_image *img)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf64_Phdr p;
	size_t i;

	for (i = 0; i < img->phnum; i++) {
		memcpy(&p, img->ph + i * sizeof(p), sizeof(p));
		if (p.p_type != PT_NOTE || p.p_offset > img->size || p.p_filesz > img->size - p.p_offset)
			continue;
		if (elf_image_scan_notes(img, img->data + p.p_offset, p.p_filesz,
					 p.p_align == 8 ? 8 : 4) == 0)
			return;
	}
	/* No PT_NOTE (a separate debug file, an object): try the sections. */
	while (img->elf && (scn = elf_nextscn(img->elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || sh.sh_offset > img->size ||
		    sh.sh_size > img->size - sh.sh_offset)
			continue;
		if (elf_image_scan_notes(img, img->data + sh.sh_offset, sh.sh_size,
					 sh.sh_addralign == 8 ? 8 : 4) == 0)
			return;
	}
}

/* Read the program headers by hand; -1 when the table is out of the image. */
static int elf_image_load_phdrs(struct elf_image *img, const Elf64_Ehdr *eh)
{
	Elf64_Phdr p;
	Elf64_Shdr sh0;
	size_t phnum = eh->e_phnum, i, cap;

	if (phnum == PN_XNUM) {
		/* The real count is in section header 0's sh_info. */
		if (eh->e_shoff > img->size || img->size - eh->e_shoff < sizeof(sh0))
			return -1;
		memcpy(&sh0, img->data + eh->e_shoff, sizeof(sh0));
		phnum = sh0.sh_info;
	}
	if (phnum == 0)
		return 0;
	if (eh->e_phentsize != sizeof(p) || eh->e_phoff > img->size ||
	    phnum > (img->size - eh->e_phoff) / sizeof(p))
		return -1;
	img->ph = img->data + eh->e_phoff;
	img->phnum = phnum;
	cap = phnum < ELF_MAX_LOADS ? phnum : ELF_MAX_LOADS;
	img->segs = calloc(cap, sizeof(*img->segs));
	img->fast = calloc(cap, sizeof(*img->fast));
	if (!img->segs || !img->fast)
		return -1;
	for (i = 0; i < phnum; i++) {
		struct elf_fastseg *f = &img->fast[img->nsegs];

		memcpy(&p, img->ph + i * sizeof(p), sizeof(p));
		if (p.p_type == PT_GNU_EH_FRAME && !img->have_eh) {
			img->have_eh = 1;
			img->eh_vaddr = p.p_vaddr;
			img->eh_size = p.p_memsz;
		}
		if (p.p_type != PT_LOAD)
			continue;
		if (img->nsegs == cap)
			return -1;
		img->segs[img->nsegs] =
			(struct elf_segment){ p.p_vaddr, p.p_memsz, p.p_offset, p.p_filesz, p.p_flags };
		/* Clamp the file-backed part to the image and to the address space. */
		f->vaddr = p.p_vaddr;
		f->data = img->data;
		if (p.p_offset <= img->size) {
			f->data = img->data + p.p_offset;
			f->len = p.p_filesz < img->size - p.p_offset ? p.p_filesz : img->size - p.p_offset;
			if (f->len > UINT64_MAX - p.p_vaddr)
				f->len = UINT64_MAX - p.p_vaddr;
		}
		img->nsegs++;
	}
	return 0;
}

int elf_image_libelf_ok(const void *data, size_t size)
{
	const unsigned char *d = data;
	Elf64_Ehdr eh;
	Elf64_Shdr sh0, ss;
	uint64_t shnum, shstrndx, room;

	if (size < sizeof(eh))
		return 0;
	memcpy(&eh, d, sizeof(eh));
	if (eh.e_shoff == 0)
		return 1; /* no section headers: libelf makes no sections */
	if (eh.e_shentsize != sizeof(sh0) || eh.e_shoff > size || size - eh.e_shoff < sizeof(sh0))
		return 0;
	room = (size - eh.e_shoff) / sizeof(sh0);
	memcpy(&sh0, d + eh.e_shoff, sizeof(sh0));
	shnum = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
	if (shnum > ELF_MAX_SECTIONS || shnum > room)
		return 0;
	shstrndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
	if (shstrndx != SHN_UNDEF && shstrndx < shnum) {
		memcpy(&ss, d + eh.e_shoff + shstrndx * sizeof(ss), sizeof(ss));
		/* elf_strptr() would inflate it to whatever size its header claims. */
		if (ss.sh_flags & SHF_COMPRESSED)
			return 0;
	}
	return 1;
}

/* Common part of the constructors, once data/size are set. */
static int elf_image_init(struct elf_image *img)
{
	Elf64_Ehdr eh;

	if (img->size < sizeof(eh))
		return -1;
	memcpy(&eh, img->data, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -1;
	img->type = eh.e_type;
	pthread_once(&elf_version_once, elf_image_version_init);
	if (elf_version_ok && elf_image_libelf_ok(img->data, img->size)) {
		/* libelf only reads the image here: no elf_update, no gelf_update_*. */
		img->elf = elf_memory((char *)img->data, img->size);
		if (img->elf && elf_kind(img->elf) != ELF_K_ELF) {
			elf_end(img->elf);
			img->elf = NULL;
		}
	}
	if (elf_image_load_phdrs(img, &eh) < 0)
		return -1;
	elf_image_find_build_id(img);
	return 0;
}

static struct elf_image *elf_image_alloc(void)
{
	struct elf_image *img = calloc(1, sizeof(*img));

	if (!img)
		return NULL;
	img->map.slot = -1;
	pthread_mutex_init(&img->elf_lock, NULL);
	symtab_init(&img->symtab);
	atomic_init(&img->last, 0);
	atomic_init(&img->sym_loaded, 0);
	return img;
}

struct elf_image *elf_image_open(int fd)
{
	struct elf_image *img = NULL;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return NULL;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr) ||
	    (uint64_t)st.st_size > ELF_MAX_IMAGE) {
		errno = EINVAL;
		return NULL;
	}
	img = elf_image_alloc();
	if (!img)
		goto err;
	filefault_fd_name(fd, img->name, sizeof(img->name));
	/*
	 * MAP_PRIVATE isolates us from files replaced by rename (what package
	 * managers and linkers do); a file rewritten or truncated in place
	 * still shows through, and a read past a truncation would SIGBUS:
	 * filefault turns that into zeros and marks the image damaged.
	 * Copying instead would cost the whole file in memory for every
	 * object profiled.
	 */
	if (filefault_map(fd, (size_t)st.st_size, PROT_READ, &img->map) < 0)
		goto err;
	img->data = img->map.data;
	img->size = (size_t)st.st_size;
	img->mapped = 1;
	if (elf_image_init(img) < 0)
		goto err;
	return img;
err:
	elf_image_free(img);
	return NULL;
}

struct elf_image *elf_image_from_mem(const void *data, size_t len)
{
	struct elf_image *img = NULL;

	if (len < sizeof(Elf64_Ehdr) || len > ELF_MAX_IMAGE) {
		errno = EINVAL;
		return NULL;
	}
	img = elf_image_alloc();
	if (!img)
		goto err;
	img->data = malloc(len);
	if (!img->data)
		goto err;
	memcpy(img->data, data, len);
	img->size = len;
	if (elf_image_init(img) < 0)
		goto err;
	return img;
err:
	elf_image_free(img);
	return NULL;
}

struct elf_image *elf_image_adopt(void *data, size_t len)
{
	struct elf_image *img;

	if (len < sizeof(Elf64_Ehdr) || len > ELF_MAX_IMAGE || !(img = elf_image_alloc())) {
		free(data);
		return NULL;
	}
	img->data = data;
	img->size = len;
	if (elf_image_init(img) < 0) {
		elf_image_free(img);
		return NULL;
	}
	return img;
}

void elf_image_charge(struct elf_image *img, _Atomic size_t *pool, size_t bytes)
{
	img->pool = pool;
	img->charged = bytes;
}

void elf_image_set_name(struct elf_image *img, const char *name)
{
	size_t i;

	snprintf(img->name, sizeof(img->name), "%s", name ? name : "");
	for (i = 0; img->name[i]; i++)
		if ((unsigned char)img->name[i] < 0x20 || img->name[i] == 0x7f)
			img->name[i] = '?';
}

const char *elf_image_name(const struct elf_image *img)
{
	return img->name;
}

/*
 * Whether img can be believed: not once a read of it found its file
 * truncated (the read saw zeros). Said once per image, here, because the
 * image is the one that knows its name and the damage.
 */
static int elf_image_intact(const struct elf_image *img)
{
	struct elf_image *m = (struct elf_image *)img; /* the flag is not the image's value */

	if (!filefault_damaged(&img->map))
		return 1;
	if (!atomic_exchange(&m->damaged, 1))
		note("%s changed on disk while it was read (truncated or rewritten in place): "
		     "its symbols and unwind tables are no longer used",
		     img->name[0] ? img->name : "an object");
	return 0;
}

int elf_image_damaged(const struct elf_image *img)
{
	return !elf_image_intact(img);
}

void elf_image_free(struct elf_image *img)
{
	if (!img)
		return;
	symtab_release(&img->symtab);
	if (img->elf)
		elf_end(img->elf);
	if (img->mapped)
		filefault_unmap(&img->map);
	else
		free(img->data);
	if (img->pool)
		atomic_fetch_sub(img->pool, img->charged);
	free(img->segs);
	free(img->fast);
	pthread_mutex_destroy(&img->elf_lock);
	free(img);
}

size_t elf_image_size(const struct elf_image *img)
{
	return img->size;
}

int elf_image_type(const struct elf_image *img)
{
	return img->type;
}

const char *elf_image_build_id(const struct elf_image *img)
{
	return img->build_id;
}

const struct elf_segment *elf_image_segments(const struct elf_image *img, size_t *n)
{
	*n = img->nsegs;
	return img->segs;
}

int elf_image_eh_frame_hdr(const struct elf_image *img, uint64_t *vaddr, uint64_t *size)
{
	if (!img->have_eh)
		return -1;
	*vaddr = img->eh_vaddr;
	*size = img->eh_size;
	return 0;
}

int elf_image_section(const struct elf_image *img, const char *name, const unsigned char **data,
		      size_t *size, uint64_t *vaddr, int *compressed)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	const char *n;

	int r = -1;

	if (!img->elf || !elf_image_intact(img))
		return -1;
	/* libelf loads section headers lazily and is not thread-safe on one
	 * Elf: elf_lock serialises every use of it, the symbol loader's too. */
	pthread_mutex_lock(&((struct elf_image *)img)->elf_lock);
	if (elf_getshdrstrndx(img->elf, &shstrndx) != 0)
		goto out;
	while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(img->elf, shstrndx, sh.sh_name)) ||
		    strcmp(n, name) != 0)
			continue;
		if (sh.sh_type == SHT_NOBITS || sh.sh_offset > img->size ||
		    sh.sh_size > img->size - sh.sh_offset)
			goto out;
		*data = img->data + sh.sh_offset;
		*size = sh.sh_size;
		*vaddr = (sh.sh_flags & SHF_ALLOC) ? sh.sh_addr : 0;
		*compressed = (sh.sh_flags & SHF_COMPRESSED) != 0;
		r = 0;
		goto out;
	}
out:
	pthread_mutex_unlock(&((struct elf_image *)img)->elf_lock);
	/* The headers just read may have been the zeros of a truncated file. */
	return elf_image_intact(img) ? r : -1;
}

/* The bytes at [vaddr, vaddr+n) if segment f holds all of them, else NULL. */
static inline const void *elf_fastseg_ptr(const struct elf_fastseg *f, uint64_t vaddr, size_t n)
{
	uint64_t off = vaddr - f->vaddr;

	if (vaddr >= f->vaddr && off <= f->len && n <= f->len - off)
		return f->data + off;
	return NULL;
}

const void *elf_image_ptr(const struct elf_image *img, uint64_t vaddr, size_t n)
{
	size_t i = atomic_load_explicit(&img->last, memory_order_relaxed);
	const void *p;

	if (filefault_damaged(&img->map) && !elf_image_intact(img))
		return NULL;
	if (i < img->nsegs && (p = elf_fastseg_ptr(&img->fast[i], vaddr, n)) != NULL)
		return p;
	for (i = 0; i < img->nsegs; i++) {
		if ((p = elf_fastseg_ptr(&img->fast[i], vaddr, n)) != NULL) {
			/* The hint is not part of the image's value, and the image
			 * was allocated non-const: casting const away is defined. */
			atomic_store_explicit(&((struct elf_image *)img)->last, i, memory_order_relaxed);
			return p;
		}
	}
	return NULL;
}

/* Build the symbol table on the first lookup, once. */
static void elf_image_ensure_symbols(struct elf_image *img)
{
	if (atomic_load_explicit(&img->sym_loaded, memory_order_acquire))
		return;
	pthread_mutex_lock(&img->elf_lock);
	if (!atomic_load_explicit(&img->sym_loaded, memory_order_relaxed)) {
		if (img->elf && elf_image_intact(img))
			symtab_load(&img->symtab, img->elf);
		if (img->symtab.capped)
			note("%s: more than %u function symbols; those past the cap are left unnamed",
			     img->name[0] ? img->name : "an object", SYMTAB_MAX_SYMBOLS);
		atomic_store_explicit(&img->sym_loaded, 1, memory_order_release);
	}
	pthread_mutex_unlock(&img->elf_lock);
}

const char *elf_image_symbol(struct elf_image *img, uint64_t vaddr, uint64_t *start)
{
	elf_image_ensure_symbols(img);
	if (!elf_image_intact(img))
		return NULL;
	return symtab_find(&img->symtab, vaddr, start);
}

size_t elf_image_nsymbols(struct elf_image *img)
{
	elf_image_ensure_symbols(img);
	return img->symtab.n;
}
