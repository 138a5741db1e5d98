"""Covariance functions: the kernel protocol, the papers' squared exponential, and kernels that compose.

* :class:`Kernel` -- the protocol (``base.py``); :func:`gradient_traces` its one fallback.
* :class:`SquaredExponential` -- R&W eq. 4.9 in each paper's parameterisation (``squared_exponential.py``).
* :class:`Matern12`, :class:`Matern32`, :class:`Matern52`, :class:`RationalQuadratic` (``stationary.py``),
  :class:`Periodic` (``periodic.py``), :class:`Linear` (``linear.py``), :class:`White` (``white.py``).
* :class:`Constant` (``constant.py``), :class:`Cosine` (``cosine.py``), :class:`Polynomial` (``polynomial.py``).
* ``k1 + k2`` (:class:`Sum`) and ``k1 * k2`` (:class:`Product`), value, derivatives and traces composed
  exactly; with numbers, ``c * k`` (:class:`Scaled`, c > 0 fixed) and ``k + c`` (a fixed
  ``Constant(value=c)``), so ``sum(kernels)`` works; every library kernel takes ``active_dims`` (the
  columns it acts on) and, where it has lengthscales, ``ard``.
* ``k.fix(name=value)`` (:class:`Fixed`): some hyperparameters held at given values, the others sampled.

Every parameter is sampled in log space (psi = log parameter); each kernel names its parameters
(the names of ``gb.sample``'s posterior variables), prefixed by the component inside a sum or
product, and has documented default priors (``default_priors``).

>>> from gpbayes.kernels import Matern52, Periodic, SquaredExponential
>>> k = SquaredExponential(1, parameterisation="ma") + Periodic(1)
>>> k.param_names
['se_lengthscale', 'se_sigma_f', 'periodic_lengthscale', 'periodic_period', 'periodic_variance']
"""

from .base import (Kernel, KernelBase, Leaf, Product, Scaled, Sum, gradient_traces, median_distance,
                   traces_from_gradients)
from .constant import Constant
from .cosine import Cosine
from .fixed import Fixed
from .linear import Linear
from .periodic import Periodic
from .polynomial import Polynomial
from .squared_exponential import SquaredExponential
from .stationary import Matern12, Matern32, Matern52, RationalQuadratic, Stationary
from .white import White

__all__ = ["Kernel", "SquaredExponential", "Matern12", "Matern32", "Matern52", "RationalQuadratic", "Periodic",
           "Linear", "White", "Constant", "Cosine", "Polynomial", "Sum", "Product", "Scaled", "Fixed",
           "gradient_traces", "traces_from_gradients", "median_distance", "KernelBase", "Leaf", "Stationary"]
