"""Xiong et al. AMIS experiments, stages 4-5: IQR curves across replicates, operations to reach a precision, the paper's claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from ... import convergence

__all__ = [
    "cost_grid",
    "curves",
    "final_iqr",
    "ops_to_reach",
    "iqr_at",
    "MCMC_FAMILIES",
    "ops_to_reach_table",
    "claims",
    "median_interval",
    "replicate_matrices",
    "chain_convergence",
    "BOOTSTRAP_METHOD",
    "SEQUENTIAL_METHOD",
    "sequential_design",
    "sequential_decisions",
    "confirmatory_decision",
    "apply_confirmatory",
    "sequential_records",
]


# ---------------------------------------------------------------------------
# IQR curves, ops-to-reach, claims
# ---------------------------------------------------------------------------
def _runs(run_ds: xr.Dataset):
    out = []
    for r in range(run_ds.sizes["replicate"]):
        c = run_ds["cost"].values[r]
        ok = np.isfinite(c) & np.isfinite(run_ds["estimate"].values[r])
        out.append((convergence.Run(c[ok], run_ds["estimate"].values[r][ok]), run_ds["wall"].values[r][ok]))
    return out


def cost_grid(runs, n_points: int = 100) -> np.ndarray:
    """Log grid from the latest first cost to the latest last cost over the replicates.

    Unlike ``convergence.common_grid`` it extends to the longest replicate
    (MCMC runs with random tuning/step costs end at different costs); a
    replicate that has ended holds its final estimate (``convergence.on_grid``).
    """
    lo = max(float(r.cost[0]) for r in runs)
    hi = max(lo, max(float(r.cost[-1]) for r in runs))
    return np.geomspace(max(lo, 1.0), max(hi, lo, 1.0), n_points)


def curves(run_sets: list[xr.Dataset], n_points: int = 100) -> pd.DataFrame:
    """One IQR curve per (dataset, kernel, sampler): the replicates of all its blocks pooled."""
    groups: dict[tuple, list[xr.Dataset]] = {}
    for r in run_sets:
        groups.setdefault((r.attrs["dataset"], r.attrs["kernel"], r.attrs["sampler"]), []).append(r)
    frames = []
    for (dsn, kern, smp), parts in sorted(groups.items()):
        runs = [x for p in parts for x in _runs(p)]
        iqr = convergence.iqr_across_replicates([r for r, _ in runs], grid=cost_grid([r for r, _ in runs], n_points))
        walls = np.stack([np.interp(iqr.cost, r.cost, w) for r, w in runs])
        a = parts[0].attrs
        frames.append(pd.DataFrame({
            "dataset": dsn, "kernel": kern, "sampler": smp, "family": a["family"], "stand_in": a["stand_in"],
            "n": a["n"], "n_full": a.get("n_full", a["n"]), "n_replicates": len(runs), "cost": iqr.cost, "iqr": iqr.iqr, "q25": iqr.q25,
            "median": iqr.median, "q75": iqr.q75, "wall_median": np.median(walls, axis=0),
            "tuning_cost": float(np.median(np.concatenate([p["tuning_cost"].values for p in parts]))),
            "bookkeeping_fraction": float(np.nanmedian(np.concatenate([p["bookkeeping_fraction"].values
                                                                        for p in parts])))
            if a["family"] in ("is", "pm_amis") else np.nan,
        }))
    return pd.concat(frames, ignore_index=True)


def final_iqr(c: pd.DataFrame) -> float:
    return float(c["iqr"].iloc[-1])


def ops_to_reach(c: pd.DataFrame, target: float) -> tuple[float, float]:
    """First grid cost (and median wall seconds) at which the IQR is <= target; (inf, inf) if never."""
    ok = np.flatnonzero(c["iqr"].values <= target)
    if ok.size == 0:
        return math.inf, math.inf
    return float(c["cost"].values[ok[0]]), float(c["wall_median"].values[ok[0]])


def iqr_at(c: pd.DataFrame, cost: float) -> float:
    """IQR at the last grid cost <= ``cost`` (NaN before the curve starts)."""
    idx = np.searchsorted(c["cost"].values, cost, side="right") - 1
    return float(c["iqr"].values[idx]) if idx >= 0 else math.nan


def _comparable(a: float, b: float) -> bool:
    """Both curves have a value at the common cost.  A curve whose tuning alone costs more than
    the other's whole budget has none there (NaN): such a case is listed in the claim's
    ``cases`` with null and left out of the fraction, not counted as a loss."""
    return math.isfinite(a) and math.isfinite(b)


MCMC_FAMILIES = ("mh", "hmc", "slice")


def ops_to_reach_table(cur: pd.DataFrame) -> pd.DataFrame:
    """Per regression (data set, kernel): the smallest final IQR of any MCMC sampler, and each sampler's cost to reach it."""
    rows = []
    reg = cur[cur["family"].isin(("is",) + MCMC_FAMILIES)]
    for (dsn, kern), g in reg.groupby(["dataset", "kernel"], sort=True):
        per = {s: gg for s, gg in g.groupby("sampler")}
        mcmc = {s: c for s, c in per.items() if c["family"].iloc[0] in MCMC_FAMILIES}
        if not mcmc:
            continue
        best = min(mcmc, key=lambda s: final_iqr(mcmc[s]))
        target = final_iqr(mcmc[best])
        for s, c in per.items():
            ops, wall = ops_to_reach(c, target)
            rows.append({"dataset": dsn, "kernel": kern, "stand_in": int(c["stand_in"].iloc[0]), "sampler": s,
                         "family": c["family"].iloc[0], "target_iqr": target, "best_mcmc": best,
                         "ops_to_reach": ops, "wall_seconds_to_reach": wall, "final_iqr": final_iqr(c),
                         "budget_ops": float(c["cost"].iloc[-1])})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# claims, each decided on an interval over the replicates (issue 15 sections 1, 5)
# ---------------------------------------------------------------------------
#: claim -> what its interval is over (the claims JSON and the README say it per claim)
BOOTSTRAP_METHOD = ("{level:.0%} percentile bootstrap over replicates ({n_boot} draws): every sampler's replicates "
                    "resampled with replacement, independently of the other samplers' (separate random streams), "
                    "its IQR curve recomputed on the fixed cost grid of curves.csv, the claim's quantity recomputed")


def median_interval(x, level: float = 0.95) -> tuple[float, float, float]:
    """Median of ``x`` and its distribution-free interval [x_(k), x_(n+1-k)] (order statistics).

    k is the largest with 2 P(Bin(n, 1/2) <= k - 1) <= 1 - level, so the
    interval covers the population median with probability >= ``level``
    whatever the distribution (e.g. n = 9: the 2nd and 8th of 9, 96.1 %).
    Too few values for any such k: the interval is (NaN, NaN).
    """
    from scipy import stats

    x = np.sort(np.asarray(x, dtype=float))
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    j = -1  # 0-based index of x_(k)
    while j + 1 < n and stats.binom.cdf(j + 1, n, 0.5) <= (1 - level) / 2:
        j += 1
    med = float(np.median(x))
    return (med, math.nan, math.nan) if j < 0 else (med, float(x[j]), float(x[n - 1 - j]))


def replicate_matrices(run_sets: list[xr.Dataset], n_points: int = 100) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """(dataset, kernel, sampler) -> (grid, V): every replicate's running estimate (rows) on the grid of ``curves``.

    The grid is the one ``curves`` builds (same replicates pooled over blocks,
    same ``cost_grid``), so the IQR of V's columns is the ``iqr`` of curves.csv.
    """
    groups: dict[tuple, list[xr.Dataset]] = {}
    for r in run_sets:
        groups.setdefault((r.attrs["dataset"], r.attrs["kernel"], r.attrs["sampler"]), []).append(r)
    out = {}
    for key, parts in sorted(groups.items()):
        runs = [x for p in parts for x, _ in _runs(p)]
        grid = cost_grid(runs, n_points)
        out[key] = (grid, np.stack([convergence.on_grid(r, grid) for r in runs]))
    return out


def _iqr_rows(V: np.ndarray) -> np.ndarray:
    """IQR (type 7) of each row set: V (..., replicate, grid) -> (..., grid); NaN where a replicate has no value."""
    q25, q75 = np.percentile(V, [25, 75], axis=-2)
    return q75 - q25


