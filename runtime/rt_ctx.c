/* runtime/rt_ctx.c -- contexts: one GPU per rank, its streams, the flag
 * array and error word, symmetric memory (peer-mapped: UVA in one process,
 * CUDA IPC between processes of one node), modules, and the NCCL
 * communicator with cgaClusterSize = 0 and the chosen maxCTAs
 * (H200-CHECKS: a spinning kernel next to 4-CTA clusters deadlocks). */
#define RT_CUDA 1
#include "rt.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* settle() polls without sleeping for SETTLE_SPIN_NS: a usleep(50) per
 * ncclInProgress (~110 us with timer slack) was the ~120 us floor of every
 * chunk's enqueue that --calibrate measured on 2x H200 (2026-11-30), and the
 * GPU's comm lane waited for it between short chunks. */
enum { TRACE_RECORDS = 1 << 16, SETTLE_SLEEP_US = 50 };
#define SETTLE_SPIN_NS 2000000ull

static const syn_image builtin = {"libsyncrt built-in", rt_builtin_ptx, NULL, 0};
static const syn_image tools = {"libsyncrt tools", rt_tool_ptx, NULL, 0};

/* ================= errors ================= */

int
rt_seterr(syn_ctx *c, int status, const char *fmt, ...)
{
	char msg[RT_ERRLEN];
	va_list ap;
	va_start(ap, fmt);
	rt_vfmt(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (status != SYN_EARG && status != SYN_EUNSUPPORTED)
		return rt_fail(c, status, msg);
	pthread_mutex_lock(&c->mu);
	if (!c->failed)
		rt_fmt(c->err, sizeof c->err, "%s", msg);
	pthread_mutex_unlock(&c->mu);
	return status;
}

int
rt_cu(syn_ctx *c, CUresult r, const char *what)
{
	const char *name = NULL, *str = NULL;
	if (r == CUDA_SUCCESS)
		return SYN_OK;
	cuGetErrorName(r, &name);
	cuGetErrorString(r, &str);
	return rt_seterr(c, SYN_ECUDA, "rank %d: %s: %s (%s)", c->rank, what, name ? name : "?", str ? str : "?");
}

int
rt_nccl(syn_ctx *c, ncclResult_t r, const char *what)
{
	const char *last = c->comm ? ncclGetLastError(c->comm) : NULL;
	if (r == ncclSuccess || r == ncclInProgress)
		return SYN_OK;
	return rt_seterr(c, SYN_ENCCL, "rank %d: %s: %s%s%s", c->rank, what, ncclGetErrorString(r),
	                 last && *last ? ": " : "", last ? last : "");
}

/* A non-blocking communicator answers ncclInProgress while it works in the
 * background; NCCL wants it settled before the next call.  Waits with the
 * deadline, and listens for other ranks failing meanwhile. */
static int
settle(syn_ctx *c, ncclResult_t r, const char *what, int ms)
{
	uint64_t now = rt_now_ns(), deadline = now + (uint64_t)ms * 1000000u, spin = now + SETTLE_SPIN_NS;
	ncclResult_t st = r;
	if (r != ncclSuccess && r != ncclInProgress)
		return rt_nccl(c, r, what);
	while (r == ncclInProgress && c->comm) {
		char msg[RT_ERRLEN];
		ncclResult_t q = ncclCommGetAsyncError(c->comm, &st);
		if (q != ncclSuccess) {
			st = q;
			break;
		}
		if (st != ncclInProgress)
			break;
		if (rt_now_ns() > deadline)
			return rt_seterr(c, SYN_ETIMEOUT, "rank %d: %s: NCCL still busy after %d ms", c->rank, what, ms);
		if (c->boot && rt_boot_poll(c->boot, msg, sizeof msg))
			return rt_seterr(c, SYN_EPEER, "rank %d: %s: stopped because another rank failed: %s",
			                 c->rank, what, msg);
		if (rt_now_ns() < spin)
			sched_yield();
		else
			usleep(SETTLE_SLEEP_US);
	}
	cuCtxSetCurrent(c->cu); /* NCCL may have switched devices */
	return rt_nccl(c, st, what);
}

int
rt_nccl_settle(syn_ctx *c, ncclResult_t r, const char *what)
{
	return settle(c, r, what, c->env.timeout_ms);
}

/* ================= exchanges between ranks ================= */

/* A barrier with a deadline among the threads of syn_init_local. */
static int
world_barrier(syn_ctx *c, const char *what)
{
	RtWorld *w = c->world;
	struct timespec ts;
	int gen, r = 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += w->timeout_ms / 1000;
	ts.tv_nsec += (long)(w->timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	gen = w->bar_gen;
	if (++w->bar_count == w->n) {
		w->bar_count = 0;
		w->bar_gen++;
		pthread_cond_broadcast(&w->cv);
	}
	while (gen == w->bar_gen && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	if (gen == w->bar_gen) {
		w->bar_count--;
		pthread_mutex_unlock(&w->mu);
		return rt_seterr(c, SYN_ETIMEOUT, "rank %d: %s: the other local ranks did not arrive within %d ms",
		                 c->rank, what, w->timeout_ms);
	}
	pthread_mutex_unlock(&w->mu);
	return SYN_OK;
}

static int
world_allgather(syn_ctx *c, const void *mine, size_t len, void *all)
{
	RtWorld *w = c->world;
	size_t need = len * (size_t)w->n;
	int r;
	pthread_mutex_lock(&w->mu);
	if (w->xcap < need) {
		char *x = realloc(w->xbuf, need);
		if (x) {
			w->xbuf = x;
			w->xcap = need;
		}
	}
	pthread_mutex_unlock(&w->mu);
	if (w->xcap < need)
		return rt_seterr(c, SYN_ENOMEM, "rank %d: allgather of %zu bytes: out of memory", c->rank, need);
	if ((r = world_barrier(c, "allgather")))
		return r;
	memcpy(w->xbuf + len * (size_t)c->rank, mine, len);
	if ((r = world_barrier(c, "allgather")))
		return r;
	memcpy(all, w->xbuf, need);
	return world_barrier(c, "allgather");
}

int
rt_allgather(syn_ctx *c, const void *mine, size_t len, void *all)
{
	char err[RT_ERRLEN];
	int r;
	if (c->world)
		return world_allgather(c, mine, len, all);
	if (!c->boot) {
		memcpy(all, mine, len);
		return SYN_OK;
	}
	if ((r = rt_boot_allgather(c->boot, mine, len, all, err, sizeof err)))
		return rt_seterr(c, r, "rank %d: %s", c->rank, err);
	return SYN_OK;
}

int
syn_barrier(syn_ctx *c)
{
	char in = 1, *out;
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (!(out = malloc((size_t)c->nranks)))
		return SYN_ENOMEM;
	r = rt_allgather(c, &in, 1, out);
	free(out);
	return r;
}

/* ================= symmetric memory ================= */

typedef struct SymPub {
	CUipcMemHandle h;
	uint64_t base;
	int32_t ipc_ok, dev;
} SymPub;

static int
same_node(const syn_ctx *c, int p)
{
	return !strcmp(c->peer_node + (size_t)p * RT_NODELEN, c->node);
}

static CUdeviceptr
map_peer(syn_ctx *c, const SymPub *pub, int p, RtSym *s)
{
	CUdeviceptr m = 0;
	if (p == c->rank)
		return s->base;
	if (c->world) /* one process: unified addresses, peer access enabled at init */
		return c->world->ctx[p] && c->reach[p] ? (CUdeviceptr)pub->base : 0;
	if (!same_node(c, p) || !pub->ipc_ok)
		return 0;
	if (cuIpcOpenMemHandle(&m, pub->h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS)
		return 0;
	s->ipc = 1;
	return m;
}

static void
sym_release(syn_ctx *c, RtSym *s, int free_base)
{
	for (int p = 0; p < c->nranks && s->peer; p++)
		if (p != c->rank && s->peer[p] && s->ipc)
			cuIpcCloseMemHandle(s->peer[p]);
	if (free_base && s->base)
		cuMemFree(s->base);
	free(s->peer);
	free(s);
}

/* Collective: every rank allocates `bytes` (zeroed) and learns where the
 * others' allocations appear in its own address space. */
static int
sym_alloc(syn_ctx *c, size_t bytes, RtSym **out)
{
	RtSym *s = calloc(1, sizeof *s);
	SymPub mine, *all = calloc((size_t)c->nranks, sizeof *all);
	int r;
	*out = NULL;
	memset(&mine, 0, sizeof mine);
	if (!s || !all || !(s->peer = calloc((size_t)c->nranks, sizeof *s->peer))) {
		free(all);
		if (s)
			free(s->peer);
		free(s);
		return rt_seterr(c, SYN_ENOMEM, "rank %d: symmetric allocation: out of host memory", c->rank);
	}
	s->bytes = bytes;
	r = rt_cu(c, cuMemAlloc(&s->base, bytes ? bytes : 1), "cuMemAlloc (symmetric)");
	if (!r)
		r = rt_cu(c, cuMemsetD8(s->base, 0, bytes ? bytes : 1), "cuMemsetD8 (symmetric)");
	mine.base = s->base;
	mine.dev = c->device;
	if (!r && !c->world && c->nranks > 1)
		mine.ipc_ok = cuIpcGetMemHandle(&mine.h, s->base) == CUDA_SUCCESS;
	/* every rank takes part in the exchange even after a local failure */
	if (rt_allgather(c, &mine, sizeof mine, all) && !r)
		r = SYN_EFAILED;
	for (int p = 0; p < c->nranks && !r; p++)
		s->peer[p] = map_peer(c, &all[p], p, s);
	free(all);
	if (r) {
		sym_release(c, s, 1);
		return r;
	}
	*out = s;
	return SYN_OK;
}

RtSym *
rt_sym_find(const syn_ctx *c, CUdeviceptr p, size_t bytes)
{
	for (int i = 0; i < c->nsym; i++) {
		RtSym *s = c->sym[i];
		if (p >= s->base && p - s->base <= s->bytes && bytes <= s->bytes - (p - s->base))
			return s;
	}
	if (c->flags && p >= c->flags->base && p - c->flags->base + bytes <= c->flags->bytes)
		return c->flags;
	return NULL;
}

int
syn_alloc(syn_ctx *c, size_t bytes, void **p)
{
	RtSym *s, **v;
	int r;
	*p = NULL;
	if ((r = rt_entry(c)))
		return r;
	if (!(v = realloc(c->sym, sizeof *v * (size_t)(c->nsym + 1))))
		return rt_seterr(c, SYN_ENOMEM, "rank %d: syn_alloc: out of host memory", c->rank);
	c->sym = v;
	if ((r = sym_alloc(c, bytes, &s)))
		return r;
	c->sym[c->nsym++] = s;
	*p = (void *)(uintptr_t)s->base;
	return SYN_OK;
}

int
syn_upload(syn_ctx *c, void *dst, const void *src, size_t bytes)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (!dst || (!src && bytes))
		return rt_seterr(c, SYN_EARG, "rank %d: syn_upload: NULL pointer", c->rank);
	return rt_cu(c, cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes), "cuMemcpyHtoD (syn_upload)");
}

int
syn_download(syn_ctx *c, void *dst, const void *src, size_t bytes)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (!src || (!dst && bytes))
		return rt_seterr(c, SYN_EARG, "rank %d: syn_download: NULL pointer", c->rank);
	return rt_cu(c, cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes), "cuMemcpyDtoH (syn_download)");
}

