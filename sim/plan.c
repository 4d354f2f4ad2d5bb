/* sim/plan.c -- executing a plan on simulated ranks (DESIGN §7).
 *
 * Each rank runs two threads, its compute lane and its comm lane, each
 * walking its block list in plan order.  Before a block a lane waits on the
 * flags of its inputs from the other lane; after it, it raises its own
 * flag; flags are 64-bit epochs with acquire/release atomics, exactly the
 * GPU protocol, and call k of the operator uses epoch k.  Compute blocks
 * compute their band of every op of their fused group; comm blocks move
 * their chunk through the `sim` backend.  A wait that passes its deadline
 * is an error naming the rank, the block and the flag.
 *
 * A reduce_scatter its matmul pushes (sched_push) runs as libsyncrt's
 * pushed form does: after each band, rank s copies the band's rows of
 * owner q's block into q's copy of the partial at slot s (rows s M/P + i
 * for q's row q M/P + i) and adds 1 to q's count of that band's flag; the
 * owner's chunk waits for P raises a call of each band it reads, then adds
 * the P slots of its rows in rank order -- no collective is called.
 *
 * Before running, a race check recomputes every dependency from the
 * blocks' regions (not from the scheduler's edges) and proves each writer
 * happens before each reader through lane order and waits, so a plan with
 * a missing edge is caught even when the threads happen to run in a
 * harmless order. */
#include "sim.h"
#include "../sched/sched.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct PRank {
	SimCtx c;
	const Plan *p;
	int gpus;                  /* GPUs per node of the plan's topology */
	Tensor *val;               /* every value's local tensor */
	uint64_t *flags;
	uint64_t epoch;
	double **staging;          /* per block: the data between phases of a chunk */
	struct PRank *all;         /* every rank: a pushed band writes into its owners' */
	const Val *push_of;        /* per value: the pushed reduce_scatter reading it, or -1 (push_table) */
	Tensor *land;              /* per value: a pushed reduce_scatter's input as the owners fill it */
	uint64_t *pushed;          /* per flag: the bands pushed here from every rank, all calls */
	bool failed;
	pthread_mutex_t mu;
} PRank;

typedef struct LaneArg {
	PRank *k;
	int lane;
} LaneArg;

/* The first failure of a rank is its error (later ones follow from it). */
static bool
fail(PRank *k, const char *fmt, const char *a, const char *b)
{
	char tmp[2048];
	size_t n;
	snprintf(tmp, sizeof tmp, fmt, k->c.r, a, b);
	n = strlen(tmp) < sizeof k->c.err - 1 ? strlen(tmp) : sizeof k->c.err - 1;
	pthread_mutex_lock(&k->mu);
	if (!k->failed) {
		memcpy(k->c.err, tmp, n);
		k->c.err[n] = 0;
	}
	k->failed = true;
	pthread_mutex_unlock(&k->mu);
	sim_abort(k->c.comm, tmp); /* the other lane and ranks stop waiting */
	return false;
}

/* ---- compute blocks: one op of the group on one box ---- */

static void
operand_box(const Tensor *u, int rout, const int64_t *lo, const int64_t *hi, int64_t *ulo, int64_t *uhi)
{
	int off = rout - u->rank;
	for (int d = 0; d < u->rank; d++) {
		bool whole = u->dim[d] == 1 || d + off < 0;
		ulo[d] = whole ? 0 : lo[d + off];
		uhi[d] = whole ? u->dim[d] : hi[d + off];
	}
}

