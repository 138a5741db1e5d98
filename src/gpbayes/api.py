"""The public API: a model of the user's data, a method by name, an ArviZ result (``gpbayes.io.make_idata``).

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
* :class:`SparseGP` -- a sparse variational GP with any likelihood sampled by
  MCMC (Hensman et al. 2015); :class:`SparseGPClassifier` for labels.
* :class:`PoissonGP` -- a log-Gaussian Cox process on binned counts with
  exposure (M&A Sec. 5): y_i ~ Poisson(exposure_i exp(f_i + m)), m the log
  mean rate.
* :class:`LatentGP` -- a latent GP with any ``gpbayes.likelihoods.Likelihood``
  (a Student-t of your own, ``docs/examples/own_likelihood.py``); f is kept.

Every model uses the squared-exponential kernel in Filippone & Girolami's
parameterisation (eq. 5: sigma exp(-1/2 sum_d (x_d - x'_d)^2 / tau_d^2),
ARD by default: tau_d is input d's lengthscale, sigma = k(x, x) the signal
variance) and, unless given, their priors (Sec. 4.4, shape/rate):
lengthscale_d ~ Gamma(1, 1/sqrt(d)), signal_variance ~ Gamma(1.1, 0.1), and for
regression noise_variance ~ InverseGamma(1, 0.01) on the standardised target.
Parameters are sampled as psi = log theta.

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
``"joint-hmc"``     SparseGP(Classifier)           Hensman et al. 2015: HMC jointly on (v, psi) with Stan-style warm-up
``"gibbs"``         SparseGP(Classifier)           their baseline: HMC on v | theta alternating with MH on psi | v
``"pm-within-gibbs"`` GPLVMRegressor               Gadd et al. Algs. 2-3: blockwise adaptive PM MH (eq. 6 estimate, q(Z) re-optimised per proposal) + ELL-SS of Z
``"joint-gibbs"``   GPLVMRegressor                 exact joint (psi, Z): ELL-SS of whitened Z, RW-MH on psi, centred sigma, scale and rotation moves
``"joint-nuts"``    GPLVMRegressor                 exact joint (psi, Z): NUTS on (psi, whitened Z), gradient by the Cholesky adjoint
``"type2-ml"``      GPLVMRegressor                 the variational bound maximised (point estimate)
==================  =============================  ==============================================

A :class:`LatentGP` takes the latent-model methods that keep f: ``"nuts-whitened"``,
``"slice-<rep>"``, ``"aa"``, ``"surr"`` (and ``"pseudo-marginal"`` / ``"nuts-is"`` never, as they
keep none); with ``sample_offset=True`` (M&A Sec. 5's sampled constant m) ``"slice-<rep>"``,
``"aa"`` and ``"surr"`` alone.

Each string is an alias of a method object (``gpbayes.methods``; its fields
are the options with their defaults, checked when it is made):
``RandomWalkMH`` (rwmh), ``HMC``, ``NUTS``, ``Slice`` (slice), ``AMIS``,
``MAMIS``, ``AMISToMAMIS`` (amis-mamis), ``TypeIIML`` (type2-ml),
``PseudoMarginal``, ``PMAMIS`` (pm-amis), ``LatentGibbs`` (aa, surr),
``SliceSampler`` (slice-<rep>), ``EPML`` (ep-ml), ``JointHMC``,
``SparseGibbs`` (gibbs), ``GPLVMPseudoMarginal`` (pm-within-gibbs),
``GPLVMJointGibbs`` (joint-gibbs), ``GPLVMJointNUTS`` (joint-nuts):
``sample(model, method="nuts", max_tree_depth=8)`` is
``sample(model, method=NUTS(max_tree_depth=8))``.

The result follows the ArviZ schema.  ``posterior`` holds one variable per
hyperparameter on its natural scale, one scheme across the models
(``model.hyperparameters``): ``lengthscale`` over the dim ``feature`` (its
coordinates X's column names, else 0..d-1; a scalar for an isotropic kernel),
``signal_variance`` (k(x, x)), ``noise_variance``, a LatentGP's sampled constant ``mean_constant``
(as it is, not exp), and a name that says what a
quantity is where it is none of these (``signal_std``, the GPLVM's
``latent_inverse_squared_lengthscale``, ``noise_precision``); latent draws
``f``, ``v``, ``Z`` where a method keeps them.  ``unconstrained_posterior``
holds the same variables on the sampled log scale psi = log theta
(``gpbayes.api.psi_draws`` stacks them over ``param``: ``lengthscale[0]``, ...),
so ``az.summary(idata)`` lists each hyperparameter once, ``lengthscale[<feature>]``
per input.  The names of before (``tau_0``, ``sigma``, ...) are still accepted,
with a DeprecationWarning, in ``prior=`` and in a saved result given to ``predict``.
``sample_stats``: per-draw statistics (``lp``,
``acceptance_rate``, ``step_size``, ``n_cubic``, ...) and, per chain, the
tuning (``tuned_<name>``) and warm-up cost (``warmup_<name>``).
``constant_data``: X over ``(obs, feature)``; ``observed_data``: y over ``obs``.
The result carries its model (``attrs["gpbayes_model"]``, ``gpbayes.model_spec``):
``gb.predict(idata, X_new)`` rebuilds it, ``gb.predict(model, idata, X_new)`` checks that
``model`` is the one sampled.
Importance-sampling methods put draws resampled in proportion to the weights
in ``posterior`` (equally weighted: every ArviZ function is right on them)
and the weighted sample in ``sample_stats`` over the dim
``importance_sample``: ``importance_psi``, ``log_weight``, ``weight``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import sys
import warnings

import numpy as np
import xarray as xr

from . import approx, linalg, model_spec, parallel, predictive, threads
from . import means as mean_functions
from . import methods as inference  # the method objects' package (gpbayes.methods)
from .classification import mcmc_predictive
from .io import check_names, group, has_group, make_idata, psi_draws, stack_hyperparameters
from .predictive import compute_log_likelihood, sample_posterior_predictive
from .methods import METHOD_CLASSES, Method, methods
from .models import GPClassifier, GPLVMRegressor, GPRegressor, LatentGP, PoissonGP, SparseGP, SparseGPClassifier
from .mcmc import runner
from .mcmc.runner import Chain, Progress

__all__ = ["DEFAULT_BUDGET_DRAWS", "NotConvergedWarning", "PEER_NAMES", "convergence_diagnostics", "fresh_seed",
           "in_notebook", "GPRegressor", "GPClassifier", "PoissonGP", "SparseGP", "SparseGPClassifier", "GPLVMRegressor", "LatentGP",
           "methods", "sample",
           "summary", "predict", "sample_posterior_predictive", "compute_log_likelihood", "psi_draws",
           "stack_hyperparameters", "hyperparameter_names", "check_names", "Method", *METHOD_CLASSES]
globals().update(METHOD_CLASSES)  # the method objects, as gpbayes.methods' registry holds them

_MODELS = (GPRegressor, GPClassifier, PoissonGP, SparseGP, SparseGPClassifier, GPLVMRegressor, LatentGP)


# ---------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------
def in_notebook() -> bool:
    """Is this a Jupyter kernel (IPython's ``ZMQInteractiveShell``, or Colab's shell)?  Only looks at an
    IPython already imported, so a plain Python process never imports it."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 -- a half-imported or unusual IPython: no notebook
        return False
    if shell is None:
        return False
    cls = type(shell)
    return cls.__name__ == "ZMQInteractiveShell" or cls.__module__.startswith("google.colab")


