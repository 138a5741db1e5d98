"""Stationary kernels that are functions of the scaled distance r: Matérn-1/2, 3/2, 5/2 and rational quadratic.

Each is k(x, x') = sigma^2 g(r) with r^2 = sum_d (x_d - x'_d)^2 / l_d^2 (one lengthscale l shared, or
one per input dimension with ``ard``), written with psi = (log l_1..d or log l, [log alpha], log sigma^2)
in that order.  With h(r) = -g'(r) / r (finite at r = 0 except for Matérn-1/2, where every term it
multiplies is zero there) every derivative is elementwise:

    dK/dlog l_d = sigma^2 h(r) (x_d - x'_d)^2 / l_d^2,     dK/dx_d = -sigma^2 h(r) (x_d - x'_d) / l_d^2,
    dK/dlog sigma^2 = K.

``nugget`` adds eps sigma^2 to the diagonal of K(X, X) (as ``SquaredExponential``'s does); the
diagonal of every other derivative is zero.  Default priors (``default_priors``, used by the models
when no prior is given): every lengthscale ~ Gamma(1, 1/sqrt(d)) and sigma^2 ~ Gamma(1.1, 0.1), F&G
2014 Sec. 4.4's priors on the SE kernel's tau and sigma (d = ``input_dim``); RQ's alpha ~ LogNormal(0, 1).
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np
from scipy.spatial.distance import cdist

from .base import Leaf, median_distance

__all__ = ["Stationary", "Matern12", "Matern32", "Matern52", "RationalQuadratic"]

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@dataclasses.dataclass(frozen=True)
class Stationary(Leaf):
    """Shared code of the kernels sigma^2 g(r) (module docstring); a subclass defines ``_g_h(r, extra)``.

    Parameters
    ----------
    input_dim : number of input dimensions d the kernel acts on (default ``len(active_dims)``).
    ard : one lengthscale per dimension (True) or one shared (False).
    active_dims : the columns of X the kernel acts on (default all; X must then have ``input_dim``
        columns).  ARD lengthscales are named after these columns (``lengthscale_2``).
    nugget : relative diagonal term eps: K(X, X) = sigma^2 (g(R) + eps I); cross-covariances never
        include it.  Use e.g. 1e-6 for a latent GP (classification) at long lengthscales.
    """

    input_dim: int | None = None
    ard: bool = False
    active_dims: tuple | None = None
    nugget: float = 0.0

    #: names of the shape parameters between the lengthscales and the variance (RQ's alpha)
    extra_names: ClassVar[tuple] = ()

    def __post_init__(self):
        self._check_dims_and_nugget()

    # ------------------------------------------------------------------ shape

    @property
    def n_params(self) -> int:
        """Lengthscales, shape parameters, variance."""
        return self.n_scale + len(self.extra_names) + 1

    @property
    def param_names(self) -> list[str]:
        """``lengthscale`` (``lengthscale_<column>`` with ARD), the shape parameters, ``variance``."""
        scales = self._per_input_names("lengthscale")
        return scales + list(self.extra_names) + ["variance"]

    def _parts(self, psi):
        ell = np.exp(psi[: self.n_scale])
        if not self.ard:
            ell = np.full(self.input_dim, ell[0])
        extra = np.exp(psi[self.n_scale: self.n_scale + len(self.extra_names)])
        return ell, extra, float(np.exp(psi[-1]))

    def amplitude(self, psi) -> float:
        """sigma^2."""
        return float(np.exp(self._check_psi(psi)[-1]))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """Every lengthscale at the median pairwise distance of X's active columns, the shape parameters at
        ``initial_extra``, sigma^2 = amplitude."""
        med = median_distance(self._x(X))
        return np.concatenate([np.full(self.n_scale, math.log(med)), self.initial_extra(), [math.log(amplitude)]])

    def initial_extra(self) -> np.ndarray:
        """Log shape parameters to start from (none here)."""
        return np.zeros(len(self.extra_names))

    def default_priors(self) -> tuple:
        """Gamma(1, 1/sqrt(d)) per lengthscale, ``extra_priors``, Gamma(1.1, 0.1) on sigma^2 (module docstring)."""
        from .. import priors

        return ((priors.fg_scale_prior(self.input_dim),) * self.n_scale + self.extra_priors()
                + (priors.FG_AMPLITUDE_PRIOR,))

    def extra_priors(self) -> tuple:
        """Default priors of the shape parameters (none here)."""
        return ()

    # ------------------------------------------------------------------ hooks
    def _g_h(self, r, extra):  # pragma: no cover - every subclass defines it
        """(g(r), h(r) = -g'(r)/r) elementwise, unit variance."""
        raise NotImplementedError

    def _extra_grads(self, r, g, extra) -> list:
        """[dg/dlog extra_j] elementwise (none here)."""
        return []

    def _scaled(self, psi, A, B):
        ell, extra, a = self._parts(psi)
        SA, SB = A / ell, B / ell
        r = cdist(SA, SB)  # exact differences (no |a|^2 + |b|^2 - 2 a.b cancellation near r = 0)
        return ell, extra, a, SA, SB, r

    def _cov(self, psi, A, B):
        _, extra, a, _, _, r = self._scaled(psi, A, B)
        return a * self._g_h(r, extra)[0]

    def _cov_grads(self, psi, A, B, K):
        ell, extra, a, SA, SB, r = self._scaled(psi, A, B)
        g, h = self._g_h(r, extra)
        H = a * h
        if self.ard:
            out = [H * np.subtract.outer(SA[:, j], SB[:, j]) ** 2 for j in range(self.input_dim)]
        else:
            out = [H * r * r]
        out += [a * G for G in self._extra_grads(r, g, extra)]
        out.append(np.asarray(K, dtype=np.float64))
        return out

    def gradient_traces(self, psi, X, W: np.ndarray, K: np.ndarray, overwrite_W: bool = False) -> np.ndarray:
        """tr(W dK(X, X)/dpsi_i) for each i without forming the n x n derivative matrices (W symmetric).

        With M = W o sigma^2 h(R), zero on the diagonal (every dK/dlog l_d is zero there), and S = X / l
        (centred: the differences do not change), the ARD lengthscale terms are
        sum_ik M_ik (s_id - s_kd)^2 = 2 sum_i s_id^2 (M 1)_i - 2 s_d^T M s_d  -- one product M S for all d;
        the shared lengthscale's is sum(M o R^2); a shape parameter's is sum(W o sigma^2 dg/dlog alpha); the
        variance's is sigma^2 (sum(W o g(R)) + eps tr W), since dK/dlog sigma^2 = K with its diagonal
        sigma^2 (1 + eps).  ``K`` is not read (its off-diagonal may hold K + D or a mean's term: the kernel's
        own values are recomputed from R); ``W`` is used as M's memory with ``overwrite_W``.  The same
        numbers as the protocol's fallback (``traces_from_gradients``) to rounding.
        """
        psi = self._check_psi(psi)
        A = self._x(X)
        n = A.shape[0]
        if W.shape != (n, n) or np.shape(K) != (n, n):
            raise ValueError(f"W and K: expected shape {(n, n)}, got {W.shape} and {np.shape(K)}")
        ell, extra, a = self._parts(psi)
        S = A / ell
        S = S - S.mean(axis=0)  # r is translation invariant; centring keeps the expanded sum accurate
        r = cdist(S, S)
        g, h = self._g_h(r, extra)
        out = np.empty(self.n_params)
        # the variance first: it reads W before W may be overwritten
        out[-1] = a * (float(np.einsum("ij,ij->", W, g)) + self.nugget * float(np.trace(W)))
        for i, G in enumerate(self._extra_grads(r, g, extra)):
            out[self.n_scale + i] = a * float(np.einsum("ij,ij->", W, G))
        M = np.multiply(W, h, out=W if overwrite_W else None)
        M *= a
        M[np.diag_indices(n)] = 0.0
        if self.ard:
            m = M.sum(axis=1)
            out[: self.n_scale] = 2.0 * ((S * S).T @ m) - 2.0 * np.einsum("id,id->d", S, M @ S)
        else:
            out[0] = float(np.einsum("ij,ij->", M, r * r))
        return out

    def _input_grads(self, psi, A, B, K):
        ell, extra, a, SA, SB, r = self._scaled(psi, A, B)
        H = a * self._g_h(r, extra)[1]
        return [-H * np.subtract.outer(SA[:, j], SB[:, j]) / ell[j] for j in range(self.input_dim)]

    def _diag(self, psi, A):
        return np.full(A.shape[0], float(np.exp(psi[-1])) * (1.0 + self.nugget))

    def _diag_grads(self, psi, A):
        n = A.shape[0]
        return [np.zeros(n)] * (self.n_params - 1) + [self._diag(psi, A)]

    def _diag_vjp_from_values(self, psi, diag, diag_bar):
        g = np.zeros(self.n_params)
        g[-1] = float(np.sum(diag_bar * diag))  # diag = sigma^2 (1 + eps): d/dlog sigma^2 = diag
        return g


class Matern12(Stationary):
    """Matérn nu = 1/2 (the exponential kernel): k = sigma^2 exp(-r).

    R&W 2006 eq. 4.14 at nu = 1/2 (their Sec. 4.2.1: "k(r) = exp(-r/l)", the Ornstein-Uhlenbeck
    process in one dimension).  h(r) = exp(-r) / r, set to 0 at r = 0 (where it multiplies zeros).
    Not differentiable in x at x = x'.  Parameters and default priors: :class:`Stationary`.
    """

    name = "matern12"

    def _g_h(self, r, extra):
        g = np.exp(-r)
        h = np.divide(g, r, out=np.zeros_like(r), where=r > 0)
        return g, h


class Matern32(Stationary):
    """Matérn nu = 3/2: k = sigma^2 (1 + sqrt(3) r) exp(-sqrt(3) r)  (R&W 2006 eqs. 4.14, 4.17).

    h(r) = 3 exp(-sqrt(3) r).  Parameters and default priors: :class:`Stationary`.
    """

    name = "matern32"

    def _g_h(self, r, extra):
        e = np.exp(-_SQRT3 * r)
        return (1.0 + _SQRT3 * r) * e, 3.0 * e


class Matern52(Stationary):
    """Matérn nu = 5/2: k = sigma^2 (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)  (R&W 2006 eqs. 4.14, 4.17).

    h(r) = 5/3 (1 + sqrt(5) r) exp(-sqrt(5) r).  Parameters and default priors: :class:`Stationary`.
    """

    name = "matern52"

    def _g_h(self, r, extra):
        e = np.exp(-_SQRT5 * r)
        return (1.0 + _SQRT5 * r + (5.0 / 3.0) * r * r) * e, (5.0 / 3.0) * (1.0 + _SQRT5 * r) * e


class RationalQuadratic(Stationary):
    """Rational quadratic: k = sigma^2 (1 + r^2 / (2 alpha))^-alpha  (R&W 2006 eq. 4.19).

    psi = (log l.., log alpha, log sigma^2).  With u = r^2 / (2 alpha): h(r) = (1 + u)^(-alpha - 1) and
    dk/dlog alpha = k alpha (u / (1 + u) - log(1 + u)).  alpha -> infinity is the SE kernel.  Default
    priors: :class:`Stationary`'s, and alpha ~ LogNormal(0, 1) (median 1; ours); alpha starts at 1.
    """

    extra_names: ClassVar[tuple] = ("alpha",)

    name = "rq"

    def _g_h(self, r, extra):
        alpha = extra[0]
        base = 1.0 + r * r / (2.0 * alpha)
        g = base ** (-alpha)
        return g, g / base

    def _extra_grads(self, r, g, extra):
        alpha = extra[0]
        u = r * r / (2.0 * alpha)
        return [g * alpha * (u / (1.0 + u) - np.log1p(u))]

    def extra_priors(self) -> tuple:
        """alpha ~ LogNormal(0, 1)."""
        from .. import priors

        return (priors.LogNormal(0.0, 1.0),)
