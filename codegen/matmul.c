/* codegen/matmul.c -- the persistent matmul kernel: out = epilogue(A @ B).
 *
 * Per block (one BM x BN output tile of one batch) the CTA streams k tiles
 * of A [BM][BK] and B [BK][BN] through a `stages`-deep cp.async ring in
 * shared memory, one bar.sync per k tile (CUTLASS's sm80 multistage order:
 * the copy for tile kt+S-1 is issued while tile kt is multiplied).  Each
 * warp owns a (BM/warps_m) x (BN/warps_n) piece of the tile: ldmatrix.x4
 * gives A fragments, ldmatrix.x4.trans B fragments (B is row-major k x n),
 * mma.sync.m16n8k16 accumulates in f32, and fragments for the next k step
 * are loaded before the current step's mma so the two overlap.
 *
 * Shared layout: within every 128-byte line the 16-byte chunks are
 * permuted by XOR with the line's index mod 8 (rows wider than 128 bytes:
 * the row's index), so the 8 rows one ldmatrix reads hit 8 distinct bank
 * groups and cp.async writes of full lines stay conflict-free.
 *
 * Edges: rows of A beyond m and columns of B beyond n load zeros (cp.async
 * with a source size of 0), the last k tile of a k that is not a multiple
 * of BK gets its own predicated copy, and stores are predicated.  Leading
 * dimensions that are not multiples of 8 elements cannot use 16-byte
 * copies: that operand is copied element by element instead (correct, slow). */
#include "codegen.h"

#include <stdio.h>
#include <string.h>

const PtxTile ptx_tiles[] = {
	/* name              bm   bn   bk  wm wn stages minctas kind raiser cluster streamk */
	{"128x256x32s3",    128, 256, 32, 2, 4, 3, 1, PTX_MMA_SYNC, false, 0, false},
	{"128x256x32s4",    128, 256, 32, 2, 4, 4, 1, PTX_MMA_SYNC, false, 0, false},
	{"256x128x32s4",    256, 128, 32, 4, 2, 4, 1, PTX_MMA_SYNC, false, 0, false},
	{"128x256x64s3",    128, 256, 64, 2, 4, 3, 1, PTX_MMA_SYNC, false, 0, false},
	{"128x128x32s4",    128, 128, 32, 2, 4, 4, 1, PTX_MMA_SYNC, false, 0, false},
	{"128x128x64s3",    128, 128, 64, 2, 4, 3, 1, PTX_MMA_SYNC, false, 0, false},
	/* wgmma: warps_m consumer warpgroups of 64 rows each, one producer
	 * warpgroup; a consumer thread raises each tile's output flag */
	{"wg128x256x64s4",  128, 256, 64, 2, 1, 4, 1, PTX_WGMMA, false, 0, false},
	{"wg128x256x64s3",  128, 256, 64, 2, 1, 3, 1, PTX_WGMMA, false, 0, false},
	{"wg128x128x64s6",  128, 128, 64, 2, 1, 6, 1, PTX_WGMMA, false, 0, false},
	{"wg128x64x64s8",   128,  64, 64, 2, 1, 8, 1, PTX_WGMMA, false, 0, false},
	/* two CTAs of 128 x 256 on one entry of 256 rows, B multicast */
	{"wg256x256x64s3c2", 256, 256, 64, 2, 1, 3, 1, PTX_WGMMA, false, 2, false},
	{"wg256x256x64s4c2", 256, 256, 64, 2, 1, 4, 1, PTX_WGMMA, false, 2, false},
	/* raiser: the producer warpgroup's second warp raises them, so the
	 * system-scope release never stalls a consumer warpgroup.  Assembled
	 * by ptxas in the tests but not yet run on a GPU: not a default. */
	{"wg128x256x64s3r", 128, 256, 64, 2, 1, 3, 1, PTX_WGMMA, true, 0, false},
	/* f32 operands: FFMA on the CUDA cores (codegen/simt.c) */
	{"ffma128x128x8s3", 128, 128,  8, 2, 4, 3, 2, PTX_SIMT, false, 0, false},
	{"ffma128x128x8s4", 128, 128,  8, 2, 4, 4, 0, PTX_SIMT, false, 0, false}, /* 1 CTA/SM: room for epilogue inputs */
	{"ffma64x64x8s3",    64,  64,  8, 2, 2, 3, 0, PTX_SIMT, false, 0, false},
	/* wgmma, stream-K: a mostly idle last wave's entries cut along k into
	 * equal pieces, one a CTA (a flagless matmul's tile where it cuts:
	 * ptx_matmul_streamk, lower.c) */
	{"wg128x256x64s3k", 128, 256, 64, 2, 1, 3, 1, PTX_WGMMA, false, 0, true},
};
const int ptx_ntiles = NELEM(ptx_tiles);

enum { MAX_CHUNKS = 16, MAX_MI = 8, MAX_NJ = 16, MAX_KK = 4 };

typedef struct Mm {
	Ptx *p;
	const PtxMatmulSpec *s;
	const PtxTile *t;
	int nt;             /* threads */
	int wtm, wtn;       /* warp tile */
	int mi, nj, kk;     /* m16 and n8 fragments per warp, k16 steps per k tile */
	int pa, pb;         /* shared row pitch (bytes) of the A and B tiles */
	int abytes, stage;  /* bytes of the A tile, of one stage (A then B) */
	int ca, cb;         /* 16-byte chunks per row of A and B tiles */
	int la, lb;         /* chunks a thread copies per k tile */
	int rsa, rsb;       /* rows between one thread's chunks */
	int64_t lda, ldb, nkt;
	bool veca, vecb;    /* 16-byte cp.async (else element loads) */
	bool edge_m, edge_n, edge_k;
	/* registers */
	Reg smem, send, sa0, sb0, ga, gb, rowa0, rowb0, ca0, cb0;
	Reg srca[MAX_CHUNKS], srcb, tka, tkb, remn, rema;
	Reg aoff[MAX_KK], boff[MAX_NJ / 2];
	Reg rs, ws, kt, tload;
	Reg acc[MAX_MI][MAX_NJ][4];
	Reg fa[2][MAX_MI][4], fb[2][MAX_NJ][2];
	Reg wm, wn, lane;
} Mm;

#define R(r) ptx_rn(p, r)

static int64_t
ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* The tile a caller gets when it names none: the wgmma tile where TMA can
 * read the operands (bench/results/2026-11-30-wgmma-h200.md); else the
 * mma.sync tile measured fastest on an H200 (2026-11-29-mma-sync-h200.md)
 * where the 16-byte copy path applies, 128x128 where it does not. */
int
ptx_matmul_default_tile(const PtxMatmulSpec *s)
{
	int64_t lda = s->lda ? s->lda : s->k, ldb = s->ldb ? s->ldb : s->bt ? s->k : s->n;
	bool vec = lda % 8 == 0 && ldb % 8 == 0 && s->batch_a % 8 == 0 && s->batch_b % 8 == 0;
	PtxMatmulSpec w = *s;
	if (s->ab == DT_F32) /* epilogue inputs need more than the 128 registers of 2 CTAs per SM */
		return ptx_tile_byname(s->nin ? PTX_F32_TILE_WIDE : PTX_F32_TILE);
	w.tile = ptx_tile_byname(PTX_DEFAULT_TILE);
	if (!ptx_matmul_check(&w))
		return w.tile;
	return ptx_tile_byname(vec ? PTX_SYNC_TILE : "128x128x32s4");
}

/* The narrower wgmma tiles a shape may take where the wide one leaves SMs
 * idle, with a tile's cost against a 128 x 256 one at equal k:
 *   128 x 128: 0.56, from 2048x8192x4096 on an H200 (0.2295 ms in 1024
 *     tiles against 0.2010 ms in 512, bench/results/2026-12-03-tiles-h200.md);
 *   128 x 64 (cuBLAS's own pick at M = 128: 128x64, 8 stages, on an H100):
 *     any cost in (0.28, 0.56) reproduces the winners measured on an H100
 *     at 128 / 256 / 512 / 1024 x 8192 x 4096, 128 x 4096 and 128 x 14336
 *     (bench/results/2026-12-06-mmrec-h100.md); 0.4 sits inside. */
