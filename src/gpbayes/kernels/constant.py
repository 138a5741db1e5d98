"""The constant kernel: k(x, x') = v for every pair of inputs (GPflow's ``Constant``, PyMC's ``Constant``).

A GP with this kernel is one random constant with variance v (R&W 2006 Sec. 4.2.2: sigma_0^2, the
bias term of a dot-product kernel), so K(X, X) = v 1 1^T has rank 1: alone it needs a noise term;
added to another kernel it adds an unknown offset to f.  Two forms:

* ``Constant()`` -- v sampled, psi = log v, named ``variance``: dK/dlog v = K, dK/dx = 0.
* ``Constant(value=c)`` -- v = c held fixed, no parameter (``k + c`` for a number c builds this one:
  ``k + 1.0`` has k's parameters and names).

The inputs are not read (only their number of rows), so ``input_dim`` and ``active_dims`` are
optional and any X is accepted.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import Leaf, _built_on_base, _is_number, _normalise_dims, _select

__all__ = ["Constant"]


@_built_on_base("constant")
@dataclasses.dataclass(frozen=True)
class Constant(Leaf):
    """The constant kernel v (module docstring).

    Parameters
    ----------
    input_dim, active_dims : optional (the inputs' values are not read); default any number of columns.
    value : None (the default): v is a hyperparameter, psi = log v, named ``variance``; a number
        c >= 0: v = c held fixed, no parameter (what ``k + c`` adds).

    Starts at v = a (``initial_psi``).  Default prior on a sampled v: Gamma(1.1, 0.1), F&G's
    amplitude prior (as ``Linear``'s variances).
    """

    input_dim: int | None = None
    active_dims: tuple | None = None
    value: float | None = None

    name = "constant"

    def __post_init__(self):
        if self.input_dim is None and self.active_dims is None:
            object.__setattr__(self, "input_dim", 1)  # the inputs are not read: any X
        else:
            _normalise_dims(self, self.input_dim, self.active_dims)
        if self.value is not None:
            if not _is_number(self.value):
                raise TypeError(f"Constant: value must be None (a sampled variance) or a number >= 0, got "
                                f"{self.value!r} ({type(self.value).__name__})")
            if not (math.isfinite(float(self.value)) and float(self.value) >= 0.0):
                raise ValueError(f"Constant: value must be a finite number >= 0 (a variance), got {self.value!r}")
            object.__setattr__(self, "value", float(self.value))

    @property
    def any_columns(self) -> bool:
        """True: X may have any number of columns (only its rows are used)."""
        return True

    @property
    def required_columns(self) -> int:
        """The columns X must have at least: 1, or max(active_dims) + 1."""
        return 1 if self.active_dims is None else max(self.active_dims) + 1

    def _x(self, X, name: str = "X") -> np.ndarray:
        if self.active_dims is not None:
            return _select(X, name, self.input_dim, self.active_dims)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise ValueError(f"{name}: expected shape (n, d), got {X.shape}")
        return X

    @property
    def n_params(self) -> int:
        """One (the variance) when sampled, none when ``value`` is given."""
        return 0 if self.value is not None else 1

    @property
    def param_names(self) -> list[str]:
        """``["variance"]``, or ``[]`` with a fixed ``value``."""
        return [] if self.value is not None else ["variance"]

    def _v(self, psi) -> float:
        return self.value if self.value is not None else float(np.exp(psi[0]))

    def amplitude(self, psi) -> float:
        """v."""
        return self._v(self._check_psi(psi))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """log v = log a; nothing with a fixed ``value``."""
        return np.zeros(0) if self.value is not None else np.array([math.log(amplitude)])

    def default_priors(self) -> tuple:
        """Gamma(1.1, 0.1) on a sampled v; none with a fixed ``value``."""
        from .. import priors

        return () if self.value is not None else (priors.FG_AMPLITUDE_PRIOR,)

    def _cov(self, psi, A, B):
        return np.full((A.shape[0], B.shape[0]), self._v(psi))

    def _cov_grads(self, psi, A, B, K):
        return [] if self.value is not None else [np.full((A.shape[0], B.shape[0]), self._v(psi))]

    def _input_grads(self, psi, A, B, K):
        return [np.zeros((A.shape[0], B.shape[0]))] * A.shape[1]

    def _diag(self, psi, A):
        return np.full(A.shape[0], self._v(psi))

    def _diag_grads(self, psi, A):
        return [] if self.value is not None else [self._diag(psi, A)]

    def _diag_vjp_from_values(self, psi, diag, diag_bar):
        if self.value is not None:
            return np.zeros(0)
        return np.array([float(np.sum(diag_bar * diag))])
