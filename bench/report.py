#!/usr/bin/env python3
"""bench/report.py -- bench.json from the rows of bench/run, and the report.

  report.py merge OUT.json [--set KEY=VALUE ...] ROWS...
      ROWS are files of rows: JSON lines (one object a line), a JSON array, or
      an object with "rows".  An object {"meta": {...}} is merged into the
      meta.  A row needs shape, M, N, K, system, ms, checked; kind, tp, p10,
      p90, min, max, n, rel_err, impl, note are kept where given.  Rows that
      lack a key are left out and named under "warnings".
  report.py render BENCH.json [--out-dir DIR] [--md FILE] [--svg FILE]
      A table per shape (ms per system, speedup over serial, ratio to ideal)
      and an SVG of ratio to ideal against M for each shape measured at
      several M.  --out-dir (default bench/results) writes DATE-LABEL.md,
      DATE-LABEL-msweep.svg and a copy DATE-LABEL.json, where LABEL is like
      2xH200; --md / --svg write exactly those files instead.

Standard library only: it runs on the GPU machine and here."""
import argparse
import json
import math
import os
import re
import sys
from xml.sax.saxutils import escape

REQUIRED = ("shape", "M", "N", "K", "system", "ms", "checked")
ORDER = ["ideal", "gemm", "comm", "serial", "chunk2", "chunk4", "chunk8", "serial_again", "torch_serial",
         "asynctp", "syncc", "syncc-serial"]
PLOTTED = ["serial", "chunk2", "chunk4", "chunk8", "torch_serial", "asynctp", "syncc"]
COLORS = {"serial": "#444444", "chunk2": "#1f77b4", "chunk4": "#2ca02c", "chunk8": "#17becf",
          "torch_serial": "#7f7f7f", "asynctp": "#ff7f0e", "syncc": "#d62728"}
WHAT = {
    "ideal": "max(gemm, comm): full overlap, no interference (derived)",
    "gemm": "the rank's matmul alone, cuBLASLt",
    "comm": "the collective alone, NCCL",
    "serial": "matmul then collective, one stream (AG: collective then matmul)",
    "chunk2": "hand pipelining, 2 chunks, two streams",
    "chunk4": "hand pipelining, 4 chunks, two streams",
    "chunk8": "hand pipelining, 8 chunks, two streams",
    "serial_again": "serial measured again at the end: run-to-run spread",
    "torch_serial": "torch.matmul + torch.distributed, one stream",
    "asynctp": "PyTorch async-TP (symmetric-memory fused op)",
    "syncc": "syncc: the plan its scheduler chooses (bench/syncc-bench)",
    "syncc-serial": "syncc's own serial plan: its kernels, no overlap (bench/syncc-bench)",
}


# ---- merge ----

