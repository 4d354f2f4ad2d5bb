/* codegen/rows.c -- row reductions over the last dim, any length; and
 * over the first (column mode, below).
 *
 * One warp per row (rows of a block are spread over the CTA's 8 warps), so
 * a reduction is a strided loop per lane and five shfl.sync.bfly steps: no
 * shared memory, no barrier inside a block.  A kernel runs its stages in
 * order over each row -- each rereads the row, which L1/L2 hold for the
 * lengths norms see -- and then the map, which writes per-element outputs.
 *
 * How the usual row ops compose (x = in0, one kernel each):
 *   softmax:   stage0 = amax(x);  stage1 = sum(exp(x - stage0));
 *              map: out0 = exp(x - stage0) / stage1
 *   layernorm: stage0 = mean(x);  stage1 = mean((x - stage0)^2) with
 *              post rsqrt(acc + eps);  map: out0 = (x - stage0) * stage1 * g + b
 *              (g, b: inputs with row stride 0)
 *   rmsnorm:   stage0 = mean(x * x) with post rsqrt(acc + eps);
 *              map: out0 = x * stage0 * g
 *   row sums for a later kernel: a stage with `out` set and no map.
 * tests/gpu/kernels.c builds exactly these.
 *
 * Column mode: when the reduced elements of a row are strided and the rows
 * are adjacent (a reduction over the first dim: in0 strides {1, rows}), a
 * warp per row would read one element per 32-byte sector.  There a block
 * is rb adjacent rows: lane l takes V adjacent rows (a vector of V
 * columns of the original tensor, 16 bytes where the dtypes and rows
 * allow) starting at (l % LC) V, LC = rb / V lanes across the block, and
 * the CTA's 32 / LC x COL_WARPS slices split the reduced dim, COL_UNROLL
 * loads in flight per thread; a warp's slices meet by shuffles, the warps'
 * in shared memory, threads < rb finish the rows (mean, post program,
 * store) and hand them back to every thread for the later stages and the
 * map.  Smaller blocks when the rows are few keep every SM busy.  A long
 * block can be split over a cluster of CTAs (col_cluster), whose partials
 * meet in distributed shared memory. */
#include "codegen.h"

#include <math.h>
#include <stdio.h>

enum { ROW_WARPS = 8, ROW_DEFAULT_BLOCK = 8, COL_WARPS = 16, COL_UNROLL = 4, COL_MAX_BLOCK = 256 };
/* CTA mode (rows of CTA_MIN_LEN elements or more): up to CTA_MAX_U
 * vectors per thread, CTA_MAX_WORDS registers of them per thread at 1024
 * threads (64 registers is all a thread of a 1024-thread CTA gets). */
enum { CTA_MIN_LEN = PTX_ROWS_CTA_LEN, CTA_MAX_U = 8, CTA_MAX_WORDS = 32 };
/* Groups: resident CTAs of 512 threads a GPU is sized for (H100 and H200:
 * 132 SMs x 4; 1024 leaves room for larger parts), and partials each
 * thread of the combine loads at once. */
enum { GROUP_CTAS = 1024, GROUP_UNROLL = 4, GROUP_L2_MAX = 64 };
#define COL_L2_BUDGET ((int64_t)16 << 20) /* bytes of blocks in flight that L2 keeps between stages */
enum { COL_RESIDENT = 2 * 132 }; /* column-mode CTAs resident on an H100 or H200 (.minnctapersm 2) */

static const struct {
	int op;
	const char *combine; /* f32 instruction, %d = %a op %b */
	uint32_t identity;   /* f32 bits */
} reds[] = {
	{OP_SUM, "add.f32 %d, %a, %b", 0x00000000u},
	{OP_MEAN, "add.f32 %d, %a, %b", 0x00000000u},
	{OP_AMAX, "max.f32 %d, %a, %b", 0xff800000u},
	{OP_AMIN, "min.f32 %d, %a, %b", 0x7f800000u},
};

#define R(r) ptx_rn(p, r)

static int
red_index(int op)
{
	for (size_t i = 0; i < NELEM(reds); i++)
		if (reds[i].op == op)
			return (int)i;
	return -1;
}

/* Is this a reduction over strided elements of adjacent rows? */
static bool
rows_colmode(const PtxRowsSpec *s)
{
	return s->in[0].stride[1] > 1 && s->in[0].stride[0] == 1;
}

const char *
ptx_rows_check(const PtxRowsSpec *s)
{
	const char *why;
	if (s->rows < 1 || s->len < 1 || s->rows >= (1 << 30) || s->len >= (1 << 30))
		return "rows: rows and len must be 1 to 2^30";
	if (s->nin < 1 || s->nin > PTX_MAX_TENSORS || s->nout < 1 || s->nout > PTX_MAX_TENSORS)
		return "rows: needs 1 to 8 inputs and 1 to 8 outputs";
	if (s->nstage < 0 || s->nstage > PTX_MAX_STAGES || s->rows_per_block < 0)
		return "rows: 0 to 4 stages";
	if (rows_colmode(s) && (s->rows_per_block > COL_MAX_BLOCK || (s->rows_per_block & (s->rows_per_block - 1)) ||
	                        (s->rows_per_block ? s->rows_per_block : 32) / ptx_rows_col_vec(s, s->rows_per_block ? s->rows_per_block : 32) > 32))
		return "rows: strided rows take a power of two rows per block, at most 32 lanes of them (a lane takes up to 8)";
	if (s->cluster && (s->cluster & (s->cluster - 1) || s->cluster > 8 || (s->cluster > 1 && (!rows_colmode(s) || s->nstage < 1))))
		return "rows: a cluster of 1, 2, 4 or 8 CTAs, and more than 1 only for strided rows with a stage";
	if (s->group < 0 || s->group > PTX_MAX_GROUP || (s->group & (s->group - 1)) ||
	    (s->group > 1 && (!rows_colmode(s) || s->nstage < 1 || s->cluster > 1)))
		return "rows: a group of a power of two CTAs up to 256, more than 1 only for strided rows with a stage and no cluster";
	if ((s->cta_threads && (s->cta_threads < 128 || s->cta_threads > 1024 || (s->cta_threads & (s->cta_threads - 1)))) ||
	    s->cta_min < -1 || s->cta_min > 32 || s->online < -1 || s->online > 1 || s->col_cache < -1 || s->col_cache > 2 ||
	    s->split_heads < -1 || s->split_heads > 1 || s->col_pipe < -1 || s->col_pipe > 1)
		return "rows: a CTA of 128 to 1024 threads (a power of two), -1 to 32 CTAs an SM, online, split_heads and "
		       "col_pipe -1 to 1, col_cache -1 to 2";
	for (int i = 0; i < s->nin + s->nout; i++) {
		const PtxTensor *t = i < s->nin ? &s->in[i] : &s->out[i - s->nin];
		if ((int)t->dt < 0 || t->dt >= DT_COUNT || t->stride[0] < 0 || t->stride[1] < 0 ||
		    t->stride[0] > (int64_t)1 << 40 || t->stride[1] > (int64_t)1 << 40)
			return "rows: bad tensor dtype or stride";
	}
	for (int k = 0; k < s->nstage; k++) {
		const PtxRowStage *st = &s->stage[k];
		if (red_index(st->red) < 0)
			return "rows: a stage's reduction must be sum, mean, amax or amin";
		if (st->pre.nins && ((why = ptx_prog_check(&st->pre, s->nin, 1, false, k)) || st->pre.nout != 1))
			return why ? why : "rows: a stage's pre program has one output";
		if (st->post.nins && ((why = ptx_prog_check(&st->post, s->nin, 1, true, k)) || st->post.nout != 1))
			return why ? why : "rows: a stage's post program has one output";
		if (st->out < -1 || st->out >= s->nout)
			return "rows: a stage names a missing output";
	}
	if (s->map.nins && (why = ptx_prog_check(&s->map, s->nin, s->nout, false, s->nstage)))
		return why;
	return NULL;
}

typedef struct Rows {
	Ptx *p;
	const PtxRowsSpec *s;
	int vec;
	bool cols;        /* column mode */
	Reg lane, row;
	Reg warp, active; /* column mode: the slice of the reduced dim; the lane has a row */
	Reg smem;         /* column mode: the shared partials */
	Reg rin, slice;   /* column mode: this thread's row in the block, its slice of the length */
	int rb, nsl;      /* column mode: rows per block, slices of the cluster (of the CTA without one) */
	int ncl;          /* column mode: CTAs of the cluster that share a block (1: no cluster) */
	int grp;          /* column mode: CTAs of a group that share a block, at most (1: no group) */
	Reg nslr;         /* group: slices of the group (the group's size is the launch's) */
	Reg gpart, gcur;  /* group: the group's partials in the workspace, and this entry's set */
	Reg gbase, gent;  /* group: the barriers passed before this entry, entries done */
	int gbar;         /* group: barriers of this entry emitted so far (col_group_barrier) */
	bool pipe;        /* group: entries pipelined (col_pipe_ok) */
	Reg xprev, havep; /* pipe: the entry before this one, and whether there was one */
	bool mom[PTX_MAX_STAGES]; /* column mode: stages k and k + 1 are a mean and its variance (col_moments) */
	bool onl[PTX_MAX_STAGES]; /* column mode: stages k and k + 1 are a max and the sum of exps from it (col_online) */
	int planes;       /* column mode: planes of the warps' partials in shared memory (1; 3 with moments, 2 online) */
	int cv, lc;       /* column mode: rows per lane (a vector), lanes across the block */
	Reg colres[PTX_MAX_STAGES][8], colrcp[PTX_MAX_STAGES][8]; /* column mode: each of the lane's rows' stage results */
	bool cta;         /* CTA mode: a row per CTA, its streamed inputs held in registers */
	int T, U;         /* CTA mode: threads, vectors per thread and row */
	bool cached;      /* CTA mode: the streamed inputs fit in registers (else each pass rereads, from L2) */
	Reg inpos[CTA_MAX_U], col[CTA_MAX_U]; /* CTA mode: the thread's columns, and whether each is in the row */
	Reg col0;         /* CTA mode: the thread's first column */
	Reg seq;          /* CTA mode: rows this CTA has begun (their parity picks the stage slots) */
	Reg word[PTX_MAX_TENSORS][CTA_MAX_U][4]; /* CTA mode: streamed inputs as loaded, -1 none */
	bool peel;        /* CTA mode: vectors after the row's unaligned head (peel_vec) */
	Reg xcol[2], xin[2]; /* peeled: the thread's head and tail element, and whether it has each */
	bool xcache;      /* peeled, cached: the head and tail elements held too (peel_cache) */
	Reg xval[PTX_MAX_TENSORS][2]; /* xcache: the streamed inputs at those, loaded with the vectors
	                                 (16-bit ones both in xval[i][0], head in the low half: a register less) */
	Reg mis;          /* peeled: this row's pointers are misaligned unlike in0's (peel_guard) */
	Reg head;         /* peeled: this row's head, elements before its first whole vector (peel_head) */
	int wshift;       /* peeled: the head for which the code at hand is made (cta_each_split), -1: any */
	bool wsplit;      /* peeled: cta_each makes the vectors' code once per head (cta_each_split) */
	bool msplit;      /* peeled: the map's vectors are made so (split_heads, once a kernel) */
	Reg walign;       /* wsplit: the weights read from global memory are 16-byte aligned (-1: none read there) */
	bool pf;          /* CTA mode: in0's rows come into shared memory by bulk copy, the next during this one (cta_prefetch) */
	Reg pfbar, pfbuf; /* pf: the copy's mbarrier and the buffer (shared addresses) */
	Reg pflo;         /* pf: this row's in0 address rounded down to 16 bytes, the buffer's first byte */
	int woff[PTX_MAX_TENSORS]; /* CTA mode: input i's copy in shared memory, its offset (-1: none; wsm_plan) */
	int wend;         /* CTA mode: the end of those copies (0: none) */
	Reg rend;         /* CTA mode: the end of the entry's rows */
	int rb_cta;       /* CTA mode: rows an entry */
	int ccache;       /* column mode: 0, or how the block's streamed inputs are held in shared memory (col_cache_plan) */
	bool cin[PTX_MAX_TENSORS]; /* ccache: input i held there */
	int cvb[PTX_MAX_TENSORS];  /* ccache: its bytes a visit (the lane's V rows at one reduced index) */
	int coff[PTX_MAX_TENSORS]; /* ccache: its region's offset in a buffer */
	int ccap, cbytes, cat;     /* ccache: visits a thread holds, bytes of a buffer, the first buffer's offset */
	bool cguard;      /* ccache: visits past ccap read global memory (a group's launch may be smaller) */
	Reg cslot[PTX_MAX_TENSORS]; /* ccache: the thread's slot of input i at visit 0, this entry (shared address) */
	Reg cn;           /* ccache: the visit (step of the thread's slice) col_inputs reads */
	Reg cseq;         /* ccache 2: entries this CTA has begun (their parity picks the buffer) */
	Reg inrow[PTX_MAX_TENSORS], outrow[PTX_MAX_TENSORS]; /* row base pointers */
	Reg res[PTX_MAX_STAGES];
	Reg rcp[PTX_MAX_STAGES]; /* 1 / res[k] where a later program divides by it, else 0 */
	PtxEwProg pre[PTX_MAX_STAGES], post[PTX_MAX_STAGES];
} Rows;

static bool
vec_ok(const PtxTensor *t, int v)
{
	if (t->stride[1] > 1 || (t->stride[1] == 1 && v * ptx_dtypes[t->dt].size > 16))
		return false;
	return t->stride[1] == 0 || t->stride[0] % v == 0;
}

static int
rows_vec(const PtxRowsSpec *s)
{
	int v;
	for (v = 8; v > 1; v /= 2) {
		bool ok = s->len % v == 0;
		for (int i = 0; ok && i < s->nin; i++)
			ok = vec_ok(&s->in[i], v);
		for (int o = 0; ok && o < s->map.nout; o++) {
			const PtxTensor *t = &s->out[s->map.out[o].tensor];
			ok = vec_ok(t, v) && t->stride[1] == 1;
		}
		if (ok)
			break;
	}
	return v;
}

/* Address of column `col` (a register) of a row. */
static Reg
col_addr(Ptx *p, const PtxTensor *t, Reg rowp, Reg col)
{
	Reg a = ptx_reg(p, RC_B64);
	ptx_emit(p, "mad.wide.u32 %s, %s, %lld, %s;", R(a), R(col),
	         (long long)(t->stride[1] * ptx_dtypes[t->dt].size), R(rowp));
	return a;
}

/* for (col = lane*V; col < len; col += 32*V) { body(col) } */
static Reg
col_loop_begin(Rows *r, int *loop, int *done)
{
	Ptx *p = r->p;
	Reg col = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
	*loop = ptx_label(p);
	*done = ptx_label(p);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(col), R(r->lane), r->vec);
	ptx_place(p, *loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(col), (long long)r->s->len);
	ptx_emit(p, "@%s bra $L%d;", R(q), *done);
	return col;
}

static void
col_loop_end(Rows *r, Reg col, int loop, int done)
{
	Ptx *p = r->p;
	ptx_emit(p, "add.u32 %s, %s, %d;", R(col), R(col), 32 * r->vec);
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
}

/* Loads the inputs a program reads at column col, V elements each. */
static void
load_inputs(Rows *r, const PtxEwProg *g, Reg col, Reg in[][8])
{
	for (int i = 0; i < r->s->nin; i++)
		for (int j = 0; j < 8; j++)
			in[i][j] = -1;
	for (int i = 0; i < r->s->nin; i++)
		if (ptx_prog_uses(g, OP_PARAM, i)) {
			Reg a = col_addr(r->p, &r->s->in[i], r->inrow[i], col);
			ptx_load_vec(r->p, r->s->in[i].dt, a, r->s->in[i].stride[1], r->vec, in[i]);
		}
}

static PtxEnv
env_for(Rows *r, Reg in[][8], int j)
{
	PtxEnv env = {0};
	for (int i = 0; i < r->s->nin; i++) {
		env.in[i] = in ? in[i][j] : -1;
		env.in_vc[i] = ptx_dtypes[r->s->in[i].dt].vc;
	}
	for (int k = 0; k < PTX_MAX_STAGES; k++) {
		env.stage[k] = r->cols ? r->colres[k][j] : r->res[k];
		env.stage_rcp[k] = r->cols ? r->colrcp[k][j] : r->rcp[k];
	}
	env.acc_vc = VC_F32;
	return env;
}

/* Whether a per-element program after stage k divides by its result. */
static bool
divides_by(const Rows *r, int k)
{
	const PtxEwProg *gs[PTX_MAX_STAGES + 1];
	int n = 0;
	for (int j = k + 1; j < r->s->nstage; j++)
		gs[n++] = &r->pre[j];
	gs[n++] = &r->s->map;
	for (int i = 0; i < n; i++)
		for (int q = 0; q < gs[i]->nins; q++)
			if (gs[i]->ins[q].op == OP_DIV && gs[i]->ins[gs[i]->ins[q].b].op == PTX_OP_STAGE &&
			    gs[i]->ins[gs[i]->ins[q].b].a == k)
				return true;
	return false;
}

/* 1 / res[k] once per row where later programs divide by it: a multiply
 * per element instead of a division (softmax's map). */
static void
row_rcp(Rows *r, int k)
{
	r->rcp[k] = 0;
	if (!divides_by(r, k))
		return;
	r->rcp[k] = ptx_reg(r->p, RC_F32);
	ptx_emit(r->p, "rcp.rn.f32 %s, %s;", ptx_rn(r->p, r->rcp[k]), ptx_rn(r->p, r->res[k]));
}

/* Stage k's post program on its reduction acc: res[k] (per-row inputs
 * are read at column 0). */
static void
row_post(Rows *r, int k, Reg acc)
{
	Ptx *p = r->p;
	Reg pin[PTX_MAX_TENSORS][8], val[PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];
	for (int i = 0; i < r->s->nin; i++)
		pin[i][0] = -1;
	for (int i = 0; i < r->s->nin; i++)
		if (ptx_prog_uses(&r->post[k], OP_PARAM, i))
			pin[i][0] = ptx_load_val(p, r->s->in[i].dt, r->inrow[i], "global");
	PtxEnv env = env_for(r, pin, 0);
	const PtxOut *o = &r->post[k].out[0];
	env.acc = acc;
	ptx_prog_emit(p, &r->post[k], &env, val, vc);
	r->res[k] = ptx_convert(p, val[o->val], vc[o->val], VC_F32);
	row_rcp(r, k);
}

static void
rows_stage(Rows *r, int k)
{
	Ptx *p = r->p;
	const PtxRowStage *st = &r->s->stage[k];
	int ri = red_index(st->red), loop, done;
	Reg acc = ptx_reg(p, RC_F32), in[PTX_MAX_TENSORS][8], val[PTX_MAX_INS], col;
	ValClass vc[PTX_MAX_INS];

	ptx_emit(p, "mov.f32 %s, 0f%08X;", R(acc), reds[ri].identity);
	col = col_loop_begin(r, &loop, &done);
	load_inputs(r, &r->pre[k], col, in);
	for (int j = 0; j < r->vec; j++) {
		PtxEnv env = env_for(r, in, j);
		const PtxOut *o = &r->pre[k].out[0];
		ptx_prog_emit(p, &r->pre[k], &env, val, vc);
		ptx_expand(p, reds[ri].combine, acc, acc, ptx_convert(p, val[o->val], vc[o->val], VC_F32));
	}
	col_loop_end(r, col, loop, done);
	for (int d = 16; d >= 1; d /= 2) {
		Reg t = ptx_reg(p, RC_F32);
		ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(t), R(acc), d);
		ptx_expand(p, reds[ri].combine, acc, acc, t);
	}
	if (st->red == OP_MEAN) {
		Reg inv = ptx_imm_f32(p, 1.0 / (double)r->s->len);
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(acc), R(acc), R(inv));
	}
	row_post(r, k, acc);
	if (st->out >= 0) {
		Reg q = ptx_reg(p, RC_PRED);
		int skip = ptx_label(p);
		ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(r->lane));
		ptx_emit(p, "@%s bra $L%d;", R(q), skip);
		ptx_store_val(p, r->s->out[st->out].dt, r->outrow[st->out], r->res[k], VC_F32);
		ptx_place(p, skip);
	}
}

static void
rows_map(Rows *r)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	Reg in[PTX_MAX_TENSORS][8], val[8][PTX_MAX_INS], col;
	ValClass vc[PTX_MAX_INS];
	int loop, done;

	col = col_loop_begin(r, &loop, &done);
	load_inputs(r, &s->map, col, in);
	for (int j = 0; j < r->vec; j++) {
		PtxEnv env = env_for(r, in, j);
		ptx_prog_emit(p, &s->map, &env, val[j], vc);
	}
	for (int o = 0; o < s->map.nout; o++) {
		const PtxOut *po = &s->map.out[o];
		const PtxTensor *t = &s->out[po->tensor];
		int sv = ptx_store_src(&s->map, po, t->dt, vc);
		Reg w[8], a = col_addr(p, t, r->outrow[po->tensor], col);
		for (int j = 0; j < r->vec; j++)
			w[j] = ptx_convert(p, val[j][sv], vc[sv], ptx_dtypes[t->dt].vc);
		ptx_store_vec(p, t->dt, a, r->vec, w);
	}
	col_loop_end(r, col, loop, done);
}

/* Tensor i's pointer at row `row` (a register): in column mode also a
 * finishing thread's row of the block, or the CTA's next entry's. */
static Reg
row_ptr(Rows *r, int i, Reg row)
{
	Ptx *p = r->p;
	const PtxTensor *t = i < r->s->nin ? &r->s->in[i] : &r->s->out[i - r->s->nin];
	Reg a = ptx_reg(p, RC_B64);
	ptx_emit(p, "mad.wide.u32 %s, %s, %lld, %s;", R(a), R(row), (long long)(t->stride[0] * ptx_dtypes[t->dt].size),
	         R(p->tensor[i]));
	return a;
}

