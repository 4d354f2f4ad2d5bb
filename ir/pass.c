/* ir/pass.c -- graph passes.  Each has the shape `void pass(Func *)`; the
 * driver runs them in table order and the verifier after every one.  Each
 * is proven by the simulator: syncrun compares the ranks running the IR
 * after the passes with the oracle running the IR as sema made it, and the
 * test suite runs every example with and without each pass. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ---- rebuilding: passes that add or drop values copy the function ---- */

typedef struct Rw {
	const Func *old;
	Func *f;
	Val *map; /* old value -> new value (-1: dropped) */
} Rw;

static void
rw_begin(Rw *w, Func *old)
{
	w->old = ir_clone(old);
	w->f = old;
	w->map = xmalloc((size_t)(old->nins + 1) * sizeof *w->map);
	for (Val v = 0; v < old->nins; v++)
		w->map[v] = -1;
	old->nins = 0;
}

static Val
rw_emit(Rw *w, const Ins *in, const Val *args)
{
	Val v = ir_add(w->f, in->op, in->ty, args, in->narg, in->span);
	Ins *n = &w->f->ins[v];
	Val *keep = n->arg;
	*n = *in;
	n->arg = keep;
	n->group = v;
	n->internal = false;
	n->attn = -1;
	return v;
}

/* Copies old value v with its operands remapped through `map`. */
static Val
rw_copy(Rw *w, Val v, const Val *map)
{
	const Ins *in = &w->old->ins[v];
	Val args[64] = {0}, *a = in->narg > 64 ? xmalloc((size_t)in->narg * sizeof *a) : args, r;
	for (int i = 0; i < in->narg; i++) {
		a[i] = map[in->arg[i]];
		ASSERT(a[i] >= 0);
	}
	r = rw_emit(w, in, a);
	if (a != args)
		free(a);
	return r;
}

static void
rw_end(Rw *w)
{
	for (int i = 0; i < w->f->nin; i++)
		w->f->in[i] = w->map[w->f->in[i]];
	for (int i = 0; i < w->f->nout; i++)
		w->f->out[i] = w->map[w->f->out[i]];
	free(w->map);
	ir_func_free((Func *)w->old);
}

/* ---- autocomm ---- */

/* A `reshard` that sema inserted for a declared placement (or under
 * --auto-comm) becomes the one collective that reaches it. */
void
pass_autocomm(Func *f)
{
	for (Val v = 0; v < f->nins; v++) {
		Ins *in = &f->ins[v];
		const Type *from;
		if (in->op != OP_RESHARD)
			continue;
		from = &f->ins[in->arg[0]].ty;
		switch (from->pl.kind) {
		case PL_PARTIAL:
			in->red = from->pl.red;
			if (in->ty.pl.kind == PL_REPL) {
				in->op = OP_ALL_REDUCE;
			} else {
				in->op = OP_REDUCE_SCATTER;
				in->axis = in->ty.pl.dim;
			}
			break;
		case PL_SPLIT:
			in->axis = from->pl.dim;
			if (in->ty.pl.kind == PL_REPL) {
				in->op = OP_ALL_GATHER;
			} else {
				in->op = OP_ALL_TO_ALL;
				in->axis2 = in->ty.pl.dim;
			}
			break;
		case PL_REPL:
			in->op = OP_SCATTER;
			in->axis = in->ty.pl.dim;
			break;
		}
	}
}

/* ---- uses ---- */

typedef struct Uses {
	int *n;      /* consumers of each value */
	bool *ret;   /* returned */
} Uses;

static Uses
uses(const Func *f)
{
	Uses u = {xcalloc((size_t)f->nins + 1, sizeof(int)), xcalloc((size_t)f->nins + 1, sizeof(bool))};
	for (Val v = 0; v < f->nins; v++)
		for (int i = 0; i < f->ins[v].narg; i++)
			u.n[f->ins[v].arg[i]]++;
	for (int i = 0; i < f->nout; i++)
		u.ret[f->out[i]] = true;
	return u;
}

static void
uses_free(Uses *u)
{
	free(u->n);
	free(u->ret);
}

/* ---- dce: values nothing returned depends on ---- */

