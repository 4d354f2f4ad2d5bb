/* sim/tensor.c -- host tensors and the CPU kernel of every IR op,
 * shared by the oracle (global shapes) and the simulated ranks (local
 * shapes).  In SIM_GPU mode arithmetic is f32 and every store rounds to its
 * dtype exactly as the GPU does (round to nearest even); SIM_F64 keeps
 * doubles throughout, for error analysis. */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- tensors ---- */

Tensor
sim_tensor(DType dt, int rank, const int64_t *dim)
{
	Tensor t = {.dt = dt, .rank = rank, .n = 1};
	for (int i = 0; i < rank; i++) {
		t.dim[i] = dim[i];
		t.n *= dim[i];
	}
	t.v = xmalloc((size_t)t.n * sizeof *t.v);
	for (int64_t i = 0; i < t.n; i++)
		t.v[i] = NAN; /* poison: an element no kernel writes cannot pass */
	return t;
}

Tensor
sim_tensor_of(const Type *ty, bool local, int nranks)
{
	int64_t dim[LIM_RANK];
	if (local)
		ty_local_shape(ty, nranks, dim);
	else
		memcpy(dim, ty->dim, sizeof dim);
	return sim_tensor(ty->dt, ty->rank, dim);
}

void
sim_free(Tensor *t)
{
	free(t->v);
	t->v = NULL;
}

/* ---- rounding: what a store of an f32 value to each dtype keeps ---- */

static double
round_bf16(float f)
{
	uint32_t u;
	if (isnan(f))
		return NAN;
	memcpy(&u, &f, 4);
	u += 0x7fffu + ((u >> 16) & 1u);
	u &= 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}

static double
round_f16(float f)
{
	double x = f, ulp, r;
	int e;
	if (isnan(f) || isinf(f) || x == 0)
		return x;
	frexp(x, &e);             /* |x| in [2^(e-1), 2^e) */
	e = e - 1 < -14 ? -14 : e - 1;
	ulp = ldexp(1.0, e - 10); /* 10 fraction bits; subnormals below 2^-14 */
	r = nearbyint(x / ulp) * ulp;
	if (fabs(r) > 65504.0)
		return x > 0 ? INFINITY : -INFINITY;
	return r;
}

static double
wrap_i32(double x)
{
	if (isnan(x))
		return 0;
	return (double)(int32_t)(uint32_t)(uint64_t)(int64_t)x;
}

double
sim_round(DType dt, double x)
{
	switch (dt) {
	case DT_F32: return (float)x;
	case DT_BF16: return round_bf16((float)x);
	case DT_F16: return round_f16((float)x);
	case DT_I32: return wrap_i32(x);
	default: die("bad dtype");
	}
}

static double
store(double x, DType dt, SimMode m)
{
	if (m == SIM_F64 && dt != DT_I32)
		return x;
	return sim_round(dt, x);
}

void
sim_round_all(Tensor *t, DType as, SimMode m)
{
	for (int64_t i = 0; i < t->n; i++)
		t->v[i] = store(t->v[i], as, m);
}

/* ---- random inputs: xorshift64*, never all zeros or constants ---- */

uint64_t
sim_rng_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

void
sim_fill_random(Tensor *t, uint64_t *rng)
{
	for (int64_t i = 0; i < t->n; i++) {
		double u = (double)(sim_rng_next(rng) >> 11) * 0x1p-53; /* [0, 1) */
		if (t->dt == DT_I32)
			t->v[i] = (double)((int64_t)(u * 17) - 8);
		else
			t->v[i] = sim_round(t->dt, 2 * u - 1);
	}
}

/* ---- indexing ---- */

int64_t
sim_offset(const Tensor *t, const int64_t *idx)
{
	int64_t off = 0;
	for (int i = 0; i < t->rank; i++)
		off = off * t->dim[i] + idx[i];
	return off;
}

/* Strides of `a` seen from `out`'s index space (numpy broadcasting:
 * right-aligned, stretched dims get stride 0). */
