/* sched/blocks.c -- the block IR (DESIGN §3.2).
 *
 * Every fused group becomes bands of its output (rows of matmul tiles with
 * K inside, rows of elementwise or reduction work); every collective is
 * cut into chunks along a dim, and on a multi-node topology an all_reduce
 * chunk expands into phases: intra-node reduce-scatter, inter-node
 * all_reduce of 1/G of the data, intra-node all_gather.  A block's regions
 * say what it reads and writes in the values' local index spaces; an edge
 * joins a writer and a reader whose regions intersect. */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

/* ---- regions ---- */

static Box
full_box(const Type *t, int nranks)
{
	Box b;
	memset(&b, 0, sizeof b);
	for (int i = 0; i < LIM_RANK; i++) /* dims past the rank: [0, 1), so boxes meet there */
		b.hi[i] = i < t->rank ? ty_local_dim(t, i, nranks) : 1;
	return b;
}

static bool
box_overlap(const Box *a, const Box *b, int rank)
{
	for (int i = 0; i < rank; i++) {
		if (a->rot[i] != b->rot[i])
			continue; /* shifted differently on some rank: assume they meet */
		if (a->hi[i] <= b->lo[i] || b->hi[i] <= a->lo[i])
			return false;
	}
	return true;
}

bool
blk_region_overlap(const Region *a, const Region *b)
{
	if (a->v != b->v)
		return false;
	for (int i = 0; i < a->nbox; i++)
		for (int j = 0; j < b->nbox; j++)
			if (box_overlap(&a->box[i], &b->box[j], LIM_RANK))
				return true;
	return false;
}

/* The absolute boxes of a region on one rank: rotated dims shift by
 * rank * rot and a range that wraps past the end splits in two. */
int
blk_abs_boxes(const Func *f, const Region *r, int rank, Box *out)
{
	const Type *t = &f->ins[r->v].ty;
	int n = 0;
	for (int i = 0; i < r->nbox; i++) {
		Box b = r->box[i];
		int wrap = -1;
		for (int d = 0; d < t->rank; d++) {
			int64_t size = ty_local_dim(t, d, f->nranks), sh;
			if (!b.rot[d])
				continue;
			sh = (b.rot[d] * rank) % size;
			b.lo[d] = (b.lo[d] + sh) % size;
			b.hi[d] = b.lo[d] + (r->box[i].hi[d] - r->box[i].lo[d]);
			b.rot[d] = 0;
			if (b.hi[d] > size)
				wrap = d;
		}
		if (wrap < 0) {
			out[n++] = b;
			continue;
		}
		int64_t size = ty_local_dim(t, wrap, f->nranks);
		Box c = b;
		c.lo[wrap] = 0;
		c.hi[wrap] = b.hi[wrap] - size;
		b.hi[wrap] = size;
		out[n++] = b;
		out[n++] = c;
	}
	return n;
}

/* ---- building ---- */

static Blk *
new_blk(BlockGraph *g, BlkKind k, Val node, int index, int nindex)
{
	Blk *b;
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 64;
		g->b = xrealloc(g->b, (size_t)g->cap * sizeof *g->b);
	}
	b = &g->b[g->n++];
	g->over |= g->n > LIM_BLOCKS; /* the caller stops at its next check */
	memset(b, 0, sizeof *b);
	b->kind = k;
	b->lane = k == BK_COMM ? LANE_COMM : LANE_COMPUTE;
	b->node = node;
	b->index = index;
	b->nindex = nindex;
	b->nphase = 1;
	b->flag = -1;
	return b;
}

/* A list grows by doubling: it moves when its length reaches a power of
 * two, so a group of n members costs O(n) (a copy per append made a
 * 2,500-let op take 9.4 GB).  The arena keeps the old arrays. */
