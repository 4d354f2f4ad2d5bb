/* codegen/lower.c -- a plan as PTX kernels and comm steps (DESIGN §5).
 *
 * The compute lane of a plan is a sequence of fused groups (sched/list.c
 * keeps each group's bands together); each group becomes one persistent
 * kernel: a matmul with its epilogue, a fused elementwise program, a row
 * reduction, or a copy for data movement.  Its bands become block-list
 * entries in plan order, for every rank (rank-relative bands shift by
 * rank), each entry waiting on the flag of its band's last input from the
 * comm lane and adding 1 to its band's flag when done.  Each comm-lane
 * block becomes a step: the flags it waits for (a band's flag reaches
 * entries x epoch), one collective on a chunk, and the epoch stored into
 * its own flag.  What the backend cannot express yet is refused with a
 * message (lo->err), never emitted wrong.
 *
 * A reduce_scatter that sched_push allows is pushed: its matmul routes
 * each tile of owner q's rows into q's copy of the partial, at the rows
 * of slot `rank` (codegen.h, routed stores), and raises the band's flag
 * at q; the step then adds the P slots of this rank's own copy, locally
 * (CommChunk.push). */
#include "codegen.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Matmul tile rows a block list walks together (L2 reuse; the harness
 * measured 8 fastest for the mma.sync kernel, 2026-11-29-mma-sync-h200.md). */
enum { TILE_GROUP = 8 };

typedef struct Low {
	Lowered *lo;
	const Func *f;
	const Plan *p;
	const BlockGraph *g;
	int P;
	int site;
	int *entries;   /* per plan block: entries that raise its flag (on each rank's flag: a
	                   pushed band's raises at an owner, from every rank) */
	bool *pushed;   /* per value: a reduce_scatter its matmul pushes (sched_push, and lowered so) */
	bool failed;
} Low;

static bool
refuse(Low *L, const char *fmt, ...)
{
	va_list ap;
	if (!L->failed) {
		va_start(ap, fmt);
		vsnprintf(L->lo->err, sizeof L->lo->err, fmt, ap);
		va_end(ap);
	}
	L->failed = true;
	return false;
}

/* A refusal located at what it is about (a collective of the source). */
static bool
refuse_at(Low *L, Span at, const char *fmt, ...)
{
	va_list ap;
	if (!L->failed) {
		va_start(ap, fmt);
		vsnprintf(L->lo->err, sizeof L->lo->err, fmt, ap);
		va_end(ap);
		L->lo->where = at;
	}
	L->failed = true;
	return false;
}

/* ---- shapes ---- */

static void
local_dims(const Low *L, Val v, int64_t *d)
{
	ty_local_shape(&L->f->ins[v].ty, L->P, d);
}

static void
rowmajor(const Low *L, Val v, int64_t *st)
{
	int64_t d[LIM_RANK], s = 1;
	const Type *t = &L->f->ins[v].ty;
	local_dims(L, v, d);
	for (int i = t->rank - 1; i >= 0; i--) {
		st[i] = s;
		s *= d[i];
	}
}

