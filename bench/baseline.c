/* bench/baseline.c -- the baselines syncc must beat (issue 8): cuBLASLt bf16
 * matmuls and NCCL collectives on TP = P GPUs, measured in one run.
 *
 *   baseline --shapes bench/shapes --json rows.jsonl [--gpus 2] [--warmup 10]
 *            [--iters 50] [--seed N] [--chunks 2,4,8] [--list]
 *
 * One process drives every GPU: ncclCommInitAll makes the communicators and
 * one POSIX thread per GPU enqueues that GPU's work, as a rank would.  For each
 * shape (bench/shapes) it measures, each on the same fresh random inputs:
 *   gemm          the rank's matmul alone (cuBLASLt, bf16 in and out, f32 accumulate)
 *   comm          the collective alone (NCCL)
 *   serial        matmul then collective on one stream (AG: collective then matmul)
 *   chunkC        hand pipelining in C chunks over a compute and a communication
 *                 stream, an event between chunk i's matmul and chunk i's collective
 *   serial_again  serial once more at the end: the run-to-run spread
 *   ideal         max(gemm, comm), derived
 * Layouts, row- vs column-parallel as in shared/anchors/tp_overlap.py (all
 * matrices row-major; P ranks; rank r):
 *   AR  A_r = A[:, r*K/P ..] [M, K/P], W_r = W[r*K/P .., :] [K/P, N], partial
 *       C_r = A_r W_r [M, N]; out = all_reduce(C) [M, N], out of place.
 *       chunk i: rows [i*M/C, (i+1)*M/C) of A and C; all_reduce that slice.
 *   RS  as AR, then out = reduce_scatter(C) [M/P, N]: rank r keeps rows
 *       [r*M/P, (r+1)*M/P).  NCCL reduce-scatters a send buffer made of P equal
 *       segments, segment r going to rank r, so chunk i must hold, for every r,
 *       rows r*M/P + [i*m, (i+1)*m) (m = M/(P*C)).  Chunk i's partial product is
 *       therefore written chunk-major into a second buffer Cp: segment (i, r) at
 *       Cp + (i*P + r)*m*N is the matmul of A's rows r*M/P + i*m .. (P matmul
 *       calls per chunk), and reduce_scatter(Cp + i*P*m*N -> out + i*m*N, m*N)
 *       lands exactly in rows [i*m, (i+1)*m) of each rank's block: the same
 *       output, row for row, as serial.
 *   AG  X_r = X[r*M/P .., :] [M/P, K], W_r = W[:, r*N/P ..] [K, N/P];
 *       all_gather(X) [M, K], out = X W_r [M, N/P].  Chunk i all-gathers rows
 *       [i*m, (i+1)*m) of every X_r (m = M/(P*C)) into a chunk-major buffer
 *       Xc + i*P*m*K, then multiplies each rank segment into out's rows
 *       r*M/P + i*m .. (P matmul calls), so out is again identical to serial.
 *
 * Method (.library/device/METHOD.md): inputs are a hash of (seed, global
 * index), uniform in [-1, 1) and rounded to bf16, fresh for every shape; before
 * a system is timed its outputs and intermediates are poisoned (NaN), it runs
 * once and its output is compared with serial's on the GPU (‖a-b‖/‖b‖ in
 * float64, non-finite values counted); a mismatch is reported and not timed.
 * Serial itself is compared with a float64 CPU product on 64 sampled outputs
 * per rank (AG: the gathered X also with the expected X, exactly).  Then
 * --warmup runs, then --iters runs, each after a host barrier of all rank
 * threads, timed with CUDA events around the whole step on every rank; an
 * iteration's time is the max over ranks, and the row gives the median, p10,
 * p90, min and max of those.  The output is checked again after timing.
 * NCCL_NVLS_ENABLE=0 is forced: never NVLink multicast. */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"

enum {
	MAXRANK = 8,
	MAXSHAPE = 64,
	MAXITER = 1000,
	MAXCHUNK = 8,   /* chunk counts measured */
	MAXEV = 64,     /* events per rank: one per chunk */
	MAXGEMM = 16,   /* cuBLASLt plans per shape */
	NSAMPLE = 64,   /* CPU-checked outputs per rank */
};
#define TOL 1e-2 /* bf16 outputs: rounding alone gives ~2e-3 */
#define WS_BYTES ((size_t)32 << 20)

typedef enum { KIND_AR, KIND_RS, KIND_AG } Kind;
typedef enum { SYS_SERIAL, SYS_GEMM, SYS_COMM, SYS_CHUNK, SYS_SERIAL_AGAIN } Sys;

typedef struct Shape {
	char name[64];
	Kind kind;
	int64_t M, N, K; /* global sizes */
} Shape;

typedef struct Opts {
	const char *shapes, *json;
	int gpus, warmup, iters, list;
	int chunks[MAXCHUNK], nchunks;
	uint64_t seed;
} Opts;

/* One cuBLASLt plan: row-major C[m,n] = X[m,k] W[k,n] is column-major
 * C^T = W^T X^T, so cuBLASLt's A is W (n x k), its B is X (k x m). */
typedef struct Gemm {
	int64_t m, n, k, ldx, ldw, ldc;
	cublasLtMatrixLayout_t w, x, c;
	cublasLtMatmulAlgo_t algo;
} Gemm;

