/* ir/attn.c -- attention regions: matmul -> (scale, bias, mask, cast) ->
 * softmax over the keys -> matmul, however it was written (the stdlib's
 * `attention`, inline, with the division before or after the second
 * matmul, or returning the row max and row sum that ring attention merges
 * blocks with), recognised as one region.
 *
 * The pass only marks the region (Ins.attn: the second matmul, on every
 * member) and leaves the values as they are: the fuse pass still groups
 * them, and codegen still runs the region's kernels, until a fused kernel
 * takes the region whole.  The simulator's op-by-op run computes a
 * region as that kernel will, with an online softmax over tiles of keys
 * (sim_attention), from q, k, v and the bias alone: no scores are kept.
 * One matcher (ir_attn_match) serves the pass, the printer and the
 * simulator, so what is printed is what is run. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
nreaders(const Func *f, Val v, Val *one)
{
	int n = 0;
	for (Val c = v + 1; c < f->nins; c++)
		for (int i = 0; i < f->ins[c].narg; i++)
			if (f->ins[c].arg[i] == v) {
				n++;
				if (one)
					*one = c;
				break;
			}
	return n;
}

static bool
returned(const Func *f, Val v)
{
	for (int i = 0; i < f->nout; i++)
		if (f->out[i] == v)
			return true;
	return false;
}

static bool
is_float(DType dt)
{
	return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16;
}

static void
add_member(Attn *a, Val v)
{
	if (a->nmem < ATTN_MAX_MEMBERS)
		a->mem[a->nmem++] = v;
}

/* A scalar constant operand of binary op `in`: its value, the other
 * operand in *x. */
static bool
scalar_side(const Func *f, const Ins *in, Val *x, double *c)
{
	for (int i = 0; i < 2; i++) {
		const Ins *k = &f->ins[in->arg[i]];
		if (k->op == OP_CONST && k->ty.rank == 0) {
			*x = in->arg[1 - i];
			*c = k->c;
			return i == 1 || in->op != OP_DIV; /* c / x is no scale */
		}
	}
	return false;
}

/* b can be the bias of scores shaped like `in`: a float tensor that
 * broadcasts to them from the right. */
static bool
bias_fits(const Func *f, const Ins *in, Val b)
{
	const Type *tb = &f->ins[b].ty, *ts = &in->ty;
	if (tb->rank > ts->rank || tb->pl.kind == PL_PARTIAL || !is_float(tb->dt) || f->ins[b].op == OP_CONST)
		return false;
	for (int d = 0; d < tb->rank; d++)
		if (tb->dim[d] != 1 && tb->dim[d] != ts->dim[d + ts->rank - tb->rank])
			return false;
	return true;
}

/* From the value softmax reads back to the first matmul: casts, positive
 * scales, one bias, one causal mask.  Walking backwards, a scale met
 * before the bias (late) would scale the bias too, which the region does
 * not: then it is no region.  An add tries either side as the chain. */
static bool
walk_scores(const Func *f, Val s, Attn *a, bool bias, bool late, bool mask, int depth)
{
	const Ins *in = &f->ins[s];
	Val x;
	double c;
	if (depth > 16)
		return false;
	if (in->op == OP_MATMUL) {
		a->mm1 = s;
		return true;
	}
	if (in->ty.pl.kind == PL_PARTIAL)
		return false;
	switch (in->op) {
	case OP_CAST:
		if (!is_float(in->ty.dt))
			return false;
		add_member(a, s);
		return walk_scores(f, in->arg[0], a, bias, late, mask, depth + 1);
	case OP_MUL: case OP_DIV:
		if (!scalar_side(f, in, &x, &c) || !(c > 0) || !isfinite(c)) /* a negative one flips the mask */
			return false;
		a->scale *= in->op == OP_MUL ? c : 1 / c;
		add_member(a, s);
		return walk_scores(f, x, a, bias, late || !bias, mask, depth + 1);
	case OP_ADD:
		if (bias || late)
			return false;
		for (int i = 0; i < 2; i++) {
			Attn save = *a;
			if (bias_fits(f, in, in->arg[1 - i]) && ty_same_shape(&f->ins[in->arg[i]].ty, &in->ty)) {
				a->bias = in->arg[1 - i];
				add_member(a, s);
				if (walk_scores(f, in->arg[i], a, true, late, mask, depth + 1))
					return true;
			}
			*a = save;
		}
		return false;
	case OP_CAUSAL:
		if (mask)
			return false;
		a->causal = true;
		a->diag = in->a;
		add_member(a, s);
		return walk_scores(f, in->arg[0], a, bias, late, true, depth + 1);
	default:
		return false;
	}
}

