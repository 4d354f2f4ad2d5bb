"""CHECK lines against a program's output: shared by tests/run (syncc's
stdout) and tests/ptx/suite.py (ptxgen's PTX).

A CHECK text must appear after the previous one's match; a CHECK-NOT text
must not appear between the neighbouring CHECKs' matches.  A text is
literal except its {{...}} parts, which are regular expressions (FileCheck's
form: `mov.u32 %r{{[0-9]+}}, 0;`), so a check need not name the register
numbers a kernel happens to get."""
import re


def pattern(text):
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def find(text, out, pos, end=None):
    """(start, end) of text's first match in out[pos:end], or None."""
    m = pattern(text).search(out, pos, len(out) if end is None else end)
    return (m.start(), m.end()) if m else None


def check(checks, out, fail):
    """checks: (key, text) pairs in file order; fail(message) raises."""
    pos, nots = 0, []
    for key, text in checks:
        if key == "CHECK-NOT":
            nots.append(text)
            continue
        at = find(text, out, pos)
        if at is None:
            fail("CHECK not found: %r" % text)
        for t in nots:
            if find(t, out, pos, at[0]):
                fail("CHECK-NOT found: %r" % t)
        nots, pos = [], at[1]
    for t in nots:
        if find(t, out, pos):
            fail("CHECK-NOT found: %r" % t)
