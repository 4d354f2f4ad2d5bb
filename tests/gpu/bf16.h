/* tests/gpu/bf16.h -- bf16 <-> f32 on the host side of the GPU test
 * programs: to bf16 rounding to nearest even, as cvt.rn.bf16.f32 does. */
#ifndef TESTS_GPU_BF16_H
#define TESTS_GPU_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t
f2bf(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

static inline float
bf2f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

#endif
