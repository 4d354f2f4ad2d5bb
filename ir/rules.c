/* ir/rules.c -- the typing of every expression: dtypes, shapes (numpy
 * broadcasting) and the placement inference table of DESIGN §2.4, with
 * the collective that would fix a placement error.  docs/language.md
 * lists the same table; tests/lang/place/ tests every row. */
#include "ir.h"

#include <math.h>
#include <string.h>

/* ---- helpers ---- */

static bool
is_num(SVal x)
{
	return x.k == SV_INT || x.k == SV_FLOAT;
}

/* The source text of an operand, for notes ("all_gather(w, 0) ..."):
 * short one-line operands are quoted as written, others are named by
 * `fallback` ("the left operand", or "..." inside a suggested call). */
void
rule_operand_text(Buf *b, Span sp, const char *fallback)
{
	const Src *s;
	if (sp.file < 0 || sp.hi <= sp.lo || sp.hi - sp.lo > 40) {
		buf_printf(b, "%s", fallback);
		return;
	}
	s = src_get(sp.file);
	for (uint32_t i = sp.lo; i < sp.hi; i++)
		if (s->text[i] == '\n' || s->text[i] == 0) {
			buf_printf(b, "%s", fallback);
			return;
		}
	buf_put(b, s->text + sp.lo, sp.hi - sp.lo);
}

static void
text_of(Buf *b, Span sp)
{
	rule_operand_text(b, sp, "...");
}

static Val
add(Sema *s, Op op, Type ty, const Val *arg, int narg, Span sp)
{
	if (s->f->nins >= LIM_VALUES) {
		diag_error(sp, "op is too large: more than %d values after inlining and unrolling", LIM_VALUES);
		return -1;
	}
	return ir_add(s->f, op, ty, arg, narg, sp);
}

/* Every tensor a rule makes goes through here: its shape is checked as a
 * signature's is (broadcasting and matmul can make sizes nobody wrote). */
static SVal
make(Sema *s, Op op, Type ty, const Val *arg, int narg, Span sp)
{
	if (!check_shape(s, &ty, sp))
		return sv_err();
	Val v = add(s, op, ty, arg, narg, sp);
	return v < 0 ? sv_err() : sv_tensor(v, sp);
}

static Ins *
ins(Sema *s, SVal x)
{
	return &s->f->ins[x.v];
}

