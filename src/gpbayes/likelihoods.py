"""Factorised likelihoods p(y | f) = prod_i p(y_i | f_i) and the protocol they implement.

The protocol (``Likelihood``)
-----------------------------
Everything the approximations, representations, models and predictions of
gpbayes need from an observation model is a method of its class; nothing in
the library switches on a likelihood's name.  A new likelihood is one class
that subclasses ``Likelihood`` and defines

* ``name`` and ``check_targets(y)`` (reject data it cannot explain, naming
  the offending values);
* ``log_lik(y, f)`` and its derivatives in f, ``d1``, ``d2``, ``d3``: the
  Newton iteration of the Laplace approximation (Rasmussen & Williams 2006,
  Alg. 3.1: W = -d2, b = W f + d1) and its gradient in the hyperparameters
  (R&W Alg. 5.1 / Sec. 5.5.1: d3);

and inherits, unless it overrides them with closed forms, the rest, computed
from the above by the shared helpers of this module:

* ``tilted_moments(y, mu, s2)``: log Z, d log Z/d mu, d^2 log Z/d mu^2 of
  Z = int p(y | f) N(f; mu, s2) df, the moments of the tilted distribution
  that EP's site update needs (R&W eq. 3.58, Alg. 3.5 line 6, in GPML's
  derivative form: the tilted mean is mu + s2 d1, its variance s2 + s2^2 d2).
  Fallback: ``gauss_hermite_tilted_moments``, Gauss-Hermite quadrature
  centred and scaled at the Laplace fit of the tilted density;
* ``log_predictive_density(y, mean, var)`` = log p(y_* | D) for a Gaussian
  latent predictive N(f_*; mean, var): the same Z (R&W eq. 3.80 for the
  probit; ``tilted_moments(...)[0]``);
* ``predictive_mean(mean, var)``: what ``gpbayes.predict`` reports from a
  latent predictive N(mean, var): p(y_* = +1 | D) for a binary likelihood
  (R&W eq. 3.25), which is the default, exp(log_predictive_density(+1, ...))
  (adaptive quadrature); the Poisson's rate per unit exposure and the
  Gaussian's mean override it;
* ``site_fit(y, prior_var)``: the Gaussian fit of Murray & Adams eq. 12 to
  each site posterior L_i(f_i) N(f_i; 0, Sigma_ii), as (diag S, h).
  Fallback: moment matching from ``tilted_moments`` at the prior "cavity"
  (0, Sigma_ii) -- one EP site update from the prior: S = -1/d2 - Sigma_ii,
  h = d1 / (1 + Sigma_ii d2) (``gpbayes.site_approximations.moment_matched_fit``);
* ``taylor_fit(y, prior_var)``: M&A eq. 13, S_ii = -1 / d2 at the maximum of
  log L_i, centre at that maximum.  Fallback: Newton's method on log L_i
  (``gpbayes.site_approximations.newton_taylor_fit``);
* ``sample_targets(rng, f)``: draws y_i ~ p(y | f_i), elementwise, for the
  posterior predictive draws of ``gpbayes.sample_posterior_predictive``.
  Default: none (a NotImplementedError naming the likelihood): a likelihood
  of your own defines it to get y-level draws; the four here have closed
  forms;
* ``with_offset(m)``: the likelihood of f + m (the sampled constant m of
  ``LatentGP(sample_offset=True)`` and ``LatentGaussianModel``, M&A Sec. 5);
  the default has none and says so; ``offset_moments(y)``: a centre and scale
  for that m (its default prior and start), by default (0, 1);
* ``approximations``: the Gaussian approximations this likelihood supports,
  its default first (class attribute; the protocol's default is
  ("laplace", "ep")).  ``ep_approximation`` refuses a likelihood that does
  not list "ep", and ``gpbayes.sample`` / ``predict`` offer and default to
  what it lists.

Subclassing ``Likelihood`` is how a class gets the fallbacks (PEP 544's
explicit subclassing of a protocol); a class that defines every member
itself satisfies the protocol structurally (``isinstance(obj, Likelihood)``
checks that the members exist).

The four likelihoods here (R&W Sec. 3.4, eqs. 3.15-3.16 for probit/logistic)
----------------------------------------------------------------------------
* probit: log Phi(y f); d1 = y N(f)/Phi(y f); d2 = -r^2 - y f r, r = N(f)/Phi(y f).
  Closed forms: tilted moments (R&W eq. 3.58), predictive Phi(m / sqrt(1 + v))
  (R&W eq. 3.80), site fit S = pi/2 + (pi/2 - 1) Sigma_ii (M&A eq. 12).
* logistic: log sigmoid(y f); with t = (y + 1)/2, pi = sigmoid(f):
  d1 = t - pi, d2 = -pi (1 - pi), d3 = -pi (1 - pi)(1 - 2 pi).
  Site fit by 1-D adaptive quadrature (``site_approximations.logistic_site_noise``);
  predictive and tilted moments by the Gauss-Hermite fallbacks.
* Gaussian(noise variance s2, offset c): -1/2 log(2 pi s2) - (y - f - c)^2 / (2 s2).
  Every fit is exact: tilted log Z = log N(y; mu + c, s2 + v), site S = s2, centre y - c.
* Poisson with exposure E and offset m: rate = E exp(f + m);
  y log rate - rate - log y!; d1 = y - rate, d2 = d3 = -rate.  Site fit by
  Laplace (M&A Sec. 5), Taylor fit at f^ = log(y / E) - m; predictive mean
  rate per unit exposure exp(mean + m + var/2) (log-normal mean).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.special import expit, gammaln, log_ndtr, logsumexp, ndtr

from . import site_approximations as sites

__all__ = [
    "Likelihood",
    "Probit",
    "Logistic",
    "Gaussian",
    "Poisson",
    "make_likelihood",
    "gauss_hermite_tilted_moments",
    "gauss_hermite_expectation",
    "probit_tilted_moments",
]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _finite(name: str, y: np.ndarray) -> np.ndarray:
    y = np.asarray(y)
    if y.dtype.kind in "USc" or (y.dtype.kind == "O" and any(isinstance(v, (str, bytes, complex)) for v in y.flat)):
        first = next(v for v in y.flat if isinstance(v, (str, bytes, complex, np.str_, np.bytes_, np.complexfloating)))
        raise ValueError(f"{name}: targets must be real numbers, got {type(first).__name__} values (first: "
                         f"{first!r}); convert them before building the model (np.asarray(y, dtype=float) for "
                         "numbers written as text)")
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"{name}: targets must be a 1-D array, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: targets contain {np.count_nonzero(~np.isfinite(y))} NaN/inf values")
    return y


def _check_real(lik, field: str, scalar: bool = False) -> None:
    """A likelihood's parameter ``field`` must be a real number (or, unless ``scalar``, an array of them):
    a string, bool, complex or None is refused, naming the parameter."""
    value = getattr(lik, field)
    a = np.asarray(value) if not isinstance(value, (bool, np.bool_)) else None
    ok = a is not None and a.dtype.kind in "iuf" and (a.ndim == 0 or not scalar)
    if not ok:
        raise TypeError(f"{lik.name} likelihood ({type(lik).__name__}): {field} must be a real number"
                        f"{'' if scalar else ' or an array of them'}, got {value!r} ({type(value).__name__})")


def _check_pm1(name: str, y) -> np.ndarray:
    y = _finite(name, y)
    bad = np.setdiff1d(np.unique(y), [-1.0, 1.0])
    if bad.size:
        raise ValueError(
            f"{name} likelihood needs labels in {{-1, +1}}; found other values {bad[:10].tolist()}"
        )
    return y


# ---------------------------------------------------------------------------
# shared quadrature helpers (the protocol's fallbacks)
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _hermite_nodes(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes t and weights w (summing to 1) for E_{N(0,1)}[g(t)] ~= sum_k w_k g(t_k)."""
    t, w = np.polynomial.hermite_e.hermegauss(n_points)
    return t, w / w.sum()


