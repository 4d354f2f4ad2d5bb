#!/usr/bin/env python3
"""tests/gpu/log_growth.py -- a process that calls an op for long keeps its
host memory flat: libsyncrt logs every call (an op record, an item), and a
caller that keeps ahead of the GPU never lets the log empty.  Calls the
stdlib's rmsnorm at 4096 x 8192 (a kernel longer than a call's host time,
so the GPU stays behind) CALLS times with no synchronise between, and
prints the process's resident memory before and after, per call.

    python3 tests/gpu/log_growth.py [--calls N]"""
import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import syncc  # noqa: E402
import torch  # noqa: E402


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--max-bytes-per-call", type=float, default=4.0)
    args = ap.parse_args()
    path = os.path.join(tempfile.mkdtemp(prefix="log_growth"), "rms.syn")
    with open(path, "w") as f:
        f.write("use nn;\nparam M = 64, N = 64;\nop f(x: bf16[M, N], g: bf16[N]) -> bf16[M, N] {\n"
                "    return rmsnorm(x, g);\n}\n")
    mod = syncc.load(path, M=4096, N=8192)
    x = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(20000):  # the allocator's blocks and the log's arrays at their working size
        mod.f(x, g)
    torch.cuda.synchronize()
    r0, t0 = rss_kb(), time.time()
    for _ in range(args.calls):
        mod.f(x, g)
    torch.cuda.synchronize()
    r1, dt = rss_kb(), time.time() - t0
    per = (r1 - r0) * 1024.0 / args.calls
    ok = per <= args.max_bytes_per_call
    print("RESULT log growth: %s  resident %d -> %d kB over %d calls (%.1f bytes a call; %.1f us a call)"
          % ("pass" if ok else "FAIL", r0, r1, args.calls, per, dt * 1e6 / args.calls), flush=True)
    mod.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
