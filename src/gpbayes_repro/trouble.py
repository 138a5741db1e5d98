"""Numerical trouble recorded in the workflow's result files, collected for the claims page.

The library records numerical trouble where it happens (``gpbayes.linalg.count_ops``):
factorisations that needed jitter (``n_jitter``, ``max_jitter``), approximations that
stopped at their iteration limit (``n_not_converged``) and estimates that failed
(``n_failed_estimates``).  The chain runner stores them per draw in ``sample_stats``
and for the warm-up as ``warmup_*`` attributes; experiments that are not chains store
them as variables or attributes with the same names (possibly prefixed, e.g.
``ep_ml_n_not_converged``).

:func:`scan` reads every NetCDF file under a results directory with ``netCDF4``
(metadata and these few variables only, not the draws) and returns one record per
file whose totals are not zero.  Files written at another ``scale`` than the one
being reported (left over from an earlier run in the same directory) are skipped
and counted, so a smoke run's leftovers never flag a default report.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

#: the trouble counters (``gpbayes.mcmc.runner.TROUBLE_STATS``); ``max_jitter`` is a maximum, the rest are sums
COUNTS = ("n_jitter", "n_not_converged", "n_failed_estimates")
MAXIMA = ("max_jitter",)

__all__ = ["COUNTS", "MAXIMA", "TROUBLE_STATS", "chain_totals", "combine", "per_draw", "warmup_per_chain", "scan",
           "scan_file", "summary"]

#: what a runner ``Chain`` records per draw and in its warm-up
TROUBLE_STATS = ("n_jitter", "max_jitter", "n_not_converged", "n_failed_estimates")


def per_draw(chain) -> dict:
    """The trouble counters of a ``gpbayes.mcmc.runner.Chain``, per kept draw (zeros if the sampler has none)."""
    n = len(chain.draws)
    return {k: np.asarray(chain.stats.get(k, np.zeros(n)), dtype=float if k in MAXIMA else np.int64)
            for k in TROUBLE_STATS}


def _warmup_value(chain, k):
    # the runner's warm-up plus, for pseudo-marginal MH, its adaptive phase 1 (``params["adapt_<counter>"]``)
    a, b = chain.warmup.get(k, 0), (chain.params or {}).get(f"adapt_{k}", 0)
    return max(a, b) if k in MAXIMA else a + b


def combine(*records) -> dict:
    """One record from several (mappings or objects with the four counters): counts add, ``max_jitter`` is the
    largest."""
    def get(r, k):
        return r[k] if isinstance(r, dict) else getattr(r, k)

    out = {k: 0.0 for k in TROUBLE_STATS}
    for r in records:
        for k in COUNTS:
            out[k] += float(get(r, k))
        for k in MAXIMA:
            out[k] = max(out[k], float(get(r, k)))
    return out


def chain_totals(chain) -> dict:
    """A chain's trouble over everything it evaluated: its draws and its warm-up, a pseudo-marginal chain's
    adaptive phase 1 included."""
    draws = {k: (v.max() if k in MAXIMA else v.sum()) if v.size else 0.0 for k, v in per_draw(chain).items()}
    return combine(draws, {k: _warmup_value(chain, k) for k in TROUBLE_STATS})


def warmup_per_chain(chains) -> dict:
    """``warmup_<counter>`` over ``chain``: the warm-up's trouble of each chain (for a ``sample_stats`` group),
    a pseudo-marginal chain's adaptive phase 1 included."""
    return {f"warmup_{k}": ("chain", np.array([_warmup_value(c, k) for c in chains],
                                              dtype=float if k in MAXIMA else np.int64))
            for k in TROUBLE_STATS}


#: other recorded failures counted with the failed estimates: a proposal whose covariance could not be
#: factorised (AA/SURR, ``latent_gibbs``) is rejected -- numerical trouble the reader should see
ALIASES = {"n_failed_cholesky": "n_failed_estimates"}


