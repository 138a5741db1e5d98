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

* Xiong et al.'s MAMIS-P (``amis.runs``, sampler ``mamis_p``): ``MAMISP`` with the run's
  ``prior_strength`` / ``data_count``.

Where the reproduction starts a chain from a stream of its own, the test passes that start to
``gb.sample(..., init=...)`` and builds the model from the reproduction's objects or fits:

* Murray & Adams 2010 (``slice_ma.run_block``): ``SliceSampler(representation=...)`` with
  init = (psi_0, f_0) from the data set's ``"init"`` stream, on ``GPClassifier`` (labels, logistic)
  or ``LatentGP`` (the synthetic set's Gaussian likelihood) built from ``slice_ma.build_model``'s
  kernel, prior and likelihood.
* Hensman et al. 2015 (``sparse_mcmc.run_block``, the psrf study): ``JointHMC(max_steps=32)`` and
  ``SparseGibbs(max_steps=32)`` on ``SparseGPClassifier(..., svgp_fit=<the reproduction's
  fit_gaussian>)``, init = (psi, v_0) from the ``"init"`` stream.
* Gadd et al. (``gplvm.run_block``): ``GPLVMPseudoMarginal(vb_start="ml", ...)`` on
  ``GPLVMRegressor(..., ml_fit=<the reproduction's fit_ml>)``, init = psi_0 from the ``"start"``
  stream.

  M&A's count data sets (mining, the Redwoods stand-in), whose model samples the log-rate offset m
  with psi (Sec. 5): ``LatentGP(..., likelihood=Poisson(), sample_offset=True)`` (m is its
  ``mean_constant``; ``PoissonGP`` fixes m and ``gb.means.Constant`` integrates it out, other chains).

  Hensman et al.'s coal study (a Poisson likelihood with exposure the mean training count):
  ``JointHMC`` on ``SparseGP(..., likelihood=Poisson(exposure=...), svgp_fit=...)``; their MNIST
  study (robust-max, 10 classes): on ``SparseGPClassifier(..., epsilon=...)`` and on ``SparseGP``
  with ``RobustMax`` given.
"""

from __future__ import annotations

import dataclasses
import json
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


def test_xiong_mamis_p(run_amis_results):
    """Sec. 4.5.2 (MAMIS-P: MAMIS with the moment match regularised by a prior centred on q_0) with the
    reproduction's prior strength and data count: the weighted sample is gb.sample(MAMISP)'s."""
    from gpbayes_repro.experiments.amis import runs

    cfg = CONFIG["amis"]
    ds = _regression_ds()
    st = _amis_settings(mamis_p={"n_iterations": 3, "base": 0, "slope": 26, "prior_strength": 2.0,
                                 "data_count": "n"})
    setup = runs.setup(ds, "rbf", cfg, st, SEED)
    del run_amis_results[:]
    runs.run_block(ds, setup, sampler="mamis_p", kernel="rbf", block=0, cfg=cfg, settings=st, seed=SEED)
    ours = run_amis_results[-1]

    X, y, _ = runs.load_data(ds, None, SEED)
    gp, prior = runs.regression_model(X, y, "rbf", cfg)
    model = gb.GPRegressor(X, y, kernel=gp.kernel, prior=prior, standardize=False)
    method = gb.MAMISP(n_iterations=3, base=0, slope=26, prior_strength=2.0, data_count="n",
                       initial_mean=setup["mode"].sel(approx="exact").values,
                       initial_cov=setup["cov"].sel(approx="exact").values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method=method, chains=1, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "amis", "toy", "rbf", "mamis_p"))
    assert _same_weighted_sample(ours, idata)
    # the prior is what makes it MAMIS-P: plain MAMIS from the same q_0 and seed gives another sample
    plain = gb.MAMIS(n_iterations=3, base=0, slope=26, initial_mean=method.initial_mean,
                     initial_cov=method.initial_cov)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = gb.sample(model, method=plain, chains=1, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "amis", "toy", "rbf", "mamis_p"))
    assert not _same_weighted_sample(ours, other)


# ---------------------------------------------------------------------------
# Murray & Adams 2010: slice sampling in six representations
# ---------------------------------------------------------------------------
def _ma_data(name: str) -> xr.Dataset:
    """A small data set of M&A's two latent-GP kinds the library models: labels (Ionosphere's task, a
    logistic likelihood) and the synthetic regression (Gaussian likelihood, fixed noise)."""
    from gpbayes_repro.experiments import slice_ma

    if name == "synthetic":
        c = CONFIG["slice_ma"]["synthetic"]
        return slice_ma.synthetic_data(16, rngmod.stream(SEED, "ma", "synthetic"), n_full=16, d=3,
                                       noise_variance=float(c["noise_variance"]))
    r = rngmod.stream(SEED, "ma", "labels")
    X = r.normal(size=(24, 2))
    y = np.where(X[:, 0] + 0.5 * r.normal(size=24) > 0, 1.0, -1.0)
    return xr.Dataset({"X": (("n", "feature"), X), "y": (("n",), y)}, attrs={"name": "ionosphere",
                                                                            "task": "classification"})


def _ma_library_chain(model, lgm, name: str, rep: str, cfg: dict):
    """gb.sample(SliceSampler) on ``model`` from the reproduction's chain starts (their own "init" stream,
    shared across representations) and its chain seed: (idata, the start function)."""
    from gpbayes_repro.experiments import slice_ma

    def start(c):
        psi0, f0 = slice_ma.initial_point(lgm, rngmod.stream(SEED, "slice_ma", name, "init", c))
        return {"psi": psi0, "f": f0}

    method = gb.SliceSampler(representation=rep, n_latent_updates=int(cfg["n_latent_updates"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method=method, chains=2, draws=8, n_warmup=4, init=start, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "slice_ma", name, rep, "chain"))
    return idata, start


@pytest.mark.parametrize("name, rep", [("ionosphere", "fixed"), ("ionosphere", "prior-white"),
                                       ("ionosphere", "surr-site"), ("ionosphere", "post-site"),
                                       ("synthetic", "surr-site"), ("synthetic", "post-site")])
def test_ma_slice_sampling_chains(name, rep):
    """M&A Alg. 4 in a representation (Fig. 3's chains): each chain starts at (psi_0, f_0) from the data
    set's own "init" stream, shared by every representation; gb.sample(SliceSampler, init=that start)
    gives the reproduction's chain.  The model is built from the reproduction's kernel (SE-ARD, M&A
    eq. 2, nugget), priors and likelihood."""
    from gpbayes_repro.experiments import slice_ma

    cfg = CONFIG["slice_ma"]
    ds = _ma_data(name)
    settings = {"n_chains": 2, "chains_per_job": 2, name: {"n_burn": 4, "n_draws": 8}}
    groups = slice_ma.run_block(ds, method=rep, block=0, cfg=cfg, settings=settings, seed=SEED)
    ours = groups["posterior"]["psi"].values

    lgm = slice_ma.build_model(ds, cfg)  # the reproduction's model: kernel, prior, likelihood
    X, y = ds["X"].values, ds["y"].values
    if name == "synthetic":
        model = gb.LatentGP(X, y, likelihood=lgm.likelihood, kernel=lgm.kernel, prior=lgm.prior, standardize=False)
    else:
        model = gb.GPClassifier(X, y, likelihood=lgm.likelihood, kernel=lgm.kernel, prior=lgm.prior,
                                standardize=False)

    idata, start = _ma_library_chain(model, lgm, name, rep, cfg)
    lib = psi_draws(idata).values
    assert _moves(ours)
    assert np.array_equal(ours, lib)
    assert np.array_equal(json.loads(idata.posterior.attrs["init"])["psi"], [start(c)["psi"] for c in range(2)])
    if rep == "surr-site":  # the start is the reproduction's: given psi_0 alone, f_0 is drawn and the chain differs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            method = gb.SliceSampler(representation=rep, n_latent_updates=int(cfg["n_latent_updates"]))
            other = gb.sample(model, method=method, chains=2, draws=8, n_warmup=4, progress=False, cores=1,
                              init=lambda c: start(c)["psi"],
                              seed=rngmod.seed_sequence(SEED, "slice_ma", name, rep, "chain"))
        assert not np.array_equal(ours, psi_draws(other).values)


def _ma_count_data(name: str) -> xr.Dataset:
    """A small data set of M&A's Cox-process kind (binned counts, Poisson likelihood): the coal-mining
    disasters in 28 bins of four years (the paper's 112 of one year, coarser), or the Redwoods
    stand-in simulated on a 4 x 4 grid (the paper's 25 x 25)."""
    from gpbayes_repro import data as gdata
    from gpbayes_repro.experiments import slice_ma

    cfg = CONFIG["slice_ma"]
    if name == "mining":
        raw = pathlib.Path(__file__).parents[1] / "data" / "raw"
        coal = gdata.prepare_dataset("coal", raw, gdata.load_manifest(raw / "MANIFEST.yaml"))
        return slice_ma.mining_data(coal, 28, float(cfg["mining"]["years_per_unit"]))
    c = cfg["redwoods_standin"]
    return slice_ma.redwoods_standin_data(4, rngmod.stream(SEED, "ma", "redwoods"), lengthscale=float(c["lengthscale"]),
                                          amplitude=float(c["amplitude"]), points_per_bin=float(c["points_per_bin"]),
                                          tolerance=float(c["tolerance"]))


@pytest.mark.parametrize("name, rep", [("mining", "fixed"), ("mining", "surr-site"), ("mining", "post-taylor"),
                                       ("redwoods_standin", "prior-white"), ("redwoods_standin", "surr-taylor"),
                                       ("redwoods_standin", "post-site")])
def test_ma_cox_process_chains(name, rep):
    """M&A Alg. 4 on the Cox-process data (Sec. 5): psi = (log lengthscales, log sigma_f, m), with
    y_i ~ Poisson(exp(f_i + m)), f ~ GP(0, Sigma_psi) and the offset m ~ N(log mean count, offset_sd^2)
    slice-sampled with the kernel's log-parameters (in "fixed" its target is N(f; 0, Sigma) L(f + m),
    eq. 4 with the likelihood); each chain from (psi_0, f_0) of the data set's "init" stream.
    gb.LatentGP(..., sample_offset=True) with the reproduction's kernel, priors and likelihood and
    gb.sample(SliceSampler, init=that start) give the reproduction's chain (issue 33); the posterior
    reports m itself as ``mean_constant``."""
    from gpbayes_repro.experiments import slice_ma

    cfg = CONFIG["slice_ma"]
    ds = _ma_count_data(name)
    lgm = slice_ma.build_model(ds, cfg)  # the reproduction's model: kernel, priors (the offset's last), Poisson
    assert lgm.sample_offset and lgm.param_names[-1] == "offset"
    X, y = ds["X"].values, ds["y"].values
    model = gb.LatentGP(X, y, likelihood=lgm.likelihood, kernel=lgm.kernel, prior=lgm.prior, standardize=False,
                        sample_offset=True)
    assert model.param_names == lgm.param_names[:-1] + ["mean_constant"]  # the reproduction calls m "offset"

    settings = {"n_chains": 2, "chains_per_job": 2, name: {"n_burn": 4, "n_draws": 8}}
    groups = slice_ma.run_block(ds, method=rep, block=0, cfg=cfg, settings=settings, seed=SEED)
    ours = groups["posterior"]["psi"].values

    idata, start = _ma_library_chain(model, lgm, name, rep, cfg)
    lib = psi_draws(idata).values
    assert _moves(ours) and _moves(ours[:, :, -1:])  # the offset itself moves
    assert np.array_equal(ours, lib)
    # m is reported as it is (not exp(m)) in both groups
    assert np.array_equal(idata.posterior["mean_constant"].values, ours[:, :, -1])
    for h in model.hyperparameters[:-1]:  # the kernel's parameters as exp(psi), under the one naming scheme
        want = np.exp(ours[:, :, list(h.index)] if h.dim else ours[:, :, h.index[0]])
        assert np.array_equal(idata.posterior[h.name].values, want), h.name


# ---------------------------------------------------------------------------
# Hensman et al. 2015: joint HMC on the sparse variational target
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sampler", ["joint", "gibbs"])
def test_hensman_sparse_chains(sampler):
    """Hensman et al. 2015 (the psrf study's joint HMC and its Gibbs baseline): the target placed by the
    reproduction's own SVGP fit (its Z_0 stream and psi_0 from the config), each chain from q(v)
    drawn from an "init" stream of its own; SparseGPClassifier(svgp_fit=that fit) and JointHMC /
    SparseGibbs at the config's settings with init=that start give the reproduction's chains."""
    from gpbayes.sparse import svgp
    from gpbayes_repro.experiments import sparse_mcmc

    cfg = CONFIG["sparse_mcmc"]
    r = rngmod.stream(SEED, "hensman", "data")
    X = r.normal(size=(36, 2))
    y = np.where(np.sin(2 * X[:, 0]) + 0.3 * r.normal(size=36) > 0, 1.0, -1.0)
    test = np.r_[np.zeros(30), np.ones(6)].astype(np.int8)  # the last 6 rows held out
    ds = xr.Dataset({"X": (("n", "d"), X), "y": ("n", y), "test": ("n", test)}, attrs={"name": "image", "task": "binary"})
    fit = sparse_mcmc.fit_gaussian(ds, problem="image", kernel="rbf", M=5, cfg=cfg, maxiter=20, seed=SEED)
    run = {"n_chains": 2, "chains_per_job": 2, "n_warmup": 12, "n_draws": 10}
    groups = sparse_mcmc.run_block(ds, fit, study="psrf", problem="image", kernel="rbf", sampler=sampler, block=0,
                                   cfg=cfg, run=run, seed=SEED)
    ours = groups["posterior"]["psi"].values

    X_train, y_train = sparse_mcmc.train_part(ds)
    kernel = sparse_mcmc.build_kernel("rbf", X_train.shape[1])
    params = svgp.SVGPParams(fit["q_mean"].values, fit["q_chol"].values, fit["Z"].values, fit["psi"].values)
    model = gb.SparseGPClassifier(X_train, y_train, kernel=kernel, prior=sparse_mcmc.build_prior("image", cfg, kernel),
                                  standardize=False, n_quad=int(cfg["n_quad"]), jitter=float(cfg["jitter"]),
                                  svgp_fit=params)
    assert np.array_equal(model.target.Z, fit["Z"].values)

    def start(c):  # the reproduction's chain start: v ~ q(v) from its own stream, psi the fit's
        x0 = sparse_mcmc.initial_position(rngmod.stream(SEED, "sparse_mcmc", "psrf", "rbf", "M", 5, "init", c),
                                          model.target, params)
        v, psi = model.target.split(x0)
        return {"psi": psi, "v": v}

    hmc = cfg["hmc"]
    opts = dict(target_accept=float(hmc["target_accept"]), trajectory_length=float(hmc["trajectory_length"]),
                max_steps=int(hmc["max_steps"]))
    method = gb.JointHMC(**opts) if sampler == "joint" else gb.SparseGibbs(**opts, psi_scale=hmc["gibbs_psi_scale"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method=method, chains=2, draws=10, n_warmup=12, init=start, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "sparse_mcmc", "psrf", "rbf", sampler, "M", 5, "chain"))
    assert _moves(ours)
    assert np.array_equal(ours, psi_draws(idata).values)
    assert np.array_equal(groups["posterior"]["v"].values, idata.posterior["v"].values)
    with warnings.catch_warnings():  # JointHMC's own start (v_0 ~ q(v) from the chain's generator) differs
        warnings.simplefilter("ignore")
        other = gb.sample(model, method=method, chains=2, draws=10, n_warmup=12, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "sparse_mcmc", "psrf", "rbf", sampler, "M", 5, "chain"))
    assert not np.array_equal(ours, psi_draws(other).values)


def _hensman_library_chains(model, fit, cfg, *, study: str, kernel: str, M: int, n_warmup: int, n_draws: int):
    """gb.sample(model, method=JointHMC(config's settings)) from the reproduction's chain starts (v ~ q(v)
    from its "init" stream, psi the fit's) with its chain streams: (psi, v) draws."""
    from gpbayes.sparse import svgp
    from gpbayes_repro.experiments import sparse_mcmc

    params = svgp.SVGPParams(fit["q_mean"].values, fit["q_chol"].values, fit["Z"].values, fit["psi"].values)

    def start(c):
        x0 = sparse_mcmc.initial_position(rngmod.stream(SEED, "sparse_mcmc", study, kernel, "M", M, "init", c),
                                          model.target, params)
        v, psi = model.target.split(x0)
        return {"psi": psi, "v": v}

    hmc = cfg["hmc"]
    method = gb.JointHMC(target_accept=float(hmc["target_accept"]), trajectory_length=float(hmc["trajectory_length"]),
                         max_steps=int(hmc["max_steps"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method=method, chains=2, draws=n_draws, n_warmup=n_warmup, init=start,
                          progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "sparse_mcmc", study, kernel, "joint", "M", M, "chain"))
    return psi_draws(idata).values, idata.posterior["v"].values


def _hensman_reproduction(ds, problem: str, *, M: int, maxiter: int, n_warmup: int, n_draws: int):
    """The reproduction's joint-HMC block on ``ds`` (its SVGP fit first): the fit, the block's groups,
    and the training part, kernel and fit parameters a library model is built from."""
    from gpbayes.sparse import svgp
    from gpbayes_repro.experiments import sparse_mcmc

    cfg = CONFIG["sparse_mcmc"]
    fit = sparse_mcmc.fit_gaussian(ds, problem=problem, kernel="rbf", M=M, cfg=cfg, maxiter=maxiter, seed=SEED)
    run = {"n_chains": 2, "chains_per_job": 2, "n_warmup": n_warmup, "n_draws": n_draws}
    groups = sparse_mcmc.run_block(ds, fit, study=problem, problem=problem, kernel="rbf", sampler="joint", block=0,
                                   cfg=cfg, run=run, seed=SEED)
    X_train, y_train = sparse_mcmc.train_part(ds)
    kernel = sparse_mcmc.build_kernel("rbf", X_train.shape[1])
    params = svgp.SVGPParams(fit["q_mean"].values, fit["q_chol"].values, fit["Z"].values, fit["psi"].values)
    common = dict(kernel=kernel, prior=sparse_mcmc.build_prior(problem, cfg, kernel), standardize=False,
                  n_quad=int(cfg["n_quad"]), jitter=float(cfg["jitter"]), svgp_fit=params)
    return fit, groups, X_train, y_train, common


def test_hensman_coal_chains():
    """Hensman et al. 2015's log-Gaussian Cox process on the coal-mining disasters (the coal study: bin
    counts, Poisson likelihood with exposure the mean training count, so f is the log relative rate):
    ``gb.SparseGP(X, counts, likelihood=Poisson(exposure=...), svgp_fit=<the reproduction's fit>)`` and
    JointHMC at the config's settings give the reproduction's chains bit for bit."""
    from gpbayes_repro.experiments import sparse_mcmc

    cfg = CONFIG["sparse_mcmc"]
    events = np.sort(rngmod.stream(SEED, "hensman", "coal").uniform(1851.0, 1963.0, size=120))
    source = xr.Dataset({"y": ("event", events)}, attrs={"window_start": 1851.0, "window_end": 1963.0})
    ds = sparse_mcmc.coal_data(source, 40, int(cfg["coal"]["heldout_every"]), float(cfg["coal"]["years_per_unit"]))
    fit, groups, X_train, y_train, common = _hensman_reproduction(ds, "coal", M=6, maxiter=20, n_warmup=12,
                                                                  n_draws=10)
    ours = groups["posterior"]["psi"].values
    model = gb.SparseGP(X_train, y_train, likelihood=gb.likelihoods.Poisson(exposure=float(np.mean(y_train))),
                        **common)
    psi, v = _hensman_library_chains(model, fit, cfg, study="coal", kernel="rbf", M=6, n_warmup=12, n_draws=10)
    assert _moves(ours)
    assert np.array_equal(ours, psi)
    assert np.array_equal(groups["posterior"]["v"].values, v)


def test_hensman_mnist_chains():
    """Hensman et al. 2015's MNIST study (robust-max, 10 classes, label noise epsilon from the config):
    ``gb.SparseGPClassifier(X, labels 0..9, epsilon=...)`` -- or ``gb.SparseGP`` with the robust-max
    likelihood given -- and JointHMC give the reproduction's chains bit for bit."""
    from gpbayes.sparse.multiclass import RobustMax

    cfg = CONFIG["sparse_mcmc"]
    r = rngmod.stream(SEED, "hensman", "mnist")
    y = np.r_[np.arange(10), r.integers(0, 10, size=30)].astype(float)  # every class present
    X = r.normal(size=(40, 3)) + 0.5 * y[:, None]
    test = np.r_[np.zeros(34), np.ones(6)].astype(np.int8)
    ds = xr.Dataset({"X": (("n", "d"), X), "y": ("n", y), "test": ("n", test)}, attrs={"name": "mnist"})
    fit, groups, X_train, y_train, common = _hensman_reproduction(ds, "mnist", M=4, maxiter=10, n_warmup=20,
                                                                  n_draws=12)
    ours = groups["posterior"]["psi"].values
    eps = float(cfg["mnist"]["epsilon"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "labels mapped": 0..9 to themselves
        classifier = gb.SparseGPClassifier(X_train, y_train, epsilon=eps, **common)
    generic = gb.SparseGP(X_train, y_train, likelihood=RobustMax(10, eps), **common)
    assert _moves(ours)
    for model in (classifier, generic):
        psi, v = _hensman_library_chains(model, fit, cfg, study="mnist", kernel="rbf", M=4, n_warmup=20, n_draws=12)
        assert np.array_equal(ours, psi)
        assert np.array_equal(groups["posterior"]["v"].values, v)


# ---------------------------------------------------------------------------
# Gadd et al.: the supervised GPLVM's pseudo-marginal MH-within-Gibbs
# ---------------------------------------------------------------------------
def test_gadd_gplvm_chains():
    """Gadd et al. Algs. 2-3 (Sec. 6.1's chains): q(Z) re-optimised from the type-II ML fit's q at every
    proposal (``vb_start="ml"``, the config's warm_start false / vb_start ml), each chain from psi_ML
    plus N(0, start_noise_sd^2) noise drawn from a "start" stream of its own; GPLVMRegressor(ml_fit=
    the reproduction's fit) and GPLVMPseudoMarginal at the config's settings with init=that start
    give the reproduction's chains (psi and Z)."""
    from gpbayes.gplvm.vb import MLResult
    from gpbayes_repro.experiments import gplvm

    cfg = CONFIG["gplvm"]
    sim = dict(cfg["simulation"], n=12, n_outputs=2)
    ds = gplvm.simulate_case("case1", sim, SEED)
    settings = dict(cfg["scales"]["smoke"], n_chains=2, chains_per_job=2, n_burn=3, n_draws=4, adapt_start=3,
                    n_imp=3, vb_max_iter=3, n_inducing=5, ml_restarts=1, ml_max_iter=30)
    ml = gplvm.fit_ml(ds, cfg, settings, SEED)
    groups = gplvm.run_block(ds, ml, block=0, cfg=cfg, settings=settings, seed=SEED)
    rep = gplvm.build_model(ds, cfg, settings)
    ours = np.stack([groups["posterior"][n].values for n in rep.param_names], axis=-1)

    fit = MLResult(ml["psi"].values, gplvm.ml_params(ml), float(ml.attrs["bound"]), ml["restart_bounds"].values, 1)
    model = gb.GPLVMRegressor(ds["x"].values, ds["Y"].values, latent_dim=int(cfg["latent_dim"]),
                              n_inducing=int(settings["n_inducing"]), prior=gplvm.build_prior(rep, cfg),
                              standardize=False, ml_fit=fit)
    assert model.param_names == rep.param_names
    assert [list(b) for b in model.blocks()] == [list(rep.block(b)) for b in cfg["blocks"]]

    def start(c):  # the reproduction's chain start: psi_ML + noise from its own stream
        return ml["psi"].values + float(cfg["start_noise_sd"]) * rngmod.stream(
            SEED, "gplvm", "case1", "start", c).standard_normal(len(rep.param_names))

    method = gb.GPLVMPseudoMarginal(n_imp=int(settings["n_imp"]), adapt_start=int(settings["adapt_start"]),
                                    vb_max_iter=int(settings["vb_max_iter"]), vb_start=cfg["vb_start"],
                                    initial_proposal_sd=float(cfg["initial_proposal_sd"]))
    assert cfg["warm_start"] is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(model, method=method, chains=2, draws=4, n_warmup=3, init=start, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "gplvm", "case1", "chain"))
    assert _moves(ours)
    assert np.array_equal(ours, np.exp(psi_draws(idata).values))  # the reproduction stores theta = exp(psi)
    assert np.array_equal(groups["posterior"]["Z"].values, idata.posterior["Z"].values)
    with warnings.catch_warnings():  # q(Z) warm-started from the chain's current q (the library's default) differs
        warnings.simplefilter("ignore")
        other = gb.sample(model, method=dataclasses.replace(method, vb_start="current"), chains=2, draws=4,
                          n_warmup=3, init=start, progress=False, cores=1,
                          seed=rngmod.seed_sequence(SEED, "gplvm", "case1", "chain"))
    assert not np.array_equal(ours, np.exp(psi_draws(other).values))


# ---------------------------------------------------------------------------
# gb.sample's init: checked, recorded, the same in worker processes
# ---------------------------------------------------------------------------
def test_init_is_checked_and_names_the_expected_shape():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 2))
    clf = gb.GPClassifier(X, X[:, 0] > 0)
    p = len(clf.param_names)

    def run(init, method=None, chains=2):
        return gb.sample(clf, method=method or gb.SliceSampler(), chains=chains, draws=3, n_warmup=1, seed=0,
                         init=init, progress=False, cores=1)

    with pytest.raises(ValueError, match=rf"init\['psi'\] must be .* shape \(2, {p}\) \(chains, p hyper"):
        run(np.zeros((3, p)))
    with pytest.raises(ValueError, match=rf"init\(1\)\['psi'\] .* shape \({p},\)"):
        run(lambda c: np.zeros(p + c))
    with pytest.raises(ValueError, match=r"init\['f'\] .* shape \(2, 15\) \(chains, n observations"):
        run({"psi": np.zeros((2, p)), "f": np.zeros((2, 14))})
    with pytest.raises(ValueError, match="NaN or infinite"):
        run(np.full((2, p), np.inf))
    with pytest.raises(ValueError, match=r"takes the start parts \['psi'\], not \['f'\]"):
        run({"psi": np.zeros((2, p)), "f": np.zeros((2, 15))}, method=gb.PseudoMarginal(n_imp=2))
    with pytest.raises(ValueError, match="give 'psi'"):
        run({"f": np.zeros((2, 15))})
    reg = gb.GPRegressor(X, X[:, 1])
    with pytest.raises(ValueError, match="'amis' has no chains to start"):
        gb.sample(reg, method=gb.AMIS(n_iterations=2, n_per_iteration=5), chains=1, init=np.zeros((1, 4)), seed=0)


def test_init_starts_the_chains_there_and_runs_the_same_in_worker_processes():
    """Chain c starts at init's row c: a random walk with steps of 1e-300 cannot leave its start in
    float64, so every draw is the start bit for bit (an array, a callable alike); with ordinary steps
    cores=2 (each worker given its chains' starts) gives cores=1's chains."""
    x = np.linspace(0, 1, 10)
    reg = gb.GPRegressor(x[:, None], np.sin(5 * x) + 0.1 * np.cos(17 * x))
    starts = np.array([[0.1, 0.2, -1.0], [-0.3, 0.05, -2.0]])  # no zero: 0 + 1e-300 is 1e-300

    def run(init, cores=1, scale=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return psi_draws(gb.sample(reg, method=gb.RandomWalkMH(initial_scale=scale), chains=2, draws=6,
                                       n_warmup=0, seed=3, init=init, progress=False, cores=cores)).values

    for init in (starts, lambda c: starts[c], {"psi": starts}):
        still = run(init, scale=1e-300)
        assert np.array_equal(still, np.broadcast_to(starts[:, None, :], still.shape))
    assert not np.array_equal(run(None, scale=1e-300)[:, 0], starts)  # without init: the method's own start
    moving = run(starts)
    assert _moves(moving)
    assert np.array_equal(moving, run(starts, cores=2))


def test_fits_made_elsewhere_are_checked():
    """SparseGPClassifier(svgp_fit=) and GPLVMRegressor(ml_fit=) stop on a fit of the wrong shape, naming
    the part and the shape the model needs; a good fit is used as given (no fit made)."""
    from gpbayes.gplvm.vb import MLResult, VariationalParams
    from gpbayes.sparse import svgp

    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 2))
    y = X[:, 0] > 0
    params = svgp.SVGPParams(np.zeros((3, 1)), np.stack([np.eye(3)]), X[:3].copy(), np.zeros(2))
    model = gb.SparseGPClassifier(X, y, standardize=False, svgp_fit=params)
    assert np.array_equal(model.target.Z, X[:3]) and np.isnan(model.svgp_fit.elbo)
    with pytest.raises(ValueError, match=r"svgp_fit.params.Z must have shape \(3, 2\)"):
        gb.SparseGPClassifier(X, y, standardize=False, svgp_fit=params._replace(Z=X[:3, :1]))
    with pytest.raises(ValueError, match=r"svgp_fit.params.psi must have shape \(2,\)"):
        gb.SparseGPClassifier(X, y, standardize=False, svgp_fit=params._replace(psi=np.zeros(3)))
    with pytest.raises(TypeError, match="SVGPFit or SVGPParams"):
        gb.SparseGPClassifier(X, y, svgp_fit={"Z": X[:3]})

    x = np.linspace(0.0, 3.0, 8)
    Y = np.column_stack([np.cos(x), np.sin(x)])
    q = VariationalParams(np.zeros((8, 2)), np.zeros((8, 2)), np.zeros((4, 2)))
    fit = MLResult(np.zeros(5), q, -1.0, np.array([-1.0]), 1)
    gplvm_model = gb.GPLVMRegressor(x, Y, n_inducing=4, ml_fit=fit)
    assert gplvm_model.ml_fit is fit
    with pytest.raises(ValueError, match=r"ml_fit.params.inducing must have shape \(4, 2\)"):
        gb.GPLVMRegressor(x, Y, n_inducing=4, ml_fit=fit._replace(params=q._replace(inducing=np.zeros((5, 2)))))
    with pytest.raises(ValueError, match=r"ml_fit.psi must have shape \(5,\)"):
        gb.GPLVMRegressor(x, Y, n_inducing=4, ml_fit=fit._replace(psi=np.zeros(4)))


@pytest.mark.parametrize("method", [gb.PseudoMarginal(n_imp=2, initial_scale=1e-300),
                                    gb.LatentGibbs(representation="surr", initial_scale=1e-300, n_latent_updates=1),
                                    gb.SliceSampler(representation="fixed", n_latent_updates=1),
                                    gb.WhitenedNUTS(max_tree_depth=2), gb.ISCorrectedNUTS(n_imp=2, max_tree_depth=2)])
def test_init_reaches_every_latent_method(method):
    """init reaches each latent-model method: the MH samplers with steps of 1e-300 stay at the given psi
    bit for bit; the others start there (recorded) and differ from their own start."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 1))
    clf = gb.GPClassifier(X, X[:, 0] + 0.5 * rng.normal(size=12) > 0, ard=False)
    starts = np.array([[0.3, -0.2], [-0.4, 0.1]])
    n_warmup = 0 if isinstance(method, (gb.PseudoMarginal, gb.LatentGibbs)) else 2

    def run(init):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return gb.sample(clf, method=method, chains=2, draws=3, n_warmup=n_warmup, seed=5, init=init,
                             progress=False, cores=1)

    idata = run(starts)
    psi = psi_draws(idata).values
    assert np.array_equal(json.loads(idata.posterior.attrs["init"])["psi"], starts)
    if n_warmup == 0:
        assert np.array_equal(psi, np.broadcast_to(starts[:, None, :], psi.shape))
    assert not np.array_equal(psi, psi_draws(run(None)).values)
