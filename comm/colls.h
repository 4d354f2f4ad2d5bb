/* comm/colls.h -- every collective, once (STYLE 4 and 17).  Each row makes
 * the IR op OP_NAME (ir/ops.h), the comm op CO_NAME and its names
 * (comm/comm.h: the profiles' and libsyncrt's "name", the launchers'
 * "CO_NAME"), the builtin name(...) typed by b_name (ir/rules.c) and the
 * cost model's ring volume (sched/cost.c).  docs/internals.md lists what a
 * new row still needs written by hand.  The order is the IR's and the
 * profiles' (a row added at the end changes no existing number).
 *
 * C(NAME, name, args, send, recv, red, chunks, phases, needs, volume)
 *   args     arguments of the builtin: all_reduce(x, op) takes 2
 *   send     one chunk's send side: 1 = P blocks of `count` elements
 *   recv     (consecutive blocks `stride` apart), 0 = `count` elements
 *   red      takes a reduction operator (sum, max, min)
 *   chunks   the search may cut it into several chunks
 *   phases   phases of one chunk across nodes (--topo NxG, N and G > 1)
 *   needs    what a backend must be able to do (CC_* of comm/comm.h;
 *            comm/backends.h says what each backend can)
 *   volume   bytes over the ring per byte of per-rank input at p ranks */
C(ALL_REDUCE,     all_reduce,     2, 0, 0, 1, 1, 3, CC_REDUCE, 2.0 * (p - 1) / p) /* recv[i] = red over ranks of send[i] */
C(REDUCE_SCATTER, reduce_scatter, 3, 1, 0, 1, 1, 1, CC_REDUCE, (double)(p - 1) / p) /* recv[i] = red over ranks of send block `rank` [i] */
C(ALL_GATHER,     all_gather,     2, 0, 1, 0, 1, 1, 0,         p - 1)               /* recv block q = send of rank q */
C(ALL_TO_ALL,     all_to_all,     3, 1, 1, 0, 1, 1, 0,         (double)(p - 1) / p) /* recv block q = send block `rank` of rank q */
C(SHIFT,          shift,          2, 0, 0, 0, 1, 1, 0,         1)                   /* recv = send of rank (rank - shift) mod P */
