"""The editor grammars (editors/) against the language, for tests/run.

editors/words     every keyword and dtype of lexer/lexer.re, placement and
                  predefined name of ir/sema.c, reduction of ir/type.c,
                  builtin of ir/rules.c and collective of comm/colls.h (the
                  table of collectives) is in the TextMate grammar and the Vim
                  syntax file, in the right list, and the grammars name no
                  word the language lacks.  The lists are read from the C
                  sources, so a new keyword or builtin fails this test until
                  the grammars learn it.
editors/textmate  every regex of syn.tmLanguage.json compiles with Python's re
                  (the subset Oniguruma shares); the grammar, run by a small
                  TextMate tokenizer (first match wins, begin/end regions carry
                  over lines), scopes every token `syncc --emit=tokens` prints
                  for tests/**/*.syn, examples/*.syn and stdlib/*.syn:
                  keywords a keyword scope, dtypes storage.type, numbers
                  constant.numeric, identifiers no keyword, type, number or
                  comment scope, and every other non-blank byte (the comments
                  the lexer skipped) a comment scope.
editors/vim       the same checks for editors/vim, run by vim itself (headless,
                  synstack() at every byte) over examples/, stdlib/ and
                  tests/lang/lex/ (vim is slow at this), where vim is
                  installed; also: *.syn gets filetype syn.
editors/vim-read  the same checks over every file, with the syntax file's
                  syn keyword/match/region lines read into a matcher with
                  Vim's priorities (this one runs where vim is absent too).
editors/vscode    package.json and language-configuration.json agree with
                  the grammar and the lexer's comment markers."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ctables  # noqa: E402  (tests/ctables.py)

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


# ---- the language's words, from the C sources ----

def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def block(text, start):
    """The text of the C initializer that follows `start`, up to its '};'."""
    i = text.index(start)
    return text[i:text.index("};", i)]


def language(root):
    lex = block(read(root, "lexer/lexer.re"), "keywords[] = {")
    pairs = re.findall(r'\{"(%s)", TK_(\w+)\}' % IDENT, lex)
    # the builtins ir/rules.c writes out; the collectives' rows come from comm/colls.h
    builtins = re.findall(r'\{"(%s)", -?\d+, [^,]+, \w+, OP_(\w+),' % IDENT,
                          block(read(root, "ir/rules.c"), "static const Builtin builtins[] = {"))
    red = re.search(r"pl_rednames\[\d*\]\s*=\s*\{([^}]*)\}", read(root, "ir/type.c")).group(1)
    sema = read(root, "ir/sema.c")
    predef = set(re.findall(r'\bs\.\w+_name = sym_cstr\("(%s)"\)' % IDENT, sema))  # sema_unit's predefined names
    L = {
        "keyword": {w for w, t in pairs if t != "DTYPE"},
        "dtype": {w for w, t in pairs if t == "DTYPE"},
        "placement": set(re.findall(r'strcmp\(name, "(%s)"\)' % IDENT, sema)),
        "reduction": set(re.findall(r'"(%s)"' % IDENT, red)),
        "collective": {c["name"] for c in ctables.collectives(root)},
        "builtin": {w for w, op in builtins},
    }
    L["predefined"] = predef - L["reduction"]
    return L


def check_lists(L, Fail):
    # the extraction itself must have found something, or the test means nothing
    for k, least in (("keyword", 8), ("dtype", 4), ("placement", 3), ("reduction", 3), ("collective", 5),
                     ("builtin", 15), ("predefined", 1)):
        if len(L[k]) < least:
            raise Fail(" only %d %s names read from the C sources (%s): has their layout changed?" %
                       (len(L[k]), k, sorted(L[k])))


def alternations(rx):
    """Words a regex lists: (a|b|c), \\%(a\\|b\\), \\b(word)\\b."""
    words = set()
    for g in re.findall(r"\((?:\?:)?(%s(?:\|%s)+)\)" % (IDENT, IDENT), rx):
        words |= set(g.split("|"))
    for g in re.findall(r"\\%%\((%s(?:\\\|%s)+)\\\)" % (IDENT, IDENT), rx):
        words |= set(g.split("\\|"))
    words |= set(re.findall(r"\\b\((%s)\)\\b" % IDENT, rx))
    return words


# ---- TextMate ----

class TextMate:
    """A small TextMate tokenizer: at each position the pattern matching
    earliest wins (the first listed on a tie; a region's end before its
    patterns), begin/end regions carry over lines, scopes nest."""

    def __init__(self, grammar):
        self.g = grammar
        self.repo = grammar.get("repository", {})
        self.cache = {}

    def rx(self, s):
        if s not in self.cache:
            self.cache[s] = re.compile(s)
        return self.cache[s]

    def flat(self, patterns):
        out = []
        for p in patterns:
            if "include" in p:
                r = self.repo[p["include"][1:]]
                out += [r] if ("match" in r or "begin" in r) else self.flat(r["patterns"])
            elif "match" in p or "begin" in p:
                out.append(p)
            else:
                out += self.flat(p.get("patterns", []))
        return out

    @staticmethod
    def paint(sc, lo, hi, name):
        if name:
            for i in range(lo, hi):
                sc[i].append(name)

    def captures(self, sc, m, caps):
        for k, v in (caps or {}).items():
            g = int(k)
            if m.start(g) >= 0:
                self.paint(sc, m.start(g), m.end(g), v.get("name"))

    def run(self, lines):
        """Scopes of every byte: out[line][col] is a list of scope names."""
        top = self.flat(self.g["patterns"])
        stack = []  # open begin/end rules
        result = []
        for line in lines:
            sc = [[] for _ in line]
            pos = 0
            while pos < len(line):
                inner = stack[-1] if stack else None
                cands = ([("end", self.rx(inner["end"]))] if inner else []) + \
                        [(p, self.rx(p.get("match", p.get("begin")))) for p in
                         (self.flat(inner.get("patterns", [])) if inner else top)]
                best = None
                for kind, r in cands:
                    m = r.search(line, pos)
                    if m and m.end() > m.start() and (best is None or m.start() < best[1].start()):
                        best = (kind, m)
                base = [r.get("name") for r in stack]
                if best is None:
                    for n in base:
                        self.paint(sc, pos, len(line), n)
                    break
                kind, m = best
                for n in base:
                    self.paint(sc, pos, m.end(), n)
                if kind == "end":
                    self.captures(sc, m, inner.get("endCaptures") or inner.get("captures"))
                    stack.pop()
                elif "match" in kind:
                    self.paint(sc, m.start(), m.end(), kind.get("name"))
                    self.captures(sc, m, kind.get("captures"))
                else:
                    self.paint(sc, m.start(), m.end(), kind.get("name"))
                    self.captures(sc, m, kind.get("beginCaptures") or kind.get("captures"))
                    stack.append(kind)
                pos = m.end()
            result.append(sc)
        return result


def tm_regexes(g):
    out = []

    def walk(x):
        if isinstance(x, dict):
            for k in ("match", "begin", "end"):
                if k in x:
                    out.append(x[k])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(g)
    return out


# Classes of scopes (TextMate) and groups (Vim) the checks speak of.
def tm_class(names):
    c = set()
    for n in names:
        if n.startswith("keyword.control") or n.startswith("keyword.other"):
            c.add("keyword")
        if n.startswith("keyword."):
            c.add("anykeyword")
        if n.startswith("storage.type"):
            c.add("type")
        if n.startswith("constant.numeric"):
            c.add("number")
        if n.startswith("comment."):
            c.add("comment")
    return c


VIM_CLASS = {"synStatement": {"keyword", "anykeyword"}, "synKeyword": {"keyword", "anykeyword"},
             "synOperator": {"anykeyword"}, "synType": {"type"}, "synNumber": {"number"},
             "synFloat": {"number"}, "synComment": {"comment"}, "synLineComment": {"comment"}}


def vim_class(names):
    c = set()
    for n in names:
        c |= VIM_CLASS.get(n, set())
    return c


# ---- the lexer's tokens ----

def syn_files(root):
    out = []
    for top in ("tests", "examples", "stdlib"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            out += [os.path.relpath(os.path.join(dirpath, f), root) for f in files if f.endswith(".syn")]
    return sorted(out)


TOK = re.compile(r"^(\d+):(\d+) (KEYWORD|IDENT|DTYPE|INT|FLOAT|PUNCT|ERROR) (.*)$")


def tokens(root, run, rel):
    """(line, col, kind, text) of every token, or None where the file does
    not parse (--emit=tokens prints nothing then)."""
    rc, out, err = run([os.path.join(root, "syncc"), rel, "--emit=tokens"])
    if rc != 0:
        return None
    toks = []
    for ln in out.split("\n"):
        if ln:
            m = TOK.match(ln)
            if not m:
                raise ValueError("%s: unexpected --emit=tokens line %r" % (rel, ln))
            toks.append((int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)))
    return toks


def load_lines(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        return f.read().decode("latin-1").split("\n")  # one char a byte, as the lexer's columns count


def check_file(rel, lines, toks, classes, Fail, who):
    """classes(line0, col0) -> the set of classes at that byte."""
    covered = set()
    bad = []
    for (ln, col, kind, text) in toks:
        n = len(text.encode("latin-1", "replace"))
        for i in range(col - 1, col - 1 + n):
            covered.add((ln - 1, i))
        if kind == "ERROR":
            continue
        cs = [classes(ln - 1, i) for i in range(col - 1, col - 1 + n)]
        want = {"KEYWORD": "keyword", "DTYPE": "type", "INT": "number", "FLOAT": "number"}.get(kind)
        if want and not all(want in c for c in cs):
            bad.append("%d:%d %s %r: no %s scope" % (ln, col, kind, text, want))
        if kind == "IDENT" and any(c & {"anykeyword", "type", "number"} for c in cs):
            bad.append("%d:%d IDENT %r has a keyword, type or number scope" % (ln, col, text))
        if any("comment" in c for c in cs):
            bad.append("%d:%d %s %r is inside a comment scope" % (ln, col, kind, text))
    if not any(t[2] == "ERROR" for t in toks):
        # every non-blank byte the lexer did not turn into a token is a comment
        for li, line in enumerate(lines):
            for ci, ch in enumerate(line):
                if ch not in " \t\r\f\v" and (li, ci) not in covered and "comment" not in classes(li, ci):
                    bad.append("%d:%d %r: outside every token but not in a comment scope" % (li + 1, ci + 1, ch))
                    break
    if bad:
        raise Fail(" %s: %s: %d tokens scoped wrongly:\n  %s" % (who, rel, len(bad), "\n  ".join(bad[:12])))


_tokens_cache = {}
_tokens_lock = threading.Lock()


def all_tokens(root, run, Fail):
    """Every file's tokens, read once for all the tests of this suite."""
    with _tokens_lock:
        if root not in _tokens_cache:
            _tokens_cache[root] = read_all_tokens(root, run, Fail)
        return _tokens_cache[root]


