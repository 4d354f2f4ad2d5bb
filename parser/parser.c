/* A Bison parser, made by GNU Bison 3.8.2.  */

/* Bison implementation for Yacc-like parsers in C

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

/* C LALR(1) parser skeleton written by Richard Stallman, by
   simplifying the original so-called "semantic" parser.  */

/* DO NOT RELY ON FEATURES THAT ARE NOT DOCUMENTED in the manual,
   especially those whose name start with YY_ or yy_.  They are
   private implementation details that can be changed or removed.  */

/* All symbols defined below should begin with yy or YY, to avoid
   infringing on user name space.  This should be done even for local
   variables, as they might otherwise be expanded by user macros.
   There are some unavoidable exceptions within include files to
   define necessary library symbols; they are noted "INFRINGES ON
   USER NAME SPACE" below.  */

/* Identify Bison output, and Bison version.  */
#define YYBISON 30802

/* Bison version string.  */
#define YYBISON_VERSION "3.8.2"

/* Skeleton name.  */
#define YYSKELETON_NAME "yacc.c"

/* Pure parsers.  */
#define YYPURE 2

/* Push parsers.  */
#define YYPUSH 0

/* Pull parsers.  */
#define YYPULL 1

/* Substitute the type names.  */
#define YYSTYPE         SYN_STYPE
#define YYLTYPE         SYN_LTYPE
/* Substitute the variable and function names.  */
#define yyparse         syn_parse
#define yylex           syn_lex
#define yyerror         syn_error
#define yydebug         syn_debug
#define yynerrs         syn_nerrs


# ifndef YY_CAST
#  ifdef __cplusplus
#   define YY_CAST(Type, Val) static_cast<Type> (Val)
#   define YY_REINTERPRET_CAST(Type, Val) reinterpret_cast<Type> (Val)
#  else
#   define YY_CAST(Type, Val) ((Type) (Val))
#   define YY_REINTERPRET_CAST(Type, Val) ((Type) (Val))
#  endif
# endif
# ifndef YY_NULLPTR
#  if defined __cplusplus
#   if 201103L <= __cplusplus
#    define YY_NULLPTR nullptr
#   else
#    define YY_NULLPTR 0
#   endif
#  else
#   define YY_NULLPTR ((void*)0)
#  endif
# endif

#include "parser.h"
/* Symbol kind.  */
enum yysymbol_kind_t
{
  YYSYMBOL_YYEMPTY = -2,
  YYSYMBOL_YYEOF = 0,                      /* "end of file"  */
  YYSYMBOL_YYerror = 1,                    /* error  */
  YYSYMBOL_YYUNDEF = 2,                    /* "invalid token"  */
  YYSYMBOL_IDENT = 3,                      /* "identifier"  */
  YYSYMBOL_DTYPE = 4,                      /* "dtype"  */
  YYSYMBOL_INT = 5,                        /* "integer"  */
  YYSYMBOL_FLOAT = 6,                      /* "number"  */
  YYSYMBOL_USE = 7,                        /* "use"  */
  YYSYMBOL_PARAM = 8,                      /* "param"  */
  YYSYMBOL_OP = 9,                         /* "op"  */
  YYSYMBOL_KERNEL = 10,                    /* "kernel"  */
  YYSYMBOL_LET = 11,                       /* "let"  */
  YYSYMBOL_RETURN = 12,                    /* "return"  */
  YYSYMBOL_FOR = 13,                       /* "for"  */
  YYSYMBOL_IN = 14,                        /* "in"  */
  YYSYMBOL_ARROW = 15,                     /* "->"  */
  YYSYMBOL_DOTDOT = 16,                    /* ".."  */
  YYSYMBOL_LPAREN = 17,                    /* "("  */
  YYSYMBOL_RPAREN = 18,                    /* ")"  */
  YYSYMBOL_LBRACK = 19,                    /* "["  */
  YYSYMBOL_RBRACK = 20,                    /* "]"  */
  YYSYMBOL_LBRACE = 21,                    /* "{"  */
  YYSYMBOL_RBRACE = 22,                    /* "}"  */
  YYSYMBOL_COMMA = 23,                     /* ","  */
  YYSYMBOL_SEMI = 24,                      /* ";"  */
  YYSYMBOL_COLON = 25,                     /* ":"  */
  YYSYMBOL_ASSIGN = 26,                    /* "="  */
  YYSYMBOL_AT = 27,                        /* "@"  */
  YYSYMBOL_PLUS = 28,                      /* "+"  */
  YYSYMBOL_MINUS = 29,                     /* "-"  */
  YYSYMBOL_STAR = 30,                      /* "*"  */
  YYSYMBOL_SLASH = 31,                     /* "/"  */
  YYSYMBOL_YYACCEPT = 32,                  /* $accept  */
  YYSYMBOL_file = 33,                      /* file  */
  YYSYMBOL_item = 34,                      /* item  */
  YYSYMBOL_use = 35,                       /* use  */
  YYSYMBOL_param_list = 36,                /* param_list  */
  YYSYMBOL_param_one = 37,                 /* param_one  */
  YYSYMBOL_op = 38,                        /* op  */
  YYSYMBOL_ret_types = 39,                 /* ret_types  */
  YYSYMBOL_type_list = 40,                 /* type_list  */
  YYSYMBOL_arg_list = 41,                  /* arg_list  */
  YYSYMBOL_args = 42,                      /* args  */
  YYSYMBOL_arg = 43,                       /* arg  */
  YYSYMBOL_kernel = 44,                    /* kernel  */
  YYSYMBOL_name_list = 45,                 /* name_list  */
  YYSYMBOL_names = 46,                     /* names  */
  YYSYMBOL_type = 47,                      /* type  */
  YYSYMBOL_dims = 48,                      /* dims  */
  YYSYMBOL_place = 49,                     /* place  */
  YYSYMBOL_place_args = 50,                /* place_args  */
  YYSYMBOL_block = 51,                     /* block  */
  YYSYMBOL_stmts = 52,                     /* stmts  */
  YYSYMBOL_stmt = 53,                      /* stmt  */
  YYSYMBOL_expr = 54,                      /* expr  */
  YYSYMBOL_unary = 55,                     /* unary  */
  YYSYMBOL_postfix = 56,                   /* postfix  */
  YYSYMBOL_primary = 57,                   /* primary  */
  YYSYMBOL_opt_exprs = 58,                 /* opt_exprs  */
  YYSYMBOL_exprs = 59                      /* exprs  */
};
typedef enum yysymbol_kind_t yysymbol_kind_t;



/* Unqualified %code blocks.  */
#line 26 "parser/parser.y"

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

#line 190 "parser/parser.c"

#ifdef short
# undef short
#endif

/* On compilers that do not define __PTRDIFF_MAX__ etc., make sure
   <limits.h> and (if available) <stdint.h> are included
   so that the code can choose integer types of a good width.  */

#ifndef __PTRDIFF_MAX__
# include <limits.h> /* INFRINGES ON USER NAME SPACE */
# if defined __STDC_VERSION__ && 199901 <= __STDC_VERSION__
#  include <stdint.h> /* INFRINGES ON USER NAME SPACE */
#  define YY_STDINT_H
# endif
#endif

/* Narrow types that promote to a signed type and that can represent a
   signed or unsigned integer of at least N bits.  In tables they can
   save space and decrease cache pressure.  Promoting to a signed type
   helps avoid bugs in integer arithmetic.  */

#ifdef __INT_LEAST8_MAX__
typedef __INT_LEAST8_TYPE__ yytype_int8;
#elif defined YY_STDINT_H
typedef int_least8_t yytype_int8;
#else
typedef signed char yytype_int8;
#endif

#ifdef __INT_LEAST16_MAX__
typedef __INT_LEAST16_TYPE__ yytype_int16;
#elif defined YY_STDINT_H
typedef int_least16_t yytype_int16;
#else
typedef short yytype_int16;
#endif

/* Work around bug in HP-UX 11.23, which defines these macros
   incorrectly for preprocessor constants.  This workaround can likely
   be removed in 2023, as HPE has promised support for HP-UX 11.23
   (aka HP-UX 11i v2) only through the end of 2022; see Table 2 of
   <https://h20195.www2.hpe.com/V2/getpdf.aspx/4AA4-7673ENW.pdf>.  */
#ifdef __hpux
# undef UINT_LEAST8_MAX
# undef UINT_LEAST16_MAX
# define UINT_LEAST8_MAX 255
# define UINT_LEAST16_MAX 65535
#endif

#if defined __UINT_LEAST8_MAX__ && __UINT_LEAST8_MAX__ <= __INT_MAX__
typedef __UINT_LEAST8_TYPE__ yytype_uint8;
#elif (!defined __UINT_LEAST8_MAX__ && defined YY_STDINT_H \
       && UINT_LEAST8_MAX <= INT_MAX)
typedef uint_least8_t yytype_uint8;
#elif !defined __UINT_LEAST8_MAX__ && UCHAR_MAX <= INT_MAX
typedef unsigned char yytype_uint8;
#else
typedef short yytype_uint8;
#endif

#if defined __UINT_LEAST16_MAX__ && __UINT_LEAST16_MAX__ <= __INT_MAX__
typedef __UINT_LEAST16_TYPE__ yytype_uint16;
#elif (!defined __UINT_LEAST16_MAX__ && defined YY_STDINT_H \
       && UINT_LEAST16_MAX <= INT_MAX)
typedef uint_least16_t yytype_uint16;
#elif !defined __UINT_LEAST16_MAX__ && USHRT_MAX <= INT_MAX
typedef unsigned short yytype_uint16;
#else
typedef int yytype_uint16;
#endif

#ifndef YYPTRDIFF_T
# if defined __PTRDIFF_TYPE__ && defined __PTRDIFF_MAX__
#  define YYPTRDIFF_T __PTRDIFF_TYPE__
#  define YYPTRDIFF_MAXIMUM __PTRDIFF_MAX__
# elif defined PTRDIFF_MAX
#  ifndef ptrdiff_t
#   include <stddef.h> /* INFRINGES ON USER NAME SPACE */
#  endif
#  define YYPTRDIFF_T ptrdiff_t
#  define YYPTRDIFF_MAXIMUM PTRDIFF_MAX
# else
#  define YYPTRDIFF_T long
#  define YYPTRDIFF_MAXIMUM LONG_MAX
# endif
#endif

#ifndef YYSIZE_T
# ifdef __SIZE_TYPE__
#  define YYSIZE_T __SIZE_TYPE__
# elif defined size_t
#  define YYSIZE_T size_t
# elif defined __STDC_VERSION__ && 199901 <= __STDC_VERSION__
#  include <stddef.h> /* INFRINGES ON USER NAME SPACE */
#  define YYSIZE_T size_t
# else
#  define YYSIZE_T unsigned
# endif
#endif

#define YYSIZE_MAXIMUM                                  \
  YY_CAST (YYPTRDIFF_T,                                 \
           (YYPTRDIFF_MAXIMUM < YY_CAST (YYSIZE_T, -1)  \
            ? YYPTRDIFF_MAXIMUM                         \
            : YY_CAST (YYSIZE_T, -1)))

#define YYSIZEOF(X) YY_CAST (YYPTRDIFF_T, sizeof (X))


