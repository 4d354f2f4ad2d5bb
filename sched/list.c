/* sched/list.c -- critical-path analysis and list scheduling.
 *
 * Levels: the top level of a block is the earliest it can start with
 * unlimited resources, its bottom level the longest path from its start to
 * the end; the critical path is the largest sum and a block's slack what
 * it can slip without lengthening it.
 *
 * List scheduling is an event simulation of one rank's two lanes, compute
 * and communication.  Whenever a lane is free it starts, among its ready
 * blocks, the one with the largest bottom level: the critical path first,
 * so communication waits are filled with compute that has slack.  A
 * collective on SMs (nccl) slows concurrent compute to the SMs it leaves;
 * a dependency between lanes costs a flag's latency. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Kahn's algorithm; the block graph is acyclic by construction. */
static int *
topo_order(const BlockGraph *g)
{
	int *deg = xcalloc((size_t)g->n + 1, sizeof *deg), *ord = xmalloc((size_t)(g->n + 1) * sizeof *ord), h = 0, t = 0;
	for (int i = 0; i < g->n; i++)
		deg[i] = g->b[i].npred;
	for (int i = 0; i < g->n; i++)
		if (!deg[i])
			ord[t++] = i;
	while (h < t) {
		const Blk *b = &g->b[ord[h++]];
		for (int k = 0; k < b->nsucc; k++)
			if (--deg[b->succ[k]] == 0)
				ord[t++] = b->succ[k];
	}
	if (t != g->n)
		die("block graph of %s has a cycle", sym_str(g->f->name));
	free(deg);
	return ord;
}

void
sched_levels(BlockGraph *g)
{
	int *ord = topo_order(g);
	double cp = 0;
	for (int i = 0; i < g->n; i++)
		g->b[i].tlevel = g->b[i].blevel = 0;
	for (int i = 0; i < g->n; i++) {
		Blk *b = &g->b[ord[i]];
		for (int k = 0; k < b->nsucc; k++) {
			Blk *s = &g->b[b->succ[k]];
			if (b->tlevel + b->cost > s->tlevel)
				s->tlevel = b->tlevel + b->cost;
		}
	}
	for (int i = g->n - 1; i >= 0; i--) {
		Blk *b = &g->b[ord[i]];
		double m = 0;
		for (int k = 0; k < b->nsucc; k++)
			if (g->b[b->succ[k]].blevel > m)
				m = g->b[b->succ[k]].blevel;
		b->blevel = b->cost + m;
		if (b->tlevel + b->blevel > cp)
			cp = b->tlevel + b->blevel;
	}
	for (int i = 0; i < g->n; i++)
		g->b[i].slack = cp - g->b[i].tlevel - g->b[i].blevel;
	free(ord);
}

/* The compute lane is a sequence of persistent kernels, one per fused
 * group (and one per own-block copy): once a group starts, its bands run
 * before any other group's, and a group starts only when every group it
 * depends on (through any path) has started all its bands. */
typedef struct Groups {
	int *of;       /* block -> group (compute lane), -1 on the comm lane */
	int n;
	int *left;     /* bands not yet started */
	bool *deps;    /* deps[g * n + h]: g needs h */
} Groups;

static int
group_key(const BlockGraph *g, int i)
{
	for (int j = 0; j < i; j++)
		if (g->b[j].lane == LANE_COMPUTE && g->b[j].node == g->b[i].node && g->b[j].kind == g->b[i].kind)
			return j;
	return i;
}

static void
dep_walk(const BlockGraph *g, const Groups *gr, int from, int i, char *seen)
{
	for (int k = 0; k < g->b[i].npred; k++) {
		int p = g->b[i].pred[k];
		if (seen[p])
			continue;
		seen[p] = 1;
		if (gr->of[p] >= 0 && gr->of[p] != from)
			gr->deps[(size_t)from * gr->n + gr->of[p]] = true;
		else
			dep_walk(g, gr, from, p, seen);
	}
}

