"""The rewrite pass behind syncc.torch.overlap, on an ATen-level FX graph
(what AOTAutograd gives a torch.compile backend, or make_fx): it finds a
world collective next to a matmul -- `matmul -> all_reduce`, `matmul ->
reduce_scatter`, `all_gather -> matmul` as torch's functional collectives
(_c10d_functional.* followed by wait_tensor) -- grows the match over the
elementwise ops and norms around it that a .syn op can say, writes that
op, and replaces the nodes with one call of it.

Soundness rests on one reading of the graph.  The graph is what ONE rank
runs on its local tensors; the .syn op is a function of global tensors
whose local pieces are those same tensors.  An argument declared
@split(d) or @partial(sum) means nothing about the other ranks (any local
data is some global tensor's piece), so it is always sound.  An argument
declared @repl claims every rank holds the same value: the op may compute
with it anywhere (pass_arsplit puts the work after an all_reduce on 1/P
of the rows, then gathers), so a rank whose copy differs would get other
ranks' arithmetic.  Such an argument is taken only where the graph shows
it is the same everywhere (the result of a world collective, of ops on
such results and constants, or a graph input the caller vouches for: a
replicated DTensor, or assume_replicated); elsewhere the match stops
before it and says why.

Every value in a match is handled as 2-D, [rows, cols]: torch's [B, S, H]
activations are viewed as [B*S, H] (a contiguous view, so a dim-0 split of
either is the same rows); 1-D [cols] tensors broadcast over the rows."""
import hashlib
import math
import operator

# a value's placement inside a match: the states of its local piece
PARTIAL, REPL, ROWS, COLS = "partial", "repl", "rows", "cols"

DTYPES = {"torch.float32": "f32", "torch.bfloat16": "bf16", "torch.float16": "f16"}
F32_EPS = 1.1920928955078125e-07  # torch.finfo(torch.float32).eps: rms_norm's eps=None for f32, bf16, f16

UNARY = {"rsqrt": "rsqrt", "sqrt": "sqrt", "exp": "exp", "log": "log", "tanh": "tanh", "sigmoid": "sigmoid",
         "abs": "abs", "neg": "-", "relu": "relu", "silu": "silu"}
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
BINARY_NAMES = {s: n for n, s in BINARY.items()}


class Skip(Exception):
    """A node or a match the pass leaves to torch; the message is why."""


class Val:
    """A value inside a match: its .syn expression (a let name or an
    argument), its state, local 2-D shape [rows, cols] and dtype."""

    def __init__(self, expr, state, shape, dtype):
        self.expr, self.state, self.shape, self.dtype = expr, state, tuple(shape), dtype


class Arg:
    def __init__(self, node, name, dtype, local, placement, dim, view):
        self.node, self.name, self.dtype, self.local = node, name, dtype, tuple(local)
        self.placement, self.dim = placement, dim  # "repl" | "split" | "partial"; the split dim
        self.view = view  # the local shape the call passes (a view of the node), or None: the node as it is

    def type(self, world):
        shape = list(self.local)
        if self.placement == "split":
            shape[self.dim] *= world
        place = "@split(%d)" % self.dim if self.placement == "split" else "@" + {"repl": "repl", "partial": "partial(sum)"}[
            self.placement]
        return "%s[%s] %s" % (self.dtype, ", ".join(str(s) for s in shape), place)


class Ops:
    """The ATen operators the pass reads, looked up once per torch."""

    def __init__(self, torch):
        a = torch.ops.aten
        self.torch = torch
        c10d = getattr(torch.ops, "_c10d_functional")
        self.all_reduce = {c10d.all_reduce.default}
        self.reduce_scatter = {c10d.reduce_scatter_tensor.default}
        self.all_gather = {c10d.all_gather_into_tensor.default}
        self.wait = {c10d.wait_tensor.default}
        self.collective_names = ("all_reduce", "reduce_scatter_tensor", "all_gather_into_tensor", "all_to_all_single",
                                 "broadcast", "all_reduce_", "all_gather_into_tensor_coalesced",
                                 "reduce_scatter_tensor_coalesced", "all_reduce_coalesced")
        self.mm, self.addmm = a.mm.default, a.addmm.default
        self.views = {a.view.default, a._unsafe_view.default, a.reshape.default}
        self.transposes = {a.t.default, a.transpose.int, a.permute.default}
        self.casts = {a._to_copy.default}
        prims = getattr(torch.ops, "prims", None)
        if prims is not None and hasattr(prims, "convert_element_type"):
            self.casts.add(prims.convert_element_type.default)
        self.mean = {a.mean.dim}
        self.pow = {a.pow.Tensor_Scalar}
        self.gelu = {a.gelu.default}
        self.layer_norm = {a.native_layer_norm.default}
        self.rms_norm = {getattr(a, n).default for n in ("_fused_rms_norm", "rms_norm") if hasattr(a, n)}
        self.unary, self.binary = {}, {}
        for name, s in UNARY.items():
            for ov in self._overloads(a, name, ("default",)):
                self.unary[ov] = s
        for name, s in BINARY.items():
            for ov in self._overloads(a, name, ("Tensor", "Scalar")):
                self.binary[ov] = s
        self.inplace = set()
        for name in list(UNARY) + list(BINARY):
            for ov in self._overloads(a, name + "_", ("default", "Tensor", "Scalar")):
                self.inplace.add(ov)
                (self.unary if name in UNARY else self.binary)[ov] = (UNARY.get(name) or BINARY[name])

    @staticmethod
    def _overloads(ns, name, kinds):
        pk = getattr(ns, name, None)
        return [getattr(pk, k) for k in kinds if pk is not None and hasattr(pk, k)]

    def is_collective(self, node):
        t = node.target
        return node.op == "call_function" and getattr(t, "namespace", None) in ("_c10d_functional", "c10d_functional") \
            and str(getattr(t, "_opname", "")) in self.collective_names


