/* codegen/codegen.h -- PTX for syncc's kernels (DESIGN §5).  Three kinds of
 * persistent kernel -- matmul with a fused epilogue, fused elementwise, row
 * reductions -- each walking a block list that lives in device memory, so a
 * plan is data and not code.  Before a block a kernel waits on the block's
 * input flag; after it, it raises the block's output flag.  Sizes, strides
 * and dtypes are compile-time constants baked into the PTX; pointers, the
 * block list, flags and the timeout are kernel parameters.
 * Prefix: ptx_.  The PTX emitter internals are declared at the end. */
#ifndef SYNCC_CODEGEN_H
#define SYNCC_CODEGEN_H

#include "../ir/ir.h"
#include "../sched/sched.h"

enum {
	PTX_MAX_TENSORS = 8, /* inputs, or outputs, of one kernel */
	PTX_MAX_INS = 64,    /* instructions of one elementwise program */
	PTX_MAX_STAGES = 4,  /* reductions chained in one row kernel */
	PTX_ROWS_CTA_LEN = 2048, /* rows this long get a CTA each (codegen/rows.c) */
	PTX_MAX_DIMS = 8,    /* dims of an elementwise iteration space (LIM_RANK) */
	PTX_NPARAM = 8,      /* parameters every kernel has before its tensors */
};

/* ---- the block list ----
 * One entry per block a kernel runs.  CTA c of a grid of G runs entries
 * c, c+G, c+2G, ... in order, so the host decides the order (and the overlap)
 * by how it fills the list.  The PTX reads the fields at these byte offsets;
 * tests/gpu/kernels.c and a static assertion in codegen/ptx.c keep them so. */
#define PTX_NO_FLAG 0xffffffffu
enum { PTX_RAISE_ADD = 0, PTX_RAISE_STORE = 1 };

typedef struct PtxBlock {
	uint32_t x;         /*  0 matmul: tile row (m0 = x*BM); ew: element block; rows: row block */
	uint32_t y;         /*  4 matmul: tile column (n0 = y*BN); 0 otherwise */
	uint32_t z;         /*  8 matmul: batch index; 0 otherwise */
	uint32_t in_flag;   /* 12 flags[] index waited on before the block, PTX_NO_FLAG = none */
	uint64_t in_epoch;  /* 16 wait until (int64_t)(flags[in_flag] - in_epoch) >= 0 */
	uint32_t out_flag;  /* 24 flags[] index raised after the block, PTX_NO_FLAG = none */
	uint32_t out_op;    /* 28 PTX_RAISE_ADD: red.release.sys.add; PTX_RAISE_STORE: st.release.sys */
	uint64_t out_value; /* 32 what is added to, or stored into, flags[out_flag] */
} PtxBlock;             /* 40 bytes, 8-aligned */

/* ---- kernel parameters, in order, for every kind ----
 *   0  .u64 blocks    const PtxBlock * (device)
 *   1  .u32 nblocks   entries in the list
 *   2  .u64 flags     uint64_t * epoch flags (.sys scope; may be 0 if no entry names one)
 *   3  .u64 err       uint32_t[4] error word of libsyncrt: the first timed-out
 *                     wait CASes word 0 from 0 to 1, then stores the flag,
 *                     the block-list index and the kernel's site number
 *   4  .u64 timeout   ns one flag wait may last (%globaltimer), 0 = forever;
 *                     err must not be 0 when timeout is not
 *   5  .u64 trace     0, or 32-byte records per block (libsyncrt's layout):
 *                     {site << 32 | block, %globaltimer when the wait is over,
 *                     when the stores are done, %smid}
 *   6  .u64 epoch     the call's epoch e >= 1: a wait ends at in_epoch * e, a
 *                     PTX_RAISE_STORE stores out_value * e and a PTX_RAISE_ADD
 *                     adds out_value (k adds per call reach k * e) -- so one
 *                     block list serves every call and flags are never reset
 *   7  .u32 site      the kernel's number in its module (error word, trace);
 *                     a parameter, so kernels that differ only there are one
 *                     kernel (codegen/module.c)
 *   8.. .u64          the kind's tensors: matmul A, B, then epilogue inputs,
 *                     then outputs (out[0] is C); ew and rows: inputs, then outputs
 * A CTA whose wait times out (or that sees err already set while it waits)
 * leaves without running its remaining blocks; the kernel still returns
 * normally, so the context stays usable.
 * Every tensor base address must be 16-byte aligned. */

/* ---- tensors and elementwise programs ---- */
typedef struct PtxTensor {
	DType dt;
	int64_t stride[PTX_MAX_DIMS]; /* elements, >= 0; 0 = broadcast along that dim.
	                                 matmul epilogue: {batch, row, col};
	                                 rows: {row, col}; ew: one per iteration dim */
} PtxTensor;

/* Leaves of a program beyond ir/ops.h's ops. */
enum { PTX_OP_ACC = OP_COUNT, PTX_OP_STAGE };

/* One SSA instruction of an elementwise program; values are f32 (or s32
 * where every operand is integer), whatever the storage type. */
typedef struct PtxIns {
	int op;       /* OP_PARAM: load input a at the element; OP_CONST: c;
	                 PTX_OP_ACC: the matmul accumulator / the row reduction;
	                 PTX_OP_STAGE: result of row stage a; OP_CAST: a rounded to dt;
	                 the other OF_EW ops of ir/ops.h on a (and b) */
	int a, b;     /* operands: earlier instructions (or input / stage numbers) */
	double c;     /* OP_CONST */
	DType dt;     /* OP_CAST target; OP_CONST: DT_I32 for an integer, else f32 */
} PtxIns;

typedef struct PtxOut {
	int val;    /* instruction whose value is stored */
	int tensor; /* output tensor it is stored into */
} PtxOut;

typedef struct PtxEwProg {
	PtxIns ins[PTX_MAX_INS];
	int nins;
	PtxOut out[PTX_MAX_TENSORS];
	int nout;
} PtxEwProg;

