/* ir/call.c -- calls of ops and kernels.  A call is inlined: the callee's
 * body is elaborated in a new frame whose parameters are bound to the
 * arguments by unification (size names and dtype variables bind on first
 * sight, everything else is checked), its results are checked against its
 * signature, and errors inside it say which call they came from.
 * Recursion, call depth and the elaboration budget are bounded here. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>

/* Forgets what the calls of one unit left behind. */
void
sema_calls_done(Sema *s)
{
	free(s->recursive);
	s->recursive = NULL;
	s->nrecursive = s->chain = s->chain_for = 0;
}

/* ---- recursion and depth ---- */

static bool
was_recursive(const Sema *s, Node *fn)
{
	for (int i = 0; i < s->nrecursive; i++)
		if (s->recursive[i] == fn)
			return true;
	return false;
}

/* A call that closes a cycle is reported once, with the cycle spelled
 * out ("a -> b -> a"); each definition on it is then silent. */
static void
report_cycle(Sema *s, Frame *caller, Node *fn, Span sp)
{
	Frame *on[LIM_INLINE + 2]; /* the frames of the cycle, innermost first */
	Buf path = {0};
	int n = 0;
	for (Frame *f = caller;; f = f->up) {
		on[n++] = f;
		if (f->fn == fn)
			break;
	}
	buf_printf(&path, "%s", sym_str(fn->u.fn.name));
	for (int k = n - 2; k >= 0; k--)
		buf_printf(&path, " -> %s", sym_str(on[k]->fn->u.fn.name));
	buf_printf(&path, " -> %s", sym_str(fn->u.fn.name));
	if (n == 1)
		diag_error(sp, "'%s' calls itself; ops and kernels are inlined, so recursion is not allowed",
		           sym_str(fn->u.fn.name));
	else
		diag_error(sp, "'%s' calls itself through %s; ops and kernels are inlined, so recursion is not allowed",
		           sym_str(fn->u.fn.name), path.s);
	buf_free(&path);
	s->recursive = xrealloc(s->recursive, (s->nrecursive + n) * sizeof *s->recursive);
	for (int k = 0; k < n; k++)
		s->recursive[s->nrecursive++] = on[k]->fn;
}

static bool
enter(Sema *s, Frame *caller, Node *fn, Span sp)
{
	if (!sema_step(s, sp))
		return false;
	if (was_recursive(s, fn))
		return false; /* reported where the cycle was found */
	for (Frame *f = caller; f; f = f->up)
		if (f->fn == fn) {
			report_cycle(s, caller, fn, sp);
			return false;
		}
	if (caller && caller->depth + 1 > LIM_INLINE) {
		diag_error(sp, "calls nested more than %d deep", LIM_INLINE);
		return false;
	}
	return true;
}

/* A diagnostic inside an inlined body -- an error, a warning, or a note
 * such as the collective --auto-comm inserted there -- says which call it
 * came from, as a C++ compiler says which instantiation ("in this call of
 * 'f'"); not for the standalone check of a kernel, which has no call.
 * `before` is diag_printed() when the body began; the calls around one
 * diagnostic add their notes in a chain, innermost first. */
static void
called_from(Sema *s, Frame *caller, Span sp, Node *fn, int before)
{
	enum { SHOWN = 3 }; /* innermost calls shown, then only the outermost */
	if (diag_printed() == before || !caller->fn)
		return;
	if (s->chain_for != diag_printed())
		s->chain = 0; /* something new since the last call's note */
	if (++s->chain <= SHOWN)
		diag_note(sp, "in this call of '%s'", sym_str(fn->u.fn.name));
	else if (!caller->up)
		diag_note(sp, "in this call of '%s' (and %d calls between)", sym_str(fn->u.fn.name), s->chain - SHOWN - 1);
	s->chain_for = diag_printed();
}

/* ---- kernels ---- */

/* A kernel is one scalar function: its 16-bit tensor arguments are read
 * as f32, it computes in f32, and its result is rounded once on store, as
 * the fused GPU code does.  `dt` collects the arguments' storage dtype. */
