"""Slice sampling covariance hyperparameters in six representations (Murray & Adams 2010).

Model (M&A Sec. 1.1, eq. 3): theta ~ p_h, f | theta ~ N(0, Sigma_theta),
y | f ~ prod_i L_i(f_i).  ``theta`` holds the kernel's log-parameters
(``gpbayes.kernels``, ``parameterisation="ma"``: log lengthscales, then
log sigma_f) and, for the Cox-process experiments, a *mean offset* m of the
log-rate (M&A Sec. 5: "We sampled the hyperparameters in (2) and a mean
offset to the log-rate"), which enters the Poisson likelihood as
rate_i = exposure_i exp(f_i + m) (``HyperModel(sample_offset=True)``).

One iteration (M&A Sec. 5, "Methods"):

1. one sweep of the slice sampler of Alg. 4 (``mcmc.slice.murray_adams_step``:
   random bracket of width sigma, shrinkage, no stepping out) over theta, with
   the auxiliary variables of a *representation* held fixed, so that f moves
   with theta (except for ``fixed``);
2. ``n_latent_updates`` (10 in the paper) elliptical slice sampling updates of
   f | theta, y ("For every method we applied ten updates of elliptical slice
   sampling [1] to the latent variables f between each hyperparameter update").

The six representations ("Each method used the same slice sampler, as in
Algorithm 4, applied to the following model representations"):

``fixed``       theta | f, the Alg. 1 target  N(f; 0, Sigma) p_h(theta)  (eq. 4)
                (times L(f) when theta holds the likelihood's offset m).
``prior-white`` theta | nu with f = L_Sigma nu: L(f(theta, nu)) p_h(theta)  (eq. 6, Alg. 2).
``surr-site``   theta | eta, g with g ~ N(f, S_theta) drawn afresh before the sweep,
                f = L_R eta + m_theta,g:  L(f) N(g; 0, Sigma + S) p_h(theta)
                (eqs. 7-11, Algs. 3-4); S_theta from the site posterior (eq. 12):
                moment matching for probit/logistic, Laplace for the Poisson
                (``representations.site_noise_variances``).
``surr-taylor`` the same with S_theta from the Taylor expansion of log L at its
                maximum (eq. 13): S_ii = -1 / (d^2 log L_i / df_i^2)(f^_i);
                infinite variances (Poisson zero counts; every binary site,
                whose maximum is at +-inf) truncated to a large value.
``post-site``   theta | omega with f = L_R omega + m_theta,g^ for a *fixed*
                (deterministic in theta) Gaussian approximation of the
                likelihood N(g^; f, S_theta):
                L(f) N(f; 0, Sigma) p_h(theta) |L_R|  (eq. 14).
                S_theta and g^ from the site posteriors (eq. 12), see below.
``post-taylor`` the same with S_theta = Lambda(f^)^-1 and g^ = f^, the Taylor
                approximation of Christensen et al. (eq. 13).

Surrogate and post- factors share one algebra: with Sigma = L L^T,
R = (Sigma^-1 + S^-1)^-1 and a square root L_R of R (below), m_theta,g =
R S^-1 g, f = L_R eta + m, eta = L_R^-1 (f - m); log N(g; 0, Sigma + S) by
the Woodbury identity and the determinant lemma; the post- target is
log L(f) + log N(f; 0, Sigma) + log |L_R|.  A new theta costs three O(n^3)
operations; fixed and prior-white cost one (chol Sigma).

Square root of R
----------------
Any square root L_R L_R^T = R gives a valid representation (M&A, notation
after eq. 5), but f(theta', eta) = L_R(theta') eta + m, and so the
efficiency, depends on which.  Two are implemented (``root``):

* ``"prior"`` (default): L_R = L M^-T with B = I + L^T S^-1 L = M M^T, as
  in ``gpbayes.representations``; B has eigenvalues >= 1, so its
  factorisation is well conditioned however small S or Sigma_theta is;
* ``"precision"``: L_R = C^-T with C C^T = Sigma^-1 + S^-1, the root of
  Murray's released code (``chol(inv(K) + diag(1 ./ aux_var))``); it tends
  to S^1/2 (site-local) as S -> 0, but needs the explicit inverse of
  Sigma_theta, whose condition number is up to about n / nugget.

Both cost 3 O(n^3) operations per setting (chol Sigma; the product L^T S^-1 L
or the inverse; the second Cholesky).  On the default-scale problems they
mixed alike (ESS of the complete-data log-likelihood per covariance
construction, 4 chains x 600 iterations, synthetic n = 100, surr-site:
(3.1, 3.8, 3.0, 2.7)e-3 with "prior", (4.1, 1.8, 3.0, 1.9)e-3 with
"precision"; post-site (8.3, 16.0, 10.5, 11.3)e-3 and (7.7, 11.7, 14.2,
11.9)e-3), so the better-conditioned one is the default.

Centre of the post- representations
-----------------------------------
Eq. 13 centres the Taylor approximation at the maximum of the likelihood,
g^ = f^ (for the Poisson: f^_i = log(y_i / exposure_i) - m, S_ii = 1 / y_i).
For post-site the paper says only "as for the surr- methods but a fixed
reparameterization based on a posterior approximation (14)"; we use the site
approximations of eq. 12 for both the noise and the centre: a Gaussian fit
N(mu_i, v_i) to the site posterior L_i(f_i) N(f_i; 0, Sigma_ii) equals
N(f_i; 0, Sigma_ii) N(g_i; f_i, S_ii) up to a constant exactly when
S_ii = (1/v_i - 1/Sigma_ii)^-1 (eq. 12) and g_i = S_ii mu_i / v_i.  We carry
h_i = g_i / S_ii = mu_i / v_i (the site's natural mean parameter):

* probit/logistic (moment matching; the site posterior has E f^2 = Sigma_ii by
  the symmetry L(f) + L(-f) = 1):  |mu| = Sigma_ii / sqrt(S_ii + Sigma_ii),
  so h_i = y_i sqrt(S_ii + Sigma_ii) / S_ii;
* Poisson (Laplace): mu_i = site mode f^_i = -log(S_ii exposure_i) - m and
  1 / v_i = 1 / S_ii + 1 / Sigma_ii;
* Gaussian: h_i = y_i / sigma_n^2 (S = sigma_n^2 I, g^ = y): post-site =
  post-taylor = the exact reparameterisation of Christensen et al.

A site whose S_ii had to be thresholded ("Any negative (S_theta)_ii must be
thresholded", M&A Sec. 3.2; "Infinite variances were truncated to a large
value", Sec. 5) is given h_i = 0: no information, neither on the variance nor
on the mean.  The cap is ``max_noise_ratio * Sigma_ii`` (1e6 by default), as
in ``representations``.  Both S_theta and g^_theta are deterministic functions
of theta, which is all eq. 14 needs.

Axis-aligned updates, not a hyper-rectangle
-------------------------------------------
The sweep updates one coordinate of theta at a time, in a fresh random order
each sweep, each with its own threshold and bracket
(``mcmc.slice.murray_adams_step``: ``scheme="componentwise"``,
``order="random"``).  Reasons: Alg. 4 is written for a scalar theta and M&A
Sec. 3.1 says "We assume that axis-aligned hyperparameter moves will be
effective"; Murray's released code (``slice_sweep``) sweeps the axes in a
random permutation; and the coordinates (ARD log lengthscales of relevant and
irrelevant inputs, log amplitude, offset) have very different posterior
widths, which a hyper-rectangle would shrink to the narrowest.  All
auxiliaries (nu, eta and g, omega, or f) stay fixed for the whole sweep, so
every univariate update leaves the same conditional invariant.  The bracket
width sigma of each coordinate is the width of its prior's support ("If the
initial scale is set to a large value, such as the width of the prior ...",
Sec. 3.1), see ``prior_widths``.

Cost counters (M&A Sec. 5: "the number of hyperparameter settings considered
(each requiring a small number of covariance decompositions with O(n^3) time
complexity), the number of likelihood evaluations, and the total elapsed
time"), per iteration:

* ``n_likelihood_evals``: evaluations of log L(f) (all n sites at once) by the
  hyperparameter sweep and by elliptical slice sampling;
* ``n_covariance``: hyperparameter settings at which the sweep had to build
  and factorise a covariance (Sigma_theta and, for surr-/post-, R_theta), i.e.
  evaluations that did any O(n^3) work.  A setting outside the prior's
  support costs nothing; moving only the offset m reuses chol(Sigma) (fixed
  and prior-white then need no O(n^3) work; surr-/post- still refactorise B,
  since S depends on m);
* ``n_cubic``: O(n^3) operations as counted by ``gpbayes.linalg``;
* ``wall_time``: seconds.

The chains are compared on the complete-data log-likelihood
log L(f) + log N(f; 0, Sigma_theta) = log p(y, f | theta) (``complete_data_log_likelihood``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np

from .. import linalg, priors
from .. import representations as rep
from . import elliptical_slice
from . import runner
from . import slice as slice_mod
from .runner import Chain

__all__ = [
    "METHODS",
    "ROOTS",
    "HyperModel",
    "HyperState",
    "Factors",
    "make_factors",
    "whiten",
    "unwhiten",
    "log_surrogate_marginal",
    "log_det_root",
    "HyperInfo",
    "IterationInfo",
    "site_noise_and_centre",
    "taylor_noise_and_centre",
    "prior_widths",
    "init",
    "log_conditional",
    "hyper_step",
    "latent_step",
    "step",
    "complete_data_log_likelihood",
    "run_chain",
]

METHODS = ("fixed", "prior-white", "surr-site", "surr-taylor", "post-site", "post-taylor")
_LOG_2PI = math.log(2.0 * math.pi)
_CACHE_SIZE = 64


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class HyperModel:
    """theta ~ prior, f ~ N(0, K_psi(X, X)), y_i ~ likelihood(f_i [+ m]).

    ``theta = psi`` (the kernel's log-parameters) or, with ``sample_offset``,
    ``theta = (psi, m)``: m is added to the (Poisson) likelihood's offset.
    ``prior`` is an ``IndependentPrior`` over all of theta.  The site-noise
    cache (keyed by Sigma_ii and m) is an implementation detail: the noise of
    a stationary kernel depends on theta only through sigma_f^2 and m, so the
    numerical site fits (logistic quadrature) are not redone when only a
    lengthscale moves.
    """

    kernel: Any
    X: np.ndarray
    likelihood: Any
    y: np.ndarray
    prior: Any
    sample_offset: bool = False
    max_noise_ratio: float = rep.DEFAULT_MAX_NOISE_RATIO
    _cache: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)
    _log_prior_fn: Any = dataclasses.field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self):
        y = self.likelihood.check_targets(self.y)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "_log_prior_fn", _vectorised_log_prior(self.prior))
        n_theta = self.kernel.n_params + int(self.sample_offset)
        if len(self.prior) != n_theta:
            raise ValueError(f"prior has {len(self.prior)} components, theta has {n_theta}")
        if self.sample_offset and getattr(self.likelihood, "name", None) != "poisson":
            raise ValueError("sample_offset needs a Poisson likelihood (the offset of its log-rate)")

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_theta(self) -> int:
        return self.kernel.n_params + int(self.sample_offset)

    @property
    def param_names(self) -> list[str]:
        return self.kernel.param_names + (["offset"] if self.sample_offset else [])

    def psi(self, theta) -> np.ndarray:
        return np.asarray(theta, dtype=np.float64)[: self.kernel.n_params]

    def offset(self, theta) -> float:
        return float(theta[-1]) if self.sample_offset else 0.0

    def likelihood_at(self, theta):
        if not self.sample_offset:
            return self.likelihood
        return dataclasses.replace(self.likelihood, offset=self.likelihood.offset + float(theta[-1]))

    def log_likelihood(self, theta, f) -> float:
        return float(np.sum(self.likelihood_at(theta).log_lik(self.y, f)))

    def log_prior(self, theta) -> float:
        theta = np.asarray(theta, dtype=np.float64)
        if self._log_prior_fn is not None:
            return self._log_prior_fn(theta)
        return float(self.prior.log_density(theta))

    def covariance(self, theta) -> np.ndarray:
        return self.kernel(self.psi(theta), self.X)

    def prior_variance(self, theta) -> np.ndarray:
        return np.asarray(self.kernel.diag(self.psi(theta), self.X), dtype=np.float64)

    def noise_and_centre(self, theta, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """(diag S_theta, h_theta) of the ``site`` (eq. 12) or ``taylor`` (eq. 13) fit."""
        s2 = self.prior_variance(theta)
        key = (kind, s2.tobytes(), self.offset(theta))
        hit = self._cache.get(key)
        if hit is None:
            fit = site_noise_and_centre if kind == "site" else taylor_noise_and_centre
            hit = fit(self.likelihood_at(theta), self.y, s2, max_noise_ratio=self.max_noise_ratio)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = hit
        return hit


def _vectorised_log_prior(prior):
    """``prior.log_density`` as one numpy expression per family (None if a family is not known).

    A sweep over the 34 hyperparameters of Ionosphere evaluates the prior a
    few hundred times; summing 34 scalar densities in Python cost as much as
    the kernel matrix.  Same formulas as ``gpbayes.priors``.
    """
    from scipy.special import gammaln

    comps = getattr(prior, "components", None)
    if comps is None:
        return None
    fam: dict = {}
    for i, c in enumerate(comps):
        fam.setdefault(type(c), []).append(i)
    if not set(fam) <= {priors.LogUniform, priors.LogNormal, priors.Gamma, priors.Uniform}:
        return None
    idx = {t: np.array(v) for t, v in fam.items()}
    par = {t: np.array([dataclasses.astuple(comps[i]) for i in v], dtype=np.float64).T for t, v in fam.items()}

    def log_density(psi: np.ndarray) -> float:
        total = 0.0
        for t, ii in idx.items():
            x = psi[ii]
            a, b = par[t]
            if t is priors.LogUniform:
                lo, hi = np.log(a), np.log(b)
                if np.any(x < lo) or np.any(x > hi):
                    return -math.inf
                total += float(np.sum(-np.log(hi - lo)))
            elif t is priors.LogNormal:
                z = (x - a) / b
                total += float(np.sum(-0.5 * z * z - np.log(b) - 0.5 * _LOG_2PI))
            elif t is priors.Gamma:
                total += float(np.sum(a * np.log(b) - gammaln(a) + a * x - b * np.exp(x)))
            else:  # Uniform on theta
                th = np.exp(x)
                if np.any(th < a) or np.any(th > b):
                    return -math.inf
                total += float(np.sum(x - np.log(b - a)))
        return total

    return log_density


# ---------------------------------------------------------------------------
# auxiliary noise S_theta and natural centre h_theta (eqs. 12-13)
# ---------------------------------------------------------------------------
def _capped(s, s2, max_noise_ratio):
    cap = max_noise_ratio * s2
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(s) | (s <= 0.0) | (s > cap)
    return np.where(bad, cap, s), bad


def site_noise_and_centre(likelihood, y, prior_var, *, max_noise_ratio=rep.DEFAULT_MAX_NOISE_RATIO):
    """S_ii and h_i = mu_i / v_i of the Gaussian fit N(mu_i, v_i) to each site posterior (eq. 12).

    Moment matching for probit/logistic, Laplace for the Poisson, exact for
    the Gaussian (module docstring).  Thresholded sites get S_ii = cap, h_i = 0.
    """
    y = np.asarray(y, dtype=np.float64)
    s2 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape).copy()
    name = getattr(likelihood, "name", None)
    if name == "gaussian":
        s = np.full(y.shape, float(likelihood.noise_variance))
        return s, y / s
    if name == "probit":
        raw = rep.probit_site_noise(s2)
    elif name == "logistic":
        raw = rep.logistic_site_noise(s2)
    elif name == "poisson":
        raw = rep.poisson_laplace_site_noise(likelihood, y, s2)
    else:
        raise ValueError(f"no site approximation for likelihood {name!r}")
    s, bad = _capped(raw, s2, max_noise_ratio)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if name == "poisson":
            log_lam = np.log(likelihood.exposure) + np.asarray(likelihood.offset, dtype=np.float64)
            mode = -np.log(s) - log_lam  # S = 1 / rate(f^)  =>  f^ = -log S - log(exposure e^m)
            h = mode * (1.0 / s + 1.0 / s2)
        else:  # |mu| = s2 / sqrt(S + s2), v = s2 S / (S + s2)
            h = y * np.sqrt(s + s2) / s
    return s, np.where(bad, 0.0, h)


def taylor_noise_and_centre(likelihood, y, prior_var, *, max_noise_ratio=rep.DEFAULT_MAX_NOISE_RATIO):
    """S_ii = -1 / Lambda_ii(f^) and h_i = f^_i / S_ii of the Taylor fit at the likelihood's maximum (eq. 13).

    Poisson: f^_i = log(y_i / exposure_i) - offset, S_ii = 1 / y_i; a zero count
    has its maximum at -inf and an infinite variance, truncated to the cap.
    Probit/logistic: every maximum is at +-inf (M&A Sec. 5: the -taylor
    methods "reduce to other methods"), so every S_ii is the cap and h = 0:
    surr-taylor and post-taylor then behave like prior-white.
    """
    y = np.asarray(y, dtype=np.float64)
    s2 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape).copy()
    name = getattr(likelihood, "name", None)
    if name == "gaussian":
        s = np.full(y.shape, float(likelihood.noise_variance))
        return s, y / s
    if name in ("probit", "logistic"):
        return max_noise_ratio * s2, np.zeros_like(y)
    if name != "poisson":
        raise ValueError(f"no Taylor approximation for likelihood {name!r}")
    with np.errstate(divide="ignore"):
        raw = 1.0 / y
        mode = np.log(y) - np.log(likelihood.exposure) - np.asarray(likelihood.offset, dtype=np.float64)
    s, bad = _capped(raw, s2, max_noise_ratio)
    h = np.where(bad, 0.0, np.where(bad, 0.0, mode) * y)
    return s, h


def prior_widths(prior, unbounded_sd_multiple: float = 4.0) -> np.ndarray:
    """Slice bracket width sigma per coordinate: the width of the prior's support.

    LogUniform/Uniform: the width of the interval in psi = log theta
    (Uniform(0, b) uses log(b) - log(b * 1e-3)); a Gaussian on psi
    (``LogNormal``) or anything unbounded: ``unbounded_sd_multiple`` times its
    standard deviation (about the width holding 95% of its mass); Gamma: the
    same multiple of the s.d. of log theta, sqrt(trigamma(shape)).
    """
    from scipy.special import polygamma

    out = []
    for c in prior.components:
        if isinstance(c, priors.LogUniform):
            out.append(math.log(c.high / c.low))
        elif isinstance(c, priors.Uniform):
            lo = c.low if c.low > 0 else c.high * 1e-3
            out.append(math.log(c.high / lo))
        elif isinstance(c, priors.LogNormal):
            out.append(unbounded_sd_multiple * c.sigma)
        elif isinstance(c, priors.Gamma):
            out.append(unbounded_sd_multiple * math.sqrt(float(polygamma(1, c.shape))))
        else:
            raise ValueError(f"no slice width rule for prior component {c!r}")
    return np.array(out)


# ---------------------------------------------------------------------------
# state, evaluations, counters
# ---------------------------------------------------------------------------
class HyperState(NamedTuple):
    theta: np.ndarray
    f: np.ndarray
    log_likelihood: float  # log L(f) at theta (the offset is part of theta)
    chol_prior: np.ndarray  # L, L L^T = Sigma_theta
    factors: "Factors | None" = None  # surr-/post-: factors of the method's S at theta
    centre: np.ndarray | None = None  # post-: g^_theta = S h


class HyperEval(NamedTuple):
    """log p(theta | auxiliaries) up to a constant and what was built for it."""

    log_density: float
    f: np.ndarray | None
    log_likelihood: float
    chol_prior: np.ndarray | None
    factors: "Factors | None" = None
    centre: np.ndarray | None = None


class HyperInfo(NamedTuple):
    n_likelihood_evals: int
    n_covariance: int
    n_cubic: int
    n_density_evals: int  # slice evaluations, including those outside the prior's support
    n_shrinkages: int


class IterationInfo(NamedTuple):
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


def _rejected() -> HyperEval:
    return HyperEval(-math.inf, None, -math.inf, None)


class _Counter:
    """Counts likelihood evaluations and covariance constructions of one sweep."""

    def __init__(self):
        self.n_lik = 0
        self.n_cov = 0


class _FactorCache:
    """chol(Sigma_psi) of the last psi, so that moving only the offset m is free."""

    def __init__(self, psi=None, L=None):
        self.psi, self.L = psi, L

    def get(self, model: HyperModel, theta) -> np.ndarray:
        psi = model.psi(theta)
        if self.L is not None and np.array_equal(psi, self.psi):
            return self.L
        L = rep.prior_factor(model, psi)
        self.psi, self.L = psi.copy(), L
        return L


class Factors(NamedTuple):
    """Everything O(n^3) that surr-/post- need at one theta.

    ``root="prior"`` (default): M M^T = I + L^T S^-1 L and L_R = L M^-T, the
    root of ``gpbayes.representations`` (F&G's SURR baseline).
    ``root="precision"``: C C^T = Sigma^-1 + S^-1 = R^-1 and L_R = C^-T, the
    root of Murray's released code (``U_invR = chol(inv(K) + diag(1 ./
    aux_var))``, f = U_invR \\ nu + ...).  See the module docstring.
    """

    chol_prior: np.ndarray  # L, L L^T = Sigma
    noise_var: np.ndarray  # diag S
    chol_root: np.ndarray  # C (precision) or M (prior)
    root: str


ROOTS = ("prior", "precision")
DEFAULT_ROOT = "prior"


def make_factors(L: np.ndarray, noise_var: np.ndarray, root: str = DEFAULT_ROOT) -> Factors:
    """Factors of R = (Sigma^-1 + S^-1)^-1 for the chosen square root: 2 O(n^3) operations."""
    s = np.asarray(noise_var, dtype=np.float64)
    if root == "prior":
        f = rep.surrogate_factors(L, s)  # B = I + L^T S^-1 L (matmul), chol(B)
        return Factors(L, s, f.chol_b, root)
    if root != "precision":
        raise ValueError(f"root must be one of {ROOTS}, got {root!r}")
    A = linalg.cho_inverse(L)  # Sigma^-1 (as Murray's code: inv(K))
    A[np.diag_indices_from(A)] += 1.0 / s
    return Factors(L, s, linalg.cholesky(A, name="surrogate precision Sigma^-1 + S^-1"), root)


def _rep_factors(F: Factors) -> rep.SurrogateFactors:
    return rep.SurrogateFactors(F.chol_prior, F.noise_var, F.chol_root)


def _woodbury(F: Factors, g: np.ndarray) -> np.ndarray:
    """a with m_theta,g = L_R a: C^-1 S^-1 g (precision) or M^-1 L^T S^-1 g (prior)."""
    if F.root == "prior":
        return linalg.solve_triangular(F.chol_root, F.chol_prior.T @ (g / F.noise_var))
    return linalg.solve_triangular(F.chol_root, g / F.noise_var)


def sqrt_apply(F: Factors, z: np.ndarray) -> np.ndarray:
    """L_R z."""
    if F.root == "prior":
        return rep.surrogate_sqrt_apply(_rep_factors(F), z)
    return linalg.solve_triangular(F.chol_root, z, trans=True)


def unwhiten(F: Factors, eta: np.ndarray, g: np.ndarray) -> np.ndarray:
    """f = L_R eta + m_theta,g = L_R (eta + a)  (M&A eq. 10; Alg. 4 step 7)."""
    return sqrt_apply(F, eta + _woodbury(F, g))


def whiten(F: Factors, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """eta = L_R^-1 (f - m_theta,g)  (M&A Alg. 4 step 2)."""
    if F.root == "prior":
        return rep.surrogate_whiten(_rep_factors(F), f, g)
    return F.chol_root.T @ f - _woodbury(F, g)


def log_surrogate_marginal(F: Factors, g: np.ndarray) -> float:
    """log N(g; 0, Sigma + S) (M&A eq. 8) by Woodbury and the determinant lemma, O(n^2)."""
    if F.root == "prior":
        return rep.surrogate_log_marginal(_rep_factors(F), g)
    a = _woodbury(F, g)
    quad = float(g @ (g / F.noise_var) - a @ a)
    # |Sigma + S| = |Sigma| |S| |Sigma^-1 + S^-1|
    logdet = (linalg.logdet_from_cholesky(F.chol_prior) + float(np.sum(np.log(F.noise_var)))
              + linalg.logdet_from_cholesky(F.chol_root))
    return -0.5 * (quad + logdet + g.shape[0] * _LOG_2PI)


def log_det_root(F: Factors) -> float:
    """log |L_R|: -log|C| (precision) or log|L| - log|M| (prior)."""
    half = 0.5 * linalg.logdet_from_cholesky(F.chol_root)
    if F.root == "prior":
        return 0.5 * linalg.logdet_from_cholesky(F.chol_prior) - half
    return -half


def _factors(model, theta, L, method, root):
    """Factors at theta with the method's S (and, for post-, g^ = S h)."""
    s, h = model.noise_and_centre(theta, _noise_kind(method))
    factors = make_factors(L, s, root)
    centre = s * h if method.startswith("post") else None
    return factors, centre