/* Every tensor's pointer at this thread's row r->row. */
static void
row_pointers(Rows *r)
{
	const PtxRowsSpec *s = r->s;
	for (int i = 0; i < s->nin + s->nout; i++)
		*(i < s->nin ? &r->inrow[i] : &r->outrow[i - s->nin]) = row_ptr(r, i, r->row);
}

/* Column mode: shared memory is COL_WARPS x rb partial results (each
 * stage's in turn; three planes of them where a mean and its variance are
 * reduced in one pass, col_moments), then rb finished rows per stage,
 * then in a cluster rb exchanged partials per stage (in a group, the rows
 * combined from the group's partials). */
static int
col_smem(int rb, int nstage, int split, int planes)
{
	return (planes * COL_WARPS + nstage + (split > 1 ? nstage : 0)) * rb * 4;
}

/* CTAs a column block is split over: a block is rb rows of the whole
 * reduced length, and every stage after the first rereads it.  With a
 * block per CTA, 8192 x 8192 bf16 in blocks of 32 rows is 256 blocks of
 * 512 KiB, all in flight at once -- 128 MiB, more than L2 holds, so each
 * stage read HBM again (rmsnorm over dim 0 at 1.94x the HBM floor,
 * layernorm 2.65x, softmax 2.72x; bench/results/2026-12-04-peel-h200.p1.md).
 * Split over 8 CTAs each holds an eighth and the blocks in flight are a
 * quarter of the tensor, which L2 can keep between the stages -- which
 * gained less than hoped (7-10% on one H100: the kernels stay far from
 * the HBM floor, bench/results/2026-12-06-cols-h100.md says what else
 * holds them).  A cluster of 8 for two stages or more, where a CTA's
 * piece of the inputs is over 64 KiB and each slice still takes two passes
 * of COL_UNROLL loads. */
static int
col_cluster(const PtxRowsSpec *s, int rb, int nsl)
{
	int64_t bytes = 0;
	if (s->cluster)
		return s->cluster;
	/* one stage: only the map rereads the block, and on one H100 the
	 * cluster's barriers cost more than the reread saved (rmsnorm over dim
	 * 0 at 8192 x 8192: 0.1520 ms a CTA a block, 0.1632 over 8 CTAs;
	 * layernorm 0.2032 -> 0.1871, softmax 0.2049 -> 0.1920;
	 * bench/results/2026-12-06-cols-h100.md) */
	if (s->nstage < 2)
		return 1;
	for (int i = 0; i < s->nin; i++)
		if (s->in[i].stride[0] && s->in[i].stride[1]) /* the block's own elements */
			bytes += (int64_t)rb * ptx_dtypes[s->in[i].dt].size;
	/* 8 or none: 2 or 4 CTAs were slower than one there (layernorm 0.2274
	 * and 0.2327 ms, softmax 0.2293 and 0.2387): the blocks in flight
	 * still overflow L2 and the barriers are paid */
	return bytes * (s->len / 4) > 64 * 1024 && s->len / 8 >= 2 * (int64_t)nsl * COL_UNROLL ? 8 : 1;
}

/* How a column block is split: over a cluster (ncl), over a group (grp),
 * or neither.  A cluster holds 8 CTAs at most: with 8 the blocks in flight
 * still overflowed L2 where the reduced length is long, so every stage
 * after the first reread HBM (0.29-0.68 of Inductor at 50304 x 4096 and
 * 50257 x 1024, bench/results/2026-12-06-h100-c.md).  A group meets
 * through a workspace in global memory (L2) instead, and measured on one
 * H100 (bench/results/2026-12-06-cols-h100-d.md) two sizes pay:
 *  - L2: the fewest CTAs that keep the blocks in flight (COL_RESIDENT
 *    CTAs over the group's size) under COL_L2_BUDGET, while that is at
 *    most GROUP_L2_MAX (8192 x 8192 in blocks of 128: 32 CTAs, layernorm
 *    0.194 -> 0.172-0.187 ms);
 *  - else enough groups of CTAs that every block is in flight at once
 *    (50304 x 4096 in blocks of 128: 8 CTAs, 0.97 -> 0.57 ms; 50257 x
 *    1024: 32 CTAs, 0.61 -> 0.15 ms), though each stage rereads HBM: every
 *    larger group, which L2 would hold, lost more to its barriers than it
 *    saved (128 CTAs: 0.58 ms).
 * Groups need every CTA resident at once, which a persistent grid is
 * unless kernels run beside it: a caller whose entries wait on flags
 * asks for none (spec.group 1), and keeps the cluster rule. */
/* Bytes of a block of rb rows of the inputs that vary along rows and the
 * reduced dim (what each pass over the block reads). */
static int64_t
col_block_bytes(const PtxRowsSpec *s, int rb)
{
	int64_t bytes = 0;
	for (int i = 0; i < s->nin; i++)
		if (s->in[i].stride[0] && s->in[i].stride[1]) /* the block's own elements */
			bytes += (int64_t)rb * ptx_dtypes[s->in[i].dt].size * s->len;
	return bytes;
}

static void
col_split(const PtxRowsSpec *s, int rb, int nsl, int *ncl, int *grp)
{
	int64_t bytes, nblocks = (s->rows + rb - 1) / rb, want;
	*ncl = *grp = 1;
	if (s->group > 1) {
		*grp = s->group;
		return;
	}
	if (s->cluster || s->group == 1) {
		*ncl = col_cluster(s, rb, nsl);
		return;
	}
	bytes = col_block_bytes(s, rb);
	/* the whole input in L2 at once: nothing to keep there, and the
	 * barriers only cost (x of 1024 x 8192 over dim 0, 16 MiB: layernorm
	 * 0.0145 ms a CTA a block, 0.0175 in groups of 4) */
	if (bytes * nblocks <= COL_L2_BUDGET) {
		*ncl = col_cluster(s, rb, nsl);
		return;
	}
	want = bytes * COL_RESIDENT / COL_L2_BUDGET;
	if (want > GROUP_L2_MAX)
		want = COL_RESIDENT / nblocks;
	/* the largest power of two within want, and within the length: each
	 * thread's slice at least two steps */
	while (*grp * 2 <= want && *grp * 2 <= PTX_MAX_GROUP && (int64_t)*grp * 2 * nsl * 2 <= s->len)
		*grp *= 2;
	if (*grp == 1)
		*ncl = col_cluster(s, rb, nsl);
}

/* The group col_split gives a spec (1: none): for the caller's block size. */
int
ptx_rows_group_of(const PtxRowsSpec *s)
{
	int rb = s->rows_per_block ? s->rows_per_block : 32, cv = ptx_rows_col_vec(s, rb), ncl, grp;
	if (!rows_colmode(s) || s->nstage < 1)
		return 1;
	col_split(s, rb, COL_WARPS * (32 / (rb / cv)), &ncl, &grp);
	return grp;
}

/* Where stage k's finished rows start in shared memory, in bytes. */
static int
col_fin(const Rows *r, int k)
{
	return (r->planes * COL_WARPS + k) * r->rb * 4;
}

/* In a cluster: stage k's exchange slot (the CTA's partial of each row of
 * the block, which the peers read), after the finished rows; as an offset
 * from a thread's column of the partials, like col_fin. */
static int
col_xs(const Rows *r, int k)
{
	return (r->planes * COL_WARPS + r->s->nstage + k) * r->rb * 4;
}

/* Rows per lane in column mode: a vector of V adjacent rows (16 bytes at
 * most) where every tensor that varies along rows has them contiguous,
 * V divides the block and the rows, and a block is at most 32 lanes. */
int
ptx_rows_col_vec(const PtxRowsSpec *s, int rb)
{
	int v;
	for (v = 8; v > 1; v /= 2) {
		bool ok = rb % v == 0 && rb / v <= 32 && s->rows % v == 0;
		for (int i = 0; ok && i < s->nin + s->map.nout; i++) { /* a stage's per-row store is one value */
			const PtxTensor *t = i < s->nin ? &s->in[i] : &s->out[s->map.out[i - s->nin].tensor];
			ok = t->stride[0] == 0 ||
			     (t->stride[0] == 1 && v * ptx_dtypes[t->dt].size <= 16 && t->stride[1] % v == 0);
		}
		if (ok)
			break;
	}
	return v;
}

/* Input i at reduced index c, visit r->cn of the thread's slice, from
 * its slot in shared memory (col_fill put it there); a visit past the
 * slots (a group launched smaller than the kernel's) from global memory. */
static void
col_cached_load(Rows *r, int i, Reg c, Reg *val)
{
	Ptx *p = r->p;
	const PtxTensor *t = &r->s->in[i];
	const PtxDType *d = &ptx_dtypes[t->dt];
	int words = r->cvb[i] / 4, per = d->size == 4 ? 1 : 2, glob = ptx_label(p), join = ptx_label(p);
	Reg w[4], a = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);

	for (int k = 0; k < words; k++)
		w[k] = ptx_reg(p, d->size == 4 ? d->st : RC_B32);
	if (r->cguard) {
		ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(r->cn), r->ccap);
		ptx_emit(p, "@%s bra $L%d;", R(q), glob);
	}
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a), R(r->cn), 32 * COL_WARPS * r->cvb[i], R(r->cslot[i]));
	ptx_load_words_to(p, "shared", t->dt, a, r->cv, w);
	if (r->cguard) {
		ptx_emit(p, "bra $L%d;", join);
		ptx_place(p, glob);
		ptx_load_words_to(p, "global", t->dt, col_addr(p, t, r->inrow[i], c), r->cv, w);
		ptx_place(p, join);
	}
	for (int k = 0; k < words; k++)
		ptx_unpack_word(p, t->dt, w[k], &val[per * k]);
}

/* The inputs program g reads at reduced index c, for the lane's V rows
 * (one vector load along the rows, or one value for all). */
static void
col_inputs(Rows *r, const PtxEwProg *g, Reg c, Reg in[][8])
{
	for (int i = 0; i < r->s->nin; i++)
		for (int j = 0; j < 8; j++)
			in[i][j] = -1;
	for (int i = 0; i < r->s->nin; i++)
		if (ptx_prog_uses(g, OP_PARAM, i)) {
			const PtxTensor *t = &r->s->in[i];
			if (r->ccache && r->cin[i]) {
				col_cached_load(r, i, c, in[i]);
				continue;
			}
			Reg a = col_addr(r->p, t, r->inrow[i], c);
			ptx_load_vec(r->p, t->dt, a, t->stride[0], r->cv, in[i]);
		}
}

/* d = col + mult slices of the split: an immediate without a group, the
 * launch's count of slices (nslr) in one. */
static void
col_advance(Rows *r, Reg d, Reg col, int mult)
{
	Ptx *p = r->p;
	if (r->grp > 1)
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(d), R(r->nslr), mult, R(col));
	else
		ptx_emit(p, "add.u32 %s, %s, %d;", R(d), R(col), mult * r->nsl);
}

/* What a thread does at reduced index c of its slice, the u-th step of a
 * pass (col_walk). */
typedef void ColStep(Rows *r, Reg c, int u, void *arg);

/* for (col = slice; col < len; col += nsl * COL_UNROLL): this thread's
 * slice of the reduced dim, COL_UNROLL steps per pass, each guarded. */
static void
col_walk(Rows *r, ColStep *step, void *arg)
{
	Ptx *p = r->p;
	Reg col = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), n0 = ptx_reg(p, RC_B32);
	int loop = ptx_label(p), done = ptx_label(p);

	ptx_emit(p, "mov.u32 %s, %s;", R(col), R(r->slice));
	if (r->ccache)
		ptx_emit(p, "mov.u32 %s, 0;", R(n0));
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(col), (long long)r->s->len);
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	for (int u = 0; u < COL_UNROLL; u++) {
		Reg c = ptx_reg(p, RC_B32);
		int skip = ptx_label(p);
		col_advance(r, c, col, u);
		ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(c), (long long)r->s->len);
		ptx_emit(p, "@%s bra $L%d;", R(q), skip);
		if (r->ccache) {
			r->cn = ptx_reg(p, RC_B32);
			ptx_emit(p, "add.u32 %s, %s, %d;", R(r->cn), R(n0), u);
		}
		step(r, c, u, arg);
		ptx_place(p, skip);
	}
	if (r->ccache)
		ptx_emit(p, "add.u32 %s, %s, %d;", R(n0), R(n0), COL_UNROLL);
	col_advance(r, col, col, COL_UNROLL);
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
}

typedef struct SliceRed {
	const PtxEwProg *g;
	int ri;
	Reg (*acc)[8];
} SliceRed;

/* A reduction's step: V rows' values of program g into the u-th
 * accumulators. */
static void
red_step(Rows *r, Reg c, int u, void *arg)
{
	const SliceRed *a = arg;
	Reg in[PTX_MAX_TENSORS][8], val[PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];
	col_inputs(r, a->g, c, in);
	for (int j = 0; j < r->cv; j++) {
		PtxEnv env = env_for(r, in, j);
		ptx_prog_emit(r->p, a->g, &env, val, vc);
		ptx_expand(r->p, reds[a->ri].combine, a->acc[u][j], a->acc[u][j],
		           ptx_convert(r->p, val[a->g->out[0].val], vc[a->g->out[0].val], VC_F32));
	}
}

/* This thread's slice of the reduced dim, V rows each step, into the
 * COL_UNROLL x V accumulators. */
static void
col_slice(Rows *r, const PtxEwProg *g, int ri, Reg acc[][8])
{
	SliceRed a = {g, ri, acc};
	col_walk(r, red_step, &a);
}

/* Thread tid < rb: its row's partial from the CTA's warps (a = its
 * column of the partials in shared memory); in a cluster, also left in
 * the CTA's exchange slot for the peers (col_xchg). */
static Reg
col_partial(Rows *r, int k, int ri, Reg a)
{
	Ptx *p = r->p;
	Reg acc = ptx_reg(p, RC_F32), t = ptx_reg(p, RC_F32);

	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(p->tid), R(r->smem));
	ptx_emit(p, "ld.shared.f32 %s, [%s];", R(acc), R(a));
	for (int w = 1; w < COL_WARPS; w++) {
		ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(t), R(a), w * r->rb * 4);
		ptx_expand(p, reds[ri].combine, acc, acc, t);
	}
	if (r->ncl > 1)
		ptx_emit(p, "st.shared.f32 [%s+%d], %s;", R(a), col_xs(r, k), R(acc));
	return acc;
}

/* Thread tid < rb, after the cluster barrier: the row's whole reduction,
 * the CTAs' partials combined in rank order, so every CTA of the cluster
 * holds the same bits. */
static void
col_xchg(Rows *r, int k, int ri, Reg a, Reg acc)
{
	Ptx *p = r->p;
	Reg x = ptx_reg(p, RC_B32), ra = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_F32);

	ptx_emit(p, "add.u32 %s, %s, %d;", R(x), R(a), col_xs(r, k));
	ptx_emit(p, "mov.f32 %s, 0f%08X;", R(acc), reds[ri].identity);
	for (int j = 0; j < r->ncl; j++) {
		ptx_emit(p, "mapa.shared::cluster.u32 %s, %s, %d;", R(ra), R(x), j);
		ptx_emit(p, "ld.shared::cluster.f32 %s, [%s];", R(t), R(ra));
		ptx_expand(p, reds[ri].combine, acc, acc, t);
	}
}

/* Threads < rb finish row x rb + tid from its reduction acc: the mean,
 * the post program (per-row inputs read there), the stage's store (by the
 * cluster's rank 0); the result into the finished rows in shared memory. */
static void
col_finish(Rows *r, int k, Reg a, Reg acc)
{
	Ptx *p = r->p;
	const PtxRowStage *st = &r->s->stage[k];
	Reg t, frow = ptx_reg(p, RC_B32), fa = ptx_reg(p, RC_PRED);
	Reg pin[PTX_MAX_TENSORS][8], val[PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];
	int nostore = ptx_label(p);

	if (st->red == OP_MEAN) {
		Reg inv = ptx_imm_f32(p, 1.0 / (double)r->s->len);
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(acc), R(acc), R(inv));
	}
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(frow), R(p->x), r->rb, R(p->tid));
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(fa), R(frow), (long long)r->s->rows);
	ptx_emit(p, "@!%s mov.u32 %s, 0;", R(fa), R(frow)); /* rows past the end read row 0, store nothing */
	for (int i = 0; i < r->s->nin; i++) {
		pin[i][0] = -1;
		if (ptx_prog_uses(&r->post[k], OP_PARAM, i))
			pin[i][0] = ptx_load_val(p, r->s->in[i].dt, row_ptr(r, i, frow), "global");
	}
	{
		PtxEnv env = env_for(r, pin, 0);
		for (int q = 0; q < k; q++) /* earlier stages of this row: the finished rows */
			env.stage[q] = env.stage_rcp[q] = 0;
		env.acc = acc;
		for (int q = 0; q < k; q++)
			if (ptx_prog_uses(&r->post[k], PTX_OP_STAGE, q)) {
				env.stage[q] = ptx_reg(p, RC_F32);
				ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(env.stage[q]), R(a), col_fin(r, q));
			}
		ptx_prog_emit(p, &r->post[k], &env, val, vc);
		t = ptx_convert(p, val[r->post[k].out[0].val], vc[r->post[k].out[0].val], VC_F32);
	}
	if (st->out >= 0) {
		ptx_emit(p, "@!%s bra $L%d;", R(fa), nostore);
		if (r->ncl > 1 || r->grp > 1) { /* every CTA holds the same bits: one stores them */
			Reg q = ptx_reg(p, RC_PRED);
			ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(p->crank));
			ptx_emit(p, "@%s bra $L%d;", R(q), nostore);
		}
		ptx_store_val(p, r->s->out[st->out].dt, row_ptr(r, r->s->nin + st->out, frow), t, VC_F32);
		ptx_place(p, nostore);
	}
	ptx_emit(p, "st.shared.f32 [%s+%d], %s;", R(a), col_fin(r, k), R(t));
}

/* ---- groups: a column block split over CTAs that meet in global memory ----
 * The workspace (the last tensor) holds each group's counters (ptx.c),
 * then per group two sets of partials, for entries of even and odd count
 * (four where the entries are pipelined: group_nsets):
 * a CTA writes the next entry's while a slower one may still read this
 * one's last stage, and the next entry's first barrier orders the set
 * after.  In a set, stage k: the CTAs' partials, float (k * grp + m) * rb
 * + j for the CTA of rank m and row j; after all stages' partials, each
 * stage's finished rows (two-level combine: col_group_meet), nstage * rb
 * floats. */
static int64_t
group_set_bytes(const Rows *r)
{
	return (int64_t)r->s->nstage * (r->grp + 1) * r->rb * 4;
}

/* Threads a row in the one-level combine: the CTA's 512 over the rb rows,
 * at most a warp. */
static int
group_subs(const Rows *r)
{
	int S = 32 * COL_WARPS / r->rb;
	return S > 32 ? 32 : S;
}

/* The one-level combine makes every CTA load all g x rb partials, which
 * grows with g squared over the group: at 8192 x 8192 in blocks of 32
 * rows, groups of 64 and 128 took 0.72 and 2.2 ms against 0.17 for 8
 * (rmsnorm over dim 0, one H100, bench/results/2026-12-06-cols-h100-d.md).
 * Past 8 partials a thread, the rows are combined once each, by the CTA
 * that owns them, and every CTA loads the rb finished rows, for one more
 * barrier a stage (blocks of 128 rows in groups of 128: 0.34 -> 0.26 ms
 * there; groups of 32, 8 partials a thread, were as fast or faster with
 * one level). */
static bool
group_two_level(const Rows *r)
{
	return r->grp > 8 * group_subs(r);
}

/* Groups a kernel has workspace for: enough for every CTA of a GPU of
 * GROUP_CTAS resident CTAs (CTAs past them leave: ptx.c group_params), and
 * never more than the blocks. */
static int
group_slots(const Rows *r, int64_t nblocks)
{
	int64_t n = GROUP_CTAS / r->grp;
	return (int)(n < nblocks ? n : nblocks);
}

/* Sets of partials a group cycles through: two, or four where its
 * entries are pipelined (col_pipe_ok: a CTA puts entry e + 2's partials
 * having passed only entry e's meeting, after which a slower CTA may
 * still be reading entry e - 1's). */
static int
group_nsets(const Rows *r)
{
	return r->pipe ? 4 : 2;
}

static int64_t
group_counter_bytes(int slots)
{
	return ((int64_t)slots * PTX_GROUP_WORDS * 4 + 255) / 256 * 256;
}

/* Before the persistent loop: this group's partials, the group's slices,
 * no barriers passed yet. */
static void
col_group_init(Rows *r, int slots)
{
	Ptx *p = r->p;
	Reg w = p->tensor[p->ntensors - 1];
	r->gpart = ptx_reg(p, RC_B64);
	r->gbase = ptx_reg(p, RC_B32);
	r->gent = ptx_reg(p, RC_B32);
	r->nslr = ptx_reg(p, RC_B32);
	ptx_emit(p, "add.u64 %s, %s, %lld;", R(r->gpart), R(w), (long long)group_counter_bytes(slots));
	ptx_mad_wide(p, r->gpart, p->blk, group_nsets(r) * group_set_bytes(r), r->gpart);
	ptx_emit(p, "mov.u32 %s, 0;", R(r->gbase));
	ptx_emit(p, "mov.u32 %s, 0;", R(r->gent));
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(r->nslr), R(p->gsize), r->nsl);
}

/* At an entry's start: its set of partials. */
static void
col_group_entry(Rows *r)
{
	Ptx *p = r->p;
	Reg par = ptx_reg(p, RC_B32);
	r->gcur = ptx_reg(p, RC_B64);
	ptx_emit(p, "and.b32 %s, %s, %d;", R(par), R(r->gent), group_nsets(r) - 1);
	ptx_mad_wide(p, r->gcur, par, group_set_bytes(r), r->gpart);
}

