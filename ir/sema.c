/* ir/sema.c -- names, scopes, params, statements, results: the elaborator
 * that turns each entry op into a graph-IR Func (calls are in ir/call.c).
 *
 * An op means a function on global tensors (DESIGN §2.4).  Elaboration
 * runs the op abstractly: every tensor expression becomes one IR value
 * typed by the placement table (ir/rules.c), calls of ops and kernels are
 * inlined, `for` loops unrolled and constants folded.  Errors are counted,
 * not fatal: an erroneous expression yields SV_ERR, on which every rule
 * stays silent, so each mistake is reported once. */
#include "ir.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---- */

SVal
sv_err(void)
{
	return (SVal){.k = SV_ERR, .span = NOSPAN};
}

SVal
sv_int(int64_t i, Span sp)
{
	return (SVal){.k = SV_INT, .i = i, .f = (double)i, .span = sp};
}

SVal
sv_float(double f, Span sp)
{
	return (SVal){.k = SV_FLOAT, .f = f, .span = sp};
}

SVal
sv_tensor(Val v, Span sp)
{
	return (SVal){.k = SV_TENSOR, .v = v, .span = sp};
}

const Type *
sv_type(Sema *s, SVal x)
{
	ASSERT(x.k == SV_TENSOR);
	return &s->f->ins[x.v].ty;
}

const char *
sv_what(SVal x)
{
	switch (x.k) {
	case SV_TENSOR: return "a tensor";
	case SV_INT: return "an integer";
	case SV_FLOAT: return "a number";
	case SV_DTYPE: return "a dtype";
	case SV_RED: return "a reduction name";
	case SV_TUPLE: return "a tuple";
	case SV_LIST: return "a list";
	case SV_ERR: return "an error";
	}
	return "?";
}

/* Rank, positive dims and an element count that fits int64. */
bool
check_shape(Sema *s, Type *t, Span sp)
{
	int64_t n = 1;
	(void)s;
	ASSERT(t->rank <= LIM_RANK); /* the parser and reshape bound it */
	for (int i = 0; i < t->rank; i++) {
		if (t->dim[i] <= 0) {
			diag_error(sp, "dim %d has size %lld; sizes must be positive", i, (long long)t->dim[i]);
			return false;
		}
		if (!ck_mul(n, t->dim[i], &n) || !ck_mul(n, 4, &(int64_t){0})) {
			diag_error(sp, "tensor has too many elements (the byte size overflows 64 bits)");
			return false;
		}
	}
	return true;
}

/* ---- "did you mean" ---- */

static int
edits(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), row[64];
	if (la >= 63 || lb >= 63)
		return 99;
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

typedef struct Near {
	const char *want, *best;
	int dist;
} Near;

static void
near(Near *n, Sym cand)
{
	int d;
	if (!cand)
		return;
	d = edits(n->want, sym_str(cand));
	/* about one edit in three, and never all of a short name */
	if (d < n->dist && d <= (int)(strlen(n->want) + 2) / 3 && d < (int)strlen(n->want)) {
		n->dist = d;
		n->best = sym_str(cand);
	}
}

static void
near_map(Near *n, const SymMap *m)
{
	for (uint32_t i = 0; i < m->cap; i++)
		near(n, m->key[i]);
}

static void
suggest_name(const Sema *s, Frame *fr, Sym want, Span sp, bool fn)
{
	Near n = {sym_str(want), NULL, 99};
	if (fn) {
		for (size_t i = 0; rule_builtin_name(i); i++)
			near(&n, sym_cstr(rule_builtin_name(i)));
		near_map(&n, &fr->me->defs);
		for (int i = 0; i < fr->me->m->nuses; i++)
			for (ModEnv *e = s->envs; e; e = e->next)
				if (e->m == fr->me->m->uses[i])
					near_map(&n, &e->defs);
	} else {
		for (Bind *b = fr->scope; b; b = b->next)
			near(&n, b->name);
		near_map(&n, &fr->me->params);
		near(&n, s->nranks_name);
	}
	if (n.best)
		diag_note(sp, "did you mean '%s'?", n.best);
}

/* ---- names ---- */

static uint32_t
slot(const Frame *fr, Sym name)
{
	uint32_t h = (name * 2654435761u) & (fr->names.cap - 1);
	while (fr->names.key[h] && fr->names.key[h] != name)
		h = (h + 1) & (fr->names.cap - 1);
	return h;
}

/* The table lives in the elaboration arena; a grown one leaves the old
 * arrays there (their sizes sum to less than the new one's). */
static void
names_put(Sema *s, Frame *fr, Sym name, Bind *b)
{
	uint32_t h;
	if (2 * (fr->names.n + 1) > fr->names.cap) {
		Frame g = {0};
		g.names.cap = fr->names.cap ? 2 * fr->names.cap : 16;
		g.names.key = arena_alloc(s->tmp, g.names.cap * sizeof *g.names.key);
		g.names.val = arena_alloc(s->tmp, g.names.cap * sizeof *g.names.val);
		for (uint32_t i = 0; i < fr->names.cap; i++)
			if (fr->names.key[i]) {
				h = slot(&g, fr->names.key[i]);
				g.names.key[h] = fr->names.key[i];
				g.names.val[h] = fr->names.val[i];
			}
		g.names.n = fr->names.n;
		fr->names = g.names;
	}
	h = slot(fr, name);
	fr->names.n += fr->names.key[h] == 0;
	fr->names.key[h] = name;
	fr->names.val[h] = b;
}

Bind *
sema_local(Frame *fr, Sym name)
{
	if (!fr->names.cap)
		return NULL;
	uint32_t h = slot(fr, name);
	return fr->names.key[h] ? fr->names.val[h] : NULL;
}

Bind *
sema_bind(Sema *s, Frame *fr, Sym name, BindKind k, SVal v, Span sp)
{
	Bind *b = arena_alloc(s->tmp, sizeof *b);
	b->name = name;
	b->kind = k;
	b->val = v;
	b->span = sp;
	b->next = fr->scope;
	b->shadow = sema_local(fr, name);
	fr->scope = b;
	names_put(s, fr, name, b);
	return b;
}

