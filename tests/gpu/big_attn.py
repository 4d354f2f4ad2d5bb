#!/usr/bin/env python3
"""tests/gpu/big_attn.py -- the stdlib's attention from PyTorch at long
context, q, k, v and o each past 2^31 bytes, against PyTorch's SDPA on the
same tensors: every head, and the last head (whose rows lie past 2^31 bytes
into each tensor) on its own, since a 32-bit byte offset would wrap there.
d = 128 (176-key tiles, two stages) and d = 64 (192-row entries without a
mask), with and without the causal mask.  Prints one RESULT line per case;
exits 1 if any is off.

    python3 tests/gpu/big_attn.py [--only NAME,...]"""
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

# (name, NH, S, D, causal): each tensor NH * S * D * 2 bytes > 2^31
CASES = [
    ("attention_160x65536x128", 160, 65536, 128, False),
    ("causal_attention_160x65536x128", 160, 65536, 128, True),
    ("attention_640x32768x64", 640, 32768, 64, False),
    ("causal_attention_640x32768x64", 640, 32768, 64, True),
]
SRC = ("use nn;\nparam NH = 8, S = 128, D = 64;\n"
       "op f(q: bf16[NH, S, D], k: bf16[NH, S, D], v: bf16[NH, S, D]) -> bf16[NH, S, D] {\n"
       "    return %s(q, k, v);\n}\n")


def errs(o, r):
    """(relative Frobenius error, largest absolute difference) in f64 sums, by heads
    so no f32 copy of the whole tensor is made."""
    num = den = 0.0
    amax = 0.0
    for h in range(0, o.shape[0], 16):
        a, b = o[h:h + 16].float(), r[h:h + 16].float()
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
    tmp = tempfile.mkdtemp(prefix="big_attn")
    for name, NH, S, D, causal in CASES:
        if only and name not in only:
            continue
        path = os.path.join(tmp, name + ".syn")
        with open(path, "w") as f:
            f.write(SRC % ("causal_attention" if causal else "attention"))
        torch.manual_seed(0)
        q, k, v = (torch.randn(NH, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        assert q.numel() * 2 > 1 << 31
        mod = syncc.load(path, NH=NH, S=S, D=D)
        t0 = time.time()
        o = mod.f(q, k, v)
        torch.cuda.synchronize()
        t_syncc = time.time() - t0
        t0 = time.time()
        r = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]
        torch.cuda.synchronize()
        t_ref = time.time() - t0
        rel, amax = errs(o, r)
        rel_last, amax_last = errs(o[-1:], r[-1:])
        ok = rel < 1e-2 and amax < 0.1 and rel_last < 1e-2 and amax_last < 0.1 and bool(torch.isfinite(o).all())
        bad += not ok
        print("RESULT big %s (each tensor %.2f GB): %s  rel %.2e max %.2e, last head rel %.2e max %.2e  "
              "(first call %.2f s, SDPA %.2f s)" % (name, q.numel() * 2 / 1e9, "pass" if ok else "FAIL", rel, amax,
                                                   rel_last, amax_last, t_syncc, t_ref), flush=True)
        mod.close()
        del q, k, v, o, r
        torch.cuda.empty_cache()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
