"""Unbiased importance-sampling estimates of the marginal likelihood p(y | theta).

Filippone & Girolami (2014), Sec. 3.3.1, eq. 25:

    p~(y | theta) = 1/N_imp sum_i p(y | f_i) N(f_i | 0, K) / q(f_i | y, theta),
    f_i ~ q(f | y, theta),

with q the Laplace or EP Gaussian approximation (``gpbayes.approx``).  Its
expectation is p(y | theta) for *any* q whose support covers the posterior's
(every Gaussian here), so the pseudo-marginal MH chain of F&G Alg. 1 targets
the exact posterior p(theta | y) (Andrieu & Roberts 2009); the quality of q
only affects the estimator's variance.  Everything is computed in log space
and averaged with logsumexp.

``importance_sample`` returns the estimate together with the N_imp draws and
their log-weights; ``select_draw`` picks one draw with probability
w_k / sum_j w_j, which is what the particle-marginal MH sampler
(``gpbayes.mcmc.particle_marginal``; Andrieu, Doucet & Holenstein 2010)
carries as its latent f.

``PseudoMarginalTarget`` wraps kernel, approximation, estimator and prior
into the ``log_density_fn(psi, rng)`` that ``gpbayes.mcmc.random_walk``
expects, and into ``log_density_and_latent(psi, rng)`` for
``gpbayes.mcmc.particle_marginal``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from .. import linalg
from ..approx import GaussianApproximation, ep_approximation, laplace_approximation

__all__ = [
    "importance_log_marginal",
    "importance_log_weights",
    "importance_sample",
    "ImportanceSample",
    "importance_normals",
    "TargetEstimate",
    "select_draw",
    "covariance_and_factor",
    "PseudoMarginalTarget",
    "DeterministicLogDensity",
    "NImpChoice",
    "log_estimate_sd",
    "choose_n_imp",
    "predicted_n_imp",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


class ImportanceSample(NamedTuple):
    """One importance-sampling estimate of F&G eq. 25 and what it was made from.

    log_estimate : log p~(y | theta) = log(1/N_imp sum_i w_i).
    log_weights : (n_imp,) log w_i = log p(y|f_i) + log N(f_i|0,K) - log q(f_i).
    draws : (n, n_imp), column i is f_i ~ q(f | y, theta).
    n_cubic : O(n^3) operations counted while making it.
    normals : (2, n, n_imp) the standard normals the draws were made from
        (``importance_normals``; ``GaussianApproximation.map_normals``).
    """

    log_estimate: float
    log_weights: np.ndarray
    draws: np.ndarray
    n_cubic: int
    normals: np.ndarray | None = None


def importance_normals(rng: np.random.Generator, n: int, n_imp: int) -> np.ndarray:
    """The (2, n, n_imp) standard normals behind N_imp draws from q: two (n, n_imp) blocks, in that order.

    These are the draws ``importance_sample`` makes from its generator; a
    correlated pseudo-marginal chain keeps them in its state
    (``gpbayes.mcmc.pseudo_marginal``).
    """
    Z = np.empty((2, int(n), int(n_imp)))
    # drawn in place (``out=``): the same normals, in the same order, as two (n, n_imp) draws copied in
    rng.standard_normal(out=Z[0])
    rng.standard_normal(out=Z[1])
    return Z


def _draws_and_log_weights(rng, K_chol, y, likelihood, approx: GaussianApproximation, n_imp: int, normals=None):
    """(F, log w, normals): F (n, n_imp) columns f_i ~ q, the log-weights of F&G eq. 25, the normals used."""
    n = approx.n
    if normals is None:
        normals = importance_normals(rng, n, n_imp)
    elif normals.shape != (2, n, n_imp):
        raise ValueError(f"normals must be (2, {n}, {n_imp}), got {normals.shape}")
    F = approx.map_normals(normals[0], normals[1], K_chol)  # (n, n_imp), columns ~ q
    D = F - approx.m[:, None]
    # prior: log N(f | 0, K) with L_K^-1 f = L_K^-1 m + L_K^-1 (f - m)
    U = linalg.solve_triangular(K_chol, D, lower=True)
    u_m = linalg.solve_triangular(K_chol, approx.m, lower=True)
    Uf = U + u_m[:, None]
    logdet_K = linalg.logdet_from_cholesky(K_chol)
    log_prior = -0.5 * (np.einsum("ij,ij->j", Uf, Uf) + logdet_K + n * _LOG_2PI)
    # q: (f-m)^T Sigma^-1 (f-m) = |L_K^-1 (f-m)|^2 + (f-m)^T W (f-m); log|Sigma| = log|K| - log|B|
    quad_q = np.einsum("ij,ij->j", U, U) + np.einsum("i,ij->j", approx.w, D * D)
    logdet_S = logdet_K - linalg.logdet_from_cholesky(approx.B_chol)
    log_q = -0.5 * (quad_q + logdet_S + n * _LOG_2PI)
    log_lik = np.sum(likelihood.log_lik(y[:, None], F), axis=0)
    return F, log_lik + log_prior - log_q, normals


def importance_log_weights(
    rng: np.random.Generator,
    K_chol: np.ndarray,
    y: np.ndarray,
    likelihood,
    approx: GaussianApproximation,
    n_imp: int,
) -> np.ndarray:
    """log w_i = log p(y|f_i) + log N(f_i|0,K) - log q(f_i), f_i ~ q, i = 1..n_imp (F&G eq. 25).

    ``K_chol`` is the lower Cholesky factor of K (required here).  Draws are
    made in one block (2 n x n_imp standard normals); the cost is O(n^2 n_imp),
    which ``gpbayes.linalg`` counts as O(n^3) only when n_imp >= n.
    """
    return _draws_and_log_weights(rng, K_chol, y, likelihood, approx, n_imp)[1]


def importance_sample(
    rng: np.random.Generator,
    K_chol: np.ndarray | None,
    y: np.ndarray,
    likelihood,
    approx: GaussianApproximation,
    n_imp: int,
    normals: np.ndarray | None = None,
) -> ImportanceSample:
    """The estimate log p~(y | theta) of F&G eq. 25 with its draws and log-weights.

    Parameters
    ----------
    rng : the generator for the importance draws (the only randomness: two
        (n, n_imp) blocks of standard normals, in that order).
    K_chol : lower Cholesky factor of K (as from ``gpbayes.linalg.cholesky``),
        or None to use ``approx.K_chol`` or, failing that, to factorise
        ``approx.K`` here (one counted Cholesky, without jitter: the factor
        must be of the K that q was built from).
    y, likelihood : data and likelihood p(y | f).
    approx : the Gaussian q (``laplace_approximation`` / ``ep_approximation``).
    n_imp : number of importance samples N_imp >= 1.
    normals : optional (2, n, n_imp) standard normals to make the draws from
        instead of drawing them from ``rng`` (correlated pseudo-marginal moves).

    Returns
    -------
    :class:`ImportanceSample`: ``log_estimate`` = log(1/N_imp sum_i w_i) by
    logsumexp, the ``log_weights`` (n_imp,), the ``draws`` f_i (n, n_imp),
    and ``n_cubic``, the O(n^3) operations counted inside: 0 given K_chol and
    n_imp < n; 1 more if K had to be factorised; the block solves with
    n_imp >= n columns are counted by ``gpbayes.linalg`` as O(n^3) too.
    """
    return _importance_sample(rng, K_chol, likelihood.check_targets(y), likelihood, approx, n_imp, normals)


def _logsumexp(a: np.ndarray):
    """``scipy.special.logsumexp(a)`` of a 1-D float64 array whose largest entry is finite, to the bit,
    without scipy's array-API dispatch (about 0.1 ms per call; once per importance estimate).

    scipy 1.15+ (its ``_logsumexp``): with a_max the largest entry and m the number of entries equal
    to it, s = sum(exp(a_j - a_max)) over the other entries, then log1p(s / m) + log(m) + a_max
    (s = 0 kept as 0).  The same operations on the same values here; anything else (a NaN, an
    infinite maximum) goes to scipy itself.
    """
    a_max = a.max()
    if not math.isfinite(a_max):
        return logsumexp(a)
    top = a == a_max
    m = np.float64(np.count_nonzero(top))
    rest = a.copy()
    rest[top] = -np.inf
    s = np.add.reduce(np.exp(rest - a_max))
    if s != 0:
        s = s / m
    return np.log1p(s) + np.log(m) + a_max


def _importance_sample(rng, K_chol, y, likelihood, approx, n_imp, normals=None) -> ImportanceSample:
    """``importance_sample`` for targets ``y`` already checked by ``likelihood.check_targets``."""
    n_imp = int(n_imp)
    if n_imp < 1:
        raise ValueError(f"n_imp must be >= 1, got {n_imp}")
    with linalg.count_ops() as ops:
        if K_chol is None:
            K_chol = approx.K_chol
        if K_chol is None:
            # no jitter: the factor must be of the very K that q was built from,
            # or the weights would not be exact importance weights
            K_chol = linalg.cholesky(approx.K, name="K", max_tries=1)
        F, log_w, normals = _draws_and_log_weights(rng, K_chol, y, likelihood, approx, n_imp, normals)
        if n_imp == 1:
            # scipy's logsumexp of one value is that value (+0.0 turns -0.0 into 0.0, as it does),
            # at ~0.3 ms less per call (its array-API dispatch)
            log_estimate = float(log_w[0]) + 0.0
        else:
            log_estimate = float(_logsumexp(log_w) - np.log(n_imp))
    return ImportanceSample(log_estimate, log_w, F, ops.cubic, normals)


def importance_log_marginal(
    rng: np.random.Generator,
    K_chol: np.ndarray | None,
    y: np.ndarray,
    likelihood,
    approx: GaussianApproximation,
    n_imp: int,
) -> tuple[float, int]:
    """(log p~(y | theta), O(n^3) operations): F&G eq. 25 without the draws.

    The same estimate, from the same draws of ``rng``, as
    :func:`importance_sample` (see there for the parameters).
    """
    s = importance_sample(rng, K_chol, y, likelihood, approx, n_imp)
    return s.log_estimate, s.n_cubic


def select_draw(rng: np.random.Generator, log_weights: np.ndarray) -> int:
    """Index k of one importance draw, chosen with probability w_k / sum_j w_j.

    This is the selection step of particle-marginal MH (Andrieu, Doucet &
    Holenstein 2010, Sec. 2.4.2, with a one-step "SMC", i.e. importance
    sampling): carrying f_k with the estimate of F&G eq. 25 makes the
    pseudo-marginal chain leave p(theta, f | y) invariant, so (theta, f)
    pairs are draws for F&G's predictive eq. 20.  Uses exactly one uniform
    from ``rng`` (inversion of the cumulative weights); the weights must
    not all be zero.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64)
    m = float(np.max(log_weights))
    if not np.isfinite(m):
        raise ValueError(f"cannot select a draw: the largest log-weight is {m}")
    # normalised weights w_k / sum_j w_j, in log space (plain numpy: scipy's
    # logsumexp costs ~0.1 ms per call, which adds up over a chain)
    log_sum = m + float(np.log(np.sum(np.exp(log_weights - m))))
    probs = np.exp(log_weights - log_sum)
    k = int(np.searchsorted(np.cumsum(probs), rng.uniform() * probs.sum(), side="right"))
    return min(k, log_weights.size - 1)


