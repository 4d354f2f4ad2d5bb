/* runtime/rt_sym.c -- symmetric memory: every rank allocates the same
 * buffer and maps the others', for the flags, the copy engine, the p2p
 * backend and syn_alloc.  A rank's part is physical memory of its GPU
 * (cuMemCreate) mapped at an address it reserves (cuMemMap):
 *   - in one process, readable and writable by every GPU of the process
 *     that can reach it (cuMemSetAccess), at the same address for all;
 *   - between the processes of a node (SYNC_SYM_VMM=2), exported as a
 *     POSIX file descriptor that the peers take over with pidfd_getfd
 *     (pid and descriptor number travel through the bootstrap's
 *     allgather), import and map at addresses of their own; if any rank
 *     cannot import, every rank starts the allocation again on cuMemAlloc
 *     and CUDA IPC, which is the default between processes (SYNC_SYM_VMM=1)
 *     and everywhere with SYNC_SYM_VMM=0.
 * Whatever was made is unmapped and freed on every path out, a failed
 * allocation included. */
#define RT_CUDA 1
#include "rt.h"

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct SymPub {
	CUipcMemHandle h;
	uint64_t base, mapped;
	int32_t ipc_ok, dev;
	int32_t pid, fd; /* the exported allocation: the owner's descriptor (-1: none) */
} SymPub;

/* This rank's part, in the reverse order of vmm_map. */
static void
local_free(RtSym *s)
{
	if (!s->vmm) {
		if (s->base)
			cuMemFree(s->base);
	} else {
		if (s->vmm & RT_VMM_MAPPED)
			cuMemUnmap(s->base, s->mapped);
		if (s->vmm & RT_VMM_RESERVED)
			cuMemAddressFree(s->base, s->mapped);
		if (s->vmm & RT_VMM_CREATED)
			cuMemRelease(s->h);
	}
	s->base = 0;
	s->vmm = 0;
}

/* The peers' memory as mapped here: IPC closed, imports unmapped. */
static void
peers_release(syn_ctx *c, RtSym *s)
{
	for (int p = 0; p < c->nranks && s->peer; p++) {
		struct RtSymImport *m = s->imp ? &s->imp[p] : NULL;
		if (p == c->rank)
			continue;
		if (m && m->vmm) {
			if (m->vmm & RT_VMM_MAPPED)
				cuMemUnmap(m->va, m->mapped);
			if (m->vmm & RT_VMM_RESERVED)
				cuMemAddressFree(m->va, m->mapped);
			if (m->vmm & RT_VMM_CREATED)
				cuMemRelease(m->h);
			m->vmm = 0;
		} else if (s->peer[p] && s->ipc)
			cuIpcCloseMemHandle(s->peer[p]);
		s->peer[p] = 0;
	}
}

void
rt_sym_release(syn_ctx *c, RtSym *s, int free_base)
{
	peers_release(c, s);
	if (free_base)
		local_free(s);
	free(s->peer);
	free(s->imp);
	free(s);
}

/* The GPUs that will use this rank's memory: its own, and in one process
 * every other rank's that can reach it by peer access (the processes of a
 * node set their own access when they import it). */
