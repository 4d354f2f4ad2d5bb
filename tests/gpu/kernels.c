/* tests/gpu/kernels.c -- runs every kernel kind of codegen/ on a GPU and
 * compares it with a double-precision CPU reference (codegen/prog.c gives
 * the programs' meaning).  Driver API only.
 *
 *   gpu-kernels list          the case names, one a line
 *   gpu-kernels CASE...       runs those cases (tests/gpu/gpu-check-kernels runs
 *                             each in its own process, so a fault in one
 *                             cannot take the others' context with it)
 *   gpu-kernels perf [TILE]   matmul throughput at 4096^3 and 8192^3 bf16 (PERF_SHAPES: others)
 *   gpu-kernels perf-flags    the cost of per-tile flag raises, wgmma
 *   gpu-kernels perf-attn     the fused attention kernel at FlashAttention's sizes
 *
 * Every check draws fresh random inputs (never zeros), poisons outputs with
 * NaN first, and prints one line per output:
 *   CASE name/out: rel=‖out-ref‖/‖ref‖ maxabs=.. n=.. nonfinite=.. clobbered=.. PASS|FAIL
 * clobbered counts elements outside the output (padding) that changed. */
#include <cuda.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../codegen/codegen.h"

#define CU(x) cu_check((x), #x, __FILE__, __LINE__)

static int failures;

static void
cu_check(CUresult r, const char *what, const char *file, int line)
{
	const char *name = "?", *str = "?";
	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &name);
	cuGetErrorString(r, &str);
	printf("CUDA ERROR %s (%s) at %s:%d: %s\n", name, str, file, line, what);
	fflush(stdout);
	exit(1);
}

/* ---- device, modules, launches ---- */

static CUdevice dev;
static CUcontext ctx;
static CUstream stream[3];
static int nsm;

static void
gpu_init(void)
{
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuDeviceGetAttribute(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	for (int i = 0; i < 3; i++)
		CU(cuStreamCreate(&stream[i], CU_STREAM_NON_BLOCKING));
}

typedef struct Kern {
	CUmodule mod;
	CUfunction fn;
	PtxKernel k;
	int regs, local;
	int per_sm; /* CTAs per SM the occupancy calculator allows */
	int clusters; /* a cluster kernel: clusters resident at once on the whole GPU */
	CUdeviceptr work; /* a group kernel's workspace (PtxKernel.work), zeroed: its last tensor */
} Kern;

/* Loads one kernel's PTX (module header + body) with the JIT logs. */
static Kern
kern_load(const Buf *body, const PtxKernel *k)
{
	Buf m = {0};
	Kern r = {.k = *k};
	static char elog[1 << 16], ilog[1 << 16];
	CUjit_option opt[5] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
	                       CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
	void *val[5] = {elog, (void *)(uintptr_t)sizeof elog, ilog, (void *)(uintptr_t)sizeof ilog, (void *)1};
	CUresult e;

	ptx_emit_header(&m);
	buf_put(&m, body->s, body->len);
	elog[0] = ilog[0] = 0;
	e = cuModuleLoadDataEx(&r.mod, m.s, 5, opt, val);
	if (e != CUDA_SUCCESS) {
		printf("JIT of %s failed.\n--- error log ---\n%s\n--- info log ---\n%s\n", k->name, elog, ilog);
		CU(e);
	}
	buf_free(&m);
	CU(cuModuleGetFunction(&r.fn, r.mod, k->name));
	CU(cuFuncSetAttribute(r.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k->smem));
	CU(cuFuncGetAttribute(&r.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, r.fn));
	CU(cuFuncGetAttribute(&r.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, r.fn));
	CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&r.per_sm, r.fn, k->threads, (size_t)k->smem));
	if (k->cluster > 1) { /* as libsyncrt's syn_grid_cluster asks */
		CUlaunchConfig cfg = {.gridDimX = (unsigned)k->cluster * 64, .gridDimY = 1, .gridDimZ = 1,
		                      .blockDimX = (unsigned)k->threads, .blockDimY = 1, .blockDimZ = 1,
		                      .sharedMemBytes = (unsigned)k->smem};
		CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
		at.value.clusterDim.x = (unsigned)k->cluster;
		at.value.clusterDim.y = at.value.clusterDim.z = 1;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
		CU(cuOccupancyMaxActiveClusters(&r.clusters, r.fn, &cfg));
	}
	if (k->work) { /* as the launcher's scratch: zeroed once */
		CU(cuMemAlloc(&r.work, (size_t)k->work));
		CU(cuMemsetD8(r.work, 0, (size_t)k->work));
	}
	printf("  kernel %s: %d threads, %d B smem, %d registers, %d B local (JIT)%s\n", k->name, k->threads, k->smem,
	       r.regs, r.local, k->cluster > 1 ? ", clusters" : k->group > 1 ? ", groups" : "");
	if (k->cluster > 1)
		printf("  kernel %s: clusters of %d CTAs, %d resident at once\n", k->name, k->cluster, r.clusters);
	for (char *line = strtok(ilog, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, "spill") || strstr(line, "Used"))
			printf("    jit: %s\n", line);
	return r;
}

typedef struct Launch {
	CUdeviceptr blocks, flags, err, trace;
	uint32_t nblocks;
	uint64_t timeout;
	uint64_t epoch; /* 0 is taken as 1: the harness's lists hold absolute targets */
	uint32_t site;  /* the kernel's number in errors and traces: 0 here */
	CUdeviceptr t[2 * PTX_MAX_TENSORS];
	int grid;
	CUstream s;
} Launch;

/* The tensor maps of a wgmma kernel, as libsyncrt's syn_tmap_encode makes them. */
static void
tmaps_encode(const PtxKernel *k, const Launch *l, CUtensorMap *tm)
{
	for (int i = 0; i < k->ntmaps; i++) {
		const PtxTmap *t = &k->tmap[i];
		cuuint64_t dim[3] = {(cuuint64_t)t->dim[0], (cuuint64_t)t->dim[1], (cuuint64_t)t->dim[2]};
		cuuint64_t st[2] = {(cuuint64_t)t->stride[0], (cuuint64_t)t->stride[1]};
		cuuint32_t box[3] = {(cuuint32_t)t->box[0], (cuuint32_t)t->box[1], (cuuint32_t)t->box[2]}, es[3] = {1, 1, 1};
		memset(&tm[i], 0, sizeof tm[i]);
		if (t->optional && l->t[t->tensor] % 16) /* the kernel reads it from global memory */
			continue;
		CU(cuTensorMapEncodeTiled(&tm[i], t->dt == DT_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
		                          3, (void *)(uintptr_t)l->t[t->tensor], dim, st, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
		                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
		                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	}
}

/* A group kernel's grid: whole groups of g, g the most (a power of two,
 * up to k->group) the grid holds -- as the launcher rounds it. */
static unsigned
group_grid(const PtxKernel *k, unsigned grid)
{
	unsigned g = k->group > 1 ? (unsigned)k->group : 1;
	while (g > grid)
		g /= 2;
	return grid - grid % g;
}

static void
launch(const Kern *k, Launch *l)
{
	void *args[PTX_NPARAM + 2 * PTX_MAX_TENSORS + PTX_MAX_TMAPS] = {&l->blocks, &l->nblocks, &l->flags, &l->err,
	                                                                &l->timeout, &l->trace, &l->epoch, &l->site};
	CUtensorMap tm[PTX_MAX_TMAPS];
	if (!l->epoch)
		l->epoch = 1;
	for (int i = 0; i < k->k.ntensors; i++)
		args[PTX_NPARAM + i] = &l->t[i];
	if (k->k.work)
		args[PTX_NPARAM + k->k.ntensors - 1] = (void *)&k->work;
	tmaps_encode(&k->k, l, tm);
	for (int i = 0; i < k->k.ntmaps; i++)
		args[PTX_NPARAM + k->k.ntensors + i] = &tm[i];
	/* a cluster kernel's grid: whole clusters (a case's grid rounded up) */
	unsigned g = (unsigned)l->grid, c = k->k.cluster > 1 ? (unsigned)k->k.cluster : 1;
	g = (g + c - 1) / c * c;
	g = group_grid(&k->k, g);
	CU(cuLaunchKernel(k->fn, g, 1, 1, k->k.threads, 1, 1, k->k.smem, l->s, args, NULL));
}

/* The persistent grid libsyncrt's launcher gives a kernel of nblocks
 * entries on the whole GPU (syn_grid_persistent, syn_grid_cluster; a
 * group kernel's as codegen/host.c emits it). */
static int
full_grid(const Kern *k, int64_t nblocks)
{
	int64_t g = (int64_t)nsm * k->per_sm, c = k->k.cluster;
	if (c > 1) {
		g = (int64_t)k->clusters * c;
		return (int)(g < nblocks * c ? g : nblocks * c);
	}
	if (k->k.group > 1)
		return (int)group_grid(&k->k, (unsigned)(g < nblocks * k->k.group ? g : nblocks * k->k.group));
	return (int)(g < nblocks ? g : nblocks);
}

static void
kern_unload(Kern *k)
{
	if (k->work)
		CU(cuMemFree(k->work));
	CU(cuModuleUnload(k->mod));
}

/* ---- host data ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double
urand(void) /* [-1, 1) */
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (double)((rng * 2685821657736338717ull) >> 11) * 0x1p-52 - 1.0;
}

typedef struct Tens {
	DType dt;
	int64_t n;      /* elements in the buffer */
	void *h;        /* host copy */
	CUdeviceptr d;
} Tens;

static Tens
tens_new(DType dt, int64_t n)
{
	Tens t = {dt, n, calloc((size_t)n, ty_dtypes[dt].size), 0};
	if (!t.h) {
		printf("out of host memory\n");
		exit(1);
	}
	CU(cuMemAlloc(&t.d, (size_t)n * ty_dtypes[dt].size));
	return t;
}

static void
tens_random(Tens *t, double scale)
{
	for (int64_t i = 0; i < t->n; i++)
		ptx_store(t->dt, t->h, i, t->dt == DT_I32 ? floor(urand() * 100) : urand() * scale);
	CU(cuMemcpyHtoD(t->d, t->h, (size_t)t->n * ty_dtypes[t->dt].size));
	CU(cuCtxSynchronize()); /* pageable copies may land after the call returns */
}

/* NaN everywhere (0x7FBADBAD for i32). */
static void
tens_poison(Tens *t)
{
	if (t->dt == DT_I32)
		CU(cuMemsetD32(t->d, 0x7FBADBAD, (size_t)t->n));
	else
		CU(cuMemsetD8(t->d, 0xFF, (size_t)t->n * ty_dtypes[t->dt].size));
	CU(cuCtxSynchronize()); /* kernels run on non-blocking streams */
}

static void
tens_fetch(Tens *t)
{
	CU(cuMemcpyDtoH(t->h, t->d, (size_t)t->n * ty_dtypes[t->dt].size));
}

static void
tens_free(Tens *t)
{
	free(t->h);
	CU(cuMemFree(t->d));
}

static bool
is_poison(DType dt, const void *h, int64_t i)
{
	switch (ty_dtypes[dt].size) {
	case 2: return ((const uint16_t *)h)[i] == 0xFFFF;
	default: return dt == DT_I32 ? ((const int32_t *)h)[i] == 0x7FBADBAD : ((const uint32_t *)h)[i] == 0xFFFFFFFFu;
	}
}

static double
tol_of(DType dt)
{
	switch (dt) {
	case DT_F32: return 1e-5;
	case DT_F16: return 2e-3;
	case DT_BF16: return 1e-2;
	default: return 1e-3;
	}
}

/* ref[i] is the expected value of element i, NaN where the buffer is not
 * part of the output (it must keep its poison). */
static bool compare_tol(const char *name, const Tens *out, const double *ref, double tol);

static bool
compare(const char *name, const Tens *out, const double *ref)
{
	return compare_tol(name, out, ref, tol_of(out->dt));
}

static bool
compare_tol(const char *name, const Tens *out, const double *ref, double tol)
{
	double num = 0, den = 0, maxabs = 0, rel;
	int64_t n = 0, nonfinite = 0, clobbered = 0, shown = 0;
	for (int64_t i = 0; i < out->n; i++) {
		if (isnan(ref[i])) {
			clobbered += !is_poison(out->dt, out->h, i);
			continue;
		}
		double g = ptx_load(out->dt, out->h, i), d = g - ref[i];
		n++;
		if (!isfinite(g) || (out->dt == DT_I32 && is_poison(out->dt, out->h, i))) {
			if (shown++ < 5)
				printf("    element %lld not written or not finite: got %g want %g\n", (long long)i, g, ref[i]);
			nonfinite++;
			continue;
		}
		num += d * d;
		den += ref[i] * ref[i];
		if (fabs(d) > maxabs)
			maxabs = fabs(d);
	}
	rel = den > 0 ? sqrt(num / den) : sqrt(num);
	bool ok = nonfinite == 0 && clobbered == 0 && n > 0 && rel <= tol;
	printf("CASE %s: rel=%.3e maxabs=%.3e n=%lld nonfinite=%lld clobbered=%lld tol=%.0e %s\n", name, rel, maxabs,
	       (long long)n, (long long)nonfinite, (long long)clobbered, tol, ok ? "PASS" : "FAIL");
	if (!ok) {
		failures++;
		/* where the first wrong elements are */
		int64_t k = 0;
		for (int64_t i = 0; i < out->n && k < 8; i++) {
			if (isnan(ref[i]))
				continue;
			double g = ptx_load(out->dt, out->h, i);
			if (!(fabs(g - ref[i]) <= 8 * tol * (1 + fabs(ref[i])))) {
				printf("    bad element %lld: got %.6g want %.6g\n", (long long)i, g, ref[i]);
				k++;
			}
		}
	}
	fflush(stdout);
	return ok;
}

static double *
ref_new(int64_t n)
{
	double *r = malloc((size_t)n * sizeof *r);
	for (int64_t i = 0; i < n; i++)
		r[i] = NAN;
	return r;
}

/* ---- parallel loops for the references ---- */

typedef struct Par {
	void (*fn)(void *, int64_t);
	void *arg;
	int64_t n, next;
	pthread_mutex_t mu;
} Par;

static void *
par_worker(void *v)
{
	Par *p = v;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		int64_t i = p->next++;
		pthread_mutex_unlock(&p->mu);
		if (i >= p->n)
			return NULL;
		p->fn(p->arg, i);
	}
}