def _post_value(model, theta, factors, f, log_lik) -> float:
    """log L(f) + log N(f; 0, Sigma) + log |L_R|  (eq. 14 without the prior)."""
    return log_lik + _log_normal_prior(factors.chol_prior, f) + log_det_root(factors)


def _log_normal_prior(L, f) -> float:
    """log N(f; 0, L L^T)."""
    z = linalg.solve_triangular(L, f)
    return -0.5 * float(z @ z) - 0.5 * linalg.logdet_from_cholesky(L) - 0.5 * f.shape[0] * _LOG_2PI


# ---------------------------------------------------------------------------
# the conditional target of each representation
# ---------------------------------------------------------------------------
def log_conditional(model: HyperModel, method: str, aux: dict, cache: _FactorCache | None = None,
                    counter: _Counter | None = None, root: str = DEFAULT_ROOT):
    """theta -> HyperEval: log p(theta | auxiliaries, y) up to a constant.

    ``aux`` holds the fixed auxiliaries: ``f`` (fixed), ``nu`` (prior-white),
    ``eta`` and ``g`` (surr-), ``omega`` (post-).
    """
    _check_method(method)
    cache = cache or _FactorCache()
    counter = counter or _Counter()

    def evaluate(theta) -> HyperEval:
        theta = np.asarray(theta, dtype=np.float64)
        lp = model.log_prior(theta)
        if lp == -math.inf:
            return _rejected()
        with linalg.count_ops() as ops:
            try:
                ev = _evaluate(theta)
            except linalg.NotPositiveDefiniteError:
                ev = None
        counter.n_cov += int(ops.cubic > 0)
        if ev is None:
            return _rejected()
        return ev._replace(log_density=ev.log_density + lp)

    def _evaluate(theta) -> HyperEval:
        L = cache.get(model, theta)
        if method == "fixed":
            # Alg. 1 target (eq. 4): N(f; 0, Sigma_theta) [x L(f) if theta holds the offset]
            f = aux["f"]
            value = _log_normal_prior(L, f)
            log_lik = math.nan
            if model.sample_offset:
                log_lik = model.log_likelihood(theta, f)
                counter.n_lik += 1
                value += log_lik
            return HyperEval(value, f, log_lik, L)
        if method == "prior-white":
            # Alg. 2 step 3 / eq. 6: f = L_Sigma nu, target L(f)
            f = rep.unwhiten(L, aux["nu"])
            log_lik = model.log_likelihood(theta, f)
            counter.n_lik += 1
            return HyperEval(log_lik, f, log_lik, L)
        factors, centre = _factors(model, theta, L, method, root)
        if method.startswith("surr"):
            # Alg. 4 step 7: f = L_R eta + m_theta,g;  step 8: L(f) N(g; 0, Sigma + S) (eq. 11)
            f = unwhiten(factors, aux["eta"], aux["g"])
            log_lik = model.log_likelihood(theta, f)
            counter.n_lik += 1
            value = log_lik + log_surrogate_marginal(factors, aux["g"])
            return HyperEval(value, f, log_lik, L, factors)
        # post-: f = L_R omega + m_theta,g^;  L(f) N(f; 0, Sigma) |L_R| (eq. 14)
        f = unwhiten(factors, aux["omega"], centre)
        log_lik = model.log_likelihood(theta, f)
        counter.n_lik += 1
        return HyperEval(_post_value(model, theta, factors, f, log_lik), f, log_lik, L, factors, centre)

    return evaluate