static SVal
kernel_load(Sema *s, SVal a, DType *dt, Span sp)
{
	const Type *t;
	Type ft;
	Val v;
	if (a.k != SV_TENSOR || s->kernel)
		return a;
	t = sv_type(s, a);
	if (*dt != DT_COUNT && *dt != t->dt) {
		diag_error(sp, "kernel arguments mix %s and %s; cast them to one dtype", ty_dtypes[*dt].name,
		           ty_dtypes[t->dt].name);
		*dt = DT_COUNT + 1;
		return a;
	}
	*dt = t->dt;
	if (t->dt != DT_BF16 && t->dt != DT_F16)
		return a;
	ft = *t;
	ft.dt = DT_F32;
	v = ir_add(s->f, OP_CAST, ft, &a.v, 1, a.span);
	s->f->ins[v].autoins = true;
	return sv_tensor(v, a.span);
}

static SVal
kernel_store(Sema *s, SVal r, DType dt, Span sp)
{
	Type t;
	Val v;
	if (r.k != SV_TENSOR || s->kernel || (dt != DT_BF16 && dt != DT_F16))
		return r;
	t = *sv_type(s, r);
	if (t.dt == dt)
		return r;
	t.dt = dt;
	v = ir_add(s->f, OP_CAST, t, &r.v, 1, sp);
	s->f->ins[v].autoins = true;
	return sv_tensor(v, sp);
}

SVal
sema_call_kernel(Sema *s, Frame *caller, Node *k, SVal *args, int nargs, Span sp)
{
	Frame fr = {.me = sema_env(s, k->span.file), .fn = k, .up = caller, .depth = caller->depth + 1};
	bool was = s->kernel;
	DType dt = DT_COUNT;
	int i = 0, before;
	SVal r;
	if (nargs != k->u.fn.nargs) {
		diag_error(sp, "kernel '%s' takes %d argument%s, not %d", sym_str(k->u.fn.name), k->u.fn.nargs,
		           k->u.fn.nargs == 1 ? "" : "s", nargs);
		diag_note(k->u.fn.nspan, "'%s' is defined here", sym_str(k->u.fn.name));
		return sv_err();
	}
	if (!enter(s, caller, k, sp))
		return sv_err();
	for (Node *a = k->u.fn.args; a; a = a->next, i++) {
		if (args[i].k == SV_ERR)
			return sv_err();
		if (args[i].k != SV_TENSOR && args[i].k != SV_INT && args[i].k != SV_FLOAT) {
			diag_error(args[i].span, "kernel arguments are tensors or numbers, not %s", sv_what(args[i]));
			return sv_err();
		}
		if (args[i].k == SV_TENSOR && sv_type(s, args[i])->pl.kind == PL_PARTIAL && !rule_to_repl(s, &args[i])) {
			diag_error(args[i].span, "kernel '%s' cannot take a @partial value: reduce it first",
			           sym_str(k->u.fn.name));
			rule_repl_note(s, args[i]);
			return sv_err();
		}
		if (args[i].k == SV_ERR)
			return sv_err(); /* the collective --auto-comm inserted failed */
		sema_bind(s, &fr, a->u.name, B_ARG, kernel_load(s, args[i], &dt, sp), a->span);
		if (dt == DT_COUNT + 1)
			return sv_err();
	}
	before = diag_printed();
	s->kernel = true;
	r = sema_eval(s, &fr, k->u.fn.body);
	s->kernel = was;
	called_from(s, caller, sp, k, before);
	if (!s->kernel)
		r = rule_fill(s, r, args, nargs, sp); /* elementwise: all the arguments' type */
	return kernel_store(s, r, dt, sp);
}

/* ---- ops: unification, placements, results ---- */

/* Unification of one argument with its parameter's type: names bind on
 * first sight, everything else is compared after all names are bound. */
typedef struct Pending {
	Node *dim;
	int64_t actual;
	int arg, d;
	Sym pname;
} Pending;

