"""Sparse variational GP (SVGP) with a whitened Gaussian q(u), and the pieces
the sparse sampler (``gpbayes.sparse.mcmc``) shares with it.

Model (Hensman, Matthews & Ghahramani 2015, "Scalable variational GP
classification", SVGP; Hensman et al. 2015, "MCMC for variationally sparse
GPs", poster "Key idea"): inducing values u = f(Z) at M inputs Z, and

    f(x) | u ~ GP( k(x,Z) K_uu^-1 u,  k(x,x') - k(x,Z) K_uu^-1 k(Z,x') ).

Whitening (poster, "Tricks: whiten/center"): u = L v with L L^T = K_uu and
v ~ N(0, I).  With W = L^-1 K_uf (M x N),

    p(f_n | u = L v, theta) = N(f_n; mu_n, s2_n),
    mu = W^T v,        s2_n = k(x_n, x_n) - sum_m W_mn^2.               (C1)

SVGP puts q(v) = N(m, S), S = R R^T with R lower triangular (the "Cholesky
parameterisation"), one (m, R) per latent function c = 1..C.  Then
q(f_n) = N(mu_n, s2_n) with (SVGP's marginals of q(f), whitened)

    mu = W^T m,        s2_n = k_nn - sum_m W_mn^2 + sum_k (R^T W)_kn^2,   (C2)

and the evidence lower bound (SVGP's bound, one expectation per data point) is

    ELBO = sum_n E_q(f_n)[log p(y_n | f_n)] - KL(N(m, S) || N(0, I))
    KL   = 1/2 [tr S + m^T m - M - log|S|]                                (C3)

(+ log p(psi) if a prior is given: then ``fit`` is a MAP-II fit of psi).  The
one-dimensional expectations are done by Gauss-Hermite quadrature (poster,
"Tricks: quadrature for the likelihood"):

    E_N(mu, s2)[g(f)] ~= sum_i w_i g(mu + s t_i),  t_i = sqrt(2) x_i,
                                                    w_i = omega_i / sqrt(pi)  (Q1)

with (x_i, omega_i) the physicists' Hermite nodes.  The multiclass robust-max
likelihood supplies its own ``expected_log_lik`` (``gpbayes.sparse.multiclass``).

Gradients are hand-written (the project has no autodiff): reverse mode through
(C1)-(C3), the triangular solve W = L^-1 K_uf, the Cholesky factor
(``cholesky_backward``: Murray 2016's symbolic reverse-mode formula, in
symmetric form; equivalent to Smith 1995) and the kernel (the kernel
protocol's ``cross_covariance_vjp``: K(X1, X2) w.r.t. psi and X1, and
``diag_vjp``: every parameter's contribution of diag K summed).  Any kernel
of ``SPARSE_KERNELS`` works (``check_kernel``).  Cost of one ELBO
and gradient: O(N M^2 C) plus O(M^3 C); the quadrature is O(N Q C).

Gaussian likelihood with its noise variance sigma^2 as a hyperparameter
(``sample_noise``; the Gaussian row of Hensman et al. 2015's table, Titsias
2009): psi = (kernel log-parameters, log sigma^2), and the expectation of
(C2)/(T1) is done in closed form instead of (Q1),

    E_N(f; mu, s2)[log N(y; f + b, sigma^2)]
        = -1/2 log(2 pi sigma^2) - ((y - b - mu)^2 + s2) / (2 sigma^2)          (G1)

(b the likelihood's fixed offset), with d/dmu = (y - b - mu) / sigma^2,
d/ds2 = -1 / (2 sigma^2) and d/dlog sigma^2 = -1/2 + ((y - b - mu)^2 + s2) /
(2 sigma^2).  (Q1) is exact for (G1)'s quadratic, so the two agree to
rounding.  Summed over n and integrated over v, (G1) in (T1) gives Titsias'
collapsed bound log N(y; 0, Q_ff + sigma^2 I) - tr(K_ff - Q_ff) / (2 sigma^2),
the exact log marginal likelihood at Z = X.

Conventions
-----------
* Latent arrays are (N, C): C = ``likelihood.n_latent`` (1 for the scalar
  likelihoods of ``gpbayes.likelihoods``).  v and m are (M, C), R is (C, M, M).
  All C latent functions share the kernel, its hyperparameters and Z.
* K_uu = K(Z, Z) + jitter * a * I, with a the kernel amplitude: the jitter is
  part of the model (so gradients are exact for it) and scales with a.
* Predictive variances below ``VAR_FLOOR`` are clipped (with zero gradient):
  with Z = X, s2 in (C1) is 0 up to rounding.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import threading
from typing import NamedTuple

import numpy as np
from numpy.polynomial.hermite import hermgauss
from scipy import optimize
from scipy.linalg.lapack import dtrtrs as _dtrtrs

from .. import linalg
from ..kernels import Periodic, SquaredExponential, Stationary

__all__ = [
    "VAR_FLOOR",
    "SPARSE_KERNELS",
    "check_kernel",
    "gaussian_expected_log_lik",
    "likelihood_terms",
    "gauss_hermite",
    "expected_log_lik",
    "cholesky_backward",
    "WhitenedConditional",
    "whitened_conditional",
    "whitened_conditional_backward",
    "SVGPParams",
    "SVGPModel",
    "split_psi",
    "elbo",
    "elbo_and_grad",
    "optimal_gaussian_q",
    "fit",
    "SVGPFit",
    "initial_inducing_inputs",
    "predict_latent",
]

#: Smallest marginal variance used in the quadrature; below it the variance is
#: clipped and its gradient is zero.
VAR_FLOOR = 1e-12

_LOG_2PI = float(np.log(2.0 * np.pi))


# ---------------------------------------------------------------------------
# quadrature of the expected log-likelihood
# ---------------------------------------------------------------------------
def gauss_hermite(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes t_i and weights w_i with E_N(0,1)[g(t)] ~= sum_i w_i g(t_i)  (Q1).

    Exact for polynomials of degree <= 2 n_points - 1.
    """
    n_points = int(n_points)
    if n_points < 1:
        raise ValueError(f"n_points must be >= 1, got {n_points}")
    return _gauss_hermite_cached(n_points)


