"""The cases of tests/overlap/suite.py, run in a process of their own (a
process group is per process): `cases.py WORLD [CASE...]` runs every case
for that world size and prints one JSON line per case, {"case", "ok",
"why"}; WORLD 0 is a process with no process group.

WORLD 2: torch.distributed's fake process group (FakeStore), graphs traced
with fake tensors (make_fx) or through torch.compile with the pass as the
backend; what is checked is the match, the .syn written (and syncc
compiling it for 2 ranks), the replaced graph and the log lines.  WORLD 1:
gloo over a HashStore, where the collectives are identities, so the
replaced graph runs: a stand-in op (the replaced nodes, run by torch) on
CPU must give the eager result, which checks the wiring of arguments and
results (the .syn's own numbers need the GPU: tests/gpu/overlap_check.py).
"""
import functools
import json
import logging
import os
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import syncc  # noqa: E402
from syncc import build, torchop  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as fcol  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

CACHE = tempfile.mkdtemp(prefix="syncc-overlap-test-")
WORLD = int(sys.argv[1]) if len(sys.argv) > 1 else 2
TOOLS = build.find_tools()


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, rec):
        self.lines.append(rec.getMessage())


LOG = Lines()
logging.getLogger("syncc.overlap").addHandler(LOG)
logging.getLogger("syncc.overlap").setLevel(logging.INFO)


def standin(m, cache):
    """The loader tests use: syncc compiles the .syn for the world (no
    launcher: no libsyncrt here), and the op is a CPU torch operator with
    the signature's fake implementation whose kernel runs the nodes it
    replaced."""
    path = syncc.torch.write_syn(m, CACHE)
    b = build.compile_file(path, {}, m.world, cache=CACHE, link=False, tools=TOOLS)
    sig = b.sig.ops[m.name]
    ref = m.reference_gm
    return torchop.register(sig, "standin", lambda ts: ref(*ts), torch.device("cpu"), dispatch="CPU")


def trace(f, *shapes, dtype=torch.bfloat16, mode="fake"):
    if mode == "symbolic":  # make_fx makes its own symbolic fake tensors from real ones
        args = tuple(torch.randn(*s, dtype=dtype) for s in shapes)
    else:
        with FakeTensorMode():
            args = tuple(torch.randn(*s, dtype=dtype) for s in shapes)
    return make_fx(f, tracing_mode=mode)(*args), args


def rewrite(gm, args, **kw):
    del LOG.lines[:]
    gm = syncc.torch.overlap(gm, args, load=standin, cache=CACHE, **kw)
    return gm, gm.meta["syncc_overlap"], list(LOG.lines)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def calls(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and str(n.target).startswith("syncc.")]


def collectives(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and "_c10d_functional" in str(n.target)]


def has_line(lines, *parts):
    hit = [ln for ln in lines if all(p in ln for p in parts)]
    expect(hit, "no log line with %s in:\n  %s" % (parts, "\n  ".join(lines)))
    return hit[0]


def in_order(text, *parts):
    pos = 0
    for p in parts:
        i = text.find(p, pos)
        expect(i >= 0, "the .syn lacks %r (in order) in:\n%s" % (p, text))
        pos = i + len(p)


def world():
    return dist.group.WORLD


# -- world 2: the match, the .syn, the replaced graph, the log --

