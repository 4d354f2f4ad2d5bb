/* runtime/rt_err.c -- names of statuses, dtypes, ops and lanes (tables, so a
 * message and the code agree), bounded formatting, the host clock. */
#include "rt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const status_names[] = {
	[0] = "ok",
	[-SYN_EARG] = "bad argument",
	[-SYN_EUNSUPPORTED] = "unsupported",
	[-SYN_EENV] = "bad launcher environment",
	[-SYN_EBOOT] = "bootstrap failed",
	[-SYN_ECUDA] = "CUDA error",
	[-SYN_ENCCL] = "NCCL error",
	[-SYN_ETIMEOUT] = "timeout",
	[-SYN_EKERNEL] = "kernel flag-wait timeout",
	[-SYN_EPEER] = "another rank failed",
	[-SYN_ENOMEM] = "out of memory",
	[-SYN_EFAILED] = "context failed earlier",
};

/* Same order as CommDType (and the compiler's DType). */
static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	[CD_F32] = {"f32", 4},
	[CD_F16] = {"f16", 2},
	[CD_BF16] = {"bf16", 2},
	[CD_I32] = {"i32", 4},
};

static const char *const red_names[] = {[CR_SUM] = "sum", [CR_MAX] = "max", [CR_MIN] = "min"};
static const char *const lane_names[] = {[SYN_COMPUTE] = "compute", [SYN_COMM] = "comm"};

const char *
syn_status_name(int status)
{
	if (status > 0 || -status >= (int)RT_NELEM(status_names))
		return "unknown status";
	return status_names[-status];
}

/* snprintf that never overruns and returns what it wrote. */
size_t
rt_vfmt(char *dst, size_t n, const char *fmt, va_list ap)
{
	int k;
	if (!n)
		return 0;
	k = vsnprintf(dst, n, fmt, ap);
	if (k < 0) {
		dst[0] = 0;
		return 0;
	}
	return (size_t)k < n ? (size_t)k : n - 1;
}

size_t
rt_fmt(char *dst, size_t n, const char *fmt, ...)
{
	va_list ap;
	size_t k;
	va_start(ap, fmt);
	k = rt_vfmt(dst, n, fmt, ap);
	va_end(ap);
	return k;
}

const char *
rt_dtype_name(CommDType dt)
{
	return (unsigned)dt < RT_NELEM(dtypes) ? dtypes[dt].name : "?dtype";
}

size_t
rt_dtype_size(CommDType dt)
{
	return (unsigned)dt < RT_NELEM(dtypes) ? dtypes[dt].size : 0;
}

const char *
rt_op_name(CommOp op)
{
	return (unsigned)op < CO_COUNT ? comm_colls[op].name : "?op";
}

const char *
rt_red_name(CommRed r)
{
	return (unsigned)r < RT_NELEM(red_names) ? red_names[r] : "?red";
}

const char *
rt_lane_name(int lane)
{
	return (unsigned)lane < RT_NELEM(lane_names) ? lane_names[lane] : "?lane";
}

const char *
rt_backend_name(int be)
{
	return (unsigned)be < BE_COUNT ? comm_backends[be].name : "?backend";
}

uint64_t
rt_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
