#!/usr/bin/env bash
# Configures and builds Spool. Usage: scripts/build.sh [--sanitize]
#   default:    build/        RelWithDebInfo
#   --sanitize: build-asan/   Debug with ASan + UBSan (benchmarks left out)
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build
args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  args=(-DCMAKE_BUILD_TYPE=Debug -DSPOOL_SANITIZE=ON -DSPOOL_BUILD_BENCH=OFF)
fi

cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
