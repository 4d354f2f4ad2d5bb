/* runtime/rt_sym.c -- symmetric memory: every rank allocates the same
 * buffer and maps the others' (UVA in one process, CUDA IPC between the
 * processes of a node), for the flags, the copy engine, the p2p backend
 * and syn_alloc.  In one process a rank's part is physical memory of its
 * GPU (cuMemCreate) mapped at an address it reserves (cuMemMap), readable
 * and writable by every GPU of the process that can reach it
 * (cuMemSetAccess): the peers use the same address.  Between processes it
 * is cuMemAlloc memory opened by CUDA IPC.  SYNC_SYM_VMM=0 takes cuMemAlloc
 * in one process too.  Whatever was made is unmapped and freed on every
 * path out, a failed allocation included. */
#define RT_CUDA 1
#include "rt.h"

#include <stdlib.h>
#include <string.h>

typedef struct SymPub {
	CUipcMemHandle h;
	uint64_t base;
	int32_t ipc_ok, dev;
} SymPub;

static CUdeviceptr
map_peer(syn_ctx *c, const SymPub *pub, int p, RtSym *s)
{
	CUdeviceptr m = 0;
	if (p == c->rank)
		return s->base;
	if (c->world) /* one process: unified addresses, peer access enabled at init */
		return c->world->ctx[p] && c->reach[p] ? (CUdeviceptr)pub->base : 0;
	if (!rt_same_node(c, p) || !pub->ipc_ok)
		return 0;
	if (cuIpcOpenMemHandle(&m, pub->h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS)
		return 0;
	s->ipc = 1;
	return m;
}

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

void
rt_sym_release(syn_ctx *c, RtSym *s, int free_base)
{
	for (int p = 0; p < c->nranks && s->peer; p++)
		if (p != c->rank && s->peer[p] && s->ipc)
			cuIpcCloseMemHandle(s->peer[p]);
	if (free_base)
		local_free(s);
	free(s->peer);
	free(s);
}

/* The GPUs that will use this rank's memory: its own, and in one process
 * every other rank's that can reach it by peer access. */
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
vmm_map(syn_ctx *c, RtSym *s)
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

/* This rank's part of a symmetric allocation, zeroed: mapped memory in one
 * process, cuMemAlloc memory (which CUDA IPC can open) between processes.
 * On failure nothing of it is left. */
int
rt_sym_local(syn_ctx *c, size_t bytes, RtSym *s)
{
	int r;
	s->bytes = bytes;
	if (c->world && c->env.sym_vmm) {
		r = vmm_map(c, s);
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

/* Collective: every rank allocates `bytes` (zeroed) and learns where the
 * others' allocations appear in its own address space. */
int
rt_sym_alloc(syn_ctx *c, size_t bytes, RtSym **out)
{
	RtSym *s = calloc(1, sizeof *s);
	SymPub mine, *all = calloc((size_t)c->nranks, sizeof *all);
	int r;
	*out = NULL;
	memset(&mine, 0, sizeof mine);
	if (!s || !all || !(s->peer = calloc((size_t)c->nranks, sizeof *s->peer))) {
		free(all);
		if (s)
			free(s->peer);
		free(s);
		return rt_seterr(c, SYN_ENOMEM, "rank %d: symmetric allocation: out of host memory", c->rank);
	}
	r = rt_sym_local(c, bytes, s);
	mine.base = s->base;
	mine.dev = c->device;
	if (!r && !c->world && c->nranks > 1)
		mine.ipc_ok = cuIpcGetMemHandle(&mine.h, s->base) == CUDA_SUCCESS;
	/* every rank takes part in the exchange even after a local failure */
	if (rt_allgather(c, &mine, sizeof mine, all) && !r)
		r = SYN_EFAILED;
	for (int p = 0; p < c->nranks && !r; p++)
		s->peer[p] = map_peer(c, &all[p], p, s);
	free(all);
	if (r) {
		rt_sym_release(c, s, 1);
		return r;
	}
	*out = s;
	return SYN_OK;
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
	for (int q = 0; q < c->nranks; q++) /* unmap the peers first, then let everybody free */
		if (q != c->rank && c->sym[i]->peer[q] && c->sym[i]->ipc) {
			cuIpcCloseMemHandle(c->sym[i]->peer[q]);
			c->sym[i]->peer[q] = 0;
		}
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
