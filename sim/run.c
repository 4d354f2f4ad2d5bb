/* sim/run.c -- the oracle and SPMD execution on simulated ranks.
 *
 * The oracle evaluates an op on global tensors, in order, ignoring
 * placements: an op's meaning is a function on global tensors (DESIGN
 * §2.4), so a @partial(sum) value *is* its sum and every collective but
 * `shift` is the identity.  It runs the IR as sema made it, before any
 * graph pass, so a wrong pass cannot hide by changing both sides.
 *
 * SPMD execution runs the IR after the passes on P threads, each holding
 * only its local shards; every op has a local form given by the placement
 * table, and collectives go through the `sim` CommBackend.  The outputs
 * are assembled from the ranks' shards and compared with the oracle. */
#include "sim.h"
#include "../sched/sched.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- deliberately wrong lowerings (tests only: a checker that cannot
 * fail is not a checker) ---- */

static const char *const break_names[SIM_NBREAK] = {
	"matmul-noslice", /* a @repl matmul operand is not sliced to the other's split */
	"ew-noslice",     /* nor an elementwise one */
	"ar-local",       /* all_reduce returns the local partial sum */
	"rs-block",       /* reduce_scatter keeps the next rank's block */
	"ag-order",       /* all_gather places the blocks in reverse order */
	"a2a-order",      /* all_to_all reverses the received blocks */
	"shift-back",     /* shift goes the other way round the ring */
	"mean-local",     /* mean of a split dim divides by the local length */
	"scatter-block",  /* a local scatter keeps block 0 on every rank */
	"comm-order",     /* rank 0 runs its comm lane's chunks backwards (plans only) */
	"p2p-flag",       /* rank 0 raises no arrival flag at its first p2p chunk (plans only) */
	"attn-norescale", /* an attention region's online softmax keeps sums made against an older max */
	"matmul-bt",      /* a matmul reading transpose(w) in place (trans_b) reads w as B itself */
	"push-raise",     /* rank 0's bands push their rows but raise no owner's flag (plans only) */
	"push-slot",      /* rank 0's bands push their rows into rank 1's slot (plans only) */
};

bool
sim_parse_breaks(const char *names, SimBreak *b, char *bad, size_t n)
{
	memset(b, 0, sizeof *b);
	while (names && *names) {
		size_t k = strcspn(names, ",");
		bool found = false;
		for (size_t i = 0; i < NELEM(break_names); i++)
			if (strlen(break_names[i]) == k && strncmp(break_names[i], names, k) == 0)
				b->on[i] = found = true;
		if (!found) {
			snprintf(bad, n, "%.*s", (int)(k < 64 ? k : 64), names);
			return false;
		}
		names += k + (names[k] == ',');
	}
	return true;
}

bool
sim_break_known(const char *names, char *bad, size_t n)
{
	SimBreak b;
	return sim_parse_breaks(names, &b, bad, n);
}

/* ---- inputs ---- */

uint64_t
sim_shard_rng(uint64_t seed)
{
	return seed ^ 0x5851f42d4c957f2dull;
}

/* A @partial(sum) input is its shards' sum, and the last shard, the
 * input less the others, is rounded to the dtype: so the input becomes
 * the exact sum of the shards sim_make_shards will make (the same random
 * pieces, whose sum a double holds exactly), which makes them again.
 * Otherwise the ranks sum pieces that miss the oracle's input by up to
 * half an ulp of the last piece's magnitude, and a reduction that cancels
 * afterwards magnified that into a mismatch (gensyn seed 1796614057:
 * mean then sum of an all_reduce of bf16 partials, 4.4% off at P = 4,
 * 2e-7 in f32; the all_reduce's own roundings are widen's). */
static void
partial_sums_exact(const Func *f, Tensor *in, uint64_t seed)
{
	int P = f->nranks;
	uint64_t rng = sim_shard_rng(seed);
	Tensor **shard = xcalloc((size_t)P, sizeof *shard);
	for (int r = 0; r < P; r++)
		shard[r] = xcalloc((size_t)f->nin + 1, sizeof **shard);
	for (int i = 0; i < f->nin; i++) { /* every input, as the ranks' runs do: the same draws */
		const Type *t = &f->ins[f->in[i]].ty;
		sim_make_shards(f, &in[i], i, shard, &rng);
		for (int64_t e = 0; e < in[i].n && t->pl.kind == PL_PARTIAL && t->pl.red == RED_SUM; e++) {
			double s = 0;
			for (int r = 0; r < P; r++)
				s += shard[r][i].v[e];
			in[i].v[e] = s;
		}
		for (int r = 0; r < P; r++)
			sim_free(&shard[r][i]);
	}
	for (int r = 0; r < P; r++)
		free(shard[r]);
	free(shard);
}

Tensor *
sim_inputs(const Func *f, uint64_t seed)
{
	Tensor *in = xcalloc((size_t)f->nin + 1, sizeof *in);
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (int i = 0; i < f->nin; i++) {
		in[i] = sim_tensor_of(&f->ins[f->in[i]].ty, false, f->nranks);
		sim_fill_random(&in[i], &rng);
	}
	partial_sums_exact(f, in, seed);
	return in;
}

/* ---- one op on tensors: shared by the oracle and the ranks ---- */

static int64_t
reduce_len(const Ins *in, const Tensor *a, const Func *f)
{
	(void)f;
	return a->dim[in->axis];
}

