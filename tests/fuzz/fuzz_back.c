/* tests/fuzz/fuzz_back.c -- libFuzzer target past the front end: every op
 * of an input that checks is planned on the simulator's profile (serial or
 * searched, on one node or two), lowered to PTX with its launcher, and --
 * when it is small -- run on simulated ranks against the oracle.  A crash,
 * hang, sanitizer report or internal compiler error (abort() under
 * SYNCC_FUZZ) is a bug, and so is a simulated run that fails as a run: a
 * deadlock, a race, ranks disagreeing on a collective, @repl outputs that
 * differ between ranks.  Numbers that differ from the oracle are left to
 * the differential tester (tests/gen/gensyn.py), whose programs keep their
 * values in range; this one's do not.  `make fuzz-back`.
 *
 * Sizes are bounded so that one input costs milliseconds: at most
 * MAX_VALUES IR values are planned, and only ops holding at most
 * MAX_ELEMS elements in all and MAX_FLOP matmul work are simulated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../codegen/codegen.h"
#include "../../sim/sim.h"

#ifndef SYNCC_ROOT
#define SYNCC_ROOT "."
#endif

enum { MAX_VALUES = 400, MAX_ELEMS = 1 << 15 };
#define MAX_FLOP 1e7

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Whether the simulator should run it: small, and every value small. */
static bool
small(const Func *f)
{
	double elems = 0, flop = 0;
	for (Val v = 0; v < f->nins; v++) {
		const Ins *in = &f->ins[v];
		elems += (double)ty_numel(&in->ty);
		if (in->op == OP_MATMUL) /* M N of the result, K of the left operand */
			flop += 2.0 * (double)ty_numel(&in->ty) *
			        (double)f->ins[in->arg[0]].ty.dim[f->ins[in->arg[0]].ty.rank - 1];
	}
	return elems <= MAX_ELEMS && flop <= MAX_FLOP;
}

static void
lower(const Plan *p)
{
	Lowered lo = {0};
	Buf c = {0}, h = {0}, ptx = {0};
	if (ptx_lower(p, &lo)) { /* a refusal (lo.err) is the backend's limit, not a bug */
		ptx_emit_header(&ptx);
		buf_put(&ptx, lo.ptx.s ? lo.ptx.s : "", lo.ptx.len);
		Lowered *one[1] = {&lo};
		host_emit(&c, &h, "fuzz.syn", "fuzz", one, 1, &ptx, NULL, 0);
	}
	ptx_lowered_free(&lo);
	buf_free(&c);
	buf_free(&h);
	buf_free(&ptx);
}

static void
simulate(const Func *f, const Plan *p, int gpus, uint64_t seed)
{
	SimOpts so = {SIM_GPU, seed, 5000, NULL};
	SimResult r;
	char why[400];
	if (!small(f) || !sim_room(f->sema, f, why, sizeof why))
		return;
	sim_compare_plan(f->sema, p, &so, gpus, &r);
	if (r.error[0]) {
		fprintf(stderr, "fuzz-back: the simulated run failed: %s\n", r.error);
		abort();
	}
	sim_result_free(&r);
}

/* One op: planned, lowered, simulated. */
static void
back(Func *f, const Profile *prof, Topo topo, bool serial, uint64_t seed)
{
	SchedOpts o = {prof, topo, -1, 0, serial, NULL, NULL, NULL, 0, (seed & 2) != 0, NULL}; /* --push on half the inputs */
	/* the p2p backend on a quarter (one node, 8 ranks at most): its
	 * handshakes, and the pushed reduce_scatter, in the simulator */
	if ((seed >> 2) % 4 == 0 && topo.nodes == 1 && topo.gpus <= 8)
		o.backend = 1 + BE_P2P;
	Plan *p;
	if (f->nins > MAX_VALUES)
		return;
	p = sched_plan(f, &o);
	if (p->g) { /* else past LIM_BLOCKS: a located error, not a bug */
		lower(p);
		simulate(f, p, topo.gpus, seed);
	}
	sched_plan_free(p);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const int ranks[] = {1, 2, 3, 4, 8};
	static Profile prof;
	static bool have_prof;
	Options opt = {0};
	char err[600];
	Unit *u;
	char *text;
	int P;
	Topo topo;

	if (size > LIM_SOURCE_BYTES)
		return 0;
	if (!have_prof && !(have_prof = prof_load(&prof, SYNCC_ROOT "/profiles/sim.prof", err, sizeof err))) {
		fprintf(stderr, "fuzz-back: %s\n", err);
		abort();
	}
	text = xmalloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	diag_quiet(true);
	P = ranks[size % NELEM(ranks)];
	topo = (Topo){1, P};
	if ((size / 5) % 3 == 0 && P % 2 == 0 && P > 2) /* two nodes: all_reduce in phases */
		topo = (Topo){2, P / 2};
	opt.nranks = P;
	opt.autocomm = size % 3 == 0 ? AC_ON : size % 3 == 1 ? AC_DEFAULT : AC_OFF;
	opt.libdir = SYNCC_ROOT "/stdlib"; /* `use nn;` reaches the stdlib's ops */
	u = unit_new(&opt);
	if (unit_load_text(u, "fuzz.syn", text, size) && sema_unit(u) == EXIT_OK)
		for (Func *f = u->funcs; f; f = f->next) {
			f->sema = ir_clone(f);
			for (int i = 0; i < ir_npasses; i++) {
				ir_passes[i].run(f);
				if (!ir_verify(f, ir_passes[i].name))
					abort();
			}
			back(f, &prof, topo, (size / 15) % 4 == 0, size);
		}
	unit_free(u);
	diag_reset();
	return 0;
}