/* Thread tid < rb: its row's partial of stage k into the workspace. */
static void
col_group_put(Rows *r, int k, Reg acc)
{
	Ptx *p = r->p;
	Reg i = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B64);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(i), R(p->crank), r->rb, R(p->tid));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(i), R(i), k * r->grp * r->rb);
	ptx_emit(p, "mad.wide.u32 %s, %s, 4, %s;", R(a), R(i), R(r->gcur));
	ptx_emit(p, "st.global.f32 [%s], %s;", R(a), R(acc));
}

/* Every thread: until counter cnt reaches target (thread 0 arriving first
 * where `arrive`); a timeout makes the CTA leave. */
static void
col_group_await(Rows *r, Reg cnt, Reg target, bool arrive)
{
	Ptx *p = r->p;
	Reg quit = ptx_reg(p, RC_PRED), all = ptx_reg(p, RC_PRED);
	ptx_group_wait(p, cnt, target, quit, arrive);
	ptx_emit(p, "bar.red.or.pred %s, 0, %s;", R(all), R(quit));
	ptx_emit(p, "@%s bra $L%d;", R(all), p->lbl_done);
}

/* The group's next barrier of this entry, its n-th (the counter's target
 * is (gbase + n) g), every thread. */
static void
col_group_barrier(Rows *r)
{
	Ptx *p = r->p;
	Reg t = ptx_reg(p, RC_B32);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(t), R(r->gbase), ++r->gbar);
	ptx_emit(p, "mul.lo.u32 %s, %s, %s;", R(t), R(t), R(p->gsize));
	col_group_await(r, p->gcnt, t, true);
}

/* After the CTA's partials of stage k are in the workspace: the group's
 * barrier, then each row's g partials combined -- S threads a row, each
 * over every S-th CTA, then a butterfly over the S lanes -- in the same
 * order in every CTA, so all hold the same bits; the row into its
 * exchange slot in shared memory. */
/* The sum (or max, min) of the g partials of stage k, row `row`, into acc
 * in each of S lanes (a power of two up to 32, aligned in the warp, which
 * must all come here): lane l of them loads CTAs l, l + S, ...,
 * GROUP_UNROLL at a time (the loads first, then the combines: all in
 * flight), then a butterfly over the S lanes; the same order wherever it
 * runs.  act: these lanes have the row. */
static void
group_sum(Rows *r, int k, int ri, int S, Reg row, Reg act, Reg acc)
{
	Ptx *p = r->p;
	int loop = ptx_label(p), done = ptx_label(p);
	Reg m = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), base = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B64);
	Reg t[GROUP_UNROLL];

	ptx_emit(p, "and.b32 %s, %s, %d;", R(m), R(p->tid), S - 1);
	ptx_emit(p, "mov.f32 %s, 0f%08X;", R(acc), reds[ri].identity);
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(m), R(p->gsize));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	for (int u = 0; u < GROUP_UNROLL; u++) {
		t[u] = ptx_reg(p, RC_F32);
		ptx_emit(p, "mov.f32 %s, 0f%08X;", R(t[u]), reds[ri].identity);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(base), R(m), u * S);
		ptx_emit(p, "setp.lt.and.u32 %s, %s, %s, %s;", R(q), R(base), R(p->gsize), R(act));
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(base), r->rb, R(row));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(base), R(base), k * r->grp * r->rb);
		ptx_emit(p, "mad.wide.u32 %s, %s, 4, %s;", R(a), R(base), R(r->gcur));
		ptx_emit(p, "@%s ld.relaxed.gpu.global.f32 %s, [%s];", R(q), R(t[u]), R(a));
	}
	for (int u = 0; u < GROUP_UNROLL; u++)
		ptx_expand(p, reds[ri].combine, acc, acc, t[u]);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(m), R(m), GROUP_UNROLL * S);
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
	for (int d = S / 2; d >= 1; d /= 2) {
		Reg o = ptx_reg(p, RC_F32);
		ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(o), R(acc), d);
		ptx_expand(p, reds[ri].combine, acc, acc, o);
	}
}

/* The two-level combine of stage k, after the partials' barrier: the CTA
 * of rank m finishes rows m, m + g, ... (a warp each, COL_WARPS at a time)
 * into the set's finished rows; after the group's second barrier every
 * CTA loads all rb of them into its exchange slots. */
static void
col_group_meet2(Rows *r, int k, int ri)
{
	Ptx *p = r->p;
	int loop = ptx_label(p), done = ptx_label(p), fin = ptx_label(p);
	Reg row = ptx_reg(p, RC_B32), w = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), act = ptx_reg(p, RC_PRED);
	Reg acc = ptx_reg(p, RC_F32), a = ptx_reg(p, RC_B64), i = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_F32);
	Reg sa = ptx_reg(p, RC_B32);
	int fin_off = r->s->nstage * r->grp * r->rb + k * r->rb; /* floats into the set */

	ptx_emit(p, "shr.u32 %s, %s, 5;", R(w), R(p->tid));
	ptx_emit(p, "mad.lo.u32 %s, %s, %s, %s;", R(row), R(w), R(p->gsize), R(p->crank));
	ptx_place(p, loop); /* warp-uniform: every lane of a warp has the same row */
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(row), r->rb);
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	ptx_emit(p, "setp.lt.u32 %s, %s, %d;", R(act), R(row), r->rb);
	group_sum(r, k, ri, 32, row, act, acc);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(i), R(p->tid));
	ptx_emit(p, "setp.eq.u32 %s, %s, 0;", R(q), R(i));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(i), R(row), fin_off);
	ptx_emit(p, "mad.wide.u32 %s, %s, 4, %s;", R(a), R(i), R(r->gcur));
	ptx_emit(p, "@%s st.global.f32 [%s], %s;", R(q), R(a), R(acc));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(row), R(p->gsize), COL_WARPS, R(row));
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
	ptx_emit(p, "bar.sync 0;");
	col_group_barrier(r);
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(p->tid), r->rb);
	ptx_emit(p, "@%s bra $L%d;", R(q), fin);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(i), R(p->tid), fin_off);
	ptx_emit(p, "mad.wide.u32 %s, %s, 4, %s;", R(a), R(i), R(r->gcur));
	ptx_emit(p, "ld.relaxed.gpu.global.f32 %s, [%s];", R(t), R(a));
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(p->tid), R(r->smem));
	ptx_emit(p, "st.shared.f32 [%s+%d], %s;", R(sa), col_xs(r, k), R(t));
	ptx_place(p, fin);
	ptx_emit(p, "bar.sync 0;");
}

/* The one-level combine of stage k, after the group's barrier: each
 * row's g partials in its exchange slot in shared memory. */
static void
col_group_rows(Rows *r, int k, int ri)
{
	Ptx *p = r->p;
	int S = group_subs(r);
	Reg row = ptx_reg(p, RC_B32), m = ptx_reg(p, RC_B32), act = ptx_reg(p, RC_PRED), q = ptx_reg(p, RC_PRED);
	Reg acc = ptx_reg(p, RC_F32), sa = ptx_reg(p, RC_B32);

	ptx_emit(p, "shr.u32 %s, %s, %d;", R(row), R(p->tid), ptx_ilog2(S));
	ptx_emit(p, "setp.lt.u32 %s, %s, %d;", R(act), R(row), r->rb);
	group_sum(r, k, ri, S, row, act, acc);
	ptx_emit(p, "and.b32 %s, %s, %d;", R(m), R(p->tid), S - 1);
	ptx_emit(p, "setp.eq.and.u32 %s, %s, 0, %s;", R(q), R(m), R(act));
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(row), R(r->smem));
	ptx_emit(p, "@%s st.shared.f32 [%s+%d], %s;", R(q), R(sa), col_xs(r, k), R(acc));
	ptx_emit(p, "bar.sync 0;");
}

static void
col_group_meet(Rows *r, int k, int ri)
{
	ptx_emit(r->p, "bar.sync 0;");
	col_group_barrier(r);
	if (group_two_level(r)) {
		col_group_meet2(r, k, ri);
		return;
	}
	col_group_rows(r, k, ri);
}

/* After the map: where the entry raises a flag, one more barrier, so
 * the group's rank 0 raises it after every CTA's stores; then the
 * barriers this entry passed, and the next set of partials. */
static void
col_group_done(Rows *r)
{
	Ptx *p = r->p;
	Reg fo = ptx_reg(p, RC_B32), has = ptx_reg(p, RC_PRED), t = ptx_reg(p, RC_B32);
	int skip = ptx_label(p), n = r->gbar;
	ptx_emit(p, "ld.global.nc.u32 %s, [%s+24];", R(fo), R(p->entry));
	ptx_emit(p, "setp.ne.u32 %s, %s, %u;", R(has), R(fo), PTX_NO_FLAG);
	ptx_emit(p, "@!%s bra $L%d;", R(has), skip);
	ptx_emit(p, "bar.sync 0;");
	col_group_barrier(r);
	ptx_place(p, skip);
	ptx_emit(p, "selp.u32 %s, %d, %d, %s;", R(t), n + 1, n, R(has));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(r->gbase), R(r->gbase), R(t));
	ptx_emit(p, "add.u32 %s, %s, 1;", R(r->gent), R(r->gent));
}

/* ---- moments: a mean and the mean of squared deviations from it in one pass ----
 * layernorm over the first dim is two stages, mean(x) and then
 * mean((x - mean)^2), and each reads the block again -- from HBM where the
 * blocks in flight outgrow L2 (50304 x 4096: three reads and a write,
 * bench/results/2026-12-06-cols-h100-d.md).  Such a pair is reduced in
 * one pass: each thread sums x - K and (x - K)^2 over its slice, K the
 * slice's first value (so the sums stay small beside the variance
 * whatever the mean), and turns them into (count, mean, M2); threads,
 * warps and the CTAs of a group merge those by Chan's formula
 * (n = na + nb, mean = ma + d nb / n, M2 = M2a + M2b + d^2 na nb / n,
 * d = mb - ma), every CTA in the same order.  The pair's first stage is
 * then the mean and the second M2 (its sum) or M2 / len (its mean). */

/* Are instruction i of program p and instruction j of program q the
 * same expression? */
static bool
ins_same(const PtxEwProg *p, int i, const PtxEwProg *q, int j)
{
	const PtxIns *a, *b;
	int ar;
	if (i < 0 || j < 0 || i >= p->nins || j >= q->nins)
		return false;
	a = &p->ins[i], b = &q->ins[j];
	if (a->op != b->op || a->dt != b->dt)
		return false;
	switch (a->op) {
	case OP_PARAM:
	case PTX_OP_STAGE:
		return a->a == b->a;
	case OP_CONST:
		return a->c == b->c;
	case PTX_OP_ACC:
		return true;
	}
	if (a->op >= OP_COUNT || !(ir_ops[a->op].flags & OF_EW) || (ar = ir_ops[a->op].arity) < 1 || ar > 2)
		return false;
	return ins_same(p, a->a, q, b->a) && (ar < 2 || ins_same(p, a->b, q, b->b));
}

/* Does stage k's result equal the mean of what it reduces: a mean with
 * no post program, or a sum whose post program scales it by 1 / len
 * (codegen/lower.c lowers mean so)? */
static bool
stage_is_mean(const Rows *r, int k)
{
	const PtxRowStage *st = &r->s->stage[k];
	const PtxEwProg *g = &r->post[k];
	const PtxIns *m;
	int a, c;
	if (st->red == OP_MEAN)
		return !st->post.nins;
	if (st->red != OP_SUM || g->nout != 1)
		return false;
	m = &g->ins[g->out[0].val];
	if (m->op != OP_MUL)
		return false;
	a = g->ins[m->a].op == PTX_OP_ACC ? m->a : m->b;
	c = a == m->a ? m->b : m->a;
	return g->ins[a].op == PTX_OP_ACC && g->ins[c].op == OP_CONST && g->ins[c].dt != DT_I32 &&
	       fabs(g->ins[c].c * (double)r->s->len - 1) < 1e-9;
}

/* Stages j and j + 1 a mean and the sum or mean of squared deviations
 * from it: j + 1 reduces (X - stage j)^2, X what stage j reduces.  Column
 * mode without a cluster, and a group's combine of one level. */
static bool
col_moments(const Rows *r, int j)
{
	const PtxEwProg *v = &r->pre[j + 1], *x = &r->pre[j];
	const PtxIns *m, *d;
	int red = r->s->stage[j + 1].red;
	if (!r->cols || r->ncl > 1 || (r->grp > 1 && group_two_level(r)) || j + 1 >= r->s->nstage)
		return false;
	if (!stage_is_mean(r, j) || (red != OP_SUM && red != OP_MEAN) || v->nout != 1 || x->nout != 1)
		return false;
	m = &v->ins[v->out[0].val];
	if (m->op != OP_MUL || !ins_same(v, m->a, v, m->b))
		return false;
	d = &v->ins[m->a];
	return d->op == OP_SUB && d->b >= 0 && d->b < v->nins && v->ins[d->b].op == PTX_OP_STAGE && v->ins[d->b].a == j &&
	       ins_same(v, d->a, x, x->out[0].val);
}

/* The slice's step: the value X program g reduces at c, as f32, per lane
 * row. */
static void
mom_values(Rows *r, const PtxEwProg *g, Reg c, Reg X[8])
{
	Reg in[PTX_MAX_TENSORS][8], val[PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];
	col_inputs(r, g, c, in);
	for (int j = 0; j < r->cv; j++) {
		PtxEnv env = env_for(r, in, j);
		ptx_prog_emit(r->p, g, &env, val, vc);
		X[j] = ptx_convert(r->p, val[g->out[0].val], vc[g->out[0].val], VC_F32);
	}
}

typedef struct SliceMom {
	const PtxEwProg *g;
	Reg *K, *S1, *S2;
} SliceMom;

/* A moments step: X - K into S1, its square into S2, per lane row. */
static void
mom_step(Rows *r, Reg c, int u, void *arg)
{
	const SliceMom *a = arg;
	Ptx *p = r->p;
	Reg X[8];
	(void)u;
	mom_values(r, a->g, c, X);
	for (int j = 0; j < r->cv; j++) {
		Reg d = ptx_reg(p, RC_F32);
		ptx_emit(p, "sub.f32 %s, %s, %s;", R(d), R(X[j]), R(a->K[j]));
		ptx_emit(p, "add.f32 %s, %s, %s;", R(a->S1[j]), R(a->S1[j]), R(d));
		ptx_emit(p, "fma.rn.f32 %s, %s, %s, %s;", R(a->S2[j]), R(d), R(d), R(a->S2[j]));
	}
}

/* Over this thread's slice (col_walk): per lane row the pilot K, S1 =
 * sum(X - K), S2 = sum((X - K)^2); all 0 for an idle lane or an empty
 * slice. */
static void
col_mom_slice(Rows *r, const PtxEwProg *g, Reg K[8], Reg S1[8], Reg S2[8])
{
	Ptx *p = r->p;
	Reg q = ptx_reg(p, RC_PRED), X[8];
	int done = ptx_label(p);
	SliceMom a = {g, K, S1, S2};

	for (int j = 0; j < r->cv; j++) {
		K[j] = ptx_reg(p, RC_F32), S1[j] = ptx_reg(p, RC_F32), S2[j] = ptx_reg(p, RC_F32);
		ptx_emit(p, "mov.f32 %s, 0f00000000;", R(K[j]));
		ptx_emit(p, "mov.f32 %s, 0f00000000;", R(S1[j]));
		ptx_emit(p, "mov.f32 %s, 0f00000000;", R(S2[j]));
	}
	ptx_emit(p, "@!%s bra $L%d;", R(r->active), done);
	ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(r->slice), (long long)r->s->len);
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	if (r->ccache) { /* the slice's first visit */
		r->cn = ptx_reg(p, RC_B32);
		ptx_emit(p, "mov.u32 %s, 0;", R(r->cn));
	}
	mom_values(r, g, r->slice, X);
	for (int j = 0; j < r->cv; j++)
		ptx_emit(p, "mov.f32 %s, %s;", R(K[j]), R(X[j]));
	col_walk(r, mom_step, &a);
	ptx_place(p, done);
}

/* n (f32) values of a slice s of nslT slices over the length: the
 * thread's own (0 for an idle lane), as col_mom_slice counts them. */
static Reg
mom_count(Rows *r)
{
	Ptx *p = r->p;
	Reg n = ptx_reg(p, RC_B32), f = ptx_reg(p, RC_F32), q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "sub.u32 %s, %d, %s;", R(n), (int)(r->s->len - 1), R(r->slice));
	if (r->grp > 1)
		ptx_emit(p, "div.u32 %s, %s, %s;", R(n), R(n), R(r->nslr));
	else
		ptx_emit(p, "div.u32 %s, %s, %d;", R(n), R(n), r->nsl);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(n), R(n));
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(q), R(r->slice), (long long)r->s->len);
	ptx_emit(p, "and.pred %s, %s, %s;", R(q), R(q), R(r->active));
	ptx_emit(p, "selp.u32 %s, %s, 0, %s;", R(n), R(n), R(q));
	ptx_emit(p, "cvt.rn.f32.u32 %s, %s;", R(f), R(n));
	return f;
}

/* Merges (nb, mb[], Mb[]) into (n, m[], M[]) for `cnt` values alike in
 * count: Chan's formula, 0 where both counts are. */
static void
mom_merge(Ptx *p, int cnt, Reg n, Reg *m, Reg *M, Reg nb, const Reg *mb, const Reg *Mb)
{
	Reg t = ptx_reg(p, RC_F32), w = ptx_reg(p, RC_F32), q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "add.f32 %s, %s, %s;", R(t), R(n), R(nb));
	ptx_emit(p, "setp.gt.f32 %s, %s, 0f00000000;", R(q), R(t));
	ptx_emit(p, "div.rn.f32 %s, %s, %s;", R(w), R(nb), R(t));
	ptx_emit(p, "@!%s mov.f32 %s, 0f00000000;", R(q), R(w));
	for (int j = 0; j < cnt; j++) {
		Reg d = ptx_reg(p, RC_F32), e = ptx_reg(p, RC_F32);
		ptx_emit(p, "sub.f32 %s, %s, %s;", R(d), R(mb[j]), R(m[j]));
		ptx_emit(p, "fma.rn.f32 %s, %s, %s, %s;", R(m[j]), R(d), R(w), R(m[j]));
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(e), R(d), R(d));
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(e), R(e), R(n));
		ptx_emit(p, "add.f32 %s, %s, %s;", R(M[j]), R(M[j]), R(Mb[j]));
		ptx_emit(p, "fma.rn.f32 %s, %s, %s, %s;", R(M[j]), R(e), R(w), R(M[j]));
	}
	ptx_emit(p, "mov.f32 %s, %s;", R(n), R(t));
}

/* Plane v (0 count, 1 mean, 2 M2) of the warps' partials, as an offset
 * from a thread's column there. */
static int
mom_plane(const Rows *r, int v)
{
	return v * COL_WARPS * r->rb * 4;
}

/* How a group's CTAs merge the partials of a pair of stages reduced in
 * one pass: nv values a row, the last two those the CTAs put into the
 * workspace (planes j, j + 1) and the exchange slots take; before them,
 * with moments, the count, which each CTA derives from the slicing. */
typedef struct PairKind {
	int nv;
	uint32_t identity[3];                                     /* f32 bits */
	void (*setup)(Rows *r, Reg aux[2]);                       /* once, before the CTAs' loop */
	void (*count)(Rows *r, Reg m, Reg act, Reg b, const Reg aux[2]); /* CTA m's value 0 into b */
	void (*merge)(Ptx *p, Reg *acc, const Reg *b);
} PairKind;

/* A group's CTAs meet for the pair j, j + 1 (each has put its rows' two
 * values into the workspace): after the barrier S threads a row merge the
 * g CTAs' in order, then a butterfly over the S lanes; the two values
 * into the exchange slots of j and j + 1. */
static void
col_group_pair(Rows *r, int j, const PairKind *k)
{
	Ptx *p = r->p;
	int S = group_subs(r), loop = ptx_label(p), done = ptx_label(p), nv = k->nv;
	Reg row = ptx_reg(p, RC_B32), m = ptx_reg(p, RC_B32), act = ptx_reg(p, RC_PRED), q = ptx_reg(p, RC_PRED);
	Reg acc[3], b[3], aux[2] = {-1, -1}, base = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B64), sa = ptx_reg(p, RC_B32);

	for (int v = 0; v < nv; v++)
		acc[v] = ptx_reg(p, RC_F32), b[v] = ptx_reg(p, RC_F32);
	ptx_emit(p, "bar.sync 0;");
	col_group_barrier(r);
	if (k->setup)
		k->setup(r, aux);
	ptx_emit(p, "shr.u32 %s, %s, %d;", R(row), R(p->tid), ptx_ilog2(S));
	ptx_emit(p, "and.b32 %s, %s, %d;", R(m), R(p->tid), S - 1);
	ptx_emit(p, "setp.lt.u32 %s, %s, %d;", R(act), R(row), r->rb);
	for (int v = 0; v < nv; v++)
		ptx_emit(p, "mov.f32 %s, 0f%08X;", R(acc[v]), k->identity[v]);
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(m), R(p->gsize));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	if (k->count)
		k->count(r, m, act, b[0], aux);
	for (int v = nv - 2; v < nv; v++)
		ptx_emit(p, "mov.f32 %s, 0f%08X;", R(b[v]), k->identity[v]);
	for (int v = nv - 2; v < nv; v++) {
		if (v == nv - 2) {
			ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(m), r->rb, R(row));
			ptx_emit(p, "add.u32 %s, %s, %d;", R(base), R(base), j * r->grp * r->rb);
		} else
			ptx_emit(p, "add.u32 %s, %s, %d;", R(base), R(base), r->grp * r->rb);
		ptx_emit(p, "mad.wide.u32 %s, %s, 4, %s;", R(a), R(base), R(r->gcur));
		ptx_emit(p, "@%s ld.relaxed.gpu.global.f32 %s, [%s];", R(act), R(b[v]), R(a));
	}
	k->merge(p, acc, b);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(m), R(m), S);
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
	for (int d = S / 2; d >= 1; d /= 2) {
		for (int v = 0; v < nv; v++)
			ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(b[v]), R(acc[v]), d);
		k->merge(p, acc, b);
	}
	ptx_emit(p, "and.b32 %s, %s, %d;", R(m), R(p->tid), S - 1);
	ptx_emit(p, "setp.eq.and.u32 %s, %s, 0, %s;", R(q), R(m), R(act));
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(sa), R(row), R(r->smem));
	ptx_emit(p, "@%s st.shared.f32 [%s+%d], %s;", R(q), R(sa), col_xs(r, j), R(acc[nv - 2]));
	ptx_emit(p, "@%s st.shared.f32 [%s+%d], %s;", R(q), R(sa), col_xs(r, j + 1), R(acc[nv - 1]));
	ptx_emit(p, "bar.sync 0;");
}

