/* tools/driver.h -- what syncc and syncrun share: the command line, the
 * pipeline in one function, and writing outputs atomically.
 * Prefix: drv_. */
#ifndef SYNCC_DRIVER_H
#define SYNCC_DRIVER_H

#include <stdio.h>

#include "../ir/ir.h"
#include "../sched/sched.h"

/* What --emit prints; each names a stage of the pipeline. */
typedef enum Emit {
	EMIT_DEFAULT,
	EMIT_TOKENS,
	EMIT_AST,
	EMIT_IR,
	EMIT_SIGNATURE, /* every op's arguments and results, JSON (for the Python package) */
	EMIT_BLOCKS,
	EMIT_PLAN,
	EMIT_TIMELINE,
	EMIT_PTX,
	EMIT_HOST,
	EMIT_CODE,  /* the default of syncc: PREFIX.ptx, PREFIX.c, PREFIX.h */
} Emit;

enum { LIM_GPUS = 64 }; /* --gpus: GPUs one process drives */

typedef struct Driver {
	const char *tool;    /* "syncc" or "syncrun" */
	const char *input;   /* file or "-" */
	const char *output;  /* -o, NULL = stdout */
	Emit emit;
	DiagFormat diag;
	const char *dump;    /* -d: comma-separated pass names, or "all" */
	Options opt;
	Arena *mem;          /* strings made from the command line */
	bool help;           /* --help was given */
	const char *nopass;  /* --no-pass: comma-separated passes not to run */
	bool keep_sema;      /* keep the IR as sema made it (Func.sema) */
	/* scheduling */
	const char *profile; /* --profile NAME|FILE */
	double mem_budget;   /* --mem-budget BYTES (-1: none) */
	double mem_pct;      /* --mem-budget PCT% */
	Topo topo;           /* --topo NODESxGPUS */
	bool explain, serial, need_plans;
	int backend;            /* --comm-backend: 0 any, 1 + CommBackendKind */
	bool push;              /* p2p reduce_scatters after a matmul pushed by it (sched_push); --no-push clears it */
	const char *drop_edge;
	const char *trace, *svg; /* --trace FILE.json, --timeline-svg FILE.svg */
	const char *measured;    /* --measured FILE.json: a measured trace drawn in the SVG */
	Profile prof;
	Plan **plans;        /* one per Func of the unit, in order */
	int nplans;
	Buf *split_why;      /* one per Func, in order: --explain's all_reduce split decisions */
	int nsplit_why;
	/* syncrun */
	bool sim;
	bool f64;
	bool interp;         /* run the IR op by op instead of the plan */
	bool all_plans;      /* run every plan the search scored */
	bool tune;           /* --tune: time the best candidates, keep the fastest (tools/tune.c) */
	double tune_budget;  /* --tune-budget SECONDS per op (0: TUNE_BUDGET_S) */
	const char *tune_picks; /* syncc --tune: the file syncrun-gpu named its picks in */
	int bench;           /* --bench N */
	bool nocheck;        /* --no-check */
	bool drop_flag;      /* --drop-flag (tests): the lowering drops one comm raise */
	const char *dumpdir; /* --dump-outputs DIR: every rank's outputs, raw */
	int gpus[LIM_GPUS];  /* --gpus LIST: rank r on local GPU gpus[r] */
	int ngpus;           /* 0: no --gpus (rank r on GPU r) */
	const char *calibrate;   /* --calibrate PROFILE: measure, write PROFILE */
	const char *cal_samples; /* --calibrate-from-samples SAMPLES (tests): fit and write --calibrate's file */
	const char *breaks;
	int timeout_ms;
	uint64_t seed;
	bool seed_set;
} Driver;

/* An option of the command line (table in tools/driver.c). */
typedef enum OptId {
	OPT_OUT, OPT_RANKS, OPT_DEFINE, OPT_INCLUDE, OPT_ENTRY, OPT_EMIT, OPT_DIAG,
	OPT_AUTOCOMM, OPT_NOAUTOCOMM, OPT_DUMP, OPT_VERSION, OPT_HELP,
	OPT_SIM, OPT_SEED, OPT_NOPASS, OPT_F64, OPT_BREAK, OPT_TIMEOUT,
	OPT_PROFILE, OPT_MEMBUDGET, OPT_TOPO, OPT_EXPLAIN, OPT_SERIAL, OPT_DROPEDGE, OPT_TRACE, OPT_SVG,
	OPT_INTERP, OPT_ALLPLANS, OPT_S, OPT_BENCH, OPT_NOCHECK, OPT_DROPFLAG, OPT_DUMPOUT,
	OPT_GPUS, OPT_CALIBRATE, OPT_CALSAMPLES, OPT_COMMBE, OPT_MEASURED, OPT_TUNE, OPT_TUNEBUDGET, OPT_PUSH, OPT_NOPUSH,
} OptId;

