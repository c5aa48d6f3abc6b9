"""A griffe extension for the docs build: Sphinx roles in docstrings become code spans.

The library's docstrings are Google style, with Sphinx cross-reference roles
(``:func:`define_tool```, ``:class:`~toolnursery.ToolRegistry```) that read well in
``help()``. mkdocstrings does not interpret those roles; this extension, loaded by
``mkdocs.yml``, turns each into a plain code span naming the target (its last component
for a ``~`` target) before the docstring is rendered.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|data|attr|exc|mod|obj|const):`(~?)([^`]+)`")


def _code_span(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class SphinxRoles(griffe.Extension):
    """Rewrite ``:role:`target``` to ```target``` in every loaded docstring."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_code_span, obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self.on_object(obj=pkg, loader=loader)