/* The global meaning of shift: block r of the result is block r-k. */
static void
shift_global(const Tensor *a, int axis, int k, int p, Tensor *out)
{
	int64_t dim[LIM_RANK];
	memcpy(dim, a->dim, sizeof dim);
	dim[axis] /= p;
	for (int r = 0; r < p; r++) {
		Tensor b = sim_tensor(a->dt, a->rank, dim);
		sim_block(a, axis, ((r - k) % p + p) % p, p, &b);
		sim_place_block(out, axis, r, p, &b);
		sim_free(&b);
	}
}

/* Ops whose local form is their global form on local shapes. */
bool
sim_local_compute(const Ins *in, Tensor *const *x, Tensor *out, DType st, SimMode m, int64_t meandiv)
{
	switch (ir_ops[in->op].cls) {
	case OC_UNARY:
		sim_unary(in->op, x[0], out, st, m);
		return true;
	case OC_BINARY:
		sim_binary(in->op, x[0], x[1], out, st, m);
		return true;
	case OC_MATMUL:
		if (in->trans_b) {
			Tensor b = sim_transposed(x[1]);
			sim_matmul(x[0], &b, out, st, m);
			sim_free(&b);
		} else {
			sim_matmul(x[0], x[1], out, st, m);
		}
		return true;
	case OC_REDUCE:
		sim_reduce(in->op, x[0], in->axis, meandiv, out, st, m);
		return true;
	default:
		break;
	}
	switch (in->op) {
	case OP_TRANSPOSE:
		sim_transpose(x[0], in->axis, in->axis2, out);
		return true;
	case OP_RESHAPE:
		sim_copy_flat(x[0], out);
		return true;
	case OP_CAUSAL:
		sim_causal(x[0], in->a, out);
		return true;
	case OP_SLICE:
		sim_slice(x[0], in->axis, in->a, out);
		return true;
	case OP_CONCAT:
		sim_concat((const Tensor *const *)x, in->narg, in->axis, out);
		return true;
	case OP_BROADCAST:
		for (int64_t i = 0; i < out->n; i++)
			out->v[i] = x[0]->v[0];
		return true;
	default:
		return false;
	}
}

/* ---- the oracle ---- */

/* ---- room ---- */

/* Bytes the simulator holds for an op, every element an f64: the
 * oracle's values (global), every rank's values (local), the inputs with
 * their shards, and the outputs of both. */
static double
sim_bytes(const Func *ref, const Func *run)
{
	double b = 0;
	for (Val v = 0; v < ref->nins; v++)
		b += (double)ty_numel(&ref->ins[v].ty) * (1 + 2 * (ref->ins[v].op == OP_PARAM));
	for (Val v = 0; v < run->nins; v++)
		b += (double)ty_local_numel(&run->ins[v].ty, run->nranks) * run->nranks;
	for (int i = 0; i < ref->nout; i++)
		b += 2.0 * (double)ty_numel(&ref->ins[ref->out[i]].ty);
	return b * sizeof(double);
}

/* Whether the op fits: at most half this machine's memory and 16 GiB.  A
 * simulator asking malloc for 32 GiB died as an internal error; more than
 * that would take hours of CPU anyway. */
bool
sim_room(const Func *ref, const Func *run, char *why, size_t n)
{
	double need = sim_bytes(ref, run), have = 16.0 * (1 << 30);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (pages > 0 && page > 0 && (double)pages * (double)page / 2 < have)
		have = (double)pages * (double)page / 2;
	if (need <= have)
		return true;
	snprintf(why, n, "it needs %.1f GiB in the simulator (every value as f64: the oracle's and %d ranks' pieces), "
	         "which takes at most %.1f GiB here; simulate it at smaller sizes (-D)", need / (1 << 30), run->nranks,
	         have / (1 << 30));
	return false;
}

bool
sim_oracle(const Func *f, const Tensor *in, SimMode m, Tensor *out, char *err, size_t n)
{
	return sim_oracle_hooked(f, in, m, NULL, out, err, n);
}

bool
sim_oracle_hooked(const Func *f, const Tensor *in, SimMode m, const SimMatmulHook *h, Tensor *out, char *err, size_t n)
{
	Tensor *val = xcalloc((size_t)f->nins + 1, sizeof *val);
	bool ok = true;
	for (Val v = 0; v < f->nins && ok; v++) {
		const Ins *ins = &f->ins[v];
		Tensor *x[64], **xs = ins->narg > 64 ? xmalloc((size_t)ins->narg * sizeof *xs) : x;
		val[v] = sim_tensor_of(&ins->ty, false, f->nranks);
		for (int i = 0; i < ins->narg; i++)
			xs[i] = &val[ins->arg[i]];
		if (ins->op == OP_PARAM) {
			sim_copy_flat(&in[ins->a], &val[v]);
		} else if (ins->op == OP_CONST) {
			val[v].v[0] = m == SIM_F64 ? ins->c : sim_round(ins->ty.dt, ins->c);
		} else if (ins->op == OP_SHIFT) {
			shift_global(xs[0], ins->axis, (int)ins->a, f->nranks, &val[v]);
		} else if (ir_ops[ins->op].cls == OC_COMM || ins->op == OP_RESHARD || ins->op == OP_SCATTER) {
			sim_copy_flat(xs[0], &val[v]);
			for (int64_t e = 0; e < val[v].n && m != SIM_F64; e++) /* a partial input's exact sum, stored */
				val[v].v[e] = sim_round(ins->ty.dt, val[v].v[e]);
		} else if (h && ir_ops[ins->op].cls == OC_MATMUL && !ins->trans_b) {
			ok = sim_matmul_hooked(xs[0], xs[1], &val[v], ins->ty.dt, m, h, err, n);
		} else if (!sim_local_compute(ins, xs, &val[v], ins->ty.dt, m, ins->narg ? reduce_len(ins, xs[0], f) : 1)) {
			die("oracle: no evaluation for %s", ir_ops[ins->op].name);
		}
		if (xs != x)
			free(xs);
	}
	for (int i = 0; i < f->nout && ok; i++) {
		out[i] = sim_tensor_of(&f->ins[f->out[i]].ty, false, f->nranks);
		sim_copy_flat(&val[f->out[i]], &out[i]);
	}
	for (Val v = 0; v < f->nins; v++)
		sim_free(&val[v]);
	free(val);
	return ok;
}