/* Ends a scope: forgets the bindings made since `mark`. */
static void
unbind_to(Frame *fr, Bind *mark)
{
	for (Bind *b = fr->scope; b != mark; b = b->next)
		fr->names.val[slot(fr, b->name)] = b->shadow;
	fr->scope = mark;
}

/* Names the language predefines: they cannot be declared again. */
static bool
reserved(const Sema *s, Sym name, Span sp, const char *what)
{
	if (!sema_predefined(s, name))
		return false;
	diag_error(sp, "%s cannot be named '%s': %s", what, sym_str(name),
	           name == s->nranks_name ? "`nranks` is the number of ranks" : "it names a reduction (sum, max, min)");
	return true;
}

bool
sema_predefined(const Sema *s, Sym name)
{
	return name == s->nranks_name || name == s->sum_name || name == s->max_name || name == s->min_name;
}

static Node *
later_param(ModEnv *me, Sym name)
{
	for (Node *it = me->m->items; it; it = it->next)
		if (it->kind == NK_PARAM && it->u.let.name == name)
			return it;
	return NULL;
}

static Node *
def_named(const Sema *s, ModEnv *me, Sym name)
{
	Node *d = symmap_get(&me->defs, name);
	for (int i = 0; !d && i < me->m->nuses; i++)
		for (ModEnv *e = s->envs; e && !d; e = e->next)
			if (e->m == me->m->uses[i])
				d = symmap_get(&e->defs, name);
	return d;
}

/* Why a name has no value, when there is more to say than "unknown". */
static bool
explain_unknown(const Sema *s, Frame *fr, Node *n)
{
	Sym name = n->u.name;
	Node *d = def_named(s, fr->me, name), *p;
	if (d) {
		diag_error(n->span, "'%s' is %s, not a value; call it: %s(...)", sym_str(name),
		           d->kind == NK_OP ? "an op" : "a kernel", sym_str(name));
		return true;
	}
	if (!fr->fn && (p = later_param(fr->me, name))) {
		diag_error(n->span, "param '%s' is used before it is declared", sym_str(name));
		diag_note(p->u.let.nspan, "'%s' is declared here", sym_str(name));
		return true;
	}
	return false;
}

static SVal
lookup(Sema *s, Frame *fr, Node *n)
{
	Sym name = n->u.name;
	Bind *b = sema_local(fr, name);
	SVal v;
	if (!b)
		b = symmap_get(&fr->me->params, name);
	if (b) {
		v = b->refused ? sv_err() : b->val;
		v.span = n->span;
		return v;
	}
	if (name == s->nranks_name)
		return sv_int(s->nranks, n->span);
	if (name == s->sum_name || name == s->max_name || name == s->min_name)
		return (SVal){.k = SV_RED, .i = name == s->sum_name ? RED_SUM : name == s->max_name ? RED_MAX : RED_MIN, .span = n->span};
	if (explain_unknown(s, fr, n))
		return sv_err();
	diag_error(n->span, "unknown name '%s'", sym_str(name));
	suggest_name(s, fr, name, n->span, false);
	return sv_err();
}

/* A name in a size expression that nothing binds: no argument of the
 * call, no param, not `nranks`.  NULL when every name has a value. */
Node *
sema_free_name(const Sema *s, Frame *fr, Node *e)
{
	Node *r = NULL;
	switch (e->kind) {
	case NK_NAME:
		if (sema_local(fr, e->u.name) || symmap_get(&fr->me->params, e->u.name) || sema_predefined(s, e->u.name))
			return NULL;
		return e;
	case NK_BIN:
		if ((r = sema_free_name(s, fr, e->u.bin.l)) || !e->u.bin.r)
			return r;
		return sema_free_name(s, fr, e->u.bin.r);
	case NK_NEG:
		return sema_free_name(s, fr, e->u.bin.l);
	case NK_CALL:
	case NK_LIST:
	case NK_TUPLE:
		for (Node *a = e->u.call.args; a && !r; a = a->next)
			r = sema_free_name(s, fr, a);
		return r;
	default:
		return NULL;
	}
}

/* The op or kernel a call names: this file first, then the files it uses. */
static Node *
find_def(const Sema *s, Frame *fr, Sym name, Span sp, bool *ambiguous)
{
	Node *d = symmap_get(&fr->me->defs, name), *other;
	Module *from = NULL;
	*ambiguous = false;
	if (d)
		return d;
	for (int i = 0; i < fr->me->m->nuses; i++)
		for (ModEnv *e = s->envs; e; e = e->next) {
			if (e->m != fr->me->m->uses[i] || !(other = symmap_get(&e->defs, name)))
				continue;
			if (d) {
				diag_error(sp, "'%s' is defined by both %s.syn and %s.syn", sym_str(name),
				           sym_str(from->name), sym_str(e->m->name));
				diag_note(d->u.fn.nspan, "one definition");
				diag_note(other->u.fn.nspan, "the other");
				*ambiguous = true;
				return NULL;
			}
			d = other;
			from = e->m;
		}
	return d;
}

ModEnv *
sema_env(const Sema *s, int file)
{
	for (ModEnv *e = s->envs; e; e = e->next)
		if (e->m->file == file)
			return e;
	die("no module for file %d", file);
}

/* ---- constant expressions: sizes, ranges ---- */

bool
sema_int(Sema *s, Frame *fr, Node *n, const char *what, int64_t *out)
{
	SVal v = sema_eval(s, fr, n);
	if (v.k == SV_ERR)
		return false;
	if (v.k != SV_INT) {
		diag_error(n->span, "%s must be an integer constant, not %s", what, sv_what(v));
		return false;
	}
	*out = v.i;
	return true;
}

/* ---- types in signatures ---- */

