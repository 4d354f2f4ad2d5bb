"""syncc.torch.overlap on one GPU (P = 1, a one-process torch.distributed
world on nccl): a tensor-parallel MLP block written with functional
collectives (rmsnorm -> up -> gelu -> down -> all_reduce -> residual, and
its sequence-parallel form: rmsnorm -> all_gather -> up -> gelu -> down
-> reduce_scatter -> residual) compiled three ways and compared:

  * eager PyTorch (the reference, and f32 of the same math beside it);
  * torch.compile(backend=syncc.torch.overlap): the pass must replace the
    collective pairs (at world size 1 the collectives are identities but
    stay in the graph, so the pass matches them) and the result must
    match eager;
  * torch.compile() (Inductor) without syncc.

Also a DTensor (torch.distributed.tensor.parallel) block at world 1, which
emits no collective at all: the report must say nothing was matched.
Times: the median of ITERS calls of each, CUDA events.  Writes
$OUT/overlap_check.json; exit 0 only if every check passed.
tests/gpu/gpu-check-overlap starts it."""
import syncc  # first: it sets CUDA_DEVICE_MAX_CONNECTIONS before torch makes the CUDA context

import functools
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fcol
import torch.nn as nn
import torch.nn.functional as F

OUT = os.environ.get("OUT", "build/gpu-out")
ITERS = int(os.environ.get("ITERS", "50"))
M, H, FF = (int(x) for x in os.environ.get("SHAPE", "2048,2048,8192").split(","))
TOL = 3e-2


class Block(nn.Module):
    def __init__(self, sp):
        super().__init__()
        self.sp = sp
        self.norm = nn.RMSNorm(H, eps=1e-5)
        self.up, self.down = nn.Linear(H, FF), nn.Linear(FF, H)

    def forward(self, x):
        g = dist.group.WORLD
        if self.sp:
            xn = fcol.all_gather_tensor(self.norm(x), 0, g)
            h = F.gelu(self.up(xn), approximate="tanh")
            return fcol.reduce_scatter_tensor(F.linear(h, self.down.weight), "sum", 0, g) + x
        h = F.gelu(self.up(self.norm(x)), approximate="tanh")
        return fcol.all_reduce(F.linear(h, self.down.weight, self.down.bias / dist.get_world_size()), "sum", g) + x


def rel_err(got, want):
    got, want = got.float(), want.float()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def median_ms(fn):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(ITERS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return round(ts[len(ts) // 2], 4)


def one(sp, res):
    label = "sp" if sp else "tp"
    r = res.setdefault(label, {})
    torch.manual_seed(0)
    m = Block(sp).cuda().to(torch.bfloat16)
    x = torch.randn(M, H, device="cuda").to(torch.bfloat16)
    with torch.no_grad():
        want = m(x)
        ref32 = Block(sp).cuda()
        ref32.load_state_dict({k: v.float() for k, v in m.state_dict().items()})
        r["eager bf16 vs f32"] = rel_err(want, ref32(x.float()))
        torch._dynamo.reset()
        t0 = time.time()
        ov = torch.compile(m, backend=functools.partial(syncc.torch.overlap, assume_replicated=True), fullgraph=True)
        got = ov(x)
        torch.cuda.synchronize()
        r["overlap compile s"] = round(time.time() - t0, 1)
        rep = syncc.torch.last_report
        r["report"] = rep.lines()
        r["replaced"] = len(rep.replaced)
        r["syn"] = {mm.name: mm.text() for mm in rep.replaced}
        r["overlap vs eager"] = rel_err(got, want)
        torch._dynamo.reset()
        ind = torch.compile(m, fullgraph=True)
        gi = ind(x)
        r["inductor vs eager"] = rel_err(gi, want)
        r["ms eager"] = median_ms(lambda: m(x))
        r["ms overlap"] = median_ms(lambda: ov(x))
        r["ms inductor"] = median_ms(lambda: ind(x))
    ok = r["replaced"] == (2 if sp else 1) and r["overlap vs eager"] <= TOL and r["inductor vs eager"] <= TOL
    r["ok"] = bool(ok)
    print("%s: %s" % (label, json.dumps({k: v for k, v in r.items() if k != "syn"})), flush=True)
    return ok


def dtensor(res):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    class DBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.up, self.down = nn.RMSNorm(H, eps=1e-5), nn.Linear(H, FF), nn.Linear(FF, H)

        def forward(self, x):
            return self.down(F.gelu(self.up(self.norm(x)), approximate="tanh")) + x
    mesh = init_device_mesh("cuda", (1,))
    m = parallelize_module(DBlock().cuda().to(torch.bfloat16), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    x = torch.randn(M, H, device="cuda").to(torch.bfloat16)
    torch._dynamo.reset()
    with torch.no_grad():
        want = m(x)
        got = torch.compile(m, backend=syncc.torch.overlap, fullgraph=True)(x)
    rep = syncc.torch.last_report
    r = {"replaced": len(rep.replaced), "report": rep.lines(), "vs eager": rel_err(got, want)}
    r["ok"] = bool(r["replaced"] == 0 and r["vs eager"] <= 1e-2)
    res["dtensor world 1 (no collective in its graph)"] = r
    print("dtensor: %s" % json.dumps(r), flush=True)
    return r["ok"]


def main():
    os.makedirs(OUT, exist_ok=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "shape M,H,F": [M, H, FF]}
    ok = True
    for sp in (False, True):
        try:
            ok &= one(sp, res)
        except Exception:
            res["sp" if sp else "tp"] = {"error": traceback.format_exc()}
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            ok = False
    try:
        ok &= dtensor(res)
    except Exception:
        res["dtensor"] = {"error": traceback.format_exc()}
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        ok = False
    res["ok"] = bool(ok)
    with open(os.path.join(OUT, "overlap_check.json"), "w") as f:
        json.dump(res, f, indent=1)
    dist.destroy_process_group()
    print("overlap_check: %s" % ("ok" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