void
pass_dce(Func *f)
{
	bool *live = xcalloc((size_t)f->nins + 1, sizeof *live);
	Rw w;
	for (int i = 0; i < f->nout; i++)
		live[f->out[i]] = true;
	for (int i = 0; i < f->nin; i++)
		live[f->in[i]] = true; /* inputs stay: they are the signature */
	for (Val v = f->nins - 1; v >= 0; v--)
		if (live[v])
			for (int i = 0; i < f->ins[v].narg; i++)
				live[f->ins[v].arg[i]] = true;
	rw_begin(&w, f);
	for (Val v = 0; v < w.old->nins; v++)
		if (live[v])
			w.map[v] = rw_copy(&w, v, w.map);
	rw_end(&w);
	free(live);
}

/* ---- tfold: transpose(w) as a matmul's B, read in place ----
 * nn.Linear's y = x @ transpose(w) with w [N, K] would otherwise copy w
 * transposed through HBM before every matmul (a strided copy as slow as
 * the matmul at 8192 x 8192: bench/results/2026-12-04-overlap-h200.md);
 * the tensor cores read B K-major as readily as N-major. */

static bool
swaps_last_two(const Ins *t)
{
	int R = t->ty.rank;
	return t->op == OP_TRANSPOSE && R >= 2 && t->axis != t->axis2 && t->axis >= R - 2 && t->axis2 >= R - 2;
}

/* The matmul reads A's and w's rows whole and aligned: 16-bit elements,
 * row pitches and the local K a multiple of IR_TFOLD_ALIGN. */
static bool
tfold_fits(const Func *f, const Ins *mm, const Ins *w)
{
	const Type *ta = &f->ins[mm->arg[0]].ty, *tw = &w->ty;
	int64_t ka = ty_local_dim(ta, ta->rank - 1, f->nranks), kw = ty_local_dim(tw, tw->rank - 1, f->nranks);
	int64_t k = ta->pl.kind == PL_REPL && tw->pl.kind == PL_SPLIT && tw->pl.dim == tw->rank - 1 ? ka / f->nranks : ka;
	if ((mm->ty.dt != DT_BF16 && mm->ty.dt != DT_F16) || ta->dt != mm->ty.dt || tw->dt != mm->ty.dt)
		return false;
	/* k: what each rank contracts, where a @repl A is sliced to w's split
	 * K (a @repl w sliced to A's has slices of k too) */
	return ka % IR_TFOLD_ALIGN == 0 && kw % IR_TFOLD_ALIGN == 0 && k % IR_TFOLD_ALIGN == 0;
}

void
pass_tfold(Func *f)
{
	bool *attn1 = xcalloc((size_t)f->nins + 1, sizeof *attn1);
	for (Val v = 0; v < f->nins; v++) {
		Attn a;
		if (f->ins[v].op == OP_MATMUL && ir_attn_match(f, v, &a))
			attn1[a.mm1] = true;
	}
	for (Val v = 0; v < f->nins; v++) {
		Ins *mm = &f->ins[v];
		const Ins *t;
		if (mm->op != OP_MATMUL || mm->trans_b || attn1[v])
			continue;
		t = &f->ins[mm->arg[1]];
		if (!swaps_last_two(t) || !tfold_fits(f, mm, &f->ins[t->arg[0]]))
			continue;
		mm->arg[1] = t->arg[0];
		mm->trans_b = true;
	}
	free(attn1);
}

/* ---- solo: collectives over one rank (ir.h) ----
 * An all_gather at P = 1 before a matmul made the serial plan hold 16 SMs
 * back for the "collective" the matmul waited for (sp_mlp at P = 1: 1.82
 * ms against 1.46 for tp_mlp on one H100). */
void
pass_solo(Func *f)
{
	if (f->nranks != 1)
		return;
	for (Val v = 0; v < f->nins; v++) {
		Ins *in = &f->ins[v];
		if (ir_ops[in->op].cls == OC_COMM && in->narg == 1 && ty_same_shape(&in->ty, &f->ins[in->arg[0]].ty)) {
			in->op = OP_RESHAPE;
			in->autoins = true;
		}
	}
}