static int
access_list(const syn_ctx *c, CUmemAccessDesc *acc)
{
	int n = 0;
	for (int q = 0; q < c->nranks; q++) {
		const syn_ctx *o = q == c->rank ? c : c->world ? c->world->ctx[q] : NULL;
		int can = 0, dup = 0;
		if (!o)
			continue;
		for (int i = 0; i < n; i++)
			dup |= acc[i].location.id == o->device;
		if (dup || (o->dev != c->dev && (cuDeviceCanAccessPeer(&can, o->dev, c->dev) != CUDA_SUCCESS || !can)))
			continue;
		memset(&acc[n], 0, sizeof acc[n]);
		acc[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		acc[n].location.id = o->device;
		acc[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		n++;
	}
	return n;
}

static int
vmm_map(syn_ctx *c, RtSym *s, int exportable)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc *acc = calloc((size_t)c->nranks + 1, sizeof *acc);
	size_t gran = 0;
	int r;
	if (!acc)
		return rt_seterr(c, SYN_ENOMEM, "rank %d: symmetric allocation: out of host memory", c->rank);
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = c->device;
	prop.requestedHandleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
	if (!(r = rt_cu(c, cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	                "cuMemGetAllocationGranularity (symmetric)"))) {
		s->mapped = ((s->bytes ? s->bytes : 1) + gran - 1) / gran * gran;
		r = rt_cu(c, cuMemCreate(&s->h, s->mapped, &prop, 0), "cuMemCreate (symmetric)");
	}
	if (!r) {
		s->vmm |= RT_VMM_CREATED;
		r = rt_cu(c, cuMemAddressReserve(&s->base, s->mapped, gran, 0, 0), "cuMemAddressReserve (symmetric)");
	}
	if (!r) {
		s->vmm |= RT_VMM_RESERVED;
		r = rt_cu(c, cuMemMap(s->base, s->mapped, 0, s->h, 0), "cuMemMap (symmetric)");
	}
	if (!r) {
		s->vmm |= RT_VMM_MAPPED;
		r = rt_cu(c, cuMemSetAccess(s->base, s->mapped, acc, (size_t)access_list(c, acc)), "cuMemSetAccess (symmetric)");
	}
	free(acc);
	return r;
}

/* Between processes, mapped memory only where SYNC_SYM_VMM=2 asks for it
 * and no earlier round of this allocation failed to import. */
static int
exported(const syn_ctx *c, const RtSym *s)
{
	return !c->world && c->nranks > 1 && c->env.sym_vmm == 2 && !s->legacy;
}

/* This rank's part of a symmetric allocation, zeroed.  On failure nothing
 * of it is left. */
int
rt_sym_local(syn_ctx *c, size_t bytes, RtSym *s)
{
	int r;
	s->bytes = bytes;
	if ((c->world && c->env.sym_vmm) || exported(c, s)) {
		r = vmm_map(c, s, exported(c, s));
		if (!r)
			r = rt_cu(c, cuMemsetD8(s->base, 0, s->mapped), "cuMemsetD8 (symmetric)");
	} else {
		r = rt_cu(c, cuMemAlloc(&s->base, bytes ? bytes : 1), "cuMemAlloc (symmetric)");
		if (!r)
			r = rt_cu(c, cuMemsetD8(s->base, 0, bytes ? bytes : 1), "cuMemsetD8 (symmetric)");
	}
	if (r)
		local_free(s);
	return r;
}

/* Another process's exported allocation, by its descriptor taken over
 * with pidfd_getfd, mapped here for this GPU; 0 when it cannot be (the
 * kernel refuses the descriptor, an old kernel, the driver refuses). */
static CUdeviceptr
import_peer(syn_ctx *c, const SymPub *pub, int p, RtSym *s)
{
	struct RtSymImport *m = &s->imp[p];
	CUmemAccessDesc acc;
	int lfd = -1;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
	int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pub->pid, 0);
	if (pfd >= 0) {
		lfd = (int)syscall(SYS_pidfd_getfd, pfd, pub->fd, 0);
		close(pfd);
	}
#endif
	if (lfd < 0)
		return 0;
	if (cuMemImportFromShareableHandle(&m->h, (void *)(uintptr_t)lfd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) !=
	    CUDA_SUCCESS) {
		close(lfd);
		return 0;
	}
	close(lfd);
	m->vmm = RT_VMM_CREATED;
	m->mapped = (size_t)pub->mapped;
	memset(&acc, 0, sizeof acc);
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = c->device;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if (cuMemAddressReserve(&m->va, m->mapped, 0, 0, 0) != CUDA_SUCCESS)
		return 0;
	m->vmm |= RT_VMM_RESERVED; /* peers_release frees what was made */
	if (cuMemMap(m->va, m->mapped, 0, m->h, 0) != CUDA_SUCCESS)
		return 0;
	m->vmm |= RT_VMM_MAPPED;
	return cuMemSetAccess(m->va, m->mapped, &acc, 1) == CUDA_SUCCESS ? m->va : 0;
}