/* Placement written after a type: @repl, @split(d), @partial(op). */
bool
sema_place(Sema *s, Frame *fr, Node *pn, int rank, Place *out)
{
	const char *name = sym_str(pn->u.call.name);
	SVal a = {0};
	if (pn->u.call.nargs > 1) {
		diag_error(pn->span, "placement @%s takes at most one argument", name);
		return false;
	}
	if (pn->u.call.nargs == 1 && (a = sema_eval(s, fr, pn->u.call.args)).k == SV_ERR)
		return false;
	if (strcmp(name, "repl") == 0 && pn->u.call.nargs == 0) {
		*out = (Place){PL_REPL, 0, 0};
		return true;
	}
	if (strcmp(name, "split") == 0 && pn->u.call.nargs == 1 && a.k == SV_INT) {
		int64_t d = a.i < 0 ? a.i + rank : a.i;
		if (d < 0 || d >= rank) {
			diag_error(pn->span, "@split(%lld) names no dim of a rank-%d tensor", (long long)a.i, rank);
			return false;
		}
		*out = (Place){PL_SPLIT, (int)d, 0};
		return true;
	}
	if (strcmp(name, "partial") == 0 && pn->u.call.nargs == 1 && a.k == SV_RED) {
		*out = (Place){PL_PARTIAL, 0, (RedOp)a.i};
		return true;
	}
	if (strcmp(name, "repl") && strcmp(name, "split") && strcmp(name, "partial")) {
		diag_error(pn->u.call.nspan, "unknown placement '@%s'", name);
		diag_note(NOSPAN, "placements are @repl, @split(dim) and @partial(sum|max|min)");
	} else {
		diag_error(pn->span, "malformed placement: write @repl, @split(dim) or @partial(sum|max|min)");
	}
	return false;
}

static bool
check_divisible(Sema *s, const Type *t, Span sp, const char *what)
{
	if (t->pl.kind == PL_SPLIT && t->dim[t->pl.dim] % s->nranks) {
		diag_error(sp, "%s is split along dim %d of size %lld, which %d ranks do not divide",
		           what, t->pl.dim, (long long)t->dim[t->pl.dim], s->nranks);
		return false;
	}
	return true;
}

/* The dtype of a written type: a dtype keyword, or a name whose value
 * is a dtype (a dtype variable bound by unification, a `param T = bf16`). */
bool
sema_dtype(Sema *s, Frame *fr, Node *tn, DType *dt)
{
	Node nm = {.kind = NK_NAME, .span = tn->u.type.dspan, .u.name = tn->u.type.dtype};
	SVal d;
	if (!tn->u.type.dvar) {
		if (!ty_dtype_byname(sym_str(tn->u.type.dtype), dt))
			die("lexer gave an unknown dtype");
		return true;
	}
	if (!sema_local(fr, nm.u.name) && !symmap_get(&fr->me->params, nm.u.name) && !sema_predefined(s, nm.u.name)) {
		Near n = {sym_str(nm.u.name), NULL, 99};
		diag_error(nm.span, "unknown dtype '%s'", sym_str(nm.u.name));
		for (int i = 0; i < DT_COUNT; i++)
			near(&n, sym_cstr(ty_dtypes[i].name));
		if (n.best)
			diag_note(nm.span, "did you mean '%s'?", n.best);
		else
			diag_note(NOSPAN, "the dtypes are f32, f16, bf16 and i32; a name can stand for one if a param or an "
			          "argument binds it");
		return false;
	}
	d = sema_eval(s, fr, &nm);
	if (d.k == SV_ERR)
		return false;
	if (d.k != SV_DTYPE) {
		diag_error(tn->u.type.dspan, "'%s' is %s, not a dtype", sym_str(tn->u.type.dtype), sv_what(d));
		return false;
	}
	*dt = d.dt;
	return true;
}

/* A signature type for the entry op: every name is a param. */
static bool
resolve_entry_type(Sema *s, Frame *fr, Node *tn, Type *t, const char *what)
{
	int i = 0;
	Node *un = NULL;
	memset(t, 0, sizeof *t);
	if (tn->u.type.dvar && !sema_local(fr, tn->u.type.dtype) && !symmap_get(&fr->me->params, tn->u.type.dtype) &&
	    !later_param(fr->me, tn->u.type.dtype))
		un = tn;
	for (Node *d = tn->u.type.dims; d && !un; d = d->next)
		un = sema_free_name(s, fr, d);
	if (un && !(un->kind == NK_NAME && later_param(fr->me, un->u.name))) {
		Sym name = un->kind == NK_TYPE ? un->u.type.dtype : un->u.name;
		diag_error(un->kind == NK_TYPE ? un->u.type.dspan : un->span,
		           "'%s' has no value: the op being compiled takes its sizes and dtypes from params "
		           "(declare `param %s = ...`)", sym_str(name), sym_str(name));
		return false;
	}
	if (!sema_dtype(s, fr, tn, &t->dt))
		return false;
	t->rank = tn->u.type.rank; /* the parser bounds it by LIM_RANK */
	for (Node *d = tn->u.type.dims; d; d = d->next, i++)
		if (!sema_int(s, fr, d, "a size", &t->dim[i]))
			return false;
	if (!check_shape(s, t, tn->span))
		return false;
	t->pl = (Place){PL_REPL, 0, 0};
	if (tn->u.type.place && !sema_place(s, fr, tn->u.type.place, t->rank, &t->pl))
		return false;
	return check_divisible(s, t, tn->span, what);
}

/* ---- statements ---- */

typedef enum Flow { FLOW_NEXT, FLOW_RETURN } Flow;

static Flow exec_list(Sema *s, Frame *fr, Node *list, SVal *ret, bool inloop);

static bool
same_type(Sema *s, SVal a, SVal b)
{
	if (a.k != b.k)
		return (a.k == SV_INT || a.k == SV_FLOAT) && (b.k == SV_INT || b.k == SV_FLOAT);
	if (a.k != SV_TENSOR)
		return true;
	const Type *x = sv_type(s, a), *y = sv_type(s, b);
	return x->dt == y->dt && ty_same_shape(x, y) && pl_eq(x->pl, y->pl);
}

static void
describe(Sema *s, Buf *b, SVal v)
{
	if (v.k == SV_TENSOR)
		ty_print(b, sv_type(s, v));
	else
		buf_printf(b, "%s", sv_what(v));
}

