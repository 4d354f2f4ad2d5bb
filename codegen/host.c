/* codegen/host.c -- the host launcher of a source file (DESIGN §5): one C
 * file and one header.  Per op,
 *     int syn_<op>(syn_ctx *ctx, const syn_tensor *in..., syn_tensor *out...)
 * checks its arguments against the signature (the message names the
 * argument), then enqueues the plan through libsyncrt (runtime/syncrt.h):
 * the persistent kernels on the compute lane with this rank's block list,
 * and on the comm lane, per chunk, waits on flags, the collective and a
 * flag raise -- with no host synchronisation inside.  The first call on a
 * context loads the module (cubin, or PTX JIT), uploads the block lists and
 * allocates scratch buffers; every call after that only enqueues.
 *
 * Flags: each op owns a range of the context's flags and counts its own
 * calls; call k waits for k (or k times the tiles of a band) and raises k,
 * so no flag is ever reset. */
#include "codegen.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const cdtype[DT_COUNT] = {
	[DT_F32] = "CD_F32", [DT_F16] = "CD_F16", [DT_BF16] = "CD_BF16", [DT_I32] = "CD_I32",
};
static const char *const cred[] = {"CR_SUM", "CR_MAX", "CR_MIN"};

/* Where each value's buffer comes from: an argument, a result, scratch. */
typedef enum BufKind { BK_NONE, BK_IN, BK_OUT, BK_SCRATCH } BufKind;

typedef struct Bufs {
	BufKind *kind;
	int *index;  /* argument, result or scratch number */
	int nscratch;
	int *stage;  /* per comm step, 2 each: scratch of its packed send, recv (-1 none) */
	int staging; /* scratch of the multi-node phases' shares (LARG_STAGING), -1 none */
	size_t staging_bytes; /* every chunk's share, each in its own slot (codegen/lower.c lower_phase) */
	int *work;   /* per kernel: scratch of its workspace (LARG_WORK), -1 none */
} Bufs;

static bool
used(const Lowered *lo, Val v)
{
	if (v < 0)
		return false;
	for (Val a = v + 1; a < lo->f->nins; a++) /* a view of v's buffer that is used */
		if (lo->alias[a] == v && used(lo, a))
			return true;
	for (int i = 0; i < lo->nkern; i++)
		for (int a = 0; a < lo->kern[i].narg; a++)
			if (lo->kern[i].arg[a].v == v)
				return true;
	for (int i = 0; i < lo->nstep; i++)
		if (lo->step[i].send.v == v || lo->step[i].recv.v == v)
			return true;
	return false;
}

static Bufs
buffers(const Lowered *lo)
{
	const Func *f = lo->f;
	Bufs b = {xcalloc((size_t)f->nins + 1, sizeof(BufKind)), xcalloc((size_t)f->nins + 1, sizeof(int)), 0, NULL, -1, 0, NULL};
	for (int i = 0; i < f->nin; i++)
		b.kind[f->in[i]] = BK_IN, b.index[f->in[i]] = i;
	for (int i = 0; i < f->nout; i++)
		if (b.kind[f->out[i]] == BK_NONE) /* an input returned as it is stays the input */
			b.kind[f->out[i]] = BK_OUT, b.index[f->out[i]] = i;
	for (Val v = 0; v < f->nins; v++)
		if (b.kind[v] == BK_NONE && lo->alias[v] < 0 && used(lo, v))
			b.kind[v] = BK_SCRATCH, b.index[v] = b.nscratch++;
	for (Val v = 0; v < f->nins; v++) /* views: their operand's buffer (codegen/lower.c reshape_view) */
		if (lo->alias[v] >= 0 && b.kind[v] == BK_NONE)
			b.kind[v] = b.kind[lo->alias[v]], b.index[v] = b.index[lo->alias[v]];
	b.stage = xmalloc((size_t)(2 * lo->nstep + 1) * sizeof(int));
	for (int i = 0; i < lo->nstep; i++) {
		b.stage[2 * i] = lo->step[i].pack.rows ? b.nscratch++ : -1;
		b.stage[2 * i + 1] = lo->step[i].unpack.rows ? b.nscratch++ : -1;
	}
	for (int i = 0; i < lo->nstep; i++) {
		const CommChunk *c = &lo->step[i].ch;
		size_t end = (size_t)lo->step[i].recv.off + c->count * (size_t)ty_dtypes[c->dt].size;
		if (lo->step[i].recv.v == LARG_STAGING && end > b.staging_bytes)
			b.staging_bytes = end;
	}
	if (b.staging_bytes)
		b.staging = b.nscratch++;
	b.work = xmalloc((size_t)(lo->nkern + 1) * sizeof(int));
	for (int k = 0; k < lo->nkern; k++) /* zeroed once by syn_alloc; each launch leaves it so */
		b.work[k] = lo->kern[k].k.work ? b.nscratch++ : -1;
	return b;
}

/* Does the plan run an all_reduce in phases on the levels of --topo NxG? */
static bool
has_levels(const Lowered *lo)
{
	for (int i = 0; i < lo->nstep; i++)
		if (lo->step[i].ch.gsize)
			return true;
	return false;
}

static void
ident(Buf *o, const char *s)
{
	for (; *s; s++)
		buf_printf(o, "%c", isalnum((unsigned char)*s) ? *s : '_');
}

/* ---- user text in C: every name and path that reaches the launcher ---- */

/* What libsyncrt's header (runtime/syncrt.h) and the launcher itself
 * declare at file scope: an op whose launcher syn_<op> is one of them
 * cannot be compiled.  tests/codegen/suite.py checks the list against
 * syncrt.h. */
static const char *const taken[] = {
	"syn_alloc", "syn_argspec", "syn_backend", "syn_barrier", "syn_begin", "syn_bind", "syn_builtin_image",
	"syn_check_args", "syn_coll", "syn_copy2d", "syn_ctx", "syn_device", "syn_device_count", "syn_download",
	"syn_end", "syn_error", "syn_errw_addr", "syn_finalize", "syn_flag_addr", "syn_free", "syn_free_sms",
	"syn_grid_persistent", "syn_grid_cluster", "syn_image", "syn_init", "syn_init_local", "syn_kernel", "syn_kernel_get", "syn_lane",
	"syn_launch", "syn_launch_group", "syn_mark", "syn_mark_ms", "syn_nranks", "syn_opts", "syn_peer_ptr", "syn_raise", "syn_rank",
	"syn_ref_matmul", "syn_run_local", "syn_op_flags", "syn_epoch", "syn_sms", "syn_state", "syn_status", "syn_status_name", "syn_stream",
	"syn_stream_enter", "syn_stream_leave", "syn_sync", "syn_begin_local", "syn_trace_exposed", "syn_device_info", "syn_tensor", "syn_tensor_check", "syn_timeout_ns",
	"syn_check_topo", "syn_abi_check", "syn_abi_match",
	"syn_tmap", "syn_tmap_encode", "syn_tmap_encode_at", "syn_routes", "syn_trace_slots", "syn_trace_write", "syn_upload", "syn_wait",
	/* the launcher's own */
	"syn_blk", "syn_blk_varint", "syn_blk_run", "syn_blk_dec", "syn_blk_apply", "syn_blk_upload", "syn_ptx_of_file", "syn_cubin_of_file", "syn_image_of_file",
};

