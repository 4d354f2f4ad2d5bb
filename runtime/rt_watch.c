/* runtime/rt_watch.c -- never a silent hang.  cuStreamWaitValue64 has no
 * timeout and an NCCL kernel waits for its peers forever, so a host thread
 * per context watches: other ranks' failures (world flag, bootstrap control
 * connections), the kernels' error word, NCCL's async errors, and progress
 * of the item log.  When nothing progressed for SYNC_TIMEOUT_MS it names
 * where each lane is stuck (op, chunk, flag and the value it holds), tells
 * the other ranks, aborts the communicator, and releases this rank's stuck
 * waits so the streams drain and the process can exit. */
#define RT_CUDA 1
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { ABORT_WAIT_MS = 2000, FLAG_READ_MS = 500 };

static const char *
op_name(const syn_ctx *c, int op)
{
	return op >= 0 && op < c->nops ? c->ops[op].name : "(outside an op)";
}

static uint64_t
op_epoch(const syn_ctx *c, int op)
{
	return op >= 0 && op < c->nops ? c->ops[op].epoch : 0;
}

/* The items of stream `s` not yet marked, from i0 on, in log order. */
static int
stream_pending(const syn_ctx *c, CUstream s, int i0, int *idx)
{
	int n = 0;
	for (int i = i0; i < c->nitems; i++)
		if (!c->items[i].complete && c->items[i].stream == s)
			idx[n++] = i;
	return n;
}

/* Mark finished items.  Events of one stream finish in order, so a
 * stream's finished items are a prefix of its pending ones, found by
 * bisection: a few queries a tick however many calls ran since the last.
 * (A query an item cost the caller ~2.4 us a call of small ops: the
 * watchdog holds the context's lock meanwhile; tests/gpu/host-probe,
 * bench/results/2026-12-04-host-probe-h200.md.) */
int
rt_advance(syn_ctx *c, uint64_t now)
{
	enum { SEEN = 16 };
	CUstream seen[SEEN];
	int *idx, first = c->nitems, n = c->nitems - c->first_pending, nseen = 0;
	if (n <= 0)
		return SYN_OK;
	if (!(idx = malloc(sizeof *idx * (size_t)n)))
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
	for (int i = c->first_pending; i < c->nitems; i++) {
		int k, lo = 0, hi, done = 0;
		if (c->items[i].complete)
			continue;
		for (int j = 0; j < nseen && !done; j++)
			done = seen[j] == c->items[i].stream;
		if (done) /* bisected already: its later items are pending */
			continue;
		if (nseen < SEEN)
			seen[nseen++] = c->items[i].stream;
		/* i is this stream's first pending item: bisect its list */
		hi = k = stream_pending(c, c->items[i].stream, i, idx);
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			CUresult q = cuEventQuery(c->items[idx[mid]].done);
			if (q == CUDA_SUCCESS) {
				lo = mid + 1;
			} else if (q == CUDA_ERROR_NOT_READY) {
				hi = mid;
			} else {
				free(idx);
				return rt_cu(c, q, "cuEventQuery (a kernel or copy failed)");
			}
		}
		for (int j = 0; j < lo; j++)
			c->items[idx[j]].complete = 1;
		if (lo)
			c->last_progress = now;
		if (lo < k && idx[lo] < first)
			first = idx[lo];
	}
	free(idx);
	c->first_pending = first;
	return SYN_OK;
}

/* Copy the flags back on the watchdog's own stream, with a deadline (the
 * GPU may be wedged). */
static int
read_flags(syn_ctx *c)
{
	uint64_t deadline = rt_now_ns() + (uint64_t)FLAG_READ_MS * 1000000u;
	if (!c->flags || !c->flag_host ||
	    cuMemcpyDtoHAsync(c->flag_host, c->flags->base, (size_t)c->nflags_all * 8, c->wd) != CUDA_SUCCESS)
		return 0;
	while (cuStreamQuery(c->wd) == CUDA_ERROR_NOT_READY)
		if (rt_now_ns() > deadline)
			return 0;
	return 1;
}

static size_t
flag_desc(const syn_ctx *c, int flag, char *out, size_t n)
{
	if (flag < c->nflags)
		return rt_fmt(out, n, "flag %d", flag);
	if ((uint32_t)flag == SYN_ERRW_GROUP)
		return rt_fmt(out, n, "its group's barrier (the CTAs that split a reduction were not all resident, or one "
		                      "of them left)");
	/* the backends' handshakes (runtime/rt_ce.c, rt_p2p.c): nranks each */
	static const char *const kind[] = {"ce arrival", "ce completion", "p2p arrival", "p2p completion"};
	int i = (flag - c->nflags) / c->nranks;
	_Static_assert(RT_NELEM(kind) == RT_BE_FLAGS, "a name for each backend handshake flag");
	if (i >= 0 && i < (int)RT_NELEM(kind))
		return rt_fmt(out, n, "flag %d (%s of rank %d)", flag, kind[i], (flag - c->nflags) % c->nranks);
	return rt_fmt(out, n, "flag %d", flag);
}

