"""Griffe extension (mkdocstrings, ``extensions:`` in mkdocs.yml): reStructuredText simple tables in
docstrings become Markdown tables, so the API pages show them as tables.

A simple table is three or more lines of ``=`` runs separated by spaces (top, under the header,
bottom); the runs give the columns.  A row whose first cell is blank continues the row above.
A word that overflows a column (wider than its ``=`` run) stays in that column.
"""

from __future__ import annotations

import re

import griffe

_RULE = re.compile(r"^(\s*)(=+)(\s+=+)+\s*$")


def _cuts(rule: str) -> list[int]:
    return [m.start() for m in re.finditer(r"=+", rule)]


def _cells(line: str, starts: list[int]) -> list[str]:
    out, pos = [], starts[0]
    for k, start in enumerate(starts):
        if k == 0:
            continue
        cut = start
        if 0 < cut <= len(line) and line[cut - 1] != " ":  # overflow: cut at the end of the word
            nxt = line.find(" ", cut)
            cut = nxt if nxt != -1 else len(line)
        out.append(line[pos:cut].strip())
        pos = cut
    out.append(line[pos:].strip())
    return out


def convert(text: str) -> str:
    """The docstring with each simple table replaced by a Markdown table (other text unchanged)."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        if not _RULE.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        indent = len(_RULE.match(lines[i]).group(1))
        starts = _cuts(lines[i])
        rules, rows, j = [i], [], i + 1
        while j < len(lines) and len(rules) < 3:
            line = lines[j]
            if _RULE.match(line):
                rules.append(j)
            elif line.strip():
                cells = _cells(line, starts)
                if rows and not cells[0] and len(rules) == 2:
                    rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells)]
                else:
                    rows.append(cells)
            j += 1
        if len(rules) < 3 or not rows:  # not a table after all
            out.append(lines[i])
            i += 1
            continue
        pad = " " * indent
        esc = [[c.replace("|", "\\|") for c in r] for r in rows]
        out += ["", pad + "| " + " | ".join(esc[0]) + " |", pad + "|" + "---|" * len(starts)]
        out += [pad + "| " + " | ".join(r) + " |" for r in esc[1:]] + [""]
        i = j
    return "\n".join(out)


class RstSimpleTables(griffe.Extension):
    """Rewrite the docstring of every loaded object (see the module docstring)."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None and "==" in obj.docstring.value:
            obj.docstring.value = convert(obj.docstring.value)
