/* codegen/prog.c -- elementwise programs outside the GPU: a small text
 * form for tools and tests, a printer, and their meaning in double
 * precision with the storage types' rounding (the CPU reference). */
#include "codegen.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- storage types on the host ---- */

static uint16_t
f2bf(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
	u += 0x7fff + ((u >> 16) & 1);           /* to nearest even */
	return (uint16_t)(u >> 16);
}

static float
bf2f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t
f2h(float f)
{
	uint32_t x, ax, sign, mant, rest, h;
	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	ax = x & 0x7fffffff;
	if (ax > 0x7f800000)
		return (uint16_t)(sign | 0x7e00);
	if (ax >= 0x477ff000) /* >= 65520 rounds to infinity */
		return (uint16_t)(sign | 0x7c00);
	if (ax < 0x38800000) { /* below 2^-14: a multiple of 2^-24 */
		float a;
		memcpy(&a, &ax, 4);
		return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f));
	}
	mant = ax & 0x7fffff;
	h = ((((ax >> 23) - 127 + 15)) << 10) | (mant >> 13);
	rest = mant & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++; /* a carry into the exponent is right too */
	return (uint16_t)(sign | h);
}

static float
h2f(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 0x3ff, u;
	float f;
	if (e == 0) {
		f = (float)m * 0x1p-24f;
		return sign ? -f : f;
	}
	u = sign | (e == 31 ? 0x7f800000 | (m << 13) : ((e - 15 + 127) << 23) | (m << 13));
	memcpy(&f, &u, 4);
	return f;
}

/* cvt.rzi.s32.f32: toward zero, saturating, NaN -> 0. */
static double
to_i32(double x)
{
	if (isnan(x))
		return 0;
	if (x >= 2147483647.0)
		return 2147483647.0;
	if (x <= -2147483648.0)
		return -2147483648.0;
	return trunc(x);
}

double
ptx_round(DType dt, double x)
{
	switch (dt) {
	case DT_F32: return (float)x;
	case DT_F16: return h2f(f2h((float)x));
	case DT_BF16: return bf2f(f2bf((float)x));
	case DT_I32: return to_i32(x);
	default: die("ptx_round: dtype %d", (int)dt);
	}
}

double
ptx_load(DType dt, const void *base, int64_t i)
{
	switch (dt) {
	case DT_F32: return ((const float *)base)[i];
	case DT_F16: return h2f(((const uint16_t *)base)[i]);
	case DT_BF16: return bf2f(((const uint16_t *)base)[i]);
	case DT_I32: return ((const int32_t *)base)[i];
	default: die("ptx_load: dtype %d", (int)dt);
	}
}

void
ptx_store(DType dt, void *base, int64_t i, double x)
{
	switch (dt) {
	case DT_F32: ((float *)base)[i] = (float)x; break;
	case DT_F16: ((uint16_t *)base)[i] = f2h((float)x); break;
	case DT_BF16: ((uint16_t *)base)[i] = f2bf((float)x); break;
	case DT_I32: ((int32_t *)base)[i] = (int32_t)to_i32(x); break;
	default: die("ptx_store: dtype %d", (int)dt);
	}
}

/* ---- meaning ---- */

bool
ptx_prog_uses(const PtxEwProg *p, int op, int a)
{
	for (int i = 0; i < p->nins; i++)
		if (p->ins[i].op == op && (a < 0 || p->ins[i].a == a))
			return true;
	return false;
}

bool
ptx_prog_sfu(const PtxEwProg *p)
{
	for (int i = 0; i < p->nins; i++)
		if (p->ins[i].op < OP_COUNT && ir_ops[p->ins[i].op].flags & OF_SFU)
			return true;
	return false;
}

/* How many earlier instructions `in` reads: its a, then its b. */
static int
prog_nargs(const PtxIns *in)
{
	switch (in->op) {
	case OP_PARAM:
	case OP_CONST:
	case PTX_OP_ACC:
	case PTX_OP_STAGE: return 0;
	case OP_CAST: return 1;
	default: return ir_ops[in->op].arity;
	}
}

/* The program's tail: the first instruction v (-1: none) after which the
 * output needs nothing but v and constants, where that tail calls the
 * special-function units -- GELU's sigmoid of x @ w + b.  The part up to
 * v must read only the accumulator and inputs of the output's dtype dt
 * (ab: the matmul's operands', so its result's) and cast nothing: by the language's rules
 * (arithmetic on 16-bit tensors rounds on store) v is then a value of
 * dtype dt, so storing it rounded and running the tail on what was stored
 * is the sequential meaning, one rounding more than the fully fused
 * program.  post gets the tail as a program of its own whose accumulator
 * is v. */
