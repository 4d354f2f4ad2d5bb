/* runtime/rt.h -- what each runtime/rt_*.c exports to the others.  The first
 * half needs no CUDA (environment, bootstrap, errors, traces, checks, plans)
 * and is what the CPU tests link; the second half is compiled where cuda.h
 * and nccl.h exist (files that define RT_CUDA before including this). */
#ifndef SYNCRT_RT_H
#define SYNCRT_RT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "syncrt.h"
#include "rt_p2p.h"

#define RT_NELEM(a) (sizeof(a) / sizeof((a)[0]))
#if defined(__GNUC__)
#define RT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RT_PRINTF(f, a)
#endif

enum {
	RT_ERRLEN = 2048,      /* an error message */
	RT_NODELEN = 160,      /* a node identity */
	RT_MAX_RANKS = 4096,   /* what the bootstrap accepts */
	RT_DEFAULT_PORT = 29500,
	RT_STAMPS = 4096,      /* host-mapped u64 words: anchors, then the clock probe */
	RT_PROBE_WORDS = 64,
	RT_BE_FLAGS = 4,       /* handshake flags per rank: ce's arrive and done, p2p's */
	RT_BE_WORDS = 1,       /* and after them: the p2p kernels' block counter */
};

/* ---- rt_err.c ---- */
size_t rt_fmt(char *dst, size_t n, const char *fmt, ...) RT_PRINTF(3, 4);
size_t rt_vfmt(char *dst, size_t n, const char *fmt, va_list ap);
const char *rt_dtype_name(CommDType dt);
size_t rt_dtype_size(CommDType dt);
const char *rt_op_name(CommOp op);
const char *rt_red_name(CommRed r);
const char *rt_lane_name(int lane);
const char *rt_backend_name(int be);
uint64_t rt_now_ns(void); /* CLOCK_MONOTONIC */

/* ---- rt_env.c: who am I (torchrun, mpirun, Slurm) and the SYNC_* knobs ---- */
typedef enum RtLauncher { RL_NONE, RL_TORCHRUN, RL_MPI, RL_SLURM } RtLauncher;
typedef struct RtEnv {
	RtLauncher launcher;
	int rank, world, local_rank; /* local_rank -1: not given */
	char master_addr[256];
	int master_port; /* the bootstrap's: SYNC_BOOT_PORT, else MASTER_PORT */
	int boot_port;   /* SYNC_BOOT_PORT, 0: not given */
	int timeout_ms, boot_timeout_ms;
	int nccl_max_ctas, free_sms, nflags, trace, watchdog_ms;
	int p2p_kflags; /* the p2p kernels do their handshakes themselves (runtime/rt_p2p.h) */
	int sym_vmm; /* symmetric memory by cuMemCreate + cuMemMap: 0 never, 1 in one process, 2 between processes too */
	char hostid[RT_NODELEN]; /* NCCL_HOSTID, "" if unset */
	int local_world; /* ranks on this node (LOCAL_WORLD_SIZE, ...), 0: not given */
	const char *local_world_var; /* the variable it came from, NULL: none */
} RtEnv;
typedef const char *(*RtGetenv)(const char *name, void *ud);
int rt_env_parse(RtEnv *e, RtGetenv get, void *ud, char *err, size_t n);
const char *rt_env_launcher_name(RtLauncher l);
const char *rt_env_process(const char *name, void *ud); /* getenv as an RtGetenv */
void rt_node_id(const char *hostid, char *out, size_t n);

/* ---- rt_boot.c: rank 0's TCP star (NCCL id out, small exchanges, abort notices) ---- */
typedef struct RtBoot RtBoot;
int rt_boot_open(RtBoot **b, const char *addr, int port, int rank, int world, int timeout_ms, void *blob,
                 size_t bloblen, char *err, size_t n);
void rt_boot_close(RtBoot *b);
int rt_boot_allgather(RtBoot *b, const void *mine, size_t len, void *all, char *err, size_t n);
int rt_boot_gatherv(RtBoot *b, const void *mine, size_t len, char **all, size_t *lens, char *err, size_t n);
int rt_boot_clock(RtBoot *b, int64_t *offset_ns, int64_t *rtt_ns, char *err, size_t n);
void rt_boot_notify(RtBoot *b, const char *msg);
int rt_boot_poll(RtBoot *b, char *msg, size_t n); /* 1: a rank failed, msg says which */