def gauss_hermite_expectation(fn, mean, var, n_points: int = 32) -> np.ndarray:
    """E[fn(f)] under N(f; mean, var), elementwise, by ``n_points``-point Gauss-Hermite quadrature.

    The quadrature axis is the last one: fn(mean[..., None] + sd[..., None] t) @ w
    (R&W eq. 3.25; the logistic's averaged predictive, R&W Sec. 3.4.2, has
    no closed form).  Fixed nodes: accurate while fn varies slowly on the
    scale of sd (for the logistic, 32 nodes are within 1.2e-7 for sd <= 2,
    |mean| <= 4, but 8e-4 off at sd = 3-5);
    the protocol's default predictive uses the adaptive tilted-moment
    quadrature instead.
    """
    t, w = _hermite_nodes(n_points)
    mean = np.asarray(mean, dtype=np.float64)
    sd = np.sqrt(np.asarray(var, dtype=np.float64))
    return fn(mean[..., None] + sd[..., None] * t) @ w


def gauss_hermite_tilted_moments(likelihood, y, mu, s2, n_points: int = 96, newton_steps: int = 30):
    """log Z, d log Z/d mu, d^2 log Z/d mu^2 of Z = int p(y | f) N(f; mu, s2) df by quadrature.

    The fallback of ``Likelihood.tilted_moments`` (R&W eq. 3.58) for a
    likelihood without closed-form moments.  The ``n_points`` Gauss-Hermite
    nodes are placed at the Laplace fit N(c, 1/h) of the tilted density
    p(y | f) N(f; mu, s2) -- c its mode (damped Newton from mu), h its
    curvature there, at least the cavity's 1/s2 -- and the integrand is the
    ratio tilted / N(c, 1/h) (adaptive Gauss-Hermite: exact placement is not
    needed for validity, only for accuracy, so a likelihood much narrower
    than the cavity still gets its nodes where its mass is).  From the
    normalised node weights pi_k: tilted mean m_t = sum pi_k f_k, variance
    v_t = sum pi_k (f_k - m_t)^2, and (R&W eq. 3.58's moments in GPML's
    derivative form) d1 = (m_t - mu) / s2, d2 = (v_t - s2) / s2^2.  Arrays
    broadcast; the quadrature axis is a new leading one, so per-observation
    parameters of the likelihood (e.g. an exposure per bin) broadcast over it.
    Accuracy with 96 nodes against adaptive quadrature, for the skewed tilted
    densities of a complementary log-log link (tests/test_likelihood_protocol.py):
    log Z within 1e-10 and the moment-matched site precision of M&A eq. 12
    within 4e-8 (relative) for cavity variances up to 9; at 25 the site
    precision within 4e-6 (64 nodes: 3e-6 at 8, 1.5e-4 at 25).
    """
    y, mu, s2 = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (y, mu, s2)))
    prec0 = 1.0 / s2

    def objective(c):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return likelihood.log_lik(y, c) - 0.5 * (c - mu) ** 2 * prec0

    # centre: the tilted mode by damped Newton (the log-concave case converges; otherwise any c is valid)
    c = mu.copy()
    phi = objective(c)
    if np.shape(phi) != c.shape:  # a log_lik of another shape would grow the arrays on every halving below
        raise ValueError(f"{type(likelihood).__name__}.log_lik(y, f) must return one value per entry of f "
                         f"(elementwise, broadcasting), shape {c.shape} here, got {np.shape(phi)}")
    for _ in range(newton_steps):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            g = likelihood.d1(y, c) - (c - mu) * prec0
            h = np.maximum(prec0 - likelihood.d2(y, c), prec0)
        if np.shape(g) != c.shape or np.shape(h) != c.shape:
            raise ValueError(f"{type(likelihood).__name__}.d1 and .d2 (y, f) must return one value per entry of f "
                             f"(elementwise, broadcasting), shape {c.shape} here, got {np.shape(g)} and "
                             f"{np.shape(h)}")
        step = np.where(np.isfinite(g) & np.isfinite(h), g / h, 0.0)
        for _ in range(30):  # halve where the objective would fall
            c_new = c + step
            phi_new = objective(c_new)
            worse = ~(phi_new >= phi)
            if not np.any(worse):
                break
            step = np.where(worse, 0.5 * step, step)
        c, phi = np.where(worse, c, c_new), np.where(worse, phi, phi_new)
        if np.all(np.abs(step) <= 1e-10 * (1.0 + np.abs(c))):
            break
    with np.errstate(over="ignore", invalid="ignore"):
        h = np.maximum(prec0 - likelihood.d2(y, c), prec0)
    bad = ~(np.isfinite(c) & np.isfinite(h))
    c, h = np.where(bad, mu, c), np.where(bad, prec0, h)
    sd_q = 1.0 / np.sqrt(h)

    t, w = _hermite_nodes(n_points)
    tt = t.reshape((-1,) + (1,) * c.ndim)
    F = c + sd_q * tt  # (Q, ...)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # log [p(y | f) N(f; mu, s2) / N(f; c, 1/h)] at the nodes
        log_r = (likelihood.log_lik(y, F) - 0.5 * (F - mu) ** 2 * prec0 - 0.5 * np.log(s2)
                 + 0.5 * tt * tt + np.log(sd_q))
    log_r = np.where(np.isnan(log_r), -np.inf, log_r)
    log_terms = np.log(w).reshape(tt.shape) + log_r
    lZ = logsumexp(log_terms, axis=0)
    with np.errstate(invalid="ignore"):
        p = np.exp(log_terms - lZ)
    m_t = np.sum(p * F, axis=0)
    v_t = np.sum(p * (F - m_t) ** 2, axis=0)
    return lZ, (m_t - mu) * prec0, (v_t - s2) * prec0 * prec0


