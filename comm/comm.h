/* comm/comm.h -- the one interface every communication backend
 * implements (DESIGN §6): a collective on one chunk, and the flags that
 * order the comm lane against the compute lane.  Backends: `sim` (CPU
 * threads, sim/comm.c), `nccl` and `ce` (runtime/, on GPUs).
 * Plain C, no CUDA types, so the simulator and the GPU runtime share it. */
#ifndef SYNCC_COMM_H
#define SYNCC_COMM_H

#include <stddef.h>
#include <stdint.h>

typedef enum CommOp {
	CO_ALL_REDUCE,     /* recv[i] = red over ranks of send[i]; count elements */
	CO_REDUCE_SCATTER, /* recv[i] = red over ranks of send block `rank` [i]  */
	CO_ALL_GATHER,     /* recv block p = send of rank p                       */
	CO_ALL_TO_ALL,     /* recv block p = send block `rank` of rank p          */
	CO_SHIFT,          /* recv = send of rank (rank - shift) mod P            */
} CommOp;

/* Same order as the compiler's DType (ir/ir.h). */
typedef enum CommDType { CD_F32, CD_F16, CD_BF16, CD_I32 } CommDType;
typedef enum CommRed { CR_SUM, CR_MAX, CR_MIN } CommRed;

/* One chunk.  `count` is elements per rank block.  A "block" of the
 * per-rank side of RS/AG/A2A is `count` contiguous elements; consecutive
 * blocks are `stride` elements apart (0 = count, packed as NCCL wants).
 *   ALL_REDUCE       send: count          recv: count
 *   REDUCE_SCATTER   send: P blocks       recv: count
 *   ALL_GATHER       send: count          recv: P blocks
 *   ALL_TO_ALL       send: P blocks       recv: P blocks
 *   SHIFT            send: count          recv: count */
typedef struct CommChunk {
	CommOp op;
	CommDType dt;
	CommRed red;
	const void *send;
	void *recv;
	size_t count;
	size_t send_stride, recv_stride; /* elements between blocks, 0 = count */
	int shift;                       /* CO_SHIFT: 0 < shift < P */
	int id;                          /* plan's chunk number, for errors and traces */
	/* A sub-group instead of the world (multi-node phases): the ranks
	 * rank + (j - i) * gstride for j < gsize, where i = (rank / gstride) %
	 * gsize is this rank's place in it.  gsize == 0: all ranks. */
	int gsize, gstride;
} CommChunk;

/* A backend instance belongs to one rank.  `lane` is the backend's
 * ordering context: a CUstream on GPUs, the rank's comm thread in `sim`.
 * Flags are 64-bit epochs that only grow (never reset): wait returns once
 * *flag >= epoch; raise stores epoch with release semantics.  Every call
 * returns 0 or a negative error whose text `error` gives, naming what
 * failed (rank, op, chunk, flag). */
typedef struct CommBackend CommBackend;
struct CommBackend {
	const char *name;
	int (*collective)(CommBackend *b, const CommChunk *c, void *lane);
	int (*wait_flag)(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id);
	int (*raise_flag)(CommBackend *b, void *lane, volatile uint64_t *flag, uint64_t epoch, int flag_id);
	const char *(*error)(CommBackend *b);
	int rank, nranks;
};

#endif
