"""make install / make uninstall, and the man pages, for tests/run.

install/tree      make install into a DESTDIR under a temporary directory; the
                  installed syncc, run from another directory, compiles and
                  simulates an example that `use`s the standard library and
                  finds the installed stdlib/ and profiles/ (modules and
                  profiles that exist only in the installed tree prove it);
                  make uninstall leaves nothing but files that were there before.
install/libsyncrt a C program calling every function of the installed
                  syncrt.h, compiled and linked against the installed library
                  with `pkg-config --cflags --libs syncrt` (shared) and with
                  `--static` against libsyncrt.a; never run (no GPU needed).
                  Skipped, saying so, where libsyncrt is not built.
docs/man          groff -man -ww renders every page without a warning, and
                  each page names every option its tool's --help lists.

Nothing is written into the source tree: make install only copies, and the
dirs compiled into the binaries are the build's own (DESTDIR staging), so no
object is rebuilt."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

PREFIX = "/usr/local"  # the Makefile's default: the build's compiled-in dirs stay as they are
TIMEOUT = 300


def make_env():
    """The environment for a nested make: the outer make's jobserver is not
    ours (its descriptors are closed here), its variable overrides are."""
    e = dict(os.environ)
    words = e.get("MAKEFLAGS", "").split()
    e["MAKEFLAGS"] = " ".join(w for w in words if not w.startswith("--jobserver") and not re.match(r"^-j\d*$", w))
    e.pop("MFLAGS", None)
    e["NO_COLOR"] = "1"
    return e


def sh(cmd, Fail, cwd, env=None, want=0):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env or make_env(), capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fail(" timed out: %s" % " ".join(cmd))
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if want is not None and p.returncode != want:
        raise Fail(" %s: exit %d, expected %d\n--- stdout ---\n%s\n--- stderr ---\n%s" %
                   (" ".join(cmd), p.returncode, want, out[-3000:], err[-3000:]))
    return p.returncode, out, err


def files_under(top):
    """Every file and link under top, relative to it."""
    got = set()
    for dirpath, _, files in os.walk(top):
        for f in files:
            got.add(os.path.relpath(os.path.join(dirpath, f), top))
    return got


def make_install(root, Fail, dest, target="install"):
    return sh(["make", "--no-print-directory", "-C", root, target, "DESTDIR=" + dest], Fail, root)


def rt_built(root):
    """Whether make install would install libsyncrt (runtime.mk found cuda.h
    and nccl.h): its dry run says."""
    p = subprocess.run(["make", "--no-print-directory", "-n", "-C", root, "install", "DESTDIR=/nonexistent"],
                       cwd=root, env=make_env(), capture_output=True, timeout=TIMEOUT)
    return p.returncode == 0 and "libsyncrt.so" in p.stdout.decode("utf-8", "replace")


def tests(root, run, Fail):
    def expect(cond, what, out="", err=""):
        if not cond:
            raise Fail(" %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (what, out[-3000:], err[-3000:]))

    def tree():
        with tempfile.TemporaryDirectory() as tmp:
            dest = os.path.join(tmp, "stage")
            pre = dest + PREFIX
            # files of others in the dirs install shares: uninstall must keep them
            others = ["bin/other-tool", "share/man/man1/other.1", "share/doc/other.txt"]
            for f in others:
                os.makedirs(os.path.dirname(os.path.join(pre, f)), exist_ok=True)
                with open(os.path.join(pre, f), "w") as fh:
                    fh.write("not syncc's\n")
            before = files_under(dest)
            make_install(root, Fail, dest)
            added = files_under(dest) - before
            for f in ("bin/syncc", "bin/syncrun", "share/syncc/stdlib/nn.syn", "share/syncc/profiles/sim.prof",
                      "share/syncc/profiles/h200-nvlink.prof", "share/man/man1/syncc.1", "share/man/man1/syncrun.1"):
                expect(os.path.join(PREFIX.lstrip("/"), f) in added, "make install did not install %s" % f,
                       "\n".join(sorted(added)))
            expect(all(f.startswith(PREFIX.lstrip("/") + "/") for f in added),
                   "make install wrote outside DESTDIR/PREFIX", "\n".join(sorted(added)))
            syncc = os.path.join(pre, "bin", "syncc")
            syncrun = os.path.join(pre, "bin", "syncrun")
            share = os.path.join(pre, "share", "syncc")
            work = os.path.join(tmp, "work")  # another cwd, holding only a copy of the example
            os.makedirs(work)
            shutil.copy(os.path.join(root, "examples", "ag_linear_gelu.syn"), work)
            # the example `use`s nn: found in the installed share dir
            rc, out, err = sh([syncc, "ag_linear_gelu.syn", "--ranks", "2", "--emit=ir", "-o", "-"], Fail, work)
            expect("op ag_linear_gelu" in out, "installed syncc: no IR for the example", out, err)
            rc, out, err = sh([syncrun, "--sim", "ag_linear_gelu.syn", "--ranks", "2", "--profile", "sim"], Fail, work)
            expect(" ok" in out and "MISMATCH" not in out, "installed syncrun --sim did not match the oracle", out, err)
            # a module and a profile that exist only in the installed tree
            with open(os.path.join(share, "stdlib", "zz_install_probe.syn"), "w") as fh:
                fh.write("kernel zz_install_twice(x) = x + x;\n")
            shutil.copy(os.path.join(share, "profiles", "sim.prof"), os.path.join(share, "profiles", "zz-install-probe.prof"))
            with open(os.path.join(work, "probe.syn"), "w") as fh:
                fh.write("use zz_install_probe;\nop f(x: f32[8]) -> f32[8] { return zz_install_twice(x); }\n")
            rc, out, err = sh([syncc, "probe.syn", "--emit=plan", "--profile", "zz-install-probe", "-o", "-"], Fail, work)
            expect("f" in out, "installed syncc: no plan", out, err)
            # a module found nowhere: the note lists the installed share dir, not the source tree
            with open(os.path.join(work, "missing.syn"), "w") as fh:
                fh.write("use zz_nowhere;\n")
            rc, out, err = sh([syncc, "missing.syn", "--emit=ir", "-o", "-"], Fail, work, want=1)
            expect(os.path.join(share, "stdlib") + "/" in err and os.path.join(root, "stdlib") not in err,
                   "the search path of the installed syncc", out, err)
            os.remove(os.path.join(share, "stdlib", "zz_install_probe.syn"))
            os.remove(os.path.join(share, "profiles", "zz-install-probe.prof"))
            # the installed man pages render
            if shutil.which("groff"):
                for page in ("syncc.1", "syncrun.1"):
                    rc, out, err = sh(["groff", "-man", "-ww", "-z", os.path.join(pre, "share/man/man1", page)], Fail, tmp)
                    expect(err.strip() == "", "groff warns about the installed %s" % page, out, err)
            make_install(root, Fail, dest, "uninstall")
            left = files_under(dest)
            expect(left == before, "make uninstall: left %s, removed %s" %
                   (sorted(left - before), sorted(before - left)))
            expect(not os.path.exists(share), "make uninstall left the share dir %s" % share)

    def link():
        with tempfile.TemporaryDirectory() as tmp:
            dest = os.path.join(tmp, "stage")
            pre = dest + PREFIX
            make_install(root, Fail, dest)
            pcdir = os.path.join(pre, "lib", "pkgconfig")
            expect(os.path.exists(os.path.join(pcdir, "syncrt.pc")), "syncrt.pc not installed")
            with open(os.path.join(pre, "include", "syncc", "syncrt.h")) as fh:
                api = sorted(set(re.findall(r"^[A-Za-z_][\w \*]*?\b(syn_\w+)\s*\(", fh.read(), re.M)))
            expect(len(api) > 10, "the installed syncrt.h declares only %r" % api)
            src = os.path.join(tmp, "prog.c")
            with open(src, "w") as fh:
                fh.write("#include <syncrt.h>\n#include <stdio.h>\n\ntypedef void (*Fn)(void);\n"
                         "static const Fn api[] = {\n%s\n};\n\nint\nmain(void)\n{\n"
                         "\tprintf(\"%%zu %%s\\n\", sizeof api / sizeof api[0], syn_status_name(0));\n"
                         "\treturn 0;\n}\n" % "\n".join("\t(Fn)%s," % f for f in api))
            env = make_env()
            env["PKG_CONFIG_PATH"] = pcdir
            pkg = [shutil.which("pkg-config") or "pkg-config", "--define-prefix"]  # the staged tree, not /usr/local
            rc, flags, err = sh(pkg + ["--cflags", "--libs", "syncrt"], Fail, tmp, env)
            expect("-lsyncrt" in flags and os.path.join(pre, "include", "syncc") in flags and "-lnccl" in flags
                   and "-lcuda" in flags, "pkg-config --cflags --libs syncrt", flags, err)
            cc = os.environ.get("CC", "cc")
            sh([cc, "-std=c11", "-Wall", "-Werror", "-o", os.path.join(tmp, "prog"), src] + flags.split(), Fail, tmp, env)
            # static: libsyncrt.a with Libs.private
            rc, sflags, err = sh(pkg + ["--static", "--cflags", "--libs", "syncrt"], Fail, tmp, env)
            expect("-lpthread" in sflags and "-lm" in sflags, "pkg-config --static: no Libs.private", sflags, err)
            sflags = [os.path.join(pre, "lib", "libsyncrt.a") if w == "-lsyncrt" else w for w in sflags.split()]
            sh([cc, "-std=c11", "-o", os.path.join(tmp, "prog-static"), src] + sflags, Fail, tmp, env)
            make_install(root, Fail, dest, "uninstall")
            left = files_under(dest)
            expect(not left, "make uninstall left %s" % sorted(left))

    def man():
        pages = {"syncc": "docs/man/syncc.1", "syncrun": "docs/man/syncrun.1"}
        if not shutil.which("groff"):
            raise Fail(" groff is needed to check the man pages (apt-get install groff)")
        for tool, page in sorted(pages.items()) + [("syncrun-gpu", "docs/man/syncrun-gpu.1")]:
            rc, out, err = sh(["groff", "-man", "-ww", "-z", os.path.join(root, page)], Fail, root)
            expect(err.strip() == "", "groff -man -ww warns about %s" % page, out, err)
        for tool, page in pages.items():
            rc, out, err = run([os.path.join(root, tool), "--help"])
            with open(os.path.join(root, page)) as fh:
                text = fh.read().replace("\\-", "-")
            opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b", out))
            missing = sorted(o for o in opts if o not in text)
            expect(not missing, "%s names options of `%s --help` it does not describe: %s" % (page, tool, missing))
        with open(os.path.join(root, "tools", "syncrun_gpu.c")) as fh:
            usage = fh.read().split("static const char usage[] =", 1)[1].split(";", 1)[0]
        with open(os.path.join(root, "docs/man/syncrun-gpu.1")) as fh:
            text = fh.read().replace("\\-", "-")
        missing = sorted(o for o in set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", usage)) if o not in text)
        expect(not missing, "docs/man/syncrun-gpu.1 does not describe %s" % missing)

    out = [("install/tree (make install DESTDIR, the installed syncc finds its own stdlib and profiles, "
            "make uninstall removes exactly its files)", tree),
           ("docs/man (groff -ww clean, every --help option described)", man)]
    if rt_built(root):
        out.append(("install/libsyncrt (a C program linked against the installed library through "
                     "pkg-config syncrt, shared and static)", link))
    else:
        print("SKIP install/libsyncrt: libsyncrt is not built here (no cuda.h or nccl.h under CUDA_HOME, "
              "NCCL_HOME or /usr/include), so there is no installed library to link against", flush=True)
    return out
