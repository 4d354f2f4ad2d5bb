/* parser/parser.y -- the grammar of .syn files (docs/language.md).
 * Pure and reentrant; locations are byte spans; `%expect 0` makes any
 * conflict fail the build; `error` rules resynchronise at ';' and '}' so
 * one run reports several independent errors. */

%require "3.8"
%define api.pure full
%define api.prefix {syn_}
%define api.token.prefix {TK_}
%define api.value.type union
%define api.location.type {Span}
%define parse.error custom
%define parse.lac full
%locations
%param {Parser *p}
%expect 0

%code requires {
#include "ast.h"
}

%code provides {
int syn_lex(SYN_STYPE *val, Span *loc, Parser *p);
}

%code {
#include <string.h>

#define YYMAXDEPTH 10000
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                         \
	do {                                                                \
		if (N) {                                                    \
			(Cur) = span_join(YYRHSLOC(Rhs, 1), YYRHSLOC(Rhs, N)); \
		} else {                                                    \
			(Cur).file = YYRHSLOC(Rhs, 0).file;                 \
			(Cur).lo = (Cur).hi = YYRHSLOC(Rhs, 0).hi;          \
		}                                                           \
	} while (0)

static void syn_error(Span *loc, Parser *p, const char *msg);
static void add_item(Parser *p, Node *n);
static Node *append(Node *list, Node *n);
static Node *deep(Parser *p, Node *n);
}

%token <Sym> IDENT "identifier"
%token <Sym> DTYPE "dtype"
%token <int64_t> INT "integer"
%token <double> FLOAT "number"
%token USE "use" PARAM "param" OP "op" KERNEL "kernel" LET "let" RETURN "return"
%token FOR "for" IN "in"
%token ARROW "->" DOTDOT ".."
%token LPAREN "(" RPAREN ")" LBRACK "[" RBRACK "]" LBRACE "{" RBRACE "}"
%token COMMA "," SEMI ";" COLON ":" ASSIGN "=" AT "@"
%token PLUS "+" MINUS "-" STAR "*" SLASH "/"

%type <Node *> item use param_list param_one op kernel arg_list args arg
%type <Node *> type dims place place_args ret_types type_list
%type <Node *> block stmts stmt expr unary postfix primary exprs opt_exprs
%type <Node *> name_list names

%left "+" "-"
%left "*" "/" "@"

%%

file
	: %empty
	| file item { add_item(p, $2); }
	;

/* item = use | param | op | kernel */
item
	: use
	| PARAM param_list ";" { $$ = $2; }
	| op
	| kernel
	| error ";" { $$ = NULL; yyerrok; }
	| error "}" { $$ = NULL; yyerrok; }
	| error block { $$ = NULL; yyerrok; } /* a bad op header: skip its body whole */
	;

use
	: USE IDENT ";" { $$ = ast_new(p, NK_USE, @2); $$->u.name = $2; }
	;

/* param = "param" name "=" expr ("," name "=" expr)* ";" */
param_list
	: param_one
	| param_list "," param_one { $$ = append($1, $3); }
	;

param_one
	: IDENT "=" expr {
		$$ = ast_new(p, NK_PARAM, @$);
		$$->u.let.name = $1; $$->u.let.nspan = @1; $$->u.let.init = $3;
	}
	;

/* op = "op" name "(" args ")" "->" (type | "(" types ")") block */
op
	: OP IDENT "(" arg_list ")" "->" ret_types block {
		$$ = ast_new(p, NK_OP, @$);
		$$->u.fn.name = $2; $$->u.fn.nspan = @2;
		$$->u.fn.args = $4; $$->u.fn.nargs = ast_count($4);
		$$->u.fn.rets = $7; $$->u.fn.nrets = ast_count($7);
		$$->u.fn.body = $8;
	}
	;

ret_types
	: type
	| "(" type_list ")" { $$ = $2; }
	;

type_list
	: type
	| type_list "," type { $$ = append($1, $3); }
	;

arg_list
	: %empty { $$ = NULL; }
	| args
	;

args
	: arg
	| args "," arg { $$ = append($1, $3); }
	;

arg
	: IDENT ":" type {
		$$ = ast_new(p, NK_ARG, @$);
		$$->u.let.name = $1; $$->u.let.nspan = @1; $$->u.let.type = $3;
	}
	;

