"""Inference methods as objects: each method's options, their defaults and checks, in one place.

::

    import gpbayes as gb
    idata = gb.sample(model, method=gb.NUTS(max_tree_depth=8), chains=4, draws=1000)
    idata = gb.sample(model, method="nuts", max_tree_depth=8)        # the same: a string is an alias
    gb.methods(model)                                                 # the strings that apply to model

The package mirrors ``gpbayes.mcmc``: :mod:`~gpbayes.methods.base` holds the :class:`Method` base
class, the registry of aliases, the field checks and the ArviZ groups; one module per family holds
its method classes -- ``exact`` (GP regression on the exact marginal: random-walk MH, HMC, NUTS,
slice sampling, type-II ML), ``weighted`` (AMIS, MAMIS, AMIS then MAMIS, PM-AMIS), ``latent``
(GPClassifier and PoissonGP: pseudo-marginal MH, IS-corrected NUTS, whitened NUTS, AA/SURR Gibbs,
M&A's slice representations, EP type-II ML), ``sparse`` (joint HMC, Gibbs), ``gplvm`` (Gadd et
al.'s sampler), ``gplvm_joint`` (an exact joint sampler of its model) -- and ``defaults`` the method ``gb.sample(model)`` picks with no method given.

A method class registers its aliases when its class statement runs (``Method.__init_subclass__``);
this package's exports, ``gpbayes``'s, ``gb.methods(model)`` and the list of defaults in
``gb.sample``'s docstring are read from that registry, so a new sampler is its module under
``gpbayes/mcmc/`` plus its method class in one of the family modules.

The package is callable: ``gb.methods(model)`` (this package, or ``gpbayes.api.methods``) is
:func:`~gpbayes.methods.base.methods`, the aliases of the methods that apply to ``model``.
"""

from __future__ import annotations

import sys
import types

from . import exact, weighted, latent, sparse, gplvm, gplvm_joint  # noqa: F401  (each registers its method classes)
from .base import Method, chain_starts, defaults_doc, deprecated_warmup, method_classes, methods, registry, resolve, run_sequentially, run_specs
from .defaults import (MAX_PSEUDO_MARGINAL_HYPERPARAMETERS, MAX_RANDOM_WALK_HYPERPARAMETERS, DefaultMethodWarning,
                       default_method)

#: the library's method classes, by name, as the registry holds them (registration order)
METHOD_CLASSES: dict[str, type] = method_classes(__name__)
globals().update(METHOD_CLASSES)

__all__ = ["Method", *METHOD_CLASSES, "registry", "methods", "resolve", "default_method", "DefaultMethodWarning",
           "MAX_PSEUDO_MARGINAL_HYPERPARAMETERS", "MAX_RANDOM_WALK_HYPERPARAMETERS", "run_specs", "run_sequentially",
           "deprecated_warmup", "method_classes", "defaults_doc", "METHOD_CLASSES", "chain_starts"]


class _CallablePackage(types.ModuleType):
    """``gpbayes.methods`` as a module that can be called: importing the package binds it as
    ``gpbayes.methods``, the name of the API function ``gb.methods(model)``; calling it is that function."""

    def __call__(self, model) -> tuple[str, ...]:
        """The method strings ``gb.sample`` accepts for ``model`` (:func:`gpbayes.methods.base.methods`)."""
        return methods(model)


sys.modules[__name__].__class__ = _CallablePackage
