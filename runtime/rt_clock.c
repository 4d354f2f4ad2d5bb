/* runtime/rt_clock.c -- time on one axis.  Three clocks meet here:
 *   - CUDA events (the comm lane's chunks, kernels' ends): mapped onto the
 *     GPU's %globaltimer by an anchor per op, a stamp kernel between two
 *     events on the ctl stream;
 *   - %globaltimer (anchors, the kernels' per-block records): mapped onto
 *     the host's CLOCK_MONOTONIC by round trips through host-mapped memory
 *     (rt_clock_probe, the best of 24), measured at start-up and again when
 *     the trace is written, interpolated between (each GPU has its own
 *     offset: 90-200 us apart on the H200 pair);
 *   - each host's CLOCK_MONOTONIC: mapped onto rank 0's by TCP round trips
 *     through the bootstrap when the trace is written.
 * The error of each step is bounded by half its best round trip. */
#define RT_CUDA 1
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROBE_ROUNDS = 24, PROBE_ROUND_MS = 100, ANCHOR_SLOTS = RT_STAMPS - RT_PROBE_WORDS };

int
rt_clock_probe(syn_ctx *c, RtClock *out)
{
	volatile uint64_t *cell = c->stamp_host + ANCHOR_SLOTS;
	CUdeviceptr dcell = c->stamp_dev + (CUdeviceptr)ANCHOR_SLOTS * 8;
	unsigned rounds = PROBE_ROUNDS;
	uint64_t tmo = 1000000000ull, deadline;
	void *args[] = {&dcell, &rounds, &tmo};
	int64_t best = INT64_MAX;
	out->rtt = -1;
	out->gpu_minus_host = 0;
	out->at = rt_now_ns();
	for (int i = 0; i < RT_PROBE_WORDS; i++)
		cell[i] = 0;
	atomic_thread_fence(memory_order_seq_cst);
	if (cuLaunchKernel(c->k_probe, 1, 1, 1, 1, 1, 1, 0, c->ctl, args, NULL) != CUDA_SUCCESS)
		return SYN_OK; /* no clock: the trace says so, nothing else depends on it */
	for (unsigned i = 1; i <= rounds; i++) {
		uint64_t t0 = rt_now_ns(), t1, g;
		cell[0] = i;
		while (cell[1] < i && rt_now_ns() - t0 < (uint64_t)PROBE_ROUND_MS * 1000000u)
			;
		t1 = rt_now_ns();
		atomic_thread_fence(memory_order_acquire);
		if (cell[1] < i)
			break;
		g = cell[1 + i];
		if ((int64_t)(t1 - t0) < best) {
			best = (int64_t)(t1 - t0);
			out->gpu_minus_host = (int64_t)g - (int64_t)(t0 + (t1 - t0) / 2);
			out->at = t0;
		}
	}
	cell[0] = ~0ull; /* let it run out if we stopped early */
	deadline = rt_now_ns() + 2000000000ull;
	while (cuStreamQuery(c->ctl) == CUDA_ERROR_NOT_READY && rt_now_ns() < deadline)
		;
	if (best != INT64_MAX)
		out->rtt = best;
	return SYN_OK;
}

/* A stamp kernel between two events on the ctl stream; returns its index
 * or -1. */
int
rt_anchor(syn_ctx *c)
{
	RtAnchor *a;
	CUdeviceptr slot;
	void *args[1] = {&slot};
	if (c->nanchors == c->canchors) {
		int cap = c->canchors ? 2 * c->canchors : 16;
		RtAnchor *v = realloc(c->anchors, sizeof *v * (size_t)cap);
		if (!v) {
			rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
			return -1;
		}
		c->anchors = v;
		for (int i = c->canchors; i < cap; i++) {
			if (rt_cu(c, cuEventCreate(&v[i].before, CU_EVENT_DEFAULT), "cuEventCreate(anchor)") ||
			    rt_cu(c, cuEventCreate(&v[i].after, CU_EVENT_DEFAULT), "cuEventCreate(anchor)")) {
				c->canchors = i; /* the ones made so far are freed at finalize */
				return -1;
			}
		}
		c->canchors = cap;
	}
	a = &c->anchors[c->nanchors];
	a->slot = c->nanchors % ANCHOR_SLOTS;
	slot = c->stamp_dev + (CUdeviceptr)a->slot * 8;
	if (rt_cu(c, cuEventRecord(a->before, c->ctl), "cuEventRecord(anchor)") ||
	    rt_cu(c, cuLaunchKernel(c->k_stamp, 1, 1, 1, 1, 1, 1, 0, c->ctl, args, NULL), "cuLaunchKernel(rt_stamp)") ||
	    rt_cu(c, cuEventRecord(a->after, c->ctl), "cuEventRecord(anchor)"))
		return -1;
	return c->nanchors++;
}

