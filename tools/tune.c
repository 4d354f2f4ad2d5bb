/* tools/tune.c -- --tune: the candidates, the cache and the report
 * (docs/scheduler.md, "Measured tuning").
 *
 * The runner (syncrun --sim here, syncrun-gpu on GPUs) fills in each
 * row's state and time; this file makes the rows, picks the fastest row
 * that passed its check (never one that failed, was refused or was not
 * run), writes the cache entry and prints the table.  The cache is one
 * text file per key under SYNCC_CACHE_DIR (default $XDG_CACHE_HOME/syncc,
 * else ~/.cache/syncc): the key's lines, then the pick's.  A file whose
 * key lines differ from this run's is a miss (a changed op, shape, rank
 * count, topology, profile, device or syncc), so a stale pick is never
 * reused. */
#include "driver.h"
#include "../codegen/codegen.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t
fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

double
tune_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

bool
tune_over_budget(const Driver *d, double started)
{
	return tune_now() - started > (d->tune_budget > 0 ? d->tune_budget : TUNE_BUDGET_S);
}

/* SYNCC_TUNE_FAIL=I[,J...]: tests make these candidates fail their check. */
bool
tune_injected(int i)
{
	const char *s = getenv("SYNCC_TUNE_FAIL");
	while (s && *s) {
		char *end;
		long k = strtol(s, &end, 10);
		if (end == s)
			return false;
		if (k == i)
			return true;
		s = *end == ',' ? end + 1 : end;
	}
	return false;
}

/* The key: everything a measured pick depends on, one fact a line. */
static void
make_key(const Driver *d, const Func *f, const char *device, Buf *k)
{
	char *ir = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&ir, &n);
	if (!m)
		die("open_memstream failed");
	ir_print(m, f);
	fclose(m);
	buf_printf(k, "syncc-tune 1 (syncc %s)\n", SYNCC_VERSION);
	buf_printf(k, "op %s\n", sym_str(f->name));
	buf_printf(k, "ir %016llx\n", (unsigned long long)fnv(ir, n)); /* the body and every shape */
	free(ir);
	for (int i = 0; i < f->nin; i++) {
		buf_printf(k, "arg %s ", sym_str(f->ins[f->in[i]].name));
		ty_print(k, &f->ins[f->in[i]].ty);
		buf_printf(k, "\n");
	}
	buf_printf(k, "ranks %d\ntopo %dx%d\n", f->nranks, d->topo.nodes, d->topo.gpus);
	buf_printf(k, "profile %s (%s)\n", d->prof.name, d->prof.path);
	buf_printf(k, "device %s\n", device);
	buf_printf(k, "options serial %d backend %d push %d mem %.0f %.1f\n", d->serial, d->backend, d->push, d->mem_budget, d->mem_pct);
}

static void
pick_text(const Func *f, const TunePick *k, Buf *b)
{
	buf_printf(b, "pick plan ");
	if (k->ch)
		sched_choice_text(f, k->ch, b);
	else
		buf_printf(b, "search");
	buf_printf(b, "\npick tile %s\npick sms %d\n", k->tile ? ptx_tiles[k->tile - 1].name : "default", k->sms);
}

static void
describe(const Func *f, const TunePick *k, char *out, size_t n)
{
	Buf b = {0};
	if (k->ch)
		sched_choice_describe(f, k->ch, &b);
	else
		buf_printf(&b, "the search's plan");
	if (k->tile)
		buf_printf(&b, ", tile %s", ptx_tiles[k->tile - 1].name);
	if (k->sms)
		buf_printf(&b, ", kernels on %d SMs", k->sms);
	snprintf(out, n, "%s", b.s);
	buf_free(&b);
}

