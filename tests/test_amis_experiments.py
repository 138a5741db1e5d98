"""Xiong et al. experiment module (gpbayes_repro.experiments.amis) on tiny problems."""

import importlib
import json
import zlib

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from gpbayes_repro import claims as claims_mod
from gpbayes_repro.experiments import amis as E

CFG = {
    "priors": {"scale": {"shape": 1.0, "rate_times_sqrt_d": 1.0}, "amplitude": {"shape": 1.2, "rate": 0.2},
               "noise_variance": {"shape": 1.0, "rate": 1.0}},
    "nugget": 1e-6,
    "ep_mode": "parallel",
}


def _k(**kw):
    return {"rbf": kw, "ard": kw}


SETTINGS = {
    "n_replicates": 4, "replicates_per_job": 4, "max_points": 1000, "ml_restarts": 1, "n_max": None,
    "amis": _k(n_iterations=3, n_per_iteration=5), "mamis": _k(n_iterations=3, base=0, slope=4),
    "mamis_p": _k(n_iterations=3, base=0, slope=4),
    "amis_mamis": _k(n_tuning_samples=12, n_per_iteration_amis=5, n_iterations=2, base=0, slope=5),
    "mh": _k(n_tune=10, n_draws=15), "hmc": _k(n_tune=3, n_draws=4), "nuts": _k(n_draws=3),
    "nutsda": _k(n_adapt=3, n_draws=3), "slice": _k(n_draws=3),
    "pm_amis": _k(n_iterations=2, n_per_iteration=4), "pm_mh": _k(n_tune=4, n_draws=5),
}


def _data(task="regression", n=25, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=n)
    if task == "classification":
        y = np.where(y > 0, 1.0, -1.0)
    return xr.Dataset({"X": (("n", "feature"), X), "y": (("n",), y)},
                      attrs={"name": f"tiny_{task}", "task": task, "stand_in": 0})


@pytest.fixture(scope="module")
def reg():
    ds = _data()
    return ds, E.setup(ds, "rbf", CFG, SETTINGS, seed=1)


def _run(reg, sampler, settings=SETTINGS, block=0, kernel="rbf", seed=3):
    ds, su = reg
    return E.run_block(ds, su, sampler=sampler, kernel=kernel, block=block, cfg=CFG, settings=settings, seed=seed)[0]


def test_parse_sampler_and_family():
    assert E.parse_sampler("amis_d") == {"task": "regression", "method": "amis", "covariance": "diagonal"}
    assert E.parse_sampler("amis_mamis")["method"] == "amis_mamis"
    assert E.parse_sampler("mamis_p") == {"task": "regression", "method": "mamis_p", "covariance": "full"}
    assert E.family("mamis_p") == "is"
    assert E.parse_sampler("nutsda_h") == {"task": "regression", "method": "nutsda", "matrix": "h"}
    assert E.parse_sampler("pm_mh_ep_64") == {"task": "classification", "method": "pm_mh", "approx": "ep",
                                              "n_imp": 64}
    assert [E.family(s) for s in ("mamis_d", "mh_i", "nuts_d", "slice", "pm_amis_la_1")] == [
        "is", "mh", "hmc", "slice", "pm_amis"]
    with pytest.raises(ValueError):
        E.parse_sampler("pm_amis_xx_1")
    with pytest.raises(ValueError):
        E.parse_sampler("hmc_q")


def test_sampler_cost_units():
    assert np.array_equal(E.sampler_cost("hmc", None, [1, 4]), [3.0, 12.0])  # marginal + 2 for the gradient
    assert np.array_equal(E.sampler_cost("mh", [1, 1]), [1.0, 1.0])


def test_amis_cost_is_number_of_marginals(reg):
    r = _run(reg, "amis")
    assert r.sizes["replicate"] == 4
    np.testing.assert_array_equal(r["cost"].values[:, :3], np.tile([5.0, 10.0, 15.0], (4, 1)))
    assert np.all(r["tuning_cost"].values == 0)
    assert np.all((r["bookkeeping_fraction"].values > 0) & (r["bookkeeping_fraction"].values < 1))
    m = _run(reg, "mamis_d")
    np.testing.assert_array_equal(m["cost"].values[0, :3], [4.0, 12.0, 24.0])  # N_t = 4 t
    s = _run(reg, "amis_mamis")
    np.testing.assert_array_equal(s["tuning_cost"].values, 12.0)  # the AMIS tuning samples
    np.testing.assert_array_equal(s["cost"].values[0, :2], [17.0, 27.0])
    p = _run(reg, "mamis_p")
    np.testing.assert_array_equal(p["cost"].values[0, :3], [4.0, 12.0, 24.0])  # MAMIS's N_t = 4 t
    assert np.all(p["tuning_cost"].values == 0) and np.all(np.isfinite(p["estimate"].values[:, :3]))


def test_mamis_p_settings_reach_the_library(reg):
    # prior_strength / data_count from the config block change the run; a huge prior pins q_t to q_0
    base = _run(reg, "mamis_p")
    off = _run(reg, "mamis_p", {**SETTINGS, "mamis_p": _k(n_iterations=3, base=0, slope=4, prior_strength=0.0)})
    by_n = _run(reg, "mamis_p", {**SETTINGS, "mamis_p": _k(n_iterations=3, base=0, slope=4, data_count="n")})
    np.testing.assert_array_equal(base["estimate"].values[:, 0], off["estimate"].values[:, 0])  # same q_0 draws
    assert not np.array_equal(base["estimate"].values, off["estimate"].values)
    assert not np.array_equal(base["estimate"].values, by_n["estimate"].values)


def test_mh_and_hmc_costs(reg):
    mh = _run(reg, "mh_h")
    np.testing.assert_array_equal(mh["tuning_cost"].values, 11.0)  # 10 pilot iterations + the start
    np.testing.assert_array_equal(mh["cost"].values[:, -1], 11.0 + 15.0)
    h = _run(reg, "hmc_d")
    tune, cost = h["tuning_cost"].values, h["cost"].values
    assert np.all(tune % 3 == 0) and np.all(tune >= 3 * 4)  # >= 1 gradient per tuning step + the start
    assert np.all(np.diff(cost, axis=1) % 3 == 0) and np.all(cost[:, 0] - tune >= 3)
    assert np.all(cost[:, -1] - tune <= 3 * 4 * 10)  # at most 10 leapfrog steps per draw


