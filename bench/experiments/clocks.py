#!/usr/bin/env python3
"""bench/experiments/clocks.py -- the SM clock and board power while an
op's implementations run back to back, in turns: does one kernel lose to
another by its work or by the clock the power limit leaves it?

    python3 bench/experiments/clocks.py mm_8192x8192x4096 [...] [--secs 2] [--turns 3]

Each named bench/p1.py case is built and checked; then the implementations
(syncc, eager) take turns, each running back to back for --secs seconds,
while `nvidia-smi` samples clocks.sm, power.draw and temperature every
20 ms.  Per turn: ms per call (events over the whole turn), the median
SM clock (MHz), power (W) and temperature over the turn's samples (the
first 10% of the turn left out: the clock's settling), and ms x MHz --
the call's length in millions of SM cycles, which moves with the work
and not with the clock."""
import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("p1", os.path.join(ROOT, "bench", "p1.py"))
p1 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p1)  # imports syncc before torch
torch = p1.torch


def sampler(path):
    return subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                             "--format=csv,noheader,nounits", "-lms", "20"], stdout=open(path, "w"),
                            stderr=subprocess.DEVNULL)


def read_samples(path):
    out = []
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        if len(f) != 4:
            continue
        try:
            t = time.mktime(time.strptime(f[0].split(".")[0], "%Y/%m/%d %H:%M:%S")) + float("0." + f[0].split(".")[1])
            out.append((t, float(f[1]), float(f[2]), float(f[3])))
        except (ValueError, IndexError):
            continue
    return out


def turn(fn, secs, perf):
    """Back to back for about `secs`: batches of calls between events.
    Halfway, `nvidia-smi -q -d PERFORMANCE` (the clock's active event
    reasons: power cap, thermal, hardware slowdown) into the list perf."""
    calls, ms = 0, 0.0
    t0 = time.time()
    q = None
    while time.time() - t0 < secs:
        if q is None and time.time() - t0 > secs / 2:
            q = subprocess.Popen(["nvidia-smi", "-q", "-d", "PERFORMANCE"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20):
            fn()
        b.record()
        b.synchronize()
        ms += a.elapsed_time(b)
        calls += 20
    if q is not None:
        out = q.communicate()[0]
        perf.append(" ".join(l.strip().replace(" ", "") for l in out.splitlines()
                             if ": Active" in l))
    return t0, time.time(), ms / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ops", nargs="+")
    ap.add_argument("--secs", type=float, default=2.0)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--out", default=os.environ.get("OUT", "build/clocks-out"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cases = p1.cases()
    log = os.path.join(args.out, "smi.csv")
    smi = sampler(log)
    rows = []
    try:
        for name in args.ops:
            case = cases[name]
            mod, ins, ref, _ = p1.open_case(name, case)
            impls = {"syncc": lambda: mod.f(*ins), "eager": lambda: case["eager"](*ins)}
            for k, fn in impls.items():
                err = p1.rel_err(fn(), ref)
                print("%s %s: rel err %.2e" % (name, k, err), flush=True)
            for t in range(args.turns):
                for k, fn in (impls.items() if t % 2 == 0 else reversed(list(impls.items()))):
                    perf = []
                    a, b, ms = turn(fn, args.secs, perf)
                    rows.append((name, k, t, a, b, ms, perf[0] if perf else ""))
            mod.close()
    finally:
        time.sleep(0.1)
        smi.terminate()
        smi.wait()
    samples = read_samples(log)
    print("| op | impl | turn | ms per call | SM MHz | W | C | ms x MHz / 1000 | active clock event reasons |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, k, t, a, b, ms, why in rows:
        s = [x for x in samples if a + 0.1 * (b - a) <= x[0] <= b]
        if not s:
            print("| %s | %s | %d | %.4f | - | - | - | - | %s |" % (name, k, t, ms, why))
            continue
        mhz = statistics.median(x[1] for x in s)
        print("| %s | %s | %d | %.4f | %.0f | %.0f | %.0f | %.3f | %s |" % (
            name, k, t, ms, mhz, statistics.median(x[2] for x in s), statistics.median(x[3] for x in s),
            ms * mhz / 1000, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