/* ---- SPMD execution ---- */

typedef struct Rank {
	SimCtx c;          /* what the shared helpers need (first: they take it) */
	Tensor *val;       /* local value of every IR value */
	const Tensor *shard; /* shard[param] for this rank */
	bool failed;
} Rank;

/* The block of a @repl operand that matches the result's split. */
Tensor
sim_slice_local(const Tensor *t, int axis, SimCtx *k)
{
	int64_t dim[LIM_RANK];
	memcpy(dim, t->dim, sizeof dim);
	dim[axis] /= k->P;
	Tensor b = sim_tensor(t->dt, t->rank, dim);
	sim_block(t, axis, k->r, k->P, &b);
	return b;
}

bool
sim_comm_call_on(SimCtx *k, CommBackend *be, CommChunk *c, const char *what)
{
	if (be->collective(be, c, NULL) == 0)
		return true;
	snprintf(k->err, sizeof k->err, "rank %d, %s: %s", k->r, what, be->error(be));
	return false;
}

bool
sim_comm_call(SimCtx *k, CommChunk *c, const char *what)
{
	return sim_comm_call_on(k, k->comm, c, what);
}

CommChunk
sim_chunk(const Ins *in, Val v, CommOp op, const void *send, void *recv, size_t count)
{
	return (CommChunk){op, (CommDType)in->ty.dt, (CommRed)in->red, send, recv, count, 0, 0, 0, v, 0, 0, 0, 0};
}

/* all_reduce / reduce_scatter / all_gather / all_to_all / shift on local
 * shards; blocks along a dim are packed contiguous for the backend. */
bool
sim_run_comm(SimCtx *k, Val v, const Ins *in, Tensor *x, Tensor *out)
{
	int P = k->P;
	double *buf;
	CommChunk c;
	bool ok;
	switch (in->op) {
	case OP_ALL_REDUCE:
		if (k->brk->on[BR_AR_LOCAL]) {
			sim_copy_flat(x, out);
			return true;
		}
		c = sim_chunk(in, v, CO_ALL_REDUCE, x->v, out->v, (size_t)x->n);
		return sim_comm_call(k, &c, "all_reduce");
	case OP_REDUCE_SCATTER:
		buf = xmalloc((size_t)x->n * sizeof *buf);
		sim_pack(x, in->axis, P, buf);
		if (k->brk->on[BR_RS_BLOCK]) { /* rotate so each rank keeps its neighbour's block */
			double *rot = xmalloc((size_t)x->n * sizeof *rot);
			size_t bs = (size_t)x->n / P;
			for (int p = 0; p < P; p++)
				memcpy(rot + p * bs, buf + ((p + 1) % P) * bs, bs * sizeof *rot);
			free(buf);
			buf = rot;
		}
		c = sim_chunk(in, v, CO_REDUCE_SCATTER, buf, out->v, (size_t)out->n);
		ok = sim_comm_call(k, &c, "reduce_scatter");
		free(buf);
		return ok;
	case OP_ALL_GATHER:
		buf = xmalloc((size_t)out->n * sizeof *buf);
		c = sim_chunk(in, v, CO_ALL_GATHER, x->v, buf, (size_t)x->n);
		if ((ok = sim_comm_call(k, &c, "all_gather"))) {
			if (k->brk->on[BR_AG_ORDER])
				for (int p = 0; p < P / 2; p++)
					for (int64_t i = 0; i < x->n; i++) {
						double t = buf[p * x->n + i];
						buf[p * x->n + i] = buf[(P - 1 - p) * x->n + i];
						buf[(P - 1 - p) * x->n + i] = t;
					}
			sim_unpack(buf, in->axis, P, out);
		}
		free(buf);
		return ok;
	case OP_ALL_TO_ALL: {
		double *rbuf = xmalloc((size_t)out->n * sizeof *rbuf);
		buf = xmalloc((size_t)x->n * sizeof *buf);
		sim_pack(x, in->axis2, P, buf);
		c = sim_chunk(in, v, CO_ALL_TO_ALL, buf, rbuf, (size_t)x->n / P);
		if ((ok = sim_comm_call(k, &c, "all_to_all"))) {
			if (k->brk->on[BR_A2A_ORDER])
				for (int p = 0; p < P / 2; p++)
					for (size_t i = 0; i < c.count; i++) {
						double t = rbuf[p * c.count + i];
						rbuf[p * c.count + i] = rbuf[(P - 1 - p) * c.count + i];
						rbuf[(P - 1 - p) * c.count + i] = t;
					}
			sim_unpack(rbuf, in->axis, P, out);
		}
		free(buf);
		free(rbuf);
		return ok;
	}
	case OP_SHIFT:
		c = sim_chunk(in, v, CO_SHIFT, x->v, out->v, (size_t)x->n);
		c.shift = (int)(k->brk->on[BR_SHIFT_BACK] ? (P - in->a) % P : in->a);
		if (c.shift == 0) {
			sim_copy_flat(x, out);
			return true;
		}
		return sim_comm_call(k, &c, "shift");
	default:
		die("not a collective: %s", ir_ops[in->op].name);
	}
}

