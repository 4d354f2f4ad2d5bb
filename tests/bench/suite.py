"""The benchmark harness of issue 8 (bench/, docs/bench.md), on the CPU.

  bench/fake-p2, bench/fake-p4   bench/baseline.c built against the real CUDA,
                                 cuBLASLt and NCCL headers but linked with
                                 tests/bench/fakegpu.c (a CPU stand-in), under
                                 ASan + UBSan, on tiny shapes at 2 and 4 ranks:
                                 every system of every shape must match serial
                                 and be timed, serial must match the CPU product
  bench/fake-mismatch            the same with one matmul dropped: serial's
                                 mismatch is reported, nothing after it is timed,
                                 the next shape runs normally (no hang)
  bench/build                    bench/run --build-only: the real build (nvcc,
                                 -Wall -Wextra -Werror), then --list and the
                                 no-GPU exit; skipped where nvcc or a header is
                                 missing
  bench/report                   report.py merge + render on synthetic rows: the
                                 tables, the ratios and the SVG
  bench/run                      bench/run end to end with the fake baseline and a
                                 SYNCC_BENCH_CMD: bench.json, bench.md, the SVG
  bench/no-gpu                   make bench without GPUs says so and exits 0
  bench/asynctp-shapes           asynctp.py reads bench/shapes as baseline.c does
                                 (with torch stubbed: only the parsing runs here)
  bench/results-index            every file of bench/results/ is in its README.md
                                 (an entry's later files may be written from its
                                 first one's name: `-c.json`, `.log`), and every
                                 file the README names exists
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import types
import xml.etree.ElementTree as ET

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
TINY = """# tiny shapes: M divisible by 4 ranks x 8 chunks
t_AR     AR  64  48  32
t_RS     RS  64  48  32
t_AG     AG  64  48  32
t_sweep  AR  128 48  32
"""
SYSTEMS = ["serial", "gemm", "comm", "ideal", "chunk2", "chunk4", "chunk8", "serial_again"]


def headers():
    inc = os.path.join(CUDA_HOME, "include")
    need = ("cuda_runtime.h", "cublasLt.h")
    if not all(os.path.exists(os.path.join(inc, h)) for h in need):
        return None
    if not any(os.path.exists(os.path.join(d, "nccl.h")) for d in (inc, "/usr/include")):
        return None
    return inc


def rows_of(path):
    meta, rows = {}, []
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "meta" in d:
                meta.update(d["meta"])
            else:
                rows.append(d)
    return meta, rows


def tests(root, run, Fail):
    tmp = tempfile.mkdtemp(prefix="syncc-bench-")
    shapes = os.path.join(tmp, "tiny")
    with open(shapes, "w") as f:
        f.write(TINY)
    fake = os.path.join(tmp, "fakebase")
    state = {}
    lock = threading.Lock()

    def build_fake():
        with lock:
            return build_fake_locked()

    def build_fake_locked():
        if "built" not in state:
            inc = headers()
            if inc is None:
                state["built"] = None
                return None
            rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                                "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-O1", "-g",
                                "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-isystem", inc,
                                "-o", fake, "bench/baseline.c", "tests/bench/fakegpu.c", "-lpthread", "-lm"])
            if rc != 0:
                raise Fail(" building baseline.c with the fake failed:\n" + err[:4000])
            state["built"] = fake
        return state["built"]

    def run_fake(p, extra_env=None, name="f"):
        if build_fake() is None:
            return None
        js = os.path.join(tmp, "%s%d.jsonl" % (name, p))
        env = {"FAKEGPU_COUNT": str(p), "ASAN_OPTIONS": "detect_leaks=0"}
        env.update(extra_env or {})
        rc, out, err = run([fake, "--shapes", shapes, "--json", js, "--gpus", str(p), "--warmup", "1",
                            "--iters", "3"], env=env)
        if rc != 0:
            raise Fail(" baseline on the fake exited %d:\n%s\n%s" % (rc, out[-3000:], err[-3000:]))
        return rows_of(js)

    def fake_ok(p):
        def t():
            got = run_fake(p)
            if got is None:
                return
            meta, rows = got
            if meta.get("baseline", {}).get("gpus") != p:
                raise Fail(" meta row: %r" % meta)
            by = {}
            for r in rows:
                by.setdefault((r["shape"], r["M"]), {})[r["system"]] = r
            if len(by) != 4:
                raise Fail(" expected 4 shapes, got %s" % sorted(by))
            for key, systems in by.items():
                if sorted(systems) != sorted(SYSTEMS):
                    raise Fail(" %s: systems %s" % (key, sorted(systems)))
                for s, r in systems.items():
                    if not r["checked"] or r["ms"] is None or r["n"] != 3 or r["tp"] != p:
                        raise Fail(" %s %s: not checked or not timed: %r" % (key, s, r))
                    limit = 1e-2 if s == "serial" else 0.0
                    if r["rel_err"] is None or r["rel_err"] > limit or r["nonfinite"] != 0:
                        raise Fail(" %s %s: rel_err %r" % (key, s, r))
                if systems["serial"]["rel_err"] == 0:
                    raise Fail(" %s: serial exactly equal to the f64 CPU product: not compared?" % (key,))
        return t

    def fake_mismatch():
        got = run_fake(2, {"FAKEGPU_DROP": "1"}, name="drop")
        if got is None:
            return
        _, rows = got
        first = [r for r in rows if r["shape"] == "t_AR"]
        rest = [r for r in rows if r["shape"] != "t_AR"]
        if len(first) != len(SYSTEMS) or any(r["checked"] or r["ms"] is not None for r in first):
            raise Fail(" a mismatching serial must leave every system of its shape unchecked and untimed: %r"
                       % first)
        serial = [r for r in first if r["system"] == "serial"][0]
        if serial["nonfinite"] == 0 or "mismatch" not in serial["note"]:
            raise Fail(" serial's row should report the unwritten (NaN) output: %r" % serial)
        if len(rest) != 3 * len(SYSTEMS) or not all(r["checked"] for r in rest):
            raise Fail(" the shapes after a mismatch must run normally")

    def build_real():
        nvcc = shutil.which("nvcc") or os.path.join(CUDA_HOME, "bin", "nvcc")
        if headers() is None or not os.access(nvcc, os.X_OK):
            return
        out_dir = os.path.join(tmp, "real")
        rc, out, err = run(["bash", "bench/run", "--build-only", out_dir], env={"CUDA_HOME": CUDA_HOME})
        if rc != 0:
            raise Fail(" bench/run --build-only failed:\n" + (out + err)[-4000:])
        binary = os.path.join(out_dir, "baseline")
        rc, out, err = run([binary, "--shapes", "bench/shapes", "--list"])
        if rc != 0 or out.count("serial gemm comm ideal chunk2 chunk4 chunk8 serial_again") != 9:
            raise Fail(" baseline --list on bench/shapes:\n" + out + err)
        if "fake" in open(binary, "rb").read().decode("latin-1"):
            raise Fail(" the real build linked the fake")

    def report():
        rows = []
        for M in (1024, 2048, 4096, 8192):
            base = {"shape": "attn_out_AR", "kind": "AR", "M": M, "N": 8192, "K": 8192, "tp": 2}
            for s, ms in (("gemm", 1.0), ("comm", 0.5), ("ideal", 1.0), ("serial", 1.5), ("chunk2", 1.4),
                          ("chunk4", 1.3), ("chunk8", 1.35), ("serial_again", 1.51)):
                rows.append(dict(base, system=s, ms=ms * M / 1024, p10=ms * M / 1024 * 0.98,
                                 p90=ms * M / 1024 * 1.02, checked=True, rel_err=1e-3))
            rows.append(dict(base, system="asynctp", ms=None, checked=False, rel_err=None, note="output mismatch"))
        rs = {"shape": "ffn_down_RS", "kind": "RS", "M": 8192, "N": 8192, "K": 28672, "tp": 2}
        for s, ms in (("ideal", 2.5), ("serial", 3.0), ("asynctp", 2.9)):
            rows.append(dict(rs, system=s, ms=ms, p10=ms, p90=ms, checked=True, rel_err=2e-3))
        a = os.path.join(tmp, "a.jsonl")
        with open(a, "w") as f:
            f.write(json.dumps({"meta": {"baseline": {"gpu": "NVIDIA H200", "gpus": 2, "nccl": 22803}}}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
            f.write('{"shape": "broken"}\n')
        syncc = os.path.join(tmp, "syncc.json")
        with open(syncc, "w") as f:
            json.dump([dict(rs, system="syncc", ms=2.6, p10=2.55, p90=2.7, checked=True, rel_err=3e-3)], f)
        merged = os.path.join(tmp, "bench.json")
        rc, out, err = run([sys.executable, "bench/report.py", "merge", merged, "--set", "date=2026-12-01",
                            "--set", "command=bash bench/run", a, syncc])
        if rc != 0:
            raise Fail(" merge failed:\n" + out + err)
        doc = json.load(open(merged))
        if len(doc["rows"]) != len(rows) + 1 or not any("broken" in w for w in doc["warnings"]):
            raise Fail(" merge: %d rows, warnings %r" % (len(doc["rows"]), doc["warnings"]))
        res = os.path.join(tmp, "results")
        rc, out, err = run([sys.executable, "bench/report.py", "render", merged, "--out-dir", res])
        if rc != 0:
            raise Fail(" render failed:\n" + out + err)
        md_path = os.path.join(res, "2026-12-01-2xH200.md")
        svg_path = os.path.join(res, "2026-12-01-2xH200-msweep.svg")
        if not (os.path.exists(md_path) and os.path.exists(svg_path)
                and os.path.exists(os.path.join(res, "2026-12-01-2xH200.json"))):
            raise Fail(" render wrote: %s" % os.listdir(res))
        md = open(md_path).read()
        for want in ("### attn_out_AR  M=4096 N=8192 K=8192 (AR, TP=2)", "### ffn_down_RS  M=8192",
                     "| chunk4 | 5.200 | 5.096 – 5.304 | 1.15x | 1.30 | yes | 1.0e-03 |",
                     "| syncc | 2.600 | 2.550 – 2.700 | 1.15x | 1.04 | yes | 3.0e-03 |",
                     "| asynctp | - | - | - | - | **no** | - | output mismatch |",
                     "**Command.** `bash bench/run`", "2026-12-01-2xH200-msweep.svg", "## Summary"):
            if want not in md:
                raise Fail(" report lacks %r:\n%s" % (want, md[:3000]))
        svg = ET.parse(svg_path).getroot()
        lines = [e for e in svg.iter() if e.tag.endswith("polyline")]
        if len(lines) != 4:  # serial, chunk2, chunk4, chunk8; asynctp was never checked
            raise Fail(" SVG: %d polylines, expected 4" % len(lines))

    def run_script():
        """bench/run end to end with the fake baseline (and no torch here, or
        no GPU for it: the asynctp step may fail, the rest must not)."""
        binary = build_fake()
        if binary is None:
            return
        out_dir = os.path.join(tmp, "out")
        row = json.dumps({"shape": "t_AR", "M": 64, "N": 48, "K": 32, "system": "syncc", "ms": 0.1, "p10": 0.1,
                          "p90": 0.1, "checked": True, "rel_err": 1e-3, "note": "$BENCH_GPUS $BENCH_ITERS"})
        cmd = 'echo "%s" > "$BENCH_ROWS"' % row.replace('"', '\\"')
        rc, out, err = run(["bash", "bench/run"], env={
            "OUT": out_dir, "BENCH_GPUS_FOUND": "2", "BENCH_BASELINE": binary, "BENCH_SHAPES": shapes,
            "BENCH_WARMUP": "1", "BENCH_ITERS": "3", "ASAN_OPTIONS": "detect_leaks=0", "SYNCC_BENCH_CMD": cmd})
        for f in ("bench.json", "bench.md", "msweep.svg", "bench.log"):
            if not os.path.exists(os.path.join(out_dir, f)):
                raise Fail(" bench/run did not write %s (exit %d):\n%s%s" % (f, rc, out[-3000:], err[-2000:]))
        doc = json.load(open(os.path.join(out_dir, "bench.json")))
        for want in ("build=0", "baseline=0", "syncc=0"):
            if want not in doc.get("steps", ""):
                raise Fail(" steps %r lack %s" % (doc.get("steps"), want))
        syncc = [r for r in doc["rows"] if r["system"] == "syncc"]
        if len(syncc) != 1 or syncc[0]["note"] != "2 3" or len(doc["rows"]) != 4 * len(SYSTEMS) + 1:
            raise Fail(" bench.json rows: %d, syncc %r" % (len(doc["rows"]), syncc))
        if doc["date"] is None or "bench/run" not in doc["command"] or "## Summary" not in out:
            raise Fail(" bench.json header %r / summary not printed last" % {k: doc[k] for k in ("date", "command")})

    def no_gpu():
        rc, out, err = run(["make", "-s", "bench"], env={"BENCH_GPUS_FOUND": "0"})
        if rc != 0 or "needs 2 GPUs and found 0" not in out:
            raise Fail(" make bench without GPUs: exit %d\n%s%s" % (rc, out, err))

    def asynctp_shapes():
        saved = {k: sys.modules.get(k) for k in ("torch", "torch.distributed")}
        torch = types.ModuleType("torch")
        torch.distributed = types.ModuleType("torch.distributed")
        sys.modules.update({"torch": torch, "torch.distributed": torch.distributed})
        try:
            ns = {"__name__": "asynctp"}
            src = open(os.path.join(root, "bench", "asynctp.py")).read()
            exec(compile(src, "bench/asynctp.py", "exec"), ns)
            got = ns["read_shapes"](os.path.join(root, "bench", "shapes"))
            st = ns["stats"]([3.0, 1.0, 2.0, 4.0])
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        names = [(s["shape"], s["M"]) for s in got]
        if len(got) != 9 or ("ffn_up_AG", 8192) not in names or ("attn_out_AR", 16384) not in names:
            raise Fail(" asynctp.read_shapes: %r" % names)
        if st["ms"] != 2.5 or st["min"] != 1.0 or st["max"] != 4.0 or st["n"] != 4:
            raise Fail(" asynctp.stats: %r" % st)

    def results_index():
        import re
        d = os.path.join(root, "bench", "results")
        with open(os.path.join(d, "README.md"), encoding="utf-8") as f:
            text = f.read()
        named = set()
        for line in text.splitlines():
            cells = line.split("|")
            files = re.findall(r"`([^`]+)`", cells[1]) if line.startswith("| `") and len(cells) > 2 else []
            if not files:
                continue
            stem = files[0].split(".")[0]
            named.add(files[0])
            for f in files[1:]:  # `-c.json`: the first file's stem (its -c dropped) + this; `.log`: its stem + this
                named.add(stem + f if f.startswith(".") else re.sub(r"-[a-z]$", "", stem) + f if f.startswith("-") else f)
        have = set(os.listdir(d)) - {"README.md"}
        if have - named or named - have:
            raise Fail(" not in bench/results/README.md: %s; named there but missing: %s" %
                       (sorted(have - named), sorted(named - have)))

    return [("bench/results-index", results_index), ("bench/fake-p2", fake_ok(2)), ("bench/fake-p4", fake_ok(4)), ("bench/fake-mismatch", fake_mismatch),
            ("bench/build", build_real), ("bench/report", report), ("bench/run", run_script), ("bench/no-gpu", no_gpu),
            ("bench/asynctp-shapes", asynctp_shapes)]
