#!/usr/bin/env bash
# A one-node Slurm cluster on localhost for tests, kept entirely inside one folder: its own
# munge key and munged socket, slurm.conf, state, spool, logs and pid files. No systemd and
# nothing under /etc or /run is used, so it runs beside a real Slurm and beside another
# copy of itself (free ports are picked for each).
#
#   slurm_cluster.sh start DIR   configure and start munged, slurmctld and slurmd; wait until
#                                the node is idle; write DIR/env (source it for SLURM_CONF)
#   slurm_cluster.sh stop DIR    cancel the cluster's jobs and end the daemons DIR's pid files
#                                name, and nothing else
#
# start exits 77 (a skip for ctest) where the daemons cannot run here: not root (slurmd must
# switch to the job's user), Slurm or munge not installed, or a daemon that refuses to start.
# It exits 1 when the daemons run but the node never becomes idle: a fault of this script.
set -uo pipefail

readonly kReadySeconds=60
readonly kStopSeconds=15

die_skip() { echo "slurm_cluster.sh: cannot run a Slurm cluster here: $*" >&2; exit 77; }
die() { echo "slurm_cluster.sh: $*" >&2; exit 1; }

# Quotes for slurm.conf and for the env file: values are paths under a folder we made.
shell_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -s "$1" ] && tr -dc '0-9' <"$1"; }

free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

log_tail() { [ -f "$1" ] && { echo "--- last lines of $1:"; tail -n 15 "$1"; } >&2; }

stop_cluster() {
    local dir=$1
    if [ -f "$dir/slurm.conf" ] && [ -S "$dir/munge-socket/munge.socket" ]; then
        # Jobs' step daemons outlive slurmd: cancel the jobs while the controller can still do it.
        SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --quiet --user="$(id -un)" 2>/dev/null
        local waited=0
        while [ $waited -lt 10 ] && [ -n "$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -o %i 2>/dev/null)" ]; do
            sleep 1
            waited=$((waited + 1))
        done
    fi
    local name pid
    for name in slurmd slurmctld munged; do
        pid=$(pid_of "$dir/$name.pid")
        pid_alive "$pid" && kill -TERM "$pid"
    done
    for name in slurmd slurmctld munged; do
        pid=$(pid_of "$dir/$name.pid")
        local i=0
        while pid_alive "$pid" && [ $i -lt $((kStopSeconds * 10)) ]; do
            sleep 0.1
            i=$((i + 1))
        done
        pid_alive "$pid" && kill -KILL "$pid"
        rm -f "$dir/$name.pid"
    done
    return 0
}

write_config() {
    local dir=$1 host cpus memoryMb
    host=$(hostname -s)
    cpus=$(nproc)
    # slurmd drains a node that has less memory than slurm.conf claims: claim 90 % of it.
    memoryMb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
    local ctldPort nodePort
    ctldPort=$(free_port) && nodePort=$(free_port) || die "cannot pick free ports (python3)"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    : >"$dir/plugstack.conf"
    cat >"$dir/slurm.conf" <<EOF
# Written by tests/support/slurm_cluster.sh: a one-node cluster inside $dir.
ClusterName=zkdvtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctldPort
SlurmdPort=$nodePort
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge-socket/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
# No cgroups: the test machines are containers without systemd or a delegated cgroup tree.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
MinJobAge=300
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memoryMb State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    printf 'export SLURM_CONF=%s\n' "$(shell_quote "$dir/slurm.conf")" >"$dir/env"
}