static void
bstrides(const Tensor *a, int orank, const int64_t *odim, int64_t *st)
{
	int off = orank - a->rank;
	int64_t s = 1;
	(void)odim;
	for (int i = orank - 1; i >= 0; i--) {
		int k = i - off;
		if (k < 0) {
			st[i] = 0;
			continue;
		}
		st[i] = a->dim[k] == 1 ? 0 : s;
		s *= a->dim[k];
	}
}

/* ---- elementwise ---- */

static double
unary(Op op, double x, SimMode m)
{
	float f = (float)x;
	if (m == SIM_F64) {
		switch (op) {
		case OP_NEG: return -x;
		case OP_ABS: return fabs(x);
		case OP_EXP: return exp(x);
		case OP_LOG: return log(x);
		case OP_SQRT: return sqrt(x);
		case OP_RSQRT: return 1 / sqrt(x);
		case OP_TANH: return tanh(x);
		case OP_SIGMOID: return 1 / (1 + exp(-x));
		case OP_CAST: return x;
		default: die("bad unary op %d", op);
		}
	}
	switch (op) {
	case OP_NEG: return -f;
	case OP_ABS: return fabsf(f);
	case OP_EXP: return expf(f);
	case OP_LOG: return logf(f);
	case OP_SQRT: return sqrtf(f);
	case OP_RSQRT: return 1.0f / sqrtf(f);
	case OP_TANH: return tanhf(f);
	case OP_SIGMOID: return 1.0f / (1.0f + expf(-f));
	case OP_CAST: return x;
	default: die("bad unary op %d", op);
	}
}

/* A cast to i32 truncates toward zero and saturates (cvt.rzi.s32.f32). */
static double
to_i32(double x)
{
	if (isnan(x))
		return 0;
	x = trunc(x);
	return x > 2147483647.0 ? 2147483647.0 : x < -2147483648.0 ? -2147483648.0 : x;
}

void
sim_unary(Op op, const Tensor *a, Tensor *out, DType st, SimMode m)
{
	ASSERT(a->n == out->n);
	for (int64_t i = 0; i < a->n; i++) {
		double x = a->v[i];
		if (op == OP_CAST && st == DT_I32 && a->dt != DT_I32)
			x = to_i32(x);
		else if (a->dt == DT_I32 && (op == OP_NEG || op == OP_ABS))
			x = op == OP_NEG ? -x : fabs(x);
		else
			x = unary(op, x, m);
		out->v[i] = store(x, st, m);
	}
}

static double
binary_f(Op op, double x, double y, SimMode m)
{
	if (m == SIM_GPU) {
		float a = (float)x, b = (float)y;
		switch (op) {
		case OP_ADD: return a + b;
		case OP_SUB: return a - b;
		case OP_MUL: return a * b;
		case OP_DIV: return a / b;
		case OP_MAX: return fmaxf(a, b);
		case OP_MIN: return fminf(a, b);
		default: die("bad binary op %d", op);
		}
	}
	switch (op) {
	case OP_ADD: return x + y;
	case OP_SUB: return x - y;
	case OP_MUL: return x * y;
	case OP_DIV: return x / y;
	case OP_MAX: return fmax(x, y);
	case OP_MIN: return fmin(x, y);
	default: die("bad binary op %d", op);
	}
}

/* i32 arithmetic wraps like the GPU's 32-bit integer units. */
static double
binary_i(Op op, double x, double y)
{
	int64_t a = (int64_t)x, b = (int64_t)y;
	uint64_t r;
	switch (op) {
	case OP_ADD: r = (uint64_t)a + (uint64_t)b; break;
	case OP_SUB: r = (uint64_t)a - (uint64_t)b; break;
	case OP_MUL: r = (uint64_t)a * (uint64_t)b; break;
	case OP_MAX: r = (uint64_t)(a > b ? a : b); break;
	case OP_MIN: r = (uint64_t)(a < b ? a : b); break;
	default: die("bad i32 op %d", op);
	}
	return (double)(int32_t)(uint32_t)r;
}

