"""syncc from PyTorch: compile a .syn operator file and call its ops on this
rank's torch tensors, in a script started by torchrun (one process per GPU).

    import syncc                 # before torch touches CUDA (see docs/python.md)
    mod = syncc.load("examples/row_linear.syn", M=4096, N=4096, K=4096)
    y = mod.row_linear(x, w)     # x, w: this rank's pieces, on this rank's GPU

Each call is checked against the op's signature (dtype, local shape,
device, layout) before any GPU work, runs on torch's current stream and
returns result tensors torch allocated.  docs/python.md says more."""
import os

from .errors import ArgumentError, CompileError, RuntimeFailure, SynccError
from . import build, signature

__version__ = "0.1.0"  # pyproject.toml's

__all__ = ["load", "Module", "BucketModule", "BucketOp", "SynccError", "CompileError", "ArgumentError", "RuntimeFailure"]

# libsyncrt wants 32 hardware queues and NCCL's kernel stacks reserved at
# init (runtime/README.md); the settings only count if they are there before
# the process's CUDA context is made and NCCL first reads its settings, both
# of which torch may do first, so they are set here, at import.
os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")
os.environ.setdefault("NCCL_SET_STACK_SIZE", "1")


def _preload():
    """libsyncrt.so (and with it the NCCL it was built against) before torch
    loads its own: both libraries are libnccl.so.2, the first one loaded
    serves the process, and libsyncrt needs its own version's symbols
    (ncclAlltoAll, NCCL >= 2.28) while torch runs on a newer NCCL than it
    was built with.  Quietly nothing where there is no libsyncrt or no GPU
    driver; load() then says what is missing."""
    import sys
    if "torch" in sys.modules:
        return
    try:
        from . import runtime
        tools = build.find_tools()
        if tools.libsyncrt:
            runtime.library(tools.libsyncrt)
    except (SynccError, OSError):
        pass


_preload()


def __getattr__(name):
    """syncc.torch (the torch.compile backend, syncc/torch.py) on first use:
    importing syncc imports no torch."""
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'syncc' has no attribute %r" % name)


def _world():
    """(rank, world) from torch.distributed if initialised, else torchrun's
    environment."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


class Op:
    """One op of a loaded module: call it with this rank's tensors."""

    def __init__(self, module, launcher, key):
        self._module, self._launcher = module, launcher
        self.signature = launcher.op
        self.__name__ = launcher.op.name
        self.torch_op = None  # torch.ops.syncc.<name>.default (torchop.py)
        self._torch = self._routed = self._fast = self._compiling = None
        try:
            import torch
        except ImportError:
            return
        from . import torchop
        self._torch, self._routed = torch, torchop.tracing_or_profiling
        self.torch_op = torchop.register(launcher.op, key, self._direct, module._ctx.torch_device)
        self._compiling = getattr(torch.compiler, "is_compiling", None)
        if self._compiling is not None:  # the C call path (runtime.fastcall_module)
            self._fast = launcher.caller(module._ctx, torch, self.torch_op,
                                         os.path.dirname(os.path.normpath(module.build.dir)))

    def _direct(self, tensors):
        return self._launcher(self._module._ctx, tensors)

    def __call__(self, *tensors):
        """The op on this rank's tensors, on torch's current stream.  Under
        torch.compile or torch.profiler through torch.ops.syncc (traced
        with no graph break, profiled under its name); else one foreign
        call: in C (_fastcall.c, which also routes while the profiler
        records) where that was built."""
        if self._fast is not None:
            if self._compiling():
                return self.torch_op(*tensors)
            return self._fast(tensors)
        if self.torch_op is not None and self._routed(self._torch):
            return self.torch_op(*tensors)
        return self._launcher(self._module._ctx, tensors)

    def __repr__(self):
        s = self.signature
        return "<syncc op %s(%s) -> %s, %d ranks>" % (
            s.name, ", ".join("%s: %s" % (a.name, a.type) for a in s.args), ", ".join(r.type for r in s.results), s.ranks)


class _Ops:
    """Ops as attributes: mod.OP is mod.ops["OP"]."""

    def __getattr__(self, name):
        ops = self.__dict__.get("ops", {})
        if name in ops:
            return ops[name]
        raise AttributeError("%s has no op '%s' (it has: %s)" % (self.__dict__.get("path"), name, ", ".join(sorted(ops))))


class Module(_Ops):
    """A compiled .syn file, loaded into this process: one attribute per op."""

    def __init__(self, path, b, ctx, so):
        from . import runtime
        self.path, self.build, self._ctx = path, b, ctx
        key = os.path.basename(os.path.normpath(b.dir))
        self.ops = {name: Op(self, runtime.Launcher(so, o), key) for name, o in b.sig.ops.items()}

    def sync(self):
        """Wait for every call so far with libsyncrt's watchdog; raises
        RuntimeFailure with the runtime's message if one failed."""
        self._ctx.sync()

    def close(self):
        """Finalise this module's libsyncrt context (collective: every rank)."""
        self._ctx.close()