def read_rows(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text_s = text.strip()
    if not text_s:
        return []
    try:
        doc = json.loads(text_s)
        if isinstance(doc, dict) and "rows" in doc:
            return [{"meta": doc.get("meta", {})}] + list(doc["rows"])
        return doc if isinstance(doc, list) else [doc]
    except json.JSONDecodeError:
        pass
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line.startswith("{"):
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as e:
                items.append({"_bad": "%s:%d: %s" % (path, n, e)})
    return items


def merge(out, sets, paths):
    doc = {"date": None, "hardware": None, "command": None, "meta": {}, "rows": [], "warnings": []}
    for kv in sets:
        k, _, v = kv.partition("=")
        doc[k] = v
    for path in paths:
        if not os.path.exists(path):
            doc["warnings"].append("%s: missing" % path)
            continue
        for item in read_rows(path):
            if "_bad" in item:
                doc["warnings"].append(item["_bad"])
            elif "meta" in item:
                doc["meta"].update(item["meta"])
            elif all(k in item for k in REQUIRED):
                item.setdefault("kind", item["shape"].rsplit("_", 1)[-1])
                item.setdefault("source", os.path.basename(path))
                doc["rows"].append(item)
            else:
                doc["warnings"].append("%s: row without %s: %s" % (
                    path, ", ".join(k for k in REQUIRED if k not in item), json.dumps(item)[:200]))
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("report: %d rows into %s%s" % (len(doc["rows"]), out,
                                         "; warnings:\n  " + "\n  ".join(doc["warnings"]) if doc["warnings"] else ""))
    return 0


# ---- tables ----

def shapes_of(rows):
    """(shape, M, N, K) in first-seen order, with that shape's rows by system."""
    by = {}
    for r in rows:
        key = (r["shape"], int(r["M"]), int(r["N"]), int(r["K"]))
        by.setdefault(key, {})[r["system"]] = r
    return by


def ms_of(r):
    if r is None or not r.get("checked") or r.get("ms") is None:
        return None
    return float(r["ms"])


def fmt(x, spec="%.3f"):
    return "-" if x is None else spec % x


def sys_order(systems):
    return [s for s in ORDER if s in systems] + sorted(s for s in systems if s not in ORDER)


def shape_table(key, rows):
    serial, ideal = ms_of(rows.get("serial")), ms_of(rows.get("ideal"))
    name, M, N, K = key
    kind = next(iter(rows.values())).get("kind", "")
    tp = next(iter(rows.values())).get("tp", "")
    out = ["### %s  M=%d N=%d K=%d (%s, TP=%s)" % (name, M, N, K, kind, tp), "",
           "| system | ms (median) | p10 – p90 | speedup over serial | ratio to ideal | checked | rel. err | note |",
           "|---|---|---|---|---|---|---|---|"]
    for s in sys_order(rows):
        r = rows[s]
        ms = ms_of(r)
        spread = "-" if ms is None or r.get("p10") is None else "%.3f – %.3f" % (r["p10"], r["p90"])
        speed = fmt(serial / ms if serial and ms else None, "%.2fx")
        ratio = fmt(ms / ideal if ideal and ms else None, "%.2f")
        err = r.get("rel_err")
        checked = "yes" if r.get("checked") else ("**no**" if s != "ideal" else "-")
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s, fmt(ms), spread, speed, ratio, checked, "-" if err is None else "%.1e" % err,
            str(r.get("note", "")).replace("|", "/")))
    return out


def best_chunk(rows):
    best = None
    for s in ("chunk2", "chunk4", "chunk8"):
        ms = ms_of(rows.get(s))
        if ms is not None and (best is None or ms < best[1]):
            best = (s, ms)
    return best


def summary_table(by):
    out = ["| shape | M | serial ms | best hand pipelining | asynctp | syncc | ideal ms | serial / ideal |"
           " best hand / ideal | asynctp / ideal | syncc / ideal |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, rows in by.items():
        serial, ideal = ms_of(rows.get("serial")), ms_of(rows.get("ideal"))
        best = best_chunk(rows)
        at, sy = ms_of(rows.get("asynctp")), ms_of(rows.get("syncc"))

        def ratio(x):
            return fmt(x / ideal if x and ideal else None, "%.2f")
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            key[0], key[1], fmt(serial), "-" if best is None else "%.3f (%s)" % (best[1], best[0]), fmt(at),
            fmt(sy), fmt(ideal), ratio(serial), ratio(best[1] if best else None), ratio(at), ratio(sy)))
    return out