static Region *
add_region(BlockGraph *g, Region **list, int *n, Val v)
{
	Region *r;
	if (++g->nregions > LIM_REGIONS)
		g->over = true; /* the caller stops at its next check */
	if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4, ...: full */
		r = arena_alloc(g->arena, (size_t)(*n ? 2 * *n : 1) * sizeof *r);
		if (*n)
			memcpy(r, *list, (size_t)*n * sizeof *r);
		*list = r;
	}
	r = *list + (*n)++;
	r->v = v;
	return r;
}

/* Whether b continues a along one dim (b starts where a ends, or ends
 * where it starts, and both match elsewhere): then their cover is their
 * union. */
static bool
extends(const Box *a, const Box *b)
{
	int along = -1;
	for (int d = 0; d < LIM_RANK; d++) {
		if (a->rot[d] != b->rot[d])
			return false;
		if (a->lo[d] == b->lo[d] && a->hi[d] == b->hi[d])
			continue;
		if (along >= 0 || (b->lo[d] != a->hi[d] && b->hi[d] != a->lo[d]))
			return false;
		along = d;
	}
	return true;
}

/* Boxes grow like regions (most regions have one). */
static void
add_box(BlockGraph *g, Region *r, Box b)
{
	if (r->nbox < MAXBOX) {
		if ((r->nbox & (r->nbox - 1)) == 0) {
			Box *nb = arena_alloc(g->arena, (size_t)(r->nbox ? 2 * r->nbox : 1) * sizeof *nb);
			if (r->nbox)
				memcpy(nb, r->box, (size_t)r->nbox * sizeof *nb);
			r->box = nb;
		}
		r->box[r->nbox++] = b;
		return;
	}
	/* too many pieces: keep one box that covers them all, exact only
	 * while each piece extends it along one dim */
	r->cover |= !extends(&r->box[MAXBOX - 1], &b);
	for (int d = 0; d < LIM_RANK; d++) {
		if (b.lo[d] < r->box[MAXBOX - 1].lo[d])
			r->box[MAXBOX - 1].lo[d] = b.lo[d];
		if (b.hi[d] > r->box[MAXBOX - 1].hi[d])
			r->box[MAXBOX - 1].hi[d] = b.hi[d];
	}
}

/* The box of operand `u` that a block writing `out` of value `v` reads,
 * through numpy broadcasting.  A dim whose local size differs (a @repl
 * operand sliced to a split, a reduced dim) is read whole. */
static Box
operand_box(const Func *f, Val v, Val u, const Box *out)
{
	const Type *tv = &f->ins[v].ty, *tu = &f->ins[u].ty;
	Box b = full_box(tu, f->nranks);
	int off = tv->rank - tu->rank;
	for (int k = 0; k < tu->rank; k++) {
		int i = k + off;
		int64_t su = ty_local_dim(tu, k, f->nranks), sv = i >= 0 ? ty_local_dim(tv, i, f->nranks) : 1;
		if (i < 0 || su == 1 || su != sv)
			continue;
		b.lo[k] = out->lo[i];
		b.hi[k] = out->hi[i];
		b.rot[k] = out->rot[i];
	}
	return b;
}

/* The dim a group's bands cut by default: a matmul's rows of tiles, a row
 * group's rows (the dim it does not reduce), an elementwise group's first
 * dim (a reduction of one element per rank is elementwise, ir_reduce_ew);
 * data movement is one block (-1). */
int
blk_band_dim(const Func *f, Val a)
{
	int axis;
	const Ins *in = &f->ins[ir_group_space(f, a, &axis)];
	int r = in->ty.rank;
	if (r == 0)
		return -1;
	if (axis >= 0)
		return axis == 0 ? (r > 1 ? 1 : -1) : 0;
	if (in->op == OP_MATMUL)
		return r - 2;
	if ((ir_ops[in->op].flags & OF_EW) || ir_ops[in->op].cls == OC_UNARY || ir_ops[in->op].cls == OC_BINARY ||
	    ir_reduce_ew(f, in))
		return 0;
	return -1; /* data movement: one block */
}

/* A row group's rows are cut only along the dim they are laid out by (the
 * row kernel walks contiguous runs of rows). */