/* ---- matmul: out = epilogue(A @ B) ----
 * A [m, k] and B [k, n] row-major with leading dimensions (chunks of bigger
 * tensors work), optional batch strides; bf16 or f16 operands on the
 * tensor cores (mma.sync or wgmma, f32 accumulation), f32 operands with
 * FFMA.  Any m, n, k: edges load zeros and store under predicates. */
typedef enum PtxMmKind {
	PTX_MMA_SYNC, /* codegen/matmul.c: mma.sync fed by ldmatrix from cp.async (sm_80 style) */
	PTX_WGMMA,    /* codegen/wgmma.c: wgmma fed by TMA, warp-specialised (sm_90a) */
	PTX_SIMT,     /* codegen/simt.c: f32 FFMA fed by 4-byte cp.async (f32 operands) */
} PtxMmKind;

typedef struct PtxTile {
	const char *name;      /* "128x256x32s4", "wg128x256x64s4" */
	int bm, bn, bk;        /* CTA tile */
	int warps_m, warps_n;  /* mma.sync: warp grid, warp tile = bm/warps_m x bn/warps_n;
	                          wgmma: consumer warpgroups along m (each 64 rows) x 1 */
	int stages;            /* cp.async / TMA pipeline depth */
	int min_ctas;          /* .minnctapersm, 0 = none */
	PtxMmKind kind;
	bool raiser;           /* wgmma: a producer warp raises the output flags (else a consumer thread) */
	int cluster;           /* wgmma: CTAs of a cluster sharing an entry of bm rows, bm / cluster
	                          each, that load B's boxes once for all by TMA multicast (0 = 1) */
	bool streamk;          /* wgmma: where the last wave would leave most SMs idle, its
	                          entries are cut along k into equal pieces, one a CTA, the
	                          partial sums met in the kernel's workspace (wgmma.c wg_sk_setup) */
} PtxTile;
extern const PtxTile ptx_tiles[];
enum {
	PTX_SK_CTAS = 132, /* stream-K: the most CTAs that split entries (a Hopper part's SMs) */
	PTX_SK_MIN = 4,    /* stream-K: k tiles each idle CTA of the last wave must gain (codegen/wgmma.c) */
};
extern const int ptx_ntiles;

typedef struct PtxMatmulSpec {
	const char *name;
	DType ab;                      /* DT_BF16 or DT_F16 (tensor cores), DT_F32 (FFMA) */
	int64_t m, n, k, batch;        /* batch >= 1 */
	int64_t lda, ldb;              /* elements between rows; 0 = k, n (bt: k) */
	bool bt;                       /* B is stored n x k, K-major (ldb between its n rows): the
	                                  matmul reads transpose(w) in place (wgmma tiles only) */
	int64_t batch_a, batch_b;      /* elements between batches (0 = shared) */
	int tile;                      /* index into ptx_tiles[] */
	PtxTensor in[PTX_MAX_TENSORS]; /* epilogue inputs, strides {batch, row, col} */
	int nin;
	PtxTensor out[PTX_MAX_TENSORS]; /* out[0] is C, strides {batch, row, col} */
	int nout;
	PtxEwProg epi;                 /* reads PTX_OP_ACC and in[]; empty: out[0] = acc */
	int route;                     /* > 0: entries may store their tile through one of `route`
	                                  routes (PtxRoute: another rank's buffer and flags) */
	int src_smem;                  /* 0: an epilogue input of C's shape (a residual) is read from
	                                  the staged tile, which TMA fills during the tile's k loop
	                                  where the kernel can (wgmma.c wg_src_plan); -1: from global
	                                  memory, a load per pair */
	int src_spread;                /* 0: the staged source tile's boxes are loaded a few k tiles
	                                  apart (wgmma.c wg_src_at); -1: all at one k tile */
	int tail;                      /* 0: an epilogue's tail of special functions on one value
	                                  (GELU's, ptx_prog_tail) runs on the staged tile in the
	                                  producer warpgroup's spare warps, beside the next tile's
	                                  MMAs, where the kernel can (wgmma.c wg_tail_plan); -1: in
	                                  the consumers' epilogue, with the tensor cores idle; 1: also
	                                  on a tile staged in halves, whose consumers then wait for
	                                  the first half's tail (not measured yet) */
	int stage_out;                 /* 0: a 16-bit output is staged in shared memory and stored by
	                                  TMA where it can be (wgmma.c wg_stageable); -1: stored from
	                                  registers (to measure what the staging buffer's shared
	                                  memory would buy the ring) */
	int pre_in;                    /* 0: epilogue inputs constant along rows (a bias) are loaded
	                                  for the whole tile while its last k tile's MMAs run (wgmma,
	                                  ptx_mm_epi_prefetch); -1: in the epilogue, a group of
	                                  fragments at a time */
	int l2_first;                  /* the TMA streams marked evict-first in L2, which each touch
	                                  their bytes once (PTX_L2_SRC: the source tile's loads,
	                                  PTX_L2_OUT: C's stores); 0: the default (wgmma.c
	                                  WG_L2_DEFAULT), -1: none */
} PtxMatmulSpec;
enum { PTX_L2_SRC = 1, PTX_L2_OUT = 2 };

/* ---- routed stores: a matmul's epilogue into the owners' buffers ----
 * A routed matmul (spec.route = n, the Hopper kernel with a staged tile)
 * has n more tensor maps after its own three, tm3 .. tm(2 + n): map 3 + j
 * is C's as it lies in rank j's memory (mapped here).  An entry whose
 * out_op holds j + 1 above PTX_ROUTE_SHIFT stores its tile through map
 * 3 + j at its row and column plus route j's drow and dcol, and raises its
 * out_flag in route j's flags array (rank j's, as mapped here): the
 * epilogue push of a reduce_scatter, each tile written straight into its
 * owner's slot for this rank.  Routes are a table of n PtxRoute after the
 * block list, at byte ptx_route_table_off(nblocks) from `blocks`, which
 * the launcher allocates and fills.  An entry whose route field is 0 is
 * stored and raised as in any kernel. */
