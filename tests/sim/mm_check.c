/* tests/sim/mm_check.c -- the simulator's matmul (sim/tensor.c) against
 * the plain loop, bit for bit.  The oracle and the simulated ranks share
 * that kernel, so a kernel that is wrong the same way for both passes
 * every .syn test; this checks it on its own: shapes that leave every
 * tail of its register tiles (rows and columns past the last whole tile,
 * fewer rows or columns than one tile, K = 1), batch dims broadcast, both
 * modes (SIM_GPU: f32 copies, rounded to bf16 on store; SIM_F64).  Each
 * c[i][j] must be the k-order sum the plain loop makes.  Exits 0 when
 * every shape agreed; prints what it checked. */
#include "../../sim/sim.h"

#include <stdio.h>
#include <string.h>

/* The plain loop: the meaning the kernel must keep. */
static double
plain(const Tensor *a, const Tensor *b, int64_t ab, int64_t bb, int64_t i, int64_t j, SimMode m)
{
	int64_t M = a->dim[a->rank - 2], K = a->dim[a->rank - 1], N = b->dim[b->rank - 1];
	const double *A = a->v + ab * M * K, *B = b->v + bb * K * N;
	float sf = 0;
	double sd = 0;
	for (int64_t k = 0; k < K; k++) {
		sf += (float)A[i * K + k] * (float)B[k * N + j];
		sd += A[i * K + k] * B[k * N + j];
	}
	return m == SIM_F64 ? sd : sim_round(DT_BF16, sf);
}

static int
check(int64_t batch, int64_t M, int64_t N, int64_t K, bool broadcast_b, SimMode m, uint64_t *rng)
{
	int64_t da[3] = {batch, M, K}, db[3] = {batch, K, N}, dc[3] = {batch, M, N};
	Tensor a = sim_tensor(DT_BF16, 3, da),
	       b = broadcast_b ? sim_tensor(DT_BF16, 2, db + 1) : sim_tensor(DT_BF16, 3, db);
	Tensor c = sim_tensor(DT_BF16, 3, dc);
	int bad = 0;
	sim_fill_random(&a, rng);
	sim_fill_random(&b, rng);
	sim_matmul(&a, &b, &c, DT_BF16, m);
	for (int64_t bi = 0; bi < batch; bi++)
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double want = plain(&a, &b, bi, broadcast_b ? 0 : bi, i, j, m),
				       got = c.v[(bi * M + i) * N + j];
				if (memcmp(&want, &got, sizeof want) && bad++ < 3)
					printf("FAIL %lldx%lldx%lldx%lld%s %s: c[%lld][%lld][%lld] = %.17g, the plain "
					       "loop %.17g\n",
					       (long long)batch, (long long)M, (long long)N, (long long)K,
					       broadcast_b ? " (b broadcast)" : "", m == SIM_F64 ? "f64" : "f32",
					       (long long)bi, (long long)i, (long long)j, got, want);
			}
	sim_free(&a);
	sim_free(&b);
	sim_free(&c);
	return bad;
}

int
main(void)
{
	static const int64_t shapes[][4] = {
	    {1, 1, 1, 1},   {1, 3, 7, 5},     {1, 4, 8, 1},    {1, 4, 8, 33},   {1, 5, 9, 17},  {1, 7, 100, 33},
	    {1, 8, 16, 64}, {1, 13, 31, 129}, {1, 64, 64, 64}, {1, 65, 257, 3}, {2, 6, 10, 12}, {3, 9, 17, 40},
	};
	uint64_t rng = 42;
	int bad = 0, n = 0;
	for (size_t s = 0; s < NELEM(shapes); s++)
		for (int m = 0; m < 2; m++)
			for (int bc = 0; bc < 2; bc++, n++)
				bad += check(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], bc,
				             m ? SIM_F64 : SIM_GPU, &rng) > 0;
	printf("%d of %d matmuls bit for bit the plain loop's\n", n - bad, n);
	return bad ? 1 : 0;
}
