#!/usr/bin/env python3
"""Holds the shape of the code over its #include lines (docs/architecture.md).

Fails (exit 1, one line per finding) on:
  - a cycle between folders (a folder is the directory of a file: `core/cursor`,
    `actors/queue`, `actors`);
  - a forbidden edge: a folder including a project folder its layer may not
    use, or a library (CAF, LMDB, Asio) its layer may not see;
  - the front doors' reach: anything `protocol/` includes, followed through
    every include, reaching the actor layer or CAF (the gateway's header is
    the only door into the core);
  - a file of the actor layer over MAX_ACTOR_LINES lines, unless it is listed
    in OVER_LIMIT with a ceiling it may not grow past (the list shrinks to
    nothing as the shells are cut down; a listed file under the limit must be
    taken off it).

  - a Markdown file naming a path outside the repository (`../shared/x`):
    a clone has nothing beside it;

  - a folder README that is not true (README_FOLDERS: the checked folders,
    fuzz/ and bench/). A folder with source files (.hpp .cpp .h, at any
    depth) and no README.md is a finding. In a README, outside fenced code
    blocks, each `backticked` span is a path when it is made only of letters,
    digits and `_ . - / *`, does not start with `-` (a flag), `/` (a URL
    path such as `/metrics/prometheus`) or `../` (outside the repo), and
    either
      (a) its last part has an extension of DOC_EXTS, or is `name.*`; a span
          `x.hpp/.cpp` is the two paths `x.hpp` and `x.cpp`; or
      (b) it has a `/` and its first part exists beside the README or at the
          repo root (`core/queue/options`, `tests/sim/`, `io/*`); or
      (c) it is `stem.ext` with no `/` and some `stem.*` file is beside the
          README (`serial.hpx` in storage/, where serial.hpp is);
    except a library header (`caf/fwd.hpp`: first part in LIBRARY_ROOTS and
    no such folder here) and a build tree's path (first part `build` or
    `build-*`). So `store_view`, `expected<T>`, `storage::ec`, `--flag`,
    `SPOOL_*`, `pop.max*`, URLs and commands with spaces are not paths.
    A path must exist relative to the README's folder, else to the repo
    root; one with `*` is a glob and must match something; one under (b)
    without an extension may also be a module's stem (`core/queue/options`
    stands for `core/queue/options.*`). Then every source file under the
    folder must be one the README's paths name: exactly, through a glob
    (`io/*`, `http/connection.*`) or through a stem. A folder named
    (`cursor/`) names none of its files;
  - a Catch2 test name (TEST_CASE, SCENARIO, TEMPLATE_TEST_CASE and their
    _METHOD forms, in tests/**/*.cpp; adjacent string literals joined) that
    ctest cannot run as its own test through catch_discover_tests
    (Catch2 2.13's CatchAddTests.cmake): one with `;` (the listing is split
    into a CMake list there), an unclosed `[` (CMake's list keeps the next
    names with it), `\\`, `"` or `*` (read by Catch's test spec), one that
    starts with `~` or `exclude:` (a negation), or that starts or ends with
    whitespace.

Tests and benchmarks may include anything and are not checked.
Usage: scripts/check_structure.py [repo root]
"""

import glob
import os
import re
import sys

CHECKED = ["vocab", "wire", "auth", "tls", "cipher", "storage", "config", "cluster", "peer", "core",
           "node", "gateway", "actors", "protocol", "client", "cli", "server"]

# Which project folders each layer may include (by top folder).
ALLOWED = {
    "vocab": {"vocab"},
    "wire": {"vocab", "wire"},
    # Tokens, keys and roles: pure, over OpenSSL (docs/security.md).
    "auth": {"vocab", "auth"},
    # TLS as a byte transform over OpenSSL (docs/security.md, "TLS").
    "tls": {"vocab", "tls"},
    # Encryption at rest: payload envelopes over OpenSSL (docs/security.md).
    "cipher": {"vocab", "cipher"},
    "storage": {"vocab", "cipher", "storage"},
    "config": {"vocab", "config"},
    # Replication's pure state machines: nothing but their own types.
    "cluster": {"cluster"},
    # The peer link's frames and handshake, over the replication cores.
    "peer": {"vocab", "wire", "tls", "cluster", "peer"},
    "core": {"vocab", "storage", "config", "cluster", "core"},
    "node": {"vocab", "node"},
    "actors": {"vocab", "cipher", "storage", "config", "core", "node",
               "actors"},
    "gateway": {"vocab", "cipher", "storage", "config", "core", "node",
                "actors", "gateway"},
    "protocol": {"vocab", "wire", "auth", "tls", "node", "gateway",
                 "protocol", "config"},
    "client": {"vocab", "wire", "tls", "node", "client"},
    "cli": {"vocab", "wire", "tls", "node", "client", "cli"},
    "server": set(CHECKED),
}

