#!/usr/bin/env python3
"""tests/gpu/host_breakdown.py -- where an op's host time per call goes
(issue 16: <= 20 us a call), on one GPU: for a few ops through python/syncc,
the whole call, then its pieces timed alone over the same tensors -- the
output allocation, the argument check, torch's raw stream, the foreign call
into the launcher (syncc_<op>_on_stream: libsyncrt's enqueue) -- beside
the eager PyTorch call.  The GPU is kept from becoming the bottleneck by
small shapes and a synchronise every 200 calls.  Prints one line per op.

    python3 tests/gpu/host_breakdown.py [--calls N]"""
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
    args = ap.parse_args()
    from syncc import runtime
    d = tempfile.mkdtemp()
    for name, (src, inputs, eager) in OPS.items():
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
        rows = {
            "whole call": per_call(lambda: op(*ins), args.calls),
            "eager": per_call(lambda: eager(*ins), args.calls),
            "torch.empty outs": per_call(lambda: [torch.empty(s, dtype=dt, device=dev) for s, dt in ln.outs],
                                         args.calls),
            "new_empty outs": per_call(lambda: [ins[0].new_empty(s, dtype=dt) for s, dt in ln.outs], args.calls),
            "struct fill": per_call(lambda: [setattr(st[i], "data", t.data_ptr()) for i, t in enumerate(ins)],
                                    args.calls),
            "fast check": per_call(lambda: ln._fast_ok(ins, dev), args.calls),
            "raw stream": per_call(lambda: runtime._raw_stream(torch, dev), args.calls),
            "launcher (C)": per_call(lambda: ln.fn(ctx.ptr, stream, ln.ptrs_addr), args.calls),
            "routing check": per_call(lambda: op._routed(op._torch), args.calls),
        }
        print("%-10s " % name + "  ".join("%s %.1f" % (k, v) for k, v in rows.items()), flush=True)
        mod.close()


if __name__ == "__main__":
    main()