/* kernel = "kernel" name "(" names ")" "=" expr ";" */
kernel
	: KERNEL IDENT "(" name_list ")" "=" expr ";" {
		$$ = ast_new(p, NK_KERNEL, @$);
		$$->u.fn.name = $2; $$->u.fn.nspan = @2;
		$$->u.fn.args = $4; $$->u.fn.nargs = ast_count($4);
		$$->u.fn.body = $7;
	}
	;

name_list
	: %empty { $$ = NULL; }
	| names
	;

names
	: IDENT { $$ = ast_new(p, NK_NAME, @1); $$->u.name = $1; }
	| names "," IDENT {
		Node *n = ast_new(p, NK_NAME, @3); n->u.name = $3; $$ = append($1, n);
	}
	;

/* type = (dtype | name) ["[" dims "]"] [place] */
type
	: DTYPE dims place {
		$$ = ast_new(p, NK_TYPE, @$);
		$$->u.type.dtype = $1; $$->u.type.dspan = @1;
		$$->u.type.dims = $2; $$->u.type.rank = ast_count($2);
		$$->u.type.place = $3;
	}
	| IDENT dims place {
		$$ = ast_new(p, NK_TYPE, @$);
		$$->u.type.dtype = $1; $$->u.type.dspan = @1; $$->u.type.dvar = true;
		$$->u.type.dims = $2; $$->u.type.rank = ast_count($2);
		$$->u.type.place = $3;
	}
	;

dims
	: %empty { $$ = NULL; }
	| "[" opt_exprs "]" {
		$$ = $2;
		if (ast_count($2) > LIM_RANK)
			diag_error(@$, "tensor rank %d is over the limit of %d", ast_count($2), LIM_RANK);
	}
	;

place
	: %empty { $$ = NULL; }
	| "@" IDENT place_args {
		$$ = ast_new(p, NK_PLACE, @$);
		$$->u.call.name = $2; $$->u.call.nspan = @2;
		$$->u.call.args = $3; $$->u.call.nargs = ast_count($3);
	}
	;

place_args
	: %empty { $$ = NULL; }
	| "(" opt_exprs ")" { $$ = $2; }
	;

/* block = "{" stmt* "}" */
block
	: "{" stmts "}" { $$ = $2; }
	;

stmts
	: %empty { $$ = NULL; }
	| stmts stmt { $$ = $2 ? append($1, $2) : $1; }
	;

stmt
	: LET IDENT "=" expr ";" {
		$$ = ast_new(p, NK_LET, @$);
		$$->u.let.name = $2; $$->u.let.nspan = @2; $$->u.let.init = $4;
	}
	| LET IDENT ":" type "=" expr ";" {
		$$ = ast_new(p, NK_LET, @$);
		$$->u.let.name = $2; $$->u.let.nspan = @2; $$->u.let.type = $4; $$->u.let.init = $6;
	}
	| LET "(" names ")" "=" expr ";" {
		$$ = ast_new(p, NK_LETS, @$);
		$$->u.lets.names = $3; $$->u.lets.init = $6;
	}
	| IDENT "=" expr ";" {
		$$ = ast_new(p, NK_ASSIGN, @$);
		$$->u.let.name = $1; $$->u.let.nspan = @1; $$->u.let.init = $3;
	}
	| RETURN expr ";" { $$ = ast_new(p, NK_RETURN, @$); $$->u.ret.vals = $2; }
	| FOR IDENT IN expr ".." expr block {
		$$ = ast_new(p, NK_FOR, @$);
		$$->u.loop.var = $2; $$->u.loop.vspan = @2;
		$$->u.loop.lo = $4; $$->u.loop.hi = $6; $$->u.loop.body = $7;
	}
	| error ";" { $$ = NULL; yyerrok; } /* the next statement is reported on its own */
	| error block { $$ = NULL; yyerrok; } /* a bad `for` header: skip its body */
	;

/* expr = expr ("+"|"-"|"*"|"/"|"@") expr | "-" expr | postfix */
expr
	: expr "+" expr { $$ = deep(p, ast_bin(p, '+', $1, $3, @$)); }
	| expr "-" expr { $$ = deep(p, ast_bin(p, '-', $1, $3, @$)); }
	| expr "*" expr { $$ = deep(p, ast_bin(p, '*', $1, $3, @$)); }
	| expr "/" expr { $$ = deep(p, ast_bin(p, '/', $1, $3, @$)); }
	| expr "@" expr { $$ = deep(p, ast_bin(p, '@', $1, $3, @$)); }
	| unary
	;

