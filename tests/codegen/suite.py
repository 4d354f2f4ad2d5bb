"""Code generation of every example and stdlib op, checked without a GPU:
ptxas accepts each module (no spill stores or loads in any kernel) and each
launcher compiles with -Wall -Wextra -Werror against libsyncrt's, CUDA's and
NCCL's headers.  Ops the PTX backend refuses (docs/codegen.md) must be
refused with a located error, not crash.  ptxas runs once per module: syncc
runs it (for the cubin it embeds) through tests/codegen/ptxas-v, which adds
-v and keeps the report the spill check reads."""
import glob
import os
import re
import shutil
import tempfile

REFUSED = set()  # files whose ops the PTX backend refuses (none today)


def ptxas_path():
    p = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    return p if os.path.exists(p) else None


def tests(root, run, Fail):
    syncc = os.path.join(root, "syncc")
    files = sorted(glob.glob(os.path.join(root, "examples", "*.syn"))) + [os.path.join(root, "stdlib", "nn.syn")]
    cuda = "/usr/local/cuda/include"

    def one(path, ranks):
        rel = os.path.relpath(path, root)

        def t():
            with tempfile.TemporaryDirectory() as d:
                pre = os.path.join(d, "op")
                px = ptxas_path()
                log = os.path.join(d, "ptxas.log")
                env = {"PTXAS": os.path.join(root, "tests", "codegen", "ptxas-v"), "PTXAS_REAL": px,
                       "PTXAS_V_LOG": log} if px else {"PTXAS": os.path.join(d, "no-ptxas")}
                rc, out, err = run([syncc, rel, "--ranks", str(ranks), "-o", pre], env=env)
                if rel in REFUSED:
                    if rc != 1 or "cannot generate GPU code" not in err:
                        raise Fail(" expected a located refusal, got exit %d\n%s" % (rc, err[-2000:]))
                    return
                if rc != 0:  # a module ptxas rejects is an internal error of syncc's
                    raise Fail(" syncc exit %d\n%s" % (rc, err[-3000:]))
                if px:
                    with open(log, encoding="utf-8", errors="replace") as f:
                        report = f.read()
                    with open(pre + ".c", encoding="utf-8", errors="replace") as f:
                        embedded = "embedded with its cubin" in f.readline() + f.readline()
                    if not embedded or "Compiling entry function" not in report:
                        raise Fail(" syncc did not assemble the module with ptxas (no cubin):\n" + report[-3000:])
                    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
                    if any(int(a) or int(b) for a, b in spills):
                        raise Fail(" a kernel spills:\n" + report[-3000:])
                if os.path.exists(os.path.join(cuda, "cuda.h")):
                    rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(root, "runtime"),
                                        "-isystem", cuda, "-c", "-o", os.path.join(d, "op.o"), pre + ".c"])
                    if rc != 0:
                        raise Fail(" the launcher does not compile:\n" + err[-3000:])
        return t

    jobs = []
    for f in files:
        for p in (1, 2, 4):
            jobs.append(("codegen/%s P=%d (ptxas, launcher -Werror)" % (os.path.relpath(f, root), p), one(f, p)))
    return jobs
