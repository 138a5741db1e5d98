"""Slice sampling covariance hyperparameters in six representations (Murray & Adams 2010).

Model: ``representations.LatentGaussianModel`` (M&A eq. 3), psi = the
kernel's log-parameters (``parameterisation="ma"``: log lengthscales, then
log sigma_f) and, for the Cox-process experiments, the log-rate offset m.

One iteration (M&A Sec. 5, "Methods"):

1. one sweep of the slice sampler of Alg. 4 (``mcmc.slice.murray_adams_step``:
   random bracket of width sigma = the prior's support, shrinkage, no
   stepping out), axis-aligned in a random order, over psi with the
   auxiliary variables of a *representation* held fixed, so that f moves
   with psi (except for ``fixed``);
2. ``n_latent_updates`` (10 in the paper) elliptical slice sampling updates
   of f | psi, y.

The six representations (targets up to a constant, times p_h(psi)):

``fixed``        N(f; 0, Sigma) (eq. 4, Alg. 1), times L(f) when psi holds m;
``prior-white``  L(L_Sigma nu) (eq. 6, Alg. 2);
``surr-site``    L(f) N(g; 0, Sigma + S), f = L_R eta + m_psi,g, g ~ N(f, S)
                 drawn afresh before each sweep, S from the site fits (eqs. 7-12, Algs. 3-4);
``surr-taylor``  the same with S from the Taylor fit at the likelihood's maximum (eq. 13);
``post-site``    L(f) N(f; 0, Sigma) |L_R|, f = L_R omega + m_psi,g^ with a fixed,
                 psi-dependent Gaussian approximation N(g^; f, S) (eq. 14) from the site fits;
``post-taylor``  the same with the Taylor fit (Christensen et al.).

Target (``target``): ``"posterior"`` (default) samples p(psi, f | y) in every
representation.  ``"released-code"`` is a DIAGNOSTIC that is NOT the
posterior: p(psi, f | y) prod_i S_ii(psi)^(-1/2) with S the site noise of
eq. 12, what Murray's released ``update_theta_aux_surr.m`` samples because it
normalises N(g; f, S) with -log|S| instead of -1/2 log|S| (eq. 11 is
correct; ``representations.released_code_log_tilt`` quotes the line).  For
surr-site it is exactly the released code's surrogate update (when the site
variances are equal, as on Ionosphere); for fixed, prior-white and post-site
it is the same tilted distribution sampled in another representation, which
separates the effect of the target from that of the representation.  The
-taylor methods reject it (their S is not the site noise).

The algebra (square roots of R, Woodbury forms) is in
``gpbayes.representations``, the site fits in ``gpbayes.site_approximations``;
why the sweep is axis-aligned, how the post- centre is chosen and how the two
roots of R mixed are in ``docs/reproduction/murray_adams_2010.md`` ("Axis-aligned sweeps",
"Centre of the post- representations", "Square root of R").

Cost counters (M&A Sec. 5: "the number of hyperparameter settings
considered ..., the number of likelihood evaluations, and the total elapsed
time"), per iteration: ``n_likelihood_evals`` (sweep + ELL-SS),
``n_covariance`` (settings at which the sweep built and factorised a
covariance; outside the prior's support costs nothing; moving only m reuses
chol Sigma), ``n_cubic`` (``gpbayes.linalg``), ``wall_time``.  A new psi costs
three O(n^3) operations for surr-/post-, one for fixed and prior-white.  The
chains are compared on the complete-data log-likelihood
log p(y, f | psi) (``complete_data_log_likelihood``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import linalg, priors
from .. import representations as rep
from ..representations import DEFAULT_ROOT, DEFAULT_TARGET, ROOTS, TARGETS, LatentGaussianModel
from . import elliptical_slice
from . import runner
from . import slice as slice_mod
from .runner import Chain

__all__ = [
    "METHODS",
    "ROOTS",
    "TARGETS",
    "HyperState",
    "HyperInfo",
    "IterationInfo",
    "prior_widths",
    "init",
    "log_conditional",
    "auxiliaries",
    "hyper_step",
    "latent_step",
    "step",
    "complete_data_log_likelihood",
    "chain_spec",
    "run_chain",
]

METHODS = ("fixed", "prior-white", "surr-site", "surr-taylor", "post-site", "post-taylor")


def prior_widths(prior, unbounded_sd_multiple: float = 4.0) -> np.ndarray:
    """Slice bracket width sigma per coordinate: the width of the prior's support.

    LogUniform/Uniform: the width of the interval in psi = log theta
    (Uniform(0, b) uses log(b) - log(b * 1e-3)); a Gaussian on psi
    (``LogNormal``) or anything unbounded: ``unbounded_sd_multiple`` times its
    standard deviation (about the width holding 95% of its mass); Gamma: the
    same multiple of the s.d. of log theta, sqrt(trigamma(shape)); InverseGamma: the same (log theta is
    minus the log of a Gamma(shape) variable); Exponential, HalfNormal, HalfCauchy: the same multiple of
    the s.d. of log theta, pi / sqrt(6), pi / sqrt(8) and pi / 2.
    """
    from scipy.special import polygamma

    out = []
    for c in prior.components:
        while isinstance(c, priors.DataUnits):  # a prior in the data's units: a shift, the same width
            c = c.prior
        if isinstance(c, priors.LogUniform):
            out.append(math.log(c.high / c.low))
        elif isinstance(c, priors.Uniform):
            lo = c.low if c.low > 0 else c.high * 1e-3
            out.append(math.log(c.high / lo))
        elif isinstance(c, priors.LogNormal):
            out.append(unbounded_sd_multiple * c.sigma)
        elif isinstance(c, (priors.Gamma, priors.InverseGamma)):
            out.append(unbounded_sd_multiple * math.sqrt(float(polygamma(1, c.shape))))
        elif isinstance(c, priors.Exponential):  # Gamma(1, rate): sqrt(trigamma(1)) = pi / sqrt(6)
            out.append(unbounded_sd_multiple * math.pi / math.sqrt(6.0))
        elif isinstance(c, priors.HalfNormal):  # log|z| = log(chi^2_1) / 2: sqrt(trigamma(1/2)) / 2 = pi / sqrt(8)
            out.append(unbounded_sd_multiple * math.pi / math.sqrt(8.0))
        elif isinstance(c, priors.HalfCauchy):  # log|z1| - log|z2|: twice the variance, pi / 2
            out.append(unbounded_sd_multiple * math.pi / 2.0)
        else:
            raise ValueError(f"no slice width rule for prior component {c!r}")
    return np.array(out)


# ---------------------------------------------------------------------------
# state, evaluations, counters
# ---------------------------------------------------------------------------
class HyperState(NamedTuple):
    """State of M&A's hyperparameter slice sampler: psi, the latent f, log L(f), the prior's
    Cholesky factor L at psi and, for the surr-/post- representations (M&A eqs. 11-14), the factors
    of S and the centre g-hat at psi.
    """

    psi: np.ndarray
    f: np.ndarray
    log_likelihood: float  # log L(f) at psi (the offset is part of psi)
    chol_prior: np.ndarray  # L, L L^T = Sigma_psi
    factors: "rep.SurrogateFactors | None" = None  # surr-/post-: factors of the method's S at psi
    centre: np.ndarray | None = None  # post-: g^_psi = S h


class HyperEval(NamedTuple):
    """log p(psi | auxiliaries) up to a constant and what was built for it."""

    log_density: float
    f: np.ndarray | None
    log_likelihood: float
    chol_prior: np.ndarray | None
    factors: "rep.SurrogateFactors | None" = None
    centre: np.ndarray | None = None


class HyperInfo(NamedTuple):
    """What one hyperparameter sweep (M&A Alg. 4 per coordinate) cost: likelihood and density
    evaluations, covariance constructions, O(n^3) operations, shrinkages.
    """

    n_likelihood_evals: int
    n_covariance: int
    n_cubic: int
    n_density_evals: int  # slice evaluations, including those outside the prior's support
    n_shrinkages: int


class IterationInfo(NamedTuple):
    """What one full iteration (the psi sweep, then the elliptical slice updates of f) cost."""

    n_likelihood_evals: int  # hyperparameter sweep + elliptical slice sampling
    n_covariance: int
    n_cubic: int
    n_density_evals: int
    n_shrinkages: int  # of the hyperparameter sweep


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown representation {method!r}; choose one of {METHODS}")


def _noise_kind(method: str) -> str:
    return "taylor" if method.endswith("taylor") else "site"


def _check_target(method: str, target: str) -> None:
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if target != DEFAULT_TARGET and method.endswith("taylor"):
        raise ValueError(f"target {target!r} tilts by the site noise of eq. 12; {method!r} uses the Taylor noise")


def _target_term(model: LatentGaussianModel, psi, target: str) -> float:
    """log of the factor the target multiplies the posterior by: 0, or -1/2 sum log S_ii(psi) (released code)."""
    return rep.released_code_log_tilt(model.site_noise(psi))


def _rejected() -> HyperEval:
    return HyperEval(-math.inf, None, -math.inf, None)


class _Counter:
    """Counts likelihood evaluations and covariance constructions of one sweep."""

    def __init__(self):
        self.n_lik = 0
        self.n_cov = 0


class _FactorCache:
    """chol(Sigma_psi) of the last kernel parameters, so that moving only the offset m is free."""

    def __init__(self, kernel_params=None, L=None):
        self.kernel_params, self.L = kernel_params, L

    def get(self, model: LatentGaussianModel, psi) -> np.ndarray:
        kp = model.kernel_params(psi)
        if self.L is not None and np.array_equal(kp, self.kernel_params):
            return self.L
        L = rep.prior_factor(model, kp)
        self.kernel_params, self.L = kp.copy(), L
        return L


def _factors(model, psi, L, method, root):
    """Factors at psi with the method's S (and, for post-, the centre g^ = S h)."""
    s, h = model.noise_and_centre(psi, _noise_kind(method))
    factors = rep.surrogate_factors(L, s, root)
    centre = s * h if method.startswith("post") else None
    return factors, centre


