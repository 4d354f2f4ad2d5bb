/* codegen/wgmma.c -- the Hopper matmul: out = epilogue(A @ B) with wgmma
 * fed by TMA, warp-specialised and persistent (sm_90a).
 *
 * A CTA is one producer warpgroup and `warps_m` consumer warpgroups.  The
 * producer's thread 0 walks the CTA's block-list entries (c, c+G, ...):
 * it waits for the entry's input flag (the plan's all_gather -> matmul
 * edge: the operands are read only after it), then for every k tile of
 * BK = 64 waits until a stage of the shared-memory ring is empty, arms the
 * stage's `full` mbarrier with the bytes to come and issues the TMA copies:
 * one box {64 k, BM rows} of A and BN/64 boxes {64 n, 64 k} of B, all with
 * the 128-byte swizzle.  The other producer threads leave at once and give
 * their registers to the consumers (setmaxnreg 40 / 232), but thread 32
 * (the storer: wg_raiser) and, for an epilogue's tail of special
 * functions, warps 1-3 (wg_tail_plan).
 *
 * Consumer warpgroup g owns rows 64 g .. 64 g + 63 of the tile and all BN
 * columns: per k tile it waits on `full`, issues four wgmma m64nBNk16 with
 * shared-memory descriptors (A K-major, B N-major: B is row-major k x n, so
 * imm-trans-b = 1), commits, waits for the previous k tile's group and
 * frees that stage (one arrival per consumer warp on `empty`).  After the
 * last k tile the f32 accumulators go through the fused epilogue straight
 * from registers (codegen/matmul.c), the consumers meet at named barrier 1
 * and thread 128 raises the entry's output flag (matmul -> reduce_scatter /
 * all_reduce).  The first MMA of a tile runs with scale-d = 0, so nothing
 * zeroes the accumulators.
 *
 * Shared-memory descriptors (PTX ISA, "matrix descriptor"; the K-major form
 * checked on an H200 in ../shared/reference/ptx/wgmma_tma_bf16.ptx):
 *   A, K-major, 128B swizzle: rows of 128 B (64 k), 8-row atoms of 1 KiB:
 *     SBO = 1024 B, LBO unused (1); a k16 step advances the start by 32 B.
 *   B, N-major, 128B swizzle: each TMA box is BK rows (k) of 128 B (64 n);
 *     SBO = 1024 B between 8-k atoms, LBO = 64 * BK * 2 B between the 64-n
 *     boxes; a k16 step advances the start by 16 rows = 2048 B.
 * Stage bases are 1024-byte aligned (the swizzle pattern repeats every
 * 1 KiB), so the descriptors' base offset is 0.
 *
 * Edges need no code: TMA fills the parts of a box outside the tensor
 * (rows beyond m, columns beyond n, k beyond k) with zeros, and the
 * epilogue's stores are predicated.  A flag wait that times out makes the
 * producer write the entry's number (+1) into a quit word in shared memory
 * and arrive on the next `full` barrier without data; the consumers reach
 * that entry, see their own number and leave, so a CTA never hangs on its
 * own barriers (and nobody busy with an earlier entry mistakes it for
 * theirs: review of 2026-11-30).
 *
 * The stream-K form of a tile (PtxTile.streamk, wg_sk_setup) walks the same
 * way but cuts a mostly idle last wave's entries along k into equal pieces,
 * one a CTA, whose partial sums meet in a workspace. */
#include "codegen.h"

#include <string.h>

enum {
	WG_THREADS = 128,
	WG_BK = 64,            /* k per stage: one 128-byte swizzle row of 16-bit elements */
	WG_BOXN = 64,          /* n per B box, for the same reason */
	WG_PRODUCER_REGS = 40, /* setmaxnreg of the producer warpgroup */
	WG_CONSUMER_REGS = 232,
	WG_SMEM_MAX = 227 * 1024, /* H100/H200 per-block limit */
	WG_ALIGN = 1024,       /* swizzle atom: stage bases are aligned to it */
	WG_SK_CTAS = PTX_SK_CTAS,
	WG_SK_MIN = PTX_SK_MIN,
	WG_SK_PIECES = 4,      /* stream-K: the most pieces an entry is cut into (its finisher reads every piece's sums) */
	WG_SK_SLOTS = 2048,    /* stream-K: workspace offset of the partial sums, after the counters */
	WG_SRC_MAP = 3,        /* the source tile's tensor map: after A, B and C (it has no routes) */
	WG_SRC_AT = 1,         /* the producer loads the source tile after k tile stages + this: the
	                          consumers have then freed this entry's first k tiles, so they are
	                          past the last entry's epilogue and its store is (nearly) read */
	WG_SRC_GAP = 4,        /* k tiles between the source tile's box loads (wg_src_at) */
	WG_L2_DEFAULT = PTX_L2_SRC, /* PtxMatmulSpec.l2_first's default */
	WG_TAIL_THREADS = 96,  /* warps 1-3 of the producer warpgroup: the epilogue's tail */
	WG_TAIL_BAR = 2,       /* their named barrier (0: the CTA's, 1: the consumers') */
	WG_TAIL_MIN_KT = 16,   /* k tiles: a tile's MMAs at least ~3x the tail's time in 3 warps */
};

typedef struct Wg {
	Ptx *p;
	const PtxMatmulSpec *s;
	const PtxTile *t;
	int nwg;              /* consumer warpgroups */
	int cl, cbm;          /* CTAs on an entry (PtxTile.cluster, 1: none), rows of it each */
	Reg crow;             /* cl > 1: this CTA's first row within the entry (cluster rank x cbm) */
	Reg peer;             /* cl > 1: the other CTA's rank (cl is 2: ptx_wgmma_check) */
	int bye;              /* cl > 1: the label every thread leaves by (a cluster barrier first) */
	int abytes, bbytes;   /* one stage's A and B tiles */
	int stage;            /* bytes per stage */
	bool staged;          /* the output tile goes through shared memory and TMA (wg_stageable) */
	int parts;            /* staged: in this many parts of BN / parts columns, one at a time */
	int coff;             /* offset of the staging buffer, after the stages */
	int bars;             /* offset of the barriers: full[S], empty[S], done[2], raised[2], quit word, free */
	int64_t nkt;          /* k tiles */
	int64_t lda, ldb;
	bool sk;              /* stream-K (PtxTile.streamk): see wg_sk_setup */
	Reg ndp, end;         /* sk: entries walked whole; the end of this CTA's k tiles of the split part */
	Reg skg, skw, beg;    /* sk: CTAs that split the part (S r), its k tiles (W), this CTA's first;
	                         set by sk_consts where needed (not live across the k loops) */
	Reg insk, it, kb, ke; /* sk: a role's walk: in the split part, the unit's first k tile there
	                         (it), its k tiles [kb, ke) of entry p->blk */
	int src;              /* epilogue input src - 1 TMA loads into the staging buffer during
	                         each tile's k loop (wg_src_plan; 0: none) */
	int cut;              /* > 0: the consumers store instruction cut - 1's value and warps 1-3
	                         of the producer warpgroup run the epilogue's tail (post) on the
	                         staged tile (wg_tail_plan; 0: the consumers run it all) */
	PtxEwProg post, whole; /* cut: the tail; the program with cut - 1's value rounded as stored */
	Reg base;             /* 1024-aligned shared base */
	Reg acc[128];
} Wg;

#define R(r) ptx_rn(p, r)

/* Whether TMA marks stream `which` (PTX_L2_*) evict-first. */
static bool
wg_l2_first(const PtxMatmulSpec *s, int which)
{
	int m = s->l2_first ? s->l2_first : WG_L2_DEFAULT;
	return m > 0 && (m & which);
}

/* pol = an L2 policy: evict first, the whole access. */
static void
wg_policy_first(Ptx *p, Reg pol)
{
	ptx_emit(p, "createpolicy.fractional.L2::evict_first.b64 %s, 1.0;", R(pol));
}

static int64_t
ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int
wg_smem_at(const Wg *w, int bars)
{
	return bars + 16 * w->t->stages + 32 + 16 + (w->sk ? 32 : 0) + (w->src ? 8 : 0) + WG_ALIGN; /* + slack to align the base */
}

static int
wg_smem(const Wg *w)
{
	return wg_smem_at(w, w->bars);
}

/* Whether dynamic shared memory of `bytes` fits beside the static: a
 * cluster kernel's leaving word (ptx_kernel_cluster), which ptxas
 * rounds to 128 bytes. */
static bool
wg_fits(const Wg *w, int bytes)
{
	return bytes + (w->t->cluster > 1 ? 128 : 0) <= WG_SMEM_MAX;
}

/* Whether thread 32 of the producer warpgroup raises the tiles' flags (and
 * stores the staged tiles): the consumers only arrive on a barrier. */
static bool
wg_storer(const Wg *w)
{
	return w->t->raiser || w->staged;
}

/* In how many parts the epilogue can stage the output tile in shared
 * memory for TMA stores (0: it cannot).  With stores straight from
 * registers, the tensor cores wait for the whole tile's stores to leave
 * (10% of the matmul at 8192x8192x4096 on an H200:
 * bench/results/2026-12-04-epilogue-h200.md); staged, the consumers write
 * shared memory and go on to the next tile while the storer thread's TMA
 * writes global memory.  One 16-bit output with unit column stride and
 * 16-byte rows (a tensor map's terms), and room beside the stages for the
 * tile (1 part) or else -- what a fourth stage of 128x256 costs -- for
 * half the tile (2 parts, one buffer: the consumers write the first half,
 * wait until TMA has read it, then write the second).  Two 64-column
 * buffers in turn were 0.6-3.3% slower than the halves on an H100
 * (bench/results/2026-12-07-softmax-h100.md). */
bool
ptx_matmul_out_stageable(const PtxMatmulSpec *s)
{
	const PtxTensor *o = &s->out[0];
	int64_t lim = (int64_t)1 << 38;
	if (s->stage_out < 0 || s->nout != 1 || (s->epi.nins && s->epi.nout != 1) || !ptx_dtypes[o->dt].pack2 ||
	    o->stride[2] != 1)
		return false;
	return !(o->stride[1] % 8 || o->stride[1] >= lim ||
	         (s->batch > 1 && (o->stride[0] % 8 || !o->stride[0] || o->stride[0] >= lim)));
}

static int
wg_stageable(const Wg *w)
{
	int tile = w->cbm * w->t->bn * 2;
	if (!ptx_matmul_out_stageable(w->s))
		return 0;
	if (wg_fits(w, wg_smem_at(w, w->bars + tile)))
		return 1;
	return w->t->bn / WG_BOXN % 2 == 0 && wg_fits(w, wg_smem_at(w, w->bars + tile / 2)) ? 2 : 0;
}

/* Which epilogue input (i + 1; 0: none) TMA loads into the staging
 * buffer while the tile's k loop runs, so the epilogue reads it from
 * shared memory at the place it then writes the output to: a residual
 * read a pair at a time from global memory stalls the tensor cores for
 * four memory round trips a tile (x @ w + res cost 13% over x @ w at
 * 8192x8192x4096 on an H100, bench/results/2026-12-06-final-h100.p1.md).
 * The staged tile whole (one part), an input of C's shape and layout --
 * 16-bit, unit column stride, 16-byte rows that do not overlap -- and
 * tiles that never cross n (no guarded pairs); not stream-K, clusters or
 * routes.  Its tensor map is optional (PtxTmap): a view off 16-byte
 * alignment is read from global memory as before, the kernel checking
 * the same address. */
