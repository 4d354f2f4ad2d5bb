#!/usr/bin/env python3
"""bench/p1.py -- syncc's ops called the way a user calls them, on one GPU.

Every op is compiled from a small .syn file, loaded through python/syncc and
called on torch tensors, beside PyTorch eager and torch.compile (Inductor) on
the same tensors.  Per op:

  * every implementation's output is checked against an f32 (or f64)
    reference before any time counts (fresh random inputs, the output
    poisoned with NaN first where the op allocates it);
  * back-to-back: the implementations take turns, REPS rounds of BATCH calls
    each timed with CUDA events (ms per call, median over rounds); BATCH
    is enough calls for about 1 ms of the slowest implementation (3 to
    200; --batch N fixes it), so the GPU's start at each batch is a small
    part of a batch's time (until 2026-12-07: 10 calls, or 3 for the big
    matmuls);
  * one call at a time: the device synchronised before each call, the call
    timed with events (its launch gap inside) and its host time with
    perf_counter (us from the call to its return: what a user's Python
    thread spends in it);
  * the floor: bytes that must move over the HBM bandwidth measured in the
    same run (a 1 GiB device copy), or FLOPs over the cuBLAS rate measured
    in the same run at 8192^3, whichever is larger.

  * kernel records (--records N): N back-to-back calls of each
    implementation under torch.profiler; every kernel's own duration from
    the CUPTI records (no launch gaps, no host), summed per call, and the
    kernels named -- the fair kernel-against-kernel comparison (cuBLAS's
    kernel beside syncc's, each at its own back-to-back pace).

  * a fused epilogue's plain matmul(s) -- x @ w on the same tensors,
    through syncc and torch -- take turns with it in the same rounds (and
    records), so "the epilogue against the plain matmul" compares two ops
    timed alike; --no-plain leaves them out.

    python3 bench/p1.py [--only NAME,...] [--skip-compile] [--ctypes] [--no-plain] [--records N] [--out DIR]

Writes DIR/p1.json (every number) and DIR/p1.md (the table); DIR defaults to
$OUT or build/p1-out.  bench/results/ keeps dated copies (docs/bench.md)."""
import argparse
import json
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import syncc  # noqa: E402  (before torch: python/syncc/__init__.py says why)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SYN_DIR = os.path.join(ROOT, "build", "p1")


# ---- the ops ----
# name -> (syn source, params, inputs(params) -> list, eager(*inputs), bytes, flops, tol)

def _mm_src(epi):
    heads = {
        "plain": ("x: bf16[M, K], w: bf16[K, N]", "x @ w"),
        "bias": ("x: bf16[M, K], w: bf16[K, N], b: bf16[N]", "x @ w + b"),
        "bias_gelu": ("x: bf16[M, K], w: bf16[K, N], b: bf16[N]", "gelu(x @ w + b)"),
        "residual": ("x: bf16[M, K], w: bf16[K, N], res: bf16[M, N]", "x @ w + res"),
        "silu_gated": ("x: bf16[M, K], wg: bf16[K, N], wu: bf16[K, N]", "silu(x @ wg) * (x @ wu)"),
        # nn.Linear's layout: w [N, K], read in place K-major (the tfold pass)
        "linear": ("x: bf16[M, K], w: bf16[N, K]", "x @ transpose(w)"),
        "linear_bias": ("x: bf16[M, K], w: bf16[N, K], b: bf16[N]", "x @ transpose(w) + b"),
    }
    args, body = heads[epi]
    return "use nn;\nparam M = 1024, N = 1024, K = 1024;\nop f(%s) -> bf16[M, N] {\n    return %s;\n}\n" % (args, body)


def _gelu(x):
    return F.gelu(x, approximate="tanh")


