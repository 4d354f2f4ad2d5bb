"""Command-line tests of syncc: exit codes, --help, --version, json
diagnostics, outputs never half-written.  Each test is a function; tests()
hands them to tests/run."""
import json
import os
import re
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

    def t_signature():
        rc, out, err = run([syncc, "-", "--ranks", "4", "--emit=signature"], stdin=GOOD)
        expect(rc == 0 and err == "", "--emit=signature exits 0 quietly", out, err)
        sig = json.loads(out)
        op = sig["ops"][0]
        expect(sig["ranks"] == 4 and op["name"] == "f" and op["ranks"] == 4 and
               op["args"] == [{"name": "x", "dtype": "f32", "shape": [8, 8], "placement": "split", "dim": 0,
                               "local": [2, 8], "type": "f32[8, 8] @split(0)"}] and
               op["results"][0]["name"] == "out0" and op["results"][0]["local"] == [2, 8],
               "--emit=signature: arguments and results with their local shapes at P=4", out, err)
        rc, out, err = run([syncc, "examples/row_linear.syn", "--ranks", "2", "-D", "M=64", "-D", "N=32",
                            "-D", "K=128", "--emit=signature"])
        op = json.loads(out)["ops"][0]
        expect(rc == 0 and [a["local"] for a in op["args"]] == [[64, 64], [64, 32]] and
               op["results"][0]["placement"] == "repl" and op["results"][0]["local"] == [64, 32],
               "--emit=signature of row_linear: x @split(1), w @split(0), a @repl result", out, err)
        rc, out, err = run([syncc, "-", "--emit=signature"], stdin=BAD)
        expect(rc == 1 and out == "" and "<stdin>:2:12: error:" in err, "--emit=signature of a bad file: exit 1", out, err)

    def t_signature_files():
        """--emit=signature names every source file read (absolute, in the
        order read) and the cost profile, so a build cache can hash them."""
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with tempfile.TemporaryDirectory(prefix="syncc-cli-") as d:
            inc = os.path.join(d, "inc")
            os.mkdir(inc)
            files = {"main.syn": "use near;\nuse far;\nuse nn;\nparam N = 64;\n"
                                 "op f(x: f32[N] @repl) -> f32[N] @repl { return twice(thrice(x)); }\n",
                     "near.syn": "kernel twice(x) = x * 2.0;\n",
                     "inc/far.syn": "kernel thrice(x) = x * 3.0;\n"}
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            rel = os.path.relpath(os.path.join(d, "main.syn"), here)  # the runner runs syncc in the root
            rc, out, err = run([syncc, rel, "-I", inc, "--emit=signature"])
            expect(rc == 0, "--emit=signature of a file with uses", out, err)
            sig = json.loads(out)
            want = [os.path.realpath(os.path.join(d, n)) for n in ("main.syn", "near.syn", "inc/far.syn")] + \
                   [os.path.realpath(os.path.join(here, "stdlib", "nn.syn"))]
            expect(sig["files"] == want and sig["source"] == rel,
                   "files: the main file, then each use (beside it, -I, stdlib) in order, absolute", out, err)
            expect(sig["profile"] == os.path.realpath(os.path.join(here, "profiles", "h200-nvlink.prof")),
                   "profile: the default one, absolute", out, err)
            rc, out, err = run([syncc, rel, "-I", inc, "--profile", "sim", "--emit=signature"])
            expect(rc == 0 and json.loads(out)["profile"].endswith("/profiles/sim.prof"), "profile: --profile sim", out, err)
        rc, out, err = run([syncc, "-", "--emit=signature"], stdin=GOOD)
        expect(rc == 0 and json.loads(out)["files"] == [], "files: standard input is not a file", out, err)

    def t_json_needs_o():
        rc, out, err = run([syncc, "-", "--diagnostics=json", "--emit=ir"], stdin=GOOD)
        expect(rc == 2 and json.loads(out)["message"] ==
               "--diagnostics=json writes to standard output; send --emit output to a file with -o",
               "json with --emit to stdout is refused", out, err)

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

    def usage_error(args, stdin, want, what):
        rc, out, err = run([syncc] + args, stdin=stdin)
        expect(rc == 2 and want in err and out == "", what + ": exit 2 with %r" % want, out, err)

    def t_usage_errors():
        usage_error(["a.syn", "b.syn"], None, "more than one input file (a.syn and b.syn)", "two inputs")
        for opt in ("-o", "--ranks", "-D", "-I", "--entry", "--emit", "--diagnostics", "-d"):
            usage_error(["-", opt], GOOD, "option '%s' needs a value" % opt, opt + " without a value")
        usage_error(["-", "--emit=bin"], GOOD, "--emit=bin: unknown stage 'bin'; choose tokens, ast, ir, signature, blocks, plan, timeline, ptx or host", "--emit")
        usage_error(["-", "--emit", "bin"], GOOD, "--emit bin: unknown stage 'bin'", "--emit VALUE")
        usage_error(["-", "--diagnostics=xml"], GOOD, "--diagnostics=xml: unknown format 'xml'; choose text or json", "--diagnostics")
        usage_error(["-", "-Dfoo"], GOOD, "-Dfoo: write -D NAME=VALUE", "-D without '='")
        usage_error(["-", "-x"], GOOD, "unknown option '-x' (see --help)", "unknown short option")
        usage_error(["-", "--auto-comm=1"], GOOD, "unknown option '--auto-comm=1'", "a value for a flag")
        usage_error(["-", "--seed", "1"], GOOD, "unknown option '--seed'", "a syncrun option")
        usage_error(["-", "--help=x"], GOOD, "unknown option '--help=x'", "--help with a value")

    def t_ranks_limits():
        rc, out, err = run([syncc, "-", "--ranks=4096", "--emit=ast"], stdin=GOOD)
        expect(rc == 0, "--ranks 4096 is the largest accepted", out, err)
        for r in ("4097", "1e3", "", " 4", "0x10", "-0"):
            usage_error(["-", "--ranks", r], GOOD, "the number of ranks must be an integer from 1 to 4096", "--ranks %r" % r)

    def t_define_values():
        src = b"param M = 8, X = 1.0, T = f32;\nop f(x: T[M]) -> T[M] { return x * X; }\n"
        for v in ("0x10", "nan", "inf", "1.", ".5", "+4", "", " 4", "4 ", "1e", "--1", "bf17", "8M"):
            usage_error(["-", "-D", "M=" + v], src, "-D M=%s: the value is not an integer, a number or a dtype" % v,
                        "-D M=%r" % v)
        for v in ("99999999999999999999", "-9223372036854775809", "1e999", "-1e400"):
            usage_error(["-", "-D", "X=" + v], src, "-D X=%s: the value is out of range" % v, "-D X=%s" % v)
        rc, out, err = run([syncc, "-", "-D", "M=-4"], stdin=src)
        expect(rc == 1 and "dim 0 has size -4; sizes must be positive" in err, "-D M=-4 parses; the size is refused", out, err)
        rc, out, err = run([syncc, "-", "-DX=-2.5e-3", "-DT=bf16", "-DM=9223372036854775807"], stdin=src)
        expect(rc == 1 and "too many elements" in err, "-D accepts signed numbers, dtypes and int64 max", out, err)
        rc, out, err = run([syncc, "-", "--emit=ir", "-D", "M=4", "-D", "M=16"], stdin=src)
        expect(rc == 0 and "f32[16]" in out, "the last -D of a name wins", out, err)

    def t_define_not_in_module():
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "m.syn"), "w") as f:
                f.write("param Q = 2;\nop g(x: T[N]) -> T[N] { return x * Q; }\n")
            with open(os.path.join(d, "main.syn"), "w") as f:
                f.write("use m;\nop f(x: f32[4]) -> f32[4] { return g(x); }\n")
            rc, out, err = run([syncc, os.path.join(d, "main.syn"), "-D", "Q=3"])
            expect(rc == 2 and "declares no param 'Q'" in err, "-D sets params of the main file only", out, err)

    def t_entry_of_kernel():
        rc, out, err = run([syncc, "-", "--entry", "k"], stdin=b"kernel k(a) = a;\n")
        expect(rc == 2 and "defines no op 'k'" in err, "--entry names an op, not a kernel", out, err)

    def t_stdin_name():
        rc, out, err = run([syncc, "-"], stdin=b"op f(x: f32[4]) -> f32[4] { return x +; }\n")
        expect(rc == 1 and err.startswith("<stdin>:1:39: error: unexpected ';', expected an expression"),
               "standard input is called <stdin> in messages", out, err)
        rc, out, err = run([syncc, "-"], stdin=b"")
        expect(rc == 0 and out == "" and err == "", "empty input: nothing to do, exit 0", out, err)

    def t_input_is_directory():
        rc, out, err = run([syncc, "tests"])
        expect(rc == 2 and "cannot read tests: Is a directory" in err, "a directory as input: exit 2", out, err)

    def t_emit_stages():
        rc, out, err = run([syncc, "-", "--emit=tokens"], stdin=GOOD)
        expect(rc == 0 and out.startswith("1:1 KEYWORD param\n1:7 IDENT M\n"), "--emit=tokens", out, err)
        rc, out, err = run([syncc, "-", "--emit", "ast"], stdin=GOOD)
        expect(rc == 0 and out.startswith("param @1:7 M\n  int @1:11 8\nop @2:1 f\n"), "--emit ast", out, err)
        rc, out, err = run([syncc, "-"], stdin=GOOD)
        expect(rc == 2 and out == "" and "code from standard input needs -o PREFIX" in err,
               "code from standard input without -o: exit 2, no file named <stdin>.*", out, err)
        with tempfile.TemporaryDirectory() as d:
            rc, out, err = run([syncc, "-", "-o", os.path.join(d, "op")], stdin=GOOD)
            made = sorted(os.listdir(d))
            expect(rc == 0 and made == ["op.c", "op.h", "op.ptx"], "code is the default output: PREFIX.ptx, .c, .h",
                   " ".join(made), err)
        rc, out, err = run([syncc, "-", "-o", "-", "--emit=ir"], stdin=GOOD)
        expect(rc == 0 and out.startswith("op f (P = 1)\n"), "-o - is standard output", out, err)

    def t_tokens_need_clean_input():
        rc, out, err = run([syncc, "-", "--emit=tokens"], stdin=b"op # f\n")
        expect(rc == 1 and out == "" and "unexpected character '#'" in err,
               "--emit=tokens of input with errors prints the errors, not the tokens", out, err)

    def t_dump_all():
        rc, out, err = run([syncc, "-", "--emit=ir", "-d", "all", "--ranks", "2"], stdin=GOOD)
        expect(rc == 0 and "## after sema" in err and "## after autocomm" in err and out.startswith("op f"),
               "-d all prints after every pass", out, err)
        rc, out, err = run([syncc, "-", "--emit=ir", "-dautocomm"], stdin=GOOD)
        expect(rc == 0 and "## after autocomm" in err and "## after sema" not in err, "-dPASS", out, err)
        rc, out, err = run([syncc, "-", "-d", "sema,nosuch"], stdin=GOOD)
        expect(rc == 2 and "-d sema,nosuch: unknown pass 'nosuch'" in err, "-d with one unknown pass", out, err)

    def t_auto_comm_flags():
        src = b"op f(a: f32[4, 4] @split(0), b: f32[4, 4] @split(0)) -> f32[4, 4] @split(0) { return a @ b; }\n"
        rc, out, err = run([syncc, "-", "--ranks", "2"], stdin=src)
        expect(rc == 1 and "has no local form" in err, "by default a placement error is an error", out, err)
        rc, out, err = run([syncc, "-", "--emit=ir", "--ranks", "2", "--auto-comm"], stdin=src)
        expect(rc == 0 and "all_gather[0] %1" in out and "as --auto-comm requires" in err, "--auto-comm inserts", out, err)
        rc, out, err = run([syncc, "-", "--ranks", "2", "--auto-comm", "--no-auto-comm"], stdin=src)
        expect(rc == 1, "the last of --auto-comm / --no-auto-comm wins", out, err)

    def t_json_many():
        src = b"param M = 4;\nparam M = 5;\nop f(x: f32[4]) -> f32[4] { return \"; }\n"
        rc, out, err = run([syncc, "-", "--diagnostics=json"], stdin=src)
        objs = [json.loads(l) for l in out.splitlines()]
        expect(rc == 1 and err == "" and objs[0]["message"] == "unexpected character '\"'" and objs[0]["file"] == "<stdin>",
               "json: quotes in messages are escaped", out, err)
        rc, out, err = run([syncc, "-", "--diagnostics=json"], stdin=src.replace(b"\\\"", b"x"))
        src2 = b"param M = 4;\nparam M = 5;\nop f(x: f32[4]) -> f32[4] { return x; }\n"
        rc, out, err = run([syncc, "-", "--diagnostics=json"], stdin=src2)
        objs = [json.loads(l) for l in out.splitlines()]
        expect(rc == 1 and err == "" and len(objs) == 2 and objs[0]["level"] == "error" and objs[1]["level"] == "note"
               and objs[1]["line"] == 1 and objs[1]["column"] == 7 and objs[0]["end_column"] == 8,
               "json: an error and its located note, each with its place", out, err)
        rc, out, err = run([syncc, "-", "--diagnostics=json", "-D", "M=x"], stdin=src2)
        objs = [json.loads(l) for l in out.splitlines()]
        expect(rc == 2 and err == "" and any(o["level"] == "error" and "file" not in o and "-D M=x" in o["message"]
                                             for o in objs), "json: command-line errors have no place", out, err)
        src3 = b"op f(a: f32[4, 4] @split(0), b: f32[4, 4] @split(0)) -> f32[4, 4] { return a @ b; }\n"
        rc, out, err = run([syncc, "-", "--diagnostics=json", "--ranks", "2"], stdin=src3)
        objs = [json.loads(l) for l in out.splitlines()]
        expect(rc == 1 and objs[1] == {"level": "note", "message": "all_gather(b, 0) would make b @repl"},
               "json: a note without a place has only level and message", out, err)

    def t_json_cap():
        src = b"".join(b"op g%d(x: f32[4]) -> f32[4] { return y%d; }\n" % (i, i) for i in range(30))
        rc, out, err = run([syncc, "-", "--diagnostics=json"], stdin=src)
        objs = [json.loads(l) for l in out.splitlines()]
        expect(rc == 1 and sum(o["level"] == "error" for o in objs) == 20 and objs[-1]["message"] == "too many errors; stopping",
               "json: the error cap too", out, err)

    def t_write_stdout_full():
        if not os.path.exists("/dev/full"):
            return
        with open("/dev/full", "wb") as full:
            import subprocess
            p = subprocess.run([syncc, "-", "--emit=ir"], input=GOOD, stdout=full, stderr=subprocess.PIPE, timeout=60)
        err = p.stderr.decode()
        expect(p.returncode == 1 and "cannot write standard output: No space left on device" in err,
               "a full disk on stdout is reported, exit 1", "", err)

    def t_colour_on_a_terminal():
        import pty
        import subprocess
        for env, want in (({}, True), ({"NO_COLOR": "1"}, False)):
            master, slave = pty.openpty()
            e = dict(os.environ)
            e.pop("NO_COLOR", None)
            e.update(env)
            p = subprocess.run([syncc, "-"], input=BAD, stdout=subprocess.PIPE, stderr=slave, env=e, timeout=60)
            os.close(slave)
            data = b""
            try:
                while True:
                    chunk = os.read(master, 65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            os.close(master)
            got = b"\x1b[" in data
            expect(p.returncode == 1 and got == want and b"unknown name 'y'" in data,
                   "colour on a terminal unless NO_COLOR is set (env %r)" % env, "", data.decode("utf-8", "replace"))

    def t_input_too_large():
        with tempfile.TemporaryDirectory() as d:
            big = os.path.join(d, "big.syn")
            with open(big, "wb") as f:
                f.write(b"// " + b"x" * (8 << 20) + b"\n")
            rc, out, err = run([syncc, big])
            expect(rc == 2 and "file is larger than the 8 MiB limit" in err, "an input over 8 MiB: exit 2", out, err)
            rc, out, err = run([syncc, "-"], stdin=open(big, "rb").read())
            expect(rc == 2 and "file is larger than the 8 MiB limit" in err, "stdin over 8 MiB: exit 2", out, err)
            with open(os.path.join(d, "main.syn"), "w") as f:
                f.write("use big;\nop f(x: f32[4]) -> f32[4] { return x; }\n")
            rc, out, err = run([syncc, os.path.join(d, "main.syn")])
            expect(rc == 1 and "main.syn:1:5: error: cannot read" in err and "8 MiB" in err,
                   "a used module over 8 MiB: an error at the use", out, err)
            ok = os.path.join(d, "ok.syn")
            with open(ok, "wb") as f:
                f.write(b"// " + b"x" * ((8 << 20) - 5) + b"\n")
            rc, out, err = run([syncc, ok, "-o", os.path.join(d, "ok")])
            expect(rc == 0, "an input of exactly 8 MiB is read", out, err)

    def t_too_many_tokens():
        body = b"let a = x;" * 262200  # 4 tokens each: just over 2^20
        src = b"op f(x: f32[4]) -> f32[4] {" + body + b" return x; }\n"
        rc, out, err = run([syncc, "-"], stdin=src)
        expect(rc == 1 and "more than 1048576 tokens in one file" in err and err.count("error:") == 1,
               "more than 2^20 tokens: one error", out, err)

    def t_many_statements_are_linear():
        import time
        body = b"let a = x + x;" * 60000
        src = b"op f(x: f32[4]) -> f32[4] {" + body + b" return a; }\n"
        t = time.time()
        rc, out, err = run([syncc, "-", "--emit=ir"], stdin=src)
        expect(rc == 0 and time.time() - t < 20, "60000 statements compile in linear time", out[:200], err)

    def t_parser_stack():
        src = b"op f(x: f32[4]) -> f32[4] { return " + b"-" * 20000 + b"x; }\n"
        rc, out, err = run([syncc, "-"], stdin=src)
        expect(rc == 1 and "expression nested more than 200 deep" in err and err.count("error:") == 1,
               "a parser stack overflow is the nesting error", out, err)

    def t_many_args():
        args = b", ".join(b"a%d: f32" % i for i in range(50000))
        src = b"op f(" + args + b", a7: f32) -> f32 { return a0; }\n"
        rc, out, err = run([syncc, "-"], stdin=src)
        expect(rc == 1 and "parameter 'a7' appears twice" in err, "50000 parameters are checked in linear time", out, err)

    def t_too_many_files():
        with tempfile.TemporaryDirectory() as d:
            n = 260
            for i in range(n):
                with open(os.path.join(d, "m%d.syn" % i), "w") as f:
                    f.write(("use m%d;\n" % (i + 1) if i + 1 < n else "") + "op g%d(x: T[N]) -> T[N] { return x; }\n" % i)
            with open(os.path.join(d, "main.syn"), "w") as f:
                f.write("use m0;\nop f(x: f32[4]) -> f32[4] { return g0(x); }\n")
            rc, out, err = run([syncc, os.path.join(d, "main.syn")])
            expect(rc == 1 and "m254.syn:1:5: error: more than 256 files reached through `use`" in err,
                   "more than 256 files: an error at the use that reaches the 257th", out, err)
            with open(os.path.join(d, "m254.syn"), "w") as f:
                f.write("op g254(x: T[N]) -> T[N] { return x; }\n")
            rc, out, err = run([syncc, os.path.join(d, "main.syn"), "-o", os.path.join(d, "main")])
            expect(rc == 0, "256 files (the main one and 255 modules) are allowed", out, err)

    def t_search_path_order():
        import shutil
        with tempfile.TemporaryDirectory() as d:
            lone = os.path.join(d, "bin", "syncc")
            os.makedirs(os.path.dirname(lone))
            shutil.copy(syncc, lone)
            main = os.path.join(d, "main.syn")
            with open(main, "w") as f:
                f.write("use nn;\nop f(x: f32[4]) -> f32[4] { return relu(x); }\n")
            rc, out, err = run([lone, main, "--emit=ir", "-I", os.path.join(d, "inc")])
            if not os.path.exists("/usr/local/share/syncc/stdlib/nn.syn"):
                want = "note: searched %s/, %s/inc/, %s/bin/stdlib/, /usr/local/share/syncc/stdlib/" % (d, d, d)
                expect(rc == 1 and want in err, "use searches: the file's dir, -I, stdlib/ beside the binary, the share dir",
                       out, err)
            os.makedirs(os.path.join(d, "bin", "stdlib"))
            shutil.copy(os.path.join(os.path.dirname(syncc), "stdlib", "nn.syn"), os.path.join(d, "bin", "stdlib"))
            rc, out, err = run([lone, main, "--emit=ir"])
            expect(rc == 0 and "= max %0, %1" in out, "stdlib/ beside the binary is found", out, err)

    def t_docs_examples_are_tests():
        import glob
        import re
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        doc = open(os.path.join(root, "docs/language.md")).read()
        tests = [open(f).read() for f in glob.glob(os.path.join(root, "tests/lang/docs/*.syn"))]
        blocks = re.findall(r"```syn\n(.*?)```", doc, re.S)
        missing = [b for b in blocks if not any(b in t for t in tests)]
        expect(blocks and not missing, "every ```syn example of docs/language.md is in a test under tests/lang/docs/:\n"
               + "\n---\n".join(missing))

    def t_include_dir_missing():
        rc, out, err = run([syncc, "-", "--emit=ir", "-I", "/nonexistent"], stdin=GOOD)
        expect(rc == 0, "an -I directory that does not exist is only searched", out, err)

    syncrun = os.path.join(os.path.dirname(syncc), "syncrun")
    ex = os.path.join(os.path.dirname(os.path.abspath(syncc)), "examples", "row_linear.syn")

    def t_gpus_malformed():
        for bad in ("", "a", "0,", ",0", "0,,1", "-1", "0x1", "1.5", "99999999999"):
            rc, out, err = run([syncrun, ex, "--gpus", bad])
            expect(rc == 2 and "--gpus" in err and "numbers separated by commas" in err,
                   "--gpus %r: a plain-words error, exit 2" % bad, out, err)

    def t_gpus_twice():
        # two ranks on one GPU need a backend NCCL is not: p2p
        rc, out, err = run([syncrun, ex, "--gpus=1,0,1"])
        expect(rc == 2 and "--gpus: GPU 1 is named twice; two ranks on one GPU need --comm-backend p2p" in err,
               "--gpus names a GPU twice without p2p", out, err)
        rc, out, err = run([syncrun, ex, "--gpus=0,0", "--comm-backend", "nccl"])
        expect(rc == 2 and "GPU 0 is named twice" in err, "--gpus names a GPU twice with nccl", out, err)

    def t_gpus_vs_ranks():
        rc, out, err = run([syncrun, ex, "--gpus", "0,1", "--ranks", "3"])
        expect(rc == 2 and "--gpus names 2 GPUs, but --ranks says 3 (one rank per GPU)" in err, "--gpus against --ranks", out, err)
        rc, out, err = run([syncrun, ex, "--ranks", "1", "--gpus", "1"])
        expect(rc != 2, "--gpus 1 with --ranks 1 is a good command line", out, err)
        rc, out, err = run([syncrun, ex, "--gpus", "0,1", "--topo", "2x1"])
        expect(rc == 2 and "cannot go with --topo" in err, "--gpus with a multi-node --topo", out, err)

    def t_gpus_vs_topo():
        for argv in (["--topo", "1x4", "--gpus", "0,1"], ["--gpus", "0,1", "--topo", "1x4"], ["--topo", "1x2", "--gpus", "3"]):
            rc, out, err = run([syncrun, ex] + argv)
            expect(rc == 2 and "but --topo 1x" in err and "(one rank per GPU)" in err,
                   "%s: the GPU count against --topo, exit 2 (not a run of another shape)" % " ".join(argv), out, err)
        rc, out, err = run([syncrun, ex, "--topo", "1x2", "--gpus", "1,0"])
        expect(rc != 2, "--gpus naming as many GPUs as --topo 1x2 is a good command line", out, err)

    def t_gpus_need_gpus():
        rc, out, err = run([syncrun, "--sim", ex, "--gpus", "0,1"])
        expect(rc == 2 and "--gpus needs GPUs; it has no meaning with --sim" in err, "--gpus with --sim", out, err)
        rc, out, err = run([syncrun, "--sim", "--calibrate", "x.prof"])
        expect(rc == 2 and "--calibrate needs GPUs" in err, "--calibrate with --sim", out, err)
        if os.path.exists("/dev/nvidia0"):
            return  # a GPU machine runs it for real (tests/gpu/gpu-check)
        rc, out, err = run([syncrun, ex, "--gpus", "0,1"])
        expect(rc == 1 and "--gpus needs GPUs" in err and "running on the simulator" not in err,
               "--gpus without GPUs: said, exit 1, no silent simulator run", out, err)

    def t_comm_backend():
        a2a = os.path.join(os.path.dirname(ex), "a2a_matmul.syn")
        for be, want in (("nccl", ["SYN_NCCL", "SYN_NCCL"]), ("ce", ["SYN_CE", "SYN_NCCL"]), ("p2p", ["SYN_P2P", "SYN_P2P"])):
            rc, out, err = run([syncc, a2a, "--ranks", "2", "--comm-backend", be, "--emit=host"])
            got = re.findall(r"syn_coll\(ctx, (SYN_[A-Z0-9]+)", out)
            expect(rc == 0 and got == want,
                   "--comm-backend %s: the all_to_all on %s, the reduce_scatter on %s (the copy engine cannot add): %s"
                   % (be, want[0], want[1], got), out, err)
        for tool in (syncc, syncrun):
            for argv in (["--comm-backend", "nvlink"], ["--comm-backend", "ce", "--comm-backend", "bogus"]):
                rc, out, err = run([tool, a2a, "--ranks", "2"] + argv)
                expect(rc == 2 and "--comm-backend" in err and "write nccl, ce or p2p" in err,
                       "%s: a bad --comm-backend, exit 2" % " ".join(argv), out, err)

    def t_plans_past_64_ranks():
        # a region lists at most 64 boxes (sched.h MAXBOX): at P = 65 a
        # chunk of an all_gather would need one per rank, so those choices
        # are no plans (a write never covers what it does not write) and the
        # rest run; an own block feeding more than 64 bands is no deadlock
        # (the simulator's race check followed only 64 successors of a block)
        ag = os.path.join(os.path.dirname(ex), "ag_gemm.syn")
        rc, out, err = run([syncrun, "--sim", ag, "--ranks", "65", "-D", "M=8320", "-D", "N=130", "-D", "K=8",
                            "--profile", "sim", "--all-plans"])
        expect(rc == 0 and "all ok" in out and "both write" not in out and "deadlock" not in out,
               "ag_gemm at P = 65: every candidate plan exact and matching the oracle", out, err)

    def t_comm_backend_rank_limit():
        # p2p runs collectives over at most 8 ranks (comm/backends.h's
        # maxranks, issue 19): asked for past it on one node it is refused,
        # by syncc and syncrun, with --ranks or with --gpus naming the ranks;
        # at 8 it runs, across nodes it leaves the collectives to nccl
        ag = os.path.join(os.path.dirname(ex), "ag_gemm.syn")
        want = "--comm-backend p2p: the p2p backend runs collectives over at most 8 ranks, not 16"
        for argv in ([syncc, ag, "--ranks", "16", "--emit=plan"], [syncrun, "--sim", ag, "--ranks", "16"],
                     [syncrun, ag, "--gpus", ",".join(["0"] * 16)]):
            rc, out, err = run(argv + ["--comm-backend", "p2p"])
            expect(rc == 2 and want in err and "use --comm-backend nccl" in err,
                   "%s --comm-backend p2p: refused, exit 2" % " ".join(argv[1:]), out, err)
        rc, out, err = run([syncrun, "--sim", ag, "--ranks", "8", "--comm-backend", "p2p", "--explain"])
        expect(rc == 0 and "FAILED" not in out and "all_gather %2: 1 chunk, p2p" in out + err,
               "--comm-backend p2p at 8 ranks: on p2p, matches the oracle", out, err)
        rc, out, err = run([syncc, ag, "--topo", "2x8", "--comm-backend", "p2p", "--emit=plan", "--explain"])
        expect(rc == 0 and "all_gather %2: 1 chunk, nccl" in out,
               "--comm-backend p2p across nodes: the all_gather stays on nccl", out, err)
        # the search never picks p2p past its limit: every candidate plan at
        # P = 32 on the toy profile (where p2p is cheapest) runs in the
        # simulator, whose p2p refuses a group past the limit as libsyncrt does
        for f in (ag, os.path.join(os.path.dirname(ex), "ulysses.syn")):
            rc, out, err = run([syncrun, "--sim", f, "--ranks", "32", "--profile", "sim", "--all-plans"])
            expect(rc == 0 and "all ok" in out and "FAILED" not in out,
                   "%s at P = 32, every candidate plan: no p2p past its limit" % os.path.basename(f), out, err)

    # Synthetic measurements: each collective exactly alpha + bytes/beta,
    # so the fit must give them back with no residual.
    def samples(base="h200-nvlink", extra=""):
        lines = ["# synthetic", "name testcal", "base " + base, "device a test machine", "sms 100", "world 2",
                 "commsms nccl 12", "commsms ce 0",
                 "matmul bf16 2048 2048 2048 50", "matmul bf16 8192 8192 8192 2199.023", "copy 536870912 200",
                 "vector 1073741824 1000", "launch 1000 2500", "launch 1000 2700", "launch 1000 2600",
                 "streamop 500 1000", "flag 3998 5997"]
        for op, alpha, beta in (("all_reduce", 10, 100), ("all_gather", 8, 200), ("reduce_scatter", 6, 150)):
            for b in (65536, 1048576, 16777216, 268435456):
                lines.append("comm nccl %s %d %.6f" % (op, b, alpha + b / (beta * 1e3)))
        lines.append("comm ce shift 1048576 20")
        return "\n".join(lines) + "\n" + extra

    def calibrate_from(text, out_name="cal.prof"):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "s.txt"), "w") as f:
            f.write(text)
        out = os.path.join(d, out_name)
        rc, o, e = run([syncrun, "--calibrate", out, "--calibrate-from-samples", os.path.join(d, "s.txt")])
        return d, out, rc, o, e

    def t_calibrate_fit_and_load():
        import re
        import shutil
        d, out, rc, o, e = calibrate_from(samples())
        try:
            expect(rc == 0 and os.path.exists(out), "--calibrate-from-samples writes the profile", o, e)
            text = open(out).read()
            flat = re.sub(r"[ \t]+", " ", text)
            base = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "profiles", "h200-nvlink.prof")).read()
            f16 = re.search(r"^matmul\s+f16\s+(\S+)", base, re.M).group(1)
            for want in ("name testcal", "sms 100 # measured", "world 2 # measured",
                         "matmul bf16 500 # measured", "matmul f16 %s # carried from h200-nvlink" % f16,
                         "hbm 2684.35 # measured", "vector 1073.74 # measured", "launch 2.6 # measured",
                         "streamop 2 # measured", "flag 1.5 # measured", "commsms nccl 12 #",
                         "inter 25 15 # carried from h200-nvlink",
                         "alpha 10 us, beta 100 GB/s, rms relative residual 0.0% over 4 sizes",
                         "alpha 8 us, beta 200 GB/s", "comm nccl all_reduce 65536 10.6554\n",
                         "# comm ce all_gather: carried from h200-nvlink",
                         "# comm ce shift: measured at 1 size\n# one size only: no fit"):
                expect(want in flat, "the profile holds %r" % want, text)
            expect(not [f for f in os.listdir(d) if ".tmp" in f], "no temporary file is left", str(os.listdir(d)))
            rc, o, e = run([syncc, "--profile", out, ex, "--ranks", "2", "--emit=plan"])
            expect(rc == 0 and "plan of row_linear" in o, "syncc --profile loads the calibrated profile", o, e)
        finally:
            shutil.rmtree(d)

    def t_calibrate_bad_samples():
        import shutil
        for extra, want, code in (("comm nccl all_reduce 100 -3\n", "s.txt:31: sizes, counts and times must be positive", 1),
                                  ("matmul i32 1 1 1 1\n", "s.txt:31: unknown float dtype", 1),
                                  ("comm nvlink shift 1 1\n", "unknown backend", 1),
                                  ("launch 1000\n", "wrong number of fields; write launch COUNT US", 1),
                                  ("frobnicate 1\n", "not a samples line", 1),
                                  ("comm nccl all_reduce 65536 3\n", "measured twice at 65536 bytes", 1)):
            d, out, rc, o, e = calibrate_from(samples(extra=extra))
            try:
                expect(rc == code and want in e and not os.path.exists(out),
                       "bad samples (%r): exit %d with %r, nothing written" % (extra, code, want), o, e)
            finally:
                shutil.rmtree(d)
        d, out, rc, o, e = calibrate_from(samples(base="no-such-profile"))
        shutil.rmtree(d)
        expect(rc == 2 and "no profile 'no-such-profile'" in e, "an unknown base profile: exit 2", o, e)
        d, out, rc, o, e = calibrate_from(samples().replace("base h200-nvlink\n", ""))
        shutil.rmtree(d)
        expect(rc == 1 and "no base profile" in e, "samples without a base: exit 1", o, e)
        d, out, rc, o, e = calibrate_from(samples(), out_name="nodir/cal.prof")
        shutil.rmtree(d)
        expect(rc == 1 and "cannot write" in e, "an unwritable profile path: exit 1", o, e)
        rc, o, e = run([syncrun, "--calibrate-from-samples", "s.txt"])
        expect(rc == 2 and "needs --calibrate PROFILE" in e, "--calibrate-from-samples alone: exit 2", o, e)

    # Numbers the parser took but the profile could not hold once reached
    # "internal error: the written profile does not load"; now each is the
    # samples file's error, at its line.
    def t_calibrate_unrepresentable():
        import shutil
        for extra, want in (("comm nccl all_gather 0.3 5\n", "whole numbers"),
                            ("comm nccl all_gather 1.2 5\ncomm nccl all_gather 1.4 6\n", "whole numbers"),
                            ("matmul f16 1e300 1e300 1e300 1\n", "below 2^53"),
                            ("matmul f16 8192 8192 8192 1e-300\n", "out of any profile's range"),
                            ("copy 1e308 1e-300\n", "below 2^53"),
                            ("copy 1 1e300\n", "out of any profile's range"),
                            ("launch 1e-300 1e300\n", "whole numbers"),
                            ("launch 1 1e-305\n", "out of any profile's range"),
                            ("comm nccl shift 64 1e-305\n", "out of any profile's range"),
                            ("sms 1e12\n", "sms must be a whole number"),
                            ("sms 2.5\n", "sms must be a whole number"),
                            ("world 4294967298\n", "world must be a whole number"),
                            ("commsms nccl 99999999999\n", "commsms must be a whole number"),
                            ("commsms nccl 7.5\n", "commsms must be a whole number"),
                            ("commsms ce -1\n", "commsms must be a whole number"),
                            ("commsms nccl 101\n", "commsms nccl 101 is more SMs than the device's 100")):
            d, out, rc, o, e = calibrate_from(samples(extra=extra))
            try:
                expect(rc == 1 and "s.txt:31: " in e and want in e and "internal error" not in e
                       and not os.path.exists(out), "samples %r: exit 1, %r at its line, nothing written" % (extra, want), o, e)
            finally:
                shutil.rmtree(d)

    # What the samples hold is what the profile holds: commsms as written
    # (not atoi's reading of 1e2), comm times below 0.01 us not printed as 0.
    def t_calibrate_written_as_given():
        import re
        import shutil
        for extra, want in (("commsms nccl 1e2\n", "commsms nccl 100 #"), ("commsms nccl 7.5e1\n", "commsms nccl 75 #"),
                            ("comm nccl all_gather 1024 0.001\n", "comm nccl all_gather 1024 0.001\n"),
                            ("comm nccl all_gather 1e6 5\n", "comm nccl all_gather 1000000 5\n")):
            d, out, rc, o, e = calibrate_from(samples(extra=extra))
            try:
                flat = re.sub(r"[ \t]+", " ", open(out).read()) if os.path.exists(out) else ""
                expect(rc == 0 and want in flat, "samples %r: the profile holds %r" % (extra, want), o + flat, e)
                rc, o, e = run([syncc, "--profile", out, ex, "--ranks", "2", "--emit=plan"])
                expect(rc == 0, "syncc --profile loads it", o, e)
            finally:
                shutil.rmtree(d)

    # --calibrate measures for minutes before it writes: a PROFILE whose
    # directory cannot take files is said first, GPUs or not, and the check
    # leaves nothing behind.
    def t_calibrate_unwritable_first():
        import shutil
        rc, o, e = run([syncrun, "--calibrate", "/nonexistent-syncc-dir/x.prof"])
        expect(rc == 1 and "cannot write /nonexistent-syncc-dir/x.prof" in e and "nothing measured" in e
               and "needs GPUs" not in e, "--calibrate into a missing directory: said before anything, exit 1", o, e)
        if os.path.exists("/dev/nvidia0"):
            return  # a good directory would calibrate for real
        d = tempfile.mkdtemp()
        try:
            rc, o, e = run([syncrun, "--calibrate", os.path.join(d, "x.prof")])
            expect(rc == 1 and "needs GPUs" in e and not os.listdir(d), "the check leaves no file behind", o, e + str(os.listdir(d)))
        finally:
            shutil.rmtree(d)
        rc, o, e = run([syncrun, "--calibrate", "x.prof", "--calibrate-from-samples", "/nonexistent/s.txt"])
        expect(rc == 2 and "cannot read samples /nonexistent/s.txt" in e, "unreadable samples: exit 2", o, e)

    # -o never turns what it names into a regular file (issue 17, item 1):
    # FIFOs, devices and descriptors are written through, a symbolic
    # link's target is written and the link stays, and an output that is
    # one of the inputs is refused.  Only files in a temporary directory
    # (and this process's own stdout) are named.
    def t_output_fifo():
        import stat
        import threading
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "fifo")
            os.mkfifo(fifo)
            got = []

            def reader():
                with open(fifo, "rb") as f:
                    got.append(f.read())
            th = threading.Thread(target=reader, daemon=True)
            th.start()
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", fifo], stdin=GOOD)
            th.join(20)
            expect(rc == 0 and got and b"op f (P = 1)" in got[0], "-o FIFO: the reader gets the IR", out, err)
            expect(stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(os.listdir(d)) == ["fifo"],
                   "-o FIFO: the FIFO is still a FIFO, no temporary left", out, err)

    def t_output_devices():
        import stat
        with tempfile.TemporaryDirectory() as d:
            null, full = os.path.join(d, "null"), os.path.join(d, "full")
            try:
                os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
                os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
                open(null, "w").close()
            except OSError:
                return  # no device nodes here (not root, or a nodev mount)
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", null], stdin=GOOD)
            expect(rc == 0 and stat.S_ISCHR(os.lstat(null).st_mode), "-o a null device: written through, still a device",
                   out, err)
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", full], stdin=GOOD)
            expect(rc == 1 and "cannot write %s: No space left on device" % full in err and
                   stat.S_ISCHR(os.lstat(full).st_mode), "-o a full device: exit 1, said, still a device", out, err)
            expect(sorted(os.listdir(d)) == ["full", "null"], "no temporary left beside the devices", out, err)

    def t_output_descriptor():
        rc, out, err = run([syncc, "-", "--emit=ir", "-o", "/proc/self/fd/1"], stdin=GOOD)
        expect(rc == 0 and out.startswith("op f (P = 1)"), "-o /proc/self/fd/1 writes to the descriptor", out, err)

    def t_output_symlink():
        with tempfile.TemporaryDirectory() as d:
            target, link, dangling = os.path.join(d, "target.ir"), os.path.join(d, "link"), os.path.join(d, "dangling")
            with open(target, "w") as f:
                f.write("old")
            os.symlink("target.ir", link)
            os.symlink("nowhere.ir", dangling)
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", link], stdin=GOOD)
            expect(rc == 0 and os.path.islink(link) and os.readlink(link) == "target.ir" and
                   open(target).read().startswith("op f (P = 1)"), "-o LINK writes the link's target; the link stays",
                   out, err)
            rc, out, err = run([syncc, "-", "--emit=ir", "-o", dangling], stdin=GOOD)
            expect(rc == 1 and "symbolic link to 'nowhere.ir'" in err and os.path.islink(dangling) and
                   not os.path.exists(os.path.join(d, "nowhere.ir")), "-o a link to nothing: refused, exit 1", out, err)
            expect(sorted(os.listdir(d)) == ["dangling", "link", "target.ir"], "no temporary left", out, err)

    def t_state_keys():
        # an op's state in its context is keyed by its name and its file's
        # kernels (codegen/host.c emit_op): one context can run an op of the
        # same name from two compiled files (a stdlib op at two sizes)
        # without the second launching from the first's tables
        src = b"use nn;\nparam M = 64, N = 1024;\nop f(x: bf16[M, N], g: bf16[N]) -> bf16[M, N] { return rmsnorm(x, g); }\n"

        def key(*defs):
            args = [syncc, "-", "--emit=host", "-o", "-"]
            for d in defs:
                args += ["-D", d]
            rc, out, err = run(args, stdin=src)
            m = re.findall(r'syn_state\(ctx, "(syncc:f#[0-9a-f]{16})"', out)
            expect(rc == 0 and len(m) == 1, "one state key of the form syncc:OP#FILE: %r" % m, out, err)
            return m[0]
        a, b = key(), key("M=128")
        expect(a == key() and a != b, "the same for the same kernels, another for another size: %s %s" % (a, b))

    def t_output_is_input():
        with tempfile.TemporaryDirectory() as d:
            main, lib = os.path.join(d, "main.syn"), os.path.join(d, "lib.syn")
            with open(lib, "wb") as f:
                f.write(b"kernel twice(x) = 2.0 * x;\n")
            with open(main, "wb") as f:
                f.write(b"use lib;\n" + GOOD)
            os.link(main, os.path.join(d, "alias"))
            os.symlink("main.syn", os.path.join(d, "ln"))
            before = open(main, "rb").read()
            for o in (main, os.path.join(d, "alias"), os.path.join(d, "ln"), lib):
                rc, out, err = run([syncc, main, "--emit=ir", "-o", o])
                expect(rc == 2 and "is the input" in err and open(main, "rb").read() == before and
                       open(lib, "rb").read().startswith(b"kernel"), "-o %s (an input): refused, exit 2" % o, out, err)
            rc, out, err = run([syncc, main, "--emit=ir", "--trace", main])
            expect(rc == 2 and "is the input" in err and open(main, "rb").read() == before, "--trace onto the input", out, err)
            src = os.path.join(d, "k.h")  # a source whose name a generated file takes
            with open(src, "wb") as f:
                f.write(GOOD)
            rc, out, err = run([syncc, src, "-o", os.path.join(d, "k")])
            expect(rc == 2 and "is the input" in err and open(src, "rb").read() == GOOD and
                   not os.path.exists(os.path.join(d, "k.c")), "-o PREFIX whose PREFIX.h is the input: refused", out, err)

    # One strict reader for every number of the command line (issue 17,
    # item 7): decimal digits only -- no sign, space, base, exponent or
    # stray unit -- and ranges checked before any product can overflow.
    def t_numbers_strict():
        bad = [("--topo", v) for v in ("4611686018427387904x4", "18446744073709551617x1", "+2x4", " 2x4", "2x+4",
                                       "0x4", "2x4x", "2x", "x4", "2X4", "4097x1", "65x64")]
        bad += [("--mem-budget", v) for v in ("0x10", " 5M", "5MB", "1e3", "inf", "nan", "-1", "+5", "1001%", "5k",
                                              "1.", ".5", "")]
        bad += [("--ranks", v) for v in ("+4", " 4", "0x4", "4 ", "1e2")]
        for opt, v in bad:
            rc, out, err = run([syncc, "-", "--emit=ir", opt, v], stdin=GOOD)
            expect(rc == 2 and opt in err, "%s %r: a command-line error, exit 2" % (opt, v), out, err)
        for opt, v in (("--seed", "0x10"), ("--seed", "+1"), ("--timeout-ms", "1e3"), ("--timeout-ms", " 5"),
                       ("--bench", "+3"), ("--gpus", "+0")):
            rc, out, err = run([syncrun, "--sim", "-", opt, v], stdin=GOOD)
            expect(rc == 2 and opt in err, "syncrun %s %r: a command-line error, exit 2" % (opt, v), out, err)
        for opt, v in (("--topo", "2x4"), ("--topo", "1x1"), ("--mem-budget", "1.5G"), ("--mem-budget", "12.5%"),
                       ("--mem-budget", "4096K"), ("--mem-budget", "0")):
            rc, out, err = run([syncc, "-", "--emit=ir", opt, v], stdin=GOOD)
            expect(rc == 0, "%s %s is a good command line" % (opt, v), out, err)

    # ptxas as a tool (issue 17, items 8 and 10): one that fails without a
    # word, or dies, is exit 1 naming it (not an internal error); one that
    # rejects the module with a message is a compiler bug (exit 3); and a
    # syncc killed while ptxas runs takes ptxas and its files with it.
    def fake_ptxas(d, body):
        path = os.path.join(d, "ptxas")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, 0o755)
        return path

    def t_ptxas_failures():
        with tempfile.TemporaryDirectory() as d:
            tmp = os.path.join(d, "tmp")
            os.mkdir(tmp)
            for body, rc_want, said in (("exit 1", 1, "failed (exit status 1) and said nothing"),
                                        ("kill -9 $$", 1, "was killed by signal 9"),
                                        ("echo 'ptxas fatal: bad module' >&2; exit 1", 3, "ptxas rejected")):
                tool = fake_ptxas(d, body)
                pre = os.path.join(d, "op")
                rc, out, err = run([syncc, "-", "-o", pre], stdin=GOOD, env={"PTXAS": tool, "TMPDIR": tmp})
                expect(rc == rc_want and said in err and (rc == 3 or tool in err) and
                       not os.path.exists(pre + ".c") and os.listdir(tmp) == [],
                       "ptxas `%s`: exit %d, said, nothing written or left" % (body, rc_want), out, err)

    def t_ptxas_interrupted():
        import signal
        import subprocess
        import time
        for sig in (signal.SIGTERM, signal.SIGINT):
            with tempfile.TemporaryDirectory() as d:
                tmp, pidfile = os.path.join(d, "tmp"), os.path.join(d, "pid")
                os.mkdir(tmp)
                tool = fake_ptxas(d, 'echo $$ > "$PIDFILE"; exec sleep 60')
                env = dict(os.environ, PTXAS=tool, TMPDIR=tmp, PIDFILE=pidfile)
                p = subprocess.Popen([syncc, "-", "-o", os.path.join(d, "op")], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
                p.stdin.write(GOOD)
                p.stdin.close()
                for _ in range(400):
                    if os.path.exists(pidfile) and open(pidfile).read().strip():
                        break
                    time.sleep(0.05)
                pid = int(open(pidfile).read())
                p.send_signal(sig)
                rc = p.wait(30)
                alive = True
                for _ in range(100):  # SIGKILL'd and reaped by syncc, or not at all
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        alive = False
                        break
                    time.sleep(0.05)
                if alive:
                    os.kill(pid, signal.SIGKILL)  # the fake ptxas this test started
                expect(rc == -sig and not alive and os.listdir(tmp) == [],
                       "%s during ptxas: syncc ends by it (%d), ptxas gone (%s), its directory removed (%s)" %
                       (sig.name, rc, not alive, os.listdir(tmp)))

    return [("cli/" + k[2:], v) for k, v in sorted(locals().items()) if k.startswith("t_")]
