"""Code generation of every example and stdlib op (and of the tests named
below), at rank counts and at --topo 2x2 and 2x4, checked without a GPU:
ptxas accepts each module (no spill stores or loads in any kernel) and each
launcher compiles with -Wall -Wextra -Werror against libsyncrt's, CUDA's and
NCCL's headers.  Ops the PTX backend refuses (docs/codegen.md) must be
refused with a located error, not crash.  ptxas runs once per module: syncc
runs it (for the cubin it embeds) through tests/codegen/ptxas-v, which adds
-v and keeps the report the spill check reads (the cubin cache off, so that
ptxas runs)."""
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

    # ranks: a count (--ranks P) or a topology ("2x4": --topo 2x4);
    # expect: text the launcher must hold (its phases on the levels)
    def one(path, ranks, extra=(), expect=None):
        rel = os.path.relpath(path, root)
        shape = ["--topo", ranks] if isinstance(ranks, str) else ["--ranks", str(ranks)]

        def t():
            with tempfile.TemporaryDirectory() as d:
                pre = os.path.join(d, "op")
                px = ptxas_path()
                log = os.path.join(d, "ptxas.log")
                # the cubin cache off: a hit would leave no report to read
                env = {"PTXAS": os.path.join(root, "tests", "codegen", "ptxas-v"), "PTXAS_REAL": px,
                       "PTXAS_V_LOG": log, "SYNCC_NO_CUBIN_CACHE": "1"} if px else {"PTXAS": os.path.join(d, "no-ptxas")}
                rc, out, err = run([syncc, rel] + shape + ["-o", pre] + list(extra), env=env)
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
                if expect:
                    with open(pre + ".c", encoding="utf-8", errors="replace") as f:
                        if expect not in f.read():
                            raise Fail(" the launcher lacks %r" % expect)
                if os.path.exists(os.path.join(cuda, "cuda.h")):
                    rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(root, "runtime"),
                                        "-isystem", cuda, "-c", "-o", os.path.join(d, "op.o"), pre + ".c"])
                    if rc != 0:
                        raise Fail(" the launcher does not compile:\n" + err[-3000:])
        return t

    def compiles(c_file, d):
        rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(root, "runtime"),
                            "-c", "-o", os.path.join(d, "x.o"), c_file])
        if rc != 0:
            raise Fail(" the launcher does not compile:\n" + err[-3000:])

    # Every user name that reaches C is mangled (issue 17, item 13): op
    # arguments named like the launcher's locals or C keywords, ops named
    # like C keywords or `syn` (whose state type once was syn_state).
    def user_names():
        names = ["r", "rank", "static", "int", "e", "st", "arg", "flags", "errw", "timeout", "out0", "in_r", "ctx", "trace"]
        src = ""
        for k in range(0, len(names), 7):  # a fused kernel reads at most 8 tensors
            part = names[k:k + 7]
            src += "op f%d(%s) -> f32[8, 8] {\n    return %s;\n}\n" % (
                k, ", ".join("%s: f32[8, 8]" % n for n in part), " + ".join(part))
        src += "".join("op %s(x: f32[8, 8] @split(0)) -> f32[8, 8] @split(0) {\n    return x * 2.0;\n}\n" % o
                       for o in ("static", "int", "syn", "main", "register"))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "names.syn"), "w") as f:
                f.write(src)
            rc, out, err = run([syncc, os.path.join(d, "names.syn"), "--ranks", "2", "-o", os.path.join(d, "names")])
            if rc != 0:
                raise Fail(" syncc exit %d\n%s" % (rc, err[-3000:]))
            compiles(os.path.join(d, "names.c"), d)

    # An op whose launcher syn_<op> libsyncrt declares is a located error,
    # for every syn_* name of syncrt.h (the list in codegen/host.c kept
    # honest) and the launcher's own file-scope names.
    def taken_names():
        with open(os.path.join(root, "runtime", "syncrt.h")) as f:
            keywords = {"use", "param", "op", "kernel", "let", "return", "for", "in"}  # not op names at all
            taken = sorted(set(re.findall(r"\bsyn_([a-z0-9_]+)", f.read())) - keywords)
        taken += ["blk", "ptx_of_file", "cubin_of_file", "image_of_file"]
        with tempfile.TemporaryDirectory() as d:
            for k in range(0, len(taken), 15):  # under the cap of 20 errors
                part = taken[k:k + 15]
                src = "".join("op %s(x: f32[8]) -> f32[8] {\n    return x;\n}\n" % o for o in part)
                path = os.path.join(d, "t%d.syn" % k)
                with open(path, "w") as f:
                    f.write(src)
                rc, out, err = run([syncc, path, "--emit=host"])
                for i, o in enumerate(part):
                    want = "t%d.syn:%d:1: error: cannot generate the launcher of op '%s': its launcher syn_%s would be " \
                           "libsyncrt's own" % (k, 3 * i + 1, o, o)
                    if rc != 1 or want not in err:
                        raise Fail(" op '%s': expected %r (exit %d)\n%s" % (o, want, rc, err[-3000:]))

    # The source path goes into the launcher's comments and a string; the
    # prefix into its #include (issue 17, item 6).
    def odd_paths():
        with tempfile.TemporaryDirectory() as d:
            sub = os.path.join(d, "we*", "??")
            os.makedirs(sub)
            src = os.path.join(sub, '*q"u\\o te.syn')  # "*/", "??/", "/*", '"' and a backslash
            with open(src, "w") as f:
                f.write("op f(x: f32[8, 8] @split(0)) -> f32[8, 8] @split(0) {\n    return x * 2.0;\n}\n")
            rc, out, err = run([syncc, src, "--ranks", "2", "-o", os.path.join(d, "op")])
            if rc != 0:
                raise Fail(" syncc exit %d\n%s" % (rc, err[-3000:]))
            compiles(os.path.join(d, "op.c"), d)
            text = open(os.path.join(d, "op.c")).read()
            if '"%s"' % src.replace("\\", "\\\\").replace('"', '\\"').replace("??", "?\\?") not in text:
                raise Fail(" the source path is not in the launcher as a C string:\n" + text[:600])
            for bad in ('op"x', "op\\x", "op??x"):
                rc, out, err = run([syncc, src, "--ranks", "2", "-o", os.path.join(d, bad)])
                if rc != 2 or "#include cannot name" not in err or os.path.exists(os.path.join(d, bad + ".c")):
                    raise Fail(" -o %r: expected a command-line error (exit %d)\n%s" % (bad, rc, err[-2000:]))

    jobs = [("codegen/user names reach C mangled (launcher -Werror)", user_names),
            ("codegen/ops named like libsyncrt's functions are refused", taken_names),
            ("codegen/odd source paths and prefixes in the launcher", odd_paths)]
    # P = 8 for the stdlib: NH = 8 heads leave one per rank, and tp_attn_out's
    # head sum (a reduction of one element per rank) was refused as a row
    # group that "reads no whole rows" (issue 16); the reductions of one
    # element per rank and of size-1 dims at P = 1 and 8 beside it
    ranks = {os.path.join(root, "stdlib", "nn.syn"): (1, 2, 4, 8)}
    files.append(os.path.join(root, "tests", "sim", "reduce_len1.syn"))
    ranks[files[-1]] = (1, 8)
    for f in files:
        for p in ranks.get(f, (1, 2, 4)):
            jobs.append(("codegen/%s P=%d (ptxas, launcher -Werror)" % (os.path.relpath(f, root), p), one(f, p)))
    # multi-node plans (docs/codegen.md): every file at --topo 2x2 and 2x4,
    # and the files with an all_reduce also with it whole (no arsplit),
    # which then runs in three phases on the node and cross-node
    # communicators -- the launcher checks the context's levels first
    for t in ("2x2", "2x4"):
        for f in files:
            jobs.append(("codegen/%s --topo %s (ptxas, launcher -Werror)" % (os.path.relpath(f, root), t), one(f, t)))
        for f in [f for f in files if "all_reduce(" in open(f).read()]:
            jobs.append(("codegen/%s --topo %s --no-pass arsplit: phases (ptxas, launcher -Werror)" %
                         (os.path.relpath(f, root), t),
                         one(f, t, ["--no-pass", "arsplit"], 'syn_check_topo(ctx, "')))
    # first-dim reductions over groups (codegen/rows.c col_split): the
    # launcher rounds their grid to whole groups; over clusters where the
    # kernel waits on flags: it sizes their grid in clusters
    f = os.path.join(root, "tests", "lang", "codegen", "rows_cluster.syn")
    jobs.append(("codegen/%s P=1 groups (ptxas, launcher -Werror)" % os.path.relpath(f, root),
                 one(f, 1, [], "for (unsigned g = 16u;; g /= 2)")))
    # ... and launches them cooperatively, so the driver runs every CTA of a
    # group at once or refuses the launch
    jobs.append(("codegen/%s P=1 groups launched cooperatively (ptxas, launcher -Werror)" % os.path.relpath(f, root),
                 one(f, 1, [], "syn_launch_group(ctx, st->k[")))
    f = os.path.join(root, "tests", "lang", "codegen", "rows_cluster_waits.syn")
    jobs.append(("codegen/%s P=2 clusters (ptxas, launcher -Werror)" % os.path.relpath(f, root),
                 one(f, 2, [], "syn_grid_cluster(ctx, st->k[")))
    # attention regions lowered to the fused kernel (codegen/attn.c): the
    # stdlib's at head dim 64 and the forms of tests/lang/attn/fused.syn
    fused = [(os.path.join(root, "stdlib", "nn.syn"), ["-D", "D=64"]),
             (os.path.join(root, "tests", "lang", "attn", "fused.syn"), [])]
    for f, extra in fused:
        for p in (1, 2, 4):
            jobs.append(("codegen/%s %s P=%d fused attention (ptxas, launcher -Werror)" %
                         (os.path.relpath(f, root), " ".join(extra), p), one(f, p, extra)))
    return jobs