static bool
exec_member(PRank *k, Val m, const int64_t *lo, const int64_t *hi)
{
	const Func *f = k->c.f;
	const Ins *in = &f->ins[m];
	DType st = sim_store_dtype(in);
	Tensor *full = &k->val[m], out, subs[64], *xs[64], sliced[64];
	int64_t dim[LIM_RANK], ulo[LIM_RANK], uhi[LIM_RANK];
	int n = in->narg < 64 ? in->narg : 64, sl[2] = {-1, -1};
	bool ok = true;

	for (int d = 0; d < in->ty.rank; d++)
		dim[d] = hi[d] - lo[d];
	memset(sliced, 0, sizeof sliced);
	memset(subs, 0, sizeof subs);
	if (ir_ops[in->op].cls == OC_SHAPE && in->op != OP_BROADCAST) {
		/* data movement runs whole (one band) */
		for (int i = 0; i < n; i++)
			xs[i] = &k->val[in->arg[i]];
		if (in->op == OP_SCATTER)
			sim_block(xs[0], in->ty.pl.dim, k->c.brk->on[BR_SCATTER_BLOCK] ? 0 : k->c.r, k->c.P, full);
		else
			sim_local_compute(in, xs, full, st, SIM_GPU, 1);
		return true;
	}
	out = sim_tensor(in->ty.dt, in->ty.rank, dim);
	if (in->op == OP_MATMUL)
		ir_mm_slices(f, in, sl);
	for (int i = 0; i < n; i++) {
		const Tensor *u = &k->val[in->arg[i]];
		int d = in->op == OP_MATMUL ? (k->c.brk->on[BR_MM_NOSLICE] ? -1 : sl[i])
		        : (k->c.brk->on[BR_EW_NOSLICE] || ir_ops[in->op].cls == OC_REDUCE ? -1 : ir_ew_slice(f, in, i));
		bool tb = in->op == OP_MATMUL && i == 1 && in->trans_b; /* w read as B = transpose(w) */
		if (d >= 0) {
			sliced[i] = sim_slice_local(u, tb ? ir_mm_bdim(in, d, u->rank) : d, &k->c);
			u = &sliced[i];
		}
		if (in->op == OP_MATMUL) {
			int r = in->ty.rank, ru = u->rank;
			for (int e = 0; e < ru; e++) {
				int od = e + r - ru;
				ulo[e] = 0;
				uhi[e] = u->dim[tb ? ir_mm_bdim(in, e, ru) : e];
				if (e < ru - 2 && u->dim[e] != 1)
					ulo[e] = lo[od], uhi[e] = hi[od];
			}
			if (i == 0)
				ulo[ru - 2] = lo[r - 2], uhi[ru - 2] = hi[r - 2];
			else
				ulo[ru - 1] = lo[r - 1], uhi[ru - 1] = hi[r - 1];
			if (tb) { /* the box of B in w's dims: its rows of w, then transposed */
				int64_t l = ulo[ru - 1], h = uhi[ru - 1];
				Tensor w;
				ulo[ru - 1] = ulo[ru - 2], uhi[ru - 1] = uhi[ru - 2];
				ulo[ru - 2] = l, uhi[ru - 2] = h;
				w = sim_sub(u, ulo, uhi);
				subs[i] = k->c.brk->on[BR_MM_BT_IGNORED] ? sim_as_transposed_shape(&w) : sim_transposed(&w);
				sim_free(&w);
				xs[i] = &subs[i];
				continue;
			}
		} else if (ir_ops[in->op].cls == OC_REDUCE) {
			for (int e = 0; e < u->rank; e++)
				ulo[e] = lo[e], uhi[e] = hi[e];
			ulo[in->axis] = 0;
			uhi[in->axis] = u->dim[in->axis];
		} else {
			operand_box(u, in->ty.rank, lo, hi, ulo, uhi);
		}
		subs[i] = sim_sub(u, ulo, uhi);
		xs[i] = &subs[i];
	}
	if (in->op == OP_MATMUL) {
		if (xs[0]->dim[xs[0]->rank - 1] != xs[1]->dim[xs[1]->rank - 2])
			ok = fail(k, "rank %d: matmul operands do not fit%s%s", "", "");
		else
			sim_matmul(xs[0], xs[1], &out, st, SIM_GPU);
	} else if (ir_ops[in->op].cls == OC_REDUCE) {
		int64_t div = k->c.brk->on[BR_MEAN_LOCAL] ? xs[0]->dim[in->axis] : f->ins[in->arg[0]].ty.dim[in->axis];
		sim_reduce(in->op, xs[0], in->axis, div, &out, st, SIM_GPU);
	} else {
		for (int i = 0; i < n && ok; i++)
			for (int d = 0; d < xs[i]->rank; d++) {
				int od = d + out.rank - xs[i]->rank;
				if (xs[i]->dim[d] != 1 && xs[i]->dim[d] != out.dim[od])
					ok = fail(k, "rank %d: an elementwise operand's local shape does not fit%s%s", "", "");
			}
		if (ok)
			sim_local_compute(in, xs, &out, st, SIM_GPU, 1);
	}
	if (ok)
		sim_put(full, lo, &out);
	sim_free(&out);
	for (int i = 0; i < n; i++) {
		sim_free(&subs[i]);
		sim_free(&sliced[i]);
	}
	return ok;
}

/* A band of a fused attention region, as the fused kernel runs it: its
 * query rows of q (every key of k and v of the same heads) through the
 * online softmax, into the band's rows of the exports; the region's
 * scores and probabilities are never made. */
