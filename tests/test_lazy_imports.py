"""Issue 34: the workflow jobs import only what they use (gpbayes_repro.lazy and the experiment modules)."""

import subprocess
import sys

import pytest

from gpbayes_repro.lazy import lazy_module

# a module counts as imported once its code has run: a lazy module not yet touched is not
PROBE = """
import importlib.util, sys
{imports}
loaded = lambda name: name in sys.modules and not isinstance(sys.modules[name], importlib.util._LazyModule)
print(",".join(sorted(m for m in {watch!r} if loaded(m))))
"""


def imported_by(imports: str, watch) -> set[str]:
    """Which of ``watch`` a fresh interpreter has executed after running ``imports``."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(imports=imports, watch=list(watch))],
                         capture_output=True, text=True, check=True).stdout.strip()
    return set(out.split(",")) - {""}


@pytest.mark.parametrize("module, absent", [
    ("gpbayes_repro.experiments.pm_gpc_mcmc", {"scipy.stats", "sklearn"}),
    ("gpbayes_repro.experiments.slice_ma", {"scipy.stats", "sklearn"}),
    ("gpbayes_repro.experiments.sparse_mcmc", {"scipy.stats", "sklearn"}),
    ("gpbayes_repro.experiments.gplvm", {"scipy.stats", "sklearn"}),
    ("gpbayes_repro.experiments.pm_gpc_capacity", {"sklearn"}),
    ("gpbayes_repro.experiments.amis", {"scipy.optimize", "scipy.stats", "sklearn"}),
])
def test_chain_modules_do_not_import_what_only_the_claims_use(module, absent):
    watch = {"scipy.stats", "scipy.optimize", "sklearn", "arviz", "matplotlib", "xarray"}
    loaded = imported_by(f"import {module}", watch)
    assert "xarray" in loaded  # the probe sees real imports
    assert not loaded & absent, loaded & absent


def test_a_lazy_module_loads_on_first_use_in_the_module_that_binds_it():
    code = ("from gpbayes_repro.experiments import pm_gpc_mcmc\n"
            "import gpbayes_repro\n"
            "assert gpbayes_repro.intervals is pm_gpc_mcmc.intervals\n"
            "pm_gpc_mcmc.intervals.log_ratio\n")
    assert "scipy.stats" in imported_by(code, {"scipy.stats"})


def test_lazy_module_returns_an_imported_module_and_refuses_an_unknown_name():
    import json

    assert lazy_module("json") is json
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        lazy_module("gpbayes_repro.no_such_module_here")
