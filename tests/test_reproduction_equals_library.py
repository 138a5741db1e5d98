"""One road to each paper sampler: the reproduction's chains equal ``gb.sample``'s, bit for bit.

Each test calls the function the Snakemake rule's script calls (``workflow/scripts/*.py`` ->
``gpbayes_repro.experiments``), with the paper's settings from ``config/config.yaml`` at a small
size, and ``gb.sample(model, method=<method object at the paper's settings>)`` with the
reproduction's stream as the seed (``gpbayes.rng.seed_sequence(seed, *keys)``: chain c of
``gb.sample`` is then ``gpbayes.rng.stream(seed, *keys, c)``, the generator the reproduction gives
chain/replicate c), and asserts ``np.array_equal`` of the draws.  So the library's documented
method objects are the ones that reproduce the papers:

* F&G 2014, Figs. 3-4 (``pm_gpc_mcmc.real_block``): ``PseudoMarginal(n_imp=1, init="prior")``
  with ``n_warmup`` = the adaptive phase; ``LatentGibbs(representation="aa"|"surr", init="prior")``.
* F&G 2014, Tables I-II (``pm_gpc_mcmc.table_block``, table 1): ``PseudoMarginal(approximation=
  "laplace"|"ep", n_imp=N, init="prior", proposal_cov=<the setting's tuned proposal>,
  initial_scale=1.0, ep_stopping=config's "fg2014")`` with ``n_warmup=0`` -- the reproduction's
  burn-in is the first ``n_burn`` of gb.sample's draws; AA/SURR with ``n_warmup`` = the burn-in.
* Xiong et al. (``amis.runs.run_block``): ``AMIS`` / ``AMIS(covariance="diag")`` / ``MAMIS`` /
  ``AMISToMAMIS`` / ``PMAMIS`` with Table 3's sizes and ``initial_mean``/``initial_cov`` = the set-up
  stage's q_0 (mode and (-H)^-1); the weighted sample (``importance_psi``, ``log_weight``) equals
  the one behind the reproduction's running-estimate curves (captured from ``amis.run_amis``).

Left out (no road today; see the report of issue 33 item 6):

* Murray & Adams 2010 (``slice_ma.run_block``): each chain starts at (psi_0, f_0) drawn from a
  stream of its own (``"slice_ma", name, "init", c``), shared by every representation, while
  ``SliceSampler`` draws its start from the chain's generator; and two of the three data sets have
  no gb model (the Gaussian-likelihood synthetic set, and the mining counts with a *sampled* offset
  -- ``PoissonGP`` fixes it).  Needs an explicit per-chain start (a field or ``gb.sample(init=)``).
* Hensman et al. 2015 (``sparse_mcmc.run_block``): the chain starts from its own stream
  (``"init", c``), and the target is built from the reproduction's SVGP fit (``fit_gaussian``: Z_0
  from its own stream, psi_0 from the config), while ``SparseGPClassifier`` fits its own SVGP from
  ``kernel.initial_psi`` and ``JointHMC`` draws the start from the chain's generator.
* Gadd et al. (``gplvm.run_chain``): psi_0 from a "start" stream of its own and the model's ML fit
  from the reproduction's stage; ``GPLVMPseudoMarginal`` draws psi_0 from the chain's generator
  around ``GPLVMRegressor``'s own fit.
* Xiong et al.'s MAMIS-P (``amis.mamis_p``) has no method object.
"""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pytest
import xarray as xr
import yaml

import gpbayes as gb
from gpbayes import amis as amis_mod
from gpbayes import rng as rngmod
from gpbayes.io import psi_draws

CONFIG = yaml.safe_load((pathlib.Path(__file__).parents[1] / "config" / "config.yaml").read_text())
SEED = 11