int
syn_state(syn_ctx *c, const char *key, size_t bytes, void **p)
{
	void *n;
	*p = NULL;
	if (!c || !key || strlen(key) >= sizeof c->state[0].key)
		return SYN_EARG;
	for (int i = 0; i < c->nstate; i++)
		if (strcmp(c->state[i].key, key) == 0) {
			*p = c->state[i].p;
			return 0;
		}
	if (!(n = realloc(c->state, sizeof *c->state * (size_t)(c->nstate + 1))) || !(*p = calloc(1, bytes ? bytes : 1)))
		return SYN_ENOMEM;
	c->state = n;
	snprintf(c->state[c->nstate].key, sizeof c->state[0].key, "%s", key);
	c->state[c->nstate++].p = *p;
	return 1;
}

int
syn_free(syn_ctx *c, void *p)
{
	int r, i;
	if ((r = rt_entry(c)))
		return r;
	for (i = 0; i < c->nsym && c->sym[i]->base != (CUdeviceptr)(uintptr_t)p; i++)
		;
	if (i == c->nsym)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_free(%p): not from syn_alloc", c->rank, p);
	for (int q = 0; q < c->nranks; q++) /* unmap the peers first, then let everybody free */
		if (q != c->rank && c->sym[i]->peer[q] && c->sym[i]->ipc) {
			cuIpcCloseMemHandle(c->sym[i]->peer[q]);
			c->sym[i]->peer[q] = 0;
		}
	r = syn_barrier(c);
	sym_release(c, c->sym[i], !r);
	c->sym[i] = c->sym[--c->nsym];
	return r;
}