/* reshard without the autocomm pass: reach the global value (all_reduce
 * or all_gather), then keep this rank's block.  A different route from
 * the pass's single collective, so each checks the other. */
bool
sim_run_reshard(SimCtx *k, Val v, const Ins *in, Tensor *x, Tensor *out)
{
	const Type *from = &k->f->ins[in->arg[0]].ty;
	Tensor g = sim_tensor_of(&in->ty, false, k->P);
	Ins tmp = *in;
	bool ok = true;
	if (from->pl.kind == PL_PARTIAL) {
		tmp.op = OP_ALL_REDUCE;
		tmp.red = from->pl.red;
		ok = sim_run_comm(k, v, &tmp, x, &g);
	} else if (from->pl.kind == PL_SPLIT) {
		tmp.op = OP_ALL_GATHER;
		tmp.axis = from->pl.dim;
		ok = sim_run_comm(k, v, &tmp, x, &g);
	} else {
		sim_copy_flat(x, &g);
	}
	if (ok && in->ty.pl.kind == PL_SPLIT)
		sim_block(&g, in->ty.pl.dim, k->r, k->P, out);
	else if (ok)
		sim_copy_flat(&g, out);
	sim_free(&g);
	return ok;
}

/* The dtype a value is kept in: its own, except that a fused (internal)
 * float value stays in an f32 register.  A cast rounds, fused or not; an
 * i32 value is an integer register, whose wrap-around and exactness past
 * 2^24 f32 would lose. */
DType
sim_store_dtype(const Ins *in)
{
	return in->internal && in->op != OP_CAST && in->ty.dt != DT_I32 ? DT_F32 : in->ty.dt;
}

/* k's dim that dim d of transpose(k) (the last two swapped) is. */
static int
untransposed(int d, int R)
{
	return d == R - 1 ? R - 2 : d == R - 2 ? R - 1 : d;
}

/* An attention region, at its second matmul: its exports (the output,
 * the row max, the row sum) from the local q, k, v and bias, each sliced
 * where the unfused matmuls and the bias's add would slice it. */
static bool
rank_attention(Rank *k, Val mm2)
{
	const Func *f = k->c.f;
	Attn a;
	Tensor sl[4] = {{0}}, *x[4];
	int s1[2], s2[2], R = f->ins[mm2].ty.rank;
	if (!ir_attn_match(f, mm2, &a)) {
		snprintf(k->c.err, sizeof k->c.err, "%%%d is marked as an attention region that does not match", mm2);
		return false;
	}
	x[0] = &k->val[a.q];
	x[1] = &k->val[a.k];
	x[2] = &k->val[a.v];
	x[3] = a.bias >= 0 ? &k->val[a.bias] : NULL;
	ir_mm_slices(f, &f->ins[a.mm1], s1);
	ir_mm_slices(f, &f->ins[mm2], s2);
	if (s2[0] >= 0) {
		snprintf(k->c.err, sizeof k->c.err, "attention %%%d: the probabilities would be sliced", mm2);
		return false;
	}
	if (s1[0] >= 0)
		sl[0] = sim_slice_local(x[0], s1[0], &k->c), x[0] = &sl[0];
	if (s1[1] >= 0)
		sl[1] = sim_slice_local(x[1], untransposed(s1[1], R), &k->c), x[1] = &sl[1];
	if (s2[1] >= 0)
		sl[2] = sim_slice_local(x[2], s2[1], &k->c), x[2] = &sl[2];
	for (int i = 0; i < a.nmem && x[3]; i++) {
		const Ins *m = &f->ins[a.mem[i]];
		for (int j = 0; m->op == OP_ADD && j < 2; j++) {
			int d = m->arg[j] == a.bias ? ir_ew_slice(f, m, j) : -1;
			if (d >= 0 && !sl[3].v)
				sl[3] = sim_slice_local(x[3], d, &k->c), x[3] = &sl[3];
		}
	}
	k->val[mm2] = sim_tensor_of(&f->ins[mm2].ty, true, k->c.P);
	sim_free(&k->val[a.max]);
	k->val[a.max] = sim_tensor_of(&f->ins[a.max].ty, true, k->c.P);
	if (a.sum >= 0) {
		sim_free(&k->val[a.sum]);
		k->val[a.sum] = sim_tensor_of(&f->ins[a.sum].ty, true, k->c.P);
	}
	sim_attention(&a, x[0], x[1], x[2], x[3], &k->val[mm2], f->ins[mm2].ty.dt, &k->val[a.max],
	              a.sum >= 0 ? &k->val[a.sum] : NULL, k->c.brk->on[BR_ATTN_NORESCALE]);
	for (int i = 0; i < 4; i++)
		sim_free(&sl[i]);
	return true;
}

