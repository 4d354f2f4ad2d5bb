/* runtime/rt_world.c -- a world of ranks and its NCCL communicator: one
 * process per GPU (syn_init: the TCP bootstrap and the nodes) or one
 * process driving several GPUs (syn_init_local: peer access, one NCCL
 * group), the exchanges between ranks (barrier, allgather), and the
 * communicator with cgaClusterSize = 0 and the chosen maxCTAs (H200-CHECKS:
 * a spinning kernel next to 4-CTA clusters deadlocks), warmed up before
 * any operator runs. */
#define RT_CUDA 1
#include "rt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

int
rt_same_node(const syn_ctx *c, int p)
{
	return !strcmp(c->peer_node + (size_t)p * RT_NODELEN, c->node);
}

/* ================= the NCCL communicator ================= */

static void
nccl_config(const syn_ctx *c, ncclConfig_t *cfg)
{
	ncclConfig_t d = NCCL_CONFIG_INITIALIZER;
	*cfg = d;
	cfg->blocking = 0;       /* so init and collectives can be abandoned on a deadline */
	cfg->cgaClusterSize = 0; /* no 4-CTA clusters: they starve next to persistent kernels */
	cfg->maxCTAs = c->max_ctas;
}

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
 * kernels' largest frame at init; reserve_stack() (rt_module.c) does the same for ours.
 * A user's own setting of any of these wins. */
static void
process_defaults(void)
{
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	setenv("NCCL_RUNTIME_CONNECT", "0", 0);
	setenv("NCCL_SET_STACK_SIZE", "1", 0);
}

/* The communicator of one level of the world: 0 the node's, 1 the
 * cross-node one. */
static ncclComm_t *
level_comm(syn_ctx *c, int cross)
{
	return cross ? &c->cross_comm : &c->node_comm;
}

/* A tiny all_reduce on one level's communicator of every local rank, in
 * one group, settled: its first use is here, not inside an operator. */
static int
warm_level(syn_ctx **cs, int n, const CUdeviceptr *buf, int cross)
{
	ncclResult_t g;
	int r = SYN_OK;
	if (!*level_comm(cs[0], cross))
		return SYN_OK;
	ncclGroupStart();
	for (int i = 0; i < n; i++)
		ncclAllReduce((void *)(uintptr_t)buf[i], (void *)(uintptr_t)buf[i], 1, ncclFloat32, ncclSum,
		              *level_comm(cs[i], cross), cs[i]->lane[SYN_COMM]);
	g = ncclGroupEnd();
	for (int i = 0; i < n && !r; i++)
		r = rt_nccl_settle_on(cs[i], level_comm(cs[i], cross), g,
		                      cross ? "NCCL warm-up (cross-node communicator)" : "NCCL warm-up (node communicator)",
		                      cs[i]->env.boot_timeout_ms);
	return r;
}

/* A tiny all_reduce and a send and a receive with every peer, waited for:
 * p2p channels connect at their first use whatever NCCL_RUNTIME_CONNECT
 * says, so that first use happens here, not inside an operator.  Then
 * the levels' communicators, each its own group after the world's. */
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
			r = rt_zero(cs[i], buf[i], 16 + 4 * (size_t)P, "cuMemsetD8 (warm-up)");
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
			r = rt_nccl_settle_ms(cs[i], g, "NCCL warm-up (connections)", cs[i]->env.boot_timeout_ms);
		for (int cross = 0; cross < 2 && !r; cross++)
			r = warm_level(cs, n, buf, cross);
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

/* Finalised (waited for up to a deadline), then destroyed. */
static void
close_comm(ncclComm_t *comm)
{
	ncclResult_t st = ncclInProgress;
	uint64_t deadline = rt_now_ns() + 5000000000ull;
	if (!*comm)
		return;
	if (ncclCommFinalize(*comm) == ncclInProgress)
		while (ncclCommGetAsyncError(*comm, &st) == ncclSuccess && st == ncclInProgress && rt_now_ns() < deadline)
			usleep(100);
	ncclCommDestroy(*comm);
	*comm = NULL;
}

