/* sched/mtrace.c -- reading a measured timeline (the Chrome trace JSON
 * `syncrun --trace` writes on GPUs, or any trace in that format) so the
 * SVG timeline can draw it under the prediction.
 *
 * A small JSON reader: the document is an object whose "traceEvents" is
 * an array of objects; of those only "X" (complete) events are kept, with
 * their pid (rank), tid (lane), ts and dur (µs), name and cat.  Everything
 * else is skipped as a value.  A trace holds every call of an op that ran
 * while tracing; the last call -- the last stretch of time in which some
 * lane of some rank is busy -- is kept, its times from its start. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Rd {
	const char *s, *end;
	bool bad;
	int depth;
} Rd;

enum { MAXDEPTH = 64 };

static void
ws(Rd *r)
{
	while (r->s < r->end && (*r->s == ' ' || *r->s == '\t' || *r->s == '\n' || *r->s == '\r'))
		r->s++;
}

static bool
eat(Rd *r, char c)
{
	ws(r);
	if (r->s < r->end && *r->s == c) {
		r->s++;
		return true;
	}
	return false;
}

/* string = '"' chars '"'; escapes are kept as one character ('?' for \u). */
static void
str(Rd *r, char *out, size_t n)
{
	size_t k = 0;
	if (!eat(r, '"')) {
		r->bad = true;
		return;
	}
	while (r->s < r->end && *r->s != '"') {
		char c = *r->s++;
		if (c == '\\' && r->s < r->end) {
			c = *r->s++;
			if (c == 'u') {
				r->s += r->end - r->s >= 4 ? 4 : r->end - r->s;
				c = '?';
			} else if (c == 'n' || c == 't' || c == 'r' || c == 'b' || c == 'f') {
				c = ' ';
			}
		}
		if (out && k + 1 < n)
			out[k++] = c;
	}
	if (out && n)
		out[k] = 0;
	if (!eat(r, '"'))
		r->bad = true;
}

static double
number(Rd *r)
{
	char *e;
	double x;
	ws(r);
	x = strtod(r->s, &e);
	if (e == r->s || e > r->end || !isfinite(x)) {
		r->bad = true;
		return 0;
	}
	r->s = e;
	return x;
}

static void value(Rd *r);

/* object = '{' [string ':' value {',' string ':' value}] '}', each pair
 * handed to `pair` (NULL: skipped) */
static void
object(Rd *r, void (*pair)(Rd *, const char *key, void *), void *ctx)
{
	char key[64];
	if (!eat(r, '{') || ++r->depth > MAXDEPTH) {
		r->bad = true;
		return;
	}
	if (!eat(r, '}')) {
		do {
			str(r, key, sizeof key);
			if (r->bad || !eat(r, ':')) {
				r->bad = true;
				return;
			}
			if (pair)
				pair(r, key, ctx);
			else
				value(r);
		} while (!r->bad && eat(r, ','));
		if (!eat(r, '}'))
			r->bad = true;
	}
	r->depth--;
}

/* array = '[' [value {',' value}] ']', each element handed to `elem` */
static void
array(Rd *r, void (*elem)(Rd *, void *), void *ctx)
{
	if (!eat(r, '[') || ++r->depth > MAXDEPTH) {
		r->bad = true;
		return;
	}
	if (!eat(r, ']')) {
		do
			elem ? elem(r, ctx) : value(r);
		while (!r->bad && eat(r, ','));
		if (!eat(r, ']'))
			r->bad = true;
	}
	r->depth--;
}

static void
word(Rd *r, const char *w)
{
	size_t n = strlen(w);
	ws(r);
	if ((size_t)(r->end - r->s) >= n && strncmp(r->s, w, n) == 0)
		r->s += n;
	else
		r->bad = true;
}

static void
value(Rd *r)
{
	ws(r);
	if (r->s >= r->end)
		r->bad = true;
	else if (*r->s == '{')
		object(r, NULL, NULL);
	else if (*r->s == '[')
		array(r, NULL, NULL);
	else if (*r->s == '"')
		str(r, NULL, 0);
	else if (*r->s == 't')
		word(r, "true");
	else if (*r->s == 'f')
		word(r, "false");
	else if (*r->s == 'n')
		word(r, "null");
	else
		number(r);
}

/* ---- the trace's shape ---- */

typedef struct EvRd {
	MEvent e;
	char ph[8];
	bool has_ts;
} EvRd;