# Libraries a layer may not include (by the include's leading path).
FORBIDDEN_LIBS = {
    "vocab": ["caf/", "lmdb.h", "asio"],
    "wire": ["caf/", "lmdb.h", "asio"],
    "auth": ["caf/", "lmdb.h", "asio"],
    "tls": ["caf/", "lmdb.h", "asio"],
    "cipher": ["caf/", "lmdb.h", "asio"],
    "storage": ["caf/", "asio"],
    "config": ["caf/", "lmdb.h", "asio"],
    "cluster": ["caf/", "lmdb.h", "asio"],
    "peer": ["caf/", "lmdb.h"],
    "core": ["caf/", "asio"],
    "node": ["caf/", "lmdb.h", "asio"],
    "actors": ["asio"],
    "protocol": ["caf/", "lmdb.h"],
    "client": ["caf/", "lmdb.h"],
    "cli": ["caf/", "lmdb.h"],
}

# The gateway's implementation holds CAF; its header may not.
DOOR_HEADERS = ["gateway/gateway.hpp"]

MAX_ACTOR_LINES = 400
# Actor-layer files still over the limit, with the most lines they may have.
OVER_LIMIT = {
    # The typed actor handles, a doc line per handler: one file by design
    # (issue 35 excepts it from the ceiling).
    "actors/interfaces.hpp": 472,
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def scan(root):
    """file -> (project includes, library includes), for the checked folders."""
    files = {}
    for top in CHECKED:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if not n.endswith((".hpp", ".cpp", ".h")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, n), root)
                proj, libs = [], []
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for line in f:
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(2)
                        # A project path counts in either spelling.
                        if target.split("/")[0] in CHECKED:
                            proj.append(target)
                        else:
                            libs.append(target)
                files[path] = (proj, libs)
    return files


def top(path):
    return path.split("/")[0]


def folder_cycles(files):
    """Strongly connected components of the folder graph with more than one
    folder (Tarjan), each with the file edges that make it."""
    edges, why = {}, {}
    for path, (proj, _) in files.items():
        a = os.path.dirname(path)
        for inc in proj:
            b = os.path.dirname(inc)
            if a != b:
                edges.setdefault(a, set()).add(b)
                why.setdefault((a, b), []).append(f"{path} -> {inc}")
    index, low, stack, on, comps = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    out = []
    for comp in comps:
        inside = set(comp)
        detail = [e for (a, b), es in sorted(why.items())
                  if a in inside and b in inside for e in es]
        out.append(f"cycle between folders {', '.join(comp)}: "
                   + "; ".join(detail))
    return out


def forbidden_edges(files):
    out = []
    for path, (proj, libs) in sorted(files.items()):
        layer = top(path)
        for inc in proj:
            if top(inc) not in ALLOWED[layer]:
                out.append(f"forbidden edge {layer} -> {top(inc)}: "
                           f"{path} includes {inc}")
        for lib in libs:
            for bad in FORBIDDEN_LIBS.get(layer, []):
                if lib.startswith(bad):
                    out.append(f"forbidden library in {layer}: "
                               f"{path} includes <{lib}>")
    return out


