#!/usr/bin/env bash
# Installs the Debian 12 packages Spool needs to build and test. Idempotent:
# does nothing (not even an apt update) when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache git
  libcaf-dev liblmdb-dev libzstd-dev libxxhash-dev catch2 libspdlog-dev
  libmsgpack-cxx-dev libasio-dev libhttp-parser-dev libsimdjson-dev
  nlohmann-json3-dev libboost-dev libmimalloc-dev python3
  rapidjson-dev libhowardhinnant-date-dev libtomlplusplus-dev libssl-dev
  clang-14 libclang-rt-14-dev libcli11-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