/* A cached pick whose key lines are this run's; false: a miss. */
static bool
read_cache(const Func *f, const TuneSet *s, TunePick *k)
{
	FILE *in = s->path[0] ? fopen(s->path, "r") : NULL;
	char line[65536];
	size_t klen = s->key.len, got = 0;
	bool ok = in != NULL;
	*k = (TunePick){0};
	while (ok && got < klen && fgets(line, sizeof line, in)) {
		size_t n = strlen(line);
		ok = got + n <= klen && memcmp(s->key.s + got, line, n) == 0;
		got += n;
	}
	ok = ok && got == klen;
	while (ok && fgets(line, sizeof line, in)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, "pick plan ", 10) == 0 && strcmp(line + 10, "search")) {
			k->ch = xmalloc((size_t)(f->nins + 1) * sizeof *k->ch);
			ok = sched_choice_parse(f, line + 10, k->ch);
		} else if (strncmp(line, "pick tile ", 10) == 0 && strcmp(line + 10, "default")) {
			int t = ptx_tile_byname(line + 10);
			ok = t >= 0;
			k->tile = t + 1;
		} else if (strncmp(line, "pick sms ", 9) == 0)
			ok = sscanf(line + 9, "%d", &k->sms) == 1 && k->sms >= 0;
	}
	if (in)
		fclose(in);
	if (!ok) {
		free(k->ch);
		k->ch = NULL;
	}
	return ok;
}

/* A cached pick whose plan this syncc still makes (a choice whose
 * regions it can no longer list exactly is a miss); false: a miss. */
static bool
cached_pick(const Func *f, const SchedOpts *o, const TuneSet *s, TunePick *k)
{
	if (!read_cache(f, s, k))
		return false;
	if (k->ch && !sched_choice_plannable(f, o, k->ch)) {
		free(k->ch);
		k->ch = NULL;
		return false;
	}
	return true;
}

static void
add_row(TuneSet *s, const Func *f, TunePick k, double predicted)
{
	TuneRow *r;
	s->row = xrealloc(s->row, (size_t)(s->n + 1) * sizeof *s->row);
	r = &s->row[s->n++];
	*r = (TuneRow){k, "", predicted, -1, TS_NOTRUN, ""};
	describe(f, &k, r->what, sizeof r->what);
}

/* The tiles a matmul of dtype dt can run (the raiser tile has not run on
 * a GPU yet, and the cluster tiles, 5-7% slower, and the stream-K tile
 * cannot take a plan's flags: never candidates; a flagless matmul gets
 * the stream-K form of its tile anyway, lower.c). */
static bool
tile_fits(int t, DType dt)
{
	return !ptx_tiles[t].raiser && ptx_tiles[t].cluster <= 1 && !ptx_tiles[t].streamk &&
	       (dt == DT_F32) == (ptx_tiles[t].kind == PTX_SIMT);
}

/* Whether p's kernels with its tile are those codegen makes with none
 * asked for (the tile every matmul would get anyway). */
static bool
tile_is_default(Plan *p)
{
	Lowered a = {0}, b = {0};
	int t = p->tile;
	bool same = ptx_lower(p, &a);
	p->tile = 0;
	same = same && ptx_lower(p, &b) && a.ptx.len == b.ptx.len && memcmp(a.ptx.s, b.ptx.s, a.ptx.len) == 0;
	p->tile = t;
	ptx_lowered_free(&a);
	ptx_lowered_free(&b);
	return same;
}

/* A pick's effective configuration (sched_plan_key), the codegen choices
 * that change nothing left out: a tile that makes the default kernels, an
 * SM share of every SM. */
static void
pick_key(Driver *d, Func *f, const TunePick *k, Buf *key)
{
	Plan *p = tune_plan(d, f, k);
	if (p->grid_sms >= p->sms)
		p->grid_sms = 0;
	if (p->tile && tile_is_default(p))
		p->tile = 0;
	sched_plan_key(p, key);
	sched_plan_free(p);
}

/* Adds the row unless an earlier row runs the same; false: a repeat,
 * not added (k.ch freed). */
static bool
add_distinct(Driver *d, Func *f, TuneSet *s, Buf **keys, TunePick k, double predicted)
{
	Buf key = {0};
	pick_key(d, f, &k, &key);
	for (int i = 0; i < s->n; i++)
		if ((*keys)[i].len == key.len && memcmp((*keys)[i].s, key.s, key.len) == 0) {
			buf_free(&key);
			free(k.ch);
			s->repeats++;
			return false;
		}
	*keys = xrealloc(*keys, (size_t)(s->n + 1) * sizeof **keys);
	(*keys)[s->n] = key;
	add_row(s, f, k, predicted);
	return true;
}

/* At P = 1 the code generator's choices: every tile of the op's first
 * matmul's dtype, and the default tile on 3/4 of the SMs. */
