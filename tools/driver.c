/* tools/driver.c -- command line, the pipeline, atomic outputs. */
#include "driver.h"
#include "../codegen/codegen.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	{OPT_NOPASS, "no-pass", 0, true},
	{OPT_F64, "f64", 0, false},
	{OPT_BREAK, "break", 0, true},
	{OPT_TIMEOUT, "timeout-ms", 0, true},
	{OPT_PROFILE, "profile", 0, true},
	{OPT_MEMBUDGET, "mem-budget", 0, true},
	{OPT_TOPO, "topo", 0, true},
	{OPT_EXPLAIN, "explain", 0, false},
	{OPT_SERIAL, "serial", 0, false},
	{OPT_DROPEDGE, "drop-edge", 0, true},
	{OPT_TRACE, "trace", 0, true},
	{OPT_SVG, "timeline-svg", 0, true},
	{OPT_MEASURED, "measured", 0, true},
	{OPT_INTERP, "interp", 0, false},
	{OPT_ALLPLANS, "all-plans", 0, false},
	{OPT_S, "", 'S', false},
	{OPT_BENCH, "bench", 0, true},
	{OPT_NOCHECK, "no-check", 0, false},
	{OPT_DROPFLAG, "drop-flag", 0, false},
	{OPT_DUMPOUT, "dump-outputs", 0, true},
	{OPT_GPUS, "gpus", 0, true},
	{OPT_CALIBRATE, "calibrate", 0, true},
	{OPT_CALSAMPLES, "calibrate-from-samples", 0, true},
	{OPT_COMMBE, "comm-backend", 0, true},
	{OPT_PUSH, "push", 0, false},
	{OPT_NOPUSH, "no-push", 0, false},
	{OPT_TUNE, "tune", 0, false},
	{OPT_TUNEBUDGET, "tune-budget", 0, true},
};

static const struct {
	const char *name;
	Emit emit;
} emits[] = {
	{"tokens", EMIT_TOKENS},
	{"ast", EMIT_AST},
	{"ir", EMIT_IR},
	{"signature", EMIT_SIGNATURE},
	{"blocks", EMIT_BLOCKS},
	{"plan", EMIT_PLAN},
	{"timeline", EMIT_TIMELINE},
	{"ptx", EMIT_PTX},
	{"host", EMIT_HOST},
};

/* The one reader of numbers on the command line: decimal digits and, with
 * `frac`, a fraction after a point -- no sign, space, base prefix,
 * exponent, inf or nan (strtoll and strtod take " 4", "+4", "0x10").
 * *end is left past the number for a unit to follow; false when no digit
 * starts it, a point has no digit after it, or the value passes 2^62. */
static bool
read_num(const char *s, bool frac, double *x, const char **end)
{
	uint64_t n = 0;
	double scale = 1;
	if (!isdigit((unsigned char)*s))
		return false;
	for (; isdigit((unsigned char)*s); s++) {
		if (n > ((uint64_t)1 << 62) / 10)
			return false;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*x = (double)n;
	if (frac && *s == '.') {
		if (!isdigit((unsigned char)*++s))
			return false;
		for (; isdigit((unsigned char)*s); s++)
			*x += (*s - '0') * (scale /= 10);
	}
	*end = s;
	return true;
}

/* A whole decimal number in [lo, hi] and nothing after it. */
static bool
parse_int(const char *s, long long lo, long long hi, long long *out)
{
	const char *end;
	double x;
	uint64_t n = 0;
	if (!read_num(s, false, &x, &end) || *end)
		return false;
	for (; *s; s++) /* again, exactly: a double rounds past 2^53 */
		n = n * 10 + (uint64_t)(*s - '0');
	*out = (long long)n;
	return *out >= lo && *out <= hi;
}

/* `flag` is the option as written, with its value: "--ranks 0",
 * "--emit=ptx", "-Dfoo". */
/* --mem-budget BYTES[K|M|G] or PCT% of the serial plan's peak. */
static int
parse_budget(Driver *d, const char *flag, const char *val)
{
	static const char units[] = "KMG";
	const char *end;
	double x, mul = 1;
	bool ok = read_num(val, true, &x, &end);
	if (ok && *end == '%' && !end[1] && x <= 1000) {
		d->mem_pct = x;
		return -1;
	}
	if (ok && *end && strchr(units, *end)) {
		for (const char *u = units; u <= strchr(units, *end); u++)
			mul *= 1024;
		end++;
	}
	if (!ok || *end || x * mul > 1e18) {
		diag_usage("%s: write BYTES (digits, with K, M or G) or PERCENT%% (0 to 1000)", flag);
		return EXIT_USAGE;
	}
	d->mem_budget = x * mul;
	return -1;
}

/* A GPU named twice in --gpus holds two ranks of one process; NCCL
 * refuses that, so the collectives must be on a backend that can
 * (comm/backends.h: p2p can run every collective; ce only moves data, and
 * a reduction it leaves to nccl is refused by name at run time). */
static int
shared_gpu(const Driver *d)
{
	for (int i = 0; i < d->ngpus; i++)
		for (int j = 0; j < i; j++)
			if (d->gpus[i] == d->gpus[j] && d->backend != 1 + BE_P2P && d->backend != 1 + BE_CE) {
				diag_usage("--gpus: GPU %d is named twice; two ranks on one GPU need --comm-backend p2p "
				           "(or ce, which cannot reduce; NCCL refuses a GPU twice)", d->gpus[i]);
				return EXIT_USAGE;
			}
	return -1;
}

/* --comm-backend NAME asks for every collective on it wherever it can;
 * past its rank limit (comm/backends.h's maxranks: the peers p2p's kernels
 * take) it can run none of them on one node, so the request is refused
 * rather than quietly left to the default backend, and the search never
 * picks it there either.  Across nodes only the default backend reaches
 * (ce and p2p leave those collectives to it, as the usage says). */
static int
backend_fits(const Driver *d)
{
	const CommBackendInfo *b = d->backend ? &comm_backends[d->backend - 1] : NULL;
	if (!b || d->topo.nodes > 1 || comm_backend_fits((CommBackendKind)(d->backend - 1), d->opt.nranks))
		return -1;
	diag_usage("--comm-backend %s: the %s backend runs collectives over at most %d ranks, not %d; leave the "
	           "choice to the search (no --comm-backend) or use --comm-backend %s",
	           b->name, b->name, b->maxranks, d->opt.nranks, comm_backends[BE_DEFAULT].name);
	return EXIT_USAGE;
}

/* --gpus 0,1: local GPU ordinals (after CUDA_VISIBLE_DEVICES); one named
 * twice holds two ranks (shared_gpu checks the backend allows it). */
static int
parse_gpus(Driver *d, const char *flag, const char *val)
{
	const char *p = val;
	d->ngpus = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		char num[16];
		long long g;
		snprintf(num, sizeof num, "%.*s", (int)(n < 15 ? n : 15), p);
		if (n == 0 || n > 9 || !parse_int(num, 0, 1 << 20, &g)) {
			diag_usage("%s: write the GPUs as numbers separated by commas, e.g. --gpus 0,1", flag);
			return EXIT_USAGE;
		}
		if (d->ngpus == LIM_GPUS) {
			diag_usage("%s: more than %d GPUs", flag, LIM_GPUS);
			return EXIT_USAGE;
		}
		d->gpus[d->ngpus++] = (int)g;
		p += n;
		if (*p == ',' && !*++p) {
			diag_usage("%s: write the GPUs as numbers separated by commas, e.g. --gpus 0,1", flag);
			return EXIT_USAGE;
		}
	}
	if (!d->ngpus) {
		diag_usage("%s: write the GPUs as numbers separated by commas, e.g. --gpus 0,1", flag);
		return EXIT_USAGE;
	}
	return -1;
}