/* Moments: the slices of N = len split q = nsl a CTA over the group: full
 * = len / N rounds, rem = len - full N left over. */
static void
mom_group_setup(Rows *r, Reg aux[2])
{
	Ptx *p = r->p;
	aux[0] = ptx_reg(p, RC_B32), aux[1] = ptx_reg(p, RC_B32);
	ptx_emit(p, "div.u32 %s, %lld, %s;", R(aux[0]), (long long)r->s->len, R(r->nslr));
	ptx_emit(p, "mul.lo.u32 %s, %s, %s;", R(aux[1]), R(aux[0]), R(r->nslr));
	ptx_emit(p, "sub.u32 %s, %lld, %s;", R(aux[1]), (long long)r->s->len, R(aux[1]));
}

/* CTA m's count, as col_mom_slice counts it (q = nsl slices from m q):
 * q full + min(max(rem - m q, 0), q); 0 for a row past the block. */
static void
mom_group_count(Rows *r, Reg m, Reg act, Reg nb, const Reg aux[2])
{
	Ptx *p = r->p;
	Reg ni = ptx_reg(p, RC_B32);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(ni), R(m), r->nsl);
	ptx_emit(p, "sub.s32 %s, %s, %s;", R(ni), R(aux[1]), R(ni));
	ptx_emit(p, "max.s32 %s, %s, 0;", R(ni), R(ni));
	ptx_emit(p, "min.s32 %s, %s, %d;", R(ni), R(ni), r->nsl);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(ni), R(aux[0]), r->nsl, R(ni));
	ptx_emit(p, "cvt.rn.f32.u32 %s, %s;", R(nb), R(ni));
	ptx_emit(p, "@!%s mov.f32 %s, 0f00000000;", R(act), R(nb));
}

static void
mom_group_merge(Ptx *p, Reg *acc, const Reg *b)
{
	mom_merge(p, 1, acc[0], &acc[1], &acc[2], b[0], &b[1], &b[2]);
}

/* (count, mean, M2) */
static const PairKind mom_pair = {3, {0, 0, 0}, mom_group_setup, mom_group_count, mom_group_merge};

/* The pair's values of this thread's V lane rows (v[x][i], x < nv; the
 * warp's slices already merged) met over the CTA's warps in order -- lanes
 * < LC put them in nv planes of shared memory -- and, in a group, over the
 * group's CTAs (col_group_pair).  Threads < rb end with their row's in
 * c[], fa their column of the planes; the others skip to the label
 * returned (q set), which the caller places after finishing the row. */
static int
col_pair_meet(Rows *r, int j, const PairKind *k, Reg v[][8], Reg c[3], Reg q, Reg a, Reg fa)
{
	Ptx *p = r->p;
	Reg w[3];
	int fin = ptx_label(p);
	for (int x = 0; x < k->nv; x++)
		c[x] = ptx_reg(p, RC_F32), w[x] = ptx_reg(p, RC_F32);
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(r->lane), r->lc);
	ptx_emit(p, "@%s bra $L%d;", R(q), fin);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a), R(r->warp), r->rb, R(r->rin));
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(a), R(r->smem));
	for (int i = 0; i < r->cv; i++)
		for (int x = 0; x < k->nv; x++)
			ptx_emit(p, "st.shared.f32 [%s+%d], %s;", R(a), mom_plane(r, x) + 4 * i, R(v[x][i]));
	ptx_place(p, fin);
	ptx_emit(p, "bar.sync 0;");
	/* threads < rb: the CTA's warps merged in order */
	fin = ptx_label(p);
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(p->tid), r->rb);
	ptx_emit(p, "@%s bra $L%d;", R(q), fin);
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(fa), R(p->tid), R(r->smem));
	for (int x = 0; x < k->nv; x++)
		ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(c[x]), R(fa), mom_plane(r, x));
	for (int wp = 1; wp < COL_WARPS; wp++) {
		for (int x = 0; x < k->nv; x++)
			ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(w[x]), R(fa), mom_plane(r, x) + wp * r->rb * 4);
		k->merge(p, c, w);
	}
	if (r->grp > 1) { /* the group's CTAs meet: every thread */
		col_group_put(r, j, c[k->nv - 2]);
		col_group_put(r, j + 1, c[k->nv - 1]);
		ptx_place(p, fin);
		col_group_pair(r, j, k);
		fin = ptx_label(p);
		ptx_emit(p, "@%s bra $L%d;", R(q), fin);
		ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(c[k->nv - 2]), R(fa), col_xs(r, j));
		ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(c[k->nv - 1]), R(fa), col_xs(r, j + 1));
	}
	return fin;
}

/* Once threads < rb have put stages k0 .. k1's finished rows in shared
 * memory (one stage, or a pair reduced in one pass: moments, online
 * softmax): every thread takes its V of them (a: scratch). */
static void
col_results(Rows *r, int k0, int k1, Reg a)
{
	Ptx *p = r->p;
	ptx_emit(p, "bar.sync 0;");
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(r->rin), R(r->smem));
	for (int k = k0; k <= k1; k++)
		for (int i = 0; i < r->cv; i++) {
			r->colres[k][i] = ptx_reg(p, RC_F32);
			ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(r->colres[k][i]), R(a), col_fin(r, k) + 4 * i);
			r->res[k] = r->colres[k][i];
			row_rcp(r, k);
			r->colrcp[k][i] = r->rcp[k];
		}
}

/* Stages j (a mean) and j + 1 (its squared deviations) in one pass. */
static void
rows_col_moments(Rows *r, int j)
{
	Ptx *p = r->p;
	Reg K[8], S1[8], S2[8], mu[8], M[8], v[3][8], c[3], n, inv = ptx_reg(p, RC_F32), q = ptx_reg(p, RC_PRED);
	Reg a = ptx_reg(p, RC_B32), fa = ptx_reg(p, RC_B32);
	int fin;

	col_mom_slice(r, &r->pre[j], K, S1, S2);
	n = mom_count(r);
	ptx_emit(p, "setp.gt.f32 %s, %s, 0f00000000;", R(q), R(n));
	ptx_emit(p, "rcp.rn.f32 %s, %s;", R(inv), R(n));
	ptx_emit(p, "@!%s mov.f32 %s, 0f00000000;", R(q), R(inv));
	for (int i = 0; i < r->cv; i++) { /* mean = K + S1 / n, M2 = S2 - S1^2 / n (not below 0) */
		Reg o = ptx_reg(p, RC_F32);
		mu[i] = ptx_reg(p, RC_F32), M[i] = ptx_reg(p, RC_F32);
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(o), R(S1[i]), R(inv));
		ptx_emit(p, "add.f32 %s, %s, %s;", R(mu[i]), R(K[i]), R(o));
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(o), R(S1[i]), R(o));
		ptx_emit(p, "sub.f32 %s, %s, %s;", R(M[i]), R(S2[i]), R(o));
		ptx_emit(p, "max.f32 %s, %s, 0f00000000;", R(M[i]), R(M[i]));
	}
	/* the warp's slices of the same rows: lanes LC apart */
	for (int d = 16; d >= r->lc; d /= 2) {
		Reg nb = ptx_reg(p, RC_F32), mb[8], Mb[8];
		ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(nb), R(n), d);
		for (int i = 0; i < r->cv; i++) {
			mb[i] = ptx_reg(p, RC_F32), Mb[i] = ptx_reg(p, RC_F32);
			ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(mb[i]), R(mu[i]), d);
			ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(Mb[i]), R(M[i]), d);
		}
		mom_merge(p, r->cv, n, mu, M, nb, mb, Mb);
	}
	for (int i = 0; i < r->cv; i++)
		v[0][i] = n, v[1][i] = mu[i], v[2][i] = M[i];
	fin = col_pair_meet(r, j, &mom_pair, v, c, q, a, fa);
	/* stage j's sum (its post program scales it back to the mean), then
	 * stage j + 1's reduction, M2 */
	ptx_emit(p, "mul.f32 %s, %s, %s;", R(c[1]), R(c[1]), R(ptx_imm_f32(p, (double)r->s->len)));
	col_finish(r, j, fa, c[1]);
	col_finish(r, j + 1, fa, c[2]);
	ptx_place(p, fin);
	col_results(r, j, j + 1, a);
}

/* ---- online softmax: a max and the sum of exps from it in one pass ----
 * softmax over the first dim is two stages, amax(x) and then
 * sum(exp(x - amax)), and each reads the block again (50304 x 4096: 0.58
 * ms against 0.44 for layernorm's one pass, one H100,
 * bench/results/2026-12-06-flagless-h100.md).  Such a pair is reduced in
 * one pass: each thread keeps per lane row the running max m and s, the
 * sum of exp(x - m), rescaled when m grows -- one exp a value, since
 * exp(-|x - m|) is the new term or the rescaling; threads, warps and the
 * CTAs of a group merge (m, s) pairs (M = max(ma, mb), s = sa exp(ma - M)
 * + sb exp(mb - M); s + sb where both are -inf), every CTA in the same
 * order.  The pair's first stage is then M and the second s (NaN for a
 * column all -inf, as the two passes' exp(-inf - -inf) makes it). */

#define LOG2E_F32 "0f3FB8AA3B" /* exp(x) = ex2(x log2 e), as ptx.c's OP_EXP */
#define NEG_INF_F32 "0fFF800000"

/* Stages j and j + 1 a max with no post program and the sum of exp(X -
 * stage j), X what stage j reduces.  Column mode without a cluster, a
 * group's combine of one level, and an input L2 does not hold whole: the
 * pass saved is a read of HBM there, where it is a read of L2 the running
 * rescale costs more than it saves (1024 x 8192: 0.0183 ms against 0.0161
 * in two passes; 8192^2 0.1703 against 0.1890, 50304 x 4096 0.4724
 * against 0.5848; one H100, from PyTorch).  PtxRowsSpec.online overrides
 * the size rule (tests). */
static bool
col_online(const Rows *r, int j)
{
	const PtxEwProg *v = &r->pre[j + 1], *x = &r->pre[j];
	const PtxIns *e, *d;
	if (!r->cols || r->ncl > 1 || (r->grp > 1 && group_two_level(r)) || j + 1 >= r->s->nstage)
		return false;
	if (r->s->online < 0 ||
	    (!r->s->online && col_block_bytes(r->s, r->rb) * ((r->s->rows + r->rb - 1) / r->rb) <= COL_L2_BUDGET))
		return false;
	if (r->s->stage[j].red != OP_AMAX || r->s->stage[j].post.nins || r->s->stage[j + 1].red != OP_SUM ||
	    v->nout != 1 || x->nout != 1)
		return false;
	e = &v->ins[v->out[0].val];
	if (e->op != OP_EXP || e->a < 0 || e->a >= v->nins)
		return false;
	d = &v->ins[e->a];
	return d->op == OP_SUB && d->b >= 0 && d->b < v->nins && v->ins[d->b].op == PTX_OP_STAGE && v->ins[d->b].a == j &&
	       ins_same(v, d->a, x, x->out[0].val);
}

/* d = exp(a - b) */
static void
onl_exp_diff(Ptx *p, Reg d, Reg a, Reg b)
{
	ptx_emit(p, "sub.f32 %s, %s, %s;", R(d), R(a), R(b));
	ptx_emit(p, "mul.f32 %s, %s, " LOG2E_F32 ";", R(d), R(d));
	ptx_emit(p, "ex2.approx.ftz.f32 %s, %s;", R(d), R(d));
}

/* (m, s) merged with (mb, sb) into (m, s).  Both maxima -inf: s + sb (0,
 * or a NaN that must reach the result), not exp(NaN). */
static void
onl_merge(Ptx *p, Reg m, Reg s, Reg mb, Reg sb)
{
	Reg M = ptx_reg(p, RC_F32), ea = ptx_reg(p, RC_F32), eb = ptx_reg(p, RC_F32), both = ptx_reg(p, RC_F32);
	Reg q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "max.f32 %s, %s, %s;", R(M), R(m), R(mb));
	ptx_emit(p, "add.f32 %s, %s, %s;", R(both), R(s), R(sb));
	onl_exp_diff(p, ea, m, M);
	onl_exp_diff(p, eb, mb, M);
	ptx_emit(p, "mul.f32 %s, %s, %s;", R(s), R(s), R(ea));
	ptx_emit(p, "fma.rn.f32 %s, %s, %s, %s;", R(s), R(sb), R(eb), R(s));
	ptx_emit(p, "setp.eq.f32 %s, %s, " NEG_INF_F32 ";", R(q), R(M));
	ptx_emit(p, "@%s mov.f32 %s, %s;", R(q), R(s), R(both));
	ptx_emit(p, "mov.f32 %s, %s;", R(m), R(M));
}

typedef struct SliceOnl {
	const PtxEwProg *g;
	Reg *m, *s, *bad;
} SliceOnl;

/* An online step per lane row: t = max(m, X), e = exp(min(m, X) - t);
 * s = X > m ? s e + 1 : s + e; m = t.  Ten instructions an element and a
 * move (was twelve and two), the pass's whole arithmetic: the edge cases
 * cost one each --
 *  - both -inf: min - t is NaN, and max.f32 with -inf makes e 0 (so s is
 *    kept) where a compare and a guarded move did;
 *  - a NaN or +inf X must make s NaN, as the two passes' sum of exp(X -
 *    amax) is (max.f32 passes a NaN over; inf - inf is one), so the
 *    column's outputs are NaN as PyTorch's are: one unordered compare
 *    (NaN, or X >= +inf) or'd into the lane's flag, which makes s NaN
 *    once, after the slices (rows_col_online). */
static void
onl_step(Rows *r, Reg c, int u, void *arg)
{
	const SliceOnl *a = arg;
	Ptx *p = r->p;
	Reg X[8];
	(void)u;
	mom_values(r, a->g, c, X);
	for (int j = 0; j < r->cv; j++) {
		Reg t = ptx_reg(p, RC_F32), e = ptx_reg(p, RC_F32), gt = ptx_reg(p, RC_PRED);
		ptx_emit(p, "max.f32 %s, %s, %s;", R(t), R(a->m[j]), R(X[j]));
		ptx_emit(p, "min.f32 %s, %s, %s;", R(e), R(a->m[j]), R(X[j]));
		ptx_emit(p, "sub.f32 %s, %s, %s;", R(e), R(e), R(t));
		ptx_emit(p, "max.f32 %s, %s, " NEG_INF_F32 ";", R(e), R(e));
		ptx_emit(p, "mul.f32 %s, %s, " LOG2E_F32 ";", R(e), R(e));
		ptx_emit(p, "ex2.approx.ftz.f32 %s, %s;", R(e), R(e));
		ptx_emit(p, "setp.gt.f32 %s, %s, %s;", R(gt), R(X[j]), R(a->m[j]));
		ptx_emit(p, "@%s fma.rn.f32 %s, %s, %s, 0f3F800000;", R(gt), R(a->s[j]), R(a->s[j]), R(e));
		ptx_emit(p, "@!%s add.f32 %s, %s, %s;", R(gt), R(a->s[j]), R(a->s[j]), R(e));
		ptx_emit(p, "mov.f32 %s, %s;", R(a->m[j]), R(t));
		ptx_emit(p, "setp.geu.or.f32 %s, %s, 0f7F800000, %s;", R(a->bad[j]), R(X[j]), R(a->bad[j]));
	}
}

static void
onl_group_merge(Ptx *p, Reg *acc, const Reg *b)
{
	onl_merge(p, acc[0], acc[1], b[0], b[1]);
}

/* (max, sum of exps from it) */
static const PairKind onl_pair = {2, {0xff800000u, 0}, NULL, NULL, onl_group_merge};

/* Stages j (a max) and j + 1 (the sum of exps from it) in one pass. */
static void
rows_col_online(Rows *r, int j)
{
	Ptx *p = r->p;
	Reg mx[8], sm[8], bad[8], v[3][8], c[3], q = ptx_reg(p, RC_PRED), ninf = ptx_reg(p, RC_PRED), a = ptx_reg(p, RC_B32);
	Reg fa = ptx_reg(p, RC_B32);
	int fin, skip = ptx_label(p);
	SliceOnl so = {&r->pre[j], mx, sm, bad};

	for (int i = 0; i < r->cv; i++) {
		mx[i] = ptx_reg(p, RC_F32), sm[i] = ptx_reg(p, RC_F32), bad[i] = ptx_reg(p, RC_PRED);
		ptx_emit(p, "mov.f32 %s, " NEG_INF_F32 ";", R(mx[i]));
		ptx_emit(p, "mov.f32 %s, 0f00000000;", R(sm[i]));
		ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(bad[i]), R(p->tid), R(p->tid)); /* false */
	}
	ptx_emit(p, "@!%s bra $L%d;", R(r->active), skip);
	col_walk(r, onl_step, &so);
	ptx_place(p, skip);
	for (int i = 0; i < r->cv; i++) /* a NaN or +inf the slice met (onl_step) */
		ptx_emit(p, "@%s mov.f32 %s, 0f7FFFFFFF;", R(bad[i]), R(sm[i]));
	/* the warp's slices of the same rows: lanes LC apart */
	for (int d = 16; d >= r->lc; d /= 2)
		for (int i = 0; i < r->cv; i++) {
			Reg mb = ptx_reg(p, RC_F32), sb = ptx_reg(p, RC_F32);
			ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(mb), R(mx[i]), d);
			ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(sb), R(sm[i]), d);
			onl_merge(p, mx[i], sm[i], mb, sb);
		}
	for (int i = 0; i < r->cv; i++)
		v[0][i] = mx[i], v[1][i] = sm[i];
	fin = col_pair_meet(r, j, &onl_pair, v, c, q, a, fa);
	/* an all -inf column: the two passes' sum is of exp(-inf - -inf), NaN */
	ptx_emit(p, "setp.eq.f32 %s, %s, " NEG_INF_F32 ";", R(ninf), R(c[0]));
	ptx_emit(p, "@%s mov.f32 %s, 0f7FFFFFFF;", R(ninf), R(c[1]));
	col_finish(r, j, fa, c[0]);
	col_finish(r, j + 1, fa, c[1]);
	ptx_place(p, fin);
	col_results(r, j, j + 1, a);
}

/* Stage k's first half: the thread's slices reduced, the warps' partials
 * met in shared memory, and threads < rb holding their row's partial of
 * the CTA, returned (a: their column of the partials, col_partial); the
 * others branch to *fin, which the caller places. */
static Reg
col_stage_reduce(Rows *r, int k, int ri, Reg a, Reg q, int *fin)
{
	Ptx *p = r->p;
	int skip = ptx_label(p), f = ptx_label(p);
	Reg acc[COL_UNROLL][8];

	for (int u = 0; u < COL_UNROLL; u++)
		for (int j = 0; j < r->cv; j++) {
			acc[u][j] = ptx_reg(p, RC_F32);
			ptx_emit(p, "mov.f32 %s, 0f%08X;", R(acc[u][j]), reds[ri].identity);
		}
	ptx_emit(p, "@!%s bra $L%d;", R(r->active), skip);
	col_slice(r, &r->pre[k], ri, acc);
	ptx_place(p, skip);
	for (int j = 0; j < r->cv; j++) {
		for (int u = 1; u < COL_UNROLL; u++)
			ptx_expand(p, reds[ri].combine, acc[0][j], acc[0][j], acc[u][j]);
		/* the warp's slices of the same rows: lanes LC apart */
		for (int d = 16; d >= r->lc; d /= 2) {
			Reg o = ptx_reg(p, RC_F32);
			ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(o), R(acc[0][j]), d);
			ptx_expand(p, reds[ri].combine, acc[0][j], acc[0][j], o);
		}
	}
	/* lanes < LC write partial[warp][rin + j]; then threads < rb finish */
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(r->lane), r->lc);
	ptx_emit(p, "@%s bra $L%d;", R(q), f);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a), R(r->warp), r->rb, R(r->rin));
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(a), R(r->smem));
	for (int j = 0; j < r->cv; j++)
		ptx_emit(p, "st.shared.f32 [%s+%d], %s;", R(a), 4 * j, R(acc[0][j]));
	ptx_place(p, f);
	ptx_emit(p, "bar.sync 0;");
	*fin = ptx_label(p);
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(p->tid), r->rb);
	ptx_emit(p, "@%s bra $L%d;", R(q), *fin);
	return col_partial(r, k, ri, a);
}

