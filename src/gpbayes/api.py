"""The public API: a model of the user's data, a method by name, an ArviZ ``InferenceData``.

::

    import gpbayes as gb
    model = gb.GPClassifier(X, y)                                  # priors default (F&G Sec. 4.4)
    idata = gb.sample(model, method="pseudo-marginal", approximation="ep", n_imp=64,
                      chains=4, draws=1000, seed=1)
    print(gb.summary(idata))                                       # ESS, R-hat, O(n^3) cost per draw
    p = gb.predict(model, idata, X_new)                            # class probabilities

Models (each checks its data at the door and standardises the inputs by
default, recording the shift and scale):

* :class:`GPRegressor` -- y = f(x) + e, e ~ N(0, lambda), exact marginal
  (R&W Alg. 2.1); the target is standardised too.
* :class:`GPClassifier` -- probit classification (F&G eq. 3); labels in
  {-1, +1}, {0, 1}, booleans or two strings, with the mapping reported.
* :class:`SparseGPClassifier` -- sparse variational GP classification
  sampled by MCMC (Hensman et al. 2015).
* :class:`PoissonGP` -- a log-Gaussian Cox process on binned counts with
  exposure (M&A Sec. 5): y_i ~ Poisson(exposure_i exp(f_i + m)), m the log
  mean rate.

Every model uses the squared-exponential kernel in Filippone & Girolami's
parameterisation (eq. 5: sigma exp(-1/2 sum_d (x_d - x'_d)^2 / tau_d^2),
ARD by default) and, unless given, their priors (Sec. 4.4, shape/rate):
tau_d ~ Gamma(1, 1/sqrt(d)), sigma ~ Gamma(1.1, 0.1), and for regression
lambda ~ InverseGamma(1, 0.01) on the standardised target.  Parameters are sampled as
psi = log theta.

Methods (``sample(model, method=...)``; ``methods(model)`` lists them):

==================  =============================  ==============================================
method              models                         what
==================  =============================  ==============================================
``"rwmh"``          GPRegressor                    random-walk MH on the exact posterior, proposal (-H)^-1 at the MAP, adapted in warm-up
``"hmc"``           GPRegressor                    HMC (Neal 2011), dual-averaged step size, mass (-H)^-1
``"nuts"``          GPRegressor                    NUTS (Hoffman & Gelman 2014 Alg. 6)
``"slice"``         GPRegressor                    univariate slice sampling (Neal 2003) on the exact posterior
``"amis"``          GPRegressor                    AMIS (Xiong et al. Alg. 1), q_0 = N(MAP, (-H)^-1); weighted
``"mamis"``         GPRegressor                    MAMIS (Xiong et al. Alg. 2); weighted
``"amis-mamis"``    GPRegressor                    AMIS for tuning, then MAMIS from its last proposal (Xiong et al. Table 5); weighted
``"pseudo-marginal"`` GPClassifier, PoissonGP      F&G Alg. 1 with the unbiased importance estimate (eq. 25), Laplace or EP importance density
``"pm-amis"``       GPClassifier                   PM-AMIS (Xiong et al. Sec. 3.1); weighted
``"aa"``, ``"surr"``  GPClassifier, PoissonGP      F&G's Gibbs baselines: MH on psi in the whitened / surrogate-data representation + 10 ELL-SS
``"slice-<rep>"``   GPClassifier, PoissonGP        M&A Alg. 4 in representation <rep>: fixed, prior-white, surr-site, surr-taylor, post-site, post-taylor
``"type2-ml"``      GPRegressor                    type-II maximum likelihood (point estimate; one "draw")
``"ep-ml"``         GPClassifier                   EP type-II maximum likelihood (point estimate)
``"joint-hmc"``     SparseGPClassifier             Hensman et al. 2015: HMC jointly on (v, psi) with Stan-style warm-up
``"gibbs"``         SparseGPClassifier             their baseline: HMC on v | theta alternating with MH on psi | v
``"pm-within-gibbs"`` GPLVMRegressor               Gadd et al. Algs. 2-3: blockwise adaptive PM MH (eq. 6 estimate, q(Z) re-optimised per proposal) + ELL-SS of Z
``"type2-ml"``      GPLVMRegressor                 the variational bound maximised (point estimate)
==================  =============================  ==============================================

The result follows the ArviZ schema.  ``posterior`` holds one variable per
hyperparameter on its natural scale (``tau_0``.., or ``tau_<column>`` when X
had column names, ``sigma``, ``noise_variance``; latent draws ``f``, ``v``,
``Z`` where a method keeps them); ``unconstrained_posterior`` holds the same
names on the sampled log scale psi = log theta (``gpbayes.api.psi_draws``
stacks them over ``param``), so ``az.summary(idata)`` lists each
hyperparameter once.  ``sample_stats``: per-draw statistics (``lp``,
``acceptance_rate``, ``step_size``, ``n_cubic``, ...) and, per chain, the
tuning (``tuned_<name>``) and warm-up cost (``warmup_<name>``).
``constant_data``: X over ``(obs, feature)``; ``observed_data``: y over ``obs``.
Importance-sampling methods put draws resampled in proportion to the weights
in ``posterior`` (equally weighted: every ArviZ function is right on them)
and the weighted sample in ``sample_stats`` over the dim
``importance_sample``: ``importance_psi``, ``log_weight``, ``weight``.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import xarray as xr

from . import amis as amis_mod
from . import io, linalg, predictive
from .predictive import compute_log_likelihood, sample_posterior_predictive
from .classification import fit_ep_type2_ml, mcmc_predictive
from .estimators.importance import PseudoMarginalTarget
from .finite_differences import hessian_from_gradients
from .likelihoods import Probit
from .models import GPClassifier, GPLVMRegressor, GPRegressor, PoissonGP, SparseGPClassifier
from .mcmc import hmc, hyper_slice, latent_gibbs, nuts, pseudo_marginal, random_walk
from .mcmc import slice as slice_mod
from .mcmc import runner
from .mcmc.runner import Chain, Progress
from .posterior import log_posterior, log_posterior_value_and_grad
from .regression import fit_type2_ml
from .representations import LatentGaussianModel

__all__ = ["GPRegressor", "GPClassifier", "PoissonGP", "SparseGPClassifier", "GPLVMRegressor", "methods", "sample",
           "summary", "predict", "sample_posterior_predictive", "compute_log_likelihood", "psi_draws",
           "hyperparameter_names"]

_REPRESENTATIONS = tuple(f"slice-{m}" for m in hyper_slice.METHODS)
_METHODS = {
    GPRegressor: ("rwmh", "hmc", "nuts", "slice", "amis", "mamis", "amis-mamis", "type2-ml"),
    GPClassifier: ("pseudo-marginal", "pm-amis", "aa", "surr", *_REPRESENTATIONS, "ep-ml"),
    PoissonGP: ("pseudo-marginal", "aa", "surr", *_REPRESENTATIONS),
    SparseGPClassifier: ("joint-hmc", "gibbs"),
    GPLVMRegressor: ("pm-within-gibbs", "type2-ml"),
}


_DA = ("target_accept", "gamma", "t0", "kappa")
#: the options each method accepts (passed to the sampler named in the module docstring)
OPTIONS = {
    "rwmh": ("target_accept", "initial_scale", "adapt_covariance"),
    "hmc": ("step_size", "max_steps", *_DA),
    "nuts": ("max_tree_depth", *_DA),
    "slice": ("width", "step_out", "scheme", "order"),
    "amis": ("n_iterations", "n_per_iteration", "covariance", "n_resample"),
    "mamis": ("n_iterations", "base", "slope", "covariance", "n_resample"),
    "amis-mamis": ("n_tuning_samples", "n_per_iteration_amis", "n_iterations", "base", "slope", "covariance",
                   "n_resample"),
    "pm-amis": ("approximation", "n_imp", "n_iterations", "n_per_iteration", "covariance", "n_resample"),
    "pseudo-marginal": ("approximation", "n_imp", "n_adapt", "proposal_cov", "target_accept", "adapt_on",
                        "initial_scale", "adapt_covariance"),
    "aa": ("keep_latent",), "surr": ("keep_latent",),
    **{m: () for m in _REPRESENTATIONS},
    "type2-ml": (), "ep-ml": (),
    "joint-hmc": ("target_accept", "trajectory_length", "max_steps", "mass", "adapt_mass", "metric",
                  "initial_step_size", "step_size_jitter"),
    "pm-within-gibbs": ("n_imp", "adapt_start", "vb_max_iter", "initial_proposal_sd", "start_noise_sd"),
    "gibbs": ("target_accept", "psi_target_accept", "trajectory_length", "max_steps", "psi_scale",
              "step_size_jitter"),
}


def methods(model) -> tuple[str, ...]:
    """The method names ``sample`` accepts for this model."""
    if isinstance(model, GPClassifier) and "ep" not in model.likelihood.approximations:
        return tuple(m for m in _METHODS[GPClassifier] if m != "ep-ml")  # the likelihood offers no EP
    return _METHODS[type(model)]


def _check_approximation(model, approx: str) -> None:
    if approx not in ("laplace", "ep"):
        raise ValueError(f"approximation must be 'laplace' or 'ep', got {approx!r}")
    offered = model.likelihood.approximations  # the likelihood protocol (gpbayes.likelihoods)
    if approx not in offered:
        raise ValueError(f"{type(model).__name__} with the {model.likelihood.name} likelihood: approximation "
                         f"{approx!r} is not offered (EP is implemented for the probit and the likelihoods that "
                         f"list it); use one of {list(offered)}")


# ---------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------
def _progress(progress):
    if progress is None:
        progress = sys.stderr.isatty()
    return Progress() if progress else None


def _mode_and_cov(model: GPRegressor, rng):
    """MAP by L-BFGS and (-H)^-1 there (finite differences of the analytic gradient)."""
    fit = fit_type2_ml(model.gp, rng, n_restarts=2, log_prior=model.prior)
    vg = log_posterior_value_and_grad(model.gp, model.prior)
    H = hessian_from_gradients(lambda p: vg(p)[1], fit.psi)
    return fit, linalg.inverse_of_negative_definite(H)


def _latent_start(model, psi0, rng):
    K = model.kernel(psi0, model.X)
    return linalg.cholesky(K, name="K(psi0)", count=False) @ rng.standard_normal(model.n)


def _run(rngs, specs, draws, callback, stop):
    """Each chain alone (``runner.run_spec``) or all under a stopping rule (``runner.run_specs``)."""
    if stop is None:
        return [runner.run_spec(r, s, n_draws=draws, callback=callback) for r, s in zip(rngs, specs)]
    return runner.run_specs(rngs, specs, stop=stop, callback=callback)


def _chains_regression(model: GPRegressor, method, rngs, draws, warmup, callback, options, stop=None):
    fit, cov = _mode_and_cov(model, rngs[0])
    logp = log_posterior(model.gp, model.prior)
    vg = log_posterior_value_and_grad(model.gp, model.prior)
    specs = []
    for r in rngs:
        start = r.multivariate_normal(fit.psi, cov)  # over-dispersed starts: draws of the Gaussian at the mode
        if method == "rwmh":
            specs.append(random_walk.chain_spec(r, start, lambda x, _r: logp(x), cov, n_burn=warmup, **options))
        elif method == "hmc":
            specs.append(hmc.chain_spec(start, vg, hmc.mass_matrix("dense", cov), n_tune=warmup, **options))
        elif method == "nuts":
            specs.append(nuts.chain_spec(start, vg, hmc.mass_matrix("dense", cov), n_adapt=warmup, step_size=None,
                                         **options))
        else:  # slice
            opts = dict(options)
            width = opts.pop("width", 2.0 * np.sqrt(np.diag(cov)))
            specs.append(slice_mod.chain_spec(start, lambda x: logp(x), width, n_burn=warmup, **opts))
    return _run(rngs, specs, draws, callback, stop)


def _chains_latent(model, method, rngs, draws, warmup, callback, options, stop=None):
    out, specs = [], []
    psi_init = model.kernel.initial_psi(model.X)
    for r in rngs:
        psi0 = psi_init + 0.1 * r.standard_normal(psi_init.size)
        if method == "pseudo-marginal":
            approx = options.pop("approximation", "laplace")
            if isinstance(model, PoissonGP) and np.ndim(model.likelihood.exposure) > 0:
                raise ValueError("PoissonGP with per-bin exposure: the importance estimator takes a scalar "
                                 "exposure; use method 'aa', 'surr' or 'slice-<representation>'")
            _check_approximation(model, approx)
            n_imp = int(options.pop("n_imp", 64))
            target = PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior,
                                          approx=approx, n_imp=n_imp)
            n_adapt = int(options.pop("n_adapt", warmup))
            cov = options.pop("proposal_cov", 0.1 * np.eye(psi0.size))
            out.append(pseudo_marginal.run_chain(r, target, psi0, n_adapt=n_adapt, n_burn=0, n_draws=draws,
                                                 proposal_cov=cov, callback=callback, **options))
            options = dict(options, approximation=approx, n_imp=n_imp, n_adapt=n_adapt, proposal_cov=cov)
            continue
        lgm = LatentGaussianModel(model.kernel, model.X, model.likelihood, model.y, model.prior)
        f0 = _latent_start(model, psi0, r)
        if method in ("aa", "surr"):
            specs.append(latent_gibbs.chain_spec(lgm, psi0, f0, method=method, n_burn=warmup,
                                                 keep_latent=options.get("keep_latent", False)))
        else:
            specs.append(hyper_slice.chain_spec(lgm, psi0, f0, method[len("slice-"):], n_burn=warmup))
    return out if method == "pseudo-marginal" else _run(rngs, specs, draws, callback, stop)


_STOPPABLE = ("rwmh", "hmc", "nuts", "slice", "aa", "surr", *(f"slice-{m}" for m in hyper_slice.METHODS))


def _count(name: str, value, minimum: int, what: str | None = None) -> int:
    """``value`` as an int >= ``minimum``; a whole float (1e3) is accepted, a fraction, bool or string is not."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        value, ok = int(value), True
    if not ok or int(value) < minimum:
        raise ValueError(f"{name} must be {what or f'an integer >= {minimum}'}, got {value!r}"
                         + (f" ({type(value).__name__})" if not ok else ""))
    return int(value)


