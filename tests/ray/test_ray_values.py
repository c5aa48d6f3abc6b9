"""A placed tool returns exactly what the local one returns; ``warm()`` before the calls.

The same bodies (``ray_bodies.values``) run in this process and on the session's local
Ray cluster: every kind of value, non-finite floats, surrogates, key collisions, and
values with no JSON form give equal results. A hypothesis property does the same for
generated values (pickled into the arguments, unpickled by the body on either side).
"""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray", reason="Ray is not installed: install the extra, pip install -e '.[ray]'"
)

import trio  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ray_bodies  # noqa: E402
from toolnursery import (  # noqa: E402
    CancelSignal,
    RegistrationError,
    TextContent,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    install_timeout_policy,
)
from toolnursery._core._outcomes import failure_result, materialize, normalize  # noqa: E402
from toolnursery._ray._remote import encode_arguments, read_answer, run_call  # noqa: E402
from toolnursery.ray import REMOTE_UNAVAILABLE, RemoteToolError, ray_tool, warm  # noqa: E402

WAIT_S = 60  # generous: workers start cold on a shared 2-core machine


def _pair(body: Any, **options: Any) -> tuple[ToolRegistry, ToolRegistry]:
    local, remote = ToolRegistry(), ToolRegistry()
    definition = ToolDefinition("probe", "p", {"type": "object"}, body)
    local.register(definition)
    remote.register(ray_tool(definition, **options))
    return local, remote


async def _execute(registry: ToolRegistry, arguments: Any) -> ToolExecutionResult:
    return await registry.execute(ToolExecutionInput("c1", "probe", arguments, CancelSignal()))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", sorted(ray_bodies.VALUES))
async def test_a_placed_tool_returns_what_the_local_tool_returns(cluster: str, kind: str) -> None:
    local, remote = _pair(ray_bodies.values)
    with trio.fail_after(WAIT_S):
        expected = await _execute(local, {"kind": kind})
        got = await _execute(remote, {"kind": kind})
    assert got == expected
    if kind in ("nan", "inf", "collision", "no-form"):
        assert got.is_error
        assert "with no JSON form: result" in got.text
    elif kind == "set-in-meta":  # meta is the tool's own lossless JSON, not rendered
        assert got.text == "Error: tool result must be losslessly JSON-serializable"
    else:
        assert not got.is_error, got.text


async def test_the_rendered_forms_on_ray(cluster: str) -> None:
    _, remote = _pair(ray_bodies.values)
    with trio.fail_after(WAIT_S):
        words = await _execute(remote, {"kind": "set"})
        named = await _execute(remote, {"kind": "surrogate"})
        nan = await _execute(remote, {"kind": "nan"})
        clash = await _execute(remote, {"kind": "collision"})
    assert json.loads(words.text) == {"words": sorted(ray_bodies.WORDS)}
    assert named.content == (TextContent('{"name":"caf\\\\xe9"}'),)
    assert 'result["score"] is nan, which has no JSON form' in nan.text
    assert "two keys that both render as \"1\": 1 (int) and '1' (str)" in clash.text


# Values from the kinds a tool returns, built from classes a worker can import.
_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities included: an error, the same on both sides
    | st.text(max_size=6)  # lone surrogates included
    | st.sampled_from([ray_bodies.Cabin.ECONOMY, ray_bodies.WHEN, ray_bodies.WHEN.date()])
)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4) | st.integers(0, 3), inner, max_size=3)
        | st.frozensets(st.text(max_size=4) | st.integers(), max_size=4)
        | st.builds(ray_bodies.Holder, inner)
        | st.builds(ray_bodies.Point, st.integers(), st.frozensets(st.text(max_size=3), max_size=3))
        | st.builds(
            ray_bodies.Email,
            sender=st.text(max_size=4),
            sent=st.just(ray_bodies.WHEN),
            tags=st.lists(st.text(max_size=3), max_size=2),
        )
    ),
    max_leaves=10,
)


