"""Experiment functions of Gadd et al. Sec. 6.1 (gpbayes_repro.experiments.gplvm) on tiny problems."""

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from gpbayes_repro import claims as C
from gpbayes_repro import intervals
from gpbayes_repro.experiments import gplvm as E
from gpbayes_repro.experiments import gplvm_ml_restarts as R

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
    "ml_restarts": {"start_sd": 1.0},
}
TINY = {"n_chains": 3, "chains_per_job": 3, "n_burn": 2, "n_draws": 4, "adapt_start": 3, "n_imp": 3,
        "vb_max_iter": 5, "n_inducing": 6, "ml_restarts": 1, "ml_max_iter": 30, "n_predictive_draws": 6,
        "ml_predictive_samples": 6, "n_x_test": 8, "n_y_bins": 12, "n_ml_starts": 3}
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
    restarts = R.run_restarts(ds, ml, CFG, TINY, seed=5)
    # restart 0 is the pipeline's ML estimate, evaluated with Table 1's random numbers: same NMSE exactly
    assert np.array_equal(restarts.filter(like="nmse_feature").iloc[0].to_numpy(),
                          ev["nmse"].sel(estimate="ml").values)
    spread = R.restart_spread(pd.concat([restarts.assign(case=c) for c in E.CASES]))
    table = E.table1(evs, paper, spread)
    assert len(table) == 18 and table.loc[table["case"] == "case3", "paper_ml"].eq(2.0).all()
    assert (table["nmse_ml_restart_min"] <= table["nmse_ml_best_bound"]).all()
    assert (table["nmse_ml_best_bound"] <= table["nmse_ml_restart_max"]).all()
    # the per-chain densities recombine into the pooled marginalised density
    w = ev["chain_components"].values
    pooled = np.tensordot(w, ev["density_by_chain"].values, axes=(0, 0)) / w.sum()
    assert np.allclose(pooled, ev["density"].sel({"method": "marginalised"}).values)
    boot = {c: R.marginalised_bootstrap(ev, np.random.default_rng(k), 200) for k, c in enumerate(E.CASES)}
    assert boot["case1"].shape == (200, 6) and np.all(np.isfinite(boot["case1"]))
    shapes = pd.concat([shape.assign(case=c) for c in E.CASES])
    assert "ess_bulk" in shapes
    records = E.gplvm_claims(table, shapes, {"bimodality_coefficient": 5 / 9, "ks_distance": 0.15,
                                             "min_gap_increase": 0.0}, boot)
    assert [r["id"] for r in records] == ["marginalised-beats-ml-everywhere", "gap-widens-case1-to-case3",
                                          "non-gaussian-posteriors-case2-3"]
    for r in records[:2]:  # 4-draw chains cannot pass the convergence gate
        C.validate_claim(dict(r))
        assert r["verdict"] == "INCONCLUSIVE" and "not converged" in r["reason"]
        assert r["interval"]["threshold"] == 0.0 and r["measured"]["interval_verdict"] in C.VERDICTS
    C.validate_claim(dict(records[2]))
    assert records[2]["verdict"] in ("INCONCLUSIVE", "FAIL")  # never PASS on 4-draw chains
    R.restart_figure(restarts, table, tmp_path / "restarts.pdf")
    assert (tmp_path / "restarts.pdf").stat().st_size > 0


def test_restarts_are_deterministic_and_seeded(tiny):
    ds, ml = tiny
    a = R.run_restarts(ds, ml, CFG, TINY, seed=5).drop(columns="cpu_seconds")
    b = R.run_restarts(ds, ml, CFG, TINY, seed=5).drop(columns="cpu_seconds")
    pd.testing.assert_frame_equal(a, b)
    assert list(a["restart"]) == [0, 1, 2] and a["converged"].iloc[0] is None
    assert np.isclose(a["bound"].iloc[0], ml.attrs["bound"])
    model = E.build_model(ds, CFG, TINY)
    s1 = R.restart_start("case3", 1, model, CFG, 5)
    assert np.array_equal(s1, R.restart_start("case3", 1, model, CFG, 5))
    assert not np.allclose(s1, R.restart_start("case3", 1, model, CFG, 6))
    assert not np.allclose(s1, R.restart_start("case3", 2, model, CFG, 5))
    assert not np.allclose(s1, R.restart_start("case2", 1, model, CFG, 5))
    assert np.allclose(a[[f"start_{n}" for n in model.param_names]].iloc[1].to_numpy(), np.exp(s1))
    with pytest.raises(ValueError):
        R.restart_start("case3", 0, model, CFG, 5)