bool
host_op_name_ok(const Func *f, char *why, size_t n)
{
	char fn[300];
	snprintf(fn, sizeof fn, "syn_%s", sym_str(f->name));
	for (size_t i = 0; i < NELEM(taken); i++)
		if (strcmp(fn, taken[i]) == 0) {
			snprintf(why, n, "its launcher %s would be libsyncrt's own %s (syncrt.h); rename the op", fn, fn);
			return false;
		}
	return true;
}

/* The .c includes PREFIX.h by its name, which no escape can spell if it
 * holds '"', a backslash, a control character or "??" (a trigraph). */
bool
host_prefix_ok(const char *prefix, char *why, size_t n)
{
	const char *base = strrchr(prefix, '/') ? strrchr(prefix, '/') + 1 : prefix;
	for (const char *c = base; *c; c++)
		if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 || *c == 0x7f || (c[0] == '?' && c[1] == '?')) {
			snprintf(why, n, "the launcher includes %s.h by name, and an #include cannot name a file with '\"', '\\', "
			         "\"??\" or a control character in it", base);
			return false;
		}
	return true;
}

/* An argument's C name: `in_` before the user's, so no name of the
 * language (r, rank, e, static, int) meets a local or a keyword of C. */
static void
arg_name(Buf *o, const Func *f, int i)
{
	buf_printf(o, "in_%s", sym_str(f->ins[f->in[i]].name));
}

/* Text inside a C comment: a path may hold the comment's end, and a
 * comment's start inside one is a warning; both get a space between
 * their two characters.  Control characters become '?'. */
static void
c_comment(Buf *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c == '*' && s[1] == '/') || (c == '/' && s[1] == '*'))
			buf_printf(o, "%c ", c);
		else
			buf_printf(o, "%c", c < 0x20 || c == 0x7f ? '?' : c);
	}
}

/* The PTX (or a path) as a C string, a line at a time.  "??" is written
 * "?\?": C11 reads "??/" as a backslash. */
static void
c_string(Buf *o, const char *s, size_t n)
{
	buf_printf(o, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n')
			buf_printf(o, "\\n\"\n\t\"");
		else if (c == '"' || c == '\\')
			buf_printf(o, "\\%c", c);
		else if (c == '?' && i + 1 < n && s[i + 1] == '?')
			buf_printf(o, "?\\");
		else if (c == '\t')
			buf_printf(o, "\\t");
		else if (c < 0x20 || c >= 0x7f)
			buf_printf(o, "\\%03o", c);
		else
			buf_printf(o, "%c", c);
	}
	buf_printf(o, "\"");
}

static void
signature(Buf *o, const Func *f)
{
	buf_printf(o, "int\nsyn_%s(syn_ctx *ctx", sym_str(f->name));
	for (int i = 0; i < f->nin; i++) {
		buf_printf(o, ", const syn_tensor *");
		arg_name(o, f, i);
	}
	for (int i = 0; i < f->nout; i++)
		buf_printf(o, ", syn_tensor *out%d", i);
	buf_printf(o, ")");
}

static void
argspec(Buf *o, const Func *f, Val v, const Type *t, const char *name)
{
	int64_t d[LIM_RANK];
	Buf g = {0};
	ty_local_shape(t, f->nranks, d);
	ty_print(&g, t);
	buf_printf(o, "\t{\"%s\", %s, %d, {", name, cdtype[t->dt], t->rank);
	for (int i = 0; i < t->rank; i++)
		buf_printf(o, "%s%lld", i ? ", " : "", (long long)d[i]);
	buf_printf(o, "}, \"%s\", 1},\n", g.s);
	buf_free(&g);
	(void)v;
}

/* The C expression of an argument's device address on this rank. */
static void
address(Buf *o, const Lowered *lo, const Bufs *b, LArg a)
{
	int es;
	if (a.v == LARG_STAGING) {
		buf_printf(o, "(char *)st->scratch[%d] + %lldu", b->staging, (long long)a.off); /* bytes */
		return;
	}
	if (a.v == LARG_WORK) {
		buf_printf(o, "(char *)st->scratch[%d]", b->work[a.off]);
		return;
	}
	if (a.v < 0) { /* result -1 - v's own buffer */
		int i = -1 - a.v;
		es = ty_dtypes[lo->f->outty[i].dt].size;
		buf_printf(o, "(char *)arg[%d].data + (%lldLL + (long long)rank * %lldLL) * %d", lo->f->nin + i, (long long)a.off,
		           (long long)a.roff, es);
		return;
	}
	es = ty_dtypes[lo->f->ins[a.v].ty.dt].size;
	switch (b->kind[a.v]) {
	case BK_IN:
		buf_printf(o, "(char *)arg[%d].data", b->index[a.v]);
		break;
	case BK_OUT:
		buf_printf(o, "(char *)arg[%d].data", lo->f->nin + b->index[a.v]);
		break;
	case BK_SCRATCH:
		buf_printf(o, "(char *)st->scratch[%d]", b->index[a.v]);
		break;
	default:
		die("value %%%d has no buffer", a.v);
	}
	buf_printf(o, " + (%lldLL + (long long)rank * %lldLL) * %d", (long long)a.off, (long long)a.roff, es);
}

/* ---- block lists as compact data ----
 * A C initialiser of every entry (8 ranks x 2048 entries of a matmul, 40
 * bytes each) made the launcher of a 10-layer MLP 9.4 MB of the 10.4 MB
 * .c and most of cc's 6 s.  Each rank's list is a byte string instead:
 * runs of one field-wise step from the entry before (the list of a tile
 * grid is a few steps, repeated), each run a varint count and the step's
 * 8 fields as zigzag varints; the launcher decodes it at set-up. */
static void
enc_varint(Buf *o, uint64_t v)
{
	char c[10];
	size_t n = 0;
	do
		c[n++] = (char)((v & 127) | (v > 127 ? 128 : 0));
	while ((v >>= 7));
	buf_put(o, c, n);
}

