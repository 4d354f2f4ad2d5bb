" Vim syntax file
" Language:    syncc operator files (.syn), docs/language.md
" Word lists:  lexer/lexer.re (keywords, dtypes), ir/sema.c (placements,
"              nranks), ir/type.c (reductions), ir/rules.c (builtins);
"              tests/editors/suite.py checks that they agree.

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
syn sync fromstart

" Operators first: items defined later win where both start at one place,
" so '@repl' is a placement and a lone '@' the matmul operator.
syn match   synOperator     "->\|\.\.\|[-+*/=@]"

syn keyword synStatement    return for in
syn keyword synKeyword      use let op kernel
syn keyword synType         f32 f16 bf16 i32
syn keyword synPredefined   nranks

" sum, max and min are reductions, and builtins when called.
syn match   synReduction    "\<\%(sum\|max\|min\)\>"
syn match   synBuiltin      "\<\%(exp\|log\|sqrt\|rsqrt\|tanh\|sigmoid\|abs\|max\|min\|cast\|sum\|mean\|amax\|amin\|transpose\|reshape\|slice\|concat\|causal\)\ze\s*("
syn match   synCollective   "\<\%(all_reduce\|reduce_scatter\|all_gather\|all_to_all\|shift\)\ze\s*("
syn match   synPlacement    "@\s*\%(repl\|split\|partial\)\>"

syn match   synNumber       "\<\d\+\>"
syn match   synFloat        "\<\d\+\%(\.\d\+\%([eE][-+]\=\d\+\)\=\|[eE][-+]\=\d\+\)\>"

" op NAME, kernel NAME
syn match   synFunction     "\%(\<\%(op\|kernel\)\s\+\)\@<=\h\w*"

" param M = 8192, N = 8192;  ('param' is the region's start, not a keyword,
" because a keyword would win over the region)
syn match   synParamName    contained "\<\h\w*\ze\s*="
syn region  synParamDecl    matchgroup=synKeyword start="\<param\>" end=";" contains=synParamName,synComment,synLineComment,synOperator,synType,synPredefined,synReduction,synBuiltin,synCollective,synNumber,synFloat

syn keyword synTodo         contained TODO FIXME XXX NOTE
syn match   synLineComment  "//.*$" contains=synTodo,@Spell
syn region  synComment      start="/\*" end="\*/" contains=synTodo,@Spell

hi def link synOperator     Operator
hi def link synStatement    Statement
hi def link synKeyword      Keyword
hi def link synType         Type
hi def link synPredefined   Constant
hi def link synReduction    Constant
hi def link synBuiltin      Function
hi def link synCollective   Special
hi def link synPlacement    StorageClass
hi def link synNumber       Number
hi def link synFloat        Float
hi def link synFunction     Function
hi def link synParamName    Identifier
hi def link synTodo         Todo
hi def link synLineComment  Comment
hi def link synComment      Comment

let b:current_syntax = "syn"

let &cpo = s:cpo_save
unlet s:cpo_save