def test_best_bound_selection_ignores_nmse():
    df = pd.DataFrame({
        "case": ["case1"] * 4 + ["case2"] * 3,
        "restart": [0, 1, 2, 3, 0, 1, 2],
        "bound": [10.0, 12.0, -np.inf, 11.0, 5.0, 5.0, 4.0],
        "converged": [None, True, False, True, None, True, True],
        "nmse_feature1": [1.0, 50.0, np.nan, 2.0, 7.0, 3.0, 1.0],
        "nmse_feature2": [1.0, 60.0, np.nan, 2.0, 7.0, 3.0, 1.0],
    })
    best = R.select_best_bound(df).set_index("case")
    assert best.loc["case1", "restart"] == 1  # the largest bound, although its NMSE is the worst
    assert best.loc["case2", "restart"] == 0  # tie on the bound: lowest restart index
    sp = R.restart_spread(df).set_index(["case", "feature"])
    assert sp.loc[("case1", 1), "nmse_ml_best_bound"] == 50.0
    assert sp.loc[("case1", 1), "nmse_ml_restart_min"] == 1.0 and sp.loc[("case1", 2), "nmse_ml_restart_max"] == 60.0
    assert sp.loc[("case1", 1), "n_converged"] == 2 and sp.loc[("case1", 1), "bound_min"] == -np.inf
    with pytest.raises(ValueError):
        R.select_best_bound(df.assign(bound=-np.inf))


def _claim_inputs(spread_sd=0.5, rhat=1.0):
    rng = np.random.default_rng(0)
    rows, boot = [], {}
    for k, c in enumerate(E.CASES):
        for f in range(1, 7):
            rows.append({"case": c, "feature": f, "nmse_marginalised": 10.0, "nmse_ml": 99.0,
                         "nmse_ml_best_bound": 20.0 + 30.0 * k, "paper_marginalised": 10.0, "paper_ml": 30.0})
        boot[c] = 10.0 + spread_sd * rng.standard_normal((500, 6))
    shapes = pd.DataFrame([{"case": c, "param": "beta", "bimodality_coefficient": bc, "ks_to_gaussian": 0.05,
                            "ml_inside_90": True, "rhat": rhat, "ess_bulk": 400.0}
                           for c, bc in zip(E.CASES, (0.3, 0.6, 0.7))])
    return pd.DataFrame(rows), shapes, boot


def _claims(*args):
    return [C.validate_claim(dict(x)) for x in E.gplvm_claims(*args)]


