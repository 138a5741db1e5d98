"""The run facts the README and the workflow guide state — time, CPU, jobs — generated from one measurement file.

``benchmarks/results/run_facts.json`` holds what a measured run left behind (issue 34, item 4):

* ``runs.<scale>``: one fresh-clone run of the README's first command under ``/usr/bin/time -v``
  (``python3 -m venv .venv && .venv/bin/pip install -q -e ".[workflow]" && .venv/bin/snakemake
  --cores 2``): its wall and CPU time (pip install included), the Snakemake process's own CPU from a
  ``tools/monitor_snakemake.sh`` log, the jobs Snakemake ran (its log's last "N of M steps"), the
  jobs' ``benchmark:`` CPU in all and per rules file (one per paper), the commit, the CPU model and
  core count, the load average before and after (``uptime``);
* ``planned_jobs.<scale>``: the jobs a dry run plans at each scale before any checkpoint adds its
  blocks (``snakemake -n --quiet rules --config scale=<scale>`` in a clean export of the run's
  commit), so the docs' job counts need no dry run in a test.

``python -m gpbayes_repro.run_facts record <run dir> --time T --monitor M --uptime-start U0
--uptime-end U1`` writes (or updates the scale's entry of) the file; ``python -m
gpbayes_repro.run_facts --update`` rewrites the generated blocks of README.md and docs/workflow.md
from it (between ``<!-- run-facts:<name>:begin ... -->`` and ``<!-- run-facts:<name>:end -->``);
``--check`` only says whether they are current (tests/test_run_facts.py fails when they drift).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

__all__ = [
    "FACTS",
    "SCALES",
    "PARTS",
    "read_uptime",
    "cpu_model",
    "steps_done",
    "rules_files",
    "planned_jobs",
    "record",
    "readme_block",
    "scales_block",
    "generated_blocks",
    "markers",
    "update_file",
    "main",
]

#: the committed facts file, relative to the repository root
FACTS = Path("benchmarks/results/run_facts.json")
#: the scales a dry run counts, in the order the docs list them
SCALES = ("smoke", "default", "decide", "paper")
#: rules file (workflow/rules/<stem>.smk) -> the part of the reproduction it runs
PARTS = {
    "regression_mh": "foundation (regression MH)",
    "pm_gpc": "Filippone & Girolami 2014",
    "pm_gpc_capacity": "Filippone & Girolami 2014",
    "slice_ma": "Murray & Adams 2010",
    "amis": "Xiong et al. (AMIS)",
    "sparse_mcmc": "Hensman et al. 2015",
    "gplvm": "Gadd et al. (GPLVM)",
    "data": "data preparation and claims",
    "claims": "data preparation and claims",
}

_LOAD_RE = re.compile(r"load average:\s*([\d.]+),\s*([\d.]+),\s*([\d.]+)")
_STEPS_RE = re.compile(r"(\d+) of (\d+) steps \((\d+)%\) done")
_TOTAL_RE = re.compile(r"(?m)^total\s+(\d+)\s*$")


def read_uptime(path) -> list[float]:
    """The 1-, 5- and 15-minute load averages of a saved ``uptime`` line."""
    path = Path(path)
    m = _LOAD_RE.search(path.read_text())
    if not m:
        raise ValueError(f"{path}: no 'load average: a, b, c' (the output of uptime expected)")
    return [float(x) for x in m.groups()]


def cpu_model(cpuinfo="/proc/cpuinfo") -> tuple[str, int]:
    """(model name, logical CPUs) from ``/proc/cpuinfo``."""
    text = Path(cpuinfo).read_text()
    models = re.findall(r"(?m)^model name\s*:\s*(.+?)\s*$", text)
    if not models:
        raise ValueError(f"{cpuinfo}: no 'model name' line")
    return models[0], len(re.findall(r"(?m)^processor\s*:", text)) or len(models)


def steps_done(run_dir, log=None) -> tuple[int, int]:
    """(jobs done, jobs in all) of the run's latest Snakemake log (``.snakemake/log/*.snakemake.log``), or
    of ``log``: its last "N of M steps (P%) done" line."""
    logs = [Path(log)] if log else sorted((Path(run_dir) / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        raise FileNotFoundError(f"{run_dir}/.snakemake/log: no Snakemake log (a run directory expected)")
    found = _STEPS_RE.findall(logs[-1].read_text())
    if not found:
        raise ValueError(f"{logs[-1]}: no 'N of M steps (P%) done' line: the run did no job")
    done, total, _ = found[-1]
    return int(done), int(total)


def rules_files(rules_dir) -> dict[str, str]:
    """Rule (or checkpoint) name -> the stem of the ``workflow/rules/*.smk`` file that defines it."""
    out = {}
    for smk in sorted(Path(rules_dir).glob("*.smk")):
        for name in re.findall(r"(?m)^(?:rule|checkpoint) (\w+):", smk.read_text()):
            out[name] = smk.stem
    return out


def planned_jobs(source, commit: str = "HEAD", scales=SCALES, snakemake=None) -> dict[str, int]:
    """Jobs a dry run plans per scale (before the checkpoints add theirs), in a clean export of ``commit``.

    ``source`` is a git checkout; ``git archive`` exports the commit (no results, so every job is
    planned) and ``snakemake -n --quiet rules --config scale=<scale>`` reports its "total".
    """
    snakemake = snakemake or [sys.executable, "-m", "snakemake"]
    out = {}
    with tempfile.TemporaryDirectory(prefix="run_facts_") as tmp:
        archive = subprocess.run(["git", "-C", str(source), "archive", commit], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        for scale in scales:
            proc = subprocess.run([*snakemake, "-n", "--quiet", "rules", "--cores", "1", "--config", f"scale={scale}"],
                                  cwd=tmp, env=env, capture_output=True, text=True)
            m = _TOTAL_RE.search(proc.stdout + proc.stderr)
            if proc.returncode != 0 or not m:
                raise RuntimeError(f"dry run at scale={scale} of {commit} failed ({proc.returncode}): "
                                   f"{(proc.stdout + proc.stderr)[-2000:]}")
            out[scale] = int(m.group(1))
    return out


def _git(run_dir, *args) -> str:
    return subprocess.run(["git", "-C", str(run_dir), *args], check=True, capture_output=True, text=True).stdout.strip()


def record(run_dir, time_path, monitor_path, uptime_start, uptime_end, *, scale: str = "default",
           command: str | None = None, planned: dict[str, int] | None = None, facts: dict | None = None,
           cpuinfo="/proc/cpuinfo", allow_partial: bool = False, commit: str | None = None,
           planned_commit: str | None = None, benchmarks=None, rules_dir=None, snakemake_log=None) -> dict:
    """``facts`` (or a new dict) with ``runs[scale]`` measured from a finished run and ``planned_jobs``
    updated by ``planned`` (module doc).

    The timed command must have ended by itself with exit status 0 and Snakemake's log must say
    100 % of its steps done; ``allow_partial`` records a stopped run anyway, marked ``"partial": true``
    (for development: the docs state no partial run).  ``commit`` defaults to the run directory's
    ``git rev-parse HEAD``, ``planned_commit`` (the commit the dry runs exported) to ``commit``.
    ``benchmarks``, ``rules_dir`` and ``snakemake_log`` default to the run directory's
    ``benchmarks/``, ``workflow/rules/`` and latest ``.snakemake/log`` file: pass them when the
    directory has been used since (e.g. a saved copy of the records, the rules of the run's commit).
    """
    from gpbayes_repro.rule_profile import profile
    from gpbayes_repro.run_profile import read_monitor, read_time

    run_dir = Path(run_dir)
    t = read_time(time_path)
    killed = re.search(r"Command terminated by signal (\d+)", Path(time_path).read_text())
    problems = ([f"{time_path}: the timed command was killed by signal {killed.group(1)}"] if killed else []) + (
        [f"{time_path}: the timed command ended with exit status {t.exit_status}"] if t.exit_status not in (0, None) else [])
    mon = read_monitor(monitor_path)
    rules = profile(Path(benchmarks) if benchmarks else run_dir / "benchmarks")
    of_rule = rules_files(Path(rules_dir) if rules_dir else run_dir / "workflow" / "rules")
    by_file: dict[str, float] = {}
    for r in rules:
        stem = of_rule.get(r.rule)
        if stem is None:
            raise ValueError(f"benchmarks/{r.rule}: no rule {r.rule!r} in {run_dir}/workflow/rules/*.smk")
        by_file[stem] = by_file.get(stem, 0.0) + r.cpu_s
    done, total = steps_done(run_dir, snakemake_log)
    if done != total:
        problems.append(f"{run_dir}: Snakemake's log says {done} of {total} steps done")
    if problems and not allow_partial:
        raise ValueError("; ".join(problems) + " (a finished run expected; allow_partial records it marked partial)")
    model, cpus = cpu_model(cpuinfo)
    entry = {
        "commit": commit or _git(run_dir, "rev-parse", "HEAD"),
        "command": command or "python3 -m venv .venv && .venv/bin/pip install -q -e \".[workflow]\" && "
                              ".venv/bin/snakemake --cores 2",
        "finished_utc": datetime.fromtimestamp(Path(time_path).stat().st_mtime, timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "cpu_model": model,
        "logical_cpus": cpus,
        "wall_s": round(t.wall_s, 2),
        "user_s": round(t.user_s, 2),
        "system_s": round(t.system_s, 2),
        "snakemake_process_cpu_s": round(mon.self_cpu_s, 2),
        "snakemake_children_cpu_s": None if mon.children_cpu_s is None else round(mon.children_cpu_s, 2),
        "monitor_mean_load": round(mon.mean_load, 2),
        "load_before": read_uptime(uptime_start),
        "load_after": read_uptime(uptime_end),
        "jobs_done": done,
        "jobs_total": total,
        "benchmark_records": sum(r.jobs for r in rules),
        "benchmark_cpu_s": round(sum(r.cpu_s for r in rules), 2),
        "benchmark_cpu_s_by_rules_file": {k: round(v, 2) for k, v in sorted(by_file.items())},
    }
    if problems:
        entry["partial"] = True
    facts = dict(facts or {})
    facts.setdefault("runs", {})[scale] = entry
    if planned:
        facts["planned_jobs"] = {**facts.get("planned_jobs", {}), **planned}
        facts["planned_jobs_commit"] = planned_commit or entry["commit"]
    return facts


def _min(s: float) -> str:
    return f"{s / 60:.0f}" if s >= 600 else f"{s / 60:.1f}"


def _cpu_s(run: dict) -> float:
    return run["user_s"] + run["system_s"]


def _loads(run: dict) -> str:
    return (f"1-min load average {run['load_before'][0]:.2f} before, {run['monitor_mean_load']:.1f} during (mean of "
            f"the monitor's samples; the run's own 2 jobs make 2), {run['load_after'][0]:.2f} after")


def readme_block(facts: dict) -> str:
    """README's sentence on the default run's cost."""
    run = facts.get("runs", {}).get("default")
    if run is None:
        return "The default run's time and CPU have not been measured end to end yet (benchmarks/results/run_facts.json)."
    return (f"Measured on {run['cpu_model']} ({run['logical_cpus']} cores; commit {run['commit'][:7]}, fresh clone, "
            f"pip install included): the default run takes **{_min(run['wall_s'])} minutes** of wall time and "
            f"**{_min(_cpu_s(run))} CPU-minutes**, {run['jobs_done']} jobs"
            + (f", on a shared machine (mean load {run['monitor_mean_load']:.1f} on {run['logical_cpus']} cores: "
               "an idle machine's wall time is shorter)" if run["monitor_mean_load"] > run["logical_cpus"] + 0.5 else "")
            + " (`benchmarks/results/run_facts.json`; more in the [workflow guide](docs/workflow.md#scales)).")


def scales_block(facts: dict) -> str:
    """docs/workflow.md's table of the scales: jobs planned and run, wall and CPU where measured."""
    planned = facts.get("planned_jobs", {})
    runs = facts.get("runs", {})
    lines = ["| scale | jobs planned (dry run) | jobs run | wall | CPU-minutes (pip install included) | "
             "Snakemake process | measured |", "|---|---:|---:|---:|---:|---:|---|"]
    for scale in SCALES:
        p = f"{planned[scale]:,}" if scale in planned else "not counted"
        run = runs.get(scale)
        if run is None:
            lines.append(f"| {scale} | {p} | | | | | no measured run in run_facts.json |")
            continue
        cpu = _cpu_s(run)
        lines.append(f"| {scale} | {p} | {run['jobs_done']:,} | {_min(run['wall_s'])} min | {_min(cpu)} | "
                     f"{100 * run['snakemake_process_cpu_s'] / cpu:.1f} % of the CPU | {run['finished_utc']} UTC, "
                     f"commit {run['commit'][:7]}, {run['cpu_model']}, {run['logical_cpus']} cores, "
                     f"{_loads(run)} |")
    text = "\n".join(lines) + "\n"
    if "planned_jobs_commit" in facts:
        text += (f"\nJobs planned: `snakemake -n --quiet rules --config scale=<scale>` in a clean export of "
                 f"commit {facts['planned_jobs_commit'][:7]}, before the checkpoints add the blocks of the "
                 "sequential looks.")
    run = runs.get("default")
    if run is not None:
        parts: dict[str, float] = {}
        for stem, s in run["benchmark_cpu_s_by_rules_file"].items():
            label = PARTS.get(stem, stem)
            parts[label] = parts.get(label, 0.0) + s
        text += (f" The default run's jobs' own CPU (their `benchmark:` records, {run['benchmark_records']} jobs): "
                 f"{_min(run['benchmark_cpu_s'])} CPU-minutes — "
                 + ", ".join(f"{k} {_min(v)}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
                 + ". The rest is pip install, the Snakemake process and the jobs' CPU outside their records "
                   "(`python -m gpbayes_repro.run_profile`).")
    return text + "\n"


def generated_blocks(root=".") -> dict[tuple[str, str], str]:
    """``{(file, block name): text}`` of every run-facts block, from ``root``'s committed facts file."""
    root = Path(root)
    facts = json.loads((root / FACTS).read_text())
    partial = [s for s, r in facts.get("runs", {}).items() if r.get("partial")]
    if partial:
        raise ValueError(f"{root / FACTS}: runs {partial} are partial (recorded with allow_partial); the docs state "
                         "finished runs only")
    return {(str(root / "README.md"), "readme"): readme_block(facts),
            (str(root / "docs" / "workflow.md"), "scales"): scales_block(facts)}


def markers(name: str) -> tuple[str, str]:
    """The begin and end lines of the generated block ``name``."""
    return (f"<!-- run-facts:{name}:begin (generated by python -m gpbayes_repro.run_facts --update) -->",
            f"<!-- run-facts:{name}:end -->")


def update_file(path, name: str, text: str, *, check: bool = False) -> bool:
    """Replace the block ``name`` of ``path`` by ``text``; True when it changed (``check``: write nothing).

    A file without the block's markers, or with them twice, is refused (``verdict_table.replace_block``).
    """
    from gpbayes_repro.verdict_table import replace_block

    return replace_block(path, *markers(name), text, check=check)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpbayes_repro.run_facts", description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite the run-facts blocks of README.md and docs/workflow.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when a block is out of date (write nothing)")
    ap.add_argument("--root", default=".", help="the repository (default: .)")
    sub = ap.add_subparsers(dest="cmd")
    rec = sub.add_parser("record", help="measure a finished run into the facts file")
    rec.add_argument("run_dir")
    rec.add_argument("--time", required=True, help="the /usr/bin/time -v output of the timed command")
    rec.add_argument("--monitor", required=True, help="tools/monitor_snakemake.sh log of the Snakemake process")
    rec.add_argument("--uptime-start", required=True, help="`uptime` saved before the run")
    rec.add_argument("--uptime-end", required=True, help="`uptime` saved after the run")
    rec.add_argument("--scale", default="default", choices=SCALES)
    rec.add_argument("--command", help="the timed command (default: the README's first command)")
    rec.add_argument("--dry-run-scales", nargs="*", default=list(SCALES),
                     help="scales whose planned jobs a dry run counts (default: all; none: keep the file's)")
    rec.add_argument("--snakemake", help="the snakemake executable for the dry runs (default: python -m snakemake)")
    rec.add_argument("--commit", help="the run's commit (default: the run directory's HEAD)")
    rec.add_argument("--benchmarks", help="the run's benchmark records (default: <run dir>/benchmarks)")
    rec.add_argument("--rules-dir", help="the run's workflow/rules (default: <run dir>/workflow/rules)")
    rec.add_argument("--snakemake-log", help="the run's Snakemake log (default: the latest in <run dir>/.snakemake/log)")
    rec.add_argument("--allow-partial", action="store_true", help="record a stopped run, marked partial")
    rec.add_argument("-o", "--out", default=str(FACTS), help=f"the facts file (default: {FACTS})")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        out = Path(args.out)
        facts = json.loads(out.read_text()) if out.exists() else {}
        commit = args.commit or _git(args.run_dir, "rev-parse", "HEAD")
        planned = (planned_jobs(args.run_dir, commit, args.dry_run_scales,
                                [args.snakemake] if args.snakemake else None) if args.dry_run_scales else None)
        facts = record(args.run_dir, args.time, args.monitor, args.uptime_start, args.uptime_end, scale=args.scale,
                       command=args.command, planned=planned, facts=facts, allow_partial=args.allow_partial,
                       commit=commit, benchmarks=args.benchmarks, rules_dir=args.rules_dir,
                       snakemake_log=args.snakemake_log)
        from gpbayes_repro.io import atomic_path

        with atomic_path(out) as tmp:
            tmp.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
        print(f"{out}: runs.{args.scale} from {args.run_dir}" + (f", planned jobs {planned}" if planned else ""))
        return 0
    if args.update or args.check:
        stale = []
        for (path, name), text in generated_blocks(args.root).items():
            changed = update_file(path, name, text, check=args.check)
            if changed:
                stale.append(f"{path} [{name}]")
            print(f"{path} [{name}]: {('out of date' if args.check else 'updated') if changed else 'unchanged'}")
        return 1 if args.check and stale else 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
