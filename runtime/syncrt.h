/* runtime/syncrt.h -- libsyncrt, the GPU runtime that syncc's generated host
 * launchers call (DESIGN §6).  Plain C11; no CUDA or NCCL types appear here,
 * so a program that only calls generated launchers needs neither header.
 *
 * A context (syn_ctx) is one rank: one GPU, a low-priority compute stream
 * and a high-priority comm stream, an NCCL communicator, a flag array and an
 * error word.  Two ways to make them:
 *
 *   syn_init(&c, NULL)              one process per GPU (torchrun, mpirun,
 *                                   Slurm): rank and world from the
 *                                   environment, NCCL id over TCP from rank 0
 *   syn_init_local(n, cs, NULL)     one process driving n local GPUs; then
 *   syn_run_local(cs, n, fn, arg)   runs fn(cs[r], arg) on a thread per GPU
 *
 * A generated launcher `int syn_<op>(syn_ctx *, syn_tensor...)` is one call
 * per rank and never blocks on the GPU:
 *
 *   syn_check_args(c, "op", n, args, specs)   shapes and dtypes, by name
 *   syn_begin(c, "op", &e)                     epoch e of this call; the comm
 *                                              lane forks from the compute lane
 *   syn_launch(c, k, grid, block, smem, prm)   a kernel on the compute lane
 *   syn_wait(c, SYN_COMM, f, e, chunk)         the comm lane waits for flag f >= e
 *   syn_coll(c, SYN_NCCL, &chunk)              a chunk collective on the comm lane
 *   syn_copy2d(c, SYN_COMM, ...)               packing around it, where needed
 *   syn_raise(c, SYN_COMM, rank, f, e)         then raises flag f of `rank` to e
 *   syn_end(c)                                 the compute lane joins the comm lane
 *
 * and the caller learns how it went from syn_sync(c), which waits with the
 * watchdog (SYNC_TIMEOUT_MS), or from its own synchronisation of
 * syn_stream(c, SYN_COMPUTE) followed by syn_sync.  syn_stream_enter and
 * syn_stream_leave put a call on a stream of the caller's (PyTorch's).
 *
 * Flags are u64 epochs that only grow: a call's flags reach values derived
 * from its epoch (epoch x arrivals per call when several producers add 1 each),
 * so nothing is ever reset.  Kernels get flag addresses from syn_flag_addr,
 * poll them with ld.acquire.sys and raise them with red/st .release.sys; on a
 * timeout they record the error word (layout below) and leave, never trap.
 *
 * Every function returns SYN_OK (0) or a negative syn_status.  SYN_EARG and
 * SYN_EUNSUPPORTED mean nothing was enqueued and the context is still usable;
 * every other error marks the context failed: later calls return SYN_EFAILED
 * and syn_error() keeps the first message, which names the rank, the op, the
 * chunk and the flag involved. */
#ifndef SYNCRT_H
#define SYNCRT_H

#include <stddef.h>
#include <stdint.h>

/* In the source tree comm.h and its tables are comm/'s, shared with the
 * compiler; make install puts them beside this file and writes these
 * includes without the "../comm/". */
#include "../comm/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SYN_MAX_DIMS = 8 };

typedef enum syn_status {
	SYN_OK = 0,
	SYN_EARG = -1,         /* bad argument: nothing enqueued, context usable */
	SYN_EUNSUPPORTED = -2, /* the backend cannot do this: nothing enqueued */
	SYN_EENV = -3,         /* launcher environment malformed */
	SYN_EBOOT = -4,        /* TCP bootstrap failed */
	SYN_ECUDA = -5,        /* a CUDA driver call failed */
	SYN_ENCCL = -6,        /* an NCCL call failed or NCCL reported an async error */
	SYN_ETIMEOUT = -7,     /* nothing progressed for SYNC_TIMEOUT_MS */
	SYN_EKERNEL = -8,      /* a kernel's flag wait timed out (error word) */
	SYN_EPEER = -9,        /* another rank failed */
	SYN_ENOMEM = -10,
	SYN_EFAILED = -11, /* the context failed earlier; syn_error says why */
} syn_status;

