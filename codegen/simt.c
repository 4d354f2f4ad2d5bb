/* codegen/simt.c -- the f32 matmul: out = epilogue(A @ B) with FFMA.
 *
 * Tensor cores take f32 operands only as tf32 (10-bit mantissa), which
 * would not give the f32 answer a user who wrote f32 asked for; this
 * kernel multiplies in f32 on the CUDA cores instead.  Same persistent
 * block loop, flags and fused epilogue as the tensor-core kernels.
 *
 * A CTA of warps_m x warps_n warps computes a bm x bn tile; each k tile
 * of bk is copied through a `stages`-deep ring of 4-byte cp.async copies
 * (the zero fill of a 0-byte source covers every edge, and any leading
 * dimension works: no alignment beyond the element's).  A is stored
 * transposed, k-major with a pitch of bm + 4 floats; B keeps its k x n
 * layout.  Each thread owns the accumulators of the mma.sync fragment
 * layout (rows lane/4 + 8 s, s < 2 mi, columns 2 (lane%4) + 8 j + e of its
 * warp tile) so that ptx_mm_epilogue serves it unchanged.  So that one
 * thread's values of a k step are contiguous and come in 16-byte loads,
 * the copies permute rows within each warp tile (row 8 s + t goes to
 * t * 2 mi + s) and columns (8 j + 2 q + e goes to q * 2 nj + 2 j + e):
 * per k, 2 mi / 4 + nj / 2 ld.shared.v4 feed 8 mi nj FFMA. */
#include "codegen.h"


enum { SIMT_PAD = 4, SIMT_MAX_MI = 4, SIMT_MAX_NJ = 4, SIMT_MAX_COPIES = 8 };

typedef struct Simt {
	Ptx *p;
	const PtxMatmulSpec *s;
	const PtxTile *t;
	int nt;                  /* threads */
	int wtm, wtn, mi, nj;    /* warp tile, m16 and n8 pieces per warp */
	int pa;                  /* floats per k row of the transposed A tile */
	int abytes, stage;       /* bytes of the A tile, of one stage */
	int la, lb;              /* copies per thread per k tile, of A and of B */
	int rsa, ksb;            /* rows of A, k rows of B between one thread's copies */
	int64_t lda, ldb, nkt;
	Reg smem, send, ws, rs, kt, tload;
	Reg rowa, ka, colb, kb;  /* this thread's first copy: A (row, k), B (k, col) */
	Reg sa, sb;              /* its shared offsets within a stage */
	Reg ga, gb;              /* its global addresses for the next k tile */
	Reg rema, remn, kla, klb; /* rows / columns / k left from its first copy */
	Reg aoff, boff;          /* shared offsets of this thread's reads */
	Reg wm, wn, lane;
	Reg acc[SIMT_MAX_MI][SIMT_MAX_NJ][4];
} Simt;

#define R(r) ptx_rn(p, r)

const char *
ptx_simt_check(const PtxMatmulSpec *s)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	int nt = 32 * t->warps_m * t->warps_n;
	int64_t lda = s->lda ? s->lda : s->k, ldb = s->ldb ? s->ldb : s->n;

	if (s->ab != DT_F32)
		return "matmul: the FFMA tiles take f32 operands";
	if (t->bm % (16 * t->warps_m) || t->bn % (8 * t->warps_n) || t->bm / t->warps_m / 16 > SIMT_MAX_MI ||
	    t->bn / t->warps_n / 8 > SIMT_MAX_NJ)
		return "tile: FFMA warp tiles must be 16..64 x 8..32";
	if (nt % t->bk || nt % t->bn || (t->bm * t->bk) % nt || (t->bk * t->bn) % nt ||
	    t->bm * t->bk / nt > SIMT_MAX_COPIES || t->bk * t->bn / nt > SIMT_MAX_COPIES)
		return "tile: FFMA copies do not divide among the threads";
	if (t->stages < 2)
		return "tile: needs >= 2 stages";
	/* 16-byte fragment loads; each copy's permuted row a constant away */
	if ((t->bm / t->warps_m / 16) % 2 || (t->bn / t->warps_n / 8) % 2 || (nt / t->bk) % 8 ||
	    ((t->bm / t->warps_m) % (nt / t->bk) && (nt / t->bk) % (t->bm / t->warps_m)))
		return "tile: FFMA warp tiles need an even number of 16-row and 8-column pieces";
	/* copies address their elements as base + immediate */
	if (lda * 4 * t->bm >= (int64_t)1 << 31 || ldb * 4 * t->bk >= (int64_t)1 << 31)
		return "matmul: leading dimensions too large";
	return NULL;
}