static void
rows_col_stage(Rows *r, int k)
{
	Ptx *p = r->p;
	int ri = red_index(r->s->stage[k].red), fin;
	Reg a = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
	Reg racc = col_stage_reduce(r, k, ri, a, q, &fin);

	if (r->ncl > 1) { /* the cluster's CTAs meet: every thread at the barrier */
		ptx_place(p, fin);
		ptx_cluster_sync(p);
		fin = ptx_label(p);
		ptx_emit(p, "@%s bra $L%d;", R(q), fin);
		col_xchg(r, k, ri, a, racc);
	} else if (r->grp > 1) { /* the group's CTAs meet in the workspace */
		col_group_put(r, k, racc);
		ptx_place(p, fin);
		col_group_meet(r, k, ri);
		fin = ptx_label(p);
		ptx_emit(p, "@%s bra $L%d;", R(q), fin);
		racc = ptx_reg(p, RC_F32);
		ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(racc), R(a), col_xs(r, k));
	}
	col_finish(r, k, a, racc);
	ptx_place(p, fin);
	col_results(r, k, k, a);
}

/* Column mode's map: this thread's V rows, its slice of the reduced dim. */
static void
rows_col_map(Rows *r)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	Reg col = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), in[PTX_MAX_TENSORS][8], val[8][PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];
	int loop = ptx_label(p), done = ptx_label(p);

	ptx_emit(p, "@!%s bra $L%d;", R(r->active), done);
	ptx_emit(p, "mov.u32 %s, %s;", R(col), R(r->slice));
	if (r->ccache) {
		r->cn = ptx_reg(p, RC_B32);
		ptx_emit(p, "mov.u32 %s, 0;", R(r->cn));
	}
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(col), (long long)s->len);
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	col_inputs(r, &s->map, col, in);
	for (int j = 0; j < r->cv; j++) {
		PtxEnv env = env_for(r, in, j);
		ptx_prog_emit(p, &s->map, &env, val[j], vc);
	}
	for (int o = 0; o < s->map.nout; o++) {
		const PtxOut *po = &s->map.out[o];
		const PtxTensor *t = &s->out[po->tensor];
		int sv = ptx_store_src(&s->map, po, t->dt, vc);
		Reg a = col_addr(p, t, r->outrow[po->tensor], col), w[8];
		for (int j = 0; j < r->cv; j++)
			w[j] = ptx_convert(p, val[j][sv], vc[sv], ptx_dtypes[t->dt].vc);
		ptx_store_vec(p, t->dt, a, r->cv, w);
	}
	col_advance(r, col, col, 1);
	if (r->ccache)
		ptx_emit(p, "add.u32 %s, %s, 1;", R(r->cn), R(r->cn));
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
}

/* Which stage pairs are reduced in one pass (r->mom, r->onl), and the
 * planes of partials that takes (1; 3 with moments, 2 online). */
static int
col_planes(Rows *r)
{
	int planes = 1;
	for (int k = 0; k + 1 < r->s->nstage; k++)
		if ((r->mom[k] = col_moments(r, k)))
			planes = 3, k++;
		else if ((r->onl[k] = col_online(r, k)))
			planes = planes > 2 ? planes : 2, k++;
	return planes;
}

/* ---- Column mode's block in shared memory ----
 * Every pass over a block (each stage, the map) visits the same reduced
 * indices in the same order in each thread: c = slice + n nsl, n = 0, 1,
 * ...  So each thread can keep the streamed inputs' vectors of its visits
 * in slots of its own in shared memory (input i's slot of visit n at
 * coff[i] + (n T + tid) cvb[i], T threads: a warp's 16-byte slots
 * contiguous), filled by cp.async and read back by the thread alone -- no
 * barrier.  ccache 1: filled at the entry's start, each pass reads them
 * there (one HBM read of the block, not one a pass); 2: two buffers, the
 * next entry's filled while this one is reduced, met and stored, so the
 * reads of HBM go on through the group's barriers (only where no entry
 * waits on a flag: the next entry's inputs may not be written yet). */

/* Dynamic shared memory a CTA may have (sm_90), and what leaves room for
 * two CTAs an SM (228 KiB an SM, 1 KiB of it reserved per CTA): column
 * mode's 512 threads of 64 registers fit two, and on one H100 the block in
 * one CTA's shared memory of two an SM beat one CTA with two buffers
 * (rmsnorm over dim 0 at 8192 x 8192: 0.1192 ms against 0.1519;
 * bench/results/2026-12-06-ccache-h100.md). */
enum { COL_CACHE_SMEM = 227 * 1024, COL_CACHE_TWO = 113 * 1024 };

/* Passes over the block that read input i: each stage, a pair reduced
 * in one pass (col_moments, col_online) once, the map. */
static int
col_passes(const Rows *r, int i)
{
	int n = ptx_prog_uses(&r->s->map, OP_PARAM, i);
	for (int k = 0; k < r->s->nstage; k++) {
		n += ptx_prog_uses(&r->pre[k], OP_PARAM, i) ||
		     ((r->mom[k] || r->onl[k]) && k + 1 < r->s->nstage && ptx_prog_uses(&r->pre[k + 1], OP_PARAM, i));
		if (r->mom[k] || r->onl[k])
			k++;
	}
	return n;
}

/* Input i can be held: it varies along rows and the reduced dim, and a
 * lane's V rows are one copy of 4, 8 or 16 bytes; read by at least
 * `passes` passes. */
static bool
col_cacheable(const Rows *r, int i, int passes)
{
	const PtxTensor *t = &r->s->in[i];
	int size = ptx_dtypes[t->dt].size, b = r->cv * size;
	return col_passes(r, i) >= passes && t->stride[0] && t->stride[1] && (r->cv == 1 || t->stride[0] == 1) &&
	       (size == 2 || size == 4) && (b == 4 || b == 8 || b == 16);
}

/* Which inputs are held, where, and in how many buffers (r->ccache 0:
 * none, where nothing qualifies or a CTA's share does not fit beside the
 * partials at `at` bytes).  Where the spec leaves it to rows.c, the rule:
 * one buffer, where it leaves two CTAs an SM and two passes or more read
 * the input.  On one H100 (gpu-kernels perf-cols,
 * bench/results/2026-12-06-ccache-h100.md) at 8192 x 8192 over dim 0 the
 * passes after the first no longer reread L2: rmsnorm 0.1455 -> 0.1192
 * ms, layernorm 0.1709 -> 0.1425 (blocks of 128 over 32 CTAs), softmax
 * 0.1664 -> 0.1599; two buffers (the next entry's copied meanwhile) leave
 * one CTA an SM and were slower (0.1519, 0.1683, 0.1741). */
static void
col_cache_plan(Rows *r, int at)
{
	const PtxRowsSpec *s = r->s;
	int want = s->col_cache ? s->col_cache : 1, nbuf;
	/* a cluster's kernel has static shared memory too (ptx_kernel_cluster's word) */
	int budget = (s->col_cache ? COL_CACHE_SMEM : COL_CACHE_TWO) - (r->ncl > 1 ? 1024 : 0);
	int64_t slices = (int64_t)r->nsl * r->grp, bytes = 0;

	r->ccache = 0;
	if (want <= 0)
		return;
	if (want == 2 && !s->flagless)
		want = 1;
	r->ccap = (int)((s->len + slices - 1) / slices);
	for (int i = 0; i < s->nin; i++)
		if ((r->cin[i] = col_cacheable(r, i, s->col_cache ? 1 : 2))) { /* the rule's: where it saves a reread */
			r->cvb[i] = r->cv * ptx_dtypes[s->in[i].dt].size;
			r->coff[i] = (int)bytes;
			bytes += (int64_t)r->ccap * 32 * COL_WARPS * r->cvb[i];
		}
	r->cat = (at + 15) / 16 * 16;
	for (nbuf = want; nbuf >= 1; nbuf--)
		if (bytes && r->cat + nbuf * bytes <= budget)
			break;
	if (nbuf < 1)
		return;
	r->ccache = nbuf;
	r->cbytes = (int)bytes;
	r->cguard = r->grp > 1;
}

/* Whether a group's entries are pipelined (PtxRowsSpec.col_pipe): a CTA
 * waits for the group's meeting of entry e only after it has reduced
 * entry e + 1 and arrived at that one's, so the meeting's round trips
 * (5-6 us an entry, bench/results/2026-12-07-ring-h100.md) overlap the
 * next block's reads instead of stopping the group's.  Where one meeting
 * finishes an entry: one stage, a one-level combine, no flags (which
 * wait and raise per entry), no cluster. */
static bool
col_pipe_ok(const Rows *r)
{
	const PtxRowsSpec *s = r->s;
	return s->col_pipe > 0 && r->grp > 1 && r->ncl == 1 && s->flagless && s->nstage == 1 && !group_two_level(r);
}

/* Column mode's shape (after rows_progs): the block, the lanes across
 * it, its split, the pairs reduced in one pass, and what shared memory
 * holds -- what ptx_emit_rows emits and ptx_rows_col_held asks about. */
static void
col_setup(Rows *r)
{
	const PtxRowsSpec *s = r->s;
	int rb = r->rb = s->rows_per_block ? s->rows_per_block : 32;
	r->cv = ptx_rows_col_vec(s, rb);
	r->lc = rb / r->cv;
	r->nsl = COL_WARPS * (32 / r->lc);
	col_split(s, rb, r->nsl, &r->ncl, &r->grp);
	r->nsl *= r->ncl; /* a group's size is the launch's: r->nslr */
	r->planes = col_planes(r);
	if ((r->pipe = col_pipe_ok(r)))
		r->ccache = 0; /* the next entry is reduced before this one is stored: the block stays in L2 */
	else
		col_cache_plan(r, col_smem(rb, s->nstage, r->ncl > r->grp ? r->ncl : r->grp, r->planes));
}

/* The thread's slot of held input i at visit 0 in the buffer at shared
 * address buf (visit n's is n T cvb[i] on). */
static Reg
col_slot0(Rows *r, int i, Reg buf)
{
	Ptx *p = r->p;
	Reg a = ptx_reg(p, RC_B32);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a), R(p->tid), r->cvb[i], R(buf));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(a), r->coff[i]);
	return a;
}

/* cp.async of the thread's visits of the held inputs, rows at rowp[],
 * into the buffer at shared address buf; then one commit (every thread,
 * so each waits on its own).  act: the lane has a row. */
static void
col_fill(Rows *r, const Reg *rowp, Reg act, Reg buf)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	Reg slot[PTX_MAX_TENSORS], col = ptx_reg(p, RC_B32), n = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
	int loop = ptx_label(p), done = ptx_label(p);

	ptx_emit(p, "@!%s bra $L%d;", R(act), done);
	for (int i = 0; i < s->nin; i++)
		if (r->cin[i])
			slot[i] = col_slot0(r, i, buf);
	ptx_emit(p, "mov.u32 %s, %s;", R(col), R(r->slice));
	ptx_emit(p, "mov.u32 %s, 0;", R(n));
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(col), (long long)s->len);
	ptx_emit(p, "setp.ge.or.u32 %s, %s, %d, %s;", R(q), R(n), r->ccap, R(q));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	for (int i = 0; i < s->nin; i++)
		if (r->cin[i]) {
			Reg src = col_addr(p, &s->in[i], rowp[i], col);
			if (r->cvb[i] == 16)
				ptx_emit(p, "cp.async.cg.shared.global [%s], [%s], 16;", R(slot[i]), R(src));
			else
				ptx_emit(p, "cp.async.ca.shared.global [%s], [%s], %d;", R(slot[i]), R(src), r->cvb[i]);
			ptx_emit(p, "add.u32 %s, %s, %d;", R(slot[i]), R(slot[i]), 32 * COL_WARPS * r->cvb[i]);
		}
	col_advance(r, col, col, 1);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(n), R(n));
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
	ptx_emit(p, "cp.async.commit_group;");
}

/* At an entry's start (after row_pointers): its block in shared memory
 * -- copied now (ccache 1, or the CTA's first entry), or by the last
 * entry's col_fill -- waited for, the next entry's copy begun (ccache
 * 2), and the thread's slots of this entry's buffer in r->cslot. */
static void
col_cache_entry(Rows *r)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	Reg cur = ptx_reg(p, RC_B32);

	if (r->ccache == 1) {
		ptx_emit(p, "add.u32 %s, %s, %d;", R(cur), R(r->smem), r->cat);
		col_fill(r, r->inrow, r->active, cur);
		ptx_emit(p, "cp.async.wait_group 0;");
	} else {
		Reg par = ptx_reg(p, RC_B32), nxt = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), nx = ptx_reg(p, RC_B32);
		Reg nrow = ptx_reg(p, RC_B32), nact = ptx_reg(p, RC_PRED), nrp[PTX_MAX_TENSORS];
		int skip = ptx_label(p), none = ptx_label(p);
		ptx_emit(p, "and.b32 %s, %s, 1;", R(par), R(r->cseq));
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(cur), R(par), r->cbytes, R(r->smem));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(cur), R(cur), r->cat);
		ptx_emit(p, "xor.b32 %s, %s, 1;", R(par), R(par));
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(nxt), R(par), r->cbytes, R(r->smem));
		ptx_emit(p, "add.u32 %s, %s, %d;", R(nxt), R(nxt), r->cat);
		ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(r->cseq));
		ptx_emit(p, "@%s bra $L%d;", R(q), skip); /* the CTA's first entry: nothing copied it yet */
		col_fill(r, r->inrow, r->active, cur);
		ptx_place(p, skip);
		ptx_emit(p, "cp.async.wait_group 0;");
		ptx_emit(p, "add.u32 %s, %s, 1;", R(r->cseq), R(r->cseq));
		ptx_peek_next(p, q, nx);
		ptx_emit(p, "@!%s bra $L%d;", R(q), none);
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(nrow), R(nx), r->rb, R(r->rin));
		ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(nact), R(nrow), (long long)s->rows);
		for (int i = 0; i < s->nin; i++)
			if (r->cin[i])
				nrp[i] = row_ptr(r, i, nrow);
		col_fill(r, nrp, nact, nxt);
		ptx_place(p, none);
	}
	for (int i = 0; i < s->nin; i++)
		if (r->cin[i])
			r->cslot[i] = col_slot0(r, i, cur);
}

/* The rows of the entry at p->x: the thread's first, whether it has
 * them, the tensors' row pointers. */
static void
col_entry_rows(Rows *r)
{
	Ptx *p = r->p;
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(r->row), R(p->x), r->rb, R(r->rin));
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(r->active), R(r->row), (long long)r->s->rows);
	ptx_emit(p, "@!%s mov.u32 %s, 0;", R(r->active), R(r->row)); /* keep idle lanes' addresses in range */
	row_pointers(r);
}

/* ---- pipelined groups (col_pipe_ok) ----
 * Each loop trip reduces its entry e + 1, puts the CTA's partials and
 * arrives at the group's meeting, and only then waits for the meeting of
 * the entry before, e, combines it and stores e's rows (rereading them
 * from L2); the CTA's last entry is finished after the loop
 * (col_pipe_drain).  A CTA may so arrive at e + 1 before every CTA of its
 * group has arrived at e: arrivals of even and odd entries go to two
 * counters (word 0 and word 2 of the group's, ptx.c), so none arrives at
 * e + 2 -- on e's counter -- before all have arrived at e.  It may put
 * entry e + 2's partials while a slower CTA still reads e - 1's: four sets
 * (group_nsets).  Before the loop: no entry before the first. */
static void
col_pipe_init(Rows *r)
{
	Ptx *p = r->p;
	r->havep = ptx_reg(p, RC_PRED);
	r->xprev = ptx_reg(p, RC_B32);
	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(r->havep), R(p->tid), R(p->tid)); /* false */
	ptx_emit(p, "mov.u32 %s, 0;", R(r->xprev));
}

/* The counter of the CTA's n-th entry from 0 (its parity's). */
static Reg
col_pipe_counter(Rows *r, Reg n)
{
	Ptx *p = r->p;
	Reg t = ptx_reg(p, RC_B32), c = ptx_reg(p, RC_B64);
	ptx_emit(p, "and.b32 %s, %s, 1;", R(t), R(n));
	ptx_mad_wide(p, c, t, PTX_GROUP_ODD * 4, p->gcnt);
	return c;
}

/* The entry at p->x, the CTA's gent-th: reduced, the CTA's partials put
 * into its set, and the CTA's arrival. */
static void
col_pipe_reduce(Rows *r)
{
	Ptx *p = r->p;
	int ri = red_index(r->s->stage[0].red), fin;
	Reg a = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
	Reg racc = col_stage_reduce(r, 0, ri, a, q, &fin);

	col_group_put(r, 0, racc);
	ptx_place(p, fin);
	ptx_emit(p, "bar.sync 0;"); /* every thread's partial is written before thread 0 releases them */
	ptx_group_arrive(p, col_pipe_counter(r, r->gent));
}

/* The entry at xprev, the CTA's n-th counting from 1: the group's
 * arrivals at it waited for ((n + 1) / 2 g on its parity's counter), its
 * partials combined, the post program, the map. */
static void
col_pipe_finish(Rows *r, Reg n)
{
	Ptx *p = r->p;
	int ri = red_index(r->s->stage[0].red), fin = ptx_label(p);
	Reg e = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), a = ptx_reg(p, RC_B32);
	Reg racc = ptx_reg(p, RC_F32), par = ptx_reg(p, RC_B32);

	ptx_emit(p, "mov.u32 %s, %s;", R(p->x), R(r->xprev));
	col_entry_rows(r);
	ptx_emit(p, "sub.u32 %s, %s, 1;", R(e), R(n));
	ptx_emit(p, "and.b32 %s, %s, %d;", R(par), R(e), group_nsets(r) - 1);
	r->gcur = ptx_reg(p, RC_B64);
	ptx_mad_wide(p, r->gcur, par, group_set_bytes(r), r->gpart);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(t), R(n));
	ptx_emit(p, "shr.u32 %s, %s, 1;", R(t), R(t));
	ptx_emit(p, "mul.lo.u32 %s, %s, %s;", R(t), R(t), R(p->gsize));
	col_group_await(r, col_pipe_counter(r, e), t, false);
	col_group_rows(r, 0, ri);
	ptx_emit(p, "setp.ge.u32 %s, %s, %d;", R(q), R(p->tid), r->rb);
	ptx_emit(p, "@%s bra $L%d;", R(q), fin);
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(a), R(p->tid), R(r->smem));
	ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(racc), R(a), col_xs(r, 0));
	col_finish(r, 0, a, racc);
	ptx_place(p, fin);
	col_results(r, 0, 0, a);
	if (r->s->map.nout)
		rows_col_map(r);
}

/* A loop trip: this entry reduced and arrived at, then the one before
 * finished; this one is the one before the next. */
static void
col_pipe_entry(Rows *r)
{
	Ptx *p = r->p;
	int skip = ptx_label(p);
	Reg xcur = ptx_reg(p, RC_B32);

	col_group_entry(r);
	col_pipe_reduce(r);
	ptx_emit(p, "@!%s bra $L%d;", R(r->havep), skip);
	ptx_emit(p, "mov.u32 %s, %s;", R(xcur), R(p->x));
	col_pipe_finish(r, r->gent);
	ptx_emit(p, "mov.u32 %s, %s;", R(p->x), R(xcur));
	ptx_place(p, skip);
	ptx_emit(p, "mov.u32 %s, %s;", R(r->xprev), R(p->x));
	ptx_emit(p, "setp.eq.u32 %s, %s, %s;", R(r->havep), R(p->tid), R(p->tid)); /* true */
	ptx_emit(p, "add.u32 %s, %s, 1;", R(r->gent), R(r->gent));
}

/* After the loop (ptx_loop_end_drain): the CTA's last entry, if any. */
static void
col_pipe_drain(void *arg)
{
	Rows *r = arg;
	Ptx *p = r->p;
	int none = ptx_label(p);
	ptx_emit(p, "@!%s bra $L%d;", R(r->havep), none);
	col_pipe_finish(r, r->gent);
	ptx_place(p, none);
}

/* Column mode: one pass per block; lane l on rows (l % LC) V .. + V - 1. */
static void
rows_col_body(Rows *r)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	Reg t = ptx_reg(p, RC_B32);
	r->smem = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(r->smem));
	r->lane = ptx_reg(p, RC_B32);
	r->warp = ptx_reg(p, RC_B32);
	r->row = ptx_reg(p, RC_B32);
	r->active = ptx_reg(p, RC_PRED);
	r->rin = ptx_reg(p, RC_B32);
	r->slice = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(r->lane), R(p->tid));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(r->warp), R(p->tid));
	ptx_emit(p, "and.b32 %s, %s, %d;", R(r->rin), R(r->lane), r->lc - 1);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(r->rin), R(r->rin), r->cv);
	ptx_emit(p, "shr.u32 %s, %s, %d;", R(t), R(r->lane), ptx_ilog2(r->lc));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(r->slice), R(r->warp), 32 / r->lc, R(t));
	if (r->ncl > 1) /* the CTA's slices of the cluster's */
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(r->slice), R(p->crank), r->nsl / r->ncl, R(r->slice));
	if (r->grp > 1) /* ... of the group's */
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(r->slice), R(p->crank), r->nsl, R(r->slice));
	col_entry_rows(r);
	if (r->pipe) {
		col_pipe_entry(r);
		return;
	}
	if (r->ccache)
		col_cache_entry(r);
	if (r->grp > 1)
		col_group_entry(r);
	r->gbar = 0;
	for (int k = 0; k < s->nstage; k++)
		if (r->mom[k])
			rows_col_moments(r, k++);
		else if (r->onl[k])
			rows_col_online(r, k++);
		else
			rows_col_stage(r, k);
	if (s->map.nout)
		rows_col_map(r);
	if (r->grp > 1)
		col_group_done(r);
}

static void
rows_body(Rows *r)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	int rb = s->rows_per_block ? s->rows_per_block : ROW_DEFAULT_BLOCK, loop = ptx_label(p),
	    done = ptx_label(p);
	Reg end = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED), t = ptx_reg(p, RC_B32);

	r->lane = ptx_reg(p, RC_B32);
	r->row = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(r->lane), R(p->tid));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(t), R(p->tid));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(r->row), R(p->x), rb, R(t));
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(end), R(p->x), rb);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(end), R(end), rb);
	ptx_emit(p, "min.u32 %s, %s, %lld;", R(end), R(end), (long long)s->rows);
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(r->row), R(end));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	row_pointers(r);
	for (int k = 0; k < s->nstage; k++)
		rows_stage(r, k);
	if (s->map.nout)
		rows_map(r);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(r->row), R(r->row), ROW_WARPS);
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
}

