"""Docstrings become a tool's description and its parameters' descriptions.

Google, Sphinx (reST) and NumPy styles, on ``@tool`` functions and on Struct parameters;
only the summary and the free text after it become the description.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from toolnursery import define_tool, tool


def google(pattern: str, path: str = ".") -> str:
    """Search files for a pattern.

    Reads every file under the path.

    Args:
        pattern: the regular
            expression.
        path: where to look.

    Returns:
        The matching lines.

    Raises:
        ValueError: a bad pattern.
    """
    return ""


def sphinx(pattern: str, path: str = ".") -> str:
    """Search files for a pattern.

    Reads every file under the path.

    :param pattern: the regular
        expression.
    :type pattern: str
    :param path: where to look.
    :returns: The matching lines.
    :raises ValueError: a bad pattern.
    """
    return ""


def numpy(pattern: str, path: str = ".") -> str:
    """Search files for a pattern.

    Reads every file under the path.

    Parameters
    ----------
    pattern : str
        the regular
        expression.
    path : str, optional
        where to look.

    Returns
    -------
    str
        The matching lines.

    Examples
    --------
    >>> numpy("a")
    ''
    """
    return ""


@pytest.mark.parametrize("fn", [google, sphinx, numpy])
def test_docstrings_in_every_style_give_description_and_parameters(fn: Any) -> None:
    definition = tool(fn)
    assert (
        definition.description == "Search files for a pattern.\n\nReads every file under the path."
    )
    props = definition.parameters["properties"]
    assert props["pattern"]["description"] == "the regular\nexpression."
    assert props["path"]["description"] == "where to look."


def test_struct_field_docs_in_numpy_and_sphinx_style() -> None:
    class NumpyArgs(msgspec.Struct, frozen=True):
        """Arguments.

        Attributes
        ----------
        host : str
            the host.
        """

        host: str

    class SphinxArgs(msgspec.Struct, frozen=True):
        """Arguments.

        :ivar host: the host.
        """

        host: str

    for cls in (NumpyArgs, SphinxArgs):
        definition = define_tool(name="t", description="d", parameters=cls, execute=lambda a, c: "")
        assert definition.parameters["properties"]["host"]["description"] == "the host."