def _post_value(factors, f, log_lik) -> float:
    """log L(f) + log N(f; 0, Sigma) + log |L_R|  (eq. 14 without the prior)."""
    return log_lik + rep.log_normal_prior(factors.chol_prior, f) + rep.surrogate_log_det_root(factors)


# ---------------------------------------------------------------------------
# the conditional target of each representation
# ---------------------------------------------------------------------------
def log_conditional(model: LatentGaussianModel, method: str, aux: dict, cache: _FactorCache | None = None,
                    counter: _Counter | None = None, root: str = DEFAULT_ROOT, target: str = DEFAULT_TARGET):
    """psi -> HyperEval: log p(psi | auxiliaries, y) up to a constant.

    ``aux`` holds the fixed auxiliaries: ``f`` (fixed), ``nu`` (prior-white),
    ``eta`` and ``g`` (surr-), ``omega`` (post-).  ``target="released-code"``
    adds -1/2 sum log S_ii(psi) (a diagnostic, not the posterior; module docstring).
    """
    _check_method(method)
    _check_target(method, target)
    cache = cache or _FactorCache()
    counter = counter or _Counter()

    def evaluate(psi) -> HyperEval:
        psi = np.asarray(psi, dtype=np.float64)
        lp = model.log_prior(psi)
        if lp == -math.inf:
            return _rejected()
        with linalg.count_ops() as ops:
            try:
                ev = _evaluate(psi)
            except linalg.NotPositiveDefiniteError:
                ev = None
        counter.n_cov += int(ops.cubic > 0)
        if ev is None:
            return _rejected()
        if target != DEFAULT_TARGET:
            lp += _target_term(model, psi, target)
        return ev._replace(log_density=ev.log_density + lp)

    def _evaluate(psi) -> HyperEval:
        L = cache.get(model, psi)
        if method == "fixed":
            # Alg. 1 target (eq. 4): N(f; 0, Sigma_psi) [x L(f) if psi holds the offset]
            f = aux["f"]
            value = rep.log_normal_prior(L, f)
            log_lik = math.nan
            if model.sample_offset:
                log_lik = model.log_likelihood(psi, f)
                counter.n_lik += 1
                value += log_lik
            return HyperEval(value, f, log_lik, L)
        if method == "prior-white":
            # Alg. 2 step 3 / eq. 6: f = L_Sigma nu, target L(f)
            f = rep.unwhiten(L, aux["nu"])
            log_lik = model.log_likelihood(psi, f)
            counter.n_lik += 1
            return HyperEval(log_lik, f, log_lik, L)
        factors, centre = _factors(model, psi, L, method, root)
        if method.startswith("surr"):
            # Alg. 4 step 7: f = L_R eta + m_psi,g;  step 8: L(f) N(g; 0, Sigma + S) (eq. 11)
            f = rep.surrogate_unwhiten(factors, aux["eta"], aux["g"])
            log_lik = model.log_likelihood(psi, f)
            counter.n_lik += 1
            value = log_lik + rep.surrogate_log_marginal(factors, aux["g"])
            return HyperEval(value, f, log_lik, L, factors)
        # post-: f = L_R omega + m_psi,g^;  L(f) N(f; 0, Sigma) |L_R| (eq. 14)
        f = rep.surrogate_unwhiten(factors, aux["omega"], centre)
        log_lik = model.log_likelihood(psi, f)
        counter.n_lik += 1
        return HyperEval(_post_value(factors, f, log_lik), f, log_lik, L, factors, centre)

    return evaluate


