/* codegen/ew.c -- the fused elementwise kernel: out[j] = prog(in...) over
 * an iteration space with numpy broadcasting written as per-input strides
 * (0 along a broadcast dim).
 *
 * The space is flattened in row-major order and cut into blocks of
 * block_elems elements (the last one shorter); a block-list entry's x names
 * one.  Dims that every tensor walks contiguously are merged first, so a
 * [rows, cols] tensor plus a [cols] bias is a 2-d space, and when the inner
 * dim allows, each thread takes V consecutive elements (V * size <= 16
 * bytes) with one vector load per contiguous tensor and one scalar load per
 * tensor broadcast along the inner dim. */
#include "codegen.h"

#include <stdio.h>

enum { EW_THREADS = 256, EW_DEFAULT_BLOCK = 65536 };

typedef struct Space {
	int rank;
	int64_t dim[PTX_MAX_DIMS];
	int64_t in[PTX_MAX_TENSORS][PTX_MAX_DIMS], out[PTX_MAX_TENSORS][PTX_MAX_DIMS];
	int64_t total, block;
	int vec;
	bool wide; /* 64-bit element indices */
} Space;

#define R(r) ptx_rn(p, r)

const char *
ptx_ew_check(const PtxEwSpec *s)
{
	static char why[96];
	int64_t total = 1;
	if (s->rank < 1 || s->rank > PTX_MAX_DIMS)
		return "ew: rank must be 1 to 8";
	for (int d = 0; d < s->rank; d++) {
		if (s->dim[d] < 1 || !ck_mul(total, s->dim[d], &total) || total > (int64_t)1 << 40)
			return "ew: dims must be >= 1 and the space at most 2^40 elements";
	}
	if (s->nin < 0 || s->nin > PTX_MAX_TENSORS || s->nout < 1 || s->nout > PTX_MAX_TENSORS)
		return "ew: needs 0 to 8 inputs and 1 to 8 outputs";
	for (int i = 0; i < s->nin + s->nout; i++) {
		const PtxTensor *t = i < s->nin ? &s->in[i] : &s->out[i - s->nin];
		if ((int)t->dt < 0 || t->dt >= DT_COUNT)
			return snprintf(why, sizeof why, "ew: tensor %d: unknown dtype", i), why;
		for (int d = 0; d < s->rank; d++)
			if (t->stride[d] < 0 || t->stride[d] > (int64_t)1 << 40)
				return snprintf(why, sizeof why, "ew: tensor %d: stride out of range", i), why;
	}
	if (s->block_elems < 0)
		return "ew: block_elems must be >= 0";
	if (s->causal && (s->rank < 2 || s->diag <= -((int64_t)1 << 40) || s->diag >= (int64_t)1 << 40))
		return "ew: a causal mask needs rows and columns (rank >= 2) and a diagonal within them";
	for (int i = 0; s->causal && i < s->nout; i++)
		if (s->out[i].dt == DT_I32)
			return "ew: a causal mask stores -inf, which i32 has not";
	if (s->prog.nins == 0 || s->prog.nout == 0)
		return "ew: empty program";
	return ptx_prog_check(&s->prog, s->nin, s->nout, false, 0);
}

/* Merges dim d into d+1 where every tensor allows, drops size-1 dims. */
static void
collapse(const PtxEwSpec *s, Space *sp)
{
	int n = s->nin + s->nout;
	sp->rank = 0;
	for (int d = 0; d < s->rank; d++) {
		bool mask = s->causal && d >= s->rank - 2; /* the mask's rows and columns stay dims of their own */
		if (s->dim[d] == 1 && s->rank > 1 && !mask)
			continue;
		int r = sp->rank;
		bool merge = r > 0 && !mask;
		for (int i = 0; merge && i < n; i++) {
			const int64_t *st = i < s->nin ? s->in[i].stride : s->out[i - s->nin].stride;
			int64_t prev = i < s->nin ? sp->in[i][r - 1] : sp->out[i - s->nin][r - 1];
			merge = prev == st[d] * s->dim[d];
		}
		if (merge) {
			sp->dim[r - 1] *= s->dim[d];
			for (int i = 0; i < n; i++) {
				if (i < s->nin)
					sp->in[i][r - 1] = s->in[i].stride[d];
				else
					sp->out[i - s->nin][r - 1] = s->out[i - s->nin].stride[d];
			}
			continue;
		}
		sp->dim[r] = s->dim[d];
		for (int i = 0; i < n; i++) {
			if (i < s->nin)
				sp->in[i][r] = s->in[i].stride[d];
			else
				sp->out[i - s->nin][r] = s->out[i - s->nin].stride[d];
		}
		sp->rank++;
	}
	if (sp->rank == 0) {
		sp->rank = 1;
		sp->dim[0] = 1;
	}
}