static void
blk_fields(const PtxBlock *e, uint64_t f[8])
{
	f[0] = e->x, f[1] = e->y, f[2] = e->z, f[3] = e->in_flag;
	f[4] = e->in_epoch, f[5] = e->out_flag, f[6] = e->out_op, f[7] = e->out_value;
}

/* One record: `run` entries, each `d` (field-wise) after the one before. */
typedef struct BlkRun {
	uint64_t run, d[8];
} BlkRun;

enum { BLK_PERIOD = 8 }; /* the longest group of records a replay repeats */

static void
enc_run(Buf *o, const BlkRun *r)
{
	enc_varint(o, r->run << 1);
	for (int j = 0; j < 8; j++)
		enc_varint(o, (r->d[j] << 1) ^ (0 - (r->d[j] >> 63))); /* zigzag: small steps back stay small */
}

/* How many times records [i, i+m) and the m after repeat the m before i. */
static int
enc_periods(const BlkRun *r, int n, int i, int m)
{
	int c = 0;
	while (i + (c + 1) * m <= n && memcmp(r + i + c * m, r + i - m, (size_t)m * sizeof *r) == 0)
		c++;
	return c;
}

/* A tile grid walked row by row is a run of +1 in x and one step back in
 * x and on in y, again and again: the records themselves repeat, and a
 * replay (a varint m << 1 | 1, then the count) says "the last m records,
 * that many times more". */
static void
enc_blocks(Buf *o, const PtxBlock *b, int n)
{
	uint64_t prev[8] = {0}, f[8], d[8];
	BlkRun *r = xcalloc((size_t)n + 1, sizeof *r);
	int nr = 0;
	for (int i = 0; i < n; i++) {
		blk_fields(&b[i], f);
		for (int j = 0; j < 8; j++)
			d[j] = f[j] - prev[j];
		if (nr && memcmp(d, r[nr - 1].d, sizeof d) == 0)
			r[nr - 1].run++;
		else
			r[nr].run = 1, memcpy(r[nr++].d, d, sizeof d);
		memcpy(prev, f, sizeof f);
	}
	for (int i = 0; i < nr;) {
		int best = 0, bm = 0;
		for (int m = 1; m <= BLK_PERIOD && m <= i; m++) {
			int c = enc_periods(r, nr, i, m);
			if (c * m > best * bm)
				best = c, bm = m;
		}
		if (best) {
			enc_varint(o, (uint64_t)bm << 1 | 1);
			enc_varint(o, (uint64_t)best);
			i += best * bm;
		} else {
			enc_run(o, &r[i++]);
		}
	}
	free(r);
}

/* Bytes as a C string, 3-digit octal escapes (a digit after one cannot
 * join it), a line each 96 bytes. */
static void
c_bytes(Buf *o, const unsigned char *s, size_t n)
{
	buf_printf(o, "\t\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (i && i % 96 == 0)
			buf_printf(o, "\"\n\t\"");
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '?')
			buf_printf(o, "\\%03o", c);
		else
			buf_printf(o, "%c", c);
	}
	buf_printf(o, "\"");
}

/* The decoder of enc_blocks' strings: written once, here, and both
 * compiled into syncc (which decodes every list it encodes and compares,
 * host_emit's round trip) and pasted into every launcher as text (the
 * macro's #__VA_ARGS__; the launcher's syn_ctx, syn_blk and syn_upload are
 * libsyncrt's, syncc's the stand-ins below).  A rank's list is decoded 128
 * entries at a time, each piece uploaded (syn_upload waits for the copy):
 * no allocation. */
typedef struct BlkSink {
	char unused;
} syn_ctx;
typedef PtxBlock syn_blk;
enum { SYN_OK = 0, SYN_EARG = -1 };

static int
syn_upload(syn_ctx *ctx, void *dst, const void *src, size_t bytes)
{
	(void)ctx;
	memcpy(dst, src, bytes);
	return SYN_OK;
}

#define BLK_DECODER(...) __VA_ARGS__ static const char blk_decoder[] = #__VA_ARGS__;
BLK_DECODER(
static uint64_t
syn_blk_varint(const unsigned char **s, const unsigned char *end)
{
	uint64_t v = 0;
	for (int sh = 0; *s < end && sh < 64; sh += 7) {
		unsigned char c = *(*s)++;
		v |= (uint64_t)(c & 127) << sh;
		if (!(c & 128))
			break;
	}
	return v;
}

typedef struct {
	uint64_t run, d[8];
} syn_blk_run;

typedef struct {
	syn_blk piece[128];
	syn_blk_run last[8];
	uint64_t f[8], nrec;
	uint32_t done, k, n;
} syn_blk_dec;

static int
syn_blk_apply(syn_ctx *ctx, void *dst, syn_blk_dec *b, const syn_blk_run *rec)
{
	int r;
	b->last[b->nrec++ % 8] = *rec;
	for (uint64_t i = 0; i < rec->run; i++) {
		for (int j = 0; j < 8; j++)
			b->f[j] += rec->d[j];
		if (b->done + b->k >= b->n)
			return SYN_EARG;
		b->piece[b->k++] = (syn_blk){(uint32_t)b->f[0], (uint32_t)b->f[1], (uint32_t)b->f[2], (uint32_t)b->f[3], b->f[4],
		                             (uint32_t)b->f[5], (uint32_t)b->f[6], b->f[7]};
		if (b->k == 128) {
			if ((r = syn_upload(ctx, (char *)dst + (size_t)b->done * sizeof *b->piece, b->piece, sizeof b->piece)))
				return r;
			b->done += b->k;
			b->k = 0;
		}
	}
	return SYN_OK;
}

static int
syn_blk_upload(syn_ctx *ctx, void *dst, const unsigned char *s, const unsigned char *end, uint32_t n)
{
	syn_blk_dec b;
	int r;
	memset(&b, 0, sizeof b);
	b.n = n;
	while (s < end) {
		uint64_t tag = syn_blk_varint(&s, end);
		if (tag & 1) {
			uint64_t m = tag >> 1, c = syn_blk_varint(&s, end);
			if (m < 1 || m > 8 || m > b.nrec)
				return SYN_EARG;
			for (uint64_t i = 0; i < c * m; i++) {
				syn_blk_run rec = b.last[(b.nrec - m) % 8];
				if ((r = syn_blk_apply(ctx, dst, &b, &rec)))
					return r;
			}
		} else {
			syn_blk_run rec = {tag >> 1, {0}};
			for (int j = 0; j < 8; j++) {
				uint64_t v = syn_blk_varint(&s, end);
				rec.d[j] = (v >> 1) ^ (0 - (v & 1));
			}
			if ((r = syn_blk_apply(ctx, dst, &b, &rec)))
				return r;
		}
	}
	if (b.k && (r = syn_upload(ctx, (char *)dst + (size_t)b.done * sizeof *b.piece, b.piece, b.k * sizeof *b.piece)))
		return r;
	return b.done + b.k == n ? SYN_OK : SYN_EARG;
}
)

