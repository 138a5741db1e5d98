"""Helpers shared by the benchmark scripts (run as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import csv
import os
import platform
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def write_csv(rows: list[dict], path) -> Path:
    """Write ``rows`` (dicts with the same keys) to ``path`` and say so."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path}")
    return path


def ionosphere_problem(n: int, n_burn: int, n_draws: int, n_chains: int, seed: int):
    """The workflow's M&A Ionosphere problem (config/config.yaml's slice_ma block): (cfg, settings, data)."""
    import xarray as xr
    import yaml

    from gpbayes_repro.experiments import slice_ma

    cfg = yaml.safe_load(open(REPO / "config" / "config.yaml"))["slice_ma"]
    settings = {"n_chains": n_chains, "chains_per_job": n_chains,
                "ionosphere": {"n": n, "n_burn": n_burn, "n_draws": n_draws}}
    source = xr.load_dataset(REPO / "data" / "processed" / "ionosphere.nc")
    return cfg, settings, slice_ma.problem_data("ionosphere", cfg, settings, seed, source)


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo ("unknown" where there is none)."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover
        pass
    return platform.processor() or "unknown"


def machine() -> str:
    """CPU model, core count, OS and the load average at start: the line every benchmark result names its machine by."""
    return f"{cpu_name()}, {os.cpu_count()} cores, {platform.system()}; load average {os.getloadavg()[0]:.2f} at start"


def boston():
    """Boston Housing as shipped in data/raw: the 13 covariates and the target medv, unstandardised."""
    import numpy as np

    with open(REPO / "data" / "raw" / "Boston.csv") as fh:
        rows = list(csv.reader(fh))[1:]
    A = np.array([[float(v) for v in r[1:]] for r in rows])
    return A[:, :13], A[:, 13]
