#!/usr/bin/env bash
# Sample a running Snakemake process's CPU for `python -m gpbayes_repro.run_profile --monitor LOG`.
#
#   tools/monitor_snakemake.sh PID LOG [INTERVAL_S]
#
# PID must be the Snakemake (python) process itself, not a wrapper such as /usr/bin/time or a shell:
# e.g. `pgrep -f -n 'bin/snakemake'` right after starting it, or `pgrep -P <pid of time>`.
# Every INTERVAL_S seconds (default 10) until the process exits, appends one line
#   <epoch s> pid=<pid> utime_ticks=<n> stime_ticks=<n> cutime_ticks=<n> cstime_ticks=<n> load=<1-min load>
# from /proc/PID/stat: the process's own user/system CPU and that of its waited-for children (the jobs,
# their shells, the ILP solver), cumulative, in clock ticks (getconf CLK_TCK, 100 on Linux).
set -euo pipefail
pid=${1:?usage: monitor_snakemake.sh PID LOG [INTERVAL_S]}
log=${2:?usage: monitor_snakemake.sh PID LOG [INTERVAL_S]}
interval=${3:-10}
[ -r "/proc/$pid/stat" ] || { echo "monitor_snakemake.sh: no process $pid" >&2; exit 1; }
while stat=$(cat "/proc/$pid/stat" 2>/dev/null); do
  # fields after "(comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
  read -r -a f <<< "${stat##*) }"
  echo "$(date +%s) pid=$pid utime_ticks=${f[11]} stime_ticks=${f[12]} cutime_ticks=${f[13]} cstime_ticks=${f[14]} load=$(cut -d' ' -f1 /proc/loadavg)" >> "$log"
  sleep "$interval"
done
