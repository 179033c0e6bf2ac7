#!/usr/bin/env bash
# Sets everything up and runs spoold on its embedded default: LMDB in ./data.
# Extra arguments go to spoold (see `spoold --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/server/spoold --data-dir ./data "$@"
