/* parser/ast.c -- building and printing the syntax tree (--emit=ast). */
#include "ast.h"

Node *
ast_new(Parser *p, NodeKind k, Span sp)
{
	Node *n = arena_alloc(p->arena, sizeof *n);
	n->kind = k;
	n->span = sp;
	n->last = n;
	n->depth = 1;
	return n;
}

static int
maxdepth(Node *list)
{
	int d = 0;
	for (Node *n = list; n; n = n->next)
		if (n->depth > d)
			d = n->depth;
	return d;
}

Node *
ast_bin(Parser *p, int op, Node *l, Node *r, Span sp)
{
	Node *n = ast_new(p, NK_BIN, sp);
	n->u.bin.op = op;
	n->u.bin.l = l;
	n->u.bin.r = r;
	n->depth = 1 + (l->depth > (r ? r->depth : 0) ? l->depth : r->depth);
	return n;
}

Node *
ast_call(Parser *p, Sym name, Span nspan, Node *args, Span sp)
{
	Node *n = ast_new(p, NK_CALL, sp);
	n->u.call.name = name;
	n->u.call.nspan = nspan;
	n->u.call.args = args;
	n->u.call.nargs = ast_count(args);
	n->depth = 1 + maxdepth(args);
	return n;
}

int
ast_count(Node *list)
{
	int n = 0;
	for (; list; list = list->next)
		n++;
	return n;
}

const char *
ast_opname(int op)
{
	switch (op) {
	case '+': return "+";
	case '-': return "-";
	case '*': return "*";
	case '/': return "/";
	case '@': return "@";
	default: die("bad operator %d", op);
	}
}

/* ---- printing: one S-expression per node, indented by nesting ---- */

static void print_node(FILE *f, Node *n, int ind);

static void
print_list(FILE *f, Node *list, int ind)
{
	for (Node *n = list; n; n = n->next)
		print_node(f, n, ind);
}

static void
line(FILE *f, int ind, Node *n, const char *what)
{
	int l, c;
	src_linecol(n->span.file, n->span.lo, &l, &c);
	fprintf(f, "%*s%s @%d:%d", 2 * ind, "", what, l, c);
}

static void
print_node(FILE *f, Node *n, int ind)
{
	switch (n->kind) {
	case NK_INT:
		line(f, ind, n, "int");
		fprintf(f, " %lld\n", (long long)n->u.num.i);
		return;
	case NK_FLOAT:
		line(f, ind, n, "float");
		fprintf(f, " %.17g\n", n->u.num.f);
		return;
	case NK_NAME:
		line(f, ind, n, "name");
		fprintf(f, " %s\n", sym_str(n->u.name));
		return;
	case NK_DTYPE:
		line(f, ind, n, "dtype");
		fprintf(f, " %s\n", sym_str(n->u.name));
		return;
	case NK_BIN:
		line(f, ind, n, "binary");
		fprintf(f, " %s\n", ast_opname(n->u.bin.op));
		print_node(f, n->u.bin.l, ind + 1);
		print_node(f, n->u.bin.r, ind + 1);
		return;
	case NK_NEG:
		line(f, ind, n, "neg");
		fputc('\n', f);
		print_node(f, n->u.bin.l, ind + 1);
		return;
	case NK_CALL:
		line(f, ind, n, "call");
		fprintf(f, " %s\n", sym_str(n->u.call.name));
		print_list(f, n->u.call.args, ind + 1);
		return;
	case NK_LIST:
	case NK_TUPLE:
		line(f, ind, n, n->kind == NK_LIST ? "list" : "tuple");
		fputc('\n', f);
		print_list(f, n->u.call.args, ind + 1);
		return;
	case NK_LET:
	case NK_ASSIGN:
	case NK_PARAM:
	case NK_ARG:
		line(f, ind, n, n->kind == NK_LET ? "let" : n->kind == NK_ASSIGN ? "assign" : n->kind == NK_PARAM ? "param" : "arg");
		fprintf(f, " %s\n", sym_str(n->u.let.name));
		if (n->u.let.type)
			print_node(f, n->u.let.type, ind + 1);
		if (n->u.let.init)
			print_node(f, n->u.let.init, ind + 1);
		return;
	case NK_LETS:
		line(f, ind, n, "let-tuple");
		fputc('\n', f);
		print_list(f, n->u.lets.names, ind + 1);
		print_node(f, n->u.lets.init, ind + 1);
		return;
	case NK_RETURN:
		line(f, ind, n, "return");
		fputc('\n', f);
		print_node(f, n->u.ret.vals, ind + 1);
		return;
	case NK_FOR:
		line(f, ind, n, "for");
		fprintf(f, " %s\n", sym_str(n->u.loop.var));
		print_node(f, n->u.loop.lo, ind + 1);
		print_node(f, n->u.loop.hi, ind + 1);
		print_list(f, n->u.loop.body, ind + 1);
		return;
	case NK_USE:
		line(f, ind, n, "use");
		fprintf(f, " %s\n", sym_str(n->u.name));
		return;
	case NK_OP:
	case NK_KERNEL:
		line(f, ind, n, n->kind == NK_OP ? "op" : "kernel");
		fprintf(f, " %s\n", sym_str(n->u.fn.name));
		print_list(f, n->u.fn.args, ind + 1);
		if (n->kind == NK_OP) {
			fprintf(f, "%*sreturns\n", 2 * ind + 2, "");
			print_list(f, n->u.fn.rets, ind + 2);
			print_list(f, n->u.fn.body, ind + 1);
		} else {
			print_node(f, n->u.fn.body, ind + 1);
		}
		return;
	case NK_TYPE:
		line(f, ind, n, "type");
		fprintf(f, " %s%s rank %d\n", n->u.type.dvar ? "?" : "", sym_str(n->u.type.dtype), n->u.type.rank);
		print_list(f, n->u.type.dims, ind + 1);
		if (n->u.type.place)
			print_node(f, n->u.type.place, ind + 1);
		return;
	case NK_PLACE:
		line(f, ind, n, "place");
		fprintf(f, " @%s\n", sym_str(n->u.call.name));
		print_list(f, n->u.call.args, ind + 1);
		return;
	}
	die("bad node kind %d", n->kind);
}

void
ast_print(FILE *f, Node *items)
{
	print_list(f, items, 0);
}
