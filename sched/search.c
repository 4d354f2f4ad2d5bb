/* sched/search.c -- choosing the plan.
 *
 * A small local search over the choices of each collective (chunk count,
 * backend, whether an all_gather hands its matmul this rank's own block
 * first), with every compute group cut into as many bands as the chunks
 * next to it; each candidate is list-scheduled on the cost model and the
 * fastest that fits the memory budget wins.  The serial plan (one chunk,
 * one band, one block at a time) is the baseline: when overlap is not
 * predicted to beat it, the serial plan is emitted and the reason given. */
#include "sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int chunk_options[] = {1, 2, 4, 8, 16};

static bool
is_comm(const Ins *in)
{
	return ir_ops[in->op].cls == OC_COMM || in->op == OP_RESHARD;
}

/* Whether an all_gather feeds the row operand of a matmul, which can then
 * start on this rank's own rows. */
static bool
feeds_matmul_rows(const Func *f, Val v)
{
	for (Val u = v + 1; u < f->nins; u++)
		if (f->ins[u].op == OP_MATMUL && f->ins[u].arg[0] == v && f->ins[v].axis == f->ins[v].ty.rank - 2 &&
		    f->ins[u].ty.pl.kind != PL_PARTIAL)
			return true;
	return false;
}

/* Bands of every compute group: as many as the chunks of the collectives
 * it produces for or consumes from, so each chunk can go as soon as its
 * band is done (or its band start as soon as the chunk arrives). */
static void
set_bands(const Func *f, NodeChoice *ch)
{
	for (Val v = 0; v < f->nins; v++)
		if (!is_comm(&f->ins[v]) && f->ins[v].group == v) {
			ch[v].nchunks = 1;
			ch[v].self_first = false;
			ch[v].interleave = 1;
			ch[v].align = f->ins[v].op == OP_MATMUL || ir_attn_group(f, v) >= 0 ? SCHED_TILE_ROWS : 1;
		}
	for (Val v = 0; v < f->nins; v++) {
		const Ins *in = &f->ins[v];
		if (!is_comm(in) || ch[v].nchunks <= 1)
			continue;
		Val src = f->ins[in->arg[0]].group;
		if (!is_comm(&f->ins[src]) && f->ins[src].op != OP_PARAM && ch[src].nchunks < ch[v].nchunks) {
			ch[src].nchunks = ch[v].nchunks;
			/* a reduce_scatter chunk takes a slice of every rank's block:
			 * its producer's bands are chunk-major too */
			if (in->op == OP_REDUCE_SCATTER && blk_band_dim(f, src) == in->axis)
				ch[src].interleave = f->nranks;
			/* so does an all_to_all's cut along the dim it sends blocks of */
			if (in->op == OP_ALL_TO_ALL && blk_a2a_dim(f, v) == in->axis2 && blk_band_dim(f, src) == in->axis2)
				ch[src].interleave = f->nranks;
		}
		for (Val u = v + 1; u < f->nins; u++)
			for (int k = 0; k < f->ins[u].narg; k++)
				if (f->ins[u].arg[k] == v && !is_comm(&f->ins[u])) {
					Val gu = f->ins[u].group;
					int want = ch[v].nchunks * (ch[v].self_first ? f->nranks : 1);
					if (ch[gu].nchunks < want)
						ch[gu].nchunks = want;
					/* an all_to_all cut along the dim it receives blocks of
					 * brings slice c of every block: its consumer's bands too */
					if (in->op == OP_ALL_TO_ALL && blk_a2a_dim(f, v) == in->axis && blk_band_dim(f, gu) == in->axis)
						ch[gu].interleave = f->nranks;
					if (ch[v].self_first && f->ins[u].op == OP_MATMUL && k == 0)
						ch[gu].self_first = true;
				}
	}
}

/* Peak bytes of live values over the schedule: a value lives from its
 * first writer's start to its last reader's finish (to the end if
 * returned; inputs all along). */
