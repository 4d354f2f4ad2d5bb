/* runtime/rt_check.c -- what needs no GPU: a tensor argument checked
 * against the op's signature (the message names the argument), a chunk
 * against what the CommChunk contract in comm.h allows, and the call log's
 * rule for dropping the ops no item names (rt_ops_compact), so the CPU
 * tests reach them. */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
rt_ops_compact(RtOp *ops, int *nops, int *cur_op, int first)
{
	if (*cur_op >= 0 && *cur_op < first)
		first = *cur_op;
	if (*nops < RT_OPS_COMPACT || first <= 0 || first > *nops || first * 2 < *nops)
		return 0;
	memmove(ops, ops + first, sizeof *ops * (size_t)(*nops - first));
	*nops -= first;
	if (*cur_op >= 0)
		*cur_op -= first;
	return first;
}

static size_t
shape_str(char *out, size_t n, CommDType dt, int rank, const int64_t *dims)
{
	size_t k = rt_fmt(out, n, "%s[", rt_dtype_name(dt));
	for (int i = 0; i < rank && k < n; i++) {
		if (dims[i] < 0)
			k += rt_fmt(out + k, n - k, "%s?", i ? ", " : "");
		else
			k += rt_fmt(out + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
	}
	if (k < n)
		k += rt_fmt(out + k, n - k, "]");
	return k;
}

static int
shape_matches(const syn_tensor *t, const syn_argspec *s)
{
	if (t->dtype != s->dtype || t->rank != s->rank)
		return 0;
	for (int i = 0; i < s->rank; i++)
		if (s->dims[i] >= 0 && t->dims[i] != s->dims[i])
			return 0;
	return 1;
}

static int
contiguous(const syn_tensor *t)
{
	int64_t want = 1;
	int zero = 1;
	for (int i = 0; i < t->rank; i++)
		zero &= t->strides[i] == 0;
	if (zero)
		return 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		if (t->dims[i] != 1 && t->strides[i] != want)
			return 0;
		want *= t->dims[i];
	}
	return 1;
}

static int
shape_error(const char *op, int index, const syn_tensor *t, const syn_argspec *s, char *msg, size_t len)
{
	char want[160], got[160], why[96] = "";
	shape_str(want, sizeof want, s->dtype, s->rank, s->dims);
	if (t->rank < 0 || t->rank > SYN_MAX_DIMS)
		rt_fmt(got, sizeof got, "a tensor of rank %d", t->rank);
	else
		shape_str(got, sizeof got, t->dtype, t->rank, t->dims);
	if (t->dtype != s->dtype)
		rt_fmt(why, sizeof why, ": dtype is %s, expected %s", rt_dtype_name(t->dtype), rt_dtype_name(s->dtype));
	else if (t->rank != s->rank)
		rt_fmt(why, sizeof why, ": rank is %d, expected %d", t->rank, s->rank);
	else
		for (int i = 0; i < s->rank; i++)
			if (s->dims[i] >= 0 && t->dims[i] != s->dims[i]) {
				rt_fmt(why, sizeof why, ": dim %d is %lld, expected %lld", i, (long long)t->dims[i],
				       (long long)s->dims[i]);
				break;
			}
	rt_fmt(msg, len, "%s: argument %d '%s': expected %s%s%s%s, got %s%s", op, index, s->name, want,
	       s->global ? " (this rank's piece of " : "", s->global ? s->global : "", s->global ? ")" : "", got,
	       why);
	return SYN_EARG;
}

int
syn_tensor_check(const char *op, int index, const syn_tensor *t, const syn_argspec *s, char *msg, size_t len)
{
	op = op ? op : "?";
	if (!t) {
		rt_fmt(msg, len, "%s: argument %d '%s' is missing", op, index, s->name);
		return SYN_EARG;
	}
	if (t->rank < 0 || t->rank > SYN_MAX_DIMS || !shape_matches(t, s))
		return shape_error(op, index, t, s, msg, len);
	if (!t->data) {
		rt_fmt(msg, len, "%s: argument %d '%s' has no data (NULL device pointer)", op, index, s->name);
		return SYN_EARG;
	}
	if ((uintptr_t)t->data % 16) {
		rt_fmt(msg, len, "%s: argument %d '%s' at %p is not 16-byte aligned (kernels use 16-byte accesses)",
		       op, index, s->name, t->data);
		return SYN_EARG;
	}
	if (s->contiguous && !contiguous(t)) {
		size_t k = rt_fmt(msg, len, "%s: argument %d '%s' must be row-major contiguous; its strides are [", op,
		                  index, s->name);
		for (int i = 0; i < t->rank && k < len; i++)
			k += rt_fmt(msg + k, len - k, "%s%lld", i ? ", " : "", (long long)t->strides[i]);
		if (k < len)
			rt_fmt(msg + k, len - k, "] elements");
		return SYN_EARG;
	}
	msg[0] = 0;
	return SYN_OK;
}