def val_of(node):
    v = node.meta.get("val") if hasattr(node, "meta") else None
    return v if v is not None else (node.meta.get("example_value") if hasattr(node, "meta") else None)


def _static_shape(node):
    """The node's shape as ints; Skip for a dynamic (symbolic) one or no metadata."""
    v = val_of(node)
    if v is None or not hasattr(v, "shape"):
        raise Skip("%s has no tensor metadata (meta['val']): trace with fake tensors (make_fx, AOTAutograd)" % node.name)
    out = []
    for s in v.shape:
        if not isinstance(s, int):
            try:
                import torch
                if isinstance(s, torch.SymInt) and s.node.is_symbolic():
                    raise Skip("%s has a dynamic shape (%s): syncc ops have static shapes; compile with "
                               "dynamic=False or mark_static" % (node.name, ", ".join(str(x) for x in v.shape)))
                s = int(s)
            except (TypeError, ValueError):
                raise Skip("%s has a dynamic shape (%s)" % (node.name, ", ".join(str(x) for x in v.shape)))
        out.append(int(s))
    return tuple(out)


def _dtype(node):
    v = val_of(node)
    dt = DTYPES.get(str(getattr(v, "dtype", None)))
    if dt is None:
        raise Skip("%s is %s: the pass handles float32, bfloat16 and float16" % (node.name, getattr(v, "dtype", "?")))
    return dt


def _contiguous(node):
    v = val_of(node)
    try:
        return bool(v.is_contiguous())
    except Exception:
        return False


def two_d(shape):
    """[.., C] as [rows, C]."""
    if len(shape) < 2:
        raise Skip("a %d-D value: the pass matches [rows, cols] activations (2-D or more)" % len(shape))
    return (math.prod(shape[:-1]), shape[-1])


