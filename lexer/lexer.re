/* lexer/lexer.re -- the tokens of .syn files (docs/language.md, "Lexical").
 * re2c, whole file in memory, NUL sentinel with bounds check (re2c:eof),
 * so a NUL byte inside the file is an ordinary (rejected) character.
 * An error is reported here and Bison's error token returned, so the
 * parser stays quiet about it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../parser/ast.h"
#include "../parser/parser.h"

/*!re2c
	re2c:api:style = free-form;
	re2c:define:YYCTYPE = "unsigned char";
	re2c:define:YYCURSOR = "l->cur";
	re2c:define:YYMARKER = "l->mar";
	re2c:define:YYLIMIT = "l->lim";
	re2c:yyfill:enable = 0;
	re2c:eof = 0;

	digit  = [0-9];
	ident  = [A-Za-z_][A-Za-z0-9_]*;
	exp    = [eE] [+-]? digit+;
	float  = digit+ "." digit+ exp? | digit+ exp;
	ws     = [ \t\r\n\f\v]+;
	mb     = [\xc2-\xdf][\x80-\xbf] | "\xe0"[\xa0-\xbf][\x80-\xbf]
	       | [\xe1-\xec\xee\xef][\x80-\xbf]{2} | "\xed"[\x80-\x9f][\x80-\xbf]
	       | "\xf0"[\x90-\xbf][\x80-\xbf]{2} | [\xf1-\xf3][\x80-\xbf]{3}
	       | "\xf4"[\x80-\x8f][\x80-\xbf]{2};
	utf8   = [\x01-\x7f] | mb;
*/

/* Keywords and dtype names, looked up after an identifier is scanned. */
static const struct {
	const char *word;
	int tok;
} keywords[] = {
	{"use", TK_USE}, {"param", TK_PARAM}, {"op", TK_OP}, {"kernel", TK_KERNEL},
	{"let", TK_LET}, {"return", TK_RETURN}, {"for", TK_FOR}, {"in", TK_IN},
	{"f32", TK_DTYPE}, {"f16", TK_DTYPE}, {"bf16", TK_DTYPE}, {"i32", TK_DTYPE},
};

void
lex_init(Lexer *l, int file)
{
	const Src *s = src_get(file);
	memset(l, 0, sizeof *l);
	l->base = l->cur = (const unsigned char *)s->text;
	l->lim = l->base + s->len;
	l->file = file;
}

static Span
span(Lexer *l)
{
	return (Span){l->file, (uint32_t)(l->tok - l->base), (uint32_t)(l->cur - l->base)};
}

/* Reports an error at the current token and returns Bison's error
 * token, which the parser treats as already reported. */
static int
fail(Lexer *l, const char *msg)
{
	diag_error(span(l), "%s", msg);
	return TK_SYN_error;
}

/* One error per comment for a byte that is not UTF-8 (or is NUL). */
static void
bad_byte(Lexer *l, const unsigned char *at, bool *said)
{
	Span sp = {l->file, (uint32_t)(at - l->base), (uint32_t)(l->cur - l->base)};
	if (!*said)
		diag_error(sp, *at ? "invalid UTF-8 byte in comment" : "NUL byte in comment");
	*said = true;
}

/* Skips a block comment; the opening "/ *" is already consumed. */
static bool
skip_comment(Lexer *l)
{
	bool said = false;
	for (;;) {
		const unsigned char *at = l->cur;
		/*!re2c
			"*" "/"  { return true; }
			$        { return false; }
			utf8     { continue; }
			*        { bad_byte(l, at, &said); continue; }
		*/
	}
}

/* Skips a line comment to the end of line, checking its UTF-8. */
static void
skip_line(Lexer *l)
{
	bool said = false;
	for (;;) {
		const unsigned char *at = l->cur;
		/*!re2c
			"\n" { return; }
			$    { return; }
			utf8 { continue; }
			*    { bad_byte(l, at, &said); continue; }
		*/
	}
}

static int
ident(Lexer *l, SYN_STYPE *val)
{
	size_t n = (size_t)(l->cur - l->tok);
	for (size_t i = 0; i < NELEM(keywords); i++)
		if (strlen(keywords[i].word) == n && memcmp(keywords[i].word, l->tok, n) == 0) {
			if (keywords[i].tok == TK_DTYPE)
				val->TK_DTYPE = sym_intern((const char *)l->tok, n);
			return keywords[i].tok;
		}
	val->TK_IDENT = sym_intern((const char *)l->tok, n);
	return TK_IDENT;
}

static int
integer(Lexer *l, SYN_STYPE *val)
{
	int64_t v = 0;
	for (const unsigned char *p = l->tok; p < l->cur; p++)
		if (!ck_mul(v, 10, &v) || !ck_add(v, *p - '0', &v))
			return fail(l, "integer literal is too large (over 2^63-1)");
	val->TK_INT = v;
	return TK_INT;
}