static SVal
constant(Sema *s, double c, DType dt, Span sp)
{
	Type t = {.dt = dt, .rank = 0, .pl = {PL_REPL, 0, 0}};
	SVal r = make(s, OP_CONST, t, NULL, 0, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->c = c;
	return r;
}

static bool
norm_dim(int64_t d, int rank, Span sp, int *out)
{
	int64_t e = d < 0 ? d + rank : d;
	if (e < 0 || e >= rank) {
		diag_error(sp, "dim %lld is out of range for a rank-%d tensor", (long long)d, rank);
		return false;
	}
	*out = (int)e;
	return true;
}

static bool
want_tensor(SVal x, const char *fn)
{
	if (x.k == SV_TENSOR)
		return true;
	if (x.k != SV_ERR)
		diag_error(x.span, "%s needs a tensor here, not %s", fn, sv_what(x));
	return false;
}

static bool
want_int(SVal x, const char *fn, const char *arg, int64_t *out)
{
	if (x.k == SV_INT) {
		*out = x.i;
		return true;
	}
	if (x.k != SV_ERR)
		diag_error(x.span, "%s: %s must be an integer constant, not %s", fn, arg, sv_what(x));
	return false;
}

/* ---- resharding: the collective that turns one placement into another ---- */

typedef struct Reshard {
	Op op;         /* OP_COUNT: impossible */
	double bytes;  /* sent per rank (ring algorithms), for choosing */
} Reshard;

static Reshard
reshard_plan(const Type *t, Place to, int p)
{
	double sz = (double)ty_numel(t) * ty_dtypes[t->dt].size, f = (double)(p - 1) / p;
	Place from = t->pl;
	Reshard none = {OP_COUNT, 0};
	if (pl_eq(from, to))
		return (Reshard){OP_COUNT, 0};
	if (to.kind == PL_SPLIT && (to.dim >= t->rank || t->dim[to.dim] % p))
		return none;
	switch (from.kind) {
	case PL_PARTIAL:
		if (to.kind == PL_REPL)
			return (Reshard){OP_ALL_REDUCE, 2 * sz * f};
		if (to.kind == PL_SPLIT)
			return (Reshard){OP_REDUCE_SCATTER, sz * f};
		return none;
	case PL_SPLIT:
		if (to.kind == PL_REPL)
			return (Reshard){OP_ALL_GATHER, sz * f};
		if (to.kind == PL_SPLIT)
			return (Reshard){OP_ALL_TO_ALL, sz * f / p};
		return none;
	case PL_REPL:
		if (to.kind == PL_SPLIT)
			return (Reshard){OP_SCATTER, 0};
		return none;
	}
	return none;
}

bool
rule_can_reshard(const Type *t, Place to, int nranks)
{
	return reshard_plan(t, to, nranks).op != OP_COUNT;
}

/* The call a user would write: "all_gather(w, 0)". */
static void
reshard_text(Buf *b, Op op, const Type *t, Place to, Span operand, bool suggest)
{
	Buf x = {0};
	text_of(&x, operand);
	switch (op) {
	case OP_ALL_REDUCE:
		buf_printf(b, "all_reduce(%s, %s)", x.s, pl_rednames[t->pl.red]);
		break;
	case OP_REDUCE_SCATTER:
		buf_printf(b, "reduce_scatter(%s, %d, %s)", x.s, to.dim, pl_rednames[t->pl.red]);
		break;
	case OP_ALL_GATHER:
		buf_printf(b, "all_gather(%s, %d)", x.s, t->pl.dim);
		break;
	case OP_ALL_TO_ALL:
		buf_printf(b, "all_to_all(%s, %d, %d)", x.s, t->pl.dim, to.dim);
		break;
	case OP_SCATTER: /* no collective: each rank keeps its block */
		buf_printf(b, "each rank's block of %s", x.s);
		if (suggest) {
			buf_printf(b, " (a `let` annotated ");
			pl_print(b, to);
			buf_printf(b, ")");
		}
		break;
	default:
		die("no reshard text for %s", ir_ops[op].name);
	}
	buf_free(&x);
}

/* The note that suggests a conversion: "all_gather(w, 0) would make it
 * @repl".  Where two operands could be meant, `who` is NULL and the
 * operand is named by its text ("... would make w @repl"), or by
 * `fallback` when its text is too long. */
static void
reshard_note(Sema *s, SVal x, Place to, const char *who, const char *fallback)
{
	const Type *t = sv_type(s, x);
	Buf call = {0}, pl = {0}, nm = {0};
	reshard_text(&call, reshard_plan(t, to, s->nranks).op, t, to, x.span, true);
	pl_print(&pl, to);
	if (who)
		buf_printf(&nm, "%s", who);
	else
		rule_operand_text(&nm, x.span, fallback);
	diag_note(NOSPAN, "%s would make %s %s", call.s, nm.s, pl.s);
	buf_free(&call);
	buf_free(&pl);
	buf_free(&nm);
}

/* "all_reduce(y, sum) would make it @repl" (or all_gather), for an operand
 * of an operation that has no local form for its placement. */
void
rule_repl_note(Sema *s, SVal x)
{
	reshard_note(s, x, (Place){PL_REPL, 0, 0}, "it", NULL);
}

/* --auto-comm's answer to an operation that cannot use x's placement
 * (@partial for a unary op, a split dim for a slice, ...): x made @repl,
 * with a note.  False without --auto-comm: the caller reports the error
 * and rule_repl_note suggests the same collective. */
bool
rule_to_repl(Sema *s, SVal *x)
{
	if (!s->autocomm || x->k != SV_TENSOR)
		return false;
	*x = rule_reshard(s, *x, (Place){PL_REPL, 0, 0}, x->span, "--auto-comm");
	return true;
}

/* With why == NULL: only a note suggesting the fix.  Otherwise the
 * conversion is inserted (lowered later by the autocomm pass) and a note
 * says what was inserted and why. */
SVal
rule_reshard(Sema *s, SVal x, Place to, Span sp, const char *why)
{
	const Type *t = sv_type(s, x);
	Reshard r = reshard_plan(t, to, s->nranks);
	Buf call = {0}, pl = {0};
	Type nt;
	if (r.op == OP_COUNT) {
		Buf a = {0};
		pl_print(&a, t->pl);
		pl_print(&pl, to);
		if (why)
			diag_error(sp, "no collective turns %s into %s, as %s requires", a.s, pl.s, why);
		buf_free(&a);
		buf_free(&pl);
		return sv_err();
	}
	if (!why) {
		reshard_note(s, x, to, "it", NULL);
		return sv_err();
	}
	reshard_text(&call, r.op, t, to, x.span, false);
	pl_print(&pl, to);
	diag_note(sp, "inserted %s to make it %s, as %s requires", call.s, pl.s, why);
	buf_free(&call);
	buf_free(&pl);
	nt = *t;
	nt.pl = to;
	SVal v = make(s, OP_RESHARD, nt, &x.v, 1, sp);
	if (v.k == SV_TENSOR)
		ins(s, v)->autoins = true;
	return v;
}

/* The cheapest conversion of one operand, or of both, that satisfies
 * `ok`; used to suggest a fix, or to insert it under --auto-comm. */
typedef bool (*PlaceOk)(Sema *s, const Type *ta, const Type *tb, void *ctx, Place *out);

/* A fix that leaves the result @partial costs its reduction later too. */
static double
partial_penalty(const Type *res, Place out, int p)
{
	if (out.kind != PL_PARTIAL)
		return 0;
	return (double)ty_numel(res) * ty_dtypes[res->dt].size * (p - 1) / p;
}

/* Where an operand could go: nowhere (kept, cands[0]), @repl, @split(d). */
static int
candidates(const Type *t, Place *cands)
{
	int n = 0;
	cands[n++] = t->pl;
	cands[n++] = (Place){PL_REPL, 0, 0};
	for (int d = 0; d < t->rank; d++)
		cands[n++] = (Place){PL_SPLIT, d, 0};
	return n;
}

static double
move_cost(const Type *t, Place to, int p)
{
	Reshard r;
	if (pl_eq(t->pl, to))
		return 0;
	r = reshard_plan(t, to, p);
	return r.op == OP_COUNT ? INFINITY : r.bytes;
}

static bool
fix_operands(Sema *s, SVal *a, SVal *b, PlaceOk ok, void *ctx, const Type *res, bool insert)
{
	const Type *ta = sv_type(s, *a), *tb = sv_type(s, *b);
	Place ca[LIM_RANK + 2], cb[LIM_RANK + 2], best_a = ta->pl, best_b = tb->pl;
	int na = candidates(ta, ca), nb = candidates(tb, cb);
	double best = INFINITY;
	for (int i = 0; i < na; i++)
		for (int j = i == 0; j < nb; j++) {
			Type ma = *ta, mb = *tb;
			Place out;
			double cost = move_cost(ta, ca[i], s->nranks) + move_cost(tb, cb[j], s->nranks);
			if (!(cost < best))
				continue;
			ma.pl = ca[i];
			mb.pl = cb[j];
			if (!ok(s, &ma, &mb, ctx, &out))
				continue;
			cost += partial_penalty(res, out, s->nranks);
			if (cost < best) {
				best = cost;
				best_a = ca[i];
				best_b = cb[j];
			}
		}
	if (best == INFINITY)
		return false;
	for (int side = 0; side < 2; side++) {
		SVal *x = side ? b : a;
		Place to = side ? best_b : best_a;
		if (pl_eq(sv_type(s, *x)->pl, to))
			continue;
		if (!insert)
			reshard_note(s, *x, to, NULL, side ? "the right operand" : "the left operand");
		else if ((*x = rule_reshard(s, *x, to, x->span, "--auto-comm")).k != SV_TENSOR)
			return false;
	}
	return insert;
}

/* ---- constants ---- */

static SVal
fold_binary(int op, SVal a, SVal b, Span sp)
{
	double x = a.f, y = b.f, r;
	if (a.k == SV_INT && b.k == SV_INT) {
		int64_t i = a.i, j = b.i, k;
		bool ok = true;
		switch (op) {
		case '+': ok = ck_add(i, j, &k); break;
		case '-': ok = j != INT64_MIN && ck_add(i, -j, &k); break;
		case '*': ok = ck_mul(i, j, &k); break;
		case '/':
			if (j == 0) {
				diag_error(sp, "division by zero in a constant expression");
				return sv_err();
			}
			if (j == -1 && i == INT64_MIN)
				ok = false;
			else if (i % j == 0)
				k = i / j;
			else
				return sv_float((double)i / (double)j, sp);
			break;
		case OP_MAX: k = i > j ? i : j; break;
		case OP_MIN: k = i < j ? i : j; break;
		default: die("bad fold op");
		}
		if (!ok) {
			diag_error(sp, "integer overflow in a constant expression");
			return sv_err();
		}
		return sv_int(k, sp);
	}
	switch (op) {
	case '+': r = x + y; break;
	case '-': r = x - y; break;
	case '*': r = x * y; break;
	case '/':
		if (y == 0) {
			diag_error(sp, "division by zero in a constant expression");
			return sv_err();
		}
		r = x / y;
		break;
	case OP_MAX: r = x > y ? x : y; break;
	case OP_MIN: r = x < y ? x : y; break;
	default: die("bad fold op");
	}
	if (!isfinite(r)) {
		diag_error(sp, "constant expression overflows");
		return sv_err();
	}
	return sv_float(r, sp);
}

static SVal
fold_unary(Op op, SVal a, Span sp)
{
	double x = a.f, r;
	switch (op) {
	case OP_NEG:
		if (a.k == SV_INT)
			return a.i == INT64_MIN ? (diag_error(sp, "integer overflow in a constant expression"), sv_err())
			                        : sv_int(-a.i, sp);
		r = -x;
		break;
	case OP_ABS:
		if (a.k == SV_INT)
			return a.i == INT64_MIN ? (diag_error(sp, "integer overflow in a constant expression"), sv_err())
			                        : sv_int(a.i < 0 ? -a.i : a.i, sp);
		r = fabs(x);
		break;
	case OP_EXP: r = exp(x); break;
	case OP_LOG: r = x > 0 ? log(x) : NAN; break;
	case OP_SQRT: r = x >= 0 ? sqrt(x) : NAN; break;
	case OP_RSQRT: r = x > 0 ? 1 / sqrt(x) : NAN; break;
	case OP_TANH: r = tanh(x); break;
	case OP_SIGMOID: r = 1 / (1 + exp(-x)); break;
	default: die("bad fold op");
	}
	if (!isfinite(r)) {
		diag_error(sp, "%s of %g is not a finite number", ir_ops[op].name, x);
		return sv_err();
	}
	return sv_float(r, sp);
}

/* ---- elementwise ---- */

static bool
broadcast(const Type *a, const Type *b, Type *out, Span sp)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	memset(out, 0, sizeof *out);
	out->rank = r;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
		if (da != db && da != 1 && db != 1) {
			Buf x = {0}, y = {0};
			ty_print_shape(&x, a->rank, a->dim);
			ty_print_shape(&y, b->rank, b->dim);
			diag_error(sp, "shapes %s and %s do not broadcast (dim %d: %lld vs %lld)", x.s, y.s, i,
			           (long long)da, (long long)db);
			buf_free(&x);
			buf_free(&y);
			return false;
		}
		out->dim[i] = da > db ? da : db;
	}
	return true;
}

