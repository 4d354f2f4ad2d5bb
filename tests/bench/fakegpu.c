/* tests/bench/fakegpu.c -- just enough of the CUDA runtime, cuBLASLt, NCCL
 * and bench/kern.cu, on the CPU, to run bench/baseline.c without a GPU
 * (tests/bench/suite.py).  Linked in place of the real libraries, with the
 * real headers, so the signatures are the real ones.
 *
 * Every operation runs at once, in the calling thread, in program order: a
 * stream is only a name, an event a timestamp.  So this checks baseline.c's
 * index arithmetic (under AddressSanitizer: every chunk, segment and shard
 * offset stays inside its buffer), its layouts against the matmul's shape
 * rules, its checks, its rows and its rank synchronisation -- not its stream
 * dependencies, which only the GPU run can test.
 *
 *   FAKEGPU_COUNT=N     the number of devices (default 2)
 *   FAKEGPU_DROP=N      rank 0's N-th matmul is skipped (its output stays
 *                       poisoned), to see a mismatch reported and not timed */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../bench/kern.h"

struct CUstream_st {
	int dev;
};
struct CUevent_st {
	double t;
};
struct ncclComm {
	int rank, n;
};

static _Thread_local int cur_dev;

static int
ndev(void)
{
	const char *s = getenv("FAKEGPU_COUNT");
	return s ? atoi(s) : 2;
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float
bf(uint16_t b)
{
	union {
		uint32_t u;
		float f;
	} v = {.u = (uint32_t)b << 16};
	return v.f;
}

static uint16_t
to_bf(float f)
{
	union {
		float f;
		uint32_t u;
	} v = {.f = f};
	if (isnan(f))
		return 0x7FC0;
	return (uint16_t)((v.u + 0x7FFFu + ((v.u >> 16) & 1u)) >> 16);
}

/* ---- CUDA runtime ---- */

const char *
cudaGetErrorName(cudaError_t e)
{
	return e ? "cudaErrorFake" : "cudaSuccess";
}

const char *
cudaGetErrorString(cudaError_t e)
{
	return e ? "fake error" : "no error";
}

cudaError_t
cudaGetDeviceCount(int *n)
{
	*n = ndev();
	return cudaSuccess;
}

cudaError_t
cudaSetDevice(int d)
{
	if (d < 0 || d >= ndev())
		return cudaErrorInvalidDevice;
	cur_dev = d;
	return cudaSuccess;
}

cudaError_t
cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
	(void)d;
	memset(p, 0, sizeof *p);
	strcpy(p->name, "fake GPU (tests/bench/fakegpu.c)");
	return cudaSuccess;
}

cudaError_t
cudaRuntimeGetVersion(int *v)
{
	*v = 0;
	return cudaSuccess;
}

cudaError_t
cudaDriverGetVersion(int *v)
{
	*v = 0;
	return cudaSuccess;
}

cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
	(void)flags;
	*s = calloc(1, sizeof **s);
	(*s)->dev = cur_dev;
	return cudaSuccess;
}

cudaError_t
cudaStreamSynchronize(cudaStream_t s)
{
	return s && s->dev == cur_dev ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t
cudaEventCreate(cudaEvent_t *e)
{
	*e = calloc(1, sizeof **e);
	return cudaSuccess;
}

cudaError_t
cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
	(void)flags;
	return cudaEventCreate(e);
}

cudaError_t
cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	(void)s;
	e->t = now();
	return cudaSuccess;
}

cudaError_t
cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
	(void)s, (void)e, (void)flags;
	return cudaSuccess;
}

cudaError_t
cudaEventSynchronize(cudaEvent_t e)
{
	(void)e;
	return cudaSuccess;
}

cudaError_t
cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	*ms = (float)((b->t - a->t) * 1e3);
	return cudaSuccess;
}

cudaError_t
cudaMalloc(void **p, size_t n)
{
	*p = malloc(n ? n : 1);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}

cudaError_t
cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
	(void)s;
	memset(p, v, n);
	return cudaSuccess;
}

cudaError_t
cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k)
{
	(void)k;
	memcpy(d, s, n);
	return cudaSuccess;
}

cudaError_t
cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st)
{
	(void)st;
	return cudaMemcpy(d, s, n, k);
}

/* ---- bench/kern.cu ---- */

cudaError_t
kern_fill(uint16_t *p, int64_t rows, int64_t cols, int64_t ld, int64_t row0, int64_t col0, int64_t gcols,
          uint64_t seed, cudaStream_t s)
{
	(void)s;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			p[r * ld + c] =
			        kern_bf16_bits(kern_mix(seed, (uint64_t)(row0 + r) * (uint64_t)gcols + (uint64_t)(col0 + c)));
	return cudaSuccess;
}

cudaError_t
kern_diff(const uint16_t *a, const uint16_t *b, int64_t n, double *out, cudaStream_t s)
{
	(void)s;
	for (int64_t i = 0; i < n; i++) {
		double x = bf(a[i]), y = bf(b[i]);
		if (!isfinite(x)) {
			out[2] += 1;
			continue;
		}
		out[0] += (x - y) * (x - y);
		out[1] += y * y;
	}
	return cudaSuccess;
}

/* ---- cuBLASLt: layouts keep (type, rows, cols, ld) in data[0..3] ---- */

const char *
cublasLtGetStatusString(cublasStatus_t s)
{
	return s ? "fake cuBLASLt error" : "success";
}

size_t
cublasLtGetVersion(void)
{
	return 0;
}

