/* A Bison parser, made by GNU Bison 3.8.2.  */

/* Bison interface for Yacc-like parsers in C

   Copyright (C) 1984, 1989-1990, 2000-2015, 2018-2021 Free Software Foundation,
   Inc.

   This program is free software: you can redistribute it and/or modify
   it under the terms of the GNU General Public License as published by
   the Free Software Foundation, either version 3 of the License, or
   (at your option) any later version.

   This program is distributed in the hope that it will be useful,
   but WITHOUT ANY WARRANTY; without even the implied warranty of
   MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
   GNU General Public License for more details.

   You should have received a copy of the GNU General Public License
   along with this program.  If not, see <https://www.gnu.org/licenses/>.  */

/* As a special exception, you may create a larger work that contains
   part or all of the Bison parser skeleton and distribute that work
   under terms of your choice, so long as that work isn't itself a
   parser generator using the skeleton or a modified version thereof
   as a parser skeleton.  Alternatively, if you modify or redistribute
   the parser skeleton itself, you may (at your option) remove this
   special exception, which will cause the skeleton and the resulting
   Bison output files to be licensed under the GNU General Public
   License without this special exception.

   This special exception was added by the Free Software Foundation in
   version 2.2 of Bison.  */

/* DO NOT RELY ON FEATURES THAT ARE NOT DOCUMENTED in the manual,
   especially those whose name start with YY_ or yy_.  They are
   private implementation details that can be changed or removed.  */

#ifndef YY_SYN_PARSER_PARSER_H_INCLUDED
# define YY_SYN_PARSER_PARSER_H_INCLUDED
/* Debug traces.  */
#ifndef SYN_DEBUG
# if defined YYDEBUG
#if YYDEBUG
#   define SYN_DEBUG 1
#  else
#   define SYN_DEBUG 0
#  endif
# else /* ! defined YYDEBUG */
#  define SYN_DEBUG 0
# endif /* ! defined YYDEBUG */
#endif  /* ! defined SYN_DEBUG */
#if SYN_DEBUG
extern int syn_debug;
#endif
/* "%code requires" blocks.  */
#line 18 "parser/parser.y"

#include "ast.h"

#line 61 "parser/parser.h"

/* Token kinds.  */
#ifndef SYN_TOKENTYPE
# define SYN_TOKENTYPE
  enum syn_tokentype
  {
    TK_SYN_EMPTY = -2,
    TK_YYEOF = 0,                  /* "end of file"  */
    TK_SYN_error = 256,            /* error  */
    TK_SYN_UNDEF = 257,            /* "invalid token"  */
    TK_IDENT = 258,                /* "identifier"  */
    TK_DTYPE = 259,                /* "dtype"  */
    TK_INT = 260,                  /* "integer"  */
    TK_FLOAT = 261,                /* "number"  */
    TK_USE = 262,                  /* "use"  */
    TK_PARAM = 263,                /* "param"  */
    TK_OP = 264,                   /* "op"  */
    TK_KERNEL = 265,               /* "kernel"  */
    TK_LET = 266,                  /* "let"  */
    TK_RETURN = 267,               /* "return"  */
    TK_FOR = 268,                  /* "for"  */
    TK_IN = 269,                   /* "in"  */
    TK_ARROW = 270,                /* "->"  */
    TK_DOTDOT = 271,               /* ".."  */
    TK_LPAREN = 272,               /* "("  */
    TK_RPAREN = 273,               /* ")"  */
    TK_LBRACK = 274,               /* "["  */
    TK_RBRACK = 275,               /* "]"  */
    TK_LBRACE = 276,               /* "{"  */
    TK_RBRACE = 277,               /* "}"  */
    TK_COMMA = 278,                /* ","  */
    TK_SEMI = 279,                 /* ";"  */
    TK_COLON = 280,                /* ":"  */
    TK_ASSIGN = 281,               /* "="  */
    TK_AT = 282,                   /* "@"  */
    TK_PLUS = 283,                 /* "+"  */
    TK_MINUS = 284,                /* "-"  */
    TK_STAR = 285,                 /* "*"  */
    TK_SLASH = 286                 /* "/"  */
  };
  typedef enum syn_tokentype syn_token_kind_t;
#endif

/* Value type.  */
#if ! defined SYN_STYPE && ! defined SYN_STYPE_IS_DECLARED
union SYN_STYPE
{
  Node * TK_item;                          /* item  */
  Node * TK_use;                           /* use  */
  Node * TK_param_list;                    /* param_list  */
  Node * TK_param_one;                     /* param_one  */
  Node * TK_op;                            /* op  */
  Node * TK_ret_types;                     /* ret_types  */
  Node * TK_type_list;                     /* type_list  */
  Node * TK_arg_list;                      /* arg_list  */
  Node * TK_args;                          /* args  */
  Node * TK_arg;                           /* arg  */
  Node * TK_kernel;                        /* kernel  */
  Node * TK_name_list;                     /* name_list  */
  Node * TK_names;                         /* names  */
  Node * TK_type;                          /* type  */
  Node * TK_dims;                          /* dims  */
  Node * TK_place;                         /* place  */
  Node * TK_place_args;                    /* place_args  */
  Node * TK_block;                         /* block  */
  Node * TK_stmts;                         /* stmts  */
  Node * TK_stmt;                          /* stmt  */
  Node * TK_expr;                          /* expr  */
  Node * TK_unary;                         /* unary  */
  Node * TK_postfix;                       /* postfix  */
  Node * TK_primary;                       /* primary  */
  Node * TK_opt_exprs;                     /* opt_exprs  */
  Node * TK_exprs;                         /* exprs  */
  Sym TK_IDENT;                            /* "identifier"  */
  Sym TK_DTYPE;                            /* "dtype"  */
  double TK_FLOAT;                         /* "number"  */
  int64_t TK_INT;                          /* "integer"  */

#line 140 "parser/parser.h"

};
typedef union SYN_STYPE SYN_STYPE;
# define SYN_STYPE_IS_TRIVIAL 1
# define SYN_STYPE_IS_DECLARED 1
#endif

/* Location type.  */
typedef Span SYN_LTYPE;




int syn_parse (Parser *p);

/* "%code provides" blocks.  */
#line 22 "parser/parser.y"

int syn_lex(SYN_STYPE *val, Span *loc, Parser *p);

#line 161 "parser/parser.h"

#endif /* !YY_SYN_PARSER_PARSER_H_INCLUDED  */