typedef enum syn_lane { SYN_COMPUTE, SYN_COMM, SYN_LANES } syn_lane;
/* The comm backends: SYN_NCCL, SYN_CE, ... -- comm/backends.h's rows, with
 * the plan's BE_* numbers (comm/comm.h). */
typedef enum syn_backend {
#define B(NAME, ...) SYN_##NAME = BE_##NAME,
#include "../comm/backends.h"
#undef B
	SYN_BACKENDS = BE_COUNT
} syn_backend;

/* A tensor argument: this rank's local piece.  strides are in elements; all
 * zero means row-major contiguous. */
typedef struct syn_tensor {
	void *data; /* device pointer (unified address) */
	CommDType dtype;
	int rank;
	int64_t dims[SYN_MAX_DIMS];
	int64_t strides[SYN_MAX_DIMS];
} syn_tensor;

/* What the op's signature wants of one argument, written by the host code
 * generator.  dims[i] < 0 accepts any size. */
typedef struct syn_argspec {
	const char *name;   /* the parameter's name in the .syn signature */
	CommDType dtype;
	int rank;
	int64_t dims[SYN_MAX_DIMS]; /* the local shape on this rank */
	const char *global; /* e.g. "bf16[M, K] @split(1)", for messages; may be NULL */
	int contiguous;     /* 1: strides must be row-major */
} syn_argspec;

/* Options; a zero field means "from the environment, else the default". */
typedef struct syn_opts {
	int nccl_max_ctas; /* SYNC_NCCL_MAX_CTAS, 16: NCCL's SMs (maxCTAs, no clusters) */
	int free_sms;      /* SYNC_FREE_SMS, = nccl_max_ctas: SMs persistent kernels leave */
	int nflags;        /* SYNC_NFLAGS, 4096: flags per rank for generated code */
	int timeout_ms;    /* SYNC_TIMEOUT_MS, 10000 */
	int trace;         /* SYNC_TRACE, 0: 1 records a timeline (syn_trace_write) */
	const int *devices; /* syn_init_local: rank r on visible GPU devices[r] (NULL: GPU r) */
	/* G, the ranks of one node in a plan compiled for --topo NxG: with
	 * 1 < G < ranks the context also holds a node communicator (ranks
	 * r / G alike) and a cross-node one (ranks r % G alike), split from
	 * the world's at init, for the all_reduce phases of such plans.  0:
	 * under syn_init, LOCAL_WORLD_SIZE (torchrun) or
	 * OMPI_COMM_WORLD_LOCAL_SIZE (mpirun); else one node */
	int gpus_per_node;
} syn_opts;

/* A module as the code generator embeds it: the cubin is tried first, the
 * PTX is JIT-compiled otherwise (its log is in the error on failure). */
typedef struct syn_image {
	const char *name;  /* for messages */
	const char *ptx;   /* NUL-terminated, or NULL */
	const void *cubin; /* or NULL */
	size_t cubin_size;
} syn_image;

typedef struct syn_ctx syn_ctx;
typedef struct syn_kernel syn_kernel; /* owned by its context */

/* Kernel error word (host-mapped, u32[4]); the first timeout wins with
 * atom.cas on word 0 and then fills in the rest. */
enum {
	SYN_ERRW_CODE,  /* 0 = fine, 1 = flag wait timed out */
	SYN_ERRW_FLAG,  /* index of the flag it waited on, or SYN_ERRW_GROUP */
	SYN_ERRW_BLOCK, /* the block (ctaid.x; a group or cluster kernel's: its entry) */
	SYN_ERRW_SITE,  /* the code generator's number for the wait site */
	SYN_ERRW_WORDS
};
/* The flag word of a wait at the barrier of a group of CTAs (a first-dim
 * reduction split over CTAs that meet in global memory, codegen/rows.c),
 * which times out when they were not all resident at once or one left:
 * codegen.h's PTX_GROUP_FLAG. */
#define SYN_ERRW_GROUP 0xfffffffeu

/* Kernel trace record, 4 x u64, written at syn_trace_slots(c, n) + 32 * i:
 * { site << 32 | block, %globaltimer at start, at end, %smid }. */
enum { SYN_TRACE_RECORD_BYTES = 32 };

