"""The Python package (python/syncc) without torch or a GPU: signatures from
syncc, the argument checker on stand-in tensors, the cache key, the cache
itself, compile errors as exceptions, the ctypes layout of syn_tensor
against the C header, and (where libsyncrt.so was built) the launcher's
shared object.  With torch installed, the checker also runs on real (CPU)
torch tensors.  Found by tests/run."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile


def tests(root, run, Fail):
    sys.path.insert(0, os.path.join(root, "python"))
    import syncc
    from syncc import build, signature, runtime

    example = os.path.join(root, "examples", "row_linear.syn")
    small = {"M": 64, "N": 32, "K": 128}

    def expect(cond, what):
        if not cond:
            raise Fail(" " + what)

    def raises(exc, fn, *want):
        try:
            fn()
        except exc as e:
            for w in want:
                if w not in str(e):
                    raise Fail(" %s raised, but its message lacks %r:\n%s" % (exc.__name__, w, e))
            return e
        raise Fail(" expected %s (%s)" % (exc.__name__, " / ".join(want)))

    class Dev:
        def __init__(self, typ, index):
            self.type, self.index = typ, index

    class T:
        """A stand-in tensor: the duck-typed interface the checker reads."""

        def __init__(self, dtype, shape, device="cuda:1", contiguous=True, ptr=4096):
            self.dtype, self.shape, self.device = dtype, shape, device
            self._c, self._p = contiguous, ptr

        def is_contiguous(self):
            return self._c

        def stride(self):
            return (1, self.shape[0])

        def data_ptr(self):
            return self._p

    def sig_p2():
        return build.read_signature(build.find_tools(), example, small, 2).ops["row_linear"]

    def t_signature():
        op = sig_p2()
        expect([a.name for a in op.args] == ["x", "w"] and op.ranks == 2, "row_linear's arguments x, w at P=2")
        expect(op.args[0].shape == (64, 128) and op.args[0].local == (64, 64) and op.args[0].placement == "split"
               and op.args[0].dim == 1, "x: bf16[64, 128] @split(1), local (64, 64)")
        expect(op.args[1].local == (64, 32) and op.results[0].local == (64, 32) and op.results[0].placement == "repl",
               "w local (64, 32); the result @repl (64, 32)")
        expect(op.args[0].dtype == "bf16" and op.args[0].torch_dtype_name() == "bfloat16", "bf16 is torch.bfloat16")

    def t_checker_accepts():
        op = sig_p2()
        for dt in ("torch.bfloat16", "bfloat16", "bf16"):
            signature.check_call(op, [T(dt, (64, 64)), T(dt, [64, 32], device=Dev("cuda", 1))], 1, 1)

    def t_checker_rejects():
        op = sig_p2()
        x, w = T("torch.bfloat16", (64, 64)), T("torch.bfloat16", (64, 32))
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [x], 1, 1),
               "row_linear takes 2 arguments (x, w), got 1")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [T("torch.float32", (64, 64)), w], 1, 1),
               "row_linear: argument 0 'x': dtype is torch.float32, expected bf16 (torch.bfloat16)")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [T("torch.bfloat16", (64, 128)), w], 1, 1),
               "row_linear: argument 0 'x': shape is (64, 128), expected (64, 64)",
               "this rank's piece of bf16[64, 128] @split(1) over 2 ranks (rank 1)",
               "dim 1 is 128, expected 64 (the whole tensor was passed")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [x, T("torch.bfloat16", (64, 32, 1))], 1, 1),
               "argument 1 'w': shape is (64, 32, 1)", "3 dimensions, expected 2")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [x, T("torch.bfloat16", (64, 32), "cpu")], 1, 1),
               "argument 1 'w': is on cpu, expected cuda:1 (this rank's GPU)")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [T("torch.bfloat16", (64, 64), Dev("cuda", 0)), w], 1, 1),
               "argument 0 'x': is on cuda:0, expected cuda:1")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [T("torch.bfloat16", (64, 64), contiguous=False), w], 1, 1),
               "argument 0 'x': is not contiguous (strides (1, 64))", "x.contiguous()")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [x, T("torch.bfloat16", (64, 32), ptr=4098)], 1, 1),
               "argument 1 'w': its data is not 16-byte aligned")
        raises(syncc.ArgumentError, lambda: signature.check_call(op, [x, 3], 1, 1),
               "argument 1 'w': expected a tensor", "got int")
        raises(syncc.ArgumentError, lambda: signature.check_world(op, 4, 3),
               "row_linear: compiled for 2 ranks, but this process is rank 3 of WORLD_SIZE=4")

    def t_cache_key():
        k = build.cache_key(b"op", {"M": 1, "N": 2}, 2, None, "syncc 0.1.0", "t")
        expect(k == build.cache_key(b"op", {"N": 2, "M": 1}, 2, None, "syncc 0.1.0", "t"), "-D order does not matter")
        others = [build.cache_key(b"op ", {"M": 1, "N": 2}, 2, None, "syncc 0.1.0", "t"),
                  build.cache_key(b"op", {"M": 1, "N": 3}, 2, None, "syncc 0.1.0", "t"),
                  build.cache_key(b"op", {"M": 1, "N": 2}, 4, None, "syncc 0.1.0", "t"),
                  build.cache_key(b"op", {"M": 1, "N": 2}, 2, "f", "syncc 0.1.0", "t"),
                  build.cache_key(b"op", {"M": 1, "N": 2}, 2, None, "syncc 0.2.0", "t"),
                  build.cache_key(b"op", {"M": 1, "N": 2}, 2, None, "syncc 0.1.0", "u")]
        expect(len(set(others + [k])) == 7, "source, -D, ranks, entry, version and tools each change the key")
        raises(syncc.SynccError, lambda: build.cache_key(b"op", {"M": [1]}, 2, None, "v"), "M=[1]")

    def t_cache():
        d = tempfile.mkdtemp(prefix="syncc-pytest-")
        try:
            b1 = build.compile_file(example, small, 2, cache=d, link=False)
            expect(os.path.isfile(os.path.join(b1.dir, "ops.c")) and os.path.isfile(os.path.join(b1.dir, "ops.h")),
                   "the build holds syncc's launcher")
            stamp = os.stat(os.path.join(b1.dir, "ops.c")).st_mtime_ns
            b2 = build.compile_file(example, dict(small), 2, cache=d, link=False)
            expect(b2.dir == b1.dir and os.stat(os.path.join(b2.dir, "ops.c")).st_mtime_ns == stamp and
                   b2.sig.ops["row_linear"].args[0].local == (64, 64), "a second load reuses the cached build")
            b3 = build.compile_file(example, dict(small, M=128), 2, cache=d, link=False)
            expect(b3.dir != b1.dir and b3.sig.ops["row_linear"].results[0].local == (128, 32), "new -D, new build")
            left = [f for f in os.listdir(d) if ".tmp" in f]
            expect(not left, "no temporary build directories left: %s" % left)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def t_cache_uses():
        """A module reached through `use` is part of the key: editing it is a new build."""
        d = tempfile.mkdtemp(prefix="syncc-pytest-")
        try:
            lib, main, cache = os.path.join(d, "mylib.syn"), os.path.join(d, "main.syn"), os.path.join(d, "cache")
            with open(lib, "w") as f:
                f.write("kernel act(x) = x * 2.0;\n")
            with open(main, "w") as f:
                f.write("use mylib;\nparam N = 1024;\nop f(x: f32[N] @repl) -> f32[N] @repl { return act(x); }\n")
            b1 = build.compile_file(main, {}, 2, cache=cache, link=False)
            with open(lib, "w") as f:
                f.write("kernel act(x) = x * 3.0;\n")
            b2 = build.compile_file(main, {}, 2, cache=cache, link=False)
            with open(os.path.join(b2.dir, "ops.ptx")) as f:
                ptx = f.read()
            expect(b2.dir != b1.dir, "an edited used module is a new build (same cache dir %s)" % b2.dir)
            expect("0f40400000" in ptx and "0f40000000" not in ptx, "the new build multiplies by 3.0, not 2.0")
            expect(b2.sig.files == [os.path.realpath(main), os.path.realpath(lib)],
                   "the signature lists main.syn and mylib.syn: %s" % b2.sig.files)
            with open(lib, "w") as f:
                f.write("kernel act(x) = x * 2.0;\n")
            b3 = build.compile_file(main, {}, 2, cache=cache, link=False)
            expect(b3.dir == b1.dir, "the old text again is the old build")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def t_cache_dir_errors():
        d = tempfile.mkdtemp(prefix="syncc-pytest-")
        try:
            raises(syncc.SynccError, lambda: build.compile_file(example, small, 2, cache="/proc/nope", link=False),
                   "cache directory /proc/nope", "SYNCC_CACHE")
            plain = os.path.join(d, "plain")
            with open(plain, "w") as f:
                f.write("not a directory\n")
            raises(syncc.SynccError, lambda: build.compile_file(example, small, 2, cache=plain, link=False),
                   "cache directory %s" % plain, "SYNCC_CACHE")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def t_syncc_cannot_run():
        d = tempfile.mkdtemp(prefix="syncc-pytest-")
        try:
            missing = os.path.join(d, "no-syncc")
            raises(syncc.SynccError, lambda: build.version(build.Tools(missing, None, None)), "cannot run " + missing)
            raises(syncc.SynccError, lambda: build.compile_file(example, small, 2, cache=d, link=False,
                                                                tools=build.Tools(missing, None, None)),
                   "cannot run " + missing)
            slow = os.path.join(d, "slow-syncc")
            with open(slow, "w") as f:
                f.write("#!/bin/sh\nexec sleep 5\n")
            os.chmod(slow, 0o755)
            raises(syncc.SynccError, lambda: build.version(build.Tools(slow, None, None), timeout=0.3),
                   slow + " --version did not answer within 0.3 s")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def t_boot_port():
        """The fallback port without torch.distributed (torch hidden, so the
        same with torch installed): MASTER_PORT + n, wrapped below 65536; a
        MASTER_PORT that is not a port is a SynccError."""
        prog = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, %r)\n"
                "from syncc import runtime\n"
                "print(' '.join(str(runtime.boot_port()) for _ in range(3)))\n") % os.path.join(root, "python")
        env = {k: v for k, v in os.environ.items() if k not in ("SYNC_BOOT_PORT", "MASTER_PORT")}
        for port, want in (("29500", "29501 29502 29503"), ("65534", "65535 1024 1025")):
            p = subprocess.run([sys.executable, "-c", prog], capture_output=True, timeout=60,
                               env=dict(env, MASTER_PORT=port))
            got = p.stdout.decode().strip()
            expect(p.returncode == 0 and got == want, "MASTER_PORT=%s: ports %r, expected %r; stderr:\n%s" % (
                port, got, want, p.stderr.decode()[-2000:]))
        p = subprocess.run([sys.executable, "-c", prog], capture_output=True, timeout=60,
                           env=dict(env, MASTER_PORT="http"))
        err = p.stderr.decode()
        expect(p.returncode != 0 and "SynccError: MASTER_PORT=http is not a TCP port" in err,
               "a bad MASTER_PORT is a SynccError: " + err[-2000:])

    def t_compile_errors():
        d = tempfile.mkdtemp(prefix="syncc-pytest-")
        try:
            bad = os.path.join(d, "bad.syn")
            with open(bad, "w") as f:
                f.write("op f(x: f32[4]) -> f32[4] {\n    return y;\n}\n")
            e = raises(syncc.CompileError, lambda: build.compile_file(bad, {}, 1, cache=d, link=False),
                       "%s:2:12: error: unknown name 'y'" % bad, "errors in the input")
            expect(e.exit_status == 1, "exit status 1 kept")
            e = raises(syncc.CompileError, lambda: build.compile_file(example, {"Q": 3}, 2, cache=d, link=False),
                       "no param 'Q'", "bad command line")
            expect(e.exit_status == 2, "exit status 2 kept")
            raises(syncc.CompileError, lambda: build.compile_file(os.path.join(d, "none.syn"), {}, 1, cache=d),
                   "cannot read")
            raises(syncc.ArgumentError, lambda: syncc.load(example, ranks=4, cache=d, **small),
                   "ranks=4, but this process is rank 0 of WORLD_SIZE=1")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def t_fastcall():
        """The C call path (_fastcall.c) without torch or a GPU: built with
        warnings as errors, then its Caller made by Launcher.caller over
        stand-in launchers (C functions that record what they were given,
        and whether they ran without the GIL) and duck-typed tensors -- the
        common case fills the structs and calls the launcher; every other
        case goes to the Python path; errors a tensor raises that are not
        ordinary exceptions propagate; a failing launcher raises through
        fail; a module closed before or during the call and the profiler
        are routed away; two results come back as a tuple; no tensor or
        reference leaks; a failed build leaves the ctypes path, saying why."""
        if runtime.python_include() is None or sys.version_info < (3, 9):
            return  # the package then takes the ctypes path (fastcall_why)
        import ctypes
        import gc
        d = tempfile.mkdtemp(prefix="syncc-fastcall-")
        cc = os.environ.get("CC", "cc")
        inc = ["-I", runtime.python_include(), "-I", os.path.join(root, "runtime")]
        try:
            p = subprocess.run([cc, "-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror"] + inc +
                               ["-o", os.path.join(d, "w.so"), runtime.FASTCALL_SRC], capture_output=True, timeout=120)
            expect(p.returncode == 0, "_fastcall.c with -Werror:\n" + p.stderr.decode()[-2000:])
            src = os.path.join(d, "fake.c")
            with open(src, "w") as f:
                f.write('#include "syncrt.h"\nextern int PyGILState_Check(void) __attribute__((weak));\n'
                        'void *seen[8]; long long dims[8]; int calls, ret, gil = -1;\n'
                        'static int rec(void *c, void *s, syn_tensor *const *t, int n) {\n'
                        ' seen[0] = c; seen[1] = s; for (int i = 0; i < n; i++) { seen[2 + i] = t[i]->data;'
                        ' dims[i] = t[i]->dims[0]; }\n'
                        ' gil = PyGILState_Check ? PyGILState_Check() : -1; calls++; return ret;\n}\n'
                        'int syncc_row_linear_on_stream(void *c, void *s, syn_tensor *const *t) { return rec(c, s, t, 3); }\n'
                        'int syncc_two_on_stream(void *c, void *s, syn_tensor *const *t) { return rec(c, s, t, 4); }\n')
            p = subprocess.run([cc, "-std=c11", "-fPIC", "-shared", "-I", os.path.join(root, "runtime"), "-o",
                                os.path.join(d, "fake.so"), src], capture_output=True, timeout=60)
            expect(p.returncode == 0, "the stand-in launchers: " + p.stderr.decode()[-500:])
            fake = ctypes.CDLL(os.path.join(d, "fake.so"))
            fake._name = "fake.so"
            seen = (ctypes.c_void_p * 8).in_dll(fake, "seen")
            calls, ret, gil = (ctypes.c_int.in_dll(fake, n) for n in ("calls", "ret", "gil"))
            expect(runtime.fastcall_module(cache=d) is not None, "built and loaded: %s" % runtime.fastcall_why)

            class NS:
                pass
            torch = NS()
            torch.bfloat16, torch.float32, torch.Size = "BF16", "F32", tuple
            torch._C, torch.autograd, torch.autograd.profiler = NS(), NS(), NS()
            torch._C._cuda_getCurrentRawStream = lambda dev: 0x5000 + dev
            torch.autograd.profiler._is_profiler_enabled = False
            live = [0]

            class FT:
                """A stand-in CUDA tensor (live[0] counts those alive)."""
                next_ptr = 1 << 20
                on_new = None

                def __init__(self, dtype, shape, dev=1, contiguous=True, ptr=None):
                    self.dtype, self.shape, self._dev, self._c = dtype, tuple(shape), dev, contiguous
                    self._p = ptr if ptr is not None else FT.next_ptr
                    FT.next_ptr += 1 << 12
                    live[0] += 1

                def __del__(self):
                    live[0] -= 1

                def get_device(self):
                    return self._dev

                def is_contiguous(self):
                    return self._c

                def data_ptr(self):
                    return self._p

                def new_empty(self, shape, dtype):
                    if FT.on_new:
                        FT.on_new()
                    made.append("new_empty")
                    return FT(dtype, shape, self._dev)

            def empty_like(t):
                if FT.on_new:
                    FT.on_new()
                made.append("empty_like")
                return FT(t.dtype, t.shape, t._dev)
            made = []
            torch.empty_like = empty_like

            class Ctx:
                device, rank = 1, 0

                def __init__(self):
                    self.ptr = ctypes.c_void_p(0x1234)

                def fail(self, what, r):
                    raise syncc.RuntimeFailure("%s: status %d" % (what, r), "x")

            class Ln(runtime.Launcher):
                def __call__(self, ctx, ts):  # the Python path, which would import torch
                    slow.append(ts)
                    return "slow"

            slow, routed = [], []
            ctx = Ctx()
            ln = Ln(fake, sig_p2())  # row_linear at P = 2: x bf16 (64, 64), w bf16 (64, 32) -> bf16 (64, 32)
            c = ln.caller(ctx, torch, lambda *ts: routed.append(ts) or "routed", cache=d)
            expect(c is not None, "Launcher.caller made a Caller: %s" % runtime.fastcall_why)
            x, w = FT("BF16", (64, 64)), FT("BF16", (64, 32))
            y = c((x, w))
            expect(isinstance(y, FT) and y.shape == (64, 32) and y.dtype == "BF16", "the result: %r" % (y,))
            expect(made == ["empty_like"] and ln.likes == (1,), "a result of w's shape and dtype: empty_like(w) (%s %s)"
                   % (made, ln.likes))
            expect(calls.value == 1 and list(seen)[:5] == [0x1234, 0x5001, x._p, w._p, y._p],
                   "the launcher got the context, the stream and the addresses: %s" % list(seen))
            expect(list((ctypes.c_longlong * 8).in_dll(fake, "dims"))[:3] == [64, 64, 64],
                   "the structs' dims are the signature's")
            # (-1: the interpreter exports no PyGILState_Check to the stand-in)
            expect(gil.value == (0 if hasattr(ctypes.pythonapi, "PyGILState_Check") else -1),
                   "the launcher runs without the GIL (PyGILState_Check %d)" % gil.value)
            for name, args in [("a dtype", (FT("F32", (64, 64)), w)), ("a shape", (FT("BF16", (64, 65)), w)),
                               ("a device", (FT("BF16", (64, 64), dev=0), w)),
                               ("a layout", (x, FT("BF16", (64, 32), contiguous=False))),
                               ("an address", (x, FT("BF16", (64, 32), ptr=(1 << 20) + 2))),
                               ("a count", (x,)), ("a non-tensor", (x, 7))]:
                del slow[:]
                r = c(args)
                expect(r == "slow" and slow == [args] and calls.value == 1, "%s off the signature: the Python path" % name)

            class Stop(FT):
                def get_device(self):
                    raise KeyboardInterrupt

            raises(KeyboardInterrupt, lambda: c((Stop("BF16", (64, 64)), w)))
            ret.value = -5
            raises(syncc.RuntimeFailure, lambda: c((x, w)), "row_linear: status -5")
            ret.value = 0
            torch.autograd.profiler._is_profiler_enabled = True
            expect(c((x, w)) == "routed" and routed == [(x, w)], "the profiler on: the torch operator")
            torch.autograd.profiler._is_profiler_enabled = False
            gc.collect()
            bad = FT("F32", (64, 64))
            before = ([sys.getrefcount(o) for o in (x, w, c, bad)], live[0])
            for _ in range(1000):
                c((x, w))
                c((bad, w))
            ret.value = -3
            for _ in range(100):
                try:
                    c((x, w))
                except syncc.RuntimeFailure:
                    pass
            ret.value = 0
            del slow[:]  # (the stand-in Python path keeps what it was given)
            gc.collect()
            after = ([sys.getrefcount(o) for o in (x, w, c, bad)], live[0])
            expect(after == before, "no references or tensors leak: %s %s" % (before, after))
            n = calls.value

            def close():
                ctx.ptr.value = None  # Context.close()
            FT.on_new = close
            expect(c((x, w)) == "slow" and calls.value == n, "the module closed during the call: the Python path")
            FT.on_new = None
            expect(c((x, w)) == "slow" and calls.value == n, "a closed module: the Python path")
            ctx.ptr.value = 0x1234
            raises(TypeError, lambda: c(x, w), "one tuple of tensors")
            raises(TypeError, lambda: c.__init__(**{}), "initialised once")
            raises(TypeError, lambda: type(c).__new__(type(c))((x, w)), "not initialised")
            raises(ValueError, lambda: type(c)(fn=0, ctx=1, structs=1, dtypes=(), shapes=(), out_shapes=(), out_dtypes=(),
                                               device=0, stream=len, profiler=None, routed=None, slow=len, fail=len,
                                               keep=None), "fn is NULL")
            raises(ValueError, lambda: type(c)(fn=1, ctx=1, structs=1, dtypes=("BF16",), shapes=(), out_shapes=(),
                                               out_dtypes=(), device=0, stream=len, profiler=None, routed=None,
                                               slow=len, fail=len, keep=None), "shapes must be a tuple of 1")

            # two results: a tuple, each address in its place; errors of new_empty and of fail
            two = signature.parse('{"syncc": "t", "source": "t", "files": [], "profile": null, "ranks": 1, "ops": '
                                  '[{"name": "two", "ranks": 1, "args": [{"name": "x", "dtype": "bf16", "shape": [8], '
                                  '"placement": "repl", "local": [8], "type": "bf16[8]"}], "results": ['
                                  '{"name": "r0", "dtype": "bf16", "shape": [8], "placement": "repl", "local": [8], '
                                  '"type": "bf16[8]"}, {"name": "r1", "dtype": "f32", "shape": [4], "placement": "repl", '
                                  '"local": [4], "type": "f32[4]"}]}]}').ops["two"]
            c2 = Ln(fake, two).caller(ctx, torch, None, cache=d)
            v = FT("BF16", (8,))
            del made[:]
            r0, r1 = c2((v,))
            expect((r0.shape, r0.dtype, r1.shape, r1.dtype) == ((8,), "BF16", (4,), "F32") and
                   list(seen)[2:5] == [v._p, r0._p, r1._p], "two results: a tuple, the addresses in order")
            expect(made == ["empty_like", "new_empty"], "r0 like v, r1 (f32[4]) new: %s" % made)
            for bad_likes in [(5,), (-2,), ("0",)]:
                raises(ValueError, lambda: type(c)(
                    fn=1, ctx=1, structs=1, dtypes=("BF16",), shapes=((8,),), out_shapes=((8,),), out_dtypes=("BF16",),
                    device=0, stream=len, profiler=None, routed=None, slow=len, fail=len, keep=None,
                    likes=bad_likes, empty_like=len), "likes holds an argument index")
            raises(ValueError, lambda: type(c)(
                fn=1, ctx=1, structs=1, dtypes=("BF16",), shapes=((8,),), out_shapes=((8,),), out_dtypes=("BF16",),
                device=0, stream=len, profiler=None, routed=None, slow=len, fail=len, keep=None,
                likes=(0,), empty_like=7), "empty_like must be callable")
            FT.on_new = lambda: 1 / 0
            raises(ZeroDivisionError, lambda: c2((v,)))
            FT.on_new = None
            ret.value = -2
            c3 = type(c)(fn=ctypes.cast(fake.syncc_row_linear_on_stream, ctypes.c_void_p).value,
                         ctx=ctypes.addressof(ctx.ptr), structs=ctypes.addressof(ln.structs), dtypes=("BF16", "BF16"),
                         shapes=((64, 64), (64, 32)), out_shapes=((64, 32),), out_dtypes=("BF16",), device=1,
                         stream=torch._C._cuda_getCurrentRawStream, profiler=None, routed=None,
                         slow=len, fail=lambda r: None, keep=(ln, ctx.ptr))
            raises(RuntimeError, lambda: c3((x, w)), "the launcher returned -2")
            ret.value = 0

            # a build that fails: the ctypes path, and why
            old = os.environ.get("CC")
            os.environ["CC"] = "false"
            try:
                mod, why = runtime._fastcall_load(os.path.join(d, "cache2"))
            finally:
                if old is None:
                    del os.environ["CC"]
                else:
                    os.environ["CC"] = old
            expect(mod is False and "the C path was not built" in why and "false" in why,
                   "a failed build: the ctypes path, saying why (%s)" % why)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def t_syn_tensor_layout():
        """ctypes' syn_tensor against the C compiler's."""
        d = tempfile.mkdtemp(prefix="syncc-pytest-")
        try:
            src = os.path.join(d, "l.c")
            with open(src, "w") as f:
                f.write('#include <stdio.h>\n#include <stddef.h>\n#include "syncrt.h"\nint main(void) {\n'
                        'printf("%zu %zu %zu %zu %zu %zu %d %d %d %d\\n", sizeof(syn_tensor), offsetof(syn_tensor, data),'
                        ' offsetof(syn_tensor, dtype), offsetof(syn_tensor, rank), offsetof(syn_tensor, dims),'
                        ' offsetof(syn_tensor, strides), CD_F32, CD_F16, CD_BF16, CD_I32);\nreturn 0;\n}\n')
            p = subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-I", os.path.join(root, "runtime"), "-o",
                                os.path.join(d, "l"), src], capture_output=True, timeout=60)
            expect(p.returncode == 0, "cc: " + p.stderr.decode()[-500:])
            got = subprocess.run([os.path.join(d, "l")], capture_output=True, timeout=60).stdout.decode().split()
            S = runtime.SynTensor
            mine = [str(x) for x in (runtime.ctypes.sizeof(S), S.data.offset, S.dtype.offset, S.rank.offset,
                                     S.dims.offset, S.strides.offset)] + \
                   [str(signature.DTYPES[k][0]) for k in ("f32", "f16", "bf16", "i32")]
            expect(got == mine, "syn_tensor layout: C %s, ctypes %s" % (got, mine))
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def t_buckets():
        """Bucketed loads without a GPU: the parameter split, the limits,
        and BucketOp's dispatch by argument shapes on stand-in ops."""
        b, plain = syncc._bucket_values({"M": [1024, 2048], "N": 64})
        expect(b == {"M": [1024, 2048]} and plain == {"N": 64}, "M buckets, N plain: %s %s" % (b, plain))
        raises(syncc.ArgumentError, lambda: syncc._bucket_values({"M": []}), "distinct values, at least one")
        raises(syncc.ArgumentError, lambda: syncc._bucket_values({"M": [1, 1]}), "distinct values")
        raises(syncc.ArgumentError, lambda: syncc._bucket_values({"M": list(range(8)), "N": list(range(5))}),
               "40 buckets, more than 32")

        class Small:
            def __init__(self, tag):
                self.tag = tag

            def __call__(self, *ts):
                return self.tag

        op = syncc.BucketOp("f", {((8, 4), (4,)): Small("a"), ((16, 4), (4,)): Small("b")}, "M in [8, 16]")
        expect(op(T("bf16", (16, 4)), T("bf16", (4,))) == "b" and op(T("bf16", (8, 4)), T("bf16", (4,))) == "a",
               "each call to the bucket of its shapes")
        raises(syncc.ArgumentError, lambda: op(T("bf16", (9, 4)), T("bf16", (4,))),
               "f: argument shapes (9, 4), (4,) match no bucket of M in [8, 16]; the buckets take (8, 4), (4,); "
               "(16, 4), (4,)")

    def t_torch_schema():
        from syncc import torchop

        class A:
            def __init__(self, name):
                self.name = name

        class Sig:
            def __init__(self, name, args, nres):
                self.name, self.args, self.results = name, [A(a) for a in args], [A("r") for _ in range(nres)]

        got = torchop.schema(sig_p2())
        expect(got == "(Tensor x, Tensor w) -> Tensor", "row_linear's torch schema: %s" % got)
        got = torchop.schema(Sig("f", ["self", "out", "x", "x", "2bad"], 2))
        expect(got == "(Tensor a0, Tensor a1, Tensor x, Tensor a3, Tensor a4) -> (Tensor, Tensor)",
               "names the schema cannot take become a<i>, two results a tuple: %s" % got)
        a, b = torchop.op_name(sig_p2(), "ab-cd/0123456789abcdef"), torchop.op_name(sig_p2(), "ab-cd/0123456789abcdef")
        expect(a != b and a.startswith("row_linear_abcd01234567_"), "operator names unique per load: %s %s" % (a, b))

    def t_pip_install():
        """pip install ./python into a fresh target: the installed package
        (run from elsewhere, no SYNCC) finds this tree's syncc through the
        _tree.py setup.py wrote, and python -m syncc --version says so."""
        d = tempfile.mkdtemp(prefix="syncc-pip-")
        made = [p for p in (os.path.join(root, "python", "build"), os.path.join(root, "python", "syncc.egg-info"))
                if not os.path.exists(p)]
        try:
            cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", os.path.join(d, "t")]
            if importlib.util.find_spec("setuptools") and importlib.util.find_spec("wheel"):
                cmd.append("--no-build-isolation")  # no download needed
            env = dict(os.environ, SYNCC_NO_MAKE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            p = subprocess.run(cmd + [os.path.join(root, "python")], capture_output=True, timeout=240, env=env)
            expect(p.returncode == 0, "pip install ./python failed:\n%s" % p.stderr.decode("utf-8", "replace")[-2000:])
            expect(os.path.isfile(os.path.join(d, "t", "syncc", "_fastcall.c")),
                   "the installed package carries _fastcall.c (the C call path builds it at run time)")
            env = {k: v for k, v in os.environ.items() if k not in ("SYNCC", "SYNCRT_LIB", "PYTHONPATH")}
            env["PYTHONPATH"] = os.path.join(d, "t")
            p = subprocess.run([sys.executable, "-m", "syncc", "--version"], capture_output=True, timeout=60, env=env,
                               cwd=d)
            outp = p.stdout.decode()
            expect(p.returncode == 0 and outp.startswith("syncc (python) ") and
                   ("syncc       %s (syncc " % os.path.join(root, "syncc")) in outp,
                   "python -m syncc --version from the installed package:\n%s%s" % (outp, p.stderr.decode()))
            p = subprocess.run([sys.executable, "-m", "syncc", "--bogus"], capture_output=True, timeout=60, env=env, cwd=d)
            expect(p.returncode == 2 and b"usage: python -m syncc" in p.stderr, "a bad option: usage, exit 2")
        finally:
            shutil.rmtree(d, ignore_errors=True)
            for m in made:
                shutil.rmtree(m, ignore_errors=True)

    out = [("python/" + k[2:], v) for k, v in sorted(locals().items()) if k.startswith("t_")]

    tools = build.find_tools()
    if tools.libsyncrt and tools.include:
        def launcher_so():
            d = tempfile.mkdtemp(prefix="syncc-pytest-")
            try:
                b = build.compile_file(example, small, 2, cache=d)
                with open(b.so, "rb") as f:
                    data = f.read()
                expect(data[:4] == b"\x7fELF" and b"syn_row_linear" in data and b"libsyncrt.so" in data,
                       "ops.so is a shared object with syn_row_linear, linked against libsyncrt.so")
            finally:
                shutil.rmtree(d, ignore_errors=True)
        out.append(("python/launcher-so (links against libsyncrt.so)", launcher_so))

    if importlib.util.find_spec("torch") is not None:
        def torch_checker():
            import torch
            op = sig_p2()
            x = torch.zeros(64, 64, dtype=torch.bfloat16)
            w = torch.zeros(64, 32, dtype=torch.bfloat16)
            raises(syncc.ArgumentError, lambda: signature.check_call(op, [x, w], 0, 0), "is on cpu, expected cuda:0")
            raises(syncc.ArgumentError, lambda: signature.check_call(op, [x.float(), w], 0, 0), "dtype is torch.float32")
            raises(syncc.ArgumentError, lambda: signature.check_call(op, [torch.zeros(64, 128, dtype=torch.bfloat16), w], 0, 0),
                   "shape is (64, 128), expected (64, 64)")
        out.append(("python/torch-checker (CPU torch tensors)", torch_checker))

        def torch_fake():
            """The custom op's fake implementation under FakeTensorMode: the
            results' local shapes and dtypes, no kernel run (a CPU stand-in
            for the launcher's CUDA kernel, which is registered for CUDA)."""
            import torch
            from torch._subclasses.fake_tensor import FakeTensorMode
            from syncc import torchop
            op = sig_p2()
            called = []
            top = torchop.register(op, "cpu-test-key", lambda ts: called.append(ts), torch.device("cpu"))
            with FakeTensorMode():
                x = torch.empty(64, 64, dtype=torch.bfloat16)
                w = torch.empty(64, 32, dtype=torch.bfloat16)
                y = top(x, w)
            expect(tuple(y.shape) == (64, 32) and y.dtype == torch.bfloat16 and not called,
                   "fake result bf16 (64, 32), launcher not called: %s %s" % (tuple(y.shape), y.dtype))
            expect(str(top).startswith("syncc.row_linear_cputestkey_"), "operator name: %s" % top)
        out.append(("python/torch-fake (custom op's fake implementation)", torch_fake))
    return out
