/* ir/ir.c -- building, printing and verifying graph IR functions. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

const OpInfo ir_ops[OP_COUNT] = {
#define O(name, text, arity, cls, flags) [OP_##name] = {text, arity, cls, flags},
#include "ops.h"
#undef O
};

/* OP_NAME -> CO_NAME, both from comm/colls.h's rows. */
CommOp
ir_comm_op(Op op)
{
	switch (op) {
#define C(NAME, ...) \
	case OP_##NAME: return CO_##NAME;
#include "../comm/colls.h"
#undef C
	default: die("%s is not a collective", ir_ops[op].name);
	}
}

Func *
ir_func_new(Sym name, int nranks, Span sp)
{
	Func *f = xcalloc(1, sizeof *f);
	f->name = name;
	f->nranks = nranks;
	f->span = sp;
	f->arena = arena_new();
	return f;
}

void
ir_func_free(Func *f)
{
	if (!f)
		return;
	ir_func_free(f->sema);
	free(f->ins);
	arena_free(f->arena);
	free(f);
}

Val
ir_add(Func *f, Op op, Type ty, const Val *arg, int narg, Span sp)
{
	Ins *in;
	if (f->nins == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->ins = xrealloc(f->ins, f->cap * sizeof *f->ins);
	}
	in = &f->ins[f->nins];
	memset(in, 0, sizeof *in);
	in->op = op;
	in->ty = ty;
	in->span = sp;
	in->narg = narg;
	in->group = f->nins;
	in->attn = -1;
	if (narg) {
		in->arg = arena_alloc(f->arena, narg * sizeof *arg);
		memcpy(in->arg, arg, narg * sizeof *arg);
	}
	return f->nins++;
}

/* A deep copy: the oracle keeps the IR as sema made it while passes
 * rewrite the copy the ranks run. */
Func *
ir_clone(const Func *f)
{
	Func *g = ir_func_new(f->name, f->nranks, f->span);
	g->cap = g->nins = f->nins;
	g->ins = xmalloc((size_t)(f->nins + 1) * sizeof *g->ins);
	memcpy(g->ins, f->ins, (size_t)f->nins * sizeof *g->ins);
	for (Val v = 0; v < f->nins; v++)
		if (f->ins[v].narg) {
			g->ins[v].arg = arena_alloc(g->arena, (size_t)f->ins[v].narg * sizeof(Val));
			memcpy(g->ins[v].arg, f->ins[v].arg, (size_t)f->ins[v].narg * sizeof(Val));
		}
	g->nin = f->nin;
	g->in = arena_alloc(g->arena, (size_t)(f->nin + 1) * sizeof(Val));
	memcpy(g->in, f->in, (size_t)f->nin * sizeof(Val));
	g->nout = f->nout;
	g->out = arena_alloc(g->arena, (size_t)(f->nout + 1) * sizeof(Val));
	memcpy(g->out, f->out, (size_t)f->nout * sizeof(Val));
	g->outty = arena_alloc(g->arena, (size_t)(f->nout + 1) * sizeof(Type));
	memcpy(g->outty, f->outty, (size_t)f->nout * sizeof(Type));
	return g;
}

/* The op with its attributes as printed: all_reduce.sum, sum[1], ... */
const char *
ir_opname(const Ins *in, char *buf, size_t n)
{
	const char *s = ir_ops[in->op].name;
	switch (in->op) {
	case OP_ALL_REDUCE:
		snprintf(buf, n, "%s.%s", s, pl_rednames[in->red]);
		break;
	case OP_REDUCE_SCATTER:
		snprintf(buf, n, "%s.%s[%d]", s, pl_rednames[in->red], in->axis);
		break;
	case OP_SUM: case OP_MEAN: case OP_AMAX: case OP_AMIN:
	case OP_ALL_GATHER: case OP_CONCAT:
		snprintf(buf, n, "%s[%d]", s, in->axis);
		break;
	case OP_TRANSPOSE: case OP_ALL_TO_ALL:
		snprintf(buf, n, "%s[%d, %d]", s, in->axis, in->axis2);
		break;
	case OP_SLICE:
		snprintf(buf, n, "%s[%d, %lld:+%lld]", s, in->axis, (long long)in->a, (long long)in->b);
		break;
	case OP_SHIFT: case OP_CAUSAL:
		snprintf(buf, n, "%s[%lld]", s, (long long)in->a);
		break;
	case OP_CAST:
		snprintf(buf, n, "%s.%s", s, ty_dtypes[in->ty.dt].name);
		break;
	case OP_MATMUL:
		snprintf(buf, n, "%s%s", s, in->trans_b ? ".bt" : "");
		break;
	default:
		snprintf(buf, n, "%s", s);
	}
	return buf;
}