# ---------------------------------------------------------------------------
# init / steps
# ---------------------------------------------------------------------------
def init(model: HyperModel, theta, f, method: str, root: str = DEFAULT_ROOT) -> HyperState:
    """State at (theta, f) for ``method``: factorises Sigma (and B for surr-/post-)."""
    _check_method(method)
    theta = np.array(theta, dtype=np.float64)
    f = np.array(f, dtype=np.float64)
    if theta.shape != (model.n_theta,):
        raise ValueError(f"theta must have shape ({model.n_theta},) {model.param_names}, got {theta.shape}")
    if f.shape != (model.n,):
        raise ValueError(f"f must have shape ({model.n},), got {f.shape}")
    if not math.isfinite(model.log_prior(theta)):
        raise ValueError(f"initial theta {theta} has zero prior density")
    log_lik = model.log_likelihood(theta, f)
    if not math.isfinite(log_lik):
        raise ValueError(f"initial f has log-likelihood {log_lik}")
    L = rep.prior_factor(model, model.psi(theta))
    factors = centre = None
    if root not in ROOTS:
        raise ValueError(f"root must be one of {ROOTS}, got {root!r}")
    if method.startswith(("surr", "post")):
        factors, centre = _factors(model, theta, L, method, root)
    return HyperState(theta, f, log_lik, L, factors, centre)