static void
exec_assign(Sema *s, Frame *fr, Node *st)
{
	Bind *b = sema_local(fr, st->u.let.name);
	SVal v = sema_eval(s, fr, st->u.let.init);
	if (!b) {
		if (symmap_get(&fr->me->params, st->u.let.name))
			diag_error(st->u.let.nspan, "cannot assign to param '%s'", sym_str(st->u.let.name));
		else
			diag_error(st->u.let.nspan, "assignment to '%s', which no `let` declares", sym_str(st->u.let.name));
		return;
	}
	if (b->kind != B_LET) {
		diag_error(st->u.let.nspan, "cannot assign to %s '%s'; only `let` names can be re-bound",
		           b->kind == B_ARG ? "argument" : b->kind == B_LOOP ? "loop variable" : "size", sym_str(b->name));
		return;
	}
	if (v.k == SV_ERR || b->val.k == SV_ERR) {
		b->val = sv_err();
		return;
	}
	if (v.k == SV_TENSOR && !s->f->ins[v.v].name && s->f->ins[v.v].op != OP_PARAM)
		s->f->ins[v.v].name = b->name;
	if (!same_type(s, b->val, v)) {
		Buf was = {0}, now = {0};
		describe(s, &was, b->val);
		describe(s, &now, v);
		diag_error(st->span, "'%s' was %s and cannot be re-bound to %s", sym_str(b->name), was.s, now.s);
		diag_note(b->span, "'%s' declared here", sym_str(b->name));
		buf_free(&was);
		buf_free(&now);
		b->refused = true; /* later uses stay quiet: no collective inserted for the value refused */
		return;
	}
	b->val = v;
	b->refused = false;
}

/* A placement that a signature or an annotation declares is reached by
 * the collective that converts to it, with a note -- unless
 * --no-auto-comm, where it is an error that suggests that collective. */
static SVal
declared_place(Sema *s, SVal v, Place want, const char *what, const char *by)
{
	const Type *t = sv_type(s, v);
	Buf a = {0}, b = {0};
	if (pl_eq(want, t->pl))
		return v;
	if (s->u->opt.autocomm != AC_OFF)
		return rule_reshard(s, v, want, v.span, by);
	pl_print(&a, t->pl);
	pl_print(&b, want);
	diag_error(v.span, "%s is %s, but %s declares %s (and --no-auto-comm is set)", what, a.s, by, b.s);
	if (rule_can_reshard(t, want, s->nranks))
		rule_reshard(s, v, want, v.span, NULL);
	buf_free(&a);
	buf_free(&b);
	return sv_err();
}

/* let name: type = e: the dtype and shape must agree; a different
 * placement is reached by a collective, like a signature's. */
static SVal
annotate(Sema *s, Frame *fr, Node *tn, SVal v, Sym name)
{
	const Type *t;
	Type want;
	int i = 0;
	if (v.k != SV_TENSOR) {
		if (v.k != SV_ERR)
			diag_error(tn->span, "'%s' is %s, but its annotation is a tensor type", sym_str(name), sv_what(v));
		return sv_err();
	}
	t = sv_type(s, v);
	want = *t;
	if (!sema_dtype(s, fr, tn, &want.dt))
		return sv_err();
	want.rank = tn->u.type.rank;
	for (Node *d = tn->u.type.dims; d; d = d->next, i++)
		if (!sema_int(s, fr, d, "a size", &want.dim[i]))
			return sv_err();
	if (want.dt != t->dt || !ty_same_shape(&want, t)) {
		Buf a = {0}, b = {0};
		ty_print_shape(&a, t->rank, t->dim);
		ty_print_shape(&b, want.rank, want.dim);
		diag_error(v.span, "'%s' is %s%s, but is declared %s%s", sym_str(name), ty_dtypes[t->dt].name, a.s,
		           ty_dtypes[want.dt].name, b.s);
		buf_free(&a);
		buf_free(&b);
		return sv_err();
	}
	if (tn->u.type.place) {
		Place p;
		if (!sema_place(s, fr, tn->u.type.place, t->rank, &p))
			return sv_err();
		return declared_place(s, v, p, "the value", "the `let` annotation");
	}
	return v;
}

static void
exec_let(Sema *s, Frame *fr, Node *st)
{
	SVal v = sema_eval(s, fr, st->u.let.init);
	if (reserved(s, st->u.let.name, st->u.let.nspan, "a `let`"))
		v = sv_err(); /* still bound, so later uses stay quiet */
	else if (v.k == SV_TUPLE) {
		diag_error(st->u.let.init->span, "this gives %d results; bind them with `let (a, b) = ...`", v.n);
		v = sv_err();
	} else if (v.k == SV_RED || v.k == SV_LIST) {
		diag_error(st->u.let.init->span, "%s cannot be bound to a name", sv_what(v));
		v = sv_err();
	}
	if (st->u.let.type)
		v = annotate(s, fr, st->u.let.type, v, st->u.let.name);
	if (v.k == SV_TENSOR && !s->f->ins[v.v].name && s->f->ins[v.v].op != OP_PARAM)
		s->f->ins[v.v].name = st->u.let.name;
	sema_bind(s, fr, st->u.let.name, B_LET, v, st->u.let.nspan);
}

static void
exec_lets(Sema *s, Frame *fr, Node *st)
{
	SVal v = sema_eval(s, fr, st->u.lets.init);
	int n = ast_count(st->u.lets.names), i = 0;
	if (v.k == SV_TUPLE && v.n != n) {
		diag_error(st->u.lets.init->span, "%d names are bound to %d results", n, v.n);
		v = sv_err();
	} else if (v.k != SV_TUPLE && v.k != SV_ERR) {
		diag_error(st->u.lets.init->span, "`let (...)` binds the results of an op that returns several, not %s",
		           sv_what(v));
		v = sv_err();
	}
	SymMap seen = {0};
	for (Node *nm = st->u.lets.names; nm; nm = nm->next, i++) {
		SVal e = v.k == SV_TUPLE ? v.elem[i] : sv_err();
		if (symmap_get(&seen, nm->u.name))
			diag_error(nm->span, "'%s' appears twice in this `let`", sym_str(nm->u.name));
		symmap_put(&seen, nm->u.name, nm);
		if (reserved(s, nm->u.name, nm->span, "a `let`"))
			e = sv_err();
		if (e.k == SV_TENSOR && !s->f->ins[e.v].name && s->f->ins[e.v].op != OP_PARAM)
			s->f->ins[e.v].name = nm->u.name;
		sema_bind(s, fr, nm->u.name, B_LET, e, nm->span);
	}
	symmap_free(&seen);
}

