"""Gadd et al.: sensitivity of the type-II ML baseline to its initialisation, and claims 1-2.

The paper notes that its ML optimisation "is non-convex and may not reflect a
global optimum despite multiple initialisations".  Rather than choosing an
optimum, ``run_restarts`` runs the type-II ML fit of one case from several
seeded random initialisations and records, per restart, the final bound,
whether it converged (L-BFGS-B success and no numerical failure of the bound
on the way) and the NMSE (%) of the ML predictive density of every feature.

* Restart 0 is the pipeline's ML estimate (``results/gplvm/ml/<case>.nc``,
  itself the best of ``ml_restarts`` starts around ``ml.start``): its NMSE is
  computed with the same random stream as Table 1, so it equals Table 1's ML
  column.
* Restart r >= 1 starts at log(ml.start) + N(0, start_sd^2) per
  log-hyperparameter, drawn from the stream ("gplvm", case, "ml_restart", r)
  (the same seed gives the same starts and optima); q(Z) and the inducing
  inputs are initialised as for every ML start (``initial_variational``).
* Every restart's ML predictive uses the stream ("gplvm", case, "predict_ml")
  (common random numbers), so NMSE differences between restarts are due to
  the optimum alone.

Claims 1-2 are decided against the best-bound restart (``select_best_bound``:
the largest final bound, whatever its NMSE), never against a chosen poorer
optimum; the spread over restarts is reported beside them.  Their intervals
are over the pseudo-marginal chains: the marginalised predictive density is
the mixture over every chain's thinned draws, the chains are resampled with
replacement (percentile bootstrap) and the NMSE recomputed; the ML NMSE of
the best-bound restart is held fixed (its Monte Carlo error from the q(Z)
draws is not included).  A case whose chains fail the convergence gate
(``claims.convergence_gate`` on the log-hyperparameters) makes the claim
INCONCLUSIVE whatever the interval says; the interval's own verdict is kept
in ``measured["interval_verdict"]``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from gpbayes import rng as rngmod
from gpbayes.gplvm import pseudo_marginal as pm
from gpbayes.gplvm.vb import fit_type2_ml_start
from .. import claims as claimsmod
from . import gplvm as G

__all__ = [
    "restart_start",
    "ml_feature_nmse",
    "run_restarts",
    "select_best_bound",
    "restart_spread",
    "marginalised_bootstrap",
    "gate_reasons",
    "claims_1_2",
    "restart_figure",
]


def restart_start(case: str, restart: int, model, cfg: dict, seed: int) -> np.ndarray:
    """Log-hyperparameter start of restart ``restart`` >= 1: log(ml.start) + N(0, start_sd^2)."""
    if restart < 1:
        raise ValueError("restart 0 is the pipeline's ML estimate; random starts are numbered from 1")
    psi0 = G._psi_from_groups(model, cfg["ml"]["start"])
    sd = float(cfg["ml_restarts"]["start_sd"])
    return psi0 + sd * rngmod.stream(seed, "gplvm", case, "ml_restart", int(restart)).standard_normal(psi0.size)


def ml_feature_nmse(ds: xr.Dataset, model, psi, params, cfg: dict, settings: dict, seed: int) -> np.ndarray:
    """NMSE (%) per feature of the ML predictive at (psi, q); the random stream of Table 1's ML column."""
    x_test, edges = G.test_grid(ds, settings, cfg)
    mix = pm.ml_predictive_mixture(rngmod.stream(seed, "gplvm", ds.attrs["case"], "predict_ml"), model,
                                   np.asarray(psi), params, x_test[:, None],
                                   n_samples=int(settings["ml_predictive_samples"]))
    truth = G.true_binned_density(ds, x_test, edges)
    return np.array([G.nmse_percent(G.binned_gaussian_mixture(mix.mean[:, :, i], mix.var, edges), truth[i])
                     for i in range(model.output_dim)])


