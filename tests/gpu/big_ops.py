#!/usr/bin/env python3
"""tests/gpu/big_ops.py -- the stdlib's ops from PyTorch with tensors past
2^31 bytes, against PyTorch's own on the same tensors: attention at long
context (q, k, v and o 2.68 GB each; d = 128 on 176-key tiles in two
stages, d = 64 on 192-row entries, with and without the causal mask) and
the row ops at GPT-2's vocabulary width (21400 x 50257 bf16, 2.15 GB:
peeled rows, a softmax's next row prefetched into shared memory).  Each is
compared whole and on its last slice (the last head, the last 64 rows),
which lies past 2^31 bytes into each tensor, where a 32-bit byte offset
would wrap.  Prints one RESULT line per case; exits 1 if any is off.

    python3 tests/gpu/big_ops.py [--only NAME,...]"""
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

ATTN = ("use nn;\nparam NH = 8, S = 128, D = 64;\n"
        "op f(q: bf16[NH, S, D], k: bf16[NH, S, D], v: bf16[NH, S, D]) -> bf16[NH, S, D] {\n"
        "    return %s(q, k, v);\n}\n")
ROWS = "use nn;\nparam M = 64, N = 64;\nop f(%s) -> bf16[M, N] {\n    return %s;\n}\n"


def attn(NH, S, D, causal):
    src = ATTN % ("causal_attention" if causal else "attention")

    def inputs():
        return [torch.randn(NH, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)]

    def ref(q, k, v):
        return F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]
    return src, dict(NH=NH, S=S, D=D), inputs, ref, 1


def rows(op, M, N):
    args, body = {"softmax": ("x: bf16[M, N]", "softmax(x)"),
                  "rmsnorm": ("x: bf16[M, N], g: bf16[N]", "rmsnorm(x, g)"),
                  "layernorm": ("x: bf16[M, N], g: bf16[N], b: bf16[N]", "layernorm(x, g, b)")}[op]

    def inputs():
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16) * 2
        g = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        return {"softmax": [x], "rmsnorm": [x, g], "layernorm": [x, g, b]}[op]

    def ref(x, *w):
        if op == "softmax":
            return torch.softmax(x.float(), dim=-1).to(x.dtype)
        if op == "rmsnorm":
            return F.rms_norm(x.float(), (N,), w[0].float(), eps=1e-5).to(x.dtype)
        return F.layer_norm(x.float(), (N,), w[0].float(), w[1].float(), eps=1e-5).to(x.dtype)
    return ROWS % (args, body), dict(M=M, N=N), inputs, ref, 64


# (name, case): every tensor past 2^31 bytes
CASES = [
    ("attention_160x65536x128", lambda: attn(160, 65536, 128, False)),
    ("causal_attention_160x65536x128", lambda: attn(160, 65536, 128, True)),
    ("attention_640x32768x64", lambda: attn(640, 32768, 64, False)),
    ("causal_attention_640x32768x64", lambda: attn(640, 32768, 64, True)),
    ("softmax_21400x50257", lambda: rows("softmax", 21400, 50257)),
    ("rmsnorm_21400x50257", lambda: rows("rmsnorm", 21400, 50257)),
    ("layernorm_21400x50257", lambda: rows("layernorm", 21400, 50257)),
]


def errs(o, r):
    """(relative Frobenius error, largest absolute difference), summed in f64
    over slices along the first dim, so no f32 copy of the whole tensor."""
    num = den = amax = 0.0
    step = max(1, o.shape[0] // 64)
    for h in range(0, o.shape[0], step):
        a, b = o[h:h + step].float(), r[h:h + step].float()
        d = a - b
        num += float((d * d).sum(dtype=torch.float64))
        den += float((b * b).sum(dtype=torch.float64))
        amax = max(amax, float(d.abs().max()))
    return (num / den) ** 0.5, amax


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = [w for w in args.only.split(",") if w]
    bad = 0
    tmp = tempfile.mkdtemp(prefix="big_ops")
    for name, make in CASES:
        if only and not any(name.startswith(w) for w in only):
            continue
        src, params, inputs, ref, last = make()
        path = os.path.join(tmp, name + ".syn")
        with open(path, "w") as f:
            f.write(src)
        torch.manual_seed(0)
        ins = inputs()
        assert ins[0].numel() * 2 > 1 << 31
        mod = syncc.load(path, **params)
        t0 = time.time()
        o = mod.f(*ins)
        torch.cuda.synchronize()
        t_syncc = time.time() - t0
        t0 = time.time()
        r = ref(*ins)
        torch.cuda.synchronize()
        t_ref = time.time() - t0
        rel, amax = errs(o, r)
        rel_last, amax_last = errs(o[-last:], r[-last:])
        ok = rel < 1e-2 and amax < 0.1 and rel_last < 1e-2 and amax_last < 0.1 and bool(torch.isfinite(o).all())
        bad += not ok
        print("RESULT big %s (each tensor %.2f GB): %s  rel %.2e max %.2e, last slice rel %.2e max %.2e  "
              "(first call %.2f s, PyTorch %.2f s)" % (name, ins[0].numel() * 2 / 1e9, "pass" if ok else "FAIL", rel,
                                                       amax, rel_last, amax_last, t_syncc, t_ref), flush=True)
        mod.close()
        del ins, o, r
        torch.cuda.empty_cache()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
