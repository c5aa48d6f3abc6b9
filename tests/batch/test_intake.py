"""A batch's intake: each call's arguments read once, and what is decided without the
registry (a repeated call id, arguments that cannot be arguments, the batch id).

The helpers are checked on their own; reading the arguments is checked through
``run_tool_calls``, as the classifier and the body see them.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

import pytest
import trio
import trio.testing

from support import code, registry_with, text, tool
from toolnursery import ToolCall, ToolRunContext, open_tool_batch, run_tool_calls
from toolnursery._machine._intake import check_batch_id, duplicate, loggable, new_batch_id
from toolnursery.log import RecorderEvent, ToolCallEvent


class Recorder:
    def __init__(self) -> None:
        self.events: list[RecorderEvent] = []

    def record(self, event: RecorderEvent) -> None:
        self.events.append(event)

    def calls(self) -> list[ToolCall]:
        return [event.call for event in self.events if isinstance(event, ToolCallEvent)]


def watching_tool() -> tuple[Any, list[tuple[str, Any]]]:
    """A parallel tool that notes what its classifier and its body were given."""
    seen: list[tuple[str, Any]] = []

    def classify(args: Any) -> bool:
        seen.append(("classifier", args))
        return True

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(("body", args))
        return "ran"

    # validate=False: the body sees what the parsing made, a raw string or a list too
    return tool("watch", body, is_concurrency_safe=classify, validate=False), seen


# -- the helpers --------------------------------------------------------------------------


def test_a_duplicate_result_names_the_repeated_id() -> None:
    result = duplicate('c"1')
    assert result.is_error
    assert text(result) == 'Error: duplicate tool call id "c"1" in this batch'
    assert result.error is not None
    assert (result.error.name, result.error.code) == ("DuplicateCallIdError", "DUPLICATE_CALL_ID")


@pytest.mark.parametrize("good", ["b", "0" * 32, "a resumed batch"])
def test_check_batch_id_returns_a_non_empty_string(good: str) -> None:
    assert check_batch_id(good) is good


@pytest.mark.parametrize("bad", ["", None, 7, b"id", type("Text", (str,), {})("id")])
def test_check_batch_id_refuses_anything_else(bad: object) -> None:
    with pytest.raises(ValueError, match="batch_id must be a non-empty string, got"):
        check_batch_id(bad)


def test_new_batch_ids_are_128_random_bits_in_hex() -> None:
    ids = {new_batch_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{32}", batch_id) for batch_id in ids)
    # Leading zero digits are kept: the length never varies.
    assert {len(batch_id) for batch_id in ids} == {32}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_draws_other_batch_ids() -> None:
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.write(write, new_batch_id().encode())
        os._exit(0)
    os.close(write)
    mine = new_batch_id()
    with os.fdopen(read, "rb") as pipe:
        theirs = pipe.read().decode()
    os.waitpid(pid, 0)
    assert re.fullmatch(r"[0-9a-f]{32}", theirs)
    assert theirs != mine


def test_loggable_keeps_a_call_whose_arguments_a_log_can_hold() -> None:
    for arguments in ('{"a": 1}', "not json", {"a": [1, 2]}):
        call = ToolCall("c1", "t", arguments)
        assert loggable(call) is call


@pytest.mark.parametrize(
    ("arguments", "logged"),
    [
        (42, "42"),
        (["a"], "['a']"),
        ("lone \udcff", "lone \\udcff"),
        ({"k": "\udcff"}, "{'k': '\\udcff'}"),
    ],
)
def test_loggable_replaces_arguments_a_log_cannot_hold(arguments: Any, logged: str) -> None:
    call = ToolCall("c1", "t", arguments)
    safe = loggable(call)
    assert (safe.id, safe.name, safe.arguments) == ("c1", "t", logged)
    safe.arguments.encode("utf-8")  # valid Unicode text now


# -- the arguments, read once ---------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments", ['{"k": [1, {"z": 2.5}], "s": "x"}', {"k": [1, {"z": 2.5}], "s": "x"}]
)
async def test_the_classifier_and_the_body_see_one_frozen_value(arguments: Any) -> None:
    definition, seen = watching_tool()
    (result,) = await run_tool_calls(
        registry_with(definition), [ToolCall("c1", "watch", arguments)]
    )
    assert text(result) == "ran"
    (who_classified, classified), (who_ran, ran) = seen
    assert (who_classified, who_ran) == ("classifier", "body")
    assert classified is ran
    assert ran == {"k": (1, {"z": 2.5}), "s": "x"}
    with pytest.raises(TypeError):
        ran["k"] = 1
    assert isinstance(ran["k"], tuple)
    with pytest.raises(TypeError):
        ran["k"][1]["z"] = 0


async def test_a_callers_mapping_is_snapshotted_when_the_call_is_read() -> None:
    gate = trio.Event()
    seen: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(dict(args))
        await gate.wait()
        seen.append(dict(args))
        return "ran"

    inner = [1]
    arguments = {"inner": inner}
    async with open_tool_batch(registry_with(tool("hold", body))) as batch:
        batch.submit(ToolCall("c1", "hold", arguments))
        await trio.testing.wait_all_tasks_blocked()
        inner.append(2)  # the caller changes its value while the body runs
        arguments["new"] = True
        gate.set()
    assert seen == [{"inner": (1,)}, {"inner": (1,)}]


@pytest.mark.parametrize(("text_in", "value"), [("", {}), ("{}", {}), ("[1, 2]", (1, 2))])
async def test_text_arguments_are_parsed(text_in: str, value: Any) -> None:
    definition, seen = watching_tool()
    await run_tool_calls(registry_with(definition), [ToolCall("c1", "watch", text_in)])
    assert seen[-1] == ("body", value)


async def test_every_call_without_arguments_reads_an_equal_empty_value() -> None:
    definition, seen = watching_tool()
    calls = [ToolCall(f"c{i}", "watch", text_in) for i, text_in in enumerate(("", "{}", "{ }"))]
    await run_tool_calls(registry_with(definition), calls)
    bodies = [args for who, args in seen if who == "body"]
    assert bodies == [{}, {}, {}]
    for args in bodies:
        with pytest.raises(TypeError):
            args["x"] = 1


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (42, '"arguments" must be JSON text or an object, got a number'),
        ("\udcff", '"arguments" holds a lone surrogate'),
    ],
)
async def test_arguments_that_cannot_be_arguments_never_reach_the_tool(
    arguments: Any, why: str
) -> None:
    definition, seen = watching_tool()
    recorder = Recorder()
    (result,) = await run_tool_calls(
        registry_with(definition), [ToolCall("c1", "watch", arguments)], recorder=recorder
    )
    assert seen == []  # neither the classifier nor the body
    assert code(result) == "INVALID_ARGS"
    assert text(result).startswith("Error: invalid arguments: " + why)
    (logged,) = recorder.calls()
    assert logged.arguments == loggable(ToolCall("c1", "watch", arguments)).arguments


async def test_text_that_is_not_lossless_json_is_refused_when_the_call_starts() -> None:
    definition, seen = watching_tool()
    recorder = Recorder()
    (result,) = await run_tool_calls(
        registry_with(definition), [ToolCall("c1", "watch", '{"x": -0.0}')], recorder=recorder
    )
    assert [who for who, _ in seen] == ["classifier"]  # the body never runs
    assert result.is_error
    assert text(result) == "Error: tool execution arguments must be losslessly JSON-serializable"
    # A log can hold the text as it came, so it is logged unchanged.
    assert recorder.calls() == [ToolCall("c1", "watch", '{"x": -0.0}')]
