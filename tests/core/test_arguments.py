"""Reading a call's arguments: text or a mapping; anything else is a per-call error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import (
    ToolArgsError,
    ToolCall,
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    open_tool_batch,
    parse_arguments,
    run_tool_calls,
)
from toolnursery._core._json import snapshot
from toolnursery.log import JsonlRecorder, replay_log

OBJECT: dict[str, Any] = {"type": "object"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


def _echo_registry(ran: list[Any]) -> ToolRegistry:
    registry = ToolRegistry()

    async def echo(args: Any, ctx: ToolRunContext) -> str:
        ran.append(args)
        return "ok"

    registry.register(ToolDefinition(name="echo", description="", parameters=OBJECT, execute=echo))
    return registry


@given(st.dictionaries(st.text(), json_values, max_size=4))
def test_a_mapping_parses_to_what_its_json_text_parses_to(value: dict[str, Any]) -> None:
    text = msgspec.json.encode(value).decode()
    assert snapshot(parse_arguments(value)) == snapshot(parse_arguments(text))


def test_text_keeps_its_rules() -> None:
    """B145: '' is {}, JSON is its value, other text is the text itself."""
    assert parse_arguments("") == {}
    assert parse_arguments('{"a": [1]}') == {"a": [1]}
    assert parse_arguments("not json") == "not json"


@pytest.mark.parametrize(
    ("value", "kind"),
    [([1, 2], "an array"), (3, "a number"), (True, "a boolean"), (None, "null"), (2.5, "a number")],
)
def test_a_value_that_is_neither_text_nor_a_mapping_is_refused(value: object, kind: str) -> None:
    with pytest.raises(ToolArgsError) as info:
        parse_arguments(value)  # type: ignore[arg-type]
    assert info.value.code == "INVALID_ARGS"
    assert (
        info.value.message
        == f'invalid arguments: "arguments" must be JSON text or an object, got {kind}'
    )


def test_a_lone_surrogate_in_text_is_refused_with_its_position() -> None:
    with pytest.raises(ToolArgsError) as info:
        parse_arguments('{"path": "a\udc80"}')
    assert "lone surrogate ('\\udc80' at index 11)" in info.value.message


def test_a_lone_surrogate_in_a_mapping_is_refused() -> None:
    with pytest.raises(ToolArgsError, match="lone surrogate"):
        parse_arguments({"path": "\udcff"})


async def test_a_dict_call_runs_with_exactly_the_parsed_value() -> None:
    ran: list[Any] = []
    results = await run_tool_calls(
        _echo_registry(ran),
        [
            ToolCall("a", "echo", {"path": "src", "n": [1, 2]}),
            ToolCall("b", "echo", '{"path": "src", "n": [1, 2]}'),
        ],
    )
    assert [r.is_error for r in results] == [False, False]
    assert ran[0] == ran[1] == {"path": "src", "n": (1, 2)}


BAD: list[object] = [[1, 2], 7, False, None, '{"p": "\udc80"}', {"p": "\udc80"}]


@pytest.mark.parametrize(
    "bad", BAD, ids=["list", "int", "bool", "none", "text-surrogate", "dict-surrogate"]
)
async def test_bad_arguments_after_a_call_that_ran_are_one_error_and_the_batch_goes_on(
    bad: object, tmp_path: Path
) -> None:
    """Issue 10 defects 5 and 6: an earlier call ran, the bad one fails alone, later ones run,
    and the recorded batch holds every call and every result."""
    ran: list[Any] = []
    registry = _echo_registry(ran)
    log = tmp_path / "log.jsonl"
    calls = [
        ToolCall("1", "echo", '{"i": 1}'),
        ToolCall("2", "echo", bad),  # type: ignore[arg-type]
        ToolCall("3", "echo", {"i": 3}),
    ]
    with JsonlRecorder(log) as recorder:
        results = await run_tool_calls(registry, calls, recorder=recorder)
    assert ran == [{"i": 1}, {"i": 3}]
    assert [r.is_error for r in results] == [False, True, False]
    error = results[1]
    assert error.error is not None
    assert (error.error.name, error.error.code) == ("ToolArgsError", "INVALID_ARGS")
    text = error.content[0].text  # type: ignore[union-attr]
    assert text.startswith('Error: invalid arguments: "arguments" ')
    replayed = replay_log(log)
    assert [(c.id, r is not None and r.is_error) for c, r in replayed] == [
        ("1", False),
        ("2", True),
        ("3", False),
    ]


async def test_bad_arguments_in_a_streamed_batch_are_a_per_call_error() -> None:
    ran: list[Any] = []
    async with open_tool_batch(_echo_registry(ran)) as batch:
        batch.submit(ToolCall("1", "echo", "{}"))
        batch.submit(ToolCall("2", "echo", [1]))  # type: ignore[arg-type]
        batch.submit(ToolCall("3", "echo", "{}"))
        batch.close()
        pairs = [(call.id, result.is_error) async for call, result in batch]
    assert pairs == [("1", False), ("2", True), ("3", False)]
    assert len(ran) == 2


async def test_an_aborted_unstarted_call_with_bad_arguments_is_still_logged(tmp_path: Path) -> None:
    ran: list[Any] = []
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder, trio.CancelScope():
        async with open_tool_batch(_echo_registry(ran), recorder=recorder) as batch:
            batch.submit(ToolCall("1", "echo", "{}"))
            async for _ in batch:
                break
            batch.signal.cancel("stop")
            batch.submit(ToolCall("2", "echo", "\udc80"))
            batch.close()
    replayed = replay_log(log)
    assert [c.id for c, _ in replayed] == ["1", "2"]
    assert replayed[1][0].arguments == "\\udc80"


# -- a JSON object cut off at a token limit --------------------------------------------


async def test_a_cut_off_object_tells_the_model_its_arguments_are_not_valid_json() -> None:
    ran: list[Any] = []
    (result,) = await run_tool_calls(_echo_registry(ran), [ToolCall("1", "echo", '{"x": ')])
    assert ran == []
    assert result.error is not None
    assert (result.error.name, result.error.code) == ("ToolArgsError", "INVALID_ARGS")
    assert result.content[0].text == (  # type: ignore[union-attr]
        'Error: invalid arguments: "arguments" is not valid JSON: it ends after 6 characters, '
        "before the object is complete"
    )


@pytest.mark.spec("B145")
def test_other_text_that_is_not_json_is_still_the_text_itself() -> None:
    """Only a cut-off object is refused; malformed text and cut-off non-objects pass on."""
    for text in ("{not json", '{"x" 1}', "[1,", "not json", '"abc'):
        assert parse_arguments(text) == text


@given(st.dictionaries(st.text(), json_values, min_size=1, max_size=4), st.data())
def test_every_cut_off_prefix_of_an_object_is_refused_as_not_json(
    value: dict[str, Any], data: st.DataObject
) -> None:
    text = msgspec.json.encode(value).decode()
    cut = data.draw(st.integers(1, len(text) - 1))
    prefix = " " * data.draw(st.integers(0, 2)) + text[:cut]
    with pytest.raises(ToolArgsError) as info:
        parse_arguments(prefix)
    assert info.value.violations == (
        f'"arguments" is not valid JSON: it ends after {len(prefix)} characters, '
        "before the object is complete",
    )


@pytest.mark.parametrize("text", ['{"a": -', '{"a": 1.', '{"a": 1e+', '{"a": fals', '{"a": "\\u12'])
def test_an_object_cut_off_inside_a_value_is_refused_as_not_json(text: str) -> None:
    with pytest.raises(ToolArgsError, match='"arguments" is not valid JSON: it ends after'):
        parse_arguments(text)
