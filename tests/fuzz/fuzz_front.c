/* tests/fuzz/fuzz_front.c -- libFuzzer target over the whole front end:
 * lexing, parsing, `use` resolution and semantic analysis at a rank count
 * taken from the input, the graph passes and the printers of --emit.  Any
 * crash, hang, sanitizer report or internal compiler error (abort() under
 * SYNCC_FUZZ) is a bug.  `make fuzz`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/ir.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const int ranks[] = {1, 2, 3, 4, 8};
	static FILE *sink; /* printers run too, into /dev/null */
	Options opt = {0};
	Unit *u;
	char *text;

	if (size > LIM_SOURCE_BYTES)
		return 0;
	text = xmalloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	diag_quiet(true);
	opt.nranks = ranks[size % NELEM(ranks)];
	opt.autocomm = size % 3 == 0 ? AC_ON : size % 3 == 1 ? AC_DEFAULT : AC_OFF;
	if (!sink)
		sink = fopen("/dev/null", "w");
	u = unit_new(&opt);
	if (unit_load_text(u, "fuzz.syn", text, size)) {
		if (sink) { /* what --emit=tokens and --emit=ast print */
			lex_dump(sink, u->modules->file);
			ast_print(sink, u->modules->items);
		}
		if (sema_unit(u) == EXIT_OK)
			for (Func *f = u->funcs; f; f = f->next) {
				for (int i = 0; i < ir_npasses; i++) {
					ir_passes[i].run(f);
					if (!ir_verify(f, ir_passes[i].name))
						abort();
				}
				if (sink)
					ir_print(sink, f);
			}
	}
	unit_free(u);
	diag_reset();
	return 0;
}
