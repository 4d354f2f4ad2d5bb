/* tools/driver.c -- command line, the pipeline, atomic outputs. */
#include "driver.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SYNCC_SHAREDIR
#define SYNCC_SHAREDIR "/usr/local/share/syncc"
#endif

static const struct {
	OptId id;
	const char *lng;  /* --name */
	char shrt;        /* -x, 0 for none */
	bool arg;
} opts[] = {
	{OPT_OUT, "output", 'o', true},
	{OPT_RANKS, "ranks", 0, true},
	{OPT_DEFINE, "define", 'D', true},
	{OPT_INCLUDE, "include", 'I', true},
	{OPT_ENTRY, "entry", 0, true},
	{OPT_EMIT, "emit", 0, true},
	{OPT_DIAG, "diagnostics", 0, true},
	{OPT_AUTOCOMM, "auto-comm", 0, false},
	{OPT_NOAUTOCOMM, "no-auto-comm", 0, false},
	{OPT_DUMP, "dump", 'd', true},
	{OPT_VERSION, "version", 0, false},
	{OPT_HELP, "help", 'h', false},
	{OPT_SIM, "sim", 0, false},
	{OPT_SEED, "seed", 0, true},
};

static const struct {
	const char *name;
	Emit emit;
} emits[] = {
	{"tokens", EMIT_TOKENS},
	{"ast", EMIT_AST},
	{"ir", EMIT_IR},
};

