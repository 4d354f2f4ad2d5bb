/* codegen/attn.c -- the fused attention kernel (FlashAttention-2's
 * forward pass): o = softmax(scale * q k^T, masked) v per head, with no
 * scores in HBM.
 *
 * Per block (64 query rows of one head) the CTA's 4 warps each own 16
 * rows.  Q is copied to shared memory once and kept in registers as mma
 * A fragments; K and V tiles of 64 keys stream through two cp.async
 * buffers each (K of tile t+1 is in flight while tile t's scores are
 * made, V of tile t+1 while its probabilities meet V).  Scores are
 * mma.sync.m16n8k16 accumulators in f32; the online softmax keeps each
 * row's running max and sum in registers (exp2 with log2(e) folded into
 * the scale), rescales the output accumulators when the max grows, and
 * hands the probabilities to the second mma without leaving registers
 * (the score accumulators' layout is the A fragment's).  A causal block
 * stops at the last tile its rows can see; only tiles that cross the
 * diagonal or the end of the keys are masked.
 *
 * Shared layout: rows of D*2 bytes; the 16-byte chunk c of row r sits at
 * chunk c ^ (r & 7), so the 8 rows one ldmatrix reads hit 8 distinct bank
 * groups.  Edges: query and key rows past the sequence load zeros
 * (cp.async with a source size of 0, from the tensor's base) and keys past
 * it are masked; stores are predicated.  Rows that see no key at all (a
 * negative diagonal) have l = 0: their normalised output is NaN, as the
 * softmax written out gives. */
#include "codegen.h"

#include <math.h>
#include <stdio.h>

enum { AT_BM = 64, AT_BN = 64, AT_WARPS = 4, AT_THREADS = 128 };
/* the Hopper form: a producer warpgroup and two consumer warpgroups of 64
 * query rows each (three where PtxAttnSpec.bm is 192); key tiles of 128
 * (see ptx_emit_attn_tma) */
enum { AW_BM = 128, AW_BN = 128, AW_WG = 128, AW_BOX = 64, AW_ALIGN = 1024, AW_SMEM_MAX = 227 * 1024 };
/* PtxAttnSpec.pingpong's default (aw_turn_wait): on with three consumer
 * warpgroups, off with two, as measured on one H100 (2026-12-07,
 * bench/results/2026-12-07-pingpong-h100.md): in turns, 192-row entries
 * at 16x4096x64 ran 1.6 % faster, 128-row ones 3-8 % slower */
enum { AW_PINGPONG_NWG = 3 };

#define R(r) ptx_rn(p, r)

const char *
ptx_attn_check(const PtxAttnSpec *s)
{
	if (s->dt != DT_BF16 && s->dt != DT_F16)
		return "attn: q, k, v and o must be bf16 or f16";
	if (s->d != 64 && s->d != 128)
		return "attn: the head dim must be 64 or 128";
	if (s->batch < 1 || s->sq < 1 || s->sk < 1 || s->batch > (1 << 30) || s->sq > (1 << 30) || s->sk > (1 << 30) ||
	    s->batch * s->sq > ((int64_t)1 << 31) || s->batch * s->sk > ((int64_t)1 << 31))
		return "attn: batch, sq and sk must be >= 1 and their products below 2^31 rows";
	if (!(s->scale > 0) || !isfinite(s->scale))
		return "attn: the scale must be positive and finite";
	if (s->softmax < 0 || s->softmax > 2)
		return "attn: the softmax form must be 0, 1 or 2";
	if (s->bm && s->bm != 128 && s->bm != 192)
		return "attn: an entry's query rows (bm) must be 128 or 192";
	if (s->bm == 192 && (!s->tma || s->d != 64))
		return "attn: 192-row entries are the Hopper form's (tma) at d = 64";
	if (s->bn && s->bn != 128 && s->bn != 176 && s->bn != 192)
		return "attn: a key tile (bn) must be 128, 176 or 192 keys";
	if (s->bn > 128 && (!s->tma || s->bm == 192))
		return "attn: 176- and 192-key tiles are the Hopper form's (tma) with 128-row entries";
	if (s->pingpong < -1 || s->pingpong > 1 || (s->pingpong > 0 && !s->tma))
		return "attn: pingpong is -1, 0 or 1, and 1 only in the Hopper form (tma)";
	if (s->causal && (s->diag <= -((int64_t)1 << 30) || s->diag >= (int64_t)1 << 30))
		return "attn: the causal diagonal is out of range";
	return NULL;
}

int
ptx_attn_rows(const PtxAttnSpec *s)
{
	return s->tma ? (s->bm ? s->bm : AW_BM) : AT_BM;
}

/* the Hopper form's keys a tile */
static int
aw_keys(const PtxAttnSpec *s)
{
	return s->bn ? s->bn : AW_BN;
}

int64_t
ptx_attn_blocks(const PtxAttnSpec *s, PtxBlock *out)
{
	int64_t tm = (s->sq + ptx_attn_rows(s) - 1) / ptx_attn_rows(s), n = 0;
	/* causal: the longest rows (the last tiles) first, so the short ones
	 * fill in at the end */
	for (int64_t z = 0; z < s->batch; z++)
		for (int64_t r = 0; r < tm; r++, n++)
			if (out)
				out[n] = (PtxBlock){.x = (uint32_t)(s->causal ? tm - 1 - r : r), .z = (uint32_t)z,
				                    .in_flag = PTX_NO_FLAG, .out_flag = PTX_NO_FLAG};
	return n;
}

typedef struct At {
	Ptx *p;
	const PtxAttnSpec *s;
	int D, pitch, tile;   /* head dim, shared row bytes, bytes of one 64-row tile */
	int cpr, rs, ni;      /* 16-byte chunks per row, rows between a thread's chunks, chunks per thread */
	Reg sq0, sk0, sv0;    /* shared: Q tile, K buffers, V buffers */
	Reg toff;             /* this thread's copy offset in a tile */
	Reg lr0;              /* this thread's first copied row */
	Reg qoff[8], koff[8], voff[8]; /* ldmatrix offsets per k step / d pair */
	Reg lane, warp;
	int nj;               /* n8 blocks of scores a row group holds: the key tile / 8 */
	Reg qf[8][4];         /* Q A fragments, per k16 step of D */
	Reg sacc[24][4];      /* scores: nj n8 blocks of a key tile (up to 192 keys) */
	Reg oacc[16][4];      /* output: D/8 n8 blocks */
	Reg pf[12][4];        /* probabilities as A fragments, per k16 step of the key tile */
	Reg mrow[2], lrow[2]; /* running max (log2 units) and partial sum, rows lane/4 and lane/4 + 8 */
} At;

static void
at_setup(At *a)
{
	Ptx *p = a->p;
	Reg t = ptx_reg(p, RC_B32), c = ptx_reg(p, RC_B32), lo = ptx_reg(p, RC_B32), hi = ptx_reg(p, RC_B32);
	a->D = (int)a->s->d;
	a->pitch = a->D * 2;
	a->tile = AT_BN * a->pitch;
	a->cpr = a->D / 8;
	a->rs = AT_THREADS / a->cpr;
	a->ni = AT_BN / a->rs;
	a->sq0 = ptx_reg(p, RC_B32);
	a->sk0 = ptx_reg(p, RC_B32);
	a->sv0 = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(a->sq0));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a->sk0), R(a->sq0), a->tile);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a->sv0), R(a->sk0), 2 * a->tile);
	/* copies: thread t takes chunk t % cpr of rows t / cpr + i * rs */
	a->lr0 = ptx_reg(p, RC_B32);
	a->toff = ptx_reg(p, RC_B32);
	ptx_emit(p, "div.u32 %s, %s, %d;", R(a->lr0), R(p->tid), a->cpr);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(c), R(p->tid), a->cpr);
	ptx_emit(p, "and.b32 %s, %s, 7;", R(t), R(a->lr0));
	ptx_emit(p, "xor.b32 %s, %s, %s;", R(t), R(t), R(c));
	ptx_emit(p, "shl.b32 %s, %s, 4;", R(t), R(t));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a->toff), R(a->lr0), a->pitch, R(t));
	/* ldmatrix lanes */
	a->lane = ptx_reg(p, RC_B32);
	a->warp = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(a->lane), R(p->tid));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(a->warp), R(p->tid));
	ptx_emit(p, "and.b32 %s, %s, 7;", R(lo), R(a->lane));
	for (int k = 0; k < a->D / 16; k++) {
		Reg r = ptx_reg(p, RC_B32), ch = ptx_reg(p, RC_B32);
		/* Q (A, row-major): row warp*16 + lane % 16, chunk 2k + lane / 16 */
		a->qoff[k] = ptx_reg(p, RC_B32);
		ptx_emit(p, "and.b32 %s, %s, 15;", R(r), R(a->lane));
		ptx_emit(p, "mad.lo.u32 %s, %s, 16, %s;", R(r), R(a->warp), R(r));
		ptx_emit(p, "shr.u32 %s, %s, 4;", R(hi), R(a->lane));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(ch), R(hi), 2 * k);
		ptx_emit(p, "xor.b32 %s, %s, %s;", R(ch), R(ch), R(lo));
		ptx_emit(p, "shl.b32 %s, %s, 4;", R(ch), R(ch));
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a->qoff[k]), R(r), a->pitch, R(ch));
		/* K (B, n = keys as rows): key (lane / 16) * 8 + lane % 8, chunk 2k + (lane / 8) % 2 */
		r = ptx_reg(p, RC_B32);
		ch = ptx_reg(p, RC_B32);
		a->koff[k] = ptx_reg(p, RC_B32);
		ptx_emit(p, "shr.u32 %s, %s, 4;", R(r), R(a->lane));
		ptx_emit(p, "mad.lo.u32 %s, %s, 8, %s;", R(r), R(r), R(lo));
		ptx_emit(p, "bfe.u32 %s, %s, 3, 1;", R(ch), R(a->lane));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(ch), R(ch), 2 * k);
		ptx_emit(p, "xor.b32 %s, %s, %s;", R(ch), R(ch), R(lo));
		ptx_emit(p, "shl.b32 %s, %s, 4;", R(ch), R(ch));
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a->koff[k]), R(r), a->pitch, R(ch));
		/* V (B of p @ v, k = keys as rows, .trans): key lane % 8 + ((lane / 8) % 2) * 8,
		 * chunk 2k + lane / 16 (k here: the pair of n8 blocks of D) */
		r = ptx_reg(p, RC_B32);
		ch = ptx_reg(p, RC_B32);
		a->voff[k] = ptx_reg(p, RC_B32);
		ptx_emit(p, "bfe.u32 %s, %s, 3, 1;", R(r), R(a->lane));
		ptx_emit(p, "mad.lo.u32 %s, %s, 8, %s;", R(r), R(r), R(lo));
		ptx_emit(p, "shr.u32 %s, %s, 4;", R(ch), R(a->lane));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(ch), R(ch), 2 * k);
		ptx_emit(p, "xor.b32 %s, %s, %s;", R(ch), R(ch), R(lo));
		ptx_emit(p, "shl.b32 %s, %s, 4;", R(ch), R(ch));
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a->voff[k]), R(r), a->pitch, R(ch));
	}
}

