/* tools/ptxgen.c -- emits one kernel from command-line parameters, for the
 * PTX tests and the GPU harness (internal; not installed).
 *
 *   ptxgen matmul --m M --n N --k K [--dtype bf16|f16] [--out-dtype T]
 *                 [--lda L] [--ldb L] [--batch B --batch-a S --batch-b S]
 *                 [--bt 1]  (B stored n x k, K-major: x @ transpose(w); wgmma tiles)
 *                 [--tile NAME] [--in T:Sb,Sr,Sc]... [--out T:Sb,Sr,Sc]... [--epi PROG]
 *                 [--route N]  (entries may store through N routes: codegen.h PtxRoute)
 *                 [--src-smem -1|0]  (-1: a residual read from global memory, not the staged tile)
 *                 [--src-spread -1|0]  (-1: the staged residual's boxes loaded at one k tile)
 *                 [--stage-out -1|0]  (-1: a 16-bit output stored from registers, not staged)
 *                 [--tail -1|0|1]  (-1: an SFU tail of the epilogue run by the consumers, not warps 1-3;
 *                 1: also on a tile staged in halves)
 *                 [--l2-first -1|0|MASK]  (TMA streams marked evict-first: 1 the source tile, 2 C)
 *   ptxgen ew     --shape D0,D1,.. --in T:S0,S1,..  --out T:S0,.. --prog PROG [--block E]
 *                 [--causal K]  (outputs -inf past diagonal K of the last two dims)
 *   ptxgen rows   --rows R --len L --in T:Sr,Sc --out T:Sr,Sc
 *                 --stage RED[:PRE[:POST[:OUT]]]... [--map PROG] [--rows-per-block N] [--cluster N] [--group N]
 *                 [--online -1|0|1] [--flagless 0|1] [--prefetch -1|0|1] [--cache-ends -1|0] [--l1-stream -1|0|1]
 *                 [--col-cache -1|0|1|2] [--weights-smem -1|0|1] [--split-heads -1|0|1]
 *                 [--col-pipe -1|0|1]
 *   ptxgen attn   --heads B --sq N --sk N --d 64|128 [--dtype bf16|f16] [--scale X]
 *                 [--causal K] [--unnorm 1] [--stats 1] [--tma 1] [--softmax 0|1|2] [--bm 128|192] [--bn 128|176|192]
 *                 [--pingpong -1|0|1]
 *                 (--tma: the wgmma + TMA form; --softmax, --bm, --bn, --pingpong: PtxAttnSpec's)
 *   ptxgen tiles  lists the matmul tiles
 *   ptxgen tail   --epi PROG [--dtype T]  a matmul epilogue's tail (ptx_prog_tail; inputs of
 *                 dtype T): the cut, the tail, the whole program with the cut rounded, and
 *                 whether that and the tail on the rounded cut agree at 4096 points
 * Common: --name NAME.  PROG is codegen/prog.c's text form, e.g.
 * 'out0=add(acc,in0); out1=tanh(acc)'.  The PTX module goes to stdout,
 * after a comment line that says how to launch the kernel. */
#include "../codegen/codegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *prog_name = "ptxgen";

static NORETURN void
usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog_name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: ptxgen matmul|ew|rows|tiles [options]  (see tools/ptxgen.c)\n");
	exit(EXIT_USAGE);
}

static int64_t
num(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || v < 0)
		usage("not a number: %s", s);
	return v;
}

/* A setting whose -1 turns it off (0: the default): -1, or a number. */
static int
setting(const char *s)
{
	return !strcmp(s, "-1") ? -1 : (int)num(s);
}

/* "a,b,c" -> up to n numbers */
static int
nums(const char *s, int64_t *v, int n)
{
	int k = 0;
	char buf[256], *tok, *save;
	snprintf(buf, sizeof buf, "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (k == n)
			usage("too many numbers: %s", s);
		v[k++] = num(tok);
	}
	return k;
}

static DType
dtype(const char *s)
{
	DType dt;
	if (!ty_dtype_byname(s, &dt))
		usage("unknown dtype: %s", s);
	return dt;
}