/* ---- contexts ----
 * One context can run the launchers of several compiled files: each op
 * keeps its state under its name and its file's kernels ("syncc:OP#FILE",
 * syn_state), so an op of one name compiled at two sizes keeps two.  But
 * each file numbers its ops' flags from 0: the ops of more than one rank
 * from two files would share flags, so give each such file a context of
 * its own (python/syncc makes one per loaded file; syncrun --tune
 * compiles each candidate with a flag range of its own).  At P = 1 no op
 * has flags. */
int syn_init(syn_ctx **c, const syn_opts *o);
int syn_init_local(int ndev, syn_ctx **cs, const syn_opts *o);
int syn_run_local(syn_ctx **cs, int n, int (*fn)(syn_ctx *c, void *arg), void *arg);
void syn_finalize(syn_ctx *c); /* after a failure it leaves stuck GPU work alone */
int syn_bind(syn_ctx *c);      /* make c's CUDA context current on this thread */
int syn_rank(const syn_ctx *c);
int syn_nranks(const syn_ctx *c);
int syn_device(const syn_ctx *c);
int syn_sms(const syn_ctx *c);
int syn_free_sms(const syn_ctx *c);
void *syn_stream(const syn_ctx *c, syn_lane lane); /* the CUstream */
const char *syn_error(const syn_ctx *c);
const char *syn_status_name(int status);
/* "NVIDIA H200, driver 12080, NCCL 22803" (rt_info.c): this rank's GPU and versions */
int syn_device_info(const syn_ctx *c, char *buf, size_t n);

/* ---- memory (collective: every rank calls with the same sizes) ---- */
int syn_alloc(syn_ctx *c, size_t bytes, void **p);
int syn_free(syn_ctx *c, void *p);
void *syn_peer_ptr(const syn_ctx *c, const void *p, int rank); /* NULL: not mapped */
int syn_barrier(syn_ctx *c);                                  /* host only; never inside an op */
/* Copies between host and this rank's device memory; they wait for the
 * copy, so they belong in set-up and checking, never inside an op. */
int syn_upload(syn_ctx *c, void *dst, const void *src, size_t bytes);
int syn_download(syn_ctx *c, void *dst, const void *src, size_t bytes);
/* A zeroed host block of `bytes` this context keeps for a generated
 * launcher, found again by `key`, 64-byte aligned (it holds syn_tmap);
 * returns 1 the first time, 0 after (or a negative syn_status).  Freed by
 * syn_finalize. */
int syn_state(syn_ctx *c, const char *key, size_t bytes, void **p);

/* ---- what kernels get as parameters ---- */
uint64_t syn_flag_addr(const syn_ctx *c, int rank, int flag); /* 0: not mapped here */
uint64_t syn_errw_addr(const syn_ctx *c);
uint64_t syn_timeout_ns(const syn_ctx *c);
uint64_t syn_trace_slots(syn_ctx *c, unsigned n); /* 0: tracing off or buffer full */

/* ---- kernels ---- */
int syn_kernel_get(syn_ctx *c, const syn_image *img, const char *entry, syn_kernel **k);
/* Blocks per SM (occupancy) x (SMs - free SMs): a persistent grid that leaves
 * the comm backend its SMs. */
int syn_grid_persistent(syn_ctx *c, syn_kernel *k, unsigned block, unsigned smem, unsigned *grid);
/* A kernel of clusters of `cluster` CTAs (.reqnctapercluster): *grid, as
 * syn_grid_persistent gave it, cut to the clusters that can be resident
 * at once on this context's share of the SMs (a cluster must fit in one
 * GPC, so fewer fit than CTAs per SM x SMs says) and to a multiple of
 * `cluster`, at least one cluster. */
int syn_grid_cluster(syn_ctx *c, syn_kernel *k, unsigned block, unsigned smem, unsigned cluster, unsigned *grid);

/* A TMA tensor map (a CUtensorMap) a generated launcher encodes from a
 * tensor's address and passes as a 128-byte kernel parameter; it keeps
 * each in the op's state (syn_state) with that address, and encodes it
 * again only when the address changes. */
