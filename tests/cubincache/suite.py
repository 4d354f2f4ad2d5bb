"""The cubin cache across compiles (codegen/cubincache.c, issue 18): a
module assembled once is not assembled again -- ptxas is not run, and the
launcher is byte-identical to a fresh compile's, its cubin ptxas's own --;
a changed module or ptxas version is a miss; a damaged entry is a miss and
is replaced; a cache directory that cannot be made or written still
compiles and writes nothing anywhere else; SYNCC_NO_CUBIN_CACHE=1 turns it
off; compiles at the same time leave one whole entry.

ptxas is counted through tests/cubincache/ptxas-count in syncc's place
($PTXAS).  Where no ptxas is found that script stands in for it (its
"cubin" is the module behind a line), so every case but the byte-for-byte
comparison with ptxas still runs; that one is skipped, and says so."""
import glob
import os
import shutil
import tempfile
import threading

GOOD = "op f(x: f32[8, 8] @split(0)) -> f32[8, 8] @split(0) {\n    return x * %s;\n}\n"
HEADER_LINES = 4  # syncc-cubin 1, key, size, sum


def find_ptxas():
    p = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    return p if os.access(p, os.X_OK) else None


def tests(root, run, Fail):
    syncc = os.path.join(root, "syncc")
    counter = os.path.join(root, "tests", "cubincache", "ptxas-count")
    real = find_ptxas()

    def expect(cond, what, err=""):
        if not cond:
            raise Fail(" %s\n--- stderr ---\n%s" % (what, err[-3000:]))

    class Box:
        """A scratch directory: the cache, a HOME and XDG_CACHE_HOME that
        must stay empty, a TMPDIR per compile, the sources and the count of
        ptxas runs."""

        def __init__(self, d):
            self.d = d
            self.cache = os.path.join(d, "cache")
            for sub in ("home", "xdg", "tmp", "src"):
                os.mkdir(os.path.join(d, sub))
            self.n = 0  # compiles so far: each has a PREFIX and a TMPDIR of its own
            self.lock = threading.Lock()

        def env(self, **kw):
            e = {"PTXAS": counter, "PTXAS_REAL": real or "", "PTXAS_COUNT": os.path.join(self.d, "count"),
                 "PTXAS_VERSION_EXTRA": "", "SYNCC_CACHE_DIR": self.cache, "SYNCC_NO_CUBIN_CACHE": "",
                 "HOME": os.path.join(self.d, "home"), "XDG_CACHE_HOME": os.path.join(self.d, "xdg")}
            e.update(kw)
            return e

        def compile(self, factor="2.0", **kw):
            """syncc on GOOD with this factor; the launcher's text."""
            src = os.path.join(self.d, "src", "op%s.syn" % factor)
            with self.lock:
                if not os.path.exists(src):
                    with open(src, "w") as f:
                        f.write(GOOD % factor)
                self.n += 1
                out, tmp = os.path.join(self.d, "out%d" % self.n), os.path.join(self.d, "tmp", str(self.n))
            os.mkdir(out)
            os.mkdir(tmp)
            kw.setdefault("TMPDIR", tmp)
            rc, _, err = run([syncc, src, "--ranks", "2", "-o", os.path.join(out, "op")], env=self.env(**kw))
            expect(rc == 0, "syncc exit %d" % rc, err)
            expect(os.listdir(tmp) == [], "ptxas's directory is left in TMPDIR", err)
            with open(os.path.join(out, "op.c"), "rb") as f:
                return f.read()

        def calls(self):
            try:
                with open(os.path.join(self.d, "count")) as f:
                    return len(f.readlines())
            except FileNotFoundError:
                return 0

        def entries(self, cache=None):
            d = os.path.join(cache or self.cache, "cubin")
            names = os.listdir(d) if os.path.isdir(d) else []
            expect(all(n.endswith(".cubin") for n in names), "files other than entries in %s: %s" % (d, names))
            return sorted(os.path.join(d, n) for n in names)

        def untouched(self):
            for sub in ("home", "xdg"):
                left = os.listdir(os.path.join(self.d, sub))
                expect(left == [], "the cache went to %s instead: %s" % (sub, left))

    def case(fn):
        def t():
            with tempfile.TemporaryDirectory() as d:
                fn(Box(d))
        return t

    def embedded(c):
        return b"embedded with its cubin" in c[:400]

    def t_second_compile_hits(b):
        first = b.compile()
        expect(embedded(first) and b.calls() == 1 and len(b.entries()) == 1, "a first compile assembles and keeps "
               "its cubin (ptxas runs %d, %d entries)" % (b.calls(), len(b.entries())))
        again = b.compile()
        expect(b.calls() == 1, "a second compile of the same module runs ptxas (%d runs)" % b.calls())
        expect(again == first, "the launcher from a hit differs from the first one")
        fresh = b.compile(SYNCC_NO_CUBIN_CACHE="1")
        expect(b.calls() == 2 and fresh == first, "the launcher from a hit differs from a fresh compile's")
        b.untouched()

    def t_hit_is_ptxas_own_cubin(b):
        if not real:
            print("cubincache/hit is ptxas own cubin: skipped (no ptxas here)")
            return
        b.compile()
        b.compile()
        expect(b.calls() == 1, "the second compile was not a hit")
        out = os.path.join(b.d, "direct.cubin")
        rc, _, err = run([real, "-arch=sm_90a", "-o", out, os.path.join(b.d, "out1", "op.ptx")])
        expect(rc == 0, "ptxas on the module", err)
        with open(b.entries()[0], "rb") as f:
            body = f.read().split(b"\n", HEADER_LINES)[HEADER_LINES]
        expect(body == open(out, "rb").read(), "the cached cubin is not the one ptxas makes of the module")

    def t_changed_module_or_ptxas_misses(b):
        b.compile()
        b.compile("3.0")
        expect(b.calls() == 2 and len(b.entries()) == 2, "another module is a miss (%d runs)" % b.calls())
        b.compile(PTXAS_VERSION_EXTRA="a newer ptxas")
        expect(b.calls() == 3 and len(b.entries()) == 3, "another ptxas version is a miss (%d runs)" % b.calls())
        b.compile()
        expect(b.calls() == 3, "the first module's entry is still a hit (%d runs)" % b.calls())

    def t_damaged_entry_is_replaced(b):
        good = b.compile()
        entry = b.entries()[0]
        whole = open(entry, "rb").read()
        b.compile("3.0")
        other = [e for e in b.entries() if e != entry][0]
        parts = whole.split(b"\n", HEADER_LINES)
        head, body = b"\n".join(parts[:HEADER_LINES]) + b"\n", parts[HEADER_LINES]
        flip = bytearray(whole)
        flip[len(head) + len(body) // 2] ^= 0x40
        damage = [("cut short", whole[:len(whole) // 2]), ("a byte of the cubin changed", bytes(flip)),
                  ("empty", b""), ("not an entry", b"garbage\n" * 10), ("no body", head),
                  ("a size too large", whole.replace(b"size ", b"size 1", 1)),
                  ("another module's entry", open(other, "rb").read())]
        for what, text in damage:
            with open(entry, "wb") as f:
                f.write(text)
            calls = b.calls()
            expect(b.compile() == good and b.calls() == calls + 1, "an entry %s: not a miss" % what)
            expect(open(entry, "rb").read() == whole, "an entry %s: not replaced by the fresh cubin" % what)
        os.remove(entry)
        os.mkdir(entry)  # an entry that cannot be read or replaced
        calls = b.calls()
        expect(b.compile() == good and b.calls() == calls + 1, "a directory in an entry's place: not a miss")
        b.entries()  # and no temporary file left beside it

    def t_unwritable_cache_compiles(b):
        plain = os.path.join(b.d, "a-file")
        with open(plain, "w") as f:
            f.write("not a directory\n")
        blocked = os.path.join(b.d, "blocked")
        os.mkdir(blocked)
        with open(os.path.join(blocked, "cubin"), "w") as f:
            f.write("not a directory\n")
        dirs = [("a file", plain), ("under a file", os.path.join(plain, "sub")), ("in /proc", "/proc/syncc-no-such"),
                ("whose cubin/ is a file", blocked)]
        if os.geteuid() != 0:  # root writes where the mode says no
            ro = os.path.join(b.d, "read-only")
            os.mkdir(ro, 0o555)
            dirs.append(("read-only", ro))
        calls = 0
        for what, d in dirs:
            c = b.compile(SYNCC_CACHE_DIR=d)
            calls += 1
            expect(embedded(c) and b.calls() == calls, "a cache directory %s: no cubin" % what)
            b.untouched()
        expect(open(plain).read() == "not a directory\n" and os.listdir(blocked) == ["cubin"],
               "something was written where no cache can be")
        b.compile(SYNCC_CACHE_DIR="", XDG_CACHE_HOME="", HOME="")
        expect(b.calls() == calls + 1, "no directory named at all: the compile did not assemble")

    def t_read_only_cache_still_hits(b):
        if os.geteuid() == 0:  # root writes where the mode says no
            print("cubincache/read only cache still hits: skipped (run as root)")
            return
        first = b.compile()
        d = os.path.join(b.cache, "cubin")
        os.chmod(d, 0o555)
        try:
            expect(b.compile() == first and b.calls() == 1, "a read-only cache: no hit")
            b.compile("3.0")
            expect(b.calls() == 2 and len(b.entries()) == 1, "a read-only cache: written to")
        finally:
            os.chmod(d, 0o755)

    def t_default_directory(b):
        b.compile(SYNCC_CACHE_DIR="")
        xdg = os.path.join(b.d, "xdg", "syncc")
        expect(len(b.entries(xdg)) == 1, "without SYNCC_CACHE_DIR: no entry in $XDG_CACHE_HOME/syncc/cubin")
        shutil.rmtree(xdg)
        b.compile(SYNCC_CACHE_DIR="", XDG_CACHE_HOME="")
        home = os.path.join(b.d, "home", ".cache", "syncc")
        expect(len(b.entries(home)) == 1, "without XDG_CACHE_HOME either: no entry in ~/.cache/syncc/cubin")
        expect(b.calls() == 2 and not os.path.exists(b.cache), "the default directory was not the one used")

    def t_turned_off(b):
        b.compile(SYNCC_NO_CUBIN_CACHE="1")
        b.compile(SYNCC_NO_CUBIN_CACHE="1")
        expect(b.calls() == 2 and b.entries() == [], "SYNCC_NO_CUBIN_CACHE=1: a hit, or an entry kept")
        b.compile(SYNCC_NO_CUBIN_CACHE="0")
        expect(b.calls() == 3 and len(b.entries()) == 1, "SYNCC_NO_CUBIN_CACHE=0 is the cache on")

    def t_compiles_at_once(b):
        got, threads = [], []
        for _ in range(4):
            threads.append(threading.Thread(target=lambda: got.append(b.compile())))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        expect(len(got) == 4 and len(set(got)) == 1, "four compiles at once: %d launchers, %d different" %
               (len(got), len(set(got))))
        expect(len(b.entries()) == 1, "four compiles at once: not one entry")
        b.compile()
        expect(b.calls() <= 4, "after them, a hit")

    def t_no_ptxas(b):
        c = b.compile(PTXAS=os.path.join(b.d, "no-ptxas"))
        expect(not embedded(c) and b.entries() == [], "no ptxas: a cubin, or an entry kept")

    return [("cubincache/" + k[2:].replace("_", " "), case(v)) for k, v in sorted(locals().items())
            if k.startswith("t_")]