/* %globaltimer of an event: the stamp sits about halfway between the
 * anchor's two events. */
static int
event_gpu_ns(const syn_ctx *c, const RtAnchor *a, CUevent e, int64_t *t)
{
	float ab = 0, ae = 0;
	if (cuEventElapsedTime(&ab, a->before, a->after) != CUDA_SUCCESS ||
	    cuEventElapsedTime(&ae, a->before, e) != CUDA_SUCCESS)
		return -1;
	*t = (int64_t)c->stamp_host[a->slot] + (int64_t)(((double)ae - (double)ab / 2) * 1e6);
	return 0;
}

static void
emit(syn_ctx *c, RtTraceEv *e)
{
	e->pid = c->rank;
	rt_trace_add(&c->tr, e);
}

static void
harvest_item(syn_ctx *c, const RtItem *it)
{
	const RtOp *op = it->op >= 0 && it->op < c->nops ? &c->ops[it->op] : NULL;
	RtTraceEv e;
	int64_t t, start;
	char opname[24];
	if (!op || op->anchor < 0 || event_gpu_ns(c, &c->anchors[op->anchor], it->done, &t))
		return;
	if (it->kind == IK_BEGIN) {
		for (int l = 0; l < SYN_LANES; l++)
			if (c->lane_last[l] < t)
				c->lane_last[l] = t;
		return;
	}
	start = c->lane_last[it->lane] ? c->lane_last[it->lane] : t;
	c->lane_last[it->lane] = t;
	if (it->kind == IK_RAISE || it->kind == IK_END)
		return;
	memset(&e, 0, sizeof e);
	e.tid = it->lane;
	e.ts_ns = start;
	e.dur_ns = t > start ? t - start : 0;
	switch (it->kind) {
	case IK_LAUNCH:
		rt_fmt(e.name, sizeof e.name, "kernel %s", it->what);
		rt_fmt(e.cat, sizeof e.cat, "kernel");
		rt_fmt(e.args, sizeof e.args, "{\"op\":\"%s\"}", op->name);
		break;
	case IK_WAIT:
		rt_fmt(e.name, sizeof e.name, "wait flag %d", it->flag);
		rt_fmt(e.cat, sizeof e.cat, "wait");
		rt_fmt(e.args, sizeof e.args, "{\"flag\":%d,\"value\":%llu,\"chunk\":%d}", it->flag,
		       (unsigned long long)it->value, it->chunk);
		break;
	case IK_COPY:
		rt_fmt(e.name, sizeof e.name, "chunk %d packing", it->chunk);
		rt_fmt(e.cat, sizeof e.cat, "copy");
		rt_fmt(e.args, sizeof e.args, "{\"what\":\"%s\",\"op\":\"%s\"}", it->what, op->name);
		break;
	default: /* IK_COLL: what = "backend op dtype xN" */
		sscanf(it->what, "%*s %23s", opname);
		rt_fmt(e.name, sizeof e.name, "chunk %d %s", it->chunk, opname);
		rt_fmt(e.cat, sizeof e.cat, "chunk");
		rt_fmt(e.args, sizeof e.args, "{\"what\":\"%s\",\"op\":\"%s\"}", it->what, op->name);
		break;
	}
	emit(c, &e);
}

/* The kernels' per-block records {site << 32 | block, t0, t1, smid}. */
static void
harvest_blocks(syn_ctx *c)
{
	size_t bytes = (size_t)c->tused * SYN_TRACE_RECORD_BYTES;
	uint64_t *rec;
	if (!c->tused || !(rec = malloc(bytes)))
		return;
	if (cuMemcpyDtoH(rec, c->tbuf, bytes) == CUDA_SUCCESS)
		for (unsigned i = 0; i < c->tused; i++) {
			uint64_t *r = rec + 4 * (size_t)i;
			RtTraceEv e;
			if (!r[1] || r[2] < r[1])
				continue; /* never written (the kernel left early) */
			memset(&e, 0, sizeof e);
			e.tid = SYN_COMPUTE;
			e.ts_ns = (int64_t)r[1];
			e.dur_ns = (int64_t)(r[2] - r[1]);
			rt_fmt(e.name, sizeof e.name, "blk %u", (unsigned)(r[0] & 0xffffffffu));
			rt_fmt(e.cat, sizeof e.cat, "block");
			rt_fmt(e.args, sizeof e.args, "{\"site\":%u,\"sm\":%llu}", (unsigned)(r[0] >> 32),
			       (unsigned long long)r[3]);
			emit(c, &e);
		}
	rt_zero(c, c->tbuf, bytes, "cuMemsetD8 (trace records)"); /* before the next op's kernels write records */
	free(rec);
	c->tused = 0;
}