# ---------------------------------------------------------------------------
# init / steps
# ---------------------------------------------------------------------------
def init(model: LatentGaussianModel, psi, f, method: str, root: str = DEFAULT_ROOT) -> HyperState:
    """State at (psi, f) for ``method``: factorises Sigma (and the root's factor for surr-/post-)."""
    _check_method(method)
    psi = np.array(psi, dtype=np.float64)
    f = np.array(f, dtype=np.float64)
    if psi.shape != (model.n_params,):
        raise ValueError(f"psi must have shape ({model.n_params},) {model.param_names}, got {psi.shape}")
    if f.shape != (model.n,):
        raise ValueError(f"f must have shape ({model.n},), got {f.shape}")
    if not math.isfinite(model.log_prior(psi)):
        raise ValueError(f"initial psi {psi} has zero prior density")
    log_lik = model.log_likelihood(psi, f)
    if not math.isfinite(log_lik):
        from ..likelihoods import _nonfinite_log_lik

        raise ValueError(_nonfinite_log_lik(model.likelihood_at(psi), model.y, f, log_lik))
    L = rep.prior_factor(model, model.kernel_params(psi))
    factors = centre = None
    if root not in ROOTS:
        raise ValueError(f"root must be one of {ROOTS}, got {root!r}")
    if method.startswith(("surr", "post")):
        factors, centre = _factors(model, psi, L, method, root)
    return HyperState(psi, f, log_lik, L, factors, centre)