/* Stored state numbers (used for stacks). */
typedef yytype_uint8 yy_state_t;

/* State numbers in computations.  */
typedef int yy_state_fast_t;

#ifndef YY_
# if defined YYENABLE_NLS && YYENABLE_NLS
#  if ENABLE_NLS
#   include <libintl.h> /* INFRINGES ON USER NAME SPACE */
#   define YY_(Msgid) dgettext ("bison-runtime", Msgid)
#  endif
# endif
# ifndef YY_
#  define YY_(Msgid) Msgid
# endif
#endif


#ifndef YY_ATTRIBUTE_PURE
# if defined __GNUC__ && 2 < __GNUC__ + (96 <= __GNUC_MINOR__)
#  define YY_ATTRIBUTE_PURE __attribute__ ((__pure__))
# else
#  define YY_ATTRIBUTE_PURE
# endif
#endif

#ifndef YY_ATTRIBUTE_UNUSED
# if defined __GNUC__ && 2 < __GNUC__ + (7 <= __GNUC_MINOR__)
#  define YY_ATTRIBUTE_UNUSED __attribute__ ((__unused__))
# else
#  define YY_ATTRIBUTE_UNUSED
# endif
#endif

/* Suppress unused-variable warnings by "using" E.  */
#if ! defined lint || defined __GNUC__
# define YY_USE(E) ((void) (E))
#else
# define YY_USE(E) /* empty */
#endif

/* Suppress an incorrect diagnostic about yylval being uninitialized.  */
#if defined __GNUC__ && ! defined __ICC && 406 <= __GNUC__ * 100 + __GNUC_MINOR__
# if __GNUC__ * 100 + __GNUC_MINOR__ < 407
#  define YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN                           \
    _Pragma ("GCC diagnostic push")                                     \
    _Pragma ("GCC diagnostic ignored \"-Wuninitialized\"")
# else
#  define YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN                           \
    _Pragma ("GCC diagnostic push")                                     \
    _Pragma ("GCC diagnostic ignored \"-Wuninitialized\"")              \
    _Pragma ("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
# endif
# define YY_IGNORE_MAYBE_UNINITIALIZED_END      \
    _Pragma ("GCC diagnostic pop")
#else
# define YY_INITIAL_VALUE(Value) Value
#endif
#ifndef YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN
# define YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN
# define YY_IGNORE_MAYBE_UNINITIALIZED_END
#endif
#ifndef YY_INITIAL_VALUE
# define YY_INITIAL_VALUE(Value) /* Nothing. */
#endif

#if defined __cplusplus && defined __GNUC__ && ! defined __ICC && 6 <= __GNUC__
# define YY_IGNORE_USELESS_CAST_BEGIN                          \
    _Pragma ("GCC diagnostic push")                            \
    _Pragma ("GCC diagnostic ignored \"-Wuseless-cast\"")
# define YY_IGNORE_USELESS_CAST_END            \
    _Pragma ("GCC diagnostic pop")
#endif
#ifndef YY_IGNORE_USELESS_CAST_BEGIN
# define YY_IGNORE_USELESS_CAST_BEGIN
# define YY_IGNORE_USELESS_CAST_END
#endif


#define YY_ASSERT(E) ((void) (0 && (E)))

#if 1

/* The parser invokes alloca or malloc; define the necessary symbols.  */

# ifdef YYSTACK_ALLOC
   /* Pacify GCC's 'empty if-body' warning.  */
#  define YYSTACK_FREE(Ptr) do { /* empty */; } while (0)
#  ifndef YYSTACK_ALLOC_MAXIMUM
    /* The OS might guarantee only one guard page at the bottom of the stack,
       and a page size can be as small as 4096 bytes.  So we cannot safely
       invoke alloca (N) if N exceeds 4096.  Use a slightly smaller number
       to allow for a few compiler-allocated temporary stack slots.  */
#   define YYSTACK_ALLOC_MAXIMUM 4032 /* reasonable circa 2006 */
#  endif
# else
#  define YYSTACK_ALLOC YYMALLOC
#  define YYSTACK_FREE YYFREE
#  ifndef YYSTACK_ALLOC_MAXIMUM
#   define YYSTACK_ALLOC_MAXIMUM YYSIZE_MAXIMUM
#  endif
#  if (defined __cplusplus && ! defined EXIT_SUCCESS \
       && ! ((defined YYMALLOC || defined malloc) \
             && (defined YYFREE || defined free)))
#   include <stdlib.h> /* INFRINGES ON USER NAME SPACE */
#   ifndef EXIT_SUCCESS
#    define EXIT_SUCCESS 0
#   endif
#  endif
#  ifndef YYMALLOC
#   define YYMALLOC malloc
#   if ! defined malloc && ! defined EXIT_SUCCESS
void *malloc (YYSIZE_T); /* INFRINGES ON USER NAME SPACE */
#   endif
#  endif
#  ifndef YYFREE
#   define YYFREE free
#   if ! defined free && ! defined EXIT_SUCCESS
void free (void *); /* INFRINGES ON USER NAME SPACE */
#   endif
#  endif
# endif
# define YYCOPY_NEEDED 1
#endif /* 1 */

#if (! defined yyoverflow \
     && (! defined __cplusplus \
         || (defined SYN_LTYPE_IS_TRIVIAL && SYN_LTYPE_IS_TRIVIAL \
             && defined SYN_STYPE_IS_TRIVIAL && SYN_STYPE_IS_TRIVIAL)))

/* A type that is properly aligned for any stack member.  */
union yyalloc
{
  yy_state_t yyss_alloc;
  YYSTYPE yyvs_alloc;
  YYLTYPE yyls_alloc;
};

/* The size of the maximum gap between one aligned stack and the next.  */
# define YYSTACK_GAP_MAXIMUM (YYSIZEOF (union yyalloc) - 1)

/* The size of an array large to enough to hold all stacks, each with
   N elements.  */
# define YYSTACK_BYTES(N) \
     ((N) * (YYSIZEOF (yy_state_t) + YYSIZEOF (YYSTYPE) \
             + YYSIZEOF (YYLTYPE)) \
      + 2 * YYSTACK_GAP_MAXIMUM)

# define YYCOPY_NEEDED 1

/* Relocate STACK from its old location to the new one.  The
   local variables YYSIZE and YYSTACKSIZE give the old and new number of
   elements in the stack, and YYPTR gives the new location of the
   stack.  Advance YYPTR to a properly aligned location for the next
   stack.  */
# define YYSTACK_RELOCATE(Stack_alloc, Stack)                           \
    do                                                                  \
      {                                                                 \
        YYPTRDIFF_T yynewbytes;                                         \
        YYCOPY (&yyptr->Stack_alloc, Stack, yysize);                    \
        Stack = &yyptr->Stack_alloc;                                    \
        yynewbytes = yystacksize * YYSIZEOF (*Stack) + YYSTACK_GAP_MAXIMUM; \
        yyptr += yynewbytes / YYSIZEOF (*yyptr);                        \
      }                                                                 \
    while (0)

#endif

#if defined YYCOPY_NEEDED && YYCOPY_NEEDED
/* Copy COUNT objects from SRC to DST.  The source and destination do
   not overlap.  */
# ifndef YYCOPY
#  if defined __GNUC__ && 1 < __GNUC__
#   define YYCOPY(Dst, Src, Count) \
      __builtin_memcpy (Dst, Src, YY_CAST (YYSIZE_T, (Count)) * sizeof (*(Src)))
#  else
#   define YYCOPY(Dst, Src, Count)              \
      do                                        \
        {                                       \
          YYPTRDIFF_T yyi;                      \
          for (yyi = 0; yyi < (Count); yyi++)   \
            (Dst)[yyi] = (Src)[yyi];            \
        }                                       \
      while (0)
#  endif
# endif
#endif /* !YYCOPY_NEEDED */

/* YYFINAL -- State number of the termination state.  */
#define YYFINAL  2
/* YYLAST -- Last index in YYTABLE.  */
#define YYLAST   170

/* YYNTOKENS -- Number of terminals.  */
#define YYNTOKENS  32
/* YYNNTS -- Number of nonterminals.  */
#define YYNNTS  28
/* YYNRULES -- Number of rules.  */
#define YYNRULES  69
/* YYNSTATES -- Number of states.  */
#define YYNSTATES  144

/* YYMAXUTOK -- Last valid token kind.  */
#define YYMAXUTOK   286


/* YYTRANSLATE(TOKEN-NUM) -- Symbol number corresponding to TOKEN-NUM
   as returned by yylex, with out-of-bounds checking.  */
#define YYTRANSLATE(YYX)                                \
  (0 <= (YYX) && (YYX) <= YYMAXUTOK                     \
   ? YY_CAST (yysymbol_kind_t, yytranslate[YYX])        \
   : YYSYMBOL_YYUNDEF)

/* YYTRANSLATE[TOKEN-NUM] -- Symbol number corresponding to TOKEN-NUM
   as returned by yylex.  */
static const yytype_int8 yytranslate[] =
{
       0,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     2,     2,     2,     2,
       2,     2,     2,     2,     2,     2,     1,     2,     3,     4,
       5,     6,     7,     8,     9,    10,    11,    12,    13,    14,
      15,    16,    17,    18,    19,    20,    21,    22,    23,    24,
      25,    26,    27,    28,    29,    30,    31
};

#if SYN_DEBUG
/* YYRLINE[YYN] -- Source line where rule number YYN was defined.  */
static const yytype_int16 yyrline[] =
{
       0,    68,    68,    69,    74,    75,    76,    77,    78,    79,
      80,    84,    89,    90,    94,   102,   112,   113,   117,   118,
     122,   123,   127,   128,   132,   140,   149,   150,   154,   155,
     162,   168,   177,   178,   186,   187,   195,   196,   201,   205,
     206,   210,   214,   218,   222,   226,   227,   232,   233,   238,
     239,   240,   241,   242,   243,   247,   248,   252,   253,   257,
     258,   259,   260,   261,   262,   265,   269,   270,   274,   275
};
#endif

/** Accessing symbol of state STATE.  */
#define YY_ACCESSING_SYMBOL(State) YY_CAST (yysymbol_kind_t, yystos[State])

#if 1
/* The user-facing name of the symbol whose (internal) number is
   YYSYMBOL.  No bounds checking.  */
static const char *yysymbol_name (yysymbol_kind_t yysymbol) YY_ATTRIBUTE_UNUSED;

static const char *
yysymbol_name (yysymbol_kind_t yysymbol)
{
  static const char *const yy_sname[] =
  {
  "end of file", "error", "invalid token", "identifier", "dtype",
  "integer", "number", "use", "param", "op", "kernel", "let", "return",
  "for", "in", "->", "..", "(", ")", "[", "]", "{", "}", ",", ";", ":",
  "=", "@", "+", "-", "*", "/", "$accept", "file", "item", "use",
  "param_list", "param_one", "op", "ret_types", "type_list", "arg_list",
  "args", "arg", "kernel", "name_list", "names", "type", "dims", "place",
  "place_args", "block", "stmts", "stmt", "expr", "unary", "postfix",
  "primary", "opt_exprs", "exprs", YY_NULLPTR
  };
  return yy_sname[yysymbol];
}
#endif

#define YYPACT_NINF (-78)

#define yypact_value_is_default(Yyn) \
  ((Yyn) == YYPACT_NINF)

