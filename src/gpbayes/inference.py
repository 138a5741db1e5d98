"""Deprecated: the method objects moved to :mod:`gpbayes.methods` (one module per family); this
module re-exports them for one release and warns (DeprecationWarning) when imported.

``from gpbayes.inference import NUTS`` becomes ``from gpbayes.methods import NUTS`` (or ``gb.NUTS``).
"""

from __future__ import annotations

import warnings

from .methods import *  # noqa: F401,F403
from .methods import __all__ as _methods_all
from .methods.base import posterior_groups  # noqa: F401
from .methods.weighted import weighted_groups  # noqa: F401

__all__ = [*_methods_all, "posterior_groups", "weighted_groups"]

warnings.warn("gpbayes.inference is deprecated and will be removed in the next release; import the method "
              "objects from gpbayes.methods (or use gb.NUTS, gb.sample, ...)", DeprecationWarning, stacklevel=2)