static bool
rank_op(Rank *k, Val v)
{
	const Func *f = k->c.f;
	const Ins *in = &f->ins[v];
	Tensor *out = &k->val[v], *xs[64], **x;
	Tensor sliced[2] = {{0}}, tb = {0};
	DType st = sim_store_dtype(in);
	bool ok = true;

	if (in->attn >= 0) /* computed whole at the region's second matmul, with
	                    * the row max and sum, which may come after it */
		return in->attn != v || rank_attention(k, v);
	x = in->narg > 64 ? xmalloc((size_t)in->narg * sizeof *x) : xs;

	for (int i = 0; i < in->narg; i++) {
		const Ins *a = &f->ins[in->arg[i]];
		if (a->internal && a->group != in->group) {
			snprintf(k->c.err, sizeof k->c.err, "%%%d reads %%%d, which fusion kept inside the kernel of %%%d", v,
			         in->arg[i], a->group);
			return false;
		}
		x[i] = &k->val[in->arg[i]];
	}
	*out = sim_tensor_of(&in->ty, true, k->c.P);
	if (in->op == OP_PARAM) {
		sim_copy_flat(&k->shard[in->a], out);
	} else if (in->op == OP_CONST) {
		out->v[0] = sim_round(in->ty.dt, in->c);
	} else if (in->op == OP_MATMUL) {
		int sl[2];
		if (in->trans_b) { /* B as the product reads it; slices are in its dims */
			tb = k->c.brk->on[BR_MM_BT_IGNORED] ? sim_as_transposed_shape(x[1]) : sim_transposed(x[1]);
			x[1] = &tb;
		}
		ir_mm_slices(f, in, sl);
		for (int i = 0; i < 2 && !k->c.brk->on[BR_MM_NOSLICE]; i++)
			if (sl[i] >= 0) {
				sliced[i] = sim_slice_local(x[i], sl[i], &k->c);
				x[i] = &sliced[i];
			}
		if (x[0]->dim[x[0]->rank - 1] != x[1]->dim[x[1]->rank - 2]) {
			snprintf(k->c.err, sizeof k->c.err, "rank %d: %%%d: local matmul operands do not fit: K = %lld and %lld", k->c.r, v,
			         (long long)x[0]->dim[x[0]->rank - 1], (long long)x[1]->dim[x[1]->rank - 2]);
			ok = false;
		} else {
			sim_matmul(x[0], x[1], out, st, SIM_GPU);
		}
	} else if (ir_ops[in->op].cls == OC_BINARY || ir_ops[in->op].cls == OC_UNARY) {
		for (int i = 0; i < in->narg && !k->c.brk->on[BR_EW_NOSLICE]; i++) {
			int d = ir_ew_slice(f, in, i);
			if (d >= 0) {
				sliced[i] = sim_slice_local(x[i], d, &k->c);
				x[i] = &sliced[i];
			}
		}
		for (int i = 0; i < in->narg; i++) /* broadcasting must still fit */
			for (int d = 0; d < x[i]->rank; d++) {
				int od = d + out->rank - x[i]->rank;
				if (x[i]->dim[d] != 1 && x[i]->dim[d] != out->dim[od]) {
					snprintf(k->c.err, sizeof k->c.err, "rank %d: %%%d: operand %%%d has local dim %d of size %lld, the result %lld",
					         k->c.r, v, in->arg[i], d, (long long)x[i]->dim[d], (long long)out->dim[od]);
					ok = false;
				}
			}
		if (ok)
			sim_local_compute(in, x, out, st, SIM_GPU, 1);
	} else if (ir_ops[in->op].cls == OC_REDUCE) {
		const Type *ta = &f->ins[in->arg[0]].ty;
		int64_t div = k->c.brk->on[BR_MEAN_LOCAL] ? x[0]->dim[in->axis] : ta->dim[in->axis];
		sim_reduce(in->op, x[0], in->axis, div, out, st, SIM_GPU);
	} else if (in->op == OP_SCATTER) {
		sim_block(x[0], in->ty.pl.dim, k->c.brk->on[BR_SCATTER_BLOCK] ? 0 : k->c.r, k->c.P, out);
	} else if (ir_ops[in->op].cls == OC_COMM) {
		ok = sim_run_comm(&k->c, v, in, x[0], out);
	} else if (in->op == OP_RESHARD) {
		ok = sim_run_reshard(&k->c, v, in, x[0], out);
	} else if (!sim_local_compute(in, x, out, st, SIM_GPU, 1)) {
		die("no local form for %s", ir_ops[in->op].name);
	}
	for (int i = 0; i < 2; i++)
		sim_free(&sliced[i]);
	sim_free(&tb);
	if (x != xs)
		free(x);
	return ok;
}

static void *
rank_main(void *arg)
{
	Rank *k = arg;
	for (Val v = 0; v < k->c.f->nins; v++)
		if (!rank_op(k, v)) {
			k->failed = true;
			sim_abort(k->c.comm, k->c.err);
			break;
		}
	return NULL;
}

/* The shards of one global input: a block for @split, a copy for @repl,
 * and for @partial(op) random pieces whose reduction is the input. */