#: the methods' integer options and their smallest value (checked before any work starts)
_INTEGER_OPTIONS = {"n_iterations": 1, "n_per_iteration": 1, "n_resample": 1, "n_imp": 1, "n_tuning_samples": 1,
                    "n_per_iteration_amis": 1, "n_adapt": 0, "base": 0, "slope": 1, "adapt_start": 0,
                    "vb_max_iter": 1}


def _check_integer_options(method: str, options: dict) -> dict:
    out = dict(options)
    for k, minimum in _INTEGER_OPTIONS.items():
        if k in out:
            out[k] = _count(f"{k} (an option of method {method!r})", out[k], minimum)
    return out


def _stop_rule(until_converged, draws: int):
    if until_converged is None or until_converged is False:
        return None
    if isinstance(until_converged, runner.StopRule):
        return until_converged
    opts = {} if until_converged is True else dict(until_converged)
    known = {f.name for f in dataclasses.fields(runner.StopRule)}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise ValueError(f"until_converged has no key(s) {unknown}; its keys are {sorted(known)}")
    opts.setdefault("max_draws", draws)
    return runner.StopRule(**opts)


def _data_groups(model) -> dict[str, xr.Dataset]:
    """``observed_data`` (y) and ``constant_data`` (X, exposure) whose rows share the dim ``obs``.

    X is the model's (standardised) inputs over ``(obs, feature)``, the
    features named after X's columns when it had some; y is on the scale the
    likelihood sees (regression: the original scale of y; classification:
    -1/+1; counts; GPLVM: the standardised outputs over ``(obs, output)``).
    """
    n, d = model.X.shape
    feature = getattr(model, "feature_names", None) or list(range(d))
    const = {"X": (("obs", "feature"), model.X)}
    exposure = getattr(getattr(model, "likelihood", None), "exposure", None)
    if exposure is not None and np.ndim(exposure) == 1:
        const["exposure"] = ("obs", np.asarray(exposure, dtype=np.float64))
    y = model.y_raw if isinstance(model, GPRegressor) else model.y
    y_dims = ("obs",) if np.ndim(y) == 1 else ("obs", "output")
    coords = {"obs": np.arange(n), "feature": feature}
    out = {"constant_data": xr.Dataset(const, coords=coords),
           "observed_data": xr.Dataset({"y": (y_dims, np.asarray(y))}, coords={"obs": np.arange(n)})}
    for g in out.values():
        g.attrs.update(io.arviz_attrs())
    return out


