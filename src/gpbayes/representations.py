"""Representations of a latent Gaussian model for updating its hyperparameters.

Model (Murray & Adams 2010, Sec. 1.1): psi ~ p_h, f | psi ~ N(0, Sigma_psi),
y | f ~ prod_i L_i(f_i), with psi = log theta (``gpbayes.priors``); for
the Cox-process experiments psi also holds a mean offset m of the log-rate
(M&A Sec. 5: "We sampled the hyperparameters in (2) and a mean offset to the
log-rate"), rate_i = exposure_i exp(f_i + m) (``LatentGaussianModel(sample_offset=True)``).
Updating psi with f held fixed mixes badly because f pins psi down (their
Fig. 1).  A *representation* writes f = f(psi, a) for auxiliary variables a
whose distribution does not depend on psi (or is tracked exactly), and a
hyperparameter update holds a fixed while psi moves, which moves f with it.
This module gives, for each representation, pure functions

* the map between f and the auxiliary variables for given psi, and
* the log-density of psi given the auxiliary variables (up to a constant),
  returned as an ``Evaluation`` that also carries f(psi, a) and the matrix
  factors computed on the way, so that a sampler can keep them if it moves.

They are shared by the Metropolis-Hastings Gibbs samplers of Filippone &
Girolami 2014 (``gpbayes.mcmc.latent_gibbs``) and by the slice samplers of
Murray & Adams 2010, which drive the same functions with a different
transition.  Every O(n^3) operation goes through ``gpbayes.linalg``.

Whitened prior / ancillary augmentation (AA)
    Murray & Adams eqs. 5-6, Alg. 2; Filippone & Girolami Sec. 3.2.1:
    nu ~ N(0, I), f = L_psi nu with L_psi L_psi^T = Sigma_psi (lower Cholesky),
    and   log p(psi | nu, y) = log L(L_psi nu) + log p_h(psi) + const.
    Cost per new psi: one Cholesky factorisation (1 O(n^3) operation).

Surrogate data (SURR)
    Murray & Adams eqs. 7-11, Alg. 3; F&G Sec. 3.2.2.  Auxiliary data
    g | f, psi ~ N(f, S_psi) with S_psi diagonal (eq. 7); then
    g | psi ~ N(0, Sigma + S) (eq. 8), f | g, psi ~ N(m, R) with
    R = (Sigma^-1 + S^-1)^-1 = S - S (S + Sigma)^-1 S,  m = R S^-1 g (eq. 9),
    f = L_R eta + m, eta ~ N(0, I) (eq. 10), and
    log p(psi | eta, g, y) = log L(f(psi, eta, g)) + log N(g; 0, Sigma + S)
                             + log p_h(psi) + const          (eq. 11).
    Any square root L_R of R gives a valid representation (M&A, notation
    after eq. 5), since N(eta; 0, I) never depends on psi.  We use the one
    that costs least: with Sigma = L L^T,

        B = I + L^T S^-1 L = M M^T,   R = L B^-1 L^T,   L_R = L M^-T,

    so a new psi costs chol(Sigma) + the product L^T S^-1 L + chol(B):
    3 O(n^3) operations, as in F&G Table II.  B has eigenvalues >= 1, so
    its factorisation is well conditioned however small or large S is.
    Everything else is O(n^2), through the Woodbury identity and the
    determinant lemma:
        (Sigma + S)^-1 = S^-1 - S^-1 L B^-1 L^T S^-1,
        log|Sigma + S| = sum log S_ii + log|B|,
        m = L M^-T a,  a = M^-1 L^T S^-1 g,
        eta = M^T L^-1 (f - m).

Square root of R
    Any square root L_R L_R^T = R gives a valid representation (M&A, notation
    after eq. 5), but f(psi', eta) = L_R(psi') eta + m, and so the
    efficiency, depends on which.  Two are implemented (``root``):

    * ``"prior"`` (default): L_R = L M^-T as above; B has eigenvalues >= 1,
      so its factorisation is well conditioned however small S or Sigma is;
    * ``"precision"``: L_R = C^-T with C C^T = Sigma^-1 + S^-1, the root of
      Murray's released code (``chol(inv(K) + diag(1 ./ aux_var))``); it
      tends to S^1/2 (site-local) as S -> 0, but needs the explicit inverse
      of Sigma, whose condition number is up to about n / nugget.

    Both cost 3 O(n^3) operations per psi.  Measured mixing of the two is in
    ``docs/reproduction/murray_adams_2010.md`` ("Square root of R").

Posterior-based representation (post-site, post-taylor)
    M&A eq. 14: the same algebra with a *fixed* Gaussian "observation"
    N(g^; f, S_psi) whose S and centre g^ = S h are deterministic functions
    of psi (``gpbayes.site_approximations``): f = L_R omega + m_psi,g^ and
        log p(psi | omega, y) = log L(f) + log N(f; 0, Sigma) + log |L_R|
                                + log p_h(psi) + const.

The released code's target (a diagnostic, NOT the posterior)
    Murray's released ``update_theta_aux_surr.m`` (2009-2010) evaluates
    log N(g; f, S) with the line
        Lg_f = -0.5*sum((pp.gg - pp.ff).^2)./pp.aux_var - sum(log(pp.aux_var.*ones(size(pp.ff))));
    i.e. with -sum log S_ii where the Gaussian has -1/2 sum log S_ii.  Its
    slice sampler therefore leaves p(psi, f | y) prod_i S_ii(psi)^(-1/2)
    invariant instead of the posterior (eq. 11 with the correct normaliser).
    ``released_code_log_tilt`` is that extra term; ``gpbayes.mcmc.hyper_slice``
    adds it with ``target="released-code"`` (never a default) to reproduce
    what the released code samples.  The tilt is exact when the site variances
    are all equal (Ionosphere: a stationary kernel and the symmetric logistic
    likelihood give one S_ii for every i); with unequal S_ii the released line
    also divides the *total* squared residual by each S_ii (MATLAB's ``./``
    after ``sum``), a vector-valued "log density" whose slice test MATLAB
    reduces with "all", which no scalar target reproduces.

Auxiliary noise S_psi (M&A Sec. 3.2, eqs. 12-13)
    The likelihood's ``site_fit`` / ``taylor_fit`` (``gpbayes.likelihoods``,
    built in ``gpbayes.site_approximations``): moment matching for the probit
    and logistic (and, from its tilted moments, for any likelihood without a
    fit of its own), Laplace for the Poisson, exact for the Gaussian;
    thresholded at ``max_noise_ratio * Sigma_ii``.

A psi whose covariance cannot be factorised even with ``linalg.cholesky``'s
escalating jitter is given log-density -inf (the proposal is rejected).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np

from . import linalg, priors
from . import site_approximations as sites
from .site_approximations import DEFAULT_MAX_NOISE_RATIO

__all__ = [
    "LatentGaussianModel",
    "Evaluation",
    "prior_factor",
    "log_normal_prior",
    "whiten",
    "unwhiten",
    "whitened_log_conditional",
    "ROOTS",
    "DEFAULT_ROOT",
    "SurrogateFactors",
    "surrogate_factors",
    "surrogate_factors_at",
    "draw_surrogate_data",
    "surrogate_mean",
    "surrogate_sqrt_apply",
    "surrogate_whiten",
    "surrogate_unwhiten",
    "surrogate_log_marginal",
    "surrogate_log_det_root",
    "surrogate_log_conditional",
    "TARGETS",
    "DEFAULT_TARGET",
    "released_code_log_tilt",
    "DEFAULT_MAX_NOISE_RATIO",
]

_LOG_2PI = math.log(2.0 * math.pi)
_CACHE_SIZE = 64
ROOTS = ("prior", "precision")
DEFAULT_ROOT = "prior"
#: "posterior": p(psi, f | y) (M&A eq. 11 for surr-); "released-code": a DIAGNOSTIC, not the posterior
#: (``released_code_log_tilt``)
TARGETS = ("posterior", "released-code")
DEFAULT_TARGET = "posterior"


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LatentGaussianModel:
    """psi ~ prior, f ~ N(0, K(X, X; psi)), y_i ~ likelihood(f_i [+ m]) (M&A eq. 3; F&G eq. 1).

    ``psi`` holds the kernel's log-parameters (``kernel.param_names``) and,
    with ``sample_offset``, a last coordinate m added to the (Poisson)
    likelihood's offset (not logged).  ``kernel`` follows
    ``gpbayes.kernels.Kernel``; ``prior`` is an ``IndependentPrior`` over all
    of psi.  ``max_noise_ratio`` caps the surrogate noise
    (``gpbayes.site_approximations``).  The site fits are cached by
    (diag Sigma, m): for a stationary kernel they depend on psi only through
    sigma_f^2 and m, so the logistic quadratures are not redone when only a
    lengthscale moves.
    """

    kernel: Any
    X: np.ndarray
    likelihood: Any
    y: np.ndarray
    prior: Any
    sample_offset: bool = False
    max_noise_ratio: float = DEFAULT_MAX_NOISE_RATIO
    _cache: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)
    _log_prior_fn: Any = dataclasses.field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "y", self.likelihood.check_targets(self.y))
        object.__setattr__(self, "_log_prior_fn", priors.vectorised_log_density(self.prior))
        if len(self.prior) != self.n_params:
            raise ValueError(f"prior has {len(self.prior)} components, psi has {self.n_params} "
                             f"{self.param_names}")
        if self.sample_offset:
            try:
                self.likelihood.with_offset(0.0)
            except NotImplementedError:
                raise ValueError(f"sample_offset needs a likelihood with an offset on f (the Poisson's log-rate "
                                 f"offset); the {self.likelihood.name} likelihood has none") from None

    @property
    def n(self) -> int:
        """The number of observations (and latent values f)."""
        return int(np.shape(self.y)[0])

    @property
    def n_params(self) -> int:
        """The length of psi: the kernel's log-parameters, plus the offset m with ``sample_offset``."""
        return self.kernel.n_params + int(self.sample_offset)

    @property
    def param_names(self) -> list[str]:
        """The names of psi's coordinates: the kernel's, then ``"offset"`` with ``sample_offset``."""
        return list(self.kernel.param_names) + (["offset"] if self.sample_offset else [])

    def kernel_params(self, psi) -> np.ndarray:
        """The kernel's log-parameters (psi without the offset)."""
        return np.asarray(psi, dtype=np.float64)[: self.kernel.n_params]

    def offset(self, psi) -> float:
        """The offset m of the log-rate in psi (its last coordinate) with ``sample_offset``, else 0."""
        return float(psi[-1]) if self.sample_offset else 0.0

    def likelihood_at(self, psi):
        """The likelihood with the offset m of psi added (the likelihood itself without ``sample_offset``)."""
        if not self.sample_offset:
            return self.likelihood
        return self.likelihood.with_offset(float(psi[-1]))

    def log_likelihood(self, psi, f) -> float:
        """log L(f) = sum_i log p(y_i | f_i [+ m])."""
        # np.add.reduce: np.sum's own reduction of a vector, without its wrapper (ELL-SS calls this ~7 times a step)
        return float(np.add.reduce(self.likelihood_at(psi).log_lik(self.y, f)))

    def log_prior(self, psi) -> float:
        """log p_h(psi), on psi (with the Jacobian of the log, ``gpbayes.priors``)."""
        psi = np.asarray(psi, dtype=np.float64)
        if self._log_prior_fn is not None:
            return self._log_prior_fn(psi)
        return float(self.prior.log_density(psi))

    def covariance(self, psi) -> np.ndarray:
        """Sigma_psi = K(X, X; psi)."""
        return self.kernel(self.kernel_params(psi), self.X)

    def prior_variance(self, psi) -> np.ndarray:
        """diag(Sigma_psi), without forming Sigma."""
        return np.asarray(self.kernel.diag(self.kernel_params(psi), self.X), dtype=np.float64)

    def noise_and_centre(self, psi, kind: str = "site") -> tuple[np.ndarray, np.ndarray]:
        """(diag S_psi, h_psi) of the ``"site"`` (M&A eq. 12) or ``"taylor"`` (eq. 13) fit."""
        s2 = self.prior_variance(psi)
        key = (kind, s2.tobytes(), self.offset(psi))
        hit = self._cache.get(key)
        if hit is None:
            fit = sites.site_noise_and_centre if kind == "site" else sites.taylor_noise_and_centre
            hit = fit(self.likelihood_at(psi), self.y, s2, max_noise_ratio=self.max_noise_ratio)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def site_noise(self, psi) -> np.ndarray:
        """diag S_psi of the site fit (M&A eq. 12): the SURR auxiliary noise."""
        return self.noise_and_centre(psi, "site")[0]