def probit_tilted_moments(y, mu_c, s2_c):
    """log Z_i, d log Z_i / d mu_c, d^2 log Z_i / d mu_c^2 for Phi(y f) N(f | mu_c, s2_c) (R&W eq. 3.58, GPML ``likErf``)."""
    scale = np.sqrt(1.0 + s2_c)
    z = y * mu_c / scale
    lZ = log_ndtr(z)
    r = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - lZ)  # N(z) / Phi(z)
    d1 = y * r / scale
    d2 = -r * (z + r) / (1.0 + s2_c)
    return lZ, d1, d2


# ---------------------------------------------------------------------------
# the protocol
# ---------------------------------------------------------------------------
#: the methods a likelihood without its own ``d1``/``d2`` cannot run: the quadrature fallbacks (the site fits
#: of M&A eqs. 12-13, EP's tilted moments) centre their nodes by Newton's method on d1 and d2; 'nuts-whitened'
#: uses d1 and starts at the Laplace mode (d1, d2); the Laplace approximation uses both
_NEEDS_D1_D2 = ("the site fits of the surrogate-data and posterior representations ('surr', 'slice-surr-site', "
                "'slice-surr-taylor', 'slice-post-site', 'slice-post-taylor': the protocol's quadrature fallbacks, "
                "unless the class defines site_fit / taylor_fit), EP's tilted moments, 'nuts-whitened' (its "
                "gradient and its start at the Laplace mode) and the Laplace approximation ('pseudo-marginal', "
                "'nuts-is')")