static void
simt_setup(Simt *m, Ptx *p, const PtxMatmulSpec *s)
{
	const PtxTile *t = &ptx_tiles[s->tile];
	*m = (Simt){.p = p, .s = s, .t = t};
	m->nt = 32 * t->warps_m * t->warps_n;
	m->wtm = t->bm / t->warps_m;
	m->wtn = t->bn / t->warps_n;
	m->mi = m->wtm / 16;
	m->nj = m->wtn / 8;
	m->pa = t->bm + SIMT_PAD;
	m->abytes = t->bk * m->pa * 4;
	m->stage = m->abytes + t->bk * t->bn * 4;
	m->la = t->bm * t->bk / m->nt;
	m->lb = t->bk * t->bn / m->nt;
	m->rsa = m->nt / t->bk;
	m->ksb = m->nt / t->bn;
	m->lda = s->lda ? s->lda : s->k;
	m->ldb = s->ldb ? s->ldb : s->n;
	m->nkt = (s->k + t->bk - 1) / t->bk;
}

/* d = where index x of a tile goes in shared memory: within its warp
 * tile of w, x = 8 g + c goes to (c / pair) * stride + g * pair + c % pair.
 * Rows of A: pair 1, stride 2 mi; columns of B: pair 2, stride 2 nj. */
static void
perm_emit(Ptx *p, Reg d, Reg x, int w, int pair, int stride)
{
	Reg r = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B32), b = ptx_reg(p, RC_B32);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(r), R(x), w);
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(d), R(x), R(r)); /* the warp tile's start */
	ptx_emit(p, "and.b32 %s, %s, 7;", R(a), R(r));
	ptx_emit(p, "div.u32 %s, %s, %d;", R(a), R(a), pair);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(d), R(a), stride, R(d));
	ptx_emit(p, "shr.u32 %s, %s, 3;", R(b), R(r));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(d), R(b), pair, R(d));
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(b), R(r), pair);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(d), R(d), R(b));
}

/* The permuted offset (elements) of A copy i from the thread's first:
 * rows rsa apart, which divides a warp tile or is a multiple of one. */
static int
perm_off_a(const Simt *m, int i)
{
	int d = i * m->rsa;
	return d / m->wtm * m->wtm + (d % m->wtm) / 8;
}

/* Per thread, for every block: which elements it copies, where they go,
 * and where its reads of a stage start. */