static void
codegen_rows(Driver *d, Func *f, TuneSet *s, Buf **keys, double predicted)
{
	DType dt = DT_COUNT;
	for (Val v = 0; v < f->nins && dt == DT_COUNT; v++)
		if (f->ins[v].op == OP_MATMUL)
			dt = f->ins[f->ins[v].arg[0]].ty.dt;
	for (int t = 0; dt != DT_COUNT && t < ptx_ntiles; t++)
		if (tile_fits(t, dt))
			add_distinct(d, f, s, keys, (TunePick){NULL, t + 1, 0}, predicted);
	if (d->prof.sms > 4)
		add_distinct(d, f, s, keys, (TunePick){NULL, 0, d->prof.sms * 3 / 4}, predicted);
}

/* The rows to run: a cached pick alone, else the search's best plans and,
 * with codegen at P = 1, the code generator's choices. */
void
tune_begin(Driver *d, Func *f, const char *device, bool codegen, TuneSet *s)
{
	char dir[4096];
	TunePick cached;
	TuneCand *c;
	SchedOpts o = {&d->prof, d->topo, d->mem_budget, d->mem_pct, d->serial, NULL, NULL, NULL, d->backend, d->push, NULL};
	Buf *keys = NULL;
	int n;
	*s = (TuneSet){0};
	s->pick = -1;
	snprintf(s->device, sizeof s->device, "%s", device);
	make_key(d, f, device, &s->key);
	if (cache_dir(dir, sizeof dir))
		snprintf(s->path, sizeof s->path, "%s/tune-%016llx.txt", dir, (unsigned long long)fnv(s->key.s, s->key.len));
	else
		fprintf(stderr, "syncrun: --tune: no cache directory (set SYNCC_CACHE_DIR); the pick is not kept\n");
	if (cached_pick(f, &o, s, &cached)) {
		Plan *p = sched_plan(f, &o);
		add_row(s, f, cached, p->makespan);
		sched_plan_free(p);
		s->cached = true;
		return;
	}
	/* every scored choice, fastest first, until TUNE_MAX_PLANS distinct
	 * plans: a choice that builds the search's own plan, or one another
	 * choice built, is a repeat */
	n = sched_tune_candidates(f, &o, 0, &c);
	for (int i = 0; i < n && s->n < TUNE_MAX_PLANS; i++) {
		add_distinct(d, f, s, &keys, (TunePick){c[i].ch, 0, 0}, c[i].predicted);
		c[i].ch = NULL; /* the row owns it, or it is freed */
	}
	if (codegen && f->nranks == 1)
		codegen_rows(d, f, s, &keys, n ? c[0].predicted : 0);
	sched_tune_free(c, n);
	for (int i = 0; i < s->n; i++)
		buf_free(&keys[i]);
	free(keys);
}

/* The plan of a pick; the caller frees it. */
Plan *
tune_plan(Driver *d, Func *f, const TunePick *k)
{
	SchedOpts o = {&d->prof, d->topo, d->mem_budget, d->mem_pct, d->serial, NULL, NULL, NULL, d->backend, d->push, NULL};
	Plan *p = k->ch ? sched_plan_for(f, &o, k->ch) : sched_plan(f, &o);
	p->tile = k->tile;
	p->grid_sms = k->sms;
	return p;
}

static const char *const state_names[] = {"not run (budget)", "ok", "FAILED its check", "refused"};

static void
report(const Driver *d, const Func *f, const TuneSet *s)
{
	const char *unit = s->measured ? "measured" : "PREDICTED";
	int ran = 0, ok = 0;
	for (int i = 0; i < s->n; i++) {
		ran += s->row[i].state != TS_NOTRUN;
		ok += s->row[i].state == TS_OK;
	}
	if (s->cached)
		printf("%s: --tune: cached pick (%s): %s\n", sym_str(f->name), s->path, s->row[0].what);
	else
		printf("%s: --tune: %d candidates, %d run, %d passed their check, times %s%s; pick #%d%s%s\n", sym_str(f->name),
		       s->n, ran, ok, unit, s->measured ? "" : " by the cost model (the simulator measures nothing)", s->pick,
		       s->path[0] ? ", cached in " : "", s->path);
	if (s->repeats)
		printf("  %d more candidate%s not run: each would run as an earlier one (the same blocks, orders, backends and code)\n",
		       s->repeats, s->repeats == 1 ? "" : "s");
	if (!d->explain)
		return;
	printf("  tuning on %s; candidates (predicted by the cost model; measured: median of %d calls, slowest rank):\n",
	       s->device, TUNE_CALLS);
	for (int i = 0; i < s->n; i++)
		if (s->row[i].pick.tile || s->row[i].pick.sms) {
			printf("  (the cost model does not model matmul tiles or SM shares: those rows carry their plan's prediction)\n");
			break;
		}
	for (int i = 0; i < s->n; i++) {
		const TuneRow *r = &s->row[i];
		char m[32] = "-";
		if (r->measured >= 0)
			snprintf(m, sizeof m, "%.1f us", r->measured);
		printf("  %c#%-2d predicted %9.1f us  measured %10s  %-17s %s%s%s\n", i == s->pick ? '*' : ' ', i, r->predicted, m,
		       state_names[r->state], r->what, r->why[0] ? ": " : "", r->why);
	}
	if (s->pick >= 0)
		printf("  pick #%d: the fastest %s that passed its check\n", s->pick, s->measured ? "measured" : "predicted");
}

