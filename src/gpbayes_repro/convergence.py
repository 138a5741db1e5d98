"""Convergence against cost: IQR across replicates of the running estimate of E[||theta||].

Xiong, Smidl & Filippone, Sec. 4.4: "convergence analysis here is performed
based on the IQR (interquartile range) of the expectation of norm of
parameters (E[||theta||]) over several repetitions against the number of
O(n^3) operations" (100 replicates for regression, 20 for classification).

A *run* is a pair of arrays (cumulative cost, running estimate), one entry
per point at which the sampler has a new estimate:

* AMIS / MAMIS / PM-AMIS (``amis_running_estimate``): after each iteration
  t, the self-normalised estimate over all samples drawn so far with the
  weights as of iteration t (``AMISResult.estimate_norm``), at the
  cumulative O(n^3) operations ``AMISResult.n_cubic`` (which include the
  AMIS tuning of AMIS->MAMIS);
* MCMC (``mcmc_running_estimate``): after kept draw k, the mean of
  ||theta|| over kept draws 1..k, at the tuning cost plus the cost of
  draws 1..k.  Pass per-draw costs: the measured ``n_cubic`` of a chain
  driver, or the paper's accounting (e.g. HMC/NUTS: 3 per gradient
  evaluation, ``gpbayes.mcmc.hmc.PAPER_CUBIC_PER_GRAD_EVAL * n_grad_evals``).

``on_grid`` reads a run on a grid of costs as a step function: at cost c the
estimate is the latest one whose cumulative cost is <= c (what the sampler
could report having spent c), NaN before its first estimate.
``iqr_across_replicates`` puts all replicates on a common grid and takes,
at each grid cost, the 75th minus the 25th percentile across replicates
(numpy's default linear interpolation, R's ``quantile`` type 7, as R's
``IQR``); the IQR is NaN at grid costs where any replicate has no estimate
yet.  ``common_grid`` spans the costs at which every replicate has an
estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "Run",
    "IQRCurve",
    "mcmc_running_estimate",
    "amis_running_estimate",
    "on_grid",
    "common_grid",
    "iqr_across_replicates",
]


class Run(NamedTuple):
    cost: np.ndarray  # cumulative O(n^3) operations, nondecreasing
    estimate: np.ndarray  # running estimate of E[||theta||] at that cost


class IQRCurve(NamedTuple):
    cost: np.ndarray  # the grid
    iqr: np.ndarray  # q75 - q25 across replicates (NaN where any replicate has no estimate yet)
    q25: np.ndarray
    median: np.ndarray
    q75: np.ndarray
    n_available: np.ndarray  # replicates with an estimate at each grid cost


def _run(cost, estimate) -> Run:
    cost = np.asarray(cost, dtype=np.float64).reshape(-1)
    estimate = np.asarray(estimate, dtype=np.float64).reshape(-1)
    if cost.shape != estimate.shape:
        raise ValueError(f"cost and estimate differ in length: {cost.shape} vs {estimate.shape}")
    if cost.size == 0:
        raise ValueError("a run needs at least one (cost, estimate) point")
    if np.any(np.isnan(cost)) or np.any(np.diff(cost) < 0):
        raise ValueError("cumulative costs must be finite-or-inf and nondecreasing")
    return Run(cost, estimate)


def mcmc_running_estimate(draws, costs_per_draw, *, cost_offset: float = 0.0, transform=None) -> Run:
    """Running mean of ||h(theta)|| over kept draws against cumulative cost.

    ``draws`` (k, p); ``costs_per_draw`` (k,) or a scalar (the same cost for
    every draw); ``cost_offset`` = cost spent before the first kept draw
    (initialisation and tuning: the paper's "end of tuning");
    ``transform`` maps draws to the vectors whose norm is averaged (e.g.
    ``np.exp`` for ||theta|| when sampling log theta).
    """
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 1:
        draws = draws[:, None]
    h = draws if transform is None else np.asarray(transform(draws), dtype=np.float64)
    norms = np.linalg.norm(h, axis=1)
    k = norms.shape[0]
    c = np.broadcast_to(np.asarray(costs_per_draw, dtype=np.float64), (k,))
    if np.any(c < 0):
        raise ValueError("per-draw costs must be non-negative")
    return _run(cost_offset + np.cumsum(c), np.cumsum(norms) / np.arange(1, k + 1))


def amis_running_estimate(result) -> Run:
    """(cumulative O(n^3) operations, E[||theta||] estimate) after each AMIS iteration."""
    return _run(result.n_cubic, result.estimate_norm)


def on_grid(run: Run, grid) -> np.ndarray:
    """The run's estimate at each grid cost: latest estimate with cost <= grid, NaN before the first."""
    grid = np.asarray(grid, dtype=np.float64)
    idx = np.searchsorted(run.cost, grid, side="right") - 1
    out = np.full(grid.shape, np.nan)
    ok = idx >= 0
    out[ok] = run.estimate[idx[ok]]
    return out


def common_grid(runs: Sequence[Run], n_points: int = 200, spacing: str = "log") -> np.ndarray:
    """Grid from the latest first cost to the earliest last cost over the replicates.

    On it every replicate has an estimate.  ``spacing`` "log" (geometric,
    as cost axes are plotted on a log scale) or "linear".
    """
    if not runs:
        raise ValueError("no runs")
    lo = max(float(r.cost[0]) for r in runs)
    hi = min(float(r.cost[-1]) for r in runs)
    if not hi >= lo:
        raise ValueError(f"the runs' cost ranges do not overlap ({lo} > {hi})")
    if spacing == "log":
        if lo <= 0:
            raise ValueError("a log-spaced grid needs positive costs")
        return np.geomspace(lo, hi, n_points)
    if spacing == "linear":
        return np.linspace(lo, hi, n_points)
    raise ValueError(f"spacing must be 'log' or 'linear', got {spacing!r}")


def iqr_across_replicates(runs: Sequence[Run], grid=None, **grid_options) -> IQRCurve:
    """IQR across replicates of the running estimate, on a common grid of costs.

    ``grid`` defaults to ``common_grid(runs, **grid_options)``.
    """
    runs = [r if isinstance(r, Run) else _run(*r) for r in runs]
    if len(runs) < 2:
        raise ValueError(f"an IQR across replicates needs at least 2 runs, got {len(runs)}")
    if grid is None:
        grid = common_grid(runs, **grid_options)
    grid = np.asarray(grid, dtype=np.float64)
    V = np.stack([on_grid(r, grid) for r in runs])  # (replicate, grid)
    n_avail = np.sum(np.isfinite(V), axis=0)
    q25 = np.full(grid.shape, np.nan)
    med = np.full(grid.shape, np.nan)
    q75 = np.full(grid.shape, np.nan)
    full = n_avail == len(runs)
    if np.any(full):
        q25[full], med[full], q75[full] = np.percentile(V[:, full], [25, 50, 75], axis=0)
    return IQRCurve(grid, q75 - q25, q25, med, q75, n_avail)
