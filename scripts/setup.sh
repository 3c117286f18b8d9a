#!/usr/bin/env bash
# Installs the Debian 12 packages straggler-scan needs, only those missing. Idempotent, non-interactive.
set -euo pipefail
pkgs=(build-essential cmake pkg-config sqlite3 libsqlite3-dev libopenmpi-dev openmpi-bin
      libboost-program-options-dev libboost-dev libhdf5-openmpi-dev hdf5-tools libfmt-dev
      libgtest-dev libbenchmark-dev libsimdjson-dev zlib1g-dev libre2-dev python3-h5py python3-matplotlib python3-pandas
      python3-plotly chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