static int
wg_src_plan(const Wg *w)
{
	const PtxMatmulSpec *s = w->s;
	int64_t lim = (int64_t)1 << 38;
	if (s->src_smem < 0 || !w->staged || w->parts != 1 || w->sk || w->cl > 1 || s->route || s->n % w->t->bn)
		return 0;
	for (int i = 0; i < s->nin; i++) {
		const PtxTensor *t = &s->in[i];
		if (!ptx_prog_uses(&s->epi, OP_PARAM, i) || (t->dt != DT_BF16 && t->dt != DT_F16) || t->stride[2] != 1)
			continue;
		if (t->stride[1] % 8 || t->stride[1] < s->n || t->stride[1] >= lim)
			continue;
		if (s->batch > 1 && (t->stride[0] % 8 || t->stride[0] < t->stride[1] * s->m || t->stride[0] >= lim))
			continue;
		return i + 1;
	}
	return 0;
}

/* Whether the producer warpgroup's spare warps run the epilogue's tail
 * (ptx_prog_tail: GELU's sigmoid of x @ w + b) on the staged tile before
 * its TMA store.  The consumers' epilogue is bound by the special-function
 * units there -- ex2 and rcp for each of a tile's 32768 values, with both
 * consumer warpgroups in it while the tensor cores wait: bias + GELU cost
 * 3.5-7.9% over the plain matmul on an H100, the bias alone 1%
 * (bench/results/2026-12-07-pair-h100.md).  Moved to warps that otherwise
 * sleep, the SFU work runs beside the next tile's MMAs (a different
 * pipe).  The staged tile whole (in halves, the consumers would wait for
 * the first half's tail before writing the second: PtxMatmulSpec.tail 1
 * allows it, to be measured against the consumers' ~4k cycles a tile of
 * the whole tail); a k loop of at least
 * WG_TAIL_MIN_KT tiles, which the tail's ~6k cycles a 128 x 256 tile in
 * three warps hide behind (on a short one the consumers, 8 warps, are
 * faster); no source tile (the producer's load of the next one would wait
 * for the tail); no stream-K, clusters or routes (their storers' protocols
 * stay one thread's).  The consumers of a CTA's last entry run the whole
 * program (wg_epilogue), with the cut value rounded as the tail's would
 * be, so every tile has the same bits. */
static int
wg_tail_plan(Wg *w)
{
	const PtxMatmulSpec *s = w->s;
	DType indt[PTX_MAX_TENSORS];
	ValClass ivc[PTX_MAX_TENSORS], vc[PTX_MAX_INS];
	int v;
	if (s->tail < 0 || !w->staged || (w->parts > 1 && s->tail < 1) || w->src || w->nkt < WG_TAIL_MIN_KT || w->sk ||
	    w->cl > 1 || s->route || !s->epi.nins)
		return 0;
	for (int i = 0; i < PTX_MAX_TENSORS; i++)
		indt[i] = i < s->nin ? s->in[i].dt : DT_F32;
	if ((v = ptx_prog_tail(&s->epi, indt, s->ab, s->out[0].dt, &w->post)) < 0 ||
	    !ptx_prog_round_at(&s->epi, v, s->out[0].dt, &w->whole))
		return 0;
	for (int i = 0; i < PTX_MAX_TENSORS; i++)
		ivc[i] = VC_F32;
	ptx_prog_classes(&w->post, ivc, VC_F32, vc);
	return vc[ptx_store_src(&w->post, &w->post.out[0], s->out[0].dt, vc)] == VC_F32 ? v + 1 : 0;
}

static void
wg_setup(Wg *w, Ptx *p, const PtxMatmulSpec *s)
{
	*w = (Wg){.p = p, .s = s, .t = &ptx_tiles[s->tile]};
	w->nwg = w->t->warps_m;
	w->cl = w->t->cluster > 1 ? w->t->cluster : 1;
	w->cbm = w->t->bm / w->cl;
	w->abytes = w->cbm * WG_BK * 2;
	w->bbytes = WG_BK * w->t->bn * 2;
	w->stage = w->abytes + w->bbytes;
	w->bars = w->t->stages * w->stage;
	w->nkt = ceil_div(s->k, WG_BK);
	w->sk = w->t->streamk;
	w->lda = s->lda ? s->lda : s->k;
	w->ldb = s->ldb ? s->ldb : s->bt ? s->k : s->n;
	w->coff = w->bars;
	w->parts = wg_stageable(w);
	if ((w->staged = w->parts > 0))
		w->bars += w->cbm * w->t->bn * 2 / w->parts;
	else
		w->parts = 1;
	if ((w->src = wg_src_plan(w)) && !wg_fits(w, wg_smem(w)))
		w->src = 0;
	w->cut = wg_tail_plan(w);
}

bool
ptx_wgmma_tail(const PtxMatmulSpec *s)
{
	Wg w;
	if (ptx_tiles[s->tile].kind != PTX_WGMMA || ptx_wgmma_check(s))
		return false;
	wg_setup(&w, NULL, s); /* the plan alone: nothing is emitted */
	return w.cut > 0;
}

/* The barrier rings after the stages (and the staged tile), the quit
 * word after them, then `free`: the staged tile has been read by TMA. */
enum { BAR_FULL, BAR_EMPTY, BAR_DONE, BAR_RAISED, BAR_FREE };

static int
bar_off(const Wg *w, int kind)
{
	static const int per_stage[] = {0, 8, 16, 16, 16}, fixed[] = {0, 0, 0, 16, 40};
	return w->bars + per_stage[kind] * w->t->stages + fixed[kind];
}

/* The source tile's barrier (wg_src_plan: never with stream-K's words). */
static int
src_bar_off(const Wg *w)
{
	return w->bars + 16 * w->t->stages + 48;
}

static int
quit_off(const Wg *w)
{
	return w->bars + 16 * w->t->stages + 32;
}

/* Stream-K's shared words, after `free`: skip[2] (a part the consumers
 * did not store: the done ring's slots), then the fixup's verdict and its
 * first and last contributing CTA. */
enum { SK_SKIP = 0, SK_LAST = 8, SK_CLO = 12, SK_CHI = 16 };

static int
sk_off(const Wg *w, int word)
{
	return w->bars + 16 * w->t->stages + 48 + word;
}

/* Bytes of one CTA's partial sums: every consumer thread's accumulators. */
static int64_t
sk_slot_bytes(const Wg *w)
{
	return (int64_t)WG_THREADS * w->nwg * (w->t->bn / 2) * 4;
}

const char *
ptx_wgmma_check(const PtxMatmulSpec *s)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	Wg w;
	wg_setup(&w, NULL, s);
	if (t->kind != PTX_WGMMA || t->bk != WG_BK || t->warps_n != 1 || t->warps_m < 1 || t->warps_m > 2 ||
	    w.cbm * w.cl != t->bm || w.cbm != 64 * t->warps_m || t->bn % WG_BOXN || t->bn < WG_BOXN || t->bn > 256 ||
	    t->stages < 2)
		return "wgmma tile: needs bk 64, bm = 64 per consumer warpgroup (1 or 2) per CTA, bn a multiple of 64 up to 256";
	if (w.cl > 1 && (w.cl != 2 || t->bn / WG_BOXN % w.cl || s->bt || s->route || t->raiser))
		return "wgmma cluster tile: 2 CTAs sharing B's row-major boxes, no K-major B, routes or raiser warp";
	if (w.sk && (w.cl > 1 || s->route || t->raiser || t->bn % 32 || s->k >= (int64_t)1 << 28))
		return "wgmma stream-K tile: no cluster, routes or raiser warp, and k below 2^28";
	if (!wg_fits(&w, wg_smem(&w)))
		return "wgmma tile: stages do not fit in shared memory";
	if (s->route < 0 || s->route > PTX_MAX_ROUTES)
		return "wgmma: a routed matmul has 1 to 8 routes";
	if (s->route && !w.staged)
		return "wgmma: routed stores need the staged epilogue (one 16-bit output, 16-byte rows, room for the tile)";
	/* TMA: global strides are multiples of 16 bytes and below 2^40 */
	if (w.lda % 8 || w.ldb % 8 || s->batch_a % 8 || s->batch_b % 8)
		return "wgmma: TMA needs leading dimensions and batch strides that are multiples of 8 elements";
	if (w.lda >= (int64_t)1 << 38 || w.ldb >= (int64_t)1 << 38 || s->batch_a >= (int64_t)1 << 38 ||
	    s->batch_b >= (int64_t)1 << 38 || s->batch >= (int64_t)1 << 31)
		return "wgmma: strides too large for a tensor map";
	return NULL;
}

/* The tensor maps the launcher builds: A {k, m, batch}, B {n, k, batch},
 * or K-major B (bt) {k, n, batch} in one box of {64 k, BN rows}. */
static void
wg_tmaps(const Wg *w, PtxKernel *k)
{
	const PtxMatmulSpec *s = w->s;
	int64_t ba = s->batch_a ? s->batch : 1, bb = s->batch_b ? s->batch : 1;
	k->ntmaps = 2;
	k->tmap[0] = (PtxTmap){.tensor = 0, .role = 'A', .dt = s->ab, .dim = {s->k, s->m, ba},
	                       .stride = {w->lda * 2, (s->batch_a ? s->batch_a : w->lda * s->m) * 2},
	                       .box = {WG_BK, w->cbm, 1}};
	if (s->bt)
		k->tmap[1] = (PtxTmap){.tensor = 1, .role = 'B', .dt = s->ab, .dim = {s->k, s->n, bb},
		                       .stride = {w->ldb * 2, (s->batch_b ? s->batch_b : w->ldb * s->n) * 2},
		                       .box = {WG_BK, w->t->bn, 1}};
	else
		k->tmap[1] = (PtxTmap){.tensor = 1, .role = 'B', .dt = s->ab, .dim = {s->n, s->k, bb},
		                       .stride = {w->ldb * 2, (s->batch_b ? s->batch_b : w->ldb * s->k) * 2},
		                       .box = {WG_BOXN, WG_BK, 1}};
	if (w->staged) { /* the output, stored a 64-column box of the tile at a time */
		const PtxTensor *o = &s->out[0];
		k->ntmaps = 3;
		k->tmap[2] = (PtxTmap){.tensor = 2 + s->nin, .role = 'C', .dt = o->dt, .dim = {s->n, s->m, s->batch},
		                       .stride = {o->stride[1] * 2, (s->batch > 1 ? o->stride[0] : o->stride[1] * s->m) * 2},
		                       .box = {WG_BOXN, w->cbm, 1}};
		for (int j = 0; j < s->route; j++) { /* C in rank j's memory */
			k->tmap[3 + j] = k->tmap[2];
			k->tmap[3 + j].route = j + 1;
		}
		k->ntmaps += s->route;
		k->route = s->route;
	}
	if (w->src) { /* the epilogue's input, loaded as C is stored */
		const PtxTensor *t = &s->in[w->src - 1];
		k->tmap[k->ntmaps] = (PtxTmap){.tensor = 2 + w->src - 1, .role = 'E', .dt = t->dt, .dim = {s->n, s->m, s->batch},
		                               .stride = {t->stride[1] * 2, (s->batch > 1 ? t->stride[0] : t->stride[1] * s->m) * 2},
		                               .box = {WG_BOXN, w->cbm, 1}, .optional = true};
		k->ntmaps++;
	}
}

/* Shared address of barrier i of a kind (BAR_*). */
static void
bar_addr(Wg *w, Reg d, int kind, Reg i)
{
	Ptx *p = w->p;
	ptx_emit(p, "mad.lo.u32 %s, %s, 8, %s;", R(d), R(i), R(w->base));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(d), R(d), bar_off(w, kind));
}

/* Spin on an mbarrier phase: try_wait suspends in hardware for a while. */
void
ptx_mbar_wait(Ptx *p, Reg addr, Reg parity)
{
	int again = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED);
	ptx_place(p, again);
	ptx_emit(p, "mbarrier.try_wait.parity.shared::cta.b64 %s, [%s], %s;", R(q), R(addr), R(parity));
	ptx_emit(p, "@!%s bra $L%d;", R(q), again);
}