static void
exec_for(Sema *s, Frame *fr, Node *st)
{
	int64_t lo, hi;
	Span range = span_join(st->u.loop.lo->span, st->u.loop.hi->span);
	if (!sema_int(s, fr, st->u.loop.lo, "a loop bound", &lo) || !sema_int(s, fr, st->u.loop.hi, "a loop bound", &hi))
		return;
	/* hi - lo as unsigned: exact for any two int64 with lo < hi */
	if (lo < hi && (uint64_t)hi - (uint64_t)lo > (uint64_t)(LIM_UNROLL - s->unrolled)) {
		diag_error(range, "loops unroll to more than %d iterations", LIM_UNROLL);
		return;
	}
	for (int64_t i = lo; i < hi && !s->stopped; i++) {
		Bind *mark = fr->scope;
		int before = diag_errors();
		SVal ret;
		s->unrolled++;
		if (reserved(s, st->u.loop.var, st->u.loop.vspan, "a loop variable"))
			break;
		sema_bind(s, fr, st->u.loop.var, B_LOOP, sv_int(i, st->u.loop.vspan), st->u.loop.vspan);
		exec_list(s, fr, st->u.loop.body, &ret, true);
		unbind_to(fr, mark);
		if (diag_errors() != before)
			break; /* the same mistake in every iteration is one mistake */
	}
}

/* Bounds the work of elaborating a unit: unrolling and inlining multiply,
 * and a few lines can ask for 2^40 inlined calls.  The bound is for the
 * unit, not each op, so that the time and memory of one run are bounded. */
bool
sema_step(Sema *s, Span sp)
{
	if (s->stopped)
		return false;
	if (++s->steps <= LIM_STEPS)
		return true;
	diag_error(sp, "too much to elaborate: more than %d statements and calls after inlining and unrolling", LIM_STEPS);
	s->stopped = true;
	return false;
}

static Flow
exec_list(Sema *s, Frame *fr, Node *list, SVal *ret, bool inloop)
{
	for (Node *st = list; st; st = st->next) {
		if (diag_full() || !sema_step(s, st->span))
			return FLOW_NEXT;
		switch (st->kind) {
		case NK_LET:
			exec_let(s, fr, st);
			break;
		case NK_LETS:
			exec_lets(s, fr, st);
			break;
		case NK_ASSIGN:
			exec_assign(s, fr, st);
			break;
		case NK_FOR:
			exec_for(s, fr, st);
			break;
		case NK_RETURN:
			if (inloop) {
				diag_error(st->span, "`return` inside a `for` loop");
				break;
			}
			*ret = sema_eval(s, fr, st->u.ret.vals);
			if (st->next)
				diag_error(st->next->span, "statement after `return` is never run");
			return FLOW_RETURN;
		default:
			die("bad statement kind %d", st->kind);
		}
	}
	return FLOW_NEXT;
}

/* ---- results ---- */

/* A called op's declared result type: its names were bound by the
 * arguments (or are params); with no placement written, the result keeps
 * the placement it has (*placed = false). */
static bool
callee_result_type(Sema *s, Frame *fr, Node *rt, Type *want, bool *placed)
{
	Node *un;
	int i = 0;
	if (rt->u.type.dvar && !sema_local(fr, rt->u.type.dtype) && !symmap_get(&fr->me->params, rt->u.type.dtype)) {
		diag_error(rt->u.type.dspan, "dtype '%s' of the result is bound by no argument", sym_str(rt->u.type.dtype));
		return false;
	}
	if (!sema_dtype(s, fr, rt, &want->dt))
		return false;
	want->rank = rt->u.type.rank;
	for (Node *d = rt->u.type.dims; d; d = d->next, i++) {
		if ((un = sema_free_name(s, fr, d))) {
			diag_error(un->span, "size '%s' of the result is bound by no argument", sym_str(un->u.name));
			return false;
		}
		if (!sema_int(s, fr, d, "a size", &want->dim[i]))
			return false;
	}
	*placed = rt->u.type.place != NULL;
	return !*placed || sema_place(s, fr, rt->u.type.place, want->rank, &want->pl);
}

/* The results of an op against its declared result types.  A number
 * returned becomes a scalar of the declared dtype. */
SVal
sema_check_result(Sema *s, Frame *fr, Node *rt, SVal r, bool entry, Type *out)
{
	Type want;
	const Type *t;
	bool placed = true;
	memset(&want, 0, sizeof want);
	if (r.k == SV_ERR)
		return r;
	if (r.k != SV_TENSOR && r.k != SV_INT && r.k != SV_FLOAT) {
		diag_error(r.span, "the result must be a tensor, not %s", sv_what(r));
		return sv_err();
	}
	if (entry ? !resolve_entry_type(s, fr, rt, &want, "the result") : !callee_result_type(s, fr, rt, &want, &placed))
		return sv_err();
	if (r.k == SV_FLOAT && want.dt == DT_I32 && r.f != trunc(r.f)) {
		diag_error(r.span, "the result is the number %g, but the signature says i32", r.f);
		return sv_err();
	}
	if (r.k != SV_TENSOR) {
		Val v = ir_add(s->f, OP_CONST, (Type){.dt = want.dt, .rank = 0, .pl = {PL_REPL, 0, 0}}, NULL, 0, r.span);
		s->f->ins[v].c = r.f;
		r = sv_tensor(v, r.span);
	}
	t = sv_type(s, r);
	if (!placed)
		want.pl = t->pl;
	if (want.dt != t->dt || !ty_same_shape(&want, t)) {
		Buf a = {0}, b = {0};
		buf_printf(&a, "%s", ty_dtypes[t->dt].name);
		ty_print_shape(&a, t->rank, t->dim);
		buf_printf(&b, "%s", ty_dtypes[want.dt].name);
		ty_print_shape(&b, want.rank, want.dim);
		diag_error(r.span, "the result is %s, but the signature says %s", a.s, b.s);
		diag_note(rt->span, "result type declared here");
		buf_free(&a);
		buf_free(&b);
		return sv_err();
	}
	if (out)
		*out = want;
	return declared_place(s, r, want.pl, "the result", "the signature");
}