typedef struct Bufs {
	uint16_t *a;   /* AR/RS: A_r [M, K/P]; AG: X_r [M/P, K] */
	uint16_t *w;   /* AR/RS: W_r [K/P, N]; AG: W_r [K, N/P] */
	uint16_t *c;   /* AR/RS: partial [M, N]; AG: the output [M, N/P] */
	uint16_t *cp;  /* RS: chunk-major partial [M, N]; AG: chunk-major gathered X [M, K] */
	uint16_t *x;   /* AG: gathered X [M, K] */
	uint16_t *out; /* AR: [M, N]; RS: [M/P, N]; AG: = c */
	uint16_t *ref; /* serial's output, the reference of every later system */
	uint16_t *cref; /* AR/RS: serial's partial (checks gemm); AG: the expected X */
	int64_t nout;  /* elements of out */
} Bufs;

typedef struct Rank {
	int r, dev;
	ncclComm_t comm;
	cublasLtHandle_t lt;
	cublasLtMatmulDesc_t desc;
	void *ws;
	cudaStream_t sc, sm; /* compute stream, communication stream */
	cudaEvent_t t0, t1, start, done, ev[MAXEV];
	double *stats; /* device, 3 doubles for kern_diff */
	Gemm gemm[MAXGEMM];
	int ngemm;
	Bufs b;
	const Shape *sh;
	uint64_t seed_a, seed_w;
} Rank;

/* What the rank threads share. */
typedef struct Stats {
	double ms, p10, p90, min, max;
	int n;
} Stats;

static struct {
	Opts o;
	Shape shape[MAXSHAPE];
	int nshape, P;
	pthread_barrier_t bar;
	FILE *json;
	float times[MAXRANK][MAXITER];
	double err[MAXRANK];    /* rel. error of the current check */
	double bad[MAXRANK];    /* non-finite outputs of the current check */
	Stats gemm, comm;       /* of the current shape, for ideal */
	int gemm_ok, comm_ok, ref_ok;
} G;

/* ---- errors: every call checked, the first failure ends the process ---- */

#define CUDA(x) cuda_check((x), #x, __LINE__)
#define LT(x) lt_check((x), #x, __LINE__)
#define NCCL(x) nccl_check((x), #x, __LINE__)

static void
cuda_check(cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "baseline.c:%d: CUDA error %s (%s): %s\n", line, cudaGetErrorName(e), cudaGetErrorString(e),
	        what);
	exit(1);
}

static void
lt_check(cublasStatus_t e, const char *what, int line)
{
	if (e == CUBLAS_STATUS_SUCCESS)
		return;
	fprintf(stderr, "baseline.c:%d: cuBLASLt error %d (%s): %s\n", line, (int)e, cublasLtGetStatusString(e), what);
	exit(1);
}

static void
nccl_check(ncclResult_t e, const char *what, int line)
{
	if (e == ncclSuccess)
		return;
	fprintf(stderr, "baseline.c:%d: NCCL error %d (%s): %s\n", line, (int)e, ncclGetErrorString(e), what);
	exit(1);
}

static void
die(const char *msg, const char *arg)
{
	fprintf(stderr, "baseline: %s%s\n", msg, arg ? arg : "");
	exit(2);
}

static void
sync_all(void)
{
	int e = pthread_barrier_wait(&G.bar);
	if (e != 0 && e != PTHREAD_BARRIER_SERIAL_THREAD)
		die("pthread_barrier_wait failed", NULL);
}

/* ---- command line and the shapes file ---- */

static const char *const kind_name[] = {"AR", "RS", "AG"};

static int
parse_kind(const char *s, Kind *k)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, kind_name[i])) {
			*k = (Kind)i;
			return 1;
		}
	return 0;
}

static void
read_shapes(const char *path)
{
	char line[512], kind[8];
	long long m, n, k;
	FILE *f = fopen(path, "r");
	if (!f)
		die("cannot open the shapes file ", path);
	while (fgets(line, sizeof line, f)) {
		Shape *s = &G.shape[G.nshape];
		if (line[strspn(line, " \t")] == '#' || line[strspn(line, " \t\r\n")] == 0)
			continue;
		if (G.nshape == MAXSHAPE)
			die("too many shapes in ", path);
		if (sscanf(line, "%63s %7s %lld %lld %lld", s->name, kind, &m, &n, &k) != 5 || !parse_kind(kind, &s->kind) ||
		    m <= 0 || n <= 0 || k <= 0)
			die("bad line in the shapes file: ", line);
		s->M = m, s->N = n, s->K = k;
		G.nshape++;
	}
	fclose(f);
}

static long
num(const char *s, long lo, long hi)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		die("bad number: ", s);
	return v;
}

static void
parse_chunks(const char *s)
{
	char buf[128], *tok, *save = NULL;
	snprintf(buf, sizeof buf, "%s", s);
	G.o.nchunks = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (G.o.nchunks == MAXCHUNK)
			die("too many chunk counts: ", s);
		G.o.chunks[G.o.nchunks++] = (int)num(tok, 1, MAXEV / 2);
	}
}

static void
usage(void)
{
	fputs("usage: baseline --shapes FILE --json OUT.jsonl [--gpus P] [--warmup N] [--iters N]\n"
	      "                [--seed N] [--chunks 2,4,8] [--list]\n",
	      stderr);
	exit(2);
}