def number(x):
    """A Python number as a .syn number literal."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise Skip("the constant %r is not a finite number" % (x,))
    s = repr(float(x))
    if "e" in s and "." not in s.split("e")[0]:
        m, e = s.split("e")
        s = m + ".0e" + e
    return s


class Match:
    """One match: the FX nodes it replaces, the .syn op it writes."""

    def __init__(self, kind, seed, world, ops, replicated):
        self.kind, self.seed, self.world, self.ops = kind, seed, world, ops
        self.replicated = replicated  # node -> True if it is the same on every rank (Evidence)
        self.nodes = []  # in the order added
        self.inside = set()
        self.vals = {}  # node -> Val
        self.args = []
        self._argkey = {}
        self.lines = []
        self.outputs = []  # (Val, [nodes]) in result order
        self.stops = {}  # node -> why the match did not take it
        self.name = self.path = self.op = None
        self.pattern = []  # ops in the order matched, for the log

    def save(self):
        """A point to go back to when a node proves untranslatable halfway."""
        return (len(self.nodes), set(self.inside), dict(self.vals), len(self.args), dict(self._argkey),
                len(self.lines), len(self.pattern))

    def restore(self, s):
        n, self.inside, self.vals, na, self._argkey, nl, np_ = s
        del self.nodes[n:], self.args[na:], self.lines[nl:], self.pattern[np_:]

    # -- the pieces of the .syn text --

    def _let(self, expr, state, shape, dtype, node):
        name = "v%d" % len(self.lines)
        self.lines.append("    let %s = %s;%s" % (name, expr, "  // %s" % node.name if node is not None else ""))
        return Val(name, state, shape, dtype)

    def _take(self, node, v, what=None):
        if node not in self.inside:
            self.inside.add(node)
            self.nodes.append(node)
        self.vals[node] = v
        if what:
            self.pattern.append(what)
        return v

    def arg(self, node, placement, dim=None, view=None, vec=False):
        """The op argument for an outside node: its local shape (as the call
        passes it) and placement."""
        if not hasattr(node, "op"):
            raise Skip("operand %r is not a tensor node" % (node,))
        dt = _dtype(node)
        shape = _static_shape(node)
        if not _contiguous(node):
            raise Skip("%s is not contiguous (strides %s): the op reads row-major tensors" % (
                node.name, tuple(val_of(node).stride())))
        local = shape if vec else (view or shape)
        key = (node, placement, dim, tuple(local))
        if key in self._argkey:
            return self._argkey[key]
        if placement == "repl" and self.world > 1 and not self.replicated(node):
            src = self.replicated.unproven_input(node)
            raise Skip("%s would be an @repl argument, but nothing shows it is the same on every rank (%s: pass "
                       "assume_replicated=True, or give it as a replicated DTensor)" % (
                           node.name, "a graph input" if src is node else "computed from %s, a graph input" % src.name
                           if src is not None else "not computed from collectives and vouched-for inputs alone"))
        a = Arg(node, "a%d" % len(self.args), dt, local, placement, dim, None if tuple(local) == shape else tuple(local))
        self.args.append(a)
        v = Val(a.name, {"repl": REPL, "partial": PARTIAL}.get(placement, ROWS if dim == 0 else COLS),
                local if len(local) == 2 else (1, local[0]), dt)
        self._argkey[key] = v
        return v

    def text(self):
        res = ["%s[%s] %s" % (v.dtype, ", ".join(str(s) for s in self.global_shape(v)), self.placement(v))
               for v, _ in self.outputs]
        results = res[0] if len(res) == 1 else "(%s)" % ", ".join(res)
        rets = [v.expr for v, _ in self.outputs]
        ret = rets[0] if len(rets) == 1 else "(%s)" % ", ".join(rets)
        head = ["// written by syncc.torch.overlap: %s at world size %d" % (summary(self.pattern), self.world),
                "// from the FX nodes %s" % ", ".join(n.name for n in self.nodes),
                "use nn;", "",
                "op %s(%s)" % (self.name, ", ".join("%s: %s" % (a.name, a.type(self.world)) for a in self.args)),
                "        -> %s {" % results]
        return "\n".join(head + self.lines + ["    return %s;" % ret, "}", ""])

    def global_shape(self, v):
        r, c = v.shape
        return (r * self.world, c) if v.state == ROWS else (r, c * self.world) if v.state == COLS else (r, c)

    @staticmethod
    def placement(v):
        return {REPL: "@repl", ROWS: "@split(0)", COLS: "@split(1)"}[v.state]


def summary(pattern):
    """The ops of a match for its log line, a decomposed rmsnorm (square,
    mean, add, rsqrt, mul, mul) said as one."""
    s = " -> ".join(pattern)
    for run, name in (("cast -> square -> mean -> add -> rsqrt -> mul -> mul -> cast", "rmsnorm"),
                      ("square -> mean -> add -> rsqrt -> mul -> mul", "rmsnorm")):
        s = s.replace(run, name)
    return s


class Matcher:
    """Grows one match from a collective node."""

    def __init__(self, gm, ops, world, replicated):
        self.gm, self.ops, self.world = gm, ops, world
        self.replicated = replicated  # an Evidence

    # -- helpers on nodes --

    def _after_region(self, node, m):
        """True if `node` is computed from a node of the match (it cannot
        then be an argument of the op that replaces the match)."""
        seen, todo = set(), [node]
        while todo:
            n = todo.pop()
            if n in m.inside:
                return True
            if n in seen or not hasattr(n, "all_input_nodes"):
                continue
            seen.add(n)
            todo.extend(n.all_input_nodes)
        return False

    def _weight(self, b, m, split_rows):
        """The B operand of a matmul: t(w) of a [N, K] weight (nn.Linear's
        layout; transposed in the .syn) or a [K, N] tensor.  split_rows:
        the contraction dim K is split (row-parallel), else N is
        (column-parallel).  Returns the .syn expression."""
        ops = self.ops
        if b.op == "call_function" and b.target in ops.transposes:
            if b.target == ops.torch.ops.aten.permute.default and list(b.args[1]) not in ([1, 0], [-1, -2], [-1, 0], [1, -2]):
                raise Skip("%s permutes to %s" % (b.name, b.args[1]))
            if b.target == ops.torch.ops.aten.transpose.int and sorted(int(d) % 2 for d in b.args[1:3]) != [0, 1]:
                raise Skip("%s transposes dims %s" % (b.name, b.args[1:3]))
            w = b.args[0]
            if len(_static_shape(w)) != 2:
                raise Skip("%s transposes a %d-D tensor" % (b.name, len(_static_shape(w))))
            # w: [N, K]; K split <=> dim 1 of w
            a = m.arg(w, "split", 1 if split_rows else 0)
            if len(b.users) == 1:
                m._take(b, None)
            return "transpose(%s)" % a.expr
        if len(_static_shape(b)) != 2:
            raise Skip("matmul operand %s is %d-D" % (b.name, len(_static_shape(b))))
        return m.arg(b, "split", 0 if split_rows else 1).expr

    def _alias(self, node):
        """The input of a view that keeps [rows, cols] (a flatten of the
        leading dims or its inverse), else None."""
        ops = self.ops
        if node.op != "call_function" or node.target not in ops.views:
            return None
        src = node.args[0]
        try:
            if two_d(_static_shape(src)) == two_d(_static_shape(node)) and _static_shape(src)[-1] == _static_shape(node)[-1]:
                return src
        except Skip:
            return None
        return None

    # -- the matmul and what is linear after it, before all_reduce/reduce_scatter --

    def partial(self, node, m):
        """partial = mm(x, B) | addmm(c, x, B) | partial + c | partial * number
        | partial / number | view(partial): this rank's addend of the sum."""
        ops = self.ops
        if node in m.inside:
            raise Skip("%s is read twice" % node.name)
        if len(node.users) != 1:
            raise Skip("%s (between the matmul and the collective) is also read by %s" % (
                node.name, ", ".join(u.name for u in node.users if u not in m.inside) or "the graph's output"))
        if node.op != "call_function":
            raise Skip("the collective's input %s is not a matmul" % node.name)
        src = self._alias(node)
        if src is not None:
            v = self.partial(src, m)
            return m._take(node, v)
        t = node.target
        if t in (ops.mm, ops.addmm):
            if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
                raise Skip("%s scales with beta/alpha" % node.name)
            x, b = (node.args[0], node.args[1]) if t == ops.mm else (node.args[1], node.args[2])
            shape = _static_shape(node)
            dt = _dtype(node)
            if len(_static_shape(x)) != 2:
                raise Skip("matmul operand %s is %d-D" % (x.name, len(_static_shape(x))))
            xa = m.arg(x, "split", 1)
            be = self._weight(b, m, split_rows=True)
            v = m._let("%s @ %s" % (xa.expr, be), PARTIAL, shape, dt, node)
            if t == ops.addmm:
                c = node.args[0]
                cs = _static_shape(c)
                if cs not in ((shape[1],), shape):
                    raise Skip("%s adds a %s tensor to the [%d, %d] product" % (node.name, cs, shape[0], shape[1]))
                ca = m.arg(c, "partial", vec=len(cs) == 1)
                v = m._let("%s + %s" % (v.expr, self._cast(ca, dt)), PARTIAL, shape, dt, node)
            m.pattern.append("matmul" if t == ops.mm else "matmul + bias")
            return m._take(node, v)
        if t in ops.binary and t not in ops.inplace:
            s = ops.binary[t]
            a0, a1 = node.args[0], node.args[1]
            if s in ("+", "-") and hasattr(a0, "op") and hasattr(a1, "op") and node.kwargs.get("alpha", 1) == 1:
                for mine, other in ((a0, a1), (a1, a0)):
                    if self._is_matmul_chain(mine):
                        v = self.partial(mine, m)
                        if self._after_region(other, m):
                            raise Skip("%s adds %s, computed from the matmul" % (node.name, other.name))
                        os_ = _static_shape(other)
                        if two_d(_static_shape(node)) != v.shape:
                            raise Skip("%s broadcasts the product" % node.name)
                        if os_ not in ((v.shape[1],), _static_shape(node), v.shape):
                            raise Skip("%s adds a %s tensor to the product" % (node.name, os_))
                        ca = m.arg(other, "partial", vec=len(os_) == 1, view=v.shape if len(os_) > 1 else None)
                        dt = _dtype(node)
                        e = ("%s %s %s" % (self._cast(v, dt), s, self._cast(ca, dt))) if mine is a0 else \
                            ("%s %s %s" % (self._cast(ca, dt), s, self._cast(v, dt)))
                        m.pattern.append("add" if s == "+" else "sub")
                        return m._take(node, m._let(e, PARTIAL, v.shape, dt, node))
            if s in ("*", "/") and not hasattr(a1, "op") and hasattr(a0, "op"):
                v = self.partial(a0, m)
                dt = _dtype(node)
                m.pattern.append("scale")
                return m._take(node, m._let(self._scalar_op([v, None], [a0, a1], s, dt), PARTIAL, v.shape, dt, node))
        raise Skip("the collective's input is %s (%s), which is not a matmul or linear in one: syncc has no form for "
                   "it on each rank's partial sum" % (node.name, getattr(t, "__name__", t)))

    def _is_matmul_chain(self, node):
        ops = self.ops
        for _ in range(64):
            if not hasattr(node, "op") or node.op != "call_function":
                return False
            if node.target in (ops.mm, ops.addmm):
                return True
            src = self._alias(node)
            if src is not None:
                node = src
                continue
            if node.target in ops.binary and hasattr(node.args[0], "op"):
                if self._is_matmul_chain(node.args[0]):
                    return True
                if len(node.args) > 1 and hasattr(node.args[1], "op"):
                    node = node.args[1]
                    continue
            return False
        return False

    def _scalar_op(self, vals, raw, s, dt):
        """`a OP b` in dtype dt, an operand a Val or (None) a number.  torch
        computes a 16-bit tensor with a number in f32 with the number
        unrounded, where .syn would round the number to the tensor's
        dtype: so the .syn computes that in f32 and rounds once, as torch."""
        es = [self._cast(v, dt) if v is not None else number(a) for v, a in zip(vals, raw)]
        if dt in ("bf16", "f16") and any(v is None for v in vals):
            es = ["cast(%s, f32)" % e if v is not None else e for v, e in zip(vals, es)]
            return "cast(%s %s %s, %s)" % (es[0], s, es[1], dt)
        return "%s %s %s" % (es[0], s, es[1])

    @staticmethod
    def _cast(v, dt):
        return v.expr if v.dtype == dt else "cast(%s, %s)" % (v.expr, dt)

    # -- ops on values of the match, in the states repl, rows, cols --

    def operand(self, x, m, state, shape):
        """A node or number read by an op of the match whose other operand
        (of local 2-D shape `shape`) is in `state`: a Val."""
        if not hasattr(x, "op"):
            return None  # a number
        if x in m.vals and m.vals[x] is not None:
            return m.vals[x]
        if x in m.inside:
            raise Skip("%s is not a value" % x.name)
        if self._after_region(x, m):
            raise Skip("it also reads %s, which is computed from the match's results outside it (another "
                       "collective's, or an op the pass does not translate)" % x.name)
        xs = _static_shape(x)
        if len(xs) == 1 and xs[0] == shape[1]:
            if state == COLS:
                return m.arg(x, "split", 0, vec=True)  # [cols] of this rank's columns
            return m.arg(x, "repl", vec=True)
        if len(xs) >= 2 and two_d(xs) == tuple(shape) and xs[-1] == shape[1]:
            view = tuple(shape) if len(xs) != 2 else None
            if state == REPL:
                return m.arg(x, "repl", view=view)
            return m.arg(x, "split", 0 if state == ROWS else 1, view=view)
        if len(xs) >= 2 and xs[-1] == 1 and two_d(xs)[0] == shape[0]:
            view = (shape[0], 1) if len(xs) != 2 else None
            if state == COLS:
                raise Skip("%s is a per-row [rows, 1] tensor next to column-split values" % x.name)
            return m.arg(x, "repl" if state == REPL else "split", None if state == REPL else 0, view=view)
        raise Skip("operand %s has shape %s, which broadcasts neither as [%d, %d], [%d] nor [%d, 1]" % (
            x.name, xs, shape[0], shape[1], shape[1], shape[0]))

    def step(self, node, m):
        """The Val of `node`, an op on values already in the match; Skip if
        the .syn cannot say it (or its operands are not there yet)."""
        ops = self.ops
        if node.op != "call_function":
            raise Skip("%s is the graph's %s" % (node.name, node.op))
        t = node.target
        ins = [a for a in node.all_input_nodes]
        mine = [a for a in ins if a in m.vals and m.vals[a] is not None]
        if not mine:
            raise Skip("%s reads nothing of the match" % node.name)
        v0 = mine[0]
        st = m.vals[v0].state
        if any(m.vals[a].state != st for a in mine):
            raise Skip("%s mixes values of two placements" % node.name)
        if t in ops.inplace:
            if not isinstance(node.args[0], type(node)) or node.args[0] not in m.vals or len(node.args[0].users) != 1:
                raise Skip("%s (in place) writes a tensor that is read elsewhere" % node.name)
        src = self._alias(node)
        if src is not None and src in m.vals:
            return m._take(node, m.vals[src])
        if t == operator.getitem:
            raise Skip("%s takes an item" % node.name)
        if t in ops.layer_norm or t in ops.rms_norm:
            if len(ins) != 1 + sum(1 for a in node.args[2:4] if hasattr(a, "op")) or len(mine) != 1:
                raise Skip("%s normalises several values of the match" % node.name)
            return self.norm(node, m, m.vals[v0], st)
        shape = two_d(_static_shape(node))
        dt = _dtype(node)
        big = max((m.vals[a].shape for a in mine), key=lambda s: s[1])
        if t in ops.binary:
            s = ops.binary[t]
            if node.kwargs.get("alpha", 1) != 1 or len(node.args) > 2:
                raise Skip("%s has alpha" % node.name)
            vs = [self.operand(a, m, st, big) for a in node.args[:2]]
            return m._take(node, m._let(self._scalar_op(vs, node.args[:2], s, dt), st, shape, dt, node), BINARY_NAMES[s])
        if t == ops.mm or t == ops.addmm:
            return self.col_matmul(node, m)
        if len(mine) != 1 or len(ins) != 1 and t not in ops.layer_norm | ops.rms_norm:
            raise Skip("%s (%s) reads several tensors" % (node.name, getattr(t, "__name__", t)))
        v = m.vals[v0]
        if t in ops.unary:
            s = ops.unary[t]
            e = self._cast(v, dt)
            expr = ("-%s" % e) if s == "-" else "%s(%s)" % (s, e)
            return m._take(node, m._let(expr, st, shape, dt, node), s if s != "-" else "neg")
        if t in ops.gelu:
            if node.kwargs.get("approximate", "none") != "tanh":
                raise Skip("%s is gelu with approximate='none' (erf): syncc has no erf (the stdlib gelu is the tanh "
                           "form: approximate='tanh')" % node.name)
            return m._take(node, m._let("gelu(%s)" % self._cast(v, dt), st, shape, dt, node), "gelu")
        if t in ops.casts:
            allowed = {"dtype", "layout", "device", "memory_format"}
            if set(node.kwargs) - allowed or (t == ops.torch.ops.aten._to_copy.default and len(node.args) > 1):
                raise Skip("%s copies with %s" % (node.name, dict(node.kwargs)))
            mf = node.kwargs.get("memory_format")
            if mf is not None and mf != ops.torch.preserve_format and mf != ops.torch.contiguous_format:
                raise Skip("%s changes the memory format" % node.name)
            return m._take(node, m._let("cast(%s, %s)" % (v.expr, dt), st, shape, dt, node), "cast")
        if t in ops.pow:
            if node.args[1] != 2:
                raise Skip("%s raises to the power %r (the pass writes x ** 2 only)" % (node.name, node.args[1]))
            e = self._cast(v, dt)
            return m._take(node, m._let("%s * %s" % (e, e), st, shape, dt, node), "square")
        if t in ops.mean:
            dims = list(node.args[1]) if len(node.args) > 1 else None
            keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
            nd = len(_static_shape(v0))
            if dims is None or len(dims) != 1 or dims[0] % nd != nd - 1 or not keep or node.kwargs.get("dtype"):
                raise Skip("%s is a mean over dims %s (keepdim %s): the pass takes the mean over the last dim, kept" % (
                    node.name, dims, keep))
            if st not in (REPL, ROWS):
                raise Skip("%s is a mean over the split dim: each rank's own columns in torch, the global mean in "
                           "syncc" % node.name)
            return m._take(node, m._let("mean(%s, 1)" % self._cast(v, dt), st, shape, dt, node), "mean")
        raise Skip("%s is %s, which the pass does not translate" % (node.name, getattr(t, "__name__", t)))

    def col_matmul(self, node, m):
        """mm(repl, B) | addmm(c, repl, B) with B's columns split
        (column-parallel): in an all_gather match only."""
        ops = self.ops
        add = node.target == ops.addmm
        a, b = node.args[1:3] if add else node.args[:2]
        v = m.vals.get(a)
        if m.kind != "all_gather" or v is None or v.state != REPL:
            raise Skip("%s is a matmul after the match (a new match starts at its collective)" % node.name)
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            raise Skip("%s scales with beta/alpha" % node.name)
        if b in m.inside or self._after_region(b, m):
            raise Skip("%s multiplies two values of the match" % node.name)
        be = self._weight(b, m, split_rows=False)
        shape = _static_shape(node)
        dt = _dtype(node)
        out = m._let("%s @ %s" % (v.expr, be), COLS, shape, dt, node)
        if add:
            c = node.args[0]
            if self._after_region(c, m):
                raise Skip("%s adds a value computed from the match" % node.name)
            cv = self.operand(c, m, COLS, shape)
            out = m._let("%s + %s" % (out.expr, self._cast(cv, dt)), COLS, shape, dt, node)
        return m._take(node, out, "matmul + bias" if add else "matmul")

    def norm(self, node, m, v, st):
        """native_layer_norm / _fused_rms_norm over the last dim: only its
        first result read."""
        ops = self.ops
        if st not in (REPL, ROWS):
            raise Skip("%s normalises over the split dim" % node.name)
        ns = list(node.args[1])
        if len(ns) != 1 or ns[0] != v.shape[1]:
            raise Skip("%s normalises over %s, not the last dim" % (node.name, ns))
        items = [u for u in node.users]
        if any(u.target != operator.getitem for u in items) or any(u.args[1] != 0 and u.users for u in items):
            raise Skip("%s: its mean or rstd is read too" % node.name)
        dt = _dtype(node.args[0])
        rms = node.target in ops.rms_norm
        w = node.args[2]
        if rms:
            eps = node.args[3] if len(node.args) > 3 else node.kwargs.get("eps")
            b = None
        else:
            b, eps = node.args[3], node.args[4]
        eps = F32_EPS if eps is None else float(eps)
        xf = m._let("cast(%s, f32)" % v.expr, st, v.shape, "f32", node)
        if rms:
            y = m._let("%s * rsqrt(mean(%s * %s, 1) + %s)" % (xf.expr, xf.expr, xf.expr, number(eps)), st, v.shape, "f32",
                       None)
        else:
            d = m._let("%s - mean(%s, 1)" % (xf.expr, xf.expr), st, v.shape, "f32", None)
            y = m._let("%s * rsqrt(mean(%s * %s, 1) + %s)" % (d.expr, d.expr, d.expr, number(eps)), st, v.shape, "f32",
                       None)
        e = y.expr
        if w is not None:
            e = "%s * cast(%s, f32)" % (e, self.operand(w, m, st, v.shape).expr)
        if b is not None:
            e = "%s + cast(%s, f32)" % (e, self.operand(b, m, st, v.shape).expr)
        out = m._let("cast(%s, %s)" % (e, dt), st, v.shape, dt, None)
        m._take(node, None, "rmsnorm" if rms else "layernorm")
        for u in items:
            m._take(u, out if u.args[1] == 0 else None)
        return out



