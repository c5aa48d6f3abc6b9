"""Materialization makes every string of a result JSON-safe, once.

A lone surrogate (what ``os.fsdecode`` makes of an undecodable byte in a file name) used
to crash a recorded batch with ``UnicodeEncodeError``, leave the later calls without a
result, and make ``toolnursery run`` exit 1 even without ``--log``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery import (
    Accept,
    HookContext,
    ImageContent,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolError,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery._cli._main import main
from toolnursery._core._outcomes import (
    SettledResult,
    json_safe,
    json_safe_text,
    materialize,
    normalize,
)
from toolnursery.examples import example_registry
from toolnursery.log import JsonlRecorder, replay_log

OBJECT: dict[str, Any] = {"type": "object"}
BAD = "caf\udce9"  # the name b"caf\xe9" as os.fsdecode gives it
SHOWN = "caf\\xe9"


def text(result: ToolExecutionResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "ok.txt").write_text("TODO plain\n")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.txt"), "w") as file:
        file.write("TODO in a badly named file\n")
    return root


def test_escapes() -> None:
    assert json_safe_text("plain ✓") == "plain ✓"
    assert json_safe_text(BAD) == SHOWN
    assert json_safe_text("\ud800 and \udfff") == "\\ud800 and \\udfff"
    assert json_safe_text("\ud83d\ude00") == "😀"  # a pair is the character it encodes
    assert json_safe_text("\ude00\ud83d") == "\\ude00\\ud83d"  # the wrong way round


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_every_string_becomes_utf8_encodable_and_clean_text_is_untouched(value: str) -> None:
    safe = json_safe_text(value)
    safe.encode("utf-8")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        assert safe != value
    else:
        assert safe is value


def test_json_safe_returns_the_same_object_when_nothing_needs_escaping() -> None:
    result = ToolExecutionResult((TextContent("ok"),), False, meta={"a": ("b", 1)})
    assert json_safe(result) is result
    escaped = json_safe(ToolExecutionResult((TextContent(BAD),), False, meta={BAD: [BAD]}))
    assert escaped == ToolExecutionResult((TextContent(SHOWN),), False, meta={SHOWN: [SHOWN]})


def test_every_string_of_a_result_is_escaped_at_materialization() -> None:
    result = ToolExecutionResult(
        (TextContent(BAD),),
        True,
        ToolErrorInfo(BAD, BAD),
        (HookContext((TextContent(BAD),), BAD, {"k": BAD}),),
        {BAD: (BAD, 1)},
        {"v": BAD},
    )
    out = materialize(result)
    assert out == ToolExecutionResult(
        (TextContent(SHOWN),),
        True,
        ToolErrorInfo(SHOWN, SHOWN),
        (HookContext((TextContent(SHOWN),), SHOWN, {"k": SHOWN}),),
        {SHOWN: (SHOWN, 1)},
        {"v": SHOWN},
    )
    msgspec.json.encode(out)
    clean = ToolExecutionResult((TextContent("fine"),), False)
    assert materialize(clean) is clean  # the common case allocates nothing


def test_surrogates_only_outside_the_text_blocks_are_still_escaped() -> None:
    """With clean text blocks the check of the rest is one encoding; a surrogate there
    (lone or a high-low pair, in a key, a value, a context or a non-text block) still
    gets the full escape, and a clean rest keeps the result as built."""
    pair = "\ud83d\ude00"
    result = ToolExecutionResult(
        (TextContent("fine"), ImageContent("aGk=", "image/png")),
        False,
        meta={BAD: (1, pair)},
        structured_content={"v": [BAD]},
    )
    out = materialize(result)
    assert out.meta == {SHOWN: (1, "\U0001f600")}
    assert out.structured_content == {"v": (SHOWN,)}
    msgspec.json.encode(out)
    image = ImageContent("aGk=", BAD)
    with_image = materialize(ToolExecutionResult((TextContent("fine"), image), False, meta={}))
    assert with_image.content[1] == ImageContent("aGk=", SHOWN)
    contexts = (HookContext((TextContent("ok"),), "tool", {"k": BAD}),)
    with_context = materialize(ToolExecutionResult((TextContent("fine"),), False, None, contexts))
    assert with_context.additional_contexts[0].meta == {"k": SHOWN}
    clean = materialize(ToolExecutionResult((TextContent("fine"),), False, meta={"a": 1}))
    assert clean == ToolExecutionResult((TextContent("fine"),), False, meta={"a": 1})


async def test_a_recorded_batch_over_a_non_utf8_file_name_loses_nothing(
    root: Path, tmp_path: Path
) -> None:
    registry = example_registry(root)
    calls = [
        ToolCall("a", "list_dir", '{"path": "."}'),
        ToolCall("b", "search_text", '{"pattern": "TODO"}'),
        ToolCall("c", "read_file", '{"path": "ok.txt"}'),
    ]
    log = tmp_path / "log.jsonl"
    with JsonlRecorder(log) as recorder:
        results = await run_tool_calls(registry, calls, recorder=recorder)
    assert text(results[0]) == f"{SHOWN}.txt\nok.txt"
    assert text(results[1]).splitlines()[:2] == [
        f"{SHOWN}.txt:1: TODO in a badly named file",
        "ok.txt:1: TODO plain",
    ]
    assert text(results[2]) == "TODO plain\n"
    assert replay_log(log) == list(zip(calls, results, strict=True))


async def test_surrogates_from_a_body_an_error_meta_or_a_context_are_escaped() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> Any:
        if args["what"] == "error":
            raise ToolError(f"no {BAD}", code="C")
        if args["what"] == "plain":
            raise OSError(2, "missing", BAD)
        ctx.defer_context(HookContext((TextContent(BAD),), "tool", {"name": BAD}))
        return ToolReturn((TextContent(BAD),), meta={"names": [BAD]})

    async def post(execution: Any, result: ToolExecutionResult, next_: Any) -> Any:
        return Accept(additional_contexts=(HookContext((TextContent(BAD),), BAD),))

    registry = ToolRegistry()
    registry.register(ToolDefinition("t", "t", OBJECT, body))
    registry.on_post_execute(post)
    events: list[bytes] = []

    class Encoding:
        def record(self, event: Any, /) -> None:
            events.append(msgspec.json.encode(event))  # fails on any surrogate

    calls = [ToolCall(w, "t", f'{{"what": "{w}"}}') for w in ("ok", "error", "plain")]
    ok, error, plain = await run_tool_calls(registry, calls, recorder=Encoding())
    assert text(ok) == SHOWN
    assert ok.meta == {"names": (SHOWN,)}
    assert [c.content for c in ok.additional_contexts] == [(TextContent(SHOWN),)] * 2
    assert ok.additional_contexts[1].source == SHOWN
    assert text(error) == f"Error: no {SHOWN}"
    assert text(plain) == f"Error: [Errno 2] missing: {BAD!r}"  # repr escapes it already
    assert len(events) == 3 + 3 + 4  # calls, results, contexts (post-execute adds one each)


def test_run_exits_0_and_prints_every_result(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text(
        '{"id": "a", "name": "list_dir", "arguments": {"path": "."}}\n'
        '{"id": "b", "name": "read_file", "arguments": {"path": "ok.txt"}}\n'
    )
    for extra in ([], ["--log", str(tmp_path / "log.jsonl")]):
        assert main(["run", str(calls), "--root", str(root), *extra]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert [msgspec.json.decode(line)["id"] for line in lines] == ["a", "b"]
        assert msgspec.json.decode(lines[0])["result"]["content"][0]["text"].startswith(SHOWN)


async def test_the_file_tools_take_a_name_back_as_they_showed_it(root: Path) -> None:
    """An agent that saw ``caf\\xe9.txt`` in a listing can read and write that file."""
    registry = example_registry(root)
    shown = f"{SHOWN}.txt"
    read = await run_tool_calls(
        registry, [ToolCall("r", "read_file", msgspec.json.encode({"path": shown}).decode())]
    )
    assert text(read[0]) == "TODO in a badly named file\n"
    written = await run_tool_calls(
        registry,
        [
            ToolCall(
                "w", "write_file", msgspec.json.encode({"path": shown, "content": "new\n"}).decode()
            )
        ],
    )
    assert text(written[0]) == f'replaced "{shown}" (4 bytes)'
    assert (
        Path(os.fsdecode(os.path.join(os.fsencode(root), b"caf\xe9.txt")))
    ).read_text() == "new\n"
    # A file whose name really is the escape wins over the byte it stands for.
    (root / shown).write_text("literal\n")
    again = await run_tool_calls(
        registry, [ToolCall("r2", "read_file", msgspec.json.encode({"path": shown}).decode())]
    )
    assert text(again[0]) == "literal\n"


# --- a result made elsewhere (a Ray worker) crosses as JSON and stays the same ----------------


@given(
    text=st.text(),
    meta=st.none() | st.dictionaries(st.text(max_size=4), st.text() | st.integers(), max_size=3),
    value=st.none() | st.lists(st.text() | st.integers(), max_size=3),
)
def test_property_a_materialized_result_survives_json_and_a_second_materialize(
    text: str, meta: Any, value: Any
) -> None:
    """What a Ray worker does (``materialize(normalize(v))``, sent as JSON) and the
    agent then does (``normalize`` passes it through, ``materialize`` again) changes
    nothing: the placed tool's result is the local one."""
    for returned in (text, ToolReturn([TextContent(text)], meta=meta), value):
        local = materialize(normalize(returned, "t"))
        crossed = msgspec.json.decode(msgspec.json.encode(local), type=ToolExecutionResult)
        assert materialize(normalize(SettledResult(crossed), "t")) == local