def read_all_tokens(root, run, Fail):
    got, skipped = {}, []
    for rel in syn_files(root):
        t = tokens(root, run, rel)
        if t is None:
            skipped.append(rel)
        else:
            got[rel] = t
    if len(got) < 200 or len(got) < 3 * len(skipped):
        raise Fail(" only %d files gave tokens (%d did not parse): too few to test the grammars on" %
                   (len(got), len(skipped)))
    return got


# ---- Vim ----

def vim_items(text):
    """The syn keyword/match/region lines: (kind, group, contained, fields)."""
    items = []
    for line in text.split("\n"):
        m = re.match(r"^syn\s+(keyword|match|region)\s+(\w+)\s+(.*)$", line.strip())
        if not m:
            continue
        kind, group, rest = m.groups()
        contained = bool(re.search(r"(^|\s)contained(\s|$)", rest))
        f = {"contains": set()}
        if kind == "keyword":
            f["words"] = [w for w in rest.split() if w != "contained"]
        elif kind == "match":
            f["rx"] = re.search(r'"((?:[^"\\]|\\.)*)"', rest).group(1)
        else:
            f["start"] = re.search(r'start="((?:[^"\\]|\\.)*)"', rest).group(1)
            f["end"] = re.search(r'end="((?:[^"\\]|\\.)*)"', rest).group(1)
            mg = re.search(r"matchgroup=(\w+)", rest)
            f["matchgroup"] = mg.group(1) if mg else None
        c = re.search(r"contains=(\S+)", rest)
        if c:
            f["contains"] = set(c.group(1).split(","))
        items.append((kind, group, contained, f))
    return items


