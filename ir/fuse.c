/* ir/fuse.c -- the fuse pass, and what a fused group is.
 *
 * A matmul, a reduction or an elementwise op anchors a group.  An
 * elementwise op whose result has the anchor's shape and placement joins
 * the group of an operand (a matmul epilogue, a chain of kernel calls).
 * A reduction over the first or last dim of a value in an elementwise
 * group joins it too, which makes a row group: the elementwise work
 * before the reduction, the reduction, the per-row work after it
 * (rsqrt(mean + eps)) and the broadcast consumers of that (x * rsqrt(..))
 * are one kernel that reads its rows once -- norms and softmax are one
 * kernel, with no f32 intermediate in HBM (DESIGN §5).  A row group's
 * reductions are its stages, in order (codegen/rows.c runs them).  A
 * reduction over a dim with one element per rank (ir_reduce_ew: a size-1
 * dim, or a split dim of size P) is no stage: it is elementwise work and
 * joins and anchors groups as such -- a row kernel over rows one element
 * long found no whole rows to read and refused (issue 16).
 *
 * A member read only inside its group is `internal`: it lives in
 * registers (f32) and is never stored.  Joining is refused when another
 * operand's kernel depends on the group (one kernel would wait on itself)
 * and where the kernel would pass the backend's limits (FUSE_MAX_*:
 * tensors read and instructions are counted as members join; a group that
 * stores too many tensors, or a row group the row kernel cannot run, is
 * cut in half and the pass runs again), so a valid op never fails to
 * lower because fusion made its kernel too big. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* A reduction that is a row group's stage: one over a dim of one element
 * per rank is elementwise instead (ir_reduce_ew). */
static bool
is_stage(const Func *f, const Ins *in)
{
	return ir_ops[in->op].cls == OC_REDUCE && !ir_reduce_ew(f, in);
}

/* ---- shapes in a row group ---- */

static bool
same_local(const Func *f, Val a, Val b)
{
	const Type *ta = &f->ins[a].ty, *tb = &f->ins[b].ty;
	if (ta->rank != tb->rank)
		return false;
	for (int d = 0; d < ta->rank; d++)
		if (ty_local_dim(ta, d, f->nranks) != ty_local_dim(tb, d, f->nranks))
			return false;
	return true;
}

/* v has the group's iteration space (a whole row per row). */
static bool
is_full(const Func *f, const RowGroup *rg, Val v)
{
	return ty_same_shape(&f->ins[v].ty, &f->ins[rg->space].ty) && same_local(f, v, rg->space);
}

/* v has one value per row: the space with the reduced dim 1. */
static bool
is_row(const Func *f, const RowGroup *rg, Val v)
{
	const Type *t = &f->ins[v].ty, *s = &f->ins[rg->space].ty;
	if (t->rank != s->rank)
		return false;
	for (int d = 0; d < t->rank; d++)
		if (t->dim[d] != (d == rg->axis ? 1 : s->dim[d]))
			return false;
	return true;
}

bool
ir_row_strides(const Func *f, const RowGroup *rg, Val u, int64_t st[2])
{
	const Type *ts = &f->ins[rg->space].ty, *tu = &f->ins[u].ty;
	int R = ts->rank, ax = rg->axis;
	int64_t sd[LIM_RANK], ud[LIM_RANK], rm[LIM_RANK], bs[LIM_RANK], mult = 1, s0 = -1, acc = 1;
	if (tu->rank > R)
		return false;
	ty_local_shape(ts, f->nranks, sd);
	ty_local_shape(tu, f->nranks, ud);
	for (int i = tu->rank - 1; i >= 0; i--) {
		rm[i] = acc;
		acc *= ud[i];
	}
	/* u's stride along each dim of the space (numpy's right alignment;
	 * 0 where u is stretched) */
	for (int d = 0; d < R; d++) {
		int k = d - (R - tu->rank);
		bs[d] = k < 0 || ud[k] == 1 ? 0 : rm[k];
		if (k >= 0 && ud[k] != 1 && ud[k] < sd[d])
			return false; /* a sliced operand the space does not cover */
	}
	/* the row index runs over the other dims in row-major order, so u's
	 * offset must be s0 * row: each dim's stride s0 times its multiplier */
	for (int d = R - 1; d >= 0; d--) {
		if (d == ax)
			continue;
		if (sd[d] > 1) {
			if (bs[d] % mult)
				return false;
			if (s0 < 0)
				s0 = bs[d] / mult;
			else if (bs[d] != s0 * mult)
				return false;
		}
		mult *= sd[d];
	}
	if (s0 < 0) /* one row */
		s0 = is_full(f, rg, u) ? (ax == R - 1 ? sd[ax] : 1) : 0;
	st[0] = s0;
	st[1] = bs[ax];
	return true;
}

