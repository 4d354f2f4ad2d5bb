/* ir/ir.h -- types and placements, the graph IR, semantic analysis (which
 * builds the IR from the syntax tree), the verifier and the printers.
 * Prefixes: ty_, pl_, ir_, sema_, unit_. */
#ifndef SYNCC_IR_H
#define SYNCC_IR_H

#include "../comm/comm.h"
#include "../parser/ast.h"

/* ---- dtypes: one table in ir/type.c ---- */
typedef enum DType { DT_F32, DT_F16, DT_BF16, DT_I32, DT_COUNT } DType;

typedef struct DTypeInfo {
	const char *name; /* in the language */
	int size;         /* bytes */
	const char *ptx;  /* storage type in PTX */
	double eps;       /* unit roundoff, for tolerances */
} DTypeInfo;
extern const DTypeInfo ty_dtypes[DT_COUNT];

/* ---- placements (DESIGN §2.3) ---- */
typedef enum PlaceKind { PL_REPL, PL_SPLIT, PL_PARTIAL } PlaceKind;
typedef enum RedOp { RED_SUM, RED_MAX, RED_MIN } RedOp;
extern const char *const pl_rednames[3];

typedef struct Place {
	PlaceKind kind;
	int dim;    /* PL_SPLIT: the global dim cut into P blocks */
	RedOp red;  /* PL_PARTIAL: how ranks' values combine */
} Place;

typedef struct Type {
	DType dt;
	int rank;
	int64_t dim[LIM_RANK]; /* global shape */
	Place pl;
} Type;

/* ir/type.c */
bool ty_dtype_byname(const char *s, DType *dt);
bool pl_eq(Place a, Place b);
bool ty_same_shape(const Type *a, const Type *b);
int64_t ty_numel(const Type *t);           /* global elements */
int64_t ty_local_dim(const Type *t, int d, int nranks);
int64_t ty_local_numel(const Type *t, int nranks);
void ty_local_shape(const Type *t, int nranks, int64_t *out);
void pl_print(Buf *b, Place p);
void ty_print(Buf *b, const Type *t);      /* bf16[8, 4] @split(0) */
void ty_print_shape(Buf *b, int rank, const int64_t *dim);

/* ---- the graph IR: SSA values in topological order ---- */
typedef enum Op {
#define O(name, text, arity, cls, flags) OP_##name,
#include "ops.h"
#undef O
	OP_COUNT
} Op;

typedef enum OpClass {
	OC_INPUT, OC_CONST, OC_UNARY, OC_BINARY, OC_MATMUL, OC_REDUCE,
	OC_SHAPE, OC_COMM, OC_RESHARD
} OpClass;

enum { OF_EW = 1, OF_LINEAR = 2, OF_SFU = 4 };

typedef struct OpInfo {
	const char *name;
	int arity;
	OpClass cls;
	int flags;
} OpInfo;
extern const OpInfo ir_ops[OP_COUNT];

typedef int Val; /* index of an Ins in its Func */

typedef struct Ins {
	Op op;
	Type ty;
	Val *arg;
	int narg;
	int axis, axis2;  /* reductions, slice, concat, collectives, transpose */
	int64_t a, b;     /* PARAM: index; SLICE: start, len; SHIFT: k */
	RedOp red;        /* ALL_REDUCE, REDUCE_SCATTER */
	double c;         /* CONST */
	bool autoins;     /* inserted by the compiler, not written */
	Sym name;         /* the `let` or argument name, for printing */
	Span span;
	Val group;        /* fusion: the value that anchors this one's kernel (itself if none) */
	bool internal;    /* fusion: kept in registers, never stored; only its group reads it */
	Val attn;         /* the second matmul of the attention region this value is in, or -1 */
	bool trans_b;     /* MATMUL: arg[1] is B with its last two dims swapped (B = transpose(arg[1])),
	                     read in place, K-major (the tfold pass) */
} Ins;