SVal
sema_run_body(Sema *s, Frame *fr, Node *op)
{
	SVal r = sv_err();
	if (exec_list(s, fr, op->u.fn.body, &r, false) != FLOW_RETURN) {
		if (!diag_full() && !s->stopped)
			diag_error(op->u.fn.nspan, "op '%s' has no `return`", sym_str(op->u.fn.name));
		return sv_err();
	}
	if (r.k == SV_TUPLE && r.n != op->u.fn.nrets) {
		diag_error(r.span, "op '%s' returns %d values, but its signature declares %d", sym_str(op->u.fn.name), r.n,
		           op->u.fn.nrets);
		return sv_err();
	}
	if (r.k != SV_TUPLE && r.k != SV_ERR && op->u.fn.nrets != 1) {
		diag_error(r.span, "op '%s' returns one value, but its signature declares %d", sym_str(op->u.fn.name),
		           op->u.fn.nrets);
		return sv_err();
	}
	return r;
}

static SVal
eval_call(Sema *s, Frame *fr, Node *n)
{
	Sym name = n->u.call.name;
	int nargs = n->u.call.nargs, i = 0;
	SVal *args = arena_alloc(s->tmp, (size_t)(nargs + 1) * sizeof *args);
	bool amb;
	Node *def;
	SVal r;
	for (Node *a = n->u.call.args; a; a = a->next, i++)
		args[i] = sema_eval(s, fr, a);
	if (rule_is_builtin(name))
		return rule_builtin(s, name, args, nargs, n->span);
	def = find_def(s, fr, name, n->u.call.nspan, &amb);
	if (amb)
		return sv_err();
	if (!def) {
		Sym home = unit_stdlib_home(s->u, name);
		diag_error(n->u.call.nspan, "unknown function '%s'", sym_str(name));
		if (home) /* defined there exactly: better than a near name */
			diag_note(NOSPAN, "'%s' is in the standard library's module %s: add `use %s;`", sym_str(name),
			          sym_str(home), sym_str(home));
		else
			suggest_name(s, fr, name, n->u.call.nspan, true);
		return sv_err();
	}
	r = def->kind == NK_KERNEL ? sema_call_kernel(s, fr, def, args, nargs, n->span)
	                           : sema_call_op(s, fr, def, args, nargs, n->span);
	r.span = n->span; /* the call, not the callee's return expression */
	for (int k = 0; r.k == SV_TUPLE && k < r.n; k++)
		r.elem[k].span = n->span;
	return r;
}

static SVal
eval_seq(Sema *s, Frame *fr, Node *n, SVKind k)
{
	SVal r = {.k = k, .n = n->u.call.nargs, .span = n->span};
	int i = 0;
	r.elem = arena_alloc(s->tmp, (size_t)(r.n + 1) * sizeof *r.elem);
	for (Node *a = n->u.call.args; a; a = a->next, i++) {
		r.elem[i] = sema_eval(s, fr, a);
		if (r.elem[i].k == SV_ERR)
			return sv_err();
		if (k == SV_TUPLE && r.elem[i].k != SV_TENSOR && r.elem[i].k != SV_INT && r.elem[i].k != SV_FLOAT) {
			diag_error(r.elem[i].span, "a tuple holds tensors, not %s", sv_what(r.elem[i]));
			return sv_err();
		}
	}
	return r;
}

SVal
sema_eval(Sema *s, Frame *fr, Node *n)
{
	SVal r;
	if (diag_full() || s->stopped)
		return sv_err();
	switch (n->kind) {
	case NK_INT:
		return sv_int(n->u.num.i, n->span);
	case NK_FLOAT:
		return sv_float(n->u.num.f, n->span);
	case NK_NAME:
		return lookup(s, fr, n);
	case NK_DTYPE:
		r = (SVal){.k = SV_DTYPE, .span = n->span};
		if (!ty_dtype_byname(sym_str(n->u.name), &r.dt))
			die("bad dtype");
		return r;
	case NK_BIN:
		if (n->u.bin.op == '@')
			return rule_matmul(s, sema_eval(s, fr, n->u.bin.l), sema_eval(s, fr, n->u.bin.r), n->span);
		{
			SVal l = sema_eval(s, fr, n->u.bin.l);
			return rule_binary(s, n->u.bin.op, l, sema_eval(s, fr, n->u.bin.r), n->span);
		}
	case NK_NEG:
		return rule_unary(s, OP_NEG, sema_eval(s, fr, n->u.bin.l), n->span);
	case NK_CALL:
		return eval_call(s, fr, n);
	case NK_LIST:
		return eval_seq(s, fr, n, SV_LIST);
	case NK_TUPLE:
		return eval_seq(s, fr, n, SV_TUPLE);
	default:
		die("bad expression kind %d", n->kind);
	}
}

/* ---- files: params, definitions ---- */

/* -D NAME=VALUE: a dtype, or an integer or a number written as in the
 * language, with an optional '-' ("8192", "-1", "1e-5", "bf16"). */