static int
band_dim(const Func *f, Val a, int want)
{
	int axis, r = f->ins[ir_group_space(f, a, &axis)].ty.rank;
	if (ir_attn_group(f, a) >= 0 && want >= r - 1) /* the fused kernel makes whole rows */
		return blk_band_dim(f, a);
	return want >= 0 && want < r && axis < 0 ? want : blk_band_dim(f, a);
}

/* The band of the group's space that member v's box vb lies in: v's
 * dims, and all of the space where v has one element. */
Box
blk_space_box(const Func *f, Val space, Val v, const Box *vb)
{
	const Type *ts = &f->ins[space].ty, *tv = &f->ins[v].ty;
	Box b = full_box(ts, f->nranks);
	int off = ts->rank - tv->rank;
	for (int i = 0; i < ts->rank; i++)
		if (i - off >= 0 && ty_local_dim(tv, i - off, f->nranks) != 1) {
			b.lo[i] = vb->lo[i - off];
			b.hi[i] = vb->hi[i - off];
			b.rot[i] = vb->rot[i - off];
		}
	return b;
}

/* The box of member m that a band of its group's space covers: numpy's
 * right alignment, and all of a dim where m has one element (a row
 * group's per-row values, a broadcast operand computed in the group). */
Box
blk_member_box(const Func *f, Val space, Val m, const Box *band)
{
	const Type *ts = &f->ins[space].ty, *tm = &f->ins[m].ty;
	Box b = full_box(tm, f->nranks);
	int off = ts->rank - tm->rank;
	for (int k = 0; k < tm->rank; k++)
		if (k + off >= 0 && ty_local_dim(tm, k, f->nranks) != 1) {
			b.lo[k] = band->lo[k + off];
			b.hi[k] = band->hi[k + off];
			b.rot[k] = band->rot[k + off];
		}
	return b;
}

static int64_t
cut(int64_t len, int i, int n)
{
	return len * i / n;
}

/* Band edges at multiples of `al` (the last edge is len). */
static int64_t
cut_al(int64_t len, int i, int n, int al)
{
	int64_t units = (len + al - 1) / al, c;
	if (i >= n)
		return len;
	c = al * (units * i / n);
	return c < len ? c : len;
}

/* Bands of a fused group anchored at `a`; next[m] is the member of m's
 * group after m (-1 after the last), so a group costs its own size, not
 * the op's. */
