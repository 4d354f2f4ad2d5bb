/* tools/calib.c -- `syncrun --calibrate`'s second half: measurements (a
 * samples file, docs/profiles.md) fitted into a cost-model profile.  Split
 * from the measuring (tools/syncrun_gpu.c) so it runs without a GPU:
 * `syncrun --calibrate OUT.prof --calibrate-from-samples S` is how the
 * tests exercise it.  Every field sched/cost.c reads is either derived from
 * samples here or carried from a named base profile with a comment that
 * says so; the file is written to a temporary, loaded back with prof_load,
 * and only then renamed over OUT. */
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each sample line holds: the numbers after its words, US last. */
static const struct {
	const char *key;
	int words;   /* words before the numbers (the key included) */
	int nums;
	const char *form;
} kinds[] = {
	{"matmul", 2, 4, "matmul DTYPE M N K US"},
	{"copy", 1, 2, "copy BYTES US"},
	{"vector", 1, 2, "vector FLOPS US"},
	{"launch", 1, 2, "launch COUNT US"},
	{"streamop", 1, 2, "streamop COUNT US"},
	{"flag", 1, 2, "flag COUNT US"},
	{"comm", 3, 2, "comm BACKEND OP BYTES US"},
};


void
cal_add(CalSamples *c, const char *key, const char *a, const char *b, const double *x, int nx)
{
	CalSample *s;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 32;
		c->s = xrealloc(c->s, (size_t)c->cap * sizeof *c->s);
	}
	s = &c->s[c->n++];
	memset(s, 0, sizeof *s);
	snprintf(s->key, sizeof s->key, "%s", key);
	snprintf(s->a, sizeof s->a, "%s", a ? a : "");
	snprintf(s->b, sizeof s->b, "%s", b ? b : "");
	for (int i = 0; i < nx && i < 4; i++)
		s->x[i] = x[i];
	s->nx = nx;
}

void
cal_free(CalSamples *c)
{
	free(c->s);
	c->s = NULL;
	c->n = c->cap = 0;
}

static bool
positive(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return *s && !*end && errno == 0 && isfinite(*out) && *out > 0;
}

/* An integer in [lo, hi]: a count, a size in bytes, an SM count.  Read
 * with strtod so 1e6 is allowed, but a fraction, or a number past hi
 * (2^53 for sizes: beyond it doubles skip integers), is not. */
static bool
integer(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return *s && !*end && errno == 0 && *out == floor(*out) && *out >= lo && *out <= hi;
}

/* A number the profile can hold: "%.6g" of it reads back (prof_load) as a
 * positive finite number.  Far wider than any machine's, so it only
 * keeps out values no measurement gives. */
static bool
printable(double v)
{
	return isfinite(v) && v >= 1e-300 && v <= 1e300;
}

#define MAX_EXACT 9007199254740992.0 /* 2^53 */

/* What the fit derives from one sample (the rate or per-item time the
 * profile holds): it must be printable() too. */
static double
derived(const char *key, const double *x)
{
	if (strcmp(key, "matmul") == 0)
		return 2 * x[0] * x[1] * x[2] / x[3] * 1e-6;
	if (strcmp(key, "copy") == 0 || strcmp(key, "vector") == 0)
		return x[0] / x[1] * 1e-3;
	if (strcmp(key, "comm") == 0)
		return x[1];
	return x[1] / x[0]; /* launch, streamop, flag: us per item */
}

static bool
bad(char *err, size_t n, const char *path, int line, const char *what, const char *form)
{
	snprintf(err, n, "%s:%d: %s%s%s", path, line, what, form ? "; write " : "", form ? form : "");
	return false;
}

