"""--tune on the simulator (issue 20): every candidate is checked against
the oracle and timed by the cost model (PREDICTED); the pick is cached
under SYNCC_CACHE_DIR, keyed, reused, and missed when a key part changes;
a candidate that fails its check (SYNCC_TUNE_FAIL) is never picked; and
every plan --tune can choose at P = 2, 4, 8 agrees with the oracle."""
import glob
import os
import re
import tempfile


def tests(root, run, Fail):
    syncrun = os.path.join(root, "syncrun")

    def expect(cond, what, out, err):
        if not cond:
            raise Fail(" %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (what, out[-3000:], err[-2000:]))

    def tune(cache, args, env=None):
        e = {"SYNCC_CACHE_DIR": cache}
        e.update(env or {})
        return run([syncrun, "--sim", "--tune", "--tune-budget", "60", "--profile", "sim"] + args, env=e)

    def entries(cache):
        return sorted(glob.glob(os.path.join(cache, "tune-*.txt")))

    def t_cache_written_keyed_reused():
        with tempfile.TemporaryDirectory() as cache:
            args = ["examples/row_linear.syn", "--ranks", "4"]
            rc, out, err = tune(cache, args)
            expect(rc == 0 and "times PREDICTED" in out and "cached in" in out and "rel err" in out,
                   "a first --tune runs the candidates and caches the pick", out, err)
            files = entries(cache)
            expect(len(files) == 1, "one cache entry: %s" % files, out, err)
            text = open(files[0]).read()
            for part in ("op row_linear", "arg x bf16[256, 512] @split(1)", "ranks 4", "topo 1x4", "profile sim",
                         "device simulator", "pick plan ", "pick tile default"):
                expect(part in text, "the cache entry names %r" % part, text, "")
            rc, out, err = tune(cache, args)
            expect(rc == 0 and "cached pick" in out and "candidates" not in out and "ok" in out,
                   "a second --tune reuses the cached pick", out, err)
            expect(entries(cache) == files, "no new entry on a hit", out, err)

    def t_cache_invalidated():
        with tempfile.TemporaryDirectory() as cache:
            base = ["examples/row_linear.syn", "--ranks", "4"]
            rc, out, err = tune(cache, base)
            expect(rc == 0, "first --tune", out, err)
            n = len(entries(cache))
            for change in (["-D", "M=512"], ["--ranks", "2"], ["--topo", "2x2"], ["--comm-backend", "nccl"]):
                args = base[:1] + (change if change[0] in ("--ranks", "--topo") else base[1:] + change)
                rc, out, err = tune(cache, args)
                expect(rc == 0 and "cached pick" not in out and "candidates" in out,
                       "changing %s misses the cache" % " ".join(change), out, err)
                expect(len(entries(cache)) == n + 1, "changing %s writes a new entry" % " ".join(change), out, err)
                n += 1
            # an entry that does not parse (or whose key is not this run's) is a miss
            for f in entries(cache):
                open(f, "a").write("pick plan 1,2,3\n")
            rc, out, err = tune(cache, base)
            expect(rc == 0 and "cached pick" not in out and "candidates" in out, "a damaged entry is a miss", out, err)

    def t_failing_candidate_never_picked():
        with tempfile.TemporaryDirectory() as cache:
            args = ["examples/ag_gemm.syn", "--ranks", "4", "--explain"]
            rc, out, err = tune(cache, args)
            first = re.search(r"pick #(\d+)", out)
            expect(rc == 0 and first, "ag_gemm tunes", out, err)
        with tempfile.TemporaryDirectory() as cache:
            bad = first.group(1)
            rc, out, err = tune(cache, args, {"SYNCC_TUNE_FAIL": bad + ",0"})
            pick = re.search(r"pick #(\d+)", out)
            expect(rc == 0 and pick and pick.group(1) not in (bad, "0") and "FAILED its check" in out,
                   "the candidates made to fail (#%s, #0) are not picked" % bad, out, err)
            text = open(entries(cache)[0]).read()
            expect("pick plan search" not in text, "the cached pick is not the failed search plan", text, "")
        with tempfile.TemporaryDirectory() as cache:
            rc, out, err = tune(cache, args, {"SYNCC_TUNE_FAIL": ",".join(str(i) for i in range(64))})
            expect(rc == 1 and "no candidate of ag_gemm passed its check" in err and not entries(cache),
                   "every candidate failing: an error, nothing cached", out, err)

    def t_repeats_not_run():
        # a choice that builds the search's own plan (row_linear at P = 4:
        # two chunks on p2p), or a tile that makes the kernels codegen makes
        # with none asked for, runs as an earlier candidate: not run again
        rows = re.compile(r"^  [ *]#(\d+) +predicted .*  (?:ok|FAILED its check|refused|not run \(budget\)) +(.*)$", re.M)
        with tempfile.TemporaryDirectory() as cache:
            rc, out, err = tune(cache, ["examples/row_linear.syn", "--ranks", "4", "--explain"])
            what = [m.group(2) for m in rows.finditer(out)]
            expect(rc == 0 and re.search(r"^  1 more candidate not run: each would run as an earlier one", out, re.M)
                   and what.count("the search's plan") == 1 and len(what) == 6,
                   "the choice repeating the search's plan is dropped, five others run", out, err)
        syncc = os.path.join(root, "syncc")
        rc, ptx, err = run([syncc, "examples/row_linear.syn", "--ranks", "1", "--profile", "sim", "--emit=ptx"])
        default = re.search(r"^// matmul .* tile (\S+):", ptx, re.M)
        expect(rc == 0 and default, "the default tile is named in the PTX", ptx, err)
        with tempfile.TemporaryDirectory() as cache:
            rc, out, err = tune(cache, ["examples/row_linear.syn", "--ranks", "1", "--explain"], {"SYNCC_TUNE_CODEGEN": "1"})
            what = [m.group(2) for m in rows.finditer(out)]
            expect(rc == 0 and "the search's plan, tile %s" % default.group(1) not in what
                   and any(w.startswith("the search's plan, tile ") for w in what) and len(set(what)) == len(what)
                   and re.search(r"^  1 more candidate not run", out, re.M),
                   "the tile codegen picks anyway (%s) is not a candidate of its own" % default.group(1), out, err)

    def t_usage():
        rc, out, err = run([syncrun, "--sim", "--tune", "--tune-budget", "0", "examples/row_linear.syn"])
        expect(rc == 2 and "--tune-budget" in err, "--tune-budget 0 is refused", out, err)
        rc, out, err = run([syncrun, "--sim", "--tune", "--interp", "examples/row_linear.syn"])
        expect(rc == 2 and "--interp" in err, "--tune with --interp is refused", out, err)

    def t_syncc_without_gpu():
        # syncc --tune measures through syncrun-gpu; with no GPU it says so
        # and compiles the search's plans, the same code as without --tune
        if os.path.exists("/dev/nvidia0"):
            return
        syncc = os.path.join(root, "syncc")
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = run([syncc, "examples/row_linear.syn", "--ranks", "2", "--tune", "-o", tmp + "/a"])
            expect(rc == 0 and "no GPU here: nothing measured" in err, "syncc --tune without a GPU", out, err)
            rc, out2, err2 = run([syncc, "examples/row_linear.syn", "--ranks", "2", "-o", tmp + "/b"])
            expect(open(tmp + "/a.ptx").read() == open(tmp + "/b.ptx").read(), "the same kernels as without --tune",
                   out2, err2)

    def oracle(ex, p):
        def t():
            with tempfile.TemporaryDirectory() as cache:
                rc, out, err = tune(cache, ["examples/%s.syn" % ex, "--ranks", p, "--explain"])
                m = re.search(r"(\d+) candidates, (\d+) run, (\d+) passed", out)
                expect(rc == 0 and m and m.group(1) == m.group(2) == m.group(3) and "FAILED" not in out,
                       "every plan --tune can choose agrees with the oracle", out, err)
        return t

    cases = [("tune/" + k[2:], v) for k, v in sorted(locals().items()) if k.startswith("t_")]
    for ex in ("row_linear", "ag_gemm", "gemm_rs", "sp_mlp", "a2a_matmul"):
        for p in ("2", "4", "8"):
            cases.append(("tune/oracle %s P=%s (every candidate --tune can pick)" % (ex, p), oracle(ex, p)))
    return cases