static void
build_group(BlockGraph *g, Val a, const NodeChoice *ch, const Val *next)
{
	const Func *f = g->f;
	Val space = ir_group_space(f, a, &(int){0});
	const Ins *an = &f->ins[space];
	int dim = band_dim(f, a, ch->dim), nb = ch->nchunks > 0 ? ch->nchunks : 1;
	int64_t len = dim >= 0 ? ty_local_dim(&an->ty, dim, f->nranks) : 1;
	if (dim < 0 || nb > len)
		nb = dim < 0 ? 1 : (int)len;
	int il = ch->interleave > 1 && dim >= 0 && len % ch->interleave == 0 ? ch->interleave : 1;
	int al = ch->align > 1 ? ch->align : 1;
	if (il > 1 && ((len / il) % al || nb > len / il / al)) /* interleaved slices must stay whole tiles */
		nb = (len / il) % al ? 1 : (int)(len / il / al);
	if (dim >= 0 && nb > (len + al - 1) / al)
		nb = (int)((len + al - 1) / al);
	if (nb < 1)
		nb = 1;
	for (int i = 0; i < nb && !g->over; i++) {
		Blk *b = new_blk(g, BK_COMPUTE, a, i, nb);
		Box band = full_box(&an->ty, f->nranks), bands[MAXBOX];
		int nbands = 1;
		if (dim >= 0) {
			band.lo[dim] = cut_al(len, i, nb, al);
			band.hi[dim] = cut_al(len, i + 1, nb, al);
			if (ch->self_first)
				band.rot[dim] = len / f->nranks;
		}
		bands[0] = band;
		if (il > 1) { /* slice i of each of il blocks */
			int64_t bl = len / il;
			nbands = il < MAXBOX ? il : MAXBOX;
			for (int k = 0; k < nbands; k++) {
				bands[k] = band;
				bands[k].lo[dim] = k * bl + cut_al(bl, i, nb, al);
				bands[k].hi[dim] = k * bl + cut_al(bl, i + 1, nb, al);
			}
			if (il > MAXBOX) { /* too many pieces to list: the last covers the rest */
				bands[MAXBOX - 1].hi[dim] = (il - 1) * bl + cut_al(bl, i + 1, nb, al);
			}
		}
		for (Val m = a; m >= 0 && !g->over; m = next[m]) {
			const Ins *mi = &f->ins[m];
			if (!mi->internal) {
				Region *r = add_region(g, &b->out, &b->nout, m);
				for (int k = 0; k < nbands; k++)
					add_box(g, r, blk_member_box(f, space, m, &bands[k]));
			}
			for (int k = 0; k < mi->narg; k++) {
				Val u = mi->arg[k];
				const Ins *ui = &f->ins[u];
				Box ub;
				Region *rr;
				if (ui->group == a || ui->op == OP_CONST)
					continue;
				rr = add_region(g, &b->in, &b->nin, u);
				for (int bk = 0; bk < nbands; bk++) {
				band = blk_member_box(f, space, m, &bands[bk]);
				if (ir_ops[mi->op].cls == OC_MATMUL) {
					/* A: the band's rows, all of K; B: all of K and N (its
					 * columns only if the band cuts N) */
					Box rb = band;
					int r = mi->ty.rank;
					ub = full_box(&ui->ty, f->nranks);
					if (k == 0 && dim == r - 2 && ui->ty.rank >= 2 &&
					    ty_local_dim(&ui->ty, ui->ty.rank - 2, f->nranks) == len) {
						ub.lo[ui->ty.rank - 2] = rb.lo[dim];
						ub.hi[ui->ty.rank - 2] = rb.hi[dim];
						ub.rot[ui->ty.rank - 2] = rb.rot[dim];
					}
					/* (B's N is w's rows where the matmul reads w as B = transpose(w)) */
					int nd = ir_mm_bdim(mi, ui->ty.rank - 1, ui->ty.rank);
					if (k == 1 && dim == r - 1 && ty_local_dim(&ui->ty, nd, f->nranks) == len) {
						ub.lo[nd] = rb.lo[dim];
						ub.hi[nd] = rb.hi[dim];
					}
				} else if (ir_ops[mi->op].cls == OC_REDUCE || ir_ops[mi->op].cls == OC_SHAPE) {
					ub = full_box(&ui->ty, f->nranks);
					if (ir_ops[mi->op].cls == OC_REDUCE && dim >= 0 && dim != mi->axis) {
						ub.lo[dim] = band.lo[dim];
						ub.hi[dim] = band.hi[dim];
						ub.rot[dim] = band.rot[dim];
					}
				} else {
					ub = operand_box(f, m, u, &band);
				}
				add_box(g, rr, ub);
				}
			}
		}
	}
}

static bool
is_comm(const Ins *in)
{
	return ir_ops[in->op].cls == OC_COMM || in->op == OP_RESHARD;
}

/* The dim group g's bands cut, when its space has `rank` dims (then they
 * are the dims of a value of that rank it reads or writes), else -1. */
static int
group_dim(const Func *f, Val g, int rank)
{
	int d = blk_band_dim(f, g);
	return d >= 0 && f->ins[ir_group_space(f, g, &(int){0})].ty.rank == rank ? d : -1;
}

/* The dim an all_to_all's chunks slice: the one its consumer's bands cut,
 * else its producer's, so that a chunk that arrives feeds one band (or a
 * band done lets one chunk go); dim 0 when neither has bands. */
