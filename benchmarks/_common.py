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


#: bench_marginal.load_data's rows of Pima: ``np.sort(default_rng(seed).choice(768, n, replace=False))``
PIMA_ROWS_SEED = 1


def pima(n_rows: int | None = 300, seed: int = PIMA_ROWS_SEED):
    """Pima (data/raw/pima.dat, 768 x 8): covariates unstandardised and labels in {-1, +1} (tested_positive +1).

    ``n_rows`` rows (None or >= 768: all) chosen as ``bench_marginal.load_data(n, seed)`` chooses its Pima
    subsets -- ``np.sort(np.random.default_rng(seed).choice(768, n_rows, replace=False))``, seed 1 its
    default -- the one rule in the repository for "n rows of Pima".  Returns (X, y, rows).
    """
    import numpy as np

    raw = np.genfromtxt(REPO / "data" / "raw" / "pima.dat", delimiter=",", dtype=str)
    X = raw[:, :8].astype(float)
    y = np.where(np.char.strip(raw[:, 8]) == "tested_positive", 1.0, -1.0)
    if n_rows is None or n_rows >= len(y):
        rows = np.arange(len(y))
    else:
        rows = np.sort(np.random.default_rng(seed).choice(len(y), int(n_rows), replace=False))
    return X[rows], y[rows], rows


def ionosphere():
    """Ionosphere (data/raw/ionosphere.dat, all 351 rows): (X, y, dropped) with labels g -> +1, b -> -1.

    This KEEL copy has 33 covariates: UCI attribute 2 (constant 0) is already absent (MANIFEST.yaml).
    Any constant column is dropped here all the same (``gb.GPClassifier`` refuses constant columns,
    they cannot be standardised); ``dropped`` lists the indices of those dropped (empty for this file).
    """
    import numpy as np

    raw = np.genfromtxt(REPO / "data" / "raw" / "ionosphere.dat", delimiter=",", dtype=str)
    X = raw[:, :-1].astype(float)
    y = np.where(np.char.strip(raw[:, -1]) == "g", 1.0, -1.0)
    const = np.flatnonzero(X.std(axis=0) == 0)
    return np.delete(X, const, axis=1), y, const.tolist()


#: the coal window in calendar years (data/raw/MANIFEST.yaml: ``window: [1851.0, 1963.0]``)
COAL_WINDOW = (1851.0, 1963.0)


def coal(n_bins: int = 112, years_per_unit: float = 10.0):
    """Coal-mining disasters (data/raw/coal.csv, 191 event times) binned as the M&A reproduction bins them.

    ``gpbayes_repro.experiments.slice_ma.mining_data`` with config/config.yaml's ``slice_ma.mining``
    (112 bins of one year over 1851-1963; x = bin centre in decades since 1851): ``n_bins`` equal bins
    of the window, half-open except the last (``numpy.histogram``, as ``gpbayes_repro.data.bin_events``).
    Returns (X (n_bins, 1), counts).
    """
    import numpy as np

    with open(REPO / "data" / "raw" / "coal.csv") as fh:
        t = np.array([float(r[1]) for r in list(csv.reader(fh))[1:]])
    start, end = COAL_WINDOW
    if t.min() < start or t.max() > end:
        raise ValueError(f"coal: event times {t.min()}..{t.max()} outside the window {COAL_WINDOW}")
    edges = np.linspace(start, end, int(n_bins) + 1)
    counts, _ = np.histogram(t, bins=edges)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return ((centres - start) / years_per_unit)[:, None], counts.astype(np.float64)
