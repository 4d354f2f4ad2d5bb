"""The simulator's own failures (issue 17, item 9): one rank's failure ends
every rank's waits at once instead of the watchdog's whole timeout, and
ranks calling different chunks of a collective are caught at that chunk,
by its number, even when the chunks have the same size."""
import os
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

    return [("sim/" + k[2:], v) for k, v in sorted(locals().items()) if k.startswith("t_")]