static Groups
groups(const BlockGraph *g)
{
	Groups gr = {xmalloc((size_t)(g->n + 1) * sizeof(int)), 0, NULL, NULL};
	int *key = xmalloc((size_t)(g->n + 1) * sizeof(int));
	char *seen = xmalloc((size_t)g->n + 1);
	for (int i = 0; i < g->n; i++) {
		gr.of[i] = -1;
		if (g->b[i].lane != LANE_COMPUTE)
			continue;
		int k = group_key(g, i);
		gr.of[i] = k == i ? gr.n++ : gr.of[k];
	}
	gr.left = xcalloc((size_t)gr.n + 1, sizeof(int));
	gr.deps = xcalloc((size_t)gr.n * gr.n + 1, sizeof(bool));
	for (int i = 0; i < g->n; i++)
		if (gr.of[i] >= 0) {
			gr.left[gr.of[i]]++;
			memset(seen, 0, (size_t)g->n);
			dep_walk(g, &gr, gr.of[i], i, seen);
		}
	free(key);
	free(seen);
	return gr;
}

static void
groups_free(Groups *gr)
{
	free(gr->of);
	free(gr->left);
	free(gr->deps);
}

typedef struct Sim {
	BlockGraph *g;
	const Profile *prof;
	Groups gr;
	int open;          /* the compute group whose bands are running, -1 */
	double *ready_at;  /* when all inputs are visible on this block's lane */
	int *left;         /* unfinished predecessors */
	bool *started;
	int run[NLANES];   /* running block per lane, -1 idle */
	double rem[NLANES];/* remaining µs of work (compute: at full rate) */
} Sim;

static bool
better(const Blk *a, int ia, const Blk *b, int ib)
{
	if (a->blevel != b->blevel)
		return a->blevel > b->blevel;
	if (a->tlevel != b->tlevel)
		return a->tlevel < b->tlevel;
	return ia < ib;
}

/* Whether every group that group gi depends on has started all its bands. */
static bool
can_open(const Sim *s, int gi)
{
	for (int h = 0; h < s->gr.n; h++)
		if (s->gr.deps[(size_t)gi * s->gr.n + h] && s->gr.left[h] > 0)
			return false;
	return true;
}

/* The ready block a lane should start now (-1: none). */
static int
pick(Sim *s, int lane, double t)
{
	int best = -1;
	for (int i = 0; i < s->g->n; i++) {
		Blk *b = &s->g->b[i];
		int gi = s->gr.of[i];
		if (s->started[i] || s->left[i] || s->ready_at[i] > t + 1e-9 || (lane >= 0 && (int)b->lane != lane))
			continue;
		if (gi >= 0 && (s->open >= 0 ? gi != s->open : !can_open(s, gi)))
			continue;
		if (best < 0 || better(b, i, &s->g->b[best], best))
			best = i;
	}
	return best;
}

/* Does a compute block wait for a comm block?  Its persistent kernel then
 * spins on SMs while the collective runs, and the collective needs its own. */
bool
sched_comm_feeds_compute(const BlockGraph *g)
{
	for (int i = 0; i < g->n; i++)
		if (g->b[i].lane == LANE_COMM)
			for (int j = 0; j < g->b[i].nsucc; j++)
				if (g->b[g->b[i].succ[j]].lane == LANE_COMPUTE)
					return true;
	return false;
}

/* The rate of compute work relative to the whole GPU.  Where a collective
 * may run beside a kernel (or a kernel waits for one), the launcher caps
 * every kernel's grid at the SMs the backends leave (codegen/host.c), for
 * the kernel's whole life, not only while the collective runs. */
static double
compute_rate(const BlockGraph *g, const Profile *p, bool serial)
{
	int most = 0;
	if (serial && !sched_comm_feeds_compute(g))
		return 1;
	for (int i = 0; i < g->n; i++)
		if (g->b[i].lane == LANE_COMM && p->comm_sms[g->choice[g->b[i].node].backend] > most)
			most = p->comm_sms[g->choice[g->b[i].node].backend];
	return most >= p->sms ? 0.05 : (double)(p->sms - most) / p->sms;
}

static void
start(Sim *s, Plan *p, int i, double t)
{
	Blk *b = &s->g->b[i];
	int gi = s->gr.of[i];
	if (gi >= 0) {
		s->open = --s->gr.left[gi] > 0 ? gi : -1;
	}
	s->started[i] = true;
	s->run[b->lane] = i;
	s->rem[b->lane] = b->cost;
	b->start = t;
	b->pos = p->norder[b->lane];
	p->order[b->lane][p->norder[b->lane]++] = i;
}

static void
finish(Sim *s, int lane, double t)
{
	int i = s->run[lane];
	Blk *b = &s->g->b[i];
	b->finish = t;
	s->run[lane] = -1;
	for (int k = 0; k < b->nsucc; k++) {
		int j = b->succ[k];
		Blk *c = &s->g->b[j];
		double at = t + (c->lane != b->lane ? s->prof->flag_us : 0);
		if (at > s->ready_at[j])
			s->ready_at[j] = at;
		s->left[j]--;
	}
}

