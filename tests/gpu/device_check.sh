#!/usr/bin/env bash
# The GPU device check of issue 32, in one go (README "The GPU device check"):
#   1. builds zkdv-audit, the replay worker and the Python frontend with the UI and the Qt
#      tests off against PY's torch, unless BUILD_DIR already holds them; what the device
#      image lacks (SQLite, OpenSSL, nlohmann-json) comes from a prefix made by
#      packaging/make-device-carry.sh (build-device-carry/ at the root, or $ZKDV_DEVICE_CARRY);
#   2. then, within the time budget (8 minutes; --quick 3): records an MLP, a CNN and a
#      Transformer on DEVICE (tests/gpu/record_examples.py), replays each on DEVICE (all
#      exact) and on the CPU (graded), replays a tampered tape on DEVICE (diverged at the
#      edited transaction), and measures recording overhead and replay throughput;
#   3. prints one table and writes it as JSON (--out).
# Exit status: 0 when every correctness check passed, 1 when one failed or could not run,
# 2 for usage errors and a build that could not be made. The speed figures are reported
# with their targets (on a GPU: met or not) but never decide the exit status.
#
# usage: tests/gpu/device_check.sh [--device cuda:0|cpu] [--out RESULT.json] [--build-dir DIR]
#                                  [--python PY] [--quick] [--budget SECONDS] [--total SECONDS]
#                                  [--build-only]
# --budget: the checks' time limit (default 480 s, --quick 180 s), counted after the build.
# --total: a limit for the whole script, build included (the device tool's command limit):
#          the checks get what the build left, less 20 s, and at least 60 s or none.
# --build-only: step 1 alone.
# CI rehearses it on the CPU: ctest -R gpu_device_check_rehearsal.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

device=cuda:0
out=
build_dir=
python=
quick=0
build_only=0
budget=
total=
started=$(date +%s)
usage() { sed -n '/^# usage:/,/^# CI/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit "${1:-2}"; }
die() { echo "device_check: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --device) [ $# -ge 2 ] || usage; device="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; build_dir="$2"; shift 2 ;;
    --python) [ $# -ge 2 ] || usage; python="$2"; shift 2 ;;
    --budget) [ $# -ge 2 ] || usage; budget="$2"; shift 2 ;;
    --total) [ $# -ge 2 ] || usage; total="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "device_check: unknown argument $1" >&2; usage ;;
  esac
done
case "$device" in
  cpu|cuda:[0-9]*) ;;
  *) die "--device is cpu or cuda:N, not $device" ;;
esac
if [ -z "$budget" ]; then
  if [ "$quick" = 1 ]; then budget=180; else budget=480; fi