/* ---- rt_trace.c: the timeline in host memory and its JSON ---- */
typedef struct RtTraceEv {
	int pid, tid;
	int64_t ts_ns, dur_ns;
	char name[48];
	char cat[16];
	char args[192]; /* a JSON object or "" (dropped if it did not fit) */
} RtTraceEv;
typedef struct RtTrace {
	RtTraceEv *ev;
	size_t n, cap;
} RtTrace;
int rt_trace_add(RtTrace *t, const RtTraceEv *e);
void rt_trace_free(RtTrace *t);
size_t rt_trace_pack(const RtTrace *t, char **out);
int rt_trace_unpack(RtTrace *t, const char *buf, size_t len);
typedef struct RtTraceMeta {
	int nranks;
	const char **rank_label; /* per rank, e.g. "rank 1 (GPU 1)" */
	const char *clock;       /* how the clocks were aligned */
} RtTraceMeta;
int rt_trace_write_json(const RtTrace *t, const RtTraceMeta *m, const char *path, char *err, size_t n);
/* One rank's exposed communication in a measured trace: busy_us, the time
 * either lane is busy (the calls, without the gaps between them); comm_us,
 * the comm lane's chunks and packing copies; exposed_us, the part of those
 * with no compute beside them (the kernels' block records where the trace
 * has them, else the kernels, whose spinning then counts as compute). */
typedef struct RtExposed {
	double busy_us, comm_us, exposed_us;
} RtExposed;
int rt_trace_exposed(const RtTrace *t, int pid, RtExposed *e);

/* ---- rt_check.c: arguments and chunks ---- */
/* A chunk against the CommChunk contract; `gpus`: the G of the node (G,
 * 1) and cross-node (N, G) communicators the context holds, the only
 * sub-groups it runs (0: none held, so no sub-group at all). */
int rt_chunk_check(const CommChunk *ch, int rank, int nranks, int gpus, char *err, size_t n);
/* Whether [p, p + bytes) lies in the buffer [base, base + size), half-open:
 * the address just past a buffer is not in it, since the next buffer may
 * start there (a lookup of 0 bytes at a buffer's start found the buffer
 * before it: the epilogue push stored into the wrong rank buffer when two
 * reservations were adjacent, 2026-12-06).  A buffer of 0 bytes holds
 * its own address, for 0 bytes. */
int rt_range_in(uint64_t base, size_t size, uint64_t p, size_t bytes);
/* Whether `share` ranks of one process on GPU `dev` have a hardware queue
 * for each of their streams under CUDA_DEVICE_MAX_CONNECTIONS = conns
 * (NULL or empty: the driver's 8); SYN_EUNSUPPORTED and why in err when
 * not (rt_world.c check_queues). */
int rt_queue_check(int rank, int share, int dev, const char *conns, char *err, size_t n);

/* An operator call in the context's log: items name theirs by index. */
typedef struct RtOp {
	char name[32];
	uint64_t epoch;
	int anchor; /* index into ctx->anchors, -1 without tracing */
} RtOp;
enum { RT_OPS_COMPACT = 4096 }; /* ops logged before the log's oldest is looked at */
/* The log's ops before `first` (the oldest any logged item or the current
 * op names) are dropped and the rest renumbered, *nops and *cur_op with
 * them, once there are RT_OPS_COMPACT or more and at least half can go;
 * returns the shift every logged item's op index then takes (0: nothing
 * dropped).  The log is emptied only when every item has finished, which
 * a launcher that keeps ahead of the GPU never sees: the ops grew by one a
 * call for as long as the process ran (rt_clock.c rt_harvest). */
int rt_ops_compact(RtOp *ops, int *nops, int *cur_op, int first);
/* What a context knows of its levels, for syn_check_topo. */
typedef struct RtLevels {
	int nranks;
	int gpus;         /* G: syn_opts.gpus_per_node, LOCAL_WORLD_SIZE, ...; 0: not given */
	const char *from; /* where G came from, for messages ("LOCAL_WORLD_SIZE"); NULL: not given */
	int split;        /* 1: the node and cross-node communicators exist */
	int share;        /* ranks on this rank's GPU (> 1: no NCCL communicator at all) */
	int device;
} RtLevels;
int rt_topo_check(const RtLevels *l, const char *op, int nodes, int gpus, char *err, size_t n);
/* 1 where a world of `nranks` in nodes of `gpus` is split in two levels:
 * 1 < gpus < nranks, gpus dividing nranks */
