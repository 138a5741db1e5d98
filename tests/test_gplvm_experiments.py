"""Experiment functions of Gadd et al. Sec. 6.1 (gpbayes_repro.experiments.gplvm) on tiny problems."""

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from gpbayes_repro.experiments import gplvm as E

SIM = {"n": 30, "x_max_over_pi": 4.0, "n_outputs": 6, "noise_sd": 0.05, "zeta": [0.0, 1.0],
       "F": {"case1": [1.0, 1.0], "case2": [0.8, 1.2], "case3": [0.7, 1.3]}}
CFG = {
    "latent_dim": 2, "latent_jitter": 1e-6,
    "priors": {"sigma": {"gamma": {"shape": 1.0, "rate": 0.1}}, "theta": {"gamma": {"shape": 1.0, "rate": 0.1}},
               "theta_S": {"gamma": {"shape": 1.0, "rate": 0.1}}, "beta": {"gamma": {"shape": 1.0, "rate": 0.001}}},
    "blocks": [["sigma_0", "theta_0", "theta_1"], ["theta_S", "beta"]],
    "warm_start": True, "adapt_epsilon": 1e-6, "initial_proposal_sd": 0.1, "start_noise_sd": 0.1,
    "ml": {"start": {"sigma": 0.5, "theta": 1.0, "theta_S": 0.3, "beta": 100.0}, "restart_scale": 0.5},
    "prediction": {"y_limits": [-1.3, 1.3], "n_latent_draws": 1},
}
TINY = {"n_chains": 3, "chains_per_job": 3, "n_burn": 2, "n_draws": 4, "adapt_start": 3, "n_imp": 3,
        "vb_max_iter": 5, "n_inducing": 6, "ml_restarts": 1, "ml_max_iter": 30, "n_predictive_draws": 6,
        "ml_predictive_samples": 6, "n_x_test": 8, "n_y_bins": 12}
TINY_SIM = dict(SIM, n=12)


@pytest.mark.parametrize("case", ["case1", "case2", "case3"])
def test_simulation_matches_the_spec(case):
    ds = E.simulate_case(case, SIM, seed=3)
    assert ds["Y"].shape == (30, 6) and ds["x"].shape == (30,)
    x = ds["x"].values
    assert x[0] == 0.0 and math.isclose(x[-1], 4 * math.pi) and np.allclose(np.diff(x), x[1] - x[0])
    lo, hi = SIM["F"][case]
    F = ds["F"].values
    assert np.all((F >= lo) & (F <= hi))
    if case == "case1":
        assert np.all(F == 1.0)
    else:
        assert np.unique(F).size == 6
    zeta = ds["zeta"].values
    assert np.all((zeta > 0) & (zeta < 1))
    f = ds["f"].values
    assert np.allclose(f[:, :3], zeta[:3] * np.cos(F[:3] * x[:, None]))
    assert np.allclose(f[:, 3:], zeta[3:] * np.sin(F[3:] * x[:, None]))
    resid = (ds["Y"] - ds["f"]).values
    assert 0.03 < resid.std() < 0.07
    again = E.simulate_case(case, SIM, seed=3)
    assert np.array_equal(again["Y"].values, ds["Y"].values)
    assert not np.array_equal(E.simulate_case(case, SIM, seed=4)["Y"].values, ds["Y"].values)


def test_zeta_shared_across_cases_and_f_differs():
    a, b = E.simulate_case("case2", SIM, 1), E.simulate_case("case3", SIM, 1)
    assert np.array_equal(a["zeta"].values, b["zeta"].values)
    assert not np.array_equal(a["F"].values, b["F"].values)


def test_binned_density_and_nmse_by_hand():
    edges = np.array([-1.0, 0.0, 1.0, 2.0])
    # one Gaussian N(0, 1) at one test input: bin probabilities by the normal CDF
    d = E.binned_gaussian_mixture(np.zeros((1, 1)), np.ones((1, 1)), edges)
    Phi = stats.norm.cdf
    assert np.allclose(d, [[Phi(0) - Phi(-1), Phi(1) - Phi(0), Phi(2) - Phi(1)]])
    # an equal mixture of N(0, 1) and N(1, 1) averages the two
    d2 = E.binned_gaussian_mixture(np.array([[0.0], [1.0]]), np.ones((2, 1)), edges, chunk=1)
    one = E.binned_gaussian_mixture(np.array([[1.0]]), np.ones((1, 1)), edges)
    assert np.allclose(d2, 0.5 * (d + one))
    # NMSE: truth (1, 2), estimate (2, 2) -> 100 * 1 / 5 = 20 %
    assert math.isclose(E.nmse_percent([[2.0, 2.0]], [[1.0, 2.0]]), 20.0)
    assert E.nmse_percent(d, d) == 0.0
    assert math.isclose(E.nmse_percent(np.zeros_like(d), d), 100.0)


def test_true_binned_density_integrates_to_one():
    ds = E.simulate_case("case3", SIM, 1)
    x_test = np.linspace(0, 4 * np.pi, 5)
    edges = np.linspace(-1.3, 1.3, 131)
    d = E.true_binned_density(ds, x_test, edges)
    assert d.shape == (6, 5, 130)
    assert np.allclose((d * np.diff(edges)).sum(axis=2), 1.0, atol=1e-6)


