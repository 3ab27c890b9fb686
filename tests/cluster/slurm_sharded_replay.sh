#!/usr/bin/env bash
# A sharded replay on a real Slurm cluster (issue 31; docs/replay.md, "Sharded replays"):
# a one-node cluster on localhost (tests/support/slurm_cluster.sh), the script that
# `zkdv-audit slurm-script` writes submitted with sbatch as an auditor would, its array
# tasks and dependent merge waited for, and the merged run compared transaction by
# transaction with the same selection replayed in one run. Once on an honest tape, once on
# a tape whose loss was forged at one transaction and re-chained (tests/python/tape_edit.py):
# the merged run must find that divergence where the single run does, through the shard
# that owns the transaction.
#
#   slurm_sharded_replay.sh ZKDV_AUDIT SOURCE_DIR
#
# Exits 77 (skipped) where the cluster cannot run here (slurm_cluster.sh start says why).
set -euo pipefail

readonly audit=$1
readonly source_dir=$2
readonly python=/usr/bin/python3
readonly selection=random:24
readonly seed=20261206
readonly shards=3
readonly steps=48
readonly forged=29  # a transaction the selection above chooses (checked below)
readonly wait_seconds=300

fail() { echo "slurm_sharded_replay: FAIL: $*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/zkdv-slurm.XXXXXX")
cluster=$work/cluster
cleanup() {
    "$source_dir/tests/support/slurm_cluster.sh" stop "$cluster" || true
    rm -rf "$work"
}
trap cleanup EXIT

status=0
"$source_dir/tests/support/slurm_cluster.sh" start "$cluster" || status=$?
if [ $status -ne 0 ]; then
    [ $status -eq 77 ] && echo "slurm_sharded_replay: skipped: no Slurm cluster can run here" >&2
    exit $status
fi
# shellcheck disable=SC1091
source "$cluster/env"

# The verdicts of a run's report, one "index selected verdict" line per replayed transaction.
verdicts() {
    "$python" -c '
import json, sys
report = json.load(open(sys.argv[1]))
for t in report["transactions"]:
    print(t["index"], t["selected"], t["verdict"])
' "$1"
}

start=$SECONDS
# Every transaction carries its sampled checks: re-chaining the forged tape moves the
# chain-bound draws, and a check the new draw asks for must not be missing.
"$audit" demo --out "$work/honest.zkdv" --steps $steps --snapshot-interval 8 --update-check 1 --state-check 1 --quiet
PYTHONPATH="$source_dir/tests/python" "$python" -c '
import sys, tape_edit
tape_edit.rechain_with_scaled_loss(sys.argv[1], sys.argv[2], int(sys.argv[3]))
' "$work/honest.zkdv" "$work/forged.zkdv" $forged
echo "slurm_sharded_replay: tapes recorded in $((SECONDS - start)) s"

# A folder name that needs quoting in the script, in sbatch's #SBATCH lines and in Slurm's
# file name patterns: a space, a single quote and a %.
for kind in honest forged; do
    folder="$work/$kind audit's 100%"
    mkdir -p "$folder"
    # The case's name makes the jobs' names: zkdv-honest-SEED and zkdv-forged-SEED.
    "$audit" ingest "$work/$kind.zkdv" --case "$folder/$kind.zkaudit" --quiet
    "$audit" ingest "$work/$kind.zkdv" --case "$folder/single.zkaudit" --quiet
    "$audit" plan "$folder/$kind.zkaudit" --select $selection --seed $seed --shards $shards --json >"$folder/plan.json"
    "$audit" slurm-script "$folder/$kind.zkaudit" --select $selection --seed $seed --shards $shards --time 10:00 \
        --output "$folder/replay.sbatch"
done

# Both audits at once, as two auditors would: 2 x (3 shard tasks + 1 merge job).
start=$SECONDS
jobs=()
for kind in honest forged; do
    folder="$work/$kind audit's 100%"
    jobs+=("$(cd "$folder" && sbatch --parsable "$folder/replay.sbatch")")
done
echo "slurm_sharded_replay: submitted array jobs ${jobs[*]}"
# The queue empties once every array task has ended and each task 0's merge job has run (or
# been cancelled because a task failed).
while [ -n "$(squeue -h -o %i)" ]; do
    if [ $((SECONDS - start)) -ge $wait_seconds ]; then
        squeue >&2
        fail "the Slurm jobs did not finish within $wait_seconds s"
    fi
    sleep 1
done
echo "slurm_sharded_replay: array and merge jobs done in $((SECONDS - start)) s (sbatch to merged case)"

