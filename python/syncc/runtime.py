"""libsyncrt through ctypes: one syn_ctx per loaded file, its launchers
called with syn_tensor structs made from torch tensors, on torch's current
stream (syn_stream_enter / syn_stream_leave, runtime/rt_stream.c)."""
import ctypes
import os
import socket
import threading

from .errors import ArgumentError, RuntimeFailure, SynccError
from . import signature

SYN_MAX_DIMS = 8


class SynTensor(ctypes.Structure):
    """runtime/syncrt.h's syn_tensor."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * SYN_MAX_DIMS), ("strides", ctypes.c_int64 * SYN_MAX_DIMS)]


_lib = None
_lib_lock = threading.Lock()

# name -> (restype, argtypes)
_API = {
    "syn_init": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]),
    "syn_finalize": (None, [ctypes.c_void_p]),
    "syn_rank": (ctypes.c_int, [ctypes.c_void_p]),
    "syn_nranks": (ctypes.c_int, [ctypes.c_void_p]),
    "syn_device": (ctypes.c_int, [ctypes.c_void_p]),
    "syn_error": (ctypes.c_char_p, [ctypes.c_void_p]),
    "syn_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "syn_sync": (ctypes.c_int, [ctypes.c_void_p]),
    "syn_stream_enter": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "syn_stream_leave": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
}


def library(path):
    """libsyncrt.so, loaded once and RTLD_GLOBAL (the launchers link it)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            try:
                lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                hint = ""
                if "nccl" in str(e).lower():
                    hint = ("; libsyncrt needs the NCCL it was built against, but torch loaded its own first: "
                            "import syncc before torch")
                raise SynccError("cannot load %s: %s%s" % (path, e, hint))
            for name, (res, args) in _API.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            _lib = lib
        return _lib


def _status(lib, r):
    return lib.syn_status_name(r).decode()


def _free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("", 0))
        return s.getsockname()[1]
    finally:
        s.close()


_loads = 0  # contexts made so far; every rank makes them in the same order

# Ports the fallback may pick: above the privileged ones, at most 65535.
PORT_LO, PORT_HI = 1024, 65535


def _env_port(name, default=None):
    v = os.environ.get(name, default)
    try:
        p = int(v)
    except (TypeError, ValueError):
        p = 0
    if not 1 <= p <= PORT_HI:
        raise SynccError("%s=%s is not a TCP port (1 to %d)" % (name, v, PORT_HI))
    return p


def _torch_dist():
    """torch.distributed when torch is installed and it is initialised."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def boot_port():
    """The port of libsyncrt's TCP bootstrap for the next context.  torchrun's
    store (or torch.distributed's) already listens on MASTER_PORT, so not
    that one: with torch.distributed initialised, rank 0 picks a free port
    and broadcasts it; else SYNC_BOOT_PORT if set, else MASTER_PORT + 1 + the
    number of contexts made before (the same on every rank), wrapped back to
    PORT_LO past 65535."""
    global _loads
    _loads += 1
    dist = _torch_dist()
    if dist is not None:
        box = [_free_port() if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return int(box[0])
    if os.environ.get("SYNC_BOOT_PORT"):
        return _env_port("SYNC_BOOT_PORT")
    p = _env_port("MASTER_PORT", "29500") + _loads
    return p if p <= PORT_HI else PORT_LO + (p - PORT_LO) % (PORT_HI + 1 - PORT_LO)


class Context:
    """One rank's syn_ctx (its own NCCL communicator, flags and launcher
    state: a launcher's flags and per-op state are per context, so every
    loaded file gets one)."""

    def __init__(self, lib, port):
        self.lib = lib
        self.ptr = ctypes.c_void_p()
        old = os.environ.get("SYNC_BOOT_PORT")
        os.environ["SYNC_BOOT_PORT"] = str(port)
        try:
            r = lib.syn_init(ctypes.byref(self.ptr), None)
        finally:
            if old is None:
                del os.environ["SYNC_BOOT_PORT"]
            else:
                os.environ["SYNC_BOOT_PORT"] = old
        if r:
            msg = lib.syn_error(self.ptr).decode("utf-8", "replace") if self.ptr else ""
            self.close()
            raise RuntimeFailure("syn_init: %s: %s" % (_status(lib, r), msg or "(no message)"), _status(lib, r))
        self.rank = lib.syn_rank(self.ptr)
        self.nranks = lib.syn_nranks(self.ptr)
        self.device = lib.syn_device(self.ptr)

    def fail(self, what, r):
        name = _status(self.lib, r)
        msg = self.lib.syn_error(self.ptr).decode("utf-8", "replace") if self.ptr else ""
        raise RuntimeFailure("%s: %s: %s" % (what, name, msg or "(no message)"), name)

    def sync(self):
        r = self.lib.syn_sync(self.ptr)
        if r:
            self.fail("sync", r)

    def close(self):
        if self.ptr:
            self.lib.syn_finalize(self.ptr)
            self.ptr = ctypes.c_void_p()


def syn_tensor(t, spec):
    """A syn_tensor of a checked, contiguous torch tensor (strides all zero:
    row-major)."""
    s = SynTensor()
    s.data = t.data_ptr()
    s.dtype = signature.DTYPES[spec.dtype][0]
    s.rank = len(spec.local)
    for i, d in enumerate(spec.local):
        s.dims[i] = d
    return s


class Launcher:
    """syn_<op> of a loaded shared object."""

    def __init__(self, so, op):
        self.op = op
        fn = getattr(so, "syn_" + op.name, None)
        if fn is None:
            raise SynccError("%s: the launcher has no syn_%s" % (so._name, op.name))
        n = len(op.args) + len(op.results)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] + [ctypes.POINTER(SynTensor)] * n
        self.fn = fn

    def __call__(self, ctx, tensors):
        """Checks, allocates the results with torch, runs on torch's current
        stream; returns the result tensor (or a tuple of them)."""
        import torch
        op = self.op
        if not ctx.ptr:
            raise SynccError("%s: the module was closed" % op.name)
        signature.check_call(op, tensors, ctx.rank, ctx.device)
        dev = torch.device("cuda", ctx.device)
        outs = [torch.empty(r.local, dtype=getattr(torch, r.torch_dtype_name()), device=dev) for r in op.results]
        args = [syn_tensor(t, s) for t, s in zip(tensors, op.args)] + \
               [syn_tensor(t, s) for t, s in zip(outs, op.results)]
        stream = ctypes.c_void_p(torch.cuda.current_stream(dev).cuda_stream)
        lib = ctx.lib
        r = lib.syn_stream_enter(ctx.ptr, stream)
        if r:
            ctx.fail(op.name, r)
        r = self.fn(ctx.ptr, *[ctypes.byref(a) for a in args])
        # After a failure libsyncrt stops (syn_stream_leave returns at once
        # once the context has failed), so torch's stream does not wait for
        # work already enqueued: the caller must synchronise the device or
        # end the process before reusing the tensors (docs/python.md).
        r2 = lib.syn_stream_leave(ctx.ptr, stream)
        if r or r2:
            ctx.fail(op.name, r or r2)
        return outs[0] if len(outs) == 1 else tuple(outs)


def check_device(ctx, op_name="load"):
    import torch
    cur = torch.cuda.current_device()
    if cur != ctx.device:
        raise ArgumentError("%s: libsyncrt put rank %d on cuda:%d (LOCAL_RANK), but torch's current device is "
                            "cuda:%d: call torch.cuda.set_device(%d) before syncc.load" % (
                                op_name, ctx.rank, ctx.device, cur, ctx.device))