static size_t
stride_of(size_t stride, size_t count)
{
	return stride ? stride : count;
}

int
rt_levels_split(int nranks, int gpus)
{
	return gpus > 1 && gpus < nranks && nranks % gpus == 0;
}

/* A chunk's sub-group (comm/comm.h): one of the two levels the context
 * holds communicators for -- the node, (G, 1), or the ranks of one local
 * index across the nodes, (N, G) -- or why not, in buf. */
static const char *
group_problem(const CommChunk *ch, int nranks, int gpus, char *buf, size_t n)
{
	if (ch->gsize < 0 || ch->gstride < 1 || (long long)ch->gsize * ch->gstride > nranks)
		rt_fmt(buf, n, "sub-group (gsize %d, gstride %d) does not fit %d ranks", ch->gsize, ch->gstride, nranks);
	else if (!gpus)
		rt_fmt(buf, n,
		       "sub-group (gsize %d, gstride %d) needs the node and cross-node communicators, and this context "
		       "has none (its ranks per node G are not set: syn_opts.gpus_per_node or LOCAL_WORLD_SIZE)",
		       ch->gsize, ch->gstride);
	else if ((ch->gsize == gpus && ch->gstride == 1) || (ch->gsize == nranks / gpus && ch->gstride == gpus))
		return NULL;
	else
		rt_fmt(buf, n,
		       "sub-group (gsize %d, gstride %d) is neither this context's node (%d, 1) nor its cross-node "
		       "group (%d, %d) of %d nodes x %d GPUs",
		       ch->gsize, ch->gstride, gpus, nranks / gpus, gpus, nranks / gpus, gpus);
	return buf;
}

int
rt_chunk_check(const CommChunk *ch, int rank, int nranks, int gpus, char *err, size_t n)
{
	const char *what = NULL;
	char buf[256];
	if (!ch) {
		rt_fmt(err, n, "rank %d: NULL chunk", rank);
		return SYN_EARG;
	}
	if ((unsigned)ch->op >= CO_COUNT)
		what = "unknown collective";
	else if (!rt_dtype_size(ch->dt) || (unsigned)ch->dt > CD_I32)
		what = "unknown dtype";
	else if ((unsigned)ch->red > CR_MIN)
		what = "unknown reduction";
	else if (ch->gsize && (what = group_problem(ch, nranks, gpus, buf, sizeof buf)))
		;
	else if (!ch->count)
		what = "count is 0";
	else if (!ch->send || !ch->recv)
		what = "send or recv is NULL";
	else if (stride_of(ch->send_stride, ch->count) < ch->count) {
		rt_fmt(buf, sizeof buf, "send blocks overlap: send_stride %zu < count %zu", ch->send_stride, ch->count);
		what = buf;
	} else if (stride_of(ch->recv_stride, ch->count) < ch->count) {
		rt_fmt(buf, sizeof buf, "recv blocks overlap: recv_stride %zu < count %zu", ch->recv_stride, ch->count);
		what = buf;
	} else if (ch->push && (ch->op != CO_REDUCE_SCATTER || ch->gsize))
		what = "only a reduce_scatter over all ranks can be pushed";
	else if (ch->alone != 0 && ch->alone != 1)
		what = "alone is neither 0 nor 1";
	else if (ch->op == CO_SHIFT && (ch->shift <= 0 || ch->shift >= (ch->gsize ? ch->gsize : nranks))) {
		int p = ch->gsize ? ch->gsize : nranks;
		rt_fmt(buf, sizeof buf, "shift %d is not in [1, %d] for %d ranks", ch->shift, p - 1, p);
		what = buf;
	}
	if (!what)
		return SYN_OK;
	rt_fmt(err, n, "rank %d: chunk %d (%s %s x%zu): %s", rank, ch->id, rt_op_name(ch->op), rt_dtype_name(ch->dt),
	       ch->count, what);
	return SYN_EARG;
}

int
rt_copy2d_check(const RtCopy2d *k, int rank, char *err, size_t n)
{
	const char *what = NULL;
	if (!k->dst || !k->src)
		what = "dst or src is NULL";
	else if (!rt_dtype_size(k->dt) || (unsigned)k->dt > CD_I32)
		what = "unknown dtype";
	else if (!k->width || !k->rows)
		what = "width or rows is 0";
	else if (k->spitch < k->width || k->dpitch < k->width)
		what = "a pitch is smaller than the width (runs would overlap)";
	if (!what)
		return SYN_OK;
	rt_fmt(err, n, "rank %d: chunk %d: 2-D copy of %zu runs of %zu (pitches %zu -> %zu): %s", rank, k->chunk, k->rows,
	       k->width, k->spitch, k->dpitch, what);
	return SYN_EARG;
}

