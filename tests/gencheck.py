"""The committed lexer/parser C must be what re2c and bison make from the
committed .re/.y (CI installs both and runs this).  They are regenerated
in a scratch tree with the same relative paths, so #line and include
guards come out the same."""
import os
import shutil
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
re2c, bison = sys.argv[1], sys.argv[2]
bad = []
with tempfile.TemporaryDirectory() as d:
    for sub in ("lexer", "parser"):
        os.mkdir(os.path.join(d, sub))
    shutil.copy(root + "/lexer/lexer.re", d + "/lexer/")
    shutil.copy(root + "/parser/parser.y", d + "/parser/")
    outs = []
    if re2c:
        subprocess.run([re2c, "--no-generation-date", "--no-version", "-W", "-o", "lexer/lexer.c",
                        "lexer/lexer.re"], cwd=d, check=True)
        outs.append("lexer/lexer.c")
    if bison:
        subprocess.run([bison, "-Wall", "-Werror", "-o", "parser/parser.c", "--header=parser/parser.h",
                        "parser/parser.y"], cwd=d, check=True)
        outs += ["parser/parser.c", "parser/parser.h"]
    for f in outs:
        if open(os.path.join(d, f), "rb").read() != open(os.path.join(root, f), "rb").read():
            bad.append(f)
if bad:
    print("gen-check: out of date with their sources: " + ", ".join(bad) + " (run make and commit)")
    sys.exit(1)
print("gen-check: lexer and parser match their sources")