/* One 64-row tile of one head of a [heads * S][D] tensor into shared
 * memory at dst: the head starts at row hrow, the tile at row trow of the
 * head (the thread copies rows trow + lr0 + i * rs; those past S load
 * zeros, from the tensor's base). */
static void
at_copy(At *a, Reg base, Reg hrow, Reg trow, int64_t S, Reg dst)
{
	Ptx *p = a->p;
	Reg row = ptx_reg(p, RC_B32), rem = ptx_reg(p, RC_B32), g = ptx_reg(p, RC_B64), d = ptx_reg(p, RC_B32);
	Reg c = ptx_reg(p, RC_B32);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(row), R(trow), R(a->lr0));
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(rem), (long long)S, R(row)); /* rows left from the first */
	ptx_emit(p, "add.u32 %s, %s, %s;", R(row), R(row), R(hrow));
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(c), R(p->tid), a->cpr);
	ptx_mad_wide(p, g, row, a->pitch, base);
	ptx_mad_wide(p, g, c, 16, g);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(d), R(dst), R(a->toff));
	for (int i = 0; i < a->ni; i++) {
		Reg q = ptx_reg(p, RC_PRED), src = ptx_reg(p, RC_B64), n = ptx_reg(p, RC_B32);
		ptx_emit(p, "setp.gt.s32 %s, %s, %d;", R(q), R(rem), i * a->rs);
		ptx_emit(p, "add.u64 %s, %s, %lld;", R(src), R(g), (long long)i * a->rs * a->pitch);
		ptx_emit(p, "selp.b64 %s, %s, %s, %s;", R(src), R(src), R(base), R(q));
		ptx_emit(p, "selp.b32 %s, 16, 0, %s;", R(n), R(q));
		ptx_emit(p, "cp.async.cg.shared.global [%s+%d], [%s], 16, %s;", R(d), i * a->rs * a->pitch, R(src), R(n));
	}
}

static const char *
ty(const At *a)
{
	return a->s->dt == DT_BF16 ? "bf16" : "f16";
}

static void
mma(Ptx *p, const char *t, Reg *c, const Reg *x, Reg b0, Reg b1)
{
	ptx_emit(p,
	         "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, {%s, %s, %s, %s}, {%s, %s}, "
	         "{%s, %s, %s, %s};",
	         t, t, R(c[0]), R(c[1]), R(c[2]), R(c[3]), R(x[0]), R(x[1]), R(x[2]), R(x[3]), R(b0), R(b1), R(c[0]),
	         R(c[1]), R(c[2]), R(c[3]));
}

/* scores = Q K^T for the K buffer at kb */
static void
at_scores(At *a, Reg kb)
{
	Ptx *p = a->p;
	for (int j = 0; j < 8; j++)
		for (int e = 0; e < 4; e++)
			ptx_emit(p, "mov.f32 %s, 0f00000000;", R(a->sacc[j][e]));
	for (int k = 0; k < a->D / 16; k++) {
		Reg ad = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.u32 %s, %s, %s;", R(ad), R(kb), R(a->koff[k]));
		for (int jp = 0; jp < 4; jp++) {
			Reg b[4];
			for (int e = 0; e < 4; e++)
				b[e] = ptx_reg(p, RC_B32);
			ptx_emit(p, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d];", R(b[0]), R(b[1]),
			         R(b[2]), R(b[3]), R(ad), jp * 16 * a->pitch);
			mma(p, ty(a), a->sacc[2 * jp], a->qf[k], b[0], b[1]);
			mma(p, ty(a), a->sacc[2 * jp + 1], a->qf[k], b[2], b[3]);
		}
	}
}

/* Masks the scores of key tile n0 (a register) where a key is past the
 * keys or, causal, past its row's diagonal: -inf. */
static void
at_mask(At *a, Reg n0, Reg m0)
{
	Ptx *p = a->p;
	const PtxAttnSpec *s = a->s;
	Reg c0 = ptx_reg(p, RC_B32), row = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 3;", R(c0), R(a->lane));
	ptx_emit(p, "shl.b32 %s, %s, 1;", R(c0), R(c0));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(c0), R(c0), R(n0)); /* this thread's first key */
	ptx_emit(p, "shr.u32 %s, %s, 2;", R(row), R(a->lane));
	ptx_emit(p, "mad.lo.u32 %s, %s, 16, %s;", R(row), R(a->warp), R(row));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(row), R(row), R(m0));
	for (int h = 0; h < 2; h++) {
		/* rel: the last key this row sees, less the thread's first key */
		Reg rel = ptx_reg(p, RC_B32);
		ptx_emit(p, "sub.s32 %s, %lld, %s;", R(rel), (long long)(s->sk - 1), R(c0));
		if (s->causal) {
			Reg lim = ptx_reg(p, RC_B32);
			ptx_emit(p, "add.s32 %s, %s, %lld;", R(lim), R(row), (long long)(s->diag + 8 * h));
			ptx_emit(p, "sub.s32 %s, %s, %s;", R(lim), R(lim), R(c0));
			ptx_emit(p, "min.s32 %s, %s, %s;", R(rel), R(rel), R(lim));
		}
		for (int j = 0; j < a->nj; j++)
			for (int e = 0; e < 2; e++) {
				Reg q = ptx_reg(p, RC_PRED);
				Reg *x = &a->sacc[j][2 * h + e];
				ptx_emit(p, "setp.lt.s32 %s, %s, %d;", R(q), R(rel), 8 * j + e);
				ptx_emit(p, "@%s mov.f32 %s, 0fFF800000;", R(q), R(*x));
			}
	}
}

/* Masks key tile t (of bn keys) of the block whose first query row is m0
 * where it crosses the end of the keys or, causal, some row's diagonal
 * (at_mask then decides per element); other tiles are left alone. */
static void
at_mask_tile(At *a, Reg t, Reg m0, int bn)
{
	Ptx *p = a->p;
	const PtxAttnSpec *s = a->s;
	int nomask = ptx_label(p);
	Reg n0 = ptx_reg(p, RC_B32), need = ptx_reg(p, RC_PRED), x = ptx_reg(p, RC_B32);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(n0), R(t), bn);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(x), R(n0), bn);
	ptx_emit(p, "setp.gt.u32 %s, %s, %lld;", R(need), R(x), (long long)s->sk);
	if (s->causal) {
		Reg y = ptx_reg(p, RC_B32), q2 = ptx_reg(p, RC_PRED);
		ptx_emit(p, "add.s32 %s, %s, %lld;", R(y), R(m0), (long long)(s->diag + 1 - bn));
		ptx_emit(p, "setp.gt.s32 %s, %s, %s;", R(q2), R(n0), R(y));
		ptx_emit(p, "or.pred %s, %s, %s;", R(need), R(need), R(q2));
	}
	ptx_emit(p, "@!%s bra $L%d;", R(need), nomask);
	at_mask(a, n0, m0);
	ptx_place(p, nomask);
}

static Reg
quad_reduce(Ptx *p, Reg x, const char *op)
{
	for (int sh = 1; sh <= 2; sh *= 2) {
		Reg t = ptx_reg(p, RC_F32);
		ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 31, 0xffffffff;", R(t), R(x), sh);
		ptx_emit(p, "%s.f32 %s, %s, %s;", op, R(x), R(x), R(t));
	}
	return x;
}