class _Curves:
    """IQR curves of every (dataset, kernel, sampler): the point (all replicates) and bootstrap draws."""

    def __init__(self, cur: pd.DataFrame, mats: dict | None, rng, n_boot: int):
        self.grid, self.point, self.boot = {}, {}, {}
        if mats is not None:
            for key, (grid, V) in mats.items():
                self.grid[key], self.point[key] = grid, _iqr_rows(V)
                if n_boot and V.shape[0] >= 2:
                    self.boot[key] = _iqr_rows(V[rng.integers(0, V.shape[0], size=(n_boot, V.shape[0]))])
        else:  # curves only: point values, no interval
            for key, g in cur.groupby(["dataset", "kernel", "sampler"]):
                self.grid[key], self.point[key] = g["cost"].values.astype(float), g["iqr"].values.astype(float)
        self.n_boot = n_boot if self.boot else 0

    def keys(self, dataset=None, kernel=None):
        return [k for k in self.grid if (dataset is None or k[0] == dataset) and (kernel is None or k[1] == kernel)]

    def draw(self, b: int | None) -> dict:
        """IQR curves of the point (b None) or of bootstrap draw b."""
        return self.point if b is None else {k: v[b] for k, v in self.boot.items()}

    # quantities of one set of IQR curves I (key -> IQR on self.grid[key])
    def final_cost(self, key) -> float:
        return float(self.grid[key][-1])

    def at(self, I, key, cost) -> float:
        """IQR at the last grid cost <= cost (NaN before the curve starts), as ``iqr_at``."""
        i = np.searchsorted(self.grid[key], cost, side="right") - 1
        return float(I[key][i]) if i >= 0 else math.nan

    def reach(self, I, key, target) -> float:
        """First grid cost with IQR <= target (inf if never), as ``ops_to_reach``."""
        ok = np.flatnonzero(I[key] <= target)
        return float(self.grid[key][ok[0]]) if ok.size else math.inf


def _interval(c: _Curves, quantity, level: float):
    """(point, lo, hi) of ``quantity(I)`` over the bootstrap draws (percentile; NaN draws dropped)."""
    est = quantity(c.draw(None))
    if not c.n_boot or est is None or not np.isfinite(est) and not np.isinf(est):
        return est, math.nan, math.nan
    vals = np.array([quantity(c.draw(b)) for b in range(c.n_boot)], dtype=float)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return est, math.nan, math.nan
    a = (1 - level) / 2
    return est, float(np.quantile(vals, a, method="lower")), float(np.quantile(vals, 1 - a, method="higher"))


def _geometric_mean(ratios) -> float:
    """exp(mean log r) over the finite positive ratios (NaN when there is none)."""
    r = np.asarray([x for x in ratios if x is not None and np.isfinite(x) and x > 0], dtype=float)
    return float(np.exp(np.mean(np.log(r)))) if r.size else math.nan


