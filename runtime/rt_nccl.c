/* runtime/rt_nccl.c -- the `nccl` backend: one chunk as NCCL calls on the
 * comm stream (the plan in rt_plan.c), in one group when it takes several.
 * The communicator is non-blocking, so every call is settled before the
 * next, under the context's lock so the watchdog never aborts it mid-call. */
#define RT_CUDA 1
#include "rt.h"

#include <stdlib.h>

/* Same order as CommDType / CommRed. */
static const ncclDataType_t dtypes[] = {
	[CD_F32] = ncclFloat32,
	[CD_F16] = ncclFloat16,
	[CD_BF16] = ncclBfloat16,
	[CD_I32] = ncclInt32,
};
static const ncclRedOp_t reds[] = {[CR_SUM] = ncclSum, [CR_MAX] = ncclMax, [CR_MIN] = ncclMin};

ncclDataType_t
rt_nccl_dtype(CommDType dt)
{
	return dtypes[dt];
}

ncclRedOp_t
rt_nccl_red(CommRed r)
{
	return reds[r];
}

/* The communicator of a chunk's group (rt_chunk_check took only these):
 * the world, the node (gstride 1) or the cross-node ranks. */
static ncclComm_t *
comm_of(syn_ctx *c, const CommChunk *ch)
{
	return !ch->gsize ? &c->comm : ch->gstride == 1 ? &c->node_comm : &c->cross_comm;
}

static ncclResult_t
issue(syn_ctx *c, const RtXfer *x, const CommChunk *ch, CUstream s, int *cuerr)
{
	ncclDataType_t dt = dtypes[ch->dt];
	ncclRedOp_t red = reds[ch->red];
	ncclComm_t comm = *comm_of(c, ch);
	switch (x->kind) {
	case XK_ALL_REDUCE:
		return ncclAllReduce(x->src, x->dst, x->count, dt, red, comm, s);
	case XK_REDUCE_SCATTER:
		return ncclReduceScatter(x->src, x->dst, x->count, dt, red, comm, s);
	case XK_ALL_GATHER:
		return ncclAllGather(x->src, x->dst, x->count, dt, comm, s);
	case XK_REDUCE:
		return ncclReduce(x->src, x->dst, x->count, dt, red, x->peer, comm, s);
	case XK_SEND:
		return ncclSend(x->src, x->count, dt, x->peer, comm, s);
	case XK_RECV:
		return ncclRecv(x->dst, x->count, dt, x->peer, comm, s);
	case XK_COPY:
		*cuerr = rt_cu(c,
		               cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)x->dst, (CUdeviceptr)(uintptr_t)x->src,
		                                 x->count * rt_dtype_size(ch->dt), s),
		               "cuMemcpyDtoDAsync (own block)");
		return ncclSuccess;
	}
	return ncclInvalidArgument;
}

static int
run_plan(syn_ctx *c, const RtXfer *x, int n, const CommChunk *ch, CUstream s, const char *what)
{
	ncclResult_t res = ncclSuccess;
	int cuerr = 0, r;
	if (n > 1 && (r = rt_nccl(c, ncclGroupStart(), "ncclGroupStart")))
		return r;
	for (int i = 0; i < n && res == ncclSuccess && !cuerr; i++) {
		res = issue(c, &x[i], ch, s, &cuerr);
		if (n == 1) /* alone: may answer ncclInProgress, settle it */
			return cuerr ? cuerr : rt_nccl_settle_on(c, comm_of(c, ch), res, what, c->env.timeout_ms);
	}
	if (n > 1) {
		ncclResult_t g = ncclGroupEnd(); /* always close the group */
		if (res == ncclSuccess)
			res = g;
	}
	if (cuerr)
		return cuerr;
	return rt_nccl_settle_on(c, comm_of(c, ch), res, what, c->env.timeout_ms);
}

static int
collective(CommBackend *b, const CommChunk *ch, void *lane)
{
	syn_ctx *c = ((RtBe *)b)->c;
	int cap = rt_plan_cap(c->nranks), n, r;
	RtXfer *x = malloc(sizeof *x * (size_t)cap);
	char what[128];
	if (!x)
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
	/* a group's plan is the world's plan of a world of its members: peers
	 * are ranks in the group's communicator */
	n = rt_plan_nccl(ch, rt_group_rank(ch, c->rank), ch->gsize ? ch->gsize : c->nranks, x, cap);
	rt_fmt(what, sizeof what, "nccl %s of chunk %d (%s x%zu)%s", rt_op_name(ch->op), ch->id, rt_dtype_name(ch->dt),
	       ch->count, !ch->gsize ? "" : ch->gstride == 1 ? " on the node communicator" : " on the cross-node communicator");
	if (n < 0) {
		free(x);
		return rt_seterr(c, SYN_EUNSUPPORTED, "rank %d: %s: no NCCL form", c->rank, what);
	}
	if (!c->comm && c->share > 1 && !c->failed) {
		free(x);
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: %s: %d ranks share GPU %d and NCCL cannot run two ranks on one GPU, so there is "
		                 "no communicator; use the p2p or ce backend (--comm-backend p2p)",
		                 c->rank, what, c->share, c->device);
	}
	pthread_mutex_lock(&c->mu);
	r = *comm_of(c, ch) ? run_plan(c, x, n, ch, lane, what) : (c->failed ? c->failed : SYN_EFAILED);
	pthread_mutex_unlock(&c->mu);
	free(x);
	return r;
}

CommBackend *
rt_nccl_new(syn_ctx *c)
{
	RtBe *be = rt_be_new(c, BE_NCCL);
	if (!be)
		return NULL;
	be->b.collective = collective;
	return &be->b;
}