class Evaluation(NamedTuple):
    """log p(psi | auxiliaries, y) up to a constant, and what was built for it.

    ``f`` is f(psi, auxiliaries); ``log_density = log_likelihood + log_prior``
    (+ log N(g; 0, Sigma + S) = ``log_surrogate_marginal`` for SURR).  When
    the prior density is zero or the covariance cannot be factorised,
    ``log_density`` is -inf and the array fields are None.
    """

    log_density: float
    f: np.ndarray | None
    log_likelihood: float
    log_prior: float
    chol_prior: np.ndarray | None
    surrogate: "SurrogateFactors | None" = None
    log_surrogate_marginal: float = 0.0


def _rejected(log_prior: float) -> Evaluation:
    return Evaluation(-math.inf, None, -math.inf, log_prior, None)


def prior_factor(model: LatentGaussianModel, psi) -> np.ndarray:
    """Lower Cholesky factor of Sigma_psi (1 O(n^3) operation)."""
    return linalg.cholesky(model.covariance(psi), name="GP prior covariance K(psi)")


def log_normal_prior(chol_prior: np.ndarray, f: np.ndarray) -> float:
    """log N(f; 0, L L^T); O(n^2)."""
    z = linalg.solve_triangular(chol_prior, f)
    return -0.5 * float(z @ z) - 0.5 * linalg.logdet_from_cholesky(chol_prior) - 0.5 * f.shape[0] * _LOG_2PI


