"""The simulator's own failures (issue 17, item 9): one rank's failure ends
every rank's waits at once instead of the watchdog's whole timeout, and
ranks calling different chunks of a collective are caught at that chunk,
by its number, even when the chunks have the same size; the p2p backend's
remote-flag protocol runs every example and names a dropped flag; the
matmul the oracle and the ranks share is the plain loop's, bit for bit
(build/sim/mm_check, tests/sim/mm_check.c)."""
import os
import re
import time


def tests(root, run, Fail):
    syncrun = os.path.join(root, "syncrun")

    def expect(cond, what, out, err):
        if not cond:
            raise Fail(" %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (what, out[-2000:], err[-2000:]))

    def t_failure_stops_ranks():
        # each rank's matmul fails (a broken lowering) after its first
        # block, while its comm lane waits for the matmul's flag: with a 60 s
        # watchdog that was a minute a run
        for extra in ([], ["--interp"]):
            t0 = time.time()
            rc, out, err = run([syncrun, "--sim", "tests/sim/late_failure.syn", "--ranks", "4", "--break",
                                "matmul-noslice", "--timeout-ms", "60000"] + extra)
            took = time.time() - t0
            expect(rc == 1 and "FAILED" in out and "do not fit" in out and took < 20,
                   "a failing rank stops the others at once %s(%.1f s)" % (" ".join(extra), took), out, err)

    def t_chunk_ids_agree():
        # rank 0 runs its two equal all_reduce chunks backwards: same op,
        # same size, different chunks -- the call is refused, naming both
        rc, out, err = run([syncrun, "--sim", "tests/sim/dropped_edge.syn", "--ranks", "4", "--profile", "sim",
                            "--break", "comm-order"])
        expect(rc == 1 and "FAILED" in out and "all_reduce of chunk 1" in out and "all_reduce of chunk 0" in out,
               "ranks in different chunks of one collective: caught at the chunk, by number", out, err)

    def t_p2p_examples():
        # every example's plans on the p2p backend at P = 2, 4, 8: libsyncrt's
        # remote-flag protocol (sim/comm.c) instead of the rendezvous, checked
        # against the oracle; --explain must say the collectives are on p2p
        import glob
        for f in sorted(glob.glob(os.path.join(root, "examples", "*.syn"))):
            for P in ("2", "4", "8"):
                rc, out, err = run([syncrun, "--sim", f, "--ranks", P, "--comm-backend", "p2p", "--explain"])
                expect(rc == 0 and "FAILED" not in out and ", p2p" in out + err,
                       "%s at P = %s on p2p matches the oracle" % (os.path.basename(f), P), out, err)

    def t_p2p_all_plans():
        # not only the plan the search picks: every candidate plan of every
        # example on the p2p backend at P = 2, 4, 8 (issue 19's CPU check),
        # each against the oracle
        import glob
        for f in sorted(glob.glob(os.path.join(root, "examples", "*.syn"))):
            for P in ("2", "4", "8"):
                rc, out, err = run([syncrun, "--sim", f, "--ranks", P, "--comm-backend", "p2p", "--all-plans"])
                expect(rc == 0 and "FAILED" not in out and "MISMATCH" not in out and re.search(r"candidate plans? run.*all ok", out),
                       "%s at P = %s on p2p: every candidate plan matches the oracle" % (os.path.basename(f), P), out, err)

    def t_p2p_pushed():
        # a reduce_scatter pushed by its matmul (gemm_rs; row_linear's
        # all_reduce, where a candidate splits it) at P = 2, 4, 8, every candidate plan
        # (chunked ones among them): the bands copy their rows into the
        # owners' copies and count at the owners' flags, the owners add the
        # P slots -- against the oracle
        for f in ("gemm_rs", "row_linear"):
            for P in (2, 4, 8):
                args = [syncrun, "--sim", "examples/%s.syn" % f, "--ranks", str(P), "--comm-backend", "p2p",
                        "-D", "M=%d" % (256 * P), "-D", "N=512", "-D", "K=256", "--profile", "sim"]
                rc, out, err = run(args + ["--explain"])
                expect(rc == 0 and "FAILED" not in out and (f != "gemm_rs" or "pushed by its matmul's epilogue" in out + err),
                       "%s at P = %d: the plan (gemm_rs's pushed) matches the oracle" % (f, P), out, err)
                rc, out, err = run(args + ["--all-plans"])
                expect(rc == 0 and re.search(r"candidate plans? run.*all ok", out),
                       "%s at P = %d: every pushed candidate plan matches the oracle" % (f, P), out, err)
        # sequence-parallel MLP: all_gather -> matmul -> GELU -> matmul ->
        # reduce_scatter, pushed in 2-4 chunks by the second matmul's bands
        for P in (2, 4):
            args = [syncrun, "--sim", "examples/sp_mlp.syn", "--ranks", str(P), "--comm-backend", "p2p",
                    "-D", "S=%d" % (256 * P), "-D", "H=256", "-D", "F=512", "--profile", "sim"]
            rc, out, err = run(args + ["--explain"])
            expect(rc == 0 and "pushed by its matmul's epilogue" in out + err and "FAILED" not in out,
                   "sp_mlp at P = %d: its reduce_scatter pushed, the plan matches the oracle" % P, out, err)
            rc, out, err = run(args + ["--all-plans"])
            expect(rc == 0 and re.search(r"candidate plans? run.*all ok", out),
                   "sp_mlp at P = %d: every candidate plan matches the oracle" % P, out, err)

    def t_p2p_pushed_gathered():
        # bands cut by an all_gather's chunks hold one owner's rows each: not
        # pushed (push_bands_even); interleaved ones are -- every candidate
        for P in ("2", "4", "8"):
            rc, out, err = run([syncrun, "--sim", "tests/sim/push_gathered.syn", "--ranks", P, "--comm-backend", "p2p",
                                "--profile", "sim", "--timeout-ms", "5000", "--all-plans"])
            expect(rc == 0 and re.search(r"candidate plans? run.*all ok", out),
                   "push_gathered at P = %s: every candidate plan (pushed where its bands allow) matches the oracle" % P,
                   out, err)

    def t_p2p_pushed_broken():
        # a rank that pushes its rows but raises no owner's flag: the owners'
        # waits end in a named timeout; one that pushes into the wrong slot:
        # the oracle sees it (the slot left unwritten is poisoned)
        t0 = time.time()
        args = [syncrun, "--sim", "examples/gemm_rs.syn", "--ranks", "4", "--comm-backend", "p2p", "-D", "M=1024",
                "-D", "N=512", "-D", "K=256", "--timeout-ms", "1500"]
        rc, out, err = run(args + ["--break", "push-raise"])
        took = time.time() - t0
        expect(rc == 1 and "FAILED" in out and "the pushed band from every rank" in out and took < 15,
               "a pushed band's raise never made is a named timeout (%.1f s)" % took, out, err)
        rc, out, err = run(args + ["--break", "push-slot"])
        expect(rc == 1 and "MISMATCH" in out and "timeout" not in out,
               "a pushed band in the wrong slot is caught by the oracle", out, err)

    def t_p2p_dropped_flag():
        # rank 0 never raises its arrival flag for its first p2p chunk: every
        # reader's wait ends in a timeout that names the chunk and the flag
        t0 = time.time()
        rc, out, err = run([syncrun, "--sim", "examples/gemm_rs.syn", "--ranks", "4", "--comm-backend", "p2p",
                            "--break", "p2p-flag", "--timeout-ms", "1500"])
        took = time.time() - t0
        expect(rc == 1 and "FAILED" in out and "p2p reduce_scatter of chunk 0 for the arrival flag of rank 0" in out
               and "a remote flag never raised" in out and took < 15,
               "a dropped remote flag is a named timeout (%.1f s)" % took, out, err)

    def t_failing_calls_never_crash():
        # rank 0's comm lane backwards on every candidate (nccl-style and
        # p2p chunks): the ranks that found the mismatch used to leave while
        # others still read the chunk on their lane's stack -- a crash in
        # about one run of three; 8 runs here
        for i in range(8):
            rc, out, err = run([syncrun, "--sim", "examples/row_linear.syn", "--ranks", "4", "--all-plans", "--break",
                                "comm-order"])
            expect(rc == 1 and "MISMATCH" in out and "internal compiler error" not in err + out,
                   "run %d: every candidate fails as a mismatch, none crashes" % i, out, err)

    def t_matmul_is_the_plain_loop():
        check = os.path.join(root, "build", "sim", "mm_check")
        if not os.path.exists(check):
            raise Fail(" %s is missing: run make check" % check)
        rc, out, err = run([check])
        expect(rc == 0 and "FAIL" not in out, "the simulator's matmul differs from the plain loop", out, err)

    return [("sim/" + k[2:], v) for k, v in sorted(locals().items()) if k.startswith("t_")]
