/* ir/ops.h -- every graph-IR op, once (QBE's ops.h habit).
 * O(NAME, "text", arity, class, flags)
 *   arity  -1 = variadic (concat)
 *   class  how sema types it and how the oracle and simulator run it
 *   flags  OF_LINEAR: commutes with a sum over ranks, so @partial(sum)
 *          passes through it; OF_EW: elementwise (fusable); OF_SFU: a
 *          special function (the SMs' special-function units, an eighth
 *          of their add and multiply rate: sched/cost.c prices it so)
 * The collectives' rows come from comm/colls.h, in its order. */
O(PARAM,          "param",          0, OC_INPUT,   0)
O(CONST,          "const",          0, OC_CONST,   OF_EW)
/* unary elementwise */
O(NEG,            "neg",            1, OC_UNARY,   OF_EW | OF_LINEAR)
O(EXP,            "exp",            1, OC_UNARY,   OF_EW | OF_SFU)
O(LOG,            "log",            1, OC_UNARY,   OF_EW | OF_SFU)
O(SQRT,           "sqrt",           1, OC_UNARY,   OF_EW | OF_SFU)
O(RSQRT,          "rsqrt",          1, OC_UNARY,   OF_EW | OF_SFU)
O(TANH,           "tanh",           1, OC_UNARY,   OF_EW | OF_SFU)
O(SIGMOID,        "sigmoid",        1, OC_UNARY,   OF_EW | OF_SFU)
O(ABS,            "abs",            1, OC_UNARY,   OF_EW)
O(CAST,           "cast",           1, OC_UNARY,   OF_EW | OF_LINEAR)
/* binary elementwise, numpy broadcasting */
O(ADD,            "add",            2, OC_BINARY,  OF_EW)
O(SUB,            "sub",            2, OC_BINARY,  OF_EW)
O(MUL,            "mul",            2, OC_BINARY,  OF_EW)
O(DIV,            "div",            2, OC_BINARY,  OF_EW)
O(MAX,            "max",            2, OC_BINARY,  OF_EW)
O(MIN,            "min",            2, OC_BINARY,  OF_EW)
/* contraction and reductions (keep the reduced dim with size 1) */
O(MATMUL,         "matmul",         2, OC_MATMUL,  OF_LINEAR)
O(SUM,            "sum",            1, OC_REDUCE,  OF_LINEAR)
O(MEAN,           "mean",           1, OC_REDUCE,  OF_LINEAR)
O(AMAX,           "amax",           1, OC_REDUCE,  0)
O(AMIN,           "amin",           1, OC_REDUCE,  0)
/* data movement inside a rank */
O(TRANSPOSE,      "transpose",      1, OC_SHAPE,   OF_LINEAR)
O(RESHAPE,        "reshape",        1, OC_SHAPE,   OF_LINEAR)
O(SLICE,          "slice",          1, OC_SHAPE,   OF_LINEAR)
O(CONCAT,         "concat",        -1, OC_SHAPE,   OF_LINEAR)
O(SCATTER,        "scatter",        1, OC_SHAPE,   0)  /* @repl -> @split(d): keep own block, no traffic */
O(BROADCAST,      "broadcast",      1, OC_SHAPE,   OF_EW) /* a scalar filling a shape (a constant kernel) */
O(CAUSAL,         "causal",         1, OC_SHAPE,   0)  /* -inf above diagonal `a` of the last two dims (a masked copy) */
/* collectives: one row each in comm/colls.h */
#define C(NAME, name, ...) O(NAME, #name, 1, OC_COMM, 0)
#include "../comm/colls.h"
#undef C
/* placement change requested by a signature; lowered by the autocomm pass */
O(RESHARD,        "reshard",        1, OC_RESHARD, 0)
