/* tests/gpu/rt_test.c -- libsyncrt on real GPUs (run by tests/gpu/gpu-check-runtime).
 *
 *   rt_test local SUITE          one process driving 2 GPUs, a thread per GPU
 *   rt_test spawn SUITE [net]    fork+exec 2 ranks with RANK, WORLD_SIZE, LOCAL_RANK,
 *                                MASTER_ADDR=127.0.0.1, MASTER_PORT; "net": each rank
 *                                its own NCCL_HOSTID, NCCL_NET=Socket, NCCL_SOCKET_IFNAME=lo
 *   rt_test rank SUITE           one rank of that (what spawn execs)
 *   rt_test shared SUITE         one process, both ranks on GPU 0 (no NCCL: the
 *                                nccl cases are skipped; p2p and ce run)
 *
 * SUITE colls: chunked all_reduce (sum, max) / reduce_scatter / all_gather /
 *   all_to_all / shift of f32 and bf16 through nccl, ce and p2p, packed and
 *   strided; every chunk gated by a flag a kernel raises late (the send
 *   buffer is poison until then), every result copied out by a kernel that
 *   waits on the comm lane's flag, checked bit-exactly against a CPU
 *   reference on fresh random data; refusals and argument errors checked.
 * SUITE timeout: rank 0's comm lane waits on a flag nobody raises.
 * SUITE ktimeout: a kernel on rank 0 waits on a flag nobody raises.
 * SUITE persist: a kernel on all-but-k SMs spins on NCCL's output.
 * RT_TRACE_OUT=FILE makes colls write the trace there. */
#define _GNU_SOURCE
#include "../../runtime/syncrt.h"
#include "bf16.h"

#include <arpa/inet.h>
#include <cuda.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	N = 1 << 16,      /* elements per rank block */
	PADMAX = 64,      /* elements of padding between strided blocks */
	GRID = 4,         /* CTAs of a producer or consumer */
	THREADS = 256,
	READY = 0,        /* flags [0, 64): chunk c's send is ready (producers add GRID per launch) */
	DONE = 64,        /* flags [64, 128): chunk c's recv is ready (the comm lane stores the epoch) */
	NEVER = 200,      /* flags nobody raises */
	DELAY_NS = 40000, /* a producer raises its flag this late, times the chunk number + 1 */
};

static syn_image img = {"rt_test.ptx", NULL, NULL, 0};
static uint64_t seed;
static pthread_mutex_t print_mu = PTHREAD_MUTEX_INITIALIZER;

static double
now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void
say(syn_ctx *c, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&print_mu);
	printf("[rank %d] ", c ? syn_rank(c) : -1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&print_mu);
}

static int
cu_ok(syn_ctx *c, CUresult r, const char *what)
{
	const char *s = NULL;
	if (r == CUDA_SUCCESS)
		return 1;
	cuGetErrorName(r, &s);
	say(c, "FAIL %s: %s", what, s ? s : "?");
	return 0;
}
#define CU(c, x) cu_ok(c, (x), #x)

/* ---- data: every rank can compute every rank's data ---- */

static uint64_t
mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* Small integers (times 1/4 for f32): sums of a few are exact in both. */
static float
gen(int cs, int rank, size_t i, CommDType dt)
{
	uint64_t h = mix(seed ^ ((uint64_t)cs << 40) ^ ((uint64_t)rank << 32) ^ i);
	if (dt == CD_BF16)
		return (float)((int)(h % 201) - 100);
	return (float)((int)(h % 2001) - 1000) * 0.25f;
}

static void
put(void *buf, size_t i, float v, CommDType dt)
{
	if (dt == CD_BF16)
		((uint16_t *)buf)[i] = f2bf(v);
	else
		((float *)buf)[i] = v;
}

static float
get(const void *buf, size_t i, CommDType dt)
{
	return dt == CD_BF16 ? bf2f(((const uint16_t *)buf)[i]) : ((const float *)buf)[i];
}

static size_t
esize(CommDType dt)
{
	return dt == CD_BF16 ? 2 : 4;
}

/* ---- one case of the collectives suite ---- */