static void
parse_args(int argc, char **argv)
{
	Opts *o = &G.o;
	*o = (Opts){.gpus = 2, .warmup = 10, .iters = 50, .nchunks = 3, .chunks = {2, 4, 8}, .seed = 0x5eed};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--list")) {
			o->list = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--shapes"))
			o->shapes = v;
		else if (!strcmp(a, "--json"))
			o->json = v;
		else if (!strcmp(a, "--gpus"))
			o->gpus = (int)num(v, 1, MAXRANK);
		else if (!strcmp(a, "--warmup"))
			o->warmup = (int)num(v, 0, MAXITER);
		else if (!strcmp(a, "--iters"))
			o->iters = (int)num(v, 1, MAXITER);
		else if (!strcmp(a, "--seed"))
			o->seed = (uint64_t)num(v, 0, 0x7fffffffL);
		else if (!strcmp(a, "--chunks"))
			parse_chunks(v);
		else
			usage();
	}
	if (!o->shapes || (!o->json && !o->list))
		usage();
}

/* Why a shape or a chunk count cannot run at P ranks (NULL: it can). */
static const char *
shape_unfit(const Shape *s, int P)
{
	if (s->K % P || s->N % P || s->M % P)
		return "M, N and K must be multiples of the number of GPUs";
	return NULL;
}

static int
chunk_fits(const Shape *s, int P, int c)
{
	return s->M % ((int64_t)P * c) == 0;
}

/* ---- values: the same numbers on the host and on the GPU ---- */

static double
bf16_value(uint16_t b)
{
	union {
		uint32_t u;
		float f;
	} v = {.u = (uint32_t)b << 16};
	return v.f;
}

static double
bench_value(uint64_t seed, int64_t row, int64_t col, int64_t gcols)
{
	return bf16_value(kern_bf16_bits(kern_mix(seed, (uint64_t)row * (uint64_t)gcols + (uint64_t)col)));
}

/* Element (i, j) of the global product A W (A [M, K], W [K, N]) in float64. */
static double
ref_product(const Rank *rk, int64_t i, int64_t j)
{
	const Shape *s = rk->sh;
	double acc = 0;
	for (int64_t k = 0; k < s->K; k++)
		acc += bench_value(rk->seed_a, i, k, s->K) * bench_value(rk->seed_w, k, j, s->N);
	return acc;
}

/* ---- cuBLASLt ---- */

static Gemm *
gemm_plan(Rank *rk, int64_t m, int64_t n, int64_t k, int64_t ldx, int64_t ldw, int64_t ldc)
{
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t res;
	uint64_t wsb = WS_BYTES;
	int nres = 0;
	Gemm *g;

	for (int i = 0; i < rk->ngemm; i++) {
		g = &rk->gemm[i];
		if (g->m == m && g->n == n && g->k == k && g->ldx == ldx && g->ldw == ldw && g->ldc == ldc)
			return g;
	}
	if (rk->ngemm == MAXGEMM)
		die("too many matmul shapes", NULL);
	g = &rk->gemm[rk->ngemm++];
	*g = (Gemm){.m = m, .n = n, .k = k, .ldx = ldx, .ldw = ldw, .ldc = ldc};
	LT(cublasLtMatrixLayoutCreate(&g->w, CUDA_R_16BF, (uint64_t)n, (uint64_t)k, ldw));
	LT(cublasLtMatrixLayoutCreate(&g->x, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, ldx));
	LT(cublasLtMatrixLayoutCreate(&g->c, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, ldc));
	LT(cublasLtMatmulPreferenceCreate(&pref));
	LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
	LT(cublasLtMatmulAlgoGetHeuristic(rk->lt, rk->desc, g->w, g->x, g->c, g->c, pref, 1, &res, &nres));
	LT(cublasLtMatmulPreferenceDestroy(pref));
	if (nres < 1 || res.state != CUBLAS_STATUS_SUCCESS)
		die("cuBLASLt found no algorithm for a matmul", NULL);
	g->algo = res.algo;
	return g;
}

static void
gemm_free(Rank *rk)
{
	for (int i = 0; i < rk->ngemm; i++) {
		LT(cublasLtMatrixLayoutDestroy(rk->gemm[i].w));
		LT(cublasLtMatrixLayoutDestroy(rk->gemm[i].x));
		LT(cublasLtMatrixLayoutDestroy(rk->gemm[i].c));
	}
	rk->ngemm = 0;
}

/* Row-major c[m, n] = x[m, k] w[k, n] on stream s. */
static void
gemm(Rank *rk, const uint16_t *x, int64_t ldx, const uint16_t *w, int64_t ldw, uint16_t *c, int64_t ldc, int64_t m,
     int64_t n, int64_t k, cudaStream_t s)
{
	const float one = 1.0f, zero = 0.0f;
	Gemm *g = gemm_plan(rk, m, n, k, ldx, ldw, ldc);
	LT(cublasLtMatmul(rk->lt, rk->desc, &one, w, g->w, x, g->x, &zero, c, g->c, c, g->c, &g->algo, rk->ws, WS_BYTES,
	                  s));
}

/* ---- the steps: one call enqueues one whole step of a system ---- */

/* The communication stream's work joins the compute stream. */
static void
join(Rank *rk)
{
	CUDA(cudaEventRecord(rk->done, rk->sm));
	CUDA(cudaStreamWaitEvent(rk->sc, rk->done, 0));
}

