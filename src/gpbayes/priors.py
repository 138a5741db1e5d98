"""Priors on positive hyperparameters, evaluated on psi = log(theta).

Every sampler in gpbayes moves in psi = log(theta).  A prior is stated on
theta (as the papers state it, e.g. Gamma(shape, rate)); its density on psi
includes the Jacobian |d theta / d psi| = exp(psi), added here and nowhere
else:   log p_psi(psi) = log p_theta(exp(psi)) + psi.

Gamma is shape/rate, as in Filippone & Girolami 2014 (Sec. 5.1: "shape
a_tau = 1 and rate b_tau = 1/sqrt(d)").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln

__all__ = ["Gamma", "InverseGamma", "LogNormal", "LogUniform", "Uniform", "IndependentPrior", "make_prior",
           "vectorised_log_density", "fg_scale_prior", "FG_AMPLITUDE_PRIOR", "default_kernel_prior"]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclasses.dataclass(frozen=True)
class Gamma:
    """theta ~ Gamma(shape, rate); density on psi = log theta."""

    shape: float
    rate: float

    def __post_init__(self):
        if not (self.shape > 0 and self.rate > 0):
            raise ValueError(f"Gamma prior needs shape > 0 and rate > 0, got {self.shape}, {self.rate}")

    def log_density(self, psi):
        """log p(psi) = a log b - log Gamma(a) + a psi - b exp(psi) (shape a, rate b; Jacobian included)."""
        psi = np.asarray(psi, dtype=float)
        a, b = self.shape, self.rate
        # log p_theta(e^psi) + psi = a log b - lgamma(a) + a psi - b e^psi
        return a * np.log(b) - gammaln(a) + a * psi - b * np.exp(psi)

    def grad_log_density(self, psi):
        """d log p(psi) / d psi = a - b exp(psi)."""
        return self.shape - self.rate * np.exp(np.asarray(psi, dtype=float))

    def sample_theta(self, rng: np.random.Generator, size=None):
        """Draws of theta ~ Gamma(shape, rate)."""
        return rng.gamma(self.shape, 1.0 / self.rate, size=size)


@dataclasses.dataclass(frozen=True)
class InverseGamma:
    """theta ~ InverseGamma(shape, scale), i.e. 1/theta ~ Gamma(shape, rate=scale); density on psi = log theta.

    log p_psi(psi) = a log b - lgamma(a) - a psi - b e^-psi.  Its density on
    psi falls faster than any power of theta as theta -> 0, so a likelihood that
    grows like theta^-k there (GP regression with k duplicated inputs, noise
    variance theta) still gives a proper posterior -- unlike a Gamma prior.
    """

    shape: float
    scale: float

    def __post_init__(self):
        if not (self.shape > 0 and self.scale > 0):
            raise ValueError(f"InverseGamma prior needs shape > 0 and scale > 0, got {self.shape}, {self.scale}")

    def log_density(self, psi):
        """log p_psi(psi) = a log b - lgamma(a) - a psi - b e^-psi (the Jacobian e^psi included)."""
        psi = np.asarray(psi, dtype=float)
        a, b = self.shape, self.scale
        return a * np.log(b) - gammaln(a) - a * psi - b * np.exp(-psi)

    def grad_log_density(self, psi):
        """d log p_psi / d psi = -a + b e^-psi."""
        return -self.shape + self.scale * np.exp(-np.asarray(psi, dtype=float))

    def sample_theta(self, rng: np.random.Generator, size=None):
        """theta = 1 / g, g ~ Gamma(shape, rate = scale)."""
        return 1.0 / rng.gamma(self.shape, 1.0 / self.scale, size=size)


@dataclasses.dataclass(frozen=True)
class LogNormal:
    """log theta ~ N(mu, sigma^2), i.e. psi itself is Gaussian."""

    mu: float
    sigma: float

    def __post_init__(self):
        if not self.sigma > 0:
            raise ValueError(f"LogNormal prior needs sigma > 0, got {self.sigma}")

    def log_density(self, psi):
        """log N(psi; mu, sigma^2): psi itself is Gaussian, so no Jacobian term."""
        z = (np.asarray(psi, dtype=float) - self.mu) / self.sigma
        return -0.5 * z * z - np.log(self.sigma) - 0.5 * np.log(2 * np.pi)

    def grad_log_density(self, psi):
        """d log p(psi) / d psi = -(psi - mu) / sigma^2."""
        return -(np.asarray(psi, dtype=float) - self.mu) / self.sigma**2

    def sample_theta(self, rng, size=None):
        """Draws of theta = exp(psi), psi ~ N(mu, sigma^2)."""
        return np.exp(rng.normal(self.mu, self.sigma, size=size))


@dataclasses.dataclass(frozen=True)
class Uniform:
    """theta ~ U(low, high) with 0 <= low < high."""

    low: float
    high: float

    def __post_init__(self):
        if not (0 <= self.low < self.high):
            raise ValueError(f"Uniform prior needs 0 <= low < high, got {self.low}, {self.high}")

    def log_density(self, psi):
        """psi - log(high - low) where low <= exp(psi) <= high, else -inf (Jacobian included)."""
        psi = np.asarray(psi, dtype=float)
        theta = np.exp(psi)
        inside = (theta >= self.low) & (theta <= self.high)
        return np.where(inside, psi - np.log(self.high - self.low), -np.inf)

    def grad_log_density(self, psi):
        """d log p(psi) / d psi = 1 inside the support (the Jacobian's)."""
        return np.ones_like(np.asarray(psi, dtype=float))

    def sample_theta(self, rng, size=None):
        """Draws of theta ~ U(low, high)."""
        return rng.uniform(self.low, self.high, size=size)


@dataclasses.dataclass(frozen=True)
class LogUniform:
    """psi = log theta ~ U(log low, log high) (scale-invariant on theta)."""

    low: float
    high: float

    def __post_init__(self):
        if not (0 < self.low < self.high):
            raise ValueError(f"LogUniform prior needs 0 < low < high, got {self.low}, {self.high}")

    def log_density(self, psi):
        """-log(log high - log low) where log low <= psi <= log high, else -inf."""
        psi = np.asarray(psi, dtype=float)
        lo, hi = np.log(self.low), np.log(self.high)
        return np.where((psi >= lo) & (psi <= hi), -np.log(hi - lo), -np.inf)

    def grad_log_density(self, psi):
        """Zero: psi is uniform on its support."""
        return np.zeros_like(np.asarray(psi, dtype=float))

    def sample_theta(self, rng, size=None):
        """Draws of theta = exp(psi), psi ~ U(log low, log high)."""
        return np.exp(rng.uniform(np.log(self.low), np.log(self.high), size=size))


@dataclasses.dataclass(frozen=True)
class IndependentPrior:
    """Product of one prior per coordinate of psi."""

    components: tuple

    def __len__(self):
        return len(self.components)

    def _check(self, psi):
        psi = np.asarray(psi, dtype=float)
        if psi.shape[-1] != len(self.components):
            raise ValueError(f"prior has {len(self.components)} components, got psi of shape {psi.shape}")
        return psi

    def log_density(self, psi) -> float:
        """Sum of the components' log densities at the coordinates of psi (-inf outside a support)."""
        psi = self._check(psi)
        return float(sum(c.log_density(psi[..., i]) for i, c in enumerate(self.components)))

    def grad_log_density(self, psi) -> np.ndarray:
        """The components' gradients, one per coordinate of psi."""
        psi = self._check(psi)
        return np.array([c.grad_log_density(psi[i]) for i, c in enumerate(self.components)])

    def sample_psi(self, rng: np.random.Generator) -> np.ndarray:
        """One draw of psi (drawn as theta from the stated prior, then logged)."""
        return np.log(np.array([float(c.sample_theta(rng)) for c in self.components]))


def fg_scale_prior(input_dim: int) -> Gamma:
    """F&G 2014 Sec. 4.4's prior on every lengthscale tau_d: Gamma(shape 1, rate 1/sqrt(d)), d the input dimension.

    ``d`` is the number of covariates, for an isotropic kernel (one tau) as for
    an ARD one (d of them): the rate shrinks with the dimension so that the
    prior expected squared distance between inputs stays comparable.
    """
    d = int(input_dim)
    if d < 1:
        raise ValueError(f"input_dim must be >= 1, got {input_dim}")
    return Gamma(1.0, 1.0 / math.sqrt(d))


#: F&G 2014 Sec. 4.4's prior on the amplitude sigma (shape/rate)
FG_AMPLITUDE_PRIOR = Gamma(1.1, 0.1)


def default_kernel_prior(kernel, extra: Sequence = ()) -> IndependentPrior:
    """The library's one default prior over a kernel's psi, then ``extra`` (F&G 2014 Sec. 4.4).

    A kernel with ``default_priors()`` (every ``gpbayes.kernels`` kernel, sums and products
    included) gives its own, documented in its docstring.  Otherwise (a kernel of the bare
    protocol): tau ~ Gamma(1, 1/sqrt(d)) for each of the kernel's ``n_scale`` lengthscales
    (d = ``kernel.input_dim``, isotropic or ARD alike), sigma ~ Gamma(1.1, 0.1)
    unless the amplitude is fixed.  Then the components in ``extra``
    (e.g. the noise variance of regression).
    """
    own = getattr(kernel, "default_priors", None)
    if own is not None:
        return IndependentPrior(tuple(own()) + tuple(extra))
    fixed = bool(getattr(kernel, "fixed_amplitude", False))
    # a kernel of the protocol without ``n_scale``: every parameter but the (last) amplitude is a scale
    n_scale = int(getattr(kernel, "n_scale", kernel.n_params - (0 if fixed else 1)))
    comps = (fg_scale_prior(kernel.input_dim),) * n_scale
    if not fixed:
        comps += (FG_AMPLITUDE_PRIOR,)
    return IndependentPrior(comps + tuple(extra))


def vectorised_log_density(prior):
    """``prior.log_density`` as one numpy expression per family, or None if a family is not known.

    The same formulas as the component classes above, summed per family
    rather than per coordinate (the sum can differ from ``log_density`` in
    the last bits).  A slice sweep over the 34 hyperparameters of Ionosphere
    evaluates the prior a few hundred times; summing 34 scalar densities in
    Python cost as much as building the kernel matrix.
    """
    comps = getattr(prior, "components", None)
    if comps is None:
        return None
    fam: dict = {}
    for i, c in enumerate(comps):
        fam.setdefault(type(c), []).append(i)
    if not set(fam) <= {LogUniform, LogNormal, Gamma, InverseGamma, Uniform}:
        return None
    idx = {t: np.array(v) for t, v in fam.items()}
    par = {t: np.array([dataclasses.astuple(comps[i]) for i in v], dtype=np.float64).T for t, v in fam.items()}

    def log_density(psi: np.ndarray) -> float:
        total = 0.0
        for t, ii in idx.items():
            x = psi[ii]
            a, b = par[t]
            if t is LogUniform:
                lo, hi = np.log(a), np.log(b)
                if np.any(x < lo) or np.any(x > hi):
                    return -math.inf
                total += float(np.sum(-np.log(hi - lo)))
            elif t is LogNormal:
                z = (x - a) / b
                total += float(np.sum(-0.5 * z * z - np.log(b) - 0.5 * _LOG_2PI))
            elif t is Gamma:
                total += float(np.sum(a * np.log(b) - gammaln(a) + a * x - b * np.exp(x)))
            elif t is InverseGamma:
                total += float(np.sum(a * np.log(b) - gammaln(a) - a * x - b * np.exp(-x)))
            else:  # Uniform on theta
                th = np.exp(x)
                if np.any(th < a) or np.any(th > b):
                    return -math.inf
                total += float(np.sum(x - np.log(b - a)))
        return total

    return log_density


def make_prior(spec: dict):
    """One prior from a config mapping, e.g. ``{gamma: {shape: 1, rate: 0.5}}``."""
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ValueError(f"a prior is a mapping with exactly one family key, got {spec!r}")
    (family, params), = spec.items()
    table = {"gamma": Gamma, "inverse_gamma": InverseGamma, "lognormal": LogNormal, "uniform": Uniform,
             "loguniform": LogUniform}
    if family not in table:
        raise ValueError(f"unknown prior family {family!r}; choose one of {sorted(table)}")
    try:
        return table[family](**params)
    except TypeError as err:
        raise ValueError(f"bad parameters for {family} prior {params!r}: {err}") from None


def independent(specs: Sequence[dict]) -> IndependentPrior:
    return IndependentPrior(tuple(make_prior(s) for s in specs))
