"""The documentation site: every gallery example runs and draws its figure, the generated pages are current,
every page is in the navigation, the code on the pages runs, and the links between pages resolve.

The site itself is built in strict mode by ``.ci/run`` (``mkdocs build --strict``).
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "tools"))

import gallery  # noqa: E402

pytest.importorskip("arviz")
pytest.importorskip("matplotlib")


def _blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


REQUIRED_EXAMPLES = {"classification_la_vs_ep", "regression_nuts_vs_amis", "cox_process_slice", "sparse_classifier",
                     "supervised_gplvm", "own_kernel", "own_likelihood"}


def test_the_gallery_has_the_examples_the_issue_asks_for():
    assert REQUIRED_EXAMPLES <= {s.stem for s in gallery.scripts()}


@pytest.mark.parametrize("script", gallery.scripts(), ids=lambda p: p.stem)
def test_every_gallery_example_runs_and_writes_its_figure(script, tmp_path, monkeypatch):
    """Run in this process (the imports are shared, which saves seconds per example); the figure is a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setattr(sys, "argv", [str(script), str(tmp_path)])
    monkeypatch.syspath_prepend(str(script.parent))
    runpy.run_path(str(script), run_name="__main__")
    png = tmp_path / f"{script.stem}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    # the site's figure (docs/examples/<name>.png, git-ignored): `mkdocs build` runs only the scripts whose
    # figure is missing or older than the script (tools/gallery.py, run_stale), so keeping this run's figure
    # spares .ci/run running every example a second time for the site
    dest = script.with_suffix(".png")
    if not dest.exists() or dest.stat().st_mtime < script.stat().st_mtime:
        try:
            tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
            shutil.copyfile(png, tmp)
            os.replace(tmp, dest)
        except OSError:  # a read-only checkout: mkdocs runs the script itself
            pass
    import matplotlib.pyplot as plt

    plt.close("all")


def test_generated_pages_are_current():
    """The gallery's pages show the scripts as they are; the API pages list every module."""
    for tool in ("gallery.py", "api_reference.py"):
        res = subprocess.run([sys.executable, str(ROOT / "tools" / tool), "--check"], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


def test_every_page_is_in_the_navigation():
    nav = set(re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), flags=re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages <= nav, sorted(pages - nav)
    assert nav <= pages, sorted(nav - pages)


@pytest.mark.parametrize("page", ["index.md", "workflow.md"])
def test_the_python_blocks_of_the_pages_run(page):
    """(The user guide's blocks run in tests/test_api.py, the gallery's scripts above.)"""
    code = _blocks(DOCS / page)
    assert code, page
    namespace: dict = {}
    for i, block in enumerate(code):
        exec(compile(block, f"docs/{page}:python-block-{i}", "exec"), namespace)


def test_links_between_pages_resolve():
    broken = []
    for page in DOCS.rglob("*.md"):
        for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", link) or link.endswith(".png"):
                continue
            if not (page.parent / link).exists():
                broken.append(f"{page.relative_to(DOCS)} -> {link}")
    assert not broken, broken


def test_rst_simple_tables_in_docstrings_become_markdown_tables():
    """tools/griffe_rst.py: columns from the rule, continuation rows joined, an overflowing word kept in its cell."""
    import griffe_rst

    doc = ("Intro.\n\n"
           "=====  =====  ====\n"
           "name   kind   what\n"
           "=====  =====  ====\n"
           "``a``  x      one\n"
           "              more\n"
           "``longer`` y  two | three\n"
           "=====  =====  ====\n\n"
           "After.")
    assert griffe_rst.convert(doc) == ("Intro.\n\n\n"
                                       "| name | kind | what |\n|---|---|---|\n"
                                       "| ``a`` | x | one more |\n"
                                       "| ``longer`` | y | two \\| three |\n\n\nAfter.")
    assert griffe_rst.convert("a == b\n") == "a == b\n"