static bool
unify_dtype(Sema *s, Frame *fr, Node *tn, DType dt, Span at, const char *argname)
{
	DType want;
	(void)s;
	if (tn->u.type.dvar && !sema_predefined(s, tn->u.type.dtype) && !sema_local(fr, tn->u.type.dtype)) {
		sema_bind(s, fr, tn->u.type.dtype, B_SIZE, (SVal){.k = SV_DTYPE, .dt = dt}, tn->u.type.dspan);
		return true;
	}
	if (!sema_dtype(s, fr, tn, &want))
		return false;
	if (want != dt) {
		diag_error(at, "argument '%s' is %s, but the parameter is %s", argname, ty_dtypes[dt].name, ty_dtypes[want].name);
		diag_note(tn->span, "parameter declared here");
		return false;
	}
	return true;
}

static bool
unify_arg(Sema *s, Frame *fr, Node *pa, SVal *arg, Pending *pend, int *npend, int ai)
{
	Node *tn = pa->u.let.type;
	const char *an = sym_str(pa->u.let.name);
	const Type *t;
	int d = 0;
	if (arg->k == SV_INT || arg->k == SV_FLOAT) {
		/* A number passed for a scalar parameter becomes a constant of the
		 * parameter's dtype.  Numbers are unified after the tensors, so a
		 * dtype variable is bound by a tensor if one has it; else f32. */
		DType dt = DT_F32;
		Sym dv = tn->u.type.dvar ? tn->u.type.dtype : 0;
		if (tn->u.type.rank != 0) {
			diag_error(arg->span, "argument '%s' must be a tensor of rank %d, not a number", an, tn->u.type.rank);
			return false;
		}
		if ((!dv || sema_local(fr, dv) || symmap_get(&fr->me->params, dv)) && !sema_dtype(s, fr, tn, &dt))
			return false;
		if (dt == DT_I32 && arg->f != trunc(arg->f)) {
			diag_error(arg->span, "argument '%s' is the number %g, but the parameter is i32", an, arg->f);
			return false;
		}
		Type ct = {.dt = dt, .rank = 0, .pl = {PL_REPL, 0, 0}};
		Val v = ir_add(s->f, OP_CONST, ct, NULL, 0, arg->span);
		s->f->ins[v].c = arg->f;
		*arg = sv_tensor(v, arg->span);
	}
	if (arg->k != SV_TENSOR) {
		diag_error(arg->span, "argument '%s' must be a tensor, not %s", an, sv_what(*arg));
		return false;
	}
	t = sv_type(s, *arg);
	if (!unify_dtype(s, fr, tn, t->dt, arg->span, an))
		return false;
	if (t->rank != tn->u.type.rank) {
		diag_error(arg->span, "argument '%s' has rank %d, but the parameter has rank %d", an, t->rank, tn->u.type.rank);
		diag_note(tn->span, "parameter declared here");
		return false;
	}
	for (Node *dn = tn->u.type.dims; dn; dn = dn->next, d++) {
		if (dn->kind == NK_NAME && !sema_predefined(s, dn->u.name) && !sema_local(fr, dn->u.name)) {
			sema_bind(s, fr, dn->u.name, B_SIZE, sv_int(t->dim[d], dn->span), dn->span);
			continue;
		}
		pend[(*npend)++] = (Pending){dn, t->dim[d], ai, d, pa->u.let.name};
	}
	return true;
}

static SVal
place_arg(Sema *s, Frame *fr, Node *pa, SVal arg, const char *opname)
{
	Node *pn = pa->u.let.type->u.type.place;
	const Type *t = sv_type(s, arg);
	Place want;
	if (!pn)
		return arg; /* placement-polymorphic parameter */
	if (!sema_place(s, fr, pn, t->rank, &want))
		return sv_err();
	if (pl_eq(want, t->pl))
		return arg;
	if (s->autocomm)
		return rule_reshard(s, arg, want, arg.span, "an argument");
	{
		Buf a = {0}, b = {0};
		pl_print(&a, t->pl);
		pl_print(&b, want);
		diag_error(arg.span, "argument '%s' of '%s' is %s, but the parameter is %s", sym_str(pa->u.let.name),
		           opname, a.s, b.s);
		diag_note(pn->span, "parameter placement declared here");
		if (rule_can_reshard(t, want, s->nranks))
			rule_reshard(s, arg, want, arg.span, NULL); /* prints the suggestion only */
		buf_free(&a);
		buf_free(&b);
	}
	return sv_err();
}

