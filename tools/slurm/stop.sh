#!/usr/bin/env bash
# Stop the single-node Slurm started by tools/slurm/start.sh.
# Daemons are stopped by their pid files only (never by process name).
#   --keep-munge   leave munged running
set -uo pipefail

KEEP_MUNGE=0
[ "${1:-}" = "--keep-munge" ] && KEEP_MUNGE=1

# stop PIDFILE NAME: SIGTERM the pid in PIDFILE if it is a live NAME, wait up to 10 s.
stop() {
    local f=$1 name=$2 pid
    [ -s "$f" ] || { echo "$name: no pid file ($f)"; return 0; }
    pid=$(tr -dc '0-9' <"$f")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
        && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
        kill "$pid"
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "$name (pid $pid) did not exit after 10 s" >&2
            return 1
        fi
        echo "$name (pid $pid) stopped"
    else
        echo "$name: stale pid file $f"
    fi
    rm -f "$f"
}

rc=0
stop /run/slurmd.pid slurmd || rc=1
stop /run/slurmctld.pid slurmctld || rc=1
[ "$KEEP_MUNGE" -eq 1 ] || stop /run/munge/munged.pid munged || rc=1
exit $rc
