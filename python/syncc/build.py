"""Compiling an operator file: syncc writes the launcher (PREFIX.c, .h, .ptx)
and its signature, a C compiler makes the launcher a shared object linked
against libsyncrt.so (as syncrun-gpu's build_launcher does, but linked, not
resolved from the executable).  Results live in a cache directory keyed by
everything that shapes them, so the ranks of a job and later runs reuse
one build; a build is made in a temporary directory and renamed into place,
so ranks building at once never see half of one."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from .errors import CompileError, SynccError
from . import signature

COMPILE_TIMEOUT_S = 600


class Tools:
    """Where syncc, libsyncrt.so and the headers launchers include are."""

    def __init__(self, syncc, libsyncrt, include):
        self.syncc, self.libsyncrt, self.include = syncc, libsyncrt, include


def _repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _install_tree():
    """The source tree `pip install ./python` installed this package from
    (setup.py writes _tree.py), or None."""
    try:
        from . import _tree
    except ImportError:
        return None
    return _tree.TREE


def find_tools():
    """SYNCC and SYNCRT_LIB if set; else the source tree this package sits
    in (python/syncc/ beside a built syncc), or was installed from by pip;
    else syncc on PATH and its
    installed prefix (bin/../lib, bin/../include/syncc)."""
    syncc = os.environ.get("SYNCC")
    for root in (_repo_root(), _install_tree()):
        if not syncc and root and os.access(os.path.join(root, "syncc"), os.X_OK):
            syncc = os.path.join(root, "syncc")
    if not syncc:
        syncc = shutil.which("syncc")
    if not syncc:
        raise SynccError("cannot find syncc: build it (make) in the source tree of this package, put it on PATH, "
                         "or set SYNCC=/path/to/syncc")
    syncc = os.path.abspath(syncc)
    bindir = os.path.dirname(syncc)
    inc = next((d for d in (os.path.join(bindir, "runtime"), os.path.join(bindir, "..", "include", "syncc"))
                if os.path.isfile(os.path.join(d, "syncrt.h"))), None)
    lib = os.environ.get("SYNCRT_LIB") or next(
        (p for p in (os.path.join(bindir, "libsyncrt.so"), os.path.join(bindir, "..", "lib", "libsyncrt.so"))
         if os.path.isfile(p)), None)
    return Tools(syncc, lib and os.path.abspath(lib), inc and os.path.abspath(inc))


VERSION_TIMEOUT_S = 60


def version(tools, timeout=VERSION_TIMEOUT_S):
    try:
        p = subprocess.run([tools.syncc, "--version"], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SynccError("%s --version did not answer within %g s (set SYNCC=/path/to/syncc to use another)" % (
            tools.syncc, timeout))
    except OSError as e:
        raise SynccError("cannot run %s: %s (set SYNCC=/path/to/syncc to use another)" % (
            tools.syncc, e.strerror or e))
    if p.returncode != 0:
        raise SynccError("%s --version failed: %s" % (tools.syncc, p.stderr.decode("utf-8", "replace").strip()))
    return p.stdout.decode().strip()


def define_args(defines):
    """-D NAME=VALUE arguments, in a stable order."""
    out = []
    for k in sorted(defines):
        v = defines[k]
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise SynccError("parameter %s=%r: give an int, a float or a dtype name" % (k, v))
        out += ["-D", "%s=%s" % (k, v)]
    return out


def inputs_digest(sig):
    """A digest of the contents of every file syncc read for this build, as
    its signature lists them: the main file, each module reached through
    `use` (beside it, via -I or in the stdlib), in the order read, and the
    cost profile the scheduler plans with.  Contents, not times: an edit to
    a used module is a new build, a touched but unchanged file is not."""
    h = hashlib.sha256()
    for path in list(sig.files) + ([sig.profile] if sig.profile else []):
        try:
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError as e:
            raise CompileError("cannot read %s: %s" % (path, e.strerror or e))
    return h.hexdigest().encode()


def cache_key(sources, defines, ranks, entry, syncc_version, tool_id=""):
    """A hex digest of everything a build depends on: the source files
    (sources: their inputs_digest), the -D values, the rank count, --entry,
    syncc's version and the identity of the binaries (tool_id: their sizes
    and times, so a rebuilt syncc or libsyncrt is a new key)."""
    h = hashlib.sha256()
    h.update(json.dumps({
        "source": hashlib.sha256(sources).hexdigest(),
        "defines": define_args(defines),
        "ranks": int(ranks),
        "entry": entry or "",
        "syncc": syncc_version,
        "tools": tool_id,
    }, sort_keys=True).encode())
    return h.hexdigest()[:32]


def tool_id(tools):
    parts = []
    for p in (tools.syncc, tools.libsyncrt):
        if p and os.path.exists(p):
            st = os.stat(p)
            parts.append("%s:%d:%d" % (p, st.st_size, st.st_mtime_ns))
    return ";".join(parts)


def cache_root():
    d = os.environ.get("SYNCC_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "syncc")
    return d


def _syncc(tools, args, what):
    try:
        p = subprocess.run([tools.syncc] + args, capture_output=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CompileError("%s: syncc took longer than %d s" % (what, COMPILE_TIMEOUT_S))
    except OSError as e:
        raise SynccError("%s: cannot run %s: %s" % (what, tools.syncc, e.strerror or e))
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        kinds = {1: "errors in the input", 2: "bad command line", 3: "internal compiler error"}
        raise CompileError("%s: syncc failed (%s):\n%s" % (
            what, kinds.get(p.returncode, "exit %d" % p.returncode), err.rstrip()), p.returncode)
    return p.stdout.decode("utf-8", "replace")


def read_signature(tools, path, defines, ranks, entry=None):
    args = [path, "--ranks", str(ranks), "--emit=signature", "-o", "-"] + define_args(defines)
    if entry:
        args += ["--entry", entry]
    return signature.parse(_syncc(tools, args, path))


def _cc(tools, build, what):
    if not tools.libsyncrt or not tools.include:
        raise SynccError("%s: libsyncrt.so or syncrt.h not found beside %s (build it with make on a machine with "
                         "CUDA and NCCL, or set SYNCRT_LIB)" % (what, tools.syncc))
    libdir = os.path.dirname(tools.libsyncrt)
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-std=c11", "-O2", "-fPIC", "-shared", "-I", tools.include, "-o", os.path.join(build, "ops.so"),
           os.path.join(build, "ops.c"), "-L", libdir, "-l:" + os.path.basename(tools.libsyncrt),
           "-Wl,-rpath," + libdir]
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=COMPILE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SynccError("%s: building the launcher failed: %s" % (what, e))
    if p.returncode != 0:
        raise SynccError("%s: building the launcher failed: %s\n%s" % (
            what, " ".join(cmd), p.stderr.decode("utf-8", "replace")[-3000:]))


class Build:
    """A compiled file in the cache: ops.so and its signature."""

    def __init__(self, directory, sig):
        self.dir = directory
        self.so = os.path.join(directory, "ops.so")
        self.sig = sig


def _cache_error(root, e):
    where = "the cache directory %s" % root
    how = ("set SYNCC_CACHE to a writable directory" if os.environ.get("SYNCC_CACHE") != root
           else "SYNCC_CACHE names it: point it at a writable directory")
    return SynccError("%s: %s (%s)" % (where, e.strerror or e, how))


def compile_file(path, defines, ranks, entry=None, tools=None, cache=None, link=True):
    """The build of `path` at these -D values and rank count, made if the
    cache does not hold it.  syncc's signature names every file the build
    reads, so each load asks syncc for it (no plans, no code: quick) and the
    key hashes their contents.  link=False stops after syncc (no C compiler,
    no libsyncrt: for tests)."""
    tools = tools or find_tools()
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise CompileError("cannot read %s: %s" % (path, e.strerror))
    sig = read_signature(tools, path, defines, ranks, entry)
    digest = inputs_digest(sig)
    key = cache_key(digest, defines, ranks, entry, version(tools), tool_id(tools) + ("" if link else ";syncc only"))

    def make(tmp):
        args = [path, "--ranks", str(ranks), "-o", os.path.join(tmp, "ops")] + define_args(defines)
        if entry:
            args += ["--entry", entry]
        _syncc(tools, args, path)
        if link:
            _cc(tools, tmp, path)
        if inputs_digest(sig) != digest:
            raise CompileError("%s: a source file changed while it was compiled; load it again" % path)
        try:
            with open(os.path.join(tmp, "signature.json"), "w") as f:
                json.dump(_sig_json(sig), f)
        except OSError as e:
            raise _cache_error(os.path.dirname(tmp), e)

    final = cached(cache or cache_root(), key, ["ops.so" if link else "ops.c", "signature.json"], make, path)
    return Build(final, sig)


def cached(root, key, files, make, what):
    """The cache entry root/key: made where any of `files` is missing by
    make(tmp) in a temporary directory beside it, renamed into place, so
    processes building it at once never see half of one (the first rename
    wins; theirs is the same build).  Returns its directory."""
    final = os.path.join(root, key)
    if all(os.path.exists(os.path.join(final, f)) for f in files):
        return final
    try:
        os.makedirs(root, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=key + ".tmp", dir=root)
    except OSError as e:
        raise _cache_error(root, e)
    try:
        make(tmp)
        try:
            os.rename(tmp, final)
        except OSError:  # another rank (or run) finished first: theirs is the same build
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not os.path.exists(os.path.join(final, files[0])):
        raise SynccError("%s: the build vanished from the cache (%s)" % (what, final))
    return final


def _sig_json(sig):
    def val(v):
        d = {"name": v.name, "dtype": v.dtype, "shape": list(v.shape), "placement": v.placement,
             "local": list(v.local), "type": v.type}
        if v.dim is not None:
            d["dim"] = v.dim
        return d
    return {"syncc": sig.syncc, "source": sig.source, "files": list(sig.files), "profile": sig.profile,
            "ranks": sig.ranks,
            "ops": [{"name": o.name, "ranks": o.ranks, "args": [val(a) for a in o.args],
                     "results": [val(r) for r in o.results]} for o in sig.ops.values()]}
