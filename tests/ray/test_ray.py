"""Tool bodies placed on a real local Ray cluster (``toolnursery.ray``).

One cluster (``ray.init(num_cpus=2)``, no dashboard; ``conftest.py``) serves the whole session; agent
subprocesses join it by its address. Bodies live in ``ray_bodies`` so workers import
them by name, and report to the test through files in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray", reason="Ray is not installed: install the extra, pip install -e '.[ray]'"
)

import msgspec  # noqa: E402
import trio  # noqa: E402

import ray_bodies  # noqa: E402
from toolnursery import (  # noqa: E402
    TOOL_ABORTED,
    TOOL_TIMEOUT,
    CancelSignal,
    RegistrationError,
    ToolCall,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    define_tool,
    install_retry_policy,
    install_timeout_policy,
    run_tool_calls,
)
from toolnursery._ray._remote import read_answer  # noqa: E402
from toolnursery.ray import (  # noqa: E402
    REMOTE_NODE_DIED,
    REMOTE_RESULT_NOT_ENCODABLE,
    REMOTE_UNAVAILABLE,
    REMOTE_WORKER_DIED,
    RemoteToolError,
    fleet_usage,
    ray_tool,
    warm,
)

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
WAIT_S = 60  # generous: workers start cold on a shared 2-core machine


def _tool(name: str, body: Any, **kwargs: Any) -> ToolDefinition:
    fields = {
        k: kwargs.pop(k) for k in ("timeout_ms", "idempotent", "max_concurrency") if k in kwargs
    }
    return ToolDefinition(name, name, {"type": "object"}, body, **fields)


def _call(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments or {}))


def _code(result: ToolExecutionResult) -> str | None:
    return None if result.error is None else result.error.code


async def _execute(
    registry: ToolRegistry, name: str, arguments: Any, signal: CancelSignal | None = None
) -> ToolExecutionResult:
    return await registry.execute(
        ToolExecutionInput("call-1", name, arguments, signal or CancelSignal())
    )


async def _wait_for_file(path: Path) -> None:
    # Polling: the file is written by a Ray worker process; no trio event crosses it.
    with trio.fail_after(WAIT_S):
        while not path.exists():
            await trio.sleep(0.02)


def test_module_does_not_shadow_the_ray_package() -> None:
    import toolnursery.ray as placement

    assert ray.__name__ == "ray"
    assert hasattr(ray, "remote")
    assert placement.__name__ == "toolnursery.ray"
    assert "ray_tool" in placement.__all__


@pytest.mark.parametrize(
    "kind",
    [
        "text",
        "return",
        "blocks",
        "block",
        "mcp-blocks",
        "value",
        "tool-error",
        "custom-code",
        "error",
        "empty-error",
    ],
)
async def test_remote_results_equal_local_results(cluster: str, kind: str) -> None:
    local, remote = ToolRegistry(), ToolRegistry()
    definition = _tool("returns", ray_bodies.returns)
    local.register(definition)
    remote.register(ray_tool(definition))
    arguments = {"kind": kind, "who": "ünï"}
    with trio.fail_after(WAIT_S):
        expected = await _execute(local, "returns", arguments)
        got = await _execute(remote, "returns", arguments)
    assert got == expected


async def test_arguments_cross_frozen_and_lossless(cluster: str) -> None:
    registry = ToolRegistry()
    registry.register(ray_tool(_tool("echo", ray_bodies.echo)))
    registry.register(
        ray_tool(
            define_tool(
                name="typed", description="t", parameters=ray_bodies.Pair, execute=ray_bodies.typed
            )
        )
    )
    registry.register(ray_tool(_tool("trio_body", ray_bodies.trio_body)))
    arguments = {"s": "ü\u2028", "n": [1, 2.5, None, True], "o": {"k": -(2**63)}}
    with trio.fail_after(WAIT_S):
        results = await run_tool_calls(
            registry,
            [
                ToolCall("e", "echo", json.dumps(arguments)),
                _call("t", "typed", {"name": "x", "counts": [1, 2, 3]}),
                _call("bad", "typed", {"name": "x", "counts": "no"}),
                _call("a", "trio_body", {"n": 21}),
            ],
        )
    echo, typed, bad, trio_result = (r.content[0].text for r in results)  # type: ignore[union-attr]
    assert echo == f"echo:e:{msgspec.json.encode(arguments).decode()}:FrozenDict"
    assert typed == "x=6"
    assert results[2].is_error
    assert _code(results[2]) == "INVALID_ARGS"
    assert "counts" in bad
    assert trio_result == "trio:42"


async def test_waiting_parks_no_thread_per_call(cluster: str, tmp_path: Path) -> None:
    registry = ToolRegistry()
    registry.register(ray_tool(_tool("hold", ray_bodies.hold_until, max_concurrency=None)))
    release = tmp_path / "release"
    calls = [
        _call(str(i), "hold", {"started": str(tmp_path / f"s{i}"), "release": str(release)})
        for i in range(12)
    ]
    results: list[ToolExecutionResult] = []

    async def run() -> None:
        results.extend(await run_tool_calls(registry, calls, max_parallel=12))

    before = threading.active_count()
    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await _wait_for_file(tmp_path / "s0")
            await trio.testing.wait_all_tasks_blocked()
            during = threading.active_count()
            release.write_text("go")
    assert [r.content[0].text for r in results] == ["released"] * 12  # type: ignore[union-attr]
    assert during <= before + 2


@pytest.mark.parametrize(
    "body", [ray_bodies.spin_until_cancelled, ray_bodies.trio_spin_until_cancelled]
)
async def test_batch_abort_cancels_the_running_remote_body(
    cluster: str, tmp_path: Path, body: Any
) -> None:
    """B153: an abort ends a started call as ABORTED — here by reaching the remote body."""
    registry = ToolRegistry()
    registry.register(ray_tool(_tool("spin", body)))
    started, cleaned = tmp_path / "started", tmp_path / "cleaned"
    signal = CancelSignal()
    results: list[ToolExecutionResult] = []

    async def run() -> None:
        call = _call("1", "spin", {"started": str(started), "cleaned": str(cleaned)})
        results.extend(await run_tool_calls(registry, [call], signal=signal))

    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await _wait_for_file(started)
            signal.cancel("user abort")
    assert _code(results[0]) == TOOL_ABORTED
    # The call returned only after the remote body unwound: its cleanup already ran.
    assert cleaned.read_text() == "cleaned"


async def test_a_body_that_ignores_cancel_is_forced_after_the_grace(
    cluster: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    registry.register(ray_tool(_tool("stubborn", ray_bodies.ignore_interrupts), cancel_grace_s=3))
    started, interrupted = tmp_path / "started", tmp_path / "interrupted"
    signal = CancelSignal()
    results: list[ToolExecutionResult] = []

    async def run() -> None:
        arguments = {"started": str(started), "interrupted": str(interrupted)}
        results.append(await _execute(registry, "stubborn", arguments, signal))

    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await _wait_for_file(started)
            signal.cancel()
    assert _code(results[0]) == TOOL_ABORTED
    assert interrupted.exists()  # the polite ray.cancel arrived and was ignored
    # Forced: the worker process ends (the raylet reaps it on its own time, so poll).
    pid = int(started.read_text())
    with trio.fail_after(WAIT_S):
        while _alive(pid):
            await trio.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


async def test_a_deadline_cancels_the_remote_body(cluster: str, tmp_path: Path) -> None:
    """B164: a budgeted call that overruns gives TOOL_TIMEOUT.

    The deadline counts worker start-up too: ``warm()`` first, so the 1.5 s go to the
    body (on a cold cluster they could pass before it started).
    """
    registry = ToolRegistry()
    install_timeout_policy(registry)
    spin = ray_tool(_tool("spin", ray_bodies.spin_until_cancelled, timeout_ms=1500))
    registry.register(spin)
    started, cleaned = tmp_path / "started", tmp_path / "cleaned"
    with trio.fail_after(WAIT_S):
        await warm(spin)
        result = await _execute(
            registry, "spin", {"started": str(started), "cleaned": str(cleaned)}
        )
    assert _code(result) == TOOL_TIMEOUT
    assert started.exists()
    assert cleaned.read_text() == "cleaned"


async def test_a_worker_killed_mid_call_is_an_error_and_the_batch_completes(
    cluster: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    registry.register(ray_tool(_tool("maybe_crash", ray_bodies.maybe_crash)))
    registry.register(ray_tool(_tool("echo", ray_bodies.echo)))
    runs = tmp_path / "runs"
    runs.mkdir()
    calls = [
        _call("a", "echo", {"i": 1}),
        _call("b", "maybe_crash", {"runs": str(runs), "crash": "always"}),
        _call("c", "echo", {"i": 3}),
    ]
    with trio.fail_after(WAIT_S):
        results = await run_tool_calls(registry, calls)
    assert [r.is_error for r in results] == [False, True, False]
    assert _code(results[1]) == REMOTE_WORKER_DIED
    assert results[1].error is not None
    assert results[1].error.name == "RemoteToolError"
    assert "worker died" in results[1].content[0].text  # type: ignore[union-attr]


async def test_a_non_idempotent_tool_is_never_rerun_after_a_crash(
    cluster: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    install_retry_policy(registry, codes=[REMOTE_WORKER_DIED], backoff_ms=1)
    registry.register(ray_tool(_tool("maybe_crash", ray_bodies.maybe_crash)))
    runs = tmp_path / "runs"
    runs.mkdir()
    with trio.fail_after(WAIT_S):
        result = await _execute(registry, "maybe_crash", {"runs": str(runs), "crash": "first"})
    assert _code(result) == REMOTE_WORKER_DIED
    assert len(list(runs.iterdir())) == 1


async def test_an_idempotent_tool_is_retried_by_the_retry_policy(
    cluster: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    install_retry_policy(registry, codes=[REMOTE_WORKER_DIED], backoff_ms=1)
    registry.register(ray_tool(_tool("maybe_crash", ray_bodies.maybe_crash, idempotent=True)))
    runs = tmp_path / "runs"
    runs.mkdir()
    with trio.fail_after(WAIT_S):
        result = await _execute(registry, "maybe_crash", {"runs": str(runs), "crash": "first"})
    assert not result.is_error
    assert result.meta == {"attempts": 2}
    assert len(list(runs.iterdir())) == 2


async def test_an_actor_pool_keeps_state_and_replaces_a_dead_actor(cluster: str) -> None:
    registry = ToolRegistry()
    registry.register(
        ray_tool(_tool("count", ray_bodies.count), actors=1, setup=ray_bodies.counter_setup)
    )
    with trio.fail_after(WAIT_S):
        texts = [(await _execute(registry, "count", {})).content[0].text for _ in range(3)]  # type: ignore[union-attr]
        crashed = await _execute(registry, "count", {"crash": True})
        fresh = (await _execute(registry, "count", {})).content[0].text  # type: ignore[union-attr]
    counts, pids = zip(*(t.split("@") for t in texts), strict=True)
    assert counts == ("1", "2", "3")
    assert len(set(pids)) == 1
    assert _code(crashed) == REMOTE_WORKER_DIED
    assert fresh.split("@")[0] == "1"
    assert fresh.split("@")[1] != pids[0]


async def test_a_cancelled_actor_call_kills_and_replaces_its_actor(
    cluster: str, tmp_path: Path
) -> None:
    registry = ToolRegistry()
    registry.register(
        ray_tool(
            _tool("count", ray_bodies.count),
            actors=1,
            setup=ray_bodies.counter_setup,
            cancel_grace_s=0.5,
        )
    )
    signal = CancelSignal()
    results: list[ToolExecutionResult] = []
    started = tmp_path / "started"

    async def held() -> None:
        arguments = {"started": str(started), "release": str(tmp_path / "never")}
        results.append(await _execute(registry, "count", arguments, signal))

    with trio.fail_after(WAIT_S):
        first = (await _execute(registry, "count", {})).content[0].text  # type: ignore[union-attr]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(held)
            await _wait_for_file(started)
            signal.cancel()
        after = (await _execute(registry, "count", {})).content[0].text  # type: ignore[union-attr]
    assert _code(results[0]) == TOOL_ABORTED
    assert first.split("@")[0] == "1"
    # A running actor call cannot be interrupted: the actor was killed, a fresh one
    # (new process, new state) serves the next call.
    assert after.split("@")[0] == "1"
    assert after.split("@")[1] != first.split("@")[1]
    with trio.fail_after(WAIT_S):
        while _alive(int(first.split("@")[1])):
            await trio.sleep(0.02)  # polling: the raylet reaps the killed actor on its own


async def test_a_cancelled_fleet_waiter_leaks_no_permit(cluster: str, tmp_path: Path) -> None:
    registry = ToolRegistry()
    key = "leak-check"
    registry.register(ray_tool(_tool("hold", ray_bodies.hold_until), fleet_limit=1, fleet_key=key))
    release = tmp_path / "release"
    holder_started = tmp_path / "holder"
    waiter_signal = CancelSignal()
    results: dict[str, ToolExecutionResult] = {}

    async def call(label: str, signal: CancelSignal) -> None:
        arguments = {"started": str(tmp_path / label), "release": str(release)}
        results[label] = await _execute(registry, "hold", arguments, signal)

    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "holder", CancelSignal())
            await _wait_for_file(holder_started)
            nursery.start_soon(call, "waiter", waiter_signal)
            while (await fleet_usage(key)).waiting < 1:
                await trio.sleep(0.02)  # polling the actor: its state lives in another process
            waiter_signal.cancel()
            while "waiter" not in results:
                await trio.sleep(0.02)
            release.write_text("go")
        usage = await fleet_usage(key)
        after = await _execute(
            registry, "hold", {"started": str(tmp_path / "after"), "release": str(release)}
        )
    assert _code(results["waiter"]) == TOOL_ABORTED
    assert not (tmp_path / "waiter").exists()
    assert results["holder"].content[0].text == "released"  # type: ignore[union-attr]
    assert (usage.limit, usage.held, usage.waiting, usage.peak) == (1, 0, 0, 1)
    assert after.content[0].text == "released"  # type: ignore[union-attr]


_AGENT = textwrap.dedent(
    """
    import json, sys, trio, ray
    import ray_bodies
    from toolnursery import ToolCall, ToolDefinition, ToolRegistry, run_tool_calls
    from toolnursery.ray import ray_tool

    address, runs, meet, label = sys.argv[1:5]
    ray.init(address=address, log_to_driver=False)
    registry = ToolRegistry()
    definition = ToolDefinition("work", "w", {"type": "object"}, ray_bodies.work)
    registry.register(ray_tool(definition, num_cpus=0.1, fleet_limit=2, fleet_key="fleet-test"))
    # Each agent's first body waits for the other's: the two agents overlap however
    # long either takes to start (the fleet limit is reached, not hoped for).
    first = {"meet": meet, "meet_n": 2}
    calls = []
    for i in range(5):
        arguments = {"seconds": 0.4, "runs": runs, **(first if i == 0 else {})}
        calls.append(ToolCall(f"{label}{i}", "work", json.dumps(arguments)))
    results = trio.run(run_tool_calls, registry, calls)
    print(json.dumps([r.content[0].text for r in results]))
    ray.shutdown()
    """
)


def _agent_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(TESTS), str(ROOT / "src"), env.get("PYTHONPATH")) if p
    )
    return env


async def test_a_fleet_limit_holds_across_two_agent_processes(cluster: str, tmp_path: Path) -> None:
    runs, meet = tmp_path / "runs", tmp_path / "meet"
    runs.mkdir()
    meet.mkdir()
    outputs: dict[str, bytes] = {}

    async def agent(label: str) -> None:
        done = await trio.run_process(
            [sys.executable, "-c", _AGENT, cluster, str(runs), str(meet), label],
            capture_stdout=True,
            capture_stderr=True,
            env=_agent_env(),
        )
        outputs[label] = done.stdout

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent, "a")
            nursery.start_soon(agent, "b")
        usage = await fleet_usage("fleet-test")
    for label in "ab":
        assert json.loads(outputs[label].decode().strip().splitlines()[-1]) == ["worked"] * 5
    intervals = [tuple(map(float, p.read_text().split())) for p in runs.iterdir()]
    assert len(intervals) == 10
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    running, overlap = 0, 0
    for _, step in events:
        running += step
        overlap = max(overlap, running)
    assert overlap <= 2
    assert usage.limit == 2
    assert usage.peak == 2
    assert usage.held == 0


def test_an_unpicklable_body_is_refused_when_wrapped() -> None:
    lock = threading.Lock()

    def body(args: Any, ctx: Any) -> str:
        with lock:
            return "never"

    with pytest.raises(
        RegistrationError, match=r'ray_tool\("locked"\): the body cannot be pickled'
    ):
        ray_tool(_tool("locked", body))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"actors": 0}, "actors must be a positive int"),
        ({"fleet_limit": True}, "fleet_limit must be a positive int"),
        ({"cancel_grace_s": 0}, "cancel_grace_s must be a positive"),
        ({"num_cpus": -1}, "num_cpus must be a finite number"),
        ({"setup": ray_bodies.counter_setup}, "setup= needs actors="),
        ({"fleet_key": "k"}, "fleet_key= must be a str and needs fleet_limit="),
    ],
)
def test_options_are_checked_when_wrapped(options: dict[str, Any], message: str) -> None:
    with pytest.raises(RegistrationError, match=message):
        ray_tool(_tool("t", ray_bodies.echo), **options)


def test_only_a_definition_is_placed() -> None:
    with pytest.raises(RegistrationError, match="takes a ToolDefinition"):
        ray_tool(ray_bodies.echo)  # type: ignore[arg-type]


async def test_a_result_with_no_json_form_is_the_local_per_call_error(cluster: str) -> None:
    local, registry = ToolRegistry(), ToolRegistry()
    local.register(_tool("returns", ray_bodies.returns))
    registry.register(ray_tool(_tool("returns", ray_bodies.returns)))
    with trio.fail_after(WAIT_S):
        bad = await _execute(registry, "returns", {"kind": "unencodable"})
        good = await _execute(registry, "returns", {"kind": "text"})
        expected = await _execute(local, "returns", {"kind": "unencodable"})
    assert bad == expected
    assert bad.error is None  # as locally: no REMOTE_RESULT_NOT_ENCODABLE
    assert 'result["handle"] is an object of type object, which has no JSON form' in bad.text
    assert not good.is_error


def test_an_answer_the_agent_cannot_read_is_remote_result_not_encodable() -> None:
    with pytest.raises(RemoteToolError) as info:
        read_answer(b"\x92\x63\xc4\x00")  # a kind this version does not know
    assert info.value.code == REMOTE_RESULT_NOT_ENCODABLE
    with pytest.raises(RemoteToolError, match="cannot be read") as info:
        read_answer(b"not msgpack")
    assert info.value.code == REMOTE_RESULT_NOT_ENCODABLE


def test_without_a_ray_connection_a_call_is_a_clear_error() -> None:
    script = textwrap.dedent(
        """
        import trio, ray_bodies
        from toolnursery import CancelSignal, ToolDefinition, ToolExecutionInput, ToolRegistry
        from toolnursery.ray import ray_tool

        registry = ToolRegistry()
        registry.register(ray_tool(ToolDefinition("echo", "e", {}, ray_bodies.echo)))
        result = trio.run(registry.execute, ToolExecutionInput("1", "echo", {}, CancelSignal()))
        print(result.error.code, result.content[0].text)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        env=_agent_env(),
        timeout=120,
        check=True,
    )
    out = done.stdout.decode()
    assert out.startswith(REMOTE_UNAVAILABLE)
    assert "not connected to a Ray cluster: call ray.init()" in out


