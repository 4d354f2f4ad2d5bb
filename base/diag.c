/* base/diag.c -- sources and the one diagnostics module.
 *
 * Text form (stderr), as gcc and clang print it:
 *     file:line:col: error: message
 *         7 |     return x @ w;
 *           |            ^~~~~
 * JSON form (stdout, one object per line, nothing else on stdout):
 *     {"file":..,"line":..,"column":..,"end_line":..,"end_column":..,
 *      "level":"error","message":".."}
 * Lines and columns are 1-based; columns count bytes. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct SrcEnt {
	Src src;
	uint32_t *line;  /* byte offset of each line start, built lazily */
	uint32_t nline;
} SrcEnt;

static struct {
	SrcEnt *v;
	int n, cap;
} srcs;

static struct {
	DiagFormat fmt;
	const char *tool;
	int errors;       /* every error, shown or not: decides the exit status */
	int shown;        /* errors printed, capped at LIM_ERRORS */
	int printed;      /* diagnostics of every level printed (or, quiet, that would be) */
	bool colour, full, quiet;
	bool dropped;     /* the last error or warning repeated an earlier one */
	uint64_t *seen;   /* hashes of the errors and warnings printed */
	uint32_t nseen, capseen;
} dg = {DIAG_TEXT, "syncc", 0, 0, 0, false, false, false, false, NULL, 0, 0};

int
src_add(const char *path, const char *text, size_t len)
{
	if (srcs.n == srcs.cap) {
		srcs.cap = srcs.cap ? 2 * srcs.cap : 16;
		srcs.v = xrealloc(srcs.v, srcs.cap * sizeof *srcs.v);
	}
	srcs.v[srcs.n] = (SrcEnt){{xstrdup(path), text, len}, NULL, 0};
	return srcs.n++;
}

const Src *
src_get(int file)
{
	ASSERT(file >= 0 && file < srcs.n);
	return &srcs.v[file].src;
}

static void
index_lines(SrcEnt *e)
{
	uint32_t n = 1, k = 1;
	for (size_t i = 0; i < e->src.len; i++)
		n += e->src.text[i] == '\n';
	e->line = xmalloc(n * sizeof *e->line);
	e->line[0] = 0;
	for (size_t i = 0; i < e->src.len; i++)
		if (e->src.text[i] == '\n')
			e->line[k++] = (uint32_t)i + 1;
	e->nline = n;
}