/* The members of group a whose value another member reads past the
 * per-row work of v's own stage (or that are stored). */
static bool
exported(const Func *f, const RowGroup *rg, const int *stage_of, Val a, Val v)
{
	if (!f->ins[v].internal)
		return true;
	for (Val c = v + 1; c < f->nins; c++) {
		const Ins *ci = &f->ins[c];
		if (ci->group != a)
			continue;
		for (int i = 0; i < ci->narg; i++)
			if (ci->arg[i] == v && !(!is_stage(f, ci) && is_row(f, rg, c) &&
			                         stage_of[c] == stage_of[v]))
				return true;
	}
	return false;
}

/* A member computed from inputs alone, stretched where it is read. */
static bool
is_leaf(const Func *f, Val a, Val m)
{
	const Ins *in = &f->ins[m];
	for (int i = 0; i < in->narg; i++)
		if (f->ins[in->arg[i]].group == a)
			return false;
	return in->internal;
}

static int
rg_fail(const char **why, const char *msg)
{
	*why = msg;
	return -1;
}

/* Stage k's result: the one value read past its per-row work, else the
 * reduction itself (then every later per-row value is recomputed from it
 * where it is read). */
static int
pick_results(const Func *f, RowGroup *rg, const int *stage_of, Val a, const char **why)
{
	for (int k = 0; k < rg->nstage; k++) {
		int n = 0;
		Val one = rg->stage[k];
		for (Val v = rg->stage[k]; v < f->nins; v++)
			if (f->ins[v].group == a && stage_of[v] == k && exported(f, rg, stage_of, a, v))
				n++, one = v;
		rg->res[k] = n == 1 ? one : rg->stage[k];
		for (Val v = rg->stage[k]; n > 1 && v < f->nins; v++)
			if (f->ins[v].group == a && stage_of[v] == k && !f->ins[v].internal && v != rg->stage[k])
				return rg_fail(why, "a row group stores two per-row values of one stage");
	}
	return 1;
}

int
ir_rowgroup(const Func *f, Val a, RowGroup *rg, int *stage_of, const char **why)
{
	bool fullin = false;
	memset(rg, 0, sizeof *rg);
	rg->space = -1;
	*why = NULL;
	for (Val m = a; m < f->nins; m++) {
		const Ins *in = &f->ins[m];
		if (in->group != a)
			continue;
		stage_of[m] = -1;
		if (!is_stage(f, in))
			continue;
		if (!rg->nstage) {
			rg->space = in->arg[0];
			rg->axis = in->axis;
		} else if (in->axis != rg->axis || !is_full(f, rg, in->arg[0]))
			return rg_fail(why, "a row group's reductions reduce different rows");
		if (rg->nstage == FUSE_MAX_STAGES)
			return rg_fail(why, "a row group has more than 4 reductions");
		stage_of[m] = rg->nstage;
		rg->stage[rg->nstage] = rg->res[rg->nstage] = m;
		rg->nstage++;
	}
	if (!rg->nstage)
		return 0;
	{
		const Type *ts = &f->ins[rg->space].ty;
		for (int d = 0; d < rg->axis && rg->axis != ts->rank - 1; d++)
			if (ty_local_dim(ts, d, f->nranks) != 1)
				return rg_fail(why, "a row group reduces a middle dim");
	}
	for (Val m = a; m < f->nins; m++) {
		const Ins *in = &f->ins[m];
		if (in->group != a)
			continue;
		if (!is_stage(f, in) && is_row(f, rg, m)) {
			for (int i = 0; i < in->narg; i++)
				if (f->ins[in->arg[i]].group == a && stage_of[in->arg[i]] > stage_of[m])
					stage_of[m] = stage_of[in->arg[i]];
			if (stage_of[m] < 0 && !in->internal)
				return rg_fail(why, "a row group stores a per-row value that no reduction made");
		} else if (!is_stage(f, in) && !is_full(f, rg, m) && !is_leaf(f, a, m))
			return rg_fail(why, "a row group member is neither per element nor per row");
		for (int i = 0; i < in->narg; i++) {
			Val u = in->arg[i];
			int64_t st[2];
			if (f->ins[u].group == a || f->ins[u].op == OP_CONST)
				continue;
			if (!ir_row_strides(f, rg, u, st))
				return rg_fail(why, "a row group reads a tensor laid out across its rows");
			fullin = fullin || (rg->axis == f->ins[rg->space].ty.rank - 1 ? st[1] == 1 && st[0] > 0
			                                                                : st[0] == 1 && st[1] > 1);
		}
	}
	if (!fullin)
		return rg_fail(why, "a row group reads no whole rows");
	return pick_results(f, rg, stage_of, a, why);
}