def test_fixed_vb_start_makes_the_chain_independent_of_its_past(tiny):
    """vb_start: ml (no warm start): Alg. 1 starts at the ML fit's q at every proposal, so the q behind an
    estimate is a function of the proposed psi alone, whatever state the chain is in."""
    ds, ml = tiny
    cfg = dict(CFG, warm_start=False, vb_start="ml")
    model = E.build_model(ds, cfg, TINY)
    config = E.gibbs_config(model, cfg, TINY, ml)
    ref = E._ml_params(ml)
    assert not config.warm_start and all(np.array_equal(a, b) for a, b in zip(config.reference_params, ref))
    psi = ml["psi"].values + 0.05
    other = ref._replace(whitened_mean=ref.whitened_mean + 0.3)  # a different "current" q
    from gpbayes.gplvm import pseudo_marginal as pm
    a = pm._estimate(np.random.default_rng(1), model, psi, config, ref)
    b = pm._estimate(np.random.default_rng(1), model, psi, config, other)
    assert a.log_marginal == b.log_marginal and all(np.array_equal(x, y) for x, y in zip(a.variational, b.variational))
    # with the warm start the current q matters (the reason it is not the default)
    warm = E.gibbs_config(model, CFG, TINY, ml)
    c = pm._estimate(np.random.default_rng(1), model, psi, warm, other)
    assert not np.array_equal(c.variational.whitened_mean, a.variational.whitened_mean)
    # vb_max_iter 0: q is the ML fit's q itself
    z = E.gibbs_config(model, cfg, dict(TINY, vb_max_iter=0), ml)
    d = pm._estimate(np.random.default_rng(1), model, psi, z, other)
    assert d.vb is None and all(np.array_equal(x, y) for x, y in zip(d.variational, ref))
    with pytest.raises(ValueError, match="ML fit"):
        E.gibbs_config(model, cfg, TINY)
    # vb_tol (optional scale key): Alg. 1 runs until L-BFGS-B's relative bound change / projected gradient
    # is below it (capped at vb_max_iter); absent, optimise_variational's default applies
    assert "tol" not in config.vb_options
    t = E.gibbs_config(model, cfg, dict(TINY, vb_tol=1e-4, vb_max_iter=200), ml)
    assert t.vb_options == {"max_iter": 200, "tol": 1e-4}
    e = pm._estimate(np.random.default_rng(1), model, psi, t, ref)
    assert e.vb.n_iterations < 200 and e.vb.converged


def test_claims_logic_on_constructed_tables():
    cfg = {"bimodality_coefficient": 5 / 9, "ks_distance": 0.15, "min_gap_increase": 0.0}
    table, shapes, boot = _claim_inputs()
    r = _claims(table, shapes, cfg, boot)
    assert [x["verdict"] for x in r] == ["PASS", "PASS", "PASS"]
    assert r[1]["measured"]["mean_gap_case3"] == 70.0  # from the best-bound ML column, not nmse_ml
    assert r[0]["interval"]["lo"] > 0 and math.isclose(r[0]["interval"]["estimate"], 10.0)
    # FAIL: one cell where the marginalised estimate is clearly worse than the best-bound ML
    t2, b2 = table.copy(), {c: v.copy() for c, v in boot.items()}
    t2.loc[0, "nmse_marginalised"] = 50.0
    b2["case1"][:, 0] += 40.0
    shapes.loc[1, "bimodality_coefficient"] = 0.4
    r = _claims(t2, shapes, cfg, b2)
    assert r[0]["verdict"] == "FAIL" and r[0]["measured"]["losses"] == ["case1/feature1"]
    assert r[0]["interval"]["hi"] < 0 and r[2]["passed"] is False
    # INCONCLUSIVE: the gap of one cell is small beside the spread over chains
    t3, b3 = table.copy(), {c: v.copy() for c, v in boot.items()}
    t3.loc[0, "nmse_marginalised"] = 19.0
    b3["case1"][:, 0] = 19.0 + 5.0 * np.random.default_rng(1).standard_normal(500)
    r = _claims(t3, shapes, cfg, b3)
    assert r[0]["verdict"] == "INCONCLUSIVE" and "contains the threshold" in r[0]["reason"]
    assert r[0]["interval"]["lo"] < 0 < r[0]["interval"]["hi"] and r[1]["verdict"] == "PASS"
    # INCONCLUSIVE: intervals on the claims' side, but the chains fail the convergence gate
    table, shapes, boot = _claim_inputs(rhat=1.3)
    r = _claims(table, shapes, cfg, boot)
    assert [x["verdict"] for x in r[:2]] == ["INCONCLUSIVE", "INCONCLUSIVE"]
    assert all(x["measured"]["interval_verdict"] == "PASS" and "not converged" in x["reason"] for x in r[:2])
    for x in r:
        C.validate_claim(dict(x))
    # claim 3 is gated too: flagged shapes on chains that have not mixed decide nothing
    assert r[2]["verdict"] == "INCONCLUSIVE" and "case2: not converged" in r[2]["reason"]
    assert r[2]["measured"]["case2_flagged"] and r[2]["measured"]["case2_converged"] is False
    # ... but a converged Case 2/3 that is not flagged FAILs it whatever the other case
    table, shapes, boot = _claim_inputs()
    shapes.loc[shapes["case"] == "case3", "rhat"] = 1.3
    shapes.loc[shapes["case"] == "case2", "bimodality_coefficient"] = 0.4
    assert _claims(table, shapes, cfg, boot)[2]["verdict"] == "FAIL"
    shapes.loc[shapes["case"] == "case2", "bimodality_coefficient"] = 0.6
    r = _claims(table, shapes, cfg, boot)
    assert r[2]["verdict"] == "INCONCLUSIVE" and r[2]["reason"].startswith("case3: not converged")
    # only Cases 2 and 3 are tested: Case 1 neither flagged nor converged changes nothing
    table, shapes, boot = _claim_inputs()
    shapes.loc[shapes["case"] == "case1", "rhat"] = 3.0
    assert _claims(table, shapes, cfg, boot)[2]["verdict"] == "PASS"
    # claim 2 FAILs when the gap shrinks from Case 2 to Case 3
    table, shapes, boot = _claim_inputs()
    table.loc[table["case"] == "case3", "nmse_ml_best_bound"] = 25.0
    r = _claims(table, shapes, cfg, boot)
    assert r[1]["verdict"] == "FAIL" and r[1]["interval"]["hi"] < 0


