"""python -m syncc --version: the package's version and the tools it found
(syncc, libsyncrt.so, syncrt.h), or what is missing and how to get it."""
import sys

from . import build, __version__
from .errors import SynccError

USAGE = "usage: python -m syncc --version | --help"


def main(argv):
    if argv in (["--help"], ["-h"]):
        print(USAGE)
        print("  --version  the package's version and the syncc, libsyncrt.so and syncrt.h it uses")
        return 0
    if argv != ["--version"]:
        print(USAGE, file=sys.stderr)
        return 2
    print("syncc (python) %s" % __version__)
    try:
        tools = build.find_tools()
        v = build.version(tools)
    except SynccError as e:
        print("python -m syncc: %s" % e, file=sys.stderr)
        return 1
    print("syncc       %s (%s)" % (tools.syncc, v))
    print("libsyncrt   %s" % (tools.libsyncrt or "not found (built only where CUDA and NCCL are; needed to call ops)"))
    print("syncrt.h    %s" % (tools.include or "not found"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
