"""Write docs/api.md, the API reference, from the docstrings of gpbayes's public names.

    python tools/api_reference.py          # rewrite docs/api.md
    python tools/api_reference.py --check  # exit 1 if docs/api.md is out of date (tests/test_api.py does this)

Plain Markdown generated with ``inspect``: no documentation build step, and a
test keeps the file equal to what the docstrings say.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import gpbayes

OUT = Path(__file__).resolve().parents[1] / "docs" / "api.md"
MODULES = ("kernels", "priors", "likelihoods")


def _entry(name: str, obj) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        sig = ""
    doc = inspect.getdoc(obj) or ""
    return f"### `{name}{sig}`\n\n```text\n{doc}\n```\n"


def render() -> str:
    parts = ["# gpbayes API reference\n",
             "Generated from the docstrings by `tools/api_reference.py`; do not edit by hand.\n",
             "## `gpbayes` (import gpbayes as gb)\n", "```text\n" + inspect.getdoc(gpbayes.api) + "\n```\n"]
    for name in gpbayes.__all__:
        obj = getattr(gpbayes, name)
        if inspect.ismodule(obj):
            continue
        parts.append(_entry(f"gb.{name}", obj))
    for mod in MODULES:
        m = getattr(gpbayes, mod)
        parts.append(f"## `gpbayes.{mod}`\n")
        parts.append("```text\n" + (inspect.getdoc(m) or "") + "\n```\n")
        for name in getattr(m, "__all__", []):
            parts.append(_entry(f"gb.{mod}.{name}", getattr(m, name)))
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: run python tools/api_reference.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