typedef struct Case {
	CommOp op;
	CommRed red;
	CommDType dt;
	syn_backend be;
	int nchunks, pad, nogate;
} Case;

typedef struct Bufs {
	CUdeviceptr stage, send, recv, out;
	size_t bytes;
	syn_kernel *k;
	uint64_t ready[64]; /* what each READY flag will hold */
} Bufs;

static int
send_blocks(CommOp op)
{
	return op == CO_REDUCE_SCATTER || op == CO_ALL_TO_ALL;
}

static int
recv_blocks(CommOp op)
{
	return op == CO_ALL_GATHER || op == CO_ALL_TO_ALL;
}

/* The expected value of recv element e (layout: blocks of N, stride bs);
 * *cov = 0 for padding, which must stay poison. */
static float
want(const Case *k, int cs, int P, int r, size_t e, int *cov)
{
	size_t bs = N + (size_t)k->pad, b = e / bs, i = e % bs;
	*cov = 1;
	switch (k->op) {
	case CO_ALL_REDUCE:
	case CO_REDUCE_SCATTER: {
		float acc = 0;
		size_t at = k->op == CO_REDUCE_SCATTER ? (size_t)r * bs + e : e;
		if (e >= N)
			break;
		for (int q = 0; q < P; q++) {
			float v = gen(cs, q, at, k->dt);
			acc = q == 0 ? v : k->red == CR_MAX ? (v > acc ? v : acc) : k->red == CR_MIN ? (v < acc ? v : acc) : acc + v;
		}
		return k->dt == CD_BF16 ? bf2f(f2bf(acc)) : acc;
	}
	case CO_ALL_GATHER:
		if (b < (size_t)P && i < N)
			return gen(cs, (int)b, i, k->dt);
		break;
	case CO_ALL_TO_ALL:
		if (b < (size_t)P && i < N)
			return gen(cs, (int)b, (size_t)r * bs + i, k->dt);
		break;
	case CO_SHIFT:
		if (e < N)
			return gen(cs, ((r - 1) % P + P) % P, e, k->dt);
		break;
	case CO_COUNT: /* a new collective: its meaning belongs here */
		break;
	}
	*cov = 0;
	return 0;
}

static int
launch_copy(syn_ctx *c, Bufs *b, uint64_t flag, uint64_t expect, CUdeviceptr src, CUdeviceptr dst, size_t bytes,
            uint64_t done, uint64_t delay, uint32_t flag_id, uint32_t site, uint64_t timeout)
{
	uint64_t n16 = bytes / 16, err = syn_errw_addr(c), trace = syn_trace_slots(c, GRID);
	uint64_t s = src, d = dst;
	void *prm[] = {&flag, &expect, &s, &d, &n16, &done, &err, &timeout, &delay, &flag_id, &site, &trace};
	unsigned grid[3] = {GRID, 1, 1}, block[3] = {THREADS, 1, 1};
	return syn_launch(c, b->k, grid, block, 0, prm);
}

static int
enqueue_case(syn_ctx *c, Bufs *b, const Case *k, uint64_t e)
{
	int P = syn_nranks(c), me = syn_rank(c), r;
	size_t es = esize(k->dt), bs = N + (size_t)k->pad, cs = N / (size_t)k->nchunks;
	int ns = send_blocks(k->op) ? P : 1, nr = recv_blocks(k->op) ? P : 1;
	uint64_t tmo = syn_timeout_ns(c);
	for (int ch = 0; ch < k->nchunks; ch++) {
		CommChunk chunk = {k->op, k->dt, k->red, NULL, NULL, cs, 0, 0, 1, ch, 0, 0, 0, 0};
		size_t off = (size_t)ch * cs * es;
		for (int s = 0; s < ns; s++) {
			size_t at = (size_t)s * bs * es + off;
			if ((r = launch_copy(c, b, 0, 0, b->stage + at, b->send + at, cs * es,
			                     syn_flag_addr(c, me, READY + ch), (uint64_t)DELAY_NS * (uint64_t)(ch + 1),
			                     READY + ch, 1, tmo)))
				return r;
			b->ready[ch] += GRID;
		}
		chunk.send = (void *)(uintptr_t)(b->send + off);
		chunk.recv = (void *)(uintptr_t)(b->recv + off);
		chunk.send_stride = ns > 1 ? bs : 0;
		chunk.recv_stride = nr > 1 ? bs : 0;
		if (k->nchunks == 1 && !k->pad)
			chunk.send_stride = chunk.recv_stride = 0;
		if ((!k->nogate && (r = syn_wait(c, SYN_COMM, READY + ch, b->ready[ch], ch))) ||
		    (r = syn_coll(c, k->be, &chunk)) || (r = syn_raise(c, SYN_COMM, me, DONE + ch, e)))
			return r;
	}
	for (int ch = 0; ch < k->nchunks; ch++)
		for (int s = 0; s < nr; s++) {
			size_t at = (size_t)s * bs * es + (size_t)ch * cs * es;
			if ((r = launch_copy(c, b, syn_flag_addr(c, me, DONE + ch), e, b->recv + at, b->out + at, cs * es, 0,
			                     0, DONE + ch, 2, tmo)))
				return r;
		}
	return SYN_OK;
}