def covariance_and_factor(kernel, psi, X, *, name: str = "K") -> tuple[np.ndarray, np.ndarray]:
    """K = kernel(psi, X) and its lower Cholesky factor, consistent with each other.

    One counted Cholesky (``gpbayes.linalg.cholesky``, escalating jitter).  If
    jitter was needed, the model's prior covariance is K + jitter I: it is
    added to the returned K, so that q (built from K), its sampler (which uses
    the factor) and N(f | 0, K) in the weights of F&G eq. 25 agree.  Raises
    ``gpbayes.linalg.NotPositiveDefiniteError`` if K cannot be factorised even
    with jitter.
    """
    K = kernel(psi, X)
    with linalg.count_ops() as kc:
        K_chol = linalg.cholesky(K, name=name)
    if kc.jitter_events:
        K.flat[:: K.shape[0] + 1] += kc.max_jitter
    return K, K_chol


class TargetEstimate(NamedTuple):
    """One evaluation of a :class:`PseudoMarginalTarget` and what it was made from.

    value : log p~(y | theta) + log p(psi) (F&G eq. 25 plus the prior); -inf
        outside the prior's support or where K could not be factorised.
    approximation : the Gaussian q built at psi (None where ``value`` is -inf
        without one); a warm start for the next evaluation.
    normals : (2, n, n_imp) standard normals behind the importance draws
        (None where none were drawn).
    latent : one importance draw f_k selected ∝ w_k (only with ``select_latent``).
    n_cubic : O(n^3) operations counted in this evaluation.
    """

    value: float
    approximation: GaussianApproximation | None
    normals: np.ndarray | None
    latent: np.ndarray | None
    n_cubic: int


