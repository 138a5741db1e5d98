"""Inference methods as objects: each method's options, their defaults and checks, in one place.

::

    import gpbayes as gb
    idata = gb.sample(model, method=gb.NUTS(max_tree_depth=8), chains=4, draws=1000)
    idata = gb.sample(model, method="nuts", max_tree_depth=8)        # the same: a string is an alias

One frozen dataclass per method.  Its fields are the method's options with
their defaults, checked in ``__post_init__`` (a bad value stops with a
message naming the field and the allowed range).  A method object knows the
models it applies to (:meth:`Method.why_not`) and how to run on one
(:meth:`Method.run`); a method of the one chain runner only builds a chain
specification per chain (:meth:`Method.chain_specs`), so ``until_converged``,
progress, seeds and Ctrl-C behave the same for all of them.

Adding a method is a subclass of :class:`Method` (its module plus this
object): the class statement registers its ``aliases`` (the strings
``gb.sample`` accepts), nothing in ``gpbayes.api`` changes.

Defaults: a field backed by a library function has that function's default
(``library`` names the function per field; ``tests/test_methods.py`` compares
them through ``inspect.signature``).  A field whose default is the API's own
says why in ``own_defaults``.

Warm-up: every method's warm-up length is ``gb.sample``'s ``n_warmup``
(burn-in of random-walk MH and slice sampling, dual-averaging of HMC/NUTS,
F&G's adaptive phase of pseudo-marginal MH, Stan's windows of joint HMC,
the burn-in of the GPLVM sampler).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import xarray as xr

from . import amis as amis_mod
from . import io, linalg
from .mcmc import hyper_slice, runner
from .mcmc.runner import Chain
from .models import GPClassifier, GPLVMRegressor, GPRegressor, PoissonGP, SparseGPClassifier

__all__ = ["Method", "RandomWalkMH", "HMC", "NUTS", "Slice", "AMIS", "MAMIS", "AMISToMAMIS", "TypeIIML",
           "PseudoMarginal", "ISCorrectedNUTS", "PMAMIS", "LatentGibbs", "SliceSampler", "EPML", "JointHMC", "SparseGibbs",
           "GPLVMPseudoMarginal", "resolve", "methods", "registry", "default_method", "DefaultMethodWarning",
           "MAX_PSEUDO_MARGINAL_HYPERPARAMETERS", "MAX_RANDOM_WALK_HYPERPARAMETERS"]

#: alias -> (method class, the fields the alias fixes), filled by ``Method.__init_subclass__``
_ALIASES: dict[str, tuple[type, dict]] = {}


def registry() -> dict[str, tuple[type, dict]]:
    """A copy of the alias table: ``{alias: (method class, fields the alias fixes)}``."""
    return dict(_ALIASES)


# ---------------------------------------------------------------------------
# checks of one field (messages name the field and the allowed values)
# ---------------------------------------------------------------------------
def _name(obj, field: str) -> str:
    return f"{type(obj).__name__}.{field}"


def _int(obj, field: str, minimum: int = 1, *, optional: bool = False) -> None:
    v = getattr(obj, field)
    if optional and v is None:
        return
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        allowed = f"an integer >= {minimum}" + (" or None" if optional else "")
        raise ValueError(f"{_name(obj, field)} must be {allowed}, got {v!r}")
    object.__setattr__(obj, field, int(v))


def _float(obj, field: str, low: float = -math.inf, high: float = math.inf, *, open_low: bool = True,
           open_high: bool = True, optional: bool = False) -> None:
    v = getattr(obj, field)
    if optional and v is None:
        return
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))
    if ok:
        x = float(v)
        ok = (x > low if open_low else x >= low) and (x < high if open_high else x <= high)
    if not ok:
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ValueError(f"{_name(obj, field)} must be a number in {lo}{low:g}, {high:g}{hi}"
                         + (" or None" if optional else "") + f", got {v!r}")
    object.__setattr__(obj, field, float(v))


def _choice(obj, field: str, allowed: Sequence, *, optional: bool = False) -> None:
    v = getattr(obj, field)
    if optional and v is None:
        return
    if v not in allowed:
        raise ValueError(f"{_name(obj, field)} must be one of {list(allowed)}" + (" or None" if optional else "")
                         + f", got {v!r}")


def _bool(obj, field: str) -> None:
    v = getattr(obj, field)
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{_name(obj, field)} must be True or False, got {v!r}")
    object.__setattr__(obj, field, bool(v))


def _matrix(obj, field: str) -> None:
    """A square matrix given as an array: stored as a tuple of tuples (frozen, comparable, JSON-able)."""
    v = getattr(obj, field)
    if v is None:
        return
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.all(np.isfinite(a)):
        raise ValueError(f"{_name(obj, field)} must be a finite square matrix or None, got shape {a.shape}")
    object.__setattr__(obj, field, tuple(tuple(float(x) for x in row) for row in a))


def _json_value(v):
    if isinstance(v, tuple):
        return [_json_value(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return repr(v)


# ---------------------------------------------------------------------------
# the base class
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Method:
    """An inference method of ``gb.sample``: its options (the fields) and how it runs.

    Class attributes a method sets:

    * ``aliases`` ``{string: {field: value}}``: the strings ``gb.sample``
      accepts for it and the fields each fixes (``{"aa": {"representation": "aa"}}``);
    * ``models``: the model classes it applies to (``why_not`` may refuse more);
    * ``stoppable``: runs under ``until_converged`` (a method of the chain runner);
    * ``independent_chains``: chain c's draws depend only on generator c once :meth:`prepare`
      has run, so ``gb.sample(..., cores=k)`` may run the chains in separate processes
      (``gpbayes.parallel``) with the draws of the sequential run (default False: in-process);
    * ``library``: ``{field: function}``, the library function whose keyword
      of the same name holds the field's default (``library_names`` maps a
      field to another keyword name); ``own_defaults``: ``{field: reason}``
      for defaults that belong to the API.

    A method of the chain runner implements :meth:`chain_specs`; others
    override :meth:`run` (and :meth:`to_groups` when the result is not a list
    of chains).
    """

    aliases: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    models: ClassVar[tuple[type, ...]] = ()
    stoppable: ClassVar[bool] = False
    independent_chains: ClassVar[bool] = False
    library: ClassVar[Mapping[str, Callable]] = {}
    library_names: ClassVar[Mapping[str, str]] = {}
    own_defaults: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, register: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        if not register:
            return
        for alias, fixed in cls.__dict__.get("aliases", {}).items():
            if alias in _ALIASES and _ALIASES[alias][0].__qualname__ != cls.__qualname__:
                raise ValueError(f"method alias {alias!r} is taken by {_ALIASES[alias][0].__name__}")
            _ALIASES[alias] = (cls, dict(fixed))

    # -- identity -----------------------------------------------------------------------------
    @property
    def label(self) -> str:
        """The alias this object equals (``"aa"``, ``"slice-surr-site"``), else the class name."""
        for alias, fixed in type(self).__dict__.get("aliases", {}).items():
            if all(getattr(self, k) == v for k, v in fixed.items()):
                return alias
        return type(self).__name__

    def fields(self) -> dict:
        """Every field with its value (defaults included)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_json(self) -> str:
        """The method object as JSON: ``{"class": ..., "fields": {...}}`` (every field, defaults included)."""
        return json.dumps({"class": type(self).__name__,
                           "fields": {k: _json_value(v) for k, v in self.fields().items()}}, sort_keys=True)

    # -- applicability ------------------------------------------------------------------------
    def why_not(self, model) -> str | None:
        """Why this method does not apply to ``model`` (None when it does)."""
        if not isinstance(model, self.models):
            return f"method {self.label!r} does not apply to {type(model).__name__}"
        return None

    def check(self, model) -> None:
        """Stop with a message naming the model and the methods that apply when ``why_not`` says so."""
        reason = self.why_not(model)
        if reason is not None:
            raise ValueError(f"{reason}; choose one of {methods(model)}")

    # -- running ------------------------------------------------------------------------------
    def prepare(self, model, rngs: Sequence[np.random.Generator], n_warmup: int):
        """What the chains share, computed once before any chain runs, drawing from the generators as
        the sequential run does (e.g. the MAP of the exact marginal from chain 0's generator); with
        ``cores > 1`` it runs in the calling process and travels (pickled) to the workers, which pass
        it to ``chain_specs(..., prepared=...)``.  Default: nothing to share (None; the workers then
        call :meth:`run` with their own generators)."""
        return None

    def chain_specs(self, model, rngs: Sequence[np.random.Generator], n_warmup: int) -> list[runner.ChainSpec]:
        """One ``runner.ChainSpec`` per chain (methods of the chain runner)."""
        raise NotImplementedError(f"{type(self).__name__} is not a method of the chain runner")

    def run(self, model, rngs, *, n_draws: int, n_warmup: int, callback=None, stop=None):
        """Run on ``model``: by default the chain specifications through the one runner.

        Chains run one after the other (``runner.run_spec``), or together in
        blocks under ``stop`` (``runner.run_specs``).  Ctrl-C raises
        ``runner.Interrupted`` carrying the draws of every chain so far.
        """
        return run_specs(rngs, self.chain_specs(model, rngs, n_warmup), n_draws=n_draws, callback=callback, stop=stop)

    def to_groups(self, model, result, rngs, attrs: dict) -> dict[str, xr.Dataset]:
        """The ArviZ groups of ``run``'s result (a list of chains by default)."""
        return posterior_groups(model, result, attrs)


def run_specs(rngs, specs, *, n_draws: int, callback=None, stop=None) -> list[Chain]:
    """The chains of ``specs``: one after the other (``runner.run_spec``), or together in blocks under
    ``stop`` (``runner.run_specs``); either way each chain's draws depend only on its generator."""
    if stop is not None:
        return runner.run_specs(rngs, specs, stop=stop, callback=callback)
    return run_sequentially([lambda r=r, s=s: runner.run_spec(r, s, n_draws=n_draws, callback=callback)
                             for r, s in zip(rngs, specs)])


def run_sequentially(jobs: Sequence[Callable[[], Chain]]) -> list[Chain]:
    """Run the chains one after the other; on Ctrl-C raise ``runner.Interrupted`` with every chain so far
    (the finished ones and the partial one)."""
    done: list[Chain] = []
    for job in jobs:
        try:
            done.append(job())
        except runner.Interrupted as err:
            raise runner.Interrupted(done + list(err.chains)) from None
        except KeyboardInterrupt:
            raise runner.Interrupted(done) from None
    return done


# ---------------------------------------------------------------------------
# the ArviZ groups
# ---------------------------------------------------------------------------
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