static int
take(Driver *d, OptId id, const char *flag, const char *val)
{
	long long n;
	char bad[80];
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
		diag_usage("%s: unknown stage '%s'; choose tokens, ast, ir, signature, blocks, plan, timeline, ptx or host", flag, val);
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
	case OPT_NOPASS:
		d->nopass = val;
		return -1;
	case OPT_F64:
		d->f64 = true;
		return -1;
	case OPT_BREAK: /* tests: syncrun --sim's wrong lowerings, syncc's (codegen/lower.c lower_breaks) */
		d->breaks = val;
		if (!strcmp(d->tool, "syncc") && !ptx_lower_break_known(val, bad, sizeof bad)) {
			diag_usage("--break %s: unknown lowering '%s'", val, bad);
			return EXIT_USAGE;
		}
		return -1;
	case OPT_TIMEOUT:
		if (!parse_int(val, 1, 3600 * 1000, &n)) {
			diag_usage("%s: the timeout must be 1 to 3600000 milliseconds", flag);
			return EXIT_USAGE;
		}
		d->timeout_ms = (int)n;
		return -1;
	case OPT_PROFILE:
		d->profile = val;
		return -1;
	case OPT_MEMBUDGET:
		return parse_budget(d, flag, val);
	case OPT_TOPO: {
		const char *x = strchr(val, 'x');
		char nodes[16];
		long long a, b;
		snprintf(nodes, sizeof nodes, "%.*s", x && x - val < 15 ? (int)(x - val) : 15, val);
		if (!x || x - val > 15 || !parse_int(nodes, 1, LIM_RANKS, &a) || !parse_int(x + 1, 1, LIM_RANKS, &b) ||
		    a * b > LIM_RANKS) { /* each at most 4096: the product cannot overflow */
			diag_usage("%s: write NODESxGPUS, e.g. 2x4, at most %d ranks in all", flag, LIM_RANKS);
			return EXIT_USAGE;
		}
		d->topo = (Topo){(int)a, (int)b};
		return -1;
	}
	case OPT_EXPLAIN:
		d->explain = true;
		return -1;
	case OPT_SERIAL:
		d->serial = true;
		return -1;
	case OPT_PUSH:
		d->push = true;
		return -1;
	case OPT_NOPUSH:
		d->push = false;
		return -1;
	case OPT_COMMBE: {
		int be = 1 + comm_backend_byname(val);
		char names[128];
		if (!be) {
			diag_usage("%s: write %s", flag, comm_backend_list(names, sizeof names));
			return EXIT_USAGE;
		}
		d->backend = be; /* the last one given wins, like every option */
		return -1;
	}
	case OPT_DROPEDGE:
		d->drop_edge = val;
		return -1;
	case OPT_TRACE:
		d->trace = val;
		return -1;
	case OPT_SVG:
		d->svg = val;
		return -1;
	case OPT_MEASURED:
		d->measured = val;
		return -1;
	case OPT_INTERP:
		d->interp = true;
		return -1;
	case OPT_ALLPLANS:
		d->all_plans = true;
		return -1;
	case OPT_TUNE:
		d->tune = true;
		return -1;
	case OPT_TUNEBUDGET: {
		const char *end;
		double x;
		if (!read_num(val, true, &x, &end) || *end || x <= 0 || x > 3600) {
			diag_usage("%s: the tuning budget is seconds, more than 0 and at most 3600", flag);
			return EXIT_USAGE;
		}
		d->tune_budget = x;
		return -1;
	}
	case OPT_S:
		d->emit = EMIT_PTX;
		return -1;
	case OPT_BENCH:
		if (!parse_int(val, 1, 100000, &n)) {
			diag_usage("%s: the number of timed calls must be 1 to 100000", flag);
			return EXIT_USAGE;
		}
		d->bench = (int)n;
		return -1;
	case OPT_NOCHECK:
		d->nocheck = true;
		return -1;
	case OPT_DROPFLAG:
		d->drop_flag = true;
		return -1;
	case OPT_DUMPOUT:
		d->dumpdir = val;
		return -1;
	case OPT_GPUS:
		return parse_gpus(d, flag, val);
	case OPT_CALIBRATE:
		if (!*val) {
			diag_usage("%s: name the profile file to write", flag);
			return EXIT_USAGE;
		}
		d->calibrate = val;
		return -1;
	case OPT_CALSAMPLES:
		d->cal_samples = val;
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
	static char sharedir[4300];
	int ranks_given = 0, rc;
	d->mem_budget = -1;
	d->push = true; /* --no-push: a p2p reduce_scatter reads the peers' partials instead */
	d->opt.libdir = drv_libdir();
	snprintf(sharedir, sizeof sharedir, "%s/stdlib", share_dir());
	d->opt.sharedir = sharedir;
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
				if (!n)
					continue;
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
			d->help = true;
			return EXIT_OK;
		}
		ranks_given |= opts[k].id == OPT_RANKS;
		if ((r = take(d, opts[k].id, as_written(d, a, val, attached), val)) >= 0)
			return r;
	}
	bool topo_given = d->topo.nodes > 0;
	if (d->topo.nodes) {
		if (ranks_given && d->opt.nranks != d->topo.nodes * d->topo.gpus) {
			diag_usage("--topo %dx%d has %d ranks, but --ranks says %d", d->topo.nodes, d->topo.gpus,
			           d->topo.nodes * d->topo.gpus, d->opt.nranks);
			return EXIT_USAGE;
		}
		d->opt.nranks = d->topo.nodes * d->topo.gpus;
	} else {
		d->topo = (Topo){1, d->opt.nranks};
	}
	if (d->ngpus && d->topo.nodes > 1) {
		diag_usage("--gpus chooses the GPUs of one process on one node; it cannot go with --topo %dx%d", d->topo.nodes,
		           d->topo.gpus);
		return EXIT_USAGE;
	}
	if ((rc = shared_gpu(d)) >= 0)
		return rc;
	if (d->ngpus && ranks_given && d->ngpus != d->opt.nranks) {
		diag_usage("--gpus names %d GPU%s, but --ranks says %d (one rank per GPU)", d->ngpus, d->ngpus == 1 ? "" : "s",
		           d->opt.nranks);
		return EXIT_USAGE;
	}
	/* a --topo without --ranks fixes the rank count too: --gpus must
	 * name that many, or the run would quietly have another shape */
	if (d->ngpus && topo_given && d->ngpus != d->topo.gpus) {
		diag_usage("--gpus names %d GPU%s, but --topo %dx%d has %d ranks (one rank per GPU)", d->ngpus,
		           d->ngpus == 1 ? "" : "s", d->topo.nodes, d->topo.gpus, d->topo.gpus);
		return EXIT_USAGE;
	}
	if (d->ngpus && !ranks_given)
		d->opt.nranks = d->topo.gpus = d->ngpus;
	if ((rc = backend_fits(d)) >= 0)
		return rc;
	if (d->cal_samples && !d->calibrate) {
		diag_usage("--calibrate-from-samples needs --calibrate PROFILE (the file to write)");
		return EXIT_USAGE;
	}
	if (d->calibrate && !d->input)
		return -1; /* --calibrate compiles its own operators */
	if (!d->input) {
		diag_usage("no input file (see --help)");
		return EXIT_USAGE;
	}
	if (d->diag == DIAG_JSON && !d->output && d->emit != EMIT_DEFAULT && d->emit != EMIT_CODE) {
		diag_usage("--diagnostics=json writes to standard output; send --emit output to a file with -o");
		return EXIT_USAGE;
	}
	return -1;
}

