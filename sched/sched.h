/* sched/sched.h -- the block IR, the cost model, the scheduler and its
 * per-rank plans (DESIGN §3.2, §4).  Prefixes: blk_ (block IR), prof_
 * (cost-model profiles), sched_ (scheduling, plans, flag check, timelines).
 *
 * Blocks are described for one rank; every rank runs the same plan on its
 * own shards (the graph is symmetric), so one schedule serves all and
 * collectives start at the same predicted time everywhere. */
#ifndef SYNCC_SCHED_H
#define SYNCC_SCHED_H

#include <stdio.h>

#include "../ir/ir.h"
#include "../comm/comm.h"

/* ---- regions: which part of a value's local index space a block touches ----
 * A region lists up to MAXBOX boxes: a collective's chunk over P ranks
 * needs one per rank (slice c of every block), so P up to 64 plans
 * exactly.  Past that, the last box covers the pieces it cannot list: a
 * read may hold more than it touches (it only waits longer), a write may
 * not (its block would claim, and compute, another's elements), so a
 * candidate whose block would write a covering box is no plan
 * (BlockGraph.inexact). */
enum { MAXBOX = 64 };

/* A box per dim: [lo, hi) shifted by rank * rot (mod the dim's size).
 * rot != 0 makes a region rank-relative: "this rank's own rows first"
 * (the MPMD stagger) with one symmetric block graph for every rank. */
typedef struct Box {
	int64_t lo[LIM_RANK], hi[LIM_RANK];
	int64_t rot[LIM_RANK];
} Box;

typedef struct Region {
	Val v;      /* the IR value (local shape) */
	int nbox;
	Box *box;   /* nbox boxes, at most MAXBOX, in the graph's arena */
	bool cover; /* the last box covers pieces not listed: more than the block touches */
} Region;

/* ---- the block IR ---- */
typedef enum Lane { LANE_COMPUTE, LANE_COMM, NLANES } Lane;

typedef enum BlkKind {
	BK_COMPUTE,  /* a band of a fused group: matmul tiles, elementwise rows, reduction rows */
	BK_COMM,     /* one chunk (and phase) of a collective */
} BlkKind;

typedef struct Blk {
	BlkKind kind;
	Lane lane;
	Val node;        /* compute: the group's anchor; comm: the collective */
	int index;       /* band or chunk number within the node */
	int nindex;      /* bands or chunks of the node */
	int phase;       /* comm: 0, or the phase of a multi-phase collective */
	int nphase;
	Region *out;     /* regions written (one per materialized value of the group) */
	int nout;
	Region *in;      /* regions read */
	int nin;
	double flops, bytes; /* work: compute flops and HBM bytes; comm: bytes per rank */
	double cost;     /* predicted µs (cost model) */
	int *succ, nsucc, *pred, npred;
	/* analysis */
	double tlevel, blevel, slack;
	/* schedule */
	double start, finish;
	int pos;         /* position in its lane's order */
	int flag;        /* flag it raises (-1: none; no successor on the other lane) */
} Blk;

/* The rows of a matmul tile of the PTX backend (codegen/matmul.c's
 * tiles): matmul bands are cut at multiples of it. */
enum { SCHED_TILE_ROWS = 128 };

/* Choices the search makes per collective and per compute group (the
 * backends: comm/backends.h). */

typedef struct NodeChoice {
	int nchunks;     /* collectives: chunks; compute groups: bands */
	int dim;         /* the dim cut (-1: the builder picks) */
	CommBackendKind backend;
	bool self_first; /* all_gather: this rank's own block is a local chunk first,
	                    and its matmul consumer starts on it (rank-relative bands) */
	int interleave;  /* compute groups: band i covers slice i of each of this many
	                    blocks of the band dim (chunk-major, to feed a reduce_scatter) */
	int align;       /* compute groups: band edges at multiples of this (a matmul's
	                    tile height, so no tile straddles two bands) */
} NodeChoice;

typedef struct BlockGraph {
	const Func *f;
	Blk *b;
	int n, cap;
	NodeChoice *choice;  /* per IR value (anchors and collectives) */
	Arena *arena;
	int nregions;
	bool over;           /* past LIM_BLOCKS or LIM_REGIONS: building stopped, no edges */
	bool inexact;        /* a block writes a covering region (Region.cover): no plan */
	bool push;           /* SchedOpts.push: the cost model and sched_push read it here */
} BlockGraph;

/* ---- cost model: a profile file per target (profiles/, docs/profiles.md) ---- */
typedef struct CurvePt {
	double bytes, us;
} CurvePt;

enum { MAXPTS = 16 };