void
rt_nccl_close(syn_ctx *c)
{
	/* the levels' communicators before the world they were split from */
	close_comm(&c->node_comm);
	close_comm(&c->cross_comm);
	close_comm(&c->comm);
}

/* ================= the levels of a multi-node plan ================= */

/* G as syn_opts gives it must cut the world into whole nodes.  (A
 * launcher's LOCAL_WORLD_SIZE that does not divide the world is only a
 * world without levels: its flat plans still run.) */
static int
check_gpus(syn_ctx *c, const syn_opts *o)
{
	int g = o ? o->gpus_per_node : 0;
	if (g && (g < 0 || g > c->nranks || c->nranks % g))
		return rt_seterr(c, SYN_EARG, "rank %d: syn_opts.gpus_per_node = %d does not cut %d ranks into whole nodes",
		                 c->rank, g, c->nranks);
	return SYN_OK;
}

#if NCCL_VERSION_CODE >= 21800 /* ncclCommSplit */
/* One level's communicator of every local rank, split from the world's
 * with the world's own config (no clusters, maxCTAs, non-blocking): the
 * node's (color rank / G) or the cross-node one (color rank % G), keyed
 * by the world rank so that a rank's place in it is its place in the
 * chunk's group (comm/comm.h).  Several local ranks: one group, as their
 * inits were (one thread, several devices); one group per level, since
 * NCCL merges the making of communicators with nothing else. */
static int
split_level(syn_ctx **cs, int n, int cross)
{
	const char *what = cross ? "ncclCommSplit (cross-node communicator)" : "ncclCommSplit (node communicator)";
	ncclConfig_t cfg;
	ncclResult_t res = ncclSuccess;
	int r, bad = 0;
	nccl_config(cs[0], &cfg);
	if (n > 1)
		ncclGroupStart();
	for (int i = 0; i < n; i++) {
		syn_ctx *c = cs[i];
		cuCtxSetCurrent(c->cu);
		res = ncclCommSplit(c->comm, rt_level_color(c->rank, c->gpus, cross), c->rank, level_comm(c, cross), &cfg);
		if (res != ncclSuccess && res != ncclInProgress) {
			bad = i;
			break;
		}
	}
	if (n > 1) {
		ncclResult_t g = ncclGroupEnd(); /* always close the group */
		if (res == ncclSuccess || res == ncclInProgress)
			res = g;
	}
	if (res != ncclSuccess && res != ncclInProgress)
		return rt_nccl(cs[bad], res, what);
	for (int i = 0; i < n; i++) {
		if ((r = rt_nccl_settle_on(cs[i], level_comm(cs[i], cross), res, what, cs[i]->env.boot_timeout_ms)))
			return r;
		if (!*level_comm(cs[i], cross))
			return rt_seterr(cs[i], SYN_ENCCL, "rank %d: %s made no communicator", cs[i]->rank, what);
	}
	return SYN_OK;
}
#endif

/* The levels of a plan compiled for --topo NxG (docs/codegen.md), made
 * at init and never inside an op: a split is collective over the world
 * (every rank calls it, in the same order), and a launcher call must not
 * wait on the host.  Only where G cuts the world into several nodes of
 * several GPUs; NCCL before 2.18 has no ncclCommSplit, and then a plan
 * with phases is refused by its launcher (syn_check_topo). */
static int
split_levels(syn_ctx **cs, int n)
{
	int r;
	if (!rt_levels_split(cs[0]->nranks, cs[0]->gpus))
		return SYN_OK;
#if NCCL_VERSION_CODE >= 21800
	if ((r = split_level(cs, n, 0)) || (r = split_level(cs, n, 1)))
		return r;
#else
	(void)r;
#endif
	return SYN_OK;
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
		c->reach[p] = rt_same_node(c, p);
	return SYN_OK;
}