def _kind(name: str) -> str | None:
    for alias, k in ALIASES.items():
        if name == alias or name.endswith("_" + alias):
            return k
    for k in COUNTS + MAXIMA:
        if name == k or name.endswith("_" + k):
            return k
    return None


def _file_scale(nc) -> str | None:
    raw = nc.__dict__.get("config")
    if not isinstance(raw, str):
        return None
    try:
        cfg = json.loads(raw)
    except ValueError:
        return None
    scale = cfg.get("scale") if isinstance(cfg, dict) else None
    return scale if isinstance(scale, str) else None


def scan_file(path) -> dict:
    """Totals of the trouble counters in one NetCDF file (every group, variables and attributes).

    Returns ``{"path", "scale", "n_jitter", "max_jitter", "n_not_converged",
    "n_failed_estimates", "where"}``; ``where`` names the variables/attributes that
    were non-zero.  NaN entries (e.g. a counter of a draw that was not run) are ignored.
    """
    import netCDF4

    totals = {k: 0 for k in COUNTS} | {k: 0.0 for k in MAXIMA}
    where: list[str] = []

    def add(kind, label, values):
        values = np.asarray(values, dtype=float)
        values = values[np.isfinite(values)]
        if values.size == 0:
            return
        if kind in MAXIMA:
            v = float(values.max())
            totals[kind] = max(totals[kind], v)
        else:
            v = float(values.sum())
            totals[kind] += int(round(v))
        if v:
            where.append(label)

    def walk(group, prefix):
        for name in group.ncattrs():
            kind = _kind(name)
            if name in group.variables:
                # a per-chain variable of this name is the record; the attribute of the same name is
                # ``io.to_inference_groups``' copy of the first chain's warm-up (counting it too would count twice)
                continue
            if kind is not None and np.isscalar(group.getncattr(name)) and not isinstance(group.getncattr(name), str):
                add(kind, f"{prefix}@{name}", group.getncattr(name))
        for name, var in group.variables.items():
            kind = _kind(name)
            if kind is not None:
                add(kind, f"{prefix}{name}", np.ma.filled(var[...].astype(float), np.nan))
        for name, sub in group.groups.items():
            walk(sub, f"{prefix}{name}/")

    with netCDF4.Dataset(path) as nc:
        scale = _file_scale(nc)
        walk(nc, "")
    return {"path": str(path), "scale": scale, **totals, "where": where}


def scan(results_dir, *, scale: str | None = None) -> dict:
    """Every NetCDF file under ``results_dir`` with non-zero trouble.

    Returns ``{"n_files": scanned, "n_other_scale": skipped, "runs": [records with trouble]}``
    (records as :func:`scan_file`, paths relative to ``results_dir``'s parent, sorted).
    With ``scale`` given, files whose recorded config names another scale are skipped.
    """
    root = Path(results_dir)
    runs, n_files, n_other = [], 0, 0
    for path in sorted(root.rglob("*.nc")):
        rec = scan_file(path)
        if scale is not None and rec["scale"] not in (None, scale):
            n_other += 1
            continue
        n_files += 1
        if any(rec[k] for k in COUNTS + MAXIMA):
            rec["path"] = str(path.relative_to(root.parent)) if root.parent != Path() else str(path)
            runs.append(rec)
    return {"n_files": n_files, "n_other_scale": n_other, "runs": runs}


def summary(scanned: dict, experiment_of=lambda p: Path(p).parts[1] if len(Path(p).parts) > 1 else "?") -> dict:
    """Per experiment (``results/<experiment>/...``): number of runs with trouble and the totals."""
    out: dict[str, dict] = {}
    for rec in scanned["runs"]:
        e = out.setdefault(experiment_of(rec["path"]), {"runs": 0, **{k: 0 for k in COUNTS}, "max_jitter": 0.0})
        e["runs"] += 1
        for k in COUNTS:
            e[k] += rec[k]
        e["max_jitter"] = max(e["max_jitter"], rec["max_jitter"])
    return out
