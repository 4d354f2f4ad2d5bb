"""libsyncrt through ctypes: one syn_ctx per loaded file, its launchers
called with syn_tensor structs made from torch tensors, on torch's current
stream (syn_stream_enter / syn_stream_leave, runtime/rt_stream.c)."""
import ctypes
import hashlib
import os
import socket
import subprocess
import sys
import sysconfig
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
        self._torch_device = None

    @property
    def torch_device(self):
        if self._torch_device is None:
            import torch
            self._torch_device = torch.device("cuda", self.device)
        return self._torch_device

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
            # zeroed in place: the C callers read the context through
            # this c_void_p's buffer (_fastcall.c) and take the Python
            # path, which says the module was closed
            self.ptr.value = None


def _raw_stream(torch, dev):
    """torch's current stream on dev as a CUstream: the private accessor
    Inductor's generated code calls (no Stream object made per call), else
    the public API."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(dev.index) if raw is not None else torch.cuda.current_stream(dev).cuda_stream


class Launcher:
    """syncc_<op>_on_stream of a loaded shared object: the op on torch's
    current stream in one foreign call.  The syn_tensor structs are made
    once (dtype, rank, dims come from the signature); a call only checks
    its tensors, allocates the results and fills in the addresses."""

    def __init__(self, so, op):
        self.op = op
        fn = getattr(so, "syncc_%s_on_stream" % op.name, None)
        if fn is None:
            raise SynccError("%s: the launcher has no syncc_%s_on_stream (built by an older syncc?)" % (so._name, op.name))
        specs = list(op.args) + list(op.results)
        n = len(specs)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.fn = fn
        self.nargs = len(op.args)
        self.structs = (SynTensor * n)()
        for i, spec in enumerate(specs):
            st = self.structs[i]
            st.dtype = signature.DTYPES[spec.dtype][0]
            st.rank = len(spec.local)
            for d, x in enumerate(spec.local):
                st.dims[d] = x
        self.ptrs = (ctypes.c_void_p * n)(*[ctypes.addressof(self.structs[i]) for i in range(n)])
        self.ptrs_addr = ctypes.addressof(self.ptrs)
        self.fast = None  # per argument (torch dtype, shape), made at the first call

    def _tables(self, torch):
        if self.fast is None:
            op = self.op
            self.fast = [(getattr(torch, a.torch_dtype_name()), torch.Size(a.local)) for a in op.args]
            self.outs = [(torch.Size(r.local), getattr(torch, r.torch_dtype_name())) for r in op.results]
            # per result, an argument of its shape and dtype, whose
            # empty_like allocates it with nothing to parse (-1: none)
            self.likes = tuple(next((i for i, (dt, s) in enumerate(self.fast) if s == shape and dt is odt), -1)
                               for shape, odt in self.outs)

    def caller(self, ctx, torch, routed, cache=None):
        """This launcher's call in C (_fastcall.c's Caller: caller(tensors)
        -> results), or None where the C path is not built (fastcall_why
        says why): the same checks and the same foreign call as __call__,
        which it falls back to for anything but the common case; `routed`
        (the torch operator, or None) takes the call while torch's profiler
        records.  cache: the build cache the C path is built into."""
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        n = len(self.op.args) + len(self.op.results)
        if raw is None or not self.op.results or not self.nargs or n > FASTCALL_MAX_TENSORS:
            return None
        mod = fastcall_module(cache)
        if mod is None:
            return None
        self._tables(torch)
        name = self.op.name
        return mod.Caller(
            fn=ctypes.cast(self.fn, ctypes.c_void_p).value, ctx=ctypes.addressof(ctx.ptr),
            structs=ctypes.addressof(self.structs),
            dtypes=tuple(dt for dt, _ in self.fast), shapes=tuple(s for _, s in self.fast),
            out_shapes=tuple(s for s, _ in self.outs), out_dtypes=tuple(dt for _, dt in self.outs),
            device=ctx.device, stream=raw, profiler=getattr(torch.autograd, "profiler", None),
            routed=routed, slow=lambda ts: self(ctx, ts), fail=lambda r: ctx.fail(name, r),
            keep=(self, ctx.ptr), likes=self.likes, empty_like=getattr(torch, "empty_like", None))

    def _fast_ptrs(self, tensors, index):
        """The common case in a few attribute reads: every tensor exactly as
        the signature wants it, on the context's GPU (index); their data
        pointers, else None -- the full check then names what is wrong.
        (get_device() is an int: comparing t.device made a device object
        per tensor.)"""
        if len(tensors) != self.nargs:
            return None
        ptrs = []
        for t, (dt, shape) in zip(tensors, self.fast):
            if t.dtype is not dt or t.shape != shape or t.get_device() != index or not t.is_contiguous():
                return None
            p = t.data_ptr()
            if p & 15:
                return None
            ptrs.append(p)
        return ptrs

    def __call__(self, ctx, tensors):
        """Checks, allocates the results with torch, runs on torch's current
        stream; returns the result tensor (or a tuple of them)."""
        import torch
        op = self.op
        if not ctx.ptr:
            raise SynccError("%s: the module was closed" % op.name)
        dev = ctx.torch_device
        self._tables(torch)
        ptrs = self._fast_ptrs(tensors, ctx.device)
        if ptrs is None:
            signature.check_call(op, tensors, ctx.rank, ctx.device)
            ptrs = [t.data_ptr() for t in tensors]
        # new_empty on an argument (already on dev) skips torch.empty's
        # device-argument parsing: 1-2 us a call at small shapes
        # (bench/results/2026-12-04-host-breakdown-h200.md).
        # A result of an argument's shape and dtype: its empty_like, with
        # nothing to parse (_fastcall.c's result() does the same).
        like = tensors[0] if tensors else None
        if like is not None:
            outs = [torch.empty_like(tensors[a]) if a >= 0 else like.new_empty(shape, dtype=dt)
                    for (shape, dt), a in zip(self.outs, self.likes)]
        else:
            outs = [torch.empty(shape, dtype=dt, device=dev) for shape, dt in self.outs]
        st = self.structs
        for i, p in enumerate(ptrs):
            st[i].data = p
        for j, o in enumerate(outs):
            st[self.nargs + j].data = o.data_ptr()
        # After a failure libsyncrt stops (syn_stream_leave returns at once
        # once the context has failed), so torch's stream does not wait for
        # work already enqueued: the caller must synchronise the device or
        # end the process before reusing the tensors (docs/python.md).
        r = self.fn(ctx.ptr, _raw_stream(torch, dev), self.ptrs_addr)
        if r:
            ctx.fail(op.name, r)
        return outs[0] if len(outs) == 1 else tuple(outs)


# ---- the C call path (_fastcall.c) ----

FASTCALL_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_fastcall.c")
FASTCALL_TIMEOUT_S = 120
FASTCALL_MAX_TENSORS = 64  # _fastcall.c's CALLER_MAX_TENSORS
_fastcall = None      # the module once built and loaded; False once that failed
fastcall_why = None   # why calls take the ctypes path, once known
_fastcall_lock = threading.Lock()


def python_include():
    """The directory of this interpreter's Python.h, or None."""
    d = sysconfig.get_paths().get("include")
    return d if d and os.path.isfile(os.path.join(d, "Python.h")) else None