cublasStatus_t
cublasLtCreate(cublasLtHandle_t *h)
{
	*h = (cublasLtHandle_t)malloc(1);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtDestroy(cublasLtHandle_t h)
{
	free(h);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c, cudaDataType_t s)
{
	if (c != CUBLAS_COMPUTE_32F || s != CUDA_R_32F)
		return CUBLAS_STATUS_NOT_SUPPORTED;
	*d = calloc(1, sizeof **d);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
	free(d);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows, uint64_t cols, int64_t ld)
{
	if (t != CUDA_R_16BF || ld < (int64_t)rows)
		return CUBLAS_STATUS_INVALID_VALUE;
	*l = calloc(1, sizeof **l);
	(*l)->data[0] = (uint64_t)t, (*l)->data[1] = rows, (*l)->data[2] = cols, (*l)->data[3] = (uint64_t)ld;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
	free(l);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
	*p = calloc(1, sizeof **p);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
	free(p);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a,
                                     const void *buf, size_t n)
{
	(void)p;
	if (a != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES || n != sizeof(uint64_t) || !buf)
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

/* D = A B in column-major: A rows x k, B k x cols, D rows x cols. */
static int
shapes_agree(cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d)
{
	return a->data[2] == b->data[1] && c->data[1] == a->data[1] && c->data[2] == b->data[2] &&
	       memcmp(c->data, d->data, sizeof c->data) == 0;
}

cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                               cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                               cublasLtMatmulPreference_t p, int want, cublasLtMatmulHeuristicResult_t res[], int *got)
{
	(void)h, (void)op, (void)p;
	if (want < 1 || !shapes_agree(a, b, c, d))
		return CUBLAS_STATUS_INVALID_VALUE;
	memset(res, 0, sizeof *res);
	res->state = CUBLAS_STATUS_SUCCESS;
	*got = 1;
	return CUBLAS_STATUS_SUCCESS;
}

static _Thread_local long nmatmul;

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void *alpha, const void *A,
               cublasLtMatrixLayout_t ad, const void *B, cublasLtMatrixLayout_t bd, const void *beta, const void *C,
               cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t *algo,
               void *ws, size_t wss, cudaStream_t s)
{
	const uint16_t *a = A, *b = B;
	uint16_t *d = D;
	const char *drop = getenv("FAKEGPU_DROP");
	int64_t n = (int64_t)ad->data[1], k = (int64_t)ad->data[2], m = (int64_t)bd->data[2];
	int64_t lda = (int64_t)ad->data[3], ldb = (int64_t)bd->data[3], ldd = (int64_t)dd->data[3];
	(void)h, (void)op, (void)C, (void)algo, (void)ws, (void)wss, (void)s;
	if (!shapes_agree(ad, bd, cd, dd) || *(const float *)alpha != 1.0f || *(const float *)beta != 0.0f)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (cur_dev == 0 && drop && ++nmatmul == atol(drop))
		return CUBLAS_STATUS_SUCCESS;
	for (int64_t j = 0; j < m; j++)
		for (int64_t i = 0; i < n; i++) {
			float acc = 0;
			for (int64_t l = 0; l < k; l++)
				acc += bf(a[i + l * lda]) * bf(b[l + j * ldb]);
			d[i + j * ldd] = to_bf(acc);
		}
	return CUBLAS_STATUS_SUCCESS;
}

/* ---- NCCL: the ranks meet at a barrier and read each other's buffers ---- */

static pthread_barrier_t bar;
static const uint16_t *sendp[8];

const char *
ncclGetErrorString(ncclResult_t r)
{
	return r ? "fake NCCL error" : "no error";
}

ncclResult_t
ncclGetVersion(int *v)
{
	*v = NCCL_VERSION_CODE;
	return ncclSuccess;
}

ncclResult_t
ncclCommInitAll(ncclComm_t *comm, int n, const int *devs)
{
	(void)devs;
	if (n < 1 || n > 8 || n > ndev())
		return ncclInvalidArgument;
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (int r = 0; r < n; r++) {
		comm[r] = calloc(1, sizeof *comm[r]);
		comm[r]->rank = r, comm[r]->n = n;
	}
	return ncclSuccess;
}

ncclResult_t
ncclCommDestroy(ncclComm_t c)
{
	pthread_barrier_wait(&bar);
	free(c);
	return ncclSuccess;
}

typedef enum { C_AR, C_RS, C_AG } Coll;

/* out[i] for this rank; count is the element count NCCL is given. */
static ncclResult_t
coll(ncclComm_t c, const void *send, void *recv, size_t count, ncclDataType_t t, cudaStream_t s, Coll kind)
{
	size_t nout = kind == C_AG ? count * (size_t)c->n : count;
	uint16_t *tmp;
	if (t != ncclBfloat16 || !s || s->dev != c->rank)
		return ncclInvalidArgument;
	tmp = malloc(nout * 2);
	sendp[c->rank] = send;
	pthread_barrier_wait(&bar);
	for (size_t i = 0; i < nout; i++) {
		float acc = 0;
		if (kind == C_AG) {
			tmp[i] = sendp[i / count][i % count];
			continue;
		}
		for (int r = 0; r < c->n; r++)
			acc += bf(sendp[r][(kind == C_RS ? (size_t)c->rank * count : 0) + i]);
		tmp[i] = to_bf(acc);
	}
	pthread_barrier_wait(&bar);
	memcpy(recv, tmp, nout * 2);
	free(tmp);
	pthread_barrier_wait(&bar);
	return ncclSuccess;
}

ncclResult_t
ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
              cudaStream_t s)
{
	return op == ncclSum ? coll(c, send, recv, count, t, s, C_AR) : ncclInvalidArgument;
}

ncclResult_t
ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                  cudaStream_t s)
{
	return op == ncclSum ? coll(c, send, recv, count, t, s, C_RS) : ncclInvalidArgument;
}

ncclResult_t
ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t, ncclComm_t c, cudaStream_t s)
{
	return coll(c, send, recv, count, t, s, C_AG);
}
