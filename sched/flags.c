/* sched/flags.c -- the flag protocol.
 *
 * A block that has a successor on the other lane raises a flag when it
 * is done; the successor waits on it.  Flags hold 64-bit epochs: call k
 * of the operator raises epoch k and waits for epoch k, so flags are never
 * reset.  Dependencies inside a lane need no flag: a lane runs its blocks
 * in plan order (a stream, or a persistent kernel's block list).
 *
 * The static check proves no wait can depend on its own waiter:
 *  - the union of lane orders and cross-lane waits is acyclic;
 *  - inside a lane every dependency is on an earlier block: a persistent
 *    kernel hands out blocks in list order, so an earlier block always
 *    has a CTA that is not waiting on it (co-residency);
 *  - a compute kernel that spins on a flag leaves the SMs its comm
 *    backend needs, or the communication it waits for never runs.
 * Remote flags -- the p2p and ce backends' handshakes, in the peers'
 * memory -- make chunk c of rank r wait for the same chunk c on its peers.
 * Every rank runs this one plan (one lane order for all; the stagger is in
 * rank-relative regions, not in the order), so the union graph over the
 * ranks is P copies of this one joined only at equal chunks: it has a
 * cycle only if this one does, and the same two checks cover it.  The SMs
 * the p2p kernels need are its `commsms`, checked as any backend's.  The
 * simulator runs the handshakes themselves (sim/comm.c) and names a flag
 * that never comes.
 * A plan that fails is a compiler bug (an internal error). */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

void
sched_assign_flags(Plan *p)
{
	BlockGraph *g = p->g;
	p->nflags = 0;
	for (int i = 0; i < g->n; i++) {
		Blk *b = &g->b[i];
		b->flag = -1;
		for (int k = 0; k < b->nsucc; k++)
			if (g->b[b->succ[k]].lane != b->lane) {
				b->flag = p->nflags++;
				break;
			}
	}
}

static bool
fail(char *why, size_t n, const char *msg, const BlockGraph *g, int a, int b)
{
	char x[96], y[96];
	snprintf(why, n, "%s: %s and %s", msg, blk_name(g, a, x, sizeof x), blk_name(g, b, y, sizeof y));
	return false;
}

bool
sched_check_flags(const Plan *p, const Profile *prof, char *why, size_t n)
{
	const BlockGraph *g = p->g;
	int *deg = xcalloc((size_t)g->n + 1, sizeof *deg), *q = xmalloc((size_t)(g->n + 1) * sizeof *q), h = 0, t = 0;
	bool spins = false, ok = true;
	/* lane order: each block must appear exactly once */
	int seen = 0;
	for (int l = 0; l < NLANES; l++)
		seen += p->norder[l];
	if (seen != g->n) {
		snprintf(why, n, "the lanes hold %d blocks, the graph %d", seen, g->n);
		ok = false;
	}
	for (int i = 0; i < g->n && ok; i++) {
		const Blk *b = &g->b[i];
		for (int k = 0; k < b->npred && ok; k++) {
			const Blk *a = &g->b[b->pred[k]];
			if (a->lane == b->lane && a->pos >= b->pos)
				ok = fail(why, n, "a lane runs a block before one it depends on", g, b->pred[k], i);
			else if (a->lane != b->lane && a->flag < 0)
				ok = fail(why, n, "a cross-lane dependency has no flag", g, b->pred[k], i);
			if (a->lane == LANE_COMM && b->lane == LANE_COMPUTE)
				spins = true;
		}
	}
	/* the union graph: lane successors and waits */
	for (int i = 0; i < g->n && ok; i++) {
		const Blk *b = &g->b[i];
		deg[i] = b->npred + (b->pos > 0);
	}
	for (int i = 0; i < g->n && ok; i++)
		if (!deg[i])
			q[t++] = i;
	while (h < t && ok) {
		int i = q[h++];
		const Blk *b = &g->b[i];
		for (int k = 0; k < b->nsucc; k++)
			if (--deg[b->succ[k]] == 0)
				q[t++] = b->succ[k];
		if (b->pos + 1 < p->norder[b->lane]) {
			int nx = p->order[b->lane][b->pos + 1];
			if (--deg[nx] == 0)
				q[t++] = nx;
		}
	}
	if (ok && t != g->n) {
		snprintf(why, n, "waits and lane orders form a cycle through %d blocks", g->n - t);
		ok = false;
	}
	if (ok && spins) {
		for (int i = 0; i < g->n && ok; i++) {
			const Blk *b = &g->b[i];
			int need = prof->comm_sms[g->choice[b->node].backend];
			if (b->lane == LANE_COMM && p->compute_sms + need > prof->sms) {
				snprintf(why, n, "compute kernels spin on %d SMs and %s needs %d of %d", p->compute_sms,
				         comm_backends[g->choice[b->node].backend].name, need, prof->sms);
				ok = false;
			}
		}
	}
	free(deg);
	free(q);
	return ok;
}