static void
write_cache(const Func *f, const TuneSet *s)
{
	Buf b = {0};
	const TuneRow *p = &s->row[s->pick];
	buf_put(&b, s->key.s, s->key.len);
	pick_text(f, &p->pick, &b);
	buf_printf(&b, "# %s: %s %.1f us (%s)\n", p->what, s->measured ? "measured" : "PREDICTED",
	           s->measured ? p->measured : p->predicted, s->measured ? "median" : "cost model");
	for (int i = 0; i < s->n; i++)
		buf_printf(&b, "# candidate %d: predicted %.1f us, measured %.1f us, %s: %s\n", i, s->row[i].predicted,
		           s->row[i].measured, state_names[s->row[i].state], s->row[i].what);
	if (!drv_write(s->path, &b))
		fprintf(stderr, "syncrun: --tune: the pick is not cached\n");
	buf_free(&b);
}

int
tune_finish(Driver *d, Func *f, TuneSet *s)
{
	for (int i = 0; i < s->n; i++) {
		const TuneRow *r = &s->row[i];
		double t = s->measured ? r->measured : r->predicted, best;
		if (r->state != TS_OK || (s->measured && t < 0))
			continue;
		best = s->pick < 0 ? 0 : s->measured ? s->row[s->pick].measured : s->row[s->pick].predicted;
		if (s->pick < 0 || t < best)
			s->pick = i;
	}
	if (s->pick >= 0 && !s->cached && s->path[0])
		write_cache(f, s);
	if (s->pick >= 0 && s->path[0] && getenv("SYNCC_TUNE_PICKS")) { /* for syncc --tune, which started us */
		FILE *o = fopen(getenv("SYNCC_TUNE_PICKS"), "a");
		if (o) {
			fprintf(o, "op %s %s\n", sym_str(f->name), s->path);
			fclose(o);
		}
	}
	report(d, f, s);
	if (s->pick < 0) {
		fprintf(stderr, "syncrun: --tune: no candidate of %s passed its check\n", sym_str(f->name));
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

void
tune_free(TuneSet *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->row[i].pick.ch);
	free(s->row);
	buf_free(&s->key);
}

/* The pick lines of a cache entry syncrun-gpu has just checked. */
static bool
read_pick(const Func *f, const char *path, TunePick *k)
{
	FILE *in = fopen(path, "r");
	char line[65536];
	bool ok = in != NULL;
	*k = (TunePick){0};
	while (ok && fgets(line, sizeof line, in)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, "pick plan ", 10) == 0 && strcmp(line + 10, "search")) {
			k->ch = xmalloc((size_t)(f->nins + 1) * sizeof *k->ch);
			ok = sched_choice_parse(f, line + 10, k->ch);
		} else if (strncmp(line, "pick tile ", 10) == 0 && strcmp(line + 10, "default"))
			ok = (k->tile = ptx_tile_byname(line + 10) + 1) > 0;
		else if (strncmp(line, "pick sms ", 9) == 0)
			ok = sscanf(line + 9, "%d", &k->sms) == 1;
	}
	if (in)
		fclose(in);
	if (!ok) {
		free(k->ch);
		k->ch = NULL;
	}
	return ok;
}

