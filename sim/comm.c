/* sim/comm.c -- the `sim` communication backend: P rank threads
 * that meet in shared memory.  A collective is a rendezvous: every rank
 * posts its chunk, all check that they agree (op, dtype, count: a mismatch
 * is the deadlock a real network would hang in), each computes its own
 * result from the others' send buffers, and a second rendezvous keeps the
 * buffers alive until everyone has read them.  Every wait has a deadline;
 * a deadline passed is an error naming the rank, the op and the chunk.
 * Buffers hold doubles (sim/sim.h: Tensor); reductions round to the
 * chunk's dtype after each addition, in rank order, as a ring does. */
#include "sim.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct SimComm {
	CommBackend b;
	SimWorld *w;
	char err[512];
} SimComm;

struct SimWorld {
	int nranks, timeout_ms;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t gen;        /* rendezvous generation */
	int arrived;
	const CommChunk **posted;
	bool failed;
	int first;           /* the rank whose failure came first (-1: none) */
	char why[512];
	SimComm *ranks;
};

static void
deadline(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void
fail_locked(SimWorld *w, int rank, const char *why)
{
	if (!w->failed) {
		w->failed = true;
		w->first = rank;
		snprintf(w->why, sizeof w->why, "%s", why);
	}
	pthread_cond_broadcast(&w->cv);
}

/* All P ranks arrive, or the deadline passes, or another rank failed. */
static bool
rendezvous(SimComm *c, const CommChunk *ch)
{
	SimWorld *w = c->w;
	struct timespec ts;
	uint64_t gen;
	bool ok = true;
	deadline(&ts, w->timeout_ms);
	pthread_mutex_lock(&w->mu);
	gen = w->gen;
	if (++w->arrived == w->nranks) {
		w->arrived = 0;
		w->gen++;
		pthread_cond_broadcast(&w->cv);
	}
	while (w->gen == gen && !w->failed) {
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT && w->gen == gen) {
			char why[512];
			int missing = 0;
			for (int r = 0; r < w->nranks; r++)
				missing += w->posted[r] == NULL;
			snprintf(why, sizeof why, "rank %d waited %d ms in %s of chunk %d: %d rank(s) never arrived (a deadlock)",
			         c->b.rank, w->timeout_ms, comm_colls[ch->op].name, ch->id, missing);
			fail_locked(w, c->b.rank, why);
		}
	}
	if (w->failed) {
		snprintf(c->err, sizeof c->err, "%s", w->why);
		ok = false;
	}
	pthread_mutex_unlock(&w->mu);
	return ok;
}

/* Every rank must be in the same call: the same chunk (by its plan's
 * number too -- two chunks of one collective often have the same size,
 * and matching them by size alone reported the mismatch chunks later, or
 * as wrong numbers), op, dtype, count, reduction and group. */
static bool
agree(SimComm *c, const CommChunk *ch)
{
	SimWorld *w = c->w;
	for (int r = 0; r < w->nranks; r++) {
		const CommChunk *o = w->posted[r];
		if (o->op != ch->op || o->id != ch->id || o->dt != ch->dt || o->count != ch->count || o->red != ch->red ||
		    o->shift != ch->shift || o->gsize != ch->gsize || o->gstride != ch->gstride) {
			snprintf(c->err, sizeof c->err,
			         "rank %d called %s of chunk %d (%zu elements) while rank %d called %s of chunk %d (%zu elements)",
			         r, comm_colls[o->op].name, o->id, o->count, c->b.rank, comm_colls[ch->op].name, ch->id, ch->count);
			pthread_mutex_lock(&w->mu);
			fail_locked(w, c->b.rank, c->err);
			pthread_mutex_unlock(&w->mu);
			return false;
		}
	}
	return true;
}

static double
combine(CommRed red, double a, double b)
{
	return red == CR_MAX ? (a > b ? a : b) : red == CR_MIN ? (a < b ? a : b) : a + b;
}

static const double *
block(const CommChunk *c, const void *base, size_t stride, int p)
{
	return (const double *)base + (size_t)p * (stride ? stride : c->count);
}

/* The world rank of member j of this rank's group (comm/comm.h). */
static int
member(const CommChunk *ch, int me, int j, int P)
{
	int gs = ch->gsize ? ch->gsize : P, st = ch->gsize ? ch->gstride : 1, i = (me / st) % gs;
	return me + (j - i) * st;
}

