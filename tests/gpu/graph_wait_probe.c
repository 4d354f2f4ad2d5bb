/* tests/gpu/graph_wait_probe.c -- do flag waits between two streams keep
 * working once captured in a CUDA graph?  A syncc op with communication
 * runs a compute lane and a comm lane whose work waits on 64-bit flags
 * the other raises (cuStreamWaitValue64 on the comm lane for a kernel's
 * flag; a kernel spinning on a flag the comm lane writes).  On streams the
 * two lanes run side by side; a graph gives no such promise for
 * independent branches, and row_linear at P = 1 hung on its first replay
 * (2026-12-03).  Each variant below is captured the way libsyncrt captures
 * an op (a memset of the flag, an event fork to both lanes, their work, an
 * event join), replayed, and run in a child process of its own so a hang
 * is a result, not the end of the probe:
 *
 *   kwait-wfirst   comm lane: wait(flag) enqueued before the kernel that raises it
 *   kwait-kfirst   the same, the kernel enqueued first
 *   kwait-lc       kernel first, with a launch-completion event the comm lane waits
 *                  for before its wait (all the kernel's blocks have begun)
 *   kwait-edge     the comm lane waits for the kernel's end (an event): no overlap
 *   spin-kfirst    a kernel spinning until the comm lane writes the flag, kernel first
 *   spin-wfirst    the same, the comm lane's write enqueued first
 *   *-eager        the variant on streams, no graph
 *
 * Prints one line per variant: PROBE <name> ok|HANG|FAIL <ms>.
 *   cc -isystem $CUDA_HOME/include tests/gpu/graph_wait_probe.c -lcuda -o build/graph_wait_probe
 *   build/graph_wait_probe [variant...] */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	/* raise(flag, value, cycles): wait `cycles` clocks, then store value */
	".visible .entry raise(.param .u64 f, .param .u64 v, .param .u64 n)\n{\n"
	"  .reg .u64 %a, %b, %n, %t0, %t;\n  .reg .pred %p;\n"
	"  ld.param.u64 %a, [f];\n  ld.param.u64 %b, [v];\n  ld.param.u64 %n, [n];\n"
	"  cvta.to.global.u64 %a, %a;\n  mov.u64 %t0, %clock64;\n"
	"L:\n  mov.u64 %t, %clock64;\n  sub.u64 %t, %t, %t0;\n  setp.lt.u64 %p, %t, %n;\n  @%p bra L;\n"
	"  st.release.gpu.global.u64 [%a], %b;\n  ret;\n}\n"
	/* spin(flag, value): until *flag >= value */
	".visible .entry spin(.param .u64 f, .param .u64 v)\n{\n"
	"  .reg .u64 %a, %b, %c;\n  .reg .pred %p;\n"
	"  ld.param.u64 %a, [f];\n  ld.param.u64 %b, [v];\n  cvta.to.global.u64 %a, %a;\n"
	"S:\n  ld.acquire.gpu.global.u64 %c, [%a];\n  setp.lt.u64 %p, %c, %b;\n  @%p bra S;\n  ret;\n}\n";

#define CK(x)                                                                                                  \
	do {                                                                                                   \
		CUresult r_ = (x);                                                                             \
		if (r_ != CUDA_SUCCESS) {                                                                      \
			const char *s_ = "?";                                                                  \
			cuGetErrorName(r_, &s_);                                                               \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);                       \
			exit(3);                                                                               \
		}                                                                                              \
	} while (0)

typedef struct {
	CUstream s0, comp, comm;
	CUfunction raise, spin;
	CUdeviceptr flag;
	CUevent fork, join, done, lc;
} Probe;

static void
launch(Probe *p, CUfunction f, CUstream s, void **args, CUevent lc)
{
	CUlaunchConfig cfg;
	CUlaunchAttribute at;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	if (lc) {
		memset(&at, 0, sizeof at);
		at.id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
		at.value.launchCompletionEvent.event = lc;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
	}
	(void)p;
	CK(cuLaunchKernelEx(&cfg, f, args, NULL));
}