void
src_linecol(int file, uint32_t off, int *line, int *col)
{
	SrcEnt *e = &srcs.v[file];
	uint32_t lo = 0, hi;
	if (!e->line)
		index_lines(e);
	hi = e->nline;
	while (hi - lo > 1) { /* last line start <= off */
		uint32_t mid = lo + (hi - lo) / 2;
		if (e->line[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	*line = (int)lo + 1;
	*col = (int)(off - e->line[lo]) + 1;
}

Span
span_join(Span a, Span b)
{
	if (a.file < 0)
		return b;
	if (b.file < 0 || b.file != a.file)
		return a;
	return (Span){a.file, a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}

void
diag_setup(DiagFormat fmt, const char *tool)
{
	const char *nc = getenv("NO_COLOR");
	dg.fmt = fmt;
	dg.tool = tool;
	dg.colour = fmt == DIAG_TEXT && isatty(2) && !(nc && *nc);
}

const char *
diag_tool(void)
{
	return dg.tool;
}

int
diag_printed(void)
{
	return dg.printed;
}

int
diag_errors(void)
{
	return dg.errors;
}

bool
diag_full(void)
{
	return dg.full;
}

void
diag_quiet(bool q)
{
	dg.quiet = q;
}

void
diag_reset(void)
{
	for (int i = 0; i < srcs.n; i++) {
		free((char *)srcs.v[i].src.path);
		free(srcs.v[i].line);
	}
	srcs.n = 0;
	dg.errors = dg.shown = 0;
	dg.full = dg.dropped = false;
	free(dg.seen);
	dg.seen = NULL;
	dg.nseen = dg.capseen = 0;
}

/* An inlined op or kernel is elaborated once per call, so a mistake in
 * its body that does not depend on the caller would be reported once per
 * call.  The same message at the same place is printed once; the notes
 * that follow a repeated one are dropped with it. */
static bool
seen_before(DiagLevel lv, Span sp, const char *msg)
{
	uint64_t h = 1469598103934665603u;
	uint32_t i;
	h = (h ^ (uint64_t)lv) * 1099511628211u;
	h = (h ^ (uint64_t)(uint32_t)sp.file) * 1099511628211u;
	h = (h ^ sp.lo) * 1099511628211u;
	h = (h ^ sp.hi) * 1099511628211u;
	for (const char *c = msg; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211u;
	h |= 1; /* 0 marks an empty slot */
	if (2 * (dg.nseen + 1) > dg.capseen) {
		uint32_t cap = dg.capseen ? 2 * dg.capseen : 64;
		uint64_t *t = xcalloc(cap, sizeof *t);
		for (uint32_t k = 0; k < dg.capseen; k++)
			if (dg.seen[k]) {
				for (i = (uint32_t)dg.seen[k] & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
					;
				t[i] = dg.seen[k];
			}
		free(dg.seen);
		dg.seen = t;
		dg.capseen = cap;
	}
	for (i = (uint32_t)h & (dg.capseen - 1); dg.seen[i]; i = (i + 1) & (dg.capseen - 1))
		if (dg.seen[i] == h)
			return true;
	dg.seen[i] = h;
	dg.nseen++;
	return false;
}

static const struct {
	const char *word, *colour;
} levels[] = {
	[DG_ERROR] = {"error", "\033[1;31m"},
	[DG_WARNING] = {"warning", "\033[1;35m"},
	[DG_NOTE] = {"note", "\033[1;36m"},
};

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static int
utf8_len(const unsigned char *s, size_t n)
{
	int k = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (k == 0 || (size_t)k > n || (k == 2 && s[0] < 0xc2))
		return 0;
	for (int i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return k;
}

/* The source line, made safe for a terminal, from byte lo to hi. */
static void
put_line(FILE *f, const char *s, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi;) {
		unsigned char c = (unsigned char)s[i];
		int k = utf8_len((const unsigned char *)s + i, hi - i);
		if (c == '\t')
			fputc('\t', f);
		else if (k == 1 && (c < 0x20 || c == 0x7f))
			fputc(' ', f);
		else if (k == 0)
			fputc('?', f);
		else
			fwrite(s + i, 1, k, f);
		i += k ? k : 1;
	}
}

enum { WINDOW = 200 }; /* bytes of a long line shown around the span */

static void
show_source(Span sp, int line, int col)
{
	const Src *s = src_get(sp.file);
	size_t bol = sp.lo - (col - 1), eol = sp.lo, from, to, lo, hi;
	while (eol < s->len && s->text[eol] != '\n')
		eol++;
	from = bol;
	to = eol;
	if (sp.lo - bol > WINDOW / 2)
		from = sp.lo - WINDOW / 2;
	if (to - from > WINDOW)
		to = from + WINDOW;
	while (from > bol && ((unsigned char)s->text[from] & 0xc0) == 0x80)
		from--;
	lo = sp.lo;
	hi = sp.hi > eol ? eol : sp.hi;
	if (hi > to)
		hi = to;
	if (hi <= lo)
		hi = lo + 1;
	fprintf(stderr, " %5d | %s", line, from > bol ? "..." : "");
	put_line(stderr, s->text, from, to);
	fprintf(stderr, "%s\n       | %s", to < eol ? "..." : "", from > bol ? "   " : "");
	for (size_t i = from; i < lo; i++) {
		unsigned char c = (unsigned char)s->text[i];
		if ((c & 0xc0) != 0x80)
			fputc(c == '\t' ? '\t' : ' ', stderr);
	}
	if (dg.colour)
		fputs("\033[1;32m", stderr);
	fputc('^', stderr);
	for (size_t i = lo + 1; i < hi; i++)
		if (((unsigned char)s->text[i] & 0xc0) != 0x80)
			fputc('~', stderr);
	fputs(dg.colour ? "\033[0m\n" : "\n", stderr);
}

/* A JSON string literal of s (invalid UTF-8 becomes U+FFFD). */
void
diag_json_str(FILE *f, const char *s)
{
	size_t n = strlen(s);
	fputc('"', f);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		int k = utf8_len((const unsigned char *)s + i, n - i);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (k == 1 && (c < 0x20 || c == 0x7f))
			fprintf(f, "\\u%04x", c);
		else if (k == 0)
			fputs("\\ufffd", f);
		else
			fwrite(s + i, 1, k, f);
		i += k ? k : 1;
	}
	fputc('"', f);
}

static void
emit_json(DiagLevel lv, Span sp, const char *msg)
{
	fputs("{", stdout);
	if (sp.file >= 0) {
		int l0, c0, l1, c1;
		src_linecol(sp.file, sp.lo, &l0, &c0);
		src_linecol(sp.file, sp.hi > sp.lo ? sp.hi : sp.lo + 1, &l1, &c1);
		fputs("\"file\":", stdout);
		diag_json_str(stdout, src_get(sp.file)->path);
		printf(",\"line\":%d,\"column\":%d,\"end_line\":%d,\"end_column\":%d,", l0, c0, l1, c1);
	}
	printf("\"level\":\"%s\",\"message\":", levels[lv].word);
	diag_json_str(stdout, msg);
	fputs("}\n", stdout);
	fflush(stdout);
}

static void
emit_text(DiagLevel lv, Span sp, const char *msg)
{
	int line = 0, col = 0;
	const char *bold = dg.colour ? "\033[1m" : "", *off = dg.colour ? "\033[0m" : "";
	if (sp.file >= 0) {
		src_linecol(sp.file, sp.lo, &line, &col);
		fprintf(stderr, "%s%s:%d:%d:%s ", bold, src_get(sp.file)->path, line, col, off);
	} else if (lv != DG_NOTE) {
		fprintf(stderr, "%s%s:%s ", bold, dg.tool, off);
	}
	fprintf(stderr, "%s%s:%s %s\n", dg.colour ? levels[lv].colour : "", levels[lv].word, off, msg);
	if (sp.file >= 0)
		show_source(sp, line, col);
}

void
diag_vemit(DiagLevel lv, Span sp, const char *fmt, va_list ap)
{
	Buf b = {0};
	dg.errors += lv == DG_ERROR;
	if (dg.full)
		return;
	buf_vprintf(&b, fmt, ap);
	if (lv == DG_NOTE ? dg.dropped : (dg.dropped = seen_before(lv, sp, b.s))) {
		buf_free(&b);
		return;
	}
	if (lv == DG_ERROR && dg.shown == LIM_ERRORS) {
		dg.full = true;
		if (!dg.quiet && dg.fmt == DIAG_JSON)
			emit_json(DG_NOTE, NOSPAN, "too many errors; stopping");
		else if (!dg.quiet)
			emit_text(DG_NOTE, NOSPAN, "too many errors; stopping");
		buf_free(&b);
		return;
	}
	dg.shown += lv == DG_ERROR;
	dg.printed++;
	if (dg.quiet) {
		buf_free(&b);
		return;
	}
	if (dg.fmt == DIAG_JSON)
		emit_json(lv, sp, b.s);
	else
		emit_text(lv, sp, b.s);
	buf_free(&b);
}

void
diag_emit(DiagLevel lv, Span sp, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vemit(lv, sp, fmt, ap);
	va_end(ap);
}

void
diag_usage(const char *fmt, ...)
{
	va_list ap;
	Buf b = {0};
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (dg.fmt == DIAG_JSON)
		emit_json(DG_ERROR, NOSPAN, b.s);
	else
		fprintf(stderr, "%s: error: %s\n", dg.tool, b.s);
	buf_free(&b);
}
