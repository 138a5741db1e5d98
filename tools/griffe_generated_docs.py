"""Griffe extension (mkdocstrings, ``extensions:`` in mkdocs.yml): a docstring part that the library
generates at import time shows on the API pages as it does in ``help()``.

``gb.sample``'s docstring lists every method object with its defaults; the list is made from the
registry of ``gpbayes.methods`` when ``gpbayes.api`` is imported (the source holds the placeholder
line ``{method defaults}``).  Griffe reads the source, so this extension puts the generated list in
place of the placeholder (``gpbayes.methods.defaults_doc``).
"""

from __future__ import annotations

import griffe

#: the placeholder line in the source docstrings
PLACEHOLDER = "{method defaults}"


class GeneratedDocstrings(griffe.Extension):
    """Replace the placeholder in every loaded docstring by the list the library generates."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None and PLACEHOLDER in obj.docstring.value:
            from gpbayes.methods import defaults_doc

            obj.docstring.value = obj.docstring.value.replace(PLACEHOLDER + "\n", defaults_doc(indent=0))