/* The ops no item of the log names any more, once they are many
 * (rt_ops_compact): items are logged in order, each naming the op then
 * current, so the oldest op named is the first item's that names one.
 * A trace's anchors move with their ops (RtOp.anchor), and the items that
 * named the dropped ops became trace events before (rt_harvest). */
static void
drop_ops(syn_ctx *c)
{
	int first = c->nops, d;
	if (c->nops < RT_OPS_COMPACT)
		return;
	for (int i = 0; i < c->nitems; i++)
		if (c->items[i].op >= 0) {
			first = c->items[i].op;
			break;
		}
	if (!(d = rt_ops_compact(c->ops, &c->nops, &c->cur_op, first)))
		return;
	for (int i = 0; i < c->nitems; i++)
		if (c->items[i].op >= 0)
			c->items[i].op -= d;
}

/* Drop the finished prefix of the log, turning it into trace events.
 * While its oldest item runs, one query says so (a launcher far ahead of
 * the GPU calls this each op once the log passes LOG_COMPACT); else the
 * items are marked by rt_advance, a few queries a stream, where a query
 * an item was ~2 us of a small op's call. */
int
rt_harvest(syn_ctx *c)
{
	int k = 0, r;
	if (c->nitems && !c->items[0].complete) {
		if (cuEventQuery(c->items[0].done) != CUDA_SUCCESS)
			return SYN_OK; /* a failure is the watchdog's to name */
		if ((r = rt_advance(c, rt_now_ns())))
			return r;
	}
	while (k < c->nitems) {
		RtItem *it = &c->items[k];
		if (!it->complete)
			break;
		it->complete = 1;
		if (c->trace)
			harvest_item(c, it);
		c->evpool[c->nev++] = it->done;
		k++;
	}
	memmove(c->items, c->items + k, sizeof *c->items * (size_t)(c->nitems - k));
	c->nitems -= k;
	c->first_pending = c->first_pending > k ? c->first_pending - k : 0;
	if (c->nitems || c->in_op) {
		drop_ops(c);
		return SYN_OK;
	}
	if (c->trace)
		harvest_blocks(c);
	c->nops = c->nanchors = 0;
	c->cur_op = -1;
	return SYN_OK;
}

/* GPU ns -> this host's ns, the offset interpolated between the two probes. */
static int64_t
to_host(const syn_ctx *c, int64_t g)
{
	const RtClock *a = &c->clk0, *b = &c->clk1;
	if (a->rtt < 0)
		return b->rtt < 0 ? g : g - b->gpu_minus_host;
	if (b->rtt < 0 || b->at == a->at)
		return g - a->gpu_minus_host;
	{
		double h = (double)(g - a->gpu_minus_host), f = (h - (double)a->at) / (double)(b->at - a->at);
		return g - (int64_t)((double)a->gpu_minus_host + f * (double)(b->gpu_minus_host - a->gpu_minus_host));
	}
}

static void
clock_meta(syn_ctx *c, int64_t hoff, int64_t hrtt, RtTraceEv *e)
{
	memset(e, 0, sizeof *e);
	e->pid = c->rank;
	rt_fmt(e->name, sizeof e->name, "rank %d (GPU %d)", c->rank, c->device);
	rt_fmt(e->cat, sizeof e->cat, "meta");
	rt_fmt(e->args, sizeof e->args,
	       "{\"gpu_minus_host_us\":%.3f,\"probe_rtt_us\":%.3f,\"host_offset_us\":%.3f,\"host_rtt_us\":%.3f}",
	       (double)c->clk1.gpu_minus_host / 1e3, c->clk1.rtt < 0 ? -1.0 : (double)c->clk1.rtt / 1e3,
	       (double)hoff / 1e3, (double)hrtt / 1e3);
}

