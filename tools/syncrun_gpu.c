/* tools/syncrun_gpu.c -- syncrun on GPUs: compiles FILE.syn, builds its
 * launcher into a shared object, runs every op through libsyncrt on fresh
 * random inputs (outputs poisoned first), checks each rank's results
 * against the CPU oracle, and with --bench N times the median of N calls
 * with events.  One process drives all local GPUs, or, under torchrun /
 * mpirun / Slurm (RANK is set), this process is one rank.
 * `syncrun` hands over to this program when GPUs are present. */
#include "driver.h"
#include "../runtime/sim.h"
#include "../runtime/syncrt.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: syncrun-gpu FILE.syn [options]   (syncrun runs it when GPUs are present)\n"
	"  --ranks P, -D NAME=VALUE, -I DIR, --entry OP, --seed S, --profile NAME, --serial,\n"
	"  --no-pass=LIST, --explain, --emit=plan|timeline: as for syncrun --sim\n"
	"  --bench N               time the median of N calls (after 3 warm-up calls)\n"
	"  --no-check              skip the comparison with the CPU oracle\n"
	"  --trace FILE.json       the measured timeline (Chrome trace, rank 0 writes it)\n"
	"  --dump-outputs DIR      write every rank's outputs (raw bytes) into DIR\n"
	"  --drop-flag             test only: raise no flag from the comm lane, so the\n"
	"                          kernels' waits time out (SYNC_TIMEOUT_MS)\n";

typedef void (*AnyFn)(void); /* a launcher, cast to its arity when called (GCC: void (*)(void) casts freely) */

typedef struct Job {
	Driver *d;
	const Func *f;
	const Plan *plan;
	AnyFn fn;             /* the launcher */
	const Tensor *in;     /* global inputs */
	Tensor **shard;       /* [rank][input] */
	int bench;
	bool check;
	/* per rank */
	void **dbuf;          /* [rank][arg]: device buffers */
	Tensor **got;         /* [rank][value]: downloaded outputs */
	double *ms;           /* [rank]: median ms */
	int *status;
} Job;

static int nranks_of_job;

static size_t
bytes_of(const Type *t, int P)
{
	return (size_t)ty_local_numel(t, P) * ty_dtypes[t->dt].size;
}

/* f16 bits of a value that is already an f16 (rounded by the simulator). */
static uint16_t
f16_bits(double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	int e;
	double m;
	x = fabs(x);
	if (isnan(x))
		return 0x7e00;
	if (isinf(x) || x > 65504)
		return sign | 0x7c00;
	if (x == 0)
		return sign;
	m = frexp(x, &e); /* x = m 2^e, m in [0.5, 1) */
	if (e - 1 < -14)  /* subnormal: multiples of 2^-24 */
		return sign | (uint16_t)llround(x * 0x1p24);
	return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)llround((m * 2 - 1) * 1024);
}

static double
f16_value(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
	return h & 0x8000 ? -v : v;
}

/* Host doubles (already rounded to the dtype) to the dtype's bytes. */
static void
encode(const Tensor *t, void *out)
{
	for (int64_t i = 0; i < t->n; i++) {
		float f = (float)t->v[i];
		uint32_t u;
		memcpy(&u, &f, 4);
		switch (t->dt) {
		case DT_F32: ((float *)out)[i] = f; break;
		case DT_BF16: ((uint16_t *)out)[i] = (uint16_t)(u >> 16); break; /* exact: already rounded */
		case DT_F16: ((uint16_t *)out)[i] = f16_bits(t->v[i]); break;
		case DT_I32: ((int32_t *)out)[i] = (int32_t)t->v[i]; break;
		default: die("bad dtype");
		}
	}
}

static void
decode(const void *in, Tensor *t)
{
	for (int64_t i = 0; i < t->n; i++)
		switch (t->dt) {
		case DT_F32: t->v[i] = ((const float *)in)[i]; break;
		case DT_BF16: {
			uint32_t u = (uint32_t)((const uint16_t *)in)[i] << 16;
			float f;
			memcpy(&f, &u, 4);
			t->v[i] = f;
			break;
		}
		case DT_F16: t->v[i] = f16_value(((const uint16_t *)in)[i]); break;
		case DT_I32: t->v[i] = ((const int32_t *)in)[i]; break;
		default: die("bad dtype");
		}
}

