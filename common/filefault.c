/*
 * filefault.c — the registry of file mappings that a truncation must not
 * turn into a crash, and the SIGBUS handler that reads it. The registry is
 * a fixed array of slots written with atomics: a slot is claimed by a
 * compare-and-swap of its start from 0 to 1, filled, then published by
 * storing the real start; the handler reads only published slots. A fault
 * at an address inside a published slot gets an anonymous zero page of the
 * slot's protection mapped over its page with MAP_FIXED; the instruction
 * runs again and reads zeros. Every other SIGBUS goes to the handler that
 * was there before (ASan installs one), or kills as the default would.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/filefault.h"

#define SLOT_CLAIMED ((uintptr_t)1) /* start of a slot being filled or emptied */

struct slot {
	_Atomic uintptr_t start; /* 0 free, SLOT_CLAIMED busy, else published */
	_Atomic size_t len;
	_Atomic int prot;
	_Atomic unsigned hits;
};

static struct slot slots[FILEFAULT_MAX];
static _Atomic unsigned long total_hits;
static struct sigaction prev_action;
static uintptr_t page_size;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_ok;

/* Hand a fault that is not ours on, as if we had not been there. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;

	if ((prev_action.sa_flags & SA_SIGINFO) && prev_action.sa_sigaction) {
		prev_action.sa_sigaction(sig, si, uc);
		return;
	}
	if (!(prev_action.sa_flags & SA_SIGINFO) && prev_action.sa_handler != SIG_DFL &&
	    prev_action.sa_handler != SIG_IGN) {
		prev_action.sa_handler(sig);
		return;
	}
	/* The default action: a fault re-runs and kills; a sent signal is raised again. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr, s, page;
	size_t i;

	if (si->si_code == BUS_ADRERR) {
		for (i = 0; i < FILEFAULT_MAX; i++) {
			s = atomic_load_explicit(&slots[i].start, memory_order_acquire);
			if (s <= SLOT_CLAIMED || a < s ||
			    a - s >= atomic_load_explicit(&slots[i].len, memory_order_relaxed))
				continue;
			page = a & ~(page_size - 1);
			if (mmap((void *)page, page_size,
				 atomic_load_explicit(&slots[i].prot, memory_order_relaxed),
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
				break;
			atomic_fetch_add_explicit(&slots[i].hits, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&total_hits, 1, memory_order_relaxed);
			return;
		}
	}
	chain(sig, si, uc);
}

static void install(void)
{
	struct sigaction sa;
	long ps = sysconf(_SC_PAGESIZE);

	page_size = ps > 0 ? (uintptr_t)ps : 4096;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	install_ok = sigaction(SIGBUS, &sa, &prev_action) == 0;
}

int filefault_map(int fd, size_t size, int prot, struct filefault_map *m)
{
	uintptr_t zero;
	size_t i;
	void *p;

	m->data = NULL;
	m->size = 0;
	m->slot = -1;
	m->hits = NULL;
	pthread_once(&install_once, install);
	if (!install_ok || size == 0) {
		errno = install_ok ? EINVAL : ENOSYS;
		return -1;
	}
	for (i = 0; i < FILEFAULT_MAX; i++) {
		zero = 0;
		if (atomic_compare_exchange_strong(&slots[i].start, &zero, SLOT_CLAIMED))
			break;
	}
	if (i == FILEFAULT_MAX) {
		errno = ENFILE;
		return -1;
	}
	p = mmap(NULL, size, prot, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		atomic_store(&slots[i].start, 0);
		return -1;
	}
	atomic_store_explicit(&slots[i].len, size, memory_order_relaxed);
	atomic_store_explicit(&slots[i].prot, prot, memory_order_relaxed);
	atomic_store_explicit(&slots[i].hits, 0, memory_order_relaxed);
	atomic_store_explicit(&slots[i].start, (uintptr_t)p, memory_order_release);
	m->data = p;
	m->size = size;
	m->slot = (int)i;
	m->hits = &slots[i].hits;
	return 0;
}

void filefault_unmap(struct filefault_map *m)
{
	if (!m || !m->data)
		return;
	/* Unpublish first: the range may be reused by the next mmap. */
	if (m->slot >= 0) {
		atomic_store(&slots[m->slot].start, SLOT_CLAIMED);
		atomic_store(&slots[m->slot].len, 0);
	}
	munmap(m->data, m->size);
	if (m->slot >= 0)
		atomic_store(&slots[m->slot].start, 0);
	m->data = NULL;
	m->size = 0;
	m->slot = -1;
	m->hits = NULL;
}

unsigned filefault_hits(const struct filefault_map *m)
{
	if (!m || m->slot < 0)
		return 0;
	return atomic_load_explicit(&slots[m->slot].hits, memory_order_relaxed);
}

unsigned long filefault_total(void)
{
	return atomic_load_explicit(&total_hits, memory_order_relaxed);
}

void filefault_fd_name(int fd, char *out, size_t cap)
{
	char link[64];
	ssize_t n;
	size_t i;

	if (!cap)
		return;
	out[0] = 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, cap - 1);
	if (n <= 0)
		return;
	out[n] = 0;
	/* The name is the target's to choose: no terminal control in a message. */
	for (i = 0; i < (size_t)n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = '?';
}
