#!/usr/bin/env bash
# Makes (or reuses) the PyPI lane's virtual environment: Debian's Python 3 with the packages
# pinned in packaging/pypi-torch.txt. Prints the environment's python on stdout; progress on
# stderr. The packages only tests use (packaging/pypi-test-extras.txt) are added to it in place.
# The environment lives outside the tree, keyed by the pin file's digest, so a fresh
# clone on the same machine reuses it and a changed pin gets a new one:
#   ${ZKDV_PYPI_VENV_ROOT:-$HOME/.cache/zkdv}/venv-<first 12 hex digits of sha256(pin file)>
# PyPI's Linux torch is a CUDA build; its CUDA libraries come as PyPI packages too (~5.3 GB
# installed, docs/compatibility.md) and load without a GPU.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pins="$here/pypi-torch.txt"
key="$(sha256sum "$pins" | cut -c1-12)"
root="${ZKDV_PYPI_VENV_ROOT:-$HOME/.cache/zkdv}"
venv="$root/venv-$key"

extras="$here/pypi-test-extras.txt"
# The test-only packages, installed in place (their own marker, keyed by their file).
add_extras() {
  local marker="$venv/.zkdv-extras-$(sha256sum "$extras" | cut -c1-12)"
  if [ ! -f "$marker" ]; then
    echo "PyPI lane: installing $extras into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$extras" >&2
    touch "$marker"
  fi
}

if [ -x "$venv/bin/python" ] && [ -f "$venv/.zkdv-complete" ]; then
  echo "PyPI lane: reusing $venv" >&2
  add_extras
  echo "$venv/bin/python"
  exit 0
fi

if ! /usr/bin/python3 -c "import ensurepip, venv" 2>/dev/null; then
  echo "PyPI lane: installing python3-venv" >&2
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv >&2 \
    || { $sudo apt-get update -q >&2 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv >&2; }
fi

echo "PyPI lane: building $venv from $pins" >&2
# Built in place (a venv's scripts name its path), marked complete only at the end, so an
# interrupted build is redone from scratch next time.
rm -rf "$venv"
mkdir -p "$root"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$pins" >&2
"$venv/bin/python" -c "import torch, numpy, pytest, pybind11, transformers" >&2
touch "$venv/.zkdv-complete"
add_extras
echo "$venv/bin/python"
