"""The presentation vocabulary (B199-B203) and the UI fallbacks around presenters."""

from __future__ import annotations

import logging
from typing import Any, get_args

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnursery._core._content import TextContent, ToolExecutionResult, ToolResult
from toolnursery._core._json import FrozenDict
from toolnursery._tools._definition import ToolDefinition
from toolnursery._tools._present import call_view, result_view
from toolnursery._tools._presentation import (
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    GenericResultView,
    TerminalCallView,
    TerminalResultView,
    ToolCallKind,
    ToolCallView,
    ToolResultView,
)


def body(args: Any, ctx: Any) -> str:
    return "ok"


def define(
    present_call: Any = None, present_result: Any = None, name: str = "open"
) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description="Open a file.",
        parameters={"type": "object"},
        execute=body,
        present_call=present_call,
        present_result=present_result,
    )


RESULT = ToolResult(content=(TextContent(text="hello"),), is_error=False, meta={"lines": 1})

CALL_VIEWS: list[tuple[ToolCallView, bytes]] = [
    (
        GenericCallView(
            title="Open /a",
            kind="read",
            raw_input="/a",
            content=(TextContent(text="note"),),
            locations=(FileLocation(path="/a", line=3),),
        ),
        b'{"card":"generic","title":"Open /a","kind":"read","rawInput":"/a",'
        b'"content":[{"type":"text","text":"note"}],"locations":[{"path":"/a","line":3}]}',
    ),
    (GenericCallView(title="Open /a"), b'{"card":"generic","title":"Open /a"}'),
    (
        TerminalCallView(title="make test", description="Run the tests", cwd="/work"),
        b'{"card":"terminal","title":"make test","description":"Run the tests","cwd":"/work"}',
    ),
    (
        DiffCallView(
            title="Write a.txt",
            diffs=(FileDiff(path="a.txt", old_text=None, new_text="x\n"),),
            locations=(FileLocation(path="a.txt"),),
        ),
        b'{"card":"diff","title":"Write a.txt","diffs":[{"path":"a.txt","oldText":null,'
        b'"newText":"x\\n"}],"locations":[{"path":"a.txt"}]}',
    ),
]

RESULT_VIEWS: list[tuple[ToolResultView, bytes]] = [
    (GenericResultView(), b'{"card":"generic"}'),
    (
        GenericResultView(title="Opened", content=(TextContent(text="1 line"),)),
        b'{"card":"generic","title":"Opened","content":[{"type":"text","text":"1 line"}]}',
    ),
    (
        TerminalResultView(output="ok\n", exit_code=0),
        b'{"card":"terminal","output":"ok\\n","exitCode":0}',
    ),
    (
        TerminalResultView(title="killed", signal="SIGTERM"),
        b'{"card":"terminal","title":"killed","signal":"SIGTERM"}',
    ),
    (
        DiffResultView(diffs=(FileDiff(path="a", old_text="x", new_text="y"),)),
        b'{"card":"diff","diffs":[{"path":"a","oldText":"x","newText":"y"}]}',
    ),
]


@pytest.mark.spec("B199")
@pytest.mark.parametrize(("view", "wire"), CALL_VIEWS)
def test_call_views_are_tagged_by_card_and_round_trip(view: ToolCallView, wire: bytes) -> None:
    assert msgspec.json.encode(view) == wire
    assert msgspec.json.decode(wire, type=ToolCallView) == view


@pytest.mark.spec("B199")
def test_card_is_required_and_closed() -> None:
    with pytest.raises(msgspec.ValidationError, match="card"):
        msgspec.json.decode(b'{"title":"x"}', type=ToolCallView)
    with pytest.raises(msgspec.ValidationError, match="card"):
        msgspec.json.decode(b'{"card":"search","title":"x"}', type=ToolCallView)
    with pytest.raises(msgspec.ValidationError, match="title"):
        msgspec.json.decode(b'{"card":"terminal"}', type=ToolCallView)
    with pytest.raises(msgspec.ValidationError, match="diffs"):
        msgspec.json.decode(b'{"card":"diff","title":"x"}', type=ToolCallView)


@pytest.mark.spec("B199")
def test_views_are_frozen() -> None:
    view = GenericCallView(title="x")
    with pytest.raises(AttributeError):
        view.title = "y"  # type: ignore[misc]
    assert msgspec.structs.replace(view, kind="edit").kind == "edit"