static bool
parse_define(const char *text, SVal *v, const char **why)
{
	const char *p = text;
	bool frac = false;
	DType dt;
	*why = "the value is not an integer, a number or a dtype";
	if (ty_dtype_byname(text, &dt)) {
		*v = (SVal){.k = SV_DTYPE, .dt = dt, .span = NOSPAN};
		return true;
	}
	p += *p == '-';
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		frac = true;
	}
	if (*p == 'e' || *p == 'E') {
		p += p[1] == '+' || p[1] == '-';
		if (!isdigit((unsigned char)*++p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		frac = true;
	}
	if (*p)
		return false;
	*why = "the value is out of range";
	errno = 0;
	if (!frac) {
		long long i = strtoll(text, NULL, 10);
		*v = sv_int(i, NOSPAN);
		return errno == 0;
	}
	*v = sv_float(strtod(text, NULL), NOSPAN);
	return isfinite(v->f);
}

static int
collect_params(Sema *s, ModEnv *me, bool main)
{
	Frame fr = {.me = me};
	int status = EXIT_OK;
	bool *used = main ? xcalloc(s->u->opt.ndefines + 1, sizeof *used) : NULL;
	const char *why;
	/* a param's value is a constant; a tensor made while computing one
	 * goes to a scratch function and is reported as not a constant */
	s->f = ir_func_new(me->m->name, s->nranks, NOSPAN);
	for (Node *it = me->m->items; it; it = it->next) {
		Bind *old, *b;
		SVal v;
		if (it->kind != NK_PARAM || reserved(s, it->u.let.name, it->u.let.nspan, "a param"))
			continue;
		if ((old = symmap_get(&me->params, it->u.let.name))) {
			diag_error(it->u.let.nspan, "param '%s' is declared twice", sym_str(it->u.let.name));
			diag_note(old->span, "first declared here");
			continue;
		}
		v = sema_eval(s, &fr, it->u.let.init);
		for (int i = 0; main && i < s->u->opt.ndefines; i++) {
			if (strcmp(s->u->opt.defines[i].name, sym_str(it->u.let.name)))
				continue;
			used[i] = true;
			if (!parse_define(s->u->opt.defines[i].value, &v, &why)) {
				diag_usage("-D %s=%s: %s", s->u->opt.defines[i].name, s->u->opt.defines[i].value, why);
				status = EXIT_USAGE;
			}
			v.span = it->u.let.nspan;
		}
		if (v.k != SV_INT && v.k != SV_FLOAT && v.k != SV_DTYPE && v.k != SV_ERR) {
			diag_error(it->u.let.init->span, "param '%s' must be a constant (an integer, a number or a dtype), not %s",
			           sym_str(it->u.let.name), sv_what(v));
			v = sv_err();
		}
		b = arena_alloc(s->tmp, sizeof *b);
		*b = (Bind){.name = it->u.let.name, .kind = B_PARAM, .val = v, .span = it->u.let.nspan};
		symmap_put(&me->params, it->u.let.name, b);
	}
	for (int i = 0; main && i < s->u->opt.ndefines; i++)
		if (!used[i]) {
			diag_usage("-D %s: %s declares no param '%s'", s->u->opt.defines[i].name, src_get(me->m->file)->path,
			           s->u->opt.defines[i].name);
			status = EXIT_USAGE;
		}
	free(used);
	ir_func_free(s->f);
	s->f = NULL;
	return status;
}

/* Parameter names of one definition are distinct and not predefined. */
static void
check_arg_names(const Sema *s, Node *fn)
{
	SymMap seen = {0};
	for (Node *a = fn->u.fn.args; a; a = a->next) {
		Sym n = fn->kind == NK_OP ? a->u.let.name : a->u.name;
		Span sp = fn->kind == NK_OP ? a->u.let.nspan : a->span;
		Node *first = symmap_get(&seen, n);
		if (reserved(s, n, sp, "a parameter"))
			continue;
		if (first) {
			diag_error(sp, "parameter '%s' appears twice", sym_str(n));
			diag_note(fn->kind == NK_OP ? first->u.let.nspan : first->span, "first declared here");
			continue;
		}
		symmap_put(&seen, n, a);
	}
	symmap_free(&seen);
}

static void
collect_defs(const Sema *s, ModEnv *me)
{
	for (Node *it = me->m->items; it; it = it->next) {
		Node *old;
		if (it->kind != NK_OP && it->kind != NK_KERNEL)
			continue;
		if (rule_is_builtin(it->u.fn.name)) {
			diag_error(it->u.fn.nspan, "'%s' is a builtin and cannot be redefined", sym_str(it->u.fn.name));
			continue;
		}
		if ((old = symmap_get(&me->defs, it->u.fn.name))) {
			diag_error(it->u.fn.nspan, "'%s' is defined twice", sym_str(it->u.fn.name));
			diag_note(old->u.fn.nspan, "first defined here");
			continue;
		}
		symmap_put(&me->defs, it->u.fn.name, it);
	}
	for (Node *it = me->m->items; it; it = it->next)
		if (it->kind == NK_OP || it->kind == NK_KERNEL)
			check_arg_names(s, it);
}

/* ---- entry ops ---- */

/* Whether every name in the op's signature has a param value; an op that
 * is only meant to be called (sizes bound by unification) does not. */
static Node *
unbound_name(const Sema *s, ModEnv *me, Node *op)
{
	Frame top = {.me = me};
	Node *lists[2] = {op->u.fn.args, op->u.fn.rets}, *un;
	for (int l = 0; l < 2; l++)
		for (Node *a = lists[l]; a; a = a->next) {
			Node *t = l == 0 ? a->u.let.type : a;
			if (t->u.type.dvar && !symmap_get(&me->params, t->u.type.dtype))
				return t;
			for (Node *d = t->u.type.dims; d; d = d->next)
				if ((un = sema_free_name(s, &top, d)))
					return un;
		}
	return NULL;
}

static Func *
elab_entry(Sema *s, ModEnv *me, Node *op)
{
	Frame fr = {.me = me, .fn = op};
	int before = diag_errors(), i = 0;
	SVal r;
	s->f = ir_func_new(op->u.fn.name, s->nranks, op->span);
	s->f->nin = op->u.fn.nargs;
	s->f->in = arena_alloc(s->f->arena, (size_t)(s->f->nin + 1) * sizeof(Val));
	s->unrolled = 0;
	for (Node *a = op->u.fn.args; a; a = a->next, i++) {
		Type t;
		Val v;
		char what[128];
		snprintf(what, sizeof what, "argument '%s'", sym_str(a->u.let.name));
		if (!resolve_entry_type(s, &fr, a->u.let.type, &t, what)) {
			sema_bind(s, &fr, a->u.let.name, B_ARG, sv_err(), a->u.let.nspan);
			s->f->in[i] = -1;
			continue;
		}
		v = ir_add(s->f, OP_PARAM, t, NULL, 0, a->span);
		s->f->ins[v].a = i;
		s->f->ins[v].name = a->u.let.name;
		s->f->in[i] = v;
		sema_bind(s, &fr, a->u.let.name, B_ARG, sv_tensor(v, a->u.let.nspan), a->u.let.nspan);
	}
	r = diag_errors() == before ? sema_run_body(s, &fr, op) : sv_err();
	s->f->nout = op->u.fn.nrets;
	s->f->out = arena_alloc(s->f->arena, (size_t)(s->f->nout + 1) * sizeof(Val));
	s->f->outty = arena_alloc(s->f->arena, (size_t)(s->f->nout + 1) * sizeof(Type));
	i = 0;
	for (Node *rt = op->u.fn.rets; rt && r.k != SV_ERR; rt = rt->next, i++) {
		SVal e = sema_check_result(s, &fr, rt, r.k == SV_TUPLE ? r.elem[i] : r, true, &s->f->outty[i]);
		if (e.k == SV_ERR)
			break;
		s->f->out[i] = e.v;
	}
	if (i < s->f->nout || diag_errors() != before) {
		/* A value in error always comes with an error message (maybe
		 * one given earlier, as for a recursive call); one without is a
		 * bug that would otherwise compile a wrong op. */
		if (diag_errors() == 0)
			die("op '%s' has a value in error but no error was reported", sym_str(op->u.fn.name));
		ir_func_free(s->f);
		return s->f = NULL;
	}
	if (!ir_verify(s->f, "sema"))
		die("sema produced invalid IR");
	return s->f;
}

/* A kernel is checked on its own with scalar f32 arguments, so a mistake
 * in one that nothing calls is still found. */
static void
check_kernel(Sema *s, ModEnv *me, Node *k)
{
	Frame top = {.me = me};
	SVal *args = arena_alloc(s->tmp, (size_t)(k->u.fn.nargs + 1) * sizeof *args);
	Type t = {.dt = DT_F32, .rank = 0, .pl = {PL_REPL, 0, 0}};
	s->f = ir_func_new(k->u.fn.name, s->nranks, k->span);
	for (int i = 0; i < k->u.fn.nargs; i++) {
		args[i] = sv_tensor(ir_add(s->f, OP_PARAM, t, NULL, 0, k->span), k->span);
		s->f->ins[args[i].v].a = i;
	}
	sema_call_kernel(s, &top, k, args, k->u.fn.nargs, k->span);
	ir_func_free(s->f);
	s->f = NULL;
}

static void
add_func(Unit *u, Func *f)
{
	Func **t = &u->funcs;
	while (*t)
		t = &(*t)->next;
	*t = f;
}

/* The names called in a body (statements or one expression), to tell a
 * generic helper op from one that nothing uses. */
static void
calls_in(Node *n, SymMap *called)
{
	for (; n; n = n->next)
		switch (n->kind) {
		case NK_CALL:
			symmap_put(called, n->u.call.name, n);
			/* fallthrough */
		case NK_LIST:
		case NK_TUPLE:
			calls_in(n->u.call.args, called);
			break;
		case NK_BIN:
			calls_in(n->u.bin.l, called);
			if (n->u.bin.r)
				calls_in(n->u.bin.r, called);
			break;
		case NK_NEG:
			calls_in(n->u.bin.l, called);
			break;
		case NK_LET:
		case NK_ASSIGN:
			calls_in(n->u.let.init, called);
			break;
		case NK_LETS:
			calls_in(n->u.lets.init, called);
			break;
		case NK_RETURN:
			calls_in(n->u.ret.vals, called);
			break;
		case NK_FOR:
			calls_in(n->u.loop.lo, called);
			calls_in(n->u.loop.hi, called);
			calls_in(n->u.loop.body, called);
			break;
		default:
			break;
		}
}

static int
elab_main(Sema *s, ModEnv *main)
{
	const char *entry = s->u->opt.entry;
	bool found = false;
	SymMap called = {0};
	for (Node *it = main->m->items; it; it = it->next)
		if (it->kind == NK_OP || it->kind == NK_KERNEL)
			calls_in(it->u.fn.body, &called);
	for (Node *it = main->m->items; it && !diag_full(); it = it->next) {
		if (it->kind == NK_KERNEL) {
			check_kernel(s, main, it);
			continue;
		}
		if (it->kind != NK_OP || (entry && strcmp(entry, sym_str(it->u.fn.name))))
			continue;
		found = true;
		if (!entry && unbound_name(s, main, it)) {
			/* a generic op: compiled where it is called */
			Node *un = unbound_name(s, main, it);
			if (!symmap_get(&called, it->u.fn.name))
				diag_warning(un->span, "op '%s' is not compiled and not called: '%s' has no value "
				             "(declare `param %s = ...` to compile it on its own)",
				             sym_str(it->u.fn.name), sym_str(un->kind == NK_TYPE ? un->u.type.dtype : un->u.name),
				             sym_str(un->kind == NK_TYPE ? un->u.type.dtype : un->u.name));
			continue;
		}
		Func *f = elab_entry(s, main, it);
		if (f)
			add_func(s->u, f);
	}
	symmap_free(&called);
	if (entry && !found) {
		diag_usage("--entry %s: %s defines no op '%s'", entry, src_get(main->m->file)->path, entry);
		return EXIT_USAGE;
	}
	return diag_errors() ? EXIT_INPUT : EXIT_OK;
}

int
sema_unit(Unit *u)
{
	Sema s = {0};
	int status = EXIT_OK, r;
	ModEnv **tail = &s.envs;
	s.nranks_name = sym_cstr("nranks");
	s.sum_name = sym_cstr("sum");
	s.max_name = sym_cstr("max");
	s.min_name = sym_cstr("min");
	s.u = u;
	s.nranks = u->opt.nranks;
	s.autocomm = u->opt.autocomm == AC_ON;
	s.tmp = arena_new();
	for (Module *m = u->modules; m; m = m->next) {
		ModEnv *e = arena_alloc(s.tmp, sizeof *e);
		e->m = m;
		*tail = e;
		tail = &e->next;
		collect_defs(&s, e);
	}
	for (ModEnv *e = s.envs; e; e = e->next)
		if ((r = collect_params(&s, e, e == s.envs)) != EXIT_OK)
			status = r;
	if (status == EXIT_OK && !diag_errors())
		status = elab_main(&s, s.envs);
	for (ModEnv *e = s.envs; e; e = e->next) {
		symmap_free(&e->defs);
		symmap_free(&e->params);
	}
	s.envs = NULL;
	sema_calls_done(&s);
	arena_free(s.tmp);
	if (status == EXIT_OK && diag_errors())
		status = EXIT_INPUT;
	return status;
}
