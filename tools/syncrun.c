/* tools/syncrun.c -- checks compiled operators against their sequential
 * meaning: on GPUs through libsyncrt when present, else on simulated ranks. */
#include "driver.h"
#include "../sim/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: syncrun FILE.syn [options]\n"
	"Run every op of FILE (or --entry OP) on fresh random inputs and compare each\n"
	"output with the sequential meaning of the op (the oracle).\n"
	"\n"
	"  --sim                   run on P simulated ranks on this CPU (one thread each)\n"
	"  --ranks P               number of ranks (default 2)\n"
	"  -D NAME=VALUE           override `param NAME`\n"
	"  -I DIR                  search DIR for `use` modules\n"
	"  --entry OP              run only OP\n"
	"  --seed S                seed of the random inputs (default 1)\n"
	"  --f64                   compare with an f64 oracle (no rounding), for error analysis\n"
	"  --no-pass=LIST          skip these graph passes (comma-separated)\n"
	"  --emit=plan|timeline|blocks  print the plan (the timeline is PREDICTED) before running\n"
	"  --explain, --profile NAME, --topo NxG, --mem-budget B, --serial,\n"
	"  --comm-backend nccl|ce|p2p, --no-push: as for syncc\n"
	"  --trace FILE.json, --timeline-svg FILE.svg: the predicted timeline\n"
	"  --measured FILE.json    a measured trace drawn under it in --timeline-svg\n"
	"  --interp                run the IR op by op instead of the plan\n"
	"  --all-plans             run every candidate plan the search scored (tests)\n"
	"  --tune                  run the best candidate plans, keep the fastest that passed its\n"
	"                          check, cached in SYNCC_CACHE_DIR (with --sim: every candidate\n"
	"                          checked, times PREDICTED); --explain lists them\n"
	"  --tune-budget SECONDS   time --tune may take per op (default 5)\n"
	"  --timeout-ms N          deadline of every wait before it is a deadlock (default 20000)\n"
	"On GPUs (syncrun-gpu):\n"
	"  --gpus LIST             local GPUs of the ranks, e.g. 0,1 or 1 (rank r on LIST[r];\n"
	"                          sets --ranks; numbered after CUDA_VISIBLE_DEVICES)\n"
	"  --bench N, --no-check, --trace FILE.json: time N calls; skip the check; measured trace\n"
	"  --calibrate PROFILE     measure this machine (FILE.syn not needed) and write PROFILE,\n"
	"                          its fields carried from --profile where not measured\n"
	"  --auto-comm, --no-auto-comm, --diagnostics=FORMAT, -d PASSES: as for syncc\n"
	"  --version, --help\n"
	"\n"
	"Exit status: 0 every output matched, 1 errors in the input or a mismatch,\n"
	"2 bad command line, 3 internal error.\n";

static const OptId allowed[] = {
	OPT_RANKS, OPT_DEFINE, OPT_INCLUDE, OPT_ENTRY, OPT_DIAG, OPT_AUTOCOMM, OPT_NOAUTOCOMM, OPT_DUMP,
	OPT_VERSION, OPT_HELP, OPT_SIM, OPT_SEED, OPT_NOPASS, OPT_F64, OPT_BREAK, OPT_TIMEOUT,
	OPT_EMIT, OPT_PROFILE, OPT_MEMBUDGET, OPT_TOPO, OPT_EXPLAIN, OPT_SERIAL, OPT_COMMBE, OPT_PUSH, OPT_NOPUSH, OPT_DROPEDGE, OPT_TRACE, OPT_SVG, OPT_MEASURED,
	OPT_INTERP, OPT_ALLPLANS, OPT_TUNE, OPT_TUNEBUDGET, OPT_GPUS, OPT_CALIBRATE, OPT_CALSAMPLES, OPT_BENCH, OPT_NOCHECK,
};

static void
describe(Buf *b, const Type *t)
{
	b->len = 0;
	if (b->s)
		b->s[0] = 0;
	ty_print(b, t);
}

/* An op past the simulator's memory is an error at the op, not a failed
 * allocation reported as a compiler bug. */
static bool
fits(const Func *f)
{
	char why[400];
	if (sim_room(f->sema, f, why, sizeof why))
		return true;
	diag_error(f->span, "op '%s' is too large to simulate: %s", sym_str(f->name), why);
	return false;
}

/* --all-plans: every candidate the search scored, run and checked. */
typedef struct Cands {
	NodeChoice **ch;
	int n;
	int nins;
	int dup; /* candidates scored again, not run twice */
} Cands;

static void
keep_candidate(void *ctx, const NodeChoice *ch)
{
	Cands *c = ctx;
	for (int i = 0; i < c->n; i++)
		if (sched_choice_same(c->ch[i], ch, c->nins)) { /* the search scores some twice */
			c->dup++;
			return;
		}
	c->ch = xrealloc(c->ch, (size_t)(c->n + 1) * sizeof *c->ch);
	c->ch[c->n] = xmalloc((size_t)(c->nins + 1) * sizeof **c->ch);
	memcpy(c->ch[c->n++], ch, (size_t)c->nins * sizeof **c->ch);
}

