/* runtime/rt_module.c -- modules: an image (cubin, else PTX through the
 * JIT, with its log on failure) loaded once per context, its kernels found
 * and their local memory reserved at set-up, persistent grids sized. */
#define RT_CUDA 1
#include "rt.h"

#include <stdlib.h>
#include <string.h>

static const syn_image tools = {"libsyncrt tools", rt_tool_ptx, NULL, 0};

int
rt_module_load(syn_ctx *c, const syn_image *img, CUmodule *m)
{
	char elog[16384];
	CUjit_option opt[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE,
	                       CU_JIT_GENERATE_LINE_INFO};
	void *val[4] = {elog, (void *)(uintptr_t)sizeof elog, (void *)(uintptr_t)0, (void *)(uintptr_t)0};
	const char *cubin_note = "";
	CUresult r;
	if (img->cubin && img->cubin_size) {
		if (cuModuleLoadData(m, img->cubin) == CUDA_SUCCESS)
			return SYN_OK;
		cubin_note = " (its cubin did not load either)";
	}
	if (!img->ptx)
		return rt_seterr(c, SYN_EARG, "rank %d: module %s has neither PTX nor a loadable cubin", c->rank,
		                 img->name);
	elog[0] = 0;
	r = cuModuleLoadDataEx(m, img->ptx, 4, opt, val);
	if (r == CUDA_SUCCESS)
		return SYN_OK;
	{
		const char *name = NULL;
		cuGetErrorName(r, &name);
		return rt_seterr(c, SYN_ECUDA, "rank %d: JIT of module %s failed%s: %s\n--- JIT log ---\n%s", c->rank,
		                 img->name, cubin_note, name ? name : "?", elog[0] ? elog : "(empty)");
	}
}

static RtModule *
module_for(syn_ctx *c, const syn_image *img)
{
	RtModule *v;
	CUmodule m;
	for (int i = 0; i < c->nmods; i++)
		if (c->mods[i].img == img)
			return &c->mods[i];
	if (rt_module_load(c, img, &m))
		return NULL;
	if (!(v = realloc(c->mods, sizeof *v * (size_t)(c->nmods + 1)))) {
		cuModuleUnload(m);
		rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
		return NULL;
	}
	c->mods = v;
	memset(&v[c->nmods], 0, sizeof *v);
	v[c->nmods].img = img;
	v[c->nmods].mod = m;
	return &v[c->nmods++];
}

/* A module loaded now and kept with the context's (rt_modules_free unloads
 * it), or why not in `why` -- a backend's own kernels that a context can do
 * without: their failure refuses that backend's work, not the context. */
int
rt_module_try(syn_ctx *c, const syn_image *img, char *why, size_t n)
{
	RtModule *v;
	CUmodule m;
	CUresult r = CUDA_ERROR_INVALID_IMAGE;
	const char *name = NULL;
	for (int i = 0; i < c->nmods; i++)
		if (c->mods[i].img == img)
			return SYN_OK;
	if (img->cubin && img->cubin_size)
		r = cuModuleLoadData(&m, img->cubin);
	if (r != CUDA_SUCCESS && img->ptx && img->ptx[0])
		r = cuModuleLoadData(&m, img->ptx);
	if (r != CUDA_SUCCESS) {
		cuGetErrorName(r, &name);
		rt_fmt(why, n, "neither its cubin nor its PTX loaded (%s)", name ? name : "?");
		return SYN_EUNSUPPORTED;
	}
	if (!(v = realloc(c->mods, sizeof *v * (size_t)(c->nmods + 1)))) {
		cuModuleUnload(m);
		rt_fmt(why, n, "out of host memory");
		return SYN_ENOMEM;
	}
	c->mods = v;
	memset(&v[c->nmods], 0, sizeof *v);
	v[c->nmods].img = img;
	v[c->nmods].mod = m;
	c->nmods++;
	return SYN_OK;
}

/* The context's per-thread local memory grown now, while the op is being
 * set up, to what this kernel needs: grown at a launch instead, the driver
 * waits for the device to go idle first, and beside a kernel spinning for
 * a collective that is a hang (process_defaults in rt_world.c). */
static int
reserve_stack(syn_ctx *c, CUfunction f, const char *entry)
{
	int local = 0;
	size_t have = 0;
	char what[96];
	if (cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f) != CUDA_SUCCESS || local <= 0 ||
	    cuCtxGetLimit(&have, CU_LIMIT_STACK_SIZE) != CUDA_SUCCESS || (size_t)local <= have)
		return SYN_OK;
	rt_fmt(what, sizeof what, "cuCtxSetLimit(STACK_SIZE, %d) for kernel %s", local, entry);
	return rt_cu(c, cuCtxSetLimit(CU_LIMIT_STACK_SIZE, (size_t)local), what);
}