#: the methods that need only ``log_lik``
_LOG_LIK_ONLY_METHODS = ("aa", "slice-fixed", "slice-prior-white")


def _missing(likelihood, member: str, needed_by: str) -> str:
    """The NotImplementedError's message for a protocol member a likelihood class does not define."""
    return (f"the {getattr(likelihood, 'name', '?')} likelihood ({type(likelihood).__name__}) defines no "
            f"{member}(...), which is needed by {needed_by}: define {member} on the class, or use a method that "
            f"needs only log_lik: {list(_LOG_LIK_ONLY_METHODS)}")


def _check_outputs(likelihood, y, owner: str) -> None:
    """Evaluate ``log_lik`` (and ``d1`` if the class defines it) once at f = 0 and check the shape: one value
    per observation, y's shape.  A likelihood returning a column (n, 1) would otherwise broadcast into
    (n, n) arrays inside the samplers (a quadrature retry loop growing them until MemoryError)."""
    y = np.asarray(y, dtype=np.float64)
    f0 = np.zeros(y.shape)
    for member in ("log_lik", "d1"):
        try:
            with np.errstate(all="ignore"):
                out = getattr(likelihood, member)(y, f0)
        except NotImplementedError:
            if member == "log_lik":
                raise
            continue
        shape = None if out is None else np.shape(out)
        if shape != y.shape:
            got = "None" if out is None else f"shape {shape}"
            raise ValueError(f"{owner}: {type(likelihood).__name__}.{member}(y, f) must return one value per "
                             f"observation, an array of y's shape {y.shape} (elementwise in y and f, "
                             f"broadcasting), got {got} for y and f of shape {y.shape}"
                             + ("; a column (n, 1) broadcasts into (n, n) arrays: return a 1-D array"
                                if shape is not None and len(shape) == 2 and shape[1:] == (1,) else ""))


def _nonfinite_log_lik(likelihood, y, f, total) -> str:
    """The message for a non-finite log-likelihood sum ``total`` at (y, f): the likelihood's class and name, and
    the first observation whose log p(y_i | f_i) is not finite, with y_i and f_i."""
    cls, name = type(likelihood).__name__, getattr(likelihood, "name", "?")
    try:
        with np.errstate(all="ignore"):
            terms = np.asarray(likelihood.log_lik(np.asarray(y, dtype=np.float64), np.asarray(f, dtype=np.float64)))
        bad = np.flatnonzero(~np.isfinite(terms.ravel()))
    except Exception:  # noqa: BLE001 -- the message must not fail where the sum did not
        bad = np.array([], dtype=int)
    where = ""
    if bad.size:
        i = int(bad[0])
        yi = np.ravel(y)[i] if i < np.size(y) else "?"
        fi = np.ravel(f)[i] if i < np.size(f) else "?"
        where = (f"; {bad.size} non-finite term(s), the first at observation {i}: log p(y_{i} | f_{i}) = "
                 f"{terms.ravel()[i]} with y_{i} = {yi}, f_{i} = {fi}")
    return (f"initial f has log-likelihood {total} under the {name} likelihood ({cls}){where} -- check "
            f"{cls}.log_lik at these values and that check_targets refuses targets it cannot explain")


