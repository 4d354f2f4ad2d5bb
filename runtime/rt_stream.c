/* runtime/rt_stream.c -- an op on the caller's stream.  A framework that
 * owns the inputs and the outputs (PyTorch, its caching allocator) orders
 * its work on a stream of its own; the launcher enqueues on the context's
 * lanes.  So the compute lane first waits for what that stream has
 * enqueued (the inputs are written), and the stream then waits for the
 * compute lane (after syn_end: the whole op, the comm lane joined).  Only
 * events: nothing here waits on the host. */
#define RT_CUDA 1
#include "rt.h"

static int
ext_event(syn_ctx *c, CUevent *e)
{
	if (*e)
		return SYN_OK;
	return rt_cu(c, cuEventCreate(e, CU_EVENT_DISABLE_TIMING), "cuEventCreate (caller's stream)");
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
	if ((r = ext_event(c, &c->ext_in)) ||
	    (r = rt_cu(c, cuEventRecord(c->ext_in, (CUstream)stream), "cuEventRecord (caller's stream)")))
		return r;
	return rt_cu(c, cuStreamWaitEvent(c->lane[SYN_COMPUTE], c->ext_in, 0), "cuStreamWaitEvent (compute lane)");
}

int
syn_stream_leave(syn_ctx *c, void *stream)
{
	int r;
	if ((r = rt_entry(c)))
		return r;
	if ((r = ext_event(c, &c->ext_out)) ||
	    (r = rt_cu(c, cuEventRecord(c->ext_out, c->lane[SYN_COMPUTE]), "cuEventRecord (compute lane)")))
		return r;
	return rt_cu(c, cuStreamWaitEvent((CUstream)stream, c->ext_out, 0), "cuStreamWaitEvent (caller's stream)");
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