#: seconds between two progress lines when stderr is not a terminal (output redirected to a file)
PROGRESS_INTERVAL = 10.0


def _progress(progress, n_chains: int, n_warmup: int | None = None):
    """The run's progress reporter: ``progress`` itself when it is a ``Progress``; None for ``False``.  With
    ``True`` or None (the default): on a terminal or in a notebook a ``tqdm.auto`` bar over all chains that
    stays when the run ends; elsewhere (stderr redirected to a file or a pipe) a line on stderr every
    :data:`PROGRESS_INTERVAL` seconds -- iterations done of the total (warm-up included), divergences,
    elapsed time -- and a last one at the end (with ``True`` always; by default if the run was long enough
    to write one)."""
    if isinstance(progress, Progress):
        return progress
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise ValueError(f"progress must be True, False, None (a bar on a terminal or in a notebook, a line every "
                         f"{PROGRESS_INTERVAL:g} s elsewhere) or a gpbayes.mcmc.runner.Progress, got {progress!r}")
    if progress is not None and not progress:
        return None
    if sys.stderr.isatty() or in_notebook():
        return Progress("sampling", n_chains=n_chains, bar=True, n_warmup=n_warmup)
    return Progress("sampling", n_chains=n_chains, bar=False, interval=PROGRESS_INTERVAL, final=progress is not None,
                    n_warmup=n_warmup)


#: keyword names of PyMC, NumPyro, BlackJAX/TFP and scikit-learn that ``gb.sample`` spells otherwise:
#: name -> (gpbayes' name, whose name it is)
PEER_NAMES = {
    "tune": ("n_warmup", "PyMC"), "num_warmup": ("n_warmup", "NumPyro"), "num_burnin_steps": ("n_warmup", "TFP"),
    "n_burnin": ("n_warmup", "a common"), "burn_in": ("n_warmup", "a common"), "burnin": ("n_warmup", "a common"),
    "random_seed": ("seed", "PyMC"), "rng_key": ("seed", "NumPyro/JAX"), "random_state": ("seed", "scikit-learn"),
    "rng": ("seed", "a common"),
    "progressbar": ("progress", "PyMC/NumPyro"), "progress_bar": ("progress", "NumPyro"),
    "num_samples": ("draws", "NumPyro"), "num_results": ("draws", "TFP"), "n_samples": ("draws", "a common"),
    "n_draws": ("draws", "a common"), "samples": ("draws", "a common"),
    "num_chains": ("chains", "NumPyro"), "n_chains": ("chains", "a common"), "chain_method": ("cores", "NumPyro"),
    "target_accept_prob": ("target_accept", "NumPyro"), "max_treedepth": ("max_tree_depth", "PyMC/Stan"),
}


def _check_peer_names(options: dict) -> None:
    """Stop with the gpbayes name of a PyMC / NumPyro / TFP keyword (a TypeError, as Python's own for an
    unknown keyword)."""
    for name in options:
        if name in PEER_NAMES:
            ours, whose = PEER_NAMES[name]
            raise TypeError(f"gb.sample() got an unexpected keyword argument {name!r}: did you mean `{ours}`? "
                            f"({whose} `{name}` is gpbayes' `{ours}`; gb.sample's arguments are chains, draws, "
                            "n_warmup, seed, progress, cores, until_converged, budget, and the method's options)")


def _known_new_noise(model, n_draws: int) -> np.ndarray:
    """The noise variance of a new y of a GPRegressor with known noise (``noise=``), (n_draws, 1) on the
    model's scale: the known value when it is one number; per-point noise is not known at new inputs, so 0
    there, with a warning (the y intervals are then those of f)."""
    value = model.gp.new_noise(None)
    if value == 0.0:
        warnings.warn("gb.predict: the model's noise is known per training point (GPRegressor(noise=...)), not at "
                      "the new inputs: y_lower / y_upper (and the log density of y_new) leave the noise out -- they "
                      "are those of f; add the noise at X_new yourself", UserWarning, stacklevel=3)
    return np.full((n_draws, 1), value)


def fresh_seed() -> int:
    """A seed from the operating system's entropy (``numpy.random.SeedSequence().entropy``) for a run
    given ``seed=None``; its top 63 bits, so that it fits the int64 attribute of a netCDF file.
    ``gb.sample`` records it in ``attrs["seed"]``: passing it back repeats the run."""
    return int(np.random.SeedSequence().entropy) >> 65


#: draws per chain that ``gb.sample(model)`` (no method: run until converged) spends at most by default
DEFAULT_BUDGET_DRAWS = 10_000
#: ``budget`` keys -> the StopRule budgets they set
_BUDGET_KEYS = {"draws": "max_draws", "seconds": "max_seconds", "cubic": "max_cubic"}


def _budget(budget) -> dict:
    """``budget`` (draws per chain, or a mapping with keys draws/seconds/cubic) as StopRule fields."""
    if budget is None:
        return {}
    if not isinstance(budget, dict):
        return {"max_draws": _count("budget", budget, 1, what="an integer >= 1 (draws per chain) or a dict with "
                                                             f"keys {sorted(_BUDGET_KEYS)}")}
    unknown = sorted(set(budget) - set(_BUDGET_KEYS))
    if unknown or not budget:
        raise ValueError(f"budget has no key(s) {unknown}; its keys are {sorted(_BUDGET_KEYS)} (draws per chain, "
                         "seconds of wall time, O(n^3) operations over all chains)")
    out = {}
    for key, value in budget.items():
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and value > 0
        if not ok:
            raise ValueError(f"budget[{key!r}] must be a positive number, got {value!r}")
        out[_BUDGET_KEYS[key]] = _count(f"budget['draws']", value, 1) if key == "draws" else float(value)
    return out


