"""A loaded op as a PyTorch operator: `torch.ops.syncc.<name>`, defined
through torch.library with a fake (meta) implementation that makes the
result tensors from the op's signature, so `torch.compile(fullgraph=True)`
traces a call with no graph break, torch.profiler shows the op under its
name and Inductor's CUDA graphs can record it.

Op.__call__ (syncc/__init__.py) goes through the dispatcher only while
torch is compiling or profiling; a plain eager call keeps the direct
foreign call of runtime.Launcher (a dispatcher round costs microseconds
a small op would feel).  The operator's name is the op's, then the
build's key and a load count: one file loaded twice (two contexts, or
other -D values) gives two operators, each calling its own context."""
import re

_lib = None
_count = 0


def _library():
    global _lib
    if _lib is None:
        import torch
        _lib = torch.library.Library("syncc", "FRAGMENT")
    return _lib


def _arg_name(name, i, used):
    """A schema argument name for the op's argument: its own where the
    schema accepts it, else a<i>."""
    n = name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or "") else "a%d" % i
    if n in used or n in ("self", "out", "Tensor"):
        n = "a%d" % i
    used.add(n)
    return n


def schema(sig):
    """The torch.library schema of an op signature (signature.OpSig):
    every argument a Tensor, results a Tensor or a tuple of them."""
    used = set()
    args = ", ".join("Tensor %s" % _arg_name(a.name, i, used) for i, a in enumerate(sig.args))
    res = "Tensor" if len(sig.results) == 1 else "(%s)" % ", ".join("Tensor" for _ in sig.results)
    return "(%s) -> %s" % (args, res)


def op_name(sig, key):
    """`<op>_<key[:12]>_<n>`: unique in the process."""
    global _count
    _count += 1
    return "%s_%s_%d" % (sig.name, re.sub(r"[^0-9a-zA-Z]", "", key)[:12], _count)


def fake_results(sig, tensors, default_device):
    """The results' stand-ins: the signature's local shapes and dtypes, on
    the inputs' device."""
    import torch
    dev = tensors[0].device if tensors else default_device
    outs = [torch.empty(tuple(r.local), dtype=getattr(torch, r.torch_dtype_name()), device=dev) for r in sig.results]
    return outs[0] if len(outs) == 1 else tuple(outs)


def register(sig, key, call, default_device, dispatch="CUDA"):
    """Defines torch.ops.syncc.<name> for one loaded op: its CUDA kernel
    `call(tensors)` (the launcher, on torch's current stream), its fake
    implementation from the signature.  Returns the operator.  (dispatch:
    the key `call` is registered for; tests register a CPU stand-in.)"""
    import torch
    lib = _library()
    name = op_name(sig, key)
    lib.define(name + schema(sig))

    def impl(*tensors):
        return call(tensors)

    def fake(*tensors):
        return fake_results(sig, tensors, default_device)

    lib.impl(name, impl, dispatch)
    torch.library.register_fake("syncc::" + name, fake, lib=lib)
    return getattr(torch.ops.syncc, name).default


def tracing_or_profiling(torch):
    """True while torch.compile traces, or a torch.profiler records: then a
    call goes through the dispatcher."""
    comp = getattr(torch.compiler, "is_compiling", None)
    if comp is not None and comp():
        return True
    prof = getattr(torch.autograd, "profiler", None)
    return bool(prof is not None and getattr(prof, "_is_profiler_enabled", False))
