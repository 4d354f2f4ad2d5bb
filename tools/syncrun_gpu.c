/* tools/syncrun_gpu.c -- syncrun on GPUs: compiles FILE.syn, builds its
 * launcher into a shared object, runs every op through libsyncrt on fresh
 * random inputs (outputs poisoned first), checks each rank's results
 * against the CPU oracle, and with --bench N times the median of N calls
 * with events.  One process drives all local GPUs, or, under torchrun /
 * mpirun / Slurm (RANK is set), this process is one rank.
 * `syncrun` hands over to this program when GPUs are present. */
#include "driver.h"
#include "../sim/sim.h"
#include "../runtime/syncrt.h"
#include "../codegen/codegen.h"

#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: syncrun-gpu FILE.syn [options]   (syncrun runs it when GPUs are present)\n"
	"  --ranks P, -D NAME=VALUE, -I DIR, --entry OP, --seed S, --profile NAME, --serial,\n"
	"  --comm-backend nccl|ce|p2p, --no-push, --no-pass=LIST, --explain, --emit=plan|timeline: as for syncrun --sim\n"
	"  --gpus LIST             local GPUs of the ranks, e.g. 0,1 (rank r on LIST[r]; sets --ranks)\n"
	"  --calibrate PROFILE     measure this machine and write PROFILE (docs/profiles.md)\n"
	"  --bench N               time the median of N calls (after 3 warm-up calls)\n"
	"  --no-check              skip the comparison with the CPU oracle\n"
	"  --trace FILE.json       the measured timeline (Chrome trace, rank 0 writes it)\n"
	"  --timeline-svg FILE     with --trace: the measured timeline drawn under the predicted one\n"
	"  --dump-outputs DIR      write every rank's outputs (raw bytes) into DIR\n"
	"  --tune                  time the best candidates (plans; at P = 1 matmul tiles and an\n"
	"                          SM share), each checked against the CPU oracle, keep the\n"
	"                          fastest, cached in SYNCC_CACHE_DIR; --explain lists them\n"
	"  --tune-budget SECONDS   time --tune may take per op (default 5)\n"
	"  --drop-flag             test only: raise no flag from the comm lane, so the\n"
	"                          kernels' waits time out (SYNC_TIMEOUT_MS)\n";

static const OptId allowed[] = {
	OPT_RANKS, OPT_DEFINE, OPT_INCLUDE, OPT_ENTRY, OPT_DIAG, OPT_DUMP, OPT_VERSION, OPT_HELP, OPT_SEED,
	OPT_NOPASS, OPT_PROFILE, OPT_SERIAL, OPT_COMMBE, OPT_PUSH, OPT_NOPUSH, OPT_EXPLAIN, OPT_EMIT, OPT_TRACE, OPT_SIM, OPT_BENCH, OPT_NOCHECK, OPT_DROPFLAG,
	OPT_DUMPOUT, OPT_GPUS, OPT_CALIBRATE, OPT_SVG, OPT_TUNE, OPT_TUNEBUDGET,
};

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
	AnyFn fn_arr;         /* syncc_<op>_on_stream: the tensors as one array, for ops of more than 8 */
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
/* An op of more than 8 tensors through syncc_<op>_on_stream, on the
 * compute lane as the caller's stream (the same order as syn_<op>). */
static int
call_array(AnyFn fn, syn_ctx *c, syn_tensor *a, int n)
{
	syn_tensor **t = xcalloc((size_t)n, sizeof *t);
	int r;
	for (int i = 0; i < n; i++)
		t[i] = &a[i];
	r = ((int (*)(syn_ctx *, void *, syn_tensor *const *))fn)(c, syn_stream(c, SYN_COMPUTE), t);
	free(t);
	return r;
}

