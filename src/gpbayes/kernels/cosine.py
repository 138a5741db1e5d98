"""The cosine kernel: k(x, x') = sigma^2 cos(2 pi sum_d (x_d - x'_d) / l_d)  (GPflow's ``Cosine``).

In one dimension this is PyMC's ``Cosine`` (cos(2 pi |x - x'| / l)): a sinusoid of period l with a
random phase and amplitude.  In several dimensions the sum of the scaled differences (GPflow's form,
not the Euclidean distance, whose cosine is not positive semi-definite for d > 1) keeps it a
kernel: with u(x) = 2 pi sum_d x_d / l_d, k = sigma^2 (cos u cos u' + sin u sin u'), rank 2 -- alone it
needs a noise term or a ``nugget``.  One lengthscale l shared or one per dimension (``ard``).
psi = (log l_1..d or log l, log sigma^2).  With u = 2 pi sum_d (x_d - x'_d) / l_d and K = k(x, x'):

    dK/dlog l_d     = sigma^2 sin(u) 2 pi (x_d - x'_d) / l_d   (one l: sigma^2 sin(u) u),
    dK/dx_d         = -sigma^2 sin(u) 2 pi / l_d,
    dK/dlog sigma^2 = K.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import Leaf, _normalise_dims, median_distance

__all__ = ["Cosine"]

_TWO_PI = 2.0 * math.pi


@dataclasses.dataclass(frozen=True)
class Cosine(Leaf):
    """The cosine kernel (module docstring).

    Starts at l = the median pairwise distance of X's active columns (times d without ARD: each
    dimension's difference adds to u), sigma^2 = a.  Default priors (ours): every lengthscale
    ~ Gamma(1, 1/sqrt(d)) (F&G's on tau, as the stationary kernels'), sigma^2 ~ Gamma(1.1, 0.1).

    Parameters
    ----------
    input_dim, ard, active_dims, nugget : as for :class:`~gpbayes.kernels.Matern52` (the lengthscales are
        the periods, ``lengthscale`` / ``lengthscale_<column>``).
    """

    input_dim: int | None = None
    ard: bool = False
    active_dims: tuple | None = None
    nugget: float = 0.0

    name = "cosine"

    def __post_init__(self):
        _normalise_dims(self, self.input_dim, self.active_dims)
        if not (np.isfinite(self.nugget) and self.nugget >= 0):
            raise ValueError(f"Cosine: nugget must be a finite number >= 0, got {self.nugget}")

    @property
    def n_scale(self) -> int:
        """Number of lengthscales: d with ARD, else 1."""
        return self.input_dim if self.ard else 1

    @property
    def n_params(self) -> int:
        """Lengthscales, the variance."""
        return self.n_scale + 1

    @property
    def param_names(self) -> list[str]:
        """``lengthscale`` (``lengthscale_<column>`` with ARD), ``variance``."""
        scales = [f"lengthscale_{self._index(i)}" for i in range(self.input_dim)] if self.ard else ["lengthscale"]
        return scales + ["variance"]

    def amplitude(self, psi) -> float:
        """sigma^2."""
        return float(np.exp(self._check_psi(psi)[-1]))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """Every l at the median pairwise distance of X's active columns, sigma^2 = amplitude."""
        med = median_distance(self._x(X))
        return np.concatenate([np.full(self.n_scale, math.log(med)), [math.log(amplitude)]])

    def default_priors(self) -> tuple:
        """Gamma(1, 1/sqrt(d)) per lengthscale, Gamma(1.1, 0.1) on sigma^2."""
        from .. import priors

        return (priors.fg_scale_prior(self.input_dim),) * self.n_scale + (priors.FG_AMPLITUDE_PRIOR,)

    def _parts(self, psi):
        ell = np.exp(psi[: self.n_scale])
        if not self.ard:
            ell = np.full(self.input_dim, ell[0])
        return ell, float(np.exp(psi[-1]))

    def _phase(self, psi, A, B):
        """(l, sigma^2, [2 pi (A_d - B_d) / l_d], u = their sum)."""
        ell, a = self._parts(psi)
        parts = [(_TWO_PI / ell[j]) * np.subtract.outer(A[:, j], B[:, j]) for j in range(self.input_dim)]
        return ell, a, parts, sum(parts)

    def _cov(self, psi, A, B):
        _, a, _, u = self._phase(psi, A, B)
        return a * np.cos(u)

    def _cov_grads(self, psi, A, B, K):
        _, a, parts, u = self._phase(psi, A, B)
        s = a * np.sin(u)
        out = [s * p for p in parts] if self.ard else [s * u]
        out.append(np.asarray(K, dtype=np.float64))
        return out

    def _input_grads(self, psi, A, B, K):
        ell, a, _, u = self._phase(psi, A, B)
        s = a * np.sin(u)
        return [-s * (_TWO_PI / ell[j]) for j in range(self.input_dim)]

    def _diag(self, psi, A):
        return np.full(A.shape[0], float(np.exp(psi[-1])) * (1.0 + self.nugget))

    def _diag_grads(self, psi, A):
        n = A.shape[0]
        return [np.zeros(n)] * (self.n_params - 1) + [self._diag(psi, A)]

    def _diag_vjp_from_values(self, psi, diag, diag_bar):
        g = np.zeros(self.n_params)
        g[-1] = float(np.sum(diag_bar * diag))
        return g