@dataclasses.dataclass
class PseudoMarginalTarget:
    """log p~(y | theta) + log p(psi): the noisy log posterior of F&G Alg. 1.

    ``target.estimate(psi, rng)`` builds K = kernel(psi, X), factorises it
    once, builds the Gaussian approximation (``approx="laplace"`` or
    ``"ep"``, EP schedule ``ep_mode``), and returns (:class:`TargetEstimate`)
    the importance estimate with ``n_imp`` samples plus the prior
    ``prior.log_density(psi)`` on psi (Jacobian included by
    ``gpbayes.priors``), with the approximation and the importance normals it
    used.  Outside the prior's support it returns -inf without touching the
    data.  If K cannot be factorised even with jitter (extreme psi) it returns
    -inf and counts the event in ``n_failures``.  ``target(psi, rng)`` is its
    value: the ``log_density_fn(psi, rng)`` of ``gpbayes.mcmc.random_walk``.

    ``log_density_and_latent(psi, rng)`` returns the same value together
    with one importance draw f_k selected with probability proportional to
    its weight (particle-marginal MH; ``gpbayes.mcmc.particle_marginal``).

    Cost (counted O(n^3) operations of the last call in ``last_n_cubic``,
    running total in ``total_n_cubic``): one Cholesky of K plus the
    approximation's ``n_cubic``; the estimator itself adds none for n_imp < n.

    ``approx_log_posterior(psi)`` is the deterministic approximate log
    marginal (R&W eq. 3.32 for LA, log Z_EP for EP) plus the prior, used by
    F&G (Sec. 4.4) during the adaptive phase; it does not factorise K.

    The target is stateless: what one evaluation returns depends only on its
    arguments.  ``last_approximation`` records the q built by the last call
    (for inspection; the target never reads it).

    Warm starts (``warm_start=True``; off by default): the samplers of
    ``gpbayes.mcmc.pseudo_marginal`` then carry the approximation of the last
    *evaluated* psi, accepted or not, in their state and pass it back as
    ``estimate(..., warm=q)`` / ``deterministic(..., warm=q)``, so that the
    approximation at the next psi starts from its mode (LA) or site
    parameters (EP).  ``deterministic_log_density()`` is the same for any
    ``gpbayes.mcmc.random_walk`` chain on the deterministic approximation.
    This changes only the starting point of a deterministic fixed-point
    iteration that is run to tolerance, not the estimator's target: the
    estimate is unbiased for p(y | theta) for any q.  What a warm start can
    change is q itself, by an amount of the order of the stopping tolerance,
    which makes the chain's stationary distribution exact only up to that
    tolerance; tighten ``approx_options["tol"]`` if this matters.
    """

    X: np.ndarray
    y: np.ndarray
    kernel: object
    likelihood: object
    prior: object
    approx: str = "laplace"
    n_imp: int = 1
    ep_mode: str = "parallel"
    warm_start: bool = False
    approx_options: dict = dataclasses.field(default_factory=dict)
    last_n_cubic: int = dataclasses.field(default=0, init=False)
    total_n_cubic: int = dataclasses.field(default=0, init=False)
    n_calls: int = dataclasses.field(default=0, init=False)
    n_failures: int = dataclasses.field(default=0, init=False)
    last_approximation: GaussianApproximation | None = dataclasses.field(default=None, init=False)

    def __post_init__(self):
        if self.approx not in ("laplace", "ep"):
            raise ValueError(f"approx must be 'laplace' or 'ep', got {self.approx!r}")
        self.X = np.asarray(self.X, dtype=np.float64)
        self.y = self.likelihood.check_targets(self.y)
        if self.X.shape[0] != self.y.shape[0]:
            raise ValueError(f"X has {self.X.shape[0]} rows but y has {self.y.shape[0]} entries")
        if len(self.prior) != self.kernel.n_params:
            raise ValueError(
                f"prior has {len(self.prior)} components, kernel has {self.kernel.n_params} "
                f"parameters {self.kernel.param_names}"
            )

    @property
    def n(self) -> int:
        """Number of observations (the importance normals are (2, n, n_imp))."""
        return int(self.y.shape[0])

    def _approximate(self, K, K_chol, warm):
        prev = warm if self.warm_start else None
        if self.approx == "laplace":
            f0 = prev.m if prev is not None else None
            return laplace_approximation(
                K, self.y, self.likelihood, f_init=f0, K_chol=K_chol, targets_checked=True,
                **self.approx_options,
            )
        sites = (prev.nu, prev.w) if prev is not None else None
        return ep_approximation(
            K, self.y, self.likelihood, sites_init=sites, mode=self.ep_mode,
            K_chol=K_chol, targets_checked=True, **self.approx_options,
        )

    def __call__(self, psi, rng: np.random.Generator) -> float:
        """log p~(y | theta) + log p(psi) (F&G eq. 25 plus the prior), one estimate from ``rng`` (no warm start)."""
        return self.estimate(psi, rng).value

    def log_density_and_latent(self, psi, rng: np.random.Generator) -> tuple[float, np.ndarray | None]:
        """The estimate of ``target(psi, rng)`` and one of its draws f_k, chosen ∝ w_k.

        Returns ``(value, f)``: ``value`` is exactly what ``target(psi, rng)``
        returns from the same generator state (F&G eq. 25 plus the prior),
        and ``f`` (n,) is the importance draw f_k ~ q selected with
        probability w_k / sum_j w_j by :func:`select_draw` -- one extra
        uniform from ``rng``, drawn after the estimate's normals
        (particle-marginal MH, Andrieu, Doucet & Holenstein 2010, Sec. 2.4.2;
        F&G eq. 20 needs such pairs (theta, f)).  Where ``value`` is -inf
        (outside the prior's support, K not factorisable, all weights zero)
        ``f`` is None and no uniform is drawn.  No O(n^3) operation beyond
        the estimate's.
        """
        est = self.estimate(psi, rng, select_latent=True)
        return est.value, est.latent

    def estimate(self, psi, rng: np.random.Generator, *, warm: GaussianApproximation | None = None,
                 normals: np.ndarray | None = None, select_latent: bool = False) -> TargetEstimate:
        """One evaluation of F&G eq. 25 plus the prior at psi, with what it was made from.

        Parameters
        ----------
        psi : log hyperparameters.
        rng : generator of the importance normals (two (n, n_imp) blocks,
            drawn after the approximation is built) unless ``normals`` are
            given, and of the selection uniform with ``select_latent``.
        warm : the approximation to start from when ``warm_start`` is on
            (ignored otherwise); the caller keeps it in its state.
        normals : (2, n, n_imp) standard normals to use instead of drawing
            them (the correlated pseudo-marginal move of
            ``gpbayes.mcmc.pseudo_marginal``).
        select_latent : also select one draw f_k ∝ w_k (one uniform; see
            :meth:`log_density_and_latent`).

        Notes
        -----
        Updates only the counters ``n_calls``, ``n_failures``, ``last_n_cubic``,
        ``total_n_cubic`` and the record ``last_approximation``; none of them changes
        a later evaluation.
        """
        psi = np.asarray(psi, dtype=np.float64)
        log_prior = self.prior.log_density(psi)
        self.n_calls += 1
        if log_prior == -np.inf:
            self.last_n_cubic = 0
            return TargetEstimate(-np.inf, None, None, None, 0)
        latent = q = used = None
        with linalg.count_ops() as ops:
            try:
                K, K_chol = covariance_and_factor(self.kernel, psi, self.X)
            except linalg.NotPositiveDefiniteError:
                self.n_failures += 1
                linalg.record_failed_estimate()
                value = -np.inf
            else:
                q = self._approximate(K, K_chol, warm)
                self.last_approximation = q
                est = _importance_sample(rng, K_chol, self.y, self.likelihood, q, self.n_imp, normals)
                used = est.normals
                value = est.log_estimate + log_prior
                if select_latent and value != -np.inf and not np.isnan(value):
                    latent = est.draws[:, select_draw(rng, est.log_weights)].copy()
        self.last_n_cubic = ops.cubic
        self.total_n_cubic += ops.cubic
        return TargetEstimate(float(value), q, used, latent, int(ops.cubic))

    def deterministic(self, psi, warm: GaussianApproximation | None = None) -> tuple[float, GaussianApproximation | None]:
        """(approximate log p(y | theta) + log p(psi), q): F&G Sec. 4.4's deterministic log posterior.

        ``warm`` as in :meth:`estimate`.  q is None outside the prior's support.
        """
        psi = np.asarray(psi, dtype=np.float64)
        log_prior = self.prior.log_density(psi)
        if log_prior == -np.inf:
            return -np.inf, None
        with linalg.count_ops() as ops:
            K = self.kernel(psi, self.X)
            q = self._approximate(K, None, warm)
            self.last_approximation = q
        self.last_n_cubic = ops.cubic
        self.total_n_cubic += ops.cubic
        return float(q.log_marginal + log_prior), q

    def approx_log_posterior(self, psi) -> float:
        """Deterministic approximate log p(y | theta) + log p(psi) (F&G Sec. 4.4), without warm start."""
        return self.deterministic(psi)[0]

    def deterministic_log_density(self, reject_failures: bool = False) -> "DeterministicLogDensity":
        """:meth:`deterministic` as a ``gpbayes.mcmc.random_walk`` log density that carries its warm start.

        With ``reject_failures``, an approximation that fails numerically
        (``LinAlgError``/``FloatingPointError``) gives -inf and no warm start.
        """
        return DeterministicLogDensity(self, reject_failures)