def c_ar_bias_residual_rmsnorm():
    """Row-parallel linear as RowwiseParallel lowers it (the bias / P on
    every rank before the all_reduce), a residual add and an rmsnorm
    after it, the inputs vouched for (assume_replicated)."""
    def f(x, w, b, r, g):
        y = fcol.all_reduce(F.linear(x, w, b / 2), "sum", world())
        h = y + r
        return h, F.rms_norm(h, (64,), g, 1e-6)
    gm, args = trace(f, (32, 32), (64, 32), (64,), (32, 64), (64,))
    gm, rep, lines = rewrite(gm, args, assume_replicated=True)
    expect(len(rep.replaced) == 1, "one match: %s" % rep.lines())
    m = rep.replaced[0]
    t = m.text()
    in_order(t, "a0: bf16[32, 64] @split(1)", "a1: bf16[64, 64] @split(1)", "a2: bf16[64] @partial(sum)",
             "a3: bf16[32, 64] @repl", "a4: bf16[64] @repl", "-> (bf16[32, 64] @repl, bf16[32, 64] @repl)",
             "a0 @ transpose(a1)", "+ a2", "all_reduce(v1, sum)", "v3 = v2 + a3", "mean(", "e-07", "rsqrt(",
             "a4", "return (v3, v")
    if torch.__version__ >= "2.5":  # 2.4 decomposes a bf16 rms_norm in bf16, later ones in f32
        in_order(t, "cast(v3, f32)", "mean(", "9.999999974752427e-07", "rsqrt(", "cast(a4, f32)", "bf16)")
    (c,) = calls(gm)
    expect([a.name for a in c.args] == ["x_1", "w_1", "div", "r_1", "g_1"], "call args %s" % [a.name for a in c.args])
    expect(not collectives(gm), "no collective left: %s" % collectives(gm))
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    expect([a.target for a in out.args[0]] == [__import__("operator").getitem] * 2, "the outputs are the op's results")
    has_line(lines, "replaced all_reduce (matmul + bias -> all_reduce -> add -> rmsnorm) by syncc op " + m.name)


def c_ar_unproven():
    """The same graph without assume_replicated: the residual is a graph
    input nothing shows replicated, so the match stops before it."""
    def f(x, w, r):
        return fcol.all_reduce(x @ w, "sum", world()) + r
    gm, args = trace(f, (32, 32), (32, 64), (32, 64))
    gm, rep, lines = rewrite(gm, args)
    expect(len(rep.replaced) == 1, "one match: %s" % rep.lines())
    t = rep.replaced[0].text()
    in_order(t, "a0: bf16[32, 64] @split(1)", "a1: bf16[64, 64] @split(0)", "-> bf16[32, 64] @repl", "a0 @ a1",
             "all_reduce(v0, sum)")
    expect("a2" not in t, "no residual argument:\n" + t)
    has_line(lines, "kept in torch add:", "r_1 would be an @repl argument", "nothing shows it is the same on every rank",
             "a graph input", "assume_replicated=True")
    expect(any(n.target == torch.ops.aten.add.Tensor for n in gm.graph.nodes), "the add stays in the graph")


def c_rs_residual_layernorm():
    """matmul -> reduce_scatter: the residual after it is this rank's rows
    (@split(0), any data); the layernorm's weight and bias need @repl."""
    def f(x, w, r, g, b):
        y = fcol.reduce_scatter_tensor(x @ w, "sum", 0, world()) + r
        return F.layer_norm(y, (64,), g, b, 1e-5)
    gm, args = trace(f, (2, 16, 32), (32, 64), (1, 16, 64), (64,), (64,))
    gm0 = gm
    gm, rep, lines = rewrite(gm, args)
    t = rep.replaced[0].text()
    in_order(t, "a0: bf16[32, 64] @split(1)", "a1: bf16[64, 64] @split(0)", "a2: bf16[32, 64] @split(0)",
             "-> bf16[32, 64] @split(0)", "reduce_scatter(v0, 0, sum)", "v2 = v1 + a2")
    has_line(lines, "kept in torch native_layer_norm:", "would be an @repl argument")
    gm, args = trace(f, (2, 16, 32), (32, 64), (1, 16, 64), (64,), (64,))
    gm, rep, lines = rewrite(gm, args, assume_replicated=True)
    t = rep.replaced[0].text()
    in_order(t, "a3: bf16[64] @repl", "a4: bf16[64] @repl", "reduce_scatter(", "- mean(", "rsqrt(", "1.0e-05",
             "cast(a3, f32)", "cast(a4, f32)")
    (c,) = calls(gm)
    r = c.args[2]
    expect(r.target == torch.ops.aten.view.default and r.args[0].name == "r_1" and list(r.args[1]) == [16, 64],
           "the 3-D residual is passed as a [16, 64] view: %s" % (c.args,))
    has_line(lines, "replaced reduce_scatter_tensor (matmul -> reduce_scatter -> add -> layernorm)")
    del gm0


