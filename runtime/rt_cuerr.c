/* runtime/rt_cuerr.c -- errors: a failed driver or NCCL call becomes the
 * context's error, with the rank and what was being done; a non-blocking
 * NCCL call is waited for with a deadline, listening for other ranks
 * failing meanwhile (settle). */
#define RT_CUDA 1
#include "rt.h"

#include <sched.h>
#include <unistd.h>

/* rt_nccl_settle polls without sleeping for SETTLE_SPIN_NS: a usleep(50) per
 * ncclInProgress (~110 us with timer slack) was the ~120 us floor of every
 * chunk's enqueue that --calibrate measured on 2x H200 (2026-11-30), and the
 * GPU's comm lane waited for it between short chunks. */
enum { SETTLE_SLEEP_US = 50 };
#define SETTLE_SPIN_NS 2000000ull

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
 * deadline, and listens for other ranks failing meanwhile.  *comm is read
 * on every round: a failure on the way aborts and clears it. */
int
rt_nccl_settle_on(syn_ctx *c, ncclComm_t *comm, ncclResult_t r, const char *what, int ms)
{
	uint64_t now = rt_now_ns(), deadline = now + (uint64_t)ms * 1000000u, spin = now + SETTLE_SPIN_NS;
	ncclResult_t st = r;
	if (r != ncclSuccess && r != ncclInProgress)
		return rt_nccl(c, r, what);
	while (r == ncclInProgress && *comm) {
		char msg[RT_ERRLEN];
		ncclResult_t q = ncclCommGetAsyncError(*comm, &st);
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
rt_nccl_settle_ms(syn_ctx *c, ncclResult_t r, const char *what, int ms)
{
	return rt_nccl_settle_on(c, &c->comm, r, what, ms);
}

int
rt_nccl_settle(syn_ctx *c, ncclResult_t r, const char *what)
{
	return rt_nccl_settle_ms(c, r, what, c->env.timeout_ms);
}