/* A measurement line: its words checked against what they name. */
static bool
parse_sample(CalSamples *c, char **w, int nw, const char *path, int ln, char *err, size_t n)
{
	double x[4];
	DType dt;
	for (size_t k = 0; k < NELEM(kinds); k++) {
		if (strcmp(w[0], kinds[k].key))
			continue;
		if (nw != kinds[k].words + kinds[k].nums)
			return bad(err, n, path, ln, "wrong number of fields", kinds[k].form);
		if (k == 0 && (!ty_dtype_byname(w[1], &dt) || dt == DT_I32))
			return bad(err, n, path, ln, "unknown float dtype", kinds[k].form);
		if (kinds[k].words == 3 && comm_backend_byname(w[1]) < 0) {
			char what[256], names[128];
			snprintf(what, sizeof what, "unknown backend (%s)", comm_backend_list(names, sizeof names));
			return bad(err, n, path, ln, what, NULL);
		}
		if (kinds[k].words == 3 && comm_coll_byname(w[2]) < 0)
			return bad(err, n, path, ln, "unknown collective", NULL);
		for (int i = 0; i < kinds[k].nums; i++) {
			bool last = i == kinds[k].nums - 1;
			if (!positive(w[kinds[k].words + i], &x[i]))
				return bad(err, n, path, ln, "sizes, counts and times must be positive numbers", kinds[k].form);
			if (!last && !integer(w[kinds[k].words + i], 1, MAX_EXACT, &x[i]))
				return bad(err, n, path, ln, "sizes and counts must be whole numbers below 2^53", kinds[k].form);
		}
		if (!printable(derived(w[0], x)))
			return bad(err, n, path, ln, k == 0 ? "the TFLOP/s these numbers give is out of any profile's range"
			                            : "the rate or time these numbers give is out of any profile's range",
			           kinds[k].form);
		cal_add(c, w[0], kinds[k].words > 1 ? w[1] : NULL, kinds[k].words > 2 ? w[2] : NULL, x, kinds[k].nums);
		c->s[c->n - 1].line = ln;
		return true;
	}
	return bad(err, n, path, ln, "not a samples line (docs/profiles.md, \"Calibration\")", NULL);
}

static bool
parse_line(CalSamples *c, char **w, int nw, char *rest, const char *path, int ln, char *err, size_t n)
{
	double x;
	int be;
	if (strcmp(w[0], "name") == 0 && nw == 2)
		snprintf(c->name, sizeof c->name, "%s", w[1]);
	else if (strcmp(w[0], "base") == 0 && nw == 2)
		snprintf(c->base, sizeof c->base, "%s", w[1]);
	else if (strcmp(w[0], "device") == 0)
		snprintf(c->device, sizeof c->device, "%s", rest);
	else if (strcmp(w[0], "sms") == 0 && nw == 2) {
		if (!integer(w[1], 1, INT_MAX, &x))
			return bad(err, n, path, ln, "sms must be a whole number of multiprocessors, 1 or more", "sms N");
		c->sms = (int)x;
	} else if (strcmp(w[0], "world") == 0 && nw == 2) {
		if (!integer(w[1], 2, INT_MAX, &x))
			return bad(err, n, path, ln, "world must be a whole number of ranks, 2 or more", "world P");
		c->world = (int)x;
	} else if (strcmp(w[0], "commsms") == 0 && nw == 3 && (be = comm_backend_byname(w[1])) >= 0) {
		if (!integer(w[2], 0, INT_MAX, &x))
			return bad(err, n, path, ln, "commsms must be a whole number of SMs, 0 or more", "commsms BACKEND N");
		c->commsms[be] = (int)x;
		c->commsms_line[be] = ln;
	} else if (strcmp(w[0], "name") == 0 || strcmp(w[0], "base") == 0 || strcmp(w[0], "sms") == 0 ||
	         strcmp(w[0], "world") == 0 || strcmp(w[0], "commsms") == 0)
		return bad(err, n, path, ln, "malformed line", "name NAME, base PROFILE, sms N, world P (>= 2), commsms BACKEND N");
	else
		return parse_sample(c, w, nw, path, ln, err, n);
	return true;
}