static bool
last_reduce(const Func *f, Val v, Op op, Val x)
{
	const Ins *in = &f->ins[v];
	return in->op == op && in->arg[0] == x && in->axis == in->ty.rank - 1;
}

/* Every member but the exports (o, the row max, the row sum) is read only
 * by members, and whatever reads an export outside comes after the second
 * matmul, where the region is computed. */
static bool
closed(const Func *f, const Attn *a)
{
	for (int i = 0; i < a->nmem; i++) {
		Val m = a->mem[i];
		bool export = m == a->mm2 || m == a->max || m == a->sum;
		if (!export && returned(f, m))
			return false;
		for (Val c = m + 1; c < f->nins; c++) {
			bool reads = false, member = false;
			for (int j = 0; j < f->ins[c].narg; j++)
				reads = reads || f->ins[c].arg[j] == m;
			if (!reads)
				continue;
			for (int j = 0; j < a->nmem; j++)
				member = member || a->mem[j] == c;
			if (!member && (!export || c < a->mm2))
				return false;
		}
	}
	return true;
}

bool
ir_attn_match(const Func *f, Val mm2, Attn *a)
{
	const Ins *o = &f->ins[mm2], *mi;
	Val p, e, s, m, l = -1, sub, kt;
	int R = o->ty.rank;
	memset(a, 0, sizeof *a);
	a->bias = a->sum = -1;
	a->mm2 = mm2;
	if (o->op != OP_MATMUL || R < 2)
		return false;
	p = o->arg[0];
	a->v = o->arg[1];
	add_member(a, mm2);
	/* the probabilities: cast(e / l), cast(e), e / l or e */
	a->pdt = f->ins[p].ty.dt;
	if (f->ins[p].op == OP_CAST) {
		add_member(a, p);
		p = f->ins[p].arg[0];
	}
	if (f->ins[p].op == OP_DIV && f->ins[f->ins[p].arg[1]].op == OP_SUM) {
		e = f->ins[p].arg[0];
		l = f->ins[p].arg[1];
		if (!last_reduce(f, l, OP_SUM, e))
			return false;
		a->normed = true;
		add_member(a, p);
	} else {
		e = p;
	}
	if (f->ins[e].op != OP_EXP || f->ins[e].ty.dt != DT_F32 || f->ins[e].ty.rank != R)
		return false;
	add_member(a, e);
	sub = f->ins[e].arg[0];
	if (f->ins[sub].op != OP_SUB)
		return false;
	add_member(a, sub);
	s = f->ins[sub].arg[0];
	m = f->ins[sub].arg[1];
	if (!last_reduce(f, m, OP_AMAX, s))
		return false;
	a->max = m;
	add_member(a, m);
	/* an unnormalised region may still export the row sum */
	if (l < 0)
		for (Val c = e + 1; c < f->nins; c++)
			if (last_reduce(f, c, OP_SUM, e)) {
				l = c;
				break;
			}
	a->sum = l;
	if (l >= 0)
		add_member(a, l);
	/* the scores: read by the row max and the subtraction alone */
	if (nreaders(f, s, NULL) != 2 || returned(f, s))
		return false;
	a->scale = 1;
	if (!walk_scores(f, s, a, false, false, false, 0))
		return false;
	add_member(a, a->mm1);
	mi = &f->ins[a->mm1];
	a->q = mi->arg[0];
	kt = mi->arg[1];
	if (f->ins[kt].op != OP_TRANSPOSE || f->ins[kt].axis != R - 2 || f->ins[kt].axis2 != R - 1)
		return false;
	a->k = f->ins[kt].arg[0];
	if (nreaders(f, kt, NULL) == 1 && !returned(f, kt))
		add_member(a, kt);
	/* q [.., Sq, D], k [.., Sk, D], v [.., Sk, Dv]: one batch, no broadcasting */
	{
		const Type *tq = &f->ins[a->q].ty, *tk = &f->ins[a->k].ty, *tv = &f->ins[a->v].ty, *ts = &mi->ty;
		if (tq->rank != R || tk->rank != R || tv->rank != R || tq->dt != tk->dt || !is_float(tq->dt))
			return false;
		for (int d = 0; d < R - 2; d++)
			if (tq->dim[d] != tk->dim[d] || tq->dim[d] != tv->dim[d])
				return false;
		if (tk->dim[R - 1] != tq->dim[R - 1] || tv->dim[R - 2] != tk->dim[R - 2])
			return false;
		/* rows are local to a rank (heads or queries split), every key is here */
		for (int i = 0; i < a->nmem; i++) {
			const Type *t = &f->ins[a->mem[i]].ty;
			if (t->pl.kind == PL_PARTIAL)
				return false;
		}
		if (ts->pl.kind == PL_SPLIT && ts->pl.dim == R - 1)
			return false;
		if (tk->pl.kind == PL_SPLIT && tk->pl.dim >= R - 2)
			return false;
		if (tv->pl.kind == PL_SPLIT && tv->pl.dim >= R - 2)
			return false;
		if (a->nmem == ATTN_MAX_MEMBERS)
			return false;
	}
	return closed(f, a);
}

