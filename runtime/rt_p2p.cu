// runtime/rt_p2p.cu -- the p2p backend's kernels: a chunk's data moved by
// loads from the peers' symmetric buffers (NVLink, or the same GPU when two
// ranks share one) and stores into this rank's own buffer.  By default the
// flag handshakes around them are the launcher's stream operations
// (runtime/rt_p2p.c), so these kernels never wait; with kflags (rt_p2p.h)
// they do the handshakes themselves, one launch a chunk, their blocks no
// more than the SMs kernels leave the comm backend.  Compiled to PTX and a
// cubin by nvcc at build time (runtime/runtime.mk), loaded by each context
// when it is set up.
//
// Reductions accumulate in f32 (i32 in i32, wrapping) in source order and
// round once; 16-byte loads where every address and the count allow.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "rt_p2p.h"

enum { DT_F32, DT_F16, DT_BF16, DT_I32 }; // CommDType
enum { RED_SUM, RED_MAX, RED_MIN };      // CommRed

template <typename T> struct Acc { typedef float type; };
template <> struct Acc<int32_t> { typedef int32_t type; };

__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ int32_t to_acc(int32_t v) { return v; }

template <typename T> __device__ __forceinline__ T from_acc(typename Acc<T>::type v);
template <> __device__ __forceinline__ float from_acc<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ int32_t from_acc<int32_t>(int32_t v) { return v; }

template <typename A> __device__ __forceinline__ A combine(int red, A a, A b)
{
	return red == RED_MAX ? (a > b ? a : b) : red == RED_MIN ? (a < b ? a : b) : a + b;
}

// Elements [lo, hi) of the reduction, one at a time (the unaligned tail).
template <typename T>
__device__ void reduce_scalar(const RtP2pArgs &a, unsigned long long lo, unsigned long long hi)
{
	typedef typename Acc<T>::type A;
	T *dst = (T *)a.dst[0];
	for (unsigned long long i = lo + blockIdx.x * blockDim.x + threadIdx.x; i < hi;
	     i += (unsigned long long)gridDim.x * blockDim.x) {
		A acc = to_acc(((const T *)a.src[0])[i]);
		for (int j = 1; j < a.n; j++)
			acc = combine<A>(a.red, acc, to_acc(((const T *)a.src[j])[i]));
		dst[i] = from_acc<T>(acc);
	}
}

// 16 bytes at a time: word w holds elements [w * V, w * V + V).
template <typename T>
__device__ void reduce_vec(const RtP2pArgs &a, unsigned long long words)
{
	typedef typename Acc<T>::type A;
	const int V = 16 / sizeof(T);
	uint4 *dst = (uint4 *)a.dst[0];
	for (unsigned long long w = blockIdx.x * blockDim.x + threadIdx.x; w < words;
	     w += (unsigned long long)gridDim.x * blockDim.x) {
		A acc[V];
		uint4 in = ((const uint4 *)a.src[0])[w];
		const T *e = (const T *)&in;
#pragma unroll
		for (int k = 0; k < V; k++)
			acc[k] = to_acc(e[k]);
		for (int j = 1; j < a.n; j++) {
			in = ((const uint4 *)a.src[j])[w];
#pragma unroll
			for (int k = 0; k < V; k++)
				acc[k] = combine<A>(a.red, acc[k], to_acc(e[k]));
		}
		uint4 out;
		T *o = (T *)&out;
#pragma unroll
		for (int k = 0; k < V; k++)
			o[k] = from_acc<T>(acc[k]);
		dst[w] = out;
	}
}

template <typename T>
__device__ void reduce_all(const RtP2pArgs &a)
{
	const int V = 16 / sizeof(T);
	unsigned long long or_addr = a.dst[0];
	for (int j = 0; j < a.n; j++)
		or_addr |= a.src[j];
	unsigned long long words = (or_addr & 15) ? 0 : a.count / V;
	reduce_vec<T>(a, words);
	reduce_scalar<T>(a, words * V, a.count);
}

// ---- the in-kernel handshake (kflags) ----