static syn_tensor
tensor_of(void *data, const Type *t, int P)
{
	syn_tensor s = {data, (CommDType)t->dt, t->rank, {0}, {0}};
	int64_t d[LIM_RANK];
	ty_local_shape(t, P, d);
	for (int i = 0; i < t->rank; i++)
		s.dims[i] = d[i];
	return s;
}

/* The launcher takes one pointer per argument and result. */
static int
call(AnyFn fn, syn_ctx *c, syn_tensor *a, int n)
{
	switch (n) {
	case 1: return ((int (*)(syn_ctx *, void *))fn)(c, &a[0]);
	case 2: return ((int (*)(syn_ctx *, void *, void *))fn)(c, &a[0], &a[1]);
	case 3: return ((int (*)(syn_ctx *, void *, void *, void *))fn)(c, &a[0], &a[1], &a[2]);
	case 4: return ((int (*)(syn_ctx *, void *, void *, void *, void *))fn)(c, &a[0], &a[1], &a[2], &a[3]);
	case 5: return ((int (*)(syn_ctx *, void *, void *, void *, void *, void *))fn)(c, &a[0], &a[1], &a[2], &a[3], &a[4]);
	case 6:
		return ((int (*)(syn_ctx *, void *, void *, void *, void *, void *, void *))fn)(c, &a[0], &a[1], &a[2], &a[3], &a[4],
		                                                                              &a[5]);
	case 7:
		return ((int (*)(syn_ctx *, void *, void *, void *, void *, void *, void *, void *))fn)(
			c, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6]);
	case 8:
		return ((int (*)(syn_ctx *, void *, void *, void *, void *, void *, void *, void *, void *))fn)(
			c, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]);
	default: return SYN_EUNSUPPORTED;
	}
}

static int
rank_main(syn_ctx *c, void *arg)
{
	Job *j = arg;
	const Func *f = j->f;
	int r = syn_rank(c), P = f->nranks, n = f->nin + f->nout, st;
	syn_tensor *a = xcalloc((size_t)n + 1, sizeof *a);
	void **buf = xcalloc((size_t)n + 1, sizeof *buf);
	double *times = xcalloc((size_t)j->bench + 1, sizeof *times);
	for (int i = 0; i < n; i++) {
		const Type *t = i < f->nin ? &f->ins[f->in[i]].ty : &f->outty[i - f->nin];
		size_t nb = bytes_of(t, P);
		void *host = xmalloc(nb + 1);
		if ((st = syn_alloc(c, nb ? nb : 1, &buf[i])))
			goto fail;
		if (i < f->nin)
			encode(&j->shard[r][i], host);
		else
			memset(host, 0xff, nb); /* poison: NaN in every float dtype */
		if ((st = syn_upload(c, buf[i], host, nb)))
			goto fail;
		free(host);
		a[i] = tensor_of(buf[i], t, P);
	}
	if ((st = call(j->fn, c, a, n)) || (st = syn_sync(c)))
		goto fail;
	for (int i = 0; i < f->nout; i++) {
		const Type *t = &f->outty[i];
		Tensor out = sim_tensor_of(t, true, P);
		void *host = xmalloc(bytes_of(t, P) + 1);
		if ((st = syn_download(c, host, buf[f->nin + i], bytes_of(t, P))))
			goto fail;
		decode(host, &out);
		if (j->d->dumpdir) { /* raw bytes, for comparing two runs (bench/syncc-bench) */
			char path[4200];
			FILE *df;
			snprintf(path, sizeof path, "%s/%s.out%d.r%d.bin", j->d->dumpdir, sym_str(f->name), i, r);
			if (!(df = fopen(path, "wb")) || fwrite(host, 1, bytes_of(t, P), df) != bytes_of(t, P) || fclose(df))
				fprintf(stderr, "syncrun: cannot write %s\n", path);
		}
		free(host);
		j->got[r][f->out[i]] = out;
	}
	for (int it = 0; it < j->bench + 3 && j->bench; it++) { /* 3 warm-up calls */
		float ms;
		if ((st = syn_mark(c, 0)) || (st = call(j->fn, c, a, n)) || (st = syn_mark(c, 1)) || (st = syn_sync(c)) ||
		    (st = syn_mark_ms(c, 0, 1, &ms)))
			goto fail;
		if (it >= 3)
			times[it - 3] = ms;
	}
	if (j->bench) {
		for (int x = 1; x < j->bench; x++) /* insertion sort: N is small */
			for (int y = x; y > 0 && times[y] < times[y - 1]; y--) {
				double t = times[y];
				times[y] = times[y - 1];
				times[y - 1] = t;
			}
		j->ms[r] = times[j->bench / 2];
	}
	st = SYN_OK;
fail:
	if (st)
		fprintf(stderr, "syncrun: rank %d: %s: %s\n", r, syn_status_name(st), syn_error(c));
	j->status[r] = st;
	free(a);
	free(times);
	/* buffers are freed with the context */
	free(buf);
	return st;
}