def _library(model, method, *, chains: int, draws: int, n_warmup: int, keys: tuple) -> np.ndarray:
    """gb.sample's psi (chain, draw, param), seeded by the reproduction's stream ``keys``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not-converged warnings of short chains
        idata = gb.sample(model, method=method, chains=chains, draws=draws, n_warmup=n_warmup,
                          seed=rngmod.seed_sequence(SEED, *keys), progress=False, cores=1)
    return psi_draws(idata).values


def test_a_seed_sequence_seed_gives_the_keyed_streams():
    """gb.sample(seed=SeedSequence(s, spawn_key=keys)): chain c is rng.stream(s, *keys, c); an int seed
    is the empty key, SeedSequence(s).spawn(chains)[c] as before."""
    model = gb.GPRegressor(np.linspace(0, 1, 12)[:, None], np.sin(6 * np.linspace(0, 1, 12)))
    method = gb.RandomWalkMH()
    a = _library(model, method, chains=2, draws=5, n_warmup=5, keys=("x", 3))
    b = _library(model, method, chains=2, draws=5, n_warmup=5, keys=())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = psi_draws(gb.sample(model, method=method, chains=2, draws=5, n_warmup=5, seed=SEED, progress=False,
                                cores=1)).values
    assert np.array_equal(b, c)
    assert not np.array_equal(a, b)
    # an int seed's chains are SeedSequence(seed).spawn(chains), as before the keyed streams
    for c in range(3):
        assert np.array_equal(np.random.SeedSequence(SEED).spawn(3)[c].generate_state(8),
                              np.random.SeedSequence(SEED, spawn_key=(c,)).generate_state(8))
    assert rngmod.stream(SEED, "x", 3, 1).random() == np.random.default_rng(
        np.random.SeedSequence(SEED, spawn_key=(rngmod._key_to_int("x"), 3, 1))).random()


# ---------------------------------------------------------------------------
# Filippone & Girolami 2014
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fg():
    from gpbayes_repro.experiments import pm_gpc_mcmc

    pmg = CONFIG["pm_gpc"]
    ds = pm_gpc_mcmc.simulate_table_data(30, 2, pmg["tables"]["truth"], rngmod.stream(SEED, "fg", "data"))
    return pm_gpc_mcmc, pmg, ds


def _classifier(X, y, kernel, prior):
    return gb.GPClassifier(X, y, kernel=kernel, prior=prior, standardize=False)


def _moves(psi: np.ndarray) -> bool:
    return bool(np.any(np.diff(psi, axis=1) != 0))


@pytest.mark.parametrize("scheme", ["pm-la-1", "aa", "surr"])
def test_fg_figs_3_4_real_data_chains(fg, scheme):
    """Sec. 4.4 (Figs. 3-4): PM-LA(1) adapting on the Laplace marginal for n_adapt iterations, AA/SURR
    tuning in the same burn-in; every chain from the prior."""
    mod, pmg, ds = fg
    settings = {"n_chains": 2, "chains_per_job": 2, "n_adapt": 25, "n_draws": 30}
    groups = mod.real_block(ds, scheme=scheme, block=0, pmg=pmg, settings=settings, seed=SEED)
    ours = groups["posterior"]["psi"].values
    X, y, kernel, prior = mod.setting_model(ds, "isotropic", pmg, pmg["real"])
    kind, approx, n_imp = mod.parse_scheme(scheme)
    if kind == "pm":
        method = gb.PseudoMarginal(approximation=approx, n_imp=n_imp, init="prior")
    else:
        method = gb.LatentGibbs(representation=kind, init="prior")
    keys = ("pm_gpc", "real", ds.attrs["name"], scheme, "chain")
    lib = _library(_classifier(X, y, kernel, prior), method, chains=2, draws=30, n_warmup=25, keys=keys)
    assert _moves(ours)
    assert np.array_equal(ours, lib)
    # the start is the paper's setting: the library's default start gives another chain
    other = _library(_classifier(X, y, kernel, prior), __import__("dataclasses").replace(method, init="kernel"),
                     chains=2, draws=30, n_warmup=25, keys=keys)
    assert not np.array_equal(ours, other)


@pytest.fixture(scope="module")
def fg_proposal(fg):
    mod, pmg, ds = fg
    return mod.table_proposal(ds, "isotropic", pmg, {"n_tune": 20}, rngmod.stream(SEED, "fg", "proposal"))


@pytest.mark.parametrize("scheme", ["pm-la-4", "pm-ep-4", "aa", "surr"])
def test_fg_table_1_chains(fg, fg_proposal, scheme):
    """Secs. 4.2-4.3 (Tables I-II): PM with the setting's tuned proposal frozen (scale 1) and F&G's EP
    stopping rule, AA/SURR tuning in burn-in; the reproduction's n_burn are gb.sample's first draws
    for PM (its n_warmup=0: no adaptive phase), AA/SURR's warm-up."""
    mod, pmg, ds = fg
    n_burn, n_draws = 8, 25
    settings = {"n_chains": 2, "chains_per_job": 2, "n_burn": n_burn, "n_draws": n_draws}
    groups = mod.table_block(ds, fg_proposal, table=1, kernel_kind="isotropic", scheme=scheme, block=0, pmg=pmg,
                             settings=settings, seed=SEED)
    ours = groups["posterior"]["psi"].values
    X, y, kernel, prior = mod.setting_model(ds, "isotropic", pmg, pmg["tables"])
    model = _classifier(X, y, kernel, prior)
    keys = ("pm_gpc", "table1", ds.attrs["name"], "isotropic", scheme, "chain")
    kind, approx, n_imp = mod.parse_scheme(scheme)
    if kind == "pm":
        method = gb.PseudoMarginal(approximation=approx, n_imp=n_imp, init="prior",
                                   proposal_cov=fg_proposal["proposal_cov"].values, initial_scale=1.0,
                                   ep_stopping=pmg["tables"]["ep_stopping"])
        lib = _library(model, method, chains=2, draws=n_burn + n_draws, n_warmup=0, keys=keys)[:, n_burn:]
    else:
        method = gb.LatentGibbs(representation=kind, init="prior")
        lib = _library(model, method, chains=2, draws=n_draws, n_warmup=n_burn, keys=keys)
    assert _moves(ours)
    assert np.array_equal(ours, lib)


