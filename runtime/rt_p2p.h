/* runtime/rt_p2p.h -- the arguments of the p2p backend's kernels
 * (runtime/rt_p2p.cu), shared by the kernels and their launcher
 * (runtime/rt_p2p.c): one layout, passed by value as the only parameter.
 * Plain C, no CUDA types. */
#ifndef SYNCRT_P2P_H
#define SYNCRT_P2P_H

/* Sources of a reduction, pieces of a copy: the p2p row's maxranks
 * (comm/backends.h), read here by a B() of its own so that this header,
 * which nvcc compiles too, needs nothing else of comm/. */
enum {
#define B(NAME, name, can, ctas, maxranks, smsnote) RT_MAXRANKS_##NAME = (maxranks),
#include "../comm/backends.h"
#undef B
	RT_P2P_MAXPEERS = RT_MAXRANKS_P2P
};

/* rt_p2p_reduce: dst[0][i] = red over j < n of src[j][i], i < count.
 * rt_p2p_copy:   dst[j][i] = src[j][i] for j < n, i < count.
 * Addresses are device addresses of this context: a peer's buffer as it
 * is mapped here.  dt is a CommDType, red a CommRed (comm/comm.h).
 *
 * kflags: the kernel does the chunk's handshakes itself (SYNC_P2P_KFLAGS=1)
 * instead of the launcher's stream operations around it: block 0 raises
 * `seq` at raise_arrive[i] (st.release.sys), every block waits until each
 * wait_arrive[i] holds seq (ld.acquire.sys, %globaltimer deadline
 * timeout_ns: the error word errw, SYN_ERRW_*, names wait_arrive_id[i]),
 * moves its share, and counts itself at `counter`; the block that brings
 * it to `target` raises raise_done[i] and waits for wait_done[i]. */
typedef struct RtP2pArgs {
	unsigned long long src[RT_P2P_MAXPEERS];
	unsigned long long dst[RT_P2P_MAXPEERS];
	unsigned long long count;
	int n, dt, red, npart;
	unsigned long long raise_arrive[RT_P2P_MAXPEERS], raise_done[RT_P2P_MAXPEERS];
	unsigned long long wait_arrive[RT_P2P_MAXPEERS], wait_done[RT_P2P_MAXPEERS];
	unsigned long long counter, target, seq, errw, timeout_ns;
	unsigned wait_arrive_id[RT_P2P_MAXPEERS], wait_done_id[RT_P2P_MAXPEERS];
	int kflags, pad;
} RtP2pArgs;

enum { RT_P2P_SITE = 0x7032 }; /* SYN_ERRW_SITE of a p2p kernel's wait ("p2") */

#endif
