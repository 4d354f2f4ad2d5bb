"""The runtime's CPU tests for tests/run: each group of tests/rt/rt_cpu_test
is one test; the trace test also parses the JSON it wrote; ptxas checks the
runtime's PTX where ptxas exists; and where CUDA and NCCL headers exist the
library must have linked into build/rt/rt_linkcheck (made by make check)."""
import json
import os
import subprocess
import tempfile


def tests(root, run, Fail):
    exe = os.path.join(root, "build", "rt", "rt_cpu_test")

    def need_exe():
        if not os.path.exists(exe):
            raise Fail(" %s is missing: run make check" % exe)

    def group(name):
        def t():
            need_exe()
            rc, out, err = run([exe, name])
            if rc != 0 or not out.rstrip().endswith("ok"):
                raise Fail(" rt_cpu_test %s: exit %d\n--- stdout ---\n%s\n--- stderr ---\n%s" % (name, rc, out[-4000:], err[-2000:]))
        return t

    def trace():
        need_exe()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            rc, out, err = run([exe, "trace", path])
            if rc != 0:
                raise Fail(" rt_cpu_test trace: exit %d\n%s%s" % (rc, out, err))
            with open(path) as f:
                doc = json.load(f)
        ex = doc["otherData"].get("exposed")
        if [e["rank"] for e in ex or []] != [0, 1] or any(
                set(e) != {"rank", "busy_us", "comm_us", "exposed_comm_us"} for e in ex):
            raise Fail(" otherData.exposed must give every rank's exposed communication: %r" % ex)
        evs = doc["traceEvents"]
        xs = [e for e in evs if e.get("ph") == "X"]
        names = {(e["pid"], e["tid"], e["args"]["name"]) for e in evs if e.get("name") == "thread_name"}
        procs = {e["pid"]: e["args"]["name"] for e in evs if e.get("name") == "process_name"}
        if len(xs) != 6 or any(e["dur"] != 1.5 for e in xs) or min(e["ts"] for e in xs) != 0:
            raise Fail(" trace events wrong: %r" % xs)
        if names != {(0, 0, "compute"), (0, 1, "comm"), (1, 0, "compute"), (1, 1, "comm")}:
            raise Fail(" thread names wrong: %r" % names)
        if "args" in xs[4] or xs[3]["args"] != {"flag": 3}:
            raise Fail(" a truncated args object must be dropped, whole ones kept: %r" % xs[3:5])
        if procs.get(1) != 'rank 1 (GPU "1")' or xs[5]["name"] != 'chunk "5"\\':
            raise Fail(" escaping wrong: %r %r" % (procs, xs[5]["name"]))

    def ptxas():
        need_exe()
        with open(os.path.join(root, "build", "rt", "ptxas.path")) as f:
            tool = f.read().strip()
        if not tool:
            return  # no CUDA toolkit here: nothing to assemble with
        rc, out, err = run([exe, "ptx"])
        rc2, tools, err2 = run([exe, "tool-ptx"])
        if rc or rc2 or ".entry rt_ref_matmul" not in tools:
            raise Fail(" rt_cpu_test ptx / tool-ptx: exit %d %d\n%s%s" % (rc, rc2, err, err2))
        with tempfile.TemporaryDirectory() as d:
            for name, text in (("builtin.ptx", out), ("tools.ptx", tools), ("rt_test.ptx", None)):
                src = os.path.join(d, name)
                if text is None:
                    src = os.path.join(root, "tests", "gpu", "rt_test.ptx")
                else:
                    with open(src, "w") as f:
                        f.write(text)
                p = subprocess.run([tool, "-arch=sm_90", src, "-o", os.path.join(d, "x.cubin")],
                                   capture_output=True, text=True)
                if p.returncode != 0 or "warning" in p.stderr:
                    raise Fail(" ptxas %s: %s%s" % (name, p.stdout, p.stderr))

    def link():
        if not os.path.exists(os.path.join(root, "libsyncrt.a")):
            return  # no CUDA/NCCL headers here: the library is skipped by design
        if not os.path.exists(os.path.join(root, "build", "rt", "rt_linkcheck")):
            raise Fail(" libsyncrt.a exists but build/rt/rt_linkcheck was not linked (run make check)")

    # Every chunk of a generated launcher passes the runtime's own check on
    # every rank: at P = 1 ulysses' all_to_all had a send stride of one row
    # ("send blocks overlap"), which only a GPU run found (issue 17, item 5).
    # At --topo NxG (passed on as "NxG": the context then holds the levels
    # of G) the all_reduce phases' sub-groups too, with the whole
    # all_reduce kept (no arsplit) so that there are phases.
    def launcher_chunks():
        import re
        need_exe()
        syncc = os.path.join(root, "syncc")
        seen = grouped = pushed = 0
        cases = [(ex, ["--ranks", p], p) for ex in ("ulysses", "row_linear", "ag_gemm", "gemm_rs") for p in ("1", "2", "4")]
        # the pushed reduce_scatter of gemm_rs (its chunks' push field set)
        cases += [("gemm_rs", ["--ranks", p, "--comm-backend", "p2p", "--push", "-D", "M=2048", "-D", "N=512"], p) for p in ("2", "4")]
        cases += [(ex, ["--topo", t] + np, t) for ex in ("ulysses", "row_linear", "ag_gemm", "gemm_rs", "placements_tiny")
                  for t in ("2x2", "2x4") for np in ([], ["--no-pass", "arsplit"])]
        for ex, args, p in cases:
            rc, out, err = run([syncc, "examples/%s.syn" % ex] + args + ["--emit=host"])
            if rc != 0:
                raise Fail(" syncc %s %s --emit=host: exit %d\n%s" % (ex, " ".join(args), rc, err[-2000:]))
            for m in re.finditer(r"CommChunk ch = \{(CO_\w+), (CD_\w+), (CR_\w+), \w+, \w+, (\d+)u, (\d+)u, "
                                 r"(\d+)u, (-?\d+), (-?\d+), (\d+), (\d+), ([01]), ([01])\};", out):
                rc, o, e = run([exe, "chunk", p] + list(m.groups()))
                seen += 1
                grouped += m.group(9) != "0"
                if rc != 0 or not o.rstrip().endswith("ok"):
                    raise Fail(" %s %s: the runtime refuses a chunk of the launcher:\n%s%s" % (ex, " ".join(args), o, e))
                pushed += m.group(11) == "1"
        if seen < 12 or grouped < 12 or pushed < 2:
            raise Fail(" only %d chunks (%d of sub-groups, %d pushed) found in the launchers: has their form changed?"
                       % (seen, grouped, pushed))

    for name in ("env", "boot-ok", "boot-errors", "boot-dead", "check", "plan"):
        yield ("rt " + name, group(name))
    yield ("rt trace json", trace)
    yield ("rt launcher chunks pass the runtime's check", launcher_chunks)
    yield ("rt ptxas", ptxas)
    yield ("rt link", link)
