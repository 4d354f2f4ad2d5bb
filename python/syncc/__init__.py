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

__all__ = ["load", "Module", "SynccError", "CompileError", "ArgumentError", "RuntimeFailure"]

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
        self._torch = self._routed = None
        try:
            import torch
        except ImportError:
            return
        from . import torchop
        self._torch, self._routed = torch, torchop.tracing_or_profiling
        self.torch_op = torchop.register(launcher.op, key, self._direct, module._ctx.torch_device)

    def _direct(self, tensors):
        return self._launcher(self._module._ctx, tensors)

    def __call__(self, *tensors):
        """The op on this rank's tensors, on torch's current stream.  Under
        torch.compile or torch.profiler through torch.ops.syncc (traced
        with no graph break, profiled under its name); else one foreign
        call."""
        if self.torch_op is not None and self._routed(self._torch):
            return self.torch_op(*tensors)
        return self._launcher(self._module._ctx, tensors)

    def __repr__(self):
        s = self.signature
        return "<syncc op %s(%s) -> %s, %d ranks>" % (
            s.name, ", ".join("%s: %s" % (a.name, a.type) for a in s.args), ", ".join(r.type for r in s.results), s.ranks)


class Module:
    """A compiled .syn file, loaded into this process: one attribute per op."""

    def __init__(self, path, b, ctx, so):
        from . import runtime
        self.path, self.build, self._ctx = path, b, ctx
        key = os.path.basename(os.path.normpath(b.dir))
        self.ops = {name: Op(self, runtime.Launcher(so, o), key) for name, o in b.sig.ops.items()}

    def __getattr__(self, name):
        ops = self.__dict__.get("ops", {})
        if name in ops:
            return ops[name]
        raise AttributeError("%s has no op '%s' (it has: %s)" % (self.__dict__.get("path"), name, ", ".join(sorted(ops))))

    def sync(self):
        """Wait for every call so far with libsyncrt's watchdog; raises
        RuntimeFailure with the runtime's message if one failed."""
        self._ctx.sync()

    def close(self):
        """Finalise this module's libsyncrt context (collective: every rank)."""
        self._ctx.close()


def load(path, ranks=None, entry=None, cache=None, **params):
    """Compile `path` (-D NAME=VALUE for each keyword) for `ranks` ranks
    (default WORLD_SIZE), build its launcher into the cache (SYNCC_CACHE,
    default ~/.cache/syncc) and make this rank's libsyncrt context.  Every
    rank calls it, in the same order as its other loads."""
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