def run_restarts(ds: xr.Dataset, ml: xr.Dataset, cfg: dict, settings: dict, seed: int, *, log=None) -> pd.DataFrame:
    """``settings["n_ml_starts"]`` restarts of one case (restart 0 = ``ml``): one row each."""
    import time

    model = G.build_model(ds, cfg, settings)
    case = ds.attrs["case"]
    names = model.param_names
    rows = []
    for r in range(int(settings["n_ml_starts"])):
        t0 = time.process_time()
        if r == 0:
            psi, params, bound = ml["psi"].values, G._ml_params(ml), float(ml.attrs["bound"])
            start = np.full(len(names), np.nan)  # restart 0 is the best of the pipeline's own starts
            info = {"optimizer_success": None, "message": "pipeline ML estimate (results/gplvm/ml)",
                    "n_iter": None, "n_failed_evals": None, "psi_at_bounds": None}
            converged = None  # fit_type2_ml does not report it; the chains start here
        else:
            start = restart_start(case, r, model, cfg, seed)
            res = fit_type2_ml_start(model, start, max_iter=int(settings["ml_max_iter"]))
            psi, params, bound = res.psi, res.params, res.bound
            info = {"optimizer_success": res.success, "message": res.message, "n_iter": res.n_iter,
                    "n_failed_evals": res.n_failed_evals, "psi_at_bounds": res.psi_at_bounds}
            converged = bool(res.success and res.n_failed_evals == 0 and math.isfinite(res.bound))
        if math.isfinite(bound):
            nmse = ml_feature_nmse(ds, model, psi, params, cfg, settings, seed)
        else:
            nmse = np.full(model.output_dim, np.nan)
        row = {"case": case, "restart": r, "bound": bound, "converged": converged, **info}
        row.update({f"start_{n}": float(np.exp(s)) for n, s in zip(names, start)})
        row.update({f"ml_{n}": float(np.exp(v)) for n, v in zip(names, psi)})
        row.update({f"nmse_feature{int(f)}": float(v) for f, v in zip(ds["feature"].values, nmse)})
        row["cpu_seconds"] = time.process_time() - t0
        rows.append(row)
        if log is not None:
            log.info("%s restart %d: bound %.4f converged %s NMSE %s (%.1f CPU-s)", case, r, bound, converged,
                     np.round(nmse, 2), row["cpu_seconds"])
    return pd.DataFrame(rows)


def select_best_bound(restarts: pd.DataFrame) -> pd.DataFrame:
    """The row of each case with the largest finite bound (ties: lowest restart index). NMSE plays no part."""
    ok = restarts[np.isfinite(restarts["bound"].astype(float))]
    missing = set(restarts["case"]) - set(ok["case"])
    if missing:
        raise ValueError(f"no restart with a finite bound for {sorted(missing)}")
    ok = ok.sort_values(["case", "bound", "restart"], ascending=[True, False, True])
    return ok.groupby("case", sort=False).head(1).set_index("case").loc[sorted(set(ok["case"]))].reset_index()


def _features(restarts: pd.DataFrame) -> list[int]:
    return sorted(int(c.removeprefix("nmse_feature")) for c in restarts.columns if c.startswith("nmse_feature"))


def restart_spread(restarts: pd.DataFrame) -> pd.DataFrame:
    """Per (case, feature): NMSE over restarts (min, quartiles, max), the best-bound restart's NMSE, bound spread."""
    best = select_best_bound(restarts).set_index("case")
    rows = []
    for case, g in restarts.groupby("case", sort=True):
        b = g["bound"].astype(float)
        for f in _features(restarts):
            v = g[f"nmse_feature{f}"].astype(float).dropna()
            q = np.quantile(v, [0.0, 0.25, 0.5, 0.75, 1.0]) if len(v) else [np.nan] * 5
            rows.append({
                "case": case, "feature": f, "n_restarts": int(len(g)), "n_converged": int((g["converged"] == True).sum()),  # noqa: E712 (None/NaN: not recorded)
                "nmse_ml_restart_min": q[0], "nmse_ml_restart_q25": q[1], "nmse_ml_restart_median": q[2],
                "nmse_ml_restart_q75": q[3], "nmse_ml_restart_max": q[4],
                "nmse_ml_best_bound": float(best.loc[case, f"nmse_feature{f}"]),
                "best_bound_restart": int(best.loc[case, "restart"]), "best_bound": float(best.loc[case, "bound"]),
                "bound_min": float(b.min()), "bound_median": float(b.median()), "bound_max": float(b.max()),
            })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# intervals over chains