def _stop_rule(until_converged, draws: int, budget=None):
    limits = _budget(budget)
    if until_converged is None or until_converged is False:
        if limits:
            raise ValueError("budget bounds a run until converged: give until_converged=True (or a dict), or leave "
                             "method out (gb.sample(model) runs until converged)")
        return None
    if isinstance(until_converged, runner.StopRule):
        return dataclasses.replace(until_converged, **limits) if limits else until_converged
    opts = {} if until_converged is True else dict(until_converged)
    known = {f.name for f in dataclasses.fields(runner.StopRule)}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise ValueError(f"until_converged has no key(s) {unknown}; its keys are {sorted(known)}")
    twice = sorted(set(opts) & set(limits))
    if twice:
        raise ValueError(f"{twice} given in until_converged and in budget; give each once")
    opts.update(limits)
    opts.setdefault("max_draws", draws)
    return runner.StopRule(**opts)


def _count(name: str, value, minimum: int, what: str | None = None) -> int:
    """``value`` as an int >= ``minimum``; a whole float (1e3) is accepted, a fraction, bool or string is not."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        value, ok = int(value), True
    if not ok or int(value) < minimum:
        raise ValueError(f"{name} must be {what or f'an integer >= {minimum}'}, got {value!r}"
                         + (f" ({type(value).__name__})" if not ok else ""))
    return int(value)


def _kept(chains: list[Chain]) -> tuple[list[Chain], str]:
    """After Ctrl-C: the chains and common length that keep the most draws (PyMC's choice), each cut to it."""
    lengths = [c.n_draws if c.draws.size else 0 for c in chains]
    best, n_best = 0, 0
    for n in sorted(set(lengths), reverse=True):
        k = sum(1 for m in lengths if m >= n)
        if k * n > best:
            best, n_best = k * n, n
    if best == 0:
        return [], f"no draw was kept (chain lengths {lengths})"
    out = []
    for c, m in zip(chains, lengths):
        if m >= n_best:
            out.append(dataclasses.replace(c, draws=c.draws[:n_best], stats={k: v[:n_best] for k, v in c.stats.items()},
                                           extra={k: v[:n_best] for k, v in c.extra.items()}, stopped="interrupted"))
    return out, f"returning {len(out)} chain(s) of {n_best} draws (draws per chain when interrupted: {lengths})"


def sample(model, method=None, *, chains: int = 4, draws: int | None = None, n_warmup: int | None = None,
           seed: int | np.random.SeedSequence | None = None, progress=None, until_converged=None, budget=None, posterior_predictive: bool = False,
           log_likelihood: bool = False, warmup: int | None = None, cores: int | None = None, init=None,
           **options):
    """Posterior of the model's hyperparameters by ``method``; an ``arviz.InferenceData`` (1.x: ``xarray.DataTree``).

    ``gb.sample(model)``, with no method, picks the method the committed benchmarks show fastest
    to converge for the model and its number of hyperparameters
    (:func:`gpbayes.methods.default_method`: for GPRegressor random-walk MH with few
    hyperparameters, NUTS with more; pseudo-marginal MH for a GPClassifier/PoissonGP with few
    hyperparameters, slice sampling in the surrogate-data representation with more; joint HMC for
    SparseGP and SparseGPClassifier; the GPLVM's sampler) and runs it
    until converged -- split rank R-hat < 1.01 and bulk ESS > 400 on every hyperparameter --
    within ``budget`` (default :data:`DEFAULT_BUDGET_DRAWS` draws per chain).  The choice and its
    reason are shown once (a :class:`gpbayes.methods.DefaultMethodWarning`) and recorded in the
    result's attributes (``method_default`` 1, ``method_reason``); a run that spends its budget
    without converging warns.  An explicit ``method`` runs exactly as it always has.

    Parameters
    ----------
    model : one of the seven models: :class:`GPRegressor` (exact marginal, R&W Alg. 2.1),
        :class:`GPClassifier` (probit or logistic, F&G eq. 3), :class:`PoissonGP` (log-Gaussian
        Cox process, M&A Sec. 5), :class:`SparseGP` (any likelihood) and :class:`SparseGPClassifier`
        (Hensman et al. 2015),
        :class:`GPLVMRegressor` (the supervised GPLVM of Gadd et al.) or :class:`LatentGP` (any
        ``Likelihood``, M&A eq. 3; f kept).
    method : a method object (``gb.NUTS(max_tree_depth=8)``, ``gb.PseudoMarginal(n_imp=64)``, ...;
        ``gpbayes.methods``: its fields are its options, its docstring the paper's equation or
        algorithm) or one of the strings ``methods(model)`` (an alias: ``"nuts"`` is ``gb.NUTS()``;
        ``options`` then set its fields, e.g. ``approximation="ep"``, ``n_imp=64``).
    chains, draws, n_warmup : MCMC chains and their lengths (``draws`` default 1000; with the
        default method or ``until_converged``, the most draws per chain); the ``n_warmup`` warm-up
        iterations (default 500) tune the sampler and are discarded (their cost is in
        ``sample_stats`` as ``warmup_n_cubic``); for pseudo-marginal MH they are F&G's adaptive
        phase.  ``warmup`` and the pseudo-marginal option ``n_adapt`` are deprecated names
        (a DeprecationWarning).
    seed : chain c uses the c-th child of ``numpy.random.SeedSequence(seed)`` (independent
        streams).  Default None: a fresh seed from the operating system's entropy
        (:func:`fresh_seed`), so two runs differ, as in PyMC and NumPyro; every run records its
        seed in ``idata.attrs["seed"]`` (and each group's ``attrs``), and ``gb.sample(model, ..., seed=idata.attrs["seed"])`` repeats
        it.  A ``numpy.random.SeedSequence`` with an integer entropy routes the seed through a
        keyed stream: chain c then uses ``SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key,
        c))`` (``gpbayes.rng.stream(entropy, *keys, c)`` for ``seed =
        gpbayes.rng.seed_sequence(entropy, *keys)``; an int seed is the empty key), recorded as
        ``attrs["seed"]`` and ``attrs["seed_spawn_key"]``.
        The same seed gives the same chains bit for bit on the same machine with the
        same BLAS (and thread count); another machine or BLAS build can differ in the last bits
        of floating-point rounding, after which the chains diverge.
    until_converged : stop when converged instead of after ``draws``: True, a dict of
        ``gpbayes.mcmc.runner.StopRule`` fields (``rhat`` 1.01, ``ess_bulk`` 400 summed over
        chains, ``check_every`` 100, budgets ``max_draws`` (default ``draws``), ``max_cubic``
        O(n^3) operations, ``max_seconds``) or a StopRule; the chains advance together in
        blocks and stop when split rank R-hat < rhat and bulk ESS > ess_bulk on every
        hyperparameter, or a budget is spent (``posterior.attrs``/``sample_stats.attrs["stopped"]``
        says which).  For the methods of the one chain runner (``Method.stoppable``: the MCMC
        methods of the exact marginal, pseudo-marginal MH, AA/SURR, the slice representations,
        sparse joint HMC/Gibbs, the GPLVM sampler; not importance sampling or point estimates).
    budget : what a run until converged may spend at most: draws per chain (an int), or a dict
        with keys ``draws`` (per chain), ``seconds`` (wall time) and ``cubic`` (O(n^3) operations
        over all chains) -- the budgets of ``StopRule``.  For the default method (default
        :data:`DEFAULT_BUDGET_DRAWS` draws) or with ``until_converged``; otherwise an error.
    progress : default None or True: on a terminal or in a Jupyter notebook a ``tqdm.auto`` bar
        over all chains, warm-up included, that stays when the run ends (divergences after the
        warm-up in its postfix); with stderr redirected (a log file, a pipe) a line on stderr every 10 s
        (:data:`PROGRESS_INTERVAL`): iterations done of the total, warm-up included, divergences
        after the warm-up, elapsed seconds -- and a last line at the end (with True always, by default once a line
        was written: a run of a few seconds prints nothing).  False: none; or a
        ``gpbayes.mcmc.runner.Progress``.  With chains in processes the bar and lines show every
        chain's count (``Progress.advance``).
    cores : worker processes for the chains (default None: the cores available to this
        process, at most ``chains``; 1 runs them here, one after the other).  For the methods
        whose chains are independent (``Method.independent_chains``: every MCMC method of
        ``methods(model)``); importance sampling and point estimates run in this process.  Each worker runs one BLAS
        thread and gets its chain's generator in the state the sequential run gives it, so the
        draws are those of ``cores=1`` (bit for bit under the library's thread policy, i.e. below
        ``gpbayes.threads.CROSSOVER_N`` rows with no thread variable set); with
        ``until_converged`` the workers advance block by block and this process decides when to
        stop.  Workers are started with the ``forkserver`` (else ``spawn``) context and without
        the main module, so a script needs no ``__main__`` guard; a model or method using
        classes defined in the main script or a notebook runs in this process (a warning).
        ``attrs["cores"]`` records the number of processes used.
    posterior_predictive, log_likelihood : add the groups ``posterior_predictive``
        (draws of y, :func:`gpbayes.predictive.sample_posterior_predictive`, seeded by ``seed``)
        and ``log_likelihood`` (for ``az.loo``, :func:`gpbayes.predictive.compute_log_likelihood`);
        O(n^3) per distinct draw each.  For a GPClassifier or PoissonGP both need the latent f
        per draw: with no method given, either makes the default a method that keeps f
        (:func:`gpbayes.methods.default_method` with ``keep_latent``); of the explicit methods,
        ``"nuts-whitened"`` keeps f, ``"slice-<rep>"``, ``"aa"`` and ``"surr"`` with
        ``keep_latent=True``, and ``"pseudo-marginal"``, ``"nuts-is"``, ``"pm-amis"``,
        ``"ep-ml"`` do not.
    init : where each chain starts, instead of the method's own start (default None).  An array
        (chains, p) of psi, one row per chain (p = ``len(model.hyperparameter_labels)``, in their
        order; psi = the log-hyperparameters ``unconstrained_posterior`` holds); or a dict of such arrays: ``"psi"``
        and, for AA/SURR and the slice representations (``LatentGibbs``, ``SliceSampler``), the
        latent values ``"f"`` (chains, n), for the sparse samplers (``JointHMC``, ``SparseGibbs``)
        the whitened inducing values ``"v"`` (chains, M, C); or a callable ``c -> start`` of
        chain c (an array (p,) of psi or a dict of one chain's parts).  The parts not given are
        drawn from the chain's generator as without ``init`` (f_0 ~ N(0, K(psi_0)); v_0 ~ q(v));
        the given ones draw nothing.  For the MCMC methods (``Method.init_components`` lists the
        parts each takes); a wrong name, shape or a non-finite value stops with the expected
        shape.  Recorded in the attributes as ``init`` (JSON: psi per chain and the parts given).
        With ``seed``, a reproduction's chain whose start comes from a stream of its own is then
        ``gb.sample``'s bit for bit (``tests/test_reproduction_equals_library.py``).
    **options : with a string ``method``, the fields of its method object (listed below);
        with a method object, none (set its fields instead).  An unknown name stops with the
        method's option names; a bad value with the field and its allowed range; a PyMC or
        NumPyro name (``tune``, ``num_warmup``, ``random_seed``, ``progressbar``, ``num_samples``,
        ``num_chains``, ...: :data:`PEER_NAMES`) with a TypeError naming gpbayes' own.

    Returns
    -------
    arviz.InferenceData (on ArviZ 1.x an xarray.DataTree, the same groups) with groups ``posterior`` (one variable per
    hyperparameter on its natural scale: ``lengthscale`` over ``feature``,
    ``signal_variance``, ``noise_variance``, ...; ``model.hyperparameters``),
    ``unconstrained_posterior`` (the same variables, psi = log theta), ``sample_stats`` (``lp``,
    ``acceptance_rate``, ``n_cubic`` O(n^3) operations per draw,
    ``wall_time``, tuned ``step_size``, ...), ``constant_data`` (the
    standardised X over ``(obs, feature)``) and ``observed_data`` (y over
    ``obs``); importance-sampling methods give resampled, equally weighted
    draws in ``posterior`` and the weighted sample (``importance_psi``,
    ``log_weight``, ``weight``) in ``sample_stats``; point estimates give one draw.
    The attributes record the model, ``method`` (its string), ``method_class`` and
    ``options`` (every field of the method object, defaults included, as JSON); the top-level
    ``attrs["gpbayes_model"]`` carries the model itself (``gpbayes.model_spec``: a versioned JSON
    spec of its kernel, mean, likelihood, prior, standardisation and column names, with the data
    in ``constant_data`` / ``observed_data``), so that ``gb.predict(idata, X_new)`` and
    ``gb.sample_posterior_predictive(idata, X_new=...)`` need no model, also after
    ``idata.to_netcdf`` and ``az.from_netcdf`` in another process.

    Notes
    -----
    Every option of every method is a field of its method object (``gpbayes.methods``;
    each class's docstring says what each field does, with the paper's equation), with
    these defaults (alias in brackets):

    {method defaults}

    Warnings, at most one of each kind per run: a :class:`NotConvergedWarning` after every MCMC run
    (``Method.stoppable``, explicit or default method) whose split R-hat or bulk ESS misses the stop
    rule (``runner.StopRule``: R-hat < 1.01, bulk ESS > 400; the weighted estimator's for ``nuts-is``),
    with the worst values; one ``gpbayes.approx.ConvergenceWarning`` summarising the Laplace/EP fits
    that failed during the run (``sample_stats["n_not_converged"]`` per draw,
    ``warmup_n_not_converged`` per chain; each fit is counted there, not printed).  Importance
    samplers (AMIS, MAMIS, PM-AMIS) are judged by their weights instead (``summary``'s
    ``ess_importance``); point estimates by nothing.

    Ctrl-C stops sampling and returns the draws made so far (the chains and common length
    keeping the most draws, as PyMC does) with ``attrs["interrupted"] = 1`` and a warning; for
    every MCMC method (``runner.Interrupted``).  Importance sampling and point estimates, and
    an interrupt before the first kept draw, end with KeyboardInterrupt.
    """
    if not isinstance(model, _MODELS):
        raise TypeError(f"model must be one of {[t.__name__ for t in _MODELS]}, got {type(model).__name__}")
    options = dict(options)
    _check_peer_names(options)
    n_warmup = inference.deprecated_warmup(options, n_warmup, warmup)
    n_warmup = 500 if n_warmup is None else n_warmup
    reason = None
    if method is None:  # the default: the method the benchmarks show fastest to converge, run until converged
        if options:
            raise ValueError(f"options {sorted(options)} belong to a method: name it (method='...', see "
                             f"gb.methods(model)) or pass a method object; gb.sample(model) chooses one itself")
        # a latent f is kept when the groups asked for need it (log_likelihood for az.loo, posterior_predictive)
        method, reason = inference.default_method(model, keep_latent=bool(log_likelihood or posterior_predictive))
        if until_converged is None:
            until_converged = True
        if draws is None and budget is None and until_converged is not False:
            draws = DEFAULT_BUDGET_DRAWS  # the most draws per chain of the run until converged
    draws = 1000 if draws is None else draws
    if isinstance(method, str) and method in inference.registry():
        cls, _ = inference.registry()[method]
        if not isinstance(model, cls.models):
            raise ValueError(f"method {method!r} does not apply to {type(model).__name__}; "
                             f"choose one of {methods(model)}")
    meth = inference.resolve(method, options)
    meth.check(model)
    chains = _count("chains", chains, 1)
    starts = None if init is None else inference.chain_starts(meth, model, init, chains)
    if starts is not None:
        meth = meth.starting_at(starts)
    draws = _count("draws", draws, 1)
    n_warmup = _count("n_warmup", n_warmup, 0)
    seed = fresh_seed() if seed is None else seed
    spawn_key: tuple[int, ...] = ()
    if isinstance(seed, np.random.SeedSequence):  # a keyed stream (gpbayes.rng.seed_sequence)
        if not isinstance(seed.entropy, (int, np.integer)):
            raise ValueError(f"seed: a numpy.random.SeedSequence needs an integer entropy, got {seed.entropy!r}")
        seed, spawn_key = int(seed.entropy), tuple(int(k) for k in seed.spawn_key)
    seed = _count("seed", seed, 0, what="None (fresh entropy) or a non-negative integer (the entropy of "
                                         "numpy.random.SeedSequence), or a numpy.random.SeedSequence")
    stop = _stop_rule(until_converged, draws, budget)
    if reason is not None:
        plan = (f"until split R-hat < {stop.rhat:g} and bulk ESS > {stop.ess_bulk:g} on every hyperparameter, "
                f"within {_describe(stop)} (budget=...)" if stop is not None else f"for {draws} draws per chain")
        warnings.warn(f"gb.sample: no method given; running {meth.label!r} {plan}. Why {meth.label!r}: {reason}",
                      inference.DefaultMethodWarning, stacklevel=2)
    if stop is not None and getattr(meth, "log_weight_stat", None) and stop.weights is None:
        stop = dataclasses.replace(stop, weights=meth.log_weight_stat)  # weighted draws: the corrected ESS
    if stop is not None and not meth.stoppable:
        stoppable = [a for a, (cls, _) in inference.registry().items() if cls.stoppable]
        raise ValueError(f"until_converged is available for the methods {stoppable}, not {meth.label!r}")
    n_cores = parallel.resolve_cores(cores, chains)
    in_processes = n_cores > 1 and meth.independent_chains
    if in_processes:
        why = parallel.needs_main(meth, model)
        if why is not None:
            in_processes = False
            warnings.warn(f"gb.sample: the chains run in this process (cores=1): {why}; define such classes in an "
                          "importable module to run the chains in parallel", RuntimeWarning, stacklevel=2)
    # chain c: the child (*spawn_key, c) of the seed -- SeedSequence(seed).spawn(chains)[c] for an int seed
    rngs = [np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(*spawn_key, c))) for c in range(chains)]
    attrs = {**model._attrs(), "method": meth.label, "method_class": type(meth).__name__, "seed": int(seed),
             "options": meth.to_json(), "n_warmup": int(n_warmup), "cores": n_cores if in_processes else 1}
    if spawn_key:
        attrs["seed_spawn_key"] = list(spawn_key)
    if starts is not None:  # the given starts: psi per chain, and which parts were given
        attrs["init"] = json.dumps({"psi": [s["psi"].tolist() for s in starts], "parts": sorted(starts[0])})
    if reason is not None:
        attrs.update({"method_default": 1, "method_reason": reason})
    bar = _progress(progress, chains, n_warmup)
    interrupted = False
    try:
        try:
            # the library's BLAS thread policy (gpbayes.threads): one thread for the n x n work of
            # small and medium n unless the user set a thread variable
            # every Laplace/EP fit that fails is tallied per draw and summarised once below, not printed
            with threads.sampling_threads(getattr(model, "n", None)), approx.failures_counted():
                if in_processes:  # gpbayes.parallel: the same chains, each worker on one BLAS thread
                    result = parallel.run_chains_in_processes(meth, model, rngs, n_draws=draws, n_warmup=n_warmup,
                                                              cores=n_cores, progress=bar, stop=stop)
                else:
                    result = meth.run(model, rngs, n_draws=draws, n_warmup=n_warmup, callback=bar, stop=stop)
        except runner.Interrupted as err:
            result, message = _kept(err.chains)
            if not result:
                raise KeyboardInterrupt(f"sampling interrupted: {message}") from None
            warnings.warn(f"sampling interrupted (Ctrl-C): {message}", RuntimeWarning, stacklevel=2)
            interrupted = True
    finally:
        if bar is not None and not isinstance(progress, Progress):
            bar.close()
    if interrupted:
        attrs["interrupted"] = 1
    groups = meth.to_groups(model, result, rngs, attrs)
    if getattr(model, "mean", None) is not None:
        # the mean's coefficients given each posterior draw (gpbayes.means), from a stream apart from the chains'
        stream = np.random.SeedSequence(int(seed)).spawn(chains + 1)[-1]
        mean_functions.add_to_posterior(model, groups, np.random.default_rng(stream))
    for g in ("posterior", "sample_stats"):
        if interrupted and g in groups:
            groups[g].attrs["interrupted"] = 1
    # the seed also at the top level (idata.attrs): gb.sample(..., seed=idata.attrs["seed"]) repeats the run
    # the model travels with the result: gb.predict(idata, X_new) rebuilds it (gpbayes.model_spec; no pickle)
    carried = model_spec.attach(model, groups)
    idata = make_idata(groups, {"seed": int(seed), **carried})  # InferenceData on ArviZ 0.x, DataTree on 1.x
    _warn_if_approximations_failed(idata)
    if meth.stoppable and not interrupted:
        _warn_if_not_converged(idata, stop)
    if _weighted_draws(idata) and not interrupted:
        _warn_if_weights_uneven(idata)
    if log_likelihood:
        compute_log_likelihood(model, idata)
    if posterior_predictive:
        sample_posterior_predictive(model, idata, seed=seed)
    return idata


