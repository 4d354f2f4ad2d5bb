/* runtime/rt_p2p.c -- the `p2p` backend: every collective by one kernel
 * of libsyncrt's own (runtime/rt_p2p.cu) that reads the peers' send
 * buffers through symmetric memory and writes only this rank's recv: the
 * pull form of a one-shot all_reduce (vLLM's and TensorRT-LLM's small-
 * message all-reduce), reduce_scatter, all_gather, all_to_all and shift.
 * It runs where the peers' memory is mapped: the GPUs of one process (peer
 * access), the processes of one node (CUDA IPC), or two ranks on one GPU
 * (one process: the only backend that can, NCCL refuses a GPU twice).
 *
 * A chunk on the comm stream, between two flag handshakes like the copy
 * engine's (runtime/rt_ce.c), on flags of its own:
 *
 *   1. tell each rank that reads my send that it is ready (my comm lane
 *      has passed everything before this chunk);
 *   2. wait until each rank whose send I read has said the same;
 *   3. the kernel: loads from the peers, stores into my recv;
 *   4. tell each rank I read from that I am done with its send;
 *   5. wait until each rank that reads my send is done with it, so nothing
 *      after this chunk on my lanes overwrites it under them.
 *
 * Arrival of rank p is flag nflags + 2P + p, completion nflags + 3P + p,
 * holding the number of p2p collectives so far (every rank counts alike).
 * With SYNC_P2P_KFLAGS=1 the kernel does the same handshakes itself
 * (runtime/rt_p2p.h): one launch a chunk instead of four stream operations
 * and a launch.
 * A pushed reduce_scatter (CommChunk.push: the peers' matmul stored their
 * blocks for this rank into its own send and raised the flags the step
 * waited for) skips 1 and 2 and adds its own slots; 4 and 5 keep a peer's
 * next call from storing into them before this rank has read them.
 * A peer that never arrives is a stuck wait the watchdog names (rank,
 * flag, chunk) -- never a hang.  Send buffers must be inside syn_alloc
 * buffers, at the same offset on every rank (as the copy engine's recv). */
#define RT_CUDA 1
#include "rt.h"
#include "rt_p2p.h"

#include <stdlib.h>
#include <string.h>

enum { P2P_THREADS = 512 };

/* The backend: its kernels, loaded when the context is set up (loading a
 * module beside a running persistent kernel is not something to find out
 * about mid-operator), or why they are not there. */
typedef struct RtP2p {
	RtBe be;
	syn_kernel *reduce, *copy;
	uint64_t blocks; /* kflags: blocks of every p2p kernel so far, the value its counter reaches */
	char why[160];
} RtP2p;

static CUdeviceptr
flag_of(const syn_ctx *c, int owner, int idx)
{
	return c->flags->peer[owner] ? c->flags->peer[owner] + (CUdeviceptr)idx * 8 : 0;
}

static int
refuse(syn_ctx *c, const CommChunk *ch, int status, const char *why, int p)
{
	return rt_seterr(c, status, "rank %d: p2p backend: chunk %d (%s): %s%s", c->rank, ch->id, rt_op_name(ch->op), why,
	                 p >= 0 && strcmp(c->node, c->peer_node + (size_t)p * RT_NODELEN) ? " (it is on another node)" : "");
}

/* The kernel's arguments from the plan (runtime/rt_plan.c), each source a
 * peer's send as mapped here; everything checked before anything is
 * enqueued, so a refusal leaves the context usable. */
static int
kernel_args(syn_ctx *c, const CommChunk *ch, const RtP2pPlan *p, RtP2pArgs *a)
{
	int G = ch->gsize ? ch->gsize : c->nranks;
	size_t es = rt_dtype_size(ch->dt), ss = (ch->send_stride ? ch->send_stride : ch->count) * es;
	size_t sbytes = comm_colls[ch->op].send ? ss * (size_t)(G - 1) + ch->count * es : ch->count * es;
	const RtSym *s = rt_sym_find(c, (CUdeviceptr)(uintptr_t)ch->send, sbytes);
	CUdeviceptr off = (CUdeviceptr)(uintptr_t)ch->send - (s ? s->base : 0);
	if (!s)
		return refuse(c, ch, SYN_EARG, "send is not inside a syn_alloc buffer, so the peers cannot read it", -1);
	memset(a, 0, sizeof *a);
	a->count = ch->count;
	a->dt = (int)ch->dt;
	a->red = (int)ch->red;
	a->n = p->n;
	for (int j = 0; j < p->n; j++) {
		if (!s->peer[p->src_rank[j]])
			return refuse(c, ch, SYN_EUNSUPPORTED, "a peer's memory is not mapped here; use the nccl backend",
			              p->src_rank[j]);
		a->src[j] = s->peer[p->src_rank[j]] + off + p->src_off[j];
		a->dst[j] = (CUdeviceptr)(uintptr_t)ch->recv + p->dst_off[j];
	}
	return SYN_OK;
}

