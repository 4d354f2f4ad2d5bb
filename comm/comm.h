/* comm/comm.h -- the one interface every communication backend
 * implements (DESIGN §6): a collective on one chunk, and the flags that
 * order the comm lane against the compute lane; the collectives and the
 * backends come from the tables beside it (comm/colls.h, comm/backends.h).
 * Backends: those of the table (libsyncrt, on GPUs) and `sim` (CPU threads,
 * sim/comm.c).  Plain C, no CUDA types, so the compiler, the simulator and
 * the GPU runtime share it; installed beside syncrt.h with its tables. */
#ifndef SYNCC_COMM_H
#define SYNCC_COMM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* What a backend can do beyond moving data inside a node: what a
 * collective needs (comm/colls.h), what a backend can (comm/backends.h). */
typedef enum CommCan {
	CC_REDUCE = 1, /* arithmetic on the data: a reduction */
	CC_NODES = 2,  /* reach ranks on other nodes */
	/* run inside a CUDA graph capture across ranks: its handshakes are in
	 * the stream, not counted on the host (a replay repeats the captured
	 * count, which a host-counted handshake would have moved on) */
	CC_CAPTURE = 4,
} CommCan;

/* The collectives, one per row of comm/colls.h (meanings there). */
typedef enum CommOp {
#define C(NAME, ...) CO_##NAME,
#include "colls.h"
#undef C
	CO_COUNT
} CommOp;

/* The backends a plan chooses from, one per row of comm/backends.h;
 * libsyncrt calls them SYN_NAME (runtime/syncrt.h), the same numbers. */
typedef enum CommBackendKind {
#define B(NAME, ...) BE_##NAME,
#include "backends.h"
#undef B
	BE_COUNT
} CommBackendKind;

/* The first row: plans start on it, and a collective another backend
 * cannot run falls back to it. */
#define BE_DEFAULT ((CommBackendKind)0)

typedef struct CommCollInfo {
	const char *name;  /* the language's, the profiles' and libsyncrt's */
	const char *cname; /* the enum constant, as launchers write it */
	int args;          /* arguments of the builtin */
	int send, recv;    /* 1: that side of a chunk is P blocks */
	int red;           /* takes a reduction operator */
	int chunks;        /* may be cut into chunks */
	int phases;        /* phases of a chunk across nodes */
	unsigned needs;    /* CommCan a backend must have */
} CommCollInfo;

static const CommCollInfo comm_colls[CO_COUNT] = {
#define C(NAME, name, args, send, recv, red, chunks, phases, needs, volume) \
	{#name, "CO_" #NAME, args, send, recv, red, chunks, phases, needs},
#include "colls.h"
#undef C
};

typedef struct CommBackendInfo {
	const char *name;  /* profiles', samples' and --comm-backend's */
	const char *cname; /* libsyncrt's constant, as launchers write it */
	unsigned can;      /* CommCan */
	int ctas;          /* runs CTAs of its own on the SMs kernels leave */
	int maxranks;      /* most ranks in one collective's group, 0: any */
	const char *smsnote; /* what a measured `commsms` of it is */
} CommBackendInfo;

static const CommBackendInfo comm_backends[BE_COUNT] = {
#define B(NAME, name, can, ctas, maxranks, smsnote) {#name, "SYN_" #NAME, can, ctas, maxranks, smsnote},
#include "backends.h"
#undef B
};

/* The collective or backend of that name; -1: none. */
static inline int
comm_coll_byname(const char *s)
{
	for (int i = 0; i < CO_COUNT; i++)
		if (strcmp(comm_colls[i].name, s) == 0)
			return i;
	return -1;
}

static inline int
comm_backend_byname(const char *s)
{
	for (int i = 0; i < BE_COUNT; i++)
		if (strcmp(comm_backends[i].name, s) == 0)
			return i;
	return -1;
}

/* "nccl or ce": the backends' names for messages, in buf. */
static inline const char *
comm_backend_list(char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < BE_COUNT && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%s", i == 0 ? "" : i == BE_COUNT - 1 ? " or " : ", ",
		                      comm_backends[i].name);
	return buf;
}

/* Does a group of `ranks` ranks fit backend `be`'s limit (maxranks)? */
static inline int
comm_backend_fits(CommBackendKind be, int ranks)
{
	return !comm_backends[be].maxranks || ranks <= comm_backends[be].maxranks;
}

/* Can backend `be` run collective `op` over a group of `ranks` ranks
 * (across nodes: `nodes` > 1)? */
static inline int
comm_backend_can(CommBackendKind be, CommOp op, int nodes, int ranks)
{
	unsigned need = comm_colls[op].needs | (nodes > 1 ? (unsigned)CC_NODES : 0u);
	return (comm_backends[be].can & need) == need && comm_backend_fits(be, ranks);
}

/* Same order as the compiler's DType (ir/ir.h). */
typedef enum CommDType { CD_F32, CD_F16, CD_BF16, CD_I32 } CommDType;
typedef enum CommRed { CR_SUM, CR_MAX, CR_MIN } CommRed;

/* One chunk.  `count` is elements per rank block.  A side of a chunk is
 * `count` elements, or P blocks of them (comm/colls.h's send and recv);
 * consecutive blocks are `stride` elements apart (0 = count, packed as
 * NCCL wants). */
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
	/* reduce_scatter on p2p, pushed: the ranks have already stored their
	 * blocks for this rank into its own send, block j at j * send_stride
	 * from send (their matmul's epilogue, raising the flags the step
	 * waited for), so the chunk only adds them (codegen/lower.c). */
	int push;
	/* The plan puts no compute beside this chunk (a serial plan, whose
	 * kernels took every SM): a backend running kernels of its own (p2p)
	 * may take every SM of the rank rather than the SMs kernels leave it
	 * (syn_free_sms).  A kernel of the plan the chunk does not wait for may
	 * still be running on the compute lane: they contend for SMs, and
	 * cannot deadlock, because no kernel of a serial plan waits for a
	 * collective and the stream-form p2p kernel never waits. */
	int alone;
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