@functools.lru_cache(maxsize=16)
def _gauss_hermite_cached(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    x, omega = hermgauss(n_points)
    t, w = np.sqrt(2.0) * x, omega / np.sqrt(np.pi)
    t.flags.writeable = False
    w.flags.writeable = False
    return t, w


def _clip_var(var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    active = var > VAR_FLOOR
    return np.where(active, var, VAR_FLOOR), active


def expected_log_lik(likelihood, y, mu, var, n_points: int = 20):
    """sum_i w_i log p(y_n | mu_n + s_n t_i) per n, and its gradients.

    ``mu``, ``var``: (N, C) marginal means and variances of q(f_n) (or of
    p(f_n | u)).  Returns ``(E, dE/dmu, dE/dvar)`` with E of shape (N,) and
    the gradients (N, C).  The gradients are those of the quadrature sum
    itself (exact derivatives of what is computed, so finite differences of
    E agree to rounding):  dE/dmu = sum_i w_i d1(f_i),
    dE/dvar = dE/ds / (2 s) = sum_i w_i t_i d1(f_i) / (2 s).

    A likelihood with more than one latent function (``n_latent`` > 1,
    e.g. ``multiclass.RobustMax``) provides its own ``expected_log_lik``.
    """
    mu = np.asarray(mu, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    if hasattr(likelihood, "expected_log_lik"):
        return likelihood.expected_log_lik(y, mu, var, n_points)
    if mu.ndim != 2 or mu.shape[1] != 1 or var.shape != mu.shape:
        raise ValueError(
            f"a scalar likelihood needs mu, var of shape (N, 1), got {mu.shape}, {var.shape}"
        )
    t, w = gauss_hermite(n_points)
    v, active = _clip_var(var[:, 0])
    s = np.sqrt(v)
    F = mu[None, :, 0] + s[None, :] * t[:, None]  # (Q, N): broadcasts with per-n y, exposure
    if hasattr(likelihood, "log_lik_and_d1"):
        # one pass of the likelihood's expensive part (log Phi for the probit)
        # serves both the quadrature of E and of its derivative (Q1)
        ll, d1 = likelihood.log_lik_and_d1(y, F)
    else:
        ll, d1 = likelihood.log_lik(y, F), likelihood.d1(y, F)
    E = w @ ll
    dmu = w @ d1
    ds = (w * t) @ d1
    dvar = np.where(active, ds / (2.0 * s), 0.0)
    return E, dmu[:, None], dvar[:, None]


def gaussian_expected_log_lik(y, mu, var, log_noise: float, offset: float = 0.0):
    """(G1) per n and its gradients: ``(E (N,), dE/dmu (N, 1), dE/dvar (N, 1), dE/dlog sigma^2 (N,))``.

    E_N(f; mu, s2)[log N(y; f + offset, sigma^2)] = -1/2 log(2 pi sigma^2) - ((y - offset - mu)^2 + s2)
    / (2 sigma^2), sigma^2 = exp(``log_noise``) (module docstring; Titsias 2009's data term, Hensman et
    al. 2015's Gaussian case).  ``mu``, ``var``: (N, 1).  Variances below ``VAR_FLOOR`` are clipped with
    zero gradient, as in ``expected_log_lik``, so both give the same numbers up to rounding.
    """
    mu = np.asarray(mu, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    if mu.ndim != 2 or mu.shape[1] != 1 or var.shape != mu.shape:
        raise ValueError(f"the Gaussian likelihood needs mu, var of shape (N, 1), got {mu.shape}, {var.shape}")
    v, active = _clip_var(var[:, 0])
    s2 = float(np.exp(log_noise))
    r = np.asarray(y, dtype=np.float64) - offset - mu[:, 0]
    q = (r * r + v) / s2  # ((y - b - mu)^2 + s2) / sigma^2
    E = -0.5 * (_LOG_2PI + log_noise) - 0.5 * q
    dmu = r / s2
    dvar = np.where(active, -0.5 / s2, 0.0)
    dlog_noise = -0.5 + 0.5 * q
    return E, dmu[:, None], dvar[:, None], dlog_noise


def likelihood_terms(likelihood, y, mu, var, n_points: int, log_noise=None):
    """The expected log-likelihood of (C2)/(T1) per n and its gradients, ``(E, dE/dmu, dE/dvar, dE/dlog
    sigma^2)``: with ``log_noise`` None, ``expected_log_lik`` (quadrature, Q1; the last entry None),
    else the Gaussian likelihood's closed form (G1) at sigma^2 = exp(``log_noise``) (its own
    ``noise_variance`` is not read)."""
    if log_noise is None:
        return (*expected_log_lik(likelihood, y, mu, var, n_points), None)
    return gaussian_expected_log_lik(y, mu, var, float(log_noise), float(likelihood.offset))


# ---------------------------------------------------------------------------
# the kernels the sparse gradient supports
# ---------------------------------------------------------------------------
#: The kernel classes whose gradient through K_uu = K(Z, Z) + jitter a I is exact in
#: ``whitened_conditional_backward``: stationary (k(x, x') a function of x - x'), amplitude a the last
#: parameter, k = a g, so <K_bar, dK_uu/dpsi> from ``cross_covariance_vjp`` on K_uu itself covers the
#: nugget and the jitter (both scale with a; every other derivative is zero at x = x').  Subclasses
#: (``Matern12``, ``Matern32``, ``Matern52``, ``RationalQuadratic`` of ``Stationary``) are included.
SPARSE_KERNELS = (SquaredExponential, Stationary, Periodic)


def check_kernel(kernel, owner: str = "the sparse GP") -> None:
    """Refuse a kernel the sparse GP's gradient (Hensman et al. 2015, "Cholesky backpropagation") does not
    support (``SPARSE_KERNELS``), naming it and the allowed ones.  Non-stationary kernels (``Linear``),
    ``White`` (no covariance between distinct inputs: nothing for inducing values to carry) and sums /
    products (whose ``cross_covariance_vjp`` recomputes each factor without K_uu's jitter) are refused."""
    if isinstance(kernel, SPARSE_KERNELS):
        return
    name = type(kernel).__name__
    why = {"Linear": "it is not stationary", "White": "it has no covariance between distinct inputs",
           "Sum": "a sum's gradient misses K_uu's jitter", "Product": "a product's gradient misses K_uu's jitter",
           "MeanKernel": "a mean function is not part of the sparse model"}.get(name, "it is not one of them")
    raise TypeError(f"{owner}: kernel {name} is not supported by the sparse GP ({why}); the sparse model takes a "
                    "stationary library kernel: gpbayes.kernels.SquaredExponential, Matern12, Matern32, Matern52, "
                    "RationalQuadratic or Periodic (or a subclass of gpbayes.kernels.Stationary); for other kernels "
                    "use gb.GPRegressor, gb.GPClassifier or gb.LatentGP")


# ---------------------------------------------------------------------------
# reverse mode through the Cholesky factor and the kernel
# ---------------------------------------------------------------------------
def _phi(A: np.ndarray) -> np.ndarray:
    """Lower triangle of A with the diagonal halved (Murray 2016, Phi)."""
    P = np.tril(A)
    P[np.diag_indices_from(P)] *= 0.5
    return P


def cholesky_backward(L: np.ndarray, L_bar: np.ndarray) -> np.ndarray:
    """Sigma_bar from L_bar for L = chol(Sigma) (Murray 2016, symbolic reverse mode).

    Forward: L^-1 dSigma L^-T = L^-1 dL + (L^-1 dL)^T with L^-1 dL lower, so
    dL = L Phi(L^-1 dSigma L^-T).  Transposing (Phi is self-adjoint):
    Sigma_bar = L^-T Phi(L^T L_bar) L^-1, symmetrised since dSigma is
    symmetric (Murray states the lower-triangular form; the two agree on
    symmetric perturbations).  Only the lower triangle of ``L_bar`` is used.
    Two M x M triangular solves (counted by ``gpbayes.linalg``) and one
    M x M product; equivalent to the element-wise algorithm of Smith (1995).
    """
    P = _phi(L.T @ np.tril(L_bar))
    A = linalg.solve_triangular(L, P, lower=True, trans=True)  # L^-T P
    S = linalg.solve_triangular(L, A.T, lower=True, trans=True).T  # L^-T P L^-1
    return 0.5 * (S + S.T)


# ---------------------------------------------------------------------------
# the whitened conditional p(f | u = L v), eq. (C1)
# ---------------------------------------------------------------------------
class WhitenedConditional(NamedTuple):
    """The whitened conditional p(f | u = L v) at given hyperparameters (Hensman et al. 2015):
    K_uu, L = chol(K_uu), K_uf, W = L^-1 K_uf, diag K_ff and the conditional variances.
    """

    K_uu: np.ndarray  # K(Z, Z) + jitter * a * I
    L: np.ndarray  # chol(K_uu)
    K_uf: np.ndarray  # K(Z, X), M x N
    W: np.ndarray  # L^-1 K_uf
    knn: np.ndarray  # diag K(X, X), (N,)
    var: np.ndarray  # k_nn - sum_m W_mn^2 (not clipped), (N,)


class Workspace:
    """Four Fortran-ordered M x N float64 buffers reused from one evaluation to the next.

    A fresh M x N array costs its page faults on first touch (measured: ~17 % of one
    sparse-target evaluation at M = 256, N = 2000, ~24 % at M = 64); the sparse target
    (``gpbayes.sparse.target.log_q_star``) builds K_uf, W, W_bar and a scratch array in
    these instead.  Nothing it returns is a view of them.
    """

    __slots__ = ("K_uf", "W", "W_bar", "scratch")

    def __init__(self, M: int, N: int):
        for name in self.__slots__:
            setattr(self, name, np.empty((M, N), order="F"))

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in self.__slots__)


#: At most this many bytes of workspaces are kept per thread (least recently used dropped first);
#: a shape whose workspace alone is larger gets none (fresh arrays, as without a workspace).
WORKSPACE_MAX_BYTES = 256 * 2**20
_WORKSPACES = threading.local()


def workspace(M: int, N: int) -> Workspace | None:
    """This thread's ``Workspace`` for (M, N) (None if it would exceed ``WORKSPACE_MAX_BYTES``)."""
    key = (int(M), int(N))
    if 4 * 8 * key[0] * key[1] > WORKSPACE_MAX_BYTES:
        return None
    cache = getattr(_WORKSPACES, "cache", None)
    if cache is None:
        cache = _WORKSPACES.cache = collections.OrderedDict()
    ws = cache.get(key)
    if ws is not None:
        cache.move_to_end(key)
        return ws
    ws = cache[key] = Workspace(*key)
    while sum(w.nbytes for w in cache.values()) > WORKSPACE_MAX_BYTES:
        cache.popitem(last=False)
    return ws


def _solve_lower_in_place(L: np.ndarray, B: np.ndarray, trans: bool) -> np.ndarray:
    """L^-1 B (L^-T B with ``trans``) into the Fortran-ordered float64 ``B``: the LAPACK dtrtrs
    call of ``linalg.solve_triangular`` without its copy of B (so the same numbers), counted
    as it counts."""
    if B.shape[1] >= B.shape[0] > 1:
        linalg.record_cubic("triangular")
    X, info = _dtrtrs(L, B, lower=1, trans=1 if trans else 0, overwrite_b=1)
    if info != 0:  # pragma: no cover
        raise ValueError(f"dtrtrs failed with info={info}")
    return X


def whitened_conditional(kernel, psi, Z, X, jitter: float, workspace: Workspace | None = None
                         ) -> WhitenedConditional:
    """W = L^-1 K_uf and the conditional variances of (C1); O(M^3 + N M^2).

    Raises ``linalg.NotPositiveDefiniteError`` if K_uu cannot be factorised
    or if the kernel overflows at extreme psi (non-finite K_uu or W); the
    sampler's target is -inf there.  With a ``workspace`` (and a kernel with
    ``cross_covariance_into``) K_uf and W are built in its buffers, in place:
    the same numbers; the caller must not keep them beyond its evaluation.
    (A lengthscale exp(psi) that underflows to 0 divides by zero in a stationary kernel: silenced
    here, the non-finite K_uu or W it gives is refused as above.)
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        a = kernel.amplitude(psi)
        K_uu = kernel(psi, Z)
        K_uu[np.diag_indices_from(K_uu)] += jitter * a
        if not np.all(np.isfinite(K_uu)):
            raise linalg.NotPositiveDefiniteError(f"K_uu is not finite at psi = {psi}")
        L = linalg.cholesky(K_uu, name="K_uu")
        if workspace is not None and hasattr(kernel, "cross_covariance_into"):
            K_uf = kernel.cross_covariance_into(psi, Z, X, workspace.K_uf, workspace.scratch)
            np.copyto(workspace.W, K_uf)
            W = _solve_lower_in_place(L, workspace.W, trans=False)
        else:
            K_uf = kernel(psi, Z, X)
            W = linalg.solve_triangular(L, K_uf, lower=True)
        knn = kernel.diag(psi, X)
        var = knn - np.einsum("mn,mn->n", W, W)
    if not np.all(np.isfinite(var)):
        raise linalg.NotPositiveDefiniteError(f"K_uf or W is not finite at psi = {psi}")
    return WhitenedConditional(K_uu, L, K_uf, W, knn, var)


def whitened_conditional_backward(
    kernel, psi, Z, X, cond: WhitenedConditional, W_bar, knn_bar, inputs: bool = False,
    overwrite_W_bar: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(psi_bar, Z_bar) from W_bar (M x N) and knn_bar (N,).

    W = L^-1 K_uf:  dW = L^-1 (dK_uf - dL W), so K_uf_bar = L^-T W_bar and
    L_bar = -K_uf_bar W^T (poster, "Cholesky backpropagation":
    dE/dtheta = dE/dL dL/dK dK/dtheta), then K_uu_bar by
    ``cholesky_backward``.  diag K_ff by the kernel's ``diag_vjp``, every
    parameter's entry summed (for ``SPARSE_KERNELS`` only the amplitude's is
    non-zero: k_nn = a (1 + nugget)).
    ``overwrite_W_bar``: a Fortran-ordered W_bar may be overwritten by
    K_uf_bar (the same LAPACK dtrtrs solve without the M x N copy) and then,
    for ``SquaredExponential``, by the kernel's VJP product K_uf_bar * K_uf.
    """
    in_place = overwrite_W_bar and W_bar.flags.f_contiguous and W_bar.dtype == np.float64
    if in_place:
        A = _solve_lower_in_place(cond.L, W_bar, trans=True)
    else:
        A = linalg.solve_triangular(cond.L, W_bar, lower=True, trans=True)  # K_uf_bar
    # L_bar = -A W^T, negated after the M x N x M product instead of negating the M x N A
    # before it: (-A) W^T = -(A W^T) to the bit (rounding is symmetric), without an M x N pass
    L_bar = A @ cond.W.T
    np.negative(L_bar, out=L_bar)
    K_uu_bar = cholesky_backward(cond.L, L_bar)
    g_uu, dZ_uu = kernel.cross_covariance_vjp(psi, Z, Z, cond.K_uu, K_uu_bar, inputs)
    if in_place and isinstance(kernel, SquaredExponential):
        # A (K_uf_bar) is not needed after this: the kernel's B = A * K_uf is formed in its memory
        g_uf, dZ_uf = kernel.cross_covariance_vjp(psi, Z, X, cond.K_uf, A, inputs, overwrite_K_bar=True)
    else:
        g_uf, dZ_uf = kernel.cross_covariance_vjp(psi, Z, X, cond.K_uf, A, inputs)
    g = g_uu + g_uf
    g += np.asarray(kernel.diag_vjp(psi, cond.knn, knn_bar), dtype=np.float64)
    # K_uu depends on Z through both arguments; K_uu_bar is symmetric
    dZ = 2.0 * dZ_uu + dZ_uf if inputs else None
    return g, dZ


# ---------------------------------------------------------------------------
# SVGP
# ---------------------------------------------------------------------------
class SVGPParams(NamedTuple):
    """q(v_c) = N(m[:, c], R[c] R[c]^T), inducing inputs Z, log-hyperparameters psi."""

    m: np.ndarray  # (M, C)
    R: np.ndarray  # (C, M, M), lower triangular
    Z: np.ndarray  # (M, d)
    psi: np.ndarray  # (n_params,)


@dataclasses.dataclass(frozen=True)
class SVGPModel:
    """Data, kernel and likelihood of an SVGP; ``prior`` (on psi) is optional.

    ``sample_noise``: the likelihood is a ``gpbayes.likelihoods.Gaussian`` whose noise variance sigma^2
    is a hyperparameter, psi's last coordinate log sigma^2 (its ``noise_variance`` is not read), and the
    expectation is (G1) in closed form (module docstring).
    """

    X: np.ndarray
    y: np.ndarray
    kernel: object
    likelihood: object
    prior: object | None = None
    n_quad: int = 20
    jitter: float = 1e-6
    sample_noise: bool = False

    def __post_init__(self):
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", self.likelihood.check_targets(self.y))
        if self.y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {self.y.shape[0]} targets")
        if self.sample_noise:
            _check_noise_likelihood(self.likelihood)

    @property
    def n_params(self) -> int:
        """The length of psi: the kernel's log-parameters, then log sigma^2 with ``sample_noise``."""
        return self.kernel.n_params + int(self.sample_noise)

    def split_psi(self, psi):
        """(kernel log-parameters, log sigma^2 or None) of psi (``split_psi`` of the module)."""
        return split_psi(self.kernel, psi, self.sample_noise)

    @property
    def n_latent(self) -> int:
        """Number of latent functions (1, or K for the robust-max multiclass likelihood)."""
        return int(getattr(self.likelihood, "n_latent", 1))


def _check_noise_likelihood(likelihood) -> None:
    from ..likelihoods import Gaussian

    if not isinstance(likelihood, Gaussian):
        raise ValueError(f"sample_noise needs a gpbayes.likelihoods.Gaussian likelihood (its noise variance is the "
                         f"sampled hyperparameter), got {type(likelihood).__name__}")


def split_psi(kernel, psi, sample_noise: bool):
    """(the kernel's log-parameters, log sigma^2) of psi = (kernel log-parameters, log sigma^2) with
    ``sample_noise`` (module docstring, (G1)); (psi itself, None) without."""
    if not sample_noise:
        return psi, None
    psi = np.asarray(psi, dtype=np.float64)
    k = kernel.n_params
    if psi.shape[-1] != k + 1:
        raise ValueError(f"psi must hold the kernel's {k} log-parameters {list(kernel.param_names)} and the log "
                         f"noise variance, got shape {psi.shape}")
    return psi[..., :k], psi[..., k]


def _kl_and_grad(m, R):
    """KL(N(m, R R^T) || N(0, I)) summed over latent functions (C3), and grads."""
    M, C = m.shape
    diag = np.einsum("cii->ci", R)
    kl = 0.5 * (np.sum(R * R) + np.sum(m * m) - M * C - 2.0 * np.sum(np.log(np.abs(diag))))
    dR = R.copy()
    idx = np.arange(M)
    dR[:, idx, idx] -= 1.0 / diag
    return kl, m.copy(), dR


def elbo_and_grad(model: SVGPModel, params: SVGPParams, inputs: bool = True):
    """ELBO (C3) and its gradient as an ``SVGPParams`` of the same shapes.

    Reverse mode, with g_mu = dE/dmu, g_v = dE/dvar (N, C) from the quadrature:
      m_bar   = W g_mu - m
      R_bar_c = tril(2 (W diag(g_v_c)) T_c^T) - (R_c - diag(1/R_c,ii)),  T_c = R_c^T W
      W_bar   = m g_mu^T - 2 W diag(sum_c g_v_c) + 2 sum_c R_c (T_c diag(g_v_c))
      knn_bar = sum_c g_v_c
    and (psi_bar, Z_bar) from ``whitened_conditional_backward``.
    """
    m, R, Z, psi = params
    m = np.asarray(m, dtype=np.float64)
    R = np.tril(np.asarray(R, dtype=np.float64))
    Z = np.asarray(Z, dtype=np.float64)
    kpsi, log_noise = model.split_psi(psi)  # (kernel psi, None) unless sample_noise
    cond = whitened_conditional(model.kernel, kpsi, Z, model.X, model.jitter)
    W = cond.W
    # (C2): marginals of q(f_n)
    T = np.einsum("cmk,mn->ckn", R, W)  # R_c^T W
    mu = W.T @ m
    var = cond.var[:, None] + np.einsum("ckn,ckn->nc", T, T)
    # (Q1) by quadrature, or (G1) in closed form with the sampled noise
    E, g_mu, g_v, g_log_noise = likelihood_terms(model.likelihood, model.y, mu, var, model.n_quad, log_noise)
    kl, dkl_m, dkl_R = _kl_and_grad(m, R)
    value = float(np.sum(E)) - kl
    # reverse mode
    m_bar = W @ g_mu - dkl_m
    WG = W[None, :, :] * g_v.T[:, None, :]  # (C, M, N): W diag(g_v_c)
    R_bar = np.tril(2.0 * np.einsum("cmn,ckn->cmk", WG, T)) - np.tril(dkl_R)
    g_sum = g_v.sum(axis=1)
    W_bar = m @ g_mu.T - 2.0 * W * g_sum[None, :]
    W_bar += 2.0 * np.einsum("cmk,ckn->mn", R, T * g_v.T[:, None, :])
    psi_bar, Z_bar = whitened_conditional_backward(
        model.kernel, kpsi, Z, model.X, cond, W_bar, g_sum, inputs
    )
    if g_log_noise is not None:
        psi_bar = np.append(psi_bar, np.sum(g_log_noise))
    if model.prior is not None:
        value += float(model.prior.log_density(psi))
        psi_bar = psi_bar + model.prior.grad_log_density(psi)
    if Z_bar is None:
        Z_bar = np.zeros_like(Z)
    return value, SVGPParams(m_bar, R_bar, Z_bar, psi_bar)


def elbo(model: SVGPModel, params: SVGPParams) -> float:
    """The evidence lower bound of the whitened SVGP (Hensman et al. 2015) at ``params``."""
    return elbo_and_grad(model, params, inputs=False)[0]


def optimal_gaussian_q(model: SVGPModel, Z, psi) -> tuple[np.ndarray, np.ndarray]:
    """Optimal (m, R) for a Gaussian likelihood (Titsias 2009), whitened.

    y = W^T v + noise, v ~ N(0, I):  S = (I + W W^T / s2)^-1,
    m = S W y / s2.  Used by the tests (with Z = X the ELBO then equals the
    exact log marginal likelihood) and as a starting point.  With ``model.sample_noise``
    s2 = exp(psi's last coordinate), else the likelihood's ``noise_variance``.
    """
    kpsi, log_noise = model.split_psi(psi)
    s2 = float(model.likelihood.noise_variance) if log_noise is None else float(np.exp(log_noise))
    cond = whitened_conditional(model.kernel, kpsi, np.asarray(Z, float), model.X, model.jitter)
    M = cond.W.shape[0]
    P = np.eye(M) + cond.W @ cond.W.T / s2
    Lp = linalg.cholesky(P, name="I + W W^T / s2")
    m = linalg.cho_solve(Lp, cond.W @ model.y / s2)
    # S = P^-1 = Lp^-T Lp^-1: lower Cholesky factor of S from the reversed factor
    S = linalg.cho_inverse(Lp)
    R = linalg.cholesky(S, name="S")
    return m[:, None], R[None, :, :]


# ---------------------------------------------------------------------------
# fitting by L-BFGS
# ---------------------------------------------------------------------------
class SVGPFit(NamedTuple):
    """The result of fitting the Gaussian (SVGP) approximation: its parameters, the ELBO, and the
    optimiser's outcome.
    """

    params: SVGPParams
    elbo: float
    success: bool
    n_iter: int
    message: str


def _pack(params: SVGPParams, fit_Z: bool, fit_psi: bool) -> np.ndarray:
    M = params.m.shape[0]
    il = np.tril_indices(M)
    parts = [params.m.ravel(), params.R[:, il[0], il[1]].ravel()]
    if fit_Z:
        parts.append(params.Z.ravel())
    if fit_psi:
        parts.append(params.psi)
    return np.concatenate(parts)


def _unpack(x: np.ndarray, template: SVGPParams, fit_Z: bool, fit_psi: bool) -> SVGPParams:
    M, C = template.m.shape
    il = np.tril_indices(M)
    k = 0
    m = x[k : k + M * C].reshape(M, C)
    k += M * C
    n_tri = il[0].size
    R = np.zeros((C, M, M))
    R[:, il[0], il[1]] = x[k : k + C * n_tri].reshape(C, n_tri)
    k += C * n_tri
    Z = template.Z
    if fit_Z:
        Z = x[k : k + Z.size].reshape(Z.shape)
        k += Z.size
    psi = template.psi
    if fit_psi:
        psi = x[k : k + psi.size]
    return SVGPParams(m, R, Z, np.asarray(psi, dtype=np.float64))


def initial_inducing_inputs(rng: np.random.Generator, X: np.ndarray, M: int) -> np.ndarray:
    """M distinct rows of X chosen at random (a common SVGP initialisation)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if M > X.shape[0]:
        raise ValueError(f"M = {M} inducing inputs but only {X.shape[0]} data points")
    return X[np.sort(rng.choice(X.shape[0], M, replace=False))].copy()


def fit(
    model: SVGPModel,
    Z0: np.ndarray,
    psi0: np.ndarray,
    *,
    m0: np.ndarray | None = None,
    R0: np.ndarray | None = None,
    fit_Z: bool = True,
    fit_psi: bool = True,
    maxiter: int = 2000,
    gtol: float = 1e-6,
) -> SVGPFit:
    """Maximise the ELBO over (m, R, [Z], [psi]) with L-BFGS-B.

    Starts from q(v) = N(0, I) (the prior) unless ``m0``/``R0`` are given.
    If K_uu cannot be factorised at a trial point the objective is +inf there
    and the line search backs off.
    """
    Z0 = np.asarray(Z0, dtype=np.float64)
    if Z0.ndim == 1:
        Z0 = Z0[:, None]
    M, C = Z0.shape[0], model.n_latent
    m0 = np.zeros((M, C)) if m0 is None else np.asarray(m0, dtype=np.float64).reshape(M, C)
    R0 = np.tile(np.eye(M), (C, 1, 1)) if R0 is None else np.asarray(R0, dtype=np.float64).reshape(C, M, M)
    template = SVGPParams(m0, R0, Z0, np.asarray(psi0, dtype=np.float64))

    def objective(x):
        p = _unpack(x, template, fit_Z, fit_psi)
        try:
            value, grad = elbo_and_grad(model, p, inputs=fit_Z)
        except linalg.NotPositiveDefiniteError:
            return np.inf, np.zeros_like(x)
        if not np.isfinite(value):
            return np.inf, np.zeros_like(x)
        return -value, -_pack(grad, fit_Z, fit_psi)

    res = optimize.minimize(
        objective, _pack(template, fit_Z, fit_psi), jac=True, method="L-BFGS-B",
        options={"maxiter": int(maxiter), "gtol": gtol},
    )
    params = _unpack(res.x, template, fit_Z, fit_psi)
    return SVGPFit(params, float(-res.fun), bool(res.success), int(res.nit), str(res.message))


def predict_latent(kernel, psi, Z, v, Xstar, jitter: float = 1e-6):
    """Mean (N*, C) and variance (N*,) of p(f* | u = L v, theta)  (C1 at X*).

    For SVGP's q(f*) add sum_k (R_c^T W*)_k^2 to the variance (C2).
    """
    Xstar = np.asarray(Xstar, dtype=np.float64)
    if Xstar.ndim == 1:
        Xstar = Xstar[:, None]
    cond = whitened_conditional(kernel, psi, np.asarray(Z, float), Xstar, jitter)
    v = np.asarray(v, dtype=np.float64)
    v = v[:, None] if v.ndim == 1 else v
    return cond.W.T @ v, np.maximum(cond.var, 0.0)
