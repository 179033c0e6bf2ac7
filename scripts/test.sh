#!/usr/bin/env bash
# Sets everything up, builds and runs every test.
# Usage: scripts/test.sh [--sanitize]   (--sanitize: the ASan+UBSan build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
python3 scripts/check_structure.py
scripts/build.sh "$@"
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
fi
ctest --test-dir "$dir" --output-on-failure -j 2