/* An operand's placement seen from the result: a split dim moves right by
 * the ranks broadcasting adds; a stretched (size-1) dim may not be split. */
static bool
lift_place(const Type *t, const Type *res, Place *out)
{
	*out = t->pl;
	if (t->pl.kind != PL_SPLIT)
		return true;
	out->dim = t->pl.dim + (res->rank - t->rank);
	return !(t->dim[t->pl.dim] == 1 && res->dim[out->dim] != 1);
}

/* A split size-1 dim that broadcasting stretches: gathered under
 * --auto-comm (true, x replaced), else reported (false). */
static bool
stretched(Sema *s, SVal *x)
{
	if (rule_to_repl(s, x))
		return true;
	diag_error(x->span, "a size-1 dim that broadcasting stretches cannot be @split");
	rule_repl_note(s, *x);
	return false;
}

/* Elementwise placement rows of the table (op is '+', '-', '*', '/',
 * OP_MAX or OP_MIN). */
static bool
ew_place(int op, Place a, Place b, Place *out)
{
	if (a.kind == PL_PARTIAL || b.kind == PL_PARTIAL) {
		bool pa = a.kind == PL_PARTIAL, pb = b.kind == PL_PARTIAL;
		if ((op == '+' || op == '-') && pa && pb && a.red == RED_SUM && b.red == RED_SUM)
			return *out = a, true;
		if (op == '*' && pa && a.red == RED_SUM && b.kind == PL_REPL)
			return *out = a, true;
		if (op == '*' && pb && b.red == RED_SUM && a.kind == PL_REPL)
			return *out = b, true;
		if (op == '/' && pa && a.red == RED_SUM && b.kind == PL_REPL)
			return *out = a, true;
		if ((op == OP_MAX || op == OP_MIN) && pa && pb && a.red == b.red && a.red == (op == OP_MAX ? RED_MAX : RED_MIN))
			return *out = a, true;
		return false;
	}
	if (a.kind == PL_REPL)
		return *out = b, true;
	if (b.kind == PL_REPL || (b.kind == PL_SPLIT && a.dim == b.dim))
		return *out = a, true;
	return false;
}

/* "'+' of y @split(0) and b @split(0) has no local form" */
static void
no_local_form(Sema *s, const char *what, SVal a, SVal b, Span sp)
{
	Buf x = {0}, y = {0}, na = {0}, nb = {0};
	pl_print(&x, sv_type(s, a)->pl);
	pl_print(&y, sv_type(s, b)->pl);
	rule_operand_text(&na, a.span, "the left operand");
	rule_operand_text(&nb, b.span, "the right operand");
	diag_error(sp, "%s of %s %s and %s %s has no local form", what, na.s, x.s, nb.s, y.s);
	buf_free(&x);
	buf_free(&y);
	buf_free(&na);
	buf_free(&nb);
}

/* Broadcasting moved a split dim: say where it went. */
static void
broadcast_note(const Type *t, const Type *res, Place lifted, Span sp, const char *side)
{
	Buf nm = {0}, sh = {0};
	if (t->pl.kind != PL_SPLIT || lifted.dim == t->pl.dim)
		return;
	rule_operand_text(&nm, sp, side[0] == 'l' ? "the left operand" : "the right operand");
	ty_print_shape(&sh, res->rank, res->dim);
	diag_note(NOSPAN, "broadcasting aligns dims on the right: dim %d of %s is dim %d of the %s result", t->pl.dim, nm.s,
	          lifted.dim, sh.s);
	buf_free(&nm);
	buf_free(&sh);
}

typedef struct EwCtx {
	int op;
	Type res;
} EwCtx;

static bool
ew_ok(Sema *s, const Type *ta, const Type *tb, void *ctx, Place *out)
{
	EwCtx *c = ctx;
	Place pa = ta->pl, pb = tb->pl;
	(void)s;
	if (pa.kind == PL_SPLIT)
		pa.dim += c->res.rank - ta->rank;
	if (pb.kind == PL_SPLIT)
		pb.dim += c->res.rank - tb->rank;
	return ew_place(c->op, pa, pb, out);
}

static const char *
opsym(int op)
{
	switch (op) {
	case OP_MAX: return "max";
	case OP_MIN: return "min";
	case '+': return "'+'";
	case '-': return "'-'";
	case '*': return "'*'";
	default: return "'/'";
	}
}

static Op
ew_op(int op)
{
	switch (op) {
	case '+': return OP_ADD;
	case '-': return OP_SUB;
	case '*': return OP_MUL;
	case '/': return OP_DIV;
	default: return (Op)op;
	}
}

