/* tests/gpu/shared_ctx.c -- one context, the launchers of two compiled
 * files that both hold an op named f (the stdlib's rmsnorm at two row
 * counts, built by tests/gpu/shared-ctx-check): each call's output against
 * the host's rmsnorm.  While an op's state was keyed by its name alone,
 * the second file's f found the first's state and launched from its block
 * lists (the rows past the first's never written).
 *   shared_ctx A.so MA B.so MB N */
#include "../../runtime/syncrt.h"
#include "bf16.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*OpFn)(syn_ctx *, const syn_tensor *, const syn_tensor *, syn_tensor *);

static int
fail(syn_ctx *c, const char *what, int r)
{
	printf("FAIL %s: %s: %s\n", what, syn_status_name(r), c ? syn_error(c) : "");
	return 1;
}

/* Op f of `so` on M x N rows; 0 when its output matches the host's. */
static int
run(syn_ctx *c, OpFn f, const char *so, int64_t M, int64_t N, unsigned seed)
{
	size_t n = (size_t)(M * N);
	uint16_t *x = malloc(n * 2), *g = malloc((size_t)N * 2), *y = malloc(n * 2);
	void *dx, *dg, *dy;
	double worst = 0;
	int r;
	srand(seed);
	for (size_t i = 0; i < n; i++)
		x[i] = f2bf((float)rand() / RAND_MAX * 4 - 2);
	for (int64_t j = 0; j < N; j++)
		g[j] = f2bf(0.5f + (float)rand() / RAND_MAX);
	if ((r = syn_alloc(c, n * 2, &dx)) || (r = syn_alloc(c, (size_t)N * 2, &dg)) || (r = syn_alloc(c, n * 2, &dy)) ||
	    (r = syn_upload(c, dx, x, n * 2)) || (r = syn_upload(c, dg, g, (size_t)N * 2)))
		return fail(c, "set-up", r);
	{
		syn_tensor tx = {dx, CD_BF16, 2, {M, N}, {N, 1}}, tg = {dg, CD_BF16, 1, {N}, {1}},
		           ty = {dy, CD_BF16, 2, {M, N}, {N, 1}};
		if ((r = f(c, &tx, &tg, &ty)) || (r = syn_sync(c)) || (r = syn_download(c, y, dy, n * 2)))
			return fail(c, so, r);
	}
	for (int64_t i = 0; i < M; i++) {
		double ss = 0;
		for (int64_t j = 0; j < N; j++)
			ss += (double)bf2f(x[i * N + j]) * bf2f(x[i * N + j]);
		double inv = 1 / sqrt(ss / (double)N + 1e-5);
		for (int64_t j = 0; j < N; j++) {
			double want = bf2f(x[i * N + j]) * inv * bf2f(g[j]), got = bf2f(y[i * N + j]);
			double e = fabs(got - want) / (fabs(want) + 1e-2);
			if (!(e <= worst))
				worst = e; /* NaN too */
		}
	}
	syn_free(c, dx), syn_free(c, dg), syn_free(c, dy);
	free(x), free(g), free(y);
	printf("%s %s: %lld x %lld rows, worst relative error %.2e\n", worst < 2e-2 ? "PASS" : "FAIL", so, (long long)M,
	       (long long)N, worst);
	return !(worst < 2e-2);
}

int
main(int argc, char **argv)
{
	syn_ctx *c;
	OpFn fn[2];
	int64_t M[2], N;
	int r, bad = 0;
	if (argc != 6) {
		fprintf(stderr, "usage: shared_ctx A.so MA B.so MB N\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		void *h = dlopen(argv[1 + 2 * i], RTLD_NOW | RTLD_LOCAL);
		if (!h || !(fn[i] = (OpFn)(uintptr_t)dlsym(h, "syn_f"))) {
			fprintf(stderr, "shared_ctx: %s: %s\n", argv[1 + 2 * i], dlerror());
			return 2;
		}
		M[i] = atoll(argv[2 + 2 * i]);
	}
	N = atoll(argv[5]);
	if ((r = syn_init_local(1, &c, NULL)))
		return fail(NULL, "syn_init_local", r);
	for (int round = 0; round < 2; round++) /* each file's op twice, in turns */
		for (int i = 0; i < 2; i++)
			bad += run(c, fn[i], argv[1 + 2 * i], M[i], N, (unsigned)(1 + 2 * round + i));
	syn_finalize(c);
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad != 0;
}