unary
	: "-" unary { $$ = deep(p, ast_bin(p, '-', $2, NULL, @$)); $$->kind = NK_NEG; }
	| postfix
	;

postfix
	: primary
	| IDENT "(" opt_exprs ")" { $$ = deep(p, ast_call(p, $1, @1, $3, @$)); }
	;

primary
	: INT { $$ = ast_new(p, NK_INT, @$); $$->u.num.i = $1; $$->u.num.f = (double)$1; }
	| FLOAT { $$ = ast_new(p, NK_FLOAT, @$); $$->u.num.f = $1; }
	| IDENT { $$ = ast_new(p, NK_NAME, @$); $$->u.name = $1; }
	| DTYPE { $$ = ast_new(p, NK_DTYPE, @$); $$->u.name = $1; }
	| "(" expr ")" { $$ = $2; $$->span = @$; }
	| "(" expr "," exprs ")" {
		$$ = deep(p, ast_call(p, 0, @1, append($2, $4), @$)); $$->kind = NK_TUPLE;
	}
	| "[" opt_exprs "]" { $$ = deep(p, ast_call(p, 0, @1, $2, @$)); $$->kind = NK_LIST; }
	;

opt_exprs
	: %empty { $$ = NULL; }
	| exprs
	;

exprs
	: expr
	| exprs "," expr { $$ = append($1, $3); }
	;

%%

static void
syn_error(Span *loc, Parser *p, const char *msg)
{
	(void)p;
	if (strcmp(msg, "memory exhausted") == 0)
		diag_error(*loc, "expression nested more than %d deep", LIM_NEST);
	else
		diag_error(*loc, "%s", msg);
}

/* How a token is named in a message: words bare, punctuation quoted. */
static void
put_symbol(Buf *b, yysymbol_kind_t k)
{
	const char *s = yysymbol_name(k);
	size_t n = strlen(s);
	if (n >= 2 && s[0] == '"')
		s++, n -= 2;
	if (k == YYSYMBOL_IDENT || k == YYSYMBOL_INT || k == YYSYMBOL_FLOAT || k == YYSYMBOL_DTYPE || k == YYSYMBOL_YYEOF)
		buf_printf(b, "%.*s", (int)n, s);
	else
		buf_printf(b, "'%.*s'", (int)n, s);
}

static bool
has(const yysymbol_kind_t *v, int n, yysymbol_kind_t k)
{
	for (int i = 0; i < n; i++)
		if (v[i] == k)
			return true;
	return false;
}

/* The tokens that can start an expression, and those that can continue
 * one after an operand (a call's '(' included). */
static const yysymbol_kind_t starts[] = {
	YYSYMBOL_IDENT, YYSYMBOL_DTYPE, YYSYMBOL_INT, YYSYMBOL_FLOAT,
	YYSYMBOL_LPAREN, YYSYMBOL_LBRACK, YYSYMBOL_MINUS,
};
static const yysymbol_kind_t continues[] = {
	YYSYMBOL_PLUS, YYSYMBOL_MINUS, YYSYMBOL_STAR, YYSYMBOL_SLASH, YYSYMBOL_AT, YYSYMBOL_LPAREN,
};

/* Tokens that start a statement or an item: a ';' missing before one is
 * inserted (after the error is reported), so recovery does not skip the
 * next statement -- and the error in it -- up to the next ';', as clang
 * reports both.  An identifier starts a statement only on a new line,
 * and a '}' ends one only inside a block.  In the states recovery
 * reaches, none of them may follow `error`, so the token is discarded and
 * the ';' comes first. */
static const yysymbol_kind_t starters[] = {
	YYSYMBOL_LET, YYSYMBOL_RETURN, YYSYMBOL_FOR, YYSYMBOL_USE, YYSYMBOL_PARAM, YYSYMBOL_OP, YYSYMBOL_KERNEL,
};

static void
insert_semi(Parser *p, yysymbol_kind_t got, Span at, bool semi_expected)
{
	const char *text = src_get(at.file)->text;
	bool newline = at.lo >= p->prev_hi && memchr(text + p->prev_hi, '\n', at.lo - p->prev_hi) != NULL;
	if (!semi_expected || p->inserted == at.lo + 1)
		return;
	if (has(starters, (int)NELEM(starters), got) || (got == YYSYMBOL_IDENT && newline) ||
	    (got == YYSYMBOL_RBRACE && p->last_depth > 0)) {
		p->resume = p->lex.base + at.lo;
		p->inserted = at.lo + 1;
	}
}