int
blk_a2a_dim(const Func *f, Val v)
{
	const Ins *in = &f->ins[v];
	Val src = f->ins[in->arg[0]].group;
	int d;
	for (Val u = v + 1; u < f->nins; u++)
		for (int k = 0; k < f->ins[u].narg; k++)
			if (f->ins[u].arg[k] == v && !is_comm(&f->ins[u]) && (d = group_dim(f, f->ins[u].group, in->ty.rank)) >= 0)
				return d;
	if (!is_comm(&f->ins[src]) && f->ins[src].op != OP_PARAM && (d = group_dim(f, src, in->ty.rank)) >= 0)
		return d;
	return 0;
}

/* The extent of the slice an all_to_all's chunks cut along dim d: within
 * a block where d is a blocked dim (a of the result, b of the input). */
static int64_t
a2a_slice_len(const Func *f, const Ins *in, int d)
{
	return d == in->axis ? ty_local_dim(&f->ins[in->arg[0]].ty, d, f->nranks) : ty_local_dim(&in->ty, d, f->nranks);
}

/* Block q of the P blocks of one side of an all_to_all chunk (side 0:
 * what it sends of x, blocked along b; 1: what it receives into y,
 * blocked along a), in rank order: the region's q-th box (a chunk sliced
 * along the blocked dim), or q-th of P pieces of its one box along the
 * blocked dim. */
Box
blk_a2a_block(const Func *f, Val v, const Region *r, int side, int q)
{
	const Ins *in = &f->ins[v];
	int P = f->nranks, d = side ? in->axis : in->axis2;
	Box b = r->box[r->nbox == P ? q : 0];
	if (r->cover)
		die("all_to_all %%%d: a chunk's region lists %d of its %d blocks", v, r->nbox, P);
	if (r->nbox != P) {
		int64_t len = b.hi[d] - b.lo[d], lo = b.lo[d];
		b.lo[d] = lo + len * q / P;
		b.hi[d] = lo + len * (q + 1) / P;
	}
	return b;
}

/* Is box b of value v one contiguous run of its row-major layout? */
bool
blk_box_contiguous(const Func *f, Val v, const Box *b)
{
	const Type *t = &f->ins[v].ty;
	int first = -1;
	for (int i = 0; i < t->rank; i++) {
		int64_t ext = b->hi[i] - b->lo[i];
		if (first < 0 && ext > 1)
			first = i;
		else if (first >= 0 && ext != ty_local_dim(t, i, f->nranks))
			return false;
	}
	return true;
}

static int
chunk_dim(const Func *f, Val v, int want, int nchunks)
{
	const Ins *in = &f->ins[v];
	const Type *t = &in->ty;
	switch (in->op) {
	case OP_ALL_TO_ALL:
		return want >= 0 && want < t->rank ? want : blk_a2a_dim(f, v);
	case OP_REDUCE_SCATTER:
	case OP_ALL_GATHER:
	case OP_SHIFT:
		return in->axis;
	case OP_ALL_REDUCE:
		if (want >= 0 && want < t->rank)
			return want;
		for (int d = 0; d < t->rank; d++)
			if (ty_local_dim(t, d, f->nranks) >= nchunks)
				return d;
		return t->rank ? 0 : -1;
	default:
		return -1;
	}
}