def _ratio(a, b) -> float:
    """a / b in IEEE arithmetic (a bootstrap draw of identical replicates has IQR 0: x / 0 = inf, 0 / 0 = NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(a) / np.float64(b))


def _num(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _end(x):
    """An interval end for JSON: a float, "inf"/"-inf" (an unbounded end is still an end), None if unknown."""
    return None if x is None or np.isnan(x) else float(x) if np.isfinite(x) else str(float(x))


def _decide(lo, hi, threshold, side):
    """``claims.decide``, with side "above_strict" for a claim "quantity > threshold" (a fraction of cases)."""
    from ... import claims as claims_mod

    if side == "above_strict":
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            return "INCONCLUSIVE"
        return "PASS" if lo > threshold else "FAIL" if hi <= threshold else "INCONCLUSIVE"
    if side == "below" and math.isfinite(lo) and hi == math.inf:  # an unbounded upper end is still an end
        return "FAIL" if lo > threshold else "INCONCLUSIVE"
    return claims_mod.decide(lo, hi, threshold, side)


def _record(cid, statement, measured, paper, quantity_name, est_lo_hi, threshold, side, method, *, no_case=None,
            figures=None):
    est, lo, hi = est_lo_hi
    rec = {"id": cid, "statement": statement, "measured": measured or {"n_cases": 0}, "paper": paper,
           "interval": {"quantity": quantity_name, "estimate": _end(est), "lo": _end(lo), "hi": _end(hi),
                        "threshold": threshold, "side": side.replace("_strict", ""), "method": method}}
    if figures:
        rec["figures"] = figures
    if no_case:
        rec["verdict"], rec["reason"] = "INCONCLUSIVE", no_case
    else:
        rec["verdict"] = _decide(lo, hi, threshold, side)
        if rec["verdict"] == "INCONCLUSIVE":
            rec["reason"] = ("the interval has no ends (too few replicates or repeated timings to bound it, or "
                             "curves without their replicates)"
                             if not (math.isfinite(lo) or math.isinf(lo)) else
                             f"the {method.split(' (')[0]} interval [{_fmt(lo)}, {_fmt(hi)}] contains the threshold "
                             f"{threshold}")
    rec["passed"] = rec["verdict"] == "PASS"
    return rec


def _fmt(x):
    return f"{x:.3g}" if math.isfinite(x) else str(x)


def _mcmc_convergence(chains: dict | None, keys) -> dict:
    """R-hat / bulk ESS (across replicate chains) of the MCMC samplers among ``keys`` (reported, not gated)."""
    if not chains:
        return {}
    return {"/".join(k): chains[k] for k in keys if k in chains}


def chain_convergence(paths) -> dict[tuple, dict]:
    """(dataset, kernel, sampler) -> max rank-normalised split R-hat and min bulk ESS of the MCMC replicates' psi.

    The replicates of one MCMC sampler are independent chains from
    N(m, (-H)^{-1}) starts; their ArviZ groups (``run_block``) are pooled over
    blocks.  Importance samplers have no chains and are skipped.
    """
    from gpbayes_repro import io

    from ... import claims as claims_mod

    draws: dict[tuple, list[np.ndarray]] = {}
    for p in paths:
        try:
            g = io.read_inference_data(p, ["posterior"])["posterior"]
        except KeyError:
            continue
        key = (str(g.attrs["dataset"]), str(g.attrs["kernel"]), str(g.attrs["sampler"]))
        draws.setdefault(key, []).append(g["psi"].transpose("chain", "draw", "param").values)
    out = {}
    for key, parts in sorted(draws.items()):
        n = min(a.shape[1] for a in parts)
        out[key] = claims_mod.convergence(np.concatenate([a[:, -n:] for a in parts], axis=0))
        out[key]["n_chains"] = int(sum(a.shape[0] for a in parts))
        out[key]["n_draws"] = int(n)
    return out


def claims(cur: pd.DataFrame, reach: pd.DataFrame, refs: list[dict], ccfg: dict, *, runs: list[xr.Dataset] | None = None,
           chains: dict | None = None, seed: int = 0) -> list[dict]:
    """The claims 1, 2a, 2b, 3, 4a-c, 5a-b (MAMIS-P) and the bookkeeping item, each decided on an interval.

    ``reach`` is not used: claims 1/2a recompute ops-to-reach from the
    replicate curves (as ``ops_to_reach_table`` does from curves.csv) so that
    the bootstrap can redo it.  ``runs`` (the run blocks behind ``cur``) give the replicates every IQR is
    bootstrapped over (``BOOTSTRAP_METHOD``); without them only point values
    exist and every curve claim is INCONCLUSIVE.  ``chains``
    (``chain_convergence``) adds the R-hat / ESS of the MCMC samplers a claim
    compares.  The bookkeeping item is decided on the repeated timings of the
    reference runs (``references_table``: median share and its order-statistic
    interval), never on one timing.

    ``ccfg["interval"] == "iqr_pivot_sequential"`` (the shipped config; needs
    ``ccfg["sequential"]``, the scale's design) decides the curve claims with
    ``sequential_decisions`` / ``sequential_records`` instead (issue 26); without the
    key the percentile bootstrap above decides them (the method before).
    """
    from gpbayes import rng as rng_mod

    if runs and ccfg.get("interval") == "iqr_pivot_sequential":
        # issue 26: calibrated IQR-ratio intervals, sequential over replicate blocks (``sequential_decisions``);
        # statements, point values and figures from the point-only records
        point = claims(cur, reach, refs, {**ccfg, "interval": "point"}, chains=chains, seed=seed)
        return sequential_records(point, sequential_decisions(runs, ccfg, ccfg["sequential"]), runs, ccfg)
    level = float(ccfg.get("level", 0.95))
    n_boot = int(ccfg.get("bootstrap_draws", 2000))
    mats = replicate_matrices(runs) if runs else None
    c = _Curves(cur, mats, rng_mod.stream(seed, "amis", "claims", "bootstrap"), n_boot)
    method = BOOTSTRAP_METHOD.format(level=level, n_boot=c.n_boot) if c.n_boot else "point values only (no replicates)"
    fam = {k: (cur.loc[(cur["dataset"] == k[0]) & (cur["kernel"] == k[1]) & (cur["sampler"] == k[2]), "family"]
               .iloc[0]) for k in c.keys()} if not cur.empty else {}
    out = []

    # claims 1 and 2a: AMIS family vs best MCMC in ops to the best-MCMC final IQR ("much" for 2a: much_factor)
    much = float(ccfg["much_factor"])
    for cid, kern, fam_is in (("1", "rbf", ("amis", "mamis")), ("2a", "ard", ("amis",))):
        sets = {}
        for dsn in sorted({k[0] for k in c.keys(kernel=kern)}):
            ks = c.keys(dsn, kern)
            mc = [k for k in ks if fam.get(k) in MCMC_FAMILIES]
            isk = [k for k in ks if k[2] in fam_is]
            if mc and isk:
                sets[dsn] = (isk, mc)

        def ratio(I, dsn):
            isk, mc = sets[dsn]
            target = np.nanmin([I[k][-1] for k in mc])
            o_is = min(c.reach(I, k, target) for k in isk)
            o_mc = min(c.reach(I, k, target) for k in mc)
            return _ratio(o_is, o_mc)

        per = {}
        for dsn, (isk, mc) in sets.items():
            I = c.draw(None)
            target = float(np.nanmin([I[k][-1] for k in mc]))
            e, lo, hi = _interval(c, lambda I, d=dsn: ratio(I, d), level)
            per[dsn] = {"target_iqr": _num(target), "is_ops": _num(min(c.reach(I, k, target) for k in isk)),
                        **{f"{f}_ops": _num(min([c.reach(I, k, target) for k in mc if fam[k] == f], default=math.inf))
                           for f in MCMC_FAMILIES},
                        "ops_ratio": _end(e), "ops_ratio_lo": _end(lo), "ops_ratio_hi": _end(hi)}
        worst = (lambda I: max(ratio(I, d) for d in sets)) if sets else (lambda I: None)
        meas = {"per_dataset": per, "mcmc_convergence": _mcmc_convergence(
            chains, [k for d in sets for k in sets[d][1]])} if sets else {}
        out.append(_record(
            f"claim{cid}",
            f"{kern.upper()} regression: {'AMIS/MAMIS reach' if cid == '1' else 'AMIS reaches'} the IQR of E||theta|| "
            "that the best MCMC sampler reaches at the end of its budget with no more O(n^3) operations than the "
            "best MH, best HMC-family and slice sampler, on every data set",
            meas, "Fig. 1: yes on Concrete, Housing, Parkinsons",
            "max over data sets of ops_to_reach(best of AMIS family) / ops_to_reach(best MCMC)",
            _interval(c, worst, level) if sets else (None, math.nan, math.nan), 1.0 if cid == "1" else much, "below",
            method,
            no_case=None if sets else "no data set with both an AMIS-family and an MCMC run", figures=[
                "figures/amis/fig1.pdf"]))

    # claim 2(b): MAMIS slow on the higher-dimensional ARD sets, AMIS->MAMIS fixes it
    sf = float(ccfg["slow_factor"])
    cases, not_run = {}, []
    for dsn in ccfg["mamis_slow_datasets"]:
        ks = {s: (dsn, "ard", s) for s in ("mamis", "amis_mamis", "amis")}
        if not all(k in c.grid for k in ks.values()):
            not_run.append(dsn)
            continue
        cost = min(c.final_cost(ks["mamis"]), c.final_cost(ks["amis_mamis"]))
        cases[dsn] = (ks, cost)

    def slow_q(I, dsn):
        ks, cost = cases[dsn]
        i_m, i_s = c.at(I, ks["mamis"], cost), c.at(I, ks["amis_mamis"], cost)
        i_a = c.at(I, ks["amis"], min(cost, c.final_cost(ks["amis"])))
        return min(_ratio(i_m, sf * i_a), _ratio(i_m, i_s))

    per = {}
    for dsn, (ks, cost) in cases.items():
        I = c.draw(None)
        i_m, i_s = c.at(I, ks["mamis"], cost), c.at(I, ks["amis_mamis"], cost)
        i_a = c.at(I, ks["amis"], min(cost, c.final_cost(ks["amis"])))
        e, lo, hi = _interval(c, lambda I, d=dsn: slow_q(I, d), level)
        per[dsn] = {"at_ops": cost, "iqr_mamis": _num(i_m), "iqr_amis_mamis": _num(i_s), "iqr_amis": _num(i_a),
                    "q": _end(e), "q_lo": _end(lo), "q_hi": _end(hi)}
    out.append(_record(
        "claim2b",
        "ARD regression: on the higher-dimensional sets MAMIS alone is slow (its IQR exceeds "
        f"{sf}x AMIS's at the same cost) and AMIS->MAMIS has a smaller IQR than MAMIS",
        {"per_dataset": per, "not_run": not_run} if per else {}, "Figs. 7-8: MAMIS slow on Housing and Parkinsons ARD, "
        "AMIS-MAMIS converges",
        f"min over data sets of min(IQR_MAMIS / ({sf} IQR_AMIS), IQR_MAMIS / IQR_AMIS->MAMIS) at the same cost",
        _interval(c, lambda I: min(slow_q(I, d) for d in cases), level) if cases else (None, math.nan, math.nan),
        1.0, "above", method, no_case=None if cases else "none of the named ARD data sets has MAMIS, AMIS->MAMIS and "
        "AMIS runs", figures=[f"figures/amis/appendix_ard_{d}.pdf" for d in cases]))

    # claim 3: full beats diagonal covariance
    fd = []
    for (dsn, kern, smp) in c.keys():
        for full, diag in (("amis", "amis_d"), ("mamis", "mamis_d")):
            if smp == full and (dsn, kern, diag) in c.grid:
                kf, kd = (dsn, kern, full), (dsn, kern, diag)
                fd.append((f"{dsn}/{kern}/{full}", kf, kd, min(c.final_cost(kf), c.final_cost(kd))))

    def gmean_full(I):
        return _geometric_mean([_ratio(c.at(I, kf, cost), c.at(I, kd, cost)) for _, kf, kd, cost in fd])

    I0 = c.draw(None)
    per = {name: {"iqr_full": _num(c.at(I0, kf, cost)), "iqr_diag": _num(c.at(I0, kd, cost))}
           for name, kf, kd, cost in fd}
    out.append(_record(
        "claim3", "Full-covariance AMIS/MAMIS have a smaller IQR than their diagonal variants at the same cost on "
        "balance over the (data set, kernel, method) cases: the geometric mean of IQR_full / IQR_diag is below 1",
        {"geometric_mean": _num(gmean_full(I0)) if fd else None, "n_cases": len(fd), "cases": per} if fd else {},
        "Appendix A-B: full better than diagonal", "geometric mean over the cases of IQR_full / IQR_diag",
        _interval(c, gmean_full, level) if fd else (None, math.nan, math.nan), 1.0, "below",
        method, no_case=None if fd else "no (data set, kernel) with both a full and a diagonal variant"))

    # claim 4: classification (cases whose two curves share no cost are listed with null and left out)
    cls = [k for k in c.keys() if k[2].startswith("pm_")]

    def pairs(a_name, b_name):
        res = []
        for (dsn, kern) in sorted({k[:2] for k in cls}):
            ka, kb = (dsn, kern, a_name(dsn, kern)), (dsn, kern, b_name(dsn, kern))
            if ka in c.grid and kb in c.grid:
                cost = min(c.final_cost(ka), c.final_cost(kb))
                res.append((ka, kb, cost, _comparable(c.at(I0, ka, cost), c.at(I0, kb, cost))))
        return res

    comp = pairs(lambda d, k: "pm_amis_ep_64", lambda d, k: "pm_mh_ep_64")
    nimp = [p for m in ("pm_amis", "pm_mh") for ap in ("la", "ep")
            for p in pairs(lambda d, k, m=m, ap=ap: f"{m}_{ap}_64", lambda d, k, m=m, ap=ap: f"{m}_{ap}_1")]
    eplx = [p for m in ("pm_amis", "pm_mh")
            for p in pairs(lambda d, k, m=m: f"{m}_ep_64", lambda d, k, m=m: f"{m}_la_64")]

    def cases_of(ps, names, label):
        return {label(ka): {names[0]: _num(c.at(I0, ka, cost)), names[1]: _num(c.at(I0, kb, cost))}
                for ka, kb, cost, _ in ps}

    def gmean(ps):
        return lambda I: _geometric_mean([_ratio(c.at(I, ka, cost), c.at(I, kb, cost)) for ka, kb, cost, ok in ps if ok])

    def conv_of(ps):
        return _mcmc_convergence(chains, [k for ka, kb, _, _ in ps for k in (ka, kb) if k[2].startswith("pm_mh")])

    cf = float(ccfg["competitive_factor"])
    ok_comp = [p for p in comp if p[3]]
    out.append(_record(
        "claim4a", f"Classification, EP, N_imp=64: PM-AMIS's IQR is within {cf}x PM-MH's at the same cost in every case",
        {"cases": cases_of(comp, ("iqr_pm_amis", "iqr_pm_mh"), lambda k: f"{k[0]}/{k[1]}"),
         "mcmc_convergence": conv_of(comp)} if comp else {},
        "Fig. 2: competitive in all EP cases", "max over comparable cases of IQR_PM-AMIS / IQR_PM-MH",
        _interval(c, lambda I: max(_ratio(c.at(I, ka, cost), c.at(I, kb, cost)) for ka, kb, cost, _ in ok_comp), level)
        if ok_comp else (None, math.nan, math.nan), cf, "below", method,
        no_case=None if ok_comp else "no comparable case (the runs it compares are missing or their IQRs are not "
        "comparable)", figures=["figures/amis/fig2.pdf"]))
    for cid, ps, names, label, thr, side, stmt, paper, figs in (
        ("claim4b", nimp, ("iqr_64", "iqr_1"), lambda k: f"{k[0]}/{k[1]}/{k[2][:-3]}", much, "below",
         f"N_imp=64 converges much faster than N_imp=1 on balance over the cases: the geometric mean of IQR_64 / "
         f"IQR_1 at the same cost is below {much:g}", "Figs. 9-10: 64 much faster than 1",
         ["figures/amis/fig9.pdf", "figures/amis/fig10.pdf"]),
        ("claim4c", eplx, ("iqr_ep", "iqr_la"), lambda k: f"{k[0]}/{k[1]}/{k[2][:-6]}", 1.0, "below",
         "EP converges faster than LA (N_imp=64) on balance over the cases: the geometric mean of IQR_EP / IQR_LA at "
         "the same cost is below 1", "Fig. 2: EP faster in most cases", ["figures/amis/fig2.pdf"]),
    ):
        ok = [p for p in ps if p[3]]
        out.append(_record(
            cid, stmt, {"geometric_mean": _num(gmean(ps)(I0)) if ok else None, "n_comparable": len(ok),
                        "cases": cases_of(ps, names, label), "mcmc_convergence": conv_of(ps)} if ps else {},
            paper, "geometric mean over the comparable cases of the IQR ratio", _interval(c, gmean(ps), level) if ok else
            (None, math.nan, math.nan), thr, side, method,
            no_case=None if ok else "no comparable case (the runs it compares are missing or their IQRs are not "
            "comparable)", figures=figs))

    # claims 5a/5b: MAMIS-P (Sec. 4.5.2, Housing ARD): "even though MAMIS-P improves on MAMIS, its
    # convergence is slower than AMIS-MAMIS" -- IQR ratios at the common cost of each pair
    for cid, other, side, stmt in (
        ("claim5a", "mamis", "below", "MAMIS-P improves on MAMIS: its IQR is smaller than MAMIS's at the same cost"),
        ("claim5b", "amis_mamis", "above", "MAMIS-P converges more slowly than AMIS->MAMIS: its IQR is larger than "
         "AMIS->MAMIS's at the same cost"),
    ):
        ps = []
        for dsn in ccfg.get("mamis_p_datasets", ["housing"]):
            kp, ko = (dsn, "ard", "mamis_p"), (dsn, "ard", other)
            if kp in c.grid and ko in c.grid:
                cost = min(c.final_cost(kp), c.final_cost(ko))
                if _comparable(c.at(I0, kp, cost), c.at(I0, ko, cost)):
                    ps.append((kp, ko, cost))
        agg = max if side == "below" else min
        q = (lambda I, ps=ps, agg=agg: agg(_ratio(c.at(I, kp, cost), c.at(I, ko, cost)) for kp, ko, cost in ps))
        out.append(_record(
            cid, f"ARD regression ({', '.join(ccfg.get('mamis_p_datasets', ['housing']))}): {stmt}",
            {"cases": {f"{kp[0]}/ard": {"at_ops": cost, "iqr_mamis_p": _num(c.at(I0, kp, cost)),
                                        f"iqr_{other}": _num(c.at(I0, ko, cost))} for kp, ko, cost in ps}}
            if ps else {}, "Sec. 4.5.2: \"even though MAMIS-P improves on MAMIS, its convergence is slower than "
            "AMIS-MAMIS (bottom-right of Fig. 7)\"", f"{'max' if side == 'below' else 'min'} over data sets of "
            f"IQR_MAMIS-P / IQR_{other.upper().replace('_', '->')}", _interval(c, q, level) if ps else
            (None, math.nan, math.nan), 1.0, side, method,
            no_case=None if ps else f"no named ARD data set with comparable MAMIS-P and {other} runs",
            figures=[f"figures/amis/appendix_ard_{kp[0]}.pdf" for kp, _, _ in ps]))

    # performance: AMIS bookkeeping share at the reference runs' T x N_t, decided on the
    # repeated CPU timings of each reference run (median and its order-statistic
    # interval, ``references_table``), never on one timing; the one-run shares are reported
    thr = float(ccfg["max_bookkeeping_fraction"])
    fr = {f"{r['dataset']}/{r['kernel']}": {
        "median_share": _num(r.get("timing_share_median", math.nan)), "share_lo": _num(r.get("timing_share_lo", math.nan)),
        "share_hi": _num(r.get("timing_share_hi", math.nan)), "repeats": r.get("timing_repeats", 0),
        "one_run_cpu_fraction": _num(r["bookkeeping_cpu_fraction"]), "one_run_wall_fraction": _num(r["bookkeeping_fraction"]),
        "T": r["n_iterations"], "N_t": r["n_per_iteration"]} for r in refs}
    meds = [r.get("timing_share_median", math.nan) for r in refs]
    los = [r.get("timing_share_lo", math.nan) for r in refs]
    his = [r.get("timing_share_hi", math.nan) for r in refs]
    est = float(np.nanmax(meds)) if refs and np.any(np.isfinite(meds)) else None
    lo = max(los) if refs and all(np.isfinite(los)) else math.nan
    hi = max(his) if refs and all(np.isfinite(his)) else math.nan
    out.append(_record(
        "performance", f"AMIS CPU time spent outside marginal-likelihood evaluations stays below {thr:.0%} (reference "
        "runs, the paper's T x N_t)", {"runs": fr} if refs else {},
        "issue requirement (< 10% at paper T x N_t); the paper counts cost in O(n^3) operations and states that "
        "AMIS's cost lies in the evaluations of f (Sec. 4.4)", "largest over reference runs of the median "
        "bookkeeping share of CPU time", (est, lo, hi), thr, "below",
        "distribution-free interval of each run's median over repeated timings (order statistics, >= "
        f"{level:.0%}; bookkeeping replayed, target re-timed on a subset), largest lower and upper ends over runs",
        no_case=None if refs else "no reference run"))
    return out


# ---------------------------------------------------------------------------
# calibrated intervals and a sequential replicate design (issue 26 sections 1, 4)
# ---------------------------------------------------------------------------
#: how the sequential claims are decided (the claims JSON carries it per claim)
SEQUENTIAL_METHOD = (
    "IQR ratio of two samplers' replicates at fixed O(n^3) costs, pivot interval with a t(3) reference shape "
    "(intervals.iqr_ratio; coverage measured: gpbayes_repro.coverage); sequential over replicate blocks: "
    "{looks} planned looks, each at level 1 - {alpha:g}/{looks} (Bonferroni over the looks){extra}")


def _by_replicate(run_sets: list[xr.Dataset]) -> dict[tuple, list[tuple[int, convergence.Run]]]:
    """(dataset, kernel, sampler) -> [(replicate index, run)] sorted by replicate index (blocks pooled)."""
    out: dict[tuple, list] = {}
    for r in run_sets:
        key = (r.attrs["dataset"], r.attrs["kernel"], r.attrs["sampler"])
        reps = r["replicate"].values if "replicate" in r.coords else np.arange(r.sizes["replicate"])
        for i, (run, _) in zip(reps, _runs(r)):
            out.setdefault(key, []).append((int(i), run))
    return {k: sorted(v, key=lambda t: t[0]) for k, v in sorted(out.items())}


class _Look:
    """The replicates of every sampler at one look: the first ``n`` of each (by replicate index), on their own grid.

    A sampler that stopped earlier (every comparison it enters decided) has fewer than
    the look's count: it enters with all it has (its comparisons' verdicts are frozen;
    only the selection of the best MCMC sampler for claims 1 / 2a reads it again).
    """

    def __init__(self, reps: dict, counts: dict, families: dict, n_points: int = 100):
        self.grid, self.V, self.family = {}, {}, families
        for key, rr in reps.items():
            n = min(counts.get(key, len(rr)), len(rr))
            if n < 2:
                continue
            runs = [r for _, r in rr[:n]]
            g = cost_grid(runs, n_points)
            self.grid[key], self.V[key] = g, np.stack([convergence.on_grid(r, g) for r in runs])

    def keys(self, dataset=None, kernel=None):
        return [k for k in self.grid if (dataset is None or k[0] == dataset) and (kernel is None or k[1] == kernel)]

    def final_cost(self, key) -> float:
        return float(self.grid[key][-1])

    def values(self, key, cost) -> np.ndarray | None:
        """Every replicate's estimate at the last grid cost <= ``cost`` (None before the curve starts)."""
        i = np.searchsorted(self.grid[key], cost, side="right") - 1
        return self.V[key][:, i] if i >= 0 else None

    def iqr(self, key, cost) -> float:
        v = self.values(key, cost)
        return math.nan if v is None else float(_iqr_rows(v[:, None])[0])

    def reach(self, key, target) -> float:
        """First grid cost with IQR <= target (inf if never)."""
        ok = np.flatnonzero(_iqr_rows(self.V[key]) <= target)
        return float(self.grid[key][ok[0]]) if ok.size else math.inf