#: dims of the per-draw latent arrays a method records (besides chain, draw)
_LATENT_DIMS = {"f": ("obs",), "v": ("inducing", "latent_gp"), "Z": ("obs", "latent")}


def _hyperparameter_groups(model, psi: np.ndarray, attrs: dict) -> dict[str, xr.Dataset]:
    """``posterior``: one variable per hyperparameter on its natural scale, theta = exp(psi);
    ``unconstrained_posterior`` (ArviZ's group for the sampled, transformed space): the same
    names holding psi = log theta exactly as sampled.  ``psi`` is (chain, draw, p)."""
    names = model.hyperparameter_names
    coords = {"chain": np.arange(psi.shape[0]), "draw": np.arange(psi.shape[1])}
    post = xr.Dataset({n: (("chain", "draw"), np.exp(psi[:, :, j])) for j, n in enumerate(names)}, coords=coords)
    unc = xr.Dataset({n: (("chain", "draw"), psi[:, :, j]) for j, n in enumerate(names)}, coords=coords)
    full = {**io.arviz_attrs(), **attrs}
    post.attrs.update(full)
    unc.attrs.update(full)
    return {"posterior": post, "unconstrained_posterior": unc}


def _posterior_groups(model, chains: list[Chain], method: str, attrs: dict) -> dict[str, xr.Dataset]:
    groups = io.to_inference_groups(chains, var_name="psi", coords={"param": model.hyperparameter_names},
                                    attrs=attrs, per_chain_tuning=True)
    kept = groups["posterior"]
    groups.update(_hyperparameter_groups(model, kept["psi"].values, attrs))
    for name, dims in _LATENT_DIMS.items():
        if name in kept:
            groups["posterior"][name] = (("chain", "draw", *dims), kept[name].values)
    groups.update(_data_groups(model))
    return groups