static void
bar_wait(Wg *w, Reg addr, Reg parity)
{
	ptx_mbar_wait(w->p, addr, parity);
}

/* d = the first row of this CTA's part of entry row x (x * bm, and the
 * CTA's rows within a cluster's entry). */
static void
wg_row0(Wg *w, Reg d, Reg x)
{
	Ptx *p = w->p;
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(d), R(x), w->t->bm);
	if (w->cl > 1)
		ptx_emit(p, "add.u32 %s, %s, %s;", R(d), R(d), R(w->crow));
}

/* A thread is done.  In a cluster every thread leaves by one cluster
 * barrier: a CTA's shared memory and barriers are its peer's multicast
 * targets and remote arrivals until the peer is done too. */
static void
wg_leave(Wg *w)
{
	if (w->cl > 1)
		ptx_emit(w->p, "bra $L%d;", w->bye);
	else
		ptx_emit(w->p, "ret;");
}

/* Stream-K (after Osama et al., PPoPP 2023) for the last wave alone, in
 * equal pieces.  With T entries on G CTAs (G = min(grid, WG_SK_CTAS)), the
 * full waves are walked whole, entry by entry, every CTA at the same k at
 * about the same time, so a wave's tiles share their A and B slices in L2.
 * The last wave's r = T mod G entries would leave G - r CTAs idle for a
 * whole tile: each is cut along k into S = min(WG_SK_PIECES, G / r) pieces
 * of nkt / S k tiles, one piece to each of CTAs 0 .. S r - 1 (k tiles
 * [c W / (S r), (c + 1) W / (S r)) of W = r nkt), so the wave takes 1 / S
 * of a tile's time and the pieces start at S offsets only.  Measured on an
 * H100 (bench/results/2026-12-06-streamk-h100.md): fractional shares of
 * the last wave or of a wave more, every CTA at its own k offset, read
 * A and B at DRAM speed (2048x8192x4096 at 0.73x and 0.85x as fast).
 * Where S < 2, or the pieces would save fewer than WG_SK_MIN k tiles
 * (nkt (S - 1) < WG_SK_MIN S), nothing is split.  A piece stores its
 * partial sums in the workspace (CTA c's slot), and counts itself in the
 * entry's counter; the last to count
 * adds the others' sums to its own, runs the epilogue and zeroes the
 * counter.  No CTA ever waits for another, so a grid that is not all
 * resident still finishes.  Every thread computes the same numbers here
 * (the roles walk on their own). */
static void
wg_sk_setup(Wg *w)
{
	Ptx *p = w->p;
	Reg g = ptx_reg(p, RC_B32), r = ptx_reg(p, RC_B32), nsk = ptx_reg(p, RC_B32), c = ptx_reg(p, RC_B32);
	Reg a = ptx_reg(p, RC_B64), b = ptx_reg(p, RC_B64), q = ptx_reg(p, RC_PRED), q2 = ptx_reg(p, RC_PRED);
	Reg sp = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_B32);

	w->ndp = ptx_reg(p, RC_B32), w->end = ptx_reg(p, RC_B32);
	w->skg = ptx_reg(p, RC_B32), w->skw = ptx_reg(p, RC_B32), w->beg = ptx_reg(p, RC_B32);
	w->insk = ptx_reg(p, RC_PRED), w->it = ptx_reg(p, RC_B32), w->kb = ptx_reg(p, RC_B32), w->ke = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, %%nctaid.x;", R(g));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(g), R(g), WG_SK_CTAS);
	ptx_emit(p, "rem.u32 %s, %s, %s;", R(r), R(p->param[1]), R(g));
	/* S = min(pieces, G / r); split where S >= 2 and nkt (S - 1) >= WG_SK_MIN S */
	ptx_emit(p, "max.u32 %s, %s, 1;", R(t), R(r));
	ptx_emit(p, "div.u32 %s, %s, %s;", R(sp), R(g), R(t));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(sp), R(sp), WG_SK_PIECES);
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(t), R(sp));
	ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(t), R(t), (long long)w->nkt);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(c), R(sp), WG_SK_MIN);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(t), R(c));
	ptx_emit(p, "setp.ge.and.u32 %s, %s, 2, %s;", R(q), R(sp), R(q));
	ptx_emit(p, "setp.ne.and.u32 %s, %s, 0, %s;", R(q), R(r), R(q));
	ptx_emit(p, "selp.u32 %s, %s, 0, %s;", R(nsk), R(r), R(q));
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(w->ndp), R(p->param[1]), R(nsk));
	ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(w->skw), R(nsk), (long long)w->nkt);
	ptx_emit(p, "mul.lo.u32 %s, %s, %s;", R(w->skg), R(sp), R(r));
	ptx_emit(p, "max.u32 %s, %s, 1;", R(w->skg), R(w->skg)); /* no split: W = 0, the ranges empty */
	/* this CTA's piece; none for a CTA past S r */
	ptx_emit(p, "mov.u32 %s, %%ctaid.x;", R(c));
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q2), R(c), R(w->skg));
	ptx_emit(p, "mul.wide.u32 %s, %s, %s;", R(a), R(c), R(w->skw));
	ptx_emit(p, "cvt.u64.u32 %s, %s;", R(b), R(w->skg));
	ptx_emit(p, "div.u64 %s, %s, %s;", R(a), R(a), R(b));
	ptx_emit(p, "cvt.u32.u64 %s, %s;", R(w->beg), R(a));
	ptx_emit(p, "add.u32 %s, %s, 1;", R(c), R(c));
	ptx_emit(p, "mul.wide.u32 %s, %s, %s;", R(a), R(c), R(w->skw));
	ptx_emit(p, "div.u64 %s, %s, %s;", R(a), R(a), R(b));
	ptx_emit(p, "cvt.u32.u64 %s, %s;", R(w->end), R(a));
	ptx_emit(p, "selp.u32 %s, %s, 0, %s;", R(w->beg), R(w->beg), R(q2));
	ptx_emit(p, "selp.u32 %s, %s, 0, %s;", R(w->end), R(w->end), R(q2));
	ptx_emit(p, "mov.u32 %s, %s;", R(w->it), R(w->beg));
	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(w->insk), R(w->it), R(w->it));
}

/* The split's S r, W and this CTA's first k tile of it again, from the
 * grid, nblocks and ndp (r = nblocks - ndp > 0 where a piece is fixed up):
 * cheaper than keeping them live in the consumers across the k loop, where
 * the accumulators need the registers. */
static void
sk_consts(Wg *w)
{
	Ptx *p = w->p;
	Reg a = ptx_reg(p, RC_B64), b = ptx_reg(p, RC_B64), c = ptx_reg(p, RC_B32), r = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, %%nctaid.x;", R(w->skg));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(w->skg), R(w->skg), WG_SK_CTAS);
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(r), R(p->param[1]), R(w->ndp));
	ptx_emit(p, "div.u32 %s, %s, %s;", R(w->skg), R(w->skg), R(r));
	ptx_emit(p, "min.u32 %s, %s, %d;", R(w->skg), R(w->skg), WG_SK_PIECES);
	ptx_emit(p, "mul.lo.u32 %s, %s, %s;", R(w->skg), R(w->skg), R(r));
	ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(w->skw), R(r), (long long)w->nkt);
	ptx_emit(p, "mov.u32 %s, %%ctaid.x;", R(c));
	ptx_emit(p, "mul.wide.u32 %s, %s, %s;", R(a), R(c), R(w->skw));
	ptx_emit(p, "cvt.u64.u32 %s, %s;", R(b), R(w->skg));
	ptx_emit(p, "div.u64 %s, %s, %s;", R(a), R(a), R(b));
	ptx_emit(p, "cvt.u32.u64 %s, %s;", R(w->beg), R(a));
}

/* A role's next unit at the top of its loop (stream-K): entry p->blk and
 * k tiles [kb, ke); none left -> done. */
static void
wg_unit(Wg *w, int done)
{
	Ptx *p = w->p;
	int split = ptx_label(p), whole = ptx_label(p), have = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED);

	ptx_emit(p, "@%s bra $L%d;", R(w->insk), split);
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(p->blk), R(w->ndp));
	ptx_emit(p, "@%s bra $L%d;", R(q), whole);
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(w->insk), R(w->it), R(w->it));
	ptx_place(p, split);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(w->it), R(w->end));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	ptx_emit(p, "div.u32 %s, %s, %lld;", R(p->blk), R(w->it), (long long)w->nkt);
	ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(w->kb), R(p->blk), (long long)w->nkt);
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(w->kb), R(w->it), R(w->kb));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(p->blk), R(p->blk), R(w->ndp));
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(w->ke), R(w->end), R(w->it));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(w->ke), R(w->ke), R(w->kb));
	ptx_emit(p, "min.u32 %s, %s, %lld;", R(w->ke), R(w->ke), (long long)w->nkt);
	ptx_emit(p, "bra $L%d;", have);
	ptx_place(p, whole);
	ptx_emit(p, "mov.u32 %s, 0;", R(w->kb));
	ptx_emit(p, "mov.u32 %s, %lld;", R(w->ke), (long long)w->nkt);
	ptx_place(p, have);
}

/* A role's step to its next unit: the next k tiles of the split part, or
 * the entry a grid further. */
static void
wg_next(Wg *w, Reg n, int loop)
{
	Ptx *p = w->p;
	if (w->sk) {
		int whole = ptx_label(p);
		Reg d = ptx_reg(p, RC_B32);
		ptx_emit(p, "@!%s bra $L%d;", R(w->insk), whole);
		ptx_emit(p, "sub.u32 %s, %s, %s;", R(d), R(w->ke), R(w->kb));
		ptx_emit(p, "add.u32 %s, %s, %s;", R(w->it), R(w->it), R(d));
		ptx_emit(p, "bra $L%d;", loop);
		ptx_place(p, whole);
	}
	ptx_next_entry(p, n, loop);
}

/* The k loop's first tile and its bound: kb and ke (stream-K), else 0 and nkt. */
static void
wg_k_first(Wg *w, Reg kt)
{
	Ptx *p = w->p;
	if (w->sk)
		ptx_emit(p, "mov.u32 %s, %s;", R(kt), R(w->kb));
	else
		ptx_emit(p, "mov.u32 %s, 0;", R(kt));
}

static void
wg_k_more(Wg *w, Reg q, Reg kt)
{
	Ptx *p = w->p;
	if (w->sk)
		ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(kt), R(w->ke));
	else
		ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(q), R(kt), (long long)w->nkt);
}

/* stage = (stage + 1) % S, phase flips when it wraps */
static void
next_stage(Wg *w, Reg stage, Reg phase)
{
	Ptx *p = w->p;
	Reg q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(stage), R(stage));
	ptx_emit(p, "setp.eq.u32 %s, %s, %d;", R(q), R(stage), w->t->stages);
	ptx_emit(p, "@%s mov.u32 %s, 0;", R(q), R(stage));
	ptx_emit(p, "@%s xor.b32 %s, %s, 1;", R(q), R(phase), R(phase));
}

/* A TMA producer's next entry: none left (-> done), its input flag waited
 * for (a timeout -> quit_l), then the fence that lets TMA, the async
 * proxy, read what other proxies wrote (NCCL, copy engines, other
 * kernels), and the trace stamp.  The matmul's and attention's. */