static void
step_ar(Rank *rk, Sys sys, int nc)
{
	const Shape *s = rk->sh;
	Bufs *b = &rk->b;
	int64_t M = s->M, N = s->N, Kl = s->K / G.P, rows = M / (nc ? nc : 1);
	int ar = s->kind == KIND_AR;

	if (sys == SYS_GEMM || sys == SYS_SERIAL || sys == SYS_SERIAL_AGAIN)
		gemm(rk, b->a, Kl, b->w, N, b->c, N, M, N, Kl, rk->sc);
	if (sys == SYS_COMM || sys == SYS_SERIAL || sys == SYS_SERIAL_AGAIN) {
		if (ar)
			NCCL(ncclAllReduce(b->c, b->out, (size_t)(M * N), ncclBfloat16, ncclSum, rk->comm, rk->sc));
		else
			NCCL(ncclReduceScatter(b->c, b->out, (size_t)(M / G.P * N), ncclBfloat16, ncclSum, rk->comm,
			                       rk->sc));
	}
	if (sys != SYS_CHUNK)
		return;
	if (ar) {
		for (int i = 0; i < nc; i++) {
			gemm(rk, b->a + i * rows * Kl, Kl, b->w, N, b->c + i * rows * N, N, rows, N, Kl, rk->sc);
			CUDA(cudaEventRecord(rk->ev[i], rk->sc));
			CUDA(cudaStreamWaitEvent(rk->sm, rk->ev[i], 0));
			NCCL(ncclAllReduce(b->c + i * rows * N, b->out + i * rows * N, (size_t)(rows * N), ncclBfloat16,
			                   ncclSum, rk->comm, rk->sm));
		}
	} else {
		int64_t m = M / ((int64_t)G.P * nc), blk = M / G.P;
		for (int i = 0; i < nc; i++) {
			for (int r = 0; r < G.P; r++)
				gemm(rk, b->a + (r * blk + i * m) * Kl, Kl, b->w, N, b->cp + ((int64_t)i * G.P + r) * m * N,
				     N, m, N, Kl, rk->sc);
			CUDA(cudaEventRecord(rk->ev[i], rk->sc));
			CUDA(cudaStreamWaitEvent(rk->sm, rk->ev[i], 0));
			NCCL(ncclReduceScatter(b->cp + (int64_t)i * G.P * m * N, b->out + i * m * N, (size_t)(m * N),
			                       ncclBfloat16, ncclSum, rk->comm, rk->sm));
		}
	}
	join(rk);
}

static void
step_ag(Rank *rk, Sys sys, int nc)
{
	const Shape *s = rk->sh;
	Bufs *b = &rk->b;
	int64_t M = s->M, K = s->K, Nl = s->N / G.P, blk = M / G.P;

	if (sys == SYS_COMM || sys == SYS_SERIAL || sys == SYS_SERIAL_AGAIN)
		NCCL(ncclAllGather(b->a, b->x, (size_t)(blk * K), ncclBfloat16, rk->comm, rk->sc));
	if (sys == SYS_GEMM || sys == SYS_SERIAL || sys == SYS_SERIAL_AGAIN)
		gemm(rk, b->x, K, b->w, Nl, b->c, Nl, M, Nl, K, rk->sc);
	if (sys != SYS_CHUNK)
		return;
	int64_t m = blk / nc;
	/* the gathers start with the step, not before its start event */
	CUDA(cudaEventRecord(rk->start, rk->sc));
	CUDA(cudaStreamWaitEvent(rk->sm, rk->start, 0));
	for (int i = 0; i < nc; i++) {
		NCCL(ncclAllGather(b->a + i * m * K, b->cp + (int64_t)i * G.P * m * K, (size_t)(m * K), ncclBfloat16,
		                   rk->comm, rk->sm));
		CUDA(cudaEventRecord(rk->ev[i], rk->sm));
	}
	for (int i = 0; i < nc; i++) {
		CUDA(cudaStreamWaitEvent(rk->sc, rk->ev[i], 0));
		for (int r = 0; r < G.P; r++)
			gemm(rk, b->cp + ((int64_t)i * G.P + r) * m * K, K, b->w, Nl, b->c + (r * blk + i * m) * Nl, Nl, m,
			     Nl, K, rk->sc);
	}
}

static void
step(Rank *rk, Sys sys, int nc)
{
	if (rk->sh->kind == KIND_AG)
		step_ag(rk, sys, nc);
	else
		step_ar(rk, sys, nc);
}

/* ---- buffers ---- */

static uint16_t *
dalloc(int64_t n)
{
	void *p;
	CUDA(cudaMalloc(&p, (size_t)n * 2));
	return p;
}

static void
bufs_alloc(Rank *rk)
{
	const Shape *s = rk->sh;
	Bufs *b = &rk->b;
	int64_t P = G.P, M = s->M, N = s->N, K = s->K;

	*b = (Bufs){0};
	if (s->kind == KIND_AG) {
		b->a = dalloc(M / P * K);
		b->w = dalloc(K * (N / P));
		b->x = dalloc(M * K);
		b->cp = dalloc(M * K);
		b->cref = dalloc(M * K);
		b->c = b->out = dalloc(M * (N / P));
		b->nout = M * (N / P);
	} else {
		b->a = dalloc(M * (K / P));
		b->w = dalloc(K / P * N);
		b->c = dalloc(M * N);
		b->cref = dalloc(M * N);
		if (s->kind == KIND_RS)
			b->cp = dalloc(M * N);
		b->nout = s->kind == KIND_AR ? M * N : M / P * N;
		b->out = dalloc(b->nout);
	}
	b->ref = dalloc(b->nout);
}