/* The graph passes in pipeline order, for --help (and the test runner). */
void
drv_print_passes(FILE *f)
{
	fprintf(f, "\npasses:");
	for (int i = 0; i < ir_npasses; i++)
		fprintf(f, " %s", ir_passes[i].name);
	fprintf(f, "\n");
}

/* stdlib/ beside the binary (the source tree it was built in). */
const char *
drv_libdir(void)
{
	static char dir[4200];
	const char *exe = exe_dir();
	if (!exe)
		return NULL;
	snprintf(dir, sizeof dir, "%s/stdlib", exe);
	return dir;
}

/* Whether `name` is in the comma-separated `list` ("all" names every pass). */
static bool
in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	if (!list)
		return false;
	if (strcmp(list, "all") == 0)
		return true;
	for (const char *p = list; *p; p++)
		if (strncmp(p, name, n) == 0 && (p[n] == 0 || p[n] == ',') && (p == list || p[-1] == ','))
			return true;
	return false;
}

static bool
known_passes(const char *flag, const char *list, bool sema_ok)
{
	char buf[256];
	const char *p = list;
	if (!p || strcmp(p, "all") == 0)
		return true;
	while (*p) {
		size_t n = strcspn(p, ",");
		bool ok = sema_ok && n == 4 && strncmp(p, "sema", 4) == 0;
		for (int i = 0; i < ir_npasses && !ok; i++)
			ok = strlen(ir_passes[i].name) == n && strncmp(p, ir_passes[i].name, n) == 0;
		if (!ok) {
			snprintf(buf, sizeof buf, "%.*s", (int)(n < 200 ? n : 200), p);
			diag_usage("%s %s: unknown pass '%s'", flag, list, buf);
			return false;
		}
		p += n + (p[n] == ',');
	}
	return true;
}

