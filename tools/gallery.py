"""The examples gallery: run the scripts of docs/examples/ and write their pages.

    python tools/gallery.py          # rewrite docs/examples/index.md and one page per script
    python tools/gallery.py --check  # exit 1 if the pages differ from the scripts (tests/test_docs.py)
    python tools/gallery.py --run    # run every script whose figure is missing or older than it

Each example is a plain script, ``docs/examples/<name>.py``: its docstring's first
line is the title, the rest the text; run as ``python <name>.py [out_dir]`` it
writes ``<out_dir>/<name>.png`` (default: beside itself).  Its page shows the text,
the figure and the code.  ``mkdocs build`` runs the stale scripts first (the hook
in ``tools/mkdocs_hooks.py``); ``tests/test_docs.py`` runs every script and keeps its
figure there, so a build after the tests (``.ci/run``) runs none of them again.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def scripts() -> list[Path]:
    """The gallery's scripts, in name order (files starting with ``_`` are helpers)."""
    return sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def page(script: Path) -> str:
    doc = ast.get_docstring(ast.parse(script.read_text())) or script.stem
    title, _, body = doc.partition("\n")
    code = script.read_text().split('"""', 2)[2].strip("\n")
    return (f"# {title.strip().rstrip('.')}\n\n{body.strip()}\n\n![{script.stem}]({script.stem}.png)\n\n"
            f"Run it: `python docs/examples/{script.name}` (writes `{script.stem}.png` beside it).\n\n"
            f"```python\n{code}\n```\n")


def pages() -> dict[Path, str]:
    out = {s.with_suffix(".md"): page(s) for s in scripts()}
    lines = ["# Examples\n",
             "Each example is a script in `docs/examples/`, run by the test suite (`tests/test_docs.py`) at the "
             "sizes shown; its figure is made when the site is built. The sizes are small so that they run in "
             "seconds: raise `draws` and `chains` for real work.\n"]
    for s in scripts():
        title = page(s).splitlines()[0][2:]
        lines.append(f"- [{title}]({s.stem}.md)")
    out[EXAMPLES / "index.md"] = "\n".join(lines) + "\n"
    return out


def run(script: Path, out_dir: Path | None = None) -> subprocess.CompletedProcess:
    """Run one example in a fresh interpreter (figure to ``out_dir``, default beside the script)."""
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    args = [sys.executable, str(script)] + ([str(out_dir)] if out_dir is not None else [])
    return subprocess.run(args, cwd=script.parent, capture_output=True, text=True, env=env)


def run_stale() -> list[str]:
    """Run the scripts whose figure is missing or older than the script; the names run."""
    done = []
    for s in scripts():
        png = s.with_suffix(".png")
        if not png.exists() or png.stat().st_mtime < s.stat().st_mtime:
            res = run(s)
            if res.returncode != 0:
                raise RuntimeError(f"{s.name} failed:\n{res.stderr[-3000:]}")
            done.append(s.name)
    return done


def main(argv: list[str]) -> int:
    want = pages()
    if "--check" in argv:
        stale = [str(p) for p, t in want.items() if not p.exists() or p.read_text() != t]
        stale += [str(p) for p in EXAMPLES.glob("*.md") if p not in want]
        if stale:
            print(f"out of date: {stale}: run python tools/gallery.py", file=sys.stderr)
            return 1
        return 0
    if "--run" in argv:
        print("ran", run_stale())
        return 0
    for p, text in want.items():
        p.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
