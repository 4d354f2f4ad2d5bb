/* sim/comm.c -- the `sim` communication backend: P rank threads
 * that meet in shared memory.  A collective is a rendezvous: every rank
 * posts its chunk, all check that they agree (op, dtype, count: a mismatch
 * is the deadlock a real network would hang in), each computes its own
 * result from the others' send buffers, and a second rendezvous keeps the
 * buffers alive until everyone has read them.  Every wait has a deadline;
 * a deadline passed is an error naming the rank, the op and the chunk.
 * Buffers hold doubles (sim/sim.h: Tensor); reductions round to the
 * chunk's dtype after each addition, in rank order, as a ring does.
 *
 * The `p2p` backend's chunks (sim_p2p_of) run libsyncrt's protocol
 * instead (runtime/rt_p2p.c): no rendezvous, only remote flags -- each
 * rank publishes its send buffer (its symmetric memory), raises an arrival
 * flag in every reader's flag array, waits for the arrival flags of the
 * ranks it reads from, reads their buffers, raises a completion flag in
 * theirs and waits for its own readers' completions.  Flags hold the count
 * of p2p chunks so far, like the GPU's; a flag that never comes is a
 * timeout naming the rank, the chunk and whose flag it was. */
#include "sim.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct SimComm {
	CommBackend b;
	CommBackend p2p; /* the same rank's p2p backend */
	SimWorld *w;
	uint64_t p2p_seq; /* p2p chunks so far: the value of their flags */
	char err[512];
} SimComm;

struct SimWorld {
	int nranks, timeout_ms;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t gen;        /* rendezvous generation */
	int arrived;
	bool gen_ok;         /* the last generation completed before any failure */
	bool disagree;       /* a rank of this call found the others in another call */
	const CommChunk **posted;
	bool failed;
	int first;           /* the rank whose failure came first (-1: none) */
	char why[512];
	SimComm *ranks;
	/* p2p: each rank's published chunk (its symmetric send buffer), and
	 * the flags in each rank's memory: arrive[owner * P + from], done[...] */
	const CommChunk *volatile *pub;
	CommChunk *pubcopy;  /* what pub points to: the world's copy, which outlives the rank's lane */
	uint64_t *arrive, *done;
	int drop_rank; /* tests: this rank raises no arrival flag at its first p2p chunk (-1: none) */
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

/* All P ranks arrive, or the deadline passes, or (ENTRY only) another
 * rank failed.  The verdict is the generation's, the same on every rank:
 * a rank that leaves early on a failure leaves it incomplete, and the
 * last to arrive then sees the failure too -- so no rank goes on to read
 * the chunks of one that has left (its chunk lives on its lane's stack:
 * reading it after that lane ended was a crash, under --break comm-order).
 * FULL waits for every rank whatever failed meanwhile: it is only used
 * after an ENTRY that passed, when every rank is sure to come. */
enum { RDV_ENTRY, RDV_FULL };

static bool
rendezvous(SimComm *c, const CommChunk *ch, int kind)
{
	SimWorld *w = c->w;
	struct timespec ts;
	uint64_t gen;
	bool ok;
	deadline(&ts, w->timeout_ms);
	pthread_mutex_lock(&w->mu);
	gen = w->gen;
	if (++w->arrived == w->nranks) {
		w->arrived = 0;
		w->gen_ok = kind == RDV_FULL || !w->failed;
		if (kind == RDV_ENTRY)
			w->disagree = false;
		w->gen++;
		pthread_cond_broadcast(&w->cv);
	}
	while (w->gen == gen && (kind == RDV_FULL || !w->failed)) {
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT && w->gen == gen) {
			char why[512];
			int missing = 0;
			for (int r = 0; r < w->nranks; r++)
				missing += w->posted[r] == NULL;
			snprintf(why, sizeof why, "rank %d waited %d ms in %s of chunk %d: %d rank(s) never arrived (a deadlock)",
			         c->b.rank, w->timeout_ms, comm_colls[ch->op].name, ch->id, missing);
			fail_locked(w, c->b.rank, why);
			if (kind == RDV_FULL)
				break;
		}
	}
	ok = w->gen != gen && w->gen_ok;
	if (!ok)
		snprintf(c->err, sizeof c->err, "%s", w->failed ? w->why : "a rank left the collective");
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
compute(SimComm *c, const CommChunk *ch, const CommChunk *const *posted)
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
			const CommChunk *p0 = posted[member(ch, me, 0, P)];
			double acc = block(p0, p0->send, p0->send_stride, blk)[i];
			for (int j = 1; j < G; j++) {
				const CommChunk *pj = posted[member(ch, me, j, P)];
				acc = sim_round((DType)ch->dt, combine(ch->red, acc, block(pj, pj->send, pj->send_stride, blk)[i]));
			}
			out[i] = acc;
		}
		return;
	case CO_ALL_GATHER:
		for (int j = 0; j < G; j++)
			memcpy((double *)block(ch, out, ch->recv_stride, j), posted[member(ch, me, j, P)]->send, n * sizeof(double));
		return;
	case CO_ALL_TO_ALL:
		for (int j = 0; j < G; j++) {
			const CommChunk *pj = posted[member(ch, me, j, P)];
			memcpy((double *)block(ch, out, ch->recv_stride, j), block(pj, pj->send, pj->send_stride, mi), n * sizeof(double));
		}
		return;
	case CO_SHIFT:
		memcpy(out, posted[member(ch, me, ((mi - ch->shift) % G + G) % G, P)]->send, n * sizeof(double));
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
	if (!rendezvous(c, ch, RDV_ENTRY))
		return -1;
	if (!agree(c, ch)) { /* said after every rank has read the others' chunks */
		pthread_mutex_lock(&w->mu);
		w->disagree = true;
		fail_locked(w, c->b.rank, c->err);
		pthread_mutex_unlock(&w->mu);
	}
	rendezvous(c, ch, RDV_FULL);
	if (w->disagree) { /* stable until the next call's entry: every rank gives up */
		pthread_mutex_lock(&w->mu);
		snprintf(c->err, sizeof c->err, "%s", w->why);
		pthread_mutex_unlock(&w->mu);
		return -1;
	}
	compute(c, ch, w->posted);
	rendezvous(c, ch, RDV_FULL); /* nobody's buffers are reused before all have read */
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