static bool write_traces(Driver *d, Unit *u);
static void code_prefix(const Driver *d, const char *src, char *prefix, size_t n);
static bool outputs_spare_inputs(const Driver *d, const Unit *u);

/* Code generation: the plans as one PTX module and the launcher.  --emit
 * prints one of them; the default writes PREFIX.ptx, PREFIX.c, PREFIX.h. */
static int
codegen_all(Driver *d, Unit *u, FILE *mem)
{
	Lowered **lo = xcalloc((size_t)d->nplans + 1, sizeof *lo);
	Buf module = {0}, c = {0}, h = {0}, plain = {0};
	PtxModule kernels = {0};
	unsigned char *cubin = NULL;
	size_t ncubin = 0;
	char log[2048];
	int status = EXIT_OK, i = 0;
	char prefix[4096];
	const char *src = src_get(u->modules->file)->path;
	ptx_emit_header(&module);
	for (Func *f = u->funcs; f; f = f->next, i++) {
		lo[i] = xcalloc(1, sizeof **lo);
		if ((d->emit == EMIT_HOST || d->emit == EMIT_CODE) && !host_op_name_ok(f, log, sizeof log)) {
			diag_error(f->span, "cannot generate the launcher of op '%s': %s", sym_str(f->name), log);
			status = EXIT_INPUT;
			continue;
		}
		if (!ptx_lower(d->plans[i], lo[i])) {
			diag_error(lo[i]->where.file >= 0 ? lo[i]->where : f->span, "cannot generate GPU code for op '%s': %s",
			           sym_str(f->name), lo[i]->err);
			status = EXIT_INPUT;
			continue;
		}
		ptx_module_add(&kernels, &module, lo[i]);
		for (int k = 0; d->drop_flag && k < lo[i]->nstep; k++)
			if (lo[i]->step[k].raise >= 0) { /* tests: a plan that never releases a kernel */
				lo[i]->step[k].raise = -1;
				break;
			}
	}
	if (status != EXIT_OK)
		goto out;
	if (d->emit == EMIT_PTX) {
		fputs(module.s, mem);
		goto out;
	}
	/* code from standard input: no file name to take PREFIX from, and a
	 * file named "<stdin>.c" in the current directory would surprise */
	if (d->emit == EMIT_CODE && !d->output && strcmp(d->input, "-") == 0) {
		if (u->funcs) {
			diag_usage("code from standard input needs -o PREFIX (or --emit=STAGE to print a stage)");
			status = EXIT_USAGE;
		}
		goto out; /* no op: nothing to write */
	}
	switch (ptx_assemble(&module, &cubin, &ncubin, log, sizeof log)) {
	case PTXAS_REJECTED:
		die("ptxas rejected the generated module: %s", log);
	case PTXAS_FAILED: /* the tool, not the module: nothing written */
		diag_usage("%s", log);
		status = EXIT_INPUT;
		goto out;
	default:
		break;
	}
	code_prefix(d, src, prefix, sizeof prefix);
	if (!host_prefix_ok(prefix, log, sizeof log)) {
		diag_usage("-o %s: %s", prefix, log);
		status = EXIT_USAGE;
		goto out;
	}
	host_emit(&c, &h, src, prefix, lo, d->nplans, &module, cubin, ncubin);
	if (d->emit == EMIT_HOST) {
		fputs(h.s, mem);
		fputs(c.s, mem);
	} else {
		char pp[4200], pc[4200], ph[4200];
		const char *paths[3] = {pp, pc, ph};
		const Buf *bufs[3] = {&module, &c, &h};
		snprintf(pp, sizeof pp, "%s.ptx", prefix);
		snprintf(pc, sizeof pc, "%s.c", prefix);
		snprintf(ph, sizeof ph, "%s.h", prefix);
		if (!drv_write_all(paths, bufs, 3))
			status = EXIT_INPUT;
	}
out:
	for (int k = 0; k < d->nplans; k++)
		if (lo[k]) {
			ptx_lowered_free(lo[k]);
			free(lo[k]);
		}
	free(lo);
	free(cubin);
	buf_free(&module);
	ptx_module_free(&kernels);
	buf_free(&c);
	buf_free(&h);
	buf_free(&plain);
	return status;
}