/* ---- CTA mode ----
 * A row of CTA_MIN_LEN elements or more gets a whole CTA of T threads:
 * thread t owns vectors t, t + T, ... (U of them) of the row, loads the
 * streamed inputs (those that change along rows and columns) once into
 * registers, and every stage and the map read them there, so the row
 * comes from HBM once however many stages read it (a warp per row reread
 * it: rows of 8 warps x 8 CTAs x 132 SMs outgrow L2 long before a
 * vocabulary-wide row).  A stage reduces in registers, across the warp
 * by shuffles and across warps through shared memory: a slot per warp,
 * stage and parity of the CTA's row count, since every row has a barrier
 * and so no warp is two rows ahead of another (cta_stage). */

static bool
streamed(const PtxTensor *t)
{
	return t->stride[0] != 0 && t->stride[1] == 1;
}

/* Vectors for rows whose length breaks their alignment (an odd
 * vocabulary such as 50257), else 1.  Where every streamed input and
 * every output of the map is contiguous with one row pitch and element
 * size, their row pointers are misaligned alike (bases are 16-byte
 * aligned: libsyncrt checks): a row's vectors start after a head of h <
 * V elements, h read from in0's row address, and end before a tail of
 * fewer than V; head and tail go element by element, a thread each.
 * Inputs shared by every row (a norm's weight) are not shifted with the
 * row: their vectors are loaded element by element, from L1. */
static int
peel_vec(const PtxRowsSpec *s)
{
	int64_t pitch = s->in[0].stride[0];
	int size = ptx_dtypes[s->in[0].dt].size;
	if (!streamed(&s->in[0]) || s->map.nout < 1)
		return 1;
	for (int i = 0; i < s->nin; i++) {
		const PtxTensor *t = &s->in[i];
		if (t->stride[1] > 1 || (streamed(t) && (t->stride[0] != pitch || ptx_dtypes[t->dt].size != size)))
			return 1;
	}
	for (int o = 0; o < s->map.nout; o++) {
		const PtxTensor *t = &s->out[s->map.out[o].tensor];
		if (!streamed(t) || t->stride[0] != pitch || ptx_dtypes[t->dt].size != size)
			return 1;
	}
	return 16 / size > 8 ? 8 : 16 / size;
}

/* Whether input i is a 16-bit vector every row shares (a norm's weight),
 * which a peeled row reads at its shifted columns. */
static bool
shifted16(const Rows *r, int i)
{
	const PtxTensor *t = &r->s->in[i];
	return r->peel && r->vec == 8 && t->stride[0] == 0 && t->stride[1] == 1 && ptx_dtypes[t->dt].size == 2 &&
	       ptx_dtypes[t->dt].load;
}

/* Threads and vectors per thread of CTA mode for this spec, or false;
 * *cached when the streamed inputs fit in registers.  Rows too long for
 * that (or of odd length, one element a vector) take 1024 threads and
 * reread the row from L2 on each pass: a few rows in flight per SM keep
 * it there. */
static bool
cta_shape(const PtxRowsSpec *s, int vec, int *T, int *U, bool *cached)
{
	int64_t nv = (s->len + vec - 1) / vec;
	int words = 0;
	if (s->len < CTA_MIN_LEN)
		return false;
	for (int i = 0; i < s->nin; i++)
		if (streamed(&s->in[i]))
			words += (vec * ptx_dtypes[s->in[i].dt].size + 3) / 4;
	*cached = true;
	for (*T = 128; *T < 1024 && !s->cta_threads; *T *= 2) {
		*U = (int)((nv + *T - 1) / *T);
		if (*U <= 4)
			return true;
	}
	if (s->cta_threads)
		*T = s->cta_threads;
	*U = (int)((nv + *T - 1) / *T);
	*cached = *U <= CTA_MAX_U && *U * words <= CTA_MAX_WORDS;
	return true;
}

/* Whether a peeled, cached row also holds its head and tail elements'
 * streamed inputs in registers, loaded with its vectors: each stage and
 * the map otherwise load them one dependent load after another (a 50257
 * wide softmax lost 16% to them).  Where the CTA has 1024 threads, 64
 * registers a thread, the vectors' words, these and the eight words each
 * weight at the row's columns takes (load_shifted16) stay within
 * PEEL_REG_WORDS, or ptxas spills: a layernorm's two weights at 1024 x
 * 50257 do not fit (tests/ptx/rows_cta_peel_weight.test). */
enum { PEEL_REG_WORDS = 40 };

static bool
peel_cache(const PtxRowsSpec *s, int T, int U, int vec)
{
	int words = 0;
	for (int i = 0; i < s->nin; i++) {
		int size = ptx_dtypes[s->in[i].dt].size;
		if (streamed(&s->in[i]))
			words += U * ((vec * size + 3) / 4) + (size == 2 ? 1 : 2);
		else if (s->in[i].stride[1] == 1 && size == 2)
			words += 8;
	}
	return T < 1024 || words <= PEEL_REG_WORDS;
}

/* Peeled rows need every streamed row pointer misaligned like in0's,
 * which whole tensors at 16-byte aligned bases are; a row where one is
 * not (a view at an odd offset) goes element by element (r->mis, the
 * same for the whole CTA).  lo: in0's row address, low 32 bits. */
static void
peel_guard(Rows *r, Reg lo)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	r->mis = ptx_reg(p, RC_PRED);
	ptx_emit(p, "setp.ne.u32 %s, %s, %s;", R(r->mis), R(p->tid), R(p->tid)); /* false */
	for (int i = 1; i < s->nin + s->nout; i++) {
		const PtxTensor *t = i < s->nin ? &s->in[i] : &s->out[i - s->nin];
		Reg rp = i < s->nin ? r->inrow[i] : r->outrow[i - s->nin], x = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);
		if (!streamed(t))
			continue;
		ptx_emit(p, "cvt.u32.u64 %s, %s;", R(x), R(rp));
		ptx_emit(p, "xor.b32 %s, %s, %s;", R(x), R(x), R(lo));
		ptx_emit(p, "and.b32 %s, %s, 15;", R(x), R(x));
		ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(x));
		ptx_emit(p, "or.pred %s, %s, %s;", R(r->mis), R(r->mis), R(q));
	}
}

/* Peeled rows: this row's head h (elements before its first aligned
 * vector), added to base; the thread's head element (tid, if below h)
 * and tail element (after the last whole vector). */
static void
peel_head(Rows *r, Reg base)
{
	Ptx *p = r->p;
	int V = r->vec, sh = ptx_dtypes[r->s->in[0].dt].size == 4 ? 2 : 1;
	Reg h = ptx_reg(p, RC_B32), t0 = ptx_reg(p, RC_B32);
	ptx_emit(p, "cvt.u32.u64 %s, %s;", R(h), R(r->inrow[0]));
	peel_guard(r, h);
	ptx_emit(p, "shr.u32 %s, %s, %d;", R(h), R(h), sh);
	ptx_emit(p, "neg.s32 %s, %s;", R(h), R(h));
	ptx_emit(p, "and.b32 %s, %s, %d;", R(h), R(h), V - 1);
	ptx_emit(p, "add.u32 %s, %s, %s;", R(base), R(base), R(h));
	r->head = h;
	/* the tail starts at h + ((len - h) / V) V */
	ptx_emit(p, "mov.u32 %s, %lld;", R(t0), (long long)r->s->len);
	ptx_emit(p, "sub.u32 %s, %s, %s;", R(t0), R(t0), R(h));
	ptx_emit(p, "and.b32 %s, %s, 0x%08X;", R(t0), R(t0), ~(unsigned)(V - 1));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(t0), R(t0), R(h));
	for (int x = 0; x < 2; x++) {
		r->xcol[x] = ptx_reg(p, RC_B32);
		r->xin[x] = ptx_reg(p, RC_PRED);
	}
	ptx_emit(p, "mov.u32 %s, %s;", R(r->xcol[0]), R(p->tid));
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(r->xin[0]), R(p->tid), R(h));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(r->xcol[1]), R(t0), R(p->tid));
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(r->xin[1]), R(r->xcol[1]), (long long)r->s->len);
}

/* The thread's columns: vector u starts at (tid + u T) V (after the
 * head, peeled), and is in the row when it ends by len. */
static void
cta_columns(Rows *r)
{
	Ptx *p = r->p;
	Reg base = ptx_reg(p, RC_B32);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(base), R(p->tid), r->vec);
	if (r->peel)
		peel_head(r, base);
	r->col0 = base;
	for (int u = 0; u < r->U && r->cached; u++) {
		r->col[u] = ptx_reg(p, RC_B32);
		r->inpos[u] = ptx_reg(p, RC_PRED);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(r->col[u]), R(base), u * r->T * r->vec);
		ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(r->inpos[u]), R(r->col[u]),
		         (long long)(r->peel ? r->s->len - r->vec + 1 : r->s->len));
	}
}

static bool
used_anywhere(const Rows *r, int i)
{
	bool used = ptx_prog_uses(&r->s->map, OP_PARAM, i);
	for (int k = 0; k < r->s->nstage && !used; k++)
		used = ptx_prog_uses(&r->pre[k], OP_PARAM, i);
	return used;
}

/* Whether the streamed vectors bypass L1 (PtxRowsSpec.l1_stream): they
 * are read once.  Measured on an H100 (gpu-kernels perf-pf,
 * bench/results/2026-12-06-rowpf-h100.md): 1.5-4.7% faster at 8192 x 8192
 * (CTAs of 256 threads, six an SM), 3-4% slower on rows of 50k (one CTA
 * of 1024 an SM): so where CTAs share an SM. */
static bool
l1_stream(const Rows *r)
{
	return r->s->l1_stream > 0 || (r->s->l1_stream == 0 && r->T < 1024);
}

/* The streamed inputs of this row into registers. */
static void
cta_load(Rows *r)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	int none = ptx_label(p);
	if (r->peel) /* such a row is read element by element (cta_each) */
		ptx_emit(p, "@%s bra $L%d;", R(r->mis), none);
	for (int u = 0; u < r->U && r->cached; u++) {
		int skip = ptx_label(p);
		ptx_emit(p, "@!%s bra $L%d;", R(r->inpos[u]), skip);
		for (int i = 0; i < s->nin; i++) {
			r->word[i][u][0] = -1;
			if (!streamed(&s->in[i]) || !used_anywhere(r, i))
				continue;
			Reg a = col_addr(p, &s->in[i], r->inrow[i], r->col[u]);
			const char *space = l1_stream(r) ? "global.L1::no_allocate" : "global";
			if (i == 0 && r->pf) { /* the same bytes, in the buffer */
				Reg d = ptx_reg(p, RC_B64), sa = ptx_reg(p, RC_B32);
				ptx_emit(p, "sub.u64 %s, %s, %s;", R(d), R(a), R(r->pflo));
				ptx_emit(p, "cvt.u32.u64 %s, %s;", R(sa), R(d));
				ptx_emit(p, "add.u32 %s, %s, %s;", R(sa), R(sa), R(r->pfbuf));
				a = sa;
				space = "shared";
			}
			if (r->vec > 1)
				ptx_load_words_in(p, space, s->in[i].dt, a, r->vec, r->word[i][u]);
			else
				r->word[i][u][0] = ptx_load_val(p, s->in[i].dt, a, space);
		}
		ptx_place(p, skip);
	}
	/* peeled: the head and tail elements too, their loads in flight with
	 * the vectors' (one after another in each stage and the map, a
	 * dependent load each, they cost a 50257-wide softmax 16%) */
	for (int i = 0; i < s->nin && r->xcache; i++) {
		const PtxDType *d = &ptx_dtypes[s->in[i].dt];
		Reg v[2];
		r->xval[i][0] = r->xval[i][1] = -1;
		if (!streamed(&s->in[i]) || !used_anywhere(r, i))
			continue;
		for (int x = 0; x < 2; x++) {
			Reg a = col_addr(p, &s->in[i], r->inrow[i], r->xcol[x]);
			v[x] = ptx_reg(p, d->st);
			ptx_emit(p, "mov.%s %s, 0;", d->size == 2 ? "b16" : "b32", R(v[x]));
			ptx_emit(p, "@%s ld.global.%s %s, [%s];", R(r->xin[x]), d->ld, R(v[x]), R(a));
		}
		if (d->size == 2) {
			r->xval[i][0] = ptx_reg(p, RC_B32);
			ptx_emit(p, "mov.b32 %s, {%s, %s};", R(r->xval[i][0]), R(v[0]), R(v[1]));
		} else
			for (int x = 0; x < 2; x++) {
				r->xval[i][x] = v[x];
				if (d->load) {
					r->xval[i][x] = ptx_reg(p, RC_F32);
					ptx_expand(p, d->load, r->xval[i][x], v[x], -1);
				}
			}
	}
	ptx_place(p, none);
}

/* V adjacent elements at addr, one load each (addr need not be aligned). */
static void
load_elems(Ptx *p, DType dt, Reg addr, int v, Reg *val)
{
	for (int j = 0; j < v; j++) {
		Reg a = addr;
		if (j) {
			a = ptx_reg(p, RC_B64);
			ptx_emit(p, "add.u64 %s, %s, %d;", R(a), R(addr), j * ptx_dtypes[dt].size);
		}
		val[j] = ptx_load_val(p, dt, a, "global");
	}
}

/* The eight 16-bit elements at addr in global memory one by one, into
 * val's registers: the slow path of a load whose fast path set them. */
static void
load_elems_into(Ptx *p, DType dt, Reg addr, const Reg *val)
{
	for (int j = 0; j < 8; j++) {
		Reg a = ptx_reg(p, RC_B64), v;
		ptx_emit(p, "add.u64 %s, %s, %d;", R(a), R(addr), 2 * j);
		v = ptx_load_val(p, dt, a, "global");
		ptx_emit(p, "mov.f32 %s, %s;", R(val[j]), R(v));
	}
}

/* Eight adjacent 16-bit elements at addr, which is only 2-byte aligned (a
 * norm's weight at a peeled row's columns, shifted by the row's head):
 * the two 16-byte vectors around them, and the eight picked out by the
 * shift s = (addr & 15) / 2 -- words q = s / 2 on by selp, and for odd s
 * the half-words between by prmt.  Eight element loads each cost a warp
 * four L1 wavefronts (lanes 16 bytes apart): layernorm at 1024 x 50257
 * ran 40% longer than softmax on them (bench/results/2026-12-06-cta-h100).
 * In global memory, where the two vectors would leave [lo, lo + bytes) --
 * the weight's ends, which compute-sanitizer checks -- the elements one
 * by one; a copy in shared memory (lo -1: a 32-bit address) has 16 bytes
 * of slack after it (wsm_bytes), so never. */
static void
load_shifted16(Ptx *p, DType dt, Reg addr, Reg lo, int64_t bytes, Reg *val)
{
	bool sh_mem = lo < 0;
	const char *space = sh_mem ? "shared" : "global", *w64 = sh_mem ? "b32" : "b64";
	Reg base = ptx_reg(p, sh_mem ? RC_B32 : RC_B64), sh = ptx_reg(p, RC_B32), sel = ptx_reg(p, RC_B32);
	Reg q1 = ptx_reg(p, RC_PRED), q2 = ptx_reg(p, RC_PRED), odd = ptx_reg(p, RC_PRED), out = ptx_reg(p, RC_PRED);
	Reg w[8], m[5], t0 = ptx_reg(p, RC_B32), t1 = ptx_reg(p, RC_B32);
	int slow = ptx_label(p), done = ptx_label(p);

	for (int j = 0; j < 8; j++)
		val[j] = ptx_reg(p, RC_F32);
	ptx_emit(p, "and.%s %s, %s, -16;", w64, R(base), R(addr));
	if (!sh_mem) {
		Reg end = ptx_reg(p, RC_B64), top = ptx_reg(p, RC_B64);
		ptx_emit(p, "add.u64 %s, %s, %lld;", R(end), R(lo), (long long)bytes);
		ptx_emit(p, "setp.lt.u64 %s, %s, %s;", R(out), R(base), R(lo));
		ptx_emit(p, "add.u64 %s, %s, 32;", R(top), R(base));
		ptx_emit(p, "setp.gt.or.u64 %s, %s, %s, %s;", R(out), R(top), R(end), R(out));
		ptx_emit(p, "@%s bra $L%d;", R(out), slow);
	}
	for (int j = 0; j < 8; j++)
		w[j] = ptx_reg(p, RC_B32);
	/* not .nc: the weight may be written by an earlier step this kernel waits for, as element loads allowed */
	ptx_emit(p, "ld.%s.v4.b32 {%s, %s, %s, %s}, [%s];", space, R(w[0]), R(w[1]), R(w[2]), R(w[3]), R(base));
	ptx_emit(p, "ld.%s.v4.b32 {%s, %s, %s, %s}, [%s+16];", space, R(w[4]), R(w[5]), R(w[6]), R(w[7]), R(base));
	if (sh_mem)
		ptx_emit(p, "mov.u32 %s, %s;", R(sh), R(addr));
	else
		ptx_emit(p, "cvt.u32.u64 %s, %s;", R(sh), R(addr));
	ptx_emit(p, "bfe.u32 %s, %s, 1, 3;", R(sh), R(sh)); /* s, the shift in elements */
	ptx_emit(p, "and.b32 %s, %s, 1;", R(sel), R(sh));
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(odd), R(sel));
	ptx_emit(p, "and.b32 %s, %s, 2;", R(sel), R(sh));
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q1), R(sel));
	ptx_emit(p, "and.b32 %s, %s, 4;", R(sel), R(sh));
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q2), R(sel));
	ptx_emit(p, "selp.b32 %s, 21554, 12816, %s;", R(sel), R(odd)); /* 0x5432: a's high half, b's low; 0x3210: a */
	for (int k = 0; k < 5; k++) { /* m[k] = w[s / 2 + k] */
		m[k] = ptx_reg(p, RC_B32);
		ptx_emit(p, "selp.b32 %s, %s, %s, %s;", R(t0), R(w[k + 1]), R(w[k]), R(q1));
		ptx_emit(p, "selp.b32 %s, %s, %s, %s;", R(t1), R(w[k + 3]), R(w[k + 2]), R(q1));
		ptx_emit(p, "selp.b32 %s, %s, %s, %s;", R(m[k]), R(t1), R(t0), R(q2));
	}
	for (int k = 0; k < 4; k++) {
		Reg o = ptx_reg(p, RC_B32), v[2];
		ptx_emit(p, "prmt.b32 %s, %s, %s, %s;", R(o), R(m[k]), R(m[k + 1]), R(sel));
		ptx_unpack_word(p, dt, o, v);
		ptx_emit(p, "mov.f32 %s, %s;", R(val[2 * k]), R(v[0]));
		ptx_emit(p, "mov.f32 %s, %s;", R(val[2 * k + 1]), R(v[1]));
	}
	if (sh_mem)
		return;
	ptx_emit(p, "bra $L%d;", done);
	ptx_place(p, slow);
	load_elems_into(p, dt, addr, val);
	ptx_place(p, done);
}

/* Words s / 2 on of the eight in w (two 16-byte vectors) as eight 16-bit
 * elements into val: for odd s, the half-words between by prmt. */
static void
pick_fixed16(Ptx *p, DType dt, const Reg *w, int s, Reg *val)
{
	int q = s / 2;
	for (int k = 0; k < 4; k++) {
		Reg o = w[q + k], v[2];
		if (s % 2) {
			o = ptx_reg(p, RC_B32);
			ptx_emit(p, "prmt.b32 %s, %s, %s, 0x5432;", R(o), R(w[q + k]), R(w[q + k + 1]));
		}
		ptx_unpack_word(p, dt, o, v);
		val[2 * k] = v[0];
		val[2 * k + 1] = v[1];
	}
}

/* Eight adjacent 16-bit elements at the shared address a, s elements past
 * a 16-byte boundary with s known here (cta_each_split): the two vectors
 * around them (one for s = 0) and pick_fixed16 -- what load_shifted16
 * selects at run time, there 15 selp and the shift's decoding for each
 * vector.  A copy in shared memory has 16 bytes of slack after it. */
static void
load_fixed16(Ptx *p, DType dt, Reg a, int s, Reg *val)
{
	Reg w[8];
	for (int j = 0; j < 8; j++)
		w[j] = ptx_reg(p, RC_B32);
	ptx_emit(p, "ld.shared.v4.b32 {%s, %s, %s, %s}, [%s+%d];", R(w[0]), R(w[1]), R(w[2]), R(w[3]), R(a), -2 * s);
	if (s)
		ptx_emit(p, "ld.shared.v4.b32 {%s, %s, %s, %s}, [%s+%d];", R(w[4]), R(w[5]), R(w[6]), R(w[7]), R(a), 16 - 2 * s);
	pick_fixed16(p, dt, w, s, val);
}

/* The same from global memory at addr, whose input [lo, lo + bytes) is
 * 16-byte aligned (r->walign): where the second vector would leave it
 * (the input's last columns; compute-sanitizer checks), element by
 * element -- unless the caller knows it stays inside (`inside`: no test).
 * Not .nc: the input may be written by an earlier step this kernel waits
 * for. */