/* ---- the p2p protocol ---- */

static SimComm *
p2p_comm(CommBackend *b)
{
	return (SimComm *)((char *)b - offsetof(SimComm, p2p));
}

/* The ranks whose send this rank reads (src), those that read its own. */
static int
p2p_partners(const CommChunk *ch, int me, int P, int *src, int *readers)
{
	int G = ch->gsize ? ch->gsize : P, mi = (me / (ch->gsize ? ch->gstride : 1)) % G, n = 0;
	if (ch->op == CO_SHIFT) {
		src[0] = member(ch, me, ((mi - ch->shift) % G + G) % G, P);
		readers[0] = member(ch, me, (mi + ch->shift) % G, P);
		return src[0] != me;
	}
	for (int j = 0; j < G; j++)
		if (member(ch, me, j, P) != me) {
			src[n] = readers[n] = member(ch, me, j, P);
			n++;
		}
	return n;
}

static bool
p2p_fail(SimComm *c, const char *msg)
{
	snprintf(c->err, sizeof c->err, "%s", msg);
	pthread_mutex_lock(&c->w->mu);
	fail_locked(c->w, c->b.rank, c->err);
	pthread_mutex_unlock(&c->w->mu);
	return false;
}

/* Wait until flag[owner * P + from] >= seq for every `from` in who. */
static bool
p2p_wait(SimComm *c, const CommChunk *ch, uint64_t *flags, const int *who, int n, uint64_t seq, const char *what)
{
	SimWorld *w = c->w;
	double t0 = now_ms();
	for (int i = 0; i < n; i++) {
		uint64_t *f = &flags[(size_t)c->b.rank * w->nranks + who[i]];
		while (__atomic_load_n(f, __ATOMIC_ACQUIRE) < seq) {
			char msg[512];
			if (w->failed) {
				snprintf(c->err, sizeof c->err, "%s", w->why);
				return false;
			}
			if (now_ms() - t0 > w->timeout_ms) {
				snprintf(msg, sizeof msg,
				         "rank %d waited %d ms in p2p %s of chunk %d for the %s flag of rank %d to reach %llu "
				         "(it is %llu): a remote flag never raised",
				         c->b.rank, w->timeout_ms, comm_colls[ch->op].name, ch->id, what, who[i],
				         (unsigned long long)seq, (unsigned long long)__atomic_load_n(f, __ATOMIC_ACQUIRE));
				return p2p_fail(c, msg);
			}
			sched_yield();
		}
	}
	return true;
}