/* The round trip: a list the launcher would not decode to itself is a
 * bug of the encoder, never a launcher to write. */
static void
blk_roundtrip(const LKernel *kn, int r, const unsigned char *s, size_t n)
{
	syn_ctx sink;
	PtxBlock *back = xcalloc((size_t)kn->nblocks + 1, sizeof *back);
	if (syn_blk_upload(&sink, back, s, s + n, (uint32_t)kn->nblocks) != SYN_OK ||
	    (kn->nblocks && memcmp(back, kn->blocks[r], (size_t)kn->nblocks * sizeof *back)))
		die("the block list of %s, rank %d, does not decode to itself", kn->name, r);
	free(back);
}

/* The owners a routed kernel's rank pushes to, in the order its entries
 * reach them (one name per run of entries): read back from the block
 * list, so a test sees the order the kernel will walk. */
static void
emit_route_order(Buf *o, const LKernel *kn, int r)
{
	uint32_t last = 0;
	buf_printf(o, "/* rank %d pushes to owners", r);
	for (int i = 0; i < kn->nblocks; i++) {
		uint32_t q = kn->blocks[r][i].out_op >> PTX_ROUTE_SHIFT;
		if (q != last)
			buf_printf(o, q ? " %u" : " (none)", q - 1);
		last = q;
	}
	buf_printf(o, " in turn */\n");
}

static void
emit_blocks(Buf *o, const Lowered *lo, const char *op, int k)
{
	const LKernel *kn = &lo->kern[k];
	Buf enc = {0};
	size_t *at = xmalloc(((size_t)lo->f->nranks + 1) * sizeof *at);
	for (int r = 0; r < lo->f->nranks; r++) {
		at[r] = enc.len;
		enc_blocks(&enc, kn->blocks[r], kn->nblocks);
		blk_roundtrip(kn, r, (const unsigned char *)enc.s + at[r], enc.len - at[r]);
	}
	at[lo->f->nranks] = enc.len;
	buf_printf(o, "/* %s: %d entries a rank, %zu bytes encoded */\n", kn->name, kn->nblocks, enc.len);
	if (kn->route_rows > 0)
		for (int r = 0; r < lo->f->nranks; r++)
			emit_route_order(o, kn, r);
	buf_printf(o, "static const unsigned char %s_k%d_enc[] =\n", op, k);
	c_bytes(o, (const unsigned char *)enc.s, enc.len);
	buf_printf(o, ";\nstatic const uint32_t %s_k%d_at[%d] = {", op, k, lo->f->nranks + 1);
	for (int r = 0; r <= lo->f->nranks; r++)
		buf_printf(o, "%s%zuu", r ? ", " : "", at[r]);
	buf_printf(o, "};\n");
	buf_free(&enc);
	free(at);
}

/* The most tensor maps a kernel of the op takes. */
static int
max_tmaps(const Lowered *lo)
{
	int n = 0;
	for (int k = 0; k < lo->nkern; k++)
		n = lo->kern[k].k.ntmaps > n ? lo->kern[k].k.ntmaps : n;
	return n;
}

/* Tensor map m of kernel k (a wgmma matmul's operands, attention's q, k
 * and v), from the address its tensor parameter gets this call.  A map is
 * a function of that address alone (its dims, strides and box are the
 * kernel's), so the op's state keeps it and encodes it again only when the
 * address changes: a call with the tensors of the last costs no
 * cuTensorMapEncodeTiled (the lean call path, issue 16).  A routed map
 * (another rank's copy, through the symmetric heap's mapping) is encoded
 * every call. */
static void
tmap_encode(Buf *o, const LKernel *kn, int k, int m)
{
	const PtxTmap *t = &kn->k.tmap[m];
	buf_printf(o, "\t\t{\n\t\t\tstatic const uint64_t dim[3] = {%lld, %lld, %lld}, stride[2] = {%lld, %lld};\n",
	           (long long)t->dim[0], (long long)t->dim[1], (long long)t->dim[2], (long long)t->stride[0],
	           (long long)t->stride[1]);
	buf_printf(o, "\t\t\tstatic const uint32_t box[3] = {%d, %d, %d};\n", t->box[0], t->box[1], t->box[2]);
	if (t->route) { /* a routed matmul's C in rank route - 1's memory */
		buf_printf(o, "\t\t\tif ((r = syn_tmap_encode_at(ctx, &st->tm[%d][%d], \"%s operand %c, rank %d's copy\", %d, t%d, %s, dim, "
		              "stride, box)))\n\t\t\t\treturn r;\n\t\t}\n",
		           k, m, kn->name, t->role, t->route - 1, t->route - 1, t->tensor, cdtype[t->dt]);
		return;
	}
	/* the address is forgotten first: a failed encode leaves no map kept under it */
	buf_printf(o, "\t\t\tif (t%d != st->tm_at[%d][%d]) {\n\t\t\t\tst->tm_at[%d][%d] = 0;\n", t->tensor, k, m, k, m);
	if (t->optional) /* the kernel reads the tensor by TMA only at this alignment (PtxTmap) */
		buf_printf(o, "\t\t\t\tmemset(&st->tm[%d][%d], 0, sizeof st->tm[%d][%d]);\n"
		              "\t\t\t\tif (t%d %% 16 == 0 && (r = syn_tmap_encode(ctx, &st->tm[%d][%d], \"%s operand %c\", t%d, %s, dim, stride, box)))\n"
		              "\t\t\t\t\treturn r;\n",
		           k, m, k, m, t->tensor, k, m, kn->name, t->role, t->tensor, cdtype[t->dt]);
	else
		buf_printf(o, "\t\t\t\tif ((r = syn_tmap_encode(ctx, &st->tm[%d][%d], \"%s operand %c\", t%d, %s, dim, stride, box)))\n"
		              "\t\t\t\t\treturn r;\n",
		           k, m, kn->name, t->role, t->tensor, cdtype[t->dt]);
	buf_printf(o, "\t\t\t\tst->tm_at[%d][%d] = t%d;\n\t\t\t}\n\t\t}\n", k, m, t->tensor);
}

