/* codegen/ptx.c -- the PTX emitter every kernel kind goes through: the
 * module header, the one emit function, virtual registers, the tables from
 * dtype to PTX type and from op to instruction sequence, elementwise
 * programs, and the persistent block loop with its flag wait and raise. */
#include "codegen.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The PTX reads PtxBlock at fixed offsets (see the loads in ptx_loop_*). */
static_assert(sizeof(PtxBlock) == 40, "PtxBlock is 40 bytes");
static_assert(offsetof(PtxBlock, in_flag) == 12, "in_flag at 12");
static_assert(offsetof(PtxBlock, in_epoch) == 16, "in_epoch at 16");
static_assert(offsetof(PtxBlock, out_flag) == 24, "out_flag at 24");
static_assert(offsetof(PtxBlock, out_op) == 28, "out_op at 28");
static_assert(offsetof(PtxBlock, out_value) == 32, "out_value at 32");
static_assert(sizeof(PtxRoute) == 16 && offsetof(PtxRoute, drow) == 8 && offsetof(PtxRoute, dcol) == 12,
              "PtxRoute: flags at 0, drow at 8, dcol at 12");

enum {
	SPIN_FIRST_NS = 32,  /* first nanosleep of a flag wait */
	SPIN_CAP_NS = 1024,  /* back-off cap: a released flag is seen within ~1 us */
	SPIN_CLOCK_MASK = 63,  /* the clock every 64th spin (~64 us) */
	SPIN_ERR_MASK = 4095,  /* the error word every 4096th (~4 ms): see ptx_flag_wait */
	GROUP_CAP_NS = 128,    /* back-off cap of a group barrier (ptx_group_wait) */
};

const char *const ptx_param_names[PTX_NPARAM] = {
	"blocks", "nblocks", "flags", "err", "timeout", "trace", "epoch", "site",
};

/* .u32 for nblocks and site, .u64 for the others.  The site (the kernel's
 * number in the error word and the trace) is a parameter, not a constant,
 * so kernels that differ only there are one kernel in the module
 * (codegen/module.c). */
static const int param_is32[PTX_NPARAM] = {0, 1, 0, 0, 0, 0, 0, 1};

static const struct {
	const char *prefix, *type;
} rcinfo[RC_COUNT] = {
	[RC_PRED] = {"%p", ".pred"}, [RC_B16] = {"%h", ".b16"}, [RC_B32] = {"%r", ".b32"},
	[RC_B64] = {"%rd", ".b64"},  [RC_F32] = {"%f", ".f32"},
};

/* Storage types.  Values in programs are f32 or s32; bf16 and f16 are
 * converted on load and rounded (to nearest even) on store. */
const PtxDType ptx_dtypes[DT_COUNT] = {
	[DT_F32] = {4, "f32", RC_F32, VC_F32, NULL, NULL, NULL},
	[DT_F16] = {2, "b16", RC_B16, VC_F32, "cvt.f32.f16 %d, %a", "cvt.rn.f16.f32 %d, %a",
	            "cvt.rn.f16x2.f32 %d, %b, %a"},
	[DT_BF16] = {2, "b16", RC_B16, VC_F32, "cvt.f32.bf16 %d, %a", "cvt.rn.bf16.f32 %d, %a",
	             "cvt.rn.bf16x2.f32 %d, %b, %a"},
	[DT_I32] = {4, "b32", RC_B32, VC_S32, NULL, NULL, NULL},
};

/* Op -> instruction sequence, for f32 values and (where integers stay
 * integers) s32 values.  Placeholders: %d result, %a %b operands, %t0..%t3
 * f32 temporaries, %q a predicate, %h a b16.  exp, log and sigmoid go
 * through ex2/lg2 (relative error ~2^-22 plus |x|*2^-24); tanh uses the
 * odd polynomial of CUDA's tanhf below 0.6 (max rel. error 7e-8, checked in
 * double on 600k points) and 1 - 2/(e^2|x| + 1) above (1.9e-7).  Their
 * reciprocals are rcp.approx (1 ulp; the denominators are at least 1, so
 * flushing subnormals loses only results below 2^-126): rcp.rn is a
 * subroutine of a dozen instructions, which in a matmul epilogue kept the
 * tensor cores waiting. */
static const struct EwOp {
	int op;
	const char *f32, *s32;
} ewops[] = {
	{OP_NEG, "neg.f32 %d, %a", "neg.s32 %d, %a"},
	{OP_EXP, "mul.f32 %t0, %a, 0f3FB8AA3B; ex2.approx.ftz.f32 %d, %t0", NULL},
	{OP_LOG, "lg2.approx.f32 %t0, %a; mul.f32 %d, %t0, 0f3F317218", NULL},
	{OP_SQRT, "sqrt.rn.f32 %d, %a", NULL},
	{OP_RSQRT, "rsqrt.approx.f32 %d, %a", NULL},
	{OP_TANH,
	 "abs.f32 %t0, %a; mul.f32 %t1, %t0, 0f4038AA3B; ex2.approx.ftz.f32 %t1, %t1;"
	 "add.f32 %t1, %t1, 0f3F800000; rcp.approx.ftz.f32 %t1, %t1; fma.rn.f32 %t1, %t1, 0fC0000000, 0f3F800000;"
	 "mul.f32 %t2, %t0, %t0; fma.rn.f32 %t3, %t2, 0fBBBAF0EA, 0f3CA9134E;"
	 "fma.rn.f32 %t3, %t3, %t2, 0fBD5C1E2D; fma.rn.f32 %t3, %t3, %t2, 0f3E088393;"
	 "fma.rn.f32 %t3, %t3, %t2, 0fBEAAAA99; mul.f32 %t3, %t3, %t2; fma.rn.f32 %t3, %t3, %t0, %t0;"
	 "setp.lt.f32 %q, %t0, 0f3F19999A; selp.f32 %t1, %t3, %t1, %q; copysign.f32 %d, %a, %t1",
	 NULL},
	{OP_SIGMOID,
	 "mul.f32 %t0, %a, 0fBFB8AA3B; ex2.approx.ftz.f32 %t0, %t0; add.f32 %t0, %t0, 0f3F800000;"
	 "rcp.approx.ftz.f32 %d, %t0",
	 NULL},
	{OP_ABS, "abs.f32 %d, %a", "abs.s32 %d, %a"},
	{OP_ADD, "add.f32 %d, %a, %b", "add.s32 %d, %a, %b"},
	{OP_SUB, "sub.f32 %d, %a, %b", "sub.s32 %d, %a, %b"},
	{OP_MUL, "mul.f32 %d, %a, %b", "mul.lo.s32 %d, %a, %b"},
	{OP_DIV, "div.rn.f32 %d, %a, %b", NULL},
	{OP_MAX, "max.f32 %d, %a, %b", "max.s32 %d, %a, %b"},
	{OP_MIN, "min.f32 %d, %a, %b", "min.s32 %d, %a, %b"},
};