void
sim_make_shards(const Func *f, const Tensor *g, int pi, Tensor **shard, uint64_t *rng)
{
	const Type *t = &f->ins[f->in[pi]].ty;
	int P = f->nranks;
	for (int r = 0; r < P; r++) {
		shard[r][pi] = sim_tensor_of(t, true, P);
		if (t->pl.kind == PL_SPLIT)
			sim_block(g, t->pl.dim, r, P, &shard[r][pi]);
		else
			sim_copy_flat(g, &shard[r][pi]);
	}
	if (t->pl.kind != PL_PARTIAL)
		return;
	for (int64_t i = 0; i < g->n; i++) {
		double rest = g->v[i];
		int owner = (int)(sim_rng_next(rng) % (uint64_t)P);
		for (int r = 0; r < P; r++) {
			double u = (double)(sim_rng_next(rng) >> 11) * 0x1p-53;
			if (t->pl.red != RED_SUM) /* max/min: one rank holds the value, the others less/more */
				shard[r][pi].v[i] = r == owner ? g->v[i] : sim_round(t->dt, g->v[i] + (t->pl.red == RED_MAX ? -u : u));
			else if (r == P - 1)
				shard[r][pi].v[i] = sim_round(t->dt, rest);
			else
				rest -= shard[r][pi].v[i] = sim_round(t->dt, (2 * u - 1) * 0.5);
		}
	}
}

/* A global output from the ranks' shards.  A @repl output must be the
 * same on every rank, bit for bit, as NCCL delivers it. */
bool
sim_assemble(const Func *f, int oi, Tensor *const *vals, Tensor *out, char *err, size_t n)
{
	Val v = f->out[oi];
	const Type *t = &f->ins[v].ty;
	int P = f->nranks;
	*out = sim_tensor_of(t, false, P);
	switch (t->pl.kind) {
	case PL_REPL:
		sim_copy_flat(&vals[0][v], out);
		for (int r = 1; r < P; r++)
			for (int64_t i = 0; i < out->n; i++) {
				double a = vals[r][v].v[i], b = out->v[i];
				if (a != b && !(isnan(a) && isnan(b))) {
					snprintf(err, n, "output %d is @repl but rank %d holds %g where rank 0 holds %g (element %lld)", oi,
					         r, a, b, (long long)i);
					return false;
				}
			}
		return true;
	case PL_SPLIT:
		for (int r = 0; r < P; r++)
			sim_place_block(out, t->pl.dim, r, P, &vals[r][v]);
		return true;
	case PL_PARTIAL:
		for (int64_t i = 0; i < out->n; i++) {
			double acc = vals[0][v].v[i];
			for (int r = 1; r < P; r++) {
				double x = vals[r][v].v[i];
				acc = t->pl.red == RED_SUM ? acc + x : t->pl.red == RED_MAX ? fmax(acc, x) : fmin(acc, x);
			}
			out->v[i] = acc;
		}
		return true;
	}
	return false;
}

bool
sim_spmd(const Func *f, const Tensor *in, const SimOpts *o, Tensor *out, char *err, size_t n)
{
	int P = f->nranks;
	Rank *ranks = xcalloc((size_t)P, sizeof *ranks);
	Tensor **shard = xcalloc((size_t)P, sizeof *shard);
	pthread_t *th = xcalloc((size_t)P, sizeof *th);
	SimWorld *w = sim_world_new(P, o->timeout_ms);
	SimBreak brk;
	uint64_t rng = sim_shard_rng(o->seed);
	bool ok = true;
	char bad[80];

	if (!sim_parse_breaks(o->breaks, &brk, bad, sizeof bad))
		die("unknown break %s", bad);
	(void)0;
	for (int r = 0; r < P; r++)
		shard[r] = xcalloc((size_t)f->nin + 1, sizeof **shard);
	for (int i = 0; i < f->nin; i++)
		sim_make_shards(f, &in[i], i, shard, &rng);
	for (int r = 0; r < P; r++) {
		ranks[r] = (Rank){{f, r, P, sim_backend(w, r), &brk, ""}, xcalloc((size_t)f->nins + 1, sizeof(Tensor)), shard[r], false};
		if (pthread_create(&th[r], NULL, rank_main, &ranks[r]))
			die("cannot start rank thread");
	}
	for (int r = 0; r < P; r++)
		pthread_join(th[r], NULL);
	for (int i = -1; i < P && ok; i++) { /* the first to fail, then in rank order */
		int r = i < 0 ? sim_world_first(w) : i;
		if (r >= 0 && ranks[r].failed) {
			snprintf(err, n, "%s", ranks[r].c.err);
			ok = false;
		}
	}
	Tensor **vals = xcalloc((size_t)P, sizeof *vals);
	for (int r = 0; r < P; r++)
		vals[r] = ranks[r].val;
	for (int i = 0; i < f->nout && ok; i++)
		ok = sim_assemble(f, i, vals, &out[i], err, n);
	free(vals);
	for (int r = 0; r < P; r++) {
		for (Val v = 0; v < f->nins; v++)
			sim_free(&ranks[r].val[v]);
		free(ranks[r].val);
		for (int i = 0; i < f->nin; i++)
			sim_free(&shard[r][i]);
		free(shard[r]);
	}
	free(shard);
	free(ranks);
	free(th);
	sim_world_free(w);
	return ok;
}

/* ---- comparison ---- */

/* Tolerance: a base per dtype (f32 1e-5, f16 2e-3, bf16 1e-2: the least
 * precise dtype in the op decides), grown with the number of roundings to
 * that dtype along the longest path to the output and with the longest
 * reduction, both as sqrt (a random walk of rounding errors). */