@runtime_checkable
class Likelihood(Protocol):
    """A factorised observation model p(y | f) = prod_i p(y_i | f_i) (module docstring).

    Required: ``name``, ``check_targets``, ``log_lik``, ``d1``, ``d2``,
    ``d3``.  The other members have defaults computed from these
    (quadrature, Newton) that a subclass overrides with closed forms.
    """

    name: str
    #: the Gaussian approximations this likelihood supports (``ep_approximation``, ``gpbayes.sample``), default first
    approximations: tuple[str, ...] = ("laplace", "ep")

    def check_targets(self, y) -> np.ndarray:
        """y as a float array if the likelihood can explain it, else ValueError naming the bad values.

        It must return one target per entry of y, and give its own output back unchanged (the models
        refuse one that does not: the samplers check the targets again)."""
        raise NotImplementedError(_missing(self, "check_targets", "every model (it checks y)"))

    def log_lik(self, y, f):
        """log p(y_i | f_i), elementwise (broadcasting): one value per entry of f, shape of y and f broadcast."""
        raise NotImplementedError(_missing(self, "log_lik", "every method"))

    def d1(self, y, f):
        """d log p(y | f) / df (R&W Alg. 3.1 line 6)."""
        raise NotImplementedError(_missing(self, "d1", _NEEDS_D1_D2))

    def d2(self, y, f):
        """d^2 log p(y | f) / df^2 = -W (R&W Alg. 3.1 line 4)."""
        raise NotImplementedError(_missing(self, "d2", _NEEDS_D1_D2))

    def d3(self, y, f):
        """d^3 log p(y | f) / df^3 (R&W eq. 5.23, the Laplace gradient)."""
        raise NotImplementedError(_missing(self, "d3", "the Laplace approximation's gradient ('pseudo-marginal', "
                                                        "'nuts-is' with approximation='laplace')"))

    # ------------------------------------------------------------ defaults
    def tilted_moments(self, y, mu, s2):
        """(log Z, d log Z / d mu, d^2 log Z / d mu^2), Z = int p(y | f) N(f; mu, s2) df (R&W eq. 3.58).

        Default: ``gauss_hermite_tilted_moments`` (96 adaptive nodes).
        """
        return gauss_hermite_tilted_moments(self, y, mu, s2)

    def log_predictive_density(self, y, mean, var):
        """log p(y_* | D) = log int p(y_* | f) N(f; mean, var) df: ``tilted_moments(...)[0]``."""
        return self.tilted_moments(y, mean, var)[0]

    def predictive_mean(self, mean, var):
        """What ``predict`` reports from the latent predictive N(mean, var).

        Default, for a binary likelihood (labels in {-1, +1}): p(y_* = +1 | D)
        = int p(+1 | f) N(f; mean, var) df (R&W eq. 3.25), as
        exp(``log_predictive_density``(+1, mean, var)).  A likelihood of other
        targets overrides it (the Poisson: rate per unit exposure; the
        Gaussian: the mean).
        """
        mean = np.asarray(mean, dtype=np.float64)
        return np.exp(self.log_predictive_density(np.ones_like(mean), mean, var))

    def site_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """(diag S, h) of the Gaussian fit to each site posterior (M&A eq. 12), thresholded.

        Default: moment matching from ``tilted_moments`` at (0, Sigma_ii)
        (``site_approximations.moment_matched_fit``).
        """
        return sites.moment_matched_fit(self, y, prior_var, max_noise_ratio)

    def taylor_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """(diag S, h) of the Taylor fit at the maximum of each log L_i (M&A eq. 13), thresholded.

        Default: Newton's method on log L_i (``site_approximations.newton_taylor_fit``).
        """
        return sites.newton_taylor_fit(self, y, prior_var, max_noise_ratio)

    def sample_targets(self, rng, f):
        """Draws y_i ~ p(y | f_i), elementwise over f (any shape), from the generator ``rng``.

        The last step of a posterior predictive draw (``gpbayes.sample_posterior_predictive``):
        f from the posterior (or the GP conditional at new inputs), then y from the likelihood.
        Default: none -- the protocol cannot sample a density it knows only through ``log_lik``;
        a likelihood of your own defines it (a NotImplementedError says so otherwise).
        """
        raise NotImplementedError(f"the {self.name} likelihood ({type(self).__name__}) defines no sample_targets(rng, "
                                  "f): define it (draws of y_i ~ p(y | f_i), elementwise) to get posterior "
                                  "predictive draws of y; gb.predict needs only log_lik and predictive_mean")

    def with_offset(self, m: float):
        """The likelihood of f + m.  Default: none (only a likelihood with an offset parameter has one)."""
        raise NotImplementedError(f"the {self.name} likelihood has no offset on f")

    def offset_moments(self, y) -> tuple[float, float]:
        """(centre, scale) of a constant m added to f (``with_offset``) for the targets y: the default
        prior of ``LatentGP(sample_offset=True)`` is m ~ N(centre, scale^2) and its chains start at the
        centre (M&A Sec. 5's "mean offset to the log-rate").  The centre is the inverse link at the mean
        response (the m whose mean of y at f = 0 is y's mean).  Default: (0, 1)."""
        return 0.0, 1.0


# ---------------------------------------------------------------------------
# the likelihoods
# ---------------------------------------------------------------------------
def _binary_taylor_fit(y, prior_var, max_noise_ratio):
    """M&A eq. 13 for probit/logistic: every maximum of log L_i is at +-inf (their Sec. 5: the -taylor
    methods "reduce to other methods"), so every S_ii is the cap and h = 0."""
    y = np.asarray(y, dtype=np.float64)
    s2 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape).copy()
    return max_noise_ratio * s2, np.zeros_like(y)


