#!/usr/bin/env python3
"""The structure check fails on what it exists to catch: run over small
trees, each with one defect, it must exit 1 naming it; over a clean tree, 0.
A folder with source files needs a README.md naming them: `documented`
gives a tree one per folder, so that each tree has only its own defect."""

import os
import shutil
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                     "scripts", "check_structure.py")


def tree(files):
    root = tempfile.mkdtemp(prefix="structure-")
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    return root


def run(files):
    root = tree(files)
    try:
        r = subprocess.run([sys.executable, CHECK, root],
                           capture_output=True, text=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return r.returncode, r.stdout


def expect(name, files, code, text=None):
    got, out = run(files)
    ok = got == code and (text is None or text in out)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ":\n" + out))
    return ok


# The actor files the check's OVER_LIMIT names must exist in a tree it
# passes (over the limit, within their ceilings).
import importlib.util
spec = importlib.util.spec_from_file_location("check_structure", CHECK)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)
ACTORS = {p: "\n" * (check.MAX_ACTOR_LINES + 1)
          for p in check.OVER_LIMIT}
# ... and the README of their folder names them.
for folder in sorted({os.path.dirname(p) for p in check.OVER_LIMIT}):
    ACTORS[folder + "/README.md"] = " ".join(
        f"`{os.path.basename(p)}`" for p in check.OVER_LIMIT
        if os.path.dirname(p) == folder) + "\n"


def documented(files):
    """files, with a README.md in each folder the check reads READMEs of
    that has source files, naming every file under it."""
    out = dict(files)
    for folder in check.README_FOLDERS:
        inside = sorted(p[len(folder) + 1:] for p in files
                        if p.startswith(folder + "/")
                        and p.endswith(check.SOURCE_EXTS))
        readme = folder + "/README.md"
        if inside and (readme not in files
                       or files[readme] == ACTORS.get(readme)):
            out[folder + "/README.md"] = "".join(
                f"- `{p}`\n" for p in inside)
    return out


# A README's paths, and what it may say that is no path.
NOT_PATHS = ("`store_view`, `expected<T>`, `storage::ec`, `--flag`, "
             "`https://example.org/a.md`, `caf/fwd.hpp`, "
             "`/metrics/prometheus`, `SPOOL_*`, `pop.max*`, `messages.total`, "
             "`retention.intervalSeconds`\n"
             "```sh\nbuild/x --in missing.hpp\n```\n")

