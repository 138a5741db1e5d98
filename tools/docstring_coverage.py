"""Docstring coverage of gpbayes's public names, read from the source (no import).

    python tools/docstring_coverage.py                      # the figures and every undocumented name
    python tools/docstring_coverage.py --write-allowlist    # rewrite tests/docstring_allowlist.txt

Public: a module whose dotted path has no part starting with ``_``; in it the names
listed in ``__all__`` (or, without ``__all__``, every top-level class and function
whose name does not start with ``_``); in a public class every method and property
defined in its body whose name does not start with ``_``.  A docstring is the
source's own (``ast.get_docstring``): the text dataclasses and NamedTuples make up
for an undocumented class does not count.  NamedTuples are counted with the
classes and also on their own.  ``tests/test_docstrings.py`` fails when a public
name outside the allowlist has no docstring, or when an allowlisted one gained
one (so the list only shrinks).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "src" / "gpbayes"
ALLOWLIST = ROOT / "tests" / "docstring_allowlist.txt"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(LIBRARY.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:
                return None
    return None


def _is_namedtuple(node: ast.ClassDef) -> bool:
    return any((getattr(b, "id", None) or getattr(b, "attr", None)) == "NamedTuple" for b in node.bases)


def inventory() -> list[tuple[str, str, bool]]:
    """(qualified name, kind, has docstring) of every public name; kind: class, namedtuple, function, method."""
    out = []
    for path in sorted(LIBRARY.rglob("*.py")):
        mod = _module_name(path)
        if any(p.startswith("_") for p in mod.split(".")):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        exported = _all(tree)
        for node in tree.body:
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            public = node.name in exported if exported is not None else not node.name.startswith("_")
            if not public:
                continue
            name = f"{mod}.{node.name}"
            if isinstance(node, ast.ClassDef):
                kind = "namedtuple" if _is_namedtuple(node) else "class"
                out.append((name, kind, ast.get_docstring(node) is not None))
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
                        out.append((f"{name}.{item.name}", "method", ast.get_docstring(item) is not None))
            else:
                out.append((name, "function", ast.get_docstring(node) is not None))
    return out


def figures(inv) -> dict[str, tuple[int, int]]:
    """kind -> (documented, total); 'class' includes the NamedTuples."""
    out = {}
    for kind in ("class", "namedtuple", "function", "method"):
        rows = [r for r in inv if r[1] == kind or (kind == "class" and r[1] == "namedtuple")]
        out[kind] = (sum(r[2] for r in rows), len(rows))
    return out


def undocumented(inv) -> list[str]:
    return sorted(name for name, _, has in inv if not has)


def main(argv: list[str]) -> int:
    inv = inventory()
    for kind, (done, total) in figures(inv).items():
        print(f"{kind:10s} {done:4d} of {total:4d} documented")
    missing = undocumented(inv)
    if "--write-allowlist" in argv:
        ALLOWLIST.write_text("# public names of gpbayes without a docstring (tools/docstring_coverage.py); "
                             "the list may only shrink\n" + "".join(f"{n}\n" for n in missing))
    else:
        print("\n".join(missing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
