/* runtime/rt_sym.c -- symmetric memory: every rank allocates the same
 * buffer and maps the others' (UVA in one process, CUDA IPC between the
 * processes of a node), for the flags, the copy engine and syn_alloc. */
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

void
rt_sym_release(syn_ctx *c, RtSym *s, int free_base)
{
	for (int p = 0; p < c->nranks && s->peer; p++)
		if (p != c->rank && s->peer[p] && s->ipc)
			cuIpcCloseMemHandle(s->peer[p]);
	if (free_base && s->base)
		cuMemFree(s->base);
	free(s->peer);
	free(s);
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
	s->bytes = bytes;
	r = rt_cu(c, cuMemAlloc(&s->base, bytes ? bytes : 1), "cuMemAlloc (symmetric)");
	if (!r)
		r = rt_cu(c, cuMemsetD8(s->base, 0, bytes ? bytes : 1), "cuMemsetD8 (symmetric)");
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
