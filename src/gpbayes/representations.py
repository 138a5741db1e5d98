"""Representations of a latent Gaussian model for updating its hyperparameters.

Model (Murray & Adams 2010, Sec. 1.1): psi ~ p_h, f | psi ~ N(0, Sigma_psi),
y | f ~ prod_i L_i(f_i), with psi = log theta (``gpbayes.priors``).
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

Auxiliary noise S_psi (M&A Sec. 3.2, eq. 12)
    S_ii is the Gaussian "observation noise" that, at site i alone, would turn
    the marginal prior N(f_i; 0, Sigma_ii) into a Gaussian fit to the site
    posterior  p(f_i | L_i) ~ L_i(f_i) N(f_i; 0, Sigma_ii)  with variance v_i:
        S_ii = (1/v_i - 1/Sigma_ii)^-1 = v_i Sigma_ii / (Sigma_ii - v_i).
    ``site_noise_variances`` gives, with s2 = Sigma_ii:

    * probit, moment matching (closed form; R&W eq. 3.58 with mu = 0):
      the site posterior has mean mu_1 = y s2 sqrt(2/pi) / sqrt(1 + s2) and
      variance v = s2 - mu_1^2, so
          S_ii = pi/2 + (pi/2 - 1) s2       (positive, independent of y);
    * logistic, moment matching (numerical, 1-D): by the symmetry
      sigma(f) + sigma(-f) = 1 the site posterior has Z = 1/2,
      E f^2 = s2 and mean mu_1 = y s2 E_{N(0,s2)}[2 sigma(f) sigma(-f)]
      (Stein's lemma), so v = s2 - mu_1^2 and S_ii = (s2 - mu_1^2) s2 / mu_1^2;
      the expectation is computed by adaptive quadrature once per distinct s2;
    * Poisson, Laplace site approximation (M&A Sec. 5 "We used Laplace
      approximations for the Poisson likelihood"): the site mode f^ solves
      y - r(f) - f / s2 = 0, r(f) = exposure exp(f + offset), found by
      Newton's method (monotone from the right, since the left side is
      concave and decreasing); then 1/v = r(f^) + 1/s2 and S_ii = 1 / r(f^);
    * Gaussian likelihood: the site posterior is exact, S_ii = noise variance.

    Thresholding ("Any negative (S)_ii must be thresholded", M&A Sec. 3.2;
    "Infinite variances were truncated to a large value", Sec. 5): a value
    that is negative, zero, non-finite, or larger than ``max_noise_ratio *
    Sigma_ii`` (default 1e6) is set to ``max_noise_ratio * Sigma_ii``.  Such a
    site's surrogate observation carries at most 1e-6 of the prior
    precision, i.e. it says "no information", which is what a site posterior
    as wide as the prior means.  (For the probit S is always in range; for
    the logistic and Poisson it can exceed the cap only when Sigma_ii is tiny
    or the expected count is tiny.)

A psi whose covariance cannot be factorised even with ``linalg.cholesky``'s
escalating jitter is given log-density -inf (the proposal is rejected).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np
from scipy import integrate
from scipy.special import expit

from . import linalg

__all__ = [
    "LatentGaussianModel",
    "Evaluation",
    "prior_factor",
    "whiten",
    "unwhiten",
    "whitened_log_conditional",
    "site_noise_variances",
    "probit_site_noise",
    "logistic_site_noise",
    "poisson_laplace_site_noise",
    "SurrogateFactors",
    "surrogate_factors",
    "surrogate_factors_at",
    "draw_surrogate_data",
    "surrogate_mean",
    "surrogate_sqrt_apply",
    "surrogate_whiten",
    "surrogate_unwhiten",
    "surrogate_log_marginal",
    "surrogate_log_conditional",
    "DEFAULT_MAX_NOISE_RATIO",
]

_LOG_2PI = math.log(2.0 * math.pi)
DEFAULT_MAX_NOISE_RATIO = 1e6


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LatentGaussianModel:
    """psi ~ prior, f ~ N(0, K_psi(X, X)), y_i ~ likelihood(f_i).

    ``kernel`` is a ``kernels.SquaredExponential`` (or anything with
    ``kernel(psi, X) -> K``); ``prior`` an ``IndependentPrior`` on psi.
    ``max_noise_ratio`` caps the surrogate noise, see the module docstring.
    """

    kernel: Any
    X: np.ndarray
    likelihood: Any
    y: np.ndarray
    prior: Any
    max_noise_ratio: float = DEFAULT_MAX_NOISE_RATIO

    @property
    def n(self) -> int:
        return int(np.shape(self.y)[0])

    def covariance(self, psi) -> np.ndarray:
        return self.kernel(psi, self.X)

    def log_likelihood(self, f) -> float:
        return float(np.sum(self.likelihood.log_lik(self.y, f)))

    def log_prior(self, psi) -> float:
        return float(self.prior.log_density(psi))

    def prior_variance(self, psi) -> np.ndarray:
        """diag(Sigma_psi), without forming Sigma when the kernel offers ``diag``."""
        if hasattr(self.kernel, "diag"):
            return np.asarray(self.kernel.diag(psi, self.X), dtype=np.float64)
        return np.diag(self.covariance(psi)).copy()

    def site_noise(self, prior_var) -> np.ndarray:
        return site_noise_variances(
            self.likelihood, self.y, prior_var, max_noise_ratio=self.max_noise_ratio
        )


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
    log_lik = model.log_likelihood(f)
    return Evaluation(log_lik + log_prior, f, log_lik, log_prior, L)


# ---------------------------------------------------------------------------
# surrogate noise S_psi: M&A Sec. 3.2, eq. 12
# ---------------------------------------------------------------------------
def _threshold(s: np.ndarray, prior_var: np.ndarray, max_noise_ratio: float) -> np.ndarray:
    cap = max_noise_ratio * prior_var
    bad = ~np.isfinite(s) | (s <= 0.0) | (s > cap)
    return np.where(bad, cap, s)


def probit_site_noise(prior_var) -> np.ndarray:
    """Moment-matched S_ii for the probit: pi/2 + (pi/2 - 1) Sigma_ii."""
    s2 = np.asarray(prior_var, dtype=np.float64)
    return 0.5 * math.pi + (0.5 * math.pi - 1.0) * s2


def _logistic_site_mean_abs(s2: float) -> float:
    """|E f| of the site posterior sigma(y f) N(f; 0, s2) = s2 E[2 sigma(f) sigma(-f)]."""
    sd = math.sqrt(s2)

    def integrand(t):  # t ~ N(0, 1), f = sd t; symmetric, integrate t >= 0 twice
        p = expit(sd * t)
        return 2.0 * p * (1.0 - p) * math.exp(-0.5 * t * t)

    val, _ = integrate.quad(integrand, 0.0, math.inf, epsabs=1e-13, epsrel=1e-11, limit=200)
    return s2 * 2.0 * val / math.sqrt(2.0 * math.pi)


def logistic_site_noise(prior_var) -> np.ndarray:
    """Moment-matched S_ii for the logistic likelihood (unthresholded)."""
    s2 = np.asarray(prior_var, dtype=np.float64)
    out = np.empty_like(s2)
    for value in np.unique(s2):  # one quadrature per distinct prior variance
        mu = _logistic_site_mean_abs(float(value))
        v = value - mu * mu  # site posterior variance; E f^2 = s2 by symmetry
        out[s2 == value] = v * value / (mu * mu) if mu > 0 else math.inf
    return out


def poisson_laplace_site_noise(likelihood, y, prior_var, max_iter: int = 100) -> np.ndarray:
    """Laplace site S_ii = 1 / rate(f^) for the Poisson likelihood (unthresholded).

    f^ maximises y f - lam exp(f) - f^2 / (2 s2), lam = exposure exp(offset):
    the root of g(f) = y - lam e^f - f / s2, which is decreasing and concave.
    Newton's method started where g <= 0 stays right of the root and
    converges monotonically.
    """
    y = np.asarray(y, dtype=np.float64)
    s2 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape)
    log_lam = np.broadcast_to(
        np.log(likelihood.exposure) + np.asarray(likelihood.offset, dtype=np.float64), y.shape
    )

    def g(f):
        with np.errstate(over="ignore"):
            return y - np.exp(log_lam + f) - f / s2

    # start: the smallest of these candidates at which g <= 0 (y s2 always is)
    cands = np.stack([y * s2, np.log(y + 1.0) - log_lam, np.zeros_like(y)])
    ok = np.stack([g(c) <= 0.0 for c in cands])
    f = np.min(np.where(ok, cands, np.inf), axis=0)
    for _ in range(max_iter):
        rate = np.exp(log_lam + f)
        step = (y - rate - f / s2) / (rate + 1.0 / s2)  # -g / g'
        f = f + step
        if np.all(np.abs(step) <= 1e-12 * (1.0 + np.abs(f))):
            break
    return np.exp(-(log_lam + f))


def site_noise_variances(likelihood, y, prior_var, *, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO):
    """Diagonal of S_psi from site fits to L_i(f_i) N(f_i; 0, Sigma_ii) (M&A eq. 12).

    ``prior_var`` is diag(Sigma_psi).  See the module docstring for the
    formulas and the thresholding.
    """
    y = np.asarray(y, dtype=np.float64)
    s2 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape).copy()
    name = getattr(likelihood, "name", None)
    if name == "probit":
        s = probit_site_noise(s2)
    elif name == "logistic":
        s = logistic_site_noise(s2)
    elif name == "poisson":
        s = poisson_laplace_site_noise(likelihood, y, s2)
    elif name == "gaussian":
        s = np.full(y.shape, float(likelihood.noise_variance))
    else:
        raise ValueError(f"no site approximation for likelihood {name!r}")
    return _threshold(s, s2, max_noise_ratio)


# ---------------------------------------------------------------------------
# surrogate data (SURR): M&A eqs. 7-11, Alg. 3
# ---------------------------------------------------------------------------
class SurrogateFactors(NamedTuple):
    """Factors for one psi: Sigma = L L^T, S = diag(noise_var), B = M M^T."""

    chol_prior: np.ndarray  # L
    noise_var: np.ndarray  # diag of S
    chol_b: np.ndarray  # M, B = I + L^T S^-1 L


def surrogate_factors(chol_prior: np.ndarray, noise_var: np.ndarray) -> SurrogateFactors:
    """B = I + L^T S^-1 L and its factor M: 2 O(n^3) operations (product, Cholesky)."""
    W = chol_prior / np.sqrt(noise_var)[:, None]  # S^-1/2 L
    B = linalg.matmul(W.T, W)
    B[np.diag_indices_from(B)] += 1.0
    M = linalg.cholesky(B, name="surrogate I + L^T S^-1 L")
    return SurrogateFactors(chol_prior, np.asarray(noise_var, dtype=np.float64), M)


def draw_surrogate_data(rng: np.random.Generator, f: np.ndarray, noise_var: np.ndarray) -> np.ndarray:
    """g ~ N(f, S) (M&A eq. 7; Alg. 3 step 1)."""
    return f + np.sqrt(noise_var) * rng.standard_normal(f.shape[0])


def _woodbury_vector(factors: SurrogateFactors, g: np.ndarray) -> np.ndarray:
    """a = M^-1 L^T S^-1 g."""
    return linalg.solve_triangular(factors.chol_b, factors.chol_prior.T @ (g / factors.noise_var))


def surrogate_mean(factors: SurrogateFactors, g: np.ndarray) -> np.ndarray:
    """m = R S^-1 g = L M^-T a (M&A eq. 9); O(n^2)."""
    a = _woodbury_vector(factors, g)
    return factors.chol_prior @ linalg.solve_triangular(factors.chol_b, a, trans=True)


def surrogate_sqrt_apply(factors: SurrogateFactors, eta: np.ndarray) -> np.ndarray:
    """L_R eta = L M^-T eta, with L_R L_R^T = R; O(n^2)."""
    return factors.chol_prior @ linalg.solve_triangular(factors.chol_b, eta, trans=True)


def surrogate_whiten(factors: SurrogateFactors, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """eta = L_R^-1 (f - m) (M&A Alg. 3 step 2); O(n^2).

    With L_R = L M^-T and m = L M^-T a:  eta = M^T L^-1 f - a.
    """
    a = _woodbury_vector(factors, g)
    return factors.chol_b.T @ linalg.solve_triangular(factors.chol_prior, f) - a


def surrogate_unwhiten(factors: SurrogateFactors, eta: np.ndarray, g: np.ndarray) -> np.ndarray:
    """f = L_R eta + m = L M^-T (eta + a) (M&A eq. 10; Alg. 3 step 4); O(n^2)."""
    return surrogate_sqrt_apply(factors, eta + _woodbury_vector(factors, g))


def surrogate_log_marginal(factors: SurrogateFactors, g: np.ndarray) -> float:
    """log N(g; 0, Sigma + S) (M&A eq. 8) by Woodbury and the determinant lemma."""
    a = _woodbury_vector(factors, g)
    quad = float(g @ (g / factors.noise_var) - a @ a)
    logdet = float(np.sum(np.log(factors.noise_var))) + linalg.logdet_from_cholesky(factors.chol_b)
    return -0.5 * (quad + logdet + g.shape[0] * _LOG_2PI)


def surrogate_factors_at(model: LatentGaussianModel, psi) -> SurrogateFactors:
    """chol(Sigma_psi), S_psi and chol(B): 3 O(n^3) operations."""
    L = prior_factor(model, psi)
    return surrogate_factors(L, model.site_noise(model.prior_variance(psi)))


def surrogate_log_conditional(model: LatentGaussianModel, psi, eta, g) -> Evaluation:
    """log p(psi | eta, g, y) = log L(f) + log N(g; 0, Sigma + S) + log p_h(psi)  (M&A eq. 11).

    f = L_R eta + m_psi,g.  Costs 3 O(n^3) operations unless the prior density
    is zero.
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
    log_lik = model.log_likelihood(f)
    log_marg = surrogate_log_marginal(factors, g)
    return Evaluation(
        log_lik + log_marg + log_prior, f, log_lik, log_prior, factors.chol_prior, factors, log_marg
    )