bool
cal_parse(CalSamples *c, const char *text, const char *path, char *err, size_t n)
{
	char *copy = xstrdup(text);
	int ln = 0;
	bool ok = true;
	memset(c, 0, sizeof *c);
	for (int be = 0; be < BE_COUNT; be++)
		c->commsms[be] = -1;
	/* strtok_r would skip empty lines and lose the count: split by hand */
	for (char *line = copy, *next; line && ok; line = next) {
		char *w[8], *hash, *rest, *s2 = NULL;
		int nw = 0;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		ln++;
		if ((hash = strchr(line, '#')))
			*hash = 0;
		rest = line + strspn(line, " \t");
		rest += strcspn(rest, " \t");
		rest += strspn(rest, " \t");
		{
			char keep[256];
			snprintf(keep, sizeof keep, "%s", rest);
			for (char *t = strtok_r(line, " \t\r", &s2); t && nw < 8; t = strtok_r(NULL, " \t\r", &s2))
				w[nw++] = t;
			if (nw)
				ok = parse_line(c, w, nw, keep, path, ln, err, n);
		}
	}
	free(copy);
	/* after the loop: `sms` may come after the commsms lines */
	for (int be = 0; be < BE_COUNT && ok; be++)
		if (c->sms && c->commsms[be] > c->sms) {
			snprintf(err, n, "%s:%d: commsms %s %d is more SMs than the device's %d (the sms line)", path,
			         c->commsms_line[be], comm_backends[be].name, c->commsms[be], c->sms);
			ok = false;
		}
	return ok;
}

/* The samples as text, in the format cal_parse reads (--calibrate writes
 * them beside the profile, so a fit can be redone without the GPUs). */
void
cal_samples_text(const CalSamples *c, Buf *out)
{
	buf_printf(out, "# syncrun --calibrate measurements (docs/profiles.md, \"Calibration\")\n");
	buf_printf(out, "name %s\nbase %s\n", c->name, c->base);
	if (c->device[0])
		buf_printf(out, "device %s\n", c->device);
	if (c->sms)
		buf_printf(out, "sms %d\n", c->sms);
	if (c->world)
		buf_printf(out, "world %d\n", c->world);
	for (int b = 0; b < BE_COUNT; b++)
		if (c->commsms[b] >= 0)
			buf_printf(out, "commsms %s %d\n", comm_backends[b].name, c->commsms[b]);
	for (int i = 0; i < c->n; i++) {
		const CalSample *s = &c->s[i];
		buf_printf(out, "%s", s->key);
		if (s->a[0])
			buf_printf(out, " %s", s->a);
		if (s->b[0])
			buf_printf(out, " %s", s->b);
		for (int k = 0; k < s->nx; k++)
			buf_printf(out, " %.9g", s->x[k]);
		buf_printf(out, "\n");
	}
}

/* ---- the fit ---- */

/* The sample of `key` (and `a`) with the largest work (x[0], or M*N*K):
 * the sustained rate, as the cost model's single number means. */
static const CalSample *
largest(const CalSamples *c, const char *key, const char *a)
{
	const CalSample *best = NULL;
	double bw = 0;
	for (int i = 0; i < c->n; i++) {
		const CalSample *s = &c->s[i];
		double w = s->x[0] * (s->nx == 4 ? s->x[1] * s->x[2] : 1);
		if (strcmp(s->key, key) || (a && strcmp(s->a, a)))
			continue;
		if (!best || w > bw)
			best = s, bw = w;
	}
	return best;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Per-item cost (US / COUNT) of a count sample: the median over samples. */
static bool
per_item(const CalSamples *c, const char *key, double *us, int *nsamp)
{
	double v[64];
	int n = 0;
	for (int i = 0; i < c->n && n < 64; i++)
		if (strcmp(c->s[i].key, key) == 0)
			v[n++] = c->s[i].x[1] / c->s[i].x[0];
	*nsamp = n;
	if (!n)
		return false;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	*us = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return true;
}

typedef struct Curve {
	CurvePt p[MAXPTS];
	int n;
} Curve;

/* Least squares of us = alpha + bytes * s; beta = 1/s in GB/s.  The
 * residual is the root mean square of (fit - measured) / measured. */
static void
fit_comment(const Curve *cv, Buf *out)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = cv->n, a, s, rr = 0;
	if (cv->n < 2) {
		buf_printf(out, "#   one size only: no fit\n");
		return;
	}
	for (int i = 0; i < cv->n; i++) {
		sx += cv->p[i].bytes;
		sy += cv->p[i].us;
		sxx += cv->p[i].bytes * cv->p[i].bytes;
		sxy += cv->p[i].bytes * cv->p[i].us;
	}
	s = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	a = (sy - s * sx) / n;
	for (int i = 0; i < cv->n; i++) {
		double e = (a + s * cv->p[i].bytes - cv->p[i].us) / cv->p[i].us;
		rr += e * e;
	}
	buf_printf(out, "#   least-squares fit us = alpha + bytes/beta: alpha %.3g us, beta %.4g GB/s, "
	           "rms relative residual %.1f%% over %d sizes\n",
	           a, s > 0 ? 1e-3 / s : INFINITY, 100 * sqrt(rr / n), cv->n);
}

