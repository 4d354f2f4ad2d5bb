"""syncc.torch.overlap: a torch.compile backend (and a pass on FX graphs)
that swaps tensor-parallel `matmul -> all_reduce`, `matmul ->
reduce_scatter` and `all_gather -> matmul` pairs, with the elementwise ops
and norms around them, for syncc ops that overlap the collective with the
matmul:

    model = torch.compile(model, backend=syncc.torch.overlap)
    gm = syncc.torch.overlap(gm, example_inputs)     # an ATen-level FX graph

What it left alone it says, one line each, on the logger "syncc.overlap"
(SYNCC_LOGS=overlap prints them on stderr; +overlap also each .syn it
writes).  The pass itself is syncc/overlap.py; docs/python.md says what it
matches and where it stops.  Nothing here imports torch until called."""
import logging
import os
import sys

log = logging.getLogger("syncc.overlap")

_loaded = {}  # .syn path -> syncc.Module: an op's context lives as long as the process
last_report = None


def _logging_from_env():
    """SYNCC_LOGS=overlap (INFO: what was replaced and what was left, with
    why) or +overlap (DEBUG: and the .syn text), as TORCH_LOGS names its
    components."""
    want = [w.strip() for w in os.environ.get("SYNCC_LOGS", "").split(",")]
    level = logging.DEBUG if "+overlap" in want else logging.INFO if "overlap" in want else None
    if level is None or getattr(log, "_syncc_handler", None):
        return
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("[syncc.overlap] %(message)s"))
    log.addHandler(h)
    log.setLevel(level)
    log._syncc_handler = h


_logging_from_env()


class Report:
    """What one run of the pass did: `replaced` (overlap.Match each, with
    .name, .path, .text(), .args, .outputs), `left` ((node name, why)
    for each collective and matmul left to torch) and `kept` ((node name,
    why) where a match stopped growing)."""

    def __init__(self):
        self.replaced, self.left, self.kept = [], [], []

    def lines(self):
        from .overlap import summary
        out = ["replaced %s (%s) by syncc op %s from %s" % (m.seed_name, summary(m.pattern), m.name, m.path)
               for m in self.replaced]
        out += ["left alone %s: %s" % nw for nw in self.left]
        out += ["kept in torch %s: %s" % nw for nw in self.kept]
        return out


def _is_aten(gm):
    """An ATen-level graph (AOTAutograd's, make_fx's): every call is an
    operator overload or getitem."""
    import torch
    for n in gm.graph.nodes:
        if n.op in ("call_module", "call_method"):
            return False
        if n.op == "call_function" and not isinstance(n.target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)) \
                and getattr(n.target, "__name__", "") != "getitem":
            return False
    return True


def _world():
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return None


def _replicated_inputs(example_inputs):
    """Indices of inputs that are DTensors replicated over a 1-D mesh of
    the whole world."""
    try:
        from torch.distributed.tensor import DTensor, Replicate
    except ImportError:  # torch 2.4: not public yet
        try:
            from torch.distributed._tensor import DTensor, Replicate
        except ImportError:
            return set()
    out = set()
    for i, x in enumerate(example_inputs):
        if isinstance(x, DTensor) and all(isinstance(p, Replicate) for p in x.placements) \
                and x.device_mesh.size() == (_world() or 0):
            out.add(i)
    return out


def overlap(gm, example_inputs, *, assume_replicated=False, load=None, cache=None):
    """The pass, as a torch.compile backend or on an FX GraphModule.

    Given the graph dynamo makes, it runs AOTAutograd and rewrites the
    forward (inference) graph it gives, which then runs as FX (as
    backend="aot_eager" does); given an ATen-level graph, it rewrites that
    in place and returns it.  assume_replicated: the graph inputs hold the
    same value on every rank (they are then taken as @repl arguments; a
    DTensor input with Replicate placements is taken so without it).
    load(match) -> torch operator replaces syncc.load (tests: a stand-in
    op on CPU); cache: the build cache (SYNCC_CACHE by default)."""
    if _is_aten(gm):
        return rewrite_graph(gm, example_inputs, assume_replicated=assume_replicated, load=load, cache=cache)
    from torch._dynamo.backends.common import aot_autograd
    from functorch.compile import make_boxed_func
    # AOTAutograd's forward graph takes the parameters dynamo kept on the
    # module (torch < 2.5 keeps them there), then the graph's inputs
    try:
        lifted = [p for _, p in gm.named_parameters(remove_duplicate=False)] + \
            [b for _, b in gm.named_buffers(remove_duplicate=False)]
    except Exception:
        lifted = []
    flat = {len(example_inputs): list(example_inputs), len(lifted) + len(example_inputs): lifted + list(example_inputs)}

    def fw(fgm, fex):
        ph = [n for n in fgm.graph.nodes if n.op == "placeholder"]
        inputs = flat.get(len(ph), [])
        # each vouched-for input must be the placeholder's tensor: its local shape
        idx = {i for i in _replicated_inputs(inputs)
               if tuple(getattr(ph[i].meta.get("val"), "shape", ())) == tuple(inputs[i].to_local().shape)}
        return rewrite_graph(fgm, fex, assume_replicated=assume_replicated, load=load, cache=cache,
                             replicated_inputs=idx)

    def bw(bgm, bex):
        log.info("left alone the backward graph: the pass rewrites forward graphs only")
        return make_boxed_func(bgm)

    return aot_autograd(fw_compiler=fw, bw_compiler=bw, inference_compiler=fw)(gm, example_inputs)