/* The online softmax of one tile's scores, in three steps so the Hopper
 * form can run the first while the previous tile's P V is in flight:
 * at_softmax_rows scales the scores, takes each row's new running max,
 * the factor alpha[h] by which what was summed before shrinks, the
 * exponentials and their sum; at_rescale multiplies the output
 * accumulators by alpha (once nothing is adding into them); at_pack makes
 * the probabilities A fragments.  The forms (PtxAttnSpec.softmax): 1
 * scales every score, then takes the max and the sum each in one chain
 * through the row's 2 nj elements; 2, since the scale is positive
 * (max(x) * c = max(x * c), rounding included), takes the max of the raw
 * scores, scaled once, and each exponent as one fma of the raw score
 * (x * c - m), the max and the sum over AT_PARTS independent partials: a
 * multiply less an element and chains AT_PARTS times shorter, which the
 * two consumer warps an SM sub-partition holds cannot otherwise hide.
 * The default (softmax 0) is form 2, faster on an H100 at every size
 * timed but one run's causal one (bench/results/2026-12-07-softmax-h100.md). */
enum { AT_PARTS = 4 };

static bool
at_folded(const At *a)
{
	return a->s->softmax != 1;
}

/* acc[0] op= acc[1] ... acc[parts - 1], pairwise */
static void
at_parts_fold(Ptx *p, const char *op, const Reg *acc, int parts)
{
	for (int w = 1; w < parts; w *= 2)
		for (int k = 0; k + w < parts; k += 2 * w)
			ptx_emit(p, "%s.f32 %s, %s, %s;", op, R(acc[k]), R(acc[k]), R(acc[k + w]));
}

/* partials acc[1 ..] from v; acc[0] is the caller's */
static int
at_parts(At *a, Reg *acc, const char *v)
{
	Ptx *p = a->p;
	int parts = at_folded(a) ? AT_PARTS : 1;
	for (int k = 1; k < parts; k++) {
		acc[k] = ptx_reg(p, RC_F32);
		ptx_emit(p, "mov.f32 %s, %s;", R(acc[k]), v);
	}
	return parts;
}

/* the row half h's new running max (log2 units) into mt */
static void
at_row_max(At *a, int h, Reg sc, Reg mt)
{
	Ptx *p = a->p;
	Reg acc[AT_PARTS] = {mt};
	bool fold = at_folded(a);
	int parts = at_parts(a, acc, "0fFF800000"), n = 0;
	ptx_emit(p, fold ? "mov.f32 %s, 0fFF800000;" : "mov.f32 %s, %s;", R(mt), R(a->mrow[h]));
	for (int j = 0; j < a->nj; j++)
		for (int e = 0; e < 2; e++, n++) {
			Reg *x = &a->sacc[j][2 * h + e];
			if (!fold)
				ptx_emit(p, "mul.f32 %s, %s, %s;", R(*x), R(*x), R(sc));
			ptx_emit(p, "max.f32 %s, %s, %s;", R(acc[n % parts]), R(acc[n % parts]), R(*x));
		}
	at_parts_fold(p, "max", acc, parts);
	if (fold) {
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(mt), R(mt), R(sc));
		ptx_emit(p, "max.f32 %s, %s, %s;", R(mt), R(mt), R(a->mrow[h]));
	}
}

/* the row half h's exponentials, exp2(x - mu) of the scaled scores, and
 * their sum into sum */
static void
at_row_exp(At *a, int h, Reg sc, Reg mu, Reg sum)
{
	Ptx *p = a->p;
	Reg acc[AT_PARTS] = {sum}, nmu = 0;
	bool fold = at_folded(a);
	int parts = at_parts(a, acc, "0f00000000"), n = 0;
	ptx_emit(p, "mov.f32 %s, 0f00000000;", R(sum));
	if (fold) {
		nmu = ptx_reg(p, RC_F32);
		ptx_emit(p, "neg.f32 %s, %s;", R(nmu), R(mu));
	}
	for (int j = 0; j < a->nj; j++)
		for (int e = 0; e < 2; e++, n++) {
			Reg *x = &a->sacc[j][2 * h + e];
			if (fold)
				ptx_emit(p, "fma.rn.f32 %s, %s, %s, %s;", R(*x), R(*x), R(sc), R(nmu));
			else
				ptx_emit(p, "sub.f32 %s, %s, %s;", R(*x), R(*x), R(mu));
			ptx_emit(p, "ex2.approx.ftz.f32 %s, %s;", R(*x), R(*x));
			ptx_emit(p, "add.f32 %s, %s, %s;", R(acc[n % parts]), R(acc[n % parts]), R(*x));
		}
	at_parts_fold(p, "add", acc, parts);
}

static void
at_softmax_rows(At *a, Reg *alpha)
{
	Ptx *p = a->p;
	Reg sc = ptx_imm_f32(p, a->s->scale * 1.4426950408889634);
	for (int h = 0; h < 2; h++) {
		Reg mt = ptx_reg(p, RC_F32), mu = ptx_reg(p, RC_F32), al = alpha[h], q = ptx_reg(p, RC_PRED);
		Reg sum = ptx_reg(p, RC_F32);
		at_row_max(a, h, sc, mt);
		quad_reduce(p, mt, "max");
		/* a row that has seen only masked keys keeps -inf: subtract 0 */
		ptx_emit(p, "setp.eq.f32 %s, %s, 0fFF800000;", R(q), R(mt));
		ptx_emit(p, "selp.f32 %s, 0f00000000, %s, %s;", R(mu), R(mt), R(q));
		ptx_emit(p, "sub.f32 %s, %s, %s;", R(al), R(a->mrow[h]), R(mu));
		ptx_emit(p, "ex2.approx.ftz.f32 %s, %s;", R(al), R(al));
		ptx_emit(p, "mov.f32 %s, %s;", R(a->mrow[h]), R(mt));
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(a->lrow[h]), R(a->lrow[h]), R(al));
		at_row_exp(a, h, sc, mu, sum);
		ptx_emit(p, "add.f32 %s, %s, %s;", R(a->lrow[h]), R(a->lrow[h]), R(sum));
	}
}

static void
at_rescale(At *a, const Reg *alpha)
{
	Ptx *p = a->p;
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < a->D / 8; j++)
			for (int e = 0; e < 2; e++)
				ptx_emit(p, "mul.f32 %s, %s, %s;", R(a->oacc[j][2 * h + e]), R(a->oacc[j][2 * h + e]), R(alpha[h]));
}

/* k16 step k of p @ v: score blocks 2k and 2k + 1, rows r and r + 8 */
static void
at_pack(At *a)
{
	Ptx *p = a->p;
	for (int k = 0; k < a->nj / 2; k++)
		for (int e = 0; e < 4; e++) {
			Reg *x = a->sacc[2 * k + e / 2];
			int h = e % 2;
			ptx_emit(p, "cvt.rn.%sx2.f32 %s, %s, %s;", ty(a), R(a->pf[k][e]), R(x[2 * h + 1]), R(x[2 * h]));
		}
}

static void
at_softmax(At *a)
{
	Reg alpha[2] = {ptx_reg(a->p, RC_F32), ptx_reg(a->p, RC_F32)};
	at_softmax_rows(a, alpha);
	at_rescale(a, alpha);
	at_pack(a);
}

/* o += p @ v for the V buffer at vb */
static void
at_pv(At *a, Reg vb)
{
	Ptx *p = a->p;
	for (int dp = 0; dp < a->D / 16; dp++) {
		Reg ad = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.u32 %s, %s, %s;", R(ad), R(vb), R(a->voff[dp]));
		for (int k = 0; k < 4; k++) {
			Reg b[4];
			for (int e = 0; e < 4; e++)
				b[e] = ptx_reg(p, RC_B32);
			ptx_emit(p, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%s, %s, %s, %s}, [%s+%d];", R(b[0]),
			         R(b[1]), R(b[2]), R(b[3]), R(ad), k * 16 * a->pitch);
			mma(p, ty(a), a->oacc[2 * dp], a->pf[k], b[0], b[1]);
			mma(p, ty(a), a->oacc[2 * dp + 1], a->pf[k], b[2], b[3]);
		}
	}
}

