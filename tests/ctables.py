"""The rows of comm/colls.h and comm/backends.h (the X-macro tables of the
collectives and the comm backends), read for the tests that hold the docs,
the editors' word lists and the remaining hand-written places to them."""
import os
import re


def _rows(root, rel, macro, fields):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    rows = []
    for m in re.finditer(r"^%s\(([^\n]*(?:\n[ \t]+[^\n]*)*)\)\s*$" % macro, text, re.M):
        parts = [p.strip() for p in m.group(1).split(",", len(fields) - 1)]
        rows.append(dict(zip(fields, parts)))
    return rows


def collectives(root):
    """[{NAME, name, args, send, recv, red, chunks, phases, needs, volume}] in order."""
    rows = _rows(root, "comm/colls.h", "C", ["NAME", "name", "args", "send", "recv", "red", "chunks", "phases",
                                               "needs", "volume"])
    for r in rows:
        r["args"] = int(r["args"])
    return rows


def backends(root):
    """[{NAME, name, can, ctas, maxranks, smsnote}] in order."""
    return _rows(root, "comm/backends.h", "B", ["NAME", "name", "can", "ctas", "maxranks", "smsnote"])