void
ptx_wg_producer_entry(Ptx *p, Reg q, Reg quit, int done, int quit_l)
{
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(p->blk), R(p->param[1]));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(p->entry), R(p->blk), (int)sizeof(PtxBlock), R(p->param[0]));
	ptx_flag_wait(p, quit);
	ptx_emit(p, "@%s bra $L%d;", R(quit), quit_l);
	ptx_emit(p, "fence.proxy.async.global;");
	if (p->cluster > 1) { /* one record an entry: the first CTA's */
		int skip = ptx_label(p);
		ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(p->crank));
		ptx_emit(p, "@%s bra $L%d;", R(q), skip);
		ptx_trace_stamp(p, 0);
		ptx_place(p, skip);
	} else
		ptx_trace_stamp(p, 0);
}

/* Before part tc of the CTA's tiles is written to the staging buffer: TMA
 * has read part tc - 1 (the storer's tc - 1st arrival on `free`; it is at
 * most one phase behind, so a parity wait is exact). */
static void
wg_stage_free(Wg *w, Reg tc)
{
	Ptx *p = w->p;
	int skip = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), par = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B32);
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(q), R(tc));
	ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(par), R(tc));
	ptx_emit(p, "and.b32 %s, %s, 1;", R(par), R(par));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w->base), bar_off(w, BAR_FREE));
	bar_wait(w, a, par);
	ptx_place(p, skip);
}

/* ok = the source tile is TMA's this call: its input 16-byte aligned, as
 * the launcher encodes the map only then (PtxTmap.optional). */
static void
wg_src_ok(Wg *w, Reg ok)
{
	Ptx *p = w->p;
	Reg t = ptx_reg(p, RC_B64);
	ptx_emit(p, "and.b64 %s, %s, 15;", R(t), R(p->tensor[2 + w->src - 1]));
	ptx_emit(p, "setp.eq.u64 %s, %s, 0;", R(ok), R(t));
}

/* The k tile after which the producer loads box b of an entry's source
 * tile: box 0 at k tile stages + WG_SRC_AT (or the last), the others
 * WG_SRC_GAP k tiles apart where the k loop is long enough (PtxMatmulSpec.
 * src_spread 0), else with box 0.  Every CTA of a wave reaches the same k
 * tile at about the same time: loaded at once, the wave's source tiles
 * (64 KiB a CTA, 8.4 MB on 132 SMs) were one burst of HBM reads that the
 * mainloop's next k tiles queued behind.  Spread, x @ w + r ran at 0.952 /
 * 0.962 / 0.969 of the plain matmul at 1024 / 4096 / 8192 x 8192 x 4096 on
 * an H100, at once 0.948 / 0.954 / 0.960 (bench/results/2026-12-07-tail-h100.md):
 * a part of the residual's cost, not most of it.  Box 0 a quarter into
 * the k loop instead (so the wait for the last tile's store to be read
 * out of the staging buffer could not hold the producer while the ring
 * drained) was 0.4-0.8 % slower at 1024 to 8192 rows
 * (bench/results/2026-12-07-ring-h100.md): that wait is not the cost. */
static int64_t
wg_src_at(const Wg *w, int b)
{
	int64_t at = w->nkt - 1 < w->t->stages + WG_SRC_AT ? w->nkt - 1 : w->t->stages + WG_SRC_AT;
	int64_t spread = at + (int64_t)b * WG_SRC_GAP;
	if (at < 0)
		return 0;
	return w->s->src_spread < 0 || spread > w->nkt - 1 ? at : spread;
}

/* The producer, after issuing k tile kt of entry pc (at (m0, n0) of batch
 * z): at k tile wg_src_at(b) box b of the entry's source tile into the
 * staging buffer, a TMA load per 64-column box completing on the source
 * barrier, which box 0 arms with the whole tile's bytes -- box 0 once TMA
 * has read the last entry's output tile there (the storer's arrival on
 * `free`, for which the consumers wait too; a ring of S stages lets k
 * tile S + 1 be issued only once the consumers have freed this entry's k
 * tile 1, so they have finished the last entry's epilogue and the wait is
 * at most its store's reading).  After the entry's flag wait, so a tile
 * another rank writes is read only once it is there. */
static void
wg_src_load(Wg *w, Reg kt, Reg pc, Reg m0, Reg n0, Reg ok, Reg tms)
{
	Ptx *p = w->p;
	int skip = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), a = ptx_reg(p, RC_B32), dst = ptx_reg(p, RC_B32);
	Reg c = ptx_reg(p, RC_B32), st = ptx_reg(p, RC_B64), pol = ptx_reg(p, RC_B64);
	bool hint = wg_l2_first(w->s, PTX_L2_SRC); /* read once */

	ptx_emit(p, "@!%s bra $L%d;", R(ok), skip);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w->base), src_bar_off(w));
	if (hint)
		wg_policy_first(p, pol);
	for (int b = 0; b < w->t->bn / WG_BOXN; b++) {
		int next = ptx_label(p);
		ptx_emit(p, "setp.ne.u32 %s, %s, %lld;", R(q), R(kt), (long long)wg_src_at(w, b));
		ptx_emit(p, "@%s bra $L%d;", R(q), next);
		if (b == 0) {
			wg_stage_free(w, pc); /* entries and parts are one (wg_src_plan) */
			ptx_emit(p, "mbarrier.arrive.expect_tx.shared::cta.b64 %s, [%s], %d;", R(st), R(a),
			         w->cbm * w->t->bn * 2);
		}
		ptx_emit(p, "add.u32 %s, %s, %d;", R(dst), R(w->base), w->coff + b * w->cbm * 128);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(c), R(n0), b * WG_BOXN);
		ptx_emit(p, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes%s [%s], [%s, {%s, %s, %s}], [%s]%s%s;",
		         hint ? ".L2::cache_hint" : "", R(dst), R(tms), R(c), R(m0), R(p->z), R(a), hint ? ", " : "",
		         hint ? R(pol) : "");
		ptx_place(p, next);
	}
	ptx_place(p, skip);
}

/* Thread 0 of the producer warpgroup. */
static void
wg_producer(Wg *w, Reg stage, Reg phase)
{
	Ptx *p = w->p;
	const PtxMatmulSpec *s = w->s;
	int loop = ptx_label(p), done = ptx_label(p), quit_l = ptx_label(p), kloop = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), quit = ptx_reg(p, RC_PRED), n = ptx_reg(p, RC_B32);
	Reg tma = ptx_reg(p, RC_B64), tmb = ptx_reg(p, RC_B64), kt = ptx_reg(p, RC_B32);
	Reg full = ptx_reg(p, RC_B32), empty = ptx_reg(p, RC_B32), dst = ptx_reg(p, RC_B32);
	Reg kc = ptx_reg(p, RC_B32), m0 = ptx_reg(p, RC_B32), n0 = ptx_reg(p, RC_B32), c = ptx_reg(p, RC_B32);
	Reg za = ptx_reg(p, RC_B32), zb = ptx_reg(p, RC_B32), ph1 = ptx_reg(p, RC_B32), st = ptx_reg(p, RC_B64);
	Reg qa = ptx_reg(p, RC_B32), pc = ptx_reg(p, RC_B32);
	Reg mbo = ptx_reg(p, RC_B32), mbc = ptx_reg(p, RC_B32), mask = ptx_reg(p, RC_B16);
	Reg srcok = -1, tms = -1;

	ptx_emit(p, "mov.u32 %s, 0;", R(pc)); /* this CTA's entries so far */
	if (w->cl > 1) { /* its share of B: boxes from rank x boxes-a-share on */
		int share = w->t->bn / WG_BOXN / w->cl;
		ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(mbo), R(p->crank), share * WG_BOXN * WG_BK * 2);
		ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(mbc), R(p->crank), share * WG_BOXN);
		ptx_emit(p, "mov.b16 %s, %d;", R(mask), (1 << w->cl) - 1);
	}
	ptx_emit(p, "mov.b64 %s, tm0;", R(tma));
	ptx_emit(p, "cvta.param.u64 %s, %s;", R(tma), R(tma));
	ptx_emit(p, "mov.b64 %s, tm1;", R(tmb));
	ptx_emit(p, "cvta.param.u64 %s, %s;", R(tmb), R(tmb)); /* both prefetched by wg_warm */
	if (w->src) {
		srcok = ptx_reg(p, RC_PRED);
		tms = ptx_reg(p, RC_B64);
		wg_src_ok(w, srcok);
		ptx_emit(p, "mov.b64 %s, tm%d;", R(tms), WG_SRC_MAP);
		ptx_emit(p, "cvta.param.u64 %s, %s;", R(tms), R(tms));
	}
	ptx_place(p, loop);
	if (w->sk)
		wg_unit(w, done);
	ptx_wg_producer_entry(p, q, quit, done, quit_l);
	ptx_emit(p, "ld.global.nc.v2.u32 {%s, %s}, [%s];", R(p->x), R(p->y), R(p->entry));
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+8];", R(p->z), R(p->entry));
	wg_row0(w, m0, p->x);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(n0), R(p->y), w->t->bn);
	/* an operand shared by every batch has a map of one batch */
	ptx_emit(p, "mov.u32 %s, %s;", R(za), s->batch_a ? R(p->z) : "0");
	ptx_emit(p, "mov.u32 %s, %s;", R(zb), s->batch_b ? R(p->z) : "0");
	wg_k_first(w, kt);
	ptx_place(p, kloop);
	bar_addr(w, empty, BAR_EMPTY, stage);
	ptx_emit(p, "xor.b32 %s, %s, 1;", R(ph1), R(phase)); /* a fresh barrier counts as released */
	bar_wait(w, empty, ph1);
	bar_addr(w, full, BAR_FULL, stage);
	ptx_emit(p, "mbarrier.arrive.expect_tx.shared::cta.b64 %s, [%s], %d;", R(st), R(full), w->stage);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(dst), R(stage), w->stage, R(w->base));
	ptx_emit(p, "shl.b32 %s, %s, 6;", R(kc), R(kt)); /* k of the tile: kt * 64 */
	ptx_emit(p, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], [%s];",
	         R(dst), R(tma), R(kc), R(m0), R(za), R(full));
	if (s->bt) { /* one box of BN rows of 64 k */
		ptx_emit(p, "add.u32 %s, %s, %d;", R(qa), R(dst), w->abytes);
		ptx_emit(p, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], [%s];",
		         R(qa), R(tmb), R(kc), R(n0), R(zb), R(full));
	}
	for (int i = 0; !s->bt && w->cl == 1 && i < w->t->bn / WG_BOXN; i++) {
		ptx_emit(p, "add.u32 %s, %s, %d;", R(qa), R(dst), w->abytes + i * WG_BOXN * WG_BK * 2);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(c), R(n0), i * WG_BOXN);
		ptx_emit(p, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], [%s];",
		         R(qa), R(tmb), R(c), R(kc), R(zb), R(full));
	}
	/* a cluster: this CTA's share of B's boxes, into the same stage of
	 * every CTA of the cluster, each of whose `full` barriers counts them */
	for (int i = 0; w->cl > 1 && i < w->t->bn / WG_BOXN / w->cl; i++) {
		ptx_emit(p, "add.u32 %s, %s, %d;", R(qa), R(dst), w->abytes + i * WG_BOXN * WG_BK * 2);
		ptx_emit(p, "add.u32 %s, %s, %s;", R(qa), R(qa), R(mbo));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(c), R(n0), i * WG_BOXN);
		ptx_emit(p, "add.u32 %s, %s, %s;", R(c), R(c), R(mbc));
		ptx_emit(p, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
		         "[%s], [%s, {%s, %s, %s}], [%s], %s;", R(qa), R(tmb), R(c), R(kc), R(zb), R(full), R(mask));
	}
	if (w->src)
		wg_src_load(w, kt, pc, m0, n0, srcok, tms);
	next_stage(w, stage, phase);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(kt), R(kt));
	wg_k_more(w, q, kt);
	ptx_emit(p, "@%s bra $L%d;", R(q), kloop);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(pc), R(pc));
	wg_next(w, n, loop);
	/* A wait timed out: tell the consumers, through the next full barrier,
	 * once they have emptied it (a parity wait sees only one phase ahead).
	 * The quit word names the entry (its number in this CTA's list + 1), so
	 * a consumer or the raiser still busy with an earlier entry, reading it
	 * at any moment, never takes it for its own.  Not a cluster's way out
	 * (the peer would wait for this CTA's share of B and its consumers'
	 * arrivals): lower.c gives cluster tiles no flags, so with no flag to
	 * wait for, a cluster kernel never comes here. */
	ptx_place(p, quit_l);
	bar_addr(w, empty, BAR_EMPTY, stage);
	ptx_emit(p, "xor.b32 %s, %s, 1;", R(ph1), R(phase));
	bar_wait(w, empty, ph1);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(qa), R(w->base), quit_off(w));
	ptx_emit(p, "add.u32 %s, %s, 1;", R(pc), R(pc));
	ptx_emit(p, "st.shared.u32 [%s], %s;", R(qa), R(pc));
	bar_addr(w, full, BAR_FULL, stage);
	ptx_emit(p, "mbarrier.arrive.shared::cta.b64 %s, [%s];", R(st), R(full));
	ptx_place(p, done);
	wg_leave(w);
}