static void
case_name(const Case *k, char *out, size_t n)
{
	snprintf(out, n, "%s %s%s %s chunks %d pad %d%s", comm_backends[k->be].name, comm_colls[k->op].name,
	         k->op == CO_ALL_REDUCE ? (k->red == CR_MAX ? "(max)" : "(sum)") : "", k->dt == CD_BF16 ? "bf16" : "f32",
	         k->nchunks, k->pad, k->nogate ? " WITHOUT GATE (control)" : "");
}

/* Upload fresh data (pads too), poison the rest, on the compute lane, so the
 * op's fork orders them before everything it does. */
static int
prepare(syn_ctx *c, Bufs *b, const Case *k, int cs, void *host)
{
	CUstream s = syn_stream(c, SYN_COMPUTE);
	size_t es = esize(k->dt), elems = b->bytes / es;
	for (size_t i = 0; i < elems; i++)
		put(host, i, gen(cs, syn_rank(c), i, k->dt), k->dt);
	return CU(c, cuMemcpyHtoDAsync(b->stage, host, b->bytes, s)) &&
	       CU(c, cuMemsetD8Async(b->send, 0xFF, b->bytes, s)) && CU(c, cuMemsetD8Async(b->recv, 0xFF, b->bytes, s)) &&
	       CU(c, cuMemsetD8Async(b->out, 0xFF, b->bytes, s)) && CU(c, cuStreamSynchronize(s));
}

static long
compare(syn_ctx *c, const Case *k, int cs, const void *out, const void *recv, char *first, size_t n)
{
	int P = syn_nranks(c);
	size_t es = esize(k->dt), elems = (size_t)P * (N + PADMAX);
	long bad = 0;
	first[0] = 0;
	for (size_t e = 0; e < elems; e++) {
		int cov;
		float w = want(k, cs, P, syn_rank(c), e, &cov);
		uint32_t got = 0, pois = es == 2 ? 0xFFFFu : 0xFFFFFFFFu, rv = 0, wb;
		memcpy(&got, (const char *)out + e * es, es);
		memcpy(&rv, (const char *)recv + e * es, es);
		if (k->dt == CD_BF16)
			wb = f2bf(w);
		else
			memcpy(&wb, &w, 4);
		if (cov ? got == wb : (got == pois && rv == pois))
			continue;
		if (!bad++)
			snprintf(first, n, "element %zu: got %g, want %s%g", e, (double)get(out, e, k->dt),
			         cov ? "" : "poison (padding) not ", (double)w);
	}
	return bad;
}

static int shared; /* rt_test shared: both ranks on GPU 0, no NCCL communicator */