static void
par_for(int64_t n, void (*fn)(void *, int64_t), void *arg)
{
	Par p = {fn, arg, n, 0, PTHREAD_MUTEX_INITIALIZER};
	long nt = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t th[64];
	if (nt < 1)
		nt = 1;
	if (nt > 64)
		nt = 64;
	for (long i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, par_worker, &p);
	for (long i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
}

static double
now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static CUdeviceptr
upload_blocks(const PtxBlock *b, int64_t n)
{
	CUdeviceptr d;
	CU(cuMemAlloc(&d, (size_t)n * sizeof *b));
	CU(cuMemcpyHtoD(d, b, (size_t)n * sizeof *b));
	CU(cuCtxSynchronize());
	return d;
}

/* The block list a kernel runs when nothing waits: its natural order. */
static CUdeviceptr
plain_blocks(int64_t n)
{
	PtxBlock *b = calloc((size_t)n, sizeof *b);
	for (int64_t i = 0; i < n; i++)
		b[i] = (PtxBlock){.x = (uint32_t)i, .in_flag = PTX_NO_FLAG, .out_flag = PTX_NO_FLAG};
	CUdeviceptr d = upload_blocks(b, n);
	free(b);
	return d;
}

/* ---- matmul ---- */

typedef struct MmCase {
	PtxMatmulSpec s;
	int shift;        /* elements the last input's view starts into its buffer */
	Tens a, b, in[PTX_MAX_TENSORS], out[PTX_MAX_TENSORS];
	double *ad, *btd; /* A and B^T as doubles, batch-major */
	double *ref[PTX_MAX_TENSORS];
} MmCase;

static int64_t
lda_of(const PtxMatmulSpec *s)
{
	return s->lda ? s->lda : s->k;
}

static int64_t
ldb_of(const PtxMatmulSpec *s)
{
	return s->ldb ? s->ldb : s->bt ? s->k : s->n;
}

/* Elements the buffers must hold for the strides and shape. */
static int64_t
extent(const PtxTensor *t, int64_t nb, int64_t m, int64_t n)
{
	return (nb - 1) * t->stride[0] + (m - 1) * t->stride[1] + (n - 1) * t->stride[2] + 1;
}

static double
mm_acc(MmCase *c, int64_t z, int64_t r, int64_t col)
{
	const PtxMatmulSpec *s = &c->s;
	const double *a = c->ad + (z * s->m + r) * s->k, *b = c->btd + (z * s->n + col) * s->k;
	double acc = 0;
	for (int64_t k = 0; k < s->k; k++)
		acc += a[k] * b[k];
	return acc;
}

static void
mm_ref_elem(MmCase *c, int64_t z, int64_t r, int64_t col, double *outv)
{
	const PtxMatmulSpec *s = &c->s;
	double in[PTX_MAX_TENSORS] = {0}, val[PTX_MAX_INS];
	DType indt[PTX_MAX_TENSORS] = {0};
	double acc = mm_acc(c, z, r, col);
	if (!s->epi.nins) {
		outv[0] = acc;
		return;
	}
	for (int i = 0; i < s->nin; i++) {
		const int64_t *st = s->in[i].stride;
		in[i] = ptx_load(s->in[i].dt, c->in[i].h, (i == s->nin - 1 ? c->shift : 0) + z * st[0] + r * st[1] + col * st[2]);
		indt[i] = s->in[i].dt;
	}
	ptx_prog_eval(&s->epi, indt, in, acc, NULL, val);
	for (int j = 0; j < s->epi.nout; j++)
		outv[s->epi.out[j].tensor] = val[s->epi.out[j].val];
}

static void
mm_ref_row(void *v, int64_t zr)
{
	MmCase *c = v;
	const PtxMatmulSpec *s = &c->s;
	int64_t z = zr / s->m, r = zr % s->m;
	double o[PTX_MAX_TENSORS];
	for (int64_t col = 0; col < s->n; col++) {
		mm_ref_elem(c, z, r, col, o);
		for (int j = 0; j < s->nout; j++) {
			const int64_t *st = s->out[j].stride;
			c->ref[j][z * st[0] + r * st[1] + col * st[2]] = o[j];
		}
	}
}

/* Random A, B (and epilogue inputs) of the spec's shapes on host and device. */
static void
mm_data(MmCase *c)
{
	PtxMatmulSpec *s = &c->s;
	int64_t lda = lda_of(s), ldb = ldb_of(s);
	int64_t na = (s->batch - 1) * s->batch_a + (s->m - 1) * lda + s->k;
	int64_t nb = (s->batch - 1) * s->batch_b + (s->bt ? (s->n - 1) * ldb + s->k : (s->k - 1) * ldb + s->n);
	c->a = tens_new(s->ab, na);
	c->b = tens_new(s->ab, nb);
	tens_random(&c->a, 1.0);
	tens_random(&c->b, 1.0);
	for (int i = 0; i < s->nin; i++) {
		c->in[i] = tens_new(s->in[i].dt, extent(&s->in[i], s->batch, s->m, s->n) + (i == s->nin - 1 ? c->shift : 0));
		tens_random(&c->in[i], 1.0);
	}
	for (int j = 0; j < s->nout; j++)
		c->out[j] = tens_new(s->out[j].dt, extent(&s->out[j], s->batch, s->m, s->n));
}

static void
mm_host_operands(MmCase *c)
{
	PtxMatmulSpec *s = &c->s;
	int64_t lda = lda_of(s), ldb = ldb_of(s);
	c->ad = malloc((size_t)(s->batch * s->m * s->k) * sizeof(double));
	c->btd = malloc((size_t)(s->batch * s->n * s->k) * sizeof(double));
	for (int64_t z = 0; z < s->batch; z++)
		for (int64_t r = 0; r < s->m; r++)
			for (int64_t k = 0; k < s->k; k++)
				c->ad[(z * s->m + r) * s->k + k] = ptx_load(s->ab, c->a.h, z * s->batch_a + r * lda + k);
	for (int64_t z = 0; z < s->batch; z++)
		for (int64_t k = 0; k < s->k; k++)
			for (int64_t col = 0; col < s->n; col++)
				c->btd[(z * s->n + col) * s->k + k] =
				    ptx_load(s->ab, c->b.h, z * s->batch_b + (s->bt ? col * ldb + k : k * ldb + col));
}

static void
mm_free(MmCase *c)
{
	tens_free(&c->a);
	tens_free(&c->b);
	for (int i = 0; i < c->s.nin; i++)
		tens_free(&c->in[i]);
	for (int j = 0; j < c->s.nout; j++) {
		tens_free(&c->out[j]);
		free(c->ref[j]);
	}
	free(c->ad);
	free(c->btd);
}

static void
mm_fill_launch(MmCase *c, Launch *l)
{
	l->t[0] = c->a.d;
	l->t[1] = c->b.d;
	for (int i = 0; i < c->s.nin; i++)
		l->t[2 + i] = c->in[i].d + (i == c->s.nin - 1 ? (CUdeviceptr)c->shift * ty_dtypes[c->s.in[i].dt].size : 0);
	for (int j = 0; j < c->s.nout; j++)
		l->t[2 + c->s.nin + j] = c->out[j].d;
}

static int mm_calls = 1; /* launches of each mm_run, the output poisoned before each */
static double mm_elem_tol; /* > 0: mm_run also checks every element (elem_check) */

/* Every element within tol (1 + |want|) of its reference: a norm over the
 * output hides a few wrong chunks, and a tail run on some of the staged
 * tile but not all would leave just that. */
static void
elem_check(const char *name, const Tens *out, const double *ref, double tol)
{
	int64_t bad = 0, worst = -1;
	double wd = 0;
	for (int64_t i = 0; i < out->n; i++) {
		if (isnan(ref[i]))
			continue;
		double d = fabs(ptx_load(out->dt, out->h, i) - ref[i]) / (1 + fabs(ref[i]));
		if (!(d <= tol)) {
			bad++;
			if (!(d <= wd))
				wd = d, worst = i;
		}
	}
	printf("CASE %s/elem: %s (%lld elements off by more than %.0e (1 + |want|)", name, bad ? "FAIL" : "PASS",
	       (long long)bad, tol);
	if (worst >= 0)
		printf("; worst %lld: got %.6g want %.6g", (long long)worst, ptx_load(out->dt, out->h, worst), ref[worst]);
	printf(")\n");
	failures += bad > 0;
}

/* A kernel with a workspace leaves its counters (its first `bytes`) at 0
 * for the next launch; `what` describes them before the workspace size. */
static void
work_counters_zero(const char *name, const Kern *k, size_t bytes, const char *what)
{
	uint32_t *w = malloc(bytes), bad = 0;
	if (!w)
		abort();
	CU(cuMemcpyDtoH(w, k->work, bytes));
	for (size_t i = 0; i < bytes / 4; i++)
		bad += w[i] != 0;
	printf("CASE %s/counters: %s (%s%lld B workspace)\n", name, bad ? "FAIL: left nonzero" : "PASS", what,
	       (long long)k->k.work);
	failures += bad != 0;
	free(w);
}

/* A stream-K kernel's: the first 2 PTX_SK_CTAS words (codegen/wgmma.c). */
static void
sk_counters_zero(const char *name, const Kern *k)
{
	work_counters_zero(name, k, 2 * PTX_SK_CTAS * sizeof(uint32_t), "");
}

/* Runs a matmul spec on `grid` CTAs with a grouped block list and checks
 * every output element. */
static void
mm_run_shifted(const char *name, PtxMatmulSpec s, int grid, int shift)
{
	MmCase c = {.s = s, .shift = shift};
	Buf b = {0};
	PtxKernel k;
	Launch l = {0};
	char what[128];
	double t0;

	printf("--- %s: matmul %s %lldx%lldx%lld batch %lld tile %s grid %d\n", name, ty_dtypes[s.ab].name,
	       (long long)s.m, (long long)s.n, (long long)s.k, (long long)s.batch, ptx_tiles[s.tile].name, grid);
	ptx_emit_matmul(&b, &c.s, &k);
	Kern kr = kern_load(&b, &k);
	mm_data(&c);
	PtxBlock *bl = calloc((size_t)k.nblocks, sizeof *bl);
	ptx_matmul_blocks(&c.s, 4, bl);
	l.blocks = upload_blocks(bl, k.nblocks);
	l.nblocks = (uint32_t)k.nblocks;
	l.grid = grid;
	l.s = stream[0];
	mm_fill_launch(&c, &l);
	void *first[PTX_MAX_TENSORS] = {0};
	for (int call = 0; call < mm_calls; call++) {
		for (int j = 0; j < s.nout; j++)
			tens_poison(&c.out[j]);
		launch(&kr, &l);
		CU(cuStreamSynchronize(l.s));
		for (int j = 0; j < s.nout && call == 0 && mm_calls > 1; j++) { /* each call's bytes the same */
			size_t n = (size_t)c.out[j].n * ty_dtypes[c.out[j].dt].size;
			tens_fetch(&c.out[j]);
			first[j] = malloc(n);
			memcpy(first[j], c.out[j].h, n);
		}
	}
	for (int j = 0; j < s.nout; j++)
		tens_fetch(&c.out[j]);
	for (int j = 0; j < s.nout && mm_calls > 1; j++) {
		bool same = !memcmp(first[j], c.out[j].h, (size_t)c.out[j].n * ty_dtypes[c.out[j].dt].size);
		printf("CASE %s/out%d/repeat: %s\n", name, j, same ? "PASS (both calls bit for bit)" : "FAIL: calls differ");
		failures += !same;
		free(first[j]);
	}
	if (ptx_tiles[s.tile].streamk)
		sk_counters_zero(name, &kr);
	t0 = now_s();
	mm_host_operands(&c);
	for (int j = 0; j < s.nout; j++)
		c.ref[j] = ref_new(c.out[j].n);
	par_for(s.batch * s.m, mm_ref_row, &c);
	printf("  reference: %.2f s\n", now_s() - t0);
	for (int j = 0; j < s.nout; j++) {
		snprintf(what, sizeof what, "%s/out%d", name, j);
		compare(what, &c.out[j], c.ref[j]);
		if (mm_elem_tol > 0)
			elem_check(what, &c.out[j], c.ref[j], mm_elem_tol);
	}
	CU(cuMemFree(l.blocks));
	free(bl);
	mm_free(&c);
	buf_free(&b);
	kern_unload(&kr);
}

static void
mm_run(const char *name, PtxMatmulSpec s, int grid)
{
	mm_run_shifted(name, s, grid, 0);
}

static PtxMatmulSpec
mm_spec(const char *name, DType ab, int64_t m, int64_t n, int64_t k, const char *tile, DType out)
{
	PtxMatmulSpec s = {.name = name, .ab = ab, .m = m, .n = n, .k = k, .batch = 1};
	s.tile = tile ? ptx_tile_byname(tile) : ptx_matmul_default_tile(&s);
	s.out[0] = (PtxTensor){out, {m * n, n, 1}};
	s.nout = 1;
	if (s.tile < 0) {
		printf("no tile %s\n", tile);
		exit(1);
	}
	return s;
}

static void
prog_or_die(PtxEwProg *g, const char *text)
{
	const char *why = ptx_prog_parse(g, text);
	if (why) {
		printf("bad program %s: %s\n", text, why);
		exit(1);
	}
}

static void
case_mm_1000(void)
{
	mm_run("mm_1000_bf16", mm_spec("mm_1000", DT_BF16, 1000, 1000, 1000, "128x256x32s4", DT_BF16), 5);
}

static void
case_mm_tiles(void)
{
	for (int t = 0; t < ptx_ntiles; t++) {
		char name[64];
		DType ab = ptx_tiles[t].kind == PTX_SIMT ? DT_F32 : DT_BF16;
		snprintf(name, sizeof name, "mm_tile_%s", ptx_tiles[t].name);
		mm_run(name, mm_spec("mm_tile", ab, 520, 776, 392, ptx_tiles[t].name, DT_F32), 17);
		if (ptx_tiles[t].kind != PTX_WGMMA)
			continue;
		/* a 16-bit output: the staged epilogue (whole, or in parts) */
		snprintf(name, sizeof name, "mm_tile_%s_bf16", ptx_tiles[t].name);
		mm_run(name, mm_spec("mm_tile", ab, 520, 776, 392, ptx_tiles[t].name, DT_BF16), 17);
	}
}

static void
case_mm_ragged(void)
{
	mm_run("mm_4097x511x263", mm_spec("mm_rag", DT_BF16, 4097, 511, 263, NULL, DT_F32), nsm);
	mm_run("mm_1x8x8", mm_spec("mm_tiny", DT_BF16, 1, 8, 8, "128x128x32s4", DT_F32), 1);
	mm_run("mm_17x33x100_f16", mm_spec("mm_small", DT_F16, 17, 33, 100, "128x128x64s3", DT_F16), 3);
	/* one operand by cp.async, the other element by element */
	mm_run("mm_640x333x256", mm_spec("mm_mixa", DT_BF16, 640, 333, 256, NULL, DT_BF16), 9);
	mm_run("mm_200x256x100", mm_spec("mm_mixb", DT_BF16, 200, 256, 100, NULL, DT_F32), 9);
}

/* Batched f16 chunks of bigger tensors: lda > k, batch strides, C with a
 * leading dimension 8 wider than n whose padding must stay untouched. */
static void
case_mm_batch(void)
{
	PtxMatmulSpec s = mm_spec("mm_batch", DT_F16, 300, 200, 136, "128x128x32s4", DT_F16);
	s.batch = 3;
	s.lda = 144;
	s.batch_a = 300 * 144 + 16;
	s.batch_b = 136 * 200;
	s.out[0] = (PtxTensor){DT_F16, {300 * 208, 208, 1}};
	mm_run("mm_batch_f16", s, 11);
}

/* 250x383x512 with ldb 384: tanh(acc + bias (row stride 0)) * 0.5 +
 * residual -> bf16, and sigmoid(acc) -> f32. */
static PtxMatmulSpec
epi_spec(const char *name, const char *tile)
{
	PtxMatmulSpec s = mm_spec(name, DT_BF16, 250, 383, 512, tile, DT_BF16);
	s.ldb = 384;
	s.in[0] = (PtxTensor){DT_BF16, {0, 0, 1}};
	s.in[1] = (PtxTensor){DT_F32, {0, 383, 1}};
	s.nin = 2;
	s.out[0] = (PtxTensor){DT_BF16, {0, 383, 1}};
	s.out[1] = (PtxTensor){DT_F32, {0, 383, 1}};
	s.nout = 2;
	prog_or_die(&s.epi, "out0=add(mul(tanh(add(acc,in0)),0.5),in1); out1=sigmoid(acc)");
	return s;
}

/* Whether the kernel of spec s says `text` (a header line of its PTX) as
 * the case expects: a case that silently took the other path would pass
 * its comparison as well.  what names the two paths. */
static void
path_check(const char *name, const PtxMatmulSpec *s, const char *text, bool want, const char *yes, const char *no)
{
	Buf b = {0};
	PtxKernel k;
	bool got;
	ptx_emit_matmul(&b, s, &k);
	got = strstr(b.s, text) != NULL;
	printf("CASE %s/path: %s (%s)\n", name, got == want ? "PASS" : "FAIL", got ? yes : no);
	failures += got != want;
	buf_free(&b);
}

/* Whether the kernel of spec s reads its residual from the staged tile. */
static void
src_path_check(const char *name, const PtxMatmulSpec *s, bool want)
{
	path_check(name, s, "read from the staged tile", want, "staged tile", "global loads");
}

/* Whether the wgmma kernel of s loads its bias ahead (ptx_mm_epi_prefetch). */
static void
pre_path_check(const char *name, const PtxMatmulSpec *s, bool want)
{
	path_check(name, s, "constant along rows, loaded while the last MMAs run", want, "bias ahead",
	           "bias in the epilogue");
}

/* bias (row stride 0) + residual, tanh, two outputs of different types;
 * a bias on every wgmma tile, loaded ahead (ptx_mm_epi_prefetch) and in
 * the epilogue. */
static void
case_mm_epi(void)
{
	PtxMatmulSpec s = epi_spec("mm_epi", "128x256x32s4");
	mm_run("mm_epi_bias_res_tanh", s, 7);
	s = mm_spec("mm_epi2", DT_BF16, 512, 512, 512, NULL, DT_I32);
	s.in[0] = (PtxTensor){DT_F32, {0, 1, 0}};
	s.nin = 1;
	prog_or_die(&s.epi, "cast_i32(mul(add(acc,in0),4.0))");
	mm_run("mm_epi_rowscale_i32", s, nsm);
	/* a bias on every wgmma tile (the cluster tile, the staging in halves,
	 * the 128x64 tile), batches with a bias each (the entry's z), ragged
	 * m, outputs staged and from registers */
	static const char *const tiles[] = {"wg128x256x64s3", "wg128x256x64s4", "wg128x128x64s6", "wg128x64x64s8",
	                                    "wg256x256x64s3c2"};
	for (size_t t = 0; t < NELEM(tiles); t++)
		for (int f32 = 0; f32 < 2; f32++) {
			char name[80];
			s = mm_spec("mm_epi_bias", DT_BF16, 1000, 1024, 520, tiles[t], f32 ? DT_F32 : DT_BF16);
			s.batch = 2;
			s.batch_a = 1000 * 520;
			s.batch_b = 520 * 1024;
			s.out[0].stride[0] = 1000 * 1024;
			s.in[0] = (PtxTensor){DT_BF16, {1024, 0, 1}};
			s.nin = 1;
			prog_or_die(&s.epi, "add(mul(sigmoid(add(acc,in0)),0.5),acc)");
			for (int late = 0; late < 2; late++) {
				s.pre_in = late ? -1 : 0;
				snprintf(name, sizeof name, "mm_epi_bias_%s%s%s", tiles[t], f32 ? "_f32" : "", late ? "_late" : "");
				pre_path_check(name, &s, !late && !f32); /* an f32 output is stored from registers */
				mm_run(name, s, 11);
			}
		}
	/* a tile that crosses n loads its bias in the epilogue, under guards,
	 * and so does a program with tanh (ptx_mm_epi_prefetch) */
	s = epi_spec("mm_epi_ragged", "wg128x256x64s3");
	pre_path_check("mm_epi_ragged_wg128x256x64s3", &s, false);
	mm_run("mm_epi_ragged_wg128x256x64s3", s, 7);
	s = mm_spec("mm_epi_tanh", DT_BF16, 1000, 1024, 520, "wg128x256x64s3", DT_BF16);
	s.in[0] = (PtxTensor){DT_BF16, {0, 0, 1}};
	s.nin = 1;
	prog_or_die(&s.epi, "add(mul(tanh(add(acc,in0)),0.5),acc)");
	pre_path_check("mm_epi_tanh_wg128x256x64s3", &s, false);
	mm_run("mm_epi_tanh_wg128x256x64s3", s, 11);
}

/* A residual the epilogue reads from the staged tile, where TMA loaded it
 * during the tile's k loop (codegen/wgmma.c wg_src_plan): every tile that
 * stages, after a bias (the residual is input 1), batches with their own
 * residual, a view with rows wider than n, an f16 residual beside a bf16
 * output, one k tile (the load at k tile 0) and two, few CTAs (many entries
 * each: the barriers' phases), a k loop of 32 tiles (the source tile's
 * boxes loaded k tiles apart: wgmma.c wg_src_at), one batch, two calls bit for bit, each
 * case checking which path its kernel takes (the 4-stage tile, staged in
 * halves, and the stream-K one read global memory); then the same
 * residual a view two elements off 16-byte alignment (this call reads it
 * from global memory, a pair at a time: the map left zeroed), and forced
 * to global memory. */
static void
case_mm_src(void)
{
	static const char *const tiles[] = {"wg128x256x64s3", "wg128x128x64s6", "wg128x64x64s8", "wg128x256x64s3r",
	                                    "wg128x256x64s4", "wg128x256x64s3k"};
	static const struct {
		int64_t m, k, ld;
		DType rdt;
		int grid, shift, force_global, single;
	} v[] = {{1000, 520, 1024, DT_BF16, 11, 0, 0, 0}, {1000, 520, 1024, DT_BF16, 3, 0, 0, 0},
	         {777, 64, 1088, DT_F16, 5, 0, 0, 0},    {520, 128, 1024, DT_BF16, 132, 0, 0, 0},
	         {1000, 520, 1088, DT_BF16, 7, 0, 0, 1}, {1000, 520, 1024, DT_BF16, 11, 2, 0, 0},
	         {1000, 520, 1024, DT_BF16, 11, 0, 1, 0}, {384, 2048, 1024, DT_BF16, 5, 0, 0, 0}};
	int saved = mm_calls;
	mm_calls = 2;
	for (size_t t = 0; t < NELEM(tiles); t++)
		for (size_t i = 0; i < NELEM(v); i++) {
			char name[96];
			PtxMatmulSpec s = mm_spec("mm_src", DT_BF16, v[i].m, 1024, v[i].k, tiles[t], DT_BF16);
			if (t && (v[i].shift || v[i].force_global || v[i].grid == 3))
				continue; /* the default tile alone */
			s.batch = 2;
			s.batch_a = v[i].m * v[i].k;
			s.batch_b = v[i].k * 1024;
			s.out[0].stride[0] = v[i].m * 1024;
			s.in[0] = (PtxTensor){DT_BF16, {1024, 0, 1}};
			s.in[1] = (PtxTensor){v[i].rdt, {v[i].m * v[i].ld, v[i].ld, 1}};
			s.nin = 2;
			s.src_smem = v[i].force_global ? -1 : 0;
			prog_or_die(&s.epi, "add(add(mul(acc,0.5),in0),in1)");
			if (v[i].single) { /* one batch: the map's batch stride is the whole residual */
				s.batch = 1;
				s.batch_a = s.batch_b = s.out[0].stride[0] = s.in[1].stride[0] = 0;
			}
			snprintf(name, sizeof name, "mm_src_%s_%lldx1024x%lld_ld%lld%s_grid%d%s%s%s", tiles[t], (long long)v[i].m,
			         (long long)v[i].k, (long long)v[i].ld, v[i].rdt == DT_F16 ? "_f16" : "", v[i].grid,
			         v[i].shift ? "_shifted" : "", v[i].force_global ? "_global" : "", v[i].single ? "_batch1" : "");
			src_path_check(name, &s, !v[i].force_global && t < 4);
			mm_run_shifted(name, s, v[i].grid, v[i].shift);
		}
	mm_calls = saved;
}

/* The epilogue's tail of special functions run by the producer's warps
 * 1-3 on the staged tile (codegen/wgmma.c wg_tail_plan), against the
 * consumers running it (PtxMatmulSpec.tail -1), every element checked
 * (elem_check): GELU of x @ w / 10 + b, rounded to bf16 where the tail
 * starts -- as the kernel rounds it, so the reference is exact to a
 * rounding and a tail run twice or not at all on any chunk is off by more
 * than the tolerance (values near 1, where GELU bends) -- on every tile
 * that stages whole (the 4-stage tile stages in halves: no tail but with
 * PtxMatmulSpec.tail 1, checked too), ragged
 * m and n (edges' zeros through the tail), few CTAs (many entries each:
 * the rings' phases; a CTA's last entry, where the consumers run it all),
 * a CTA an entry (only that), two calls bit for bit; a tanh tail of an f16
 * matmul; and where the tail stays with the consumers: a cast before it,
 * an output of another dtype, a residual read from the staged tile, a
 * short k, the cluster and stream-K tiles. */
#define TAIL_V "cast_f32(cast_bf16(add(mul(acc,0.1),in0)))"
static void
case_mm_tail(void)
{
	static const char *const gelu = "mul(" TAIL_V ",sigmoid(mul(1.5957691216057308,add(" TAIL_V ",mul(0.044715,mul(" TAIL_V
	                                ",mul(" TAIL_V "," TAIL_V ")))))))";
	static const char *const tiles[] = {"wg128x256x64s3", "wg128x256x64s4", "wg128x128x64s6", "wg128x64x64s8",
	                                    "wg256x256x64s3c2", "wg128x256x64s3k"};
	static const struct {
		int64_t m, n, k;
		int grid;
	} v[] = {{1000, 1024, 1040, 11}, {1000, 1000, 1040, 7}, {2048, 2048, 1024, 40}, {1000, 1024, 1040, 132}};
	static const char *const tail = "run by the producer's warps 1-3";
	int saved = mm_calls;
	mm_calls = 2;
	mm_elem_tol = 1e-2;
	for (size_t t = 0; t < NELEM(tiles); t++)
		for (size_t i = 0; i < NELEM(v); i++)
			for (int mode = 0; mode < 3; mode++) { /* tail 0, -1 (the consumers'), 1 (halves too) */
				static const char *const suffix[] = {"", "_consumers", "_halves"};
				char name[96];
				PtxMatmulSpec s = mm_spec("mm_tail", DT_BF16, v[i].m, v[i].n, v[i].k, tiles[t], DT_BF16);
				bool want = mode == 2 || (mode == 0 && t != 1 && t < 4);
				if ((mode == 1 && (t || i)) || (mode == 2 && t != 1))
					continue; /* the consumers' tail once; halves on the 4-stage tile */
				s.in[0] = (PtxTensor){DT_BF16, {0, 0, 1}};
				s.nin = 1;
				s.tail = mode == 1 ? -1 : mode == 2 ? 1 : 0;
				prog_or_die(&s.epi, gelu);
				snprintf(name, sizeof name, "mm_tail_%s_%lldx%lldx%lld_grid%d%s", tiles[t], (long long)v[i].m,
				         (long long)v[i].n, (long long)v[i].k, v[i].grid, suffix[mode]);
				path_check(name, &s, tail, want, "tail in warps 1-3", "tail in the consumers");
				mm_run(name, s, v[i].grid);
			}
	{
		PtxMatmulSpec s = mm_spec("mm_tail_f16", DT_F16, 1000, 1024, 1040, "wg128x256x64s3", DT_F16);
		s.in[0] = (PtxTensor){DT_F16, {0, 0, 1}};
		s.nin = 1;
		prog_or_die(&s.epi, "mul(add(tanh(cast_f32(cast_f16(add(mul(acc,0.1),in0)))),1.0),3.0)");
		path_check("mm_tail_f16_tanh", &s, tail, true, "tail in warps 1-3", "tail in the consumers");
		mm_run("mm_tail_f16_tanh", s, 11);
		s.ab = DT_BF16; /* the part before the tail on bf16, the output f16: no tail */
		s.in[0].dt = DT_BF16;
		s.out[0].dt = DT_F16;
		path_check("mm_tail_mixed", &s, tail, false, "tail in warps 1-3", "tail in the consumers");
		s = mm_spec("mm_tail_cast", DT_BF16, 1000, 1024, 1040, "wg128x256x64s3", DT_BF16);
		s.in[0] = (PtxTensor){DT_BF16, {0, 0, 1}};
		s.nin = 1;
		prog_or_die(&s.epi, "sigmoid(add(cast_f32(cast_bf16(acc)),in0))");
		path_check("mm_tail_cast", &s, tail, false, "tail in warps 1-3", "tail in the consumers");
		s.in[0] = (PtxTensor){DT_BF16, {1000 * 1024, 1024, 1}}; /* a residual, staged */
		prog_or_die(&s.epi, "sigmoid(add(acc,in0))");
		path_check("mm_tail_src", &s, tail, false, "tail in warps 1-3", "tail in the consumers");
		src_path_check("mm_tail_src", &s, true);
		s = mm_spec("mm_tail_short", DT_BF16, 1000, 1024, 520, "wg128x256x64s3", DT_BF16);
		prog_or_die(&s.epi, "sigmoid(acc)");
		path_check("mm_tail_short_k", &s, tail, false, "tail in warps 1-3", "tail in the consumers");
	}
	mm_elem_tol = 0;
	mm_calls = saved;
}

/* Fetches every output, compares it with its reference, frees it all. */
static void
check_and_free(const char *name, Tens *in, int nin, Tens *out, double **ref, int nout)
{
	char what[128];
	for (int j = 0; j < nout; j++) {
		tens_fetch(&out[j]);
		snprintf(what, sizeof what, "%s/out%d", name, j);
		compare(what, &out[j], ref[j]);
	}
	for (int i = 0; i < nin; i++)
		tens_free(&in[i]);
	for (int j = 0; j < nout; j++) {
		tens_free(&out[j]);
		free(ref[j]);
	}
}

/* ---- elementwise ---- */

typedef struct EwCase {
	PtxEwSpec s;
	Tens in[PTX_MAX_TENSORS], out[PTX_MAX_TENSORS];
	double *ref[PTX_MAX_TENSORS];
} EwCase;

static int64_t
ew_extent(const PtxEwSpec *s, const PtxTensor *t)
{
	int64_t e = 1;
	for (int d = 0; d < s->rank; d++)
		e += (s->dim[d] - 1) * t->stride[d];
	return e;
}

static void
ew_ref_elem(void *v, int64_t flat)
{
	EwCase *c = v;
	const PtxEwSpec *s = &c->s;
	int64_t coord[PTX_MAX_DIMS], rest = flat;
	double in[PTX_MAX_TENSORS] = {0}, val[PTX_MAX_INS];
	DType indt[PTX_MAX_TENSORS] = {0};
	for (int d = s->rank - 1; d >= 0; d--) {
		coord[d] = rest % s->dim[d];
		rest /= s->dim[d];
	}
	for (int i = 0; i < s->nin; i++) {
		int64_t off = 0;
		for (int d = 0; d < s->rank; d++)
			off += coord[d] * s->in[i].stride[d];
		in[i] = ptx_load(s->in[i].dt, c->in[i].h, off);
		indt[i] = s->in[i].dt;
	}
	ptx_prog_eval(&s->prog, indt, in, 0, NULL, val);
	for (int j = 0; j < s->prog.nout; j++) {
		int t = s->prog.out[j].tensor;
		int64_t off = 0;
		for (int d = 0; d < s->rank; d++)
			off += coord[d] * s->out[t].stride[d];
		c->ref[t][off] = val[s->prog.out[j].val];
	}
}

static void
ew_run(const char *name, PtxEwSpec s, int grid)
{
	EwCase c = {.s = s};
	Buf b = {0};
	PtxKernel k;
	Launch l = {0};
	int64_t total = 1;

	printf("--- %s: elementwise rank %d, grid %d\n", name, s.rank, grid);
	ptx_emit_ew(&b, &c.s, &k);
	Kern kr = kern_load(&b, &k);
	for (int d = 0; d < s.rank; d++)
		total *= s.dim[d];
	for (int i = 0; i < s.nin; i++) {
		c.in[i] = tens_new(s.in[i].dt, ew_extent(&s, &s.in[i]));
		tens_random(&c.in[i], 2.0);
		l.t[i] = c.in[i].d;
	}
	for (int j = 0; j < s.nout; j++) {
		c.out[j] = tens_new(s.out[j].dt, ew_extent(&s, &s.out[j]));
		tens_poison(&c.out[j]);
		l.t[s.nin + j] = c.out[j].d;
		c.ref[j] = ref_new(c.out[j].n);
	}
	l.blocks = plain_blocks(k.nblocks);
	l.nblocks = (uint32_t)k.nblocks;
	l.grid = grid;
	l.s = stream[0];
	launch(&kr, &l);
	CU(cuStreamSynchronize(l.s));
	par_for(total, ew_ref_elem, &c);
	check_and_free(name, c.in, s.nin, c.out, c.ref, s.nout);
	CU(cuMemFree(l.blocks));
	CU(cuModuleUnload(kr.mod));
	buf_free(&b);
}

static void
case_ew_bcast(void)
{
	PtxEwSpec s = {.name = "ew_bcast", .rank = 2, .dim = {1000, 777}, .nin = 2, .nout = 2};
	s.in[0] = (PtxTensor){DT_BF16, {777, 1}};
	s.in[1] = (PtxTensor){DT_BF16, {0, 1}};
	s.out[0] = (PtxTensor){DT_BF16, {777, 1}};
	s.out[1] = (PtxTensor){DT_F32, {777, 1}};
	s.block_elems = 777 * 16;
	prog_or_die(&s.prog, "out0=add(mul(sigmoid(in0),in1),tanh(in0)); out1=exp(in0)");
	ew_run("ew_bcast_bf16", s, 13);
}

static void
case_ew_ops(void)
{
	PtxEwSpec s = {.name = "ew_ops", .rank = 3, .dim = {7, 300, 129}, .nin = 3, .nout = 1};
	s.in[0] = (PtxTensor){DT_F16, {38700, 129, 1}};
	s.in[1] = (PtxTensor){DT_F16, {129, 0, 1}};
	s.in[2] = (PtxTensor){DT_F32, {0, 0, 0}};
	s.out[0] = (PtxTensor){DT_F32, {38700, 129, 1}};
	prog_or_die(&s.prog, "div(add(log(add(abs(in0),1)),rsqrt(add(abs(in1),0.5))),"
	                     "max(sqrt(abs(in2)),min(neg(in0),cast_bf16(in1))))");
	ew_run("ew_all_ops_f16_f32", s, 32);
	/* the big-|x| and small-|x| branches of tanh and sigmoid, exp, neg */
	PtxEwSpec t = {.name = "ew_tanh", .rank = 1, .dim = {100000}, .nin = 1, .nout = 3};
	t.in[0] = (PtxTensor){DT_F32, {1}};
	t.out[0] = (PtxTensor){DT_F32, {1}};
	t.out[1] = (PtxTensor){DT_F32, {1}};
	t.out[2] = (PtxTensor){DT_F32, {1}};
	prog_or_die(&t.prog, "out0=tanh(mul(in0,3.0)); out1=sigmoid(mul(in0,8.0)); out2=exp(neg(in0))");
	ew_run("ew_tanh_sigmoid_f32", t, 50);
}

static void
case_ew_int(void)
{
	PtxEwSpec s = {.name = "ew_int", .rank = 1, .dim = {4096}, .nin = 2, .nout = 2};
	s.in[0] = (PtxTensor){DT_I32, {1}};
	s.in[1] = (PtxTensor){DT_I32, {1}};
	s.out[0] = (PtxTensor){DT_I32, {1}};
	s.out[1] = (PtxTensor){DT_F32, {1}};
	s.block_elems = 1024;
	prog_or_die(&s.prog, "out0=max(mul(in0,in1),add(in0,3i)); out1=cast_f32(sub(in0,in1))");
	ew_run("ew_i32", s, 3);
}

/* A transposed input (inner stride 33): scalar path. */
static void
case_ew_strided(void)
{
	PtxEwSpec s = {.name = "ew_strided", .rank = 2, .dim = {33, 65}, .nin = 1, .nout = 1};
	s.in[0] = (PtxTensor){DT_F32, {1, 33}};
	s.out[0] = (PtxTensor){DT_BF16, {65, 1}};
	s.block_elems = 100;
	prog_or_die(&s.prog, "abs(in0)");
	ew_run("ew_transposed", s, 4);
}

/* ---- rows ---- */

typedef struct RowsCase {
	PtxRowsSpec s;
	Tens in[PTX_MAX_TENSORS], out[PTX_MAX_TENSORS];
	double *ref[PTX_MAX_TENSORS];
	int64_t shift[PTX_MAX_TENSORS]; /* input i starts this many elements into its buffer */
} RowsCase;

static double
rows_in(RowsCase *c, int i, int64_t r, int64_t col)
{
	return ptx_load(c->s.in[i].dt, c->in[i].h, c->shift[i] + r * c->s.in[i].stride[0] + col * c->s.in[i].stride[1]);
}

static void
rows_ref_row(void *v, int64_t r)
{
	RowsCase *c = v;
	const PtxRowsSpec *s = &c->s;
	double stage[PTX_MAX_STAGES] = {0}, in[PTX_MAX_TENSORS], val[PTX_MAX_INS];
	DType indt[PTX_MAX_TENSORS];
	for (int i = 0; i < s->nin; i++)
		indt[i] = s->in[i].dt;
	for (int k = 0; k < s->nstage; k++) {
		const PtxRowStage *st = &s->stage[k];
		double acc = st->red == OP_AMAX ? -INFINITY : st->red == OP_AMIN ? INFINITY : 0;
		for (int64_t col = 0; col < s->len; col++) {
			double x;
			for (int i = 0; i < s->nin; i++)
				in[i] = rows_in(c, i, r, col);
			if (st->pre.nins) {
				ptx_prog_eval(&st->pre, indt, in, 0, stage, val);
				x = val[st->pre.out[0].val];
			} else
				x = in[0];
			acc = st->red == OP_AMAX ? fmax(acc, x) : st->red == OP_AMIN ? fmin(acc, x) : acc + x;
		}
		if (st->red == OP_MEAN)
			acc /= (double)s->len;
		if (st->post.nins) {
			for (int i = 0; i < s->nin; i++)
				in[i] = rows_in(c, i, r, 0);
			ptx_prog_eval(&st->post, indt, in, acc, stage, val);
			acc = val[st->post.out[0].val];
		}
		stage[k] = acc;
		if (st->out >= 0)
			c->ref[st->out][r * s->out[st->out].stride[0]] = acc;
	}
	for (int64_t col = 0; s->map.nout && col < s->len; col++) {
		for (int i = 0; i < s->nin; i++)
			in[i] = rows_in(c, i, r, col);
		ptx_prog_eval(&s->map, indt, in, 0, stage, val);
		for (int j = 0; j < s->map.nout; j++) {
			const PtxTensor *t = &s->out[s->map.out[j].tensor];
			c->ref[s->map.out[j].tensor][r * t->stride[0] + col * t->stride[1]] = val[s->map.out[j].val];
		}
	}
}

/* A group kernel leaves its workspace's counters at 0 for the next
 * launch: PTX_GROUP_WORDS u32 a group slot, GROUP_CTAS (1024) / group slots but no
 * more than the blocks, 256-byte aligned, before the partials (rows.c
 * group_slots, group_counter_bytes). */
static void
group_counters_zero(const char *name, const Kern *k)
{
	int64_t slots = 1024 / k->k.group < k->k.nblocks ? 1024 / k->k.group : k->k.nblocks;
	char what[96];
	snprintf(what, sizeof what, "%lld group slots of up to %d CTAs, ", (long long)slots, k->k.group);
	work_counters_zero(name, k, (size_t)slots * PTX_GROUP_WORDS * 4, what);
}

/* ptx_emit_rows, with COL_CACHE (-1, 1 or 2) from the environment put
 * in the spec -- every column case then runs with the block held in
 * shared memory (rows.c col_cache_plan), or without; 2, the next entry's
 * copied in meanwhile, only where the case raises no flags (flags: it
 * does). */
static void
emit_rows(Buf *b, const PtxRowsSpec *s0, PtxKernel *k, bool flags)
{
	PtxRowsSpec s = *s0;
	const char *e = getenv("COL_CACHE");
	if (e && *e && !s.col_cache) {
		s.col_cache = atoi(e);
		if (s.col_cache == 2 && !flags)
			s.flagless = true;
	}
	ptx_emit_rows(b, &s, k);
}

/* shift1: input 1 starts that many elements into its buffer (a view
 * misaligned unlike input 0). */
static void
rows_run_shifted(const char *name, PtxRowsSpec s, int grid, int64_t shift1)
{
	RowsCase c = {.s = s, .shift = {0, shift1}};
	Buf b = {0};
	PtxKernel k;
	Launch l = {0};

	printf("--- %s: rows %lld x %lld, %d stages, grid %d\n", name, (long long)s.rows, (long long)s.len, s.nstage,
	       grid);
	emit_rows(&b, &c.s, &k, false);
	bool online = b.s && strstr(b.s, "a max and the sum of exps") != NULL;
	Kern kr = kern_load(&b, &k);
	for (int i = 0; i < s.nin; i++) {
		const int64_t *st = s.in[i].stride;
		c.in[i] = tens_new(s.in[i].dt, c.shift[i] + (s.rows - 1) * st[0] + (s.len - 1) * st[1] + 1);
		tens_random(&c.in[i], 3.0);
		l.t[i] = c.in[i].d + (CUdeviceptr)c.shift[i] * ty_dtypes[s.in[i].dt].size;
	}
	for (int j = 0; j < s.nout; j++) {
		const int64_t *st = s.out[j].stride;
		c.out[j] = tens_new(s.out[j].dt, (s.rows - 1) * st[0] + (st[1] ? (s.len - 1) * st[1] : 0) + 1);
		tens_poison(&c.out[j]);
		l.t[s.nin + j] = c.out[j].d;
		c.ref[j] = ref_new(c.out[j].n);
	}
	l.blocks = plain_blocks(k.nblocks);
	l.nblocks = (uint32_t)k.nblocks;
	l.grid = grid;
	l.s = stream[0];
	for (int rep = 0; rep < (k.group > 1 ? 2 : 1); rep++) /* a group's second launch finds its counters at 0 */
		launch(&kr, &l);
	CU(cuStreamSynchronize(l.s));
	if (k.group > 1)
		group_counters_zero(name, &kr);
	par_for(s.rows, rows_ref_row, &c);
	check_and_free(name, c.in, s.nin, c.out, c.ref, s.nout);
	CU(cuMemFree(l.blocks));
	kern_unload(&kr);
	buf_free(&b);
	if (!s.flagless && !(s.in[0].stride[1] > 1 && s.in[0].stride[0] == 1)) {
		/* the same entries without the barriers between them (lower.c's
		 * kernels with no flags): warps a row ahead of others */
		char nm[160];
		snprintf(nm, sizeof nm, "%s/flagless", name);
		s.flagless = true;
		rows_run_shifted(nm, s, grid, shift1);
	}
	if (!online && !s.online && s.in[0].stride[1] > 1 && s.in[0].stride[0] == 1) {
		/* softmax's pair in one pass where the size rule keeps two (an
		 * input L2 holds): the one pass's code on these odd shapes too */
		PtxRowsSpec o = s;
		Buf ob = {0};
		PtxKernel ok;
		o.online = 1;
		emit_rows(&ob, &o, &ok, false);
		if (ob.s && strstr(ob.s, "a max and the sum of exps")) {
			char nm[160];
			snprintf(nm, sizeof nm, "%s/online", name);
			rows_run_shifted(nm, o, grid, shift1);
		}
		buf_free(&ob);
	}
}

static void
rows_run(const char *name, PtxRowsSpec s, int grid)
{
	rows_run_shifted(name, s, grid, 0);
}

static PtxRowStage
stage_of(int red, const char *pre, const char *post, int out)
{
	PtxRowStage st = {.red = red, .out = out};
	if (pre)
		prog_or_die(&st.pre, pre);
	if (post)
		prog_or_die(&st.post, post);
	return st;
}

/* The row ops the cases and perf_rows build, on contiguous rows of dt. */
static PtxRowsSpec
softmax_spec(const char *name, int64_t rows, int64_t len, DType dt)
{
	PtxRowsSpec s = {.name = name, .rows = rows, .len = len, .nin = 1, .nout = 1, .nstage = 2};
	s.in[0] = (PtxTensor){dt, {len, 1}};
	s.out[0] = (PtxTensor){dt, {len, 1}};
	s.stage[0] = stage_of(OP_AMAX, NULL, NULL, -1);
	s.stage[1] = stage_of(OP_SUM, "exp(sub(in0,stage0))", NULL, -1);
	prog_or_die(&s.map, "div(exp(sub(in0,stage0)),stage1)");
	return s;
}

/* x * rsqrt(mean(x * x) + eps) * g, g shared by every row. */
static PtxRowsSpec
rmsnorm_spec(const char *name, int64_t rows, int64_t len, DType dt, const char *post)
{
	PtxRowsSpec s = {.name = name, .rows = rows, .len = len, .nin = 2, .nout = 1, .nstage = 1};
	s.in[0] = (PtxTensor){dt, {len, 1}};
	s.in[1] = (PtxTensor){dt, {0, 1}};
	s.out[0] = (PtxTensor){dt, {len, 1}};
	s.stage[0] = stage_of(OP_MEAN, "mul(in0,in0)", post, -1);
	prog_or_die(&s.map, "mul(mul(in0,stage0),in1)");
	return s;
}

/* layernorm(x + res) * g + b, res of dtype rdt streamed beside x, the
 * rows' mean and 1/std as outputs 1 and 2. */
static PtxRowsSpec
ln_residual_spec(const char *name, int64_t rows, int64_t len, DType dt, DType rdt)
{
	PtxRowsSpec s = {.name = name, .rows = rows, .len = len, .nin = 4, .nout = 3, .nstage = 2};
	s.in[0] = (PtxTensor){dt, {len, 1}};
	s.in[1] = (PtxTensor){rdt, {len, 1}};
	s.in[2] = (PtxTensor){dt, {0, 1}};
	s.in[3] = (PtxTensor){dt, {0, 1}};
	s.out[0] = (PtxTensor){dt, {len, 1}};
	s.out[1] = (PtxTensor){DT_F32, {1, 0}};
	s.out[2] = (PtxTensor){DT_F32, {1, 0}};
	s.stage[0] = stage_of(OP_MEAN, "add(in0,in1)", NULL, 1);
	s.stage[1] = stage_of(OP_MEAN, "mul(sub(add(in0,in1),stage0),sub(add(in0,in1),stage0))", "rsqrt(add(acc,1e-5))", 2);
	prog_or_die(&s.map, "add(mul(mul(sub(add(in0,in1),stage0),stage1),in2),in3)");
	return s;
}

static void
case_rows_softmax(void)
{
	rows_run("rows_softmax_bf16", softmax_spec("softmax", 512, 1000, DT_BF16), 20);
}

static void
case_rows_layernorm(void)
{
	PtxRowsSpec s = {.name = "layernorm", .rows = 300, .len = 4096, .nin = 3, .nout = 3, .nstage = 2};
	s.in[0] = (PtxTensor){DT_F16, {4096, 1}};
	s.in[1] = (PtxTensor){DT_F16, {0, 1}};
	s.in[2] = (PtxTensor){DT_F16, {0, 1}};
	s.out[0] = (PtxTensor){DT_F16, {4096, 1}};
	s.out[1] = (PtxTensor){DT_F32, {1, 0}};
	s.out[2] = (PtxTensor){DT_F32, {1, 0}};
	s.stage[0] = stage_of(OP_MEAN, NULL, NULL, 1);
	s.stage[1] = stage_of(OP_MEAN, "mul(sub(in0,stage0),sub(in0,stage0))", "rsqrt(add(acc,1e-5))", 2);
	prog_or_die(&s.map, "add(mul(mul(sub(in0,stage0),stage1),in1),in2)");
	rows_run("rows_layernorm_f16", s, 30);
}

static void
case_rows_rmsnorm(void)
{
	PtxRowsSpec s = rmsnorm_spec("rmsnorm", 1000, 333, DT_BF16, "rsqrt(add(acc,1e-6))");
	s.rows_per_block = 16;
	rows_run("rows_rmsnorm_bf16", s, 9);
}

static void
case_rows_reduce(void)
{
	PtxRowsSpec s = {.name = "reduce", .rows = 2000, .len = 77, .nin = 1, .nout = 2, .nstage = 2};
	s.in[0] = (PtxTensor){DT_F32, {77, 1}};
	s.out[0] = (PtxTensor){DT_F32, {1, 0}};
	s.out[1] = (PtxTensor){DT_F32, {1, 0}};
	s.stage[0] = stage_of(OP_SUM, NULL, NULL, 0);
	s.stage[1] = stage_of(OP_AMIN, NULL, NULL, 1);
	rows_run("rows_sum_min_f32", s, 40);
}

/* CTA mode (rows of 2048 elements or more: a CTA per row, the streamed
 * inputs held in registers): a vocabulary-wide rmsnorm (1024 threads x 7
 * vectors), a softmax on rows whose last vector is partial (8200 = 1025
 * vectors of 8: threads past the end), a layernorm with a second streamed
 * input (a residual) and per-row outputs, and an odd length (peeled:
 * case_rows_peel). */
static void
case_rows_wide(void)
{
	PtxRowsSpec s = rmsnorm_spec("wide_rms", 70, 50304, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.rows_per_block = 7;
	rows_run("rows_wide_rmsnorm_bf16", s, 13);
	rows_run("rows_wide_softmax_bf16_partial", softmax_spec("wide_softmax", 99, 8200, DT_BF16), 20);
	rows_run("rows_wide_layernorm_residual", ln_residual_spec("wide_ln", 257, 8192, DT_BF16, DT_F32), 40);
	rows_run("rows_odd_softmax_bf16", softmax_spec("odd_softmax", 33, 50257, DT_BF16), 9);
}

/* The row op `op` (rmsnorm, layernorm: x only, no per-row outputs, or
 * softmax) over the last dim of bf16 M x L. */
static PtxRowsSpec
row_op_spec(const char *op, int64_t M, int64_t L)
{
	PtxRowsSpec s;
	if (!strcmp(op, "rmsnorm"))
		return rmsnorm_spec("perf_rows", M, L, DT_BF16, "rsqrt(add(acc,1e-5))");
	if (strcmp(op, "layernorm"))
		return softmax_spec("perf_rows", M, L, DT_BF16);
	s = (PtxRowsSpec){.name = "perf_rows", .rows = M, .len = L, .nin = 3, .nout = 1, .nstage = 2};
	s.in[0] = s.out[0] = (PtxTensor){DT_BF16, {L, 1}};
	s.in[1] = s.in[2] = (PtxTensor){DT_BF16, {0, 1}};
	s.stage[0] = stage_of(OP_MEAN, NULL, NULL, -1);
	s.stage[1] = stage_of(OP_MEAN, "mul(sub(in0,stage0),sub(in0,stage0))", "rsqrt(add(acc,1e-5))", -1);
	prog_or_die(&s.map, "add(mul(mul(sub(in0,stage0),stage1),in1),in2)");
	return s;
}

/* CTA mode on rows whose length breaks vector alignment (codegen/rows.c
 * peel_vec): each row's vectors start after a head of 0-7 elements that
 * varies row by row.  An odd-width rmsnorm with its weight (loaded element
 * by element: it does not shift with the row) and 5 rows a block; f32
 * rows (vectors of 4); a layernorm with a streamed residual at a length of
 * 2 mod 8 (vectors of 2 before), and the same with the residual a view
 * misaligned unlike the row (element by element); an odd row too long for
 * registers (the reread loop, peeled). */
static void
case_rows_peel(void)
{
	PtxRowsSpec s = rmsnorm_spec("peel_rms", 37, 50257, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.rows_per_block = 5;
	rows_run("rows_peel_rmsnorm_bf16", s, 7);
	rows_run("rows_peel_softmax_f32", softmax_spec("peel_sm32", 21, 4099, DT_F32), 9);
	s = ln_residual_spec("peel_ln", 45, 8194, DT_F16, DT_F16);
	rows_run("rows_peel_layernorm_residual_f16", s, 11);
	/* the residual a view one element into its buffer: every row's
	 * pointers misaligned unlike each other, so element by element */
	rows_run_shifted("rows_peel_layernorm_residual_f16_shifted_view", s, 11, 1);
	rows_run("rows_peel_long_softmax_bf16", softmax_spec("peel_long", 9, 100003, DT_BF16), 4);
	/* the weights at a peeled row's columns, the map made once for any
	 * head (split_heads -1): two aligned vectors and the shift
	 * (load_shifted16), element by element at the weights' ends; a weight
	 * view 1 and 3 elements into its buffer (not 16-byte aligned itself),
	 * a layernorm's two weights at GPT-2's width */
	s = rmsnorm_spec("peel_rms", 37, 50257, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.rows_per_block = 5;
	s.split_heads = -1;
	rows_run_shifted("rows_peel_rmsnorm_bf16_weight_view1", s, 7, 1);
	rows_run_shifted("rows_peel_rmsnorm_bf16_weight_view3", s, 7, 3);
	s = row_op_spec("layernorm", 64, 50257);
	s.split_heads = -1;
	rows_run("rows_peel_layernorm_bf16", s, 9);
	s = row_op_spec("layernorm", 24, 8201);
	s.split_heads = -1;
	rows_run("rows_peel_layernorm_bf16_8201", s, 5);
	/* the map made once per head (split_heads 1, the default; rows.c cta_each_split):
	 * weights from global memory at every head, the weight view off
	 * 16-byte alignment (the run-time form), the weights copied into
	 * shared memory (flagless), one and two of them */
	s = row_op_spec("layernorm", 64, 50257);
	s.split_heads = 1;
	rows_run("rows_peel_heads_layernorm_bf16", s, 9);
	s = row_op_spec("layernorm", 24, 8201);
	s.split_heads = 1;
	rows_run("rows_peel_heads_layernorm_bf16_8201", s, 5);
	s = rmsnorm_spec("peel_rms", 37, 50257, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.rows_per_block = 5;
	s.split_heads = 1;
	rows_run("rows_peel_heads_rmsnorm_bf16", s, 7);
	rows_run_shifted("rows_peel_heads_rmsnorm_bf16_weight_view1", s, 7, 1);
	s.flagless = true;
	rows_run("rows_peel_heads_rmsnorm_bf16_smem", s, 7);
	rows_run_shifted("rows_peel_heads_rmsnorm_bf16_smem_view3", s, 7, 3);
	s = row_op_spec("layernorm", 1024, 50257);
	s.flagless = true;
	s.split_heads = 1;
	rows_run("rows_peel_heads_layernorm_1024x50257", s, 132);
	s.weights_smem = 1;
	rows_run("rows_peel_heads_layernorm_1024x50257_smem", s, 132);
}

/* CTA mode's prefetch (codegen/rows.c cta_prefetch, flagless kernels):
 * in0's rows by bulk copy into shared memory, the next during this one.
 * Peeled rows at GPT-2's width (layernorm with its two weights, softmax,
 * rmsnorm, 5 rows an entry), an entry of one row (no next row to copy)
 * and of 64, 8192-wide rows on 256 threads, f32 rows of an odd length
 * (vectors of 4), a layernorm whose residual (in1) is streamed from global
 * memory beside the copied x, and the same with the residual misaligned
 * unlike the row (element by element, the copy unused). */
static void
case_rows_prefetch(void)
{
	PtxRowsSpec s = row_op_spec("layernorm", 1024, 50257);
	s.flagless = true;
	s.prefetch = 1;
	rows_run("rows_pf_layernorm_1024x50257", s, 13);
	s = softmax_spec("pf_sm", 33, 50257, DT_BF16);
	s.flagless = true;
	s.prefetch = 1;
	s.rows_per_block = 1;
	rows_run("rows_pf_softmax_33x50257_rb1", s, 9);
	s = rmsnorm_spec("pf_rms", 37, 50257, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.flagless = true;
	s.prefetch = 1;
	s.rows_per_block = 5;
	rows_run("rows_pf_rmsnorm_37x50257_rb5", s, 7);
	s = rmsnorm_spec("pf_rms8k", 300, 8192, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.flagless = true;
	s.prefetch = 1;
	s.rows_per_block = 64;
	rows_run("rows_pf_rmsnorm_300x8192_rb64", s, 20);
	s = softmax_spec("pf_sm32", 21, 4099, DT_F32);
	s.flagless = true;
	s.prefetch = 1;
	rows_run("rows_pf_softmax_f32_21x4099", s, 9);
	s = ln_residual_spec("pf_ln", 257, 8192, DT_BF16, DT_F32);
	s.flagless = true;
	s.prefetch = 1;
	rows_run("rows_pf_layernorm_residual", s, 40);
	s = ln_residual_spec("pf_lnv", 45, 8194, DT_F16, DT_F16);
	s.flagless = true;
	s.prefetch = 1;
	rows_run_shifted("rows_pf_layernorm_residual_shifted_view", s, 11, 1);
	s = row_op_spec("layernorm", 300, 50304); /* the streamed vectors past L1 (l1_stream) */
	s.flagless = true;
	s.l1_stream = 1;
	rows_run("rows_l1_stream_layernorm_300x50304", s, 17);
}

/* The inputs every row shares copied into shared memory at the kernel's
 * start (codegen/rows.c wsm_plan): flagless CTAs of 1024 threads, several
 * rows each (grids smaller than the rows), so later rows read the copy;
 * a weight that is a view one element off 16-byte alignment (copied
 * element by element); a layernorm's two weights at a peeled width
 * (shifted vectors from shared memory) and at an aligned one; the copy
 * forced where rows.c leaves it out: f32 rows reread from L2 (peeled
 * vectors of 4, element loads), a bf16 row too long for registers (the
 * reread loop) with its weight a view, CTAs of 256 threads. */
static void
case_rows_wsm(void)
{
	PtxRowsSpec s = rmsnorm_spec("wsm_rms", 64, 50257, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.flagless = true;
	rows_run_shifted("rows_wsm_rmsnorm_64x50257_weight_view", s, 9, 1);
	s = row_op_spec("layernorm", 70, 50257);
	s.flagless = true;
	s.weights_smem = 1; /* 200 KB: by default past WSM_DEFAULT_MAX */
	s.rows_per_block = 3;
	rows_run("rows_wsm_layernorm_70x50257_rb3", s, 13);
	s = row_op_spec("layernorm", 50, 50304);
	s.flagless = true;
	s.weights_smem = 1;
	s.rows_per_block = 1;
	rows_run("rows_wsm_layernorm_50x50304", s, 7);
	s = rmsnorm_spec("wsm_rms32", 33, 40001, DT_F32, "rsqrt(add(acc,1e-5))");
	s.flagless = true;
	s.weights_smem = 1; /* rows reread from L2 keep two CTAs an SM by default, uncopied */
	rows_run("rows_wsm_rmsnorm_f32_33x40001", s, 5);
	s = rmsnorm_spec("wsm_long", 9, 100003, DT_BF16, "rsqrt(add(acc,1e-5))");
	s.flagless = true;
	s.weights_smem = 1;
	rows_run_shifted("rows_wsm_rmsnorm_9x100003_reread_weight_view", s, 4, 3);
	s = row_op_spec("layernorm", 300, 8192);
	s.flagless = true;
	s.weights_smem = 1;
	rows_run("rows_wsm_forced_layernorm_300x8192", s, 20);
}

/* Column mode (reductions over the first dim: rows adjacent, the reduced
 * elements `rows` apart): softmax over dim 0 with its map, and two stages
 * with per-row outputs and a per-row input on 4100 rows (not a multiple of
 * a block's 32). */
static void
case_rows_cols(void)
{
	PtxRowsSpec s = {.name = "colsoftmax", .rows = 300, .len = 1000, .nin = 1, .nout = 1, .nstage = 2};
	s.in[0] = (PtxTensor){DT_BF16, {1, 300}};
	s.out[0] = (PtxTensor){DT_BF16, {1, 300}};
	s.stage[0] = stage_of(OP_AMAX, NULL, NULL, -1);
	s.stage[1] = stage_of(OP_SUM, "exp(sub(in0,stage0))", NULL, -1);
	prog_or_die(&s.map, "div(exp(sub(in0,stage0)),stage1)");
	rows_run("rows_cols_softmax_bf16", s, 7);
	s = (PtxRowsSpec){.name = "colmean", .rows = 4100, .len = 257, .nin = 2, .nout = 2, .nstage = 2};
	s.in[0] = (PtxTensor){DT_F32, {1, 4100}};
	s.in[1] = (PtxTensor){DT_F32, {1, 0}};
	s.out[0] = (PtxTensor){DT_F32, {1, 0}};
	s.out[1] = (PtxTensor){DT_F32, {1, 0}};
	s.stage[0] = stage_of(OP_MEAN, NULL, "add(acc,in1)", 0);
	s.stage[1] = stage_of(OP_AMIN, "sub(in0,stage0)", NULL, 1);
	rows_run("rows_cols_mean_min_f32", s, 50);
	s.rows_per_block = 8; /* 4 slices per warp, 64 per CTA; a partial last block */
	rows_run("rows_cols_mean_min_f32_rb8", s, 50);
	s.rows_per_block = 1;
	rows_run("rows_cols_mean_min_f32_rb1", s, 50);
	/* bf16 rows in vectors of 8 (1000 rows), a post program that reads the
	 * earlier stage of its own row, a per-row output and a map */
	s = (PtxRowsSpec){.name = "colnorm", .rows = 1000, .len = 3001, .nin = 1, .nout = 2, .nstage = 2};
	s.in[0] = (PtxTensor){DT_BF16, {1, 1000}};
	s.out[0] = (PtxTensor){DT_BF16, {1, 1000}};
	s.out[1] = (PtxTensor){DT_F32, {1, 0}};
	s.stage[0] = stage_of(OP_MEAN, NULL, NULL, -1);
	s.stage[1] = stage_of(OP_MEAN, "mul(sub(in0,stage0),sub(in0,stage0))", "add(rsqrt(add(acc,1e-5)),stage0)", 1);
	prog_or_die(&s.map, "div(sub(in0,stage0),stage1)");
	s.rows_per_block = 32;
	rows_run("rows_cols_norm_bf16_v8", s, 40);
}

/* Column-mode specs of a first-dim reduction over x [len][rows] (dt):
 * rmsnorm with a weight along the reduced dim, layernorm with each row's
 * mean and 1/std as f32 outputs, softmax. */
static PtxRowsSpec
col_spec(const char *op, int64_t rows, int64_t len, DType dt)
{
	PtxRowsSpec s;
	if (!strcmp(op, "rmsnorm0")) {
		s = rmsnorm_spec(op, rows, len, dt, "rsqrt(add(acc,1e-5))");
	} else if (!strcmp(op, "layernorm0")) {
		s = (PtxRowsSpec){.name = op, .rows = rows, .len = len, .nin = 1, .nout = 3, .nstage = 2};
		s.out[1] = s.out[2] = (PtxTensor){DT_F32, {1, 0}};
		s.stage[0] = stage_of(OP_MEAN, NULL, NULL, 1);
		s.stage[1] = stage_of(OP_MEAN, "mul(sub(in0,stage0),sub(in0,stage0))", "rsqrt(add(acc,1e-5))", 2);
		prog_or_die(&s.map, "mul(sub(in0,stage0),stage1)");
	} else {
		s = softmax_spec(op, rows, len, dt);
	}
	s.in[0] = s.out[0] = (PtxTensor){dt, {1, rows}}; /* the transposed view: rows adjacent */
	return s;
}

/* Softmax over the first dim on columns holding special values, in one
 * pass (forced) and in two (forbidden), each against a double reference
 * with the two passes' meaning: amax drops NaN (max.f32), the sum of
 * exp(x - amax) is NaN where any value is NaN or +inf or the column is all
 * -inf.  Outputs and the stored per-row sum must match the reference
 * where it is finite and be NaN where it is. */
static void
special_column(float *x, int64_t rows, int64_t len, int64_t c, int kind)
{
	for (int64_t i = 0; i < len; i++) {
		float *v = &x[i * rows + c];
		switch (kind) {
		case 1: if (i == len / 3) *v = NAN; break;
		case 2: if (i == len / 2) *v = INFINITY; break;
		case 3: *v = -INFINITY; break;
		case 4: if (i % 2) *v = -INFINITY; break;
		case 5: if (i == 7) *v = -INFINITY; break;
		case 6: if (i == 1 || i == len - 1) *v = INFINITY; break;
		case 7: if (i == len - 1) *v = 80.0f; break; /* a large max late in the slices */
		}
	}
}

static int
special_bad(double got, double want)
{
	if (isnan(want) || isnan(got))
		return isnan(want) != isnan(got);
	return fabs(got - want) > 1e-5 * (fabs(want) > 1 ? fabs(want) : 1);
}

static void
rows_special_run(const char *name, PtxRowsSpec s, int grid)
{
	int64_t R = s.rows, L = s.len, bad = 0, nanout = 0;
	Tens x = tens_new(DT_F32, R * L), y = tens_new(DT_F32, R * L), sum = tens_new(DT_F32, R);
	float *xh = x.h;
	Buf b = {0};
	PtxKernel k;
	Launch l = {0};
	tens_random(&x, 3.0);
	for (int64_t c = 0; c < 8 && c < R; c++)
		special_column(xh, R, L, c, (int)c);
	CU(cuMemcpyHtoD(x.d, x.h, (size_t)(R * L) * 4));
	CU(cuCtxSynchronize());
	tens_poison(&y);
	tens_poison(&sum);
	emit_rows(&b, &s, &k, false);
	Kern kr = kern_load(&b, &k);
	l.t[0] = x.d, l.t[1] = y.d, l.t[2] = sum.d;
	l.blocks = plain_blocks(k.nblocks);
	l.nblocks = (uint32_t)k.nblocks;
	l.grid = grid;
	l.s = stream[0];
	launch(&kr, &l);
	CU(cuStreamSynchronize(l.s));
	tens_fetch(&y);
	tens_fetch(&sum);
	for (int64_t c = 0; c < R; c++) {
		double m = -INFINITY, z = 0, gs = ((float *)sum.h)[c];
		for (int64_t i = 0; i < L; i++)
			if (!isnan(xh[i * R + c]) && xh[i * R + c] > m)
				m = xh[i * R + c];
		for (int64_t i = 0; i < L; i++)
			z += exp((double)xh[i * R + c] - m);
		bad += special_bad(gs, z);
		for (int64_t i = 0; i < L; i++) {
			double want = exp((double)xh[i * R + c] - m) / z, got = ((float *)y.h)[i * R + c];
			bad += special_bad(got, want);
			nanout += isnan(got);
		}
	}
	printf("CASE %s: %lld mismatches, %lld NaN outputs (columns 1-3 and 6 expected NaN) %s\n", name, (long long)bad,
	       (long long)nanout, bad ? "FAIL" : "PASS");
	failures += bad != 0;
	CU(cuMemFree(l.blocks));
	kern_unload(&kr);
	buf_free(&b);
	tens_free(&x);
	tens_free(&y);
	tens_free(&sum);
}

static void
case_rows_special(void)
{
	static const struct {
		const char *name;
		int online, group, grid;
	} v[] = {{"rows_special_online", 1, 1, 40}, {"rows_special_two_pass", -1, 1, 40},
	         {"rows_special_online_g8", 1, 8, 16}, {"rows_special_two_pass_g8", -1, 8, 16}};
	for (size_t i = 0; i < NELEM(v); i++) {
		PtxRowsSpec s = col_spec("softmax0", 64, 3001, DT_F32);
		s.nout = 2;
		s.out[1] = (PtxTensor){DT_F32, {1, 0}};
		s.stage[1].out = 1;
		s.online = v[i].online;
		s.group = v[i].group;
		s.cluster = v[i].group > 1 ? 0 : 1;
		rows_special_run(v[i].name, s, v[i].grid);
	}
}

/* rows_run of s split over a group (group) or a cluster of n CTAs, named
 * base_g<n> or base_c<n>. */
static void
split_run(const char *base, PtxRowsSpec s, bool group, int n, int grid)
{
	char name[96];
	if (group)
		s.group = n;
	else
		s.cluster = n;
	snprintf(name, sizeof name, "%s_%c%d", base, group ? 'g' : 'c', n);
	rows_run(name, s, grid);
}

/* A cluster (or group) kernel's flags: every entry waits on one flag
 * (raised before the launch, or -- one entry -- never), raises its own
 * once per cluster (not once per CTA), and a stuck entry makes the whole
 * cluster leave with the error word written, within the timeout, not
 * hang.  A group's CTAs that did not wait on the stuck flag time out at
 * the group's barrier instead: the error word names the flag or the
 * group (PTX_GROUP_FLAG), whichever timed out first. */
static void
rows_split_flags(int cluster, int group)
{
	PtxRowsSpec s = col_spec("rmsnorm0", 256, 2048, DT_BF16); /* x, g in; y out */
	Buf b = {0};
	PtxKernel k;
	Launch l = {0};
	CUdeviceptr flags, err;
	uint64_t fl[8], errw;
	uint32_t w[4];
	Tens x, g, y;

	const char *nm = group > 1 ? "rows_group_flags" : "rows_cluster_flags";
	s.cluster = cluster;
	s.group = group;
	printf("--- %s: a %s of 4 per entry, flags raised once, a stuck entry times out\n", nm, group > 1 ? "group" : "cluster");
	emit_rows(&b, &s, &k, true);
	Kern kr = kern_load(&b, &k);
	x = tens_new(DT_BF16, 256 * 2048);
	g = tens_new(DT_BF16, 2048);
	y = tens_new(DT_BF16, 256 * 2048);
	tens_random(&x, 2.0);
	tens_random(&g, 1.0);
	CU(cuMemAlloc(&flags, sizeof fl));
	CU(cuMemAlloc(&err, 16));
	for (int stuck = 0; stuck < 2; stuck++) {
		PtxBlock bl[8];
		CUevent e0, e1;
		float ms;
		for (int i = 0; i < 8; i++)
			fl[i] = 100;
		errw = 0;
		CU(cuMemcpyHtoD(flags, fl, sizeof fl));
		CU(cuMemcpyHtoD(err, &errw, 8));
		for (int i = 0; i < 8; i++) /* 8 entries of 32 rows: flags 1 and 2 get 4 raises each */
			bl[i] = (PtxBlock){.x = (uint32_t)i, .in_flag = 0, .in_epoch = 100, .out_flag = 1 + (uint32_t)(i % 2),
			                   .out_op = PTX_RAISE_ADD, .out_value = 1};
		if (stuck)
			bl[5].in_flag = 3, bl[5].in_epoch = 101; /* flags[3] = 100 never reaches 101 */
		memset(&l, 0, sizeof l);
		l.blocks = upload_blocks(bl, 8);
		l.nblocks = 8;
		l.flags = flags;
		l.err = err;
		l.timeout = stuck ? 5000000 : 2000000000ull;
		l.site = 9;
		l.grid = 8; /* two clusters (groups): each takes entries in turn */
		l.s = stream[0];
		l.t[0] = x.d, l.t[1] = g.d, l.t[2] = y.d;
		CU(cuEventCreate(&e0, 0));
		CU(cuEventCreate(&e1, 0));
		CU(cuEventRecord(e0, l.s));
		launch(&kr, &l);
		CU(cuEventRecord(e1, l.s));
		CU(cuStreamSynchronize(l.s));
		CU(cuEventElapsedTime(&ms, e0, e1));
		CU(cuMemcpyDtoH(fl, flags, sizeof fl));
		CU(cuMemcpyDtoH(w, err, sizeof w));
		if (!stuck) {
			bool ok = fl[1] == 104 && fl[2] == 104 && w[0] == 0;
			printf("CASE %s/raised_once: flags 1, 2 = %llu, %llu (want 104, 104), err %u, %.3f ms %s\n", nm,
			       (unsigned long long)fl[1], (unsigned long long)fl[2], w[0], ms, ok ? "PASS" : "FAIL");
			failures += !ok;
		} else {
			/* a group's peers wait at its barrier on entry 5 (group 1: 5 = 1 + 2 x 2) */
			bool ok = w[0] == 1 && (w[1] == 3 || (group > 1 && w[1] == PTX_GROUP_FLAG)) && w[3] == 9 && ms < 1000 &&
			          (w[2] == 5 || group > 1);
			printf("CASE %s/timeout: err={code %u, flag %u, block %u, site %u} want {1, 3%s, 5, 9}, "
			       "kernel %.3f ms %s\n", nm, w[0], w[1], w[2], w[3], group > 1 ? " or the group's" : "", ms,
			       ok ? "PASS" : "FAIL");
			failures += !ok;
		}
		CU(cuEventDestroy(e0));
		CU(cuEventDestroy(e1));
		CU(cuMemFree(l.blocks));
	}
	CU(cuMemFree(flags));
	CU(cuMemFree(err));
	tens_free(&x);
	tens_free(&g);
	tens_free(&y);
	kern_unload(&kr);
	buf_free(&b);
}

/* f32 4100 x 257 over dim 0: the mean (an output, its post program none)
 * and the smallest deviation from it (an output), split as the caller asks. */
static PtxRowsSpec
col_mean_min_spec(void)
{
	PtxRowsSpec s = {.name = "colmin", .rows = 4100, .len = 257, .nin = 1, .nout = 2, .nstage = 2};
	s.in[0] = (PtxTensor){DT_F32, {1, 4100}};
	s.out[0] = s.out[1] = (PtxTensor){DT_F32, {1, 0}};
	s.stage[0] = stage_of(OP_MEAN, NULL, NULL, 0);
	s.stage[1] = stage_of(OP_AMIN, "sub(in0,stage0)", NULL, 1);
	return s;
}

/* Column mode over clusters (distributed shared memory): clusters of 2, 4
 * and 8 asked for on odd shapes -- a length that leaves most slices of a
 * CTA empty, a partial last block, f32 and vectors of 1; then the flags.
 * case_rows_cluster adds the row ops at the sizes users run, where the
 * split is chosen (8192 x 8192 bf16: 8 CTAs). */
static void
case_rows_cluster_small(void)
{
	for (int c = 2; c <= 8; c *= 2) {
		split_run("rows_cluster_layernorm0_1000x3001", col_spec("layernorm0", 1000, 3001, DT_BF16), false, c, 24);
		split_run("rows_cluster_mean_min_f32_4100x257", col_mean_min_spec(), false, c, 40);
		/* rows odd: vectors of 1 */
		split_run("rows_cluster_softmax0_f16_333x5000", col_spec("softmax0", 333, 5000, DT_F16), false, c, 16);
	}
	rows_split_flags(4, 0);
}

/* Column mode over groups (partials met in a global workspace): groups of
 * 2 to 128 asked for on odd shapes -- a length that leaves most of a
 * group's slices empty, a partial last block, f32, vectors of 1, a row a
 * block and 128 rows a block -- on grids that hold fewer CTAs than the
 * group (the launch's group is then smaller) or not a whole number of
 * groups; each launched twice (rows_run), its counters back at 0; then
 * the flags. */
static void
case_rows_group_small(void)
{
	for (int gr = 2; gr <= 128; gr *= 4) {
		PtxRowsSpec s = col_mean_min_spec();
		split_run("rows_group_layernorm0_1000x3001", col_spec("layernorm0", 1000, 3001, DT_BF16), true, gr, 100);
		split_run("rows_group_mean_min_f32_4100x257", s, true, gr, 2 * nsm);
		s.rows_per_block = 1;
		split_run("rows_group_mean_min_f32_4100x257_rb1", s, true, gr, 3 * gr / 2 + 1);
		s.rows_per_block = 128; /* f32: 32 lanes of 4 rows */
		split_run("rows_group_mean_min_f32_4100x257_rb128", s, true, gr, 50);
		/* rows odd: vectors of 1 */
		split_run("rows_group_softmax0_f16_333x5000", col_spec("softmax0", 333, 5000, DT_F16), true, gr, 16);
	}
	rows_split_flags(0, 4);
}

/* A group's entries pipelined (PtxRowsSpec.col_pipe, codegen/rows.c
 * col_pipe_ok: entry e + 1 reduced and arrived at before entry e's meeting
 * is waited for): rmsnorm over dim 0 and an f32 mean whose rows' results
 * are an output too (rank 0's store from the post program), in groups of
 * 2, 8 and 32 -- two groups (many entries each: the counters' parities and
 * the four sets of partials in turn), one group (every entry), a grid of
 * one group and a half (the half leaves at once), groups of one entry
 * (only the drain after the loop finishes it) and of two, a block a row, a
 * partial last block -- each against the host's and launched twice (the
 * counters back at 0 between launches); each kernel checked to be the
 * pipelined one.  Then the vocabulary-wide rmsnorm in the rule's group. */
static void
pipe_run(const char *base, PtxRowsSpec s, int gr, int grid)
{
	Buf b = {0};
	PtxKernel k;
	s.col_pipe = 1;
	s.flagless = true;
	s.group = gr;
	ptx_emit_rows(&b, &s, &k);
	if (!strstr(b.s, "entries pipelined"))
		printf("CASE %s_g%d FAIL: not pipelined\n", base, gr);
	buf_free(&b);
	split_run(base, s, true, gr, grid);
}

static void
case_rows_pipe(void)
{
	for (int gr = 2; gr <= 32; gr *= 4) {
		PtxRowsSpec s = col_spec("rmsnorm0", 1000, 3001, DT_BF16);
		PtxRowsSpec m = {.name = "colpipe", .rows = 4100, .len = 257, .nin = 1, .nout = 2, .nstage = 1};
		pipe_run("rows_pipe_rmsnorm0_1000x3001_2groups", s, gr, 2 * gr);
		pipe_run("rows_pipe_rmsnorm0_1000x3001_1group", s, gr, gr);
		pipe_run("rows_pipe_rmsnorm0_1000x3001_1.5groups", s, gr, gr + gr / 2);
		if (gr <= 8) { /* 32 blocks: an entry a group (the drain alone), and two */
			pipe_run("rows_pipe_rmsnorm0_1000x3001_1entry", s, gr, 32 * gr);
			pipe_run("rows_pipe_rmsnorm0_1000x3001_2entries", s, gr, 16 * gr);
		}
		m.in[0] = m.out[0] = (PtxTensor){DT_F32, {1, 4100}};
		m.out[1] = (PtxTensor){DT_F32, {1, 0}};
		m.stage[0] = stage_of(OP_MEAN, NULL, "add(acc,0.5)", 1);
		prog_or_die(&m.map, "sub(in0,stage0)");
		pipe_run("rows_pipe_mean_f32_4100x257", m, gr, 2 * gr);
		m.rows_per_block = 1;
		pipe_run("rows_pipe_mean_f32_4100x257_rb1", m, gr, 3 * gr);
	}
	PtxRowsSpec v = col_spec("rmsnorm0", 4096, 50304, DT_BF16);
	pipe_run("rows_pipe_rmsnorm0_50304x4096", v, 8, 2 * nsm);
	v.rows_per_block = 128; /* the rule's blocks: 32 groups, an entry each */
	pipe_run("rows_pipe_rmsnorm0_50304x4096_rb128", v, 8, 256);
}

/* A mean and its variance in one pass (codegen/rows.c col_moments) where
 * the mean is far from 0: f32 values of [-3, 3) + 100 over 5000 rows,
 * the mean and 1/std as outputs against the double reference at 1e-5 --
 * E[x^2] - E[x]^2 in f32 would be off by ~2e-4 there.  (At + 1000 the
 * map's own f32 x + 1000 is off by 3e-5, whatever the reduction.)  A
 * CTA a block, groups of 8 and 32, vectors of 1 (odd rows) and a row a
 * block; then the bf16 layernorm the compiler makes, a sum scaled by
 * 1 / len (lower.c), at 8192 x 8192 in groups. */
static void
case_rows_moments(void)
{
	static const int groups[] = {1, 8, 32};
	for (size_t g = 0; g < NELEM(groups); g++)
		for (int rows = 4096; rows <= 4097; rows++) {
			char name[80];
			PtxRowsSpec s = {.name = "colmom", .rows = rows, .len = 5000, .nin = 1, .nout = 3, .nstage = 2};
			s.in[0] = s.out[0] = (PtxTensor){DT_F32, {1, rows}};
			s.out[1] = s.out[2] = (PtxTensor){DT_F32, {1, 0}};
			s.stage[0] = stage_of(OP_MEAN, "add(in0,100.0)", NULL, 1);
			s.stage[1] = stage_of(OP_MEAN, "mul(sub(add(in0,100.0),stage0),sub(add(in0,100.0),stage0))",
			                      "rsqrt(add(acc,1e-5))", 2);
			prog_or_die(&s.map, "mul(sub(add(in0,100.0),stage0),stage1)");
			s.group = groups[g];
			s.cluster = groups[g] == 1; /* no split at all */
			snprintf(name, sizeof name, "rows_moments_f32_offset_%dx5000_g%d", rows, groups[g]);
			rows_run(name, s, 2 * nsm);
			if (rows == 4096 && groups[g] == 8) {
				s.rows_per_block = 1;
				snprintf(name, sizeof name, "rows_moments_f32_offset_%dx5000_rb1_g%d", rows, groups[g]);
				rows_run(name, s, 2 * nsm);
			}
		}
	PtxRowsSpec s = col_spec("layernorm0", 8192, 8192, DT_BF16);
	s.stage[0] = stage_of(OP_SUM, NULL, "mul(acc,0.0001220703125)", 1); /* 1 / 8192 */
	s.rows_per_block = 128;
	rows_run("rows_moments_layernorm0_sum_scaled_8192x8192", s, 2 * nsm);
}

/* The row ops over dim 0 at vocabulary width, split as the compiler
 * chooses (groups), on the whole GPU's grid: x [50304][4096] and the odd
 * [50257][1024]. */
static void
case_rows_group(void)
{
	static const char *const ops[] = {"rmsnorm0", "layernorm0", "softmax0"};
	for (int i = 0; i < 3; i++) {
		char name[64];
		PtxRowsSpec s = col_spec(ops[i], 4096, 50304, DT_BF16);
		Buf b = {0};
		PtxKernel k;
		emit_rows(&b, &s, &k, false);
		Kern kr = kern_load(&b, &k);
		int grid = full_grid(&kr, k.nblocks);
		kern_unload(&kr);
		buf_free(&b);
		snprintf(name, sizeof name, "rows_group_%s_50304x4096", ops[i]);
		rows_run(name, s, grid);
		s = col_spec(ops[i], 1024, 50257, DT_BF16);
		snprintf(name, sizeof name, "rows_group_%s_50257x1024", ops[i]);
		rows_run(name, s, grid);
	}
	case_rows_group_small();
}

static void
case_rows_cluster(void)
{
	static const char *const ops[] = {"rmsnorm0", "layernorm0", "softmax0"};
	PtxRowsSpec s;
	for (int i = 0; i < 3; i++) {
		char name[64];
		s = col_spec(ops[i], 8192, 8192, DT_BF16);
		snprintf(name, sizeof name, "rows_cluster_%s_8192x8192", ops[i]);
		rows_run(name, s, 2 * nsm);
		s = col_spec(ops[i], 4096, 12288, DT_BF16);
		snprintf(name, sizeof name, "rows_cluster_%s_4096x12288", ops[i]);
		rows_run(name, s, nsm);
	}
	case_rows_cluster_small();
}

/* ---- flags ---- */

/* The operand type a tile takes: f32 for the FFMA tiles, else bf16. */
static DType
ab_of(const char *tile)
{
	int t = ptx_tile_byname(tile);
	return t >= 0 && ptx_tiles[t].kind == PTX_SIMT ? DT_F32 : DT_BF16;
}

/* A matmul whose tiles wait for "row block i of A arrived" flags that a
 * second stream writes 20 ms after launch, and an elementwise consumer on a
 * third stream whose blocks wait on the matmul's per-row-block counters. */
static void
flags_late(const char *tile)
{
	const int64_t M = 1024, N = 1024, K = 1024;
	PtxMatmulSpec s = mm_spec("flag_mm", ab_of(tile), M, N, K, tile, DT_BF16);
	PtxEwSpec e = {.name = "flag_ew", .rank = 2, .dim = {M, N}, .nin = 1, .nout = 1, .block_elems = 128 * N};
	MmCase c = {.s = s};
	Buf b1 = {0}, b2 = {0};
	PtxKernel k1, k2;
	Launch l1 = {0}, l2 = {0};
	CUdeviceptr flags, err, trace;
	uint64_t base = 1000 + (rng % 1000), fl[64], errw = 0, tr[4 * 64];
	int ntm = (int)(M / ptx_tiles[s.tile].bm), ntn = (int)(N / ptx_tiles[s.tile].bn);
	Tens d;
	double *dref;

	printf("--- flags_late: matmul waits on flags written 20 ms late; ew waits on the matmul\n");
	e.in[0] = (PtxTensor){DT_BF16, {N, 1}};
	e.out[0] = (PtxTensor){DT_F32, {N, 1}};
	prog_or_die(&e.prog, "mul(max(in0,0.0),2.0)");
	ptx_emit_matmul(&b1, &c.s, &k1);
	ptx_emit_ew(&b2, &e, &k2);
	Kern km = kern_load(&b1, &k1), ke = kern_load(&b2, &k2);
	mm_data(&c);
	d = tens_new(DT_F32, M * N);

	/* flags: [0, 8) A row blocks, [16, 24) tiles done per row block, [32, 40) ew done */
	for (int i = 0; i < 64; i++)
		fl[i] = base - 1;
	for (int i = 16; i < 24; i++)
		fl[i] = base;
	CU(cuMemAlloc(&flags, sizeof fl));
	CU(cuMemcpyHtoD(flags, fl, sizeof fl));
	CU(cuMemAlloc(&err, 16)); /* libsyncrt error word: u32[4] */
	CU(cuMemcpyHtoD(err, &errw, 8));
	CU(cuMemAlloc(&trace, sizeof tr));
	CU(cuMemsetD8(trace, 0, sizeof tr));

	PtxBlock *bl = calloc((size_t)k1.nblocks, sizeof *bl);
	ptx_matmul_blocks(&c.s, 0, bl);
	for (int64_t i = 0; i < k1.nblocks; i++) {
		bl[i].in_flag = bl[i].x;
		bl[i].in_epoch = base;
		bl[i].out_flag = 16 + bl[i].x;
		bl[i].out_op = PTX_RAISE_ADD;
		bl[i].out_value = 1;
	}
	l1.blocks = upload_blocks(bl, k1.nblocks);
	l1.nblocks = (uint32_t)k1.nblocks;
	PtxBlock be[8];
	for (int i = 0; i < 8; i++)
		be[i] = (PtxBlock){.x = (uint32_t)i, .in_flag = 16 + i, .in_epoch = base + ntn, .out_flag = 32 + i,
		                   .out_op = PTX_RAISE_STORE, .out_value = base + 100 + i};
	l2.blocks = upload_blocks(be, 8);
	l2.nblocks = 8;
	l1.flags = l2.flags = flags;
	l1.err = l2.err = err;
	l1.timeout = l2.timeout = 2000000000ull; /* 2 s: a release that never comes fails loudly */
	l1.trace = trace;
	l1.grid = 66;
	l2.grid = 8;
	l1.s = stream[0];
	l2.s = stream[1];
	mm_fill_launch(&c, &l1);
	l2.t[0] = c.out[0].d;
	l2.t[1] = d.d;
	tens_poison(&c.out[0]);
	tens_poison(&d);
	CU(cuCtxSynchronize());

	launch(&km, &l1);
	launch(&ke, &l2);
	usleep(20000);
	CUresult q0 = cuStreamQuery(stream[0]), q1 = cuStreamQuery(stream[1]);
	printf("  after 20 ms: matmul stream %s, ew stream %s (both should be waiting)\n",
	       q0 == CUDA_ERROR_NOT_READY ? "waiting" : "DONE", q1 == CUDA_ERROR_NOT_READY ? "waiting" : "DONE");
	if (q0 != CUDA_ERROR_NOT_READY || q1 != CUDA_ERROR_NOT_READY)
		failures++;
	tens_fetch(&d); /* concurrent read: still poison */
	int64_t early = 0;
	for (int64_t i = 0; i < d.n; i++)
		early += !is_poison(DT_F32, d.h, i);
	printf("  consumer elements written before the release: %lld (want 0)\n", (long long)early);
	if (early)
		failures++;
	for (int i = ntm - 1; i >= 0; i--) /* released in reverse order */
		CU(cuStreamWriteValue64(stream[2], flags + 8 * i, base, 0));
	CU(cuCtxSynchronize());

	CU(cuMemcpyDtoH(fl, flags, sizeof fl));
	CU(cuMemcpyDtoH(&errw, err, 8));
	CU(cuMemcpyDtoH(tr, trace, sizeof tr));
	int bad = errw != 0;
	for (int i = 0; i < ntm; i++) {
		bad += fl[16 + i] != base + (uint64_t)ntn;
		bad += fl[32 + i] != base + 100 + (uint64_t)i;
	}
	int badtrace = 0;
	for (int64_t i = 0; i < k1.nblocks; i++) /* libsyncrt's records: {site<<32|block, start, end, smid} */
		badtrace += (tr[4 * i] & 0xffffffffu) != (uint64_t)i || tr[4 * i + 1] == 0 || tr[4 * i + 2] < tr[4 * i + 1]; /* libsyncrt records */
	printf("CASE flags_late/protocol: err=%llu raised-flags-wrong=%d trace-entries-wrong=%d %s\n",
	       (unsigned long long)errw, bad - (errw != 0), badtrace, bad || badtrace ? "FAIL" : "PASS");
	if (bad || badtrace)
		failures++;
	printf("  trace: block 0 %.1f us, last block ends %.1f us after block 0 starts\n", (tr[2] - tr[1]) * 1e-3,
	       (tr[4 * (k1.nblocks - 1) + 2] - tr[1]) * 1e-3);

	tens_fetch(&c.out[0]);
	tens_fetch(&d);
	mm_host_operands(&c);
	c.ref[0] = ref_new(c.out[0].n);
	par_for(M, mm_ref_row, &c);
	compare("flags_late/matmul", &c.out[0], c.ref[0]);
	/* The consumer read the bf16 C the GPU wrote: check it against that. */
	dref = ref_new(d.n);
	for (int64_t i = 0; i < d.n; i++)
		dref[i] = fmax(ptx_load(DT_BF16, c.out[0].h, i), 0.0) * 2.0;
	compare("flags_late/consumer", &d, dref);
	free(dref);
	free(bl);
	tens_free(&d);
	mm_free(&c);
}

/* Waits that never end: the error word names the flag and the block, the
 * kernels return within the timeout, and the context is still usable. */
static void
flags_timeout(const char *tile)
{
	PtxEwSpec e = {.name = "to_ew", .rank = 1, .dim = {64 * 1024}, .nin = 1, .nout = 1, .block_elems = 1024};
	PtxMatmulSpec s = mm_spec("to_mm", ab_of(tile), 512, 512, 256, tile, DT_BF16);
	Buf b1 = {0}, b2 = {0};
	PtxKernel k1, k2;
	Launch l = {0};
	CUdeviceptr flags, err;
	uint64_t fl[8] = {7, 7, 7, 7, 7, 7, 7, 7}, errw;
	CUevent ev0, ev1;
	float ms;
	MmCase c = {.s = s};
	Tens x, y;

	printf("--- flags_timeout: one block waits on a flag nobody raises, timeout 5 ms\n");
	e.in[0] = (PtxTensor){DT_F32, {1}};
	e.out[0] = (PtxTensor){DT_F32, {1}};
	prog_or_die(&e.prog, "add(in0,1.0)");
	ptx_emit_ew(&b1, &e, &k1);
	ptx_emit_matmul(&b2, &c.s, &k2);
	Kern ke = kern_load(&b1, &k1), km = kern_load(&b2, &k2);
	CU(cuMemAlloc(&flags, sizeof fl));
	CU(cuMemcpyHtoD(flags, fl, sizeof fl));
	CU(cuCtxSynchronize());
	CU(cuMemAlloc(&err, 16)); /* libsyncrt error word: u32[4] */
	CU(cuEventCreate(&ev0, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&ev1, CU_EVENT_DEFAULT));
	x = tens_new(DT_F32, 64 * 1024);
	y = tens_new(DT_F32, 64 * 1024);
	tens_random(&x, 1.0);

	for (int kind = 0; kind < 2; kind++) {
		int64_t nb = kind == 0 ? k1.nblocks : k2.nblocks, stuck = kind == 0 ? 37 : 5;
		PtxBlock *bl = calloc((size_t)nb, sizeof *bl);
		if (kind == 0)
			for (int64_t i = 0; i < nb; i++)
				bl[i] = (PtxBlock){.x = (uint32_t)i, .in_flag = 6, .in_epoch = 7, .out_flag = PTX_NO_FLAG};
		else {
			ptx_matmul_blocks(&c.s, 0, bl);
			for (int64_t i = 0; i < nb; i++)
				bl[i].in_flag = 6, bl[i].in_epoch = 7;
		}
		bl[stuck].in_flag = 5; /* flags[5] = 7 never reaches 8 */
		bl[stuck].in_epoch = 8;
		errw = 0;
		CU(cuMemcpyHtoD(err, &errw, 8));
		CU(cuCtxSynchronize());
		memset(&l, 0, sizeof l);
		l.blocks = upload_blocks(bl, nb);
		l.nblocks = (uint32_t)nb;
		l.flags = flags;
		l.err = err;
		l.timeout = 5000000;
		l.grid = 16;
		l.site = 7; /* a parameter since codegen/module.c: the error word must name it */
		l.s = stream[0];
		if (kind == 0) {
			l.t[0] = x.d;
			l.t[1] = y.d;
		} else {
			mm_data(&c);
			mm_fill_launch(&c, &l);
		}
		CU(cuEventRecord(ev0, l.s));
		launch(kind == 0 ? &ke : &km, &l);
		CU(cuEventRecord(ev1, l.s));
		CUresult r = cuStreamSynchronize(l.s);
		CU(r);
		CU(cuEventElapsedTime(&ms, ev0, ev1));
		uint32_t w[4];
		CU(cuMemcpyDtoH(w, err, sizeof w)); /* libsyncrt's {code, flag, block, site} */
		errw = w[0];
		bool ok = w[0] == 1 && w[1] == 5 && w[2] == (uint32_t)stuck && w[3] == 7 && ms >= 4.9f && ms < 60.0f;
		printf("CASE flags_timeout/%s: err={code %u, flag %u, block %u, site %u} want {1, 5, %llu, 7}, kernel %.3f ms %s\n",
		       kind == 0 ? "ew" : "matmul", w[0], w[1], w[2], w[3], (unsigned long long)stuck, ms,
		       ok ? "PASS" : "FAIL");
		if (!ok)
			failures++;
		CU(cuMemFree(l.blocks));
		free(bl);
		if (kind == 1)
			mm_free(&c);
	}
	CU(cuCtxSynchronize());
	printf("  context after the timeouts: usable (cuCtxSynchronize OK)\n");
	tens_free(&x);
	tens_free(&y);
	CU(cuModuleUnload(ke.mod));
	CU(cuModuleUnload(km.mod));
	/* And a normal kernel runs right after. */
	case_ew_int();
}

/* ---- throughput ---- */

static int
cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* A timed matmul kernel: s emitted into *bu and loaded, its grouped block
 * list (raise: every tile adds 1 to flag 0, as a plan's band does)
 * uploaded into *l with the persistent grid libsyncrt gives it
 * (syn_grid_persistent / syn_grid_cluster); the tensors are the caller's. */
static Kern
perf_kernel(const PtxMatmulSpec *s, int group, bool raise, Buf *bu, Launch *l)
{
	PtxKernel kk;
	*bu = (Buf){0};
	ptx_emit_matmul(bu, s, &kk);
	Kern kr = kern_load(bu, &kk);
	PtxBlock *bl = calloc((size_t)kk.nblocks, sizeof *bl);
	ptx_matmul_blocks(s, group, bl);
	for (int64_t i = 0; raise && i < kk.nblocks; i++)
		bl[i].out_flag = 0, bl[i].out_op = PTX_RAISE_ADD, bl[i].out_value = 1;
	*l = (Launch){0};
	l->blocks = upload_blocks(bl, kk.nblocks);
	l->nblocks = (uint32_t)kk.nblocks;
	l->grid = full_grid(&kr, kk.nblocks);
	l->s = stream[0];
	free(bl);
	return kr;
}

/* Median of 25 timed runs after 3 warm-ups; a sampled f64 check of the
 * last output (1024 random elements). */
static void
perf_one(int tile, int64_t m, int64_t n, int64_t k, Tens *a, Tens *b, Tens *cc, int group, bool raise)
{
	DType dt = a->dt; /* bf16, or f32 for the FFMA tiles; C has A's type */
	PtxMatmulSpec s = mm_spec("perf_mm", dt, m, n, k, ptx_tiles[tile].name, dt);
	bool bt = getenv("PERF_BT") && *getenv("PERF_BT") == '1'; /* B as n x k, K-major: x @ transpose(w) */
	/* PERF_B2B=N: N launches back to back between the events (no launch
	 * gap inside a kernel's time, as a user's stream of calls runs) */
	int b2b = getenv("PERF_B2B") && atoi(getenv("PERF_B2B")) > 0 ? atoi(getenv("PERF_B2B")) : 1;
	Buf bu;
	Launch l;
	CUevent e0, e1;
	float t[25];
	double num = 0, den = 0;

	if (bt && ptx_tiles[tile].kind != PTX_WGMMA)
		return;
	s.bt = bt;
	Kern kr = perf_kernel(&s, group, raise, &bu, &l);
	if (raise) {
		CU(cuMemAlloc(&l.flags, 8));
		CU(cuMemsetD8(l.flags, 0, 8));
	}
	l.t[0] = a->d;
	l.t[1] = b->d;
	l.t[2] = cc->d;
	CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
	tens_poison(cc);
	for (int i = 0; i < 3; i++)
		launch(&kr, &l);
	for (int i = 0; i < 25; i++) {
		CU(cuEventRecord(e0, l.s));
		for (int j = 0; j < b2b; j++)
			launch(&kr, &l);
		CU(cuEventRecord(e1, l.s));
		CU(cuEventSynchronize(e1));
		CU(cuEventElapsedTime(&t[i], e0, e1));
		t[i] /= (float)b2b;
	}
	qsort(t, 25, sizeof t[0], cmp_float);
	CU(cuMemcpyDtoH(cc->h, cc->d, (size_t)(m * n) * (size_t)ty_dtypes[dt].size));
	for (int i = 0; i < 1024; i++) {
		int64_t r = (int64_t)((urand() + 1) / 2 * m), c = (int64_t)((urand() + 1) / 2 * n);
		double acc = 0;
		r = r < m ? r : m - 1;
		c = c < n ? c : n - 1;
		for (int64_t q = 0; q < k; q++)
			acc += ptx_load(dt, a->h, r * k + q) * ptx_load(dt, b->h, bt ? c * k + q : q * n + c);
		double g = ptx_load(dt, cc->h, r * n + c);
		num += (g - acc) * (g - acc);
		den += acc * acc;
	}
	double rel = sqrt(num / den), tf = 2.0 * m * n * k / (t[12] * 1e-3) / 1e12;
	bool ok = rel < (dt == DT_F32 ? 1e-5 : 1e-2);
	uint64_t raised = 0;
	if (raise) { /* 3 + 25 b2b launches, each tile adding 1 */
		CU(cuMemcpyDtoH(&raised, l.flags, 8));
		ok = ok && raised == (3 + 25 * (uint64_t)b2b) * l.nblocks;
		CU(cuMemFree(l.flags));
	}
	printf("PERF tile=%s%s m=%lld n=%lld k=%lld group=%d grid=%u b2b=%d flags=%s median_ms=%.4f min_ms=%.4f max_ms=%.4f "
	       "tflops=%.1f regs=%d local=%d sampled_rel=%.2e raised=%llu %s\n",
	       ptx_tiles[tile].name, bt ? " bt=1" : "", (long long)m, (long long)n, (long long)k, group, (unsigned)l.grid, b2b,
	       raise ? "per-tile" : "none",
	       t[12], t[0], t[24], tf, kr.regs, kr.local, rel, (unsigned long long)raised, ok ? "PASS" : "FAIL");
	fflush(stdout);
	if (!ok)
		failures++;
	CU(cuMemFree(l.blocks));
	buf_free(&bu);
	CU(cuModuleUnload(kr.mod));
}

/* Square sizes, then the per-rank matmuls of the benchmark's layers at
 * P = 2 (../shared/anchors/tp_overlap.py): attn_out, ffn_down, qkv, ffn_up, small. */
static const int64_t perf_shapes[][3] = {
	{4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 8192, 4096}, {8192, 8192, 14336},
	{8192, 5120, 8192}, {8192, 14336, 8192}, {2048, 8192, 4096},
};

static bool
perf_wants(const char *only, int t)
{
	const PtxTile *p = &ptx_tiles[t];
	if (!only || !strcmp(only, p->name))
		return true;
	if (!strcmp(only, "wgmma"))
		return p->kind == PTX_WGMMA || !strcmp(p->name, PTX_SYNC_TILE);
	return !strcmp(only, "f32") && p->kind == PTX_SIMT;
}

/* `only`: a tile name, "wgmma" (every wgmma tile and the mma.sync
 * default), "f32" (the FFMA tiles, on f32 operands), or NULL (every tile:
 * the tensor-core ones on bf16, the FFMA ones on f32). */
enum { PERF_MAX_SHAPES = 32 };

/* PERF_SHAPES="MxNxK MxNxK ..." in place of the table (the small-M and
 * ragged shapes of bench/p1, say); returns the count. */
static size_t
perf_shape_list(int64_t (*out)[3])
{
	const char *e = getenv("PERF_SHAPES");
	size_t n = 0;
	if (!e || !*e) {
		memcpy(out, perf_shapes, sizeof perf_shapes);
		return NELEM(perf_shapes);
	}
	while (*e && n < PERF_MAX_SHAPES) {
		long long m, nn, k;
		int used = 0;
		if (sscanf(e, " %lldx%lldx%lld%n", &m, &nn, &k, &used) != 3 || m <= 0 || nn <= 0 || k <= 0) {
			fprintf(stderr, "PERF_SHAPES: cannot read a shape MxNxK at '%s'\n", e);
			exit(2);
		}
		out[n][0] = m, out[n][1] = nn, out[n][2] = k, n++;
		e += used;
		while (*e == ' ' || *e == ',')
			e++;
	}
	return n;
}

static void
perf(const char *only)
{
	int64_t shapes[PERF_MAX_SHAPES][3];
	size_t nshapes = perf_shape_list(shapes);
	/* PERF_GROUP: tile rows a group of the block list walks (lower.c's TILE_GROUP) */
	int group = getenv("PERF_GROUP") && atoi(getenv("PERF_GROUP")) > 0 ? atoi(getenv("PERF_GROUP")) : 8;
	for (size_t si = 0; si < nshapes; si++)
		for (int f32 = 0; f32 < 2; f32++) {
			int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
			DType dt = f32 ? DT_F32 : DT_BF16;
			bool any = false;
			for (int t = 0; t < ptx_ntiles; t++)
				any = any || (perf_wants(only, t) && (ptx_tiles[t].kind == PTX_SIMT) == f32);
			if (!any)
				continue;
			Tens a = tens_new(dt, m * k), b = tens_new(dt, k * n), c = tens_new(dt, m * n);
			tens_random(&a, 1.0);
			tens_random(&b, 1.0);
			for (int t = 0; t < ptx_ntiles; t++)
				if (perf_wants(only, t) && (ptx_tiles[t].kind == PTX_SIMT) == f32)
					perf_one(t, m, n, k, &a, &b, &c, group, false);
			tens_free(&a);
			tens_free(&b);
			tens_free(&c);
		}
}

/* perf-ab: matmul variants on one shape, interleaved round by round so a
 * power-capped GPU's drifting clock falls on every variant alike.
 * PERF_TILES="tile[:group][/EPI][/hMASK] ..." (default wg128x256x64s3; hMASK:
 * PtxMatmulSpec.l2_first, h-1 none), PERF_SHAPES,
 * PERF_EPI=EPI the variants' epilogue where they name none: plain, bias,
 * gelu (the bias and the stdlib's GELU), resid (a residual of C's shape,
 * read from the staged tile where it can), residg (from global memory),
 * biase and gelue (bias and gelu with the bias loaded in the epilogue),
 * geluf (the same GELU as x * sigmoid(x * (c + d x^2)): fewer multiplies),
 * gelut (gelu with its tail run by the consumers: PtxMatmulSpec.tail -1),
 * gelh (gelu with its tail in warps 1-3 on a tile staged in halves too: tail 1),
 * resida (resid with its boxes loaded at one k tile: src_spread -1),
 * unst (plain, the output stored from registers, not staged:
 * PtxMatmulSpec.stage_out -1),
 * PERF_ROUNDS (default 21), PERF_B2B (launches a timing, default 5).  Per
 * variant: the median ms over rounds, and its speed against the first. */
enum { AB_MAX = 8 };

/* perf-ab's epilogues: a variant's suffix (tile/EPI) or PERF_EPI names
 * one; each reads its inputs as bench/p1.py's ops do. */
enum {
	EPI_PLAIN, EPI_BIAS, EPI_GELU, EPI_RESID, EPI_RESIDG, EPI_RESIDA, EPI_BIASE, EPI_GELUE, EPI_GELUF,
	EPI_GELUT, EPI_GELH, EPI_UNST, EPI_NKINDS
};
static const char *const epi_names[EPI_NKINDS] = {"plain", "bias",  "gelu",  "resid", "residg", "resida",
                                                  "biase", "gelue", "geluf", "gelut", "gelh",  "unst"};

/* Whether epilogue kind e reads a residual of C's shape. */
static bool
epi_resid(int e)
{
	return e == EPI_RESID || e == EPI_RESIDG || e == EPI_RESIDA;
}

static int
epi_byname(const char *n)
{
	for (int i = 0; i < EPI_NKINDS; i++)
		if (!strcmp(n, epi_names[i]))
			return i;
	fprintf(stderr, "perf-ab: no epilogue '%s' (plain, bias, gelu, resid, residg, resida, biase, gelue, geluf, "
	        "gelut, gelh, unst)\n", n);
	exit(2);
}

/* The spec of epilogue kind epi: bias (row stride 0) and x @ w + b through
 * the stdlib's GELU (biase, gelue: the bias loaded in the epilogue, not
 * ahead: PtxMatmulSpec.pre_in), or a residual of the output's shape
 * (residg: read from global memory, not the staged tile; resida: staged,
 * its boxes loaded at one k tile, PtxMatmulSpec.src_spread -1). */
static void
epi_apply(PtxMatmulSpec *sp, int epi, int64_t m, int64_t n)
{
	bool res = epi_resid(epi);
	if (epi == EPI_PLAIN)
		return;
	if (epi == EPI_UNST) { /* x @ w stored from registers: the ring's depth without the staging buffer */
		sp->stage_out = -1;
		return;
	}
	sp->src_smem = epi == EPI_RESIDG ? -1 : 0;
	sp->src_spread = epi == EPI_RESIDA ? -1 : 0;
	sp->pre_in = epi == EPI_BIASE || epi == EPI_GELUE ? -1 : 0;
	sp->tail = epi == EPI_GELUT ? -1 : epi == EPI_GELH ? 1 : 0;
	sp->in[0] = res ? (PtxTensor){DT_BF16, {m * n, n, 1}} : (PtxTensor){DT_BF16, {0, 0, 1}};
	sp->nin = 1;
	sp->out[0] = (PtxTensor){DT_BF16, {m * n, n, 1}};
	if (epi == EPI_GELUF) {
		prog_or_die(&sp->epi, "mul(add(acc,in0),sigmoid(mul(add(acc,in0),add(1.5957691216057308,"
		                      "mul(0.071354816272737,mul(add(acc,in0),add(acc,in0)))))))");
		return;
	}
	prog_or_die(&sp->epi, epi == EPI_GELU || epi == EPI_GELUE || epi == EPI_GELUT || epi == EPI_GELH ? "mul(add(acc,in0),sigmoid(mul(1.5957691216057308,add(add(acc,in0),"
	                                        "mul(0.044715,mul(add(acc,in0),mul(add(acc,in0),add(acc,in0))))))))"
	                                      : "add(acc,in0)");
}

static void
perf_ab(void)
{
	int64_t shapes[PERF_MAX_SHAPES][3];
	size_t nshapes = perf_shape_list(shapes);
	const char *e = getenv("PERF_TILES") && *getenv("PERF_TILES") ? getenv("PERF_TILES") : "wg128x256x64s3";
	int rounds = getenv("PERF_ROUNDS") && atoi(getenv("PERF_ROUNDS")) > 0 ? atoi(getenv("PERF_ROUNDS")) : 21;
	int b2b = getenv("PERF_B2B") && atoi(getenv("PERF_B2B")) > 0 ? atoi(getenv("PERF_B2B")) : 5;
	char names[AB_MAX][64];
	int tiles[AB_MAX], groups[AB_MAX], nv = 0;
	int epi[AB_MAX]; /* EPI_*: PERF_EPI, or the variant's /suffix */
	int hint[AB_MAX]; /* l2_first: the variant's /hMASK (h-1: none), else 0 */
	int epi0 = getenv("PERF_EPI") && *getenv("PERF_EPI") ? epi_byname(getenv("PERF_EPI")) : EPI_PLAIN;

	while (*e && nv < AB_MAX) {
		int used = 0, g = 8;
		char *colon, *slash;
		if (sscanf(e, " %63s%n", names[nv], &used) != 1)
			break;
		e += used;
		epi[nv] = epi0;
		hint[nv] = 0;
		if ((slash = strrchr(names[nv], '/')) && slash[1] == 'h') { /* .../hMASK: PtxMatmulSpec.l2_first */
			hint[nv] = atoi(slash + 2);
			*slash = 0;
		}
		if ((slash = strchr(names[nv], '/'))) { /* tile/EPI */
			epi[nv] = epi_byname(slash + 1);
			*slash = 0;
		}
		if ((colon = strchr(names[nv], ':'))) {
			g = atoi(colon + 1);
			*colon = 0;
		}
		if ((tiles[nv] = ptx_tile_byname(names[nv])) < 0 || ptx_tiles[tiles[nv]].kind != PTX_WGMMA || g <= 0) {
			fprintf(stderr, "PERF_TILES: no wgmma tile '%s' (or a bad group)\n", names[nv]);
			exit(2);
		}
		groups[nv++] = g;
	}
	for (size_t si = 0; si < nshapes; si++) {
		int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
		Tens a = tens_new(DT_BF16, m * k), b = tens_new(DT_BF16, k * n), c = tens_new(DT_BF16, m * n);
		Tens bv = tens_new(DT_BF16, n), res = {0};
		Kern kr[AB_MAX];
		Launch l[AB_MAX];
		Buf bu[AB_MAX];
		float *t = calloc((size_t)(nv * rounds), sizeof *t);
		CUevent e0, e1;
		tens_random(&a, 1.0);
		tens_random(&b, 1.0);
		tens_random(&bv, 1.0);
		for (int v = 0; v < nv; v++)
			if (epi_resid(epi[v]) && !res.d) {
				res = tens_new(DT_BF16, m * n);
				tens_random(&res, 1.0);
			}
		CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
		CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
		for (int v = 0; v < nv; v++) {
			PtxMatmulSpec sp = mm_spec("perf_ab", DT_BF16, m, n, k, ptx_tiles[tiles[v]].name, DT_BF16);
			epi_apply(&sp, epi[v], m, n);
			sp.l2_first = hint[v];
			kr[v] = perf_kernel(&sp, groups[v], false, &bu[v], &l[v]);
			l[v].t[0] = a.d;
			l[v].t[1] = b.d;
			l[v].t[2] = epi[v] == EPI_PLAIN || epi[v] == EPI_UNST ? c.d : res.d && epi_resid(epi[v]) ? res.d : bv.d;
			l[v].t[3] = c.d;
			for (int i = 0; i < 3; i++)
				launch(&kr[v], &l[v]);
		}
		for (int r = 0; r < rounds; r++)
			for (int i = 0; i < nv; i++) {
				int v = r % 2 ? nv - 1 - i : i;
				CU(cuEventRecord(e0, stream[0]));
				for (int j = 0; j < b2b; j++)
					launch(&kr[v], &l[v]);
				CU(cuEventRecord(e1, stream[0]));
				CU(cuEventSynchronize(e1));
				CU(cuEventElapsedTime(&t[v * rounds + r], e0, e1));
				t[v * rounds + r] /= (float)b2b;
			}
		double base = 0;
		for (int v = 0; v < nv; v++) {
			qsort(&t[v * rounds], (size_t)rounds, sizeof *t, cmp_float);
			double med = t[v * rounds + rounds / 2];
			base = v ? base : med;
			printf("PERFAB m=%lld n=%lld k=%lld tile=%s%s%s%s l2_first=%d group=%d b2b=%d rounds=%d "
			       "median_ms=%.4f q1_ms=%.4f q3_ms=%.4f tflops=%.1f speed_vs_first=%.3f\n",
			       (long long)m, (long long)n, (long long)k, names[v], epi[v] ? "+" : "", epi[v] ? epi_names[epi[v]] : "",
			       kr[v].k.ntmaps > 3 ? "(staged)" : "", hint[v], groups[v], b2b, rounds, med,
			       t[v * rounds + rounds / 4], t[v * rounds + 3 * rounds / 4], 2.0 * m * n * k / (med * 1e-3) / 1e12,
			       base / med);
			CU(cuMemFree(l[v].blocks));
			CU(cuModuleUnload(kr[v].mod));
			buf_free(&bu[v]);
		}
		fflush(stdout);
		free(t);
		CU(cuEventDestroy(e0));
		CU(cuEventDestroy(e1));
		tens_free(&a);
		tens_free(&b);
		tens_free(&c);
		tens_free(&bv);
		if (res.d)
			tens_free(&res);
	}
}

/* What raising a flag after every tile costs, with a consumer thread
 * raising it and with the producer's raiser warp (wg...r): 8192^3 and the
 * ffn shapes, each tile kind with and without flags. */
static void
perf_flags(void)
{
	static const int64_t shapes[][3] = {{8192, 8192, 8192}, {8192, 8192, 14336}, {8192, 14336, 8192}};
	static const char *const tiles[] = {"wg128x256x64s3", "wg128x256x64s3r"};
	for (size_t si = 0; si < NELEM(shapes); si++) {
		int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
		Tens a = tens_new(DT_BF16, m * k), b = tens_new(DT_BF16, k * n), c = tens_new(DT_BF16, m * n);
		tens_random(&a, 1.0);
		tens_random(&b, 1.0);
		for (size_t t = 0; t < NELEM(tiles); t++)
			for (int raise = 0; raise < 2; raise++)
				perf_one(ptx_tile_byname(tiles[t]), m, n, k, &a, &b, &c, 8, raise);
		tens_free(&a);
		tens_free(&b);
		tens_free(&c);
	}
}

/* The flag protocol of both matmul kinds: mma.sync (every thread waits
 * with the CTA) and wgmma (the TMA producer waits, the consumers follow). */
static void
case_flags_late(void)
{
	flags_late("128x256x32s4");
	flags_late("wg128x256x64s4");
	flags_late("wg128x256x64s3r");
	flags_late("wg128x256x64s3"); /* staged: the storer thread raises */
	flags_late("ffma128x128x8s3");
}

static void
case_flags_timeout(void)
{
	flags_timeout("128x256x32s4");
	flags_timeout("wg128x256x64s4");
	flags_timeout("wg128x256x64s3r");
	flags_timeout("wg128x256x64s3");
	flags_timeout("ffma128x128x8s3");
}

/* Three f16 batches of 300x200x136 with a padded lda, A's batches 16
 * elements apart beyond their rows, C's rows padded to 208. */
static PtxMatmulSpec
wg_batch_spec(const char *name, const char *tile)
{
	PtxMatmulSpec s = mm_spec(name, DT_F16, 300, 200, 136, tile, DT_F16);
	s.batch = 3;
	s.lda = 144;
	s.batch_a = 300 * 144 + 16;
	s.batch_b = 136 * 200;
	s.out[0] = (PtxTensor){DT_F16, {300 * 208, 208, 1}};
	return s;
}

/* The 2-CTA cluster tile (B's boxes multicast to both CTAs of an entry of
 * 256 rows): staged and from registers, an entry whose second CTA is all
 * past m (1000 rows, 520 rows), a ragged k, f16 batches with padded
 * strides, an epilogue with inputs, a single CTA's worth (1x8x8), grids
 * smaller than the entries. */
static void
case_mm_cluster(void)
{
	const char *t = "wg256x256x64s3c2";
	mm_run("wg_c2_2048x1536x4096", mm_spec("wg_c2", DT_BF16, 2048, 1536, 4096, t, DT_BF16), nsm);
	mm_run("wg_c2_1000_bf16", mm_spec("wg_c2_1000", DT_BF16, 1000, 1000, 1000, t, DT_BF16), 6);
	mm_run("wg_c2_520x776x392_f32", mm_spec("wg_c2_f32", DT_BF16, 520, 776, 392, t, DT_F32), 4);
	mm_run("wg_c2_1x8x8", mm_spec("wg_c2_tiny", DT_BF16, 1, 8, 8, t, DT_BF16), 2);
	mm_run("wg_c2_batch_f16", wg_batch_spec("wg_c2_batch", t), 4);
	mm_run("wg_c2_epi_bias_res_tanh", epi_spec("wg_c2_epi", t), 8);
}

/* The check's name: bufs1_ as in the logs from when a second buffer was
 * asked for (bufs2_), so old and new runs compare line for line. */
static void
bufs_run(const char *tag, PtxMatmulSpec s, int grid)
{
	char name[96];
	snprintf(name, sizeof name, "bufs1_%s_%s", tag, ptx_tiles[s.tile].name);
	mm_run(name, s, grid);
}

/* The output tile staged in halves through one buffer (codegen/wgmma.c
 * wg_stageable: the tile does not fit whole beside four stages) on the
 * 4-stage tiles, plain and the 2-CTA cluster: a full grid, few CTAs with
 * many entries each (the buffer's `free` phase wraps many times), ragged
 * edges, batches of f16, a fused epilogue with inputs, the 1x8x8 corner,
 * each twice (a barrier phase left behind would show in the second
 * call); then both ring depths with the output not staged at all. */
static void
case_mm_bufs(void)
{
	static const char *const tiles[] = {"wg128x256x64s4", "wg256x256x64s4c2"};
	int saved = mm_calls;
	mm_calls = 2;
	for (size_t i = 0; i < NELEM(tiles); i++) {
		const char *t = tiles[i];
		bufs_run("2048x1536x4096", mm_spec("bufs", DT_BF16, 2048, 1536, 4096, t, DT_BF16), nsm);
		bufs_run("1000_g3", mm_spec("bufs_1000", DT_BF16, 1000, 1000, 1000, t, DT_BF16), 3);
		bufs_run("520x776x392_g5", mm_spec("bufs_520", DT_BF16, 520, 776, 392, t, DT_BF16), 5);
		bufs_run("1x8x8", mm_spec("bufs_tiny", DT_BF16, 1, 8, 8, t, DT_BF16), 2);
		bufs_run("batch_f16", wg_batch_spec("bufs_batch", t), 4);
		bufs_run("epi", epi_spec("bufs_epi", t), 7);
	}
	/* the 16-bit output stored from registers (PtxMatmulSpec.stage_out -1,
	 * perf-ab's unst): no staging buffer on either ring depth */
	for (int st = 3; st <= 4; st++) {
		char tile[32], name[64];
		snprintf(tile, sizeof tile, "wg128x256x64s%d", st);
		PtxMatmulSpec u = mm_spec("unst", DT_BF16, 1000, 1000, 1000, tile, DT_BF16);
		u.stage_out = -1;
		snprintf(name, sizeof name, "unstaged_1000_g3_%s", tile);
		mm_run(name, u, 3);
		u = mm_spec("unst_2048", DT_BF16, 2048, 1536, 4096, tile, DT_BF16);
		u.stage_out = -1;
		snprintf(name, sizeof name, "unstaged_2048x1536x4096_%s", tile);
		mm_run(name, u, nsm);
	}
	mm_calls = saved;
}

/* The stream-K tile (codegen/wgmma.c wg_sk_setup) on grids whose last wave
 * would be mostly idle, so its entries are cut along k into 2 to 4 pieces,
 * one a CTA, the last to finish adding the others' sums: after whole waves
 * and with no whole wave (ndp = 0), pieces of uneven length (7 k tiles in
 * 3), ragged edges, f32 output (the epilogue from registers, no storer),
 * K-major B, a fused epilogue with two outputs, batches, and grids where
 * nothing is cut (a last wave full, or too full).  Each runs twice, so a
 * counter left dirty or a stale partial sum read through L1 would show in
 * the second call's output (mm_streamk_big: 2048x8192x4096 on 100 CTAs). */
static void
case_mm_streamk(void)
{
	const char *t = "wg128x256x64s3k";
	PtxMatmulSpec s;
	mm_calls = 2;
	mm_run("sk_1000_g10", mm_spec("sk_1000", DT_BF16, 1000, 1000, 1000, t, DT_BF16), 10);
	mm_run("sk_1000_g15_f32", mm_spec("sk_1000_f32", DT_BF16, 1000, 1000, 1000, t, DT_F32), 15);
	mm_run("sk_520x776x392_g6", mm_spec("sk_520", DT_BF16, 520, 776, 392, t, DT_BF16), 6);
	mm_run("sk_520x776x392_g9", mm_spec("sk_520", DT_BF16, 520, 776, 392, t, DT_BF16), 9);
	mm_run("sk_2048x1536x4096_g40", mm_spec("sk_2048", DT_BF16, 2048, 1536, 4096, t, DT_BF16), 40);
	mm_run("sk_2048x1536x4096_g32_whole", mm_spec("sk_2048w", DT_BF16, 2048, 1536, 4096, t, DT_BF16), 32);
	mm_run("sk_1000_g7_uncut", mm_spec("sk_1000u", DT_BF16, 1000, 1000, 1000, t, DT_BF16), 7);
	s = mm_spec("sk_bt", DT_BF16, 1000, 1000, 1000, t, DT_BF16);
	s.bt = true;
	mm_run("sk_bt_1000_g10", s, 10);
	mm_run("sk_epi_bias_res_tanh_g3", epi_spec("sk_epi", t), 3);
	s = mm_spec("sk_batch", DT_F16, 300, 200, 1000, t, DT_F16);
	s.batch = 3;
	s.batch_a = 300 * 1000;
	s.batch_b = 1000 * 200;
	s.out[0] = (PtxTensor){DT_F16, {300 * 200, 200, 1}};
	mm_run("sk_batch_f16_g4", s, 4);
	mm_calls = 1;
}

/* Stream-K at a size users run: 512 entries on 100 CTAs, the last 12 cut
 * in 4 pieces each. */
static void
case_mm_streamk_big(void)
{
	mm_calls = 2;
	mm_run("sk_2048x8192x4096_g100", mm_spec("sk_big", DT_BF16, 2048, 8192, 4096, "wg128x256x64s3k", DT_BF16), 100);
	mm_calls = 1;
}

/* B read K-major (bt: the matmul of x @ transpose(w), w stored n x k):
 * every tile (staged and direct epilogues), ragged n and k (TMA's zero
 * fill of the {64 k, BN} box), f16 batches with a padded ldb and a shared
 * A, a fused epilogue, 1x8x8. */
static void
case_mm_wgmma_bt(void)
{
	static const char *const tiles[] = {"wg128x256x64s4", "wg128x256x64s3", "wg128x128x64s6", "wg128x256x64s3r"};
	PtxMatmulSpec s;
	for (int i = 0; i < (int)NELEM(tiles); i++) {
		s = mm_spec("wg_bt", DT_BF16, 1000, 1000, 1000, tiles[i], DT_BF16);
		s.bt = true;
		mm_run(i == 0 ? "wg_bt_1000_s4" : i == 1 ? "wg_bt_1000_s3" : i == 2 ? "wg_bt_1000_s6" : "wg_bt_1000_s3r", s, 5);
	}
	s = mm_spec("wg_bt_tiny", DT_BF16, 1, 8, 8, "wg128x256x64s3", DT_BF16);
	s.bt = true;
	mm_run("wg_bt_1x8x8_s3", s, 1);
	s = mm_spec("wg_bt_big", DT_BF16, 2048, 1536, 4096, "wg128x256x64s3", DT_BF16);
	s.bt = true;
	mm_run("wg_bt_2048x1536x4096_s3", s, nsm);
	s = wg_batch_spec("wg_bt_batch", "wg128x256x64s3");
	s.bt = true;
	s.ldb = 144; /* rows of w (B's columns) padded past k = 136 */
	s.batch_b = 200 * 144 + 8;
	mm_run("wg_bt_batch_f16_s3", s, 11);
	s = mm_spec("wg_bt_ashared", DT_F16, 256, 512, 192, "wg128x128x64s6", DT_F16);
	s.bt = true;
	s.batch = 2;
	s.batch_b = 512 * 192;
	s.out[0] = (PtxTensor){DT_F16, {256 * 512, 512, 1}};
	mm_run("wg_bt_batch_shared_a_s6", s, 3);
	s = epi_spec("wg_bt_epi", "wg128x256x64s4");
	s.bt = true;
	s.ldb = 0;
	mm_run("wg_bt_epi_bias_res_tanh", s, 7);
}

/* The wgmma + TMA kernel: ragged edges everywhere (TMA's zero fill and the
 * predicated epilogue), several tiles per CTA, f16, batches with a shared
 * operand, chunks of bigger tensors, a fused epilogue, the 128x128 tile. */
static void
case_mm_wgmma(void)
{
	PtxMatmulSpec s;
	mm_run("wg_1000_bf16", mm_spec("wg_1000", DT_BF16, 1000, 1000, 1000, "wg128x256x64s4", DT_BF16), 5);
	mm_run("wg_1x8x8", mm_spec("wg_tiny", DT_BF16, 1, 8, 8, "wg128x256x64s4", DT_F32), 1);
	mm_run("wg_130x72x24_f16", mm_spec("wg_small", DT_F16, 130, 72, 24, "wg128x128x64s6", DT_F16), 3);
	mm_run("wg_2048x1536x4096_s3", mm_spec("wg_s3", DT_BF16, 2048, 1536, 4096, "wg128x256x64s3", DT_BF16), nsm);
	mm_run("wg_batch_f16", wg_batch_spec("wg_batch", "wg128x256x64s4"), 11);
	s = mm_spec("wg_bshared", DT_BF16, 256, 512, 192, "wg128x256x64s4", DT_F32);
	s.batch = 2;
	s.batch_a = 256 * 192;
	s.out[0] = (PtxTensor){DT_F32, {256 * 512, 512, 1}};
	mm_run("wg_batch_shared_b", s, 3);
	mm_run("wg_epi_bias_res_tanh", epi_spec("wg_epi", "wg128x256x64s4"), 7);
	/* the staged epilogue (the tile through shared memory and TMA stores):
	 * ragged edges, batches, one output after a program with inputs */
	mm_run("wg_1000_s3", mm_spec("wg_1000s", DT_BF16, 1000, 1000, 1000, "wg128x256x64s3", DT_BF16), 5);
	mm_run("wg_1x8x8_s6", mm_spec("wg_tiny6", DT_BF16, 1, 8, 8, "wg128x128x64s6", DT_BF16), 1);
	mm_run("wg_batch_f16_s3", wg_batch_spec("wg_batch_s", "wg128x256x64s3"), 11);
	s = mm_spec("wg_epi_s", DT_BF16, 250, 384, 512, "wg128x256x64s3", DT_BF16);
	s.in[0] = (PtxTensor){DT_BF16, {0, 0, 1}};
	s.in[1] = (PtxTensor){DT_BF16, {0, 384, 1}};
	s.nin = 2;
	s.out[0] = (PtxTensor){DT_BF16, {0, 384, 1}};
	prog_or_die(&s.epi, "out0=add(mul(tanh(add(acc,in0)),0.5),in1)");
	mm_run("wg_epi_staged", s, 7);
	mm_run("wg_520x264x1000_s6", mm_spec("wg_s6", DT_BF16, 1000, 520, 264, "wg128x128x64s6", DT_BF16), nsm);
	case_mm_wgmma_bt();
}

/* The f32 (FFMA) kernel: ragged edges and odd leading dimensions (its
 * 4-byte copies take any), several tiles per CTA, both tiles, batches with
 * a shared B and chunks of bigger tensors, f32 and bf16 outputs, a fused
 * epilogue, the examples' tiny shapes. */
static void
case_mm_f32(void)
{
	PtxMatmulSpec s;
	mm_run("f32_1000", mm_spec("f32_1000", DT_F32, 1000, 1000, 1000, NULL, DT_F32), 5);
	mm_run("f32_4x4x4", mm_spec("f32_tiny", DT_F32, 4, 4, 4, NULL, DT_F32), 1);
	mm_run("f32_1x8x8", mm_spec("f32_1x8", DT_F32, 1, 8, 8, "ffma64x64x8s3", DT_F32), 1);
	mm_run("f32_4097x511x263", mm_spec("f32_rag", DT_F32, 4097, 511, 263, NULL, DT_F32), nsm);
	mm_run("f32_130x72x27_bf16out", mm_spec("f32_bf", DT_F32, 130, 72, 27, "ffma64x64x8s3", DT_BF16), 3);
	s = mm_spec("f32_batch", DT_F32, 300, 200, 137, NULL, DT_F32);
	s.batch = 3;
	s.lda = 141;
	s.ldb = 203;
	s.batch_a = 300 * 141 + 5;
	s.batch_b = 137 * 203;
	s.out[0] = (PtxTensor){DT_F32, {300 * 209, 209, 1}};
	mm_run("f32_batch_odd_ld", s, 11);
	s = mm_spec("f32_bshared", DT_F32, 256, 512, 192, NULL, DT_F32);
	s.batch = 2;
	s.batch_a = 256 * 192;
	s.out[0] = (PtxTensor){DT_F32, {256 * 512, 512, 1}};
	mm_run("f32_batch_shared_b", s, 3);
	s = epi_spec("f32_epi", PTX_F32_TILE_WIDE);
	s.ab = DT_F32;
	mm_run("f32_epi_bias_res_tanh", s, 7);
}

/* Small enough for compute-sanitizer: edges, two tiles per CTA, a flag. */
static void
case_mm_wgmma_small(void)
{
	mm_run("wg_300x520x200", mm_spec("wg_san", DT_BF16, 300, 520, 200, "wg128x256x64s4", DT_BF16), 3);
	mm_run("wg_300x520x200_staged", mm_spec("wg_san_s", DT_BF16, 300, 520, 200, "wg128x256x64s3", DT_BF16), 3);
	{
		PtxMatmulSpec s = mm_spec("wg_san_bt", DT_BF16, 300, 520, 200, "wg128x256x64s3", DT_BF16);
		s.bt = true;
		mm_run("wg_300x520x200_bt_staged", s, 3);
	}
}

/* ---- attention (codegen/attn.c) ---- */

typedef struct AtCase {
	PtxAttnSpec s;
	Tens q, k, v, o, m, l;
	double *ro, *rm, *rl;
} AtCase;

/* Row (head z, query i) of the f64 reference: the softmax written out. */
static void
at_ref_row(void *v, int64_t zi)
{
	AtCase *c = v;
	const PtxAttnSpec *s = &c->s;
	int64_t z = zi / s->sq, i = zi % s->sq, D = s->d;
	double *sc = malloc((size_t)s->sk * sizeof *sc), mx = -INFINITY, l = 0;
	for (int64_t j = 0; j < s->sk; j++) {
		double d = 0;
		for (int64_t e = 0; e < D; e++)
			d += ptx_load(s->dt, c->q.h, (z * s->sq + i) * D + e) * ptx_load(s->dt, c->k.h, (z * s->sk + j) * D + e);
		sc[j] = s->causal && j > i + s->diag ? -INFINITY : d * s->scale;
		if (sc[j] > mx)
			mx = sc[j];
	}
	for (int64_t j = 0; j < s->sk; j++)
		l += sc[j] = exp(sc[j] - mx);
	for (int64_t e = 0; e < D; e++) {
		double o = 0;
		for (int64_t j = 0; j < s->sk; j++)
			o += sc[j] * ptx_load(s->dt, c->v.h, (z * s->sk + j) * D + e);
		c->ro[(z * s->sq + i) * D + e] = s->normed ? o / l : o;
	}
	if (s->stats) {
		c->rm[zi] = mx;
		c->rl[zi] = l;
	}
	free(sc);
}

static Tens
at_poisoned(DType dt, int64_t n)
{
	Tens t = tens_new(dt, n + 256); /* 256 elements past the end must keep their poison */
	tens_poison(&t);
	return t;
}

/* The kernel's entries as ptx_attn_blocks orders them (and lower.c: a
 * head's query tiles together), or by_tile: every head's tile before any
 * head's next (lower.c's order until 2026-12-07), to time the two. */
static PtxBlock *
at_blocks(const PtxAttnSpec *s, int64_t n, bool by_tile)
{
	PtxBlock *bl = calloc((size_t)n, sizeof *bl), *out;
	int64_t tm = n / s->batch;
	ptx_attn_blocks(s, bl);
	if (!by_tile)
		return bl;
	out = calloc((size_t)n, sizeof *out);
	for (int64_t i = 0; i < n; i++)
		out[i] = bl[i % s->batch * tm + i / s->batch];
	free(bl);
	return out;
}

/* Runs an attention spec on `grid` CTAs (0: as many as fit) and checks o
 * (and m, l) against the f64 reference, every output poisoned first. */
static void
at_run1(const char *name, PtxAttnSpec s, int grid, bool by_tile)
{
	AtCase c = {.s = s};
	Buf b = {0};
	PtxKernel k;
	Launch l = {0};
	char what[160];
	double t0;
	int64_t nq = s.batch * s.sq * s.d, nk = s.batch * s.sk * s.d;

	s.name = c.s.name = "syn_attn";
	printf("--- %s: attention %s heads %lld sq %lld sk %lld d %lld%s%s%s\n", name, ty_dtypes[s.dt].name,
	       (long long)s.batch, (long long)s.sq, (long long)s.sk, (long long)s.d, s.causal ? " causal" : "",
	       s.normed ? "" : " unnormalised", s.stats ? " stats" : "");
	ptx_emit_attn(&b, &c.s, &k);
	Kern kr = kern_load(&b, &k);
	c.q = tens_new(s.dt, nq);
	c.k = tens_new(s.dt, nk);
	c.v = tens_new(s.dt, nk);
	tens_random(&c.q, 1.5);
	tens_random(&c.k, 1.5);
	tens_random(&c.v, 1.0);
	c.o = at_poisoned(s.dt, nq);
	if (s.stats) {
		c.m = at_poisoned(DT_F32, s.batch * s.sq);
		c.l = at_poisoned(DT_F32, s.batch * s.sq);
	}
	PtxBlock *bl = at_blocks(&c.s, k.nblocks, by_tile);
	l.blocks = upload_blocks(bl, k.nblocks);
	l.nblocks = (uint32_t)k.nblocks;
	l.grid = grid ? grid : (int)(k.nblocks < (int64_t)nsm * kr.per_sm ? k.nblocks : (int64_t)nsm * kr.per_sm);
	l.s = stream[0];
	l.t[0] = c.q.d;
	l.t[1] = c.k.d;
	l.t[2] = c.v.d;
	l.t[3] = c.o.d;
	if (s.stats) {
		l.t[4] = c.m.d;
		l.t[5] = c.l.d;
	}
	launch(&kr, &l);
	CU(cuStreamSynchronize(l.s));
	tens_fetch(&c.o);
	if (s.stats) {
		tens_fetch(&c.m);
		tens_fetch(&c.l);
	}
	t0 = now_s();
	c.ro = ref_new(c.o.n);
	c.rm = ref_new(s.batch * s.sq + 256);
	c.rl = ref_new(s.batch * s.sq + 256);
	par_for(s.batch * s.sq, at_ref_row, &c);
	printf("  reference: %.2f s, grid %d\n", now_s() - t0, l.grid);
	snprintf(what, sizeof what, "%s/o", name);
	compare(what, &c.o, c.ro);
	if (s.stats) { /* f32, after exp2 approximations and f32 sums of up to sk terms */
		snprintf(what, sizeof what, "%s/max", name);
		compare_tol(what, &c.m, c.rm, 1e-4);
		snprintf(what, sizeof what, "%s/sum", name);
		compare_tol(what, &c.l, c.rl, 1e-3);
	}
	CU(cuMemFree(l.blocks));
	free(bl);
	tens_free(&c.q);
	tens_free(&c.k);
	tens_free(&c.v);
	tens_free(&c.o);
	if (s.stats) {
		tens_free(&c.m);
		tens_free(&c.l);
	}
	free(c.ro);
	free(c.rm);
	free(c.rl);
	buf_free(&b);
	CU(cuModuleUnload(kr.mod));
}

/* The kernel's forms, checked (at_run) and timed (perf-attn): mma.sync
 * and wgmma + TMA, each with the default softmax and with both of its
 * forms asked for (PtxAttnSpec.softmax: 1 scaled, 2 folded), so that
 * either form is checked whatever the default picks; the default in the
 * entry order by tile (at_blocks); at d = 64 192-row entries
 * (PtxAttnSpec.bm: three consumer warpgroups) without turns
 * (PtxAttnSpec.pingpong -1; their default has them); and both entry sizes
 * with the consumers' wgmma in turns (pingpong 1); key tiles of 176 and
 * 192 (PtxAttnSpec.bn, two stages at d = 128). */
static const struct {
	const char *name;
	bool tma;
	int softmax;
	bool by_tile;
	int bm, bn;
	int pingpong;
} at_forms[] = {{"sync", false, 0, false, 0, 0, 0},      {"sync1", false, 1, false, 0, 0, 0},
                {"sync2", false, 2, false, 0, 0, 0},     {"tma", true, 0, false, 0, 0, 0},
                {"tma1", true, 1, false, 0, 0, 0},       {"tma2", true, 2, false, 0, 0, 0},
                {"tmat", true, 0, true, 0, 0, 0},        {"tma192", true, 0, false, 192, 0, -1},
                {"tmap", true, 0, false, 0, 0, 1},       {"tma192p", true, 0, false, 192, 0, 1},
                {"tma176", true, 0, false, 0, 176, 0},   {"tmak192", true, 0, false, 0, 192, 0}};

/* Whether form f applies to spec s (192-row entries only at d = 64). */
static bool
at_form_fits(size_t f, const PtxAttnSpec *s)
{
	return !at_forms[f].bm || s->d == 64;
}

/* Every form of the kernel (at_forms) that fits the spec: mma.sync has
 * 64-row entries, the others 128 (what the compiler emits) or 192. */
static void
at_run(const char *name, PtxAttnSpec s, int grid)
{
	char n[96];
	for (size_t f = 0; f < NELEM(at_forms); f++) {
		if (!at_form_fits(f, &s))
			continue;
		s.tma = at_forms[f].tma;
		s.softmax = at_forms[f].softmax;
		s.bm = at_forms[f].bm;
		s.bn = at_forms[f].bn;
		s.pingpong = at_forms[f].pingpong;
		snprintf(n, sizeof n, "%s%s%s", name, f ? "/" : "", f ? at_forms[f].name : "");
		at_run1(n, s, grid, at_forms[f].by_tile);
	}
}

static PtxAttnSpec
at_spec(DType dt, int64_t heads, int64_t sq, int64_t sk, int64_t d, bool causal, int64_t diag)
{
	PtxAttnSpec s = {.dt = dt, .batch = heads, .sq = sq, .sk = sk, .d = d, .scale = 1 / sqrt((double)d),
	                 .causal = causal, .diag = diag, .normed = true};
	return s;
}

/* Every dtype and head dim, ragged and whole tiles, causal and not, the
 * partial outputs, a grid smaller than the blocks (a CTA runs several). */
static void
case_attn(void)
{
	static const DType dts[2] = {DT_BF16, DT_F16};
	for (int t = 0; t < 2; t++)
		for (int d = 64; d <= 128; d *= 2) {
			char n[64];
			snprintf(n, sizeof n, "attn_%s_d%d_s1000", ty_dtypes[dts[t]].name, d);
			at_run(n, at_spec(dts[t], 3, 1000, 1000, d, false, 0), 0);
			snprintf(n, sizeof n, "attn_%s_d%d_causal_s777", ty_dtypes[dts[t]].name, d);
			at_run(n, at_spec(dts[t], 2, 777, 777, d, true, 0), 0);
			snprintf(n, sizeof n, "attn_%s_d%d_s512_grid5", ty_dtypes[dts[t]].name, d);
			at_run(n, at_spec(dts[t], 4, 512, 512, d, false, 0), 5);
		}
	{
		PtxAttnSpec s = at_spec(DT_BF16, 2, 300, 450, 128, true, 150); /* a diagonal block: ring attention */
		s.normed = false;
		s.stats = true;
		at_run("attn_bf16_d128_partials_diag150", s, 0);
		s = at_spec(DT_F16, 2, 130, 70, 64, false, 0);
		s.stats = true;
		at_run("attn_f16_d64_sq130_sk70_stats", s, 0);
		at_run("attn_bf16_d64_sq1", at_spec(DT_BF16, 5, 1, 333, 64, false, 0), 0);
	}
}

/* Small enough for compute-sanitizer: ragged, causal, stats, two blocks per CTA. */
static void
case_attn_small(void)
{
	PtxAttnSpec s = at_spec(DT_BF16, 2, 150, 150, 128, true, 0);
	s.stats = true;
	at_run("attn_san", s, 3);
}

/* ms per launch of l over `reps` back-to-back launches (events), after 3
 * to warm up. */
static double
launches_ms(const Kern *k, Launch *l, int reps)
{
	CUevent e0, e1;
	float ms;
	CU(cuEventCreate(&e0, 0));
	CU(cuEventCreate(&e1, 0));
	for (int w = 0; w < 3; w++)
		launch(k, l);
	CU(cuEventRecord(e0, l->s));
	for (int r = 0; r < reps; r++)
		launch(k, l);
	CU(cuEventRecord(e1, l->s));
	CU(cuEventSynchronize(e1));
	CU(cuEventElapsedTime(&ms, e0, e1));
	CU(cuEventDestroy(e0));
	CU(cuEventDestroy(e1));
	return ms / reps;
}

static bool perf_full_grid; /* perf_row_kernel: a CTA an entry rather than the persistent grid */

/* One row kernel timed (events over 20 back-to-back launches) on random
 * inputs, the persistent grid as libsyncrt gives it; one PERF line, GB/s
 * counting the rows in and out once. */
static void
perf_row_kernel(const char *op, const char *variant, const PtxRowsSpec *s)
{
	int64_t M = s->rows, L = s->len;
	Buf b = {0};
	PtxKernel k;
	Launch l = {0};
	Tens t[PTX_MAX_TENSORS + 1];
	double ms;
	int nt = 0;
	emit_rows(&b, s, &k, false);
	Kern kr = kern_load(&b, &k);
	for (int a = 0; a < s->nin; a++) {
		t[nt] = tens_new(DT_BF16, s->in[a].stride[0] ? M * L : L);
		tens_random(&t[nt], 2.0);
		l.t[a] = t[nt++].d;
	}
	t[nt] = tens_new(DT_BF16, M * L);
	l.t[s->nin] = t[nt++].d;
	l.blocks = plain_blocks(k.nblocks);
	l.nblocks = (uint32_t)k.nblocks;
	l.grid = (int)(k.nblocks < (int64_t)nsm * kr.per_sm ? k.nblocks : (int64_t)nsm * kr.per_sm);
	if (perf_full_grid) /* a CTA an entry: the hardware hands entries to SMs as they free up */
		l.grid = (int)k.nblocks;
	l.s = stream[0];
	ms = launches_ms(&kr, &l, 20);
	printf("PERF rows %s %lldx%lld %s: %.4f ms %.0f GB/s (entries %lld, grid %d, %d threads, %d CTAs/SM, %d regs)\n", op,
	       (long long)M, (long long)L, variant, ms, 4.0 * (double)M * (double)L / (ms * 1e-3) / 1e9, (long long)k.nblocks,
	       l.grid, k.threads, kr.per_sm, kr.regs);
	fflush(stdout);
	CU(cuMemFree(l.blocks));
	for (int a = 0; a < nt; a++)
		tens_free(&t[a]);
	CU(cuModuleUnload(kr.mod));
	buf_free(&b);
}

/* A row op (row_op_spec's name) at rows x len, for the perf tables. */
typedef struct RowShape {
	const char *op;
	int64_t rows, len;
} RowShape;

/* Row kernels at the shapes bench/p1.py calls, for each rows-per-entry
 * choice (lower.c rows_per_block picks one; the persistent grid walks
 * entries strided, so entries per CTA decide the last round's idle share). */
static void
perf_rows(void)
{
	static const RowShape sz[] = {{"rmsnorm", 8192, 8192}, {"layernorm", 8192, 8192}, {"softmax", 8192, 8192}, {"rmsnorm", 1024, 8192},
	          {"rmsnorm", 4096, 50304}, {"rmsnorm", 1024, 50257}, {"layernorm", 1024, 50257}, {"softmax", 1024, 50257}};
	static const int rbs[] = {1, 2, 4, 8};
	for (size_t i = 0; i < NELEM(sz); i++)
		for (size_t j = 0; j < NELEM(rbs); j++) {
			PtxRowsSpec s = row_op_spec(sz[i].op, sz[i].rows, sz[i].len);
			char v[16];
			s.rows_per_block = rbs[j];
			snprintf(v, sizeof v, "rb %d", rbs[j]);
			perf_row_kernel(sz[i].op, v, &s);
		}
}

/* CTA mode's peeled head and tail elements loaded each time (cache_ends
 * -1), held in registers (rows.c peel_cache, the default), and that with
 * the prefetch of the next row (rows.c cta_prefetch; off in the others,
 * though a peeled softmax has it by default) or with the streamed
 * vectors loaded past L1 (l1_stream), flagless and a row an
 * entry as lower.c makes them, at the shapes bench/p1.py calls: three
 * rounds of the variants one after another, so a drifting clock falls on
 * all alike (compare the medians). */
static void
perf_pf(void)
{
	static const RowShape sz[] = {{"rmsnorm", 8192, 8192},    {"layernorm", 8192, 8192},  {"softmax", 8192, 8192},
	          {"rmsnorm", 1024, 8192},    {"rmsnorm", 4096, 50304},   {"layernorm", 4096, 50304},
	          {"softmax", 4096, 50304},   {"rmsnorm", 1024, 50257},   {"layernorm", 1024, 50257},
	          {"softmax", 1024, 50257}};
	for (size_t i = 0; i < NELEM(sz); i++)
		for (int round = 0; round < 3; round++)
			for (int v = 0; v < 5; v++) {
				static const char *const name[] = {"flagless ends-uncached", "flagless", "flagless prefetch",
				                                   "flagless l1-stream", "flagless l1-never"};
				PtxRowsSpec s = row_op_spec(sz[i].op, sz[i].rows, sz[i].len);
				s.rows_per_block = 1;
				s.flagless = true;
				s.cache_ends = v == 0 ? -1 : 0;
				s.prefetch = v == 2 ? 1 : -1; /* on or off, whatever rows.c's default */
				s.l1_stream = v == 3 ? 1 : v == 4 ? -1 : 0;
				perf_row_kernel(sz[i].op, name[v], &s);
			}
}

/* CTA mode's shape: threads per row and CTAs an SM (.minnctapersm, which
 * makes ptxas fit the registers), and the barriers between entries
 * (flagless: none, as lower.c's kernels without flags have) with and
 * without the prefetch of the next row (rows.c cta_prefetch), beside what
 * rows.c chooses ("default"), one row an entry.  PERF_CTA_OPS (default:
 * all) picks ops by name. */
static void
perf_cta(void)
{
	static const RowShape sz[] = {{"rmsnorm", 8192, 8192},  {"layernorm", 8192, 8192},  {"softmax", 8192, 8192},
	          {"rmsnorm", 1024, 8192},  {"layernorm", 1024, 8192},  {"softmax", 1024, 8192},
	          {"rmsnorm", 4096, 50304}, {"layernorm", 4096, 50304}, {"softmax", 4096, 50304},
	          {"rmsnorm", 1024, 50257}, {"layernorm", 1024, 50257}, {"softmax", 1024, 50257},
	          {"rmsnorm", 8192, 4096},  {"rmsnorm", 64, 1024},      {"rmsnorm", 8192, 1024}};
	static const struct {
		int T, min;
		bool flagless;
		int pf;
	} v[] = {{0, 0, false, -1}, {0, 0, true, -1}, {0, 0, true, 1}, {256, 8, true, -1}, {512, 4, true, -1}};
	const char *only = getenv("PERF_CTA_OPS");
	for (size_t i = 0; i < NELEM(sz); i++) {
		if (only && !strstr(only, sz[i].op))
			continue;
		for (size_t j = 0; j < NELEM(v); j++) {
			PtxRowsSpec s = row_op_spec(sz[i].op, sz[i].rows, sz[i].len);
			char name[48];
			if (sz[i].len < PTX_ROWS_CTA_LEN && v[j].T)
				continue; /* a warp per row: no CTA shape */
			s.rows_per_block = sz[i].len < PTX_ROWS_CTA_LEN ? 8 : 1;
			s.cta_threads = v[j].T;
			s.cta_min = v[j].min;
			s.flagless = v[j].flagless;
			s.prefetch = v[j].pf;
			snprintf(name, sizeof name, "T %d min %d%s%s", v[j].T, v[j].min, v[j].flagless ? " flagless" : "",
			         v[j].flagless && v[j].pf > 0 ? " prefetch" : "");
			perf_row_kernel(sz[i].op, name, &s);
		}
	}
}

static int env_ints(const char *name, const char *dflt, int *v, int max);

/* CTA mode, flagless and a row an entry, in variants: on the persistent
 * grid (as libsyncrt launches it: occupancy x SMs, each CTA taking every
 * grid-th row) against a CTA a row, where the hardware gives each SM its
 * next row as one of its CTAs finishes; each with rows.c's threads and
 * with 512 threads at four CTAs an SM (Inductor's shape at 8192 x 8192);
 * a norm's weights read through L1 each row (weights_smem -1) against the
 * copy in shared memory, which rows.c makes where a CTA has its SM, and
 * that copy forced on smaller CTAs; a peeled row's map made once for any
 * head (split_heads -1) against the default (once per head), and the
 * default with the copy forced at vocabulary width (a layernorm's two
 * weights exceed its default bound).
 * Three rounds of the variants one after another (compare medians);
 * PERF_GRID_ONLY ("layernorm 1024x50257") one shape, one round;
 * PERF_GRID_V the variants (default all: 0-7 as `name` lists them);
 * PERF_GRID_L1 the streamed loads' L1 policy for all (PtxRowsSpec.l1_stream:
 * 0 rows.c's, 1 past L1, -1 through it). */
static void
perf_grid(void)
{
	static const RowShape sz[] = {{"rmsnorm", 8192, 8192},    {"layernorm", 8192, 8192},  {"softmax", 8192, 8192},
	          {"rmsnorm", 1024, 8192},    {"layernorm", 1024, 8192},  {"softmax", 1024, 8192},
	          {"rmsnorm", 4096, 50304},   {"layernorm", 4096, 50304}, {"softmax", 4096, 50304},
	          {"rmsnorm", 1024, 50257},   {"layernorm", 1024, 50257}, {"softmax", 1024, 50257}};
	static const char *const name[] = {"persistent", "cta-a-row", "T512 persistent", "T512 cta-a-row",
	                                   "weights via L1", "weights in smem forced", "heads not split",
	                                   "wide, weights in smem forced"};
	const char *only = getenv("PERF_GRID_ONLY");
	int vs[8], nv = env_ints("PERF_GRID_V", "0,1,2,3,4,5,6,7", vs, 8), l1 = 0;
	RowShape one[1];
	const RowShape *list = sz;
	size_t nlist = NELEM(sz);
	char opname[16];
	long long R, L;
	/* any "op RxL" of row_op_spec's ops, not only the table's (an aligned
	 * twin of a peeled length, say) */
	if (only && sscanf(only, "%15s %lldx%lld", opname, &R, &L) == 3) {
		static const char *const ops[] = {"rmsnorm", "layernorm", "softmax"};
		size_t o = 0;
		while (o < NELEM(ops) && strcmp(opname, ops[o]))
			o++;
		if (o == NELEM(ops)) {
			fprintf(stderr, "PERF_GRID_ONLY: no row op '%s' (rmsnorm, layernorm, softmax)\n", opname);
			exit(2);
		}
		one[0] = (RowShape){ops[o], R, L};
		list = one;
		nlist = 1;
	}
	env_ints("PERF_GRID_L1", "0", &l1, 1);
	for (size_t i = 0; i < nlist; i++)
		for (int round = 0; round < (only ? 1 : 3); round++)
			for (int k = 0; k < nv; k++) {
				int v = vs[k];
				bool wide = list[i].len > 8192, weights = strcmp(list[i].op, "softmax") != 0;
				PtxRowsSpec s = row_op_spec(list[i].op, list[i].rows, list[i].len);
				char shape[64];
				snprintf(shape, sizeof shape, "%s %lldx%lld", list[i].op, (long long)list[i].rows, (long long)list[i].len);
				bool peeled = list[i].len % 8 != 0;
				if ((only && strcmp(only, shape)) || v < 0 || v > 7 || ((v == 2 || v == 3) && wide) ||
				    (v == 4 && (!wide || !weights)) || (v == 5 && (wide || !weights)) ||
				    (v == 6 && (!peeled || !weights)) || (v == 7 && (!wide || !weights)))
					continue; /* a vocabulary row takes 1024 threads, which copy weights anyway */
				s.rows_per_block = 1;
				s.flagless = true;
				s.cta_threads = v == 2 || v == 3 ? 512 : 0;
				s.cta_min = v == 2 || v == 3 ? 4 : 0;
				s.weights_smem = v == 4 ? -1 : v == 5 || v == 7 ? 1 : 0;
				s.split_heads = v == 6 ? -1 : 0;
				s.l1_stream = l1;
				perf_full_grid = v == 1 || v == 3;
				perf_row_kernel(list[i].op, name[v], &s);
				perf_full_grid = false;
			}
}

/* A comma-separated list of ints from the environment, or dflt. */
static int
env_ints(const char *name, const char *dflt, int *v, int max)
{
	const char *e = getenv(name);
	int n = 0;
	char *end;
	for (e = e && *e ? e : dflt; *e && n < max; e = *end ? end + 1 : end) {
		v[n++] = (int)strtol(e, &end, 10);
		if (end == e)
			break;
	}
	return n;
}

/* Reductions over the first dim (column mode) at each rows per block
 * and split (none, a cluster of 8, groups of 8 to 256), the grid as
 * libsyncrt gives it; GB/s counts x in and out once (the HBM floor's
 * bytes).  Variant "default" is what lower.c and rows.c choose.
 * PERF_COLS_OPS (default rmsnorm0,layernorm0,softmax0) picks the ops,
 * PERF_COLS_SIZES ("8192x8192,..." as len x rows, the shape over dim 0)
 * the shapes, PERF_COLS_RB the rows per block (0: the rule's; each with
 * the rule's split unless PERF_COLS_ALL=1), and
 * PERF_COLS_CACHE the col_cache values tried on each (default 0, the
 * rule's; rows.c col_cache_plan), PERF_COLS_PIPE=1 each group's entries
 * pipelined where they can be (rows.c col_pipe_ok), every kernel flagless. */
static void
perf_cols(void)
{
	static const char *const ops[] = {"rmsnorm0", "layernorm0", "softmax0"};
	/* rows (columns of x), len: 8192^2; the vocabulary-wide columns (50304
	 * x 4096 and 50257 x 1024 over dim 0: 0.29-0.68 of Inductor from
	 * PyTorch, bench/results/2026-12-06-h100-c.md) and a short reduction
	 * of wide rows (1024 x 50304); asked for by name only: 1024 x 8192, and
	 * 2048 x 4096, whose 512 KiB blocks leave a group's barriers most of
	 * the time (what they cost against the group's size) */
	static const int64_t sz[][2] = {{8192, 8192}, {4096, 50304}, {1024, 50257}, {50304, 1024},
	                                {8192, 1024},  {4096, 2048}};
	static const struct {
		int cluster, group;
	} sp[] = {{0, 0}, {0, 1}, {1, 8}, {1, 16}, {1, 32}, {1, 64}, {1, 128}, {1, 256}};
	const char *want = getenv("PERF_COLS_OPS"), *sizes = getenv("PERF_COLS_SIZES");
	int rbs[8], nrb = env_ints("PERF_COLS_RB", "0,64,128", rbs, 8), cache[4];
	int ncache = env_ints("PERF_COLS_CACHE", "0", cache, 4);
	bool all = getenv("PERF_COLS_ALL") && *getenv("PERF_COLS_ALL") == '1'; /* every rows per block with every split */
	int pipe = getenv("PERF_COLS_PIPE") ? atoi(getenv("PERF_COLS_PIPE")) : 0;
	for (size_t z = 0; z < NELEM(sz); z++) {
		int64_t rows = sz[z][0], len = sz[z][1];
		char shape[48];
		snprintf(shape, sizeof shape, "%lldx%lld", (long long)len, (long long)rows);
		if ((sizes && !strstr(sizes, shape)) || (!sizes && z >= NELEM(sz) - 2))
			continue;
		Tens x = tens_new(DT_BF16, rows * len), g = tens_new(DT_BF16, len), y = tens_new(DT_BF16, rows * len);
		Tens st = tens_new(DT_F32, 2 * rows);
		tens_random(&x, 2.0);
		tens_random(&g, 1.0);
		for (size_t i = 0; i < NELEM(ops); i++)
			for (int r = 0; r < nrb; r++)
				for (size_t c = 0; c < NELEM(sp); c++)
					for (int cc = 0; cc < ncache; cc++) {
						PtxRowsSpec s = col_spec(ops[i], rows, len, DT_BF16);
						Buf b = {0};
						PtxKernel k;
						Launch l = {0};
						double ms;
						bool dflt = !sp[c].cluster && !sp[c].group && !cache[cc];
						if (want && !strstr(want, ops[i]))
							continue;
						s.rows_per_block = rbs[r];
						if (!rbs[r] && sp[c].group == 1) /* lower.c's rows_per_block without a group */
							for (s.rows_per_block = 256; s.rows_per_block > 8 && rows / s.rows_per_block < 256;)
								s.rows_per_block /= 2;
						else if (!rbs[r]) /* ... and with one */
							s.rows_per_block = 128;
						if (!all && !rbs[r] != !(sp[c].group <= 1 && !sp[c].cluster)) /* the rules' blocks with the rules' split */
							continue;
						s.cluster = sp[c].cluster;
						s.group = sp[c].group;
						s.col_cache = cache[cc];
						s.col_pipe = pipe;
						s.flagless = true;
						if (ptx_rows_check(&s))
							continue;
						ptx_emit_rows(&b, &s, &k);
						const char *how = !b.s ? "" : strstr(b.s, "entries pipelined") ? " pipe"
						                  : strstr(b.s, "twice: the next entry") ? " cache 2"
						                  : strstr(b.s, "streamed inputs in shared memory") ? " cache 1" : "";
						/* asked for, not held (it does not fit, or the entries are
						 * pipelined): the same kernel as without */
						if (cache[cc] > 0 && (!*how || !strcmp(how, " pipe"))) {
							buf_free(&b);
							continue;
						}
						Kern kr = kern_load(&b, &k);
						l.t[0] = x.d;
						if (s.nin > 1)
							l.t[1] = g.d;
						l.t[s.nin] = y.d;
						for (int o = 1; o < s.nout; o++)
							l.t[s.nin + o] = st.d + (CUdeviceptr)(o - 1) * (CUdeviceptr)rows * 4;
						l.blocks = plain_blocks(k.nblocks);
						l.nblocks = (uint32_t)k.nblocks;
						l.grid = full_grid(&kr, k.nblocks);
						l.s = stream[0];
						ms = launches_ms(&kr, &l, 20);
						printf("PERF cols %s %lldx%lld rb %d%s %s %d%s%s: %.4f ms %.0f GB/s "
						       "(entries %lld, grid %d, %d CTAs/SM, %d regs, smem %d)\n",
						       ops[i], (long long)len, (long long)rows, s.rows_per_block, rbs[r] ? "" : " (auto)",
						       k.group > 1 ? "group" : "cluster", k.group > 1 ? k.group : k.cluster > 1 ? k.cluster : 1,
						       how, dflt ? " (default)" : "", ms, 4.0 * (double)rows * (double)len / (ms * 1e-3) / 1e9,
						       (long long)k.nblocks, l.grid, kr.per_sm, kr.regs, k.smem);
						fflush(stdout);
						CU(cuMemFree(l.blocks));
						kern_unload(&kr);
						buf_free(&b);
					}
		tens_free(&x);
		tens_free(&g);
		tens_free(&y);
		tens_free(&st);
	}
}

typedef struct AtPerf {
	Kern kr;
	Launch l;
	Buf b;
	float ms[64];
	int n;   /* timings so far */
	bool on; /* the form is asked for */
} AtPerf;

/* name is one of the comma-separated list's items */
static bool
at_form_named(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *c = list; *c; c += strcspn(c, ",") + (c[strcspn(c, ",")] == ','))
		if (strcspn(c, ",") == n && !strncmp(c, name, n))
			return true;
	return false;
}

/* Kernel time at FlashAttention's sizes (F.scaled_dot_product_attention:
 * bench/p1.py times it beside the op from PyTorch; and causal at d = 64),
 * the forms of
 * PERF_ATTN_FORMS (default sync,tma,tmap,tma192,tma192p,tma176) interleaved: PERF_ROUNDS
 * rounds (default 5) of each in turn on the same tensors, 20 back-to-back
 * launches a timing; the median per form.  PERF_ATTN_ONLY=I: size I only
 * (for a profiler's single launch). */
static void
perf_attn(void)
{
	static const struct {
		int64_t heads, s, d;
		bool causal;
	} sz[] = {{32, 2048, 128, false}, {16, 4096, 64, false}, {32, 8192, 128, true}, {16, 8192, 64, true}};
	const char *forms = getenv("PERF_ATTN_FORMS") ? getenv("PERF_ATTN_FORMS") : "sync,tma,tmap,tma192,tma192p,tma176";
	const char *only = getenv("PERF_ATTN_ONLY");
	int rounds = getenv("PERF_ROUNDS") && atoi(getenv("PERF_ROUNDS")) > 0 ? atoi(getenv("PERF_ROUNDS")) : 5;
	if (rounds > 64)
		rounds = 64;
	for (size_t i = 0; i < NELEM(sz); i++) {
		if (only && *only && atoi(only) != (int)i)
			continue;
		AtPerf v[NELEM(at_forms)] = {0};
		PtxAttnSpec s0 = at_spec(DT_BF16, sz[i].heads, sz[i].s, sz[i].s, sz[i].d, sz[i].causal, 0);
		Tens q = tens_new(DT_BF16, s0.batch * s0.sq * s0.d), kk = tens_new(DT_BF16, s0.batch * s0.sq * s0.d);
		Tens vv = tens_new(DT_BF16, s0.batch * s0.sq * s0.d), o = tens_new(DT_BF16, s0.batch * s0.sq * s0.d);
		tens_random(&q, 1.5);
		tens_random(&kk, 1.5);
		tens_random(&vv, 1.0);
		for (size_t f = 0; f < NELEM(at_forms); f++) {
			PtxAttnSpec s = s0;
			PtxKernel k;
			if (!at_form_named(forms, at_forms[f].name) || !at_form_fits(f, &s))
				continue;
			s.tma = at_forms[f].tma;
			s.softmax = at_forms[f].softmax;
			s.bm = at_forms[f].bm;
			s.bn = at_forms[f].bn;
			s.pingpong = at_forms[f].pingpong;
			s.name = "syn_attn";
			ptx_emit_attn(&v[f].b, &s, &k);
			v[f].kr = kern_load(&v[f].b, &k);
			PtxBlock *bl = at_blocks(&s, k.nblocks, at_forms[f].by_tile);
			v[f].l.blocks = upload_blocks(bl, k.nblocks);
			free(bl);
			v[f].l.nblocks = (uint32_t)k.nblocks;
			v[f].l.grid = (int)(k.nblocks < (int64_t)nsm * v[f].kr.per_sm ? k.nblocks : (int64_t)nsm * v[f].kr.per_sm);
			v[f].l.s = stream[0];
			v[f].l.t[0] = q.d;
			v[f].l.t[1] = kk.d;
			v[f].l.t[2] = vv.d;
			v[f].l.t[3] = o.d;
			v[f].on = true;
		}
		for (int r = 0; r < rounds; r++)
			for (size_t f = 0; f < NELEM(at_forms); f++)
				if (v[f].on)
					v[f].ms[v[f].n++] = (float)launches_ms(&v[f].kr, &v[f].l, 20);
		double flop = 4.0 * (double)s0.batch * (double)s0.sq * (double)s0.sk * (double)s0.d * (s0.causal ? 0.5 : 1);
		for (size_t f = 0; f < NELEM(at_forms); f++) {
			if (!v[f].on)
				continue;
			qsort(v[f].ms, (size_t)v[f].n, sizeof v[f].ms[0], cmp_float);
			double ms = v[f].ms[v[f].n / 2];
			printf("PERF attn/%s %lldx%lldx%lld%s: %.4f ms %.1f TFLOP/s (median of %d, grid %d, %d CTAs/SM, %d regs)\n",
			       at_forms[f].name, (long long)s0.batch, (long long)s0.sq, (long long)s0.d, s0.causal ? " causal" : "",
			       ms, flop / (ms * 1e-3) / 1e12, v[f].n, v[f].l.grid, v[f].kr.per_sm, v[f].kr.regs);
			CU(cuMemFree(v[f].l.blocks));
			buf_free(&v[f].b);
			CU(cuModuleUnload(v[f].kr.mod));
		}
		fflush(stdout);
		tens_free(&q);
		tens_free(&kk);
		tens_free(&vv);
		tens_free(&o);
	}
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{"mm_wgmma", case_mm_wgmma},       {"mm_wgmma_small", case_mm_wgmma_small},
	{"mm_1000", case_mm_1000},         {"mm_ragged", case_mm_ragged},
	{"mm_batch", case_mm_batch},       {"mm_epi", case_mm_epi}, {"mm_src", case_mm_src}, {"mm_tail", case_mm_tail},
	{"mm_tiles", case_mm_tiles},       {"mm_cluster", case_mm_cluster}, {"mm_bufs", case_mm_bufs}, {"mm_streamk", case_mm_streamk}, {"rows_prefetch", case_rows_prefetch},
	{"mm_streamk_big", case_mm_streamk_big}, {"ew_bcast", case_ew_bcast},
	{"ew_ops", case_ew_ops},           {"ew_int", case_ew_int},
	{"ew_strided", case_ew_strided},   {"rows_softmax", case_rows_softmax},
	{"rows_layernorm", case_rows_layernorm}, {"rows_rmsnorm", case_rows_rmsnorm}, {"rows_wide", case_rows_wide}, {"rows_peel", case_rows_peel},
	{"rows_reduce", case_rows_reduce}, {"flags_late", case_flags_late},
	{"flags_timeout", case_flags_timeout}, {"mm_f32", case_mm_f32},
	{"rows_cols", case_rows_cols},      {"rows_cluster", case_rows_cluster}, {"rows_cluster_small", case_rows_cluster_small}, {"attn", case_attn},
	{"rows_group", case_rows_group},    {"rows_group_small", case_rows_group_small}, {"rows_pipe", case_rows_pipe},
	{"rows_moments", case_rows_moments}, {"rows_special", case_rows_special}, {"rows_wsm", case_rows_wsm},
	{"attn_small", case_attn_small},
};

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gpu-kernels list | CASE... | perf [TILE]\n");
		return 2;
	}
	if (!strcmp(argv[1], "list")) {
		for (size_t i = 0; i < NELEM(cases); i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	rng ^= (uint64_t)time(NULL) * 0x2545F4914F6CDD1Dull ^ (uint64_t)getpid();
	gpu_init();
	if (!strcmp(argv[1], "perf-flags")) {
		perf_flags();
		return failures ? 1 : 0;
	}
	if (!strcmp(argv[1], "perf-pf")) {
		perf_pf();
		return 0;
	}
	if (!strcmp(argv[1], "perf-grid")) {
		perf_grid();
		return 0;
	}
	if (!strcmp(argv[1], "perf-cta")) {
		perf_cta();
		return 0;
	}
	if (!strcmp(argv[1], "perf-rows")) {
		perf_rows();
		return failures ? 1 : 0;
	}
	if (!strcmp(argv[1], "perf-cols")) {
		perf_cols();
		return failures ? 1 : 0;
	}
	if (!strcmp(argv[1], "perf-ab")) {
		perf_ab();
		return failures ? 1 : 0;
	}
	if (!strcmp(argv[1], "perf-attn")) {
		perf_attn();
		return failures ? 1 : 0;
	}
	if (!strcmp(argv[1], "perf")) {
		perf(argc > 2 ? argv[2] : NULL);
		return failures ? 1 : 0;
	}
	for (int i = 1; i < argc; i++) {
		size_t j;
		for (j = 0; j < NELEM(cases); j++)
			if (!strcmp(argv[i], cases[j].name)) {
				double t0 = now_s();
				cases[j].fn();
				printf("  (%s took %.1f s)\n", cases[j].name, now_s() - t0);
				break;
			}
		if (j == NELEM(cases)) {
			fprintf(stderr, "no case %s\n", argv[i]);
			return 2;
		}
	}
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