def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()[:10]


RANDOM_WORDS = ("rand", "dropout", "bernoulli", "normal", "uniform", "multinomial", "exponential", "poisson",
                "cauchy", "geometric", "log_normal", "seed")


class Evidence:
    """Which nodes hold the same value on every rank: graph inputs the
    caller vouches for, the results of world collectives and of syncc ops
    with @repl results, and what deterministic ops compute from those alone."""

    def __init__(self, ops, inputs, world_collective):
        self.ops, self.inputs, self.world_collective = ops, set(inputs), world_collective
        self.known = set()
        self.memo = {}

    def __call__(self, node):
        if node in self.known or node in self.inputs:
            return True
        if node in self.memo:
            return self.memo[node]
        self.memo[node] = False  # cycles cannot happen; this stops re-entry
        r = self._why(node)
        self.memo[node] = r
        return r

    def unproven_input(self, node):
        """A graph input `node` is computed from that nothing vouches for."""
        seen, todo = set(), [node]
        while todo:
            n = todo.pop()
            if n in seen or self(n):
                continue
            seen.add(n)
            if n.op == "placeholder":
                return n
            todo.extend(n.all_input_nodes)
        return None

    def _why(self, node):
        ops = self.ops
        if node.op == "get_attr":
            return True  # a constant of the graph: the same code on every rank
        if node.op != "call_function":
            return False
        if node.target in ops.wait:
            c = node.args[0]
            return (c.target in ops.all_reduce or c.target in ops.all_gather) and self.world_collective(c)
        if ops.is_collective(node):
            return False
        name = str(node.target).lower()
        if any(w in name for w in RANDOM_WORDS):
            return False
        return all(self(a) for a in node.all_input_nodes)