/* The descriptor of a shared address with the 128-byte swizzle. */
void
ptx_wg_desc(Ptx *p, Reg d, Reg addr, int lbo, int sbo)
{
	unsigned long long hi = (1ull << 62) | ((unsigned long long)(sbo >> 4) << 32) | ((unsigned long long)(lbo >> 4) << 16);
	ptx_emit(p, "cvt.u64.u32 %s, %s;", R(d), R(addr));
	ptx_emit(p, "and.b64 %s, %s, 262143;", R(d), R(d));
	ptx_emit(p, "shr.u64 %s, %s, 4;", R(d), R(d));
	ptx_emit(p, "or.b64 %s, %s, %llu;", R(d), R(d), hi);
}

static void
wg_mma(Wg *w, Reg da, Reg db, Reg scale)
{
	Ptx *p = w->p;
	Buf regs = {0};
	int nacc = w->t->bn / 2;
	for (int i = 0; i < nacc; i++)
		buf_printf(&regs, "%s%s", i ? ", " : "", R(w->acc[i]));
	/* imm-trans-b: 1 for N-major B, 0 for K-major (bt) */
	ptx_emit(p, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %s, %s, %s, 1, 1, 0, %d;", w->t->bn,
	         ty_dtypes[w->s->ab].name, ty_dtypes[w->s->ab].name, regs.s, R(da), R(db), R(scale), w->s->bt ? 0 : 1);
	buf_free(&regs);
}

/* Part tc of this CTA's tiles (a tile is `parts` parts) is stored: each
 * consumer warp's lane 0 (after the warp's stores, bar.warp.sync) arrives
 * on done[tc % 2], first waiting until the raiser has finished with that
 * slot's previous use, so neither ring runs two phases ahead of its
 * waiter.  Stream-K: thread 0 (`raiser`) first tells the storer in
 * skip[tc % 2] whether the part was left unstored (keep false: another
 * CTA finishes the entry). */
static void
tile_done(Wg *w, Reg tc, Reg lane0, Reg raiser, Reg keep)
{
	Ptx *p = w->p;
	int skip = ptx_label(p), fresh = ptx_label(p);
	Reg slot = ptx_reg(p, RC_B32), use = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
	Reg st = ptx_reg(p, RC_B64);

	ptx_emit(p, "bar.warp.sync -1;");
	ptx_emit(p, "@!%s bra $L%d;", R(lane0), skip);
	ptx_emit(p, "and.b32 %s, %s, 1;", R(slot), R(tc));
	ptx_emit(p, "shr.u32 %s, %s, 1;", R(use), R(tc));
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(q), R(use));
	ptx_emit(p, "@%s bra $L%d;", R(q), fresh);
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(use), R(use));
	ptx_emit(p, "and.b32 %s, %s, 1;", R(use), R(use));
	bar_addr(w, a, BAR_RAISED, slot);
	bar_wait(w, a, use);
	ptx_place(p, fresh);
	if (w->sk) { /* skip[slot]: the part was not staged (raiser, thread 0, read it last for part tc - 2) */
		Reg v = ptx_reg(p, RC_B32);
		ptx_emit(p, "selp.u32 %s, 0, 1, %s;", R(v), R(keep));
		ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(slot), R(w->base));
		ptx_emit(p, "@%s st.shared.u32 [%s+%d], %s;", R(raiser), R(a), sk_off(w, SK_SKIP), R(v));
	}
	bar_addr(w, a, BAR_DONE, slot);
	ptx_emit(p, "mbarrier.arrive.shared::cta.b64 %s, [%s];", R(st), R(a));
	ptx_place(p, skip);
}

/* After an entry's last TMA stores: their completion and the proxy fence,
 * which the output flag raised next needs (its release covers what this
 * thread's stores wrote), and the trace's end stamp (the tile in memory).
 * An entry with neither (every flagless kernel untraced) goes on once TMA
 * has read the tile: a store still in flight then finishes by the grid's
 * end, which orders it before the stream's next work, as a kernel's
 * plain stores are.  The full wait was the storer's last step before the
 * CTA could leave -- the store's trip to memory in every small matmul's
 * time.  Routed tiles (another rank's memory) always wait. */
static void
wg_stores_done(Wg *w)
{
	Ptx *p = w->p;
	int skip = ptx_label(p);
	if (!w->s->route) {
		Reg fo = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
		ptx_emit(p, "ld.global.nc.u32 %s, [%s+24];", R(fo), R(p->entry));
		ptx_emit(p, "setp.eq.u32 %s, %s, %u;", R(q), R(fo), PTX_NO_FLAG);
		ptx_emit(p, "setp.eq.and.u64 %s, %s, 0, %s;", R(q), R(p->param[5]), R(q));
		ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	}
	ptx_emit(p, "cp.async.bulk.wait_group 0;");
	ptx_emit(p, "fence.proxy.async.global;");
	ptx_place(p, skip);
}

/* The storer's share of part q of a staged tile (entry p->entry, whose
 * consumers have written that part to the staging buffer): a TMA store per
 * 64-column box, then `free` once TMA has read them (the consumers' next
 * part waits for it); after the last part, the stores' completion and the
 * proxy fence, so the output flag raised after this covers them. */
static void
wg_store_tile(Wg *w, Reg rt, Reg drow, Reg dcol, int q)
{
	int pb = w->t->bn / WG_BOXN / w->parts; /* boxes a part */
	Ptx *p = w->p;
	Reg tmc = ptx_reg(p, RC_B64), m0 = ptx_reg(p, RC_B32), n0 = ptx_reg(p, RC_B32), c = ptx_reg(p, RC_B32);
	Reg src = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B32), st = ptx_reg(p, RC_B64), pol = ptx_reg(p, RC_B64);
	bool hint = wg_l2_first(w->s, PTX_L2_OUT); /* written once */

	ptx_emit(p, "mov.b64 %s, tm2;", R(tmc));
	if (w->s->route) { /* route j: map 3 + j, selected (param space is not indexed) */
		Reg q = ptx_reg(p, RC_PRED);
		for (int j = 0; j < w->s->route; j++) {
			ptx_emit(p, "setp.eq.u32 %s, %s, %d;", R(q), R(rt), j + 1);
			ptx_emit(p, "@%s mov.b64 %s, tm%d;", R(q), R(tmc), 3 + j);
		}
	}
	ptx_emit(p, "cvta.param.u64 %s, %s;", R(tmc), R(tmc));
	ptx_emit(p, "ld.global.nc.v2.u32 {%s, %s}, [%s];", R(p->x), R(p->y), R(p->entry));
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+8];", R(p->z), R(p->entry));
	wg_row0(w, m0, p->x);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(n0), R(p->y), w->t->bn);
	if (w->s->route) {
		ptx_emit(p, "add.u32 %s, %s, %s;", R(m0), R(m0), R(drow));
		ptx_emit(p, "add.u32 %s, %s, %s;", R(n0), R(n0), R(dcol));
	}
	if (hint)
		wg_policy_first(p, pol);
	for (int b = q * pb; b < (q + 1) * pb; b++) {
		ptx_emit(p, "add.u32 %s, %s, %d;", R(src), R(w->base), w->coff + (b - q * pb) * w->cbm * 128);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(c), R(n0), b * WG_BOXN);
		ptx_emit(p, "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group%s [%s, {%s, %s, %s}], [%s]%s%s;",
		         hint ? ".L2::cache_hint" : "", R(tmc), R(c), R(m0), R(p->z), R(src), hint ? ", " : "", hint ? R(pol) : "");
	}
	ptx_emit(p, "cp.async.bulk.commit_group;");
	ptx_emit(p, "cp.async.bulk.wait_group.read 0;");
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w->base), bar_off(w, BAR_FREE));
	ptx_emit(p, "mbarrier.arrive.shared::cta.b64 %s, [%s];", R(st), R(a));
	if (q < w->parts - 1)
		return;
	wg_stores_done(w);
}

/* A routed kernel's entry (codegen.h, PtxRoute): rt = its route field (0:
 * none), and from the table after the block list its route's shift
 * (drow, dcol) and flags array (else the kernel's flags, no shift). */
static void
wg_route(Wg *w, Reg rt, Reg drow, Reg dcol, Reg flags)
{
	Ptx *p = w->p;
	int own = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), tab = ptx_reg(p, RC_B64), j = ptx_reg(p, RC_B32);

	ptx_emit(p, "mov.u32 %s, 0;", R(drow));
	ptx_emit(p, "mov.u32 %s, 0;", R(dcol));
	ptx_emit(p, "mov.u64 %s, %s;", R(flags), R(p->param[2]));
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+28];", R(rt), R(p->entry));
	ptx_emit(p, "shr.u32 %s, %s, %d;", R(rt), R(rt), PTX_ROUTE_SHIFT);
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(q), R(rt));
	ptx_emit(p, "@%s bra $L%d;", R(q), own);
	ptx_emit(p, "mul.wide.u32 %s, %s, %d;", R(tab), R(p->param[1]), (int)sizeof(PtxBlock));
	ptx_emit(p, "add.u64 %s, %s, %d;", R(tab), R(tab), PTX_ROUTE_ALIGN - 1); /* ptx_route_table_off */
	ptx_emit(p, "and.b64 %s, %s, %d;", R(tab), R(tab), -PTX_ROUTE_ALIGN);
	ptx_emit(p, "add.u64 %s, %s, %s;", R(tab), R(tab), R(p->param[0]));
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(j), R(rt));
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(tab), R(j), (int)sizeof(PtxRoute), R(tab));
	ptx_emit(p, "ld.global.nc.u64 %s, [%s];", R(flags), R(tab));
	ptx_emit(p, "ld.global.nc.v2.u32 {%s, %s}, [%s+8];", R(drow), R(dcol), R(tab));
	ptx_emit(p, "cvta.to.global.u64 %s, %s;", R(flags), R(flags));
	ptx_place(p, own);
}

/* last = this CTA's current entry is its last: the epilogue's tail then
 * stays with the consumers, who have nothing after it to overlap, and
 * who are 8 warps to the producer's 3 (wg_tail_plan). */
static void
wg_last(Wg *w, Reg last)
{
	Ptx *p = w->p;
	ptx_peek_next(p, last, -1);
	ptx_emit(p, "not.pred %s, %s;", R(last), R(last));
}

