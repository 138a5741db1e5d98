"""Gaussian fits to single likelihood sites: the noise S and centre of Murray & Adams eqs. 12-13.

The surrogate-data and posterior-based representations
(``gpbayes.representations``) need, for each site i, a Gaussian
"observation" N(g_i; f_i, S_ii) standing in for the likelihood L_i(f_i).

Site fit (M&A Sec. 3.2, eq. 12)
    S_ii is the noise that, at site i alone, turns the marginal prior
    N(f_i; 0, Sigma_ii) into a Gaussian fit N(mu_i, v_i) to the site
    posterior  L_i(f_i) N(f_i; 0, Sigma_ii):
        S_ii = (1/v_i - 1/Sigma_ii)^-1 = v_i Sigma_ii / (Sigma_ii - v_i),
    and the centre is g_i = S_ii mu_i / v_i; we carry its natural parameter
    h_i = g_i / S_ii = mu_i / v_i.  With s2 = Sigma_ii:

    * probit, moment matching (closed form; R&W eq. 3.58 with mu = 0): the
      site posterior has mean mu_1 = y s2 sqrt(2/pi) / sqrt(1 + s2) and
      variance v = s2 - mu_1^2, so  S_ii = pi/2 + (pi/2 - 1) s2  (positive,
      independent of y);
    * logistic, moment matching (numerical, 1-D): by the symmetry
      sigma(f) + sigma(-f) = 1 the site posterior has Z = 1/2, E f^2 = s2
      and mean mu_1 = y s2 E_{N(0,s2)}[2 sigma(f) sigma(-f)] (Stein's lemma),
      so v = s2 - mu_1^2 and S_ii = (s2 - mu_1^2) s2 / mu_1^2; the
      expectation is computed by adaptive quadrature once per distinct s2;
    * for both, |mu| = s2 / sqrt(S + s2) and h_i = y_i sqrt(S_ii + s2) / S_ii;
    * Poisson, Laplace site approximation (M&A Sec. 5 "We used Laplace
      approximations for the Poisson likelihood"): the site mode f^ solves
      y - r(f) - f / s2 = 0, r(f) = exposure exp(f + offset), by Newton's
      method (monotone from the right: the left side is concave and
      decreasing); then 1/v = r(f^) + 1/s2, S_ii = 1 / r(f^), mu = f^;
    * Gaussian likelihood: the site posterior is exact, S_ii = noise
      variance and h_i = y_i / S_ii (post-site = post-taylor = the exact
      reparameterisation of Christensen et al.).

    * any other likelihood (the default of ``Likelihood.site_fit``,
      ``moment_matched_fit``): moment matching from its tilted moments
      (``Likelihood.tilted_moments``, analytic or Gauss-Hermite) at the prior
      "cavity" (0, s2): S_ii = -1/d2 - s2, h_i = d1 / (1 + s2 d2).

Which fit a likelihood uses is its own choice: ``site_noise_and_centre`` and
``taylor_noise_and_centre`` call the likelihood's ``site_fit`` /
``taylor_fit`` (``gpbayes.likelihoods``), which are built from the functions
of this module.

Taylor fit (M&A eq. 13, Christensen et al.)
    S_ii = -1 / (d^2 log L_i / df_i^2)(f^_i) at the likelihood's maximum f^,
    centre g^ = f^.  Poisson: f^_i = log(y_i / exposure_i) - offset,
    S_ii = 1 / y_i.  Probit/logistic: every maximum is at +-inf (M&A Sec. 5:
    the -taylor methods "reduce to other methods"), so every S_ii is the cap
    and h = 0.  Any other likelihood (``newton_taylor_fit``): f^ by Newton's
    method on log L_i; a maximum at +-inf shows as S_ii beyond the cap.

Thresholding ("Any negative (S_theta)_ii must be thresholded", M&A Sec. 3.2;
"Infinite variances were truncated to a large value", Sec. 5): a value that
is negative, zero, non-finite or larger than ``max_noise_ratio * Sigma_ii``
(1e6 by default) is set to that cap, and its h_i to 0.  Such a site's
surrogate observation carries at most 1e-6 of the prior precision: "no
information", neither on the variance nor on the mean, which is what a site
posterior as wide as the prior means.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

__all__ = [
    "DEFAULT_MAX_NOISE_RATIO",
    "site_noise_and_centre",
    "taylor_noise_and_centre",
    "site_noise_variances",
    "thresholded",
    "moment_matched_fit",
    "newton_taylor_fit",
    "binary_symmetric_fit",
    "poisson_site_fit",
    "poisson_taylor_fit",
    "probit_site_noise",
    "logistic_site_noise",
    "poisson_laplace_site_noise",
]

DEFAULT_MAX_NOISE_RATIO = 1e6


def _capped(s, s2, max_noise_ratio):
    """(S with out-of-range values set to the cap, mask of the capped sites)."""
    cap = max_noise_ratio * s2
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(s) | (s <= 0.0) | (s > cap)
    return np.where(bad, cap, s), bad


def probit_site_noise(prior_var) -> np.ndarray:
    """Moment-matched S_ii for the probit (eq. 12): pi/2 + (pi/2 - 1) Sigma_ii."""
    s2 = np.asarray(prior_var, dtype=np.float64)
    return 0.5 * math.pi + (0.5 * math.pi - 1.0) * s2


def _logistic_site_mean_abs(s2: float) -> float:
    """|E f| of the site posterior sigma(y f) N(f; 0, s2) = s2 E[2 sigma(f) sigma(-f)]."""
    sd = math.sqrt(s2)

    def integrand(t):  # t ~ N(0, 1), f = sd t; symmetric, integrate t >= 0 twice
        p = expit(sd * t)
        return 2.0 * p * (1.0 - p) * math.exp(-0.5 * t * t)

    from scipy import integrate  # imported where used: scipy.integrate costs ~0.2 s of every job's start-up

    val, _ = integrate.quad(integrand, 0.0, math.inf, epsabs=1e-13, epsrel=1e-11, limit=200)
    return s2 * 2.0 * val / math.sqrt(2.0 * math.pi)


def logistic_site_noise(prior_var) -> np.ndarray:
    """Moment-matched S_ii for the logistic likelihood (eq. 12, unthresholded)."""
    s2 = np.asarray(prior_var, dtype=np.float64)
    out = np.empty_like(s2)
    for value in np.unique(s2):  # one quadrature per distinct prior variance
        mu = _logistic_site_mean_abs(float(value))
        v = value - mu * mu  # site posterior variance; E f^2 = s2 by symmetry
        out[s2 == value] = v * value / (mu * mu) if mu > 0 else math.inf
    return out


def poisson_laplace_site_noise(likelihood, y, prior_var, max_iter: int = 100) -> np.ndarray:
    """Laplace site S_ii = 1 / rate(f^) for the Poisson likelihood (eq. 12, unthresholded).

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