static void
simt_thread_setup(Simt *m)
{
	Ptx *p = m->p;
	const PtxTile *t = m->t;
	Reg warp = ptx_reg(p, RC_B32), u = ptx_reg(p, RC_B32);

	m->smem = ptx_reg(p, RC_B32);
	m->send = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(m->smem));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(m->send), R(m->smem), t->stages * m->stage);
	m->lane = ptx_reg(p, RC_B32);
	m->wm = ptx_reg(p, RC_B32);
	m->wn = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(m->lane), R(p->tid));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(warp), R(p->tid));
	ptx_emit(p, "div.u32 %s, %s, %d;", R(m->wm), R(warp), t->warps_n);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(m->wn), R(warp), t->warps_n);

	/* A: thread t copies k = t % bk of rows t / bk + i * rsa, into
	 * As[k][row]; B: column t % bn of k rows t / bn + i * ksb. */
	m->rowa = ptx_reg(p, RC_B32);
	m->ka = ptx_reg(p, RC_B32);
	m->colb = ptx_reg(p, RC_B32);
	m->kb = ptx_reg(p, RC_B32);
	m->sa = ptx_reg(p, RC_B32);
	m->sb = ptx_reg(p, RC_B32);
	ptx_emit(p, "div.u32 %s, %s, %d;", R(m->rowa), R(p->tid), t->bk);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(m->ka), R(p->tid), t->bk);
	perm_emit(p, u, m->rowa, m->wtm, 1, 2 * m->mi);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(m->sa), R(m->ka), m->pa, R(u));
	ptx_emit(p, "shl.b32 %s, %s, 2;", R(m->sa), R(m->sa));
	ptx_emit(p, "div.u32 %s, %s, %d;", R(m->kb), R(p->tid), t->bn);
	ptx_emit(p, "rem.u32 %s, %s, %d;", R(m->colb), R(p->tid), t->bn);
	perm_emit(p, u, m->colb, m->wtn, 2, 2 * m->nj);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(m->sb), R(m->kb), t->bn, R(u));
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %d;", R(m->sb), R(m->sb), m->abytes);

	/* reads: the 2 mi rows of lane / 4 at As[k][wm * wtm + (lane / 4) 2 mi],
	 * the 2 nj columns of lane % 4 at Bs[k][wn * wtn + (lane % 4) 2 nj] */
	m->aoff = ptx_reg(p, RC_B32);
	m->boff = ptx_reg(p, RC_B32);
	ptx_emit(p, "shr.u32 %s, %s, 2;", R(u), R(m->lane));
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(u), R(u), 2 * m->mi);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(m->aoff), R(m->wm), m->wtm, R(u));
	ptx_emit(p, "shl.b32 %s, %s, 2;", R(m->aoff), R(m->aoff));
	ptx_emit(p, "and.b32 %s, %s, 3;", R(u), R(m->lane));
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(u), R(u), 2 * m->nj);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(m->boff), R(m->wn), m->wtn, R(u));
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %d;", R(m->boff), R(m->boff), m->abytes);
}

/* Per block: the global addresses of this thread's first copies and how
 * much of the matrix lies beyond them; zeroed accumulators. */
static void
simt_tile_setup(Simt *m)
{
	Ptx *p = m->p;
	const PtxMatmulSpec *s = m->s;
	Reg m0 = ptx_reg(p, RC_B32), n0 = ptx_reg(p, RC_B32), u = ptx_reg(p, RC_B32);

	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(m0), R(p->x), m->t->bm);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(n0), R(p->y), m->t->bn);
	m->ga = ptx_reg(p, RC_B64);
	m->gb = ptx_reg(p, RC_B64);
	m->rema = ptx_reg(p, RC_B32);
	m->remn = ptx_reg(p, RC_B32);
	m->kla = ptx_reg(p, RC_B32);
	m->klb = ptx_reg(p, RC_B32);
	ptx_mad_wide(p, m->ga, p->z, s->batch_a * 4, p->tensor[0]);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(u), R(m0), R(m->rowa));
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(m->rema), (long long)s->m, R(u));
	ptx_mad_wide(p, m->ga, u, m->lda * 4, m->ga);
	ptx_mad_wide(p, m->ga, m->ka, 4, m->ga);
	ptx_mad_wide(p, m->gb, p->z, s->batch_b * 4, p->tensor[1]);
	ptx_mad_wide(p, m->gb, m->kb, m->ldb * 4, m->gb);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(u), R(n0), R(m->colb));
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(m->remn), (long long)s->n, R(u));
	ptx_mad_wide(p, m->gb, u, 4, m->gb);
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(m->kla), (long long)s->k, R(m->ka));
	ptx_emit(p, "sub.s32 %s, %lld, %s;", R(m->klb), (long long)s->k, R(m->kb));
	for (int i = 0; i < m->mi; i++)
		for (int j = 0; j < m->nj; j++)
			for (int e = 0; e < 4; e++)
				ptx_emit(p, "mov.f32 %s, 0f00000000;", R(m->acc[i][j][e]));
}

/* Copies the next k tile into the stage at ws (4 bytes where the element
 * is inside the matrix, else a zero fill) and steps past it. */
