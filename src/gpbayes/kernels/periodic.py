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
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import Leaf, _normalise_dims, median_distance

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
        _normalise_dims(self, self.input_dim, self.active_dims)
        if not (np.isfinite(self.nugget) and self.nugget >= 0):
            raise ValueError(f"Periodic: nugget must be a finite number >= 0, got {self.nugget}")

    @property
    def n_scale(self) -> int:
        """Number of lengthscales: d with ARD, else 1."""
        return self.input_dim if self.ard else 1

    @property
    def n_params(self) -> int:
        """Lengthscales, the period, the variance."""
        return self.n_scale + 2

    @property
    def param_names(self) -> list[str]:
        """``lengthscale`` (``lengthscale_<column>`` with ARD), ``period``, ``variance``."""
        scales = [f"lengthscale_{self._index(i)}" for i in range(self.input_dim)] if self.ard else ["lengthscale"]
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
        ell, p, a, U = self._angles(psi, A, B)
        E = sum(np.sin(u) ** 2 / ell[j] ** 2 for j, u in enumerate(U))
        return a * np.exp(-2.0 * E)

    def _cov_grads(self, psi, A, B, K):
        ell, p, a, U = self._angles(psi, A, B)
        K = np.asarray(K, dtype=np.float64)
        scale = [4.0 * K * np.sin(u) ** 2 / ell[j] ** 2 for j, u in enumerate(U)]
        out = scale if self.ard else [sum(scale)]
        out.append(2.0 * K * sum(u * np.sin(2.0 * u) / ell[j] ** 2 for j, u in enumerate(U)))
        out.append(K)
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
