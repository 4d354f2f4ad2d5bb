// bench/kern.cu -- the device helpers of bench/baseline.c (bench/kern.h says
// what each computes).  Built by nvcc; baseline.c itself is plain C11.
#include <math.h>

#include "kern.h"

__global__ void
fill_bf16(uint16_t *p, int64_t rows, int64_t cols, int64_t ld, int64_t row0, int64_t col0, int64_t gcols, uint64_t seed)
{
	int64_t n = rows * cols;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = i / cols, c = i % cols;
		uint64_t g = (uint64_t)(row0 + r) * (uint64_t)gcols + (uint64_t)(col0 + c);
		p[r * ld + c] = kern_bf16_bits(kern_mix(seed, g));
	}
}

__device__ static float
bf16_float(uint16_t b)
{
	return __uint_as_float((uint32_t)b << 16);
}

// One block's partial sums go to out with three double atomics.
__global__ void
diff_bf16(const uint16_t *a, const uint16_t *b, int64_t n, double *out)
{
	__shared__ double s[3][256];
	double e = 0, r = 0, bad = 0;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
		float x = bf16_float(a[i]), y = bf16_float(b[i]);
		if (!isfinite(x)) {
			bad += 1;
			continue;
		}
		double d = (double)x - (double)y;
		e += d * d;
		r += (double)y * y;
	}
	s[0][threadIdx.x] = e;
	s[1][threadIdx.x] = r;
	s[2][threadIdx.x] = bad;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if ((int)threadIdx.x < w)
			for (int k = 0; k < 3; k++)
				s[k][threadIdx.x] += s[k][threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		for (int k = 0; k < 3; k++)
			atomicAdd(&out[k], s[k][0]);
}

extern "C" cudaError_t
kern_fill(uint16_t *p, int64_t rows, int64_t cols, int64_t ld, int64_t row0, int64_t col0, int64_t gcols,
          uint64_t seed, cudaStream_t s)
{
	fill_bf16<<<1024, 256, 0, s>>>(p, rows, cols, ld, row0, col0, gcols, seed);
	return cudaGetLastError();
}

extern "C" cudaError_t
kern_diff(const uint16_t *a, const uint16_t *b, int64_t n, double *out, cudaStream_t s)
{
	diff_bf16<<<1024, 256, 0, s>>>(a, b, n, out);
	return cudaGetLastError();
}
