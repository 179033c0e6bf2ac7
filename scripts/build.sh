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

# CI builds everything twice from scratch: line tables only (-g1) instead of
# full debug info saves about a fifth of the compile time; sanitizer reports
# still name files and lines.
if [ -n "${CI:-}" ]; then
  args+=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
         -DCMAKE_CXX_FLAGS_DEBUG="-g1")
fi

cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
