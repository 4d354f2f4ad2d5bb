/* base/util.c -- allocation, arenas, interning, buffers, files. */
#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SYNCC_SHAREDIR
#define SYNCC_SHAREDIR "/usr/local/share/syncc"
#endif

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		die("out of memory (%zu x %zu bytes)", n, m);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

char *
xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

/* A compiler bug: say so, ask for a report, exit with its own code.
 * Fuzzing builds abort so the fuzzer records the input. */
void
die_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "%s: internal compiler error: ", diag_tool()); /* syncrun dies as syncrun */
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  at %s:%d\n  please report this with the input that caused it\n", file, line);
#ifdef SYNCC_FUZZ
	abort();
#else
	exit(EXIT_ICE);
#endif
}

bool
ck_add(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r);
}

bool
ck_mul(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

/* Reads a whole file into a NUL-terminated buffer; "-" is stdin. */
bool
read_file(const char *path, char **text, size_t *len, size_t limit, const char **why)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t n = 0, cap = 4096;
	char *s;

	if (!f) {
		*why = strerror(errno);
		return false;
	}
	s = xmalloc(cap);
	for (;;) {
		size_t got;
		if (n + 1 >= cap)
			s = xrealloc(s, cap *= 2);
		got = fread(s + n, 1, cap - n - 1, f);
		n += got;
		if (n > limit) {
			*why = "file is larger than the 8 MiB limit";
			break;
		}
		if (got == 0)
			break;
	}
	if (ferror(f) && n <= limit)
		*why = strerror(errno);
	else if (n <= limit)
		*why = NULL;
	if (f != stdin)
		fclose(f);
	if (*why) {
		free(s);
		return false;
	}
	s[n] = 0;
	*text = s;
	*len = n;
	return true;
}

/* ---- arenas ---- */

typedef struct Chunk Chunk;
struct Chunk {
	Chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
};

struct Arena {
	Chunk *head;
};

Arena *
arena_new(void)
{
	return xcalloc(1, sizeof(Arena));
}

void *
arena_alloc(Arena *a, size_t n)
{
	Chunk *c = a->head;
	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		c = xmalloc(sizeof(Chunk) + cap);
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	void *p = c->mem + c->used;
	c->used += n;
	return memset(p, 0, n);
}