def label_of(doc):
    if doc.get("label"):
        return doc["label"]
    base = doc.get("meta", {}).get("baseline", {})
    gpu = str(base.get("gpu") or doc.get("meta", {}).get("asynctp", {}).get("gpu") or "GPU")
    n = base.get("gpus") or doc.get("meta", {}).get("asynctp", {}).get("world") or ""
    gpu = re.sub(r"^NVIDIA\s+", "", gpu)
    return "%sx%s" % (n, re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-"))


def render_md(doc, svg_name):
    by = shapes_of(doc["rows"])
    meta = doc.get("meta", {})
    base, at = meta.get("baseline", {}), meta.get("asynctp", {})
    out = ["# syncc benchmark baselines on %s: %s" % (label_of(doc), doc.get("date") or "date not recorded"), "",
           "**Date.** %s  " % (doc.get("date") or "-"),
           "**Hardware.** %s  " % (doc.get("hardware") or base.get("gpu") or "-"),
           "**Command.** `%s`  " % (doc.get("command") or "-"),
           "**Software.** NCCL %s (baseline.c), cuBLASLt %s, CUDA runtime %s; PyTorch %s with NCCL %s.  " % (
               base.get("nccl", "-"), base.get("cublaslt", "-"), base.get("cuda_runtime", "-"),
               at.get("torch", "-"), at.get("nccl", "-")),
           "**Method.** docs/bench.md: %s warm-up and %s timed runs per system; each run timed with CUDA events "
           "on every rank, the slowest rank per run, median and p10–p90 over runs; every output checked against "
           "serial's before it was timed (tolerance %s); a row that is not checked has no time." % (
               base.get("warmup", "-"), base.get("iters", "-"), base.get("tolerance", "-")),
           "",
           "Speedup over serial = serial ms / system ms; ratio to ideal = system ms / ideal ms (1.00 is full "
           "overlap with no interference; ideal = max(gemm alone, collective alone)).", ""]
    if at:
        out += ["**Async-TP in this PyTorch.** ops: %s; called: %s." % (
            ", ".join("%s=%s" % (k, "yes" if v is True else "no") for k, v in at.get("ops", {}).items()) or "-",
            "; ".join("%s -> %s" % kv for kv in at.get("calls", {}).items()) or "none"), ""]
    out += ["## Summary", ""] + summary_table(by) + [""]
    if svg_name:
        out += ["## M sweep", "", "![ratio to ideal against M](%s)" % svg_name, ""]
    out += ["## Per shape", ""]
    for key, rows in by.items():
        out += shape_table(key, rows) + [""]
    out += ["## Systems", ""] + ["- **%s**: %s" % (s, WHAT[s]) for s in ORDER] + [""]
    if doc.get("warnings"):
        out += ["## Warnings", ""] + ["- %s" % w for w in doc["warnings"]] + [""]
    return "\n".join(out)


# ---- the M-sweep plot ----

def sweeps(rows):
    """Shape names measured at several M: {name: {M: {system: row}}}."""
    by = {}
    for r in rows:
        by.setdefault(r["shape"], {}).setdefault(int(r["M"]), {})[r["system"]] = r
    return {k: v for k, v in by.items() if len(v) > 1}


def nice_ticks(lo, hi):
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / 4)) if span > 0 else 0.1
    for m in (1, 2, 5, 10):
        if span / (step * m) <= 6:
            step *= m
            break
    t = math.floor(lo / step) * step
    ticks = []
    while t <= hi + 1e-9:
        ticks.append(round(t, 6))
        t += step
    return ticks


