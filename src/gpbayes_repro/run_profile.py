"""Where a workflow run's CPU goes, by kind and by rule (issue 34).

``python -m gpbayes_repro.run_profile <run dir>`` reads what a run leaves behind and splits its CPU
time into

* **jobs' start-up**: each job is a fresh ``python`` that runs Snakemake's script preamble
  (unpickling the ``snakemake`` object imports ``snakemake.io``, ``snakemake.logging``, ...) and
  then its script's imports before it computes anything.  The tool measures that cost once per
  script, in fresh processes on this machine (``python -c "<preamble imports>; <script imports>"``,
  the median user + system CPU of ``--repeats`` runs, read with ``os.wait4``), and multiplies it by
  the rule's number of jobs.  Measurements are cached (``--startup-cache``) under a key of the
  interpreter, ``PYTHONPATH`` and the code, so a re-run costs nothing.  Modules a job imports later,
  inside the functions it calls, count as science.
* **jobs' science**: each rule's ``benchmark:`` CPU (:mod:`gpbayes_repro.rule_profile`) less its
  start-up.
* **jobs' CPU outside the benchmark records**: Snakemake samples a job's process tree every 0.5 s
  (every 30 s after the first 15 s), so the CPU of the last interval of every job is not in its
  record; and the children Snakemake starts itself (the ILP scheduler's ``cbc`` solver, one ``bash``
  per job) have no record.  The kernel counts all of it in the Snakemake process's ``cutime +
  cstime`` (its waited-for children): that total less the records' sum is this line.  Needs a
  monitor log with the children's ticks (below).
* **the Snakemake process itself** (DAG, scheduling, checkpoint re-evaluation, polling, the
  benchmark sampling threads, metadata): its own ``utime + stime``, from the last line of a monitor
  log that sampled ``/proc/<snakemake pid>/stat``; one line per sample::

      <epoch s> pid=<pid> utime_ticks=<n> stime_ticks=<n> [cutime_ticks=<n> cstime_ticks=<n>] load=<1-min load>

  (ticks of ``1/--clock-ticks`` s, 100 on Linux; ``tools/monitor_snakemake.sh`` writes it).  The
  CPU after the last sample is missing (at most one sampling interval).
* **outside Snakemake** (``python -m venv`` + ``pip install`` when the timed command includes
  them): the total user + system CPU of ``/usr/bin/time -v`` (``--time``) less the Snakemake
  process and its children.  Without a monitor log with children's ticks, it is the total less
  the Snakemake process and the records, and then also holds the CPU the records miss.

The per-rule table gives jobs, the records' CPU, the start-up per job of the rule's script and its
share of the rule's CPU.  ``--no-startup`` skips the start-up measurement (the start-up columns
are then absent).  Missing inputs are named; a monitor log that never saw CPU (e.g. it sampled
``/usr/bin/time`` instead of its Snakemake child) is refused.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gpbayes_repro.rule_profile import RuleProfile, profile

__all__ = [
    "PREAMBLE_IMPORTS",
    "MonitorSummary",
    "TimeSummary",
    "KindRow",
    "rule_scripts",
    "script_imports",
    "process_cpu_s",
    "StartupCache",
    "read_monitor",
    "read_time",
    "kinds",
    "format_report",
    "main",
]

#: What Snakemake's script preamble imports before the script's own code runs (snakemake.script
#: ``PythonScript.generate_preamble``: ``pickle.loads`` of the ``snakemake`` object needs
#: ``snakemake.io``; then ``snakemake.logging`` and ``snakemake.iocontainers``).
PREAMBLE_IMPORTS = (
    "import sys, pickle\n"
    "import snakemake.io\n"
    "from snakemake.logging import logger\n"
    "from snakemake.iocontainers import Snakemake"
)

_RULE_RE = re.compile(r"(?m)^(?:rule|checkpoint) (\w+):")
_SCRIPT_RE = re.compile(r"(?m)^    script:\s*\n\s+[\"']([^\"']+)[\"']")


def rule_scripts(rules_dir) -> dict[str, Path]:
    """Rule (or checkpoint) name -> the ``script:`` it runs, for every ``*.smk`` in ``rules_dir``.

    Rules without a ``script:`` (e.g. ``all``) are left out; the path is resolved against the
    rules directory as Snakemake does.
    """
    rules_dir = Path(rules_dir)
    if not rules_dir.is_dir():
        raise FileNotFoundError(f"{rules_dir}: no rules directory (expected workflow/rules of the run)")
    out = {}
    for smk in sorted(rules_dir.glob("*.smk")):
        text = smk.read_text()
        starts = [(m.start(), m.group(1)) for m in _RULE_RE.finditer(text)] + [(len(text), None)]
        for (start, name), (end, _) in zip(starts, starts[1:]):
            m = _SCRIPT_RE.search(text, start, end)
            if m:
                out[name] = (rules_dir / m.group(1)).resolve()
    return out


def script_imports(path) -> str:
    """Every import statement of a script (top level and inside ``with job(...)``), in order, once each."""
    tree = ast.parse(Path(path).read_text(), filename=str(path))
    lines = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(dict.fromkeys(lines))


def process_cpu_s(code: str, python: str = sys.executable, env: dict | None = None) -> float:
    """User + system CPU seconds of one fresh ``python -c code`` (its own rusage, from ``os.wait4``)."""
    proc = subprocess.Popen([python, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{python} -c {code!r} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


class StartupCache:
    """Median start-up CPU of code run in fresh processes, measured once per (python, PYTHONPATH, code).

    ``path`` is a JSON file (created on the first save; ``None`` keeps it in memory).
    """

    def __init__(self, path=None, python: str = sys.executable, pythonpath: str | None = None, repeats: int = 5):
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        self.path = Path(path) if path else None
        self.python = python
        self.pythonpath = pythonpath if pythonpath is not None else os.environ.get("PYTHONPATH", "")
        self.repeats = repeats
        self._data = {}
        if self.path and self.path.exists():
            self._data = json.loads(self.path.read_text())

    def _key(self, code: str) -> str:
        return hashlib.sha256("\0".join([self.python, self.pythonpath, code]).encode()).hexdigest()[:20]

    def cpu_s(self, code: str) -> float:
        """The cached median, or ``repeats`` fresh measurements of ``code`` (one BLAS thread)."""
        key = self._key(code)
        if key not in self._data:
            env = {**os.environ, "PYTHONPATH": self.pythonpath, "OMP_NUM_THREADS": "1",
                   "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
            runs = [process_cpu_s(code, self.python, env) for _ in range(self.repeats)]
            self._data[key] = {"cpu_s": statistics.median(runs), "runs": runs, "code": code}
            self.save()
        return self._data[key]["cpu_s"]

    def save(self) -> None:
        """Write the cache atomically (nothing without a path)."""
        if not self.path:
            return
        from gpbayes_repro.io import atomic_path

        with atomic_path(self.path) as tmp:
            tmp.write_text(json.dumps(self._data, indent=1, sort_keys=True))


@dataclass(frozen=True)
class MonitorSummary:
    """The Snakemake process's CPU (s) at a monitor log's last sample; ``children_cpu_s`` is None
    when the log has no children's ticks."""

    pid: int
    samples: int
    span_s: float
    self_cpu_s: float
    children_cpu_s: float | None
    mean_load: float

    @property
    def self_core_share(self) -> float:
        """Mean share of one core the Snakemake process used between the first and last sample."""
        return self.self_cpu_s / self.span_s if self.span_s > 0 else float("nan")