static bool
tail_from(const PtxEwProg *g, const bool *need, int v, PtxEwProg *post)
{
	int map[PTX_MAX_INS], o = g->out[0].val;
	bool sfu = false;
	*post = (PtxEwProg){.ins = {{.op = PTX_OP_ACC}}, .nins = 1};
	for (int i = 0; i < g->nins; i++)
		map[i] = i == v ? 0 : -1;
	for (int i = v + 1; i <= o; i++) {
		const PtxIns *in = &g->ins[i];
		PtxIns c = *in;
		int ar = prog_nargs(in);
		if (!need[i])
			continue;
		if (in->op == OP_PARAM || in->op == PTX_OP_ACC || in->op == PTX_OP_STAGE)
			return false;
		if (ar) {
			for (int k = 0; k < ar; k++) {
				int x = k ? in->b : in->a;
				if (x < v && g->ins[x].op == OP_CONST && map[x] < 0) { /* a constant made earlier */
					if (post->nins == PTX_MAX_INS)
						return false;
					post->ins[post->nins] = g->ins[x];
					map[x] = post->nins++;
				}
				if (map[x] < 0)
					return false;
			}
			c.a = map[in->a];
			c.b = ar == 2 ? map[in->b] : -1;
			sfu = sfu || (in->op != OP_CAST && ir_ops[in->op].flags & OF_SFU);
		}
		if (post->nins == PTX_MAX_INS)
			return false;
		post->ins[post->nins] = c;
		map[i] = post->nins++;
	}
	post->out[0] = (PtxOut){map[o], g->out[0].tensor};
	post->nout = 1;
	return sfu;
}

int
ptx_prog_tail(const PtxEwProg *g, const DType *indt, DType ab, DType dt, PtxEwProg *post)
{
	bool need[PTX_MAX_INS] = {0};
	int o;
	if (g->nout != 1 || ab != dt)
		return -1;
	o = g->out[0].val;
	need[o] = true;
	for (int i = o; i >= 0; i--) {
		const PtxIns *in = &g->ins[i];
		if (need[i] && prog_nargs(in) >= 1)
			need[in->a] = true;
		if (need[i] && prog_nargs(in) == 2)
			need[in->b] = true;
	}
	for (int v = 0; v < o; v++) {
		const PtxIns *in = &g->ins[v];
		if (in->op == OP_CAST || in->op == PTX_OP_STAGE || (in->op == OP_PARAM && indt[in->a] != dt))
			return -1; /* the part before the tail: no casts, one dtype */
		if (need[v] && in->op != OP_CONST && tail_from(g, need, v, post))
			return v;
	}
	return -1;
}

/* out = g with instruction v's value rounded to dt (a cast after it, read
 * by every later instruction and output in its place): the whole
 * epilogue as a tail cut at v computes it (ptx_prog_tail), so that a tile
 * whose consumers run it all has the same bits.  False if too long. */
bool
ptx_prog_round_at(const PtxEwProg *g, int v, DType dt, PtxEwProg *out)
{
	if (g->nins >= PTX_MAX_INS || v < 0 || v >= g->nins)
		return false;
	*out = *g;
	out->ins[v + 1] = (PtxIns){.op = OP_CAST, .a = v, .b = -1, .dt = dt};
	for (int i = v + 1; i < g->nins; i++) {
		PtxIns in = g->ins[i];
		if (prog_nargs(&in) >= 1)
			in.a = in.a < v ? in.a : in.a + 1;
		if (prog_nargs(&in) == 2)
			in.b = in.b < v ? in.b : in.b + 1;
		out->ins[i + 1] = in;
	}
	out->nins = g->nins + 1;
	for (int j = 0; j < g->nout; j++)
		out->out[j].val = g->out[j].val < v ? g->out[j].val : g->out[j].val + 1;
	return true;
}

static double
eval1(int op, double a)
{
	switch (op) {
	case OP_NEG: return -a;
	case OP_EXP: return exp(a);
	case OP_LOG: return log(a);
	case OP_SQRT: return sqrt(a);
	case OP_RSQRT: return 1 / sqrt(a);
	case OP_TANH: return tanh(a);
	case OP_SIGMOID: return 1 / (1 + exp(-a));
	case OP_ABS: return fabs(a);
	default: die("eval1: op %d", op);
	}
}