for kind in honest forged; do
    folder="$work/$kind audit's 100%"
    shard_folder="$folder/$kind.shards-$seed-$shards"
    for log in "$shard_folder"/shard-*.out "$shard_folder/merge.out"; do
        [ -f "$log" ] && { echo "--- $kind: $(basename "$log"):"; cat "$log"; }
    done
    # Every task succeeded, and the merge ran: Slurm keeps ended jobs for MinJobAge (300 s).
    # The merge of the forged tape's shards may report its divergence with exit 1.
    ended=$(scontrol show job -o | grep " JobName=zkdv-$kind-$seed" || true)
    echo "$ended" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^(JobId|JobName|JobState|ExitCode)=/) printf "%s ", $i; print "" }'
    tasks=$(echo "$ended" | grep -c " JobName=zkdv-$kind-$seed " || true)
    [ "$tasks" -eq $shards ] || fail "$kind: Slurm shows $tasks array tasks, not $shards"
    echo "$ended" | grep " JobName=zkdv-$kind-$seed " | grep -v " JobState=COMPLETED " && fail "$kind: an array task did not complete"
    merge=$(echo "$ended" | grep " JobName=zkdv-$kind-$seed-merge " || true)
    [ -n "$merge" ] || fail "$kind: no merge job ran"
    [ -f "$shard_folder/merge.out" ] || fail "$kind: the merge job wrote no merge.out"
    case $kind/$(echo "$merge" | grep -o " JobState=[A-Z]* " | tr -d ' ')/$(echo "$merge" | grep -o " ExitCode=[0-9:]* " | tr -d ' ') in
        honest/JobState=COMPLETED/ExitCode=0:0 | forged/JobState=COMPLETED/ExitCode=0:0 | forged/JobState=FAILED/ExitCode=1:0) ;;
        *) fail "$kind: the merge job ended as: $merge" ;;
    esac

    # The merge held the shards to the audit slurm-script recorded in the case. Merged into a
    # case where no job was planned they are refused, and so they are against another audit
    # stated on the command line (exit 2, naming the difference); the shards' own claims never
    # stand in for the request.
    shard_files=()
    for i in $(seq 0 $((shards - 1))); do shard_files+=("$shard_folder/shard-$i.zkaudit"); done
    refused=0
    "$audit" merge "$folder/single.zkaudit" "${shard_files[@]}" --quiet 2>"$folder/refused.err" || refused=$?
    [ $refused -eq 2 ] && grep -q "holds no planned audit" "$folder/refused.err" ||
        fail "$kind: a merge into a case without a planned audit exited $refused: $(cat "$folder/refused.err")"
    refused=0
    "$audit" merge "$folder/single.zkaudit" "${shard_files[@]}" --select $selection --seed $((seed + 1)) --shards $shards \
        --quiet 2>"$folder/refused.err" || refused=$?
    [ $refused -eq 2 ] && grep -qF "shard 0 ($shard_folder/shard-0.zkaudit): seed $seed, the planned audit's is $((seed + 1))" "$folder/refused.err" ||
        fail "$kind: a merge against another stated seed exited $refused: $(cat "$folder/refused.err")"

    single=0
    "$audit" replay "$folder/single.zkaudit" --select $selection --seed $seed --quiet || single=$?
    [ $single -le 1 ] || fail "$kind: the single replay exited $single"
    "$audit" report "$folder/single.zkaudit" -o "$folder/single.json"
    "$audit" report "$folder/$kind.zkaudit" -o "$folder/merged.json"
    verdicts "$folder/single.json" >"$folder/single.verdicts"
    verdicts "$folder/merged.json" >"$folder/merged.verdicts"
    [ -s "$folder/single.verdicts" ] || fail "$kind: the single run replayed nothing"
    diff -u "$folder/single.verdicts" "$folder/merged.verdicts" ||
        fail "$kind: the merged run's verdicts differ from the single run's"
    echo "slurm_sharded_replay: $kind: $(wc -l <"$folder/merged.verdicts") transactions, the same verdicts merged as in one run"

    diverged=$(awk '$3 == "diverged" { print $1 }' "$folder/merged.verdicts" | tr '\n' ' ')
    if [ $kind = honest ]; then
        [ $single -eq 0 ] || fail "honest: the single replay exited $single"
        [ -z "$diverged" ] || fail "honest: transactions $diverged diverged"
        continue
    fi
    grep -qx "$forged True diverged" "$folder/merged.verdicts" ||
        fail "forged: transaction $forged is not a selected, diverged transaction of the merged run"
    [ "$diverged" = "$forged " ] || fail "forged: diverged transactions are $diverged, expected only $forged"
    # The shard that owns the forged transaction's segment found it.
    owner=$("$python" -c '
import json, sys
plan = json.load(open(sys.argv[1]))
forged = int(sys.argv[2])
starts = sorted((s["snapshot"], s["last_transaction"], shard["shard"]) for shard in plan["shards"] for s in shard["segments"])
print([shard for first, last, shard in starts if first <= forged <= last][0])
' "$folder/plan.json" $forged)
    "$audit" report "$shard_folder/shard-$owner.zkaudit" -o "$folder/owner.json"
    # grep reads every line (not -q, which stops at the first match and, under pipefail, fails
    # the pipeline whenever the writer is still printing: a race a loaded machine loses).
    verdicts "$folder/owner.json" | grep -x "$forged True diverged" >/dev/null ||
        fail "forged: shard $owner, which owns transaction $forged, did not find it diverged"
    echo "slurm_sharded_replay: forged: transaction $forged diverged, found by shard $owner of $shards"
done
echo "slurm_sharded_replay: passed"
