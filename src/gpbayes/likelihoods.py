"""Factorised likelihoods p(y | f) = prod_i p(y_i | f_i).

Each likelihood gives, per observation, the log density and its first three
derivatives in f (the third is what the Laplace-approximation gradient needs,
Rasmussen & Williams 2006, Sec. 5.5.1).  ``check_targets`` rejects data the
likelihood cannot explain (labels outside {-1, +1}, negative counts, NaN)
with a message naming the offending values.

Formulas (R&W Sec. 3.4, eqs. 3.15-3.16 for probit/logistic):

* probit: log Phi(y f); d1 = y N(f)/Phi(y f); d2 = -r^2 - y f r, r = N(f)/Phi(y f).
* logistic: log sigmoid(y f); with t = (y + 1)/2, pi = sigmoid(f):
  d1 = t - pi, d2 = -pi (1 - pi), d3 = -pi (1 - pi)(1 - 2 pi).
* Gaussian(noise variance s2): -1/2 log(2 pi s2) - (y - f)^2 / (2 s2).
* Poisson with exposure E and offset m: rate = E exp(f + m);
  y log rate - rate - log y!; d1 = y - rate, d2 = d3 = -rate.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import expit, gammaln, log_ndtr

__all__ = ["Probit", "Logistic", "Gaussian", "Poisson", "make_likelihood"]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _finite(name: str, y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"{name}: targets must be a 1-D array, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: targets contain {np.count_nonzero(~np.isfinite(y))} NaN/inf values")
    return y


def _check_pm1(name: str, y) -> np.ndarray:
    y = _finite(name, y)
    bad = np.setdiff1d(np.unique(y), [-1.0, 1.0])
    if bad.size:
        raise ValueError(
            f"{name} likelihood needs labels in {{-1, +1}}; found other values {bad[:10].tolist()}"
        )
    return y


@dataclasses.dataclass(frozen=True)
class Probit:
    """p(y | f) = Phi(y f), y in {-1, +1}."""

    name = "probit"

    def check_targets(self, y):
        return _check_pm1(self.name, y)

    def log_lik(self, y, f):
        return log_ndtr(y * f)

    def _ratio(self, y, f):
        # r = N(f) / Phi(y f) computed in log space for stability
        z = y * f
        return np.exp(-0.5 * f * f - _LOG_SQRT_2PI - log_ndtr(z))

    def d1(self, y, f):
        return y * self._ratio(y, f)

    def log_lik_and_d1(self, y, f):
        """(log_lik(y, f), d1(y, f)) with one log Phi(y f) pass shared by both.

        The Gauss-Hermite quadrature of the sparse-GP expectations (Hensman
        et al. 2015, poster "Tricks: quadrature for the likelihood") needs
        both at the same N x Q points; the values are bit-identical to the
        two separate calls.
        """
        lp = log_ndtr(y * f)
        r = f * f
        r *= -0.5  # exact scaling: the same bits as (-0.5 f) f in ``_ratio``
        r -= _LOG_SQRT_2PI
        r -= lp
        np.exp(r, out=r)
        r *= y
        return lp, r

    def d2(self, y, f):
        r = self._ratio(y, f)
        return -r * r - y * f * r

    def d3(self, y, f):
        # derivative of d2 = -r^2 - y f r, with dr/df = -r (y r + f) ... (y^2 = 1)
        r = self._ratio(y, f)
        dr = -r * (f + y * r)
        return -2.0 * r * dr - y * r - y * f * dr


@dataclasses.dataclass(frozen=True)
class Logistic:
    """p(y | f) = sigmoid(y f), y in {-1, +1}."""

    name = "logistic"

    def check_targets(self, y):
        return _check_pm1(self.name, y)

    def log_lik(self, y, f):
        return -np.logaddexp(0.0, -y * f)

    def d1(self, y, f):
        return 0.5 * (y + 1.0) - expit(f)

    def d2(self, y, f):
        p = expit(f)
        return -p * (1.0 - p)

    def d3(self, y, f):
        p = expit(f)
        return -p * (1.0 - p) * (1.0 - 2.0 * p)


@dataclasses.dataclass(frozen=True)
class Gaussian:
    """p(y | f) = N(y; f, noise_variance)."""

    noise_variance: float = 1.0
    name = "gaussian"

    def __post_init__(self):
        if not (np.isfinite(self.noise_variance) and self.noise_variance > 0):
            raise ValueError(f"gaussian likelihood: noise_variance must be > 0, got {self.noise_variance}")

    def check_targets(self, y):
        return _finite(self.name, y)

    def log_lik(self, y, f):
        s2 = self.noise_variance
        return -0.5 * np.log(s2) - _LOG_SQRT_2PI - 0.5 * (y - f) ** 2 / s2

    def d1(self, y, f):
        return (y - f) / self.noise_variance

    def d2(self, y, f):
        return np.full(np.shape(f), -1.0 / self.noise_variance)

    def d3(self, y, f):
        return np.zeros(np.shape(f))


@dataclasses.dataclass(frozen=True)
class Poisson:
    """y ~ Poisson(exposure * exp(f + offset)); exposure/offset scalar or per bin."""

    exposure: float | np.ndarray = 1.0
    offset: float | np.ndarray = 0.0
    name = "poisson"

    def check_targets(self, y):
        y = _finite(self.name, y)
        if np.any(y < 0) or np.any(y != np.round(y)):
            bad = np.unique(y[(y < 0) | (y != np.round(y))])
            raise ValueError(f"poisson likelihood needs non-negative integer counts; found {bad[:10].tolist()}")
        return y

    def _log_rate(self, f):
        return np.log(self.exposure) + f + self.offset

    def log_lik(self, y, f):
        lr = self._log_rate(f)
        return y * lr - np.exp(lr) - gammaln(y + 1.0)

    def d1(self, y, f):
        return y - np.exp(self._log_rate(f))

    def d2(self, y, f):
        return -np.exp(self._log_rate(f)) * np.ones(np.shape(f))

    def d3(self, y, f):
        return self.d2(y, f)


def make_likelihood(name: str, **kwargs):
    """Likelihood by name: probit, logistic, gaussian, poisson."""
    table = {"probit": Probit, "logistic": Logistic, "gaussian": Gaussian, "poisson": Poisson}
    try:
        return table[name](**kwargs)
    except KeyError:
        raise ValueError(f"unknown likelihood {name!r}; choose one of {sorted(table)}") from None