/* ---- headsum: a sum over a batched matmul's batch as one matmul (ir.h) ---- */

/* The sum of matmul m over dim 0 that headsum rewrites: m rank 3, both
 * operands [NB, ., .] batched alike, m read by `v` alone and not returned. */
static bool
headsum_fits(const Func *f, Val v, const Uses *u)
{
	const Ins *s = &f->ins[v], *m;
	const Type *ta, *tb;
	if (s->op != OP_SUM || s->axis != 0 || s->ty.rank != 3)
		return false;
	m = &f->ins[s->arg[0]];
	if (m->op != OP_MATMUL || m->trans_b || m->ty.rank != 3 || u->n[s->arg[0]] != 1 || u->ret[s->arg[0]])
		return false;
	ta = &f->ins[m->arg[0]].ty, tb = &f->ins[m->arg[1]].ty;
	if (ta->rank != 3 || tb->rank != 3 || ta->dim[0] != tb->dim[0] || ta->dim[0] < 2)
		return false;
	if ((m->ty.dt != DT_BF16 && m->ty.dt != DT_F16) || ta->dt != m->ty.dt || tb->dt != m->ty.dt || s->ty.dt != m->ty.dt)
		return false;
	if (ta->pl.kind == PL_SPLIT && tb->pl.kind == PL_SPLIT)
		return ta->pl.dim == 0 && tb->pl.dim == 0 && s->ty.pl.kind == PL_PARTIAL && s->ty.pl.red == RED_SUM;
	return ta->pl.kind == PL_REPL && tb->pl.kind == PL_REPL && s->ty.pl.kind == PL_REPL;
}

static Type
ty3(DType dt, int rank, int64_t d0, int64_t d1, int64_t d2, Place pl)
{
	Type t = {0};
	t.dt = dt, t.rank = rank, t.dim[0] = d0, t.dim[1] = d1, t.dim[2] = d2, t.pl = pl;
	return t;
}

void
pass_headsum(Func *f)
{
	Uses u = uses(f);
	bool *fit = xcalloc((size_t)f->nins + 1, sizeof *fit), any = false;
	Val *prod;
	Rw w;
	for (Val v = 0; v < f->nins; v++)
		any |= fit[v] = headsum_fits(f, v, &u);
	uses_free(&u);
	if (!any) {
		free(fit);
		return;
	}
	prod = xmalloc((size_t)(f->nins + 1) * sizeof *prod); /* a rewritten sum's [S, H] product */
	rw_begin(&w, f);
	for (Val v = 0; v < w.old->nins; v++) {
		const Ins *s = &w.old->ins[v], *m;
		const Type *ta, *tb;
		Place split1 = {PL_SPLIT, 1, 0}, split0 = {PL_SPLIT, 0, 0}, repl = {PL_REPL, 0, 0};
		bool sp;
		int64_t NB, S, D, H;
		Ins t, ra, rb, mm, out;
		Val x;
		prod[v] = -1;
		if (!fit[v]) { /* reshape(sum) back to [S, H] (as tp_attn_out's was) is the product itself */
			if (s->op == OP_RESHAPE && prod[s->arg[0]] >= 0 &&
			    ty_same_shape(&s->ty, &w.f->ins[prod[s->arg[0]]].ty) && pl_eq(s->ty.pl, w.f->ins[prod[s->arg[0]]].ty.pl)) {
				w.map[v] = prod[s->arg[0]];
				prod[s->arg[0]] = -1; /* one value: a second such reshape (two results) copies */
			} else
				w.map[v] = rw_copy(&w, v, w.map);
			continue;
		}
		m = &w.old->ins[s->arg[0]];
		ta = &w.old->ins[m->arg[0]].ty, tb = &w.old->ins[m->arg[1]].ty;
		sp = ta->pl.kind == PL_SPLIT;
		NB = ta->dim[0], S = ta->dim[1], D = ta->dim[2], H = tb->dim[2];
		t = *s, ra = *s, rb = *s, mm = *s, out = *s;
		t.op = OP_TRANSPOSE, t.narg = 1, t.axis = 0, t.axis2 = 1, t.name = 0, t.autoins = true;
		t.ty = ty3(s->ty.dt, 3, S, NB, D, sp ? split1 : repl);
		ra.op = OP_RESHAPE, ra.narg = 1, ra.name = 0, ra.autoins = true;
		ra.ty = ty3(s->ty.dt, 2, S, NB * D, 0, sp ? split1 : repl);
		rb = ra;
		rb.ty = ty3(s->ty.dt, 2, NB * D, H, 0, sp ? split0 : repl);
		mm.op = OP_MATMUL, mm.narg = 2, mm.name = 0, mm.autoins = true, mm.trans_b = false;
		mm.ty = ty3(s->ty.dt, 2, S, H, 0, s->ty.pl);
		out.op = OP_RESHAPE, out.narg = 1; /* the sum's own [1, S, H], its name */
		x = rw_emit(&w, &t, &w.map[m->arg[0]]);
		{
			Val a[2];
			a[0] = rw_emit(&w, &ra, &x);
			a[1] = rw_emit(&w, &rb, &w.map[m->arg[1]]);
			x = rw_emit(&w, &mm, a);
		}
		prod[v] = x;
		w.map[v] = rw_emit(&w, &out, &x);
	}
	rw_end(&w);
	free(prod);
	free(fit);
	pass_dce(f);
}