/* The 2-D copies of one side of an all_to_all (LPack), a block at a time:
 * the send side's blocks into the packed staging scratch `pk` before the
 * collective, the packed blocks of `upk` out into the recv side's after. */
static void
emit_pack(Buf *o, const CommChunk *c, int P, const LPack *pk, bool send)
{
	long long es = ty_dtypes[c->dt].size, blk = (long long)pk->rows * pk->width * es;
	buf_printf(o, "\t\tfor (int q = 0; q < %d; q++) /* %s block q: %lld runs of %lld elements, %lld apart */\n", P,
	           send ? "send" : "recv", (long long)pk->rows, (long long)pk->width, (long long)pk->pitch);
	/* dst, dst pitch, src, src pitch (bytes of the block's start, elements) */
	if (send)
		buf_printf(o, "\t\t\tif ((r = syn_copy2d(ctx, SYN_COMM, %s, pk + (size_t)q * %lldu, %lldu,\n"
		              "\t\t\t                    send + (size_t)q * %lldu, %lldu, %lldu, %lldu, %d)))\n",
		           cdtype[c->dt], blk, (long long)pk->width, (long long)pk->stride * es, (long long)pk->pitch,
		           (long long)pk->width, (long long)pk->rows, c->id);
	else
		buf_printf(o, "\t\t\tif ((r = syn_copy2d(ctx, SYN_COMM, %s, recv + (size_t)q * %lldu, %lldu,\n"
		              "\t\t\t                    upk + (size_t)q * %lldu, %lldu, %lldu, %lldu, %d)))\n",
		           cdtype[c->dt], (long long)pk->stride * es, (long long)pk->pitch, blk, (long long)pk->width,
		           (long long)pk->width, (long long)pk->rows, c->id);
	buf_printf(o, "\t\t\t\treturn r;\n");
}

/* Does a collective of the plan run on a backend with CTAs of its own
 * (comm/backends.h's ctas: NCCL's)? */
static bool
uses_sm_comm(const Lowered *lo)
{
	for (int i = 0; i < lo->nstep; i++)
		if (comm_backends[lo->step[i].be].ctas)
			return true;
	return false;
}

/* Beside copy-engine collectives only, the kernel leaves the profile's
 * `commsms ce` SMs (at least one).  The driver's peer copies run on SMs:
 * given every SM, qkv_AG's waiting matmul timed out at its first call with
 * its all_gather never done; with 1, 2, 8 and 16 SMs left it took 2.31,
 * 1.47, 1.07 and 1.13 ms (2xH200, 2026-11-30,
 * bench/results/2026-11-30-gpu-check-2xH200-c.md). */
static void
emit_ce_share(Buf *o, const Lowered *lo)
{
	int leave = lo->p->sms - lo->p->compute_sms;
	if (leave < 1)
		leave = 1;
	buf_printf(o, "\t\tif (syn_sms(ctx) > %d) /* the SMs the copies need */\n", leave);
	buf_printf(o, "\t\t\tgrid[0] = grid[0] / (unsigned)(syn_sms(ctx) - syn_free_sms(ctx)) * (unsigned)(syn_sms(ctx) - %d);\n",
	           leave);
}

/* Flags of op `op` start at `base` in the context's flag array. */
/* syncc_<op>_on_stream: the op on the caller's stream in one call, its
 * tensors as one array (arguments, then results) -- what python/syncc
 * calls, so a call costs one foreign call, not three.  No op's launcher
 * (syn_<op>) or table (op_<op>_...) can have this name. */
static void
emit_on_stream(Buf *o, Buf *h, const Func *f, const char *op)
{
	int n = f->nin + f->nout;
	buf_printf(h, "/* The same on the caller's stream (syn_stream_enter .. leave around it), the %d tensors\n"
	              " * in signature order, results last. */\nint\nsyncc_%s_on_stream(syn_ctx *ctx, void *stream, syn_tensor *const *t);\n",
	           n, op);
	buf_printf(o, "\nint\nsyncc_%s_on_stream(syn_ctx *ctx, void *stream, syn_tensor *const *t)\n{\n", op);
	buf_printf(o, "\tint r = syn_stream_enter(ctx, stream), r2;\n\tif (r)\n\t\treturn r;\n\tr = syn_%s(ctx", op);
	for (int i = 0; i < n; i++)
		buf_printf(o, ", t[%d]", i);
	buf_printf(o, ");\n\tr2 = syn_stream_leave(ctx, stream);\n\treturn r ? r : r2;\n}\n");
}

/* fid: the file's kernels' identity (host_emit), in the op's state key:
 * launchers of two compiled files handed one context keep apart states
 * even where they share an op name -- a stdlib op at two sizes, say --
 * where the second used to find and launch from the first's block lists
 * and tensor maps. */
