#!/usr/bin/env bash
# Copies what a UI-less build needs and a GPU machine's image lacks into one prefix folder
# that travels with the working tree (the device tool's `carry`, README "The GPU device
# check"): SQLite's and OpenSSL's headers and shared libraries and nlohmann-json's headers
# and CMake package, all from this Debian machine's -dev packages (packaging/install-deps.sh).
# tests/gpu/device_check.sh puts the prefix on CMAKE_PREFIX_PATH and LD_LIBRARY_PATH.
#
# usage: packaging/make-device-carry.sh OUT_DIR     (an ignored folder, e.g. build-device-carry)
#
# Not carried: libtorch and pybind11 (the device's Python has both; the binding must be built
# with the pybind11 of the torch it loads into) and the Python headers (the interpreter's own).
# The libraries need glibc 2.34 or later (Debian 12's), which the device image has.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
out="$1"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
inc=/usr/include
lib="/usr/lib/$multiarch"

need() {
  for f in "$@"; do
    if [ ! -e "$f" ]; then
      echo "make-device-carry: $f is missing: install the -dev packages (packaging/install-deps.sh)" >&2
      exit 1
    fi
  done
}
need "$inc/sqlite3.h" "$inc/sqlite3ext.h" "$lib/libsqlite3.so" \
  "$inc/openssl/opensslv.h" "$inc/$multiarch/openssl/configuration.h" "$lib/libcrypto.so" "$lib/libssl.so" \
  "$inc/nlohmann/json.hpp" /usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake

rm -rf "$out"
mkdir -p "$out/include/openssl" "$out/lib" "$out/share/cmake"
cp "$inc/sqlite3.h" "$inc/sqlite3ext.h" "$out/include/"
# Debian splits OpenSSL's headers: the generated ones live under the multiarch folder, which
# a plain prefix has not, so they join the others.
cp -r "$inc/openssl/." "$out/include/openssl/"
cp "$inc/$multiarch/openssl/"*.h "$out/include/openssl/"
cp -r "$inc/nlohmann" "$out/include/"
# The nlohmann_json package finds its headers three folders above itself (PREFIX/include).
cp -r /usr/share/cmake/nlohmann_json "$out/share/cmake/"
# Each library with its soname link and the unversioned link the linker looks for.
for name in libsqlite3 libcrypto libssl; do
  real="$(readlink -f "$lib/$name.so")"
  soname="$(objdump -p "$real" | awk '$1 == "SONAME" { print $2 }')"
  cp "$real" "$out/lib/$soname"
  ln -sf "$soname" "$out/lib/$name.so"
done

size="$(du -sk "$out" | cut -f1)"
if [ "$size" -gt 65536 ]; then
  echo "make-device-carry: $out is ${size} KiB, over the 64 MiB a call carries" >&2
  exit 1
fi
echo "make-device-carry: $out ($size KiB): $(cd "$out" && find . -type f | wc -l) files" >&2