/* cast(x, dt) on an f32 value; s32 operands are converted to f32 first
 * except for the integer target. */
static const char *const casts[DT_COUNT] = {
	[DT_F32] = "mov.f32 %d, %a",
	[DT_F16] = "cvt.rn.f16.f32 %h, %a; cvt.f32.f16 %d, %h",
	[DT_BF16] = "cvt.rn.bf16.f32 %h, %a; cvt.f32.bf16 %d, %h",
	[DT_I32] = "cvt.rzi.s32.f32 %d, %a",
};

void
ptx_emit_header(Buf *b)
{
	buf_printf(b, "//\n// Generated by syncc %s (codegen/ptx.c).\n//\n", SYNCC_VERSION);
	/* sm_90a: the Hopper matmul (wgmma, setmaxnreg) is arch-specific; every
	 * kernel here runs on sm_90 parts (H100, H200) only anyway. */
	buf_printf(b, ".version 8.0\n.target sm_90a\n.address_size 64\n\n");
	/* Dynamic shared memory: one symbol for the module, each kernel gets its own. */
	buf_printf(b, ".extern .shared .align 128 .b8 ptx_smem[];\n\n");
}

/* The one emit function: one line of the current kernel's body.  Labels
 * ($...) start in column 0, everything else is indented. */
void
ptx_emit(Ptx *p, const char *fmt, ...)
{
	va_list ap;
	if (fmt[0] != '$')
		buf_put(&p->body, "\t", 1);
	va_start(ap, fmt);
	buf_vprintf(&p->body, fmt, ap);
	va_end(ap);
	buf_put(&p->body, "\n", 1);
}

Reg
ptx_reg(Ptx *p, RegClass c)
{
	ASSERT(p->nreg[c] < (1 << 24));
	return (Reg)c << 24 | p->nreg[c]++;
}

const char *
ptx_rn(Ptx *p, Reg r)
{
	char *s = p->names[p->nextname++ % NELEM(p->names)];
	snprintf(s, sizeof p->names[0], "%s%d", rcinfo[r >> 24].prefix, r & 0xffffff);
	return s;
}

int
ptx_label(Ptx *p)
{
	return p->nlabel++;
}

void
ptx_place(Ptx *p, int label)
{
	ptx_emit(p, "$L%d:", label);
}

void
ptx_kernel_begin(Ptx *p, Buf *out, const char *name, int ntensors, int threads, int min_ctas)
{
	ptx_kernel_begin_tm(p, out, name, ntensors, 0, threads, min_ctas);
}

/* ntmaps tensor maps follow the tensors: 128-byte, 64-aligned parameters
 * (CUtensorMap) that TMA copies read in place. */
void
ptx_kernel_begin_tm(Ptx *p, Buf *out, const char *name, int ntensors, int ntmaps, int threads, int min_ctas)
{
	*p = (Ptx){.out = out};
	buf_printf(&p->head, ".visible .entry %s(\n", name);
	for (int i = 0; i < PTX_NPARAM; i++)
		buf_printf(&p->head, "\t.param .u%d %s,\n", param_is32[i] ? 32 : 64, ptx_param_names[i]);
	for (int i = 0; i < ntensors; i++)
		buf_printf(&p->head, "\t.param .u64 t%d%s\n", i, i + 1 < ntensors + ntmaps ? "," : "");
	for (int i = 0; i < ntmaps; i++)
		buf_printf(&p->head, "\t.param .align 64 .b8 tm%d[128]%s\n", i, i + 1 < ntmaps ? "," : "");
	buf_printf(&p->head, ")\n.maxntid %d, 1, 1\n", threads);
	if (min_ctas > 0)
		buf_printf(&p->head, ".minnctapersm %d\n", min_ctas);
}

void
ptx_kernel_end(Ptx *p)
{
	buf_put(p->out, p->head.s, p->head.len);
	buf_printf(p->out, "{\n");
	for (int c = 0; c < RC_COUNT; c++)
		if (p->nreg[c])
			buf_printf(p->out, "\t.reg %s %s<%d>;\n", rcinfo[c].type, rcinfo[c].prefix, p->nreg[c]);
	buf_put(p->out, p->body.s, p->body.len);
	buf_printf(p->out, "}\n\n");
	buf_free(&p->head);
	buf_free(&p->body);
}

#define R(r) ptx_rn(p, r)

/* A spin loop's labels and registers: the body at `spin` (a nanosleep and
 * one poll), n counting spins, start when waiting began, fi the flag the
 * error word names; q, e, old, low, v scratch.  Allocated by the waits in
 * one order (so their kernels' PTX stays as it was before spin_tail). */
typedef struct Spin {
	int spin, giveup, clock;
	Reg n, start, fi, q, e, old, low, v;
} Spin;

/* The tail of a spin loop: with a timeout, every SPIN_CLOCK_MASK+1 spins
 * the clock and every SPIN_ERR_MASK+1 the error word; past the timeout the
 * first CTA claims the error word {1, fi, blk, site}; then quit is set. */
static void
spin_tail(Ptx *p, const Spin *w, Reg quit)
{
	Reg err = p->param[3], timeout = p->param[4];

	ptx_emit(p, "setp.eq.u64 %s, %s, 0;", R(w->q), R(timeout));
	ptx_emit(p, "@%s bra $L%d;", R(w->q), w->spin);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(w->n), R(w->n));
	ptx_emit(p, "and.b32 %s, %s, %d;", R(w->low), R(w->n), SPIN_CLOCK_MASK);
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(w->q), R(w->low));
	ptx_emit(p, "@%s bra $L%d;", R(w->q), w->spin);
	/* Another CTA already failed: what we wait for may never come. */
	ptx_emit(p, "and.b32 %s, %s, %d;", R(w->low), R(w->n), SPIN_ERR_MASK);
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(w->q), R(w->low));
	ptx_emit(p, "@%s bra $L%d;", R(w->q), w->clock);
	ptx_emit(p, "ld.relaxed.sys.global.u64 %s, [%s];", R(w->e), R(err));
	ptx_emit(p, "setp.ne.u64 %s, %s, 0;", R(w->q), R(w->e));
	ptx_emit(p, "@%s bra $L%d;", R(w->q), w->giveup);
	ptx_place(p, w->clock);
	ptx_emit(p, "mov.u64 %s, %%globaltimer;", R(w->v));
	ptx_emit(p, "sub.u64 %s, %s, %s;", R(w->v), R(w->v), R(w->start));
	ptx_emit(p, "setp.lt.u64 %s, %s, %s;", R(w->q), R(w->v), R(timeout));
	ptx_emit(p, "@%s bra $L%d;", R(w->q), w->spin);
	/* the error word is libsyncrt's u32[4] {code, flag, block, site}: the
	 * first CTA to time out claims word 0, then fills in the rest */
	ptx_emit(p, "atom.relaxed.sys.global.cas.b32 %s, [%s], 0, 1;", R(w->old), R(err));
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(w->q), R(w->old));
	ptx_emit(p, "@%s bra $L%d;", R(w->q), w->giveup);
	ptx_emit(p, "st.relaxed.sys.global.u32 [%s+4], %s;", R(err), R(w->fi));
	ptx_emit(p, "st.relaxed.sys.global.u32 [%s+8], %s;", R(err), R(p->blk));
	ptx_emit(p, "st.relaxed.sys.global.u32 [%s+12], %s;", R(err), R(p->param[7]));
	ptx_place(p, w->giveup);
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(quit), R(p->tid), R(p->tid)); /* true */
}

