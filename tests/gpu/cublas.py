"""cuBLAS through PyTorch, timed like tests/gpu/kernels.c times syncc's
matmul: bf16 A [m, k] @ B [k, n], random inputs, 3 warm-ups, median of 25
runs timed with CUDA events.  One PERF line per shape; arguments are
shapes MxNxK (default: the shapes of `gpu-kernels perf`); --f32 times f32
operands in true f32 (TF32 off), the bar of syncc's FFMA tiles."""
import statistics
import sys

import torch

SHAPES = ["4096x4096x4096", "8192x8192x8192", "8192x8192x4096", "8192x8192x14336",
          "8192x5120x8192", "8192x14336x8192", "2048x8192x4096"]


def main():
    torch.manual_seed(0)
    args = sys.argv[1:]
    f32 = "--f32" in args
    args = [a for a in args if a != "--f32"]
    dtype = torch.float32 if f32 else torch.bfloat16
    torch.backends.cuda.matmul.allow_tf32 = False
    for shape in args or SHAPES:
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        for _ in range(3):
            c = torch.matmul(a, b)
        torch.cuda.synchronize()
        times = []
        for _ in range(25):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            c = torch.matmul(a, b)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        ms = statistics.median(times)
        ref = (a[:64].double() @ b.double())
        rel = ((c[:64].double() - ref).norm() / ref.norm()).item()
        print("PERF cublas dtype=%s m=%d n=%d k=%d median_ms=%.4f min_ms=%.4f max_ms=%.4f tflops=%.1f sampled_rel=%.2e torch=%s"
              % ("f32" if f32 else "bf16", m, n, k, ms, min(times), max(times), 2 * m * n * k / (ms * 1e-3) / 1e12, rel, torch.__version__),
              flush=True)


if __name__ == "__main__":
    main()