int rt_levels_split(int nranks, int gpus);
/* syn_copy2d's arguments (counts in elements) */
typedef struct RtCopy2d {
	CommDType dt;
	void *dst;
	size_t dpitch;
	const void *src;
	size_t spitch, width, rows;
	int chunk;
} RtCopy2d;
int rt_copy2d_check(const RtCopy2d *k, int rank, char *err, size_t n);

/* ---- rt_plan.c: what each backend does for one chunk ---- */
typedef enum RtXferKind {
	XK_ALL_REDUCE,     /* ncclAllReduce(src, dst, count) */
	XK_REDUCE_SCATTER, /* ncclReduceScatter(src, dst, count) */
	XK_ALL_GATHER,     /* ncclAllGather(src, dst, count) */
	XK_REDUCE,         /* ncclReduce(src, dst, count, root = peer) */
	XK_SEND,           /* ncclSend(src, count, peer) */
	XK_RECV,           /* ncclRecv(dst, count, peer) */
	XK_COPY,           /* dst (on rank peer, as a local address) = src, count */
} RtXferKind;
typedef struct RtXfer {
	RtXferKind kind;
	int peer;
	const char *src;
	char *dst;
	size_t count;
} RtXfer;
int rt_plan_nccl(const CommChunk *ch, int rank, int nranks, RtXfer *x, int cap);
int rt_plan_ce(const CommChunk *ch, int rank, int nranks, RtXfer *x, int cap);
int rt_plan_cap(int nranks); /* entries a plan may need */
/* This rank's place in its chunk's group (comm/comm.h), which is its rank
 * in that group's communicator: the world, or a level split from it with
 * rt_level_color and key = world rank (node: cross 0, cross-node: 1) */
int rt_group_rank(const CommChunk *ch, int rank);
int rt_level_color(int rank, int gpus, int cross);
/* p2p: one kernel's pieces, pulled from the peers' send buffers (the same
 * offsets of the same symmetric allocation there), and the handshakes'
 * partners: the ranks whose send this rank reads, and those that read its */
typedef struct RtP2pPlan {
	int reduce;                        /* 1: recv + dst[0] = red over n sources */
	int n;                             /* sources (reduce) or pieces (copy) */
	int src_rank[RT_P2P_MAXPEERS];
	size_t src_off[RT_P2P_MAXPEERS];   /* bytes into that rank's send */
	size_t dst_off[RT_P2P_MAXPEERS];   /* bytes into this rank's recv */
	int npartners;                     /* ranks other than this one in each list */
	int reads[RT_P2P_MAXPEERS], readers[RT_P2P_MAXPEERS];
} RtP2pPlan;
int rt_plan_p2p(const CommChunk *ch, int rank, int nranks, RtP2pPlan *p); /* -1: a group past p2p's maxranks */

/* ---- rt_ptx.c ---- */
extern const char rt_builtin_ptx[];
extern const char rt_tool_ptx[]; /* rt_cal_*, rt_ref_matmul */
/* runtime/rt_p2p.cu through nvcc at build time ("" and 0 bytes where nvcc
 * was not found) */
extern const char rt_p2p_ptx[];
extern const unsigned char rt_p2p_cubin[];
const syn_image *rt_p2p_image(void); /* both, as one module */

#ifdef RT_CUDA
/* ================= the GPU half ================= */
#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>

#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < 21700
#error "libsyncrt needs NCCL >= 2.17 (ncclConfig_t cgaClusterSize/maxCTAs)"
#endif

/* One thing enqueued on a lane, with the event recorded after it: the
 * watchdog finds where a lane is stuck, the trace finds when it happened. */