static double
eval2(int op, double a, double b)
{
	switch (op) {
	case OP_ADD: return a + b;
	case OP_SUB: return a - b;
	case OP_MUL: return a * b;
	case OP_DIV: return a / b;
	case OP_MAX: return fmax(a, b); /* like max.f32: a NaN operand loses */
	case OP_MIN: return fmin(a, b);
	default: die("eval2: op %d", op);
	}
}

void
ptx_prog_eval(const PtxEwProg *p, const DType *indt, const double *in, double acc,
              const double *stage, double *val)
{
	ValClass invc[PTX_MAX_TENSORS], vc[PTX_MAX_INS];
	for (int i = 0; i < PTX_MAX_TENSORS; i++)
		invc[i] = indt ? ptx_dtypes[indt[i] < DT_COUNT ? indt[i] : DT_F32].vc : VC_F32;
	ptx_prog_classes(p, invc, VC_F32, vc);
	for (int i = 0; i < p->nins; i++) {
		const PtxIns *n = &p->ins[i];
		double a = n->a >= 0 && n->a < i ? val[n->a] : 0, b = n->b >= 0 && n->b < i ? val[n->b] : 0;
		switch (n->op) {
		case OP_PARAM: val[i] = in[n->a]; break;
		case OP_CONST: val[i] = n->dt == DT_I32 ? to_i32(n->c) : (float)n->c; break;
		case PTX_OP_ACC: val[i] = acc; break;
		case PTX_OP_STAGE: val[i] = stage[n->a]; break;
		case OP_CAST: val[i] = ptx_round(n->dt, a); break;
		default:
			val[i] = ir_ops[n->op].arity == 1 ? eval1(n->op, a) : eval2(n->op, a, b);
			if (vc[i] == VC_S32)
				val[i] = (double)(int32_t)(uint32_t)(int64_t)val[i]; /* wraps like s32 */
		}
	}
}

/* ---- text ---- */

typedef struct Parse {
	PtxEwProg *p;
	const char *s;
	const char *why;
	char msg[128];
} Parse;

static void
skipws(Parse *ps)
{
	while (isspace((unsigned char)*ps->s))
		ps->s++;
}

static int
fail(Parse *ps, const char *what)
{
	if (!ps->why) {
		snprintf(ps->msg, sizeof ps->msg, "%s at '%.20s'", what, ps->s);
		ps->why = ps->msg;
	}
	return -1;
}

/* Adds an instruction; identical ones are shared (the IR's programs are
 * SSA: a value written twice in the text is one instruction there too). */
static int
add(Parse *ps, PtxIns in)
{
	PtxEwProg *p = ps->p;
	for (int i = 0; i < p->nins; i++) {
		const PtxIns *o = &p->ins[i];
		if (o->op == in.op && o->a == in.a && o->b == in.b && o->dt == in.dt &&
		    (in.op != OP_CONST || !memcmp(&o->c, &in.c, sizeof in.c)))
			return i;
	}
	if (p->nins == PTX_MAX_INS)
		return fail(ps, "program longer than 64 instructions");
	p->ins[p->nins] = in;
	return p->nins++;
}

static bool
word(Parse *ps, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(ps->s, w, n) != 0 || isalnum((unsigned char)ps->s[n]) || ps->s[n] == '_')
		return false;
	ps->s += n;
	return true;
}

static int
number_after(Parse *ps, const char *w)
{
	size_t n = strlen(w);
	char *end;
	long v;
	if (strncmp(ps->s, w, n) != 0 || !isdigit((unsigned char)ps->s[n]))
		return -1;
	v = strtol(ps->s + n, &end, 10);
	if (isalpha((unsigned char)*end) || *end == '_' || v > 1000)
		return -1;
	ps->s = end;
	return (int)v;
}

static int expr(Parse *ps);

static int
call(Parse *ps, int op, DType dt)
{
	int a, b = -1, ar = op == OP_CAST ? 1 : ir_ops[op].arity;
	skipws(ps);
	if (*ps->s++ != '(')
		return fail(ps, "expected '('");
	if ((a = expr(ps)) < 0)
		return -1;
	skipws(ps);
	if (ar == 2) {
		if (*ps->s++ != ',')
			return fail(ps, "expected ','");
		if ((b = expr(ps)) < 0)
			return -1;
		skipws(ps);
	}
	if (*ps->s++ != ')')
		return fail(ps, "expected ')'");
	return add(ps, (PtxIns){.op = op, .a = a, .b = b, .dt = dt});
}