static int
write_trace(syn_ctx *c, void *path)
{
	int r = syn_trace_write(c, path);
	if (r)
		fprintf(stderr, "syncrun: trace: %s\n", syn_error(c));
	return r;
}

static double
flops_of(const Func *f)
{
	double fl = 0;
	for (Val v = 0; v < f->nins; v++)
		if (f->ins[v].op == OP_MATMUL) {
			const Type *a = &f->ins[f->ins[v].arg[0]].ty;
			fl += 2.0 * (double)ty_numel(&f->ins[v].ty) * (double)a->dim[a->rank - 1];
		}
	return fl;
}

static bool
check_outputs(Job *j, int P, int first, int nlocal)
{
	const Func *f = j->f;
	Tensor *ref = xcalloc((size_t)f->nout + 1, sizeof *ref);
	char err[512];
	bool ok = true;
	Buf ty = {0};
	if (!sim_oracle(f->sema, j->in, SIM_GPU, ref, err, sizeof err))
		die("oracle failed: %s", err);
	for (int i = 0; i < f->nout; i++) {
		const Type *t = &f->ins[f->out[i]].ty;
		double tol = sim_tolerance(f->sema, i), worst = 0;
		int bad = 0;
		for (int r = first; r < first + nlocal; r++) {
			Tensor *got = &j->got[r][f->out[i]], want = sim_tensor_of(t, true, P);
			double num = 0, den = 0;
			int64_t nonfinite = 0;
			if (t->pl.kind == PL_SPLIT)
				sim_block(&ref[i], t->pl.dim, r, P, &want);
			else if (t->pl.kind == PL_REPL)
				sim_copy_flat(&ref[i], &want);
			else {
				sim_free(&want);
				continue; /* a @partial output: its pieces only sum to the reference */
			}
			for (int64_t k = 0; k < want.n; k++) {
				double x = got->v[k], y = want.v[k];
				if (!isfinite(x) || !isfinite(y)) {
					nonfinite += !(isnan(x) && isnan(y)) && x != y;
					continue;
				}
				num += (x - y) * (x - y);
				den += y * y;
			}
			double rel = den > 0 ? sqrt(num / den) : sqrt(num);
			if (rel > worst)
				worst = rel;
			if (nonfinite || !(rel <= tol))
				bad++;
			if (nonfinite)
				printf("    rank %d: %lld element(s) not finite where the reference is (unwritten?)\n", r, (long long)nonfinite);
			sim_free(&want);
		}
		ty.len = 0;
		if (ty.s)
			ty.s[0] = 0;
		ty_print(&ty, t);
		printf("  out%d %-34s rel err %.2e (tolerance %.1e)  %s\n", i, ty.s, worst, tol, bad ? "MISMATCH" : "ok");
		ok = ok && !bad;
		sim_free(&ref[i]);
	}
	buf_free(&ty);
	free(ref);
	return ok;
}

#ifndef SYNCC_INCLUDEDIR
#define SYNCC_INCLUDEDIR "/usr/local/include"
#endif

/* The directory of syncrt.h, which the launchers include: the source tree
 * the binary was built in, an installed prefix (PARENT/include/syncc
 * beside PARENT/bin, so a staged or moved install works), or the
 * includedir the Makefile compiled in. */
