"""PTX tests: each tests/ptx/*.test names a kernel for build/ptxgen and says
what must hold of it.

  // ARGS: matmul --m 1000 ...     ptxgen's arguments (one line; several ARGS
                                   lines give several kernels, each checked)
  // CHECK: text                   must appear in the PTX, in order ({{regex}} parts:
                                   tests/checks.py)
  // CHECK-NOT: text               must not appear between the neighbouring CHECKs
  // NOSPILL                       ptxas -v must report 0 bytes of spill stores and loads
                                   (and no kernel may have its wgmma serialized, C7515)
  // ERROR: text                   ptxgen must refuse with exit 2 and this text

Each ARGS line is a test of its own.  Every kernel (not `ptxgen tail`'s
report on an epilogue's programs) is assembled with
`ptxas -arch=sm_90a -v` where ptxas is found
(PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin); without ptxas only the
CHECK lines run."""
import os
import re
import shlex
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402 (tests/checks.py: CHECK lines, {{regex}} parts)


def find_ptxas():
    p = shutil.which("ptxas")
    if p:
        return p
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d and os.access(os.path.join(d, "bin", "ptxas"), os.X_OK):
            return os.path.join(d, "bin", "ptxas")
    return None


def directives(path):
    d = {"args": [], "check": [], "nospill": False, "error": None}
    for line in open(path, encoding="utf-8"):
        m = re.search(r"//\s*(ARGS|CHECK|CHECK-NOT|NOSPILL|ERROR)(:\s?(.*))?$", line)
        if not m:
            continue
        key, val = m.group(1), (m.group(3) or "").rstrip()
        if key == "ARGS":
            d["args"].append(shlex.split(val))
        elif key in ("CHECK", "CHECK-NOT"):
            d["check"].append((key, val))
        elif key == "NOSPILL":
            d["nospill"] = True
        else:
            d["error"] = val
    return d


def check_text(d, out, Fail):
    def fail(msg):
        raise Fail(" " + msg)
    checks.check(d["check"], out, fail)


def assemble(run, ptxas, ptx, nospill, Fail):
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
        name = f.name
    try:
        rc, out, err = run([ptxas, "-arch=sm_90a", "-v", name, "-o", os.devnull], timeout=300)
    finally:
        os.unlink(name)
    if rc != 0:
        raise Fail(" ptxas failed:\n" + err[:4000])
    # ptxas serializes every wgmma of a kernel it cannot prove safe (C7515):
    # a kernel that assembles at a fraction of its speed is a failure
    m = re.search(r"\(C7515\)[^\n]*", err)
    if m:
        raise Fail(" ptxas serializes the wgmma: " + m.group(0))
    if nospill:
        for m in re.finditer(r"(\d+) bytes spill stores, (\d+) bytes spill loads", err):
            if m.group(1) != "0" or m.group(2) != "0":
                raise Fail(" ptxas reports spills: " + m.group(0))
    return err


def tests(root, run, Fail):
    ptxgen = os.path.join(root, "build", "ptxgen")
    ptxas = find_ptxas()
    out = []
    for path in sorted(os.listdir(os.path.join(root, "tests", "ptx"))):
        if not path.endswith(".test"):
            continue
        full = os.path.join(root, "tests", "ptx", path)

        def kernel(d, args):
            rc, text, err = run([ptxgen] + args)
            if d["error"] is not None:
                if rc != 2 or d["error"] not in err:
                    raise Fail(" expected ptxgen to refuse with %r, got exit %d: %s" % (d["error"], rc, err))
                return
            if rc != 0:
                raise Fail(" ptxgen %s: exit %d\n%s" % (" ".join(args), rc, err[:2000]))
            check_text(d, text, Fail)
            if ptxas and args[0] != "tail":
                assemble(run, ptxas, text, d["nospill"], Fail)

        def t(full=full, path=path):
            """The file's directives; each ARGS line's kernel is a job of
            its own (tests/run runs the jobs a job returns)."""
            d = directives(full)
            if not d["args"]:
                raise Fail(" no ARGS line")
            return [("tests/ptx/%s ARGS %d" % (path, i + 1), lambda args=args: kernel(d, args))
                    for i, args in enumerate(d["args"])]
        out.append(("tests/ptx/" + path, t))
    return out
