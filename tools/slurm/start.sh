#!/usr/bin/env bash
# Bring up a single-node Slurm cluster on this (Debian 12, no systemd) machine.
#
# Idempotent: packages are installed only if missing, slurm.conf is rewritten only
# if its content would change, and each daemon is started only if its pid file
# does not point at a live process.  Needs root.
#
# Environment knobs (all optional):
#   SLURM_PARTITION        partition name                     (default: debug)
#   SLURM_MEM_HEADROOM_MB  memory kept back from Slurm        (default: max(512, 5% of RAM))
#   SLURM_WAIT_SECONDS     how long to wait for an idle node  (default: 60)
#
# Exit status 0 means: munged, slurmctld and slurmd are running and the node
# accepts jobs (state idle/mix/alloc).  Otherwise prints the tail of the logs.
set -euo pipefail

START_NS=$(date +%s%N)
elapsed() { echo "$(( ($(date +%s%N) - START_NS) / 1000000 ))" | awk '{printf "%.1f", $1/1000}'; }
log() { echo "[slurm-start +$(elapsed)s] $*"; }
die() { echo "[slurm-start] ERROR: $*" >&2; exit 1; }

PARTITION=${SLURM_PARTITION:-debug}
WAIT_SECONDS=${SLURM_WAIT_SECONDS:-60}
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
LOG_DIR=/var/log/slurm
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
MUNGE_PID=/run/munge/munged.pid

[ "$(id -u)" -eq 0 ] || die "must run as root (installs packages and starts daemons)"

# pid_alive PIDFILE NAME: the pid file exists and names a live process called NAME.
# (Checks the command name too, so a stale pid file whose pid was reused does not count.)
pid_alive() {
    local f=$1 name=$2 pid
    [ -s "$f" ] || return 1
    pid=$(tr -dc '0-9' <"$f")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

dump_logs() {
    echo "----- sinfo -----" >&2
    sinfo -N -l 2>&1 | tail -n 5 >&2 || true
    for f in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" /var/log/munge/munged.log; do
        [ -f "$f" ] || continue
        echo "----- tail -n 30 $f -----" >&2
        tail -n 30 "$f" >&2
    done
}

# ---------------------------------------------------------------- packages
need=()
for pair in slurmctld:/usr/sbin/slurmctld slurmd:/usr/sbin/slurmd \
            slurm-client:/usr/bin/sbatch munge:/usr/sbin/munged; do
    [ -x "${pair#*:}" ] || need+=("${pair%%:*}")
done
if [ ${#need[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || die "apt-get not available; cannot install ${need[*]}"
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    log "packages installed"
fi

# ---------------------------------------------------------------- munge
if [ ! -s /etc/munge/munge.key ]; then
    log "creating munge key"
    mungekey --create --force
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
if ! pid_alive "$MUNGE_PID" munged; then
    rm -f "$MUNGE_PID"
    log "starting munged"
    su -s /bin/sh munge -c /usr/sbin/munged   # daemonizes, writes $MUNGE_PID
fi
for _ in $(seq 1 50); do
    munge -n 2>/dev/null | unmunge 2>/dev/null | grep -q 'STATUS: *Success' && break
    sleep 0.1
done
munge -n | unmunge | grep -q 'STATUS: *Success' || { dump_logs; die "munge round trip failed"; }

# ---------------------------------------------------------------- slurm.conf
HOST=$(hostname -s)
CPUS=$(nproc --all)
MEM_TOTAL_MB=$(awk '/^MemTotal:/ {print int($2/1024)}' /proc/meminfo)
HEADROOM_MB=${SLURM_MEM_HEADROOM_MB:-$(( MEM_TOTAL_MB / 20 > 512 ? MEM_TOTAL_MB / 20 : 512 ))}
MEM_MB=$(( MEM_TOTAL_MB - HEADROOM_MB ))
[ "$MEM_MB" -gt 256 ] || die "not enough memory for a Slurm node (${MEM_TOTAL_MB} MB total)"

install -d -m 0755 "$CONF_DIR" /var/spool/slurmd
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld "$LOG_DIR"

NEW_CONF=$(mktemp)
trap 'rm -f "$NEW_CONF"' EXIT
cat >"$NEW_CONF" <<EOF
# Written by tools/slurm/start.sh -- single-node test cluster, not for production.
ClusterName=gpbayes
SlurmctldHost=${HOST}
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=${CTLD_PID}
SlurmdPidFile=${SLURMD_PID}
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
# no cgroups in this container: plain process tracking, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# no slurmdbd: sacct does not work, Snakemake must poll with squeue ...
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# ... so finished jobs must stay visible to squeue for a while (seconds)
MinJobAge=3600
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=${HOST} CPUs=${CPUS} RealMemory=${MEM_MB} State=UNKNOWN
PartitionName=${PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

CONF_CHANGED=0
if ! cmp -s "$NEW_CONF" "$CONF"; then
    install -m 0644 "$NEW_CONF" "$CONF"
    CONF_CHANGED=1
    log "wrote $CONF (node $HOST: ${CPUS} CPUs, ${MEM_MB} MB, partition $PARTITION)"
fi

# A changed config needs the daemons restarted (stop them by pid file).
if [ "$CONF_CHANGED" -eq 1 ]; then
    for pair in "$SLURMD_PID:slurmd" "$CTLD_PID:slurmctld"; do
        f=${pair%%:*}; name=${pair#*:}
        if pid_alive "$f" "$name"; then
            log "config changed: restarting $name"
            kill "$(cat "$f")"
            for _ in $(seq 1 100); do pid_alive "$f" "$name" || break; sleep 0.1; done
        fi
    done
fi

# ---------------------------------------------------------------- daemons
if ! pid_alive "$CTLD_PID" slurmctld; then
    rm -f "$CTLD_PID"
    log "starting slurmctld"
    /usr/sbin/slurmctld
fi
if ! pid_alive "$SLURMD_PID" slurmd; then
    rm -f "$SLURMD_PID"
    log "starting slurmd"
    /usr/sbin/slurmd
fi

# ---------------------------------------------------------------- wait for the node
state=""
resumed=0
deadline=$(( $(date +%s) + WAIT_SECONDS ))
while :; do
    state=$(sinfo -h -n "$HOST" -o %t 2>/dev/null | head -n1 || true)
    case "$state" in
        idle|mix|alloc|comp) break ;;
        down*|drain*|drng*|fail*)
            # e.g. left over from an earlier run with another config
            if [ "$resumed" -eq 0 ]; then
                log "node is '$state', resuming it"
                scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true
                resumed=1
            fi ;;
    esac
    if [ "$(date +%s)" -ge "$deadline" ]; then
        dump_logs
        die "node $HOST not idle after ${WAIT_SECONDS}s (state: '${state:-no answer from slurmctld}')"
    fi
    sleep 0.5
done

sinfo
echo "slurm bring-up took $(elapsed) s (node $HOST state: $state)"