#define YYTABLE_NINF (-1)

#define yytable_value_is_error(Yyn) \
  0

/* YYPACT[STATE-NUM] -- Index in YYTABLE of the portion describing
   STATE-NUM.  */
static const yytype_int16 yypact[] =
{
     -78,    78,   -78,    31,    22,    29,    51,    60,   -78,   -78,
     -78,   -78,   -78,   -78,   -78,   -78,    20,    40,    50,   -78,
      58,    66,    11,   -78,     2,    29,   -78,    74,    89,   -11,
      68,     1,     2,   101,   -78,   -78,    88,   -78,   -78,   -78,
       2,     2,     2,   116,   -78,   -78,   -78,   -78,    96,    94,
      90,   -78,   -78,   102,   105,   -78,   -78,     2,    56,    89,
      12,   115,     2,    41,   116,   117,   113,   -78,     2,     2,
       2,     2,     2,    86,   134,    74,   124,   150,    79,    86,
       2,    -7,   -78,     2,   136,   -78,     2,   -78,     2,   -78,
     121,   121,   -78,   -78,   137,   137,   -78,    34,   -78,     2,
     -78,   -78,   129,    87,   131,    -1,   -78,    38,   116,     2,
     132,   132,    86,   139,   -78,    95,     2,   -78,     2,     2,
     -78,   138,   158,   -78,   -78,    44,   -78,   -78,   -78,   103,
     111,    70,   -78,   145,   -78,    86,   -78,   -78,   -78,     2,
     -78,   -78,   146,   -78
};

/* YYDEFACT[STATE-NUM] -- Default reduction number in state STATE-NUM.
   Performed when YYTABLE does not specify something else to do.  Zero
   means the default is an error.  */
static const yytype_int8 yydefact[] =
{
       2,     0,     1,     0,     0,     0,     0,     0,     3,     4,
       6,     7,    39,     9,     8,    10,     0,     0,     0,    12,
       0,     0,     0,    11,     0,     0,     5,    20,    26,     0,
       0,     0,     0,     0,    38,    40,    61,    62,    59,    60,
       0,    66,     0,    14,    54,    56,    57,    13,     0,     0,
      21,    22,    28,     0,    27,    47,    48,     0,     0,     0,
       0,     0,    66,     0,    68,     0,    67,    55,     0,     0,
       0,     0,     0,     0,     0,     0,     0,     0,     0,     0,
       0,     0,    45,     0,     0,    63,     0,    65,     0,    53,
      49,    50,    51,    52,    32,    32,    24,     0,    23,     0,
      29,    44,     0,     0,     0,     0,    58,     0,    69,    66,
      34,    34,     0,     0,    16,     0,     0,    41,     0,     0,
      64,     0,     0,    31,    30,     0,    18,    15,    25,     0,
       0,     0,    33,    36,    17,     0,    42,    43,    46,    66,
      35,    19,     0,    37
};

/* YYPGOTO[NTERM-NUM].  */
static const yytype_int16 yypgoto[] =
{
     -78,   -78,   -78,   -78,   -78,   140,   -78,   -78,   -78,   -78,
     -78,    91,   -78,   -78,   104,   -77,    72,    57,   -78,   -29,
     -78,   -78,   -23,   127,   -78,   -78,   -59,    84
};

/* YYDEFGOTO[NTERM-NUM].  */
static const yytype_uint8 yydefgoto[] =
{
       0,     1,     8,     9,    18,    19,    10,   113,   125,    49,
      50,    51,    11,    53,    54,    96,   110,   123,   140,    15,
      22,    35,    64,    44,    45,    46,    65,    66
};

/* YYTABLE[YYPACT[STATE-NUM]] -- What to do in state STATE-NUM.  If
   positive, shift that token.  If negative, reduce the rule whose
   number is the opposite.  If YYTABLE_NINF, syntax error.  */
static const yytype_uint8 yytable[] =
{
      56,    43,   102,    84,    58,    36,    37,    38,    39,    60,
      12,   104,    29,    55,    30,   119,    77,    63,    59,    40,
     114,    41,    31,    32,    33,    16,    68,    69,    70,    71,
      72,    42,    17,    34,    78,   126,    82,    94,    95,    68,
      69,    70,    71,    72,    23,    89,    90,    91,    92,    93,
     121,   112,    12,    13,    20,    14,   120,   103,   141,    85,
     105,    88,   134,    21,    86,   108,    24,   135,    68,    69,
      70,    71,    72,    25,    26,    27,   115,    48,     2,     3,
     142,    79,    80,    28,   127,     4,     5,     6,     7,    94,
      95,    12,    52,   129,    57,   130,   131,    68,    69,    70,
      71,    72,   138,   101,    61,    62,    68,    69,    70,    71,
      72,   117,    74,    75,    68,    69,    70,    71,    72,   128,
      76,    73,    68,    69,    70,    71,    72,   136,    77,    83,
      68,    69,    70,    71,    72,   137,    88,    87,    68,    69,
      70,    71,    72,    68,    69,    70,    71,    72,    68,    97,
      99,    71,    72,   100,   106,   116,   109,   118,   132,   122,
      12,   133,   139,    81,   143,    47,    98,   111,   124,    67,
     107
};

static const yytype_uint8 yycheck[] =
{
      29,    24,    79,    62,     3,     3,     4,     5,     6,    32,
      21,    18,     1,    24,     3,    16,    23,    40,    17,    17,
      97,    19,    11,    12,    13,     3,    27,    28,    29,    30,
      31,    29,     3,    22,    57,   112,    24,     3,     4,    27,
      28,    29,    30,    31,    24,    68,    69,    70,    71,    72,
     109,    17,    21,    22,     3,    24,    18,    80,   135,    18,
      83,    23,    18,     3,    23,    88,    26,    23,    27,    28,
      29,    30,    31,    23,    24,    17,    99,     3,     0,     1,
     139,    25,    26,    17,   113,     7,     8,     9,    10,     3,
       4,    21,     3,   116,    26,   118,   119,    27,    28,    29,
      30,    31,   131,    24,     3,    17,    27,    28,    29,    30,
      31,    24,    18,    23,    27,    28,    29,    30,    31,    24,
      18,    25,    27,    28,    29,    30,    31,    24,    23,    14,
      27,    28,    29,    30,    31,    24,    23,    20,    27,    28,
      29,    30,    31,    27,    28,    29,    30,    31,    27,    15,
      26,    30,    31,     3,    18,    26,    19,    26,    20,    27,
      21,     3,    17,    59,    18,    25,    75,    95,   111,    42,
      86
};

/* YYSTOS[STATE-NUM] -- The symbol kind of the accessing symbol of
   state STATE-NUM.  */
static const yytype_int8 yystos[] =
{
       0,    33,     0,     1,     7,     8,     9,    10,    34,    35,
      38,    44,    21,    22,    24,    51,     3,     3,    36,    37,
       3,     3,    52,    24,    26,    23,    24,    17,    17,     1,
       3,    11,    12,    13,    22,    53,     3,     4,     5,     6,
      17,    19,    29,    54,    55,    56,    57,    37,     3,    41,
      42,    43,     3,    45,    46,    24,    51,    26,     3,    17,
      54,     3,    17,    54,    54,    58,    59,    55,    27,    28,
      29,    30,    31,    25,    18,    23,    18,    23,    54,    25,
      26,    46,    24,    14,    58,    18,    23,    20,    23,    54,
      54,    54,    54,    54,     3,     4,    47,    15,    43,    26,
       3,    24,    47,    54,    18,    54,    18,    59,    54,    19,
      48,    48,    17,    39,    47,    54,    26,    24,    26,    16,
      18,    58,    27,    49,    49,    40,    47,    51,    24,    54,
      54,    54,    20,     3,    18,    23,    24,    24,    51,    17,
      50,    47,    58,    18
};

/* YYR1[RULE-NUM] -- Symbol kind of the left-hand side of rule RULE-NUM.  */
static const yytype_int8 yyr1[] =
{
       0,    32,    33,    33,    34,    34,    34,    34,    34,    34,
      34,    35,    36,    36,    37,    38,    39,    39,    40,    40,
      41,    41,    42,    42,    43,    44,    45,    45,    46,    46,
      47,    47,    48,    48,    49,    49,    50,    50,    51,    52,
      52,    53,    53,    53,    53,    53,    53,    53,    53,    54,
      54,    54,    54,    54,    54,    55,    55,    56,    56,    57,
      57,    57,    57,    57,    57,    57,    58,    58,    59,    59
};

/* YYR2[RULE-NUM] -- Number of symbols on the right-hand side of rule RULE-NUM.  */
static const yytype_int8 yyr2[] =
{
       0,     2,     0,     2,     1,     3,     1,     1,     2,     2,
       2,     3,     1,     3,     3,     8,     1,     3,     1,     3,
       0,     1,     1,     3,     3,     8,     0,     1,     1,     3,
       3,     3,     0,     3,     0,     3,     0,     3,     3,     0,
       2,     5,     7,     7,     4,     3,     7,     2,     2,     3,
       3,     3,     3,     3,     1,     2,     1,     1,     4,     1,
       1,     1,     1,     3,     5,     3,     0,     1,     1,     3
};


enum { YYENOMEM = -2 };

#define yyerrok         (yyerrstatus = 0)
#define yyclearin       (yychar = TK_SYN_EMPTY)

#define YYACCEPT        goto yyacceptlab
#define YYABORT         goto yyabortlab
#define YYERROR         goto yyerrorlab
#define YYNOMEM         goto yyexhaustedlab


#define YYRECOVERING()  (!!yyerrstatus)

#define YYBACKUP(Token, Value)                                    \
  do                                                              \
    if (yychar == TK_SYN_EMPTY)                                        \
      {                                                           \
        yychar = (Token);                                         \
        yylval = (Value);                                         \
        YYPOPSTACK (yylen);                                       \
        yystate = *yyssp;                                         \
        YY_LAC_DISCARD ("YYBACKUP");                              \
        goto yybackup;                                            \
      }                                                           \
    else                                                          \
      {                                                           \
        yyerror (&yylloc, p, YY_("syntax error: cannot back up")); \
        YYERROR;                                                  \
      }                                                           \
  while (0)

/* Backward compatibility with an undocumented macro.
   Use TK_SYN_error or TK_SYN_UNDEF. */
#define YYERRCODE TK_SYN_UNDEF

/* YYLLOC_DEFAULT -- Set CURRENT to span from RHS[1] to RHS[N].
   If N is 0, then set CURRENT to the empty location which ends
   the previous symbol: RHS[0] (always defined).  */

#ifndef YYLLOC_DEFAULT
# define YYLLOC_DEFAULT(Current, Rhs, N)                                \
    do                                                                  \
      if (N)                                                            \
        {                                                               \
          (Current).first_line   = YYRHSLOC (Rhs, 1).first_line;        \
          (Current).first_column = YYRHSLOC (Rhs, 1).first_column;      \
          (Current).last_line    = YYRHSLOC (Rhs, N).last_line;         \
          (Current).last_column  = YYRHSLOC (Rhs, N).last_column;       \
        }                                                               \
      else                                                              \
        {                                                               \
          (Current).first_line   = (Current).last_line   =              \
            YYRHSLOC (Rhs, 0).last_line;                                \
          (Current).first_column = (Current).last_column =              \
            YYRHSLOC (Rhs, 0).last_column;                              \
        }                                                               \
    while (0)
