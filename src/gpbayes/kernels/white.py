"""White noise: k(x, x') = v [x and x' are the same point], psi = log v.

On K(X, X) it is v I; a cross-covariance K(X1, X2) between two sets of inputs is 0 (GPflow's
convention: white noise is a point's own, and is not shared with a new input at the same place), and
``diag`` is v (the prior variance of f at a new point includes it).  The sigma_n^2 delta_pq term of R&W
2006 eq. 2.20 as a kernel: in a latent GP (classification) it is latent noise; in regression it adds
to the noise variance and is not identified apart from it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import Leaf, _normalise_dims

__all__ = ["White"]


@dataclasses.dataclass(frozen=True)
class White(Leaf):
    """White noise v I (module docstring).

    Parameters
    ----------
    input_dim, active_dims : as for :class:`~gpbayes.kernels.Matern52` (only the number of rows is used).

    Starts at v = a.  Default prior: v ~ InverseGamma(1, 0.01), ``gpbayes.models.NOISE_PRIOR`` (its
    density vanishes at v -> 0 faster than any power).
    """

    input_dim: int | None = None
    active_dims: tuple | None = None

    name = "white"

    def __post_init__(self):
        _normalise_dims(self, self.input_dim, self.active_dims)

    @property
    def n_params(self) -> int:
        """One: the variance."""
        return 1

    @property
    def param_names(self) -> list[str]:
        """``["variance"]``."""
        return ["variance"]

    def amplitude(self, psi) -> float:
        """v."""
        return float(np.exp(self._check_psi(psi)[0]))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """v = a."""
        return np.array([math.log(amplitude)])

    def default_priors(self) -> tuple:
        """v ~ InverseGamma(1, 0.01)."""
        from .. import priors

        return (priors.InverseGamma(1.0, 0.01),)

    def _cov(self, psi, A, B):
        return np.zeros((A.shape[0], B.shape[0]))

    def _cov_grads(self, psi, A, B, K):
        return [np.zeros((A.shape[0], B.shape[0]))]

    def _input_grads(self, psi, A, B, K):
        return [np.zeros((A.shape[0], B.shape[0]))] * self.input_dim

    def _diag(self, psi, A):
        return np.full(A.shape[0], float(np.exp(psi[0])))

    def _diag_grads(self, psi, A):
        return [self._diag(psi, A)]

    def _diag_vjp_from_values(self, psi, diag, diag_bar):
        return np.array([float(np.sum(diag_bar * diag))])