def group_check(c, kind, world):
    """None if collective `c` runs over the whole world with sum, else why not."""
    args = c.args
    if kind == "all_reduce":
        red, size, name = args[1], None, args[2]
    elif kind == "reduce_scatter":
        red, size, name = args[1], args[2], args[3]
    else:
        red, size, name = "sum", args[1], args[2]
    if str(red).lower() != "sum":
        return "it reduces with %s; the pass matches sum" % red
    if size is not None and int(size) != world:
        return "its group has %d ranks, the world %d: a syncc op runs on every rank of the world" % (int(size), world)
    try:
        import torch.distributed as dist
        from torch.distributed.distributed_c10d import _resolve_process_group
        pg = _resolve_process_group(name) if isinstance(name, str) else name
        ranks = dist.get_process_group_ranks(pg)
    except Exception as e:
        return "its process group %r cannot be resolved (%s)" % (name, e)
    if sorted(ranks) != list(range(world)):
        return "its group %r holds ranks %s, not the whole world of %d: a syncc op runs on every rank of the world" % (
            name, sorted(ranks), world)
    return None


KINDS = {"all_reduce": "ar", "reduce_scatter": "rs", "all_gather": "ag"}


def kind_of(ops, c):
    if c.target in ops.all_reduce:
        return "all_reduce"
    if c.target in ops.reduce_scatter:
        return "reduce_scatter"
    if c.target in ops.all_gather:
        return "all_gather"
    return None