static int
raise_at(syn_ctx *c, CUstream s, const int *who, int n, int base, uint64_t seq)
{
	int r;
	for (int i = 0; i < n; i++)
		if ((r = rt_flag_write(c, s, flag_of(c, who[i], base + c->rank), seq, "cuStreamWriteValue64 (p2p)")))
			return r;
	return SYN_OK;
}

static int
wait_for(syn_ctx *c, CUstream s, const int *who, int n, int base, uint64_t seq, int chunk, const char *what)
{
	char w[48];
	int r;
	for (int i = 0; i < n; i++) {
		int idx = base + who[i];
		rt_fmt(w, sizeof w, "p2p %s of rank %d", what, who[i]);
		if ((r = rt_flag_wait(c, s, c->flags->base + (CUdeviceptr)idx * 8, seq, "cuStreamWaitValue64 (p2p)")) ||
		    (r = rt_log(c, IK_WAIT, SYN_COMM, idx, c->rank, chunk, seq, w)))
			return r;
	}
	return SYN_OK;
}

/* kflags: the handshake's addresses for the kernel, the flag layout of
 * the stream form (the file's head comment); the block counter after the
 * backends' flags (RT_BE_WORDS). */
static void
kernel_flags(syn_ctx *c, const RtP2pPlan *p, uint64_t seq, RtP2pArgs *a)
{
	int arrive = c->nflags + 2 * c->nranks, done = c->nflags + 3 * c->nranks;
	a->kflags = 1;
	a->npart = p->npartners;
	a->seq = seq;
	a->errw = syn_errw_addr(c);
	a->timeout_ns = syn_timeout_ns(c);
	a->counter = c->flags->base + (CUdeviceptr)(c->nflags + RT_BE_FLAGS * c->nranks) * 8;
	for (int i = 0; i < p->npartners; i++) {
		a->raise_arrive[i] = flag_of(c, p->readers[i], arrive + c->rank);
		a->raise_done[i] = flag_of(c, p->reads[i], done + c->rank);
		a->wait_arrive_id[i] = (unsigned)(arrive + p->reads[i]);
		a->wait_done_id[i] = (unsigned)(done + p->readers[i]);
		a->wait_arrive[i] = c->flags->base + (CUdeviceptr)a->wait_arrive_id[i] * 8;
		a->wait_done[i] = c->flags->base + (CUdeviceptr)a->wait_done_id[i] * 8;
	}
}

/* CTAs of the kernel: the SMs kernels leave the comm backend (at least
 * one), no more than the data needs -- with kflags they wait for the
 * peers, so no more than those SMs, or a kernel beside it could hold the
 * SMs a peer's kernel needs.  A chunk the plan puts no compute beside
 * (CommChunk.alone, a serial plan) takes every SM of the rank in the
 * stream form (it never waits, so at worst it contends with a kernel it
 * does not depend on): on 16 SMs a pushed reduce_scatter's local add of 192 MiB
 * (8192 x 8192 bf16 at P = 2) is bound by the loads 16 SMs keep in flight,
 * not by HBM. */
static int
launch(RtP2p *pb, CUstream s, const CommChunk *ch, RtP2pArgs *a, int reduce)
{
	syn_ctx *c = pb->be.c;
	syn_kernel *k = reduce ? pb->reduce : pb->copy;
	unsigned long long per = (unsigned long long)P2P_THREADS * 16 / rt_dtype_size(ch->dt) * 4;
	unsigned long long want = (a->count * (unsigned long long)(reduce ? 1 : a->n) + per - 1) / per;
	unsigned grid = (unsigned)(ch->alone && !a->kflags ? c->sms : c->free_sms > 1 ? c->free_sms : 1);
	void *prm[] = {a};
	if (!k)
		return refuse(c, ch, SYN_EUNSUPPORTED, pb->why, -1);
	if (want < grid)
		grid = want ? (unsigned)want : 1;
	if (a->kflags)
		a->target = pb->blocks += grid;
	return rt_cu(c, cuLaunchKernel(k->fn, grid, 1, 1, P2P_THREADS, 1, 1, 0, s, prm, NULL),
	             reduce ? "cuLaunchKernel(rt_p2p_reduce)" : "cuLaunchKernel(rt_p2p_copy)");
}