def c_ag_prologue_gelu():
    """Sequence parallel: rmsnorm on this rank's rows, all_gather, a
    column-parallel linear with bias, tanh gelu."""
    def f(x, g, w, b):
        xn = F.rms_norm(x, (64,), g)
        return F.gelu(F.linear(fcol.all_gather_tensor(xn, 0, world()), w, b), approximate="tanh")
    gm, args = trace(f, (16, 64), (64,), (64, 64), (64,))
    gm, rep, lines = rewrite(gm, args, assume_replicated=True)
    t = rep.replaced[0].text()
    in_order(t, "a0: bf16[32, 64] @split(0)", "a1: bf16[64] @repl", "a2: bf16[128, 64] @split(0)",
             "a3: bf16[128] @split(0)", "-> bf16[32, 128] @split(1)", "all_gather(", ", 0)", "@ transpose(a2)",
             "+ a3", "gelu(")
    expect("rsqrt(" in t.split("all_gather(")[0], "the rmsnorm comes before the all_gather:\n" + t)
    (c,) = calls(gm)
    expect([a.name for a in c.args] == ["x_1", "g_1", "w_1", "b_1"], "call args %s" % [a.name for a in c.args])
    has_line(lines, "replaced all_gather_into_tensor (", "rmsnorm -> all_gather -> matmul + bias -> gelu) by syncc op ovl_ag_")


def c_fused_rmsnorm():
    """rms_norm as torch traces it on CUDA (one aten._fused_rms_norm,
    its rstd unread) before an all_gather, eps None: float32's epsilon."""
    expect(hasattr(torch.ops.aten, "_fused_rms_norm"), "torch %s has no aten._fused_rms_norm: list the case in "
           "tests/overlap/suite.py's OLDER for this version" % torch.__version__)
    # make_fx on CPU decomposes the op, so the graph is built by hand
    import operator
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    aten, c10d = torch.ops.aten, torch.ops._c10d_functional
    g = torch.fx.Graph()
    x, gw, w = g.placeholder("x"), g.placeholder("g"), g.placeholder("w")
    rms = g.call_function(aten._fused_rms_norm.default, (x, [64], gw, None))
    xn = g.call_function(operator.getitem, (rms, 0))
    g.call_function(operator.getitem, (rms, 1))
    ag = g.call_function(c10d.all_gather_into_tensor.default, (xn, WORLD, world().group_name))
    g.output(g.call_function(aten.mm.default, (g.call_function(c10d.wait_tensor.default, (ag,)), w)))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    mode = FakeTensorMode()
    with mode:
        args = (torch.randn(16, 64, dtype=torch.bfloat16), torch.randn(64, dtype=torch.bfloat16),
                torch.randn(64, 64, dtype=torch.bfloat16))
    FakeTensorProp(gm, mode).propagate(*args)
    gm, rep, lines = rewrite(gm, args, assume_replicated=True)
    expect(len(rep.replaced) == 1, rep.lines())
    t = rep.replaced[0].text()
    in_order(t, "a1: bf16[64] @repl", "cast(a0, f32)", "rsqrt(mean(", "1.1920928955078125e-07", "cast(a1, f32), bf16)",
             "all_gather(v", "@ a2")
    expect(not any("rms_norm" in str(n.target) for n in gm.graph.nodes), "no rms_norm left")


def c_ag_qkv():
    """One all_gather read by three matmuls (q, k, v): one op, three
    results; q scaled by a number, which torch applies to bf16 in f32."""
    def f(x, wq, wk, wv):
        g = fcol.all_gather_tensor(x, 0, world())
        return F.linear(g, wq) * 0.7, F.linear(g, wk), F.linear(g, wv)
    gm, args = trace(f, (16, 64), (32, 64), (32, 64), (32, 64))
    gm, rep, lines = rewrite(gm, args)
    expect(len(rep.replaced) == 1, rep.lines())
    in_order(rep.replaced[0].text(), "-> (bf16[32, 64] @split(1), bf16[32, 64] @split(1), bf16[32, 64] @split(1))",
             "all_gather(a0, 0)", "@ transpose(a1)", "@ transpose(a2)", "@ transpose(a3)",
             "cast(cast(v1, f32) * 0.7, bf16)")
    expect(len(calls(gm)[0].users) == 3, "three results read")