static void
emit_op(Buf *o, Buf *h, const Lowered *lo, int base, const char *fid)
{
	const Func *f = lo->f;
	const char *op = sym_str(f->name); /* in strings and comments */
	char id[300];                      /* the prefix of its file-scope names */
	Bufs b = buffers(lo);
	int nargs = f->nin + f->nout;

	snprintf(id, sizeof id, "op_%s", op); /* apart from syncrt.h's syn_* and the launchers syn_<op> */
	buf_printf(o, "\n/* ---- %s: %d kernels, %d comm steps, %d flags from %d, P = %d ---- */\n\n", op, lo->nkern, lo->nstep,
	           lo->nflags, base, f->nranks);
	for (int k = 0; k < lo->nkern; k++)
		emit_blocks(o, lo, id, k);
	buf_printf(o, "\nstatic const syn_argspec %s_specs[%d] = {\n", id, nargs);
	for (int i = 0; i < f->nin; i++)
		argspec(o, f, f->in[i], &f->ins[f->in[i]].ty, sym_str(f->ins[f->in[i]].name));
	for (int i = 0; i < f->nout; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "out%d", i);
		argspec(o, f, f->out[i], &f->outty[i], nm);
	}
	buf_printf(o, "};\n\nstatic const size_t %s_scratch_bytes[%d] = {", id, b.nscratch ? b.nscratch : 1);
	for (Val v = 0; v < f->nins; v++)
		if (b.kind[v] == BK_SCRATCH && lo->alias[v] < 0) /* a view has its operand's */
			buf_printf(o, "%lluu, ", (unsigned long long)(ty_local_numel(&f->ins[v].ty, f->nranks) *
			                                             ty_dtypes[f->ins[v].ty.dt].size));
	for (int i = 0; i < 2 * lo->nstep; i++)
		if (b.stage[i] >= 0) /* P packed blocks of the chunk */
			buf_printf(o, "%lluu, ", (unsigned long long)(lo->step[i / 2].ch.count * (size_t)f->nranks *
			                                             ty_dtypes[lo->step[i / 2].ch.dt].size));
	if (b.staging >= 0)
		buf_printf(o, "%zuu, ", b.staging_bytes);
	for (int k = 0; k < lo->nkern; k++)
		if (b.work[k] >= 0)
			buf_printf(o, "%lluu, ", (unsigned long long)lo->kern[k].k.work);
	buf_printf(o, "%s};\n\n", b.nscratch ? "" : "0");
	buf_printf(o, "typedef struct {\n\tuint64_t calls;\n\tint ready; /* 1: set up; < 0: its set-up failed so */\n\tsyn_kernel *k[%d];\n\tvoid *blocks[%d];\n\tvoid *scratch[%d];\n",
	           lo->nkern ? lo->nkern : 1, lo->nkern ? lo->nkern : 1, b.nscratch ? b.nscratch : 1);
	if (max_tmaps(lo)) /* each kernel's tensor maps and the addresses they were encoded for (tmap_encode) */
		buf_printf(o, "\tsyn_tmap tm[%d][%d];\n\tuint64_t tm_at[%d][%d];\n", lo->nkern, max_tmaps(lo), lo->nkern,
		           max_tmaps(lo));
	buf_printf(o, "} %s_state;\n\n", id);
	/* set-up, on the first call on a context */
	buf_printf(o, "static int\n%s_setup(syn_ctx *ctx, %s_state *st, int rank)\n{\n\tint r;\n\t(void)rank;\n\t(void)r;\n\t(void)syn_image_of_file;\n", id, id);
	/* first: a libsyncrt of another contract would misread the state below */
	buf_printf(o, "\tif ((r = syn_abi_check(ctx, SYN_ABI, \"%s\")))\n\t\treturn r;\n", op);
	for (int k = 0; k < lo->nkern; k++) {
		const LKernel *kn = &lo->kern[k];
		buf_printf(o, "\tif ((r = syn_kernel_get(ctx, &syn_image_of_file, \"%s\", &st->k[%d])) ||\n",
		           kn->image[0] ? kn->image : kn->name, k);
		if (kn->k.route) /* the route table after the entries (codegen.h PtxRoute) */
			buf_printf(o, "\t    (r = syn_alloc(ctx, %lldu, &st->blocks[%d])) ||\n",
			           (long long)(ptx_route_table_off(kn->nblocks) + kn->k.route * (int64_t)sizeof(PtxRoute)), k);
		else
			buf_printf(o, "\t    (r = syn_alloc(ctx, %d * sizeof(syn_blk), &st->blocks[%d])) ||\n", kn->nblocks ? kn->nblocks : 1, k);
		buf_printf(o, "\t    (r = syn_blk_upload(ctx, st->blocks[%d], %s_k%d_enc + %s_k%d_at[rank], %s_k%d_enc + %s_k%d_at[rank + 1], %du)))\n\t\treturn r;\n",
		           k, id, k, id, k, id, k, id, k, kn->nblocks);
		if (kn->k.route) /* each owner's flags, and the rows of this rank's slot in its block */
			buf_printf(o, "\tif ((r = syn_routes(ctx, \"%s (the push of its tiles)\", (char *)st->blocks[%d] + %lld, %d, %lld)))\n"
			              "\t\treturn r;\n",
			           kn->name, k, (long long)ptx_route_table_off(kn->nblocks), base, (long long)kn->route_rows);
	}
	buf_printf(o, "\tfor (int i = 0; i < %d; i++)\n\t\tif ((r = syn_alloc(ctx, %s_scratch_bytes[i], &st->scratch[i])))\n\t\t\treturn r;\n",
	           b.nscratch, id);
	buf_printf(o, "\treturn SYN_OK;\n}\n\n");
	/* the launcher */
	signature(o, f);
	signature(h, f);
	buf_printf(h, ";\n");
	buf_printf(o, "\n{\n\tsyn_tensor arg[%d];\n\t%s_state *st;\n\tuint64_t e, flags, errw, timeout;\n\tint r, rank;\n", nargs ? nargs : 1, id);
	for (int i = 0; i < f->nin; i++) {
		buf_printf(o, "\tif (!");
		arg_name(o, f, i);
		buf_printf(o, ")\n\t\treturn SYN_EARG;\n\targ[%d] = *", i);
		arg_name(o, f, i);
		buf_printf(o, ";\n");
	}
	for (int i = 0; i < f->nout; i++)
		buf_printf(o, "\tif (!out%d)\n\t\treturn SYN_EARG;\n\targ[%d] = *out%d;\n", i, f->nin + i, i);
	buf_printf(o, "\tif (syn_nranks(ctx) != %d)\n\t\treturn SYN_EARG; /* compiled for %d ranks */\n", f->nranks, f->nranks);
	if (has_levels(lo)) /* the context's G is the plan's, and it holds the levels' communicators */
		buf_printf(o, "\tif ((r = syn_check_topo(ctx, \"%s\", %d, %d)))\n\t\treturn r;\n", op, lo->p->topo.nodes,
		           lo->p->topo.gpus);
	buf_printf(o, "\tif ((r = syn_check_args(ctx, \"%s\", %d, arg, %s_specs)))\n\t\treturn r;\n", op, nargs, id);
	buf_printf(o, "\trank = syn_rank(ctx);\n");
	buf_printf(o, "\tif ((r = syn_state(ctx, \"syncc:%s#%s\", sizeof *st, (void **)&st)) < 0)\n\t\treturn r;\n", op, fid);
	/* not on syn_state's first answer alone: a set-up that failed (a
	 * libsyncrt of another ABI, an allocation) leaves a state a second
	 * call would launch from; it fails every call the same way instead
	 * (running it again would repeat collective allocations the other
	 * ranks made once) */
	buf_printf(o, "\tif (st->ready < 0)\n\t\treturn st->ready; /* its set-up failed */\n");
	buf_printf(o, "\tif (!st->ready) {\n\t\tif ((r = %s_setup(ctx, st, rank)))\n\t\t\treturn st->ready = r;\n"
	              "\t\tst->ready = 1;\n\t}\n",
	           id);
	/* an op with no comm steps runs on the caller's stream (syncrt.h) */
	/* its flags, cleared at its start under CUDA graph capture (syncrt.h) */
	buf_printf(o, "\tsyn_op_flags(ctx, %d, %d);\n", base, lo->nflags);
	buf_printf(o, "\tif ((r = syn_begin%s(ctx, \"%s\", &e)))\n\t\treturn r;\n", lo->nstep ? "" : "_local", op);
	buf_printf(o, "\te = syn_epoch(ctx, &st->calls); /* its flags' epoch: the op's call count, or 1 */\n");
	buf_printf(o, "\tflags = syn_flag_addr(ctx, rank, %d);\n\terrw = syn_errw_addr(ctx);\n\ttimeout = syn_timeout_ns(ctx);\n", base);
	for (int k = 0; k < lo->nkern; k++) {
		const LKernel *kn = &lo->kern[k];
		if (!kn->nblocks)
			continue;
		buf_printf(o, "\t{ /* %s */\n", kn->name);
		buf_printf(o, "\t\tuint64_t blocks = (uint64_t)(uintptr_t)st->blocks[%d], trace = syn_trace_slots(ctx, %d);\n", k, kn->nblocks);
		buf_printf(o, "\t\tuint32_t nblocks = %d, site = %d;\n", kn->nblocks, kn->site);
		for (int a = 0; a < kn->narg; a++) {
			buf_printf(o, "\t\tuint64_t t%d = (uint64_t)(uintptr_t)(", a);
			address(o, lo, &b, kn->arg[a]);
			buf_printf(o, ");\n");
		}
		for (int m = 0; m < kn->k.ntmaps; m++)
			tmap_encode(o, kn, k, m);
		buf_printf(o, "\t\tvoid *prm[] = {&blocks, &nblocks, &flags, &errw, &timeout, &trace, &e, &site");
		for (int a = 0; a < kn->narg; a++)
			buf_printf(o, ", &t%d", a);
		for (int m = 0; m < kn->k.ntmaps; m++)
			buf_printf(o, ", &st->tm[%d][%d]", k, m);
		buf_printf(o, "};\n\t\tunsigned grid[3] = {1, 1, 1}, block[3] = {%d, 1, 1};\n", kn->k.threads);
		buf_printf(o, "\t\tif ((r = syn_grid_persistent(ctx, st->k[%d], %d, %d, &grid[0])))\n\t\t\treturn r;\n", k, kn->k.threads, kn->k.smem);
		if (lo->p->grid_sms > 0) /* --tune's SM share: CTAs per SM as the occupancy gives */
			buf_printf(o, "\t\tunsigned per_sm = grid[0] / (unsigned)(syn_sms(ctx) - syn_free_sms(ctx));\n");
		/* syn_grid_persistent leaves the context's free SMs; a plan where no
		 * collective runs beside a kernel, and no kernel waits for one, takes
		 * them all (blocks per SM x every SM) */
		if (!lo->p->share_sms)
			buf_printf(o, "\t\tgrid[0] = grid[0] / (unsigned)(syn_sms(ctx) - syn_free_sms(ctx)) * (unsigned)syn_sms(ctx);\n");
		else if (!uses_sm_comm(lo))
			emit_ce_share(o, lo);
		/* with NCCL running beside the kernel, one CTA per SM left to compute:
		 * a second CTA per SM would take the SMs NCCL's CTAs need */
		if (uses_sm_comm(lo) && lo->p->share_sms) {
			buf_printf(o, "\t\tif (grid[0] > (unsigned)(syn_sms(ctx) - syn_free_sms(ctx)))\n\t\t\tgrid[0] = (unsigned)(syn_sms(ctx) - syn_free_sms(ctx));\n");
			/* the plan's own share: the SMs it left the comm backend */
			buf_printf(o, "\t\tif (grid[0] > %du) /* the plan's compute SMs */\n\t\t\tgrid[0] = %du;\n", lo->p->compute_sms,
			           lo->p->compute_sms);
		}
		if (lo->p->grid_sms > 0)
			buf_printf(o, "\t\tif (grid[0] > per_sm * %du) /* --tune: %d SMs */\n\t\t\tgrid[0] = per_sm * %du;\n",
			           lo->p->grid_sms, lo->p->grid_sms, lo->p->grid_sms);
		if (kn->k.cluster > 1) /* a cluster takes each entry */
			buf_printf(o, "\t\tif (grid[0] > nblocks * %du)\n\t\t\tgrid[0] = nblocks * %du;\n"
			              "\t\tif ((r = syn_grid_cluster(ctx, st->k[%d], %d, %d, %d, &grid[0])))\n\t\t\treturn r;\n",
			           kn->k.cluster, kn->k.cluster, k, kn->k.threads, kn->k.smem, kn->k.cluster);
		else if (kn->k.group > 1) /* a group of g takes each entry: g the most the grid holds */
			buf_printf(o, "\t\tif (grid[0] > nblocks * %du)\n\t\t\tgrid[0] = nblocks * %du;\n"
			              "\t\tfor (unsigned g = %du;; g /= 2)\n\t\t\tif (g <= grid[0]) {\n\t\t\t\tgrid[0] -= grid[0] %% g;\n\t\t\t\tbreak;\n\t\t\t}\n",
			           kn->k.group, kn->k.group, kn->k.group);
		else if (kn->k.entry_grid && !lo->p->share_sms && lo->p->grid_sms <= 0)
			/* entries eight rounds of the persistent grid or more: a CTA each
			 * (PtxKernel.entry_grid; fewer ran slower one to a CTA) */
			buf_printf(o, "\t\tif (nblocks >= 8u * grid[0] || grid[0] > nblocks) /* a CTA an entry */\n"
			              "\t\t\tgrid[0] = nblocks;\n");
		else
			buf_printf(o, "\t\tif (grid[0] > nblocks)\n\t\t\tgrid[0] = nblocks;\n");
		buf_printf(o, "\t\tif ((r = syn_launch%s(ctx, st->k[%d], grid, block, %d, prm)))\n\t\t\treturn r;\n\t}\n",
		           kn->k.group > 1 ? "_group" : "", k, kn->k.smem);
	}
	for (int i = 0; i < lo->nstep; i++) {
		const LStep *s = &lo->step[i];
		const CommChunk *c = &s->ch;
		buf_printf(o, "\t{ /* chunk %d of %s %%%d */\n", c->id, ir_ops[f->ins[lo->p->g->b[s->blk].node].op].name, lo->p->g->b[s->blk].node);
		for (int w = 0; w < s->nwait; w++)
			buf_printf(o, "\t\tif ((r = syn_wait(ctx, SYN_COMM, %d, %lluu * e, %d)))\n\t\t\treturn r;\n", base + s->wait_flag[w],
			           (unsigned long long)s->wait_mult[w], c->id);
		buf_printf(o, "\t\tchar *send = ");
		address(o, lo, &b, s->send);
		buf_printf(o, ";\n\t\tchar *recv = ");
		address(o, lo, &b, s->recv);
		buf_printf(o, ";\n");
		if (s->pack.rows) {
			buf_printf(o, "\t\tchar *pk = (char *)st->scratch[%d]; /* the packed send blocks */\n", b.stage[2 * i]);
			emit_pack(o, c, f->nranks, &s->pack, true);
		}
		if (s->unpack.rows)
			buf_printf(o, "\t\tchar *upk = (char *)st->scratch[%d]; /* the packed recv blocks */\n", b.stage[2 * i + 1]);
		if (c->gsize) /* (G, 1) or (N, G): the node or the ranks of this local index across the nodes */
			buf_printf(o, "\t\t/* phase %d of %d: %s %s; scratch %d keeps this GPU's shares between the phases */\n",
			           lo->p->g->b[s->blk].phase, lo->p->g->b[s->blk].nphase, comm_colls[c->op].name,
			           c->gstride == 1 ? "inside the node" : "across the nodes", b.staging);
		buf_printf(o, "\t\tCommChunk ch = {%s, %s, %s, %s, %s, %zuu, %zuu, %zuu, %d, %d, %d, %d, %d, %d};\n", comm_colls[c->op].cname,
		           cdtype[c->dt], cred[c->red], s->pack.rows ? "pk" : "send", s->unpack.rows ? "upk" : "recv", c->count,
		           c->send_stride, c->recv_stride, c->shift, c->id, c->gsize, c->gstride, c->push, c->alone);
		buf_printf(o, "\t\tif ((r = syn_coll(ctx, %s, &ch)))\n\t\t\treturn r;\n", comm_backends[s->be].cname);
		if (s->unpack.rows)
			emit_pack(o, c, f->nranks, &s->unpack, false);
		if (s->raise >= 0)
			buf_printf(o, "\t\tif ((r = syn_raise(ctx, SYN_COMM, rank, %d, e)))\n\t\t\treturn r;\n", base + s->raise);
		buf_printf(o, "\t}\n");
	}
	buf_printf(o, "\t(void)flags;\n\t(void)errw;\n\t(void)timeout;\n\treturn syn_end(ctx);\n}\n");
	emit_on_stream(o, h, f, op);
	free(b.kind);
	free(b.index);
	free(b.stage);
	free(b.work);
}