static double
peak_bytes(const BlockGraph *g, double makespan)
{
	const Func *f = g->f;
	double *from = xmalloc((size_t)(f->nins + 1) * sizeof *from), *to = xmalloc((size_t)(f->nins + 1) * sizeof *to);
	double peak = 0;
	for (Val v = 0; v < f->nins; v++) {
		from[v] = f->ins[v].op == OP_PARAM ? 0 : INFINITY;
		to[v] = f->ins[v].op == OP_PARAM ? makespan : -INFINITY;
	}
	for (int i = 0; i < f->nout; i++)
		to[f->out[i]] = makespan;
	for (int i = 0; i < g->n; i++) {
		const Blk *b = &g->b[i];
		for (int k = 0; k < b->nout; k++)
			if (b->start < from[b->out[k].v])
				from[b->out[k].v] = b->start;
		for (int k = 0; k < b->nin; k++)
			if (b->finish > to[b->in[k].v])
				to[b->in[k].v] = b->finish;
	}
	/* sweep over the start times */
	for (int i = 0; i < g->n; i++) {
		double t = g->b[i].start, live = 0;
		for (Val v = 0; v < f->nins; v++)
			if (from[v] <= t && t < to[v] && f->ins[v].op != OP_CONST)
				live += (double)ty_local_numel(&f->ins[v].ty, f->nranks) * ty_dtypes[f->ins[v].ty.dt].size;
		if (live > peak)
			peak = live;
	}
	free(from);
	free(to);
	return peak;
}

typedef struct Cand {
	NodeChoice *ch;
	double makespan, peak;
} Cand;

/* The search's work: scoring a candidate costs about blocks x (blocks +
 * values) steps (flags, groups and the peak-memory sweep); past
 * PLAN_WORK steps in all the search stops with the best plan found.  No
 * example or test comes near it; a ring of 511 shifts would otherwise be
 * searched for minutes. */
#define PLAN_WORK 2.5e8

/* INFINITY for a candidate whose graph is past the limits (blk_build). */
static double
score(const Func *f, const SchedOpts *o, NodeChoice *ch, bool serial, double *peak, double *work)
{
	Plan p = {0};
	BlockGraph *g;
	double t;
	set_bands(f, ch);
	g = blk_build(f, ch, &o->topo);
	g->push = o->push;
	if (work)
		*work += (double)g->n * (g->n + f->nins);
	if (g->over || g->inexact) { /* too large, or not exact: no plan */
		blk_free(g);
		return INFINITY;
	}
	blk_cost(o->prof, g, &o->topo);
	t = sched_list(g, &p, o->prof, serial);
	if (peak)
		*peak = peak_bytes(g, t);
	blk_free(g);
	for (int l = 0; l < NLANES; l++)
		free(p.order[l]);
	return t;
}

static bool
fits(const SchedOpts *o, double peak, double serial_peak)
{
	double extra = peak - serial_peak, budget = o->mem_budget;
	if (o->mem_pct > 0)
		budget = serial_peak * o->mem_pct / 100;
	return budget < 0 || extra <= budget;
}

/* May collective `in` of an op on P ranks run on backend `be` under these
 * options?  What a backend can and a collective needs: comm/backends.h,
 * comm/colls.h (the copy engine moves data: it cannot reduce, nor reach
 * another node; p2p runs groups of at most its maxranks, and a
 * collective's group is all P ranks).  A requested backend that cannot
 * run it leaves it on the default one (tools/driver.c refuses one whose
 * rank limit the op is past). */
static bool
backend_ok(const SchedOpts *o, const Ins *in, int be, int P)
{
	CommOp op = sched_comm_op(in);
	int want = o->backend - 1;
	if (!comm_backend_can((CommBackendKind)be, op, o->topo.nodes, P))
		return false;
	if (!o->backend)
		return true;
	return be == (comm_backend_can((CommBackendKind)want, op, o->topo.nodes, P) ? want : (int)BE_DEFAULT);
}

/* A backend with no curve of its own for the op, where the search picks:
 * priced as the default backend (prof_comm_us), it can only tie with it,
 * so its candidates are not scored. */
static bool
unpriced(const SchedOpts *o, const Ins *in, int be)
{
	return !o->backend && be != BE_DEFAULT && !o->prof->npts[be][sched_comm_op(in)];
}

/* The default choices with a requested backend where it applies. */
static void
default_choice(const Func *f, const SchedOpts *o, NodeChoice *ch)
{
	blk_default_choice(f, ch);
	for (Val v = 0; v < f->nins; v++)
		if (is_comm(&f->ins[v]) && o->backend && backend_ok(o, &f->ins[v], o->backend - 1, f->nranks))
			ch[v].backend = (CommBackendKind)(o->backend - 1);
}