/* Labels and registers in the order ptx_flag_wait always took them. */
static Spin
spin_new(Ptx *p, int *waited, Reg *ep, Reg *fa, Reg *ns)
{
	Spin w;
	*waited = ptx_label(p);
	w.spin = ptx_label(p), w.giveup = ptx_label(p), w.clock = ptx_label(p);
	w.fi = ptx_reg(p, RC_B32), *ep = ptx_reg(p, RC_B64), *fa = ptx_reg(p, RC_B64);
	w.v = ptx_reg(p, RC_B64), w.start = ptx_reg(p, RC_B64), *ns = ptx_reg(p, RC_B32);
	w.q = ptx_reg(p, RC_PRED), w.e = ptx_reg(p, RC_B64), w.old = ptx_reg(p, RC_B32);
	w.n = ptx_reg(p, RC_B32), w.low = ptx_reg(p, RC_B32);
	return w;
}

/* Thread 0 waits for the block's input flag: acquire loads at system scope
 * (the producer may be an NCCL kernel in another memory-sync domain, a copy
 * engine, or another GPU), nanosleep back-off doubling to ~1 us, and a
 * %globaltimer timeout that records the error word and makes the whole CTA
 * leave through bar.red.or.pred -- never trap, which kills the context.
 * The error word is pinned host memory: every waiting CTA reading it is a
 * stream of PCIe reads beside the collective it waits for.  Read every
 * 64 us by 256 waiting CTAs it made a copy-engine all_to_all beside them
 * 9x slower (ulysses 8192x4096 on 2xH200: 3.0 ms, 0.33 ms at every 64 ms;
 * bench/results/2026-11-30-gpu-check-2xH200-b.md), so the clock is read
 * every SPIN_CLOCK_MASK+1 spins and the error word every SPIN_ERR_MASK+1:
 * a failure elsewhere is noticed within ~4 ms, a timeout within 64 us. */
void
ptx_flag_wait(Ptx *p, Reg quit)
{
	int waited;
	Reg ep, fa, ns;
	Spin w = spin_new(p, &waited, &ep, &fa, &ns);
	Reg flags = p->param[2];

	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(quit), R(p->tid), R(p->tid)); /* false */
	ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), waited);
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+12];", R(w.fi), R(p->entry));
	ptx_emit(p, "setp.eq.u32 %s, %s, %u;", R(w.q), R(w.fi), PTX_NO_FLAG);
	ptx_emit(p, "@%s bra $L%d;", R(w.q), waited);
	ptx_emit(p, "ld.global.nc.u64 %s, [%s+16];", R(ep), R(p->entry));
	ptx_emit(p, "mul.lo.u64 %s, %s, %s;", R(ep), R(ep), R(p->param[6])); /* this call's target */
	ptx_emit(p, "mad.wide.u32 %s, %s, 8, %s;", R(fa), R(w.fi), R(flags));
	ptx_emit(p, "ld.acquire.sys.global.u64 %s, [%s];", R(w.v), R(fa));
	ptx_emit(p, "sub.u64 %s, %s, %s;", R(w.v), R(w.v), R(ep));
	ptx_emit(p, "setp.ge.s64 %s, %s, 0;", R(w.q), R(w.v));
	ptx_emit(p, "@%s bra $L%d;", R(w.q), waited);
	ptx_emit(p, "mov.u64 %s, %%globaltimer;", R(w.start));
	ptx_emit(p, "mov.u32 %s, %d;", R(ns), SPIN_FIRST_NS);
	ptx_emit(p, "mov.u32 %s, 0;", R(w.n));
	ptx_place(p, w.spin);
	ptx_emit(p, "nanosleep.u32 %s;", R(ns));
	ptx_emit(p, "shl.b32 %s, %s, 1;", R(ns), R(ns));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(ns), R(ns), SPIN_CAP_NS);
	ptx_emit(p, "ld.acquire.sys.global.u64 %s, [%s];", R(w.v), R(fa));
	ptx_emit(p, "sub.u64 %s, %s, %s;", R(w.v), R(w.v), R(ep));
	ptx_emit(p, "setp.ge.s64 %s, %s, 0;", R(w.q), R(w.v));
	ptx_emit(p, "@%s bra $L%d;", R(w.q), waited);
	spin_tail(p, &w, quit);
	ptx_place(p, waited);
}

/* Thread 0 (after a barrier that covers the CTA's writes the group is
 * to see): this CTA's arrival on the group's counter. */
void
ptx_group_arrive(Ptx *p, Reg cnt)
{
	ptx_emit(p, "@%s red.release.gpu.global.add.u32 [%s], 1;", R(p->is_t0), R(cnt));
}

/* The other CTAs of a group are resident and on the same entry, so their
 * arrivals come within microseconds: a short back-off (GROUP_CAP_NS), at
 * gpu scope (every writer is a CTA of this kernel).  arrive: this CTA
 * arrives first (else it did, ptx_group_arrive). */
