/* runtime/rt_plan.c -- what a backend does for one chunk, as a list of
 * primitive transfers.  Plans are plain data so the CPU tests can run them
 * on simulated ranks and compare with the CommChunk meaning (comm.h), which
 * is where strided blocks go wrong if they go wrong.
 *
 * nccl: the packed collective when the blocks are packed; otherwise what
 * NCCL can do on strided blocks inside one group: a reduce per block rooted
 * at its owner for reduce_scatter, send/recv pairs for all_gather and
 * shift; all_to_all is always send/recv pairs (own block by a local copy).
 * ce: copies only (no reductions), pushed into the peers' recv at the same
 * offset of the same symmetric allocation.
 * p2p: one kernel's pieces, pulled from the peers' send at the same offset
 * of the same symmetric allocation, written only into this rank's recv. */
#include "rt.h"

#include <string.h>

static size_t
stride_of(size_t stride, size_t count)
{
	return stride ? stride : count;
}

static int
add(RtXfer *x, int *n, int cap, RtXferKind kind, int peer, const char *src, char *dst, size_t count)
{
	if (*n >= cap)
		return -1;
	x[*n].kind = kind;
	x[*n].peer = peer;
	x[*n].src = src;
	x[*n].dst = dst;
	x[*n].count = count;
	(*n)++;
	return 0;
}

int
rt_plan_cap(int nranks)
{
	return 2 * nranks + 2;
}

/* Own block by copy, the others by a send and a receive. */
static int
exchange(const CommChunk *ch, int rank, int nranks, int send_blocks, RtXfer *x, int cap)
{
	size_t es = rt_dtype_size(ch->dt), ss = stride_of(ch->send_stride, ch->count) * es,
	       rs = stride_of(ch->recv_stride, ch->count) * es;
	const char *send = ch->send;
	char *recv = ch->recv;
	int n = 0, bad = 0;
	for (int p = 0; p < nranks; p++) {
		const char *src = send + (send_blocks ? (size_t)p * ss : 0);
		const char *mine = send + (send_blocks ? (size_t)rank * ss : 0);
		if (p == rank)
			bad |= add(x, &n, cap, XK_COPY, rank, mine, recv + (size_t)rank * rs, ch->count);
		else {
			bad |= add(x, &n, cap, XK_SEND, p, src, NULL, ch->count);
			bad |= add(x, &n, cap, XK_RECV, p, NULL, recv + (size_t)p * rs, ch->count);
		}
	}
	return bad ? -1 : n;
}

static int
strided_reduce_scatter(const CommChunk *ch, int nranks, RtXfer *x, int cap)
{
	size_t es = rt_dtype_size(ch->dt), ss = stride_of(ch->send_stride, ch->count) * es;
	int n = 0, bad = 0;
	for (int p = 0; p < nranks; p++)
		bad |= add(x, &n, cap, XK_REDUCE, p, (const char *)ch->send + (size_t)p * ss, ch->recv, ch->count);
	return bad ? -1 : n;
}

int
rt_plan_nccl(const CommChunk *ch, int rank, int nranks, RtXfer *x, int cap)
{
	int n = 0, packed_send = stride_of(ch->send_stride, ch->count) == ch->count,
	    packed_recv = stride_of(ch->recv_stride, ch->count) == ch->count;
	int dst = (rank + ch->shift) % nranks, src = ((rank - ch->shift) % nranks + nranks) % nranks;
	switch (ch->op) {
	case CO_ALL_REDUCE:
		return add(x, &n, cap, XK_ALL_REDUCE, 0, ch->send, ch->recv, ch->count) ? -1 : n;
	case CO_REDUCE_SCATTER:
		if (packed_send)
			return add(x, &n, cap, XK_REDUCE_SCATTER, 0, ch->send, ch->recv, ch->count) ? -1 : n;
		return strided_reduce_scatter(ch, nranks, x, cap);
	case CO_ALL_GATHER:
		if (packed_recv)
			return add(x, &n, cap, XK_ALL_GATHER, 0, ch->send, ch->recv, ch->count) ? -1 : n;
		return exchange(ch, rank, nranks, 0, x, cap);
	case CO_ALL_TO_ALL:
		/* always the group of sends and receives (what ncclAlltoAll does
		 * inside), over the p2p channels the context's warm-up connected;
		 * one form whether or not the blocks are packed */
		return exchange(ch, rank, nranks, 1, x, cap);
	case CO_SHIFT:
		if (add(x, &n, cap, XK_SEND, dst, ch->send, NULL, ch->count) ||
		    add(x, &n, cap, XK_RECV, src, NULL, ch->recv, ch->count))
			return -1;
		return n;
	case CO_COUNT: /* no case for another: a new collective fails to compile here */
		break;
	}
	return -1;
}