# ---------------------------------------------------------------------------
def marginalised_bootstrap(ev: xr.Dataset, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """(n_boot, feature) NMSE (%) of the marginalised density with the chains resampled with replacement.

    Uses ``density_by_chain`` (chain, feature, x, y) and ``chain_components``
    of ``evaluate_case``: a resample's density is the component-weighted
    mean of its chains' densities (the pooled estimate when no chain repeats).
    """
    dens = ev["density_by_chain"].transpose("chain", "feature", "x", "y").values
    w = ev["chain_components"].values.astype(float)
    truth = ev["density"].sel({"method": "true"}).transpose("feature", "x", "y").values
    n_chain = dens.shape[0]
    if n_chain < 2:
        return np.full((int(n_boot), dens.shape[1]), np.nan)
    idx = rng.integers(0, n_chain, size=(int(n_boot), n_chain))
    out = np.empty((int(n_boot), dens.shape[1]))
    denom = np.sum(truth**2, axis=(1, 2))
    for b in range(int(n_boot)):
        ww = w[idx[b]]
        mix = np.tensordot(ww, dens[idx[b]], axes=(0, 0)) / ww.sum()
        out[b] = 100.0 * np.sum((mix - truth) ** 2, axis=(1, 2)) / denom
    return out


def gate_reasons(shapes: pd.DataFrame) -> dict[str, str | None]:
    """Per case: None when the log-hyperparameter chains pass the convergence gate, else the reason."""
    out = {}
    for case, s in shapes.groupby("case"):
        ess = s["ess_bulk"] if "ess_bulk" in s else pd.Series([np.nan] * len(s))
        out[case] = claimsmod.convergence_gate(s["rhat"].values, ess.values)
    return out


def _interval(est: float, reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = np.asarray(reps, dtype=float)
    reps = reps[np.isfinite(reps)]
    if reps.size < 2:  # no replicates (e.g. a single chain): nothing is known about the spread
        return math.nan, math.nan
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _none(x: float):
    return None if not math.isfinite(x) else float(x)


def claims_1_2(marg: dict[str, np.ndarray], boot: dict[str, np.ndarray], ml_best: dict[str, np.ndarray],
               gates: dict[str, str | None], *, min_gap_increase: float = 0.0, level: float = 0.95,
               n_chains: dict[str, int] | None = None, features=None, spread: pd.DataFrame | None = None) -> list[dict]:
    """Claims 1-2 on the best-bound ML optimum, each decided on a bootstrap interval over chains.

    marg[case]: (feature,) marginalised NMSE (%); boot[case]: (n_boot, feature)
    its chain-bootstrap replicates (same n_boot for every case); ml_best[case]:
    (feature,) NMSE of the best-bound ML restart; gates[case]: None or the
    reason the chains fail the convergence gate.

    Claim 1 (marginalised < ML in every cell): quantity = min over cells of
    (ML - marginalised), threshold 0.  Claim 2 (the mean gap grows Case 1 -> 2
    -> 3): quantity = min(gap2 - gap1, gap3 - gap2), threshold
    ``min_gap_increase``.  Both: PASS / FAIL / INCONCLUSIVE by
    ``claims.decide`` on the percentile interval of the quantity's replicates.
    """
    cases = [c for c in G.CASES if c in marg]
    n_feat = len(next(iter(marg.values())))
    features = list(features) if features is not None else list(range(1, n_feat + 1))
    gap = {c: np.asarray(ml_best[c], float) - np.asarray(marg[c], float) for c in cases}
    gap_b = {c: np.asarray(ml_best[c], float)[None, :] - np.asarray(boot[c], float) for c in cases}
    not_conv = {c: gates.get(c) for c in cases if gates.get(c)}
    method = (f"{level:.0%} percentile bootstrap over the pseudo-marginal chains of each case (chains resampled "
              f"with replacement, marginalised density and NMSE recomputed; chains per case: "
              f"{n_chains if n_chains else 'see predictive files'}); ML = best-bound restart, held fixed")
    spread_txt = None
    if spread is not None and len(spread):
        spread_txt = {c: f"ML NMSE over {int(g['n_restarts'].iloc[0])} restarts, any feature: {g['nmse_ml_restart_min'].min():.3g}"
                         f" to {g['nmse_ml_restart_max'].max():.3g} %, bound {g['bound_min'].iloc[0]:.4g}"
                         f"..{g['bound_max'].iloc[0]:.4g}, best-bound restart {int(g['best_bound_restart'].iloc[0])}"
                      for c, g in spread.groupby("case")}

    def finish(rec, est, reps, thr, quantity):
        lo, hi = _interval(est, reps, level)
        v = claimsmod.decide(lo, hi, thr, "above")
        rec["measured"]["interval_verdict"] = v
        if spread_txt:
            rec["measured"]["ml_restart_spread"] = spread_txt
        rec["interval"] = {"quantity": quantity, "estimate": float(est), "lo": _none(lo), "hi": _none(hi),
                           "threshold": float(thr), "side": "above", "method": method}
        reasons = []
        if not_conv:
            reasons.append("; ".join(f"{c}: {r}" for c, r in not_conv.items()))
        if len(cases) < len(G.CASES) and rec["id"] == "gap-widens-case1-to-case3":
            reasons.append(f"needs all three cases, have {cases}")
        if v == "INCONCLUSIVE" and not reasons:
            reasons.append(f"the interval [{lo:.3g}, {hi:.3g}] contains the threshold {thr:g}" if math.isfinite(lo)
                           else "no interval (fewer than 2 chains)")
        if reasons:
            v = "INCONCLUSIVE"
            rec["reason"] = "; ".join(reasons)
        rec["verdict"], rec["passed"] = v, v == "PASS"
        return rec

    # claim 1
    cells = [(c, f) for c in cases for f in range(n_feat)]
    gaps = np.array([gap[c][f] for c, f in cells])
    reps = np.min(np.column_stack([gap_b[c][:, f] for c, f in cells]), axis=1)
    cell_iv = {f"{c}/feature{features[f]}": [round(x, 4) for x in _interval(gap[c][f], gap_b[c][:, f], level)]
               for c, f in cells}
    r1 = {
        "id": "marginalised-beats-ml-everywhere",
        "statement": "The marginalised predictive density has a lower NMSE than the ML one (best-bound type-II ML "
                     "optimum over the random restarts) for every feature in every case (Table 1)",
        "measured": {"n_wins": int((gaps > 0).sum()), "n_cells": int(len(cells)),
                     "min_gap_percent_points": float(gaps.min()),
                     "losses": [f"{c}/feature{features[f]}" for (c, f), g in zip(cells, gaps) if g <= 0],
                     "cell_gap_intervals": cell_iv},
        "paper": {"n_wins": 18, "n_cells": 18},
    }
    out = [finish(r1, float(gaps.min()), reps, 0.0, "min over cells of NMSE_ML(best bound) - NMSE_marginalised "
                                                    "(percentage points)")]
    # claim 2
    mean_gap = {c: float(gap[c].mean()) for c in cases}
    mean_b = {c: gap_b[c].mean(axis=1) for c in cases}
    if len(cases) == len(G.CASES):
        est = min(mean_gap["case2"] - mean_gap["case1"], mean_gap["case3"] - mean_gap["case2"])
        reps2 = np.minimum(mean_b["case2"] - mean_b["case1"], mean_b["case3"] - mean_b["case2"])
    else:
        est, reps2 = math.nan, np.array([])
    r2 = {
        "id": "gap-widens-case1-to-case3",
        "statement": f"The mean NMSE gap (best-bound ML minus marginalised, percentage points, over the features) "
                     f"grows by more than {min_gap_increase:g} from Case 1 to Case 2 and from Case 2 to Case 3",
        "measured": {**{f"mean_gap_{c}": v for c, v in mean_gap.items()},
                     **{f"mean_gap_{c}_interval": [round(x, 4) for x in _interval(mean_gap[c], mean_b[c], level)]
                        for c in cases}},
        "paper": None,
    }
    out.append(finish(r2, est if math.isfinite(est) else 0.0, reps2, float(min_gap_increase),
                      "min(gap_case2 - gap_case1, gap_case3 - gap_case2) (percentage points)"))
    return out


# ---------------------------------------------------------------------------
# figure
# ---------------------------------------------------------------------------
def restart_figure(restarts: pd.DataFrame, table: pd.DataFrame, path, *, scale: str = "") -> None:
    """Per case: ML NMSE of every restart per feature (dots, colour = bound), best-bound restart, marginalised."""
    from ..plots import plt, save_figure

    cases = [c for c in G.CASES if c in set(restarts["case"])]
    feats = _features(restarts)
    best = select_best_bound(restarts).set_index("case")
    fig, axes = plt.subplots(2, len(cases), figsize=(4.2 * len(cases), 7), squeeze=False)
    for j, case in enumerate(cases):
        g = restarts[restarts["case"] == case]
        ax = axes[0, j]
        vmin, vmax = float(np.nanmin(g["bound"])), float(np.nanmax(g["bound"]))
        sc = None
        for k, f in enumerate(feats):
            off = np.linspace(-0.25, 0.25, len(g)) if len(g) > 1 else np.zeros(1)
            sc = ax.scatter(k + off, g[f"nmse_feature{f}"], c=g["bound"], cmap="viridis", vmin=vmin, vmax=vmax, s=14,
                            marker=None)
            ax.plot(k, best.loc[case, f"nmse_feature{f}"], "r_", ms=16, mew=2,
                    label="ML, best bound" if k == 0 else None)
            t = table[(table["case"] == case) & (table["feature"] == f)]
            if len(t):
                ax.plot(k, float(t["nmse_marginalised"].iloc[0]), "k*", ms=9,
                        label="marginalised" if k == 0 else None)
        ax.set_xticks(range(len(feats)), [str(f) for f in feats])
        ax.set_xlabel("feature")
        ax.set_ylabel("NMSE (%)")
        ax.set_title(f"{case}: ML NMSE over {len(g)} restarts", fontsize=9)
        if sc is not None:
            fig.colorbar(sc, ax=ax, label="final bound")
        ax.legend(fontsize=7)
        ax2 = axes[1, j]
        ax2.plot(g["restart"], g["bound"], "o", color="0.4")
        bad = g["converged"] == False  # noqa: E712 (restart 0: not recorded)
        ax2.plot(g.loc[bad, "restart"], g.loc[bad, "bound"], "rx", ms=8, label="not converged")
        ax2.axhline(float(best.loc[case, "bound"]), color="r", lw=0.8)
        ax2.set_xlabel("restart (0 = pipeline ML estimate)")
        ax2.set_ylabel("final bound")
        ax2.legend(fontsize=7)
    fig.suptitle(f"Gadd et al.: type-II ML from random initialisations (scale: {scale})", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)