static const struct {
	const char *tile;
	double cost;
} wg_narrow[] = {
	{"wg128x128x64s6", 0.56},
	{"wg128x64x64s8", 0.40},
};

#define DEEP_TILE "wg128x256x64s4"
enum {
	DEEP_MIN_KT = 16,   /* k tiles: a short loop gains nothing from a deeper ring */
	DEEP_FULL = 7,      /* eighths of the SMs the first wave must hold */
	DEEP_SFU_WAVES = 8, /* the most waves it takes with an epilogue of exps (ptx_prog_sfu) */
	DEEP_TAIL_WAVES = 2, /* ... where the 3-stage tile would run them in the producer's warps */
};

static int64_t
tiles_of(const PtxMatmulSpec *s, const PtxTile *t)
{
	return ceil_div(s->m, t->bm) * ceil_div(s->n, t->bn) * (s->batch > 0 ? s->batch : 1);
}

/* The wide tile with a 4-deep ring where its grid is one full wave, or
 * up to DEEP_SFU_WAVES waves for an epilogue of exps (GELU's sigmoid,
 * SiLU).  One wave: each CTA runs one entry, and with every SM loading at
 * once a deeper ring hides the longer waits for L2 and HBM.  Its ring
 * leaves room for half the output tile, whose two-part epilogue, exposed
 * once a CTA, costs more than the ring gains where fewer CTAs share the
 * bandwidth.  perf-ab interleaved on one H100
 * (bench/results/2026-12-06-ring-h100.md), 4 stages against 3:
 * 512x8192x4096 (128 tiles on 132 SMs) 1.015-1.018x, with a bias 1.008x;
 * 384x16384x4096 (96 tiles) 1.004x; 512x4096x8192 (64 tiles) 0.983x; 1024
 * rows and up (two waves or more) 0.975-0.994x, with a bias 0.97-0.99x.
 * With bias + GELU, whose epilogue is bound by the special-function units
 * and leaves the tensor cores idle longer, the fourth stage pays over more
 * waves: at 512 / 1024 / 2048 / 4096 / 8192 x 8192 x 4096 (1, 2, 3.9,
 * 7.8, 15.5 waves) 1.044 / 1.024 / 1.018 / 1.009 / 0.998x
 * (bench/results/2026-12-07-parts-h100.md).  Where the 3-stage tile runs
 * that epilogue's tail in the producer's spare warps (ptx_wgmma_tail), it
 * is the faster tile from two waves up: bias + GELU on one H100 against
 * the 4-stage tile (staged in halves: no tail) at 1024 / 2048 / 8192 rows
 * 0.954 / 0.961 / 0.969 of the plain 3-stage matmul against 0.963 / 0.955 /
 * 0.931 (bench/results/2026-12-07-tail-h100.md).  So a first wave at least
 * DEEP_FULL eighths full, and an output it stages (stored from registers
 * the 4-stage tile was 10-20% slower); not where an input of the output's
 * shape would be read through the staged tile (wg_src_plan), nor on a
 * short k, nor for a routed (pushed) matmul, whose stores through the
 * owners' maps were checked on the 3-stage tile only; nor where a last
 * wave at most half full is stream-K's to cut (ptx_matmul_streamk). */
static int
deep_tile(const PtxMatmulSpec *s, int tile, int sms)
{
	PtxMatmulSpec w = *s;
	int64_t n = tiles_of(s, &ptx_tiles[tile]), waves = 1;
	if (ptx_prog_sfu(&s->epi)) {
		w.tile = tile;
		waves = ptx_wgmma_tail(&w) ? DEEP_TAIL_WAVES : DEEP_SFU_WAVES;
	}
	if (s->route || n > sms * waves || n * 8 < (int64_t)sms * DEEP_FULL || (n > sms && n % sms * 2 <= sms) ||
	    ceil_div(s->k, ptx_tiles[tile].bk) < DEEP_MIN_KT || !ptx_matmul_out_stageable(s))
		return tile;
	for (int i = 0; i < s->nin; i++)
		if (s->in[i].stride[1] != 0) /* rows that differ: a residual's */
			return tile;
	w.tile = ptx_tile_byname(DEEP_TILE);
	return w.tile >= 0 && ptx_tiles[w.tile].bm == ptx_tiles[tile].bm && ptx_tiles[w.tile].bn == ptx_tiles[tile].bn &&
	               !ptx_matmul_check(&w)
	           ? w.tile
	           : tile;
}

/* The default tile, or a narrower wgmma tile where the wide tile leaves
 * SMs idle: the tile whose waves over `sms` times its cost are fewest (the
 * wide one on a tie).  Small M is the case: 128x8192x4096 is 32 wide tiles
 * on 132 SMs (0.0472 ms on an H100), 64 of 128 x 128 (0.0312) and 128 of
 * 128 x 64 (0.0285); at 512x8192x4096 the wide tile's one wave wins
 * (0.0487 against 0.0510 and 0.0631), on its 4-deep ring (deep_tile).
 * sms <= 0: the default alone. */
int
ptx_matmul_shape_tile(const PtxMatmulSpec *s, int sms)
{
	int def = ptx_matmul_default_tile(s), best = def;
	double best_cost;
	if (sms <= 0 || def < 0 || ptx_tiles[def].kind != PTX_WGMMA)
		return def;
	best_cost = (double)ceil_div(tiles_of(s, &ptx_tiles[def]), sms);
	for (size_t i = 0; i < NELEM(wg_narrow); i++) {
		PtxMatmulSpec w = *s;
		double c;
		w.tile = ptx_tile_byname(wg_narrow[i].tile);
		if (w.tile < 0 || ptx_tiles[w.tile].bn >= ptx_tiles[def].bn || ptx_matmul_check(&w))
			continue;
		c = (double)ceil_div(tiles_of(s, &ptx_tiles[w.tile]), sms) * wg_narrow[i].cost;
		if (c < best_cost)
			best = w.tile, best_cost = c;
	}
	return best == def ? deep_tile(s, def, sms) : best;
}

/* The stream-K form of s->tile (PtxTile.streamk: the same tile, its last
 * wave's entries cut along k into equal pieces), where there is one, s
 * allows it and it would cut them on a grid of `sms` CTAs (codegen/wgmma.c
 * wg_sk_setup: r = tiles mod sms entries, each in S = min(4, sms / r)
 * pieces, S >= 2, saving at least PTX_SK_MIN k tiles) and its epilogue
 * leaves it the registers; else s->tile, which needs no workspace.  sms <= 0: wherever the tile allows.  For a matmul
 * whose entries have no flags (lower.c). */
int
ptx_matmul_streamk(const PtxMatmulSpec *s, int sms)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	int64_t nkt = ceil_div(s->k, t->bk), r = sms > 0 ? tiles_of(s, t) % sms : 1;
	int64_t pieces = sms > 0 && r ? sms / r : 4;
	pieces = pieces < 4 ? pieces : 4;
	if (!r || pieces < 2 || nkt * (pieces - 1) < PTX_SK_MIN * pieces || (sms > 0 && tiles_of(s, t) <= sms))
		return s->tile; /* (fewer tiles than sms: one wave, the grid cut to their number) */
	/* the split's registers, live across the k loop, leave room for an
	 * epilogue of one input into one 16-bit output (plain, bias, bias +
	 * GELU, residual); two inputs, or an f32 output with one, spilled */
	if (s->nin > 1 || s->nout != 1 || ptx_dtypes[s->out[0].dt].size != 2)
		return s->tile;
	for (int i = 0; i < ptx_ntiles; i++) {
		const PtxTile *u = &ptx_tiles[i];
		PtxMatmulSpec w = *s;
		w.tile = i;
		if (u->streamk && !t->streamk && u->kind == t->kind && u->bm == t->bm && u->bn == t->bn && u->bk == t->bk &&
		    u->stages == t->stages && u->cluster == t->cluster && u->raiser == t->raiser && !ptx_matmul_check(&w))
			return i;
	}
	return s->tile;
}

int
ptx_tile_byname(const char *name)
{
	for (int i = 0; i < ptx_ntiles; i++)
		if (strcmp(ptx_tiles[i].name, name) == 0)
			return i;
	return -1;
}