def test_deterministic_and_grouping_invariant(reg):
    a = _run(reg, "mh_d")
    b = _run(reg, "mh_d")
    timing = ["wall", "tuning_wall", "bookkeeping_fraction"]
    xr.testing.assert_identical(a.drop_vars(timing), b.drop_vars(timing))  # all but wall-clock measurements
    halves = [_run(reg, "mh_d", {**SETTINGS, "replicates_per_job": 2}, block=k) for k in (0, 1)]
    joined = xr.concat(halves, dim="replicate")
    for v in ("cost", "estimate", "tuning_cost"):
        np.testing.assert_array_equal(joined[v].values, a[v].values)
    assert not np.array_equal(_run(reg, "mh_d", seed=4)["estimate"].values, a["estimate"].values)
    with pytest.raises(ValueError):
        E.block_replicates(2, 4, 2)


def _frame(sampler, family, cost, iqr, dataset="d", kernel="rbf", median=None):
    cost = np.asarray(cost, float)
    return pd.DataFrame({"dataset": dataset, "kernel": kernel, "sampler": sampler, "family": family, "stand_in": 0,
                         "n": 10, "n_replicates": 4, "cost": cost, "iqr": np.asarray(iqr, float),
                         "median": 1.0 if median is None else median, "q25": 0.0, "q75": 0.0,
                         "wall_median": cost / 100, "tuning_cost": 0.0, "bookkeeping_fraction": np.nan})


def test_iqr_curve_of_known_replicates():
    # replicate r has constant estimate r + 1 from cost 10 on: IQR of 1, 2, 3, 4 (type 7) = 1.5
    runs = [xr.Dataset({"cost": (("replicate", "point"), [[10.0, 20.0, 40.0]]),
                        "estimate": (("replicate", "point"), [[r + 1.0] * 3]),
                        "wall": (("replicate", "point"), [[0.1, 0.2, 0.4]]),
                        "tuning_cost": (("replicate",), [0.0]), "bookkeeping_fraction": (("replicate",), [0.01])},
                       attrs={"dataset": "d", "kernel": "rbf", "sampler": "amis", "family": "is", "stand_in": 0,
                              "n": 10}) for r in range(4)]
    cur = E.curves(runs, n_points=5)
    np.testing.assert_allclose(cur["iqr"], 1.5)
    np.testing.assert_allclose(cur["cost"].values[[0, -1]], [10.0, 40.0])
    np.testing.assert_allclose(cur["median"], 2.5)
    assert cur["n_replicates"].iloc[0] == 4


def test_ops_to_reach_and_claims_on_synthetic_curves():
    cur = pd.concat([
        _frame("amis", "is", [10, 100, 1000], [1.0, 0.2, 0.05]),
        _frame("mh_h", "mh", [10, 100, 1000, 2000], [2.0, 1.0, 0.5, 0.3]),
        _frame("hmc_h", "hmc", [30, 300, 3000], [1.0, 0.4, 0.25]),
        _frame("slice", "slice", [10, 100], [3.0, 2.0]),
    ], ignore_index=True)
    assert E.ops_to_reach(cur[cur["sampler"] == "amis"], 0.25) == (100.0, 1.0)  # first cost with IQR <= 0.25
    assert E.ops_to_reach(cur[cur["sampler"] == "slice"], 0.25) == (np.inf, np.inf)
    reach = E.ops_to_reach_table(cur).set_index("sampler")
    assert set(reach["target_iqr"]) == {0.25} and set(reach["best_mcmc"]) == {"hmc_h"}
    assert reach.loc["amis", "ops_to_reach"] == 100.0 and reach.loc["hmc_h", "ops_to_reach"] == 3000.0
    ccfg = {"mamis_slow_datasets": ["d"], "slow_factor": 1.5, "much_factor": 0.5,
            "competitive_factor": 2.0, "max_bookkeeping_fraction": 0.1}

    recs = E.claims(cur, reach.reset_index(), [], ccfg)
    by = {r["id"]: r for r in recs}
    # curves alone carry no replicates: the point value is reported, the claim is not decided on it
    assert by["claim1"]["measured"]["per_dataset"]["d"]["is_ops"] == 100.0
    assert by["claim1"]["interval"]["estimate"] == pytest.approx(100.0 / 3000.0)
    assert by["claim1"]["verdict"] == "INCONCLUSIVE" and "no ends" in by["claim1"]["reason"]
    for r in recs:
        claims_mod.validate_claim(dict(r))
    # no classification curves: INCONCLUSIVE with the reason, neither PASS nor FAIL (and never a stub)
    for cid in ("claim4a", "claim4b", "claim4c"):
        assert by[cid]["verdict"] == "INCONCLUSIVE" and "no comparable case" in by[cid]["reason"]
        assert by[cid]["passed"] is False
    json.dumps(recs, allow_nan=False)


CCFG = {"mamis_slow_datasets": ["d"], "slow_factor": 1.5, "much_factor": 0.5, "competitive_factor": 2.0,
        "max_bookkeeping_fraction": 0.1, "mamis_p_datasets": ["d"], "level": 0.95,
        "bootstrap_draws": 500}
def _rep_runs(sampler, family, cost, iqr, dataset="d", kernel="ard", n_rep=6):
    """A run block whose ``n_rep`` replicates have, at cost[p], estimates with IQR (type 7) exactly iqr[p]."""
    cost, iqr = np.asarray(cost, float), np.asarray(iqr, float)
    z = np.arange(n_rep) - (n_rep - 1) / 2
    z = z / np.subtract(*np.percentile(z, [75, 25]))
    est = 10.0 + z[:, None] * iqr[None, :]
    return xr.Dataset({"cost": (("replicate", "point"), np.tile(cost, (n_rep, 1))),
                       "estimate": (("replicate", "point"), est),
                       "wall": (("replicate", "point"), np.tile(cost / 100, (n_rep, 1))),
                       "tuning_cost": (("replicate",), np.zeros(n_rep)),
                       "bookkeeping_fraction": (("replicate",), np.zeros(n_rep))},
                      coords={"replicate": np.arange(n_rep)},
                      attrs={"dataset": dataset, "kernel": kernel, "sampler": sampler, "family": family, "stand_in": 0,
                             "n": 10})