void
sim_binary(Op op, const Tensor *a, const Tensor *b, Tensor *out, DType st, SimMode m)
{
	int64_t sta[LIM_RANK], stb[LIM_RANK], idx[LIM_RANK] = {0};
	int r = out->rank;
	bool ints = a->dt == DT_I32;
	if (r == 0) {
		out->v[0] = store(ints ? binary_i(op, a->v[0], b->v[0]) : binary_f(op, a->v[0], b->v[0], m), st, m);
		return;
	}
	bstrides(a, r, out->dim, sta);
	bstrides(b, r, out->dim, stb);
	/* one run of the last dim at a time */
	int64_t len = out->dim[r - 1], rows = out->n / len, sa = sta[r - 1], sb = stb[r - 1];
	for (int64_t row = 0; row < rows; row++) {
		int64_t ba = 0, bb = 0;
		double *po = out->v + row * len;
		for (int d = 0; d < r - 1; d++) {
			ba += idx[d] * sta[d];
			bb += idx[d] * stb[d];
		}
		for (int64_t j = 0; j < len; j++) {
			double x = a->v[ba + j * sa], y = b->v[bb + j * sb];
			po[j] = store(ints ? binary_i(op, x, y) : binary_f(op, x, y, m), st, m);
		}
		for (int d = r - 2; d >= 0; d--) {
			if (++idx[d] < out->dim[d])
				break;
			idx[d] = 0;
		}
	}
}

/* ---- matmul: batch dims broadcast, K reduced in f32 (SIM_GPU) ---- */

enum { MM_TR = 4 }; /* rows of a register tile of c */

/* c[M,N] += a[M,K] b[K,N] over the function's own copies, accumulating in
 * T.  A tile of MM_TR rows and 32 bytes of columns of c (8 floats: 8 SSE
 * registers) is held in registers across the whole k loop, so each
 * element of b is loaded once for MM_TR rows and c is read and written
 * once: 3x the blocked loop before it (which loaded and stored a row of c
 * for every k), and matmuls are most of a simulator run.  Each c[i][j]
 * still sums over k in order, so the result is the plain loop's, bit for
 * bit.  The sanitizers leave this loop alone (under ASan it was half of a
 * sanitized simulator run, and UBSan's overflow checks of i * N + j kept
 * it scalar: still a third): its three buffers are allocated by the caller
 * for exactly these M, N, K, whose products the caller computes (checked
 * there), and the caller's copies in and out, which touch the tensors, are
 * checked. */
#define MM_KERNEL(name, T)                                                                          \
	NO_SANITIZE static void name(const T *a, const T *b, T *c, int64_t M, int64_t N, int64_t K)    \
	{                                                                                               \
		enum { TC = 32 / sizeof(T) };                                                               \
		int64_t i = 0;                                                                              \
		for (; i + MM_TR <= M; i += MM_TR) {                                                        \
			int64_t j = 0;                                                                          \
			for (; j + TC <= N; j += TC) {                                                          \
				T acc[MM_TR][TC];                                                                   \
				for (int r = 0; r < MM_TR; r++)                                                     \
					for (int q = 0; q < TC; q++)                                                    \
						acc[r][q] = c[(i + r) * N + j + q];                                         \
				for (int64_t k = 0; k < K; k++) {                                                   \
					const T *restrict bk = b + k * N + j;                                           \
					for (int r = 0; r < MM_TR; r++) {                                               \
						const T ark = a[(i + r) * K + k];                                           \
						for (int q = 0; q < TC; q++)                                                \
							acc[r][q] += ark * bk[q];                                               \
					}                                                                               \
				}                                                                                   \
				for (int r = 0; r < MM_TR; r++)                                                     \
					for (int q = 0; q < TC; q++)                                                    \
						c[(i + r) * N + j + q] = acc[r][q];                                         \
			}                                                                                       \
			for (; j < N; j++) /* the columns past the last whole tile */                           \
				for (int r = 0; r < MM_TR; r++) {                                                   \
					T sum = c[(i + r) * N + j];                                                     \
					for (int64_t k = 0; k < K; k++)                                                 \
						sum += a[(i + r) * K + k] * b[k * N + j];                                   \
					c[(i + r) * N + j] = sum;                                                       \
				}                                                                                   \
		}                                                                                           \
		for (; i < M; i++) /* the rows past the last whole tile */                                  \
			for (int64_t k = 0; k < K; k++) {                                                       \
				const T aik = a[i * K + k];                                                         \
				for (int64_t j = 0; j < N; j++)                                                     \
					c[i * N + j] += aik * b[k * N + j];                                             \
			}                                                                                       \
	}