static int64_t
gcd(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* ---- programs: the members of a group as an elementwise program ---- */

typedef struct Prog {
	PtxEwProg *g;
	int *at;       /* value -> instruction, -1 */
	Val *inputs;   /* external values read, in input order */
	int nin;
	Val anchor;    /* read as PTX_OP_ACC (matmul, reduction), or -1 */
} Prog;

/* An empty program into g for group `anchor`'s members (anchor -1: none). */
static void
prog_begin(const Func *f, Prog *pr, PtxEwProg *g, Val anchor)
{
	memset(pr, 0, sizeof *pr);
	pr->g = g;
	pr->at = xmalloc((size_t)(f->nins + 1) * sizeof(int));
	pr->inputs = xmalloc((PTX_MAX_TENSORS + 1) * sizeof(Val));
	pr->anchor = anchor;
	for (Val v = 0; v < f->nins; v++)
		pr->at[v] = -1;
}


static int
emit_ins(Low *L, Prog *pr, PtxIns in)
{
	if (pr->g->nins == PTX_MAX_INS)
		return refuse(L, "a fused kernel of %s needs more than %d instructions", sym_str(L->f->name), PTX_MAX_INS), -1;
	pr->g->ins[pr->g->nins] = in;
	return pr->g->nins++;
}

static int
operand(Low *L, Prog *pr, Val u)
{
	const Ins *ui = &L->f->ins[u];
	if (pr->at[u] >= 0)
		return pr->at[u];
	if (u == pr->anchor)
		return pr->at[u] = emit_ins(L, pr, (PtxIns){PTX_OP_ACC, 0, 0, 0, DT_F32});
	if (ui->op == OP_CONST)
		return pr->at[u] = emit_ins(L, pr, (PtxIns){OP_CONST, 0, 0, ui->c, ui->ty.dt == DT_I32 ? DT_I32 : DT_F32});
	for (int i = 0; i < pr->nin; i++)
		if (pr->inputs[i] == u)
			return emit_ins(L, pr, (PtxIns){OP_PARAM, i, 0, 0, DT_F32});
	if (pr->nin == PTX_MAX_TENSORS)
		return refuse(L, "a fused kernel of %s reads more than %d tensors", sym_str(L->f->name), PTX_MAX_TENSORS), -1;
	pr->inputs[pr->nin] = u;
	return pr->at[u] = emit_ins(L, pr, (PtxIns){OP_PARAM, pr->nin++, 0, 0, DT_F32});
}

/* What a reduction's sum is multiplied by: one over the global length
 * for a mean (a split dim's ranks each divide their part by all of it,
 * as the simulator does), 1 for the others.  A reduction of one element
 * per rank (ir_reduce_ew) is that element times it. */
static double
red_scale(const Func *f, const Ins *in)
{
	return in->op == OP_MEAN ? 1.0 / (double)f->ins[in->arg[0]].ty.dim[in->axis] : 1.0;
}

/* The member m of the group as instructions; a stored 16-bit member is
 * rounded before later members read it, as the simulator stores it. */
static int
member(Low *L, Prog *pr, Val m)
{
	const Ins *in = &L->f->ins[m];
	PtxIns x = {in->op, -1, -1, 0, in->ty.dt};
	int r;
	if (in->op == OP_BROADCAST)
		return pr->at[m] = operand(L, pr, in->arg[0]);
	if (in->narg > 0)
		x.a = operand(L, pr, in->arg[0]);
	if (in->narg > 1)
		x.b = operand(L, pr, in->arg[1]);
	if (L->failed)
		return -1;
	if (ir_reduce_ew(L->f, in)) { /* the element, scaled for a mean */
		r = x.a;
		if (in->op == OP_MEAN) {
			int c = emit_ins(L, pr, (PtxIns){OP_CONST, 0, 0, red_scale(L->f, in), DT_F32});
			r = emit_ins(L, pr, (PtxIns){OP_MUL, x.a, c, 0, DT_F32});
		}
	} else
		r = emit_ins(L, pr, x);
	if (!in->internal && in->op != OP_CAST && (in->ty.dt == DT_BF16 || in->ty.dt == DT_F16))
		r = emit_ins(L, pr, (PtxIns){OP_CAST, r, -1, 0, in->ty.dt});
	return pr->at[m] = r;
}

/* ---- kernel arguments ---- */

static LArg
arg(Val v, int64_t off, int64_t roff)
{
	return (LArg){v, off, roff};
}

/* The group's materialized members become the kernel's output arguments,
 * after its inputs; frees the program's tables.  False if lowering failed. */
static bool
prog_end(Low *L, LKernel *k, Val group, Prog *pr)
{
	const Func *f = L->f;
	for (Val m = group; m < f->nins; m++)
		if (f->ins[m].group == group && !f->ins[m].internal)
			k->arg[k->narg++] = arg(m, 0, 0);
	free(pr->at);
	free(pr->inputs);
	return !L->failed;
}

/* The offset of the block of a sliced @repl operand: rank times its
 * block along dim d. */
static int64_t
slice_roff(Low *L, Val u, int d)
{
	int64_t st[LIM_RANK];
	if (d < 0)
		return 0;
	rowmajor(L, u, st);
	return L->f->ins[u].ty.dim[d] / L->P * st[d];
}

/* Strides of operand u over an iteration space of rank R (broadcast: 0). */
static void
bcast_strides(Low *L, Val u, int R, int64_t *st)
{
	const Type *t = &L->f->ins[u].ty;
	int64_t rm[LIM_RANK], d[LIM_RANK];
	rowmajor(L, u, rm);
	local_dims(L, u, d);
	for (int i = 0; i < R; i++) {
		int k = i - (R - t->rank);
		st[i] = k < 0 || d[k] == 1 ? 0 : rm[k];
	}
}

/* Which of the group's member reads of u slices it (an elementwise
 * operand under a split result), for its rank offset. */
static int
ew_slice_of(Low *L, Val a, Val u)
{
	const Func *f = L->f;
	for (Val m = a; m < f->nins; m++)
		if (f->ins[m].group == a)
			for (int i = 0; i < f->ins[m].narg; i++)
				if (f->ins[m].arg[i] == u && ir_ops[f->ins[m].op].cls != OC_MATMUL) {
					int d = ir_ew_slice(f, &f->ins[m], i);
					if (d >= 0)
						return d;
				}
	return -1;
}

/* ---- kernels ---- */

static LKernel *
new_kernel(Low *L, Val group)
{
	Lowered *lo = L->lo;
	LKernel *k;
	lo->kern = xrealloc(lo->kern, (size_t)(lo->nkern + 1) * sizeof *lo->kern);
	k = &lo->kern[lo->nkern++];
	memset(k, 0, sizeof *k);
	k->group = group;
	k->site = L->site++;
	k->blocks = xcalloc((size_t)L->P, sizeof *k->blocks);
	snprintf(k->name, sizeof k->name, "syn_%s_k%d", sym_str(L->f->name), L->lo->nkern - 1);
	return k;
}

/* The flag a band waits for: its input from the comm lane that comes last
 * there (the comm lane runs in order, so the others are done too). */
static void
band_flags(Low *L, int bi, PtxBlock *proto)
{
	const Blk *b = &L->g->b[bi];
	int best = -1;
	for (int j = 0; j < b->npred; j++) {
		const Blk *q = &L->g->b[b->pred[j]];
		if (q->lane != b->lane && (best < 0 || q->pos > L->g->b[best].pos))
			best = b->pred[j];
	}
	proto->in_flag = best >= 0 ? (uint32_t)L->g->b[best].flag : PTX_NO_FLAG;
	proto->in_epoch = 1;
	proto->out_flag = b->flag >= 0 ? (uint32_t)b->flag : PTX_NO_FLAG;
	proto->out_op = PTX_RAISE_ADD;
	proto->out_value = 1;
}

/* Whether any of a kernel's bands waits on a flag (band_flags, as each of
 * its entries will), or with `raises` raises one too.  Asked before the
 * entries are made: the answer picks their rows per entry (lower_rows) or
 * the matmul's tile (stream-K cannot take flags). */
static bool
bands_flagged(Low *L, const int *bl, int nb, bool raises)
{
	for (int i = 0; i < nb; i++) {
		PtxBlock proto = {0};
		band_flags(L, bl[i], &proto);
		if (proto.in_flag != PTX_NO_FLAG || (raises && proto.out_flag != PTX_NO_FLAG))
			return true;
	}
	return false;
}

static void
append(LKernel *k, int r, int *n, const PtxBlock *e)
{
	k->blocks[r] = xrealloc(k->blocks[r], (size_t)(n[r] + 1) * sizeof(PtxBlock));
	k->blocks[r][n[r]++] = *e;
}

/* After a kernel is emitted: its entries (the same count on every rank),
 * and its workspace (PtxKernel.work: a group row kernel's partials, a
 * stream-K matmul's sums) as its last tensor, the launcher's scratch. */
static bool
finish_entries(Low *L, LKernel *k, int *n)
{
	if (k->k.work)
		k->arg[k->narg++] = (LArg){LARG_WORK, k - L->lo->kern, 0};
	for (int r = 1; r < L->P; r++)
		if (n[r] != n[0])
			return refuse(L, "kernel %s has %d blocks on rank 0 but %d on rank %d", k->name, n[0], n[r], r);
	k->nblocks = n[0];
	return true;
}

/* The plan blocks of group `a` (or of the own-block copy of all_gather a),
 * in lane order. */
static int
group_blocks(Low *L, Val a, BlkKind kind, int *out)
{
	int n = 0;
	for (int k = 0; k < L->p->norder[LANE_COMPUTE]; k++) {
		int bi = L->p->order[LANE_COMPUTE][k];
		if (L->g->b[bi].node == a && L->g->b[bi].kind == kind)
			out[n++] = bi;
	}
	return n;
}

/* The reduce_scatter that group a's matmul pushes into (sched_push), or -1. */
static Val
push_target(Low *L, Val a)
{
	for (Val v = 0; v < L->f->nins; v++)
		if (L->f->ins[v].op == OP_REDUCE_SCATTER && L->f->ins[L->f->ins[v].arg[0]].group == a && sched_push(L->p, v))
			return v;
	return -1;
}

/* A band box's tiles, for box_tiles: tile rows x0..x1 and columns
 * y0..y1 of batch z; rows_q > 0 routes each tile to the owner of its first
 * row, an owner holding rows_q rows. */
typedef struct TileBox {
	const PtxBlock *proto;
	int bm, bn;
	int64_t x0, x1, y0, y1, z, rows_q;
} TileBox;

/* The first tile (of bm rows or columns) that starts at or past `at`. */
static int64_t
first_tile(int64_t at, int bm)
{
	return (at + bm - 1) / bm;
}

/* The box's tiles of tile rows lo..hi, in grouped order: TILE_GROUP tile
 * rows at a time, column by column, so a wave of CTAs shares its A rows
 * and B columns in L2.  owned[q] counts the tiles routed to owner q. */
static void
box_tiles(LKernel *k, int r, int *n, const TileBox *b, int64_t lo, int64_t hi, int *owned)
{
	lo = lo > b->x0 ? lo : b->x0;
	hi = hi < b->x1 ? hi : b->x1;
	for (int64_t gx = lo; gx < hi; gx += TILE_GROUP)
		for (int64_t y = b->y0; y < b->y1; y++)
			for (int64_t x = gx; x < gx + TILE_GROUP && x < hi; x++) {
				PtxBlock e = *b->proto;
				e.x = (uint32_t)x, e.y = (uint32_t)y, e.z = (uint32_t)b->z;
				if (b->rows_q > 0) { /* to the owner of its rows */
					int64_t q = x * b->bm / b->rows_q;
					e.out_op |= (uint32_t)(q + 1) << PTX_ROUTE_SHIFT;
					owned[q]++;
				}
				append(k, r, n, &e);
			}
}

static bool
lower_matmul(Low *L, Val a, const int *bl, int nb)
{
	const Func *f = L->f;
	const Ins *mm = &f->ins[a];
	Val A = mm->arg[0], B = mm->arg[1];
	int R = mm->ty.rank, sl[2], *n, *owned;
	int64_t od[LIM_RANK], ad[LIM_RANK], bd[LIM_RANK], ast[LIM_RANK], bst[LIM_RANK], rows_q = 0;
	Val pv;
	PtxMatmulSpec s;
	Prog pr;
	LKernel *k;
	const PtxTile *t;
	memset(&s, 0, sizeof s);
	local_dims(L, a, od);
	local_dims(L, A, ad);
	local_dims(L, B, bd);
	rowmajor(L, A, ast);
	rowmajor(L, B, bst);
	ir_mm_slices(f, mm, sl);
	if (R > 3)
		return refuse(L, "matmul %%%d has %d batch dims; the PTX backend takes one", a, R - 2);
	k = new_kernel(L, a);
	s.name = k->name;
	s.ab = mm->ty.dt;
	s.m = od[R - 2];
	s.n = od[R - 1];
	s.k = ad[f->ins[A].ty.rank - 1] / (sl[0] == f->ins[A].ty.rank - 1 ? L->P : 1);
	s.batch = R == 3 ? od[0] : 1;
	s.lda = ast[f->ins[A].ty.rank - 2];
	s.ldb = bst[f->ins[B].ty.rank - 2]; /* bt: the pitch of w's rows, B's columns */
	s.bt = mm->trans_b;
	s.batch_a = R == 3 && f->ins[A].ty.rank == 3 && ad[0] != 1 ? ast[0] : 0;
	s.batch_b = R == 3 && f->ins[B].ty.rank == 3 && bd[0] != 1 ? bst[0] : 0;
	k->arg[k->narg++] = arg(A, 0, slice_roff(L, A, sl[0]));
	k->arg[k->narg++] = arg(B, 0, slice_roff(L, B, ir_mm_bdim(mm, sl[1], f->ins[B].ty.rank)));
	/* the epilogue: every other member, reading the accumulator */
	prog_begin(f, &pr, &s.epi, a);
	for (Val m = a; m < f->nins && !L->failed; m++)
		if (f->ins[m].group == a) {
			int r = m == a ? operand(L, &pr, a) : member(L, &pr, m);
			if (!f->ins[m].internal && s.nout < PTX_MAX_TENSORS && r >= 0) {
				int64_t st[LIM_RANK];
				s.epi.out[s.epi.nout++] = (PtxOut){r, s.nout};
				s.out[s.nout].dt = f->ins[m].ty.dt;
				bcast_strides(L, m, R, st);
				for (int i = 0; i < 3; i++) /* {batch, row, col} */
					s.out[s.nout].stride[i] = i - (3 - R) >= 0 ? st[i - (3 - R)] : 0;
				s.nout++;
			}
		}
	for (int i = 0; i < pr.nin; i++) {
		int64_t st[LIM_RANK];
		bcast_strides(L, pr.inputs[i], R, st);
		s.in[i].dt = f->ins[pr.inputs[i]].ty.dt;
		for (int j = 0; j < 3; j++)
			s.in[i].stride[j] = j - (3 - R) >= 0 ? st[j - (3 - R)] : 0;
		k->arg[k->narg++] = arg(pr.inputs[i], 0, slice_roff(L, pr.inputs[i], ew_slice_of(L, a, pr.inputs[i])));
	}
	s.nin = pr.nin;
	if (!prog_end(L, k, a, &pr))
		return false;
	if (s.epi.nout == 1 && s.epi.nins == 1) /* only the accumulator: no program */
		s.epi.nins = s.epi.nout = 0;
	/* --tune may ask for another tile; one the matmul cannot use is refused */
	pv = push_target(L, a);
	{ /* a pushed matmul's tile is chosen as the routed kernel it will be */
		PtxMatmulSpec shape = s;
		shape.route = pv >= 0 ? L->P : 0;
		s.tile = L->p->tile > 0 && L->p->tile <= ptx_ntiles ? L->p->tile - 1
		                                                    : ptx_matmul_shape_tile(&shape, L->p->compute_sms);
	}
	{
		const char *why = ptx_matmul_check(&s);
		if (why)
			return refuse(L, "matmul %%%d: %s", a, why);
	}
	if (pv >= 0) { /* the plan says pushed: a tile that cannot route is refused */
		const char *why;
		s.route = L->P;
		if ((why = ptx_matmul_check(&s)))
			return refuse_at(L, f->ins[pv].span, "reduce_scatter %%%d cannot be pushed by matmul %%%d (%s); compile "
			                 "with --no-push", pv, a, why);
		rows_q = ty_local_dim(&f->ins[a].ty, R - 2, L->P) / L->P;
	}
	if (L->p->tile <= 0 && pv < 0 && !bands_flagged(L, bl, nb, true)) /* nothing waits: the last waves may split entries */
		s.tile = ptx_matmul_streamk(&s, L->p->compute_sms);
	n = xcalloc((size_t)L->P, sizeof(int)); /* after the refusals, which leaked it */
	owned = xcalloc((size_t)L->P, sizeof(int));
	t = &ptx_tiles[s.tile];
	/* bands -> tiles, per rank */
	for (int i = 0; i < nb; i++) {
		const Blk *b = &L->g->b[bl[i]];
		PtxBlock proto = {0};
		int before = n[0];
		memset(owned, 0, (size_t)L->P * sizeof(int));
		band_flags(L, bl[i], &proto);
		if (t->cluster > 1 && (proto.in_flag != PTX_NO_FLAG || proto.out_flag != PTX_NO_FLAG)) {
			/* both CTAs of an entry would raise its flag, each after its own half */
			free(owned);
			free(n);
			return refuse(L, "matmul %%%d: tile %s splits an entry over a cluster's CTAs, which cannot wait on or "
			              "raise the plan's flags yet; pick another --tile", a, t->name);
		}
		if (t->streamk && (proto.in_flag != PTX_NO_FLAG || proto.out_flag != PTX_NO_FLAG)) {
			/* a split entry's flag would be raised by whichever CTA finishes it, and a
			 * wait given up on would leave its counter dirty for the next call */
			free(owned);
			free(n);
			return refuse(L, "matmul %%%d: stream-K tile %s splits entries over CTAs, which cannot wait on or "
			              "raise the plan's flags; pick another --tile", a, t->name);
		}
		for (int r = 0; r < L->P; r++) {
			Box abs[2 * MAXBOX];
			int nbox = b->nout ? blk_abs_boxes(f, &b->out[0], r, abs) : 0;
			for (int q = 0; q < nbox; q++) {
				int64_t m0 = abs[q].lo[R - 2], m1 = abs[q].hi[R - 2], n0 = abs[q].lo[R - 1], n1 = abs[q].hi[R - 1];
				if (m0 % t->bm || (m1 % t->bm && m1 != s.m) || n0 % t->bn || (n1 % t->bn && n1 != s.n)) {
					free(owned);
					free(n);
					return refuse(L, "a band of matmul %%%d is not made of whole %dx%d tiles", a, t->bm, t->bn);
				}
			}
			/* pushed: rotated by rank, rank r computing owner r + 1's
			 * tiles first and its own last, so at every moment the ranks
			 * push to different owners (each link busy both ways, no
			 * owner's inbound link shared by every sender) and the
			 * kernel's last tiles are local stores */
			for (int j = 1; j <= (pv >= 0 ? L->P : 1); j++) {
				int64_t o = (r + j) % L->P;
				for (int q = 0; q < nbox; q++) {
					TileBox tb = {&proto, t->bm, t->bn, abs[q].lo[R - 2] / t->bm, first_tile(abs[q].hi[R - 2], t->bm),
					              abs[q].lo[R - 1] / t->bn, first_tile(abs[q].hi[R - 1], t->bn), 0,
					              pv >= 0 ? rows_q : 0};
					int64_t lo = pv >= 0 ? first_tile(o * rows_q, t->bm) : tb.x0;
					int64_t hi = pv >= 0 ? first_tile((o + 1) * rows_q, t->bm) : tb.x1;
					for (tb.z = R == 3 ? abs[q].lo[0] : 0; tb.z < (R == 3 ? abs[q].hi[0] : 1); tb.z++)
						box_tiles(k, r, n, &tb, lo, hi, owned);
				}
			}
		}
		L->entries[bl[i]] = n[0] - before;
		if (pv >= 0) { /* each owner's flag gets the band's tiles of its rows, from every rank */
			for (int q = 1; q < L->P; q++)
				if (owned[q] != owned[0])
					pv = -2;
			L->entries[bl[i]] = owned[0];
		}
	}
	if (pv == -2) { /* owners unevenly served: no push, as lowered without one */
		free(owned);
		free(n);
		return refuse(L, "matmul %%%d: its bands give the owners of reduce_scatter's blocks unequal tile counts; "
		              "compile with --no-push", a);
	}
	if (pv >= 0) {
		L->pushed[pv] = true;
		k->route_rows = rows_q;
		k->route_bm = t->bm;
	}
	ptx_emit_matmul(&L->lo->ptx, &s, &k->k);
	finish_entries(L, k, n);
	free(owned);
	free(n);
	return !L->failed;
}

/* Entries of an element- or row-blocked kernel: band boxes are contiguous
 * runs (bands cut the leading dim), `unit` elements per entry. */
static void
linear_entries(Low *L, LKernel *k, Val v, const int *bl, int nb, int64_t unit, int *n)
{
	int64_t st[LIM_RANK];
	const Type *t = &L->f->ins[v].ty;
	rowmajor(L, v, st);
	for (int i = 0; i < nb; i++) {
		const Blk *b = &L->g->b[bl[i]];
		PtxBlock proto = {0};
		int before = n[0];
		band_flags(L, bl[i], &proto);
		for (int r = 0; r < L->P; r++) {
			Box abs[2 * MAXBOX];
			int nbox = b->nout ? blk_abs_boxes(L->f, &b->out[0], r, abs) : 0;
			if (!b->nout) { /* a whole-tensor block */
				abs[0] = (Box){{0}, {0}, {0}};
				for (int d = 0; d < t->rank; d++)
					abs[0].hi[d] = ty_local_dim(t, d, L->P);
				nbox = 1;
			}
			for (int q = 0; q < nbox; q++) {
				int64_t lo = 0, hi = 1;
				for (int d = 0; d < t->rank; d++)
					lo += abs[q].lo[d] * st[d];
				for (int d = 0; d < t->rank; d++)
					hi *= abs[q].hi[d] - abs[q].lo[d];
				hi += lo;
				for (int64_t x = lo / unit; x * unit < hi; x++) {
					PtxBlock e = proto;
					e.x = (uint32_t)x;
					append(k, r, n, &e);
				}
			}
		}
		L->entries[bl[i]] = n[0] - before;
	}
}

/* The gcd of every band's first element (row-major offset in v). */
static int64_t
band_gcd(Low *L, Val v, const int *bl, int nb)
{
	int64_t g = 0, st[LIM_RANK];
	const Type *t = &L->f->ins[v].ty;
	rowmajor(L, v, st);
	for (int i = 0; i < nb; i++) {
		const Blk *b = &L->g->b[bl[i]];
		for (int r = 0; r < L->P && b->nout; r++) {
			Box abs[2 * MAXBOX];
			int nbox = blk_abs_boxes(L->f, &b->out[0], r, abs);
			for (int q = 0; q < nbox; q++) {
				int64_t off = 0;
				for (int d = 0; d < t->rank; d++)
					off += abs[q].lo[d] * st[d];
				g = gcd(g, off);
			}
		}
	}
	return gcd(g, ty_local_numel(t, L->P));
}

/* Elements per entry: a divisor of every band edge, near 64 Ki. */
static int64_t
unit_for(Low *L, Val v, const int *bl, int nb, int64_t inner)
{
	int64_t g = band_gcd(L, v, bl, nb);
	(void)inner;
	while (g > 65536 && g % 2 == 0)
		g /= 2;
	return g > 0 ? g : 1;
}

static bool
lower_ew(Low *L, Val a, const int *bl, int nb)
{
	const Func *f = L->f;
	const Type *t = &f->ins[a].ty;
	int R = t->rank ? t->rank : 1, *n;
	int64_t d[LIM_RANK], inner = 1;
	PtxEwSpec s;
	Prog pr;
	LKernel *k = new_kernel(L, a);
	memset(&s, 0, sizeof s);
	s.name = k->name;
	local_dims(L, a, d);
	s.rank = R;
	for (int i = 0; i < R; i++)
		s.dim[i] = t->rank ? d[i] : 1;
	for (int i = 1; i < R; i++)
		inner *= s.dim[i];
	prog_begin(f, &pr, &s.prog, -1);
	for (Val m = a; m < f->nins && !L->failed; m++)
		if (f->ins[m].group == a) {
			int r = member(L, &pr, m);
			if (!f->ins[m].internal && r >= 0 && s.nout < PTX_MAX_TENSORS) {
				s.prog.out[s.prog.nout++] = (PtxOut){r, s.nout};
				s.out[s.nout].dt = f->ins[m].ty.dt;
				bcast_strides(L, m, R, s.out[s.nout].stride);
				if (!t->rank)
					s.out[s.nout].stride[0] = 1;
				s.nout++;
			}
		}
	for (int i = 0; i < pr.nin; i++) {
		s.in[i].dt = f->ins[pr.inputs[i]].ty.dt;
		bcast_strides(L, pr.inputs[i], t->rank, s.in[i].stride);
		k->arg[k->narg++] = arg(pr.inputs[i], 0, slice_roff(L, pr.inputs[i], ew_slice_of(L, a, pr.inputs[i])));
	}
	s.nin = pr.nin;
	if (!prog_end(L, k, a, &pr))
		return false;
	s.block_elems = unit_for(L, a, bl, nb, inner);
	{
		const char *why = ptx_ew_check(&s);
		if (why)
			return refuse(L, "elementwise %%%d: %s", a, why);
	}
	n = xcalloc((size_t)L->P, sizeof(int)); /* after the refusals, which leaked it */
	linear_entries(L, k, a, bl, nb, s.block_elems, n);
	ptx_emit_ew(&L->lo->ptx, &s, &k->k);
	finish_entries(L, k, n);
	free(n);
	return !L->failed;
}

/* A copy kernel: out (offset, strides) = in (offset, strides) over dims;
 * diag: NULL, or the causal mask's diagonal (-inf past it in the last two
 * dims). */
static bool
lower_copy(Low *L, Val group, const int *bl, int nb, int rank, const int64_t *dims, LArg in, const int64_t *ist,
           LArg out, const int64_t *ost, DType dt, bool raise, const int64_t *diag)
{
	PtxEwSpec s;
	LKernel *k = new_kernel(L, group);
	int *n;
	memset(&s, 0, sizeof s);
	s.name = k->name;
	s.rank = rank;
	memcpy(s.dim, dims, (size_t)rank * sizeof *dims);
	s.nin = s.nout = 1;
	s.in[0].dt = s.out[0].dt = dt;
	memcpy(s.in[0].stride, ist, (size_t)rank * sizeof *ist);
	memcpy(s.out[0].stride, ost, (size_t)rank * sizeof *ost);
	s.prog.ins[s.prog.nins++] = (PtxIns){OP_PARAM, 0, 0, 0, DT_F32};
	s.prog.out[s.prog.nout++] = (PtxOut){0, 0};
	s.block_elems = 0;
	s.causal = diag != NULL;
	s.diag = diag ? *diag : 0;
	{
		const char *why = ptx_ew_check(&s);
		if (why)
			return refuse(L, "copy for %%%d: %s", group, why);
	}
	n = xcalloc((size_t)L->P, sizeof(int)); /* after the refusal, which leaked it */
	k->arg[k->narg++] = in;
	k->arg[k->narg++] = out;
	/* the plan's block: every entry waits for its input; only the last
	 * copy of a group raises its flag */
	for (int i = 0; i < nb; i++) {
		PtxBlock proto = {0};
		int64_t total = 1, E = 65536;
		int before = n[0];
		band_flags(L, bl[i], &proto);
		if (!raise)
			proto.out_flag = PTX_NO_FLAG;
		for (int d = 0; d < rank; d++)
			total *= dims[d];
		for (int r = 0; r < L->P; r++)
			for (int64_t x = 0; x * E < total; x++) {
				PtxBlock e = proto;
				e.x = (uint32_t)x;
				append(k, r, n, &e);
			}
		if (raise)
			L->entries[bl[i]] = n[0] - before;
	}
	ptx_emit_ew(&L->lo->ptx, &s, &k->k);
	finish_entries(L, k, n);
	free(n);
	return !L->failed;
}

/* A reshape's kernel is a flat copy of its operand's local elements, so
 * where ir_view_reshape allows, it is a view of the operand's buffer (no
 * kernel, no 2 x its bytes of HBM traffic), or as the op's result the
 * operand is stored straight into the caller's buffer -- if no block of it
 * waits on or raises a flag (a flag another lane waits for, or a wait a
 * kernel after it would have relied on) and the operand is not already a
 * view.  Values are written only by their own producer, so sharing a
 * buffer is safe. */
static bool
reshape_view(Low *L, Val a, const int *bl, int nb)
{
	const Func *f = L->f;
	Val x = f->ins[a].arg[0];
	bool res = false;
	for (int i = 0; i < f->nout; i++)
		res |= f->out[i] == a;
	if (!ir_view_reshape(f, a) || (res && L->lo->alias[x] >= 0))
		return false;
	for (int i = 0; i < nb; i++) {
		PtxBlock proto = {0};
		band_flags(L, bl[i], &proto);
		if (proto.in_flag != PTX_NO_FLAG || proto.out_flag != PTX_NO_FLAG)
			return false;
	}
	if (res) /* the result: x's kernel stores into the caller's buffer */
		L->lo->alias[x] = a;
	else
		L->lo->alias[a] = L->lo->alias[x] >= 0 ? L->lo->alias[x] : x;
	return true;
}

static bool
lower_shape(Low *L, Val a, const int *bl, int nb)
{
	const Func *f = L->f;
	const Ins *in = &f->ins[a];
	Val x = in->narg ? in->arg[0] : -1;
	int64_t od[LIM_RANK], xd[LIM_RANK], ost[LIM_RANK], xst[LIM_RANK], t;
	int R = in->ty.rank;
	if (x < 0)
		return refuse(L, "%s %%%d has no operand", ir_ops[in->op].name, a);
	local_dims(L, a, od);
	local_dims(L, x, xd);
	rowmajor(L, a, ost);
	rowmajor(L, x, xst);
	switch (in->op) {
	case OP_RESHAPE: {
		int64_t nelem = ty_local_numel(&in->ty, L->P), one = 1;
		if (reshape_view(L, a, bl, nb))
			return true;
		return lower_copy(L, a, bl, nb, 1, &nelem, arg(x, 0, 0), &one, arg(a, 0, 0), &one, in->ty.dt, true, NULL);
	}
	case OP_TRANSPOSE:
		t = xst[in->axis];
		xst[in->axis] = xst[in->axis2];
		xst[in->axis2] = t;
		return lower_copy(L, a, bl, nb, R, od, arg(x, 0, 0), xst, arg(a, 0, 0), ost, in->ty.dt, true, NULL);
	case OP_CAUSAL:
		return lower_copy(L, a, bl, nb, R, od, arg(x, 0, 0), xst, arg(a, 0, 0), ost, in->ty.dt, true, &in->a);
	case OP_SLICE:
		return lower_copy(L, a, bl, nb, R, od, arg(x, in->a * xst[in->axis], 0), xst, arg(a, 0, 0), ost, in->ty.dt, true, NULL);
	case OP_SCATTER:
		return lower_copy(L, a, bl, nb, R, od, arg(x, 0, xd[in->ty.pl.dim] / L->P * xst[in->ty.pl.dim]), xst,
		                  arg(a, 0, 0), ost, in->ty.dt, true, NULL);
	case OP_CONCAT: {
		int64_t at = 0;
		for (int i = 0; i < in->narg; i++) {
			int64_t pd[LIM_RANK], pst[LIM_RANK];
			local_dims(L, in->arg[i], pd);
			rowmajor(L, in->arg[i], pst);
			if (!lower_copy(L, a, bl, nb, R, pd, arg(in->arg[i], 0, 0), pst, arg(a, at * ost[in->axis], 0), ost,
			                in->ty.dt, i == in->narg - 1, NULL))
				return false;
			at += pd[in->axis];
		}
		return true;
	}
	default:
		return refuse(L, "%s %%%d has no PTX lowering yet", ir_ops[in->op].name, a);
	}
}

/* ---- row groups: a reduction with the work before and after it ----
 * (ir/fuse.c).  Stage k's pre program computes the value reduced, per
 * element; its post program the per-row work that follows, up to the
 * stage's result; the map every stored per-element member.  A member read
 * in several programs is computed in each (values before a reduction are
 * recomputed, never stored). */

typedef struct RowLow {
	Low *L;
	Val a;
	const RowGroup *rg;
	const int *stage_of;
	Val in[PTX_MAX_TENSORS]; /* the kernel's inputs, in order */
	int nin;
	PtxEwProg *g;            /* the program being built */
	int *at;                 /* value -> its instruction in g, -1 */
	int post;                /* g is stage `post`'s post program, else -1 */
} RowLow;

static int
rl_ins(RowLow *r, PtxIns x)
{
	if (r->g->nins == PTX_MAX_INS)
		return refuse(r->L, "a fused row kernel of %s needs more than %d instructions", sym_str(r->L->f->name),
		              PTX_MAX_INS), -1;
	r->g->ins[r->g->nins] = x;
	return r->g->nins++;
}

static int
rl_input(RowLow *r, Val u)
{
	for (int i = 0; i < r->nin; i++)
		if (r->in[i] == u)
			return rl_ins(r, (PtxIns){OP_PARAM, i, 0, 0, DT_F32});
	return refuse(r->L, "row group %%%d reads %%%d, which is not among its inputs", r->a, u), -1;
}

/* Value v in the program being built. */
static int
rl_value(RowLow *r, Val v)
{
	const Func *f = r->L->f;
	const Ins *in = &f->ins[v];
	int k = in->group == r->a ? r->stage_of[v] : -1, x;
	if (r->at[v] >= 0 || r->L->failed)
		return r->at[v];
	if (in->op == OP_CONST)
		return r->at[v] = rl_ins(r, (PtxIns){OP_CONST, 0, 0, in->c, in->ty.dt == DT_I32 ? DT_I32 : DT_F32});
	if (in->group != r->a)
		return r->at[v] = rl_input(r, v);
	if (k >= 0 && k != r->post && r->rg->res[k] == v) /* a finished stage */
		return r->at[v] = rl_ins(r, (PtxIns){PTX_OP_STAGE, k, 0, 0, DT_F32});
	if (ir_ops[in->op].cls == OC_REDUCE && !ir_reduce_ew(f, in)) { /* a stage */
		int acc = rl_ins(r, (PtxIns){PTX_OP_ACC, 0, 0, 0, DT_F32}), c;
		if (k != r->post)
			return refuse(r->L, "row group %%%d reads reduction %%%d before it is done", r->a, v), -1;
		if (in->op != OP_MEAN)
			return r->at[v] = acc;
		/* the global length: the rows kernel sums */
		c = rl_ins(r, (PtxIns){OP_CONST, 0, 0, red_scale(f, in), DT_F32});
		return r->at[v] = rl_ins(r, (PtxIns){OP_MUL, acc, c, 0, DT_F32});
	}
	if (in->op == OP_BROADCAST)
		return r->at[v] = rl_value(r, in->arg[0]);
	if (ir_reduce_ew(f, in)) { /* per-row work: the element, scaled for a mean */
		x = rl_value(r, in->arg[0]);
		if (r->L->failed)
			return -1;
		if (in->op == OP_MEAN) {
			int c = rl_ins(r, (PtxIns){OP_CONST, 0, 0, red_scale(f, in), DT_F32});
			x = rl_ins(r, (PtxIns){OP_MUL, x, c, 0, DT_F32});
		}
	} else {
		PtxIns p = {in->op, -1, -1, 0, in->ty.dt};
		if (in->narg > 0)
			p.a = rl_value(r, in->arg[0]);
		if (in->narg > 1)
			p.b = rl_value(r, in->arg[1]);
		if (r->L->failed)
			return -1;
		x = rl_ins(r, p);
	}
	/* a stored 16-bit member is rounded before later members read it, as
	 * the simulator stores it */
	if (!in->internal && in->op != OP_CAST && (in->ty.dt == DT_BF16 || in->ty.dt == DT_F16))
		x = rl_ins(r, (PtxIns){OP_CAST, x, -1, 0, in->ty.dt});
	return r->at[v] = x;
}

/* Starts program g (post: the stage whose post program it is, or -1). */
static void
rl_begin(RowLow *r, PtxEwProg *g, int post)
{
	memset(g, 0, sizeof *g);
	r->g = g;
	r->post = post;
	for (Val v = 0; v < r->L->f->nins; v++)
		r->at[v] = -1;
}

/* The kernel's inputs: a tensor with whole rows first (it tells the rows
 * kernel how rows lie), then the others in the order members read them. */
static bool
rl_inputs(RowLow *r, PtxRowsSpec *s)
{
	const Func *f = r->L->f;
	int R = f->ins[r->rg->space].ty.rank, first = -1;
	for (Val m = r->a; m < f->nins; m++)
		for (int i = 0; f->ins[m].group == r->a && i < f->ins[m].narg; i++) {
			Val u = f->ins[m].arg[i];
			bool seen = f->ins[u].group == r->a || f->ins[u].op == OP_CONST;
			for (int j = 0; j < r->nin && !seen; j++)
				seen = r->in[j] == u;
			if (seen)
				continue;
			if (r->nin == PTX_MAX_TENSORS)
				return refuse(r->L, "row group %%%d reads more than %d tensors", r->a, PTX_MAX_TENSORS);
			if (!ir_row_strides(f, r->rg, u, s->in[r->nin].stride))
				return refuse(r->L, "row group %%%d reads %%%d in a layout its rows cannot index", r->a, u);
			s->in[r->nin].dt = f->ins[u].ty.dt;
			if (first < 0 && (r->rg->axis == R - 1 ? s->in[r->nin].stride[1] == 1 && s->in[r->nin].stride[0] > 0
			                                       : s->in[r->nin].stride[0] == 1 && s->in[r->nin].stride[1] > 1))
				first = r->nin;
			r->in[r->nin++] = u;
		}
	if (first < 0)
		return refuse(r->L, "row group %%%d reads no whole rows", r->a);
	if (first > 0) { /* whole rows to the front */
		PtxTensor t = s->in[first];
		Val u = r->in[first];
		memmove(&s->in[1], &s->in[0], (size_t)first * sizeof s->in[0]);
		memmove(&r->in[1], &r->in[0], (size_t)first * sizeof r->in[0]);
		s->in[0] = t;
		r->in[0] = u;
	}
	s->nin = r->nin;
	return true;
}

/* The stored members as output tensors (in value order, as prog_end
 * passes them) and the programs that compute them. */
static bool
rl_programs(RowLow *r, PtxRowsSpec *s)
{
	const Func *f = r->L->f;
	for (int k = 0; k < r->rg->nstage; k++) {
		PtxRowStage *st = &s->stage[s->nstage++];
		const Ins *rd = &f->ins[r->rg->stage[k]];
		st->red = rd->op == OP_MEAN ? OP_SUM : rd->op;
		st->out = -1;
		rl_begin(r, &st->pre, -1);
		st->pre.out[st->pre.nout++] = (PtxOut){rl_value(r, rd->arg[0]), 0};
		if (st->pre.nins == 1 && st->pre.ins[0].op == OP_PARAM && st->pre.ins[0].a == 0)
			st->pre.nins = st->pre.nout = 0; /* reduces in[0] */
		rl_begin(r, &st->post, k);
		st->post.out[st->post.nout++] = (PtxOut){rl_value(r, r->rg->res[k]), 0};
		if (st->post.nins == 1 && st->post.ins[0].op == PTX_OP_ACC)
			st->post.nins = st->post.nout = 0; /* the reduction itself */
	}
	rl_begin(r, &s->map, -1);
	for (Val m = r->a; m < f->nins && !r->L->failed; m++) {
		const Ins *in = &f->ins[m];
		int k = r->stage_of[m];
		if (in->group != r->a || in->internal)
			continue;
		if (s->nout == PTX_MAX_TENSORS)
			return refuse(r->L, "row group %%%d stores more than %d tensors", r->a, PTX_MAX_TENSORS);
		s->out[s->nout].dt = in->ty.dt;
		if (k >= 0) { /* per row: the stage's result, stored by the stage */
			if (r->rg->res[k] != m)
				return refuse(r->L, "row group %%%d stores %%%d, which is not a stage's result", r->a, m);
			s->stage[k].out = s->nout;
			s->out[s->nout].stride[0] = 1;
			s->out[s->nout].stride[1] = 0;
		} else {
			ir_row_strides(f, r->rg, m, s->out[s->nout].stride);
			s->map.out[s->map.nout++] = (PtxOut){rl_value(r, m), s->nout};
		}
		s->nout++;
	}
	if (!s->map.nout)
		s->map.nins = 0;
	return !r->L->failed;
}

/* Block-list entries of a row kernel: the rows of every band, `rb` a
 * block (bands cut the dim rows are laid out by, so each is one run). */
static void
row_entries(Low *L, LKernel *k, const RowGroup *rg, const int *bl, int nb, int rb, int *n, int64_t *gcd_out)
{
	const Func *f = L->f;
	const Type *ts = &f->ins[rg->space].ty;
	int64_t g = 0, sd[LIM_RANK];
	ty_local_shape(ts, L->P, sd);
	for (int i = 0; i < nb; i++) {
		const Blk *b = &L->g->b[bl[i]];
		PtxBlock proto = {0};
		int before = n[0];
		band_flags(L, bl[i], &proto);
		for (int r = 0; r < L->P; r++) {
			Box abs[2 * MAXBOX];
			int nbox = blk_abs_boxes(f, &b->out[0], r, abs);
			for (int q = 0; q < nbox; q++) {
				Box sb = blk_space_box(f, rg->space, b->out[0].v, &abs[q]);
				int64_t lo = 0, len = 1, mult = 1;
				for (int d = ts->rank - 1; d >= 0; d--)
					if (d != rg->axis) {
						lo += sb.lo[d] * mult;
						len *= sb.hi[d] - sb.lo[d];
						mult *= sd[d];
					}
				if (gcd_out) {
					g = gcd(g, lo);
					continue;
				}
				for (int64_t x = lo / rb; x * rb < lo + len; x++) {
					PtxBlock e = proto;
					e.x = (uint32_t)x;
					append(k, r, n, &e);
				}
			}
		}
		L->entries[bl[i]] = n[0] - before;
	}
	if (gcd_out)
		*gcd_out = g;
}

/* Rows per block-list entry: a divisor of every band's first row; strided
 * rows (a first-dim reduction) a power of two up to 256, fewer where that
 * leaves under 256 blocks -- or, split over a group of CTAs (grouped),
 * up to 128: the group keeps every SM busy, and 128 bf16 rows are 256
 * contiguous bytes of each reduced step, where 16 rows (the old rule at
 * 4096 columns) were one sector (rmsnorm over dim 0 of 50304 x 4096:
 * 0.62 ms in blocks of 16, 0.43 in blocks of 128 over 8 CTAs, 0.47 in
 * blocks of 64; bench/results/2026-12-06-cols-h100-d.md); rows with a CTA
 * each, one; else up to 8. */
static int
rows_per_block(const PtxRowsSpec *s, int64_t g, bool grouped)
{
	int rb;
	g = gcd(g, s->rows);
	if (s->in[0].stride[1] > 1 && s->in[0].stride[0] == 1) {
		/* up to 32 lanes of up to 8 rows each */
		rb = grouped ? 128 : 256;
		while (rb > 1 && ((!grouped && rb > 8 && s->rows / rb < 256) || g % rb || rb / ptx_rows_col_vec(s, rb) > 32))
			rb /= 2;
		return rb;
	}
	/* a CTA per row: entries of one row.  The persistent grid takes
	 * entries strided, and the more there are the less of its last round
	 * idles: 8192 rows of 8192 took 0.074-0.076 ms at a row an entry,
	 * 0.077-0.083 at 4 or 8 (rmsnorm, layernorm, softmax; tests/gpu/kernels.c
	 * perf-rows, bench/results/2026-12-04-host-probe-h200.md) */
	if (s->len >= PTX_ROWS_CTA_LEN)
		return 1;
	rb = 8;
	while (rb > 1 && g % rb)
		rb--;
	return rb;
}

/* Does an entry of the kernel, on any rank, wait on or raise a flag? */
static bool
rows_flags(const Low *L, const LKernel *k, const int *n)
{
	for (int r = 0; r < L->P; r++)
		for (int i = 0; i < n[r]; i++)
			if (k->blocks[r][i].in_flag != PTX_NO_FLAG || k->blocks[r][i].out_flag != PTX_NO_FLAG)
				return true;
	return false;
}

static bool
lower_rows(Low *L, Val a, const int *bl, int nb)
{
	const Func *f = L->f;
	int *stage_of = xmalloc(((size_t)f->nins + 1) * sizeof *stage_of);
	int *n = xcalloc((size_t)L->P, sizeof(int)), R;
	int64_t sd[LIM_RANK], g = 0;
	const char *why;
	RowGroup rg;
	PtxRowsSpec s;
	LKernel *k;
	RowLow r = {L, a, &rg, stage_of, {0}, 0, NULL, xmalloc(((size_t)f->nins + 1) * sizeof(int)), -1};
	bool ok = false;
	memset(&s, 0, sizeof s);
	if (ir_rowgroup(f, a, &rg, stage_of, &why) <= 0) {
		refuse(L, "row reduction %%%d: %s", a, why ? why : "no reduction");
		goto out;
	}
	R = f->ins[rg.space].ty.rank;
	ty_local_shape(&f->ins[rg.space].ty, L->P, sd);
	k = new_kernel(L, a);
	s.name = k->name;
	s.len = sd[rg.axis];
	s.rows = 1;
	for (int d = 0; d < R; d++)
		s.rows *= d == rg.axis ? 1 : sd[d];
	if (!rl_inputs(&r, &s) || !rl_programs(&r, &s))
		goto out;
	for (int i = 0; i < r.nin; i++)
		k->arg[k->narg++] = arg(r.in[i], 0, slice_roff(L, r.in[i], ew_slice_of(L, a, r.in[i])));
	for (Val m = a; m < f->nins; m++)
		if (f->ins[m].group == a && !f->ins[m].internal)
			k->arg[k->narg++] = arg(m, 0, 0);
	row_entries(L, k, &rg, bl, nb, 1, n, &g);
	if (bands_flagged(L, bl, nb, false) || L->p->share_sms) /* kernels beside it: see rows.c col_split */
		s.group = 1;
	s.rows_per_block = rows_per_block(&s, g, s.group != 1);
	if (s.group != 1 && s.rows_per_block == 128 && ptx_rows_group_of(&s) > 1) {
		/* blocks of 64 where a CTA's share of them stays in its shared
		 * memory: over 16 CTAs, not 128 rows over 32, the group's barriers
		 * are cheaper (on one H100 at 8192 x 8192 over dim 0: layernorm
		 * 0.1425 -> 0.1307 ms, softmax 0.1599 -> 0.1507, rmsnorm 0.1192 ->
		 * 0.1210; bench/results/2026-12-06-ccache-h100.md); only where 128
		 * rows take a group, the shapes that was measured on */
		PtxRowsSpec h = s;
		h.rows_per_block = 64;
		if (ptx_rows_col_held(&h))
			s.rows_per_block = 64;
	}
	if (s.group != 1 && ptx_rows_group_of(&s) <= 1) { /* no group after all: the blocks that fill the GPU alone */
		s.rows_per_block = rows_per_block(&s, g, false);
		s.group = 1; /* not one chosen anew for those blocks: the rule's sizes are for 128 rows */
	}
	{
		const char *bad = ptx_rows_check(&s);
		if (bad) {
			refuse(L, "row reduction %%%d: %s", a, bad);
			goto out;
		}
	}
	row_entries(L, k, &rg, bl, nb, s.rows_per_block, n, NULL);
	s.flagless = !rows_flags(L, k, n); /* no barriers between its entries (ptx_kernel_flagless) */
	ptx_emit_rows(&L->lo->ptx, &s, &k->k);
	ok = finish_entries(L, k, n);
out:
	free(stage_of);
	free(r.at);
	free(n);
	return ok && !L->failed;
}

/* The own block of an all_gather, copied into its slot by a kernel. */
static bool
lower_self(Low *L, Val v, const int *bl, int nb)
{
	const Ins *in = &L->f->ins[v];
	Val x = in->arg[0];
	int64_t xd[LIM_RANK], xst[LIM_RANK], yst[LIM_RANK];
	local_dims(L, x, xd);
	rowmajor(L, x, xst);
	rowmajor(L, v, yst);
	return lower_copy(L, v, bl, nb, in->ty.rank, xd, arg(x, 0, 0), xst, arg(v, 0, xd[in->axis] * yst[in->axis]), yst,
	                  in->ty.dt, true, NULL);
}

/* ---- comm steps ---- */

/* A box as one contiguous run of a row-major value: (offset, count). */
static bool
contiguous(Low *L, Val v, const Box *b, int64_t *off, int64_t *count)
{
	const Type *t = &L->f->ins[v].ty;
	int64_t st[LIM_RANK], d[LIM_RANK];
	int first = -1;
	rowmajor(L, v, st);
	local_dims(L, v, d);
	*off = 0;
	*count = 1;
	for (int i = 0; i < t->rank; i++) {
		int64_t ext = b->hi[i] - b->lo[i];
		*off += b->lo[i] * st[i];
		*count *= ext;
		if (first < 0 && ext > 1)
			first = i;
		else if (first >= 0 && i > first && ext != d[i])
			return false;
	}
	return true;
}

/* Block b of value v as runs of its row-major layout: *off its first
 * element; one run (pk->rows = 0) or `rows` runs of `width` elements
 * `pitch` apart.  Returns its element count, -1 when it is no 2-D
 * pattern.  Dims of extent 1 drop out; a dim and the run inside it merge
 * when the run covers one step of the dim. */
static int64_t
box_runs(Low *L, Val v, const Box *b, LPack *pk, int64_t *off)
{
	int64_t st[LIM_RANK], e[LIM_RANK], s[LIM_RANK], n = 1;
	int k = 0;
	rowmajor(L, v, st);
	*off = 0;
	for (int i = L->f->ins[v].ty.rank - 1; i >= 0; i--) {
		int64_t ext = b->hi[i] - b->lo[i];
		*off += b->lo[i] * st[i];
		n *= ext;
		if (ext == 1)
			continue;
		if (k > 0 && e[k - 1] * s[k - 1] == st[i])
			e[k - 1] *= ext;
		else
			e[k] = ext, s[k++] = st[i];
	}
	*pk = (LPack){0};
	if (k == 0 || (k == 1 && s[0] == 1))
		return n;
	if (k > 2 || (k == 2 && s[0] != 1))
		return -1;
	pk->rows = k == 2 ? e[1] : e[0];
	pk->pitch = k == 2 ? s[1] : s[0];
	pk->width = k == 2 ? e[0] : 1;
	return n;
}

/* One side of an all_to_all chunk (side 0: its send blocks, 1: its recv
 * blocks; blk_a2a_block): block q at *off + q * pk->stride, each one run
 * (pk->rows = 0) or pk->rows runs of pk->width, packed by 2-D copies
 * around the collective.  At P = 1 the one block is the whole chunk (a
 * stride of one row made the runtime refuse ulysses at P = 1: "send blocks
 * overlap").  Returns a block's element count, -1 when the blocks are no
 * evenly spaced 2-D pattern. */
static int64_t
a2a_side(Low *L, Val v, const Region *r, int side, LPack *pk, int64_t *off)
{
	const Func *f = L->f;
	Val val = side ? v : f->ins[v].arg[0];
	Box q = blk_a2a_block(f, v, r, side, 0);
	LPack qk;
	int64_t qoff, n = box_runs(L, val, &q, pk, off);
	pk->stride = n;
	for (int p = 1; p < L->P && n >= 0; p++) {
		q = blk_a2a_block(f, v, r, side, p);
		if (box_runs(L, val, &q, &qk, &qoff) != n || qk.rows != pk->rows || qk.pitch != pk->pitch)
			return -1;
		if (p == 1)
			pk->stride = qoff - *off;
		else if (qoff - *off != p * pk->stride)
			return -1;
	}
	return n;
}

/* The collective of each phase of a multi-node all_reduce chunk, and the
 * level it runs on (sched/blocks.c build_comm, sim/plan.c exec_phase). */
static const struct {
	CommOp op;
	bool cross;      /* across the nodes (N, G); else inside the node (G, 1) */
	bool send_stage; /* which side is the staging buffer */
	bool recv_stage;
} phase_of[3] = {
	{CO_REDUCE_SCATTER, false, false, true}, /* the chunk's run -> this GPU's 1/G share */
	{CO_ALL_REDUCE, true, true, true},       /* the share, in place, across the nodes */
	{CO_ALL_GATHER, false, true, false},     /* the node's shares -> the run of the result */
};

/* Where the shares of all_reduce v start in the launcher's staging buffer
 * (bytes): after those of every all_reduce before it, each 1/G of its
 * value, 256-byte aligned.  Every all_reduce of a --topo NxG plan runs in
 * phases (sched/blocks.c build_comm). */
static int64_t
stage_base(const Low *L, Val v)
{
	int64_t base = 0;
	for (Val u = 0; u < v; u++)
		if (L->f->ins[u].op == OP_ALL_REDUCE) {
			const Type *t = &L->f->ins[u].ty;
			base += ty_local_numel(t, L->P) / L->p->topo.gpus * ty_dtypes[t->dt].size;
			base = (base + 255) / 256 * 256;
		}
	return base;
}

/* Phase b->phase of a chunk of all_reduce v on --topo NxG: its run of n
 * elements at off (phase 0's input box, the same run of x and of the
 * result) cut into the node's G shares of n / G, this GPU's share kept in
 * the launcher's staging buffer between the phases, at off / G of the
 * all_reduce's slot there.  A slot per chunk, not one for all: the
 * scheduler interleaves the phases of chunks (c0.p0, c0.p1, c1.p0, c2.p0,
 * c1.p1, ...), so several chunks' shares wait at once.  A run the node
 * does not divide is refused (the simulator pads it; on GPUs that is one
 * more copy the cost model does not charge). */
static bool
lower_phase(Low *L, int bi, LStep *s)
{
	const Blk *b = &L->g->b[bi], *first = b - b->phase;
	const Ins *in = &L->f->ins[b->node];
	Val v = b->node, x = in->arg[0];
	int N = L->p->topo.nodes, G = L->p->topo.gpus;
	Box bx[2 * MAXBOX];
	int64_t off, cnt, slot;
	if (b->nphase != 3 || in->op != OP_ALL_REDUCE)
		return refuse(L, "%s %%%d has %d phases; only all_reduce's three are lowered", ir_ops[in->op].name, v, b->nphase);
	if (s->be != BE_NCCL) /* the levels' communicators are NCCL's (runtime/rt_world.c) */
		return refuse(L, "the phases of all_reduce %%%d run on the nccl backend only, not %s", v, comm_backends[s->be].name);
	blk_abs_boxes(L->f, &first->in[0], 0, bx);
	if (!contiguous(L, x, &bx[0], &off, &cnt))
		return refuse(L, "a chunk of all_reduce %%%d is not one contiguous run", v);
	if (cnt % G || off % G)
		return refuse_at(L, in->span,
		                 "chunk %d of all_reduce %%%d is %lld elements, which the %d GPUs of a node (--topo %dx%d) "
		                 "cannot share evenly in its reduce_scatter phase: on GPUs every chunk must be a multiple of %d "
		                 "elements (the simulator pads it); choose sizes the node divides, or compile without --topo",
		                 b->index, v, (long long)cnt, G, N, G, G);
	slot = stage_base(L, v) + off / G * ty_dtypes[in->ty.dt].size;
	s->ch.op = phase_of[b->phase].op;
	s->ch.count = (size_t)(cnt / G);
	s->ch.gsize = phase_of[b->phase].cross ? N : G;
	s->ch.gstride = phase_of[b->phase].cross ? G : 1;
	s->send = phase_of[b->phase].send_stage ? (LArg){LARG_STAGING, slot, 0} : arg(x, off, 0);
	s->recv = phase_of[b->phase].recv_stage ? (LArg){LARG_STAGING, slot, 0} : arg(v, off, 0);
	return true;
}

static bool
lower_step(Low *L, int bi)
{
	const Blk *b = &L->g->b[bi];
	const Func *f = L->f;
	Val v = b->node, x = f->ins[v].arg[0];
	const Ins *in = &f->ins[v];
	LStep *s;
	Box bx[2 * MAXBOX];
	int64_t off, cnt, xst[LIM_RANK], yst[LIM_RANK], xd[LIM_RANK], yd[LIM_RANK];
	Lowered *lo = L->lo;
	if (in->op == OP_RESHARD)
		return refuse(L, "reshard %%%d: run the autocomm pass before code generation", v);
	lo->step = xrealloc(lo->step, (size_t)(lo->nstep + 1) * sizeof *lo->step);
	s = &lo->step[lo->nstep++];
	memset(s, 0, sizeof *s);
	s->blk = bi;
	s->raise = b->flag;
	s->be = L->g->choice[v].backend;
	for (int j = 0; j < b->npred; j++) {
		const Blk *q = &L->g->b[b->pred[j]];
		if (q->lane == b->lane)
			continue;
		if (s->nwait == LSTEP_MAXWAIT)
			return refuse(L, "a chunk of %%%d waits for more than %d bands", v, LSTEP_MAXWAIT);
		s->wait_flag[s->nwait] = q->flag;
		s->wait_mult[s->nwait++] = (uint64_t)L->entries[b->pred[j]];
	}
	rowmajor(L, x, xst);
	rowmajor(L, v, yst);
	local_dims(L, x, xd);
	local_dims(L, v, yd);
	s->ch = (CommChunk){ir_comm_op(in->op), (CommDType)in->ty.dt, (CommRed)in->red, NULL, NULL, 0, 0, 0, 0, b->index, 0, 0, 0, 0};
	s->ch.alone = !L->p->share_sms; /* the kernels took every SM: so may a backend's own kernel */
	if (b->nphase > 1)
		return lower_phase(L, bi, s);
	switch (in->op) {
	case OP_ALL_REDUCE:
	case OP_SHIFT:
		blk_abs_boxes(f, &b->in[0], 0, bx);
		if (!contiguous(L, x, &bx[0], &off, &cnt))
			return refuse(L, "a chunk of %s %%%d is not one contiguous run", ir_ops[in->op].name, v);
		s->send = arg(x, off, 0);
		s->recv = arg(v, off, 0);
		s->ch.count = (size_t)cnt;
		s->ch.shift = (int)in->a;
		return true;
	case OP_REDUCE_SCATTER: {
		int e = in->axis;
		blk_abs_boxes(f, &b->out[0], 0, bx);
		if (!contiguous(L, v, &bx[0], &off, &cnt))
			return refuse(L, "a chunk of reduce_scatter %%%d is not one contiguous run", v);
		for (int i = 0; i < e; i++)
			if (yd[i] != 1)
				return refuse(L, "reduce_scatter %%%d scatters dim %d behind a larger dim", v, e);
		s->send = arg(x, off, 0);
		s->ch.send_stride = (size_t)(yd[e] * xst[e]);
		s->recv = arg(v, off, 0);
		s->ch.count = (size_t)cnt;
		s->ch.push = L->pushed[v]; /* the send's P blocks are the ranks' slots of this rank's block */
		return true;
	}
	case OP_ALL_GATHER: {
		int e = in->axis;
		blk_abs_boxes(f, &b->in[0], 0, bx);
		if (!contiguous(L, x, &bx[0], &off, &cnt))
			return refuse(L, "a chunk of all_gather %%%d is not one contiguous run", v);
		for (int i = 0; i < e; i++)
			if (xd[i] != 1)
				return refuse(L, "all_gather %%%d gathers dim %d behind a larger dim", v, e);
		s->send = arg(x, off, 0);
		s->recv = arg(v, off, 0);
		s->ch.recv_stride = (size_t)(xd[e] * yst[e]);
		s->ch.count = (size_t)cnt;
		return true;
	}
	case OP_ALL_TO_ALL: {
		/* slice b->index of every block: send blocks along axis2 of x,
		 * receive blocks along axis of the result */
		int64_t soff, roff, n = a2a_side(L, v, &b->in[0], 0, &s->pack, &soff);
		if (n < 0 || a2a_side(L, v, &b->out[0], 1, &s->unpack, &roff) != n)
			return refuse(L, "chunk %d of all_to_all %%%d: its blocks are no evenly spaced 2-D pattern", b->index, v);
		s->send = arg(x, soff, 0);
		s->recv = arg(v, roff, 0);
		s->ch.count = (size_t)n;
		s->ch.send_stride = s->pack.rows ? 0 : (size_t)s->pack.stride;
		s->ch.recv_stride = s->unpack.rows ? 0 : (size_t)s->unpack.stride;
		return true;
	}
	default:
		return refuse(L, "%s %%%d has no GPU lowering", ir_ops[in->op].name, v);
	}
}

/* A result that is an input (or a value already returned) is copied into
 * its result buffer: an LArg value of -1 - i names result i's buffer. */
static bool
lower_result_copies(Low *L)
{
	const Func *f = L->f;
	for (int i = 0; i < f->nout; i++) {
		Val v = f->out[i];
		bool dup = false;
		for (int j = 0; j < i; j++)
			dup = dup || f->out[j] == v;
		if (f->ins[v].op != OP_PARAM && !dup)
			continue;
		if (dup && f->ins[v].op != OP_PARAM)
			return refuse(L, "op '%s' returns the same computed value twice; return a copy (e.g. x * 1.0)", sym_str(f->name));
		int64_t d[LIM_RANK], st[LIM_RANK], n = 1, one = 1;
		local_dims(L, v, d);
		rowmajor(L, v, st);
		for (int k = 0; k < f->ins[v].ty.rank; k++)
			n *= d[k];
		if (!lower_copy(L, v, NULL, 0, 1, &n, arg(v, 0, 0), &one, arg(-1 - i, 0, 0), &one, f->ins[v].ty.dt, false, NULL))
			return false;
		/* one block: all of it, no flags (inputs are ready when the op starts) */
		LKernel *k = &L->lo->kern[L->lo->nkern - 1];
		int *cnt = xcalloc((size_t)L->P, sizeof(int));
		for (int r = 0; r < L->P; r++)
			for (int64_t x = 0; x * 65536 < n; x++) {
				PtxBlock e = {(uint32_t)x, 0, 0, PTX_NO_FLAG, 1, PTX_NO_FLAG, PTX_RAISE_ADD, 1};
				append(k, r, cnt, &e);
			}
		finish_entries(L, k, cnt);
		free(cnt);
	}
	return !L->failed;
}

/* ---- a fused attention region (ir/attn.c) -> the fused kernel (codegen/attn.c) ---- */

/* Entries of one band box: every (head, query tile of `rows`) in it, the
 * heads flattened over the leading dims, a head's tiles together (causal:
 * its longest first), as ptx_attn_blocks orders them.  The persistent grid
 * takes entries strided, so a wave then runs few heads and their K and V
 * stay in L2: the same kernel took 125 us at 32x2048x128 on an H100 with
 * every head's first tile before any second (kernel records,
 * bench/results/2026-12-06-src-h100-c.p1.json), 118 us in this order
 * (gpu-kernels perf-attn, bench/results/2026-12-07-softmax-h100.md). */
static void
attn_entries(LKernel *k, const Box *bx, const int64_t *od, int R, int rows, bool causal, const PtxBlock *proto, int r,
             int *n)
{
	int64_t idx[LIM_RANK], t0 = bx->lo[R - 2] / rows, t1 = (bx->hi[R - 2] + rows - 1) / rows, nz = 1;
	for (int d = 0; d < R - 2; d++)
		nz *= bx->hi[d] - bx->lo[d];
	for (int64_t h = 0; h < nz; h++)
		for (int64_t pass = 0; pass < t1 - t0; pass++) {
			int64_t rest = h, z = 0;
			PtxBlock e = *proto;
			for (int d = R - 3; d >= 0; d--) {
				int64_t w = bx->hi[d] - bx->lo[d];
				idx[d] = bx->lo[d] + rest % w;
				rest /= w;
			}
			for (int d = 0; d < R - 2; d++)
				z = z * od[d] + idx[d];
			e.x = (uint32_t)(causal ? t1 - 1 - pass : t0 + pass);
			e.z = (uint32_t)z;
			append(k, r, n, &e);
		}
}

/* Whether every box of attention mm2's blocks on every rank is made of
 * whole rows-row query tiles (the last may end at sq): an entry is one
 * tile, so a band that cut one would leave rows no entry computes. */
static bool
attn_bands_fit(Low *L, Val mm2, const int *bl, int nb, int rows, int64_t sq)
{
	int R = L->f->ins[mm2].ty.rank;
	for (int i = 0; i < nb; i++) {
		const Blk *b = &L->g->b[bl[i]];
		for (int j = 0; j < b->nout; j++) {
			if (b->out[j].v != mm2)
				continue;
			for (int r = 0; r < L->P; r++) {
				Box abs[2 * MAXBOX];
				int nbox = blk_abs_boxes(L->f, &b->out[j], r, abs);
				for (int q = 0; q < nbox; q++)
					if (abs[q].lo[R - 2] % rows || (abs[q].hi[R - 2] % rows && abs[q].hi[R - 2] != sq))
						return false;
			}
		}
	}
	return true;
}

/* Whether attention mm2 takes FlashAttention-3's 192-row entries at
 * d = 64 (three consumer warpgroups, in turns) without a mask: 3 % faster
 * than 128 rows at 16x4096x64 on one H100, where the last tile's padding
 * costs 3 % of the rows, and 8.5 % slower causal at 16x8192x64
 * (bench/results/2026-12-07-pingpong-h100.md).  So only where the rows
 * computed grow by at most 1/16 over 128-row tiles', and the bands are
 * whole 192-row tiles. */
static bool
attn_wide(Low *L, Val mm2, const int *bl, int nb, const PtxAttnSpec *s)
{
	int64_t rows128 = (s->sq + 127) / 128 * 128, rows192 = (s->sq + 191) / 192 * 192;
	return s->d == 64 && s->tma && !s->causal && 16 * rows192 <= 17 * rows128 &&
	       attn_bands_fit(L, mm2, bl, nb, 192, s->sq);
}

/* The Hopper form's key tile with 128-row entries: 176 keys
 * (PtxAttnSpec.bn; FlashAttention-3's tile at d = 128 without a mask)
 * where that adds at most 1/16 to the keys each entry reads over 128-key
 * tiles', else 128.  On one H100, the two interleaved in one process
 * (bench/results/2026-12-07-pingpong-h100.md, every pair of the
 * session): 2.4-3.8 % faster at 32x2048x128, 1.5-3.5 % causal at
 * 16x8192x64, 0.1-3.2 % at 16x4096x64, and causal at 32x8192x128 faster
 * in 11 pairs of 12 (by 0.2-3.2 %; 0.2 % slower in the other). */
static int
attn_keys(const PtxAttnSpec *s)
{
	int64_t keys128 = (s->sk + 127) / 128 * 128, keys176 = (s->sk + 175) / 176 * 176;
	return s->bm != 192 && 16 * keys176 <= 17 * keys128 ? 176 : 0;
}

static bool
lower_attn(Low *L, Val a, Val mm2, const int *bl, int nb)
{
	const Func *f = L->f;
	Attn at;
	PtxAttnSpec s;
	LKernel *k;
	int R = f->ins[mm2].ty.rank, *n, rows;
	int64_t qd[LIM_RANK], kd[LIM_RANK], od[LIM_RANK];
	char buf[160];
	const char *why;
	if (!ir_attn_match(f, mm2, &at))
		return refuse(L, "attention %%%d does not match its region", mm2);
	if ((why = ir_attn_unfused_why(f, &at, buf, sizeof buf)))
		return refuse(L, "attention %%%d: %s", mm2, why);
	local_dims(L, at.q, qd);
	local_dims(L, at.k, kd);
	local_dims(L, mm2, od);
	memset(&s, 0, sizeof s);
	k = new_kernel(L, a);
	snprintf(k->name, sizeof k->name, "syn_%s_attn%d", sym_str(f->name), L->lo->nkern - 1);
	s.name = k->name;
	s.dt = f->ins[mm2].ty.dt;
	s.batch = 1;
	for (int d = 0; d < R - 2; d++)
		s.batch *= od[d];
	s.sq = qd[R - 2];
	s.sk = kd[R - 2];
	s.d = qd[R - 1];
	s.scale = at.scale;
	s.causal = at.causal;
	s.diag = at.diag;
	s.normed = at.normed;
	s.stats = !f->ins[at.max].internal;
	s.tma = true; /* the Hopper form; the mma.sync one stays for the kernel harness */
	s.bm = attn_wide(L, mm2, bl, nb, &s) ? 192 : 0;
	s.bn = attn_keys(&s);
	if ((why = ptx_attn_check(&s)))
		return refuse(L, "attention %%%d: %s", mm2, why);
	rows = ptx_attn_rows(&s);
	if (!attn_bands_fit(L, mm2, bl, nb, rows, s.sq))
		return refuse(L, "a band of attention %%%d is not made of whole %d-row query tiles", mm2, rows);
	k->arg[k->narg++] = arg(at.q, 0, 0);
	k->arg[k->narg++] = arg(at.k, 0, 0);
	k->arg[k->narg++] = arg(at.v, 0, 0);
	k->arg[k->narg++] = arg(mm2, 0, 0);
	if (s.stats) {
		k->arg[k->narg++] = arg(at.max, 0, 0);
		k->arg[k->narg++] = arg(at.sum, 0, 0);
	}
	n = xcalloc((size_t)L->P, sizeof(int));
	for (int i = 0; i < nb; i++) {
		const Blk *b = &L->g->b[bl[i]];
		const Region *ro = NULL;
		PtxBlock proto = {0};
		int before = n[0];
		for (int j = 0; j < b->nout; j++)
			if (b->out[j].v == mm2)
				ro = &b->out[j];
		band_flags(L, bl[i], &proto);
		for (int r = 0; r < L->P && ro; r++) {
			Box abs[2 * MAXBOX];
			int nbox = blk_abs_boxes(f, ro, r, abs);
			for (int q = 0; q < nbox; q++)
				attn_entries(k, &abs[q], od, R, rows, s.causal, &proto, r, n);
		}
		L->entries[bl[i]] = n[0] - before;
	}
	ptx_emit_attn(&L->lo->ptx, &s, &k->k);
	finish_entries(L, k, n);
	free(n);
	return !L->failed;
}

/* Whether every tile a pushed chunk reads was waited for: the rows the
 * chunk adds, in each slot j of the owner's copy, against the rows each
 * routed entry of rank j stores there (its tile's rows shifted by its
 * route), for every owner; a tile that meets them must raise a flag this
 * chunk or an earlier one on the comm lane waited for.  The data layout's
 * half of check_pushed: a shift or chunk offset that disagreed with the
 * slots would read a tile before it is there. */
static bool
check_pushed_rows(Low *L)
{
	Lowered *lo = L->lo;
	bool *waited = xcalloc((size_t)lo->nflags + 1, sizeof *waited);
	bool ok = true;
	for (int i = 0; i < lo->nstep && ok; i++) {
		const LStep *s = &lo->step[i];
		for (int w = 0; w < s->nwait; w++)
			waited[s->wait_flag[w]] = true;
		if (!s->ch.push)
			continue;
		for (int k = 0; k < lo->nkern && ok; k++) {
			const LKernel *kn = &lo->kern[k];
			int64_t n = ty_local_dim(&L->f->ins[s->send.v].ty, 1, L->P), r0, r1;
			if (!kn->k.route || kn->group != L->f->ins[s->send.v].group)
				continue;
			if (s->send.off % n || (int64_t)s->ch.count % n || (int64_t)s->ch.send_stride != kn->route_rows * n) {
				ok = false;
				break;
			}
			r0 = s->send.off / n, r1 = r0 + (int64_t)s->ch.count / n; /* rows of each slot the chunk adds */
			for (int j = 0; j < L->P && ok; j++)
				for (int e = 0; e < kn->nblocks && ok; e++) {
					const PtxBlock *b = &kn->blocks[j][e];
					int64_t q = (int64_t)(b->out_op >> PTX_ROUTE_SHIFT) - 1, d0;
					if (q < 0)
						continue;
					d0 = (int64_t)b->x * kn->route_bm - q * kn->route_rows; /* in slot j: its row in owner q's block */
					if (d0 < r1 && d0 + kn->route_bm > r0 && (b->out_flag == PTX_NO_FLAG || !waited[b->out_flag]))
						ok = refuse(L, "chunk %d of the pushed reduce_scatter adds rows %lld..%lld of slot %d before rank "
						            "%d's tile of rows %lld..%lld there is waited for (a compiler bug; compile with "
						            "--no-push)",
						            s->ch.id, (long long)r0, (long long)r1 - 1, j, j, (long long)d0,
						            (long long)d0 + kn->route_bm - 1);
				}
		}
	}
	if (!ok && !L->failed)
		refuse(L, "a pushed reduce_scatter's chunk is not whole rows of its slots (a compiler bug)");
	free(waited);
	return ok;
}

/* A pushed chunk waits on its own rank's flag for the tiles every rank
 * routes to it: the count each wait names must be exactly the raises each
 * owner gets from the routed entries of every rank (a step waits alike on
 * every rank).  Checked here, for every owner and flag, so a lowering
 * that serves the owners unevenly is refused at compile time instead of
 * hanging or reading early on GPUs. */
static bool
check_pushed(Low *L)
{
	Lowered *lo = L->lo;
	int nf = lo->nflags, P = L->P;
	uint64_t *got = xcalloc((size_t)P * (size_t)(nf + 1), sizeof *got);
	bool ok = true;
	for (int k = 0; k < lo->nkern && ok; k++)
		for (int r = 0; r < P && lo->kern[k].k.route; r++)
			for (int e = 0; e < lo->kern[k].nblocks; e++) {
				const PtxBlock *b = &lo->kern[k].blocks[r][e];
				uint32_t q = b->out_op >> PTX_ROUTE_SHIFT;
				if (!q || b->out_flag == PTX_NO_FLAG)
					continue;
				if (q > (uint32_t)P || (int)b->out_flag >= nf || (b->out_op & ((1u << PTX_ROUTE_SHIFT) - 1)) != PTX_RAISE_ADD) {
					ok = false;
					break;
				}
				got[(q - 1) * (size_t)nf + b->out_flag] += b->out_value;
			}
	for (int i = 0; i < lo->nstep && ok; i++)
		for (int w = 0; w < lo->step[i].nwait && lo->step[i].ch.push; w++)
			for (int q = 0; q < P; q++)
				if (got[(size_t)q * nf + lo->step[i].wait_flag[w]] != lo->step[i].wait_mult[w]) {
					ok = false;
					refuse(L, "chunk %d of the pushed reduce_scatter waits for %llu raises of flag %d, but rank %d "
					       "gets %llu (a compiler bug; compile with --no-push)",
					       lo->step[i].ch.id, (unsigned long long)lo->step[i].wait_mult[w], lo->step[i].wait_flag[w], q,
					       (unsigned long long)got[(size_t)q * nf + lo->step[i].wait_flag[w]]);
					break;
				}
	if (!ok && !L->failed)
		refuse(L, "a routed matmul entry names a route, flag or raise the plan does not have (a compiler bug)");
	free(got);
	return ok && check_pushed_rows(L);
}

/* ---- lowerings made wrong on purpose (tests: syncc --break) ----
 * Each breaks what one of the compile-time checks above guards, after the
 * lowering and before the checks, so a test can see the check refuse it
 * by name rather than trust it unseen. */
static const char *const lower_breaks[] = {
	"push-count",  /* a pushed chunk waits for one raise more than its owners get (check_pushed) */
	"push-route",  /* a routed entry names a route past the ranks (check_pushed) */
	"push-rows",   /* a pushed chunk adds the next chunk's rows (check_pushed_rows) */
	"push-stride", /* a pushed chunk's slots lie a byte apart from the entries' (check_pushed_rows) */
};

enum { LB_PUSH_COUNT, LB_PUSH_ROUTE, LB_PUSH_ROWS, LB_PUSH_STRIDE }; /* lower_breaks' order */

/* The lowerings a comma list names, one bit each (1 << LB_*); -1 with the
 * first unknown name in bad. */
static int
lower_break_bits(const char *names, char *bad, size_t n)
{
	int bits = 0;
	while (names && *names) {
		size_t k = strcspn(names, ","), i = 0;
		while (i < NELEM(lower_breaks) && (strlen(lower_breaks[i]) != k || strncmp(lower_breaks[i], names, k)))
			i++;
		if (i == NELEM(lower_breaks)) {
			snprintf(bad, n, "%.*s", (int)(k < 64 ? k : 64), names);
			return -1;
		}
		bits |= 1 << i;
		names += k + (names[k] == ',');
	}
	return bits;
}

bool
ptx_lower_break_known(const char *names, char *bad, size_t n)
{
	return lower_break_bits(names, bad, n) >= 0;
}

/* The first pushed chunk, or routed entry, made wrong as asked. */
static void
lower_break(Low *L)
{
	char bad[80];
	int bits = lower_break_bits(L->p->lower_break, bad, sizeof bad);
	if (bits <= 0) /* none, or names syncc --break refused already */
		return;
	for (int k = 0; k < L->lo->nkern && bits & 1 << LB_PUSH_ROUTE; k++)
		for (int e = 0; L->lo->kern[k].k.route && e < L->lo->kern[k].nblocks; e++) {
			PtxBlock *b = &L->lo->kern[k].blocks[0][e];
			if (b->out_op >> PTX_ROUTE_SHIFT && b->out_flag != PTX_NO_FLAG) {
				b->out_op = (uint32_t)(L->P + 1) << PTX_ROUTE_SHIFT | PTX_RAISE_ADD;
				k = L->lo->nkern;
				break;
			}
		}
	for (int i = 0; i < L->lo->nstep; i++) {
		LStep *s = &L->lo->step[i];
		if (!s->ch.push)
			continue;
		if (bits & 1 << LB_PUSH_COUNT && s->nwait > 0)
			s->wait_mult[0]++;
		if (bits & 1 << LB_PUSH_ROWS)
			s->send.off += (int64_t)s->ch.count;
		if (bits & 1 << LB_PUSH_STRIDE)
			s->ch.send_stride++;
		return;
	}
}

/* ---- the whole plan ---- */

static bool
is_rowgroup(const Func *f, Val a)
{
	int axis;
	ir_group_space(f, a, &axis);
	return axis >= 0;
}

bool
ptx_lower(const Plan *p, Lowered *lo)
{
	Low L = {lo, p->f, p, p->g, p->f->nranks, 0, xcalloc((size_t)p->g->n + 1, sizeof(int)),
	         xcalloc((size_t)p->f->nins + 1, sizeof(bool)), false};
	int *bl = xmalloc((size_t)(p->g->n + 1) * sizeof(int));
	memset(lo, 0, sizeof *lo);
	lo->where = NOSPAN;
	lo->f = p->f;
	lo->p = p;
	lo->nflags = p->nflags;
	lo->alias = xmalloc((size_t)(p->f->nins + 1) * sizeof *lo->alias);
	for (Val v = 0; v <= p->f->nins; v++)
		lo->alias[v] = -1;
	lower_result_copies(&L);
	for (int k = 0; k < p->norder[LANE_COMPUTE] && !L.failed; k++) {
		const Blk *b = &p->g->b[p->order[LANE_COMPUTE][k]];
		const Ins *an = &p->f->ins[b->node];
		int nb;
		if (k > 0) {
			const Blk *prev = &p->g->b[p->order[LANE_COMPUTE][k - 1]];
			if (prev->node == b->node && prev->kind == b->kind)
				continue; /* the group's kernel is already made */
		}
		nb = group_blocks(&L, b->node, b->kind, bl);
		if (b->kind == BK_COMM)
			lower_self(&L, b->node, bl, nb);
		else if (ir_attn_group(p->f, b->node) >= 0)
			lower_attn(&L, b->node, ir_attn_group(p->f, b->node), bl, nb);
		else if (an->op == OP_MATMUL)
			lower_matmul(&L, b->node, bl, nb);
		else if (is_rowgroup(p->f, b->node))
			lower_rows(&L, b->node, bl, nb);
		else if (((ir_ops[an->op].flags & OF_EW) && an->op != OP_BROADCAST) || ir_reduce_ew(p->f, an))
			lower_ew(&L, b->node, bl, nb);
		else if (an->op == OP_BROADCAST)
			lower_ew(&L, b->node, bl, nb);
		else
			lower_shape(&L, b->node, bl, nb);
	}
	for (int k = 0; k < p->norder[LANE_COMM] && !L.failed; k++)
		lower_step(&L, p->order[LANE_COMM][k]);
	if (!L.failed && p->lower_break)
		lower_break(&L);
	if (!L.failed)
		check_pushed(&L);
	free(bl);
	free(L.entries);
	free(L.pushed);
	return !L.failed;
}

void
ptx_lowered_free(Lowered *lo)
{
	for (int i = 0; i < lo->nkern; i++) {
		for (int r = 0; r < lo->f->nranks; r++)
			free(lo->kern[i].blocks[r]);
		free(lo->kern[i].blocks);
	}
	free(lo->kern);
	free(lo->step);
	free(lo->alias);
	buf_free(&lo->ptx);
}