Val
ir_group_space(const Func *f, Val a, int *axis)
{
	Val mm2 = ir_attn_group(f, a);
	if (mm2 >= 0) { /* a fused attention region: the output's rows, no row group */
		*axis = -1;
		return mm2;
	}
	for (Val m = a; m < f->nins; m++)
		if (f->ins[m].group == a && is_stage(f, &f->ins[m])) {
			*axis = f->ins[m].axis;
			return f->ins[m].arg[0];
		}
	*axis = -1;
	return a;
}

/* ---- the pass ---- */

static bool
anchor_kind(const Ins *in)
{
	OpClass c = ir_ops[in->op].cls;
	return c == OC_MATMUL || c == OC_REDUCE || ((ir_ops[in->op].flags & OF_EW) && in->op != OP_CONST);
}

/* The groups formed so far: each group's members as a list (first[g],
 * next[m]; -1 ends it), what it reads from outside (at most
 * FUSE_MAX_TENSORS: the kernel's inputs), its reductions, and the memo of
 * one reachability question. */
typedef struct Group {
	int nmem, cap;                /* members; most allowed (0: any) */
	int ins;                      /* instructions its programs may take (an upper bound) */
	Val in[FUSE_MAX_TENSORS + 1]; /* tensors read from outside */
	int nin;
	int nstage, axis;             /* reductions and the dim they reduce */
	Val space;                    /* a row group's whole-row shape, -1 */
} Group;

typedef struct Groups {
	Val *first, *next;
	Group *g;  /* by anchor */
	char *memo; /* 0 unknown, 1 on the path, 2 yes, 3 no */
} Groups;

/* Whether kernel (group) h reads, directly or through other kernels, a
 * member of group g.  Groups, not values: a kernel starts when all of its
 * members' inputs are ready, so a member that joins a group later adds
 * the group's inputs too (a value-level check missed that, and two groups
 * each ended up waiting on the other). */
static bool
group_reaches(const Func *f, const Groups *gs, Val h, Val g)
{
	if (h == g)
		return true;
	if (gs->memo[h])
		return gs->memo[h] == 2;
	gs->memo[h] = 1;
	for (Val m = gs->first[h]; m >= 0; m = gs->next[m])
		for (int i = 0; i < f->ins[m].narg; i++) {
			Val k = f->ins[f->ins[m].arg[i]].group;
			if (k != h && group_reaches(f, gs, k, g)) {
				gs->memo[h] = 2;
				return true;
			}
		}
	gs->memo[h] = 3;
	return false;
}

/* The tensors v would add to group g's inputs; false past the limit. */
static bool
inputs_fit(const Func *f, const Group *gr, Val g, Val v)
{
	int n = gr->nin;
	Val add[2] = {-1, -1};
	for (int i = 0; i < f->ins[v].narg && i < 2; i++) {
		Val u = f->ins[v].arg[i];
		bool seen = f->ins[u].group == g || f->ins[u].op == OP_CONST || u == add[0];
		for (int j = 0; j < gr->nin && !seen; j++)
			seen = gr->in[j] == u;
		if (!seen)
			add[i] = u, n++;
	}
	return n <= FUSE_MAX_TENSORS;
}

static void
add_inputs(const Func *f, Group *gr, Val g, Val v)
{
	for (int i = 0; i < f->ins[v].narg; i++) {
		Val u = f->ins[v].arg[i];
		bool seen = f->ins[u].group == g || f->ins[u].op == OP_CONST;
		for (int j = 0; j < gr->nin && !seen; j++)
			seen = gr->in[j] == u;
		if (!seen && gr->nin <= FUSE_MAX_TENSORS)
			gr->in[gr->nin++] = u;
	}
}