def _mm_case(epi, M, N, K):
    def inputs(dev):
        x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        w = torch.randn(K, N, device=dev, dtype=torch.bfloat16) / math.sqrt(K)
        if epi.startswith("linear"):
            w = torch.randn(N, K, device=dev, dtype=torch.bfloat16) / math.sqrt(K)
            return [x, w] + ([torch.randn(N, device=dev, dtype=torch.bfloat16)] if epi == "linear_bias" else [])
        if epi in ("bias", "bias_gelu"):
            return [x, w, torch.randn(N, device=dev, dtype=torch.bfloat16)]
        if epi == "residual":
            return [x, w, torch.randn(M, N, device=dev, dtype=torch.bfloat16)]
        if epi == "silu_gated":
            return [x, w, torch.randn(K, N, device=dev, dtype=torch.bfloat16) / math.sqrt(K)]
        return [x, w]

    eager = {
        "plain": lambda x, w: torch.matmul(x, w),
        "bias": lambda x, w, b: torch.addmm(b, x, w),
        "bias_gelu": lambda x, w, b: _gelu(torch.addmm(b, x, w)),
        "residual": lambda x, w, r: torch.addmm(r, x, w),
        "silu_gated": lambda x, wg, wu: F.silu(x @ wg) * (x @ wu),
        "linear": lambda x, w: F.linear(x, w),
        "linear_bias": lambda x, w, b: F.linear(x, w, b),
    }[epi]
    nmm = 2 if epi == "silu_gated" else 1
    byts = 2 * (M * K + nmm * K * N + M * N + (M * N if epi == "residual" else 0))
    case = dict(src=_mm_src(epi), params=dict(M=M, N=N, K=K), inputs=inputs, eager=eager, bytes=byts,
                flops=2.0 * M * N * K * nmm, tol=2e-2, kind="matmul" if epi in ("plain", "linear") else "epilogue")
    if case["kind"] == "epilogue":
        # the bar "a fused epilogue >= 0.97x the plain matmul" is a ratio of
        # two ops: timed in the same rounds (plain_impls), since a big
        # matmul's clock moves with its power draw from one case to the next
        case["plain"] = ("linear" if epi == "linear_bias" else "plain", nmm)
    return case


def plain_impls(case, ins):
    """For an epilogue case: the plain matmul(s) it fuses on the same
    tensors (x @ w, or x @ wg and x @ wu), through syncc and through torch:
    ({name: fn}, check, module), check() the largest rel. error of syncc's
    plain matmuls against f32."""
    form, nmm = case["plain"]
    mod = syncc.load(_case_file("plain_" + form, _mm_src(form)), **case["params"])
    op, x, ws = mod.f, ins[0], ins[1:1 + nmm]
    lin = form == "linear"

    def tmm(w):
        return F.linear(x, w) if lin else torch.matmul(x, w)

    def check():
        return max(rel_err(op(x, w), x.float() @ (w.float().t() if lin else w.float())) for w in ws)
    return {"syncc_plain": lambda: [op(x, w) for w in ws], "eager_plain": lambda: [tmm(w) for w in ws]}, check, mod


_ROW_SRC = {
    "rmsnorm": ("x: bf16[M, N], g: bf16[N]", "rmsnorm(x, g)"),
    "layernorm": ("x: bf16[M, N], g: bf16[N], b: bf16[N]", "layernorm(x, g, b)"),
    "softmax": ("x: bf16[M, N]", "softmax(x)"),
}