static void
mm_setup(Mm *m, Ptx *p, const PtxMatmulSpec *s)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	*m = (Mm){.p = p, .s = s, .t = t};
	m->nt = 32 * t->warps_m * t->warps_n;
	m->wtm = t->bm / t->warps_m;
	m->wtn = t->bn / t->warps_n;
	m->mi = m->wtm / 16;
	m->nj = m->wtn / 8;
	m->kk = t->bk / 16;
	m->pa = t->bk * 2;
	m->pb = t->bn * 2;
	m->abytes = t->bm * m->pa;
	m->stage = m->abytes + t->bk * m->pb;
	m->ca = t->bk / 8;
	m->cb = t->bn / 8;
	m->la = t->bm * m->ca / m->nt;
	m->lb = t->bk * m->cb / m->nt;
	m->rsa = m->nt / m->ca;
	m->rsb = m->nt / m->cb;
	m->lda = s->lda ? s->lda : s->k;
	m->ldb = s->ldb ? s->ldb : s->n;
	m->nkt = ceil_div(s->k, t->bk);
	m->veca = m->lda % 8 == 0 && s->batch_a % 8 == 0;
	m->vecb = m->ldb % 8 == 0 && s->batch_b % 8 == 0;
	m->edge_m = s->m % t->bm != 0;
	m->edge_n = s->n % t->bn != 0 || !m->vecb;
	m->edge_k = s->k % t->bk != 0;
}

/* Does the swizzle of row r + d equal that of row r shifted by d rows? */
static bool
swz_shift_ok(int pitch, int d)
{
	return pitch >= 128 ? d % 8 == 0 : (d / (128 / pitch)) % 8 == 0 && d % (128 / pitch) == 0;
}

static const char *
tile_check(const PtxTile *t)
{
	int nt = 32 * t->warps_m * t->warps_n, ca = t->bk / 8, cb = t->bn / 8;
	if (t->bk != 32 && t->bk != 64)
		return "tile: bk must be 32 or 64";
	if (t->bm % (16 * t->warps_m) || t->bn % (16 * t->warps_n))
		return "tile: warp tiles must be multiples of 16 x 16";
	if (t->bm / t->warps_m / 16 > MAX_MI || t->bn / t->warps_n / 8 > MAX_NJ)
		return "tile: warp tile too large";
	if (nt % ca || nt % cb || (t->bm * ca) % nt || (t->bk * cb) % nt)
		return "tile: copies do not divide among the threads";
	if ((t->bm * ca) / nt > MAX_CHUNKS || (t->bk * cb) / nt > MAX_CHUNKS)
		return "tile: too many copies per thread";
	if (!swz_shift_ok(t->bk * 2, nt / ca) || !swz_shift_ok(t->bn * 2, nt / cb) ||
	    !swz_shift_ok(t->bk * 2, 16))
		return "tile: shapes break the shared-memory swizzle";
	if (t->stages < 2 || (t->bk / 16) % 2)
		return "tile: needs >= 2 stages and an even number of k16 steps";
	return NULL;
}

static const char *
tensor_check(const PtxTensor *t, int n, const char *what)
{
	static char why[96];
	for (int i = 0; i < n; i++) {
		if ((int)t[i].dt < 0 || t[i].dt >= DT_COUNT)
			return snprintf(why, sizeof why, "%s %d: unknown dtype", what, i), why;
		for (int d = 0; d < PTX_MAX_DIMS; d++)
			if (t[i].stride[d] < 0 || t[i].stride[d] > (int64_t)1 << 40)
				return snprintf(why, sizeof why, "%s %d: stride out of range", what, i), why;
	}
	return NULL;
}

const char *
ptx_matmul_check(const PtxMatmulSpec *s)
{
	const char *why;
	Mm m;
	if (s->ab != DT_BF16 && s->ab != DT_F16 && s->ab != DT_F32)
		return "matmul: A and B must be bf16, f16 or f32";
	if (s->m < 1 || s->n < 1 || s->k < 1 || s->batch < 1)
		return "matmul: m, n, k and batch must be >= 1";
	if (s->m >= (1 << 30) || s->n >= (1 << 30) || s->k >= (1 << 30))
		return "matmul: m, n and k must be < 2^30";
	if (s->tile < 0 || s->tile >= ptx_ntiles)
		return "matmul: no such tile";
	if (s->nout < 1 || s->nout > PTX_MAX_TENSORS || s->nin < 0 || s->nin > PTX_MAX_TENSORS)
		return "matmul: needs 1 to 8 outputs and at most 8 inputs";
	if ((s->lda && s->lda < s->k) || (s->ldb && s->ldb < (s->bt ? s->k : s->n)) || s->batch_a < 0 || s->batch_b < 0)
		return "matmul: leading dimensions must be >= k (A) and >= n (B; k where B is K-major)";
	if (s->route && ptx_tiles[s->tile].kind != PTX_WGMMA)
		return "matmul: routed stores (an epilogue push) need a wgmma tile";
	if (s->bt && ptx_tiles[s->tile].kind != PTX_WGMMA)
		return "matmul: B read K-major (a transpose folded into the matmul) needs a wgmma tile";
	if ((why = tensor_check(s->in, s->nin, "input")) || (why = tensor_check(s->out, s->nout, "output")))
		return why;
	if (s->epi.nins && (why = ptx_prog_check(&s->epi, s->nin, s->nout, true, 0)))
		return why;
	/* tensor cores would round f32 operands to tf32: FFMA tiles only */
	if (s->ab == DT_F32 && ptx_tiles[s->tile].kind != PTX_SIMT)
		return "matmul: f32 operands need an FFMA tile (ffma...)";
	if (ptx_tiles[s->tile].kind == PTX_WGMMA)
		return ptx_wgmma_check(s);
	if (ptx_tiles[s->tile].kind == PTX_SIMT)
		return ptx_simt_check(s);
	if ((why = tile_check(&ptx_tiles[s->tile])))
		return why;
	mm_setup(&m, NULL, s);
	/* The element-by-element copies need more registers than a
	 * 128 x 256 tile leaves (ptxas spills). */
	if ((!m.veca || !m.vecb) && m.t->bm * m.t->bn > 128 * 128)
		return "matmul: leading dimensions or batch strides that are not multiples of 8 need a 128x128 tile";
	/* Copies address their chunks as base + immediate. */
	if (m.lda * 2 * m.rsa * m.la >= (int64_t)1 << 31 || m.ldb * 2 * m.rsb * m.lb >= (int64_t)1 << 31)
		return "matmul: leading dimensions too large";
	return NULL;
}

/* d = byte offset of 16-byte chunk c of row r in a tile of `pitch`-byte rows. */
static void
swz_emit(Ptx *p, Reg d, Reg r, Reg c, int pitch)
{
	Reg a = ptx_reg(p, RC_B32), b = ptx_reg(p, RC_B32), l = ptx_reg(p, RC_B32);
	if (pitch >= 128) {
		ptx_emit(p, "and.b32 %s, %s, 7;", R(a), R(c));
		ptx_emit(p, "and.b32 %s, %s, 7;", R(b), R(r));
		ptx_emit(p, "xor.b32 %s, %s, %s;", R(a), R(a), R(b));
		ptx_emit(p, "shl.b32 %s, %s, 4;", R(a), R(a));
		ptx_emit(p, "shr.u32 %s, %s, 3;", R(b), R(c));
		ptx_emit(p, "shl.b32 %s, %s, 7;", R(b), R(b));
		ptx_emit(p, "add.u32 %s, %s, %s;", R(a), R(a), R(b));
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(d), R(r), pitch, R(a));
		return;
	}
	/* Several rows share a 128-byte line. */
	int rpl = 128 / pitch;
	ptx_emit(p, "shr.u32 %s, %s, %d;", R(l), R(r), ptx_ilog2(rpl));
	ptx_emit(p, "and.b32 %s, %s, %d;", R(a), R(r), rpl - 1);
	ptx_emit(p, "shl.b32 %s, %s, %d;", R(a), R(a), ptx_ilog2(pitch / 16));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(a), R(a), R(c));
	ptx_emit(p, "and.b32 %s, %s, 7;", R(b), R(l));
	ptx_emit(p, "xor.b32 %s, %s, %s;", R(a), R(a), R(b));
	ptx_emit(p, "shl.b32 %s, %s, 4;", R(a), R(a));
	ptx_emit(p, "shl.b32 %s, %s, 7;", R(l), R(l));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(d), R(l), R(a));
}