/* The widest V such that every tensor's V elements are one aligned vector. */
static bool
vec_ok(const Space *sp, const int64_t *st, DType dt, int v)
{
	int r = sp->rank;
	if (st[r - 1] > 1 || (st[r - 1] == 1 && v * ptx_dtypes[dt].size > 16))
		return false;
	if (st[r - 1] == 0)
		return true;
	for (int d = 0; d < r - 1; d++)
		if (st[d] % v)
			return false;
	return true;
}

static void
space_of(const PtxEwSpec *s, Space *sp)
{
	*sp = (Space){0};
	collapse(s, sp);
	sp->total = 1;
	for (int d = 0; d < sp->rank; d++)
		sp->total *= sp->dim[d];
	sp->block = s->block_elems ? s->block_elems : EW_DEFAULT_BLOCK;
	sp->wide = sp->total + sp->block >= (int64_t)1 << 31;
	for (sp->vec = 8; sp->vec > 1; sp->vec /= 2) {
		bool ok = sp->dim[sp->rank - 1] % sp->vec == 0 && sp->block % sp->vec == 0;
		for (int i = 0; ok && i < s->nin; i++)
			ok = vec_ok(sp, sp->in[i], s->in[i].dt, sp->vec);
		for (int i = 0; ok && i < s->nout; i++)
			ok = vec_ok(sp, sp->out[i], s->out[i].dt, sp->vec) && sp->out[i][sp->rank - 1] == 1;
		if (ok)
			break;
	}
}

/* Byte address of element (coordinates c[]) of a tensor. */
static Reg
elem_addr(Ptx *p, const Space *sp, Reg base, const int64_t *st, DType dt, const Reg *c)
{
	int es = ptx_dtypes[dt].size;
	Reg a = ptx_reg(p, RC_B64);
	ptx_emit(p, "mov.u64 %s, %s;", R(a), R(base));
	for (int d = 0; d < sp->rank; d++) {
		if (st[d] == 0)
			continue;
		if (sp->wide)
			ptx_emit(p, "mad.lo.u64 %s, %s, %lld, %s;", R(a), R(c[d]), (long long)(st[d] * es), R(a));
		else if (st[d] * es < ((int64_t)1 << 32))
			ptx_emit(p, "mad.wide.u32 %s, %s, %lld, %s;", R(a), R(c[d]), (long long)(st[d] * es), R(a));
		else {
			Reg w = ptx_reg(p, RC_B64);
			ptx_emit(p, "cvt.u64.u32 %s, %s;", R(w), R(c[d]));
			ptx_emit(p, "mad.lo.u64 %s, %s, %lld, %s;", R(a), R(w), (long long)(st[d] * es), R(a));
		}
	}
	return a;
}

/* past[j]: element j of the V from coordinates c[] lies past the mask's
 * diagonal (column > row + diag, signed: the diagonal may be negative). */
static void
causal_preds(Ptx *p, const Space *sp, int64_t diag, const Reg *c, Reg *past)
{
	const char *sx = sp->wide ? "s64" : "s32";
	RegClass rc = sp->wide ? RC_B64 : RC_B32;
	Reg lim = ptx_reg(p, rc);
	ptx_emit(p, "add.%s %s, %s, %lld;", sx, R(lim), R(c[sp->rank - 2]), (long long)diag);
	for (int j = 0; j < sp->vec; j++) {
		Reg col = ptx_reg(p, rc);
		past[j] = ptx_reg(p, RC_PRED);
		ptx_emit(p, "add.%s %s, %s, %d;", sx, R(col), R(c[sp->rank - 1]), j);
		ptx_emit(p, "setp.gt.%s %s, %s, %s;", sx, R(past[j]), R(col), R(lim));
	}
}