sample.__doc__ = sample.__doc__.replace("    {method defaults}\n", inference.defaults_doc(indent=4))


def _describe(stop: runner.StopRule) -> str:
    parts = [f"{stop.max_draws:,} draws per chain"]
    if np.isfinite(stop.max_seconds):
        parts.append(f"{stop.max_seconds:g} s")
    if np.isfinite(stop.max_cubic):
        parts.append(f"{stop.max_cubic:g} O(n^3) operations")
    return " or ".join(parts)


class NotConvergedWarning(RuntimeWarning):
    """An MCMC run of ``gb.sample`` ended with split R-hat or bulk ESS short of the stop rule
    (``runner.StopRule``: R-hat < 1.01 and bulk ESS > 400 on every hyperparameter)."""


def convergence_diagnostics(idata) -> tuple[float, float]:
    """(max split rank R-hat, min bulk ESS) over the hyperparameters of an MCMC result, as the stop
    rule judges them (``runner.StopRule``): for importance-corrected draws (``nuts-is``) the weighted
    estimator's (``diagnostics.importance_corrected_summary``)."""
    from . import diagnostics

    psi = psi_draws(idata).values
    if _weighted_draws(idata):  # importance-corrected draws: the weighted estimator's ESS
        summ = diagnostics.importance_corrected_summary(psi, group(idata, "sample_stats")["log_weight"].values)
        return float(np.max(summ["rhat"])), float(np.min(summ["ess_bulk"]))
    rhat = max(diagnostics.split_rhat(psi[:, :, j], rank_normalize=True) for j in range(psi.shape[2]))
    ess = min(diagnostics.ess(psi[:, :, j], method="bulk") for j in range(psi.shape[2]))
    return float(rhat), float(ess)