/* The op: what libsyncrt's launcher enqueues, in the variant's order. */
static void
op(Probe *p, const char *v, unsigned long long val)
{
	unsigned long long cycles = 20000000ull; /* ~10 ms: the wait is surely enqueued (and reached) first */
	void *ra[] = {&p->flag, &val, &cycles};
	void *sa[] = {&p->flag, &val};
	int kfirst = strstr(v, "kfirst") || strstr(v, "-lc") || strstr(v, "edge");
	CK(cuMemsetD32Async(p->flag, 0, 2, p->s0));
	CK(cuEventRecord(p->fork, p->s0));
	CK(cuStreamWaitEvent(p->comp, p->fork, 0));
	CK(cuStreamWaitEvent(p->comm, p->fork, 0));
	if (!strncmp(v, "kwait", 5)) {
		if (kfirst)
			launch(p, p->raise, p->comp, ra, strstr(v, "-lc") ? p->lc : NULL);
		if (strstr(v, "-lc"))
			CK(cuStreamWaitEvent(p->comm, p->lc, 0));
		if (strstr(v, "edge")) {
			CK(cuEventRecord(p->done, p->comp));
			CK(cuStreamWaitEvent(p->comm, p->done, 0));
		}
		CK(cuStreamWaitValue64(p->comm, p->flag, val, CU_STREAM_WAIT_VALUE_GEQ));
		if (!kfirst)
			launch(p, p->raise, p->comp, ra, NULL);
	} else {
		if (kfirst)
			launch(p, p->spin, p->comp, sa, NULL);
		CK(cuStreamWriteValue64(p->comm, p->flag, val, 0));
		if (!kfirst)
			launch(p, p->spin, p->comp, sa, NULL);
	}
	CK(cuEventRecord(p->join, p->comm));
	CK(cuStreamWaitEvent(p->comp, p->join, 0));
	CK(cuEventRecord(p->done, p->comp));
	CK(cuStreamWaitEvent(p->s0, p->done, 0));
}

static int
child(const char *v)
{
	Probe p;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	int lo, hi, graph = !strstr(v, "eager");
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&mod, ptx));
	CK(cuModuleGetFunction(&p.raise, mod, "raise"));
	CK(cuModuleGetFunction(&p.spin, mod, "spin"));
	CK(cuCtxGetStreamPriorityRange(&lo, &hi));
	CK(cuStreamCreate(&p.s0, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreateWithPriority(&p.comp, CU_STREAM_NON_BLOCKING, lo));
	CK(cuStreamCreateWithPriority(&p.comm, CU_STREAM_NON_BLOCKING, hi));
	CK(cuEventCreate(&p.fork, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&p.join, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&p.done, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&p.lc, CU_EVENT_DISABLE_TIMING));
	CK(cuMemAlloc(&p.flag, 8));
	if (!graph) {
		for (unsigned long long e = 1; e <= 3; e++)
			op(&p, v, e);
	} else {
		CUgraph g;
		CUgraphExec ge;
		CK(cuStreamBeginCapture(p.s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
		op(&p, v, 7);
		CK(cuStreamEndCapture(p.s0, &g));
		CK(cuGraphInstantiate(&ge, g, 0));
		for (int i = 0; i < 3; i++)
			CK(cuGraphLaunch(ge, p.s0));
	}
	CK(cuStreamSynchronize(p.s0));
	return 0;
}

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int
main(int argc, char **argv)
{
	static const char *all[] = {"kwait-kfirst-eager", "kwait-wfirst-eager", "spin-kfirst-eager", "spin-wfirst-eager",
	                            "kwait-kfirst", "kwait-wfirst", "kwait-lc", "kwait-edge", "spin-kfirst", "spin-wfirst"};
	const char **v = argc > 1 ? (const char **)argv + 1 : all;
	int n = argc > 1 ? argc - 1 : (int)(sizeof all / sizeof *all), bad = 0;
	for (int i = 0; i < n; i++) {
		double t0 = now_ms(), t;
		int st = 0;
		pid_t pid = fork();
		if (pid == 0)
			_exit(child(v[i]));
		while (waitpid(pid, &st, WNOHANG) == 0 && now_ms() - t0 < 10000)
			usleep(2000);
		t = now_ms() - t0;
		if (waitpid(pid, &st, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			printf("PROBE %s HANG %.0f\n", v[i], t);
			bad = 1;
		} else {
			printf("PROBE %s %s %.0f\n", v[i], WIFEXITED(st) && !WEXITSTATUS(st) ? "ok" : "FAIL", t);
		}
		fflush(stdout);
	}
	return bad;
}
