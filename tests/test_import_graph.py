"""The library's modules import one another without a circle, and each imports on its own.

The graph is read from the source (``ast``): an edge for every ``import`` of a gpbayes module,
at module level or inside a function (a deferred import is still a circle the reader has to keep
in mind, and a module that is only importable after another was imported first).  ``from pkg
import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg`` (its
``__init__``); a submodule's implicit import of its parent package is not an edge.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[1] / "src" / "gpbayes"


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (source file, is a package) for every .py file under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same library it imports anywhere in its source."""
    mods = modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, (path, package) in mods.items():
        here = mod if package else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                edges[mod].update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[:len(here.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    full = f"{target}.{a.name}"
                    if full in mods:
                        edges[mod].add(full)
                    elif target in mods:
                        edges[mod].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, or a module importing itself
    (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in edges[v]:
                    out.append(sorted(comp))
    return out


def test_the_library_s_import_graph_has_no_circle():
    graph = import_graph(LIBRARY)
    assert len(graph) > 60 and "gpbayes.methods.base" in graph["gpbayes.methods.exact"]
    found = cycles(graph)
    assert not found, f"import circles: {found}"


def test_the_reproduction_s_import_graph_has_no_circle():
    """The same of ``gpbayes_repro`` (issue 42: claims <-> final_states shared the gate's constants; now
    ``gpbayes_repro.gates`` holds them)."""
    graph = import_graph(LIBRARY.parent / "gpbayes_repro")
    assert "gpbayes_repro.gates" in graph["gpbayes_repro.final_states"]
    found = cycles(graph)
    assert not found, f"import circles: {found}"


def test_the_check_finds_a_circle(tmp_path):
    """The test above can fail: a package whose modules import each other (one inside a function)."""
    pkg = tmp_path / "gpbayes"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub.c import g\n    return g\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("def g():\n    from ..a import b\n    return b\n")
    (pkg / "d.py").write_text("import gpbayes.a\n")
    found = cycles(import_graph(pkg))
    assert found == [["gpbayes.a", "gpbayes.b", "gpbayes.sub.c"]]
    (pkg / "sub" / "c.py").write_text("def g():\n    return 1\n")
    assert cycles(import_graph(pkg)) == []


def test_every_module_imports_on_its_own_in_a_fresh_interpreter():
    """Each module, first in a new interpreter: none depends on another having been imported before it
    (the deprecated ``gpbayes.inference`` warns, as it should)."""
    names = sorted(modules(LIBRARY))
    code = ("import subprocess, sys\n"
            "bad = []\n"
            "for name in sys.argv[1:]:\n"
            "    r = subprocess.run([sys.executable, '-c', f'import {name}'], capture_output=True, text=True)\n"
            "    if r.returncode:\n"
            "        bad.append((name, r.stderr.strip().splitlines()[-1:]))\n"
            "print(bad)\n"
            "sys.exit(1 if bad else 0)\n")
    res = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(LIBRARY.parent)})
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_old_module_name_still_imports_with_a_deprecation_warning():
    code = ("import warnings\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    import gpbayes.inference as old\n"
            "import gpbayes as gb, gpbayes.methods as new\n"
            "assert any(issubclass(w.category, DeprecationWarning) and 'gpbayes.methods' in str(w.message)\n"
            "           for w in caught), [str(w.message) for w in caught]\n"
            "assert old.NUTS is gb.NUTS is new.exact.NUTS and old.default_method is new.default_method\n"
            "assert old.registry() == new.registry() and old.posterior_groups is new.base.posterior_groups\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(LIBRARY.parent)})
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("first", ["gpbayes.methods", "gpbayes.api", "gpbayes"])
def test_gb_methods_lists_the_aliases_whichever_module_is_imported_first(first):
    """``gpbayes.methods`` is a package and ``gb.methods(model)`` the list of aliases: the package is
    callable, so the name means both whatever was imported first."""
    code = (f"import {first}\nimport numpy as np\nimport gpbayes as gb\nfrom gpbayes import methods\n"
            "import gpbayes.methods as m\n"
            "X = np.linspace(0, 1, 8)[:, None]\nmodel = gb.GPRegressor(X, np.sin(X[:, 0]))\n"
            "assert gb.methods(model) == methods(model) == m(model) == gb.api.methods(model)\n"
            "assert 'nuts' in gb.methods(model) and m.NUTS is gb.NUTS\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(LIBRARY.parent)})
    assert res.returncode == 0, res.stderr