def _warn_if_not_converged(idata, stop: runner.StopRule | None) -> None:
    """An MCMC run (any method) whose R-hat or bulk ESS misses the stop rule (``stop``, else the default
    ``runner.StopRule()``): one :class:`NotConvergedWarning` with the worst values and what to do."""
    if not has_group(idata, "unconstrained_posterior"):
        return
    stopped = str(group(idata, "sample_stats").attrs.get("stopped", ""))
    if stopped == "converged":
        return
    rule = stop if stop is not None else runner.StopRule()
    n_chains, n_draws = (group(idata, "posterior").sizes[d] for d in ("chain", "draw"))
    if n_draws < 4:  # split R-hat needs two halves of at least two draws
        rhat, ess = math.nan, math.nan
    else:
        with np.errstate(all="ignore"):
            rhat, ess = convergence_diagnostics(idata)
    if rhat < rule.rhat and ess > rule.ess_bulk:
        return
    found = f"max R-hat {rhat:.3f} (target < {rule.rhat:g}), min bulk ESS {ess:.0f} (target > {rule.ess_bulk:g})"
    if stop is not None:  # a run until converged that spent its budget
        advice = "raise budget=... or choose a method (gb.methods(model))"
        head = f"not converged within the budget ({stopped or 'stopped'})"
    else:
        advice = (f"estimates from these {n_chains} x {n_draws} draws are unreliable; run longer (draws=...) or "
                  "until_converged=True")
        head = "the chains have not converged"
    warnings.warn(f"gb.sample: {head}: {found}; {advice}", NotConvergedWarning, stacklevel=3)