def test_the_example_runs_on_the_cluster(cluster: str) -> None:
    env = _agent_env()
    env["RAY_ADDRESS"] = cluster
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "ray_batch.py")],
        capture_output=True,
        env=env,
        timeout=300,
        check=True,
    )
    out = done.stdout.decode()
    assert "8 calls" in out
    assert "errors: 0" in out


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ray.exceptions.WorkerCrashedError(), REMOTE_WORKER_DIED),
        (ray.exceptions.ActorDiedError(), REMOTE_WORKER_DIED),
        (ray.exceptions.OutOfMemoryError("killed"), REMOTE_WORKER_DIED),
        (ray.exceptions.NodeDiedError("gone"), REMOTE_NODE_DIED),
        (ray.exceptions.LocalRayletDiedError(), REMOTE_NODE_DIED),
        (ray.exceptions.ObjectLostError("ab" * 14, None, ""), REMOTE_NODE_DIED),
        (ray.exceptions.OwnerDiedError("ab" * 14, None, ""), REMOTE_NODE_DIED),
        (ray.exceptions.TaskCancelledError(), TOOL_ABORTED),
        (ray.exceptions.TaskUnschedulableError("no node"), REMOTE_UNAVAILABLE),
        (ray.exceptions.RuntimeEnvSetupError(), REMOTE_UNAVAILABLE),
    ],
)
def test_ray_failures_map_to_named_codes(error: Exception, code: str) -> None:
    from toolnursery._ray._place import _translate

    translated = _translate(error, "t")  # type: ignore[arg-type]
    assert translated.code == code
    assert translated.message.startswith('tool "t"')