typedef enum RtItemKind { IK_BEGIN, IK_LAUNCH, IK_WAIT, IK_RAISE, IK_COLL, IK_COPY, IK_END } RtItemKind;
typedef struct RtItem {
	RtItemKind kind;
	int lane;
	int op;      /* index into ctx->ops */
	int flag;    /* IK_WAIT, IK_RAISE */
	int peer;    /* IK_RAISE: whose flag */
	int chunk;   /* IK_WAIT (the chunk it gates, -1), IK_COLL, IK_COPY (the chunk it packs for) */
	uint64_t value;
	char what[48];
	CUevent done;
	CUstream stream; /* where `done` was recorded: events of one stream finish in order */
	int complete;
	uint64_t enq_ns;
} RtItem;

/* %globaltimer stamped between two events on the ctl stream: maps event
 * times onto the GPU clock. */
typedef struct RtAnchor {
	CUevent before, after;
	int slot; /* in ctx->stamp_host */
} RtAnchor;

typedef struct RtSym {
	CUdeviceptr base;
	size_t bytes;
	CUdeviceptr *peer; /* nranks; 0 = not mapped; [rank] = base */
	int ipc;           /* peers opened with cuIpcOpenMemHandle */
	int vmm;           /* RT_VMM_*: what of a cuMemCreate mapping is made (0: cuMemAlloc) */
	CUmemGenericAllocationHandle h;
	size_t mapped;     /* bytes allocated: `bytes` rounded up to the granularity (cuMemAlloc between processes: 2 MiB) */
	int legacy;        /* cuMemAlloc whatever SYNC_SYM_VMM says (the retry after a failed import) */
	struct RtSymImport { /* per peer: another process's memory imported by its POSIX fd */
		CUmemGenericAllocationHandle h;
		CUdeviceptr va;
		size_t mapped;
		int vmm; /* RT_VMM_* */
	} *imp;
} RtSym;
enum { RT_VMM_CREATED = 1, RT_VMM_RESERVED = 2, RT_VMM_MAPPED = 4 };

struct syn_kernel {
	CUfunction fn;
	char name[64];
	unsigned smem_set;
	unsigned occ_block, occ_smem; /* syn_grid_persistent's last question, */
	int occ_per;                  /* and its answer (0: none yet) */
	unsigned occ_csize, occ_cblock, occ_csmem; /* syn_grid_cluster's last question, */
	int occ_clusters;             /* and its answer (0: none yet) */
};

typedef struct RtModule {
	const syn_image *img;
	CUmodule mod;
	syn_kernel **k; /* each its own allocation: callers keep the pointers */
	int nk;
} RtModule;

/* The world of one process driving several GPUs (syn_init_local). */
typedef struct RtWorld {
	int n;
	syn_ctx **ctx;
	pthread_mutex_t mu;
	char *xbuf;
	size_t xcap;
	pthread_cond_t cv;
	int bar_count, bar_gen; /* a barrier with a deadline (pthread's has none) */
	int timeout_ms;
	atomic_int failed;
	char fail_msg[RT_ERRLEN];
	int refs;
} RtWorld;

typedef struct RtClock {
	int64_t gpu_minus_host; /* ns: %globaltimer - CLOCK_MONOTONIC */
	int64_t rtt;            /* of the best round trip */
	uint64_t at;            /* host time of the measurement */
} RtClock;

