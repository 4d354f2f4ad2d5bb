/* sched/svg.c -- the timeline as a picture (--timeline-svg).
 *
 * One row per rank and lane, the predicted plan first; under it, when a
 * measured trace is given (syncrun --trace on GPUs, or --measured FILE),
 * the measured last call on the same time axis.  Each block is a box in
 * its op's colour, named when the name fits (and always in its tooltip);
 * flags are arrows from the block that raises them to the one that waits;
 * exposed communication -- comm-lane time with no compute beside it -- is
 * hatched red.  An axis in µs and a legend close the picture. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LEFT = 150, PLOT = 1000, RIGHT = 24, LH = 20, RGAP = 6, CHARW = 6 };

static const char *const comp_colour[] = {"#4e79a7", "#59a14f", "#76b7b2", "#b07aa1", "#9c755f", "#bab0ac"};
static const char *const comm_colour[] = {"#f28e2b", "#edc948", "#ff9da7", "#e8a87c", "#d37295"};
static const char MEAS_COMP[] = "#a0bcd8", MEAS_COMM[] = "#f6c08f", MEAS_WAIT[] = "#c8c8c8";

typedef struct Svg {
	FILE *out;
	double total; /* µs the axis spans */
	double y;     /* the next row's top */
} Svg;

static double
xof(const Svg *s, double t)
{
	return LEFT + t / s->total * PLOT;
}

/* XML text: the five characters that need it escaped. */
static void
text_esc(FILE *out, const char *t)
{
	for (; *t; t++)
		switch (*t) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*t, out);
		}
}

static void
label(const Svg *s, double x, double y, const char *anchor, const char *t)
{
	fprintf(s->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, y, anchor);
	text_esc(s->out, t);
	fputs("</text>\n", s->out);
}

/* A box from t0 to t1 on the row at y, with a tooltip and, if it fits, a
 * name inside (the long one, else the short one). */
static void
box(const Svg *s, double t0, double t1, double y, double h, const char *fill, const char *tip, const char *name,
    const char *shortname)
{
	double x = xof(s, t0), w = xof(s, t1) - x;
	if (w < 0.5)
		w = 0.5;
	fprintf(s->out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"white\" stroke-width=\"0.5\"><title>",
	        x, y, w, h, fill);
	text_esc(s->out, tip);
	fputs("</title></rect>\n", s->out);
	if (name && w >= (double)strlen(name) * CHARW + 4)
		label(s, x + 2, y + h - 6, "start", name);
	else if (shortname && w >= (double)strlen(shortname) * CHARW + 4)
		label(s, x + 2, y + h - 6, "start", shortname);
}

static void
hatch(const Svg *s, double t0, double t1, double y)
{
	fprintf(s->out, "<rect class=\"exposed\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%d\" fill=\"url(#exposed)\"/>\n",
	        xof(s, t0), y, xof(s, t1) - xof(s, t0), LH - 2);
}

static void
defs(const Svg *s)
{
	fputs("<defs>\n"
	      "<pattern id=\"exposed\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
	      "<rect width=\"6\" height=\"6\" fill=\"#e15759\" fill-opacity=\"0.25\"/>"
	      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c0282d\" stroke-width=\"2\"/></pattern>\n"
	      "<marker id=\"arrow\" markerWidth=\"6\" markerHeight=\"6\" refX=\"5\" refY=\"3\" orient=\"auto\">"
	      "<path d=\"M0,0 L6,3 L0,6 z\" fill=\"#333\"/></marker>\n"
	      "</defs>\n",
	      s->out);
}

/* ---- the axis ---- */

/* A tick step of 1, 2 or 5 times a power of ten giving at most ~10 ticks. */
static double
tick_step(double total)
{
	double raw = total / 10, mag = pow(10, floor(log10(raw)));
	return raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
}

/* Grid lines from `top` to `bottom`, behind the rows. */
static void
grid(const Svg *s, double top, double bottom)
{
	double step = tick_step(s->total);
	for (double v = 0; v <= s->total * (1 + 1e-9); v += step)
		fprintf(s->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", xof(s, v), top,
		        xof(s, v), bottom);
}

