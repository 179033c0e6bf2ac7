#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each one
# for SECONDS (default 30) from its seed corpus (fuzz/corpus/<target>/).
# A crash, a sanitizer report or a leak fails the run; the input that did it
# is left in build-fuzz/ as crash-*/leak-*. Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
scripts/setup.sh
start=$SECONDS
cmake -S . -B build-fuzz -DSPOOL_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
cmake --build build-fuzz -j "$(nproc)"
echo "== time: fuzz build $((SECONDS - start)) s"
start=$SECONDS
for target in http_request json_bodies timestamp msgpack_requests token tls_record; do
  corpus="build-fuzz/corpus/$target"
  mkdir -p "$corpus"
  echo "== fuzz $target for ${seconds}s"
  (cd build-fuzz && "./fuzz/${target}_fuzz" -max_total_time="$seconds" \
     -max_len=65536 -print_final_stats=1 "corpus/$target" \
     "../fuzz/corpus/$target" 2>&1 | tail -n 12)
done
echo "== time: fuzz runs $((SECONDS - start)) s"