def _current_value(model, method, state, aux, target: str = DEFAULT_TARGET) -> float:
    """The conditional target at the current psi, from the stored factors (no O(n^3) work)."""
    lp = model.log_prior(state.psi)
    if target != DEFAULT_TARGET:
        lp += _target_term(model, state.psi, target)
    if method == "fixed":
        return (rep.log_normal_prior(state.chol_prior, state.f)
                + (state.log_likelihood if model.sample_offset else 0.0) + lp)
    if method == "prior-white":
        return state.log_likelihood + lp
    if method.startswith("surr"):
        return state.log_likelihood + rep.surrogate_log_marginal(state.factors, aux["g"]) + lp
    return _post_value(state.factors, state.f, state.log_likelihood) + lp


def auxiliaries(rng: np.random.Generator, state: HyperState, method: str) -> dict:
    """The auxiliaries held fixed during one hyperparameter sweep (M&A Alg. 4 steps 1-2 and analogues).

    fixed: f; prior-white: nu = L_Sigma^-1 f (Alg. 2 step 1); surr-: g ~ N(f, S) (step 1) and
    eta = L_R^-1 (f - m_psi,g) (step 2); post-: omega = L_R^-1 (f - m).  Only surr- draws from ``rng``.
    """
    f = state.f
    if method == "fixed":
        return {"f": f}
    if method == "prior-white":
        return {"nu": rep.whiten(state.chol_prior, f)}
    if method.startswith("surr"):
        g = rep.draw_surrogate_data(rng, f, state.factors.noise_var)
        return {"g": g, "eta": rep.surrogate_whiten(state.factors, f, g)}
    return {"omega": rep.surrogate_whiten(state.factors, f, state.centre)}


def hyper_step(
    rng: np.random.Generator,
    state: HyperState,
    model: LatentGaussianModel,
    method: str,
    widths,
    *,
    step_out: float = 0,
    target: str = DEFAULT_TARGET,
) -> tuple[HyperState, HyperInfo]:
    """One axis-aligned slice sweep over psi in the representation ``method`` (M&A Alg. 4).

    ``target``: ``"posterior"`` or the diagnostic ``"released-code"`` (module docstring).
    """
    _check_method(method)
    counter = _Counter()
    with linalg.count_ops() as ops:
        f = state.f
        aux = auxiliaries(rng, state, method)
        cache = _FactorCache(model.kernel_params(state.psi), state.chol_prior)
        root = state.factors.root if state.factors is not None else DEFAULT_ROOT
        fn = log_conditional(model, method, aux, cache, counter, root, target)
        current = HyperEval(_current_value(model, method, state, aux, target), f, state.log_likelihood,
                            state.chol_prior, state.factors, state.centre)
        # Alg. 4 steps 3-14, once per axis (random order)
        sstate = slice_mod.SliceState(state.psi.copy(), current.log_density, current)
        sstate, sinfo = slice_mod.murray_adams_step(rng, sstate, fn, widths, step_out=step_out)
        ev = sstate.aux
        log_lik = ev.log_likelihood
        if method == "fixed" and not model.sample_offset:
            log_lik = state.log_likelihood
        new = HyperState(sstate.position, ev.f, log_lik, ev.chol_prior, ev.factors, ev.centre)
    info = HyperInfo(counter.n_lik, counter.n_cov, ops.cubic, sinfo.n_density_evals, sinfo.n_shrinkages)
    return new, info


