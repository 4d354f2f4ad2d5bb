/* runtime/rt_ctx.c -- one context: a rank's GPU, its streams, the flag
 * array and error word, the built-in kernels; its teardown; the accessors.
 * Errors: rt_cuerr.c; symmetric memory: rt_sym.c; modules: rt_module.c;
 * the world it belongs to and the NCCL communicator: rt_world.c. */
#define RT_CUDA 1
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TRACE_RECORDS = 1 << 16 };

static const syn_image builtin = {"libsyncrt built-in", rt_builtin_ptx, NULL, 0};

/* ================= one context ================= */

syn_ctx *
rt_ctx_new(const RtEnv *env, const syn_opts *o)
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
	if (o && o->gpus_per_node) { /* checked against the world by the init (rt_world.c) */
		c->gpus = o->gpus_per_node;
		c->gpus_from = "syn_opts.gpus_per_node";
	} else {
		c->gpus = c->env.local_world;
		c->gpus_from = c->env.local_world_var;
	}
	c->max_ctas = c->env.nccl_max_ctas;
	c->free_sms = c->env.free_sms;
	c->trace = c->env.trace;
	c->nflags = c->env.nflags;
	c->cur_op = -1;
	c->next_nflags = -1;
	c->texp_rank = -1;
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
	if ((r = rt_module_load(c, &builtin, &c->rtmod)) ||
	    (r = rt_cu(c, cuModuleGetFunction(&c->k_stamp, c->rtmod, "rt_stamp"), "built-in rt_stamp")) ||
	    (r = rt_cu(c, cuModuleGetFunction(&c->k_probe, c->rtmod, "rt_clock_probe"), "built-in rt_clock_probe")))
		return r;
	if (!c->trace)
		return SYN_OK;
	c->tcap = TRACE_RECORDS;
	return rt_cu(c, cuMemAlloc(&c->tbuf, (size_t)c->tcap * SYN_TRACE_RECORD_BYTES), "cuMemAlloc(trace buffer)");
}

/* Everything of one rank that needs no other rank. */
int
rt_ctx_open(syn_ctx *c, int device)
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

/* The flags: generated code's [0, nflags) and the ce and p2p backends' 2
 * per rank each. */
int
rt_ctx_flags(syn_ctx *c)
{
	int r;
	c->nflags_all = c->nflags + RT_BE_FLAGS * c->nranks + RT_BE_WORDS;
	if ((r = rt_sym_alloc(c, (size_t)c->nflags_all * 8, &c->flags)))
		return r;
	return rt_cu(c, cuMemHostAlloc((void **)&c->flag_host, (size_t)c->nflags_all * 8, 0),
	             "cuMemHostAlloc(flag copy)");
}

int
rt_ctx_finish(syn_ctx *c)
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
	if (c->capturing) /* the set-up's copies to the GPU would break the capture */
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: '%s' is called for the first time inside a CUDA graph capture: call it once "
		                 "before capturing (its first call uploads its tables)",
		                 c->rank, key);
	if (!(n = realloc(c->state, sizeof *c->state * (size_t)(c->nstate + 1))))
		return SYN_ENOMEM;
	c->state = n;
	/* 64-byte aligned: an op's state holds its tensor maps (syn_tmap) */
	bytes = bytes ? (bytes + 63) / 64 * 64 : 64;
	if (!(*p = aligned_alloc(64, bytes)))
		return SYN_ENOMEM;
	memset(*p, 0, bytes);
	snprintf(c->state[c->nstate].key, sizeof c->state[0].key, "%s", key);
	c->state[c->nstate++].p = *p;
	return 1;
}

/* ================= teardown ================= */

static void
free_gpu(syn_ctx *c)
{
	for (int i = 0; i < c->nsym; i++)
		rt_sym_release(c, c->sym[i], 1);
	if (c->flags)
		rt_sym_release(c, c->flags, 1);
	for (int i = 0; i < c->nev; i++)
		cuEventDestroy(c->evpool[i]);
	for (int i = 0; i < c->nanchors; i++) {
		cuEventDestroy(c->anchors[i].before);
		cuEventDestroy(c->anchors[i].after);
	}
	rt_modules_free(c);
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
		rt_nccl_close(c);
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
	free(c->cleared);
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
