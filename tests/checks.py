"""CHECK lines against a program's output: shared by tests/run (syncc's
stdout) and tests/ptx/suite.py (ptxgen's PTX).

A CHECK text must appear after the previous one's match; a CHECK-NOT text
must not appear between the neighbouring CHECKs' matches.  A text is
literal except its {{...}} parts, which are regular expressions (FileCheck's
form: `mov.u32 %r{{[0-9]+}}, 0;`), so a check need not name the register
numbers a kernel happens to get, and its [[NAME:...]] and [[NAME]] parts:
the first matches the regular expression and names what it matched, the
second matches that text again (FileCheck's variables: `bra
[[EXIT:\\$L[0-9]+]];` ... `[[EXIT]]:`, a branch and its target)."""
import re

PART = re.compile(r"\{\{(.*?)\}\}|\[\[(\w+)(?::(.*?))?\]\]")


def pattern(text, env=None):
    """text as a regular expression; env: the names defined so far (a
    name defined earlier in the same text is matched by back-reference;
    a regular expression ends at the first `]]`, as in FileCheck)."""
    out, pos, here = [], 0, set()
    for m in PART.finditer(text):
        out.append(re.escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(3) is not None:
            out.append("(?P<%s>%s)" % (m.group(2), m.group(3)))
            here.add(m.group(2))
        elif m.group(2) in here:
            out.append("(?P=%s)" % m.group(2))
        elif env is not None and m.group(2) in env:
            out.append(re.escape(env[m.group(2)]))
        else:
            raise KeyError("[[%s]] used before a CHECK defines it" % m.group(2))
        pos = m.end()
    out.append(re.escape(text[pos:]))
    try:
        return re.compile("".join(out))
    except re.error as e:
        raise KeyError("bad pattern %r: %s" % (text, e))


def find(text, out, pos, end=None, env=None):
    """text's first match in out[pos:end], or None."""
    return pattern(text, env).search(out, pos, len(out) if end is None else end)


def check(checks, out, fail):
    """checks: (key, text) pairs in file order; fail(message) raises."""
    pos, nots, env = 0, [], {}
    try:
        for key, text in checks:
            if key == "CHECK-NOT":
                nots.append(text)
                continue
            m = find(text, out, pos, env=env)
            if m is None:
                fail("CHECK not found: %r" % text)
            for t in nots:
                if find(t, out, pos, m.start(), env):
                    fail("CHECK-NOT found: %r" % t)
            nots, pos = [], m.end()
            env.update((k, v) for k, v in m.groupdict().items() if v is not None)
        for t in nots:
            if find(t, out, pos, env=env):
                fail("CHECK-NOT found: %r" % t)
    except KeyError as e:
        fail(str(e.args[0]))