static int
expr(Parse *ps)
{
	int n;
	skipws(ps);
	if (isdigit((unsigned char)*ps->s) || *ps->s == '-' || *ps->s == '.') {
		char *end;
		double c = strtod(ps->s, &end);
		if (end == ps->s)
			return fail(ps, "bad number");
		ps->s = end;
		if (*ps->s == 'i') {
			ps->s++;
			return add(ps, (PtxIns){.op = OP_CONST, .c = c, .dt = DT_I32});
		}
		return add(ps, (PtxIns){.op = OP_CONST, .c = c, .dt = DT_F32});
	}
	if (word(ps, "acc"))
		return add(ps, (PtxIns){.op = PTX_OP_ACC});
	if ((n = number_after(ps, "in")) >= 0)
		return add(ps, (PtxIns){.op = OP_PARAM, .a = n});
	if ((n = number_after(ps, "stage")) >= 0)
		return add(ps, (PtxIns){.op = PTX_OP_STAGE, .a = n});
	if (strncmp(ps->s, "cast_", 5) == 0) {
		const char *w = ps->s + 5;
		size_t k = 0;
		char name[8];
		DType dt;
		while (isalnum((unsigned char)w[k]) && k < sizeof name - 1)
			name[k] = w[k], k++;
		name[k] = 0;
		if (!ty_dtype_byname(name, &dt))
			return fail(ps, "unknown dtype");
		ps->s = w + k;
		return call(ps, OP_CAST, dt);
	}
	for (int op = 0; op < OP_COUNT; op++)
		if ((ir_ops[op].flags & OF_EW) && op != OP_CONST && op != OP_CAST && word(ps, ir_ops[op].name))
			return call(ps, op, DT_F32);
	return fail(ps, "expected an expression");
}

const char *
ptx_prog_parse(PtxEwProg *p, const char *text)
{
	Parse ps = {.p = p, .s = text};
	*p = (PtxEwProg){0};
	skipws(&ps);
	if (strncmp(ps.s, "out", 3) != 0 || !isdigit((unsigned char)ps.s[3])) {
		int v = expr(&ps);
		if (v >= 0)
			p->out[p->nout++] = (PtxOut){v, 0};
	} else
		for (;;) {
			int t, v;
			skipws(&ps);
			if (!*ps.s)
				break;
			if ((t = number_after(&ps, "out")) < 0 || t >= PTX_MAX_TENSORS) {
				fail(&ps, "expected outN");
				break;
			}
			skipws(&ps);
			if (*ps.s++ != '=') {
				fail(&ps, "expected '='");
				break;
			}
			if ((v = expr(&ps)) < 0)
				break;
			if (p->nout == PTX_MAX_TENSORS) {
				fail(&ps, "too many outputs");
				break;
			}
			p->out[p->nout++] = (PtxOut){v, t};
			skipws(&ps);
			if (*ps.s == ';')
				ps.s++;
		}
	skipws(&ps);
	if (!ps.why && *ps.s)
		fail(&ps, "unexpected text");
	return ps.why;
}

void
ptx_prog_print(Buf *b, const PtxEwProg *p)
{
	for (int i = 0; i < p->nins; i++) {
		const PtxIns *n = &p->ins[i];
		buf_printf(b, "%%%d = ", i);
		switch (n->op) {
		case OP_PARAM: buf_printf(b, "in%d", n->a); break;
		case OP_CONST: buf_printf(b, n->dt == DT_I32 ? "%.0fi" : "%.9g", n->c); break;
		case PTX_OP_ACC: buf_printf(b, "acc"); break;
		case PTX_OP_STAGE: buf_printf(b, "stage%d", n->a); break;
		case OP_CAST: buf_printf(b, "cast_%s %%%d", ty_dtypes[n->dt].name, n->a); break;
		default:
			buf_printf(b, "%s %%%d", ir_ops[n->op].name, n->a);
			if (ir_ops[n->op].arity == 2)
				buf_printf(b, ", %%%d", n->b);
		}
		buf_printf(b, "; ");
	}
	for (int j = 0; j < p->nout; j++)
		buf_printf(b, "out%d = %%%d%s", p->out[j].tensor, p->out[j].val, j + 1 < p->nout ? "; " : "");
}
