"""syncc ops inside PyTorch programs on one GPU (P = 1, one process):
torch.ops.syncc custom ops, torch.compile(fullgraph=True), torch.profiler,
CUDA graph capture and replay.  tests/gpu/gpu-check-graphs starts it.

For each op (row_linear and sp_mlp at P = 1: a comm lane and flags between
the matmul and the collective; the stdlib attention and rmsnorm: kernels on
torch's stream):
  * the eager call against an f32 torch reference;
  * the call captured in torch.cuda.graph and replayed REPLAYS times, the
    static inputs refilled from a pool of input sets before each replay and
    every output compared bit for bit with the eager syncc result of that
    input set (kernels are deterministic, so any difference is a race: a
    replay whose flags did not count from zero would let the collective or
    the next kernel read a tile before it is written);
  * torch.compile(fullgraph=True) of a function that calls the op between
    torch ops, against the same function in eager mode;
  * torch.profiler: the op's events appear under syncc::<op>;
  * the first call of a freshly loaded op inside a capture must raise a
    SynccError that says to call it once first;
  * host microseconds per call: eager direct call, graph replay, torch.matmul.
Writes $OUT/torch_graph.json; exit 0 only if every check passed."""
import syncc  # first: it sets CUDA_DEVICE_MAX_CONNECTIONS before torch makes the CUDA context

import faulthandler
import json
import os
import sys
import tempfile
import time
import traceback

import torch

REPLAYS = int(os.environ.get("REPLAYS", "1000"))
# torch.compile takes tens of seconds a function: the cases compiled
COMPILE_CASES = os.environ.get("COMPILE_CASES", "row_linear,rmsnorm").split(",")
OUT = os.environ.get("OUT", "build/gpu-out")
TOL = 3e-2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rel_err(got, want):
    got, want = got.float(), want.float()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def write_syn(d, name, text):
    p = os.path.join(d, name + ".syn")
    with open(p, "w") as f:
        f.write(text)
    return p


def cases(tmp):
    """(label, path, params, op name, make inputs(gen) -> tuple, torch reference(*inputs) -> tensor)."""
    dev = torch.device("cuda", 0)
    bf = torch.bfloat16

    def rl_in(g, M=1024, N=1024, K=2048):
        return (torch.randn(M, K, generator=g, device=dev).to(bf),
                (torch.randn(K, N, generator=g, device=dev) / K ** 0.5).to(bf))

    def sp_in(g, S=1024, H=1024, F=2048):
        return (torch.randn(S, H, generator=g, device=dev).to(bf),
                (torch.randn(H, F, generator=g, device=dev) / H ** 0.5).to(bf),
                (torch.randn(F, H, generator=g, device=dev) / F ** 0.5).to(bf))

    def att_in(g, NH=8, S=512, D=64):
        return tuple(torch.randn(NH, S, D, generator=g, device=dev).to(bf) for _ in range(3))

    def rms_in(g, S=2048, H=4096):
        return (torch.randn(S, H, generator=g, device=dev).to(bf), torch.rand(H, generator=g, device=dev).to(bf) + 0.5)

    att = write_syn(tmp, "att", "use nn;\nparam NH = 8, S = 512, D = 64;\n"
                    "op att(q: bf16[NH, S, D], k: bf16[NH, S, D], v: bf16[NH, S, D]) -> bf16[NH, S, D] {\n"
                    "    return attention(q, k, v);\n}\n")
    rms = write_syn(tmp, "rms", "use nn;\nparam S = 2048, H = 4096;\n"
                    "op rms(x: bf16[S, H], g: bf16[H]) -> bf16[S, H] {\n    return rmsnorm(x, g);\n}\n")
    # layernorm over the first dim: a block split over a group of CTAs that
    # meet in a global workspace, launched cooperatively (codegen/rows.c col_split)
    ln0 = write_syn(tmp, "ln0", "param S = 50304, H = 1024, eps = 1e-5;\n"
                    "op ln0(x: bf16[S, H], g: bf16[S, 1], b: bf16[S, 1]) -> bf16[S, H] {\n"
                    "    let xf = cast(x, f32);\n    let d = xf - mean(xf, 0);\n"
                    "    return cast(d * rsqrt(mean(d * d, 0) + eps) * cast(g, f32) + cast(b, f32), bf16);\n}\n")

    def ln0_in(g, S=50304, H=1024):
        return (torch.randn(S, H, generator=g, device=dev).to(bf), torch.rand(S, 1, generator=g, device=dev).to(bf) + 0.5,
                torch.randn(S, 1, generator=g, device=dev).to(bf))

    def ln0_ref(x, g, b):
        xf = x.float()
        d = xf - xf.mean(0, keepdim=True)
        return d * torch.rsqrt((d * d).mean(0, keepdim=True) + 1e-5) * g.float() + b.float()

    def sp_ref(x, w1, w2):  # silu, rounded to bf16 before the second matmul as the op does
        h = (x.float() @ w1.float()).to(bf).float()
        return (h * torch.sigmoid(h)).to(bf).float() @ w2.float()

    def att_ref(q, k, v):
        s = (q.float() @ k.float().transpose(1, 2)) / q.shape[-1] ** 0.5
        return torch.softmax(s, -1) @ v.float()

    def rms_ref(x, g):
        xf = x.float()
        return xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + 1e-5) * g.float()

    return [
        ("row_linear", os.path.join(ROOT, "examples/row_linear.syn"), dict(M=1024, N=1024, K=2048), "row_linear",
         rl_in, lambda x, w: x.float() @ w.float()),
        ("sp_mlp", os.path.join(ROOT, "examples/sp_mlp.syn"), dict(S=1024, H=1024, F=2048), "sp_mlp", sp_in, sp_ref),
        ("attention", att, {}, "att", att_in, att_ref),
        ("rmsnorm", rms, {}, "rms", rms_in, rms_ref),
        ("layernorm0", ln0, {}, "ln0", ln0_in, ln0_ref),
    ]