/* Warps 1-3 of the producer warpgroup (wg_tail_plan), once the consumers
 * have staged a part: the epilogue's tail on each of its values, in
 * place, eight a thread at a time (a 16-byte chunk: the swizzle moves
 * chunks, and the tail reads nothing of a value's place, so the chunks
 * go in any order, edges' zeros too, which TMA's stores leave out).  Then
 * the proxy fence on every writer's side, since TMA reads what these
 * stores wrote, and the three warps meet before thread 32 stores. */
static void
wg_tail(Wg *w)
{
	Ptx *p = w->p;
	int loop = ptx_label(p), out = ptx_label(p), bytes = w->cbm * w->t->bn * 2 / w->parts;
	DType dt = w->s->out[0].dt;
	Reg a = ptx_reg(p, RC_B32), end = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
	Reg wd[4], v[8], val[PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];

	ptx_emit(p, "sub.u32 %s, %s, 32;", R(a), R(p->tid));
	ptx_emit(p, "mad.lo.u32 %s, %s, 16, %s;", R(a), R(a), R(w->base));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(a), w->coff);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(end), R(w->base), w->coff + bytes);
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(a), R(end));
	ptx_emit(p, "@%s bra $L%d;", R(q), out);
	ptx_load_words_in(p, "shared", dt, a, 8, wd);
	for (int i = 0; i < 4; i++)
		ptx_unpack_word(p, dt, wd[i], &v[2 * i]);
	for (int j = 0; j < 8; j++) {
		PtxEnv env = {.acc = v[j], .acc_vc = VC_F32};
		ptx_prog_emit(p, &w->post, &env, val, vc);
		v[j] = val[ptx_store_src(&w->post, &w->post.out[0], dt, vc)];
	}
	ptx_store_vec_in(p, "shared", dt, a, 8, v);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(a), 16 * WG_TAIL_THREADS);
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, out);
	ptx_emit(p, "fence.proxy.async.shared::cta;");
	/* not .aligned: thread 32 may come from a branch its warp's others skipped */
	ptx_emit(p, "barrier.sync %d, %d;", WG_TAIL_BAR, WG_TAIL_THREADS);
}

/* Thread 32 (the producer warpgroup's second warp): per entry of the CTA,
 * waits until the consumers have stored the tile (staged: written it to
 * shared memory, part by part, which this thread then stores by TMA), then
 * raises its output flag -- so the system-scope release (MEMBAR.SYS: it
 * waits for the tile's stores to reach memory) never stalls a consumer
 * warpgroup.  tc counts entries, hc parts (the done / raised rings').
 * With a tail (wg_tail_plan) warps 1-3 walk with it and run the tail on
 * each part first; thread 32 alone stores and raises. */
static void
wg_raiser(Wg *w)
{
	Ptx *p = w->p;
	int loop = ptx_label(p), done = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), yes = ptx_reg(p, RC_PRED), n = ptx_reg(p, RC_B32), tc = ptx_reg(p, RC_B32);
	Reg slot = ptx_reg(p, RC_B32), par = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B32), v = ptx_reg(p, RC_B32);
	Reg st = ptx_reg(p, RC_B64), hc = ptx_reg(p, RC_B32);
	Reg rt = ptx_reg(p, RC_B32), drow = ptx_reg(p, RC_B32), dcol = ptx_reg(p, RC_B32), fl = ptx_reg(p, RC_B64);

	/* a cluster's entry: the first CTA's raiser alone stamps its trace end
	 * (and would raise its flag: lower.c gives cluster tiles none yet) */
	if (w->cl > 1)
		ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(yes), R(p->crank));
	else if (w->cut)
		ptx_emit(p, "setp.eq.u32 %s, %s, 32;", R(yes), R(p->tid));
	else
		ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(yes), R(p->tid), R(p->tid));
	ptx_emit(p, "mov.u32 %s, 0;", R(tc));
	ptx_emit(p, "mov.u32 %s, 0;", R(hc));
	ptx_place(p, loop);
	if (w->sk)
		wg_unit(w, done);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(p->blk), R(p->param[1]));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(p->entry), R(p->blk), (int)sizeof(PtxBlock), R(p->param[0]));
	for (int part = 0; part < w->parts; part++) {
		bool last = part == w->parts - 1;
		int keep = w->sk ? ptx_label(p) : 0, skipped = w->sk ? ptx_label(p) : 0, alone = 0;
		ptx_emit(p, "and.b32 %s, %s, 1;", R(slot), R(hc));
		ptx_emit(p, "shr.u32 %s, %s, 1;", R(par), R(hc));
		ptx_emit(p, "and.b32 %s, %s, 1;", R(par), R(par));
		bar_addr(w, a, BAR_DONE, slot);
		bar_wait(w, a, par);
		if (part == 0) { /* consumers give up only before an entry's first part */
			ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w->base), quit_off(w));
			ptx_emit(p, "ld.shared.u32 %s, [%s];", R(v), R(a));
			ptx_emit(p, "sub.u32 %s, %s, 1;", R(v), R(v)); /* the entry the producer gave up on */
			ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(q), R(v), R(tc));
			ptx_emit(p, "@%s bra $L%d;", R(q), done);
			if (w->s->route) /* the tile and its flag go where its route says */
				wg_route(w, rt, drow, dcol, fl);
		}
		if (w->cut) { /* not on the CTA's last entry, whose consumers ran it (wg_epilogue) */
			int ran = ptx_label(p);
			Reg last = ptx_reg(p, RC_PRED);
			alone = ptx_label(p);
			wg_last(w, last);
			ptx_emit(p, "@%s bra $L%d;", R(last), ran);
			wg_tail(w);
			ptx_place(p, ran);
			ptx_emit(p, "@!%s bra $L%d;", R(yes), alone);
		}
		if (w->sk) { /* a unit another CTA finishes: nothing to store or raise */
			ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(slot), R(w->base));
			ptx_emit(p, "ld.shared.u32 %s, [%s+%d];", R(v), R(a), sk_off(w, SK_SKIP));
			ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(v));
			ptx_emit(p, "@!%s bra $L%d;", R(q), keep);
			if (w->staged) { /* the consumers' next part still waits for `free` */
				ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w->base), bar_off(w, BAR_FREE));
				ptx_emit(p, "mbarrier.arrive.shared::cta.b64 %s, [%s];", R(st), R(a));
			}
			ptx_emit(p, "bra $L%d;", skipped);
			ptx_place(p, keep);
		}
		if (w->s->route)
			wg_store_tile(w, rt, drow, dcol, part);
		else if (w->staged)
			wg_store_tile(w, 0, 0, 0, part);
		if (last && w->s->route)
			ptx_flag_raise_at(p, yes, fl);
		else if (last)
			ptx_flag_raise(p, yes);
		if (w->sk)
			ptx_place(p, skipped);
		bar_addr(w, a, BAR_RAISED, slot);
		ptx_emit(p, "mbarrier.arrive.shared::cta.b64 %s, [%s];", R(st), R(a));
		if (w->cut)
			ptx_place(p, alone);
		ptx_emit(p, "add.u32 %s, %s, 1;", R(hc), R(hc));
	}
	ptx_emit(p, "add.u32 %s, %s, 1;", R(tc), R(tc));
	wg_next(w, n, loop);
	ptx_place(p, done);
	if (w->staged) /* the CTA's shared memory outlives the last store's reads (wg_stores_done) */
		ptx_emit(p, "cp.async.bulk.wait_group%s 0;", w->s->route ? "" : ".read");
	wg_leave(w);
}

/* xo[j]: this thread's address in the staged tile of 16-byte chunk j of
 * its first row (r0, within the tile) at its column c0 (< 8), in box 0.
 * The 128-byte swizzle puts chunk j of row r at j ^ (r & 7); the thread's
 * rows r0 and r0 + 8 share r & 7 = lane / 4 (`t`), so a chunk's xor is
 * the same register for both. */
static void
wg_stage_addrs(Wg *w, Reg *xo, Reg r0, Reg c0, Reg t)
{
	Ptx *p = w->p;
	Reg row = ptx_reg(p, RC_B32), x = ptx_reg(p, RC_B32);
	ptx_emit(p, "mad.lo.u32 %s, %s, 128, %s;", R(row), R(r0), R(w->base));
	ptx_emit(p, "mad.lo.u32 %s, %s, 2, %s;", R(row), R(c0), R(row));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(row), R(row), w->coff);
	for (int j = 0; j < 8; j++) {
		xo[j] = ptx_reg(p, RC_B32);
		ptx_emit(p, "xor.b32 %s, %s, %d;", R(x), R(t), j);
		ptx_emit(p, "shl.b32 %s, %s, 4;", R(x), R(x));
		ptx_emit(p, "add.u32 %s, %s, %s;", R(xo[j]), R(row), R(x));
	}
}

/* A consumer warp frees a stage (empty: its barrier's address): one
 * arrival by its lane 0, and in a cluster one on each peer's barrier of
 * the stage too, since every CTA's producer writes its share of B there. */
static void
wg_release(Wg *w, Reg empty, Reg lane0, Reg st)
{
	Ptx *p = w->p;
	ptx_emit(p, "@%s mbarrier.arrive.shared::cta.b64 %s, [%s];", R(lane0), R(st), R(empty));
	if (w->cl > 1) {
		Reg ra = ptx_reg(p, RC_B32);
		ptx_emit(p, "mapa.shared::cluster.u32 %s, %s, %s;", R(ra), R(empty), R(w->peer));
		ptx_emit(p, "@%s mbarrier.arrive.shared::cluster.b64 _, [%s];", R(lane0), R(ra));
	}
}

/* d = the workspace address of CTA c's partial-sum slot at this consumer
 * thread's first 16 bytes (ct: its number among the consumers); the
 * thread's next 16 bytes lie a consumer row further. */
static void
sk_slot_addr(Wg *w, Reg d, Reg c, Reg ct)
{
	Ptx *p = w->p;
	ptx_emit(p, "mul.wide.u32 %s, %s, %lld;", R(d), R(c), (long long)sk_slot_bytes(w));
	ptx_emit(p, "add.u64 %s, %s, %s;", R(d), R(d), R(p->tensor[p->ntensors - 1]));
	ptx_emit(p, "mad.wide.u32 %s, %s, 16, %s;", R(d), R(ct), R(d));
	ptx_emit(p, "add.u64 %s, %s, %d;", R(d), R(d), WG_SK_SLOTS);
}

/* d = the CTA whose k tiles of the split part hold k tile x (x + 1 for
 * the last one before it): floor(((x + 1) G - 1) / W), the largest c with
 * floor(c W / G) <= x. */
static void
sk_cta_of(Wg *w, Reg d, Reg x1)
{
	Ptx *p = w->p;
	Reg a = ptx_reg(p, RC_B64), b = ptx_reg(p, RC_B64);
	ptx_emit(p, "mul.wide.u32 %s, %s, %s;", R(a), R(x1), R(w->skg));
	ptx_emit(p, "sub.u64 %s, %s, 1;", R(a), R(a));
	ptx_emit(p, "cvt.u64.u32 %s, %s;", R(b), R(w->skw));
	ptx_emit(p, "div.u64 %s, %s, %s;", R(a), R(a), R(b));
	ptx_emit(p, "cvt.u32.u64 %s, %s;", R(d), R(a));
}

/* Stream-K's fixup (wg_sk_setup), by every consumer thread after a unit's
 * k loop: keep = whether this CTA runs the entry's epilogue -- a whole
 * entry, or the last of the entry's CTAs to count itself, which then sums
 * every piece's slot in order (loaded at the GPU's scope: L1 is not
 * coherent, and the slots are reused by every call). */