def c_sp_mlp():
    """all_gather -> matmul -> silu -> matmul -> reduce_scatter: two
    matches, the second reading the first's result."""
    def f(x, w1, w2):
        h = F.silu(fcol.all_gather_tensor(x, 0, world()) @ w1)
        return fcol.reduce_scatter_tensor(h @ w2, "sum", 0, world())
    gm, args = trace(f, (16, 64), (64, 64), (64, 64))
    gm, rep, lines = rewrite(gm, args)
    expect(len(rep.replaced) == 2, rep.lines())
    in_order(rep.replaced[0].text(), "a1: bf16[64, 128] @split(1)", "-> bf16[32, 128] @split(1)", "silu(")
    in_order(rep.replaced[1].text(), "a0: bf16[32, 128] @split(1)", "a1: bf16[128, 64] @split(0)",
             "reduce_scatter(v0, 0, sum)")
    c1, c2 = calls(gm)
    expect(c2.args[0] is c1, "the second op reads the first's result: %s" % (c2.args,))
    expect(not collectives(gm), "no collective left")


def c_neg_group():
    """A collective over a group that is not the world is left alone."""
    sub = dist.new_group([0])

    def f(x, w):
        return fcol.all_reduce(x @ w, "sum", sub)
    gm, args = trace(f, (32, 32), (32, 64))
    gm, rep, lines = rewrite(gm, args)
    expect(not rep.replaced and collectives(gm), "not replaced")
    has_line(lines, "left alone all_reduce:", "holds ranks [0], not the whole world of 2")
    has_line(lines, "left alone mm: no world collective matched next to it")


def c_neg_dynamic():
    """Symbolic shapes (dynamic=True): left alone, saying so."""
    def f(x, w):
        return fcol.all_reduce(x @ w, "sum", world())
    gm, args = trace(f, (32, 32), (32, 64), mode="symbolic")
    gm, rep, lines = rewrite(gm, args)
    expect(not rep.replaced, "not replaced")
    has_line(lines, "left alone all_reduce:", "dynamic shape", "static shapes")


def c_neg_not_matmul():
    """gelu between the matmul and the all_reduce acts on each rank's
    partial sum: no .syn form; an erf gelu after an all_gather matmul has
    none either (the match keeps the matmul and stops there)."""
    def f(x, w):
        return fcol.all_reduce(F.gelu(x @ w, approximate="tanh"), "sum", world())
    gm, args = trace(f, (32, 32), (32, 64))
    gm, rep, lines = rewrite(gm, args)
    expect(not rep.replaced, "not replaced")
    has_line(lines, "left alone all_reduce:", "gelu", "not a matmul or linear in one", "partial sum")

    def g(x, w):
        return F.gelu(fcol.all_gather_tensor(x, 0, world()) @ w)
    gm, args = trace(g, (16, 64), (64, 64))
    gm, rep, lines = rewrite(gm, args)
    expect(len(rep.replaced) == 1 and "gelu" not in rep.replaced[0].text(), rep.lines())
    has_line(lines, "kept in torch gelu:", "approximate='none' (erf)", "syncc has no erf")


def c_neg_dtype_layout():
    """float64 and a transposed (non-contiguous) input are left alone."""
    def f(x, w):
        return fcol.all_reduce(x @ w, "sum", world())
    gm, args = trace(f, (32, 32), (32, 64), dtype=torch.float64)
    gm, rep, lines = rewrite(gm, args)
    expect(not rep.replaced, "f64 not replaced")
    has_line(lines, "left alone all_reduce:", "torch.float64", "float32, bfloat16 and float16")

    def g(x, w):
        return fcol.all_reduce(x.t() @ w, "sum", world())
    gm, args = trace(g, (32, 32), (32, 64))
    gm, rep, lines = rewrite(gm, args)
    expect(not rep.replaced, "a transposed x is not replaced")
    has_line(lines, "left alone all_reduce:", "is not contiguous", "row-major")


def c_neg_compile_error():
    """A compile failure leaves the graph as it was, saying so."""
    def f(x, w):
        return fcol.all_reduce(x @ w, "sum", world())
    gm, args = trace(f, (32, 32), (32, 64))

    def broken(m, cache):
        syncc.torch.write_syn(m, CACHE)
        raise syncc.CompileError("x.syn:1:1: error: made up")
    del LOG.lines[:]
    gm = syncc.torch.overlap(gm, args, load=broken, cache=CACHE)
    expect(collectives(gm) and not calls(gm), "unchanged")
    has_line(LOG.lines, "left alone all_reduce:", "syncc could not build the op it wrote", ".syn", "made up")