static int
run_case(syn_ctx *c, Bufs *b, const Case *k, int cs, void *host, void *out, void *recv)
{
	char name[128], first[160];
	uint64_t e;
	double t0;
	long bad;
	int r;
	case_name(k, name, sizeof name);
	if (!prepare(c, b, k, cs, host))
		return -1;
	t0 = now_s();
	if ((r = syn_begin(c, "colls", &e)) || (r = enqueue_case(c, b, k, e)) || (r = syn_end(c)) ||
	    (r = syn_sync(c))) {
		say(c, "FAIL %s: %s: %s", name, syn_status_name(r), syn_error(c));
		return -1;
	}
	t0 = now_s() - t0;
	if (!CU(c, cuMemcpyDtoH(out, b->out, b->bytes)) || !CU(c, cuMemcpyDtoH(recv, b->recv, b->bytes)))
		return -1;
	bad = compare(c, k, cs, out, recv, first, sizeof first);
	if (k->nogate) {
		say(c, "INFO %s: %ld of %zu elements differ from the reference (> 0 shows the gate matters)", name, bad,
		    (size_t)syn_nranks(c) * (N + PADMAX));
		return 0;
	}
	if (bad) {
		say(c, "FAIL %s: %ld wrong elements, first %s", name, bad, first);
		return -1;
	}
	say(c, "PASS %s: exact (%.2f ms begin to sync)", name, t0 * 1e3);
	return 0;
}

/* Refusals leave the context usable: checked between real cases. */
static int
refusals(syn_ctx *c, Bufs *b, int net)
{
	CommChunk ar = {CO_ALL_REDUCE, CD_F32, CR_SUM, (void *)(uintptr_t)b->send, (void *)(uintptr_t)b->recv, 1024,
	                0, 0, 0, 90, 0, 0, 0, 0};
	CommChunk sh = ar, ag = ar;
	syn_tensor t = {(void *)(uintptr_t)b->send, CD_F32, 2, {64, 64}, {0, 0}};
	syn_argspec s = {"w", CD_BF16, 2, {64, 64}, "bf16[K, N] @split(1)", 1};
	int bad = 0, r;
	sh.op = CO_SHIFT;
	sh.shift = syn_nranks(c);
	ag.op = CO_ALL_GATHER;
	r = syn_coll(c, SYN_CE, &ar);
	bad |= r != SYN_EUNSUPPORTED || !strstr(syn_error(c), "needs arithmetic");
	say(c, "%s ce all_reduce refused: %s", bad ? "FAIL" : "PASS", syn_error(c));
	r = syn_coll(c, SYN_NCCL, &sh);
	bad |= r != SYN_EARG || !strstr(syn_error(c), "shift 2 is not in [1, 1]");
	say(c, "%s bad shift refused: %s", bad ? "FAIL" : "PASS", syn_error(c));
	r = syn_check_args(c, "row_linear", 1, &t, &s);
	bad |= r != SYN_EARG || !strstr(syn_error(c), "argument 0 'w'");
	say(c, "%s argument check: %s", bad ? "FAIL" : "PASS", syn_error(c));
	if (net) {
		r = syn_coll(c, SYN_CE, &ag);
		bad |= r != SYN_EUNSUPPORTED || !strstr(syn_error(c), "another node");
		say(c, "%s ce across emulated nodes refused: %s", bad ? "FAIL" : "PASS", syn_error(c));
	}
	return bad ? -1 : 0;
}

static int
get_kernel(syn_ctx *c, syn_kernel **k)
{
	int r = syn_kernel_get(c, &img, "rt_wait_copy", k);
	if (r)
		say(c, "FAIL loading rt_test.ptx: %s", syn_error(c));
	return r;
}

static int
alloc_bufs(syn_ctx *c, Bufs *b)
{
	void *p[4];
	int r;
	memset(b, 0, sizeof *b);
	b->bytes = (size_t)syn_nranks(c) * (N + PADMAX) * 4;
	for (int i = 0; i < 4; i++)
		if ((r = syn_alloc(c, b->bytes, &p[i]))) {
			say(c, "FAIL syn_alloc: %s", syn_error(c));
			return r;
		}
	b->stage = (CUdeviceptr)(uintptr_t)p[0];
	b->send = (CUdeviceptr)(uintptr_t)p[1];
	b->recv = (CUdeviceptr)(uintptr_t)p[2];
	b->out = (CUdeviceptr)(uintptr_t)p[3];
	return get_kernel(c, &b->k);
}