static void
bufs_free(Rank *rk)
{
	Bufs *b = &rk->b;
	uint16_t *all[] = {b->a, b->w, b->x, b->cp, b->cref, b->out, b->ref, b->c != b->out ? b->c : NULL};
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (all[i])
			CUDA(cudaFree(all[i]));
	*b = (Bufs){0};
	gemm_free(rk);
}

/* Each rank's shards of the global A (or X) and W, and, for AG, the X that
 * the gather must produce. */
static void
bufs_fill(Rank *rk)
{
	const Shape *s = rk->sh;
	Bufs *b = &rk->b;
	int64_t P = G.P, r = rk->r, M = s->M, N = s->N, K = s->K;

	if (s->kind == KIND_AG) {
		CUDA(kern_fill(b->a, M / P, K, K, r * (M / P), 0, K, rk->seed_a, rk->sc));
		CUDA(kern_fill(b->w, K, N / P, N / P, 0, r * (N / P), N, rk->seed_w, rk->sc));
		CUDA(kern_fill(b->cref, M, K, K, 0, 0, K, rk->seed_a, rk->sc));
	} else {
		CUDA(kern_fill(b->a, M, K / P, K / P, 0, r * (K / P), K, rk->seed_a, rk->sc));
		CUDA(kern_fill(b->w, K / P, N, N, r * (K / P), 0, N, rk->seed_w, rk->sc));
	}
	CUDA(cudaStreamSynchronize(rk->sc));
}

static void
poison(uint16_t *p, int64_t n, cudaStream_t s)
{
	if (p)
		CUDA(cudaMemsetAsync(p, 0xFF, (size_t)n * 2, s)); /* 0xFFFF is a bf16 NaN */
}

/* NaN into everything a system writes, so an unwritten element or a read
 * before its producer finished shows as a non-finite output. */
static void
poison_for(Rank *rk, Sys sys)
{
	const Shape *s = rk->sh;
	Bufs *b = &rk->b;
	int64_t M = s->M, N = s->N, K = s->K;
	int ag = s->kind == KIND_AG;

	if (sys == SYS_COMM && !ag) { /* its input is the partial serial made */
		CUDA(cudaMemcpyAsync(b->c, b->cref, (size_t)(M * N) * 2, cudaMemcpyDeviceToDevice, rk->sc));
		poison(b->out, b->nout, rk->sc);
	} else if (sys == SYS_COMM) {
		poison(b->x, M * K, rk->sc);
	} else if (sys == SYS_GEMM) {
		poison(b->c, ag ? b->nout : M * N, rk->sc);
	} else {
		poison(b->c, ag ? b->nout : M * N, rk->sc);
		poison(b->out, b->nout, rk->sc);
		poison(b->cp, ag ? M * K : M * N, rk->sc);
		poison(ag ? b->x : NULL, M * K, rk->sc);
	}
	CUDA(cudaStreamSynchronize(rk->sc));
}

/* ---- checks ---- */

/* ‖a - b‖ / ‖b‖ over n elements on the GPU; *bad counts non-finite a. */
static double
rel_err(Rank *rk, const uint16_t *a, const uint16_t *b, int64_t n, double *bad)
{
	double h[3];
	CUDA(cudaMemsetAsync(rk->stats, 0, sizeof h, rk->sc));
	CUDA(kern_diff(a, b, n, rk->stats, rk->sc));
	CUDA(cudaMemcpyAsync(h, rk->stats, sizeof h, cudaMemcpyDeviceToHost, rk->sc));
	CUDA(cudaStreamSynchronize(rk->sc));
	*bad = h[2];
	return h[1] > 0 ? sqrt(h[0] / h[1]) : (h[0] > 0 ? INFINITY : 0);
}

/* The global (row, col) of element (i, j) of this rank's output. */
static void
out_coord(const Rank *rk, int64_t i, int64_t j, int64_t *gi, int64_t *gj)
{
	const Shape *s = rk->sh;
	*gi = s->kind == KIND_RS ? rk->r * (s->M / G.P) + i : i;
	*gj = s->kind == KIND_AG ? rk->r * (s->N / G.P) + j : j;
}

/* Serial's output against a float64 CPU product at NSAMPLE places. */
static double
check_samples(Rank *rk, double *bad)
{
	const Shape *s = rk->sh;
	int64_t rows = s->kind == KIND_RS ? s->M / G.P : s->M, cols = s->kind == KIND_AG ? s->N / G.P : s->N;
	double e = 0, r = 0;

	*bad = 0;
	for (int t = 0; t < NSAMPLE; t++) {
		uint64_t h = kern_mix(rk->seed_a ^ 0xC0FFEE, (uint64_t)(rk->r * NSAMPLE + t));
		int64_t i = (int64_t)(h % (uint64_t)rows), j = (int64_t)((h >> 32) % (uint64_t)cols), gi, gj;
		uint16_t got;
		double want, d;
		CUDA(cudaMemcpy(&got, rk->b.out + i * cols + j, 2, cudaMemcpyDeviceToHost));
		out_coord(rk, i, j, &gi, &gj);
		want = ref_product(rk, gi, gj);
		if (!isfinite(bf16_value(got))) {
			*bad += 1;
			continue;
		}
		d = bf16_value(got) - want;
		e += d * d;
		r += want * want;
	}
	return r > 0 ? sqrt(e / r) : 0;
}