def tp_block(H=64, F_=128):
    class Block(nn.Module):
        """A transformer block's shape: layernorm, attention-like q -> silu
        -> o projection (no softmax: the pass does not match attention),
        residual, rmsnorm, gelu MLP, residual."""

        def __init__(self):
            super().__init__()
            self.ln, self.norm = nn.LayerNorm(H), nn.RMSNorm(H)
            self.q, self.o = nn.Linear(H, H), nn.Linear(H, H, bias=False)
            self.up, self.down = nn.Linear(H, F_), nn.Linear(F_, H)

        def forward(self, x):
            h = self.o(F.silu(self.q(self.ln(x)))) + x
            return self.down(F.gelu(self.up(self.norm(h)), approximate="tanh")) + h
    return Block()


def c_tp_block():
    """The block under torch.distributed.tensor.parallel (q, up
    ColwiseParallel; o, down RowwiseParallel), compiled with the pass as
    torch.compile's backend: the two all_reduce pairs are replaced, with
    their residual adds and the rmsnorm between them.  Everything is a
    DTensor (the input a replicated one, the norms' weights distributed
    as replicated), so the pass knows what is replicated."""
    from torch.distributed.device_mesh import init_device_mesh
    try:
        from torch.distributed.tensor import distribute_module, distribute_tensor, Replicate
    except ImportError:  # torch 2.4
        from torch.distributed._tensor import distribute_module, distribute_tensor, Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (WORLD,))
    torch.manual_seed(0)
    m = tp_block()
    m = parallelize_module(m, mesh, {"q": ColwiseParallel(use_local_output=False), "o": RowwiseParallel(use_local_output=False),
                                     "up": ColwiseParallel(use_local_output=False),
                                     "down": RowwiseParallel(use_local_output=False)})
    distribute_module(m.norm, mesh)
    distribute_module(m.ln, mesh)
    x = distribute_tensor(torch.randn(2, 16, 64), mesh, [Replicate()])
    del LOG.lines[:]
    with torch.no_grad():
        torch.compile(m, backend=functools.partial(syncc.torch.overlap, load=standin, cache=CACHE), fullgraph=True)(x)
    rep = syncc.torch.last_report
    lines = list(LOG.lines)
    expect(len(rep.replaced) == 2, "two matches: %s" % rep.lines())
    in_order(rep.replaced[0].text(), "a2: f32[32, 64] @repl", "a3: f32[64] @repl", "all_reduce(", "+ a2",
             "rsqrt(", "return (v2, v")
    in_order(rep.replaced[1].text(), "a2: f32[64] @partial(sum)", "all_reduce(", "+ a3")
    has_line(lines, "replaced all_reduce (matmul -> all_reduce -> add -> rmsnorm)")
    has_line(lines, "replaced all_reduce_1 (matmul + bias -> all_reduce -> add)")
    has_line(lines, "kept in torch addmm_1:", "a matmul after the match")
    has_line(lines, "left alone addmm: no world collective matched next to it")
    print("tp-block pairs: " + " | ".join(rep.lines()), file=sys.stderr)


