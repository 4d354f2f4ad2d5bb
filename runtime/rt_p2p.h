/* runtime/rt_p2p.h -- the arguments of the p2p backend's kernels
 * (runtime/rt_p2p.cu), shared by the kernels and their launcher
 * (runtime/rt_p2p.c): one layout, passed by value as the only parameter.
 * Plain C, no CUDA types. */
#ifndef SYNCRT_P2P_H
#define SYNCRT_P2P_H

enum { RT_P2P_MAXPEERS = 8 }; /* sources of a reduction, pieces of a copy */

/* rt_p2p_reduce: dst[0][i] = red over j < n of src[j][i], i < count.
 * rt_p2p_copy:   dst[j][i] = src[j][i] for j < n, i < count.
 * Addresses are device addresses of this context: a peer's buffer as it
 * is mapped here.  dt is a CommDType, red a CommRed (comm/comm.h). */
typedef struct RtP2pArgs {
	unsigned long long src[RT_P2P_MAXPEERS];
	unsigned long long dst[RT_P2P_MAXPEERS];
	unsigned long long count;
	int n, dt, red, pad;
} RtP2pArgs;

#endif