start_munge() {
    local dir=$1
    # munged wants its key private and its socket's folder searchable by everyone (clients
    # of any user connect there): two folders.
    mkdir -p "$dir/munge" "$dir/munge-socket"
    chmod 0700 "$dir/munge"
    chmod 0755 "$dir/munge-socket"
    # munged refuses a key readable by others; 1024 random bytes is what mungekey makes.
    (umask 077 && head -c 1024 /dev/urandom >"$dir/munge/munge.key") || die "cannot write the munge key"
    # --force: munged refuses a socket below a folder others cannot search (mktemp -d makes
    # 0700 folders); here only this user's own Slurm daemons and commands connect.
    if ! munged --force --socket="$dir/munge-socket/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" 2>"$dir/log/munged.err"; then
        cat "$dir/log/munged.err" >&2
        log_tail "$dir/log/munged.log"
        stop_cluster "$dir"
        die_skip "munged refused to start"
    fi
    local i=0
    while [ ! -S "$dir/munge-socket/munge.socket" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    if ! munge --socket="$dir/munge-socket/munge.socket" -n </dev/null | unmunge --socket="$dir/munge-socket/munge.socket" >/dev/null 2>&1; then
        log_tail "$dir/log/munged.log"
        stop_cluster "$dir"
        die_skip "munged does not answer on its socket"
    fi
}

start_daemon() {
    local dir=$1 name=$2
    shift 2
    if ! "$@" >"$dir/log/$name.err" 2>&1; then
        cat "$dir/log/$name.err" >&2
        log_tail "$dir/log/$name.log"
        stop_cluster "$dir"
        die_skip "$name refused to start"
    fi
}

start_cluster() {
    local dir=$1
    [ "$(id -u)" -eq 0 ] || die_skip "not root (slurmd runs jobs as their users and must be root)"
    local tool
    for tool in munged munge unmunge slurmctld slurmd sinfo sbatch squeue scancel; do
        command -v "$tool" >/dev/null || die_skip "$tool is not installed (packaging/install-deps.sh installs Slurm and munge)"
    done
    mkdir -p "$dir" || die "cannot make $dir"
    dir=$(cd "$dir" && pwd)
    case $dir in *$'\n'* | *"("* | *")"* | *" "* | *"="* | *"#"*)
        die "$dir: slurm.conf cannot hold this folder's name (space, parenthesis, = or #)" ;;
    esac
    if pid_alive "$(pid_of "$dir/slurmctld.pid")"; then die "$dir already holds a running cluster"; fi
    local started=$SECONDS
    write_config "$dir"
    export SLURM_CONF="$dir/slurm.conf"
    start_munge "$dir"
    # -c: a cold start, no state from an earlier cluster in the same folder.
    start_daemon "$dir" slurmctld slurmctld -c -i
    start_daemon "$dir" slurmd slurmd
    local state=""
    while [ $((SECONDS - started)) -lt $kReadySeconds ]; do
        state=$(timeout 5 sinfo -h -N -o %t 2>/dev/null | head -n 1)
        [ "$state" = idle ] && break
        local name
        for name in munged slurmctld slurmd; do
            if ! pid_alive "$(pid_of "$dir/$name.pid")"; then
                log_tail "$dir/log/$name.log"
                stop_cluster "$dir"
                die_skip "$name stopped while the cluster started"
            fi
        done
        sleep 0.5
    done
    if [ "$state" != idle ]; then
        timeout 5 sinfo -N -l >&2
        timeout 5 scontrol show node >&2
        log_tail "$dir/log/slurmctld.log"
        log_tail "$dir/log/slurmd.log"
        stop_cluster "$dir"
        die "the node is not idle after $kReadySeconds s (state \"$state\")"
    fi
    echo "slurm_cluster.sh: one-node cluster up in $((SECONDS - started)) s; source $dir/env" >&2
}

case ${1:-} in
    start) [ $# -eq 2 ] || die "usage: slurm_cluster.sh start DIR"; start_cluster "$2" ;;
    stop) [ $# -eq 2 ] || die "usage: slurm_cluster.sh stop DIR"; [ ! -d "$2" ] || stop_cluster "$(cd "$2" && pwd)" ;;
    *) die "usage: slurm_cluster.sh start|stop DIR" ;;
esac
