#!/usr/bin/env bash
# Installs the Debian 12 packages ZKDV builds and tests with (as root, or through sudo).
set -euo pipefail
packages=(
  cmake ninja-build g++ ccache pkg-config
  qt6-base-dev qt6-svg-dev libqcustomplot-dev
  libtorch-dev python3-torch python3-numpy
  pybind11-dev python3-dev python3-pytest python3-pip python3-setuptools python3-wheel
  libsqlite3-dev libssl-dev nlohmann-json3-dev
  xvfb xauth
  poppler-utils
  openssl
  slurmctld slurmd slurm-client munge python3-yaml
)
if [ "$(id -u)" -ne 0 ]; then
  exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