static void
load_fixed16_global(Ptx *p, DType dt, Reg addr, int s, bool inside, Reg lo, int64_t bytes, Reg *val)
{
	Reg w[8];
	int slow = ptx_label(p), done = ptx_label(p);
	for (int j = 0; j < 8; j++) {
		w[j] = ptx_reg(p, RC_B32);
		val[j] = ptx_reg(p, RC_F32);
	}
	if (s && !inside) {
		Reg end = ptx_reg(p, RC_B64), top = ptx_reg(p, RC_B64), out = ptx_reg(p, RC_PRED);
		ptx_emit(p, "add.u64 %s, %s, %lld;", R(end), R(lo), (long long)bytes);
		ptx_emit(p, "add.u64 %s, %s, %d;", R(top), R(addr), 32 - 2 * s);
		ptx_emit(p, "setp.gt.u64 %s, %s, %s;", R(out), R(top), R(end));
		ptx_emit(p, "@%s bra $L%d;", R(out), slow);
	}
	ptx_emit(p, "ld.global.v4.b32 {%s, %s, %s, %s}, [%s+%d];", R(w[0]), R(w[1]), R(w[2]), R(w[3]), R(addr), -2 * s);
	if (s)
		ptx_emit(p, "ld.global.v4.b32 {%s, %s, %s, %s}, [%s+%d];", R(w[4]), R(w[5]), R(w[6]), R(w[7]), R(addr),
		         16 - 2 * s);
	{
		Reg v[8];
		pick_fixed16(p, dt, w, s, v);
		for (int j = 0; j < 8; j++)
			ptx_emit(p, "mov.f32 %s, %s;", R(val[j]), R(v[j]));
	}
	if (!s || inside)
		return;
	ptx_emit(p, "bra $L%d;", done);
	ptx_place(p, slow);
	load_elems_into(p, dt, addr, val);
	ptx_place(p, done);
}

/* ---- CTA mode: the inputs every row shares, in shared memory ----
 * A CTA of 1024 threads holding a vocabulary-wide row in registers has
 * its SM to itself, and so its shared memory, idle but for the stages'
 * slots.  Its map read a norm's weight and bias (100 KB each at 50257)
 * from L1 -- which the row's own loads sweep -- or L2 for every row, and
 * with no registers to spare for loads in flight (64 a thread, the row
 * holding 28) each of the thread's vectors waited for them in turn:
 * layernorm at 1024 x 50257 ran 1.65x the HBM floor, rmsnorm (one weight)
 * 1.20x.  Here every thread copies its share of each such input into
 * shared memory once, at the kernel's start (cp.async, 16 bytes at a
 * time; element by element where the input is not 16-byte aligned, a
 * view), and every row reads it there.  Flagless kernels only: the copy
 * runs before any entry, so nothing the kernel waits for may write it. */
enum { WSM_SMEM_MAX = 227 * 1024, WSM_DEFAULT_MAX = 128 * 1024, WSM_UNROLL = 8 };

static int64_t
wsm_bytes(const PtxRowsSpec *s, int i)
{
	return (s->len * ptx_dtypes[s->in[i].dt].size + 15) / 16 * 16 + 16; /* + a shifted read's second vector */
}

/* Every thread's share of input i's copy: 16-byte pieces by cp.async
 * (the last with only the input's bytes read) where its address is
 * 16-byte aligned, else elements. */
static void
wsm_fill(Rows *r, int i)
{
	Ptx *p = r->p;
	const PtxDType *d = &ptx_dtypes[r->s->in[i].dt];
	int64_t bytes = r->s->len * d->size, whole = bytes / 16;
	int vloop = ptx_label(p), elems = ptx_label(p), eloop = ptx_label(p), done = ptx_label(p);
	Reg buf = ptx_reg(p, RC_B32), v = ptx_reg(p, RC_B32), dst = ptx_reg(p, RC_B32), src = ptx_reg(p, RC_B64);
	Reg q = ptx_reg(p, RC_PRED), al = ptx_reg(p, RC_B64), x[WSM_UNROLL];
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(buf));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(buf), R(buf), r->woff[i]);
	ptx_emit(p, "and.b64 %s, %s, 15;", R(al), R(p->tensor[i]));
	ptx_emit(p, "setp.ne.u64 %s, %s, 0;", R(q), R(al));
	ptx_emit(p, "@%s bra $L%d;", R(q), elems);
	ptx_emit(p, "mov.u32 %s, %s;", R(v), R(p->tid));
	ptx_place(p, vloop);
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(q), R(v), (long long)whole);
	ptx_emit(p, "@!%s bra $L%d;", R(q), done);
	ptx_emit(p, "mad.lo.u32 %s, %s, 16, %s;", R(dst), R(v), R(buf));
	ptx_emit(p, "mad.wide.u32 %s, %s, 16, %s;", R(src), R(v), R(p->tensor[i]));
	ptx_emit(p, "cp.async.cg.shared.global [%s], [%s], 16;", R(dst), R(src));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(v), R(v), r->T);
	ptx_emit(p, "bra $L%d;", vloop);
	ptx_place(p, elems); /* a view at an unaligned address: WSM_UNROLL loads in flight, then their stores */
	ptx_emit(p, "mov.u32 %s, %s;", R(v), R(p->tid));
	ptx_place(p, eloop);
	ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(q), R(v), (long long)r->s->len);
	ptx_emit(p, "@!%s bra $L%d;", R(q), done);
	for (int j = 0; j < WSM_UNROLL; j++) {
		Reg in = ptx_reg(p, RC_PRED);
		x[j] = ptx_reg(p, d->st);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(dst), R(v), j * r->T);
		ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(in), R(dst), (long long)r->s->len);
		ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(src), R(dst), d->size, R(p->tensor[i]));
		ptx_emit(p, "@%s ld.global.%s %s, [%s];", R(in), d->ld, R(x[j]), R(src));
	}
	for (int j = 0; j < WSM_UNROLL; j++) {
		Reg in = ptx_reg(p, RC_PRED), e = ptx_reg(p, RC_B32);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(e), R(v), j * r->T);
		ptx_emit(p, "setp.lt.u32 %s, %s, %lld;", R(in), R(e), (long long)r->s->len);
		ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(e), R(e), d->size, R(buf));
		ptx_emit(p, "@%s st.shared.%s [%s], %s;", R(in), d->ld, R(e), R(x[j]));
	}
	ptx_emit(p, "add.u32 %s, %s, %d;", R(v), R(v), WSM_UNROLL * r->T);
	ptx_emit(p, "bra $L%d;", eloop);
	ptx_place(p, done);
	if (bytes % 16) { /* the last piece: the input's bytes, zeros after (aligned only) */
		int skip = ptx_label(p);
		ptx_emit(p, "setp.eq.and.u64 %s, %s, 0, %s;", R(q), R(al), R(p->is_t0));
		ptx_emit(p, "@!%s bra $L%d;", R(q), skip);
		ptx_emit(p, "add.u32 %s, %s, %lld;", R(dst), R(buf), (long long)(whole * 16));
		ptx_emit(p, "add.u64 %s, %s, %lld;", R(src), R(p->tensor[i]), (long long)(whole * 16));
		ptx_emit(p, "cp.async.cg.shared.global [%s], [%s], 16, %lld;", R(dst), R(src), (long long)(bytes % 16));
		ptx_place(p, skip);
	}
}

/* The copies, before the first entry: every thread's, then all of them
 * seen by every thread. */
static void
wsm_init(Rows *r)
{
	if (!r->wend)
		return;
	for (int i = 0; i < r->s->nin; i++)
		if (r->woff[i] >= 0)
			wsm_fill(r, i);
	ptx_emit(r->p, "cp.async.wait_all;");
	ptx_emit(r->p, "bar.sync 0;");
}

/* Input i's held copy at column col: v elements (v > 1: a vector, shifted
 * where a peeled row's vectors are) or one. */
static void
wsm_load(Rows *r, int i, Reg col, Reg *val)
{
	Ptx *p = r->p;
	DType dt = r->s->in[i].dt;
	const PtxDType *d = &ptx_dtypes[dt];
	Reg a = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(a));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(a), R(a), r->woff[i]);
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(a), R(col), d->size, R(a));
	if (r->vec == 1) {
		val[0] = ptx_load_val(p, dt, a, "shared");
	} else if (r->peel && r->vec == 8 && d->size == 2 && d->load) {
		if (r->wshift >= 0)
			load_fixed16(p, dt, a, r->wshift, val);
		else
			load_shifted16(p, dt, a, -1, 0, val);
	} else if (r->peel) { /* f32 at a peeled row's columns: 4-byte aligned, element by element */
		for (int j = 0; j < r->vec; j++) {
			Reg e = ptx_reg(p, RC_B32);
			ptx_emit(p, "add.u32 %s, %s, %d;", R(e), R(a), j * d->size);
			val[j] = ptx_load_val(p, dt, e, "shared");
		}
	} else {
		Reg w[4];
		int words = ptx_load_words_in(p, "shared", dt, a, r->vec, w), per = d->size == 4 ? 1 : 2;
		for (int k = 0; k < words; k++)
			ptx_unpack_word(p, dt, w[k], &val[per * k]);
	}
}

/* Whether held vector u (u >= 0; -1: the loop's, at a column not known
 * here) reads a shared 16-bit input's two vectors inside it: they end at
 * most (u + 1) T V + V elements in (the vector's start rounded down to V,
 * plus 2 V), whatever the head.  All but the row's last held vector, so
 * only that one pays load_fixed16_global's test (a 64-bit add, compare
 * and branch an input a vector). */
static bool
cta_inside(const Rows *r, int u)
{
	return u >= 0 && r->cached && (int64_t)(u + 1) * r->T * r->vec + r->vec <= r->s->len;
}

/* The inputs program g reads at the thread's vector u: streamed ones from
 * registers, the others (a row's scalar, a vector shared by every row)
 * loaded, from L1 or L2.  u = -1: a vector or element whose inputs are all
 * loaded; -2, -3: a peeled row's head or tail element, its streamed
 * inputs in registers (cta_load). */
static void
cta_inputs(Rows *r, const PtxEwProg *g, int u, Reg col, Reg in[][8])
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	for (int i = 0; i < s->nin; i++)
		for (int j = 0; j < 8; j++)
			in[i][j] = -1;
	for (int i = 0; i < s->nin; i++) {
		int per = ptx_dtypes[s->in[i].dt].size == 4 ? 1 : 2;
		if (!ptx_prog_uses(g, OP_PARAM, i))
			continue;
		if (streamed(&s->in[i]) && u <= -2) { /* the head (-2) or tail (-3) element, loaded by cta_load */
			if (ptx_dtypes[s->in[i].dt].size == 2) {
				Reg v[2];
				ptx_unpack_word(p, s->in[i].dt, r->xval[i][0], v);
				in[i][0] = v[-2 - u];
			} else
				in[i][0] = r->xval[i][-2 - u];
			continue;
		}
		if (r->woff[i] >= 0) { /* shared by every row, copied into shared memory (wsm_plan) */
			wsm_load(r, i, col, in[i]);
			continue;
		}
		if (!streamed(&s->in[i]) || u < 0) {
			Reg a = col_addr(p, &s->in[i], r->inrow[i], col);
			const PtxDType *d = &ptx_dtypes[s->in[i].dt];
			if (r->peel && r->vec > 1 && !streamed(&s->in[i]) && s->in[i].stride[1] == 1) { /* not shifted with the row */
				if (r->vec == 8 && d->size == 2 && d->load && r->wshift >= 0) /* the head known (cta_each_split) */
					load_fixed16_global(p, s->in[i].dt, a, r->wshift, cta_inside(r, u), r->inrow[i], s->len * 2,
					                    in[i]);
				else if (r->vec == 8 && d->size == 2 && d->load)
					load_shifted16(p, s->in[i].dt, a, r->inrow[i], s->len * 2, in[i]);
				else
					load_elems(p, s->in[i].dt, a, r->vec, in[i]);
			} else
				ptx_load_vec(p, s->in[i].dt, a, s->in[i].stride[1], r->vec, in[i]);
		} else if (r->vec == 1)
			in[i][0] = r->word[i][u][0];
		else
			for (int w = 0; w < r->vec / per; w++)
				ptx_unpack_word(p, s->in[i].dt, r->word[i][u][w], &in[i][per * w]);
	}
}

/* The thread's vectors of the row, body(r, u, col, arg) for each: held
 * in registers, U blocks at known columns, each guarded; else a loop
 * (u = -1: its inputs are loaded). */
typedef void (*VecBody)(Rows *r, int u, Reg col, void *arg);

static void
cta_each_vector(Rows *r, VecBody body, void *arg)
{
	Ptx *p = r->p;
	Reg col, q;
	int loop, done;
	if (r->cached) {
		for (int u = 0; u < r->U; u++) {
			int skip = ptx_label(p);
			ptx_emit(p, "@!%s bra $L%d;", R(r->inpos[u]), skip);
			body(r, u, r->col[u], arg);
			ptx_place(p, skip);
		}
		return;
	}
	col = ptx_reg(p, RC_B32);
	q = ptx_reg(p, RC_PRED);
	loop = ptx_label(p);
	done = ptx_label(p);
	ptx_emit(p, "mov.u32 %s, %s;", R(col), R(r->col0));
	ptx_place(p, loop);
	if (r->peel) /* a vector past the tail's start */
		ptx_emit(p, "setp.gt.u32 %s, %s, %lld;", R(q), R(col), (long long)(r->s->len - r->vec));
	else
		ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(col), (long long)r->s->len);
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	body(r, -1, col, arg);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(col), R(col), r->T * r->vec);
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
}

/* A peeled row's vectors, where r->wsplit: their code once for each head
 * h (0 .. 7), the row taking the one for its own (a branch the whole CTA
 * takes alike), so a 16-bit input every row shares, 16-byte aligned in
 * shared or global memory, is read at h elements past a boundary known
 * here (load_fixed16*) and not decoded from its address vector by vector: those
 * selects took 23% of the warps' samples of a 50257-wide layernorm, which
 * ran 0.1155 ms against 0.0844 at the aligned 50304 (H100,
 * bench/results/2026-12-06-stall-h100.md). */
static void
cta_each_split(Rows *r, VecBody body, void *arg)
{
	Ptx *p = r->p;
	int at[8], join, any;
	Reg q;
	if (!r->wsplit) {
		cta_each_vector(r, body, arg);
		return;
	}
	join = ptx_label(p);
	any = ptx_label(p);
	q = ptx_reg(p, RC_PRED);
	if (r->walign >= 0)
		ptx_emit(p, "@!%s bra.uni $L%d;", R(r->walign), any);
	for (int h = 1; h < r->vec; h++) {
		at[h] = ptx_label(p);
		ptx_emit(p, "setp.eq.u32 %s, %s, %d;", R(q), R(r->head), h);
		ptx_emit(p, "@%s bra.uni $L%d;", R(q), at[h]);
	}
	for (int h = 0; h < r->vec; h++) {
		if (h)
			ptx_place(p, at[h]);
		r->wshift = h;
		cta_each_vector(r, body, arg);
		if (h < r->vec - 1 || r->walign >= 0)
			ptx_emit(p, "bra.uni $L%d;", join);
	}
	r->wshift = -1;
	if (r->walign >= 0) {
		ptx_place(p, any);
		cta_each_vector(r, body, arg);
	}
	ptx_place(p, join);
}

/* PtxRowsSpec.split_heads's default: the split, 0.1034 ms against 0.1154
 * for layernorm at 1024 x 50257 on an H100
 * (bench/results/2026-12-07-softmax-h100.md). */
enum { SPLIT_HEADS = 1 };

/* Whether cta_each_split pays for program g: it reads such an input.  Sets
 * r->walign to whether those read from global memory (not copied into
 * shared memory) are 16-byte aligned, which the code made for a head
 * assumes (a view off that alignment takes the code for any head). */
static bool
split_heads(Rows *r, const PtxEwProg *g)
{
	Ptx *p = r->p;
	bool any = false;
	r->walign = -1;
	if ((r->s->split_heads ? r->s->split_heads : SPLIT_HEADS) <= 0)
		return false;
	for (int i = 0; i < r->s->nin; i++) {
		if (!shifted16(r, i) || !ptx_prog_uses(g, OP_PARAM, i))
			continue;
		any = true;
		if (r->woff[i] >= 0)
			continue;
		Reg t = ptx_reg(p, RC_B64);
		ptx_emit(p, "and.b64 %s, %s, 15;", R(t), R(p->tensor[i]));
		if (r->walign < 0) {
			r->walign = ptx_reg(p, RC_PRED);
			ptx_emit(p, "setp.eq.u64 %s, %s, 0;", R(r->walign), R(t));
		} else
			ptx_emit(p, "setp.eq.and.u64 %s, %s, 0, %s;", R(r->walign), R(t), R(r->walign));
	}
	return any;
}

/* The vectors, then (peeled) the head and tail elements, one each, their
 * inputs loaded (from L1: the vectors' loads brought their lines). */
static void
cta_each(Rows *r, VecBody body, void *arg)
{
	Ptx *p = r->p;
	int v = r->vec, scalar, join;
	Reg col, q;
	if (!r->peel) {
		cta_each_vector(r, body, arg);
		return;
	}
	scalar = ptx_label(p);
	join = ptx_label(p);
	ptx_emit(p, "@%s bra $L%d;", R(r->mis), scalar);
	cta_each_split(r, body, arg);
	r->vec = 1;
	for (int x = 0; x < 2; x++) {
		int skip = ptx_label(p);
		ptx_emit(p, "@!%s bra $L%d;", R(r->xin[x]), skip);
		body(r, r->xcache ? -2 - x : -1, r->xcol[x], arg);
		ptx_place(p, skip);
	}
	ptx_emit(p, "bra $L%d;", join);
	/* a row whose pointers are misaligned unlike each other: elements */
	ptx_place(p, scalar);
	col = ptx_reg(p, RC_B32);
	q = ptx_reg(p, RC_PRED);
	ptx_emit(p, "mov.u32 %s, %s;", R(col), R(p->tid));
	{
		int loop = ptx_label(p);
		ptx_place(p, loop);
		ptx_emit(p, "setp.ge.u32 %s, %s, %lld;", R(q), R(col), (long long)r->s->len);
		ptx_emit(p, "@%s bra $L%d;", R(q), join);
		body(r, -1, col, arg);
		ptx_emit(p, "add.u32 %s, %s, %d;", R(col), R(col), r->T);
		ptx_emit(p, "bra $L%d;", loop);
	}
	ptx_place(p, join);
	r->vec = v;
}

typedef struct StageArg {
	int k, ri;
	Reg acc;
} StageArg;

static void
stage_vec(Rows *r, int u, Reg col, void *arg)
{
	StageArg *a = arg;
	Reg in[PTX_MAX_TENSORS][8], val[PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];
	cta_inputs(r, &r->pre[a->k], u, col, in);
	for (int j = 0; j < r->vec; j++) {
		PtxEnv env = env_for(r, in, j);
		const PtxOut *o = &r->pre[a->k].out[0];
		ptx_prog_emit(r->p, &r->pre[a->k], &env, val, vc);
		ptx_expand(r->p, reds[a->ri].combine, a->acc, a->acc, ptx_convert(r->p, val[o->val], vc[o->val], VC_F32));
	}
}

/* ---- CTA mode's prefetch: in0's rows by bulk copy ----
 * A CTA of 1024 threads holds a vocabulary-wide row in registers, so it is
 * alone on its SM, and the next row's loads could not begin before this
 * row's last store: each row paid the load latency and the barriers with
 * nothing in flight (layernorm at 1024 x 50257 ran 1.65x the HBM floor
 * against 1.12x at 4096 x 50304).  Here thread 0 copies in0's next row
 * (the entry's next, or the next entry's first) into shared memory by one
 * cp.async.bulk once every thread has taken this row's vectors out of the
 * buffer (after the first stage's barrier), and the row after waits on the
 * copy's mbarrier (a phase a row: parity = the CTA's row count) and reads
 * its vectors from shared memory.  The CTA's first row is copied at its
 * start.  The copy is in0's span from its
 * address rounded down to 16 bytes to its end rounded down, so the
 * vectors' offsets in the buffer keep their 16-byte alignment (a peeled
 * row's head is inside the span) and nothing past the row's last whole
 * vector is read: the tail's and head's elements, and rows misaligned
 * unlike in0 (peel_guard), still read global memory.  Flagless kernels
 * only: a row's input must not be waited for.  By default (prefetch 0)
 * on peeled rows held by a CTA of 1024 threads, alone on its SM, of a
 * program that reads no input every row shares (a softmax): on an H100
 * softmax at 1024 x 50257 took 0.0835-0.0837 ms against 0.0845-0.0849,
 * where at the same width rmsnorm and layernorm (their weights then read
 * through L1: the buffer leaves their copies no room) and every aligned
 * width lost 1-14% (gpu-kernels perf-pf,
 * bench/results/2026-12-07-rowpf-h100.md). */
enum { PF_SMEM_MAX = 227 * 1024, PF_BAR = 0, PF_BUF = 128 };

static int64_t
pf_bytes(const PtxRowsSpec *s)
{
	return (s->len * ptx_dtypes[s->in[0].dt].size + 15) / 16 * 16 + 16;
}

static int
pf_smem_at(const PtxRowsSpec *s)
{
	return 2 * s->nstage * 128; /* after the stage slots (cta_stage) */
}

static bool
cta_prefetch(const Rows *r)
{
	const PtxRowsSpec *s = r->s;
	int size = ptx_dtypes[s->in[0].dt].size;
	/* the span ends at the row's end rounded down: a peeled row's vectors end
	 * by then, others only where rows are whole 16-byte multiples (vectors
	 * under 16 bytes otherwise run past it: review of 2026-12-06) */
	bool whole = r->peel || ((s->len * size) % 16 == 0 && (s->in[0].stride[0] * size) % 16 == 0);
	bool want = s->prefetch > 0 || (s->prefetch == 0 && r->peel && r->T >= 1024);
	for (int i = 0; i < s->nin && s->prefetch == 0; i++)
		if (s->in[i].stride[0] == 0 && used_anywhere(r, i)) /* shared by every row */
			want = false;
	return r->cta && r->cached && s->flagless && want && s->nstage > 0 && streamed(&s->in[0]) &&
	       used_anywhere(r, 0) && whole && pf_smem_at(s) + PF_BUF + pf_bytes(s) <= PF_SMEM_MAX;
}