@pytest.mark.timeout(300)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_values)
async def test_property_ray_renders_any_value_as_the_local_path_does(
    cluster: str, value: Any
) -> None:
    local, remote = _pair(ray_bodies.unpickle)
    arguments = {"blob": base64.b64encode(pickle.dumps(value)).decode()}
    with trio.fail_after(WAIT_S):
        expected = await _execute(local, arguments)
        again = await _execute(local, arguments)
        got = await _execute(remote, arguments)
    assert again == expected  # deterministic
    assert got == expected
    if not expected.is_error and not isinstance(value, str):
        json.loads(expected.text)


# --- warm(): worker start-up before the calls, not inside their deadlines ---------------


async def test_warm_starts_task_workers_that_the_first_call_then_uses(
    cluster: str, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    pids.touch()
    # A runtime_env of its own: Ray must start fresh workers for this tool.
    env = {"env_vars": {"TOOLNURSERY_TEST_PIDS": str(pids)}}
    registry = ToolRegistry()
    install_timeout_policy(registry)
    definition = ray_tool(
        ToolDefinition("pid", "p", {"type": "object"}, ray_bodies.pid, timeout_ms=1500),
        runtime_env=env,
    )
    registry.register(definition)
    with trio.fail_after(WAIT_S):
        await warm(definition)
    warmed = set(pids.read_text().split())
    assert warmed  # a worker started and imported the body's module
    with trio.fail_after(WAIT_S):
        result = await registry.execute(ToolExecutionInput("c1", "pid", {}, CancelSignal()))
    assert not result.is_error, result.text
    assert result.text in warmed


async def test_warm_starts_an_actor_pool_and_runs_its_setup(cluster: str, tmp_path: Path) -> None:
    marks = tmp_path / "setups"
    marks.mkdir()
    definition = ray_tool(
        ToolDefinition("count", "c", {"type": "object"}, ray_bodies.count),
        actors=2,
        setup=ray_bodies.marking_setup(str(marks)),
    )
    with trio.fail_after(WAIT_S):
        await warm(definition)
    assert len(list(marks.iterdir())) == 2  # both actors ran setup() before any call
    registry = ToolRegistry()
    registry.register(definition)
    with trio.fail_after(WAIT_S):
        result = await registry.execute(ToolExecutionInput("c1", "count", {}, CancelSignal()))
    assert result.text.startswith("1@")
    assert len(list(marks.iterdir())) == 2  # the call used a warmed actor


def test_warm_takes_only_placed_definitions() -> None:
    plain = ToolDefinition("plain", "p", {"type": "object"}, ray_bodies.echo)
    with pytest.raises(RegistrationError, match="plain is not one"):
        trio.run(warm, plain)
    with pytest.raises(RegistrationError, match="workers must be a positive int"):
        trio.run(lambda: warm(ray_tool(plain), workers=0))


def test_warm_without_a_ray_connection_is_remote_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    placed = ray_tool(ToolDefinition("echo", "e", {"type": "object"}, ray_bodies.echo))
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with pytest.raises(RemoteToolError, match="warm\\(\\) needs a Ray connection") as info:
        trio.run(warm, placed)
    assert info.value.code == REMOTE_UNAVAILABLE


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        *((ray_bodies.values, {"kind": kind}) for kind in sorted(ray_bodies.VALUES)),
        (ray_bodies.raises_with_surrogate, {}),
        (ray_bodies.raises_with_surrogate, {"tool_error": True}),
    ],
)
async def test_the_worker_side_answer_makes_the_local_result(body: Any, arguments: Any) -> None:
    """The worker's code, run in this process: answer bytes, read back, same result."""
    local, _ = _pair(body)
    expected = await _execute(local, arguments)
    answer = run_call(body, encode_arguments(arguments), "c1", "probe")
    try:
        got = materialize(normalize(read_answer(answer), "probe"))
    except Exception as exc:
        got = materialize(failure_result(exc))
    assert got == expected