def step(label, what):
    """A progress line before each stage, so a hang names its stage (the
    first runs stopped silently after row_linear's load)."""
    print("%s: %s" % (label, what), flush=True)


def host_us(fn, n=2000):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / n * 1e6


def one(label, path, params, opname, make, ref, res):
    r = res.setdefault(label, {"checks": {}})
    ok = True
    t0 = time.time()
    mod = syncc.load(path, **params)
    print("%s: loaded in %.1f s" % (label, time.time() - t0), flush=True)
    op = getattr(mod, opname)
    g = torch.Generator(device="cuda")
    g.manual_seed(7)
    pool = [make(g) for _ in range(4)]
    step(label, "first eager call")
    eager = [op(*pool[0])]
    torch.cuda.synchronize()
    step(label, "first eager call done; three more")
    eager += [op(*ins) for ins in pool[1:]]
    torch.cuda.synchronize()
    e = max(rel_err(y, ref(*ins)) for y, ins in zip(eager, pool))
    r["checks"]["eager vs f32 torch"] = e
    ok &= e <= TOL

    # CUDA graph: static inputs, the call captured once, replayed
    static = [t.clone() for t in pool[0]]
    op(*static)  # warm-up outside the capture (and its first call was above)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    dump = os.environ.get("DUMP_GRAPH") == "1"
    if dump:
        graph.enable_debug_mode()
    step(label, "capture")
    with torch.cuda.graph(graph):
        out = op(*static)
    if dump:  # the captured nodes and edges, as Graphviz (DUMP_GRAPH=1)
        graph.debug_dump(os.path.join(OUT, "graph.%s.dot" % label))
    step(label, "first replay")
    graph.replay()
    torch.cuda.synchronize()
    step(label, "%d replays" % REPLAYS)
    bad = 0
    for i in range(REPLAYS):
        k = i % len(pool)
        for s, t in zip(static, pool[k]):
            s.copy_(t)
        graph.replay()
        if not torch.equal(out, eager[k]):
            bad += 1
            if bad == 1:
                r["first_bad_replay"] = {"replay": i, "rel_err_vs_eager": rel_err(out, eager[k])}
    torch.cuda.synchronize()
    r["checks"]["graph replays differing from eager (of %d)" % REPLAYS] = bad
    ok &= bad == 0
    # an eager call after the replays still right (its epoch above the captured one)
    step(label, "eager after replays")
    y = op(*pool[1])
    r["checks"]["eager after replays equal"] = int(torch.equal(y, eager[1]))
    ok &= torch.equal(y, eager[1])
    # and replays and eager calls interleaved after that, each against its input set
    step(label, "replays and eager calls interleaved")
    mixed = 0
    for i in range(20):
        k = i % len(pool)
        for s, t in zip(static, pool[k]):
            s.copy_(t)
        graph.replay()
        mixed += not torch.equal(out, eager[k])
        mixed += not torch.equal(op(*pool[(k + 1) % len(pool)]), eager[(k + 1) % len(pool)])
    torch.cuda.synchronize()
    r["checks"]["interleaved replays and eager calls differing (of 40)"] = mixed
    ok &= mixed == 0

    print("%s: eager %.2e, %d of %d replays differ" % (label, r["checks"]["eager vs f32 torch"], bad, REPLAYS), flush=True)
    if label not in COMPILE_CASES:
        return finish(op, pool, graph, label, r, ok)

    # torch.compile(fullgraph=True) around the op
    def f(*ins):
        a = op(*(ins[0] * 1, ) + tuple(ins[1:]))
        return a.float() * 2 + 1

    step(label, "torch.compile")
    want = f(*pool[2])
    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True)
    got = cf(*pool[2])
    got2 = cf(*pool[3])
    torch.cuda.synchronize()
    r["checks"]["torch.compile(fullgraph) vs eager"] = e = max(rel_err(got, want), rel_err(got2, f(*pool[3])))
    ok &= e <= 1e-3
    print("%s: torch.compile rel err %.2e" % (label, e), flush=True)
    return finish(op, pool, graph, label, r, ok)