def posterior_groups(model, chains: list[Chain], attrs: dict) -> dict[str, xr.Dataset]:
    """The ArviZ groups of MCMC chains (or a point estimate): ``posterior``, ``unconstrained_posterior``,
    ``sample_stats`` (per-draw statistics; per chain the tuning and warm-up cost), ``constant_data``,
    ``observed_data``."""
    groups = io.to_inference_groups(chains, var_name="psi", coords={"param": model.hyperparameter_names},
                                    attrs=attrs, per_chain_tuning=True)
    kept = groups["posterior"]
    groups.update(_hyperparameter_groups(model, kept["psi"].values, attrs))
    for name, dims in _LATENT_DIMS.items():
        if name in kept:
            groups["posterior"][name] = (("chain", "draw", *dims), kept[name].values)
    groups.update(_data_groups(model))
    return groups


def weighted_groups(model, res: amis_mod.AMISResult, rng, n_resample: int, attrs: dict):
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


def _point(psi, lp) -> list[Chain]:
    return [Chain(draws=np.asarray(psi)[None, :], stats={"lp": np.array([lp])}, warmup={}, params={}, state=None)]


# ---------------------------------------------------------------------------
# GP regression: the exact marginal posterior
# ---------------------------------------------------------------------------
def _mode_and_cov(model: GPRegressor, rng):
    """MAP by L-BFGS and (-H)^-1 there (finite differences of the analytic gradient)."""
    from .finite_differences import hessian_from_gradients
    from .posterior import log_posterior_value_and_grad
    from .regression import fit_type2_ml

    fit = fit_type2_ml(model.gp, rng, n_restarts=2, log_prior=model.prior)
    vg = log_posterior_value_and_grad(model.gp, model.prior)
    H = hessian_from_gradients(lambda p: vg(p)[1], fit.psi)
    return fit, linalg.inverse_of_negative_definite(H)


class _ExactMarginal(Method, register=False):
    """A sampler of the exact GP-regression posterior: each chain starts at a draw of N(MAP, (-H)^-1)."""

    models: ClassVar = (GPRegressor,)
    stoppable: ClassVar = True
    independent_chains: ClassVar = True

    def prepare(self, model, rngs, n_warmup):
        """The MAP psi and (-H)^-1 there (:func:`_mode_and_cov`, from chain 0's generator), shared by
        the chains' starting points and kernels."""
        fit, cov = _mode_and_cov(model, rngs[0])
        return np.asarray(fit.psi), cov

    def chain_specs(self, model, rngs, n_warmup, prepared=None):
        """Per chain, the sampler's specification started at a draw of N(MAP, (-H)^-1) from the chain's
        generator; ``prepared`` is :meth:`prepare`'s result (None: computed here first)."""
        from .posterior import log_posterior, log_posterior_value_and_grad

        mode, cov = self.prepare(model, rngs, n_warmup) if prepared is None else prepared
        logp = log_posterior(model.gp, model.prior)
        vg = log_posterior_value_and_grad(model.gp, model.prior)
        specs = []
        for r in rngs:
            start = r.multivariate_normal(mode, cov)  # over-dispersed starts: draws of the Gaussian at the mode
            specs.append(self._spec(start, logp, vg, cov, n_warmup, r))
        return specs

    def _spec(self, start, logp, vg, cov, n_warmup, rng) -> runner.ChainSpec:
        raise NotImplementedError


def _da_checks(obj) -> None:
    _float(obj, "target_accept", 0.0, 1.0, optional=True)
    _float(obj, "gamma", 0.0)
    _float(obj, "t0", 0.0, open_low=False, optional=True)
    _float(obj, "kappa", 0.5, 1.0, open_high=False)
    for field, allowed in (("adaptation", ("windowed", "step_size")),
                           ("mass_adaptation", ("diagonal", "dense", "none"))):
        if hasattr(obj, field):
            _choice(obj, field, allowed)


def _lazy(module: str, name: str) -> Callable:
    """The library function ``module.name`` (imported when the defaults test asks)."""

    def get():
        import importlib

        return getattr(importlib.import_module(f"gpbayes.{module}"), name)

    return get


@dataclasses.dataclass(frozen=True)
class RandomWalkMH(_ExactMarginal):
    """Adaptive random-walk Metropolis on the exact marginal posterior (F&G Alg. 1 with the exact
    p(y | theta), R&W Alg. 2.1): proposal s^2 Sigma from Sigma = (-H)^-1 at the MAP; during the
    ``n_warmup`` burn-in s is tuned by Robbins-Monro towards ``target_accept`` and Sigma re-estimated
    (Haario et al.) when ``adapt_covariance``; then frozen.  ``initial_scale`` s_0 (None: 2.38 / sqrt(p)).

    Parameters
    ----------
    target_accept : float, default 0.25
        Acceptance rate the proposal scale s is tuned towards in warm-up (Robbins-Monro).
    initial_scale : float or None, default None
        The first s; None: 2.38 / sqrt(p), p the number of hyperparameters.
    adapt_covariance : bool, default True
        Re-estimate Sigma from the warm-up draws (Haario et al.); False keeps (-H)^-1.
    """

    target_accept: float = 0.25
    initial_scale: float | None = None
    adapt_covariance: bool = True

    aliases: ClassVar = {"rwmh": {}}
    library: ClassVar = {f: _lazy("mcmc.random_walk", "chain_spec")
                         for f in ("target_accept", "initial_scale", "adapt_covariance")}

    def __post_init__(self):
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "initial_scale", 0.0, optional=True)
        _bool(self, "adapt_covariance")

    def _spec(self, start, logp, vg, cov, n_warmup, rng):
        from .mcmc import random_walk

        return random_walk.chain_spec(rng, start, lambda x, _r: logp(x), cov, n_burn=n_warmup, **self.fields())


@dataclasses.dataclass(frozen=True)
class HMC(_ExactMarginal):
    """HMC (Neal 2011) with at most ``max_steps`` leapfrog steps, started with M^-1 = (-H)^-1 at the
    MAP; warm-up as Stan and NumPyro do it (``adaptation="windowed"``: dual averaging of eps, H&G 2014
    Alg. 5, towards ``target_accept``, and M^-1 from the draws of Stan's slow windows, diagonal by
    default), or dual averaging of eps alone (``adaptation="step_size"``, Xiong et al.'s HMC).

    Parameters
    ----------
    step_size : float or None, default None
        The first step size eps of dual averaging; None: H&G Alg. 4's heuristic.  With
        ``n_warmup=0`` it is used as given (and must be set).
    max_steps : int, default 10
        Each transition takes L ~ U{1, ..., max_steps} leapfrog steps (Neal 2011, Sec. 5.4.2).
    adaptation : {"windowed", "step_size"}, default "windowed"
        Stan's windowed warm-up (step size and mass matrix), or the step size only.
    mass_adaptation : {"diagonal", "dense", "none"}, default "diagonal"
        What the windowed warm-up estimates of M^-1 (``"none"``: keeps the starting (-H)^-1).
    target_accept : float or None, default None
        H&G's delta, the mean acceptance statistic dual averaging aims at; None: 0.8 with the
        windowed warm-up (Stan, NumPyro), 0.65 with the step size only (H&G).
    gamma, t0, kappa : float, default 0.05, None, 0.75
        Dual-averaging constants of H&G Alg. 5 (shrinkage, iteration offset -- None: 10 windowed,
        as Stan, 30 otherwise, as H&G -- and decay exponent).
    """

    step_size: float | None = None
    max_steps: int = 10
    adaptation: str = "windowed"
    mass_adaptation: str = "diagonal"
    target_accept: float | None = None
    gamma: float = 0.05
    t0: float | None = None
    kappa: float = 0.75

    aliases: ClassVar = {"hmc": {}}
    library: ClassVar = {f: _lazy("mcmc.hmc", "chain_spec")
                         for f in ("step_size", "max_steps", "adaptation", "mass_adaptation", "target_accept",
                                   "gamma", "t0", "kappa")}

    def __post_init__(self):
        _float(self, "step_size", 0.0, optional=True)
        _int(self, "max_steps", 1)
        _da_checks(self)

    def _spec(self, start, logp, vg, cov, n_warmup, rng):
        from .mcmc import hmc

        return hmc.chain_spec(start, vg, hmc.mass_matrix("dense", cov), n_tune=n_warmup, **self.fields())


@dataclasses.dataclass(frozen=True)
class NUTS(_ExactMarginal):
    """The No-U-Turn sampler (Hoffman & Gelman 2014) as Stan and NumPyro run it by default
    (``variant="multinomial"``: multinomial sampling of the trajectory with Stan's extra U-turn
    checks; ``"slice"``: H&G's Alg. 3/6), trees of depth at most ``max_tree_depth``, started with
    M^-1 = (-H)^-1 at the MAP; warm-up ``adaptation="windowed"`` (dual averaging of the step size,
    H&G Alg. 5, towards ``target_accept``, and M^-1 from the draws of Stan's slow windows) or
    ``"step_size"`` (dual averaging only, H&G Alg. 6 as Xiong et al. run it); with
    ``n_warmup = 0``, the fixed ``step_size``.

    Parameters
    ----------
    max_tree_depth : int, default 10
        At most 2^max_tree_depth leapfrog steps per transition (the doubling stops there).
    step_size : float or None, default None
        The first step size of dual averaging; None: H&G Alg. 4's heuristic.  Required
        with ``n_warmup=0`` (then used as given).
    variant : {"multinomial", "slice"}, default "multinomial"
        Stan's/NumPyro's multinomial NUTS, or H&G's slice variant.
    adaptation : {"windowed", "step_size"}, default "windowed"
        Stan's windowed warm-up (step size and mass matrix), or the step size only.
    mass_adaptation : {"diagonal", "dense", "none"}, default "diagonal"
        What the windowed warm-up estimates of M^-1 (``"none"``: keeps the starting (-H)^-1).
    target_accept : float or None, default None
        H&G's delta; None: 0.8 with the windowed warm-up (Stan, NumPyro), 0.65 otherwise (H&G).
    gamma, t0, kappa : float, default 0.05, None, 0.75
        Dual-averaging constants of H&G Alg. 5 (t0 None: 10 windowed, as Stan; 30 otherwise).
    """

    max_tree_depth: int = 10
    step_size: float | None = None
    variant: str = "multinomial"
    adaptation: str = "windowed"
    mass_adaptation: str = "diagonal"
    target_accept: float | None = None
    gamma: float = 0.05
    t0: float | None = None
    kappa: float = 0.75

    aliases: ClassVar = {"nuts": {}}
    library: ClassVar = {f: _lazy("mcmc.nuts", "chain_spec")
                         for f in ("max_tree_depth", "variant", "adaptation", "mass_adaptation", "target_accept",
                                   "gamma", "t0", "kappa")}
    own_defaults: ClassVar = {"step_size": "None: H&G's Alg. 4 heuristic (nuts.chain_spec's default is Xiong et "
                                           "al.'s constant, a paper setting)"}

    def __post_init__(self):
        _int(self, "max_tree_depth", 1)
        _float(self, "step_size", 0.0, optional=True)
        _choice(self, "variant", ("multinomial", "slice"))
        _da_checks(self)

    def _spec(self, start, logp, vg, cov, n_warmup, rng):
        from .mcmc import hmc, nuts

        if n_warmup == 0 and self.step_size is None:
            raise ValueError("NUTS with n_warmup=0 has nothing to tune the step size: give NUTS(step_size=...)")
        return nuts.chain_spec(start, vg, hmc.mass_matrix("dense", cov), n_adapt=n_warmup, **self.fields())


