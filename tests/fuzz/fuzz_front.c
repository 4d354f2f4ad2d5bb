/* tests/fuzz/fuzz_front.c -- libFuzzer target over the whole front end:
 * lexing, parsing, `use` resolution and semantic analysis at a rank count
 * taken from the input.  Any crash, hang, sanitizer report or internal
 * compiler error (abort() under SYNCC_FUZZ) is a bug.  `make fuzz`. */
#include <stdlib.h>
#include <string.h>

#include "../../ir/ir.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const int ranks[] = {1, 2, 3, 4, 8};
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
	u = unit_new(&opt);
	if (unit_load_text(u, "fuzz.syn", text, size) && sema_unit(u) == EXIT_OK)
		for (Func *f = u->funcs; f; f = f->next)
			for (int i = 0; i < ir_npasses; i++) {
				ir_passes[i].run(f);
				if (!ir_verify(f, ir_passes[i].name))
					abort();
			}
	unit_free(u);
	diag_reset();
	return 0;
}