@dataclasses.dataclass(frozen=True)
class DeterministicLogDensity:
    """A target's deterministic approximate log posterior (F&G Sec. 4.4) for ``gpbayes.mcmc.random_walk``.

    ``fn(psi, rng)`` evaluates it without warm start; ``fn.evaluate_with_carry(psi, rng,
    carry) -> (value, carry')`` starts from the approximation ``carry`` (when
    the target's ``warm_start`` is on) and returns the new one, which
    ``random_walk`` keeps in its state (``RWMHState.carry``) for the next
    evaluation -- the warm start lives in the chain's state, not in the target.
    An evaluation outside the prior's support builds no approximation and
    returns ``carry`` unchanged.
    """

    target: PseudoMarginalTarget
    reject_failures: bool = False

    def evaluate_with_carry(self, psi, rng=None, carry=None):
        """The deterministic approximate log posterior at ``psi`` (R&W eq. 3.32 or log Z_EP, plus the prior),
        warm-started from ``carry`` (the approximation of the previous evaluation); returns (value, new carry).
        -inf where the approximation fails (F&G Sec. 4.4's adaptive phase rejects such a proposal)."""
        try:
            value, q = self.target.deterministic(psi, carry)
        except (np.linalg.LinAlgError, FloatingPointError):
            if not self.reject_failures:
                raise
            return -np.inf, None  # do not warm-start from a failed run
        # outside the prior's support nothing is built: the warm start stays the previous one
        return value, (q if q is not None else carry)

    def __call__(self, psi, rng=None) -> float:
        return self.evaluate_with_carry(psi, rng, None)[0]