void
ptx_group_wait(Ptx *p, Reg cnt, Reg target, Reg quit, bool arrive)
{
	int waited;
	Reg ep, fa, ns, c;
	Spin w = spin_new(p, &waited, &ep, &fa, &ns);

	c = ptx_reg(p, RC_B32);
	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(quit), R(p->tid), R(p->tid)); /* false */
	ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), waited);
	if (arrive)
		ptx_emit(p, "red.release.gpu.global.add.u32 [%s], 1;", R(cnt));
	ptx_emit(p, "ld.acquire.gpu.global.u32 %s, [%s];", R(c), R(cnt));
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(c), R(c), R(target)); /* reached, modulo 2^32 */
	ptx_emit(p, "setp.ge.s32 %s, %s, 0;", R(w.q), R(c));
	ptx_emit(p, "@%s bra $L%d;", R(w.q), waited);
	ptx_emit(p, "mov.u64 %s, %%globaltimer;", R(w.start));
	ptx_emit(p, "mov.u32 %s, %d;", R(ns), SPIN_FIRST_NS);
	ptx_emit(p, "mov.u32 %s, 0;", R(w.n));
	ptx_emit(p, "mov.u32 %s, %u;", R(w.fi), PTX_GROUP_FLAG);
	ptx_place(p, w.spin);
	ptx_emit(p, "nanosleep.u32 %s;", R(ns));
	ptx_emit(p, "shl.b32 %s, %s, 1;", R(ns), R(ns));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(ns), R(ns), GROUP_CAP_NS);
	ptx_emit(p, "ld.acquire.gpu.global.u32 %s, [%s];", R(c), R(cnt));
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(c), R(c), R(target)); /* reached, modulo 2^32 */
	ptx_emit(p, "setp.ge.s32 %s, %s, 0;", R(w.q), R(c));
	ptx_emit(p, "@%s bra $L%d;", R(w.q), waited);
	spin_tail(p, &w, quit);
	ptx_place(p, waited);
}

/* A trace record of libsyncrt, 32 bytes per block-list entry, when trace
 * is not 0: { site << 32 | block, %globaltimer at start, at end, %smid }. */
void
ptx_trace_stamp(Ptx *p, int which)
{
	int skip = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), a = ptx_reg(p, RC_B64), t = ptx_reg(p, RC_B64), w = ptx_reg(p, RC_B64);
	Reg sm = ptx_reg(p, RC_B32);
	ptx_emit(p, "setp.eq.u64 %s, %s, 0;", R(q), R(p->param[5]));
	ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	ptx_emit(p, "cvta.to.global.u64 %s, %s;", R(a), R(p->param[5]));
	ptx_emit(p, "mad.wide.u32 %s, %s, 32, %s;", R(a), R(p->blk), R(a));
	ptx_emit(p, "mov.u64 %s, %%globaltimer;", R(t));
	ptx_emit(p, "st.global.u64 [%s+%d], %s;", R(a), which ? 16 : 8, R(t));
	if (!which) {
		Reg hi = ptx_reg(p, RC_B64);
		ptx_emit(p, "cvt.u64.u32 %s, %s;", R(w), R(p->blk));
		ptx_emit(p, "cvt.u64.u32 %s, %s;", R(hi), R(p->param[7]));
		ptx_emit(p, "shl.b64 %s, %s, 32;", R(hi), R(hi));
		ptx_emit(p, "or.b64 %s, %s, %s;", R(w), R(w), R(hi));
		ptx_emit(p, "st.global.u64 [%s], %s;", R(a), R(w));
		ptx_emit(p, "mov.u32 %s, %%smid;", R(sm));
		ptx_emit(p, "cvt.u64.u32 %s, %s;", R(w), R(sm));
		ptx_emit(p, "st.global.u64 [%s+24], %s;", R(a), R(w));
	}
	ptx_place(p, skip);
}

static void group_params(Ptx *p);
static void group_leave(Ptx *p);

/* Parameters into registers, and the registers every kernel has. */
void
ptx_params(Ptx *p, int ntensors)
{
	for (int i = 0; i < PTX_NPARAM; i++) {
		p->param[i] = ptx_reg(p, param_is32[i] ? RC_B32 : RC_B64);
		ptx_emit(p, "ld.param.u%d %s, [%s];", param_is32[i] ? 32 : 64, R(p->param[i]),
		         ptx_param_names[i]);
	}
	/* The trace pointer stays generic until used: 0 means none. */
	for (int i = 0; i < PTX_NPARAM; i++)
		if (i == 0 || i == 2 || i == 3)
			ptx_emit(p, "cvta.to.global.u64 %s, %s;", R(p->param[i]), R(p->param[i]));
	p->ntensors = ntensors;
	for (int i = 0; i < ntensors; i++) {
		p->tensor[i] = ptx_reg(p, RC_B64);
		ptx_emit(p, "ld.param.u64 %s, [t%d];", R(p->tensor[i]), i);
		ptx_emit(p, "cvta.to.global.u64 %s, %s;", R(p->tensor[i]), R(p->tensor[i]));
	}
	p->tid = ptx_reg(p, RC_B32);
	p->is_t0 = ptx_reg(p, RC_PRED);
	p->blk = ptx_reg(p, RC_B32);
	p->entry = ptx_reg(p, RC_B64);
	p->x = ptx_reg(p, RC_B32);
	p->y = ptx_reg(p, RC_B32);
	p->z = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, %%tid.x;", R(p->tid));
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(p->is_t0), R(p->tid));
	p->lead = p->is_t0;
	if (p->cluster > 1) { /* the cluster's entries: its id, its rank 0 leads */
		p->crank = ptx_reg(p, RC_B32);
		p->lead = ptx_reg(p, RC_PRED);
		ptx_emit(p, "mov.u32 %s, %%cluster_ctarank;", R(p->crank));
		ptx_emit(p, "setp.eq.and.u32 %s, %s, 0, %s;", R(p->lead), R(p->crank), R(p->is_t0));
		ptx_emit(p, "mov.u32 %s, %%clusterid.x;", R(p->blk));
		return;
	}
	ptx_emit(p, "mov.u32 %s, %%ctaid.x;", R(p->blk));
	if (p->group > 1)
		group_params(p);
}

/* A group kernel's CTA: the group's size g this launch (the most a grid
 * of whole groups allows), its rank in the group and the group's id, which
 * takes the entries; a CTA past the last whole group leaves. */
static void
group_params(Ptx *p)
{
	Reg n = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), t = ptx_reg(p, RC_B32);
	p->crank = ptx_reg(p, RC_B32);
	p->lead = ptx_reg(p, RC_PRED);
	p->gsize = ptx_reg(p, RC_B32);
	p->glog = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, %%nctaid.x;", R(n));
	ptx_emit(p, "bfind.u32 %s, %s;", R(p->glog), R(n));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(p->glog), R(p->glog), ptx_ilog2(p->group));
	ptx_emit(p, "shl.b32 %s, 1, %s;", R(p->gsize), R(p->glog));
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(t), R(p->gsize));
	ptx_emit(p, "and.b32 %s, %s, %s;", R(p->crank), R(p->blk), R(t));
	ptx_emit(p, "shr.u32 %s, %s, %s;", R(p->blk), R(p->blk), R(p->glog));
	p->ngroups = n; /* whole groups, no more than have workspace: the entries' stride */
	ptx_emit(p, "shr.u32 %s, %s, %s;", R(n), R(n), R(p->glog));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(n), R(n), p->group_slots);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(p->blk), R(n));
	ptx_emit(p, "@%s ret;", R(q));
	ptx_emit(p, "setp.eq.and.u32 %s, %s, 0, %s;", R(p->lead), R(p->crank), R(p->is_t0));
	p->gcnt = ptx_reg(p, RC_B64);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(p->gcnt), R(p->blk), PTX_GROUP_WORDS * 4,
	         R(p->tensor[p->ntensors - 1]));
}