# a decision tree: ("leaf", label, (key_a, cost_a), (key_b, cost_b), threshold, side) | ("all"|"any", [children])
# | ("fixed", label, verdict) for a comparison settled without uncertainty (a curve that starts after the cost)
def _leaf_interval(look: _Look, leaf, level):
    _, _, (ka, ca), (kb, cb), _, _ = leaf
    a, b = look.values(ka, ca), look.values(kb, cb)
    if a is None or b is None:
        return math.nan, math.nan, math.nan
    from ... import intervals

    return intervals.iqr_ratio(a, b, level)


def _leaf_levels(node, a_pass: float, a_fail: float, out: dict) -> dict:
    """Error rate of each leaf's PASS and FAIL decisions, from its path in the tree.

    "all" (an intersection): PASS needs every child PASS at the node's rate (an
    intersection-union test, Berger 1982), FAIL needs one child FAIL at rate / m
    (Bonferroni over the m children); "any" (a union): the dual -- PASS of one child at
    rate / m, FAIL of every child at the node's rate.
    """
    kind = node[0]
    if kind in ("leaf", "fixed"):
        out[node[1]] = (a_pass, a_fail)
        return out
    m = max(len(node[1]), 1)
    for k in node[1]:
        _leaf_levels(k, a_pass, a_fail / m, out) if kind == "all" else _leaf_levels(k, a_pass / m, a_fail, out)
    return out