def _fastcall_build(include, cache):
    """_fastcall.c built for this interpreter into the build cache
    (build.cached), keyed by its source, syncrt.h and comm.h (syn_tensor's
    layout), the interpreter and the command.  Returns the path of the
    extension."""
    from . import build
    cc = os.environ.get("CC", "cc")
    name = "_fastcall" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
    cmd = [cc, "-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-I", python_include(), "-I", include,
           "-o", name, FASTCALL_SRC]
    h = hashlib.sha256()
    # syn_tensor's layout: syncrt.h and the comm.h it includes (beside it
    # when installed, ../comm/ in the source tree)
    for path in (FASTCALL_SRC, os.path.join(include, "syncrt.h"), os.path.join(include, "comm.h"),
                 os.path.join(include, "..", "comm", "comm.h")):
        if os.path.exists(path):
            with open(path, "rb") as f:
                h.update(path.encode() + hashlib.sha256(f.read()).digest())
    h.update(("%s|%s" % (sys.version, cmd)).encode())

    def make(tmp):
        p = subprocess.run(cmd, capture_output=True, timeout=FASTCALL_TIMEOUT_S, cwd=tmp)
        if p.returncode != 0:
            raise SynccError("%s failed:\n%s" % (" ".join(cmd), p.stderr.decode("utf-8", "replace")[-2000:]))

    root = os.path.join(cache or build.cache_root(), "fastcall")
    return os.path.join(build.cached(root, h.hexdigest()[:32], [name], make, FASTCALL_SRC), name)


def fastcall_module(cache=None):
    """_fastcall (built at the first call of the process), or None: with
    SYNCC_FASTCALL=0, before Python 3.9, without Python.h or syncrt.h, or
    where the build failed -- fastcall_why says which, and every call then
    takes the ctypes path."""
    global _fastcall, fastcall_why
    with _fastcall_lock:
        if _fastcall is None:
            _fastcall, fastcall_why = _fastcall_load(cache)
        return _fastcall or None


def _fastcall_load(cache):
    if os.environ.get("SYNCC_FASTCALL", "1") == "0":
        return False, "SYNCC_FASTCALL=0"
    if sys.version_info < (3, 9):
        return False, "Python %d.%d: the C path needs 3.9's call API" % sys.version_info[:2]
    if python_include() is None:
        return False, "no Python.h for this interpreter (install its development headers)"
    from . import build
    tools = build.find_tools()
    if not tools.include:
        return False, "syncrt.h not found beside %s" % tools.syncc
    try:
        so = _fastcall_build(tools.include, cache)
        import importlib.machinery
        import importlib.util
        loader = importlib.machinery.ExtensionFileLoader("syncc._fastcall", so)
        spec = importlib.util.spec_from_file_location("syncc._fastcall", so, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except (SynccError, OSError, ImportError, subprocess.TimeoutExpired) as e:
        return False, "the C path was not built: %s" % e
    return mod, None


def check_device(ctx, op_name="load"):
    import torch
    cur = torch.cuda.current_device()
    if cur != ctx.device:
        raise ArgumentError("%s: libsyncrt put rank %d on cuda:%d (LOCAL_RANK), but torch's current device is "
                            "cuda:%d: call torch.cuda.set_device(%d) before syncc.load" % (
                                op_name, ctx.rank, ctx.device, cur, ctx.device))