typedef struct Func Func;
struct Func {
	Sym name;
	int nranks;
	Ins *ins;
	int nins, cap;
	Val *in;          /* PARAM values in signature order */
	int nin;
	Val *out;         /* returned values */
	Type *outty;      /* declared result types */
	int nout;
	Span span;
	Arena *arena;
	Func *sema;       /* the IR as sema made it, kept for the oracle (or NULL) */
	Func *next;
};

/* ir/ir.c */
Func *ir_func_new(Sym name, int nranks, Span sp);
void ir_func_free(Func *f);
Val ir_add(Func *f, Op op, Type ty, const Val *arg, int narg, Span sp);
Func *ir_clone(const Func *f);
void ir_print(FILE *out, const Func *f);
bool ir_verify(const Func *f, const char *after); /* false + ICE message */
const char *ir_opname(const Ins *in, char *buf, size_t n); /* all_reduce.sum */
CommOp ir_comm_op(Op op); /* a collective's CommOp; anything else is an internal error */
/* The local form of an op on a rank: the dim of a @repl operand sliced to
 * the rank's block, because the other side (or the result) is split
 * there; -1 for none (sim/ and codegen/ both follow it). */
void ir_mm_slices(const Func *f, const Ins *in, int sl[2]);
/* A matmul's B as the product sees it: arg[1]'s type, its last two dims
 * swapped where the matmul reads it transposed (trans_b).  ir_mm_slices'
 * and every B box are in its dims; ir_mm_bdim maps one of them to
 * arg[1]'s. */
Type ir_mm_btype(const Func *f, const Ins *in);
int ir_mm_bdim(const Ins *in, int d, int rank); /* rank: arg[1]'s; d < 0 stays */
int ir_ew_slice(const Func *f, const Ins *in, int i);
/* A reduction whose dim has one element on each rank (a literal size 1,
 * or a split dim of size P): per rank it is elementwise -- sum, amax and
 * amin are the element, mean the element over the global length -- so it
 * fuses, bands and lowers as elementwise work, never as a row group (whose
 * rows would be one element long). */
bool ir_reduce_ew(const Func *f, const Ins *in);
/* A reshape that can be a view (codegen/lower.c reshape_view; the cost
 * model prices it at nothing): its local elements are its operand's in
 * order, so it shares the operand's buffer where no collective produces
 * the operand or reads the reshape (the comm lane would wait for its
 * kernel); as the op's result (once), the operand is stored straight into
 * the caller's buffer instead, which needs an operand computed in the op,
 * returned no other way, and read by no collective (backends may need
 * their buffers in syn_alloc memory).  Lowering also needs no flag on its
 * blocks. */
bool ir_view_reshape(const Func *f, Val v);

/* ir/pass.c: graph passes, in pipeline order */
typedef struct PassInfo {
	const char *name;
	void (*run)(Func *f);
	bool required; /* the simulator can run the IR without it if false */
} PassInfo;
extern const PassInfo ir_passes[];
extern const int ir_npasses;
void pass_autocomm(Func *f);
void pass_arsplit(Func *f);
int ir_arsplit_one(Func *f, Val y); /* split all_reduce y wherever it can (the cost model's candidate):
                                       the ops of its region (0: bare), -1: it cannot */
void pass_dce(Func *f);
/* tfold: a matmul whose B is transpose(w) of the last two dims reads w in
 * place, K-major (trans_b), where w's rows are whole 16-byte runs of a
 * 16-bit dtype -- what the wgmma path reads by TMA (codegen/wgmma.c takes
 * at least these); the transpose is left to dce.  Not the first matmul of
 * an attention region, whose kernel reads k K-major itself. */
enum { IR_TFOLD_ALIGN = 8 }; /* elements per row of A and w, and of K, a multiple of this */
void pass_tfold(Func *f);
/* solo: at P = 1 every collective is the identity; each becomes a reshape
 * to its own type, which lowering makes a view of its operand (no kernel,
 * no comm lane, no SMs held back for one), or the copy into the op's
 * result where it is one. */
