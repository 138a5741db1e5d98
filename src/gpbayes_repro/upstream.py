"""What committed results were computed from: a hash of everything upstream of them, and what changed since.

The decide tier's outputs are committed (``benchmarks/results/decide_scale/``) so a reader
needs no cluster to see its verdicts.  As showyourwork keys its cached rules, they are keyed
by the files upstream of them -- the library and reproduction code (``src/``), the workflow
(``workflow/``), the configuration (``config/``) and the vendored data (``data/`` less
``data/processed/``) -- hashed per file with SHA-256, less the modules that only report on
finished runs (``REPORTING_ONLY``).  Each Python file is also recorded by its syntax
tree without docstrings (:func:`code_fingerprint`), so an edit to a comment, a docstring or
the layout -- which cannot change a number -- leaves committed results fresh; any change to
what the code does (a name, a constant, a statement) makes them stale.  :func:`snapshot` records them
beside the committed outputs (``UPSTREAM.json``); :func:`compare` tells a later run whether
they still hold and, if not, names the files that changed.  A default run reads the
committed outputs onto the claims page only while they hold, and otherwise shows them as
stale with what changed: never silently shown, never silently recomputed.

``python -m gpbayes_repro.upstream snapshot DIR`` writes ``DIR/UPSTREAM.json`` for the
working tree; ``python -m gpbayes_repro.upstream check DIR`` prints what changed.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
from pathlib import Path

__all__ = ["COMPONENTS", "REPORTING_ONLY", "code_fingerprint", "file_hashes", "snapshot", "compare", "main"]

#: the parts of the tree upstream of a workflow result, each a directory and the patterns it holds
COMPONENTS = {
    "code": ("src", ("*.py", "*.yaml")),
    "workflow": ("workflow", ("*.smk", "Snakefile", "*.py", "*.yaml", "*.csv", "*.sh")),
    "config": ("config", ("*.yaml",)),
    "data": ("data", ("*",)),
}
#: never upstream: generated or cached files inside those directories
_SKIP_PARTS = {"__pycache__", "processed", ".snakemake", "*.egg-info"}
#: never upstream of a claims file: modules that only read a finished run's files, simulate the coverage
#: table or write the docs' generated blocks.  No job that computes a result imports them (the claims page's
#: renderer, ``workflow/scripts/claims_report.py``, reads ``upstream`` to mark stale files: it is downstream);
#: ``tests/test_upstream.py`` checks that no other module or workflow file imports them.
REPORTING_ONLY = frozenset({
    "src/gpbayes_repro/upstream.py", "src/gpbayes_repro/verdict_table.py", "src/gpbayes_repro/coverage.py",
    "src/gpbayes_repro/run_profile.py", "src/gpbayes_repro/rule_profile.py", "src/gpbayes_repro/ops_profile.py",
    "src/gpbayes_repro/run_facts.py",
})
FILE = "UPSTREAM.json"


def _skip(rel: Path) -> bool:
    return any(p in _SKIP_PARTS or p.endswith(".egg-info") for p in rel.parts) or rel.as_posix() in REPORTING_ONLY


def code_fingerprint(source: str) -> bytes:
    """What a Python file does, without what it only says: its syntax tree with docstrings removed.

    ``ast.parse`` drops comments and layout; the first string statement of the module and of each
    class and function body (its docstring) is dropped here.  Every other node -- names, constants,
    operators, statement order -- is kept, with no line numbers.  The one way a docstring reaches a
    number is a program that reads ``__doc__`` into its output; no module upstream of a result does
    (only the command-line descriptions of the ``REPORTING_ONLY`` modules and ``gb.sample``'s help
    text read it; ``tests/test_upstream.py`` checks).  A file that does not parse is hashed as bytes.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return b"bytes\0" + source.encode()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return b"ast\0" + ast.dump(tree, annotate_fields=False, include_attributes=False).encode()


