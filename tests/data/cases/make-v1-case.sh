#!/bin/sh
# Makes v1.zkaudit, a case at schema version 1 written by the code that wrote such cases:
# zkdv-audit as of commit f46a2e6 (the foundation; core/store was unchanged up to 98ed555,
# which brought schema 2), built from that commit's sources, ingests a 6-transaction tape its
# own `demo` recorded. Usage: make-v1-case.sh [OUT] (default: v1.zkaudit beside this script).
set -eu
commit=f46a2e6
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/v1.zkaudit}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$(cd "$here/../../.." && pwd)
git -C "$repo" archive "$commit" core app/audit | tar -x -C "$work"
mkdir -p "$work/generated/zkdv"
sed 's/@PROJECT_VERSION@/0.1.0/' "$work/core/version.h.in" > "$work/generated/zkdv/version.h"
cd "$work"
# shellcheck disable=SC2046
${CXX:-c++} -std=c++17 -O1 -w -pthread -Icore/include -Igenerated $(find core app/audit -name '*.cpp' | sort) \
    -lsqlite3 -lcrypto -o zkdv-audit-v1
./zkdv-audit-v1 demo --out tape.zkdv --steps 6 >/dev/null 2>&1
rm -f "$out"
./zkdv-audit-v1 ingest tape.zkdv --case "$out" >/dev/null 2>&1
echo "$out: user_version $(sqlite3 "$out" 'PRAGMA user_version'), $(sqlite3 "$out" 'SELECT count(*) FROM transactions') transactions"
