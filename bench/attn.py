#!/usr/bin/env python3
"""bench/attn.py -- the fused attention kernel (codegen/attn.c) beside
torch.nn.functional.scaled_dot_product_attention, on the same tensors,
interleaved and back to back, on one GPU.

The kernel comes from build/ptxgen (the region's lowering to it is not yet
in the compiler, so this is not yet through python/syncc): its PTX is loaded
with the driver API through ctypes into PyTorch's context and launched on
PyTorch's stream with a block list made here (codegen/codegen.h's 40-byte
entries, every (head, query tile), a causal one longest first).  Each size
is checked against SDPA's output before it is timed; a size whose output
differs by more than 2e-2 (relative, bf16) fails the run.

    python3 bench/attn.py [--reps R] [--json FILE]
"""
import argparse
import ctypes
import json
import os
import statistics
import struct
import subprocess
import sys

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [  # heads, S, D, causal
    (32, 2048, 128, False),
    (16, 4096, 64, False),
    (32, 8192, 128, True),
]

cu = ctypes.CDLL("libcuda.so.1")


def ck(r, what):
    if r != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(r, ctypes.byref(name))
        raise RuntimeError("%s failed: %s" % (what, name.value.decode() if name.value else r))


class Kernel:
    def __init__(self, heads, s, d, causal):
        args = [os.path.join(ROOT, "build", "ptxgen"), "attn", "--heads", str(heads), "--sq", str(s), "--sk", str(s),
                "--d", str(d), "--dtype", "bf16"]
        if causal:
            args += ["--causal", "0"]
        ptx = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        head = ptx.split("\n", 1)[0].split()  # // ptxgen: kernel NAME threads T smem S tensors N blocks B
        self.name = head[3].encode()
        self.threads, self.smem, self.nblocks = int(head[5]), int(head[7]), int(head[11])
        self.mod = ctypes.c_void_p()
        ck(cu.cuModuleLoadData(ctypes.byref(self.mod), ctypes.c_char_p(ptx.encode())), "cuModuleLoadData")
        self.fn = ctypes.c_void_p()
        ck(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, self.name), "cuModuleGetFunction")
        ck(cu.cuFuncSetAttribute(self.fn, 8, self.smem), "cuFuncSetAttribute")  # MAX_DYNAMIC_SHARED_SIZE_BYTES
        per_sm = ctypes.c_int()
        ck(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(per_sm), self.fn, self.threads,
                                                          ctypes.c_size_t(self.smem)), "occupancy")
        nsm = torch.cuda.get_device_properties(0).multi_processor_count
        self.grid = min(self.nblocks, nsm * per_sm.value)
        self.per_sm = per_sm.value
        tiles = (s + 63) // 64
        blob = b""
        for z in range(heads):
            for r in range(tiles):
                x = tiles - 1 - r if causal else r
                blob += struct.pack("<IIIIQIIQ", x, 0, z, 0xFFFFFFFF, 0, 0xFFFFFFFF, 0, 0)
        assert len(blob) == 40 * self.nblocks
        self.blocks = torch.frombuffer(bytearray(blob), dtype=torch.uint8).cuda()

    def __call__(self, q, k, v, o):
        vals = [ctypes.c_uint64(self.blocks.data_ptr()), ctypes.c_uint32(self.nblocks), ctypes.c_uint64(0),
                ctypes.c_uint64(0), ctypes.c_uint64(0), ctypes.c_uint64(0), ctypes.c_uint64(1), ctypes.c_uint32(0),
                ctypes.c_uint64(q.data_ptr()), ctypes.c_uint64(k.data_ptr()), ctypes.c_uint64(v.data_ptr()),
                ctypes.c_uint64(o.data_ptr())]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in vals])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        ck(cu.cuLaunchKernel(self.fn, self.grid, 1, 1, self.threads, 1, 1, self.smem, stream, params, None),
           "cuLaunchKernel")


def timed(fn, n):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(n):
        fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.zeros(1, device="cuda")  # PyTorch's context is current from here
    ok, rows = True, []
    print("| NH x S x D (bf16) | syncc fused | F.sdpa | syncc / sdpa (speed) | rel err vs sdpa |")
    print("|---|---|---|---|---|")
    for heads, s, d, causal in SIZES:
        torch.manual_seed(0)
        q, k, v = (torch.randn(1, heads, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        kern = Kernel(heads, s, d, causal)
        kern(q, k, v, o)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        rel = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        good = rel == rel and rel < 2e-2
        ok = ok and good
        ours, theirs = [], []
        for w in range(2):  # warm both
            kern(q, k, v, o)
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for _ in range(a.reps):  # interleaved, back to back
            ours.append(timed(lambda: kern(q, k, v, o), 10))
            theirs.append(timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), 10))
        mo, mt = statistics.median(ours), statistics.median(theirs)
        name = "%dx%dx%d%s" % (heads, s, d, " causal" if causal else "")
        print("| %s | %.3f ms | %.3f ms | %.2f | %.2e %s |" % (name, mo, mt, mt / mo, rel, "ok" if good else "FAIL"))
        sys.stdout.flush()
        rows.append({"size": name, "syncc_ms": mo, "sdpa_ms": mt, "ratio": mt / mo, "rel_err": rel, "ok": good,
                     "grid": kern.grid, "ctas_per_sm": kern.per_sm, "syncc_all": ours, "sdpa_all": theirs})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