class NImpChoice(NamedTuple):
    """What :func:`choose_n_imp` measured and chose.

    n_imp : the chosen number of importance draws.
    sd_log_estimate : sd of log p~(y | theta) over ``n_repeats`` independent estimates at psi with
        ``n_imp`` draws (measured at the chosen N when ``n_rounds`` allowed the check, else predicted).
    sd_log_ratio : sd of the log-ratio noise log p~(psi'; u') - log p~(psi; u) at the chosen N (measured
        or predicted as ``sd_log_estimate``); for ``rho = 0`` it is sqrt(2) sd_log_estimate.
    c : the constant of Var = c / N_imp behind the choice (N_imp times the measured variance).
    measured : ((n_imp, sd_log_estimate, sd_log_ratio), ...) of every round, in order.
    n_cubic : O(n^3) operations counted while measuring.
    c_ratio : the last round's c over the first's (1.0 with one round, or where both rounds measured at
        the same N).  Near 1 where Var = c / N holds between the two N; far from 1 it does not (heavy-
        tailed importance weights: Var(w) infinite or nearly so, so the variance of log p~ falls more
        slowly than 1 / N), and the choice rests on an extrapolation that failed.
    """

    n_imp: int
    sd_log_estimate: float
    sd_log_ratio: float
    c: float
    measured: tuple
    n_cubic: int
    c_ratio: float = 1.0


