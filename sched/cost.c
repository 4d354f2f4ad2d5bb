/* sched/cost.c -- the cost model: profiles of a target (docs/profiles.md)
 * and the predicted time of every block.
 *
 * A profile is a text file of `key values...` lines:
 *   name NAME            sms N             world W (ranks the comm curves were measured at)
 *   matmul DTYPE TFLOPS  vector GFLOPS     hbm GB/s
 *   launch US            flag US           streamop US
 *   comm BACKEND OP BYTES US   (points of a piecewise-linear curve: the time
 *                               of one call whose per-rank input is BYTES)
 *   commsms BACKEND N    (SMs the backend occupies while it runs)
 *   inter GB/s US        (the network between nodes, for --topo)
 * Comm curves measured at W ranks are rescaled to P ranks by the ring
 * volume: (P-1)/P of the data for all_reduce, reduce_scatter, all_to_all,
 * (P-1) blocks for all_gather. */
#include "sched.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool
line_err(char *err, size_t n, const char *path, int line, const char *what)
{
	snprintf(err, n, "%s:%d: %s", path, line, what);
	return false;
}

static bool
num(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return s && *s && !*end && errno == 0 && isfinite(*out) && *out >= 0;
}

static bool
parse_line(Profile *p, char **w, int nw, const char *path, int ln, char *err, size_t n)
{
	double x, y;
	DType dt;
	int be, op;
	char names[128];
	if (strcmp(w[0], "name") == 0 && nw == 2) {
		snprintf(p->name, sizeof p->name, "%s", w[1]);
	} else if (strcmp(w[0], "sms") == 0 && nw == 2 && num(w[1], &x) && x >= 1) {
		p->sms = (int)x;
	} else if (strcmp(w[0], "world") == 0 && nw == 2 && num(w[1], &x) && x >= 2) {
		p->world = (int)x;
	} else if (strcmp(w[0], "matmul") == 0 && nw == 3 && ty_dtype_byname(w[1], &dt) && num(w[2], &x) && x > 0) {
		p->matmul_tflops[dt] = x;
	} else if (strcmp(w[0], "vector") == 0 && nw == 2 && num(w[1], &x) && x > 0) {
		p->vector_gflops = x;
	} else if (strcmp(w[0], "hbm") == 0 && nw == 2 && num(w[1], &x) && x > 0) {
		p->hbm_gbps = x;
	} else if (strcmp(w[0], "launch") == 0 && nw == 2 && num(w[1], &x)) {
		p->launch_us = x;
	} else if (strcmp(w[0], "flag") == 0 && nw == 2 && num(w[1], &x)) {
		p->flag_us = x;
	} else if (strcmp(w[0], "streamop") == 0 && nw == 2 && num(w[1], &x)) {
		p->streamop_us = x;
	} else if (strcmp(w[0], "commsms") == 0 && nw == 3 && (be = comm_backend_byname(w[1])) >= 0 &&
	           num(w[2], &x)) {
		p->comm_sms[be] = (int)x;
	} else if (strcmp(w[0], "inter") == 0 && nw == 3 && num(w[1], &x) && x > 0 && num(w[2], &y)) {
		p->inter_gbps = x;
		p->inter_us = y;
	} else if (strcmp(w[0], "comm") == 0 && nw == 5) {
		if ((be = comm_backend_byname(w[1])) < 0) {
			char what[256];
			snprintf(what, sizeof what, "unknown backend (%s)", comm_backend_list(names, sizeof names));
			return line_err(err, n, path, ln, what);
		}
		if ((op = comm_coll_byname(w[2])) < 0)
			return line_err(err, n, path, ln, "unknown collective");
		if (!num(w[3], &x) || x <= 0 || !num(w[4], &y) || y <= 0)
			return line_err(err, n, path, ln, "comm needs positive BYTES and US");
		if (p->npts[be][op] == MAXPTS)
			return line_err(err, n, path, ln, "too many points in one curve");
		if (p->npts[be][op] && p->curve[be][op][p->npts[be][op] - 1].bytes >= x)
			return line_err(err, n, path, ln, "curve points must grow in BYTES");
		p->curve[be][op][p->npts[be][op]++] = (CurvePt){x, y};
	} else {
		return line_err(err, n, path, ln, "not a profile line (docs/profiles.md)");
	}
	return true;
}