/* This rank's share of a GPU that `share` ranks run on (share_device). */
static void
take_share(syn_ctx *c, int share)
{
	c->share = share;
	if (share < 2)
		return;
	c->sms /= share;
	if (c->free_sms >= c->sms)
		c->free_sms = c->sms / 4 > 0 ? c->sms / 4 : 1;
}

/* The processes of a node on one GPU (each with CUDA_VISIBLE_DEVICES
 * naming the same one, say): their GPUs' UUIDs compared.  NCCL refuses a
 * GPU twice, so such a world has no communicator; the p2p and ce backends
 * run there, the kernels on shares of the SMs as in one process (though
 * the GPU time-slices kernels of different processes: only plans whose
 * kernels never wait for a collective run at speed). */
static int
process_share(syn_ctx *c)
{
	CUuuid mine, *all = calloc((size_t)c->nranks, sizeof *all);
	int r, share = 0;
	if (!all)
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
	memset(&mine, 0, sizeof mine);
	r = rt_cu(c, cuDeviceGetUuid(&mine, c->dev), "cuDeviceGetUuid");
	if (rt_allgather(c, &mine, sizeof mine, all) && !r)
		r = SYN_EFAILED;
	for (int p = 0; p < c->nranks && !r; p++)
		share += rt_same_node(c, p) && !memcmp(&all[p], &mine, sizeof mine);
	free(all);
	if (!r)
		take_share(c, share);
	return r;
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
	if (!(*out = c = rt_ctx_new(&env, o)))
		return SYN_ENOMEM;
	c->rank = env.rank;
	c->nranks = env.world;
	if (r)
		return rt_seterr(c, r, "rank ?: %s", err);
	if ((r = check_gpus(c, o)))
		return r;
	if ((r = rt_cu(c, cuInit(0), "cuInit")) || (r = pick_device(c, &dev)) || (r = rt_ctx_open(c, dev)) ||
	    (r = boot_world(c, &id)) || (r = process_share(c)) || (r = rt_ctx_flags(c)))
		return r;
	if (c->share > 1)
		return rt_ctx_finish(c);
	nccl_config(c, &cfg);
	r = ncclCommInitRankConfig(&c->comm, c->nranks, id, c->rank, &cfg);
	if ((r = rt_nccl_settle_ms(c, (ncclResult_t)r, "ncclCommInitRankConfig", c->env.boot_timeout_ms)) ||
	    (r = split_levels(&c, 1)) || (r = nccl_warmup(&c, 1)))
		return r;
	return rt_ctx_finish(c);
}

/* ================= one process, several GPUs ================= */

static int
world_peer_access(syn_ctx **cs, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			int can = 0;
			CUresult e;
			if (i != j && cs[i]->dev == cs[j]->dev) { /* one GPU, one context: addresses are shared */
				cs[i]->reach[j] = 1;
				continue;
			}
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
		c->nflags_all = c->nflags + RT_BE_FLAGS * n + RT_BE_WORDS;
		if (!s || !(s->peer = calloc((size_t)n, sizeof *s->peer))) {
			free(s);
			return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
		}
		c->flags = s;
		if ((r = rt_sym_local(c, (size_t)c->nflags_all * 8, s)) ||
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
		if ((r = rt_nccl_settle_ms(cs[i], g, "ncclCommInitRankConfig (group of local GPUs)", cs[i]->env.boot_timeout_ms)))
			return r;
	return SYN_OK;
}

/* The GPUs of a one-process world: each visible.  A GPU named twice
 * holds two ranks (share_device). */
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
	}
	return SYN_OK;
}

/* rt_queue_check (rt_check.c) for a rank sharing its GPU.  The variable is
 * read as the process has it now (libsyncrt's default set): where CUDA was
 * initialised before libsyncrt with fewer queues, this cannot see it. */