def test_bootstrap_needs_two_chains():
    ev = xr.Dataset({"density_by_chain": (("chain", "feature", "x", "y"), np.ones((1, 2, 3, 4))),
                     "chain_components": (("chain",), [5]),
                     "density": (("method", "feature", "x", "y"), np.ones((3, 2, 3, 4)))},
                    coords={"method": ["true", "marginalised", "ml"]})
    assert np.all(np.isnan(R.marginalised_bootstrap(ev, np.random.default_rng(0), 10)))
    two = ev.assign(density_by_chain=(("chain", "feature", "x", "y"), np.stack([np.ones((2, 3, 4)),
                                                                                2 * np.ones((2, 3, 4))])),
                    chain_components=(("chain",), [5, 5]))
    b = R.marginalised_bootstrap(two, np.random.default_rng(0), 400)
    # resamples are {1,1}, {1,2}, {2,2}: NMSE 0, 25 or 100 %
    assert set(np.round(np.unique(b), 6)) == {0.0, 25.0, 100.0}




def _fake_chains(draws: np.ndarray, names=("sigma_0", "beta")) -> dict:
    """Chain-set groups with given (chain, draw, param) log-draws (what choose_chain_set reads)."""
    c, d, _ = draws.shape
    post = xr.Dataset({n: (("chain", "draw"), np.exp(draws[:, :, j])) for j, n in enumerate(names)})
    st = xr.Dataset({"accepted": (("chain", "draw", "gibbs_block"), np.ones((c, d, 2), dtype=bool)),
                     "wall_time": (("chain", "draw"), np.full((c, d), 0.01))})
    return {"posterior": post, "sample_stats": st}


def test_choose_chain_set_reads_the_first_set_that_passes_the_gate():
    rng = np.random.default_rng(0)
    mixed = _fake_chains(rng.standard_normal((4, 500, 2)))
    stuck = _fake_chains(rng.standard_normal((4, 500, 2)) * 0.1 + np.arange(4)[:, None, None])
    assert C.convergence(np.log(np.stack([mixed["posterior"][n].values for n in ("sigma_0", "beta")], -1)))[
        "max_rank_rhat"] < 1.05
    # not passing but closer to the gate: every chain drifts half as far (larger bulk ESS than ``stuck``)
    closer = _fake_chains(rng.standard_normal((4, 500, 2)) + 0.5 * np.arange(4)[:, None, None])
    for sets, want in (({"paper": mixed, "cpm": stuck}, "paper"), ({"paper": stuck, "cpm": mixed}, "cpm"),
                       ({"paper": mixed, "cpm": mixed}, "paper"), ({"paper": stuck, "cpm": closer}, "cpm"),
                       ({"paper": closer, "cpm": stuck}, "paper"), ({"paper": stuck, "cpm": stuck}, "paper")):
        name, table = E.choose_chain_set(sets)
        assert name == want, table
        assert list(table["chain_set"]) == ["paper", "cpm"] and table["chosen"].sum() == 1
        assert table.loc[table["chosen"], "chain_set"].item() == want
        ok = {"paper": sets["paper"] is mixed, "cpm": sets["cpm"] is mixed}
        assert list(table["passes_gate"]) == [ok["paper"], ok["cpm"]]
    # none passes: the set with the larger minimum bulk ESS is read (issue 40), the earlier on ties
    _, table = E.choose_chain_set({"paper": stuck, "cpm": closer})
    assert table["min_bulk_ess"].iloc[1] > table["min_bulk_ess"].iloc[0] and not table["passes_gate"].any()
    # the gate is claims.convergence with claims' thresholds
    row = E.chain_set_summary(stuck, "cpm")
    assert row["max_rank_rhat"] > 1.05 and not row["passes_gate"]


