/* runtime/rt_launch.c -- the launcher API that generated host code calls:
 * begin (fork the comm lane off the compute lane), kernel launches, flag
 * waits and raises as stream memory operations, chunk collectives through a
 * backend, end (join), and sync (the only call that waits on the GPU).
 * Everything enqueued is logged with an event after it, so the watchdog can
 * say where a lane is stuck and the trace can say when things happened. */
#define RT_CUDA 1
#include "rt.h"
#include "rt_p2p.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	LOG_COMPACT = 4096, /* syn_begin drops finished items beyond this */
	LOG_MAX = 1 << 16,  /* past this, items go unlogged until a sync */
	SYNC_TICK_NS = 2000000,
	NOTES_MS = 300, /* how long a failed sync listens for the other ranks' reports */
};

int
rt_entry(syn_ctx *c)
{
	if (!c)
		return SYN_EARG;
	if (c->failed)
		return SYN_EFAILED;
	/* Inside syn_stream_enter .. leave on the thread that entered, the
	 * context was checked at the enter: the calls between are one foreign
	 * call's (a launcher's), with nothing of the caller's in between. */
	if (!c->ctx_held || !pthread_equal(c->ctx_thread, pthread_self())) {
		CUcontext cur = NULL; /* reading the thread's context is cheaper than setting it */
		if ((cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != c->cu) && cuCtxSetCurrent(c->cu) != CUDA_SUCCESS)
			return rt_cu(c, cuCtxSetCurrent(c->cu), "cuCtxSetCurrent");
	}
	if (c->world && atomic_load(&c->world->failed)) {
		int r;
		pthread_mutex_lock(&c->mu);
		r = rt_watch_tick(c);
		pthread_mutex_unlock(&c->mu);
		return r;
	}
	return SYN_OK;
}

