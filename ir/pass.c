/* ir/pass.c -- graph passes.  Each has the shape `void pass(Func *)` and
 * the verifier runs after every one (tools/driver.c runs the list). */
#include "ir.h"

/* autocomm: a `reshard` that sema inserted for a declared placement (or
 * under --auto-comm) becomes the one collective that reaches it. */
void
pass_autocomm(Func *f)
{
	for (Val v = 0; v < f->nins; v++) {
		Ins *in = &f->ins[v];
		const Type *from;
		if (in->op != OP_RESHARD)
			continue;
		from = &f->ins[in->arg[0]].ty;
		switch (from->pl.kind) {
		case PL_PARTIAL:
			in->red = from->pl.red;
			if (in->ty.pl.kind == PL_REPL) {
				in->op = OP_ALL_REDUCE;
			} else {
				in->op = OP_REDUCE_SCATTER;
				in->axis = in->ty.pl.dim;
			}
			break;
		case PL_SPLIT:
			in->axis = from->pl.dim;
			if (in->ty.pl.kind == PL_REPL) {
				in->op = OP_ALL_GATHER;
			} else {
				in->op = OP_ALL_TO_ALL;
				in->axis2 = in->ty.pl.dim;
			}
			break;
		case PL_REPL:
			in->op = OP_SCATTER;
			in->axis = in->ty.pl.dim;
			break;
		}
	}
}

const PassInfo ir_passes[] = {
	{"autocomm", pass_autocomm, true},
};
const int ir_npasses = (int)NELEM(ir_passes);