@dataclasses.dataclass(frozen=True)
class Slice(_ExactMarginal):
    """Slice sampling (Neal 2003) of the exact marginal posterior: ``"componentwise"`` univariate
    updates (Sec. 4, in ``order`` ``"fixed"`` or ``"random"``, stepping out at most ``step_out``
    times, 0 none, inf unlimited) or the ``"hyperrectangle"`` update (Sec. 5.1); widths w =
    ``width`` (None: 2 sd of (-H)^-1 at the MAP per coordinate).  The ``n_warmup`` draws are
    discarded (nothing to tune).  For latent-variable models see :class:`SliceSampler`.

    Parameters
    ----------
    width : float or None, default None
        Initial bracket width w per coordinate; None: 2 posterior standard deviations of
        (-H)^-1 at the MAP.
    step_out : int or inf, default 0
        Neal's m: at most this many step-out expansions per side (0: none, inf: unlimited).
    scheme : {"componentwise", "hyperrectangle"}, default "componentwise"
        Univariate updates of each coordinate (Neal Sec. 4) or one hyper-rectangle update (Sec. 5.1).
    order : {"fixed", "random"}, default "fixed"
        The order of the coordinates in a componentwise sweep.
    """

    width: float | None = None
    step_out: float = 0
    scheme: str = "componentwise"
    order: str = "fixed"

    aliases: ClassVar = {"slice": {}}
    library: ClassVar = {f: _lazy("mcmc.slice", "step") for f in ("step_out", "scheme", "order")}
    own_defaults: ClassVar = {"width": "data-dependent: None means 2 posterior sd per coordinate at the MAP"}

    def __post_init__(self):
        _float(self, "width", 0.0, optional=True)
        v = self.step_out
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (v >= 0) or (
                math.isfinite(v) and v != int(v)):
            raise ValueError(f"{_name(self, 'step_out')} must be an integer >= 0 or inf, got {v!r}")
        _choice(self, "scheme", ("componentwise", "hyperrectangle"))
        _choice(self, "order", ("fixed", "random"))

    def _spec(self, start, logp, vg, cov, n_warmup, rng):
        from .mcmc import slice as slice_mod

        opts = self.fields()
        width = opts.pop("width")
        width = 2.0 * np.sqrt(np.diag(cov)) if width is None else width
        return slice_mod.chain_spec(start, lambda x: logp(x), width, n_burn=n_warmup, **opts)


@dataclasses.dataclass(frozen=True)
class TypeIIML(Method):
    """Type-II maximum likelihood, a point estimate (one "draw"): for GPRegressor the log marginal
    (R&W Alg. 2.1, eq. 5.8) maximised by L-BFGS from ``n_restarts`` starts; for GPLVMRegressor
    the model's fitted variational bound (Gadd et al. Alg. 1).

    Parameters
    ----------
    n_restarts : int, default 3
        L-BFGS starts for GPRegressor (the best is kept); unused for GPLVMRegressor.
    """

    n_restarts: int = 3

    aliases: ClassVar = {"type2-ml": {}}
    models: ClassVar = (GPRegressor, GPLVMRegressor)
    own_defaults: ClassVar = {"n_restarts": "3 restarts (regression.fit_type2_ml's default is 5) keeps the "
                                            "quick point estimate quick; the GPLVM's fit is made with the model"}

    def __post_init__(self):
        _int(self, "n_restarts", 1)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """The point estimate as one chain of one draw: L-BFGS on the log marginal (R&W eq. 5.8) for
        GPRegressor, the model's fitted variational bound (``GPLVMRegressor.ml_fit``) for the GPLVM."""
        if isinstance(model, GPLVMRegressor):
            return _point(model.ml_fit.psi, model.ml_fit.bound)
        from .regression import fit_type2_ml

        fit = fit_type2_ml(model.gp, rngs[0], n_restarts=self.n_restarts)
        return _point(fit.psi, fit.log_marginal)



# ---------------------------------------------------------------------------
# importance sampling: AMIS and its variants (Xiong et al.)
# ---------------------------------------------------------------------------
_COVARIANCES = ("full", "diag")
#: why ``n_resample``'s default belongs to the API (no library function has the field)
_N_RESAMPLE_REASON = "the number of draws resampled into posterior (equally weighted), an API output"


class _Weighted(Method, register=False):
    """An importance sample (one weighted "chain"): ``posterior`` holds ``n_resample`` draws resampled
    in proportion to the weights (equally weighted), ``sample_stats`` the weighted sample
    (``importance_psi``, ``log_weight``, ``weight``; :func:`weighted_groups`)."""

    def to_groups(self, model, result, rngs, attrs):
        return weighted_groups(model, result, rngs[0], self.n_resample, attrs)


    def _target(self, model, rng):
        from .posterior import log_posterior

        fit, cov = _mode_and_cov(model, rng)
        return amis_mod.exact(log_posterior(model.gp, model.prior)), fit.psi, cov

    def _check_common(self):
        _choice(self, "covariance", _COVARIANCES)
        _int(self, "n_resample", 1)


@dataclasses.dataclass(frozen=True)
class AMIS(_Weighted):
    """AMIS (Xiong et al. Alg. 1; Cornuet et al. 2012): ``n_iterations`` iterations of
    ``n_per_iteration`` draws, every past draw re-weighted against the deterministic mixture of all
    proposals, the Gaussian proposal moment-matched (``covariance`` ``"full"`` or ``"diag"``) to the
    weighted sample; q_0 = N(MAP, (-H)^-1).

    Parameters
    ----------
    n_iterations : int, default 100
        Adaptation iterations T.
    n_per_iteration : int, default 50
        Draws per iteration N (T N draws, each costing one O(n^3) marginal likelihood).
    covariance : {"full", "diag"}, default "full"
        The moment-matched proposal covariance: full or diagonal.
    n_resample : int, default 1000
        Draws resampled in proportion to the weights into ``posterior``.
    """

    n_iterations: int = 100
    n_per_iteration: int = 50
    covariance: str = "full"
    n_resample: int = 1000

    aliases: ClassVar = {"amis": {}}
    models: ClassVar = (GPRegressor,)
    library: ClassVar = {f: _lazy("amis", "amis") for f in ("n_iterations", "n_per_iteration", "covariance")}
    own_defaults: ClassVar = {"n_resample": _N_RESAMPLE_REASON}

    def __post_init__(self):
        _int(self, "n_iterations", 1)
        _int(self, "n_per_iteration", 1)
        self._check_common()

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """Xiong et al. Alg. 1 on the exact log posterior from q_0 = N(MAP, (-H)^-1): ``amis.amis``."""
        logt, mean0, cov = self._target(model, rngs[0])
        return amis_mod.amis(rngs[0], logt, mean0, cov, n_iterations=self.n_iterations,
                             n_per_iteration=self.n_per_iteration, covariance=self.covariance)


@dataclasses.dataclass(frozen=True)
class MAMIS(_Weighted):
    """MAMIS (Xiong et al. Alg. 2; Marin et al. 2019): iteration t draws N_t = ``base`` + ``slope`` t
    samples (t = 1..``n_iterations``), weighted against the current proposal only, which is
    moment-matched to them; q_0 = N(MAP, (-H)^-1).  The default slope 20 is the library's
    (``amis.mamis_sample_sizes``); Xiong et al.'s Table 3 uses 26 (RBF), which the reproduction
    passes explicitly.

    Parameters
    ----------
    n_iterations : int, default 30
        Iterations T.
    base, slope : int, default 0, 20
        Iteration t draws N_t = base + slope t samples.
    covariance : {"full", "diag"}, default "full"
        The moment-matched proposal covariance: full or diagonal.
    n_resample : int, default 1000
        Draws resampled in proportion to the weights into ``posterior``.
    """

    n_iterations: int = 30
    base: int = 0
    slope: int = 20
    covariance: str = "full"
    n_resample: int = 1000

    aliases: ClassVar = {"mamis": {}}
    models: ClassVar = (GPRegressor,)
    library: ClassVar = {"n_iterations": _lazy("amis", "mamis_sample_sizes"),
                         "base": _lazy("amis", "mamis_sample_sizes"), "slope": _lazy("amis", "mamis_sample_sizes"),
                         "covariance": _lazy("amis", "mamis")}
    own_defaults: ClassVar = {"n_resample": _N_RESAMPLE_REASON}

    def __post_init__(self):
        _int(self, "n_iterations", 1)
        _int(self, "base", 0)
        _int(self, "slope", 0)
        if self.base + self.slope < 1:
            raise ValueError(f"MAMIS needs N_1 = base + slope >= 1 draws, got base={self.base}, slope={self.slope}")
        self._check_common()

    def sizes(self) -> list[int]:
        """N_t = base + slope t, t = 1..n_iterations (``amis.mamis_sample_sizes``)."""
        return amis_mod.mamis_sample_sizes(self.n_iterations, base=self.base, slope=self.slope)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """Xiong et al. Alg. 2 with the sample sizes :meth:`sizes` from q_0 = N(MAP, (-H)^-1): ``amis.mamis``."""
        logt, mean0, cov = self._target(model, rngs[0])
        return amis_mod.mamis(rngs[0], logt, mean0, cov, self.sizes(), covariance=self.covariance)


@dataclasses.dataclass(frozen=True)
class AMISToMAMIS(MAMIS):
    """AMIS for tuning (``n_tuning_samples`` draws, ``n_per_iteration_amis`` per iteration), then MAMIS
    from AMIS's last proposal (Xiong et al. Sec. 4.4, Table 5); the result is MAMIS's, its costs
    include the tuning (``tuning_n_cubic``).

    Parameters
    ----------
    n_iterations, base, slope, covariance, n_resample
        As for :class:`MAMIS` (the MAMIS phase): default 30, 0, 20, "full", 1000.
    n_tuning_samples : int, default 1000
        Draws of the AMIS tuning phase.
    n_per_iteration_amis : int, default 50
        Draws per AMIS iteration.
    """

    n_tuning_samples: int = 1000
    n_per_iteration_amis: int = 50

    aliases: ClassVar = {"amis-mamis": {}}
    library: ClassVar = {**MAMIS.library, "n_tuning_samples": _lazy("amis", "amis_then_mamis"),
                         "n_per_iteration_amis": _lazy("amis", "amis_then_mamis")}

    def __post_init__(self):
        super().__post_init__()
        _int(self, "n_tuning_samples", 1)
        _int(self, "n_per_iteration_amis", 1)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """AMIS tuning, then MAMIS from its last proposal (Xiong et al. Table 5): ``amis.amis_then_mamis``."""
        logt, mean0, cov = self._target(model, rngs[0])
        return amis_mod.amis_then_mamis(rngs[0], logt, mean0, cov, n_tuning_samples=self.n_tuning_samples,
                                        n_per_iteration_amis=self.n_per_iteration_amis, mamis_sizes=self.sizes(),
                                        covariance=self.covariance)[0]