static bool
exec_attn(PRank *k, Val mm2, const Box *band)
{
	const Func *f = k->c.f;
	Attn a;
	int R = f->ins[mm2].ty.rank;
	int64_t lo[LIM_RANK], hi[LIM_RANK];
	Tensor q, kk, v, o, m = {0}, l = {0}, *t[3];
	if (!ir_attn_match(f, mm2, &a))
		return fail(k, "rank %d: %s%s is marked as a fused attention region that does not match", "", "");
	t[0] = &k->val[a.q], t[1] = &k->val[a.k], t[2] = &k->val[a.v];
	for (int d = 0; d < R; d++)
		lo[d] = band->lo[d], hi[d] = band->hi[d];
	q = sim_sub(t[0], lo, hi);
	hi[R - 1] = t[0]->dim[R - 1];
	lo[R - 2] = 0;
	hi[R - 2] = t[1]->dim[R - 2];
	kk = sim_sub(t[1], lo, hi);
	hi[R - 1] = t[2]->dim[R - 1];
	v = sim_sub(t[2], lo, hi);
	if (a.causal) /* the band's first query is row band->lo of the region */
		a.diag += band->lo[R - 2];
	{
		int64_t od[LIM_RANK], md[LIM_RANK];
		for (int d = 0; d < R; d++) {
			od[d] = band->hi[d] - band->lo[d];
			md[d] = d == R - 1 ? 1 : od[d];
		}
		od[R - 1] = t[2]->dim[R - 1];
		o = sim_tensor(f->ins[mm2].ty.dt, R, od);
		m = sim_tensor(DT_F32, R, md);
		l = sim_tensor(DT_F32, R, md);
	}
	sim_attention(&a, &q, &kk, &v, NULL, &o, f->ins[mm2].ty.dt, &m, &l, k->c.brk->on[BR_ATTN_NORESCALE]);
	for (int d = 0; d < R; d++)
		lo[d] = band->lo[d];
	sim_put(&k->val[mm2], lo, &o);
	if (!f->ins[a.max].internal)
		sim_put(&k->val[a.max], lo, &m);
	if (a.sum >= 0 && !f->ins[a.sum].internal)
		sim_put(&k->val[a.sum], lo, &l);
	sim_free(&q), sim_free(&kk), sim_free(&v), sim_free(&o), sim_free(&m), sim_free(&l);
	return true;
}

/* Per value, the pushed reduce_scatter that reads it, or -1: the plan's
 * decision, made once for the run (sched_push walks the bands). */
static Val *
push_table(const Plan *p)
{
	const Func *f = p->f;
	Val *t = xmalloc(((size_t)f->nins + 1) * sizeof *t);
	for (Val v = 0; v < f->nins; v++)
		t[v] = -1;
	for (Val v = 0; v < f->nins; v++)
		if (f->ins[v].op == OP_REDUCE_SCATTER && sched_push(p, v))
			t[f->ins[v].arg[0]] = v;
	return t;
}

/* Whether reduce_scatter v is pushed by its matmul. */
static bool
is_pushed(const PRank *k, Val v)
{
	const Ins *in = &k->c.f->ins[v];
	return in->op == OP_REDUCE_SCATTER && k->push_of[in->arg[0]] == v;
}

/* Rows lo..hi, columns c0..c1 (the band's) of this rank's x into owner
 * q's copy, at this rank's slot: row q M/P + i lands at row r M/P + i. */
static void
push_rows(PRank *k, Val x, int q, int64_t lo, int64_t hi, int64_t c0, int64_t c1)
{
	const Tensor *src = &k->val[x];
	Tensor *dst = &k->all[q].land[x];
	int64_t rows = src->dim[0] / k->c.P, row = src->n / src->dim[0];
	int slot = k->c.brk->on[BR_PUSH_SLOT] && k->c.r == 0 ? 1 % k->c.P : k->c.r;
	for (int64_t i = lo; i < hi; i++)
		memcpy(dst->v + (size_t)((slot * rows + i - q * rows) * row + c0), src->v + (size_t)(i * row + c0),
		       (size_t)(c1 - c0) * sizeof *dst->v);
}

/* After a band of a pushed reduce_scatter's matmul: its rows of each
 * owner's block copied into the owner's copy, then one raise of the band's
 * flag at each owner it served (release: the rows before the count). */
static bool
push_band(PRank *k, const Blk *b)
{
	const Func *f = k->c.f;
	for (int o = 0; o < b->nout; o++) {
		Val x = b->out[o].v, v = k->push_of[x];
		Box abs[2 * MAXBOX];
		int n, P = k->c.P;
		int64_t rows;
		bool *served;
		if (v < 0)
			continue;
		if (b->flag < 0 || f->ins[v].axis != 0 || f->ins[x].ty.rank != 2)
			return fail(k, "rank %d: a pushed reduce_scatter's band %s%s has no flag or is not 2-D rows", "", "");
		rows = k->val[x].dim[0] / P;
		served = xcalloc((size_t)P, sizeof *served);
		n = blk_abs_boxes(f, &b->out[o], k->c.r, abs);
		for (int i = 0; i < n; i++)
			for (int q = 0; q < P; q++) {
				int64_t lo = abs[i].lo[0] > q * rows ? abs[i].lo[0] : q * rows;
				int64_t hi = abs[i].hi[0] < (q + 1) * rows ? abs[i].hi[0] : (q + 1) * rows;
				if (lo < hi) {
					push_rows(k, x, q, lo, hi, abs[i].lo[1], abs[i].hi[1]);
					served[q] = true;
				}
			}
		for (int q = 0; q < P; q++)
			if (!served[q]) { /* sched_push_why refuses such bands: its owners would wait forever */
				free(served);
				return fail(k, "rank %d: pushed band %s%s holds no rows of an owner's block", "", "");
			}
		for (int q = 0; q < P; q++)
			if (!(k->c.brk->on[BR_PUSH_RAISE] && k->c.r == 0))
				__atomic_add_fetch(&k->all[q].pushed[b->flag], 1, __ATOMIC_RELEASE);
		free(served);
	}
	return true;
}