static bool
run_all_plans(Driver *d, Func *f)
{
	SchedOpts o = {&d->prof, d->topo, d->mem_budget, d->mem_pct, false, NULL, keep_candidate, NULL, d->backend, d->push, NULL};
	SimOpts so = {SIM_GPU, d->seed, d->timeout_ms, d->breaks};
	Cands c = {NULL, 0, f->nins, 0};
	SimOracle or;
	bool all = true;
	if (!fits(f))
		return false;
	o.each_ctx = &c;
	sched_plan_free(sched_plan(f, &o));
	sim_oracle_begin(f->sema, &so, &or);
	for (int i = 0; i < c.n; i++) {
		Plan *p = sched_plan_for(f, &o, c.ch[i]);
		SimResult r;
		sim_check_plan(&or, p, &so, d->topo.gpus, &r);
		if (!r.ok) {
			printf("  candidate %d: %s\n", i, r.error[0] ? r.error : "MISMATCH");
			all = false;
		}
		sim_result_free(&r);
		sched_plan_free(p);
		free(c.ch[i]);
	}
	sim_oracle_end(&or);
	printf("%s: %d candidate plans run (%d more scored again: the same plans), %s\n", sym_str(f->name), c.n, c.dup,
	       all ? "all ok" : "MISMATCH");
	free(c.ch);
	return all;
}

static bool run_one(const Driver *d, Func *f, const Plan *plan);

/* --tune on the simulator: every candidate checked against the oracle,
 * times from the cost model (PREDICTED); then the pick run as usual. */
static bool
run_tuned(Driver *d, Func *f)
{
	TuneSet s;
	double t0 = tune_now();
	SimOpts so = {SIM_GPU, d->seed, d->timeout_ms, d->breaks};
	SimOracle or;
	Plan *p;
	bool ok;
	if (!fits(f))
		return false;
	sim_oracle_begin(f->sema, &so, &or);
	for (int again = 0; again < 2; again++) {
		/* SYNCC_TUNE_CODEGEN (tests): the GPU's codegen rows too, which
		 * the simulator runs as their plan, so their repeats show here */
		tune_begin(d, f, "simulator (no GPU: times PREDICTED)", getenv("SYNCC_TUNE_CODEGEN") != NULL, &s);
		for (int i = 0; i < s.n; i++) {
			SimResult r;
			if (i > 0 && tune_over_budget(d, t0))
				break;
			p = tune_plan(d, f, &s.row[i].pick);
			sim_check_plan(&or, p, &so, d->topo.gpus, &r);
			s.row[i].state = r.ok && !tune_injected(i) ? TS_OK : TS_FAILED;
			if (!r.ok)
				snprintf(s.row[i].why, sizeof s.row[i].why, "%.200s", r.error[0] ? r.error : "mismatch with the oracle");
			else if (tune_injected(i))
				snprintf(s.row[i].why, sizeof s.row[i].why, "made to fail by SYNCC_TUNE_FAIL");
			sim_result_free(&r);
			sched_plan_free(p);
		}
		if (!s.cached || s.row[0].state == TS_OK)
			break;
		printf("%s: --tune: the cached pick failed its check; tuning again\n", sym_str(f->name));
		remove(s.path);
		tune_free(&s);
	}
	sim_oracle_end(&or);
	if (tune_finish(d, f, &s) != EXIT_OK) {
		tune_free(&s);
		return false;
	}
	p = tune_plan(d, f, &s.row[s.pick].pick);
	ok = run_one(d, f, p);
	sched_plan_free(p);
	tune_free(&s);
	return ok;
}

static bool
run_one(const Driver *d, Func *f, const Plan *plan)
{
	SimOpts o = {d->f64 ? SIM_F64 : SIM_GPU, d->seed, d->timeout_ms, d->breaks};
	SimResult r;
	Buf ty = {0};
	bool ok;
	char kind[400] = ", op by op";
	if (!fits(f))
		return false;
	if (plan && strcmp(sched_plan_kind(plan), "not overlapped"))
		snprintf(kind, sizeof kind, ", %s plan", sched_plan_kind(plan));
	else if (plan) {
		char ch[360];
		sched_plan_changes(plan, ch, sizeof ch);
		snprintf(kind, sizeof kind, ", plan not overlapped (%s)", ch);
	}
	printf("%s: %s on %d simulated rank%s (seed %llu)%s\n", sym_str(f->name), d->f64 ? "f64 oracle" : "oracle",
	       f->nranks, f->nranks == 1 ? "" : "s", (unsigned long long)d->seed, kind);
	if (plan)
		sim_compare_plan(f->sema, plan, &o, d->topo.gpus, &r);
	else
		sim_compare(f->sema, f, &o, &r);
	if (r.error[0])
		printf("  FAILED: %s\n", r.error);
	for (int i = 0; i < r.nout && !r.error[0]; i++) {
		describe(&ty, &f->ins[f->out[i]].ty);
		printf("  out%d %-34s rel err %.2e (tolerance %.1e)  %s\n", i, ty.s, r.relerr[i], r.tol[i],
		       r.what[i] ? "MISMATCH" : "ok");
		if (r.what[i])
			printf("    %s\n", r.what[i]);
	}
	fflush(stdout);
	ok = r.ok;
	buf_free(&ty);
	sim_result_free(&r);
	return ok;
}