#endif

#define YYRHSLOC(Rhs, K) ((Rhs)[K])


/* Enable debugging if requested.  */
#if SYN_DEBUG

# ifndef YYFPRINTF
#  include <stdio.h> /* INFRINGES ON USER NAME SPACE */
#  define YYFPRINTF fprintf
# endif

# define YYDPRINTF(Args)                        \
do {                                            \
  if (yydebug)                                  \
    YYFPRINTF Args;                             \
} while (0)


/* YYLOCATION_PRINT -- Print the location on the stream.
   This macro was not mandated originally: define only if we know
   we won't break user code: when these are the locations we know.  */

# ifndef YYLOCATION_PRINT

#  if defined YY_LOCATION_PRINT

   /* Temporary convenience wrapper in case some people defined the
      undocumented and private YY_LOCATION_PRINT macros.  */
#   define YYLOCATION_PRINT(File, Loc)  YY_LOCATION_PRINT(File, *(Loc))

#  elif defined SYN_LTYPE_IS_TRIVIAL && SYN_LTYPE_IS_TRIVIAL

/* Print *YYLOCP on YYO.  Private, do not rely on its existence. */

YY_ATTRIBUTE_UNUSED
static int
yy_location_print_ (FILE *yyo, YYLTYPE const * const yylocp)
{
  int res = 0;
  int end_col = 0 != yylocp->last_column ? yylocp->last_column - 1 : 0;
  if (0 <= yylocp->first_line)
    {
      res += YYFPRINTF (yyo, "%d", yylocp->first_line);
      if (0 <= yylocp->first_column)
        res += YYFPRINTF (yyo, ".%d", yylocp->first_column);
    }
  if (0 <= yylocp->last_line)
    {
      if (yylocp->first_line < yylocp->last_line)
        {
          res += YYFPRINTF (yyo, "-%d", yylocp->last_line);
          if (0 <= end_col)
            res += YYFPRINTF (yyo, ".%d", end_col);
        }
      else if (0 <= end_col && yylocp->first_column < end_col)
        res += YYFPRINTF (yyo, "-%d", end_col);
    }
  return res;
}

#   define YYLOCATION_PRINT  yy_location_print_

    /* Temporary convenience wrapper in case some people defined the
       undocumented and private YY_LOCATION_PRINT macros.  */
#   define YY_LOCATION_PRINT(File, Loc)  YYLOCATION_PRINT(File, &(Loc))

#  else

#   define YYLOCATION_PRINT(File, Loc) ((void) 0)
    /* Temporary convenience wrapper in case some people defined the
       undocumented and private YY_LOCATION_PRINT macros.  */
#   define YY_LOCATION_PRINT  YYLOCATION_PRINT

#  endif
# endif /* !defined YYLOCATION_PRINT */


# define YY_SYMBOL_PRINT(Title, Kind, Value, Location)                    \
do {                                                                      \
  if (yydebug)                                                            \
    {                                                                     \
      YYFPRINTF (stderr, "%s ", Title);                                   \
      yy_symbol_print (stderr,                                            \
                  Kind, Value, Location, p); \
      YYFPRINTF (stderr, "\n");                                           \
    }                                                                     \
} while (0)


/*-----------------------------------.
| Print this symbol's value on YYO.  |
`-----------------------------------*/

static void
yy_symbol_value_print (FILE *yyo,
                       yysymbol_kind_t yykind, YYSTYPE const * const yyvaluep, YYLTYPE const * const yylocationp, Parser *p)
{
  FILE *yyoutput = yyo;
  YY_USE (yyoutput);
  YY_USE (yylocationp);
  YY_USE (p);
  if (!yyvaluep)
    return;
  YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN
  YY_USE (yykind);
  YY_IGNORE_MAYBE_UNINITIALIZED_END
}


/*---------------------------.
| Print this symbol on YYO.  |
`---------------------------*/

static void
yy_symbol_print (FILE *yyo,
                 yysymbol_kind_t yykind, YYSTYPE const * const yyvaluep, YYLTYPE const * const yylocationp, Parser *p)
{
  YYFPRINTF (yyo, "%s %s (",
             yykind < YYNTOKENS ? "token" : "nterm", yysymbol_name (yykind));

  YYLOCATION_PRINT (yyo, yylocationp);
  YYFPRINTF (yyo, ": ");
  yy_symbol_value_print (yyo, yykind, yyvaluep, yylocationp, p);
  YYFPRINTF (yyo, ")");
}

/*------------------------------------------------------------------.
| yy_stack_print -- Print the state stack from its BOTTOM up to its |
| TOP (included).                                                   |
`------------------------------------------------------------------*/

static void
yy_stack_print (yy_state_t *yybottom, yy_state_t *yytop)
{
  YYFPRINTF (stderr, "Stack now");
  for (; yybottom <= yytop; yybottom++)
    {
      int yybot = *yybottom;
      YYFPRINTF (stderr, " %d", yybot);
    }
  YYFPRINTF (stderr, "\n");
}

# define YY_STACK_PRINT(Bottom, Top)                            \
do {                                                            \
  if (yydebug)                                                  \
    yy_stack_print ((Bottom), (Top));                           \
} while (0)


/*------------------------------------------------.
| Report that the YYRULE is going to be reduced.  |
`------------------------------------------------*/

static void
yy_reduce_print (yy_state_t *yyssp, YYSTYPE *yyvsp, YYLTYPE *yylsp,
                 int yyrule, Parser *p)
{
  int yylno = yyrline[yyrule];
  int yynrhs = yyr2[yyrule];
  int yyi;
  YYFPRINTF (stderr, "Reducing stack by rule %d (line %d):\n",
             yyrule - 1, yylno);
  /* The symbols being reduced.  */
  for (yyi = 0; yyi < yynrhs; yyi++)
    {
      YYFPRINTF (stderr, "   $%d = ", yyi + 1);
      yy_symbol_print (stderr,
                       YY_ACCESSING_SYMBOL (+yyssp[yyi + 1 - yynrhs]),
                       &yyvsp[(yyi + 1) - (yynrhs)],
                       &(yylsp[(yyi + 1) - (yynrhs)]), p);
      YYFPRINTF (stderr, "\n");
    }
}

# define YY_REDUCE_PRINT(Rule)          \
do {                                    \
  if (yydebug)                          \
    yy_reduce_print (yyssp, yyvsp, yylsp, Rule, p); \
} while (0)

/* Nonzero means print parse trace.  It is left uninitialized so that
   multiple parsers can coexist.  */
int yydebug;
#else /* !SYN_DEBUG */
# define YYDPRINTF(Args) ((void) 0)
# define YY_SYMBOL_PRINT(Title, Kind, Value, Location)
# define YY_STACK_PRINT(Bottom, Top)
# define YY_REDUCE_PRINT(Rule)
#endif /* !SYN_DEBUG */


/* YYINITDEPTH -- initial size of the parser's stacks.  */
#ifndef YYINITDEPTH
# define YYINITDEPTH 200
#endif

/* YYMAXDEPTH -- maximum size the stacks can grow to (effective only
   if the built-in stack extension method is used).

   Do not make this value too large; the results are undefined if
   YYSTACK_ALLOC_MAXIMUM < YYSTACK_BYTES (YYMAXDEPTH)
   evaluated with infinite-precision integer arithmetic.  */

#ifndef YYMAXDEPTH
# define YYMAXDEPTH 10000
#endif


/* Given a state stack such that *YYBOTTOM is its bottom, such that
   *YYTOP is either its top or is YYTOP_EMPTY to indicate an empty
   stack, and such that *YYCAPACITY is the maximum number of elements it
   can hold without a reallocation, make sure there is enough room to
   store YYADD more elements.  If not, allocate a new stack using
   YYSTACK_ALLOC, copy the existing elements, and adjust *YYBOTTOM,
   *YYTOP, and *YYCAPACITY to reflect the new capacity and memory
   location.  If *YYBOTTOM != YYBOTTOM_NO_FREE, then free the old stack
   using YYSTACK_FREE.  Return 0 if successful or if no reallocation is
   required.  Return YYENOMEM if memory is exhausted.  */
static int
yy_lac_stack_realloc (YYPTRDIFF_T *yycapacity, YYPTRDIFF_T yyadd,
#if SYN_DEBUG
                      char const *yydebug_prefix,
                      char const *yydebug_suffix,
#endif
                      yy_state_t **yybottom,
                      yy_state_t *yybottom_no_free,
                      yy_state_t **yytop, yy_state_t *yytop_empty)
{
  YYPTRDIFF_T yysize_old =
    *yytop == yytop_empty ? 0 : *yytop - *yybottom + 1;
  YYPTRDIFF_T yysize_new = yysize_old + yyadd;
  if (*yycapacity < yysize_new)
    {
      YYPTRDIFF_T yyalloc = 2 * yysize_new;
      yy_state_t *yybottom_new;
      /* Use YYMAXDEPTH for maximum stack size given that the stack
         should never need to grow larger than the main state stack
         needs to grow without LAC.  */
      if (YYMAXDEPTH < yysize_new)
        {
          YYDPRINTF ((stderr, "%smax size exceeded%s", yydebug_prefix,
                      yydebug_suffix));
          return YYENOMEM;
        }
      if (YYMAXDEPTH < yyalloc)
        yyalloc = YYMAXDEPTH;
      yybottom_new =
        YY_CAST (yy_state_t *,
                 YYSTACK_ALLOC (YY_CAST (YYSIZE_T,
                                         yyalloc * YYSIZEOF (*yybottom_new))));
      if (!yybottom_new)
        {
          YYDPRINTF ((stderr, "%srealloc failed%s", yydebug_prefix,
                      yydebug_suffix));
          return YYENOMEM;
        }
      if (*yytop != yytop_empty)
        {
          YYCOPY (yybottom_new, *yybottom, yysize_old);
          *yytop = yybottom_new + (yysize_old - 1);
        }
      if (*yybottom != yybottom_no_free)
        YYSTACK_FREE (*yybottom);
      *yybottom = yybottom_new;
      *yycapacity = yyalloc;
    }
  return 0;
}

/* Establish the initial context for the current lookahead if no initial
   context is currently established.

   We define a context as a snapshot of the parser stacks.  We define
   the initial context for a lookahead as the context in which the
   parser initially examines that lookahead in order to select a
   syntactic action.  Thus, if the lookahead eventually proves
   syntactically unacceptable (possibly in a later context reached via a
   series of reductions), the initial context can be used to determine
   the exact set of tokens that would be syntactically acceptable in the
   lookahead's place.  Moreover, it is the context after which any
   further semantic actions would be erroneous because they would be
   determined by a syntactically unacceptable token.

   YY_LAC_ESTABLISH should be invoked when a reduction is about to be
   performed in an inconsistent state (which, for the purposes of LAC,
   includes consistent states that don't know they're consistent because
   their default reductions have been disabled).  Iff there is a
   lookahead token, it should also be invoked before reporting a syntax
   error.  This latter case is for the sake of the debugging output.

   For parse.lac=full, the implementation of YY_LAC_ESTABLISH is as
   follows.  If no initial context is currently established for the
   current lookahead, then check if that lookahead can eventually be
   shifted if syntactic actions continue from the current context.
   Report a syntax error if it cannot.  */