SVal
rule_binary(Sema *s, int op, SVal a, SVal b, Span sp)
{
	const Type *ta, *tb;
	Type res;
	Place pa, pb;
	Val args[2];
	if (a.k == SV_ERR || b.k == SV_ERR)
		return sv_err();
	if (!is_num(a) && a.k != SV_TENSOR) {
		diag_error(a.span, "%s needs tensors or numbers, not %s", opsym(op), sv_what(a));
		return sv_err();
	}
	if (!is_num(b) && b.k != SV_TENSOR) {
		diag_error(b.span, "%s needs tensors or numbers, not %s", opsym(op), sv_what(b));
		return sv_err();
	}
	if (is_num(a) && is_num(b))
		return fold_binary(op, a, b, sp);
	/* a number takes the dtype of the tensor beside it (weak typing) */
	if (is_num(a) || is_num(b)) {
		SVal *c = is_num(a) ? &a : &b, t = is_num(a) ? b : a;
		DType dt = sv_type(s, t)->dt;
		if (dt == DT_I32 && c->k == SV_FLOAT && c->f != floor(c->f)) {
			diag_error(c->span, "number %g in i32 arithmetic; cast the tensor to a float dtype first", c->f);
			return sv_err();
		}
		*c = constant(s, c->f, dt, c->span);
		if (c->k == SV_ERR)
			return *c;
	}
	ta = sv_type(s, a);
	tb = sv_type(s, b);
	if (ta->dt != tb->dt) {
		Buf nb = {0};
		diag_error(sp, "%s of %s and %s: the dtypes differ", opsym(op), ty_dtypes[ta->dt].name, ty_dtypes[tb->dt].name);
		text_of(&nb, b.span);
		diag_note(NOSPAN, "cast(%s, %s) converts explicitly", nb.s, ty_dtypes[ta->dt].name);
		buf_free(&nb);
		return sv_err();
	}
	if (ta->dt == DT_I32 && op == '/') {
		diag_error(sp, "'/' is not defined on i32; cast to a float dtype first");
		return sv_err();
	}
	if (!broadcast(ta, tb, &res, sp) || !check_shape(s, &res, sp))
		return sv_err();
	res.dt = ta->dt;
	if (!lift_place(ta, &res, &pa))
		return stretched(s, &a) ? rule_binary(s, op, a, b, sp) : sv_err();
	if (!lift_place(tb, &res, &pb))
		return stretched(s, &b) ? rule_binary(s, op, a, b, sp) : sv_err();
	if (!ew_place(op, pa, pb, &res.pl)) {
		EwCtx c = {op, res};
		SVal a2 = a, b2 = b;
		if (s->autocomm && fix_operands(s, &a2, &b2, ew_ok, &c, &res, true))
			return rule_binary(s, op, a2, b2, sp);
		if (a2.k == SV_ERR || b2.k == SV_ERR)
			return sv_err(); /* an inserted collective failed, and said so */
		no_local_form(s, opsym(op), a, b, sp);
		broadcast_note(ta, &res, pa, a.span, "left");
		broadcast_note(tb, &res, pb, b.span, "right");
		fix_operands(s, &a, &b, ew_ok, &c, &res, false);
		return sv_err();
	}
	/* a split result dim is an operand's split dim, whose size P divides
	 * (a stretched one was refused above); the verifier checks it */
	args[0] = a.v;
	args[1] = b.v;
	return make(s, ew_op(op), res, args, 2, sp);
}

/* A kernel is a scalar function applied elementwise with broadcasting, so
 * its result has the elementwise combination of all its tensor arguments'
 * shapes and placements, whatever its body reads: a number it returns is
 * spread over that type, a tensor of a smaller shape or another placement
 * (`kernel second(a, b) = b`) is multiplied by a broadcast 1 of that type,
 * which changes no value (-0, inf and NaN stay). */
SVal
rule_fill(Sema *s, SVal c, const SVal *like, int n, Span sp)
{
	Type res = {0};
	bool have = false;
	DType dt = DT_F32;
	int first = 0;
	for (int i = 0; i < n; i++) {
		const Type *t;
		Type b;
		Place pa, pb;
		if (like[i].k != SV_TENSOR)
			continue;
		t = sv_type(s, like[i]);
		dt = t->dt;
		if (!have) {
			res = *t;
			have = true;
			first = i;
			continue;
		}
		if (!broadcast(&res, t, &b, sp))
			return sv_err();
		if (!lift_place(&res, &b, &pa) || !lift_place(t, &b, &pb)) {
			diag_error(like[i].span, "a size-1 dim that broadcasting stretches cannot be @split");
			return sv_err();
		}
		b.dt = res.dt;
		if (!ew_place('+', pa, pb, &b.pl)) {
			/* a body that ignores its arguments never combined them */
			no_local_form(s, "a kernel result", like[first], like[i], sp);
			return sv_err();
		}
		res = b;
	}
	if (!have || (c.k != SV_TENSOR && c.k != SV_INT && c.k != SV_FLOAT))
		return c; /* an error, or not a value: kernel_store says so */
	if (c.k == SV_TENSOR) {
		const Type *t = sv_type(s, c);
		SVal one;
		if (ty_same_shape(t, &res) && pl_eq(t->pl, res.pl))
			return c;
		res.dt = t->dt;
		one = constant(s, 1.0, t->dt, sp);
		if (one.k == SV_ERR)
			return one;
		return rule_binary(s, '*', c, make(s, OP_BROADCAST, res, &one.v, 1, sp), sp);
	}
	res.dt = dt;
	SVal k = constant(s, c.f, dt, c.span);
	if (k.k == SV_ERR)
		return k;
	return make(s, OP_BROADCAST, res, &k.v, 1, sp);
}

static bool
float_only(Op op)
{
	return op != OP_NEG && op != OP_ABS && op != OP_CAST;
}

SVal
rule_unary(Sema *s, Op op, SVal a, Span sp)
{
	const Type *t;
	if (a.k == SV_ERR)
		return a;
	if (is_num(a))
		return fold_unary(op, a, sp);
	if (a.k != SV_TENSOR) {
		diag_error(a.span, "%s needs a tensor or a number, not %s", op == OP_NEG ? "unary '-'" : ir_ops[op].name,
		           sv_what(a));
		return sv_err();
	}
	t = sv_type(s, a);
	if (t->pl.kind == PL_PARTIAL) {
		if (rule_to_repl(s, &a))
			return rule_unary(s, op, a, sp);
		diag_error(sp, "%s of a @partial(%s) value has no local form: reduce it first",
		           op == OP_NEG ? "negation" : ir_ops[op].name, pl_rednames[t->pl.red]);
		rule_repl_note(s, a);
		return sv_err();
	}
	if (t->dt == DT_I32 && float_only(op)) {
		diag_error(sp, "%s is not defined on i32; cast to a float dtype first", ir_ops[op].name);
		return sv_err();
	}
	return make(s, op, *t, &a.v, 1, sp);
}

/* ---- matmul: a[..., M, K] @ b[..., K, N] ---- */

typedef struct MmShape {
	Type res;
	int ra, rb; /* operand ranks */
} MmShape;

/* The matmul rows of the table, extended to batch dims and to the linear
 * cases (a @split(K) with b @repl slices b locally; @partial(sum) passes
 * through a product with a @repl value). */
static bool
mm_place(const MmShape *m, const Type *ta, const Type *tb, Place *out)
{
	int r = m->res.rank;
	Place a = ta->pl, b = tb->pl;
	int ka = m->ra - 1, kb = m->rb - 2, ma = m->ra - 2, nb = m->rb - 1;
	bool asplit = a.kind == PL_SPLIT, bsplit = b.kind == PL_SPLIT;
	if (a.kind == PL_PARTIAL || b.kind == PL_PARTIAL) {
		if (a.kind == PL_PARTIAL && a.red == RED_SUM && b.kind == PL_REPL)
			return *out = a, true;
		if (b.kind == PL_PARTIAL && b.red == RED_SUM && a.kind == PL_REPL)
			return *out = b, true;
		return false;
	}
	if (!asplit && !bsplit)
		return *out = (Place){PL_REPL, 0, 0}, true;
	/* contraction dim split on either or both sides */
	if ((asplit && a.dim == ka && (!bsplit || b.dim == kb)) || (bsplit && b.dim == kb && !asplit))
		return *out = (Place){PL_PARTIAL, 0, RED_SUM}, true;
	if (asplit && a.dim == ma && !bsplit)
		return *out = (Place){PL_SPLIT, r - 2, 0}, true;
	if (bsplit && b.dim == nb && !asplit)
		return *out = (Place){PL_SPLIT, r - 1, 0}, true;
	/* batch dims: the same result dim on both sides, or one side split
	 * and the other @repl (sliced locally) */
	int da = asplit && a.dim < ma ? a.dim + (r - m->ra) : -1;
	int db = bsplit && b.dim < kb ? b.dim + (r - m->rb) : -1;
	if (da >= 0 && (!bsplit || db == da))
		return *out = (Place){PL_SPLIT, da, 0}, true;
	if (db >= 0 && !asplit)
		return *out = (Place){PL_SPLIT, db, 0}, true;
	return false;
}