/* At the loop's end, thread 0 of each of the group's CTAs: the last to
 * leave puts the group's counters back to 0 for the next launch -- when
 * every CTA has left, none reads them again. */
static void
group_leave(Ptx *p)
{
	Reg old = ptx_reg(p, RC_B32), last = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
	int skip = ptx_label(p);
	ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), skip);
	/* acq_rel: the last to leave has seen every CTA's arrivals before it
	 * zeroes the counters, even where a group left on a timeout */
	ptx_emit(p, "atom.acq_rel.gpu.global.add.u32 %s, [%s+4], 1;", R(old), R(p->gcnt));
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(last), R(p->gsize));
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(q), R(old), R(last));
	ptx_emit(p, "@%s st.relaxed.gpu.global.u32 [%s], 0;", R(q), R(p->gcnt));
	ptx_emit(p, "@%s st.relaxed.gpu.global.u32 [%s+4], 0;", R(q), R(p->gcnt));
	ptx_emit(p, "@%s st.relaxed.gpu.global.u32 [%s+%d], 0;", R(q), R(p->gcnt), PTX_GROUP_ODD * 4);
	ptx_place(p, skip);
}

void
ptx_kernel_group(Ptx *p, int n, int slots)
{
	ASSERT(n > 1 && !(n & (n - 1)) && n <= PTX_MAX_GROUP && p->cluster <= 1 && slots >= 1);
	p->group = n;
	p->group_slots = slots;
}

void
ptx_kernel_flagless(Ptx *p)
{
	ASSERT(p->cluster <= 1 && p->group <= 1);
	p->flagless = true;
}

void
ptx_kernel_cluster(Ptx *p, int n)
{
	if (n <= 1)
		return;
	p->cluster = n;
	buf_printf(&p->head, ".reqnctapercluster %d, 1, 1\n", n);
	/* this CTA's verdict on leaving, which its peers read (cluster_quit) */
	ptx_emit(p, ".shared .align 4 .b32 syn_cquit;");
}

/* Not .aligned: callers reach it after branches that split warps. */
void
ptx_cluster_sync(Ptx *p)
{
	ptx_emit(p, "barrier.cluster.arrive.release;");
	ptx_emit(p, "barrier.cluster.wait.acquire;");
}

/* A cluster leaves together or not at all: a CTA that left alone would
 * strand its peers at their next cluster barrier.  Thread 0 of every CTA
 * ORs the CTAs' verdicts (`all`, the CTA's own) and the CTA learns the
 * result by a barrier.  A CTA writes its word again only after the next
 * entry's first cluster barrier, which its peers reach after reading it. */
static void
cluster_quit(Ptx *p, Reg all)
{
	Reg w = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B32), ra = ptx_reg(p, RC_B32), v = ptx_reg(p, RC_B32);
	Reg q = ptx_reg(p, RC_PRED);
	int skip = ptx_label(p);

	ptx_emit(p, "selp.u32 %s, 1, 0, %s;", R(w), R(all));
	ptx_emit(p, "mov.u32 %s, syn_cquit;", R(a));
	ptx_emit(p, "@%s st.shared.u32 [%s], %s;", R(p->is_t0), R(a), R(w));
	ptx_cluster_sync(p);
	ptx_emit(p, "mov.u32 %s, 0;", R(w));
	ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), skip);
	for (int j = 0; j < p->cluster; j++) {
		ptx_emit(p, "mapa.shared::cluster.u32 %s, %s, %d;", R(ra), R(a), j);
		ptx_emit(p, "ld.shared::cluster.u32 %s, [%s];", R(v), R(ra));
		ptx_emit(p, "or.b32 %s, %s, %s;", R(w), R(w), R(v));
	}
	ptx_place(p, skip);
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(w));
	ptx_emit(p, "bar.red.or.pred %s, 0, %s;", R(all), R(q));
}

/* The head of the persistent loop: take this CTA's next block, wait for
 * its flag, read its coordinates. */
void
ptx_loop_begin(Ptx *p)
{
	Reg quit = ptx_reg(p, RC_PRED), all = ptx_reg(p, RC_PRED), q = ptx_reg(p, RC_PRED);
	int skip;

	p->lbl_loop = ptx_label(p);
	p->lbl_done = ptx_label(p);
	p->lbl_exit = ptx_label(p);
	ptx_place(p, p->lbl_loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(p->blk), R(p->param[1]));
	ptx_emit(p, "@%s bra $L%d;", R(q), p->lbl_exit);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(p->entry), R(p->blk), (int)sizeof(PtxBlock),
	         R(p->param[0]));
	if (!p->flagless) {
		ptx_flag_wait(p, quit);
		/* A barrier for the CTA (the acquire above then covers every
		 * thread's later reads) that also tells every thread whether to
		 * leave. */
		ptx_emit(p, "bar.red.or.pred %s, 0, %s;", R(all), R(quit));
		if (p->cluster > 1)
			cluster_quit(p, all);
		ptx_emit(p, "@%s bra $L%d;", R(all), p->lbl_done);
	}
	ptx_emit(p, "ld.global.nc.v2.u32 {%s, %s}, [%s];", R(p->x), R(p->y), R(p->entry));
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+8];", R(p->z), R(p->entry));
	skip = ptx_label(p);
	ptx_emit(p, "@!%s bra $L%d;", R(p->lead), skip);
	ptx_trace_stamp(p, 0);
	ptx_place(p, skip);
}

/* The tail of the loop: every thread's stores, then one release at system
 * scope by thread 0 (cumulative over what bar.sync ordered before it). */
/* The thread `who` (after a barrier that covers the block's stores)
 * raises the block's output flag, if it names one; `raised` is placed after. */