class Retry(Exception):
    def __init__(self, node):
        self.node = node


def _prologue_kind(ops, n):
    return n.op == "call_function" and (n.target in ops.unary or n.target in ops.binary or n.target in ops.casts
                                         or n.target in ops.pow or n.target in ops.mean or n.target in ops.gelu
                                         or n.target in ops.layer_norm or n.target in ops.rms_norm
                                         or n.target in ops.views or n.target == operator.getitem)


def match(matcher, c, kind, forbidden):
    """The match grown from collective `c`; Skip if there is none."""
    ops, world = matcher.ops, matcher.world
    m = Match(kind, c, world, ops, matcher.replicated)
    waits = list(c.users)
    if len(waits) != 1 or waits[0].target not in ops.wait:
        raise Skip("it is not read through one wait_tensor")
    w = waits[0]
    ws = _static_shape(w)
    _dtype(w)
    if kind in ("all_reduce", "reduce_scatter"):
        v = matcher.partial(c.args[0], m)
        m._take(c, None)
        if kind == "all_reduce":
            out = m._let("all_reduce(%s, sum)" % v.expr, REPL, v.shape, v.dtype, w)
        else:
            rows = two_d(ws)[0]
            if rows * world != v.shape[0]:
                raise Skip("it scatters %s rows over %d ranks as %d each" % (v.shape[0], world, rows))
            out = m._let("reduce_scatter(%s, 0, sum)" % v.expr, ROWS, (rows, v.shape[1]), v.dtype, w)
        m._take(w, out, kind)
    else:
        x = c.args[0]
        v = prologue(matcher, m, x, c, forbidden)
        m._take(c, None)
        out = m._let("all_gather(%s, 0)" % v.expr, REPL, (v.shape[0] * world, v.shape[1]), v.dtype, w)
        if two_d(ws) != out.shape:
            raise Skip("it gathers to %s" % (ws,))
        m._take(w, out, "all_gather")
    grow(matcher, m)
    if kind == "all_gather" and not any(p.startswith("matmul") for p in m.pattern):
        raise Skip("its result is not read by a matmul with a column-split weight: %s" % (
            "; ".join("%s: %s" % (n.name, why) for n, why in m.stops.items()) or "no reader"))
    outputs(m)
    return m


