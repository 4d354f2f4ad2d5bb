/* tools/schedbench.c -- the scheduler measured, not asserted (bench/compile).
 *
 *   schedbench time N...     list scheduling + levels + the flag check on
 *                            random two-lane block graphs of N nodes: median
 *                            milliseconds of 21 runs
 *   schedbench quality T     T random DAGs of at most 12 nodes with random
 *                            costs: the list scheduler's makespan against the
 *                            optimum over every pair of lane orders (each
 *                            block as early as its lane and inputs allow)
 *
 * Graphs: nodes in topological order, each on the compute or comm lane at
 * random, each with up to 3 random earlier predecessors; costs 1 to 100. */
#include "../sched/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng = 0x1234567ull;

static uint64_t
next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static void
edge(BlockGraph *g, int a, int b)
{
	for (int k = 0; k < g->b[a].nsucc; k++)
		if (g->b[a].succ[k] == b)
			return;
	g->b[a].succ = xrealloc(g->b[a].succ, (size_t)(g->b[a].nsucc + 1) * sizeof(int));
	g->b[a].succ[g->b[a].nsucc++] = b;
	g->b[b].pred = xrealloc(g->b[b].pred, (size_t)(g->b[b].npred + 1) * sizeof(int));
	g->b[b].pred[g->b[b].npred++] = a;
}

/* A graph the scheduler can run: a one-value Func so names print. */
static Func dummy_f;
static Ins dummy_ins[1];

static BlockGraph *
random_graph(int n)
{
	BlockGraph *g = xcalloc(1, sizeof *g);
	g->f = &dummy_f;
	g->arena = arena_new();
	g->choice = arena_alloc(g->arena, sizeof *g->choice);
	g->b = xcalloc((size_t)n, sizeof *g->b);
	g->n = g->cap = n;
	for (int i = 0; i < n; i++) {
		Blk *b = &g->b[i];
		b->lane = next() % 2 ? LANE_COMM : LANE_COMPUTE;
		b->kind = b->lane == LANE_COMM ? BK_COMM : BK_COMPUTE;
		b->node = 0;
		b->index = i; /* every compute block its own group: no contiguity constraint */
		b->cost = 1 + (double)(next() % 100);
		b->flag = -1;
		for (int k = 0; k < 3 && i > 0; k++)
			if (next() % 2)
				edge(g, (int)(next() % (uint64_t)i), i);
	}
	return g;
}

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static const Profile prof = {.sms = 132, .flag_us = 0, .comm_sms = {0, 0}};

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void
bench_time(int n)
{
	double t[21];
	char why[256];
	for (int r = 0; r < 21; r++) {
		BlockGraph *g = random_graph(n);
		Plan p = {0};
		double t0 = now_ms();
		p.g = g;
		sched_list(g, &p, &prof, false);
		sched_assign_flags(&p);
		p.sms = p.compute_sms = 132;
		if (!sched_check_flags(&p, &prof, why, sizeof why))
			die("a random plan failed the flag check: %s", why);
		t[r] = now_ms() - t0;
		for (int l = 0; l < NLANES; l++)
			free(p.order[l]);
		blk_free(g);
	}
	qsort(t, 21, sizeof *t, cmp);
	printf("time nodes=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f\n", n, t[10], t[0], t[20]);
}

/* The makespan of given lane orders, every block as early as possible. */
static double
semi_active(const BlockGraph *g, int *const *ord, const int *nord)
{
	double fin[16] = {0}, lane_t[NLANES] = {0};
	int pos[NLANES] = {0}, done = 0;
	bool fin_set[16] = {false};
	while (done < g->n) {
		bool moved = false;
		for (int l = 0; l < NLANES; l++) {
			if (pos[l] >= nord[l])
				continue;
			int i = ord[l][pos[l]];
			double start = lane_t[l];
			bool ready = true;
			for (int k = 0; k < g->b[i].npred; k++) {
				int p = g->b[i].pred[k];
				if (!fin_set[p])
					ready = false;
				else if (fin[p] > start)
					start = fin[p];
			}
			if (!ready)
				continue;
			fin[i] = start + g->b[i].cost;
			fin_set[i] = true;
			lane_t[l] = fin[i];
			pos[l]++;
			done++;
			moved = true;
		}
		if (!moved)
			return INFINITY; /* the orders contradict the edges */
	}
	return lane_t[0] > lane_t[1] ? lane_t[0] : lane_t[1];
}

static bool
next_perm(int *a, int n)
{
	int i = n - 2, j = n - 1;
	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	while (a[j] <= a[i])
		j--;
	int t = a[i];
	a[i] = a[j];
	a[j] = t;
	for (int l = i + 1, r = n - 1; l < r; l++, r--)
		t = a[l], a[l] = a[r], a[r] = t;
	return true;
}

static double
optimum(const BlockGraph *g)
{
	int lane[NLANES][16], nl[NLANES] = {0}, comm[16];
	double best = INFINITY;
	int *ord[NLANES] = {lane[0], comm};
	for (int i = 0; i < g->n; i++)
		lane[g->b[i].lane][nl[g->b[i].lane]++] = i;
	do {
		memcpy(comm, lane[1], sizeof comm);
		do {
			double t = semi_active(g, ord, nl);
			if (t < best)
				best = t;
		} while (next_perm(comm, nl[1]));
	} while (next_perm(lane[0], nl[0]));
	return best;
}

static void
bench_quality(int trials)
{
	double sum = 0, worst = 1;
	int optimal = 0;
	for (int t = 0; t < trials; t++) {
		int n = 6 + (int)(next() % 7); /* 6..12 nodes */
		BlockGraph *g = random_graph(n);
		Plan p = {0};
		double ours, opt;
		p.g = g;
		ours = sched_list(g, &p, &prof, false);
		opt = optimum(g);
		sum += ours / opt;
		if (ours / opt > worst)
			worst = ours / opt;
		optimal += ours <= opt + 1e-9;
		for (int l = 0; l < NLANES; l++)
			free(p.order[l]);
		blk_free(g);
	}
	printf("quality dags=%d mean_ratio=%.4f worst_ratio=%.4f optimal=%d (%.0f%%)\n", trials, sum / trials, worst, optimal,
	       100.0 * optimal / trials);
}

int
main(int argc, char **argv)
{
	dummy_f.name = sym_cstr("random");
	dummy_f.ins = dummy_ins;
	dummy_f.nins = 1;
	dummy_f.nranks = 1;
	if (argc >= 3 && strcmp(argv[1], "time") == 0) {
		for (int i = 2; i < argc; i++)
			bench_time(atoi(argv[i]));
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "quality") == 0) {
		bench_quality(atoi(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: schedbench time N... | schedbench quality TRIALS\n");
	return 2;
}