/* Every tensor group g reads can be indexed by (row, column) once its
 * rows are those of `space` reduced along `axis`. */
static bool
inputs_rowwise(const Func *f, const Group *gr, Val space, int axis, Val extra)
{
	RowGroup rg = {.space = space, .axis = axis};
	int64_t st[2];
	for (int j = 0; j < gr->nin; j++)
		if (!ir_row_strides(f, &rg, gr->in[j], st))
			return false;
	for (int i = 0; extra >= 0 && i < f->ins[extra].narg; i++) {
		Val u = f->ins[extra].arg[i];
		if (f->ins[u].op != OP_CONST && !ir_row_strides(f, &rg, u, st))
			return false;
	}
	return true;
}

/* Whether reduction v (a stage: its rows are longer than one element)
 * may join the group of its operand p: an elementwise or row group whose
 * rows it reduces, over the first or the last dim, without making a
 * partial value. */
static bool
reduce_fits(const Func *f, const Groups *gs, Val v, Val p)
{
	const Ins *in = &f->ins[v], *pi = &f->ins[p];
	Val g = pi->group;
	const Group *gr = &gs->g[g];
	const Ins *an = &f->ins[g];
	int ax = in->axis, R = pi->ty.rank;
	if (an->op == OP_MATMUL || !anchor_kind(an) || !pl_eq(in->ty.pl, pi->ty.pl))
		return false;
	if (gr->nstage == FUSE_MAX_STAGES)
		return false;
	for (int d = 0; d < ax && ax != R - 1; d++)
		if (ty_local_dim(&pi->ty, d, f->nranks) != 1)
			return false;
	if (gr->nstage) {
		RowGroup rg = {.space = gr->space, .axis = gr->axis};
		return ax == gr->axis && is_full(f, &rg, p);
	}
	/* the group's members so far all have the anchor's shape */
	return ty_same_shape(&pi->ty, &an->ty) && inputs_rowwise(f, gr, p, ax, -1);
}

/* Whether elementwise v may join p's group: same shape and placement as
 * the anchor, or in a row group a whole row or one value per row. */
static bool
ew_fits(const Func *f, const Groups *gs, Val v, Val p)
{
	const Ins *in = &f->ins[v], *a = &f->ins[p], *g = &f->ins[a->group];
	const Group *gr = &gs->g[a->group];
	if (!anchor_kind(g))
		return false;
	if (gr->nstage) {
		RowGroup rg = {.space = gr->space, .axis = gr->axis};
		return pl_eq(in->ty.pl, f->ins[gr->space].ty.pl) && (is_full(f, &rg, v) || is_row(f, &rg, v)) &&
		       inputs_rowwise(f, &(Group){0}, gr->space, gr->axis, v);
	}
	if (!ty_same_shape(&in->ty, &a->ty) || !pl_eq(in->ty.pl, a->ty.pl))
		return false;
	return ty_same_shape(&in->ty, &g->ty) && pl_eq(in->ty.pl, g->ty.pl);
}

/* Instructions member v adds to its group's programs, as codegen/lower.c
 * emits them, at most: itself, a rounding cast if it is a stored 16-bit
 * value (whether it is stored is known only later: assume so), a mean's
 * scale, a constant per constant operand, a load per new input. */
static int
member_ins(const Func *f, const Group *gr, Val g, Val v)
{
	const Ins *in = &f->ins[v];
	int n = 1 + 2 * (in->op == OP_MEAN) + is_stage(f, in);
	n += in->op != OP_CAST && (in->ty.dt == DT_BF16 || in->ty.dt == DT_F16);
	for (int i = 0; i < in->narg && i < 2; i++) {
		Val u = in->arg[i];
		bool seen = f->ins[u].group == g;
		for (int j = 0; j < gr->nin && !seen; j++)
			seen = gr->in[j] == u;
		n += !seen; /* a constant, or a tensor read the first time */
	}
	return n;
}

/* v joins p's group g: refused when it does not fit, when the group is
 * full, or when an operand's kernel already depends on g, which would
 * make g wait on itself. */