def _current_value(model, method, state, aux, counter) -> float:
    """The conditional target at the current theta, from the stored factors (no O(n^3) work)."""
    lp = model.log_prior(state.theta)
    if method == "fixed":
        return _log_normal_prior(state.chol_prior, state.f) + (state.log_likelihood if model.sample_offset else 0.0) + lp
    if method == "prior-white":
        return state.log_likelihood + lp
    if method.startswith("surr"):
        return state.log_likelihood + log_surrogate_marginal(state.factors, aux["g"]) + lp
    return _post_value(model, state.theta, state.factors, state.f, state.log_likelihood) + lp


def auxiliaries(rng: np.random.Generator, state: HyperState, method: str) -> dict:
    """The auxiliaries held fixed during one hyperparameter sweep (M&A Alg. 4 steps 1-2 and analogues).

    fixed: f; prior-white: nu = L_Sigma^-1 f (Alg. 2 step 1); surr-: g ~ N(f, S) (step 1) and
    eta = L_R^-1 (f - m_theta,g) (step 2); post-: omega = L_R^-1 (f - m).  Only surr- draws from ``rng``.
    """
    f = state.f
    if method == "fixed":
        return {"f": f}
    if method == "prior-white":
        return {"nu": rep.whiten(state.chol_prior, f)}
    if method.startswith("surr"):
        g = rep.draw_surrogate_data(rng, f, state.factors.noise_var)
        return {"g": g, "eta": whiten(state.factors, f, g)}
    return {"omega": whiten(state.factors, f, state.centre)}