/* rows r (h = 0) and r + 8 (h = 1) of o, and of m and l */
static void
at_store(At *a, Reg m0)
{
	Ptx *p = a->p;
	const PtxAttnSpec *s = a->s;
	Reg row = ptx_reg(p, RC_B32), c0 = ptx_reg(p, RC_B32), zrow = ptx_reg(p, RC_B32);
	ptx_emit(p, "shr.u32 %s, %s, 2;", R(row), R(a->lane));
	ptx_emit(p, "mad.lo.u32 %s, %s, 16, %s;", R(row), R(a->warp), R(row));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(row), R(row), R(m0));
	ptx_emit(p, "and.b32 %s, %s, 3;", R(c0), R(a->lane));
	ptx_emit(p, "shl.b32 %s, %s, 1;", R(c0), R(c0));
	for (int h = 0; h < 2; h++) {
		Reg r = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), inv = ptx_reg(p, RC_F32), ad = ptx_reg(p, RC_B64);
		Reg q4 = ptx_reg(p, RC_PRED);
		int skip = ptx_label(p);
		quad_reduce(p, a->lrow[h], "add");
		ptx_emit(p, "add.u32 %s, %s, %d;", R(r), R(row), 8 * h);
		ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(r), (long long)s->sq);
		ptx_emit(p, "@%s bra $L%d;", R(q), skip);
		if (s->normed)
			ptx_emit(p, "rcp.approx.ftz.f32 %s, %s;", R(inv), R(a->lrow[h]));
		else
			ptx_emit(p, "mov.f32 %s, 0f3F800000;", R(inv));
		ptx_emit(p, "mad.lo.u32 %s, %s, %lld, %s;", R(zrow), R(p->z), (long long)s->sq, R(r));
		ptx_mad_wide(p, ad, zrow, a->pitch, p->tensor[3]);
		ptx_mad_wide(p, ad, c0, 2, ad);
		for (int j = 0; j < a->D / 8; j++) {
			Reg x0 = ptx_reg(p, RC_F32), x1 = ptx_reg(p, RC_F32), w = ptx_reg(p, RC_B32);
			ptx_emit(p, "mul.f32 %s, %s, %s;", R(x0), R(a->oacc[j][2 * h]), R(inv));
			ptx_emit(p, "mul.f32 %s, %s, %s;", R(x1), R(a->oacc[j][2 * h + 1]), R(inv));
			ptx_emit(p, "cvt.rn.%sx2.f32 %s, %s, %s;", ty(a), R(w), R(x1), R(x0));
			ptx_emit(p, "st.global.b32 [%s+%d], %s;", R(ad), j * 16, R(w));
		}
		if (s->stats) {
			Reg mn = ptx_reg(p, RC_F32), ma = ptx_reg(p, RC_B64), la = ptx_reg(p, RC_B64);
			ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q4), R(c0));
			ptx_emit(p, "@%s bra $L%d;", R(q4), skip);
			/* back to natural units: the region's max is of scale * q k */
			ptx_emit(p, "mul.f32 %s, %s, 0f3F317218;", R(mn), R(a->mrow[h]));
			ptx_mad_wide(p, ma, zrow, 4, p->tensor[4]);
			ptx_mad_wide(p, la, zrow, 4, p->tensor[5]);
			ptx_emit(p, "st.global.f32 [%s], %s;", R(ma), R(mn));
			ptx_emit(p, "st.global.f32 [%s], %s;", R(la), R(a->lrow[h]));
		}
		ptx_place(p, skip);
	}
}

static void
at_block(At *a)
{
	Ptx *p = a->p;
	const PtxAttnSpec *s = a->s;
	Reg m0 = ptx_reg(p, RC_B32), zq = ptx_reg(p, RC_B32), zero = ptx_reg(p, RC_B32), krow = ptx_reg(p, RC_B32), nkt = ptx_reg(p, RC_B32);
	Reg t = ptx_reg(p, RC_B32), kb = ptx_reg(p, RC_B32), vb = ptx_reg(p, RC_B32);
	Reg q = ptx_reg(p, RC_PRED), nxt = ptx_reg(p, RC_B32), kr = ptx_reg(p, RC_B32), ob = ptx_reg(p, RC_B32);
	int64_t ntiles = (s->sk + AT_BN - 1) / AT_BN;
	int loop = ptx_label(p), done = ptx_label(p), skipk = ptx_label(p), skipv = ptx_label(p);

	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(m0), R(p->x), AT_BM);
	ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(zq), R(p->z), (long long)s->sq);
	ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(krow), R(p->z), (long long)s->sk);
	/* key tiles this block sees: all, or up to the one holding its last
	 * row's diagonal */
	ptx_emit(p, "mov.u32 %s, %lld;", R(nkt), (long long)ntiles);
	if (s->causal) {
		Reg last = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.s32 %s, %s, %lld;", R(last), R(m0), (long long)(s->diag + AT_BM - 1 + AT_BN));
		ptx_emit(p, "max.s32 %s, %s, 0;", R(last), R(last));
		ptx_emit(p, "div.s32 %s, %s, %d;", R(last), R(last), AT_BN);
		ptx_emit(p, "min.s32 %s, %s, %s;", R(nkt), R(nkt), R(last));
	}
	for (int h = 0; h < 2; h++) {
		ptx_emit(p, "mov.f32 %s, 0fFF800000;", R(a->mrow[h]));
		ptx_emit(p, "mov.f32 %s, 0f00000000;", R(a->lrow[h]));
	}
	for (int j = 0; j < a->D / 8; j++)
		for (int e = 0; e < 4; e++)
			ptx_emit(p, "mov.f32 %s, 0f00000000;", R(a->oacc[j][e]));
	/* groups: {Q, K0}, {V0}, then per tile {K t+1}, {V t+1} (empty past the last) */
	ptx_emit(p, "mov.u32 %s, 0;", R(zero));
	at_copy(a, p->tensor[0], zq, m0, s->sq, a->sq0);
	at_copy(a, p->tensor[1], krow, zero, s->sk, a->sk0);
	ptx_emit(p, "cp.async.commit_group;");
	at_copy(a, p->tensor[2], krow, zero, s->sk, a->sv0);
	ptx_emit(p, "cp.async.commit_group;");
	ptx_emit(p, "mov.u32 %s, 0;", R(t));
	ptx_emit(p, "mov.u32 %s, 0;", R(ob));
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(q), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	ptx_place(p, loop);
	ptx_emit(p, "cp.async.wait_group 1;");
	ptx_emit(p, "bar.sync 0;");
	{
		int noq = ptx_label(p);
		ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(t));
		ptx_emit(p, "@%s bra $L%d;", R(q), noq);
		for (int k = 0; k < a->D / 16; k++) {
			Reg ad = ptx_reg(p, RC_B32);
			ptx_emit(p, "add.u32 %s, %s, %s;", R(ad), R(a->sq0), R(a->qoff[k]));
			ptx_emit(p, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s];", R(a->qf[k][0]),
			         R(a->qf[k][1]), R(a->qf[k][2]), R(a->qf[k][3]), R(ad));
		}
		ptx_place(p, noq);
	}
	/* this tile's buffers (ob: 0 or one tile's bytes) and the next tile's copy of K */
	ptx_emit(p, "add.u32 %s, %s, %s;", R(kb), R(a->sk0), R(ob));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(vb), R(a->sv0), R(ob));
	ptx_emit(p, "xor.b32 %s, %s, %d;", R(nxt), R(ob), a->tile);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(kr), R(t));
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(kr), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), skipk);
	{
		Reg dst = ptx_reg(p, RC_B32), rk = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.u32 %s, %s, %s;", R(dst), R(a->sk0), R(nxt));
		ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(rk), R(kr), AT_BN);
		at_copy(a, p->tensor[1], krow, rk, s->sk, dst);
	}
	ptx_place(p, skipk);
	ptx_emit(p, "cp.async.commit_group;");
	at_scores(a, kb);
	at_mask_tile(a, t, m0, AT_BN);
	at_softmax(a);
	ptx_emit(p, "cp.async.wait_group 1;");
	ptx_emit(p, "bar.sync 0;");
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(kr), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), skipv);
	{
		Reg dst = ptx_reg(p, RC_B32), rk = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.u32 %s, %s, %s;", R(dst), R(a->sv0), R(nxt));
		ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(rk), R(kr), AT_BN);
		at_copy(a, p->tensor[2], krow, rk, s->sk, dst);
	}
	ptx_place(p, skipv);
	ptx_emit(p, "cp.async.commit_group;");
	at_pv(a, vb);
	ptx_emit(p, "mov.u32 %s, %s;", R(ob), R(nxt));
	ptx_emit(p, "mov.u32 %s, %s;", R(t), R(kr));
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(t), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), loop);
	ptx_place(p, done);
	ptx_emit(p, "cp.async.wait_group 0;");
	at_store(a, m0);
}

/* ---- the Hopper form (PtxAttnSpec.tma): FlashAttention-3's structure ----
 *
 * A CTA is one producer warpgroup and two consumer warpgroups; an entry is
 * 128 query rows of one head, consumer warpgroup g owning rows 64 g ..
 * 64 g + 63.  The producer's thread 0 walks the CTA's entries: it waits
 * for the entry's input flag, loads the entry's Q tile by TMA once it is
 * free, then streams the key tiles it can see (128 keys, or
 * PtxAttnSpec.bn) through rings of stages, K and V on barriers of their
 * own so the scores can start before V has landed.  Consumers: S = Q K^T by wgmma m64n128k16
 * with both operands in shared memory (K is the B operand K-major: its
 * rows are keys, 128 bytes of d per swizzle row), the online softmax on
 * the accumulators in registers (their layout is mma.sync's m16n8 one, so
 * at_mask, at_softmax and at_store serve both forms), then O += P V with
 * P from registers as the A operand and V the B operand N-major (rows are
 * keys, d contiguous: trans-b, as the matmul's B).  K and V have rings
 * of their own (aw_producer): K's stage is given back after the scores,
 * V's after P V, Q after the entry's last S.  All tensors are [heads][S][D]
 * with 3-D tensor maps {D, S, heads}, boxes of 64 d (the 128-byte
 * swizzle), so rows past S in a head load zeros, never the next head's.
 * A flag wait that times out: the producer writes the entry's number + 1
 * into the quit word and arrives on the Q barrier without data; the
 * consumers see their own entry's number there and leave (as the matmul,
 * codegen/wgmma.c). */

typedef struct Aw {
	int bm, nwg;       /* an entry's query rows; consumer warpgroups, 64 rows each */
	int bn;            /* keys a K or V tile */
	int nbox;          /* 64-d boxes of a row: D / 64 */
	int stages;
	int qbytes;        /* the Q tile: nbox boxes of bm rows x 128 B */
	int kvbytes;       /* one K (or V) tile: nbox boxes of bn keys x 128 B */
	int stage;         /* K then V */
	int bars;          /* fullQ, emptyQ, fullK[S], fullV[S], emptyK[S], emptyV[S], quit word */
	bool pingpong;     /* the consumers' wgmma in turns (aw_turn_wait) */
	bool lag;          /* V fed a tile behind K, K's stage given back after the scores (aw_producer) */
	Reg base;
} Aw;