bool
prof_load(Profile *p, const char *path, char *err, size_t n)
{
	char *text, *save = NULL;
	size_t len;
	const char *why;
	int ln = 0;
	memset(p, 0, sizeof *p);
	p->sms = 132;
	p->world = 2;
	snprintf(p->path, sizeof p->path, "%s", path);
	if (!read_file(path, &text, &len, 1 << 20, &why)) {
		snprintf(err, n, "cannot read profile %s: %s", path, why);
		return false;
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *w[8], *s2 = NULL, *hash = strchr(line, '#');
		int nw = 0;
		ln++;
		if (hash)
			*hash = 0;
		for (char *t = strtok_r(line, " \t\r", &s2); t && nw < 8; t = strtok_r(NULL, " \t\r", &s2))
			w[nw++] = t;
		if (nw && !parse_line(p, w, nw, path, ln, err, n)) {
			free(text);
			return false;
		}
	}
	free(text);
	if (!p->matmul_tflops[DT_BF16] || !p->hbm_gbps || !p->npts[BE_DEFAULT][CO_ALL_REDUCE]) {
		snprintf(err, n, "profile %s lacks matmul bf16, hbm or a comm %s all_reduce curve", path,
		         comm_backends[BE_DEFAULT].name);
		return false;
	}
	for (int d = 0; d < DT_COUNT; d++)
		if (!p->matmul_tflops[d])
			p->matmul_tflops[d] = d == DT_F16 ? p->matmul_tflops[DT_BF16] : p->matmul_tflops[DT_BF16] / 16;
	if (!p->vector_gflops)
		p->vector_gflops = p->hbm_gbps / 4;
	return true;
}

/* A name is looked up as profiles/NAME.prof beside the binary, then in
 * the share dir (share_dir()); anything with a '/' or ending in .prof is
 * a path.  Writes the file's path to `path` (the first place tried when
 * none exists, so a later read names it). */
bool
prof_locate(const char *name, char *path, size_t n)
{
	const char *exe = exe_dir();
	if (strchr(name, '/') || (strlen(name) > 5 && strcmp(name + strlen(name) - 5, ".prof") == 0)) {
		snprintf(path, n, "%s", name);
		return access(path, R_OK) == 0;
	}
	if (exe) {
		snprintf(path, n, "%s/profiles/%s.prof", exe, name);
		if (access(path, R_OK) == 0)
			return true;
	}
	snprintf(path, n, "%s/profiles/%s.prof", share_dir(), name);
	return access(path, R_OK) == 0;
}

bool
prof_find(Profile *p, const char *name, char *err, size_t n)
{
	char path[8400];
	bool named = strchr(name, '/') || (strlen(name) > 5 && strcmp(name + strlen(name) - 5, ".prof") == 0);
	if (prof_locate(name, path, sizeof path) || named)
		return prof_load(p, path, err, n);
	snprintf(err, n, "no profile '%s' (looked in profiles/ beside the binary and in %s/profiles)", name, share_dir());
	return false;
}

/* The ring volume of one call at P ranks, per byte of per-rank input
 * (comm/colls.h's volume column). */
static double
volume(int op, int p)
{
	if (p <= 1)
		return 0;
	switch (op) {
#define C(NAME, name, args, send, recv, red, chunks, phases, needs, vol) \
	case CO_##NAME: return vol;
#include "../comm/colls.h"
#undef C
	default: die("no collective %d", op);
	}
}

/* One call of `op` moving `bytes` of per-rank input on P ranks: the
 * measured curve at the profile's world, interpolated, with its
 * bandwidth term rescaled to P. */