MAX_BUCKETS = 32


class BucketOp:
    """One op of a bucketed load: the call goes to the bucket whose
    argument shapes are the tensors' (one dict lookup), else an
    ArgumentError that lists the buckets."""

    def __init__(self, name, by_shape, what):
        self.__name__, self._by_shape, self._what = name, by_shape, what
        self.buckets = list(by_shape.values())

    def __call__(self, *tensors):
        op = self._by_shape.get(tuple(tuple(t.shape) for t in tensors))
        if op is None:
            raise ArgumentError("%s: argument shapes %s match no bucket of %s; the buckets take %s" % (
                self.__name__, ", ".join(str(tuple(t.shape)) for t in tensors), self._what,
                "; ".join(", ".join(str(s) for s in k) for k in self._by_shape)))
        return op(*tensors)


class BucketModule(_Ops):
    """A .syn file loaded once per value of its bucketed parameters
    (syncc.load(path, M=[1024, 2048, 4096])): one compiled build and one
    libsyncrt context per bucket, made at load; each op picks its bucket
    by the shapes of its arguments at call time."""

    def __init__(self, path, buckets, modules):
        self.path, self.buckets, self.modules = path, buckets, modules
        what = ", ".join("%s in %s" % (k, list(v)) for k, v in buckets.items())
        self.ops = {}
        for name in modules[0].ops:
            by_shape = {}
            for m in modules:
                op = m.ops[name]
                key = tuple(tuple(a.local) for a in op.signature.args)
                if key in by_shape:
                    raise ArgumentError("%s: op %s takes the same argument shapes %s in two buckets of %s: its "
                                        "bucketed parameters do not set its arguments' shapes" % (path, name, key, what))
                by_shape[key] = op
            self.ops[name] = BucketOp(name, by_shape, what)

    def sync(self):
        for m in self.modules:
            m.sync()

    def close(self):
        for m in self.modules:
            m.close()


def _bucket_values(params):
    """{name: [values]} of the parameters given as lists, and the plain rest."""
    buckets = {k: list(v) for k, v in params.items() if isinstance(v, (list, tuple))}
    for k, v in buckets.items():
        if not v or len(set(v)) != len(v):
            raise ArgumentError("parameter %s=%r: buckets need distinct values, at least one" % (k, v))
    n = 1
    for v in buckets.values():
        n *= len(v)
    if n > MAX_BUCKETS:
        raise ArgumentError("%s: %d buckets, more than %d (each is a build and a libsyncrt context)" % (
            ", ".join(buckets), n, MAX_BUCKETS))
    return buckets, {k: v for k, v in params.items() if k not in buckets}


def load(path, ranks=None, entry=None, cache=None, **params):
    """Compile `path` (-D NAME=VALUE for each keyword) for `ranks` ranks
    (default WORLD_SIZE), build its launcher into the cache (SYNCC_CACHE,
    default ~/.cache/syncc) and make this rank's libsyncrt context.  Every
    rank calls it, in the same order as its other loads.  A keyword given a
    list (M=[1024, 2048, 4096]) makes buckets: a build and a context per
    value (per combination, for several lists), and each op picks the
    bucket its arguments' shapes match at call time (BucketModule)."""
    import itertools
    buckets, plain = _bucket_values(params)
    if buckets:
        names = sorted(buckets)
        mods = []
        try:
            for combo in itertools.product(*(buckets[k] for k in names)):
                mods.append(load(path, ranks, entry, cache, **dict(plain, **dict(zip(names, combo)))))
            return BucketModule(path, buckets, mods)
        except BaseException:
            for m in mods:
                m.close()
            raise
    import ctypes
    from . import runtime
    rank, world = _world()
    ranks = world if ranks is None else int(ranks)
    if ranks != world:
        raise ArgumentError("%s: ranks=%d, but this process is rank %d of WORLD_SIZE=%d: an op runs on every rank "
                            "of the job" % (path, ranks, rank, world))
    tools = build.find_tools()
    b = build.compile_file(path, params, ranks, entry=entry, tools=tools, cache=cache)
    for op in b.sig.ops.values():
        signature.check_world(op, world, rank)
    if not b.sig.ops:
        raise CompileError("%s: no op to call (the file compiles no op)" % path)
    lib = runtime.library(tools.libsyncrt)
    so = ctypes.CDLL(b.so, mode=ctypes.RTLD_LOCAL)
    ctx = runtime.Context(lib, runtime.boot_port())
    try:
        runtime.check_device(ctx, "%s" % path)
        return Module(path, b, ctx, so)
    except BaseException:
        ctx.close()
        raise