static SVal
op_results(Sema *s, Frame *fr, Node *op, SVal r, Span sp)
{
	int i = 0;
	if (r.k == SV_ERR)
		return r;
	if (r.k != SV_TUPLE)
		return sema_check_result(s, fr, op->u.fn.rets, r, false, NULL);
	for (Node *rt = op->u.fn.rets; rt; rt = rt->next, i++)
		if ((r.elem[i] = sema_check_result(s, fr, rt, r.elem[i], false, NULL)).k == SV_ERR)
			return sv_err();
	r.span = sp;
	return r;
}

SVal
sema_call_op(Sema *s, Frame *caller, Node *op, SVal *args, int nargs, Span sp)
{
	Frame fr = {.me = sema_env(s, op->span.file), .fn = op, .up = caller, .depth = caller->depth + 1};
	const char *name = sym_str(op->u.fn.name);
	Pending *pend;
	int npend = 0, i = 0, before;
	SVal r;
	if (s->kernel) {
		diag_error(sp, "op '%s' cannot be called in a kernel body; kernels are elementwise", name);
		return sv_err();
	}
	if (nargs != op->u.fn.nargs) {
		diag_error(sp, "op '%s' takes %d argument%s, not %d", name, op->u.fn.nargs, op->u.fn.nargs == 1 ? "" : "s", nargs);
		diag_note(op->u.fn.nspan, "'%s' is defined here", name);
		return sv_err();
	}
	if (!enter(s, caller, op, sp))
		return sv_err();
	for (i = 0; i < nargs; i++)
		if (args[i].k == SV_ERR)
			return sv_err();
	pend = arena_alloc(s->tmp, (size_t)(nargs * LIM_RANK + 1) * sizeof *pend);
	for (int numbers = 0; numbers < 2; numbers++) { /* tensors first, then numbers */
		i = 0;
		for (Node *pa = op->u.fn.args; pa; pa = pa->next, i++)
			if ((args[i].k == SV_INT || args[i].k == SV_FLOAT) == numbers &&
			    !unify_arg(s, &fr, pa, &args[i], pend, &npend, i))
				return sv_err();
	}
	for (int k = 0; k < npend; k++) {
		int64_t want;
		Node *un = sema_free_name(s, &fr, pend[k].dim);
		if (un) {
			diag_error(un->span, "size '%s' is bound by no argument: a size name is bound where it stands alone as a dim",
			           sym_str(un->u.name));
			diag_note(sp, "in this call of '%s'", name);
			return sv_err();
		}
		if (!sema_int(s, &fr, pend[k].dim, "a size", &want))
			return sv_err();
		if (want != pend[k].actual) {
			diag_error(args[pend[k].arg].span, "dim %d of argument '%s' has size %lld, but the parameter says %lld",
			           pend[k].d, sym_str(pend[k].pname), (long long)pend[k].actual, (long long)want);
			diag_note(pend[k].dim->span, "size declared here");
			return sv_err();
		}
	}
	i = 0;
	for (Node *pa = op->u.fn.args; pa; pa = pa->next, i++) {
		SVal a = place_arg(s, &fr, pa, args[i], name);
		if (a.k == SV_ERR)
			return a;
		sema_bind(s, &fr, pa->u.let.name, B_ARG, a, pa->u.let.nspan);
	}
	before = diag_printed();
	r = op_results(s, &fr, op, sema_run_body(s, &fr, op), sp);
	called_from(s, caller, sp, op, before);
	return r;
}