def _python() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def file_hashes(root=".", fingerprints: bool = False) -> dict[str, dict[str, str]]:
    """``component -> {relative path: sha256 of its bytes}`` for every upstream file under ``root``.

    With ``fingerprints`` the Python files are hashed by :func:`code_fingerprint` instead (the
    syntax tree depends on the Python version that parsed it: the snapshot records which).
    """
    root = Path(root)
    out: dict[str, dict[str, str]] = {}
    for comp, (sub, patterns) in COMPONENTS.items():
        files = {}
        base = root / sub
        for pat in patterns:
            for path in base.rglob(pat) if base.is_dir() else []:
                rel = path.relative_to(root)
                if not (path.is_file() and not _skip(rel)):
                    continue
                if fingerprints:
                    if path.suffix != ".py":
                        continue
                    data = code_fingerprint(path.read_bytes().decode("utf-8"))
                else:
                    data = path.read_bytes()
                files[rel.as_posix()] = hashlib.sha256(data).hexdigest()
        out[comp] = dict(sorted(files.items()))
    return out


def _digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for k, v in files.items():
        h.update(f"{k}\0{v}\n".encode())
    return h.hexdigest()


def snapshot(directory, root=".", **extra) -> Path:
    """Write ``directory/UPSTREAM.json``: per component its digest and its files' hashes, plus ``extra``.

    Beside the byte hashes it records the Python files' code fingerprints and the Python version
    that made them (``code_fingerprints``).
    """
    from gpbayes_repro.io import atomic_path

    files = file_hashes(root)
    prints = file_hashes(root, fingerprints=True)
    doc = {"components": {c: {"digest": _digest(f), "files": f} for c, f in files.items()},
           "code_fingerprints": {"python": _python(),
                                 "files": {k: v for comp in prints.values() for k, v in comp.items()}},
           **extra}
    path = Path(directory) / FILE
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def compare(directory, root=".") -> dict:
    """``{"fresh": bool, "changed": {component: [files added, removed or changed]}, "recorded": bool}``.

    A file is unchanged when its bytes are, or -- a Python file, under the Python version that
    made the snapshot -- when its code fingerprint is (a docstring or comment edit).  Without an
    ``UPSTREAM.json`` the outputs are not fresh (``recorded`` False): nothing says what they were
    computed from.
    """
    path = Path(directory) / FILE
    if not path.is_file():
        return {"fresh": False, "recorded": False, "changed": {}}
    doc = json.loads(path.read_text())
    old = doc["components"]
    now = file_hashes(root)
    recorded_prints = doc.get("code_fingerprints") or {}
    same_python = recorded_prints.get("python") == _python()
    old_prints = recorded_prints.get("files", {}) if same_python else {}
    now_prints = None
    changed = {}
    for comp, files in now.items():
        before = (old.get(comp) or {}).get("files", {})
        diff = []
        for k in sorted(set(files) | set(before)):
            if files.get(k) == before.get(k):
                continue
            if k in files and k in before and k in old_prints:
                if now_prints is None:
                    now_prints = {f: h for c in file_hashes(root, fingerprints=True).values() for f, h in c.items()}
                if now_prints.get(k) == old_prints[k]:
                    continue
            diff.append(k)
        if diff:
            changed[comp] = diff
    return {"fresh": not changed, "recorded": True, "changed": changed}


def describe(result: dict, limit: int = 6) -> str:
    """One sentence for the claims page: fresh, or stale with what changed."""
    if result["fresh"]:
        return "computed from the current code, workflow, configuration and data"
    if not result["recorded"]:
        return "stale: no record of what they were computed from"
    parts = []
    for comp, files in result["changed"].items():
        shown = ", ".join(files[:limit]) + (f" and {len(files) - limit} more" if len(files) > limit else "")
        parts.append(f"{comp} ({len(files)} files: {shown})")
    return "stale: changed since they were computed -- " + "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpbayes_repro.upstream", description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["snapshot", "check"])
    ap.add_argument("directory", help="the committed outputs' directory (e.g. benchmarks/results/decide_scale)")
    ap.add_argument("--root", default=".", help="the tree whose files are upstream (default: here)")
    args = ap.parse_args(argv)
    if args.action == "snapshot":
        print(snapshot(args.directory, args.root))
        return 0
    res = compare(args.directory, args.root)
    print(describe(res))
    return 0 if res["fresh"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
