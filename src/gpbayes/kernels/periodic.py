"""The periodic kernel of MacKay (1998): k = sigma^2 exp(-2 sum_d sin^2(pi (x_d - x'_d) / p) / l_d^2).

R&W 2006 eq. 4.31 is the one-dimensional form exp(-2 sin^2((x - x') / 2) / l^2), i.e. period p = 2 pi;
in several dimensions this is the product of one such kernel per dimension (a product of kernels is
a kernel), with one period p shared and one lengthscale l shared or per dimension (``ard``) -- the
form of GPflow's ``Periodic(SquaredExponential())``.  psi = (log l_1..d or log l, log p, log sigma^2).
With u_d = pi (x_d - x'_d) / p and K = k(x, x'):

    dK/dlog l_d     = K 4 sin^2(u_d) / l_d^2,
    dK/dlog p       = K 2 sum_d u_d sin(2 u_d) / l_d^2,
    dK/dx_d         = -K (2 pi / (p l_d^2)) sin(2 u_d),
    dK/dlog sigma^2 = K.

K is formed with sin(u_d) = sin v_d cos v'_d - cos v_d sin v'_d, v = pi x / p (x centred), so an n x m
matrix costs 2 (n + m) sines and cosines and one exp per entry; ``gradient_traces`` forms tr(W dK/dpsi_i)
from the same difference formulas without the n x n derivative matrices (R&W eq. 5.9's traces for GP
regression; the Laplace, EP and whitened gradients call it too).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import Leaf, median_distance

__all__ = ["Periodic"]


@dataclasses.dataclass(frozen=True)
class Periodic(Leaf):
    """MacKay's periodic kernel (module docstring; R&W 2006 eq. 4.31 with period p).

    Starts at l = 1 and p = the median pairwise distance of X's active columns.  Default priors
    (ours): every lengthscale ~ Gamma(1, 1/sqrt(d)) (F&G's on tau), the period ~ LogNormal(0, 1)
    -- median 1, i.e. one standard deviation of a standardised input; give your own prior when the
    period is known roughly -- and sigma^2 ~ Gamma(1.1, 0.1).

    Parameters
    ----------
    input_dim, ard, active_dims, nugget : as for :class:`~gpbayes.kernels.Matern52`.
    """

    input_dim: int | None = None
    ard: bool = False
    active_dims: tuple | None = None
    nugget: float = 0.0

    name = "periodic"

    def __post_init__(self):
        self._check_dims_and_nugget()

    @property
    def n_params(self) -> int:
        """Lengthscales, the period, the variance."""
        return self.n_scale + 2

    @property
    def param_names(self) -> list[str]:
        """``lengthscale`` (``lengthscale_<column>`` with ARD), ``period``, ``variance``."""
        scales = self._per_input_names("lengthscale")
        return scales + ["period", "variance"]

    def amplitude(self, psi) -> float:
        """sigma^2."""
        return float(np.exp(self._check_psi(psi)[-1]))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """l = 1, p = the median pairwise distance of X's active columns, sigma^2 = amplitude."""
        med = median_distance(self._x(X))
        return np.concatenate([np.zeros(self.n_scale), [math.log(med), math.log(amplitude)]])

    def default_priors(self) -> tuple:
        """Gamma(1, 1/sqrt(d)) per lengthscale, LogNormal(0, 1) on the period, Gamma(1.1, 0.1) on sigma^2."""
        from .. import priors

        return ((priors.fg_scale_prior(self.input_dim),) * self.n_scale
                + (priors.LogNormal(0.0, 1.0), priors.FG_AMPLITUDE_PRIOR))

    def _parts(self, psi):
        ell = np.exp(psi[: self.n_scale])
        if not self.ard:
            ell = np.full(self.input_dim, ell[0])
        return ell, float(np.exp(psi[-2])), float(np.exp(psi[-1]))

    def _angles(self, psi, A, B):
        ell, p, a = self._parts(psi)
        U = [(math.pi / p) * np.subtract.outer(A[:, j], B[:, j]) for j in range(self.input_dim)]
        return ell, p, a, U

    def _cov(self, psi, A, B):
        # sin(u_d) = sin v_d cos v'_d - cos v_d sin v'_d with v = pi x / p (the inputs centred on A's mean:
        # the kernel is translation invariant): 2 (n + m) sines and cosines, not n m
        ell, p, a = self._parts(psi)
        centre = A.mean(axis=0)
        VA, VB = (math.pi / p) * (A - centre), (math.pi / p) * (B - centre)
        sA, cA, sB, cB = np.sin(VA), np.cos(VA), np.sin(VB), np.cos(VB)
        E = np.zeros((A.shape[0], B.shape[0]))
        for j in range(self.input_dim):
            S = sA[:, j, None] * cB[None, :, j]
            S -= cA[:, j, None] * sB[None, :, j]
            S *= S
            S *= -2.0 / ell[j] ** 2
            E += S
        np.exp(E, out=E)
        E *= a
        return E

    def _cov_grads(self, psi, A, B, K):
        ell, p, a, U = self._angles(psi, A, B)
        K = np.asarray(K, dtype=np.float64)
        scale = [4.0 * K * np.sin(u) ** 2 / ell[j] ** 2 for j, u in enumerate(U)]
        out = scale if self.ard else [sum(scale)]
        out.append(2.0 * K * sum(u * np.sin(2.0 * u) / ell[j] ** 2 for j, u in enumerate(U)))
        out.append(K)
        return out

    def gradient_traces(self, psi, X, W: np.ndarray, K: np.ndarray, overwrite_W: bool = False) -> np.ndarray:
        """tr(W dK(X, X)/dpsi_i) for each i (R&W eq. 5.9's traces) without the n x n derivative matrices.

        W is symmetric.  With B = W o K, zero on the diagonal (there u_d = 0, so every derivative but the
        variance's is zero), and the module docstring's derivatives:

            tr(W dK/dlog l_d)     = (4 / l_d^2) sum(B o sin^2(U_d)),
            tr(W dK/dlog p)       = sum_d (2 / l_d^2) sum(B o U_d o sin(2 U_d)),
            tr(W dK/dlog sigma^2) = sum(B) + sigma^2 (1 + eps) tr W

        (dK/dlog sigma^2 = K, whose diagonal is sigma^2 (1 + eps)).  With v_i = pi x_id / p (x centred:
        the kernel is translation invariant), s = sin v, c = cos v, the difference formulas make each
        matrix of low rank: sin(U_d) = s c^T - c s^T, so sin^2(U_d) = s^2 (c^2)^T + c^2 (s^2)^T - 2 (s c)
        (s c)^T; U_d = v 1^T - 1 v^T and sin(2 U_d) = s_2 c_2^T - c_2 s_2^T (s_2 = sin 2v, c_2 = cos 2v).
        For B symmetric, then,

            sum(B o sin^2(U_d))        = 2 (s^2)^T B c^2 - 2 (s c)^T B (s c),
            sum(B o U_d o sin(2 U_d)) = 2 (v s_2)^T B c_2 - 2 (v c_2)^T B s_2,

        all from one product B [c^2, s c, c_2, s_2] (n x 4d): O(n^2 d) in one pass over B after the
        elementwise product, with 4n sines and cosines where ``gradients`` takes n_params n x n matrices
        (n^2 sines each) and the caller a pass over each.  Only the off-diagonal entries of ``K`` are
        read, so K + D may be passed; with ``overwrite_W`` B is formed in W's memory.  The same numbers as
        the protocol's fallback (``traces_from_gradients``) up to rounding (tests/test_kernels_library.py
        bounds the difference).
        """
        psi = self._check_psi(psi)
        A = self._x(X)
        n, d = A.shape
        if W.shape != (n, n) or np.shape(K) != (n, n):
            raise ValueError(f"W and K: expected shape {(n, n)}, got {W.shape} and {np.shape(K)}")
        ell, p, a = self._parts(psi)
        out = np.empty(self.n_params)
        tr_W = float(np.trace(W))  # read before W may be overwritten
        B = np.multiply(W, K, out=W if overwrite_W and W.dtype == np.float64 else None)
        B[np.diag_indices(n)] = 0.0
        out[-1] = float(B.sum()) + a * (1.0 + self.nugget) * tr_W
        V = (math.pi / p) * (A - A.mean(axis=0))
        s, c = np.sin(V), np.cos(V)
        s2, c2 = np.sin(2.0 * V), np.cos(2.0 * V)
        Q = np.concatenate([c * c, s * c, c2, s2], axis=1)  # (n, 4d)
        BQ = B @ Q
        sin2 = 2.0 * np.einsum("nd,nd->d", s * s, BQ[:, :d]) - 2.0 * np.einsum("nd,nd->d", s * c, BQ[:, d:2 * d])
        usin = (2.0 * np.einsum("nd,nd->d", V * s2, BQ[:, 2 * d:3 * d])
                - 2.0 * np.einsum("nd,nd->d", V * c2, BQ[:, 3 * d:]))
        scale = 4.0 / ell ** 2 * sin2
        out[: self.n_scale] = scale if self.ard else scale.sum()
        out[-2] = float(np.sum(2.0 / ell ** 2 * usin))
        return out

    def _input_grads(self, psi, A, B, K):
        ell, p, a, U = self._angles(psi, A, B)
        K = np.asarray(K, dtype=np.float64)
        return [-K * (2.0 * math.pi / (p * ell[j] ** 2)) * np.sin(2.0 * u) for j, u in enumerate(U)]

    def _diag(self, psi, A):
        return np.full(A.shape[0], float(np.exp(psi[-1])) * (1.0 + self.nugget))

    def _diag_grads(self, psi, A):
        n = A.shape[0]
        return [np.zeros(n)] * (self.n_params - 1) + [self._diag(psi, A)]

    def _diag_vjp_from_values(self, psi, diag, diag_bar):
        g = np.zeros(self.n_params)
        g[-1] = float(np.sum(diag_bar * diag))
        return g