def hyper_step(
    rng: np.random.Generator,
    state: HyperState,
    model: HyperModel,
    method: str,
    widths,
    *,
    step_out: float = 0,
) -> tuple[HyperState, HyperInfo]:
    """One axis-aligned slice sweep over theta in the representation ``method``."""
    _check_method(method)
    counter = _Counter()
    with linalg.count_ops() as ops:
        f = state.f
        aux = auxiliaries(rng, state, method)
        cache = _FactorCache(model.psi(state.theta), state.chol_prior)
        root = state.factors.root if state.factors is not None else DEFAULT_ROOT
        fn = log_conditional(model, method, aux, cache, counter, root)
        current = HyperEval(_current_value(model, method, state, aux, counter), f, state.log_likelihood,
                            state.chol_prior, state.factors, state.centre)
        # Alg. 4 steps 3-14, once per axis (random order)
        sstate = slice_mod.SliceState(state.theta.copy(), current.log_density, current)
        sstate, sinfo = slice_mod.murray_adams_step(rng, sstate, fn, widths, step_out=step_out)
        ev = sstate.aux
        log_lik = ev.log_likelihood
        if method == "fixed" and not model.sample_offset:
            log_lik = state.log_likelihood
        new = HyperState(sstate.position, ev.f, log_lik, ev.chol_prior, ev.factors, ev.centre)
    info = HyperInfo(counter.n_lik, counter.n_cov, ops.cubic, sinfo.n_density_evals, sinfo.n_shrinkages)
    return new, info