def vim2py(rx):
    """Vim's magic regexes, the subset editors/vim uses, in Python's syntax.
    Returns (regex, group): the item's text is that group ('\\@<=' becomes
    a consumed prefix group, '\\ze' a lookahead)."""
    out, i, group = "", 0, 0
    simple = {"<": r"\b", ">": r"\b", "(": "(", ")": ")", "|": "|", "+": "+", "=": "?", "h": "[A-Za-z_]",
              "d": r"\d", "s": r"\s", "w": r"\w", ".": r"\.", "*": r"\*", "/": "/"}
    while i < len(rx):
        ch = rx[i]
        if ch != "\\":
            out += {"(": r"\(", ")": r"\)", "|": r"\|", "+": r"\+", "?": r"\?", "{": r"\{"}.get(ch, ch)
            i += 1
            continue
        nxt = rx[i + 1]
        if rx.startswith("\\%(", i):
            out += "(?:"
            i += 3
        elif rx.startswith("\\ze", i):
            return "%s(?=%s)" % (out, vim2py(rx[i + 3:])[0]), group
        elif rx.startswith("\\@<=", i):
            out = "(?:%s)(" % out
            group = 1
            i += 4
            rest, _ = vim2py(rx[i:])
            return out + rest + ")", group
        elif nxt in simple:
            out += simple[nxt]
            i += 2
        else:
            raise ValueError("vim regex %r: \\%s not understood by the test" % (rx, nxt))
    return out, group