# ---------------------------------------------------------------------------
# Xiong et al.: AMIS, MAMIS, AMIS then MAMIS, PM-AMIS
# ---------------------------------------------------------------------------
@pytest.fixture
def run_amis_results(monkeypatch):
    """Every ``amis.run_amis`` result, in call order (the reproduction keeps only running estimates)."""
    seen = []
    original = amis_mod.run_amis

    def recording(*args, **kwargs):
        res = original(*args, **kwargs)
        seen.append(res)
        return res

    monkeypatch.setattr(amis_mod, "run_amis", recording)
    return seen


def _amis_settings(**per_sampler) -> dict:
    return {"n_max": None, "n_replicates": 1, "replicates_per_job": 1, "max_points": 20, "ml_restarts": 1,
            **{k: {"rbf": v} for k, v in per_sampler.items()}}


def _regression_ds():
    r = rngmod.stream(SEED, "amis", "data")
    X = r.uniform(size=(25, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1] + 0.3 * r.standard_normal(25)
    return xr.Dataset({"X": (("n", "feature"), X), "y": (("n",), y)}, attrs={"name": "toy", "task": "regression"})


def _same_weighted_sample(res, idata) -> bool:
    ss = idata.sample_stats
    return (np.array_equal(np.asarray(res.samples), ss["importance_psi"].values[0])
            and np.array_equal(np.asarray(res.log_weights), ss["log_weight"].values[0]))


@pytest.mark.parametrize("sampler, settings, method", [
    ("amis", {"n_iterations": 4, "n_per_iteration": 20}, gb.AMIS(n_iterations=4, n_per_iteration=20)),
    ("amis_d", {"n_iterations": 4, "n_per_iteration": 20},
     gb.AMIS(n_iterations=4, n_per_iteration=20, covariance="diag")),
    ("mamis", {"n_iterations": 3, "base": 0, "slope": 26}, gb.MAMIS(n_iterations=3, base=0, slope=26)),
    ("amis_mamis", {"n_tuning_samples": 60, "n_per_iteration_amis": 25, "n_iterations": 2, "base": 0, "slope": 30},
     gb.AMISToMAMIS(n_tuning_samples=60, n_per_iteration_amis=25, n_iterations=2, base=0, slope=30)),
])
def test_xiong_regression_importance_samplers(run_amis_results, sampler, settings, method):
    """Alg. 1 (AMIS, full and diagonal), Alg. 2 (MAMIS), Table 5 (AMIS then MAMIS) from the set-up
    stage's q_0 = N(mode, (-H)^-1): the reproduction's weighted sample is gb.sample's."""
    import dataclasses

    from gpbayes_repro.experiments.amis import runs

    cfg = CONFIG["amis"]
    ds = _regression_ds()
    spec = runs.parse_sampler(sampler)
    st = _amis_settings(**{spec["method"]: settings})
    setup = runs.setup(ds, "rbf", cfg, st, SEED)
    del run_amis_results[:]
    curves, _ = runs.run_block(ds, setup, sampler=sampler, kernel="rbf", block=0, cfg=cfg, settings=st, seed=SEED)
    ours = run_amis_results[-1]
    curve = curves["estimate"].values[0]
    assert curve[~np.isnan(curve)][-1] == ours.estimate_norm[-1]  # the curve's last point is this run's estimate

    X, y, _ = runs.load_data(ds, None, SEED)
    gp, prior = runs.regression_model(X, y, "rbf", cfg)
    model = gb.GPRegressor(X, y, kernel=gp.kernel, prior=prior, standardize=False)
    mode, cov = setup["mode"].sel(approx="exact").values, setup["cov"].sel(approx="exact").values
    method = dataclasses.replace(method, initial_mean=mode, initial_cov=cov)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method=method, chains=1, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "amis", "toy", "rbf", sampler))
    assert _same_weighted_sample(ours, idata)


