/* sched/tune.c -- the candidates --tune measures (docs/scheduler.md,
 * "Measured tuning").
 *
 * The search scores many choices on the cost model and keeps one; --tune
 * takes the best few of them, by prediction, to time on the GPUs (or, on
 * the simulator, to check, with the prediction as their only time).  The
 * search's own plan is always the first candidate: it may be the serial
 * plan, which no choice of the search rebuilds.  Choices are written as
 * one line of numbers so the tuning cache can name a plan exactly. */
#include "sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Seen {
	const Func *f;
	NodeChoice **ch;
	int n;
} Seen;

bool
sched_choice_same(const NodeChoice *a, const NodeChoice *b, int n)
{
	for (int v = 0; v < n; v++)
		if (a[v].nchunks != b[v].nchunks || a[v].dim != b[v].dim || a[v].backend != b[v].backend ||
		    a[v].self_first != b[v].self_first || a[v].interleave != b[v].interleave || a[v].align != b[v].align)
			return false;
	return true;
}

/* SchedOpts.each: every distinct choice the search scores, once. */
static void
keep(void *ctx, const NodeChoice *ch)
{
	Seen *s = ctx;
	for (int i = 0; i < s->n; i++)
		if (sched_choice_same(s->ch[i], ch, s->f->nins))
			return;
	s->ch = xrealloc(s->ch, (size_t)(s->n + 1) * sizeof *s->ch);
	s->ch[s->n] = xmalloc((size_t)(s->f->nins + 1) * sizeof **s->ch);
	memcpy(s->ch[s->n++], ch, (size_t)s->f->nins * sizeof **s->ch);
}

static int
by_prediction(const void *a, const void *b)
{
	const TuneCand *x = a, *y = b;
	return x->predicted < y->predicted ? -1 : x->predicted > y->predicted;
}

/* The search's plan, then up to max - 1 of the other scored choices,
 * fastest predicted first.  Returns how many. */
int
sched_tune_candidates(const Func *f, const SchedOpts *o, int max, TuneCand **out)
{
	SchedOpts so = *o;
	Seen s = {f, NULL, 0};
	Plan *p;
	TuneCand *c;
	int n = 1;
	so.each = keep;
	so.each_ctx = &s;
	p = sched_plan(f, &so);
	c = xcalloc((size_t)s.n + 2, sizeof *c);
	c[0] = (TuneCand){NULL, p->g ? p->makespan : INFINITY};
	sched_plan_free(p);
	for (int i = 0; i < s.n; i++) {
		Plan *q = sched_plan_for(f, o, s.ch[i]);
		c[n++] = (TuneCand){s.ch[i], q->makespan};
		sched_plan_free(q);
	}
	free(s.ch);
	qsort(c + 1, (size_t)n - 1, sizeof *c, by_prediction);
	for (int i = max > 0 && max < n ? max : n; i < n; i++)
		free(c[i].ch);
	*out = c;
	return max > 0 && max < n ? max : n;
}

void
sched_tune_free(TuneCand *c, int n)
{
	for (int i = 0; i < n; i++)
		free(c[i].ch);
	free(c);
}

static void
key_region(Buf *b, const Region *r)
{
	buf_printf(b, " v%d:", r->v);
	for (int i = 0; i < r->nbox; i++) {
		buf_printf(b, "[");
		for (int d = 0; d < LIM_RANK; d++)
			buf_printf(b, "%lld,%lld,%lld;", (long long)r->box[i].lo[d], (long long)r->box[i].hi[d],
			           (long long)r->box[i].rot[d]);
		buf_printf(b, "]");
	}
}

/* What a runner does with a plan, as text: every block with the regions
 * it reads and writes, its flag and successors, both lanes' orders,
 * each collective's backend and own-block choice, the SMs the kernels
 * share and codegen's choices.  Predictions are left out: two plans with
 * one key run the same, so --tune runs the first only. */
void
sched_plan_key(const Plan *p, Buf *b)
{
	const BlockGraph *g = p->g;
	buf_printf(b, "sms %d %d %d tile %d grid %d\n", p->sms, p->compute_sms, p->share_sms, p->tile, p->grid_sms);
	for (Val v = 0; v < p->f->nins; v++)
		if (ir_ops[p->f->ins[v].op].cls == OC_COMM || p->f->ins[v].op == OP_RESHARD)
			buf_printf(b, "comm %d %d %d\n", v, (int)g->choice[v].backend, g->choice[v].self_first);
	for (int i = 0; i < g->n; i++) {
		const Blk *k = &g->b[i];
		buf_printf(b, "b%d %d %d %d %d/%d %d/%d in", i, k->kind, k->lane, k->node, k->index, k->nindex, k->phase, k->nphase);
		for (int r = 0; r < k->nin; r++)
			key_region(b, &k->in[r]);
		buf_printf(b, " out");
		for (int r = 0; r < k->nout; r++)
			key_region(b, &k->out[r]);
		buf_printf(b, " flag %d succ", k->flag);
		for (int j = 0; j < k->nsucc; j++)
			buf_printf(b, " %d", k->succ[j]);
		buf_printf(b, "\n");
	}
	for (int l = 0; l < NLANES; l++) {
		buf_printf(b, "lane %d:", l);
		for (int i = 0; i < p->norder[l]; i++)
			buf_printf(b, " %d", p->order[l][i]);
		buf_printf(b, "\n");
	}
}

/* choice = (nchunks ',' dim ',' backend ',' self ',' interleave ',' align ' ')*
 * one group per IR value, in order */
void
sched_choice_text(const Func *f, const NodeChoice *ch, Buf *b)
{
	for (Val v = 0; v < f->nins; v++)
		buf_printf(b, "%s%d,%d,%d,%d,%d,%d", v ? " " : "", ch[v].nchunks, ch[v].dim, (int)ch[v].backend,
		           ch[v].self_first ? 1 : 0, ch[v].interleave, ch[v].align);
}

bool
sched_choice_parse(const Func *f, const char *text, NodeChoice *ch)
{
	const char *p = text;
	for (Val v = 0; v < f->nins; v++) {
		int nc, dim, be, self, il, al, used = 0;
		if (sscanf(p, " %d,%d,%d,%d,%d,%d%n", &nc, &dim, &be, &self, &il, &al, &used) != 6 || nc < 1 || nc > 4096 ||
		    be < 0 || be >= BE_COUNT || il < 1 || al < 1)
			return false;
		/* a collective on a backend past its rank limit (a cache written
		 * before the limit was the table's) is no plan of this op's */
		if (ir_ops[f->ins[v].op].cls == OC_COMM && !comm_backend_fits((CommBackendKind)be, f->nranks))
			return false;
		ch[v] = (NodeChoice){nc, dim, (CommBackendKind)be, self != 0, il, al};
		p += used;
	}
	while (*p == ' ' || *p == '\n')
		p++;
	return *p == 0;
}

void
sched_choice_describe(const Func *f, const NodeChoice *ch, Buf *b)
{
	int k = 0;
	for (Val v = 0; v < f->nins; v++) {
		const Ins *in = &f->ins[v];
		if (ir_ops[in->op].cls != OC_COMM && in->op != OP_RESHARD)
			continue;
		buf_printf(b, "%s%s %%%d: %d chunk%s, %s%s", k++ ? "; " : "", ir_ops[in->op].name, v, ch[v].nchunks,
		           ch[v].nchunks == 1 ? "" : "s", comm_backends[ch[v].backend].name, ch[v].self_first ? ", own block first" : "");
	}
	if (!k)
		buf_printf(b, "no collective");
}