def test_replicate_matrices_reproduce_the_curves():
    runs = [_rep_runs("amis", "is", [10, 100, 1000], [1.0, 0.3, 0.1]), _rep_runs("mh_h", "mh", [20, 2000], [2.0, 0.5])]
    cur = E.curves(runs)
    for key, (grid, V) in E.replicate_matrices(runs).items():
        c = cur[(cur["sampler"] == key[2])]
        np.testing.assert_allclose(grid, c["cost"].values)
        np.testing.assert_allclose(np.subtract(*np.percentile(V, [75, 25], axis=0)), c["iqr"].values)


def test_claims_are_decided_on_bootstrap_intervals_over_replicates():
    """Clear separations PASS or FAIL; equal spreads (ties) are INCONCLUSIVE, whatever the point says."""
    grid = [10, 100, 1000]
    runs = [
        # claim 3 at ARD: full clearly better than diagonal for AMIS; for MAMIS the same curves (a tie)
        _rep_runs("amis", "is", grid, [1.0, 0.1, 0.01]), _rep_runs("amis_d", "is", grid, [1.0, 1.0, 1.0]),
        _rep_runs("mamis", "is", grid, [1.0, 0.5, 0.2]), _rep_runs("mamis_d", "is", grid, [1.0, 0.5, 0.2]),
        # claim 2b: MAMIS (0.2 at the end) vs AMIS (0.01) and AMIS->MAMIS (0.02)
        _rep_runs("amis_mamis", "is", grid, [1.0, 0.1, 0.02]),
        # claims 5a/5b: MAMIS-P between MAMIS and AMIS->MAMIS
        _rep_runs("mamis_p", "is", grid, [1.0, 0.3, 0.07]),
        # claim 2a: AMIS reaches the MCMC's final IQR (0.05) at cost 1000 vs 1000 for MH itself
        _rep_runs("mh_h", "mh", grid, [2.0, 0.5, 0.05]),
    ]
    cur = E.curves(runs, n_points=3)
    reach = E.ops_to_reach_table(cur)
    by = {r["id"]: r for r in E.claims(cur, reach, [], CCFG, runs=runs, seed=0)}
    for r in by.values():
        claims_mod.validate_claim(dict(r))
        assert r["id"] == "performance" or r["interval"]["method"].startswith("95% percentile bootstrap over replicates")
    c3 = by["claim3"]
    # pooled (issue 32): the geometric mean of AMIS's 0.01 / 1 and MAMIS's tie 0.2 / 0.2 is 0.1
    assert c3["measured"]["geometric_mean"] == pytest.approx(0.1)
    assert c3["interval"]["threshold"] == 1.0 and c3["interval"]["side"] == "below"
    # 2b: a 20x separation, yet with 6 replicates a resample whose middle four values coincide has IQR 0
    # (a few % of draws), so the interval of an IQR ratio reaches 0: six replicates cannot decide it
    assert by["claim2b"]["interval"]["estimate"] == pytest.approx(10.0)
    assert by["claim2b"]["interval"]["lo"] < 1.0 < by["claim2b"]["interval"]["hi"]
    assert by["claim2b"]["verdict"] == "INCONCLUSIVE" and "contains the threshold" in by["claim2b"]["reason"]
    # 5a/5b: MAMIS-P (0.07) against MAMIS (0.2) and AMIS->MAMIS (0.02) at the common cost
    assert by["claim5a"]["interval"]["estimate"] == pytest.approx(0.35)
    assert by["claim5b"]["interval"]["estimate"] == pytest.approx(3.5)
    # 2a: AMIS needs 1000 operations to reach MH's final 0.05 (its IQR at 100 is 0.1), MH 1000: ratio 1
    assert by["claim2a"]["interval"]["estimate"] == 1.0
    # a point-only call (no replicates) decides nothing
    point = {r["id"]: r for r in E.claims(cur, reach, [], CCFG)}
    assert all(point[k]["verdict"] == "INCONCLUSIVE" for k in ("claim2b", "claim3", "claim5a", "claim5b"))


def test_bookkeeping_claim_is_decided_on_repeated_timings_not_on_one():
    """The one-run CPU share (the old decider) is reported; the verdict follows the repeats' median interval."""
    cur = pd.concat([_frame("amis", "is", [10, 100], [1.0, 0.2]), _frame("mh_h", "mh", [10, 100], [2.0, 1.0])],
                    ignore_index=True)

    def ref(one_run, shares):
        med, lo, hi = E.median_interval(shares)
        return [{"dataset": "d", "kernel": "rbf", "bookkeeping_fraction": one_run, "bookkeeping_cpu_fraction": one_run,
                 "n_iterations": 3, "n_per_iteration": 5, "timing_repeats": len(shares), "timing_share_median": med,
                 "timing_share_lo": lo, "timing_share_hi": hi}]

    def perf(one_run, shares):
        return {r["id"]: r for r in E.claims(cur, E.ops_to_reach_table(cur), ref(one_run, shares), CCFG)}["performance"]

    low, straddle, high = [0.03 + 0.002 * i for i in range(9)], [0.06 + 0.01 * i for i in range(9)], [0.2] * 9
    assert perf(0.05, straddle)["verdict"] == "INCONCLUSIVE"  # one timing of 5 % would have passed
    assert perf(0.12, low)["verdict"] == "PASS"  # one timing of 12 % would have failed
    assert perf(0.05, high)["verdict"] == "FAIL"
    p = perf(0.12, low)
    assert p["measured"]["runs"]["d/rbf"]["one_run_cpu_fraction"] == 0.12
    assert p["interval"]["hi"] == pytest.approx(0.044)  # 8th of the 9 sorted shares
    # fewer than 6 repeats give no 95 % interval for a median: INCONCLUSIVE, never a point decision
    assert perf(0.01, [0.01] * 5)["verdict"] == "INCONCLUSIVE"


