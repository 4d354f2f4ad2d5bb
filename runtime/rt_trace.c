/* runtime/rt_trace.c -- the measured timeline: events in host memory, packed
 * to bytes to travel to rank 0, and written as Chrome trace JSON, the format
 * of the compiler's predicted timelines (pid = rank, tid = lane, "X" events
 * in microseconds), so the two open side by side in Perfetto. */
#include "rt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
rt_trace_add(RtTrace *t, const RtTraceEv *e)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		RtTraceEv *ev = realloc(t->ev, cap * sizeof *ev);
		if (!ev)
			return SYN_ENOMEM;
		t->ev = ev;
		t->cap = cap;
	}
	t->ev[t->n++] = *e;
	return SYN_OK;
}

void
rt_trace_free(RtTrace *t)
{
	free(t->ev);
	t->ev = NULL;
	t->n = t->cap = 0;
}

/* The packed form is the array itself: both ends run this library on the
 * same kind of machine, and unpack checks the size. */
size_t
rt_trace_pack(const RtTrace *t, char **out)
{
	size_t len = t->n * sizeof(RtTraceEv);
	*out = malloc(len ? len : 1);
	if (!*out)
		return 0;
	if (len)
		memcpy(*out, t->ev, len);
	return len;
}

int
rt_trace_unpack(RtTrace *t, const char *buf, size_t len)
{
	if (len % sizeof(RtTraceEv))
		return SYN_EARG;
	for (size_t i = 0; i < len / sizeof(RtTraceEv); i++) {
		RtTraceEv e;
		memcpy(&e, buf + i * sizeof e, sizeof e);
		e.name[sizeof e.name - 1] = e.cat[sizeof e.cat - 1] = e.args[sizeof e.args - 1] = 0;
		if (rt_trace_add(t, &e))
			return SYN_ENOMEM;
	}
	return SYN_OK;
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void
json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* An args object cut short by its buffer would break the whole file. */
static int
args_ok(const char *a)
{
	size_t n = strlen(a);
	return n && a[0] == '{' && a[n - 1] == '}';
}

static int
is_meta(const RtTraceEv *e)
{
	return !strcmp(e->cat, "meta");
}

static int64_t
t0_of(const RtTrace *t)
{
	int64_t m = 0;
	int any = 0;
	for (size_t i = 0; i < t->n; i++)
		if (!is_meta(&t->ev[i]) && (!any || t->ev[i].ts_ns < m)) {
			m = t->ev[i].ts_ns;
			any = 1;
		}
	return m;
}

/* A rank's label: its "meta" event (which also carries its clock
 * alignment), else the caller's, else "rank N". */
static const RtTraceEv *
meta_of(const RtTrace *t, int pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (is_meta(&t->ev[i]) && t->ev[i].pid == pid)
			return &t->ev[i];
	return NULL;
}

static void
write_meta(FILE *f, const RtTrace *t, const RtTraceMeta *m)
{
	static const char *const lanes[] = {"compute", "comm"};
	for (int r = 0; r < m->nranks; r++) {
		const RtTraceEv *me = meta_of(t, r);
		char label[64];
		if (me)
			rt_fmt(label, sizeof label, "%s", me->name);
		else if (m->rank_label && m->rank_label[r])
			rt_fmt(label, sizeof label, "%s", m->rank_label[r]);
		else
			rt_fmt(label, sizeof label, "rank %d", r);
		fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", r);
		json_str(f, label);
		fprintf(f, "}},\n");
		if (me && args_ok(me->args))
			fprintf(f, "{\"name\":\"clock_alignment\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":%s},\n", r,
			        me->args);
		for (int l = 0; l < 2; l++)
			fprintf(f,
			        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}},"
			        "\n",
			        r, l, lanes[l]);
	}
}

static void
write_event(FILE *f, const RtTraceEv *e, int64_t t0)
{
	fprintf(f, "{\"name\":");
	json_str(f, e->name);
	fprintf(f, ",\"cat\":");
	json_str(f, e->cat[0] ? e->cat : "run");
	fprintf(f, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", e->pid, e->tid,
	        (double)(e->ts_ns - t0) / 1000.0, (double)(e->dur_ns > 0 ? e->dur_ns : 0) / 1000.0);
	if (args_ok(e->args))
		fprintf(f, ",\"args\":%s", e->args);
	fprintf(f, "},\n");
}

/* ---- exposed communication ---- */

typedef struct Span {
	int64_t a, b;
} Span;

static int
span_cmp(const void *x, const void *y)
{
	const Span *p = x, *q = y;
	return p->a < q->a ? -1 : p->a > q->a;
}

/* Sorts and merges spans in place; returns how many are left. */
static size_t
merge_spans(Span *s, size_t n)
{
	size_t k = 0;
	if (!n)
		return 0;
	qsort(s, n, sizeof *s, span_cmp);
	for (size_t i = 1; i < n; i++)
		if (s[i].a <= s[k].b) {
			if (s[i].b > s[k].b)
				s[k].b = s[i].b;
		} else {
			s[++k] = s[i];
		}
	return k + 1;
}

