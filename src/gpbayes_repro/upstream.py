"""What committed results were computed from: a hash of everything upstream of them, and what changed since.

The decide tier's outputs are committed (``benchmarks/results/decide_scale/``) so a reader
needs no cluster to see its verdicts.  As showyourwork keys its cached rules, they are keyed
by the files upstream of them -- the library and reproduction code (``src/``), the workflow
(``workflow/``), the configuration (``config/``) and the vendored data (``data/`` less
``data/processed/``) -- hashed per file with SHA-256, less the modules that only report on
finished runs (``REPORTING_ONLY``).  :func:`snapshot` records them
beside the committed outputs (``UPSTREAM.json``); :func:`compare` tells a later run whether
they still hold and, if not, names the files that changed.  A default run reads the
committed outputs onto the claims page only while they hold, and otherwise shows them as
stale with what changed: never silently shown, never silently recomputed.

``python -m gpbayes_repro.upstream snapshot DIR`` writes ``DIR/UPSTREAM.json`` for the
working tree; ``python -m gpbayes_repro.upstream check DIR`` prints what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

__all__ = ["COMPONENTS", "REPORTING_ONLY", "file_hashes", "snapshot", "compare", "main"]

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


def file_hashes(root=".") -> dict[str, dict[str, str]]:
    """``component -> {relative path: sha256}`` for every upstream file under ``root``."""
    root = Path(root)
    out: dict[str, dict[str, str]] = {}
    for comp, (sub, patterns) in COMPONENTS.items():
        files = {}
        base = root / sub
        for pat in patterns:
            for path in base.rglob(pat) if base.is_dir() else []:
                rel = path.relative_to(root)
                if path.is_file() and not _skip(rel):
                    files[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        out[comp] = dict(sorted(files.items()))
    return out


def _digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for k, v in files.items():
        h.update(f"{k}\0{v}\n".encode())
    return h.hexdigest()


def snapshot(directory, root=".", **extra) -> Path:
    """Write ``directory/UPSTREAM.json``: per component its digest and its files' hashes, plus ``extra``."""
    from gpbayes_repro.io import atomic_path

    files = file_hashes(root)
    doc = {"components": {c: {"digest": _digest(f), "files": f} for c, f in files.items()}, **extra}
    path = Path(directory) / FILE
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def compare(directory, root=".") -> dict:
    """``{"fresh": bool, "changed": {component: [files added, removed or changed]}, "recorded": bool}``.

    Without an ``UPSTREAM.json`` the outputs are not fresh (``recorded`` False): nothing says what
    they were computed from.
    """
    path = Path(directory) / FILE
    if not path.is_file():
        return {"fresh": False, "recorded": False, "changed": {}}
    old = json.loads(path.read_text())["components"]
    now = file_hashes(root)
    changed = {}
    for comp, files in now.items():
        before = (old.get(comp) or {}).get("files", {})
        diff = sorted({k for k in set(files) | set(before) if files.get(k) != before.get(k)})
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