def _warn_if_approximations_failed(idata) -> None:
    """One ``ConvergenceWarning`` for the whole run when Laplace/EP fits failed (diverged or stopped at
    their iteration limit): how many, in kept draws and in warm-up, where they are counted and what they
    mean.  Each fit was tallied (``sample_stats["n_not_converged"]``), not printed."""
    if not has_group(idata, "sample_stats"):
        return
    ss = group(idata, "sample_stats")
    kept = int(ss["n_not_converged"].sum()) if "n_not_converged" in ss else 0
    draws_hit = int((ss["n_not_converged"] > 0).sum()) if "n_not_converged" in ss else 0
    warm = int(ss["warmup_n_not_converged"].sum()) if "warmup_n_not_converged" in ss else 0
    if kept + warm == 0:
        return
    n_kept = int(ss.sizes.get("chain", 1) * ss.sizes.get("draw", 1))
    warnings.warn(f"gb.sample: {kept + warm:,} Laplace/EP fit(s) failed during the run (diverged or stopped at "
                  f"their iteration limit): {kept:,} in {draws_hit:,} of the {n_kept:,} kept draws, {warm:,} in "
                  "warm-up (sample_stats['n_not_converged'] per draw, 'warmup_n_not_converged' per chain). Where "
                  "a sampler needed the fit's value or gradient the point was refused (zero density: the chain "
                  "avoids it); where the fit only served as an importance density the estimate stays unbiased. "
                  "Failures in a small share of the kept draws are harmless; many mean the chains may miss part "
                  "of the posterior (often extreme hyperparameters: see gb.summary)",
                  approx.ConvergenceWarning, stacklevel=3)


#: Below this Kish efficiency of the importance weights (or above Pareto k 0.7) ``gb.sample`` suggests
#: ``gb.WhitenedNUTS``: a heuristic between two measured break-even efficiencies, 0.075 on Pima ARD and
#: 0.36 on Ionosphere ARD (docs/performance.md, "nuts-is or nuts-whitened").
LOW_IMPORTANCE_EFFICIENCY = 0.2


