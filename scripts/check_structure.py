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

Tests and benchmarks may include anything and are not checked.
Usage: scripts/check_structure.py [repo root]
"""

import os
import re
import sys

CHECKED = ["vocab", "wire", "storage", "config", "core", "node", "gateway",
           "actors", "protocol", "client", "cli", "server"]

# Which project folders each layer may include (by top folder).
ALLOWED = {
    "vocab": {"vocab"},
    "wire": {"vocab", "wire"},
    "storage": {"vocab", "storage"},
    "config": {"vocab", "config"},
    "core": {"vocab", "storage", "config", "core"},
    "node": {"vocab", "node"},
    "actors": {"vocab", "storage", "config", "core", "node", "actors"},
    "gateway": {"vocab", "storage", "config", "core", "node", "actors",
                "gateway"},
    "protocol": {"vocab", "wire", "node", "gateway", "protocol", "config"},
    "client": {"vocab", "wire", "node", "client"},
    "cli": {"vocab", "wire", "node", "client", "cli"},
    "server": set(CHECKED),
}

# Libraries a layer may not include (by the include's leading path).
FORBIDDEN_LIBS = {
    "vocab": ["caf/", "lmdb.h", "asio"],
    "wire": ["caf/", "lmdb.h", "asio"],
    "storage": ["caf/", "asio"],
    "config": ["caf/", "lmdb.h", "asio"],
    "core": ["caf/", "asio"],
    "node": ["caf/", "lmdb.h", "asio"],
    "actors": ["asio"],
    "protocol": ["caf/", "lmdb.h"],
    "client": ["caf/", "lmdb.h"],
    "cli": ["caf/", "lmdb.h"],
}

# The gateway's implementation holds CAF; its header may not.
DOOR_HEADERS = ["gateway/gateway.hpp"]

MAX_ACTOR_LINES = 600
# Actor-layer files still over the limit, with the most lines they may have.
OVER_LIMIT = {}

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


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    files = scan(root)
    findings = (folder_cycles(files) + forbidden_edges(files)
                + door_reach(files) + sizes(root, files))
    for f in findings:
        print(f)
    over = sum(1 for p in OVER_LIMIT if p in files)
    print(f"check_structure: {len(files)} files, {len(findings)} findings, "
          f"{over} actor files still over {MAX_ACTOR_LINES} lines")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