/* V consecutive elements starting at flat index e (a multiple of V). */
static void
ew_elements(Ptx *p, const PtxEwSpec *s, const Space *sp, Reg e)
{
	const char *ix = sp->wide ? "u64" : "u32";
	RegClass rc = sp->wide ? RC_B64 : RC_B32;
	Reg c[PTX_MAX_DIMS], rest = ptx_reg(p, rc), vals[8][PTX_MAX_INS];
	Reg in[PTX_MAX_TENSORS][8], past[8];
	ValClass vc[PTX_MAX_INS];
	int v = sp->vec;

	ptx_emit(p, "mov.%s %s, %s;", ix, R(rest), R(e));
	for (int d = sp->rank - 1; d >= 0; d--) {
		c[d] = ptx_reg(p, rc);
		if (d == 0) {
			ptx_emit(p, "mov.%s %s, %s;", ix, R(c[d]), R(rest));
			break;
		}
		ptx_emit(p, "rem.%s %s, %s, %lld;", ix, R(c[d]), R(rest), (long long)sp->dim[d]);
		ptx_emit(p, "div.%s %s, %s, %lld;", ix, R(rest), R(rest), (long long)sp->dim[d]);
	}
	for (int i = 0; i < s->nin; i++) {
		if (!ptx_prog_uses(&s->prog, OP_PARAM, i))
			continue;
		Reg a = elem_addr(p, sp, p->tensor[i], sp->in[i], s->in[i].dt, c);
		ptx_load_vec(p, s->in[i].dt, a, sp->in[i][sp->rank - 1], v, in[i]);
	}
	for (int j = 0; j < v; j++) {
		PtxEnv env = {0};
		for (int i = 0; i < s->nin; i++) {
			env.in[i] = ptx_prog_uses(&s->prog, OP_PARAM, i) ? in[i][j] : -1;
			env.in_vc[i] = ptx_dtypes[s->in[i].dt].vc;
		}
		ptx_prog_emit(p, &s->prog, &env, vals[j], vc);
	}
	if (s->causal)
		causal_preds(p, sp, s->diag, c, past);
	for (int o = 0; o < s->prog.nout; o++) {
		const PtxOut *po = &s->prog.out[o];
		const PtxTensor *t = &s->out[po->tensor];
		int sv = ptx_store_src(&s->prog, po, t->dt, vc);
		Reg a = elem_addr(p, sp, p->tensor[s->nin + po->tensor], sp->out[po->tensor], t->dt, c), w[8];
		for (int j = 0; j < v; j++) {
			w[j] = ptx_convert(p, vals[j][sv], vc[sv], ptx_dtypes[t->dt].vc);
			if (s->causal) {
				Reg m = ptx_reg(p, RC_F32);
				ptx_emit(p, "selp.f32 %s, 0fFF800000, %s, %s;", R(m), R(w[j]), R(past[j]));
				w[j] = m;
			}
		}
		ptx_store_vec(p, t->dt, a, v, w);
	}
}

void
ptx_emit_ew(Buf *b, const PtxEwSpec *s, PtxKernel *k)
{
	const char *why = ptx_ew_check(s);
	Ptx px, *p = &px;
	Space sp;
	int loop = 0, done = 0;

	if (why)
		die("ptx_emit_ew: %s", why);
	space_of(s, &sp);
	ptx_kernel_begin(p, b, s->name, s->nin + s->nout, EW_THREADS, 0);
	buf_printf(&p->head, "// elementwise over %lld elements in blocks of %lld, %d per thread step\n",
	           (long long)sp.total, (long long)sp.block, sp.vec);
	ptx_params(p, s->nin + s->nout);
	ptx_loop_begin(p);
	{
		const char *ix = sp.wide ? "u64" : "u32";
		RegClass rc = sp.wide ? RC_B64 : RC_B32;
		Reg u = ptx_reg(p, rc), end = ptx_reg(p, rc), e = ptx_reg(p, rc), q = ptx_reg(p, RC_PRED);
		int64_t bu = sp.block / sp.vec, nu = sp.total / sp.vec;
		/* units (V elements each) of this block: [x*bu, min(x*bu + bu, nu)) */
		if (sp.wide) {
			ptx_emit(p, "mul.wide.u32 %s, %s, %lld;", R(u), R(p->x), (long long)bu);
			ptx_emit(p, "cvt.u64.u32 %s, %s;", R(e), R(p->tid));
		} else {
			ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(u), R(p->x), (long long)bu);
			ptx_emit(p, "mov.u32 %s, %s;", R(e), R(p->tid));
		}
		ptx_emit(p, "add.%s %s, %s, %lld;", ix, R(end), R(u), (long long)bu);
		ptx_emit(p, "min.%s %s, %s, %lld;", ix, R(end), R(end), (long long)nu);
		ptx_emit(p, "add.%s %s, %s, %s;", ix, R(u), R(u), R(e));
		loop = ptx_label(p);
		done = ptx_label(p);
		ptx_place(p, loop);
		ptx_emit(p, "setp.ge.%s %s, %s, %s;", ix, R(q), R(u), R(end));
		ptx_emit(p, "@%s bra $L%d;", R(q), done);
		ptx_emit(p, "mul.lo.%s %s, %s, %d;", ix, R(e), R(u), sp.vec);
		ew_elements(p, s, &sp, e);
		ptx_emit(p, "add.%s %s, %s, %d;", ix, R(u), R(u), EW_THREADS);
		ptx_emit(p, "bra $L%d;", loop);
		ptx_place(p, done);
	}
	ptx_loop_end(p);
	ptx_kernel_end(p);
	*k = (PtxKernel){0}; /* no tensor maps, whatever the caller left */
	snprintf(k->name, sizeof k->name, "%s", s->name);
	k->threads = EW_THREADS;
	k->smem = 0;
	k->ntensors = s->nin + s->nout;
	k->nblocks = (sp.total + sp.block - 1) / sp.block;
}