# ---------------------------------------------------------------------------
# latent-Gaussian models: pseudo-marginal, Gibbs, slice representations, EP-ML
# ---------------------------------------------------------------------------
_APPROXIMATIONS = ("laplace", "ep")


def _approximation_problem(model, approx: str) -> str | None:
    offered = model.likelihood.approximations  # the likelihood protocol (gpbayes.likelihoods)
    if approx not in offered:
        return (f"{type(model).__name__} with the {model.likelihood.name} likelihood: approximation {approx!r} "
                f"is not offered (EP is implemented for the probit and the likelihoods that list it); use one of "
                f"{list(offered)}")
    return None


def _pm_target(model, approx: str, n_imp: int):
    from .estimators.importance import PseudoMarginalTarget

    return PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior, approx=approx,
                                n_imp=n_imp)


def _estimator_problem(model, approx: str | None) -> str | None:
    """Why F&G's importance estimator (eq. 25) cannot serve ``model`` with the Gaussian ``approx``: a
    PoissonGP with per-bin exposure (the estimator takes a scalar exposure), or an approximation the
    likelihood does not offer (None: not checked).  None when it can."""
    if isinstance(model, PoissonGP) and np.ndim(model.likelihood.exposure) > 0:
        return ("PoissonGP with per-bin exposure: the importance estimator takes a scalar exposure; "
                "use method 'aa', 'surr' or 'slice-<representation>'")
    return None if approx is None else _approximation_problem(model, approx)


def _check_option_first(method: Method, model) -> None:
    """A model the method applies to with an option it does not allow: the option's message alone."""
    reason = method.why_not(model)
    if reason is not None and isinstance(model, method.models):
        raise ValueError(reason)
    Method.check(method, model)


class _Latent(Method, register=False):
    """A method of the latent-Gaussian models (GPClassifier, PoissonGP): chains start at the kernel's
    initial psi plus N(0, 0.1^2) noise."""

    models: ClassVar = (GPClassifier, PoissonGP)

    @staticmethod
    def _psi0(model, rng):
        psi_init = model.kernel.initial_psi(model.X)
        return psi_init + 0.1 * rng.standard_normal(psi_init.size)

    @staticmethod
    def _f0(model, psi0, rng):
        K = model.kernel(psi0, model.X)
        return linalg.cholesky(K, name="K(psi0)", count=False) @ rng.standard_normal(model.n)

    def _lgm(self, model):
        from .representations import LatentGaussianModel

        return LatentGaussianModel(model.kernel, model.X, model.likelihood, model.y, model.prior)


@dataclasses.dataclass(frozen=True)
class PseudoMarginal(_Latent):
    """Pseudo-marginal MH as Filippone & Girolami run it (Sec. 4.4, Alg. 1): an adaptive phase of
    ``n_warmup`` iterations of MH on the deterministic approximate posterior (``adapt_on``: the
    Laplace marginal, R&W eq. 3.32, or log Z_EP) tuning the proposal towards ``target_accept``
    (starting at ``proposal_cov``, None: 0.1 I, scale ``initial_scale``, covariance re-estimated when
    ``adapt_covariance``), then frozen PM-MH on the unbiased importance estimate of p(y | theta)
    (eq. 25) with ``n_imp`` draws from the ``approximation`` (``"laplace"`` or ``"ep"``, the probit's).

    Parameters
    ----------
    approximation : {"laplace", "ep"}, default "laplace"
        The Gaussian approximation of p(f | y, theta) used as importance density in the
        estimate of eq. 25 (EP where the likelihood offers it: the probit).
    n_imp : int or "auto", default 64
        Importance draws per estimate (F&G's N_imp).  ``"auto"``: chosen per chain after its adaptive
        phase by ``gpbayes.estimators.importance.choose_n_imp`` (noise-aware: the smallest N_imp whose
        predicted sd of log p~ is Doucet, Pitt, Deligiannidis & Kohn's (2015) 1.2, measured from 32
        repeated estimates at the mode of the deterministic approximate posterior -- climbed to from
        the adaptive phase's end point -- first with 64 draws, then once more at the choice; with
        ``rho > 0`` the noise of the log-ratio between the mode and one proposal from it, under the
        Crank-Nicolson move, held at sqrt(2) x 1.2), bounded by 1 and 4096.
        The measurement draws from the chain's own generator, so chains stay reproducible and
        independent of ``cores``.  Recorded per chain in the params (``sample_stats`` variables
        ``tuned_n_imp``, ``tuned_n_imp_sd_log_estimate``, ``tuned_n_imp_sd_log_ratio``,
        ``tuned_n_imp_pilot_sd``, ``tuned_n_imp_rounds``, ``tuned_n_imp_time``, ``tuned_n_imp_n_cubic``,
        ``tuned_n_imp_at_mode``, ``tuned_n_imp_ratio_at_proposal``, ``tuned_n_imp_c_ratio``: far from
        1, the c / N law the choice extrapolates by did not hold; the point measured at is
        ``n_imp_psi`` in the chain's params).
        Measured on a 13-feature ARD probit problem (``benchmarks/bench_sticking.py``), ``"auto"``
        chose 5-10 draws and the chains stuck more than with 64: there the sd of log p~ (N_imp 64)
        was 0.41 at the mode but 1.1 where the chain stuck, and 0.37 with N_imp 256 at the mode (not
        the 0.21 of c / N); correlated moves (``rho = 0.9``) helped, a larger N_imp did not.
    proposal_cov : (p, p) array or None, default None
        The starting proposal covariance of the adaptive phase; None: 0.1 I.
    target_accept : float, default 0.25
        Acceptance rate the adaptive phase tunes the proposal scale towards (F&G: 20-30 %).
    adapt_on : {"laplace", "ep"}, default "laplace"
        The deterministic approximate posterior the adaptive phase runs on (F&G: Laplace).
    initial_scale : float or None, default None
        The proposal's first scale; None: 2.38 / sqrt(p).
    adapt_covariance : bool, default True
        Re-estimate the proposal covariance during the adaptive phase (when p > 1).
    rho : float in [0, 1), default 0.0
        Correlated pseudo-marginal MH (Deligiannidis, Doucet & Pitt 2018): the standard normals
        behind the importance draws are part of the state and move by a Crank-Nicolson step
        with correlation ``rho``; 0 is F&G's Alg. 1 (fresh normals at every proposal).
    """

    approximation: str = "laplace"
    n_imp: Any = 64
    proposal_cov: Any = None
    target_accept: float = 0.25
    adapt_on: str = "laplace"
    initial_scale: float | None = None
    adapt_covariance: bool = True
    rho: float = 0.0

    aliases: ClassVar = {"pseudo-marginal": {}}
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    #: the pilot N_imp of ``n_imp="auto"`` (``choose_n_imp``'s first round): F&G's N_imp
    n_imp_pilot: ClassVar[int] = 64
    library: ClassVar = {f: _lazy("mcmc.pseudo_marginal", "run_chain")
                         for f in ("target_accept", "adapt_on", "initial_scale", "adapt_covariance", "rho")}
    own_defaults: ClassVar = {
        "approximation": "F&G's Laplace importance density; PseudoMarginalTarget's default is the same",
        "n_imp": "F&G's N_imp = 64 (PseudoMarginalTarget's default 1 is the bare estimator); 'auto' is opt-in",
        "proposal_cov": "None means 0.1 I, the starting proposal of the adaptive phase (dimension-dependent)"}

    def __post_init__(self):
        _choice(self, "approximation", _APPROXIMATIONS)
        if self.n_imp != "auto":
            v = self.n_imp
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{_name(self, 'n_imp')} must be an integer >= 1, got {v!r} (or 'auto': "
                                 f"chosen per chain by estimators.importance.choose_n_imp)")
            object.__setattr__(self, "n_imp", int(v))
        _matrix(self, "proposal_cov")
        _float(self, "target_accept", 0.0, 1.0)
        _choice(self, "adapt_on", _APPROXIMATIONS)
        _float(self, "initial_scale", 0.0, optional=True)
        _bool(self, "adapt_covariance")
        _float(self, "rho", 0.0, 1.0, open_low=False)

    def why_not(self, model):
        """Also refused: a PoissonGP with per-bin exposure (the importance estimator takes a scalar),
        and an ``approximation`` the likelihood does not offer (``Likelihood.approximations``)."""
        return super().why_not(model) or _estimator_problem(model, self.approximation)

    def check(self, model):
        """Stop with the option's own message when the model fits but the option does not
        (an approximation the likelihood lacks); otherwise as :meth:`Method.check`."""
        _check_option_first(self, model)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """F&G Sec. 4.4 per chain: ``pseudo_marginal.run_chain`` with no kept draw runs the adaptive
        phase and makes the first importance estimate (the frozen proposal and that state are its
        result); the frozen PM-MH kernels then run as chain specifications of the one runner (so
        ``until_converged`` applies).  Each chain's generator sees the same draws in the same order
        as in one ``pseudo_marginal.run_chain`` call, so the chains are the same."""
        from .mcmc import pseudo_marginal, random_walk

        auto = self.n_imp == "auto"
        preps, specs = [], []
        try:
            for r in rngs:
                psi0 = self._psi0(model, r)
                target = _pm_target(model, self.approximation, self.n_imp_pilot if auto else self.n_imp)
                cov = 0.1 * np.eye(psi0.size) if self.proposal_cov is None else np.array(self.proposal_cov)
                failures0 = getattr(target, "n_failures", 0)
                prep = pseudo_marginal.run_chain(r, target, psi0, n_adapt=n_warmup, n_burn=0, n_draws=0,
                                                 proposal_cov=cov, target_accept=self.target_accept,
                                                 adapt_on=self.adapt_on, initial_scale=self.initial_scale,
                                                 adapt_covariance=self.adapt_covariance, rho=self.rho)
                factor = prep.params["proposal_factor"]
                if auto:
                    prep, target = self._auto_n_imp(model, r, prep, target, factor)
                if isinstance(prep.state, pseudo_marginal.PMState):  # the importance estimator's state
                    kernel = lambda rr, st, t=target, L=factor: pseudo_marginal.step(rr, st, t, L, self.rho)
                else:
                    kernel = lambda rr, st, t=target, L=factor: random_walk.step(rr, st, t, L)
                specs.append(runner.ChainSpec(prep.state, kernel, 0))
                preps.append((prep, target, failures0))
        except KeyboardInterrupt:
            raise runner.Interrupted([]) from None  # in an adaptive phase: no kept draw yet

        def finish(chains):  # the adaptive phase's cost and tuning, as pseudo_marginal.run_chain reports them
            return [dataclasses.replace(c, warmup=p.warmup, params={
                **p.params, "n_failures": int(getattr(t, "n_failures", 0) - f0)}) for c, (p, t, f0) in
                zip(chains, preps)]

        try:
            return finish(run_specs(rngs, specs, n_draws=n_draws, callback=callback, stop=stop))
        except runner.Interrupted as err:
            raise runner.Interrupted(finish(err.chains)) from None

    def _auto_n_imp(self, model, rng, prep, pilot, factor):
        """``n_imp="auto"``: choose N_imp (``choose_n_imp``, from the chain's generator) at the mode of
        the deterministic approximate posterior that the adaptive phase ran on, found by L-BFGS-B
        (finite differences) from the adaptive phase's end point (that end point where the climb
        fails); with rho > 0 against one proposal psi + L z from the mode (against the mode itself where
        the estimate fails there: ``n_imp_ratio_at_proposal`` False).  Phase 2 then starts at the
        end point, as for a fixed N_imp, with a fresh estimate of the chosen size.  Returns
        (prep, target) with the choice in prep's params; the climb's, the measurement's and the
        first estimate's O(n^3) operations are added to the warm-up's."""
        import time

        from scipy import optimize

        from .estimators.importance import choose_n_imp
        from .mcmc import pseudo_marginal

        start = np.asarray(prep.state.position, dtype=np.float64)
        t0, w0 = time.process_time(), time.perf_counter()
        det = pilot.deterministic_log_density(reject_failures=True)

        def objective(x):  # minus the deterministic approximate log posterior; a huge value where it fails
            v = det(x)
            return -v if np.isfinite(v) else 1e300

        with linalg.count_ops() as ops:
            # the approximate posterior's mode, climbed to from the adaptive phase's end point (no draw)
            lp0 = det(start)
            res = optimize.minimize(objective, start, method="L-BFGS-B", options={"maxiter": 100})
            found = bool(np.isfinite(res.fun) and res.fun < 1e300 and -res.fun >= lp0)
            psi = np.asarray(res.x, dtype=np.float64) if found else start
            psi_proposed = psi + factor @ rng.standard_normal(psi.size) if self.rho > 0.0 else None
            try:
                choice = choose_n_imp(pilot, psi, rng, rho=self.rho, psi_proposed=psi_proposed,
                                      n_pilot=self.n_imp_pilot)
            except (ValueError, np.linalg.LinAlgError, FloatingPointError):
                if psi_proposed is None:
                    raise
                # the proposal from the mode is numerically out of reach: the log-ratio at the mode itself
                psi_proposed = None
                choice = choose_n_imp(pilot, psi, rng, rho=self.rho, n_pilot=self.n_imp_pilot)
            target = _pm_target(model, self.approximation, choice.n_imp)
            target.n_failures = pilot.n_failures
            state = pseudo_marginal.init(start, target, rng)
        cpu = time.process_time() - t0
        warmup = {**prep.warmup, "n_cubic": int(prep.warmup.get("n_cubic", 0) + ops.cubic)}
        if "wall_time" in warmup:
            warmup["wall_time"] = float(warmup["wall_time"] + time.perf_counter() - w0)
        params = {**prep.params, "init_log_density": float(state.log_density), "n_imp": int(choice.n_imp),
                  "n_imp_sd_log_estimate": choice.sd_log_estimate, "n_imp_sd_log_ratio": choice.sd_log_ratio,
                  "n_imp_pilot_sd": float(choice.measured[0][1]), "n_imp_rounds": len(choice.measured),
                  "n_imp_c_ratio": choice.c_ratio, "n_imp_time": float(cpu), "n_imp_n_cubic": int(ops.cubic),
                  "n_imp_psi": psi.copy(), "n_imp_at_mode": found,
                  "n_imp_ratio_at_proposal": psi_proposed is not None}
        return dataclasses.replace(prep, state=state, warmup=warmup, params=params), target


