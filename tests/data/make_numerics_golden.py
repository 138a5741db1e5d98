"""Golden outputs of the numerics that moved from experiment modules into the library (issue #12).

Made ONCE from the code *before* the move, and never regenerated from the
refactored code: ``tests/test_numerics_golden.py`` checks that the library
versions reproduce these arrays bit for bit (``np.array_equal``).

How the committed ``numerics_golden.npz`` was made (2 shared cores, numpy/scipy
of ``/work/main/.venv``, single BLAS thread)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=/tmp/base_smoke/src \
        /work/main/.venv/bin/python tests/data/make_numerics_golden.py tests/data/numerics_golden.npz

where ``/tmp/base_smoke`` is an untouched checkout of commit 81aef2f (layout
``gpbayes.experiments.*``).  The same script run on commit e7eefd9 (layout
``gpbayes_repro.experiments.*``, before any of the moves) gives an identical
file; it imports whichever layout is present.

Cases (fixed seeds, tiny problems, a few seconds in all):

* ``capacity_*``: ``run_pm_chain_with_latents`` with ``LatentSelectingTarget``
  (F&G Sec. 5 PM-EP chain carrying a latent draw) on a 14-point probit problem,
  EP and LA, N_imp 8, thin 3; and ``classify_split`` on the toy split of
  ``tests/test_pm_gpc_capacity.py`` (the whole MCMC-PM-EP path);
* ``grid_*``: ``pm_variance_grid`` (F&G Fig. 2) on 3 tau values, LA and EP,
  N_imp 1 and 4, 5 repetitions;
* ``amis_*``: ``amis.setup`` (mode and (-H)^-1 by finite differences) for a
  regression (gradient differences) and a classification (value
  differences of the LA / EP marginal) data set; the AMIS log posterior and
  value-and-gradient at ordinary and extreme psi;
* ``rmh_*``: ``regression_mh.fit_ml``'s proposal covariance (gradient differences);
* ``gplvm_*``: ``gplvm.pseudo_marginal.run_pm_chain`` for 8 iterations (both
  ``latent_start`` modes) and the experiment's ``run_block`` on the tiny case 3.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import xarray as xr
from scipy.special import ndtr

try:  # after the library / reproduction split (e7eefd9)
    from gpbayes_repro.experiments import amis, gplvm as gplvm_exp, pm_gpc, pm_gpc_capacity as pc, regression_mh
except ImportError:  # before it (81aef2f)
    from gpbayes.experiments import amis, gplvm as gplvm_exp, pm_gpc, pm_gpc_capacity as pc, regression_mh
from gpbayes import priors
from gpbayes_repro.threads import blas_single_thread
from gpbayes.gplvm import SupervisedGPLVM
from gpbayes.gplvm import pseudo_marginal as gpm
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit

# ---------------------------------------------------------------- shared inputs (the tests import these)
CAPACITY_CFG = {"tau_prior": {"shape": 1.0, "rate_times_sqrt_d": 1.0},
                "sigma_prior": {"gamma": {"shape": 1.1, "rate": 0.1}},
                "n_imp": 16, "target_accept": 0.25, "initial_proposal_sd": 0.3, "ep_ml_restarts": 1,
                "svm_folds": 3, "min_test_per_class": 2}
CAPACITY_TINY = {"n_adapt": 40, "n_burn": 5, "n_draws": 40, "n_predict": 8}
AMIS_CFG = {
    "priors": {"scale": {"shape": 1.0, "rate_times_sqrt_d": 1.0}, "amplitude": {"shape": 1.2, "rate": 0.2},
               "noise_variance": {"shape": 1.0, "rate": 1.0}},
    "nugget": 1e-6, "ep_mode": "parallel",
}
AMIS_SETTINGS = {"ml_restarts": 2, "n_max": None}
AMIS_PSIS = np.array([[0.0, 0.0, -1.0], [1.0, -0.5, -2.0], [-30.0, 0.0, 0.0], [0.0, 800.0, 0.0],
                      [0.0, 0.0, -60.0]])
RMH_CFG = {"kernel": {"ard": True, "parameterisation": "amis"}, "standardise_target": True,
           "priors": {"scale": {"gamma": {"shape": 1.0, "rate": 0.5}}, "amplitude": {"gamma": {"shape": 1.2, "rate": 0.2}},
                      "noise_variance": {"gamma": {"shape": 1.0, "rate": 1.0}}}}
GPLVM_SIM = {"n": 12, "x_max_over_pi": 4.0, "n_outputs": 6, "noise_sd": 0.05, "zeta": [0.0, 1.0],
             "F": {"case1": [1.0, 1.0], "case2": [0.8, 1.2], "case3": [0.7, 1.3]}}
GPLVM_CFG = {
    "latent_dim": 2, "latent_jitter": 1e-6,
    "priors": {"sigma": {"gamma": {"shape": 1.0, "rate": 0.1}}, "theta": {"gamma": {"shape": 1.0, "rate": 0.1}},
               "theta_S": {"gamma": {"shape": 1.0, "rate": 0.1}}, "beta": {"gamma": {"shape": 1.0, "rate": 0.001}}},
    "blocks": [["sigma_0", "theta_0", "theta_1"], ["theta_S", "beta"]],
    "warm_start": True, "adapt_epsilon": 1e-6, "initial_proposal_sd": 0.1, "start_noise_sd": 0.1,
    "ml": {"start": {"sigma": 0.5, "theta": 1.0, "theta_S": 0.3, "beta": 100.0}, "restart_scale": 0.5},
    "prediction": {"y_limits": [-1.3, 1.3], "n_latent_draws": 1},
}
#: the number of importance samples under the key the code of the time reads
GPLVM_TINY = {"n_chains": 2, "chains_per_job": 2, "n_burn": 2, "n_draws": 4, "adapt_start": 3, "n_importance": 3,
              "vb_max_iter": 5, "n_inducing": 6, "ml_restarts": 1, "ml_max_iter": 30}
GPLVM_TINY_PSI = np.array([math.log(0.3), 0.0, math.log(0.5), math.log(4.0)])


def probit_problem(n=14, seed=4):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    f = 2.0 * np.sin(4.0 * X[:, 0]) - 1.5 * X[:, 1]
    y = np.where(rng.uniform(size=n) < ndtr(f), 1.0, -1.0)
    kernel = SquaredExponential(2, ard=False, parameterisation="fg", nugget=1e-6)
    prior = priors.IndependentPrior((priors.Gamma(1.0, 1.0 / math.sqrt(2.0)), priors.Gamma(1.1, 0.1)))
    return X, y, kernel, prior


PROPOSAL_FACTOR = np.array([[0.35, 0.0], [0.1, 0.3]])
CHAIN_START = np.log([0.5, 2.0])


def toy_split(seed=0, n=16, m=30):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + m, 2))
    f = 2.0 * np.sin(2 * X[:, 0]) + X[:, 1]
    y = np.where(rng.uniform(size=n + m) < ndtr(f), 1.0, -1.0)
    tr, te = pc.balanced_split(y, n, rng, min_test_per_class=2)
    return X[tr], y[tr], X[te], y[te]


def amis_data(task, n=25, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=n)
    if task == "classification":
        y = np.where(y > 0, 1.0, -1.0)
    return xr.Dataset({"X": (("n", "feature"), X), "y": (("n",), y)},
                      attrs={"name": f"tiny_{task}", "task": task, "stand_in": 0})


def gplvm_tiny_model():
    X = np.linspace(0.0, 3.0, 6)[:, None]
    rng = np.random.default_rng(3)
    Y = 0.5 * np.sin(X) + 0.05 * rng.normal(size=(6, 1))
    Y = np.hstack([Y, 0.5 * np.cos(X)])
    model = SupervisedGPLVM(X, Y, 1, 3)
    prior = priors.IndependentPrior(tuple(priors.LogNormal(float(p), 0.5) for p in GPLVM_TINY_PSI))
    blocks = (model.block(["sigma_0", "theta_0"]), model.block(["theta_S", "beta"]))
    return model, prior, blocks


# ---------------------------------------------------------------- the old code paths
def capacity_cases(out):
    X, y, kernel, prior = probit_problem()
    for approx in ("ep", "laplace"):
        target = pc.LatentSelectingTarget(X, y, kernel, Probit(), prior, approx=approx, n_imp=8)
        ch = pc.run_pm_chain_with_latents(np.random.default_rng(21), target, CHAIN_START, PROPOSAL_FACTOR,
                                          n_burn=6, n_draws=30, thin=3)
        for key in ("position", "log_density", "accepted", "latent", "latent_draw"):
            out[f"capacity_{approx}_{key}"] = np.asarray(ch[key])
        out[f"capacity_{approx}_burn_acceptance"] = np.asarray(ch["burn_acceptance"])
        out[f"capacity_{approx}_n_cubic"] = np.asarray(ch["n_cubic"])
        out[f"capacity_{approx}_n_failures"] = np.asarray(target.n_failures)
    Xtr, ytr, Xte, yte = toy_split()
    ds = pc.classify_split(Xtr, ytr, Xte, yte, cfg=CAPACITY_CFG, settings=CAPACITY_TINY,
                           rng=np.random.default_rng(1))
    for v in ("probability", "chain_psi", "acceptance_rate", "n_cubic", "capacity_accuracy", "capacity_auc"):
        out[f"capacity_split_{v}"] = ds[v].values
    out["capacity_split_pm_burn_acceptance"] = np.asarray(ds.attrs["mcmc_pm_ep_burn_acceptance"])


def grid_cases(out):
    rng = np.random.default_rng(5)
    X, y = pm_gpc.simulate_classification(rng, 20, 2, 0.35, 2.08)
    ds = pm_gpc.pm_variance_grid(X, y, sigma=2.08, tau_grid=np.array([0.2, 0.5, 1.1]),
                                 approximations=["laplace", "ep"], n_imps=[1, 4], n_reps=5, rng=rng, nugget=1e-6)
    out["grid_X"], out["grid_y"] = X, y
    out["grid_log_marginal_estimate"] = ds["log_marginal_estimate"].values
    out["grid_approx_log_marginal"] = ds["approx_log_marginal"].values
    out["grid_rng_after"] = rng.standard_normal(3)  # the generator advanced by exactly the same draws


def amis_cases(out):
    for task in ("regression", "classification"):
        su = amis.setup(amis_data(task), "rbf", AMIS_CFG, AMIS_SETTINGS, seed=1)
        out[f"amis_setup_{task}_mode"] = su["mode"].values
        out[f"amis_setup_{task}_cov"] = su["cov"].values
    X, y, _ = amis.load_data(amis_data("regression"), None, 1)
    model, prior = amis.regression_model(X, y, "rbf", AMIS_CFG)
    logp, vg = amis._log_post(model, prior), amis._value_and_grad(model, prior)
    vals, vgv, vgg = [], [], []
    for psi in AMIS_PSIS:
        vals.append(logp(psi))
        v, g = vg(psi)
        vgv.append(v)
        vgg.append(g)
    out["amis_log_post"], out["amis_vg_value"], out["amis_vg_grad"] = np.array(vals), np.array(vgv), np.array(vgg)
    rng = np.random.default_rng(2)
    Xr = rng.normal(size=(30, 2))
    yr = np.sin(Xr[:, 0]) + 0.5 * Xr[:, 1] + 0.1 * rng.normal(size=30)
    ds = xr.Dataset({"X": (("n", "feature"), Xr), "y": (("n",), yr)}, attrs={"name": "tiny", "task": "regression"})
    ml = regression_mh.fit_ml(ds, RMH_CFG, 2, np.random.default_rng(3))
    out["rmh_phi_map"], out["rmh_proposal_cov"] = ml["psi_map"].values, ml["proposal_cov"].values


def gplvm_cases(out):
    model, prior, blocks = gplvm_tiny_model()
    config = gpm.PMGibbsConfig(blocks=blocks, n_importance=4, adapt_start=5, vb_options={"max_iter": 30})
    for mode in ("continue", "resample"):
        ch = gpm.run_pm_chain(np.random.default_rng(7), model, prior, GPLVM_TINY_PSI, config, 8,
                              n_latent_steps=2, latent_start=mode)
        for key in ("psi", "log_marginal", "log_prior", "accepted", "acceptance_prob", "Z", "n_cubic",
                    "n_bound_evals", "n_shrinkages"):
            out[f"gplvm_{mode}_{key}"] = ch[key]
        st = ch["state"]
        out[f"gplvm_{mode}_final_covs"] = np.concatenate([c.ravel() for c in st.proposal_covs])
        out[f"gplvm_{mode}_final_log_weights"] = st.log_weights
    ch = gpm.run_pm_chain(np.random.default_rng(9), model, prior, GPLVM_TINY_PSI, config, 5, n_latent_steps=0)
    out["gplvm_nolatent_phi"], out["gplvm_nolatent_log_marginal"] = ch["psi"], ch["log_marginal"]
    ds = gplvm_exp.simulate_case("case3", GPLVM_SIM, 2)
    ml = gplvm_exp.fit_ml(ds, GPLVM_CFG, GPLVM_TINY, 2)
    groups = gplvm_exp.run_block(ds, ml, block=0, cfg=GPLVM_CFG, settings=GPLVM_TINY, seed=5)
    for name in groups["posterior"].data_vars:
        out[f"gplvm_block_posterior_{name}"] = groups["posterior"][name].values
    for name in ("log_marginal", "log_prior", "accepted", "acceptance_prob", "n_bound_evals", "n_shrinkages",
                 "n_cubic", "lp", "start"):
        out[f"gplvm_block_stats_{name}"] = groups["sample_stats"][name].values


def main(path):
    out = {}
    with blas_single_thread():
        capacity_cases(out)
        grid_cases(out)
        amis_cases(out)
        gplvm_cases(out)
    np.savez_compressed(path, **out)
    print(f"wrote {len(out)} arrays to {path}")


if __name__ == "__main__":
    main(sys.argv[1])