void *
syn_peer_ptr(const syn_ctx *c, const void *p, int rank)
{
	RtSym *s;
	if (!c || rank < 0 || rank >= c->nranks)
		return NULL;
	s = rt_sym_find(c, (CUdeviceptr)(uintptr_t)p, 0);
	if (!s || !s->peer[rank])
		return NULL;
	return (void *)(uintptr_t)(s->peer[rank] + ((CUdeviceptr)(uintptr_t)p - s->base));
}

/* ================= modules ================= */

static int
load_module(syn_ctx *c, const syn_image *img, CUmodule *m)
{
	char elog[16384];
	CUjit_option opt[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE,
	                       CU_JIT_GENERATE_LINE_INFO};
	void *val[4] = {elog, (void *)(uintptr_t)sizeof elog, (void *)(uintptr_t)0, (void *)(uintptr_t)0};
	const char *cubin_note = "";
	CUresult r;
	if (img->cubin && img->cubin_size) {
		if (cuModuleLoadData(m, img->cubin) == CUDA_SUCCESS)
			return SYN_OK;
		cubin_note = " (its cubin did not load either)";
	}
	if (!img->ptx)
		return rt_seterr(c, SYN_EARG, "rank %d: module %s has neither PTX nor a loadable cubin", c->rank,
		                 img->name);
	elog[0] = 0;
	r = cuModuleLoadDataEx(m, img->ptx, 4, opt, val);
	if (r == CUDA_SUCCESS)
		return SYN_OK;
	{
		const char *name = NULL;
		cuGetErrorName(r, &name);
		return rt_seterr(c, SYN_ECUDA, "rank %d: JIT of module %s failed%s: %s\n--- JIT log ---\n%s", c->rank,
		                 img->name, cubin_note, name ? name : "?", elog[0] ? elog : "(empty)");
	}
}

static RtModule *
module_for(syn_ctx *c, const syn_image *img)
{
	RtModule *v;
	CUmodule m;
	for (int i = 0; i < c->nmods; i++)
		if (c->mods[i].img == img)
			return &c->mods[i];
	if (load_module(c, img, &m))
		return NULL;
	if (!(v = realloc(c->mods, sizeof *v * (size_t)(c->nmods + 1)))) {
		cuModuleUnload(m);
		rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
		return NULL;
	}
	c->mods = v;
	memset(&v[c->nmods], 0, sizeof *v);
	v[c->nmods].img = img;
	v[c->nmods].mod = m;
	return &v[c->nmods++];
}

/* The context's per-thread local memory grown now, while the op is being
 * set up, to what this kernel needs: grown at a launch instead, the driver
 * waits for the device to go idle first, and beside a kernel spinning for
 * a collective that is a hang (process_defaults). */
static int
reserve_stack(syn_ctx *c, CUfunction f, const char *entry)
{
	int local = 0;
	size_t have = 0;
	char what[96];
	if (cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) != CUDA_SUCCESS || local <= 0 ||
	    cuCtxGetLimit(&have, CU_LIMIT_STACK_SIZE) != CUDA_SUCCESS || (size_t)local <= have)
		return SYN_OK;
	rt_fmt(what, sizeof what, "cuCtxSetLimit(STACK_SIZE, %d) for kernel %s", local, entry);
	return rt_cu(c, cuCtxSetLimit(CU_LIMIT_STACK_SIZE, (size_t)local), what);
}

int
syn_kernel_get(syn_ctx *c, const syn_image *img, const char *entry, syn_kernel **out)
{
	RtModule *m;
	syn_kernel *k, **v;
	CUfunction f;
	int r;
	*out = NULL;
	if ((r = rt_entry(c)))
		return r;
	if (!(m = module_for(c, img)))
		return c->failed ? c->failed : SYN_EARG;
	for (int i = 0; i < m->nk; i++)
		if (!strcmp(m->k[i]->name, entry)) {
			*out = m->k[i];
			return SYN_OK;
		}
	if (cuModuleGetFunction(&f, m->mod, entry) != CUDA_SUCCESS)
		return rt_seterr(c, SYN_EARG, "rank %d: module %s has no kernel '%s'", c->rank, img->name, entry);
	if ((r = reserve_stack(c, f, entry)))
		return r;
	k = calloc(1, sizeof *k);
	v = realloc(m->k, sizeof *v * (size_t)(m->nk + 1));
	if (!k || !v) {
		free(k);
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
	}
	m->k = v;
	k->fn = f;
	rt_fmt(k->name, sizeof k->name, "%s", entry);
	m->k[m->nk++] = k;
	*out = k;
	return SYN_OK;
}