class VimMatcher:
    """Vim's syntax priorities over the items: the earliest start wins; at
    one start a keyword beats a match or region, and a later-defined match
    or region an earlier one; inside a region its end is tried first."""

    def __init__(self, items):
        self.items = []
        for kind, group, contained, f in items:
            if kind == "keyword":
                if group == "synTodo":
                    continue
                rx = r"\b(?:%s)\b" % "|".join(f["words"])
                self.items.append(dict(kind=kind, group=group, contained=contained, rx=re.compile(rx), g=0))
            elif kind == "match":
                rx, g = vim2py(f["rx"])
                self.items.append(dict(kind=kind, group=group, contained=contained, rx=re.compile(rx), g=g))
            else:
                self.items.append(dict(kind=kind, group=group, contained=contained, rx=re.compile(vim2py(f["start"])[0]),
                                       end=re.compile(vim2py(f["end"])[0]), g=0, mg=f["matchgroup"],
                                       contains=f["contains"]))

    def run(self, lines):
        out = []
        region = None
        for line in lines:
            sc = [[] for _ in line]
            pos = 0
            while pos < len(line):
                cands = [it for it in self.items if (it["group"] in region["contains"] if region else not it["contained"])]
                best = None
                for order, it in enumerate(cands):
                    m = it["rx"].search(line, pos)
                    if not m or m.end() == m.start():
                        continue
                    key = (m.start(it["g"]), 0 if it["kind"] == "keyword" else 1, -order)
                    if best is None or key < best[0]:
                        best = (key, it, m)
                if region:
                    e = region["end"].search(line, pos)
                    if e and (best is None or e.start() <= best[2].start(best[1]["g"])):
                        for i in range(pos, e.start()):
                            sc[i].append(region["group"])
                        for i in range(e.start(), e.end()):
                            sc[i].append(region["mg"] or region["group"])
                        pos, region = e.end(), None
                        continue
                if best is None:
                    if region:
                        for i in range(pos, len(line)):
                            sc[i].append(region["group"])
                    break
                _, it, m = best
                lo, hi = m.start(it["g"]), m.end(it["g"])
                if region:
                    for i in range(pos, hi):
                        sc[i].append(region["group"])
                for i in range(lo, hi):
                    sc[i].append(it["mg"] if it["kind"] == "region" and it["mg"] else it["group"])
                if it["kind"] == "region":
                    region = it
                pos = m.end()
            out.append(sc)
        return out