/* v is read past the region: returned, or read by a non-member. */
static bool
exported(const Func *f, Val v)
{
	if (returned(f, v))
		return true;
	for (Val c = v + 1; c < f->nins; c++)
		for (int i = 0; i < f->ins[c].narg; i++)
			if (f->ins[c].arg[i] == v && f->ins[c].attn != f->ins[v].attn)
				return true;
	return false;
}

static bool
same_place(const Place *a, const Place *b)
{
	return a->kind == b->kind && (a->kind != PL_SPLIT || a->dim == b->dim);
}

/* Why the fused kernel (codegen/attn.c) cannot run a marked region, or
 * NULL: its limits, kept here because the pass decides the grouping and
 * the plan says why (codegen checks the kernel's own limits again). */
const char *
ir_attn_unfused_why(const Func *f, const Attn *a, char *buf, size_t n)
{
	const Type *tq = &f->ins[a->q].ty, *tk = &f->ins[a->k].ty, *tv = &f->ins[a->v].ty, *to = &f->ins[a->mm2].ty;
	int R = tq->rank;
	int64_t d = ty_local_dim(tq, R - 1, f->nranks), dv = ty_local_dim(tv, R - 1, f->nranks);
	bool mx = exported(f, a->max), sm = a->sum >= 0 && exported(f, a->sum);
	if (a->bias >= 0)
		snprintf(buf, n, "it adds a bias %%%d (the fused kernel has no bias input)", a->bias);
	else if ((tq->dt != DT_BF16 && tq->dt != DT_F16) || tk->dt != tq->dt || tv->dt != tq->dt || to->dt != tq->dt ||
	         a->pdt != tq->dt)
		snprintf(buf, n, "q, k, v, the probabilities and the output are not all bf16 or all f16 (q is %s)",
		         ty_dtypes[tq->dt].name);
	else if ((d != 64 && d != 128) || dv != d)
		snprintf(buf, n, "the head dim is %lld (the fused kernel takes 64 or 128, the same for v)", (long long)dv);
	else if (!(same_place(&tq->pl, &to->pl) && same_place(&tk->pl, &tv->pl) &&
	           (same_place(&tq->pl, &tk->pl) || (tq->pl.kind == PL_SPLIT && tq->pl.dim == R - 2 && tk->pl.kind == PL_REPL))))
		snprintf(buf, n, "q, k, v and the output are split differently");
	else if (a->causal && tq->pl.kind == PL_SPLIT && tq->pl.dim == R - 2)
		snprintf(buf, n, "it is causal with the queries split across ranks (one diagonal per kernel)");
	else if (mx && a->sum < 0)
		snprintf(buf, n, "it exports the row max without a row sum");
	else if ((mx || sm) && (f->ins[a->max].ty.dt != DT_F32 || f->ins[a->sum].ty.dt != DT_F32))
		snprintf(buf, n, "its row max or row sum is not f32");
	else
		return NULL;
	return buf;
}

