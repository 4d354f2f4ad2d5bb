"""`pip install ./python` from a syncc source tree: the package, plus
syncc/_tree.py naming the tree it was installed from, so the installed
package finds that tree's syncc and libsyncrt.so (python/syncc/build.py,
find_tools).  If the tree has no built syncc yet, `make` builds it first
(SYNCC_NO_MAKE=1 skips that; the package then finds syncc on PATH or
through SYNCC, or says how to get it).  pyproject.toml has the metadata."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)


def _is_syncc_tree(d):
    return os.path.isfile(os.path.join(d, "Makefile")) and os.path.isfile(os.path.join(d, "runtime", "syncrt.h"))


class BuildPy(build_py):
    """build_py, then _tree.py; `make` in the tree when its syncc is missing."""

    def run(self):
        super().run()
        tree = TREE if _is_syncc_tree(TREE) else None
        if tree and not os.access(os.path.join(tree, "syncc"), os.X_OK) and os.environ.get("SYNCC_NO_MAKE") != "1":
            if shutil.which("make") is None:
                raise SystemExit("syncc: %s has no built syncc and there is no make here: build it, "
                                 "or install with SYNCC_NO_MAKE=1 and put syncc on PATH" % tree)
            subprocess.check_call(["make", "-C", tree, "-j%d" % (os.cpu_count() or 1)])
        out = os.path.join(self.build_lib, "syncc", "_tree.py")
        with open(out, "w") as f:
            f.write('"""Written by setup.py: the syncc source tree this package was installed from."""\n')
            f.write("TREE = %r\n" % tree)


setup(cmdclass={"build_py": BuildPy})