/* The launcher files of d->plans at PREFIX (--tune's candidates). */
int
drv_codegen(Driver *d, Unit *u, const char *prefix)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	Emit e = d->emit;
	const char *o = d->output;
	int r;
	if (!mem)
		die("open_memstream failed");
	d->emit = EMIT_CODE;
	d->output = prefix;
	r = codegen_all(d, u, mem);
	d->emit = e;
	d->output = o;
	fclose(mem);
	free(text);
	return r;
}

/* The profile the scheduler costs plans with: --profile, else the
 * simulator's or the H200's. */
static const char *
profile_name(const Driver *d)
{
	return d->profile ? d->profile : d->sim ? "sim" : "h200-nvlink";
}

/* What the cost model predicts for one form of an op. */
typedef struct Variant {
	double us, compute, comm; /* the plan, its compute blocks, its comm lane */
} Variant;

/* f planned once the passes after arsplit have run on it (f is a copy:
 * they change it); an op too large to plan costs INFINITY. */
static Variant
variant(Driver *d, Func *f, int after)
{
	SchedOpts o = {&d->prof, d->topo, d->mem_budget, d->mem_pct, d->serial, NULL, NULL, NULL, d->backend, d->push, NULL};
	Variant v = {INFINITY, 0, 0};
	Plan *p;
	for (int i = after + 1; i < ir_npasses; i++)
		if (!in_list(d->nopass, ir_passes[i].name))
			ir_passes[i].run(f);
	p = sched_plan(f, &o);
	if (p->g)
		v = (Variant){p->makespan, p->compute, p->comm};
	sched_plan_free(p);
	return v;
}

/* --explain's line for one all_reduce: which form was kept, both
 * predictions, and the compute and communication that decided it. */
static void
split_note(Buf *why, const Func *f, Val y, int nregion, bool split, Variant s, Variant w)
{
	const Ins *in = &f->ins[y];
	int line = 0, col = 0;
	char form[96];
	if (in->span.file >= 0)
		src_linecol(in->span.file, in->span.lo, &line, &col);
	if (nregion > 0)
		snprintf(form, sizeof form, "reduce_scatter + %d ops on 1/%d of the data + all_gather", nregion, f->nranks);
	else
		snprintf(form, sizeof form, "reduce_scatter + all_gather");
	buf_printf(why, "all_reduce at %s:%d:%d: %s: predicted ", in->span.file >= 0 ? src_get(in->span.file)->path : "?", line,
	           col, split ? "split" : "kept whole");
	if (split)
		buf_printf(why, "%.1f us split into %s, %.1f us whole (compute %.1f us split, %.1f whole; communication %.1f us split, %.1f whole)\n",
		           s.us, form, w.us, s.compute, w.compute, s.comm, w.comm);
	else
		buf_printf(why, "%.1f us whole, %.1f us split into %s (compute %.1f us whole, %.1f split; communication %.1f us whole, %.1f split)\n",
		           w.us, s.us, form, w.compute, s.compute, w.comm, s.comm);
}

/* arsplit by the cost model: each all_reduce that can be split (around
 * the work local on the scattered dim, or a bare one into its two phases)
 * is planned both ways, after the later passes, and the form predicted
 * faster kept -- the overlap the phases allow included; a tie keeps the
 * one call.  Earlier all_reduces are planned as already decided, later
 * ones whole.  `why` gets each decision for --explain.  Without a
 * profile, the pass's byte rule. */
static void
arsplit_by_cost(Driver *d, Func *f, int pass, Buf *why)
{
	char err[600];
	if (f->nranks == 1 || (!d->prof.name[0] && !prof_find(&d->prof, profile_name(d), err, sizeof err))) {
		ir_passes[pass].run(f);
		return;
	}
	for (Val y = 0; y < f->nins; y++) {
		Func *a, *b;
		int n;
		if (f->ins[y].op != OP_ALL_REDUCE)
			continue;
		b = ir_clone(f);
		if ((n = ir_arsplit_one(b, y)) >= 0) {
			Variant s, w;
			a = ir_clone(f);
			s = variant(d, b, pass);
			w = variant(d, a, pass);
			split_note(why, f, y, n, s.us < w.us, s, w);
			if (s.us < w.us)
				ir_arsplit_one(f, y);
			ir_func_free(a);
		}
		ir_func_free(b);
	}
}

/* Scheduling: a plan per op on the chosen profile, printed as asked. */
static int
plan_all(Driver *d, Unit *u, FILE *mem)
{
	char err[600];
	SchedOpts o = {&d->prof, d->topo, d->mem_budget, d->mem_pct, d->serial, d->drop_edge, NULL, NULL, d->backend, d->push,
	               d->breaks};
	int n = 0;
	if (!prof_find(&d->prof, profile_name(d), err, sizeof err)) {
		diag_usage("%s", err);
		return EXIT_USAGE;
	}
	for (Func *f = u->funcs; f; f = f->next)
		n++;
	d->plans = xcalloc((size_t)n + 1, sizeof *d->plans);
	for (Func *f = u->funcs; f; f = f->next) {
		Plan *p = sched_plan(f, &o), *t = p->g && d->tune_picks ? tune_picked_plan(d, f) : NULL;
		if (t) { /* syncc --tune: the measured pick */
			sched_plan_free(p);
			p = t;
		}
		d->plans[d->nplans++] = p;
		if (!p->g) { /* past the planner's limits (docs/language.md §9) */
			diag_error(f->span, "%s", p->why);
			return EXIT_INPUT;
		}
		if (p->is_serial && !d->serial && f->nranks > 1 && d->emit != EMIT_TOKENS)
			diag_note(f->span, "op '%s': serial plan, overlap is not predicted to pay (%.1f us serial; --explain says why)",
			          sym_str(f->name), p->serial);
		if (d->emit == EMIT_BLOCKS)
			blk_print(mem, p->g);
		else if (d->emit >= EMIT_PTX)
			;
		else if (d->emit == EMIT_PLAN)
			sched_print_plan(mem, p);
		else if (d->emit == EMIT_TIMELINE)
			sched_timeline(mem, p, f->nranks, 72);
		if (d->explain) {
			FILE *out = d->emit >= EMIT_BLOCKS && d->emit <= EMIT_TIMELINE ? mem : stderr;
			sched_explain(out, p);
			if (d->nplans <= d->nsplit_why && d->split_why[d->nplans - 1].len)
				fputs(d->split_why[d->nplans - 1].s, out);
		}
	}
	return write_traces(d, u) ? EXIT_OK : EXIT_INPUT;
}