def _combine(node, verdicts: dict):
    """Three-valued verdict of a tree from its leaves' ("PASS" / "FAIL" / None = undecided)."""
    kind = node[0]
    if kind in ("leaf", "fixed"):
        return verdicts.get(node[1])
    vs = [_combine(k, verdicts) for k in node[1]]
    if kind == "all":
        return "PASS" if vs and all(v == "PASS" for v in vs) else "FAIL" if "FAIL" in vs else None
    if kind == "any":
        return "PASS" if "PASS" in vs else "FAIL" if vs and all(v == "FAIL" for v in vs) else None
    raise ValueError(f"node kind must be 'leaf', 'fixed', 'all' or 'any', got {kind!r}")


def _relevant_leaves(node, verdicts: dict) -> list:
    """Undecided leaves whose verdict can still change the tree's (under undecided nodes only)."""
    if _combine(node, verdicts) is not None or node[0] == "fixed":
        return []
    if node[0] == "leaf":
        return [node]
    return [x for k in node[1] for x in _relevant_leaves(k, verdicts)]


def _tree_keys(node) -> set:
    if node[0] == "leaf":
        return {node[2][0], node[3][0]}
    if node[0] == "fixed":
        return set()
    return set().union(*[_tree_keys(k) for k in node[1]]) if node[1] else set()


def _leaf(label, a, b, thr, side):
    return ("leaf", label, a, b, float(thr), side)