/* Coordinate descent: each collective's options in turn, the others
 * held, two sweeps. */
static int
search(const Func *f, const SchedOpts *o, NodeChoice *best, double *best_t, double serial_peak, double *work)
{
	NodeChoice *ch = xmalloc((size_t)(f->nins + 1) * sizeof *ch);
	int tried = 0;
	for (int sweep = 0; sweep < 2; sweep++)
		for (Val v = 0; v < f->nins && *work <= PLAN_WORK; v++) {
			const Ins *in = &f->ins[v];
			if (!is_comm(in) || f->nranks == 1)
				continue;
			for (size_t c = 0; c < NELEM(chunk_options); c++)
				for (int be = 0; be < BE_COUNT; be++)
					for (int self = 0; self < 2; self++) {
						double t, peak;
						if (!backend_ok(o, in, be, f->nranks) || unpriced(o, in, be))
							continue;
						if (self && !(in->op == OP_ALL_GATHER && feeds_matmul_rows(f, v)))
							continue;
						if (chunk_options[c] > 1 && (in->op == OP_RESHARD || !comm_colls[sched_comm_op(in)].chunks))
							continue;
						memcpy(ch, best, (size_t)f->nins * sizeof *ch);
						ch[v].nchunks = chunk_options[c];
						ch[v].backend = (CommBackendKind)be;
						ch[v].self_first = self;
						t = score(f, o, ch, false, &peak, work);
						tried++;
						if (o->each && t < INFINITY)
							o->each(o->each_ctx, ch);
						if (t < *best_t - 1e-9 && fits(o, peak, serial_peak)) {
							*best_t = t;
							memcpy(best, ch, (size_t)f->nins * sizeof *ch);
						}
					}
		}
	free(ch);
	set_bands(f, best);
	return tried;
}

static double
share(double part, double whole)
{
	return whole > 0 ? 100 * part / whole : 0;
}

/* One backend's predicted time of a chunk, and whether it has a curve of
 * its own for the op (without one it is priced as the default backend). */
static void
explain_price(const SchedOpts *o, int be, CommOp op, double bytes, int P, const char *sep, Buf *b)
{
	buf_printf(b, "%s%s %.1f us", sep, comm_backends[be].name, prof_comm_us(o->prof, (CommBackendKind)be, op, bytes, P));
	if (be != BE_DEFAULT && !o->prof->npts[be][op])
		buf_printf(b, " (no curve: priced as %s)", comm_backends[BE_DEFAULT].name);
}

/* Why a collective is on its backend: one chunk's predicted time on each
 * backend the search scored (the options allow it, the profile has its
 * curve), the chosen one first.  The search scores whole plans, so a
 * backend can win with a slower chunk that overlaps better. */
static void
explain_backend(const Plan *p, const SchedOpts *o, Val v, const NodeChoice *c, Buf *b)
{
	const Ins *in = &p->f->ins[v];
	const Blk *k = NULL;
	CommOp op = sched_comm_op(in);
	for (int i = 0; i < p->g->n && !k; i++)
		if (p->g->b[i].kind == BK_COMM && p->g->b[i].node == v && p->g->b[i].phase == 0)
			k = &p->g->b[i];
	if (!k || p->f->nranks == 1)
		return;
	buf_printf(b, " (a chunk of %.0f bytes: ", k->bytes);
	if (sched_push(p, v)) /* its cost is the local add (sched/cost.c push_us) */
		buf_printf(b, "pushed by its matmul's epilogue, %.1f us after its last tile; read by the peers: ", k->cost);
	else if (in->op == OP_REDUCE_SCATTER && c->backend == BE_P2P)
		buf_printf(b, "not pushed: %s; ", sched_push_why(p->g, &p->topo, v));
	explain_price(o, c->backend, op, k->bytes, p->f->nranks, "", b);
	for (int be = 0; be < BE_COUNT; be++)
		if (be != (int)c->backend && backend_ok(o, in, be, p->f->nranks) && !unpriced(o, in, be))
			explain_price(o, be, op, k->bytes, p->f->nranks, ", ", b);
	buf_printf(b, ")");
}