int
syn_grid_persistent(syn_ctx *c, syn_kernel *k, unsigned block, unsigned smem, unsigned *grid)
{
	int per = 0, r;
	*grid = 0;
	if ((r = rt_entry(c)))
		return r;
	if (smem > 48 * 1024 && smem > k->smem_set) {
		if ((r = rt_cu(c, cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
		               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")))
			return r;
		k->smem_set = smem;
	}
	if ((r = rt_cu(c, cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, k->fn, (int)block, smem),
	               "cuOccupancyMaxActiveBlocksPerMultiprocessor")))
		return r;
	if (per <= 0 || c->free_sms >= c->sms)
		return rt_seterr(c, SYN_EARG, "rank %d: kernel %s with %u threads and %u B shared memory: %d blocks "
		                 "per SM on %d SMs with %d kept free: no persistent grid",
		                 c->rank, k->name, block, smem, per, c->sms, c->free_sms);
	*grid = (unsigned)per * (unsigned)(c->sms - c->free_sms);
	return SYN_OK;
}

/* ================= one context ================= */

static syn_ctx *
ctx_new(const RtEnv *env, const syn_opts *o)
{
	syn_ctx *c = calloc(1, sizeof *c);
	pthread_mutexattr_t ma;
	if (!c)
		return NULL;
	c->env = *env;
	if (o && o->nccl_max_ctas > 0)
		c->env.nccl_max_ctas = o->nccl_max_ctas;
	if (o && o->free_sms > 0)
		c->env.free_sms = o->free_sms;
	else if (o && o->nccl_max_ctas > 0)
		c->env.free_sms = o->nccl_max_ctas;
	if (o && o->nflags > 0)
		c->env.nflags = o->nflags;
	if (o && o->timeout_ms > 0)
		c->env.timeout_ms = o->timeout_ms;
	if (o && o->trace > 0)
		c->env.trace = 1;
	c->max_ctas = c->env.nccl_max_ctas;
	c->free_sms = c->env.free_sms;
	c->trace = c->env.trace;
	c->nflags = c->env.nflags;
	c->cur_op = -1;
	c->clk0.rtt = c->clk1.rtt = -1; /* not measured */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&c->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	return c;
}

static int
ctx_attrs(syn_ctx *c)
{
	int memops = 0, r;
	if ((r = rt_cu(c, cuDeviceGetAttribute(&c->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev),
	               "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)")) ||
	    (r = rt_cu(c, cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, c->dev),
	               "cuDeviceGetAttribute(CAN_USE_64_BIT_STREAM_MEM_OPS)")))
		return r;
	if (!memops)
		return rt_seterr(c, SYN_ECUDA,
		                 "rank %d: GPU %d cannot do 64-bit stream memory operations (attribute 122 is 0); "
		                 "flags need them",
		                 c->rank, c->device);
	if (c->free_sms >= c->sms)
		c->free_sms = c->sms - 1;
	return SYN_OK;
}

static int
ctx_streams(syn_ctx *c)
{
	int least = 0, greatest = 0, r;
	if ((r = rt_cu(c, cuCtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange")) ||
	    (r = rt_cu(c, cuStreamCreateWithPriority(&c->lane[SYN_COMPUTE], CU_STREAM_NON_BLOCKING, least),
	               "cuStreamCreateWithPriority(compute)")) ||
	    (r = rt_cu(c, cuStreamCreateWithPriority(&c->lane[SYN_COMM], CU_STREAM_NON_BLOCKING, greatest),
	               "cuStreamCreateWithPriority(comm)")) ||
	    (r = rt_cu(c, cuStreamCreateWithPriority(&c->ctl, CU_STREAM_NON_BLOCKING, greatest),
	               "cuStreamCreate(ctl)")) ||
	    (r = rt_cu(c, cuStreamCreateWithPriority(&c->wd, CU_STREAM_NON_BLOCKING, greatest),
	               "cuStreamCreate(watchdog)")) ||
	    (r = rt_cu(c, cuEventCreate(&c->fork, CU_EVENT_DISABLE_TIMING), "cuEventCreate")) ||
	    (r = rt_cu(c, cuEventCreate(&c->join, CU_EVENT_DISABLE_TIMING), "cuEventCreate")))
		return r;
	return SYN_OK;
}

/* Host-mapped words the GPU writes and the host polls without a copy: the
 * kernels' error word and the %globaltimer stamps. */
static int
ctx_host_words(syn_ctx *c)
{
	void *p = NULL;
	int r;
	if ((r = rt_cu(c, cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc(error word)")))
		return r;
	memset(p, 0, 4096);
	c->errw = p;
	if ((r = rt_cu(c, cuMemHostGetDevicePointer(&c->errw_dev, p, 0), "cuMemHostGetDevicePointer(error word)")))
		return r;
	if ((r = rt_cu(c, cuMemHostAlloc(&p, RT_STAMPS * 8, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc(stamps)")))
		return r;
	memset(p, 0, RT_STAMPS * 8);
	c->stamp_host = p;
	return rt_cu(c, cuMemHostGetDevicePointer(&c->stamp_dev, p, 0), "cuMemHostGetDevicePointer(stamps)");
}

static int
ctx_builtin(syn_ctx *c)
{
	int r;
	if ((r = load_module(c, &builtin, &c->rtmod)) ||
	    (r = rt_cu(c, cuModuleGetFunction(&c->k_stamp, c->rtmod, "rt_stamp"), "built-in rt_stamp")) ||
	    (r = rt_cu(c, cuModuleGetFunction(&c->k_probe, c->rtmod, "rt_clock_probe"), "built-in rt_clock_probe")))
		return r;
	if (!c->trace)
		return SYN_OK;
	c->tcap = TRACE_RECORDS;
	return rt_cu(c, cuMemAlloc(&c->tbuf, (size_t)c->tcap * SYN_TRACE_RECORD_BYTES), "cuMemAlloc(trace buffer)");
}

/* Everything of one rank that needs no other rank. */
static int
ctx_open(syn_ctx *c, int device)
{
	int r;
	c->device = device;
	if ((r = rt_cu(c, cuDeviceGet(&c->dev, device), "cuDeviceGet")) ||
	    (r = rt_cu(c, cuDevicePrimaryCtxRetain(&c->cu, c->dev), "cuDevicePrimaryCtxRetain")))
		return r;
	if ((r = rt_cu(c, cuCtxSetCurrent(c->cu), "cuCtxSetCurrent")) || (r = ctx_attrs(c)) ||
	    (r = ctx_streams(c)) || (r = ctx_host_words(c)) || (r = ctx_builtin(c)))
		return r;
	if (!(c->reach = calloc((size_t)c->nranks, 1)) ||
	    !(c->peer_node = calloc((size_t)c->nranks, RT_NODELEN)))
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
	c->reach[c->rank] = 1;
	return SYN_OK;
}

/* The flags: generated code's [0, nflags) and the ce backend's 2 per rank. */
static int
ctx_flags(syn_ctx *c)
{
	int r;
	c->nflags_all = c->nflags + 2 * c->nranks;
	if ((r = sym_alloc(c, (size_t)c->nflags_all * 8, &c->flags)))
		return r;
	return rt_cu(c, cuMemHostAlloc((void **)&c->flag_host, (size_t)c->nflags_all * 8, 0),
	             "cuMemHostAlloc(flag copy)");
}

static void
nccl_config(const syn_ctx *c, ncclConfig_t *cfg)
{
	ncclConfig_t d = NCCL_CONFIG_INITIALIZER;
	*cfg = d;
	cfg->blocking = 0;       /* so init and collectives can be abandoned on a deadline */
	cfg->cgaClusterSize = 0; /* no 4-CTA clusters: they starve next to persistent kernels */
	cfg->maxCTAs = c->max_ctas;
}

static int
ctx_finish(syn_ctx *c)
{
	int r;
#define B(NAME, name, ...)                                                            \
	if (!(c->be[BE_##NAME] = rt_##name##_new(c)))                                   \
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
#include "../comm/backends.h"
#undef B
	if (c->trace && (r = rt_clock_probe(c, &c->clk0)))
		return r;
	return rt_watch_start(c);
}

/* ================= what NCCL must not do later ================= */

/* Before the process's first CUDA context and NCCL communicator.  Seen on
 * 2xH200: an NCCL collective enqueued behind a gated comm stream, or next
 * to a persistent kernel, never finished enqueueing -- its first use
 * connects channels, with allocations and synchronisations on NCCL's own
 * short-lived streams, and with 8 hardware queues those land behind our
 * stream waits.  So: more hardware queues, and rings and trees connected at
 * init.  And a kernel that needs more local memory per thread than the
 * context has reserved makes its launch wait for the whole device to go
 * idle: an NCCL send/recv kernel launched beside a kernel spinning for its
 * data stopped inside cuLaunchKernelEx until the spinner timed out (2xH200,
 * 2026-11-30, cuda-gdb stacks).  NCCL_SET_STACK_SIZE=1 has NCCL reserve its
 * kernels' largest frame at init; reserve_stack() does the same for ours.
 * A user's own setting of any of these wins. */
static void
process_defaults(void)
{
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	setenv("NCCL_RUNTIME_CONNECT", "0", 0);
	setenv("NCCL_SET_STACK_SIZE", "1", 0);
}

/* A tiny all_reduce and a send and a receive with every peer, waited for:
 * p2p channels connect at their first use whatever NCCL_RUNTIME_CONNECT
 * says, so that first use happens here, not inside an operator. */
static int
nccl_warmup(syn_ctx **cs, int n)
{
	CUdeviceptr *buf = calloc((size_t)n, sizeof *buf);
	ncclResult_t g;
	uint64_t deadline;
	int r = SYN_OK, P = cs[0]->nranks;
	if (!buf)
		return rt_seterr(cs[0], SYN_ENOMEM, "rank %d: out of host memory", cs[0]->rank);
	for (int i = 0; i < n && !r; i++) {
		cuCtxSetCurrent(cs[i]->cu);
		if (!(r = rt_cu(cs[i], cuMemAlloc(&buf[i], 16 + 4 * (size_t)P), "cuMemAlloc (warm-up)")))
			r = rt_cu(cs[i], cuMemsetD8(buf[i], 0, 16 + 4 * (size_t)P), "cuMemsetD8 (warm-up)");
	}
	if (!r) {
		ncclGroupStart();
		for (int i = 0; i < n; i++) {
			syn_ctx *c = cs[i];
			CUstream s = c->lane[SYN_COMM];
			ncclAllReduce((void *)(uintptr_t)buf[i], (void *)(uintptr_t)buf[i], 1, ncclFloat32, ncclSum, c->comm, s);
			for (int p = 0; p < P; p++)
				if (p != c->rank) {
					ncclSend((void *)(uintptr_t)(buf[i] + 8), 1, ncclFloat32, p, c->comm, s);
					ncclRecv((void *)(uintptr_t)(buf[i] + 16 + 4 * (CUdeviceptr)p), 1, ncclFloat32, p, c->comm, s);
				}
		}
		g = ncclGroupEnd();
		for (int i = 0; i < n && !r; i++)
			r = settle(cs[i], g, "NCCL warm-up (connections)", cs[i]->env.boot_timeout_ms);
	}
	deadline = rt_now_ns() + (uint64_t)cs[0]->env.boot_timeout_ms * 1000000u;
	for (int i = 0; i < n && !r; i++) {
		cuCtxSetCurrent(cs[i]->cu);
		while (cuStreamQuery(cs[i]->lane[SYN_COMM]) == CUDA_ERROR_NOT_READY && !r)
			if (rt_now_ns() > deadline)
				r = rt_seterr(cs[i], SYN_ETIMEOUT, "rank %d: NCCL warm-up did not finish within %d ms",
				              cs[i]->rank, cs[i]->env.boot_timeout_ms);
	}
	for (int i = 0; i < n; i++)
		if (buf[i] && !r) {
			cuCtxSetCurrent(cs[i]->cu);
			cuMemFree(buf[i]);
		}
	free(buf);
	return r;
}

/* ================= one process per GPU ================= */

static int
pick_device(syn_ctx *c, int *dev)
{
	int n = 0, r;
	if ((r = rt_cu(c, cuDeviceGetCount(&n), "cuDeviceGetCount")))
		return r;
	if (n < 1)
		return rt_seterr(c, SYN_ECUDA, "rank %d: no CUDA device visible", c->rank);
	if (n == 1)
		*dev = 0; /* CUDA_VISIBLE_DEVICES gave each process its own */
	else if (c->env.local_rank >= 0 && c->env.local_rank < n)
		*dev = c->env.local_rank;
	else if (c->env.local_rank >= n)
		return rt_seterr(c, SYN_EENV, "rank %d: local rank %d but only %d GPUs are visible", c->rank,
		                 c->env.local_rank, n);
	else
		*dev = c->rank % n;
	return SYN_OK;
}

static int
boot_world(syn_ctx *c, ncclUniqueId *id)
{
	char err[RT_ERRLEN];
	int r;
	rt_node_id(c->env.hostid, c->node, sizeof c->node);
	if (c->nranks == 1 || c->rank == 0)
		if ((r = rt_nccl(c, ncclGetUniqueId(id), "ncclGetUniqueId")))
			return r;
	if (c->nranks == 1) {
		memcpy(c->peer_node, c->node, RT_NODELEN);
		return SYN_OK;
	}
	if ((r = rt_boot_open(&c->boot, c->env.master_addr, c->env.master_port, c->rank, c->nranks,
	                      c->env.boot_timeout_ms, id, sizeof *id, err, sizeof err)))
		return rt_seterr(c, r, "%s", err);
	if ((r = rt_allgather(c, c->node, RT_NODELEN, c->peer_node)))
		return r;
	for (int p = 0; p < c->nranks; p++)
		c->reach[p] = same_node(c, p);
	return SYN_OK;
}

int
syn_init(syn_ctx **out, const syn_opts *o)
{
	RtEnv env;
	char err[RT_ERRLEN];
	ncclUniqueId id;
	ncclConfig_t cfg;
	syn_ctx *c;
	int r, dev = 0;
	process_defaults();
	r = rt_env_parse(&env, rt_env_process, NULL, err, sizeof err);
	if (!(*out = c = ctx_new(&env, o)))
		return SYN_ENOMEM;
	c->rank = env.rank;
	c->nranks = env.world;
	if (r)
		return rt_seterr(c, r, "rank ?: %s", err);
	if ((r = rt_cu(c, cuInit(0), "cuInit")) || (r = pick_device(c, &dev)) || (r = ctx_open(c, dev)) ||
	    (r = boot_world(c, &id)) || (r = ctx_flags(c)))
		return r;
	nccl_config(c, &cfg);
	r = ncclCommInitRankConfig(&c->comm, c->nranks, id, c->rank, &cfg);
	if ((r = settle(c, (ncclResult_t)r, "ncclCommInitRankConfig", c->env.boot_timeout_ms)) ||
	    (r = nccl_warmup(&c, 1)))
		return r;
	return ctx_finish(c);
}

/* ================= one process, several GPUs ================= */

static int
world_peer_access(syn_ctx **cs, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			int can = 0;
			CUresult e;
			if (i == j || cuDeviceCanAccessPeer(&can, cs[i]->dev, cs[j]->dev) != CUDA_SUCCESS || !can)
				continue;
			cuCtxSetCurrent(cs[i]->cu);
			e = cuCtxEnablePeerAccess(cs[j]->cu, 0);
			if (e != CUDA_SUCCESS && e != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
				return rt_cu(cs[i], e, "cuCtxEnablePeerAccess");
			cs[i]->reach[j] = 1;
		}
	return SYN_OK;
}

/* The flags of every rank, exchanged directly (one thread holds them all). */
static int
world_flags(syn_ctx **cs, int n)
{
	int r;
	for (int i = 0; i < n; i++) {
		RtSym *s = calloc(1, sizeof *s);
		syn_ctx *c = cs[i];
		cuCtxSetCurrent(c->cu);
		c->nflags_all = c->nflags + 2 * n;
		if (!s || !(s->peer = calloc((size_t)n, sizeof *s->peer))) {
			free(s);
			return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
		}
		c->flags = s;
		s->bytes = (size_t)c->nflags_all * 8;
		if ((r = rt_cu(c, cuMemAlloc(&s->base, s->bytes), "cuMemAlloc(flags)")) ||
		    (r = rt_cu(c, cuMemsetD8(s->base, 0, s->bytes), "cuMemsetD8(flags)")) ||
		    (r = rt_cu(c, cuMemHostAlloc((void **)&c->flag_host, s->bytes, 0), "cuMemHostAlloc(flag copy)")))
			return r;
	}
	for (int i = 0; i < n; i++)
		for (int p = 0; p < n; p++)
			cs[i]->flags->peer[p] = cs[i]->reach[p] ? cs[p]->flags->base : 0;
	return SYN_OK;
}

static int
world_comms(syn_ctx **cs, int n)
{
	ncclUniqueId id;
	ncclConfig_t cfg;
	ncclResult_t g;
	int r;
	if ((r = rt_nccl(cs[0], ncclGetUniqueId(&id), "ncclGetUniqueId")))
		return r;
	nccl_config(cs[0], &cfg);
	/* one thread, several devices: the inits must share one group */
	ncclGroupStart();
	for (int i = 0; i < n; i++) {
		cuCtxSetCurrent(cs[i]->cu);
		r = rt_nccl(cs[i], ncclCommInitRankConfig(&cs[i]->comm, n, id, i, &cfg), "ncclCommInitRankConfig");
		if (r) {
			ncclGroupEnd();
			return r;
		}
	}
	g = ncclGroupEnd();
	for (int i = 0; i < n; i++)
		if ((r = settle(cs[i], g, "ncclCommInitRankConfig (group of local GPUs)", cs[i]->env.boot_timeout_ms)))
			return r;
	return SYN_OK;
}

/* The GPUs of a one-process world: each visible, none twice. */
static int
check_devices(syn_ctx *c, int n, const int *dev, int have)
{
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	if (!dev && have < n)
		return rt_seterr(c, SYN_EARG, "syn_init_local: %d GPUs asked for, %d visible%s%s", n, have,
		                 vis ? " with CUDA_VISIBLE_DEVICES=" : "", vis ? vis : "");
	for (int i = 0; dev && i < n; i++) {
		if (dev[i] < 0 || dev[i] >= have)
			return rt_seterr(c, SYN_EARG, "syn_init_local: rank %d on GPU %d, but only GPUs 0 to %d are visible%s%s",
			                 i, dev[i], have - 1, vis ? " with CUDA_VISIBLE_DEVICES=" : "", vis ? vis : "");
		for (int j = 0; j < i; j++)
			if (dev[j] == dev[i])
				return rt_seterr(c, SYN_EARG, "syn_init_local: ranks %d and %d both on GPU %d", j, i, dev[i]);
	}
	return SYN_OK;
}

int
syn_device_count(int *n)
{
	*n = 0;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(n) != CUDA_SUCCESS)
		return SYN_ECUDA;
	return SYN_OK;
}

const syn_image *
syn_builtin_image(void)
{
	return &tools;
}

int
syn_init_local(int n, syn_ctx **cs, const syn_opts *o)
{
	RtEnv env;
	char err[RT_ERRLEN];
	RtWorld *w;
	int r, have = 0;
	for (int i = 0; i < n; i++)
		cs[i] = NULL;
	if (n < 1 || !(w = calloc(1, sizeof *w)) || !(w->ctx = calloc((size_t)n, sizeof *w->ctx)))
		return SYN_ENOMEM;
	process_defaults();
	r = rt_env_parse(&env, rt_env_process, NULL, err, sizeof err);
	env.rank = 0;
	env.world = n;
	w->n = w->refs = n;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	for (int i = 0; i < n; i++) {
		if (!(cs[i] = w->ctx[i] = ctx_new(&env, o)))
			return SYN_ENOMEM;
		cs[i]->rank = i;
		cs[i]->nranks = n;
		cs[i]->world = w;
	}
	w->timeout_ms = cs[0]->env.timeout_ms;
	if (r)
		return rt_seterr(cs[0], r, "%s", err);
	if ((r = rt_cu(cs[0], cuInit(0), "cuInit")) || (r = rt_cu(cs[0], cuDeviceGetCount(&have), "cuDeviceGetCount")))
		return r;
	if ((r = check_devices(cs[0], n, o ? o->devices : NULL, have)))
		return r;
	for (int i = 0; i < n; i++)
		if ((r = ctx_open(cs[i], o && o->devices ? o->devices[i] : i)))
			return r;
	for (int i = 0; i < n; i++) {
		rt_fmt(cs[i]->node, sizeof cs[i]->node, "process");
		for (int p = 0; p < n; p++)
			rt_fmt(cs[i]->peer_node + (size_t)p * RT_NODELEN, RT_NODELEN, "process");
	}
	if ((r = world_peer_access(cs, n)) || (r = world_flags(cs, n)) || (r = world_comms(cs, n)) ||
	    (r = nccl_warmup(cs, n)))
		return r;
	for (int i = 0; i < n; i++) {
		cuCtxSetCurrent(cs[i]->cu);
		if ((r = ctx_finish(cs[i])))
			return r;
	}
	return SYN_OK;
}

typedef struct RunArg {
	syn_ctx *c;
	int (*fn)(syn_ctx *, void *);
	void *arg;
	int rc;
} RunArg;

static void *
run_one(void *p)
{
	RunArg *a = p;
	syn_bind(a->c);
	a->rc = a->fn(a->c, a->arg);
	return NULL;
}

int
syn_run_local(syn_ctx **cs, int n, int (*fn)(syn_ctx *, void *), void *arg)
{
	RunArg *a = calloc((size_t)n, sizeof *a);
	pthread_t *t = calloc((size_t)n, sizeof *t);
	char *started = calloc((size_t)n, 1);
	int rc = 0;
	if (!a || !t || !started) {
		free(a);
		free(t);
		free(started);
		return SYN_ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		a[i] = (RunArg){cs[i], fn, arg, 0};
		started[i] = !pthread_create(&t[i], NULL, run_one, &a[i]);
		if (!started[i])
			a[i].rc = SYN_ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		if (started[i])
			pthread_join(t[i], NULL);
		if (a[i].rc && !rc)
			rc = a[i].rc;
	}
	free(a);
	free(t);
	free(started);
	return rc;
}

/* ================= teardown ================= */

static void
free_modules(syn_ctx *c)
{
	for (int i = 0; i < c->nmods; i++) {
		cuModuleUnload(c->mods[i].mod);
		for (int k = 0; k < c->mods[i].nk; k++)
			free(c->mods[i].k[k]);
		free(c->mods[i].k);
	}
	free(c->mods);
	if (c->rtmod)
		cuModuleUnload(c->rtmod);
}

static void
free_gpu(syn_ctx *c)
{
	for (int i = 0; i < c->nsym; i++)
		sym_release(c, c->sym[i], 1);
	if (c->flags)
		sym_release(c, c->flags, 1);
	for (int i = 0; i < c->nev; i++)
		cuEventDestroy(c->evpool[i]);
	for (int i = 0; i < c->nanchors; i++) {
		cuEventDestroy(c->anchors[i].before);
		cuEventDestroy(c->anchors[i].after);
	}
	free_modules(c);
	if (c->tbuf)
		cuMemFree(c->tbuf);
	if (c->flag_host)
		cuMemFreeHost(c->flag_host);
	if (c->errw)
		cuMemFreeHost((void *)c->errw);
	if (c->stamp_host)
		cuMemFreeHost((void *)c->stamp_host);
	for (int l = 0; l < SYN_LANES; l++)
		if (c->lane[l])
			cuStreamDestroy(c->lane[l]);
	if (c->ctl)
		cuStreamDestroy(c->ctl);
	if (c->wd)
		cuStreamDestroy(c->wd);
	if (c->fork)
		cuEventDestroy(c->fork);
	if (c->join)
		cuEventDestroy(c->join);
	for (int i = 0; i < 8; i++)
		if (c->mark[i])
			cuEventDestroy(c->mark[i]);
	rt_stream_free(c);
}

static void
close_comm(syn_ctx *c)
{
	ncclResult_t st = ncclInProgress;
	uint64_t deadline = rt_now_ns() + 5000000000ull;
	if (!c->comm)
		return;
	if (ncclCommFinalize(c->comm) == ncclInProgress)
		while (ncclCommGetAsyncError(c->comm, &st) == ncclSuccess && st == ncclInProgress &&
		       rt_now_ns() < deadline)
			usleep(100);
	ncclCommDestroy(c->comm);
	c->comm = NULL;
}

void
syn_finalize(syn_ctx *c)
{
	RtWorld *w;
	int clean;
	if (!c)
		return;
	if (c->cu)
		cuCtxSetCurrent(c->cu);
	rt_watch_stop(c);
	/* after a failure the GPU may still hold work that never finishes:
	 * then leave its memory alone rather than free it under it */
	clean = !c->cu || !rt_drain(c, c->failed ? 2000 : c->env.timeout_ms);
	rt_abort_wait(c, 3000);
	if (!c->failed && c->boot)
		syn_barrier(c); /* no process frees memory a peer may still touch */
	if (!c->failed)
		close_comm(c);
	rt_boot_close(c->boot);
	if (clean && c->cu)
		free_gpu(c);
	if (c->cu)
		cuDevicePrimaryCtxRelease(c->dev);
	for (int i = 0; i < SYN_BACKENDS; i++)
		free(c->be[i]);
	free(c->items);
	free(c->evpool);
	free(c->ops);
	free(c->anchors);
	free(c->sym);
	for (int i = 0; i < c->nstate; i++)
		free(c->state[i].p);
	free(c->state);
	free(c->reach);
	free(c->peer_node);
	rt_trace_free(&c->tr);
	w = c->world;
	pthread_mutex_destroy(&c->mu);
	free(c);
	if (w) {
		int last;
		pthread_mutex_lock(&w->mu);
		last = --w->refs == 0;
		pthread_mutex_unlock(&w->mu);
		if (last) {
			free(w->xbuf);
			free(w->ctx);
			free(w);
		}
	}
}

/* ================= accessors ================= */

int
syn_bind(syn_ctx *c)
{
	if (!c || !c->cu)
		return SYN_EARG;
	return cuCtxSetCurrent(c->cu) == CUDA_SUCCESS ? SYN_OK : SYN_ECUDA;
}

int
syn_rank(const syn_ctx *c)
{
	return c->rank;
}

int
syn_nranks(const syn_ctx *c)
{
	return c->nranks;
}

int
syn_device(const syn_ctx *c)
{
	return c->device;
}

int
syn_sms(const syn_ctx *c)
{
	return c->sms;
}

int
syn_free_sms(const syn_ctx *c)
{
	return c->free_sms;
}

void *
syn_stream(const syn_ctx *c, syn_lane lane)
{
	return (unsigned)lane < SYN_LANES ? (void *)c->lane[lane] : NULL;
}

const char *
syn_error(const syn_ctx *c)
{
	return c ? c->err : "no context (out of memory)";
}

uint64_t
syn_flag_addr(const syn_ctx *c, int rank, int flag)
{
	if (!c->flags || rank < 0 || rank >= c->nranks || flag < 0 || flag >= c->nflags || !c->flags->peer[rank])
		return 0;
	return c->flags->peer[rank] + (uint64_t)flag * 8;
}

uint64_t
syn_errw_addr(const syn_ctx *c)
{
	return c->errw_dev;
}

uint64_t
syn_timeout_ns(const syn_ctx *c)
{
	return (uint64_t)c->env.timeout_ms * 1000000u;
}

uint64_t
syn_trace_slots(syn_ctx *c, unsigned n)
{
	uint64_t p;
	if (!c->trace || !c->tbuf || c->tused + n > c->tcap)
		return 0;
	p = c->tbuf + (uint64_t)c->tused * SYN_TRACE_RECORD_BYTES;
	c->tused += n;
	return p;
}