def _row_case(name, M, N, dim):
    args, body = _ROW_SRC[name]
    if dim == 0:  # over the first dim: the op on the transpose, written as the user would
        body = {"softmax": "softmax0(x)", "rmsnorm": "rmsnorm0(x, g)", "layernorm": "layernorm0(x, g, b)"}[name]
        args = args.replace("g: bf16[N]", "g: bf16[M, 1]").replace("b: bf16[N]", "b: bf16[M, 1]")
    src = ("use nn;\nparam M = 64, N = 64;\nparam eps = 1e-5;\n"
           "op softmax0(x: bf16[M, N]) -> bf16[M, N] {\n"
           "    let xf = cast(x, f32);\n    let e = exp(xf - amax(xf, 0));\n    return cast(e / sum(e, 0), bf16);\n}\n"
           "op rmsnorm0(x: bf16[M, N], g: bf16[M, 1]) -> bf16[M, N] {\n"
           "    let xf = cast(x, f32);\n    return cast(xf * rsqrt(mean(xf * xf, 0) + eps) * cast(g, f32), bf16);\n}\n"
           "op layernorm0(x: bf16[M, N], g: bf16[M, 1], b: bf16[M, 1]) -> bf16[M, N] {\n"
           "    let xf = cast(x, f32);\n    let d = xf - mean(xf, 0);\n"
           "    let inv = rsqrt(mean(d * d, 0) + eps);\n    return cast(d * inv * cast(g, f32) + cast(b, f32), bf16);\n}\n"
           "op f(%s) -> bf16[M, N] {\n    return %s;\n}\n") % (args, body)

    def inputs(dev):
        x = torch.randn(M, N, device=dev, dtype=torch.bfloat16) * 2
        gshape = (N,) if dim == 1 else (M, 1)
        g = torch.rand(gshape, device=dev, dtype=torch.bfloat16) + 0.5
        b = torch.randn(gshape, device=dev, dtype=torch.bfloat16)
        return {"rmsnorm": [x, g], "layernorm": [x, g, b], "softmax": [x]}[name]

    def eager(*a):
        x = a[0]
        if dim == 0:
            x = x.t()
        if name == "rmsnorm":
            g = a[1] if dim == 1 else a[1].reshape(-1)
            y = F.rms_norm(x, (x.shape[-1],), g, eps=1e-5)
        elif name == "layernorm":
            g, b = (a[1], a[2]) if dim == 1 else (a[1].reshape(-1), a[2].reshape(-1))
            y = F.layer_norm(x, (x.shape[-1],), g, b, eps=1e-5)
        else:
            y = torch.softmax(x, dim=-1)
        return y.t() if dim == 0 else y

    nb = {"rmsnorm": 1, "layernorm": 2, "softmax": 0}[name]
    byts = 2 * (2 * M * N + nb * (N if dim == 1 else M))
    return dict(src=src, params=dict(M=M, N=N), inputs=inputs, eager=eager, bytes=byts, flops=0.0, tol=2e-2,
                kind="rows")


def _attn_case(NH, S, D, causal=False):
    src = "use nn;\nparam NH = 8, S = 128, D = 64;\nop f(q: bf16[NH, S, D], k: bf16[NH, S, D], v: bf16[NH, S, D]) -> bf16[NH, S, D] {\n    return %s(q, k, v);\n}\n" % (
        "causal_attention" if causal else "attention")

    def inputs(dev):
        return [torch.randn(NH, S, D, device=dev, dtype=torch.bfloat16) for _ in range(3)]

    def eager(q, k, v):
        # a batch dim of 1: with [NH, S, D] alone PyTorch 2.11 runs the math
        # kernels (2.9 ms at 32x2048x128 on an H200), with [1, NH, S, D]
        # its flash kernel, the one to beat
        return F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]

    return dict(src=src, params=dict(NH=NH, S=S, D=D), inputs=inputs, eager=eager, bytes=2 * 4 * NH * S * D,
                flops=4.0 * NH * S * S * D * (0.5 if causal else 1), tol=2e-2, kind="attention")


_BLOCK_SRC = {
    # the stdlib's tensor-parallel blocks at P = 1, their arguments placed as
    # the stdlib declares them (every placement is the whole tensor at P = 1)
    "tp_mlp": ("x: bf16[S, H], w1: bf16[H, F] @split(1), w2: bf16[F, H] @split(0)", "bf16[S, H]",
               "tp_mlp(x, w1, w2)"),
    "sp_mlp": ("x: bf16[S, H] @split(0), w1: bf16[H, F] @split(1), w2: bf16[F, H] @split(0)", "bf16[S, H] @split(0)",
               "sp_mlp(x, w1, w2)"),
    "tp_attn_out": ("a: bf16[NH, S, D] @split(0), wo: bf16[NH, D, H] @split(0)", "bf16[S, H]", "tp_attn_out(a, wo)"),
    # the same written as a user might: the heads' products summed
    "headsum": ("a: bf16[NH, S, D] @split(0), wo: bf16[NH, D, H] @split(0)", "bf16[S, H]",
                "all_reduce(reshape(sum(a @ wo, 0), [S, H]), sum)"),
    "tp_attention": ("x: bf16[S, H], wq: bf16[NH, H, D] @split(0), wk: bf16[NH, H, D] @split(0), "
                     "wv: bf16[NH, H, D] @split(0), wo: bf16[NH, D, H] @split(0)", "bf16[S, H]",
                     "tp_attention(x, wq, wk, wv, wo)"),
}