/* "bf16:1000,1" */
static PtxTensor
tensor(const char *s)
{
	PtxTensor t = {0};
	char name[16];
	const char *colon = strchr(s, ':');
	if (!colon || colon - s >= (long)sizeof name)
		usage("tensor wants DTYPE:STRIDES: %s", s);
	memcpy(name, s, colon - s);
	name[colon - s] = 0;
	t.dt = dtype(name);
	nums(colon + 1, t.stride, PTX_MAX_DIMS);
	return t;
}

static void
prog(PtxEwProg *g, const char *text)
{
	const char *why = ptx_prog_parse(g, text);
	if (why)
		usage("bad program: %s", why);
}

static int
red(const char *s)
{
	static const struct {
		const char *name;
		int op;
	} t[] = {{"sum", OP_SUM}, {"mean", OP_MEAN}, {"amax", OP_AMAX}, {"amin", OP_AMIN},
	         {"max", OP_AMAX}, {"min", OP_AMIN}};
	for (size_t i = 0; i < NELEM(t); i++)
		if (strcmp(s, t[i].name) == 0)
			return t[i].op;
	usage("unknown reduction: %s", s);
}

/* "sum:PRE:POST:OUT", fields optional */
static PtxRowStage
stage(const char *s)
{
	PtxRowStage st = {.out = -1};
	char buf[1024], *f[4] = {0};
	int n = 0;
	snprintf(buf, sizeof buf, "%s", s);
	f[n++] = buf;
	for (char *c = buf; *c && n < 4; c++)
		if (*c == ':') {
			*c = 0;
			f[n++] = c + 1;
		}
	st.red = red(f[0]);
	if (n > 1 && *f[1])
		prog(&st.pre, f[1]);
	if (n > 2 && *f[2])
		prog(&st.post, f[2]);
	if (n > 3 && *f[3])
		st.out = (int)num(f[3]);
	return st;
}

typedef struct Args {
	const char *kind, *name;
	PtxMatmulSpec mm;
	PtxEwSpec ew;
	PtxRowsSpec rows;
	PtxAttnSpec at;
	PtxTensor in[PTX_MAX_TENSORS], out[PTX_MAX_TENSORS];
	int nin, nout;
	DType out_dt;
} Args;