static CUdeviceptr
map_peer(syn_ctx *c, const SymPub *pub, int p, RtSym *s)
{
	CUdeviceptr m = 0;
	if (p == c->rank)
		return s->base;
	if (c->world) /* one process: unified addresses, peer access enabled at init */
		return c->world->ctx[p] && c->reach[p] ? (CUdeviceptr)pub->base : 0;
	if (!rt_same_node(c, p))
		return 0;
	if (pub->fd >= 0)
		return import_peer(c, pub, p, s);
	if (!pub->ipc_ok || cuIpcOpenMemHandle(&m, pub->h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS)
		return 0;
	s->ipc = 1;
	return m;
}

/* How this rank offers its part to the other processes: an exported
 * descriptor, or a CUDA IPC handle. */
static void
publish(syn_ctx *c, RtSym *s, SymPub *mine)
{
	int fd = -1;
	memset(mine, 0, sizeof *mine);
	mine->base = s->base;
	mine->mapped = s->mapped;
	mine->dev = c->device;
	mine->pid = (int32_t)getpid();
	mine->fd = -1;
	if (c->world || c->nranks == 1 || !s->base)
		return;
	if (s->vmm) {
		if (cuMemExportToShareableHandle(&fd, s->h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) == CUDA_SUCCESS)
			mine->fd = fd;
	} else
		mine->ipc_ok = cuIpcGetMemHandle(&mine->h, s->base) == CUDA_SUCCESS;
}

/* One round of a symmetric allocation.  *again: exported memory that some
 * process could not import (or this one could not export): every rank
 * gave its part back, and the caller starts again on cuMemAlloc. */
static int
sym_round(syn_ctx *c, size_t bytes, int legacy, RtSym **out, int *again)
{
	RtSym *s = calloc(1, sizeof *s);
	SymPub mine, *all = calloc((size_t)c->nranks, sizeof *all);
	int32_t ok = 1, *oks = calloc((size_t)c->nranks, sizeof *oks);
	int r, vmm_between;
	*out = NULL;
	*again = 0;
	if (!s || !all || !oks || !(s->peer = calloc((size_t)c->nranks, sizeof *s->peer)) ||
	    !(s->imp = calloc((size_t)c->nranks, sizeof *s->imp))) {
		free(all);
		free(oks);
		if (s) {
			free(s->peer);
			free(s->imp);
		}
		free(s);
		return rt_seterr(c, SYN_ENOMEM, "rank %d: symmetric allocation: out of host memory", c->rank);
	}
	s->legacy = legacy;
	vmm_between = exported(c, s);
	r = rt_sym_local(c, bytes, s);
	publish(c, s, &mine);
	/* every rank takes part in the exchanges even after a local failure */
	if (rt_allgather(c, &mine, sizeof mine, all) && !r)
		r = SYN_EFAILED;
	ok = !(s->vmm && vmm_between && mine.fd < 0);
	for (int p = 0; p < c->nranks && !r; p++) {
		s->peer[p] = map_peer(c, &all[p], p, s);
		if (p != c->rank && all[p].fd >= 0 && rt_same_node(c, p) && !s->peer[p])
			ok = 0;
	}
	if (vmm_between) {
		if (rt_allgather(c, &ok, sizeof ok, oks) && !r)
			r = SYN_EFAILED;
		if (mine.fd >= 0) /* the peers hold descriptors of their own now */
			close(mine.fd);
		for (int p = 0; p < c->nranks && !r; p++)
			*again |= !oks[p];
	}
	free(all);
	free(oks);
	if (r || *again) {
		rt_sym_release(c, s, 1);
		return r;
	}
	*out = s;
	return SYN_OK;
}

/* Collective: every rank allocates `bytes` (zeroed) and learns where the
 * others' allocations appear in its own address space. */
int
rt_sym_alloc(syn_ctx *c, size_t bytes, RtSym **out)
{
	int again = 0, r = sym_round(c, bytes, 0, out, &again);
	if (!r && again)
		r = sym_round(c, bytes, 1, out, &again);
	return r;
}

RtSym *
rt_sym_find(const syn_ctx *c, CUdeviceptr p, size_t bytes)
{
	for (int i = 0; i < c->nsym; i++) {
		RtSym *s = c->sym[i];
		if (p >= s->base && p - s->base <= s->bytes && bytes <= s->bytes - (p - s->base))
			return s;
	}
	if (c->flags && p >= c->flags->base && p - c->flags->base + bytes <= c->flags->bytes)
		return c->flags;
	return NULL;
}

int
syn_alloc(syn_ctx *c, size_t bytes, void **p)
{
	RtSym *s, **v;
	int r;
	*p = NULL;
	if ((r = rt_entry(c)))
		return r;
	if (!(v = realloc(c->sym, sizeof *v * (size_t)(c->nsym + 1))))
		return rt_seterr(c, SYN_ENOMEM, "rank %d: syn_alloc: out of host memory", c->rank);
	c->sym = v;
	if ((r = rt_sym_alloc(c, bytes, &s)))
		return r;
	c->sym[c->nsym++] = s;
	*p = (void *)(uintptr_t)s->base;
	return SYN_OK;
}

int
syn_upload(syn_ctx *c, void *dst, const void *src, size_t bytes)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (!dst || (!src && bytes))
		return rt_seterr(c, SYN_EARG, "rank %d: syn_upload: NULL pointer", c->rank);
	return rt_cu(c, cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes), "cuMemcpyHtoD (syn_upload)");
}

int
syn_download(syn_ctx *c, void *dst, const void *src, size_t bytes)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (!src || (!dst && bytes))
		return rt_seterr(c, SYN_EARG, "rank %d: syn_download: NULL pointer", c->rank);
	return rt_cu(c, cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes), "cuMemcpyDtoH (syn_download)");
}

int
syn_free(syn_ctx *c, void *p)
{
	int r, i;
	if ((r = rt_entry(c)))
		return r;
	for (i = 0; i < c->nsym && c->sym[i]->base != (CUdeviceptr)(uintptr_t)p; i++)
		;
	if (i == c->nsym)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_free(%p): not from syn_alloc", c->rank, p);
	peers_release(c, c->sym[i]); /* unmap the peers first, then let everybody free */
	r = syn_barrier(c);
	rt_sym_release(c, c->sym[i], !r);
	c->sym[i] = c->sym[--c->nsym];
	return r;
}

void *
syn_peer_ptr(const syn_ctx *c, const void *p, int rank)
{
	RtSym *s;
	if (!c || rank < 0 || rank >= c->nranks)
		return NULL;
	s = rt_sym_find(c, (CUdeviceptr)(uintptr_t)p, 0);
	if (!s || !s->peer[rank])
		return NULL;
	return (void *)(uintptr_t)(s->peer[rank] + ((CUdeviceptr)(uintptr_t)p - s->base));
}