def _weighted_groups(model, res: amis_mod.AMISResult, rng, n_resample: int, attrs: dict):
    """Importance-sampling results in the ArviZ schema.

    ``posterior``/``unconstrained_posterior``: ``n_resample`` draws resampled
    with replacement in proportion to the normalised weights (multinomial), so
    that every ArviZ function (``az.summary``, ``az.plot_posterior``) sees
    equally weighted draws.  ``sample_stats``: the weighted sample itself over
    the dim ``importance_sample`` -- ``importance_psi`` (log-scale draws over
    ``param``), ``log_weight`` (unnormalised) and ``weight`` (normalised) --
    and, per posterior draw, ``resample_index`` (which importance draw it is).
    Attributes: Kish's ``ess`` = 1 / sum w^2, ``n_cubic``, ``n_target_evals``.
    """
    names = model.hyperparameter_names
    w = res.normalised_weights
    X = np.asarray(res.samples)
    idx = rng.choice(w.size, size=n_resample, replace=True, p=w)
    groups = _hyperparameter_groups(model, X[None, idx], attrs)
    ss = xr.Dataset({"resample_index": (("chain", "draw"), idx[None]),
                     "importance_psi": (("chain", "importance_sample", "param"), X[None]),
                     "log_weight": (("chain", "importance_sample"), np.asarray(res.log_weights)[None]),
                     "weight": (("chain", "importance_sample"), w[None])},
                    coords={"chain": [0], "draw": np.arange(n_resample), "param": names})
    ss.attrs.update({**io.arviz_attrs(), **attrs, "ess": 1.0 / float(np.sum(w * w)),
                     "n_cubic": int(np.asarray(res.n_cubic)[-1]), "n_target_evals": int(res.n_target_evals)})
    groups["sample_stats"] = ss
    groups.update(_data_groups(model))
    return groups