#ifdef __cplusplus
#define SYN_ALIGNAS(n) alignas(n)
#else
#define SYN_ALIGNAS(n) _Alignas(n)
#endif
typedef struct syn_tmap {
	SYN_ALIGNAS(64) unsigned char bytes[128];
} syn_tmap;
/* A rank-3 tiled map of a 16-bit tensor at device address addr, with the
 * 128-byte swizzle and zeros out of bounds: dims innermost first, strides
 * in bytes between steps of dims 1 and 2, box = elements copied per dim.
 * SYN_EARG (naming the op and the operand) when the address or a stride is
 * not a multiple of 16 bytes, which TMA needs. */
int syn_tmap_encode(syn_ctx *c, syn_tmap *m, const char *what, uint64_t addr, CommDType dt,
                    const uint64_t dims[3], const uint64_t strides[2], const uint32_t box[3]);
/* The same map of the tensor at addr (inside a syn_alloc buffer) as it
 * lies in rank `rank`'s memory, mapped here: a routed matmul's store into
 * that rank's copy (codegen/codegen.h, routed stores).  SYN_EUNSUPPORTED,
 * naming the op and the rank, where that memory is not mapped here. */
int syn_tmap_encode_at(syn_ctx *c, syn_tmap *m, const char *what, int rank, uint64_t addr, CommDType dt,
                       const uint64_t dims[3], const uint64_t strides[2], const uint32_t box[3]);
/* A routed matmul's route table (codegen.h PtxRoute) into device memory
 * at table: route q = rank q's flags from `flag` (as mapped here), rows
 * shifted by (this rank - q) * rows: the rows of slot `rank` in q's block.
 * SYN_EUNSUPPORTED, naming what, where a rank's flags are not mapped. */
int syn_routes(syn_ctx *c, const char *what, void *table, int flag, int64_t rows);

/* ---- one operator call ---- */
/* The contract between generated launchers and this library: a launcher
 * passes the SYN_ABI of the syncrt.h it was compiled with at its op's
 * first call; it is raised whenever a launcher built against one would
 * misread the other (2: syn_state's 64-byte alignment, which the op
 * state's syn_tmap needs).  SYN_EUNSUPPORTED, naming the op and both
 * numbers, where they differ; a library older than the check has no such
 * symbol, and the launcher does not load. */
#define SYN_ABI 2
int syn_abi_check(syn_ctx *c, int launcher_abi, const char *op);
int syn_check_args(syn_ctx *c, const char *op, int n, const syn_tensor *t, const syn_argspec *s);
/* An op compiled for --topo NODESxGPUS whose all_reduce runs in phases
 * over the node and cross-node communicators: SYN_EARG, naming both, when
 * this context's G (syn_opts.gpus_per_node) is not GPUS, or when it holds
 * no such communicators (ranks sharing a GPU, which NCCL refuses). */
int syn_check_topo(syn_ctx *c, const char *op, int nodes, int gpus);
/* The flags the next op (its syn_begin or syn_begin_local) owns, of this
 * rank: [first, first + n).  Read under CUDA graph capture of the caller's
 * stream: a replay cannot advance the epoch the capture recorded, so the op
 * clears its flags first and each replay counts from zero (epoch 1); an op
 * once captured does the same on every later call. */
int syn_op_flags(syn_ctx *c, int first, int n);
/* After syn_begin / syn_begin_local: the epoch of this call of the op whose
 * call count is *calls -- the count, advanced, or 1 for a call that
 * cleared its flags at its start (above). */
uint64_t syn_epoch(syn_ctx *c, uint64_t *calls);
int syn_begin(syn_ctx *c, const char *op, uint64_t *epoch);
/* An op with no communication: as syn_begin, but its kernels go on the
 * caller's stream inside syn_stream_enter .. leave (else the compute lane),
 * with no events of its own but its end; syn_end ends it as any op. */
int syn_begin_local(syn_ctx *c, const char *op, uint64_t *epoch);
/* A kernel whose CTAs wait for each other (a group kernel, codegen.h
 * PtxKernel.group): launched cooperatively, so the driver runs every CTA
 * at once or refuses the launch (SYN_ECUDA, naming the kernel) -- never
 * CTAs waiting on others that cannot start. */
int syn_launch_group(syn_ctx *c, syn_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned smem,
                     void **params);
int syn_launch(syn_ctx *c, syn_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned smem,
               void **params);