static bool
lossy(const Ins *in)
{
	OpClass c = ir_ops[in->op].cls;
	return c == OC_UNARY || c == OC_BINARY || c == OC_MATMUL || c == OC_REDUCE || in->op == OP_ALL_REDUCE ||
	       in->op == OP_REDUCE_SCATTER;
}

double
sim_tolerance(const Func *f, int out)
{
	double eps = 0, base;
	int64_t len = 1;
	int *depth = xcalloc((size_t)f->nins + 1, sizeof *depth), d;
	for (Val v = 0; v < f->nins; v++)
		if (ty_dtypes[f->ins[v].ty.dt].eps > eps)
			eps = ty_dtypes[f->ins[v].ty.dt].eps;
	for (Val v = 0; v < f->nins; v++) {
		const Ins *in = &f->ins[v];
		const Type *a = in->narg ? &f->ins[in->arg[0]].ty : NULL;
		for (int i = 0; i < in->narg; i++)
			if (depth[in->arg[i]] > depth[v])
				depth[v] = depth[in->arg[i]];
		depth[v] += lossy(in) && ty_dtypes[in->ty.dt].eps == eps;
		if (in->op == OP_MATMUL && a->dim[a->rank - 1] > len)
			len = a->dim[a->rank - 1];
		if (ir_ops[in->op].cls == OC_REDUCE && a->dim[in->axis] > len)
			len = a->dim[in->axis];
	}
	d = depth[f->out[out]] > 1 ? depth[f->out[out]] : 1;
	free(depth);
	if (eps == 0)
		return 0; /* integers only: exact */
	base = eps >= ty_dtypes[DT_BF16].eps ? 1e-2 : eps >= ty_dtypes[DT_F16].eps ? 2e-3 : 1e-5;
	return base * sqrt((double)d) * (len > 256 ? sqrt((double)len / 256) : 1);
}

static void
compare(const Tensor *out, const Tensor *ref, double tol, double *rel, char **what)
{
	double num = 0, den = 0;
	int64_t bad = 0, first = -1;
	for (int64_t i = 0; i < ref->n; i++) {
		double a = out->v[i], b = ref->v[i];
		if (!isfinite(b) || !isfinite(a)) {
			bool same = (isnan(a) && isnan(b)) || a == b;
			if (!same && bad++ == 0)
				first = i;
			continue;
		}
		num += (a - b) * (a - b);
		den += b * b;
	}
	*rel = den > 0 ? sqrt(num / den) : sqrt(num);
	*what = NULL;
	if (bad) {
		char buf[256];
		snprintf(buf, sizeof buf, "%lld element(s) not finite where the reference is (or the reverse), first at %lld: %g vs %g",
		         (long long)bad, (long long)first, out->v[first], ref->v[first]);
		*what = xstrdup(buf);
	} else if (!(*rel <= tol)) {
		char buf[256];
		snprintf(buf, sizeof buf, "relative error %.3g is over the tolerance %.3g", *rel, tol);
		*what = xstrdup(buf);
	}
}

void
sim_result_free(SimResult *r)
{
	for (int i = 0; i < r->nout; i++)
		free(r->what ? r->what[i] : NULL);
	free(r->relerr);
	free(r->tol);
	free(r->what);
}

/* How far the rounded oracle's output i moves when every float input
 * element moves by one rounding of its dtype per rank (eps sqrt(P)
 * relative, random signs): the most of SENS_DRAWS draws.  The ranks round
 * where the meaning does not -- each hop of a 16-bit all_reduce rounds a
 * running sum of pieces -- and then every later rounding can fall the
 * other way; an output that cancels (the sum of the means of an
 * all_reduce, gensyn seed 1796614057) magnifies those flips, which one
 * comparison of the rounded oracle with the f64 one can happen to miss.
 * 0 where it cannot run. */
enum { SENS_DRAWS = 5 };

static double
sensitivity(const Func *ref_ir, const Tensor *in, const Tensor *ref, int i)
{
	Tensor *pin = xcalloc((size_t)ref_ir->nin + 1, sizeof *pin), *out = xcalloc((size_t)ref_ir->nout + 1, sizeof *out);
	uint64_t rng = 0x243f6a8885a308d3ull;
	double most = 0, scale = sqrt((double)(ref_ir->nranks > 1 ? ref_ir->nranks : 1));
	char err[256];
	for (int d = 0; d < SENS_DRAWS; d++) {
		double rel = 0;
		char *ignored = NULL;
		for (int k = 0; k < ref_ir->nin; k++) {
			double eps = ty_dtypes[in[k].dt].eps;
			pin[k] = sim_tensor(in[k].dt, in[k].rank, in[k].dim);
			for (int64_t e = 0; e < in[k].n; e++)
				pin[k].v[e] = in[k].v[e] * (1 + (sim_rng_next(&rng) >> 63 ? eps : -eps) * scale);
		}
		if (sim_oracle(ref_ir, pin, SIM_GPU, out, err, sizeof err) && out[i].n == ref->n) {
			compare(&out[i], ref, INFINITY, &rel, &ignored);
			free(ignored);
		}
		for (int k = 0; k < ref_ir->nout; k++)
			sim_free(&out[k]);
		for (int k = 0; k < ref_ir->nin; k++)
			sim_free(&pin[k]);
		if (isfinite(rel) && rel > most)
			most = rel;
	}
	free(out);
	free(pin);
	return most;
}