static int
suite_colls(syn_ctx *c, void *arg)
{
	static const struct {
		int nchunks, pad;
	} shapes[] = {{1, 0}, {4, 0}, {2, PADMAX}};
	int net = arg != NULL, fails = 0, passes = 0, cs = 0;
	void *host = NULL, *out = NULL, *recv = NULL;
	const char *trace = getenv("RT_TRACE_OUT");
	Bufs b;
	if (alloc_bufs(c, &b))
		return 1;
	host = malloc(b.bytes);
	out = malloc(b.bytes);
	recv = malloc(b.bytes);
	for (int be = 0; be < SYN_BACKENDS; be++)
		for (int o = 0; o < CO_COUNT; o++)
			for (int dt = 0; dt < 2; dt++)
				for (int red = 0; red < (o == CO_ALL_REDUCE && !dt ? 2 : 1); red++)
					for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
						Case k = {(CommOp)o, red ? CR_MAX : CR_SUM, dt ? CD_BF16 : CD_F32, (syn_backend)be,
						          shapes[s].nchunks, shapes[s].pad, 0};
						if (!comm_backend_can((CommBackendKind)be, (CommOp)o, net ? 2 : 1, syn_nranks(c)) ||
						    (shared && be == SYN_NCCL))
							continue;
						if (run_case(c, &b, &k, cs++, host, out, recv))
							fails++;
						else
							passes++;
						if (cs == 3 && refusals(c, &b, net))
							fails++;
					}
	if (!net && !shared) {
		Case k = {CO_ALL_REDUCE, CR_SUM, CD_F32, SYN_NCCL, 4, 0, 1};
		run_case(c, &b, &k, cs++, host, out, recv);
	}
	if (trace && syn_trace_write(c, trace)) {
		say(c, "FAIL trace: %s", syn_error(c));
		fails++;
	} else if (trace && syn_rank(c) == 0)
		say(c, "trace written to %s", trace);
	say(c, "colls: %d cases passed, %d failed", passes, fails);
	free(host);
	free(out);
	free(recv);
	return fails ? 1 : 0;
}

/* ---- (4) a flag nobody raises ---- */

static int
expect_failure(syn_ctx *c, int r, double took, int want_status, const char *must)
{
	double limit = (double)syn_timeout_ns(c) * 1e-9 + 1.5;
	int ok = r != SYN_OK && (!want_status || r == want_status) && strstr(syn_error(c), must) && took < limit;
	say(c, "%s returned %s after %.2f s (deadline %.1f s + 1.5 s): %s", ok ? "PASS" : "FAIL", syn_status_name(r),
	    took, (double)syn_timeout_ns(c) * 1e-9, syn_error(c));
	return ok ? 0 : 1;
}

static int
suite_timeout(syn_ctx *c, void *arg)
{
	CommChunk ar = {CO_ALL_REDUCE, CD_F32, CR_SUM, NULL, NULL, 4096, 0, 0, 0, 0, 0, 0, 0, 0};
	uint64_t e;
	double t0;
	Bufs b;
	int r;
	(void)arg;
	if (alloc_bufs(c, &b))
		return 1;
	ar.send = (void *)(uintptr_t)b.send;
	ar.recv = (void *)(uintptr_t)b.recv;
	t0 = now_s();
	if ((r = syn_begin(c, "never_raised", &e)) ||
	    (syn_rank(c) == 0 && (r = syn_wait(c, SYN_COMM, NEVER, e, 0))) || (r = syn_coll(c, SYN_NCCL, &ar)) ||
	    (r = syn_raise(c, SYN_COMM, syn_rank(c), DONE, e)) ||
	    (r = launch_copy(c, &b, syn_flag_addr(c, syn_rank(c), DONE), e, b.recv, b.out, 4096 * 4, 0, 0, DONE, 3,
	                     syn_timeout_ns(c) + 1000000000ull)) ||
	    (r = syn_end(c)))
		say(c, "an enqueue call failed: %s", syn_status_name(r)); /* the error is what is checked */
	r = syn_sync(c);
	return expect_failure(c, r, now_s() - t0, 0, "flag 200 >= 1");
}