results = [
    expect("a clean tree passes", documented(dict(ACTORS, **{
        "vocab/a.hpp": "#include <string>\n",
        "core/x/b.hpp": '#include "vocab/a.hpp"\n'})), 0),
    expect("a cycle between folders fails", documented(dict(ACTORS, **{
        "core/x/a.hpp": '#include "core/y/b.hpp"\n',
        "core/y/b.hpp": '#include "core/x/a.hpp"\n'})), 1,
        "cycle between folders core/x, core/y"),
    expect("storage including the actor layer fails",
           documented(dict(ACTORS, **{
               "storage/a.hpp": '#include "actors/interfaces.hpp"\n'})), 1,
           "forbidden edge storage -> actors"),
    expect("an angle-bracket project include counts too",
           documented(dict(ACTORS, **{
               "vocab/a.hpp": "#include <core/x/b.hpp>\n",
               "core/x/b.hpp": ""})), 1, "forbidden edge vocab -> core"),
    expect("a core including CAF fails", documented(dict(ACTORS, **{
        "core/x/a.hpp": "#include <caf/actor.hpp>\n"})), 1,
        "forbidden library in core"),
    expect("the gateway's header reaching CAF fails",
           documented(dict(ACTORS, **{
               "gateway/gateway.hpp": '#include "node/api.hpp"\n',
               "node/api.hpp": '#include "vocab/a.hpp"\n',
               "vocab/a.hpp": "#include <caf/fwd.hpp>\n"})), 1,
           "front door reaches CAF"),
    expect("an actor file over 400 lines fails", documented(dict(ACTORS, **{
        "actors/x/big.cpp": "\n" * 401})), 1, "over 400"),

    # Docs name nothing outside the repository.
    expect("a doc naming a path outside the repository fails",
           documented(dict(ACTORS, **{
               "docs/http.md": "The routes (`../shared/spec/api.md`).\n"})),
           1, "docs/http.md names ../shared/spec/api.md, outside the "
              "repository"),
    expect("a doc naming a path up and back inside passes",
           documented(dict(ACTORS, **{
               "docs/x.md": "See [the README](../README.md), or "
                             "../README.md.\n",
               "README.md": "See `docs/x.md`.\n"})), 0),

    # Folder READMEs.
    expect("a folder with source files and no README fails", dict(ACTORS, **{
        "vocab/a.hpp": ""}), 1, "vocab/ has source files but no README.md"),
    expect("a README naming a missing file fails", dict(ACTORS, **{
        "storage/serial.hpp": "",
        "storage/README.md": "`serial.hpp` and `serial.hpx`\n"}), 1,
        "storage/README.md names serial.hpx, which does not exist"),
    expect("a README naming x.hpp/.cpp needs both", dict(ACTORS, **{
        "storage/a.hpp": "",
        "storage/README.md": "`a.hpp/.cpp`\n"}), 1,
        "storage/README.md names a.cpp, which does not exist"),
    expect("a README path under a folder of its own must exist",
           dict(ACTORS, **{
               "protocol/msgpack/read.hpp": "",
               "protocol/README.md": "`msgpack/read.hpp`, "
                                     "`msgpack/frame`\n"}), 1,
           "protocol/README.md names msgpack/frame, which does not exist"),
    expect("a README glob matching nothing fails", dict(ACTORS, **{
        "protocol/a.hpp": "",
        "protocol/README.md": "`a.hpp`, `io/*.hpp`\n"}), 1,
        "protocol/README.md names io/*.hpp, which matches nothing"),
    expect("a README not naming a source file of its folder fails",
           dict(ACTORS, **{
               "storage/traces.hpp": "",
               "storage/traces.cpp": "",
               "storage/README.md": "`traces.hpp` (`storage/`)\n"}), 1,
           "storage/README.md does not name storage/traces.cpp"),
    expect("a README naming a folder does not name its files",
           dict(ACTORS, **{
               "core/x/a.hpp": "",
               "core/README.md": "`x/`\n"}), 1,
           "core/README.md does not name core/x/a.hpp"),
    expect("a README using globs, stems and root paths passes",
           dict(ACTORS, **{
               "protocol/io/pool.hpp": "",
               "protocol/io/listener.cpp": "",
               "protocol/http/connection.hpp": "",
               "protocol/http/connection.cpp": "",
               "protocol/http/url.hpp": "",
               "protocol/http/url.cpp": "",
               "protocol/api/ops.cpp": "",
               "docs/http.md": "",
               "protocol/README.md": "| `io/*` | `http/connection.*` |\n"
                                     "`http/url.hpp/.cpp`, `protocol/api/ops`"
                                     " (`docs/http.md`, `api/`)\n"
                                     + NOT_PATHS}), 0),

    # Test names.
    expect("a test name with ';' fails, naming it", dict(ACTORS, **{
        "tests/unit/a_test.cpp": '#include <catch2/catch.hpp>\n'
                                 'TEST_CASE("one; two", "[x]") {}\n'}), 1,
        "tests/unit/a_test.cpp:2: test name has ';' (ctest splits it and "
        'runs nothing): "one; two"'),
    expect("a multi-line name with ';' in its second literal fails",
           dict(ACTORS, **{
               "tests/sim/b_test.cpp":
                   "\n"
                   'TEST_CASE("the first half of a long name, "\n'
                   '          "and its second; half",\n'
                   '          "[sim]") {\n'
                   "}\n"}), 1,
           'tests/sim/b_test.cpp:2: test name has \';\' (ctest splits it and '
           'runs nothing): "the first half of a long name, and its second; '
           'half"'),
    expect("a clean multi-line name passes", dict(ACTORS, **{
        "tests/sim/c_test.cpp":
            "// TEST_CASE(\"a; commented out\")\n"
            "/* TEST_CASE(\"a; b\") */\n"
            'TEST_CASE(\n    "a clean name over "\n    "two literals, '
            '[with] brackets",\n    "[sim]") {\n'
            '  CHECK(f("a; b") == \'"\');\n'
            "}\n"}), 0),
    expect("a test name with an escaped quote fails", dict(ACTORS, **{
        "tests/unit/d_test.cpp":
            'TEST_CASE("say \\"hi\\"", "[x]") {}\n'}), 1,
        "test name has '\"'"),
    expect("a test name with an unclosed '[' fails", dict(ACTORS, **{
        "tests/unit/e_test.cpp":
            'TEST_CASE_METHOD(fixture<int>, "offsets in [0, [n]", "[x]")'
            " {}\n"}),
        1, "tests/unit/e_test.cpp:1: test name has an unclosed '['"),
    expect("a test name starting with '~' fails", dict(ACTORS, **{
        "tests/unit/f_test.cpp": 'TEST_CASE("~ not this") {}\n'}), 1,
        "test name starts with a negation"),
]
sys.exit(0 if all(results) else 1)
