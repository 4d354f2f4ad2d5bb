#!/usr/bin/env python3
"""bench/experiments/ncu_ops.py -- syncc's kernel beside torch.compile's (and
eager's) for ops of bench/p1.py, under Nsight Compute: why is one slower?

    ncu --profile-from-start off --section SpeedOfLight ... \
        python3 bench/experiments/ncu_ops.py rmsnorm_8192x8192 [...]

Each named p1 case is built, its outputs checked against the reference,
warmed (torch.compile's first call compiles), then called twice per
implementation between cudaProfilerStart and Stop: ncu profiles only
those launches.  Without ncu it prints each implementation's kernel names
and per-call time (events, 20 calls) and nothing else."""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("p1", os.path.join(ROOT, "bench", "p1.py"))
p1 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p1)  # imports syncc before torch
torch = p1.torch


def main(names):
    cases = p1.cases()
    for name in names:
        case = cases[name]
        mod, ins, ref, _ = p1.open_case(name, case)
        cf = torch.compile(case["eager"], dynamic=False)
        impls = {"syncc": lambda: mod.f(*ins), "compile": lambda: cf(*ins), "eager": lambda: case["eager"](*ins)}
        for k, fn in impls.items():
            out = fn()
            torch.cuda.synchronize()
            print("%s %s: rel err %.2e" % (name, k, p1.rel_err(out, ref)), flush=True)
        times = p1.time_batches(impls, 5, 20)[0]  # (medians, host us)
        print("%s ms per call: %s" % (name, " ".join("%s %.4f" % kv for kv in times.items())), flush=True)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for k, fn in impls.items():
            torch.cuda.nvtx.range_push("%s:%s" % (name, k))
            fn()
            fn()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        torch.cuda.cudart().cudaProfilerStop()
        mod.close()


if __name__ == "__main__":
    main(sys.argv[1:])