static int
number(Lexer *l, SYN_STYPE *val)
{
	char buf[64];
	size_t n = (size_t)(l->cur - l->tok);
	if (n >= sizeof buf)
		return fail(l, "number literal is too long");
	memcpy(buf, l->tok, n);
	buf[n] = 0;
	val->TK_FLOAT = strtod(buf, NULL);
	if (!isfinite(val->TK_FLOAT))
		return fail(l, "number literal is out of range");
	return TK_FLOAT;
}

/* "1." and ".5": say how to write them. */
static int
half_number(Lexer *l, const char *fmt)
{
	diag_error(span(l), fmt, (int)(l->cur - l->tok), (const char *)l->tok);
	return TK_SYN_error;
}

/* Opening and closing brackets: nesting is bounded. */
static int
opening(Lexer *l, int tok)
{
	if (++l->depth > LIM_NEST) {
		l->stopped = true;
		return fail(l, "brackets nested too deeply (limit 200)");
	}
	return tok;
}

static int
closing(Lexer *l, int tok)
{
	if (l->depth > 0)
		l->depth--;
	return tok;
}

static int
scan(Lexer *l, SYN_STYPE *val)
{
	for (;;) {
		l->tok = l->cur;
		/*!re2c
			$        { return TK_YYEOF; }
			ws       { continue; }
			"//"     { skip_line(l); continue; }
			"/" "*"  {
				const unsigned char *start = l->tok;
				if (!skip_comment(l)) {
					l->tok = start;
					l->cur = start + 2;
					l->stopped = true;
					return fail(l, "unterminated comment");
				}
				continue;
			}
			ident    { return ident(l, val); }
			float    { return number(l, val); }
			digit+   {
				/* "1." (but not the range "1..n") */
				if (l->cur < l->lim && *l->cur == '.' && l->cur[1] != '.') {
					l->cur++;
					return half_number(l, "a number needs digits after '.': write %.*s0");
				}
				return integer(l, val);
			}
			digit+ [A-Za-z_][A-Za-z0-9_]* { return fail(l, "invalid number literal"); }
			"." digit+ exp?      { return half_number(l, "a number needs a digit before '.': write 0%.*s"); }
			"->"     { return TK_ARROW; }
			".."     { return TK_DOTDOT; }
			"("      { return opening(l, TK_LPAREN); }
			")"      { return closing(l, TK_RPAREN); }
			"["      { return opening(l, TK_LBRACK); }
			"]"      { return closing(l, TK_RBRACK); }
			"{"      { return opening(l, TK_LBRACE); }
			"}"      { return closing(l, TK_RBRACE); }
			","      { return TK_COMMA; }
			";"      { return TK_SEMI; }
			":"      { return TK_COLON; }
			"="      { return TK_ASSIGN; }
			"@"      { return TK_AT; }
			"+"      { return TK_PLUS; }
			"-"      { return TK_MINUS; }
			"*"      { return TK_STAR; }
			"/"      { return TK_SLASH; }
			"\x00"   { return fail(l, "NUL byte in source"); }
			mb       { return fail(l, "non-ASCII character outside a comment"); }
			[\x80-\xff] { return fail(l, "invalid UTF-8 byte"); }
			*        {
				if (*l->tok > 0x20 && *l->tok < 0x7f)
					diag_error(span(l), "unexpected character '%c'", *l->tok);
				else
					diag_error(span(l), "unexpected control character 0x%02x", *l->tok);
				return TK_SYN_error;
			}
		*/
	}
}

int
lex_token(Lexer *l, void *v, Span *sp)
{
	int t;
	if (l->stopped) {
		l->tok = l->cur = l->lim;
		*sp = span(l);
		return TK_YYEOF;
	}
	t = scan(l, v);
	*sp = span(l);
	if (t != TK_YYEOF && ++l->ntok > LIM_TOKENS) {
		l->stopped = true;
		diag_error(*sp, "more than %d tokens in one file", LIM_TOKENS);
		return TK_SYN_error;
	}
	return t;
}

static const char *
token_name(int t)
{
	switch (t) {
	case TK_IDENT: return "IDENT";
	case TK_DTYPE: return "DTYPE";
	case TK_INT: return "INT";
	case TK_FLOAT: return "FLOAT";
	case TK_SYN_error: return "ERROR";
	default: return "PUNCT";
	}
}

/* --emit=tokens: kind, line:col and the text of every token. */
void
lex_dump(FILE *f, int file)
{
	Lexer l;
	SYN_STYPE v;
	Span sp;
	int t, line, col;
	lex_init(&l, file);
	while ((t = lex_token(&l, &v, &sp)) != TK_YYEOF) {
		src_linecol(file, sp.lo, &line, &col);
		if (t == TK_IDENT || t == TK_DTYPE || t == TK_INT || t == TK_FLOAT || t == TK_SYN_error)
			fprintf(f, "%d:%d %s %.*s\n", line, col, token_name(t), (int)(sp.hi - sp.lo), l.base + sp.lo);
		else if (t >= TK_USE && t <= TK_IN)
			fprintf(f, "%d:%d KEYWORD %.*s\n", line, col, (int)(sp.hi - sp.lo), l.base + sp.lo);
		else
			fprintf(f, "%d:%d %s %.*s\n", line, col, token_name(t), (int)(sp.hi - sp.lo), l.base + sp.lo);
	}
}