typedef struct Profile {
	char name[64];
	char path[512];
	int sms;
	int world;                   /* ranks the comm curves were measured at */
	double matmul_tflops[DT_COUNT];
	double vector_gflops;        /* elementwise f32 */
	double hbm_gbps;
	double launch_us, flag_us, streamop_us;
	CurvePt curve[BE_COUNT][CO_COUNT][MAXPTS]; /* per backend and CommOp: time of one call */
	int npts[BE_COUNT][CO_COUNT];
	int comm_sms[BE_COUNT];      /* SMs a backend occupies while it runs */
	double inter_gbps, inter_us; /* --topo: the network between nodes */
} Profile;

/* sched/cost.c */
bool prof_load(Profile *p, const char *path, char *err, size_t n);
bool prof_find(Profile *p, const char *name_or_path, char *err, size_t n);
bool prof_locate(const char *name_or_path, char *path, size_t n); /* false: no such file */
double prof_comm_us(const Profile *p, CommBackendKind be, int op, double bytes, int nranks);
CommOp sched_comm_op(const Ins *in); /* a reshard (before autocomm) counts as an all_reduce */


/* ---- topology ---- */
typedef struct Topo {
	int nodes, gpus; /* NODESxGPUS; nodes == 1 is one NVLink domain */
} Topo;

/* sched/cost.c (continued) */
void blk_cost(const Profile *p, BlockGraph *g, const Topo *topo);

/* sched/blocks.c */
BlockGraph *blk_build(const Func *f, const NodeChoice *choice, const Topo *topo);
void blk_free(BlockGraph *g);
void blk_print(FILE *out, const BlockGraph *g);
void blk_default_choice(const Func *f, NodeChoice *choice);
bool blk_region_overlap(const Region *a, const Region *b);
int blk_abs_boxes(const Func *f, const Region *r, int rank, Box *out); /* rank's absolute boxes */
bool blk_is_self_chunk(const BlockGraph *g, const Blk *b);
const char *blk_name(const BlockGraph *g, int i, char *buf, size_t n);
int blk_band_dim(const Func *f, Val a); /* the dim group a's bands cut by default, -1 */
/* The box of member m of a group that a band of the group's space covers. */
Box blk_member_box(const Func *f, Val space, Val m, const Box *band);
int blk_a2a_dim(const Func *f, Val v); /* the dim an all_to_all's chunks slice */
Box blk_a2a_block(const Func *f, Val v, const Region *r, int side, int q); /* its block q (side 0: sent) */
bool blk_box_contiguous(const Func *f, Val v, const Box *b);
Box blk_space_box(const Func *f, Val space, Val v, const Box *vb); /* the band v's box vb lies in */

/* ---- plans ---- */
typedef struct SchedOpts {
	const Profile *prof;
	Topo topo;
	double mem_budget;   /* extra bytes in flight allowed; < 0: none set */
	double mem_pct;      /* or a percentage of the serial peak (when > 0) */
	bool force_serial;
	const char *drop_edge; /* tests: "I->J" drops one dependency edge */
	/* tests: called with every candidate the search scores */
	void (*each)(void *ctx, const NodeChoice *choice);
	void *each_ctx;
	int backend;         /* 0: the search picks; 1 + CommBackendKind: that one
	                        wherever it can (the copy engine cannot reduce or
	                        cross nodes: nccl there) -- --comm-backend */
	bool push;           /* p2p reduce_scatters may be pushed by their matmul (--push) */
	const char *lower_break; /* tests: lowerings made wrong on purpose, which codegen's own
	                            checks must refuse (syncc --break, ptx_lower_break_known) */
} SchedOpts;

typedef struct Plan Plan;
struct Plan {
	const Func *f;
	BlockGraph *g;
	int *order[NLANES];  /* block ids per lane, in execution order */
	int norder[NLANES];
	int nflags;
	double makespan;     /* predicted µs */
	double serial;       /* the serial plan's prediction */
	double ideal;        /* max(total compute, total communication) */
	double crit;         /* critical path length */
	double peak_extra;   /* bytes in flight beyond the serial plan's peak */
	double comm;         /* µs the comm lane is busy */
	double compute;      /* µs of compute blocks (the compute lane's work) */
	double exposed;      /* µs of it with nothing on the compute lane (not hidden) */
	bool is_serial;
	int sms;             /* the profile's SMs */
	int compute_sms;     /* SMs the compute kernels may occupy */
	bool share_sms;      /* a collective runs beside a compute kernel: the
	                        kernels leave the backend its SMs (compute_sms) */
	char why[4096];      /* --explain: why this plan */
	int tried;           /* plans the search scored */
	/* codegen choices --tune measures (0: codegen's own) */
	int tile;            /* 1 + the matmul tile (codegen's ptx_tiles) of every matmul */
	int grid_sms;        /* SMs the persistent kernels may take */
	int flag_base;       /* where its flags start in a context's array (each
	                        candidate its own range, so no epoch meets another's) */
	Topo topo;           /* what it was planned for: an all_reduce's phases
	                        run on the levels of its nodes x gpus */
	const char *lower_break; /* SchedOpts.lower_break */
};