_MON_RE = re.compile(r"^(\d+(?:\.\d+)?)\s+pid=(\d+)\s+(.*)$")


def read_monitor(path, clock_ticks: int = 100) -> MonitorSummary:
    """Summarise a monitor log (format in the module doc); ticks are cumulative, so the last line counts."""
    path = Path(path)
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        m = _MON_RE.match(line.strip())
        if not m:
            raise ValueError(f"{path}:{i}: not a monitor line ('<epoch> pid=<n> utime_ticks=<n> ...'): {line!r}")
        fields = dict(kv.split("=", 1) for kv in m.group(3).split() if "=" in kv)
        if "utime_ticks" not in fields or "stime_ticks" not in fields:
            raise ValueError(f"{path}:{i}: utime_ticks and stime_ticks expected, got {sorted(fields)}")
        rows.append((float(m.group(1)), int(m.group(2)), fields))
    if not rows:
        raise ValueError(f"{path}: no samples")
    pids = {r[1] for r in rows}
    if len(pids) != 1:
        raise ValueError(f"{path}: samples of several processes {sorted(pids)}; one Snakemake process expected")
    ticks = lambda f, *keys: sum(int(f[k]) for k in keys)
    own = [ticks(f, "utime_ticks", "stime_ticks") for _, _, f in rows]
    if any(b < a for a, b in zip(own, own[1:])):
        raise ValueError(f"{path}: the CPU ticks go down; not one process's cumulative counters")
    if own[-1] == 0:
        raise ValueError(f"{path}: pid {rows[0][1]} used no CPU in {len(rows)} samples: the log watched a "
                         "process that does no work (e.g. /usr/bin/time or a shell), not Snakemake itself")
    last = rows[-1][2]
    children = (ticks(last, "cutime_ticks", "cstime_ticks") / clock_ticks
                if "cutime_ticks" in last and "cstime_ticks" in last else None)
    loads = [float(f["load"]) for _, _, f in rows if "load" in f]
    return MonitorSummary(pid=rows[0][1], samples=len(rows), span_s=rows[-1][0] - rows[0][0],
                          self_cpu_s=own[-1] / clock_ticks, children_cpu_s=children,
                          mean_load=statistics.fmean(loads) if loads else float("nan"))