def finish(op, pool, graph, label, r, ok):
    """The profiler's names and the host and device times of one case."""
    opname = op.__name__
    # torch.profiler names it
    from torch.profiler import profile, ProfilerActivity
    step(label, "profiler")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        op(*pool[0])
        torch.cuda.synchronize()
    names = [ev.key for ev in prof.key_averages()]
    hit = [n for n in names if n.startswith("syncc::" + opname)]
    r["checks"]["profiler shows syncc::%s" % opname] = hit[:1]
    ok &= bool(hit)

    # host time per call
    step(label, "host and device times")
    r["host_us_eager_call"] = round(host_us(lambda: op(*pool[0])), 1)
    r["host_us_graph_replay"] = round(host_us(graph.replay), 1)
    if label == "row_linear":
        x, w = pool[0]
        r["host_us_torch_matmul"] = round(host_us(lambda: x @ w), 1)
    # device time per call, back-to-back, eager vs replay
    for name, fn in (("eager", lambda: op(*pool[0])), ("graph", graph.replay)):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(10):
            fn()
        a.record()
        for _ in range(50):
            fn()
        b.record()
        b.synchronize()
        r["ms_%s_b2b" % name] = round(a.elapsed_time(b) / 50, 4)
    r["ok"] = bool(ok)
    print("%s: %s" % (label, json.dumps(r)), flush=True)
    return ok


def first_call_in_capture(tmp, res):
    """A fresh op's first call inside a capture: a SynccError naming the fix."""
    p = write_syn(tmp, "fresh", "param S = 256, H = 512;\nop fresh(x: bf16[S, H]) -> bf16[S, H] {\n"
                  "    return x * 2;\n}\n")
    mod = syncc.load(p)
    x = torch.randn(256, 512, device="cuda").to(torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    msg = None
    try:
        with torch.cuda.graph(graph):
            mod.fresh(x)
    except syncc.SynccError as e:
        msg = str(e)
    except Exception as e:  # the capture's own error, if ours did not come first
        msg = "not a SynccError: %r" % e
    torch.cuda.synchronize()
    ok = bool(msg) and "call it once before capturing" in msg
    # and the module still works after
    y = mod.fresh(x)
    ok = ok and torch.equal(y, x * 2)
    res["first call inside capture"] = {"message": msg, "ok": ok}
    return ok


def buckets(res):
    """row_linear loaded with M=[256, 512, 1024]: each call goes to the
    bucket its shapes match, checked against torch; M = 300 must raise."""
    mod = syncc.load(os.path.join(ROOT, "examples/row_linear.syn"), M=[256, 512, 1024], N=1024, K=2048)
    dev = torch.device("cuda", 0)
    errs = {}
    for m in (1024, 256, 512, 256):
        x = torch.randn(m, 2048, device=dev).to(torch.bfloat16)
        w = (torch.randn(2048, 1024, device=dev) / 2048 ** 0.5).to(torch.bfloat16)
        errs[m] = rel_err(mod.row_linear(x, w), x.float() @ w.float())
    msg = None
    try:
        mod.row_linear(torch.randn(300, 2048, device=dev).to(torch.bfloat16), w)
    except syncc.ArgumentError as e:
        msg = str(e)
    ok = all(e <= TOL for e in errs.values()) and bool(msg) and "match no bucket" in msg
    res["buckets M=[256, 512, 1024]"] = {"rel_err": errs, "M=300": msg, "ok": ok}
    mod.close()
    return ok


def main():
    os.makedirs(OUT, exist_ok=True)
    # every thread's Python stack once a minute while it runs: a hang says where
    faulthandler.dump_traceback_later(int(os.environ.get("STACK_EVERY_S", "60")), repeat=True)
    torch.cuda.set_device(0)
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "replays": REPLAYS}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        only = [x for x in os.environ.get("CASES", "").split(",") if x]
        for c in cases(tmp):
            if only and c[0] not in only:
                continue
            try:
                ok &= one(*c, res)
            except Exception:
                res.setdefault(c[0], {})["error"] = traceback.format_exc()
                print(traceback.format_exc(), file=sys.stderr)
                ok = False
        extras = os.environ.get("EXTRAS", "1") == "1"
        try:
            if extras:
                step("buckets", "load and calls")
                ok &= buckets(res)
        except Exception:
            res["buckets"] = {"error": traceback.format_exc()}
            ok = False
        try:
            if extras:
                step("fresh", "first call inside a capture")
                ok &= first_call_in_capture(tmp, res)
        except Exception:
            res["first call inside capture"] = {"error": traceback.format_exc()}
            ok = False
    res["ok"] = bool(ok)
    tag = os.environ.get("CASES", "").replace(",", "+") or "all"
    with open(os.path.join(OUT, "torch_graph.%s.json" % tag), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
