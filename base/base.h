/* base/base.h -- what every layer of syncc stands on: memory arenas,
 * interned names, checked arithmetic, growable buffers, source files and
 * the one diagnostics module.  Prefixes: arena_, sym_, buf_, src_, diag_. */
#ifndef SYNCC_BASE_H
#define SYNCC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SYNCC_VERSION "0.1.0"
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))
/* A hot loop over buffers its caller sized: the sanitizers leave it alone
 * (UBSan's checks of its index arithmetic kept it from being vectorized). */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#else
#define PRINTF(f, a)
#define NORETURN
#define NO_SANITIZE
#endif

/* Exit codes shared by every tool (documented in docs/cli.md). */
enum { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_ICE = 3 };

/* Limits on hostile input: every one has a test in tests/lang/limits or
 * tests/cli.py (the ones that need large generated inputs). */
enum {
	LIM_SOURCE_BYTES = 8 << 20, /* one .syn file */
	LIM_TOKENS = 1 << 20,       /* tokens in one file */
	LIM_NEST = 200,             /* (), [], {} nesting and expression depth */
	LIM_RANK = 8,               /* tensor rank */
	LIM_RANKS = 4096,           /* --ranks */
	LIM_UNROLL = 4096,          /* total `for` iterations while elaborating */
	LIM_INLINE = 64,            /* depth of op/kernel calls */
	LIM_STEPS = 1 << 20,        /* statements and calls elaborated for one file */
	LIM_FILES = 256,            /* files reached through `use` */
	LIM_VALUES = 1 << 20,       /* IR values in one op */
	LIM_BLOCKS = 1 << 14,       /* blocks of one op's block graph (the scheduler is quadratic in them) */
	LIM_REGIONS = 1 << 18,      /* regions those blocks read and write */
	LIM_ERRORS = 20,            /* errors reported before giving up */
};

/* base/util.c */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
NORETURN void die_at(const char *file, int line, const char *fmt, ...) PRINTF(3, 4);
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define ASSERT(c) ((c) ? (void)0 : die("assertion failed: %s", #c))
bool ck_add(int64_t a, int64_t b, int64_t *r);
bool ck_mul(int64_t a, int64_t b, int64_t *r);
bool read_file(const char *path, char **text, size_t *len, size_t limit, const char **why);
const char *exe_dir(void);   /* the running binary's directory, or NULL */
const char *share_dir(void); /* the installed data: stdlib/, profiles/ */
bool cache_dir(char *dir, size_t n); /* SYNCC_CACHE_DIR's directory, made; false: none */

/* base/hash.c */
void sha256_hex(const void *p, size_t n, char hex[65]);

/* Arenas: named lifetimes, no per-object free (QBE's pools). */
typedef struct Arena Arena;
Arena *arena_new(void);
void *arena_alloc(Arena *a, size_t n);   /* zeroed, 16-byte aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
void arena_free(Arena *a);

/* Interned identifiers: names compare with ==. 0 is "no name". */
typedef uint32_t Sym;
Sym sym_intern(const char *s, size_t n);
Sym sym_cstr(const char *s);
const char *sym_str(Sym s);

/* Maps from names to pointers (open addressing, grows). */
typedef struct SymMap {
	Sym *key;
	void **val;
	uint32_t n, cap;
} SymMap;
void *symmap_get(const SymMap *m, Sym k);
void symmap_put(SymMap *m, Sym k, void *v); /* replaces */
void symmap_free(SymMap *m);

/* Growable byte buffers for printing. */
typedef struct Buf {
	char *s;
	size_t len, cap;
} Buf;
void buf_printf(Buf *b, const char *fmt, ...) PRINTF(2, 3);
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
void buf_put(Buf *b, const char *s, size_t n);
void buf_free(Buf *b);

/* Source files and spans.  A span is a byte range of one file; lines and
 * columns are computed only when a diagnostic is printed (jq, ninja). */
typedef struct Span {
	int file;      /* index into the source table, -1 for none */
	uint32_t lo, hi;
} Span;
#define NOSPAN ((Span){-1, 0, 0})

typedef struct Src {
	const char *path;
	const char *text; /* NUL-terminated */
	size_t len;
} Src;
int src_add(const char *path, const char *text, size_t len);
const Src *src_get(int file);
void src_linecol(int file, uint32_t off, int *line, int *col);
Span span_join(Span a, Span b);

/* Diagnostics: the only place that writes messages about the input. */
typedef enum { DG_ERROR, DG_WARNING, DG_NOTE } DiagLevel;
typedef enum { DIAG_TEXT, DIAG_JSON } DiagFormat;
void diag_setup(DiagFormat fmt, const char *tool);
void diag_emit(DiagLevel lv, Span sp, const char *fmt, ...) PRINTF(3, 4);
void diag_vemit(DiagLevel lv, Span sp, const char *fmt, va_list ap);
#define diag_error(sp, ...) diag_emit(DG_ERROR, sp, __VA_ARGS__)
#define diag_warning(sp, ...) diag_emit(DG_WARNING, sp, __VA_ARGS__)
#define diag_note(sp, ...) diag_emit(DG_NOTE, sp, __VA_ARGS__)
void diag_usage(const char *fmt, ...) PRINTF(1, 2); /* command-line error, no location */
void diag_json_str(FILE *f, const char *s);         /* s as a JSON string literal */
int diag_errors(void);  /* errors so far, a repeat of an earlier one included */
int diag_printed(void); /* diagnostics of every level printed so far (repeats dropped) */
const char *diag_tool(void); /* "syncc" or "syncrun": the name messages start with */
bool diag_full(void);  /* LIM_ERRORS reached: later errors are dropped */
void diag_reset(void); /* forget counts and sources between inputs (fuzzer) */
void diag_quiet(bool q); /* fuzzer: count but print nothing */

#endif