static size_t
describe(const syn_ctx *c, const RtItem *it, int flags_ok, char *out, size_t n)
{
	char f[96];
	size_t k = rt_fmt(out, n, "%s lane ", rt_lane_name(it->lane));
	switch (it->kind) {
	case IK_WAIT:
		flag_desc(c, it->flag, f, sizeof f);
		k += rt_fmt(out + k, n - k, "waits for %s >= %llu", f, (unsigned long long)it->value);
		if (flags_ok)
			k += rt_fmt(out + k, n - k, " (it holds %llu)", (unsigned long long)c->flag_host[it->flag]);
		if (it->chunk >= 0)
			k += rt_fmt(out + k, n - k, " before chunk %d", it->chunk);
		return k;
	case IK_COLL:
		return k + rt_fmt(out + k, n - k, "is inside chunk %d (%s): a peer never joined or its data never came",
		                  it->chunk, it->what);
	case IK_COPY:
		return k + rt_fmt(out + k, n - k, "is in the packing of chunk %d (%s), a local copy", it->chunk, it->what);
	case IK_LAUNCH:
		return k + rt_fmt(out + k, n - k, "is running kernel %s", it->what);
	case IK_RAISE:
		return k + rt_fmt(out + k, n - k, "is at: %s", it->what);
	case IK_BEGIN:
	case IK_END:
		return k + rt_fmt(out + k, n - k, "waits for the other lane");
	}
	return k;
}

/* Where is each lane stuck?  Each lane's first unfinished item; a lane
 * stuck on a flag wait first, since a flag nobody raised is the root and
 * the rest follows from it. */
static void
diagnose(syn_ctx *c, uint64_t now, char *out, size_t n)
{
	int flags_ok = read_flags(c), first[SYN_LANES], op = -1;
	size_t k;
	for (int l = 0; l < SYN_LANES; l++)
		first[l] = -1;
	for (int i = c->first_pending; i < c->nitems; i++)
		if (!c->items[i].complete && first[c->items[i].lane] < 0) {
			first[c->items[i].lane] = i;
			if (op < 0)
				op = c->items[i].op;
		}
	k = rt_fmt(out, n, "rank %d: op '%s' (epoch %llu): nothing progressed for %llu ms:", c->rank, op_name(c, op),
	           (unsigned long long)op_epoch(c, op), (unsigned long long)((now - c->last_progress) / 1000000u));
	for (int pass = 0; pass < 2; pass++)
		for (int l = 0; l < SYN_LANES && k < n; l++) {
			const RtItem *it = first[l] >= 0 ? &c->items[first[l]] : NULL;
			if (pass == 0 ? !it || it->kind != IK_WAIT : it && it->kind == IK_WAIT)
				continue;
			k += rt_fmt(out + k, n - k, " ");
			k += it ? describe(c, it, flags_ok, out + k, n - k)
			        : rt_fmt(out + k, n - k, "%s lane idle", rt_lane_name(l));
			k += rt_fmt(out + k, n - k, ";");
		}
	if (k > 0 && k < n && out[k - 1] == ';')
		out[k - 1] = 0;
}

static int
kernel_failure(syn_ctx *c)
{
	char msg[RT_ERRLEN], f[96];
	uint32_t flag = c->errw[SYN_ERRW_FLAG], block = c->errw[SYN_ERRW_BLOCK], site = c->errw[SYN_ERRW_SITE];
	int flags_ok = read_flags(c), op = c->cur_op;
	size_t k;
	flag_desc(c, (int)flag, f, sizeof f);
	k = rt_fmt(msg, sizeof msg, "rank %d: op '%s' (epoch %llu): a kernel's wait for %s timed out (block %u, wait site %u)",
	           c->rank, op_name(c, op), (unsigned long long)op_epoch(c, op), f, block, site);
	if (flags_ok && flag < (uint32_t)c->nflags_all)
		rt_fmt(msg + k, sizeof msg - k, "; the flag holds %llu", (unsigned long long)c->flag_host[flag]);
	return rt_fail(c, SYN_EKERNEL, msg);
}