double
prof_comm_us(const Profile *p, CommBackendKind be, int op, double bytes, int nranks)
{
	const CurvePt *c;
	int n;
	double t, lat, scale;
	if (nranks <= 1 || bytes <= 0)
		return 0;
	if (!p->npts[be][op])
		be = BE_DEFAULT;
	if (!p->npts[be][op])
		op = CO_ALL_REDUCE; /* an all_reduce moves at least as much: an upper bound */
	c = p->curve[be][op];
	n = p->npts[be][op];
	lat = c[0].us * 0.5; /* below the first point: half its time is latency */
	if (bytes <= c[0].bytes || n == 1) {
		double slope = (c[0].us - lat) / c[0].bytes;
		t = n == 1 && bytes > c[0].bytes ? c[0].us * bytes / c[0].bytes : lat + slope * bytes;
	} else {
		int i = 1;
		while (i < n - 1 && c[i].bytes < bytes)
			i++;
		t = c[i - 1].us + (c[i].us - c[i - 1].us) * (bytes - c[i - 1].bytes) / (c[i].bytes - c[i - 1].bytes);
	}
	scale = volume(op, p->world) > 0 ? volume(op, nranks) / volume(op, p->world) : 1;
	return lat + (t - lat) * scale;
}

/* ---- block costs ---- */

static double
value_bytes(const Func *f, Val v, const Box *b)
{
	const Type *t = &f->ins[v].ty;
	double n = ty_dtypes[t->dt].size;
	for (int d = 0; d < t->rank; d++)
		n *= (double)(b->hi[d] - b->lo[d]);
	return n;
}

static double
region_bytes(const Func *f, const Region *r)
{
	double n = 0;
	for (int i = 0; i < r->nbox; i++)
		n += value_bytes(f, r->v, &r->box[i]);
	return n;
}

enum { SFU_RATIO = 8 }; /* FP32 lanes per special-function lane of an SM (Hopper: 128 / 16) */

/* The fused attention kernel's exponentials, one a score, on Hopper's
 * special-function units (16 a clock an SM, at about 1.755 GHz under
 * load), of which about half shows beside the tensor cores' time (at
 * d = 64 a tile takes as many MUFU cycles as tensor-core cycles).  On one
 * H100 (bench/results/2026-12-07-pingpong-h100.md: 0.113, 0.153 and
 * causal 0.932 ms at 32x2048x128, 16x4096x64 and 32x8192x128, the H200
 * profile's products 93, 93 and 745 us) products alone priced the kernel
 * 18-39 % under, products and every exponential 9-14 % over, products
 * and half of them +2, -13 and -4 %. */
enum { MUFU_PER_CLK = 16 };
#define SM_GHZ 1.755
#define ATTN_EXP_SHOWS 0.5

static double
attn_exp_us(const Profile *p, double exps)
{
	return ATTN_EXP_SHOWS * exps / ((double)p->sms * MUFU_PER_CLK * SM_GHZ * 1e3);
}