def _block_case(name, S, H, F=0, NH=0, D=0):
    """A stdlib block (nn.syn) at P = 1 beside the PyTorch a user writes
    for it: the MLPs as two matmuls and an activation, the head-split
    projections as einsums, attention as SDPA."""
    args, res, body = _BLOCK_SRC[name]
    src = "use nn;\nparam S = 64, H = 64, F = 64, NH = 2, D = 64;\nop f(%s) -> %s {\n    return %s;\n}\n" % (
        args, res, body)

    def rnd(*shape, scale=1.0):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale

    def inputs(dev):
        if name in ("tp_mlp", "sp_mlp"):
            return [rnd(S, H), rnd(H, F, scale=H ** -0.5), rnd(F, H, scale=F ** -0.5)]
        if name in ("tp_attn_out", "headsum"):
            return [rnd(NH, S, D), rnd(NH, D, H, scale=(NH * D) ** -0.5)]
        return [rnd(S, H)] + [rnd(NH, H, D, scale=H ** -0.5) for _ in range(3)] + [rnd(NH, D, H, scale=(NH * D) ** -0.5)]

    def out_proj(a, wo):
        return torch.einsum("nsd,ndh->sh", a, wo)

    def eager(*t):
        if name == "tp_mlp":
            return _gelu(t[0] @ t[1]) @ t[2]
        if name == "sp_mlp":
            return torch.nn.functional.silu(t[0] @ t[1]) @ t[2]
        if name in ("tp_attn_out", "headsum"):
            return out_proj(*t)
        x, wq, wk, wv, wo = t
        q, k, v = (torch.einsum("sh,nhd->nsd", x, w) for w in (wq, wk, wv))
        return out_proj(torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0], wo)

    if name in ("tp_mlp", "sp_mlp"):
        flops, byts = 4.0 * S * H * F, 2 * (2 * S * H + 2 * H * F)
    elif name in ("tp_attn_out", "headsum"):
        flops, byts = 2.0 * S * NH * D * H, 2 * (NH * S * D + NH * D * H + S * H)
    else:
        flops, byts = 8.0 * S * H * NH * D + 4.0 * NH * S * S * D, 2 * (2 * S * H + 4 * NH * H * D)
    return dict(src=src, params=dict(S=S, H=H, F=max(F, 64), NH=max(NH, 2), D=max(D, 64)), inputs=inputs, eager=eager,
                bytes=byts, flops=flops, tol=3e-2, kind="block")