def test_multimodality_measures_separate_bimodal_from_gaussian():
    rng = np.random.default_rng(0)
    gauss = rng.standard_normal(4000)
    bimodal = np.concatenate([rng.normal(-3, 1, 2000), rng.normal(3, 1, 2000)])
    assert abs(E.bimodality_coefficient(gauss) - 1 / 3) < 0.03
    assert E.bimodality_coefficient(bimodal) > 5 / 9
    assert E.ks_to_gaussian(gauss) < 0.03
    assert E.ks_to_gaussian(bimodal) > 0.08
    assert math.isnan(E.bimodality_coefficient(np.ones(10)))


def test_block_chains_partition():
    got = [list(E.block_chains(b, 5, 2)) for b in range(3)]
    assert got == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError):
        E.block_chains(3, 5, 2)


@pytest.fixture(scope="module")
def tiny():
    ds = E.simulate_case("case3", TINY_SIM, 2)
    ml = E.fit_ml(ds, CFG, TINY, 2)
    return ds, ml


def test_chains_per_job_grouping_invariance(tiny):
    ds, ml = tiny
    whole = E.run_block(ds, ml, block=0, cfg=CFG, settings=TINY, seed=5)
    split = dict(TINY, chains_per_job=2)
    parts = E.merge_chains([E.run_block(ds, ml, block=b, cfg=CFG, settings=split, seed=5) for b in range(2)])
    for name in ("sigma_0", "beta", "Z"):
        assert np.array_equal(whole["posterior"][name].values, parts["posterior"][name].values)
    assert np.array_equal(whole["sample_stats"]["log_marginal"].values, parts["sample_stats"]["log_marginal"].values)
    assert whole["posterior"]["Z"].shape == (3, 4, 12, 2)
    assert {"lp", "accepted", "n_cubic", "wall_time"} <= set(whole["sample_stats"].data_vars)
    assert all(v.dims[:2] == ("chain", "draw") for v in whole["posterior"].data_vars.values())
    assert list(whole["posterior"]["chain"].values) == [0, 1, 2]


def test_evaluation_and_claims_on_a_tiny_run(tiny, tmp_path):
    ds, ml = tiny
    chains = E.run_block(ds, ml, block=0, cfg=CFG, settings=TINY, seed=5)
    ev = E.evaluate_case(ds, ml, chains, CFG, TINY, seed=5)
    assert ev["density"].shape == (3, 6, 8, 12)
    assert np.all(np.isfinite(ev["nmse"].values)) and np.all(ev["nmse"].values >= 0)
    d = ev["density"].sel(feature=1)
    assert not np.array_equal(d.sel({"method": "true"}).values, d.sel({"method": "ml"}).values)
    E.fig2_figure(ev, tmp_path / "fig2.pdf")
    E.fig1_figure({"case3": chains}, {"case3": ml}, tmp_path / "fig1.pdf")
    assert (tmp_path / "fig2.pdf").stat().st_size > 0 and (tmp_path / "fig1.pdf").stat().st_size > 0
    again = E.evaluate_case(ds, ml, chains, CFG, TINY, seed=5)
    assert np.array_equal(ev["nmse"].values, again["nmse"].values)
    shape = E.shape_summary(chains, ml, "case3")
    assert list(shape["param"]) == ["sigma_0", "theta_0", "theta_1", "theta_S", "beta"]
    paper = pd.DataFrame({"case": ["case3"] * 6, "feature": range(1, 7), "marginalised": 1.0, "ml": 2.0})
    evs = []
    for c in E.CASES:
        e = ev.copy()
        e.attrs["case"] = c
        evs.append(e)
    table = E.table1(evs, paper)
    assert len(table) == 18 and table.loc[table["case"] == "case3", "paper_ml"].eq(2.0).all()
    shapes = pd.concat([shape.assign(case=c) for c in E.CASES])
    records = E.gplvm_claims(table, shapes, {"bimodality_coefficient": 5 / 9, "ks_distance": 0.15,
                                             "min_gap_increase": 0.0})
    assert [r["id"] for r in records] == ["marginalised-beats-ml-everywhere", "gap-widens-case1-to-case3",
                                          "non-gaussian-posteriors-case2-3"]
    # identical evaluations in every case: the gap cannot widen
    assert records[1]["passed"] is False


def test_claims_logic_on_constructed_tables():
    rows = []
    for k, c in enumerate(E.CASES):
        for f in range(1, 7):
            rows.append({"case": c, "feature": f, "nmse_marginalised": 10.0, "nmse_ml": 20.0 + 30.0 * k,
                         "paper_marginalised": 10.0, "paper_ml": 30.0})
    table = pd.DataFrame(rows)
    shapes = pd.DataFrame([{"case": c, "param": "beta", "bimodality_coefficient": bc, "ks_to_gaussian": 0.05,
                            "ml_inside_90": True} for c, bc in zip(E.CASES, (0.3, 0.6, 0.7))])
    cfg = {"bimodality_coefficient": 5 / 9, "ks_distance": 0.15, "min_gap_increase": 0.0}
    r = E.gplvm_claims(table, shapes, cfg)
    assert [x["passed"] for x in r] == [True, True, True]
    assert r[1]["measured"]["mean_gap_case3"] == 70.0
    table.loc[0, "nmse_marginalised"] = 50.0
    shapes.loc[1, "bimodality_coefficient"] = 0.4
    r = E.gplvm_claims(table, shapes, cfg)
    assert r[0]["passed"] is False and r[0]["measured"]["losses"] == ["case1/feature1"]
    assert r[2]["passed"] is False