/* Per-thread constants: where this thread's copies go and come from, and
 * the offsets of its ldmatrix reads within a stage. */
static void
mm_thread_setup(Mm *m)
{
	Ptx *p = m->p;
	Reg warp = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_B32), c = ptx_reg(p, RC_B32);
	Reg h = ptx_reg(p, RC_B32), r = ptx_reg(p, RC_B32);
	int ktail = (int)(m->s->k - (m->nkt - 1) * m->t->bk);

	m->smem = ptx_reg(p, RC_B32);
	m->send = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(m->smem));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(m->send), R(m->smem), m->t->stages * m->stage);
	m->lane = ptx_reg(p, RC_B32);
	m->wm = ptx_reg(p, RC_B32);
	m->wn = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(m->lane), R(p->tid));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(warp), R(p->tid));
	ptx_emit(p, "div.u32 %s, %s, %d;", R(m->wm), R(warp), m->t->warps_n);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(m->wn), R(warp), m->t->warps_n);

	/* Copies: thread t copies chunk t % c of rows t / c + i * rs. */
	m->rowa0 = ptx_reg(p, RC_B32);
	m->ca0 = ptx_reg(p, RC_B32);
	m->sa0 = ptx_reg(p, RC_B32);
	ptx_emit(p, "div.u32 %s, %s, %d;", R(m->rowa0), R(p->tid), m->ca);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(m->ca0), R(p->tid), m->ca);
	swz_emit(p, m->sa0, m->rowa0, m->ca0, m->pa);
	m->rowb0 = ptx_reg(p, RC_B32);
	m->cb0 = ptx_reg(p, RC_B32);
	m->sb0 = ptx_reg(p, RC_B32);
	ptx_emit(p, "div.u32 %s, %s, %d;", R(m->rowb0), R(p->tid), m->cb);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(m->cb0), R(p->tid), m->cb);
	swz_emit(p, m->sb0, m->rowb0, m->cb0, m->pb);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(m->sb0), R(m->sb0), m->abytes);

	/* The last k tile: valid bytes of this thread's A chunks (one column
	 * chunk for all of them), valid rows left for its B chunks. */
	if (m->edge_k) {
		m->tka = ptx_reg(p, RC_B32);
		m->tkb = ptx_reg(p, RC_B32);
		ptx_emit(p, "shl.b32 %s, %s, 3;", R(t), R(m->ca0));
		ptx_emit(p, "sub.s32 %s, %d, %s;", R(m->tka), ktail, R(t)); /* elements left */
		ptx_emit(p, "sub.s32 %s, %d, %s;", R(m->tkb), ktail, R(m->rowb0));
	}

	/* ldmatrix: lane l reads row l % 16 (A) or k row l % 16 (B) and the
	 * chunk l / 16 of each 16 x 16 piece. */
	ptx_emit(p, "shr.u32 %s, %s, 4;", R(h), R(m->lane));
	ptx_emit(p, "and.b32 %s, %s, 15;", R(r), R(m->lane));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(t), R(m->wm), m->wtm, R(r));
	for (int k = 0; k < m->kk; k++) {
		m->aoff[k] = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(c), R(h), 2 * k);
		swz_emit(p, m->aoff[k], t, c, m->pa);
	}
	for (int j = 0; j < m->nj / 2; j++) {
		m->boff[j] = ptx_reg(p, RC_B32);
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(c), R(m->wn), m->wtn / 8, R(h));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(c), R(c), 2 * j);
		swz_emit(p, m->boff[j], r, c, m->pb);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(m->boff[j]), R(m->boff[j]), m->abytes);
	}
}

/* Per block: global pointers of this thread's first chunks, how many bytes
 * of each chunk are inside the matrix, zeroed accumulators. */
static void
mm_tile_setup(Mm *m)
{
	Ptx *p = m->p;
	const PtxMatmulSpec *s = m->s;
	Reg m0 = ptx_reg(p, RC_B32), n0 = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_B32);
	Reg q = ptx_reg(p, RC_PRED);

	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(m0), R(p->x), m->t->bm);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(n0), R(p->y), m->t->bn);
	m->ga = ptx_reg(p, RC_B64);
	m->gb = ptx_reg(p, RC_B64);
	ptx_mad_wide(p, m->ga, p->z, s->batch_a * 2, p->tensor[0]);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(t), R(m0), R(m->rowa0));
	ptx_mad_wide(p, m->ga, t, m->lda * 2, m->ga);
	ptx_emit(p, "shl.b32 %s, %s, 4;", R(t), R(m->ca0));
	ptx_mad_wide(p, m->ga, t, 1, m->ga);
	ptx_mad_wide(p, m->gb, p->z, s->batch_b * 2, p->tensor[1]);
	ptx_mad_wide(p, m->gb, m->rowb0, m->ldb * 2, m->gb);
	ptx_emit(p, "shl.b32 %s, %s, 3;", R(t), R(m->cb0));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(t), R(t), R(n0));
	ptx_mad_wide(p, m->gb, t, 2, m->gb);

	/* Rows of A left below this thread's first row; columns of B left. */
	m->rema = ptx_reg(p, RC_B32);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(t), R(m0), R(m->rowa0));
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(m->rema), (long long)s->m, R(t));
	m->remn = ptx_reg(p, RC_B32);
	ptx_emit(p, "shl.b32 %s, %s, 3;", R(t), R(m->cb0));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(t), R(t), R(n0));
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(m->remn), (long long)s->n, R(t));
	if (m->veca && m->edge_m)
		for (int i = 0; i < m->la; i++) {
			m->srca[i] = ptx_reg(p, RC_B32);
			ptx_emit(p, "setp.gt.s32 %s, %s, %d;", R(q), R(m->rema), i * m->rsa);
			ptx_emit(p, "selp.u32 %s, 16, 0, %s;", R(m->srca[i]), R(q));
		}
	if (m->vecb && m->edge_n) {
		m->srcb = ptx_reg(p, RC_B32);
		ptx_emit(p, "max.s32 %s, %s, 0;", R(m->srcb), R(m->remn));
		ptx_emit(p, "min.s32 %s, %s, 8;", R(m->srcb), R(m->srcb));
		ptx_emit(p, "shl.b32 %s, %s, 1;", R(m->srcb), R(m->srcb));
	}
	for (int i = 0; i < m->mi; i++)
		for (int j = 0; j < m->nj; j++)
			for (int e = 0; e < 4; e++)
				ptx_emit(p, "mov.f32 %s, 0f00000000;", R(m->acc[i][j][e]));
}

/* Source bytes of A chunk i: 16 inside, 0 outside, fewer on the k edge. */
static const char *
srca_of(Mm *m, int i, bool tail, Reg tmp)
{
	Ptx *p = m->p;
	if (!tail)
		return m->edge_m ? R(m->srca[i]) : "16";
	ptx_emit(p, "max.s32 %s, %s, 0;", R(tmp), R(m->tka));
	ptx_emit(p, "min.s32 %s, %s, 8;", R(tmp), R(tmp));
	ptx_emit(p, "shl.b32 %s, %s, 1;", R(tmp), R(tmp));
	if (m->edge_m)
		ptx_emit(p, "min.u32 %s, %s, %s;", R(tmp), R(tmp), R(m->srca[i]));
	return R(tmp);
}

static const char *
srcb_of(Mm *m, int i, bool tail, Reg tmp)
{
	Ptx *p = m->p;
	Reg q = ptx_reg(p, RC_PRED);
	if (!tail)
		return m->edge_n ? R(m->srcb) : "16";
	ptx_emit(p, "setp.gt.s32 %s, %s, %d;", R(q), R(m->tkb), i * m->rsb);
	if (m->edge_n)
		ptx_emit(p, "selp.u32 %s, %s, 0, %s;", R(tmp), R(m->srcb), R(q));
	else
		ptx_emit(p, "selp.u32 %s, 16, 0, %s;", R(tmp), R(q));
	return R(tmp);
}

/* 8 elements of one row, element by element, into a 16-byte chunk of
 * shared memory; `valid` elements are loaded, the rest are zero. */