/* C[M,N] = A[M,K] B[K,N] in T, rounded to `st` on store. */
#define MM2D(name, kernel, T)                                                                       \
	static void name(const double *A, const double *B, double *C, int64_t M, int64_t N, int64_t K,  \
	                 DType st, SimMode m)                                                           \
	{                                                                                               \
		T *a = xmalloc((size_t)(M * K) * sizeof(T)), *b = xmalloc((size_t)(K * N) * sizeof(T));     \
		T *c = xcalloc((size_t)(M * N), sizeof(T));                                                 \
		for (int64_t i = 0; i < M * K; i++)                                                         \
			a[i] = (T)A[i];                                                                         \
		for (int64_t i = 0; i < K * N; i++)                                                         \
			b[i] = (T)B[i];                                                                         \
		kernel(a, b, c, M, N, K);                                                                   \
		for (int64_t i = 0; i < M * N; i++)                                                         \
			C[i] = store(c[i], st, m);                                                              \
		free(a);                                                                                    \
		free(b);                                                                                    \
		free(c);                                                                                    \
	}

MM_KERNEL(mm_kernel_f32, float)
MM_KERNEL(mm_kernel_f64, double)
MM2D(mm_f32, mm_kernel_f32, float)
MM2D(mm_f64, mm_kernel_f64, double)

/* One M x N x K product through the hook: f32 copies in, f32 out, rounded
 * to `st` on store like mm_f32. */
static bool
mm_hook(const SimMatmulHook *h, const double *A, const double *B, double *C, int64_t M, int64_t N, int64_t K,
        DType st, SimMode m, char *why, size_t n)
{
	float *a = xmalloc((size_t)(M * K + 1) * sizeof *a), *b = xmalloc((size_t)(K * N + 1) * sizeof *b);
	float *c = xmalloc((size_t)(M * N + 1) * sizeof *c);
	bool ok;
	for (int64_t i = 0; i < M * K; i++)
		a[i] = (float)A[i];
	for (int64_t i = 0; i < K * N; i++)
		b[i] = (float)B[i];
	ok = h->mm(h->ctx, a, b, c, M, N, K, why, n);
	for (int64_t i = 0; ok && i < M * N; i++)
		C[i] = store(c[i], st, m);
	free(a);
	free(b);
	free(c);
	return ok;
}

bool
sim_matmul_hooked(const Tensor *a, const Tensor *b, Tensor *out, DType st, SimMode m, const SimMatmulHook *h,
                  char *why, size_t n)
{
	int r = out->rank, nb = r - 2;
	int64_t M = out->dim[r - 2], N = out->dim[r - 1], K = a->dim[a->rank - 1];
	int64_t sa[LIM_RANK] = {0}, sb[LIM_RANK] = {0}, idx[LIM_RANK] = {0}, nbatch = 1;
	Tensor ba = *a, bb = *b;
	ASSERT(b->dim[b->rank - 2] == K);
	/* strides over the batch dims only, in units of whole matrices */
	ba.rank -= 2;
	bb.rank -= 2;
	bstrides(&ba, nb, out->dim, sa);
	bstrides(&bb, nb, out->dim, sb);
	for (int i = 0; i < nb; i++)
		nbatch *= out->dim[i];
	for (int64_t bi = 0; bi < nbatch; bi++) {
		int64_t oa = 0, ob = 0;
		const double *A, *B;
		double *C = out->v + bi * M * N;
		for (int d = 0; d < nb; d++) {
			oa += idx[d] * sa[d];
			ob += idx[d] * sb[d];
		}
		A = a->v + oa * M * K;
		B = b->v + ob * K * N;
		if (h && m == SIM_GPU) {
			if (!mm_hook(h, A, B, C, M, N, K, st, m, why, n))
				return false;
		} else if (m == SIM_GPU) {
			mm_f32(A, B, C, M, N, K, st, m);
		} else {
			mm_f64(A, B, C, M, N, K, st, m);
		}
		for (int d = nb - 1; d >= 0; d--) {
			if (++idx[d] < out->dim[d])
				break;
			idx[d] = 0;
		}
	}
	return true;
}

