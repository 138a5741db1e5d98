"""The data's units: hyperparameters read and reported in X's and y's units (issue 41, point 2).

A model standardises its inputs, x~_j = (x_j - m_j) / s_j, and a GPRegressor its target, y~ = (y - c) / S,
and samples psi = log theta of a kernel on that scale.  With ``units="data"`` (the default) the user's
``prior={...}``, the values of ``k.fix(...)`` and of ``Constant(value=...)`` are read, and the
``posterior`` group is written, in the data's units: theta_data = theta_model exp(shift), i.e. on the log
scale psi_data = psi + shift (a shift, so a prior density moves with a constant Jacobian).  The samplers
still work on the standardised scale: every number they compute is unchanged.

The shift of each hyperparameter follows from the kernel's formula, with the data-unit kernel
k(x, x') = S^2 k~(x~, x~') (f in y's units; S = 1 for the latent models, whose y is not standardised):

=========================================  ===============================================
hyperparameter                             shift (log s_j: of its column j; log S)
=========================================  ===============================================
a lengthscale (SE, Matérn, RQ, Cosine)     + log s_j   (X's units)
SE ``amis`` tau; M&A ``lengthscale``       + log s_j
SE ``gplvm`` theta_j (inverse squared)     - 2 log s_j
a variance k(x, x) (SE fg's sigma, ...)    + 2 log S   (y's units squared)
GPRegressor's ``noise_variance``           + 2 log S   (SparseGP's: 0, y is not standardised)
M&A's ``sigma_f`` (a standard deviation)   + log S
RQ's alpha; Periodic's lengthscale         0 (dimensionless: Periodic's l divides sin^2)
Periodic's period                          + log s_j   (one period shared: equal s_j needed)
Linear's variance v_j (sum v_j x_j x'_j)   + 2 log S - 2 log s_j  (y^2 / x^2; about X's mean)
Polynomial's v_j and offset c, degree p    + (2/p) log S - 2 log s_j, + (2/p) log S
=========================================  ===============================================

One parameter shared by several columns of different scales (an isotropic lengthscale, Periodic's
period) has no single unit in X's: it stays on the standardised scale (shift None: a prior or fixed
value of it under ``units="data"`` is refused, the posterior reports it standardised and says so).  In
a product of kernels only the product of the amplitudes is identified: the first factor with an
amplitude takes y's units, the others are dimensionless.  A kernel outside the library states its own
rule with ``log_unit_shifts(log_x_scale, log_y_scale)`` (one shift or None per parameter); without
it a model in ``units="data"`` on standardised data warns once and reports its parameters standardised
(``posterior.attrs["standardized_variables"]``), and a prior or fixed value of them in the data's units
is refused (:class:`UnitsError`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["UNITS", "UnitsError", "check_units", "kernel_log_shifts", "to_model_kernel"]

#: the values of a model's ``units=``
UNITS = ("data", "standardized")


class UnitsError(ValueError):
    """A hyperparameter whose unit in the data's units is not known (or not defined): refused rather than
    silently read on another scale."""


def check_units(value, owner: str) -> str:
    """``units=`` checked: one of :data:`UNITS`; anything else is refused, naming the allowed values."""
    if not isinstance(value, str) or value not in UNITS:
        raise ValueError(f"{owner}: units must be one of {list(UNITS)} -- 'data' (priors, fixed values and the "
                         "posterior in X's and y's units) or 'standardized' (on the model's standardised scale) -- "
                         f"got {value!r}")
    return value


def _columns(kernel, lsx: np.ndarray) -> np.ndarray:
    dims = getattr(kernel, "active_dims", None)
    if dims is None:
        dims = range(int(kernel.input_dim))
    return np.asarray([lsx[j] for j in dims], dtype=np.float64)


def _per_column(c: np.ndarray, ard: bool, power: float, plus: float = 0.0) -> list:
    """One shift per column (``ard``), or one shared: defined only when the columns' scales agree."""
    if ard:
        return [power * v + plus for v in c]
    return [power * c[0] + plus] if np.all(c == c[0]) else [None]


def _leaf(kernel, lsx: np.ndarray, ly: float):
    """The shifts of a library kernel that is not a combination, or None for a kernel the table does not know."""
    kind = type(kernel).__name__
    if not type(kernel).__module__.startswith("gpbayes.kernels"):
        return None
    if kind == "SquaredExponential":
        power, amp = {"fg": (1.0, 2.0), "amis": (1.0, 2.0), "ma": (1.0, 1.0), "gplvm": (-2.0, 2.0)}[
            kernel.parameterisation]
        out = _per_column(_columns(kernel, lsx), kernel.ard, power)
        return out + ([] if kernel.fixed_amplitude else [amp * ly])
    if kind in ("Matern12", "Matern32", "Matern52", "RationalQuadratic"):
        return (_per_column(_columns(kernel, lsx), kernel.ard, 1.0) + [0.0] * len(kernel.extra_names)
                + [2.0 * ly])
    if kind == "Cosine":
        return _per_column(_columns(kernel, lsx), kernel.ard, 1.0) + [2.0 * ly]
    if kind == "Periodic":
        return [0.0] * kernel.n_scale + _per_column(_columns(kernel, lsx), False, 1.0) + [2.0 * ly]
    if kind == "Linear":
        return _per_column(_columns(kernel, lsx), kernel.ard, -2.0, 2.0 * ly)
    if kind == "Polynomial":
        p = float(kernel.degree)
        return _per_column(_columns(kernel, lsx), kernel.ard, -2.0, 2.0 * ly / p) + [2.0 * ly / p]
    if kind == "Constant":
        return [] if kernel.value is not None else [2.0 * ly]
    if kind == "White":
        return [2.0 * ly]
    return None