def door_reach(files):
    """Follows every include of protocol/ and of the door headers."""
    out = []
    starts = [p for p in files if top(p) == "protocol"]
    starts += [p for p in DOOR_HEADERS if p in files]
    if not starts:
        print("check_structure: note: no front door yet (protocol/, "
              + ", ".join(DOOR_HEADERS) + "): nothing to follow")
    for start in sorted(starts):
        seen, todo = set(), [(start, [start])]
        while todo:
            path, chain = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            proj, libs = files.get(path, ([], []))
            if top(path) in ("actors", "core", "storage"):
                out.append(f"front door reaches {top(path)}: "
                           + " -> ".join(chain))
                continue
            for lib in libs:
                if lib.startswith("caf/"):
                    out.append("front door reaches CAF: "
                               + " -> ".join(chain + [f"<{lib}>"]))
            for inc in proj:
                todo.append((inc, chain + [inc]))
    return out


def sizes(root, files):
    out = []
    for path in sorted(files):
        if top(path) != "actors":
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            n = sum(1 for _ in f)
        ceiling = OVER_LIMIT.get(path)
        if ceiling is None and n > MAX_ACTOR_LINES:
            out.append(f"{path}: {n} lines, over {MAX_ACTOR_LINES}")
        elif ceiling is not None and n > ceiling:
            out.append(f"{path}: {n} lines, grew past its ceiling {ceiling}")
        elif ceiling is not None and n <= MAX_ACTOR_LINES:
            out.append(f"{path}: {n} lines, under {MAX_ACTOR_LINES}: "
                       "take it off OVER_LIMIT")
    for path in sorted(OVER_LIMIT):
        if path not in files:
            out.append(f"{path}: listed in OVER_LIMIT but gone")
    return out


# --- Folder READMEs -------------------------------------------------------

README_FOLDERS = CHECKED + ["fuzz", "bench"]
SOURCE_EXTS = (".hpp", ".cpp", ".h")
DOC_EXTS = {".hpp", ".cpp", ".h", ".c", ".cc", ".py", ".sh", ".md", ".toml",
            ".cmake", ".txt", ".json", ".yml", ".yaml"}
# Include roots of libraries: `caf/fwd.hpp` in a README is CAF's header.
# (msgpack-c's `msgpack/...` is left out: protocol/msgpack/ is ours.)
LIBRARY_ROOTS = {"caf", "asio", "boost", "rapidjson", "simdjson", "spdlog",
                 "CLI", "nlohmann", "catch2", "openssl", "date", "mimalloc"}

PATH_SPAN = re.compile(r"[A-Za-z0-9_./*-]+")
ALTERNATIVES = re.compile(r"(.+?)(\.[A-Za-z0-9]+(?:/\.[A-Za-z0-9]+)+)")
FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.M | re.S)
SPAN = re.compile(r"`([^`]+)`")


def readme_spans(text):
    """The backticked spans of a README, fenced code blocks left out."""
    return SPAN.findall(FENCE.sub("", text))


def path_forms(span, exists_here, stem_beside):
    """The paths a span names (see the docstring), or None if it is no path.
    exists_here(name) says whether a file or folder of that name is beside
    the README or at the repo root; stem_beside(stem) whether a file
    `stem.*` is beside the README."""
    s = span
    if not PATH_SPAN.fullmatch(s) or s.startswith(("-", "/", "../")):
        return None
    if s.startswith("./"):
        s = s[2:]
    first = s.split("/")[0]
    if "/" in s and (first == "build" or first.startswith("build-")):
        return None
    m = ALTERNATIVES.fullmatch(s)
    forms = ([m.group(1) + e for e in m.group(2).split("/")] if m else [s])
    last = forms[0].rstrip("/").split("/")[-1]
    if os.path.splitext(last)[1] in DOC_EXTS or last.endswith(".*"):
        if "/" in s and first in LIBRARY_ROOTS and not exists_here(first):
            return None
        return forms
    if "/" in s and exists_here(first):
        return forms
    stem, ext = os.path.splitext(s)
    if "/" not in s and "*" not in s and stem and ext and stem_beside(stem):
        return forms
    return None


def expand(base, form):
    """The existing paths (files or folders) a form names under base."""
    path = os.path.join(base, form.rstrip("/"))
    if "*" in form:
        pattern = os.path.join(glob.escape(base), form.rstrip("/"))
        return sorted(glob.glob(pattern))
    if os.path.exists(path):
        return [path]
    if "/" in form and not os.path.splitext(form)[1]:
        # A module's stem: `core/queue/options` for its .hpp and .cpp.
        return sorted(glob.glob(glob.escape(path) + ".*"))
    return []


