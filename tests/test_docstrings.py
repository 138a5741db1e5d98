"""Docstring coverage: every public class, NamedTuple, function and method of gpbayes has a docstring,
except the names listed in tests/docstring_allowlist.txt, a list that may only shrink.

Counting rules: tools/docstring_coverage.py (read from the source; the text dataclasses and NamedTuples
invent for an undocumented class does not count).  To see the figures: ``python tools/docstring_coverage.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import docstring_coverage as cov  # noqa: E402


def allowlist() -> set[str]:
    lines = cov.ALLOWLIST.read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_every_public_name_outside_the_allowlist_has_a_docstring():
    missing = set(cov.undocumented(cov.inventory())) - allowlist()
    assert not missing, f"public names without a docstring: {sorted(missing)}"


def test_the_allowlist_only_shrinks():
    """An allowlisted name that is now documented, renamed or removed must leave the list."""
    inv = cov.inventory()
    stale = allowlist() - set(cov.undocumented(inv))
    assert not stale, f"remove from {cov.ALLOWLIST.name}: {sorted(stale)}"


def test_the_counter_sees_what_it_should(tmp_path, monkeypatch):
    """A NamedTuple's generated doc and a dataclass's generated signature do not count as docstrings."""
    pkg = tmp_path / "gpbayes"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "import dataclasses\nfrom typing import NamedTuple\n__all__ = ['S', 'D', 'f', 'g']\n"
        "class S(NamedTuple):\n    x: float\n"
        "@dataclasses.dataclass\nclass D:\n    '''A documented dataclass.'''\n    y: int\n"
        "    def run(self):\n        return 1\n    def _private(self):\n        pass\n"
        "def f():\n    '''Documented.'''\ndef g():\n    pass\ndef h():\n    pass\n")
    (pkg / "_hidden.py").write_text("def k():\n    pass\n")
    monkeypatch.setattr(cov, "LIBRARY", pkg)
    inv = cov.inventory()
    assert cov.undocumented(inv) == ["gpbayes.m.D.run", "gpbayes.m.S", "gpbayes.m.g"]
    assert cov.figures(inv) == {"class": (1, 2), "namedtuple": (0, 1), "function": (1, 2), "method": (0, 1)}


def _method_classes():
    from gpbayes import methods

    seen = []
    for cls, _ in methods.registry().values():
        # the library's own methods (a test file may register its own sampler in the same process)
        if cls not in seen and cls.__module__.startswith("gpbayes."):
            seen.append(cls)
    return seen


def test_every_option_of_every_method_is_documented_with_its_default():
    """Issue 25 item 4: ``gb.sample``'s docstring lists every field of every method object with its default
    (AMISToMAMIS: its own fields, beside "MAMIS's fields"), and each method's own docstring explains each field
    in its Parameters section."""
    import dataclasses
    import re

    import gpbayes as gb

    sample_doc = " ".join(gb.sample.__doc__.split())
    missing, unexplained = [], []
    for cls in _method_classes():
        assert f"``{cls.__name__}``" in sample_doc, cls.__name__
        inherited = {f.name for c in cls.__mro__[1:] if dataclasses.is_dataclass(c) for f in dataclasses.fields(c)}
        doc = cls.__doc__ or ""
        params = doc.split("Parameters\n    ----------", 1)[1] if "Parameters\n    ----------" in doc else ""
        named = set(re.findall(r"^    (\w+(?:, \w+)*)(?: :|$)", params, flags=re.M))
        named = {n for group in named for n in group.split(", ")}
        for f in dataclasses.fields(cls):
            if f.name not in inherited and f"``{f.name}={f.default!r}``" not in sample_doc:
                missing.append(f"{cls.__name__}.{f.name}={f.default!r}")
            if f.name not in named:
                unexplained.append(f"{cls.__name__}.{f.name}")
    assert not missing, f"gb.sample's docstring lacks: {missing}"
    assert not unexplained, f"no Parameters entry in the method's docstring: {unexplained}"


def test_sample_promises_bit_for_bit_on_one_machine_only():
    import gpbayes as gb

    doc = " ".join(gb.sample.__doc__.split())
    assert "any machine" not in doc and "bit for bit on the same machine" in doc
    for model in ("GPRegressor", "GPClassifier", "PoissonGP", "SparseGPClassifier", "GPLVMRegressor"):
        assert model in doc, model