static bool
curve_of(const CalSamples *c, int be, int op, Curve *cv, char *err, size_t n)
{
	cv->n = 0;
	for (int i = 0; i < c->n; i++) {
		const CalSample *s = &c->s[i];
		int k;
		if (strcmp(s->key, "comm") || strcmp(s->a, comm_backends[be].name) || strcmp(s->b, comm_colls[op].name))
			continue;
		if (cv->n == MAXPTS) {
			snprintf(err, n, "more than %d sizes of comm %s %s (a profile curve holds %d points)", MAXPTS, s->a, s->b,
			         MAXPTS);
			return false;
		}
		for (k = cv->n; k > 0 && cv->p[k - 1].bytes > s->x[0]; k--)
			cv->p[k] = cv->p[k - 1];
		if (k > 0 && cv->p[k - 1].bytes == s->x[0]) {
			snprintf(err, n, "comm %s %s measured twice at %.0f bytes (line %d)", s->a, s->b, s->x[0], s->line);
			return false;
		}
		cv->p[k] = (CurvePt){s->x[0], s->x[1]};
		cv->n++;
	}
	return true;
}

/* ---- the profile ---- */

static bool
write_comm(const CalSamples *c, const Profile *base, Buf *out, char *err, size_t n)
{
	buf_printf(out, "# comm BACKEND OP BYTES-PER-RANK-INPUT US: the median time of one call through libsyncrt\n");
	for (int be = 0; be < BE_COUNT; be++)
		for (int op = 0; op < CO_COUNT; op++) {
			Curve cv;
			if (!curve_of(c, be, op, &cv, err, n))
				return false;
			if (cv.n) {
				buf_printf(out, "# comm %s %s: measured at %d size%s\n", comm_backends[be].name, comm_colls[op].name, cv.n,
				           cv.n == 1 ? "" : "s");
				fit_comment(&cv, out);
				for (int i = 0; i < cv.n; i++)
					buf_printf(out, "comm %s %-14s %12.0f %10.6g\n", comm_backends[be].name, comm_colls[op].name, cv.p[i].bytes,
					           cv.p[i].us);
			} else if (base->npts[be][op]) {
				buf_printf(out, "# comm %s %s: carried from %s (not measured here)\n", comm_backends[be].name,
				           comm_colls[op].name, base->name);
				for (int i = 0; i < base->npts[be][op]; i++)
					buf_printf(out, "comm %s %-14s %12.0f %10.6g\n", comm_backends[be].name, comm_colls[op].name,
					           base->curve[be][op][i].bytes, base->curve[be][op][i].us);
			}
		}
	return true;
}

/* One scalar line: measured when `have`, else the base's value, carried. */
static void
scalar(Buf *out, const char *key, bool have, double v, const char *how, double basev, const Profile *base)
{
	if (have)
		buf_printf(out, "%-9s %-12.6g # measured: %s\n", key, v, how);
	else
		buf_printf(out, "%-9s %-12.6g # carried from %s: not measured here\n", key, basev, base->name);
}