char *
arena_strndup(Arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

void
arena_free(Arena *a)
{
	if (!a)
		return;
	for (Chunk *c = a->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(a);
}

/* ---- interned names: one open-addressing table for the process ---- */

static struct {
	char **str;     /* by Sym; str[0] = "" */
	uint32_t n, cap;
	uint32_t *slot; /* hash -> Sym, 0 = empty */
	uint32_t nslot;
	Arena *mem;
} syms;

static uint32_t
hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static void
sym_grow(void)
{
	uint32_t ns = syms.nslot ? syms.nslot * 2 : 1024;
	uint32_t *slot = xcalloc(ns, sizeof *slot);
	for (uint32_t i = 1; i < syms.n; i++) {
		uint32_t h = hash(syms.str[i], strlen(syms.str[i])) & (ns - 1);
		while (slot[h])
			h = (h + 1) & (ns - 1);
		slot[h] = i;
	}
	free(syms.slot);
	syms.slot = slot;
	syms.nslot = ns;
}

Sym
sym_intern(const char *s, size_t n)
{
	if (!syms.mem) {
		syms.mem = arena_new();
		syms.cap = 1024;
		syms.str = xmalloc(syms.cap * sizeof(char *));
		syms.str[0] = "";
		syms.n = 1;
	}
	if (2 * (syms.n + 1) > syms.nslot)
		sym_grow();
	uint32_t h = hash(s, n) & (syms.nslot - 1);
	for (; syms.slot[h]; h = (h + 1) & (syms.nslot - 1)) {
		const char *t = syms.str[syms.slot[h]];
		if (strncmp(t, s, n) == 0 && t[n] == 0)
			return syms.slot[h];
	}
	if (syms.n == syms.cap)
		syms.str = xrealloc(syms.str, (syms.cap *= 2) * sizeof(char *));
	syms.str[syms.n] = arena_strndup(syms.mem, s, n);
	syms.slot[h] = syms.n;
	return syms.n++;
}

Sym
sym_cstr(const char *s)
{
	return sym_intern(s, strlen(s));
}

const char *
sym_str(Sym s)
{
	ASSERT(s < syms.n || (s == 0));
	return s ? syms.str[s] : "";
}

/* ---- name maps ---- */

void *
symmap_get(const SymMap *m, Sym k)
{
	if (!m->cap)
		return NULL;
	for (uint32_t h = (k * 2654435761u) & (m->cap - 1);; h = (h + 1) & (m->cap - 1)) {
		if (m->key[h] == k)
			return m->val[h];
		if (m->key[h] == 0)
			return NULL;
	}
}

void
symmap_put(SymMap *m, Sym k, void *v)
{
	ASSERT(k != 0);
	if (2 * (m->n + 1) > m->cap) {
		SymMap g = {xcalloc(m->cap ? 2 * m->cap : 64, sizeof(Sym)), NULL, 0, m->cap ? 2 * m->cap : 64};
		g.val = xcalloc(g.cap, sizeof(void *));
		for (uint32_t i = 0; i < m->cap; i++)
			if (m->key[i])
				symmap_put(&g, m->key[i], m->val[i]);
		symmap_free(m);
		*m = g;
	}
	uint32_t h = (k * 2654435761u) & (m->cap - 1);
	while (m->key[h] && m->key[h] != k)
		h = (h + 1) & (m->cap - 1);
	m->n += m->key[h] == 0;
	m->key[h] = k;
	m->val[h] = v;
}

void
symmap_free(SymMap *m)
{
	free(m->key);
	free(m->val);
	*m = (SymMap){0};
}

/* ---- buffers ---- */

void
buf_put(Buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

void
buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		die("bad format string");
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	vsnprintf(b->s + b->len, n + 1, fmt, ap);
	b->len += n;
}

void
buf_printf(Buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void
buf_free(Buf *b)
{
	free(b->s);
	*b = (Buf){0};
}

/* The directory of the running binary, through /proc/self/exe. */
const char *
exe_dir(void)
{
	static char dir[4096];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
	char *slash;
	if (n <= 0)
		return NULL;
	dir[n] = 0;
	if (!(slash = strrchr(dir, '/')))
		return NULL;
	*slash = 0;
	return dir;
}

/* The share dir is compiled in (SYNCC_SHAREDIR, from the Makefile's
 * datadir), but an installed tree that was moved, or staged with
 * DESTDIR, still finds its own data: PARENT/share/syncc beside
 * PARENT/bin/ is taken first when it exists. */
const char *
share_dir(void)
{
	static char dir[4200];
	const char *exe = exe_dir();
	const char *slash = exe ? strrchr(exe, '/') : NULL;
	if (slash) {
		snprintf(dir, sizeof dir, "%.*s/share/syncc", (int)(slash - exe), exe);
		if (strcmp(dir, SYNCC_SHAREDIR) && access(dir, R_OK | X_OK) == 0)
			return dir;
	}
	return SYNCC_SHAREDIR;
}

/* The directory the caches across runs share (--tune's picks, the cubins
 * of codegen/cubincache.c): SYNCC_CACHE_DIR, else $XDG_CACHE_HOME/syncc,
 * else ~/.cache/syncc, made with its parents; false: no variable names one,
 * or it cannot be made (the caller goes without; none is made elsewhere). */
bool
cache_dir(char *dir, size_t n)
{
	const char *e = getenv("SYNCC_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	if (e && *e)
		snprintf(dir, n, "%s", e);
	else if (x && *x)
		snprintf(dir, n, "%s/syncc", x);
	else if (h && *h)
		snprintf(dir, n, "%s/.cache/syncc", h);
	else
		return false;
	for (char *p = dir + 1; *p; p++) /* mkdir -p */
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0777);
			*p = '/';
		}
	return mkdir(dir, 0777) == 0 || errno == EEXIST;
}
