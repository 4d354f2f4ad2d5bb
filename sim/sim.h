/* sim/sim.h -- the CPU simulator (DESIGN §7): tensors on the host, the
 * oracle (sequential evaluation of an op on global tensors), SPMD
 * execution on P simulated ranks (one thread each) with collectives through
 * the `sim` communication backend, and the comparison of the two.
 * Prefix: sim_. */
#ifndef SYNCC_SIM_H
#define SYNCC_SIM_H

#include "../ir/ir.h"
#include "../comm/comm.h"

/* A host tensor.  Values are stored as doubles already rounded to the
 * dtype (bf16/f16 round-to-nearest-even, f32, i32 wrap-around), so the
 * same kernels serve every dtype and the f64 mode. */
typedef struct Tensor {
	DType dt;
	int rank;
	int64_t dim[LIM_RANK];
	int64_t n;
	double *v;
} Tensor;

/* How the CPU evaluates: GPU emulation (f32 accumulation, rounding on
 * every store) or f64 (no rounding at all, for error analysis). */
typedef enum SimMode { SIM_GPU, SIM_F64 } SimMode;

/* sim/tensor.c: tensors and the CPU kernel of every op */
Tensor sim_tensor(DType dt, int rank, const int64_t *dim); /* NaN-poisoned */
Tensor sim_tensor_of(const Type *t, bool local, int nranks);
void sim_free(Tensor *t);
double sim_round(DType dt, double x);
void sim_round_all(Tensor *t, DType as, SimMode m);
void sim_fill_random(Tensor *t, uint64_t *rng);
uint64_t sim_rng_next(uint64_t *s);
int64_t sim_offset(const Tensor *t, const int64_t *idx);
/* Every kernel writes every element of `out`, already allocated with the
 * result's shape, and rounds it to `store` (the dtype it is kept in). */
void sim_unary(Op op, const Tensor *a, Tensor *out, DType store, SimMode m);
void sim_binary(Op op, const Tensor *a, const Tensor *b, Tensor *out, DType store, SimMode m);
void sim_matmul(const Tensor *a, const Tensor *b, Tensor *out, DType store, SimMode m);
/* A 2-D matmul done elsewhere on f32 copies, accumulating in f32 (syncrun-gpu's
 * reference on a GPU for shapes the CPU loop is too slow for): C[M,N] =
 * A[M,K] B[K,N]; false when it failed, `why` says how. */
typedef struct SimMatmulHook {
	bool (*mm)(void *ctx, const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K, char *why,
	           size_t n);
	void *ctx;
} SimMatmulHook;
bool sim_matmul_hooked(const Tensor *a, const Tensor *b, Tensor *out, DType store, SimMode m, const SimMatmulHook *h,
                       char *why, size_t n);
void sim_reduce(Op op, const Tensor *a, int axis, int64_t divisor, Tensor *out, DType store, SimMode m);
void sim_transpose(const Tensor *a, int d1, int d2, Tensor *out);
/* a with its last two dims swapped, as a new tensor: the B a matmul reads
 * in place from w where the tfold pass folded transpose(w) (trans_b). */
Tensor sim_transposed(const Tensor *a);
Tensor sim_as_transposed_shape(const Tensor *a);
void sim_copy_flat(const Tensor *a, Tensor *out);
void sim_causal(const Tensor *a, int64_t k, Tensor *out); /* -inf past diagonal k of the last two dims */
void sim_slice(const Tensor *a, int axis, int64_t start, Tensor *out);
void sim_concat(const Tensor *const *parts, int n, int axis, Tensor *out);
void sim_block(const Tensor *g, int axis, int r, int nblocks, Tensor *out); /* block r along axis */
void sim_place_block(Tensor *g, int axis, int r, int nblocks, const Tensor *b);
void sim_pack(const Tensor *t, int axis, int nblocks, double *buf);   /* blocks along axis, contiguous */
Tensor sim_sub(const Tensor *t, const int64_t *lo, const int64_t *hi);  /* a box, as its own tensor */
void sim_put(Tensor *t, const int64_t *lo, const Tensor *sub);          /* and back */
void sim_unpack(const double *buf, int axis, int nblocks, Tensor *t);

/* An attention region (ir/attn.c) as the fused kernel computes it, from
 * local q [.., Sq, D], k [.., Sk, D], v [.., Sk, Dv] and the bias (NULL if
 * none; broadcast to the scores from the right): per query row, keys in
 * tiles of SIM_ATTN_TILE with a running max and sum in f32 (online
 * softmax), tiles past a causal diagonal skipped, the probabilities
 * rounded to a->pdt where they meet v; o (rounded to ost) normalised or
 * not as the region's output is, and the row max m and row sum l when
 * not NULL.  No scores are kept beyond one tile.  norescale: the wrong
 * online softmax that forgets to rescale what it has summed when the max
 * grows (a test's broken lowering). */
enum { SIM_ATTN_TILE = 64 };
void sim_attention(const Attn *a, const Tensor *q, const Tensor *k, const Tensor *v, const Tensor *bias, Tensor *o,
                   DType ost, Tensor *m, Tensor *l, bool norescale);