@dataclasses.dataclass(frozen=True)
class Probit(Likelihood):
    """p(y | f) = Phi(y f), y in {-1, +1} (R&W eq. 3.16); closed-form EP moments, predictive and site fit."""

    name = "probit"
    approximations = ("ep", "laplace")

    def check_targets(self, y):
        """y as floats; labels outside {-1, +1} (or NaN/inf) stop with a ValueError naming them."""
        return _check_pm1(self.name, y)

    def log_lik(self, y, f):
        """log Phi(y f) (R&W eq. 3.16), by ``scipy.special.log_ndtr`` (accurate in the far tail)."""
        return log_ndtr(y * f)

    def _ratio(self, y, f):
        # r = N(f) / Phi(y f) computed in log space for stability
        z = y * f
        return np.exp(-0.5 * f * f - _LOG_SQRT_2PI - log_ndtr(z))

    def d1(self, y, f):
        """y N(f) / Phi(y f) (R&W eq. 3.16, the gradient column), the ratio taken in log space."""
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
        """-N(f)^2 / Phi(y f)^2 - y f N(f) / Phi(y f) (R&W eq. 3.16, the Hessian column)."""
        r = self._ratio(y, f)
        return -r * r - y * f * r

    def d3(self, y, f):
        # derivative of d2 = -r^2 - y f r, with dr/df = -r (y r + f) ... (y^2 = 1)
        """The derivative of ``d2`` in f (with y^2 = 1), for the Laplace gradient (R&W eq. 5.23)."""
        r = self._ratio(y, f)
        dr = -r * (f + y * r)
        return -2.0 * r * dr - y * r - y * f * dr

    def tilted_moments(self, y, mu, s2):
        """Closed form (R&W eq. 3.58): ``probit_tilted_moments``."""
        return probit_tilted_moments(y, mu, s2)

    def predictive_mean(self, mean, var):
        """p(y_* = +1 | D) = Phi(mean / sqrt(1 + var)) (R&W eq. 3.80, F&G eq. 8)."""
        return ndtr(mean / np.sqrt(1.0 + var))

    def site_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """M&A eq. 12 in closed form: S = pi/2 + (pi/2 - 1) Sigma_ii, h = y sqrt(S + Sigma_ii) / S."""
        y = np.asarray(y, dtype=np.float64)
        s2 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape).copy()
        return sites.binary_symmetric_fit(y, s2, sites.probit_site_noise(s2), max_noise_ratio)

    def taylor_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """M&A eq. 13: every maximum of log L_i is at +-inf (their Sec. 5), so every S_ii is the
        cap ``max_noise_ratio`` Sigma_ii and h = 0."""
        return _binary_taylor_fit(y, prior_var, max_noise_ratio)

    def sample_targets(self, rng, f):
        """y in {-1, +1} with P(y = +1 | f) = exp(log_lik(+1, f)) (R&W eq. 3.16), one uniform per entry of f."""
        f = np.asarray(f, dtype=np.float64)
        p_pos = np.exp(self.log_lik(np.ones_like(f), f))
        return np.where(rng.uniform(size=f.shape) < p_pos, 1.0, -1.0)


@dataclasses.dataclass(frozen=True)
class Logistic(Likelihood):
    """p(y | f) = sigmoid(y f), y in {-1, +1} (R&W eq. 3.15); Laplace by default, predictive by quadrature."""

    name = "logistic"
    # no EP: its tilted moments would be the quadrature fallback's, and the library has used the
    # Laplace approximation for the logistic throughout; a subclass listing "ep" would get EP by quadrature
    approximations = ("laplace",)

    def check_targets(self, y):
        """y as floats; labels outside {-1, +1} (or NaN/inf) stop with a ValueError naming them."""
        return _check_pm1(self.name, y)

    def log_lik(self, y, f):
        """log sigmoid(y f) = -log(1 + exp(-y f)) (R&W eq. 3.15), by ``logaddexp``."""
        return -np.logaddexp(0.0, -y * f)

    def d1(self, y, f):
        """t - pi with t = (y + 1) / 2 and pi = sigmoid(f) (R&W eq. 3.15, the gradient column)."""
        return 0.5 * (y + 1.0) - expit(f)

    def d2(self, y, f):
        """-pi (1 - pi), pi = sigmoid(f) (R&W eq. 3.15, the Hessian column)."""
        p = expit(f)
        return -p * (1.0 - p)

    def d3(self, y, f):
        """-pi (1 - pi) (1 - 2 pi), the derivative of ``d2`` (for R&W eq. 5.23)."""
        p = expit(f)
        return -p * (1.0 - p) * (1.0 - 2.0 * p)

    def predictive_mean(self, mean, var):
        """p(y_* = +1 | D) = E[sigmoid(f_*)] by 32-point Gauss-Hermite quadrature (R&W Sec. 3.4.2: no closed form)."""
        return gauss_hermite_expectation(expit, mean, var)

    def site_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """M&A eq. 12 by 1-D adaptive quadrature per distinct Sigma_ii (``site_approximations.logistic_site_noise``)."""
        y = np.asarray(y, dtype=np.float64)
        s2 = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), y.shape).copy()
        return sites.binary_symmetric_fit(y, s2, sites.logistic_site_noise(s2), max_noise_ratio)

    def taylor_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """M&A eq. 13: every maximum of log L_i is at +-inf (their Sec. 5), so every S_ii is the
        cap ``max_noise_ratio`` Sigma_ii and h = 0."""
        return _binary_taylor_fit(y, prior_var, max_noise_ratio)

    def sample_targets(self, rng, f):
        """y in {-1, +1} with P(y = +1 | f) = exp(log_lik(+1, f)) (R&W eq. 3.15), one uniform per entry of f."""
        f = np.asarray(f, dtype=np.float64)
        p_pos = np.exp(self.log_lik(np.ones_like(f), f))
        return np.where(rng.uniform(size=f.shape) < p_pos, 1.0, -1.0)