/* One line per value:
 *   %2 y = matmul %0, %1 : bf16[64, 32] @partial(sum) local [64, 32] */
static void
print_ins(Buf *b, const Func *f, Val v)
{
	const Ins *in = &f->ins[v];
	char name[64];
	int64_t loc[LIM_RANK];

	buf_printf(b, "  %%%d", v);
	if (in->name)
		buf_printf(b, " %s", sym_str(in->name));
	buf_printf(b, " = %s", ir_opname(in, name, sizeof name));
	if (in->op == OP_PARAM)
		buf_printf(b, " %lld", (long long)in->a);
	if (in->op == OP_CONST)
		buf_printf(b, " %.9g", in->c);
	for (int i = 0; i < in->narg; i++)
		buf_printf(b, "%s%%%d", i ? ", " : " ", in->arg[i]);
	buf_printf(b, " : ");
	ty_print(b, &in->ty);
	ty_local_shape(&in->ty, f->nranks, loc);
	buf_printf(b, " local ");
	ty_print_shape(b, in->ty.rank, loc);
	if (in->autoins || in->group != v || in->internal || in->attn >= 0) {
		buf_printf(b, "  ;");
		if (in->autoins)
			buf_printf(b, " inserted");
		if (in->group != v)
			buf_printf(b, " fused into %%%d", in->group);
		if (in->internal)
			buf_printf(b, " internal");
		if (in->attn >= 0)
			buf_printf(b, " attention %%%d", in->attn);
	}
	buf_printf(b, "\n");
	if (in->attn == v)
		ir_attn_print(b, f, v);
}

void
ir_print(FILE *out, const Func *f)
{
	Buf b = {0};
	buf_printf(&b, "op %s (P = %d)\n", sym_str(f->name), f->nranks);
	for (Val v = 0; v < f->nins; v++)
		print_ins(&b, f, v);
	buf_printf(&b, "  return");
	for (int i = 0; i < f->nout; i++)
		buf_printf(&b, "%s%%%d", i ? ", " : " ", f->out[i]);
	buf_printf(&b, "\n");
	fputs(b.s, out);
	buf_free(&b);
}

/* ---- local forms: which @repl operand a rank slices to its block ---- */

/* Which dim of each matmul operand is sliced to this rank's block (-1:
 * none): a @repl operand facing a split contraction or batch dim.  B's
 * dim is one of ir_mm_btype's (ir_mm_bdim gives arg[1]'s). */
Type
ir_mm_btype(const Func *f, const Ins *in)
{
	Type t = f->ins[in->arg[1]].ty;
	int R = t.rank;
	if (in->trans_b && R >= 2) {
		int64_t d = t.dim[R - 2];
		t.dim[R - 2] = t.dim[R - 1];
		t.dim[R - 1] = d;
		if (t.pl.kind == PL_SPLIT && t.pl.dim >= R - 2)
			t.pl.dim = t.pl.dim == R - 2 ? R - 1 : R - 2;
	}
	return t;
}

/* d < 0 (none) stays; the rank is arg[1]'s, which the caller knows: d is
 * one of its dims, and only the last two swap. */
int
ir_mm_bdim(const Ins *in, int d, int rank)
{
	if (!in->trans_b || d < 0 || d < rank - 2)
		return d;
	return d == rank - 2 ? rank - 1 : rank - 2;
}

void
ir_mm_slices(const Func *f, const Ins *in, int sl[2])
{
	Type btype = ir_mm_btype(f, in);
	const Type *ta = &f->ins[in->arg[0]].ty, *tb = &btype;
	int R = in->ty.rank, ra = ta->rank, rb = tb->rank;
	sl[0] = sl[1] = -1;
	if (ta->pl.kind == PL_REPL && tb->pl.kind == PL_SPLIT) {
		if (tb->pl.dim == rb - 2)
			sl[0] = ra - 1;
		else if (tb->pl.dim < rb - 2) {
			int d = tb->pl.dim + (R - rb) - (R - ra);
			if (d >= 0 && d < ra - 2 && ta->dim[d] > 1)
				sl[0] = d;
		}
	}
	if (tb->pl.kind == PL_REPL && ta->pl.kind == PL_SPLIT) {
		if (ta->pl.dim == ra - 1)
			sl[1] = rb - 2;
		else if (ta->pl.dim < ra - 2) {
			int d = ta->pl.dim + (R - ra) - (R - rb);
			if (d >= 0 && d < rb - 2 && tb->dim[d] > 1)
				sl[1] = d;
		}
	}
}