def panel(name, data, y0, W=760, H=400):
    ms = sorted(data)
    series = {}
    for s in PLOTTED:
        pts = []
        for m in ms:
            v, ideal = ms_of(data[m].get(s)), ms_of(data[m].get("ideal"))
            pts.append((m, v / ideal if v and ideal else None))
        if any(p[1] is not None for p in pts):
            series[s] = pts
    vals = [p[1] for pts in series.values() for p in pts if p[1] is not None] or [1.0]
    lo, hi = min(0.9, min(vals)), max(1.1, max(vals) * 1.03)
    L, R, T, B = 70, 150, 40, 50
    lx = [math.log2(m) for m in ms]
    x0, x1 = min(lx), max(lx)

    def X(m):
        return L + (math.log2(m) - x0) / ((x1 - x0) or 1) * (W - L - R)

    def Y(v):
        return y0 + T + (hi - v) / (hi - lo) * (H - T - B)

    g = ['<text x="%d" y="%d" font-size="15" font-weight="bold">%s: ratio to ideal against M '
         '(lower is better; 1 = ideal)</text>' % (L, y0 + 22, escape(name))]
    g.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (
        L, y0 + T, W - L - R, H - T - B))
    for t in nice_ticks(lo, hi):
        if lo <= t <= hi:
            g.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>' % (L, W - R, Y(t), Y(t)))
            g.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%g</text>' % (L - 6, Y(t) + 4, t))
    g.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="6,4"/>' % (
        L, W - R, Y(1.0), Y(1.0)))
    for m in ms:
        g.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%d</text>' % (X(m), y0 + H - B + 16, m))
    g.append('<text x="%d" y="%d" font-size="12" text-anchor="middle">M (tokens, log scale)</text>' % (
        (L + W - R) // 2, y0 + H - 12))
    g.append('<text x="16" y="%d" font-size="12" transform="rotate(-90 16 %d)" text-anchor="middle">'
             'system ms / ideal ms</text>' % (y0 + H // 2, y0 + H // 2))
    for i, (s, pts) in enumerate(series.items()):
        c = COLORS.get(s, "#000")
        run = []
        for m, v in pts + [(None, None)]:
            if v is None:
                if len(run) > 1:
                    g.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
                        c, " ".join("%.1f,%.1f" % p for p in run)))
                run = []
                continue
            run.append((X(m), Y(v)))
            g.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s M=%d: %.3f</title></circle>' % (
                X(m), Y(v), c, s, m, v))
        ly = y0 + T + 10 + 20 * i
        g.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (
            W - R + 12, W - R + 36, ly, ly, c))
        g.append('<text x="%d" y="%d" font-size="12">%s</text>' % (W - R + 42, ly + 4, s))
    return g


def render_svg(doc):
    sw = sweeps(doc["rows"])
    W, H = 760, 400
    body = []
    for i, (name, data) in enumerate(sw.items()):
        body += panel(name, data, i * H, W, H)
    if not sw:
        body.append('<text x="20" y="40" font-size="14">no shape was measured at several M</text>')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'font-family="sans-serif">\n<rect width="100%%" height="100%%" fill="#fff"/>\n%s\n</svg>\n' % (
                W, H * max(1, len(sw)), W, H * max(1, len(sw)), "\n".join(body)))


def render(path, out_dir, md, svg):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    stem = "%s-%s" % (doc.get("date") or "undated", label_of(doc))
    if not md:
        os.makedirs(out_dir, exist_ok=True)
        md = os.path.join(out_dir, stem + ".md")
        svg = svg or os.path.join(out_dir, stem + "-msweep.svg")
        with open(os.path.join(out_dir, stem + ".json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if svg:
        with open(svg, "w", encoding="utf-8") as f:
            f.write(render_svg(doc))
    with open(md, "w", encoding="utf-8") as f:
        f.write(render_md(doc, os.path.basename(svg) if svg else None))
    print("report: wrote %s%s" % (md, " and " + svg if svg else ""))
    return 0


def merge_args(argv):
    """merge OUT [--set KEY=VALUE | ROWS]...: options and files in any order."""
    sets, files = [], []
    it = iter(argv)
    for a in it:
        if a == "--set":
            sets.append(next(it, ""))
        elif a.startswith("--set="):
            sets.append(a[6:])
        else:
            files.append(a)
    if not files or any("=" not in kv for kv in sets):
        sys.exit("usage: report.py merge OUT.json [--set KEY=VALUE ...] ROWS...")
    return merge(files[0], sets, files[1:])


def main(argv):
    if argv[:1] == ["merge"]:
        return merge_args(argv[1:])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("merge", help="merge OUT.json [--set KEY=VALUE ...] ROWS...")
    r = sub.add_parser("render")
    r.add_argument("bench_json")
    r.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    r.add_argument("--md")
    r.add_argument("--svg")
    a = p.parse_args(argv)
    return render(a.bench_json, a.out_dir, a.md, a.svg)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
