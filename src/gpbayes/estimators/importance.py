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
    "select_draw",
    "covariance_and_factor",
    "PseudoMarginalTarget",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


class ImportanceSample(NamedTuple):
    """One importance-sampling estimate of F&G eq. 25 and what it was made from.

    log_estimate : log p~(y | theta) = log(1/N_imp sum_i w_i).
    log_weights : (n_imp,) log w_i = log p(y|f_i) + log N(f_i|0,K) - log q(f_i).
    draws : (n, n_imp), column i is f_i ~ q(f | y, theta).
    n_cubic : O(n^3) operations counted while making it.
    """

    log_estimate: float
    log_weights: np.ndarray
    draws: np.ndarray
    n_cubic: int


def _draws_and_log_weights(rng, K_chol, y, likelihood, approx: GaussianApproximation, n_imp: int):
    """(F, log w): F (n, n_imp) columns f_i ~ q, and the log-weights of F&G eq. 25."""
    n = approx.n
    F = approx.map_normals(
        rng.standard_normal((n, n_imp)), rng.standard_normal((n, n_imp)), K_chol
    )  # (n, n_imp), columns ~ q
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
    return F, log_lik + log_prior - log_q


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

    Returns
    -------
    :class:`ImportanceSample`: ``log_estimate`` = log(1/N_imp sum_i w_i) by
    logsumexp, the ``log_weights`` (n_imp,), the ``draws`` f_i (n, n_imp),
    and ``n_cubic``, the O(n^3) operations counted inside: 0 given K_chol and
    n_imp < n; 1 more if K had to be factorised; the block solves with
    n_imp >= n columns are counted by ``gpbayes.linalg`` as O(n^3) too.
    """
    return _importance_sample(rng, K_chol, likelihood.check_targets(y), likelihood, approx, n_imp)


def _importance_sample(rng, K_chol, y, likelihood, approx, n_imp) -> ImportanceSample:
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
        F, log_w = _draws_and_log_weights(rng, K_chol, y, likelihood, approx, n_imp)
        if n_imp == 1:
            # scipy's logsumexp of one value is that value (+0.0 turns -0.0 into 0.0, as it does),
            # at ~0.3 ms less per call (its array-API dispatch)
            log_estimate = float(log_w[0]) + 0.0
        else:
            log_estimate = float(logsumexp(log_w) - np.log(n_imp))
    return ImportanceSample(log_estimate, log_w, F, ops.cubic)


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


@dataclasses.dataclass
class PseudoMarginalTarget:
    """log p~(y | theta) + log p(psi): the noisy log posterior of F&G Alg. 1.

    ``target(psi, rng)`` builds K = kernel(psi, X), factorises it once,
    builds the Gaussian approximation (``approx="laplace"`` or ``"ep"``, EP
    schedule ``ep_mode``), and returns the importance estimate with
    ``n_imp`` samples plus the prior ``prior.log_density(psi)`` on psi
    (Jacobian included by ``gpbayes.priors``).  Outside the prior's support it
    returns -inf without touching the data.  If K cannot be factorised even
    with jitter (extreme psi) it returns -inf and counts the event in
    ``n_failures``.

    ``log_density_and_latent(psi, rng)`` returns the same value together
    with one importance draw f_k selected with probability proportional to
    its weight (particle-marginal MH; ``gpbayes.mcmc.particle_marginal``).

    Cost (counted O(n^3) operations of the last call in ``last_n_cubic``,
    running total in ``total_n_cubic``): one Cholesky of K plus the
    approximation's ``n_cubic``; the estimator itself adds none for n_imp < n.

    ``approx_log_posterior(psi)`` is the deterministic approximate log
    marginal (R&W eq. 3.32 for LA, log Z_EP for EP) plus the prior, used by
    F&G (Sec. 4.4) during the adaptive phase; it does not factorise K.

    Warm starts (``warm_start=True``; off by default): the approximation of
    each call starts from the mode (LA) or site parameters (EP) of the
    previous call -- the last *evaluated* psi, accepted or not.
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

    def _approximate(self, K, K_chol):
        prev = self.last_approximation if self.warm_start else None
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
        """log p~(y | theta) + log p(psi) (F&G eq. 25 plus the prior), one estimate from ``rng``."""
        return self._evaluate(psi, rng, select_latent=False)[0]

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
        return self._evaluate(psi, rng, select_latent=True)

    def _evaluate(self, psi, rng, select_latent: bool):
        psi = np.asarray(psi, dtype=np.float64)
        log_prior = self.prior.log_density(psi)
        self.n_calls += 1
        if log_prior == -np.inf:
            self.last_n_cubic = 0
            return -np.inf, None
        latent = None
        with linalg.count_ops() as ops:
            try:
                K, K_chol = covariance_and_factor(self.kernel, psi, self.X)
            except linalg.NotPositiveDefiniteError:
                self.n_failures += 1
                linalg.record_failed_estimate()
                value = -np.inf
            else:
                q = self._approximate(K, K_chol)
                self.last_approximation = q
                est = _importance_sample(rng, K_chol, self.y, self.likelihood, q, self.n_imp)
                value = est.log_estimate + log_prior
                if select_latent and value != -np.inf and not np.isnan(value):
                    latent = est.draws[:, select_draw(rng, est.log_weights)].copy()
        self.last_n_cubic = ops.cubic
        self.total_n_cubic += ops.cubic
        return float(value), latent

    def approx_log_posterior(self, psi) -> float:
        """Deterministic approximate log p(y | theta) + log p(psi) (F&G Sec. 4.4)."""
        psi = np.asarray(psi, dtype=np.float64)
        log_prior = self.prior.log_density(psi)
        if log_prior == -np.inf:
            return -np.inf
        with linalg.count_ops() as ops:
            K = self.kernel(psi, self.X)
            q = self._approximate(K, None)
            self.last_approximation = q
        self.last_n_cubic = ops.cubic
        self.total_n_cubic += ops.cubic
        return float(q.log_marginal + log_prior)