int
syn_kernel_get(syn_ctx *c, const syn_image *img, const char *entry, syn_kernel **out)
{
	RtModule *m;
	syn_kernel *k, **v;
	CUfunction f;
	int r;
	*out = NULL;
	if ((r = rt_entry(c)))
		return r;
	if (!(m = module_for(c, img)))
		return c->failed ? c->failed : SYN_EARG;
	for (int i = 0; i < m->nk; i++)
		if (!strcmp(m->k[i]->name, entry)) {
			*out = m->k[i];
			return SYN_OK;
		}
	if (cuModuleGetFunction(&f, m->mod, entry) != CUDA_SUCCESS)
		return rt_seterr(c, SYN_EARG, "rank %d: module %s has no kernel '%s'", c->rank, img->name, entry);
	if ((r = reserve_stack(c, f, entry)))
		return r;
	k = calloc(1, sizeof *k);
	v = realloc(m->k, sizeof *v * (size_t)(m->nk + 1));
	if (!k || !v) {
		free(k);
		return rt_seterr(c, SYN_ENOMEM, "rank %d: out of host memory", c->rank);
	}
	m->k = v;
	k->fn = f;
	rt_fmt(k->name, sizeof k->name, "%s", entry);
	m->k[m->nk++] = k;
	*out = k;
	return SYN_OK;
}

int
syn_grid_persistent(syn_ctx *c, syn_kernel *k, unsigned block, unsigned smem, unsigned *grid)
{
	int per = 0, r;
	*grid = 0;
	if ((r = rt_entry(c)))
		return r;
	if (smem > 48 * 1024 && smem > k->smem_set) {
		if ((r = rt_cu(c, cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
		               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")))
			return r;
		k->smem_set = smem;
	}
	if (k->occ_per > 0 && k->occ_block == block && k->occ_smem == smem)
		per = k->occ_per; /* asked every call: the answer does not change */
	else if ((r = rt_cu(c, cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, k->fn, (int)block, smem),
	                    "cuOccupancyMaxActiveBlocksPerMultiprocessor")))
		return r;
	k->occ_block = block, k->occ_smem = smem, k->occ_per = per;
	if (c->share > 1 && per > 1) /* ranks on one GPU: one CTA per SM of this rank's share (share_device) */
		per = 1;
	if (per <= 0 || c->free_sms >= c->sms)
		return rt_seterr(c, SYN_EARG, "rank %d: kernel %s with %u threads and %u B shared memory: %d blocks "
		                 "per SM on %d SMs with %d kept free: no persistent grid",
		                 c->rank, k->name, block, smem, per, c->sms, c->free_sms);
	*grid = (unsigned)per * (unsigned)(c->sms - c->free_sms);
	return SYN_OK;
}

int
syn_grid_cluster(syn_ctx *c, syn_kernel *k, unsigned block, unsigned smem, unsigned cluster, unsigned *grid)
{
	CUlaunchConfig cfg;
	CUlaunchAttribute at;
	int n = 0, r;
	unsigned most;
	if ((r = rt_entry(c)))
		return r;
	if (!cluster || cluster > 8 || *grid < 1)
		return rt_seterr(c, SYN_EARG, "rank %d: kernel %s: a cluster of %u CTAs, grid %u", c->rank, k->name, cluster,
		                 *grid);
	if (k->occ_clusters > 0 && k->occ_csize == cluster && k->occ_cblock == block && k->occ_csmem == smem)
		n = k->occ_clusters;
	else {
		memset(&cfg, 0, sizeof cfg);
		memset(&at, 0, sizeof at);
		at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		at.value.clusterDim.x = cluster;
		at.value.clusterDim.y = at.value.clusterDim.z = 1;
		cfg.gridDimX = cluster * 64;
		cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = block;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.sharedMemBytes = smem;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
		if ((r = rt_cu(c, cuOccupancyMaxActiveClusters(&n, k->fn, &cfg), "cuOccupancyMaxActiveClusters")))
			return r;
		if (n <= 0)
			return rt_seterr(c, SYN_EARG, "rank %d: kernel %s with %u threads and %u B shared memory: no cluster "
			                 "of %u CTAs fits on this GPU", c->rank, k->name, block, smem, cluster);
		k->occ_clusters = n, k->occ_csize = cluster, k->occ_cblock = block, k->occ_csmem = smem;
	}
	/* this context's share of the whole GPU's resident clusters */
	most = (unsigned)((int64_t)n * (c->sms - c->free_sms) / (c->sms > 0 ? c->sms : 1)) * cluster;
	if (*grid > most)
		*grid = most;
	*grid -= *grid % cluster;
	if (*grid < cluster)
		*grid = cluster;
	return SYN_OK;
}

const syn_image *
syn_builtin_image(void)
{
	return &tools;
}

void
rt_modules_free(syn_ctx *c)
{
	for (int i = 0; i < c->nmods; i++) {
		cuModuleUnload(c->mods[i].mod);
		for (int k = 0; k < c->mods[i].nk; k++)
			free(c->mods[i].k[k]);
		free(c->mods[i].k);
	}
	free(c->mods);
	if (c->rtmod)
		cuModuleUnload(c->rtmod);
}
