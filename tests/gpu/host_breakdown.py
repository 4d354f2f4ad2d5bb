#!/usr/bin/env python3
"""tests/gpu/host_breakdown.py -- where an op's host time per call goes
(issue 16: <= 20 us a call), on one GPU: for a few ops through python/syncc,
the whole call, then its pieces timed alone over the same tensors -- the
output allocation, the argument check, torch's raw stream, the foreign call
into the launcher (syncc_<op>_on_stream: libsyncrt's enqueue) -- beside
the eager PyTorch call.  The GPU is kept from becoming the bottleneck by
small shapes and a synchronise every 200 calls.  Prints one line per op.

    python3 tests/gpu/host_breakdown.py [--calls N] [--only OP,...] [--pieces NAME,...]

With --pieces only the named rows run (e.g. "launcher (C)" under the
driver-call shim tests/gpu/cuprof.c, so its counts are the launcher's
alone)."""
import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import syncc  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

OPS = {
    "rmsnorm": ("use nn;\nparam M = 64, N = 1024;\nop f(x: bf16[M, N], g: bf16[N]) -> bf16[M, N] {\n"
                "    return rmsnorm(x, g);\n}\n",
                lambda: [torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16),
                         torch.randn(1024, device="cuda", dtype=torch.bfloat16)],
                lambda x, g: F.rms_norm(x, (1024,), g)),
    "matmul": ("param M = 128, N = 256, K = 256;\nop f(x: bf16[M, K], w: bf16[K, N]) -> bf16[M, N] {\n"
               "    return x @ w;\n}\n",
               lambda: [torch.randn(128, 256, device="cuda", dtype=torch.bfloat16),
                        torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)],
               lambda x, w: x @ w),
    "rmsnorm_1024x8192": ("use nn;\nparam M = 1024, N = 8192;\nop f(x: bf16[M, N], g: bf16[N]) -> bf16[M, N] {\n"
                          "    return rmsnorm(x, g);\n}\n",
                          lambda: [torch.randn(1024, 8192, device="cuda", dtype=torch.bfloat16),
                                   torch.randn(8192, device="cuda", dtype=torch.bfloat16)],
                          lambda x, g: F.rms_norm(x, (8192,), g)),
    "layernorm_1024x8192": ("use nn;\nparam M = 1024, N = 8192;\nop f(x: bf16[M, N], g: bf16[N], b: bf16[N]) -> "
                            "bf16[M, N] {\n    return layernorm(x, g, b);\n}\n",
                            lambda: [torch.randn(1024, 8192, device="cuda", dtype=torch.bfloat16),
                                     torch.randn(8192, device="cuda", dtype=torch.bfloat16),
                                     torch.randn(8192, device="cuda", dtype=torch.bfloat16)],
                            lambda x, g, b: F.layer_norm(x, (8192,), g, b)),
    "attention": ("use nn;\nparam NH = 2, S = 128, D = 64;\nop f(q: bf16[NH, S, D], k: bf16[NH, S, D], "
                  "v: bf16[NH, S, D]) -> bf16[NH, S, D] {\n    return attention(q, k, v);\n}\n",
                  lambda: [torch.randn(2, 128, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3)],
                  lambda q, k, v: F.scaled_dot_product_attention(q[None], k[None], v[None])[0]),
}


def per_call(fn, n):
    """us per call of fn over n calls (a synchronise every 200)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        fn()
        if i % 200 == 199:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--only", default="", help="comma-separated op names")
    ap.add_argument("--pieces", default="", help="comma-separated row names")
    args = ap.parse_args()
    only = [o for o in args.only.split(",") if o]
    pieces = [p for p in args.pieces.split(",") if p]
    from syncc import runtime
    d = tempfile.mkdtemp()
    for name, (src, inputs, eager) in OPS.items():
        if only and name not in only:
            continue
        path = os.path.join(d, name + ".syn")
        with open(path, "w") as f:
            f.write(src)
        mod = syncc.load(path)
        op = mod.f
        ins = inputs()
        ln = op._launcher
        ctx = mod._ctx
        dev = ctx.torch_device
        op(*ins)  # the first call makes the launcher's fast-path tables
        st = ln.structs
        for i, t in enumerate(ins):
            st[i].data = t.data_ptr()
        outs = [torch.empty(s, dtype=dt, device=dev) for s, dt in ln.outs]
        for j, o in enumerate(outs):
            st[ln.nargs + j].data = o.data_ptr()
        stream = runtime._raw_stream(torch, dev)
        fns = {
            "whole call": lambda: op(*ins),
            "eager": lambda: eager(*ins),
            "torch.empty outs": lambda: [torch.empty(s, dtype=dt, device=dev) for s, dt in ln.outs],
            "new_empty outs": lambda: [ins[0].new_empty(s, dtype=dt) for s, dt in ln.outs],
            # the C path's allocation since df9868f: empty_like of the argument
            # of a result's shape and dtype, else new_empty (ln.likes)
            "empty_like outs": lambda: [torch.empty_like(ins[a]) if a >= 0 else ins[0].new_empty(s, dtype=dt)
                                        for (s, dt), a in zip(ln.outs, ln.likes)],
            "struct fill": lambda: [setattr(st[i], "data", t.data_ptr()) for i, t in enumerate(ins)],
            "fast check": lambda: ln._fast_ptrs(ins, ctx.device),
            "raw stream": lambda: runtime._raw_stream(torch, dev),
            "launcher (C)": lambda: ln.fn(ctx.ptr, stream, ln.ptrs_addr),
            "routing check": lambda: op._routed(op._torch),
        }
        if op._fast is not None:  # the C call path (python/syncc/_fastcall.c): checks, results, launch
            fns["C caller"] = lambda: op._fast(tuple(ins))
        if name == next(iter(OPS)) or (only and name == only[0]):
            print("fast call: %s" % ("C (_fastcall.c)" if op._fast is not None else "ctypes (%s)" % runtime.fastcall_why),
                  flush=True)
        rows = {k: per_call(f, args.calls) for k, f in fns.items() if not pieces or k in pieces}
        print("%-10s " % name + "  ".join("%s %.1f" % (k, v) for k, v in rows.items()), flush=True)
        mod.close()


if __name__ == "__main__":
    main()