/* Chunk c of a collective: what it reads of x and writes of y. */
static void
comm_regions(BlockGraph *g, Blk *b, Val v, int dim, int c, int nc, bool self_first)
{
	const Func *f = g->f;
	const Ins *in = &f->ins[v];
	Val x = in->arg[0];
	int P = f->nranks;
	Box bx = full_box(&f->ins[x].ty, P), by = full_box(&in->ty, P);
	Region *rx = add_region(g, &b->in, &b->nin, x);
	Region *ry = b->nphase > 1 && b->phase != b->nphase - 1 ? NULL : add_region(g, &b->out, &b->nout, v);
	if (dim < 0 || (nc == 1 && !self_first)) {
		add_box(g, rx, bx);
		if (ry)
			add_box(g, ry, by);
		return;
	}
	switch (in->op) {
	case OP_ALL_REDUCE:
	case OP_SHIFT: {
		int64_t len = ty_local_dim(&in->ty, dim, P);
		bx.lo[dim] = by.lo[dim] = cut(len, c, nc);
		bx.hi[dim] = by.hi[dim] = cut(len, c + 1, nc);
		add_box(g, rx, bx);
		if (ry)
			add_box(g, ry, by);
		return;
	}
	case OP_REDUCE_SCATTER: {
		int64_t le = ty_local_dim(&in->ty, dim, P);
		by.lo[dim] = cut(le, c, nc);
		by.hi[dim] = cut(le, c + 1, nc);
		for (int p = 0; p < P; p++) {
			Box q = bx;
			q.lo[dim] = p * le + by.lo[dim];
			q.hi[dim] = p * le + by.hi[dim];
			add_box(g, rx, q);
		}
		if (ry)
			add_box(g, ry, by);
		return;
	}
	case OP_ALL_TO_ALL: { /* slice c of every block along dim: P boxes on the side blocked there */
		int64_t le = a2a_slice_len(f, in, dim), lo = cut(le, c, nc), hi = cut(le, c + 1, nc);
		for (int side = 0; side < 2; side++) {
			Region *r = side ? ry : rx;
			Box q = side ? by : bx;
			int nb = dim == (side ? in->axis : in->axis2) ? P : 1;
			for (int p = 0; p < nb && r; p++) {
				q.lo[dim] = p * (nb > 1 ? le : 0) + lo;
				q.hi[dim] = p * (nb > 1 ? le : 0) + hi;
				add_box(g, r, q);
			}
		}
		return;
	}
	case OP_ALL_GATHER: {
		int64_t le = ty_local_dim(&f->ins[x].ty, dim, P);
		if (self_first && c == 0) { /* this rank's own block, copied locally */
			by.lo[dim] = 0;
			by.hi[dim] = le;
			by.rot[dim] = le;
			add_box(g, rx, bx);
			if (ry)
				add_box(g, ry, by);
			return;
		}
		if (self_first)
			c--, nc--;
		bx.lo[dim] = cut(le, c, nc);
		bx.hi[dim] = cut(le, c + 1, nc);
		add_box(g, rx, bx);
		for (int p = self_first ? 1 : 0; p < P && ry; p++) {
			Box q = by;
			q.lo[dim] = p * le + bx.lo[dim];
			q.hi[dim] = p * le + bx.hi[dim];
			if (self_first)
				q.rot[dim] = le; /* the p-th rank after this one */
			add_box(g, ry, q);
		}
		return;
	}
	default:
		add_box(g, rx, bx);
		if (ry)
			add_box(g, ry, by);
		return;
	}
}

static void
build_comm(BlockGraph *g, Val v, const NodeChoice *ch, const Topo *topo)
{
	const Func *f = g->f;
	const Ins *in = &f->ins[v];
	int nc = ch->nchunks > 0 ? ch->nchunks : 1, dim = chunk_dim(f, v, ch->dim, nc);
	int nphase = in->op != OP_RESHARD && topo && topo->nodes > 1 && topo->gpus > 1 ? comm_colls[ir_comm_op(in->op)].phases
	                                                                               : 1;
	bool self = ch->self_first && in->op == OP_ALL_GATHER && f->nranks > 1;
	int64_t len;
	if (dim < 0) {
		nc = 1;
	} else {
		len = in->op == OP_ALL_GATHER   ? ty_local_dim(&f->ins[in->arg[0]].ty, dim, f->nranks)
		      : in->op == OP_ALL_TO_ALL ? a2a_slice_len(f, in, dim)
		                                : ty_local_dim(&in->ty, dim, f->nranks);
		if (nc > len)
			nc = (int)len;
	}
	if (in->op == OP_ALL_TO_ALL && f->nranks > MAXBOX)
		nc = 1; /* a chunk would need a box per rank */
	if (self)
		nc++;
	for (int c = 0; c < nc && !g->over; c++)
		for (int ph = 0; ph < nphase; ph++) {
			Blk *b = new_blk(g, BK_COMM, v, c, nc);
			b->phase = ph;
			b->nphase = nphase;
			comm_regions(g, b, v, dim, c, nc, self);
			if (ph > 0) /* phases of one chunk follow each other */
				b->nin = 0;
			if (self && c == 0) /* the own block is a local copy: the compute lane's */
				b->lane = LANE_COMPUTE;
		}
}