typedef struct PtxRoute {
	uint64_t flags;     /* the flags array entry flags index, as mapped here */
	int32_t drow, dcol; /* added to the tile's first row and column in the route's map */
} PtxRoute;             /* 16 bytes */
enum { PTX_ROUTE_SHIFT = 8, PTX_MAX_ROUTES = 8, PTX_ROUTE_ALIGN = 16 /* the table's start */ };
int64_t ptx_route_table_off(int64_t nblocks); /* the block list's bytes, rounded up to 16 */

/* ---- fused elementwise: out[j] = prog(in...) over a broadcast space ---- */
typedef struct PtxEwSpec {
	const char *name;
	int rank;
	int64_t dim[PTX_MAX_DIMS];      /* iteration space (the outputs' shape) */
	PtxTensor in[PTX_MAX_TENSORS];  /* strides per dim, 0 = broadcast */
	int nin;
	PtxTensor out[PTX_MAX_TENSORS];
	int nout;
	PtxEwProg prog;
	int64_t block_elems;            /* elements per block-list entry, 0 = 65536;
	                                   blocks cut the space in row-major order */
	bool causal;                    /* every output -inf where, in the last two dims, */
	int64_t diag;                   /* the column is past the row + diag (a float dtype) */
} PtxEwSpec;

/* ---- row reductions over the last dim ----
 * One warp per row.  Stages run in order over the row; stage s reduces
 * pre(element) with red and turns the result into a per-row value with
 * post, which later stages and the map can read as PTX_OP_STAGE s.  The
 * map then writes per-element outputs.  How softmax, layernorm and rmsnorm
 * are built from this: docs in codegen/rows.c and tests/gpu/kernels.c. */
typedef struct PtxRowStage {
	int red;        /* OP_SUM, OP_MEAN, OP_AMAX or OP_AMIN */
	PtxEwProg pre;  /* per element -> out[0], the value reduced; empty: in[0] */
	PtxEwProg post; /* per row: PTX_OP_ACC, earlier stages, per-row inputs -> out[0]; empty: acc */
	int out;        /* output tensor that receives the stage's result per row, -1 = none */
} PtxRowStage;

typedef struct PtxRowsSpec {
	const char *name;
	int64_t rows, len;
	PtxTensor in[PTX_MAX_TENSORS];  /* strides {row, col}; col 0 = per-row value */
	int nin;
	PtxTensor out[PTX_MAX_TENSORS]; /* strides {row, col} */
	int nout;
	PtxRowStage stage[PTX_MAX_STAGES];
	int nstage;
	PtxEwProg map;                  /* per element: in[], stages -> out[].tensor */
	int rows_per_block;             /* 0 = 8 */
	int cluster;                    /* column mode: CTAs of a cluster that split a block's reduced
	                                   dim (1, 2, 4 or 8), their partials met in distributed
	                                   shared memory; 0 = chosen from the shape (rows.c) */
	int group;                      /* column mode: at most this many CTAs (a power of two up to
	                                   PTX_MAX_GROUP) split a block's reduced dim, their partials
	                                   met in a global workspace (PtxKernel.work); 0 = chosen from
	                                   the shape, 1 = none (a caller whose entries wait on flags:
	                                   see rows.c col_split) */
	int cta_threads;                /* CTA mode: threads per row (128 to 1024, a power of two);
	                                   0 = chosen from the length (rows.c cta_shape) */
	int cta_min;                    /* CTA mode: CTAs an SM must hold (.minnctapersm: ptxas keeps
	                                   registers to fit them); 0 or -1 = no directive */
	int l1_stream;                  /* CTA mode: the streamed inputs' vectors loaded past L1
	                                   (.L1::no_allocate: they are read once, so what else is read
	                                   keeps L1): 0 = where CTAs share an SM (fewer than 1024
	                                   threads: rows.c), 1 = always, -1 = never */
	int cache_ends;                 /* CTA mode, peeled rows: the head and tail elements' streamed
	                                   inputs held in registers with the vectors (rows.c peel_cache):
	                                   0 = where they fit, -1 = never */
	int split_heads;                /* CTA mode, peeled rows: the map's vectors made once per head
	                                   (0 .. 7), so a 16-bit weight every row shares is read at a
	                                   shift known when it is made (rows.c cta_each_split): 1 =
	                                   where the map reads such a weight, -1 = never, 0 = the
	                                   default (rows.c SPLIT_HEADS) */
	int prefetch;                   /* CTA mode: the next row of in0 copied into shared memory by
	                                   one bulk copy while this row is reduced and stored (rows.c
	                                   cta_prefetch): 1 = where it fits (flagless kernels), 0 = there
	                                   on peeled rows that read no input every row shares (the
	                                   default), -1 = never */
	int weights_smem;               /* CTA mode: the inputs every row shares (a norm's weight and
	                                   bias) copied into shared memory once, at the kernel's start,
	                                   and read there by every row (rows.c wsm_plan): 0 = where a
	                                   CTA of 1024 threads has its SM (flagless kernels), 1 = at any
	                                   CTA size (flagless), -1 = never (read through L1 each row) */
	int online;                     /* column mode: a max and the sum of exps from it in one pass
	                                   (rows.c col_online) where the input outgrows L2 (0), wherever
	                                   the pair allows (1), never (-1) */
	int col_cache;                  /* column mode: each thread's vectors of the block's streamed
	                                   inputs held in shared memory, where a CTA's share fits
	                                   (rows.c col_cache_plan): 1 = copied in at the entry's start
	                                   and every pass reads them there, 2 = the next entry's copied
	                                   in while this one is reduced and stored (flagless kernels;
	                                   else 1), -1 = never (each pass rereads from L2 or HBM),
	                                   0 = chosen from the shape */
	int col_pipe;                   /* column mode, a group that meets once an entry (one stage,
	                                   a one-level combine, flagless): 1 = the entries pipelined,
	                                   entry e + 1 reduced and its meeting arrived at before entry
	                                   e's is waited for, combined and stored, the block reread
	                                   from L2 (rows.c col_pipe_ok); 0 and -1 = one entry at a time */
	bool flagless;                  /* no entry waits on or raises a flag (lower.c knows): rows
	                                   mode and CTA mode leave out the per-entry barriers
	                                   (ptx_kernel_flagless); column mode keeps them but takes
	                                   col_cache 2 and col_pipe only where it is set (an entry's
	                                   flag would be raised before the pipelined entry's stores) */
} PtxRowsSpec;

