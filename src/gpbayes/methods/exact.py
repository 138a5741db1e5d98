"""Methods of GP regression on the exact marginal posterior (R&W Alg. 2.1): random-walk MH, HMC,
NUTS and slice sampling, each chain started at a draw of N(MAP, (-H)^-1), and type-II maximum likelihood.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import ClassVar

import numpy as np

from .. import linalg
from ..mcmc import runner
from ..models import GPLVMRegressor, GPRegressor
from .base import Method, _bool, _choice, _float, _int, _lazy, _name, _point

__all__ = ['RandomWalkMH', 'HMC', 'NUTS', 'Slice', 'TypeIIML']


def _mode_and_cov(model: GPRegressor, rng):
    """MAP by L-BFGS and (-H)^-1 there (finite differences of the analytic gradient)."""
    from ..finite_differences import hessian_from_gradients
    from ..posterior import log_posterior_value_and_grad
    from ..regression import fit_type2_ml

    fit = fit_type2_ml(model.gp, rng, n_restarts=2, log_prior=model.prior)
    vg = log_posterior_value_and_grad(model.gp, model.prior)
    H = hessian_from_gradients(lambda p: vg(p)[1], fit.psi)
    return fit, linalg.inverse_of_negative_definite(H)


class _ExactMarginal(Method, register=False):
    """A sampler of the exact GP-regression posterior: each chain starts at a draw of N(MAP, (-H)^-1)
    (or at the psi given to ``gb.sample(init=...)``)."""

    models: ClassVar = (GPRegressor,)
    stoppable: ClassVar = True
    independent_chains: ClassVar = True
    init_components: ClassVar = ("psi",)

    def prepare(self, model, rngs, n_warmup):
        """The MAP psi and (-H)^-1 there (:func:`_mode_and_cov`, from chain 0's generator), shared by
        the chains' starting points and kernels."""
        fit, cov = _mode_and_cov(model, rngs[0])
        return np.asarray(fit.psi), cov

    def chain_specs(self, model, rngs, n_warmup, prepared=None):
        """Per chain, the sampler's specification started at a draw of N(MAP, (-H)^-1) from the chain's
        generator, or at the psi given to ``gb.sample(init=...)`` (no draw); ``prepared`` is
        :meth:`prepare`'s result (None: computed here first)."""
        from ..posterior import log_posterior, log_posterior_value_and_grad

        mode, cov = self.prepare(model, rngs, n_warmup) if prepared is None else prepared
        logp = log_posterior(model.gp, model.prior)
        vg = log_posterior_value_and_grad(model.gp, model.prior)
        specs = []
        for c, r in enumerate(rngs):
            given = self._start(c)
            # over-dispersed starts: draws of the Gaussian at the mode, unless given
            start = given["psi"] if given is not None else r.multivariate_normal(mode, cov)
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
        from ..mcmc import random_walk

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
        from ..mcmc import hmc

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
        from ..mcmc import hmc, nuts

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
        from ..mcmc import slice as slice_mod

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
        from ..regression import fit_type2_ml

        fit = fit_type2_ml(model.gp, rngs[0], n_restarts=self.n_restarts)
        return _point(fit.psi, fit.log_marginal)