static void
add_edge(BlockGraph *g, int from, int to)
{
	Blk *a = &g->b[from], *b = &g->b[to];
	for (int i = 0; i < a->nsucc; i++)
		if (a->succ[i] == to)
			return;
	a->succ = xrealloc(a->succ, (size_t)(a->nsucc + 1) * sizeof *a->succ);
	a->succ[a->nsucc++] = to;
	b->pred = xrealloc(b->pred, (size_t)(b->npred + 1) * sizeof *b->pred);
	b->pred[b->npred++] = from;
}

static void
build_edges(BlockGraph *g)
{
	const Func *f = g->f;
	int **writers = xcalloc((size_t)f->nins + 1, sizeof *writers);
	int *nw = xcalloc((size_t)f->nins + 1, sizeof *nw);
	for (int i = 0; i < g->n; i++)
		for (int k = 0; k < g->b[i].nout; k++) {
			Val v = g->b[i].out[k].v;
			writers[v] = xrealloc(writers[v], (size_t)(nw[v] + 1) * sizeof **writers);
			writers[v][nw[v]++] = i;
		}
	for (int j = 0; j < g->n; j++) {
		Blk *b = &g->b[j];
		if (b->kind == BK_COMM && b->phase > 0)
			add_edge(g, j - 1, j);
		for (int r = 0; r < b->nin; r++) {
			Val v = b->in[r].v;
			for (int w = 0; w < nw[v]; w++) {
				int i = writers[v][w];
				for (int k = 0; k < g->b[i].nout; k++)
					if (i != j && blk_region_overlap(&g->b[i].out[k], &b->in[r]))
						add_edge(g, i, j);
			}
		}
	}
	for (Val v = 0; v < f->nins; v++)
		free(writers[v]);
	free(writers);
	free(nw);
}

void
blk_default_choice(const Func *f, NodeChoice *choice)
{
	for (Val v = 0; v < f->nins; v++)
		choice[v] = (NodeChoice){1, -1, BE_DEFAULT, false, 1,
		                          f->ins[v].op == OP_MATMUL || ir_attn_group(f, v) >= 0 ? SCHED_TILE_ROWS : 1};
}

/* next[m]: the next member of m's fused group, in value order. */
static Val *
group_links(const Func *f)
{
	Val *next = xmalloc((size_t)(f->nins + 1) * sizeof *next), *last = xmalloc((size_t)(f->nins + 1) * sizeof *last);
	for (Val v = 0; v < f->nins; v++)
		last[v] = next[v] = -1;
	for (Val v = 0; v < f->nins; v++) {
		Val a = f->ins[v].group;
		if (last[a] >= 0)
			next[last[a]] = v;
		last[a] = v;
	}
	free(last);
	return next;
}

/* The graph of one candidate.  Past LIM_BLOCKS blocks or LIM_REGIONS
 * regions it stops with g->over set (a located error for the serial plan,
 * a candidate skipped for the others): the scheduler is quadratic in the
 * blocks, and an op of 2^20 values could otherwise ask for gigabytes. */
BlockGraph *
blk_build(const Func *f, const NodeChoice *choice, const Topo *topo)
{
	BlockGraph *g = xcalloc(1, sizeof *g);
	Val *next = group_links(f);
	g->f = f;
	g->arena = arena_new();
	g->choice = arena_alloc(g->arena, (size_t)(f->nins + 1) * sizeof *g->choice);
	if (choice)
		memcpy(g->choice, choice, (size_t)f->nins * sizeof *choice);
	else
		blk_default_choice(f, g->choice);
	for (Val v = 0; v < f->nins && !g->over; v++) {
		const Ins *in = &f->ins[v];
		if (in->op == OP_PARAM || in->op == OP_CONST)
			continue;
		if (is_comm(in))
			build_comm(g, v, &g->choice[v], topo);
		else if (in->group == v)
			build_group(g, v, &g->choice[v], next);
	}
	free(next);
	for (int i = 0; i < g->n; i++)
		for (int k = 0; k < g->b[i].nout; k++)
			g->inexact |= g->b[i].out[k].cover;
	if (!g->over)
		build_edges(g);
	return g;
}

