"""Fuzzing inside `make check`: replay the committed corpus (every input
that ever found a bug stays there) and the language tests through the
libFuzzer targets -- the front end's, and the back end's (planning,
lowering, the simulator) -- then fuzz each for a fixed number of inputs
from them, with a fixed seed: the same work on a loaded machine as on an
idle one (a time budget gave a busy machine's check fewer inputs, and an
idle one's the whole budget of wall time), and a failure that comes again
when the check is run again.  Longer fuzzing from a new seed each time:
make fuzz, make fuzz-back."""
import glob
import os
import tempfile

# About 5 s of CPU each here (the front end runs ~2000 inputs a second,
# the back end ~1000), where 20 s and 15 s of wall time ran ~40000 and
# ~15000 on an idle machine.
SMOKE_RUNS = 10000
BACK_SMOKE_RUNS = 5000


def tests(root, run, Fail):
    binary = os.path.join(root, "build/fuzz/syncc-fuzz")
    # Built once, here, before the tests run in parallel: two builds at
    # once would write the binary while the other runs it.
    # An object per library file, in parallel; a build, not a test: its own
    # time limit (clang with three sanitizers on a loaded 2-core machine).
    rc, out, err = run(["make", "-s", "-j%d" % (os.cpu_count() or 2), "fuzz-build"], timeout=900)
    built = rc == 0
    why = err[-3000:]

    def build():
        if not built:
            raise Fail(" could not build the fuzz target:\n" + why)

    def t_replay():
        build()
        files = sorted(glob.glob(os.path.join(root, "tests/fuzz/corpus/*")) +
                       glob.glob(os.path.join(root, "tests/lang/**/*.syn"), recursive=True) +
                       glob.glob(os.path.join(root, "examples/*.syn")) +
                       glob.glob(os.path.join(root, "stdlib/*.syn")))
        files = [f for f in files if os.path.isfile(f)]  # libFuzzer takes a directory for a corpus
        rc, out, err = run([binary, "-runs=1"] + files)
        if rc != 0:
            raise Fail(" corpus replay failed:\n" + err[-4000:])

    def t_smoke():
        build()
        with tempfile.TemporaryDirectory() as d:
            seeds = [p for p in (os.path.join(root, "tests/fuzz/corpus"), os.path.join(root, "tests/lang"),
                                 os.path.join(root, "examples")) if os.path.isdir(p)]
            rc, out, err = run([binary, "-runs=%d" % SMOKE_RUNS, "-seed=1", "-max_len=2048", "-timeout=10",
                                "-dict=" + os.path.join(root, "tests/fuzz/syn.dict"),
                                "-artifact_prefix=" + d + "/", d] + seeds)
            if rc != 0:
                raise Fail(" %d inputs of fuzzing (-seed=1) found a bug:\n%s" % (SMOKE_RUNS, err[-4000:]))

    back = os.path.join(root, "build/fuzz/syncc-fuzz-back")

    def t_back_replay():
        build()
        files = sorted(glob.glob(os.path.join(root, "tests/fuzz/corpus/*")) +
                       glob.glob(os.path.join(root, "examples/*.syn")) +
                       glob.glob(os.path.join(root, "tests/sim/*.syn")) +
                       glob.glob(os.path.join(root, "stdlib/*.syn")))
        files = [f for f in files if os.path.isfile(f)]
        rc, out, err = run([back, "-runs=1"] + files)
        if rc != 0:
            raise Fail(" corpus replay through the back end failed:\n" + err[-4000:])

    def t_back_smoke():
        build()
        with tempfile.TemporaryDirectory() as d:
            seeds = [os.path.join(root, p) for p in ("tests/fuzz/corpus", "tests/sim", "examples")]
            rc, out, err = run([back, "-runs=%d" % BACK_SMOKE_RUNS, "-seed=1", "-max_len=2048", "-timeout=20",
                                "-rss_limit_mb=4096",
                                "-dict=" + os.path.join(root, "tests/fuzz/syn.dict"),
                                "-artifact_prefix=" + d + "/", d] + seeds)
            if rc != 0:
                raise Fail(" %d inputs of fuzzing the back end (-seed=1) found a bug:\n%s" % (BACK_SMOKE_RUNS,
                                                                                           err[-4000:]))

    return [("fuzz/replay", t_replay), ("fuzz/smoke (%d inputs)" % SMOKE_RUNS, t_smoke),
            ("fuzz/back-replay", t_back_replay), ("fuzz/back-smoke (%d inputs)" % BACK_SMOKE_RUNS, t_back_smoke)]