static int
suite_ktimeout(syn_ctx *c, void *arg)
{
	CommChunk ar = {CO_ALL_REDUCE, CD_F32, CR_SUM, NULL, NULL, 4096, 0, 0, 0, 0, 0, 0, 0, 0};
	uint64_t e;
	double t0;
	Bufs b;
	int r;
	(void)arg;
	if (alloc_bufs(c, &b))
		return 1;
	ar.send = (void *)(uintptr_t)b.send;
	ar.recv = (void *)(uintptr_t)b.recv;
	t0 = now_s();
	r = syn_begin(c, "kernel_waits_forever", &e);
	if (!r && syn_rank(c) == 0) /* half the deadline: the kernel's own timeout goes first */
		r = launch_copy(c, &b, syn_flag_addr(c, 0, NEVER + 1), e, b.send, b.out, 4096 * 4, 0, 0, NEVER + 1, 7,
		                syn_timeout_ns(c) / 2);
	if (!r && syn_rank(c) != 0) /* waits for rank 0, which never comes */
		r = syn_coll(c, SYN_NCCL, &ar);
	if (r || (r = syn_end(c)))
		say(c, "an enqueue call failed: %s", syn_status_name(r)); /* the error is what is checked */
	r = syn_sync(c);
	return expect_failure(c, r, now_s() - t0, syn_rank(c) == 0 ? SYN_EKERNEL : SYN_EPEER, "flag 201");
}

/* ---- (5) a persistent kernel spinning on NCCL's output ---- */

static int
persist_round(syn_ctx *c, syn_kernel *k, unsigned grid, unsigned smem, CUdeviceptr send, CUdeviceptr recv,
              CUdeviceptr out, size_t count, const float *ref, float *host)
{
	CommChunk ar = {CO_ALL_REDUCE, CD_F32, CR_SUM, (void *)(uintptr_t)send, (void *)(uintptr_t)recv, count,
	                0, 0, 0, 0, 0, 0, 0, 0};
	uint64_t e, flag, expect, s = recv, d = out, n16 = count * 4 / 16, done = 0, err = syn_errw_addr(c),
	              tmo = syn_timeout_ns(c), delay = 0, trace = 0;
	uint32_t fid = DONE + 10, site = 5;
	void *prm[] = {&flag, &expect, &s, &d, &n16, &done, &err, &tmo, &delay, &fid, &site, &trace};
	unsigned g[3] = {grid, 1, 1}, blk[3] = {128, 1, 1};
	double t0 = now_s();
	long bad = 0;
	int r;
	if (!CU(c, cuMemsetD8Async(out, 0xFF, count * 4, syn_stream(c, SYN_COMPUTE))) ||
	    !CU(c, cuStreamSynchronize(syn_stream(c, SYN_COMPUTE))))
		return 1;
	if ((r = syn_begin(c, "persist", &e)))
		goto fail;
	flag = syn_flag_addr(c, syn_rank(c), DONE + 10);
	expect = e;
	if ((r = syn_launch(c, k, g, blk, smem, prm)))
		goto fail;
	usleep(5000); /* its CTAs are resident before NCCL is enqueued (the H200-CHECKS set-up) */
	if ((r = syn_coll(c, SYN_NCCL, &ar)) || (r = syn_raise(c, SYN_COMM, syn_rank(c), DONE + 10, e)) ||
	    (r = syn_end(c)) || (r = syn_sync(c)))
		goto fail;
	t0 = now_s() - t0;
	if (!CU(c, cuMemcpyDtoH(host, out, count * 4)))
		return 1;
	for (size_t i = 0; i < count; i++)
		bad += host[i] != ref[i];
	say(c, "%s persistent grid %u of %d SMs (%d free), all_reduce %zu MB under it: %ld wrong, %.1f ms", bad ? "FAIL" : "PASS",
	    grid, syn_sms(c), syn_sms(c) - (int)grid, count * 4 >> 20, bad, t0 * 1e3);
	return bad ? 1 : 0;
fail:
	say(c, "FAIL persistent grid %u: %s: %s", grid, syn_status_name(r), syn_error(c));
	return 1;
}