static void
p2p_raise(SimComm *c, uint64_t *flags, const int *who, int n, uint64_t seq)
{
	for (int i = 0; i < n; i++)
		__atomic_store_n(&flags[(size_t)who[i] * c->w->nranks + c->b.rank], seq, __ATOMIC_RELEASE);
}

/* The chunks this rank reads must be the same call as its own. */
static bool
p2p_agree(SimComm *c, const CommChunk *ch, const int *src, int n)
{
	for (int i = 0; i < n; i++) {
		const CommChunk *o = c->w->pub[src[i]];
		if (o->op != ch->op || o->id != ch->id || o->dt != ch->dt || o->count != ch->count || o->red != ch->red ||
		    o->shift != ch->shift || o->gsize != ch->gsize || o->gstride != ch->gstride) {
			char msg[512];
			snprintf(msg, sizeof msg,
			         "rank %d published p2p %s of chunk %d (%zu elements) while rank %d read it for %s of chunk %d "
			         "(%zu elements)",
			         src[i], comm_colls[o->op].name, o->id, o->count, c->b.rank, comm_colls[ch->op].name, ch->id,
			         ch->count);
			return p2p_fail(c, msg);
		}
	}
	return true;
}

static int
p2p_collective(CommBackend *b, const CommChunk *ch, void *lane)
{
	SimComm *c = p2p_comm(b);
	SimWorld *w = c->w;
	int P = w->nranks, me = b->rank, *src = xcalloc((size_t)P, sizeof *src), *readers = xcalloc((size_t)P, sizeof *readers);
	int n = p2p_partners(ch, me, P, src, readers);
	uint64_t seq = ++c->p2p_seq;
	bool ok;
	(void)lane;
	/* the world's copy: a reader may still read it after this rank has
	 * failed and its lane has ended (the lane's own chunk is on its stack) */
	w->pubcopy[me] = *ch;
	__atomic_store_n(&w->pub[me], &w->pubcopy[me], __ATOMIC_RELEASE);
	if (!(w->drop_rank == me && seq == 1))
		p2p_raise(c, w->arrive, readers, n, seq);
	ok = p2p_wait(c, ch, w->arrive, src, n, seq, "arrival") && p2p_agree(c, ch, src, n);
	if (ok) {
		compute(c, ch, (const CommChunk *const *)w->pub);
		p2p_raise(c, w->done, src, n, seq);
		ok = p2p_wait(c, ch, w->done, readers, n, seq, "completion");
	}
	free(src);
	free(readers);
	return ok ? 0 : -1;
}

/* Lane flags are the rank's own, whichever backend a chunk is on. */
static int
p2p_wait_flag(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id)
{
	return sim_wait_flag(&p2p_comm(b)->b, lane, flag, epoch, flag_id);
}

static int
p2p_raise_flag(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id)
{
	return sim_raise_flag(&p2p_comm(b)->b, lane, flag, epoch, flag_id);
}

static const char *
p2p_error(CommBackend *b)
{
	return p2p_comm(b)->err;
}

CommBackend *
sim_p2p_of(CommBackend *b)
{
	return &((SimComm *)b)->p2p;
}

void
sim_world_drop_flag(SimWorld *w, int rank)
{
	w->drop_rank = rank;
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
	w->pub = xcalloc(nranks, sizeof *w->pub);
	w->pubcopy = xcalloc(nranks, sizeof *w->pubcopy);
	w->arrive = xcalloc((size_t)nranks * nranks, sizeof *w->arrive);
	w->done = xcalloc((size_t)nranks * nranks, sizeof *w->done);
	w->drop_rank = -1;
	for (int r = 0; r < nranks; r++) {
		SimComm *c = &w->ranks[r];
		c->w = w;
		c->b = (CommBackend){"sim", sim_collective, sim_wait_flag, sim_raise_flag, sim_error, r, nranks};
		c->p2p = (CommBackend){"p2p", p2p_collective, p2p_wait_flag, p2p_raise_flag, p2p_error, r, nranks};
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
	free((void *)w->pub);
	free(w->pubcopy);
	free(w->arrive);
	free(w->done);
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