static void
flag_raise(Ptx *p, Reg who, Reg flags, bool routed)
{
	int raised = ptx_label(p);
	Reg fo = ptx_reg(p, RC_B32), op = ptx_reg(p, RC_B32), val = ptx_reg(p, RC_B64);
	Reg fa = ptx_reg(p, RC_B64), q = ptx_reg(p, RC_PRED);

	ptx_emit(p, "@!%s bra $L%d;", R(who), raised);
	ptx_trace_stamp(p, 1);
	ptx_emit(p, "ld.global.nc.v2.u32 {%s, %s}, [%s+24];", R(fo), R(op), R(p->entry));
	ptx_emit(p, "setp.eq.u32 %s, %s, %u;", R(q), R(fo), PTX_NO_FLAG);
	ptx_emit(p, "@%s bra $L%d;", R(q), raised);
	if (routed)
		ptx_emit(p, "and.b32 %s, %s, %d;", R(op), R(op), (1 << PTX_ROUTE_SHIFT) - 1);
	ptx_emit(p, "ld.global.nc.u64 %s, [%s+32];", R(val), R(p->entry));
	ptx_emit(p, "mad.wide.u32 %s, %s, 8, %s;", R(fa), R(fo), R(flags));
	ptx_emit(p, "setp.eq.u32 %s, %s, %d;", R(q), R(op), PTX_RAISE_ADD);
	ptx_emit(p, "@%s red.release.sys.global.add.u64 [%s], %s;", R(q), R(fa), R(val));
	ptx_emit(p, "@!%s mul.lo.u64 %s, %s, %s;", R(q), R(val), R(val), R(p->param[6]));
	ptx_emit(p, "@!%s st.release.sys.global.u64 [%s], %s;", R(q), R(fa), R(val));
	ptx_place(p, raised);
}

void
ptx_flag_raise(Ptx *p, Reg who)
{
	flag_raise(p, who, p->param[2], false);
}

void
ptx_flag_raise_at(Ptx *p, Reg who, Reg flags)
{
	flag_raise(p, who, flags, true);
}

int64_t
ptx_route_table_off(int64_t nblocks)
{
	return (nblocks * (int64_t)sizeof(PtxBlock) + PTX_ROUTE_ALIGN - 1) / PTX_ROUTE_ALIGN * PTX_ROUTE_ALIGN;
}

/* The persistent loop's step between a CTA's entries: the groups' count,
 * else the clusters' or CTAs' (in scratch n). */
static Reg
entry_step(Ptx *p, Reg n)
{
	if (p->group > 1) /* the groups */
		return p->ngroups;
	ptx_emit(p, "mov.u32 %s, %s;", R(n), p->cluster > 1 ? "%nclusterid.x" : "%nctaid.x");
	return n;
}

void
ptx_next_entry(Ptx *p, Reg n, int loop)
{
	ptx_emit(p, "add.u32 %s, %s, %s;", R(p->blk), R(p->blk), R(entry_step(p, n)));
	ptx_emit(p, "bra $L%d;", loop);
}

/* The entry this CTA takes after the current one (ptx_next_entry's
 * step): has = there is one, x = its first coordinate (only where has;
 * x < 0: not wanted). */
void
ptx_peek_next(Ptx *p, Reg has, Reg x)
{
	Reg n = ptx_reg(p, RC_B32), e;
	ptx_emit(p, "add.u32 %s, %s, %s;", R(n), R(p->blk), R(entry_step(p, n)));
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(has), R(n), R(p->param[1]));
	if (x < 0)
		return;
	e = ptx_reg(p, RC_B64);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(e), R(n), (int)sizeof(PtxBlock), R(p->param[0]));
	ptx_emit(p, "@%s ld.global.nc.u32 %s, [%s];", R(has), R(x), R(e));
}

/* The loop's end; drain(arg), where given, runs once the CTA has no
 * entry left (not where it leaves early: a timeout goes to lbl_done). */
void
ptx_loop_end_drain(Ptx *p, void (*drain)(void *), void *arg)
{
	Reg n = ptx_reg(p, RC_B32);

	if (p->flagless) { /* no flag to raise: only the trace's end stamp, the lead thread's own */
		int skip = ptx_label(p);
		ptx_emit(p, "@!%s bra $L%d;", R(p->lead), skip);
		ptx_trace_stamp(p, 1);
		ptx_place(p, skip);
	} else if (p->cluster > 1) { /* a cluster's flag goes up once, after every CTA's stores */
		ptx_cluster_sync(p);
		ptx_flag_raise(p, p->lead);
	} else {
		ptx_emit(p, "bar.sync 0;");
		ptx_flag_raise(p, p->lead);
	}
	ptx_next_entry(p, n, p->lbl_loop);
	ptx_place(p, p->lbl_exit);
	if (drain)
		drain(arg);
	ptx_place(p, p->lbl_done);
	if (p->async_copies) /* none left in flight into shared memory as the CTA leaves */
		ptx_emit(p, "cp.async.wait_all;");
	if (p->cluster > 1) /* no CTA leaves while a peer may still read its shared memory */
		ptx_cluster_sync(p);
	if (p->group > 1)
		group_leave(p);
	ptx_emit(p, "ret;");
}

void
ptx_loop_end(Ptx *p)
{
	ptx_loop_end_drain(p, NULL, NULL);
}

/* ---- small shared pieces ---- */

int
ptx_ilog2(int x)
{
	int n = 0;
	while ((1 << n) < x)
		n++;
	return n;
}

/* d = idx * scale + base, 64-bit; scale in bytes, any size >= 0. */
void
ptx_mad_wide(Ptx *p, Reg d, Reg idx, int64_t scale, Reg base)
{
	if (scale >= 0 && scale < ((int64_t)1 << 32)) {
		ptx_emit(p, "mad.wide.u32 %s, %s, %lld, %s;", R(d), R(idx), (long long)scale, R(base));
	} else {
		Reg w = ptx_reg(p, RC_B64);
		ptx_emit(p, "cvt.u64.u32 %s, %s;", R(w), R(idx));
		ptx_emit(p, "mad.lo.u64 %s, %s, %lld, %s;", R(d), R(w), (long long)scale, R(base));
	}
}

/* ---- values and programs ---- */

Reg
ptx_imm_f32(Ptx *p, double c)
{
	float f = (float)c;
	uint32_t u;
	Reg r = ptx_reg(p, RC_F32);
	memcpy(&u, &f, 4);
	ptx_emit(p, "mov.f32 %s, 0f%08X;", R(r), u);
	return r;
}

/* Writes a template from the tables, one instruction per ';'. */
void
ptx_expand(Ptx *p, const char *tpl, Reg d, Reg a, Reg b)
{
	Reg t[4] = {-1, -1, -1, -1}, q = -1, h = -1;
	char line[256];
	size_t n = 0;

	for (const char *s = tpl;; s++) {
		if (*s == ';' || *s == 0) {
			line[n] = 0;
			while (n > 0 && line[0] == ' ')
				memmove(line, line + 1, n--);
			if (n > 0)
				ptx_emit(p, "%s;", line);
			n = 0;
			if (*s == 0)
				break;
			continue;
		}
		const char *name = NULL;
		if (*s == '%' && s[1] == 'd')
			name = R(d);
		else if (*s == '%' && s[1] == 'a')
			name = R(a);
		else if (*s == '%' && s[1] == 'b')
			name = R(b);
		else if (*s == '%' && s[1] == 'q')
			name = R(q < 0 ? (q = ptx_reg(p, RC_PRED)) : q);
		else if (*s == '%' && s[1] == 'h')
			name = R(h < 0 ? (h = ptx_reg(p, RC_B16)) : h);
		else if (*s == '%' && s[1] == 't') {
			int i = s[2] - '0';
			ASSERT(i >= 0 && i < 4);
			if (t[i] < 0)
				t[i] = ptx_reg(p, RC_F32);
			name = R(t[i]);
			s++;
		}
		if (name) {
			size_t k = strlen(name);
			ASSERT(n + k < sizeof line);
			memcpy(line + n, name, k);
			n += k;
			s++;
		} else {
			ASSERT(n + 1 < sizeof line);
			line[n++] = *s;
		}
	}
}