/* The check of one system's output on this rank; the worst of several
 * comparisons where there are several. */
static double
check(Rank *rk, Sys sys, double *bad)
{
	const Shape *s = rk->sh;
	Bufs *b = &rk->b;
	int ag = s->kind == KIND_AG;
	double e, e2, bad2;

	if (sys == SYS_SERIAL) { /* also: no non-finite output anywhere, and AG's gather exact */
		e = check_samples(rk, bad);
		rel_err(rk, b->out, b->out, b->nout, &bad2);
		*bad += bad2;
		if (ag) {
			e2 = rel_err(rk, b->x, b->cref, s->M * s->K, &bad2);
			*bad += bad2;
			if (e2 != 0)
				e = fmax(e, fmax(e2, 1.0)); /* a gather is a copy: any difference fails */
		}
		return e;
	}
	if (sys == SYS_GEMM && !ag)
		return rel_err(rk, b->c, b->cref, s->M * s->N, bad);
	if (sys == SYS_COMM && ag) {
		e = rel_err(rk, b->x, b->cref, s->M * s->K, bad);
		return e != 0 ? fmax(e, 1.0) : 0;
	}
	return rel_err(rk, b->out, b->ref, b->nout, bad);
}

/* After serial's check passed: its output is the reference. */
static void
keep_reference(Rank *rk)
{
	Bufs *b = &rk->b;
	CUDA(cudaMemcpyAsync(b->ref, b->out, (size_t)b->nout * 2, cudaMemcpyDeviceToDevice, rk->sc));
	if (rk->sh->kind != KIND_AG)
		CUDA(cudaMemcpyAsync(b->cref, b->c, (size_t)(rk->sh->M * rk->sh->N) * 2, cudaMemcpyDeviceToDevice,
		                     rk->sc));
	CUDA(cudaStreamSynchronize(rk->sc));
}

/* ---- timing ---- */