static void
explain_choices(const Plan *p, const SchedOpts *o, const NodeChoice *ch, Buf *b)
{
	const Func *f = p->f;
	for (Val v = 0; v < f->nins; v++) {
		const Ins *in = &f->ins[v];
		if (is_comm(in)) {
			buf_printf(b, "    %s %%%d: %d chunk%s, %s%s", ir_ops[in->op].name, v, ch[v].nchunks,
			           ch[v].nchunks == 1 ? "" : "s", comm_backends[ch[v].backend].name,
			           ch[v].self_first ? ", own block first" : "");
			explain_backend(p, o, v, &ch[v], b);
			buf_printf(b, "\n");
		} else if (in->group == v && in->op != OP_PARAM && in->op != OP_CONST && ch[v].nchunks > 1)
			buf_printf(b, "    %s %%%d: %d bands%s\n", ir_ops[in->op].name, v, ch[v].nchunks,
			           ch[v].self_first ? ", starting at this rank's rows" : "");
	}
}

static void
finish_plan(Plan *p, const Func *f, const SchedOpts *o, NodeChoice *ch, bool serial)
{
	p->g = blk_build(f, ch, &o->topo);
	p->g->push = o->push;
	p->topo = o->topo;
	p->lower_break = o->lower_break;
	if (p->g->inexact) /* the search scores such a choice INFINITY: never one of its plans */
		die("a plan of %s writes a region it cannot list exactly", sym_str(f->name));
	blk_cost(o->prof, p->g, &o->topo);
	p->makespan = sched_list(p->g, p, o->prof, serial);
	p->exposed = sched_exposed(p, &p->comm, NULL, NULL);
	p->crit = 0;
	for (int i = 0; i < p->g->n; i++)
		if (p->g->b[i].tlevel + p->g->b[i].blevel > p->crit)
			p->crit = p->g->b[i].tlevel + p->g->b[i].blevel;
	p->sms = p->compute_sms = o->prof->sms;
	p->share_sms = !serial || sched_comm_feeds_compute(p->g);
	if (!p->share_sms)
		return; /* nothing computes while a collective runs, nothing spins for one */
	for (Val v = 0; v < f->nins; v++)
		if (is_comm(&f->ins[v]) && o->prof->sms - o->prof->comm_sms[ch[v].backend] < p->compute_sms)
			p->compute_sms = o->prof->sms - o->prof->comm_sms[ch[v].backend];
}

/* A test-only switch drops one dependency edge ("I->J"): the simulator
 * must then compute a wrong answer or detect the race. */
static void
drop_edge(BlockGraph *g, const char *spec)
{
	int a = -1, b = -1;
	if (spec && strcmp(spec, "first") == 0) { /* the first edge between lanes */
		for (int i = 0; i < g->n && a < 0; i++)
			for (int k = 0; k < g->b[i].nsucc && a < 0; k++)
				if (g->b[g->b[i].succ[k]].lane != g->b[i].lane)
					a = i, b = g->b[i].succ[k];
	} else if (!spec || sscanf(spec, "%d->%d", &a, &b) != 2) {
		return;
	}
	if (a < 0 || b < 0 || a >= g->n || b >= g->n)
		return;
	for (int k = 0; k < g->b[a].nsucc; k++)
		if (g->b[a].succ[k] == b)
			g->b[a].succ[k] = g->b[a].succ[--g->b[a].nsucc];
	for (int k = 0; k < g->b[b].npred; k++)
		if (g->b[b].pred[k] == a)
			g->b[b].pred[k] = g->b[b].pred[--g->b[b].npred];
}