enum { AWB_FULLQ, AWB_EMPTYQ, AWB_FULLK, AWB_FULLV, AWB_EMPTYK, AWB_EMPTYV, AWB_QUIT };

static int aw_smem(const Aw *w);

static void
aw_setup(Aw *w, const PtxAttnSpec *s)
{
	w->bm = ptx_attn_rows(s);
	w->nwg = w->bm / 64;
	w->nbox = (int)s->d / AW_BOX;
	w->qbytes = w->nbox * w->bm * 128;
	w->bn = aw_keys(s);
	w->kvbytes = w->nbox * w->bn * 128;
	w->stage = 2 * w->kvbytes;
	w->pingpong = s->pingpong ? s->pingpong > 0 : w->nwg == AW_PINGPONG_NWG;
	/* three stages where they fit (at d = 128: 32 KiB of Q + 3 x 64 KiB
	 * of 128-key tiles), else two (176 keys: 32 + 2 x 88) */
	for (w->stages = 3;; w->stages--) {
		w->lag = w->stages == 2;
		w->bars = w->qbytes + w->stages * w->stage;
		if (w->stages == 2 || aw_smem(w) <= AW_SMEM_MAX)
			break;
	}
}

static int
aw_off(const Aw *w, int kind)
{
	int S = w->stages;
	static const int per[] = {0, 0, 0, 1, 2, 3, 4};
	/* without Aw.lag no emptyK: emptyV and the quit word a ring lower */
	int ring = per[kind] - (!w->lag && kind > AWB_EMPTYK);
	return w->bars + (kind >= AWB_FULLK ? 16 + 8 * S * ring : 8 * kind);
}

static int
aw_threads(const Aw *w)
{
	return (1 + w->nwg) * AW_WG;
}

/* setmaxnreg's registers a thread: the producer's, or the consumers'.  The
 * kernel starts with 65536 / threads each (168 or 128), and after the
 * moves 128 x producer + 128 x nwg x consumer must fit the 64 Ki: two
 * consumer warpgroups take 232 (40 left to the producer), 240 with
 * 192-key tiles (24; at d = 128 their 96 + 48 + 64 registers of scores,
 * P and O spilled at 232), three 160 (24; at d = 64 a thread's
 * accumulators are 64 + 32 registers). */
static int
aw_regs(const Aw *w, bool consumer)
{
	if (w->nwg == 2 && w->bn == 192)
		return consumer ? 240 : 24;
	if (w->nwg == 2)
		return consumer ? 232 : 40;
	return consumer ? 160 : 24;
}

static int
aw_smem(const Aw *w)
{
	return aw_off(w, AWB_QUIT) + 16 + AW_ALIGN;
}

/* d = the barrier of a kind for stage i (a register, or -1 for none) */
static void
aw_bar(Ptx *p, const Aw *w, Reg d, int kind, Reg i)
{
	if (i >= 0)
		ptx_emit(p, "mad.lo.u32 %s, %s, 8, %s;", R(d), R(i), R(w->base));
	else
		ptx_emit(p, "mov.u32 %s, %s;", R(d), R(w->base));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(d), R(d), aw_off(w, kind));
}

static void
aw_next(Ptx *p, const Aw *w, Reg stage, Reg phase)
{
	Reg q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(stage), R(stage));
	ptx_emit(p, "setp.eq.u32 %s, %s, %d;", R(q), R(stage), w->stages);
	ptx_emit(p, "@%s mov.u32 %s, 0;", R(q), R(stage));
	ptx_emit(p, "@%s xor.b32 %s, %s, 1;", R(q), R(phase), R(phase));
}

/* The entry's first query row and the key tiles it sees (causal: up to the
 * one holding its last row's diagonal); the producer and the consumers
 * count alike. */
static void
aw_entry(Ptx *p, const PtxAttnSpec *s, Reg m0, Reg nkt)
{
	int bn = aw_keys(s);
	int64_t ntiles = (s->sk + bn - 1) / bn;
	ptx_emit(p, "ld.global.nc.v2.u32 {%s, %s}, [%s];", R(p->x), R(p->y), R(p->entry));
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+8];", R(p->z), R(p->entry));
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(m0), R(p->x), ptx_attn_rows(s));
	ptx_emit(p, "mov.u32 %s, %lld;", R(nkt), (long long)ntiles);
	if (s->causal) {
		Reg last = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.s32 %s, %s, %lld;", R(last), R(m0), (long long)(s->diag + ptx_attn_rows(s) - 1 + bn));
		ptx_emit(p, "max.s32 %s, %s, 0;", R(last), R(last));
		ptx_emit(p, "div.s32 %s, %s, %d;", R(last), R(last), bn);
		ptx_emit(p, "min.s32 %s, %s, %s;", R(nkt), R(nkt), R(last));
	}
}

/* One tile of nbox TMA boxes {64 d, rows} of tensor map tm at row r0 of
 * head z into shared memory at dst, on barrier bar, armed with the tile's
 * bytes first (st: the arrival's state). */
static void
aw_load(Ptx *p, const Aw *w, Reg tm, Reg dst, Reg r0, Reg bar, int rows, Reg st)
{
	Reg d = ptx_reg(p, RC_B32), c = ptx_reg(p, RC_B32);
	ptx_emit(p, "mbarrier.arrive.expect_tx.shared::cta.b64 %s, [%s], %d;", R(st), R(bar), w->nbox * rows * 128);
	for (int b = 0; b < w->nbox; b++) {
		ptx_emit(p, "add.u32 %s, %s, %d;", R(d), R(dst), b * rows * 128);
		ptx_emit(p, "mov.u32 %s, %d;", R(c), b * AW_BOX);
		ptx_emit(p, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], [%s];",
		         R(d), R(tm), R(c), R(r0), R(p->z), R(bar));
	}
}

/* The producer's place in one of the rings (K or V): the stage the next
 * tile goes to and its phase. */
typedef struct AwFeed {
	int full, empty; /* barrier kinds */
	Reg tm, stage, phase;
	int off;         /* the tile's offset in its stage: 0 for K, kvbytes for V */
} AwFeed;

/* Tile t of ring f into its next stage, once the consumers have given the
 * stage back (a fresh barrier counts as given back: parity of the round
 * before). */
static void
aw_feed(Ptx *p, const Aw *w, AwFeed *f, Reg t)
{
	Reg ph = ptx_reg(p, RC_B32), bar = ptx_reg(p, RC_B32), dst = ptx_reg(p, RC_B32), r0 = ptx_reg(p, RC_B32);
	Reg st = ptx_reg(p, RC_B64);
	ptx_emit(p, "xor.b32 %s, %s, 1;", R(ph), R(f->phase));
	aw_bar(p, w, bar, f->empty, f->stage);
	ptx_mbar_wait(p, bar, ph);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(dst), R(f->stage), w->stage, R(w->base));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(dst), R(dst), w->qbytes + f->off);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(r0), R(t), w->bn);
	aw_bar(p, w, bar, f->full, f->stage);
	aw_load(p, w, f->tm, dst, r0, bar, w->bn, st);
	aw_next(p, w, f->stage, f->phase);
}

/* An entry's K and V tiles with V a tile behind (Aw.lag): K0, K1, V0, K2,
 * V1 ... V(n-1); t is 0, n = nkt > 0. */
static void
aw_feed_lag(Ptx *p, const Aw *w, AwFeed *fk, AwFeed *fv, Reg t, Reg nkt)
{
	int kloop = ptx_label(p), vlast = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), tv = ptx_reg(p, RC_B32);
	aw_feed(p, w, fk, t);
	ptx_emit(p, "mov.u32 %s, 1;", R(t));
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(t), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), vlast);
	ptx_place(p, kloop);
	aw_feed(p, w, fk, t);
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(tv), R(t));
	aw_feed(p, w, fv, tv);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(t), R(t));
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(t), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), kloop);
	ptx_place(p, vlast);
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(tv), R(nkt));
	aw_feed(p, w, fv, tv);
}

/* The producer's thread: per entry Q, then the K and V tiles.  With two
 * stages (Aw.lag: 176-key tiles at d = 128) V goes a tile behind K (K0,
 * K1, V0, K2, V1 ... V(n-1)), the order the consumers use them in (tile
 * t's scores beside tile t - 1's P V), so each ring's stage is waited for
 * only when its own tile is: K comes back to it after the scores, V after
 * P V; K and V of a stage together, held from a tile's scores to its
 * P V, took 0.1309 ms at 32x2048x128 against 0.1112 so.  With three, K
 * and V of tile t go in together once the stage's V is given back, which
 * was 2-4 % faster causal on one H100 (0.941 against 0.977 ms at
 * 32x8192x128; bench/results/2026-12-07-pingpong-h100.md). */