enum { PTX_MAX_GROUP = 256 };
/* The error word's flag for a group barrier that timed out (its CTAs were
 * not all resident, or one of them left) rather than a flag wait:
 * runtime/syncrt.h's SYN_ERRW_GROUP (tests/rt/rt_cpu_test.c checks they agree). */
#define PTX_GROUP_FLAG 0xfffffffeu

/* A TMA tensor map the launcher encodes (cuTensorMapEncodeTiled, 128-byte
 * swizzle, zero fill out of bounds) for every call, from the address of
 * tensor parameter `tensor`; passed after the tensors as a 128-byte,
 * 64-aligned kernel parameter. */
typedef struct PtxTmap {
	int tensor;
	DType dt;
	int64_t dim[3];    /* elements, innermost first */
	int64_t stride[2]; /* bytes between steps of dim 1 and dim 2 */
	int box[3];        /* elements copied per dim; box[0] * size = 128 */
	char role;         /* the operand's letter in the launcher's messages (A, B; Q, K, V) */
	int route;         /* > 0: the tensor as it lies in rank route - 1's memory (a routed matmul) */
	bool optional;     /* used by the kernel only where the address is 16-byte aligned, as the
	                      kernel checks too: elsewhere the launcher leaves the map zeroed */
} PtxTmap;

enum { PTX_MAX_TMAPS = 3 + PTX_MAX_ROUTES };

/* What the host needs to launch an emitted kernel. */
typedef struct PtxKernel {
	char name[64];
	int threads;     /* blockDim.x */
	int smem;        /* dynamic shared memory, bytes */
	int ntensors;    /* tensor parameters after the PTX_NPARAM common ones */
	int64_t nblocks; /* size of the kernel's natural block space */
	PtxTmap tmap[PTX_MAX_TMAPS];
	int ntmaps;      /* tensor-map parameters after the tensors */
	int cluster;     /* CTAs per cluster (.reqnctapercluster), 0 or 1 = none: the grid is a
	                    multiple of it and each cluster, not each CTA, takes an entry */
	int route;       /* routes of a routed matmul's table (PtxRoute), 0 = none */
	int group;       /* CTAs per group, at most (ptx_kernel_group), 0 or 1 = none: the kernel takes
	                    g = min(group, the largest power of two <= the grid), the launcher a grid
	                    that is a multiple of g, every CTA resident at once (a persistent grid) */
	int64_t work;    /* bytes of global workspace, zeroed once, that the kernel leaves as it found
	                    it: the last tensor parameter; 0 = none */
	bool entry_grid; /* no entry waits on or raises a flag, nor shares state with the CTA's next:
	                    where entries are many the launcher gives each its own CTA, and the hardware
	                    hands each SM its next entry as one of its CTAs finishes (host.c) */
} PtxKernel;

/* codegen/ptx.c */
void ptx_emit_header(Buf *b); /* .version, .target, shared symbol: once per module */
extern const char *const ptx_param_names[PTX_NPARAM];

/* codegen/matmul.c: check returns NULL or why the spec cannot be emitted;
 * emit dies on a spec that check rejects (a compiler bug). */
const char *ptx_matmul_check(const PtxMatmulSpec *s);
void ptx_emit_matmul(Buf *b, const PtxMatmulSpec *s, PtxKernel *k); /* either kind */
int ptx_tile_byname(const char *name); /* -1 if none */
int ptx_matmul_streamk(const PtxMatmulSpec *s, int sms); /* the stream-K form of s->tile, or s->tile */
#define PTX_DEFAULT_TILE "wg128x256x64s3"
#define PTX_SYNC_TILE "128x256x32s4" /* the default where TMA cannot be used */
#define PTX_F32_TILE "ffma128x128x8s3"      /* the default for f32 operands (2 CTAs per SM) */
#define PTX_F32_TILE_WIDE "ffma128x128x8s4" /* with epilogue inputs (1 CTA per SM, no spills) */
int ptx_matmul_default_tile(const PtxMatmulSpec *s); /* the tile to use when none is asked for */
int ptx_matmul_shape_tile(const PtxMatmulSpec *s, int sms); /* ... or a narrower one where it fills `sms` better */
/* The output's terms for a tile staged through shared memory and stored
 * by TMA: one 16-bit output, unit column stride, 16-byte rows, and the
 * spec's stage_out not -1 (the room beside the stages is the tile's own
 * question, codegen/wgmma.c). */
bool ptx_matmul_out_stageable(const PtxMatmulSpec *s);
bool ptx_wgmma_tail(const PtxMatmulSpec *s); /* its tile runs the epilogue's tail in warps 1-3 (wgmma.c) */
/* Fills all tiles (when out is not NULL) in grouped order: `group` tile rows
 * at a time, column by column, for L2 reuse; returns the number of tiles. */
int64_t ptx_matmul_blocks(const PtxMatmulSpec *s, int group, PtxBlock *out);
/* A matmul kernel's description (name, block, shared memory, tensors,
 * blocks), for the three matmul emitters; tensor maps are the caller's. */
void ptx_matmul_kernel(PtxKernel *k, const PtxMatmulSpec *s, int threads, int smem);

/* codegen/ew.c */
const char *ptx_ew_check(const PtxEwSpec *s);
void ptx_emit_ew(Buf *b, const PtxEwSpec *s, PtxKernel *k);