def _claim_trees(look: _Look, ccfg: dict) -> dict:
    """Every curve claim at one look: ("tree", node, info) or ("cases", {label: leaf}, info) or None (no case)."""
    fam = look.family
    out = {}
    much = float(ccfg["much_factor"])
    # claims 1, 2a: AMIS family reaches, within the ops the best MCMC sampler needed to reach its own final IQR,
    # the smallest final IQR of any MCMC sampler (every MCMC sampler's final IQR is a leaf: the minimum is an
    # intersection); "AMIS/MAMIS": either member (a union)
    for cid, kern, fam_is, thr in (("claim1", "rbf", ("amis", "mamis"), 1.0), ("claim2a", "ard", ("amis",), much)):
        per_ds, info = [], {}
        for dsn in sorted({k[0] for k in look.keys(kernel=kern)}):
            ks = look.keys(dsn, kern)
            mc = [k for k in ks if fam.get(k) in MCMC_FAMILIES]
            isk = [k for k in ks if k[2] in fam_is]
            if not (mc and isk):
                continue
            best = min(mc, key=lambda k: look.iqr(k, look.final_cost(k)))
            c_star = look.reach(best, look.iqr(best, look.final_cost(best)))
            members = []
            for a in isk:
                if look.grid[a][0] > c_star:
                    members.append(("fixed", f"{dsn}/{a[2]}", "FAIL"))
                    continue
                members.append(("all", [_leaf(f"{dsn}: {a[2]} at the best MCMC's ops vs {k[2]} at its end", (a, c_star),
                                              (k, look.final_cost(k)), thr, "below") for k in mc]))
            per_ds.append(("any", members))
            info[dsn] = {"best_mcmc": best[2], "ops_best_mcmc": c_star,
                         "target_iqr": _num(look.iqr(best, look.final_cost(best))),
                         **{f"iqr_{a[2]}_at_ops": _num(look.iqr(a, c_star)) for a in isk}}
        out[cid] = ("tree", ("all", per_ds), info) if per_ds else None
    # claim 2b: MAMIS slow (its IQR >= slow_factor x AMIS's) and AMIS->MAMIS better than MAMIS, every named set
    sf = float(ccfg["slow_factor"])
    kids, info = [], {}
    for dsn in ccfg["mamis_slow_datasets"]:
        ks = {s: (dsn, "ard", s) for s in ("mamis", "amis_mamis", "amis")}
        if not all(k in look.grid for k in ks.values()):
            continue
        cost = min(look.final_cost(ks["mamis"]), look.final_cost(ks["amis_mamis"]))
        kids += [_leaf(f"{dsn}: MAMIS / AMIS", (ks["mamis"], cost), (ks["amis"], min(cost, look.final_cost(ks["amis"]))),
                       sf, "above"),
                 _leaf(f"{dsn}: MAMIS / AMIS->MAMIS", (ks["mamis"], cost), (ks["amis_mamis"], cost), 1.0, "above")]
        info[dsn] = {"at_ops": cost}
    out["claim2b"] = ("tree", ("all", kids), info) if kids else None
    # claim 3: full vs diagonal, every (data set, kernel, method) a case
    cases = {}
    for (dsn, kern, smp) in look.keys():
        for full, diag in (("amis", "amis_d"), ("mamis", "mamis_d")):
            if smp == full and (dsn, kern, diag) in look.grid:
                kf, kd = (dsn, kern, full), (dsn, kern, diag)
                cost = min(look.final_cost(kf), look.final_cost(kd))
                cases[f"{dsn}/{kern}/{full}"] = _leaf(f"{dsn}/{kern}/{full}", (kf, cost), (kd, cost), 1.0, "below")
    # pooled "on balance" over the cases (issue 32): one interval for the geometric mean of the cases' ratios
    out["claim3"] = ("pooled", cases, {"threshold": 1.0, "side": "below"}) if cases else None

    # claim 4: classification pairs at the common cost (not comparable when a curve starts after it: left out)
    cls = sorted({k[:2] for k in look.keys() if k[2].startswith("pm_")})

    def pairs(a_name, b_name, label):
        res = {}
        for (dsn, kern) in cls:
            ka, kb = (dsn, kern, a_name), (dsn, kern, b_name)
            if ka in look.grid and kb in look.grid:
                cost = min(look.final_cost(ka), look.final_cost(kb))
                if look.values(ka, cost) is not None and look.values(kb, cost) is not None:
                    res[label(dsn, kern)] = ((ka, cost), (kb, cost))
        return res

    cf = float(ccfg["competitive_factor"])
    comp = pairs("pm_amis_ep_64", "pm_mh_ep_64", lambda d, k: f"{d}/{k}")
    out["claim4a"] = ("tree", ("all", [_leaf(lab, a, b, cf, "below") for lab, (a, b) in comp.items()]), {}) \
        if comp else None
    nimp = {}
    for m in ("pm_amis", "pm_mh"):
        for ap in ("la", "ep"):
            nimp.update({lab: _leaf(lab, a, b, much, "below") for lab, (a, b) in
                         pairs(f"{m}_{ap}_64", f"{m}_{ap}_1", lambda d, k, m=m, ap=ap: f"{d}/{k}/{m}_{ap}").items()})
    out["claim4b"] = ("pooled", nimp, {"threshold": much, "side": "below"}) if nimp else None
    eplx = {}
    for m in ("pm_amis", "pm_mh"):
        eplx.update({lab: _leaf(lab, a, b, 1.0, "below") for lab, (a, b) in
                     pairs(f"{m}_ep_64", f"{m}_la_64", lambda d, k, m=m: f"{d}/{k}/{m}").items()})
    out["claim4c"] = ("pooled", eplx, {"threshold": 1.0, "side": "below"}) if eplx else None
    # claims 5a/5b: MAMIS-P vs MAMIS (<= 1) and vs AMIS->MAMIS (>= 1) at each pair's common cost
    for cid, other, side in (("claim5a", "mamis", "below"), ("claim5b", "amis_mamis", "above")):
        kids = []
        for dsn in ccfg.get("mamis_p_datasets", ["housing"]):
            kp, ko = (dsn, "ard", "mamis_p"), (dsn, "ard", other)
            if kp in look.grid and ko in look.grid:
                cost = min(look.final_cost(kp), look.final_cost(ko))
                if look.values(kp, cost) is not None and look.values(ko, cost) is not None:
                    kids.append(_leaf(f"{dsn}/ard: MAMIS-P / {other}", (kp, cost), (ko, cost), 1.0, side))
        out[cid] = ("tree", ("all", kids), {}) if kids else None
    return out


def _pooled_interval(look: _Look, cases: dict, level: float):
    """(estimate, lo, hi, cases used, per-case estimates) of the geometric mean of the cases' IQR ratios."""
    from ... import intervals

    pairs, per = [], {}
    for lab, leaf in cases.items():
        _, _, (ka, ca), (kb, cb), _, _ = leaf
        a, b = look.values(ka, ca), look.values(kb, cb)
        if a is None or b is None:
            per[lab] = {"estimate": None, "n": _look_counts(look, {ka, kb}), "costs": [ca, cb]}
            continue
        e, _, _ = intervals.iqr_ratio(a, b, level)
        per[lab] = {"estimate": _num(e), "n": _look_counts(look, {ka, kb}), "costs": [ca, cb]}
        pairs.append((a, b))
    g, lo, hi, m = intervals.iqr_ratio_geometric_mean(pairs, level) if pairs else (math.nan,) * 3 + (0,)
    return g, lo, hi, m, per


def _pooled_futile(est: float, n_cases: int, task: str, counts: dict, level: float, thr: float, side: str) -> bool:
    """As ``_futile`` for a pooled claim: the cap's interval around the current geometric mean decides nothing."""
    from ... import claims as claims_mod
    from ... import intervals

    if not (np.isfinite(est) and est > 0 and n_cases):
        return True
    n = counts[task][-1]
    ql, qh = intervals.iqr_ratio_pivot_mean_quantiles([(n, n)] * n_cases, [(1 - level) / 2, (1 + level) / 2])
    return claims_mod.decide(est * math.exp(-qh), est * math.exp(-ql), thr, side) == "INCONCLUSIVE"


def sequential_design(seq: dict, task: str) -> list[int]:
    """Replicate counts of the looks of ``task`` ("regression" | "classification"): start, start + block, ... cap."""
    from ... import amis_design

    return amis_design.counts(seq, task)


def _task(key) -> str:
    return "classification" if key[2].startswith("pm_") else "regression"