def _gplvm(model, method, rngs, draws, warmup, callback, options, attrs):
    """Gadd et al.: ML point estimate or PM MH-within-Gibbs chains started at the ML psi plus noise."""
    from .gplvm import pseudo_marginal as gpm

    names = model.param_names
    if method == "type2-ml":
        ch = Chain(draws=model.fit_.psi[None, :], stats={"lp": np.array([model.fit_.bound])}, warmup={}, params={},
                   state=None)
        return _posterior_groups(model, [ch], method, attrs)
    sd = float(options.get("initial_proposal_sd", 0.1))
    config = gpm.PMGibbsConfig(blocks=model.blocks(), n_imp=int(options.get("n_imp", 20)),
                               adapt_start=int(options.get("adapt_start", warmup)), warm_start=True,
                               vb_options={"max_iter": int(options.get("vb_max_iter", 50))})
    chains = []
    for r in rngs:
        psi0 = model.fit_.psi + float(options.get("start_noise_sd", 0.1)) * r.standard_normal(len(names))
        chains.append(gpm.run_chain(r, model.gplvm, model.prior, psi0, config, draws, n_warmup=warmup,
                                    proposal_covs=[sd**2 * np.eye(b.size) for b in config.blocks], callback=callback))
    return _posterior_groups(model, chains, method, attrs)


def _amis(model, method, rng, options):
    if isinstance(model, GPRegressor):
        fit, cov = _mode_and_cov(model, rng)
        logt = amis_mod.exact(log_posterior(model.gp, model.prior))
        if method == "amis":
            kw = {"n_iterations": 100, "n_per_iteration": 50, **options}
            return amis_mod.amis(rng, logt, fit.psi, cov, **kw)
        n_it = int(options.pop("n_iterations", 30))
        sizes = amis_mod.mamis_sample_sizes(n_it, base=int(options.pop("base", 0)),
                                            slope=int(options.pop("slope", 20)))
        if method == "amis-mamis":  # the MAMIS result; its costs include the AMIS tuning (tuning_n_cubic)
            return amis_mod.amis_then_mamis(rng, logt, fit.psi, cov,
                                            n_tuning_samples=int(options.pop("n_tuning_samples", 1000)),
                                            n_per_iteration_amis=int(options.pop("n_per_iteration_amis", 50)),
                                            mamis_sizes=sizes, **options)[0]
        return amis_mod.mamis(rng, logt, fit.psi, cov, sizes, **options)
    # pm-amis: q_0 = EP's Laplace-style Gaussian at the EP type-II MAP
    approx = options.pop("approximation", model.likelihood.approximations[0])
    _check_approximation(model, approx)
    n_imp = int(options.pop("n_imp", 64))
    target = PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior,
                                  approx=approx, n_imp=n_imp)
    # q_0's centre: EP type-II ML with the model's likelihood; one without EP (the logistic) keeps the probit's
    # EP-ML as its starting point, as before
    start = model.likelihood if "ep" in model.likelihood.approximations else Probit()
    ml = fit_ep_type2_ml(model.X, model.y, model.kernel, rng, log_prior=model.prior, likelihood=start)
    cov = np.eye(ml.psi.size) * 0.25
    kw = {"n_iterations": 20, "n_per_iteration": 100, **options}
    return amis_mod.pm_amis(rng, target, ml.psi, cov, **kw)