static bool
mm_ok(Sema *s, const Type *ta, const Type *tb, void *ctx, Place *out)
{
	(void)s;
	return mm_place(ctx, ta, tb, out);
}

static bool
mm_shape(const Type *ta, const Type *tb, MmShape *m, Span sp)
{
	Type ba = *ta, bb = *tb;
	if (ta->rank < 2 || tb->rank < 2) {
		diag_error(sp, "matmul needs operands of rank 2 or more (ranks %d and %d); reshape vectors first", ta->rank, tb->rank);
		return false;
	}
	if (ta->dim[ta->rank - 1] != tb->dim[tb->rank - 2]) {
		diag_error(sp, "matmul of [.., %lld, %lld] and [.., %lld, %lld]: the inner sizes differ",
		           (long long)ta->dim[ta->rank - 2], (long long)ta->dim[ta->rank - 1],
		           (long long)tb->dim[tb->rank - 2], (long long)tb->dim[tb->rank - 1]);
		return false;
	}
	ba.rank -= 2;
	bb.rank -= 2;
	if (!broadcast(&ba, &bb, &m->res, sp))
		return false;
	ASSERT(m->res.rank + 2 <= LIM_RANK); /* max(ranks) - 2 batch dims */
	m->res.dim[m->res.rank++] = ta->dim[ta->rank - 2];
	m->res.dim[m->res.rank++] = tb->dim[tb->rank - 1];
	m->res.dt = ta->dt;
	m->ra = ta->rank;
	m->rb = tb->rank;
	return true;
}

/* A split batch dim may not be one that broadcasting stretches. */
static bool
batch_split_ok(const Type *t, const MmShape *m)
{
	Type batch = *t;
	Place p;
	if (t->pl.kind != PL_SPLIT || t->pl.dim >= t->rank - 2)
		return true;
	batch.rank -= 2;
	Type res = m->res;
	res.rank -= 2;
	return lift_place(&batch, &res, &p);
}

SVal
rule_matmul(Sema *s, SVal a, SVal b, Span sp)
{
	const Type *ta, *tb;
	MmShape m;
	Val args[2];
	if (a.k == SV_ERR || b.k == SV_ERR)
		return sv_err();
	if (s->kernel) {
		diag_error(sp, "matmul cannot appear in a kernel body; kernels are elementwise");
		return sv_err();
	}
	if (!want_tensor(a, "matmul") || !want_tensor(b, "matmul"))
		return sv_err();
	ta = sv_type(s, a);
	tb = sv_type(s, b);
	if (ta->dt != tb->dt || ta->dt == DT_I32) {
		diag_error(sp, "matmul of %s and %s: operands must share a float dtype", ty_dtypes[ta->dt].name, ty_dtypes[tb->dt].name);
		return sv_err();
	}
	if (!mm_shape(ta, tb, &m, sp) || !check_shape(s, &m.res, sp))
		return sv_err();
	if (!batch_split_ok(ta, &m))
		return stretched(s, &a) ? rule_matmul(s, a, b, sp) : sv_err();
	if (!batch_split_ok(tb, &m))
		return stretched(s, &b) ? rule_matmul(s, a, b, sp) : sv_err();
	if (!mm_place(&m, ta, tb, &m.res.pl)) {
		SVal a2 = a, b2 = b;
		if (s->autocomm && fix_operands(s, &a2, &b2, mm_ok, &m, &m.res, true))
			return rule_matmul(s, a2, b2, sp);
		if (a2.k == SV_ERR || b2.k == SV_ERR)
			return sv_err(); /* an inserted collective failed, and said so */
		no_local_form(s, "matmul", a, b, sp);
		fix_operands(s, &a, &b, mm_ok, &m, &m.res, false);
		return sv_err();
	}
	/* as for elementwise results: P divides the split dim */
	args[0] = a.v;
	args[1] = b.v;
	return make(s, OP_MATMUL, m.res, args, 2, sp);
}

/* ---- builtins ---- */

typedef struct Builtin Builtin;
typedef SVal (*BuiltinFn)(Sema *s, const Builtin *b, SVal *x, int n, Span sp);
struct Builtin {
	const char *name;
	int min, max;
	BuiltinFn fn;
	Op op;
	bool elementwise; /* allowed in kernel bodies */
};

static SVal
b_unary(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	(void)n;
	return rule_unary(s, b->op, x[0], sp);
}

static SVal
b_binary(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	(void)n;
	return rule_binary(s, b->op, x[0], x[1], sp);
}

static SVal
b_cast(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	Type t;
	(void)b;
	(void)n;
	if (x[0].k == SV_ERR || x[1].k == SV_ERR)
		return sv_err();
	if (x[1].k != SV_DTYPE) {
		diag_error(x[1].span, "cast: the second argument must be a dtype, not %s", sv_what(x[1]));
		return sv_err();
	}
	if (is_num(x[0]))
		return constant(s, x[1].dt == DT_I32 ? trunc(x[0].f) : x[0].f, x[1].dt, sp);
	if (!want_tensor(x[0], "cast"))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (t.pl.kind == PL_PARTIAL)
		return rule_unary(s, OP_CAST, x[0], sp); /* reports the error */
	if (t.dt == x[1].dt)
		return x[0];
	t.dt = x[1].dt;
	return make(s, OP_CAST, t, &x[0].v, 1, sp);
}