/* The SVG timeline, with --measured's trace under the prediction. */
static bool
svg_with_measured(Driver *d, FILE *out, int nranks)
{
	Measured m;
	char err[600];
	if (d->measured && !sched_read_trace(d->measured, &m, err, sizeof err)) {
		diag_error(NOSPAN, "%s", err);
		return false;
	}
	sched_svg(out, (const Plan *const *)d->plans, d->nplans, nranks, d->measured ? &m : NULL);
	if (d->measured)
		sched_measured_free(&m);
	return true;
}

/* --trace and --timeline-svg: the predicted timelines, written whole. */
static bool
write_traces(Driver *d, Unit *u)
{
	const char *paths[2] = {d->trace, d->svg};
	for (int k = 0; k < 2; k++) {
		char *text = NULL;
		size_t len = 0;
		FILE *m;
		Buf b = {0};
		bool ok = true;
		if (!paths[k])
			continue;
		m = open_memstream(&text, &len);
		if (k == 0)
			sched_trace_json(m, (const Plan *const *)d->plans, d->nplans, u->opt.nranks);
		else
			ok = svg_with_measured(d, m, u->opt.nranks);
		fclose(m);
		buf_put(&b, text, len);
		free(text);
		ok = ok && drv_write(paths[k], &b);
		buf_free(&b);
		if (!ok)
			return false;
	}
	return true;
}

void
drv_free(Driver *d)
{
	for (int i = 0; i < d->nplans; i++)
		sched_plan_free(d->plans[i]);
	free(d->plans);
	for (int i = 0; i < d->nsplit_why; i++)
		buf_free(&d->split_why[i]);
	free(d->split_why);
	free(d->opt.defines);
	free(d->opt.incdirs);
	arena_free(d->mem);
}

/* One argument or result of --emit=signature: what its launcher takes. */
static void
sig_value(FILE *f, const char *name, const Type *t, int nranks)
{
	int64_t local[LIM_RANK];
	Buf b = {0};
	ty_local_shape(t, nranks, local);
	fprintf(f, "{\"name\": ");
	diag_json_str(f, name);
	fprintf(f, ", \"dtype\": \"%s\", \"shape\": [", ty_dtypes[t->dt].name);
	for (int i = 0; i < t->rank; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
	fprintf(f, "], \"placement\": \"%s\"", t->pl.kind == PL_SPLIT ? "split" : t->pl.kind == PL_REPL ? "repl" : "partial");
	if (t->pl.kind == PL_SPLIT)
		fprintf(f, ", \"dim\": %d", t->pl.dim);
	if (t->pl.kind == PL_PARTIAL)
		fprintf(f, ", \"reduce\": \"%s\"", pl_rednames[t->pl.red]);
	fprintf(f, ", \"local\": [");
	for (int i = 0; i < t->rank; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)local[i]);
	ty_print(&b, t);
	fprintf(f, "], \"type\": ");
	diag_json_str(f, b.s);
	fprintf(f, "}");
	buf_free(&b);
}

/* A path as an absolute one where it resolves (the caller's cache keys
 * on these), else as given. */
static void
json_abs_path(FILE *f, const char *path)
{
	char real[PATH_MAX];
	diag_json_str(f, realpath(path, real) ? real : path);
}

/* --emit=signature: every compiled op as its launcher sees it (arguments in
 * order, then results out0...), one JSON document; the Python package
 * checks a call against it before any GPU work.  "files" (every source
 * file read, the main one first, then each `use` in the order read) and
 * "profile" (the cost profile a build would plan with) are what the
 * package's build cache keys on besides the command line. */