/* ---- arsplit: all_reduce + local work -> reduce_scatter, the work on
 * 1/P of the data, all_gather ----
 * Every rank otherwise repeats the same work on the whole reduced tensor.
 * The region is the values fed by the all_reduce (with @repl side
 * operands) that are local on the scattered dim: elementwise ops, and row
 * ops -- reductions over another dim, as rmsnorm's mean -- with what they
 * broadcast into.  It runs on this rank's block and each region value
 * used outside it is gathered.  Whether that pays is the cost model's
 * call: the two phases are two calls where the all_reduce was one (on the
 * H200 one all_reduce beats a reduce_scatter and an all_gather), against
 * 1/P of the region's work and phases the scheduler may chunk and overlap
 * apart.  So the driver plans the op both ways (ir_arsplit_one on a copy)
 * and keeps the faster; this pass alone is the rule it falls back on
 * without a profile: bytes -- all_reduce moves 2S(P-1)/P, reduce_scatter
 * S(P-1)/P and each gather S_i(P-1)/P -- split where the gathered bytes
 * do not exceed S and the region does work. */

typedef struct Region {
	bool *in;     /* value belongs to the region */
	int n;
	int dim;      /* the split dim */
} Region;

/* Whether v's result lives in y's index space split on `dim`: @repl, y's
 * rank, y's whole extent on dim, y's extent or 1 elsewhere. */
static bool
in_space(const Func *f, Val v, Val y, int dim)
{
	const Type *t = &f->ins[v].ty, *ty = &f->ins[y].ty;
	if (t->pl.kind != PL_REPL || t->rank != ty->rank || t->dim[dim] != ty->dim[dim])
		return false;
	for (int d = 0; d < t->rank; d++)
		if (t->dim[d] != ty->dim[d] && t->dim[d] != 1)
			return false;
	return true;
}

/* An op that is local on the split dim: elementwise, or a reduction over
 * another dim (a row op). */
static bool
local_op(const Ins *in, int dim)
{
	if (in->op == OP_CONST)
		return false;
	if (ir_ops[in->op].flags & OF_EW)
		return true;
	return ir_ops[in->op].cls == OC_REDUCE && in->axis != dim;
}

static void
grow_region(const Func *f, Val y, Region *r)
{
	r->in[y] = true;
	for (Val v = y + 1; v < f->nins; v++) {
		const Ins *in = &f->ins[v];
		bool fed = false, ok = local_op(in, r->dim) && in_space(f, v, y, r->dim);
		for (int i = 0; i < in->narg && ok; i++) {
			const Ins *a = &f->ins[in->arg[i]];
			if (r->in[in->arg[i]])
				fed = true;
			else if (a->ty.pl.kind != PL_REPL)
				ok = false;
		}
		if (ok && fed) {
			r->in[v] = true;
			r->n++;
		}
	}
}