static double
compute_us(const Profile *p, const BlockGraph *g, Blk *b)
{
	const Func *f = g->f;
	const Ins *an = &f->ins[b->node];
	double bytes = 0, flops = 0, elems = 0, t;
	for (int k = 0; k < b->nin; k++)
		bytes += region_bytes(f, &b->in[k]);
	for (int k = 0; k < b->nout; k++)
		bytes += region_bytes(f, &b->out[k]);
	Val mm2 = ir_attn_group(f, b->node);
	if (ir_view_reshape(f, b->node)) { /* a view: no kernel, no bytes */
		b->flops = b->bytes = 0;
		return 0;
	}
	if (mm2 >= 0) {
		/* the fused kernel: both products, no scores in HBM; causal
		 * skips about half of the key tiles */
		const Ins *o = &f->ins[mm2], *p1 = &f->ins[f->ins[mm2].arg[0]];
		int R = o->ty.rank;
		double rows = (double)ty_local_numel(&o->ty, f->nranks) / ty_local_dim(&o->ty, R - 1, f->nranks);
		double sk = (double)ty_local_dim(&p1->ty, R - 1, f->nranks), d = (double)ty_local_dim(&o->ty, R - 1, f->nranks);
		bool causal = false;
		for (Val v = b->node; v < mm2; v++)
			causal = causal || (f->ins[v].group == b->node && f->ins[v].op == OP_CAUSAL);
		flops = 4 * rows * sk * d / b->nindex * (causal ? 0.5 : 1);
		t = flops / (p->matmul_tflops[o->ty.dt] * 1e6) + attn_exp_us(p, flops / (4 * d));
	} else if (an->op == OP_MATMUL) {
		const Type *ta = &f->ins[an->arg[0]].ty;
		double k = (double)ty_local_dim(ta, ta->rank - 1, f->nranks);
		double m = (double)ty_local_numel(&an->ty, f->nranks) / b->nindex; /* the band's outputs */
		flops = 2 * m * k;
		t = flops / (p->matmul_tflops[ta->dt] * 1e6);
	} else {
		/* the profile's vector rate is of special functions (--calibrate
		 * times a chain of tanh); adds, multiplies, casts and compares
		 * issue SFU_RATIO times as fast.  Counting them alike priced
		 * rmsnorm at 8192 x 8192 at 340 us on the H200 profile, where one
		 * H100 runs it in 95, at HBM speed. */
		double work = 0;
		for (Val v = b->node; v < f->nins; v++)
			if (f->ins[v].group == b->node) {
				double n = (double)ty_local_numel(&f->ins[v].ty, f->nranks) / b->nindex;
				elems += n;
				work += ir_ops[f->ins[v].op].flags & OF_SFU ? n : n / SFU_RATIO;
			}
		flops = elems;
		t = work / (p->vector_gflops * 1e3);
	}
	b->flops = flops;
	b->bytes = bytes;
	if (bytes / (p->hbm_gbps * 1e3) > t)
		t = bytes / (p->hbm_gbps * 1e3);
	return t + (b->index == 0 ? p->launch_us : 0);
}

/* A comm node's collective; a reshard the autocomm pass did not lower
 * (--no-pass=autocomm) is bounded by an all_reduce, which moves at least as
 * much as any collective that reaches its placement.  Anything else is an
 * internal error (ir_comm_op). */
CommOp
sched_comm_op(const Ins *in)
{
	return in->op == OP_RESHARD ? CO_ALL_REDUCE : ir_comm_op(in->op);
}

/* Across nodes: the network's latency and bandwidth on the ring volume.
 * `bytes` is what one node puts on its link (the profile's `inter` is a
 * node's bandwidth to the network, shared by its GPUs). */
static double
inter_us(const Profile *p, int op, double bytes, int nodes)
{
	double gbps = p->inter_gbps > 0 ? p->inter_gbps : 25;
	return p->inter_us + volume(op, nodes) * bytes / (gbps * 1e3);
}

/* Phase `ph` of a chunk of `bytes` per rank, all_reduced over NODESxGPUS:
 * a reduce_scatter inside the node leaves each GPU 1/G of the chunk; the G
 * GPUs all_reduce their shares across nodes at once, so the node's link
 * carries the whole chunk; an all_gather inside the node brings the G
 * shares back.  Sets the bytes each rank moves in the phase. */
static double
phase_us(const Profile *p, CommBackendKind be, Blk *b, double bytes, const Topo *topo)
{
	int gpus = topo->gpus, nodes = topo->nodes;
	b->bytes = b->phase == 0 ? bytes : bytes / gpus;
	if (b->phase == 0)
		return prof_comm_us(p, be, CO_REDUCE_SCATTER, bytes, gpus) + p->streamop_us;
	if (b->phase == 1)
		return inter_us(p, CO_ALL_REDUCE, bytes, nodes);
	return prof_comm_us(p, be, CO_ALL_GATHER, bytes / gpus, gpus);
}

/* An all_to_all chunk whose blocks are not contiguous runs is packed
 * before and unpacked after by 2-D copies on the comm lane
 * (codegen/host.c): a read and a write of the rank's data per side that
 * needs it. */