def test_xiong_pm_amis(run_amis_results):
    """Sec. 3.1 (PM-AMIS, EP importance density, N_imp draws) from the set-up stage's EP mode and
    (-H)^-1: the reproduction's weighted sample is gb.sample's."""
    from gpbayes_repro.experiments import pm_gpc_mcmc
    from gpbayes_repro.experiments.amis import runs

    cfg = CONFIG["amis"]
    sim = pm_gpc_mcmc.simulate_table_data(26, 2, CONFIG["pm_gpc"]["tables"]["truth"], rngmod.stream(SEED, "pm"))
    ds = sim.assign_attrs(name="toy_gpc", task="classification")
    sampler = "pm_amis_ep_4"
    st = _amis_settings(pm_amis={"n_iterations": 3, "n_per_iteration": 15})
    setup = runs.setup(ds, "rbf", cfg, st, SEED)
    del run_amis_results[:]
    runs.run_block(ds, setup, sampler=sampler, kernel="rbf", block=0, cfg=cfg, settings=st, seed=SEED)
    ours = run_amis_results[-1]

    X, y, _ = runs.load_data(ds, None, SEED)
    tgt = runs.classification_target(X, y, "rbf", cfg, "ep", 4)
    model = gb.GPClassifier(X, y, kernel=tgt.kernel, prior=tgt.prior, standardize=False)
    method = gb.PMAMIS(approximation="ep", n_imp=4, n_iterations=3, n_per_iteration=15,
                       initial_mean=setup["mode"].sel(approx="ep").values,
                       initial_cov=setup["cov"].sel(approx="ep").values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method=method, chains=1, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "amis", "toy_gpc", "rbf", sampler))
    assert _same_weighted_sample(ours, idata)


def test_q0_fields_are_checked():
    with pytest.raises(ValueError, match="give both"):
        gb.AMIS(initial_mean=[0.0, 0.0])
    with pytest.raises(ValueError, match="2 x 2"):
        gb.MAMIS(initial_mean=[0.0, 0.0, 0.0], initial_cov=np.eye(2))
    with pytest.raises(ValueError, match="init"):
        gb.PseudoMarginal(init="map")