static void
parse(Args *a, int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage("option %s needs a value", o);
		i++;
		if (!strcmp(o, "--name")) a->name = v;
		else if (!strcmp(o, "--m")) a->mm.m = num(v);
		else if (!strcmp(o, "--n")) a->mm.n = num(v);
		else if (!strcmp(o, "--k")) a->mm.k = num(v);
		else if (!strcmp(o, "--batch")) a->mm.batch = num(v);
		else if (!strcmp(o, "--batch-a")) a->mm.batch_a = num(v);
		else if (!strcmp(o, "--batch-b")) a->mm.batch_b = num(v);
		else if (!strcmp(o, "--lda")) a->mm.lda = num(v);
		else if (!strcmp(o, "--ldb")) a->mm.ldb = num(v);
		else if (!strcmp(o, "--bt")) a->mm.bt = num(v) != 0;
		else if (!strcmp(o, "--route")) a->mm.route = (int)num(v);
		else if (!strcmp(o, "--src-smem")) a->mm.src_smem = setting(v);
		else if (!strcmp(o, "--src-spread")) a->mm.src_spread = setting(v);
		else if (!strcmp(o, "--stage-out")) a->mm.stage_out = setting(v);
		else if (!strcmp(o, "--tail")) a->mm.tail = setting(v);
		else if (!strcmp(o, "--l2-first")) a->mm.l2_first = setting(v);
		else if (!strcmp(o, "--dtype")) a->mm.ab = dtype(v);
		else if (!strcmp(o, "--out-dtype")) a->out_dt = dtype(v);
		else if (!strcmp(o, "--tile")) {
			if ((a->mm.tile = ptx_tile_byname(v)) < 0)
				usage("no such tile: %s (ptxgen tiles lists them)", v);
		} else if (!strcmp(o, "--epi")) prog(&a->mm.epi, v);
		else if (!strcmp(o, "--in")) {
			if (a->nin == PTX_MAX_TENSORS)
				usage("too many inputs at %s", v);
			a->in[a->nin++] = tensor(v);
		} else if (!strcmp(o, "--out")) {
			if (a->nout == PTX_MAX_TENSORS)
				usage("too many outputs at %s", v);
			a->out[a->nout++] = tensor(v);
		} else if (!strcmp(o, "--shape")) a->ew.rank = nums(v, a->ew.dim, PTX_MAX_DIMS);
		else if (!strcmp(o, "--prog")) prog(&a->ew.prog, v);
		else if (!strcmp(o, "--block")) a->ew.block_elems = num(v);
		else if (!strcmp(o, "--causal")) {
			a->ew.causal = a->at.causal = true;
			a->ew.diag = a->at.diag = *v == '-' ? -num(v + 1) : num(v);
		}
		else if (!strcmp(o, "--heads")) a->at.batch = num(v);
		else if (!strcmp(o, "--sq")) a->at.sq = num(v);
		else if (!strcmp(o, "--sk")) a->at.sk = num(v);
		else if (!strcmp(o, "--d")) a->at.d = num(v);
		else if (!strcmp(o, "--scale")) a->at.scale = atof(v);
		else if (!strcmp(o, "--unnorm")) a->at.normed = !num(v);
		else if (!strcmp(o, "--stats")) a->at.stats = num(v) != 0;
		else if (!strcmp(o, "--tma")) a->at.tma = num(v) != 0;
		else if (!strcmp(o, "--softmax")) a->at.softmax = (int)num(v);
		else if (!strcmp(o, "--bm")) a->at.bm = (int)num(v);
		else if (!strcmp(o, "--bn")) a->at.bn = (int)num(v);
		else if (!strcmp(o, "--pingpong")) a->at.pingpong = setting(v);
		else if (!strcmp(o, "--rows")) a->rows.rows = num(v);
		else if (!strcmp(o, "--len")) a->rows.len = num(v);
		else if (!strcmp(o, "--rows-per-block")) a->rows.rows_per_block = (int)num(v);
		else if (!strcmp(o, "--cluster")) a->rows.cluster = (int)num(v);
		else if (!strcmp(o, "--group")) a->rows.group = (int)num(v);
		else if (!strcmp(o, "--online")) a->rows.online = setting(v);
		else if (!strcmp(o, "--prefetch")) a->rows.prefetch = setting(v);
		else if (!strcmp(o, "--col-cache")) a->rows.col_cache = setting(v);
		else if (!strcmp(o, "--col-pipe")) a->rows.col_pipe = setting(v);
		else if (!strcmp(o, "--cache-ends")) a->rows.cache_ends = setting(v);
		else if (!strcmp(o, "--split-heads")) a->rows.split_heads = setting(v);
		else if (!strcmp(o, "--l1-stream")) a->rows.l1_stream = setting(v);
		else if (!strcmp(o, "--weights-smem")) a->rows.weights_smem = setting(v);
		else if (!strcmp(o, "--flagless")) a->rows.flagless = num(v) != 0;
		else if (!strcmp(o, "--map")) prog(&a->rows.map, v);
		else if (!strcmp(o, "--stage")) {
			if (a->rows.nstage == PTX_MAX_STAGES)
				usage("too many stages at %s", v);
			a->rows.stage[a->rows.nstage++] = stage(v);
		} else
			usage("unknown option: %s", o);
	}
}