Plan *
tune_picked_plan(Driver *d, Func *f)
{
	FILE *in = fopen(d->tune_picks, "r");
	SchedOpts o = {&d->prof, d->topo, d->mem_budget, d->mem_pct, d->serial, NULL, NULL, NULL, d->backend, d->push, NULL};
	char op[256], path[4200];
	Plan *p = NULL;
	TunePick k;
	while (in && !p && fscanf(in, "op %255s %4199[^\n]\n", op, path) == 2)
		if (strcmp(op, sym_str(f->name)) == 0 && read_pick(f, path, &k)) {
			if (k.ch && !sched_choice_plannable(f, &o, k.ch)) { /* syncrun-gpu is another syncc's */
				free(k.ch);
				continue;
			}
			p = tune_plan(d, f, &k);
			free(k.ch);
			diag_note(f->span, "op '%s': the plan --tune measured fastest (%s)", op, path);
		}
	if (in)
		fclose(in);
	return p;
}

/* syncc --tune: syncrun-gpu (beside this binary) looks the ops up in the
 * cache or measures them, on the GPUs here, with this command line's
 * choices; it names the cache entries it kept in SYNCC_TUNE_PICKS, which
 * plan_all then compiles.  Without GPUs the search's plans, said so. */
int
tune_with_gpus(Driver *d)
{
	static char picks[] = "/tmp/syncc-tune-XXXXXX";
	char gpu[4300], ranks[16], budget[32], mem[48];
	const char *lib = drv_libdir(), *argv[64 + 4 * 32];
	int n = 0, fd, st;
	pid_t pid;
	snprintf(gpu, sizeof gpu, "%.*s/syncrun-gpu", lib ? (int)(strlen(lib) - strlen("/stdlib")) : 1, lib ? lib : ".");
	if (access("/dev/nvidia0", F_OK) != 0 || access(gpu, X_OK) != 0) {
		fprintf(stderr, "syncc: --tune: %s: nothing measured; the search's plans (predicted)\n",
		        access("/dev/nvidia0", F_OK) ? "no GPU here" : "this build has no GPU runtime (syncrun-gpu)");
		return EXIT_OK;
	}
	if ((fd = mkstemp(picks)) < 0)
		die("mkstemp failed");
	close(fd);
	snprintf(ranks, sizeof ranks, "%d", d->opt.nranks);
	snprintf(budget, sizeof budget, "%g", d->tune_budget > 0 ? d->tune_budget : TUNE_BUDGET_S);
	argv[n++] = gpu, argv[n++] = d->input, argv[n++] = "--tune", argv[n++] = "--tune-budget", argv[n++] = budget;
	argv[n++] = "--ranks", argv[n++] = ranks;
	for (int i = 0; i < d->opt.ndefines && i < 30; i++) {
		Buf b = {0};
		buf_printf(&b, "%s=%s", d->opt.defines[i].name, d->opt.defines[i].value);
		argv[n++] = "-D", argv[n++] = arena_strndup(d->mem, b.s, b.len);
		buf_free(&b);
	}
	for (int i = 0; i < d->opt.nincdirs && i < 30; i++)
		argv[n++] = "-I", argv[n++] = d->opt.incdirs[i];
	if (d->opt.entry)
		argv[n++] = "--entry", argv[n++] = d->opt.entry;
	if (d->profile)
		argv[n++] = "--profile", argv[n++] = d->profile;
	if (d->serial)
		argv[n++] = "--serial";
	if (d->backend)
		argv[n++] = "--comm-backend", argv[n++] = comm_backends[d->backend - 1].name;
	if (d->mem_budget >= 0 || d->mem_pct > 0) {
		snprintf(mem, sizeof mem, d->mem_pct > 0 ? "%g%%" : "%.0f", d->mem_pct > 0 ? d->mem_pct : d->mem_budget);
		argv[n++] = "--mem-budget", argv[n++] = mem;
	}
	if (d->nopass)
		argv[n++] = "--no-pass", argv[n++] = d->nopass;
	if (d->explain)
		argv[n++] = "--explain";
	argv[n] = NULL;
	fflush(stdout);
	if ((pid = fork()) == 0) {
		setenv("SYNCC_TUNE_PICKS", picks, 1);
		dup2(2, 1); /* its report on stderr: syncc's stdout is --emit's */
		execv(gpu, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "syncc: --tune: %s failed; nothing compiled\n", gpu);
		remove(picks);
		return EXIT_INPUT;
	}
	d->tune_picks = picks;
	return EXIT_OK;
}