void
sim_matmul(const Tensor *a, const Tensor *b, Tensor *out, DType st, SimMode m)
{
	sim_matmul_hooked(a, b, out, st, m, NULL, NULL, 0);
}

/* ---- reductions over one axis (kept with size 1) ---- */

void
sim_reduce(Op op, const Tensor *a, int axis, int64_t divisor, Tensor *out, DType st, SimMode m)
{
	int64_t outer = 1, len = a->dim[axis], inner = 1;
	for (int i = 0; i < axis; i++)
		outer *= a->dim[i];
	for (int i = axis + 1; i < a->rank; i++)
		inner *= a->dim[i];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			const double *p = a->v + o * len * inner + in;
			double accd = op == OP_AMAX ? -INFINITY : op == OP_AMIN ? INFINITY : 0;
			float accf = (float)accd;
			for (int64_t k = 0; k < len; k++) {
				double x = p[k * inner];
				if (m == SIM_F64 || a->dt == DT_I32)
					accd = op == OP_AMAX ? fmax(accd, x) : op == OP_AMIN ? fmin(accd, x) : accd + x;
				else
					accf = op == OP_AMAX ? fmaxf(accf, (float)x) : op == OP_AMIN ? fminf(accf, (float)x) : accf + (float)x;
			}
			double r = (m == SIM_F64 || a->dt == DT_I32) ? accd : accf;
			if (op == OP_MEAN)
				r = m == SIM_F64 ? r / (double)divisor : (double)((float)r / (float)divisor);
			out->v[o * inner + in] = store(r, st, m);
		}
}

/* ---- data movement ---- */

/* A new tensor of a's dtype and shape with its last two dims swapped. */
static Tensor
swapped_shape(const Tensor *a)
{
	int64_t dim[LIM_RANK];
	int R = a->rank;
	memcpy(dim, a->dim, sizeof dim);
	dim[R - 2] = a->dim[R - 1];
	dim[R - 1] = a->dim[R - 2];
	return sim_tensor(a->dt, R, dim);
}

Tensor
sim_transposed(const Tensor *a)
{
	Tensor t = swapped_shape(a);
	sim_transpose(a, a->rank - 2, a->rank - 1, &t);
	return t;
}

/* w's bytes under transpose(w)'s shape: what a kernel that ignores
 * trans_b reads (the break matmul-bt), wrong but always in bounds. */
Tensor
sim_as_transposed_shape(const Tensor *a)
{
	Tensor t = swapped_shape(a);
	memcpy(t.v, a->v, (size_t)a->n * sizeof *t.v);
	return t;
}

void
sim_transpose(const Tensor *a, int d1, int d2, Tensor *out)
{
	int64_t ist[LIM_RANK], s = 1, idx[LIM_RANK] = {0};
	for (int i = a->rank - 1; i >= 0; i--) {
		ist[i] = s;
		s *= a->dim[i];
	}
	int64_t t = ist[d1];
	ist[d1] = ist[d2];
	ist[d2] = t;
	for (int64_t o = 0; o < out->n; o++) {
		int64_t off = 0;
		for (int i = 0; i < out->rank; i++)
			off += idx[i] * ist[i];
		out->v[o] = a->v[off];
		for (int i = out->rank - 1; i >= 0; i--) {
			if (++idx[i] < out->dim[i])
				break;
			idx[i] = 0;
		}
	}
}

/* out[..., i, j] = j <= i + k ? a[..., i, j] : -inf. */
void
sim_causal(const Tensor *a, int64_t k, Tensor *out)
{
	int64_t R = a->dim[a->rank - 2], C = a->dim[a->rank - 1];
	for (int64_t o = 0; o < out->n; o++) {
		int64_t j = o % C, i = o / C % R;
		out->v[o] = j <= i + k ? a->v[o] : -INFINITY;
	}
}

void
sim_copy_flat(const Tensor *a, Tensor *out)
{
	ASSERT(a->n == out->n);
	memcpy(out->v, a->v, (size_t)a->n * sizeof *a->v);
}

/* A tensor seen as [outer, dim[axis], inner]. */
static void
split3(const Tensor *t, int axis, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < axis; i++)
		*outer *= t->dim[i];
	for (int i = axis + 1; i < t->rank; i++)
		*inner *= t->dim[i];
}

