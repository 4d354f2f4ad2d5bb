/* runtime/rt_ce.c -- the `ce` backend: all_gather, all_to_all and shift by
 * driver copies over peer access.  They need SMs after all: on 2xH200 they
 * did not finish while a kernel held every SM, and slowed with fewer than 8
 * left, so kernels beside them leave some (codegen/host.c, emit_ce_share).
 * Each rank pushes its blocks into the peers' recv (the same offset of the
 * same symmetric allocation there), between two flag handshakes on the
 * comm stream:
 *
 *   1. tell each rank that writes into me that I have arrived (my recv is
 *      free: my comm lane has passed everything before this chunk);
 *   2. wait until each rank I write into has arrived;
 *   3. copy;
 *   4. tell each rank I wrote into that its block is there (the write's
 *      system fence orders it after the copies);
 *   5. wait until every rank that writes into me has said so.
 *
 * The handshake flags are the ce's own (ctx->flags[nflags...]): arrival of
 * rank p at index nflags + p, completion at nflags + nranks + p, holding the
 * number of ce collectives so far, which every rank counts alike. */
#define RT_CUDA 1
#include "rt.h"

#include <stdlib.h>
#include <string.h>

static CUdeviceptr
flag_of(const syn_ctx *c, int owner, int idx)
{
	return c->flags->peer[owner] ? c->flags->peer[owner] + (CUdeviceptr)idx * 8 : 0;
}

/* Who writes into me, whom I write into. */
static int
partners(const syn_ctx *c, const CommChunk *ch, int *writers, int *targets)
{
	int n = 0, P = c->nranks, r = c->rank;
	if (ch->op == CO_SHIFT) {
		writers[0] = ((r - ch->shift) % P + P) % P;
		targets[0] = (r + ch->shift) % P;
		return 1;
	}
	for (int p = 0; p < P; p++)
		if (p != r) {
			writers[n] = targets[n] = p;
			n++;
		}
	return n;
}

static int
unmapped(syn_ctx *c, const CommChunk *ch, int p)
{
	int other = strcmp(c->node, c->peer_node + (size_t)p * RT_NODELEN) != 0;
	return rt_seterr(c, SYN_EUNSUPPORTED,
	                 "rank %d: ce backend: chunk %d (%s) needs the memory of rank %d, which is not mapped here "
	                 "(%s); use the nccl backend",
	                 c->rank, ch->id, rt_op_name(ch->op), p,
	                 other ? "it is on another node" : "no peer access or CUDA IPC between the two");
}

/* Everything checked before anything is enqueued: refusals leave the
 * context usable. */
static int
check(syn_ctx *c, const CommChunk *ch, const RtXfer *x, int n, RtSym **out)
{
	size_t es = rt_dtype_size(ch->dt);
	RtSym *s = NULL;
	for (int i = 0; i < n; i++) {
		CUdeviceptr d = (CUdeviceptr)(uintptr_t)x[i].dst;
		s = rt_sym_find(c, d, x[i].count * es);
		if (!s)
			return rt_seterr(c, SYN_EARG,
			                 "rank %d: ce backend: chunk %d (%s): recv %p is not inside a syn_alloc buffer, "
			                 "so the peers cannot write into it",
			                 c->rank, ch->id, rt_op_name(ch->op), ch->recv);
		if (!s->peer[x[i].peer] || !flag_of(c, x[i].peer, 0))
			return unmapped(c, ch, x[i].peer);
	}
	*out = s;
	return SYN_OK;
}

static int
handshake_raise(syn_ctx *c, CUstream s, const int *who, int n, int base, uint64_t seq)
{
	int r;
	for (int i = 0; i < n; i++)
		if ((r = rt_flag_write(c, s, flag_of(c, who[i], base + c->rank), seq, "cuStreamWriteValue64 (ce)")))
			return r;
	return SYN_OK;
}

static int
handshake_wait(syn_ctx *c, CUstream s, const int *who, int n, int base, uint64_t seq, int chunk, const char *what)
{
	char w[48];
	int r;
	for (int i = 0; i < n; i++) {
		int idx = base + who[i];
		rt_fmt(w, sizeof w, "ce %s of rank %d", what, who[i]);
		if ((r = rt_flag_wait(c, s, c->flags->base + (CUdeviceptr)idx * 8, seq, "cuStreamWaitValue64 (ce)")) ||
		    (r = rt_log(c, IK_WAIT, SYN_COMM, idx, c->rank, chunk, seq, w)))
			return r;
	}
	return SYN_OK;
}

static int
copies(syn_ctx *c, CUstream s, const CommChunk *ch, const RtXfer *x, int n, const RtSym *sym)
{
	size_t es = rt_dtype_size(ch->dt);
	int r;
	for (int i = 0; i < n; i++) {
		CUdeviceptr d = (CUdeviceptr)(uintptr_t)x[i].dst;
		CUdeviceptr at = sym->peer[x[i].peer] + (d - sym->base);
		if ((r = rt_cu(c, cuMemcpyDtoDAsync(at, (CUdeviceptr)(uintptr_t)x[i].src, x[i].count * es, s),
		               "cuMemcpyDtoDAsync (ce)")))
			return r;
	}
	return SYN_OK;
}

static int
collective(CommBackend *b, const CommChunk *ch, void *lane)
{
	RtBe *be = (RtBe *)b;
	syn_ctx *c = be->c;
	CUstream s = lane;
	int cap = rt_plan_cap(c->nranks), n, np, r;
	RtXfer *x = malloc(sizeof *x * (size_t)cap);
	int *writers = malloc(sizeof(int) * (size_t)c->nranks), *targets = malloc(sizeof(int) * (size_t)c->nranks);
	int arrive = c->nflags, done = c->nflags + c->nranks;
	RtSym *sym = NULL;
	uint64_t seq;
	if (!x || !writers || !targets) {
		r = rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
		goto out;
	}
	n = rt_plan_ce(ch, c->rank, c->nranks, x, cap);
	if (n < 0) {
		r = rt_seterr(c, SYN_EUNSUPPORTED,
		              "rank %d: ce backend cannot do chunk %d: %s needs arithmetic and the copy engine only "
		              "moves bytes; use the nccl backend",
		              c->rank, ch->id, rt_op_name(ch->op));
		goto out;
	}
	if ((r = check(c, ch, x, n, &sym)))
		goto out;
	np = partners(c, ch, writers, targets);
	for (int i = 0; i < np; i++)
		if (!flag_of(c, writers[i], 0)) {
			r = unmapped(c, ch, writers[i]);
			goto out;
		}
	seq = ++be->seq;
	if (!(r = handshake_raise(c, s, writers, np, arrive, seq)) &&
	    !(r = handshake_wait(c, s, targets, np, arrive, seq, ch->id, "arrival")) &&
	    !(r = copies(c, s, ch, x, n, sym)) && !(r = handshake_raise(c, s, targets, np, done, seq)))
		r = handshake_wait(c, s, writers, np, done, seq, ch->id, "completion");
out:
	free(x);
	free(writers);
	free(targets);
	return r;
}

CommBackend *
rt_ce_new(syn_ctx *c)
{
	RtBe *be = rt_be_new(c, BE_CE);
	if (!be)
		return NULL;
	be->b.collective = collective;
	return &be->b;
}
