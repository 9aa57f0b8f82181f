/*
 * vmread.c — process_vm_readv, exact or up to a hole. The page-by-page
 * form exists because process_vm_readv stops at the first iovec it cannot
 * read but reports the bytes of those before it: one iovec per page makes
 * "as far as the stack is mapped" a single system call.
 */
#include <sys/uio.h>

#include "common/vmread.h"

#define VMREAD_MAX_IOV 256

int vm_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

size_t vm_read_upto(pid_t pid, uint64_t addr, void *buf, size_t cap)
{
	struct iovec local, remote[VMREAD_MAX_IOV];
	uint64_t a = addr, end = addr + cap, next;
	ssize_t r;
	int n = 0;

	if (end < addr)
		end = UINT64_MAX;
	while (a < end && n < VMREAD_MAX_IOV) {
		next = (a & ~(uint64_t)4095) + 4096;
		if (next > end || next == 0)
			next = end;
		remote[n].iov_base = (void *)(uintptr_t)a;
		remote[n].iov_len = next - a;
		a = next;
		n++;
	}
	local.iov_base = buf;
	local.iov_len = (size_t)(a - addr);
	r = process_vm_readv(pid, &local, 1, remote, (unsigned long)n, 0);
	return r < 0 ? 0 : (size_t)r;
}