def test_median_interval_is_the_binomial_order_statistic_interval():
    from scipy import stats

    x = np.arange(1.0, 10.0)[::-1]  # 9 values, unsorted
    assert E.median_interval(x) == (5.0, 2.0, 8.0)
    # coverage of [x_(k), x_(n+1-k)] is 1 - 2 P(Bin(n, 1/2) <= k - 1): >= 95 % for k = 2, not for k = 3
    assert 1 - 2 * stats.binom.cdf(1, 9, 0.5) >= 0.95 > 1 - 2 * stats.binom.cdf(2, 9, 0.5)
    n = 20
    k = max(k for k in range(1, n // 2 + 1) if 1 - 2 * stats.binom.cdf(k - 1, n, 0.5) >= 0.95)
    assert E.median_interval(np.arange(n))[1:] == (k - 1.0, n - k + 0.0)
    assert np.isnan(E.median_interval([1.0, 2.0, 3.0, 4.0, 5.0])[1])


def test_reference_repeats_its_timing_without_changing_its_numbers(reg):
    ds, su = reg
    st = {"n_max": None, "reference": _k(n_iterations=3, n_per_iteration=6)}
    one = E.reference(ds, su, kernel="rbf", cfg=CFG, settings=st, seed=4)
    rep = E.reference(ds, su, kernel="rbf", cfg=CFG, settings={**st, "timing": {"repeats": 3, "target_subset": 5}},
                      seed=4)
    assert rep.attrs["reference"] == one.attrs["reference"] and rep["estimate"].equals(one["estimate"])
    assert rep.sizes["repeat"] == 3 and np.all((rep["timing_share"] > 0) & (rep["timing_share"] < 1))
    np.testing.assert_allclose(rep["timing_share"], rep["timing_bookkeeping_cpu"]
                               / (rep["timing_bookkeeping_cpu"] + rep["timing_target_cpu"]))
    row = E.references_table([rep]).iloc[0]
    assert row["timing_repeats"] == 3 and len(row["timing_shares"].split(";")) == 3


def test_iqr_at_and_thinning():
    c = _frame("a", "is", [10, 100, 1000], [1.0, 0.5, 0.1])
    assert np.isnan(E.iqr_at(c, 5)) and E.iqr_at(c, 500) == 0.5
    idx = E.thin_indices(10_000, 50)
    assert idx[-1] == 9_999 and idx.size <= 50 and np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(E.thin_indices(7, 50), np.arange(7))


def test_classification_block_runs_and_counts_cost():
    ds = _data("classification", n=20)
    su = E.setup(ds, "rbf", CFG, SETTINGS, seed=1)
    assert list(su["approx"].values) == ["laplace", "ep"]
    a, a_chains = E.run_block(ds, su, sampler="pm_amis_ep_4", kernel="rbf", block=0, cfg=CFG, settings=SETTINGS,
                              seed=2)
    assert a_chains == {}  # importance sampling: weighted samples, no chains
    cost = a["cost"].values
    assert np.all(cost[:, 1] > cost[:, 0]) and np.all(cost[:, 0] >= 2 * 4)  # K + the approximation, per estimate
    m, m_chains = E.run_block(ds, su, sampler="pm_mh_la_1", kernel="rbf", block=0, cfg=CFG, settings=SETTINGS,
                              seed=2)
    assert m_chains["posterior"]["psi"].sizes["chain"] == m.sizes["replicate"]
    assert np.all(m["tuning_cost"].values > 0) and np.all(np.isfinite(m["estimate"].values[:, -1]))


def _cap_ep_at_one_update(monkeypatch):
    """Make the AMIS experiment's classification targets stop EP after a single update (never converged)."""
    from gpbayes.estimators.importance import PseudoMarginalTarget

    runs_mod = importlib.import_module("gpbayes_repro.experiments.amis.runs")
    original = runs_mod.classification_target

    def capped(*args, **kw):
        t = original(*args, **kw)
        return PseudoMarginalTarget(t.X, t.y, t.kernel, t.likelihood, t.prior, approx=t.approx, n_imp=t.n_imp,
                                    ep_mode=t.ep_mode, approx_options={"max_iter": 1})

    monkeypatch.setattr(runs_mod, "classification_target", capped)


@pytest.mark.parametrize("sampler", ["pm_amis_ep_4", "pm_mh_ep_1"])
def test_classification_block_records_non_converged_ep(sampler, monkeypatch, tmp_path):
    """EP stopped at its limit in a PM run (tuning included) reaches the run file and the trouble scan."""
    import warnings

    from gpbayes_repro import io
    from gpbayes_repro import trouble

    ds = _data("classification", n=20)
    su = E.setup(ds, "rbf", CFG, SETTINGS, seed=1)
    curves, _ = E.run_block(ds, su, sampler=sampler, kernel="rbf", block=0, cfg=CFG, settings=SETTINGS, seed=2)
    assert set(trouble.TROUBLE_STATS) <= set(curves.data_vars)
    assert np.all(curves["n_not_converged"].values == 0)
    _cap_ep_at_one_update(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        curves, groups = E.run_block(ds, su, sampler=sampler, kernel="rbf", block=0, cfg=CFG, settings=SETTINGS,
                                     seed=2)
    assert np.all(curves["n_not_converged"].values > 0)
    path = io.write_inference_data(groups, tmp_path / "run.nc", root=curves)
    scanned = trouble.scan_file(path)
    assert scanned["n_not_converged"] == int(curves["n_not_converged"].sum())  # counted once, not per group


def test_setup_and_classification_reference_record_non_converged_ep(monkeypatch):
    """The mode searches of ``setup`` and the reference PM-AMIS run keep their numerical trouble as attributes."""
    import warnings

    ds = _data("classification", n=20)
    su = E.setup(ds, "rbf", CFG, SETTINGS, seed=1)
    ref = E.classification_reference(ds, su, kernel="rbf", cfg=CFG, settings=CREF, seed=5)
    assert su.attrs["n_not_converged"] == 0 == ref.attrs["n_not_converged"]
    _cap_ep_at_one_update(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        su_capped = E.setup(ds, "rbf", CFG, SETTINGS, seed=1)
        ref = E.classification_reference(ds, su, kernel="rbf", cfg=CFG, settings=CREF, seed=5)
    assert su_capped.attrs["n_not_converged"] > 0  # the EP mode search (LA's needs no EP)
    assert ref.attrs["n_not_converged"] == ref.attrs["n_estimates"]


def test_tuning_table_lists_tuned_samplers_only():
    cur = pd.concat([_frame("amis", "is", [10, 20], [1.0, 0.5]), _frame("mh_h", "mh", [10, 20], [1.0, 0.5])])
    cur.loc[cur["sampler"] == "mh_h", "tuning_cost"] = 201.0
    tab = E.tuning_table(cur)
    assert list(tab.index) == ["mh_h"] and tab.loc["mh_h", ("d", "rbf")] == 201.0


@pytest.fixture(scope="module")
def cls():
    ds = _data("classification", n=20)
    return ds, E.setup(ds, "rbf", CFG, SETTINGS, seed=1)


CREF = {"n_max": None, "classification_reference": _k(n_iterations=3, n_per_iteration=6, n_imp=4)}


def test_classification_reference_is_the_runs_self_normalised_estimate(cls):
    from gpbayes import amis as amis_mod
    from gpbayes import rng as rng_mod

    ds, su = cls
    ref = E.classification_reference(ds, su, kernel="rbf", cfg=CFG, settings=CREF, seed=5)
    # the same PM-AMIS run, redone directly from the same stream
    X, y, _ = E.load_data(ds, None, 5)
    tgt = E.classification_target(X, y, "rbf", CFG, "ep", 4)
    res = amis_mod.pm_amis(rng_mod.stream(5, "amis", "classification_reference", "tiny_classification", "rbf"), tgt,
                           su["mode"].sel(approx="ep").values, su["cov"].sel(approx="ep").values, n_iterations=3,
                           n_per_iteration=6)
    w = np.exp(res.log_weights - res.log_weights.max())
    norms = np.linalg.norm(np.exp(res.samples), axis=1)
    assert res.samples.shape[0] == 18 == ref.attrs["n_estimates"]
    np.testing.assert_allclose(ref.attrs["reference"], np.sum(w * norms) / np.sum(w), rtol=1e-10)
    np.testing.assert_allclose(ref.attrs["final_ess"], w.sum() ** 2 / np.sum(w**2), rtol=1e-10)
    assert 1.0 <= ref.attrs["final_ess"] <= 18.0
    assert ref.attrs["approx"] == "ep" and ref.attrs["n_imp"] == 4 and ref.sizes["iteration"] == 3
    np.testing.assert_array_equal(ref["estimate"].values[-1], ref.attrs["reference"])
    assert np.all(np.diff(ref["cost"].values) > 0)
    # deterministic given the seed; another seed gives another run
    again = E.classification_reference(ds, su, kernel="rbf", cfg=CFG, settings=CREF, seed=5)
    xr.testing.assert_identical(ref.drop_attrs(), again.drop_attrs())
    assert again.attrs["reference"] == ref.attrs["reference"] and again.attrs["final_ess"] == ref.attrs["final_ess"]
    other = E.classification_reference(ds, su, kernel="rbf", cfg=CFG, settings=CREF, seed=6)
    assert other.attrs["reference"] != ref.attrs["reference"]
    tab = E.classification_references_table([ref, other])
    assert list(tab["reference"]) == [ref.attrs["reference"], other.attrs["reference"]]
    assert {"final_ess", "n_imp", "n_iterations", "n_per_iteration"} <= set(tab.columns)


def test_classification_figures_draw_bias_lines(monkeypatch, tmp_path):
    import gpbayes_repro.plots

    figs = []
    monkeypatch.setattr(gpbayes_repro.plots, "save_figure", lambda fig, path: figs.append(fig))
    cur = pd.concat([
        _frame("pm_amis_ep_64", "pm_amis", [10, 100], [1.0, 0.5], dataset="glass", median=[3.0, 2.5]),
        _frame("pm_mh_ep_64", "pm_mh", [10, 100], [2.0, 1.0], dataset="glass", median=[1.5, 2.25]),
        _frame("pm_mh_ep_1", "pm_mh", [10, 100], [2.0, 1.0], dataset="glass", median=[1.0, 1.5]),
    ], ignore_index=True)
    refs = pd.DataFrame([{"dataset": "glass", "kernel": "rbf", "reference": 2.0, "final_ess": 123.0}])

    def dotted(fig):
        return [ln.get_ydata() for ax in fig.axes for ln in ax.get_lines() if ln.get_linestyle() == ":"]

    E.fig2(cur, tmp_path / "f2.pdf", ref_table=refs)
    E.fig_nimp(cur, "rbf", tmp_path / "f9.pdf", ref_table=refs)
    E.fig2(cur, tmp_path / "f2b.pdf")  # without a reference table: no bias lines
    f2, f9, bare = figs
    assert sorted(map(tuple, dotted(f2))) == [(0.5, 0.25), (1.0, 0.5)]  # |median - 2|, largest N_imp only
    assert len(dotted(f9)) == 3 and not dotted(bare)
    assert "(ESS 123)" in f2.axes[0].get_title() and "ESS" not in bare.axes[0].get_title()


def test_classification_claims_leave_out_curves_that_do_not_overlap():
    ccfg = {**CCFG, "mamis_slow_datasets": []}
    runs = [
        # data set a: EP better than LA, at every common cost
        # (12 replicates: with 6, a few % of resamples have IQR 0 and the interval reaches 0)
        _rep_runs("pm_mh_ep_64", "pm_mh", [10, 100], [1.0, 0.1], dataset="a", kernel="rbf", n_rep=12),
        _rep_runs("pm_mh_la_64", "pm_mh", [10, 100], [2.0, 0.5], dataset="a", kernel="rbf", n_rep=12),
        # data set b: EP's curve starts (after its tuning) beyond LA's whole budget: not comparable
        _rep_runs("pm_mh_ep_64", "pm_mh", [300, 900], [1.0, 0.1], dataset="b", kernel="rbf"),
        _rep_runs("pm_mh_la_64", "pm_mh", [10, 200], [2.0, 1.5], dataset="b", kernel="rbf"),
    ]
    cur = E.curves(runs)
    reach = pd.DataFrame(columns=["dataset", "kernel", "sampler", "family", "target_iqr", "best_mcmc", "ops_to_reach",
                                  "wall_to_reach"])
    chains = {("a", "rbf", "pm_mh_ep_64"): {"max_rank_rhat": 1.2, "min_bulk_ess": 30.0}}
    by = {r["id"]: r for r in E.claims(cur, reach, [], ccfg, runs=runs, chains=chains, seed=0)}
    c4c = by["claim4c"]
    assert c4c["measured"]["cases"]["b/rbf/pm_mh"] == {"iqr_ep": None, "iqr_la": 1.5}
    # pooled over the comparable cases (b left out): a's EP / LA at the common cost 100 is 0.1 / 0.5
    assert c4c["measured"]["geometric_mean"] == pytest.approx(0.2) and c4c["measured"]["n_comparable"] == 1
    assert c4c["verdict"] == "PASS" and c4c["interval"]["hi"] < 1.0
    # the convergence numbers of the chains the claim compares are carried with it
    assert c4c["measured"]["mcmc_convergence"] == {"a/rbf/pm_mh_ep_64": {"max_rank_rhat": 1.2, "min_bulk_ess": 30.0}}
    json.dumps(by["claim4c"], allow_nan=False)


@pytest.mark.parametrize("sampler", ["mh_h", "hmc_d", "nutsda_h", "slice"])
def test_mcmc_baseline_runs_open_with_arviz(reg, sampler, tmp_path):
    """The MCMC baselines of the comparison are written in the ArviZ layout beside their curves."""
    az = pytest.importorskip("arviz")
    import xarray as xr

    from gpbayes_repro import io

    ds, su = reg
    curves, groups = E.run_block(ds, su, sampler=sampler, kernel="rbf", block=0, cfg=CFG, settings=SETTINGS, seed=5)
    path = io.write_inference_data(groups, tmp_path / "run.nc", root=curves)
    idata = az.from_netcdf(path)
    assert idata.posterior["psi"].sizes["chain"] == curves.sizes["replicate"]
    assert {"lp", "n_cubic", "acceptance_rate"} <= set(idata.sample_stats.data_vars)
    assert len(az.summary(idata)) == idata.posterior["psi"].sizes["param"]
    assert xr.load_dataset(path)["estimate"].equals(curves["estimate"])


# --- issue 26: IQR-ratio intervals, decided sequentially over replicate blocks ---
SEQ = {"looks": 2, "regression": {"start": 12, "block": 6}, "classification": {"start": 8, "block": 4}}
SCCFG = {**CCFG, "mamis_slow_datasets": [], "interval": "iqr_pivot_sequential", "sequential": SEQ}


def _blk(sampler, family, sd, reps, dataset="d", kernel="ard", cost=(10.0, 100.0, 1000.0), seed=0):
    """A run block: replicates ``reps`` (indices), each's estimate at every cost drawn N(10, sd[p]^2) (own stream)."""
    cost, sd = np.asarray(cost, float), np.asarray(sd, float)
    est = np.stack([10.0 + sd * np.random.default_rng([seed, zlib.crc32(sampler.encode()), r]).standard_normal(sd.size)
                    for r in reps])
    n = len(reps)
    return xr.Dataset({"cost": (("replicate", "point"), np.tile(cost, (n, 1))),
                       "estimate": (("replicate", "point"), est),
                       "wall": (("replicate", "point"), np.tile(cost / 100, (n, 1))),
                       "tuning_cost": (("replicate",), np.zeros(n)),
                       "bookkeeping_fraction": (("replicate",), np.zeros(n))},
                      coords={"replicate": list(reps)},
                      attrs={"dataset": dataset, "kernel": kernel, "sampler": sampler, "family": family,
                             "stand_in": 0, "n": 10})


def test_sequential_design_counts_and_errors():
    assert E.sequential_design(SEQ, "regression") == [12, 18]
    assert E.sequential_design({"looks": 3, "regression": {"start": 50, "block": 25}}, "regression") == [50, 75, 100]
    with pytest.raises(ValueError, match="looks >= 1"):
        E.sequential_design({"looks": 0, "regression": {"start": 12, "block": 6}}, "regression")


def test_the_pooled_pivot_is_the_mean_of_the_cases_pivots():
    """One case: the single comparison's pivot; m equal cases: about 1 / sqrt(m) as wide; the interval of the
    geometric mean is the estimate over exp of the pooled pivot's quantiles (issue 32, claims 3, 4b, 4c)."""
    from gpbayes_repro import intervals

    probs = [0.025, 0.975]
    np.testing.assert_allclose(intervals.iqr_ratio_pivot_mean_quantiles([(12, 8)], probs),
                               intervals.iqr_ratio_pivot_quantiles(12, 8, probs), rtol=0, atol=1e-12)
    w1 = np.diff(intervals.iqr_ratio_pivot_mean_quantiles([(12, 12)], probs))[0]
    w9 = np.diff(intervals.iqr_ratio_pivot_mean_quantiles([(12, 12)] * 9, probs))[0]
    assert w9 == pytest.approx(w1 / 3, rel=0.12)  # the t(3) pivot is not normal: 1/sqrt(9) only roughly
    rng = np.random.default_rng(4)
    pairs = [(0.5 * rng.standard_normal(12), rng.standard_normal(8)) for _ in range(5)]
    g, lo, hi, m = intervals.iqr_ratio_geometric_mean(pairs)
    logs = [np.log(np.subtract(*np.percentile(a, [75, 25])) / np.subtract(*np.percentile(b, [75, 25])))
            for a, b in pairs]
    q = intervals.iqr_ratio_pivot_mean_quantiles([(12, 8)] * 5, probs)
    assert m == 5 and g == pytest.approx(np.exp(np.mean(logs)))
    assert (lo, hi) == pytest.approx((g * np.exp(-q[1]), g * np.exp(-q[0])))
    # a case with fewer than 4 replicates on a side is left out; none usable gives NaN
    assert intervals.iqr_ratio_geometric_mean(pairs + [(np.ones(3), np.ones(9))])[3] == 5
    assert np.isnan(intervals.iqr_ratio_geometric_mean([(np.arange(3.0), np.arange(9.0))])[0])


def test_a_claim_decided_at_the_first_look_adds_no_block_an_undecided_one_adds_one_up_to_the_cap():
    first = range(12)
    runs = [
        # 5a: MAMIS-P's IQR a twentieth of MAMIS's -- decided at look 1
        _blk("mamis_p", "is", [1.0, 0.2, 0.05], first), _blk("mamis", "is", [1.0, 1.0, 1.0], first),
        # 5b: MAMIS-P's IQR ~4x AMIS->MAMIS's -- not decided by these 12 replicates (estimate 2.9), decidable by 18
        _blk("amis_mamis", "is", [1.0, 0.2, 0.013], first, seed=3),
    ]
    dec = E.sequential_decisions(runs, SCCFG, SEQ, upto_look=0)
    c5b = dec["claims"]["claim5b"]
    assert dec["claims"]["claim5a"]["verdict"] == "PASS" and c5b["verdict"] is None
    assert not next(iter(c5b["leaves"].values())).get("stopped")
    # only the undecided comparison's samplers get a block (MAMIS-P is read by both claims; MAMIS by the decided one)
    assert dec["extend"] == [("d", "ard", "amis_mamis"), ("d", "ard", "mamis_p")]
    # the block the workflow then runs (replicates 12-17 of those two); at the last look nothing more is added
    more = [_blk("mamis_p", "is", [1.0, 0.2, 0.05], range(12, 18)),
            _blk("amis_mamis", "is", [1.0, 0.2, 0.013], range(12, 18), seed=3)]
    dec2 = E.sequential_decisions(runs + more, SCCFG, SEQ)
    assert dec2["extend"] == [] and dec2["claims"]["claim5a"]["look"] == 0
    c5b = dec2["claims"]["claim5b"]
    leaf = next(iter(c5b["leaves"].values()))
    assert c5b["look"] == 1 and leaf["n"] == {"d/ard/amis_mamis": 18, "d/ard/mamis_p": 18}
    assert leaf["level_pass"] == pytest.approx(0.975)
    # the same blocks in any order and grouping give the same decisions (replicates sorted by their index)
    dec3 = E.sequential_decisions(list(reversed(runs + more)), SCCFG, SEQ)
    assert json.dumps(dec3["claims"], sort_keys=True, default=str) == json.dumps(dec2["claims"], sort_keys=True,
                                                                                default=str)


def test_a_comparison_the_cap_cannot_decide_gets_no_block():
    """A tie (same spread): even 18 replicates around its estimate would straddle 1 -- futile, stopped, no block."""
    first = range(12)
    runs = [_blk("mamis_p", "is", [1.0, 0.2, 0.05], first), _blk("mamis", "is", [1.0, 1.0, 1.0], first),
            _blk("amis_mamis", "is", [1.0, 0.2, 0.05], first, seed=1)]
    dec = E.sequential_decisions(runs, SCCFG, SEQ, upto_look=0)
    leaf = next(iter(dec["claims"]["claim5b"]["leaves"].values()))
    assert leaf["verdict"] is None and "futile" in leaf["stopped"] and dec["extend"] == []


def test_sequential_claims_on_a_small_run_set():
    """Clear separations PASS or FAIL on the IQR-ratio intervals; a tie stays INCONCLUSIVE at the cap."""
    first = range(12)
    runs = [
        # claim 3: full beats diagonal clearly for AMIS (IQR 0.01 vs 1); MAMIS full vs diagonal a tie
        _blk("amis", "is", [1.0, 0.1, 0.01], first), _blk("amis_d", "is", [1.0, 1.0, 1.0], first),
        _blk("mamis", "is", [1.0, 0.5, 0.2], first), _blk("mamis_d", "is", [1.0, 0.5, 0.2], first, seed=2),
        # claim 2a: MH's final IQR 1.0 at 1000 ops; AMIS has 0.01 there: PASS
        _blk("mh_h", "mh", [3.0, 2.0, 1.0], first),
        # claims 5a/5b: MAMIS-P at 0.05 -- beats MAMIS (0.2) only by 4x; far above AMIS->MAMIS (0.002): 5b PASS
        _blk("mamis_p", "is", [1.0, 0.3, 0.05], first), _blk("amis_mamis", "is", [1.0, 0.1, 0.002], first),
    ]
    cur = E.curves(runs)
    recs = E.claims(cur, E.ops_to_reach_table(cur), [], SCCFG, runs=runs, seed=0)
    by = {r["id"]: r for r in recs}
    for r in recs:
        claims_mod.validate_claim(dict(r))
    json.dumps(recs, allow_nan=False)
    assert by["claim2a"]["verdict"] == "PASS" and "Bonferroni over the looks" in by["claim2a"]["interval"]["method"]
    assert by["claim2a"]["interval"]["hi"] <= 0.5 and by["claim2a"]["interval"]["threshold"] == 0.5  # "much"
    assert by["claim5b"]["verdict"] == "PASS" and by["claim5b"]["interval"]["lo"] >= 1.0
    # claim 3 pooled: the clear AMIS win (~0.01) and the MAMIS tie (~1) give a geometric mean ~0.1, one interval
    c3 = by["claim3"]
    s3 = c3["measured"]["sequential"]
    per = [c["estimate"] for c in s3["cases"].values()]
    assert s3["pooled"]["n_cases_used"] == 2 and c3["interval"]["estimate"] == pytest.approx(np.sqrt(np.prod(per)))
    assert c3["verdict"] == "PASS" and c3["interval"]["hi"] < 1.0 and s3["look"] == 1
    # the same two cases with the AMIS win removed: a tie alone is undecided, futile at the cap, no block
    tie = [r for r in runs if r.attrs["sampler"] in ("mamis", "mamis_d")]
    dec = E.sequential_decisions(tie, SCCFG, SEQ, upto_look=0)
    assert dec["claims"]["claim3"]["verdict"] is None and "futile" in dec["claims"]["claim3"]["stopped"]
    assert dec["extend"] == []
    # a FAIL: claim 5a with MAMIS-P clearly worse than MAMIS
    worse = [_blk("mamis_p", "is", [1.0, 0.3, 1.0], first), _blk("mamis", "is", [1.0, 0.3, 0.02], first),
             _blk("amis_mamis", "is", [1.0, 0.3, 0.02], first, seed=3)]
    cur = E.curves(worse)
    c5a = {r["id"]: r for r in E.claims(cur, E.ops_to_reach_table(cur), [], SCCFG, runs=worse)}["claim5a"]
    assert c5a["verdict"] == "FAIL" and c5a["interval"]["lo"] > 1.0


def test_the_workflow_run_files_of_each_look_follow_the_plans(tmp_path):
    """gpbayes_repro.amis_design.runs_at: first blocks, then one more per key each earlier look extends."""
    from gpbayes_repro import amis_design

    keys = [("d", "ard", "amis"), ("d", "ard", "mh_h"), ("g", "rbf", "pm_mh_ep_64")]
    assert amis_design.counts(SEQ, "regression") == [12, 18] and amis_design.cap(SEQ, "classification") == 12
    assert amis_design.initial_blocks(SEQ, "amis") == 2 and amis_design.initial_blocks(SEQ, "pm_mh_ep_64") == 2
    first = amis_design.runs_at(keys, SEQ, 0, None)
    assert len(first) == 6 and "results/amis/runs/d_ard_mh_h_block1.nc" in first
    plan = tmp_path / "look0.json"
    plan.write_text(json.dumps({"extend": [["g", "rbf", "pm_mh_ep_64"]]}))
    second = amis_design.runs_at(keys, SEQ, 1, lambda j: str(plan))
    assert second == first + ["results/amis/runs/g_rbf_pm_mh_ep_64_block2.nc"]
    with pytest.raises(ValueError, match="multiple of block"):
        amis_design.counts({"looks": 2, "regression": {"start": 10, "block": 4}}, "regression")


def test_a_confirmatory_block_decides_claim1_on_its_fresh_replicates_alone():
    """Issue 32: claim 1 decided on a block of fresh replicates (streams past the design's cap), one look at 0.95.

    AMIS's IQR is a tenth of MH's at MH's own final cost: the tree (data set -> AMIS or MAMIS -> every MCMC
    sampler) PASSes on the block; the same runs with AMIS no better than MH leave it undecided; the block must
    hold exactly the registered replicates.
    """
    spec = {"first_replicate": 24, "replicates": 24, "block": 12, "level": 0.95}
    fresh = range(24, 48)

    def runs(is_sd):
        return [_blk("amis", "is", is_sd, fresh, kernel="rbf"), _blk("mh_h", "mh", [3.0, 2.0, 1.0], fresh, kernel="rbf")]

    rec = E.confirmatory_decision(runs([1.0, 0.1, 0.1]), SCCFG, "claim1", spec)
    assert rec["verdict"] == "PASS" and rec["replicates"] == 24 and rec["replicate_streams"] == [24, 47]
    assert rec["interval"]["hi"] < 1.0 and rec["interval"]["threshold"] == 1.0
    (leaf,) = rec["comparisons"].values()
    assert leaf["n"] == {"d/rbf/amis": 24, "d/rbf/mh_h": 24} and leaf["level_pass"] == pytest.approx(0.95)
    tie = E.confirmatory_decision(runs([3.0, 2.0, 1.0]), SCCFG, "claim1", spec)
    assert tie["verdict"] == "INCONCLUSIVE" and tie["interval"]["lo"] < 1.0 < tie["interval"]["hi"]
    with pytest.raises(ValueError, match=r"d/rbf/amis has replicates 24-35 \(12\), the block needs exactly 24-47"):
        E.confirmatory_decision([_blk("amis", "is", [1.0, 0.1, 0.1], range(24, 36), kernel="rbf")] + runs([1, 1, 1])[1:],
                                SCCFG, "claim1", spec)
    # the record: an undecided claim takes the block's verdict and keeps the design's as exploratory ...
    base = {"id": "claim1", "verdict": "INCONCLUSIVE", "passed": False, "reason": "futile",
            "interval": {"estimate": 0.5, "lo": 0.2, "hi": 1.4, "threshold": 1.0, "side": "below"},
            "measured": {"sequential": {}}}
    (out,) = E.apply_confirmatory([base], [rec])
    assert out["verdict"] == "PASS" and out["passed"] and "reason" not in out
    assert out["measured"]["exploratory"]["verdict"] == "INCONCLUSIVE" and out["measured"]["confirmatory"]["used"]
    assert out["interval"]["hi"] == rec["interval"]["hi"]
    # ... a decided one keeps its verdict; a block for a claim with no record is an error
    (kept,) = E.apply_confirmatory([{**base, "verdict": "FAIL"}], [rec])
    assert kept["verdict"] == "FAIL" and kept["measured"]["confirmatory"]["used"] is False
    with pytest.raises(ValueError, match="no record"):
        E.apply_confirmatory([{**base, "id": "claim2a"}], [rec])


def test_the_confirmatory_block_plan():
    from gpbayes_repro import amis_design

    rbf = ["amis", "amis_d", "mamis", "mamis_d", "mamis_p", "mh_d", "mh_h", "hmc_h", "nutsda_h", "slice"]
    assert amis_design.confirm_samplers("claim1", rbf) == ["amis", "mamis", "mh_d", "mh_h", "hmc_h", "nutsda_h",
                                                           "slice"]
    assert amis_design.confirm_blocks({"first_replicate": 48, "replicates": 120, "block": 24}) == [2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="multiples of block"):
        amis_design.confirm_blocks({"first_replicate": 50, "replicates": 120, "block": 24})
    with pytest.raises(ValueError, match="claim must be one of"):
        amis_design.confirm_samplers("claim2a", rbf)