static int64_t
spans_len(const Span *s, size_t n)
{
	int64_t t = 0;
	for (size_t i = 0; i < n; i++)
		t += s[i].b - s[i].a;
	return t;
}

/* The part of merged spans `m` that merged spans `c` do not cover. */
static int64_t
uncovered(const Span *m, size_t nm, const Span *c, size_t nc)
{
	int64_t out = 0;
	size_t k = 0;
	for (size_t i = 0; i < nm; i++) {
		int64_t t = m[i].a;
		while (k < nc && c[k].b <= t)
			k++;
		for (size_t j = k; j < nc && c[j].a < m[i].b && t < m[i].b; j++) {
			if (c[j].a > t)
				out += c[j].a - t;
			if (c[j].b > t)
				t = c[j].b;
		}
		if (t < m[i].b)
			out += m[i].b - t;
	}
	return out;
}

/* The events of rank `pid` that pass `want`, as spans. */
static size_t
pick_spans(const RtTrace *t, int pid, int (*want)(const RtTraceEv *), Span *out)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const RtTraceEv *e = &t->ev[i];
		if (e->pid == pid && !is_meta(e) && want(e))
			out[n++] = (Span){e->ts_ns, e->ts_ns + (e->dur_ns > 0 ? e->dur_ns : 0)};
	}
	return merge_spans(out, n);
}

static int
any_ev(const RtTraceEv *e)
{
	(void)e;
	return 1;
}

static int
comm_ev(const RtTraceEv *e)
{
	return e->tid == SYN_COMM && (!strcmp(e->cat, "chunk") || !strcmp(e->cat, "copy"));
}

static int
block_ev(const RtTraceEv *e)
{
	return e->tid == SYN_COMPUTE && !strcmp(e->cat, "block");
}

static int
kernel_ev(const RtTraceEv *e)
{
	return e->tid == SYN_COMPUTE && !strcmp(e->cat, "kernel");
}

int
rt_trace_exposed(const RtTrace *t, int pid, RtExposed *e)
{
	Span *all = malloc((t->n + 1) * sizeof *all), *comm = malloc((t->n + 1) * sizeof *comm),
	     *comp = malloc((t->n + 1) * sizeof *comp);
	size_t na, nm, nc;
	memset(e, 0, sizeof *e);
	if (!all || !comm || !comp) {
		free(all);
		free(comm);
		free(comp);
		return SYN_ENOMEM;
	}
	na = pick_spans(t, pid, any_ev, all);
	nm = pick_spans(t, pid, comm_ev, comm);
	nc = pick_spans(t, pid, block_ev, comp);
	if (!nc)
		nc = pick_spans(t, pid, kernel_ev, comp);
	e->busy_us = (double)spans_len(all, na) / 1000.0;
	e->comm_us = (double)spans_len(comm, nm) / 1000.0;
	e->exposed_us = (double)uncovered(comm, nm, comp, nc) / 1000.0;
	free(all);
	free(comm);
	free(comp);
	return SYN_OK;
}

/* otherData's "exposed": each rank's exposed communication, in µs. */
static void
write_exposed(FILE *f, const RtTrace *t, int nranks)
{
	fprintf(f, ",\"exposed\":[");
	for (int r = 0; r < nranks; r++) {
		RtExposed e;
		if (rt_trace_exposed(t, r, &e))
			memset(&e, 0, sizeof e);
		fprintf(f, "%s{\"rank\":%d,\"busy_us\":%.3f,\"comm_us\":%.3f,\"exposed_comm_us\":%.3f}", r ? "," : "", r,
		        e.busy_us, e.comm_us, e.exposed_us);
	}
	fprintf(f, "]");
}

int
rt_trace_write_json(const RtTrace *t, const RtTraceMeta *m, const char *path, char *err, size_t n)
{
	FILE *f = fopen(path, "w");
	int64_t t0 = t0_of(t);
	if (!f) {
		rt_fmt(err, n, "trace: cannot write %s: %s", path, strerror(errno));
		return SYN_EARG;
	}
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"source\":\"measured\",\"clock\":");
	json_str(f, m->clock ? m->clock : "");
	write_exposed(f, t, m->nranks);
	fprintf(f, "},\n\"traceEvents\":[\n");
	write_meta(f, t, m);
	for (size_t i = 0; i < t->n; i++)
		if (!is_meta(&t->ev[i]))
			write_event(f, &t->ev[i], t0);
	/* a last metadata record, so every real one above can end in a comma */
	fprintf(f, "{\"name\":\"trace_end\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{}}\n");
	fprintf(f, "]}\n");
	if (fclose(f)) {
		rt_fmt(err, n, "trace: writing %s failed: %s", path, strerror(errno));
		return SYN_EARG;
	}
	return SYN_OK;
}