static void
aw_producer(At *a, const Aw *w)
{
	Ptx *p = a->p;
	const PtxAttnSpec *s = a->s;
	int loop = ptx_label(p), done = ptx_label(p), quit_l = ptx_label(p), kloop = ptx_label(p), nokv = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), quit = ptx_reg(p, RC_PRED), n = ptx_reg(p, RC_B32), pc = ptx_reg(p, RC_B32);
	Reg tm[3], m0 = ptx_reg(p, RC_B32), nkt = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_B32), r0 = ptx_reg(p, RC_B32);
	Reg stage = ptx_reg(p, RC_B32), phase = ptx_reg(p, RC_B32), ph = ptx_reg(p, RC_B32), bar = ptx_reg(p, RC_B32);
	Reg dst = ptx_reg(p, RC_B32), st = ptx_reg(p, RC_B64), qa = ptx_reg(p, RC_B32);
	AwFeed fk = {.full = AWB_FULLK, .empty = AWB_EMPTYK, .stage = stage, .phase = phase, .off = 0};
	AwFeed fv = {.full = AWB_FULLV, .empty = AWB_EMPTYV, .stage = -1, .phase = -1, .off = w->kvbytes};

	for (int i = 0; i < 3; i++) {
		tm[i] = ptx_reg(p, RC_B64);
		ptx_emit(p, "mov.b64 %s, tm%d;", R(tm[i]), i);
		ptx_emit(p, "cvta.param.u64 %s, %s;", R(tm[i]), R(tm[i]));
		ptx_emit(p, "prefetch.tensormap [%s];", R(tm[i]));
	}
	ptx_emit(p, "mov.u32 %s, 0;", R(pc));
	ptx_emit(p, "mov.u32 %s, 0;", R(stage));
	ptx_emit(p, "mov.u32 %s, 0;", R(phase));
	fk.tm = tm[1];
	fv.tm = tm[2];
	if (w->lag) { /* V's ring: its own stage and phase */
		fv.stage = ptx_reg(p, RC_B32);
		fv.phase = ptx_reg(p, RC_B32);
		ptx_emit(p, "mov.u32 %s, 0;", R(fv.stage));
		ptx_emit(p, "mov.u32 %s, 0;", R(fv.phase));
	}
	ptx_place(p, loop);
	ptx_wg_producer_entry(p, q, quit, done, quit_l);
	aw_entry(p, s, m0, nkt);
	/* Q, once the consumers are done with the last entry's (a fresh barrier
	 * counts as released: parity of the entry before) */
	ptx_emit(p, "and.b32 %s, %s, 1;", R(ph), R(pc));
	ptx_emit(p, "xor.b32 %s, %s, 1;", R(ph), R(ph));
	aw_bar(p, w, bar, AWB_EMPTYQ, -1);
	ptx_mbar_wait(p, bar, ph);
	aw_bar(p, w, bar, AWB_FULLQ, -1);
	aw_load(p, w, tm[0], w->base, m0, bar, w->bm, st);
	ptx_emit(p, "mov.u32 %s, 0;", R(t));
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(q), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), nokv);
	if (w->lag) {
		aw_feed_lag(p, w, &fk, &fv, t, nkt);
	} else { /* K and V of tile t together, once the stage's V is given back
		  * (written out, not two aw_feed: its registers keep the PTX the
		  * one ring's measured kernel had, byte for byte) */
		ptx_place(p, kloop);
		ptx_emit(p, "xor.b32 %s, %s, 1;", R(ph), R(phase));
		aw_bar(p, w, bar, AWB_EMPTYV, stage);
		ptx_mbar_wait(p, bar, ph);
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(dst), R(stage), w->stage, R(w->base));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(dst), R(dst), w->qbytes);
		ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(r0), R(t), w->bn);
		aw_bar(p, w, bar, AWB_FULLK, stage);
		aw_load(p, w, tm[1], dst, r0, bar, w->bn, st);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(dst), R(dst), w->kvbytes);
		aw_bar(p, w, bar, AWB_FULLV, stage);
		aw_load(p, w, tm[2], dst, r0, bar, w->bn, st);
		aw_next(p, w, stage, phase);
		ptx_emit(p, "add.u32 %s, %s, 1;", R(t), R(t));
		ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(t), R(nkt));
		ptx_emit(p, "@%s bra $L%d;", R(q), kloop);
	}
	ptx_place(p, nokv);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(pc), R(pc));
	ptx_next_entry(p, n, loop);
	/* a wait timed out: the quit word names the entry (+ 1), then the Q
	 * barrier is completed without data once it is free */
	ptx_place(p, quit_l);
	ptx_emit(p, "and.b32 %s, %s, 1;", R(ph), R(pc));
	ptx_emit(p, "xor.b32 %s, %s, 1;", R(ph), R(ph));
	aw_bar(p, w, bar, AWB_EMPTYQ, -1);
	ptx_mbar_wait(p, bar, ph);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(qa), R(w->base), aw_off(w, AWB_QUIT));
	ptx_emit(p, "add.u32 %s, %s, 1;", R(pc), R(pc));
	ptx_emit(p, "st.shared.u32 [%s], %s;", R(qa), R(pc));
	aw_bar(p, w, bar, AWB_FULLQ, -1);
	ptx_emit(p, "mbarrier.arrive.shared::cta.b64 %s, [%s];", R(st), R(bar));
	ptx_place(p, done);
	ptx_emit(p, "ret;");
}

/* Issues S = Q K^T for the K tile at kaddr as one wgmma group (the caller
 * waits): D / 16 k steps; A (Q) and B (K) both K-major, 128-byte swizzle
 * rows, atoms of 8 rows 1 KiB apart. */
static void
aw_scores(At *a, Reg dq0, Reg kaddr)
{
	Ptx *p = a->p;
	Reg dk = ptx_reg(p, RC_B64), dq = ptx_reg(p, RC_B64), dk0 = ptx_reg(p, RC_B64);
	Reg yes = ptx_reg(p, RC_PRED), no = ptx_reg(p, RC_PRED);
	Buf regs = {0};
	for (int j = 0; j < a->nj; j++)
		for (int e = 0; e < 4; e++)
			buf_printf(&regs, "%s%s", j || e ? ", " : "", R(a->sacc[j][e]));
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(yes), R(p->tid), R(p->tid));
	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(no), R(p->tid), R(p->tid));
	ptx_wg_desc(p, dk0, kaddr, 16, 1024);
	ptx_emit(p, "wgmma.fence.sync.aligned;");
	for (int k = 0; k < (int)a->s->d / 16; k++) {
		/* box k / 4, 32 bytes a k16 step inside it (descriptor units: 16 B) */
		ptx_emit(p, "add.u64 %s, %s, %d;", R(dq), R(dq0), (k / 4) * ptx_attn_rows(a->s) * 8 + (k % 4) * 2);
		ptx_emit(p, "add.u64 %s, %s, %d;", R(dk), R(dk0), (k / 4) * a->nj * 64 + (k % 4) * 2);
		ptx_emit(p, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %s, %s, %s, 1, 1, 0, 0;", a->nj * 8, ty(a),
		         ty(a), regs.s, R(dq), R(dk), R(k ? yes : no));
	}
	ptx_emit(p, "wgmma.commit_group.sync.aligned;");
	buf_free(&regs);
}

/* Issues O += P V for the V tile at vaddr as one wgmma group: BN / 16 k
 * steps of 16 keys (2 KiB of rows each), P's fragments from registers; V
 * N-major, its 64-d boxes kvbytes / nbox apart. */
static void
aw_pv(At *a, Reg vaddr)
{
	Ptx *p = a->p;
	Reg dv0 = ptx_reg(p, RC_B64), dv = ptx_reg(p, RC_B64), yes = ptx_reg(p, RC_PRED);
	Buf regs = {0};
	for (int j = 0; j < (int)a->s->d / 8; j++)
		for (int e = 0; e < 4; e++)
			buf_printf(&regs, "%s%s", j || e ? ", " : "", R(a->oacc[j][e]));
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(yes), R(p->tid), R(p->tid));
	ptx_wg_desc(p, dv0, vaddr, a->nj * 8 * 128, 1024);
	ptx_emit(p, "wgmma.fence.sync.aligned;");
	for (int k = 0; k < a->nj / 2; k++) {
		ptx_emit(p, "add.u64 %s, %s, %d;", R(dv), R(dv0), k * 16 * 128 / 16);
		ptx_emit(p, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, {%s, %s, %s, %s}, %s, %s, 1, 1, 1;",
		         (int)a->s->d, ty(a), ty(a), regs.s, R(a->pf[k][0]), R(a->pf[k][1]), R(a->pf[k][2]),
		         R(a->pf[k][3]), R(dv), R(yes));
	}
	ptx_emit(p, "wgmma.commit_group.sync.aligned;");
	buf_free(&regs);
}


/* The K and V tiles of a stage. */
static void
aw_addrs(Ptx *p, const Aw *w, Reg stage, Reg kaddr, Reg vaddr)
{
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(kaddr), R(stage), w->stage, R(w->base));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(kaddr), R(kaddr), w->qbytes);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(vaddr), R(kaddr), w->kvbytes);
}

/* After tile t's scores: if they were the entry's last, the producer may
 * load the next entry's Q. */
static void
aw_q_done(At *a, const Aw *w, Reg t, Reg nkt, Reg lane0)
{
	Ptx *p = a->p;
	int keep = ptx_label(p);
	Reg x = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), bar = ptx_reg(p, RC_B32), st = ptx_reg(p, RC_B64);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(x), R(t));
	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(q), R(x), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), keep);
	aw_bar(p, w, bar, AWB_EMPTYQ, -1);
	ptx_emit(p, "@%s mbarrier.arrive.shared::cta.b64 %s, [%s];", R(lane0), R(st), R(bar));
	ptx_place(p, keep);
}