#define YY_LAC_ESTABLISH                                                \
do {                                                                    \
  if (!yy_lac_established)                                              \
    {                                                                   \
      YYDPRINTF ((stderr,                                               \
                  "LAC: initial context established for %s\n",          \
                  yysymbol_name (yytoken)));                            \
      yy_lac_established = 1;                                           \
      switch (yy_lac (yyesa, &yyes, &yyes_capacity, yyssp, yytoken))    \
        {                                                               \
        case YYENOMEM:                                                  \
          YYNOMEM;                                                      \
        case 1:                                                         \
          goto yyerrlab;                                                \
        }                                                               \
    }                                                                   \
} while (0)

/* Discard any previous initial lookahead context because of Event,
   which may be a lookahead change or an invalidation of the currently
   established initial context for the current lookahead.

   The most common example of a lookahead change is a shift.  An example
   of both cases is syntax error recovery.  That is, a syntax error
   occurs when the lookahead is syntactically erroneous for the
   currently established initial context, so error recovery manipulates
   the parser stacks to try to find a new initial context in which the
   current lookahead is syntactically acceptable.  If it fails to find
   such a context, it discards the lookahead.  */
#if SYN_DEBUG
# define YY_LAC_DISCARD(Event)                                           \
do {                                                                     \
  if (yy_lac_established)                                                \
    {                                                                    \
      YYDPRINTF ((stderr, "LAC: initial context discarded due to "       \
                  Event "\n"));                                          \
      yy_lac_established = 0;                                            \
    }                                                                    \
} while (0)
#else
# define YY_LAC_DISCARD(Event) yy_lac_established = 0
#endif

/* Given the stack whose top is *YYSSP, return 0 iff YYTOKEN can
   eventually (after perhaps some reductions) be shifted, return 1 if
   not, or return YYENOMEM if memory is exhausted.  As preconditions and
   postconditions: *YYES_CAPACITY is the allocated size of the array to
   which *YYES points, and either *YYES = YYESA or *YYES points to an
   array allocated with YYSTACK_ALLOC.  yy_lac may overwrite the
   contents of either array, alter *YYES and *YYES_CAPACITY, and free
   any old *YYES other than YYESA.  */
static int
yy_lac (yy_state_t *yyesa, yy_state_t **yyes,
        YYPTRDIFF_T *yyes_capacity, yy_state_t *yyssp, yysymbol_kind_t yytoken)
{
  yy_state_t *yyes_prev = yyssp;
  yy_state_t *yyesp = yyes_prev;
  /* Reduce until we encounter a shift and thereby accept the token.  */
  YYDPRINTF ((stderr, "LAC: checking lookahead %s:", yysymbol_name (yytoken)));
  if (yytoken == YYSYMBOL_YYUNDEF)
    {
      YYDPRINTF ((stderr, " Always Err\n"));
      return 1;
    }
  while (1)
    {
      int yyrule = yypact[+*yyesp];
      if (yypact_value_is_default (yyrule)
          || (yyrule += yytoken) < 0 || YYLAST < yyrule
          || yycheck[yyrule] != yytoken)
        {
          /* Use the default action.  */
          yyrule = yydefact[+*yyesp];
          if (yyrule == 0)
            {
              YYDPRINTF ((stderr, " Err\n"));
              return 1;
            }
        }
      else
        {
          /* Use the action from yytable.  */
          yyrule = yytable[yyrule];
          if (yytable_value_is_error (yyrule))
            {
              YYDPRINTF ((stderr, " Err\n"));
              return 1;
            }
          if (0 < yyrule)
            {
              YYDPRINTF ((stderr, " S%d\n", yyrule));
              return 0;
            }
          yyrule = -yyrule;
        }
      /* By now we know we have to simulate a reduce.  */
      YYDPRINTF ((stderr, " R%d", yyrule - 1));
      {
        /* Pop the corresponding number of values from the stack.  */
        YYPTRDIFF_T yylen = yyr2[yyrule];
        /* First pop from the LAC stack as many tokens as possible.  */
        if (yyesp != yyes_prev)
          {
            YYPTRDIFF_T yysize = yyesp - *yyes + 1;
            if (yylen < yysize)
              {
                yyesp -= yylen;
                yylen = 0;
              }
            else
              {
                yyesp = yyes_prev;
                yylen -= yysize;
              }
          }
        /* Only afterwards look at the main stack.  */
        if (yylen)
          yyesp = yyes_prev -= yylen;
      }
      /* Push the resulting state of the reduction.  */
      {
        yy_state_fast_t yystate;
        {
          const int yylhs = yyr1[yyrule] - YYNTOKENS;
          const int yyi = yypgoto[yylhs] + *yyesp;
          yystate = (0 <= yyi && yyi <= YYLAST && yycheck[yyi] == *yyesp
                     ? yytable[yyi]
                     : yydefgoto[yylhs]);
        }
        if (yyesp == yyes_prev)
          {
            yyesp = *yyes;
            YY_IGNORE_USELESS_CAST_BEGIN
            *yyesp = YY_CAST (yy_state_t, yystate);
            YY_IGNORE_USELESS_CAST_END
          }
        else
          {
            if (yy_lac_stack_realloc (yyes_capacity, 1,
#if SYN_DEBUG
                                      " (", ")",
#endif
                                      yyes, yyesa, &yyesp, yyes_prev))
              {
                YYDPRINTF ((stderr, "\n"));
                return YYENOMEM;
              }
            YY_IGNORE_USELESS_CAST_BEGIN
            *++yyesp = YY_CAST (yy_state_t, yystate);
            YY_IGNORE_USELESS_CAST_END
          }
        YYDPRINTF ((stderr, " G%d", yystate));
      }
    }
}

/* Context of a parse error.  */
typedef struct
{
  yy_state_t *yyssp;
  yy_state_t *yyesa;
  yy_state_t **yyes;
  YYPTRDIFF_T *yyes_capacity;
  yysymbol_kind_t yytoken;
  YYLTYPE *yylloc;
} yypcontext_t;

/* Put in YYARG at most YYARGN of the expected tokens given the
   current YYCTX, and return the number of tokens stored in YYARG.  If
   YYARG is null, return the number of expected tokens (guaranteed to
   be less than YYNTOKENS).  Return YYENOMEM on memory exhaustion.
   Return 0 if there are more than YYARGN expected tokens, yet fill
   YYARG up to YYARGN. */
static int
yypcontext_expected_tokens (const yypcontext_t *yyctx,
                            yysymbol_kind_t yyarg[], int yyargn)
{
  /* Actual size of YYARG. */
  int yycount = 0;

  int yyx;
  for (yyx = 0; yyx < YYNTOKENS; ++yyx)
    {
      yysymbol_kind_t yysym = YY_CAST (yysymbol_kind_t, yyx);
      if (yysym != YYSYMBOL_YYerror && yysym != YYSYMBOL_YYUNDEF)
        switch (yy_lac (yyctx->yyesa, yyctx->yyes, yyctx->yyes_capacity, yyctx->yyssp, yysym))
          {
          case YYENOMEM:
            return YYENOMEM;
          case 1:
            continue;
          default:
            if (!yyarg)
              ++yycount;
            else if (yycount == yyargn)
              return 0;
            else
              yyarg[yycount++] = yysym;
          }
    }
  if (yyarg && yycount == 0 && 0 < yyargn)
    yyarg[0] = YYSYMBOL_YYEMPTY;
  return yycount;
}




/* The kind of the lookahead of this context.  */
static yysymbol_kind_t
yypcontext_token (const yypcontext_t *yyctx) YY_ATTRIBUTE_UNUSED;

static yysymbol_kind_t
yypcontext_token (const yypcontext_t *yyctx)
{
  return yyctx->yytoken;
}

/* The location of the lookahead of this context.  */
static YYLTYPE *
yypcontext_location (const yypcontext_t *yyctx) YY_ATTRIBUTE_UNUSED;

static YYLTYPE *
yypcontext_location (const yypcontext_t *yyctx)
{
  return yyctx->yylloc;
}

/* User defined function to report a syntax error.  */
static int
yyreport_syntax_error (const yypcontext_t *yyctx, Parser *p);

/*-----------------------------------------------.
| Release the memory associated to this symbol.  |
`-----------------------------------------------*/

static void
yydestruct (const char *yymsg,
            yysymbol_kind_t yykind, YYSTYPE *yyvaluep, YYLTYPE *yylocationp, Parser *p)
{
  YY_USE (yyvaluep);
  YY_USE (yylocationp);
  YY_USE (p);
  if (!yymsg)
    yymsg = "Deleting";
  YY_SYMBOL_PRINT (yymsg, yykind, yyvaluep, yylocationp);

  YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN
  YY_USE (yykind);
  YY_IGNORE_MAYBE_UNINITIALIZED_END
}






/*----------.
| yyparse.  |
`----------*/