static void
print_signature(FILE *f, const Driver *d, const Unit *u)
{
	char prof[8400];
	int nfiles = 0;
	fprintf(f, "{\"syncc\": \"%s\", \"source\": ", SYNCC_VERSION);
	diag_json_str(f, src_get(u->modules->file)->path);
	fprintf(f, ", \"files\": [");
	for (const Module *m = u->modules; m; m = m->next) {
		const char *path = src_get(m->file)->path;
		if (strcmp(path, "<stdin>") == 0)
			continue; /* not a file: nothing to read again */
		fprintf(f, "%s", nfiles++ ? ", " : "");
		json_abs_path(f, path);
	}
	fprintf(f, "], \"profile\": ");
	if (prof_locate(profile_name(d), prof, sizeof prof))
		json_abs_path(f, prof);
	else
		fprintf(f, "null");
	fprintf(f, ", \"ranks\": %d, \"ops\": [", u->opt.nranks);
	for (const Func *fn = u->funcs; fn; fn = fn->next) {
		fprintf(f, "%s\n  {\"name\": \"%s\", \"ranks\": %d, \"args\": [", fn == u->funcs ? "" : ",", sym_str(fn->name), fn->nranks);
		for (int i = 0; i < fn->nin; i++) {
			fprintf(f, "%s\n    ", i ? "," : "");
			sig_value(f, sym_str(fn->ins[fn->in[i]].name), &fn->ins[fn->in[i]].ty, fn->nranks);
		}
		fprintf(f, "],\n   \"results\": [");
		for (int i = 0; i < fn->nout; i++) {
			char nm[16];
			snprintf(nm, sizeof nm, "out%d", i);
			fprintf(f, "%s\n    ", i ? "," : "");
			sig_value(f, nm, &fn->outty[i], fn->nranks);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n]}\n");
}

/* The whole pipeline (DESIGN §3), in order:
 *   read + lex + parse (+ uses) -> sema -> graph passes -> blocks -> schedule
 * --emit stops it at the named stage and prints that stage. */
int
drv_compile(Driver *d, Unit **unitp, Buf *out)
{
	Unit *u;
	int status;
	FILE *mem;
	char *text = NULL;
	size_t len = 0;
	int fi;

	if (!known_passes("-d", d->dump, true) || !known_passes("--no-pass", d->nopass, false))
		return EXIT_USAGE;
	u = unit_new(&d->opt);
	*unitp = u;
	if (!unit_load(u, d->input))
		return diag_errors() ? EXIT_INPUT : EXIT_USAGE;
	if (!outputs_spare_inputs(d, u))
		return EXIT_USAGE;
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
	for (int i = 0; i < d->nsplit_why; i++)
		buf_free(&d->split_why[i]);
	free(d->split_why);
	fi = 0;
	for (Func *f = u->funcs; f; f = f->next)
		fi++;
	d->split_why = xcalloc((size_t)fi + 1, sizeof *d->split_why);
	d->nsplit_why = fi;
	fi = 0;
	for (Func *f = u->funcs; f; f = f->next, fi++) {
		if (in_list(d->dump, "sema"))
			fprintf(stderr, "## after sema\n"), ir_print(stderr, f);
		if (d->keep_sema)
			f->sema = ir_clone(f);
		for (int i = 0; i < ir_npasses; i++) {
			if (in_list(d->nopass, ir_passes[i].name))
				continue;
			if (ir_passes[i].run == pass_arsplit)
				arsplit_by_cost(d, f, i, &d->split_why[fi]);
			else
				ir_passes[i].run(f);
			if (!ir_verify(f, ir_passes[i].name))
				die("pass %s produced invalid IR", ir_passes[i].name);
			if (in_list(d->dump, ir_passes[i].name))
				fprintf(stderr, "## after %s\n", ir_passes[i].name), ir_print(stderr, f);
		}
		if (d->emit == EMIT_IR || d->emit == EMIT_DEFAULT)
			ir_print(mem, f);
	}
	if (d->emit == EMIT_SIGNATURE)
		print_signature(mem, d, u);
	if (d->need_plans || d->emit >= EMIT_BLOCKS || d->explain || d->trace || d->svg)
		if ((status = plan_all(d, u, mem)) != EXIT_OK) {
			fclose(mem);
			free(text);
			return status;
		}
	if (d->emit >= EMIT_PTX && (status = codegen_all(d, u, mem)) != EXIT_OK) {
		fclose(mem);
		free(text);
		return status;
	}
done:
	fclose(mem);
	buf_put(out, text ? text : "", len);
	free(text);
	return diag_errors() ? EXIT_INPUT : EXIT_OK;
}

/* ---- outputs ----
 *
 * A regular file (or a new one) is written to a temporary file beside it
 * and renamed over it, so it is never half-written.  Anything else -- a
 * device, a FIFO, a socket, a descriptor (/dev/stdout, /proc/self/fd/1)
 * -- is written through: renaming over /dev/null would make it a regular
 * file.  A symbolic link is followed: its target is written, the link
 * stays (one to nothing is refused). */
typedef struct OutPath {
	char path[PATH_MAX + 32]; /* the file to rename over, or to open */
	bool through;             /* open and write it in place */
} OutPath;

/* /dev/stdout, /dev/fd/3, /proc/self/fd/1: names of descriptors, whose
 * target is whatever the descriptor holds (a pipe, a tty, a file). */
static bool
names_descriptor(const char *path)
{
	return strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0;
}

static bool
out_path(const char *path, OutPath *o)
{
	struct stat ls, st;
	char real[PATH_MAX];
	o->through = false;
	snprintf(o->path, sizeof o->path, "%s", path);
	if (lstat(path, &ls) != 0)
		return true; /* a new file, or a failure fopen will name */
	if (stat(path, &st) != 0) { /* a link to nothing: where would it be written? */
		ssize_t k = readlink(path, real, sizeof real - 1);
		int e = errno;
		real[k > 0 ? k : 0] = 0;
		diag_usage("cannot write %s: it is a symbolic link to '%s' (%s)", path, real, strerror(e));
		return false;
	}
	if (!S_ISREG(st.st_mode) || (S_ISLNK(ls.st_mode) && names_descriptor(path))) {
		o->through = true;
		return true;
	}
	if (S_ISLNK(ls.st_mode)) {
		if (!realpath(path, real)) {
			diag_usage("cannot write %s: %s", path, strerror(errno));
			return false;
		}
		snprintf(o->path, sizeof o->path, "%s", real);
	}
	return true;
}