# ---------------------------------------------------------------------------
# whitened prior (AA): M&A eqs. 5-6, Alg. 2
# ---------------------------------------------------------------------------
def whiten(chol_prior: np.ndarray, f: np.ndarray) -> np.ndarray:
    """nu = L^-1 f (M&A Alg. 2, step 1); O(n^2)."""
    return linalg.solve_triangular(chol_prior, f, lower=True)


def unwhiten(chol_prior: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """f = L nu (M&A eq. 5, Alg. 2 step 3); O(n^2)."""
    return chol_prior @ nu


def whitened_log_conditional(model: LatentGaussianModel, psi, nu) -> Evaluation:
    """log p(psi | nu, y) = log L(L_psi nu) + log p_h(psi)  (M&A eq. 6).

    Costs one Cholesky factorisation unless the prior density is zero.
    """
    psi = np.asarray(psi, dtype=np.float64)
    log_prior = model.log_prior(psi)
    if log_prior == -math.inf:
        return _rejected(log_prior)
    try:
        L = prior_factor(model, psi)
    except linalg.NotPositiveDefiniteError:
        return _rejected(log_prior)
    f = unwhiten(L, nu)
    log_lik = model.log_likelihood(psi, f)
    return Evaluation(log_lik + log_prior, f, log_lik, log_prior, L)


# ---------------------------------------------------------------------------
# surrogate data (SURR, and the post- representations): M&A eqs. 7-11, 14
# ---------------------------------------------------------------------------
class SurrogateFactors(NamedTuple):
    """Everything O(n^3) the surrogate/posterior representations need at one psi.

    Sigma = L L^T, S = diag(noise_var); ``chol_root`` is M with
    M M^T = B = I + L^T S^-1 L (``root="prior"``, L_R = L M^-T) or C with
    C C^T = Sigma^-1 + S^-1 (``root="precision"``, L_R = C^-T).
    """

    chol_prior: np.ndarray
    noise_var: np.ndarray
    chol_root: np.ndarray
    root: str = DEFAULT_ROOT


def surrogate_factors(chol_prior: np.ndarray, noise_var: np.ndarray, root: str = DEFAULT_ROOT) -> SurrogateFactors:
    """Factors of R = (Sigma^-1 + S^-1)^-1 for the chosen square root: 2 O(n^3) operations.

    ``"prior"``: the product B = I + L^T S^-1 L and chol(B); ``"precision"``:
    Sigma^-1 from L (as Murray's code: ``inv(K)``) and chol(Sigma^-1 + S^-1).
    """
    s = np.asarray(noise_var, dtype=np.float64)
    if root == "prior":
        W = chol_prior / np.sqrt(noise_var)[:, None]  # S^-1/2 L
        B = linalg.matmul(W.T, W)
        B[np.diag_indices_from(B)] += 1.0
        return SurrogateFactors(chol_prior, s, linalg.cholesky(B, name="surrogate I + L^T S^-1 L"), root)
    if root != "precision":
        raise ValueError(f"root must be one of {ROOTS}, got {root!r}")
    A = linalg.cho_inverse(chol_prior)
    A[np.diag_indices_from(A)] += 1.0 / s
    return SurrogateFactors(chol_prior, s, linalg.cholesky(A, name="surrogate precision Sigma^-1 + S^-1"), root)


def surrogate_factors_at(model: LatentGaussianModel, psi, kind: str = "site",
                         root: str = DEFAULT_ROOT) -> SurrogateFactors:
    """chol(Sigma_psi), S_psi of the ``kind`` fit and the root's factor: 3 O(n^3) operations."""
    L = prior_factor(model, psi)
    return surrogate_factors(L, model.noise_and_centre(psi, kind)[0], root)


def draw_surrogate_data(rng: np.random.Generator, f: np.ndarray, noise_var: np.ndarray) -> np.ndarray:
    """g ~ N(f, S) (M&A eq. 7; Alg. 3 step 1)."""
    return f + np.sqrt(noise_var) * rng.standard_normal(f.shape[0])


def _woodbury_vector(factors: SurrogateFactors, g: np.ndarray) -> np.ndarray:
    """a with m_psi,g = L_R a: M^-1 L^T S^-1 g (prior root) or C^-1 S^-1 g (precision root)."""
    if factors.root == "prior":
        return linalg.solve_triangular(factors.chol_root, factors.chol_prior.T @ (g / factors.noise_var))
    return linalg.solve_triangular(factors.chol_root, g / factors.noise_var)


def surrogate_sqrt_apply(factors: SurrogateFactors, eta: np.ndarray) -> np.ndarray:
    """L_R eta, with L_R L_R^T = R: L M^-T eta or C^-T eta; O(n^2)."""
    if factors.root == "prior":
        return factors.chol_prior @ linalg.solve_triangular(factors.chol_root, eta, trans=True)
    return linalg.solve_triangular(factors.chol_root, eta, trans=True)


def surrogate_mean(factors: SurrogateFactors, g: np.ndarray) -> np.ndarray:
    """m = R S^-1 g = L_R a (M&A eq. 9); O(n^2)."""
    return surrogate_sqrt_apply(factors, _woodbury_vector(factors, g))


def surrogate_whiten(factors: SurrogateFactors, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """eta = L_R^-1 (f - m) (M&A Alg. 3 step 2, Alg. 4 step 2); O(n^2).

    Prior root (L_R = L M^-T, m = L M^-T a): eta = M^T L^-1 f - a;
    precision root (L_R = C^-T): eta = C^T f - a.
    """
    a = _woodbury_vector(factors, g)
    if factors.root == "prior":
        return factors.chol_root.T @ linalg.solve_triangular(factors.chol_prior, f) - a
    return factors.chol_root.T @ f - a


def surrogate_unwhiten(factors: SurrogateFactors, eta: np.ndarray, g: np.ndarray) -> np.ndarray:
    """f = L_R eta + m = L_R (eta + a) (M&A eq. 10; Alg. 3 step 4, Alg. 4 step 7); O(n^2)."""
    return surrogate_sqrt_apply(factors, eta + _woodbury_vector(factors, g))


def surrogate_log_marginal(factors: SurrogateFactors, g: np.ndarray) -> float:
    """log N(g; 0, Sigma + S) (M&A eq. 8) by Woodbury and the determinant lemma; O(n^2).

    |Sigma + S| = |S| |B| (prior root) = |Sigma| |S| |Sigma^-1 + S^-1| (precision root).
    """
    a = _woodbury_vector(factors, g)
    quad = float(g @ (g / factors.noise_var) - a @ a)
    if factors.root == "prior":
        logdet = float(np.sum(np.log(factors.noise_var))) + linalg.logdet_from_cholesky(factors.chol_root)
    else:
        logdet = (linalg.logdet_from_cholesky(factors.chol_prior) + float(np.sum(np.log(factors.noise_var)))
                  + linalg.logdet_from_cholesky(factors.chol_root))
    return -0.5 * (quad + logdet + g.shape[0] * _LOG_2PI)


def surrogate_log_det_root(factors: SurrogateFactors) -> float:
    """log |L_R|: log|L| - log|M| (prior root) or -log|C| (precision root); the Jacobian of eq. 14."""
    half = 0.5 * linalg.logdet_from_cholesky(factors.chol_root)
    if factors.root == "prior":
        return 0.5 * linalg.logdet_from_cholesky(factors.chol_prior) - half
    return -half


def released_code_log_tilt(noise_var: np.ndarray) -> float:
    """-1/2 sum_i log S_ii: what Murray's released surrogate-data code adds to the log posterior.

    A DIAGNOSTIC, not part of any correct target.  The released
    ``update_theta_aux_surr.m`` computes log N(g; f, S) as
    ``... - sum(log(pp.aux_var.*ones(size(pp.ff))))``, i.e. -log|S| where the
    Gaussian normaliser is -1/2 log|S| (M&A eq. 11 is correct; the code is
    not), so with S = S(psi) (eq. 12) it samples
    p(psi, f | y) prod_i S_ii(psi)^(-1/2).  This returns the log of that
    extra factor (a function of psi only); see the module docstring for when
    it reproduces the released code exactly.  O(n).
    """
    return -0.5 * float(np.sum(np.log(np.asarray(noise_var, dtype=np.float64))))


def surrogate_log_conditional(model: LatentGaussianModel, psi, eta, g) -> Evaluation:
    """log p(psi | eta, g, y) = log L(f) + log N(g; 0, Sigma + S) + log p_h(psi)  (M&A eq. 11).

    f = L_R eta + m_psi,g with the site noise of eq. 12 and the prior root.
    Costs 3 O(n^3) operations unless the prior density is zero.
    """
    psi = np.asarray(psi, dtype=np.float64)
    log_prior = model.log_prior(psi)
    if log_prior == -math.inf:
        return _rejected(log_prior)
    try:
        factors = surrogate_factors_at(model, psi)
    except linalg.NotPositiveDefiniteError:
        return _rejected(log_prior)
    f = surrogate_unwhiten(factors, eta, g)
    log_lik = model.log_likelihood(psi, f)
    log_marg = surrogate_log_marginal(factors, g)
    return Evaluation(
        log_lik + log_marg + log_prior, f, log_lik, log_prior, factors.chol_prior, factors, log_marg
    )