/* -1: the op needs arithmetic (all_reduce, reduce_scatter). */
int
rt_plan_ce(const CommChunk *ch, int rank, int nranks, RtXfer *x, int cap)
{
	size_t es = rt_dtype_size(ch->dt), ss = stride_of(ch->send_stride, ch->count) * es,
	       rs = stride_of(ch->recv_stride, ch->count) * es;
	const char *send = ch->send;
	char *recv = ch->recv;
	int n = 0, bad = 0;
	switch (ch->op) {
	case CO_ALL_REDUCE:
	case CO_REDUCE_SCATTER:
	case CO_COUNT:
		return -1;
	case CO_ALL_GATHER:
		for (int p = 0; p < nranks; p++)
			bad |= add(x, &n, cap, XK_COPY, p, send, recv + (size_t)rank * rs, ch->count);
		break;
	case CO_ALL_TO_ALL:
		for (int p = 0; p < nranks; p++)
			bad |= add(x, &n, cap, XK_COPY, p, send + (size_t)p * ss, recv + (size_t)rank * rs, ch->count);
		break;
	case CO_SHIFT:
		bad |= add(x, &n, cap, XK_COPY, (rank + ch->shift) % nranks, send, recv, ch->count);
		break;
	}
	return bad ? -1 : n;
}

int
rt_group_rank(const CommChunk *ch, int rank)
{
	return ch->gsize ? (rank / ch->gstride) % ch->gsize : rank;
}

/* The node's ranks are r / G alike, the cross-node group's r % G alike;
 * keyed by r, each keeps the world's order, so a rank's rank in its
 * level is rt_group_rank of a chunk on (G, 1) or (N, G). */
int
rt_level_color(int rank, int gpus, int cross)
{
	return cross ? rank % gpus : rank / gpus;
}

/* Member j of this rank's group (comm/comm.h). */
static int
member(const CommChunk *ch, int me, int j, int P)
{
	int gs = ch->gsize ? ch->gsize : P, st = ch->gsize ? ch->gstride : 1, i = (me / st) % gs;
	return me + (j - i) * st;
}

/* A p2p plan's arrays hold a group of the row's maxranks: it must have one. */
_Static_assert(RT_P2P_MAXPEERS > 0, "comm/backends.h: p2p's maxranks bounds its plans (runtime/rt_p2p.h)");

int
rt_plan_p2p(const CommChunk *ch, int rank, int nranks, RtP2pPlan *p)
{
	int G = ch->gsize ? ch->gsize : nranks, mi = (rank / (ch->gsize ? ch->gstride : 1)) % G;
	size_t es = rt_dtype_size(ch->dt), ss = stride_of(ch->send_stride, ch->count) * es,
	       rs = stride_of(ch->recv_stride, ch->count) * es;
	memset(p, 0, sizeof *p);
	if (!comm_backend_fits(BE_P2P, G)) /* its row's maxranks: the search's and the driver's limit too */
		return -1;
	p->reduce = ch->op == CO_ALL_REDUCE || ch->op == CO_REDUCE_SCATTER;
	if (ch->push) { /* the ranks' blocks for this rank are in its own send: slot j is rank j's */
		if (ch->op != CO_REDUCE_SCATTER || ch->gsize)
			return -1;
		p->n = G;
		for (int j = 0; j < G; j++) {
			p->src_rank[j] = rank;
			p->src_off[j] = (size_t)j * ss;
			if (j != rank)
				p->reads[p->npartners] = p->readers[p->npartners] = j, p->npartners++;
		}
		return 0;
	}
	switch (ch->op) {
	case CO_ALL_REDUCE:      /* recv = red over members of their send */
	case CO_REDUCE_SCATTER:  /* recv = red over members of their send block mi */
	case CO_ALL_GATHER:      /* recv block j = send of member j */
	case CO_ALL_TO_ALL:      /* recv block j = send block mi of member j */
		p->n = G;
		for (int j = 0; j < G; j++) {
			p->src_rank[j] = member(ch, rank, j, nranks);
			p->src_off[j] = ch->op == CO_REDUCE_SCATTER || ch->op == CO_ALL_TO_ALL ? (size_t)mi * ss : 0;
			p->dst_off[j] = p->reduce ? 0 : (size_t)j * rs;
		}
		for (int j = 0; j < G; j++)
			if (member(ch, rank, j, nranks) != rank) {
				p->reads[p->npartners] = p->readers[p->npartners] = member(ch, rank, j, nranks);
				p->npartners++;
			}
		return 0;
	case CO_SHIFT: /* recv = send of member mi - shift */
		p->n = 1;
		p->src_rank[0] = member(ch, rank, ((mi - ch->shift) % G + G) % G, nranks);
		p->reads[0] = p->src_rank[0];
		p->readers[0] = member(ch, rank, (mi + ch->shift) % G, nranks);
		p->npartners = p->src_rank[0] != rank;
		return 0;
	case CO_COUNT:
		break;
	}
	return -1;
}