@dataclass(frozen=True)
class TimeSummary:
    """What ``/usr/bin/time -v`` reported: user + system CPU, wall (s), exit status."""

    user_s: float
    system_s: float
    wall_s: float
    exit_status: int | None

    @property
    def cpu_s(self) -> float:
        """User + system CPU seconds."""
        return self.user_s + self.system_s


def _clock_s(text: str) -> float:
    parts = [float(p) for p in text.strip().split(":")]
    s = 0.0
    for p in parts:
        s = 60 * s + p
    return s


def read_time(path) -> TimeSummary:
    """Parse the output of ``/usr/bin/time -v`` (GNU time)."""
    path = Path(path)
    text = path.read_text()

    def field(label, conv=float):
        m = re.search(rf"^\s*{re.escape(label)}[^:]*:\s*(.+)$", text, flags=re.M)
        if not m:
            return None
        return conv(m.group(1))

    user, system = field("User time (seconds)"), field("System time (seconds)")
    wall = field("Elapsed (wall clock) time", conv=lambda s: _clock_s(s.split(": ")[-1] if ": " in s else s))
    if user is None or system is None or wall is None:
        raise ValueError(f"{path}: not the output of /usr/bin/time -v (User time, System time, Elapsed expected)")
    return TimeSummary(user_s=user, system_s=system, wall_s=wall, exit_status=field("Exit status", int))


@dataclass(frozen=True)
class KindRow:
    """One line of the by-kind table: CPU seconds and how it was obtained."""

    kind: str
    cpu_s: float
    method: str


def kinds(rules: list[RuleProfile], startup: dict[str, float] | None, monitor: MonitorSummary | None,
          timing: TimeSummary | None) -> list[KindRow]:
    """The run's CPU by kind (see the module doc); lines whose inputs are missing are left out."""
    records = sum(r.cpu_s for r in rules)
    out = []
    if startup is not None:
        start = sum(r.jobs * startup.get(r.rule, 0.0) for r in rules)
        out.append(KindRow("jobs: start-up (interpreter, Snakemake preamble, script imports)", start,
                           "jobs x the rule's script's import CPU, measured in fresh processes"))
        out.append(KindRow("jobs: science (the records less their start-up)", records - start,
                           "benchmark records' cpu_time less the line above"))
    else:
        out.append(KindRow("jobs (benchmark records)", records, "sum of the benchmark records' cpu_time"))
    if monitor is not None and monitor.children_cpu_s is not None:
        out.append(KindRow("jobs: CPU outside the records (last sampling interval, bash, cbc)",
                           monitor.children_cpu_s - records,
                           "Snakemake's cutime+cstime at the last sample less the records"))
    if monitor is not None:
        out.append(KindRow("Snakemake process itself", monitor.self_cpu_s,
                           f"its utime+stime at the last of {monitor.samples} samples"))
    if timing is not None:
        if monitor is not None and monitor.children_cpu_s is not None:
            rest = timing.cpu_s - monitor.self_cpu_s - monitor.children_cpu_s
            out.append(KindRow("outside Snakemake's process tree (venv, pip install, if timed)", rest,
                               "/usr/bin/time total less the Snakemake process and its children"))
        elif monitor is not None:
            rest = timing.cpu_s - monitor.self_cpu_s - records
            out.append(KindRow("outside Snakemake and the records (venv, pip, jobs' unrecorded CPU)", rest,
                               "/usr/bin/time total less the Snakemake process and the records"))
        else:
            out.append(KindRow("outside the records (Snakemake, venv, pip, unrecorded)", timing.cpu_s - records,
                               "/usr/bin/time total less the records"))
    return out