def log_estimate_sd(target: "PseudoMarginalTarget", psi, rng: np.random.Generator, n_imp: int, *,
                    n_repeats: int = 32, rho: float = 0.0, psi_proposed=None) -> tuple[float, float, int]:
    """(sd of log p~, sd of the log-ratio noise, O(n^3) operations) at ``psi`` with ``n_imp`` draws.

    The spread of the importance estimate of F&G eq. 25 over ``n_repeats`` independent sets of
    importance normals u at one psi (the Gaussian q and the factor of K are built once per psi; the
    estimate's only randomness is u).  The log-ratio noise is the spread of
    log p~(psi'; u') - log p~(psi; u) over the same repeats, with u' the Crank-Nicolson move
    u' = rho u + sqrt(1 - rho^2) xi of the correlated pseudo-marginal chain (Deligiannidis, Doucet &
    Pitt 2018, Sec. 2) and psi' = ``psi_proposed`` (None: psi itself): the noise the acceptance
    ratio of PM-MH sees between the stored and the proposed estimate.  With ``rho = 0`` and psi' = psi
    the two estimates are independent and the log-ratio's sd is sqrt(2) times the first (up to Monte
    Carlo error); it is measured anyway.  Draws from ``rng``: the normals of the repeats at psi, then
    the innovations xi and (psi' != psi) nothing else.  Both sds use ``ddof=1``.
    """
    n_imp, n_repeats = int(n_imp), int(n_repeats)
    if n_imp < 1:
        raise ValueError(f"n_imp must be an integer >= 1, got {n_imp}")
    if n_repeats < 2:
        raise ValueError(f"n_repeats must be an integer >= 2, got {n_repeats}")
    rho = float(rho)
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must be in [0, 1), got {rho!r}")
    psi = np.asarray(psi, dtype=np.float64)
    psi2 = psi if psi_proposed is None else np.asarray(psi_proposed, dtype=np.float64)
    if psi2.shape != psi.shape:
        raise ValueError(f"psi_proposed must have the shape of psi {psi.shape}, got {psi2.shape}")
    with linalg.count_ops() as ops:
        built = []
        for p in (psi, psi2) if psi_proposed is not None else (psi,):
            K, K_chol = covariance_and_factor(target.kernel, p, target.X)
            built.append((K_chol, target._approximate(K, K_chol, None)))
        if len(built) == 1:
            built.append(built[0])
        (L1, q1), (L2, q2) = built
        n = target.n
        logs, ratios = np.empty(n_repeats), np.empty(n_repeats)
        for r in range(n_repeats):
            u = importance_normals(rng, n, n_imp)
            logs[r] = _importance_sample(rng, L1, target.y, target.likelihood, q1, n_imp, u).log_estimate
            u2 = rho * u + np.sqrt(1.0 - rho * rho) * rng.standard_normal(u.shape)
            ratios[r] = _importance_sample(rng, L2, target.y, target.likelihood, q2, n_imp, u2).log_estimate - logs[r]
    if not (np.all(np.isfinite(logs)) and np.all(np.isfinite(ratios))):
        raise ValueError(f"the importance estimate at psi = {psi} is not finite in every repeat")
    return float(np.std(logs, ddof=1)), float(np.std(ratios, ddof=1)), int(ops.cubic)