static int
event_get(syn_ctx *c, CUevent *e)
{
	if (c->nev) {
		*e = c->evpool[--c->nev];
		return SYN_OK;
	}
	if (c->cev == INT32_MAX)
		return SYN_ENOMEM;
	c->cev++;
	return rt_cu(c, cuEventCreate(e, c->trace ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

static int
grow_items(syn_ctx *c)
{
	int cap = c->citems ? 2 * c->citems : 256;
	RtItem *v = realloc(c->items, sizeof *v * (size_t)cap);
	CUevent *e = realloc(c->evpool, sizeof *e * (size_t)cap);
	if (v)
		c->items = v;
	if (e)
		c->evpool = e;
	if (!v || !e)
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory for the item log", c->rank);
	c->citems = cap;
	return SYN_OK;
}

/* The stream a lane's work goes on: a local op's kernels run on the
 * caller's stream (syn_begin_local). */
static CUstream
lane_stream(const syn_ctx *c, int lane)
{
	return lane == SYN_COMPUTE && c->in_op && c->local ? c->run : c->lane[lane];
}

int
rt_log(syn_ctx *c, RtItemKind kind, int lane, int flag, int peer, int chunk, uint64_t value, const char *what)
{
	RtItem *it;
	CUevent e;
	CUstream s = lane_stream(c, lane);
	int r;
	if (c->capturing) /* a captured event cannot be queried: replays are not logged */
		return SYN_OK;
	pthread_mutex_lock(&c->mu);
	if (c->nitems >= LOG_MAX || (c->nitems == c->citems && grow_items(c))) {
		pthread_mutex_unlock(&c->mu);
		return c->failed;
	}
	if ((r = event_get(c, &e)) || (r = rt_cu(c, cuEventRecord(e, s), "cuEventRecord"))) {
		pthread_mutex_unlock(&c->mu);
		return r;
	}
	it = &c->items[c->nitems++];
	memset(it, 0, sizeof *it);
	it->kind = kind;
	it->lane = lane;
	it->op = c->cur_op;
	it->flag = flag;
	it->peer = peer;
	it->chunk = chunk;
	it->value = value;
	it->done = e;
	it->stream = s;
	it->enq_ns = c->last_progress = rt_now_ns();
	rt_fmt(it->what, sizeof it->what, "%s", what ? what : "");
	pthread_mutex_unlock(&c->mu);
	return SYN_OK;
}

int
rt_flag_wait(syn_ctx *c, CUstream s, CUdeviceptr flag, uint64_t value, const char *what)
{
	return rt_cu(c, cuStreamWaitValue64(s, flag, value, CU_STREAM_WAIT_VALUE_GEQ), what);
}

/* The default write flag puts a system-scope fence before the store, so
 * what the stream did before (copies, NCCL) is visible to whoever sees it. */
int
rt_flag_write(syn_ctx *c, CUstream s, CUdeviceptr flag, uint64_t value, const char *what)
{
	return rt_cu(c, cuStreamWriteValue64(s, flag, value, CU_STREAM_WRITE_VALUE_DEFAULT), what);
}

/* ---- the CommBackend flag hooks, shared by nccl and ce ---- */

static int
be_wait(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id)
{
	RtBe *be = (RtBe *)b;
	(void)flag_id;
	return rt_flag_wait(be->c, lane, (CUdeviceptr)(uintptr_t)flag, epoch, "cuStreamWaitValue64");
}

static int
be_raise(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id)
{
	RtBe *be = (RtBe *)b;
	(void)flag_id;
	return rt_flag_write(be->c, lane, (CUdeviceptr)(uintptr_t)flag, epoch, "cuStreamWriteValue64");
}

static const char *
be_error(CommBackend *b)
{
	return ((RtBe *)b)->c->err;
}

RtBe *
rt_be_new(syn_ctx *c, CommBackendKind kind)
{
	RtBe *be = calloc(1, sizeof *be);
	if (!be)
		return NULL;
	be->c = c;
	be->b.name = comm_backends[kind].name;
	be->b.wait_flag = be_wait;
	be->b.raise_flag = be_raise;
	be->b.error = be_error;
	be->b.rank = c->rank;
	be->b.nranks = c->nranks;
	return be;
}

/* ================= one operator call ================= */

int
syn_abi_check(syn_ctx *c, int launcher_abi, const char *op)
{
	char msg[RT_ERRLEN];
	int r;
	if ((r = rt_entry(c)))
		return r;
	if ((r = syn_abi_match(launcher_abi, op, msg, sizeof msg)))
		return rt_seterr(c, r, "rank %d: %s", c->rank, msg);
	return SYN_OK;
}

int
syn_check_args(syn_ctx *c, const char *op, int n, const syn_tensor *t, const syn_argspec *s)
{
	char msg[RT_ERRLEN];
	int r;
	if ((r = rt_entry(c)))
		return r;
	for (int i = 0; i < n; i++)
		if ((r = syn_tensor_check(op, i, &t[i], &s[i], msg, sizeof msg)))
			return rt_seterr(c, r, "rank %d: %s", c->rank, msg);
	return SYN_OK;
}

/* The G of the levels this context holds communicators for, 0: none. */
static int
levels_held(const syn_ctx *c)
{
	return c->node_comm && c->cross_comm ? c->gpus : 0;
}

int
syn_check_topo(syn_ctx *c, const char *op, int nodes, int gpus)
{
	RtLevels l = {c->nranks, c->gpus, c->gpus_from, levels_held(c) > 0, c->share, c->device};
	char msg[RT_ERRLEN];
	int r;
	if ((r = rt_entry(c)))
		return r;
	if ((r = rt_topo_check(&l, op, nodes, gpus, msg, sizeof msg)))
		return rt_seterr(c, r, "rank %d: %s", c->rank, msg);
	return SYN_OK;
}

static int
op_new(syn_ctx *c, const char *name)
{
	RtOp *op;
	if (c->nops == c->cops) {
		int cap = c->cops ? 2 * c->cops : 16;
		RtOp *v = realloc(c->ops, sizeof *v * (size_t)cap);
		if (!v)
			return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
		c->ops = v;
		c->cops = cap;
	}
	op = &c->ops[c->nops];
	rt_fmt(op->name, sizeof op->name, "%s", name ? name : "?");
	op->epoch = ++c->epoch;
	op->anchor = -1;
	if (c->trace && !c->capturing && (op->anchor = rt_anchor(c)) < 0)
		return c->failed ? c->failed : SYN_ECUDA;
	c->cur_op = c->nops++;
	return SYN_OK;
}

static int
begin(syn_ctx *c, const char *name, int local)
{
	int r;
	pthread_mutex_lock(&c->mu);
	if (c->nitems > LOG_COMPACT && !c->capturing) /* no event queries under capture */
		rt_harvest(c);
	r = op_new(c, name);
	c->in_op = !r;
	c->local = local;
	pthread_mutex_unlock(&c->mu);
	return r;
}

int
syn_begin(syn_ctx *c, const char *name, uint64_t *epoch)
{
	int r;
	*epoch = 0;
	if ((r = rt_entry(c)) || (r = rt_stream_fork(c)) || (r = begin(c, name, 0)))
		return r;
	c->ext_clean = 0; /* this op's work is on the lanes */
	if ((r = rt_capture_flags(c, c->lane[SYN_COMPUTE], name))) {
		c->in_op = 0;
		return r;
	}
	/* the comm lane reads inputs the compute lane's earlier work produced */
	if ((r = rt_cu(c, cuEventRecord(c->fork, c->lane[SYN_COMPUTE]), "cuEventRecord(fork)")) ||
	    (r = rt_cu(c, cuStreamWaitEvent(c->lane[SYN_COMM], c->fork, 0), "cuStreamWaitEvent(fork)")) ||
	    (r = rt_log(c, IK_BEGIN, SYN_COMPUTE, -1, -1, -1, 0, name)))
		return r;
	*epoch = c->epoch;
	return SYN_OK;
}

/* An op with no communication: its kernels go on the caller's stream when
 * there is one (after what ran on the lanes before), else on the compute
 * lane; one log item (its end) unless tracing. */
int
syn_begin_local(syn_ctx *c, const char *name, uint64_t *epoch)
{
	int r;
	*epoch = 0;
	if ((r = rt_entry(c)))
		return r;
	if (c->has_ext && (r = rt_stream_join(c)))
		return r;
	c->run = c->has_ext ? c->ext : c->lane[SYN_COMPUTE];
	if ((r = begin(c, name, 1)))
		return r;
	if ((r = rt_capture_flags(c, c->run, name))) {
		c->in_op = 0;
		return r;
	}
	if (c->trace && (r = rt_log(c, IK_BEGIN, SYN_COMPUTE, -1, -1, -1, 0, name)))
		return r;
	*epoch = c->epoch;
	return SYN_OK;
}

static int
launch(syn_ctx *c, syn_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned smem, void **params,
       int coop)
{
	CUlaunchConfig cfg;
	CUlaunchAttribute at;
	char what[112];
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (!k || !grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2])
		return rt_seterr(c, SYN_EARG, "rank %d: syn_launch of %s: empty grid or block", c->rank,
		                 k ? k->name : "(no kernel)");
	if (smem > 48 * 1024 && smem > k->smem_set) {
		if ((r = rt_cu(c, cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
		               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")))
			return r;
		k->smem_set = smem;
	}
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = grid[0];
	cfg.gridDimY = grid[1];
	cfg.gridDimZ = grid[2];
	cfg.blockDimX = block[0];
	cfg.blockDimY = block[1];
	cfg.blockDimZ = block[2];
	cfg.sharedMemBytes = smem;
	cfg.hStream = lane_stream(c, SYN_COMPUTE);
	if (coop) {
		memset(&at, 0, sizeof at);
		at.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		at.value.cooperative = 1;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
	}
	{ /* the message is made only for a failure: formatting it costs a call ~0.3 us */
		CUresult e = cuLaunchKernelEx(&cfg, k->fn, params, NULL);
		if (e != CUDA_SUCCESS) {
			rt_fmt(what, sizeof what, "cuLaunchKernelEx(%s, grid %u, block %u, smem %u%s)", k->name, grid[0],
			       block[0], smem, coop ? ", cooperative: its CTAs meet in memory" : "");
			return rt_cu(c, e, what);
		}
	}
	if (c->local && !c->trace) /* its end names the op; nothing inside it waits */
		return SYN_OK;
	return rt_log(c, IK_LAUNCH, SYN_COMPUTE, -1, -1, -1, 0, k->name);
}

int
syn_launch(syn_ctx *c, syn_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned smem, void **params)
{
	return launch(c, k, grid, block, smem, params, 0);
}

int
syn_launch_group(syn_ctx *c, syn_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned smem,
                 void **params)
{
	return launch(c, k, grid, block, smem, params, 1);
}

int
syn_tmap_encode(syn_ctx *c, syn_tmap *m, const char *what, uint64_t addr, CommDType dt, const uint64_t dims[3],
                const uint64_t strides[2], const uint32_t box[3])
{
	static const CUtensorMapDataType types[] = {[CD_F16] = CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
	                                            [CD_BF16] = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16};
	cuuint64_t d[3] = {dims[0], dims[1], dims[2]}, st[2] = {strides[0], strides[1]};
	cuuint32_t bx[3] = {box[0], box[1], box[2]}, es[3] = {1, 1, 1};
	char msg[160];
	int r;
	_Static_assert(sizeof(syn_tmap) == sizeof(CUtensorMap), "syn_tmap is a CUtensorMap");
	if ((r = rt_entry(c)))
		return r;
	if (dt != CD_F16 && dt != CD_BF16)
		return rt_seterr(c, SYN_EARG, "rank %d: tensor map for %s: only 16-bit operands", c->rank, what);
	if (addr % 16 || strides[0] % 16 || strides[1] % 16)
		return rt_seterr(c, SYN_EARG,
		                 "rank %d: %s: TMA needs 16-byte aligned addresses and strides (address 0x%llx, "
		                 "row stride %llu B, batch stride %llu B)",
		                 c->rank, what, (unsigned long long)addr, (unsigned long long)strides[0],
		                 (unsigned long long)strides[1]);
	{
		CUresult e = cuTensorMapEncodeTiled((CUtensorMap *)m, types[dt], 3, (void *)(uintptr_t)addr, d, st, bx, es,
		                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
		                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
		if (e == CUDA_SUCCESS)
			return SYN_OK;
		rt_fmt(msg, sizeof msg, "cuTensorMapEncodeTiled(%s: %llux%llux%llu, box %ux%ux%u)", what,
		       (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)dims[2], box[0],
		       box[1], box[2]);
		return rt_cu(c, e, msg);
	}
}

int
syn_tmap_encode_at(syn_ctx *c, syn_tmap *m, const char *what, int rank, uint64_t addr, CommDType dt,
                   const uint64_t dims[3], const uint64_t strides[2], const uint32_t box[3])
{
	/* the whole tensor, 16-bit elements: it must lie in one symmetric buffer */
	size_t extent = (size_t)((dims[2] - 1) * strides[1] + (dims[1] - 1) * strides[0] + dims[0] * 2);
	const RtSym *s;
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (rank == c->rank)
		return syn_tmap_encode(c, m, what, addr, dt, dims, strides, box);
	if (!dims[0] || !dims[1] || !dims[2] || !(s = rt_sym_find(c, (CUdeviceptr)addr, extent)) || rank < 0 ||
	    rank >= c->nranks || !s->peer[rank])
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: %s: rank %d's copy of the %zu-byte tensor at 0x%llx is not mapped here (or the "
		                 "tensor is not inside one syn_alloc buffer), so the epilogue cannot store into it; compile "
		                 "with --no-push",
		                 c->rank, what, rank, extent, (unsigned long long)addr);
	return syn_tmap_encode(c, m, what, s->peer[rank] + (addr - s->base), dt, dims, strides, box);
}

/* codegen/codegen.h's PtxRoute */
typedef struct RtRoute {
	uint64_t flags;
	int32_t drow, dcol;
} RtRoute;

int
syn_routes(syn_ctx *c, const char *what, void *table, int flag, int64_t rows)
{
	RtRoute rt[RT_P2P_MAXPEERS];
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (c->nranks > RT_P2P_MAXPEERS)
		return rt_seterr(c, SYN_EUNSUPPORTED, "rank %d: %s: routes to %d ranks, at most %d", c->rank, what,
		                 c->nranks, RT_P2P_MAXPEERS);
	for (int q = 0; q < c->nranks; q++) {
		int64_t d = (int64_t)(c->rank - q) * rows;
		if (!(rt[q].flags = syn_flag_addr(c, q, flag)))
			return rt_seterr(c, SYN_EUNSUPPORTED,
			                 "rank %d: %s: rank %d's flags are not mapped here, so the epilogue cannot raise them; "
			                 "compile with --no-push",
			                 c->rank, what, q);
		if (d != (int32_t)d)
			return rt_seterr(c, SYN_EARG, "rank %d: %s: a shift of %lld rows", c->rank, what, (long long)d);
		rt[q].drow = (int32_t)d;
		rt[q].dcol = 0;
	}
	return syn_upload(c, table, rt, (size_t)c->nranks * sizeof rt[0]);
}

int
syn_wait(syn_ctx *c, syn_lane lane, int flag, uint64_t value, int chunk)
{
	char what[48];
	int r;
	if ((r = rt_entry(c)))
		return r;
	if ((unsigned)lane >= SYN_LANES || flag < 0 || flag >= c->nflags)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_wait: lane %d / flag %d out of range (%d flags)", c->rank,
		                 (int)lane, flag, c->nflags);
	rt_fmt(what, sizeof what, "wait flag %d", flag);
	if ((r = rt_flag_wait(c, c->lane[lane], c->flags->base + (CUdeviceptr)flag * 8, value,
	                      "cuStreamWaitValue64(flag)")))
		return r;
	return rt_log(c, IK_WAIT, lane, flag, c->rank, chunk, value, what);
}

int
syn_raise(syn_ctx *c, syn_lane lane, int rank, int flag, uint64_t value)
{
	uint64_t addr;
	char what[48];
	int r;
	if ((r = rt_entry(c)))
		return r;
	if ((unsigned)lane >= SYN_LANES || flag < 0 || flag >= c->nflags || rank < 0 || rank >= c->nranks)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_raise: lane %d / rank %d / flag %d out of range", c->rank,
		                 (int)lane, rank, flag);
	if (!(addr = syn_flag_addr(c, rank, flag)))
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: cannot raise flag %d of rank %d: its flags are not mapped here (another "
		                 "node, or no peer access)",
		                 c->rank, flag, rank);
	rt_fmt(what, sizeof what, "raise flag %d of rank %d", flag, rank);
	if ((r = rt_flag_write(c, c->lane[lane], addr, value, "cuStreamWriteValue64(flag)")))
		return r;
	return rt_log(c, IK_RAISE, lane, flag, rank, -1, value, what);
}

int
syn_coll(syn_ctx *c, syn_backend be, const CommChunk *ch)
{
	char err[RT_ERRLEN], what[48];
	int r;
	if ((r = rt_entry(c)))
		return r;
	if ((unsigned)be >= SYN_BACKENDS)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_coll: no backend %d", c->rank, (int)be);
	if ((r = rt_chunk_check(ch, c->rank, c->nranks, levels_held(c), err, sizeof err)))
		return rt_seterr(c, r, "%s", err);
	/* the levels' communicators are NCCL's; p2p and ce could take phases
	 * 0 and 2 later (docs/codegen.md) */
	if (ch->gsize && be != SYN_NCCL)
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: chunk %d: a sub-group (gsize %d, gstride %d) runs on the nccl backend only, not %s",
		                 c->rank, ch->id, ch->gsize, ch->gstride, comm_backends[be].name);
	if (ch->push && be != SYN_P2P)
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: chunk %d: a pushed reduce_scatter (its blocks already in this rank's send) runs on "
		                 "the p2p backend only, not %s",
		                 c->rank, ch->id, comm_backends[be].name);
	if (c->capturing && c->nranks > 1 && !(comm_backends[be].can & CC_CAPTURE))
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: the %s backend cannot run inside a CUDA graph capture across ranks (its peer "
		                 "handshakes count calls on the host): compile the op with --comm-backend nccl",
		                 c->rank, comm_backends[be].name);
	if ((r = c->be[be]->collective(c->be[be], ch, c->lane[SYN_COMM])))
		return r;
	rt_fmt(what, sizeof what, "%s %s %s x%zu", rt_backend_name(be), rt_op_name(ch->op), rt_dtype_name(ch->dt),
	       ch->count);
	return rt_log(c, IK_COLL, SYN_COMM, -1, -1, ch->id, ch->count, what);
}

int
syn_copy2d(syn_ctx *c, syn_lane lane, CommDType dt, void *dst, size_t dpitch, const void *src, size_t spitch,
           size_t width, size_t rows, int chunk)
{
	RtCopy2d k = {dt, dst, dpitch, src, spitch, width, rows, chunk};
	CUDA_MEMCPY2D m;
	char err[RT_ERRLEN], what[48];
	size_t es = rt_dtype_size(dt);
	int r;
	if ((r = rt_entry(c)))
		return r;
	if ((unsigned)lane >= SYN_LANES)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_copy2d: no lane %d", c->rank, (int)lane);
	if ((r = rt_copy2d_check(&k, c->rank, err, sizeof err)))
		return rt_seterr(c, r, "%s", err);
	memset(&m, 0, sizeof m);
	m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	m.srcDevice = (CUdeviceptr)(uintptr_t)src;
	m.srcPitch = spitch * es;
	m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	m.dstDevice = (CUdeviceptr)(uintptr_t)dst;
	m.dstPitch = dpitch * es;
	m.WidthInBytes = width * es;
	m.Height = rows;
	CUresult e = cuMemcpy2DAsync(&m, c->lane[lane]);
	/* The driver may refuse device pitches cuMemAllocPitch did not make
	 * (its documentation says so); then one plain copy per run, which
	 * takes any alignment.  Nothing was enqueued by the refusal. */
	if (e == CUDA_ERROR_INVALID_VALUE) {
		e = CUDA_SUCCESS;
		for (size_t i = 0; i < rows && e == CUDA_SUCCESS; i++)
			e = cuMemcpyDtoDAsync(m.dstDevice + i * m.dstPitch, m.srcDevice + i * m.srcPitch, m.WidthInBytes,
			                      c->lane[lane]);
	}
	if ((r = rt_cu(c, e, "cuMemcpy2DAsync (all_to_all packing)")))
		return r;
	rt_fmt(what, sizeof what, "2-D copy of %zu x %zu %s", rows, width, rt_dtype_name(dt));
	return rt_log(c, IK_COPY, lane, -1, -1, chunk, width * rows, what);
}

int
syn_end(syn_ctx *c)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (!c->local && ((r = rt_cu(c, cuEventRecord(c->join, c->lane[SYN_COMM]), "cuEventRecord(join)")) ||
	                  (r = rt_cu(c, cuStreamWaitEvent(c->lane[SYN_COMPUTE], c->join, 0), "cuStreamWaitEvent(join)"))))
		return r;
	if ((r = rt_log(c, IK_END, SYN_COMPUTE, -1, -1, -1, 0, "end")))
		return r;
	c->in_op = 0;
	c->local = 0;
	return SYN_OK;
}

static int
lanes_idle(syn_ctx *c)
{
	for (int l = 0; l < SYN_LANES; l++)
		if (cuStreamQuery(c->lane[l]) != CUDA_SUCCESS)
			return 0;
	return 1;
}

/* Wait for everything enqueued, with the watchdog; then read the kernels'
 * error word and harvest the trace. */
int
syn_sync(syn_ctx *c)
{
	uint64_t next_tick = 0;
	int r;
	if (!c)
		return SYN_EARG;
	if (c->failed) {
		rt_notes(c, NOTES_MS);
		return c->failed;
	}
	cuCtxSetCurrent(c->cu);
	for (;;) {
		uint64_t now = rt_now_ns();
		int idle = lanes_idle(c);
		if (idle || now >= next_tick) {
			pthread_mutex_lock(&c->mu);
			r = rt_watch_tick(c);
			idle = idle && c->first_pending >= c->nitems;
			pthread_mutex_unlock(&c->mu);
			if (r) { /* syn_finalize drains what is left */
				rt_notes(c, NOTES_MS);
				return r;
			}
			if (idle)
				break;
			next_tick = now + SYNC_TICK_NS;
		}
		usleep(idle ? 0 : 20);
	}
	pthread_mutex_lock(&c->mu);
	r = rt_watch_tick(c); /* the error word, read after the join */
	if (!r)
		r = rt_harvest(c);
	pthread_mutex_unlock(&c->mu);
	return r;
}

int
syn_mark(syn_ctx *c, int slot)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (slot < 0 || slot >= (int)(sizeof c->mark / sizeof c->mark[0]))
		return rt_seterr(c, SYN_EARG, "rank %d: syn_mark: slot %d is not in [0, 8)", c->rank, slot);
	if (!c->mark[slot] && (r = rt_cu(c, cuEventCreate(&c->mark[slot], CU_EVENT_DEFAULT), "cuEventCreate (syn_mark)")))
		return r;
	return rt_cu(c, cuEventRecord(c->mark[slot], c->lane[SYN_COMPUTE]), "cuEventRecord (syn_mark)");
}

int
syn_mark_ms(syn_ctx *c, int from, int to, float *ms)
{
	int r;
	*ms = 0;
	if ((r = rt_entry(c)))
		return r;
	if (from < 0 || to < 0 || from >= 8 || to >= 8 || !c->mark[from] || !c->mark[to])
		return rt_seterr(c, SYN_EARG, "rank %d: syn_mark_ms: slots %d and %d were not marked", c->rank, from, to);
	return rt_cu(c, cuEventElapsedTime(ms, c->mark[from], c->mark[to]), "cuEventElapsedTime (syn_mark_ms)");
}