static void
copy_elems(Ptx *p, Reg dst, int doff, Reg src, int64_t soff, int64_t estride, Reg nvalid)
{
	Reg h[8], w[4], q = ptx_reg(p, RC_PRED);
	for (int e = 0; e < 8; e++) {
		h[e] = ptx_reg(p, RC_B16);
		ptx_emit(p, "mov.b16 %s, 0;", R(h[e]));
		ptx_emit(p, "setp.gt.s32 %s, %s, %d;", R(q), R(nvalid), e);
		ptx_emit(p, "@%s ld.global.b16 %s, [%s+%lld];", R(q), R(h[e]), R(src),
		         (long long)(soff + e * estride * 2));
	}
	for (int i = 0; i < 4; i++) {
		w[i] = ptx_reg(p, RC_B32);
		ptx_emit(p, "mov.b32 %s, {%s, %s};", R(w[i]), R(h[2 * i]), R(h[2 * i + 1]));
	}
	ptx_emit(p, "st.shared.v4.b32 [%s+%d], {%s, %s, %s, %s};", R(dst), doff, R(w[0]), R(w[1]), R(w[2]),
	         R(w[3]));
}

/* Copies k tile number `kt` (a register, or the constant ckt >= 0) into
 * the stage at m->ws; tail: it is the last, partial k tile. */
static void
mm_copy_tile(Mm *m, bool tail, Reg ktr, int64_t ckt)
{
	Ptx *p = m->p;
	Reg wa = ptx_reg(p, RC_B32), wb = ptx_reg(p, RC_B32), tmp = ptx_reg(p, RC_B32);
	Reg nv = ptx_reg(p, RC_B32), kb = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);

	ptx_emit(p, "add.u32 %s, %s, %s;", R(wa), R(m->ws), R(m->sa0));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(wb), R(m->ws), R(m->sb0));
	if (!m->veca || !m->vecb) { /* k index of this tile's first column/row */
		if (ckt >= 0)
			ptx_emit(p, "mov.u32 %s, %lld;", R(kb), (long long)(ckt * m->t->bk));
		else
			ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(kb), R(ktr), m->t->bk);
	}
	for (int i = 0; i < m->la; i++) {
		int doff = i * m->rsa * m->pa;
		long long goff = (long long)i * m->rsa * m->lda * 2;
		if (m->veca) {
			const char *src = srca_of(m, i, tail, tmp);
			ptx_emit(p, "cp.async.cg.shared.global [%s+%d], [%s+%lld], 16, %s;", R(wa), doff, R(m->ga),
			         goff, src);
			continue;
		}
		/* elements valid = (row inside) ? k - (kb + 8 * chunk) : 0 */
		ptx_emit(p, "shl.b32 %s, %s, 3;", R(nv), R(m->ca0));
		ptx_emit(p, "add.u32 %s, %s, %s;", R(nv), R(nv), R(kb));
		ptx_emit(p, "sub.s32 %s, %lld, %s;", R(nv), (long long)m->s->k, R(nv));
		ptx_emit(p, "setp.gt.s32 %s, %s, %d;", R(q), R(m->rema), i * m->rsa);
		ptx_emit(p, "selp.b32 %s, %s, 0, %s;", R(nv), R(nv), R(q));
		copy_elems(p, wa, doff, m->ga, goff, 1, nv);
	}
	for (int i = 0; i < m->lb; i++) {
		int doff = i * m->rsb * m->pb;
		long long goff = (long long)i * m->rsb * m->ldb * 2;
		if (m->vecb) {
			const char *src = srcb_of(m, i, tail, tmp);
			ptx_emit(p, "cp.async.cg.shared.global [%s+%d], [%s+%lld], 16, %s;", R(wb), doff, R(m->gb),
			         goff, src);
			continue;
		}
		/* elements valid = (k row inside) ? n - (n0 + 8 * chunk) : 0 */
		ptx_emit(p, "add.u32 %s, %s, %s;", R(tmp), R(kb), R(m->rowb0));
		ptx_emit(p, "setp.lt.s32 %s, %s, %lld;", R(q), R(tmp), (long long)(m->s->k - i * m->rsb));
		ptx_emit(p, "selp.b32 %s, %s, 0, %s;", R(nv), R(m->remn), R(q));
		copy_elems(p, wb, doff, m->gb, goff, 1, nv);
	}
	ptx_emit(p, "add.u64 %s, %s, %d;", R(m->ga), R(m->ga), m->t->bk * 2);
	ptx_emit(p, "add.u64 %s, %s, %lld;", R(m->gb), R(m->gb), (long long)(m->t->bk * m->ldb * 2));
}

void
ptx_ring_advance(Ptx *p, Reg r, int stage, Reg end, int ring)
{
	Reg q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(r), R(r), stage);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(r), R(end));
	ptx_emit(p, "@%s sub.u32 %s, %s, %d;", R(q), R(r), R(r), ring);
}

/* stage base += one stage, wrapping around the ring. */
static void
advance(Mm *m, Reg r)
{
	ptx_ring_advance(m->p, r, m->stage, m->send, m->t->stages * m->stage);
}

/* The copy issued inside the main loop: tile m->tload if it exists. */
static void
mm_copy_next(Mm *m)
{
	Ptx *p = m->p;
	Reg q = ptx_reg(p, RC_PRED);
	int skip = ptx_label(p), tail = ptx_label(p);

	ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(m->tload), (long long)m->nkt);
	ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	if (m->edge_k) {
		ptx_emit(p, "setp.eq.u32 %s, %s, %lld;", R(q), R(m->tload), (long long)(m->nkt - 1));
		ptx_emit(p, "@%s bra $L%d;", R(q), tail);
	}
	mm_copy_tile(m, false, m->tload, -1);
	if (m->edge_k) {
		ptx_emit(p, "bra $L%d;", skip);
		ptx_place(p, tail);
		mm_copy_tile(m, true, m->tload, -1);
	}
	ptx_place(p, skip);
	ptx_emit(p, "cp.async.commit_group;");
	ptx_emit(p, "add.u32 %s, %s, 1;", R(m->tload), R(m->tload));
	advance(m, m->ws);
}

/* Fragments of k step k (of the stage at m->rs) into set `set`. */
static void
mm_frags(Mm *m, int k, int set)
{
	Ptx *p = m->p;
	Reg a = ptx_reg(p, RC_B32);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(a), R(m->rs), R(m->aoff[k]));
	for (int i = 0; i < m->mi; i++) {
		Reg *f = m->fa[set][i];
		ptx_emit(p, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d];", R(f[0]), R(f[1]),
		         R(f[2]), R(f[3]), R(a), i * 16 * m->pa);
	}
	for (int j = 0; j < m->nj / 2; j++) {
		Reg b = ptx_reg(p, RC_B32);
		Reg *f0 = m->fb[set][2 * j], *f1 = m->fb[set][2 * j + 1];
		ptx_emit(p, "add.u32 %s, %s, %s;", R(b), R(m->rs), R(m->boff[j]));
		ptx_emit(p, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%s, %s, %s, %s}, [%s+%d];", R(f0[0]),
		         R(f0[1]), R(f1[0]), R(f1[1]), R(b), k * 16 * m->pb);
	}
}

static void
mm_mma(Mm *m, int set)
{
	Ptx *p = m->p;
	const char *ty = m->s->ab == DT_BF16 ? "bf16" : "f16";
	for (int i = 0; i < m->mi; i++)
		for (int jj = 0; jj < m->nj; jj++) {
			/* serpentine order: consecutive mma share a fragment */
			int j = i % 2 ? m->nj - 1 - jj : jj;
			Reg *c = m->acc[i][j], *a = m->fa[set][i], *b = m->fb[set][j];
			ptx_emit(p,
			         "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, {%s, %s, %s, %s}, "
			         "{%s, %s}, {%s, %s, %s, %s};",
			         ty, ty, R(c[0]), R(c[1]), R(c[2]), R(c[3]), R(a[0]), R(a[1]), R(a[2]), R(a[3]),
			         R(b[0]), R(b[1]), R(c[0]), R(c[1]), R(c[2]), R(c[3]));
		}
}