static bool
exec_compute(PRank *k, const BlockGraph *g, const Blk *b)
{
	const Func *f = k->c.f;
	Box abs[2 * MAXBOX];
	int n;
	Val mm2 = ir_attn_group(f, b->node);
	if (!b->nout)
		return true;
	if (mm2 >= 0) {
		const Region *ro = NULL;
		for (int i = 0; i < b->nout; i++)
			if (b->out[i].v == mm2)
				ro = &b->out[i];
		ASSERT(ro);
		n = blk_abs_boxes(f, ro, k->c.r, abs);
		for (int i = 0; i < n; i++)
			if (!exec_attn(k, mm2, &abs[i]))
				return false;
		return true;
	}
	/* the band in the group's space: out[0] is a stored member's region,
	 * which has every dim of the space it spans */
	Val space = ir_group_space(f, b->node, &(int){0});
	n = blk_abs_boxes(f, &b->out[0], k->c.r, abs);
	for (int i = 0; i < n; i++) {
		Box band = blk_space_box(f, space, b->out[0].v, &abs[i]);
		for (Val m = b->node; m < f->nins; m++)
			if (f->ins[m].group == b->node) {
				Box mb = blk_member_box(f, space, m, &band);
				if (!exec_member(k, m, mb.lo, mb.hi))
					return false;
			}
	}
	(void)g;
	return push_band(k, b);
}

/* ---- comm blocks ---- */

static Box
one_box(const PRank *k, const Region *r)
{
	Box abs[2 * MAXBOX];
	int n = blk_abs_boxes(k->c.f, r, k->c.r, abs);
	ASSERT(n == 1);
	return abs[0];
}

/* The backend a collective's chunks go through: the plan's choice, p2p
 * (libsyncrt's remote-flag protocol, sim/comm.c) or every other one as
 * the `sim` rendezvous. */
static CommBackend *
comm_of(PRank *k, const BlockGraph *g, Val v)
{
	return g->choice[v].backend == BE_P2P ? sim_p2p_of(k->c.comm) : k->c.comm;
}

/* The own block of an all_gather, copied locally into its slot. */
static bool
exec_self(PRank *k, const Blk *b)
{
	const Ins *in = &k->c.f->ins[b->node];
	sim_place_block(&k->val[b->node], in->axis, k->c.r, k->c.P, &k->val[in->arg[0]]);
	return true;
}

static bool
exec_allgather(PRank *k, const BlockGraph *g, const Blk *b, Val v, const Ins *in)
{
	const Tensor *x = &k->val[in->arg[0]];
	Tensor *y = &k->val[v];
	Box bx = one_box(k, &b->in[0]);
	Tensor s = sim_sub(x, bx.lo, bx.hi);
	double *recv = xmalloc((size_t)(s.n * k->c.P + 1) * sizeof *recv);
	CommChunk c = sim_chunk(in, v, CO_ALL_GATHER, s.v, recv, (size_t)s.n);
	bool self = g->choice[v].self_first, ok;
	int e = in->axis, P = k->c.P;
	c.id = b->index;
	if ((ok = sim_comm_call_on(&k->c, comm_of(k, g, v), &c, "all_gather"))) {
		for (int p = 0; p < P; p++) {
			int src = k->c.brk->on[BR_AG_ORDER] ? P - 1 - p : p;
			Tensor blk = s;
			int64_t lo[LIM_RANK];
			if (self && p == k->c.r)
				continue; /* the self chunk wrote it */
			memcpy(lo, bx.lo, sizeof lo);
			lo[e] += p * x->dim[e];
			blk.v = recv + (size_t)src * s.n;
			sim_put(y, lo, &blk);
		}
	}
	free(recv);
	sim_free(&s);
	return ok;
}

/* A pushed chunk: every rank's slot of this rank's rows, from its own
 * copy of the partial, added in rank order as the collective would. */
static bool
exec_pushed(PRank *k, const Blk *b, Val v, const Ins *in)
{
	const Tensor *land = &k->land[in->arg[0]];
	Tensor *y = &k->val[v];
	Box by = one_box(k, &b->out[0]);
	Tensor out = sim_sub(y, by.lo, by.hi);
	int64_t rows = y->dim[0], row = y->n / y->dim[0];
	for (int64_t i = by.lo[0]; i < by.hi[0]; i++)
		for (int64_t j = by.lo[1]; j < by.hi[1]; j++) {
			double acc = land->v[(size_t)(i * row + j)];
			for (int s = 1; s < k->c.P; s++)
				acc = sim_round(in->ty.dt, acc + land->v[(size_t)((s * rows + i) * row + j)]);
			out.v[(size_t)((i - by.lo[0]) * (by.hi[1] - by.lo[1]) + j - by.lo[1])] = acc;
		}
	sim_put(y, by.lo, &out);
	sim_free(&out);
	return true;
}

