"""A kernel with some hyperparameters held at given values: ``k.fix(lengthscale=0.5)``.

What PyMC does by passing a number instead of a random variable (``pm.gp.cov.ExpQuad(1, ls=0.5)``)
and GPflow by ``set_trainable(k.lengthscales, False)``: the fixed coordinates of the wrapped kernel's
psi are log(value), the others are this kernel's psi, sampled as usual.  Every quantity is the
wrapped kernel's at the full psi; the derivatives are those of the free coordinates (the fixed ones
are constants), so NUTS, the Laplace/EP marginals and the sparse GP's reverse mode see a kernel of
fewer parameters.  ``param_names``, their descriptive names and default priors are the wrapped
kernel's, less the fixed ones.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from .base import Kernel, _built_on_base, _diag_vjp, _is_number, _Wrapper, gradient_traces

__all__ = ["Fixed"]


def _targets(kernel, key: str) -> list[int]:
    """The coordinates of ``kernel``'s psi that ``key`` names: a parameter name, its descriptive name
    (``gpbayes.priors.kernel_aliases``: ``lengthscale_0`` for F&G's ``tau_0``), or the stem of a run
    ``<key>_<j>`` (one per input column: ``lengthscale`` fixes every ARD lengthscale)."""
    from .. import priors

    names = list(kernel.param_names)
    aliases = [a or "" for a in priors.kernel_aliases(kernel)] + [""] * len(names)
    exact = [i for i, n in enumerate(names) if n == key or aliases[i] == key]
    if exact:
        return exact
    stem = re.compile(re.escape(key) + r"_\d+")
    return [i for i, n in enumerate(names) if stem.fullmatch(n) or stem.fullmatch(aliases[i])]


@_built_on_base("fixed")
@dataclasses.dataclass(frozen=True)
class Fixed(_Wrapper):
    """The wrapped kernel with the hyperparameters named in ``values`` held fixed (module docstring).

    Parameters
    ----------
    kernel : the kernel (a library kernel or any object of the :class:`Kernel` protocol).
    values : ``((name, value), ...)`` (or a dict): name as in ``prior=`` (one of the kernel's
        ``param_names``, its descriptive name, or the stem of a per-column run to fix all of it), value on
        the natural scale (a lengthscale, a variance: a finite number > 0).  ``kernel.fix(**values)``
        builds it.  Unknown names, values <= 0 and a name given twice are refused here.
    """

    kernel: Any
    values: tuple

    def __post_init__(self):
        if not isinstance(self.kernel, Kernel) or isinstance(self.kernel, type):
            raise TypeError(f"Fixed: kernel must implement gpbayes.kernels.Kernel, got {self.kernel!r}")
        values = tuple(self.values.items()) if isinstance(self.values, dict) else tuple(tuple(v) for v in self.values)
        if not values:
            raise ValueError("Fixed: give at least one hyperparameter to fix, e.g. kernel.fix(lengthscale=0.5); "
                             f"the kernel's are {list(self.kernel.param_names)}")
        full = np.full(self.kernel.n_params, np.nan)
        for key, value in values:
            idx = _targets(self.kernel, str(key))
            if not idx:
                from .. import priors

                aliases = [a for a in priors.kernel_aliases(self.kernel) if a]
                raise ValueError(f"Fixed: unknown hyperparameter {key!r} to fix; the kernel's are "
                                 f"{list(self.kernel.param_names)}" + (f" (or {aliases})" if aliases else ""))
            if not _is_number(value) or not (math.isfinite(float(value)) and float(value) > 0.0):
                raise ValueError(f"Fixed: the value of {key!r} must be a finite number > 0 (the hyperparameter "
                                 f"itself, not its log), got {value!r}")
            if np.any(np.isfinite(full[idx])):
                raise ValueError(f"Fixed: {key!r} fixes {[self.kernel.param_names[i] for i in idx]}, already "
                                 "fixed by another key; give each once")
            full[idx] = math.log(float(value))
        object.__setattr__(self, "values", tuple((str(k), float(v)) for k, v in values))
        object.__setattr__(self, "_full", full)
        object.__setattr__(self, "_free", np.flatnonzero(~np.isfinite(full)))

    # ------------------------------------------------------------------ psi
    def full_psi(self, psi) -> np.ndarray:
        """The wrapped kernel's psi: the fixed log-values with ``psi`` in the free coordinates."""
        psi = np.asarray(psi, dtype=np.float64)
        if psi.shape != (self.n_params,):
            raise ValueError(f"Fixed expects {self.n_params} log-parameters {self.param_names}, got shape "
                             f"{psi.shape}")
        out = self._full.copy()
        out[self._free] = psi
        return out

    @property
    def free(self) -> np.ndarray:
        """The indices of the wrapped kernel's psi that are sampled."""
        return self._free.copy()

    @property
    def n_params(self) -> int:
        """The wrapped kernel's parameters less the fixed ones."""
        return int(self._free.size)

    @property
    def param_names(self) -> list[str]:
        """The wrapped kernel's names of the free parameters."""
        names = list(self.kernel.param_names)
        return [names[i] for i in self._free]

    def default_priors(self) -> tuple:
        """The wrapped kernel's default priors of the free parameters."""
        from .. import priors

        comps = priors.default_kernel_prior(self.kernel).components
        return tuple(comps[i] for i in self._free)

    # ------------------------------------------------------------------ the protocol
    def __call__(self, psi, X, X2=None) -> np.ndarray:
        """K(X, X2) of the wrapped kernel at the full psi."""
        return self.kernel(self.full_psi(psi), X, X2)

    def diag(self, psi, X) -> np.ndarray:
        """diag K(X, X) of the wrapped kernel at the full psi."""
        return self.kernel.diag(self.full_psi(psi), X)

    def gradients(self, psi, X, K=None) -> list[np.ndarray]:
        """The wrapped kernel's dK/dpsi_i of the free coordinates."""
        G = self.kernel.gradients(self.full_psi(psi), X, K)
        return [G[i] for i in self._free]

    def gradient_traces(self, psi, X, W, K, overwrite_W: bool = False) -> np.ndarray:
        """The wrapped kernel's traces (or its fallback) of the free coordinates; ``W`` is never overwritten."""
        full = self.full_psi(psi)
        return np.asarray(gradient_traces(self.kernel, full, X, W, self.kernel(full, X)))[self._free]

    def amplitude(self, psi) -> float:
        """The wrapped kernel's amplitude at the full psi."""
        return float(self.kernel.amplitude(self.full_psi(psi)))

    def initial_psi(self, X, amplitude: float = 1.0) -> np.ndarray:
        """The wrapped kernel's ``initial_psi`` at its free coordinates."""
        return np.asarray(self.kernel.initial_psi(X, amplitude=amplitude), dtype=np.float64)[self._free]

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs: bool = True, overwrite_K_bar: bool = False):
        """The wrapped kernel's products: the free coordinates' (psi), all of them (inputs)."""
        g, d = self.kernel.cross_covariance_vjp(self.full_psi(psi), X1, X2, K12, K_bar, inputs)
        return np.asarray(g)[self._free], d

    def diag_vjp(self, psi, diag, diag_bar, X=None) -> np.ndarray:
        """The wrapped kernel's diag_vjp at the free coordinates."""
        full = self.full_psi(psi)
        if X is not None:
            return _diag_vjp(self.kernel, full, X, diag_bar)[self._free]
        return np.asarray(self.kernel.diag_vjp(full, diag, diag_bar), dtype=np.float64)[self._free]

    def __repr__(self) -> str:
        return f"{self.kernel!r}.fix({', '.join(f'{k}={v!r}' for k, v in self.values)})"