@pytest.mark.spec("B200")
@pytest.mark.parametrize(("view", "wire"), RESULT_VIEWS)
def test_result_views_round_trip_with_optional_titles(view: ToolResultView, wire: bytes) -> None:
    assert msgspec.json.encode(view) == wire
    assert msgspec.json.decode(wire, type=ToolResultView) == view


@pytest.mark.spec("B200")
def test_every_result_title_is_optional_and_diffs_are_required() -> None:
    for decoded in (
        msgspec.json.decode(b'{"card":"generic"}', type=ToolResultView),
        msgspec.json.decode(b'{"card":"terminal"}', type=ToolResultView),
        msgspec.json.decode(b'{"card":"diff","diffs":[]}', type=ToolResultView),
    ):
        assert decoded.title is None
    with pytest.raises(msgspec.ValidationError, match="diffs"):
        msgspec.json.decode(b'{"card":"diff"}', type=ToolResultView)


@pytest.mark.spec("B201")
def test_call_kind_is_a_closed_vocabulary() -> None:
    assert set(get_args(ToolCallKind)) == {
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "fetch",
        "other",
    }
    assert GenericCallView(title="x").kind is None
    with pytest.raises(msgspec.ValidationError, match="kind"):
        msgspec.json.decode(b'{"card":"generic","title":"x","kind":"browse"}', type=ToolCallView)


@pytest.mark.spec("B201")
def test_file_location_and_diff_wire_fields() -> None:
    assert msgspec.json.encode(FileLocation(path="a")) == b'{"path":"a"}'
    assert msgspec.json.decode(b'{"path":"a","line":7}', type=FileLocation).line == 7
    with pytest.raises(msgspec.ValidationError, match="oldText"):
        msgspec.json.decode(b'{"path":"a","newText":"x"}', type=FileDiff)
    assert msgspec.json.decode(b'{"path":"a","oldText":null,"newText":"x"}', type=FileDiff) == (
        FileDiff(path="a", old_text=None, new_text="x")
    )


@pytest.mark.spec("B201")
def test_exit_code_and_signal_are_mutually_exclusive() -> None:
    with pytest.raises(ValueError, match="exit_code and signal are mutually exclusive"):
        TerminalResultView(exit_code=1, signal="SIGKILL")
    with pytest.raises(msgspec.ValidationError, match="mutually exclusive"):
        msgspec.json.decode(
            b'{"card":"terminal","exitCode":1,"signal":"SIGKILL"}', type=ToolResultView
        )
    assert TerminalResultView(exit_code=0).signal is None
    assert TerminalResultView(signal="SIGTERM").exit_code is None


@pytest.mark.spec("B202")
def test_no_presenter_gives_the_generic_card() -> None:
    args = FrozenDict(path="/a")
    assert call_view(define(), args) == GenericCallView(title="open", raw_input=args)
    assert result_view(define(), args, RESULT) is None


@pytest.mark.spec("B202")
def test_presenters_returning_none_fall_back() -> None:
    tool = define(present_call=lambda args: None, present_result=lambda args, result: None)
    assert call_view(tool, {"path": "/a"}) == GenericCallView(
        title="open", raw_input={"path": "/a"}
    )
    assert result_view(tool, {"path": "/a"}, RESULT) is None


@pytest.mark.spec("B202")
def test_unknown_tool_gets_a_generic_card_on_replay() -> None:
    assert call_view(None, {"q": 1}, name="gone") == GenericCallView(
        title="gone", raw_input={"q": 1}
    )
    assert call_view(None, {}) == GenericCallView(title="unknown tool", raw_input={})
    assert result_view(None, {}, RESULT) is None


@pytest.mark.spec("B202")
def test_presenter_views_are_used_verbatim() -> None:
    pending = GenericCallView(title="Open /a", kind="read", raw_input="/a")
    done = GenericResultView(title="Opened /a")
    tool = define(present_call=lambda args: pending, present_result=lambda args, result: done)
    assert call_view(tool, {"path": "/a"}) is pending
    assert result_view(tool, {"path": "/a"}, RESULT) is done


@pytest.mark.spec("B203")
def test_result_presenters_see_the_result_with_meta() -> None:
    seen: list[tuple[Any, ToolResult]] = []

    def present_result(args: Any, result: ToolResult) -> ToolResultView:
        seen.append((args, result))
        return GenericResultView(title=f"{len(result.content)} block(s), meta={result.meta}")

    tool = define(present_result=present_result)
    executed = ToolExecutionResult(
        content=(TextContent(text="hello"),), is_error=False, meta={"lines": 1}
    )
    view = result_view(tool, {"path": "/a"}, executed)
    assert view == GenericResultView(title="1 block(s), meta={'lines': 1}")
    assert seen == [({"path": "/a"}, RESULT)]
    assert type(seen[0][1]) is ToolResult