static void
mm_mainloop(Mm *m)
{
	Ptx *p = m->p;
	int S = m->t->stages, loop = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED);

	/* The pipeline starts empty for every block: the barrier in the flag
	 * wait has ordered the last block's shared reads before these copies. */
	m->ws = ptx_reg(p, RC_B32);
	m->rs = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, %s;", R(m->ws), R(m->smem));
	for (int s = 0; s < S - 1; s++) {
		if (s < m->nkt)
			mm_copy_tile(m, m->edge_k && s == m->nkt - 1, -1, s);
		ptx_emit(p, "cp.async.commit_group;");
		ptx_emit(p, "add.u32 %s, %s, %d;", R(m->ws), R(m->ws), m->stage);
	}
	ptx_emit(p, "cp.async.wait_group %d;", S - 2);
	ptx_emit(p, "bar.sync 0;");
	ptx_emit(p, "mov.u32 %s, %s;", R(m->rs), R(m->smem));
	mm_frags(m, 0, 0);
	m->kt = ptx_reg(p, RC_B32);
	m->tload = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, 0;", R(m->kt));
	ptx_emit(p, "mov.u32 %s, %d;", R(m->tload), S - 1);
	ptx_place(p, loop);
	for (int k = 0; k < m->kk; k++) {
		if (k == m->kk - 1) {
			ptx_emit(p, "cp.async.wait_group %d;", S - 2);
			ptx_emit(p, "bar.sync 0;");
			advance(m, m->rs);
		}
		mm_frags(m, (k + 1) % m->kk, (k + 1) % 2);
		if (k == 0)
			mm_copy_next(m);
		mm_mma(m, k % 2);
	}
	ptx_emit(p, "add.u32 %s, %s, 1;", R(m->kt), R(m->kt));
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(q), R(m->kt), (long long)m->nkt);
	ptx_emit(p, "@%s bra $L%d;", R(q), loop);
	/* Only empty groups can be pending; drain them so the next block's
	 * copies are the only ones in flight. */
	ptx_emit(p, "cp.async.wait_group 0;");
}

/* ---- epilogue: acc -> program -> outputs, straight from registers ---- */

/* Pairs of accumulators whose inputs are loaded together before their
 * stores: 16 pairs of two 16-bit inputs hold 32 registers. */
enum { EPI_GROUP = 16 };

typedef struct Epi {
	Ptx *p;
	const PtxMatmulSpec *s;
	bool edge_m, edge_n;        /* tiles may cross m, n */
	Reg rowrem, colrem;         /* m - first row, n - first column of this thread */
	Reg inp[PTX_MAX_TENSORS];   /* per-tile pointers at (row0, col0) */
	Reg outp[PTX_MAX_TENSORS];
	PtxEwProg prog;
	bool pair[PTX_MAX_TENSORS]; /* outputs stored two at a time */
	const Reg *xo;              /* staged: PtxMmFrag.stage_xo, else NULL */
	int box;
	int dc0;                    /* the staged part's first column (PtxMmFrag.j0 * 8) */
	int src;                    /* PtxMmFrag.stage_in: input src - 1 read from the staged tile */
	const PtxMmPre *pre;        /* PtxMmFrag.pre: inputs loaded ahead, or NULL */
} Epi;

/* ptr = base + (z*sb + r*sr + c*sc) * size */
static Reg
tensor_ptr(Ptx *p, const PtxTensor *t, Reg base, Reg z, Reg r, Reg c)
{
	int es = ptx_dtypes[t->dt].size;
	Reg d = ptx_reg(p, RC_B64);
	ptx_mad_wide(p, d, z, t->stride[0] * es, base);
	ptx_mad_wide(p, d, r, t->stride[1] * es, d);
	ptx_mad_wide(p, d, c, t->stride[2] * es, d);
	return d;
}

static void
epi_setup(Epi *e, Reg r0, Reg c0)
{
	Ptx *p = e->p;
	const PtxMatmulSpec *s = e->s;

	e->rowrem = ptx_reg(p, RC_B32);
	e->colrem = ptx_reg(p, RC_B32);
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(e->rowrem), (long long)s->m, R(r0));
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(e->colrem), (long long)s->n, R(c0));
	for (int i = 0; i < s->nin; i++)
		if (ptx_prog_uses(&e->prog, OP_PARAM, i) && e->src != i + 1 && !(e->pre && e->pre->on[i]))
			e->inp[i] = tensor_ptr(p, &s->in[i], p->tensor[2 + i], p->z, r0, c0);
	for (int j = 0; j < s->nout && !e->xo; j++) {
		const PtxTensor *o = &s->out[j];
		e->outp[j] = tensor_ptr(p, o, p->tensor[2 + s->nin + j], p->z, r0, c0);
		e->pair[j] = o->stride[2] == 1 && o->stride[1] % 2 == 0 && o->stride[0] % 2 == 0;
	}
}

/* Element offset (bytes) of (row0 + dr, col0 + dc) from a tensor's tile pointer. */
static long long
eoff(const PtxTensor *t, int dr, int dc)
{
	return (long long)(dr * t->stride[1] + dc * t->stride[2]) * ptx_dtypes[t->dt].size;
}

/* A staged epilogue's shared address of (dr, dc) of the thread's fragment:
 * box dc / 64, chunk (dc % 64) / 8 of row dr (the thread's column within
 * the chunk is in xo), as register + *off.  Rows dr of one thread keep
 * row & 7, so the swizzle is the chunk's register alone. */
static Reg
stage_at(const Epi *e, int dr, int dc, int *off)
{
	*off = (dc - e->dc0) / 64 * e->box + dr * 128;
	return e->xo[(dc % 64) / 8];
}

/* The inputs of n (1 or 2) elements at row row0 + dr, columns col0 + dc
 * (+ 1), as stored: in[h][i] (-1 where the program does not read input
 * i).  A pair of a contiguous input is one load (b32 for 16-bit types,
 * v2 for 32-bit ones); of the staged input (e->src), one from shared
 * memory where the pair's output goes. */
static void
epi_loads(Epi *e, int dr, int dc, int n, Reg in[2][PTX_MAX_TENSORS])
{
	Ptx *p = e->p;
	const PtxMatmulSpec *s = e->s;

	for (int i = 0; i < s->nin; i++) {
		const PtxTensor *t = &s->in[i];
		const PtxDType *d = &ptx_dtypes[t->dt];
		bool pair = n == 2 && t->stride[2] == 1 && t->stride[1] % 2 == 0 && t->stride[0] % 2 == 0;
		in[0][i] = in[1][i] = -1;
		if (!ptx_prog_uses(&e->prog, OP_PARAM, i))
			continue;
		for (int h = 0; h < n; h++)
			in[h][i] = ptx_reg(p, d->st);
		if (e->pre && e->pre->on[i]) { /* ptx_mm_epi_prefetch: pairs (no tile crosses n) */
			if (n != 2 || dc % 8)
				die("epi_loads: a prefetched input read %d elements at column %d", n, dc);
			ptx_emit(p, "mov.b32 {%s, %s}, %s;", R(in[0][i]), R(in[1][i]), R(e->pre->v[i][dc / 8]));
		} else if (e->src == i + 1) { /* wg_src_plan: 16-bit, pairs (no tile crosses n) */
			Reg w = ptx_reg(p, RC_B32);
			if (n != 2 || d->size != 2)
				die("epi_loads: a staged input read %d elements of %d bytes at a time", n, d->size);
			int off;
			Reg a = stage_at(e, dr, dc, &off);
			ptx_emit(p, "ld.shared.b32 %s, [%s+%d];", R(w), R(a), off);
			ptx_emit(p, "mov.b32 {%s, %s}, %s;", R(in[0][i]), R(in[1][i]), R(w));
		} else if (pair && d->size == 2) {
			Reg w = ptx_reg(p, RC_B32);
			ptx_emit(p, "ld.global.b32 %s, [%s+%lld];", R(w), R(e->inp[i]), eoff(t, dr, dc));
			ptx_emit(p, "mov.b32 {%s, %s}, %s;", R(in[0][i]), R(in[1][i]), R(w));
		} else if (pair && d->size == 4) {
			ptx_emit(p, "ld.global.v2.%s {%s, %s}, [%s+%lld];", d->ld, R(in[0][i]), R(in[1][i]), R(e->inp[i]),
			         eoff(t, dr, dc));
		} else {
			for (int h = 0; h < n; h++)
				ptx_emit(p, "ld.global.%s %s, [%s+%lld];", d->ld, R(in[h][i]), R(e->inp[i]), eoff(t, dr, dc + h));
		}
	}
}