static void
write_matmul(const CalSamples *c, const Profile *base, Buf *out)
{
	static const DType dts[] = {DT_BF16, DT_F16, DT_F32};
	for (size_t k = 0; k < NELEM(dts); k++) {
		const char *name = ty_dtypes[dts[k]].name;
		const CalSample *s = largest(c, "matmul", name);
		if (!s) {
			buf_printf(out, "matmul    %-5s %-6.4g # carried from %s: syncc's %s matmul is not measured here\n", name,
			           base->matmul_tflops[dts[k]], base->name, name);
			continue;
		}
		buf_printf(out, "matmul    %-5s %-6.4g # measured: TFLOP/s of syncc's matmul kernel at %.0fx%.0fx%.0f "
		           "(the largest size)\n", name, 2 * s->x[0] * s->x[1] * s->x[2] / s->x[3] * 1e-6, s->x[0], s->x[1], s->x[2]);
		for (int i = 0; i < c->n; i++)
			if (strcmp(c->s[i].key, "matmul") == 0 && strcmp(c->s[i].a, name) == 0)
				buf_printf(out, "#   %s %.0fx%.0fx%.0f: %.1f us, %.1f TFLOP/s\n", name, c->s[i].x[0], c->s[i].x[1],
				           c->s[i].x[2], c->s[i].x[3], 2 * c->s[i].x[0] * c->s[i].x[1] * c->s[i].x[2] / c->s[i].x[3] * 1e-6);
	}
}

static void
write_scalars(const CalSamples *c, const Profile *base, Buf *out)
{
	const CalSample *cp = largest(c, "copy", NULL), *vec = largest(c, "vector", NULL);
	double us;
	int ns;
	char how[160];
	if (vec)
		snprintf(how, sizeof how, "GFLOP/s of a fused chain of elementwise f32 ops, %.3g flops", vec->x[0]);
	scalar(out, "vector", vec, vec ? vec->x[0] / vec->x[1] * 1e-3 : 0, how, base->vector_gflops, base);
	if (cp)
		snprintf(how, sizeof how, "GB/s of syncc's elementwise kernel moving %.3g bytes", cp->x[0]);
	scalar(out, "hbm", cp, cp ? cp->x[0] / cp->x[1] * 1e-3 : 0, how, base->hbm_gbps, base);
	static const struct {
		const char *key, *how;
		size_t off;
	} per[] = {
		{"launch", "us per launch of an empty kernel, back to back through syn_launch", offsetof(Profile, launch_us)},
		{"flag", "us per flag hand-off between spinning kernels of two GPUs", offsetof(Profile, flag_us)},
		{"streamop", "us per stream wait or write of a flag (syn_wait, syn_raise)", offsetof(Profile, streamop_us)},
	};
	for (size_t k = 0; k < NELEM(per); k++) {
		bool have = per_item(c, per[k].key, &us, &ns);
		snprintf(how, sizeof how, "%s, median of %d sample%s", per[k].how, ns, ns == 1 ? "" : "s");
		scalar(out, per[k].key, have, us, how, *(const double *)((const char *)base + per[k].off), base);
	}
}

bool
cal_profile(const CalSamples *c, const Profile *basep, Buf *out, char *err, size_t n)
{
	const Profile base = *basep;
	buf_printf(out, "# syncc cost-model profile written by `syncrun --calibrate` (docs/profiles.md).\n");
	if (c->device[0])
		buf_printf(out, "# device: %s\n", c->device);
	buf_printf(out, "# Fields not measured are carried from profile %s (%s), each marked so.\n", base.name, base.path);
	buf_printf(out, "name      %s\n", c->name[0] ? c->name : "calibrated");
	if (c->sms)
		buf_printf(out, "sms       %-12d # measured: the device's multiprocessor count\n", c->sms);
	else
		buf_printf(out, "sms       %-12d # carried from %s: not measured here\n", base.sms, base.name);
	if (c->world)
		buf_printf(out, "world     %-12d # measured: the ranks the comm curves below ran on\n", c->world);
	else
		buf_printf(out, "world     %-12d # carried from %s: not measured here\n", base.world, base.name);
	write_matmul(c, &base, out);
	write_scalars(c, &base, out);
	for (int be = 0; be < BE_COUNT; be++)
		if (c->commsms[be] >= 0)
			buf_printf(out, "commsms   %s %-7d # %s\n", comm_backends[be].name, c->commsms[be], comm_backends[be].smsnote);
		else
			buf_printf(out, "commsms   %s %-7d # carried from %s\n", comm_backends[be].name, base.comm_sms[be], base.name);
	buf_printf(out, "inter     %g %g       # carried from %s: one node cannot measure the network between nodes\n",
	           base.inter_gbps, base.inter_us, base.name);
	return write_comm(c, &base, out, err, n);
}

