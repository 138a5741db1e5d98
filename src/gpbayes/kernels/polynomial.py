"""The polynomial kernel: k(x, x') = (sum_d v_d x_d x'_d + c)^p  (GPflow's ``Polynomial``; R&W 2006 eq. 4.22).

R&W's (x^T Sigma_p x' + sigma_0^2)^p with Sigma_p = diag(v) (one variance v shared, or one per
dimension with ``ard``) and the offset c = sigma_0^2; the degree p is a fixed whole number >= 1 (p = 1
is ``Linear`` + ``Constant``).  Not stationary; K has rank at most C(d + p, p), so alone it needs a
noise term (regression) or a ``nugget``.  psi = (log v_1..d or log v, log c).  With
B = sum_d v_d x_d x'_d + c and K = B^p:

    dK/dlog v_d = p B^(p-1) v_d x_d x'_d,   dK/dlog c = p B^(p-1) c,   dK(X1, X2)/dX1_md = p B^(p-1) v_d X2_nd.

``nugget`` eps adds eps a to the diagonal of K(X, X), a = ``amplitude`` = (sum_d v_d + c)^p, the prior
variance at a point with unit entries (as ``Linear``'s).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import Leaf, _is_integer

__all__ = ["Polynomial"]


@dataclasses.dataclass(frozen=True)
class Polynomial(Leaf):
    """The polynomial kernel (module docstring).

    Parameters
    ----------
    input_dim, ard, active_dims : as for :class:`~gpbayes.kernels.Matern52` (ARD: one variance per
        dimension, ``variance_<column>``).
    degree : p, a whole number >= 1 (default 3, GPflow's); fixed, not sampled.
    nugget : eps: K(X, X) gets eps a on its diagonal (module docstring).

    Starts at c = a^(1/p) / 2 and v_d = a^(1/p) / (2 d mean(x_d^2)) (mean of the sum a^(1/p)).  Default
    priors (ours): every variance and the offset ~ Gamma(1.1, 0.1), F&G's amplitude prior.
    """

    input_dim: int | None = None
    degree: int = 3
    ard: bool = False
    active_dims: tuple | None = None
    nugget: float = 0.0

    name = "polynomial"

    def __post_init__(self):
        self._check_dims_and_nugget()
        if not _is_integer(self.degree) or int(self.degree) < 1:
            raise ValueError(f"Polynomial: degree must be a whole number >= 1 (the fixed power p), got "
                             f"{self.degree!r}")
        object.__setattr__(self, "degree", int(self.degree))

    @property
    def n_params(self) -> int:
        """The variances, the offset."""
        return self.n_scale + 1

    @property
    def param_names(self) -> list[str]:
        """``variance`` (``variance_<column>`` with ARD), ``offset``."""
        scales = self._per_input_names("variance")
        return scales + ["offset"]

    def _parts(self, psi):
        v = np.exp(psi[: self.n_scale])
        if not self.ard:
            v = np.full(self.input_dim, v[0])
        return v, float(np.exp(psi[-1]))

    def amplitude(self, psi) -> float:
        """a = (sum_d v_d + c)^p."""
        v, c = self._parts(self._check_psi(psi))
        return float((np.sum(v) + c) ** self.degree)

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """c = a^(1/p) / 2, v_d = a^(1/p) / (2 d mean(x_d^2)) (each mean floored at 1e-12)."""
        A = self._x(X)
        root = amplitude ** (1.0 / self.degree)
        m2 = np.maximum(np.mean(A * A, axis=0), 1e-12)
        v = np.log(root / (2.0 * self.input_dim * m2)) if self.ard else [math.log(root / (2.0 * float(np.sum(m2))))]
        return np.concatenate([v, [math.log(root / 2.0)]])

    def default_priors(self) -> tuple:
        """Gamma(1.1, 0.1) on every variance and on the offset."""
        from .. import priors

        return (priors.FG_AMPLITUDE_PRIOR,) * self.n_params

    def _base(self, psi, A, B):
        v, c = self._parts(psi)
        if A is B:  # S S^T with S = X diag(v)^1/2: exactly symmetric
            S = A * np.sqrt(v)
            return v, c, S @ S.T + c
        return v, c, (A * v) @ B.T + c

    def _cov(self, psi, A, B):
        return self._base(psi, A, B)[2] ** self.degree

    def _cov_grads(self, psi, A, B, K):
        v, c, base = self._base(psi, A, B)
        p = self.degree
        D = p * base ** (p - 1)
        if self.ard:
            out = [D * v[j] * np.multiply.outer(A[:, j], B[:, j]) for j in range(self.input_dim)]
        else:
            out = [D * (base - c)]
        out.append(D * c)
        return out

    def _input_grads(self, psi, A, B, K):
        v, c, base = self._base(psi, A, B)
        D = self.degree * base ** (self.degree - 1)
        return [D * (v[j] * B[:, j])[None, :] for j in range(self.input_dim)]

    def _diag(self, psi, A):
        v, c = self._parts(psi)
        return ((A * A) @ v + c) ** self.degree + self.nugget * (float(np.sum(v)) + c) ** self.degree

    def _diag_grads(self, psi, A):
        v, c = self._parts(psi)
        p = self.degree
        base = (A * A) @ v + c
        D = p * base ** (p - 1)
        Da = self.nugget * p * (float(np.sum(v)) + c) ** (p - 1)  # the nugget's term eps (sum v + c)^p
        if self.ard:
            out = [D * v[j] * A[:, j] ** 2 + Da * v[j] for j in range(self.input_dim)]
        else:
            out = [D * (base - c) + Da * float(np.sum(v))]
        out.append(D * c + Da * c)
        return out