@dataclasses.dataclass(frozen=True)
class Gaussian(Likelihood):
    """p(y | f) = N(y; f + offset, noise_variance); every fit is exact.

    ``offset`` (default 0) is a fixed constant added to f, what ``with_offset`` moves (the sampled
    constant mean of ``LatentGP(sample_offset=True)``).
    """

    noise_variance: float = 1.0
    offset: float = 0.0
    name = "gaussian"
    approximations = ("laplace",)

    def __post_init__(self):
        for field in ("noise_variance", "offset"):
            _check_real(self, field, scalar=True)
        if not (np.isfinite(self.noise_variance) and self.noise_variance > 0):
            raise ValueError(f"gaussian likelihood: noise_variance must be > 0, got {self.noise_variance}")
        if not np.isfinite(self.offset):
            raise ValueError(f"gaussian likelihood: offset must be a finite number, got {self.offset}")

    def check_targets(self, y):
        """y as floats; NaN or infinite targets stop with a ValueError."""
        return _finite(self.name, y)

    def log_lik(self, y, f):
        """log N(y; f + offset, noise_variance)."""
        s2 = self.noise_variance
        return -0.5 * np.log(s2) - _LOG_SQRT_2PI - 0.5 * (y - f - self.offset) ** 2 / s2

    def d1(self, y, f):
        """(y - f - offset) / noise_variance."""
        return (y - f - self.offset) / self.noise_variance

    def d2(self, y, f):
        """-1 / noise_variance (constant: W = I / noise_variance)."""
        return np.full(np.shape(f), -1.0 / self.noise_variance)

    def d3(self, y, f):
        """0 (the log-likelihood is quadratic in f)."""
        return np.zeros(np.shape(f))

    def tilted_moments(self, y, mu, s2):
        """Exact: Z = N(y; mu + offset, s2 + noise), d1 = (y - mu - offset) / (s2 + noise), d2 = -1 / (s2 + noise)."""
        t = s2 + self.noise_variance
        r = y - mu - self.offset
        return -0.5 * np.log(t) - _LOG_SQRT_2PI - 0.5 * r * r / t, r / t, -1.0 / t + 0.0 * r

    def predictive_mean(self, mean, var):
        """E[y_* | D] = the latent predictive mean plus the offset (the noise has mean zero; R&W eq. 2.25)."""
        return np.asarray(mean, dtype=np.float64) + self.offset

    def site_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """The site posterior is exact: S = noise variance, centre g = y - offset (h = g / S), never thresholded."""
        y = np.asarray(y, dtype=np.float64)
        s = np.full(y.shape, float(self.noise_variance))
        return s, (y - self.offset) / s

    taylor_fit = site_fit  # the log-likelihood is quadratic: its Taylor fit is itself

    def sample_targets(self, rng, f):
        """y = f + offset + e, e ~ N(0, noise_variance) (R&W eq. 2.1's noise model), one normal per entry of f."""
        f = np.asarray(f, dtype=np.float64)
        return f + self.offset + np.sqrt(self.noise_variance) * rng.standard_normal(f.shape)

    def with_offset(self, m: float):
        """Gaussian(noise_variance, offset + m): y ~ N(f + offset + m, noise_variance), a constant mean m of f."""
        return dataclasses.replace(self, offset=self.offset + float(m))

    def offset_moments(self, y) -> tuple[float, float]:
        """(mean(y) - offset, sd(y)) (the identity link's inverse at the mean response; scale 1 for constant y)."""
        y = np.asarray(y, dtype=np.float64)
        sd = float(np.std(y))
        return float(np.mean(y)) - self.offset, sd if sd > 0 else 1.0