def latent_step(rng, state: HyperState, model: HyperModel):
    """One elliptical slice sampling update of f | theta, y with the stored chol(Sigma_theta)."""
    es = elliptical_slice.EllipticalSliceState(state.f, state.log_likelihood)
    log_lik = lambda f: model.log_likelihood(state.theta, f)  # noqa: E731
    es, info = elliptical_slice.step(rng, es, state.chol_prior, log_lik)
    return state._replace(f=es.position, log_likelihood=es.log_likelihood), info


def step(rng, state: HyperState, model: HyperModel, method: str, widths, *, n_latent_updates: int = 10,
         step_out: float = 0) -> tuple[HyperState, IterationInfo]:
    """One iteration: a hyperparameter sweep, then ``n_latent_updates`` ELL-SS updates of f."""
    state, h = hyper_step(rng, state, model, method, widths, step_out=step_out)
    n_lik = h.n_likelihood_evals
    for _ in range(n_latent_updates):
        state, e = latent_step(rng, state, model)
        n_lik += e.n_likelihood_evals
    return state, IterationInfo(n_lik, h.n_covariance, h.n_cubic, h.n_density_evals, h.n_shrinkages)


def complete_data_log_likelihood(model: HyperModel, state: HyperState) -> float:
    """log p(y, f | theta) = log L(f) + log N(f; 0, Sigma_theta): the trace M&A measure ESS on."""
    return state.log_likelihood + _log_normal_prior(state.chol_prior, state.f)


