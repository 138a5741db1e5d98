"""MkDocs hook (``hooks:`` in mkdocs.yml): make the gallery's figures before the build.

Runs the scripts of docs/examples/ whose figure is missing or older than the
script (``tools/gallery.py``), so ``mkdocs build --strict`` alone gives a site
whose every example page shows its figure.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gallery  # noqa: E402


def on_pre_build(config, **kwargs):
    ran = gallery.run_stale()
    if ran:
        print(f"gallery: ran {', '.join(ran)}", file=sys.stderr)


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|ref):<code>~?([^<]*)</code>")


def on_page_content(html, **kwargs):
    """Docstrings cite names with reStructuredText roles (:class:`Chain`); show the name as code."""
    html = _ROLE.sub(lambda m: f"<code>{m.group(1)}</code>", html)
    # a reST literal-block marker: "::" alone before a code block, or "text::" ending a paragraph
    return html.replace("<p>::</p>", "").replace("::</p>", ":</p>")