def sequential_decisions(run_sets: list[xr.Dataset], ccfg: dict, seq: dict, *, upto_look: int | None = None,
                         n_points: int = 100) -> dict:
    """Every curve claim decided look by look on the replicates present (issue 26 section 4).

    Look j uses the first ``sequential_design(seq, task)[j]`` replicates (by replicate
    index: every replicate has its own random stream, so the same seed gives the same
    replicates whichever blocks ran) of each sampler, every interval at 1 - alpha / J
    (J planned looks: Bonferroni over the looks, alpha = 1 - ``ccfg["level"]``).  A tree
    claim (an intersection / union of IQR-ratio comparisons) stops at the first look
    that decides it.  A pooled claim (3, 4b, 4c; issue 32) decides the geometric mean of
    its cases' IQR ratios on one interval at 1 - alpha / J
    (``intervals.iqr_ratio_geometric_mean``) and stops at the first look that decides it.  A comparison
    that even the cap could not decide at its current estimate (``_futile``) gets no more
    blocks and is not looked at again.  Returns
    {"claims": {id: {...}}, "extend": sorted keys that need one more block after the
    last look evaluated (empty at the cap)}.
    """
    from ... import claims as claims_mod

    alpha = 1 - float(ccfg.get("level", 0.95))
    J = int(seq["looks"])
    reps = _by_replicate(run_sets)
    families = {k: r.attrs["family"] for r in run_sets for k in [(r.attrs["dataset"], r.attrs["kernel"],
                                                                   r.attrs["sampler"])]}
    counts = {t: sequential_design(seq, t) for t in ("regression", "classification")}
    last = J - 1 if upto_look is None else int(upto_look)
    state: dict[str, dict] = {}
    extend: set = set()
    for j in range(last + 1):
        look = _Look(reps, {k: counts[_task(k)][j] for k in reps}, families, n_points)
        trees = _claim_trees(look, ccfg)
        extend = set()
        for cid, spec in trees.items():
            st = state.setdefault(cid, {"verdict": None, "look": None, "cases": {}})
            if st["verdict"] in ("PASS", "FAIL") or st.get("frozen"):
                continue
            if spec is None:
                if j == 0:
                    st.update(verdict=None, reason="no case")
                continue
            kind, body, info = spec
            if kind == "pooled":
                thr, side = float(info["threshold"]), info["side"]
                lvl = 1 - alpha / J
                g, lo, hi, m, per = _pooled_interval(look, body, lvl)
                v = claims_mod.decide(lo, hi, thr, side) if m else "INCONCLUSIVE"
                keys = {k for leaf in body.values() for k in (leaf[2][0], leaf[3][0])}
                task = _task(next(iter(keys)))
                st.update(look=j, verdict=v if v != "INCONCLUSIVE" else None, point=_num(g), per_case=per,
                          pooled={"estimate": _num(g), "lo": _end(lo), "hi": _end(hi), "level": lvl,
                                  "n_cases": len(body), "n_cases_used": m, "threshold": thr, "side": side})
                if v == "INCONCLUSIVE" and j < J - 1:
                    if _pooled_futile(g, m, task, counts, lvl, thr, side):
                        st["stopped"] = f"look {j + 1}: futile (at the cap an interval around this estimate would " \
                                        "still contain the threshold): no more blocks"
                        st["verdict"] = None
                        # a futile pooled claim is looked at no more: mark it so later looks skip it
                        st["frozen"] = True
                    else:
                        extend |= keys
                continue
            if kind == "tree":
                levels = _leaf_levels(body, alpha / J, alpha / J, {})
                leaves = st.setdefault("leaves", {})
                for lf in _fixed_and_leaves(body):
                    ls = leaves.setdefault(lf[1], {"verdict": None})
                    if ls["verdict"] in ("PASS", "FAIL") or ls.get("stopped"):
                        continue
                    if lf[0] == "fixed":
                        ls.update(verdict=lf[2], look=j, why="the first curve starts after the compared cost")
                        continue
                    a_p, a_f = levels[lf[1]]
                    e, lo_p, hi_p = _leaf_interval(look, lf, 1 - a_p)
                    _, lo_f, hi_f = _leaf_interval(look, lf, 1 - a_f)
                    v = ("PASS" if claims_mod.decide(lo_p, hi_p, lf[4], lf[5]) == "PASS" else
                         "FAIL" if claims_mod.decide(lo_f, hi_f, lf[4], lf[5]) == "FAIL" else None)
                    ls.update(estimate=_num(e), threshold=lf[4], side=lf[5], costs=[lf[2][1], lf[3][1]],
                              level_pass=1 - a_p,
                              pass_interval=[_end(lo_p), _end(hi_p)], level_fail=1 - a_f,
                              fail_interval=[_end(lo_f), _end(hi_f)], look=j,
                              n=_look_counts(look, {lf[2][0], lf[3][0]}), verdict=v)
                    if v is None and j < J - 1 and _futile(e, lf, counts, 1 - a_p, 1 - a_f):
                        ls["stopped"] = f"look {j + 1}: futile (at the cap an interval around this estimate would " \
                                        "still contain the threshold): no more blocks for it"
                verdicts = {lab: ls["verdict"] for lab, ls in leaves.items()}
                v = _combine(body, verdicts)
                st.update(info=info, look=j, verdict=v, point=_tree_point(look, body), tree=body)
                if v is None:
                    st["relevant"] = [lf[1] for lf in _relevant_leaves(body, verdicts)]
                    for lf in _relevant_leaves(body, verdicts):
                        if not leaves[lf[1]].get("stopped"):
                            extend |= {lf[2][0], lf[3][0]}
            else:
                raise ValueError(f"{cid}: claim kind must be 'pooled' or 'tree', got {kind!r}")
    # no block beyond the cap; only samplers with the look's count present are extended
    if last >= J - 1:
        extend = set()
    return {"claims": state, "extend": sorted(extend), "looks": J, "alpha": alpha, "counts": counts}


def _futile(est, leaf, counts: dict, level_pass: float, level_fail: float) -> bool:
    """True when even the cap's replicates could not decide the comparison if its estimate stayed where it is.

    The interval at the cap (both samplers at the last look's count) centred on the
    current estimate: if it would contain the threshold at both the PASS and the FAIL
    level, more blocks are not spent on it (a non-binding futility stop: it only ever
    withholds a decision, so it cannot raise the error rate; the comparison is not
    looked at again).  No estimate (an IQR of 0 or no values): futile.
    """
    from ... import claims as claims_mod
    from ... import intervals

    _, _, (ka, _), (kb, _), thr, side = leaf
    if est is None or not np.isfinite(est) or est <= 0:
        return True
    na, nb = counts[_task(ka)][-1], counts[_task(kb)][-1]
    for level, verdict in ((level_pass, "PASS"), (level_fail, "FAIL")):
        ql, qh = intervals.iqr_ratio_pivot_quantiles(na, nb, [(1 - level) / 2, (1 + level) / 2])
        if claims_mod.decide(est * math.exp(-qh), est * math.exp(-ql), thr, side) == verdict:
            return False
    return True


def _look_counts(look: _Look, keys) -> dict:
    return {"/".join(k): int(look.V[k].shape[0]) for k in sorted(keys) if k in look.V}


def _tree_point(look: _Look, node):
    """The binding leaf's point ratio: max over "all" for side below / min for above; "any": the best member."""
    if node[0] == "fixed":
        return math.inf
    if node[0] == "leaf":
        _, _, a, b, thr, side = node
        r = _ratio(look.iqr(*a), look.iqr(*b))
        return r / thr if side == "below" else thr / r if r else math.inf  # <= 1 means "on the claim's side"
    vals = [_tree_point(look, k) for k in node[1]]
    if not vals:
        return math.nan
    return max(vals) if node[0] == "all" else min(vals)


def _margin(ls: dict, which: str) -> float:
    """How far a leaf's interval is from deciding its side: hi / thr ("below") or thr / lo ("above"); larger is worse."""
    lo, hi = ls[which]
    thr = ls["threshold"]
    lo = math.nan if lo is None else float(lo)
    hi = math.nan if hi is None else float(hi)
    if not (math.isfinite(lo) or math.isinf(lo)):
        return math.inf
    return hi / thr if ls["side"] == "below" else (thr / lo if lo > 0 else math.inf)


def _binding(st: dict):
    """(label, leaf state, which interval) that the tree's verdict rests on, for the record's one interval."""
    leaves = {lab: ls for lab, ls in st["leaves"].items() if "threshold" in ls}
    if not leaves:
        return None
    if st["verdict"] == "FAIL":
        fails = [lab for lab, ls in leaves.items() if ls["verdict"] == "FAIL"]
        if fails:
            lab = min(fails, key=lambda lb: _margin(leaves[lb], "fail_interval"))
            return lab, leaves[lab], "fail_interval"
    if "tree" in st:  # the leaf that binds the tree: the worst child of an "all", the best child of an "any"
        def bind(node):
            if node[0] == "fixed":
                return math.inf, None
            if node[0] == "leaf":
                return (_margin(leaves[node[1]], "pass_interval"), node[1]) if node[1] in leaves else (math.inf, None)
            kids = [bind(k) for k in node[1]] or [(math.inf, None)]
            pick = max if node[0] == "all" else min
            return pick(kids, key=lambda t: t[0])

        lab = bind(st["tree"])[1]
        if lab is not None:
            return lab, leaves[lab], "pass_interval"
    lab = max(leaves, key=lambda lb: _margin(leaves[lb], "pass_interval"))
    return lab, leaves[lab], "pass_interval"


def _fixed_and_leaves(node) -> list:
    if node[0] in ("leaf", "fixed"):
        return [node]
    return [x for k in node[1] for x in _fixed_and_leaves(k)]


def _leaves(node) -> list:
    if node[0] == "leaf":
        return [node]
    if node[0] == "fixed":
        return []
    return [x for k in node[1] for x in _leaves(k)]