void pass_solo(Func *f);
/* headsum: sum(a @ w, 0) over the batch of a batched matmul -- the heads
 * of an attention output projection, a [NB, S, D] @ w [NB, D, H] -- as
 * one matmul contracting NB x D: reshape(transpose(a, 0, 1), [S, NB * D])
 * @ reshape(w, [NB * D, H]), not NB products of S x H summed through HBM.
 * Both operands batched over dim 0 alike (both split there, or both
 * @repl), 16-bit, the product read by the sum alone. */
void pass_headsum(Func *f);

/* ir/fuse.c: the fuse pass and what a fused group is.  The limits are the
 * PTX backend's (codegen/codegen.h checks that it takes at least these). */
enum {
	FUSE_MAX_TENSORS = 8, /* inputs, or outputs, of one fused kernel */
	FUSE_MAX_INS = 64,    /* instructions of one elementwise program */
	FUSE_MAX_STAGES = 4,  /* reductions in one row group */
};
void pass_fuse(Func *f);

/* A group with reductions (a row group): every member is per element of
 * `space`'s shape or per row (that shape with dim `axis` 1); stage k is
 * the reduction stage[k], and res[k] the value it hands on to what comes
 * after its per-row work (the reduction itself, or the one per-row value
 * read later). */
typedef struct RowGroup {
	Val space;
	int axis;
	int nstage;
	Val stage[FUSE_MAX_STAGES];
	Val res[FUSE_MAX_STAGES];
} RowGroup;
/* 1 and rg filled (stage_of[v]: the stage of per-row member v, the latest
 * reduction it depends on, or -1) if group a is a row group that the row
 * kernel can run; 0 if it has no reduction; -1 with *why if it cannot. */
int ir_rowgroup(const Func *f, Val a, RowGroup *rg, int *stage_of, const char **why);
/* The value whose shape group a iterates over: a row group's rows (the
 * first reduction's operand; *axis its reduced dim), else a (*axis -1). */
Val ir_group_space(const Func *f, Val a, int *axis);
/* u's local layout as {per row, per column} strides in elements (0:
 * stretched), if the row index can address it. */
bool ir_row_strides(const Func *f, const RowGroup *rg, Val u, int64_t st[2]);

/* ir/attn.c: attention regions.  A region is matmul(q, transpose(k)) ->
 * casts, positive scales, a bias, a causal mask -> softmax over the keys
 * (the last dim) -> matmul with v, its probabilities divided by the row
 * sum before the second matmul (normed) or not; it exports the output,
 * the row max and the row sum (if written), and nothing else. */
enum { ATTN_MAX_MEMBERS = 32 };
typedef struct Attn {
	Val q, k, v, bias;   /* bias: -1 if none; k as [.., Sk, D] (the transpose's operand) */
	Val mm1, mm2, max, sum; /* sum: -1 if the program has none */
	double scale;        /* of q @ transpose(k), before the bias */
	bool causal;         /* keys past query row + diag are masked */
	int64_t diag;
	bool normed;         /* mm2 is the normalised output (else the unnormalised one) */
	DType pdt;           /* the dtype the probabilities meet v in */
	Val mem[ATTN_MAX_MEMBERS];
	int nmem;
} Attn;
bool ir_attn_match(const Func *f, Val mm2, Attn *a); /* mm2 ends a region: a filled */
void pass_attn(Func *f); /* marks regions; those the fused kernel runs become one group */
/* Why the fused kernel cannot run region a (into buf), or NULL. */
const char *ir_attn_unfused_why(const Func *f, const Attn *a, char *buf, size_t n);
/* The second matmul of the fused attention region that group a is, or -1. */
Val ir_attn_group(const Func *f, Val a);
void ir_attn_print(Buf *b, const Func *f, Val mm2);

/* ---- a compilation unit: the files, their ops, the options ---- */
typedef enum AutoComm { AC_DEFAULT, AC_ON, AC_OFF } AutoComm;

typedef struct Define {
	const char *name, *value;
} Define;