static int
call(const Job *j, syn_ctx *c, syn_tensor *a, int n)
{
	AnyFn fn = j->fn;
	if (n > 8)
		return call_array(j->fn_arr, c, a, n);
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
	if ((st = call(j, c, a, n)) || (st = syn_sync(c)))
		goto fail;
	if (getenv("SYNCRUN_SHOW_FLAGS")) /* diagnostics: this rank's first flags after the call */
		for (int k = 0; k < 4 && syn_flag_addr(c, r, k); k++) {
			uint64_t v = 0;
			if (!syn_download(c, &v, (const void *)(uintptr_t)syn_flag_addr(c, r, k), sizeof v))
				printf("  rank %d flag %d = %llu\n", r, k, (unsigned long long)v);
		}
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
		if ((st = syn_mark(c, 0)) || (st = call(j, c, a, n)) || (st = syn_mark(c, 1)) || (st = syn_sync(c)) ||
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

/* --timeline-svg with --trace: the picture again, the measured trace
 * under the prediction. */
static bool
svg_measured(const Driver *d)
{
	Measured m;
	char err[600];
	FILE *f;
	bool ok;
	if (!sched_read_trace(d->trace, &m, err, sizeof err)) {
		fprintf(stderr, "syncrun: %s\n", err);
		return false;
	}
	if (!(f = fopen(d->svg, "w"))) {
		fprintf(stderr, "syncrun: cannot write %s\n", d->svg);
		sched_measured_free(&m);
		return false;
	}
	sched_svg(f, (const Plan *const *)d->plans, d->nplans, d->opt.nranks, &m);
	ok = fclose(f) == 0;
	sched_measured_free(&m);
	if (ok)
		printf("timeline: %s (predicted, and measured under it)\n", d->svg);
	return ok;
}

/* The trace summary: exposed communication, measured (the least hidden
 * rank, over every call the trace holds) beside the plans' prediction. */
static void
trace_summary(const syn_ctx *c, const Driver *d)
{
	double busy, comm, exposed, pe = 0, pm = 0, pc = 0;
	int rank;
	for (int i = 0; i < d->nplans; i++) {
		pe += d->plans[i]->exposed;
		pc += d->plans[i]->comm;
		pm += d->plans[i]->makespan;
	}
	if (syn_trace_exposed(c, &rank, &busy, &comm, &exposed))
		return; /* not rank 0 */
	printf("trace summary: exposed communication measured %.1f us of %.1f on the comm lane (%.1f%% of rank %d's "
	       "%.1f us busy); predicted %.1f us of %.1f (%.1f%% of the op)\n",
	       exposed, comm, busy > 0 ? 100 * exposed / busy : 0, rank, busy, pe, pc, pm > 0 ? 100 * pe / pm : 0);
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

/* The reference: the CPU oracle (f32 accumulation, rounding on every
 * store, as sim_oracle does), with its matmuls moved to the GPU's
 * rt_ref_matmul once the op's matmul work passes REF_CPU_FLOPS -- a few
 * seconds of the CPU's loop.  Only matmuls move: every other op keeps its
 * CPU meaning, so the check means the same for every op (docs/cli.md).
 * Past REF_MAX_BYTES of oracle values (doubles) no reference is made. */
enum { REF_CPU_GFLOPS = 20 };
#define REF_CPU_FLOPS (REF_CPU_GFLOPS * 1e9)
#define REF_MAX_BYTES (48.0 * (1 << 30))

static bool
gpu_matmul(void *ctx, const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K, char *why, size_t n)
{
	syn_ctx *sc = ctx;
	if (syn_ref_matmul(sc, a, b, c, M, N, K) == SYN_OK)
		return true;
	snprintf(why, n, "the GPU reference matmul failed: %s", syn_error(sc));
	return false;
}

static double
oracle_bytes(const Func *f)
{
	double b = 0;
	for (Val v = 0; v < f->nins; v++)
		b += 8.0 * (double)ty_numel(&f->ins[v].ty);
	return b;
}

static bool
check_outputs(Job *j, int P, int first, int nlocal, syn_ctx *refctx, double flops)
{
	const Func *f = j->f;
	Tensor *ref = xcalloc((size_t)f->nout + 1, sizeof *ref);
	char err[512];
	bool ok = true;
	Buf ty = {0};
	SimMatmulHook hook = {gpu_matmul, refctx};
	bool on_gpu = flops > REF_CPU_FLOPS;
	printf("  reference: CPU oracle%s\n", on_gpu ? ", its matmuls on the GPU (rt_ref_matmul: f32, one thread per element)" : "");
	fflush(stdout);
	if (!sim_oracle_hooked(f->sema, j->in, SIM_GPU, on_gpu ? &hook : NULL, ref, err, sizeof err)) {
		printf("  FAILED: reference: %s\n", err);
		free(ref);
		return false;
	}
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
build_launcher(const char *dir, const char *prefix, const char *op, AnyFn *arr)
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
	snprintf(sym, sizeof sym, "syncc_%s_on_stream", op);
	*(void **)arr = dlsym(h, sym); /* NULL for a tuner's variant: only ops of more than 8 tensors need it */
	return fn;
}

/* The ranks of this process: every local GPU (or --gpus), or under a
 * launcher one.  An exit status, or -1 when started. */
static int
start_ranks(Driver *d, bool per_process, syn_ctx ***csp, int *first, int *nlocal)
{
	int P = d->opt.nranks, r, have = 0;
	syn_opts so = {0};
	syn_ctx **cs;
	so.trace = d->trace != NULL;
	/* --topo NxG: the plan's levels, whatever the launcher's node size
	 * (one host's GPUs may play N nodes: the cross-node ring then runs
	 * over NVLink) */
	if (d->topo.nodes > 1)
		so.gpus_per_node = d->topo.gpus;
	if (per_process) {
		if (d->ngpus) {
			diag_usage("--gpus chooses the GPUs of a one-process run; under a launcher (RANK is set) give each "
			           "process its GPU with CUDA_VISIBLE_DEVICES or LOCAL_RANK");
			return EXIT_USAGE;
		}
		*csp = cs = xcalloc(1, sizeof *cs);
		if ((r = syn_init(&cs[0], &so)) || syn_nranks(cs[0]) != P) {
			fprintf(stderr, "syncrun: init: %s (world %d, --ranks %d)\n", r ? syn_error(cs[0]) : "ok", cs[0] ? syn_nranks(cs[0]) : 0, P);
			return EXIT_INPUT;
		}
		*first = syn_rank(cs[0]);
		*nlocal = 1;
		return -1;
	}
	if (syn_device_count(&have)) {
		fprintf(stderr, "syncrun: CUDA cannot count the GPUs here (cuInit or cuDeviceGetCount failed)\n");
		return EXIT_INPUT;
	}
	for (int i = 0; i < d->ngpus; i++)
		if (d->gpus[i] >= have) {
			const char *vis = getenv("CUDA_VISIBLE_DEVICES");
			diag_usage("--gpus: there is no GPU %d here: %d visible (0 to %d)%s%s", d->gpus[i], have, have - 1,
			           vis ? ", CUDA_VISIBLE_DEVICES=" : "", vis ? vis : "");
			return EXIT_USAGE;
		}
	if (!d->ngpus && P > have) {
		fprintf(stderr, "syncrun: --ranks %d needs %d GPUs in this process, but %d %s visible\n", P, P, have,
		        have == 1 ? "is" : "are");
		return EXIT_INPUT;
	}
	so.devices = d->ngpus ? d->gpus : NULL;
	*csp = cs = xcalloc((size_t)P, sizeof *cs);
	if ((r = syn_init_local(P, cs, &so))) {
		fprintf(stderr, "syncrun: cannot start %d GPUs: %s: %s\n", P, syn_status_name(r), syn_error(cs[0]));
		return EXIT_INPUT;
	}
	*first = 0;
	*nlocal = P;
	return -1;
}

/* The GPU local rank q runs on, as --gpus numbers it. */
static int
gpu_of(const Driver *d, int q)
{
	return d->ngpus ? d->gpus[q] : q;
}

/* Which GPU each local rank runs on, for the header line. */
static void
gpu_list(const Driver *d, int P, char *out, size_t n)
{
	size_t k = 0;
	out[0] = 0;
	for (int q = 0; q < P && k + 12 < n; q++)
		k += (size_t)snprintf(out + k, n - k, "%s%d", q ? "," : "", gpu_of(d, q));
}

typedef struct Ranks {
	syn_ctx **cs;
	int P, first, nlocal;
	bool per_process;
} Ranks;

/* One op: inputs, the launcher on every local rank, the check, the time.
 * *ms: the slowest local rank's median (with bench). */
static bool
run_func(Driver *d, Func *f, const Plan *plan, const Ranks *rk, const char *dir, const char *prefix, bool check,
         double *ms_out, const char *sym, bool inject)
{
	int P = rk->P;
	Job j = {d, f, plan, NULL, NULL, NULL, d->bench, check, NULL, NULL, NULL, NULL, NULL};
	uint64_t rng = sim_shard_rng(d->seed);
	double fl = flops_of(f), ms = 0;
	bool ok = true;
	char gl[512];
	j.fn = build_launcher(dir, prefix, sym ? sym : sym_str(f->name), &j.fn_arr);
	if (f->nin + f->nout > 8 && !j.fn_arr)
		die("op '%s' has %d tensors and its launcher no syncc_%s_on_stream", sym_str(f->name), f->nin + f->nout,
		    sym ? sym : sym_str(f->name));
	j.in = sim_inputs(f->sema, d->seed);
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
	gpu_list(d, P, gl, sizeof gl);
	printf("%s: %d GPU rank%s (%s%s), %s plan, seed %llu\n", sym_str(f->name), P, P == 1 ? "" : "s",
	       rk->per_process ? "one process per GPU" : "one process, GPUs ", rk->per_process ? "" : gl,
	       sched_plan_kind(plan), (unsigned long long)d->seed);
	fflush(stdout);
	if (rk->per_process)
		rank_main(rk->cs[0], &j);
	else
		syn_run_local(rk->cs, P, rank_main, &j);
	for (int q = rk->first; q < rk->first + rk->nlocal; q++)
		if (j.status[q])
			ok = false;
	if (ok && inject && f->nout) /* tests: a wrong element the check must catch */
		j.got[rk->first][f->out[0]].v[0] = NAN;
	if (ok && j.check) {
		if (oracle_bytes(f->sema) > REF_MAX_BYTES)
			printf("  reference skipped: the oracle would hold %.0f GiB of values (check at smaller -D sizes)\n",
			       oracle_bytes(f->sema) / (1 << 30));
		else
			ok = check_outputs(&j, P, rk->first, rk->nlocal, rk->cs[0], fl);
	}
	for (int q = rk->first; q < rk->first + rk->nlocal; q++)
		if (j.ms[q] > ms)
			ms = j.ms[q];
	if (ok && d->bench) {
		printf("  time %.4f ms (median of %d calls, slowest rank)  %.1f TFLOP/s per rank\n", ms, d->bench,
		       ms > 0 ? fl / P / (ms * 1e-3) / 1e12 : 0);
		/* one word, as bench/syncc-bench reads it */
		printf("BENCH {\"op\": \"%s\", \"ranks\": %d, \"ms\": %.5f, \"plan\": \"%s\"}\n", sym_str(f->name), P, ms,
		       plan->is_serial ? "serial" : strcmp(sched_plan_kind(plan), "overlapped") ? "unoverlapped" : "overlapped");
	}
	fflush(stdout);
	*ms_out = ms;
	for (int q = 0; q < P; q++) {
		for (int k = 0; k < f->nin; k++)
			sim_free(&j.shard[q][k]);
		for (Val v = 0; v < f->nins; v++)
			sim_free(&j.got[q][v]);
		free(j.shard[q]);
		free(j.got[q]);
	}
	for (int k = 0; k < f->nin; k++)
		sim_free((Tensor *)&j.in[k]);
	free((void *)j.in);
	free(j.shard);
	free(j.got);
	free(j.ms);
	free(j.status);
	return ok;
}

/* ================= --tune: the candidates timed =================
 * Each candidate is compiled as an op of its own name (OP_tuneI, its
 * launcher state apart) with its flags in a range of its own (TUNE_FLAGS
 * each), run TUNE_CALLS timed calls after the check against the CPU
 * oracle; under a launcher every rank's time (failed: TUNE_FAILED) is
 * reduced to the slowest over NCCL, so each rank keeps the same pick. */
enum { TUNE_FLAGS = 256 };
#define TUNE_FAILED 1e30

/* v = the largest v of every rank (one process per rank). */
static int
agree_max(syn_ctx *c, double *v)
{
	float x = (float)*v;
	void *send, *recv;
	uint64_t e;
	int st;
	CommChunk ch = {CO_ALL_REDUCE, CD_F32, CR_MAX, NULL, NULL, 1, 0, 0, 0, 0, 0, 0, 0, 0};
	if ((st = syn_alloc(c, 16, &send)) || (st = syn_alloc(c, 16, &recv)) || (st = syn_upload(c, send, &x, 4)))
		return st;
	ch.send = send, ch.recv = recv;
	if ((st = syn_begin(c, "tune_agree", &e)) || (st = syn_coll(c, SYN_NCCL, &ch)) || (st = syn_end(c)) ||
	    (st = syn_sync(c)) || (st = syn_download(c, &x, recv, 4)))
		return st;
	*v = x;
	return SYN_OK;
}

/* Row i: lowered, compiled, run, checked, timed. */
static void
tune_row(Driver *d, Unit *u, int fi, Func *f, const Ranks *rk, const char *dir, TuneSet *s, int i)
{
	TuneRow *row = &s->row[i];
	Plan *p = tune_plan(d, f, &row->pick), *orig = d->plans[fi];
	Lowered lo = {0};
	Sym name = f->name;
	char sym[300], prefix[64], path[4200];
	double ms = 0, v;
	bool ok;
	p->flag_base = i * TUNE_FLAGS;
	ok = ptx_lower(p, &lo) && lo.nflags <= TUNE_FLAGS;
	if (!ok) {
		row->state = TS_REFUSED;
		snprintf(row->why, sizeof row->why, "%.200s", lo.err[0] ? lo.err : "more flags than a candidate's range");
	}
	ptx_lowered_free(&lo);
	if (!ok) {
		sched_plan_free(p);
		return;
	}
	snprintf(sym, sizeof sym, "%s_tune%d", sym_str(name), i);
	snprintf(prefix, sizeof prefix, "tune%d", i);
	snprintf(path, sizeof path, "%s/%s", dir, prefix);
	f->name = sym_cstr(sym); /* the candidate's kernels and launcher: names of their own */
	d->plans[fi] = p;
	ok = drv_codegen(d, u, path) == EXIT_OK;
	f->name = name;
	d->plans[fi] = orig;
	if (!ok) {
		row->state = TS_REFUSED;
		snprintf(row->why, sizeof row->why, "its code could not be generated");
		sched_plan_free(p);
		return;
	}
	printf("-- tune %s #%d: %s\n", sym_str(name), i, row->what);
	ok = run_func(d, f, p, rk, dir, prefix, true, &ms, sym, tune_injected(i));
	v = ok ? ms * 1e3 : TUNE_FAILED;
	if (rk->per_process && agree_max(rk->cs[0], &v))
		v = TUNE_FAILED;
	row->state = v < TUNE_FAILED / 2 ? TS_OK : TS_FAILED;
	row->measured = row->state == TS_OK ? v : -1;
	if (row->state == TS_FAILED)
		snprintf(row->why, sizeof row->why, "%s", ok ? "failed on another rank" : "its run or its check against the CPU oracle failed");
	sched_plan_free(p);
}

static int
tune_gpu(Driver *d, Unit *u, int fi, Func *f, const Ranks *rk, const char *dir)
{
	char base[200], device[300];
	TuneSet s;
	double t0 = tune_now();
	int bench = d->bench, r;
	if (syn_device_info(rk->cs[0], base, sizeof base))
		snprintf(base, sizeof base, "an unnamed GPU");
	snprintf(device, sizeof device, "%s; %d rank%s, %s", base, rk->P, rk->P == 1 ? "" : "s",
	         rk->per_process ? "a process per GPU" : "one process");
	d->bench = TUNE_CALLS;
	for (int again = 0; again < 2; again++) {
		tune_begin(d, f, device, true, &s);
		s.measured = true;
		for (int i = 0; i < s.n; i++) {
			double over = i > 0 && tune_over_budget(d, t0);
			/* under a launcher the ranks stop together: one rank's clock decides for all */
			if (rk->per_process && i > 0 && agree_max(rk->cs[0], &over))
				over = 1;
			if (over > 0)
				break;
			tune_row(d, u, fi, f, rk, dir, &s, i);
		}
		if (!s.cached || s.row[0].state == TS_OK)
			break;
		printf("%s: --tune: the cached pick failed; tuning again\n", sym_str(f->name));
		remove(s.path);
		tune_free(&s);
	}
	d->bench = bench;
	r = tune_finish(d, f, &s);
	if (r == EXIT_OK && !s.cached && s.row[0].state == TS_OK && s.pick >= 0)
		printf("%s: tuned %.1f us (#%d) vs untuned %.1f us (#0, the search's plan and the default code): %.2fx\n",
		       sym_str(f->name), s.row[s.pick].measured, s.pick, s.row[0].measured,
		       s.row[s.pick].measured > 0 ? s.row[0].measured / s.row[s.pick].measured : 0);
	tune_free(&s);
	fflush(stdout);
	return r;
}

/* ================= --calibrate: measuring this machine =================
 * What is measured (docs/profiles.md, "Calibration"): syncc's own matmul
 * and elementwise kernels through generated operators (CAL_SRC), and
 * through libsyncrt directly: empty-kernel launches, stream flag
 * operations, flag hand-offs between spinning kernels of two GPUs, and
 * every collective of both backends at CAL_SIZES.  Times are medians of
 * CAL_REPS calls; a collective's sample is one op of CAL_BATCH calls back
 * to back, divided by CAL_BATCH, from the earliest-finishing rank (the
 * others include waiting for it to arrive).  The samples go
 * beside the profile (PROFILE.samples), the fit is tools/calib.c's. */
static const char cal_src[] =
	"// syncrun --calibrate: the operators whose kernels it times\n"
	"param S1 = 2048, S2 = 4096, S3 = 8192, E = 67108864;\n"
	"op cal_mm_bf16_s1(a: bf16[S1, S1] @repl, b: bf16[S1, S1] @repl) -> bf16[S1, S1] @repl { return a @ b; }\n"
	"op cal_mm_bf16_s2(a: bf16[S2, S2] @repl, b: bf16[S2, S2] @repl) -> bf16[S2, S2] @repl { return a @ b; }\n"
	"op cal_mm_bf16_s3(a: bf16[S3, S3] @repl, b: bf16[S3, S3] @repl) -> bf16[S3, S3] @repl { return a @ b; }\n"
	"op cal_mm_f16_s2(a: f16[S2, S2] @repl, b: f16[S2, S2] @repl) -> f16[S2, S2] @repl { return a @ b; }\n"
	"op cal_mm_f16_s3(a: f16[S3, S3] @repl, b: f16[S3, S3] @repl) -> f16[S3, S3] @repl { return a @ b; }\n"
	"op cal_copy(x: f32[E] @repl) -> f32[E] @repl { return x * 2.0; }\n"
	"op cal_vector(x: f32[E] @repl) -> f32[E] @repl {\n"
	"    return tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(x))))))))))))))));\n"
	"}\n";
enum { CAL_VECTOR_DEPTH = 16, CAL_REPS = 7, CAL_WARM = 2, CAL_LAUNCHES = 1000, CAL_STREAMOPS = 500, CAL_ROUNDS = 2000,
       CAL_BATCH = 8 };
static const double cal_sizes[] = {65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456};
#define CAL_NSIZES ((int)NELEM(cal_sizes))
/* flags of generated code's range that only calibration touches, after
 * every generated operator has run, with values above any epoch */
enum { CAL_FLAG_PP = 13, CAL_FLAG_SO = 14 };
#define CAL_FLAG_BASE (1ull << 40)

static int
cmp_us(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct CalTimes {
	double launch[CAL_REPS], streamop[CAL_REPS], flag[CAL_REPS];
	double comm[BE_COUNT][CO_COUNT][CAL_NSIZES][CAL_REPS]; /* [backend][op][size][rep], us; 0: not run */
	bool unsupported[BE_COUNT][CO_COUNT];
	char why[256]; /* what failed, where libsyncrt's syn_error has nothing to say */
} CalTimes;

typedef struct CalJob {
	int P;
	CalTimes *t; /* [rank] */
	const Driver *d;
} CalJob;

/* ms between marks 0 and 1 around what `body` enqueues, inside an op */
static int
timed(syn_ctx *c, const char *name, int (*body)(syn_ctx *, void *), void *arg, double *us)
{
	uint64_t e;
	float ms = 0;
	int st;
	if ((st = syn_mark(c, 0)) || (st = syn_begin(c, name, &e)) || (st = body(c, arg)) || (st = syn_end(c)) ||
	    (st = syn_mark(c, 1)) || (st = syn_sync(c)) || (st = syn_mark_ms(c, 0, 1, &ms)))
		return st;
	*us = ms * 1e3;
	return SYN_OK;
}

static int
cal_launches(syn_ctx *c, void *arg)
{
	static const unsigned one[3] = {1, 1, 1};
	syn_kernel *k;
	int st = syn_kernel_get(c, syn_builtin_image(), "rt_cal_empty", &k);
	(void)arg;
	for (int i = 0; i < CAL_LAUNCHES && !st; i++)
		st = syn_launch(c, k, one, one, 0, NULL);
	return st;
}

static int
cal_streamops(syn_ctx *c, void *arg)
{
	uint64_t *v = arg;
	int st = SYN_OK;
	for (int i = 0; i < CAL_STREAMOPS / 2 && !st; i++) {
		++*v;
		if (!(st = syn_raise(c, SYN_COMPUTE, syn_rank(c), CAL_FLAG_SO, *v)))
			st = syn_wait(c, SYN_COMPUTE, CAL_FLAG_SO, *v, -1);
	}
	return st;
}

typedef struct PingPong {
	uint64_t mine, peer, out, base, timeout;
	unsigned rounds, first;
} PingPong;

static int
cal_pingpong(syn_ctx *c, void *arg)
{
	static const unsigned one[3] = {1, 1, 1};
	PingPong *p = arg;
	void *prm[7] = {&p->mine, &p->peer, &p->out, &p->rounds, &p->first, &p->base, &p->timeout};
	syn_kernel *k;
	int st = syn_kernel_get(c, syn_builtin_image(), "rt_cal_pingpong", &k);
	return st ? st : syn_launch(c, k, one, one, 0, prm);
}

typedef struct CollCall {
	syn_backend be;
	CommChunk ch;
} CollCall;

/* CAL_BATCH calls back to back in one timed op: the op's fork and join are
 * paid once per batch instead of once per call.  The comm lane is not gated,
 * so where one call's host enqueue (with NCCL's settle) takes longer than the
 * call on the GPU -- small sizes -- the curve is the host's enqueue rate: an
 * upper bound of what a chunk in a plan costs.  (Timed alone, a call cost
 * ~130 us; batched, 70-80 us at 64 KiB-4 MiB on 2x H200, 2026-11-30.) */
static int
cal_coll(syn_ctx *c, void *arg)
{
	CollCall *x = arg;
	int st = SYN_OK;
	for (int i = 0; i < CAL_BATCH && !st; i++)
		st = syn_coll(c, x->be, &x->ch);
	return st;
}

/* The chunk of one call whose per-rank input is `bytes` of f32. */
static CommChunk
cal_chunk(int op, double bytes, int P, void *send, void *recv)
{
	CommChunk ch = {(CommOp)op, CD_F32, CR_SUM, send, recv, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	size_t elems = (size_t)(bytes / 4);
	ch.count = comm_colls[op].send ? elems / (size_t)P : elems; /* the input is P blocks */
	ch.shift = op == CO_SHIFT ? 1 : 0;
	return ch;
}

/* The ping-pong kernel gives up at its deadline and reports 0 hand-offs:
 * libsyncrt saw nothing wrong, so the words are ours. */
static int
cal_flags_timeout(syn_ctx *c, const CalJob *j, CalTimes *t)
{
	int r = syn_rank(c);
	snprintf(t->why, sizeof t->why,
	         "the flag hand-off between GPU %d (rank %d) and GPU %d (rank %d) timed out: the ping-pong kernel on "
	         "GPU %d saw no answer within its deadline of %.0f ms (--timeout-ms)",
	         gpu_of(j->d, r), r, gpu_of(j->d, 1 - r), 1 - r, gpu_of(j->d, r), (double)syn_timeout_ns(c) * 1e-6);
	return SYN_ETIMEOUT;
}

static int
cal_flags(syn_ctx *c, const CalJob *j, CalTimes *t)
{
	int P = j->P;
	int r = syn_rank(c), st;
	void *out;
	uint64_t ns = 0;
	PingPong pp = {0};
	if ((st = syn_alloc(c, 8, &out)))
		return st;
	pp.out = (uint64_t)(uintptr_t)out;
	pp.rounds = CAL_ROUNDS;
	pp.first = r == 0;
	pp.timeout = syn_timeout_ns(c);
	pp.mine = syn_flag_addr(c, r, CAL_FLAG_PP);
	pp.peer = syn_flag_addr(c, 1 - r, CAL_FLAG_PP);
	if (r > 1 || P < 2)
		return syn_barrier(c);
	if (!pp.peer)
		return SYN_EUNSUPPORTED; /* not mapped: no flag hand-off to time */
	for (int rep = 0; rep < CAL_REPS && !st; rep++) {
		double us;
		pp.base = CAL_FLAG_BASE + (uint64_t)(rep + 1) * 2 * CAL_ROUNDS;
		if (!(st = timed(c, "cal_flag", cal_pingpong, &pp, &us)) && !(st = syn_download(c, &ns, out, 8)) && !ns)
			return cal_flags_timeout(c, j, t);
		t->flag[rep] = (double)ns * 1e-3;
	}
	return st ? st : syn_barrier(c);
}

static int
cal_comm(syn_ctx *c, CalTimes *t, int P)
{
	double big = cal_sizes[CAL_NSIZES - 1];
	void *send, *recv;
	int st;
	if ((st = syn_alloc(c, (size_t)big, &send)) || (st = syn_alloc(c, (size_t)big * (size_t)P, &recv)))
		return st;
	for (int be = 0; be < SYN_BACKENDS; be++)
		for (int op = 0; op < CO_COUNT; op++)
			for (int s = 0; s < CAL_NSIZES && !t->unsupported[be][op]; s++)
				for (int rep = -CAL_WARM; rep < CAL_REPS; rep++) {
					CollCall x = {(syn_backend)be, cal_chunk(op, cal_sizes[s], P, send, recv)};
					double us;
					if ((st = timed(c, "cal_comm", cal_coll, &x, &us)) == SYN_EUNSUPPORTED) {
						t->unsupported[be][op] = true; /* nothing enqueued: close the op */
						if ((st = syn_end(c)) || (st = syn_sync(c)))
							return st;
						break;
					}
					if (st)
						return st;
					if (rep >= 0)
						t->comm[be][op][s][rep] = us / CAL_BATCH;
				}
	return SYN_OK;
}

static int
cal_rank(syn_ctx *c, void *arg)
{
	CalJob *j = arg;
	CalTimes *t = &j->t[syn_rank(c)];
	uint64_t v = CAL_FLAG_BASE;
	int st = SYN_OK;
	for (int rep = -CAL_WARM; rep < CAL_REPS && !st; rep++) {
		double a, b;
		if (!(st = timed(c, "cal_launch", cal_launches, NULL, &a)) && !(st = timed(c, "cal_streamop", cal_streamops, &v, &b)) &&
		    rep >= 0) {
			t->launch[rep] = a;
			t->streamop[rep] = b;
		}
	}
	if (!st && (st = cal_flags(c, j, t)) == SYN_EUNSUPPORTED)
		st = syn_barrier(c);
	if (!st)
		st = cal_comm(c, t, j->P);
	if (st)
		fprintf(stderr, "syncrun: --calibrate: rank %d: %s: %s\n", syn_rank(c), syn_status_name(st),
		        t->why[0] ? t->why : syn_error(c));
	return st;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_us);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Whether every repetition ran: a time of 0 is one that did not (the
 * measurement failed first), and a sample is only made of whole sets. */
static bool
all_ran(const double *v, int n)
{
	for (int i = 0; i < n; i++)
		if (!(v[i] > 0))
			return false;
	return true;
}

/* Per call: the rank that finished first in time (the last to arrive
 * waited least); then the median over calls. */
static void
cal_comm_samples(CalSamples *cs, const CalJob *j)
{
	for (int be = 0; be < SYN_BACKENDS; be++)
		for (int op = 0; op < CO_COUNT; op++)
			for (int s = 0; s < CAL_NSIZES && !j->t[0].unsupported[be][op]; s++) {
				double v[CAL_REPS], x[2];
				bool whole = true;
				for (int q = 0; q < j->P; q++)
					whole = whole && all_ran(j->t[q].comm[be][op][s], CAL_REPS);
				if (!whole)
					continue;
				for (int rep = 0; rep < CAL_REPS; rep++) {
					v[rep] = j->t[0].comm[be][op][s][rep];
					for (int q = 1; q < j->P; q++)
						if (j->t[q].comm[be][op][s][rep] < v[rep])
							v[rep] = j->t[q].comm[be][op][s][rep];
				}
				x[0] = cal_sizes[s];
				x[1] = median(v, CAL_REPS);
				cal_add(cs, "comm", comm_backends[be].name, comm_colls[op].name, x, 2);
			}
}

/* The generated operators: matmul rates and elementwise bandwidth. */
static bool
cal_kernels(Driver *d, const Ranks *rk, const char *dir, const char *prefix, CalSamples *cs)
{
	char src[4200], o[4200];
	Buf text = {0}, out = {0};
	Unit *u = NULL;
	int i = 0;
	bool ok = true;
	snprintf(src, sizeof src, "%s/calibrate.syn", dir);
	snprintf(o, sizeof o, "%s/%s", dir, prefix);
	buf_put(&text, cal_src, sizeof cal_src - 1);
	if (!drv_write(src, &text))
		return false;
	buf_free(&text);
	d->input = src;
	d->output = o;
	d->emit = EMIT_CODE;
	d->serial = true; /* one kernel per op: nothing to overlap */
	d->bench = CAL_REPS;
	if (drv_compile(d, &u, &out) != EXIT_OK)
		return false;
	for (Func *f = u->funcs; f && ok; f = f->next, i++) {
		const char *name = sym_str(f->name);
		const Type *a = &f->ins[f->in[0]].ty;
		double ms, x[4];
		if (!(ok = run_func(d, f, d->plans[i], rk, dir, prefix, false, &ms, NULL, false)))
			break;
		if (strncmp(name, "cal_mm_", 7) == 0) {
			x[0] = (double)a->dim[0], x[1] = (double)f->outty[0].dim[1], x[2] = (double)a->dim[1], x[3] = ms * 1e3;
			cal_add(cs, "matmul", ty_dtypes[a->dt].name, NULL, x, 4);
		} else if (strcmp(name, "cal_copy") == 0) {
			x[0] = 2.0 * (double)ty_numel(a) * ty_dtypes[a->dt].size, x[1] = ms * 1e3;
			cal_add(cs, "copy", NULL, NULL, x, 2);
		} else if (strcmp(name, "cal_vector") == 0) {
			x[0] = (double)CAL_VECTOR_DEPTH * (double)ty_numel(a), x[1] = ms * 1e3;
			cal_add(cs, "vector", NULL, NULL, x, 2);
		}
	}
	unit_free(u);
	buf_free(&out);
	return ok;
}

/* libsyncrt's samples (rank 0's launch, stream op and flag times; every
 * rank's comm times): those whose repetitions all ran. */
static void
cal_runtime_samples(CalSamples *cs, const CalJob *j)
{
	static const struct {
		const char *key;
		size_t off;
		double count;
	} per[] = {
		{"launch", offsetof(CalTimes, launch), CAL_LAUNCHES},
		{"streamop", offsetof(CalTimes, streamop), CAL_STREAMOPS},
		{"flag", offsetof(CalTimes, flag), 2.0 * (CAL_ROUNDS - 1)},
	};
	for (size_t k = 0; k < NELEM(per); k++) {
		double v[CAL_REPS], x[2];
		memcpy(v, (const char *)&j->t[0] + per[k].off, sizeof v);
		if (!all_ran(v, CAL_REPS))
			continue;
		x[0] = per[k].count, x[1] = median(v, CAL_REPS);
		cal_add(cs, per[k].key, NULL, NULL, x, 2);
	}
	cal_comm_samples(cs, j);
}

static int
calibrate(Driver *d, const Ranks *rk, const char *dir, const char *prefix)
{
	CalSamples cs = {0};
	CalJob j = {rk->P, xcalloc((size_t)rk->P, sizeof *j.t), d};
	char gl[512];
	bool measured;
	int r = EXIT_INPUT;
	/* the SMs kernels leave a backend with CTAs of its own are libsyncrt's
	 * setting; the others' share is not measured: the base profile's, carried */
	for (int be = 0; be < BE_COUNT; be++)
		cs.commsms[be] = comm_backends[be].ctas ? syn_free_sms(rk->cs[0]) : -1;
	snprintf(cs.name, sizeof cs.name, "calibrated");
	snprintf(cs.base, sizeof cs.base, "%s", d->profile ? d->profile : "h200-nvlink");
	gpu_list(d, rk->P, gl, sizeof gl);
	snprintf(cs.device, sizeof cs.device, "%d local GPUs (%.160s), %d SMs each, one process", rk->P, gl, syn_sms(rk->cs[0]));
	cs.sms = syn_sms(rk->cs[0]);
	cs.world = rk->P;
	printf("calibrating on %s; carrying what is not measured from %s\n", cs.device, cs.base);
	fflush(stdout);
	measured = cal_kernels(d, rk, dir, prefix, &cs) && syn_run_local(rk->cs, rk->P, cal_rank, &j) == SYN_OK;
	cal_runtime_samples(&cs, &j);
	if (!measured) { /* what was measured is kept; the fit waits for a whole set */
		if (cs.n)
			cal_write_samples(&cs, d->calibrate, true);
		else
			fprintf(stderr, "syncrun: --calibrate: the measurement failed before any sample was complete\n");
		goto out;
	}
	if (cal_write_samples(&cs, d->calibrate, false))
		r = cal_write(&cs, d->calibrate);
out:
	cal_free(&cs);
	free(j.t);
	return r;
}

int
main(int argc, char **argv)
{
	Driver d = {.tool = "syncrun", .seed = 1, .keep_sema = true};
	Unit *u = NULL;
	Buf out = {0};
	char dir[] = "/tmp/syncrun-XXXXXX", prefix[64], predicted[4200];
	const char *measured = NULL;
	Ranks rk = {0};
	int r;
	bool all_ok = true;

	drv_crash_handler();
	diag_setup(DIAG_TEXT, "syncrun");
	d.mem = arena_new();
	d.opt.nranks = 2;
	if ((r = drv_args(&d, argc, argv, allowed, (int)NELEM(allowed), usage)) >= 0) {
		drv_free(&d);
		return r;
	}
	rk.per_process = getenv("RANK") || getenv("OMPI_COMM_WORLD_RANK") || getenv("SLURM_PROCID");
	d.need_plans = true;
	if (!mkdtemp(dir))
		die("mkdtemp failed");
	snprintf(prefix, sizeof prefix, "ops");
	if (d.calibrate) {
		if (rk.per_process || d.opt.nranks < 2) {
			diag_usage("--calibrate runs in one process on 2 or more local GPUs (--ranks P or --gpus LIST)");
			return EXIT_USAGE;
		}
		/* before the GPUs start and minutes of measuring: PROFILE can be written */
		if ((r = cal_check_dest(d.calibrate)) != EXIT_OK)
			return r;
		if ((r = start_ranks(&d, false, &rk.cs, &rk.first, &rk.nlocal)) >= 0)
			return r;
		rk.P = d.opt.nranks;
		r = calibrate(&d, &rk, dir, prefix);
		for (int q = 0; q < rk.nlocal; q++)
			syn_finalize(rk.cs[q]);
		drv_free(&d);
		return r;
	}
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
	rk.P = d.opt.nranks;
	nranks_of_job = rk.P;
	if ((r = start_ranks(&d, rk.per_process, &rk.cs, &rk.first, &rk.nlocal)) >= 0)
		return r;
	int i = 0;
	for (Func *f = u->funcs; f; f = f->next, i++) {
		double ms;
		all_ok = (d.tune ? tune_gpu(&d, u, i, f, &rk, dir) == EXIT_OK
		                 : run_func(&d, f, d.plans[i], &rk, dir, prefix, !d.nocheck, &ms, NULL, false)) &&
		         all_ok;
	}
	if (d.trace && all_ok) { /* collective: every local rank at once */
		int tr = rk.per_process ? write_trace(rk.cs[0], (void *)d.trace) : syn_run_local(rk.cs, rk.P, write_trace, (void *)d.trace);
		if (tr)
			all_ok = false;
		else {
			printf("measured trace: %s (predicted: %s)\n", d.trace, predicted);
			trace_summary(rk.cs[0], &d);
			if (d.svg && syn_rank(rk.cs[0]) == 0 && !svg_measured(&d))
				all_ok = false;
		}
	}
	for (int q = 0; q < rk.nlocal; q++)
		syn_finalize(rk.cs[q]);
	unit_free(u);
	buf_free(&out);
	drv_free(&d);
	return all_ok ? EXIT_OK : EXIT_INPUT;
}
