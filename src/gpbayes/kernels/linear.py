"""The linear (dot-product) kernel: k = sum_d v_d x_d x'_d, or v x . x' with one variance.

R&W 2006 Sec. 4.2.2 (dot-product covariance functions; x^T Sigma_p x' with Sigma_p = diag(v) is the
Bayesian linear regression of their Sec. 2.1.2 without a bias).  Not stationary: K has rank at most
d, so alone it needs a noise term (regression) or a ``nugget`` (a latent GP); in a sum with a
stationary kernel it adds a linear trend.  psi = log v (one, or one per dimension with ``ard``):

    dK/dlog v_d = v_d x_d x'_d,     dK(X1, X2)/dX1_md = v_d X2_nd.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import Leaf, _normalise_dims

__all__ = ["Linear"]


@dataclasses.dataclass(frozen=True)
class Linear(Leaf):
    """The linear kernel (module docstring).

    Parameters
    ----------
    input_dim, ard, active_dims : as for :class:`~gpbayes.kernels.Matern52` (ARD: one variance per
        dimension, ``variance_<column>``).
    nugget : eps: K(X, X) gets eps a on its diagonal, a = ``amplitude`` = sum_d v_d (d v with one
        variance), the prior variance at a point with unit entries.

    Starts at v_d = a / (d mean(x_d^2)) (mean diagonal a).  Default prior (ours): every variance ~
    Gamma(1.1, 0.1), F&G's amplitude prior.
    """

    input_dim: int | None = None
    ard: bool = False
    active_dims: tuple | None = None
    nugget: float = 0.0

    name = "linear"

    def __post_init__(self):
        _normalise_dims(self, self.input_dim, self.active_dims)
        if not (np.isfinite(self.nugget) and self.nugget >= 0):
            raise ValueError(f"Linear: nugget must be a finite number >= 0, got {self.nugget}")

    @property
    def n_params(self) -> int:
        """One variance, or one per dimension with ARD."""
        return self.input_dim if self.ard else 1

    @property
    def param_names(self) -> list[str]:
        """``variance`` or ``variance_<column>``."""
        return [f"variance_{self._index(i)}" for i in range(self.input_dim)] if self.ard else ["variance"]

    def _v(self, psi) -> np.ndarray:
        v = np.exp(psi)
        return v if self.ard else np.full(self.input_dim, v[0])

    def amplitude(self, psi) -> float:
        """a = sum_d v_d."""
        return float(np.sum(self._v(self._check_psi(psi))))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """v_d = a / (d mean(x_d^2)) (each mean floored at 1e-12): the mean prior variance at X is a."""
        A = self._x(X)
        m2 = np.maximum(np.mean(A * A, axis=0), 1e-12)
        if self.ard:
            return np.log(amplitude / (self.input_dim * m2))
        return np.array([math.log(amplitude / float(np.sum(m2)))])

    def default_priors(self) -> tuple:
        """Gamma(1.1, 0.1) on every variance."""
        from .. import priors

        return (priors.FG_AMPLITUDE_PRIOR,) * self.n_params

    def _cov(self, psi, A, B):
        if A is B:  # K(X, X): S S^T with S = X diag(v)^1/2, exactly symmetric (one syrk)
            S = A * np.sqrt(self._v(psi))
            return S @ S.T
        return (A * self._v(psi)) @ B.T

    def _cov_grads(self, psi, A, B, K):
        if not self.ard:
            return [np.asarray(K, dtype=np.float64)]
        v = self._v(psi)
        return [v[j] * np.multiply.outer(A[:, j], B[:, j]) for j in range(self.input_dim)]

    def _input_grads(self, psi, A, B, K):
        v = self._v(psi)
        return [np.broadcast_to(v[j] * B[:, j], (A.shape[0], B.shape[0])) for j in range(self.input_dim)]

    def _diag(self, psi, A):
        v = self._v(psi)
        return (A * A) @ v + self.nugget * float(np.sum(v))

    def _diag_grads(self, psi, A):
        v = self._v(psi)
        if not self.ard:
            return [self._diag(psi, A)]
        return [v[j] * (A[:, j] ** 2 + self.nugget) for j in range(self.input_dim)]