/* A staged epilogue's n (1 or 2) output values at (dr, dc) of the
 * thread's fragment into the shared tile (stage_at). */
static void
epi_stage(Epi *e, int dr, int dc, const Reg *v, int n, const PtxDType *d)
{
	Ptx *p = e->p;
	int off;
	Reg a = stage_at(e, dr, dc, &off);
	if (n == 2) {
		Reg w = ptx_reg(p, RC_B32);
		ptx_expand(p, d->pack2, w, v[0], v[1]);
		ptx_emit(p, "st.shared.b32 [%s+%d], %s;", R(a), off, R(w));
		return;
	}
	{
		Reg h = ptx_reg(p, RC_B16);
		ptx_expand(p, d->store, h, v[0], -1);
		ptx_emit(p, "st.shared.b16 [%s+%d], %s;", R(a), off, R(h));
	}
}

/* The program and the stores of those n elements, from their loaded inputs. */
static void
epi_finish(Epi *e, int dr, int dc, const Reg *acc, int n, Reg in[2][PTX_MAX_TENSORS])
{
	Ptx *p = e->p;
	const PtxMatmulSpec *s = e->s;
	Reg val[2][PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];

	for (int h = 0; h < n; h++) {
		PtxEnv env = {.acc = acc[h], .acc_vc = VC_F32};
		for (int i = 0; i < s->nin; i++) {
			const PtxDType *d = &ptx_dtypes[s->in[i].dt];
			env.in[i] = in[h][i];
			env.in_vc[i] = d->vc;
			if (in[h][i] >= 0 && d->load) {
				env.in[i] = ptx_reg(p, RC_F32);
				ptx_expand(p, d->load, env.in[i], in[h][i], -1);
			}
		}
		ptx_prog_emit(p, &e->prog, &env, val[h], vc);
	}
	for (int o = 0; o < e->prog.nout; o++) {
		const PtxOut *po = &e->prog.out[o];
		const PtxTensor *t = &s->out[po->tensor];
		const PtxDType *d = &ptx_dtypes[t->dt];
		Reg v[2], base = e->outp[po->tensor];
		int sv = ptx_store_src(&e->prog, po, t->dt, vc);
		for (int h = 0; h < n; h++)
			v[h] = ptx_convert(p, val[h][sv], vc[sv], d->vc);
		if (e->xo) {
			epi_stage(e, dr, dc, v, n, d);
			continue;
		}
		if (n == 2 && e->pair[po->tensor]) {
			if (d->pack2) {
				Reg w = ptx_reg(p, RC_B32);
				ptx_expand(p, d->pack2, w, v[0], v[1]);
				ptx_emit(p, "st.global.b32 [%s+%lld], %s;", R(base), eoff(t, dr, dc), R(w));
			} else
				ptx_emit(p, "st.global.v2.%s [%s+%lld], {%s, %s};", d->ld, R(base), eoff(t, dr, dc), R(v[0]),
				         R(v[1]));
			continue;
		}
		for (int h = 0; h < n; h++) {
			Reg a = ptx_reg(p, RC_B64);
			ptx_emit(p, "add.u64 %s, %s, %lld;", R(a), R(base), eoff(t, dr, dc + h));
			ptx_store_val(p, t->dt, a, v[h], d->vc);
		}
	}
}

/* n accumulators inside the matrix: load the inputs, run the program, store. */
static void
epi_elems(Epi *e, int dr, int dc, const Reg *acc, int n)
{
	Reg in[2][PTX_MAX_TENSORS];
	epi_loads(e, dr, dc, n, in);
	epi_finish(e, dr, dc, acc, n, in);
}

/* One pair of accumulators (columns col0 + dc and + 1; col0 is even).  On
 * tiles that cross n, branches rather than predicates guard the pair: a
 * predicated load per element keeps a predicate per element alive and
 * spills at 128 x 256. */
static void
epi_pair(Epi *e, int dr, int dc, Reg c0, Reg c1)
{
	Ptx *p = e->p;
	Reg acc[2] = {c0, c1}, q;
	int one, done;

	if (!e->edge_n) {
		epi_elems(e, dr, dc, acc, 2);
		return;
	}
	q = ptx_reg(p, RC_PRED);
	one = ptx_label(p);
	done = ptx_label(p);
	ptx_emit(p, "setp.gt.s32 %s, %s, %d;", R(q), R(e->colrem), dc + 1);
	ptx_emit(p, "@!%s bra $L%d;", R(q), one);
	epi_elems(e, dr, dc, acc, 2);
	ptx_emit(p, "bra $L%d;", done);
	ptx_place(p, one);
	ptx_emit(p, "setp.gt.s32 %s, %s, %d;", R(q), R(e->colrem), dc);
	ptx_emit(p, "@!%s bra $L%d;", R(q), done);
	epi_elems(e, dr, dc, acc, 1);
	ptx_place(p, done);
}

/* Whether the tiles of s may cross n.  The mma.sync kernel copies B
 * element by element when ldb is odd: its tiles then guard columns even
 * where n is a multiple of bn. */
static bool
epi_edge_n(const PtxMatmulSpec *s)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	int64_t ldb = s->ldb ? s->ldb : s->n;
	return s->n % t->bn != 0 || (t->kind == PTX_MMA_SYNC && (ldb % 8 || s->batch_b % 8));
}

/* An input the epilogue can have loaded ahead (PtxMmPre): constant along
 * rows, 16-bit, contiguous pairs along n, read by the program. */
static bool
pre_able(const PtxMatmulSpec *s, const PtxEwProg *g, int i)
{
	const PtxTensor *t = &s->in[i];
	return t->stride[1] == 0 && t->stride[2] == 1 && t->stride[0] % 2 == 0 && ptx_dtypes[t->dt].size == 2 &&
	       ptx_prog_uses(g, OP_PARAM, i);
}

/* Where the inputs wait in the epilogue, a group of 16 fragments at a
 * time, a bias held the tensor cores for a memory round trip per group
 * and row half: four a tile on the 128 x 256 tile.  Only where the
 * output is staged, and not beside tanh: with 32 registers held, tanh's
 * temporaries, or the addresses of stores from registers (an f32 output
 * beside exp), made ptxas spill 16-40 bytes on the wide tiles. */
bool
ptx_mm_epi_prefetch(Ptx *p, const PtxMatmulSpec *s, const PtxMmFrag *f, PtxMmPre *pre)
{
	int used = 0;
	bool any = false;

	memset(pre, 0, sizeof *pre);
	if (s->pre_in < 0 || !s->epi.nins || !f->stage_xo || epi_edge_n(s) || ptx_prog_uses(&s->epi, OP_TANH, -1))
		return false;
	for (int i = 0; i < s->nin; i++) {
		const PtxTensor *t = &s->in[i];
		Reg base;
		if (!pre_able(s, &s->epi, i) || used + f->nj > PTX_PRE_REGS)
			continue;
		base = tensor_ptr(p, t, p->tensor[2 + i], p->z, f->r0, f->c0);
		for (int j = 0; j < f->nj; j++) {
			pre->v[i][j] = ptx_reg(p, RC_B32);
			ptx_emit(p, "ld.global.b32 %s, [%s+%lld];", R(pre->v[i][j]), R(base), eoff(t, 0, 8 * j));
		}
		pre->on[i] = any = true;
		used += f->nj;
		buf_printf(&p->head, "// the epilogue's in%d, constant along rows, loaded while the last MMAs run\n", i);
	}
	pre->all = any;
	for (int i = 0; i < s->nin; i++)
		if (ptx_prog_uses(&s->epi, OP_PARAM, i) && !pre->on[i])
			pre->all = false;
	return any;
}

/* Fragments j0 <= j < j1 of row half h of row block i: groups of
 * EPI_GROUP pairs, each group's loads before any of its stores, which
 * ptxas may not move loads above (an output could alias an input): one
 * memory round trip a group, not one a pair.  Rows beyond m are skipped. */