static int
suite_persist(syn_ctx *c, void *arg)
{
	const size_t count = 8u << 20; /* 32 MB of f32 */
	int P = syn_nranks(c), smem = 0, fails = 0;
	unsigned grid = 0;
	float *host = malloc(count * 4), *ref = malloc(count * 4);
	void *send, *recv, *out;
	syn_kernel *k;
	CUdevice dev;
	(void)arg;
	if (syn_alloc(c, count * 4, &send) || syn_alloc(c, count * 4, &recv) || syn_alloc(c, count * 4, &out) ||
	    get_kernel(c, &k) || !CU(c, cuDeviceGet(&dev, syn_device(c))) ||
	    !CU(c, cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev)))
		return 1;
	for (size_t i = 0; i < count; i++) {
		float acc = 0;
		host[i] = gen(999, syn_rank(c), i, CD_F32);
		for (int q = 0; q < P; q++)
			acc += gen(999, q, i, CD_F32);
		ref[i] = acc;
	}
	if (!CU(c, cuMemcpyHtoD((CUdeviceptr)(uintptr_t)send, host, count * 4)))
		return 1;
	if (syn_grid_persistent(c, k, 128, (unsigned)smem, &grid)) {
		say(c, "FAIL syn_grid_persistent: %s", syn_error(c));
		return 1;
	}
	say(c, "persistent kernel: 128 threads, %d B shared memory, grid %u on %d SMs", smem, grid, syn_sms(c));
	fails += persist_round(c, k, grid, (unsigned)smem, (CUdeviceptr)(uintptr_t)send, (CUdeviceptr)(uintptr_t)recv,
	                       (CUdeviceptr)(uintptr_t)out, count, ref, host);
	if (!fails)
		fails += persist_round(c, k, (unsigned)syn_sms(c) - 1, (unsigned)smem, (CUdeviceptr)(uintptr_t)send,
		                       (CUdeviceptr)(uintptr_t)recv, (CUdeviceptr)(uintptr_t)out, count, ref, host);
	free(host);
	free(ref);
	return fails ? 1 : 0;
}

/* ---- modes ---- */

typedef int (*Suite)(syn_ctx *, void *);

static Suite
suite_of(const char *name)
{
	static const struct {
		const char *name;
		Suite fn;
	} suites[] = {{"colls", suite_colls}, {"timeout", suite_timeout}, {"ktimeout", suite_ktimeout},
	              {"persist", suite_persist}};
	for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
		if (!strcmp(suites[i].name, name))
			return suites[i].fn;
	return NULL;
}

static int
mode_local(Suite fn)
{
	syn_ctx *cs[2];
	double t0 = now_s();
	int gpu0[2] = {0, 0};
	syn_opts so;
	memset(&so, 0, sizeof so);
	so.devices = gpu0;
	int r = syn_init_local(2, cs, shared ? &so : NULL), rc;
	if (r) {
		printf("FAIL syn_init_local: %s: %s\n", syn_status_name(r), syn_error(cs[0] ? cs[0] : cs[1]));
		return 1;
	}
	printf("syn_init_local(2): %.2f s; GPU %d: %d SMs (%d kept free)\n", now_s() - t0, syn_device(cs[0]),
	       syn_sms(cs[0]), syn_free_sms(cs[0]));
	rc = syn_run_local(cs, 2, fn, NULL);
	t0 = now_s();
	syn_finalize(cs[0]);
	syn_finalize(cs[1]);
	printf("finalize: %.2f s\n", now_s() - t0);
	return rc ? 1 : 0;
}

static int
mode_rank(Suite fn, int net)
{
	syn_ctx *c;
	double t0 = now_s();
	int r = syn_init(&c, NULL), rc;
	if (r) {
		printf("[rank %s] FAIL syn_init: %s: %s\n", getenv("RANK"), syn_status_name(r), syn_error(c));
		syn_finalize(c);
		return 1;
	}
	say(c, "syn_init: %.2f s, GPU %d, %d SMs", now_s() - t0, syn_device(c), syn_sms(c));
	rc = fn(c, net ? (void *)1 : NULL);
	t0 = now_s();
	r = syn_rank(c);
	syn_finalize(c);
	printf("[rank %d] finalize %.2f s, exiting with %d\n", r, now_s() - t0, rc);
	return rc;
}