static void
simt_copy_tile(Simt *m)
{
	Ptx *p = m->p;
	Reg wa = ptx_reg(p, RC_B32), wb = ptx_reg(p, RC_B32), n = ptx_reg(p, RC_B32);
	Reg q = ptx_reg(p, RC_PRED), qk = ptx_reg(p, RC_PRED);

	ptx_emit(p, "add.u32 %s, %s, %s;", R(wa), R(m->ws), R(m->sa));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(wb), R(m->ws), R(m->sb));
	ptx_emit(p, "setp.gt.s32 %s, %s, 0;", R(qk), R(m->kla));
	for (int i = 0; i < m->la; i++) {
		ptx_emit(p, "setp.gt.and.s32 %s, %s, %d, %s;", R(q), R(m->rema), i * m->rsa, R(qk));
		ptx_emit(p, "selp.u32 %s, 4, 0, %s;", R(n), R(q));
		ptx_emit(p, "cp.async.ca.shared.global [%s+%d], [%s+%lld], 4, %s;", R(wa), perm_off_a(m, i) * 4, R(m->ga),
		         (long long)(i * m->rsa * m->lda * 4), R(n));
	}
	ptx_emit(p, "setp.gt.s32 %s, %s, 0;", R(qk), R(m->remn));
	for (int i = 0; i < m->lb; i++) {
		ptx_emit(p, "setp.gt.and.s32 %s, %s, %d, %s;", R(q), R(m->klb), i * m->ksb, R(qk));
		ptx_emit(p, "selp.u32 %s, 4, 0, %s;", R(n), R(q));
		ptx_emit(p, "cp.async.ca.shared.global [%s+%d], [%s+%lld], 4, %s;", R(wb), i * m->ksb * m->t->bn * 4,
		         R(m->gb), (long long)(i * m->ksb * m->ldb * 4), R(n));
	}
	ptx_emit(p, "add.u64 %s, %s, %d;", R(m->ga), R(m->ga), m->t->bk * 4);
	ptx_emit(p, "add.u64 %s, %s, %lld;", R(m->gb), R(m->gb), (long long)(m->t->bk * m->ldb * 4));
	ptx_emit(p, "sub.s32 %s, %s, %d;", R(m->kla), R(m->kla), m->t->bk);
	ptx_emit(p, "sub.s32 %s, %s, %d;", R(m->klb), R(m->klb), m->t->bk);
}

/* stage base += one stage, wrapping around the ring. */
static void
simt_advance(Simt *m, Reg r)
{
	ptx_ring_advance(m->p, r, m->stage, m->send, m->t->stages * m->stage);
}

/* One k tile of FFMA from the stage at rs: per k step the thread's 2 mi
 * values of A (a[s]: row 8 s + lane / 4) and 2 nj of B (b[2 j + e]:
 * column 8 j + 2 (lane % 4) + e), 16 bytes at a time. */
static void
simt_compute(Simt *m)
{
	Ptx *p = m->p;
	Reg a[2 * SIMT_MAX_MI], b[2 * SIMT_MAX_NJ], ra = ptx_reg(p, RC_B32), rb = ptx_reg(p, RC_B32);

	for (int i = 0; i < 2 * m->mi; i++)
		a[i] = ptx_reg(p, RC_F32);
	for (int j = 0; j < 2 * m->nj; j++)
		b[j] = ptx_reg(p, RC_F32);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(ra), R(m->rs), R(m->aoff));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(rb), R(m->rs), R(m->boff));
	for (int k = 0; k < m->t->bk; k++) {
		for (int v = 0; v < 2 * m->mi; v += 4)
			ptx_emit(p, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", R(a[v]), R(a[v + 1]), R(a[v + 2]),
			         R(a[v + 3]), R(ra), (k * m->pa + v) * 4);
		for (int v = 0; v < 2 * m->nj; v += 4)
			ptx_emit(p, "ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d];", R(b[v]), R(b[v + 1]), R(b[v + 2]),
			         R(b[v + 3]), R(rb), (k * m->t->bn + v) * 4);
		for (int i = 0; i < m->mi; i++)
			for (int j = 0; j < m->nj; j++)
				for (int e = 0; e < 4; e++) {
					Reg c = m->acc[i][j][e];
					ptx_emit(p, "fma.rn.f32 %s, %s, %s, %s;", R(c), R(a[2 * i + (e >> 1)]), R(b[2 * j + (e & 1)]),
					         R(c));
				}
	}
}