static bool
can_join(const Func *f, const Groups *gs, Val v, Val p)
{
	const Ins *in = &f->ins[v], *a = &f->ins[p];
	const Group *gr = &gs->g[a->group];
	bool red = is_stage(f, in);
	if (gr->cap && gr->nmem >= gr->cap)
		return false;
	if (red ? !reduce_fits(f, gs, v, p) : !ew_fits(f, gs, v, p))
		return false;
	if (!inputs_fit(f, gr, a->group, v) || gr->ins + member_ins(f, gr, a->group, v) > FUSE_MAX_INS)
		return false;
	memset(gs->memo, 0, (size_t)f->nins); /* one target group: one memo */
	for (int i = 0; i < in->narg; i++) {
		Val q = in->arg[i];
		if (f->ins[q].group != a->group && group_reaches(f, gs, f->ins[q].group, a->group))
			return false;
	}
	return true;
}

/* The group v joins, or v itself. */
static Val
pick_group(const Func *f, const Groups *gs, Val v)
{
	const Ins *in = &f->ins[v];
	Val best = -1;
	bool ew = (ir_ops[in->op].flags & OF_EW) && in->op != OP_CONST;
	if (!ew && ir_ops[in->op].cls != OC_REDUCE)
		return v;
	for (int i = 0; i < in->narg; i++) {
		Val p = in->arg[i];
		if (f->ins[p].op == OP_CONST || f->ins[p].op == OP_PARAM || !can_join(f, gs, v, p))
			continue;
		/* a matmul epilogue is worth more than an elementwise chain */
		if (best < 0 || ir_ops[f->ins[f->ins[p].group].op].cls == OC_MATMUL)
			best = p;
	}
	return best >= 0 ? f->ins[best].group : v;
}

static void
join(Func *f, Groups *gs, Val v, Val g)
{
	Ins *in = &f->ins[v];
	Group *gr = &gs->g[g];
	in->group = g;
	gs->next[v] = gs->first[g];
	gs->first[g] = v;
	gr->nmem++;
	if (in->op == OP_MATMUL)
		gr->ins = 1; /* the accumulator; its operands are not its epilogue's inputs */
	if (in->op == OP_MATMUL || !anchor_kind(in))
		return;
	gr->ins += member_ins(f, gr, g, v) + (g == v); /* the anchor: the accumulator too */
	add_inputs(f, gr, g, v);
	if (is_stage(f, in)) {
		if (!gr->nstage)
			gr->space = in->arg[0], gr->axis = in->axis;
		gr->nstage++;
	}
}

static void
set_internal(Func *f)
{
	bool *ret = xcalloc((size_t)f->nins + 1, sizeof *ret), *out = xcalloc((size_t)f->nins + 1, sizeof *out);
	int *n = xcalloc((size_t)f->nins + 1, sizeof *n);
	for (int i = 0; i < f->nout; i++)
		ret[f->out[i]] = true;
	for (Val c = 0; c < f->nins; c++)
		for (int i = 0; i < f->ins[c].narg; i++) {
			Val v = f->ins[c].arg[i];
			n[v]++;
			out[v] = out[v] || f->ins[c].group != f->ins[v].group;
		}
	/* internal: every reader is in the same group, and it is not returned */
	for (Val v = 0; v < f->nins; v++)
		f->ins[v].internal = anchor_kind(&f->ins[v]) && !ret[v] && n[v] > 0 && !out[v];
	free(ret);
	free(out);
	free(n);
}

/* Tensors group a stores (its members read outside it or returned). */
static int
group_outs(const Func *f, const Groups *gs, Val a)
{
	int n = 0;
	for (Val m = gs->first[a]; m >= 0; m = gs->next[m])
		n += !f->ins[m].internal;
	return n;
}

/* Caps every group that does not fit the backend (more stored tensors
 * than a kernel takes, or a row group the row kernel cannot run) at half
 * its members; false if every group fits. */
static bool
cap_bad_groups(const Func *f, Groups *gs)
{
	int *stage_of = xmalloc(((size_t)f->nins + 1) * sizeof *stage_of);
	bool any = false;
	for (Val a = 0; a < f->nins; a++) {
		RowGroup rg;
		const char *why;
		Group *gr = &gs->g[a];
		if (f->ins[a].group != a || gr->nmem < 2)
			continue;
		if (group_outs(f, gs, a) > FUSE_MAX_TENSORS || (gr->nstage && ir_rowgroup(f, a, &rg, stage_of, &why) < 0)) {
			gr->cap = gr->nmem / 2;
			any = true;
		}
	}
	free(stage_of);
	return any;
}