/* A decimal integer and nothing else (strtoll alone takes " 4" and "+4"). */
static bool
parse_int(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	if (!isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return !*end && errno == 0 && *out >= lo && *out <= hi;
}

/* `flag` is the option as written, with its value: "--ranks 0",
 * "--emit=ptx", "-Dfoo". */
static int
take(Driver *d, OptId id, const char *flag, const char *val)
{
	long long n;
	switch (id) {
	case OPT_OUT:
		d->output = strcmp(val, "-") ? val : NULL;
		return -1;
	case OPT_RANKS:
		if (!parse_int(val, 1, LIM_RANKS, &n)) {
			diag_usage("%s: the number of ranks must be an integer from 1 to %d", flag, LIM_RANKS);
			return EXIT_USAGE;
		}
		d->opt.nranks = (int)n;
		return -1;
	case OPT_DEFINE: {
		const char *eq = strchr(val, '=');
		if (!eq || eq == val) {
			diag_usage("%s: write -D NAME=VALUE", flag);
			return EXIT_USAGE;
		}
		d->opt.defines = xrealloc(d->opt.defines, (d->opt.ndefines + 1) * sizeof *d->opt.defines);
		d->opt.defines[d->opt.ndefines++] = (Define){arena_strndup(d->mem, val, eq - val), eq + 1};
		return -1;
	}
	case OPT_INCLUDE:
		d->opt.incdirs = xrealloc(d->opt.incdirs, (d->opt.nincdirs + 1) * sizeof *d->opt.incdirs);
		d->opt.incdirs[d->opt.nincdirs++] = val;
		return -1;
	case OPT_ENTRY:
		d->opt.entry = val;
		return -1;
	case OPT_EMIT:
		for (size_t i = 0; i < NELEM(emits); i++)
			if (strcmp(emits[i].name, val) == 0) {
				d->emit = emits[i].emit;
				return -1;
			}
		diag_usage("%s: unknown stage '%s'; choose tokens, ast or ir", flag, val);
		return EXIT_USAGE;
	case OPT_DIAG:
		if (strcmp(val, "text") && strcmp(val, "json")) {
			diag_usage("%s: unknown format '%s'; choose text or json", flag, val);
			return EXIT_USAGE;
		}
		d->diag = strcmp(val, "json") ? DIAG_TEXT : DIAG_JSON;
		diag_setup(d->diag, d->tool);
		return -1;
	case OPT_AUTOCOMM:
		d->opt.autocomm = AC_ON;
		return -1;
	case OPT_NOAUTOCOMM:
		d->opt.autocomm = AC_OFF;
		return -1;
	case OPT_DUMP:
		d->dump = val;
		return -1;
	case OPT_SIM:
		d->sim = true;
		return -1;
	case OPT_SEED:
		if (!parse_int(val, 0, INT64_MAX, &n)) {
			diag_usage("%s: the seed must be a non-negative integer", flag);
			return EXIT_USAGE;
		}
		d->seed = (uint64_t)n;
		d->seed_set = true;
		return -1;
	case OPT_VERSION:
		printf("%s %s\n", d->tool, SYNCC_VERSION);
		return EXIT_OK;
	case OPT_HELP:
		return EXIT_OK; /* the caller prints the usage */
	}
	return -1;
}

static bool
allowed_opt(OptId id, const OptId *allowed, int n)
{
	for (int i = 0; i < n; i++)
		if (allowed[i] == id)
			return true;
	return false;
}

/* An option as the user wrote it, for messages: "--emit=ptx", "--ranks 0". */
static const char *
as_written(Driver *d, const char *a, const char *val, bool attached)
{
	Buf b = {0};
	char *s;
	buf_printf(&b, "%s%s%s", a, val && !attached ? " " : "", val && !attached ? val : "");
	s = arena_strndup(d->mem, b.s, b.len);
	buf_free(&b);
	return s;
}

/* GNU style: -x VAL, -xVAL, --name VAL, --name=VAL; "-" is stdin. */
int
drv_args(Driver *d, int argc, char **argv, const OptId *allowed, int nallowed, const char *usage)
{
	d->opt.nranks = 1;
	d->opt.libdir = drv_libdir();
	d->opt.sharedir = SYNCC_SHAREDIR "/stdlib";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		size_t k, n = 0;
		bool attached = false;
		int r;
		if (a[0] != '-' || strcmp(a, "-") == 0) {
			if (d->input) {
				diag_usage("more than one input file (%s and %s)", d->input, a);
				return EXIT_USAGE;
			}
			d->input = a;
			continue;
		}
		for (k = 0; k < NELEM(opts); k++) {
			if (a[1] == '-') {
				n = strlen(opts[k].lng);
				if (strncmp(a + 2, opts[k].lng, n) == 0 && (a[2 + n] == 0 || (a[2 + n] == '=' && opts[k].arg)))
					break;
			} else if (opts[k].shrt && a[1] == opts[k].shrt && (a[2] == 0 || opts[k].arg)) {
				break;
			}
		}
		if (k == NELEM(opts) || !allowed_opt(opts[k].id, allowed, nallowed)) {
			diag_usage("unknown option '%s' (see --help)", a);
			return EXIT_USAGE;
		}
		if (opts[k].arg) {
			attached = (a[1] == '-' && a[2 + n] == '=') || (a[1] != '-' && a[2]);
			if (a[1] == '-' && a[2 + n] == '=')
				val = a + 3 + n;
			else if (a[1] != '-' && a[2])
				val = a + 2;
			else if (i + 1 < argc)
				val = argv[++i];
			else {
				diag_usage("option '%s' needs a value", a);
				return EXIT_USAGE;
			}
		}
		if (opts[k].id == OPT_HELP) {
			fputs(usage, stdout);
			return EXIT_OK;
		}
		if ((r = take(d, opts[k].id, as_written(d, a, val, attached), val)) >= 0)
			return r;
	}
	if (!d->input) {
		diag_usage("no input file (see --help)");
		return EXIT_USAGE;
	}
	if (d->diag == DIAG_JSON && !d->output && d->emit != EMIT_DEFAULT) {
		diag_usage("--diagnostics=json writes to standard output; send --emit output to a file with -o");
		return EXIT_USAGE;
	}
	return -1;
}

/* stdlib/ beside the binary: found through /proc/self/exe. */
const char *
drv_libdir(void)
{
	static char dir[4096];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 16);
	char *slash;
	if (n <= 0)
		return NULL;
	dir[n] = 0;
	slash = strrchr(dir, '/');
	if (!slash)
		return NULL;
	strcpy(slash, "/stdlib");
	return dir;
}

static bool
dump_after(const Driver *d, const char *pass)
{
	const char *p = d->dump;
	size_t n = strlen(pass);
	if (!p)
		return false;
	if (strcmp(p, "all") == 0)
		return true;
	for (; *p; p++)
		if (strncmp(p, pass, n) == 0 && (p[n] == 0 || p[n] == ',') && (p == d->dump || p[-1] == ','))
			return true;
	return false;
}