/* The ring of the mma.sync kernel (codegen/matmul.c): S - 1 tiles in
 * flight, one barrier per k tile; the copy of tile kt + S - 1 goes into
 * the stage every thread finished reading before that barrier. */
static void
simt_mainloop(Simt *m)
{
	Ptx *p = m->p;
	int S = m->t->stages, loop = ptx_label(p), skip = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED);

	m->ws = ptx_reg(p, RC_B32);
	m->rs = ptx_reg(p, RC_B32);
	m->kt = ptx_reg(p, RC_B32);
	m->tload = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, %s;", R(m->ws), R(m->smem));
	ptx_emit(p, "mov.u32 %s, %s;", R(m->rs), R(m->smem));
	for (int s = 0; s < S - 1; s++) {
		if (s < m->nkt)
			simt_copy_tile(m);
		ptx_emit(p, "cp.async.commit_group;");
		ptx_emit(p, "add.u32 %s, %s, %d;", R(m->ws), R(m->ws), m->stage);
	}
	ptx_emit(p, "mov.u32 %s, 0;", R(m->kt));
	ptx_emit(p, "mov.u32 %s, %d;", R(m->tload), S - 1);
	ptx_place(p, loop);
	ptx_emit(p, "cp.async.wait_group %d;", S - 2);
	ptx_emit(p, "bar.sync 0;");
	ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(m->tload), (long long)m->nkt);
	ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	simt_copy_tile(m);
	ptx_place(p, skip);
	ptx_emit(p, "cp.async.commit_group;");
	ptx_emit(p, "add.u32 %s, %s, 1;", R(m->tload), R(m->tload));
	simt_advance(m, m->ws);
	simt_compute(m);
	simt_advance(m, m->rs);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(m->kt), R(m->kt));
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(q), R(m->kt), (long long)m->nkt);
	ptx_emit(p, "@%s bra $L%d;", R(q), loop);
	ptx_emit(p, "cp.async.wait_group 0;");
}

static void
simt_epilogue(Simt *m)
{
	Reg acc[SIMT_MAX_MI * SIMT_MAX_NJ * 4];
	PtxMmFrag f = {.mi = m->mi, .nj = m->nj, .acc = acc};

	ptx_mm_frag_origin(m->p, m->t, m->wm, m->wn, m->lane, &f.r0, &f.c0);
	for (int i = 0; i < m->mi; i++)
		for (int j = 0; j < m->nj; j++)
			for (int e = 0; e < 4; e++)
				acc[(i * m->nj + j) * 4 + e] = m->acc[i][j][e];
	ptx_mm_epilogue(m->p, m->s, &f);
}

void
ptx_emit_simt(Buf *b, const PtxMatmulSpec *s, PtxKernel *k)
{
	Ptx px, *p = &px;
	Simt m;

	simt_setup(&m, p, s);
	ptx_kernel_begin(p, b, s->name, 2 + s->nin + s->nout, m.nt, m.t->min_ctas);
	buf_printf(&p->head, "// matmul f32 %lldx%lldx%lld batch %lld, tile %s (FFMA)\n", (long long)s->m,
	           (long long)s->n, (long long)s->k, (long long)s->batch, m.t->name);
	for (int i = 0; i < m.mi; i++)
		for (int j = 0; j < m.nj; j++)
			for (int e = 0; e < 4; e++)
				m.acc[i][j][e] = ptx_reg(p, RC_F32);
	ptx_params(p, 2 + s->nin + s->nout);
	simt_thread_setup(&m);
	ptx_loop_begin(p);
	simt_tile_setup(&m);
	simt_mainloop(&m);
	simt_epilogue(&m);
	ptx_loop_end(p);
	ptx_kernel_end(p);
	*k = (PtxKernel){0}; /* no tensor maps, whatever the caller left */
	ptx_matmul_kernel(k, s, m.nt, m.t->stages * m.stage);
}