/* Another rank failed: say so, and where this rank's lanes stand. */
static int
peer_failed(syn_ctx *c, const char *their, uint64_t now)
{
	char here[RT_ERRLEN], full[2 * RT_ERRLEN];
	here[0] = 0;
	if (c->first_pending < c->nitems)
		diagnose(c, now, here, sizeof here);
	rt_fmt(full, sizeof full, "rank %d: stopped because another rank failed: %s%s%s", c->rank, their,
	       here[0] ? "\n  here: " : "", here);
	return rt_fail(c, SYN_EPEER, full);
}

/* Own trouble first (kernels, NCCL, no progress), then the other ranks':
 * when everybody times out together, each names its own stuck flag. */
int
rt_watch_tick(syn_ctx *c)
{
	char msg[RT_ERRLEN], full[RT_ERRLEN + 128];
	uint64_t now = rt_now_ns();
	ncclComm_t comm[3] = {c->comm, c->node_comm, c->cross_comm};
	static const char *const level[3] = {"", " (node communicator)", " (cross-node communicator)"};
	ncclResult_t st;
	int r;
	if (c->failed)
		return c->failed;
	if (c->errw && c->errw[SYN_ERRW_CODE])
		return kernel_failure(c);
	for (int i = 0; i < 3; i++)
		if (comm[i] && ncclCommGetAsyncError(comm[i], &st) == ncclSuccess && st != ncclSuccess &&
		    st != ncclInProgress) {
			const char *last = ncclGetLastError(comm[i]);
			rt_fmt(full, sizeof full, "rank %d: op '%s': NCCL reported an asynchronous error%s: %s%s%s", c->rank,
			       op_name(c, c->cur_op), level[i], ncclGetErrorString(st), last && *last ? ": " : "",
			       last ? last : "");
			return rt_fail(c, SYN_ENCCL, full);
		}
	if ((r = rt_advance(c, now)))
		return r;
	if (c->first_pending < c->nitems && now - c->last_progress > (uint64_t)c->env.timeout_ms * 1000000u) {
		diagnose(c, now, msg, sizeof msg);
		return rt_fail(c, SYN_ETIMEOUT, msg);
	}
	if (c->world && atomic_load(&c->world->failed)) {
		pthread_mutex_lock(&c->world->mu);
		rt_fmt(msg, sizeof msg, "%s", c->world->fail_msg);
		pthread_mutex_unlock(&c->world->mu);
		return peer_failed(c, msg, now);
	}
	if (c->boot && rt_boot_poll(c->boot, msg, sizeof msg))
		return peer_failed(c, msg, now);
	return SYN_OK;
}

/* ================= failing ================= */

/* The communicators of a failed context: the levels' children first,
 * then the world they were split from. */
enum { ABORT_COMMS = 3 };
typedef struct AbortJob {
	ncclComm_t comm[ABORT_COMMS];
	atomic_int done, refs;
} AbortJob;

static void
abort_job_put(AbortJob *j)
{
	if (atomic_fetch_sub(&j->refs, 1) == 1)
		free(j);
}

static void *
abort_main(void *p)
{
	AbortJob *j = p;
	for (int i = 0; i < ABORT_COMMS; i++)
		if (j->comm[i])
			ncclCommAbort(j->comm[i]);
	atomic_store(&j->done, 1);
	abort_job_put(j);
	return NULL;
}

/* ncclCommAbort waits for NCCL's streams, which wait for ours: it gets a
 * thread of its own, and syn_finalize waits for it (with a deadline). */
static void
abort_comm(syn_ctx *c)
{
	AbortJob *j = calloc(1, sizeof *j);
	pthread_t t;
	ncclComm_t comm[ABORT_COMMS] = {c->node_comm, c->cross_comm, c->comm};
	c->node_comm = c->cross_comm = c->comm = NULL; /* nobody calls NCCL on them again */
	if (!comm[2] || !j) {
		free(j);
		return;
	}
	memcpy(j->comm, comm, sizeof comm);
	atomic_store(&j->refs, 2);
	if (pthread_create(&t, NULL, abort_main, j)) {
		free(j);
		return;
	}
	pthread_detach(t);
	c->abort_job = j;
}

void
rt_abort_wait(syn_ctx *c, int ms)
{
	AbortJob *j = c->abort_job;
	uint64_t deadline = rt_now_ns() + (uint64_t)ms * 1000000u;
	if (!j)
		return;
	while (!atomic_load(&j->done) && rt_now_ns() < deadline)
		usleep(1000);
	abort_job_put(j);
	c->abort_job = NULL;
}

/* Write every stuck wait's value into its flag, so the lanes run on (into
 * garbage: the op has failed) and drain. */