/* Written in place: a FIFO or device as it is, a regular file behind a
 * descriptor name truncated first, as a shell's `>` would. */
static bool
write_through(const char *shown, const OutPath *o, const Buf *b)
{
	struct stat st;
	int fd = open(o->path, O_WRONLY | (stat(o->path, &st) == 0 && S_ISREG(st.st_mode) ? O_TRUNC : 0));
	size_t done = 0;
	bool ok = fd >= 0;
	while (ok && done < b->len) {
		ssize_t k = write(fd, b->s + done, b->len - done);
		if (k < 0 && errno == EINTR)
			continue;
		ok = k > 0;
		done += ok ? (size_t)k : 0;
	}
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (!ok)
		diag_usage("cannot write %s: %s", shown, strerror(errno));
	return ok;
}

/* The temporary file beside o->path, written whole; false said why. */
static bool
write_temp(const char *shown, const OutPath *o, const Buf *b, char *tmp, size_t n)
{
	FILE *f;
	bool ok;
	if (snprintf(tmp, n, "%s.tmp%ld", o->path, (long)getpid()) >= (int)n) {
		diag_usage("cannot write %s: the name is too long", shown);
		return false;
	}
	f = fopen(tmp, "wb");
	ok = f && fwrite(b->s ? b->s : "", 1, b->len, f) == b->len;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok) {
		diag_usage("cannot write %s: %s", shown, strerror(errno));
		if (f)
			remove(tmp);
	}
	return ok;
}

bool
drv_write(const char *path, const Buf *b)
{
	const Buf *bufs[1] = {b};
	bool ok;
	if (path)
		return drv_write_all(&path, bufs, 1);
	ok = fwrite(b->s ? b->s : "", 1, b->len, stdout) == b->len && fflush(stdout) == 0;
	if (!ok)
		diag_usage("cannot write standard output: %s", strerror(errno));
	return ok;
}

/* Several outputs: the regular files all written to temporaries first,
 * then the others written through, then the temporaries renamed, so a
 * failure leaves no regular file half-made (or changed). */
bool
drv_write_all(const char *const *paths, const Buf *const *bufs, int n)
{
	enum { MAXOUT = 8 };
	OutPath o[MAXOUT];
	char tmp[MAXOUT][PATH_MAX + 64];
	bool ok = n <= MAXOUT;
	int made = 0;
	for (int i = 0; i < n && ok; i++)
		ok = out_path(paths[i], &o[i]);
	for (int i = 0; i < n && ok; i++, made++)
		ok = o[i].through || write_temp(paths[i], &o[i], bufs[i], tmp[i], sizeof tmp[i]);
	for (int i = 0; i < n && ok; i++)
		ok = !o[i].through || write_through(paths[i], &o[i], bufs[i]);
	for (int i = 0; i < made && ok; i++)
		if (!o[i].through && rename(tmp[i], o[i].path)) {
			diag_usage("cannot write %s: %s", paths[i], strerror(errno));
			ok = false;
		}
	if (!ok)
		for (int i = 0; i < made; i++)
			if (!o[i].through)
				remove(tmp[i]);
	return ok;
}

/* Whether `path` is a file the unit read (the main file or a module):
 * writing it would destroy the source. */
static const char *
input_at(const Unit *u, const char *path)
{
	struct stat out, in;
	if (stat(path, &out) != 0)
		return NULL;
	for (const Module *m = u->modules; m; m = m->next) {
		const char *src = src_get(m->file)->path;
		if (strcmp(src, "<stdin>") && stat(src, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
			return src;
	}
	return NULL;
}

/* PREFIX of the generated files: -o's value, else the input's name
 * without .syn (in the current directory). */
static void
code_prefix(const Driver *d, const char *src, char *prefix, size_t n)
{
	const char *b = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
	size_t len = strlen(b);
	if (d->output)
		snprintf(prefix, n, "%s", d->output);
	else
		snprintf(prefix, n, "%.*s", (int)(len > 4 && !strcmp(b + len - 4, ".syn") ? len - 4 : len), b);
}

/* Every file this run will write, against every file it read: an output
 * that is an input is refused before anything is compiled. */
static bool
outputs_spare_inputs(const Driver *d, const Unit *u)
{
	char prefix[4096], code[3][4200];
	const char *outs[6];
	int n = 0;
	if (d->emit == EMIT_CODE) {
		code_prefix(d, src_get(u->modules->file)->path, prefix, sizeof prefix);
		for (int i = 0; i < 3; i++) {
			snprintf(code[i], sizeof code[i], "%s.%s", prefix, (const char *[]){"ptx", "c", "h"}[i]);
			outs[n++] = code[i];
		}
	} else if (d->output) {
		outs[n++] = d->output;
	}
	if (d->trace)
		outs[n++] = d->trace;
	if (d->svg)
		outs[n++] = d->svg;
	for (int i = 0; i < n; i++) {
		const char *in = input_at(u, outs[i]);
		if (in) {
			diag_usage("the output %s is the input %s; refusing to overwrite it", outs[i], in);
			return false;
		}
	}
	return true;
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