def format_report(rules: list[RuleProfile], scripts: dict[str, Path], startup: dict[str, float] | None,
                  kind_rows: list[KindRow], monitor: MonitorSummary | None, timing: TimeSummary | None,
                  base_startup: dict[str, float] | None = None) -> str:
    """The two Markdown tables (by kind, by rule) with the inputs' summary lines."""
    lines = []
    total = timing.cpu_s if timing is not None else sum(k.cpu_s for k in kind_rows)
    lines.append("## CPU by kind\n")
    lines.append("| kind | CPU s | CPU min | share | how |")
    lines.append("|---|---|---|---|---|")
    for k in kind_rows:
        lines.append(f"| {k.kind} | {k.cpu_s:.1f} | {k.cpu_s / 60:.1f} | {100 * k.cpu_s / total:.1f}% | {k.method} |")
    label = "total (/usr/bin/time user + system)" if timing is not None else "total (sum of the lines)"
    lines.append(f"| **{label}** | {total:.1f} | {total / 60:.1f} | 100% | |")
    lines.append("")
    if timing is not None:
        lines.append(f"- /usr/bin/time: wall {timing.wall_s:.0f} s, user {timing.user_s:.1f} s, "
                     f"system {timing.system_s:.1f} s, exit status {timing.exit_status}")
    if monitor is not None:
        lines.append(f"- Snakemake process (pid {monitor.pid}): {monitor.self_cpu_s:.1f} CPU-s over "
                     f"{monitor.span_s:.0f} s sampled ({100 * monitor.self_core_share:.1f} % of one core), "
                     f"mean load {monitor.mean_load:.2f}")
    if base_startup:
        lines.append("- start-up of one job without script imports: "
                     + ", ".join(f"{k} {v:.3f} CPU-s" for k, v in base_startup.items()))
    lines.append("\n## CPU by rule (benchmark records)\n")
    head = "| rule | script | jobs | CPU s | CPU s / job |"
    if startup is not None:
        head += " start-up s / job | start-up s | start-up share |"
    lines.append(head)
    lines.append("|" + "---|" * (head.count("|") - 1))
    for r in rules:
        script = scripts.get(r.rule)
        line = f"| {r.rule} | {script.name if script else '-'} | {r.jobs} | {r.cpu_s:.1f} | {r.cpu_per_job_s:.2f} |"
        if startup is not None:
            s = startup.get(r.rule)
            if s is None:
                line += " - | - | - |"
            else:
                share = 100 * r.jobs * s / r.cpu_s if r.cpu_s > 0 else float("nan")
                line += f" {s:.2f} | {r.jobs * s:.1f} | {share:.0f}% |"
        lines.append(line)
    jobs = sum(r.jobs for r in rules)
    cpu = sum(r.cpu_s for r in rules)
    line = f"| **total** | | {jobs} | {cpu:.1f} | {cpu / max(jobs, 1):.2f} |"
    if startup is not None:
        st = sum(r.jobs * startup.get(r.rule, 0.0) for r in rules)
        line += f" {st / max(jobs, 1):.2f} | {st:.1f} | {100 * st / cpu if cpu else float('nan'):.0f}% |"
    lines.append(line)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    """Command line: ``python -m gpbayes_repro.run_profile RUN_DIR [--monitor F] [--time F] ...``."""
    ap = argparse.ArgumentParser(prog="python -m gpbayes_repro.run_profile", description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="the run's directory (holds benchmarks/ and workflow/rules/)")
    ap.add_argument("--benchmarks", type=Path, help="benchmark directory (default RUN/benchmarks)")
    ap.add_argument("--rules", type=Path, help="rules directory (default RUN/workflow/rules)")
    ap.add_argument("--monitor", type=Path, help="monitor log of the Snakemake process (format in the module doc)")
    ap.add_argument("--time", type=Path, help="output of /usr/bin/time -v around the run")
    ap.add_argument("--clock-ticks", type=int, default=os.sysconf("SC_CLK_TCK"), help="ticks per second of the monitor log")
    ap.add_argument("--no-startup", action="store_true", help="do not measure the jobs' start-up")
    ap.add_argument("--python", default=sys.executable, help="interpreter the jobs ran with (default: this one)")
    ap.add_argument("--pythonpath", help="PYTHONPATH the jobs had (default: this process's; e.g. RUN/src)")
    ap.add_argument("--repeats", type=int, default=5, help="fresh processes per start-up measurement (median)")
    ap.add_argument("--startup-cache", type=Path, default=Path.home() / ".cache" / "gpbayes_repro" / "startup_cpu.json",
                    help="JSON cache of start-up measurements")
    ap.add_argument("-o", "--output", type=Path, help="also write the report to this file")
    args = ap.parse_args(argv)

    rules = profile(args.benchmarks or args.run / "benchmarks")
    scripts = rule_scripts(args.rules or args.run / "workflow" / "rules")
    startup = base = None
    if not args.no_startup:
        cache = StartupCache(args.startup_cache, python=args.python, pythonpath=args.pythonpath, repeats=args.repeats)
        base = {"interpreter": cache.cpu_s("pass"), "with the Snakemake preamble": cache.cpu_s(PREAMBLE_IMPORTS)}
        startup = {}
        for r in rules:
            if r.rule in scripts:
                startup[r.rule] = cache.cpu_s(PREAMBLE_IMPORTS + "\n" + script_imports(scripts[r.rule]))
    monitor = read_monitor(args.monitor, args.clock_ticks) if args.monitor else None
    timing = read_time(args.time) if args.time else None
    report = format_report(rules, scripts, startup, kinds(rules, startup, monitor, timing), monitor, timing, base)
    print(report, end="")
    if args.output:
        from gpbayes_repro.io import atomic_path

        with atomic_path(args.output) as tmp:
            tmp.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