/* sim/comm.c: the `sim` backend, P threads meeting in shared memory */
typedef struct SimWorld SimWorld;
SimWorld *sim_world_new(int nranks, int timeout_ms);
void sim_world_free(SimWorld *w);
CommBackend *sim_backend(SimWorld *w, int rank);
CommBackend *sim_p2p_of(CommBackend *sim); /* the same rank's p2p backend (libsyncrt's protocol) */
void sim_world_drop_flag(SimWorld *w, int rank); /* tests: rank raises no arrival flag at its first p2p chunk */
bool sim_world_failed(SimWorld *w, char *why, size_t n);
void sim_abort(CommBackend *b, const char *why); /* this rank failed: every wait ends */
int sim_world_first(SimWorld *w);                /* the rank that failed first, or -1 */

/* sim/run.c: the oracle and SPMD execution */
/* Deliberately wrong lowerings, for tests (names in sim/run.c). */
enum { BR_MM_NOSLICE, BR_EW_NOSLICE, BR_AR_LOCAL, BR_RS_BLOCK, BR_AG_ORDER, BR_A2A_ORDER, BR_SHIFT_BACK,
       BR_MEAN_LOCAL, BR_SCATTER_BLOCK, BR_COMM_ORDER, BR_P2P_FLAG, BR_ATTN_NORESCALE, BR_MM_BT_IGNORED,
       BR_PUSH_RAISE, BR_PUSH_SLOT, SIM_NBREAK };
typedef struct SimBreak {
	bool on[SIM_NBREAK];
} SimBreak;
typedef struct SimOpts {
	SimMode oracle;     /* SIM_GPU, or SIM_F64 for error analysis */
	uint64_t seed;
	int timeout_ms;     /* watchdog on every wait */
	const char *breaks; /* comma-separated names of wrong lowerings (tests only) */
} SimOpts;

typedef struct SimResult {
	int nout;
	double *relerr;    /* per output: ||out - ref|| / ||ref|| */
	double *tol;       /* per output */
	char **what;       /* per output: a line describing any mismatch, or NULL */
	bool ok;
	char error[512];   /* a failure of the run itself (deadlock, comm mismatch) */
} SimResult;

Tensor *sim_inputs(const Func *f, uint64_t seed);            /* global, random */
uint64_t sim_shard_rng(uint64_t seed);                      /* sim_make_shards's generator for a run's seed */
bool sim_room(const Func *ref, const Func *run, char *why, size_t n); /* false: too large to simulate here */
bool sim_oracle(const Func *f, const Tensor *in, SimMode m, Tensor *out, char *err, size_t n);
/* The oracle with every matmul through `h` (SIM_GPU only; NULL: on the CPU). */
bool sim_oracle_hooked(const Func *f, const Tensor *in, SimMode m, const SimMatmulHook *h, Tensor *out, char *err,
                       size_t n);
bool sim_spmd(const Func *f, const Tensor *in, const SimOpts *o, Tensor *out, char *err, size_t n);
double sim_tolerance(const Func *f, int out);
void sim_compare(const Func *ref_ir, const Func *run_ir, const SimOpts *o, SimResult *r);
void sim_result_free(SimResult *r);
bool sim_break_known(const char *names, char *bad, size_t n);

/* sim/plan.c: ranks running a plan (two lanes each, flags) */
struct Plan;
bool sim_race_check(const struct Plan *p, char *why, size_t n);
bool sim_plan_run(const struct Plan *p, const Tensor *in, const SimOpts *o, int gpus, int calls, Tensor *out,
                  char *err, size_t n);
void sim_compare_plan(const Func *ref_ir, const struct Plan *p, const SimOpts *o, int gpus, SimResult *r);
/* Many plans of one op against one oracle (sim/run.c): its inputs and
 * outputs made once, by o's seed and oracle; each check as sim_compare_plan's. */
typedef struct SimOracle {
	const Func *ref_ir;
	Tensor *in, *ref; /* the random inputs, the oracle's outputs */
	bool ok;          /* false: the oracle itself failed, error says why */
	char error[512];
} SimOracle;
void sim_oracle_begin(const Func *ref_ir, const SimOpts *o, SimOracle *or);
void sim_oracle_end(SimOracle *or);
void sim_check_plan(const SimOracle *or, const struct Plan *p, const SimOpts *o, int gpus, SimResult *r);

/* internals shared by the two ways of running ranks: op by op
 * (sim/run.c) and by plan (sim/plan.c) */
typedef struct SimCtx {
	const Func *f;
	int r, P;
	CommBackend *comm;
	const SimBreak *brk;
	char err[512];
} SimCtx;
bool sim_parse_breaks(const char *names, SimBreak *b, char *bad, size_t n);
bool sim_local_compute(const Ins *in, Tensor *const *x, Tensor *out, DType st, SimMode m, int64_t meandiv);
DType sim_store_dtype(const Ins *in); /* f32 for a fused float value, else its dtype */
Tensor sim_slice_local(const Tensor *t, int axis, SimCtx *k);
void sim_make_shards(const Func *f, const Tensor *g, int pi, Tensor **shard, uint64_t *rng);
bool sim_assemble(const Func *f, int oi, Tensor *const *vals, Tensor *out, char *err, size_t n);
CommChunk sim_chunk(const Ins *in, Val v, CommOp op, const void *send, void *recv, size_t count);
bool sim_comm_call(SimCtx *k, CommChunk *c, const char *what);
bool sim_comm_call_on(SimCtx *k, CommBackend *be, CommChunk *c, const char *what);
bool sim_run_comm(SimCtx *k, Val v, const Ins *in, Tensor *x, Tensor *out);
bool sim_run_reshard(SimCtx *k, Val v, const Ins *in, Tensor *x, Tensor *out);

#endif
