/* tests/gpu/ipc_suballoc_probe.c -- does CUDA IPC share a small cuMemAlloc
 * allocation, or the block the driver sub-allocated it from?  One process
 * allocates three buffers (64 KiB, 64 KiB, 4 MiB), writes a different word
 * at the start of each and sends their IPC handles to a second process (a
 * fork made before either touched CUDA), which opens each and reads the
 * word at the pointer it got.  What libsyncrt's symmetric memory rounds up
 * to 2 MiB for (runtime/rt_sym.c).  Prints one line per buffer and
 * "PROBE: ..." with the verdict; exit 0 unless CUDA itself failed.
 *   cc -std=c11 -D_GNU_SOURCE -isystem $CUDA_HOME/include ipc_suballoc_probe.c -L$CUDA_HOME/lib64/stubs -lcuda */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NBUF = 3 };
static const size_t sizes[NBUF] = {64 << 10, 64 << 10, 4 << 20};

static void
ck(CUresult r, const char *what)
{
	const char *s = NULL;
	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorString(r, &s);
	fprintf(stderr, "ipc_suballoc_probe: %s: %s\n", what, s ? s : "?");
	exit(2);
}

static CUcontext
ctx0(void)
{
	CUdevice d;
	CUcontext c;
	ck(cuInit(0), "cuInit");
	ck(cuDeviceGet(&d, 0), "cuDeviceGet");
	ck(cuDevicePrimaryCtxRetain(&c, d), "cuDevicePrimaryCtxRetain");
	ck(cuCtxSetCurrent(c), "cuCtxSetCurrent");
	return c;
}

/* The second process: open each handle, read the word it points at. */
static int
child(int in, int out)
{
	CUipcMemHandle h[NBUF];
	int64_t got[NBUF];
	ctx0();
	if (read(in, h, sizeof h) != (ssize_t)sizeof h)
		return 2;
	for (int i = 0; i < NBUF; i++) {
		CUdeviceptr p = 0;
		uint32_t w = 0;
		CUresult r = cuIpcOpenMemHandle(&p, h[i], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		got[i] = r != CUDA_SUCCESS ? -(int64_t)r : cuMemcpyDtoH(&w, p, 4) == CUDA_SUCCESS ? (int64_t)w : -1;
	}
	return write(out, got, sizeof got) == (ssize_t)sizeof got ? 0 : 2;
}

int
main(void)
{
	int to[2], from[2], st = 0, wrong = 0;
	CUdeviceptr b[NBUF];
	CUipcMemHandle h[NBUF];
	int64_t got[NBUF];
	pid_t pid;
	if (pipe(to) || pipe(from))
		return 2;
	if ((pid = fork()) == 0)
		_exit(child(to[0], from[1]));
	ctx0();
	for (int i = 0; i < NBUF; i++) {
		uint32_t w = 0xA0 + (uint32_t)i;
		ck(cuMemAlloc(&b[i], sizes[i]), "cuMemAlloc");
		ck(cuMemsetD8(b[i], 0, sizes[i]), "cuMemsetD8");
		ck(cuMemcpyHtoD(b[i], &w, 4), "cuMemcpyHtoD");
		ck(cuIpcGetMemHandle(&h[i], b[i]), "cuIpcGetMemHandle");
	}
	if (write(to[1], h, sizeof h) != (ssize_t)sizeof h || read(from[0], got, sizeof got) != (ssize_t)sizeof got)
		return 2;
	waitpid(pid, &st, 0);
	for (int i = 0; i < NBUF; i++) {
		CUdeviceptr base = 0;
		size_t sz = 0;
		cuMemGetAddressRange(&base, &sz, b[i]);
		printf("buffer %d: %zu bytes at 0x%llx (address range 0x%llx + %zu, 2 MiB-aligned: %s): the peer reads ", i,
		       sizes[i], (unsigned long long)b[i], (unsigned long long)base, sz, b[i] % (2u << 20) ? "no" : "yes");
		if (got[i] < 0)
			printf("nothing (open failed, CUresult %lld)\n", (long long)-got[i]);
		else
			printf("0x%llx, wrote 0x%x: %s\n", (unsigned long long)got[i], 0xA0 + i,
			       got[i] == 0xA0 + i ? "right" : "WRONG BUFFER");
		wrong += got[i] != 0xA0 + i;
	}
	printf("PROBE: %s\n", wrong ? "CUDA IPC of a sub-allocated cuMemAlloc buffer does not open at that buffer"
	                            : "every buffer opened at itself");
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 2;
}
