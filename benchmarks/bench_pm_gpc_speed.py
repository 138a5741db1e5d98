"""CPU per counted O(n^3) operation of one job of the F&G 2014 rules (issue 42), in-process.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_pm_gpc_speed.py JOB [--out DIR] [--profile N]

JOB is one of

* ``capacity:<dataset>:<n>:<split>``            (rule pm_gpc_capacity_split)
* ``table:<table>:<n>:<d>:<kernel>:<scheme>:<block>``  (rule pm_gpc_table_chains)
* ``real:<dataset>:<scheme>:<block>``           (rule pm_gpc_real_chains)

at the config's scale (``config/config.yaml``), with the job's own seed streams and settings, read
from the files the workflow's upstream rules made in this checkout (``data/processed/<dataset>.nc``,
``results/pm_gpc/tables/{data,proposal}_*.nc``, ``results/pm_gpc/real/<dataset>_data.nc``; make them
with ``snakemake --cores 1 <those files>``).  It prints the job's CPU-s (``time.process_time``,
the experiment function only: no start-up, no file writing), its counted operations
(``gpbayes_repro.ops_profile.counted_operations`` of the written file, as the ops table reads
them), one ``scipy.linalg.cholesky`` at the job's n (``ops_profile.cholesky_cpu_s``) and the ratio,
and writes the result file to ``--out`` (for ``tools/compare_results.py`` or :func:`same_numbers`).
``--profile N`` prints the N heaviest functions by cumulative time (cProfile; slower).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _config():
    import yaml

    cfg = yaml.safe_load(open(REPO / "config" / "config.yaml"))
    return cfg, cfg["scale"], int(cfg["seed"])


def run_job(job: str):
    """(groups, root) of one job, as its workflow script would write them."""
    import xarray as xr

    from gpbayes import rng
    from gpbayes_repro.experiments import pm_gpc_capacity, pm_gpc_mcmc

    cfg, scale, seed = _config()
    pmg = cfg["pm_gpc"]
    kind, *a = job.split(":")
    if kind == "capacity":
        dataset, n, k = a[0], int(a[1]), int(a[2])
        cap = pmg["capacity"]
        settings = {key: v for key, v in cap["scales"][scale].items() if key != "split_looks"}
        keys = ("pm_gpc", "capacity", dataset, n, k)
        ds, groups = pm_gpc_capacity.split_dataset(
            xr.load_dataset(REPO / "data" / "processed" / f"{dataset}.nc"), n, k, cfg=cap, settings=settings,
            rng_split=rng.stream(seed, *keys, "split"), rng_fit=rng.stream(seed, *keys, "fit"),
            nugget=pmg["nugget"], ep_mode=pmg["ep_mode"])
        return groups, ds
    if kind == "table":
        table, n, d, kernel, scheme, block = int(a[0]), int(a[1]), int(a[2]), a[3], a[4], int(a[5])
        tab = pmg["tables"]
        settings = {key: v for key, v in tab["scales"][scale].items() if key != "ep_la_futility"}
        base = REPO / "results" / "pm_gpc" / "tables"
        groups = pm_gpc_mcmc.table_block(
            xr.load_dataset(base / f"data_n{n}_d{d}.nc"), xr.load_dataset(base / f"proposal_n{n}_d{d}_{kernel}.nc"),
            table=table, kernel_kind=kernel, scheme=scheme, block=block,
            pmg={k: pmg[k] for k in ("nugget", "ep_mode", "tables")}, settings=settings, seed=seed)
        return groups, None
    if kind == "real":
        dataset, scheme, block = a[0], a[1], int(a[2])
        groups = pm_gpc_mcmc.real_block(
            xr.load_dataset(REPO / "results" / "pm_gpc" / "real" / f"{dataset}_data.nc"), scheme=scheme,
            block=block, pmg={k: pmg[k] for k in ("nugget", "ep_mode", "real")},
            settings=pmg["real"]["scales"][scale], seed=seed)
        return groups, None
    raise SystemExit(f"unknown job {job!r}")


#: variables that hold timings (differ from run to run by nature), left out of :func:`same_numbers` (so are
#: attributes with "time" in their name and ``created_at``)
TIMING_VARS = ("wall_time",)


def same_numbers(a: Path, b: Path) -> list[str]:
    """Every variable and attribute of two result files compared exactly (NaN equal to NaN), timings
    left out; returns the differences (empty: bit for bit the same)."""
    import netCDF4
    import numpy as np

    diffs = []

    def walk(ga, gb, where):
        for k in sorted(set(ga.variables) | set(gb.variables)):
            if any(t in k for t in TIMING_VARS):
                continue
            if k not in ga.variables or k not in gb.variables:
                diffs.append(f"{where}{k}: only in one file")
                continue
            x, y = np.asarray(ga.variables[k][...]), np.asarray(gb.variables[k][...])
            eq = x.shape == y.shape and (np.array_equal(x, y, equal_nan=True) if x.dtype.kind == "f"
                                         else np.array_equal(x, y))
            if not eq:
                diffs.append(f"{where}{k}: differs")
        for k in sorted(set(ga.ncattrs()) | set(gb.ncattrs())):
            if "time" in k or k == "created_at":
                continue
            va = ga.getncattr(k) if k in ga.ncattrs() else None
            vb = gb.getncattr(k) if k in gb.ncattrs() else None
            if not np.array_equal(np.asarray(va), np.asarray(vb)):
                diffs.append(f"{where}@{k}: {va!r} != {vb!r}")
        for g in sorted(set(ga.groups) | set(gb.groups)):
            if g not in ga.groups or g not in gb.groups:
                diffs.append(f"{where}{g}/: only in one file")
            else:
                walk(ga.groups[g], gb.groups[g], f"{where}{g}/")

    with netCDF4.Dataset(a) as da, netCDF4.Dataset(b) as db:
        walk(da, db, "")
    return diffs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("job", nargs="?")
    p.add_argument("--out", default="/tmp/pm_gpc_speed")
    p.add_argument("--profile", type=int, default=0)
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two result files and exit")
    args = p.parse_args(argv)
    if args.compare:
        d = same_numbers(Path(args.compare[0]), Path(args.compare[1]))
        print("\n".join(d) if d else "identical (every variable and attribute but timings)")
        return 1 if d else 0
    from threadpoolctl import threadpool_limits

    from gpbayes_repro import io
    from gpbayes_repro.ops_profile import cholesky_cpu_s, counted_operations

    with threadpool_limits(limits=1):
        load = open("/proc/loadavg").read().split()[:3]
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            t0 = time.process_time()
            prof.enable()
            groups, root = run_job(args.job)
            prof.disable()
            cpu = time.process_time() - t0
            pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(args.profile)
        else:
            t0 = time.process_time()
            groups, root = run_job(args.job)
            cpu = time.process_time() - t0
        out = Path(args.out) / (args.job.replace(":", "_") + ".nc")
        out.parent.mkdir(parents=True, exist_ok=True)
        io.write_inference_data(groups, out, root=root)
        c = counted_operations(out)
        chol = statistics.median(cholesky_cpu_s(c.n))
    print(f"job {args.job}: CPU {cpu:.2f} s, counted ops {c.ops:.0f} at n = {c.n}, {cpu / c.ops * 1e6:.1f} us/op, "
          f"one Cholesky {chol * 1e6:.2f} us, ratio {cpu / (c.ops * chol):.2f}; load {' '.join(load)}; "
          f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