/* Schedules the graph; fills the plan's lane orders and each block's
 * predicted start and finish; returns the makespan.  serial: one block at
 * a time over both lanes (the cuBLAS-then-NCCL baseline). */
double
sched_list(BlockGraph *g, Plan *p, const Profile *prof, bool serial)
{
	Sim s = {g, prof, groups(g), -1, xcalloc((size_t)g->n + 1, sizeof(double)), xcalloc((size_t)g->n + 1, sizeof(int)),
	         xcalloc((size_t)g->n + 1, sizeof(bool)), {-1, -1}, {0, 0}};
	double t = 0, rate = compute_rate(g, prof, serial);
	int done = 0;
	sched_levels(g);
	for (int l = 0; l < NLANES; l++) {
		free(p->order[l]);
		p->order[l] = xmalloc((size_t)(g->n + 1) * sizeof(int));
		p->norder[l] = 0;
	}
	for (int i = 0; i < g->n; i++)
		s.left[i] = g->b[i].npred;
	while (done < g->n) {
		double next = INFINITY;
		if (serial) {
			if (s.run[0] < 0 && s.run[1] < 0) {
				int i = pick(&s, -1, t);
				if (i >= 0)
					start(&s, p, i, t);
			}
		} else {
			for (int l = 0; l < NLANES; l++)
				if (s.run[l] < 0) {
					int i = pick(&s, l, t);
					if (i >= 0)
						start(&s, p, i, t);
				}
		}
		if (s.run[LANE_COMPUTE] >= 0)
			next = t + s.rem[LANE_COMPUTE] / rate;
		if (s.run[LANE_COMM] >= 0 && t + s.rem[LANE_COMM] < next)
			next = t + s.rem[LANE_COMM];
		for (int i = 0; i < g->n; i++) /* or the moment a waiting block becomes ready */
			if (!s.started[i] && !s.left[i] && s.ready_at[i] > t + 1e-9 && s.ready_at[i] < next)
				next = s.ready_at[i];
		if (!isfinite(next))
			die("list scheduling of %s is stuck", sym_str(g->f->name));
		if (s.run[LANE_COMPUTE] >= 0)
			s.rem[LANE_COMPUTE] -= (next - t) * rate;
		if (s.run[LANE_COMM] >= 0)
			s.rem[LANE_COMM] -= next - t;
		t = next;
		for (int l = 0; l < NLANES; l++)
			if (s.run[l] >= 0 && s.rem[l] <= 1e-9) {
				finish(&s, l, t);
				done++;
			}
	}
	free(s.ready_at);
	free(s.left);
	free(s.started);
	groups_free(&s.gr);
	return t;
}

/* Exposed communication: the time the comm lane is busy while no compute
 * block runs, the part of communication nothing hides (what a user checks
 * first).  An own-block copy on the compute lane is data movement, not
 * compute: it hides nothing.  Each lane runs one block at a time, so its
 * blocks are disjoint intervals in lane order.  `each` (may be NULL) is
 * handed every exposed piece; busy gets all of the comm lane's time. */
double
sched_exposed(const Plan *p, double *busy, void (*each)(void *ctx, double from, double to), void *ctx)
{
	const BlockGraph *g = p->g;
	const int *cm = p->order[LANE_COMPUTE];
	int nc = p->norder[LANE_COMPUTE], k = 0;
	double exposed = 0, all = 0;
	for (int i = 0; i < p->norder[LANE_COMM]; i++) {
		const Blk *b = &g->b[p->order[LANE_COMM][i]];
		double t = b->start;
		all += b->finish - b->start;
		while (k < nc && g->b[cm[k]].finish <= t)
			k++;
		for (int j = k; j < nc && t < b->finish; j++) { /* the gaps between compute blocks */
			const Blk *c = &g->b[cm[j]];
			double to = c->start < b->finish ? c->start : b->finish;
			if (c->kind != BK_COMPUTE)
				continue;
			if (to > t) {
				exposed += to - t;
				if (each)
					each(ctx, t, to);
			}
			if (c->finish > t)
				t = c->finish;
		}
		if (t < b->finish) {
			exposed += b->finish - t;
			if (each)
				each(ctx, t, b->finish);
		}
	}
	if (busy)
		*busy = all;
	return exposed;
}