def _warn_if_weights_uneven(idata) -> None:
    """Importance-corrected draws (``nuts-is``) whose weights keep little of the chain's information:
    say so, with Kish's efficiency and the Pareto k, and name the unweighted exact alternative."""
    from . import diagnostics

    lw = group(idata, "sample_stats")["log_weight"].values
    if np.sum(np.isfinite(lw)) < 10:
        return
    summ = diagnostics.importance_corrected_summary(psi_draws(idata).values[:, :, :1], lw)
    eff, k = summ["importance_efficiency"], summ["pareto_k"]
    # k^ from a short run's tail (under 200 draws), or an infinite k^ (ArviZ's "tail not estimable"), says little
    tail_known = np.isfinite(k) and np.sum(np.isfinite(lw)) >= 200
    if eff < LOW_IMPORTANCE_EFFICIENCY or (tail_known and k > 0.7):
        warnings.warn(f"gb.sample: the importance weights keep {eff:.0%} of the draws' information (Kish's "
                      f"efficiency; Pareto k {k:.2f}, reliable below 0.7): the Gaussian approximation is a poor "
                      "importance density here. gb.WhitenedNUTS() samples the exact posterior without weights "
                      "(on Ionosphere ARD, efficiency 0.105, it was 3.4x faster; docs/performance.md)",
                      RuntimeWarning, stacklevel=3)


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
    sizes = group(idata, "posterior").sizes
    if sizes["draw"] * sizes["chain"] == 1:  # a point estimate
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = az.summary(idata, var_names=names, kind="stats")
        return table[["mean"]].rename(columns={"mean": "estimate"})
    ss = group(idata, "sample_stats")
    if _weighted_draws(idata):
        table = _weighted_summary(idata, names)
    else:
        table = az.summary(idata, var_names=names, **kwargs)
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


def _weighted_draws(idata) -> bool:
    """The posterior draws carry importance weights per draw (``sample_stats["log_weight"]`` over
    (chain, draw): ``ISCorrectedNUTS``), as opposed to an importance sample resampled into them (AMIS,
    whose ``log_weight`` runs over ``importance_sample``)."""
    ss = group(idata, "sample_stats")
    return "log_weight" in ss and tuple(ss["log_weight"].dims) == ("chain", "draw")


def _weighted_summary(idata, names):
    """``summary``'s table for importance-corrected draws (``sample_stats["log_weight"]``,
    ``gpbayes.mcmc.is_corrected``): weighted mean and sd of theta = exp(psi), weighted 3 % and 97 %
    quantiles (equal-tailed, ``q_3%``/``q_97%``), the Monte Carlo error and bulk/mean ESS of the
    weighted estimator (``diagnostics.importance_corrected_summary``), the chain's R-hat, Kish's
    ``importance_efficiency`` and the weights' Pareto ``pareto_k`` (> 0.7: the weighted estimates are
    unreliable, Vehtari et al. 2024); the unweighted chain's own columns (tail ESS, MCSE of the sd) are dropped."""
    from . import diagnostics

    stacked = stack_hyperparameters(group(idata, "posterior")[names])  # one column per entry: lengthscale[age], ...
    theta, names = stacked.values, [str(p) for p in stacked["param"].values]
    lw = group(idata, "sample_stats")["log_weight"].values
    summ = diagnostics.importance_corrected_summary(theta, lw)
    w = np.exp(lw - np.max(lw)).ravel()
    w /= w.sum()
    flat = theta.reshape(-1, theta.shape[-1])
    qs = np.empty((len(names), 2))
    for j in range(len(names)):
        order = np.argsort(flat[:, j])
        cdf = np.cumsum(w[order])
        qs[j] = [flat[order, j][min(int(np.searchsorted(cdf, p)), cdf.size - 1)] for p in (0.03, 0.97)]
    columns = {"mean": summ["mean"], "sd": summ["sd"], "q_3%": qs[:, 0], "q_97%": qs[:, 1],
               "mcse_mean": summ["mcse_mean"], "ess_bulk": summ["ess_bulk"], "ess_mean": summ["ess_mean"],
               "r_hat": summ["rhat"], "importance_efficiency": np.full(len(names), summ["importance_efficiency"]),
               "pareto_k": np.full(len(names), summ["pareto_k"])}
    # a DataFrame as az.summary's, indexed by the hyperparameter names (xarray builds it)
    table = xr.Dataset({c: ("param", v) for c, v in columns.items()}, coords={"param": names}).to_dataframe()
    table.index.name = None
    return table


def hyperparameter_names(idata) -> list[str]:
    """The hyperparameters of a ``gpbayes.sample`` result, in the model's order (the variables of
    ``unconstrained_posterior``: ``lengthscale`` over ``feature``, ``signal_variance``, ...;
    ``posterior`` holds them on the natural scale theta = exp(psi), a LatentGP's ``mean_constant`` as
    sampled; ``psi_draws`` stacks their entries)."""
    return [str(v) for v in group(idata, "unconstrained_posterior").data_vars]


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


