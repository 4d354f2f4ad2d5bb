/* tools/syncc.c -- the compiler's command line. */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
	"usage: syncc FILE.syn [options]\n"
	"Compile a syncc operator file ('-' reads standard input): writes PREFIX.ptx (the\n"
	"kernels), PREFIX.c and PREFIX.h (the launchers over libsyncrt), PREFIX being -o's\n"
	"value or the file's name without .syn.\n"
	"\n"
	"  -o PREFIX|FILE          where to write (with --emit: the file, '-' for stdout)\n"
	"  -S                      --emit=ptx\n"
	"  --ranks P               number of ranks (default 1); `nranks` in the language\n"
	"  -D NAME=VALUE           override `param NAME` (an integer, a number or a dtype)\n"
	"  -I DIR                  search DIR for `use` modules\n"
	"  --entry OP              compile only OP (default: every op of FILE)\n"
	"  --emit=STAGE            print a stage: tokens, ast, ir, blocks, plan, timeline\n"
	"                          (the predicted Gantt chart of every rank), ptx, host;\n"
	"                          or signature (every op's arguments and results, JSON)\n"
	"  --explain               say why this plan: critical path, chunks, predictions\n"
	"  --profile NAME|FILE     cost-model profile (default h200-nvlink; profiles/)\n"
	"  --topo NODESxGPUS       ranks in nodes of GPUs (sets --ranks); all_reduce in phases\n"
	"  --mem-budget B|PCT%     extra memory in flight the plan may use\n"
	"  --serial                emit the serial plan (no overlap)\n"
	"  --tune                  compile the plan measured fastest on this machine's GPUs\n"
	"                          (syncrun --tune: cached in SYNCC_CACHE_DIR, measured on a miss)\n"
	"  --tune-budget SECONDS   time measuring may take per op (default 5)\n"
	"  --comm-backend nccl|ce|p2p  collectives on this backend wherever it can (ce\n"
	"                          cannot reduce, ce and p2p cannot cross nodes: nccl there;\n"
	"                          p2p runs 8 ranks at most)\n"
	"  --no-push               a p2p reduce_scatter after a matmul reads the peers'\n"
	"                          partials; by default (--push) the matmul stores its\n"
	"                          tiles in the owners' memory (docs/codegen.md)\n"
	"  --trace FILE.json       the predicted timeline as a Chrome trace (Perfetto)\n"
	"  --timeline-svg FILE     the predicted timeline as a picture (axis in us, legend,\n"
	"                          block names, flags, exposed communication hatched)\n"
	"  --measured FILE.json    draw this measured trace (syncrun --trace on GPUs) under\n"
	"                          the prediction in --timeline-svg\n"
	"  -d PASSES               print the IR to stderr after each named pass\n"
	"                          (sema and the passes below, or all)\n"
	"  --no-pass PASSES        skip the named passes below (a comma list)\n"
	"  --auto-comm             insert the cheapest collective wherever placements\n"
	"                          do not fit (default: only for declared placements)\n"
	"  --no-auto-comm          never insert collectives; report an error instead\n"
	"  --diagnostics=FORMAT    text (default) or json (one object per line on stdout)\n"
	"  --version               print the version\n"
	"  --help                  print this help\n"
	"\n"
	"Exit status: 0 success, 1 errors in the input, 2 bad command line,\n"
	"3 internal compiler error.\n";

static const OptId allowed[] = {
	OPT_OUT, OPT_RANKS, OPT_DEFINE, OPT_INCLUDE, OPT_ENTRY, OPT_EMIT, OPT_DIAG,
	OPT_AUTOCOMM, OPT_NOAUTOCOMM, OPT_DUMP, OPT_VERSION, OPT_HELP, OPT_NOPASS,
	OPT_PROFILE, OPT_MEMBUDGET, OPT_TOPO, OPT_EXPLAIN, OPT_SERIAL, OPT_COMMBE, OPT_PUSH, OPT_NOPUSH, OPT_DROPEDGE, OPT_BREAK, OPT_TRACE, OPT_SVG, OPT_MEASURED, OPT_S, OPT_TUNE, OPT_TUNEBUDGET,
};

int
main(int argc, char **argv)
{
	Driver d = {.tool = "syncc", .emit = EMIT_CODE};
	d.opt.nranks = 1;
	Unit *u = NULL;
	Buf out = {0};
	int r;

	drv_crash_handler();
	diag_setup(DIAG_TEXT, "syncc");
	d.mem = arena_new();
	if ((r = drv_args(&d, argc, argv, allowed, (int)NELEM(allowed), usage)) >= 0) {
		if (r == EXIT_OK && d.help)
			drv_print_passes(stdout);
		drv_free(&d);
		return r;
	}
	if (d.tune && (r = tune_with_gpus(&d)) != EXIT_OK)
		return r;
	r = drv_compile(&d, &u, &out);
	if (d.tune_picks)
		remove(d.tune_picks);
	if (r == EXIT_OK && d.emit != EMIT_CODE && !drv_write(d.output, &out))
		r = EXIT_INPUT;
	buf_free(&out);
	unit_free(u);
	drv_free(&d);
	return r;
}
