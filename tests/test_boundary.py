"""The library/reproduction boundary: ``gpbayes`` never imports the reproduction side.

``src/gpbayes`` is the library (models, approximations, estimators, samplers,
diagnostics, NetCDF io); ``src/gpbayes_repro`` holds the reproduction code
(config and schema, vendored-data manifest and readers, claims, figures, one
module per paper).  The dependency goes one way only.  This test walks the
library's syntax trees, so an import hidden inside a function is caught too.

The rule for scikit-learn: the library never loads it.  One module,
``gpbayes/sklearn.py``, implements scikit-learn's estimator protocol (duck-typed,
without inheriting from ``BaseEstimator``) and may name scikit-learn's classes only
inside the functions listed in ``SKLEARN_ADAPTER_FUNCTIONS``, each of which runs
only when scikit-learn is already loaded (``__sklearn_tags__`` is called by
scikit-learn alone; ``_not_fitted_error`` checks ``sys.modules`` first).
``tests/test_sklearn.py`` checks that fitting and predicting leave scikit-learn
unloaded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[1] / "src" / "gpbayes"

# the reproduction package, the workflow engine and the config/plotting/table
# stack the library must not need
FORBIDDEN = ("gpbayes_repro", "snakemake", "yaml", "jsonschema", "matplotlib", "pandas", "sklearn")


#: gpbayes/sklearn.py: the functions that may import scikit-learn (it is loaded whenever they run)
SKLEARN_ADAPTER = LIBRARY / "sklearn.py"
SKLEARN_ADAPTER_FUNCTIONS = {"__sklearn_tags__", "_not_fitted_error"}


def allowed(path: Path, line: int, module: str) -> bool:
    """The sklearn adapter's imports of scikit-learn inside its listed functions (module docstring)."""
    if path != SKLEARN_ADAPTER or module.split(".")[0] != "sklearn":
        return False
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(isinstance(node, ast.FunctionDef) and node.name in SKLEARN_ADAPTER_FUNCTIONS
               and node.lineno <= line <= node.end_lineno for node in ast.walk(tree))


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Absolute module names imported anywhere in ``path`` (with line numbers)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module", "__import__"
        ):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append((node.lineno, node.args[0].value))
    return out


def test_library_files_exist():
    assert len(list(LIBRARY.rglob("*.py"))) > 20


@pytest.mark.parametrize("path", sorted(LIBRARY.rglob("*.py")), ids=lambda p: str(p.relative_to(LIBRARY)))
def test_library_does_not_import_reproduction_code(path):
    bad = [(line, mod) for line, mod in imported_modules(path)
           if mod.split(".")[0] in FORBIDDEN and not allowed(path, line, mod)]
    assert not bad, f"{path} imports {bad}: the library must not depend on the reproduction side"


def test_checker_catches_a_forbidden_import(tmp_path):
    """The walker sees imports inside functions and importlib calls (so the test can fail)."""
    f = tmp_path / "m.py"
    f.write_text(
        "import numpy\n"
        "def g():\n    from gpbayes_repro import claims\n"
        "def h():\n    import importlib\n    return importlib.import_module('snakemake')\n"
    )
    mods = [m for _, m in imported_modules(f)]
    assert "gpbayes_repro" in mods and "snakemake" in mods


def test_the_sklearn_exception_is_as_narrow_as_stated():
    """Only the listed functions of gpbayes/sklearn.py may import scikit-learn; a module-level import would not."""
    mods = imported_modules(SKLEARN_ADAPTER)
    assert any(m.startswith("sklearn") for _, m in mods)
    assert all(allowed(SKLEARN_ADAPTER, line, m) for line, m in mods if m.startswith("sklearn"))
    assert not allowed(SKLEARN_ADAPTER, 1, "sklearn") and not allowed(LIBRARY / "api.py", 1, "sklearn")


def test_reproduction_package_is_separate():
    repro = LIBRARY.parent / "gpbayes_repro"
    assert (repro / "schemas" / "config.schema.yaml").is_file()
    assert not (LIBRARY / "experiments").exists()


def test_importing_the_library_does_not_load_the_api_until_used():
    """Every workflow job imports gpbayes.<module>; the API (samplers, ArviZ) loads on first use only."""
    import subprocess
    import sys

    code = ("import sys, gpbayes.linalg; assert 'gpbayes.api' not in sys.modules and 'arviz' not in sys.modules; "
            "import gpbayes as gb; gb.sample; assert 'gpbayes.api' in sys.modules; gb.kernels.SquaredExponential; "
            "gb.api.sample\n"
            "try:\n    gb.no_such_name\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit('no error')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


# import name -> distribution name, where they differ
_DIST = {"yaml": "pyyaml", "sklearn": "scikit-learn", "netCDF4": "netcdf4"}


def _declared() -> tuple[set, dict]:
    import re
    import tomllib

    project = tomllib.loads((LIBRARY.parents[1] / "pyproject.toml").read_text())["project"]

    def names(reqs):
        return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower() for r in reqs}

    return names(project["dependencies"]), {k: names(v) for k, v in project["optional-dependencies"].items()}


def _library_third_party_imports() -> set:
    import sys

    mods = {mod.split(".")[0] for path in LIBRARY.rglob("*.py") for _, mod in imported_modules(path)}
    # ("" is a relative importlib.import_module(".api", __name__)); scikit-learn is imported only inside the
    # estimator adapter's SKLEARN_ADAPTER_FUNCTIONS, which run only when scikit-learn is already loaded: it is
    # not a dependency of the library (test_sklearn_is_imported_only_where_allowed)
    return {_DIST.get(m, m).lower() for m in mods
            if m and m not in sys.stdlib_module_names and m not in ("gpbayes", "sklearn")}


def test_declared_dependencies_are_what_the_library_imports():
    """``pip install .`` gives exactly the library's third-party imports; the reproduction's are an extra."""
    core, extras = _declared()
    imported = _library_third_party_imports()
    assert imported == core, (f"imported but not declared: {sorted(imported - core)}; "
                              f"declared but not imported: {sorted(core - imported)}")
    assert not core & {_DIST.get(m, m).lower() for m in FORBIDDEN}
    assert {"matplotlib", "pyyaml", "jsonschema", "scikit-learn", "snakemake", "pandas", "netcdf4"} <= extras[
        "workflow"]
    assert "gpbayes[workflow]" in {r.replace(" ", "") for r in _raw_test_extra()}


def _raw_test_extra():
    import tomllib

    return tomllib.loads((LIBRARY.parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "test"]


def test_workflow_plumbing_lives_in_the_reproduction():
    """Atomic writes, provenance and BLAS pinning are the reproduction's (gpbayes_repro.io / .threads)."""
    import gpbayes.io
    import gpbayes.linalg
    from gpbayes_repro import io, threads

    for name in ("atomic_path", "write_netcdf_atomic", "write_inference_data", "read_inference_data", "provenance"):
        assert not hasattr(gpbayes.io, name) and callable(getattr(io, name))
    assert not hasattr(gpbayes.linalg, "blas_single_thread") and callable(threads.blas_single_thread)
