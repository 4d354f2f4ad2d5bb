"""The scheduler's pictures, checked without a browser (found by tests/run).

--timeline-svg must be well-formed SVG with what a reader needs: a time axis
in us, a legend naming every op, each block's name, the flag arrows, the
exposed communication hatched, and -- with --measured -- the measured trace
drawn under the prediction on the same axis."""
import os
import tempfile
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
MEASURED = "bench/results/2026-11-29-row_linear-measured-trace.json"
BIG = ["-D", "M=8192", "-D", "N=8192", "-D", "K=8192", "--ranks", "2"]


def tests(root, run, Fail):
    syncc = os.path.join(root, "syncc")

    def svg_of(args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.svg")
            rc, out, err = run([syncc, "examples/row_linear.syn", "--timeline-svg", path, "-o", os.path.join(d, "x")] + args)
            if rc != 0:
                raise Fail(" syncc exit %d\n%s" % (rc, err[-2000:]))
            try:
                tree = ET.parse(path)
            except ET.ParseError as e:
                raise Fail(" not well-formed XML: %s" % e)
        svg = tree.getroot()
        if svg.tag != NS + "svg" or not svg.get("width") or not svg.get("height"):
            raise Fail(" the root is not an <svg> with a size: %r" % svg.attrib)
        texts = ["".join(t.itertext()) for t in svg.iter(NS + "text")]
        return svg, texts

    def need(texts, want, what):
        for w in want:
            if not any(w in t for t in texts):
                raise Fail(" %s: no text %r among %r" % (what, w, texts[:60]))

    def predicted():
        svg, texts = svg_of(BIG)
        need(texts, ["row_linear (P = 2): PREDICTED by the cost model, 1048.4 µs; exposed communication 194.8 µs (18.6%)",
                     "time (µs)", "0", "200", "1000", "r0 compute", "r1 comm", "legend", "matmul %2", "all_reduce %3",
                     "exposed communication", "flag: raised -> waited on", "matmul%2.b0", "all_reduce%3.c3"], "predicted")
        rects = list(svg.iter(NS + "rect"))
        tips = ["".join(t.itertext()) for r in rects for t in r.iter(NS + "title")]
        if sum("(predicted)" in t for t in tips) != 16:  # 8 blocks on each of 2 ranks
            raise Fail(" every block needs a box with a tooltip: %r" % tips)
        hatched = [r for r in rects if r.get("class") == "exposed"]
        if len(hatched) != 2 or any(abs(float(r.get("width")) - 194.83 / 1048.36 * 1000) > 0.1 for r in hatched):
            raise Fail(" the exposed last chunk (194.8 us) must be hatched on each rank: %r" % [r.attrib for r in hatched])
        flags = [l for l in svg.iter(NS + "line") if l.get("class") == "flag"]
        if len(flags) != 8 or any(l.get("marker-end") != "url(#arrow)" for l in flags):
            raise Fail(" 4 flags on each of 2 ranks, drawn as arrows: %d" % len(flags))

    def serial():
        svg, texts = svg_of(["--serial", "--ranks", "4"])
        need(texts, ["row_linear (P = 4): PREDICTED", "r3 comm", "matmul%2.b0"], "serial")

    def measured():
        svg, texts = svg_of(BIG + ["--measured", MEASURED])
        need(texts, ["below, (m): MEASURED, the last call of 2026-11-29-row_linear-measured-trace.json: 1532.4 µs",
                     "MEASURED (m): the last call of the trace", "r0 compute (m)", "r1 comm (m)",
                     "chunk 0 all_reduce", "band 0 (512 tiles)", "measured compute", "measured communication"],
             "measured")
        ys = {"".join(t.itertext()): float(t.get("y")) for t in svg.iter(NS + "text")}
        if not ys["r1 comm"] < ys["r0 compute (m)"]:
            raise Fail(" the measured rows must come under the predicted ones: %r" % ys)
        tips = ["".join(t.itertext()) for t in svg.iter(NS + "title")]
        if sum("(measured)" in t for t in tips) < 20:
            raise Fail(" the measured events need boxes: %r" % tips[-30:])

    def bad_measured():
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write('{"traceEvents": [{"ph": "X", "ts": 1,')
            for path, msg in ((bad, "not a Chrome trace"), (os.path.join(d, "none.json"), "cannot read the measured trace")):
                rc, out, err = run([syncc, "examples/row_linear.syn", "--ranks", "2", "--timeline-svg",
                                    os.path.join(d, "t.svg"), "--measured", path, "-o", os.path.join(d, "x")])
                if rc != 1 or msg not in err:
                    raise Fail(" --measured %s: exit %d, want 1 and %r\n%s" % (path, rc, msg, err[-1000:]))

    return [("sched/svg predicted timeline", predicted), ("sched/svg serial plan, P = 4", serial),
            ("sched/svg measured trace under the prediction", measured),
            ("sched/svg a bad measured trace is an error", bad_measured)]
