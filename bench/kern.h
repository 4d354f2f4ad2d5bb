/* bench/kern.h -- the three device helpers of bench/baseline.c, built by nvcc
 * from bench/kern.cu and called from C.  None of them is timed. */
#ifndef BENCH_KERN_H
#define BENCH_KERN_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __CUDACC__
#define KERN_HD __host__ __device__
#else
#define KERN_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The value at (row, col) of a global rows x gcols bf16 matrix named by seed:
 * uniform in [-1, 1), 24 random bits rounded to bf16 (round to nearest even).
 * kern_fill writes the block [row0, row0 + rows) x [col0, col0 + cols) of that
 * matrix into p (leading dimension ld), so each rank fills its own shard of
 * one global matrix and the CPU reference (bench_value) sees the same numbers. */
cudaError_t kern_fill(uint16_t *p, int64_t rows, int64_t cols, int64_t ld, int64_t row0, int64_t col0, int64_t gcols,
                      uint64_t seed, cudaStream_t s);

/* out[0] += sum (a - b)^2, out[1] += sum b^2, out[2] += count of non-finite a
 * (float64 accumulation; out must be zeroed first). */
cudaError_t kern_diff(const uint16_t *a, const uint16_t *b, int64_t n, double *out, cudaStream_t s);

#ifdef __cplusplus
}
#endif

/* The same value on the host, bit for bit (bench_value in baseline.c uses it). */
static inline KERN_HD uint64_t
kern_mix(uint64_t seed, uint64_t idx)
{
	uint64_t x = idx * 0x9E3779B97F4A7C15ull + (seed + 1) * 0xD1B54A32D192ED03ull;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

/* 24 random bits as a float in [-1, 1) (exact), then bf16 bits by round to
 * nearest even; the float's bits come from integer arithmetic, not a cast, so
 * host and device agree without depending on either compiler's rounding. */
static inline KERN_HD uint16_t
kern_bf16_bits(uint64_t h)
{
	int32_t v = (int32_t)(h >> 40) - (1 << 23); /* [-2^23, 2^23) */
	uint32_t sign = v < 0 ? 0x80000000u : 0, mag = (uint32_t)(v < 0 ? -v : v), bits, e = 0;
	if (mag == 0)
		return 0;
	while (!(mag & 0x800000u)) { /* normalise to 24 bits: value = mag * 2^-23 * 2^-e */
		mag <<= 1;
		e++;
	}
	bits = sign | ((uint32_t)(127 - e) << 23) | (mag & 0x7FFFFFu);
	return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

#endif
