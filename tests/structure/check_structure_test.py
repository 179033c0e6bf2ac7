#!/usr/bin/env python3
"""The structure check fails on what it exists to catch: run over small
trees, each with one defect, it must exit 1 naming it; over a clean tree, 0."""

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
# passes (with more than 600 lines, within their ceilings).
import importlib.util
spec = importlib.util.spec_from_file_location("check_structure", CHECK)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)
ACTORS = {p: "\n" * (check.MAX_ACTOR_LINES + 1)
          for p in check.OVER_LIMIT}

results = [
    expect("a clean tree passes", dict(ACTORS, **{
        "vocab/a.hpp": "#include <string>\n",
        "core/x/b.hpp": '#include "vocab/a.hpp"\n'}), 0),
    expect("a cycle between folders fails", dict(ACTORS, **{
        "core/x/a.hpp": '#include "core/y/b.hpp"\n',
        "core/y/b.hpp": '#include "core/x/a.hpp"\n'}), 1,
        "cycle between folders core/x, core/y"),
    expect("storage including the actor layer fails", dict(ACTORS, **{
        "storage/a.hpp": '#include "actors/interfaces.hpp"\n'}), 1,
        "forbidden edge storage -> actors"),
    expect("an angle-bracket project include counts too", dict(ACTORS, **{
        "vocab/a.hpp": "#include <core/x/b.hpp>\n",
        "core/x/b.hpp": ""}), 1, "forbidden edge vocab -> core"),
    expect("a core including CAF fails", dict(ACTORS, **{
        "core/x/a.hpp": "#include <caf/actor.hpp>\n"}), 1,
        "forbidden library in core"),
    expect("the gateway's header reaching CAF fails", dict(ACTORS, **{
        "gateway/gateway.hpp": '#include "node/api.hpp"\n',
        "node/api.hpp": '#include "vocab/a.hpp"\n',
        "vocab/a.hpp": "#include <caf/fwd.hpp>\n"}), 1,
        "front door reaches CAF"),
    expect("an actor file over 600 lines fails", dict(ACTORS, **{
        "actors/x/big.cpp": "\n" * 601}), 1, "over 600"),
]
sys.exit(0 if all(results) else 1)