def c_tp_block_plain():
    """The same block called with a plain tensor (the usual
    ColwiseParallel input): the residual and the norm weights are not
    known to be replicated, so each match is the matmul and its
    all_reduce alone, and the log says why it stopped."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (WORLD,))
    m = parallelize_module(tp_block(), mesh, {"q": ColwiseParallel(), "o": RowwiseParallel(), "up": ColwiseParallel(),
                                              "down": RowwiseParallel()})
    del LOG.lines[:]
    with torch.no_grad():
        torch.compile(m, backend=functools.partial(syncc.torch.overlap, load=standin, cache=CACHE),
                      fullgraph=True)(torch.randn(2, 16, 64))
    rep = syncc.torch.last_report
    expect(len(rep.replaced) == 2, rep.lines())
    has_line(list(LOG.lines), "kept in torch add:", "would be an @repl argument", "a graph input")


# -- world 1: the replaced graph runs --

def manual_block(H=64, F_=128, sp=False):
    """The block written with functional collectives by hand (Megatron
    style: this rank's weight pieces, explicit all_reduce, or all_gather
    and reduce_scatter for sequence parallelism).  At world size 1 the
    collectives are identities; unlike DTensor's, these stay in the graph."""
    class Manual(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(H)
            self.up, self.down = nn.Linear(H, F_), nn.Linear(F_, H)

        def forward(self, x):
            g = dist.group.WORLD
            if sp:
                xn = fcol.all_gather_tensor(self.norm(x), 0, g)
                h = F.gelu(self.up(xn), approximate="tanh")
                return fcol.reduce_scatter_tensor(F.linear(h, self.down.weight), "sum", 0, g) + x
            h = F.gelu(self.up(self.norm(x)), approximate="tanh")
            return fcol.all_reduce(F.linear(h, self.down.weight, self.down.bias / dist.get_world_size()), "sum", g) + x
    return Manual()


def _run_world1(sp):
    torch.manual_seed(1)
    m = manual_block(sp=sp)
    x = torch.randn(32, 64)
    with torch.no_grad():
        want = m(x)
        got = torch.compile(m, backend=functools.partial(syncc.torch.overlap, load=standin, cache=CACHE,
                                                         assume_replicated=True), fullgraph=True)(x)
    rep = syncc.torch.last_report
    expect(len(rep.replaced) == (2 if sp else 1), "matches at world size 1: %s" % rep.lines())
    err = (got - want).abs().max().item()
    expect(err <= 1e-5, "the replaced graph against eager: max abs diff %g" % err)
    return rep


def c_w1_ar_block():
    """World size 1: the pass still matches (the all_reduce is in the
    graph), the replaced graph gives eager's result."""
    rep = _run_world1(sp=False)
    in_order(rep.replaced[0].text(), "at world size 1", "all_reduce(")


def c_w1_sp_block():
    """World size 1, sequence parallel: all_gather (with the rmsnorm
    before it) and reduce_scatter (with the residual after it)."""
    rep = _run_world1(sp=True)
    in_order(rep.replaced[0].text(), "all_gather(", "gelu(")
    in_order(rep.replaced[1].text(), "reduce_scatter(", "+ a2")


def c_w1_dtensor_no_collective():
    """DTensor on a 1-rank mesh emits no collective at all: nothing to
    match, which the GPU check must not take for a pass that works (it
    uses the manual block)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (1,))
    m = parallelize_module(tp_block(), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    del LOG.lines[:]
    with torch.no_grad():
        torch.compile(m, backend=functools.partial(syncc.torch.overlap, load=standin, cache=CACHE),
                      fullgraph=True)(torch.randn(2, 16, 64))
    rep = syncc.torch.last_report
    expect(not rep.replaced and not any("all_reduce" in ln for ln in LOG.lines), rep.lines())
    has_line(list(LOG.lines), "no world collective matched next to it")


def c_no_process_group():
    """Without torch.distributed initialised there is no world to compile
    for: every collective is left alone, saying so."""
    def f(x, w):
        return fcol.all_reduce(x @ w, "sum", "0")
    x, w = torch.randn(32, 32), torch.randn(32, 64)
    gm = make_fx(f, tracing_mode="fake")(x, w)
    gm, rep, lines = rewrite(gm, (x, w))
    expect(not rep.replaced and collectives(gm), "unchanged")
    has_line(lines, "left alone all_reduce: torch.distributed is not initialised: no world to compile for")


CASES = {2: [c_ar_bias_residual_rmsnorm, c_ar_unproven, c_rs_residual_layernorm, c_ag_prologue_gelu, c_fused_rmsnorm,
             c_ag_qkv, c_sp_mlp,
             c_neg_group, c_neg_dynamic, c_neg_not_matmul, c_neg_dtype_layout, c_neg_compile_error, c_tp_block,
             c_tp_block_plain],
         1: [c_w1_ar_block, c_w1_sp_block, c_w1_dtensor_no_collective],
         0: [c_no_process_group]}


def main():
    if WORLD == 1:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    elif WORLD == 2:
        from torch.testing._internal.distributed.fake_pg import FakeStore
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    import shutil
    only = sys.argv[2:]
    for c in CASES[WORLD]:
        name = c.__name__[2:]
        if only and name not in only:
            continue
        torch._dynamo.reset()
        try:
            c()
            print(json.dumps({"case": name, "ok": True}), flush=True)
        except Exception as e:
            print(json.dumps({"case": name, "ok": False, "why": "%s\n%s" % (e, traceback.format_exc()[-3000:])}),
                  flush=True)
    shutil.rmtree(CACHE, ignore_errors=True)


if __name__ == "__main__":
    main()
