"""The error tree: the messages and codes of the errors results carry.

Reference behaviours B086 (the error itself), B105, B108, B114 and B115.
"""

from __future__ import annotations

from typing import Any

import pytest

from support import call, tool, wire
from toolnursery import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    TOOL_TIMEOUT,
    OutputSchemaError,
    RegistrationError,
    ToolArgsError,
    ToolError,
    ToolNotFoundError,
    ToolRegistry,
    ToolRunContext,
    ToolTimeoutError,
)


@pytest.mark.spec("B086")
def test_tool_not_found_error_message_and_code() -> None:
    """B086: ToolNotFoundError('ghost') is a ToolError with a stable message and code."""
    error = ToolNotFoundError("ghost")
    assert isinstance(error, ToolError)
    assert str(error) == 'unknown tool "ghost"'
    assert (error.name, error.code, error.tool_name) == (
        "ToolNotFoundError",
        "UNKNOWN_TOOL",
        "ghost",
    )


@pytest.mark.spec("B105")
async def test_tool_args_error_from_a_raw_body() -> None:
    """B105/B029: violations joined by '; ' with INVALID_ARGS."""
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        raise ToolArgsError(['missing required property "a"', '"b" must be a number'])

    registry.register(tool(body=body))
    result = await registry.execute(call())
    assert wire(result) == {
        "content": [
            {
                "type": "text",
                "text": 'Error: invalid arguments: missing required property "a"; "b" must be a number',
            }
        ],
        "isError": True,
        "error": {"name": "ToolArgsError", "code": "INVALID_ARGS"},
    }


@pytest.mark.spec("B108")
def test_timeout_error_text_and_code() -> None:
    """B108: ToolTimeoutError(100) → 'tool call timed out after 100ms', TOOL_TIMEOUT."""
    error = ToolTimeoutError(100)
    assert str(error) == "tool call timed out after 100ms"
    assert (error.name, error.code) == ("ToolTimeoutError", "TOOL_TIMEOUT")
    assert str(ToolTimeoutError(2.5)) == "tool call timed out after 2.5ms"


@pytest.mark.spec("B114")
def test_output_schema_error_text_and_code() -> None:
    """B114: violations joined by '; ' behind 'unsupported output schema: '."""
    error = OutputSchemaError(["schema.a is bad", "schema.b is bad"])
    assert str(error) == "unsupported output schema: schema.a is bad; schema.b is bad"
    assert (error.name, error.code, error.violations) == (
        "OutputSchemaError",
        "UNSUPPORTED_SCHEMA",
        ("schema.a is bad", "schema.b is bad"),
    )
    assert isinstance(error, ToolError)
    assert not isinstance(RegistrationError("x"), ToolError)
    assert isinstance(RegistrationError("x"), ValueError)


@pytest.mark.spec("B115")
def test_exported_code_constants() -> None:
    """B115: the three owned codes."""
    assert TOOL_ABORTED == "ABORTED"
    assert TOOL_ABORTED_BEFORE_DISPATCH == "ABORTED_BEFORE_DISPATCH"
    assert TOOL_TIMEOUT == "TOOL_TIMEOUT"