void
sim_slice(const Tensor *a, int axis, int64_t start, Tensor *out)
{
	int64_t outer, inner, la = a->dim[axis], lo = out->dim[axis];
	split3(a, axis, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		memcpy(out->v + o * lo * inner, a->v + (o * la + start) * inner, (size_t)(lo * inner) * sizeof(double));
}

void
sim_concat(const Tensor *const *parts, int n, int axis, Tensor *out)
{
	int64_t outer, inner, lo = out->dim[axis], at = 0;
	split3(out, axis, &outer, &inner);
	for (int p = 0; p < n; p++) {
		int64_t lp = parts[p]->dim[axis];
		for (int64_t o = 0; o < outer; o++)
			memcpy(out->v + (o * lo + at) * inner, parts[p]->v + o * lp * inner, (size_t)(lp * inner) * sizeof(double));
		at += lp;
	}
}

void
sim_block(const Tensor *g, int axis, int r, int nblocks, Tensor *out)
{
	int64_t bs = g->dim[axis] / nblocks;
	sim_slice(g, axis, r * bs, out);
}

void
sim_place_block(Tensor *g, int axis, int r, int nblocks, const Tensor *b)
{
	int64_t outer, inner, lg = g->dim[axis], bs = lg / nblocks;
	split3(g, axis, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		memcpy(g->v + (o * lg + r * bs) * inner, b->v + o * bs * inner, (size_t)(bs * inner) * sizeof(double));
}

void
sim_pack(const Tensor *t, int axis, int nblocks, double *buf)
{
	int64_t outer, inner, lg = t->dim[axis], bs = lg / nblocks;
	split3(t, axis, &outer, &inner);
	for (int p = 0; p < nblocks; p++)
		for (int64_t o = 0; o < outer; o++)
			memcpy(buf + (p * outer + o) * bs * inner, t->v + (o * lg + p * bs) * inner,
			       (size_t)(bs * inner) * sizeof(double));
}

void
sim_unpack(const double *buf, int axis, int nblocks, Tensor *t)
{
	int64_t outer, inner, lg = t->dim[axis], bs = lg / nblocks;
	split3(t, axis, &outer, &inner);
	for (int p = 0; p < nblocks; p++)
		for (int64_t o = 0; o < outer; o++)
			memcpy(t->v + (o * lg + p * bs) * inner, buf + (p * outer + o) * bs * inner,
			       (size_t)(bs * inner) * sizeof(double));
}

/* Copies between a tensor and one box of it: rows of the last dim at a time. */
static void
box_copy(Tensor *t, const int64_t *lo, Tensor *sub, bool out)
{
	int r = t->rank;
	int64_t idx[LIM_RANK] = {0}, len = r ? sub->dim[r - 1] : 1, rows = len ? sub->n / len : 0;
	for (int64_t row = 0; row < rows; row++) {
		int64_t at[LIM_RANK];
		for (int d = 0; d < r; d++)
			at[d] = lo[d] + idx[d];
		double *tp = t->v + (r ? sim_offset(t, at) : 0), *sp = sub->v + row * len;
		if (out)
			memcpy(sp, tp, (size_t)len * sizeof *sp);
		else
			memcpy(tp, sp, (size_t)len * sizeof *sp);
		for (int d = r - 2; d >= 0; d--) {
			if (++idx[d] < sub->dim[d])
				break;
			idx[d] = 0;
		}
	}
}

Tensor
sim_sub(const Tensor *t, const int64_t *lo, const int64_t *hi)
{
	int64_t dim[LIM_RANK];
	for (int d = 0; d < t->rank; d++)
		dim[d] = hi[d] - lo[d];
	Tensor s = sim_tensor(t->dt, t->rank, dim);
	box_copy((Tensor *)t, lo, &s, true);
	return s;
}

void
sim_put(Tensor *t, const int64_t *lo, const Tensor *sub)
{
	box_copy(t, lo, (Tensor *)sub, false);
}

/* ---- attention regions (ir/attn.c) as the fused kernel runs them ---- */

static int64_t
batch_count(const Tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank - 2; d++)
		n *= t->dim[d];
	return n;
}

/* bias element offset of score (b, i, j): strides along the scores'
 * dims, 0 where the bias is stretched or has no such dim. */
static void
bias_strides(const Tensor *bias, int R, const int64_t *sdim, int64_t *st)
{
	int64_t acc = 1;
	for (int d = R - 1; d >= 0; d--) {
		int k = d - (R - bias->rank);
		st[d] = k < 0 || bias->dim[k] == 1 ? 0 : acc;
		if (k >= 0)
			acc *= bias->dim[k];
	}
	(void)sdim;
}

void
sim_attention(const Attn *a, const Tensor *q, const Tensor *k, const Tensor *v, const Tensor *bias, Tensor *o,
              DType ost, Tensor *m, Tensor *l, bool norescale)
{
	int R = q->rank;
	int64_t B = batch_count(q), Sq = q->dim[R - 2], D = q->dim[R - 1], Sk = k->dim[R - 2], Dv = v->dim[R - 1];
	int64_t sdim[LIM_RANK], bst[LIM_RANK] = {0};
	float *s = xmalloc((size_t)SIM_ATTN_TILE * sizeof *s), *acc = xmalloc((size_t)(Dv + 1) * sizeof *acc);
	for (int d = 0; d < R; d++)
		sdim[d] = d < R - 2 ? q->dim[d] : d == R - 2 ? Sq : Sk;
	if (bias)
		bias_strides(bias, R, sdim, bst);
	for (int64_t b = 0; b < B; b++)
		for (int64_t i = 0; i < Sq; i++) {
			const double *qi = q->v + (b * Sq + i) * D;
			float mrun = -INFINITY, lrun = 0;
			int64_t boff = 0, rest = b;
			for (int d = R - 3; d >= 0; d--) { /* the bias's offset of this row */
				boff += rest % sdim[d] * bst[d];
				rest /= sdim[d];
			}
			boff += i * bst[R - 2];
			for (int64_t c = 0; c < Dv; c++)
				acc[c] = 0;
			for (int64_t j0 = 0; j0 < Sk; j0 += SIM_ATTN_TILE) {
				int64_t n = Sk - j0 < SIM_ATTN_TILE ? Sk - j0 : SIM_ATTN_TILE;
				float mt = -INFINITY, alpha;
				if (a->causal && j0 > i + a->diag)
					break; /* this tile and every later one is masked: skipped */
				for (int64_t j = 0; j < n; j++) {
					const double *kj = k->v + (b * Sk + j0 + j) * D;
					float dot = 0;
					for (int64_t d = 0; d < D; d++)
						dot += (float)qi[d] * (float)kj[d];
					s[j] = dot * (float)a->scale;
					if (bias)
						s[j] += (float)bias->v[boff + (j0 + j) * bst[R - 1]];
					if (a->causal && j0 + j > i + a->diag)
						s[j] = -INFINITY;
					if (s[j] > mt)
						mt = s[j];
				}
				if (mt == -INFINITY)
					continue; /* nothing seen in this tile */
				if (mt < mrun)
					mt = mrun;
				alpha = mrun == -INFINITY ? 0 : norescale ? 1 : expf(mrun - mt);
				lrun *= alpha;
				for (int64_t c = 0; c < Dv; c++)
					acc[c] *= alpha;
				for (int64_t j = 0; j < n; j++) {
					float p = expf(s[j] - mt);
					float pr = (float)sim_round(a->pdt, p); /* as p meets v in the second matmul */
					const double *vj = v->v + (b * Sk + j0 + j) * Dv;
					lrun += p;
					for (int64_t c = 0; c < Dv; c++)
						acc[c] += pr * (float)vj[c];
				}
				mrun = mt;
			}
			for (int64_t c = 0; c < Dv; c++) {
				/* a row that sees no key: NaN, as the softmax written out gives */
				double x = lrun == 0 ? NAN : a->normed ? acc[c] / lrun : acc[c];
				o->v[(b * Sq + i) * Dv + c] = sim_round(ost, x);
			}
			if (m)
				m->v[b * Sq + i] = mrun;
			if (l)
				l->v[b * Sq + i] = lrun == 0 ? NAN : lrun;
		}
	free(s);
	free(acc);
}