static void
compute(SimComm *c, const CommChunk *ch)
{
	SimWorld *w = c->w;
	int me = c->b.rank, P = w->nranks, G = ch->gsize ? ch->gsize : P;
	int mi = (me / (ch->gsize ? ch->gstride : 1)) % G; /* my place in the group */
	double *out = ch->recv;
	size_t n = ch->count;
	switch (ch->op) {
	case CO_ALL_REDUCE:
	case CO_REDUCE_SCATTER:
		for (size_t i = 0; i < n; i++) {
			int blk = ch->op == CO_ALL_REDUCE ? 0 : mi;
			const CommChunk *p0 = w->posted[member(ch, me, 0, P)];
			double acc = block(p0, p0->send, p0->send_stride, blk)[i];
			for (int j = 1; j < G; j++) {
				const CommChunk *pj = w->posted[member(ch, me, j, P)];
				acc = sim_round((DType)ch->dt, combine(ch->red, acc, block(pj, pj->send, pj->send_stride, blk)[i]));
			}
			out[i] = acc;
		}
		return;
	case CO_ALL_GATHER:
		for (int j = 0; j < G; j++)
			memcpy((double *)block(ch, out, ch->recv_stride, j), w->posted[member(ch, me, j, P)]->send, n * sizeof(double));
		return;
	case CO_ALL_TO_ALL:
		for (int j = 0; j < G; j++) {
			const CommChunk *pj = w->posted[member(ch, me, j, P)];
			memcpy((double *)block(ch, out, ch->recv_stride, j), block(pj, pj->send, pj->send_stride, mi), n * sizeof(double));
		}
		return;
	case CO_SHIFT:
		memcpy(out, w->posted[member(ch, me, ((mi - ch->shift) % G + G) % G, P)]->send, n * sizeof(double));
		return;
	case CO_COUNT: /* no case for another: a new collective fails to compile here */
		break;
	}
	die("chunk %d: no collective %d", ch->id, (int)ch->op);
}

static int
sim_collective(CommBackend *b, const CommChunk *ch, void *lane)
{
	SimComm *c = (SimComm *)b;
	SimWorld *w = c->w;
	(void)lane;
	w->posted[b->rank] = ch;
	if (!rendezvous(c, ch))
		return -1;
	if (!agree(c, ch)) {
		rendezvous(c, ch);
		return -1;
	}
	compute(c, ch);
	if (!rendezvous(c, ch)) /* nobody's buffers are reused before all have read */
		return -1;
	w->posted[b->rank] = NULL;
	return 0;
}

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Flags are C11-style atomics with the GPU protocol: acquire loads until
 * the epoch is reached, release stores, never reset. */
static int
sim_wait_flag(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id)
{
	SimComm *c = (SimComm *)b;
	double t0 = now_ms();
	(void)lane;
	while ((int64_t)(__atomic_load_n(flag, __ATOMIC_ACQUIRE) - epoch) < 0) {
		if (c->w->failed) {
			snprintf(c->err, sizeof c->err, "%s", c->w->why);
			return -1;
		}
		if (now_ms() - t0 > c->w->timeout_ms) {
			snprintf(c->err, sizeof c->err, "rank %d waited %d ms for flag %d to reach epoch %llu (it is %llu)",
			         b->rank, c->w->timeout_ms, flag_id, (unsigned long long)epoch,
			         (unsigned long long)__atomic_load_n(flag, __ATOMIC_ACQUIRE));
			pthread_mutex_lock(&c->w->mu);
			fail_locked(c->w, b->rank, c->err);
			pthread_mutex_unlock(&c->w->mu);
			return -1;
		}
		sched_yield();
	}
	return 0;
}

static int
sim_raise_flag(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id)
{
	(void)b;
	(void)lane;
	(void)flag_id;
	__atomic_store_n(flag, epoch, __ATOMIC_RELEASE);
	return 0;
}

static const char *
sim_error(CommBackend *b)
{
	return ((SimComm *)b)->err;
}

SimWorld *
sim_world_new(int nranks, int timeout_ms)
{
	SimWorld *w = xcalloc(1, sizeof *w);
	w->nranks = nranks;
	w->timeout_ms = timeout_ms;
	w->first = -1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->posted = xcalloc(nranks, sizeof *w->posted);
	w->ranks = xcalloc(nranks, sizeof *w->ranks);
	for (int r = 0; r < nranks; r++) {
		SimComm *c = &w->ranks[r];
		c->w = w;
		c->b = (CommBackend){"sim", sim_collective, sim_wait_flag, sim_raise_flag, sim_error, r, nranks};
	}
	return w;
}

void
sim_world_free(SimWorld *w)
{
	if (!w)
		return;
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->posted);
	free(w->ranks);
	free(w);
}

CommBackend *
sim_backend(SimWorld *w, int rank)
{
	return &w->ranks[rank].b;
}

/* A rank that failed on its own (a block it could not compute) ends
 * every other rank's waits at once, as an aborted communicator does:
 * otherwise each of them sat out the whole watchdog timeout (20 s). */
void
sim_abort(CommBackend *b, const char *why)
{
	SimComm *c = (SimComm *)b;
	pthread_mutex_lock(&c->w->mu);
	fail_locked(c->w, b->rank, why);
	pthread_mutex_unlock(&c->w->mu);
}

/* The rank whose failure came first, -1 if none failed. */
int
sim_world_first(SimWorld *w)
{
	pthread_mutex_lock(&w->mu);
	int r = w->failed ? w->first : -1;
	pthread_mutex_unlock(&w->mu);
	return r;
}

bool
sim_world_failed(SimWorld *w, char *why, size_t n)
{
	pthread_mutex_lock(&w->mu);
	bool f = w->failed;
	if (f)
		snprintf(why, n, "%s", w->why);
	pthread_mutex_unlock(&w->mu);
	return f;
}