def sequential_records(point_records: list[dict], dec: dict, run_sets: list[xr.Dataset], ccfg: dict) -> list[dict]:
    """The curve claims of ``point_records`` (statements, point values, figures) decided by ``sequential_decisions``."""
    J, alpha = dec["looks"], dec["alpha"]
    out = []
    for rec in point_records:
        st = dec["claims"].get(rec["id"])
        if st is None:
            out.append(rec)
            continue
        rec = {**rec, "measured": dict(rec["measured"])}
        verdict = st.get("verdict") or "INCONCLUSIVE"
        method = SEQUENTIAL_METHOD.format(looks=J, alpha=alpha, extra="")
        stop = J - 1 if st.get("look") is None else int(st["look"])
        seqm = {"look": None if st.get("look") is None else int(st["look"]) + 1, "planned_looks": J,
                "replicates_per_look": dec["counts"],
                # replicates per sampler at the look that stopped (the cap when none did): the final state's count
                "replicates_at_stop": {t: int(c[min(stop, len(c) - 1)]) for t, c in dec["counts"].items() if len(c)}}
        if st.get("pooled"):
            p = st["pooled"]
            rec["measured"]["sequential"] = {**seqm, "pooled": p, "cases": st["per_case"]}
            if st.get("stopped"):
                rec["measured"]["sequential"]["stopped"] = st["stopped"]
            rec["interval"] = {"quantity": f"geometric mean over {p['n_cases_used']} of {p['n_cases']} cases of the "
                               "IQR ratio at each case's common cost, interval at level "
                               f"{p['level']:.4g}", "estimate": p["estimate"], "lo": p["lo"], "hi": p["hi"],
                               "threshold": p["threshold"], "side": p["side"],
                               "method": method + "; pooled over the cases: one interval for the geometric mean of "
                               "the cases' IQR ratios (their pivots summed: intervals.iqr_ratio_pivot_mean_quantiles)"}
        elif st.get("leaves"):
            rec["measured"]["sequential"] = {**seqm, "comparisons": st["leaves"], "per_dataset": st.get("info")}
            if st["verdict"] is None and "relevant" in st:
                rec["measured"]["sequential"]["undecided_that_matter"] = st["relevant"]
            b = _binding(st)
            thrs = {ls["threshold"] for ls in st["leaves"].values() if "threshold" in ls}
            norm = len(thrs) > 1
            if b is None:  # only fixed comparisons (a curve that starts after the compared cost)
                rec["interval"] = {**rec["interval"], "method": method}
            else:
                lab, ls, which = b
                f = 1.0 / ls["threshold"] if norm else 1.0
                lo, hi = (math.nan if x is None else float(x) for x in ls[which])
                lvl = ls["level_fail" if which == "fail_interval" else "level_pass"]
                rec["interval"] = {"quantity": ("IQR ratio / its threshold" if norm else "IQR ratio") +
                                   f" of the binding comparison ({lab}), interval at level {lvl:.4g}",
                                   "estimate": _end(None if ls["estimate"] is None else ls["estimate"] * f),
                                   "lo": _end(lo * f), "hi": _end(hi * f), "threshold": 1.0 if norm else ls["threshold"],
                                   "side": ls["side"], "method": method}
        else:
            out.append(rec)
            continue
        if rec["id"] in ("claim1", "claim2a"):
            rec["encoding_change"] = (
                "was max over data sets of ops_to_reach(AMIS family) / ops_to_reach(best MCMC) <= 1 on a percentile "
                "bootstrap (a resample that never reached the target gave an infinite upper end); now: the AMIS "
                "family's IQR at the ops the best MCMC sampler needs to reach its own final IQR is <= every MCMC "
                "sampler's final IQR (the same event on monotone IQR curves, with finite intervals). Default run "
                "(0748516 + the missing blocks): INCONCLUSIVE before, INCONCLUSIVE after")
        rec["verdict"] = verdict
        rec["passed"] = verdict == "PASS"
        rec.pop("reason", None)
        if verdict == "INCONCLUSIVE":
            rec["reason"] = (f"undecided after {st.get('look', 0) + 1} of {J} planned looks "
                             f"({'cap reached' if st.get('look', 0) + 1 >= J else 'later looks not run'}): "
                             + ("the pooled interval contains its threshold" if st.get("pooled") else
                                "a comparison the claim needs has no interval (fewer than 4 replicates or an IQR "
                                "of 0)" if rec["interval"].get("lo") is None else
                                "an interval of a comparison the claim needs contains its threshold"))
        out.append(rec)
    return out


# ---------------------------------------------------------------------------
# a confirmatory block (issue 32): a claim the sequential design left open, decided on fresh replicates alone
# ---------------------------------------------------------------------------
def confirmatory_decision(run_sets: list[xr.Dataset], ccfg: dict, claim: str, spec: dict,
                          n_points: int = 100) -> dict:
    """Claim ``claim`` decided on a confirmatory block of fresh replicates alone, at ``spec["level"]``.

    ``run_sets``: the block's runs (every sampler the claim reads, replicates ``spec["first_replicate"]`` to
    ``first_replicate + replicates - 1``: random streams no look of the sequential design used).  The claim's
    tree (``_claim_trees``: statistic and thresholds unchanged) is evaluated once, on these replicates only, as a
    one-look design at ``level`` (its leaves at the intersection-union / Bonferroni levels of ``_leaf_levels``).
    The replicates already seen take no part, so the error rate of the verdict is that of one look at ``level``,
    whatever the sequential design did before.  Returns the record's ``measured.confirmatory`` block.
    """
    n, first = int(spec["replicates"]), int(spec["first_replicate"])
    want = set(range(first, first + n))
    reps = _by_replicate(run_sets)
    if not reps:
        raise ValueError(f"confirmatory block of {claim}: no runs")
    for key, rr in reps.items():
        got = {i for i, _ in rr}
        if got != want:
            raise ValueError(f"confirmatory block of {claim}: {'/'.join(key)} has replicates {min(got)}-{max(got)} "
                             f"({len(got)}), the block needs exactly {first}-{first + n - 1} ({n})")
    seq = {"looks": 1, "regression": {"start": n, "block": n}, "classification": {"start": n, "block": n}}
    dec = sequential_decisions(run_sets, {**ccfg, "level": float(spec["level"])}, seq, n_points=n_points)
    st = dec["claims"].get(claim)
    if st is None or not st.get("leaves"):
        raise ValueError(f"confirmatory block of {claim}: the runs give the claim no comparison "
                         f"(samplers: {sorted({k[2] for k in reps})})")
    b = _binding(st)
    out = {"claim": claim, "verdict": st["verdict"] or "INCONCLUSIVE", "replicates": n,
           "replicate_streams": [first, first + n - 1], "level": float(spec["level"]),
           "samplers": sorted({"/".join(k) for k in reps}), "comparisons": st["leaves"], "per_dataset": st.get("info")}
    if b is not None:
        lab, ls, which = b
        lvl = ls["level_fail" if which == "fail_interval" else "level_pass"]
        lo, hi = ls[which]
        out["interval"] = {"quantity": f"IQR ratio of the binding comparison ({lab}), confirmatory block of {n} fresh "
                                       f"replicates, interval at level {lvl:.4g}",
                           "estimate": ls["estimate"], "lo": lo, "hi": hi, "threshold": ls["threshold"],
                           "side": ls["side"], "level": lvl,
                           "method": ("IQR ratio pivot interval with a t(3) reference shape (intervals.iqr_ratio; "
                                      f"coverage measured at {n} replicates: gpbayes_repro.coverage), one look at level "
                                      f"{float(spec['level']):g} on fresh replicates; leaves at the intersection-union "
                                      "(PASS) and Bonferroni (FAIL) levels of the claim's tree")}
    if st["verdict"] is None and "relevant" in st:
        out["undecided_that_matter"] = st["relevant"]
    return out


def apply_confirmatory(records: list[dict], confirm: list[dict]) -> list[dict]:
    """The claim records with each confirmatory block's verdict where the sequential design left the claim open.

    A claim the sequential design decided keeps its verdict (the block is kept beside it, for information); an
    undecided one takes the block's verdict and interval, and keeps the sequential design's as
    ``measured.exploratory``.
    """
    by = {c["claim"]: c for c in confirm}
    out = []
    for rec in records:
        c = by.pop(rec["id"], None)
        if c is None:
            out.append(rec)
            continue
        rec = {**rec, "measured": {**rec["measured"], "confirmatory": c}}
        if rec["verdict"] in ("PASS", "FAIL"):
            rec["measured"]["confirmatory"] = {**c, "used": False,
                                               "why": "the sequential design had decided the claim: kept as it was"}
            out.append(rec)
            continue
        rec["measured"]["exploratory"] = {"verdict": rec["verdict"], "interval": rec.get("interval"),
                                          "reason": rec.get("reason")}
        rec["measured"]["confirmatory"]["used"] = True
        v = c["verdict"]
        rec["verdict"], rec["passed"] = v, v == "PASS"
        if "interval" in c:
            rec["interval"] = {k: c["interval"][k] for k in ("quantity", "estimate", "lo", "hi", "threshold", "side",
                                                             "method")}
        rec.pop("reason", None)
        if v == "INCONCLUSIVE":
            rec["reason"] = (f"undecided by the sequential design and by the confirmatory block of {c['replicates']} "
                             "fresh replicates: an interval of a comparison the claim needs contains its threshold")
        out.append(rec)
    if by:
        raise ValueError(f"confirmatory blocks for claims with no record: {sorted(by)}")
    return out