static void
emit(Args *a)
{
	Buf b = {0}, mod = {0};
	PtxKernel k = {0};
	const char *why;

	if (!strcmp(a->kind, "matmul")) {
		PtxMatmulSpec *s = &a->mm;
		s->name = a->name ? a->name : "syn_matmul";
		memcpy(s->in, a->in, sizeof a->in);
		s->nin = a->nin;
		memcpy(s->out, a->out, sizeof a->out);
		s->nout = a->nout;
		if (!s->nout) /* C contiguous [batch][m][n] */
			s->out[s->nout++] = (PtxTensor){a->out_dt, {s->m * s->n, s->n, 1}};
		if (s->tile < 0) /* after the outputs: the choice checks the whole spec */
			s->tile = ptx_matmul_default_tile(s);
		if ((why = ptx_matmul_check(s)))
			usage("%s", why);
		ptx_emit_matmul(&b, s, &k);
	} else if (!strcmp(a->kind, "ew")) {
		PtxEwSpec *s = &a->ew;
		s->name = a->name ? a->name : "syn_ew";
		memcpy(s->in, a->in, sizeof a->in);
		s->nin = a->nin;
		memcpy(s->out, a->out, sizeof a->out);
		s->nout = a->nout;
		if ((why = ptx_ew_check(s)))
			usage("%s", why);
		ptx_emit_ew(&b, s, &k);
	} else if (!strcmp(a->kind, "rows")) {
		PtxRowsSpec *s = &a->rows;
		s->name = a->name ? a->name : "syn_rows";
		memcpy(s->in, a->in, sizeof a->in);
		s->nin = a->nin;
		memcpy(s->out, a->out, sizeof a->out);
		s->nout = a->nout;
		if ((why = ptx_rows_check(s)))
			usage("%s", why);
		ptx_emit_rows(&b, s, &k);
	} else if (!strcmp(a->kind, "attn")) {
		PtxAttnSpec *s = &a->at;
		s->name = a->name ? a->name : "syn_attn";
		s->dt = a->mm.ab;
		if (s->scale == 0 && s->d > 0)
			s->scale = 1 / sqrt((double)s->d);
		if ((why = ptx_attn_check(s)))
			usage("%s", why);
		ptx_emit_attn(&b, s, &k);
	} else
		usage("unknown kernel kind: %s", a->kind);
	printf("// ptxgen: kernel %s threads %d smem %d tensors %d blocks %lld\n", k.name, k.threads, k.smem,
	       k.ntensors, (long long)k.nblocks);
	ptx_emit_header(&mod);
	fputs(mod.s, stdout);
	fputs(b.s, stdout);
	buf_free(&mod);
	buf_free(&b);
}

/* ptxgen tail: what wgmma.c's wg_tail_plan splits an epilogue into, and
 * the check that its two paths (the tail in warps 1-3 on the stored cut;
 * the consumers' whole program with the cut rounded) mean one thing. */
static int
tail(const Args *a)
{
	PtxEwProg post, whole;
	DType indt[PTX_MAX_TENSORS];
	Buf b = {0};
	int v, bad = 0;
	for (int i = 0; i < PTX_MAX_TENSORS; i++)
		indt[i] = a->mm.ab;
	v = ptx_prog_tail(&a->mm.epi, indt, a->mm.ab, a->mm.ab, &post);
	if (v < 0) {
		printf("no tail\n");
		return 0;
	}
	if (!ptx_prog_round_at(&a->mm.epi, v, a->mm.ab, &whole))
		usage("%s", "the whole program is too long to round the cut");
	printf("cut after %%%d\ntail: ", v);
	ptx_prog_print(&b, &post);
	printf("%s\nwhole: ", b.s);
	b.len = 0;
	ptx_prog_print(&b, &whole);
	printf("%s\n", b.s);
	for (int t = 0; t < 4096; t++) {
		double in[PTX_MAX_TENSORS], val[PTX_MAX_INS], tv[PTX_MAX_INS], wv[PTX_MAX_INS];
		double acc = (t % 64 - 32) * 0.173 + t * 1e-4;
		for (int i = 0; i < PTX_MAX_TENSORS; i++)
			in[i] = ptx_round(a->mm.ab, ((t * 7 + i * 13) % 41 - 20) * 0.0931);
		ptx_prog_eval(&a->mm.epi, indt, in, acc, NULL, val);
		ptx_prog_eval(&post, indt, in, ptx_round(a->mm.ab, val[v]), NULL, tv);
		ptx_prog_eval(&whole, indt, in, acc, NULL, wv);
		double x = ptx_round(a->mm.ab, tv[post.out[0].val]), y = ptx_round(a->mm.ab, wv[whole.out[0].val]);
		bad += !(x == y || (isnan(x) && isnan(y)));
	}
	printf("%s: the tail on the rounded cut and the whole program agree at %d of 4096 points\n", bad ? "FAIL" : "ok",
	       4096 - bad);
	buf_free(&b);
	return bad != 0;
}

int
main(int argc, char **argv)
{
	Args a = {0};
	if (argc < 2)
		usage("%s", "no kernel kind");
	a.kind = argv[1];
	if (!strcmp(a.kind, "tiles")) {
		for (int i = 0; i < ptx_ntiles; i++)
			printf("%s\n", ptx_tiles[i].name);
		return 0;
	}
	a.mm.ab = DT_BF16;
	a.mm.batch = 1;
	a.out_dt = DT_BF16;
	a.mm.tile = -1;
	a.at.normed = true;
	parse(&a, argc, argv);
	if (!strcmp(a.kind, "tail"))
		return tail(&a);
	emit(&a);
	return 0;
}