def cases():
    """Row ops first, then matmuls, epilogues, attention, the stdlib's
    blocks (a run that hits its time budget keeps the first)."""
    c = {}
    for name in ("rmsnorm", "layernorm", "softmax"):
        for (M, N) in ((8192, 8192), (1024, 8192), (4096, 50304), (1024, 50257)):
            c["%s_%dx%d" % (name, M, N)] = _row_case(name, M, N, 1)
        # over dim 0: the vocabulary-wide ones reduce 50304 (and an odd 50257) rows
        for (M, N) in ((8192, 8192), (1024, 8192), (50304, 4096), (50257, 1024)):
            c["%s0_%dx%d" % (name, M, N)] = _row_case(name, M, N, 0)
    for M in (128, 512, 1024, 2048, 4096, 8192):
        c["mm_%dx8192x4096" % M] = _mm_case("plain", M, 8192, 4096)
    c["mm_8192x5120x8192"] = _mm_case("plain", 8192, 5120, 8192)
    c["mm_8192x14336x8192"] = _mm_case("plain", 8192, 14336, 8192)
    c["mm_1000x520x264"] = _mm_case("plain", 1000, 520, 264)
    for epi in ("bias", "bias_gelu", "residual", "silu_gated"):
        c["%s_8192x8192x4096" % epi] = _mm_case(epi, 8192, 8192, 4096)
        c["%s_1024x8192x4096" % epi] = _mm_case(epi, 1024, 8192, 4096)
    for M in (1024, 8192):
        c["linear_%dx8192x4096" % M] = _mm_case("linear", M, 8192, 4096)
        c["linear_bias_%dx8192x4096" % M] = _mm_case("linear_bias", M, 8192, 4096)
    c["attention_32x2048x128"] = _attn_case(32, 2048, 128)
    c["attention_16x4096x64"] = _attn_case(16, 4096, 64)
    c["causal_attention_32x8192x128"] = _attn_case(32, 8192, 128, causal=True)
    # the stdlib's blocks at P = 1: Llama-8B-like MLP and attention shapes
    c["tp_mlp_4096x4096x14336"] = _block_case("tp_mlp", 4096, 4096, F=14336)
    c["sp_mlp_4096x4096x14336"] = _block_case("sp_mlp", 4096, 4096, F=14336)
    c["tp_attn_out_32x4096x128"] = _block_case("tp_attn_out", 4096, 4096, NH=32, D=128)
    c["headsum_32x4096x128"] = _block_case("headsum", 4096, 4096, NH=32, D=128)
    c["tp_attention_32x2048x128"] = _block_case("tp_attention", 2048, 4096, NH=32, D=128)
    return c


# ---- measuring ----

def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def reference(case, ins):
    """The op in f32 (the eager op on upcast inputs)."""
    up = [t.float() for t in ins]
    with torch.no_grad():
        return case["eager"](*up).float()


def time_batches(fns, reps, batch):
    """Back-to-back: per round each implementation runs `batch` calls
    between two events; implementations take turns. ms per call, and the
    host's us per call meanwhile: the call path's own cost, the GPU busy
    with earlier calls (no wait for it, no idle CPU waking up), medians."""
    ev = {k: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
          for k in fns}
    host = {k: [] for k in fns}
    for r in range(reps):
        order = list(fns) if r % 2 == 0 else list(reversed(list(fns)))
        for k in order:
            a, b = ev[k][r]
            a.record()
            t0 = time.perf_counter()
            for _ in range(batch):
                fns[k]()
            host[k].append((time.perf_counter() - t0) * 1e6 / batch)
            b.record()
    torch.cuda.synchronize()
    return ({k: statistics.median(a.elapsed_time(b) / batch for a, b in ev[k]) for k in fns},
            {k: statistics.median(v) for k, v in host.items()})


def batch_for(fns, gpu_ms=1.0):
    """Calls per back-to-back batch: enough that the slowest implementation's
    batch keeps the GPU busy for about gpu_ms, so the GPU's start at each
    batch (the first launch's latency, its queue empty) is a small part of
    it -- at 10 calls of a 10 us op it was about a tenth -- 3 to 200."""
    t = max(time_batches(fns, 3, 20)[0].values())  # 20 calls a round: the start a small part already
    return max(3, min(200, math.ceil(gpu_ms / max(t, 1e-4))))


def time_single(fns, reps):
    """One call at a time: device idle before each call; event ms (launch
    gap inside) and host us per call, medians."""
    dev = {k: [] for k in fns}
    host = {k: [] for k in fns}
    for r in range(reps):
        order = list(fns) if r % 2 == 0 else list(reversed(list(fns)))
        for k in order:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            a.record()
            t0 = time.perf_counter()
            fns[k]()
            t1 = time.perf_counter()
            b.record()
            torch.cuda.synchronize()
            dev[k].append(a.elapsed_time(b))
            host[k].append((t1 - t0) * 1e6)
    return ({k: statistics.median(v) for k, v in dev.items()}, {k: statistics.median(v) for k, v in host.items()})