/* An elementwise operand @repl under a split result: the dim to slice. */
int
ir_ew_slice(const Func *f, const Ins *in, int i)
{
	const Type *t = &f->ins[in->arg[i]].ty;
	int d;
	if (in->ty.pl.kind != PL_SPLIT || t->pl.kind != PL_REPL)
		return -1;
	d = in->ty.pl.dim - (in->ty.rank - t->rank);
	return d >= 0 && t->dim[d] > 1 ? d : -1;
}

bool
ir_reduce_ew(const Func *f, const Ins *in)
{
	return ir_ops[in->op].cls == OC_REDUCE && ty_local_dim(&f->ins[in->arg[0]].ty, in->axis, f->nranks) == 1;
}

static bool
read_by_comm(const Func *f, Val v)
{
	for (Val u = v + 1; u < f->nins; u++)
		for (int i = 0; i < f->ins[u].narg; i++)
			if (f->ins[u].arg[i] == v && ir_ops[f->ins[u].op].cls == OC_COMM)
				return true;
	return false;
}

bool
ir_view_reshape(const Func *f, Val v)
{
	Val x = f->ins[v].arg[0];
	int res = 0, xres = 0;
	if (f->ins[v].op != OP_RESHAPE || ir_ops[f->ins[x].op].cls == OC_COMM || read_by_comm(f, v))
		return false;
	for (int i = 0; i < f->nout; i++)
		res += f->out[i] == v, xres += f->out[i] == x;
	return !res || (res == 1 && !xres && f->ins[x].op != OP_PARAM && !read_by_comm(f, x));
}

/* ---- the verifier: structural facts every pass must keep ---- */

static bool
bad(const Func *f, Val v, const char *after, const char *what)
{
	fprintf(stderr, "syncc: internal compiler error: IR of op %s after %s: %%%d: %s\n",
	        sym_str(f->name), after, v, what);
	return false;
}

static bool
verify_place(const Func *f, Val v, const char *after)
{
	const Type *t = &f->ins[v].ty;
	if (t->pl.kind == PL_SPLIT) {
		if (t->pl.dim < 0 || t->pl.dim >= t->rank)
			return bad(f, v, after, "split dim out of range");
		if (t->dim[t->pl.dim] % f->nranks)
			return bad(f, v, after, "split dim not divisible by P");
	}
	return true;
}

bool
ir_verify(const Func *f, const char *after)
{
	for (Val v = 0; v < f->nins; v++) {
		const Ins *in = &f->ins[v];
		if (in->op < 0 || in->op >= OP_COUNT)
			return bad(f, v, after, "bad op");
		if (ir_ops[in->op].arity >= 0 && in->narg != ir_ops[in->op].arity)
			return bad(f, v, after, "wrong number of operands");
		for (int i = 0; i < in->narg; i++)
			if (in->arg[i] < 0 || in->arg[i] >= v)
				return bad(f, v, after, "operand is not defined before its use");
		if (in->ty.rank < 0 || in->ty.rank > LIM_RANK)
			return bad(f, v, after, "bad rank");
		for (int i = 0; i < in->ty.rank; i++)
			if (in->ty.dim[i] <= 0)
				return bad(f, v, after, "non-positive dim");
		if (!verify_place(f, v, after))
			return false;
		if (in->trans_b && (in->op != OP_MATMUL || f->ins[in->arg[1]].ty.rank < 2))
			return bad(f, v, after, "trans_b on something other than a matmul's B of rank 2 or more");
		if (in->group < 0 || in->group > v || f->ins[in->group].group != in->group)
			return bad(f, v, after, "fusion group is not anchored at an earlier value");
		for (int i = 0; i < in->narg; i++)
			if (f->ins[in->arg[i]].internal && f->ins[in->arg[i]].group != in->group)
				return bad(f, v, after, "reads a value kept inside another fused kernel");
	}
	for (int i = 0; i < f->nout; i++)
		if (f->ins[f->out[i]].internal)
			return bad(f, f->out[i], after, "a result is kept inside a fused kernel");
	for (int i = 0; i < f->nout; i++)
		if (f->out[i] < 0 || f->out[i] >= f->nins)
			return bad(f, f->out[i], after, "result is not a value");
	for (int i = 0; i < f->nin; i++)
		if (f->ins[f->in[i]].op != OP_PARAM)
			return bad(f, f->in[i], after, "input is not a param");
	return true;
}