def prologue(matcher, m, x, c, forbidden):
    """The ops before an all_gather on this rank's rows that only feed it
    (a norm, a residual add): taken into the match, their outside inputs
    the op's arguments (rows: @split(0))."""
    ops = matcher.ops
    xs = _static_shape(x)
    rows2 = two_d(xs)
    pro = set()
    if _prologue_kind(ops, x) and x not in forbidden and all(u is c for u in x.users):
        pro.add(x)
    grew = True
    while grew:
        grew = False
        for n in list(pro):
            for q in n.all_input_nodes:
                if q in pro or q in forbidden or not _prologue_kind(ops, q):
                    continue
                users = set(q.users)
                if q.target in ops.layer_norm or q.target in ops.rms_norm:
                    users = {u for u in users if u.users or u in pro}
                if users and users <= pro:
                    pro.add(q)
                    pro.update(u for u in q.users if u.target == operator.getitem)
                    grew = True
    order = [n for n in matcher.gm.graph.nodes if n in pro]
    for n in order:
        for q in n.all_input_nodes:
            if q not in pro and q not in m.vals and len(_static_shape(q)) >= 2 and two_d(_static_shape(q)) == rows2 \
                    and _static_shape(q)[-1] == rows2[1]:
                m.vals[q] = m.arg(q, "split", 0, view=rows2 if len(_static_shape(q)) != 2 else None)
    for n in order:
        if n in m.vals:
            continue
        try:
            matcher.step(n, m)
        except Skip:
            raise Retry(n)
    if x in m.vals:
        return m.vals[x]
    return m.arg(x, "split", 0, view=rows2 if len(xs) != 2 else None)