static bool
exec_reduce_scatter(PRank *k, const BlockGraph *g, const Blk *b, Val v, const Ins *in)
{
	const Tensor *x = &k->val[in->arg[0]];
	Tensor *y = &k->val[v];
	Box by = one_box(k, &b->out[0]);
	int e = in->axis, P = k->c.P;
	Tensor piece = sim_sub(y, by.lo, by.hi), out;
	double *send = xmalloc((size_t)(piece.n * P + 1) * sizeof *send);
	CommChunk c;
	bool ok;
	for (int p = 0; p < P; p++) { /* slice c of every destination's block */
		int64_t lo[LIM_RANK], hi[LIM_RANK];
		int dst = k->c.brk->on[BR_RS_BLOCK] ? (p + 1) % P : p;
		memcpy(lo, by.lo, sizeof lo);
		memcpy(hi, by.hi, sizeof hi);
		lo[e] += dst * y->dim[e];
		hi[e] += dst * y->dim[e];
		Tensor s = sim_sub(x, lo, hi);
		memcpy(send + (size_t)p * piece.n, s.v, (size_t)s.n * sizeof *send);
		sim_free(&s);
	}
	out = piece;
	c = sim_chunk(in, v, CO_REDUCE_SCATTER, send, out.v, (size_t)piece.n);
	c.id = b->index;
	if ((ok = sim_comm_call_on(&k->c, comm_of(k, g, v), &c, "reduce_scatter")))
		sim_put(y, by.lo, &out);
	free(send);
	sim_free(&piece);
	return ok;
}

/* One chunk of an all_to_all: block q of what it sends goes to rank q,
 * block q of what it receives comes from rank q (blk_a2a_block), packed
 * for the backend. */
static bool
exec_all_to_all(PRank *k, const BlockGraph *g, const Blk *b, Val v, const Ins *in)
{
	const Func *f = g->f;
	int P = k->c.P;
	Box q0 = blk_a2a_block(f, v, &b->in[0], 0, 0);
	Tensor s = sim_sub(&k->val[in->arg[0]], q0.lo, q0.hi);
	size_t n = (size_t)s.n;
	double *send = xmalloc((n * P + 1) * sizeof *send), *recv = xmalloc((n * P + 1) * sizeof *recv);
	CommChunk c = sim_chunk(in, v, CO_ALL_TO_ALL, send, recv, n);
	bool ok;
	sim_free(&s);
	for (int p = 0; p < P; p++) {
		Box q = blk_a2a_block(f, v, &b->in[0], 0, p);
		s = sim_sub(&k->val[in->arg[0]], q.lo, q.hi);
		memcpy(send + (size_t)p * n, s.v, n * sizeof *send);
		sim_free(&s);
	}
	c.id = b->index;
	if ((ok = sim_comm_call(&k->c, &c, "all_to_all")))
		for (int p = 0; p < P; p++) {
			int src = k->c.brk->on[BR_A2A_ORDER] ? P - 1 - p : p;
			Box q = blk_a2a_block(f, v, &b->out[0], 1, p);
			Tensor r = sim_sub(&k->val[v], q.lo, q.hi);
			memcpy(r.v, recv + (size_t)src * n, n * sizeof *recv);
			sim_put(&k->val[v], q.lo, &r);
			sim_free(&r);
		}
	free(send);
	free(recv);
	return ok;
}

/* all_reduce or shift of one box; a multi-node all_reduce in phases:
 * reduce-scatter inside the node, all_reduce of 1/G across nodes,
 * all_gather inside the node. */
static bool
exec_samebox(PRank *k, const BlockGraph *g, int bi, Val v, const Ins *in)
{
	const Blk *b = &g->b[bi];
	Tensor *y = &k->val[v];
	Box bx = one_box(k, &b->in[0]);
	Tensor s = sim_sub(&k->val[in->arg[0]], bx.lo, bx.hi), r = sim_sub(y, bx.lo, bx.hi);
	CommChunk c = sim_chunk(in, v, in->op == OP_SHIFT ? CO_SHIFT : CO_ALL_REDUCE, s.v, r.v, (size_t)s.n);
	bool ok = true;
	c.id = b->index;
	if (in->op == OP_SHIFT) {
		c.shift = (int)(k->c.brk->on[BR_SHIFT_BACK] ? (k->c.P - in->a) % k->c.P : in->a);
		if (c.shift == 0)
			memcpy(r.v, s.v, (size_t)s.n * sizeof *r.v);
		else
			ok = sim_comm_call_on(&k->c, comm_of(k, g, v), &c, "shift");
	} else if (k->c.brk->on[BR_AR_LOCAL]) {
		memcpy(r.v, s.v, (size_t)s.n * sizeof *r.v);
	} else {
		ok = sim_comm_call_on(&k->c, comm_of(k, g, v), &c, "all_reduce");
	}
	if (ok)
		sim_put(y, bx.lo, &r);
	sim_free(&s);
	sim_free(&r);
	return ok;
}