def kernel_records(fns, calls, tmp):
    """Per implementation: its kernels' durations from the profiler's
    records over `calls` back-to-back calls.  Returns {impl: {"us": summed
    kernel us per call, "kernels": [[name, launches per call, median us]]}}.
    Read from the exported trace ("cat": "kernel" events) rather than
    key_averages, whose fields move between torch versions."""
    from torch.profiler import ProfilerActivity, profile
    out = {}
    for k, fn in fns.items():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        path = os.path.join(tmp, "records-%s.json" % k)
        prof.export_chrome_trace(path)
        with open(path) as f:
            evs = json.load(f)
        os.unlink(path)
        evs = evs.get("traceEvents", evs) if isinstance(evs, dict) else evs
        per = {}
        for e in evs:
            if e.get("cat") == "kernel" and "dur" in e:
                per.setdefault(e.get("name", "?"), []).append(float(e["dur"]))
        kern = [[n, len(d) / calls, statistics.median(d)] for n, d in per.items()]
        kern.sort(key=lambda r: -r[1] * r[2])
        out[k] = {"us": sum(sum(d) for d in per.values()) / calls, "kernels": kern}
    return out


def hbm_gbps():
    x = torch.empty(1 << 29, dtype=torch.float16, device="cuda")  # 1 GiB
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    t = time_batches({"c": lambda: y.copy_(x)}, 9, 5)[0]["c"]
    del x, y
    return 2 * (1 << 30) / (t * 1e-3) / 1e9


def mm_tflops():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    t = time_batches({"m": lambda: a @ b}, 9, 5)[0]["m"]
    return 2 * 8192 ** 3 / (t * 1e-3) / 1e12


def _case_file(name, src):
    os.makedirs(SYN_DIR, exist_ok=True)
    path = os.path.join(SYN_DIR, name + ".syn")
    with open(path, "w") as f:
        f.write(src)
    return path


def open_case(name, case):
    """The case built and loaded through python/syncc, fresh inputs and
    their reference: (module, inputs, reference, seconds the build took).
    Also what bench/experiments/ncu_ops.py and clocks.py time."""
    t0 = time.time()
    mod = syncc.load(_case_file(name, case["src"]), **case["params"])
    build_s = time.time() - t0
    ins = case["inputs"]("cuda")
    return mod, ins, reference(case, ins), build_s


def run_case(name, case, args, rates):
    """One op's row; its modules closed however it ends (an exception is
    the caller's to record)."""
    mod, ins, ref, build_s = open_case(name, case)
    opened = [mod]
    try:
        return measure_case(name, case, args, rates, mod, ins, ref, build_s, opened)
    finally:
        for m in opened:
            m.close()


def measure_case(name, case, args, rates, mod, ins, ref, build_s, opened):
    op = mod.f
    impls = {"syncc": lambda: op(*ins), "eager": lambda: case["eager"](*ins)}
    if args.ctypes and op._fast is not None:
        # the call before the C path (python/syncc/_fastcall.c): the routing
        # check, then runtime.Launcher's ctypes call
        impls["ctypes"] = lambda: op._routed(op._torch) or op._launcher(mod._ctx, ins)
    compile_s = None
    if not args.skip_compile:
        # a fresh dynamo per op: the cases' eager functions share code
        # objects, and past torch._dynamo's recompile limit (8) a ninth
        # shape of one ran eagerly under torch.compile's name (every row op
        # after the eighth of a run, until 2026-12-06)
        torch._dynamo.reset()
        cf = torch.compile(case["eager"], dynamic=False)
        t0 = time.time()
        cf(*ins)
        compile_s = time.time() - t0
        impls["compile"] = lambda: cf(*ins)
    row = {"op": name, "kind": case["kind"], "build_s": round(build_s, 2), "compile_s": compile_s}
    for k, fn in impls.items():  # correct first: every output before any time
        for _ in range(2):
            out = fn()
        torch.cuda.synchronize()
        row["err_" + k] = rel_err(out, ref)
        if not row["err_" + k] <= case["tol"]:
            row["wrong_" + k] = True
    # fresh inputs once more for syncc: the same function on any valid input
    ins2 = case["inputs"]("cuda")
    row["err_syncc_2"] = rel_err(op(*ins2), reference(case, ins2))
    if not row["err_syncc_2"] <= case["tol"]:  # (new addresses: the launcher's kept tensor maps encoded again)
        row["wrong_syncc"] = True
    del ins2
    if "plain" in case and not args.no_plain:
        more, check, plain_mod = plain_impls(case, ins)
        opened.append(plain_mod)
        row["err_syncc_plain"] = check()
        if not row["err_syncc_plain"] <= case["tol"]:
            row["wrong_syncc_plain"] = True
        impls.update(more)
    for k in impls:
        for _ in range(3):
            impls[k]()
    torch.cuda.synchronize()
    batch = args.batch or batch_for(impls)
    row["batch"] = batch
    b2b, host_b2b = time_batches(impls, args.reps, batch)
    one, host = time_single(impls, args.reps)
    if args.records:
        row["records"] = kernel_records(impls, args.records, args.out)
    floor = max(case["bytes"] / (rates["hbm_gbps"] * 1e9), case["flops"] / (rates["mm_tflops"] * 1e12)) * 1e3
    row.update({"b2b_ms": b2b, "one_ms": one, "host_us": host, "host_b2b_us": host_b2b, "floor_ms": floor,
                "floor_kind": "flops" if case["flops"] / (rates["mm_tflops"] * 1e12) > case["bytes"] / (
                    rates["hbm_gbps"] * 1e9) else "hbm"})
    return row


