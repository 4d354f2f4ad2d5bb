/* runtime/rt_stream.c -- an op on the caller's stream.  A framework that
 * owns the inputs and the outputs (PyTorch, its caching allocator) orders
 * its work on a stream of its own.  An op with no communication
 * (syn_begin_local) runs its kernels on that stream itself: no events, no
 * second stream to wait for, which is most of a small op's call.  An op
 * with communication runs on the lanes: the compute lane first waits for
 * what the caller's stream has enqueued (the inputs are written), and the
 * stream waits for the compute lane at syn_stream_leave (after syn_end:
 * the whole op, the comm lane joined).  Both waits are made only when
 * needed, and only with events: nothing here waits on the host. */
#define RT_CUDA 1
#include "rt.h"

static int
ext_event(syn_ctx *c, CUevent *e)
{
	if (*e)
		return SYN_OK;
	return rt_cu(c, cuEventCreate(e, CU_EVENT_DISABLE_TIMING), "cuEventCreate (caller's stream)");
}

/* Whether the caller's stream is capturing a CUDA graph (under the lock:
 * the watchdog thread leaves the GPU alone meanwhile). */
static int
capture_state(syn_ctx *c)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	int r = rt_cu(c, cuStreamIsCapturing(c->ext, &st), "cuStreamIsCapturing (caller's stream)");
	if (r)
		return r;
	if (st == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
		return rt_seterr(c, SYN_EARG, "rank %d: the caller's stream is in an invalidated CUDA graph capture", c->rank);
	pthread_mutex_lock(&c->mu);
	c->capturing = st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
	pthread_mutex_unlock(&c->mu);
	return SYN_OK;
}

/* Under capture, and for every later call of an op once captured: the
 * op's own flags back to zero on `s`, before anything of the op that waits
 * for them (syn_begin: before the comm lane forks), and its epoch 1.  A
 * flag counts its raises (a band's tiles add one each), and the waits the
 * capture recorded are for its call count then: on a replay that started
 * from cleared flags they would never be met. */
static int
captured_before(const syn_ctx *c, int first)
{
	return c->cleared && first >= 0 && first < c->nflags && c->cleared[first];
}

int
rt_capture_flags(syn_ctx *c, CUstream s, const char *op)
{
	int first = c->next_flag, n = c->next_nflags;
	c->next_nflags = -1;
	c->op_cleared = 0;
	if (!c->capturing && !captured_before(c, first))
		return SYN_OK;
	if (n < 0)
		return rt_seterr(c, SYN_EUNSUPPORTED,
		                 "rank %d: op '%s' cannot be captured in a CUDA graph: its launcher does not say its flags "
		                 "(built by an older syncc: rebuild it)",
		                 c->rank, op);
	if (!n)
		return SYN_OK;
	if (!c->flags || first < 0 || first + n > c->nflags)
		return rt_seterr(c, SYN_EARG, "rank %d: op '%s': flags %d..%d are not this context's (it has %d)", c->rank, op,
		                 first, first + n - 1, c->nflags);
	if (!c->cleared && !(c->cleared = calloc((size_t)c->nflags, 1)))
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
	c->cleared[first] = 1;
	c->op_cleared = 1;
	return rt_cu(c, cuMemsetD32Async(c->flags->peer[c->rank] + (CUdeviceptr)first * 8, 0, (size_t)n * 2, s),
	             "cuMemsetD32Async (the op's flags, cleared at its start: it was captured in a CUDA graph)");
}

uint64_t
syn_epoch(syn_ctx *c, uint64_t *calls)
{
	if (c && c->op_cleared)
		return 1;
	return ++*calls;
}

int
syn_op_flags(syn_ctx *c, int first, int n)
{
	if (!c)
		return SYN_EARG;
	c->next_flag = first;
	c->next_nflags = n;
	return SYN_OK;
}

int
syn_stream_enter(syn_ctx *c, void *stream)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (c->in_op)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_stream_enter inside op '%s' (between syn_begin and syn_end)",
		                 c->rank, c->cur_op >= 0 ? c->ops[c->cur_op].name : "?");
	c->ext = (CUstream)stream;
	if ((r = capture_state(c)))
		return r;
	c->has_ext = 1;
	c->ext_waited = 0;
	c->ext_clean = 1;
	c->ctx_thread = pthread_self();
	c->ctx_held = 1;
	return SYN_OK;
}

/* Before an op on the lanes: the compute lane waits for the caller's
 * stream (once per enter: later ops on the lanes come after it anyway). */
int
rt_stream_fork(syn_ctx *c)
{
	int r;
	if (!c->has_ext || c->ext_waited)
		return SYN_OK;
	if ((r = ext_event(c, &c->ext_in)) ||
	    (r = rt_cu(c, cuEventRecord(c->ext_in, c->ext), "cuEventRecord (caller's stream)")) ||
	    (r = rt_cu(c, cuStreamWaitEvent(c->lane[SYN_COMPUTE], c->ext_in, 0), "cuStreamWaitEvent (compute lane)")))
		return r;
	c->ext_waited = 1;
	return SYN_OK;
}

/* Before an op on the caller's stream, or at leave: that stream waits for
 * whatever ran on the lanes since it was last behind them. */
int
rt_stream_join(syn_ctx *c)
{
	int r;
	if (!c->has_ext || c->ext_clean)
		return SYN_OK;
	if ((r = ext_event(c, &c->ext_out)) ||
	    (r = rt_cu(c, cuEventRecord(c->ext_out, c->lane[SYN_COMPUTE]), "cuEventRecord (compute lane)")) ||
	    (r = rt_cu(c, cuStreamWaitEvent(c->ext, c->ext_out, 0), "cuStreamWaitEvent (caller's stream)")))
		return r;
	c->ext_clean = 1;
	return SYN_OK;
}

int
syn_stream_leave(syn_ctx *c, void *stream)
{
	int r;
	if (c)
		c->ctx_held = 0; /* even when failed: its next enter checks again */
	if ((r = rt_entry(c)))
		return r;
	if (!c->has_ext || c->ext != (CUstream)stream)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_stream_leave(%p) without syn_stream_enter of that stream",
		                 c->rank, stream);
	r = rt_stream_join(c);
	c->has_ext = 0;
	pthread_mutex_lock(&c->mu);
	c->capturing = 0;
	pthread_mutex_unlock(&c->mu);
	return r;
}

void
rt_stream_free(syn_ctx *c)
{
	if (c->ext_in)
		cuEventDestroy(c->ext_in);
	if (c->ext_out)
		cuEventDestroy(c->ext_out);
	c->ext_in = c->ext_out = NULL;
}