async def test_a_fleet_limit_mismatch_is_a_per_call_error(cluster: str, tmp_path: Path) -> None:
    first, second = ToolRegistry(), ToolRegistry()
    first.register(ray_tool(_tool("echo", ray_bodies.echo), fleet_limit=3, fleet_key="mismatch"))
    second.register(ray_tool(_tool("echo", ray_bodies.echo), fleet_limit=4, fleet_key="mismatch"))
    with trio.fail_after(WAIT_S):
        ok = await _execute(first, "echo", {})
        refused = await _execute(second, "echo", {})
        usage = await fleet_usage("mismatch")
    assert not ok.is_error
    assert _code(refused) == REMOTE_UNAVAILABLE
    assert 'fleet limit "mismatch" is held at 3' in refused.content[0].text  # type: ignore[union-attr]
    assert (usage.limit, usage.held, usage.waiting) == (3, 0, 0)


async def test_a_reset_fleet_limit_is_recreated(cluster: str) -> None:
    registry = ToolRegistry()
    registry.register(ray_tool(_tool("echo", ray_bodies.echo), fleet_limit=1, fleet_key="reset"))
    with trio.fail_after(WAIT_S):
        before = await _execute(registry, "echo", {})
        ray.kill(ray.get_actor("fleet:reset", namespace="toolnursery"))
        while await trio.to_thread.run_sync(_named_actor_exists, "fleet:reset"):
            await trio.sleep(0.02)  # polling: ray.kill returns before the actor is gone
        lost = await _execute(registry, "echo", {})
        again = await _execute(registry, "echo", {})
    assert not before.is_error
    assert _code(lost) == REMOTE_UNAVAILABLE
    assert 'fleet limit "reset" is unavailable' in lost.content[0].text  # type: ignore[union-attr]
    assert not again.is_error