def sample(model, method: str, *, chains: int = 4, draws: int = 1000, warmup: int = 500, seed: int = 0,
           progress: bool | None = None, until_converged=None, posterior_predictive: bool = False,
           log_likelihood: bool = False, **options):
    """Posterior of the model's hyperparameters by ``method``; an ``arviz.InferenceData``.

    Parameters
    ----------
    model : GPRegressor, GPClassifier or PoissonGP.
    method : one of ``methods(model)`` (module docstring: what each is and which equation).
    chains, draws, warmup : MCMC chains and their lengths (warm-up draws tune the
        sampler and are discarded; their cost is in ``sample_stats`` as ``warmup_n_cubic``).
    seed : one seed gives identical results on any machine; chain c uses the c-th
        child of ``numpy.random.SeedSequence(seed)`` (independent streams).
    until_converged : stop when converged instead of after ``draws``: True, a dict of
        ``gpbayes.mcmc.runner.StopRule`` fields (``rhat`` 1.01, ``ess_bulk`` 400 summed over
        chains, ``check_every`` 100, budgets ``max_draws`` (default ``draws``), ``max_cubic``
        O(n^3) operations, ``max_seconds``) or a StopRule; the chains advance together in
        blocks and stop when split rank R-hat < rhat and bulk ESS > ess_bulk on every
        hyperparameter, or a budget is spent (``posterior.attrs``/``sample_stats.attrs["stopped"]``
        says which).  For the MCMC methods of the exact marginal, AA/SURR and the slice
        representations.
    progress : a progress bar (default: when stderr is a terminal).
    posterior_predictive, log_likelihood : add the groups ``posterior_predictive``
        (draws of y, :func:`gpbayes.predictive.sample_posterior_predictive`, seeded by ``seed``)
        and ``log_likelihood`` (for ``az.loo``, :func:`gpbayes.predictive.compute_log_likelihood`);
        O(n^3) per distinct draw each.
    options : the method's own options, e.g. ``approximation="ep"``, ``n_imp=64`` for
        ``"pseudo-marginal"``; ``n_iterations``, ``n_per_iteration`` for ``"amis"``.

    Returns
    -------
    arviz.InferenceData with groups ``posterior`` (one variable per
    hyperparameter on its natural scale), ``unconstrained_posterior`` (the
    same names, psi = log theta), ``sample_stats`` (``lp``,
    ``acceptance_rate``, ``n_cubic`` O(n^3) operations per draw,
    ``wall_time``, tuned ``step_size``, ...), ``constant_data`` (the
    standardised X over ``(obs, feature)``) and ``observed_data`` (y over
    ``obs``); importance-sampling methods give resampled, equally weighted
    draws in ``posterior`` and the weighted sample (``importance_psi``,
    ``log_weight``, ``weight``) in ``sample_stats``; point estimates give one draw.
    """
    import arviz as az

    if type(model) not in _METHODS:
        raise TypeError(f"model must be one of {[t.__name__ for t in _METHODS]}, got {type(model).__name__}")
    allowed = methods(model)
    if method not in allowed:
        raise ValueError(f"method {method!r} does not apply to {type(model).__name__}; choose one of {allowed}")
    unknown = sorted(set(options) - set(OPTIONS[method]))
    if unknown:
        raise ValueError(f"method {method!r} has no option(s) {unknown}; its options are {list(OPTIONS[method])}")
    chains, draws, warmup = _count("chains", chains, 1), _count("draws", draws, 1), _count("warmup", warmup, 0)
    seed = _count("seed", seed, 0, what="a non-negative integer (the entropy of numpy.random.SeedSequence)")
    options = _check_integer_options(method, options)
    stop = _stop_rule(until_converged, draws)
    if stop is not None and method not in _STOPPABLE:
        raise ValueError(f"until_converged is available for the methods {list(_STOPPABLE)}, not {method!r}")
    options = dict(options)
    seeds = np.random.SeedSequence(seed).spawn(chains)
    rngs = [np.random.default_rng(s) for s in seeds]
    attrs = {**model._attrs(), "method": method, "seed": int(seed),
             "options": repr(sorted(options.items()))}
    bar = _progress(progress)
    callback = bar
    try:
        if isinstance(model, GPLVMRegressor):
            groups = _gplvm(model, method, rngs, draws, warmup, callback, options, attrs)
        elif method in ("type2-ml", "ep-ml"):
            if method == "type2-ml":
                fit = fit_type2_ml(model.gp, rngs[0], n_restarts=3)
            else:
                fit = fit_ep_type2_ml(model.X, model.y, model.kernel, rngs[0], likelihood=model.likelihood)
            ch = Chain(draws=fit.psi[None, :], stats={"lp": np.array([fit.log_marginal])}, warmup={}, params={},
                       state=None)
            groups = _posterior_groups(model, [ch], method, attrs)
        elif method in ("amis", "mamis", "amis-mamis", "pm-amis"):
            n_resample = int(options.pop("n_resample", 1000))
            res = _amis(model, method, rngs[0], options)
            groups = _weighted_groups(model, res, rngs[0], n_resample, attrs)
        elif isinstance(model, SparseGPClassifier):
            from .sparse import mcmc as sparse_mcmc
            from .sparse.target import initial_position

            run = sparse_mcmc.sample_joint if method == "joint-hmc" else sparse_mcmc.sample_gibbs
            out = [run(r, model.target, initial_position(r, model.target, model.fit_.params), n_warmup=warmup,
                       n_draws=draws, callback=callback, **options) for r in rngs]
            groups = _posterior_groups(model, out, method, attrs)
        elif isinstance(model, GPRegressor):
            out = _chains_regression(model, method, rngs, draws, warmup, callback, options, stop)
            groups = _posterior_groups(model, out, method, attrs)
        else:
            out = _chains_latent(model, method, rngs, draws, warmup, callback, options, stop)
            groups = _posterior_groups(model, out, method, attrs)
    finally:
        if bar is not None:
            bar.close()
    idata = az.InferenceData(**groups)
    if log_likelihood:
        compute_log_likelihood(model, idata)
    if posterior_predictive:
        sample_posterior_predictive(model, idata, seed=seed)
    return idata