/* The launcher (.c) and header (.h) of a file's ops; `ptx` is the module
 * every op's kernels are in, `cubin` its ptxas output (or NULL). */
void
host_emit(Buf *c, Buf *h, const char *source, const char *prefix, Lowered *const *ops, int nops, const Buf *ptx,
          const unsigned char *cubin, size_t ncubin)
{
	const char *base = strrchr(prefix, '/') ? strrchr(prefix, '/') + 1 : prefix;
	int flag_base = 0; /* an op's own, or past its plan's flag_base (--tune's candidates: apart) */
	char fid[65]; /* the kernels' identity: their PTX holds every shape and the plan's flags */
	sha256_hex(ptx->s, ptx->len, fid);
	fid[16] = 0;
	buf_printf(h, "/* ");
	c_comment(h, base);
	buf_printf(h, ".h -- generated by syncc %s from ", SYNCC_VERSION);
	c_comment(h, source);
	buf_printf(h, "; do not edit. */\n#ifndef SYNCC_");
	ident(h, base);
	buf_printf(h, "_H\n#define SYNCC_");
	ident(h, base);
	buf_printf(h, "_H\n\n#include \"syncrt.h\"\n\n");
	buf_printf(c, "/* ");
	c_comment(c, base);
	buf_printf(c, ".c -- generated by syncc %s from ", SYNCC_VERSION);
	c_comment(c, source);
	buf_printf(c, "; do not edit.\n");
	buf_printf(c, " * Host launchers over libsyncrt (runtime/syncrt.h); the kernels' PTX is embedded%s. */\n",
	           cubin ? " with its cubin" : "");
	buf_printf(c, "#include <stdint.h>\n#include <stddef.h>\n#include <string.h>\n\n#include \"%s.h\"\n\n", base);
	buf_printf(c, "/* A block-list entry, laid out as codegen/codegen.h's PtxBlock. */\n");
	buf_printf(c, "typedef struct {\n\tuint32_t x, y, z, in_flag;\n\tuint64_t in_epoch;\n\tuint32_t out_flag, out_op;\n\tuint64_t out_value;\n} syn_blk;\n\n");
	buf_printf(c, "/* The block lists' decoder (codegen/host.c's BLK_DECODER). */\n%s\n\n", blk_decoder);
	buf_printf(c, "static const char syn_ptx_of_file[] =\n\t");
	c_string(c, ptx->s, ptx->len);
	buf_printf(c, ";\n\n");
	if (cubin) {
		/* one string, not an initialiser of 660 000 numbers: cc reads it as
		 * one token (the 10-layer MLP's launcher: 1.5 s less of cc) */
		buf_printf(c, "static const unsigned char syn_cubin_of_file[%zu] =\n", ncubin + 1); /* and the string's 0 */
		c_bytes(c, cubin, ncubin);
		buf_printf(c, ";\n\n");
	}
	buf_printf(c, "static const syn_image syn_image_of_file = {");
	c_string(c, source, strlen(source));
	buf_printf(c, ", syn_ptx_of_file, %s, %s};\n", cubin ? "syn_cubin_of_file" : "NULL",
	           cubin ? "sizeof syn_cubin_of_file - 1" : "0");
	for (int i = 0; i < nops; i++) {
		const Func *f = ops[i]->f;
		Buf doc = {0};
		buf_printf(h, "/* %s (compiled for %d ranks): arguments and results are this rank's pieces:\n", sym_str(f->name), f->nranks);
		for (int a = 0; a < f->nin; a++) {
			ty_print(&doc, &f->ins[f->in[a]].ty);
			buf_printf(h, " *   %s: %s\n", sym_str(f->ins[f->in[a]].name), doc.s);
			doc.len = 0;
		}
		for (int a = 0; a < f->nout; a++) {
			ty_print(&doc, &f->outty[a]);
			buf_printf(h, " *   out%d: %s\n", a, doc.s);
			doc.len = 0;
		}
		buf_free(&doc);
		buf_printf(h, " * Returns SYN_OK or a syn_status; syn_error(ctx) says what failed. */\n");
		if (ops[i]->p->flag_base > flag_base)
			flag_base = ops[i]->p->flag_base;
		emit_op(c, h, ops[i], flag_base, fid);
		buf_printf(h, "\n");
		flag_base += ops[i]->nflags;
	}
	buf_printf(h, "#endif\n");
}