typedef struct Options {
	int nranks;
	const char *entry;    /* NULL: every op of the main file */
	const char **incdirs; /* -I, in order */
	int nincdirs;
	const char *libdir;   /* stdlib/ beside the binary */
	const char *sharedir; /* the installed share dir */
	Define *defines;
	int ndefines;
	AutoComm autocomm;
} Options;

typedef struct Unit {
	Options opt;
	Arena *arena;        /* syntax trees and unit-lifetime data */
	Module *modules;     /* main file first */
	Func *funcs;         /* one per entry op, in source order */
	char **texts;        /* source buffers, freed with the unit */
	int ntexts;
	Module *stdlib;      /* the standard library's modules, read only for hints */
	bool stdlib_read;
	/* the loader's (ir/unit.c) */
	int nfiles;          /* files read through `use`, the main one included */
	struct {
		Module *m[LIM_FILES + 2];
		int n;
	} loading;           /* the files being loaded, outermost first: a cycle is a path in it */
} Unit;

/* ir/unit.c */
Unit *unit_new(const Options *opt);
bool unit_load(Unit *u, const char *path); /* parses the file and its uses */
bool unit_load_text(Unit *u, const char *path, char *text, size_t len);
void unit_free(Unit *u);
Sym unit_stdlib_home(Unit *u, Sym name); /* the stdlib module defining op or kernel `name`, or 0 */

/* ir/sema.c: checks the unit and builds one Func per entry op; returns
 * EXIT_OK, EXIT_INPUT (errors in the input) or EXIT_USAGE (a bad -D). */
int sema_unit(Unit *u);

/* ---- internals shared by ir/sema.c and ir/rules.c ----
 * Elaboration is abstract interpretation of the entry op: calls are
 * inlined, `for` is unrolled, constants are folded, and every tensor
 * expression becomes one IR value whose type the placement table decides. */
typedef enum SVKind {
	SV_ERR,    /* an error was reported: stay quiet about this value */
	SV_TENSOR, /* an IR value */
	SV_INT,    /* compile-time integer (sizes, literals, loop variables) */
	SV_FLOAT,  /* compile-time number */
	SV_DTYPE,  /* a dtype (cast's argument, dtype params) */
	SV_RED,    /* the reduction names sum, max, min (i = RedOp) */
	SV_TUPLE,  /* results of an op with several */
	SV_LIST,   /* [a, b, ..] (reshape's shape) */
} SVKind;

typedef struct SVal SVal;
struct SVal {
	SVKind k;
	Val v;       /* SV_TENSOR */
	int64_t i;   /* SV_INT */
	double f;    /* SV_FLOAT (and SV_INT's value as a double) */
	DType dt;    /* SV_DTYPE */
	SVal *elem;  /* SV_TUPLE, SV_LIST */
	int n;
	Span span;   /* the expression it came from */
};

typedef struct ModEnv ModEnv;
typedef struct Sema {
	Unit *u;
	Func *f;       /* the entry op being built */
	int nranks;
	bool autocomm; /* --auto-comm: insert collectives anywhere */
	bool kernel;   /* inside a kernel body: elementwise only */
	Arena *tmp;    /* scopes and tuples of the op being elaborated */
	/* the unit's, from sema_unit to its end (ir/sema.c) */
	ModEnv *envs;  /* what each file defines, the main file first */
	Sym nranks_name, sum_name, max_name, min_name; /* the predefined names */
	int unrolled;  /* `for` iterations of the entry op so far */
	int steps;     /* statements and calls elaborated for the whole unit */
	bool stopped;  /* LIM_STEPS reached: elaborate nothing more */
	/* the calls' (ir/call.c) */
	Node **recursive; /* definitions already reported as recursive */
	int nrecursive;
	int chain, chain_for; /* "in this call" notes given since diag_printed() was chain_for */
} Sema;

/* ---- the elaborator's own state, shared by ir/sema.c and ir/call.c ---- */
typedef enum BindKind { B_LET, B_ARG, B_SIZE, B_LOOP, B_PARAM } BindKind;