/* The rounded oracle rounds after every op, as the language's meaning
 * does; fused code keeps f32 inside a kernel and rounds less, so where the
 * program cancels (x - 1.25 after a bf16 sqrt) it can be closer to exact
 * math and still far from the rounded oracle.  Before a mismatch is
 * declared, the output is allowed to differ from the rounded oracle by the
 * rounded oracle's own error against the f64 oracle and by how far its
 * output moves when its inputs do by a rounding per rank (sensitivity),
 * twice over: a result that is off by more than roundings can explain
 * still fails. */
static void
widen(const Func *ref_ir, const Tensor *in, Tensor **exact, const Tensor *got, const Tensor *ref, int i, SimResult *r)
{
	char err[256];
	double own = 0;
	char *ignored = NULL;
	if (!*exact) { /* the f64 oracle, once for every output that needs it */
		*exact = xcalloc((size_t)ref_ir->nout + 1, sizeof **exact);
		if (!sim_oracle(ref_ir, in, SIM_F64, *exact, err, sizeof err))
			for (int k = 0; k < ref_ir->nout; k++) { /* no f64 oracle: no widening */
				sim_free(&(*exact)[k]);
				(*exact)[k].n = 0;
			}
	}
	if ((*exact)[i].n != ref->n)
		return;
	compare(ref, &(*exact)[i], INFINITY, &own, &ignored);
	free(ignored);
	if (!isfinite(own))
		own = 0;
	own += sensitivity(ref_ir, in, ref, i);
	if (own > 0) {
		r->tol[i] += 2 * own;
		free(r->what[i]);
		compare(got, ref, r->tol[i], &r->relerr[i], &r->what[i]);
	}
}

/* The random inputs of an op and what the oracle on `ref_ir` (as sema
 * made it) makes of them: the same for every plan of the op, so a check
 * of many plans (--all-plans, --tune) makes them once -- the oracle was a
 * quarter to a third of each plan's check. */
void
sim_oracle_begin(const Func *ref_ir, const SimOpts *o, SimOracle *or)
{
	or->ref_ir = ref_ir;
	or->in = sim_inputs(ref_ir, o->seed);
	or->ref = xcalloc((size_t)ref_ir->nout + 1, sizeof *or->ref);
	or->error[0] = 0;
	or->ok = sim_oracle(ref_ir, or->in, o->oracle, or->ref, or->error, sizeof or->error);
}

void
sim_oracle_end(SimOracle *or)
{
	for (int i = 0; i < or->ref_ir->nout; i++)
		sim_free(&or->ref[i]);
	for (int i = 0; i < or->ref_ir->nin; i++)
		sim_free(&or->in[i]);
	free(or->in);
	free(or->ref);
}

/* The whole check against the oracle `or`: the ranks on `run_ir` (after
 * the passes) op by op, or running `plan` (two calls, epochs 1 and 2)
 * when it is given; every output compared. */
static void
compare_with(const SimOracle *or, const Func *run_ir, const struct Plan *plan, int gpus, const SimOpts *o,
             SimResult *r)
{
	const Func *ref_ir = or->ref_ir;
	Tensor *got = xcalloc((size_t)ref_ir->nout + 1, sizeof *got), *exact = NULL;
	memset(r, 0, sizeof *r);
	r->nout = ref_ir->nout;
	r->relerr = xcalloc((size_t)r->nout + 1, sizeof *r->relerr);
	r->tol = xcalloc((size_t)r->nout + 1, sizeof *r->tol);
	r->what = xcalloc((size_t)r->nout + 1, sizeof *r->what);
	snprintf(r->error, sizeof r->error, "%s", or->error);
	r->ok = or->ok && (plan ? sim_plan_run(plan, or->in, o, gpus, 2, got, r->error, sizeof r->error)
	                        : sim_spmd(run_ir, or->in, o, got, r->error, sizeof r->error));
	for (int i = 0; i < r->nout && r->ok; i++) {
		r->tol[i] = sim_tolerance(ref_ir, i);
		compare(&got[i], &or->ref[i], r->tol[i], &r->relerr[i], &r->what[i]);
		if (r->what[i] && r->relerr[i] > r->tol[i] && o->oracle != SIM_F64)
			widen(ref_ir, or->in, &exact, &got[i], &or->ref[i], i, r);
	}
	for (int i = 0; i < r->nout; i++) {
		if (r->what[i])
			r->ok = false;
		sim_free(&got[i]);
		if (exact)
			sim_free(&exact[i]);
	}
	free(exact);
	free(got);
}

/* One check with an oracle of its own. */
static void
compare_once(const Func *ref_ir, const Func *run_ir, const struct Plan *plan, int gpus, const SimOpts *o, SimResult *r)
{
	SimOracle or;
	sim_oracle_begin(ref_ir, o, &or);
	compare_with(&or, run_ir, plan, gpus, o, r);
	sim_oracle_end(&or);
}

void
sim_compare(const Func *ref_ir, const Func *run_ir, const SimOpts *o, SimResult *r)
{
	compare_once(ref_ir, run_ir, NULL, 0, o, r);
}

void
sim_compare_plan(const Func *ref_ir, const struct Plan *p, const SimOpts *o, int gpus, SimResult *r)
{
	compare_once(ref_ir, NULL, p, gpus, o, r);
}

void
sim_check_plan(const SimOracle *or, const struct Plan *p, const SimOpts *o, int gpus, SimResult *r)
{
	compare_with(or, NULL, p, gpus, o, r);
}