static int
collective(CommBackend *b, const CommChunk *ch, void *lane)
{
	RtBe *be = (RtBe *)b;
	syn_ctx *c = be->c;
	CUstream s = lane;
	int arrive = c->nflags + 2 * c->nranks, done = c->nflags + 3 * c->nranks, n, r;
	const int *src, *readers;
	RtP2pPlan p;
	RtP2pArgs a;
	uint64_t seq;
	if (!((RtP2p *)be)->reduce)
		return refuse(c, ch, SYN_EUNSUPPORTED, ((RtP2p *)be)->why, -1);
	if (ch->push && (ch->op != CO_REDUCE_SCATTER || ch->gsize))
		return refuse(c, ch, SYN_EARG, "only a reduce_scatter of all ranks can be pushed", -1);
	if (rt_plan_p2p(ch, c->rank, c->nranks, &p)) {
		char why[96];
		rt_fmt(why, sizeof why, "more than %d ranks in the group (comm/backends.h); use the nccl backend",
		       comm_backends[BE_P2P].maxranks);
		return refuse(c, ch, SYN_EUNSUPPORTED, why, -1);
	}
	if ((r = kernel_args(c, ch, &p, &a)))
		return r;
	n = p.npartners, src = p.reads, readers = p.readers;
	for (int i = 0; i < n; i++)
		if (!flag_of(c, src[i], 0) || !flag_of(c, readers[i], 0))
			return refuse(c, ch, SYN_EUNSUPPORTED, "a peer's flags are not mapped here; use the nccl backend", src[i]);
	seq = ++be->seq;
	if (c->env.p2p_kflags && !ch->push) { /* one launch: the kernel waits and raises */
		kernel_flags(c, &p, seq, &a);
		if ((r = launch((RtP2p *)be, s, ch, &a, p.reduce)))
			return r;
		/* logged as the lane's waits, so a failing rank's watchdog names and
		 * releases them as it does the stream form's */
		for (int i = 0; i < n; i++)
			if ((r = rt_log(c, IK_WAIT, SYN_COMM, (int)a.wait_arrive_id[i], c->rank, ch->id, seq, "p2p kernel: arrival")) ||
			    (r = rt_log(c, IK_WAIT, SYN_COMM, (int)a.wait_done_id[i], c->rank, ch->id, seq, "p2p kernel: completion")))
				return r;
		return SYN_OK;
	}
	/* pushed: the data came with the flags the step waited for, steps 3 to 5 */
	if (!ch->push &&
	    ((r = raise_at(c, s, readers, n, arrive, seq)) || (r = wait_for(c, s, src, n, arrive, seq, ch->id, "arrival"))))
		return r;
	if (!(r = launch((RtP2p *)be, s, ch, &a, p.reduce)))
		r = raise_at(c, s, src, n, done, seq);
	if (!r)
		r = wait_for(c, s, readers, n, done, seq, ch->id, "completion");
	return r;
}

static void
load_kernels(RtP2p *pb)
{
	const syn_image *img = rt_p2p_image();
	syn_ctx *c = pb->be.c;
	char why[128];
	if (!rt_p2p_ptx[0] && !img->cubin_size) {
		rt_fmt(pb->why, sizeof pb->why, "libsyncrt was built without nvcc, so it has no p2p kernels; use the nccl backend");
		return;
	}
	if (rt_module_try(c, img, why, sizeof why)) {
		rt_fmt(pb->why, sizeof pb->why, "libsyncrt's p2p kernels did not load: %s; use the nccl backend", why);
		return;
	}
	if (syn_kernel_get(c, img, "rt_p2p_reduce", &pb->reduce) || syn_kernel_get(c, img, "rt_p2p_copy", &pb->copy)) {
		rt_fmt(pb->why, sizeof pb->why, "libsyncrt's p2p kernels: %s", c->err);
		pb->reduce = pb->copy = NULL;
	}
}

CommBackend *
rt_p2p_new(syn_ctx *c)
{
	RtBe *be = rt_be_new(c, BE_P2P);
	RtP2p *pb = be ? calloc(1, sizeof *pb) : NULL;
	if (!pb) {
		free(be);
		return NULL;
	}
	pb->be = *be;
	free(be);
	pb->be.b.collective = collective;
	if (c->nranks > 1)
		load_kernels(pb);
	else
		rt_fmt(pb->why, sizeof pb->why, "one rank: nothing to send");
	return &pb->be.b;
}