/* codegen/rows.c */
const char *ptx_rows_check(const PtxRowsSpec *s);
/* The group of CTAs codegen/rows.c would split each column block over (1: none). */
int ptx_rows_group_of(const PtxRowsSpec *s);
bool ptx_rows_col_held(const PtxRowsSpec *s); /* column mode: the block held in shared memory (rows.c col_cache_plan) */
/* Column mode: adjacent rows a lane takes in blocks of rb (a vector, 1 to 8). */
int ptx_rows_col_vec(const PtxRowsSpec *s, int rb);
void ptx_emit_rows(Buf *b, const PtxRowsSpec *s, PtxKernel *k);

/* codegen/attn.c: the fused attention kernel (FlashAttention-2 style,
 * mma.sync): per head z, o[z] = softmax(scale * q[z] k[z]^T, masked) v[z]
 * over tiles of 64 queries (block x) and 64 keys, no scores in HBM.
 * Tensors: q [batch * sq][d], k and v [batch * sk][d], o [batch * sq][d]
 * (all of dt, rows contiguous), then, with stats, m and l [batch * sq]
 * f32: the row max of scale * q k^T and the row sum of exp(s - m). */
typedef struct PtxAttnSpec {
	const char *name;
	DType dt;             /* bf16 or f16 */
	int64_t batch, sq, sk, d; /* d: 64 or 128 */
	double scale;         /* > 0 */
	bool causal;          /* key j masked for query i when j > i + diag */
	int64_t diag;
	bool normed;          /* o divided by the row sum (else the unnormalised output) */
	bool stats;           /* m and l stored too */
	bool tma;             /* the Hopper form: wgmma fed by TMA, 128 query rows an entry (else mma.sync, 64) */
	int bm;               /* the Hopper form's query rows an entry: 0 or 128, two consumer warpgroups; 192 (d = 64),
	                         three, FlashAttention-3's tile there (attn.c aw_regs) */
	int bn;               /* the Hopper form's keys a tile: 0 or 128; 176 or 192 with 128-row entries
	                         (FlashAttention-3's 176 at d = 128 without a mask: two stages fit) */
	int softmax;          /* 0: the default, 2 (measured faster); 1: scores scaled, then max and sum in one
	                         chain each; 2: the scale folded into the exponent's fma, max and sum over four
	                         partials (attn.c) */
	int pingpong;         /* the Hopper form's consumers issue their wgmma in turns (attn.c aw_turn_wait):
	                         0 the default (on with 192-row entries' three
	                         warpgroups, off with two), 1 on, -1 off */
} PtxAttnSpec;
const char *ptx_attn_check(const PtxAttnSpec *s);
void ptx_emit_attn(Buf *b, const PtxAttnSpec *s, PtxKernel *k);
int64_t ptx_attn_blocks(const PtxAttnSpec *s, PtxBlock *out); /* every (head, query tile); causal: longest first */
int ptx_attn_rows(const PtxAttnSpec *s);                       /* query rows of one entry */

/* codegen/prog.c: programs as text (tools and tests), and their meaning in
 * double precision (the CPU reference the GPU tests compare with).
 *   prog  := expr | out (';' out)*       out := 'out' N '=' expr
 *   expr  := NUMBER | 'acc' | 'in' N | 'stage' N | 'i' NUMBER (an i32 constant)
 *          | OPNAME '(' expr [',' expr] ')' | 'cast_' DTYPE '(' expr ')'
 * OPNAME is an OF_EW op's name in ir/ops.h (neg exp ... max min). */
const char *ptx_prog_parse(PtxEwProg *p, const char *text);
void ptx_prog_print(Buf *b, const PtxEwProg *p);
bool ptx_prog_uses(const PtxEwProg *p, int op, int a); /* a < 0: any */
bool ptx_prog_sfu(const PtxEwProg *p);                /* calls exp, tanh, sigmoid.. (OF_SFU) */
/* The first instruction v after which the output needs only v and
 * constants, in a tail that calls the SFU; the part up to v casts
 * nothing and reads only values of dtype dt, the matmul's ab (-1: none).
 * post: the tail, its accumulator v. */
int ptx_prog_tail(const PtxEwProg *g, const DType *indt, DType ab, DType dt, PtxEwProg *post);
bool ptx_prog_round_at(const PtxEwProg *g, int v, DType dt, PtxEwProg *out); /* v rounded to dt for its readers */
/* Evaluates every instruction; in[i] is input i at the element, stage[s]
 * the stage results; returns the value of instruction v in val[v]. */
void ptx_prog_eval(const PtxEwProg *p, const DType *indt, const double *in, double acc,
                   const double *stage, double *val);
double ptx_round(DType dt, double x);                   /* to the storage type and back */
double ptx_load(DType dt, const void *base, int64_t i); /* element i of a typed array */
void ptx_store(DType dt, void *base, int64_t i, double x);

/* ---- internals shared by the files of codegen/ ----
 * Kernels are written through one printf-checked function into the kernel's
 * body; registers are virtual (%r7, %f12, ...) and declared when the kernel
 * ends, with the counts the body used. */
typedef enum RegClass { RC_PRED, RC_B16, RC_B32, RC_B64, RC_F32, RC_COUNT } RegClass;
typedef int Reg; /* class << 24 | number */

typedef enum ValClass { VC_F32, VC_S32 } ValClass;

typedef struct PtxDType {
	int size;          /* bytes */
	const char *ld;    /* ld/st type suffix: b16, b32 */
	RegClass st;       /* register holding one stored element */
	ValClass vc;       /* class of its value in a program */
	const char *load;  /* stored -> value: %d value, %a stored */
	const char *store; /* f32 value -> stored (bf16, f16) */
	const char *pack2; /* two f32 values -> two stored in a b32: %a low, %b high */
} PtxDType;
extern const PtxDType ptx_dtypes[DT_COUNT];