def choose_n_imp(target: "PseudoMarginalTarget", psi, rng: np.random.Generator, *, rho: float = 0.0,
                 psi_proposed=None, target_sd: float = 1.2, n_pilot: int = 64, n_repeats: int = 32,
                 n_min: int = 1, n_max: int = 4096, n_rounds: int = 2) -> NImpChoice:
    """A noise-aware N_imp: the smallest N_imp whose predicted noise in log p~ is at ``target_sd``.

    Doucet, Pitt, Deligiannidis & Kohn (2015, Biometrika 102(2), 295-313) show that pseudo-marginal
    MH balances sticking against cost when the sd of the log-likelihood estimator is about 1.2 (their
    recommendation when the efficiency of the exact chain is unknown: a little less where it mixes
    well, more where it mixes badly), taking the variance of log p~ as c / N for large N (the delta
    method for the log of an average of N i.i.d. weights: Var = Var(w) / (N E[w]^2) to first order).
    So, at one psi (a central value of the posterior, e.g. the approximate posterior's mode or a draw
    of it):

    1. measure the sd s of log p~ over ``n_repeats`` estimates with ``n_pilot`` draws
       (:func:`log_estimate_sd`); c = n_pilot s^2;
    2. N = ceil(c / target_sd^2), clipped to [``n_min``, ``n_max``];
    3. repeat at N (``n_rounds`` rounds in all; c / N holds only for large N, and the pilot's c is
       itself an estimate) until N changes by less than a factor 1.25.

    Correlated moves (``rho > 0``; Deligiannidis, Doucet & Pitt 2018): what enters the acceptance
    ratio is the noise of the *log-ratio* of the proposed to the stored estimate, much smaller than
    sqrt(2) s when u' is close to u, so a larger sd of log p~ is tolerated.  With ``rho > 0`` the rule
    is applied to the log-ratio's noise: N is the smallest with predicted sd(log-ratio) at
    sqrt(2) ``target_sd`` -- what the log-ratio of two independent estimates with sd ``target_sd``
    has, i.e. the noise level uncorrelated PM-MH at its optimum sees -- measured between psi and
    ``psi_proposed`` (a typical proposal from psi: the noise of the ratio grows as psi' moves away,
    since q and the map from u to f change).  This equivalence is a heuristic of this library, not a
    result of either paper; Deligiannidis et al. show that with rho close to 1 the ratio's noise stays
    bounded while N grows much more slowly than the number of observations.  With ``rho = 0`` the
    log-ratio's variance is twice that of log p~, so the two rules agree; for ``rho = 0`` the rule
    uses the sd of log p~ as Doucet et al. do.

    Where the weights are heavy-tailed (a q much narrower than p(f | y, theta) in some direction: Var(w)
    infinite) the variance of log p~ does not fall as 1 / N and the sd at one psi says little about
    the sd elsewhere; ``NImpChoice.c_ratio`` shows the first, nothing here the second.  Measured on a
    13-feature ARD probit problem (benchmarks/bench_sticking.py): sd 0.41 at the mode with N = 64,
    0.37 with N = 256, and 1.1-1.4 where the chains stuck.

    Parameters
    ----------
    target : the ``PseudoMarginalTarget`` (its ``n_imp`` is not used).
    psi : where to measure.
    rng : generator of every importance normal and innovation drawn.
    rho : the chain's Crank-Nicolson correlation in [0, 1).
    psi_proposed : psi' for the log-ratio (rho > 0); None: psi.
    target_sd : the sd of log p~ aimed at (> 0; Doucet et al.'s 1.2 by default).
    n_pilot, n_repeats : draws per estimate of the first round (>= 1), estimates per round (>= 2).
    n_min, n_max : bounds of the choice (1 <= n_min <= n_max).
    n_rounds : measurement rounds (>= 1); round k > 1 measures at round k-1's choice.

    Returns
    -------
    :class:`NImpChoice`.  Cost: ``n_rounds`` x ``n_repeats`` x 2 estimates (no O(n^3) operation
    beyond building q at psi and psi' once per round for N < n).
    """
    for name, v, lo in (("n_pilot", n_pilot, 1), ("n_repeats", n_repeats, 2), ("n_min", n_min, 1),
                        ("n_max", n_max, 1), ("n_rounds", n_rounds, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if n_min > n_max:
        raise ValueError(f"n_min must be <= n_max, got n_min={n_min}, n_max={n_max}")
    if not (isinstance(target_sd, (int, float, np.floating)) and not isinstance(target_sd, bool)
            and np.isfinite(target_sd) and target_sd > 0):
        raise ValueError(f"target_sd must be a finite number > 0, got {target_sd!r}")
    rho = float(rho)
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must be in [0, 1), got {rho!r}")
    goal = float(target_sd) if rho == 0.0 else float(np.sqrt(2.0) * target_sd)
    n, measured, cubic, cs = int(n_pilot), [], 0, []
    for k in range(int(n_rounds)):
        sd_log, sd_ratio, c3 = log_estimate_sd(target, psi, rng, n, n_repeats=n_repeats, rho=rho,
                                               psi_proposed=psi_proposed if rho > 0.0 else None)
        cubic += c3
        measured.append((n, sd_log, sd_ratio))
        noise = sd_log if rho == 0.0 else sd_ratio
        c = n * noise * noise
        cs.append(c)
        n_new = predicted_n_imp(c, goal, n_min=n_min, n_max=n_max)
        done = max(n_new, n) < 1.25 * min(n_new, n)
        n_prev, n = n, n_new
        if done or k == n_rounds - 1:
            break
    if n == n_prev:  # measured at the choice
        _, sd_log, sd_ratio = measured[-1]
    else:  # predicted from the last round by Var = c / N
        n_last, sd_log, sd_ratio = measured[-1]
        sd_log, sd_ratio = sd_log * np.sqrt(n_last / n), sd_ratio * np.sqrt(n_last / n)
    c_ratio = cs[-1] / cs[0] if cs[0] > 0 and measured[-1][0] != measured[0][0] else 1.0
    return NImpChoice(int(n), float(sd_log), float(sd_ratio), float(c), tuple(measured), int(cubic), float(c_ratio))


def predicted_n_imp(c: float, target_sd: float, *, n_min: int = 1, n_max: int = 4096) -> int:
    """The smallest N with c / N <= target_sd^2, clipped to [n_min, n_max] (the c / N_imp variance
    law of the log of an importance average; Doucet, Pitt, Deligiannidis & Kohn 2015).
    Non-decreasing in c, non-increasing in target_sd."""
    if not (np.isfinite(c) and c >= 0):
        raise ValueError(f"c must be a finite number >= 0, got {c!r}")
    if not (np.isfinite(target_sd) and target_sd > 0):
        raise ValueError(f"target_sd must be a finite number > 0, got {target_sd!r}")
    n = int(np.ceil(c / (target_sd * target_sd) - 1e-12))
    return int(min(max(n, n_min), n_max))