def run_chain(
    rng: np.random.Generator,
    model: HyperModel,
    theta0,
    f0,
    method: str,
    *,
    n_burn: int,
    n_draws: int,
    widths=None,
    n_latent_updates: int = 10,
    step_out: float = 0,
    root: str = DEFAULT_ROOT,
    callback=None,
) -> Chain:
    """``n_burn`` discarded iterations, then ``n_draws`` kept ones (nothing is tuned; a use of ``runner.run_chain``).

    Returns a :class:`~gpbayes.mcmc.runner.Chain`: ``draws`` theta
    (n_draws, p); stats ``lp`` (the complete-data log-likelihood
    log p(y, f | theta), the trace M&A measure ESS on), ``n_likelihood``
    (likelihood evaluations, M&A's cost unit), ``n_covariance`` (covariance
    constructions), ``n_cubic``, ``n_density_evals`` (slice evaluations),
    ``n_shrinkages``, ``wall_time``; ``extra["log_likelihood"]`` (log L(f));
    burn-in cost in ``warmup`` (``n_covariance``, ``n_likelihood``, ...).
    """
    widths = prior_widths(model.prior) if widths is None else np.asarray(widths, dtype=np.float64)
    state = init(model, theta0, f0, method, root)

    def kernel(r, st):
        return step(r, st, model, method, widths, n_latent_updates=n_latent_updates, step_out=step_out)

    return runner.run_chain(rng, kernel, state, n_draws=n_draws, n_warmup=n_burn, callback=callback,
                            position=lambda st: st.theta, lp=lambda st: complete_data_log_likelihood(model, st),
                            record=lambda st, info: {"log_likelihood": st.log_likelihood})
