/* comm/backends.h -- every communication backend a plan can choose, once
 * (STYLE 4 and 17).  Each row makes the plan's BE_NAME and libsyncrt's
 * SYN_NAME (comm/comm.h, runtime/syncrt.h), the name profiles, samples and
 * --comm-backend use, and libsyncrt's constructor rt_name_new (runtime/rt.h,
 * runtime/rt_ctx.c).  The first row is the default: plans start on it, and a
 * collective another backend cannot run falls back to it, so it must be able
 * to do everything.  The simulator runs every backend's chunks through its
 * own `sim` backend (sim/comm.c).  docs/internals.md lists what a new row
 * still needs written by hand.
 *
 * B(NAME, name, can, ctas, maxranks, smsnote)
 *   can      what it can do beyond moving data inside a node (CC_* of
 *            comm/comm.h; comm/colls.h says what each collective needs)
 *   ctas     runs CTAs of its own on the SMs kernels leave it (libsyncrt's
 *            free SMs), so a kernel beside it takes one CTA per SM at most;
 *            0: its work needs SMs too (the driver's copies), and a kernel
 *            beside it leaves the profile's `commsms` of it (codegen/host.c)
 *   maxranks the most ranks in the group of one collective it runs, 0: no
 *            limit of its own.  The search never picks it past that
 *            (comm_backend_can), --comm-backend NAME past it is refused
 *            (tools/driver.c), and libsyncrt and the simulator refuse a
 *            chunk over a larger group.  P2P: its kernels take the peers'
 *            addresses as arguments, RT_P2P_MAXPEERS of them, an array
 *            bound made from this column (runtime/rt_p2p.h)
 *   smsnote  what a measured `commsms NAME N` is, in a calibrated profile
 *
 * NCCL: maxCTAs and no CTA clusters (runtime/rt_nccl.c); CE: the copy
 * engine over peer access (runtime/rt_ce.c); P2P: libsyncrt's own kernels
 * reading the peers' symmetric buffers, one launch a chunk between flag
 * handshakes (runtime/rt_p2p.c), the only backend that runs two ranks on
 * one GPU (NCCL refuses a GPU twice). */
B(NCCL, nccl, CC_REDUCE | CC_NODES | CC_CAPTURE, 1, 0,
  "libsyncrt's setting: SMs kept free for NCCL (SYNC_FREE_SMS, by default its maxCTAs)")
B(CE,   ce,   0,                    0, 0,
  "SMs a kernel leaves the copy engine's copies beside it")
B(P2P,  p2p,  CC_REDUCE,            1, 8,
  "SMs kept free for the p2p kernels beside a compute kernel (SYNC_FREE_SMS)")