def test_correlated_chain_set_on_a_tiny_run(tiny, tmp_path):
    from gpbayes_repro import io

    ds, ml = tiny
    settings = dict(TINY, cpm_n_burn=1, cpm_n_draws=5, cpm_n_imp=2)
    cpm_set = E.chain_set_settings(settings, "cpm")
    assert (cpm_set["n_burn"], cpm_set["n_draws"], cpm_set["n_imp"]) == (1, 5, 2)
    assert E.chain_set_settings(settings, "paper") == settings
    with pytest.raises(ValueError, match="chain_set"):
        E.chain_set_settings(settings, "nuts")
    paper = E.run_block(ds, ml, block=0, cfg=CFG, settings=settings, seed=5)
    cpm = E.run_block(ds, ml, block=0, cfg=CFG, settings=cpm_set, seed=5, rho=0.9)
    again = E.run_block(ds, ml, block=0, cfg=CFG, settings=cpm_set, seed=5, rho=0.9)
    assert np.array_equal(cpm["posterior"]["beta"].values, again["posterior"]["beta"].values)
    assert cpm["posterior"]["beta"].shape == (3, 5) and cpm["posterior"].attrs["chain_set"] == "cpm"
    assert paper["posterior"].attrs["chain_set"] == "paper" and paper["posterior"].attrs["rho"] == 0.0
    # same start as the paper's chains, its own generator stream
    assert np.array_equal(cpm["sample_stats"]["start"].values, paper["sample_stats"]["start"].values)
    # claim_chains reads the files of both sets; 4-5 draw chains pass no gate: the paper's set is read
    paths = {"paper": [tmp_path / "p.nc"], "cpm": [tmp_path / "c.nc"]}
    io.write_inference_data(paper, paths["paper"][0])
    io.write_inference_data(cpm, paths["cpm"][0])
    got = E.claim_chains({"case3": {"cpm": paths["cpm"], "paper": paths["paper"]}})
    name, chains, table = got["case3"]
    assert name == "paper" and list(table["chain_set"]) == ["paper", "cpm"] and table["case"].eq("case3").all()
    assert np.array_equal(chains["posterior"]["beta"].values, paper["posterior"]["beta"].values)
    got = E.claim_chains({"case3": {"cpm": paths["cpm"], "paper": paths["paper"]}}, max_rhat=np.inf, min_ess=0)
    assert got["case3"][0] == "paper"


def test_vb_optimisation_gap_study(tiny):
    """The Alg. 1 study: a cut optimisation never beats the optimum; more iterations close the gap."""
    ds, ml = tiny
    t = E.vb_optimisation_gap(ds, ml, CFG, TINY, n_points=3, max_iters=(1, 5), n_imp=8, seed=1)
    assert len(t) == 3 * 3 and set(t["max_iter"]) == {"1", "5", "converged"}
    assert (t["bound_gap"] >= -1e-6).all()
    conv = t[t["max_iter"] == "converged"]
    assert (conv["bound_gap"] == 0).all() and (conv["log_estimate_gap"] == 0).all()
    g = t.pivot(index="point", columns="max_iter", values="bound_gap")
    assert (g["5"] <= g["1"] + 1e-9).all()
    assert t.equals(E.vb_optimisation_gap(ds, ml, CFG, TINY, n_points=3, max_iters=(1, 5), n_imp=8, seed=1))