VIM_SCRIPT = r"""
set nocompatible
execute 'set runtimepath^=' . fnameescape($SYN_ROOT . '/editors/vim')
filetype on
syntax on
let s:out = []
for s:q in readfile($SYN_QUERY)
  if s:q =~# '^FILE '
    execute 'silent edit! ' . fnameescape(s:q[5:])
    call add(s:out, 'FT ' . &filetype)
  else
    let s:lc = split(s:q)
    call add(s:out, join(map(synstack(str2nr(s:lc[0]), str2nr(s:lc[1])), 'synIDattr(v:val, "name")'), ','))
  endif
endfor
call writefile(s:out, $SYN_OUT)
qall!
"""


def vim_scopes(root, files, Fail):
    """Runs vim headless over files; returns {rel: scopes[line][col]}."""
    with tempfile.TemporaryDirectory() as d:
        q, o, s = (os.path.join(d, n) for n in ("query", "out", "drive.vim"))
        with open(s, "w") as f:
            f.write(VIM_SCRIPT)
        shapes = {}
        with open(q, "w", encoding="latin-1") as f:
            for rel in files:
                lines = load_lines(root, rel)
                shapes[rel] = lines
                f.write("FILE %s\n" % os.path.join(root, rel))
                for li, line in enumerate(lines):
                    for ci in range(len(line)):
                        f.write("%d %d\n" % (li + 1, ci + 1))
        env = dict(os.environ, SYN_ROOT=root, SYN_QUERY=q, SYN_OUT=o)
        try:
            p = subprocess.run(["vim", "-Es", "-N", "-u", "NONE", "-i", "NONE", "--cmd", "set encoding=latin1 fileencodings=",
                                "-c", "source " + s], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise Fail(" vim timed out")
        if not os.path.exists(o):
            raise Fail(" vim wrote no answers (exit %d): %s%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
        with open(o, encoding="latin-1") as f:
            ans = f.read().split("\n")
    res, k = {}, 0
    for rel in files:
        ft = ans[k]
        k += 1
        if ft != "FT syn":
            raise Fail(" vim: %s got %r, not filetype syn (editors/vim/ftdetect/syn.vim)" % (rel, ft))
        sc = []
        for line in shapes[rel]:
            row = []
            for _ in line:
                row.append([n for n in ans[k].split(",") if n])
                k += 1
            sc.append(row)
        res[rel] = sc
    return res


def tests(root, run, Fail):
    tm_path = os.path.join(root, "editors/vscode/syntaxes/syn.tmLanguage.json")
    vim_path = os.path.join(root, "editors/vim/syntax/syn.vim")

    def grammar():
        with open(tm_path) as f:
            return json.load(f)

    def t_words():
        L = language(root)
        check_lists(L, Fail)
        g = grammar()
        repo = g["repository"]
        errs = []

        def words_of(rule):
            return set().union(*[alternations(r) for r in tm_regexes(rule)]) if tm_regexes(rule) else set()
        tm = {"keyword": words_of(repo["keywords"]), "dtype": words_of(repo["dtypes"]),
              "placement": words_of(repo["placements"]), "reduction": words_of(repo["reductions"]),
              "collective": words_of(repo["collectives"]), "builtin": words_of(repo["builtins"]),
              "predefined": words_of(repo["predefined"])}
        for k in L:
            if tm[k] != L[k]:
                errs.append("TextMate %s: missing %s, not in the language %s" %
                            (k, sorted(L[k] - tm[k]), sorted(tm[k] - L[k])))
        every = set().union(*L.values())
        extra = set().union(*[alternations(r) for r in tm_regexes(g)]) - every
        if extra:
            errs.append("TextMate names words the language lacks: %s" % sorted(extra))
        with open(vim_path) as f:
            items = vim_items(f.read())
        vim = {}
        for kind, group, contained, fl in items:
            ws = set(fl.get("words", [])) | alternations(fl.get("rx", "")) | alternations(fl.get("start", ""))
            if kind == "region" and fl.get("matchgroup") == "synKeyword":
                ws |= set(re.findall(r"\\<(%s)\\>" % IDENT, fl["start"]))
                vim.setdefault("synKeyword", set()).update(ws)
            elif group == "synFunction":
                vim.setdefault("synKeyword", set()).update(ws)  # the op/kernel before a declared name
            else:
                vim.setdefault(group, set()).update(ws)
        groups = {"keyword": ("synStatement", "synKeyword"), "dtype": ("synType",), "placement": ("synPlacement",),
                  "reduction": ("synReduction",), "collective": ("synCollective",), "builtin": ("synBuiltin",),
                  "predefined": ("synPredefined",)}
        for k, gs in groups.items():
            have = set().union(*[vim.get(x, set()) for x in gs])
            if have != L[k]:
                errs.append("Vim %s: missing %s, not in the language %s" % (k, sorted(L[k] - have), sorted(have - L[k])))
        extra = set().union(*[v for k, v in vim.items() if k != "synTodo"]) - every
        if extra:
            errs.append("Vim names words the language lacks: %s" % sorted(extra))
        if errs:
            raise Fail(" " + "\n  ".join(errs))

    def t_textmate():
        g = grammar()
        for r in tm_regexes(g):
            try:
                re.compile(r)
            except re.error as e:
                raise Fail(" the TextMate regex %r does not compile with Python's re: %s" % (r, e))
        tm = TextMate(g)
        for rel, toks in sorted(all_tokens(root, run, Fail).items()):
            lines = load_lines(root, rel)
            sc = tm.run(lines)
            check_file(rel, lines, toks, lambda li, ci: tm_class(sc[li][ci]), Fail, "TextMate")

    def check_vim(scopes_of, only=None):
        for rel, toks in sorted(all_tokens(root, run, Fail).items()):
            if only is not None and rel not in only:
                continue
            lines = load_lines(root, rel)
            sc = scopes_of(rel, lines)
            check_file(rel, lines, toks, lambda li, ci: vim_class(sc[li][ci]), Fail, "Vim")

    def t_vim_read():
        with open(vim_path) as f:
            vm = VimMatcher(vim_items(f.read()))
        check_vim(lambda rel, lines: vm.run(lines))

    def t_vim():
        # vim answers a few thousand synstack() calls a second: a few files,
        # chosen to hold every kind of token, comment and region
        toks = all_tokens(root, run, Fail)
        few = sorted(rel for rel in toks if rel.startswith(("examples/", "stdlib/", "tests/lang/lex/")))
        res = vim_scopes(root, few, Fail)
        check_vim(lambda rel, lines: res[rel], few)

    def t_vscode():
        base = os.path.join(root, "editors/vscode")
        with open(os.path.join(base, "package.json")) as f:
            pkg = json.load(f)
        with open(os.path.join(base, "language-configuration.json")) as f:
            conf = json.load(f)
        g = grammar()
        lang = pkg["contributes"]["languages"][0]
        gram = pkg["contributes"]["grammars"][0]
        checks = [(lang["extensions"] == [".syn"], "the language's extensions"),
                  (gram["language"] == lang["id"], "the grammar's language id"),
                  (gram["scopeName"] == g["scopeName"], "the scope name"),
                  (os.path.normpath(os.path.join(base, gram["path"])) == os.path.normpath(tm_path), "the grammar's path"),
                  (os.path.exists(os.path.normpath(os.path.join(base, lang["configuration"]))), "the configuration's path"),
                  (conf["comments"] == {"lineComment": "//", "blockComment": ["/*", "*/"]}, "the comment markers")]
        lexer = read(root, "lexer/lexer.re")
        checks.append(('"//"' in lexer and '"/" "*"' in lexer and '"*" "/"' in lexer, "the lexer's comment markers"))
        bad = [what for ok, what in checks if not ok]
        if bad:
            raise Fail(" editors/vscode: wrong %s" % ", ".join(bad))

    out = [("editors/words (keywords, dtypes, placements, builtins of lexer.re and ir/ in both grammars)", t_words),
           ("editors/textmate (every token of every .syn file scoped as the lexer reads it)", t_textmate),
           ("editors/vim-read (the Vim syntax file's items, matched with Vim's priorities)", t_vim_read),
           ("editors/vscode (package.json, language-configuration.json)", t_vscode)]
    if shutil.which("vim"):
        out.append(("editors/vim (vim -Es, synstack() at every byte of examples/, stdlib/, tests/lang/lex/)", t_vim))
    else:
        print("SKIP editors/vim: vim is not installed; editors/vim-read checks the syntax file without it", flush=True)
    return out