def source_files(root, folder):
    out = []
    for dirpath, dirs, names in os.walk(os.path.join(root, folder)):
        dirs.sort()
        for n in sorted(names):
            if n.endswith(SOURCE_EXTS):
                out.append(os.path.relpath(os.path.join(dirpath, n), root))
    return out


def readmes(root):
    out = []
    for folder in README_FOLDERS:
        here = os.path.join(root, folder)
        sources = source_files(root, folder)
        readme = os.path.join(here, "README.md")
        if not os.path.isfile(readme):
            if sources:
                out.append(f"{folder}/ has source files but no README.md")
            continue
        name = f"{folder}/README.md"
        with open(readme, encoding="utf-8") as f:
            text = f.read()

        def exists_here(first):
            return (os.path.exists(os.path.join(here, first))
                    or os.path.exists(os.path.join(root, first)))

        def stem_beside(stem):
            return any(os.path.isfile(p) for p in
                       glob.glob(os.path.join(glob.escape(here),
                                              glob.escape(stem) + ".*")))

        named = set()
        for span in readme_spans(text):
            for form in path_forms(span, exists_here, stem_beside) or []:
                hits = expand(here, form) or expand(root, form)
                if not hits:
                    what = "matches nothing" if "*" in form else \
                        "does not exist"
                    out.append(f"{name} names {form}, which {what}")
                for h in hits:
                    if os.path.isfile(h):
                        named.add(os.path.relpath(h, root))
        for path in sources:
            if path not in named:
                out.append(f"{name} does not name {path}")
    return out


# --- Test names -----------------------------------------------------------

# Catch2's test macros, with how many arguments come before the name.
TEST_MACROS = {"TEST_CASE": 0, "SCENARIO": 0, "TEMPLATE_TEST_CASE": 0,
               "TEMPLATE_PRODUCT_TEST_CASE": 0, "TEMPLATE_LIST_TEST_CASE": 0,
               "TEST_CASE_METHOD": 1, "SCENARIO_METHOD": 1,
               "TEMPLATE_TEST_CASE_METHOD": 1,
               "TEMPLATE_PRODUCT_TEST_CASE_METHOD": 1,
               "TEMPLATE_LIST_TEST_CASE_METHOD": 1}