static int
split_dim(const Type *t, int p)
{
	for (int d = 0; d < t->rank; d++)
		if (t->dim[d] % p == 0 && t->dim[d] >= p)
			return d;
	return -1;
}

/* Region values read outside it (or returned): each needs a gather. */
static double
gathered_bytes(const Func *f, const Region *r, Val y, const Uses *u, bool *out)
{
	double b = 0;
	for (Val v = y; v < f->nins; v++) {
		if (!r->in[v])
			continue;
		out[v] = u->ret[v];
		for (Val c = v + 1; c < f->nins && !out[v]; c++)
			for (int i = 0; i < f->ins[c].narg; i++)
				if (f->ins[c].arg[i] == v && !r->in[c])
					out[v] = true;
		if (out[v])
			b += (double)ty_numel(&f->ins[v].ty) * ty_dtypes[f->ins[v].ty.dt].size;
	}
	return b;
}

static void
rewrite_region(Func *f, Val y, const Region *r, const bool *out)
{
	Rw w;
	Val *inner = xmalloc((size_t)(f->nins + 1) * sizeof *inner);
	rw_begin(&w, f);
	for (Val v = 0; v < w.old->nins; v++) {
		const Ins *in = &w.old->ins[v];
		inner[v] = -1;
		if (!r->in[v]) {
			w.map[v] = rw_copy(&w, v, w.map);
			continue;
		}
		Val args[64] = {0};
		Ins ni = *in;
		ni.ty.pl = (Place){PL_SPLIT, r->dim, 0};
		if (v == y) {
			ni.op = OP_REDUCE_SCATTER;
			ni.axis = r->dim;
		}
		for (int i = 0; i < in->narg; i++)
			args[i] = r->in[in->arg[i]] ? inner[in->arg[i]] : w.map[in->arg[i]];
		inner[v] = w.map[v] = rw_emit(&w, &ni, args);
		if (out[v]) {
			Ins g = *in;
			g.op = OP_ALL_GATHER;
			g.narg = 1;
			g.axis = r->dim;
			g.name = 0;
			g.autoins = true;
			g.ty.pl = (Place){PL_REPL, 0, 0};
			w.map[v] = rw_emit(&w, &g, &inner[v]);
		}
	}
	rw_end(&w);
	free(inner);
}

/* Splits all_reduce y with its region: `how` 0 only where the byte rule
 * says it pays, 1 wherever it can (a bare all_reduce included); returns
 * the region's size (0: a bare all_reduce), -1 where it did not split. */
static int
split_one(Func *f, Val y, int how)
{
	Region r = {0};
	Uses u;
	bool *out;
	int done = -1;
	double sz, gb;
	if (f->ins[y].op != OP_ALL_REDUCE || f->nranks == 1 || (r.dim = split_dim(&f->ins[y].ty, f->nranks)) < 0)
		return -1;
	r.in = xcalloc((size_t)f->nins + 1, sizeof *r.in);
	out = xcalloc((size_t)f->nins + 1, sizeof *out);
	u = uses(f);
	grow_region(f, y, &r);
	sz = (double)ty_numel(&f->ins[y].ty) * ty_dtypes[f->ins[y].ty.dt].size;
	gb = gathered_bytes(f, &r, y, &u, out);
	if (how == 1 || (r.n > 0 && gb <= sz)) {
		rewrite_region(f, y, &r, out);
		done = r.n;
	}
	uses_free(&u);
	free(r.in);
	free(out);
	return done;
}

int
ir_arsplit_one(Func *f, Val y)
{
	return split_one(f, y, 1);
}

void
pass_arsplit(Func *f)
{
	for (Val y = 0; y < f->nins; y++)
		split_one(f, y, 0);
}

const PassInfo ir_passes[] = {
	{"autocomm", pass_autocomm, true},
	{"solo", pass_solo, false},
	{"headsum", pass_headsum, false},
	{"arsplit", pass_arsplit, false},
	{"tfold", pass_tfold, false},
	{"dce", pass_dce, false},
	{"fuse", pass_fuse, false},
	{"attn", pass_attn, false},
};
const int ir_npasses = (int)NELEM(ir_passes);