static void
runtime_dirs(char *inc, size_t n)
{
	const char *exe = exe_dir();
	const char *slash = exe ? strrchr(exe, '/') : NULL;
	snprintf(inc, n, "%s/runtime", exe ? exe : ".");
	if (access(inc, R_OK) == 0)
		return;
	if (slash) {
		snprintf(inc, n, "%.*s/include/syncc", (int)(slash - exe), exe);
		if (access(inc, R_OK) == 0)
			return;
	}
	snprintf(inc, n, "%s/syncc", SYNCC_INCLUDEDIR);
}

static AnyFn
build_launcher(const char *dir, const char *prefix, const char *op)
{
	char inc[4096], cmd[16384], so[4200], sym[256];
	void *h;
	AnyFn fn;
	runtime_dirs(inc, sizeof inc);
	snprintf(so, sizeof so, "%s/%s.so", dir, prefix);
	snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -fPIC -shared -I'%s' -o '%s' '%s/%s.c'", getenv("CC") ? getenv("CC") : "cc",
	         inc, so, dir, prefix);
	if (system(cmd) != 0)
		die("building the launcher failed: %s", cmd);
	if (!(h = dlopen(so, RTLD_NOW | RTLD_LOCAL)))
		die("dlopen %s: %s", so, dlerror());
	snprintf(sym, sizeof sym, "syn_%s", op);
	*(void **)&fn = dlsym(h, sym); /* POSIX: dlsym's object pointer holds a function */
	if (!fn)
		die("the launcher has no %s", sym);
	return fn;
}