static double
a2a_pack_us(const Profile *p, const Func *f, const Blk *b, double bytes)
{
	int sides = 0;
	if (f->nranks == 1)
		return 0;
	for (int side = 0; side < 2; side++) {
		const Region *r = side ? &b->out[0] : &b->in[0];
		Box q = blk_a2a_block(f, b->node, r, side, 0);
		sides += !blk_box_contiguous(f, r->v, &q);
	}
	return sides * 2 * bytes / (p->hbm_gbps * 1e3);
}

/* ---- the epilogue push of a p2p reduce_scatter (sched.h) ---- */

enum { PUSH_TILE_ROWS = 128 }; /* the Hopper matmul tiles' BM: a tile has one owner */

/* Whether x is stored by its group's kernel as its only output, and read
 * by v alone. */
static bool
push_only_use(const Func *f, Val x, Val v)
{
	Val a = f->ins[x].group;
	for (int i = 0; i < f->nout; i++)
		if (f->out[i] == x)
			return false;
	for (Val u = 0; u < f->nins; u++) {
		const Ins *in = &f->ins[u];
		if (u != v)
			for (int j = 0; j < in->narg; j++)
				if (in->arg[j] == x)
					return false;
		if (u != x && in->group == a && !in->internal && in->op != OP_PARAM && in->op != OP_CONST)
			return false;
	}
	return f->ins[a].op == OP_MATMUL;
}

/* The matmul's operands as TMA reads them (the Hopper kernel, the one that
 * routes its tiles): rows of whole 16-byte runs as stored on each rank.
 * A local K of 12 (K = 24 at P = 2) takes the mma.sync kernel, which has
 * no routed stores, and lowering refused the pushed plan. */
static bool
push_tma_rows(const Func *f, Val a)
{
	for (int i = 0; i < 2; i++) {
		const Type *t = &f->ins[f->ins[a].arg[i]].ty;
		if (t->dt != f->ins[a].ty.dt || ty_local_dim(t, t->rank - 1, f->nranks) % 8)
			return false;
	}
	return true;
}

/* Whether every band of x's matmul holds as many rows of each owner's
 * block as of every other's: each owner's flag then counts the same raises
 * from every band, which is what its chunk waits for.  Bands cut by an
 * all_gather's chunks, say, hold one owner's rows each; lowering refused
 * such a push ("unequal tile counts"), and a plan must not promise it. */
static bool
push_bands_even(const BlockGraph *g, Val x)
{
	const Func *f = g->f;
	int P = f->nranks;
	int64_t rows = ty_local_dim(&f->ins[x].ty, 0, P) / P;
	for (int i = 0; i < g->n; i++) {
		const Blk *b = &g->b[i];
		Box abs[2 * MAXBOX];
		int64_t first = -1;
		int n;
		if (b->kind != BK_COMPUTE || b->node != f->ins[x].group || !b->nout)
			continue;
		n = blk_abs_boxes(f, &b->out[0], 0, abs);
		for (int q = 0; q < P; q++) {
			int64_t have = 0;
			for (int j = 0; j < n; j++) {
				int64_t lo = abs[j].lo[0] > q * rows ? abs[j].lo[0] : q * rows;
				int64_t hi = abs[j].hi[0] < (q + 1) * rows ? abs[j].hi[0] : (q + 1) * rows;
				have += hi > lo ? hi - lo : 0;
			}
			if (first < 0)
				first = have;
			else if (have != first)
				return false;
		}
	}
	return true;
}

