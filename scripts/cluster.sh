#!/usr/bin/env bash
# Sets everything up and runs a local three-node cluster (docs/cluster.md):
# nodes n1..n3 on 127.0.0.1 with HTTP on ports 6641..6643, msgpack on
# 6651..6653 and their peer links on 6701..6703; data in ./cluster-data/nN,
# each node's log in ./cluster-data/nN.log, the cluster's secret in
# ./cluster-data/secret (made once). Ctrl-C stops the three (SIGTERM).
# Extra arguments go to every spoold.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
mkdir -p cluster-data
secret=cluster-data/secret
if [ ! -s "$secret" ]; then
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret")
fi
peers=n1=127.0.0.1:6701,n2=127.0.0.1:6702,n3=127.0.0.1:6703
pids=()
for i in 1 2 3; do
  build/server/spoold --data-dir "cluster-data/n$i" \
    --http-address 127.0.0.1 --http-port "664$i" \
    --msgpack-address 127.0.0.1 --msgpack-port "665$i" \
    --node-id "n$i" --peers "$peers" --cluster-secret-file "$secret" \
    "$@" > "cluster-data/n$i.log" 2>&1 &
  pids+=($!)
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' INT TERM
echo "three nodes: HTTP on 127.0.0.1:6641..6643 (n1..n3); logs in cluster-data/"
echo "a slot is served by its leader; the others answer 421 naming it"
wait