/* Where G came from, for messages. */
static const char *
levels_from(const RtLevels *l)
{
	return l->from ? l->from : "not given: one node";
}

int
rt_topo_check(const RtLevels *l, const char *op, int nodes, int gpus, char *err, size_t n)
{
	op = op ? op : "?";
	if (l->share > 1)
		rt_fmt(err, n,
		       "%s: compiled for --topo %dx%d, whose all_reduce phases run on NCCL's node and cross-node "
		       "communicators, but %d ranks share GPU %d here and NCCL has no communicator for them; compile it "
		       "without --topo",
		       op, nodes, gpus, l->share, l->device);
	else if (nodes * gpus != l->nranks || l->gpus != gpus)
		rt_fmt(err, n,
		       "%s: compiled for --topo %dx%d (%d GPUs per node), but this context has %d ranks and %d per node "
		       "(%s); set syn_opts.gpus_per_node (or LOCAL_WORLD_SIZE) to %d, or compile for --topo %dx%d",
		       op, nodes, gpus, gpus, l->nranks, l->gpus ? l->gpus : l->nranks, levels_from(l), gpus,
		       l->gpus > 0 && l->nranks % l->gpus == 0 ? l->nranks / l->gpus : 1, l->gpus > 0 ? l->gpus : l->nranks);
	else if (!l->split)
		rt_fmt(err, n, "%s: compiled for --topo %dx%d, but this context holds no node and cross-node communicators",
		       op, nodes, gpus);
	else {
		err[0] = 0;
		return SYN_OK;
	}
	return SYN_EARG;
}

int
rt_range_in(uint64_t base, size_t size, uint64_t p, size_t bytes)
{
	if (!size)
		return p == base && !bytes;
	return p >= base && p - base < size && bytes <= size - (p - base);
}

int
syn_abi_match(int launcher_abi, const char *op, char *msg, size_t len)
{
	if (launcher_abi == SYN_ABI)
		return SYN_OK;
	snprintf(msg, len,
	         "%s: its launcher was compiled against syncrt.h ABI %d, but this libsyncrt is ABI %d: compile the "
	         "op again with the syncc of this libsyncrt (or link the libsyncrt it was built with)",
	         op ? op : "?", launcher_abi, SYN_ABI);
	return SYN_EUNSUPPORTED;
}

/* Ranks of one process on one GPU share its context, and so its hardware
 * work queues (CUDA_DEVICE_MAX_CONNECTIONS): streams past the queues'
 * number share them in creation order, and a rank's stream waiting for a
 * peer's flag then stalls the peer's kernel queued behind it in the same
 * queue, which would have raised the flag -- a hang (with one queue, five
 * of five pushed gemm_rs runs of two ranks on one H100 hung so,
 * 2026-12-06: tests/gpu/conn-check).  Each rank has RT_STREAMS streams,
 * and the legacy stream (uploads) takes one more. */
enum { RT_STREAMS = 4, RT_MAX_QUEUES = 32 /* CUDA_DEVICE_MAX_CONNECTIONS' ceiling */ };
int
rt_queue_check(int rank, int share, int dev, const char *conns, char *err, size_t n)
{
	long q = conns && *conns ? strtol(conns, NULL, 10) : 8; /* the driver's default */
	long need = (long)RT_STREAMS * share + 1;
	if (share < 2 || q >= need)
		return SYN_OK;
	if (need > RT_MAX_QUEUES)
		snprintf(err, n,
		         "rank %d: %d ranks share GPU %d in this process, whose %d streams need %ld hardware queues, more than "
		         "the driver's %d: a stream waiting for a peer's flag could stall the peer's kernel queued behind it "
		         "(a hang); at most %d ranks of one process can share a GPU",
		         rank, share, dev, share * RT_STREAMS, need, RT_MAX_QUEUES, (RT_MAX_QUEUES - 1) / RT_STREAMS);
	else
		snprintf(err, n,
		         "rank %d: %d ranks share GPU %d in this process, whose %d streams need %ld hardware queues, but "
		         "CUDA_DEVICE_MAX_CONNECTIONS=%s gives %ld: a stream waiting for a peer's flag would stall the peer's "
		         "kernel queued behind it (a hang); set it to %ld or more (at most %d), or fewer ranks a GPU",
		         rank, share, dev, share * RT_STREAMS, need, conns && *conns ? conns : "(unset)", q, need,
		         RT_MAX_QUEUES);
	return SYN_EUNSUPPORTED;
}