typedef struct Ptx {
	Buf *out;          /* the module */
	Buf head, body;    /* the current kernel's signature and instructions */
	int nreg[RC_COUNT];
	int nlabel;
	char names[16][24]; /* rotating buffers for register names */
	int nextname;
	/* common registers of the persistent loop (codegen/ptx.c) */
	Reg tid, is_t0, blk, entry, x, y, z;
	Reg param[PTX_NPARAM], tensor[2 * PTX_MAX_TENSORS + 1]; /* + a group kernel's workspace */
	int lbl_done, lbl_loop, lbl_exit; /* lbl_exit: no entry left (ptx_loop_end_drain) */
	/* a cluster kernel (ptx_kernel_cluster): CTAs per cluster, this CTA's
	 * rank in it, and the one thread of the cluster that stamps traces and
	 * raises flags (is_t0 itself in a kernel without clusters) */
	int cluster;
	Reg crank, lead;
	/* a group kernel (ptx_kernel_group): CTAs per group at most; the group's
	 * size g and log2 g as this launch has them (crank, lead as above) */
	int group, group_slots; /* ... and groups at most, each with its slot of the workspace */
	bool flagless;          /* ptx_kernel_flagless */
	bool async_copies;      /* cp.async may be in flight at the loop's exit (ptx_loop_end waits for them) */
	Reg gsize, glog, ngroups; /* ... and the groups that take entries */
	Reg gcnt; /* the group's counters in the workspace (the last tensor): PTX_GROUP_WORDS words, ptx_kernel_group */
	int ntensors;
} Ptx;

void ptx_emit(Ptx *p, const char *fmt, ...) PRINTF(2, 3);
Reg ptx_reg(Ptx *p, RegClass c);
const char *ptx_rn(Ptx *p, Reg r);
int ptx_label(Ptx *p);
void ptx_place(Ptx *p, int label);
void ptx_kernel_begin(Ptx *p, Buf *out, const char *name, int ntensors, int threads, int min_ctas);
void ptx_kernel_begin_tm(Ptx *p, Buf *out, const char *name, int ntensors, int ntmaps, int threads, int min_ctas);
void ptx_kernel_end(Ptx *p);
/* After ptx_kernel_begin: clusters of n CTAs (n > 1) take the persistent
 * loop's entries together; before ptx_params. */
void ptx_kernel_cluster(Ptx *p, int n);
void ptx_cluster_sync(Ptx *p); /* every thread of the cluster: arrive (release), wait (acquire) */
/* After ptx_kernel_begin: groups of CTAs, up to n (a power of two > 1),
 * take the entries together and meet through global memory
 * (ptx_group_wait); g = min(n, the largest power of two <= gridDim.x),
 * and CTAs past the last whole group, or past `slots` groups, leave at
 * once.  The last tensor parameter is the workspace, which begins with
 * PTX_GROUP_WORDS u32 words per group (p->gcnt): the barriers' counter,
 * the CTAs that left, a second barrier counter (rows.c's pipelined
 * entries count odd entries' arrivals there) and one unused; they are 0
 * when the kernel starts and when it ends.  Before ptx_params. */
enum { PTX_GROUP_WORDS = 4, PTX_GROUP_ODD = 2 /* the second barrier counter's word */ };
void ptx_kernel_group(Ptx *p, int n, int slots);
/* After ptx_kernel_begin, for a kernel without clusters or groups whose
 * entries never wait on or raise a flag (the caller guarantees: every
 * entry's in_flag and out_flag are PTX_NO_FLAG): the persistent loop
 * leaves out the per-entry barriers that only order the flags (the wait's
 * verdict, the stores before the raise), so warps that finish an entry
 * start the next one while the others still store. */
void ptx_kernel_flagless(Ptx *p);
/* Thread is_t0: arrive at the group barrier whose u32 counter is at cnt
 * (a global address; release at gpu scope, after a bar.sync that covered
 * the CTA's stores). */
void ptx_group_arrive(Ptx *p, Reg cnt);
/* Thread is_t0: arrive as ptx_group_arrive does where `arrive` (else the
 * CTA already did), then wait until the counter reaches `target` arrivals
 * (acquire), or time out as a flag wait does (error word flag
 * PTX_GROUP_FLAG) and set quit. */
void ptx_group_wait(Ptx *p, Reg cnt, Reg target, Reg quit, bool arrive);
void ptx_params(Ptx *p, int ntensors);
void ptx_loop_begin(Ptx *p);
void ptx_loop_end(Ptx *p);
void ptx_loop_end_drain(Ptx *p, void (*drain)(void *), void *arg);
/* A persistent loop's step: this CTA's next entry (blk += gridDim.x, n a
 * scratch register), back to label `loop`. */
void ptx_next_entry(Ptx *p, Reg n, int loop);
void ptx_peek_next(Ptx *p, Reg has, Reg x); /* the CTA's next entry: whether there is one, its x (x < 0: not) */
void ptx_flag_wait(Ptx *p, Reg quit);  /* thread is_t0 waits for p->entry's input flag */
void ptx_flag_raise(Ptx *p, Reg who);  /* thread `who` raises p->entry's output flag */
/* ... in the flags array at `flags` (a global address), out_op's route
 * field masked off */
void ptx_flag_raise_at(Ptx *p, Reg who, Reg flags);
void ptx_trace_stamp(Ptx *p, int which);
int ptx_ilog2(int x);                                            /* smallest n with 2^n >= x */
void ptx_mad_wide(Ptx *p, Reg d, Reg idx, int64_t scale, Reg base); /* d = idx * scale + base, 64-bit */
Reg ptx_imm_f32(Ptx *p, double c);
void ptx_expand(Ptx *p, const char *tpl, Reg d, Reg a, Reg b); /* a table's template */
Reg ptx_convert(Ptx *p, Reg v, ValClass from, ValClass to);
Reg ptx_load_val(Ptx *p, DType dt, Reg addr, const char *space);
void ptx_store_val(Ptx *p, DType dt, Reg addr, Reg v, ValClass vc);
void ptx_load_vec(Ptx *p, DType dt, Reg addr, int64_t cs, int v, Reg *val);
int ptx_load_words(Ptx *p, DType dt, Reg addr, int v, Reg *w);  /* a vector load, raw words */
int ptx_load_words_in(Ptx *p, const char *space, DType dt, Reg addr, int v, Reg *w); /* from "global" or "shared" */
void ptx_load_words_to(Ptx *p, const char *space, DType dt, Reg addr, int v, const Reg *w); /* ... into w */
void ptx_unpack_word(Ptx *p, DType dt, Reg w, Reg *val);          /* a word as 1 or 2 values */
void ptx_store_vec(Ptx *p, DType dt, Reg addr, int v, const Reg *val);
void ptx_store_vec_in(Ptx *p, const char *space, DType dt, Reg addr, int v, const Reg *val); /* "global" or "shared" */