def _prior_var(y, prior_var):
    """(y, diag Sigma broadcast to y's shape) as float arrays (a copy: callers may not alias)."""
    y = np.asarray(y, dtype=np.float64)
    return y, np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape).copy()


def thresholded(raw, s2, max_noise_ratio, centre):
    """(S, h): ``raw`` S with the out-of-range values set to the cap (module docstring), h = ``centre(S)``
    on the other sites and 0 on the capped ones ("no information", M&A Sec. 3.2 and 5)."""
    s, bad = _capped(raw, s2, max_noise_ratio)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        h = centre(s)
    return s, np.where(bad, 0.0, h)


def binary_symmetric_fit(y, s2, raw, max_noise_ratio):
    """(S, h) for a moment-matched binary site with |mu| = s2 / sqrt(S + s2), v = s2 S / (S + s2):
    h = mu / v = y sqrt(S + s2) / S (probit and logistic, module docstring)."""
    return thresholded(raw, s2, max_noise_ratio, lambda s: y * np.sqrt(s + s2) / s)


def moment_matched_fit(likelihood, y, prior_var, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO):
    """M&A eq. 12 by moment matching, for any likelihood with ``tilted_moments`` (the protocol's default).

    The site posterior L_i(f) N(f; 0, s2) is the tilted distribution of the
    cavity (0, s2); with d1, d2 its log-normaliser's derivatives (R&W
    eq. 3.58) its mean is mu = s2 d1 and variance v = s2 + s2^2 d2, so
        S = (1/v - 1/s2)^-1 = -1/d2 - s2,    h = mu / v = d1 / (1 + s2 d2),
    one EP site update (R&W eq. 3.59) from the prior.  Thresholded.
    """
    y, s2 = _prior_var(y, prior_var)
    _, d1, d2 = likelihood.tilted_moments(y, np.zeros_like(y), s2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        raw = -1.0 / d2 - s2
        h = d1 / (1.0 + s2 * d2)
    return thresholded(raw, s2, max_noise_ratio, lambda s: h)


def newton_taylor_fit(likelihood, y, prior_var, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO,
                      max_iter: int = 100, tol: float = 1e-10):
    """M&A eq. 13 for any likelihood with ``d1``, ``d2`` (the protocol's default).

    f^_i maximises log L_i by Newton's method from 0 with step halving;
    S_ii = -1 / d2(f^_i), h_i = f^_i / S_ii.  A maximum at +-inf (a binary
    likelihood) shows as d2 -> 0 along the way: S_ii exceeds the cap and the
    site is thresholded (S = cap, h = 0), as M&A Sec. 5 prescribes.  Sites
    where Newton's method has not met ``tol`` on the gradient get the cap too.
    """
    y, s2 = _prior_var(y, prior_var)
    f = np.zeros_like(y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        val = likelihood.log_lik(y, f)
        for _ in range(max_iter):
            g, h = likelihood.d1(y, f), -likelihood.d2(y, f)
            step = np.where((h > 0) & np.isfinite(g / h), g / h, 0.0)
            for _ in range(60):  # halve where log L_i would fall
                f_new = f + step
                val_new = likelihood.log_lik(y, f_new)
                worse = ~(val_new >= val)
                if not np.any(worse):
                    break
                step = np.where(worse, 0.5 * step, step)
            f, val = np.where(worse, f, f_new), np.where(worse, val, val_new)
            if np.all(np.abs(step) <= tol * (1.0 + np.abs(f))):
                break
        g, h = likelihood.d1(y, f), -likelihood.d2(y, f)
        # a stationary point (|g| <= 1e-6 (1 + h (1 + |f|)): within ~1e-6 of it in f); else no maximum found
        raw = np.where(np.abs(g) <= 1e-6 * (1.0 + h * (1.0 + np.abs(f))), 1.0 / h, np.inf)
    return thresholded(raw, s2, max_noise_ratio, lambda s: f / s)


def poisson_site_fit(likelihood, y, prior_var, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO):
    """M&A eq. 12 for the Poisson by a Laplace fit to each site (``poisson_laplace_site_noise``):
    S = 1 / rate(f^), centre h = f^ / v = f^ (1/S + 1/s2).  Thresholded."""
    y, s2 = _prior_var(y, prior_var)
    raw = poisson_laplace_site_noise(likelihood, y, s2)
    log_lam = np.log(likelihood.exposure) + np.asarray(likelihood.offset, dtype=np.float64)

    def centre(s):
        mode = -np.log(s) - log_lam  # S = 1 / rate(f^)  =>  f^ = -log S - log(exposure e^m)
        return mode * (1.0 / s + 1.0 / s2)

    return thresholded(raw, s2, max_noise_ratio, centre)


def poisson_taylor_fit(likelihood, y, prior_var, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO):
    """M&A eq. 13 for the Poisson: f^_i = log(y_i / exposure_i) - offset, S_ii = 1 / y_i, h_i = f^_i y_i;
    a zero count has its maximum at -inf and an infinite variance, truncated to the cap."""
    y, s2 = _prior_var(y, prior_var)
    with np.errstate(divide="ignore"):
        raw = 1.0 / y
        mode = np.log(y) - np.log(likelihood.exposure) - np.asarray(likelihood.offset, dtype=np.float64)
    s, bad = _capped(raw, s2, max_noise_ratio)
    h = np.where(bad, 0.0, np.where(bad, 0.0, mode) * y)
    return s, h


def site_noise_and_centre(likelihood, y, prior_var, *, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO):
    """(diag S, h) of the Gaussian fit N(mu_i, v_i) to each site posterior (M&A eq. 12).

    ``prior_var`` is diag(Sigma).  The likelihood's ``site_fit``
    (``gpbayes.likelihoods.Likelihood``): moment matching for probit/logistic
    and, by default, for any likelihood; Laplace for the Poisson; exact for
    the Gaussian (module docstring).  Thresholded sites get S_ii = cap and h_i = 0.
    """
    y, s2 = _prior_var(y, prior_var)
    return likelihood.site_fit(y, s2, max_noise_ratio=max_noise_ratio)


def site_noise_variances(likelihood, y, prior_var, *, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO) -> np.ndarray:
    """diag S of ``site_noise_and_centre`` (M&A eq. 12): the SURR auxiliary noise."""
    return site_noise_and_centre(likelihood, y, prior_var, max_noise_ratio=max_noise_ratio)[0]


def taylor_noise_and_centre(likelihood, y, prior_var, *, max_noise_ratio=DEFAULT_MAX_NOISE_RATIO):
    """(diag S, h) of the Taylor fit at the likelihood's maximum (M&A eq. 13): S_ii = -1 / Lambda_ii(f^), h_i = f^_i / S_ii.

    The likelihood's ``taylor_fit``: Poisson f^_i = log(y_i / exposure_i) - offset,
    S_ii = 1 / y_i (a zero count truncated to the cap); probit/logistic every
    maximum at +-inf, so every S_ii is the cap and h = 0 (the -taylor
    representations then behave like prior-white); Gaussian exact; any other
    likelihood by Newton's method (``newton_taylor_fit``).
    """
    y, s2 = _prior_var(y, prior_var)
    return likelihood.taylor_fit(y, s2, max_noise_ratio=max_noise_ratio)
