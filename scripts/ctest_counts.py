#!/usr/bin/env python3
"""After a ctest run: each test binary's own count of test cases next to the
number of its tests ctest ran, and a failure when the two differ.

A Catch2 name that CMake cannot carry whole (a `;` splits it) becomes tests
that match nothing; a binary whose discovery broke registers none. Either way
the binary lists more (or other) cases than ctest ran, and this says so.

Usage: scripts/ctest_counts.py BUILD_DIR JUNIT_FILE
  JUNIT_FILE: what `ctest --output-junit` wrote for the run just made.
Exit 0 when every binary's list equals what ctest ran, 1 otherwise.
"""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def registered(build):
    """test name -> the executable ctest runs for it."""
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    tests = {}
    for t in json.loads(out)["tests"]:
        command = t.get("command") or []
        if command:
            tests[t["name"]] = command[0]
    return tests


def listed(binary):
    """The test case names the binary itself lists."""
    out = subprocess.run([binary, "--list-test-names-only"],
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def ran(junit):
    """test name -> status, for each test ctest ran (passed or failed)."""
    root = ET.parse(junit).getroot()
    return {c.get("name"): c.get("status")
            for c in root.iter("testcase")
            if c.get("status") not in ("notrun", "disabled")}


def main():
    build, junit = sys.argv[1], sys.argv[2]
    tests = registered(build)
    done = ran(junit)
    binaries = sorted({exe for exe in tests.values()
                       if os.path.basename(exe).startswith("spool_")})
    bad = 0
    for exe in binaries:
        names = listed(exe)
        mine = [n for n, e in tests.items() if e == exe]
        count = sum(1 for n in mine if n in done)
        same = set(names) == set(mine) and count == len(names)
        print(f"tests: {os.path.basename(exe):22} lists {len(names):4} cases, "
              f"ctest ran {count:4}" + ("" if same else "   MISMATCH"))
        if not same:
            bad += 1
            for n in sorted(set(names) - set(mine)):
                print(f"  listed, not a ctest test: {n}")
            for n in sorted(set(mine) - set(names)):
                print(f"  a ctest test the binary does not list: {n}")
            for n in sorted(n for n in mine if n not in done):
                print(f"  registered, not run: {n}")
    others = sorted(n for n, e in tests.items() if e not in binaries)
    print(f"tests: {'other':22} {len(others):4} registered, ctest ran "
          f"{sum(1 for n in others if n in done):4}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