Reg
ptx_convert(Ptx *p, Reg v, ValClass from, ValClass to)
{
	Reg d;
	if (from == to)
		return v;
	if (to == VC_F32) {
		d = ptx_reg(p, RC_F32);
		ptx_emit(p, "cvt.rn.f32.s32 %s, %s;", R(d), R(v));
	} else {
		d = ptx_reg(p, RC_B32);
		ptx_emit(p, "cvt.rzi.s32.f32 %s, %s;", R(d), R(v));
	}
	return d;
}

/* One element of type dt at addr (a register holding an address) into a
 * value register.  space is "global" or "global.nc". */
Reg
ptx_load_val(Ptx *p, DType dt, Reg addr, const char *space)
{
	const PtxDType *t = &ptx_dtypes[dt];
	Reg s = ptx_reg(p, t->st), v;
	ptx_emit(p, "ld.%s.%s %s, [%s];", space, t->ld, R(s), R(addr));
	if (!t->load)
		return s;
	v = ptx_reg(p, RC_F32);
	ptx_expand(p, t->load, v, s, -1);
	return v;
}

void
ptx_store_val(Ptx *p, DType dt, Reg addr, Reg v, ValClass vc)
{
	const PtxDType *t = &ptx_dtypes[dt];
	Reg s = ptx_convert(p, v, vc, t->vc);
	if (t->store) {
		Reg h = ptx_reg(p, RC_B16);
		ptx_expand(p, t->store, h, s, -1);
		s = h;
	}
	ptx_emit(p, "st.global.%s [%s], %s;", t->ld, R(addr), R(s));
}

/* V elements (V * size a multiple of 4 bytes, more than one) of one
 * tensor at addr in one vector load, as raw 32-bit words; returns how many. */
int
ptx_load_words(Ptx *p, DType dt, Reg addr, int v, Reg *w)
{
	return ptx_load_words_in(p, "global", dt, addr, v, w);
}

int
ptx_load_words_in(Ptx *p, const char *space, DType dt, Reg addr, int v, Reg *w)
{
	const PtxDType *d = &ptx_dtypes[dt];
	int words = v * d->size / 4;
	for (int i = 0; i < words; i++)
		w[i] = ptx_reg(p, d->size == 4 ? d->st : RC_B32);
	ptx_load_words_to(p, space, dt, addr, v, w);
	return words;
}

/* The same load into registers w the caller holds (two loads, from
 * different spaces on either side of a branch, meeting in one set). */
void
ptx_load_words_to(Ptx *p, const char *space, DType dt, Reg addr, int v, const Reg *w)
{
	const PtxDType *d = &ptx_dtypes[dt];
	int words = v * d->size / 4;
	const char *ty = d->size == 4 ? d->ld : "b32";
	if (words == 1)
		ptx_emit(p, "ld.%s.%s %s, [%s];", space, ty, R(w[0]), R(addr));
	else if (words == 2)
		ptx_emit(p, "ld.%s.v2.%s {%s, %s}, [%s];", space, ty, R(w[0]), R(w[1]), R(addr));
	else
		ptx_emit(p, "ld.%s.v4.%s {%s, %s, %s, %s}, [%s];", space, ty, R(w[0]), R(w[1]), R(w[2]), R(w[3]),
		         R(addr));
}

/* Word i of such a load as its element values (one, or two 16-bit ones). */
void
ptx_unpack_word(Ptx *p, DType dt, Reg w, Reg *val)
{
	const PtxDType *d = &ptx_dtypes[dt];
	Reg h0, h1;
	if (d->size == 4) {
		val[0] = w;
		return;
	}
	h0 = ptx_reg(p, RC_B16);
	h1 = ptx_reg(p, RC_B16);
	ptx_emit(p, "mov.b32 {%s, %s}, %s;", R(h0), R(h1), R(w));
	val[0] = ptx_reg(p, RC_F32);
	val[1] = ptx_reg(p, RC_F32);
	ptx_expand(p, d->load, val[0], h0, -1);
	ptx_expand(p, d->load, val[1], h1, -1);
}

/* V elements of one tensor at addr into value registers, in one vector
 * load (v * size a multiple of 4 bytes); cs, the elements' stride, 0 or
 * v == 1: one element for all V. */
void
ptx_load_vec(Ptx *p, DType dt, Reg addr, int64_t cs, int v, Reg *val)
{
	Reg w[4];
	int words, per = ptx_dtypes[dt].size == 4 ? 1 : 2;
	if (cs == 0 || v == 1) {
		Reg x = ptx_load_val(p, dt, addr, "global");
		for (int j = 0; j < v; j++)
			val[j] = x;
		return;
	}
	words = ptx_load_words(p, dt, addr, v, w);
	for (int i = 0; i < words; i++)
		ptx_unpack_word(p, dt, w[i], &val[per * i]);
}

/* V values, already in the storage type's class, at addr in one vector
 * store. */
void
ptx_store_vec(Ptx *p, DType dt, Reg addr, int v, const Reg *val)
{
	ptx_store_vec_in(p, "global", dt, addr, v, val);
}

void
ptx_store_vec_in(Ptx *p, const char *space, DType dt, Reg addr, int v, const Reg *val)
{
	const PtxDType *d = &ptx_dtypes[dt];
	Reg w[4];
	int words;
	if (v == 1 && !strcmp(space, "global")) {
		ptx_store_val(p, dt, addr, val[0], d->vc);
		return;
	}
	words = v * d->size / 4;
	for (int i = 0; i < words; i++) {
		if (d->size == 4) {
			w[i] = val[i];
			continue;
		}
		w[i] = ptx_reg(p, RC_B32);
		ptx_expand(p, d->pack2, w[i], val[2 * i], val[2 * i + 1]);
	}
	const char *ty = d->size == 4 ? d->ld : "b32";
	if (words == 1)
		ptx_emit(p, "st.%s.%s [%s], %s;", space, ty, R(addr), R(w[0]));
	else if (words == 2)
		ptx_emit(p, "st.%s.v2.%s [%s], {%s, %s};", space, ty, R(addr), R(w[0]), R(w[1]));
	else
		ptx_emit(p, "st.%s.v4.%s [%s], {%s, %s, %s, %s};", space, ty, R(addr), R(w[0]), R(w[1]), R(w[2]),
		         R(w[3]));
}