/* sum, mean, amax, amin over one dim, which is kept with size 1. */
static SVal
b_reduce(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	Type t;
	int64_t d;
	int dim;
	static const RedOp red[] = {[OP_SUM] = RED_SUM, [OP_MEAN] = RED_SUM, [OP_AMAX] = RED_MAX, [OP_AMIN] = RED_MIN};
	(void)n;
	if (!want_tensor(x[0], b->name) || !want_int(x[1], b->name, "the dim", &d))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (!norm_dim(d, t.rank, x[1].span, &dim))
		return sv_err();
	if (t.dt == DT_I32 && b->op == OP_MEAN) {
		diag_error(sp, "mean is not defined on i32; cast to a float dtype first");
		return sv_err();
	}
	/* sum and mean are linear, amax and amin commute with the same
	 * reduction over ranks; any other mix has no local form */
	if (t.pl.kind == PL_PARTIAL && t.pl.red != red[b->op]) {
		if (rule_to_repl(s, &x[0]))
			return b_reduce(s, b, x, n, sp);
		diag_error(sp, "%s of a @partial(%s) value has no local form: reduce it first", b->name, pl_rednames[t.pl.red]);
		rule_repl_note(s, x[0]);
		return sv_err();
	}
	if (t.pl.kind == PL_SPLIT && t.pl.dim == dim)
		t.pl = (Place){PL_PARTIAL, 0, red[b->op]};
	t.dim[dim] = 1;
	SVal r = make(s, b->op, t, &x[0].v, 1, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->axis = dim;
	return r;
}

static SVal
b_transpose(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	Type t;
	int64_t a1 = -2, a2 = -1;
	int d1, d2;
	(void)b;
	if (!want_tensor(x[0], "transpose"))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (n == 2) {
		diag_error(sp, "transpose takes one argument (swap the last two dims) or three (the two dims to swap)");
		return sv_err();
	}
	if (n == 3 && (!want_int(x[1], "transpose", "a dim", &a1) || !want_int(x[2], "transpose", "a dim", &a2)))
		return sv_err();
	if (t.rank < 2) {
		diag_error(sp, "transpose needs a tensor of rank 2 or more");
		return sv_err();
	}
	if (!norm_dim(a1, t.rank, sp, &d1) || !norm_dim(a2, t.rank, sp, &d2))
		return sv_err();
	int64_t tmp = t.dim[d1];
	t.dim[d1] = t.dim[d2];
	t.dim[d2] = tmp;
	if (t.pl.kind == PL_SPLIT)
		t.pl.dim = t.pl.dim == d1 ? d2 : t.pl.dim == d2 ? d1 : t.pl.dim;
	SVal r = make(s, OP_TRANSPOSE, t, &x[0].v, 1, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->axis = d1, ins(s, r)->axis2 = d2;
	return r;
}

/* A split survives a reshape when some output dim starts at the same
 * flat offset as the split dim and P divides it: then every rank's block
 * is the same contiguous run of elements before and after. */
static bool
reshape_place(const Type *in, Type *out, int p)
{
	int64_t pre = 1, opre = 1;
	if (in->pl.kind != PL_SPLIT)
		return true;
	for (int i = 0; i < in->pl.dim; i++)
		pre *= in->dim[i];
	for (int e = 0; e < out->rank; e++) {
		if (opre == pre && out->dim[e] % p == 0 && out->dim[e] >= p &&
		    (in->dim[in->pl.dim] / p) * (ty_numel(in) / pre / in->dim[in->pl.dim]) ==
		        (out->dim[e] / p) * (ty_numel(out) / opre / out->dim[e])) {
			out->pl.dim = e;
			return true;
		}
		opre *= out->dim[e];
	}
	return false;
}

static SVal
b_reshape(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	Type t, in;
	int infer = -1;
	int64_t known = 1;
	(void)b;
	(void)n;
	if (!want_tensor(x[0], "reshape"))
		return sv_err();
	if (x[1].k != SV_LIST) {
		if (x[1].k != SV_ERR)
			diag_error(x[1].span, "reshape: the shape must be a list like [4, 8], not %s", sv_what(x[1]));
		return sv_err();
	}
	in = *sv_type(s, x[0]);
	t = in;
	if (x[1].n > LIM_RANK || x[1].n < 0) {
		diag_error(x[1].span, "tensor rank %d is over the limit of %d", x[1].n, LIM_RANK);
		return sv_err();
	}
	t.rank = x[1].n;
	for (int i = 0; i < x[1].n; i++) {
		int64_t d;
		if (!want_int(x[1].elem[i], "reshape", "each size", &d))
			return sv_err();
		if (d == -1 && infer < 0) {
			infer = i;
			t.dim[i] = 1;
			continue;
		}
		if (d == -1) {
			diag_error(x[1].elem[i].span, "reshape: only one size may be -1");
			return sv_err();
		}
		if (d <= 0) {
			diag_error(x[1].elem[i].span, "reshape: size %lld is not positive (one size may be -1)", (long long)d);
			return sv_err();
		}
		t.dim[i] = d;
		if (!ck_mul(known, d, &known)) {
			diag_error(x[1].span, "reshape: the shape has too many elements");
			return sv_err();
		}
	}
	if (infer >= 0) {
		if (ty_numel(&in) % known) {
			diag_error(x[1].span, "reshape: %lld elements do not fill a whole number of rows of %lld",
			           (long long)ty_numel(&in), (long long)known);
			return sv_err();
		}
		t.dim[infer] = ty_numel(&in) / known;
		known = ty_numel(&in);
	}
	if (known != ty_numel(&in)) {
		diag_error(sp, "reshape: %lld elements cannot become %lld", (long long)ty_numel(&in), (long long)known);
		return sv_err();
	}
	if (!reshape_place(&in, &t, s->nranks)) {
		if (rule_to_repl(s, &x[0]))
			return b_reshape(s, b, x, n, sp);
		diag_error(sp, "reshape would mix the blocks of split dim %d across ranks", in.pl.dim);
		rule_repl_note(s, x[0]);
		return sv_err();
	}
	return make(s, OP_RESHAPE, t, &x[0].v, 1, sp);
}

static SVal
b_slice(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	Type t;
	int64_t d, start, len, end;
	int dim;
	(void)b;
	(void)n;
	if (!want_tensor(x[0], "slice") || !want_int(x[1], "slice", "the dim", &d) ||
	    !want_int(x[2], "slice", "the start", &start) || !want_int(x[3], "slice", "the length", &len))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (!norm_dim(d, t.rank, x[1].span, &dim))
		return sv_err();
	if (start < 0 || len <= 0 || !ck_add(start, len, &end) || end > t.dim[dim]) {
		diag_error(sp, "slice [%lld, +%lld) is outside dim %d of size %lld", (long long)start, (long long)len, dim,
		           (long long)t.dim[dim]);
		return sv_err();
	}
	if (t.pl.kind == PL_SPLIT && t.pl.dim == dim) {
		if (rule_to_repl(s, &x[0]))
			return b_slice(s, b, x, n, sp);
		diag_error(sp, "slice along split dim %d has no local form", dim);
		rule_repl_note(s, x[0]);
		return sv_err();
	}
	t.dim[dim] = len;
	SVal r = make(s, OP_SLICE, t, &x[0].v, 1, sp);
	if (r.k == SV_TENSOR) {
		ins(s, r)->axis = dim;
		ins(s, r)->a = start;
		ins(s, r)->b = len;
	}
	return r;
}

static SVal
b_concat(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	Type t;
	int64_t d, total;
	int dim;
	Val *args;
	(void)b;
	if (!want_int(x[0], "concat", "the dim", &d))
		return sv_err();
	for (int i = 1; i < n; i++)
		if (!want_tensor(x[i], "concat"))
			return sv_err();
	t = *sv_type(s, x[1]);
	if (!norm_dim(d, t.rank, x[0].span, &dim))
		return sv_err();
	total = 0;
	args = arena_alloc(s->tmp, (size_t)n * sizeof *args);
	for (int i = 1; i < n; i++) {
		const Type *u = sv_type(s, x[i]);
		bool same = u->dt == t.dt && u->rank == t.rank && pl_eq(u->pl, t.pl);
		for (int k = 0; same && k < t.rank; k++)
			same = k == dim || u->dim[k] == t.dim[k];
		if (!same) {
			Buf a = {0}, c = {0};
			ty_print(&a, u);
			ty_print(&c, &t);
			diag_error(x[i].span, "concat: this operand is %s, but the first is %s; they must agree except in the size of dim %d",
			           a.s, c.s, dim);
			buf_free(&a);
			buf_free(&c);
			return sv_err();
		}
		if (!ck_add(total, u->dim[dim], &total)) {
			diag_error(sp, "concat: the result is too large");
			return sv_err();
		}
		args[i - 1] = x[i].v;
	}
	if (t.pl.kind == PL_SPLIT && t.pl.dim == dim) {
		if (s->autocomm) {
			for (int i = 1; i < n; i++)
				rule_to_repl(s, &x[i]);
			return b_concat(s, b, x, n, sp);
		}
		diag_error(sp, "concat along split dim %d has no local form", dim);
		for (int i = 1; i < n; i++)
			rule_repl_note(s, x[i]);
		return sv_err();
	}
	t.dim[dim] = total;
	if (!check_shape(s, &t, sp))
		return sv_err();
	SVal r = make(s, OP_CONCAT, t, args, n - 1, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->axis = dim;
	return r;
}

/* ---- collectives ---- */

static bool
want_red(SVal x, const char *fn, RedOp *r)
{
	if (x.k == SV_RED) {
		*r = (RedOp)x.i;
		return true;
	}
	if (x.k != SV_ERR)
		diag_error(x.span, "%s: the reduction must be sum, max or min, not %s", fn, sv_what(x));
	return false;
}

/* After a collective was given a value in the wrong placement: how to
 * reach the placement the caller wanted from it (`goal`), or that it is
 * there already. */
static void
goal_note(Sema *s, SVal x, Place goal, const char *fn)
{
	const Type *t = sv_type(s, x);
	Buf nm = {0}, pl = {0};
	if (rule_can_reshard(t, goal, s->nranks)) {
		reshard_note(s, x, goal, "it", NULL);
		return;
	}
	if (pl_eq(t->pl, goal)) {
		rule_operand_text(&nm, x.span, "the operand");
		pl_print(&pl, goal);
		diag_note(NOSPAN, "%s is %s already; no %s is needed", nm.s, pl.s, fn);
	}
	buf_free(&nm);
	buf_free(&pl);
}

static bool
want_partial(Sema *s, SVal x, RedOp red, const char *fn, Span sp, Place goal)
{
	const Type *t = sv_type(s, x);
	Buf p = {0}, nm = {0};
	if (t->pl.kind == PL_PARTIAL && t->pl.red == red)
		return true;
	pl_print(&p, t->pl);
	rule_operand_text(&nm, x.span, "the operand");
	if (t->pl.kind == PL_PARTIAL)
		diag_error(sp, "%s with %s of a %s value: the reductions differ", fn, pl_rednames[red], p.s);
	else
		diag_error(sp, "%s needs a @partial(%s) value, but %s is %s", fn, pl_rednames[red], nm.s, p.s);
	goal_note(s, x, goal, fn);
	buf_free(&p);
	buf_free(&nm);
	return false;
}

/* dim < 0: any split dim will do (shift). */
static bool
want_split(Sema *s, SVal x, int dim, const char *fn, Span sp, Place goal)
{
	const Type *t = sv_type(s, x);
	Buf p = {0}, nm = {0};
	if (t->pl.kind == PL_SPLIT && (dim < 0 || t->pl.dim == dim))
		return true;
	pl_print(&p, t->pl);
	rule_operand_text(&nm, x.span, "the operand");
	if (dim >= 0)
		diag_error(sp, "%s along dim %d needs a value @split(%d), but %s is %s", fn, dim, dim, nm.s, p.s);
	else
		diag_error(sp, "%s needs a @split value, but %s is %s", fn, nm.s, p.s);
	goal_note(s, x, goal, fn);
	buf_free(&p);
	buf_free(&nm);
	return false;
}

static bool
divisible(Sema *s, const Type *t, int dim, Span sp)
{
	if (t->dim[dim] % s->nranks == 0)
		return true;
	diag_error(sp, "dim %d has size %lld, which %d ranks do not divide", dim, (long long)t->dim[dim], s->nranks);
	return false;
}

static SVal
collective(Sema *s, Op op, SVal x, Type t, Span sp)
{
	SVal r = make(s, op, t, &x.v, 1, sp);
	return r;
}

static SVal
b_all_reduce(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	RedOp red;
	Type t;
	(void)b;
	(void)n;
	if (!want_tensor(x[0], "all_reduce") || !want_red(x[1], "all_reduce", &red))
		return sv_err();
	if (!want_partial(s, x[0], red, "all_reduce", sp, (Place){PL_REPL, 0, 0}))
		return sv_err();
	t = *sv_type(s, x[0]);
	t.pl = (Place){PL_REPL, 0, 0};
	SVal r = collective(s, OP_ALL_REDUCE, x[0], t, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->red = red;
	return r;
}

static SVal
b_reduce_scatter(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	RedOp red;
	int64_t d;
	int dim;
	Type t;
	(void)b;
	(void)n;
	if (!want_tensor(x[0], "reduce_scatter") || !want_int(x[1], "reduce_scatter", "the dim", &d) ||
	    !want_red(x[2], "reduce_scatter", &red))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (!norm_dim(d, t.rank, x[1].span, &dim) || !want_partial(s, x[0], red, "reduce_scatter", sp, (Place){PL_SPLIT, dim, 0}) ||
	    !divisible(s, &t, dim, sp))
		return sv_err();
	t.pl = (Place){PL_SPLIT, dim, 0};
	SVal r = collective(s, OP_REDUCE_SCATTER, x[0], t, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->red = red, ins(s, r)->axis = dim;
	return r;
}

static SVal
b_all_gather(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	int64_t d;
	int dim;
	Type t;
	(void)b;
	(void)n;
	if (!want_tensor(x[0], "all_gather") || !want_int(x[1], "all_gather", "the dim", &d))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (!norm_dim(d, t.rank, x[1].span, &dim) || !want_split(s, x[0], dim, "all_gather", sp, (Place){PL_REPL, 0, 0}))
		return sv_err();
	t.pl = (Place){PL_REPL, 0, 0};
	SVal r = collective(s, OP_ALL_GATHER, x[0], t, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->axis = dim;
	return r;
}

static SVal
b_all_to_all(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	int64_t d1, d2;
	int from, to;
	Type t;
	(void)b;
	(void)n;
	if (!want_tensor(x[0], "all_to_all") || !want_int(x[1], "all_to_all", "the source dim", &d1) ||
	    !want_int(x[2], "all_to_all", "the target dim", &d2))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (!norm_dim(d1, t.rank, x[1].span, &from) || !norm_dim(d2, t.rank, x[2].span, &to))
		return sv_err();
	if (from != to && t.pl.kind == PL_SPLIT && t.pl.dim == to) {
		/* split along the target already: the dims the wrong way round
		 * is likelier than an all_to_all nobody needs */
		Buf x0 = {0};
		text_of(&x0, x[0].span);
		diag_error(sp, "all_to_all along dim %d needs a value @split(%d), but %s is @split(%d)", from, from, x0.s, to);
		diag_note(NOSPAN, "the source dim comes first: all_to_all(%s, %d, %d) moves its split from dim %d to dim %d",
		          x0.s, to, from, to, from);
		buf_free(&x0);
		return sv_err();
	}
	if (!want_split(s, x[0], from, "all_to_all", sp, (Place){PL_SPLIT, to, 0}))
		return sv_err();
	if (from == to) {
		diag_error(sp, "all_to_all from dim %d to itself does nothing", from);
		goal_note(s, x[0], (Place){PL_SPLIT, to, 0}, "all_to_all");
		return sv_err();
	}
	if (!divisible(s, &t, to, sp))
		return sv_err();
	t.pl = (Place){PL_SPLIT, to, 0};
	SVal r = collective(s, OP_ALL_TO_ALL, x[0], t, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->axis = from, ins(s, r)->axis2 = to;
	return r;
}

static SVal
b_shift(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	int64_t k;
	Type t;
	(void)b;
	(void)n;
	if (!want_tensor(x[0], "shift") || !want_int(x[1], "shift", "the offset", &k) ||
	    !want_split(s, x[0], -1, "shift", sp, (Place){PL_SPLIT, 0, 0}))
		return sv_err();
	t = *sv_type(s, x[0]);
	k %= s->nranks;
	if (k < 0)
		k += s->nranks;
	SVal r = collective(s, OP_SHIFT, x[0], t, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->a = k, ins(s, r)->axis = t.pl.dim;
	return r;
}

/* causal(x) or causal(x, k): x with -inf where the column is past the
 * row plus k in its last two dims -- the mask of causal attention (k = 0),
 * or of a block of keys k positions behind the queries.  The mask reads
 * global positions, so the last two dims must be whole on each rank; it
 * is no sum over ranks, so a @partial value must be reduced first. */
static SVal
b_causal(Sema *s, const Builtin *b, SVal *x, int n, Span sp)
{
	Type t;
	int64_t k = 0;
	(void)b;
	if (!want_tensor(x[0], "causal") || (n == 2 && !want_int(x[1], "causal", "the diagonal", &k)))
		return sv_err();
	t = *sv_type(s, x[0]);
	if (t.rank < 2) {
		diag_error(sp, "causal needs a tensor of rank 2 or more (rows and columns)");
		return sv_err();
	}
	if (t.dt == DT_I32) {
		diag_error(sp, "causal is not defined on i32 (-inf has no i32 value); cast to a float dtype first");
		return sv_err();
	}
	if (k <= -t.dim[t.rank - 2] - t.dim[t.rank - 1] || k >= t.dim[t.rank - 2] + t.dim[t.rank - 1]) {
		diag_error(x[1].span, "causal: diagonal %lld is outside a %lld x %lld matrix", (long long)k,
		           (long long)t.dim[t.rank - 2], (long long)t.dim[t.rank - 1]);
		return sv_err();
	}
	if (t.pl.kind == PL_PARTIAL || (t.pl.kind == PL_SPLIT && t.pl.dim >= t.rank - 2)) {
		if (rule_to_repl(s, &x[0]))
			return b_causal(s, b, x, n, sp);
		if (t.pl.kind == PL_PARTIAL)
			diag_error(sp, "causal of a @partial(%s) value has no local form: reduce it first", pl_rednames[t.pl.red]);
		else
			diag_error(sp, "causal needs the last two dims whole on each rank; its operand is @split(%d)", t.pl.dim);
		rule_repl_note(s, x[0]);
		return sv_err();
	}
	SVal r = make(s, OP_CAUSAL, t, &x[0].v, 1, sp);
	if (r.k == SV_TENSOR)
		ins(s, r)->a = k;
	return r;
}

/* In the order "did you mean" tries them (sema.c: the first of equally
 * near names wins); a collective's row comes from comm/colls.h and its
 * rule is b_<name> above. */
static const Builtin builtins[] = {
	{"transpose", 1, 3, b_transpose, OP_TRANSPOSE, false},
	{"reshape", 2, 2, b_reshape, OP_RESHAPE, false},
	{"slice", 4, 4, b_slice, OP_SLICE, false},
	{"concat", 3, 1 << 16, b_concat, OP_CONCAT, false},
	{"causal", 1, 2, b_causal, OP_CAUSAL, false},
	{"cast", 2, 2, b_cast, OP_CAST, true},
	{"sum", 2, 2, b_reduce, OP_SUM, false},
	{"mean", 2, 2, b_reduce, OP_MEAN, false},
	{"amax", 2, 2, b_reduce, OP_AMAX, false},
	{"amin", 2, 2, b_reduce, OP_AMIN, false},
	{"exp", 1, 1, b_unary, OP_EXP, true},
	{"log", 1, 1, b_unary, OP_LOG, true},
	{"sqrt", 1, 1, b_unary, OP_SQRT, true},
	{"rsqrt", 1, 1, b_unary, OP_RSQRT, true},
	{"tanh", 1, 1, b_unary, OP_TANH, true},
	{"sigmoid", 1, 1, b_unary, OP_SIGMOID, true},
	{"abs", 1, 1, b_unary, OP_ABS, true},
	{"max", 2, 2, b_binary, OP_MAX, true},
	{"min", 2, 2, b_binary, OP_MIN, true},
#define C(NAME, name, args, ...) {#name, args, args, b_##name, OP_##NAME, false},
#include "../comm/colls.h"
#undef C
};

static const Builtin *
find_builtin(Sym name)
{
	const char *s = sym_str(name);
	for (size_t i = 0; i < NELEM(builtins); i++)
		if (strcmp(builtins[i].name, s) == 0)
			return &builtins[i];
	return NULL;
}

/* The builtins' names in turn; NULL after the last. */
const char *
rule_builtin_name(size_t i)
{
	return i < NELEM(builtins) ? builtins[i].name : NULL;
}

bool
rule_is_builtin(Sym name)
{
	return find_builtin(name) != NULL;
}

SVal
rule_builtin(Sema *s, Sym name, SVal *args, int nargs, Span sp)
{
	const Builtin *b = find_builtin(name);
	ASSERT(b);
	for (int i = 0; i < nargs; i++)
		if (args[i].k == SV_ERR)
			return sv_err();
	if (nargs < b->min || nargs > b->max) {
		if (b->min == b->max)
			diag_error(sp, "%s takes %d argument%s, not %d", b->name, b->min, b->min == 1 ? "" : "s", nargs);
		else if (b->max > 100)
			diag_error(sp, "%s takes at least %d arguments, not %d", b->name, b->min, nargs);
		else
			diag_error(sp, "%s takes %d to %d arguments, not %d", b->name, b->min, b->max, nargs);
		return sv_err();
	}
	if (s->kernel && !b->elementwise) {
		diag_error(sp, "%s cannot appear in a kernel body; kernels are elementwise", b->name);
		return sv_err();
	}
	for (int i = 0; i < nargs; i++)
		if (args[i].k == SV_TUPLE) {
			diag_error(args[i].span, "%s: an argument cannot be a tuple", b->name);
			return sv_err();
		}
	return b->fn(s, b, args, nargs, sp);
}
