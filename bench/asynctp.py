"""bench/asynctp.py -- PyTorch async-TP (symmetric-memory fused ops) on the
shapes of bench/shapes, measured like bench/baseline.c (docs/bench.md).

    python3 -m torch.distributed.run --standalone --nproc_per_node=2 \\
        bench/asynctp.py --shapes bench/shapes --json OUT.jsonl [--warmup 10] [--iters 50]

Systems, per shape (layouts as in shared/anchors/tp_overlap.py):
  torch_serial  torch.matmul and the torch.distributed (NCCL) collective on one
                stream: the reference every other output is checked against
  asynctp       AG: torch.ops.symm_mem.fused_all_gather_matmul
                RS: torch.ops.symm_mem.fused_matmul_reduce_scatter
                AR: PyTorch has no fused matmul + all_reduce; async-TP's answer
                    (sequence parallelism) is fused_matmul_reduce_scatter, then
                    all_gather_into_tensor of the reduced rows, which is measured
What the installed PyTorch offers is probed first and written to the meta row;
where an op is not registered under torch.ops.symm_mem but the module still
has its Python implementation, that is called and the row says so.

Method: inputs uniform in [-1, 1) as bf16 from a seeded generator, fresh per
shape; every output is compared with torch_serial's (‖a-b‖/‖b‖ in float64 on
the GPU, non-finite values counted, max over ranks) before it is timed, and a
mismatch is reported, not timed; before that check the caching allocator is
handed a NaN-filled block of the output's size, so an unwritten output shows
(best effort: the allocator decides which block the op gets).  Warm-up, then
--iters runs, each after a barrier, timed with CUDA events on every rank; an
iteration's time is the max over ranks; the row gives median, p10, p90, min, max.
"""
import argparse
import datetime
import json
import math
import os
import sys
import traceback
import warnings

# Never NVLink multicast (.library/device/KINDS.md): set before torch loads.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

TOL = 1e-2
OPS = ["fused_all_gather_matmul", "fused_matmul_reduce_scatter", "fused_all_gather_scaled_matmul",
       "fused_scaled_matmul_reduce_scatter", "_async_input_mm", "two_shot_all_reduce_", "one_shot_all_reduce"]
PYFUNCS = {"fused_all_gather_matmul": "_fused_all_gather_matmul",
           "fused_matmul_reduce_scatter": "_fused_matmul_reduce_scatter"}


def read_shapes(path):
    shapes = []
    for line in open(path, encoding="utf-8"):
        f = line.split("#", 1)[0].split()
        if not f:
            continue
        if len(f) != 5 or f[1] not in ("AR", "RS", "AG"):
            raise SystemExit("asynctp: bad line in %s: %s" % (path, line.strip()))
        shapes.append({"shape": f[0], "kind": f[1], "M": int(f[2]), "N": int(f[3]), "K": int(f[4])})
    return shapes


def probe():
    """What this PyTorch offers for async-TP, and the callables to use."""
    info = {"torch": torch.__version__, "ops": {}, "module": None, "calls": {}}
    symm = None
    try:
        import torch.distributed._symmetric_memory as symm  # registers torch.ops.symm_mem
        info["module"] = "torch.distributed._symmetric_memory"
    except Exception as e:  # noqa: BLE001
        info["module_error"] = repr(e)[:300]
    for name in OPS:
        try:
            getattr(torch.ops.symm_mem, name)
            info["ops"][name] = True
        except Exception as e:  # noqa: BLE001
            info["ops"][name] = repr(e)[:200]
    calls = {}
    for op, fn in PYFUNCS.items():
        if info["ops"].get(op) is True:
            calls[op] = (getattr(torch.ops.symm_mem, op), "torch.ops.symm_mem." + op)
        elif symm is not None and hasattr(symm, fn):
            calls[op] = (getattr(symm, fn), "torch.distributed._symmetric_memory.%s (op not registered)" % fn)
    info["calls"] = {k: v[1] for k, v in calls.items()}
    return symm, info, calls


def enable_group(symm, group_name, info):
    """Older PyTorch needs it; newer ones deprecate it as a no-op."""
    if symm is None or not hasattr(symm, "enable_symm_mem_for_group"):
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symm.enable_symm_mem_for_group(group_name)
        info["enable_symm_mem_for_group"] = "called"
    except Exception as e:  # noqa: BLE001
        info["enable_symm_mem_for_group"] = repr(e)[:200]