def table(rows, rates):
    out = ["# p1: syncc ops from PyTorch on one GPU", "",
           "HBM %.0f GB/s (1 GiB copy), cuBLAS %.0f TFLOP/s (8192^3), both measured in this run. "
           "Times in ms per call (median); b2b = back-to-back, one = one call at a time; "
           "speed = other / syncc (above 1: syncc faster); host = us per call on the host, one call at a time "
           "(after the device went idle) and back-to-back (the call path's own cost); batch = calls per "
           "back-to-back batch." % (
               rates["hbm_gbps"], rates["mm_tflops"]), "",
           "| op | syncc b2b | eager b2b | compile b2b | speed vs eager | vs compile | syncc one | eager one | "
           "floor | syncc / floor | host us syncc / eager | host us b2b syncc / eager | err | batch |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append("| %s | failed: %s |" % (r["op"], r["error"][:160].replace("|", "/")))
            continue
        b, o, h = r["b2b_ms"], r["one_ms"], r["host_us"]
        hb = r.get("host_b2b_us")
        c = b.get("compile")
        out.append("| %s | %.4f | %.4f | %s | %.2f | %s | %.4f | %.4f | %.4f (%s) | %.2f | %.0f / %.0f | %s | %.1e%s | %s |" % (
            r["op"], b["syncc"], b["eager"], "%.4f" % c if c else "-", b["eager"] / b["syncc"],
            "%.2f" % (c / b["syncc"]) if c else "-", o["syncc"], o["eager"], r["floor_ms"], r["floor_kind"],
            b["syncc"] / r["floor_ms"], h["syncc"], h["eager"],
            "%.1f / %.1f" % (hb["syncc"], hb["eager"]) if hb else "-", r["err_syncc"],
            " WRONG" if r.get("wrong_syncc") else "", r.get("batch", "-")))
    ab = [r for r in rows if "error" not in r and "ctypes" in r["b2b_ms"]]
    if ab:
        out += ["", "The C call path against the ctypes one (`--ctypes`), interleaved in the same rounds:", "",
                "| op | syncc b2b | ctypes b2b | syncc one | ctypes one | host us syncc / ctypes / eager |",
                "|---|---|---|---|---|---|"]
        for r in ab:
            b, o, h = r["b2b_ms"], r["one_ms"], r["host_us"]
            out.append("| %s | %.4f | %.4f | %.4f | %.4f | %.1f / %.1f / %.1f |" % (
                r["op"], b["syncc"], b["ctypes"], o["syncc"], o["ctypes"], h["syncc"], h["ctypes"], h["eager"]))
    pl = [r for r in rows if "error" not in r and "syncc_plain" in r["b2b_ms"]]
    if pl:
        out += ["", "Fused epilogues against the plain matmul(s) they fuse, on the same tensors, timed in the same "
                "rounds (ms per call back to back; records: kernel us per call); ratio = plain / fused "
                "(1.00: the epilogue costs nothing). PyTorch's side: its eager op against torch.matmul (or "
                "F.linear):", "",
                "| op | syncc fused | syncc plain | ratio | records: fused / plain us | ratio | "
                "eager | torch plain | ratio | records | ratio |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in pl:
            b, k = r["b2b_ms"], r.get("records")

            def rec(f, p):
                if not k:
                    return "- | -"
                return "%.1f / %.1f | %.3f" % (k[f]["us"], k[p]["us"], k[p]["us"] / k[f]["us"])
            out.append("| %s | %.4f | %.4f%s | %.3f | %s | %.4f | %.4f | %.3f | %s |" % (
                r["op"], b["syncc"], b["syncc_plain"], " WRONG" if r.get("wrong_syncc_plain") else "",
                b["syncc_plain"] / b["syncc"], rec("syncc", "syncc_plain"),
                b["eager"], b["eager_plain"], b["eager_plain"] / b["eager"], rec("eager", "eager_plain")))
    rec = [r for r in rows if "error" not in r and "records" in r]
    if rec:
        out += ["", "Kernel records (`--records`): each implementation's kernels' own durations over back-to-back "
                "calls (torch.profiler / CUPTI), us per call; speed = other / syncc:", "",
                "| op | syncc us | eager us | compile us | speed vs eager | vs compile | syncc kernels | eager kernels |",
                "|---|---|---|---|---|---|---|---|"]
        for r in rec:
            k = r["records"]
            c = k.get("compile")

            def names(impl):
                return "<br>".join("%s x%g %.1f" % (n[:70].replace("|", "/"), cnt, us)
                                   for n, cnt, us in k[impl]["kernels"][:3])
            out.append("| %s | %.1f | %.1f | %s | %.3f | %s | %s | %s |" % (
                r["op"], k["syncc"]["us"], k["eager"]["us"], "%.1f" % c["us"] if c else "-",
                k["eager"]["us"] / k["syncc"]["us"], "%.3f" % (c["us"] / k["syncc"]["us"]) if c else "-",
                names("syncc"), names("eager")))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated op names or prefixes")
    ap.add_argument("--skip", default="", help="comma-separated prefixes to leave out")
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--ctypes", action="store_true",
                    help="also time each op through the ctypes call path (before python/syncc/_fastcall.c)")
    ap.add_argument("--records", type=int, default=0, metavar="N",
                    help="also profile N back-to-back calls of each implementation: kernel records")
    ap.add_argument("--no-plain", action="store_true",
                    help="leave out the plain matmuls timed beside each fused epilogue")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--batch", type=int, default=0,
                    help="calls per back-to-back batch (0: enough for about 1 ms of the slowest implementation)")
    ap.add_argument("--budget", type=float, default=float(os.environ.get("P1_BUDGET_S", "420")),
                    help="seconds; the ops not reached are listed as skipped")
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "build", "p1-out")))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    rates = {"hbm_gbps": hbm_gbps(), "mm_tflops": mm_tflops(), "gpu": torch.cuda.get_device_name(),
             "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print("rates: %s" % json.dumps(rates), flush=True)
    want = [w for w in args.only.split(",") if w]
    skip = [w for w in args.skip.split(",") if w]
    rows, t_start = [], time.time()
    for name, case in cases().items():
        if want and not any(name.startswith(w) for w in want):
            continue
        if any(name.startswith(s) for s in skip):
            continue
        if time.time() - t_start > args.budget:
            rows.append({"op": name, "error": "skipped: past the time budget"})
            continue
        try:
            row = run_case(name, case, args, rates)
        except Exception as e:  # one op failing must not hide the others
            row = {"op": name, "error": "%s: %s" % (type(e).__name__, e)}
        rows.append(row)
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, "p1.json"), "w") as f:
        json.dump({"rates": rates, "rows": rows}, f, indent=1)
    md = table(rows, rates)
    with open(os.path.join(args.out, "p1.md"), "w") as f:
        f.write(md)
    print(md)
    return 1 if any(r.get("wrong_syncc") or r.get("wrong_syncc_plain") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