static bool
exec_phase(PRank *k, const BlockGraph *g, int bi, Val v, const Ins *in, int gpus)
{
	const Blk *b = &g->b[bi];
	int first = bi - b->phase, nodes = k->c.P / gpus;
	const Region *rin = &g->b[first].in[0];
	Box bx = one_box(k, rin);
	Tensor s = sim_sub(&k->val[in->arg[0]], bx.lo, bx.hi);
	size_t part = ((size_t)s.n + gpus - 1) / gpus;
	double **stg = &k->staging[first];
	CommChunk c;
	bool ok = true;
	if (b->phase == 0) {
		double *send = xcalloc(part * gpus + 1, sizeof *send); /* zero-padded to G parts */
		memcpy(send, s.v, (size_t)s.n * sizeof *send);
		*stg = xcalloc(part + 1, sizeof **stg);
		c = sim_chunk(in, v, CO_REDUCE_SCATTER, send, *stg, part);
		c.gsize = gpus, c.gstride = 1, c.id = b->index;
		ok = sim_comm_call_on(&k->c, comm_of(k, g, v), &c, "all_reduce (intra-node reduce-scatter phase)");
		free(send);
	} else if (b->phase == 1) {
		double *tmp = xmalloc((part + 1) * sizeof *tmp);
		c = sim_chunk(in, v, CO_ALL_REDUCE, *stg, tmp, part);
		c.gsize = nodes, c.gstride = gpus, c.id = b->index;
		if ((ok = sim_comm_call_on(&k->c, comm_of(k, g, v), &c, "all_reduce (inter-node phase)")))
			memcpy(*stg, tmp, part * sizeof *tmp);
		free(tmp);
	} else {
		double *all = xmalloc((part * gpus + 1) * sizeof *all);
		Tensor r = s;
		c = sim_chunk(in, v, CO_ALL_GATHER, *stg, all, part);
		c.gsize = gpus, c.gstride = 1, c.id = b->index;
		if ((ok = sim_comm_call_on(&k->c, comm_of(k, g, v), &c, "all_reduce (intra-node all-gather phase)"))) {
			r.v = all;
			sim_put(&k->val[v], bx.lo, &r);
		}
		free(all);
		free(*stg);
		*stg = NULL;
	}
	sim_free(&s);
	return ok;
}

static bool
exec_comm(PRank *k, const BlockGraph *g, int bi, int gpus)
{
	const Blk *b = &g->b[bi];
	Val v = b->node;
	const Ins *in = &k->c.f->ins[v];
	if (blk_is_self_chunk(g, b))
		return exec_self(k, b);
	if (b->nphase == 3)
		return exec_phase(k, g, bi, v, in, gpus);
	switch (in->op) {
	case OP_ALL_GATHER:
		return exec_allgather(k, g, b, v, in);
	case OP_REDUCE_SCATTER:
		return is_pushed(k, v) ? exec_pushed(k, b, v, in) : exec_reduce_scatter(k, g, b, v, in);
	case OP_ALL_TO_ALL:
		return exec_all_to_all(k, g, b, v, in);
	case OP_ALL_REDUCE:
	case OP_SHIFT:
		return exec_samebox(k, g, bi, v, in);
	case OP_RESHARD:
		return sim_run_reshard(&k->c, v, in, &k->val[in->arg[0]], &k->val[v]);
	default: { /* all_to_all: whole, through a context on the chunk's backend */
		SimCtx kc = k->c;
		bool ok;
		kc.comm = comm_of(k, g, v);
		if (!(ok = sim_run_comm(&kc, v, in, &k->val[in->arg[0]], &k->val[v])))
			memcpy(k->c.err, kc.err, sizeof kc.err);
		return ok;
	}
	}
}

/* ---- lanes ---- */