/* Whether v's shape stretches to the shape of value s (numpy). */
static bool
broadcasts_to(const Func *f, Val v, Val s)
{
	const Type *tv = &f->ins[v].ty, *ts = &f->ins[s].ty;
	int off = ts->rank - tv->rank;
	if (off < 0 || !pl_eq(tv->pl, (Place){PL_REPL, 0, RED_SUM}))
		return false;
	/* and no dim of it is cut where the space is split: it is computed
	 * over the space's local box, unsliced */
	for (int k = 0; k < tv->rank; k++)
		if (tv->dim[k] != 1 && tv->dim[k] != ty_local_dim(ts, k + off, f->nranks))
			return false;
	return true;
}

/* A small elementwise value made from inputs alone (the cast of a norm's
 * weight) that one other group reads is computed there, per element,
 * instead of by a kernel of its own: a launch saved, its inputs reread
 * from L2. */
static void
pull_leaves(Func *f, Groups *gs)
{
	Val *reader = xmalloc(((size_t)f->nins + 1) * sizeof *reader); /* -1 none, -2 several groups */
	for (Val v = 0; v < f->nins; v++)
		reader[v] = -1;
	for (int i = 0; i < f->nout; i++)
		reader[f->out[i]] = -2;
	for (Val c = 0; c < f->nins; c++)
		for (int i = 0; i < f->ins[c].narg; i++) {
			Val v = f->ins[c].arg[i], g = f->ins[c].group;
			reader[v] = reader[v] == -1 || reader[v] == g ? g : -2;
		}
	for (Val v = 0; v < f->nins; v++) {
		Ins *in = &f->ins[v];
		Val into = reader[v], space;
		bool leaf = (ir_ops[in->op].flags & OF_EW) && in->op != OP_CONST && in->op != OP_BROADCAST &&
		            in->group == v && gs->g[v].nmem == 1;
		for (int i = 0; leaf && i < in->narg; i++)
			leaf = f->ins[in->arg[i]].op == OP_PARAM || f->ins[in->arg[i]].op == OP_CONST;
		if (!leaf || into < 0 || into > v || f->ins[into].op == OP_MATMUL || !anchor_kind(&f->ins[into]))
			continue;
		space = gs->g[into].nstage ? gs->g[into].space : into;
		if (!broadcasts_to(f, v, space) || !inputs_fit(f, &gs->g[into], into, v) ||
		    gs->g[into].ins + member_ins(f, &gs->g[into], into, v) > FUSE_MAX_INS)
			continue;
		if (gs->g[into].nstage && !inputs_rowwise(f, &(Group){0}, space, gs->g[into].axis, v))
			continue;
		in->group = into;
		gs->first[v] = -1;
		gs->g[v].nmem = 0;
		gs->next[v] = gs->first[into];
		gs->first[into] = v;
		gs->g[into].nmem++;
		gs->g[into].ins += member_ins(f, &gs->g[into], into, v);
		add_inputs(f, &gs->g[into], into, v);
	}
	free(reader);
}

static void
group_all(Func *f, Groups *gs)
{
	for (Val v = 0; v < f->nins; v++) {
		int cap = gs->g[v].cap;
		f->ins[v].group = v;
		gs->first[v] = -1;
		gs->g[v] = (Group){.cap = cap, .space = -1};
	}
	for (Val v = 0; v < f->nins; v++)
		join(f, gs, v, pick_group(f, gs, v));
	pull_leaves(f, gs);
	set_internal(f);
}

void
pass_fuse(Func *f)
{
	size_t n = (size_t)f->nins + 1;
	Groups gs = {xmalloc(n * sizeof(Val)), xmalloc(n * sizeof(Val)), xcalloc(n, sizeof(Group)), xmalloc(n)};
	group_all(f, &gs);
	/* a group past a limit keeps half its members and the pass runs
	 * again (each round halves every such group, so it ends soon) */
	while (cap_bad_groups(f, &gs))
		group_all(f, &gs);
	free(gs.first);
	free(gs.next);
	free(gs.g);
	free(gs.memo);
}