static void
epi_rows(Epi *e, const PtxMmFrag *f, int i, int h, int jlo, int jhi)
{
	Ptx *p = e->p;
	int skip = ptx_label(p), dr = i * 16 + h * 8;
	if (e->edge_m) { /* rows i*16 + h*8 of this thread beyond m */
		Reg q = ptx_reg(p, RC_PRED);
		ptx_emit(p, "setp.le.s32 %s, %s, %d;", R(q), R(e->rowrem), dr);
		ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	}
	for (int j0 = jlo; j0 < jhi; j0 += EPI_GROUP) {
		int j1 = j0 + EPI_GROUP < jhi ? j0 + EPI_GROUP : jhi;
		Reg in[EPI_GROUP][2][PTX_MAX_TENSORS];
		if (e->edge_n) { /* guarded pairs, one at a time */
			for (int j = j0; j < j1; j++) {
				const Reg *a = &f->acc[(i * f->nj + j) * 4 + 2 * h];
				epi_pair(e, dr, j * 8, a[0], a[1]);
			}
			continue;
		}
		if (e->pre && e->pre->all) { /* nothing to wait for: each pair's inputs unpacked where it is finished */
			for (int j = j0; j < j1; j++) {
				epi_loads(e, dr, j * 8, 2, in[0]);
				epi_finish(e, dr, j * 8, &f->acc[(i * f->nj + j) * 4 + 2 * h], 2, in[0]);
			}
			continue;
		}
		for (int j = j0; j < j1; j++)
			epi_loads(e, dr, j * 8, 2, in[j - j0]);
		for (int j = j0; j < j1; j++)
			epi_finish(e, dr, j * 8, &f->acc[(i * f->nj + j) * 4 + 2 * h], 2, in[j - j0]);
	}
	ptx_place(p, skip);
}

void
ptx_mm_epilogue(Ptx *p, const PtxMatmulSpec *s, const PtxMmFrag *f)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	Epi e = {.p = p, .s = s, .edge_m = s->m % t->bm != 0, .xo = f->stage_xo, .box = f->stage_box, .dc0 = f->j0 * 8,
	         .src = f->stage_in, .pre = f->pre};
	int jlo = f->j0, jhi = f->j1 ? f->j1 : f->nj;

	e.edge_n = epi_edge_n(s);
	if (s->epi.nins) {
		e.prog = f->prog ? *f->prog : s->epi;
		if (f->cut) {
			e.prog.nins = f->cut;
			e.prog.out[0].val = f->cut - 1;
		}
	} else {
		e.prog.ins[0] = (PtxIns){.op = PTX_OP_ACC};
		e.prog.nins = 1;
		e.prog.out[0] = (PtxOut){0, 0};
		e.prog.nout = 1;
	}
	epi_setup(&e, f->r0, f->c0);
	if (e.pre) { /* a loaded-ahead input dies with its fragments: both row halves of a group, then the next */
		for (int i = 0; i < f->mi; i++)
			for (int j0 = jlo; j0 < jhi; j0 += EPI_GROUP)
				for (int h = 0; h < 2; h++)
					epi_rows(&e, f, i, h, j0, j0 + EPI_GROUP < jhi ? j0 + EPI_GROUP : jhi);
		return;
	}
	for (int i = 0; i < f->mi; i++)
		for (int h = 0; h < 2; h++)
			epi_rows(&e, f, i, h, jlo, jhi);
}

void
ptx_mm_frag_origin(Ptx *p, const PtxTile *t, Reg wm, Reg wn, Reg lane, Reg *r0, Reg *c0)
{
	Reg u;
	*r0 = ptx_reg(p, RC_B32);
	*c0 = ptx_reg(p, RC_B32);
	u = ptx_reg(p, RC_B32);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(*r0), R(p->x), t->bm);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(*r0), R(wm), t->bm / t->warps_m, R(*r0));
	ptx_emit(p, "shr.u32 %s, %s, 2;", R(u), R(lane));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(*r0), R(*r0), R(u));
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(*c0), R(p->y), t->bn);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(*c0), R(wn), t->bn / t->warps_n, R(*c0));
	ptx_emit(p, "and.b32 %s, %s, 3;", R(u), R(lane));
	ptx_emit(p, "mad.lo.u32 %s, %s, 2, %s;", R(*c0), R(u), R(*c0));
}

static void
mm_epilogue(Mm *m)
{
	Reg acc[MAX_MI * MAX_NJ * 4];
	PtxMmFrag f = {.mi = m->mi, .nj = m->nj, .acc = acc};

	ptx_mm_frag_origin(m->p, m->t, m->wm, m->wn, m->lane, &f.r0, &f.c0);
	for (int i = 0; i < m->mi; i++)
		for (int j = 0; j < m->nj; j++)
			for (int e = 0; e < 4; e++)
				acc[(i * m->nj + j) * 4 + e] = m->acc[i][j][e];
	ptx_mm_epilogue(m->p, m->s, &f);
}

void
ptx_emit_matmul(Buf *b, const PtxMatmulSpec *s, PtxKernel *k)
{
	const char *why = ptx_matmul_check(s);
	Ptx px, *p = &px;
	Mm m;

	if (why)
		die("ptx_emit_matmul: %s", why);
	if (ptx_tiles[s->tile].kind == PTX_WGMMA) {
		ptx_emit_wgmma(b, s, k);
		return;
	}
	if (ptx_tiles[s->tile].kind == PTX_SIMT) {
		ptx_emit_simt(b, s, k);
		return;
	}
	mm_setup(&m, p, s);
	ptx_kernel_begin(p, b, s->name, 2 + s->nin + s->nout, m.nt, m.t->min_ctas);
	buf_printf(&p->head, "// matmul %s %lldx%lldx%lld batch %lld, tile %s, %s%s\n",
	           ty_dtypes[s->ab].name, (long long)s->m, (long long)s->n, (long long)s->k,
	           (long long)s->batch, m.t->name, m.veca ? "A by cp.async" : "A by elements",
	           m.vecb ? ", B by cp.async" : ", B by elements");
	for (int i = 0; i < m.mi; i++)
		for (int j = 0; j < m.nj; j++)
			for (int e = 0; e < 4; e++)
				m.acc[i][j][e] = ptx_reg(p, RC_F32);
	for (int st = 0; st < 2; st++) {
		for (int i = 0; i < m.mi; i++)
			for (int e = 0; e < 4; e++)
				m.fa[st][i][e] = ptx_reg(p, RC_B32);
		for (int j = 0; j < m.nj; j++)
			for (int e = 0; e < 2; e++)
				m.fb[st][j][e] = ptx_reg(p, RC_B32);
	}
	ptx_params(p, 2 + s->nin + s->nout);
	mm_thread_setup(&m);
	ptx_loop_begin(p);
	mm_tile_setup(&m);
	mm_mainloop(&m);
	mm_epilogue(&m);
	ptx_loop_end(p);
	ptx_kernel_end(p);
	*k = (PtxKernel){0}; /* no tensor maps, whatever the caller left */
	ptx_matmul_kernel(k, s, m.nt, m.t->stages * m.stage);
}

void
ptx_matmul_kernel(PtxKernel *k, const PtxMatmulSpec *s, int threads, int smem)
{
	snprintf(k->name, sizeof k->name, "%s", s->name);
	k->threads = threads;
	k->smem = smem;
	k->ntensors = 2 + s->nin + s->nout;
	k->nblocks = ptx_matmul_blocks(s, 0, NULL);
}

int64_t
ptx_matmul_blocks(const PtxMatmulSpec *s, int group, PtxBlock *out)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	int64_t tm = ceil_div(s->m, t->bm), tn = ceil_div(s->n, t->bn), n = 0;
	if (group <= 0 || group > tm)
		group = (int)tm;
	for (int64_t z = 0; z < s->batch; z++)
		for (int64_t g = 0; g < tm; g += group)
			for (int64_t c = 0; c < tn; c++)
				for (int64_t r = g; r < g + group && r < tm; r++, n++)
					if (out)
						out[n] = (PtxBlock){.x = (uint32_t)r, .y = (uint32_t)c, .z = (uint32_t)z,
						                    .in_flag = PTX_NO_FLAG, .out_flag = PTX_NO_FLAG};
	return n;
}