static void
ev_pair(Rd *r, const char *key, void *ctx)
{
	EvRd *x = ctx;
	ws(r);
	if (strcmp(key, "ph") == 0 && r->s < r->end && *r->s == '"')
		str(r, x->ph, sizeof x->ph);
	else if (strcmp(key, "name") == 0 && r->s < r->end && *r->s == '"')
		str(r, x->e.name, sizeof x->e.name);
	else if (strcmp(key, "cat") == 0 && r->s < r->end && *r->s == '"')
		str(r, x->e.cat, sizeof x->e.cat);
	else if (strcmp(key, "pid") == 0)
		x->e.pid = (int)number(r);
	else if (strcmp(key, "tid") == 0)
		x->e.tid = (int)number(r);
	else if (strcmp(key, "ts") == 0)
		x->e.ts = number(r), x->has_ts = true;
	else if (strcmp(key, "dur") == 0)
		x->e.dur = number(r);
	else
		value(r);
}

static void
ev_elem(Rd *r, void *ctx)
{
	Measured *m = ctx;
	EvRd x;
	memset(&x, 0, sizeof x);
	ws(r);
	if (r->s >= r->end || *r->s != '{') {
		value(r);
		return;
	}
	object(r, ev_pair, &x);
	if (r->bad || strcmp(x.ph, "X") || !x.has_ts || x.e.pid < 0 || x.e.tid < 0 || x.e.tid >= NLANES ||
	    strcmp(x.e.cat, "meta") == 0)
		return;
	if (x.e.dur < 0)
		x.e.dur = 0;
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->ev = xrealloc(m->ev, (size_t)m->cap * sizeof *m->ev);
	}
	m->ev[m->n++] = x.e;
}

static void
other_pair(Rd *r, const char *key, void *ctx)
{
	Measured *m = ctx;
	ws(r);
	if ((strcmp(key, "kind") == 0 || strcmp(key, "source") == 0) && r->s < r->end && *r->s == '"')
		str(r, m->kind, sizeof m->kind);
	else
		value(r);
}

static void
top_pair(Rd *r, const char *key, void *ctx)
{
	ws(r);
	if (strcmp(key, "traceEvents") == 0 && r->s < r->end && *r->s == '[')
		array(r, ev_elem, ctx);
	else if (strcmp(key, "otherData") == 0 && r->s < r->end && *r->s == '{')
		object(r, other_pair, ctx);
	else
		value(r);
}

static int
ev_cmp(const void *a, const void *b)
{
	const MEvent *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Keeps the last call: the events of the last stretch of busy time. */
static void
last_call(Measured *m)
{
	double reach = -INFINITY, from = 0;
	int first = 0, k = 0;
	qsort(m->ev, (size_t)m->n, sizeof *m->ev, ev_cmp);
	for (int i = 0; i < m->n; i++) {
		if (m->ev[i].ts > reach + 1e-6) { /* a gap: a new call starts here */
			first = i;
			from = m->ev[i].ts;
		}
		if (m->ev[i].ts + m->ev[i].dur > reach)
			reach = m->ev[i].ts + m->ev[i].dur;
	}
	m->span = m->n ? reach - from : 0;
	for (int i = first; i < m->n; i++) {
		m->ev[k] = m->ev[i];
		m->ev[k++].ts -= from;
	}
	m->n = k;
	for (int i = 0; i < m->n; i++)
		if (m->ev[i].pid + 1 > m->nranks)
			m->nranks = m->ev[i].pid + 1;
}

bool
sched_read_trace(const char *path, Measured *m, char *err, size_t n)
{
	char *text;
	size_t len;
	const char *why;
	Rd r;
	memset(m, 0, sizeof *m);
	snprintf(m->path, sizeof m->path, "%s", path);
	if (!read_file(path, &text, &len, (size_t)1 << 30, &why)) {
		snprintf(err, n, "cannot read the measured trace %s: %s", path, why);
		return false;
	}
	r = (Rd){text, text + len, false, 0};
	ws(&r);
	if (r.s < r.end && *r.s == '[') /* the array form of the format */
		array(&r, ev_elem, m);
	else
		object(&r, top_pair, m);
	free(text);
	if (r.bad || !m->n) {
		snprintf(err, n, "%s: %s", path, r.bad ? "not a Chrome trace (JSON with traceEvents)" : "no timed events");
		sched_measured_free(m);
		return false;
	}
	last_call(m);
	return true;
}

void
sched_measured_free(Measured *m)
{
	free(m->ev);
	m->ev = NULL;
	m->n = m->cap = 0;
}