@dataclasses.dataclass(frozen=True)
class Poisson(Likelihood):
    """y ~ Poisson(exposure * exp(f + offset)); exposure/offset scalar or per bin."""

    exposure: float | np.ndarray = 1.0
    offset: float | np.ndarray = 0.0
    name = "poisson"
    approximations = ("laplace",)

    def __post_init__(self):
        """exposure > 0 and offset finite, real numbers (a scalar or one per bin): log(exposure) of a
        negative or zero exposure would be NaN or -inf in every rate."""
        _check_real(self, "exposure")
        _check_real(self, "offset")
        e = np.asarray(self.exposure, dtype=np.float64)
        if not np.all(np.isfinite(e) & (e > 0)):
            raise ValueError(f"poisson likelihood: exposure must be positive and finite (a scalar or one per "
                             f"bin), got {np.ravel(e)[~(np.isfinite(np.ravel(e)) & (np.ravel(e) > 0))][:5].tolist()}")
        if not np.all(np.isfinite(np.asarray(self.offset, dtype=np.float64))):
            raise ValueError("poisson likelihood: offset must be finite")

    def check_targets(self, y):
        """y as floats; negative, fractional, NaN or infinite counts stop with a ValueError naming them."""
        y = _finite(self.name, y)
        if np.any(y < 0) or np.any(y != np.round(y)):
            bad = np.unique(y[(y < 0) | (y != np.round(y))])
            raise ValueError(f"poisson likelihood needs non-negative integer counts; found {bad[:10].tolist()}")
        return y

    def _log_rate(self, f):
        return np.log(self.exposure) + f + self.offset

    def log_lik(self, y, f):
        """y log(rate) - rate - log y!, rate = exposure exp(f + offset) (M&A Sec. 5)."""
        lr = self._log_rate(f)
        return y * lr - np.exp(lr) - gammaln(y + 1.0)

    def d1(self, y, f):
        """y - rate, rate = exposure exp(f + offset)."""
        return y - np.exp(self._log_rate(f))

    def d2(self, y, f):
        """-rate (W = diag(rate))."""
        return -np.exp(self._log_rate(f)) * np.ones(np.shape(f))

    def d3(self, y, f):
        """-rate (every derivative of -rate in f is -rate)."""
        return self.d2(y, f)

    def predictive_mean(self, mean, var):
        """E[exp(f_* + offset)] = exp(mean + offset + var / 2), the log-normal mean."""
        return np.exp(mean + self.offset + 0.5 * var)

    def site_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """M&A eq. 12 by a Laplace fit to each site (their Sec. 5): ``site_approximations.poisson_site_fit``."""
        return sites.poisson_site_fit(self, y, prior_var, max_noise_ratio)

    def taylor_fit(self, y, prior_var, *, max_noise_ratio=sites.DEFAULT_MAX_NOISE_RATIO):
        """M&A eq. 13: f^ = log(y / exposure) - offset, S = 1 / y (``site_approximations.poisson_taylor_fit``)."""
        return sites.poisson_taylor_fit(self, y, prior_var, max_noise_ratio)

    def sample_targets(self, rng, f):
        """y ~ Poisson(exposure exp(f + offset)) (M&A Sec. 5), elementwise; exposure per bin broadcasts on
        f's last axis."""
        f = np.asarray(f, dtype=np.float64)
        return rng.poisson(np.exp(self._log_rate(f))).astype(np.float64)

    def with_offset(self, m: float):
        """Poisson(exposure, offset + m): the sampled mean offset of the log-rate (M&A Sec. 5)."""
        return dataclasses.replace(self, offset=self.offset + m)

    def offset_moments(self, y) -> tuple[float, float]:
        """(log(sum y / sum exposure exp(offset)), 1): the log link's inverse at the mean rate (sum y floored
        at 0.5, as ``PoissonGP``'s fixed offset), with M&A Sec. 5's m ~ N(log mean count, 1) scale
        (the reproduction's ``offset_sd``)."""
        y = np.asarray(y, dtype=np.float64)
        base = np.broadcast_to(np.asarray(self.exposure, dtype=np.float64) * np.exp(self.offset), y.shape)
        return float(np.log(max(float(y.sum()), 0.5) / float(base.sum()))), 1.0


def make_likelihood(name: str, **kwargs):
    """Likelihood by name: probit, logistic, gaussian, poisson."""
    table = {"probit": Probit, "logistic": Logistic, "gaussian": Gaussian, "poisson": Poisson}
    try:
        return table[name](**kwargs)
    except KeyError:
        raise ValueError(f"unknown likelihood {name!r}; choose one of {sorted(table)}") from None
