"""Command-line tests of syncc: exit codes, --help, --version, json
diagnostics, outputs never half-written.  Each test is a function; tests()
hands them to tests/run."""
import json
import os
import tempfile

GOOD = b"param M = 8;\nop f(x: f32[M, M] @split(0)) -> f32[M, M] @split(0) {\n    return x * 2.0;\n}\n"
BAD = b"op f(x: f32[4]) -> f32[4] {\n    return y;\n}\n"


def tests(syncc, run, Fail):
    def expect(cond, what, out="", err=""):
        if not cond:
            raise Fail(" %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (what, out[:2000], err[:2000]))

    def t_help():
        rc, out, err = run([syncc, "--help"])
        expect(rc == 0 and "usage: syncc" in out and err == "", "--help prints usage on stdout, exit 0", out, err)

    def t_version():
        rc, out, err = run([syncc, "--version"])
        expect(rc == 0 and out.startswith("syncc ") and err == "", "--version", out, err)

    def t_no_input():
        rc, out, err = run([syncc])
        expect(rc == 2 and "no input file" in err, "no input: exit 2", out, err)

    def t_bad_option():
        rc, out, err = run([syncc, "--frobnicate", "x.syn"])
        expect(rc == 2 and "unknown option" in err, "unknown option: exit 2", out, err)

    def t_bad_ranks():
        for r in ("0", "-3", "abc", "999999999999"):
            rc, out, err = run([syncc, "-", "--ranks", r], stdin=GOOD)
            expect(rc == 2 and "--ranks" in err, "bad --ranks %s: exit 2" % r, out, err)

    def t_bad_define():
        rc, out, err = run([syncc, "-", "-D", "M=eight"], stdin=GOOD)
        expect(rc == 2 and "-D M=eight" in err, "-D value that does not parse: exit 2", out, err)
        rc, out, err = run([syncc, "-", "-D", "Q=3"], stdin=GOOD)
        expect(rc == 2 and "no param 'Q'" in err, "-D of an unknown param: exit 2", out, err)
        rc, out, err = run([syncc, "-", "-D", "=3"], stdin=GOOD)
        expect(rc == 2, "-D without a name: exit 2", out, err)

    def t_define_ok():
        rc, out, err = run([syncc, "-", "-DM=16", "--ranks=4", "--emit=ir"], stdin=GOOD)
        expect(rc == 0 and "f32[16, 16] @split(0) local [4, 16]" in out, "-D M=16 overrides the param", out, err)

    def t_missing_file():
        rc, out, err = run([syncc, "/nonexistent/x.syn"])
        expect(rc == 2 and "cannot read" in err, "missing input file: exit 2", out, err)

    def t_errors_exit1():
        rc, out, err = run([syncc, "-"], stdin=BAD)
        expect(rc == 1 and "<stdin>:2:12: error: unknown name 'y'" in err and out == "", "input error: exit 1", out, err)

    def t_json():
        rc, out, err = run([syncc, "-", "--diagnostics=json", "-o", os.devnull], stdin=BAD)
        expect(rc == 1 and err == "", "json diagnostics go to stdout only", out, err)
        lines = [l for l in out.splitlines() if l]
        objs = [json.loads(l) for l in lines]
        expect(objs and objs[0]["level"] == "error" and objs[0]["line"] == 2 and objs[0]["column"] == 12
               and objs[0]["end_column"] == 13 and "unknown name" in objs[0]["message"], "json fields", out, err)

    def t_json_needs_o():
        rc, out, err = run([syncc, "-", "--diagnostics=json", "--emit=ir"], stdin=GOOD)
        expect(rc == 2, "json with --emit to stdout is refused", out, err)

    def t_no_half_output():
        with tempfile.TemporaryDirectory() as d:
            o = os.path.join(d, "out.ir")
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", o], stdin=BAD)
            expect(rc == 1 and not os.path.exists(o), "no output file when compilation fails", out, err)
            expect(not os.listdir(d), "no temporary file left behind", out, err)
            with open(o, "w") as f:
                f.write("old")
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", o], stdin=BAD)
            expect(open(o).read() == "old", "a failed compile leaves an existing output untouched", out, err)
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", o], stdin=GOOD)
            expect(rc == 0 and "op f" in open(o).read() and len(os.listdir(d)) == 1, "-o writes the IR", out, err)

    def t_codegen_outputs():
        with tempfile.TemporaryDirectory() as d:
            pre = os.path.join(d, "op")
            rc, out, err = run([syncc, "-", "-o", pre], stdin=BAD)
            expect(rc == 1 and not os.listdir(d), "a failed compile writes none of .ptx .c .h", out, err)
            rc, out, err = run([syncc, "-", "--ranks", "2", "-o", pre], stdin=GOOD)
            names = sorted(os.listdir(d))
            expect(rc == 0 and names == ["op.c", "op.h", "op.ptx"], "syncc -o PREFIX writes PREFIX.ptx .c .h", out, err)
            expect(".entry syn_f_k0" in open(pre + ".ptx").read() and "syn_f(syn_ctx *ctx" in open(pre + ".h").read(),
                   "the module has the op's kernel, the header its launcher", out, err)

    def t_output_unwritable():
        rc, out, err = run([syncc, "-", "-o", "/nonexistent/dir/out"], stdin=GOOD)
        expect(rc == 1 and "cannot write" in err, "unwritable output: exit 1", out, err)

    def t_no_color_when_piped():
        rc, out, err = run([syncc, "-"], stdin=BAD)
        expect("\x1b[" not in err, "no colour escape codes when stderr is not a terminal", out, err)

    def t_dump():
        rc, out, err = run([syncc, "-", "--emit=ir", "-d", "sema,autocomm"], stdin=GOOD)
        expect(rc == 0 and "## after sema" in err and "## after autocomm" in err, "-d prints after passes", out, err)
        rc, out, err = run([syncc, "-", "-d", "nosuch"], stdin=GOOD)
        expect(rc == 2 and "unknown pass" in err, "-d with an unknown pass: exit 2", out, err)

    def t_entry_unknown():
        rc, out, err = run([syncc, "-", "--entry", "nope"], stdin=GOOD)
        expect(rc == 2 and "no op 'nope'" in err, "--entry of a missing op: exit 2", out, err)

    def t_error_cap():
        src = b"".join(b"op g%d(x: f32[4]) -> f32[4] { return y%d; }\n" % (i, i) for i in range(40))
        rc, out, err = run([syncc, "-"], stdin=src)
        n = sum(1 for l in err.splitlines() if ": error: " in l)
        expect(rc == 1 and n == 20 and "too many errors" in err, "at most 20 errors", out, err)

    return [("cli/" + k[2:], v) for k, v in sorted(locals().items()) if k.startswith("t_")]
