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
    if skipped["gpu"] or skipped["skip"]:
        print("docs: skipped %d GPU-only command(s)%s and %d marked <!-- skip -->" %
              (skipped["gpu"], "" if gpu else " (no GPU or no syncrun-gpu here)", skipped["skip"]))
    return res