/* Written beside OUT, loaded back, then renamed: OUT is never half-written
 * and never a file syncc --profile would refuse. */
static int
write_profile(const Buf *text, const char *out)
{
	Buf tmp = {0};
	Profile check;
	char why[700];
	int r = EXIT_OK;
	buf_printf(&tmp, "%s.tmp%ld.prof", out, (long)getpid());
	if (!drv_write(tmp.s, text)) {
		buf_free(&tmp);
		return EXIT_INPUT;
	}
	if (!prof_load(&check, tmp.s, why, sizeof why)) {
		fprintf(stderr, "syncrun: internal error: the written profile does not load: %s\n", why);
		r = EXIT_ICE;
	} else if (rename(tmp.s, out) != 0) {
		fprintf(stderr, "syncrun: cannot write %s: %s\n", out, strerror(errno));
		r = EXIT_INPUT;
	}
	if (r)
		remove(tmp.s);
	buf_free(&tmp);
	return r;
}

int
cal_write(const CalSamples *c, const char *out)
{
	Buf text = {0};
	Profile base;
	char err[700];
	int r;
	if (!c->base[0]) {
		fprintf(stderr, "syncrun: --calibrate: the samples name no base profile (a `base NAME` line) to carry "
		                "unmeasured fields from\n");
		return EXIT_INPUT;
	}
	if (!prof_find(&base, c->base, err, sizeof err)) {
		diag_usage("--calibrate: base profile: %s", err);
		return EXIT_USAGE;
	}
	if (!cal_profile(c, &base, &text, err, sizeof err)) {
		fprintf(stderr, "syncrun: --calibrate: %s\n", err);
		buf_free(&text);
		return EXIT_INPUT;
	}
	r = write_profile(&text, out);
	buf_free(&text);
	if (r == EXIT_OK)
		printf("calibrated profile written: %s (load it with --profile %s)\n", out, out);
	return r;
}

int
cal_from_samples(const char *samples, const char *out)
{
	CalSamples c;
	char *text;
	size_t len;
	const char *why;
	char err[700];
	int r;
	if (!read_file(samples, &text, &len, 1 << 20, &why)) {
		diag_usage("cannot read samples %s: %s", samples, why);
		return EXIT_USAGE;
	}
	if (!cal_parse(&c, text, samples, err, sizeof err)) {
		fprintf(stderr, "syncrun: %s\n", err);
		free(text);
		cal_free(&c);
		return EXIT_INPUT;
	}
	free(text);
	r = cal_write(&c, out);
	cal_free(&c);
	return r;
}

/* Before minutes of measuring: PROFILE's directory must take new files.
 * The probe is the very temporary drv_write makes for PROFILE.samples. */
int
cal_check_dest(const char *profile)
{
	Buf probe = {0};
	const char *slash = strrchr(profile, '/');
	int fd, r = EXIT_OK;
	buf_printf(&probe, "%s.samples.tmp%ld", profile, (long)getpid());
	fd = open(probe.s, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		fprintf(stderr, "syncrun: --calibrate: cannot write %s: cannot create a file in %s%.*s (%s); nothing measured\n",
		        profile, slash ? "the directory " : "the current directory", slash ? (int)(slash - profile + 1) : 0,
		        profile, strerror(errno));
		r = EXIT_INPUT;
	} else {
		close(fd);
		remove(probe.s);
	}
	buf_free(&probe);
	return r;
}

/* PROFILE.samples, written whole or not at all (drv_write); `partial`:
 * what a measurement that failed partway had gathered, for the record. */
bool
cal_write_samples(const CalSamples *c, const char *profile, bool partial)
{
	Buf path = {0}, text = {0};
	bool ok;
	buf_printf(&path, "%s.samples", profile);
	cal_samples_text(c, &text);
	if ((ok = drv_write(path.s, &text))) {
		if (partial)
			printf("the measurements made before the failure (%d sample%s, no profile written): %s\n", c->n,
			       c->n == 1 ? "" : "s", path.s);
		else
			printf("measurements: %s\n", path.s);
	}
	buf_free(&path);
	buf_free(&text);
	return ok;
}
