"""What a compiled op takes and gives (syncc --emit=signature), and the
check of a call against it.  No torch here: the checker reads a tiny
duck-typed interface, so plain Python objects can stand in for tensors:

    t.dtype          torch.bfloat16, or anything whose str() is a dtype name
                     ("torch.bfloat16", "bfloat16", "bf16")
    t.shape          a sequence of ints (this rank's piece)
    t.device         torch.device, or a string such as "cuda:1"
    t.is_contiguous()
    t.data_ptr()     (optional) the address, for the alignment check
"""
import json

from .errors import ArgumentError, CompileError

# syncc's dtype names (ir/type.c) -> (CommDType number, torch attribute name)
DTYPES = {
    "f32": (0, "float32"),
    "f16": (1, "float16"),
    "bf16": (2, "bfloat16"),
    "i32": (3, "int32"),
}
_ALIASES = {}
for _name, (_num, _torch) in DTYPES.items():
    for _alias in (_name, _torch, "torch." + _torch):
        _ALIASES[_alias] = _name
_ALIASES.update({"torch.float": "f32", "torch.half": "f16", "torch.int": "i32"})

# Device pointers the generated kernels load with vector instructions.
ALIGN = 16


class Value:
    """One argument or result: global shape and placement, and the local
    shape of every rank's piece (syncc's ty_local_shape)."""

    def __init__(self, d):
        self.name = d["name"]
        self.dtype = d["dtype"]
        self.shape = tuple(d["shape"])
        self.placement = d["placement"]
        self.dim = d.get("dim")
        self.local = tuple(d["local"])
        self.type = d["type"]

    def torch_dtype_name(self):
        return DTYPES[self.dtype][1]


class OpSig:
    def __init__(self, d):
        self.name = d["name"]
        self.ranks = d["ranks"]
        self.args = [Value(a) for a in d["args"]]
        self.results = [Value(r) for r in d["results"]]


class Signature:
    """Every op of one compiled file."""

    def __init__(self, d):
        self.syncc = d["syncc"]
        self.source = d["source"]
        self.files = [str(f) for f in d["files"]]  # every source file syncc read, absolute
        self.profile = d.get("profile")  # the cost profile a build plans with (None: none found)
        self.ranks = d["ranks"]
        self.ops = {o["name"]: OpSig(o) for o in d["ops"]}


def parse(text):
    try:
        return Signature(json.loads(text))
    except (ValueError, KeyError, TypeError) as e:
        raise CompileError("syncc --emit=signature printed something that is not a signature (%s): %.200r" % (e, text))


def dtype_name(dt):
    """syncc's name of a dtype object or string, or None if it has none."""
    return _ALIASES.get(str(dt))


def _device(dev):
    """(type, index) of a torch.device or a string such as 'cuda:1'."""
    typ = getattr(dev, "type", None)
    idx = getattr(dev, "index", None)
    if typ is None:
        s = str(dev)
        typ, _, i = s.partition(":")
        idx = int(i) if i.isdigit() else None
    return typ, idx


def _shape(s):
    return "(" + ", ".join(str(int(x)) for x in s) + ("," if len(s) == 1 else "") + ")"


def check_world(op, world, rank):
    """The process's world against the ranks the op was compiled for."""
    if world != op.ranks:
        raise ArgumentError("%s: compiled for %d ranks, but this process is rank %d of WORLD_SIZE=%d; "
                            "load it with ranks=%d (the default is WORLD_SIZE)" % (op.name, op.ranks, rank, world, world))


def check_call(op, tensors, rank, device_index):
    """Every argument of a call of `op` on rank `rank` whose GPU is
    cuda:`device_index`; raises ArgumentError naming the op, the argument,
    what was expected and what was given."""
    want = len(op.args)
    if len(tensors) != want:
        raise ArgumentError("%s takes %d argument%s (%s), got %d" % (
            op.name, want, "" if want == 1 else "s", ", ".join(a.name for a in op.args), len(tensors)))
    for i, (spec, t) in enumerate(zip(op.args, tensors)):
        _check_one(op, i, spec, t, rank, device_index)


def _check_one(op, i, spec, t, rank, device_index):
    where = "%s: argument %d '%s'" % (op.name, i, spec.name)
    piece = "this rank's piece of %s over %d ranks (rank %d)" % (spec.type, op.ranks, rank)
    if not all(hasattr(t, a) for a in ("dtype", "shape", "device", "is_contiguous")):
        raise ArgumentError("%s: expected a tensor (%s), got %s" % (where, piece, type(t).__name__))
    got = dtype_name(t.dtype)
    if got != spec.dtype:
        raise ArgumentError("%s: dtype is %s, expected %s (torch.%s)" % (where, t.dtype, spec.dtype, spec.torch_dtype_name()))
    shape = tuple(int(x) for x in t.shape)
    if shape != spec.local:
        why = ""
        if len(shape) != len(spec.local):
            why = ": %d dimensions, expected %d" % (len(shape), len(spec.local))
        else:
            d = next(k for k in range(len(shape)) if shape[k] != spec.local[k])
            why = ": dim %d is %d, expected %d" % (d, shape[d], spec.local[d])
            if spec.placement == "split" and spec.dim == d and shape[d] == spec.shape[d] and op.ranks > 1:
                why += " (the whole tensor was passed; pass this rank's block of dim %d)" % d
        raise ArgumentError("%s: shape is %s, expected %s, %s%s" % (where, _shape(shape), _shape(spec.local), piece, why))
    typ, idx = _device(t.device)
    if typ != "cuda" or (device_index is not None and idx is not None and idx != device_index):
        raise ArgumentError("%s: is on %s, expected cuda:%s (this rank's GPU)" % (
            where, typ + ("" if idx is None else ":%d" % idx), "?" if device_index is None else device_index))
    if not t.is_contiguous():
        strides = tuple(t.stride()) if hasattr(t, "stride") else "?"
        raise ArgumentError("%s: is not contiguous (strides %s); the op reads row-major tensors: pass %s.contiguous()" % (
            where, strides, spec.name))
    if hasattr(t, "data_ptr") and shape and int(t.data_ptr()) % ALIGN:
        raise ArgumentError("%s: its data is not %d-byte aligned (address 0x%x: a view into another tensor?); "
                            "pass %s.clone()" % (where, ALIGN, int(t.data_ptr()), spec.name))
