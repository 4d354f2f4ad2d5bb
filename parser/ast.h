/* parser/ast.h -- the syntax tree of a .syn file, the lexer and the parser.
 * Prefixes: lex_, parse_, ast_.  Every node carries the span it came from;
 * lists are linked through `next` (chibicc); nodes live in the unit's arena. */
#ifndef SYNCC_AST_H
#define SYNCC_AST_H

#include <stdio.h>

#include "../base/base.h"

typedef enum NodeKind {
	/* expressions */
	NK_INT,    /* u.num: integer literal */
	NK_FLOAT,  /* u.num: float literal */
	NK_NAME,   /* u.name: a variable, size, param, dtype variable */
	NK_DTYPE,  /* u.name: a dtype keyword used as a value (cast(x, bf16)) */
	NK_BIN,    /* u.bin: l op r, op one of + - * / @ */
	NK_NEG,    /* u.bin.l: -l */
	NK_CALL,   /* u.call: builtin, kernel or op call */
	NK_LIST,   /* u.call.args: [a, b, ..] (reshape shapes) */
	NK_TUPLE,  /* u.call.args: (a, b, ..) (multiple results) */
	/* statements */
	NK_LET,    /* u.let: let name[: type] = init; */
	NK_LETS,   /* u.lets: let (a, b) = init; */
	NK_ASSIGN, /* u.let: name = init; */
	NK_RETURN, /* u.ret: return e; or return (a, b); */
	NK_FOR,    /* u.loop: for var in lo..hi { body } */
	/* declarations */
	NK_USE,    /* u.name: use name; */
	NK_PARAM,  /* u.let: param name = init (one node per name) */
	NK_OP,     /* u.fn: op name(args) -> rets { body } */
	NK_KERNEL, /* u.fn: kernel name(args) = body; args are NK_NAME */
	NK_ARG,    /* u.let: name: type, an op parameter (type in u.let.type) */
	NK_TYPE,   /* u.type: dtype[dims] @place */
	NK_PLACE,  /* u.call: @name(args) */
} NodeKind;

typedef struct Node Node;
struct Node {
	NodeKind kind;
	Span span;
	Node *next;
	Node *last;  /* on a list's first node: its last node (parser only) */
	int depth; /* expression nesting, bounded by LIM_NEST */
	union {
		struct { int64_t i; double f; } num;
		Sym name;
		struct { int op; Node *l, *r; } bin;
		struct { Sym name; Span nspan; Node *args; int nargs; } call;
		struct { Sym name; Span nspan; Node *type; Node *init; } let;
		struct { Node *names; Node *init; } lets;
		struct { Node *vals; } ret;
		struct { Sym var; Span vspan; Node *lo, *hi; Node *body; } loop;
		struct { Sym name; Span nspan; Node *args; int nargs; Node *rets; int nrets; Node *body; } fn;
		struct { Sym dtype; Span dspan; bool dvar; Node *dims; int rank; Node *place; } type;
	} u;
};

/* One parsed file. */
typedef struct Module Module;
struct Module {
	int file;        /* source index */
	Sym name;        /* file name without .syn */
	Node *items;     /* use, param, op, kernel in source order */
	Module **uses;   /* modules named by `use`, in order */
	int nuses;
	int state;       /* unit loader: 1 while loading (cycle check), 2 done */
	const char *dir; /* directory of the file, searched first by `use` */
	Module *next;    /* all modules of a unit */
};

/* Parser state shared by the Bison parser and the re2c lexer. */
typedef struct Lexer {
	const unsigned char *cur, *mar, *lim, *tok, *base;
	int file;
	int ntok, depth;
	bool stopped; /* a limit was hit: only end of file from now on */
} Lexer;

typedef struct Parser {
	Lexer lex;
	Arena *arena;
	Node *items;
	Node **tail;
	uint32_t prev_hi, last_hi; /* ends of the last two tokens read */
	int last_depth;            /* the lexer's bracket depth before the last token */
	const unsigned char *resume; /* error recovery: a ';' goes in before the token here */
	uint32_t inserted;           /* 1 + where the last ';' went in (never twice at one place) */
} Parser;

/* lexer/lexer.c (generated from lexer/lexer.re) */
void lex_init(Lexer *l, int file);
int lex_token(Lexer *l, void *val, Span *sp); /* val: SYN_STYPE * */
void lex_dump(FILE *f, int file);            /* --emit=tokens */

/* parser/parser.c (generated from parser/parser.y) */
Node *parse_file(int file, Arena *a);        /* NULL items and errors counted on failure */

/* parser/ast.c */
Node *ast_new(Parser *p, NodeKind k, Span sp);
Node *ast_bin(Parser *p, int op, Node *l, Node *r, Span sp);
Node *ast_call(Parser *p, Sym name, Span nspan, Node *args, Span sp);
int ast_count(Node *list);
void ast_print(FILE *f, Node *items);
const char *ast_opname(int op);

#endif
