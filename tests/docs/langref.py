"""docs/language.md against the C tables it describes: it must name every
builtin of ir/rules.c (builtins[]) and every collective of comm/colls.h in
section 7 with an arity the tables accept, mention each in the placement
rules of section 6, list every conversion of reshard_plan() (ir/rules.c) in
the table of section 6.3, and describe every graph-IR op of ir/ops.h a
program can write.  (sema.c's did-you-mean tries builtins[] itself.)

The matmul and elementwise placement rules are code (mm_place, ew_place),
not a table; each row of the document's tables has accepted and rejected
tests under tests/lang/place/ instead."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ctables  # noqa: E402  (tests/ctables.py)

# ops.h ops a program writes as operators, and the internal ones
OPERATORS = {"add": "`a + b`", "sub": "`a - b`", "mul": "`a * b`", "div": "`a / b`",
             "neg": "negation", "matmul": "`a @ b`"}
INTERNAL = {"param", "const", "scatter", "broadcast", "reshard"}
PLACE = {"PL_REPL": "repl", "PL_SPLIT": "split", "PL_PARTIAL": "partial"}


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def builtins(root, rules):
    """(name, min args, max args) of each row of builtins[] written out in
    ir/rules.c and of each collective (comm/colls.h: its args, exactly)."""
    table = re.search(r"static const Builtin builtins\[\] = \{(.*?)\n\};", rules, re.S)
    if not table:
        return None
    rows = []
    for m in re.finditer(r'\{"(\w+)",\s*(\d+),\s*([^,]+),', table.group(1)):
        hi = m.group(3).strip()
        rows.append((m.group(1), int(m.group(2)), 1 << 16 if hi == "1 << 16" else int(hi)))
    return rows + [(c["name"], c["args"], c["args"]) for c in ctables.collectives(root)]


def section(doc, head, next_head):
    i = doc.find(head)
    j = doc.find(next_head, i + 1)
    if i < 0 or j < 0:
        return None
    return re.sub(r"```.*?```", "", doc[i:j], flags=re.S)  # prose and tables, not examples


def reshard_rows(rules):
    """(from, to, collective) of each conversion reshard_plan() returns."""
    fn = re.search(r"\nreshard_plan\(.*?\n\}", rules, re.S)
    rows, cur = [], None
    for line in fn.group(0).splitlines() if fn else []:
        m = re.match(r"\s*case (PL_\w+):", line)
        if m:
            cur = m.group(1)
        m = re.search(r"if \(to\.kind == (PL_\w+)\)", line)
        if m and cur:
            to = m.group(1)
        m = re.search(r"return \(Reshard\)\{OP_(\w+)", line)
        if m and cur and to:
            rows.append((PLACE[cur], PLACE[to], m.group(1).lower()))
            to = None
    return rows


def problems(root):
    rules, ops = read(root, "ir/rules.c"), read(root, "ir/ops.h")
    doc = read(root, "docs/language.md")
    bad = []
    table = builtins(root, rules)
    s7 = section(doc, "## 7. Builtins", "## 8. ")
    s6 = section(doc, "## 6. Placements", "## 7. ")
    s63 = section(doc, "### 6.3", "## 7. ")
    if not table or not s7 or not s6 or not s63:
        return ["cannot find builtins[] in ir/rules.c or sections 6, 6.3, 7 of docs/language.md"]
    for name, lo, hi in table:
        calls = re.findall(r"\b%s\(([^()]*)\)" % name, s7)
        if not calls:
            bad.append("section 7 does not show the builtin %s(...)" % name)
        for args in calls:
            parts = [a.strip() for a in re.split(r",(?![^\[]*\])", args)]  # not inside [..]
            n = len(parts)
            if parts[-1] == "...":
                if hi < 100:
                    bad.append("section 7 shows %s(%s) as variadic; ir/rules.c takes %d to %d" % (name, args, lo, hi))
            elif not lo <= n <= hi:
                bad.append("section 7 shows %s(%s) with %d arguments; ir/rules.c takes %d to %d" % (name, args, n, lo, hi))
        if not re.search(r"\b%s\b" % name, s6):
            bad.append("section 6 (placements) does not mention the builtin %s" % name)
    names = {n for n, _, _ in table}
    for op in re.findall(r'^O\(\w+,\s*"(\w+)"', ops, re.M):
        if op in names or op in INTERNAL:
            continue
        if op not in OPERATORS:
            bad.append("ir/ops.h has the op %s: docs/language.md must describe it (then list it in tests/docs/langref.py)" % op)
        elif OPERATORS[op] not in s6:
            bad.append("section 6 does not give the placement of %s (%s)" % (op, OPERATORS[op]))
    rows = reshard_rows(rules)
    if not rows:
        bad.append("cannot read the conversions of reshard_plan() in ir/rules.c")
    for frm, to, coll in rows:
        want = "keeps its block" if coll == "scatter" else "`%s(" % coll
        if not any(l.startswith("| %s" % frm) and ("| %s" % to) in l and want in l for l in s63.splitlines()):
            bad.append("the table of section 6.3 has no row %s -> %s by %s" % (frm, to, coll))
    return bad
