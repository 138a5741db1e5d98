"""Where a workflow run spends its time, by rule, from Snakemake's ``benchmark:`` files.

Every rule that computes declares ``benchmark: "benchmarks/<rule>/<wildcards>.tsv"``
(``workflow/rules/*.smk``), so one job leaves one tab-separated record with its wall
time ``s``, its CPU time ``cpu_time`` (user + system of the job's processes, as
Snakemake's benchmark measures it) and its peak resident memory ``max_rss`` (MB).
:func:`profile` adds them up per rule; ``python -m gpbayes_repro.rule_profile``
prints the table, heaviest rule first::

    python -m gpbayes_repro.rule_profile benchmarks --csv results/rule_profile.csv

The share column is each rule's part of the run's total CPU time; ``startup_share``
is an estimate of the part of it spent before a job computes, using the per-job
start-up ``--startup-s`` measured by ``benchmarks/bench_startup.py`` (default 0,
i.e. not estimated).  A record that cannot be read (a job killed while Snakemake
wrote it) stops with the file's name.
"""

from __future__ import annotations

import argparse
import csv
import math
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RuleProfile", "profile", "read_record", "format_table", "main"]


@dataclass(frozen=True)
class RuleProfile:
    """Totals over the jobs of one rule (seconds; memory in MB)."""

    rule: str
    jobs: int
    wall_s: float
    cpu_s: float
    max_rss_mb: float

    @property
    def cpu_per_job_s(self) -> float:
        return self.cpu_s / self.jobs


def read_record(path) -> dict[str, float]:
    """The first measurement of one benchmark file: ``s``, ``cpu_time``, ``max_rss``.

    Snakemake writes a header line and one line per repeat; with ``repeat`` unset
    there is one.  ``max_rss`` is ``NA`` when the job ended before the first
    memory sample; it is read as 0.
    """
    path = Path(path)
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows or "s" not in rows[0] or "cpu_time" not in rows[0]:
        raise ValueError(f"{path}: not a Snakemake benchmark record (columns s and cpu_time expected)")

    def number(key):
        raw = rows[0].get(key, "NA")
        try:
            value = float(raw)
        except (TypeError, ValueError):
            if key == "max_rss" and raw in ("NA", "", "-"):
                return 0.0
            raise ValueError(f"{path}: column {key!r} holds {raw!r}, not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"{path}: column {key!r} holds {raw!r}")
        return value

    return {"s": number("s"), "cpu_time": number("cpu_time"), "max_rss": number("max_rss")}


def profile(root) -> list[RuleProfile]:
    """Per-rule totals of every ``<root>/<rule>/*.tsv`` record, largest CPU time first."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no benchmark directory (run the workflow first)")
    out = []
    for rule_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        records = [read_record(f) for f in sorted(rule_dir.rglob("*.tsv"))]
        if not records:
            continue
        out.append(RuleProfile(
            rule=rule_dir.name,
            jobs=len(records),
            wall_s=sum(r["s"] for r in records),
            cpu_s=sum(r["cpu_time"] for r in records),
            max_rss_mb=max(r["max_rss"] for r in records),
        ))
    out.sort(key=lambda r: (-r.cpu_s, r.rule))
    return out


def format_table(rows: list[RuleProfile], startup_s: float = 0.0) -> str:
    """A Markdown table of ``rows`` with each rule's share of the total CPU time."""
    total = sum(r.cpu_s for r in rows) or 1.0
    head = "| rule | jobs | CPU s | share | CPU s / job | wall s | peak RSS MB |"
    if startup_s > 0:
        head += " start-up share |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        line = (f"| {r.rule} | {r.jobs} | {r.cpu_s:.1f} | {100 * r.cpu_s / total:.1f}% | "
                f"{r.cpu_per_job_s:.2f} | {r.wall_s:.1f} | {r.max_rss_mb:.0f} |")
        if startup_s > 0:
            line += f" {100 * min(1.0, r.jobs * startup_s / r.cpu_s) if r.cpu_s > 0 else 0:.0f}% |"
        lines.append(line)
    jobs = sum(r.jobs for r in rows)
    lines.append(f"| **total** | {jobs} | {sum(r.cpu_s for r in rows):.1f} | 100% | | "
                 f"{sum(r.wall_s for r in rows):.1f} | |" + (" |" if startup_s > 0 else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpbayes_repro.rule_profile", description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="benchmarks", help="the run's benchmark directory (default: benchmarks)")
    parser.add_argument("--csv", help="also write the table as CSV to this path")
    parser.add_argument("--startup-s", type=float, default=0.0, help="per-job start-up CPU seconds, to estimate its share")
    args = parser.parse_args(argv)
    rows = profile(args.root)
    print(format_table(rows, args.startup_s))
    if args.csv:
        from gpbayes_repro.io import atomic_path

        with atomic_path(args.csv) as tmp, open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["rule", "jobs", "cpu_s", "wall_s", "cpu_per_job_s", "max_rss_mb"])
            for r in rows:
                w.writerow([r.rule, r.jobs, f"{r.cpu_s:.3f}", f"{r.wall_s:.3f}", f"{r.cpu_per_job_s:.4f}", f"{r.max_rss_mb:.1f}"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