/* Programs in PTX: the caller loads the leaves the program uses into
 * env (classes from ptx_prog_classes) and gets each instruction's value. */
typedef struct PtxEnv {
	Reg in[PTX_MAX_TENSORS];
	ValClass in_vc[PTX_MAX_TENSORS];
	Reg acc;
	ValClass acc_vc;
	Reg stage[PTX_MAX_STAGES];
	Reg stage_rcp[PTX_MAX_STAGES]; /* 1 / stage[k] where the caller made it once (0: not made):
	                                  x / stage k is then x times it */
} PtxEnv;
void ptx_prog_classes(const PtxEwProg *g, const ValClass *in_vc, ValClass acc_vc, ValClass *vc);
void ptx_prog_emit(Ptx *p, const PtxEwProg *g, const PtxEnv *env, Reg *val, ValClass *vc);
int ptx_store_src(const PtxEwProg *g, const PtxOut *po, DType dt, const ValClass *vc); /* a store's value: a final cast left to the store */
const char *ptx_prog_check(const PtxEwProg *g, int nin, int ntensor_out, bool acc, int nstage);

/* The matmul epilogue both kinds share (codegen/matmul.c): the thread holds
 * acc[(i * nj + j) * 4 + e] for rows r0 + 16 i (e < 2) and r0 + 16 i + 8
 * (e >= 2), columns c0 + 8 j + (e & 1); r0, c0 are absolute in the output. */
typedef struct PtxMmFrag {
	Reg r0, c0;
	int mi, nj;
	const Reg *acc;
	/* The staged epilogue (wgmma): the output goes to a shared-memory tile
	 * of 64-column boxes with the 128-byte swizzle, which TMA then stores.
	 * stage_xo[j]: this thread's address of 16-byte chunk j of its first
	 * row in box 0 (the swizzle folded in); stage_box: bytes per box.
	 * NULL: straight from registers to global memory. */
	const Reg *stage_xo;
	int stage_box;
	/* Only column fragments j0 <= j < j1 (j1 = 0: all nj), staged at box
	 * (column - 8 j0) / 64: an epilogue in parts, through a staging
	 * buffer smaller than the tile (j0 a multiple of 8). */
	int j0, j1;
	/* Input stage_in - 1 (0: none) is read from the staging buffer, where
	 * TMA put its tile in the output's layout: each value at the address
	 * the output's value of that place is then written to. */
	int stage_in;
	/* The program in place of the spec's (NULL: s->epi); cut > 0: store
	 * the value of instruction cut - 1 instead of its output, and run
	 * nothing after it (the tail another warpgroup runs on the staged
	 * tile: wgmma.c wg_tail). */
	const PtxEwProg *prog;
	int cut;
	/* Inputs loaded ahead by ptx_mm_epi_prefetch (NULL: none). */
	const struct PtxMmPre *pre;
} PtxMmFrag;
/* Epilogue inputs constant along rows (a bias: row stride 0), 16-bit,
 * contiguous along n, loaded for the thread's whole fragment set before
 * the epilogue, where their latency hides behind the last MMAs: v[i][j]
 * is input i's pair at column fragment j (two values in a b32).  At most
 * PTX_PRE_REGS registers; tiles that cross n load in the epilogue. */
enum { PTX_PRE_REGS = 32 };
typedef struct PtxMmPre {
	bool on[PTX_MAX_TENSORS];
	bool all;  /* every input the program reads is on: the epilogue loads nothing */
	Reg v[PTX_MAX_TENSORS][PTX_PRE_REGS];
} PtxMmPre;
void ptx_mm_epilogue(Ptx *p, const PtxMatmulSpec *s, const PtxMmFrag *f);
/* Fills pre (nothing on where the spec or the tile rules it out); f's
 * r0, c0 and nj as the epilogue will get them.  True if any input is on. */
bool ptx_mm_epi_prefetch(Ptx *p, const PtxMatmulSpec *s, const PtxMmFrag *f, PtxMmPre *pre);
/* The m16n8 fragment layout's first row and column of this thread (warp
 * (wm, wn) of tile t, lane), for the mma.sync and FFMA kernels. */
void ptx_mm_frag_origin(Ptx *p, const PtxTile *t, Reg wm, Reg wn, Reg lane, Reg *r0, Reg *c0);
/* A shared-memory ring's stage base r += stage, wrapping at end by ring bytes. */
void ptx_ring_advance(Ptx *p, Reg r, int stage, Reg end, int ring);
/* codegen/wgmma.c */
const char *ptx_wgmma_check(const PtxMatmulSpec *s);
void ptx_emit_wgmma(Buf *b, const PtxMatmulSpec *s, PtxKernel *k);
void ptx_mbar_wait(Ptx *p, Reg addr, Reg parity);                /* spin on an mbarrier phase */
void ptx_wg_producer_entry(Ptx *p, Reg q, Reg quit, int done, int quit_l); /* a TMA producer's next entry */
void ptx_wg_desc(Ptx *p, Reg d, Reg addr, int lbo, int sbo); /* wgmma descriptor, 128-byte swizzle */
/* codegen/simt.c */
const char *ptx_simt_check(const PtxMatmulSpec *s);
void ptx_emit_simt(Buf *b, const PtxMatmulSpec *s, PtxKernel *k);

