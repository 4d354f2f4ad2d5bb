#!/usr/bin/env python3
"""Run every shell command the documentation shows and compare its output.

    python3 tests/docs/doccheck.py [-v] [--update] [FILE.md ...]
                                        (default: README.md docs/*.md)

--update rewrites the stale outputs that have no `...` line with what the
commands print now (for a doc writer; read the diff before committing), and
lists the stale excerpts (outputs with a `...` line) for their writer to
edit by hand.

The convention (docs/README-style, written down in docs/tutorial.md's end):

* A fenced block whose first line starts with `$ ` is a session: every `$ `
  line is a command (a line ending in `\\` continues it), the lines up to the
  next `$ ` line or the fence are what it prints -- standard output, then
  standard error, as a pipe `2>&1` cannot promise an order.
* The shown output must match exactly, after stripping trailing blanks and
  trailing empty lines; a line that is only `...` (indentation allowed)
  matches any number of lines.  A command shown with no output must print
  nothing.
* The exit status must be 0, unless the shown output has a line containing
  `error:`; then it must be 1 or 2 (3, an internal compiler error, never).
* An HTML comment on the line just before the fence marks the block:
    <!-- gpu -->           run only where /dev/nvidia0 and syncrun-gpu exist;
                            elsewhere its commands are counted as skipped
    <!-- skip: REASON -->  never run (a build, a benchmark); counted
    <!-- file: NAME -->    not a session: the block's text is written to NAME
                            in the work folder, for the commands after it
* Each document runs in a fresh temporary folder holding copies of
  examples/, stdlib/, profiles/ and bench/results/ and links to the built syncc and syncrun
  (so `./syncc` works), which is also first on PATH.  The commands of one
  document run in order in that folder, so a file written by one is there
  for the next; nothing is written into the source tree.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 120
FENCE = re.compile(r"^(\s*)```")
MARK = re.compile(r"^\s*<!--\s*(gpu|skip|file)\s*(?::\s*(.*?))?\s*-->\s*$")
COPIED = ("examples", "stdlib", "profiles", "bench/results")
TOOLS = ("syncc", "syncrun", "syncrun-gpu")


class DocFail(Exception):
    pass


class Block:
    def __init__(self, line, mark, arg, lines):
        self.line = line      # 1-based line of the opening fence
        self.mark = mark      # None, "gpu", "skip" or "file"
        self.arg = arg        # the skip reason or the file name
        self.lines = lines    # the text between the fences

    def commands(self):
        """(line, command, expected output lines) for each `$ ` line."""
        out = []
        i = 0
        while i < len(self.lines):
            text = self.lines[i]
            if not text.startswith("$ "):
                raise DocFail("line %d: text before the first `$ ` command: %r" % (self.line + 1 + i, text))
            at = self.line + 1 + i
            cmd = text[2:]
            while cmd.endswith("\\") and i + 1 < len(self.lines):
                i += 1
                cmd = cmd[:-1] + "\n" + self.lines[i]
            i += 1
            first = self.line + 1 + i  # the file's line of the first output line
            want = []
            while i < len(self.lines) and not self.lines[i].startswith("$ "):
                want.append(self.lines[i])
                i += 1
            out.append((at, cmd, want, first))
        return out


def blocks(text):
    """The fenced blocks of a Markdown text that are sessions or files."""
    lines = text.splitlines()
    res = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        start = i
        i += 1
        body = []
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1
        mark = MARK.match(lines[start - 1]) if start > 0 else None
        kind, arg = (mark.group(1), mark.group(2)) if mark else (None, None)
        if kind == "file":
            if not arg or "/" in arg or arg.startswith("."):
                raise DocFail("line %d: <!-- file: NAME --> needs a plain file name" % start)
            res.append(Block(start + 1, kind, arg, body))
        elif body and body[0].startswith("$ "):
            if kind == "skip" and not arg:
                raise DocFail("line %d: <!-- skip: REASON --> needs a reason" % start)
            res.append(Block(start + 1, kind, arg, body))
    return res


def norm(lines):
    lines = [l.rstrip() for l in lines]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def matches(want, got):
    """Line-by-line match where a `...` line stands for any number of lines
    (a table of which prefixes of want match which prefixes of got)."""
    reach = [True] + [False] * len(got)   # want[:0] matches got[:j] only for j = 0
    for w in want:
        if w.strip() == "...":
            nxt, seen = [], False
            for r in reach:
                seen = seen or r
                nxt.append(seen)
        else:
            nxt = [False] + [reach[j] and w == got[j] for j in range(len(got))]
        reach = nxt
    return reach[len(got)]


def first_difference(want, got):
    for k, (w, g) in enumerate(zip(want, got)):
        if w.strip() == "...":
            return "(after a `...` line)"
        if w != g:
            return "line %d:\n  shown: %r\n  got:   %r" % (k + 1, w, g)
    if len(want) > len(got):
        return "the doc shows more lines, from: %r" % want[len(got)]
    return "the command prints more lines, from: %r" % got[len(want)]


def have_gpu():
    return os.path.exists("/dev/nvidia0") and os.access(os.path.join(ROOT, "syncrun-gpu"), os.X_OK)


def workdir():
    d = tempfile.mkdtemp(prefix="syncc-doc-")
    for sub in COPIED:
        shutil.copytree(os.path.join(ROOT, sub), os.path.join(d, sub))
    for t in TOOLS:
        if os.path.exists(os.path.join(ROOT, t)):
            os.symlink(os.path.join(ROOT, t), os.path.join(d, t))
    return d


def run_cmd(cmd, cwd):
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    env["PATH"] = cwd + os.pathsep + env.get("PATH", "")
    try:
        p = subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise DocFail("timed out after %ds" % TIMEOUT)
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")


def check_doc(path, gpu=None, log=None, update=None, manual=None):
    """Run one document's sessions; returns (commands run, skipped).  With
    update (a dict), stale outputs are not failures: for one that has no
    `...` line, update[(first line, count)] = the real output, for --update;
    a stale excerpt (with `...`) is described in the list manual instead."""
    if gpu is None:
        gpu = have_gpu()
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as f:
        bl = blocks(f.read())
    ran = skipped = 0
    d = workdir()
    try:
        for b in bl:
            if b.mark == "file":
                with open(os.path.join(d, b.arg), "w", encoding="utf-8") as f:
                    f.write("\n".join(b.lines) + "\n")
                continue
            cmds = b.commands()
            if b.mark == "skip" or (b.mark == "gpu" and not gpu):
                skipped += len(cmds)
                continue
            for at, cmd, want, first in cmds:
                where = "%s:%d: `%s`" % (rel, at, cmd)
                rc, out = run_cmd(cmd, d)
                got, want = norm(out.splitlines()), norm(want)
                if update is not None and not matches(want, got):
                    if any(w.strip() == "..." for w in want):
                        # an excerpt: only its writer can choose the lines
                        # to keep; say so, and go on updating the rest
                        manual.append("%s: the excerpt shown is stale (--update rewrites only whole outputs);"
                                      " first difference at %s\n--- the command prints ---\n%s" %
                                      (where, first_difference(want, got), "\n".join(got)[-4000:]))
                        ran += 1
                        continue
                    update[(first, len(want))] = got
                    want = got  # checked below as the doc will show it
                fails = any("error:" in w for w in want)
                if "internal compiler error" in out or "Sanitizer" in out:
                    raise DocFail("%s crashed:\n%s" % (where, out[-3000:]))
                if fails and rc not in (1, 2):
                    raise DocFail("%s: the doc shows an error, but the exit status is %d\n%s" % (where, rc, out[-3000:]))
                if not fails and rc != 0:
                    raise DocFail("%s: exit status %d\n%s" % (where, rc, out[-3000:]))
                if not matches(want, got):
                    raise DocFail("%s: the output shown is stale; first difference at %s\n--- the command prints ---\n%s" %
                                  (where, first_difference(want, got), "\n".join(got)[-4000:]))
                ran += 1
                if log:
                    log("ok   %s" % where)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return ran, skipped


def documents():
    docs = sorted(os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    return [os.path.join(ROOT, "README.md")] + docs


def rewrite(path, update):
    """Replace the shown outputs by the real ones (--update; a doc writer's
    tool: read the diff before committing it)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for (first, n), got in sorted(update.items(), reverse=True):
        indent = re.match(r"\s*", lines[first - 2]).group(0)
        lines[first - 1:first - 1 + n] = [indent + g if g else g for g in got]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv):
    verbose = "-v" in argv
    upd = "--update" in argv
    files = [os.path.abspath(a) for a in argv if a not in ("-v", "--update")] or documents()
    failed = total = skipped = 0
    for path in files:
        try:
            update = {} if upd else None
            manual = []
            r, s = check_doc(path, log=print if verbose else None, update=update, manual=manual)
            total += r
            skipped += s
            if update:
                rewrite(path, update)
                print("updated %d output(s) in %s" % (len(update), os.path.relpath(path, ROOT)))
            if manual:
                failed += 1
                total -= len(manual)
                for m in manual:
                    print("FAIL %s" % m)
        except DocFail as e:
            failed += 1
            print("FAIL %s" % e)
    print("%d commands matched their docs, %d skipped (GPU-only without a GPU, or marked skip), %d documents failed" %
          (total, skipped, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