static const struct EwOp *
ewop(int op)
{
	for (size_t i = 0; i < NELEM(ewops); i++)
		if (ewops[i].op == op)
			return &ewops[i];
	return NULL;
}

/* Integers stay integers through neg, abs, add, sub, mul, max and min;
 * anything else (and any float operand) makes the value f32. */
void
ptx_prog_classes(const PtxEwProg *g, const ValClass *in_vc, ValClass acc_vc, ValClass *vc)
{
	for (int i = 0; i < g->nins; i++) {
		const PtxIns *in = &g->ins[i];
		const struct EwOp *e;
		switch (in->op) {
		case OP_PARAM: vc[i] = in_vc[in->a]; break;
		case OP_CONST: vc[i] = in->dt == DT_I32 ? VC_S32 : VC_F32; break;
		case PTX_OP_ACC: vc[i] = acc_vc; break;
		case PTX_OP_STAGE: vc[i] = VC_F32; break;
		case OP_CAST: vc[i] = ptx_dtypes[in->dt].vc; break;
		default:
			e = ewop(in->op);
			ASSERT(e);
			vc[i] = e->s32 && vc[in->a] == VC_S32 &&
			                (ir_ops[in->op].arity == 1 || vc[in->b] == VC_S32)
			            ? VC_S32
			            : VC_F32;
		}
	}
}

void
ptx_prog_emit(Ptx *p, const PtxEwProg *g, const PtxEnv *env, Reg *val, ValClass *vc)
{
	ptx_prog_classes(g, env->in_vc, env->acc_vc, vc);
	for (int i = 0; i < g->nins; i++) {
		const PtxIns *in = &g->ins[i];
		Reg a, b = -1, d;
		switch (in->op) {
		case OP_PARAM: val[i] = env->in[in->a]; continue;
		case PTX_OP_ACC: val[i] = env->acc; continue;
		case PTX_OP_STAGE: val[i] = env->stage[in->a]; continue;
		case OP_CONST:
			if (vc[i] == VC_S32) {
				val[i] = ptx_reg(p, RC_B32);
				ptx_emit(p, "mov.b32 %s, %lld;", R(val[i]), (long long)in->c);
			} else
				val[i] = ptx_imm_f32(p, in->c);
			continue;
		case OP_CAST:
			if (in->dt == DT_I32 && vc[in->a] == VC_S32) {
				val[i] = val[in->a];
				continue;
			}
			a = ptx_convert(p, val[in->a], vc[in->a], VC_F32);
			d = ptx_reg(p, vc[i] == VC_S32 ? RC_B32 : RC_F32);
			ptx_expand(p, casts[in->dt], d, a, -1);
			val[i] = d;
			continue;
		}
		const struct EwOp *e = ewop(in->op);
		const char *tpl = vc[i] == VC_S32 ? e->s32 : e->f32;
		a = ptx_convert(p, val[in->a], vc[in->a], vc[i]);
		if (in->op == OP_DIV && vc[i] == VC_F32 && g->ins[in->b].op == PTX_OP_STAGE && env->stage_rcp[g->ins[in->b].a]) {
			val[i] = ptx_reg(p, RC_F32); /* a row's divisor: its reciprocal, made once per row */
			ptx_emit(p, "mul.f32 %s, %s, %s;", R(val[i]), R(a), R(env->stage_rcp[g->ins[in->b].a]));
			continue;
		}
		if (ir_ops[in->op].arity == 2)
			b = ptx_convert(p, val[in->b], vc[in->b], vc[i]);
		d = ptx_reg(p, vc[i] == VC_S32 ? RC_B32 : RC_F32);
		ptx_expand(p, tpl, d, a, b);
		val[i] = d;
	}
}

/* The value a store of output po into a tensor of dtype dt takes: where
 * the program's last step is a cast of an f32 value to that 16-bit dtype,
 * the value before it -- the store's own conversion rounds to nearest as
 * the cast does, and rounding a value twice to the same format gives what
 * rounding it once does -- so each element skips the cast's round trip
 * (cvt.rn to 16 bits and back), which every row op's final cast to bf16
 * paid.  The cast is still emitted for any other reader (ptxas drops it
 * where none is left). */
int
ptx_store_src(const PtxEwProg *g, const PtxOut *po, DType dt, const ValClass *vc)
{
	const PtxIns *in = &g->ins[po->val];
	if (in->op == OP_CAST && in->dt == dt && ptx_dtypes[dt].size == 2 && in->a >= 0 && vc[in->a] == VC_F32)
		return in->a;
	return po->val;
}

/* What a caller may not get wrong without the PTX being wrong. */
const char *
ptx_prog_check(const PtxEwProg *g, int nin, int ntensor_out, bool acc, int nstage)
{
	static char why[160];
	if (g->nins < 0 || g->nins > PTX_MAX_INS || g->nout < 0 || g->nout > PTX_MAX_TENSORS)
		return "program too long";
	for (int i = 0; i < g->nins; i++) {
		const PtxIns *in = &g->ins[i];
		int ar;
		switch (in->op) {
		case OP_PARAM:
			if (in->a < 0 || in->a >= nin)
				return snprintf(why, sizeof why, "instruction %d reads input %d of %d", i, in->a, nin), why;
			continue;
		case OP_CONST: continue;
		case PTX_OP_ACC:
			if (!acc)
				return "'acc' has no meaning here";
			continue;
		case PTX_OP_STAGE:
			if (in->a < 0 || in->a >= nstage)
				return snprintf(why, sizeof why, "instruction %d reads stage %d of %d", i, in->a, nstage), why;
			continue;
		case OP_CAST:
			if ((int)in->dt < 0 || in->dt >= DT_COUNT)
				return "cast to an unknown dtype";
			ar = 1;
			break;
		default:
			if (in->op < 0 || in->op >= OP_COUNT || !ewop(in->op))
				return snprintf(why, sizeof why, "instruction %d: op %d is not elementwise", i, in->op), why;
			ar = ir_ops[in->op].arity;
		}
		if (in->a < 0 || in->a >= i || (ar == 2 && (in->b < 0 || in->b >= i)))
			return snprintf(why, sizeof why, "instruction %d reads a later value", i), why;
	}
	for (int j = 0; j < g->nout; j++)
		if (g->out[j].val < 0 || g->out[j].val >= g->nins || g->out[j].tensor < 0 ||
		    g->out[j].tensor >= ntensor_out)
			return snprintf(why, sizeof why, "output %d names a missing value or tensor", j), why;
	return NULL;
}