/* ---- lowering a plan to kernels and comm steps (codegen/lower.c) ----
 * Each fused group of the plan becomes one persistent kernel (a copy
 * kernel for data movement and for an all_gather's own block), its bands
 * become block-list entries (tiles, element blocks, row blocks) in plan
 * order for every rank; each comm-lane block becomes a step: waits on the
 * flags of its compute inputs, one chunk collective, a flag raise.
 * Buffers are named by IR value: a step or kernel argument is a value's
 * buffer plus an element offset (plus rank times roff); v = -1 - i names
 * result i's buffer, LARG_STAGING the launcher's staging buffer of the
 * multi-node phases (a chunk's share between them), off then in bytes. */
typedef struct LArg {
	Val v;
	int64_t off, roff;
} LArg;

enum { LARG_STAGING = -1000000 }; /* below every -1 - result */
enum { LARG_WORK = -2000000 };    /* kernel `off`'s workspace (PtxKernel.work), its own scratch */

typedef struct LKernel {
	char name[64];
	char image[64]; /* the kernel the module holds for it: its own, or an identical earlier one (codegen/module.c) */
	int site;       /* its number in the op's module: the site parameter */
	PtxKernel k;
	LArg arg[2 + 2 * PTX_MAX_TENSORS];
	int narg;
	PtxBlock **blocks; /* [rank][entry] */
	int nblocks;
	Val group;
	int64_t route_rows; /* a routed matmul (k.route): rows of an owner's block; route q's drow
	                       is (rank - q) * route_rows, its flags rank q's */
	int route_bm;       /* ... and its tile's rows */
} LKernel;

enum { LSTEP_MAXWAIT = 32 };

/* One side of an all_to_all whose P blocks are not contiguous: block q
 * starts q * stride elements into the value and is `rows` runs of `width`
 * elements, `pitch` apart.  The launcher packs them into a staging buffer
 * (block q at q * rows * width) with 2-D copies on the comm lane before
 * the collective (send side), or unpacks after it (recv side), because
 * NCCL and the copy engine move contiguous blocks.  rows == 0: none. */
typedef struct LPack {
	int64_t rows, width, pitch, stride;
} LPack;

typedef struct LStep {
	int blk;                    /* the plan's block */
	CommChunk ch;               /* send and recv are NULL: see send, recv */
	LArg send, recv;
	CommBackendKind be;
	int nwait;
	int wait_flag[LSTEP_MAXWAIT];
	uint64_t wait_mult[LSTEP_MAXWAIT]; /* waits for flags[f] >= mult * epoch */
	int raise;                  /* flag it stores the epoch into, -1 none */
	LPack pack, unpack;         /* all_to_all: send side before, recv side after */
} LStep;

typedef struct Lowered {
	const Func *f;
	const Plan *p;
	Buf ptx;          /* the op's kernels (the module's header is the caller's) */
	LKernel *kern;    /* in compute-lane order */
	int nkern;
	LStep *step;      /* in comm-lane order */
	int nstep;
	int nflags;
	Val *alias;       /* per value: the value whose buffer it is (a reshape lowered as a view,
	                     no kernel), or -1 */
	char err[512];    /* what the PTX backend cannot do, when lowering fails */
	Span where;       /* and where in the source, when not the op itself */
} Lowered;

bool ptx_lower(const Plan *p, Lowered *lo);
/* Whether every name of a comma list is a lowering tests may break on
 * purpose (Plan.lower_break, syncc --break); else the first unknown one in bad. */
bool ptx_lower_break_known(const char *names, char *bad, size_t n);
void ptx_lowered_free(Lowered *lo);

/* codegen/module.c: the file's PTX module, each distinct kernel once; an
 * op's kernel that repeats an earlier one gets that one's name as its
 * image (LKernel.image) and adds no text. */
typedef struct PtxModule {
	struct {
		char name[64];
		char *text; /* the kernel without its name */
		size_t len;
	} *k;
	int n;
} PtxModule;
void ptx_module_add(PtxModule *m, Buf *module, Lowered *lo);
void ptx_module_free(PtxModule *m);

/* codegen/host.c: the launcher C file and its header for a file's ops.
 * An op whose launcher syn_<op> libsyncrt already declares, or a PREFIX
 * whose .h no #include can name, is refused first (`why` says so). */
bool host_op_name_ok(const Func *f, char *why, size_t n);
bool host_prefix_ok(const char *prefix, char *why, size_t n);
void host_emit(Buf *c, Buf *h, const char *source, const char *prefix, Lowered *const *ops, int nops, const Buf *ptx,
               const unsigned char *cubin, size_t ncubin);

/* codegen/cubincache.c: cubins kept across compiles in $SYNCC_CACHE_DIR/cubin
 * (base/util.c: cache_dir), one file per key; SYNCC_NO_CUBIN_CACHE=1 turns it off */
typedef struct CubinKey {
	char hex[65];    /* SHA-256 of the PTX text, ptxas's --version and its flags */
	char dir[4200];  /* DIR/cubin */
	char path[4300]; /* DIR/cubin/HEX.cubin */
} CubinKey;
bool ptx_cache_key(const Buf *ptx, const char *version, char *const *flags, CubinKey *k); /* false: no cache */
bool ptx_cache_get(const CubinKey *k, unsigned char **cubin, size_t *n); /* false: a miss */
void ptx_cache_put(const CubinKey *k, const unsigned char *cubin, size_t n); /* silent when it cannot */

/* codegen/cubin.c: ptxas on a module, when ptxas can be found (a cached
 * cubin when codegen/cubincache.c has the module's) */
typedef enum PtxasResult {
	PTXAS_NONE,     /* no ptxas (or no temporary directory): no cubin, not an error */
	PTXAS_OK,       /* *cubin, *n */
	PTXAS_REJECTED, /* it read the module and refused it: log has its words (a compiler bug) */
	PTXAS_FAILED,   /* it could not run, died, or failed without a word: log says which */
} PtxasResult;
PtxasResult ptx_assemble(const Buf *ptx, unsigned char **cubin, size_t *n, char *log, size_t nlog);

#endif
