#!/usr/bin/env python3
"""A random program generator in the spirit of Csmith / YARPGen.

It writes well-typed random .syn ops that mix matmuls, elementwise kernels,
reductions, collectives and random placements, tracking every value's
dtype, shape and placement with the rules of docs/language.md, so that
syncc must accept each program; syncrun --sim then runs it at several rank
counts and compares it with the oracle.  Any failure is a bug in the
compiler, the simulator or this generator, and becomes a test.

  gensyn.py --seed S                 print one program
  gensyn.py --check N [--seed S]     generate and check N programs
  gensyn.py --seconds T              check programs until T seconds pass

Sizes are multiples of 24, so P = 1, 2, 3, 4 and 8 all divide them.
Besides the float programs: i32 chains with constants past 2^24 that wrap
past 2^31 (fused, they must stay integers), long fused elementwise chains,
all_to_all and shift of split values, and every program at P = 4 and 8 on
two nodes too (--topo 2x2, 2x4).
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = [24, 48]


class V:
    def __init__(self, name, dt, shape, pl):
        self.name, self.dt, self.shape, self.pl = name, dt, list(shape), pl  # pl: ("repl",) ("split", d) ("partial", op)

    def ty(self):
        return "%s[%s]" % (self.dt, ", ".join(map(str, self.shape)))


def place_text(pl):
    if pl[0] == "repl":
        return "@repl"
    if pl[0] == "split":
        return "@split(%d)" % pl[1]
    return "@partial(%s)" % pl[1]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.params, self.lines, self.vals, self.kernels = [], [], [], []
        self.n = 0

    def fresh(self, prefix):
        self.n += 1
        return "%s%d" % (prefix, self.n)

    def param(self, dt, shape, pl):
        if pl[0] == "split" and shape[pl[1]] % 24:
            pl = ("repl",)  # only dims every P divides may be split
        v = V(self.fresh("p"), dt, shape, pl)
        self.params.append(v)
        self.vals.append(v)
        return v

    def let(self, expr, dt, shape, pl):
        v = V(self.fresh("v"), dt, shape, pl)
        self.lines.append("    let %s = %s;" % (v.name, expr))
        self.vals.append(v)
        return v

    def pick(self, pred, ints=False):
        """A value satisfying pred: a float one, or with ints an i32 one."""
        c = [v for v in self.vals if (v.dt == "i32") == ints and pred(v)]
        return self.r.choice(c) if c else None

    def any_place(self, rank, partial=True):
        opts = [("repl",)] + [("split", d) for d in range(rank)]
        if partial:
            opts.append(("partial", "sum"))
        return self.r.choice(opts)

    # ---- kernels: random scalar functions ----
    def kernel(self):
        k = self.fresh("k")
        args = ["a", "b"][: self.r.choice([1, 2])]
        self.kernels.append("kernel %s(%s) = %s;" % (k, ", ".join(args), self.scalar(args, 3)))
        return k, len(args)

    def scalar(self, args, depth):
        r = self.r
        if depth == 0 or r.random() < 0.3:
            return r.choice(args + ["0.5", "1.5", "2.0"])
        c = r.randrange(6)
        x = self.scalar(args, depth - 1)
        y = self.scalar(args, depth - 1)
        return ["(%s + %s)" % (x, y), "(%s * %s)" % (x, y), "(%s - %s)" % (x, y),
                "sigmoid(%s)" % x, "tanh(%s)" % x, "max(%s, %s)" % (x, y)][c]

    # ---- statements ----
    def matmul(self):
        r = self.r
        a = self.pick(lambda v: len(v.shape) == 2 and v.pl[0] != "partial" and v.dt in ("f32", "bf16"))
        if not a:
            a = self.param(r.choice(["f32", "bf16"]), [r.choice(SIZES), r.choice(SIZES)], self.any_place(2, False))
        M, K = a.shape
        N = r.choice(SIZES)
        if a.pl == ("repl",):
            bpl = r.choice([("repl",), ("split", 1), ("split", 0)])
        elif a.pl == ("split", 0):
            bpl = ("repl",)
        else:  # split(1): K split
            bpl = r.choice([("split", 0), ("repl",)])
        b = self.param(a.dt, [K, N], bpl)
        bpl = b.pl  # param() may have made it @repl
        if a.pl == ("split", 1) and bpl == ("repl",) and K % 24:
            return None
        if a.pl == ("repl",) and bpl == ("repl",):
            pl = ("repl",)
        elif a.pl == ("split", 0):
            pl = ("split", 0)
        elif a.pl == ("repl",) and bpl == ("split", 1):
            pl = ("split", 1)
        else:
            pl = ("partial", "sum")
        return self.let("%s @ %s" % (a.name, b.name), a.dt, [M, N], pl)

    def elementwise(self):
        r = self.r
        a = self.pick(lambda v: True)
        if a is None:
            return None
        op = r.choice(["+", "-", "*"])
        if a.pl[0] == "partial" and a.pl[1] != "sum":
            b = self.pick(lambda v: v is not a and v.pl == a.pl and v.shape == a.shape and v.dt == a.dt) or \
                self.param(a.dt, a.shape, a.pl)
            fn = "max" if a.pl[1] == "max" else "min"  # max of partial(max) stays partial(max)
            return self.let("%s(%s, %s)" % (fn, a.name, b.name), a.dt, a.shape, a.pl)
        if a.pl[0] == "partial":
            if op == "*":
                b = self.param(a.dt, a.shape[-1:] if r.random() < 0.5 else a.shape, ("repl",))
            else:
                b = self.pick(lambda v: v is not a and v.pl == a.pl and v.shape == a.shape and v.dt == a.dt) or \
                    self.param(a.dt, a.shape, a.pl)
            return self.let("%s %s %s" % (a.name, op, b.name), a.dt, a.shape, a.pl)
        if r.random() < 0.3:
            return self.let("%s %s %s" % (a.name, op, r.choice(["0.5", "2.0", "1.25"])), a.dt, a.shape, a.pl)
        bpl = r.choice([("repl",), a.pl])
        bshape = a.shape if r.random() < 0.7 else a.shape[-1:]
        if a.pl[0] == "split" and bpl == a.pl and len(bshape) < len(a.shape):
            bpl = ("split", a.pl[1] - (len(a.shape) - len(bshape))) if a.pl[1] >= len(a.shape) - len(bshape) else ("repl",)
        b = self.param(a.dt, bshape, bpl)
        return self.let("%s %s %s" % (a.name, op, b.name), a.dt, a.shape, a.pl)

    def kernel_call(self):
        a = self.pick(lambda v: v.pl[0] != "partial")
        if a is None:
            return None
        k, n = self.kernel()
        args = [a.name]
        if n == 2:
            b = self.pick(lambda v: v is not a and v.pl[0] != "partial" and v.dt == a.dt and v.shape == a.shape and
                          (v.pl == a.pl or v.pl == ("repl",)))
            args.append(b.name if b else "0.75")
        return self.let("%s(%s)" % (k, ", ".join(args)), a.dt, a.shape, a.pl)

    def unary(self):
        a = self.pick(lambda v: v.pl[0] != "partial")
        if a is None:
            return None
        f = self.r.choice(["tanh(%s)", "sigmoid(%s)", "abs(%s)", "-%s", "sqrt(abs(%s) + 1.0)", "log(abs(%s) + 1.0)",
                           "exp(tanh(%s))", "cast(cast(%s, f32), %s)"])
        e = f % ((a.name, a.dt) if f.startswith("cast") else (a.name,))
        return self.let(e, a.dt, a.shape, a.pl)

    def reduce(self):
        r = self.r
        a = self.pick(lambda v: v.pl[0] != "partial" and len(v.shape) >= 1)
        if a is None:
            return None
        d = r.randrange(len(a.shape))
        fn = r.choice(["sum", "mean", "amax", "amin"])
        shape = list(a.shape)
        shape[d] = 1
        pl = a.pl
        if a.pl == ("split", d):
            pl = ("partial", {"sum": "sum", "mean": "sum", "amax": "max", "amin": "min"}[fn])
        return self.let("%s(%s, %d)" % (fn, a.name, d), a.dt, shape, pl)

    def collective(self):
        r = self.r
        a = self.pick(lambda v: v.pl[0] != "repl" and (v.pl[0] == "split" or True))
        if a is None:
            return None
        if a.pl[0] == "partial":
            dims = [d for d in range(len(a.shape)) if a.shape[d] % 24 == 0]
            if dims and r.random() < 0.5:
                d = r.choice(dims)
                return self.let("reduce_scatter(%s, %d, %s)" % (a.name, d, a.pl[1]), a.dt, a.shape, ("split", d))
            return self.let("all_reduce(%s, %s)" % (a.name, a.pl[1]), a.dt, a.shape, ("repl",))
        d = a.pl[1]
        c = r.randrange(3)
        if c == 0:
            return self.let("all_gather(%s, %d)" % (a.name, d), a.dt, a.shape, ("repl",))
        if c == 1:
            return self.let("shift(%s, %d)" % (a.name, r.choice([1, 2, -1])), a.dt, a.shape, a.pl)
        others = [e for e in range(len(a.shape)) if e != d and a.shape[e] % 24 == 0]
        if not others:
            return self.let("all_gather(%s, %d)" % (a.name, d), a.dt, a.shape, ("repl",))
        e = r.choice(others)
        return self.let("all_to_all(%s, %d, %d)" % (a.name, d, e), a.dt, a.shape, ("split", e))

    # ---- i32: big constants, wrap-around, fused ----
    BIG = ["16777217", "2147483000", "1000003", "65537", "3", "7"]

    def int_chain(self):
        r = self.r
        a = self.pick(lambda v: v.pl[0] != "partial", ints=True)
        if a is None:
            a = self.param("i32", [r.choice(SIZES), r.choice(SIZES)], self.any_place(2, False))
        for _ in range(r.randint(1, 6)):
            c = r.choice(self.BIG)
            e = r.choice(["%s + %s", "%s * %s", "%s - %s", "max(%s, -%s)", "min(%s, %s)", "abs(%s) + %s",
                          "-%s + %s"]) % (a.name, c)
            a = self.let(e, "i32", a.shape, a.pl)
        if r.random() < 0.4:  # a reduction of it, or a collective
            d = r.randrange(len(a.shape))
            fn = r.choice(["sum", "amax", "amin"])
            shape = list(a.shape)
            shape[d] = 1
            pl = ("partial", {"sum": "sum", "amax": "max", "amin": "min"}[fn]) if a.pl == ("split", d) else a.pl
            a = self.let("%s(%s, %d)" % (fn, a.name, d), "i32", shape, pl)
            if pl[0] == "partial":
                a = self.let("all_reduce(%s, %s)" % (a.name, pl[1]), "i32", shape, ("repl",))
        elif a.pl[0] == "split":
            a = self.reshuffle(a) or a
        return a

    # ---- long fused chains: a value through many elementwise steps ----
    def chain(self):
        r = self.r
        a = self.pick(lambda v: v.pl[0] != "partial")
        if a is None:
            return None
        n = r.randint(8, 40) if a.dt == "f32" else r.randint(2, 6)  # bf16 rounds at every stored step
        for _ in range(n):
            c = r.choice(["0.5", "1.25", "0.75", "2.0"])
            e = r.choice(["tanh(%s * %s)", "%s * %s + 0.25", "sigmoid(%s) - %s", "max(%s, %s - 1.0)",
                          "tanh(%s + %s)"])
            x = e.count("%s")
            a = self.let(e % ((a.name, c) if x == 2 else (a.name,)), a.dt, a.shape, a.pl)
        return a

    # ---- all_to_all and shift of a split value ----
    def reshuffle(self, a=None):
        r = self.r
        a = a or self.pick(lambda v: v.pl[0] == "split")
        if a is None:
            return None
        d = a.pl[1]
        others = [e for e in range(len(a.shape)) if e != d and a.shape[e] % 24 == 0]
        if others and r.random() < 0.6:
            e = r.choice(others)
            return self.let("all_to_all(%s, %d, %d)" % (a.name, d, e), a.dt, a.shape, ("split", e))
        return self.let("shift(%s, %d)" % (a.name, r.choice([1, 2, -1, 3])), a.dt, a.shape, a.pl)

    def transpose(self):
        a = self.pick(lambda v: len(v.shape) == 2)
        if a is None:
            return None
        pl = a.pl
        if pl[0] == "split":
            pl = ("split", 1 - pl[1])
        return self.let("transpose(%s)" % a.name, a.dt, a.shape[::-1], pl)

    def program(self):
        r = self.r
        self.param(r.choice(["f32", "f32", "bf16"]), [r.choice(SIZES), r.choice(SIZES)], self.any_place(2))
        steps = [self.matmul, self.elementwise, self.kernel_call, self.unary, self.reduce, self.collective,
                 self.transpose, self.int_chain, self.chain, self.reshuffle]
        for _ in range(r.randint(2, 9)):
            r.choice(steps)()
        out = self.vals[-1]
        if out.dt == "i32" and r.random() < 0.5:  # often end on a float value, so both kinds are returned
            out = self.pick(lambda v: True) or out
        # the declared result placement: the reached one, or one a collective reaches
        want = out.pl
        if r.random() < 0.4:
            if out.pl[0] == "partial":
                want = r.choice([("repl",)] + [("split", d) for d in range(len(out.shape)) if out.shape[d] % 24 == 0])
            elif out.pl[0] == "split":
                want = ("repl",)
            else:
                dims = [d for d in range(len(out.shape)) if out.shape[d] % 24 == 0]
                want = ("split", r.choice(dims)) if dims else want
        sig = ", ".join("%s: %s %s" % (p.name, p.ty(), place_text(p.pl)) for p in self.params)
        body = "\n".join(self.lines)
        return "%s\n\nop rnd(%s) -> %s %s {\n%s\n    return %s;\n}\n" % (
            "\n".join(self.kernels), sig, out.ty(), place_text(want), body, out.name)


def check(src, ranks, syncrun, tmpdir, seed):
    path = os.path.join(tmpdir, "rnd%d.syn" % seed)
    with open(path, "w") as f:
        f.write(src)
    for p in ranks:
        variants = [["--ranks", str(p)], ["--ranks", str(p), "--no-pass=fuse"],
                    ["--ranks", str(p), "--no-pass=arsplit,autocomm"]]
        if p in (4, 8):  # two nodes: all_reduce in phases
            variants.append(["--topo", "2x%d" % (p // 2)])
        for extra in variants:
            r = subprocess.run([syncrun, "--sim", path, "--seed", str(seed)] + extra,
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                return "%s exit %d\n%s%s" % (" ".join(extra), r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--ranks", default="1,2,3,4,8")
    ap.add_argument("--syncrun", default=os.path.join(ROOT, "syncrun"))
    ap.add_argument("--save", default=os.path.join(ROOT, "build", "gen-failures"))
    a = ap.parse_args()
    if not a.check and not a.seconds:
        sys.stdout.write(Gen(a.seed).program())
        return 0
    ranks = [int(x) for x in a.ranks.split(",")]
    t0, n, bad = time.time(), 0, 0
    with tempfile.TemporaryDirectory() as d:
        seed = a.seed
        while (a.check and n < a.check) or (a.seconds and time.time() - t0 < a.seconds):
            src = Gen(seed).program()
            why = check(src, ranks, a.syncrun, d, seed)
            n += 1
            if why:
                bad += 1
                os.makedirs(a.save, exist_ok=True)
                with open(os.path.join(a.save, "rnd%d.syn" % seed), "w") as f:
                    f.write(src)
                print("FAIL seed %d: %s" % (seed, why))
            seed += 1
    runs = 3 * len(ranks) + sum(p in (4, 8) for p in ranks)
    print("gensyn: %d programs, %d failed, %.0f s (%d simulator runs each)" % (n, bad, time.time() - t0, runs))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