@dataclasses.dataclass(frozen=True)
class _LatentNUTS(_Latent, register=False):
    """The NUTS options shared by the gradient-based latent-model methods (``nuts.chain_spec``'s):
    ``max_tree_depth`` (10), ``target_accept`` (None: 0.8) and ``mass_adaptation`` ("diagonal")."""

    max_tree_depth: int = 10
    target_accept: float | None = None
    mass_adaptation: str = "diagonal"

    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {f: _lazy("mcmc.nuts", "chain_spec") for f in ("max_tree_depth", "target_accept",
                                                                       "mass_adaptation")}

    def __post_init__(self):
        _int(self, "max_tree_depth", 1)
        _float(self, "target_accept", 0.0, 1.0, optional=True)
        _choice(self, "mass_adaptation", ("diagonal", "dense"))

    def _nuts_options(self) -> dict:
        return {"max_tree_depth": self.max_tree_depth, "target_accept": self.target_accept,
                "mass_adaptation": self.mass_adaptation}


@dataclasses.dataclass(frozen=True)
class ISCorrectedNUTS(_LatentNUTS):
    """NUTS on an approximate posterior with an importance-sampling correction to the exact one
    (Vihola, Helske & Franks 2020; ``gpbayes.mcmc.is_corrected``): an exact method that uses gradients.

    The chain targets p(psi) q(y | psi), q the ``approximation``'s marginal with its analytic gradient
    (EP: log Z_EP, R&W eq. 5.27; Laplace: R&W eq. 3.32 and Alg. 5.1), by Stan's NUTS and warm-up
    (``gpbayes.mcmc.nuts``); every kept draw carries the log weight log p~(y | psi) - log q(y | psi) of
    one unbiased estimate p~ (F&G eq. 25, ``n_imp`` draws from the same Gaussian approximation), in
    ``sample_stats["log_weight"]``.  Weighted averages are consistent for the exact posterior;
    ``gb.summary`` reports them with their Monte Carlo error and effective sample size
    (``diagnostics.importance_corrected_summary``), and ``until_converged`` judges that ESS.  The
    ``posterior`` group holds the chain's (approximate, unweighted) draws.

    Parameters
    ----------
    n_imp : int, default 64
        Importance draws per weight (F&G's N_imp).
    approximation : {"laplace", "ep"} or None, default None
        The approximate marginal the chain runs on and the importance density of the weights; None:
        EP where the likelihood offers it (the probit), else Laplace.  EP is the closer one for the
        probit (F&G Sec. 2.1.2), which is what keeps the weights even: on Ionosphere ARD (n = 351, 34
        hyperparameters) a chain on the Laplace marginal kept 3 % of its draws' information after
        weighting (Kish), with EP weights, and 0 % with Laplace weights.
    max_tree_depth : int, default 10
        At most 2^max_tree_depth leapfrog steps per transition.
    target_accept : float or None, default None
        Dual-averaging target (None: 0.8, Stan's and NumPyro's).
    mass_adaptation : {"diagonal", "dense"}, default "diagonal"
        What Stan's windowed warm-up estimates of the inverse mass matrix.
    """

    n_imp: int = 64
    approximation: str | None = None

    aliases: ClassVar = {"nuts-is": {}}
    #: the per-draw statistic ``until_converged`` weighs the draws by (``runner.StopRule.weights``)
    log_weight_stat: ClassVar[str] = "log_weight"
    own_defaults: ClassVar = {"n_imp": "F&G's N_imp = 64, as gb.PseudoMarginal (PseudoMarginalTarget's default 1 "
                                       "is the bare estimator)",
                              "approximation": "None: EP where the likelihood offers it, else Laplace (the API's "
                                               "choice of approximate marginal and importance density)"}

    def __post_init__(self):
        super().__post_init__()
        _int(self, "n_imp", 1)
        _choice(self, "approximation", _APPROXIMATIONS, optional=True)

    def why_not(self, model):
        """Also refused: a PoissonGP with per-bin exposure (the importance estimator takes a scalar),
        and an ``approximation`` the likelihood does not offer."""
        return super().why_not(model) or _estimator_problem(model, self.approximation)

    def check(self, model):
        """Stop with the option's own message when the model fits but the option does not."""
        _check_option_first(self, model)

    def importance_density(self, model) -> str:
        """The approximation the chain runs on and the weights use: ``approximation``, or EP where
        offered, else Laplace."""
        if self.approximation is not None:
            return self.approximation
        return "ep" if "ep" in model.likelihood.approximations else "laplace"

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``is_corrected.chain_spec`` from psi_0 = the kernel's initial psi plus N(0, 0.1^2)
        noise, with its own approximate log posterior (and warm start) and importance estimator."""
        from .estimators.importance import PseudoMarginalTarget
        from .mcmc import is_corrected

        if n_warmup == 0:
            raise ValueError("nuts-is needs a warm-up to tune its step size: give n_warmup >= 1")
        approx = self.importance_density(model)
        specs = []
        for r in rngs:
            psi0 = self._psi0(model, r)
            logpost = is_corrected.ApproximateLogPosterior(model.kernel, model.X, model.y, model.likelihood,
                                                           model.prior, approximation=approx)
            est = PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior,
                                       approx=approx, n_imp=self.n_imp, warm_start=True)
            specs.append(is_corrected.chain_spec(psi0, logpost, est, n_adapt=n_warmup, **self._nuts_options()))
        return specs

    def to_groups(self, model, result, rngs, attrs):
        """:func:`posterior_groups`, with the importance density used recorded in the attributes
        (``importance_density``: ``"laplace"`` or ``"ep"``)."""
        return posterior_groups(model, result, {**attrs, "importance_density": self.importance_density(model)})


@dataclasses.dataclass(frozen=True)
class WhitenedNUTS(_LatentNUTS):
    """NUTS on the hyperparameters and the whitened latent values jointly (``gpbayes.mcmc.whitened_nuts``):
    the exact posterior p(psi, v | y) with f = L_psi v (Murray & Adams 2010 eq. 5, the prior-whitened
    representation; the non-centred parameterisation NumPyro and Stan use), no approximation and no
    weights.

    One value and gradient costs 1 Cholesky, 1 triangular inverse and 1 triangular product (the
    Cholesky factor's reverse mode, Murray 2016, with a rank-one adjoint).  The chain moves n + p
    coordinates, so it needs more leapfrog steps per draw than ``nuts-is`` (p coordinates); it
    wins where the importance weights of ``nuts-is`` are uneven (many latent values under a strong
    posterior: Ionosphere ARD, n = 351, 34 hyperparameters).  Each chain starts at psi_0 (the
    kernel's initial psi plus N(0, 0.1^2) noise) and v_0 = L_psi0^-1 f_hat, f_hat the Laplace mode at
    psi_0 (v_0 = 0 where Newton's method fails).  ``posterior["f"]`` holds f = L_psi v per draw.

    Parameters
    ----------
    max_tree_depth : int, default 10
        At most 2^max_tree_depth leapfrog steps per transition.
    target_accept : float or None, default None
        Dual-averaging target (None: 0.8, Stan's and NumPyro's).
    mass_adaptation : {"diagonal", "dense"}, default "diagonal"
        What Stan's windowed warm-up estimates of the inverse mass matrix (n + p coordinates: dense
        costs O((n + p)^2) per leapfrog step).
    """

    aliases: ClassVar = {"nuts-whitened": {}}

    @staticmethod
    def _f_hat(model, psi0) -> np.ndarray:
        """The Laplace mode at psi0 (zeros where Newton's method fails)."""
        from .approx import ConvergenceWarning
        from .approx.laplace import laplace_approximation

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                K = model.kernel(psi0, model.X)
                return np.asarray(laplace_approximation(K, model.y, model.likelihood, targets_checked=True).m)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError):
            return np.zeros(model.n)

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``whitened_nuts.chain_spec`` from [psi_0, L_psi0^-1 f_hat] (the class docstring)."""
        from .mcmc import whitened_nuts

        if n_warmup == 0:
            raise ValueError("nuts-whitened needs a warm-up to tune its step size: give n_warmup >= 1")
        specs = []
        for r in rngs:
            psi0 = self._psi0(model, r)
            target = whitened_nuts.WhitenedJointPosterior(model.kernel, model.X, model.y, model.likelihood,
                                                          model.prior)
            x0 = whitened_nuts.whitened_start(target, psi0, self._f_hat(model, psi0))
            specs.append(whitened_nuts.chain_spec(x0, target, n_adapt=n_warmup, **self._nuts_options()))
        return specs


@dataclasses.dataclass(frozen=True)
class PMAMIS(_Weighted):
    """PM-AMIS (Xiong et al. Sec. 3.1): AMIS on the noisy importance estimate of p(y | theta)
    (F&G eq. 25, ``n_imp`` draws from the ``approximation``; None: EP for the probit, else Laplace),
    ``n_iterations`` x ``n_per_iteration``; q_0 = N(EP type-II MAP, 0.25 I).  The defaults 20 x 100
    are the library's (``amis.pm_amis``), sized for a first run; Xiong et al.'s 60 x 400 are passed
    explicitly by the reproduction.

    Parameters
    ----------
    approximation : {"laplace", "ep"} or None, default None
        Importance density of the eq. 25 estimate; None: the likelihood's first choice
        (EP for the probit, Laplace otherwise).
    n_imp : int, default 64
        Importance draws per marginal-likelihood estimate.
    n_iterations, n_per_iteration : int, default 20, 100
        AMIS iterations and draws per iteration (each draw one noisy estimate).
    covariance : {"full", "diag"}, default "full"
        The moment-matched proposal covariance: full or diagonal.
    n_resample : int, default 1000
        Draws resampled in proportion to the weights into ``posterior``.
    """

    approximation: str | None = None
    n_imp: int = 64
    n_iterations: int = 20
    n_per_iteration: int = 100
    covariance: str = "full"
    n_resample: int = 1000

    aliases: ClassVar = {"pm-amis": {}}
    models: ClassVar = (GPClassifier,)
    library: ClassVar = {f: _lazy("amis", "pm_amis") for f in ("n_iterations", "n_per_iteration", "covariance")}
    own_defaults: ClassVar = {
        "approximation": "None: EP for the probit (Xiong et al.), Laplace otherwise",
        "n_imp": "F&G's N_imp = 64 (PseudoMarginalTarget's default 1 is the bare estimator)",
        "n_resample": _N_RESAMPLE_REASON}

    def __post_init__(self):
        _choice(self, "approximation", _APPROXIMATIONS, optional=True)
        _int(self, "n_imp", 1)
        _int(self, "n_iterations", 1)
        _int(self, "n_per_iteration", 1)
        self._check_common()

    def _approx(self, model) -> str:
        if self.approximation is not None:
            return self.approximation
        return model.likelihood.approximations[0]  # the likelihood's first choice (EP for the probit)

    def why_not(self, model):
        """Also refused: an ``approximation`` (or the likelihood's default one) the likelihood does
        not offer (``Likelihood.approximations``)."""
        return super().why_not(model) or _approximation_problem(model, self._approx(model))

    def check(self, model):
        """Stop with the option's own message when the model fits but the option does not; otherwise
        as :meth:`Method.check`."""
        _check_option_first(self, model)

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """Xiong et al. Sec. 3.1: ``amis.pm_amis`` on the ``n_imp``-draw estimate of F&G eq. 25 from
        q_0 = N(EP type-II MAP, 0.25 I)."""
        from .classification import fit_ep_type2_ml

        rng = rngs[0]
        target = _pm_target(model, self._approx(model), self.n_imp)
        from .likelihoods import Probit

        # q_0's centre: EP type-II ML with the model's likelihood; one without EP (the logistic) keeps the
        # probit's EP-ML as its starting point, as before
        start = model.likelihood if "ep" in model.likelihood.approximations else Probit()
        ml = fit_ep_type2_ml(model.X, model.y, model.kernel, rng, log_prior=model.prior, likelihood=start)
        cov = np.eye(ml.psi.size) * 0.25
        return amis_mod.pm_amis(rng, target, ml.psi, cov, n_iterations=self.n_iterations,
                                n_per_iteration=self.n_per_iteration, covariance=self.covariance)


@dataclasses.dataclass(frozen=True)
class LatentGibbs(_Latent):
    """F&G's Gibbs baselines (Sec. 4.2): MH on psi in the ``representation`` ``"aa"`` (whitened latent
    variables, Murray & Adams' ancillary augmentation) or ``"surr"`` (surrogate data, M&A eqs. 9-11)
    alternating with ``n_latent_updates`` elliptical slice updates of f (Murray et al. 2010); the MH
    scale tuned towards ``target_accept`` (Robbins-Monro, from ``initial_scale``) in warm-up.
    ``keep_latent`` stores f per draw.

    Parameters
    ----------
    representation : {"aa", "surr"}, default "aa"
        Where the MH update of psi holds the latent values fixed: whitened (AA) or
        surrogate data (SURR).  The aliases "aa" and "surr" fix it.
    n_latent_updates : int, default 10
        Elliptical slice updates of f after each psi update.
    target_accept : float, default 0.25
        Acceptance rate the MH scale is tuned towards in warm-up.
    initial_scale : float or None, default None
        The first MH scale; None: 2.38 / sqrt(p).
    keep_latent : bool, default False
        Store f per draw in ``posterior["f"]`` (n floats per draw; needed by
        ``posterior_predictive``/``log_likelihood`` of latent models).
    """

    representation: str = "aa"
    n_latent_updates: int = 10
    target_accept: float = 0.25
    initial_scale: float | None = None
    keep_latent: bool = False

    aliases: ClassVar = {"aa": {"representation": "aa"}, "surr": {"representation": "surr"}}
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {f: _lazy("mcmc.latent_gibbs", "chain_spec")
                         for f in ("n_latent_updates", "target_accept", "initial_scale")}
    library_names: ClassVar = {"representation": "method"}
    own_defaults: ClassVar = {
        "representation": "no default in the library (latent_gibbs.chain_spec's method='aa' is the same)",
        "keep_latent": "the API does not store f per draw unless asked (n floats per draw); "
                       "latent_gibbs.chain_spec keeps it by default"}

    def __post_init__(self):
        _choice(self, "representation", ("aa", "surr"))
        _int(self, "n_latent_updates", 1)
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "initial_scale", 0.0, optional=True)
        _bool(self, "keep_latent")

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``latent_gibbs.chain_spec`` (F&G Sec. 4.2) from psi_0 = the kernel's initial psi
        plus N(0, 0.1^2) noise and f_0 ~ N(0, K(psi_0))."""
        from .mcmc import latent_gibbs

        specs = []
        for r in rngs:
            psi0 = self._psi0(model, r)
            lgm = self._lgm(model)
            f0 = self._f0(model, psi0, r)
            specs.append(latent_gibbs.chain_spec(lgm, psi0, f0, method=self.representation, n_burn=n_warmup,
                                                 n_latent_updates=self.n_latent_updates,
                                                 target_accept=self.target_accept, initial_scale=self.initial_scale,
                                                 keep_latent=self.keep_latent))
        return specs


_REPRESENTATIONS = hyper_slice.METHODS  # fixed, prior-white, surr-site, surr-taylor, post-site, post-taylor


@dataclasses.dataclass(frozen=True)
class SliceSampler(_Latent):
    """Murray & Adams' slice sampling of the hyperparameters (their Alg. 4) in a ``representation``:
    ``"fixed"`` (f held fixed), ``"prior-white"`` (whitened by the prior, eq. 5), ``"surr-site"`` /
    ``"surr-taylor"`` (surrogate data, eqs. 9-11, noise from site moments or a Taylor fit, eqs. 12-13),
    ``"post-site"`` / ``"post-taylor"`` (the approximate posterior's whitening, eq. 14), each sweep
    followed by ``n_latent_updates`` elliptical slice updates of f; widths from the prior.

    Parameters
    ----------
    representation : str, default "surr-site"
        One of "fixed", "prior-white", "surr-site", "surr-taylor", "post-site", "post-taylor": the
        representation of (theta, f) in which theta is slice-sampled; the aliases
        "slice-<representation>" fix it.
    n_latent_updates : int, default 10
        Elliptical slice updates of f after each slice sweep of theta.
    """

    representation: str = "surr-site"
    n_latent_updates: int = 10

    aliases: ClassVar = {f"slice-{r}": {"representation": r} for r in _REPRESENTATIONS}
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    library: ClassVar = {"n_latent_updates": _lazy("mcmc.hyper_slice", "chain_spec")}
    own_defaults: ClassVar = {"representation": "M&A's recommended surrogate-data representation; "
                                                "hyper_slice.chain_spec has no default"}

    def __post_init__(self):
        _choice(self, "representation", _REPRESENTATIONS)
        _int(self, "n_latent_updates", 1)

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``hyper_slice.chain_spec`` (M&A Alg. 4) from psi_0 = the kernel's initial psi
        plus N(0, 0.1^2) noise and f_0 ~ N(0, K(psi_0))."""
        specs = []
        for r in rngs:
            psi0 = self._psi0(model, r)
            lgm = self._lgm(model)
            f0 = self._f0(model, psi0, r)
            specs.append(hyper_slice.chain_spec(lgm, psi0, f0, self.representation, n_burn=n_warmup,
                                                n_latent_updates=self.n_latent_updates))
        return specs


@dataclasses.dataclass(frozen=True)
class EPML(Method):
    """EP type-II maximum likelihood (a point estimate, one "draw"): log Z_EP (R&W eq. 3.65)
    maximised over psi (F&G Sec. 3.2); the probit's.

    It has no options (the optimiser's settings are those of ``classification.fit_ep_type2_ml``).
    """

    aliases: ClassVar = {"ep-ml": {}}
    models: ClassVar = (GPClassifier,)

    def why_not(self, model):
        """Also refused: a likelihood that does not offer EP (``Likelihood.approximations``)."""
        reason = super().why_not(model)
        if reason is None and "ep" not in model.likelihood.approximations:
            return (f"method 'ep-ml' needs a likelihood that offers EP (the probit, or one that lists it), not "
                    f"{model.likelihood.name}")
        return reason

    def run(self, model, rngs, *, n_draws, n_warmup, callback=None, stop=None):
        """log Z_EP (R&W eq. 3.65) maximised over psi (``classification.fit_ep_type2_ml``), one draw."""
        from .classification import fit_ep_type2_ml

        fit = fit_ep_type2_ml(model.X, model.y, model.kernel, rngs[0], likelihood=model.likelihood)
        return _point(fit.psi, fit.log_marginal)



# ---------------------------------------------------------------------------
# sparse GP classification (Hensman et al. 2015)
# ---------------------------------------------------------------------------
class _Sparse(Method, register=False):
    models: ClassVar = (SparseGPClassifier,)
    stoppable: ClassVar = True
    independent_chains: ClassVar = True

    def chain_specs(self, model, rngs, n_warmup):
        from .sparse.target import initial_position

        return [self._spec(model.target, initial_position(r, model.target, model.svgp_fit.params), n_warmup)
                for r in rngs]


@dataclasses.dataclass(frozen=True)
class JointHMC(_Sparse):
    """Hensman et al. 2015: HMC jointly on (v, psi) of the sparse variational target log q*(v, theta)
    with Stan's warm-up (H&G 2014 Sec. 3.2): dual averaging towards ``target_accept``, mass matrix
    from two windows (``metric`` ``"auto"``/``"diag"``/``"dense"``, when ``adapt_mass``; start
    ``mass``, None: identity), a fixed trajectory length ``trajectory_length`` (L = min(ceil(lambda /
    eps), ``max_steps``)), step size jittered by +-``step_size_jitter``, first eps
    ``initial_step_size`` (None: H&G Alg. 4).

    Parameters
    ----------
    target_accept : float, default 0.8
        The mean acceptance statistic dual averaging aims at (Stan's default).
    trajectory_length : float, default 1.5
        lambda: L = min(ceil(lambda / eps), max_steps) leapfrog steps, lambda in units of the
        adapted metric.
    max_steps : int, default 64
        The cap on L.
    mass : array or None, default None
        The metric to start warm-up from; None: identity.
    adapt_mass : bool, default True
        Adapt the metric in Stan's windows during warm-up.
    metric : {"auto", "diag", "dense"}, default "auto"
        The adapted metric's form ("auto": dense when the window has enough draws, else diagonal).
    initial_step_size : float or None, default None
        The first eps; None: H&G Alg. 4's heuristic.
    step_size_jitter : float, default 0.2
        Each transition's eps is multiplied by U(1 - j, 1 + j).
    """

    target_accept: float = 0.8
    trajectory_length: float = 1.5
    max_steps: int = 64
    mass: Any = None
    adapt_mass: bool = True
    metric: str = "auto"
    initial_step_size: float | None = None
    step_size_jitter: float = 0.2

    aliases: ClassVar = {"joint-hmc": {}}
    library: ClassVar = {f: _lazy("sparse.mcmc", "hmc_adaptation")
                         for f in ("target_accept", "trajectory_length", "max_steps", "mass", "adapt_mass", "metric",
                                   "initial_step_size", "step_size_jitter")}

    def __post_init__(self):
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "trajectory_length", 0.0)
        _int(self, "max_steps", 1)
        _bool(self, "adapt_mass")
        _choice(self, "metric", ("auto", "diag", "dense"))
        _float(self, "initial_step_size", 0.0, optional=True)
        _float(self, "step_size_jitter", 0.0, 1.0, open_low=False)

    def _spec(self, target, position0, n_warmup):
        from .sparse import mcmc as sparse_mcmc

        return sparse_mcmc.joint_chain_spec(target, position0, n_warmup=n_warmup, **self.fields())


@dataclasses.dataclass(frozen=True)
class SparseGibbs(_Sparse):
    """Hensman et al.'s baseline: HMC on v | theta (dual averaging towards ``target_accept``, fixed
    trajectory length, at most ``max_steps``) alternating with random-walk MH on psi | v (scale from
    ``psi_scale`` tuned towards ``psi_target_accept``).

    Parameters
    ----------
    target_accept : float, default 0.8
        The acceptance statistic the v-step's dual averaging aims at.
    psi_target_accept : float, default 0.3
        Acceptance rate the psi | v random-walk scale is tuned towards.
    trajectory_length, max_steps : float, int, default 1.5, 64
        The v-step's L = min(ceil(trajectory_length / eps), max_steps).
    psi_scale : float, default 0.1
        The psi proposal's starting scale (psi_scale I).
    step_size_jitter : float, default 0.2
        The v-step's eps is multiplied by U(1 - j, 1 + j).
    """

    target_accept: float = 0.8
    psi_target_accept: float = 0.3
    trajectory_length: float = 1.5
    max_steps: int = 64
    psi_scale: float = 0.1
    step_size_jitter: float = 0.2

    aliases: ClassVar = {"gibbs": {}}
    library: ClassVar = {f: _lazy("sparse.mcmc", "gibbs_adaptation")
                         for f in ("target_accept", "psi_target_accept", "trajectory_length", "max_steps",
                                   "psi_scale", "step_size_jitter")}

    def __post_init__(self):
        _float(self, "target_accept", 0.0, 1.0)
        _float(self, "psi_target_accept", 0.0, 1.0)
        _float(self, "trajectory_length", 0.0)
        _int(self, "max_steps", 1)
        _float(self, "psi_scale", 0.0)
        _float(self, "step_size_jitter", 0.0, 1.0, open_low=False)

    def _spec(self, target, position0, n_warmup):
        from .sparse import mcmc as sparse_mcmc

        return sparse_mcmc.gibbs_chain_spec(target, position0, n_warmup=n_warmup, **self.fields())


# ---------------------------------------------------------------------------
# the supervised GPLVM (Gadd et al.)
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class GPLVMPseudoMarginal(Method):
    """Gadd et al. Algs. 2-3: block-wise adaptive pseudo-marginal MH on psi (eq. 6 estimate with
    ``n_imp`` = Q draws of q(Z), q(Z) re-optimised per proposal by at most ``vb_max_iter`` L-BFGS
    iterations from the current q), adaptation from iteration ``adapt_start`` (None: ``n_warmup``),
    block proposals starting at ``initial_proposal_sd``^2 I, then an elliptical slice update of Z;
    chains start at the type-II ML psi plus N(0, ``start_noise_sd``^2) noise.

    Parameters
    ----------
    n_imp : int, default 20
        Q, the draws of q(Z) per estimate of p(Y | X, theta) (eq. 6).
    adapt_start : int or None, default None
        The iteration from which the block proposals adapt; None: ``n_warmup``.
    vb_max_iter : int, default 50
        L-BFGS iterations that re-optimise q(Z) per proposal (from the current q).
    initial_proposal_sd : float, default 0.1
        Block proposals start at initial_proposal_sd^2 I.
    start_noise_sd : float, default 0.1
        Chains start at the type-II ML psi plus N(0, start_noise_sd^2) noise.
    """

    n_imp: int = 20
    adapt_start: int | None = None
    vb_max_iter: int = 50
    initial_proposal_sd: float = 0.1
    start_noise_sd: float = 0.1

    aliases: ClassVar = {"pm-within-gibbs": {}}
    models: ClassVar = (GPLVMRegressor,)
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    own_defaults: ClassVar = {
        "n_imp": "Q = 20 (gplvm.PMGibbsConfig's default is 10; gplvm/ is owned elsewhere, not changed here)",
        "adapt_start": "None: adapt after the warm-up (PMGibbsConfig's fixed default 200 ignores n_warmup)",
        "vb_max_iter": "the API bounds each q(Z) re-optimisation; optimise_variational has its own default",
        "initial_proposal_sd": "API start of the block proposals", "start_noise_sd": "API over-dispersion of starts"}

    def __post_init__(self):
        _int(self, "n_imp", 1)
        _int(self, "adapt_start", 0, optional=True)
        _int(self, "vb_max_iter", 0)
        _float(self, "initial_proposal_sd", 0.0)
        _float(self, "start_noise_sd", 0.0, open_low=False)

    def chain_specs(self, model, rngs, n_warmup):
        """Per chain, ``gplvm.pseudo_marginal.run_chain``'s configuration of the runner from the module's
        public ``within_gibbs_init``/``within_gibbs_step`` (one Alg. 3 step per iteration, from the
        previous Z, as the paper): the same draws in the same order, and the latent Z kept per draw."""
        from .gplvm import pseudo_marginal as gpm

        sd = self.initial_proposal_sd
        adapt_start = n_warmup if self.adapt_start is None else self.adapt_start
        config = gpm.PMGibbsConfig(blocks=model.blocks(), n_imp=self.n_imp, adapt_start=adapt_start,
                                   warm_start=True, vb_options={"max_iter": self.vb_max_iter})

        def kernel(r, st):
            return gpm.within_gibbs_step(r, st, model.gplvm, model.prior, config, n_latent_steps=1,
                                         latent_start="continue")

        specs = []
        for r in rngs:
            psi0 = model.ml_fit.psi + self.start_noise_sd * r.standard_normal(len(model.param_names))
            covs = [sd**2 * np.eye(b.size) for b in config.blocks]
            start = (lambda r=r, psi0=psi0, covs=covs: gpm.within_gibbs_init(
                r, model.gplvm, model.prior, psi0, config, proposal_covs=covs, n_latent_steps=1))
            specs.append(runner.ChainSpec(start, kernel, n_warmup, record=lambda st, info: {"Z": st.latent.Z}))
        return specs

    def to_groups(self, model, result, rngs, attrs):
        """The hyperparameter groups of :func:`posterior_groups` plus the latent ``Z`` per draw in
        ``posterior`` over ``(chain, draw, obs, latent)``."""
        groups = posterior_groups(model, result, attrs)
        groups["posterior"]["Z"] = (("chain", "draw", *_LATENT_DIMS["Z"]), np.stack([c.extra["Z"] for c in result]))
        return groups


# ---------------------------------------------------------------------------
# the default method: gb.sample(model) with no method
# ---------------------------------------------------------------------------
#: The most hyperparameters for which ``gb.sample(model)`` picks random-walk MH for a GPRegressor (NUTS
#: above).  Measured (benchmarks/results/bench_default_method.txt, synthetic, 4 chains run until split
#: R-hat < 1.01 and bulk ESS > 400): CPU seconds to converge, RWMH vs NUTS, 1.2 vs 10.6 (n = 100, 3
#: hyperparameters), 0.9 vs 3.4 (n = 30, 3), 3.1 vs 9.2 (n = 100, ARD, 6); NUTS's cost there is
#: mostly its warm-up.  Not measured between 7 and 14; at 15 (Boston Housing ARD) NUTS is measured
#: (3.13x NumPyro's NUTS), random-walk MH is not.
MAX_RANDOM_WALK_HYPERPARAMETERS = 6

#: The most hyperparameters for which ``gb.sample(model)`` picks pseudo-marginal MH for a latent-Gaussian
#: model (GPClassifier, PoissonGP); above it, the IS-corrected NUTS (``ISCorrectedNUTS``).  Where the
#: importance estimator does not apply (per-bin exposure): slice sampling in the surrogate-data
#: representation up to it, the whitened joint NUTS (``WhitenedNUTS``) above (PoissonGP: 11.6 vs 3.6
#: ESS/CPU-s with 2, 6.8 vs 13.1 with 5).
#: Measured (benchmarks/results/bench_default_method.txt, n = 100, 4 chains x (500 + 1000), min bulk
#: ESS per CPU-s; the weighted estimator's ESS for nuts-is): 2 hyperparameters, probit: PM-MH 46.6,
#: nuts-is 33.7, slice surr-site 4.6; Poisson: PM-MH 70.1, nuts-is 32.5, slice 10.2; Pima isotropic
#: (300 rows): PM-MH 13.2, nuts-is 4.1.  5 (probit ARD): nuts-is 38.4, PM-MH 6.3 (4 x 5000).  9 (probit
#: ARD): nuts-is 29.5, slice 0.89, PM-MH 0.80; Pima ARD: nuts-is 11.8, PM-MH 0.51, slice 0.25.  Issue 24:
#: 15 hyperparameters, PM-MH R-hat 1.56 after 4 x 1,500 and stuck chains at 4 x 10,000.  Not measured: 3-4.
MAX_PSEUDO_MARGINAL_HYPERPARAMETERS = 2


class DefaultMethodWarning(UserWarning):
    """Which method ``gb.sample(model)`` chose with no ``method`` given, and why (shown once per
    distinct choice by Python's default warning filter; filter this category to silence it)."""


_EVIDENCE = "benchmarks/results/bench_default_method.txt"


def default_method(model) -> tuple[Method, str]:
    """The method ``gb.sample(model)`` runs when no ``method`` is given, and the reason (the evidence).

    Per model and number of hyperparameters p, the method the committed benchmarks show fastest to
    converge (CPU time to split R-hat < 1.01 and bulk ESS > 400, or min bulk ESS per CPU-second;
    ``benchmarks/results/``):

    * GPRegressor: :class:`RandomWalkMH` for p <= :data:`MAX_RANDOM_WALK_HYPERPARAMETERS` (3-9x
      faster to converge than NUTS at p = 3 and 6, bench_default_method.txt), :class:`NUTS` above
      (Boston Housing ARD, p = 15: 3.13x NumPyro's NUTS, bench_peers_housing_4x500.txt).
    * GPClassifier, PoissonGP: :class:`PseudoMarginal` (Laplace, N_imp 64) for p <=
      :data:`MAX_PSEUDO_MARGINAL_HYPERPARAMETERS` (Pima isotropic, p = 2: 10-13x NumPyro's joint
      NUTS, issue 24; ahead of nuts-is and the slice samplers at p = 2); above,
      :class:`ISCorrectedNUTS` (NUTS on the EP or Laplace marginal, importance-corrected: 6x PM-MH at
      p = 5, over 20x PM-MH and slice at p = 9); for a PoissonGP with per-bin exposure (where the
      importance estimator does not apply) :class:`SliceSampler` ``"surr-site"`` up to
      :data:`MAX_PSEUDO_MARGINAL_HYPERPARAMETERS`, :class:`WhitenedNUTS` above (PoissonGP, p = 2:
      slice 11.6 vs 3.6 ESS/CPU-s; p = 5: 6.8 vs 13.1).
    * SparseGPClassifier: :class:`JointHMC` -- Hensman et al.'s claim, reproduced
      (default_scale/sparse_mcmc.json: PSRF < 1.1 in 93 vs 922 iterations with the RBF kernel;
      Gibbs did not reach it with ARD).
    * GPLVMRegressor: :class:`GPLVMPseudoMarginal`, its only sampler.
    """
    p = len(model.hyperparameter_names)
    if isinstance(model, GPRegressor):
        if p <= MAX_RANDOM_WALK_HYPERPARAMETERS:
            return RandomWalkMH(), (
                f"GPRegressor with {p} hyperparameters (<= {MAX_RANDOM_WALK_HYPERPARAMETERS}): random-walk MH on "
                "the exact marginal, the fastest to converge measured with few hyperparameters (CPU seconds to "
                "R-hat < 1.01 and bulk ESS > 400, RWMH vs NUTS: 1.2 vs 10.6 with 3, 3.1 vs 9.2 with 6; "
                f"{_EVIDENCE})")
        return NUTS(), (f"GPRegressor with {p} hyperparameters (> {MAX_RANDOM_WALK_HYPERPARAMETERS}): NUTS, the "
                        "fastest measured with many hyperparameters (Boston Housing ARD, 15: 3.13x NumPyro's NUTS in "
                        "min bulk ESS per CPU-second, benchmarks/results/bench_peers_housing_4x500.txt; random-walk "
                        "MH is not measured there)")
    if isinstance(model, SparseGPClassifier):
        return JointHMC(), ("SparseGPClassifier: joint HMC on (v, psi), Hensman et al.'s method, which reached "
                            "PSRF < 1.1 in fewer iterations than Gibbs (benchmarks/results/default_scale/"
                            "sparse_mcmc.json: 93 vs 922 with the RBF kernel; Gibbs not at all with ARD)")
    if isinstance(model, GPLVMRegressor):
        return GPLVMPseudoMarginal(), "GPLVMRegressor: Gadd et al.'s pseudo-marginal MH-within-Gibbs, its only sampler"
    name = type(model).__name__
    pm = PseudoMarginal()
    if p <= MAX_PSEUDO_MARGINAL_HYPERPARAMETERS and pm.why_not(model) is None:
        return pm, (f"{name} with {p} hyperparameters (<= {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}): pseudo-marginal "
                    "MH (Laplace, N_imp 64), the fastest measured with few hyperparameters (min bulk ESS per "
                    "CPU-second with 2: probit 46.6 vs nuts-is 33.7, Poisson 70.1 vs 32.5, Pima isotropic 13.2 vs "
                    f"4.1, and 13x NumPyro's joint NUTS on Pima, issue 24; {_EVIDENCE})")
    isnuts = ISCorrectedNUTS()
    if isnuts.why_not(model) is None:
        marginal = "EP" if isnuts.importance_density(model) == "ep" else "Laplace"
        return isnuts, (f"{name} with {p} hyperparameters (> {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}): NUTS on the "
                        f"{marginal} marginal with an importance-sampling correction (exact; Vihola et al. 2020), the fastest "
                        "measured with more hyperparameters (min bulk ESS per CPU-second with 5: 38.4 vs "
                        "pseudo-marginal MH's 6.3; with 9: 29.5 vs 0.80 and slice surr-site's 0.89; "
                        f"{_EVIDENCE})")
    if p > MAX_PSEUDO_MARGINAL_HYPERPARAMETERS:
        return WhitenedNUTS(), (
            f"{name} with {p} hyperparameters (> {MAX_PSEUDO_MARGINAL_HYPERPARAMETERS}): {pm.why_not(model)}; NUTS "
            "on the whitened joint posterior (exact, unweighted) applies, and was the faster of the methods that "
            "do (min bulk ESS per CPU-second, PoissonGP with 5: 13.1 vs slice surr-site's 6.8; "
            f"{_EVIDENCE})")
    return SliceSampler(representation="surr-site"), (
        f"{name} with {p} hyperparameters: {pm.why_not(model)}; slice sampling in the surrogate-data "
        "representation (M&A Alg. 4, surr-site) applies, and was the faster of the methods that do (min bulk ESS "
        f"per CPU-second, PoissonGP with 2: 11.6 vs nuts-whitened's 3.6; {_EVIDENCE})")


# ---------------------------------------------------------------------------
# strings as aliases
# ---------------------------------------------------------------------------
def methods(model) -> tuple[str, ...]:
    """The method strings ``gb.sample`` accepts for this model (the aliases of the methods that apply)."""
    return tuple(a for a, (cls, fixed) in _ALIASES.items() if cls(**fixed).why_not(model) is None)


def resolve(method, options: Mapping[str, Any] | None = None) -> Method:
    """The method object of ``method`` (a string alias with ``options``, or a :class:`Method`)."""
    options = dict(options or {})
    if isinstance(method, Method):
        if options:
            raise ValueError(f"options {sorted(options)} given beside the method object {type(method).__name__}; "
                             "set them as its fields instead")
        return method
    if isinstance(method, type) and issubclass(method, Method):
        return method(**options)
    if not isinstance(method, str) or method not in _ALIASES:
        raise ValueError(f"method must be a gpbayes method object or one of {sorted(_ALIASES)}, got {method!r}")
    cls, fixed = _ALIASES[method]
    names = [f.name for f in dataclasses.fields(cls) if f.name not in fixed]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ValueError(f"method {method!r} has no option(s) {unknown}; its options are {names}")
    return cls(**fixed, **options)


def deprecated_warmup(options: dict, n_warmup: int | None, warmup: int | None) -> int | None:
    """``n_warmup``, accepting the old names ``warmup`` (``gb.sample``) and ``n_adapt`` (pseudo-marginal)
    with a DeprecationWarning."""
    for old, value in (("warmup", warmup), ("n_adapt", options.pop("n_adapt", None))):
        if value is None:
            continue
        warnings.warn(f"'{old}' is deprecated; use n_warmup", DeprecationWarning, stacklevel=3)
        if n_warmup is not None and n_warmup != value:
            raise ValueError(f"n_warmup={n_warmup} and {old}={value} disagree; give n_warmup only")
        n_warmup = value
    return n_warmup