struct syn_ctx {
	int rank, nranks, device;
	RtEnv env;
	RtWorld *world; /* syn_init_local */
	RtBoot *boot;   /* syn_init with nranks > 1 */
	char node[RT_NODELEN];
	char *peer_node; /* nranks x RT_NODELEN */
	CUdevice dev;
	CUcontext cu;
	CUstream lane[SYN_LANES];
	CUstream ctl; /* anchors and the clock probe */
	unsigned char *reach; /* nranks: 1 if that rank's memory can be mapped here */
	CUstream wd;  /* the watchdog's reads and releases */
	CUevent fork, join;
	CUevent mark[8];  /* syn_mark: timing points on the compute lane */
	CUevent ext_in, ext_out; /* rt_stream.c: the caller's stream in, the op's end out */
	/* rt_stream.c: the caller's stream between syn_stream_enter and _leave */
	CUstream ext;
	int has_ext;    /* 1 inside enter .. leave */
	int ctx_held;   /* inside enter .. leave: ctx_thread's current context is checked (rt_entry) */
	pthread_t ctx_thread;
	int ext_waited; /* the compute lane already waits for what ext had */
	int ext_clean;  /* ext is behind every op's work (none ran on the lanes since) */
	int local;      /* the op in progress has no communication (syn_begin_local) */
	CUstream run;   /* and the stream its kernels go on: ext, or the compute lane */
	/* CUDA graph capture of ext (rt_stream.c): nothing is logged, and the
	 * next op's flags [next_flag, next_flag + next_nflags) are cleared at its
	 * start and its epoch is 1, so every replay counts from zero.  An op once
	 * captured keeps doing so on every later call (cleared[first]): its
	 * flags hold a replay's counts, which its own call count no longer
	 * matches; op_cleared says the op begun is such a call (syn_epoch) */
	int capturing;
	int next_flag, next_nflags; /* syn_op_flags; next_nflags < 0: not said */
	unsigned char *cleared;     /* nflags entries, made at the first capture */
	int op_cleared;
	ncclComm_t comm;
	/* a plan's levels (--topo NxG): G ranks per node, its communicator
	 * (the ranks r / G alike) and the cross-node one (r % G alike), split
	 * from comm at init where rt_levels_split says so, NULL otherwise */
	int gpus;
	const char *gpus_from; /* for messages: "syn_opts.gpus_per_node", "LOCAL_WORLD_SIZE", NULL */
	ncclComm_t node_comm, cross_comm;
	int sms, free_sms, max_ctas;
	/* ranks of this process on this rank's GPU (syn_init_local with a GPU
	 * named twice): sms is this rank's share of the device's, and NCCL,
	 * which refuses a GPU twice, has no communicator (comm is NULL) */
	int share;
	CommBackend *be[SYN_BACKENDS];
	/* flags: a symmetric allocation; generated code owns [0, nflags), the
	 * ce backend [nflags, nflags + 2 * nranks), the p2p backend the next
	 * 2 * nranks (RT_BE_FLAGS per rank in all) */
	int nflags, nflags_all;
	RtSym *flags;
	uint64_t *flag_host; /* pinned copy for the watchdog */
	volatile uint32_t *errw;
	CUdeviceptr errw_dev;
	RtSym **sym;
	int nsym;
	/* per-context state of generated launchers (syn_state) */
	struct { char key[128]; void *p; } *state; /* a launcher's key: "syncc:OP#FILE" (codegen/host.c) */
	int nstate;
	RtModule *mods;
	int nmods;
	CUmodule rtmod;
	CUfunction k_stamp, k_probe;
	/* the log of one or more operator calls */
	pthread_mutex_t mu;
	RtItem *items;
	int nitems, citems, first_pending;
	CUevent *evpool; /* free events, reused by later items */
	int nev, cev;
	RtOp *ops;
	int nops, cops, cur_op, in_op;
	uint64_t epoch;
	uint64_t last_progress;
	/* tracing */
	int trace;
	RtAnchor *anchors;
	int nanchors, canchors;
	volatile uint64_t *stamp_host;
	CUdeviceptr stamp_dev;
	int nstamps;
	CUdeviceptr tbuf;
	unsigned tcap, tused;
	RtTrace tr;
	int64_t lane_last[SYN_LANES]; /* ns of the last harvested item per lane */
	RtClock clk0, clk1;
	RtExposed texp;  /* rank 0, after syn_trace_write: the least hidden rank's */
	int texp_rank;   /* -1: none yet */
	/* failure */
	int failed;
	char err[RT_ERRLEN];
	void *abort_job; /* rt_watch.c: a running ncclCommAbort */
	pthread_t wdog;
	int wdog_on;
	atomic_int wdog_stop;
};

/* rt_cuerr.c: errors */
int rt_cu(syn_ctx *c, CUresult r, const char *what);
int rt_nccl(syn_ctx *c, ncclResult_t r, const char *what);
int rt_seterr(syn_ctx *c, int status, const char *fmt, ...) RT_PRINTF(3, 4);
int rt_nccl_settle(syn_ctx *c, ncclResult_t r, const char *what);
int rt_nccl_settle_ms(syn_ctx *c, ncclResult_t r, const char *what, int ms);
/* the same for a call on *comm, one of c's communicators (NULL once aborted) */
int rt_nccl_settle_on(syn_ctx *c, ncclComm_t *comm, ncclResult_t r, const char *what, int ms);

