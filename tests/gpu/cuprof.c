/* tests/gpu/cuprof.c -- where libsyncrt's host time per op call goes
 * (issue 16: a call's launcher part was 7-10 us of its 17-28): an
 * LD_PRELOAD shim over the driver calls libsyncrt makes on every call,
 * each timed; at exit one line per function called, `CUPROF name calls
 * mean-ns total-ms`.  libsyncrt links libcuda by name, so its calls come
 * here; PyTorch reaches the driver through cudart's entry-point table,
 * which the shim does not see (and should not: only syncc's calls are
 * counted).  The launcher's own C work is the call's time less these.
 *   cc -shared -fPIC -O2 -isystem $CUDA_HOME/include tests/gpu/cuprof.c -ldl -o build/cuprof.so
 *   LD_PRELOAD=build/cuprof.so python3 tests/gpu/host_breakdown.py */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { F_LAUNCHEX, F_LAUNCH, F_EVREC, F_EVQUERY, F_ISCAP, F_TMAP, F_OCC, F_CTXGET, F_CTXSET, F_WAITEV, F_FUNCSET,
       F_MEMSET32, F_STQUERY, NF };
static const char *names[NF] = {"cuLaunchKernelEx", "cuLaunchKernel", "cuEventRecord", "cuEventQuery",
                                "cuStreamIsCapturing", "cuTensorMapEncodeTiled", "cuOccupancyMaxActiveBlocks",
                                "cuCtxGetCurrent", "cuCtxSetCurrent", "cuStreamWaitEvent", "cuFuncSetAttribute",
                                "cuMemsetD32Async", "cuStreamQuery"};
static const char *syms[NF] = {"cuLaunchKernelEx", "cuLaunchKernel", "cuEventRecord", "cuEventQuery",
                               "cuStreamIsCapturing", "cuTensorMapEncodeTiled",
                               "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuCtxGetCurrent", "cuCtxSetCurrent",
                               "cuStreamWaitEvent", "cuFuncSetAttribute", "cuMemsetD32Async", "cuStreamQuery"};
static void *real[NF];
static unsigned long long calls[NF], ns[NF];

static unsigned long long
now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static void *
fn(int f)
{
	if (!real[f] && !(real[f] = dlsym(RTLD_NEXT, syms[f]))) {
		fprintf(stderr, "cuprof: no %s\n", syms[f]);
		abort();
	}
	return real[f];
}

#define TIMED(f, call)                                                                                             \
	do {                                                                                                       \
		unsigned long long t0_ = now();                                                                    \
		CUresult r_ = call;                                                                                \
		ns[f] += now() - t0_;                                                                              \
		calls[f]++;                                                                                        \
		return r_;                                                                                         \
	} while (0)

CUresult
cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction k, void **p, void **x)
{
	TIMED(F_LAUNCHEX, ((CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))fn(F_LAUNCHEX))(c, k, p, x));
}

CUresult
cuLaunchKernel(CUfunction k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm,
               CUstream s, void **p, void **x)
{
	TIMED(F_LAUNCH, ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                               CUstream, void **, void **))fn(F_LAUNCH))(k, gx, gy, gz, bx, by, bz, sm, s, p, x));
}

CUresult
cuEventRecord(CUevent e, CUstream s)
{
	TIMED(F_EVREC, ((CUresult(*)(CUevent, CUstream))fn(F_EVREC))(e, s));
}

CUresult
cuEventQuery(CUevent e)
{
	TIMED(F_EVQUERY, ((CUresult(*)(CUevent))fn(F_EVQUERY))(e));
}

CUresult
cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
	TIMED(F_ISCAP, ((CUresult(*)(CUstream, CUstreamCaptureStatus *))fn(F_ISCAP))(s, st));
}

CUresult
cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t r, void *a, const cuuint64_t *d,
                       const cuuint64_t *st, const cuuint32_t *b, const cuuint32_t *es, CUtensorMapInterleave il,
                       CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	TIMED(F_TMAP, ((CUresult(*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
	                             const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
	                             CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill))fn(F_TMAP))(
	                  m, t, r, a, d, st, b, es, il, sw, l2, oob));
}

CUresult
cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction k, int b, size_t sm)
{
	TIMED(F_OCC, ((CUresult(*)(int *, CUfunction, int, size_t))fn(F_OCC))(n, k, b, sm));
}

CUresult
cuCtxGetCurrent(CUcontext *c)
{
	TIMED(F_CTXGET, ((CUresult(*)(CUcontext *))fn(F_CTXGET))(c));
}

CUresult
cuCtxSetCurrent(CUcontext c)
{
	TIMED(F_CTXSET, ((CUresult(*)(CUcontext))fn(F_CTXSET))(c));
}

CUresult
cuStreamWaitEvent(CUstream s, CUevent e, unsigned fl)
{
	TIMED(F_WAITEV, ((CUresult(*)(CUstream, CUevent, unsigned))fn(F_WAITEV))(s, e, fl));
}

CUresult
cuFuncSetAttribute(CUfunction k, CUfunction_attribute a, int v)
{
	TIMED(F_FUNCSET, ((CUresult(*)(CUfunction, CUfunction_attribute, int))fn(F_FUNCSET))(k, a, v));
}

CUresult
cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s)
{
	TIMED(F_MEMSET32, ((CUresult(*)(CUdeviceptr, unsigned, size_t, CUstream))fn(F_MEMSET32))(d, v, n, s));
}

CUresult
cuStreamQuery(CUstream s)
{
	TIMED(F_STQUERY, ((CUresult(*)(CUstream))fn(F_STQUERY))(s));
}

__attribute__((destructor)) static void
report(void)
{
	for (int f = 0; f < NF; f++)
		if (calls[f])
			fprintf(stderr, "CUPROF %-28s %10llu calls %8.0f ns mean %10.1f ms total\n", names[f], calls[f],
			        (double)ns[f] / (double)calls[f], (double)ns[f] / 1e6);
}