def grow(matcher, m):
    """Takes the readers of the match's values while the .syn can say them."""
    changed = True
    while changed:
        changed = False
        for n in list(m.nodes):
            if m.vals.get(n) is None:
                continue
            for u in list(n.users):
                if u in m.inside or u.op != "call_function":
                    continue
                saved = m.save()
                try:
                    matcher.step(u, m)
                except Skip as e:
                    m.restore(saved)
                    m.stops[u] = str(e)
                    continue
                m.stops.pop(u, None)
                changed = True
    for u in list(m.stops):
        if u in m.inside:
            del m.stops[u]


def outputs(m):
    """The op's results: each value of the match read outside it."""
    by_val = {}
    for n in m.nodes:
        v = m.vals.get(n)
        if v is None:
            continue
        if any(u not in m.inside for u in n.users):
            if v.state == PARTIAL:
                raise Skip("%s, a partial sum, is read outside the match" % n.name)
            by_val.setdefault(id(v), (v, []))[1].append(n)
    m.outputs = sorted(by_val.values(), key=lambda vn: m.nodes.index(vn[1][0]))
    if not m.outputs:
        raise Skip("nothing reads its result")


def reference(m, gm, torch):
    """An FX GraphModule computing the match's results from the op's
    arguments with the graph's own ops: what the syncc op replaces (for
    tests and debugging; it runs the collectives as the graph did)."""
    import torch.fx as fx
    g = fx.Graph()
    env = {}
    for a in m.args:
        p = g.placeholder(a.name)
        env[a.node] = g.call_function(torch.ops.aten.view.default, (p, list(_static_shape(a.node)))) if a.view else p
    for n in gm.graph.nodes:
        if n in m.inside:
            env[n] = g.node_copy(n, lambda x: env[x])
    outs = [g.call_function(torch.ops.aten.reshape.default, (env[nodes[0]], list(v.shape))) for v, nodes in m.outputs]
    g.output(outs[0] if len(outs) == 1 else tuple(outs))
    return fx.GraphModule(torch.nn.Module(), g)


def toposort(graph):
    """Reorders the graph's nodes so each comes after its inputs, keeping
    the present order where it can."""
    import heapq
    nodes = list(graph.nodes)
    idx = {n: i for i, n in enumerate(nodes)}
    indeg = {n: len(set(n.all_input_nodes)) for n in nodes}
    ready = [(idx[n], n) for n in nodes if indeg[n] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, n = heapq.heappop(ready)
        order.append(n)
        for u in n.users:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, (idx[u], u))
    if len(order) != len(nodes):
        raise RuntimeError("syncc.overlap: the rewritten graph has a cycle (a bug in the pass)")
    prev = order[0]
    for n in order[1:]:
        if prev.next is not n:
            prev.append(n)
        prev = n


def _fake(n):
    v = val_of(n)
    return getattr(v, "fake_mode", None)


def rewrite(gm, m, opfn, torch, evidence):
    """Replaces the match's nodes by one call of `opfn` (the syncc op's
    torch operator) and views of its results."""
    g = gm.graph
    aten = torch.ops.aten
    last = [n for n in g.nodes if n in m.inside][-1]
    fm = next((f for f in (_fake(n) for n in m.nodes) if f is not None), None)

    def meta(node, fn):
        if fm is not None:
            try:
                with fm:
                    node.meta["val"] = fn()
            except Exception:
                pass

    with g.inserting_after(last):
        argn = []
        for a in m.args:
            if a.view:
                vn = g.call_function(aten.view.default, (a.node, list(a.view)))
                meta(vn, lambda a=a: val_of(a.node).view(list(a.view)))
                argn.append(vn)
            else:
                argn.append(a.node)
        call = g.call_function(opfn, tuple(argn))
        meta(call, lambda: opfn(*[val_of(x) for x in argn]))
        res = []
        for i in range(len(m.outputs)):
            if len(m.outputs) == 1:
                res.append(call)
            else:
                r = g.call_function(operator.getitem, (call, i))
                meta(r, lambda i=i: val_of(call)[i])
                res.append(r)
        for (v, nodes), r in zip(m.outputs, res):
            for n in nodes:
                shape = list(_static_shape(n))
                nv = r
                if tuple(shape) != tuple(v.shape):
                    nv = g.call_function(aten.view.default, (r, shape))
                    meta(nv, lambda r=r, shape=shape: val_of(r).view(shape))
                if v.state == REPL:
                    evidence.known.add(nv)
                n.replace_all_uses_with(nv, delete_user_cb=lambda u: u not in m.inside)
    for n in reversed([n for n in g.nodes if n in m.inside]):
        g.erase_node(n)
    toposort(g)
    g.lint()
    gm.recompile()
    return call