/* Rank 0 gets every rank's packed events. */
static int
gather(syn_ctx *c, const char *buf, size_t len, RtTrace *all)
{
	char err[RT_ERRLEN], **v;
	size_t *lens;
	int r = SYN_OK;
	if (c->nranks == 1)
		return rt_trace_unpack(all, buf, len);
	if (c->world) { /* one address space: rank 0 reads the others' buffers */
		struct {
			uint64_t p, n;
		} mine = {(uint64_t)(uintptr_t)buf, len}, *each = calloc((size_t)c->nranks, sizeof mine);
		if (!each)
			return SYN_ENOMEM;
		r = rt_allgather(c, &mine, sizeof mine, each);
		for (int p = 0; p < c->nranks && !r && !c->rank; p++)
			r = rt_trace_unpack(all, (const char *)(uintptr_t)each[p].p, each[p].n);
		free(each);
		return r;
	}
	v = calloc((size_t)c->nranks, sizeof *v);
	lens = calloc((size_t)c->nranks, sizeof *lens);
	if (!v || !lens)
		r = SYN_ENOMEM;
	else if ((r = rt_boot_gatherv(c->boot, buf, len, v, lens, err, sizeof err)))
		r = rt_seterr(c, r, "rank %d: %s", c->rank, err);
	for (int p = 0; p < c->nranks && v && !c->rank; p++) {
		if (!r && v[p])
			r = rt_trace_unpack(all, v[p], lens[p]);
		free(v[p]);
	}
	free(v);
	free(lens);
	return r;
}

/* The rank whose communication is least hidden (the largest share of its
 * busy time exposed), for syn_trace_exposed. */
static void
least_hidden(syn_ctx *c, const RtTrace *all)
{
	double worst = -1;
	c->texp_rank = -1;
	for (int p = 0; p < c->nranks; p++) {
		RtExposed e;
		double sh;
		if (rt_trace_exposed(all, p, &e))
			continue;
		sh = e.busy_us > 0 ? e.exposed_us / e.busy_us : 0;
		if (sh > worst) {
			worst = sh;
			c->texp = e;
			c->texp_rank = p;
		}
	}
}

int
syn_trace_exposed(const syn_ctx *c, int *rank, double *busy_us, double *comm_us, double *exposed_us)
{
	if (!c || c->rank || c->texp_rank < 0)
		return SYN_EARG;
	*rank = c->texp_rank;
	*busy_us = c->texp.busy_us;
	*comm_us = c->texp.comm_us;
	*exposed_us = c->texp.exposed_us;
	return SYN_OK;
}

int
syn_trace_write(syn_ctx *c, const char *path)
{
	RtTrace mine = {0}, all = {0};
	RtTraceEv meta;
	RtTraceMeta m = {0, NULL,
	                 "CUDA events -> %globaltimer by a stamp kernel per op; %globaltimer -> host CLOCK_MONOTONIC "
	                 "by 24 round trips through mapped memory (start and end, interpolated); hosts -> rank 0 "
	                 "by 16 TCP round trips; ts 0 = first event"};
	char err[RT_ERRLEN], *buf = NULL;
	int64_t hoff = 0, hrtt = 0;
	size_t len;
	int r, w = SYN_OK;
	if ((r = rt_entry(c)))
		return r;
	pthread_mutex_lock(&c->mu);
	rt_harvest(c);
	pthread_mutex_unlock(&c->mu);
	rt_clock_probe(c, &c->clk1);
	if (c->boot && (r = rt_boot_clock(c->boot, &hoff, &hrtt, err, sizeof err)))
		return rt_seterr(c, r, "rank %d: %s", c->rank, err);
	for (size_t i = 0; i < c->tr.n && !r; i++) {
		RtTraceEv e = c->tr.ev[i];
		e.ts_ns = to_host(c, e.ts_ns) + hoff;
		r = rt_trace_add(&mine, &e);
	}
	clock_meta(c, hoff, hrtt, &meta);
	if (!r)
		r = rt_trace_add(&mine, &meta);
	len = rt_trace_pack(&mine, &buf);
	if (!r && !buf)
		r = SYN_ENOMEM;
	if (!r)
		r = gather(c, buf, len, &all);
	m.nranks = c->nranks;
	if (!r && !c->rank && (w = rt_trace_write_json(&all, &m, path, err, sizeof err)))
		rt_seterr(c, w, "rank %d: %s", c->rank, err);
	if (!r && !c->rank && !w)
		least_hidden(c, &all);
	if (c->world && !r)
		r = syn_barrier(c); /* the others' buffers were read in place */
	free(buf);
	rt_trace_free(&mine);
	rt_trace_free(&all);
	return r ? r : w;
}
