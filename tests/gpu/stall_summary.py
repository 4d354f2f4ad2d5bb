"""Where a kernel's warps wait, from Nsight Compute's source page as CSV
(`ncu -i REP --page source --csv --print-source sass`, tests/gpu/stall-prof):
the instructions with the most warp-state samples, and the samples summed
by opcode, each with its share of the kernel's samples.

    python3 tests/gpu/stall_summary.py FILE.sass.csv [TOP]
"""
import csv
import re
import sys
from collections import Counter


def number(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return 0.0


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.strip()]
    # the page may open with lines that are not the table (the kernel's name)
    start = next(i for i, ln in enumerate(lines) if "Source" in ln and "," in ln)
    rows = list(csv.DictReader(lines[start:]))
    if not rows:
        sys.exit("no rows in " + path)
    cols = list(rows[0].keys())
    src = next(c for c in cols if c.strip().strip('"') == "Source")
    allc = next((c for c in cols if "Sampling" in c and "All" in c), None) or \
        next(c for c in cols if "Sampling" in c)
    notc = next((c for c in cols if "Sampling" in c and "Not" in c), None)
    total = sum(number(r[allc]) for r in rows) or 1.0
    print("%s: %d instructions, %d samples (%s)" % (path, len(rows), total, allc))
    by_op = Counter()
    for r in rows:
        m = re.match(r"\s*(@!?U?P\w+\s+)?([A-Z0-9_.]+)", r[src] or "")
        op = m.group(2).split(".")[0] if m else "?"
        by_op[op] += number(r[allc])
    print("\nby opcode:")
    for op, n in by_op.most_common(25):
        print("  %-14s %6.2f%%" % (op, 100 * n / total))
    print("\ntop instructions:")
    order = sorted(range(len(rows)), key=lambda i: -number(rows[i][allc]))
    for i in order[:top]:
        r = rows[i]
        extra = " not-issued %5.2f%%" % (100 * number(r[notc]) / total) if notc else ""
        print("  #%-5d %6.2f%%%s  %s" % (i, 100 * number(r[allc]) / total, extra, (r[src] or "").strip()[:110]))


if __name__ == "__main__":
    main()