def test_result_presenters_see_the_structured_value_of_a_typed_output() -> None:
    seen: list[ToolResult] = []

    def present_result(args: Any, result: ToolResult) -> ToolResultView:
        seen.append(result)
        return GenericResultView(title=f"{result.structured['count']} found")

    tool = define(present_result=present_result)
    executed = ToolExecutionResult(
        content=(TextContent(text="3"),),
        is_error=False,
        meta={"ui": True},
        structured_content=FrozenDict(count=3),
    )
    assert result_view(tool, {}, executed) == GenericResultView(title="3 found")
    assert seen == [
        ToolResult(
            content=(TextContent(text="3"),),
            is_error=False,
            meta={"ui": True},
            structured={"count": 3},
        )
    ]


@pytest.mark.spec("B203")
def test_a_raising_presenter_falls_back_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def present_call(args: Any) -> ToolCallView:
        raise KeyError("path")

    def present_result(args: Any, result: ToolResult) -> ToolResultView:
        raise RuntimeError("old log format")

    tool = define(present_call=present_call, present_result=present_result)
    with caplog.at_level(logging.WARNING, logger="toolnursery.presentation"):
        assert call_view(tool, {"legacy": True}) == GenericCallView(
            title="open", raw_input={"legacy": True}
        )
        assert result_view(tool, {"legacy": True}, RESULT) is None
    assert [r.exc_info is not None for r in caplog.records] == [True, True]
    assert "open" in caplog.records[0].getMessage()


@pytest.mark.spec("B203")
@pytest.mark.parametrize(
    "bad",
    [
        {"card": "generic", "title": "dict, not a view"},
        "Open /a",
        GenericResultView(title="a result view from a call presenter"),
        GenericCallView(title=5),  # type: ignore[arg-type]
        GenericCallView(title="x", kind="browse"),  # type: ignore[arg-type]
        GenericCallView(title="x", raw_input=object()),
        DiffCallView(title="x", diffs=[{"path": "a"}]),  # type: ignore[arg-type]
    ],
)
def test_a_presenter_returning_a_non_view_falls_back(bad: object) -> None:
    tool = define(present_call=lambda args: bad)
    assert call_view(tool, {"a": 1}) == GenericCallView(title="open", raw_input={"a": 1})


@pytest.mark.spec("B203")
@pytest.mark.parametrize(
    "bad",
    [
        GenericCallView(title="a call view from a result presenter"),
        TerminalResultView(exit_code="0"),  # type: ignore[arg-type]
        {"card": "generic"},
        42,
    ],
)
def test_a_result_presenter_returning_a_non_view_falls_back(bad: object) -> None:
    tool = define(present_result=lambda args, result: bad)
    assert result_view(tool, {}, RESULT) is None


@pytest.mark.spec("B203")
def test_a_view_too_deep_to_encode_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    tool = define(present_call=lambda args: GenericCallView(title="x", raw_input=deep))
    with caplog.at_level(logging.WARNING, logger="toolnursery.presentation"):
        assert call_view(tool, {}) == GenericCallView(title="open", raw_input={})
    assert "returned a GenericCallView, not a valid view" in caplog.records[0].getMessage()


@pytest.mark.spec("B203")
def test_construction_errors_inside_presenters_fall_back() -> None:
    tool = define(present_result=lambda args, result: TerminalResultView(exit_code=1, signal="X"))
    assert result_view(tool, {}, RESULT) is None


def _strict_present_call(args: Any) -> ToolCallView | None:
    # An author's presenter that assumes the current argument shape.
    return TerminalCallView(title=args["command"], cwd=args.get("cwd"))


@pytest.mark.spec("B203")
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=4),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["command", "cwd", "x"]), inner, max_size=3)
        ),
        max_leaves=6,
    )
)
def test_call_view_never_raises_on_foreign_args(args: Any) -> None:
    view = call_view(define(present_call=_strict_present_call, name="bash"), args)
    is_valid = (
        isinstance(args, dict)
        and isinstance(args.get("command"), str)
        and isinstance(args.get("cwd"), str | None)
    )
    if is_valid:
        assert view == TerminalCallView(title=args["command"], cwd=args.get("cwd"))
    else:
        assert view == GenericCallView(title="bash", raw_input=args)