/* The axis at `y`: ticks and their µs under it. */
static void
axis(const Svg *s, double y)
{
	double step = tick_step(s->total);
	char t[32];
	fprintf(s->out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>\n", LEFT, y, LEFT + PLOT, y);
	for (double v = 0; v <= s->total * (1 + 1e-9); v += step) {
		double x = xof(s, v);
		fprintf(s->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, y, x, y + 4);
		snprintf(t, sizeof t, "%g", v);
		label(s, x, y + 15, "middle", t);
	}
	label(s, LEFT + PLOT / 2.0, y + 30, "middle", "time (µs)");
}

/* ---- the prediction ---- */

/* A colour for every node with blocks: compute ops blue-green, comm ops
 * orange, in the order the op computes them. */
static const char **
node_colours(const Plan *p)
{
	const BlockGraph *g = p->g;
	const char **c = xcalloc((size_t)p->f->nins + 1, sizeof *c);
	int kc = 0, km = 0;
	for (int i = 0; i < g->n; i++) {
		Val v = g->b[i].node;
		if (c[v])
			continue;
		c[v] = g->b[i].kind == BK_COMPUTE ? comp_colour[kc++ % NELEM(comp_colour)]
		                                  : comm_colour[km++ % NELEM(comm_colour)];
	}
	return c;
}

static double
lane_y(double rank_top, int lane)
{
	return rank_top + lane * LH;
}

typedef struct HatchCtx {
	const Svg *s;
	double t0, y;
} HatchCtx;

static void
hatch_piece(void *ctx, double from, double to)
{
	HatchCtx *h = ctx;
	hatch(h->s, h->t0 + from, h->t0 + to, h->y);
}

/* One plan's blocks on the rows of one rank, its exposed communication
 * and its flags. */
static void
plan_rank(const Svg *s, const Plan *p, const char **colour, double t0, double top)
{
	const BlockGraph *g = p->g;
	char name[96], tip[200];
	HatchCtx h = {s, t0, lane_y(top, LANE_COMM) + 1};
	for (int i = 0; i < g->n; i++) {
		const Blk *b = &g->b[i];
		const char *dot;
		blk_name(g, i, name, sizeof name);
		dot = strchr(strchr(name, '%') ? strchr(name, '%') : name, '.');
		snprintf(tip, sizeof tip, "%s %.2f-%.2f us (predicted)", name, b->start, b->finish);
		box(s, t0 + b->start, t0 + b->finish, lane_y(top, b->lane) + 1, LH - 2, colour[b->node], tip, name,
		    dot ? dot + 1 : NULL);
	}
	sched_exposed(p, NULL, hatch_piece, &h);
	for (int i = 0; i < g->n; i++) {
		const Blk *b = &g->b[i];
		for (int k = 0; k < b->nsucc && b->flag >= 0; k++) {
			const Blk *c = &g->b[b->succ[k]];
			double y1 = lane_y(top, b->lane) + LH / 2.0, y2 = lane_y(top, c->lane) + (c->lane > b->lane ? 1 : LH - 1);
			if (c->lane == b->lane)
				continue;
			fprintf(s->out,
			        "<line class=\"flag\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"0.8\" "
			        "marker-end=\"url(#arrow)\"><title>flag f%d</title></line>\n",
			        xof(s, t0 + b->finish), y1, xof(s, t0 + c->start), y2, b->flag);
		}
	}
}

static void
rank_rows(Svg *s, int nranks, const char *what, double *tops)
{
	static const char *const lanes[NLANES] = {"compute", "comm"};
	char t[64];
	double top = s->y;
	for (int r = 0; r < nranks; r++) {
		tops[r] = s->y;
		fprintf(s->out, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", LEFT, s->y, PLOT,
		        NLANES * LH, r % 2 ? "#ffffff" : "#f4f4f4");
		for (int l = 0; l < NLANES; l++) {
			snprintf(t, sizeof t, "r%d %s%s", r, lanes[l], what);
			label(s, LEFT - 6, lane_y(s->y, l) + LH - 6, "end", t);
		}
		s->y += NLANES * LH + RGAP;
	}
	grid(s, top, s->y - RGAP);
}

static void
predicted(Svg *s, const Plan *const *plans, int nplans, int nranks)
{
	double *tops = xcalloc((size_t)nranks + 1, sizeof *tops), t0 = 0, top = s->y;
	rank_rows(s, nranks, "", tops);
	for (int pi = 0; pi < nplans; pi++) {
		const char **colour = node_colours(plans[pi]);
		if (nplans > 1) { /* where each op starts */
			fprintf(s->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"3,3\"/>\n",
			        xof(s, t0), top - 12, xof(s, t0), s->y);
			label(s, xof(s, t0) + 3, top - 3, "start", sym_str(plans[pi]->f->name));
		}
		for (int r = 0; r < nranks; r++)
			plan_rank(s, plans[pi], colour, t0, tops[r]);
		free(colour);
		t0 += plans[pi]->makespan;
	}
	free(tops);
}

/* ---- the measurement ---- */

typedef struct TSpan {
	double a, b;
} TSpan;

static int
span_cmp(const void *x, const void *y)
{
	const TSpan *p = x, *q = y;
	return p->a < q->a ? -1 : p->a > q->a;
}

static int
merge(TSpan *v, int n)
{
	int k = 0;
	if (!n)
		return 0;
	qsort(v, (size_t)n, sizeof *v, span_cmp);
	for (int i = 1; i < n; i++)
		if (v[i].a <= v[k].b) {
			if (v[i].b > v[k].b)
				v[k].b = v[i].b;
		} else {
			v[++k] = v[i];
		}
	return k + 1;
}

static bool
is_cat(const MEvent *e, const char *cat)
{
	return strcmp(e->cat, cat) == 0;
}

/* What counts as compute on a measured rank: the kernels' block records
 * where the trace has them, else its other compute events (bands folded
 * from them), else the kernels (whose spinning on a flag then counts). */
static int
measured_compute(const Measured *m, int rank, TSpan *out)
{
	for (int pass = 0; pass < 3; pass++) {
		int n = 0;
		for (int i = 0; i < m->n; i++) {
			const MEvent *e = &m->ev[i];
			bool kernel = is_cat(e, "kernel"), block = is_cat(e, "block");
			if (e->pid != rank || e->tid != LANE_COMPUTE)
				continue;
			if ((pass == 0 && block) || (pass == 1 && !block && !kernel) || (pass == 2 && kernel))
				out[n++] = (TSpan){e->ts, e->ts + e->dur};
		}
		if (n)
			return merge(out, n);
	}
	return 0;
}

static bool
is_comm_work(const MEvent *e)
{
	return e->tid == LANE_COMM && !is_cat(e, "wait");
}

/* Exposed pieces of rank's measured communication, hatched; returns µs. */
static double
measured_exposed(const Svg *s, const Measured *m, int rank, double y)
{
	TSpan *c = xmalloc((size_t)(m->n + 1) * sizeof *c), *w = xmalloc((size_t)(m->n + 1) * sizeof *w);
	int nc = measured_compute(m, rank, c), nw = 0, k = 0;
	double exposed = 0;
	for (int i = 0; i < m->n; i++)
		if (m->ev[i].pid == rank && is_comm_work(&m->ev[i]))
			w[nw++] = (TSpan){m->ev[i].ts, m->ev[i].ts + m->ev[i].dur};
	nw = merge(w, nw);
	for (int i = 0; i < nw; i++) {
		double t = w[i].a;
		while (k < nc && c[k].b <= t)
			k++;
		for (int j = k; j < nc && c[j].a < w[i].b && t < w[i].b; j++) {
			if (c[j].a > t) {
				if (s)
					hatch(s, t, c[j].a, y);
				exposed += c[j].a - t;
			}
			if (c[j].b > t)
				t = c[j].b;
		}
		if (t < w[i].b) {
			if (s)
				hatch(s, t, w[i].b, y);
			exposed += w[i].b - t;
		}
	}
	free(c);
	free(w);
	return exposed;
}

/* "chunk 3 all_reduce" -> "chunk 3": a measured event's short name. */
static const char *
two_words(const char *name, char *buf, size_t n)
{
	const char *sp = strchr(name, ' ');
	sp = sp ? strchr(sp + 1, ' ') : NULL;
	snprintf(buf, n, "%.*s", sp ? (int)(sp - name) : (int)strlen(name), name);
	return buf;
}

static void
measured_rank(const Svg *s, const Measured *m, int rank, double top)
{
	TSpan *blocks = xmalloc((size_t)(m->n + 1) * sizeof *blocks);
	int nb = 0;
	char tip[160], word2[48];
	for (int i = 0; i < m->n; i++) {
		const MEvent *e = &m->ev[i];
		double y = lane_y(top, e->tid) + 1;
		if (e->pid != rank)
			continue;
		snprintf(tip, sizeof tip, "%s %.2f-%.2f us (measured)", e->name, e->ts, e->ts + e->dur);
		if (is_cat(e, "block"))
			blocks[nb++] = (TSpan){e->ts, e->ts + e->dur};
		else if (is_cat(e, "kernel")) /* a kernel's life: a thin bar on top */
			box(s, e->ts, e->ts + e->dur, y - 1, 4, "#555", tip, NULL, NULL);
		else if (is_cat(e, "wait"))
			box(s, e->ts, e->ts + e->dur, y + LH / 2.0 - 3, 4, MEAS_WAIT, tip, NULL, NULL);
		else
			box(s, e->ts, e->ts + e->dur, y + 3, LH - 5, e->tid == LANE_COMPUTE ? MEAS_COMP : MEAS_COMM, tip, e->name,
			    two_words(e->name, word2, sizeof word2));
	}
	nb = merge(blocks, nb);
	for (int i = 0; i < nb; i++) /* thousands of CTA records: their union */
		box(s, blocks[i].a, blocks[i].b, lane_y(top, LANE_COMPUTE) + 4, LH - 5, MEAS_COMP, "kernel blocks (measured)",
		    "blocks", NULL);
	free(blocks);
	measured_exposed(s, m, rank, lane_y(top, LANE_COMM) + 1);
}

static void
measured(Svg *s, const Measured *m, int nranks)
{
	int P = m->nranks < nranks ? m->nranks : nranks;
	double *tops = xcalloc((size_t)P + 1, sizeof *tops);
	rank_rows(s, P, " (m)", tops);
	for (int r = 0; r < P; r++)
		measured_rank(s, m, r, tops[r]);
	free(tops);
}

/* The least hidden measured rank's exposed communication, for the title. */
static double
measured_worst(const Measured *m, int nranks, int *worst)
{
	double most = -1;
	*worst = 0;
	for (int r = 0; r < m->nranks && r < nranks; r++) {
		double e = measured_exposed(NULL, m, r, 0);
		if (e > most) {
			most = e;
			*worst = r;
		}
	}
	return most > 0 ? most : 0;
}

/* ---- the legend ---- */

typedef struct Legend {
	Svg *s;
	double x;
} Legend;

static void
legend_item(Legend *l, const char *fill, const char *what)
{
	double w = 22 + (double)strlen(what) * CHARW + 14;
	if (l->x + w > LEFT + PLOT) {
		l->x = LEFT;
		l->s->y += 18;
	}
	if (strcmp(fill, "flag") == 0)
		fprintf(l->s->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" marker-end=\"url(#arrow)\"/>\n",
		        l->x, l->s->y + 5, l->x + 16, l->s->y + 5);
	else
		fprintf(l->s->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"10\" fill=\"%s\" stroke=\"#999\" stroke-width=\"0.5\"/>\n",
		        l->x, l->s->y, fill);
	label(l->s, l->x + 22, l->s->y + 9, "start", what);
	l->x += w;
}

static void
legend(Svg *s, const Plan *const *plans, int nplans, const Measured *m)
{
	Legend l = {s, LEFT};
	char what[128];
	label(s, LEFT - 6, s->y + 9, "end", "legend");
	for (int pi = 0; pi < nplans; pi++) {
		const Plan *p = plans[pi];
		const char **colour = node_colours(p);
		for (Val v = 0; v < p->f->nins; v++) {
			if (!colour[v])
				continue;
			snprintf(what, sizeof what, "%s%s%s %%%d", nplans > 1 ? sym_str(p->f->name) : "", nplans > 1 ? ": " : "",
			         ir_ops[p->f->ins[v].op].name, v);
			legend_item(&l, colour[v], what);
		}
		free(colour);
	}
	legend_item(&l, "url(#exposed)", "exposed communication");
	legend_item(&l, "flag", "flag: raised -> waited on");
	if (m) {
		legend_item(&l, MEAS_COMP, "measured compute");
		legend_item(&l, MEAS_COMM, "measured communication");
		legend_item(&l, MEAS_WAIT, "measured wait for a flag");
		legend_item(&l, "#555", "measured kernel");
	}
	s->y += 18;
}

/* ---- the picture ---- */

static void
titles(Svg *s, const Plan *const *plans, int nplans, int nranks, const Measured *m)
{
	double span = 0, exposed = 0;
	char t[1024];
	Buf names = {0};
	for (int i = 0; i < nplans; i++) {
		span += plans[i]->makespan;
		exposed += plans[i]->exposed;
		buf_printf(&names, "%s%s", i ? ", " : "", sym_str(plans[i]->f->name));
	}
	snprintf(t, sizeof t, "%s (P = %d): PREDICTED by the cost model, %.1f µs; exposed communication %.1f µs (%.1f%%)",
	         names.s ? names.s : "", nranks, span, exposed, span > 0 ? 100 * exposed / span : 0);
	fprintf(s->out, "<text x=\"4\" y=\"18\" font-size=\"13\" font-weight=\"bold\">");
	text_esc(s->out, t);
	fputs("</text>\n", s->out);
	if (m) {
		int worst;
		double e = measured_worst(m, nranks, &worst);
		const char *base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
		snprintf(t, sizeof t, "below, (m): MEASURED, the last call of %s: %.1f µs; exposed communication %.1f µs (%.1f%%) on rank %d",
		         base, m->span, e, m->span > 0 ? 100 * e / m->span : 0, worst);
		label(s, 4, 36, "start", t);
		if (m->kind[0]) {
			fprintf(s->out, "<text x=\"4\" y=\"50\" fill=\"#666\">");
			text_esc(s->out, m->kind);
			fputs("</text>\n", s->out);
		}
	}
	buf_free(&names);
}

void
sched_svg(FILE *out, const Plan *const *plans, int nplans, int nranks, const Measured *m)
{
	char *body = NULL;
	size_t len = 0;
	Svg s = {open_memstream(&body, &len), 0, m ? 76 : 48};
	if (!s.out)
		die("open_memstream failed");
	for (int i = 0; i < nplans; i++)
		s.total += plans[i]->makespan;
	if (m && m->span > s.total)
		s.total = m->span;
	if (s.total <= 0)
		s.total = 1;
	defs(&s);
	titles(&s, plans, nplans, nranks, m);
	predicted(&s, plans, nplans, nranks);
	if (m) {
		s.y += 18;
		label(&s, LEFT, s.y - 6, "start", "MEASURED (m): the last call of the trace");
		measured(&s, m, nranks);
	}
	axis(&s, s.y);
	s.y += 46;
	legend(&s, plans, nplans, m);
	fclose(s.out);
	/* the size is known once everything is drawn */
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" font-family=\"monospace\" font-size=\"10\">\n",
	        LEFT + PLOT + RIGHT, s.y + 8);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fwrite(body, 1, len, out);
	fprintf(out, "</svg>\n");
	free(body);
}