/* rt_ctx.c: one context */
syn_ctx *rt_ctx_new(const RtEnv *env, const syn_opts *o);
int rt_ctx_open(syn_ctx *c, int device); /* everything of one rank that needs no other rank */
int rt_ctx_flags(syn_ctx *c);
int rt_ctx_finish(syn_ctx *c);

/* rt_sym.c: symmetric memory */
int rt_sym_alloc(syn_ctx *c, size_t bytes, RtSym **out); /* collective */
int rt_sym_local(syn_ctx *c, size_t bytes, RtSym *s);     /* this rank's part of it, zeroed */
void rt_sym_release(syn_ctx *c, RtSym *s, int free_base);
RtSym *rt_sym_find(const syn_ctx *c, CUdeviceptr p, size_t bytes);
/* cuMemcpyHtoD and cuMemsetD8 that return with the bytes in device memory
 * (rt_sym.c says why the plain calls do not) */
int rt_put(syn_ctx *c, CUdeviceptr dst, const void *src, size_t n, const char *what);
int rt_zero(syn_ctx *c, CUdeviceptr dst, size_t n, const char *what);

/* rt_module.c: modules */
int rt_module_load(syn_ctx *c, const syn_image *img, CUmodule *m);
int rt_module_try(syn_ctx *c, const syn_image *img, char *why, size_t n); /* loaded and kept, or why not; never fails the context */
void rt_modules_free(syn_ctx *c);

/* rt_world.c: the world of ranks, the NCCL communicator */
int rt_allgather(syn_ctx *c, const void *mine, size_t len, void *all);
int rt_same_node(const syn_ctx *c, int p);
void rt_nccl_close(syn_ctx *c);

/* rt_launch.c */
int rt_log(syn_ctx *c, RtItemKind kind, int lane, int flag, int peer, int chunk, uint64_t value, const char *what);
int rt_flag_wait(syn_ctx *c, CUstream s, CUdeviceptr flag, uint64_t value, const char *what);
int rt_flag_write(syn_ctx *c, CUstream s, CUdeviceptr flag, uint64_t value, const char *what);
int rt_entry(syn_ctx *c);
/* rt_stream.c */
int rt_capture_flags(syn_ctx *c, CUstream s, const char *op);

/* rt_watch.c */
int rt_watch_start(syn_ctx *c);
void rt_watch_stop(syn_ctx *c);
int rt_watch_tick(syn_ctx *c); /* with c->mu held; returns c->failed */
int rt_advance(syn_ctx *c, uint64_t now); /* with c->mu held: marks finished log items (a few queries a stream) */
int rt_fail(syn_ctx *c, int status, const char *msg);
int rt_drain(syn_ctx *c, int ms);
void rt_notes(syn_ctx *c, int ms);
void rt_abort_wait(syn_ctx *c, int ms);

/* rt_nccl.c, rt_ce.c, ... (rt_<name>.c of comm/backends.h's rows): a
 * backend is a CommBackend with its context */
typedef struct RtBe {
	CommBackend b;
	syn_ctx *c;
	uint64_t seq; /* ce, p2p: collectives so far, the value of their arrive/done flags */
} RtBe;
RtBe *rt_be_new(syn_ctx *c, CommBackendKind kind);
/* rt_nccl_new, rt_ce_new, ...: one per row of comm/backends.h */
#define B(NAME, name, ...) CommBackend *rt_##name##_new(syn_ctx *c);
#include "../comm/backends.h"
#undef B
ncclDataType_t rt_nccl_dtype(CommDType dt);
ncclRedOp_t rt_nccl_red(CommRed r);

/* rt_stream.c */
void rt_stream_free(syn_ctx *c);
int rt_stream_fork(syn_ctx *c); /* the compute lane waits for the caller's stream */
int rt_stream_join(syn_ctx *c); /* the caller's stream waits for the compute lane */

/* rt_clock.c */
int rt_clock_probe(syn_ctx *c, RtClock *out);
int rt_anchor(syn_ctx *c);
int rt_harvest(syn_ctx *c);

#endif /* RT_CUDA */

#endif