/* Thread 0's copy of in0's row at a into the buffer. */
static void
pf_issue(Rows *r, Reg a)
{
	Ptx *p = r->p;
	int64_t bytes = r->s->len * ptx_dtypes[r->s->in[0].dt].size;
	Reg lo = ptx_reg(p, RC_B64), hi = ptx_reg(p, RC_B64), n = ptx_reg(p, RC_B32), st = ptx_reg(p, RC_B64);
	ptx_emit(p, "and.b64 %s, %s, -16;", R(lo), R(a));
	ptx_emit(p, "add.u64 %s, %s, %lld;", R(hi), R(a), (long long)bytes);
	ptx_emit(p, "and.b64 %s, %s, -16;", R(hi), R(hi));
	ptx_emit(p, "sub.u64 %s, %s, %s;", R(hi), R(hi), R(lo));
	ptx_emit(p, "cvt.u32.u64 %s, %s;", R(n), R(hi));
	ptx_emit(p, "mbarrier.arrive.expect_tx.shared::cta.b64 %s, [%s], %s;", R(st), R(r->pfbar), R(n));
	ptx_emit(p, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%s], [%s], %s, [%s];", R(r->pfbuf),
	         R(lo), R(n), R(r->pfbar));
}

/* The barrier, the buffer, and the barrier made (every thread, once). */
static void
pf_init(Rows *r)
{
	Ptx *p = r->p;
	int skip = ptx_label(p);
	r->pfbar = ptx_reg(p, RC_B32);
	r->pfbuf = ptx_reg(p, RC_B32);
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(r->pfbar));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(r->pfbar), R(r->pfbar), pf_smem_at(r->s) + PF_BAR);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(r->pfbuf), R(r->pfbar), PF_BUF - PF_BAR);
	ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), skip);
	ptx_emit(p, "mbarrier.init.shared::cta.b64 [%s], 1;", R(r->pfbar));
	ptx_emit(p, "fence.mbarrier_init.release.cluster;"); /* seen by the async proxy's complete_tx */
	ptx_place(p, skip);
	ptx_emit(p, "bar.sync 0;");
}

/* At a row's start: its copy (thread 0, if the row is the CTA's first:
 * every later one was copied during the row before), then every thread
 * waits for it. */
static void
pf_row(Rows *r)
{
	Ptx *p = r->p;
	int skip = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), par = ptx_reg(p, RC_B32);
	ptx_emit(p, "setp.eq.and.u32 %s, %s, 0, %s;", R(q), R(r->seq), R(p->is_t0));
	ptx_emit(p, "@!%s bra $L%d;", R(q), skip);
	pf_issue(r, r->inrow[0]);
	ptx_place(p, skip);
	r->pflo = ptx_reg(p, RC_B64);
	ptx_emit(p, "and.b64 %s, %s, -16;", R(r->pflo), R(r->inrow[0]));
	ptx_emit(p, "and.b32 %s, %s, 1;", R(par), R(r->seq));
	ptx_mbar_wait(p, r->pfbar, par);
}

/* After this row's first barrier: thread 0 copies the row the CTA takes
 * next -- the entry's next, or the first of the entry a grid further
 * (the persistent loop's next, ptx_next_entry), if there is one. */
static void
pf_next(Rows *r)
{
	Ptx *p = r->p;
	const PtxTensor *t = &r->s->in[0];
	int64_t pitch = t->stride[0] * ptx_dtypes[t->dt].size;
	int skip = ptx_label(p), issue = ptx_label(p);
	Reg q = ptx_reg(p, RC_PRED), nx = ptx_reg(p, RC_B32), a = ptx_reg(p, RC_B64), e = ptx_reg(p, RC_B64);
	ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), skip);
	ptx_emit(p, "add.u32 %s, %s, 1;", R(nx), R(r->row));
	ptx_emit(p, "add.u64 %s, %s, %lld;", R(a), R(r->inrow[0]), (long long)pitch);
	ptx_emit(p, "setp.lt.u32 %s, %s, %s;", R(q), R(nx), R(r->rend));
	ptx_emit(p, "@%s bra $L%d;", R(q), issue);
	ptx_emit(p, "mov.u32 %s, %%nctaid.x;", R(nx));
	ptx_emit(p, "add.u32 %s, %s, %s;", R(nx), R(nx), R(p->blk));
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(nx), R(p->param[1]));
	ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	ptx_emit(p, "mad.wide.u32 %s, %s, %d, %s;", R(e), R(nx), (int)sizeof(PtxBlock), R(p->param[0]));
	ptx_emit(p, "ld.global.nc.u32 %s, [%s];", R(nx), R(e)); /* its x: rows from x rb */
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(nx), R(nx), r->rb_cta);
	ptx_emit(p, "mad.wide.u32 %s, %s, %lld, %s;", R(a), R(nx), (long long)pitch, R(p->tensor[0]));
	ptx_place(p, issue);
	pf_issue(r, a);
	ptx_place(p, skip);
}

/* CTA mode's shared memory before any copy of a shared input: the
 * stages' slots (cta_stage), then a prefetch's barrier and buffer. */
static int64_t
cta_smem(const Rows *r)
{
	return r->pf ? pf_smem_at(r->s) + PF_BUF + pf_bytes(r->s) : 2 * r->s->nstage * 128;
}

/* Which inputs are copied (r->woff), after cta_smem, where all of them
 * fit (the section on the inputs every row shares, above). */
static void
wsm_plan(Rows *r)
{
	const PtxRowsSpec *s = r->s;
	int64_t at = (cta_smem(r) + 127) / 128 * 128;
	for (int i = 0; i < s->nin; i++)
		r->woff[i] = -1;
	r->wend = 0;
	/* by default where the CTA has its SM anyway: 1024 threads holding the
	 * row in registers (more than 32 a thread); rows reread from L2 fit two
	 * CTAs an SM, which the copy would halve (review of 2026-12-06) */
	if (!r->cta || !s->flagless || s->weights_smem < 0 ||
	    (s->weights_smem == 0 && (r->T < 1024 || !r->cached || s->cta_min > 1)))
		return;
	for (int i = 0; i < s->nin; i++)
		if (s->in[i].stride[0] == 0 && s->in[i].stride[1] == 1 && used_anywhere(r, i)) {
			r->woff[i] = (int)at;
			at += wsm_bytes(s, i);
			r->wend = (int)at;
		}
	/* all or none: one copied and one loaded took a layernorm beside a
	 * prefetch 12 bytes of spills.  By default at most WSM_DEFAULT_MAX,
	 * which leaves L1 half the SM's 256 KiB: the row's loads go through
	 * L1 and slowed with less (layernorm's 200 KB of weights copied at
	 * 4096 x 50304 0.2998 -> 0.3520 ms, though 0.1153 -> 0.1118 at 1024 x
	 * 50257; rmsnorm's 100 KB 0.2927 -> 0.2911 and 0.0825 -> 0.0805; one
	 * H100, gpu-kernels perf-grid, bench/results/2026-12-06-lean-h100.md) */
	if (at > WSM_SMEM_MAX || (s->weights_smem == 0 && at > WSM_DEFAULT_MAX))
		for (int i = 0; i < s->nin; i++)
			r->woff[i] = -1, r->wend = 0;
}

/* Stage k: reduce, meet the other warps, run the post program. */
static void
cta_stage(Rows *r, int k)
{
	Ptx *p = r->p;
	const PtxRowStage *st = &r->s->stage[k];
	int ri = red_index(st->red), W = r->T / 32, skip;
	Reg acc = ptx_reg(p, RC_F32), slot = ptx_reg(p, RC_B32);
	Reg base = ptx_reg(p, RC_B32), par = ptx_reg(p, RC_B32), t = ptx_reg(p, RC_F32), q = ptx_reg(p, RC_PRED);
	StageArg sa = {k, ri, acc};

	ptx_emit(p, "mov.f32 %s, 0f%08X;", R(acc), reds[ri].identity);
	cta_each(r, stage_vec, &sa);
	for (int d = 16; d >= 1; d /= 2) {
		Reg o = ptx_reg(p, RC_F32);
		ptx_emit(p, "shfl.sync.bfly.b32 %s, %s, %d, 0x1f, 0xffffffff;", R(o), R(acc), d);
		ptx_expand(p, reds[ri].combine, acc, acc, o);
	}
	/* slots [parity][stage][warp], by the CTA's own row count: a warp
	 * that ends this row and begins the next (no barrier between rows of
	 * a flagless kernel) writes the other parity, and cannot begin a
	 * third before every warp has passed the next row's barrier, which
	 * each reaches after reading this row's slots */
	ptx_emit(p, "and.b32 %s, %s, 1;", R(par), R(r->seq));
	ptx_emit(p, "mad.lo.u32 %s, %s, %d, %s;", R(base), R(par), r->s->nstage * 128, R(r->smem));
	ptx_emit(p, "add.u32 %s, %s, %d;", R(base), R(base), k * 128);
	ptx_emit(p, "mad.lo.u32 %s, %s, 4, %s;", R(slot), R(r->warp), R(base));
	skip = ptx_label(p);
	ptx_emit(p, "setp.ne.u32 %s, %s, 0;", R(q), R(r->lane));
	ptx_emit(p, "@%s bra $L%d;", R(q), skip);
	ptx_emit(p, "st.shared.f32 [%s], %s;", R(slot), R(acc));
	ptx_place(p, skip);
	ptx_emit(p, "bar.sync 0;");
	if (r->pf && k == 0) /* every thread has its vectors of the buffer: the next row may come */
		pf_next(r);
	ptx_emit(p, "ld.shared.f32 %s, [%s];", R(acc), R(base));
	for (int w = 1; w < W; w++) {
		ptx_emit(p, "ld.shared.f32 %s, [%s+%d];", R(t), R(base), 4 * w);
		ptx_expand(p, reds[ri].combine, acc, acc, t);
	}
	if (st->red == OP_MEAN) {
		Reg inv = ptx_imm_f32(p, 1.0 / (double)r->s->len);
		ptx_emit(p, "mul.f32 %s, %s, %s;", R(acc), R(acc), R(inv));
	}
	row_post(r, k, acc);
	if (st->out >= 0) {
		skip = ptx_label(p);
		ptx_emit(p, "@!%s bra $L%d;", R(p->is_t0), skip);
		ptx_store_val(p, r->s->out[st->out].dt, r->outrow[st->out], r->res[k], VC_F32);
		ptx_place(p, skip);
	}
}

static void
map_vec(Rows *r, int u, Reg col, void *arg)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	Reg in[PTX_MAX_TENSORS][8], val[8][PTX_MAX_INS];
	ValClass vc[PTX_MAX_INS];
	(void)arg;
	cta_inputs(r, &s->map, u, col, in);
	for (int j = 0; j < r->vec; j++) {
		PtxEnv env = env_for(r, in, j);
		ptx_prog_emit(p, &s->map, &env, val[j], vc);
	}
	for (int o = 0; o < s->map.nout; o++) {
		const PtxOut *po = &s->map.out[o];
		const PtxTensor *t = &s->out[po->tensor];
		int sv = ptx_store_src(&s->map, po, t->dt, vc);
		Reg w[8], a = col_addr(p, t, r->outrow[po->tensor], col);
		for (int j = 0; j < r->vec; j++)
			w[j] = ptx_convert(p, val[j][sv], vc[sv], ptx_dtypes[t->dt].vc);
		ptx_store_vec(p, t->dt, a, r->vec, w);
	}
}

/* CTA mode: the entry's rows one after another, the whole CTA on each. */
static void
rows_cta_body(Rows *r)
{
	Ptx *p = r->p;
	const PtxRowsSpec *s = r->s;
	int rb = s->rows_per_block ? s->rows_per_block : ROW_DEFAULT_BLOCK, loop = ptx_label(p),
	    done = ptx_label(p);
	Reg end = ptx_reg(p, RC_B32), q = ptx_reg(p, RC_PRED);

	r->lane = ptx_reg(p, RC_B32);
	r->warp = ptx_reg(p, RC_B32);
	r->row = ptx_reg(p, RC_B32);
	r->smem = ptx_reg(p, RC_B32);
	ptx_emit(p, "and.b32 %s, %s, 31;", R(r->lane), R(p->tid));
	ptx_emit(p, "shr.u32 %s, %s, 5;", R(r->warp), R(p->tid));
	ptx_emit(p, "mov.u32 %s, ptx_smem;", R(r->smem));
	if (!r->peel) /* the same columns in every row */
		cta_columns(r);
	ptx_emit(p, "mul.lo.u32 %s, %s, %d;", R(r->row), R(p->x), rb);
	ptx_emit(p, "add.u32 %s, %s, %d;", R(end), R(r->row), rb);
	ptx_emit(p, "min.u32 %s, %s, %lld;", R(end), R(end), (long long)s->rows);
	r->rend = end;
	r->rb_cta = rb;
	ptx_place(p, loop);
	ptx_emit(p, "setp.ge.u32 %s, %s, %s;", R(q), R(r->row), R(end));
	ptx_emit(p, "@%s bra $L%d;", R(q), done);
	row_pointers(r);
	if (r->peel) /* this row's head */
		cta_columns(r);
	if (r->pf)
		pf_row(r);
	cta_load(r);
	for (int k = 0; k < s->nstage; k++)
		cta_stage(r, k);
	if (s->map.nout) {
		r->wsplit = r->msplit;
		cta_each(r, map_vec, NULL);
		r->wsplit = false;
	}
	ptx_emit(p, "add.u32 %s, %s, 1;", R(r->seq), R(r->seq));
	ptx_emit(p, "add.u32 %s, %s, 1;", R(r->row), R(r->row));
	ptx_emit(p, "bra $L%d;", loop);
	ptx_place(p, done);
}

/* An empty pre program reduces in0; an empty post keeps the reduction. */
static void
default_prog(PtxEwProg *g, const PtxEwProg *given, int leaf)
{
	if (given->nins) {
		*g = *given;
		return;
	}
	*g = (PtxEwProg){0};
	g->ins[0] = (PtxIns){.op = leaf, .a = 0};
	g->nins = 1;
	g->out[0] = (PtxOut){0, 0};
	g->nout = 1;
}

/* The stages' programs, a missing one the default (the input; the acc). */
static void
rows_progs(Rows *r)
{
	for (int i = 0; i < r->s->nstage; i++) {
		default_prog(&r->pre[i], &r->s->stage[i].pre, OP_PARAM);
		default_prog(&r->post[i], &r->s->stage[i].post, PTX_OP_ACC);
	}
}

void
ptx_emit_rows(Buf *b, const PtxRowsSpec *s, PtxKernel *k)
{
	const char *why = ptx_rows_check(s);
	Ptx px, *p = &px;
	Rows r = {.p = p, .s = s, .ncl = 1, .grp = 1, .wshift = -1};
	int rb = s->rows_per_block ? s->rows_per_block : ROW_DEFAULT_BLOCK, threads, slots = 0;
	int64_t nblocks;

	if (why)
		die("ptx_emit_rows: %s", why);
	rows_progs(&r);
	r.cols = rows_colmode(s);
	r.vec = r.cols ? 1 : rows_vec(s);
	if (!r.cols && s->len >= CTA_MIN_LEN && peel_vec(s) > r.vec) {
		r.vec = peel_vec(s);
		r.peel = true;
	}
	r.cta = !r.cols && cta_shape(s, r.vec, &r.T, &r.U, &r.cached);
	r.pf = cta_prefetch(&r);
	wsm_plan(&r);
	r.xcache = r.cta && r.peel && r.cached && s->cache_ends >= 0 && peel_cache(s, r.T, r.U, r.vec);
	if (r.cols) {
		col_setup(&r);
		rb = r.rb;
		nblocks = (s->rows + rb - 1) / rb;
		if (r.grp > 1)
			slots = group_slots(&r, nblocks);
	}
	threads = r.cta ? r.T : 32 * (r.cols ? COL_WARPS : ROW_WARPS);
	/* a group: two CTAs an SM (64 registers a thread), as column mode
	 * has without one, which the group's registers would otherwise cost */
	ptx_kernel_begin(p, b, s->name, s->nin + s->nout + (r.grp > 1), threads,
	                 r.grp > 1 ? 2 : r.cta && s->cta_min > 0 ? s->cta_min : 0);
	if (r.cols) {
		char of[64] = "";
		if (r.ncl > 1)
			snprintf(of, sizeof of, " of a cluster of %d CTAs", r.ncl);
		if (r.grp > 1)
			snprintf(of, sizeof of, " a CTA, of a group of up to %d CTAs,", r.grp);
		buf_printf(&p->head, "// rows %lld x %lld (strided: %d rows per block, %d per lane, %d slices%s split the length), %d stages\n",
		           (long long)s->rows, (long long)s->len, r.rb, r.cv, r.nsl, of, s->nstage);
		for (int k = 0; k < s->nstage; k++)
			if (r.mom[k])
				buf_printf(&p->head, "// stages %d and %d: a mean and its squared deviations, in one pass\n", k, k + 1);
			else if (r.onl[k])
				buf_printf(&p->head, "// stages %d and %d: a max and the sum of exps from it, in one pass\n", k, k + 1);
		if (r.pipe)
			buf_printf(&p->head, "// entries pipelined: the next reduced and met before this one is combined and stored\n");
		if (r.ccache)
			buf_printf(&p->head, "// the block's streamed inputs in shared memory, %d KiB a CTA%s\n", r.cbytes / 1024,
			           r.ccache == 2 ? ", twice: the next entry's copied in meanwhile" : ", copied in at each entry");
	} else if (r.cta && r.cached)
		buf_printf(&p->head, "// rows %lld x %lld, %d stages, a CTA of %d threads per row, %d x %d elements each%s%s\n",
		           (long long)s->rows, (long long)s->len, s->nstage, r.T, r.U, r.vec,
		           r.peel ? ", after the row's unaligned head (a head and a tail element by element)" : "",
		           r.pf ? "; in0's next row by bulk copy into shared memory meanwhile" : "");
	else if (r.cta)
		buf_printf(&p->head, "// rows %lld x %lld, %d stages, a CTA of %d threads per row, %d per step, reread from L2%s\n",
		           (long long)s->rows, (long long)s->len, s->nstage, r.T, r.vec,
		           r.peel ? ", after the row's unaligned head (a head and a tail element by element)" : "");
	else
		buf_printf(&p->head, "// rows %lld x %lld, %d stages, %d elements per lane step\n", (long long)s->rows,
		           (long long)s->len, s->nstage, r.vec);
	if (r.wend)
		for (int i = 0; i < s->nin; i++)
			if (r.woff[i] >= 0)
				buf_printf(&p->head, "// in%d, shared by every row, copied into shared memory at the start (%lld bytes)\n", i,
				           (long long)(s->len * ptx_dtypes[s->in[i].dt].size));
	ptx_kernel_cluster(p, r.ncl);
	if (r.grp > 1)
		ptx_kernel_group(p, r.grp, slots);
	ptx_params(p, s->nin + s->nout + (r.grp > 1));
	if (r.grp > 1)
		col_group_init(&r, slots);
	if (s->flagless && !r.cols)
		ptx_kernel_flagless(p);
	if (r.cta) {
		r.seq = ptx_reg(p, RC_B32);
		ptx_emit(p, "mov.u32 %s, 0;", R(r.seq));
	}
	if (r.pf)
		pf_init(&r);
	wsm_init(&r);
	r.msplit = r.cta && s->map.nout && split_heads(&r, &s->map);
	if (r.ccache == 2) {
		r.cseq = ptx_reg(p, RC_B32);
		ptx_emit(p, "mov.u32 %s, 0;", R(r.cseq));
		p->async_copies = true; /* a CTA that leaves early may have the next entry's in flight */
	}
	if (r.pipe)
		col_pipe_init(&r);
	ptx_loop_begin(p);
	if (r.cols)
		rows_col_body(&r);
	else if (r.cta)
		rows_cta_body(&r);
	else
		rows_body(&r);
	ptx_loop_end_drain(p, r.pipe ? col_pipe_drain : NULL, &r);
	ptx_kernel_end(p);
	*k = (PtxKernel){0}; /* no tensor maps, whatever the caller left */
	snprintf(k->name, sizeof k->name, "%s", s->name);
	k->threads = threads;
	k->smem = r.cols && r.ccache ? r.cat + r.ccache * r.cbytes
	          : r.cols ? col_smem(rb, s->nstage, r.ncl > r.grp ? r.ncl : r.grp, r.planes)
	          : r.wend ? r.wend
	          : r.cta ? (int)cta_smem(&r) : 0;
	k->cluster = r.ncl > 1 ? r.ncl : 0;
	k->group = r.grp > 1 ? r.grp : 0;
	k->work = r.grp > 1 ? group_counter_bytes(slots) + slots * group_nsets(&r) * group_set_bytes(&r) : 0;
	k->ntensors = s->nin + s->nout + (r.grp > 1);
	k->nblocks = (s->rows + rb - 1) / rb;
	/* CTAs sharing an SM, a row each, no copy made once per CTA: at 8192 x
	 * 8192 a CTA a row ran 3.0 / 4.0 / 4.2% faster than the persistent grid
	 * (rmsnorm / layernorm / softmax; the grid's CTAs took 10 or 11 rows
	 * each), at 1024 x 8192 up to 18% slower (one H100, gpu-kernels
	 * perf-grid, bench/results/2026-12-06-lean-h100.md): host.c's rule */
	k->entry_grid = r.cta && s->flagless && r.T < 1024 && !r.wend && !r.pf;
}

/* Whether ptx_emit_rows would hold the spec's blocks in shared memory
 * (col_cache_plan: lower.c picks the rows per block by it). */
bool
ptx_rows_col_held(const PtxRowsSpec *s)
{
	Rows r = {.s = s, .ncl = 1, .grp = 1, .cols = true};
	if (!rows_colmode(s) || s->nstage < 1 || ptx_rows_check(s))
		return false;
	rows_progs(&r);
	col_setup(&r);
	return r.ccache > 0;
}
