"""CPU per counted O(n^3) operation, per rule, against one LAPACK Cholesky of the same n (issue 34).

The papers measure cost in O(n^3) operations (Filippone & Girolami 2014, Table II; Xiong et al.,
Sec. 4.4), and ``gpbayes.linalg`` counts every one a job makes (Cholesky factorisations, triangular
solves with an n x n right-hand side, inverses, n x n x n products).  A method whose cost is those
operations cannot run faster than its count times the time of one of them, so

    ratio = (rule's benchmark CPU-s) / sum over the rule's outputs of (counted ops x t_chol(n))

is 1 at the physical floor (every second spent in O(n^3) work as fast as LAPACK does it) and above
it by the overhead per operation: Python, the O(n^2) work between factorisations, start-up, I/O.
``t_chol(n)`` is the median CPU time of one ``scipy.linalg.cholesky`` of an n x n SPD matrix with
one BLAS thread, measured on this machine and cached (:class:`CholeskyTimer`).

``python -m gpbayes_repro.ops_profile <run dir> [--csv OUT]`` reads

* the run's ``benchmarks/<rule>/*.tsv`` records (:func:`gpbayes_repro.rule_profile.profile`): jobs
  and CPU-s per rule;
* which rule wrote which output: Snakemake's own record of every finished output,
  ``.snakemake/metadata/<urlsafe base64 of the path>`` (its ``rule`` field), so outputs named by
  f-strings or ``expand`` and jobs with many outputs need no parsing of ``workflow/rules/*.smk``;
* each ``.nc`` output's counted operations and matrix size (:func:`counted_operations`).

Rules whose outputs hold no counted operations are listed as "no counted operations"; so are
rules that only copy their inputs' counts (:data:`COPIES_INPUT_COUNTS`), so no operation is counted
twice.  Where a chain file records its draws' operations but not its warm-up's, the ratio
over-states the overhead: the ``warm-up`` column says which files counted theirs.
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import math
import os
import platform
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from gpbayes_repro.rule_profile import profile

__all__ = [
    "COPIES_INPUT_COUNTS",
    "Counted",
    "RuleOps",
    "counted_operations",
    "rule_outputs",
    "CholeskyTimer",
    "cholesky_cpu_s",
    "ops_profile",
    "format_table",
    "write_csv",
    "main",
]

#: rules whose ``.nc`` outputs carry counts made by another rule's jobs (the reason beside each)
COPIES_INPUT_COUNTS = {
    "regression_mh_merge": "concatenates regression_mh_chains' chains (their n_cubic copied)",
    "pm_gpc_capacity_collect": "collects pm_gpc_capacity_split's scores (their n_cubic copied)",
    "regression_mh_diagnostics": "diagnostics of regression_mh_chains' chains",
}

#: sample-stat variables that are parts of ``n_cubic`` (already in it), never added to it
_SUBSET_STATS = ("n_cubic_theta", "n_cubic_init")


@dataclass(frozen=True)
class Counted:
    """The O(n^3) operations one output file counts: ``ops``, the matrix size ``n`` (None when the
    file does not say), ``warmup`` True/False whether the warm-up's operations are in ``ops``
    (None when the file has no warm-up), ``source`` which record was read."""

    ops: float
    n: int | None
    warmup: bool | None
    source: str


def _attrs(group) -> dict:
    return {k: group.getncattr(k) for k in group.ncattrs()}


def _total(var) -> float:
    import numpy as np

    a = np.ma.filled(var[...].astype(float), np.nan)
    return float(np.nansum(a))


def _matrix_size(ds, path: Path) -> int | None:
    """The size of the matrices the file's O(n^3) operations factorise.

    In order: ``M`` (sparse GPs factorise M x M inducing-point matrices), ``n``, ``n_train`` in the
    attributes of the root, ``sample_stats`` or ``posterior``; the recorded config's
    ``settings.n_inducing`` (the GPLVM's M); the ``n<digits>`` of the file name
    (``proposal_n200_d10_ard.nc``).
    """
    groups = [ds] + [ds.groups[g] for g in ("sample_stats", "posterior") if g in ds.groups]
    for key in ("M", "n", "n_train"):
        for g in groups:
            if key in g.ncattrs():
                return int(g.getncattr(key))
    for g in groups:
        if "config" in g.ncattrs():
            try:
                settings = json.loads(g.getncattr("config")).get("settings", {})
            except (TypeError, ValueError):
                continue
            if isinstance(settings, dict) and "n_inducing" in settings:
                return int(settings["n_inducing"])
    m = re.search(r"(?:^|_)n(\d+)(?:_|$)", path.stem)
    return int(m.group(1)) if m else None


def counted_operations(path, inputs=()) -> Counted | None:
    """The O(n^3) operations counted in one ``.nc`` output, or None when it counts none.

    Read, first match wins:

    1. ``n_cubic(classifier)`` (``pm_gpc_capacity``'s cost per classifier): their sum, less
       ``mcmc_ep``'s once when ``mcmc_pm_ep`` is present, whose cost includes MCMC-EP's as its
       adaptive phase (``experiments/pm_gpc_capacity.py``);
    2. ``sample_stats``' per-draw ``n_cubic`` and ``n_cubic_<method>`` (not their parts
       ``n_cubic_theta``, ``n_cubic_init``), plus the warm-up's ``warmup_n_cubic*`` per chain (or
       the group's ``warmup_n_cubic`` attribute when there is no such variable);
    3. ``cost`` (AMIS runs and references: cumulative operations per replicate along ``point`` or
       ``iteration``): the last finite value of each replicate, summed;
    4. the ``tune_n_cubic`` attribute (a proposal's tuning run).

    The matrix size is the file's own (:func:`_matrix_size`), else that of the first of ``inputs``
    (the job's input files, e.g. the ML fit of the data set a chain samples) that states one.
    """
    import netCDF4
    import numpy as np

    path = Path(path)
    with netCDF4.Dataset(path) as ds:
        n = _matrix_size(ds, path)
        for extra in inputs:
            if n is not None:
                break
            if Path(extra).suffix == ".nc" and Path(extra).exists():
                with netCDF4.Dataset(extra) as ds_in:
                    n = _matrix_size(ds_in, Path(extra))
        v = ds.variables
        if "n_cubic" in v and v["n_cubic"].dimensions == ("classifier",):
            costs = np.asarray(v["n_cubic"][...], dtype=float)
            names = [str(c) for c in np.asarray(v["classifier"][...])] if "classifier" in v else []
            total = float(costs.sum())
            if "mcmc_ep" in names and "mcmc_pm_ep" in names:
                total -= float(costs[names.index("mcmc_ep")])
            return Counted(total, n, None, "n_cubic(classifier)")
        if "sample_stats" in ds.groups:
            ss = ds.groups["sample_stats"]
            draws = [k for k in ss.variables if (k == "n_cubic" or k.startswith("n_cubic_"))
                     and k not in _SUBSET_STATS]
            if draws:
                ops = sum(_total(ss.variables[k]) for k in draws)
                warm = [k for k in ss.variables if k.startswith("warmup_n_cubic")
                        and k[len("warmup_"):] not in _SUBSET_STATS]
                if warm:
                    return Counted(ops + sum(_total(ss.variables[k]) for k in warm), n, True,
                                   "sample_stats n_cubic + warmup_n_cubic")
                if "warmup_n_cubic" in ss.ncattrs():
                    return Counted(ops + float(ss.getncattr("warmup_n_cubic")), n, True,
                                   "sample_stats n_cubic + warmup_n_cubic attribute")
                return Counted(ops, n, False, "sample_stats n_cubic (no warm-up count)")
        if "cost" in v:
            cost = np.ma.filled(np.asarray(v["cost"][...], dtype=float), np.nan)
            cost = cost.reshape(-1, cost.shape[-1]) if cost.ndim > 1 else cost.reshape(1, -1)
            last = [row[np.isfinite(row)][-1] for row in cost if np.isfinite(row).any()]
            return Counted(float(sum(last)), n, None, "cost (cumulative, last point per replicate)")
        if "tune_n_cubic" in ds.ncattrs():
            return Counted(float(ds.getncattr("tune_n_cubic")), n, None, "tune_n_cubic")
    return None


def rule_outputs(run_dir, until: float | None = None) -> dict[str, list[tuple[Path, list[Path], bool]]]:
    """Rule -> (output file, the job's input files, re-made later) of every existing output Snakemake recorded for it
    (``.snakemake/metadata``).

    A record's file name is the url-safe base64 of the output's path (split into ``@``-prefixed
    directories when longer than the file-name limit, as ``snakemake.persistence`` writes it).
    Records of outputs that no longer exist or that Snakemake marked incomplete are skipped, and
    with ``until`` (epoch seconds) the third item says the job ended later (a later run in the same
    directory re-made the file, so it is not the measured run's).
    """
    run_dir = Path(run_dir)
    meta = run_dir / ".snakemake" / "metadata"
    if not meta.is_dir():
        raise FileNotFoundError(f"{meta}: no Snakemake metadata (the run directory of a finished run expected)")
    out: dict[str, list[tuple[Path, list[Path], bool]]] = {}
    for root, _, files in os.walk(meta):
        for name in files:
            parts = Path(root, name).relative_to(meta).parts
            b64 = "".join(p[1:] if p.startswith("@") else p for p in parts)
            try:
                rel = base64.urlsafe_b64decode(b64).decode()
                rec = json.loads(Path(root, name).read_text())
            except (ValueError, UnicodeDecodeError):
                continue  # not a record (e.g. an editor's backup file)
            target = run_dir / rel
            if rec.get("incomplete") or not target.exists() or "rule" not in rec:
                continue
            late = until is not None and (rec.get("endtime") or 0) > until
            out.setdefault(rec["rule"], []).append((target, [run_dir / i for i in rec.get("input") or []], late))
    return {r: sorted(p) for r, p in out.items()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cholesky_cpu_s(n: int, repeats: int = 7, min_batch_s: float = 0.02) -> list[float]:
    """CPU seconds of one ``scipy.linalg.cholesky`` (lower, LAPACK ``dpotrf``) of an n x n SPD matrix.

    One BLAS thread (``threadpoolctl``); each of the ``repeats`` measurements times a batch of
    factorisations of a fresh copy long enough to take ``min_batch_s`` of CPU and divides by its
    size (``time.process_time``: this process's user + system CPU).
    """
    import numpy as np
    import scipy.linalg
    from threadpoolctl import threadpool_limits

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    K = np.asfortranarray(A @ A.T + n * np.eye(n))
    out = []
    with threadpool_limits(limits=1):
        scipy.linalg.cholesky(K, lower=True)  # warm caches and the LAPACK dispatch
        batch = 1
        while True:
            t0 = time.process_time()
            for _ in range(batch):
                scipy.linalg.cholesky(K, lower=True)
            dt = time.process_time() - t0
            if dt >= min_batch_s or batch >= 1 << 20:
                break
            batch *= 4
        for _ in range(repeats):
            t0 = time.process_time()
            for _ in range(batch):
                scipy.linalg.cholesky(K, lower=True)
            out.append((time.process_time() - t0) / batch)
    return out


class CholeskyTimer:
    """Median CPU-s of one Cholesky of size n (:func:`cholesky_cpu_s`), measured once per n and machine.

    ``path`` is a JSON cache (None keeps it in memory) keyed by the CPU model, numpy's and scipy's
    versions and n, so a cache copied to another machine is measured afresh.
    """

    def __init__(self, path=None, repeats: int = 7):
        import numpy
        import scipy

        self.path = Path(path) if path else None
        self.repeats = repeats
        self.machine = f"{_cpu_model()} | numpy {numpy.__version__} | scipy {scipy.__version__}"
        self._data = json.loads(self.path.read_text()) if self.path and self.path.exists() else {}

    def __call__(self, n: int) -> float:
        key = f"{self.machine} | n={int(n)}"
        if key not in self._data:
            runs = cholesky_cpu_s(int(n), self.repeats)
            self._data[key] = {"median_s": statistics.median(runs), "runs": runs}
            if self.path:
                from gpbayes_repro.io import atomic_path

                with atomic_path(self.path) as tmp:
                    tmp.write_text(json.dumps(self._data, indent=1, sort_keys=True))
        return self._data[key]["median_s"]


@dataclass(frozen=True)
class RuleOps:
    """One rule's line: benchmark ``jobs`` and ``cpu_s``; over its outputs the counted ``ops``, the
    sizes ``n_min``..``n_max``, ``floor_s`` = sum of ops x t_chol(n), ``warmup`` ("all", "none",
    "some", "-"); ``note`` says why a rule has no ratio."""

    rule: str
    jobs: int
    cpu_s: float
    ops: float
    n_min: int | None
    n_max: int | None
    floor_s: float
    warmup: str
    note: str = ""

    @property
    def s_per_op(self) -> float:
        """Benchmark CPU-s per counted operation."""
        return self.cpu_s / self.ops if self.ops > 0 else math.nan

    @property
    def chol_s(self) -> float:
        """CPU-s of one Cholesky at the rule's n (the ops-weighted mean over its outputs' sizes)."""
        return self.floor_s / self.ops if self.ops > 0 else math.nan

    @property
    def ratio(self) -> float:
        """CPU-s over the floor (counted ops x one Cholesky's CPU-s): 1 is the physical floor."""
        return self.cpu_s / self.floor_s if self.floor_s > 0 else math.nan

    @property
    def n_text(self) -> str:
        """The size, or the range ``min-max`` of sizes, of the rule's outputs ("-" without counts)."""
        if self.n_min is None:
            return "-"
        return str(self.n_min) if self.n_min == self.n_max else f"{self.n_min}-{self.n_max}"


def ops_profile(run_dir, chol_s=None, benchmarks=None, until: float | None = None) -> list[RuleOps]:
    """Per-rule CPU per counted operation of a run (module doc), rules with a ratio first, largest CPU first.

    ``chol_s(n)`` gives one Cholesky's CPU-s (default: a :class:`CholeskyTimer` without a cache);
    ``benchmarks`` the records (default ``<run_dir>/benchmarks``); ``until`` as in :func:`rule_outputs`.
    """
    run_dir = Path(run_dir)
    chol_s = chol_s or CholeskyTimer()
    outputs = rule_outputs(run_dir, until)
    rows = []
    for rp in profile(Path(benchmarks) if benchmarks else run_dir / "benchmarks"):
        if rp.rule in COPIES_INPUT_COUNTS:
            rows.append(RuleOps(rp.rule, rp.jobs, rp.cpu_s, 0.0, None, None, 0.0, "-",
                                "no counted operations of its own: " + COPIES_INPUT_COUNTS[rp.rule]))
            continue
        counted = [(p, c, late) for p, inputs, late in outputs.get(rp.rule, []) if p.suffix == ".nc"
                   for c in [counted_operations(p, inputs)] if c is not None and c.ops > 0]
        late = sum(1 for *_, lt in counted if lt)
        if late:
            rows.append(RuleOps(rp.rule, rp.jobs, rp.cpu_s, 0.0, None, None, 0.0, "-",
                                f"not measured: {late} of its {len(counted)} counting outputs were re-made by a "
                                "later run in the directory"))
            continue
        counted = [(p, c) for p, c, _ in counted]
        if not counted:
            rows.append(RuleOps(rp.rule, rp.jobs, rp.cpu_s, 0.0, None, None, 0.0, "-", "no counted operations"))
            continue
        unsized = [str(p.relative_to(run_dir)) for p, c in counted if c.n is None]
        if unsized:
            raise ValueError(f"rule {rp.rule}: no matrix size (attributes M, n, n_train) in {unsized[:3]}")
        ops = sum(c.ops for _, c in counted)
        floor = sum(c.ops * chol_s(c.n) for _, c in counted)
        flags = {c.warmup for _, c in counted if c.warmup is not None}
        warm = "-" if not flags else "all" if flags == {True} else "none" if flags == {False} else "some"
        ns = [c.n for _, c in counted]
        rows.append(RuleOps(rp.rule, rp.jobs, rp.cpu_s, ops, min(ns), max(ns), floor, warm))
    rows.sort(key=lambda r: (r.ops <= 0, -r.cpu_s, r.rule))
    return rows


def format_table(rows: list[RuleOps]) -> str:
    """A Markdown table of ``rows``."""
    head = ("| rule | jobs | CPU s | counted ops | n | warm-up counted | CPU s / op | one Cholesky s | ratio |\n"
            "|---|---:|---:|---:|---|---|---:|---:|---:|")
    lines = [head]
    for r in rows:
        if r.ops > 0:
            lines.append(f"| {r.rule} | {r.jobs} | {r.cpu_s:.1f} | {r.ops:,.0f} | {r.n_text} | {r.warmup} | "
                         f"{r.s_per_op:.3g} | {r.chol_s:.3g} | {r.ratio:,.1f} |")
        else:
            lines.append(f"| {r.rule} | {r.jobs} | {r.cpu_s:.1f} | {r.note} | | | | | |")
    return "\n".join(lines)


def write_csv(rows: list[RuleOps], path) -> None:
    """The table as CSV (empty cells where a rule has no counted operations)."""
    from gpbayes_repro.io import atomic_path

    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["rule", "jobs", "cpu_s", "counted_ops", "n_min", "n_max", "warmup_counted",
                    "cpu_s_per_op", "cholesky_s", "ratio", "note"])
        for r in rows:
            has = r.ops > 0
            w.writerow([r.rule, r.jobs, f"{r.cpu_s:.3f}", f"{r.ops:.0f}" if has else "",
                        r.n_min if has else "", r.n_max if has else "", r.warmup if has else "",
                        f"{r.s_per_op:.6g}" if has else "", f"{r.chol_s:.6g}" if has else "",
                        f"{r.ratio:.6g}" if has else "", r.note])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpbayes_repro.ops_profile", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a run's directory (with benchmarks/, results/, .snakemake/metadata)")
    parser.add_argument("--csv", help="also write the table as CSV to this path")
    parser.add_argument("--cholesky-cache", default=str(Path.home() / ".cache" / "gpbayes" / "cholesky_cpu_s.json"),
                        help="JSON cache of the Cholesky timings (default: ~/.cache/gpbayes/cholesky_cpu_s.json)")
    parser.add_argument("--benchmarks", help="the run's benchmark records (default: <run dir>/benchmarks)")
    parser.add_argument("--until", type=float, help="skip outputs of jobs that ended after this epoch second "
                                                    "(a later run in the same directory)")
    parser.add_argument("--repeats", type=int, default=7, help="timed batches per n (median; default 7)")
    args = parser.parse_args(argv)
    timer = CholeskyTimer(args.cholesky_cache, repeats=args.repeats)
    rows = ops_profile(args.run_dir, timer, args.benchmarks, args.until)
    print(f"Machine: {timer.machine}; one Cholesky = scipy.linalg.cholesky, one BLAS thread, median CPU-s; "
          f"load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(format_table(rows))
    if args.csv:
        write_csv(rows, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
