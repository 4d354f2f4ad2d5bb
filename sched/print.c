/* sched/print.c -- plans for people: --emit=plan, --explain, the ASCII
 * timeline (--emit=timeline), Chrome trace JSON (--trace, opens in
 * Perfetto and chrome://tracing); the SVG is sched/svg.c's.  Every
 * timeline drawn from the cost model says "predicted". */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a plan is, in words that tell the truth: "overlapped" only when
 * some compute runs under some communication.  A plan that beats the
 * serial one without that (a faster backend, chunks) is "not overlapped",
 * and sched_plan_changes says what changed. */
const char *
sched_plan_kind(const Plan *p)
{
	if (p->is_serial)
		return "serial";
	return p->comm - p->exposed > 1e-3 ? "overlapped" : "not overlapped";
}

/* What one collective's choice changes from the serial plan's (one chunk
 * on nccl), or "" for none: "on ce", "in 4 chunks, own block first". */
static void
change_of(const NodeChoice *c, char *buf, size_t n)
{
	Buf o = {0};
	if (c->backend != BE_NCCL)
		buf_printf(&o, "on %s", comm_backends[c->backend].name);
	if (c->nchunks > 1)
		buf_printf(&o, "%sin %d chunks", o.len ? ", " : "", c->nchunks);
	if (c->self_first)
		buf_printf(&o, "%sown block first", o.len ? ", " : "");
	snprintf(buf, n, "%s", o.len ? o.s : "");
	buf_free(&o);
}

static bool
is_coll(const Ins *in)
{
	return ir_ops[in->op].cls == OC_COMM || in->op == OP_RESHARD;
}

/* How the plan's collectives differ from the serial plan's, collectives
 * of one kind with the same change named together:
 * "all_gather %2 on ce", "shift %1 %3 %5 on ce, all_reduce %7 in 4 chunks". */
void
sched_plan_changes(const Plan *p, char *buf, size_t n)
{
	const Func *f = p->f;
	bool *said = xcalloc((size_t)f->nins + 1, sizeof *said);
	Buf o = {0};
	for (Val v = 0; v < f->nins; v++) {
		char ch[96], ch2[96];
		if (said[v] || !is_coll(&f->ins[v]))
			continue;
		change_of(&p->g->choice[v], ch, sizeof ch);
		if (!ch[0])
			continue;
		buf_printf(&o, "%s%s", o.len ? ", " : "", ir_ops[f->ins[v].op].name);
		for (Val u = v; u < f->nins; u++) {
			if (said[u] || !is_coll(&f->ins[u]) || f->ins[u].op != f->ins[v].op)
				continue;
			change_of(&p->g->choice[u], ch2, sizeof ch2);
			if (strcmp(ch, ch2) == 0) {
				buf_printf(&o, " %%%d", u);
				said[u] = true;
			}
		}
		buf_printf(&o, " %s", ch);
	}
	snprintf(buf, n, "%s", o.len ? o.s : "the serial plan's choices");
	buf_free(&o);
	free(said);
}

/* One line per attention region: the fused kernel, or why its unfused
 * kernels run it (ir/attn.c decides, codegen/lower.c follows). */
static void
attn_lines(Buf *o, const Func *f)
{
	for (Val v = 0; v < f->nins; v++) {
		Attn a;
		char why[160];
		if (f->ins[v].attn != v || !ir_attn_match(f, v, &a))
			continue;
		if (ir_attn_group(f, f->ins[v].group) == v)
			buf_printf(o, "  attention %%%d: one fused kernel (%s, head dim %lld%s), no scores in memory\n", v,
			           ty_dtypes[f->ins[v].ty.dt].name,
			           (long long)ty_local_dim(&f->ins[v].ty, f->ins[v].ty.rank - 1, f->nranks),
			           a.causal ? ", causal" : "");
		else
			buf_printf(o, "  attention %%%d: unfused kernels, scores in memory: %s\n", v,
			           ir_attn_unfused_why(f, &a, why, sizeof why) ? why : "not grouped");
	}
}

