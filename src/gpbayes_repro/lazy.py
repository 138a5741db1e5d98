"""Modules loaded on first use, to keep the workflow jobs' start-up short (issue 34).

Every Snakemake job is a fresh Python process that pays for its imports before it computes; a
module that only some functions need (``gpbayes_repro.intervals`` pulls in ``scipy.stats``,
0.5 CPU-s, which the chain jobs never touch) is bound with :func:`lazy_module` instead of
``import``.  The name behaves as the module: the first attribute access loads it.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_module"]


def lazy_module(name: str) -> ModuleType:
    """The module ``name`` (absolute), executed on its first attribute access (``importlib.util.LazyLoader``).

    An already imported module is returned as it is.  Like ``import``, the module is entered in
    ``sys.modules`` and bound on its parent package, so a later ``from pkg import name`` gets the
    same object.  An unknown name raises ``ModuleNotFoundError`` at once, not at first use.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