/* A consumer's place in the K/V ring: the tile whose scores come next
 * (stage, phase; its K and V at kaddr, vaddr) and the one before it, whose
 * P V is next (pstage, pphase, its V at pv); bar and st are scratch. */
typedef struct AwRing {
	const Aw *w;
	Reg stage, phase, kaddr, vaddr, pstage, pphase, pv, dq0, bar, st, lane0;
	Reg mine, next; /* ping-pong: this warpgroup's turn barrier and the next one's (-1: no turns) */
} AwRing;

/* until the next tile's K has landed */
static void
aw_ring_kwait(At *a, const AwRing *r)
{
	Ptx *p = a->p;
	aw_addrs(p, r->w, r->stage, r->kaddr, r->vaddr);
	aw_bar(p, r->w, r->bar, AWB_FULLK, r->stage);
	ptx_mbar_wait(p, r->bar, r->phase);
}

/* until the tile before's V has landed */
static void
aw_ring_vwait(At *a, const AwRing *r)
{
	Ptx *p = a->p;
	aw_bar(p, r->w, r->bar, AWB_FULLV, r->pstage);
	ptx_mbar_wait(p, r->bar, r->pphase);
}

/* Ping-pong (PtxAttnSpec.pingpong, FlashAttention-3's inter-warpgroup
 * schedule): the consumer warpgroups issue their wgmma groups in turns,
 * g after g - 1, so one's softmax runs while the next one's matmuls hold
 * the tensor cores.  Warpgroup g waits on named barrier AW_TURN + g, which
 * the one before it arrives at once it has issued; the last one arrives
 * at the first's before the first entry.  Every warpgroup takes nkt + 1
 * turns an entry (tile 0's scores, nkt - 1 steps, the last P V), so the
 * turns stay in step across entries; one arrival is left over when the
 * CTA ends. */
enum { AW_TURN = 2 };

static void
aw_turn_wait(Ptx *p, const AwRing *r)
{
	if (r->mine >= 0)
		ptx_emit(p, "bar.sync %s, %d;", R(r->mine), 2 * AW_WG);
}

static void
aw_turn_pass(Ptx *p, const AwRing *r)
{
	if (r->mine >= 0)
		ptx_emit(p, "bar.arrive %s, %d;", R(r->next), 2 * AW_WG);
}

/* the scored tile's K stage back to the producer (its scores are done),
 * where K has a ring of its own (Aw.lag) */
static void
aw_ring_free_k(At *a, const AwRing *r)
{
	Ptx *p = a->p;
	if (!r->w->lag)
		return;
	aw_bar(p, r->w, r->bar, AWB_EMPTYK, r->stage);
	ptx_emit(p, "@%s mbarrier.arrive.shared::cta.b64 %s, [%s];", R(r->lane0), R(r->st), R(r->bar));
}

/* the tile before's V stage back to the producer (its P V is done) */
static void
aw_ring_free_v(At *a, const AwRing *r)
{
	Ptx *p = a->p;
	aw_bar(p, r->w, r->bar, AWB_EMPTYV, r->pstage);
	ptx_emit(p, "@%s mbarrier.arrive.shared::cta.b64 %s, [%s];", R(r->lane0), R(r->st), R(r->bar));
}

/* one tile on: the scored tile becomes the one whose P V is next */
static void
aw_ring_step(At *a, const AwRing *r)
{
	Ptx *p = a->p;
	ptx_emit(p, "mov.u32 %s, %s;", R(r->pstage), R(r->stage));
	ptx_emit(p, "mov.u32 %s, %s;", R(r->pphase), R(r->phase));
	ptx_emit(p, "mov.u32 %s, %s;", R(r->pv), R(r->vaddr));
	aw_next(p, r->w, r->stage, r->phase);
}

/* Ping-pong's barriers for warpgroup g (a register): its own, the next
 * one's; the last warpgroup gives the first its first turn. */
static void
aw_turns(At *a, const Aw *w, AwRing *r, Reg g)
{
	Ptx *p = a->p;
	Reg q = ptx_reg(p, RC_PRED);
	r->mine = ptx_reg(p, RC_B32);
	r->next = ptx_reg(p, RC_B32);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(r->mine), R(g), AW_TURN);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(r->next), R(r->mine));
	ptx_emit(p, "setp.eq.u32 %s, %s, %d;", R(q), R(g), w->nwg - 1);
	ptx_emit(p, "@%s mov.u32 %s, %d;", R(q), R(r->next), AW_TURN);
	ptx_emit(p, "@%s bar.arrive %s, %d;", R(q), R(r->next), 2 * AW_WG);
}

static void
aw_consumer(At *a, const Aw *w)
{
	Ptx *p = a->p;
	int loop = ptx_label(p), done = ptx_label(p), kloop = ptx_label(p), store = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), n = ptx_reg(p, RC_B32), ct = ptx_reg(p, RC_B32), g = ptx_reg(p, RC_B32);
	Reg tc = ptx_reg(p, RC_B32), lane0 = ptx_reg(p, RC_PRED), raiser = ptx_reg(p, RC_PRED);
	Reg stage = ptx_reg(p, RC_B32), phase = ptx_reg(p, RC_B32), ph = ptx_reg(p, RC_B32), bar = ptx_reg(p, RC_B32);
	Reg m0 = ptx_reg(p, RC_B32), nkt = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_B32), qv = ptx_reg(p, RC_B32);
	Reg qa = ptx_reg(p, RC_B32), dq0 = ptx_reg(p, RC_B64), kaddr = ptx_reg(p, RC_B32), vaddr = ptx_reg(p, RC_B32);
	Reg st = ptx_reg(p, RC_B64), pstage = ptx_reg(p, RC_B32), pphase = ptx_reg(p, RC_B32), pv = ptx_reg(p, RC_B32);
	Reg alpha[2] = {ptx_reg(p, RC_F32), ptx_reg(p, RC_F32)}, x = ptx_reg(p, RC_B32);
	int tail = ptx_label(p), tile0 = ptx_label(p);
	AwRing r = {.w = w, .stage = stage, .phase = phase, .kaddr = kaddr, .vaddr = vaddr, .pstage = pstage,
	            .pphase = pphase, .pv = pv, .dq0 = dq0, .bar = bar, .st = st, .lane0 = lane0, .mine = -1, .next = -1};

	ptx_emit(p, "sub.u32 %s, %s, %d;", R(ct), R(p->tid), AW_WG);
	ptx_emit(p, "shr.u32 %s, %s, 7;", R(g), R(ct));
	a->lane = ptx_reg(p, RC_B32);
	a->warp = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(a->lane), R(ct));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(a->warp), R(ct)); /* rows 16 warp .. of the entry */
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(lane0), R(a->lane));
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(raiser), R(ct));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(x), R(g), 64 * 128, R(w->base)); /* rows 64 g of each Q box */
	ptx_wg_desc(p, dq0, x, 16, 1024);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(qa), R(w->base), aw_off(w, AWB_QUIT));
	ptx_emit(p, "mov.u32 %s, 0;", R(tc));
	ptx_emit(p, "mov.u32 %s, 0;", R(stage));
	ptx_emit(p, "mov.u32 %s, 0;", R(phase));
	if (w->pingpong)
		aw_turns(a, w, &r, g);

	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(p->blk), R(p->param[1]));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(p->entry), R(p->blk), (int)sizeof(PtxBlock), R(p->param[0]));
	ptx_emit(p, "and.b32 %s, %s, 1;", R(ph), R(tc));
	aw_bar(p, w, bar, AWB_FULLQ, -1);
	ptx_mbar_wait(p, bar, ph);
	ptx_emit(p, "ld.shared.u32 %s, [%s];", R(qv), R(qa));
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(qv), R(qv)); /* the entry the producer gave up on */
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(q), R(qv), R(tc));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	aw_entry(p, a->s, m0, nkt);
	for (int h = 0; h < 2; h++) {
		ptx_emit(p, "mov.f32 %s, 0fFF800000;", R(a->mrow[h]));
		ptx_emit(p, "mov.f32 %s, 0f00000000;", R(a->lrow[h]));
	}
	for (int j = 0; j < (int)a->s->d / 8; j++)
		for (int e = 0; e < 4; e++)
			ptx_emit(p, "mov.f32 %s, 0f00000000;", R(a->oacc[j][e]));
	ptx_emit(p, "mov.u32 %s, 0;", R(t));
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), tile0);
	aw_bar(p, w, bar, AWB_EMPTYQ, -1); /* no key to see: Q is free at once */
	ptx_emit(p, "@%s mbarrier.arrive.shared::cta.b64 %s, [%s];", R(lane0), R(st), R(bar));
	ptx_emit(p, "bra $L%d;", store);

	/* tile 0: its scores, softmax and P */
	ptx_place(p, tile0);
	aw_ring_kwait(a, &r);
	aw_turn_wait(p, &r);
	aw_scores(a, dq0, kaddr);
	aw_turn_pass(p, &r);
	ptx_emit(p, "wgmma.wait_group.sync.aligned 0;");
	aw_ring_free_k(a, &r);
	aw_q_done(a, w, t, nkt, lane0);
	at_mask_tile(a, t, m0, w->bn);
	at_softmax_rows(a, alpha); /* O is 0: nothing to rescale */
	at_pack(a);
	aw_ring_step(a, &r);
	ptx_emit(p, "mov.u32 %s, 1;", R(t));
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(t), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), tail);
	/* tile t's scores in flight with tile t - 1's P V, its softmax under
	 * that P V (FlashAttention-3's overlap inside a warpgroup) */
	ptx_place(p, kloop);
	aw_ring_kwait(a, &r);
	if (w->pingpong) /* both operands in before the turn is taken */
		aw_ring_vwait(a, &r);
	aw_turn_wait(p, &r);
	aw_scores(a, dq0, kaddr);
	if (!w->pingpong)
		aw_ring_vwait(a, &r);
	aw_pv(a, pv); /* O += from then on */
	aw_turn_pass(p, &r);
	ptx_emit(p, "wgmma.wait_group.sync.aligned 1;"); /* the scores */
	aw_ring_free_k(a, &r);
	aw_q_done(a, w, t, nkt, lane0);
	at_mask_tile(a, t, m0, w->bn);
	at_softmax_rows(a, alpha);
	ptx_emit(p, "wgmma.wait_group.sync.aligned 0;"); /* P V: its V stage is free, O may be rescaled */
	aw_ring_free_v(a, &r);
	at_rescale(a, alpha);
	at_pack(a);
	aw_ring_step(a, &r);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(t), R(t));
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(t), R(nkt));
	ptx_emit(p, "@%s bra $L%d;", R(q), kloop);
	/* the last tile's P V */
	ptx_place(p, tail);
	aw_ring_vwait(a, &r);
	aw_turn_wait(p, &r);
	aw_pv(a, pv);
	aw_turn_pass(p, &r);
	ptx_emit(p, "wgmma.wait_group.sync.aligned 0;");
	aw_ring_free_v(a, &r);

	ptx_place(p, store);
	at_store(a, m0);
	ptx_emit(p, "bar.sync 1, %d;", w->nwg * AW_WG);
	ptx_flag_raise(p, raiser);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(tc), R(tc));
	ptx_next_entry(p, n, loop);
	ptx_place(p, done);
	ptx_emit(p, "ret;");
}

