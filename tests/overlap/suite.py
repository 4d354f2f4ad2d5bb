"""syncc.torch.overlap (python/syncc/overlap.py, torch.py) on CPU: each
case of tests/overlap/cases.py, which runs in two processes of its own
(world size 2 on torch's fake process group, world size 1 on gloo, and
one with no process group), one run per world shared by its cases.  Without torch the cases are not
listed and a SKIP line says so: they neither pass nor fail."""
import importlib.util
import json
import os
import subprocess
import sys
import threading


# cases a torch older than a version cannot run: (world, case, version, why)
OLDER = [(1, "w1_dtensor_no_collective", (2, 5), "its DTensor on a 1-rank CPU mesh fails inside torch.compile"),
         (2, "fused_rmsnorm", (2, 8), "it has no aten._fused_rms_norm")]


def tests(root, run, Fail):
    if importlib.util.find_spec("torch") is None:
        print("SKIP overlap/*: torch is not installed for %s, so the rewrite pass is not tested here "
              "(pip install torch)" % sys.executable, flush=True)
        return []
    script = os.path.join(root, "tests", "overlap", "cases.py")
    lock, results = threading.Lock(), {}

    def results_for(world):
        with lock:
            if world not in results:
                env = dict(os.environ, SYNCC_LOGS="overlap", PYTHONPATH=os.path.join(root, "python"))
                try:
                    p = subprocess.run([sys.executable, script, str(world)], capture_output=True, timeout=600,
                                       env=env, cwd=root)
                    out, err, rc = p.stdout.decode(), p.stderr.decode("utf-8", "replace"), p.returncode
                except subprocess.TimeoutExpired:
                    out, err, rc = "", "timed out after 600 s", -1
                got = {}
                for line in out.splitlines():
                    try:
                        d = json.loads(line)
                        got[d["case"]] = d
                    except (ValueError, KeyError):
                        pass
                results[world] = (got, err, rc)
            return results[world]

    def case(world, name):
        def fn():
            got, err, rc = results_for(world)
            d = got.get(name)
            if d is None:
                raise Fail(" case %s did not report (exit %d):\n%s" % (name, rc, err[-3000:]))
            if not d["ok"]:
                raise Fail(" " + d["why"])
            if name == "ar_unproven" and "[syncc.overlap] kept in torch add:" not in err:
                raise Fail(" SYNCC_LOGS=overlap printed no '[syncc.overlap] ...' lines on stderr:\n" + err[-2000:])
        return fn

    sys.path.insert(0, os.path.join(root, "tests", "overlap"))
    names = {}
    with open(script) as f:
        text = f.read()
    # the case lists, read from the script (it imports torch: the suite does not)
    for world, key in ((2, "2: ["), (1, "1: ["), (0, "0: [")):
        block = text.split("CASES = {", 1)[1]
        part = block.split(key, 1)[1].split("]", 1)[0]
        names[world] = [w.strip()[2:] for w in part.replace("\n", " ").split(",") if w.strip()]
    out = []
    try:
        from importlib.metadata import version
        have = version("torch")
        v = tuple(int(x) for x in have.split("+")[0].split(".")[:2])
    except Exception:
        have, v = "?", (99, 0)
    for world, name, need, why in OLDER:
        if v < need:
            names[world].remove(name)
            print("SKIP overlap/%s: torch %s is older than %d.%d (%s)" % (name.replace("_", "-"), have, need[0], need[1],
                                                                          why), flush=True)
    for world in (2, 1, 0):
        for n in names[world]:
            doc = "world %d" % world if world else "no process group"
            out.append(("overlap/%s (%s)" % (n.replace("_", "-"), doc), case(world, n)))
    return out