__device__ __forceinline__ unsigned long long ld_acquire(unsigned long long p)
{
	unsigned long long v;
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

__device__ __forceinline__ void st_release(unsigned long long p, unsigned long long v)
{
	asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long now_ns()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// The first timeout of the context wins the error word, as the generated
// kernels' do (runtime/syncrt.h SYN_ERRW_*).
__device__ void report(const RtP2pArgs &a, unsigned id)
{
	unsigned *w = (unsigned *)a.errw;
	if (atomicCAS(&w[0], 0u, 1u) == 0u) {
		w[1] = id;
		w[2] = blockIdx.x;
		w[3] = RT_P2P_SITE;
		__threadfence_system();
	}
}

__device__ bool wait_geq(const RtP2pArgs &a, unsigned long long addr, unsigned id)
{
	unsigned long long t0 = now_ns();
	while (ld_acquire(addr) < a.seq) {
		if (now_ns() - t0 > a.timeout_ns) {
			report(a, id);
			return false;
		}
		__nanosleep(100);
	}
	return true;
}

// Block 0 says this rank's send is ready; every block waits until its
// sources' are.  False: a source never came (the error word says which).
__device__ bool arrive(const RtP2pArgs &a)
{
	__shared__ int ok;
	if (threadIdx.x == 0)
		ok = 1;
	if (blockIdx.x == 0 && threadIdx.x < a.npart)
		st_release(a.raise_arrive[threadIdx.x], a.seq);
	__syncthreads();
	if (threadIdx.x < a.npart && !wait_geq(a, a.wait_arrive[threadIdx.x], a.wait_arrive_id[threadIdx.x]))
		ok = 0;
	__syncthreads();
	return ok;
}

// The last block done tells the sources their sends are free, then waits
// until this rank's readers are done with its own.
__device__ void depart(const RtP2pArgs &a)
{
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	__threadfence();
	if (atomicAdd((unsigned long long *)a.counter, 1ull) + 1 != a.target)
		return;
	__threadfence_system();
	for (int i = 0; i < a.npart; i++)
		st_release(a.raise_done[i], a.seq);
	for (int i = 0; i < a.npart; i++)
		if (!wait_geq(a, a.wait_done[i], a.wait_done_id[i]))
			return;
}

extern "C" __global__ void __launch_bounds__(512) rt_p2p_reduce(const RtP2pArgs a)
{
	if (a.kflags && !arrive(a))
		return;
	switch (a.dt) {
	case DT_F32: reduce_all<float>(a); break;
	case DT_F16: reduce_all<__half>(a); break;
	case DT_BF16: reduce_all<__nv_bfloat16>(a); break;
	default: reduce_all<int32_t>(a); break;
	}
	if (a.kflags)
		depart(a);
}

// Piece j of n: bytes bytes from src[j] to dst[j], 16 at a time where both
// ends allow, the pieces' words spread over the whole grid.
extern "C" __global__ void __launch_bounds__(512) rt_p2p_copy(const RtP2pArgs a)
{
	const unsigned es = a.dt == DT_F16 || a.dt == DT_BF16 ? 2 : 4;
	const unsigned long long bytes = a.count * es;
	const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
	const unsigned long long t0 = blockIdx.x * blockDim.x + threadIdx.x;
	if (a.kflags && !arrive(a))
		return;
	for (int j = 0; j < a.n; j++) {
		const char *s = (const char *)a.src[j];
		char *d = (char *)a.dst[j];
		unsigned long long words = ((a.src[j] | a.dst[j]) & 15) ? 0 : bytes / 16, i;
		for (i = t0; i < words; i += stride)
			((uint4 *)d)[i] = ((const uint4 *)s)[i];
		for (i = words * 16 / es + t0; i < a.count; i += stride) {
			if (es == 2)
				((uint16_t *)d)[i] = ((const uint16_t *)s)[i];
			else
				((uint32_t *)d)[i] = ((const uint32_t *)s)[i];
		}
	}
	if (a.kflags)
		depart(a);
}