int
main(int argc, char **argv)
{
	Driver d = {.tool = "syncrun", .seed = 1, .timeout_ms = 20000, .keep_sema = true};
	Unit *u = NULL;
	Buf out = {0};
	int r;
	char bad[80];

	drv_crash_handler();
	diag_setup(DIAG_TEXT, "syncrun");
	d.mem = arena_new();
	d.opt.nranks = 2;
	if ((r = drv_args(&d, argc, argv, allowed, (int)NELEM(allowed), usage)) >= 0) {
		if (r == EXIT_OK && d.help)
			drv_print_passes(stdout);
		drv_free(&d);
		return r;
	}
	if (d.cal_samples) { /* tests: the fit and the writer of --calibrate, without GPUs */
		r = cal_from_samples(d.cal_samples, d.calibrate);
		drv_free(&d);
		return r;
	}
	if (d.sim && (d.ngpus || d.calibrate || d.bench || d.nocheck)) {
		diag_usage("%s needs GPUs; it has no meaning with --sim",
		           d.ngpus ? "--gpus" : d.calibrate ? "--calibrate" : d.bench ? "--bench" : "--no-check");
		return EXIT_USAGE;
	}
	if (d.breaks && !sim_break_known(d.breaks, bad, sizeof bad)) {
		diag_usage("--break %s: unknown lowering '%s'", d.breaks, bad);
		return EXIT_USAGE;
	}
	/* an unwritable PROFILE is said now, GPUs or not: syncrun-gpu
	 * would otherwise find it out only after minutes of measuring */
	if (d.calibrate && (r = cal_check_dest(d.calibrate)) != EXIT_OK)
		return r;
	if (!d.sim) {
		/* GPUs and the GPU build present: syncrun-gpu runs it; else the simulator, saying so */
		char gpu[4096];
		const char *lib = drv_libdir();
		snprintf(gpu, sizeof gpu, "%.*s/syncrun-gpu", lib ? (int)(strlen(lib) - strlen("/stdlib")) : 1, lib ? lib : ".");
		if (access("/dev/nvidia0", F_OK) == 0 && access(gpu, X_OK) == 0) {
			argv[0] = gpu;
			execv(gpu, argv);
			fprintf(stderr, "syncrun: cannot run %s; running on the simulator\n", gpu);
		} else if (d.ngpus || d.calibrate || d.bench || d.nocheck) {
			fprintf(stderr, "syncrun: %s needs GPUs, and %s\n",
			        d.ngpus ? "--gpus" : d.calibrate ? "--calibrate" : d.bench ? "--bench" : "--no-check",
			        access("/dev/nvidia0", F_OK) ? "there is no GPU here" : "this build has no GPU runtime (syncrun-gpu)");
			return EXIT_INPUT;
		} else {
			fprintf(stderr, "syncrun: %s; running on the simulator\n",
			        access("/dev/nvidia0", F_OK) ? "no GPU here" : "this build has no GPU runtime (syncrun-gpu)");
		}
	}
	if (d.tune && (d.interp || d.all_plans)) {
		diag_usage("--tune runs plans; it cannot go with %s", d.interp ? "--interp" : "--all-plans");
		return EXIT_USAGE;
	}
	if (d.emit == EMIT_DEFAULT)
		d.emit = EMIT_IR;
	d.need_plans = !d.interp;
	r = drv_compile(&d, &u, &out);
	if (d.emit != EMIT_IR)
		fputs(out.s ? out.s : "", stdout);
	buf_free(&out);
	if (r == EXIT_OK) {
		bool all = true;
		int i = 0;
		for (Func *f = u->funcs; f; f = f->next, i++)
			all = (d.all_plans ? run_all_plans(&d, f)
			       : d.tune    ? run_tuned(&d, f)
			                   : run_one(&d, f, d.interp ? NULL : d.plans[i])) &&
			      all;
		if (!u->funcs)
			fprintf(stderr, "syncrun: %s has no op to run\n", d.input);
		r = all ? EXIT_OK : EXIT_INPUT;
	}
	unit_free(u);
	drv_free(&d);
	return r;
}