void
sched_print_plan(FILE *out, const Plan *p)
{
	const BlockGraph *g = p->g;
	char name[96], kind[400];
	Buf o = {0};
	snprintf(kind, sizeof kind, "%s", sched_plan_kind(p));
	if (!strcmp(kind, "not overlapped")) {
		char ch[360];
		sched_plan_changes(p, ch, sizeof ch);
		snprintf(kind, sizeof kind, "not overlapped (%s)", ch);
	}
	buf_printf(&o, "plan of %s (P = %d): %s, predicted %.1f us (serial %.1f us, ideal %.1f us)\n", sym_str(p->f->name),
	           p->f->nranks, kind, p->makespan, p->serial, p->ideal);
	buf_printf(&o, "  every rank runs this plan on its own shards; ~r regions start at the rank's own rows\n");
	for (int l = 0; l < NLANES; l++) {
		if (l == LANE_COMPUTE)
			buf_printf(&o, "  compute lane (persistent kernels on %d SMs):\n", p->compute_sms);
		else
			buf_printf(&o, "  comm lane:\n");
		for (int k = 0; k < p->norder[l]; k++) {
			const Blk *b = &g->b[p->order[l][k]];
			buf_printf(&o, "    %3d  %-26s %8.2f .. %8.2f us", k, blk_name(g, p->order[l][k], name, sizeof name), b->start,
			           b->finish);
			if (b->kind == BK_COMM)
				buf_printf(&o, "  %s%s", comm_backends[g->choice[b->node].backend].name,
				           sched_push(p, b->node) ? " (pushed by its matmul's epilogue)" : "");
			for (int j = 0; j < b->npred; j++)
				if (g->b[b->pred[j]].lane != b->lane)
					buf_printf(&o, "  wait f%d", g->b[b->pred[j]].flag);
			if (b->flag >= 0)
				buf_printf(&o, "  raise f%d", b->flag);
			if (b->kind != BK_COMM && p->f->ins[b->node].attn >= 0)
				buf_printf(&o, "  attention %%%d", p->f->ins[b->node].attn);
			buf_printf(&o, "\n");
		}
	}
	attn_lines(&o, p->f);
	buf_printf(&o, "  flags: %d (64-bit epochs: call k waits for and raises k; never reset)\n", p->nflags);
	buf_printf(&o, "  extra memory in flight: %.0f bytes over the serial plan\n", p->peak_extra > 0 ? p->peak_extra : 0);
	buf_printf(&o, "  exposed communication: %.1f us (%.1f%% of the op), of %.1f us on the comm lane\n", p->exposed,
	           p->makespan > 0 ? 100 * p->exposed / p->makespan : 0, p->comm);
	fputs(o.s, out);
	buf_free(&o);
}

void
sched_explain(FILE *out, const Plan *p)
{
	const BlockGraph *g = p->g;
	char name[96];
	Buf o = {0};
	fprintf(out, "explain %s (P = %d):\n", sym_str(p->f->name), p->f->nranks);
	fputs(p->why, out);
	attn_lines(&o, p->f);
	if (o.len)
		fputs(o.s, out);
	buf_free(&o);
	fprintf(out, "  critical path (no slack):");
	for (int i = 0; i < g->n; i++)
		if (g->b[i].slack < 1e-6)
			fprintf(out, " %s", blk_name(g, i, name, sizeof name));
	fprintf(out, "\n");
}

