/* runtime/rt_ref.c -- the GPU reference matmul syncrun checks big outputs
 * with (syn_ref_matmul): plain device buffers, the tool kernel rt_ref_matmul
 * on the ctl stream, waited for.  It never runs inside an op. */
#define RT_CUDA 1
#include "rt.h"

enum { REF_BLOCK = 256 };

static int
ref_copy_in(syn_ctx *c, CUdeviceptr *d, const float *h, size_t n)
{
	int r;
	if ((r = rt_cu(c, cuMemAlloc(d, n * sizeof *h + 4), "cuMemAlloc (reference)")))
		return r;
	return rt_put(c, *d, h, n * sizeof *h, "cuMemcpyHtoD (reference)"); /* landed before the ctl stream reads it */
}

int
syn_ref_matmul(syn_ctx *c, const float *a, const float *b, float *out, int64_t M, int64_t N, int64_t K)
{
	CUdeviceptr da = 0, db = 0, dc = 0;
	syn_kernel *fn;
	uint64_t m = (uint64_t)M, n = (uint64_t)N, k = (uint64_t)K, blocks = (m * n + REF_BLOCK - 1) / REF_BLOCK;
	void *args[6] = {&da, &db, &dc, &m, &n, &k};
	int r;
	if ((r = rt_entry(c)))
		return r;
	if (M <= 0 || N <= 0 || K < 0 || blocks > 0x7fffffffu)
		return rt_seterr(c, SYN_EARG, "rank %d: syn_ref_matmul: shape %lld x %lld x %lld out of range", c->rank,
		                 (long long)M, (long long)N, (long long)K);
	cuCtxSetCurrent(c->cu);
	if (!(r = syn_kernel_get(c, syn_builtin_image(), "rt_ref_matmul", &fn)) &&
	    !(r = ref_copy_in(c, &da, a, (size_t)(M * K))) && !(r = ref_copy_in(c, &db, b, (size_t)(K * N))) &&
	    !(r = rt_cu(c, cuMemAlloc(&dc, (size_t)(M * N) * sizeof *out), "cuMemAlloc (reference)")) &&
	    !(r = rt_cu(c, cuLaunchKernel(fn->fn, (unsigned)blocks, 1, 1, REF_BLOCK, 1, 1, 0, c->ctl, args, NULL),
	                "cuLaunchKernel(rt_ref_matmul)")) &&
	    !(r = rt_cu(c, cuStreamSynchronize(c->ctl), "cuStreamSynchronize (reference)")))
		r = rt_cu(c, cuMemcpyDtoH(out, dc, (size_t)(M * N) * sizeof *out), "cuMemcpyDtoH (reference)");
	if (da)
		cuMemFree(da);
	if (db)
		cuMemFree(db);
	if (dc)
		cuMemFree(dc);
	return r;
}