def predict(model=None, idata=None, X_new=None, *, y_new=None, max_draws: int = 200, seed: int = 0) -> xr.Dataset:
    """Posterior predictive at ``X_new``, averaged over (up to ``max_draws``) posterior draws.

    ``gb.predict(idata, X_new)``: the model is rebuilt from the result, which carries it
    (``gpbayes.model_spec``: ``attrs["gpbayes_model"]``, also after ``idata.to_netcdf`` and
    ``az.from_netcdf`` in another process); ``gb.predict(model, idata, X_new)`` uses the model
    given, which must be the one the result was sampled from (a ValueError names what differs:
    class, kernel, likelihood, hyperparameters, n, training data).  A DataFrame ``X_new`` of a
    model fitted on a DataFrame is matched by column name (reordered as the training columns; a
    missing or unknown name is refused).

    For a new y: ``y_mean``/``y_variance`` (the predictive moments of y),
    ``y_lower``/``y_upper`` (central 95 % interval, regression) and, given
    the targets ``y_new``, ``log_predictive_density`` per point: log of the
    mixture over draws of p(y_new | x_new, theta) (labels as given to the
    model; its sum is ``attrs["lpd"]``).

    GPLVMRegressor: mean and standard deviation per output of Gadd et al.'s
    eq. 7 mixture over posterior draws (psi, Z) (with z* from eq. 8).
    GPRegressor: mean and standard deviation of f(x_*) and a 95 % interval
    for a new y (mixture of the exact GP predictives, R&W eqs. 2.25-2.26),
    on the original scale of y; with a mean function (``mean=``, ``gpbayes.means``) they include it
    and its uncertainty (R&W eq. 2.41).  GPClassifier: probability of the positive
    class, F&G eq. 8 (EP predictive at each draw) averaged over draws when the
    likelihood's default approximation is EP (the probit); otherwise the
    Laplace latent predictive and the likelihood's expectation under it
    (``predictive_mean``: Gauss-Hermite for the logistic).
    PoissonGP: posterior mean rate per unit exposure exp(f_* + m) from the
    Laplace latent predictive at each draw (mean of the log-normal).
    LatentGP: the latent predictive at each draw from its kept f (R&W eq. 2.19 with the noise-free
    K: f_* | f ~ N(K_*^T K^-1 f, k_** - K_*^T K^-1 K_*)) -- ``f_mean``, ``f_sd``, a 95 % interval
    ``f_lower``/``f_upper`` of f_* -- and ``y_mean`` the draws' average of the likelihood's
    ``predictive_mean`` (:func:`gpbayes.predictive.latent_gp_predict`).
    SparseGPClassifier: the class probabilities E[p(y_* | f_*)] under p(f_* | u = L v_s, theta_s)
    (Hensman et al. 2015; Gauss-Hermite, or robust-max's ``predict_proba``) averaged over draws
    (v_s, psi_s); a SparseGP with another likelihood: that latent predictive per draw, reported as
    for a LatentGP (:func:`gpbayes.predictive.latent_mixture_predict`).
    """
    model, idata, X_new = model_spec.resolve(model, idata, X_new, "gb.predict")
    max_draws = _count("max_draws", max_draws, 1, what="an integer >= 1 (posterior draws averaged over)")
    rng = np.random.default_rng(seed)
    Xs = model.transform(X_new)
    check_names(model, idata, "gb.predict")
    if isinstance(model, LatentGP):
        return predictive.latent_gp_predict(model, idata, Xs, y_new=y_new, max_draws=max_draws, rng=rng)
    psi = _draw_matrix(idata, max_draws, rng)
    if isinstance(model, GPRegressor):
        means, variances = zip(*(model.gp.predict(p, Xs) for p in psi))
        # + H_* b: a mean's prior mean (model.gp models y - H b; R&W eq. 2.41 through the kernel of eq. 2.40)
        means, variances = np.array(means) + model.prior_mean_at(Xs), np.array(variances)
        noise = np.exp(psi[:, -1])[:, None] if model.gp.noise is None else _known_new_noise(model, len(psi))
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

        if "Z" in group(idata, "posterior"):
            grp = group(idata, "posterior")
            Z = grp["Z"].values.reshape(-1, *grp["Z"].shape[2:])
            all_psi = psi_draws(idata).values.reshape(Z.shape[0], -1)
            pick = np.sort(rng.choice(Z.shape[0], size=min(max_draws, Z.shape[0]), replace=False))
            mix = gpm.predictive_mixture(rng, model.gplvm, all_psi[pick], Z[pick], Xs)
        else:  # the ML point estimate: Z ~ q(Z)
            mix = gpm.ml_predictive_mixture(rng, model.gplvm, model.ml_fit.psi, model.ml_fit.params, Xs,
                                            n_samples=max_draws)
        mean = mix.mean.mean(axis=0)  # (n_test, k_y)
        var = (mix.var[:, :, None] + mix.mean**2).mean(axis=0) - mean**2
        out = xr.Dataset({"mean": (("point", "output"), mean * model.y_scale + model.y_shift),
                          "sd": (("point", "output"), np.sqrt(np.maximum(var, 0.0)) * model.y_scale)},
                         attrs={"note": "moments of the eq. 7 mixture (which can be multimodal, Gadd et al. Fig. 2)"})
        return predictive.y_level_gaussian(out, mix.mean * model.y_scale + model.y_shift,
                                           mix.var[:, :, None] * model.y_scale**2, y_new)
    if isinstance(model, SparseGP):
        from .sparse.target import predict_class_probabilities, predict_latent_draws

        grp = group(idata, "posterior")
        v = grp["v"].values.reshape(-1, *grp["v"].shape[2:])
        all_psi = psi_draws(idata).values.reshape(v.shape[0], -1)
        pick = np.sort(rng.choice(v.shape[0], size=min(max_draws, v.shape[0]), replace=False))
        if not isinstance(model, SparseGPClassifier) and not hasattr(model.likelihood, "predict_proba"):
            # any likelihood: the latent predictive p(f_* | u = L v_s, theta_s) per draw, then the likelihood's
            # predictive mean and density, as for a LatentGP
            from .sparse.target import draw_likelihoods

            means, variances = predict_latent_draws(model.target, v[pick], all_psi[pick], Xs)
            # a sampled Gaussian noise (SparseGP(sample_noise=True)): each draw's y_* has its own noise variance
            return predictive.latent_mixture_predict(model.likelihood, model.y, means[..., 0], variances, rng, y_new,
                                                     draw_likelihoods=draw_likelihoods(model.target, all_psi[pick]))
        classes = model.classes if model.classes is not None else tuple(range(model.likelihood.n_latent))
        p = predict_class_probabilities(model.target, v[pick], all_psi[pick], Xs).mean(axis=0)
        if p.ndim == 2:  # robust-max: (point, class)
            return predictive.y_level_classes(xr.Dataset({"probability": (("point", "class"), p)},
                                                         coords={"class": [str(c) for c in classes]}),
                                              classes, y_new)
        return predictive.y_level_classes(xr.Dataset({"probability": ("point", p)},
                                                     attrs={"positive_class": str(classes[1])}),
                                          classes, y_new)
    if isinstance(model, GPClassifier):
        if model.likelihood.approximations[0] == "ep":
            p = mcmc_predictive(model.X, model.y, Xs, model.kernel, psi, approx="ep", likelihood=model.likelihood)
        else:
            p = _laplace_predictive(model, psi, Xs)
        return predictive.y_level_classes(xr.Dataset({"probability": ("point", np.asarray(p))},
                                                     attrs={"positive_class": str(model.classes[1])}),
                                          model.classes, y_new)
    from .approx.laplace import laplace_approximation

    rates, latent = [], []
    for p in psi:
        # R&W Alg. 3.2 (GaussianApproximation.latent_predictive), then the likelihood's predictive mean
        a = laplace_approximation(model.kernel(p, model.X), model.y, model.likelihood)
        mean, var = a.latent_predictive(model.kernel(p, model.X, Xs), model.kernel.diag(p, Xs))
        rates.append(model.likelihood.predictive_mean(mean, var))
        latent.append((mean + model.offset, np.maximum(var, 0.0)))
    return predictive.y_level_counts(xr.Dataset({"rate": ("point", np.mean(rates, axis=0))}), latent, y_new)