/* sched/list.c: critical path and list scheduling on the cost model */
void sched_levels(BlockGraph *g);
double sched_list(BlockGraph *g, Plan *p, const Profile *prof, bool serial);
bool sched_comm_feeds_compute(const BlockGraph *g); /* then kernels spin while a collective runs */
/* comm-lane µs not under compute, each piece handed to `each`; busy: all comm µs */
double sched_exposed(const Plan *p, double *busy, void (*each)(void *ctx, double from, double to), void *ctx);

/* sched/search.c */
Plan *sched_plan(const Func *f, const SchedOpts *o);
Plan *sched_plan_for(const Func *f, const SchedOpts *o, const NodeChoice *choice); /* a given candidate */
/* Whether reduce_scatter v runs as an epilogue push on p2p: the matmul
 * that makes its input stores each finished tile straight into the
 * owner's slot for this rank (a peer's memory), so the owner only adds
 * its P slots, locally.  Its input is a 2-D matmul's only stored value,
 * read by nothing else, scattered along its rows in whole 128-row tiles
 * per rank, 16-bit with 16-byte rows (the Hopper kernel's staged tile);
 * on one node, unless --no-push (docs/codegen.md); sched_push_why says
 * why not. */
bool sched_push(const Plan *p, Val v);
bool sched_push_of(const BlockGraph *g, const Topo *topo, Val v); /* the same, before a plan exists */
const char *sched_push_why(const BlockGraph *g, const Topo *topo, Val v); /* NULL if pushed, else why not */
bool sched_choice_plannable(const Func *f, const SchedOpts *o, const NodeChoice *ch); /* sched_plan_for may take it */
void sched_plan_free(Plan *p);

/* sched/tune.c: --tune's candidates, the search's distinct plans by
 * prediction; ch NULL is the plan sched_plan picks (it may be serial) */
typedef struct TuneCand {
	NodeChoice *ch;      /* f->nins choices, or NULL: the search's own plan */
	double predicted;    /* µs, the cost model */
} TuneCand;
int sched_tune_candidates(const Func *f, const SchedOpts *o, int max, TuneCand **out);
void sched_tune_free(TuneCand *c, int n);
bool sched_choice_same(const NodeChoice *a, const NodeChoice *b, int n);
void sched_plan_key(const Plan *p, Buf *b); /* what running p does, as text: equal keys run the same */
void sched_choice_text(const Func *f, const NodeChoice *ch, Buf *b);       /* one line, for the cache */
bool sched_choice_parse(const Func *f, const char *text, NodeChoice *ch); /* false: not this op's */
void sched_choice_describe(const Func *f, const NodeChoice *ch, Buf *b);   /* for people */

/* sched/flags.c: flags on cross-lane edges and the static protocol check */
void sched_assign_flags(Plan *p);
bool sched_check_flags(const Plan *p, const Profile *prof, char *why, size_t n);

/* ---- measured timelines: a Chrome trace read back (sched/mtrace.c) ---- */
typedef struct MEvent {
	int pid, tid;        /* rank, lane */
	double ts, dur;      /* µs from the start of the call */
	char name[48], cat[16];
} MEvent;

typedef struct Measured {
	MEvent *ev;          /* the last call's "X" events, by start */
	int n, cap;
	int nranks;          /* 1 + the largest pid */
	double span;         /* µs from its first start to its last end */
	char path[512];
	char kind[128];      /* otherData's "kind" or "source" */
} Measured;

bool sched_read_trace(const char *path, Measured *m, char *err, size_t n);
void sched_measured_free(Measured *m);

/* sched/print.c: --emit=plan, --explain, --emit=timeline, traces; sched/svg.c: SVG */
const char *sched_plan_kind(const Plan *p); /* "serial", "overlapped" or "not overlapped" */
void sched_plan_changes(const Plan *p, char *buf, size_t n); /* what differs from the serial plan */
void sched_print_plan(FILE *out, const Plan *p);
void sched_explain(FILE *out, const Plan *p);
void sched_timeline(FILE *out, const Plan *p, int nranks, int width);
void sched_trace_json(FILE *out, const Plan *const *plans, int nplans, int nranks);
void sched_svg(FILE *out, const Plan *const *plans, int nplans, int nranks, const Measured *m /* NULL: none */);

#endif