static void *
lane_main(void *arg)
{
	LaneArg *a = arg;
	PRank *k = a->k;
	const Plan *p = k->p;
	const BlockGraph *g = p->g;
	char name[96], other[96];
	bool back = k->c.brk->on[BR_COMM_ORDER] && a->lane == LANE_COMM && k->c.r == 0;
	for (int pos = 0; pos < p->norder[a->lane] && !k->failed; pos++) {
		int bi = p->order[a->lane][back ? p->norder[a->lane] - 1 - pos : pos];
		const Blk *b = &g->b[bi];
		bool ok;
		bool pushed = b->kind == BK_COMM && is_pushed(k, b->node);
		for (int j = 0; j < b->npred; j++) {
			const Blk *q = &g->b[b->pred[j]];
			/* a pushed chunk counts its bands' raises from every rank */
			bool from_all = pushed && q->kind == BK_COMPUTE && blk_region_overlap(&q->out[0], &b->in[0]);
			volatile uint64_t *fl = from_all ? &k->pushed[q->flag] : &k->flags[q->flag];
			if (q->lane == b->lane)
				continue;
			if (k->c.comm->wait_flag(k->c.comm, NULL, fl, from_all ? k->epoch * (uint64_t)k->c.P : k->epoch, q->flag) !=
			    0) {
				char why[700], count[120] = "";
				if (from_all) /* the backend's message says "epoch" of what is a count here */
					snprintf(count, sizeof count, " (the pushed band from every rank: %d raises a call, %llu by call %llu)",
					         k->c.P, (unsigned long long)(k->epoch * (uint64_t)k->c.P), (unsigned long long)k->epoch);
				snprintf(why, sizeof why, "waiting for flag f%d of %s%s: %s", q->flag,
				         blk_name(g, b->pred[j], other, sizeof other), count, k->c.comm->error(k->c.comm));
				fail(k, "rank %d: block %s, %s", blk_name(g, bi, name, sizeof name), why);
				return NULL;
			}
		}
		ok = b->kind == BK_COMM ? exec_comm(k, g, bi, k->gpus) : exec_compute(k, g, b);
		if (!ok) {
			char why[sizeof k->c.err];
			memcpy(why, k->c.err, sizeof why);
			if (!k->failed)
				fail(k, "rank %d: block %s failed: %s", blk_name(g, bi, name, sizeof name), why);
			return NULL;
		}
		if (b->flag >= 0)
			k->c.comm->raise_flag(k->c.comm, NULL, &k->flags[b->flag], k->epoch, b->flag);
	}
	return NULL;
}

/* ---- the race check ---- */

bool
sim_race_check(const Plan *p, char *why, size_t n)
{
	const BlockGraph *g = p->g;
	int N = g->n, words = (N + 63) / 64;
	uint64_t *hb = xcalloc((size_t)N * words + 1, sizeof *hb); /* hb[j]: blocks that happen before j */
	int *order = xmalloc((size_t)(N + 1) * sizeof *order), *deg = xcalloc((size_t)N + 1, sizeof *deg), h = 0, t = 0;
	bool ok = true;
	char a[96], b2[96];
	/* happens-before edges: lane order and cross-lane waits */
	for (int j = 0; j < N; j++) {
		const Blk *b = &g->b[j];
		deg[j] = b->pos > 0;
		for (int k = 0; k < b->npred; k++)
			deg[j] += g->b[b->pred[k]].lane != b->lane;
	}
	for (int j = 0; j < N; j++)
		if (!deg[j])
			order[t++] = j;
	while (h < t) {
		int i = order[h++];
		const Blk *b = &g->b[i];
		/* its successors: the next block of its lane (k = -1), then every
		 * waiter on the other lane -- as many as there are (an own block
		 * feeds a band per rank and chunk) */
		for (int k = -1; k < b->nsucc; k++) {
			int j = k < 0 ? (b->pos + 1 < p->norder[b->lane] ? p->order[b->lane][b->pos + 1] : -1) : b->succ[k];
			if (j < 0 || (k >= 0 && g->b[j].lane == b->lane))
				continue;
			for (int w = 0; w < words; w++)
				hb[(size_t)j * words + w] |= hb[(size_t)i * words + w];
			hb[(size_t)j * words + i / 64] |= 1ull << (i % 64);
			if (--deg[j] == 0)
				order[t++] = j;
		}
	}
	if (t != N) {
		snprintf(why, n, "lane orders and waits form a cycle: a deadlock");
		ok = false;
	}
	/* no element written by two blocks: a region lists what its block
	 * writes, no more (a block that claimed another's rows would compute
	 * them again, racing with it) */
	for (int j = 0; j < N && ok; j++)
		for (int i = 0; i < j && ok; i++)
			for (int r = 0; r < g->b[j].nout && ok; r++)
				for (int w = 0; w < g->b[i].nout && ok; w++)
					if (blk_region_overlap(&g->b[i].out[w], &g->b[j].out[r])) {
						snprintf(why, n, "%s and %s both write %%%d: a region claims more than its block writes",
						         blk_name(g, i, b2, sizeof b2), blk_name(g, j, a, sizeof a), g->b[j].out[r].v);
						ok = false;
					}
	/* every reader after every writer of what it reads */
	for (int j = 0; j < N && ok; j++)
		for (int r = 0; r < g->b[j].nin && ok; r++)
			for (int i = 0; i < N && ok; i++) {
				if (i == j)
					continue;
				for (int w = 0; w < g->b[i].nout && ok; w++)
					if (blk_region_overlap(&g->b[i].out[w], &g->b[j].in[r]) && !(hb[(size_t)j * words + i / 64] >> (i % 64) & 1)) {
						snprintf(why, n, "race: %s reads %%%d, which %s writes, with nothing ordering them",
						         blk_name(g, j, a, sizeof a), g->b[j].in[r].v, blk_name(g, i, b2, sizeof b2));
						ok = false;
					}
			}
	free(hb);
	free(order);
	free(deg);
	return ok;
}

