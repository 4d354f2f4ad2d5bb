"""The tables of collectives and comm backends (comm/colls.h,
comm/backends.h) against what is still written by hand (docs/internals.md
lists it):

tables/collectives  each collective has its rule b_<name> in ir/rules.c and
                    is in the OP list of docs/profiles.md, in the table's
                    order (the language reference and the editors' word
                    lists are held to the table by tests/docs/langref.py and
                    tests/editors/suite.py)
tables/backends     each backend has rt_<name>_new in runtime/rt_<name>.c,
                    built by runtime/runtime.mk, and the --comm-backend lists
                    of syncc, syncrun and syncrun-gpu (their usage texts, the
                    man pages, docs/cli.md) and the commsms row of
                    docs/profiles.md name exactly the table's backends
tables/docs         docs/internals.md has its two sections, and every file it
                    names exists"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ctables  # noqa: E402  (tests/ctables.py)


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def tests(root, run, Fail):
    def collectives():
        rows, bad = ctables.collectives(root), []
        if len(rows) < 5:
            raise Fail(" only %d rows read from comm/colls.h: has its layout changed?" % len(rows))
        rules = read(root, "ir/rules.c")
        for c in rows:
            if not re.search(r"^b_%s\(Sema \*s," % c["name"], rules, re.M):
                bad.append("ir/rules.c has no rule b_%s for the collective %s" % (c["name"], c["name"]))
        m = re.search(r"one call of OP \(([^)]*)\)", read(root, "docs/profiles.md"))
        listed = [w.strip() for w in m.group(1).split(",")] if m else []
        if listed != [c["name"] for c in rows]:
            bad.append("docs/profiles.md lists the collectives %s, comm/colls.h has %s" %
                       (listed, [c["name"] for c in rows]))
        if bad:
            raise Fail("\n  " + "\n  ".join(bad))

    def backends():
        rows, bad = ctables.backends(root), []
        names = [b["name"] for b in rows]
        if len(rows) < 2:
            raise Fail(" only %d rows read from comm/backends.h: has its layout changed?" % len(rows))
        mk = read(root, "runtime/runtime.mk")
        for n in names:
            src = "runtime/rt_%s.c" % n
            if not os.path.exists(os.path.join(root, src)) or not re.search(r"^rt_%s_new\(syn_ctx \*c\)" % n,
                                                                           read(root, src), re.M):
                bad.append("%s does not define rt_%s_new (comm/backends.h's constructor)" % (src, n))
            if src not in mk:
                bad.append("runtime/runtime.mk does not build %s" % src)
        lists = []
        for src in ("tools/syncc.c", "tools/syncrun.c", "tools/syncrun_gpu.c"):
            for m in re.finditer(r"--comm-backend ([\w|]+)", read(root, src)):
                lists.append((src, m.group(1).split("|")))
        for m in re.finditer(r"`--comm-backend ([\w\\|]+)`", read(root, "docs/cli.md")):
            lists.append(("docs/cli.md", m.group(1).replace("\\", "").split("|")))
        for page in ("syncc.1", "syncrun.1", "syncrun-gpu.1"):
            for m in re.finditer(r'\\-\\-comm\\-backend "? ?((?:\w+"? \| )*\w+)', read(root, "docs/man/" + page)):
                lists.append(("docs/man/" + page, [w.strip('" ') for w in m.group(1).split("|")]))
        if len(lists) < 7:
            bad.append("found only %d --comm-backend lists (usage texts, docs/cli.md, man pages)" % len(lists))
        for src, got in lists:
            if got != names:
                bad.append("%s: --comm-backend %s, comm/backends.h has %s" % (src, "|".join(got), "|".join(names)))
        row = re.search(r"^\| `commsms BACKEND N` \|(.*)$", read(root, "docs/profiles.md"), re.M)
        for n in names:
            if not row or not re.search(r"\b%s:" % n, row.group(1)):
                bad.append("docs/profiles.md's commsms row does not say what it is for %s" % n)
        if bad:
            raise Fail("\n  " + "\n  ".join(bad))

    def docs():
        text = read(root, "docs/internals.md")
        bad = [h for h in ("## Adding a collective", "## Adding a backend") if h not in text]
        for path in sorted(set(re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.(?:c|h|md|mk|py|1|prof|json|vim))`", text))):
            if "rt_name" not in path and not os.path.exists(os.path.join(root, path)):  # rt_name.c: the new one
                bad.append("docs/internals.md names %s, which does not exist" % path)
        if bad:
            raise Fail(" " + "; ".join(bad))

    return [("tables/collectives (comm/colls.h: rules, docs/profiles.md)", collectives),
            ("tables/backends (comm/backends.h: constructors, --comm-backend lists, docs)", backends),
            ("tables/docs (docs/internals.md: its sections, the files it names)", docs)]