def rewrite_graph(gm, example_inputs=None, *, assume_replicated=False, load=None, cache=None, replicated_inputs=()):
    """The pass on an ATen-level GraphModule (in place); returns it, with
    gm.meta["syncc_overlap"] (and syncc.torch.last_report) the Report."""
    global last_report
    import torch
    from . import overlap as ov
    _logging_from_env()
    ops = ov.Ops(torch)
    report = Report()
    gm.meta["syncc_overlap"] = last_report = report
    world = _world()
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    vouched = ph if assume_replicated else [ph[i] for i in sorted(replicated_inputs) if i < len(ph)]

    def world_collective(c):
        k = ov.kind_of(ops, c)
        return k is not None and world is not None and ov.group_check(c, k, world) is None

    evidence = ov.Evidence(ops, vouched, world_collective)
    matcher = ov.Matcher(gm, ops, world, evidence)
    seen, stops = set(), []
    while True:
        c = next((n for n in gm.graph.nodes if ops.is_collective(n) and n not in seen), None)
        if c is None:
            break
        seen.add(c)
        _one(gm, c, ops, world, matcher, evidence, report, load, cache, torch, stops)
    # where a match stopped, unless a later match took the node
    alive = set(gm.graph.nodes)
    for n, why in stops:
        if n in alive:
            report.kept.append((n.name, why))
            log.info("kept in torch %s: %s", n.name, why)
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target in (ops.mm, ops.addmm):
            _left(report, n.name, "no world collective matched next to it")
    return gm


def _left(report, name, why):
    report.left.append((name, why))
    log.info("left alone %s: %s", name, why)


def _one(gm, c, ops, world, matcher, evidence, report, load, cache, torch, stops):
    """One collective: matched, compiled and replaced, or left with why."""
    from . import overlap as ov
    kind = ov.kind_of(ops, c)
    if kind is None:
        return _left(report, c.name, "%s is not one the pass matches (all_reduce, reduce_scatter_tensor, "
                     "all_gather_into_tensor)" % c.target)
    if world is None:
        return _left(report, c.name, "torch.distributed is not initialised: no world to compile for")
    why = ov.group_check(c, kind, world)
    if why:
        return _left(report, c.name, why)
    forbidden = set()
    while True:
        try:
            m = ov.match(matcher, c, kind, forbidden)
            break
        except ov.Retry as r:
            forbidden.add(r.node)
        except ov.Skip as e:
            return _left(report, c.name, str(e))
        except Exception as e:  # a bug in the pass: the graph stays as it was
            log.warning("the pass failed on %s: %r", c.name, e)
            return _left(report, c.name, "the pass failed on it (a bug in syncc): %r" % e)
    if load is None:
        bad = [a.node.name for a in m.args if getattr(ov.val_of(a.node), "device", None) is not None
               and ov.val_of(a.node).device.type != "cuda"]
        if bad:
            return _left(report, c.name, "%s on %s: syncc ops run on the GPU" % (
                ", ".join(bad), ov.val_of(m.args[0].node).device))
    body = m.text().replace("op None(", "op OP(")
    m.name = "ovl_%s_%s" % (ov.KINDS[kind], ov.digest(body))
    m.seed_name = c.name
    m.reference_gm = ov.reference(m, gm, torch)
    try:
        opfn = (load or _load)(m, cache)
    except Exception as e:  # a compile error or a load failure: the graph stays as it was
        first = str(e).strip().splitlines()
        return _left(report, c.name, "syncc could not build the op it wrote (%s): %s" % (
            m.path or "not written", first[0] if first else type(e).__name__))
    ov.rewrite(gm, m, opfn, torch, evidence)
    report.replaced.append(m)
    log.info("replaced %s (%s) by syncc op %s from %s", c.name, ov.summary(m.pattern), m.name, m.path)
    log.debug("%s:\n%s", m.path, m.text())
    stops.extend(m.stops.items())


def write_syn(m, cache=None):
    """The match's .syn file in the cache's overlap/ directory (its name is
    a digest of its text, so a second run finds the same file)."""
    from . import build
    d = os.path.join(cache or build.cache_root(), "overlap")
    os.makedirs(d, exist_ok=True)
    m.path = os.path.join(d, m.name + ".syn")
    text = m.text()
    if not os.path.exists(m.path):
        tmp = m.path + ".%d.tmp" % os.getpid()
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, m.path)
    return m.path


def _load(m, cache):
    """syncc.load of the match's op (collective: every rank loads the same
    ops in the same order, as every rank compiles the same graph)."""
    import syncc
    path = write_syn(m, cache)
    mod = _loaded.get(path)
    if mod is None:
        mod = _loaded[path] = syncc.load(path, cache=cache)
    return mod.ops[m.name].torch_op