/* One letter per node, so a band or chunk shows which op it is part of. */
static char
glyph(const BlockGraph *g, const Blk *b)
{
	static const char comp[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", comm[] = "abcdefghijklmnopqrstuvwxyz";
	int k = 0;
	for (Val v = 0; v < b->node; v++)
		for (int i = 0; i < g->n; i++)
			if (g->b[i].node == v && g->b[i].kind == b->kind) {
				k++;
				break;
			}
	return b->kind == BK_COMPUTE ? comp[k % 26] : comm[k % 26];
}

void
sched_timeline(FILE *out, const Plan *p, int nranks, int width)
{
	const BlockGraph *g = p->g;
	double span = p->makespan > 0 ? p->makespan : 1;
	char *row = xmalloc((size_t)width + 1), name[96];
	fprintf(out, "timeline of %s (P = %d), PREDICTED by the cost model: %.1f us; 1 column = %.2f us\n",
	        sym_str(p->f->name), nranks, p->makespan, span / width);
	for (int r = 0; r < nranks; r++)
		for (int l = 0; l < NLANES; l++) {
			memset(row, '.', (size_t)width);
			row[width] = 0;
			for (int k = 0; k < p->norder[l]; k++) {
				const Blk *b = &g->b[p->order[l][k]];
				int c0 = (int)floor(b->start / span * width), c1 = (int)ceil(b->finish / span * width);
				if (c1 <= c0)
					c1 = c0 + 1;
				for (int c = c0; c < c1 && c < width; c++)
					row[c] = glyph(g, b);
			}
			fprintf(out, "  r%-2d %-7s |%s|\n", r, l == LANE_COMPUTE ? "compute" : "comm", row);
		}
	fprintf(out, "  '.' idle or waiting; legend:");
	for (int i = 0; i < g->n; i++)
		if (g->b[i].index == 0 && g->b[i].phase == 0) {
			char nm[96];
			blk_name(g, i, nm, sizeof nm);
			*strrchr(nm, '.') = 0;
			fprintf(out, " %c=%s", glyph(g, &g->b[i]), nm);
		}
	fprintf(out, "\n");
	(void)name;
	free(row);
}

static void
json_name(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++)
		fprintf(out, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
	fputc('"', out);
}

/* Chrome trace: pid = rank, tid = lane, flow arrows for flags.  The same
 * format libsyncrt writes for measured traces. */
void
sched_trace_json(FILE *out, const Plan *const *plans, int nplans, int nranks)
{
	char name[96];
	bool first = true;
	double t0 = 0;
	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"kind\":\"predicted by the syncc cost model\",\"exposed\":[");
	for (int pi = 0; pi < nplans; pi++) /* the trace summary: each op's exposed communication */
		fprintf(out, "%s{\"op\":\"%s\",\"predicted_us\":%.3f,\"comm_us\":%.3f,\"exposed_comm_us\":%.3f}", pi ? "," : "",
		        sym_str(plans[pi]->f->name), plans[pi]->makespan, plans[pi]->comm, plans[pi]->exposed);
	fprintf(out, "]},\"traceEvents\":[\n");
	for (int r = 0; r < nranks; r++) {
		fprintf(out, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d (predicted)\"}}", first ? "" : ",\n", r, r);
		first = false;
		fprintf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"compute\"}}", r);
		fprintf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":\"comm\"}}", r);
	}
	for (int pi = 0; pi < nplans; pi++) {
		const Plan *p = plans[pi];
		const BlockGraph *g = p->g;
		for (int r = 0; r < nranks; r++)
			for (int i = 0; i < g->n; i++) {
				const Blk *b = &g->b[i];
				fprintf(out, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", r, b->lane,
				        t0 + b->start, b->finish - b->start);
				json_name(out, blk_name(g, i, name, sizeof name));
				fprintf(out, ",\"args\":{\"op\":\"%s\",\"predicted\":true}}", sym_str(p->f->name));
				for (int k = 0; k < b->nsucc && b->flag >= 0; k++) {
					const Blk *c = &g->b[b->succ[k]];
					if (c->lane == b->lane)
						continue;
					fprintf(out, ",\n{\"ph\":\"s\",\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":\"flag f%d\",\"cat\":\"flag\"}",
					        (pi * 100000 + b->flag) * 64 + r, r, b->lane, t0 + b->finish - 1e-3, b->flag);
					fprintf(out, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":\"flag f%d\",\"cat\":\"flag\"}",
					        (pi * 100000 + b->flag) * 64 + r, r, c->lane, t0 + c->start, b->flag);
					break;
				}
			}
		t0 += p->makespan;
	}
	fprintf(out, "\n]}\n");
}
