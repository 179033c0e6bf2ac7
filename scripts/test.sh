#!/usr/bin/env bash
# Sets everything up, builds and runs every test.
# Usage: scripts/test.sh [--sanitize]   (--sanitize: the ASan+UBSan build)
# Prints each stage's wall time ("== time: ..."); after ctest, each test
# binary's own count of cases next to what ctest ran (scripts/ctest_counts.py),
# and fails when they differ.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
label=
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  label=" (sanitizers)"
fi
timed() { # timed NAME COMMAND...: runs it, prints its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "== time: $name$label $((SECONDS - start)) s"
}
timed setup scripts/setup.sh
python3 scripts/check_structure.py
timed build scripts/build.sh "$@"
junit="$PWD/$dir/ctest-junit.xml"
rm -f "$junit"
timed tests ctest --test-dir "$dir" --output-on-failure -j 2 --output-junit "$junit"
python3 scripts/ctest_counts.py "$dir" "$junit"
