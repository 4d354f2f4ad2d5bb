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
 *     and everywhere with SYNC_SYM_VMM=0.  An allocation shared by CUDA
 *     IPC is a whole number of 2 MiB: cuMemAlloc sub-allocates smaller
 *     ones from a shared block, and CUDA IPC then shares the block, so
 *     the peer's cuIpcOpenMemHandle returns the block's start, not the
 *     allocation's (the CUDA programming guide, "Interprocess
 *     Communication").
 * Between processes every mapping is checked before it is used: each rank
 * writes a word of its own (its rank and pid) at the start of its part,
 * every peer reads it through its mapping, and only then is it zeroed, so
 * a mapping that shows other memory is an error (or, for imported
 * descriptors, the retry on CUDA IPC), never a wrong answer.
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
	uint64_t mark; /* the word at the start of the owner's part while it is mapped (0: none) */
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

enum { RT_IPC_ALIGN = 2 << 20 };

/* The peers are other processes (of this node, or not). */
static int
between(const syn_ctx *c)
{
	return !c->world && c->nranks > 1;
}

/* cuMemcpyHtoD from pageable memory returns once the bytes are staged for
 * the DMA, cuMemsetD8 once it is queued; both run on the legacy stream,
 * which the context's lanes (non-blocking streams) and other processes do
 * not wait for.  Two processes on one H200 read a peer's buffer through
 * CUDA IPC before its upload had landed (a2a_matmul's rank 1 got a wrong
 * result, 2026-12-03) and the word each rank writes to check its mappings
 * was missing when the peer looked for it (2026-12-04).  These return
 * when the bytes are there. */
static int
settled(syn_ctx *c, int r, const char *what)
{
	return r ? r : rt_cu(c, cuStreamSynchronize(CU_STREAM_LEGACY), what);
}

int
rt_put(syn_ctx *c, CUdeviceptr dst, const void *src, size_t n, const char *what)
{
	return settled(c, rt_cu(c, cuMemcpyHtoD(dst, src, n), what), what);
}

int
rt_zero(syn_ctx *c, CUdeviceptr dst, size_t n, const char *what)
{
	return settled(c, rt_cu(c, cuMemsetD8(dst, 0, n), what), what);
}

/* Between processes, mapped memory only where SYNC_SYM_VMM=2 asks for it
 * and no earlier round of this allocation failed to import. */
static int
exported(const syn_ctx *c, const RtSym *s)
{
	return between(c) && c->env.sym_vmm == 2 && !s->legacy;
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
			r = rt_zero(c, s->base, s->mapped, "cuMemsetD8 (symmetric)");
	} else {
		size_t n = bytes ? bytes : 1;
		if (between(c)) /* never sub-allocated, so CUDA IPC shares this and only this */
			n = (n + RT_IPC_ALIGN - 1) / RT_IPC_ALIGN * RT_IPC_ALIGN;
		s->mapped = n;
		r = rt_cu(c, cuMemAlloc(&s->base, n), "cuMemAlloc (symmetric)");
		if (!r)
			r = rt_zero(c, s->base, n, "cuMemsetD8 (symmetric)");
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

/* The word rank `rank` of process `pid` leaves at the start of its part
 * while the peers check their mappings; never 0, the zeroed memory. */
static uint64_t
mark_of(int rank, int32_t pid)
{
	return 0x5359u << 16 | (uint64_t)(uint32_t)pid << 16 << 16 | (uint64_t)(uint16_t)rank | 1ull << 63;
}

/* Whether the peer's part as mapped here starts with the word the peer
 * wrote there. */
static int
shows_mark(CUdeviceptr at, uint64_t mark)
{
	uint64_t got = 0;
	return cuMemcpyDtoH(&got, at, sizeof got) == CUDA_SUCCESS && got == mark;
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
	int r, vmm_between, wrong = -1;
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
	if (!r && between(c)) {
		mine.mark = mark_of(c->rank, mine.pid);
		r = rt_put(c, s->base, &mine.mark, sizeof mine.mark, "cuMemcpyHtoD (symmetric: mark)");
	}
	/* every rank takes part in the exchanges even after a local failure */
	if (rt_allgather(c, &mine, sizeof mine, all) && !r)
		r = SYN_EFAILED;
	ok = !(s->vmm && vmm_between && mine.fd < 0);
	for (int p = 0; p < c->nranks && !r; p++) {
		s->peer[p] = map_peer(c, &all[p], p, s);
		if (p != c->rank && all[p].fd >= 0 && rt_same_node(c, p) && !s->peer[p])
			ok = 0;
		if (p == c->rank || !s->peer[p] || !all[p].mark || shows_mark(s->peer[p], all[p].mark))
			continue;
		ok = 0; /* an import retries on CUDA IPC; CUDA IPC itself fails on every rank */
		if (wrong < 0)
			wrong = p;
	}
	if (between(c)) { /* nobody zeroes its mark before every peer has read it */
		char who[32];
		rt_fmt(who, sizeof who, "rank %d's", wrong);
		if (rt_allgather(c, &ok, sizeof ok, oks) && !r)
			r = SYN_EFAILED;
		if (mine.fd >= 0) /* the peers hold descriptors of their own now */
			close(mine.fd);
		for (int p = 0; p < c->nranks && !r; p++)
			if (vmm_between)
				*again |= !oks[p];
			else if (!oks[p])
				r = rt_seterr(c, SYN_EFAILED,
				              "rank %d: symmetric allocation of %zu bytes: rank %d opened %s memory by CUDA "
				              "IPC and found another allocation's bytes at its start, not the word written there; "
				              "peer memory cannot be used between these processes (use the nccl backend)",
				              c->rank, bytes, p, p == c->rank ? who : "a peer's");
		if (!r && mine.mark)
			r = rt_zero(c, s->base, sizeof mine.mark, "cuMemsetD8 (symmetric: mark)");
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
	for (int i = 0; i < c->nsym; i++)
		if (rt_range_in(c->sym[i]->base, c->sym[i]->bytes, p, bytes))
			return c->sym[i];
	if (c->flags && rt_range_in(c->flags->base, c->flags->bytes, p, bytes))
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
	return rt_put(c, (CUdeviceptr)(uintptr_t)dst, src, bytes, "cuMemcpyHtoD (syn_upload)");
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