static void
release_waits(syn_ctx *c)
{
	if (!c->flags || !c->wd)
		return;
	for (int i = c->first_pending; i < c->nitems; i++) {
		RtItem *it = &c->items[i];
		if (it->kind == IK_WAIT && !it->complete && it->flag >= 0 && it->flag < c->nflags_all)
			cuStreamWriteValue64(c->wd, c->flags->base + (CUdeviceptr)it->flag * 8, it->value,
			                     CU_STREAM_WRITE_VALUE_DEFAULT);
	}
}

/* The world keeps every rank's own failure, one per line. */
static void
tell_others(syn_ctx *c, int status, const char *msg)
{
	if (c->world && status != SYN_EPEER) {
		RtWorld *w = c->world;
		size_t k;
		pthread_mutex_lock(&w->mu);
		k = strlen(w->fail_msg);
		rt_fmt(w->fail_msg + k, sizeof w->fail_msg - k, "%s%s", k ? "\n" : "", msg);
		atomic_store(&w->failed, 1);
		pthread_mutex_unlock(&w->mu);
	}
	if (c->boot && status != SYN_EPEER) /* a peer's failure has already been passed on */
		rt_boot_notify(c->boot, msg);
}

int
rt_fail(syn_ctx *c, int status, const char *msg)
{
	pthread_mutex_lock(&c->mu);
	if (c->failed) {
		pthread_mutex_unlock(&c->mu);
		return status;
	}
	c->failed = status;
	rt_fmt(c->err, sizeof c->err, "%s", msg);
	tell_others(c, status, msg);
	if (c->cu)
		cuCtxSetCurrent(c->cu);
	/* first let the lanes run on (NCCL's abort waits for them), then abort */
	release_waits(c);
	abort_comm(c);
	pthread_mutex_unlock(&c->mu);
	return status;
}

static void
append_note(syn_ctx *c, const char *note)
{
	size_t k = strlen(c->err);
	if (*note && !strstr(c->err, note))
		rt_fmt(c->err + k, sizeof c->err - k, "\n  meanwhile %s", note);
}

/* After a failure the other ranks' own reports arrive within moments: add
 * them, so every rank's message names the flag that started it. */
void
rt_notes(syn_ctx *c, int ms)
{
	uint64_t deadline = rt_now_ns() + (uint64_t)ms * 1000000u;
	char msg[RT_ERRLEN];
	while (c->boot && rt_now_ns() < deadline) {
		if (rt_boot_poll(c->boot, msg, sizeof msg)) {
			pthread_mutex_lock(&c->mu);
			append_note(c, msg);
			pthread_mutex_unlock(&c->mu);
		}
		usleep(5000);
	}
	if (c->world) {
		char all[RT_ERRLEN], *line, *save = NULL;
		if (!c->boot)
			usleep((useconds_t)ms * 1000u);
		pthread_mutex_lock(&c->world->mu);
		rt_fmt(all, sizeof all, "%s", c->world->fail_msg);
		pthread_mutex_unlock(&c->world->mu);
		pthread_mutex_lock(&c->mu);
		for (line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			append_note(c, line);
		pthread_mutex_unlock(&c->mu);
	}
}

int
rt_drain(syn_ctx *c, int ms)
{
	uint64_t deadline = rt_now_ns() + (uint64_t)ms * 1000000u;
	CUstream s[4] = {c->lane[SYN_COMPUTE], c->lane[SYN_COMM], c->ctl, c->wd};
	for (int i = 0; i < 4; i++)
		while (s[i] && cuStreamQuery(s[i]) == CUDA_ERROR_NOT_READY) {
			if (rt_now_ns() > deadline)
				return -1;
			usleep(200);
		}
	return 0;
}

/* ================= the thread ================= */

static void *
watch_main(void *p)
{
	syn_ctx *c = p;
	struct timespec ts = {c->env.watchdog_ms / 1000, (long)(c->env.watchdog_ms % 1000) * 1000000L};
	cuCtxSetCurrent(c->cu);
	while (!atomic_load(&c->wdog_stop)) {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&c->mu);
		if (!c->failed && !c->capturing) /* no queries while a graph is captured */
			rt_watch_tick(c);
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

int
rt_watch_start(syn_ctx *c)
{
	atomic_store(&c->wdog_stop, 0);
	if (pthread_create(&c->wdog, NULL, watch_main, c))
		return rt_seterr(c, SYN_ENOMEM, "rank %d: cannot start the watchdog thread", c->rank);
	c->wdog_on = 1;
	return SYN_OK;
}

void
rt_watch_stop(syn_ctx *c)
{
	if (!c->wdog_on)
		return;
	atomic_store(&c->wdog_stop, 1);
	pthread_join(c->wdog, NULL);
	c->wdog_on = 0;
}