/* The region's members become one fused group anchored at the first of
 * them, every one kept inside the kernel but the exports.  A value that
 * fusion had put in a member's group without being a member (an epilogue
 * after the second matmul) becomes a kernel of its own. */
static void
regroup(Func *f, const Attn *a)
{
	Val anchor = a->mm2;
	bool *mem = xcalloc((size_t)f->nins + 1, sizeof *mem);
	for (int i = 0; i < a->nmem; i++) {
		mem[a->mem[i]] = true;
		if (a->mem[i] < anchor)
			anchor = a->mem[i];
	}
	/* the rest of a member's group (an epilogue of the second matmul):
	 * if all elementwise, one kernel at the first of them; else each
	 * one alone, stored */
	Val *moved = xcalloc((size_t)f->nins + 1, sizeof *moved);
	bool *mixed = xcalloc((size_t)f->nins + 1, sizeof *mixed);
	for (Val v = 0; v < f->nins; v++) {
		moved[v] = -1;
		if (!mem[v] && mem[f->ins[v].group] && !(ir_ops[f->ins[v].op].flags & OF_EW))
			mixed[f->ins[v].group] = true;
	}
	for (Val v = 0; v < f->nins; v++) {
		Val g = f->ins[v].group;
		if (mem[v] || !mem[g])
			continue;
		if (mixed[g]) {
			f->ins[v].group = v;
			f->ins[v].internal = false;
			continue;
		}
		if (moved[g] < 0)
			moved[g] = v;
		f->ins[v].group = moved[g];
	}
	free(moved);
	free(mixed);
	/* the kernel stores the row max and sum together: one read outside the
	 * region (a merge that needs only the sum, as ring attention's last
	 * step) stores the other too */
	bool stats = exported(f, a->max) || (a->sum >= 0 && exported(f, a->sum));
	for (int i = 0; i < a->nmem; i++) {
		Val m = a->mem[i];
		f->ins[m].group = anchor;
		f->ins[m].internal = !(m == a->mm2 || ((m == a->max || m == a->sum) && stats));
	}
	free(mem);
}

void
pass_attn(Func *f)
{
	for (Val v = 0; v < f->nins; v++) {
		Attn a;
		bool taken = false;
		char why[160];
		if (f->ins[v].op != OP_MATMUL || !ir_attn_match(f, v, &a))
			continue;
		for (int i = 0; i < a.nmem; i++)
			taken = taken || f->ins[a.mem[i]].attn >= 0;
		if (taken) /* a member of an earlier region (its second matmul) */
			continue;
		for (int i = 0; i < a.nmem; i++)
			f->ins[a.mem[i]].attn = v;
		if (!ir_attn_unfused_why(f, &a, why, sizeof why))
			regroup(f, &a);
	}
}

Val
ir_attn_group(const Func *f, Val a)
{
	Val mm2 = f->ins[a].attn;
	/* the probabilities are in the output's group only when the region is fused */
	return mm2 >= 0 && f->ins[a].group == a && f->ins[mm2].group == a && f->ins[f->ins[mm2].arg[0]].group == a ? mm2
	                                                                                                          : -1;
}

/*     ; attention: q %0, k %1, v %2, scale 0.125, causal[0], bias %5;
 *     out normalised, row max %8, row sum %11 (the exported ones) */
void
ir_attn_print(Buf *b, const Func *f, Val mm2)
{
	Attn a;
	if (!ir_attn_match(f, mm2, &a))
		return;
	buf_printf(b, "    ; attention: q %%%d, k %%%d, v %%%d, scale %.9g", a.q, a.k, a.v, a.scale);
	if (a.causal)
		buf_printf(b, ", causal[%lld]", (long long)a.diag);
	if (a.bias >= 0)
		buf_printf(b, ", bias %%%d", a.bias);
	buf_printf(b, "; out %s", a.normed ? "normalised" : "unnormalised");
	if (exported(f, a.max))
		buf_printf(b, ", row max %%%d", a.max);
	if (a.sum >= 0 && exported(f, a.sum))
		buf_printf(b, ", row sum %%%d", a.sum);
	buf_printf(b, "\n");
}
