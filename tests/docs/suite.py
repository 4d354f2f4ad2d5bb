"""Every shell command the documentation shows (README.md, docs/*.md) is run
and its output compared with the one shown: tests/docs/doccheck.py says how a
doc marks commands, expected failures, GPU-only blocks and files.  The
commands GPU-only blocks hold are skipped without a GPU, and counted."""
import os
import sys


def tests(root, run, Fail):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import doccheck
    gpu = doccheck.have_gpu()
    skipped = {"gpu": 0, "skip": 0}
    res = []
    for path in doccheck.documents():
        rel = os.path.relpath(path, root)
        try:
            with open(path, encoding="utf-8") as f:
                for b in doccheck.blocks(f.read()):
                    if b.mark == "skip" or (b.mark == "gpu" and not gpu):
                        skipped[b.mark] += len(b.commands())
        except doccheck.DocFail as e:
            def broken(e=e, rel=rel):
                raise Fail(" %s: %s" % (rel, e))
            res.append((rel + ": malformed", broken))
            continue

        def one(path=path):
            try:
                doccheck.check_doc(path, gpu)
            except doccheck.DocFail as e:
                raise Fail(" " + str(e))
        res.append((rel + ": every $ command run, its output compared", one))
    import langref

    def reference():
        bad = langref.problems(root)
        if bad:
            raise Fail(" docs/language.md omits what the C tables define:\n  " + "\n  ".join(bad))
    res.append(("docs/language.md names every builtin, op and conversion of ir/rules.c and ir/ops.h", reference))
    res.append(("tests/docs/doccheck.py --update rewrites whole outputs and lists stale excerpts", lambda: update_check(root, Fail)))
    if skipped["gpu"] or skipped["skip"]:
        print("docs: skipped %d GPU-only command(s)%s and %d marked <!-- skip -->" %
              (skipped["gpu"], "" if gpu else " (no GPU or no syncrun-gpu here)", skipped["skip"]))
    return res


# A stale excerpt (a `...` block) before a stale whole output: --update must
# still rewrite the whole one (it once gave up at the excerpt, updating none),
# leave the excerpt to its writer and fail naming it.
UPDATE_DOC = """```
$ printf 'a\\nb\\nc\\n'
x
...
```

```
$ echo new
old
```
"""


def update_check(root, Fail):
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="syncc-docupd-") as d:
        path = os.path.join(d, "doc.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write(UPDATE_DOC)
        p = subprocess.run([sys.executable, os.path.join(root, "tests", "docs", "doccheck.py"), "--update", path],
                           capture_output=True, text=True, timeout=60)
        with open(path, encoding="utf-8") as f:
            text = f.read()
    want = UPDATE_DOC.replace("$ echo new\nold\n", "$ echo new\nnew\n")
    if text != want:
        raise Fail(" --update wrote:\n%s" % text)
    if p.returncode != 1 or "FAIL" not in p.stdout or "excerpt shown is stale" not in p.stdout:
        raise Fail(" --update should fail on the stale excerpt (exit %d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