/* "unexpected identifier 'foo', expected ';'": the expected list comes
 * from LAC, so it names only tokens that really can follow.  All the
 * tokens that start an expression are said as "an expression"; after an
 * operand, the operators that could continue it are left out, since the
 * mistake is almost never a missing operator. */
static int
yyreport_syntax_error(const yypcontext_t *ctx, Parser *p)
{
	enum { MAXSAY = 5 };
	yysymbol_kind_t exp[YYNTOKENS], got = yypcontext_token(ctx);
	int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS), nsay = 0, k = 0;
	bool expr = true, after = has(exp, n, YYSYMBOL_PLUS) && has(exp, n, YYSYMBOL_STAR);
	Span at = *yypcontext_location(ctx);
	Buf b = {0};

	insert_semi(p, got, at, has(exp, n, YYSYMBOL_SEMI));
	for (size_t i = 0; i < NELEM(starts); i++)
		expr = expr && has(exp, n, starts[i]);
	if (got == YYSYMBOL_YYEOF) {
		buf_printf(&b, "unexpected end of file");
	} else {
		buf_printf(&b, "unexpected ");
		put_symbol(&b, got);
		if (got == YYSYMBOL_IDENT || got == YYSYMBOL_INT || got == YYSYMBOL_FLOAT || got == YYSYMBOL_DTYPE)
			buf_printf(&b, " '%.*s'", (int)(at.hi - at.lo), src_get(at.file)->text + at.lo);
	}
	for (int i = 0; i < n; i++) {
		bool drop = (expr && has(starts, (int)NELEM(starts), exp[i])) ||
		            (after && has(continues, (int)NELEM(continues), exp[i])) || (exp[i] == YYSYMBOL_YYEOF && n > 1);
		if (!drop)
			exp[k++] = exp[i];
	}
	nsay = k + expr;
	if (nsay > 0 && nsay <= MAXSAY) {
		buf_printf(&b, ", expected ");
		if (expr)
			buf_printf(&b, "an expression%s", k == 0 ? "" : k == 1 ? " or " : ", ");
		for (int i = 0; i < k; i++) {
			put_symbol(&b, exp[i]);
			buf_printf(&b, "%s", i == k - 1 ? "" : i == k - 2 ? " or " : ", ");
		}
	}
	diag_error(at, "%s", b.s);
	buf_free(&b);
	return 0;
}

static void
add_item(Parser *p, Node *n)
{
	for (*p->tail = n; n; n = n->next)
		p->tail = &n->next;
}

/* Constant time: a list's first node knows its last (ast_new sets it). */
static Node *
append(Node *list, Node *n)
{
	if (!list)
		return n;
	list->last->next = n;
	list->last = n->last;
	return list;
}

/* Bounds expression depth so no later pass recurses without limit. */
static Node *
deep(Parser *p, Node *n)
{
	(void)p;
	if (n->depth == LIM_NEST + 1)
		diag_error(n->span, "expression nested more than %d deep", LIM_NEST);
	return n;
}

/* Error recovery has discarded the token after a missing ';': hand it
 * the ';', then read that token again. */
int
syn_lex(SYN_STYPE *val, Span *loc, Parser *p)
{
	int t;
	if (p->resume) {
		uint32_t at = (uint32_t)(p->resume - p->lex.base);
		p->lex.cur = p->resume;
		p->lex.ntok--; /* it is counted again */
		p->lex.depth = p->last_depth; /* and a '}' closes again */
		p->resume = NULL;
		*loc = (Span){p->lex.file, at, at};
		p->prev_hi = p->last_hi = at; /* the ';' ends where the token starts */
		return TK_SEMI;
	}
	p->last_depth = p->lex.depth;
	t = lex_token(&p->lex, val, loc);
	p->prev_hi = p->last_hi;
	p->last_hi = loc->hi;
	return t;
}

Node *
parse_file(int file, Arena *a)
{
	Parser p = {0};
	int before = diag_errors();
	p.arena = a;
	p.tail = &p.items;
	lex_init(&p.lex, file);
	if (syn_parse(&p) != 0 && diag_errors() == before)
		die("the parser failed without a message");
	return p.items;
}