def _named_actor_exists(name: str) -> bool:
    try:
        ray.get_actor(name, namespace="toolnursery")
    except ValueError:
        return False
    return True


_DYING_AGENT = textwrap.dedent(
    """
    import os, sys, time, trio, ray
    from pathlib import Path
    import ray_bodies
    from toolnursery import CancelSignal, ToolDefinition, ToolExecutionInput, ToolRegistry
    from toolnursery.ray import ray_tool

    address, started, release = sys.argv[1:4]
    ray.init(address=address, log_to_driver=False)
    registry = ToolRegistry()
    definition = ToolDefinition("hold", "h", {"type": "object"}, ray_bodies.hold_until)
    registry.register(ray_tool(definition, num_cpus=0.1, fleet_limit=1, fleet_key="reclaim"))

    async def main():
        async with trio.open_nursery() as nursery:
            arguments = {"started": started, "release": release}
            call = ToolExecutionInput("dying", "hold", arguments, CancelSignal())
            nursery.start_soon(registry.execute, call)
            # Polling: the body runs in a Ray worker; the file is what it leaves.
            while not Path(started).exists():
                await trio.sleep(0.02)
            os._exit(7)  # die holding the permit

    trio.run(main)
    """
)


async def test_permits_of_a_dead_agent_process_are_reclaimed(cluster: str, tmp_path: Path) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    with trio.fail_after(120):
        done = await trio.run_process(
            [sys.executable, "-c", _DYING_AGENT, cluster, str(started), str(release)],
            capture_stdout=True,
            capture_stderr=True,
            env=_agent_env(),
            check=False,
        )
        assert done.returncode == 7, done.stderr.decode()[-2000:]
        leaked = await fleet_usage("reclaim")
        registry = ToolRegistry()
        registry.register(
            ray_tool(_tool("hold", ray_bodies.hold_until), fleet_limit=1, fleet_key="reclaim")
        )
        release.write_text("go")
        mine = await _execute(
            registry, "hold", {"started": str(tmp_path / "mine"), "release": str(release)}
        )
        usage = await fleet_usage("reclaim")
    assert started.exists()
    assert leaked.held == 1  # nobody waited yet, so nothing was reclaimed
    assert mine.content[0].text == "released"  # type: ignore[union-attr]
    assert (usage.held, usage.waiting, usage.peak) == (0, 0, 1)