def test_gplvm_module_never_imports_the_restart_study():
    """Issue 26 section 6: experiments.gplvm is the base, gplvm_ml_restarts imports it (no circle, no private use)."""
    import ast
    import inspect

    src = ast.parse(inspect.getsource(E))
    names = {a.name for n in ast.walk(src) if isinstance(n, ast.ImportFrom) for a in n.names}
    names |= {n.module or "" for n in ast.walk(src) if isinstance(n, ast.ImportFrom)}
    assert not any("gplvm_ml_restarts" in x for x in names)
    r_src = inspect.getsource(R)
    assert "G._" not in r_src
    assert R.claims_1_2 is E.claims_1_2 and R.marginalised_bootstrap is E.marginalised_bootstrap


def test_claims_1_2_on_jackknife_intervals():
    """The workflow's path (issue 26 s.1): delete-one-chain jackknife t; every cell above 0 -> PASS
    (intersection-union), one cell below 0 at the Bonferroni level -> FAIL; the gate as before."""
    cfg = {"bimodality_coefficient": 5 / 9, "ks_distance": 0.15, "min_gap_increase": 0.0}
    table, shapes, _ = _claim_inputs()
    rng = np.random.default_rng(3)
    loo = {c: 10.0 + 0.3 * rng.standard_normal((4, 6)) for c in E.CASES}
    r = [C.validate_claim(dict(x)) for x in E.gplvm_claims(table, shapes, cfg, loo=loo)]
    assert [x["verdict"] for x in r] == ["PASS", "PASS", "PASS"]
    assert "jackknife" in r[0]["interval"]["method"] and r[0]["interval"]["lo"] > 0
    # the interval of a cell is est -+ t_3 x the jackknife s.e. of its leave-one-out values
    est, lo, hi = intervals.jackknife_t(10.0, [20.0 - loo["case1"][:, 0]])
    assert r[0]["measured"]["cell_gap_intervals"]["case1/feature1"] == [round(lo, 4), round(hi, 4)]
    t2, l2 = table.copy(), {c: v.copy() for c, v in loo.items()}
    t2.loc[0, "nmse_marginalised"] = 50.0
    l2["case1"][:, 0] += 40.0
    r = E.gplvm_claims(t2, shapes, cfg, loo=l2)
    assert r[0]["verdict"] == "FAIL" and r[0]["interval"]["hi"] < 0 and "case1/feature1" in r[0]["interval"]["quantity"]
    assert "99.72%" in r[0]["interval"]["method"]  # Bonferroni over 18 cells
    t3, l3 = table.copy(), {c: v.copy() for c, v in loo.items()}
    t3.loc[0, "nmse_marginalised"] = 19.0
    l3["case1"][:, 0] = 19.0 + np.array([-6.0, 5.0, 3.0, -2.0])
    r = E.gplvm_claims(t3, shapes, cfg, loo=l3)
    assert r[0]["verdict"] == "INCONCLUSIVE" and "contains the threshold" in r[0]["reason"]
    # claim 2 (issue 32): Cases 2 and 3 each against Case 1 -- a Case 3 gap well below Case 1's fails it
    c1 = table[table["case"] == "case1"]
    gap1 = float((c1["nmse_ml_best_bound"] - c1["nmse_marginalised"]).mean())
    m3 = table["case"] == "case3"
    table.loc[m3, "nmse_ml_best_bound"] = table.loc[m3, "nmse_marginalised"] + gap1 - 5.0
    r2 = E.gplvm_claims(table, shapes, cfg, loo=loo)[1]
    assert r2["verdict"] == "FAIL" and "case3 - case1" in r2["interval"]["quantity"]
    table, shapes, _ = _claim_inputs(rhat=1.3)
    r = E.gplvm_claims(table, shapes, cfg, loo=loo)
    assert [x["verdict"] for x in r[:2]] == ["INCONCLUSIVE"] * 2 and "not converged" in r[0]["reason"]
    with pytest.raises(ValueError, match="loo"):
        E.gplvm_claims(table, shapes, cfg)
    # the leave-one-out NMSE recombines the other chains exactly as evaluate_case pools them
    ev = xr.Dataset({"density_by_chain": (("chain", "feature", "x", "y"),
                                          np.stack([np.ones((2, 3, 4)), 2 * np.ones((2, 3, 4)), 3 * np.ones((2, 3, 4))])),
                     "chain_components": (("chain",), [5, 5, 10]),
                     "density": (("method", "feature", "x", "y"), np.ones((3, 2, 3, 4)))},
                    coords={"method": ["true", "marginalised", "ml"]})
    lo1 = E.marginalised_leave_one_out(ev)
    # without chain 0: (2*5 + 3*10)/15 = 8/3 -> NMSE 100 (5/3)^2; chain 1: 7/3; chain 2: 1.5 -> 25
    assert np.allclose(lo1[:, 0], [100 * (5 / 3) ** 2, 100 * (4 / 3) ** 2, 25.0])