def summary(idata, **kwargs):
    """``arviz.summary`` of the hyperparameters plus the cost columns of the papers.

    Adds ``n_cubic_per_draw`` (mean O(n^3) operations per kept draw, warm-up
    excluded) and ``ess_bulk_per_1k_cubic`` (bulk ESS per 1,000 O(n^3)
    operations including warm-up), the cost measure of F&G Table I and
    Xiong et al. Sec. 4.4.  Importance-sampling results are summarised on
    their resampled (equally weighted) ``posterior``, with Kish's effective
    sample size of the weights (``ess_importance``) beside it.
    """
    import arviz as az

    names = hyperparameter_names(idata)
    if idata.posterior.sizes["draw"] * idata.posterior.sizes["chain"] == 1:  # a point estimate
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = az.summary(idata, var_names=names, kind="stats")
        return table[["mean"]].rename(columns={"mean": "estimate"})
    table = az.summary(idata, var_names=names, **kwargs)
    ss = idata.sample_stats
    if "importance_psi" in ss:
        # the resampled draws' ESS overstates the weighted sample's: report Kish's 1 / sum w^2 beside it
        table["ess_importance"] = float(ss.attrs.get("ess", np.nan))
        table["n_cubic_total"] = int(ss.attrs.get("n_cubic", -1))
        return table
    if "n_cubic" in ss:
        total = float(ss["n_cubic"].sum()) + float(ss.get("warmup_n_cubic", xr.DataArray(0)).sum())
        table["n_cubic_per_draw"] = float(ss["n_cubic"].mean())
        if total > 0 and "ess_bulk" in table:
            table["ess_bulk_per_1k_cubic"] = table["ess_bulk"] / total * 1000.0
    return table


def hyperparameter_names(idata) -> list[str]:
    """The hyperparameters of a ``gpbayes.sample`` result, in the model's order (the variables of
    ``unconstrained_posterior``; ``posterior`` holds them on the natural scale theta = exp(psi))."""
    return [str(v) for v in idata.unconstrained_posterior.data_vars]


def psi_draws(idata) -> xr.DataArray:
    """The log-hyperparameters psi = log theta of a ``gpbayes.sample`` result as one array
    ``(chain, draw, param)`` (from ``unconstrained_posterior``, exactly as sampled)."""
    return idata.unconstrained_posterior.to_array("param").transpose("chain", "draw", "param")


def _draw_matrix(idata, max_draws: int, rng) -> np.ndarray:
    psi = psi_draws(idata).values
    psi = psi.reshape(-1, psi.shape[-1])
    if psi.shape[0] > max_draws:
        psi = psi[np.sort(rng.choice(psi.shape[0], size=max_draws, replace=False))]
    return psi


def _laplace_predictive(model, psi_draws, Xs) -> np.ndarray:
    """Mean over draws of the likelihood's ``predictive_mean`` under the Laplace latent predictive.

    q(f_* | y, theta) by R&W Alg. 3.2 (``GaussianApproximation.latent_predictive``, mean k_*^T K^-1 f_hat);
    then its ``predictive_mean``: p(y_* = +1) for a classifier (Gauss-Hermite for the logistic), the rate per
    unit exposure exp(f_* + m) for ``PoissonGP`` (the log-normal mean) -- ``gpbayes.likelihoods``.
    """
    from .approx.laplace import laplace_approximation

    out = []
    for p in psi_draws:
        a = laplace_approximation(model.kernel(p, model.X), model.y, model.likelihood)
        mean, var = a.latent_predictive(model.kernel(p, model.X, Xs), model.kernel.diag(p, Xs))
        out.append(model.likelihood.predictive_mean(mean, var))
    return np.mean(out, axis=0)