const char *
sched_push_why(const BlockGraph *g, const Topo *topo, Val v)
{
	const Func *f = g->f;
	const Ins *in = &f->ins[v];
	Val x;
	int P = f->nranks;
	if (in->op != OP_REDUCE_SCATTER || g->choice[v].backend != BE_P2P || P < 2)
		return "not a reduce_scatter on p2p";
	if (!g->push)
		return "--no-push";
	if (topo && topo->nodes > 1)
		return "the ranks are on several nodes";
	x = in->arg[0];
	if (f->ins[x].ty.rank != 2 || in->axis != 0 || (f->ins[x].ty.dt != DT_BF16 && f->ins[x].ty.dt != DT_F16))
		return "its input is not a 16-bit matrix scattered along its rows";
	if (ty_local_dim(&f->ins[x].ty, 0, P) % ((int64_t)P * PUSH_TILE_ROWS))
		return "a rank's rows are not whole 128-row tiles";
	if (ty_local_dim(&f->ins[x].ty, 1, P) % 8)
		return "its rows are not whole 16-byte runs";
	if (!push_only_use(f, x, v))
		return "its input is not a matmul's only stored value read by it alone";
	if (!push_tma_rows(f, f->ins[x].group))
		return "the matmul's operands are not rows of whole 16-byte runs on a rank (no TMA kernel to route the tiles)";
	if (!push_bands_even(g, x))
		return "the matmul's bands do not hold every owner's rows alike (each owner's chunk would wait for raises "
		       "some bands never make)";
	return NULL;
}

bool
sched_push_of(const BlockGraph *g, const Topo *topo, Val v)
{
	return !sched_push_why(g, topo, v);
}

/* A pushed reduce_scatter chunk (sched_push_of): the peers' tiles crossed
 * NVLink inside their matmul's bands, so the chunk adds its P slots at HBM
 * speed after its two flag handshakes; what of the transfer the bands it
 * waits for do not cover shows here too. */
static double
push_us(const Profile *p, const BlockGraph *g, const Blk *b, int op, double bytes)
{
	double under = 0, move = prof_comm_us(p, BE_P2P, op, bytes, g->f->nranks);
	for (int j = 0; j < b->npred; j++)
		if (g->b[b->pred[j]].kind == BK_COMPUTE)
			under += g->b[b->pred[j]].cost;
	return (bytes + bytes / g->f->nranks) / (p->hbm_gbps * 1e3) + 2 * p->streamop_us + (move > under ? move - under : 0);
}

static double
comm_us(const Profile *p, const BlockGraph *g, Blk *b, const Topo *topo)
{
	int nranks = g->f->nranks;
	const Func *f = g->f;
	const Ins *in = &f->ins[b->node];
	CommBackendKind be = g->choice[b->node].backend;
	int op = sched_comm_op(in);
	const Blk *first = b - b->phase; /* phase 0 of this chunk reads its input */
	double bytes = 0;
	for (int k = 0; k < first->nin; k++)
		bytes += region_bytes(f, &first->in[k]);
	if (blk_is_self_chunk(g, b)) { /* a local copy */
		b->bytes = bytes;
		return 2 * bytes / (p->hbm_gbps * 1e3);
	}
	b->bytes = bytes;
	if (b->nphase == 3) /* intra-node RS, inter-node AR on 1/G, intra-node AG */
		return phase_us(p, be, b, bytes, topo);
	if (sched_push_of(g, topo, b->node))
		return push_us(p, g, b, op, bytes);
	double pack = in->op == OP_ALL_TO_ALL ? a2a_pack_us(p, f, b, bytes) : 0;
	if (topo && topo->nodes > 1) { /* the ring crosses the network, and is no faster than one inside a node */
		double net = inter_us(p, op, bytes, nranks), local = prof_comm_us(p, be, op, bytes, nranks);
		return (net > local ? net : local) + p->streamop_us + pack;
	}
	return prof_comm_us(p, be, op, bytes, nranks) + p->streamop_us + pack;
}

void
blk_cost(const Profile *p, BlockGraph *g, const Topo *topo)
{
	for (int i = 0; i < g->n; i++) /* compute first: a pushed chunk reads its bands' cost */
		if (g->b[i].kind == BK_COMPUTE)
			g->b[i].cost = compute_us(p, g, &g->b[i]);
	for (int i = 0; i < g->n; i++)
		if (g->b[i].kind != BK_COMPUTE)
			g->b[i].cost = comm_us(p, g, &g->b[i], topo);
}
