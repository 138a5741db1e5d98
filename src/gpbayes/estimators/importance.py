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
    Z[0] = rng.standard_normal((int(n), int(n_imp)))
    Z[1] = rng.standard_normal((int(n), int(n_imp)))
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
            log_estimate = float(logsumexp(log_w) - np.log(n_imp))
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