def test_draws_to_pass_gate_extrapolates_a_power_law_and_refuses_a_flat_trend():
    # ESS proportional to the length (exponent 1): 20 at 500 -> 100 at 2,500; R-hat - 1 halving per doubling
    # (exponent 1): 0.2 at 500 -> 0.05 at 2,000
    out = E.draws_to_pass_gate([250, 500], [1.4, 1.2], [10.0, 20.0])
    assert out["ess_exponent"] == pytest.approx(1.0) and out["draws_for_ess"] == pytest.approx(2500.0)
    assert out["rhat_exponent"] == pytest.approx(1.0) and out["draws_for_rhat"] == pytest.approx(2000.0)
    assert out["draws_to_pass"] == 2500
    # ESS growing faster than the draws is capped at exponent 1
    assert E.draws_to_pass_gate([250, 500], [1.01, 1.01], [5.0, 50.0])["draws_for_ess"] == pytest.approx(1000.0)
    # flat or falling ESS: no length
    flat = E.draws_to_pass_gate([250, 500, 750], [1.8, 1.6, 1.7], [5.9, 6.7, 6.4])
    assert flat["draws_to_pass"] is None and flat["draws_for_ess"] is None
    # already passing
    assert E.draws_to_pass_gate([100, 200], [1.02, 1.01], [150.0, 300.0])["draws_to_pass"] == 200


def test_gated_records_give_the_measured_trend():
    cfg = {"bimodality_coefficient": 5 / 9, "ks_distance": 0.15, "min_gap_increase": 0.0}
    table, shapes, _ = _claim_inputs(rhat=1.3)
    loo = {c: 10.0 + 0.3 * np.random.default_rng(1).standard_normal((4, 6)) for c in E.CASES}
    sets = pd.DataFrame([{"case": c, "chain_set": s, "trend_n_draws": "250 500 750",
                          "trend_max_rhat": "1.5 1.3 1.2", "trend_min_ess": "10 20 30",
                          "draws_to_pass": 2500.0 if s == "cpm" else np.nan, "seconds_per_chain_to_pass": 100.0}
                         for c in E.CASES for s in ("paper", "cpm")])
    r = E.gplvm_claims(table, shapes, cfg, loo=loo, chain_sets=sets)
    assert "~2,500 kept draws per chain" in r[0]["reason"] and "no length is extrapolated" in r[0]["reason"]
    assert r[0]["measured"]["length_to_pass_gate"]["case1"]["cpm"]["draws_to_pass"] == 2500.0
    assert "case1" not in r[2]["measured"]["length_to_pass_gate"]  # claim 3 reads Cases 2 and 3 only


def test_draws_at_least_is_the_linear_floor():
    out = E.draws_to_pass_gate([250, 500, 750], [1.8, 1.6, 1.7], [5.9, 6.7, 6.4])
    assert out["draws_at_least"] == math.ceil(750 * 100 / 6.4) and out["draws_to_pass"] is None
    assert E.draws_to_pass_gate([100, 200], [1.0, 1.0], [150.0, 300.0])["draws_at_least"] == 200