ESCAPES = {'"': '"', "\\": "\\", "'": "'", "n": "\n", "t": "\t", "r": "\r",
           "?": "?", "0": "\0"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMBER = re.compile(r"[0-9][A-Za-z0-9_.']*|\.[0-9][A-Za-z0-9_.']*")
STRING_PREFIXES = {"L", "u", "U", "u8"}


def cxx_tokens(text):
    """(kind, value, line) of a C++ file: "id" identifiers, "str" string
    literals (value decoded: simple escapes only, raw strings whole), "p"
    single punctuation. Comments and char literals are skipped."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif IDENT.match(text, i):
            m = IDENT.match(text, i)
            word, j = m.group(), m.end()
            if j < n and text[j] == '"' and word.endswith("R") \
                    and word[:-1] in STRING_PREFIXES | {""}:
                close = text.find("(", j)
                delim = ")" + text[j + 1:close] + '"'
                end = text.find(delim, close)
                end = n if end < 0 else end
                yield "str", text[close + 1:end], line
                line += text.count("\n", i, end)
                i = end + len(delim)
            elif j < n and text[j] in "\"'" and word in STRING_PREFIXES:
                i = j  # the literal itself comes next
            else:
                yield "id", word, line
                i = j
        elif NUMBER.match(text, i):
            i = NUMBER.match(text, i).end()
        elif c in "\"'":
            j, out = i + 1, []
            while j < n and text[j] != c and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n:
                    e = text[j + 1]
                    out.append(ESCAPES.get(e, "\\" + e))
                    j += 2
                else:
                    out.append(text[j])
                    j += 1
            if c == '"':
                yield "str", "".join(out), line
            i = j + 1
        else:
            yield "p", c, line
            i += 1


def test_names(text):
    """(line, name) of each Catch2 test case in a C++ file."""
    toks = list(cxx_tokens(text))
    for k, (kind, value, line) in enumerate(toks):
        if kind != "id" or value not in TEST_MACROS:
            continue
        if k + 1 >= len(toks) or toks[k + 1][:2] != ("p", "("):
            continue
        j, skip, depth = k + 2, TEST_MACROS[value], 0
        while skip and j < len(toks):
            t = toks[j]
            if t[0] == "p" and t[1] in "([{<":
                depth += 1
            elif t[0] == "p" and t[1] in ")]}>":
                depth -= 1
            elif t[:2] == ("p", ",") and depth == 0:
                skip -= 1
            j += 1
        parts = []
        while j < len(toks) and toks[j][0] == "str":
            parts.append(toks[j][1])
            j += 1
        if not parts:
            continue
        name = "".join(parts)
        if value.startswith("SCENARIO"):
            name = "Scenario: " + name
        yield line, name


def name_problems(name):
    """Why ctest cannot run a test of this name by itself (empty: it can)."""
    out = []
    if ";" in name:
        out.append("has ';' (ctest splits it and runs nothing)")
    depth = 0  # CMake's list does not split inside [ ]: it nests them
    for c in name:
        if c == "[":
            depth += 1
        elif c == "]" and depth:
            depth -= 1
    if depth:
        out.append("has an unclosed '[' (CMake's list joins the next "
                   "test names to it)")
    if "\\" in name:
        out.append("has '\\' (Catch's test spec reads it as an escape: "
                   "ctest runs nothing)")
    if '"' in name:
        out.append("has '\"' (Catch's test spec reads it as a quote: "
                   "ctest runs nothing)")
    if "*" in name:
        out.append("has '*' (a wildcard in Catch's test spec: ctest runs "
                   "other tests with it)")
    if name.startswith(("~", "exclude:")):
        out.append("starts with a negation ('~' or 'exclude:'): ctest runs "
                   "every other test")
    if name[:1].isspace() or name[-1:].isspace():
        out.append("starts or ends with whitespace (ctest cannot name it "
                   "to Catch)")
    return out


def test_name_findings(root):
    """The findings, and how many test names were read."""
    out, seen = [], 0
    tests = os.path.join(root, "tests")
    for dirpath, dirs, names in os.walk(tests):
        dirs.sort()
        for n in sorted(names):
            if not n.endswith(".cpp"):
                continue
            full = os.path.join(dirpath, n)
            path = os.path.relpath(full, root)
            with open(full, encoding="utf-8") as f:
                text = f.read()
            for line, name in test_names(text):
                seen += 1
                for why in name_problems(name):
                    out.append(f'{path}:{line}: test name {why}: "{name}"')
    return out, seen


OUTSIDE = re.compile(r"(?<![\w./])\.\./[\w./-]+")


def outside_paths(root):
    """Every Markdown file of the repository (not build trees, not hidden
    folders) names only paths inside it: a `../x` is a finding unless it
    names something that exists inside the repository, read from the
    file's folder or from the root (the two ways the docs write paths).
    A clone has nothing beside it."""
    findings = []
    real_root = os.path.realpath(root)
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith(".") and not d.startswith("build"))
        for name in sorted(names):
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in OUTSIDE.finditer(text):
                named = m.group(0).rstrip(".")  # a sentence's full stop
                inside = [
                    os.path.realpath(os.path.join(base, named))
                    for base in (folder, root)]
                if not any((p == real_root
                            or p.startswith(real_root + os.sep))
                           and os.path.exists(p) for p in inside):
                    findings.append(f"{rel} names {named}, outside the "
                                    "repository")
    return findings


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    files = scan(root)
    names, tests = test_name_findings(root)
    findings = (folder_cycles(files) + forbidden_edges(files)
                + door_reach(files) + sizes(root, files) + readmes(root)
                + names + outside_paths(root))
    docs = sum(os.path.isfile(os.path.join(root, f, "README.md"))
               for f in README_FOLDERS)
    for f in findings:
        print(f)
    over = sum(1 for p in OVER_LIMIT if p in files)
    print(f"check_structure: {len(files)} files, {docs} folder READMEs, "
          f"{tests} test names, {len(findings)} findings, "
          f"{over} actor files still over {MAX_ACTOR_LINES} lines")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
