"""The syncc Python package on 2 GPUs, under torchrun (tests/gpu/gpu-check-torch
starts it): row_linear called from PyTorch at each size in SIZES, checked
against torch's f32 matmul of the same local pieces + all_reduce; the call
on a second stream and on an input a torch kernel just wrote; a call with
a bad shape must raise ArgumentError; then the median time of the syncc
call next to torch's bf16 matmul + all_reduce (CUDA events on the current
stream, one synchronised call at a time, the slowest rank's median).
Rank 0 writes $OUT/torch_check.json.  Exit 0 only if every check passed."""
import syncc  # first: it sets CUDA_DEVICE_MAX_CONNECTIONS before torch makes the CUDA context

import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.distributed as dist

OP = "examples/row_linear.syn"
TOL = 2e-2  # bf16 result of a bf16 matmul + bf16 all_reduce, relative to the f32 reference (the simulator's bound)


def nccl_version():
    """The NCCL serving the process (torch's and libsyncrt's: one libnccl.so.2)."""
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def rel_err(got, want):
    got, want = got.float(), want.float()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def median_ms(fn, iters, warmup=3):
    times = []
    for i in range(warmup + iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        if i >= warmup:
            times.append(a.elapsed_time(b))
    return statistics.median(times)


def slowest(x):
    box = [None] * dist.get_world_size()
    dist.all_gather_object(box, x)
    return max(box)


def one_size(n, rank, world, iters, log):
    res = {"size": n, "checks": {}}
    t0 = time.time()
    mod = syncc.load(OP, M=n, N=n, K=n)
    res["load_s"] = round(time.time() - t0, 2)
    dev = torch.device("cuda", torch.cuda.current_device())
    g = torch.Generator(device=dev)
    g.manual_seed(1000 + rank)
    kl = n // world
    # this rank's pieces of x: bf16[M, K] @split(1) and w: bf16[K, N] @split(0)
    x = torch.randn(n, kl, generator=g, device=dev).to(torch.bfloat16)
    w = (torch.randn(kl, n, generator=g, device=dev) / n ** 0.5).to(torch.bfloat16)

    ref = x.float() @ w.float()
    dist.all_reduce(ref)
    y = mod.row_linear(x, w)  # consumed below on the same stream, with no host sync in between
    res["checks"]["result vs f32 matmul + all_reduce"] = e = rel_err(y, ref)
    ok = e <= TOL
    base = x @ w
    dist.all_reduce(base)
    res["torch_bf16_rel_err"] = rel_err(base, ref)

    # an input a torch kernel has just written: the compute lane must wait for it
    y2 = mod.row_linear(x * 2, w)
    res["checks"]["input written just before (x * 2)"] = e = rel_err(y2, 2 * ref)
    ok = ok and e <= TOL
    # on a side stream
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y3 = mod.row_linear(x, w)
        e3 = rel_err(y3, ref)
    torch.cuda.current_stream().wait_stream(s)
    res["checks"]["on a side stream"] = e3
    ok = ok and e3 <= TOL

    # a bad shape: the whole x instead of this rank's piece
    try:
        mod.row_linear(torch.empty(n, n, dtype=torch.bfloat16, device=dev), w)
        res["bad_shape"] = "no error raised"
        ok = False
    except syncc.ArgumentError as err:
        res["bad_shape"] = str(err)
        ok = ok and "shape is" in str(err) and "expected" in str(err)
    try:
        mod.row_linear(x.float(), w)
        res["bad_dtype"] = "no error raised"
        ok = False
    except syncc.ArgumentError as err:
        res["bad_dtype"] = str(err)

    mod.sync()
    res["syncc_ms"] = slowest(median_ms(lambda: mod.row_linear(x, w), iters))

    def torch_path():
        z = x @ w
        dist.all_reduce(z)

    res["torch_ms"] = slowest(median_ms(torch_path, iters))
    res["matmul_only_ms"] = slowest(median_ms(lambda: x @ w, iters))
    fl = 2.0 * n * n * n / world
    res["syncc_tflops_per_rank"] = round(fl / (res["syncc_ms"] * 1e-3) / 1e12, 1)
    res["torch_tflops_per_rank"] = round(fl / (res["torch_ms"] * 1e-3) / 1e12, 1)
    mod.sync()
    mod.close()
    res["ok"] = bool(slowest(0 if ok else 1) == 0)
    log("size %d: %s" % (n, json.dumps(res)))
    return res


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.backends.cuda.matmul.allow_tf32 = False
    sizes = [int(s) for s in os.environ.get("SIZES", "4096,8192").split(",")]
    iters = int(os.environ.get("ITERS", "20"))
    out = os.environ.get("OUT", "build/gpu-out")

    def log(msg):
        print("[rank %d] %s" % (rank, msg), flush=True)

    report = {"torch": torch.__version__, "nccl_loaded": nccl_version(), "ranks": world, "iters": iters, "tolerance": TOL, "sizes": []}
    ok = True
    for n in sizes:
        try:
            r = one_size(n, rank, world, iters, log)
        except Exception as e:  # say what failed, then fail the run
            log("FAILED at size %d: %s\n%s" % (n, e, traceback.format_exc()))
            r = {"size": n, "ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        ok = ok and r["ok"]
        report["sizes"].append(r)
    report["ok"] = ok
    if rank == 0:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "torch_check.json"), "w") as f:
            json.dump(report, f, indent=1)
    log("ALL OK" if ok else "FAILED")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