typedef struct Bind Bind;
struct Bind {
	Sym name;
	BindKind kind;
	SVal val;
	bool refused; /* a re-binding failed: uses of it are quietly in error (val keeps its type) */
	Span span;
	Bind *next;   /* the frame's bindings, newest first */
	Bind *shadow; /* the binding of the same name that this one hides */
};

/* What one file defines. */
struct ModEnv {
	Module *m;
	SymMap defs;    /* op and kernel nodes */
	SymMap params;  /* Bind * */
	ModEnv *next;
};

/* One op or kernel body being elaborated.  `scope` lists its bindings
 * (a `for` body drops the ones it made); `names` finds a name's newest
 * binding in constant time, so long bodies stay linear. */
typedef struct Frame Frame;
struct Frame {
	ModEnv *me;
	Node *fn;
	Bind *scope;
	Frame *up;
	int depth;
	struct {
		Sym *key;
		Bind **val; /* NULL: the name was bound in a scope that ended */
		uint32_t n, cap;
	} names;
};

/* ir/sema.c */
const char *sv_what(SVal x);                     /* "a tensor", "an integer", ... */
SVal sema_eval(Sema *s, Frame *fr, Node *n);
bool sema_int(Sema *s, Frame *fr, Node *n, const char *what, int64_t *out);
Bind *sema_bind(Sema *s, Frame *fr, Sym name, BindKind k, SVal v, Span sp);
Bind *sema_local(Frame *fr, Sym name);          /* the newest binding, or NULL */
bool sema_predefined(const Sema *s, Sym name);   /* nranks, sum, max, min */
Node *sema_free_name(const Sema *s, Frame *fr, Node *e); /* a name nothing binds, or NULL */
bool sema_dtype(Sema *s, Frame *fr, Node *tn, DType *dt);
bool sema_place(Sema *s, Frame *fr, Node *pn, int rank, Place *out);
bool sema_step(Sema *s, Span sp);                /* false once LIM_STEPS is reached */
ModEnv *sema_env(const Sema *s, int file);
SVal sema_run_body(Sema *s, Frame *fr, Node *op);
SVal sema_check_result(Sema *s, Frame *fr, Node *rt, SVal r, bool entry, Type *out);

/* ir/call.c */
SVal sema_call_op(Sema *s, Frame *caller, Node *op, SVal *args, int nargs, Span sp);
SVal sema_call_kernel(Sema *s, Frame *caller, Node *k, SVal *args, int nargs, Span sp);
void sema_calls_done(Sema *s);

/* ir/rules.c: the placement table and the typing of every builtin */
SVal rule_binary(Sema *s, int op, SVal a, SVal b, Span sp);
SVal rule_unary(Sema *s, Op op, SVal a, Span sp);
SVal rule_matmul(Sema *s, SVal a, SVal b, Span sp);
bool rule_is_builtin(Sym name);
const char *rule_builtin_name(size_t i); /* NULL after the last */
SVal rule_builtin(Sema *s, Sym name, SVal *args, int nargs, Span sp);
SVal rule_reshard(Sema *s, SVal x, Place to, Span sp, const char *why);
SVal rule_fill(Sema *s, SVal c, const SVal *like, int n, Span sp);
bool rule_can_reshard(const Type *t, Place to, int nranks);
void rule_operand_text(Buf *b, Span sp, const char *fallback); /* the source of an operand, for notes */
void rule_repl_note(Sema *s, SVal x); /* "all_reduce(y, sum) would make it @repl" */
bool rule_to_repl(Sema *s, SVal *x);  /* --auto-comm: x made @repl (true), else false */
SVal sv_err(void);
SVal sv_int(int64_t i, Span sp);
SVal sv_float(double f, Span sp);
SVal sv_tensor(Val v, Span sp);
const Type *sv_type(Sema *s, SVal x);
bool check_shape(Sema *s, Type *t, Span sp);

#endif
