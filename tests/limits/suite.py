"""The planner and the simulator within their bounds (docs/language.md §9):
ops that once took minutes and gigabytes to plan -- a fused region of
thousands of `let`s, ring_sum.syn at 512 and 4096 ranks -- planned, and one
too large to simulate refused, under a CPU-time and an address-space limit,
so a regression fails here instead of swapping.  Run with the normal build
only (the sanitizers need address space)."""
import os
import resource
import subprocess
import tempfile

CPU_S = 60            # CPU seconds, not wall: a loaded machine does not fail it
AS_BYTES = 2 << 30    # address space


def limited(cmd, root):
    def cap():
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_S, CPU_S))
        resource.setrlimit(resource.RLIMIT_AS, (AS_BYTES, AS_BYTES))
    try:
        p = subprocess.run(cmd, cwd=root, capture_output=True, timeout=300, preexec_fn=cap,
                           env=dict(os.environ, NO_COLOR="1"))
    except subprocess.TimeoutExpired:
        return -1, "", "timed out"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def tests(root, run, Fail):
    syncc = os.path.join(root, "syncc")

    def expect(cond, what, out, err):
        if not cond:
            raise Fail(" %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (what, out[-2000:], err[-2000:]))

    def t_fused_lets():
        # 2,500 elementwise lets fuse into one group: its block lists grew
        # by a copy per append (9.4 GB, minutes); now linear.
        lines = ["param N = 64;", "op f(x: f32[N, N] @split(0)) -> f32[N, N] @split(0) {", "    let a0 = x;"]
        lines += ["    let a%d = a%d * x + 0.5;" % (i, i - 1) for i in range(1, 2500)]  # each reads x: a region each
        lines += ["    return a2499;", "}"]
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "lets.syn")
            with open(src, "w") as f:
                f.write("\n".join(lines) + "\n")
            for ranks in ("1", "2"):
                rc, out, err = limited([syncc, src, "--ranks", ranks, "--emit=plan"], root)
                expect(rc == 0, "2,500 fused lets at P=%s: planned within the limits (exit %d)" %
                       (ranks, rc), out, err)

    def t_ring_sum_512():
        rc, out, err = limited([syncc, "tests/lang/docs/ring_sum.syn", "--ranks", "512", "-D", "N=4096",
                                "--emit=plan", "--explain"], root)
        expect(rc == 0 and "search cut short" in out, "ring_sum at P=512: planned within the limits, the search "
               "cut short and --explain says so (exit %d)" % rc, out, err)

    def t_ring_sum_4096():
        rc, out, err = limited([syncc, "tests/lang/docs/ring_sum.syn", "--ranks", "4096", "-D", "N=32768",
                                "--emit=plan"], root)
        expect(rc == 0 and "plan of ring_sum (P = 4096)" in out, "ring_sum at P=4096: planned within the limits "
               "(exit %d)" % rc, out, err)

    # A 16 GiB tensor in the simulator (32 GiB of f64 for its input alone):
    # an error at the op, exit 1 -- not malloc failing as an internal
    # error labelled "syncc:" (issue 17, item 8).
    def t_sim_too_large():
        syncrun = os.path.join(root, "syncrun")
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "huge.syn")
            with open(src, "w") as f:
                f.write("param N = 65536;\nop f(x: f32[N, N] @split(0)) -> f32[N, N] @split(0) {\n"
                        "    return x * 2.0;\n}\n")
            rc, out, err = limited([syncrun, "--sim", src, "--ranks", "2"], root)
            expect(rc == 1 and "huge.syn:2:1: error: op 'f' is too large to simulate: it needs 256.0 GiB" in err and
                   "internal" not in err, "a 16 GiB tensor in the simulator: a located error, exit 1", out, err)

    return [("limits/" + k[2:], v) for k, v in sorted(locals().items()) if k.startswith("t_")]