static int
free_port(void)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 29500;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!bind(fd, (struct sockaddr *)&sa, sizeof sa) && !getsockname(fd, (struct sockaddr *)&sa, &l))
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static int
mode_spawn(const char *self, const char *suite, int net)
{
	pid_t pid[2];
	int st[2] = {-1, -1}, rc = 0, port = free_port();
	double t0 = now_s(), end[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		char rank[8], port_s[16], seed_s[32];
		snprintf(rank, sizeof rank, "%d", i);
		snprintf(port_s, sizeof port_s, "%d", port);
		snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)seed);
		if ((pid[i] = fork()) == 0) {
			setenv("RANK", rank, 1);
			setenv("LOCAL_RANK", rank, 1);
			setenv("WORLD_SIZE", "2", 1);
			setenv("MASTER_ADDR", "127.0.0.1", 1);
			setenv("MASTER_PORT", port_s, 1);
			setenv("RT_SEED", seed_s, 1);
			setenv("NCCL_NVLS_ENABLE", "0", 1);
			if (net) {
				setenv("NCCL_HOSTID", i ? "syncc-node-b" : "syncc-node-a", 1);
				setenv("NCCL_NET", "Socket", 1);
				setenv("NCCL_SOCKET_IFNAME", "lo", 1);
			}
			execl(self, self, "rank", suite, net ? "net" : (char *)NULL, (char *)NULL);
			_exit(127);
		}
	}
	/* the children have their own deadlines; this one only catches a hang */
	while ((st[0] == -1 || st[1] == -1) && now_s() - t0 < 150) {
		for (int i = 0; i < 2; i++) {
			int s;
			if (st[i] == -1 && waitpid(pid[i], &s, WNOHANG) == pid[i]) {
				st[i] = s;
				end[i] = now_s() - t0;
			}
		}
		usleep(20000);
	}
	for (int i = 0; i < 2; i++) {
		if (st[i] == -1) {
			kill(pid[i], SIGKILL);
			waitpid(pid[i], NULL, 0);
			printf("spawn: rank %d HUNG, killed after 150 s\n", i);
			rc = 1;
			continue;
		}
		printf("spawn: rank %d %s %d after %.2f s\n", i, WIFEXITED(st[i]) ? "exited with" : "killed by signal",
		       WIFEXITED(st[i]) ? WEXITSTATUS(st[i]) : WTERMSIG(st[i]), end[i]);
		if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]))
			rc = 1;
	}
	return rc;
}

static char *
read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) == (size_t)n)
		b[n] = 0;
	fclose(f);
	return b;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *sname = argc > 2 ? argv[2] : "";
	const char *ptx = getenv("RT_TEST_PTX") ? getenv("RT_TEST_PTX") : "tests/gpu/rt_test.ptx";
	int net = argc > 3 && !strcmp(argv[3], "net"), rc;
	Suite fn = suite_of(sname);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	shared = !strcmp(mode, "shared");
	if (shared)
		mode = "local";
	if (!fn || (strcmp(mode, "local") && strcmp(mode, "spawn") && strcmp(mode, "rank"))) {
		fprintf(stderr, "usage: rt_test local|spawn|rank|shared colls|timeout|ktimeout|persist [net]\n");
		return 2;
	}
	seed = getenv("RT_SEED") ? strtoull(getenv("RT_SEED"), NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	if (strcmp(mode, "rank"))
		printf("rt_test %s %s%s: seed %llu\n", mode, sname, net ? " net" : "", (unsigned long long)seed);
	if (!strcmp(mode, "spawn"))
		return mode_spawn("/proc/self/exe", sname, net);
	if (!(img.ptx = read_text(ptx))) {
		fprintf(stderr, "rt_test: cannot read %s (set RT_TEST_PTX)\n", ptx);
		return 2;
	}
	rc = !strcmp(mode, "local") ? mode_local(fn) : mode_rank(fn, net);
	free((void *)img.ptx);
	return rc;
}