/* tools/driver.c */
int drv_args(Driver *d, int argc, char **argv, const OptId *allowed, int nallowed, const char *usage);
int drv_compile(Driver *d, Unit **unit, Buf *out);
int drv_codegen(Driver *d, Unit *u, const char *prefix); /* d->plans as PREFIX.{ptx,c,h} */
bool drv_write(const char *path, const Buf *b);
bool drv_write_all(const char *const *paths, const Buf *const *bufs, int n);
void drv_crash_handler(void);
const char *drv_libdir(void);
void drv_print_passes(FILE *f);
void drv_free(Driver *d);

/* tools/calib.c: --calibrate's measurements (a samples file) fitted and
 * written as a profile (docs/profiles.md) */
typedef struct CalSample {
	char key[16];   /* matmul, copy, vector, launch, streamop, flag, comm, ... */
	char a[24], b[24]; /* matmul: dtype; comm: backend and op */
	double x[4];    /* the numbers of the line, US last */
	int nx;
	int line;
} CalSample;
typedef struct CalSamples {
	char name[64], base[512], device[256];
	int sms, world;
	int commsms[BE_COUNT]; /* -1: not given */
	int commsms_line[BE_COUNT];
	CalSample *s;
	int n, cap;
} CalSamples;
bool cal_parse(CalSamples *c, const char *text, const char *path, char *err, size_t n);
void cal_add(CalSamples *c, const char *key, const char *a, const char *b, const double *x, int nx);
void cal_samples_text(const CalSamples *c, Buf *out);
bool cal_profile(const CalSamples *c, const Profile *base, Buf *out, char *err, size_t n);
int cal_write(const CalSamples *c, const char *out); /* an exit status */
void cal_free(CalSamples *c);
int cal_from_samples(const char *samples, const char *out);
int cal_check_dest(const char *profile); /* an exit status: EXIT_OK if PROFILE's directory takes files */
bool cal_write_samples(const CalSamples *c, const char *profile, bool partial);

/* tools/tune.c: --tune (docs/scheduler.md, "Measured tuning").  A
 * candidate is a plan of the search with, at P = 1 on GPUs, a matmul tile
 * or an SM share of the code generator; each is run and checked, the
 * fastest that passed is kept and cached under SYNCC_CACHE_DIR, keyed by
 * the op (its IR), shapes, ranks, topology, profile and device. */
enum { TUNE_MAX_PLANS = 6, TUNE_CALLS = 5 };
#define TUNE_BUDGET_S 5.0

typedef struct TunePick {
	NodeChoice *ch;   /* NULL: the search's own plan */
	int tile;         /* 0: codegen's default, else 1 + ptx_tiles index */
	int sms;          /* 0: every SM the kernels would take */
} TunePick;

typedef enum TuneState { TS_NOTRUN, TS_OK, TS_FAILED, TS_REFUSED } TuneState;

typedef struct TuneRow {
	TunePick pick;
	char what[320];   /* for people */
	double predicted; /* µs, the cost model */
	double measured;  /* µs, median of TUNE_CALLS calls (slowest rank); < 0: none */
	TuneState state;
	char why[240];    /* a failure's or refusal's words */
} TuneRow;

typedef struct TuneSet {
	TuneRow *row;
	int n;
	int repeats;       /* candidates not run: each ran as an earlier one would (sched_plan_key) */
	int pick;          /* the kept row, -1: none passed */
	bool measured;     /* times are measured (else PREDICTED) */
	bool cached;       /* the pick came from the cache */
	char path[4200];   /* the cache file ("" with no cache) */
	char device[256];
	Buf key;
} TuneSet;

void tune_begin(Driver *d, Func *f, const char *device, bool codegen, TuneSet *s);
Plan *tune_plan(Driver *d, Func *f, const TunePick *k);
bool tune_injected(int i);              /* SYNCC_TUNE_FAIL lists candidate i (tests) */
bool tune_over_budget(const Driver *d, double started);
double tune_now(void);
int tune_finish(Driver *d, Func *f, TuneSet *s); /* picks, caches, reports; an exit status */
void tune_free(TuneSet *s);
Plan *tune_picked_plan(Driver *d, Func *f); /* syncc --tune: the pick syncrun-gpu made, NULL: none */
int tune_with_gpus(Driver *d);              /* syncc --tune: syncrun-gpu measures; an exit status */

#endif
