/* runtime/rt_info.c -- what the machine is, for keys that must change
 * when it does (syncrun --tune's cache: docs/scheduler.md). */
#define RT_CUDA 1
#include "rt.h"

#include <stdio.h>

/* "NVIDIA H200, driver 12080, NCCL 22803": the GPU of this rank, the
 * CUDA driver's version and the NCCL library's (as loaded, not as built). */
int
syn_device_info(const syn_ctx *c, char *buf, size_t n)
{
	char name[128] = "?";
	int drv = 0, nccl = 0;
	if (!c || !buf || !n)
		return SYN_EARG;
	if (cuDeviceGetName(name, (int)sizeof name, c->dev) != CUDA_SUCCESS || cuDriverGetVersion(&drv) != CUDA_SUCCESS)
		return SYN_ECUDA;
	if (ncclGetVersion(&nccl) != ncclSuccess)
		nccl = 0;
	snprintf(buf, n, "%s, driver %d, NCCL %d", name, drv, nccl);
	return SYN_OK;
}