def _product_shares(kernels, lsx, ly: float) -> list:
    """log S per factor of a product: all of it to the first factor with an amplitude, 0 to the others."""
    out, taken = [], False
    for k in kernels:
        amp = _depends_on_y(k, lsx)
        out.append(ly if amp and not taken else 0.0)
        taken = taken or amp
    return out


def _depends_on_y(kernel, lsx) -> bool:
    a, b = kernel_log_shifts(kernel, lsx, 0.0, strict=False), kernel_log_shifts(kernel, lsx, 1.0, strict=False)
    return any(u != v for u, v in zip(a, b)) or _fixed_value_depends_on_y(kernel)


def _fixed_value_depends_on_y(kernel) -> bool:
    return type(kernel).__name__ == "Constant" and getattr(kernel, "value", None) not in (None, 0.0)


def kernel_log_shifts(kernel, log_x_scale, log_y_scale: float, strict: bool = True) -> list:
    """psi_data - psi_model for each of ``kernel``'s parameters (``param_names`` order): a float, or None
    where the parameter has no single unit in the data's (module docstring).  ``log_x_scale``: log s_j of
    every column of X; ``log_y_scale``: log S of f's scale (0 when y is not standardised).  Raises
    :class:`UnitsError` for a kernel whose rule is unknown (no ``log_unit_shifts`` of its own); with
    ``strict=False`` its parameters are None instead (no known unit)."""
    lsx = np.asarray(log_x_scale, dtype=np.float64)
    ly = float(log_y_scale)
    kind = type(kernel).__name__
    library = type(kernel).__module__.startswith(("gpbayes.kernels", "gpbayes.means"))
    if library and kind == "MeanKernel":  # the mean adds no parameter
        return kernel_log_shifts(kernel.kernel, lsx, ly, strict)
    if library and kind == "Sum":
        return [s for k in kernel.kernels for s in kernel_log_shifts(k, lsx, ly, strict)]
    if library and kind == "Product":
        return [s for k, y in zip(kernel.kernels, _product_shares(kernel.kernels, lsx, ly))
                for s in kernel_log_shifts(k, lsx, y, strict)]
    if library and kind == "Scaled":
        return kernel_log_shifts(kernel.kernel, lsx, ly, strict)
    if library and kind == "Fixed":
        full = kernel_log_shifts(kernel.kernel, lsx, ly, strict)
        return [full[i] for i in kernel.free]
    own = getattr(kernel, "log_unit_shifts", None)
    if callable(own):
        out = list(own(lsx, ly))
        if len(out) != kernel.n_params:
            raise UnitsError(f"{type(kernel).__name__}.log_unit_shifts gave {len(out)} shifts for "
                             f"{kernel.n_params} parameters {list(kernel.param_names)}")
        return [None if v is None else float(v) for v in out]
    out = _leaf(kernel, lsx, ly)
    if out is None and not strict:
        return [None] * int(kernel.n_params)
    if out is None:
        raise UnitsError(f"the kernel {type(kernel).__name__} has no known rule for its hyperparameters' units "
                         f"{list(kernel.param_names)} in X's and y's units: pass units='standardized' (priors, "
                         "fixed values and posterior on the standardised scale), or define "
                         "log_unit_shifts(log_x_scale, log_y_scale) on the kernel (gpbayes.units)")
    return out


def to_model_kernel(kernel, log_x_scale, log_y_scale: float, owner: str):
    """``kernel`` with the values the user wrote in the data's units (``k.fix(...)``, ``Constant(value=c)``)
    carried to the model's standardised scale; the same object when nothing changes."""
    lsx = np.asarray(log_x_scale, dtype=np.float64)
    ly = float(log_y_scale)
    kind = type(kernel).__name__
    library = type(kernel).__module__.startswith(("gpbayes.kernels", "gpbayes.means"))
    if not library:
        return kernel
    if kind in ("Sum", "Product"):
        ys = [ly] * len(kernel.kernels) if kind == "Sum" else _product_shares(kernel.kernels, lsx, ly)
        parts = tuple(to_model_kernel(k, lsx, y, owner) for k, y in zip(kernel.kernels, ys))
        if all(a is b for a, b in zip(parts, kernel.kernels)):
            return kernel
        return dataclasses.replace(kernel, kernels=parts)
    if kind in ("Scaled", "MeanKernel"):
        inner = to_model_kernel(kernel.kernel, lsx, ly, owner)
        return kernel if inner is kernel.kernel else dataclasses.replace(kernel, kernel=inner)
    if kind == "Constant" and kernel.value is not None:
        if ly == 0.0 or kernel.value == 0.0:
            return kernel
        return dataclasses.replace(kernel, value=float(kernel.value) * math.exp(-2.0 * ly))
    if kind == "Fixed":
        from .kernels.fixed import _targets

        inner = kernel.kernel
        full = kernel_log_shifts(inner, lsx, ly, strict=False)
        names = list(inner.param_names)
        values = []
        for key, value in kernel.values:
            for i in _targets(inner, key):
                if full[i] is None:
                    raise UnitsError(f"{owner}: {key!r} fixed at {value!r} in the data's units, but "
                                     f"{names[i]!r} has no single unit in X's and y's (one parameter shared by columns "
                                     "of different scales, or a kernel without a known unit rule): use ard=True, "
                                     "units='standardized' or standardize=False")
                values.append((names[i], float(value) * math.exp(-full[i])))
        model_inner = to_model_kernel(inner, lsx, ly, owner)
        if model_inner is inner and all(full[i] == 0.0 for key, _ in kernel.values for i in _targets(inner, key)):
            return kernel
        return type(kernel)(model_inner, tuple(values))
    return kernel