int syn_wait(syn_ctx *c, syn_lane lane, int flag, uint64_t value, int chunk);
int syn_raise(syn_ctx *c, syn_lane lane, int rank, int flag, uint64_t value);
int syn_coll(syn_ctx *c, syn_backend be, const CommChunk *ch);
/* A 2-D copy within this rank's memory on a lane (counts in elements):
 * rows runs of width elements, spitch apart in src, dpitch apart in dst.
 * The packing around an all_to_all whose blocks are not contiguous;
 * `chunk` names the chunk it serves in errors and traces. */
int syn_copy2d(syn_ctx *c, syn_lane lane, CommDType dt, void *dst, size_t dpitch, const void *src, size_t spitch,
               size_t width, size_t rows, int chunk);
int syn_end(syn_ctx *c);
int syn_sync(syn_ctx *c);
/* Timing: an event recorded on the compute lane in slot 0..7 (after
 * syn_end, the whole op), and the milliseconds between two slots once both
 * have completed (call after syn_sync). */
int syn_mark(syn_ctx *c, int slot);
int syn_mark_ms(syn_ctx *c, int from, int to, float *ms);

/* ---- an op on the caller's stream (rt_stream.c) ---- */
/* For a caller that orders its own work on a CUstream of this context's
 * device (PyTorch's current stream; NULL is the legacy default stream):
 *   syn_stream_enter(c, s)   s is the caller's stream until leave
 *   syn_<op>(c, ...)         an op with no communication runs on s itself
 *                            (after s waits for earlier work on the lanes);
 *                            one with communication on the lanes, the compute
 *                            lane first waiting for what s has enqueued
 *   syn_stream_leave(c, s)   s waits for the compute lane if an op ran there
 * Both only enqueue, and neither waits for anything it need not.  Ops of
 * one context are meant for one caller stream at a time: a local op's
 * scratch buffers are the op's, reused by its next call in stream order.
 * The caller's stream may be capturing a CUDA graph (torch.cuda.graph):
 * then nothing is logged for the watchdog or the trace, each op clears its
 * flags at its start (syn_op_flags), an op's first call (which uploads its
 * tables) is refused, and so is the ce backend across ranks (its peer
 * handshakes count calls on the host). */
int syn_stream_enter(syn_ctx *c, void *stream);
int syn_stream_leave(syn_ctx *c, void *stream);

/* ---- timeline ---- */
/* Collective.  Chrome trace JSON: pid = rank, tid = lane (0 "compute",
 * 1 "comm"), names "blk N" / "kernel K" / "chunk N op" / "chunk N packing" /
 * "wait flag F",
 * ts in microseconds on rank 0's host clock, each GPU's %globaltimer aligned
 * by measured round trips.  Rank 0 writes the file. */
int syn_trace_write(syn_ctx *c, const char *path);
/* After syn_trace_write, on rank 0: the rank whose communication the trace
 * shows least hidden, its busy time (either lane), its comm lane's chunks
 * and copies, and the part of them with no compute beside them, in µs
 * (the file's otherData "exposed" has every rank's).  SYN_EARG elsewhere. */
int syn_trace_exposed(const syn_ctx *c, int *rank, double *busy_us, double *comm_us, double *exposed_us);

/* ---- tools: checking and calibration (syncrun), never inside an op ---- */
/* GPUs visible to this process (CUDA_VISIBLE_DEVICES applies); initialises CUDA. */
int syn_device_count(int *n);
/* libsyncrt's own kernels (rt_ptx.c), for syn_kernel_get: rt_cal_empty,
 * rt_cal_pingpong (calibration), rt_ref_matmul (the reference). */
const syn_image *syn_builtin_image(void);
/* C[M,N] = A[M,K] B[K,N] in f32 on this rank's GPU, one thread per output
 * element accumulating with fma in k order: an obviously-correct reference
 * for outputs too big for the CPU oracle.  Host arrays in and out; blocks. */
int syn_ref_matmul(syn_ctx *c, const float *a, const float *b, float *out, int64_t M, int64_t N, int64_t K);

/* ---- checks usable without a context (and without a GPU) ---- */
int syn_tensor_check(const char *op, int index, const syn_tensor *t, const syn_argspec *s, char *msg, size_t len);
int syn_abi_match(int launcher_abi, const char *op, char *msg, size_t len); /* syn_abi_check's test */

#ifdef __cplusplus
}
#endif
#endif