fi
[[ "$budget" =~ ^[0-9]+$ ]] || die "--budget is a number of seconds, not $budget"
[ -z "$total" ] || [[ "$total" =~ ^[0-9]+$ ]] || die "--total is a number of seconds, not $total"
build_dir="${build_dir:-$root/build-device}"
case "$build_dir" in /*) ;; *) build_dir="$PWD/$build_dir" ;; esac
if [ -n "$out" ]; then
  case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
fi

# The Python whose torch records and whose libtorch the build links: --python, else the
# device image's plain python3 (the one that holds PyTorch there).
python="${python:-$(command -v python3 || true)}"
[ -n "$python" ] && [ -x "$python" ] || die "no Python: pass --python PY (a Python whose torch to build against)"
torch_info="$("$python" -c 'import os, torch; print(torch.__version__); print(torch.cuda.is_available()); print(os.path.isdir(os.path.join(torch.utils.cmake_prefix_path, "Torch")) if hasattr(torch.utils, "cmake_prefix_path") else False)' 2>&1)" \
  || die "$python cannot import torch: $torch_info"
torch_version="$(sed -n 1p <<<"$torch_info")"
torch_has_cmake="$(sed -n 3p <<<"$torch_info")"
if [ "$build_only" = 0 ] && [[ "$device" == cuda:* ]] && [ "$(sed -n 2p <<<"$torch_info")" != True ]; then
  die "--device $device, but torch $torch_version in $python sees no CUDA device (on a CPU machine: --device cpu)"
fi

# What the image lacks, carried (packaging/make-device-carry.sh).
carry="${ZKDV_DEVICE_CARRY:-$root/build-device-carry}"
if [ -d "$carry/include" ]; then
  carry="$(cd "$carry" && pwd)"
  export CMAKE_PREFIX_PATH="$carry${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "device_check: using the carried prefix $carry" >&2
fi

# 1. The build.
python_module() { compgen -G "$build_dir/python/zkdv/_native*.so" >/dev/null; }
build_started=$(date +%s)
if [ -x "$build_dir/bin/zkdv-audit" ] && [ -x "$build_dir/bin/zkdv-replay-worker" ] && python_module; then
  echo "device_check: using the build in $build_dir" >&2
else
  missing=()
  for tool in cmake ninja; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  command -v c++ >/dev/null || command -v g++ >/dev/null || missing+=("a C++ compiler (c++ or g++)")
  [ ${#missing[@]} -eq 0 ] || die "cannot build in $build_dir: ${missing[*]} not found on PATH"
  if [ "$torch_has_cmake" = True ]; then
    "$python" -c 'import pybind11' 2>/dev/null \
      || die "cannot build the Python frontend: $python has no pybind11 (pip install pybind11 in that environment)"
  fi
  python_include="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  [ -f "$python_include/Python.h" ] || die "cannot build the Python frontend: no Python.h in $python_include (the interpreter's headers)"
  for header in sqlite3.h openssl/crypto.h nlohmann/json.hpp; do
    found=
    for dir in ${CMAKE_PREFIX_PATH:+${CMAKE_PREFIX_PATH//:/ }} /usr /usr/local; do
      [ -f "$dir/include/$header" ] && found=1 && break
    done
    [ -n "$found" ] || die "cannot build: $header not found; carry it: packaging/make-device-carry.sh build-device-carry (README \"The GPU device check\")"
  done
  # The binding shares pybind11's registry with torch only if the two pybind11s agree
  # (docs/python.md, "The two lanes"): both versions go to the log for a failure to be read.
  [ "$torch_has_cmake" = True ] && "$python" - >&2 <<'PYTHON' || true
import os, re, pybind11, torch
header = os.path.join(os.path.dirname(torch.__file__), "include", "pybind11", "detail", "common.h")
bundled = ".".join(re.findall(r"#define PYBIND11_VERSION_(?:MAJOR|MINOR|PATCH) (\S+)", open(header).read())) if os.path.exists(header) else "?"
print("device_check: pybind11 %s in the environment, %s in torch %s's headers" % (pybind11.__version__, bundled, torch.__version__))
PYTHON
  # CMAKE_POLICY_VERSION_MINIMUM: CMake 4 refuses packages written for CMake < 3.5; older CMakes ignore it.
  cmake_options=(-G Ninja -DZKDV_BUILD_UI=OFF -DZKDV_BUILD_TESTS=OFF -DZKDV_BUILD_PYTHON=ON -DCMAKE_POLICY_VERSION_MINIMUM=3.5)
  # A torch with its own libtorch (PyPI's) is built against; Debian's python3-torch has
  # none, and the system's libtorch-dev is its libtorch.
  [ "$torch_has_cmake" = True ] && cmake_options+=(-DZKDV_TORCH_PYTHON="$python")
  echo "device_check: building in $build_dir against torch $torch_version ($python)" >&2
  mkdir -p "$build_dir"
  log="$build_dir/device-check-build.log"
  cmake -S "$root" -B "$build_dir" "${cmake_options[@]}" >"$log" 2>&1 \
    || { tail -30 "$log" >&2; die "cmake failed (log: $log)"; }
  cmake --build "$build_dir" --target zkdv-audit zkdv-replay-worker zkdv-python -j "$(nproc)" >>"$log" 2>&1 \
    || { tail -40 "$log" >&2; die "the build failed (log: $log)"; }
  python_module || die "the build made no Python module in $build_dir/python/zkdv"
fi
build_seconds=$(( $(date +%s) - build_started ))
echo "device_check: build ready in $build_dir (${build_seconds} s)" >&2
if [ "$build_only" = 1 ]; then
  exit 0
fi

# 2. The checks, in a temporary folder removed on exit, under the time budget.
if [ -n "$total" ]; then
  left=$(( total - ($(date +%s) - started) - 20 ))
  if [ "$left" -lt 60 ]; then
    echo "device_check: the build took ${build_seconds} s of --total ${total} s, leaving too little for the checks; run again (the build in $build_dir is kept)" >&2
    exit 1
  fi
  [ "$left" -lt "$budget" ] && budget=$left
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/zkdv-device-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
trap 'exit 143' TERM INT
mkdir -p "$work/home"
deadline=$(( $(date +%s) + budget ))
export PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}"
export HOME="$work/home"  # the auditor's signing key of the runs, and nothing of the user's
export PYTHONUNBUFFERED=1
if [[ "$device" == cuda:* ]]; then
  export CUBLAS_WORKSPACE_CONFIG="${CUBLAS_WORKSPACE_CONFIG:-:4096:8}"
fi
echo "device_check: $device, torch $torch_version, budget ${budget} s$([ "$quick" = 1 ] && echo ", quick")" >&2
arguments=(--audit "$build_dir/bin/zkdv-audit" --device "$device" --work "$work" --deadline "$deadline" --build-seconds "$build_seconds")
[ -n "$out" ] && arguments+=(--out "$out")
[ "$quick" = 1 ] && arguments+=(--quick)
status=0
# The checks stop themselves at the deadline; the outer limit only catches a hang.
timeout --kill-after=10 $(( budget + 30 )) "$python" "$here/device_checks.py" "${arguments[@]}" || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "device_check: the checks outran the time budget of ${budget} s" >&2
  status=1
fi
exit "$status"