Plan *
sched_plan(const Func *f, const SchedOpts *o)
{
	Plan *p = xcalloc(1, sizeof *p);
	NodeChoice *serial_ch = xmalloc((size_t)(f->nins + 1) * sizeof *serial_ch);
	NodeChoice *best = xmalloc((size_t)(f->nins + 1) * sizeof *best);
	double serial_peak, best_t, ideal_c = 0, ideal_m = 0, work = 0;
	Buf why = {0};
	char check[512];

	p->f = f;
	default_choice(f, o, serial_ch);
	p->serial = score(f, o, serial_ch, true, &serial_peak, &work);
	if (p->serial == INFINITY) { /* p->g stays NULL: no plan */
		snprintf(p->why, sizeof p->why, "op '%s' is too large to plan: its block graph needs more than %d blocks or %d regions",
		         sym_str(f->name), LIM_BLOCKS, LIM_REGIONS);
		free(serial_ch);
		free(best);
		return p;
	}
	memcpy(best, serial_ch, (size_t)f->nins * sizeof *best);
	best_t = score(f, o, best, false, NULL, &work);
	if (!o->force_serial)
		p->tried = search(f, o, best, &best_t, serial_peak, &work) + 2;
	p->is_serial = o->force_serial || best_t >= p->serial * 0.99;
	finish_plan(p, f, o, p->is_serial ? serial_ch : best, p->is_serial);
	drop_edge(p->g, o->drop_edge);
	for (int i = 0; i < p->g->n; i++)
		*(p->g->b[i].lane == LANE_COMPUTE ? &ideal_c : &ideal_m) += p->g->b[i].cost;
	p->ideal = ideal_c > ideal_m ? ideal_c : ideal_m;
	p->compute = ideal_c;
	p->peak_extra = peak_bytes(p->g, p->makespan) - serial_peak;
	buf_printf(&why, "predicted %.1f us; serial %.1f us; ideal max(compute %.1f, communication %.1f) = %.1f us\n",
	           p->makespan, p->serial, ideal_c, ideal_m, p->ideal);
	buf_printf(&why, "exposed communication %.1f us (%.1f%% of the op); %.1f us of the comm lane's %.1f hidden under compute\n",
	           p->exposed, share(p->exposed, p->makespan), p->comm - p->exposed, p->comm);
	buf_printf(&why, "critical path %.1f us; %d plans scored\n", p->crit, p->tried);
	if (work > PLAN_WORK)
		buf_printf(&why, "search cut short: the op is too large to score every candidate\n");
	if (o->force_serial)
		buf_printf(&why, "serial plan: requested\n");
	else if (p->is_serial)
		buf_printf(&why, "serial plan: overlap is not predicted to pay (best overlapped plan %.1f us)\n", best_t);
	else if (!strcmp(sched_plan_kind(p), "overlapped"))
		buf_printf(&why, "overlapped plan, %.0f%% faster than serial:\n", 100 * (1 - p->makespan / p->serial));
	else {
		char ch[360];
		sched_plan_changes(p, ch, sizeof ch);
		buf_printf(&why, "not overlapped (no compute runs under communication), %.0f%% faster than serial from %s:\n",
		           100 * (1 - p->makespan / p->serial), ch);
	}
	explain_choices(p, o, p->is_serial ? serial_ch : best, &why);
	snprintf(p->why, sizeof p->why, "%s", why.s);
	buf_free(&why);
	sched_assign_flags(p);
	if (!o->drop_edge && !sched_check_flags(p, o->prof, check, sizeof check))
		die("the plan of %s fails the flag-protocol check: %s", sym_str(f->name), check);
	free(serial_ch);
	free(best);
	return p;
}

/* Whether a choice (one the search scored, or one read back from the
 * tuning cache) builds a plan: within the limits, every write exact. */
bool
sched_choice_plannable(const Func *f, const SchedOpts *o, const NodeChoice *ch)
{
	BlockGraph *g = blk_build(f, ch, &o->topo);
	bool ok = !g->over && !g->inexact;
	blk_free(g);
	return ok;
}

/* The plan of one candidate of the search, with its flags checked. */
Plan *
sched_plan_for(const Func *f, const SchedOpts *o, const NodeChoice *choice)
{
	Plan *p = xcalloc(1, sizeof *p);
	NodeChoice *ch = xmalloc((size_t)(f->nins + 1) * sizeof *ch);
	char check[512];
	memcpy(ch, choice, (size_t)f->nins * sizeof *ch);
	p->f = f;
	finish_plan(p, f, o, ch, false);
	sched_assign_flags(p);
	if (!sched_check_flags(p, o->prof, check, sizeof check))
		die("a candidate plan of %s fails the flag-protocol check: %s", sym_str(f->name), check);
	snprintf(p->why, sizeof p->why, "a candidate of the search\n");
	free(ch);
	return p;
}

void
sched_plan_free(Plan *p)
{
	if (!p)
		return;
	blk_free(p->g);
	for (int l = 0; l < NLANES; l++)
		free(p->order[l]);
	free(p);
}

bool
sched_push(const Plan *p, Val v)
{
	return sched_push_of(p->g, &p->topo, v);
}
