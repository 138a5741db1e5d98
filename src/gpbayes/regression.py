"""Exact Gaussian-process regression: log marginal likelihood, gradient, type-II ML.

Model: y = f + e, f ~ GP(0, k_psi), e ~ N(0, lambda I).  The sampled vector
is ``psi = (psi_kernel..., log lambda)``.  With known noise variances
(``noise``: one per point, heteroscedastic, or all equal) e ~ N(0, diag(noise)),
lambda is not a parameter and ``psi = psi_kernel``; below lambda I is then
diag(noise).  With C = K + lambda I = L L^T and
alpha = C^{-1} y (Rasmussen & Williams 2006, Alg. 2.1 and eq. 5.9):

    log p(y | psi) = -1/2 y^T alpha - sum log diag L - n/2 log 2 pi
    d/dphi_j       =  1/2 tr((alpha alpha^T - C^{-1}) dC/dphi_j)

The value costs one Cholesky; the gradient one more O(n^3) operation
(C^{-1} from the factor), counted by ``gpbayes.linalg``.  The traces are
formed by the kernel's ``gradient_traces`` (``gradient="fused"``, the
default: one n x n x (d + 1) GEMM for all of them) or, as before issue 24,
one n x n derivative matrix per parameter (``gradient="per_parameter"``: the
numbers of earlier versions to the bit, which the reproduction's chains use).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.linalg.blas import dger as _dger

from . import linalg
from .kernels import SquaredExponential, traces_from_gradients

__all__ = ["GPRegression", "fit_type2_ml"]

_LOG_2PI = np.log(2.0 * np.pi)
_GRADIENTS = ("fused", "per_parameter")


@dataclasses.dataclass(frozen=True)
class GPRegression:
    """A GP-regression problem: data, kernel, and the (psi -> value) maps.

    ``gradient`` chooses how ``log_marginal_and_grad`` forms the traces
    tr((alpha alpha^T - C^-1) dC/dpsi_j) of R&W eq. 5.9:

    ``"fused"`` (default)
        all of them at once from the kernel's ``gradient_traces`` (one GEMM,
        no n x n derivative matrices; kernels without it fall back to
        ``"per_parameter"``).  At n = 506, d = 13 about 6x faster than
        ``"per_parameter"`` (benchmarks/README.md); equal to it up to rounding.
    ``"per_parameter"``
        one n x n matrix dK/dpsi_j per parameter and its elementwise product
        with the weight matrix: the numbers of gpbayes before issue 24 to the
        bit, which the reproduction passes so its HMC/NUTS chains do not move.
    """

    X: np.ndarray
    y: np.ndarray
    kernel: SquaredExponential
    gradient: str = "fused"
    #: known noise variances, one per point (n,), on y's scale here; None: lambda is sampled (psi's last entry)
    noise: np.ndarray | None = None
    #: n x n buffers reused by ``log_marginal`` and ``log_marginal_and_grad`` (K, C, the factor):
    #: a fresh n x n array costs its page faults, about as much as the arithmetic at n = 500.
    #: The numbers are those of fresh arrays; one object must not be evaluated from two threads
    #: at once.
    _work: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.gradient not in _GRADIENTS:
            raise ValueError(f"GPRegression: gradient must be one of {_GRADIENTS}, got {self.gradient!r}")
        X = np.asarray(self.X, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.float64)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(f"GPRegression: X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("GPRegression: X or y contains NaN/inf")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        if self.noise is not None:
            noise = np.asarray(self.noise, dtype=np.float64)
            if noise.shape != y.shape or not np.all(np.isfinite(noise)) or not np.all(noise > 0):
                raise ValueError(f"GPRegression: noise must hold one finite variance > 0 per point {y.shape}, got "
                                 f"shape {noise.shape}")
            object.__setattr__(self, "noise", noise)

    @property
    def n_params(self) -> int:
        """Number of log-parameters: the kernel's plus the noise variance (unless the noise is known)."""
        return self.kernel.n_params + (1 if self.noise is None else 0)

    @property
    def param_names(self) -> list[str]:
        """The kernel's parameter names followed by ``noise_variance`` (unless the noise is known)."""
        return self.kernel.param_names + (["noise_variance"] if self.noise is None else [])

    def kernel_psi(self, psi) -> np.ndarray:
        """The kernel's log-parameters of psi (psi without log lambda)."""
        psi = np.asarray(psi, dtype=np.float64)
        return psi[: self.kernel.n_params]

    def new_noise(self, psi) -> float:
        """The noise variance of a new observation: lambda; with known noise, their common value if all
        are equal, else 0 (the noise at a new input is not known: the caller says so)."""
        if self.noise is None:
            return float(np.exp(psi[-1]))
        return float(self.noise[0]) if np.all(self.noise == self.noise[0]) else 0.0

    def _buffer(self, name: str) -> np.ndarray:
        n = self.y.shape[0]
        buf = self._work.get(name)
        if buf is None:
            buf = self._work[name] = np.empty((n, n), order="F")
        return buf

    def _cov(self, psi, keep_K: bool = True, buffers: bool = False):
        """(K, C = K + lambda I); with ``keep_K=False`` (K, C) = (None, C), C built in K's memory.

        ``buffers``: K (and C) in this object's reused buffers (SquaredExponential only).
        """
        psi = np.asarray(psi, dtype=np.float64)
        if psi.shape != (self.n_params,):
            raise ValueError(f"expected {self.n_params} log-parameters {self.param_names}, got {psi.shape}")
        se = isinstance(self.kernel, SquaredExponential)
        kp = psi[:-1] if self.noise is None else psi
        K = self.kernel(kp, self.X, out=self._buffer("K")) if (se and buffers) else self.kernel(kp, self.X)
        # SquaredExponential returns a fresh (or our own buffer's) Fortran-ordered K, which C may reuse
        # (another kernel's array is copied: it might be cached); the same C either way
        if not keep_K and se and K.flags.f_contiguous:
            C = K
        elif buffers:
            C = self._buffer("C")
            np.copyto(C, K)
        else:
            C = K.copy(order="F")
        C[np.diag_indices_from(C)] += np.exp(psi[-1]) if self.noise is None else self.noise
        return (K if keep_K else None), C

    def _factor(self, C, buffers: bool):
        if buffers and C.flags.f_contiguous:
            return linalg.cholesky(C, name="K + lambda I", max_tries=1, out=self._buffer("L"))
        return linalg.cholesky(C, name="K + lambda I", max_tries=1)

    def log_marginal(self, psi) -> float:
        """log p(y | psi) (R&W Alg. 2.1)."""
        _, C = self._cov(psi, keep_K=False, buffers=True)
        L = self._factor(C, True)  # line 2
        alpha = linalg.cho_solve(L, self.y)  # line 3
        n = self.y.shape[0]
        # line 7
        return float(-0.5 * self.y @ alpha - 0.5 * linalg.logdet_from_cholesky(L) - 0.5 * n * _LOG_2PI)

    def log_marginal_and_grad(self, psi) -> tuple[float, np.ndarray]:
        """log p(y | psi) and its gradient in psi (R&W eq. 5.9)."""
        traces = getattr(self.kernel, "gradient_traces", None) if self.gradient == "fused" else None
        # the fused traces read only the off-diagonal of K, where C = K + lambda I is K: no copy of K
        K, C = self._cov(psi, keep_K=traces is None, buffers=True)
        L = self._factor(C, True)
        alpha = linalg.cho_solve(L, self.y)
        n = self.y.shape[0]
        value = float(-0.5 * self.y @ alpha - 0.5 * linalg.logdet_from_cholesky(L) - 0.5 * n * _LOG_2PI)
        g = np.empty(self.n_params)
        nk = self.kernel.n_params  # with known noise there is no lambda: g[:nk] is all of g
        if traces is not None:
            # W = alpha alpha^T - C^-1 formed in L's memory (a fresh n x n array costs its page
            # faults, as much as the arithmetic here): C^-1 in place, then the rank-1 update
            W = linalg.cho_inverse(L, overwrite=L.flags.f_contiguous)
            W *= -1.0
            W = _dger(1.0, alpha, alpha, a=W, overwrite_a=1)
            if self.noise is None:
                g[-1] = 0.5 * np.exp(psi[-1]) * np.trace(W)  # dC/dlog lambda = lambda I
            g[:nk] = 0.5 * traces(psi[:nk], self.X, W, C, overwrite_W=True)
            return value, g
        W = np.outer(alpha, alpha) - linalg.cho_inverse(L)
        if self.noise is None:
            g[-1] = 0.5 * np.exp(psi[-1]) * np.trace(W)  # dC/dlog lambda = lambda I
        # tr(W dK) for symmetric matrices = sum of elementwise product (the kernel protocol's fallback)
        g[:nk] = 0.5 * traces_from_gradients(self.kernel, psi[:nk], self.X, W, K)
        return value, g

    def predict(self, psi, X_new) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance of f at X_new (R&W Alg. 2.1 lines 4-6)."""
        K, C = self._cov(psi)
        L = linalg.cholesky(C, name="K + lambda I", max_tries=1)
        alpha = linalg.cho_solve(L, self.y)
        kp = self.kernel_psi(psi)
        Ks = self.kernel(kp, self.X, X_new)
        mean = Ks.T @ alpha
        V = linalg.solve_triangular(L, Ks, lower=True)
        var = self.kernel.diag(kp, X_new) - np.einsum("ij,ij->j", V, V)
        return mean, var


@dataclasses.dataclass(frozen=True)
class Type2MLResult:
    psi: np.ndarray
    log_marginal: float
    objective: float
    n_restarts: int
    all_objectives: np.ndarray
    converged: bool


def fit_type2_ml(
    model: GPRegression,
    rng: np.random.Generator,
    *,
    n_restarts: int = 5,
    init: np.ndarray | None = None,
    init_spread: float = 1.0,
    log_prior=None,
    maxiter: int = 500,
) -> Type2MLResult:
    """Type-II maximum likelihood (or MAP with ``log_prior``) by L-BFGS in log space.

    Restart points are ``init + init_spread * N(0, I)`` drawn from ``rng``
    (the first restart is ``init`` itself).  ``init`` defaults to unit
    amplitude, noise variance 0.1 var(y), and scales set from the median
    pairwise distance.  ``log_prior`` is an object with ``log_density`` and
    ``grad_log_density`` on psi (e.g. ``IndependentPrior``).
    """
    from scipy import optimize  # imported where used: keeps the start-up of jobs that do not fit short

    if init is None:
        init = default_init(model)
    init = np.asarray(init, dtype=float)

    def objective(psi):
        try:
            v, g = model.log_marginal_and_grad(psi)
        except np.linalg.LinAlgError:
            return np.inf, np.zeros_like(psi)
        if log_prior is not None:
            v += log_prior.log_density(psi)
            g = g + log_prior.grad_log_density(psi)
        return -v, -g

    results = []
    for r in range(n_restarts):
        x0 = init if r == 0 else init + init_spread * rng.standard_normal(init.size)
        res = optimize.minimize(objective, x0, jac=True, method="L-BFGS-B",
                                bounds=[(-12.0, 12.0)] * init.size,
                                options={"maxiter": maxiter})
        results.append(res)
    objs = np.array([r.fun for r in results])
    best = results[int(np.argmin(objs))]
    if not np.isfinite(best.fun):
        raise RuntimeError("type-II ML failed: every restart hit a non-positive-definite covariance")
    return Type2MLResult(
        psi=np.asarray(best.x),
        log_marginal=float(model.log_marginal(best.x)),
        objective=float(-best.fun),
        n_restarts=n_restarts,
        all_objectives=-objs,
        converged=bool(best.success),
    )


def default_init(model: GPRegression) -> np.ndarray:
    """A data-driven starting point for psi (see ``fit_type2_ml``): the kernel's
    ``initial_psi`` with amplitude var(y), then noise variance 0.1 var(y) (none with known noise)."""
    vy = float(np.var(model.y)) or 1.0
    noise = [np.log(0.1 * vy)] if model.noise is None else []
    return np.concatenate([model.kernel.initial_psi(model.X, amplitude=vy), noise])
