"""A tool's options are declared once (ToolOptions) and checked once (option_problem)."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest

from toolnursery import (
    RegistrationError,
    ToolDefinition,
    ToolOptionArgs,
    ToolOptions,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    tool,
)


def _body(args: Any, ctx: ToolRunContext) -> str:
    return "ok"


def test_definition_takes_its_four_parts_positionally_and_options_by_keyword() -> None:
    definition = ToolDefinition("t", "d", {"type": "object"}, _body, timeout_ms=5)
    assert (definition.name, definition.description, definition.timeout_ms) == ("t", "d", 5)
    with pytest.raises(TypeError):
        ToolDefinition("t", "d", {}, _body, 5)  # type: ignore[misc]
    params = inspect.signature(ToolDefinition).parameters
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    keyword = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
    assert positional == ["name", "description", "parameters", "execute"]
    assert keyword == [*ToolOptions.__struct_fields__, "validate"]


def test_option_args_mirror_the_options_exactly() -> None:
    """The TypedDict that types define_tool/@tool's keywords has every option, no more."""
    assert set(ToolOptionArgs.__annotations__) == {
        *ToolOptions.__struct_fields__,
        "output",
        "render_output",
        "strict",
    }
    assert ToolOptionArgs.__required_keys__ == frozenset()


def test_option_defaults_live_in_one_place() -> None:
    defaults = ToolOptions()
    defined = define_tool(name="t", description="d", parameters={}, execute=_body)

    @tool
    def decorated() -> str:
        return ""

    raw = ToolDefinition("t", "d", {}, _body)
    for field in ToolOptions.__struct_fields__:
        expected = getattr(defaults, field)
        assert getattr(defined, field) == expected, field
        assert getattr(decorated, field) == expected, field
        assert getattr(raw, field) == expected, field


def test_plain_options_reach_the_definition_from_both_constructors() -> None:
    given: dict[str, Any] = {"timeout_ms": 250, "idempotent": True, "max_concurrency": 2}
    defined = define_tool(name="t", description="d", parameters={}, execute=_body, **given)

    @tool(**given)
    def decorated() -> str:
        return ""

    for key, value in given.items():
        assert getattr(defined, key) == value
        assert getattr(decorated, key) == value


def test_an_unknown_option_is_refused_by_name() -> None:
    with pytest.raises(RegistrationError, match=r"define_tool\(t\): unknown option 'timeout'"):
        define_tool(name="t", description="d", parameters={}, execute=_body, timeout=5)  # type: ignore[call-overload]
    with pytest.raises(RegistrationError, match=r"@tool f: unknown option 'parallel'"):

        @tool(parallel=True)  # type: ignore[call-overload]
        def f() -> str:
            return ""


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("timeout_ms", 0, "timeout_ms must be a positive finite number"),
        ("timeout_ms", 31_536_000_001, "timeout_ms must be at most one year (31536000000 ms)"),
        ("max_concurrency", 0, "max_concurrency must be a positive integer, got 0"),
        ("max_concurrency", True, "max_concurrency must be a positive integer, got True"),
        ("idempotent", 1, "idempotent must be a bool"),
        ("is_concurrency_safe", True, "is_concurrency_safe must be callable"),
        ("present_call", "x", "present_call must be callable"),
        ("present_result", 3, "present_result must be callable"),
        ("concurrency_keys", (), "concurrency_keys must be callable"),
    ],
)
def test_every_entry_point_gives_the_same_check(option: str, value: Any, problem: str) -> None:
    """One check, three doors: the registry, define_tool and @tool say the same thing."""
    with pytest.raises(RegistrationError) as info:
        ToolRegistry().register(ToolDefinition("t", "d", {}, _body, **{option: value}))
    assert str(info.value) == f'tool "t" {problem}'
    with pytest.raises(RegistrationError) as info:
        define_tool(name="t", description="d", parameters={}, execute=_body, **{option: value})
    assert str(info.value) == f"define_tool(t): {problem}"
    with pytest.raises(RegistrationError) as info:
        tool(name="t", **{option: value})(lambda: "")
    assert str(info.value) == f"@tool t: {problem}"


def test_options_struct_is_keyword_only_and_frozen() -> None:
    with pytest.raises(TypeError):
        ToolOptions(5)  # type: ignore[misc]
    options = ToolOptions(timeout_ms=5)
    with pytest.raises(AttributeError):
        options.timeout_ms = 6  # type: ignore[misc]
    assert msgspec.structs.replace(options, idempotent=True).idempotent is True