int
main(int argc, char **argv)
{
	static const OptId allowed[] = {
		OPT_RANKS, OPT_DEFINE, OPT_INCLUDE, OPT_ENTRY, OPT_DIAG, OPT_DUMP, OPT_VERSION, OPT_HELP, OPT_SEED,
		OPT_NOPASS, OPT_PROFILE, OPT_SERIAL, OPT_EXPLAIN, OPT_EMIT, OPT_TRACE, OPT_SIM, OPT_BENCH, OPT_NOCHECK, OPT_DROPFLAG,
		OPT_DUMPOUT,
	};
	Driver d = {.tool = "syncrun", .seed = 1, .keep_sema = true};
	Unit *u = NULL;
	Buf out = {0};
	char dir[] = "/tmp/syncrun-XXXXXX", prefix[64], predicted[4200];
	const char *measured = NULL;
	syn_ctx **cs = NULL;
	int r, P, nlocal, first;
	bool all_ok = true, per_process = getenv("RANK") || getenv("OMPI_COMM_WORLD_RANK") || getenv("SLURM_PROCID");
	syn_opts so = {0};

	drv_crash_handler();
	diag_setup(DIAG_TEXT, "syncrun");
	d.mem = arena_new();
	d.opt.nranks = 2;
	if ((r = drv_args(&d, argc, argv, allowed, (int)NELEM(allowed), usage)) >= 0)
		return r;
	d.need_plans = true;
	if (!mkdtemp(dir))
		die("mkdtemp failed");
	snprintf(prefix, sizeof prefix, "ops");
	{
		Emit shown = d.emit;
		char o[4200];
		/* the driver writes the PREDICTED trace; the measured one is ours */
		measured = d.trace;
		if (measured) {
			size_t n = strlen(measured);
			snprintf(predicted, sizeof predicted, "%.*s.predicted.json",
			         (int)(n > 5 && !strcmp(measured + n - 5, ".json") ? n - 5 : n), measured);
			d.trace = predicted;
		}
		snprintf(o, sizeof o, "%s/%s", dir, prefix);
		d.output = o;
		d.emit = EMIT_CODE;
		if ((r = drv_compile(&d, &u, &out)) != EXIT_OK)
			return r;
		if (shown == EMIT_PLAN || shown == EMIT_TIMELINE)
			for (int i = 0; i < d.nplans; i++)
				shown == EMIT_PLAN ? sched_print_plan(stdout, d.plans[i]) : sched_timeline(stdout, d.plans[i], d.opt.nranks, 72);
	}
	d.trace = measured;
	P = d.opt.nranks;
	nranks_of_job = P;
	so.trace = d.trace != NULL;
	if (per_process) {
		cs = xcalloc(1, sizeof *cs);
		if ((r = syn_init(&cs[0], &so)) || syn_nranks(cs[0]) != P) {
			fprintf(stderr, "syncrun: init: %s (world %d, --ranks %d)\n", r ? syn_error(cs[0]) : "ok", cs[0] ? syn_nranks(cs[0]) : 0, P);
			return EXIT_INPUT;
		}
		first = syn_rank(cs[0]);
		nlocal = 1;
	} else {
		cs = xcalloc((size_t)P, sizeof *cs);
		if ((r = syn_init_local(P, cs, &so))) {
			fprintf(stderr, "syncrun: cannot start %d GPUs: %s\n", P, syn_status_name(r));
			return EXIT_INPUT;
		}
		first = 0;
		nlocal = P;
	}
	int i = 0;
	for (Func *f = u->funcs; f; f = f->next, i++) {
		Job j = {&d, f, d.plans[i], NULL, NULL, NULL, d.bench, !d.nocheck, NULL, NULL, NULL, NULL};
		uint64_t rng = d.seed ^ 0x5851f42d4c957f2dull;
		double fl = flops_of(f);
		j.fn = build_launcher(dir, prefix, sym_str(f->name));
		j.in = sim_inputs(f->sema, d.seed);
		j.shard = xcalloc((size_t)P, sizeof *j.shard);
		j.got = xcalloc((size_t)P, sizeof *j.got);
		j.ms = xcalloc((size_t)P, sizeof *j.ms);
		j.status = xcalloc((size_t)P, sizeof *j.status);
		for (int q = 0; q < P; q++) {
			j.shard[q] = xcalloc((size_t)f->nin + 1, sizeof **j.shard);
			j.got[q] = xcalloc((size_t)f->nins + 1, sizeof **j.got);
		}
		for (int k = 0; k < f->nin; k++)
			sim_make_shards(f, &j.in[k], k, j.shard, &rng);
		printf("%s: %d GPU rank%s (%s), %s plan, seed %llu\n", sym_str(f->name), P, P == 1 ? "" : "s",
		       per_process ? "one process per GPU" : "one process", j.plan->is_serial ? "serial" : "overlapped",
		       (unsigned long long)d.seed);
		fflush(stdout);
		if (per_process)
			rank_main(cs[0], &j);
		else
			syn_run_local(cs, P, rank_main, &j);
		for (int q = first; q < first + nlocal; q++)
			if (j.status[q])
				all_ok = false;
		if (all_ok && j.check) {
			if (fl > 4e11)
				printf("  reference skipped: %.0f GFLOP is too much for the CPU oracle (check at smaller -D sizes)\n", fl / 1e9);
			else
				all_ok = check_outputs(&j, P, first, nlocal) && all_ok;
		}
		if (all_ok && d.bench) {
			double ms = 0;
			for (int q = first; q < first + nlocal; q++)
				if (j.ms[q] > ms)
					ms = j.ms[q];
			printf("  time %.4f ms (median of %d calls, slowest rank)  %.1f TFLOP/s per rank\n", ms, d.bench,
			       ms > 0 ? fl / P / (ms * 1e-3) / 1e12 : 0);
			printf("BENCH {\"op\": \"%s\", \"ranks\": %d, \"ms\": %.5f, \"plan\": \"%s\"}\n", sym_str(f->name), P, ms,
			       j.plan->is_serial ? "serial" : "overlapped");
		}
		fflush(stdout);
	}
	if (d.trace && all_ok) { /* collective: every local rank at once */
		int tr = per_process ? write_trace(cs[0], (void *)d.trace) : syn_run_local(cs, P, write_trace, (void *)d.trace);
		if (tr)
			all_ok = false;
		else
			printf("measured trace: %s (predicted: %s)\n", d.trace, predicted);
	}
	for (int q = 0; q < nlocal; q++)
		syn_finalize(cs[q]);
	unit_free(u);
	buf_free(&out);
	drv_free(&d);
	return all_ok ? EXIT_OK : EXIT_INPUT;
}
