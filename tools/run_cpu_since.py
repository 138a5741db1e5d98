"""CPU of the jobs a workflow run ran after an epoch, per rule and per paper (their benchmark: records, by mtime).

    python tools/run_cpu_since.py <run dir> <epoch s> [<until epoch s>]

Used for the decide tier's CPU per paper (benchmarks/results/decide_scale/README.md): the decide run reuses the
default run's jobs, so its own jobs are the records written after it started.
"""
import sys, csv
from pathlib import Path
root, since = Path(sys.argv[1]), float(sys.argv[2])
until = float(sys.argv[3]) if len(sys.argv) > 3 else float("inf")
PAPER = {"pm_gpc": "F&G 2014", "slice_ma": "M&A 2010", "amis": "Xiong et al.", "sparse_mcmc": "Hensman et al.",
         "gplvm": "Gadd et al.", "regression_mh": "foundation", "claims": "claims page", "prepare": "data"}
per_rule = {}
for f in (root / "benchmarks").rglob("*.tsv"):
    m = f.stat().st_mtime
    if not (since <= m <= until):
        continue
    rows = list(csv.DictReader(open(f), delimiter="\t"))
    if not rows:
        continue
    cpu = sum(float(r.get("cpu_time") or 0) for r in rows)
    wall = sum(float(r.get("s") or 0) for r in rows)
    rule = f.parent.name
    d = per_rule.setdefault(rule, [0, 0.0, 0.0])
    d[0] += 1; d[1] += cpu; d[2] += wall
per_paper = {}
for rule, (n, cpu, wall) in sorted(per_rule.items(), key=lambda kv: -kv[1][1]):
    paper = next((v for k, v in PAPER.items() if rule.startswith(k)), "other")
    per_paper[paper] = per_paper.get(paper, 0.0) + cpu
    print(f"{rule:40s} jobs {n:4d}  CPU {cpu/60:7.2f} min  wall {wall/60:7.2f} min  [{paper}]")
print("---")
for p, c in sorted(per_paper.items(), key=lambda kv: -kv[1]):
    print(f"{p:20s} {c/60:7.2f} CPU-min")
print(f"total {sum(per_paper.values())/60:.2f} CPU-min over {sum(v[0] for v in per_rule.values())} jobs")