/* ---- running ---- */

bool
sim_plan_run(const Plan *p, const Tensor *in, const SimOpts *o, int gpus, int calls, Tensor *out, char *err, size_t n)
{
	const Func *f = p->f;
	int P = f->nranks;
	PRank *ranks = xcalloc((size_t)P, sizeof *ranks);
	Tensor **shard = xcalloc((size_t)P, sizeof *shard), **vals = xcalloc((size_t)P, sizeof *vals);
	pthread_t *th = xcalloc((size_t)P * NLANES, sizeof *th);
	LaneArg *args = xcalloc((size_t)P * NLANES, sizeof *args);
	SimWorld *w = sim_world_new(P, o->timeout_ms);
	SimBreak brk;
	uint64_t rng = sim_shard_rng(o->seed);
	bool ok = sim_race_check(p, err, n);
	Val *push_of = push_table(p);
	char bad[80];
	if (!sim_parse_breaks(o->breaks, &brk, bad, sizeof bad))
		die("unknown break %s", bad);
	if (brk.on[BR_P2P_FLAG])
		sim_world_drop_flag(w, 0);
	for (int r = 0; r < P; r++)
		shard[r] = xcalloc((size_t)f->nin + 1, sizeof **shard);
	for (int i = 0; i < f->nin; i++)
		sim_make_shards(f, &in[i], i, shard, &rng);
	for (int r = 0; r < P; r++) {
		PRank *k = &ranks[r];
		k->c = (SimCtx){f, r, P, sim_backend(w, r), &brk, ""};
		k->p = p;
		k->gpus = gpus > 0 ? gpus : P;
		k->val = xcalloc((size_t)f->nins + 1, sizeof *k->val);
		k->flags = xcalloc((size_t)p->nflags + 1, sizeof *k->flags);
		k->staging = xcalloc((size_t)p->g->n + 1, sizeof *k->staging);
		k->all = ranks;
		k->push_of = push_of;
		k->land = xcalloc((size_t)f->nins + 1, sizeof *k->land);
		k->pushed = xcalloc((size_t)p->nflags + 1, sizeof *k->pushed);
		pthread_mutex_init(&k->mu, NULL);
		vals[r] = k->val;
	}
	for (int call = 1; call <= calls && ok; call++) {
		for (int r = 0; r < P; r++) { /* fresh, poisoned values; epoch = call */
			PRank *k = &ranks[r];
			k->epoch = (uint64_t)call;
			for (Val v = 0; v < f->nins; v++) {
				const Ins *i = &f->ins[v];
				sim_free(&k->val[v]);
				if (i->internal && ir_attn_group(f, i->group) >= 0)
					continue; /* inside the fused attention kernel: never made */
				k->val[v] = sim_tensor_of(&i->ty, true, P);
				if (i->op == OP_PARAM)
					sim_copy_flat(&shard[r][i->a], &k->val[v]);
				else if (i->op == OP_CONST)
					k->val[v].v[0] = sim_round(i->ty.dt, i->c);
				sim_free(&k->land[v]);
				if (k->push_of[v] >= 0) /* poisoned: a slot nobody pushed shows */
					k->land[v] = sim_tensor_of(&i->ty, true, P);
			}
		}
		for (int t = 0; t < P * NLANES; t++) {
			args[t] = (LaneArg){&ranks[t / NLANES], t % NLANES};
			if (pthread_create(&th[t], NULL, lane_main, &args[t]))
				die("cannot start a lane thread");
		}
		for (int t = 0; t < P * NLANES; t++)
			pthread_join(th[t], NULL);
		for (int i = -1; i < P && ok; i++) { /* the first to fail, then in rank order */
			int r = i < 0 ? sim_world_first(w) : i;
			if (r >= 0 && ranks[r].failed) {
				snprintf(err, n, "call %d: %s", call, ranks[r].c.err);
				ok = false;
			}
		}
		for (int i = 0; i < f->nout && ok; i++) {
			if (call > 1)
				sim_free(&out[i]);
			ok = sim_assemble(f, i, vals, &out[i], err, n);
		}
	}
	for (int r = 0; r < P; r++) {
		PRank *k = &ranks[r];
		for (Val v = 0; v < f->nins; v++) {
			sim_free(&k->val[v]);
			sim_free(&k->land[v]);
		}
		free(k->land);
		free(k->pushed);
		for (int i = 0; i < p->g->n; i++)
			free(k->staging[i]);
		free(k->staging);
		free(k->val);
		free(k->flags);
		pthread_mutex_destroy(&k->mu);
		for (int i = 0; i < f->nin; i++)
			sim_free(&shard[r][i]);
		free(shard[r]);
	}
	free(shard);
	free(vals);
	free(ranks);
	free(push_of);
	free(th);
	free(args);
	sim_world_free(w);
	return ok;
}