static void
sk_fixup(Wg *w, Reg ct, Reg raiser, Reg keep)
{
	Ptx *p = w->p;
	int nacc = w->t->bn / 2, nt = WG_THREADS * w->nwg, out = ptx_label(p), skipped = ptx_label(p);
	int loop = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), c = ptx_reg(p, RC_B32), e = ptx_reg(p, RC_B32);
	Reg ptr = ptx_reg(p, RC_B64), ctr = ptx_reg(p, RC_B64), old = ptx_reg(p, RC_B32), x = ptx_reg(p, RC_B32);
	Reg clo = ptx_reg(p, RC_B32), chi = ptx_reg(p, RC_B32), me = ptx_reg(p, RC_B32);
	Reg v[16];

	for (int i = 0; i < 16; i++)
		v[i] = ptx_reg(p, RC_F32);
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(keep), R(ct), R(ct));
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(w->kb));
	ptx_emit(p, "setp.ne.or.u32 %s, %s, %lld, %s;", R(q), R(w->ke), (long long)w->nkt, R(q));
	ptx_emit(p, "@!%s bra $L%d;", R(q), out);
	/* the partial sums into this CTA's slot (its one piece) */
	sk_consts(w);
	ptx_emit(p, "mov.u32 %s, %%ctaid.x;", R(me));
	sk_slot_addr(w, ptr, me, ct);
	for (int i = 0; i < nacc / 4; i++)
		ptx_emit(p, "st.global.v4.f32 [%s+%d], {%s, %s, %s, %s};", R(ptr), i * nt * 16, R(w->acc[4 * i]),
		         R(w->acc[4 * i + 1]), R(w->acc[4 * i + 2]), R(w->acc[4 * i + 3]));
	ptx_emit(p, "bar.sync 1, %d;", nt);
	/* thread 0 counts the CTA in (releasing every consumer's stores, which
	 * the barrier ordered before it) and learns whether it is the last */
	ptx_emit(p, "@!%s bra $L%d;", R(raiser), skipped);
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(e), R(p->blk), R(w->ndp));
	ptx_emit(p, "mad.wide.u32 %s, %s, 4, %s;", R(ctr), R(e), R(p->tensor[p->ntensors - 1]));
	ptx_emit(p, "atom.acq_rel.gpu.global.add.u32 %s, [%s], 1;", R(old), R(ctr));
	ptx_emit(p, "mul.lo.u32 %s, %s, %lld;", R(x), R(e), (long long)w->nkt);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(x), R(x));
	sk_cta_of(w, clo, x);
	ptx_emit(p, "add.u32 %s, %s, %lld;", R(x), R(x), (long long)w->nkt - 1);
	sk_cta_of(w, chi, x);
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(x), R(chi), R(clo)); /* the others: contributors - 1 */
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(q), R(old), R(x));
	ptx_emit(p, "@%s st.relaxed.gpu.global.u32 [%s], 0;", R(q), R(ctr)); /* for the next call */
	ptx_emit(p, "selp.u32 %s, 1, 0, %s;", R(x), R(q));
	ptx_emit(p, "st.shared.u32 [%s+%d], %s;", R(w->base), sk_off(w, SK_LAST), R(x));
	ptx_emit(p, "st.shared.u32 [%s+%d], %s;", R(w->base), sk_off(w, SK_CLO), R(clo));
	ptx_emit(p, "st.shared.u32 [%s+%d], %s;", R(w->base), sk_off(w, SK_CHI), R(chi));
	ptx_place(p, skipped);
	ptx_emit(p, "bar.sync 1, %d;", nt);
	ptx_emit(p, "ld.shared.u32 %s, [%s+%d];", R(x), R(w->base), sk_off(w, SK_LAST));
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(keep), R(x));
	ptx_emit(p, "@!%s bra $L%d;", R(keep), out);
	ptx_emit(p, "ld.shared.u32 %s, [%s+%d];", R(clo), R(w->base), sk_off(w, SK_CLO));
	ptx_emit(p, "ld.shared.u32 %s, [%s+%d];", R(chi), R(w->base), sk_off(w, SK_CHI));
	ptx_emit(p, "fence.acq_rel.gpu;");
	/* every piece's sums, this CTA's own from its slot too, in the pieces'
	 * order: the same additions whichever CTA comes last, so a call's
	 * result does not depend on the order the pieces finished in */
	for (int i = 0; i < nacc; i++)
		ptx_emit(p, "mov.f32 %s, 0f00000000;", R(w->acc[i]));
	ptx_emit(p, "mov.u32 %s, %s;", R(c), R(clo));
	ptx_place(p, loop);
	sk_slot_addr(w, ptr, c, ct);
	for (int i = 0; i < nacc / 4; i += 4) {
		for (int j = 0; j < 4; j++)
			ptx_emit(p, "ld.relaxed.gpu.global.v4.f32 {%s, %s, %s, %s}, [%s+%d];", R(v[4 * j]), R(v[4 * j + 1]),
			         R(v[4 * j + 2]), R(v[4 * j + 3]), R(ptr), (i + j) * nt * 16);
		for (int j = 0; j < 16; j++)
			ptx_emit(p, "add.f32 %s, %s, %s;", R(w->acc[4 * i + j]), R(w->acc[4 * i + j]), R(v[j]));
	}
	ptx_emit(p, "add.u32 %s, %s, 1;", R(c), R(c));
	ptx_emit(p, "setp.le.u32 %s, %s, %s;", R(q), R(c), R(chi));
	ptx_emit(p, "@%s bra $L%d;", R(q), loop);
	ptx_place(p, out);
}

/* The epilogue of entry tc with its source tile in the staging buffer
 * (wg_src_load), once the source barrier's phase tc completes; where this
 * call's input is off 16-byte alignment, with it read from global memory. */
static void
wg_src_epilogue(Wg *w, PtxMmFrag *f, Reg ok, Reg tc)
{
	Ptx *p = w->p;
	int glob = ptx_label(p), after = ptx_label(p);
	Reg par = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B32);

	ptx_emit(p, "@!%s bra $L%d;", R(ok), glob);
	ptx_emit(p, "and.b32 %s, %s, 1;", R(par), R(tc));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w->base), src_bar_off(w));
	bar_wait(w, a, par);
	f->stage_in = w->src;
	ptx_mm_epilogue(p, w->s, f);
	f->stage_in = 0;
	ptx_emit(p, "bra $L%d;", after);
	ptx_place(p, glob);
	ptx_mm_epilogue(p, w->s, f);
	ptx_place(p, after);
}

/* The epilogue of a consumer's part (the source tile's where wg_src_plan
 * put one there); with a tail, two: the CTA's last entry runs it whole. */
static void
wg_epilogue(Wg *w, PtxMmFrag *f, Reg srcok, Reg tc)
{
	Ptx *p = w->p;
	int whole = ptx_label(p), after = ptx_label(p);
	Reg last = ptx_reg(p, RC_PRED);
	if (w->cut) {
		wg_last(w, last);
		ptx_emit(p, "@%s bra $L%d;", R(last), whole);
	}
	for (int cut = w->cut;; cut = 0) {
		f->cut = cut;
		f->prog = cut || !w->cut ? NULL : &w->whole;
		if (w->src)
			wg_src_epilogue(w, f, srcok, tc);
		else
			ptx_mm_epilogue(p, w->s, f);
		if (!cut)
			break;
		ptx_emit(p, "bra $L%d;", after);
		ptx_place(p, whole);
	}
	f->prog = NULL;
	if (w->cut)
		ptx_place(p, after);
}

/* A consumer warpgroup: the k loop of each tile, the epilogue, the flag. */
static void
wg_consumer(Wg *w, Reg stage, Reg phase)
{
	Ptx *p = w->p;
	int loop = ptx_label(p), done = ptx_label(p), kloop = ptx_label(p), first = ptx_label(p);
	int go = ptx_label(p), quitting = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), n = ptx_reg(p, RC_B32), ct = ptx_reg(p, RC_B32), g = ptx_reg(p, RC_B32);
	Reg tc = ptx_reg(p, RC_B32);
	Reg lane = ptx_reg(p, RC_B32), wid = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_B32);
	Reg a0 = ptx_reg(p, RC_B32), da0 = ptx_reg(p, RC_B64), db0 = ptx_reg(p, RC_B64);
	Reg da = ptx_reg(p, RC_B64), db = ptx_reg(p, RC_B64), so = ptx_reg(p, RC_B64);
	Reg kt = ptx_reg(p, RC_B32), full = ptx_reg(p, RC_B32), empty = ptx_reg(p, RC_B32);
	Reg prev = ptx_reg(p, RC_B32), qa = ptx_reg(p, RC_B32), qv = ptx_reg(p, RC_B32);
	Reg scale = ptx_reg(p, RC_PRED), yes = ptx_reg(p, RC_PRED), lane0 = ptx_reg(p, RC_PRED);
	Reg raiser = ptx_reg(p, RC_PRED), r0 = ptx_reg(p, RC_B32), c0 = ptx_reg(p, RC_B32);
	Reg st = ptx_reg(p, RC_B64), rr = ptx_reg(p, RC_B32), cc = ptx_reg(p, RC_B32);
	Reg keep = w->sk ? ptx_reg(p, RC_PRED) : yes; /* stream-K: this CTA finishes the unit's entry */
	Reg srcok = w->src ? ptx_reg(p, RC_PRED) : -1;
	Reg xo[8];
	PtxMmFrag f = {.r0 = rr, .c0 = cc, .mi = 1, .nj = w->t->bn / 8, .acc = w->acc,
	               .stage_xo = w->staged ? xo : NULL, .stage_box = w->cbm * 128};
	PtxMmPre pre;

	ptx_emit(p, "sub.u32 %s, %s, %d;", R(ct), R(p->tid), WG_THREADS);
	ptx_emit(p, "shr.u32 %s, %s, 7;", R(g), R(ct));
	ptx_emit(p, "and.b32 %s, %s, 31;", R(lane), R(ct));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(wid), R(ct)); /* consumer warp 0 .. 4 nwg - 1 */
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(lane0), R(lane));
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(raiser), R(ct));
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(yes), R(ct), R(ct));
	ptx_emit(p, "mov.u32 %s, 0;", R(tc));
	/* descriptors of stage 0: A rows 64 g.., B from its first box */
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a0), R(g), 64 * WG_BK * 2, R(w->base));
	ptx_wg_desc(p, da0, a0, 16, 1024);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a0), R(w->base), w->abytes);
	ptx_wg_desc(p, db0, a0, w->s->bt ? 16 : WG_BOXN * WG_BK * 2, 1024); /* bt: K-major, as A */
	/* the epilogue's first row and column within a tile */
	ptx_emit(p, "and.b32 %s, %s, 3;", R(t), R(lane));
	ptx_emit(p, "shl.b32 %s, %s, 1;", R(c0), R(t));
	ptx_emit(p, "shr.u32 %s, %s, 2;", R(t), R(lane));
	ptx_emit(p, "mad.lo.u32 %s, %s, 16, %s;", R(r0), R(wid), R(t)); /* 64 g + 16 (warp in g) */
	ptx_emit(p, "add.u32 %s, %s, %d;", R(qa), R(w->base), quit_off(w));
	if (w->staged)
		wg_stage_addrs(w, xo, r0, c0, t);
	if (w->src)
		wg_src_ok(w, srcok);

	ptx_place(p, loop);
	if (w->sk)
		wg_unit(w, done);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(p->blk), R(p->param[1]));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(p->entry), R(p->blk), (int)sizeof(PtxBlock), R(p->param[0]));
	wg_k_first(w, kt);
	/* the first k tile, peeled: only there may the producer have given up
	 * (and off the k loop's back edge, ptxas need not drain the MMAs) */
	bar_addr(w, full, BAR_FULL, stage);
	bar_wait(w, full, phase);
	ptx_emit(p, "ld.shared.u32 %s, [%s];", R(qv), R(qa));
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(qv), R(qv)); /* the entry the producer gave up on */
	if (w->parts > 1) /* tc counts parts */
		ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(qv), R(qv), w->parts);
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(q), R(qv), R(tc));
	ptx_emit(p, "@%s bra $L%d;", R(q), quitting);
	ptx_emit(p, "bra $L%d;", go);
	ptx_place(p, kloop);
	bar_addr(w, full, BAR_FULL, stage);
	bar_wait(w, full, phase);
	ptx_place(p, go);
	ptx_emit(p, "mul.wide.u32 %s, %s, %d;", R(so), R(stage), w->stage >> 4);
	ptx_emit(p, "add.u64 %s, %s, %s;", R(da), R(da0), R(so));
	ptx_emit(p, "add.u64 %s, %s, %s;", R(db), R(db0), R(so));
	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(scale), R(kt), w->sk ? R(w->kb) : "0");
	ptx_emit(p, "wgmma.fence.sync.aligned;");
	for (int kk = 0; kk < WG_BK / 16; kk++) {
		if (kk) {
			ptx_emit(p, "add.u64 %s, %s, 2;", R(da), R(da));       /* 32 B */
			ptx_emit(p, "add.u64 %s, %s, %d;", R(db), R(db), w->s->bt ? 2 : 128); /* 32 B K-major, 2048 B N-major */
		}
		wg_mma(w, da, db, kk ? yes : scale);
	}
	ptx_emit(p, "wgmma.commit_group.sync.aligned;");
	/* the previous k tile's MMAs are done: its stage can be refilled */
	ptx_emit(p, "wgmma.wait_group.sync.aligned 1;");
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(q), R(kt), w->sk ? R(w->kb) : "0");
	ptx_emit(p, "@%s bra $L%d;", R(q), first);
	bar_addr(w, empty, BAR_EMPTY, prev);
	wg_release(w, empty, lane0, st);
	ptx_place(p, first);
	ptx_emit(p, "mov.u32 %s, %s;", R(prev), R(stage));
	next_stage(w, stage, phase);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(kt), R(kt));
	wg_k_more(w, q, kt);
	ptx_emit(p, "@%s bra $L%d;", R(q), kloop);
	/* the epilogue's absolute row and column of this thread's fragment,
	 * and its inputs constant along rows, while the last MMAs run */
	ptx_emit(p, "ld.global.nc.v2.u32 {%s, %s}, [%s];", R(p->x), R(p->y), R(p->entry));
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+8];", R(p->z), R(p->entry));
	wg_row0(w, rr, p->x);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(rr), R(rr), R(r0));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(cc), R(p->y), w->t->bn, R(c0));
	if (ptx_mm_epi_prefetch(p, w->s, &f, &pre))
		f.pre = &pre;
	ptx_emit(p, "wgmma.wait_group.sync.aligned 0;");
	bar_addr(w, empty, BAR_EMPTY, prev);
	wg_release(w, empty, lane0, st);
	if (w->sk)
		sk_fixup(w, ct, raiser, keep);

	for (int part = 0; part < w->parts; part++) { /* tc counts parts */
		f.j0 = part * f.nj / w->parts;
		f.j1 = (part + 1) * f.nj / w->parts;
		int unstored = w->sk ? ptx_label(p) : 0;
		if (w->staged)
			wg_stage_free(w, tc);
		if (w->sk) /* another CTA finishes the entry */
			ptx_emit(p, "@!%s bra $L%d;", R(keep), unstored);
		wg_epilogue(w, &f, srcok, tc);
		if (w->staged) /* the async proxy (TMA) reads what these stores wrote */
			ptx_emit(p, "fence.proxy.async.shared::cta;");
		if (w->sk)
			ptx_place(p, unstored);
		if (wg_storer(w)) {
			tile_done(w, tc, lane0, raiser, keep);
		} else {
			ptx_emit(p, "bar.sync 1, %d;", WG_THREADS * w->nwg);
			if (w->sk) { /* only the CTA that finished the entry (lower.c gives none a flag yet) */
				Reg fin = ptx_reg(p, RC_PRED);
				ptx_emit(p, "and.pred %s, %s, %s;", R(fin), R(raiser), R(keep));
				ptx_flag_raise(p, fin);
			} else
				ptx_flag_raise(p, raiser);
		}
		ptx_emit(p, "add.u32 %s, %s, 1;", R(tc), R(tc));
	}
	wg_next(w, n, loop);
	/* the producer gave up: wake the raiser, which then sees the quit word */
	ptx_place(p, quitting);
	if (wg_storer(w))
		tile_done(w, tc, lane0, raiser, yes);
	ptx_place(p, done);
	wg_leave(w);
}