def predict(model, idata, X_new, *, y_new=None, max_draws: int = 200, seed: int = 0) -> xr.Dataset:
    """Posterior predictive at ``X_new``, averaged over (up to ``max_draws``) posterior draws.

    For a new y: ``y_mean``/``y_variance`` (the predictive moments of y),
    ``y_lower``/``y_upper`` (central 95 % interval, regression) and, given
    the targets ``y_new``, ``log_predictive_density`` per point: log of the
    mixture over draws of p(y_new | x_new, theta) (labels as given to the
    model; its sum is ``attrs["lpd"]``).

    GPLVMRegressor: mean and standard deviation per output of Gadd et al.'s
    eq. 7 mixture over posterior draws (psi, Z) (with z* from eq. 8).
    GPRegressor: mean and standard deviation of f(x_*) and a 95 % interval
    for a new y (mixture of the exact GP predictives, R&W eqs. 2.25-2.26),
    on the original scale of y.  GPClassifier: probability of the positive
    class, F&G eq. 8 (EP predictive at each draw) averaged over draws when the
    likelihood's default approximation is EP (the probit); otherwise the
    Laplace latent predictive and the likelihood's expectation under it
    (``predictive_mean``: Gauss-Hermite for the logistic).
    PoissonGP: posterior mean rate per unit exposure exp(f_* + m) from the
    Laplace latent predictive at each draw (mean of the log-normal).
    """
    rng = np.random.default_rng(seed)
    Xs = model.transform(X_new)
    psi = _draw_matrix(idata, max_draws, rng)
    if isinstance(model, GPRegressor):
        means, variances = zip(*(model.gp.predict(p, Xs) for p in psi))
        means, variances = np.array(means), np.array(variances)
        noise = np.exp(psi[:, -1])[:, None]
        mean = means.mean(axis=0)
        var_f = (variances + means**2).mean(axis=0) - mean**2
        # 95 % interval of the mixture for a new y: quantiles of draws from the mixture
        k = rng.integers(0, means.shape[0], size=(2000,))
        ys = means[k] + np.sqrt(variances[k] + noise[k]) * rng.standard_normal((2000, Xs.shape[0]))
        lo, hi = np.quantile(ys, [0.025, 0.975], axis=0)
        s, c = model.y_scale, model.y_shift
        out = xr.Dataset({"mean": ("point", mean * s + c), "sd_f": ("point", np.sqrt(np.maximum(var_f, 0)) * s),
                          "y_lower": ("point", lo * s + c), "y_upper": ("point", hi * s + c)})
        return predictive.y_level_gaussian(out, means * s + c, (variances + noise) * s * s, y_new)
    if isinstance(model, GPLVMRegressor):
        from .gplvm import pseudo_marginal as gpm

        if "Z" in idata.posterior:
            grp = idata.posterior
            Z = grp["Z"].values.reshape(-1, *grp["Z"].shape[2:])
            all_psi = psi_draws(idata).values.reshape(Z.shape[0], -1)
            pick = np.sort(rng.choice(Z.shape[0], size=min(max_draws, Z.shape[0]), replace=False))
            mix = gpm.predictive_mixture(rng, model.gplvm, all_psi[pick], Z[pick], Xs)
        else:  # the ML point estimate: Z ~ q(Z)
            mix = gpm.ml_predictive_mixture(rng, model.gplvm, model.fit_.psi, model.fit_.params, Xs,
                                            n_samples=max_draws)
        mean = mix.mean.mean(axis=0)  # (n_test, k_y)
        var = (mix.var[:, :, None] + mix.mean**2).mean(axis=0) - mean**2
        out = xr.Dataset({"mean": (("point", "output"), mean * model.y_scale + model.y_shift),
                          "sd": (("point", "output"), np.sqrt(np.maximum(var, 0.0)) * model.y_scale)},
                         attrs={"note": "moments of the eq. 7 mixture (which can be multimodal, Gadd et al. Fig. 2)"})
        return predictive.y_level_gaussian(out, mix.mean * model.y_scale + model.y_shift,
                                           mix.var[:, :, None] * model.y_scale**2, y_new)
    if isinstance(model, SparseGPClassifier):
        from .sparse.target import predict_class_probabilities

        grp = idata.posterior
        v = grp["v"].values.reshape(-1, *grp["v"].shape[2:])
        all_psi = psi_draws(idata).values.reshape(v.shape[0], -1)
        pick = np.sort(rng.choice(v.shape[0], size=min(max_draws, v.shape[0]), replace=False))
        p = predict_class_probabilities(model.target, v[pick], all_psi[pick], Xs).mean(axis=0)
        if p.ndim == 2:  # robust-max: (point, class)
            return predictive.y_level_classes(xr.Dataset({"probability": (("point", "class"), p)},
                                                         coords={"class": [str(c) for c in model.classes_]}),
                                              model.classes_, y_new)
        return predictive.y_level_classes(xr.Dataset({"probability": ("point", p)},
                                                     attrs={"positive_class": str(model.classes_[1])}),
                                          model.classes_, y_new)
    if isinstance(model, GPClassifier):
        if model.likelihood.approximations[0] == "ep":
            p = mcmc_predictive(model.X, model.y, Xs, model.kernel, psi, approx="ep", likelihood=model.likelihood)
        else:
            p = _laplace_predictive(model, psi, Xs)
        return predictive.y_level_classes(xr.Dataset({"probability": ("point", np.asarray(p))},
                                                     attrs={"positive_class": str(model.classes_[1])}),
                                          model.classes_, y_new)
    from .approx.laplace import laplace_approximation

    rates, latent = [], []
    for p in psi:
        # R&W Alg. 3.2 (GaussianApproximation.latent_predictive), then the likelihood's predictive mean
        a = laplace_approximation(model.kernel(p, model.X), model.y, model.likelihood)
        mean, var = a.latent_predictive(model.kernel(p, model.X, Xs), model.kernel.diag(p, Xs))
        rates.append(model.likelihood.predictive_mean(mean, var))
        latent.append((mean + model.offset, np.maximum(var, 0.0)))
    return predictive.y_level_counts(xr.Dataset({"rate": ("point", np.mean(rates, axis=0))}), latent, y_new)
