"""The Gaussian q(f | y, theta) = N(m, (K^-1 + diag(w))^-1) that the Laplace approximation and EP
both return (:class:`GaussianApproximation`; the site form and its O(n^2) operations are described in
``gpbayes.approx``), the warning of a non-converged approximation, and the gradient of an approximate
log marginal shared by ``laplace`` and ``ep``.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import warnings
from collections.abc import Iterator

import numpy as np

from .. import linalg
from ..kernels import gradient_traces

__all__ = ["GaussianApproximation", "ConvergenceWarning", "failures_counted"]


class ConvergenceWarning(RuntimeWarning):
    """A Gaussian approximation stopped at its iteration limit or diverged (``converged=False``)."""


#: inside :func:`failures_counted`: non-converged approximations are tallied, not warned about
_COUNTED_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("gpbayes_approx_counted_only", default=False)


@contextlib.contextmanager
def failures_counted() -> Iterator[None]:
    """Within the block, a non-converged Laplace or EP fit is tallied (``linalg.OpCounter.not_converged``,
    hence ``sample_stats["n_not_converged"]`` per draw) without a :class:`ConvergenceWarning`.

    Samplers evaluate an approximation thousands of times; ``gb.sample`` runs inside this block and
    summarises the tally in one warning per run.  It sets no warning filter: ``warnings.catch_warnings``
    around each evaluation would reset Python's once-per-location registry at every exit, so that any
    other warning raised inside (numpy's overflow, say) printed once per evaluation.
    """
    token = _COUNTED_ONLY.set(True)
    try:
        yield
    finally:
        _COUNTED_ONLY.reset(token)


def _not_converged(message: str) -> None:
    """Tally (``linalg.OpCounter.not_converged``) a non-converged approximation, and warn unless
    inside :func:`failures_counted`."""
    linalg.record_not_converged()
    if not _COUNTED_ONLY.get():
        warnings.warn(message, ConvergenceWarning, stacklevel=3)

_LOG_2PI = float(np.log(2.0 * np.pi))


@dataclasses.dataclass(frozen=True)
class GaussianApproximation:
    """q(f | y, theta) = N(m, (K^-1 + diag(w))^-1) and what produced it.

    Fields
    ------
    method : ``"laplace"``, ``"ep-parallel"`` or ``"ep-sequential"``.
    m : mean (n,) -- the mode f_hat (LA) or the EP posterior mean mu.
    w : site precisions (n,), ``W`` at the mode (LA) or ``tau_tilde`` (EP).
    B_chol : lower Cholesky factor of B = I + W^1/2 K W^1/2 at ``w``.
    K : the covariance matrix (a reference, not a copy).
    alpha : K^-1 m, obtained without K^-1 (for predictions k_*^T alpha).
    log_marginal : the approximate log p(y | theta): R&W eq. 3.32 (LA) or
        log Z_EP, R&W eqs. 3.65/3.73-3.74 (EP).
    n_cubic : O(n^3) operations counted by ``gpbayes.linalg`` while building
        this approximation.
    n_iter : Newton steps (LA) or EP sweeps/parallel updates (EP).
    converged : the stopping rule was met before ``max_iter``.
    nu : EP site locations nu_tilde (None for LA).  ``(nu, w)`` warm-start EP.
    K_chol : lower Cholesky factor of K if it was supplied, else None.
    damping : EP only: the damping in force at the end (parallel EP halves
        it when it detects a period-2 cycle; ``gpbayes.approx.ep``), else None.
    restarted : EP only: the warm start (``sites_init``) failed (diverged or
        did not converge) and the fit was made again from zero sites;
        ``n_iter`` counts both runs.
    """

    method: str
    m: np.ndarray
    w: np.ndarray
    B_chol: np.ndarray
    K: np.ndarray
    alpha: np.ndarray
    log_marginal: float
    n_cubic: int
    n_iter: int
    converged: bool
    nu: np.ndarray | None = None
    K_chol: np.ndarray | None = None
    damping: float | None = None
    restarted: bool = False

    # ------------------------------------------------------------------ sizes
    @property
    def n(self) -> int:
        """The number of latent values n (the length of ``m``)."""
        return int(self.m.shape[0])

    @property
    def sqrt_w(self) -> np.ndarray:
        """W^1/2 = sqrt(w), the diagonal of R&W's W^1/2 in B = I + W^1/2 K W^1/2 (Alg. 3.1)."""
        return np.sqrt(self.w)

    def _factor(self, K_chol):
        L = self.K_chol if K_chol is None else K_chol
        if L is None:
            raise ValueError(
                "this approximation holds no Cholesky factor of K; pass K_chol "
                "(from gpbayes.linalg.cholesky(K)) to sample or evaluate q"
            )
        return L

    # ------------------------------------------------------ O(n^2) operations
    def solve_I_plus_KW(self, V: np.ndarray) -> np.ndarray:
        """(I + K W)^-1 V = V - K W^1/2 B^-1 W^1/2 V, V of shape (n,) or (n, k)."""
        sw = self.sqrt_w
        sw_ = sw if V.ndim == 1 else sw[:, None]
        return V - self.K @ (sw_ * linalg.cho_solve(self.B_chol, sw_ * V))

    def map_normals(self, Z1: np.ndarray, Z2: np.ndarray, K_chol=None) -> np.ndarray:
        """Columns f = m + Sigma (L_K^-T z1 + W^1/2 z2) for standard-normal columns.

        ``Z1``, ``Z2`` are (n, k); the result (n, k) has columns distributed
        exactly as N(m, Sigma) when Z1, Z2 are independent standard normals.
        """
        L = self._factor(K_chol)
        G = L @ Z1 + self.K @ (self.sqrt_w[:, None] * Z2)
        return self.m[:, None] + self.solve_I_plus_KW(G)

    def sample(self, rng: np.random.Generator, size: int, K_chol=None) -> np.ndarray:
        """``size`` draws from q, shape (size, n); 2n standard normals per draw."""
        n = self.n
        Z1 = rng.standard_normal((n, size))
        Z2 = rng.standard_normal((n, size))
        return self.map_normals(Z1, Z2, K_chol).T

    def log_density(self, F: np.ndarray, K_chol=None) -> np.ndarray:
        """log q(f) for rows of F (shape (k, n) or (n,)); O(n^2) per row."""
        L = self._factor(K_chol)
        F = np.asarray(F, dtype=np.float64)
        single = F.ndim == 1
        D = np.atleast_2d(F).T - self.m[:, None]  # (n, k)
        U = linalg.solve_triangular(L, D, lower=True)
        quad = np.einsum("ij,ij->j", U, U) + np.einsum("i,ij->j", self.w, D * D)
        # log |Sigma| = log |K| - log |B|
        logdet = linalg.logdet_from_cholesky(L) - linalg.logdet_from_cholesky(self.B_chol)
        out = -0.5 * (quad + logdet + self.n * _LOG_2PI)
        return out[0] if single else out

    # ------------------------------------------------------------ prediction
    def latent_predictive(self, Ks: np.ndarray, kss: np.ndarray, weights: np.ndarray | None = None):
        """Mean and variance of q(f_* | y, theta) = int p(f_* | f) q(f) df at m test points.

        The one implementation of R&W Alg. 3.2 lines 4-6 (Laplace) and its EP
        counterpart, Alg. 3.6 lines 4-8 (eqs. 3.60-3.62); F&G eq. 7:

            m_*  = k_*^T K^-1 m,                  (K^-1 m = ``alpha`` unless ``weights``)
            s2_* = k_** - |L_B^-1 W^1/2 k_*|^2    (= k_** - k_*^T (K + W^-1)^-1 k_*),

        using the factor of B = I + W^1/2 K W^1/2 the approximation holds: no
        O(n^3) operation, a triangular solve with the m test columns.

        ``Ks`` is k(X, X_*) (n, m) and ``kss`` the prior variances k(x_*, x_*)
        (m,).  ``weights`` replaces K^-1 m in the mean: R&W Alg. 3.2 line 4
        writes it as grad log p(y | f^), equal to K^-1 f^ at the mode
        (``gpbayes.classification`` keeps that form for the Laplace
        approximation).  The variance is clipped at 0 against rounding.
        """
        # R&W Alg. 3.2 line 4 / Alg. 3.6 lines 4-6: fbar_* := k_*^T K^-1 m
        mean = Ks.T @ (self.alpha if weights is None else weights)
        # R&W Alg. 3.2 line 5 / Alg. 3.6 line 7: v := L \ (W^1/2 k_*)
        v = linalg.solve_triangular(self.B_chol, self.sqrt_w[:, None] * Ks, lower=True)
        # R&W Alg. 3.2 line 6 / Alg. 3.6 line 8: V[f_*] := k_** - v^T v
        var = kss - np.einsum("ij,ij->j", v, v)
        return mean, np.maximum(var, 0.0)

    # --------------------------------------------------------- O(n^3), tests
    def covariance(self) -> np.ndarray:
        """Sigma = K - V^T V, V = L_B^-1 W^1/2 K (R&W eq. 3.68); two O(n^3) ops."""
        V = linalg.solve_triangular(self.B_chol, self.sqrt_w[:, None] * self.K, lower=True)
        return self.K - linalg.matmul(V.T, V)


def _marginal_and_grad(kernel, psi, X, y, likelihood, fit, trace_matrix, targets_checked: bool):
    """An approximate log marginal and its gradient in psi, for ``laplace_log_marginal_and_grad`` and
    ``ep_log_marginal_and_grad``: K = kernel(psi, X), ``q = fit(K, y)``, then the gradient
    1/2 tr(M dK/dpsi_j) for every j from ``M = trace_matrix(q, K, y)`` (symmetric, Fortran-ordered) in
    one ``gpbayes.kernels.gradient_traces`` call (the kernel's own, or the protocol's fallback); the O(n^3)
    operations of M are added to ``q.n_cubic``."""
    psi = np.asarray(psi, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    if not targets_checked:
        y = likelihood.check_targets(y)
    K = kernel(psi, X)
    q = fit(K, y)
    with linalg.count_ops() as ops:
        M = trace_matrix(q, K, y)
        grad = 0.5 * gradient_traces(kernel, psi, X, M, K, overwrite_W=True)
    q = dataclasses.replace(q, n_cubic=q.n_cubic + ops.cubic)
    return float(q.log_marginal), grad, q