/* Thread 0, first thing: A's and B's tensor maps and the CTA's first
 * block-list entry on their way on chip while the barriers are made, so
 * the producer's first reads of them (the entry's flag and tile, two
 * dependent loads, then the first TMA copy) find them there.  The entry
 * only where it is the CTA's id (not a cluster's, nor stream-K's). */
static void
wg_warm(Wg *w)
{
	Ptx *p = w->p;
	Reg tm = ptx_reg(p, RC_B64), e = ptx_reg(p, RC_B64), q = ptx_reg(p, RC_PRED);
	for (int i = 0; i < 2; i++) {
		ptx_emit(p, "mov.b64 %s, tm%d;", R(tm), i);
		ptx_emit(p, "cvta.param.u64 %s, %s;", R(tm), R(tm));
		ptx_emit(p, "prefetch.tensormap [%s];", R(tm));
	}
	if (w->cl > 1 || w->sk)
		return;
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(p->blk), R(p->param[1]));
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(e), R(p->blk), (int)sizeof(PtxBlock), R(p->param[0]));
	ptx_emit(p, "@%s prefetch.global.L1 [%s];", R(q), R(e));
	ptx_emit(p, "@%s prefetch.global.L1 [%s+%d];", R(q), R(e), (int)sizeof(PtxBlock) - 1);
}

void
ptx_emit_wgmma(Buf *b, const PtxMatmulSpec *s, PtxKernel *k)
{
	const char *why = ptx_matmul_check(s);
	Ptx px, *p = &px;
	Wg w;
	Reg stage, phase, a, q;
	int consumer;

	if (why)
		die("ptx_emit_wgmma: %s", why);
	wg_setup(&w, p, s);
	memset(k, 0, sizeof *k);
	wg_tmaps(&w, k);
	ptx_kernel_begin_tm(p, b, s->name, 2 + s->nin + s->nout + w.sk, k->ntmaps, WG_THREADS * (1 + w.nwg), 1);
	buf_printf(&p->head, "// matmul %s %lldx%lldx%lld batch %lld, tile %s: wgmma + TMA, %d consumer warpgroups%s\n",
	           ty_dtypes[s->ab].name, (long long)s->m, (long long)s->n, (long long)s->k, (long long)s->batch,
	           w.t->name, w.nwg, w.sk ? ", stream-K" : "");
	if (w.staged && w.parts > 1)
		buf_printf(&p->head, "// the output tile staged in %d parts of %d columns, through 1 buffer\n", w.parts,
		           w.t->bn / w.parts);
	if (w.src)
		buf_printf(&p->head, "// the epilogue's in%d read from the staged tile, loaded there by TMA during the k loop\n",
		           w.src - 1);
	if (w.cut)
		buf_printf(&p->head, "// the epilogue's tail after instruction %d (%d instructions) run by the producer's "
		           "warps 1-3 on the staged tile\n", w.cut - 1, w.post.nins - 1);
	for (int i = 0; i < w.t->bn / 2; i++)
		w.acc[i] = ptx_reg(p, RC_F32);
	ptx_kernel_cluster(p, w.cl);
	ptx_params(p, 2 + s->nin + s->nout + w.sk); /* stream-K: its workspace last */
	w.base = ptx_reg(p, RC_B32);
	w.bye = ptx_label(p);
	if (w.cl > 1) {
		w.crow = ptx_reg(p, RC_B32);
		ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(w.crow), R(p->crank), w.cbm);
		w.peer = ptx_reg(p, RC_B32);
		ptx_emit(p, "xor.b32 %s, %s, 1;", R(w.peer), R(p->crank));
	}
	stage = ptx_reg(p, RC_B32);
	phase = ptx_reg(p, RC_B32);
	a = ptx_reg(p, RC_B32);
	q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(w.base));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(w.base), R(w.base), WG_ALIGN - 1);
	ptx_emit(p, "and.b32 %s, %s, %d;", R(w.base), R(w.base), -WG_ALIGN);
	/* thread 0 makes the barriers: full[i] waits for one arrival (plus the
	 * bytes), empty[i] for one per consumer warp */
	{
		int skip = ptx_label(p);
		ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), skip);
		wg_warm(&w);
		for (int i = 0; i < w.t->stages; i++) {
			ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w.base), bar_off(&w, BAR_FULL) + 8 * i);
			ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], 1;", R(a));
			ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w.base), bar_off(&w, BAR_EMPTY) + 8 * i);
			ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], %d;", R(a), 4 * w.nwg * w.cl);
		}
		for (int i = 0; i < 2 && wg_storer(&w); i++) {
			ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w.base), bar_off(&w, BAR_DONE) + 8 * i);
			ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], %d;", R(a), 4 * w.nwg);
			ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w.base), bar_off(&w, BAR_RAISED) + 8 * i);
			ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], 1;", R(a));
		}
		if (w.staged) {
			ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w.base), bar_off(&w, BAR_FREE));
			ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], 1;", R(a));
		}
		if (w.src) {
			ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w.base), src_bar_off(&w));
			ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], 1;", R(a));
		}
		ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(w.base), quit_off(&w));
		ptx_emit(p, "st.shared.u32 [%s], 0;", R(a));
		ptx_emit(p, "fence.mbarrier_init.release.cluster;");
		ptx_place(p, skip);
	}
	if (w.cl > 1) /* the peers' barriers are made before any multicast or remote arrival */
		ptx_cluster_sync(p);
	else
		ptx_emit(p, "bar.sync 0;");
	ptx_emit(p, "mov.u32 %s, 0;", R(stage));
	ptx_emit(p, "mov.u32 %s, 0;", R(phase));
	if (w.sk)
		wg_sk_setup(&w);
	consumer = ptx_label(p);
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(p->tid), WG_THREADS);
	ptx_emit(p, "@%s bra $L%d;", R(q), consumer);
	ptx_emit(p, "setmaxnreg.dec.sync.aligned.u32 %d;", WG_PRODUCER_REGS);
	{
		int out = ptx_label(p), notp = ptx_label(p);
		ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), notp);
		wg_producer(&w, stage, phase);
		ptx_place(p, notp);
		if (wg_storer(&w)) { /* thread 32; with a tail, warps 1-3 */
			ptx_emit(p, w.cut ? "setp.lt.u32 %s, %s, 32;" : "setp.ne.u32 %s, %s, 32;", R(q), R(p->tid));
			ptx_emit(p, "@%s bra $L%d;", R(q), out);
			wg_raiser(&w);
		}
		ptx_place(p, out);
		wg_leave(&w);
	}
	ptx_place(p, consumer);
	ptx_emit(p, "setmaxnreg.inc.sync.aligned.u32 %d;", WG_CONSUMER_REGS);
	wg_consumer(&w, stage, phase);
	if (w.cl > 1) {
		ptx_place(p, w.bye);
		ptx_cluster_sync(p);
		ptx_emit(p, "ret;");
	}
	ptx_kernel_end(p);
	ptx_matmul_kernel(k, s, WG_THREADS * (1 + w.nwg), wg_smem(&w));
	k->cluster = w.cl > 1 ? w.cl : 0;
	if (w.sk) { /* counters for the split entries (fewer than G), then a slot a CTA */
		k->ntensors++;
		k->work = WG_SK_SLOTS + WG_SK_CTAS * sk_slot_bytes(&w);
	}
}