int
yyparse (Parser *p)
{
/* Lookahead token kind.  */
int yychar;


/* The semantic value of the lookahead symbol.  */
/* Default value used for initialization, for pacifying older GCCs
   or non-GCC compilers.  */
YY_INITIAL_VALUE (static YYSTYPE yyval_default;)
YYSTYPE yylval YY_INITIAL_VALUE (= yyval_default);

/* Location data for the lookahead symbol.  */
static YYLTYPE yyloc_default
# if defined SYN_LTYPE_IS_TRIVIAL && SYN_LTYPE_IS_TRIVIAL
  = { 1, 1, 1, 1 }
# endif
;
YYLTYPE yylloc = yyloc_default;

    /* Number of syntax errors so far.  */
    int yynerrs = 0;

    yy_state_fast_t yystate = 0;
    /* Number of tokens to shift before error messages enabled.  */
    int yyerrstatus = 0;

    /* Refer to the stacks through separate pointers, to allow yyoverflow
       to reallocate them elsewhere.  */

    /* Their size.  */
    YYPTRDIFF_T yystacksize = YYINITDEPTH;

    /* The state stack: array, bottom, top.  */
    yy_state_t yyssa[YYINITDEPTH];
    yy_state_t *yyss = yyssa;
    yy_state_t *yyssp = yyss;

    /* The semantic value stack: array, bottom, top.  */
    YYSTYPE yyvsa[YYINITDEPTH];
    YYSTYPE *yyvs = yyvsa;
    YYSTYPE *yyvsp = yyvs;

    /* The location stack: array, bottom, top.  */
    YYLTYPE yylsa[YYINITDEPTH];
    YYLTYPE *yyls = yylsa;
    YYLTYPE *yylsp = yyls;

    yy_state_t yyesa[20];
    yy_state_t *yyes = yyesa;
    YYPTRDIFF_T yyes_capacity = 20 < YYMAXDEPTH ? 20 : YYMAXDEPTH;

  /* Whether LAC context is established.  A Boolean.  */
  int yy_lac_established = 0;
  int yyn;
  /* The return value of yyparse.  */
  int yyresult;
  /* Lookahead symbol kind.  */
  yysymbol_kind_t yytoken = YYSYMBOL_YYEMPTY;
  /* The variables used to return semantic value and location from the
     action routines.  */
  YYSTYPE yyval;
  YYLTYPE yyloc;

  /* The locations where the error started and ended.  */
  YYLTYPE yyerror_range[3];



#define YYPOPSTACK(N)   (yyvsp -= (N), yyssp -= (N), yylsp -= (N))

  /* The number of symbols on the RHS of the reduced rule.
     Keep to zero when no symbol should be popped.  */
  int yylen = 0;

  YYDPRINTF ((stderr, "Starting parse\n"));

  yychar = TK_SYN_EMPTY; /* Cause a token to be read.  */

  yylsp[0] = yylloc;
  goto yysetstate;


/*------------------------------------------------------------.
| yynewstate -- push a new state, which is found in yystate.  |
`------------------------------------------------------------*/
yynewstate:
  /* In all cases, when you get here, the value and location stacks
     have just been pushed.  So pushing a state here evens the stacks.  */
  yyssp++;


/*--------------------------------------------------------------------.
| yysetstate -- set current state (the top of the stack) to yystate.  |
`--------------------------------------------------------------------*/
yysetstate:
  YYDPRINTF ((stderr, "Entering state %d\n", yystate));
  YY_ASSERT (0 <= yystate && yystate < YYNSTATES);
  YY_IGNORE_USELESS_CAST_BEGIN
  *yyssp = YY_CAST (yy_state_t, yystate);
  YY_IGNORE_USELESS_CAST_END
  YY_STACK_PRINT (yyss, yyssp);

  if (yyss + yystacksize - 1 <= yyssp)
#if !defined yyoverflow && !defined YYSTACK_RELOCATE
    YYNOMEM;
#else
    {
      /* Get the current used size of the three stacks, in elements.  */
      YYPTRDIFF_T yysize = yyssp - yyss + 1;

# if defined yyoverflow
      {
        /* Give user a chance to reallocate the stack.  Use copies of
           these so that the &'s don't force the real ones into
           memory.  */
        yy_state_t *yyss1 = yyss;
        YYSTYPE *yyvs1 = yyvs;
        YYLTYPE *yyls1 = yyls;

        /* Each stack pointer address is followed by the size of the
           data in use in that stack, in bytes.  This used to be a
           conditional around just the two extra args, but that might
           be undefined if yyoverflow is a macro.  */
        yyoverflow (YY_("memory exhausted"),
                    &yyss1, yysize * YYSIZEOF (*yyssp),
                    &yyvs1, yysize * YYSIZEOF (*yyvsp),
                    &yyls1, yysize * YYSIZEOF (*yylsp),
                    &yystacksize);
        yyss = yyss1;
        yyvs = yyvs1;
        yyls = yyls1;
      }
# else /* defined YYSTACK_RELOCATE */
      /* Extend the stack our own way.  */
      if (YYMAXDEPTH <= yystacksize)
        YYNOMEM;
      yystacksize *= 2;
      if (YYMAXDEPTH < yystacksize)
        yystacksize = YYMAXDEPTH;

      {
        yy_state_t *yyss1 = yyss;
        union yyalloc *yyptr =
          YY_CAST (union yyalloc *,
                   YYSTACK_ALLOC (YY_CAST (YYSIZE_T, YYSTACK_BYTES (yystacksize))));
        if (! yyptr)
          YYNOMEM;
        YYSTACK_RELOCATE (yyss_alloc, yyss);
        YYSTACK_RELOCATE (yyvs_alloc, yyvs);
        YYSTACK_RELOCATE (yyls_alloc, yyls);
#  undef YYSTACK_RELOCATE
        if (yyss1 != yyssa)
          YYSTACK_FREE (yyss1);
      }
# endif

      yyssp = yyss + yysize - 1;
      yyvsp = yyvs + yysize - 1;
      yylsp = yyls + yysize - 1;

      YY_IGNORE_USELESS_CAST_BEGIN
      YYDPRINTF ((stderr, "Stack size increased to %ld\n",
                  YY_CAST (long, yystacksize)));
      YY_IGNORE_USELESS_CAST_END

      if (yyss + yystacksize - 1 <= yyssp)
        YYABORT;
    }
#endif /* !defined yyoverflow && !defined YYSTACK_RELOCATE */


  if (yystate == YYFINAL)
    YYACCEPT;

  goto yybackup;


/*-----------.
| yybackup.  |
`-----------*/
yybackup:
  /* Do appropriate processing given the current state.  Read a
     lookahead token if we need one and don't already have one.  */

  /* First try to decide what to do without reference to lookahead token.  */
  yyn = yypact[yystate];
  if (yypact_value_is_default (yyn))
    goto yydefault;

  /* Not known => get a lookahead token if don't already have one.  */

  /* YYCHAR is either empty, or end-of-input, or a valid lookahead.  */
  if (yychar == TK_SYN_EMPTY)
    {
      YYDPRINTF ((stderr, "Reading a token\n"));
      yychar = yylex (&yylval, &yylloc, p);
    }

  if (yychar <= TK_YYEOF)
    {
      yychar = TK_YYEOF;
      yytoken = YYSYMBOL_YYEOF;
      YYDPRINTF ((stderr, "Now at end of input.\n"));
    }
  else if (yychar == TK_SYN_error)
    {
      /* The scanner already issued an error message, process directly
         to error recovery.  But do not keep the error token as
         lookahead, it is too special and may lead us to an endless
         loop in error recovery. */
      yychar = TK_SYN_UNDEF;
      yytoken = YYSYMBOL_YYerror;
      yyerror_range[1] = yylloc;
      goto yyerrlab1;
    }
  else
    {
      yytoken = YYTRANSLATE (yychar);
      YY_SYMBOL_PRINT ("Next token is", yytoken, &yylval, &yylloc);
    }

  /* If the proper action on seeing token YYTOKEN is to reduce or to
     detect an error, take that action.  */
  yyn += yytoken;
  if (yyn < 0 || YYLAST < yyn || yycheck[yyn] != yytoken)
    {
      YY_LAC_ESTABLISH;
      goto yydefault;
    }
  yyn = yytable[yyn];
  if (yyn <= 0)
    {
      if (yytable_value_is_error (yyn))
        goto yyerrlab;
      yyn = -yyn;
      YY_LAC_ESTABLISH;
      goto yyreduce;
    }

  /* Count tokens shifted since error; after three, turn off error
     status.  */
  if (yyerrstatus)
    yyerrstatus--;

  /* Shift the lookahead token.  */
  YY_SYMBOL_PRINT ("Shifting", yytoken, &yylval, &yylloc);
  yystate = yyn;
  YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN
  *++yyvsp = yylval;
  YY_IGNORE_MAYBE_UNINITIALIZED_END
  *++yylsp = yylloc;

  /* Discard the shifted token.  */
  yychar = TK_SYN_EMPTY;
  YY_LAC_DISCARD ("shift");
  goto yynewstate;


/*-----------------------------------------------------------.
| yydefault -- do the default action for the current state.  |
`-----------------------------------------------------------*/
yydefault:
  yyn = yydefact[yystate];
  if (yyn == 0)
    goto yyerrlab;
  goto yyreduce;


/*-----------------------------.
| yyreduce -- do a reduction.  |
`-----------------------------*/
yyreduce:
  /* yyn is the number of a rule to reduce with.  */
  yylen = yyr2[yyn];

  /* If YYLEN is nonzero, implement the default value of the action:
     '$$ = $1'.

     Otherwise, the following line sets YYVAL to garbage.
     This behavior is undocumented and Bison
     users should not rely upon it.  Assigning to YYVAL
     unconditionally makes the parser a bit smaller, and it avoids a
     GCC warning that YYVAL may be used uninitialized.  */
  yyval = yyvsp[1-yylen];

  /* Default location. */
  YYLLOC_DEFAULT (yyloc, (yylsp - yylen), yylen);
  yyerror_range[1] = yyloc;
  YY_REDUCE_PRINT (yyn);
  {
    int yychar_backup = yychar;
    switch (yyn)
      {
  case 3: /* file: file item  */
#line 69 "parser/parser.y"
                    { add_item(p, (yyvsp[0].TK_item)); }
#line 1666 "parser/parser.c"
    break;

  case 5: /* item: "param" param_list ";"  */
#line 75 "parser/parser.y"
                               { (yyval.TK_item) = (yyvsp[-1].TK_param_list); }
#line 1672 "parser/parser.c"
    break;

  case 8: /* item: error ";"  */
#line 78 "parser/parser.y"
                    { (yyval.TK_item) = NULL; yyerrok; }
#line 1678 "parser/parser.c"
    break;

  case 9: /* item: error "}"  */
#line 79 "parser/parser.y"
                    { (yyval.TK_item) = NULL; yyerrok; }
#line 1684 "parser/parser.c"
    break;

  case 10: /* item: error block  */
#line 80 "parser/parser.y"
                      { (yyval.TK_item) = NULL; yyerrok; }
#line 1690 "parser/parser.c"
    break;

  case 11: /* use: "use" "identifier" ";"  */
#line 84 "parser/parser.y"
                        { (yyval.TK_use) = ast_new(p, NK_USE, (yylsp[-1])); (yyval.TK_use)->u.name = (yyvsp[-1].TK_IDENT); }
#line 1696 "parser/parser.c"
    break;

  case 13: /* param_list: param_list "," param_one  */
#line 90 "parser/parser.y"
                                   { (yyval.TK_param_list) = append((yyvsp[-2].TK_param_list), (yyvsp[0].TK_param_one)); }
#line 1702 "parser/parser.c"
    break;

  case 14: /* param_one: "identifier" "=" expr  */
#line 94 "parser/parser.y"
                         {
		(yyval.TK_param_one) = ast_new(p, NK_PARAM, (yyloc));
		(yyval.TK_param_one)->u.let.name = (yyvsp[-2].TK_IDENT); (yyval.TK_param_one)->u.let.nspan = (yylsp[-2]); (yyval.TK_param_one)->u.let.init = (yyvsp[0].TK_expr);
	}
#line 1711 "parser/parser.c"
    break;

  case 15: /* op: "op" "identifier" "(" arg_list ")" "->" ret_types block  */
#line 102 "parser/parser.y"
                                                         {
		(yyval.TK_op) = ast_new(p, NK_OP, (yyloc));
		(yyval.TK_op)->u.fn.name = (yyvsp[-6].TK_IDENT); (yyval.TK_op)->u.fn.nspan = (yylsp[-6]);
		(yyval.TK_op)->u.fn.args = (yyvsp[-4].TK_arg_list); (yyval.TK_op)->u.fn.nargs = ast_count((yyvsp[-4].TK_arg_list));
		(yyval.TK_op)->u.fn.rets = (yyvsp[-1].TK_ret_types); (yyval.TK_op)->u.fn.nrets = ast_count((yyvsp[-1].TK_ret_types));
		(yyval.TK_op)->u.fn.body = (yyvsp[0].TK_block);
	}
#line 1723 "parser/parser.c"
    break;

  case 17: /* ret_types: "(" type_list ")"  */
#line 113 "parser/parser.y"
                            { (yyval.TK_ret_types) = (yyvsp[-1].TK_type_list); }
#line 1729 "parser/parser.c"
    break;

  case 19: /* type_list: type_list "," type  */
#line 118 "parser/parser.y"
                             { (yyval.TK_type_list) = append((yyvsp[-2].TK_type_list), (yyvsp[0].TK_type)); }
#line 1735 "parser/parser.c"
    break;

  case 20: /* arg_list: %empty  */
#line 122 "parser/parser.y"
                 { (yyval.TK_arg_list) = NULL; }
#line 1741 "parser/parser.c"
    break;

  case 23: /* args: args "," arg  */
#line 128 "parser/parser.y"
                       { (yyval.TK_args) = append((yyvsp[-2].TK_args), (yyvsp[0].TK_arg)); }
#line 1747 "parser/parser.c"
    break;

  case 24: /* arg: "identifier" ":" type  */
#line 132 "parser/parser.y"
                         {
		(yyval.TK_arg) = ast_new(p, NK_ARG, (yyloc));
		(yyval.TK_arg)->u.let.name = (yyvsp[-2].TK_IDENT); (yyval.TK_arg)->u.let.nspan = (yylsp[-2]); (yyval.TK_arg)->u.let.type = (yyvsp[0].TK_type);
	}
#line 1756 "parser/parser.c"
    break;

  case 25: /* kernel: "kernel" "identifier" "(" name_list ")" "=" expr ";"  */
#line 140 "parser/parser.y"
                                                      {
		(yyval.TK_kernel) = ast_new(p, NK_KERNEL, (yyloc));
		(yyval.TK_kernel)->u.fn.name = (yyvsp[-6].TK_IDENT); (yyval.TK_kernel)->u.fn.nspan = (yylsp[-6]);
		(yyval.TK_kernel)->u.fn.args = (yyvsp[-4].TK_name_list); (yyval.TK_kernel)->u.fn.nargs = ast_count((yyvsp[-4].TK_name_list));
		(yyval.TK_kernel)->u.fn.body = (yyvsp[-1].TK_expr);
	}
#line 1767 "parser/parser.c"
    break;

  case 26: /* name_list: %empty  */
#line 149 "parser/parser.y"
                 { (yyval.TK_name_list) = NULL; }
#line 1773 "parser/parser.c"
    break;

  case 28: /* names: "identifier"  */
#line 154 "parser/parser.y"
                { (yyval.TK_names) = ast_new(p, NK_NAME, (yylsp[0])); (yyval.TK_names)->u.name = (yyvsp[0].TK_IDENT); }
#line 1779 "parser/parser.c"
    break;

  case 29: /* names: names "," "identifier"  */
#line 155 "parser/parser.y"
                          {
		Node *n = ast_new(p, NK_NAME, (yylsp[0])); n->u.name = (yyvsp[0].TK_IDENT); (yyval.TK_names) = append((yyvsp[-2].TK_names), n);
	}
#line 1787 "parser/parser.c"
    break;

  case 30: /* type: "dtype" dims place  */
#line 162 "parser/parser.y"
                           {
		(yyval.TK_type) = ast_new(p, NK_TYPE, (yyloc));
		(yyval.TK_type)->u.type.dtype = (yyvsp[-2].TK_DTYPE); (yyval.TK_type)->u.type.dspan = (yylsp[-2]);
		(yyval.TK_type)->u.type.dims = (yyvsp[-1].TK_dims); (yyval.TK_type)->u.type.rank = ast_count((yyvsp[-1].TK_dims));
		(yyval.TK_type)->u.type.place = (yyvsp[0].TK_place);
	}
#line 1798 "parser/parser.c"
    break;

  case 31: /* type: "identifier" dims place  */
#line 168 "parser/parser.y"
                           {
		(yyval.TK_type) = ast_new(p, NK_TYPE, (yyloc));
		(yyval.TK_type)->u.type.dtype = (yyvsp[-2].TK_IDENT); (yyval.TK_type)->u.type.dspan = (yylsp[-2]); (yyval.TK_type)->u.type.dvar = true;
		(yyval.TK_type)->u.type.dims = (yyvsp[-1].TK_dims); (yyval.TK_type)->u.type.rank = ast_count((yyvsp[-1].TK_dims));
		(yyval.TK_type)->u.type.place = (yyvsp[0].TK_place);
	}
#line 1809 "parser/parser.c"
    break;

  case 32: /* dims: %empty  */
#line 177 "parser/parser.y"
                 { (yyval.TK_dims) = NULL; }
#line 1815 "parser/parser.c"
    break;

  case 33: /* dims: "[" opt_exprs "]"  */
#line 178 "parser/parser.y"
                            {
		(yyval.TK_dims) = (yyvsp[-1].TK_opt_exprs);
		if (ast_count((yyvsp[-1].TK_opt_exprs)) > LIM_RANK)
			diag_error((yyloc), "tensor rank %d is over the limit of %d", ast_count((yyvsp[-1].TK_opt_exprs)), LIM_RANK);
	}
#line 1825 "parser/parser.c"
    break;

  case 34: /* place: %empty  */
#line 186 "parser/parser.y"
                 { (yyval.TK_place) = NULL; }
#line 1831 "parser/parser.c"
    break;

  case 35: /* place: "@" "identifier" place_args  */
#line 187 "parser/parser.y"
                               {
		(yyval.TK_place) = ast_new(p, NK_PLACE, (yyloc));
		(yyval.TK_place)->u.call.name = (yyvsp[-1].TK_IDENT); (yyval.TK_place)->u.call.nspan = (yylsp[-1]);
		(yyval.TK_place)->u.call.args = (yyvsp[0].TK_place_args); (yyval.TK_place)->u.call.nargs = ast_count((yyvsp[0].TK_place_args));
	}
#line 1841 "parser/parser.c"
    break;

  case 36: /* place_args: %empty  */
#line 195 "parser/parser.y"
                 { (yyval.TK_place_args) = NULL; }
#line 1847 "parser/parser.c"
    break;

  case 37: /* place_args: "(" opt_exprs ")"  */
#line 196 "parser/parser.y"
                            { (yyval.TK_place_args) = (yyvsp[-1].TK_opt_exprs); }
#line 1853 "parser/parser.c"
    break;

  case 38: /* block: "{" stmts "}"  */
#line 201 "parser/parser.y"
                        { (yyval.TK_block) = (yyvsp[-1].TK_stmts); }
#line 1859 "parser/parser.c"
    break;

  case 39: /* stmts: %empty  */
#line 205 "parser/parser.y"
                 { (yyval.TK_stmts) = NULL; }
#line 1865 "parser/parser.c"
    break;

  case 40: /* stmts: stmts stmt  */
#line 206 "parser/parser.y"
                     { (yyval.TK_stmts) = (yyvsp[0].TK_stmt) ? append((yyvsp[-1].TK_stmts), (yyvsp[0].TK_stmt)) : (yyvsp[-1].TK_stmts); }
#line 1871 "parser/parser.c"
    break;

  case 41: /* stmt: "let" "identifier" "=" expr ";"  */
#line 210 "parser/parser.y"
                                 {
		(yyval.TK_stmt) = ast_new(p, NK_LET, (yyloc));
		(yyval.TK_stmt)->u.let.name = (yyvsp[-3].TK_IDENT); (yyval.TK_stmt)->u.let.nspan = (yylsp[-3]); (yyval.TK_stmt)->u.let.init = (yyvsp[-1].TK_expr);
	}
#line 1880 "parser/parser.c"
    break;

  case 42: /* stmt: "let" "identifier" ":" type "=" expr ";"  */
#line 214 "parser/parser.y"
                                          {
		(yyval.TK_stmt) = ast_new(p, NK_LET, (yyloc));
		(yyval.TK_stmt)->u.let.name = (yyvsp[-5].TK_IDENT); (yyval.TK_stmt)->u.let.nspan = (yylsp[-5]); (yyval.TK_stmt)->u.let.type = (yyvsp[-3].TK_type); (yyval.TK_stmt)->u.let.init = (yyvsp[-1].TK_expr);
	}
#line 1889 "parser/parser.c"
    break;

  case 43: /* stmt: "let" "(" names ")" "=" expr ";"  */
#line 218 "parser/parser.y"
                                         {
		(yyval.TK_stmt) = ast_new(p, NK_LETS, (yyloc));
		(yyval.TK_stmt)->u.lets.names = (yyvsp[-4].TK_names); (yyval.TK_stmt)->u.lets.init = (yyvsp[-1].TK_expr);
	}
#line 1898 "parser/parser.c"
    break;

  case 44: /* stmt: "identifier" "=" expr ";"  */
#line 222 "parser/parser.y"
                             {
		(yyval.TK_stmt) = ast_new(p, NK_ASSIGN, (yyloc));
		(yyval.TK_stmt)->u.let.name = (yyvsp[-3].TK_IDENT); (yyval.TK_stmt)->u.let.nspan = (yylsp[-3]); (yyval.TK_stmt)->u.let.init = (yyvsp[-1].TK_expr);
	}
#line 1907 "parser/parser.c"
    break;

  case 45: /* stmt: "return" expr ";"  */
#line 226 "parser/parser.y"
                          { (yyval.TK_stmt) = ast_new(p, NK_RETURN, (yyloc)); (yyval.TK_stmt)->u.ret.vals = (yyvsp[-1].TK_expr); }
#line 1913 "parser/parser.c"
    break;

  case 46: /* stmt: "for" "identifier" "in" expr ".." expr block  */
#line 227 "parser/parser.y"
                                            {
		(yyval.TK_stmt) = ast_new(p, NK_FOR, (yyloc));
		(yyval.TK_stmt)->u.loop.var = (yyvsp[-5].TK_IDENT); (yyval.TK_stmt)->u.loop.vspan = (yylsp[-5]);
		(yyval.TK_stmt)->u.loop.lo = (yyvsp[-3].TK_expr); (yyval.TK_stmt)->u.loop.hi = (yyvsp[-1].TK_expr); (yyval.TK_stmt)->u.loop.body = (yyvsp[0].TK_block);
	}
#line 1923 "parser/parser.c"
    break;

  case 47: /* stmt: error ";"  */
#line 232 "parser/parser.y"
                    { (yyval.TK_stmt) = NULL; yyerrok; }
#line 1929 "parser/parser.c"
    break;

  case 48: /* stmt: error block  */
#line 233 "parser/parser.y"
                      { (yyval.TK_stmt) = NULL; yyerrok; }
#line 1935 "parser/parser.c"
    break;

  case 49: /* expr: expr "+" expr  */
#line 238 "parser/parser.y"
                        { (yyval.TK_expr) = deep(p, ast_bin(p, '+', (yyvsp[-2].TK_expr), (yyvsp[0].TK_expr), (yyloc))); }
#line 1941 "parser/parser.c"
    break;

  case 50: /* expr: expr "-" expr  */
#line 239 "parser/parser.y"
                        { (yyval.TK_expr) = deep(p, ast_bin(p, '-', (yyvsp[-2].TK_expr), (yyvsp[0].TK_expr), (yyloc))); }
#line 1947 "parser/parser.c"
    break;

  case 51: /* expr: expr "*" expr  */
#line 240 "parser/parser.y"
                        { (yyval.TK_expr) = deep(p, ast_bin(p, '*', (yyvsp[-2].TK_expr), (yyvsp[0].TK_expr), (yyloc))); }
#line 1953 "parser/parser.c"
    break;

  case 52: /* expr: expr "/" expr  */
#line 241 "parser/parser.y"
                        { (yyval.TK_expr) = deep(p, ast_bin(p, '/', (yyvsp[-2].TK_expr), (yyvsp[0].TK_expr), (yyloc))); }
#line 1959 "parser/parser.c"
    break;

  case 53: /* expr: expr "@" expr  */
#line 242 "parser/parser.y"
                        { (yyval.TK_expr) = deep(p, ast_bin(p, '@', (yyvsp[-2].TK_expr), (yyvsp[0].TK_expr), (yyloc))); }
#line 1965 "parser/parser.c"
    break;

  case 55: /* unary: "-" unary  */
#line 247 "parser/parser.y"
                    { (yyval.TK_unary) = deep(p, ast_bin(p, '-', (yyvsp[0].TK_unary), NULL, (yyloc))); (yyval.TK_unary)->kind = NK_NEG; }
#line 1971 "parser/parser.c"
    break;

  case 58: /* postfix: "identifier" "(" opt_exprs ")"  */
#line 253 "parser/parser.y"
                                  { (yyval.TK_postfix) = deep(p, ast_call(p, (yyvsp[-3].TK_IDENT), (yylsp[-3]), (yyvsp[-1].TK_opt_exprs), (yyloc))); }
#line 1977 "parser/parser.c"
    break;

  case 59: /* primary: "integer"  */
#line 257 "parser/parser.y"
              { (yyval.TK_primary) = ast_new(p, NK_INT, (yyloc)); (yyval.TK_primary)->u.num.i = (yyvsp[0].TK_INT); (yyval.TK_primary)->u.num.f = (double)(yyvsp[0].TK_INT); }
#line 1983 "parser/parser.c"
    break;

  case 60: /* primary: "number"  */
#line 258 "parser/parser.y"
                { (yyval.TK_primary) = ast_new(p, NK_FLOAT, (yyloc)); (yyval.TK_primary)->u.num.f = (yyvsp[0].TK_FLOAT); }
#line 1989 "parser/parser.c"
    break;

  case 61: /* primary: "identifier"  */
#line 259 "parser/parser.y"
                { (yyval.TK_primary) = ast_new(p, NK_NAME, (yyloc)); (yyval.TK_primary)->u.name = (yyvsp[0].TK_IDENT); }
#line 1995 "parser/parser.c"
    break;

  case 62: /* primary: "dtype"  */
#line 260 "parser/parser.y"
                { (yyval.TK_primary) = ast_new(p, NK_DTYPE, (yyloc)); (yyval.TK_primary)->u.name = (yyvsp[0].TK_DTYPE); }
#line 2001 "parser/parser.c"
    break;

  case 63: /* primary: "(" expr ")"  */
#line 261 "parser/parser.y"
                       { (yyval.TK_primary) = (yyvsp[-1].TK_expr); (yyval.TK_primary)->span = (yyloc); }
#line 2007 "parser/parser.c"
    break;

  case 64: /* primary: "(" expr "," exprs ")"  */
#line 262 "parser/parser.y"
                                 {
		(yyval.TK_primary) = deep(p, ast_call(p, 0, (yylsp[-4]), append((yyvsp[-3].TK_expr), (yyvsp[-1].TK_exprs)), (yyloc))); (yyval.TK_primary)->kind = NK_TUPLE;
	}
#line 2015 "parser/parser.c"
    break;

  case 65: /* primary: "[" opt_exprs "]"  */
#line 265 "parser/parser.y"
                            { (yyval.TK_primary) = deep(p, ast_call(p, 0, (yylsp[-2]), (yyvsp[-1].TK_opt_exprs), (yyloc))); (yyval.TK_primary)->kind = NK_LIST; }
#line 2021 "parser/parser.c"
    break;

  case 66: /* opt_exprs: %empty  */
#line 269 "parser/parser.y"
                 { (yyval.TK_opt_exprs) = NULL; }
#line 2027 "parser/parser.c"
    break;

  case 69: /* exprs: exprs "," expr  */
#line 275 "parser/parser.y"
                         { (yyval.TK_exprs) = append((yyvsp[-2].TK_exprs), (yyvsp[0].TK_expr)); }
#line 2033 "parser/parser.c"
    break;


#line 2037 "parser/parser.c"

        default: break;
      }
    if (yychar_backup != yychar)
      YY_LAC_DISCARD ("yychar change");
  }
  /* User semantic actions sometimes alter yychar, and that requires
     that yytoken be updated with the new translation.  We take the
     approach of translating immediately before every use of yytoken.
     One alternative is translating here after every semantic action,
     but that translation would be missed if the semantic action invokes
     YYABORT, YYACCEPT, or YYERROR immediately after altering yychar or
     if it invokes YYBACKUP.  In the case of YYABORT or YYACCEPT, an
     incorrect destructor might then be invoked immediately.  In the
     case of YYERROR or YYBACKUP, subsequent parser actions might lead
     to an incorrect destructor call or verbose syntax error message
     before the lookahead is translated.  */
  YY_SYMBOL_PRINT ("-> $$ =", YY_CAST (yysymbol_kind_t, yyr1[yyn]), &yyval, &yyloc);

  YYPOPSTACK (yylen);
  yylen = 0;

  *++yyvsp = yyval;
  *++yylsp = yyloc;

  /* Now 'shift' the result of the reduction.  Determine what state
     that goes to, based on the state we popped back to and the rule
     number reduced by.  */
  {
    const int yylhs = yyr1[yyn] - YYNTOKENS;
    const int yyi = yypgoto[yylhs] + *yyssp;
    yystate = (0 <= yyi && yyi <= YYLAST && yycheck[yyi] == *yyssp
               ? yytable[yyi]
               : yydefgoto[yylhs]);
  }

  goto yynewstate;


/*--------------------------------------.
| yyerrlab -- here on detecting error.  |
`--------------------------------------*/
yyerrlab:
  /* Make sure we have latest lookahead translation.  See comments at
     user semantic actions for why this is necessary.  */
  yytoken = yychar == TK_SYN_EMPTY ? YYSYMBOL_YYEMPTY : YYTRANSLATE (yychar);
  /* If not already recovering from an error, report this error.  */
  if (!yyerrstatus)
    {
      ++yynerrs;
      {
        yypcontext_t yyctx
          = {yyssp, yyesa, &yyes, &yyes_capacity, yytoken, &yylloc};
        if (yychar != TK_SYN_EMPTY)
          YY_LAC_ESTABLISH;
        if (yyreport_syntax_error (&yyctx, p) == 2)
          YYNOMEM;
      }
    }

  yyerror_range[1] = yylloc;
  if (yyerrstatus == 3)
    {
      /* If just tried and failed to reuse lookahead token after an
         error, discard it.  */

      if (yychar <= TK_YYEOF)
        {
          /* Return failure if at end of input.  */
          if (yychar == TK_YYEOF)
            YYABORT;
        }
      else
        {
          yydestruct ("Error: discarding",
                      yytoken, &yylval, &yylloc, p);
          yychar = TK_SYN_EMPTY;
        }
    }

  /* Else will try to reuse lookahead token after shifting the error
     token.  */
  goto yyerrlab1;


/*---------------------------------------------------.
| yyerrorlab -- error raised explicitly by YYERROR.  |
`---------------------------------------------------*/
yyerrorlab:
  /* Pacify compilers when the user code never invokes YYERROR and the
     label yyerrorlab therefore never appears in user code.  */
  if (0)
    YYERROR;
  ++yynerrs;

  /* Do not reclaim the symbols of the rule whose action triggered
     this YYERROR.  */
  YYPOPSTACK (yylen);
  yylen = 0;
  YY_STACK_PRINT (yyss, yyssp);
  yystate = *yyssp;
  goto yyerrlab1;


/*-------------------------------------------------------------.
| yyerrlab1 -- common code for both syntax error and YYERROR.  |
`-------------------------------------------------------------*/
yyerrlab1:
  yyerrstatus = 3;      /* Each real token shifted decrements this.  */

  /* Pop stack until we find a state that shifts the error token.  */
  for (;;)
    {
      yyn = yypact[yystate];
      if (!yypact_value_is_default (yyn))
        {
          yyn += YYSYMBOL_YYerror;
          if (0 <= yyn && yyn <= YYLAST && yycheck[yyn] == YYSYMBOL_YYerror)
            {
              yyn = yytable[yyn];
              if (0 < yyn)
                break;
            }
        }

      /* Pop the current state because it cannot handle the error token.  */
      if (yyssp == yyss)
        YYABORT;

      yyerror_range[1] = *yylsp;
      yydestruct ("Error: popping",
                  YY_ACCESSING_SYMBOL (yystate), yyvsp, yylsp, p);
      YYPOPSTACK (1);
      yystate = *yyssp;
      YY_STACK_PRINT (yyss, yyssp);
    }

  /* If the stack popping above didn't lose the initial context for the
     current lookahead token, the shift below will for sure.  */
  YY_LAC_DISCARD ("error recovery");

  YY_IGNORE_MAYBE_UNINITIALIZED_BEGIN
  *++yyvsp = yylval;
  YY_IGNORE_MAYBE_UNINITIALIZED_END

  yyerror_range[2] = yylloc;
  ++yylsp;
  YYLLOC_DEFAULT (*yylsp, yyerror_range, 2);

  /* Shift the error token.  */
  YY_SYMBOL_PRINT ("Shifting", YY_ACCESSING_SYMBOL (yyn), yyvsp, yylsp);

  yystate = yyn;
  goto yynewstate;


/*-------------------------------------.
| yyacceptlab -- YYACCEPT comes here.  |
`-------------------------------------*/
yyacceptlab:
  yyresult = 0;
  goto yyreturnlab;


/*-----------------------------------.
| yyabortlab -- YYABORT comes here.  |
`-----------------------------------*/
yyabortlab:
  yyresult = 1;
  goto yyreturnlab;


/*-----------------------------------------------------------.
| yyexhaustedlab -- YYNOMEM (memory exhaustion) comes here.  |
`-----------------------------------------------------------*/
yyexhaustedlab:
  yyerror (&yylloc, p, YY_("memory exhausted"));
  yyresult = 2;
  goto yyreturnlab;


/*----------------------------------------------------------.
| yyreturnlab -- parsing is finished, clean up and return.  |
`----------------------------------------------------------*/
yyreturnlab:
  if (yychar != TK_SYN_EMPTY)
    {
      /* Make sure we have latest lookahead translation.  See comments at
         user semantic actions for why this is necessary.  */
      yytoken = YYTRANSLATE (yychar);
      yydestruct ("Cleanup: discarding lookahead",
                  yytoken, &yylval, &yylloc, p);
    }
  /* Do not reclaim the symbols of the rule whose action triggered
     this YYABORT or YYACCEPT.  */
  YYPOPSTACK (yylen);
  YY_STACK_PRINT (yyss, yyssp);
  while (yyssp != yyss)
    {
      yydestruct ("Cleanup: popping",
                  YY_ACCESSING_SYMBOL (+*yyssp), yyvsp, yylsp, p);
      YYPOPSTACK (1);
    }
#ifndef yyoverflow
  if (yyss != yyssa)
    YYSTACK_FREE (yyss);
#endif
  if (yyes != yyesa)
    YYSTACK_FREE (yyes);

  return yyresult;
}

#line 278 "parser/parser.y"


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