void
blk_free(BlockGraph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n; i++) {
		free(g->b[i].succ);
		free(g->b[i].pred);
	}
	free(g->b);
	arena_free(g->arena);
	free(g);
}

bool
blk_is_self_chunk(const BlockGraph *g, const Blk *b)
{
	return b->kind == BK_COMM && b->index == 0 && g->choice[b->node].self_first &&
	       g->f->ins[b->node].op == OP_ALL_GATHER && g->f->nranks > 1;
}

const char *
blk_name(const BlockGraph *g, int i, char *buf, size_t n)
{
	const Blk *b = &g->b[i];
	const char *op = ir_ops[g->f->ins[b->node].op].name;
	if (b->kind == BK_COMPUTE && ir_attn_group(g->f, b->node) >= 0)
		op = "attention"; /* the fused kernel, named by its region */
	if (b->kind == BK_COMPUTE)
		snprintf(buf, n, "%s%%%d.b%d", op, b->node, b->index);
	else if (b->nphase > 1)
		snprintf(buf, n, "%s%%%d.c%d.p%d", op, b->node, b->index, b->phase);
	else if (blk_is_self_chunk(g, b))
		snprintf(buf, n, "%s%%%d.self", op, b->node);
	else
		snprintf(buf, n, "%s%%%d.c%d", op, b->node, b->index);
	return buf;
}

static void
print_region(Buf *o, const BlockGraph *g, const Region *r)
{
	const Type *t = &g->f->ins[r->v].ty;
	buf_printf(o, "%%%d", r->v);
	for (int i = 0; i < r->nbox; i++) {
		buf_printf(o, "%s[", i ? "+" : "");
		for (int d = 0; d < t->rank; d++) {
			buf_printf(o, "%s%lld:%lld", d ? "," : "", (long long)r->box[i].lo[d], (long long)r->box[i].hi[d]);
			if (r->box[i].rot[d])
				buf_printf(o, "~r");
		}
		buf_printf(o, "]");
	}
}

/* --emit=blocks */
void
blk_print(FILE *out, const BlockGraph *g)
{
	Buf o = {0};
	char name[96];
	int nedges = 0;
	for (int i = 0; i < g->n; i++)
		nedges += g->b[i].nsucc;
	buf_printf(&o, "blocks of %s (P = %d): %d blocks, %d edges\n", sym_str(g->f->name), g->f->nranks, g->n, nedges);
	for (int i = 0; i < g->n; i++) {
		const Blk *b = &g->b[i];
		buf_printf(&o, "  #%-3d %-7s %-24s", i, b->kind == BK_COMPUTE ? "compute" : "comm", blk_name(g, i, name, sizeof name));
		if (b->kind == BK_COMM)
			buf_printf(&o, " %s", comm_backends[g->choice[b->node].backend].name);
		buf_printf(&o, " cost %.2f us", b->cost);
		buf_printf(&o, "\n        reads ");
		for (int k = 0; k < b->nin; k++) {
			buf_printf(&o, "%s", k ? " " : "");
			print_region(&o, g, &b->in[k]);
		}
		buf_printf(&o, "%s\n        writes ", b->nin ? "" : "-");
		for (int k = 0; k < b->nout; k++) {
			buf_printf(&o, "%s", k ? " " : "");
			print_region(&o, g, &b->out[k]);
		}
		buf_printf(&o, "%s\n        after", b->nout ? "" : "-");
		for (int k = 0; k < b->npred; k++)
			buf_printf(&o, " #%d", b->pred[k]);
		buf_printf(&o, "%s\n", b->npred ? "" : " -");
	}
	fputs(o.s, out);
	buf_free(&o);
}