def test_mixing_claim_reads_the_papers_sampler_and_fails_on_a_large_rhat():
    """Gadd et al. Sec. 6.1 "demonstrated good mixing" (issue 32): PASS at the gate, FAIL above R-hat 1.1."""
    import pandas as pd

    from gpbayes_repro.experiments.gplvm import mixing_claim

    def sets(rh, es):
        return pd.DataFrame([{"case": c, "chain_set": cs, "max_rank_rhat": r if cs == "paper" else 1.0,
                              "min_bulk_ess": e if cs == "paper" else 900.0, "n_chains": 4, "n_draws": 750}
                             for c, r, e in zip(("case1", "case2", "case3"), rh, es) for cs in ("paper", "cpm")])

    assert mixing_claim(sets((1.01, 1.02, 1.03), (400, 300, 200)))["verdict"] == "PASS"
    rec = mixing_claim(sets((1.68, 1.41, 3.19), (6.4, 8.4, 4.5)))
    assert rec["verdict"] == "FAIL" and len(rec["measured"]["cases_failing"]) == 3
    # the converged correlated-PM set does not rescue the paper's sampler; between the two rules: undecided
    rec = mixing_claim(sets((1.01, 1.07, 1.03), (400, 300, 200)))
    assert rec["verdict"] == "INCONCLUSIVE" and "case2" in rec["reason"]


@pytest.mark.parametrize("chain_set", ["joint", "joint_nuts"])
def test_joint_chain_sets_on_a_tiny_run(tiny, chain_set):
    """The exact joint sets (replica-exchange Gibbs; NUTS with latent rotations): same starts, own streams,
    same seed -> same chains, the label-invariant gate quantities, the set named in the attrs."""
    ds, ml = tiny
    cfg = dict(CFG, joint={"n_ess": 1, "scale_sd": 0.2, "proposal_sd": 0.1, "target_accept": 0.25,
                           "inverse_temperatures": [1.0, 0.5], "adapt_ladder": False},
               joint_nuts={"rotations": True, "mass_adaptation": "diagonal", "max_tree_depth": 5})
    psi = ml["psi"].values
    restarts = pd.DataFrame({"restart": [0, 1], "bound": [1.0, 2.0],
                             **{f"ml_{p}": [math.exp(psi[k]), math.exp(psi[k] + 0.2)]
                                for k, p in enumerate(("sigma_0", "theta_0", "theta_1", "theta_S", "beta"))}})
    settings = dict(TINY, joint_n_burn=4, joint_n_draws=5, joint_thin=1, joint_nuts_n_burn=4, joint_nuts_n_draws=5)
    run = E.chain_set_settings(settings, chain_set)
    assert (run["n_burn"], run["n_draws"]) == (4, 5)
    got = E.run_joint_block(ds, ml, restarts, block=0, cfg=cfg, settings=run, seed=5, chain_set=chain_set)
    again = E.run_joint_block(ds, ml, restarts, block=0, cfg=cfg, settings=run, seed=5, chain_set=chain_set)
    assert np.array_equal(got["posterior"]["Z"].values, again["posterior"]["Z"].values)
    assert got["posterior"]["beta"].shape == (3, 5) and got["posterior"].attrs["chain_set"] == chain_set
    # chain 0 starts at the best bound (restart 1), chain 1 at the next, plus noise
    start = got["sample_stats"]["start"].values
    assert np.all(np.abs(start[0] - (psi + 0.2)) < 0.6) and np.all(np.abs(start[1] - psi) < 0.6)
    inv = E.joint_invariants(got)
    assert set(inv) == set(E.JOINT_GATE_NAMES) and all(v.shape == (3, 5) for v in inv.values())
    want = {"n_leapfrog", "tree_depth", "diverging"} if chain_set == "joint_nuts" else {"accepted_rotation"}
    assert want <= set(got["sample_stats"].data_vars)
    if chain_set == "joint_nuts":
        other = E.run_joint_block(ds, ml, restarts, block=0, cfg=cfg, settings=E.chain_set_settings(settings, "joint"),
                                  seed=5, chain_set="joint")
        assert np.array_equal(other["sample_stats"]["start"].values, start)  # the same starts
    with pytest.raises(ValueError, match="chain_set"):
        E.run_joint_block(ds, ml, restarts, block=0, cfg=cfg, settings=run, seed=5, chain_set="nuts")