/* The tensor maps the launcher builds: q, k and v as {D, S, heads}. */
static void
aw_tmaps(const PtxAttnSpec *s, PtxKernel *k)
{
	static const char role[3] = {'Q', 'K', 'V'};
	k->ntmaps = 3;
	for (int i = 0; i < 3; i++) {
		int64_t S = i ? s->sk : s->sq;
		k->tmap[i] = (PtxTmap){.tensor = i, .role = role[i], .dt = s->dt, .dim = {s->d, S, s->batch},
		                       .stride = {s->d * 2, S * s->d * 2}, .box = {AW_BOX, i ? aw_keys(s) : ptx_attn_rows(s), 1}};
	}
}

static void
ptx_emit_attn_tma(Buf *b, const PtxAttnSpec *s, PtxKernel *k)
{
	Ptx px, *p = &px;
	At a = {.p = p, .s = s, .nj = aw_keys(s) / 8, .D = (int)s->d, .pitch = (int)s->d * 2}; /* what at_softmax and at_store read */
	Aw w;
	int nt = 4 + 2 * s->stats, consumer, skip;
	Reg x = -1, q = -1;

	aw_setup(&w, s);
	ASSERT(aw_smem(&w) <= AW_SMEM_MAX);
	*k = (PtxKernel){0};
	aw_tmaps(s, k);
	ptx_kernel_begin_tm(p, b, s->name, nt, k->ntmaps, aw_threads(&w), 1);
	buf_printf(&p->head, "// attention %s heads %lld sq %lld sk %lld d %lld scale %.9g%s%s%s: wgmma + TMA, %d stages\n",
	           ty_dtypes[s->dt].name, (long long)s->batch, (long long)s->sq, (long long)s->sk, (long long)s->d,
	           s->scale, s->causal ? " causal" : "", s->normed ? "" : " unnormalised",
	           s->stats ? " with row max and sum" : "", w.stages);
	/* the tile choices, for --emit=ptx readers (lower.c attn_wide, attn_keys) */
	buf_printf(&p->head, "// %d-row entries (%d consumer warpgroups%s), %d-key tiles, K and V %s\n", w.bm, w.nwg,
	           w.pingpong ? ", in turns" : "", w.bn, w.lag ? "in rings of their own, V a tile behind" : "in one ring");
	for (int j = 0; j < a.nj; j++)
		for (int e = 0; e < 4; e++)
			a.sacc[j][e] = ptx_reg(p, RC_F32);
	for (int j = 0; j < (int)s->d / 8; j++)
		for (int e = 0; e < 4; e++)
			a.oacc[j][e] = ptx_reg(p, RC_F32);
	for (int j = 0; j < a.nj / 2; j++)
		for (int e = 0; e < 4; e++)
			a.pf[j][e] = ptx_reg(p, RC_B32);
	for (int h = 0; h < 2; h++) {
		a.mrow[h] = ptx_reg(p, RC_F32);
		a.lrow[h] = ptx_reg(p, RC_F32);
	}
	ptx_params(p, nt);
	w.base = ptx_reg(p, RC_B32);
	x = ptx_reg(p, RC_B32);
	q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(w.base));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(w.base), R(w.base), AW_ALIGN - 1);
	ptx_emit(p, "and.b32 %s, %s, %d;", R(w.base), R(w.base), -AW_ALIGN);
	/* thread 0 makes the barriers: the full ones wait for the producer's
	 * arrival (and the bytes), the empty ones for each consumer warp */
	skip = ptx_label(p);
	ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), skip);
	for (int kind = AWB_FULLQ; kind < AWB_QUIT; kind++)
		for (int i = 0; i < (kind == AWB_EMPTYK && !w.lag ? 0 : kind >= AWB_FULLK ? w.stages : 1); i++) {
			ptx_emit(p, "add.u32 %s, %s, %d;", R(x), R(w.base), aw_off(&w, kind) + 8 * i);
			ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], %d;", R(x),
			         kind == AWB_EMPTYQ || kind >= AWB_EMPTYK ? w.nwg * AW_WG / 32 : 1);
		}
	ptx_emit(p, "add.u32 %s, %s, %d;", R(x), R(w.base), aw_off(&w, AWB_QUIT));
	ptx_emit(p, "st.shared.u32 [%s], 0;", R(x));
	ptx_emit(p, "fence.mbarrier_init.release.cluster;");
	ptx_place(p, skip);
	ptx_emit(p, "bar.sync 0;");
	consumer = ptx_label(p);
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(p->tid), AW_WG);
	ptx_emit(p, "@%s bra $L%d;", R(q), consumer);
	ptx_emit(p, "setmaxnreg.dec.sync.aligned.u32 %d;", aw_regs(&w, false));
	{
		int out = ptx_label(p);
		ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), out);
		aw_producer(&a, &w);
		ptx_place(p, out);
		ptx_emit(p, "ret;");
	}
	ptx_place(p, consumer);
	ptx_emit(p, "setmaxnreg.inc.sync.aligned.u32 %d;", aw_regs(&w, true));
	aw_consumer(&a, &w);
	ptx_kernel_end(p);
	snprintf(k->name, sizeof k->name, "%s", s->name);
	k->threads = aw_threads(&w);
	k->smem = aw_smem(&w);
	k->ntensors = nt;
	k->nblocks = ptx_attn_blocks(s, NULL);
}

void
ptx_emit_attn(Buf *b, const PtxAttnSpec *s, PtxKernel *k)
{
	const char *why = ptx_attn_check(s);
	Ptx px, *p = &px;
	At a = {.p = p, .s = s, .nj = AT_BN / 8};
	int nt = 4 + 2 * s->stats;

	if (why)
		die("ptx_emit_attn: %s", why);
	if (s->tma) {
		ptx_emit_attn_tma(b, s, k);
		return;
	}
	ptx_kernel_begin(p, b, s->name, nt, AT_THREADS, 0);
	buf_printf(&p->head, "// attention %s heads %lld sq %lld sk %lld d %lld scale %.9g%s%s%s\n", ty_dtypes[s->dt].name,
	           (long long)s->batch, (long long)s->sq, (long long)s->sk, (long long)s->d, s->scale,
	           s->causal ? " causal" : "", s->normed ? "" : " unnormalised", s->stats ? " with row max and sum" : "");
	for (int k2 = 0; k2 < (int)s->d / 16; k2++)
		for (int e = 0; e < 4; e++)
			a.qf[k2][e] = ptx_reg(p, RC_B32);
	for (int j = 0; j < 8; j++)
		for (int e = 0; e < 4; e++)
			a.sacc[j][e] = ptx_reg(p, RC_F32);
	for (int j = 0; j < (int)s->d / 8; j++)
		for (int e = 0; e < 4; e++)
			a.oacc[j][e] = ptx_reg(p, RC_F32);
	for (int j = 0; j < 4; j++)
		for (int e = 0; e < 4; e++)
			a.pf[j][e] = ptx_reg(p, RC_B32);
	for (int h = 0; h < 2; h++) {
		a.mrow[h] = ptx_reg(p, RC_F32);
		a.lrow[h] = ptx_reg(p, RC_F32);
	}
	ptx_params(p, nt);
	at_setup(&a);
	ptx_loop_begin(p);
	at_block(&a);
	ptx_loop_end(p);
	ptx_kernel_end(p);
	*k = (PtxKernel){0};
	snprintf(k->name, sizeof k->name, "%s", s->name);
	k->threads = AT_THREADS;
	k->smem = 5 * a.tile; /* Q, two K, two V tiles */
	k->ntensors = nt;
	k->nblocks = ptx_attn_blocks(s, NULL);
}