def uniform(shape, gen, dev):
    return (torch.rand(shape, generator=gen, device=dev, dtype=torch.float32) * 2 - 1).to(torch.bfloat16)


def stats(v):
    v = sorted(v)
    n = len(v)
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return {"ms": med, "p10": v[round(0.1 * (n - 1))], "p90": v[round(0.9 * (n - 1))], "min": v[0], "max": v[-1],
            "n": n}


def bench(fn, a):
    for _ in range(a.warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(a.iters):
        dist.barrier(device_ids=[torch.cuda.current_device()])
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    t = torch.tensor(ts, dtype=torch.float64, device="cuda")
    every = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(every, t)
    return stats(torch.stack(every).max(0).values.tolist())


def rel_err(outs, refs):
    """Worst over the pairs and over ranks: (rel. error, non-finite count).
    Every rank reaches the all_reduce, whatever it found."""
    err, bad = 0.0, 0.0
    for a, b in zip(outs, refs):
        if a.shape != b.shape:
            err = float("inf")
            continue
        nb = float((~torch.isfinite(a)).sum().item())
        bad += nb
        if nb == 0:
            b64 = b.double()
            err = max(err, ((a.double() - b64).norm() / b64.norm()).item())
    t = torch.tensor([err, bad], dtype=torch.float64, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t[0].item(), t[1].item()


def poison_cache(like):
    """Leave NaN-filled blocks of the outputs' sizes in the caching allocator."""
    blocks = [torch.full_like(t, float("nan")) for t in like]
    del blocks


class Shape:
    """One shape's inputs on this rank, the torch reference and the systems."""

    def __init__(self, sh, idx, a, calls, group_name):
        self.sh, self.calls, self.gn = sh, calls, group_name
        P, r = dist.get_world_size(), dist.get_rank()
        M, N, K = sh["M"], sh["N"], sh["K"]
        self.dev = torch.device("cuda", torch.cuda.current_device())
        gen = torch.Generator(device=self.dev)
        gen.manual_seed(a.seed * 1000003 + idx * 101 + r)
        if sh["kind"] == "AG":  # column-parallel: X_r [M/P, K], W_r [K, N/P]
            self.x = uniform((M // P, K), gen, self.dev)
            self.w = uniform((K, N // P), gen, self.dev)
            self.xg = torch.empty(M, K, dtype=torch.bfloat16, device=self.dev)
            self.c = torch.empty(M, N // P, dtype=torch.bfloat16, device=self.dev)
        else:  # row-parallel: A_r [M, K/P], W_r [K/P, N]
            self.x = uniform((M, K // P), gen, self.dev)
            self.w = uniform((K // P, N), gen, self.dev)
            self.c = torch.empty(M, N, dtype=torch.bfloat16, device=self.dev)
            self.r = torch.empty(M // P, N, dtype=torch.bfloat16, device=self.dev)
            self.full = torch.empty(M, N, dtype=torch.bfloat16, device=self.dev)

    def poison(self):
        """NaN into every buffer a system may write."""
        for t in (getattr(self, n, None) for n in ("xg", "c", "r", "full")):
            if t is not None:
                t.fill_(float("nan"))

    def serial(self):
        k = self.sh["kind"]
        if k == "AG":
            dist.all_gather_into_tensor(self.xg, self.x)
            torch.matmul(self.xg, self.w, out=self.c)
            return [self.xg, self.c]
        torch.matmul(self.x, self.w, out=self.c)
        if k == "AR":
            dist.all_reduce(self.c)
            return [self.c]
        dist.reduce_scatter_tensor(self.r, self.c)
        return [self.r]

    def asynctp(self):
        """The fused path; None (and why) where this PyTorch has none."""
        k = self.sh["kind"]
        if k == "AG":
            fn = self.calls.get("fused_all_gather_matmul")
            if fn is None:
                return None
            return lambda: self._ag(fn[0])
        fn = self.calls.get("fused_matmul_reduce_scatter")
        if fn is None:
            return None
        if k == "RS":
            return lambda: [fn[0](self.x, self.w, "sum", 0, self.gn)]
        return lambda: self._rs_ag(fn[0])

    def _ag(self, fn):
        xg, outs = fn(self.x, [self.w], 0, self.gn)
        return [xg, outs[0]]

    def _rs_ag(self, fn):
        rows = fn(self.x, self.w, "sum", 0, self.gn)
        dist.all_gather_into_tensor(self.full, rows)
        return [self.full]

    def note(self):
        k = self.sh["kind"]
        if k == "AG":
            return self.calls.get("fused_all_gather_matmul", (None, "none"))[1]
        how = self.calls.get("fused_matmul_reduce_scatter", (None, "none"))[1]
        return how if k == "RS" else how + " + all_gather_into_tensor (no fused matmul+all_reduce in PyTorch)"


def measure(name, fn, refs, a, out, keys, note, poison):
    """Poison, run and check once; time if it matched; check the last timed
    output again."""
    row = dict(keys, tp=dist.get_world_size(), system=name, impl="torch " + torch.__version__, note=note)
    got = None
    last = [None]

    def timed():
        last[0] = fn()

    def why(text):
        row["note"] = (note + "; " if note else "") + text

    try:
        poison()
        poison_cache(refs)
        outs = fn()
        torch.cuda.synchronize()
        err, bad = rel_err(outs, refs)
        del outs
        if err <= TOL and bad == 0:
            got = bench(timed, a)
            err, bad = rel_err(last[0], refs)
            if not (err <= TOL and bad == 0):
                why("matched once, mismatched after timing")
                got = None
        else:
            why("output mismatch (tolerance %g): not timed" % TOL)
    except Exception as e:  # noqa: BLE001  (the row says what failed)
        err, bad, got = float("nan"), 0.0, None
        why("error: " + repr(e)[:300])
        if dist.get_rank() == 0:
            traceback.print_exc()
    last[0] = None
    row.update({k: None for k in ("ms", "p10", "p90", "min", "max")})
    row.update(got or {"n": 0})
    row["checked"] = got is not None
    row["rel_err"] = err if (bad == 0 and math.isfinite(err)) else None
    row["nonfinite"] = bad
    emit(row, out)
    return row


def emit(row, out):
    if dist.get_rank() != 0:
        return
    out.write(json.dumps(row) + "\n")
    out.flush()
    ms = "%8.4f ms  [p10 %.4f  p90 %.4f]" % (row["ms"], row["p10"], row["p90"]) if row["checked"] else "%8s" % "-"
    print("%-12s M=%-6d %-13s %s  rel %s  %s %s" % (row["shape"], row["M"], row["system"], ms, row["rel_err"],
                                                  "ok" if row["checked"] else "MISMATCH", row["note"]), flush=True)


def run_shape(sh, idx, a, calls, gn, out):
    s = Shape(sh, idx, a, calls, gn)
    refs = [t.clone() for t in s.serial()]
    torch.cuda.synchronize()
    keys = dict((k, sh[k]) for k in ("shape", "kind", "M", "N", "K"))
    measure("torch_serial", s.serial, refs, a, out, keys, "torch.matmul + torch.distributed (NCCL)", s.poison)
    fn = s.asynctp()
    if fn is None:
        emit(dict(keys, tp=dist.get_world_size(), system="asynctp", impl="torch " + torch.__version__, ms=None,
                  p10=None, p90=None, min=None, max=None, n=0, checked=False, rel_err=None, nonfinite=0,
                  note="not available in this PyTorch: " + s.note()), out)
    else:
        measure("asynctp", fn, refs, a, out, keys, s.note(), s.poison)
    del s
    torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--seed", type=int, default=24301)
    p.add_argument("--timeout", type=int, default=300, help="seconds before a stuck collective fails")
    a = p.parse_args()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=a.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    symm, info, calls = probe()
    gn = dist.group.WORLD.group_name
    enable_group(symm, gn, info)
    info.update({"gpu": torch.cuda.get_device_name(), "world": world,
                 "nccl": ".".join(map(str, torch.cuda.nccl.version())), "warmup": a.warmup, "iters": a.iters,
                 "seed": a.seed, "tolerance": TOL, "process": "torchrun, one process per GPU"})
    out = open(a.json, "w") if rank == 0 else None
    if rank == 0:
        out.write(json.dumps({"meta": {"asynctp": info}}) + "\n")
        print("asynctp: probe " + json.dumps(info), flush=True)
    for idx, sh in enumerate(read_shapes(a.shapes)):
        if sh["M"] % world or sh["N"] % world or sh["K"] % world:
            continue
        run_shape(sh, idx, a, calls, gn, out)
    if out:
        out.close()
    dist.barrier(device_ids=[torch.cuda.current_device()])
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
