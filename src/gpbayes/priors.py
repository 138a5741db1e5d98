"""Priors on positive hyperparameters, evaluated on psi = log(theta).

Every sampler in gpbayes moves in psi = log(theta).  A prior is stated on
theta (as the papers state it, e.g. Gamma(shape, rate)); its density on psi
includes the Jacobian |d theta / d psi| = exp(psi), added here and nowhere
else:   log p_psi(psi) = log p_theta(exp(psi)) + psi.

Gamma is shape/rate, as in Filippone & Girolami 2014 (Sec. 5.1: "shape
a_tau = 1 and rate b_tau = 1/sqrt(d)").  HalfNormal, Exponential and
HalfCauchy are the weakly informative priors on scales of Gelman (2006,
"Prior distributions for variance parameters in hierarchical models") and
of PyMC / NumPyro, stated on theta as those libraries state them.

A model's ``prior=`` is either one :class:`IndependentPrior` over all of its
hyperparameters (in the order of ``param_names``) or a mapping from
hyperparameter names to priors, which replaces those defaults and keeps the
others (:func:`resolve`).  The names are the posterior's, one scheme across the
models (:func:`hyperparameter_keys`): a variable (``lengthscale`` sets every
input's, ``signal_variance``, ``noise_variance``, or what :func:`kernel_aliases`
and :func:`gplvm_aliases` name a quantity that is none of these) or one entry
of a variable over ``feature`` (``lengthscale[age]``); the names of before
(``tau_0``, ``sigma``, ``lengthscale_0``, ...: :func:`prior_names`) with a
DeprecationWarning.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import gammaln

__all__ = ["Gamma", "InverseGamma", "LogNormal", "LogUniform", "Uniform", "HalfNormal", "Exponential", "HalfCauchy",
           "DataUnits", "IndependentPrior", "make_prior", "vectorised_log_density", "fg_scale_prior", "FG_AMPLITUDE_PRIOR",
           "default_kernel_prior", "resolve", "prior_names", "hyperparameter_keys", "kernel_aliases", "gplvm_aliases"]

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_2_OVER_PI = math.log(2.0 / math.pi)
_LOG_2_OVER_PI_HALF = 0.5 * _LOG_2_OVER_PI


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
class HalfNormal:
    """theta ~ HalfNormal(scale): theta = |x|, x ~ N(0, scale^2); density on psi = log theta.

    p(theta) = sqrt(2 / pi) / s exp(-theta^2 / (2 s^2)) on theta > 0 (s the scale), so
    log p_psi(psi) = 1/2 log(2 / pi) - log s - e^(2 psi) / (2 s^2) + psi (Jacobian e^psi included).
    Mean s sqrt(2 / pi), median 0.674 s.
    """

    scale: float

    def __post_init__(self):
        if not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"HalfNormal prior needs a finite scale > 0, got {self.scale}")

    def log_density(self, psi):
        """log p_psi(psi) = 1/2 log(2/pi) - log s - e^(2 psi) / (2 s^2) + psi."""
        psi = np.asarray(psi, dtype=float)
        s = self.scale
        return _LOG_2_OVER_PI_HALF - math.log(s) - 0.5 * np.exp(2.0 * psi) / (s * s) + psi

    def grad_log_density(self, psi):
        """d log p_psi / d psi = 1 - e^(2 psi) / s^2."""
        return 1.0 - np.exp(2.0 * np.asarray(psi, dtype=float)) / self.scale**2

    def sample_theta(self, rng: np.random.Generator, size=None):
        """theta = s |z|, z ~ N(0, 1)."""
        return self.scale * np.abs(rng.standard_normal(size=size))


@dataclasses.dataclass(frozen=True)
class Exponential:
    """theta ~ Exponential(rate) (mean 1 / rate); density on psi = log theta.

    p(theta) = r e^(-r theta), so log p_psi(psi) = log r - r e^psi + psi (Jacobian included): the
    density of Gamma(1, r), written as its own family as PyMC and NumPyro do.  Median log 2 / r.
    """

    rate: float

    def __post_init__(self):
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"Exponential prior needs a finite rate > 0, got {self.rate}")

    def log_density(self, psi):
        """log p_psi(psi) = log r - r e^psi + psi."""
        psi = np.asarray(psi, dtype=float)
        return math.log(self.rate) - self.rate * np.exp(psi) + psi

    def grad_log_density(self, psi):
        """d log p_psi / d psi = 1 - r e^psi."""
        return 1.0 - self.rate * np.exp(np.asarray(psi, dtype=float))

    def sample_theta(self, rng: np.random.Generator, size=None):
        """Draws of theta ~ Exponential(rate)."""
        return rng.exponential(1.0 / self.rate, size=size)


@dataclasses.dataclass(frozen=True)
class HalfCauchy:
    """theta ~ HalfCauchy(scale): theta = |x|, x Cauchy with location 0 and scale s; density on psi = log theta.

    p(theta) = 2 / (pi s (1 + (theta / s)^2)) (Gelman 2006, Sec. 5).  With z = psi - log s,
    log p_psi(psi) = log(2 / pi) - log(1 + e^(2 z)) + z (Jacobian included; the density of z
    does not depend on s), and d/dpsi = (1 - e^(2 z)) / (1 + e^(2 z)) = -tanh(z).  Median s;
    no mean.
    """

    scale: float

    def __post_init__(self):
        if not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"HalfCauchy prior needs a finite scale > 0, got {self.scale}")

    def log_density(self, psi):
        """log p_psi(psi) = log(2/pi) - log(1 + e^(2 z)) + z, z = psi - log s."""
        z = np.asarray(psi, dtype=float) - math.log(self.scale)
        return _LOG_2_OVER_PI - np.logaddexp(0.0, 2.0 * z) + z

    def grad_log_density(self, psi):
        """d log p_psi / d psi = -tanh(psi - log s)."""
        return -np.tanh(np.asarray(psi, dtype=float) - math.log(self.scale))

    def sample_theta(self, rng: np.random.Generator, size=None):
        """theta = s |c|, c standard Cauchy."""
        return self.scale * np.abs(rng.standard_cauchy(size=size))


@dataclasses.dataclass(frozen=True)
class DataUnits:
    """A prior stated in the data's units, read on the model's standardised scale (``gpbayes.units``).

    ``prior`` is on theta_data = theta exp(``log_scale``) (a lengthscale in X's units: log_scale = log
    s_j; a variance in y's units squared: 2 log S); on psi = log theta its density is
    p_data(psi + log_scale) -- a shift, so the Jacobian is constant (1).  A model with ``units="data"``
    wraps the priors the user gives in this; its default priors stay on the standardised scale.
    """

    prior: object
    log_scale: float

    def log_density(self, psi):
        """The wrapped prior's log density at psi + log_scale (the data-unit value)."""
        return self.prior.log_density(np.asarray(psi, dtype=float) + self.log_scale)

    def grad_log_density(self, psi):
        """The wrapped prior's gradient at psi + log_scale."""
        return self.prior.grad_log_density(np.asarray(psi, dtype=float) + self.log_scale)

    def sample_theta(self, rng: np.random.Generator, size=None):
        """theta_data ~ the wrapped prior, carried to the model's scale: theta_data exp(-log_scale)."""
        return self.prior.sample_theta(rng, size=size) * math.exp(-self.log_scale)


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
    if not set(fam) <= {LogUniform, LogNormal, Gamma, InverseGamma, Uniform, HalfNormal, Exponential, HalfCauchy}:
        return None
    idx = {t: np.array(v) for t, v in fam.items()}
    par = {t: np.array([dataclasses.astuple(comps[i]) for i in v], dtype=np.float64).T for t, v in fam.items()}

    def log_density(psi: np.ndarray) -> float:
        total = 0.0
        for t, ii in idx.items():
            x = psi[ii]
            if t is HalfNormal:
                s = par[t][0]
                total += float(np.sum(_LOG_2_OVER_PI_HALF - np.log(s) - 0.5 * np.exp(2.0 * x) / (s * s) + x))
                continue
            if t is Exponential:
                r = par[t][0]
                total += float(np.sum(np.log(r) - r * np.exp(x) + x))
                continue
            if t is HalfCauchy:
                z = x - np.log(par[t][0])
                total += float(np.sum(_LOG_2_OVER_PI - np.logaddexp(0.0, 2.0 * z) + z))
                continue
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
    """One prior from a config mapping, e.g. ``{gamma: {shape: 1, rate: 0.5}}`` or ``{half_normal: {scale: 1}}``.

    Families: ``gamma`` {shape, rate}, ``inverse_gamma`` {shape, scale}, ``lognormal`` {mu, sigma},
    ``uniform`` / ``loguniform`` {low, high}, ``half_normal`` {scale}, ``exponential`` {rate},
    ``half_cauchy`` {scale}.
    """
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ValueError(f"a prior is a mapping with exactly one family key, got {spec!r}")
    (family, params), = spec.items()
    table = {"gamma": Gamma, "inverse_gamma": InverseGamma, "lognormal": LogNormal, "uniform": Uniform,
             "loguniform": LogUniform, "half_normal": HalfNormal, "exponential": Exponential,
             "half_cauchy": HalfCauchy}
    if family not in table:
        raise ValueError(f"unknown prior family {family!r}; choose one of {sorted(table)}")
    try:
        return table[family](**params)
    except TypeError as err:
        raise ValueError(f"bad parameters for {family} prior {params!r}: {err}") from None


def independent(specs: Sequence[dict]) -> IndependentPrior:
    return IndependentPrior(tuple(make_prior(s) for s in specs))


# ---------------------------------------------------------------------------
# priors by name
# ---------------------------------------------------------------------------
#: Squared exponential (``gpbayes.kernels.SquaredExponential``): descriptive names of (scale, amplitude) per
#: parameterisation, None where no standard name is exactly true.  ``fg``: sigma exp(-1/2 r^2 / tau^2), so tau
#: is R&W's lengthscale and sigma the signal variance (F&G eq. 5).  ``amis``: sigma exp(-r^2 / tau^2), tau =
#: sqrt(2) x lengthscale (no alias).  ``ma``: sigma_f^2 exp(-1/2 r^2 / l^2), sigma_f a standard deviation.
#: ``gplvm``: theta_S exp(-1/2 theta_j r^2), theta_j = 1 / lengthscale^2 (Gadd et al.).
_SE_ALIASES = {
    "fg": ("lengthscale", "signal_variance"),
    "amis": (None, "signal_variance"),
    "ma": (None, "signal_std"),  # its scales are named ``lengthscale`` already
    "gplvm": ("inverse_squared_lengthscale", "signal_variance"),
}

#: the supervised GPLVM's hyperparameters (Gadd et al., ``gpbayes.gplvm.vb``): k_z's precisions sigma_l on x,
#: k_f's precisions theta_j on z, its variance theta_S, and the noise precision beta
_GPLVM_ALIASES = {"sigma": "latent_inverse_squared_lengthscale", "theta": "output_inverse_squared_lengthscale",
                  "theta_S": "signal_variance", "beta": "noise_precision"}


#: a descriptive name, and the name of the same quantity in another form that some model samples instead
_RELATED = {
    "inverse_squared_lengthscale": ("lengthscale", "inverse_squared_lengthscale = 1 / lengthscale^2"),
    "lengthscale": ("inverse_squared_lengthscale", "inverse_squared_lengthscale = 1 / lengthscale^2"),
    "signal_variance": ("signal_std", "signal_variance = signal_std^2"),
    "signal_std": ("signal_variance", "signal_variance = signal_std^2"),
    "noise_variance": ("noise_precision", "noise_precision = 1 / noise_variance"),
    "noise_precision": ("noise_variance", "noise_precision = 1 / noise_variance"),
}


def kernel_aliases(kernel) -> list:
    """Descriptive names of a kernel's parameters, one per ``param_names`` entry (None: the name already says it).

    Squared exponential, by parameterisation (``gpbayes.kernels.squared_exponential``):
    F&G eq. 5 (``fg``), sigma exp(-1/2 sum_d r_d^2 / tau_d^2): ``tau_d`` -> ``lengthscale_d`` (R&W eq. 5.1's
    l_d exactly), ``sigma`` -> ``signal_variance`` (sigma multiplies the correlation: it is k(x, x));
    ``amis``: ``sigma`` -> ``signal_variance`` (its tau is sqrt(2) lengthscales: no alias);
    M&A (``ma``): ``sigma_f`` -> ``signal_std`` (k(x, x) = sigma_f^2);
    ``gplvm``: ``theta_j`` -> ``inverse_squared_lengthscale_j``, ``theta_S`` -> ``signal_variance``.
    Matérn, rational quadratic, periodic and cosine kernels: ``variance`` -> ``signal_variance``.  Sums and
    products: each component's, prefixed as its parameters are; ``c * k`` (``Scaled``): k's; ``k.fix(...)``
    (``Fixed``): k's of the free parameters.  Any other kernel: none.
    """
    if kernel is None:
        return []
    if type(kernel).__name__ == "MeanKernel" and type(kernel).__module__ == "gpbayes.means":
        return kernel_aliases(kernel.kernel)  # a mean function adds no parameter: the wrapped kernel's names
    names = list(kernel.param_names)
    out = [None] * len(names)
    # the library's kernels by their class names (gpbayes.kernels imports this module: no import back)
    if not type(kernel).__module__.startswith("gpbayes.kernels"):
        return out
    kind = type(kernel).__name__
    if kind in ("Sum", "Product"):
        out = []
        for pre, k in zip(kernel.prefixes, kernel.kernels):
            out += [None if a is None else (a if pre is None else f"{pre}_{a}")
                    for a in (kernel_aliases(k) or [None] * k.n_params)]
        return out
    if kind == "Scaled":  # c k: k's parameters
        return kernel_aliases(kernel.kernel)
    if kind == "Fixed":  # k less its fixed parameters
        inner = kernel_aliases(kernel.kernel) or [None] * kernel.kernel.n_params
        return [inner[i] for i in kernel.free]
    if kind == "SquaredExponential":
        scale, amp = _SE_ALIASES[kernel.parameterisation]
        for i in range(kernel.n_scale):
            if scale is not None:
                stem, sep, idx = names[i].rpartition("_")
                out[i] = f"{scale}_{idx}" if kernel.ard else scale
        if not kernel.fixed_amplitude:
            out[-1] = amp
    elif kind in ("Matern12", "Matern32", "Matern52", "RationalQuadratic", "Periodic", "Cosine"):
        out[-1] = "signal_variance"
    return out


def gplvm_aliases(names: Sequence[str]) -> list:
    """Descriptive names of the supervised GPLVM's hyperparameters (Gadd et al.; ``gpbayes.gplvm.vb``).

    k_z(x, x') = exp(-1/2 sum_l sigma_l (x_l - x'_l)^2): ``sigma_l`` -> ``latent_inverse_squared_lengthscale_l``;
    k_f(z, z') = theta_S exp(-1/2 sum_j theta_j (z_j - z'_j)^2): ``theta_j`` ->
    ``output_inverse_squared_lengthscale_j``, ``theta_S`` -> ``signal_variance``; the noise precision
    ``beta`` -> ``noise_precision``.  None for any other name.
    """
    out = []
    for name in names:
        stem, _, idx = name.rpartition("_")
        if name in _GPLVM_ALIASES:
            out.append(_GPLVM_ALIASES[name])
        else:
            out.append(f"{_GPLVM_ALIASES[stem]}_{idx}" if stem in _GPLVM_ALIASES and idx.isdigit() else None)
    return out


def _final_alias(alias: str | None, raw: str, name: str) -> str | None:
    """The alias of a parameter whose name was changed from ``raw`` (``tau_0``) to ``name`` (``tau_age``, after
    a DataFrame column): the alias gets the same suffix (``lengthscale_age``)."""
    if alias is None or raw == name:
        return alias
    stem, _, idx = raw.rpartition("_")
    a_stem, _, a_idx = alias.rpartition("_")
    if a_idx == idx and name.startswith(stem + "_"):
        return f"{a_stem}_{name[len(stem) + 1:]}"
    return None


def prior_names(names: Sequence[str], raw_names: Sequence[str] | None = None, aliases: Sequence = ()) -> dict:
    """Every key ``prior=`` accepts, mapped to the indices into psi it sets.

    ``names``: the hyperparameter names (the posterior's variables, in the order of psi);
    ``raw_names``: the same before ARD names were changed to X's column names (default ``names``);
    ``aliases``: a descriptive name per entry of ``raw_names`` or None (:func:`kernel_aliases`).
    Keys: each name, each alias, and a group name for every family of per-input parameters (the
    raw name ``<stem>_<digits>``: ``tau`` and ``lengthscale`` for all of ``tau_0..tau_d``), unless
    the group name is a hyperparameter's own name.
    """
    return _prior_keys(names, raw_names, aliases)[0]


def _prior_keys(names, raw_names, aliases) -> tuple[dict, set]:
    """(:func:`prior_names`'s mapping, the set of its keys that are group names)."""
    names = list(names)
    raw = list(names if raw_names is None else raw_names)
    aliases = list(aliases) + [None] * (len(names) - len(aliases))
    if len(raw) != len(names):
        raise ValueError(f"raw_names has {len(raw)} entries, names {len(names)}")
    keys: dict[str, tuple] = {n: (i,) for i, n in enumerate(names)}
    finals = [_final_alias(a, r, n) for a, r, n in zip(aliases, raw, names)]
    for i, a in enumerate(finals):
        if a is not None and a not in keys:
            keys[a] = (i,)
    groups: dict[str, list] = {}
    for i, (r, a) in enumerate(zip(raw, aliases)):
        m = re.fullmatch(r"(.+)_(\d+)", r)
        if m is None:
            continue
        groups.setdefault(m.group(1), []).append(i)
        if a is not None and re.fullmatch(r"(.+)_(\d+)", a):
            groups.setdefault(a.rpartition("_")[0], []).append(i)
    group_keys = set()
    for g, idx in groups.items():
        if g not in keys:
            keys[g] = tuple(idx)
            group_keys.add(g)
    return keys, group_keys


def hyperparameter_keys(variables, legacy_names: Sequence[str] = (), raw_names: Sequence[str] | None = None,
                        aliases: Sequence = ()) -> dict:
    """Every key ``prior=`` accepts for a model whose posterior has ``variables``, with what it sets.

    ``variables``: the posterior's variables in the order of psi (``gpbayes.models.Hyperparameter``: a
    ``name``, its ``index`` into psi, a ``dim`` or None, its ``labels``).  The current keys: each
    variable's name (over a dim it sets every entry, as a group) and, over a dim, each entry's label
    (``lengthscale[age]``).  The keys of before the one scheme (issue 33), still accepted with a
    DeprecationWarning: ``legacy_names`` (one per coordinate of psi: ``tau_0`` or ``tau_age``), the
    descriptive ``aliases`` of ``raw_names`` (``lengthscale_0``, ``signal_variance``) and the group names
    (``tau``) -- :func:`prior_names` of them.

    Returns
    -------
    dict
        key -> (indices into psi, level: 0 a group, 1 one hyperparameter, the current key to use instead or
        None for a current key).
    """
    keys: dict[str, tuple] = {}
    labels: list[str] = []
    for v in variables:
        keys[v.name] = (tuple(v.index), 1 if v.dim is None else 0, None)
        labels += v.labels
        if v.dim is not None:
            for i, label in zip(v.index, v.labels):
                keys[label] = ((i,), 1, None)
    if legacy_names:
        by_index = {tuple(v.index): v.name for v in variables}
        old, groups = _prior_keys(legacy_names, raw_names, aliases)
        for k, idx in old.items():
            if k in keys:
                continue
            new = labels[idx[0]] if len(idx) == 1 else by_index.get(tuple(idx), ", ".join(labels[i] for i in idx))
            keys[k] = (tuple(idx), 0 if k in groups else 1, new)
    return keys


def _check_whole_prior(prior, names: Sequence[str], owner: str) -> None:
    """``prior=`` given as one object over all hyperparameters: it must have ``log_density`` (an
    :class:`IndependentPrior`) and, if it has a length, one component per hyperparameter.  A list or tuple
    of components, or one component alone, is refused, saying the two forms ``prior=`` takes."""
    names = list(names)
    forms = (f"prior= takes a dict {{name: prior}} for some hyperparameters (e.g. prior={{{names[0]!r}: "
             f"gpbayes.priors.Gamma(2.0, 1.0)}}; the names are {names}), or a gpbayes.priors.IndependentPrior"
             f"((...,)) with one prior per hyperparameter, in that order") if names else "prior= takes a dict"
    is_component = all(callable(getattr(prior, m, None)) for m in ("log_density", "grad_log_density",
                                                                    "sample_theta"))
    if isinstance(prior, (list, tuple)):
        kind = type(prior).__name__
        raise TypeError(f"{owner}: prior is a {kind} of {len(prior)} item(s), not a prior; {forms} -- for these "
                        f"in order: prior=gpbayes.priors.IndependentPrior(tuple(your_{kind}))")
    if is_component and not callable(getattr(prior, "sample_psi", None)):
        raise TypeError(f"{owner}: prior is one prior, {prior!r}, on a single hyperparameter, without saying which; "
                        f"{forms}")
    if not callable(getattr(prior, "log_density", None)):
        raise TypeError(f"{owner}: prior must be None (the defaults), a dict or an IndependentPrior, got {prior!r} "
                        f"({type(prior).__name__}); {forms}")
    try:
        n = len(prior)
    except TypeError:
        return
    if n != len(names):
        raise ValueError(f"{owner}: prior has {n} components, the model {len(names)} hyperparameters {names}; "
                         f"{forms}")


def resolve(prior, defaults, names: Sequence[str], *, raw_names: Sequence[str] | None = None,
            aliases: Sequence = (), owner: str = "the model", keys: Mapping | None = None) -> IndependentPrior:
    """A model's prior from its ``prior=`` argument: the defaults with the named components replaced.

    Parameters
    ----------
    prior : None (the defaults), an :class:`IndependentPrior` (or any object with ``log_density``; used
        as it is, over all hyperparameters), or a mapping ``{name: prior component}`` whose keys are
        hyperparameter names, their descriptive aliases or group names (:func:`prior_names`).  A group
        sets every member; a member's own key overrides its group's.
    defaults : an :class:`IndependentPrior` or a sequence of components, one per hyperparameter.
    names, raw_names, aliases : as for :func:`prior_names` (``names``: one per coordinate of psi).
    owner : the model's name, for the error messages.
    keys : the accepted keys with what they set (:func:`hyperparameter_keys`: a model's posterior names,
        and the names of before with the current one to use, given in a DeprecationWarning); default
        :func:`prior_names` of ``names``, ``raw_names``, ``aliases``.

    Raises
    ------
    ValueError
        An unknown key (named, with the accepted ones and the closest match), or two keys that set the
        same hyperparameter at the same level (a name and its alias).
    TypeError
        A value that is not a prior component (``log_density``, ``grad_log_density``, ``sample_theta``).
    """
    comps = list(getattr(defaults, "components", defaults))
    if len(comps) != len(names):
        raise ValueError(f"{owner}: {len(comps)} default priors for {len(names)} hyperparameters {list(names)}")
    if prior is None:
        return defaults if isinstance(defaults, IndependentPrior) else IndependentPrior(tuple(comps))
    if not isinstance(prior, Mapping):
        _check_whole_prior(prior, names, owner)
        return prior
    if keys is None:
        table, groups = _prior_keys(names, raw_names, aliases)
        keys = {k: (idx, 0 if k in groups else 1, None) for k, idx in table.items()}
    current = [k for k, (_, _, instead) in keys.items() if instead is None]
    unknown = [k for k in prior if k not in keys]
    if unknown:
        k = unknown[0]
        close = difflib.get_close_matches(str(k), current, n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        for this, (other, why) in _RELATED.items():  # the same quantity in another form
            if this in str(k) and str(k).replace(this, other) in keys:
                hint += f"; this model samples {str(k).replace(this, other)!r} instead ({why})"
                break
        entries = [c for c in current if c in names and c.endswith("]")]
        raise ValueError(f"{owner}: unknown hyperparameter {k!r} in prior={hint}; the names are "
                         f"{[c for c in current if c not in entries]}"
                         + (f", and one entry of a vector each: {entries}" if entries else ""))
    set_by: dict[int, tuple] = {}  # index -> (level, key): level 0 a group, 1 a hyperparameter's own key
    for k, value in prior.items():
        if not all(callable(getattr(value, m, None)) for m in ("log_density", "grad_log_density", "sample_theta")):
            raise TypeError(f"{owner}: prior[{k!r}] must be a prior on one positive hyperparameter (e.g. "
                            f"gpbayes.priors.HalfNormal(1.0)), got {value!r}")
        idx, level, instead = keys[k]
        if instead is not None:
            warnings.warn(f"{owner}: prior key {k!r} is deprecated; use {instead!r} (the name of the posterior's "
                          "variable, issue 33)", DeprecationWarning, stacklevel=4)
        for i in idx:
            if i in set_by and set_by[i][0] == level:
                raise ValueError(f"{owner}: prior= sets {names[i]!r} twice, as {set_by[i][1]!r} and {k!r}; "
                                 "give one of them")
            if i not in set_by or level >= set_by[i][0]:
                set_by[i] = (level, k)
                comps[i] = value
    return IndependentPrior(tuple(comps))
