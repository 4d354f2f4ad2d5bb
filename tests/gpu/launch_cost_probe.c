/* tests/gpu/launch_cost_probe.c -- what the driver calls a syncc op makes
 * on every call cost on the host (issue 16: an op call's host time <= 20
 * us; libsyncrt's part was 7-9 us of it on an H200, 2026-12-04).  Each
 * call below is timed alone, 20000 times, on one stream, with the GPU kept
 * from becoming the bottleneck by an empty kernel and a synchronise every
 * 1000 calls.  Prints one line per call: COST <name> <ns per call>.
 *   cc -isystem $CUDA_HOME/include tests/gpu/launch_cost_probe.c -lcuda -lpthread -o build/launch_cost_probe */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry nop(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u64 a3,"
                          " .param .u64 a4, .param .u64 a5, .param .u64 a6, .param .u32 a7, .param .u64 a8,"
                          " .param .u64 a9, .param .u64 a10)\n{\n  ret;\n}\n";

#define CK(x)                                                                                  \
	do {                                                                                   \
		CUresult r_ = (x);                                                             \
		if (r_ != CUDA_SUCCESS) {                                                      \
			const char *s_ = "?";                                                  \
			cuGetErrorName(r_, &s_);                                               \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);       \
			exit(3);                                                               \
		}                                                                              \
	} while (0)

enum { CALLS = 20000, SYNC_EVERY = 1000 };

static CUstream s;
static CUfunction fn;
static CUevent ev[64];
static CUtensorMap tm;
static CUdeviceptr buf;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t p64[11];
static uint32_t p32;
static void *prm[11];

static double
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void
launch_ex(void)
{
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = 132, cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 384, cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	CK(cuLaunchKernelEx(&cfg, fn, prm, NULL));
}

static void
launch_plain(void)
{
	CK(cuLaunchKernel(fn, 132, 1, 1, 384, 1, 1, 0, s, prm, NULL));
}

static void
ctx_get(void)
{
	CUcontext c;
	CK(cuCtxGetCurrent(&c));
}

static void
is_capturing(void)
{
	CUstreamCaptureStatus st;
	CK(cuStreamIsCapturing(s, &st));
}

static int evi;

static void
event_record(void)
{
	CK(cuEventRecord(ev[evi++ & 63], s));
}

static void
event_query(void)
{
	cuEventQuery(ev[evi++ & 63]);
}

static void
record_and_launch(void)
{
	launch_ex();
	event_record();
}

static void
mutex(void)
{
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
}

static void
clock_read(void)
{
	(void)now_ns();
}

static void
tmap_encode(void)
{
	cuuint64_t d[3] = {4096, 4096, 1}, st[2] = {8192, 8192ull * 4096};
	cuuint32_t bx[3] = {64, 128, 1}, es[3] = {1, 1, 1};
	CK(cuTensorMapEncodeTiled(&tm, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)(uintptr_t)buf, d, st, bx, es,
	                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static void
occupancy(void)
{
	int per;
	CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, fn, 384, 0));
}

static void
time_one(const char *name, void (*f)(void))
{
	double t0, t;
	for (int i = 0; i < 200; i++)
		f();
	CK(cuStreamSynchronize(s));
	t = 0;
	for (int i = 0; i < CALLS; i++) {
		t0 = now_ns();
		f();
		t += now_ns() - t0;
		if (i % SYNC_EVERY == SYNC_EVERY - 1)
			CK(cuStreamSynchronize(s));
	}
	CK(cuStreamSynchronize(s));
	printf("COST %-22s %7.0f ns\n", name, t / CALLS);
	fflush(stdout);
}

int
main(void)
{
	CUdevice d;
	CUcontext c;
	CUmodule m;
	CK(cuInit(0));
	CK(cuDeviceGet(&d, 0));
	CK(cuDevicePrimaryCtxRetain(&c, d));
	CK(cuCtxSetCurrent(c));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuModuleLoadData(&m, ptx));
	CK(cuModuleGetFunction(&fn, m, "nop"));
	CK(cuMemAlloc(&buf, 8192ull * 4096));
	for (int i = 0; i < 64; i++)
		CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
	for (int i = 0; i < 11; i++)
		prm[i] = i == 7 ? (void *)&p32 : (void *)&p64[i];
	time_one("clock_gettime", clock_read);
	time_one("mutex lock+unlock", mutex);
	time_one("cuCtxGetCurrent", ctx_get);
	time_one("cuStreamIsCapturing", is_capturing);
	time_one("cuEventRecord", event_record);
	time_one("cuEventQuery (done)", event_query);
	time_one("cuOccupancyMaxActive", occupancy);
	time_one("cuTensorMapEncodeTiled", tmap_encode);
	time_one("cuLaunchKernel", launch_plain);
	time_one("cuLaunchKernelEx", launch_ex);
	time_one("launch + record", record_and_launch);
	return 0;
}