def latent_step(rng, state: HyperState, model: LatentGaussianModel):
    """One elliptical slice sampling update of f | psi, y with the stored chol(Sigma_psi)."""
    es = elliptical_slice.EllipticalSliceState(state.f, state.log_likelihood)
    es, info = elliptical_slice.step(rng, es, state.chol_prior, lambda f: model.log_likelihood(state.psi, f))
    return state._replace(f=es.position, log_likelihood=es.log_likelihood), info


def step(rng, state: HyperState, model: LatentGaussianModel, method: str, widths, *, n_latent_updates: int = 10,
         step_out: float = 0, target: str = DEFAULT_TARGET) -> tuple[HyperState, IterationInfo]:
    """One iteration: a hyperparameter sweep, then ``n_latent_updates`` ELL-SS updates of f.

    The ELL-SS updates of f | psi, y are the same for both targets: the
    released code's extra factor depends on psi only.
    """
    state, h = hyper_step(rng, state, model, method, widths, step_out=step_out, target=target)
    n_lik = h.n_likelihood_evals
    for _ in range(n_latent_updates):
        state, e = latent_step(rng, state, model)
        n_lik += e.n_likelihood_evals
    return state, IterationInfo(n_lik, h.n_covariance, h.n_cubic, h.n_density_evals, h.n_shrinkages)


def complete_data_log_likelihood(model: LatentGaussianModel, state: HyperState) -> float:
    """log p(y, f | psi) = log L(f) + log N(f; 0, Sigma_psi): the trace M&A measure ESS on."""
    return state.log_likelihood + rep.log_normal_prior(state.chol_prior, state.f)


def run_chain(
    rng: np.random.Generator,
    model: LatentGaussianModel,
    psi0,
    f0,
    method: str,
    *,
    n_burn: int,
    n_draws: int,
    widths=None,
    n_latent_updates: int = 10,
    step_out: float = 0,
    root: str = DEFAULT_ROOT,
    target: str = DEFAULT_TARGET,
    callback=None,
) -> Chain:
    """``n_burn`` discarded iterations, then ``n_draws`` kept ones (nothing is tuned; a use of ``runner.run_chain``).

    Returns a :class:`~gpbayes.mcmc.runner.Chain`: ``draws`` psi
    (n_draws, p); stats ``lp`` (the complete-data log-likelihood
    log p(y, f | psi), the trace M&A measure ESS on), ``n_likelihood``
    (likelihood evaluations, M&A's cost unit), ``n_covariance`` (covariance
    constructions), ``n_cubic``, ``n_density_evals`` (slice evaluations),
    ``n_shrinkages``, ``wall_time``; ``extra["log_likelihood"]`` (log L(f));
    burn-in cost in ``warmup`` (``n_covariance``, ``n_likelihood``, ...).

    ``target="released-code"`` samples the released code's tilted target, a
    DIAGNOSTIC that is not the posterior (module docstring); never a default.
    """
    spec = chain_spec(model, psi0, f0, method, n_burn=n_burn, widths=widths, n_latent_updates=n_latent_updates,
                      step_out=step_out, root=root, target=target)
    return runner.run_spec(rng, spec, n_draws=n_draws, callback=callback)


def chain_spec(model: LatentGaussianModel, psi0, f0, method: str, *, n_burn: int, widths=None,
               n_latent_updates: int = 10, step_out: float = 0, root: str = DEFAULT_ROOT,
               target: str = DEFAULT_TARGET) -> runner.ChainSpec:
    """The runner configuration of one chain (``runner.ChainSpec``; see :func:`run_chain`)."""
    _check_target(method, target)
    widths = prior_widths(model.prior) if widths is None else np.asarray(widths, dtype=np.float64)
    state = init(model, psi0, f0, method, root)

    def kernel(r, st):
        return step(r, st, model, method, widths, n_latent_updates=n_latent_updates, step_out=step_out,
                    target=target)

    return runner.ChainSpec(state, kernel, int(n_burn), position=lambda st: st.psi,
                            lp=lambda st: complete_data_log_likelihood(model, st),
                            record=lambda st, info: {"log_likelihood": st.log_likelihood})