static int
check_queues(syn_ctx *c)
{
	char err[RT_ERRLEN];
	int r = rt_queue_check(c->rank, c->share, (int)c->dev, getenv("CUDA_DEVICE_MAX_CONNECTIONS"), err, sizeof err);
	return r ? rt_seterr(c, r, "%s", err) : SYN_OK;
}

/* Ranks on one GPU: each gets its share of the SMs, and a persistent
 * kernel one CTA per SM of it, so every rank's kernels are resident at
 * once (a CTA never takes more than an SM, and R shares fit the device):
 * a rank's kernel spinning on a flag that another rank's kernel raises
 * would otherwise wait for SMs that kernel holds.  Returns 1 when some GPU
 * holds more than one rank. */
static int
share_device(syn_ctx **cs, int n)
{
	int shared = 0;
	for (int i = 0; i < n; i++) {
		syn_ctx *c = cs[i];
		c->share = 0;
		for (int j = 0; j < n; j++)
			c->share += cs[j]->dev == c->dev;
		if (c->share < 2)
			continue;
		shared = 1;
		take_share(c, c->share);
	}
	return shared;
}

int
syn_device_count(int *n)
{
	*n = 0;
	process_defaults(); /* its cuInit may be the process's first */
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(n) != CUDA_SUCCESS)
		return SYN_ECUDA;
	return SYN_OK;
}

int
syn_init_local(int n, syn_ctx **cs, const syn_opts *o)
{
	RtEnv env;
	char err[RT_ERRLEN];
	RtWorld *w;
	int r, have = 0, shared;
	for (int i = 0; i < n; i++)
		cs[i] = NULL;
	if (n < 1 || !(w = calloc(1, sizeof *w)) || !(w->ctx = calloc((size_t)n, sizeof *w->ctx)))
		return SYN_ENOMEM;
	process_defaults();
	r = rt_env_parse(&env, rt_env_process, NULL, err, sizeof err);
	env.rank = 0;
	env.world = n;
	env.local_world = 0; /* a launcher's node size counts processes, not this one's ranks */
	env.local_world_var = NULL;
	w->n = w->refs = n;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	for (int i = 0; i < n; i++) {
		if (!(cs[i] = w->ctx[i] = rt_ctx_new(&env, o)))
			return SYN_ENOMEM;
		cs[i]->rank = i;
		cs[i]->nranks = n;
		cs[i]->world = w;
	}
	w->timeout_ms = cs[0]->env.timeout_ms;
	if (r)
		return rt_seterr(cs[0], r, "%s", err);
	if ((r = check_gpus(cs[0], o)))
		return r;
	if ((r = rt_cu(cs[0], cuInit(0), "cuInit")) || (r = rt_cu(cs[0], cuDeviceGetCount(&have), "cuDeviceGetCount")))
		return r;
	if ((r = check_devices(cs[0], n, o ? o->devices : NULL, have)))
		return r;
	for (int i = 0; i < n; i++)
		if ((r = rt_ctx_open(cs[i], o && o->devices ? o->devices[i] : i)))
			return r;
	for (int i = 0; i < n; i++) {
		rt_fmt(cs[i]->node, sizeof cs[i]->node, "process");
		for (int p = 0; p < n; p++)
			rt_fmt(cs[i]->peer_node + (size_t)p * RT_NODELEN, RT_NODELEN, "process");
	}
	if ((r = world_peer_access(cs, n)) || (r = world_flags(cs, n)))
		return r;
	shared = share_device(cs, n);
	for (int i = 0; i < n && shared; i++)
		if ((r = check_queues(cs[i])))
			return r;
	if (!shared && ((r = world_comms(cs, n)) || (r = split_levels(cs, n)) || (r = nccl_warmup(cs, n))))
		return r;
	for (int i = 0; i < n; i++) {
		cuCtxSetCurrent(cs[i]->cu);
		if ((r = rt_ctx_finish(cs[i])))
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
