"""Start-up cost of the workflow's jobs: the imports of every script under workflow/scripts/.

Each Snakemake job is a fresh Python process that imports what its script imports before
it computes anything.  For each script this runs ``python -X importtime -c "<its imports>"``
``--repeats`` times in fresh processes and reports the median cumulative import time (the
sum of the top-level modules' cumulative times, from ``-X importtime``), and the mean
over scripts.  ``--src`` points at another checkout's ``src`` (e.g. a ``git worktree`` of
the commit before a change) to compare the two in one run.

    OMP_NUM_THREADS=1 python benchmarks/bench_startup.py [--src /path/to/before/src] [--repeats 5]
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _common import write_csv

REPO = Path(__file__).resolve().parents[1]


def script_imports(path: Path) -> str:
    """The module-level import statements of a script (top of the file and inside ``with job(...)``)."""
    tree = ast.parse(path.read_text())
    lines = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(dict.fromkeys(lines))


def import_seconds(code: str, src: Path, repeats: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    totals = []
    for _ in range(repeats):
        res = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True,
                             text=True, check=True)
        total = 0
        for line in res.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
                total += int(parts[1])  # cumulative microseconds of a top-level import
        totals.append(total / 1e6)
    return statistics.median(totals)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=None, help="another checkout's src/ to compare against")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    scripts = sorted((REPO / "workflow" / "scripts").glob("*.py"))
    rows = []
    for s in scripts:
        code = script_imports(s)
        row = {"script": s.name, "seconds": round(import_seconds(code, REPO / "src", args.repeats), 3)}
        if args.src:
            row["seconds_other_src"] = round(import_seconds(code, args.src, args.repeats), 3)
        rows.append(row)
        print(row, flush=True)
    mean = statistics.mean(r["seconds"] for r in rows)
    print(f"mean over {len(rows)} scripts: {mean:.3f} s (this checkout)")
    if args.src:
        other = statistics.mean(r["seconds_other_src"] for r in rows)
        print(f"mean over {len(rows)} scripts: {other:.3f} s ({args.src})")
    write_csv(rows, REPO / "benchmarks" / "results" / "bench_startup.csv")


if __name__ == "__main__":
    main()