static bool
known_passes(const Driver *d)
{
	char buf[256];
	const char *p = d->dump;
	if (!p || strcmp(p, "all") == 0)
		return true;
	while (*p) {
		size_t n = strcspn(p, ",");
		bool ok = n < sizeof buf && (n == 4 && strncmp(p, "sema", 4) == 0);
		for (int i = 0; i < ir_npasses && !ok; i++)
			ok = strlen(ir_passes[i].name) == n && strncmp(p, ir_passes[i].name, n) == 0;
		if (!ok) {
			snprintf(buf, sizeof buf, "%.*s", (int)(n < 200 ? n : 200), p);
			diag_usage("-d %s: unknown pass '%s'", d->dump, buf);
			return false;
		}
		p += n + (p[n] == ',');
	}
	return true;
}

/* The whole pipeline (DESIGN §3), in order:
 *   read + lex + parse (+ uses) -> sema -> graph passes -> [later stages]
 * --emit stops it at the named stage and prints that stage. */
int
drv_compile(Driver *d, Unit **unitp, Buf *out)
{
	Unit *u;
	int status;
	FILE *mem;
	char *text = NULL;
	size_t len = 0;

	if (!known_passes(d))
		return EXIT_USAGE;
	u = unit_new(&d->opt);
	*unitp = u;
	if (!unit_load(u, d->input))
		return diag_errors() ? EXIT_INPUT : EXIT_USAGE;
	mem = open_memstream(&text, &len);
	if (!mem)
		die("open_memstream failed");
	if (d->emit == EMIT_TOKENS) {
		lex_dump(mem, u->modules->file);
		goto done;
	}
	if (d->emit == EMIT_AST) {
		ast_print(mem, u->modules->items);
		goto done;
	}
	if ((status = sema_unit(u)) != EXIT_OK) {
		fclose(mem);
		free(text);
		return status;
	}
	for (Func *f = u->funcs; f; f = f->next) {
		if (dump_after(d, "sema"))
			fprintf(stderr, "## after sema\n"), ir_print(stderr, f);
		for (int i = 0; i < ir_npasses; i++) {
			ir_passes[i].run(f);
			if (!ir_verify(f, ir_passes[i].name))
				die("pass %s produced invalid IR", ir_passes[i].name);
			if (dump_after(d, ir_passes[i].name))
				fprintf(stderr, "## after %s\n", ir_passes[i].name), ir_print(stderr, f);
		}
		if (d->emit == EMIT_IR || d->emit == EMIT_DEFAULT)
			ir_print(mem, f);
	}
done:
	fclose(mem);
	buf_put(out, text ? text : "", len);
	free(text);
	return diag_errors() ? EXIT_INPUT : EXIT_OK;
}

/* Never a half-written output: a temporary file beside the target,
 * renamed over it once complete. */
bool
drv_write(const char *path, const Buf *b)
{
	Buf tmp = {0};
	FILE *f;
	bool ok;
	if (!path) {
		ok = fwrite(b->s ? b->s : "", 1, b->len, stdout) == b->len && fflush(stdout) == 0;
		if (!ok)
			diag_usage("cannot write standard output: %s", strerror(errno));
		return ok;
	}
	buf_printf(&tmp, "%s.tmp%ld", path, (long)getpid());
	f = fopen(tmp.s, "wb");
	if (!f) {
		diag_usage("cannot write %s: %s", path, strerror(errno));
		buf_free(&tmp);
		return false;
	}
	ok = fwrite(b->s ? b->s : "", 1, b->len, f) == b->len;
	ok = (fclose(f) == 0) && ok;
	if (ok && rename(tmp.s, path) != 0)
		ok = false;
	if (!ok) {
		diag_usage("cannot write %s: %s", path, strerror(errno));
		remove(tmp.s);
	}
	buf_free(&tmp);
	return ok;
}

static void
on_crash(int sig)
{
	static const char msg[] = "syncc: internal compiler error: crashed (signal)\n"
	                          "  please report this with the input that caused it\n";
	(void)sig;
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(EXIT_ICE);
	_exit(EXIT_ICE);
}

/* A crash is a compiler bug: say so and exit with the ICE code.  Not
 * installed under sanitizers, whose reports say more. */
void
drv_crash_handler(void)
{
#if !defined(__SANITIZE_ADDRESS__) && !defined(SYNCC_FUZZ)
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGFPE, on_crash);
	signal(SIGILL, on_crash);
	signal(SIGABRT, on_crash);
#endif
}