static void
time_step(Rank *rk, Sys sys, int nc)
{
	for (int i = 0; i < G.o.warmup; i++)
		step(rk, sys, nc);
	CUDA(cudaStreamSynchronize(rk->sc));
	CUDA(cudaStreamSynchronize(rk->sm));
	for (int i = 0; i < G.o.iters; i++) {
		sync_all();
		CUDA(cudaEventRecord(rk->t0, rk->sc));
		step(rk, sys, nc);
		CUDA(cudaEventRecord(rk->t1, rk->sc));
		CUDA(cudaEventSynchronize(rk->t1));
		CUDA(cudaEventElapsedTime(&G.times[rk->r][i], rk->t0, rk->t1));
	}
	CUDA(cudaStreamSynchronize(rk->sm));
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Per iteration the slowest rank; then median and spread over iterations. */
static Stats
summarize(void)
{
	static double v[MAXITER];
	int n = G.o.iters;
	Stats st = {.n = n};
	for (int i = 0; i < n; i++) {
		v[i] = 0;
		for (int r = 0; r < G.P; r++)
			v[i] = fmax(v[i], G.times[r][i]);
	}
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	st.ms = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	st.p10 = v[(int)lround(0.1 * (n - 1))];
	st.p90 = v[(int)lround(0.9 * (n - 1))];
	st.min = v[0];
	st.max = v[n - 1];
	return st;
}

/* ---- rows ---- */

static void
sys_name(Sys sys, int nc, char *buf, size_t len)
{
	static const char *const names[] = {"serial", "gemm", "comm", "chunk", "serial_again"};
	if (sys == SYS_CHUNK)
		snprintf(buf, len, "chunk%d", nc);
	else
		snprintf(buf, len, "%s", names[sys]);
}

static void
json_num(FILE *f, const char *key, double v, int ok)
{
	if (ok && isfinite(v))
		fprintf(f, ", \"%s\": %.6g", key, v);
	else
		fprintf(f, ", \"%s\": null", key);
}

/* What a reader wants next to the time: the matmul's rate, the
 * collective's bus bandwidth (nccl-tests' formulas). */
static void
row_note(const Shape *s, Sys sys, double ms, char *buf, size_t len)
{
	double P = G.P, f = (P - 1) / P, bytes;
	buf[0] = 0;
	if (sys == SYS_GEMM)
		snprintf(buf, len, "%.0f TFLOP/s per GPU", 2.0 * (double)s->M * (double)s->N * (double)s->K / P / ms / 1e9);
	if (sys != SYS_COMM)
		return;
	bytes = s->kind == KIND_AG ? (double)s->M * (double)s->K * 2 : (double)s->M * (double)s->N * 2;
	snprintf(buf, len, "%.0f GB/s bus bandwidth", bytes / ms / 1e6 * (s->kind == KIND_AR ? 2 * f : f));
}

static void
emit(const Shape *s, const char *system, const Stats *st, int timed, int checked, double err, double bad,
     const char *note)
{
	FILE *f = G.json;
	fprintf(f, "{\"shape\": \"%s\", \"kind\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, \"tp\": %d", s->name,
	        kind_name[s->kind], (long long)s->M, (long long)s->N, (long long)s->K, G.P);
	fprintf(f, ", \"system\": \"%s\", \"impl\": \"baseline.c\"", system);
	json_num(f, "ms", st->ms, timed);
	json_num(f, "p10", st->p10, timed);
	json_num(f, "p90", st->p90, timed);
	json_num(f, "min", st->min, timed);
	json_num(f, "max", st->max, timed);
	fprintf(f, ", \"n\": %d, \"checked\": %s", timed ? st->n : 0, checked ? "true" : "false");
	json_num(f, "rel_err", err, bad == 0);
	fprintf(f, ", \"nonfinite\": %.0f, \"note\": \"%s\"}\n", bad, note ? note : "");
	fflush(f);
	printf("%-12s M=%-6lld %-13s", s->name, (long long)s->M, system);
	if (timed)
		printf(" %8.4f ms  [p10 %.4f  p90 %.4f]", st->ms, st->p10, st->p90);
	else
		printf(" %8s", "-");
	printf("  rel %.2e%s  %s %s\n", err, bad ? " NONFINITE" : "", checked ? "ok" : "MISMATCH", note ? note : "");
	fflush(stdout);
}

static void
emit_ideal(const Shape *s)
{
	Stats st = {
		.ms = fmax(G.gemm.ms, G.comm.ms),
		.p10 = fmax(G.gemm.p10, G.comm.p10),
		.p90 = fmax(G.gemm.p90, G.comm.p90),
		.min = fmax(G.gemm.min, G.comm.min),
		.max = fmax(G.gemm.max, G.comm.max),
		.n = G.o.iters,
	};
	int ok = G.gemm_ok && G.comm_ok;
	emit(s, "ideal", &st, ok, ok, ok ? 0 : NAN, 0, "derived: max(gemm, comm), each statistic separately");
}

/* ---- one system: poison, run, check; time if it matched; check again ---- */

static double
worst(const double *v)
{
	double m = 0;
	for (int r = 0; r < G.P; r++)
		m = isnan(v[r]) ? INFINITY : fmax(m, v[r]);
	return m;
}

static int
agreed_ok(double *err, double *bad)
{
	*err = worst(G.err);
	*bad = worst(G.bad);
	return *err <= TOL && *bad == 0;
}

static void
run_system(Rank *rk, Sys sys, int nc)
{
	char name[32], note[160] = "";
	double err, bad, err2, bad2;
	Stats st = {0};
	int ok, ok2 = 0, timed = 0;

	poison_for(rk, sys);
	step(rk, sys, nc);
	CUDA(cudaStreamSynchronize(rk->sc));
	CUDA(cudaStreamSynchronize(rk->sm));
	G.err[rk->r] = check(rk, sys, &G.bad[rk->r]);
	sync_all();
	ok = agreed_ok(&err, &bad) && (sys == SYS_SERIAL || G.ref_ok);
	if (ok) {
		if (sys == SYS_SERIAL)
			keep_reference(rk);
		time_step(rk, sys, nc);
		G.err[rk->r] = check(rk, sys, &G.bad[rk->r]);
	}
	sync_all();
	if (ok)
		ok2 = agreed_ok(&err2, &bad2);
	if (rk->r == 0) {
		const Shape *s = rk->sh;
		sys_name(sys, nc, name, sizeof name);
		if (ok && ok2) {
			st = summarize();
			timed = 1;
			row_note(s, sys, st.ms, note, sizeof note);
		} else if (ok) {
			snprintf(note, sizeof note, "matched once, mismatched after timing (rel %.3g, %.0f non-finite)", err2,
			         bad2);
			err = err2, bad = bad2;
		} else if (sys != SYS_SERIAL && !G.ref_ok) {
			snprintf(note, sizeof note, "not timed: serial failed its check, so there is no reference");
			err = NAN;
		} else {
			snprintf(note, sizeof note, "output mismatch (tolerance %g): not timed", TOL);
		}
		emit(s, name, &st, timed, ok && ok2, err, bad, note);
		if (sys == SYS_SERIAL)
			G.ref_ok = ok && ok2;
		if (sys == SYS_GEMM)
			G.gemm = st, G.gemm_ok = timed;
		if (sys == SYS_COMM) {
			G.comm = st, G.comm_ok = timed;
			emit_ideal(s);
		}
	}
	sync_all();
}

static void
run_shape(Rank *rk, int si)
{
	const Shape *s = &G.shape[si];
	rk->sh = s;
	rk->seed_a = kern_mix(G.o.seed, (uint64_t)si * 2);
	rk->seed_w = kern_mix(G.o.seed, (uint64_t)si * 2 + 1);
	bufs_alloc(rk);
	bufs_fill(rk);
	run_system(rk, SYS_SERIAL, 0);
	run_system(rk, SYS_GEMM, 0);
	run_system(rk, SYS_COMM, 0);
	for (int i = 0; i < G.o.nchunks; i++)
		if (chunk_fits(s, G.P, G.o.chunks[i]))
			run_system(rk, SYS_CHUNK, G.o.chunks[i]);
	run_system(rk, SYS_SERIAL_AGAIN, 0);
	bufs_free(rk);
	sync_all();
}

/* ---- ranks ---- */

static void
rank_init(Rank *rk)
{
	CUDA(cudaSetDevice(rk->dev));
	CUDA(cudaStreamCreateWithFlags(&rk->sc, cudaStreamNonBlocking));
	CUDA(cudaStreamCreateWithFlags(&rk->sm, cudaStreamNonBlocking));
	CUDA(cudaEventCreate(&rk->t0));
	CUDA(cudaEventCreate(&rk->t1));
	CUDA(cudaEventCreateWithFlags(&rk->start, cudaEventDisableTiming));
	CUDA(cudaEventCreateWithFlags(&rk->done, cudaEventDisableTiming));
	for (int i = 0; i < MAXEV; i++)
		CUDA(cudaEventCreateWithFlags(&rk->ev[i], cudaEventDisableTiming));
	CUDA(cudaMalloc(&rk->ws, WS_BYTES));
	CUDA(cudaMalloc((void **)&rk->stats, 3 * sizeof(double)));
	LT(cublasLtCreate(&rk->lt));
	LT(cublasLtMatmulDescCreate(&rk->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
}

static void *
rank_main(void *arg)
{
	Rank *rk = arg;
	rank_init(rk);
	sync_all();
	for (int si = 0; si < G.nshape; si++) {
		const char *why = shape_unfit(&G.shape[si], G.P);
		if (why) {
			if (rk->r == 0)
				fprintf(stderr, "baseline: shape %s skipped: %s\n", G.shape[si].name, why);
			continue;
		}
		run_shape(rk, si);
	}
	LT(cublasLtMatmulDescDestroy(rk->desc));
	LT(cublasLtDestroy(rk->lt));
	/* each rank its own, concurrently: destroying finalizes, a collective step */
	NCCL(ncclCommDestroy(rk->comm));
	return NULL;
}

static void
list_plan(void)
{
	for (int si = 0; si < G.nshape; si++) {
		const Shape *s = &G.shape[si];
		const char *why = shape_unfit(s, G.o.gpus);
		printf("%s %s M=%lld N=%lld K=%lld tp=%d:", s->name, kind_name[s->kind], (long long)s->M, (long long)s->N,
		       (long long)s->K, G.o.gpus);
		if (why) {
			printf(" skipped (%s)\n", why);
			continue;
		}
		printf(" serial gemm comm ideal");
		for (int i = 0; i < G.o.nchunks; i++)
			if (chunk_fits(s, G.o.gpus, G.o.chunks[i]))
				printf(" chunk%d", G.o.chunks[i]);
		printf(" serial_again\n");
	}
}

static void
emit_meta(void)
{
	struct cudaDeviceProp prop;
	int nccl = 0, rt = 0, drv = 0;
	CUDA(cudaGetDeviceProperties(&prop, 0));
	NCCL(ncclGetVersion(&nccl));
	CUDA(cudaRuntimeGetVersion(&rt));
	CUDA(cudaDriverGetVersion(&drv));
	fprintf(G.json,
	        "{\"meta\": {\"baseline\": {\"gpu\": \"%s\", \"sms\": %d, \"gpus\": %d, \"nccl\": %d, \"nccl_header\": %d, "
	        "\"cublaslt\": %zu, "
	        "\"cuda_runtime\": %d, \"cuda_driver\": %d, \"warmup\": %d, \"iters\": %d, \"seed\": %llu, "
	        "\"tolerance\": %g, \"process\": \"one process, one thread per GPU, ncclCommInitAll\"}}}\n",
	        prop.name, prop.multiProcessorCount, G.P, nccl, NCCL_VERSION_CODE, cublasLtGetVersion(), rt, drv, G.o.warmup, G.o.iters,
	        (unsigned long long)G.o.seed, TOL);
	fflush(G.json);
	if (nccl / 100 != NCCL_VERSION_CODE / 100)
		fprintf(stderr, "baseline: warning: built with nccl.h %d, running libnccl %d\n", NCCL_VERSION_CODE, nccl);
	printf("baseline: %d x %s, NCCL %d, cuBLASLt %zu, seed %llu, %d warm-up + %d timed runs per system\n", G.P,
	       prop.name, nccl, cublasLtGetVersion(), (unsigned long long)G.o.seed, G.o.warmup, G.o.iters);
}

int
main(int argc, char **argv)
{
	static Rank rank[MAXRANK];
	ncclComm_t comm[MAXRANK];
	pthread_t th[MAXRANK];
	int devs[MAXRANK], ndev = 0;

	parse_args(argc, argv);
	read_shapes(G.o.shapes);
	if (G.o.list) {
		list_plan();
		return 0;
	}
	setenv("NCCL_NVLS_ENABLE", "0", 1); /* never NVLink multicast (KINDS.md) */
	if (cudaGetDeviceCount(&ndev) != cudaSuccess)
		ndev = 0;
	if (ndev < G.o.gpus) {
		fprintf(stderr, "baseline: needs %d GPUs, found %d\n", G.o.gpus, ndev);
		return 3;
	}
	G.P = G.o.gpus;
	if (!(G.json = fopen(G.o.json, "w")))
		die("cannot write ", G.o.json);
	emit_meta();
	for (int r = 0; r < G.P; r++)
		devs[r] = r;
	NCCL(ncclCommInitAll(comm, G.P, devs));
	if (pthread_barrier_init(&G.bar, NULL, (unsigned)G.P))
		die("pthread_barrier_init failed", NULL);
	for (int r = 0; r < G.P; r++) {
		rank[r] = (Rank){.r = r, .dev = r, .comm = comm[r]};
		if (pthread_create(&th[r], NULL, rank_main, &rank[r]))
			die("pthread_create failed", NULL);
	}
	for (int r = 0; r < G.P; r++)
		pthread_join(th[r], NULL);
	fclose(G.json);
	return 0;
}
