"""``toolnursery bench``: the report's shape, the user's registry as configured, bad input.

Timings are only checked for shape and consistency (never for speed); batches are small.
"""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from support import write_calls
from toolnursery import (
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolRegistry,
    ToolRunContext,
    ToolStatistics,
)
from toolnursery.__main__ import main
from toolnursery._cli._bench import (
    SAMPLE_CALLS,
    SAMPLES,
    TRIVIAL_TOOL,
    bundled_calls,
    measure,
    resized,
)
from toolnursery._cli._bench_report import WORKLOADS, BenchReport, Clock, Spread, render
from toolnursery._cli._common import MAX_CALLS, MAX_PARALLEL, MAX_REPEAT
from toolnursery._core._json import thaw

Capture = pytest.CaptureFixture[str]
QUICK = ["--repeat", "2", "--progress", "never"]
READ_ONLY = {"read_file", "list_dir", "search_text"}


def report_of(capsys: Capture) -> tuple[BenchReport, dict[str, Any], str]:
    captured = capsys.readouterr()
    return (
        msgspec.json.decode(captured.out, type=BenchReport),
        json.loads(captured.out),
        captured.err,
    )


def runs_of(n: int, repeat: int) -> tuple[int, int]:
    """(bodies, pipeline calls) a bench of the user's tools runs: a warm-up and
    ``SAMPLES`` samples per repetition on each side, and the phase run."""
    runs = 1 + repeat * SAMPLES
    return n * (2 * runs + 1), n * (runs + 1)


def check_clock(clock: Clock, repeat: int) -> None:
    for spread in (clock.toolnursery_us, clock.bare_us, clock.ratio):
        assert len(spread.runs) == repeat
        assert spread.min <= spread.median <= spread.max
        assert spread.min > 0
    ours, bare = clock.toolnursery_us.runs, clock.bare_us.runs
    assert clock.ratio.runs == pytest.approx(tuple(a / b for a, b in zip(ours, bare, strict=True)))


REPORT_KEYS = {
    *("workload", "calls", "tools", "max_parallel", "repeat", "samples", "batches_per_sample"),
    *("cpu", "wall", "phase_mean_us", "phase_share", "results_by_code", "load_average"),
    *("python", "trio", "toolnursery"),
}


# -- the default: the benchmarks page's trivial workload -------------------------------------


def test_the_default_is_the_trivial_workload_on_both_clocks(capsys: Capture) -> None:
    assert main(["bench", "--json", "-n", "100", *QUICK]) == 0
    report, raw, err = report_of(capsys)
    assert err == ""
    assert set(raw) == REPORT_KEYS
    assert set(raw["cpu"]) == set(raw["wall"]) == {"toolnursery_us", "bare_us", "ratio"}
    assert set(raw["cpu"]["ratio"]) == {"median", "min", "max", "runs"}
    assert report.workload == "trivial"
    assert (report.calls, report.max_parallel, report.repeat) == (100, 100, 2)
    assert report.tools == {TRIVIAL_TOOL: 100}
    assert (report.samples, report.batches_per_sample) == (SAMPLES, SAMPLE_CALLS // 100)
    assert report.results_by_code == {"ok": 100}
    check_clock(report.cpu, 2)
    check_clock(report.wall, 2)
    assert report.phase_share is not None
    assert report.phase_mean_us is not None
    assert set(report.phase_share) == set(report.phase_mean_us)
    assert sum(report.phase_share.values()) == pytest.approx(1)


def test_a_sample_of_the_trivial_tool_is_at_least_one_batch(capsys: Capture) -> None:
    assert main(["bench", "--json", "-n", str(SAMPLE_CALLS + 1), "--repeat", "1", *QUICK[2:]]) == 0
    report, _, _ = report_of(capsys)
    assert (report.calls, report.batches_per_sample) == (SAMPLE_CALLS + 1, 1)


def test_the_text_report_labels_both_clocks_and_the_workload(capsys: Capture) -> None:
    assert main(["bench", "-n", "50", "--max-parallel", "5", *QUICK]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"toolnursery bench: 50 calls ({TRIVIAL_TOOL} x50), max_parallel 5, "
        f"2 repetitions of {SAMPLES} interleaved samples"
    )
    assert lines[1] == f"workload: {WORKLOADS['trivial']}"
    assert lines[2].split() == ["median", "min", "max", "spread"]
    assert [line.split()[0] for line in lines[3:11]] == [
        *("CPU", "toolnursery", "bare", "ratio"),
        *("wall", "toolnursery", "bare", "ratio"),
    ]
    assert lines[3] == "CPU µs/call"
    assert lines[7] == "wall µs/call"
    assert lines[6].split()[1].endswith("x")
    assert lines[10].split()[1].endswith("x")
    assert lines[11].startswith("clocks: CPU is the process's CPU time (every thread); wall")
    rest = lines[12:]
    if hasattr(os, "getloadavg"):
        assert rest.pop(0).startswith("load average: ")
    assert rest[0].startswith("phase shares: ")
    assert rest[1].startswith("mean wall µs per call in each phase")
    assert rest[-1] == "results: ok 50"


# -- the bundled example tools -----------------------------------------------------------------


def test_examples_run_the_example_tools_on_a_generated_batch(capsys: Capture) -> None:
    assert main(["bench", "--examples", "--json", "-n", "12", *QUICK]) == 0
    report, _, err = report_of(capsys)
    assert err == ""
    assert report.workload == "examples"
    assert (report.calls, report.batches_per_sample) == (12, 1)
    assert set(report.tools) <= READ_ONLY
    assert sum(report.tools.values()) == 12
    assert report.results_by_code == {"ok": 12}
    check_clock(report.cpu, 2)
    check_clock(report.wall, 2)
    assert "workload: the bundled example tools" in render(report)


def test_the_generated_batch_cycles_reads_listings_and_a_search() -> None:
    calls = bundled_calls(["README.md", "src/app.py"], 6)
    assert calls == [
        ToolCall("c1", "read_file", '{"path":"README.md"}'),
        ToolCall("c2", "read_file", '{"path":"src/app.py"}'),
        ToolCall("c3", "list_dir", '{"path":"."}'),
        ToolCall("c4", "list_dir", '{"path":"src"}'),
        ToolCall("c5", "search_text", '{"pattern":"TODO"}'),
        ToolCall("c6", "read_file", '{"path":"README.md"}'),
    ]


def test_resized_repeats_with_fresh_ids_or_cuts() -> None:
    calls = [ToolCall("a", "t", "{}"), ToolCall("b", "t", "{}")]
    assert [c.id for c in resized(calls, 5)] == ["a", "b", "a#2", "b#2", "a#3"]
    assert resized(calls, 1) == calls[:1]


def test_progress_goes_to_stderr_and_leaves_stdout_json(capsys: Capture) -> None:
    assert main(["bench", "--json", "-n", "4", "--repeat", "1", "--progress", "always"]) == 0
    report, _, err = report_of(capsys)
    assert report.calls == 4
    assert "toolnursery bench:" in err


def test_a_report_without_a_load_average_has_no_such_line() -> None:
    spread = Spread.of([1.0])
    clock = Clock(toolnursery_us=spread, bare_us=spread, ratio=spread)
    report = BenchReport(
        workload="tools",
        calls=1,
        tools={"t": 1},
        max_parallel=1,
        repeat=1,
        samples=SAMPLES,
        batches_per_sample=1,
        cpu=clock,
        wall=clock,
        phase_mean_us=None,
        phase_share=None,
        results_by_code={"ok": 1},
        load_average=None,
        python="3",
        trio="0",
        toolnursery="0",
    )
    text = render(report)
    assert "load average" not in text
    assert f"workload: {WORKLOADS['tools']}" in text.splitlines()
    assert "toolnursery bench: 1 calls (t x1), max_parallel 1, 1 repetition of" in text


# -- a registry of the user's ---------------------------------------------------------------

SEEN: dict[str, int] = {"async": 0, "sync": 0, "wrapped": 0}
LOCK = threading.Lock()


async def awaiting(args: Any, ctx: ToolRunContext) -> str:
    assert ctx.call_id
    assert ctx.name == "awaiting"
    await trio.lowlevel.checkpoint()
    SEEN["async"] += 1
    return f"hi {args['who']}"


def blocking(args: Any, ctx: ToolRunContext) -> str:
    assert threading.current_thread() is not threading.main_thread()  # a worker thread
    with LOCK:
        SEEN["sync"] += 1
    return "done"


async def counting(view: ToolDispatchExecution, next_: Any) -> Any:
    SEEN["wrapped"] += 1
    return await next_()


def bench_registry() -> ToolRegistry:
    for key in SEEN:
        SEEN[key] = 0
    registry = ToolRegistry()
    schema = {"type": "object"}
    registry.register(
        ToolDefinition("awaiting", "a", schema, awaiting, is_concurrency_safe=lambda a: True)
    )
    registry.register(ToolDefinition("blocking", "b", schema, blocking))
    registry.on_execute(counting)
    return registry


def test_a_tools_registry_runs_with_its_hooks_on_both_sides(
    tmp_path: Path, capsys: Capture
) -> None:
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "awaiting", "arguments": {"who": "trio"}},
        {"id": "b", "name": "blocking"},
    )
    argv = ["bench", "--tools", "test_cli_bench:bench_registry", "--calls", str(calls)]
    assert main([*argv, "-n", "5", "--json", *QUICK]) == 0
    report, _, _ = report_of(capsys)
    assert report.tools == {"awaiting": 3, "blocking": 2}
    assert report.results_by_code == {"ok": 5}
    bodies, piped = runs_of(1, 2)
    assert {"async": 3 * bodies, "sync": 2 * bodies, "wrapped": 5 * piped} == SEEN


def test_the_calls_file_as_given_without_n(tmp_path: Path, capsys: Capture) -> None:
    calls = write_calls(tmp_path, *({"id": f"c{i}", "name": "blocking"} for i in range(3)))
    argv = ["bench", "--tools", "test_cli_bench:bench_registry", "--calls", str(calls)]
    assert main([*argv, "--json", *QUICK]) == 0
    report, _, _ = report_of(capsys)
    assert (report.calls, report.max_parallel, report.tools) == (3, 3, {"blocking": 3})


class SwitchedRegistry(ToolRegistry):
    """A registry with an opt-in per-phase timing switch, as the bench expects one."""

    phase_timings = False


async def test_the_phase_run_turns_the_switch_on_and_back_off() -> None:
    registry = SwitchedRegistry()
    seen: list[bool] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(registry.phase_timings)
        await trio.lowlevel.checkpoint()
        return "ok"

    registry.register(ToolDefinition("t", "t", {"type": "object"}, body))
    await measure(registry, [ToolCall("c1", "t", "{}")], 1, 1)
    bodies, _ = runs_of(1, 1)
    assert seen == [False] * (bodies - 1) + [True]
    assert registry.phase_timings is False


class UntimedRegistry(ToolRegistry):
    """A registry whose statistics keep no per-phase times."""

    def statistics(self) -> ToolStatistics:
        return ToolStatistics()


async def test_without_phase_timings_the_report_says_so() -> None:
    registry = UntimedRegistry()
    registry.register(ToolDefinition("awaiting", "a", {"type": "object"}, awaiting))
    report = await measure(registry, [ToolCall("c1", "awaiting", '{"who": "x"}')], 1, 1)
    assert report.phase_mean_us is None
    assert report.phase_share is None
    assert "phases: phase timings unavailable" in render(report).splitlines()
    assert json.loads(msgspec.json.encode(report))["phase_share"] is None


async def test_calls_whose_arguments_cannot_be_parsed_run_on_neither_side() -> None:
    registry = bench_registry()
    calls = [ToolCall("c1", "awaiting", '{"who": "x"}'), ToolCall("c2", "awaiting", '"\ud800"')]
    report = await measure(registry, calls, 2, 1)
    assert report.results_by_code == {"INVALID_ARGS": 1, "ok": 1}
    bodies, _ = runs_of(1, 1)
    assert SEEN["async"] == bodies  # c1's only


async def test_both_sides_give_the_body_the_arguments_the_pipeline_would() -> None:
    registry = ToolRegistry()
    seen: dict[str, list[Any]] = {}

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.setdefault(ctx.call_id, []).append(args)
        await trio.lowlevel.checkpoint()
        return "ok"

    registry.register(ToolDefinition("t", "t", {}, body, is_concurrency_safe=lambda a: True))
    calls = [
        ToolCall("text", "t", '{"who": "x", "n": [1, 2]}'),
        ToolCall("mapping", "t", {"who": "y"}),
        ToolCall("empty", "t", ""),
        ToolCall("not-json", "t", "plain words"),
    ]
    report = await measure(registry, calls, 4, 1)
    assert report.results_by_code == {"INVALID_ARGS": 1, "ok": 3}
    expected = {"text": {"who": "x", "n": [1, 2]}, "mapping": {"who": "y"}, "empty": {}}
    bodies, _ = runs_of(1, 1)
    assert set(seen) == set(expected)  # text that is not an object runs on neither side
    for call_id, value in expected.items():
        assert len(seen[call_id]) == bodies
        # the pipeline's arguments are frozen (read-only mappings, tuples): compare thawed
        assert all(thaw(args) == value for args in seen[call_id]), call_id


# -- bad input --------------------------------------------------------------------------------


def error_of(capsys: Capture, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    assert captured.out == ""
    return code, captured.err


def test_tools_without_calls_is_a_usage_error(capsys: Capture) -> None:
    code, err = error_of(capsys, ["bench", "--tools", "test_cli_bench:bench_registry"])
    assert (code, err) == (
        2,
        "toolnursery: error: --tools needs --calls: the bench runs the calls you give it "
        "on your tools\n",
    )


def test_examples_with_tools_is_a_usage_error(tmp_path: Path, capsys: Capture) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "awaiting"})
    argv = ["bench", "--examples", "--tools", "test_cli_bench:bench_registry"]
    assert error_of(capsys, [*argv, "--calls", str(calls)]) == (
        2,
        "toolnursery: error: --examples runs the bundled example tools: not with --tools\n",
    )


@pytest.mark.parametrize(
    "tools",
    ["no_colon", "missing_module_xyz:registry", "test_cli_bench:nothing", "test_cli_bench:LOCK"],
)
def test_bad_tools_get_the_same_error_as_run(tmp_path: Path, capsys: Capture, tools: str) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "awaiting"})
    ran = error_of(capsys, ["run", str(calls), "--tools", tools])
    benched = error_of(capsys, ["bench", "--calls", str(calls), "--tools", tools])
    assert benched == ran
    assert benched[0] == 2
    assert benched[1].startswith(f"toolnursery: error: --tools {tools!r}: ")
    assert benched[1].count("\n") == 1


@pytest.mark.parametrize(
    "content",
    [b'{"id": "a", "name": "read_file"}\nnot json\n', b"\xff\xfe", b'[{"id": 1, "name": "x"}]'],
)
def test_bad_calls_get_the_same_error_as_run(
    tmp_path: Path, capsys: Capture, content: bytes
) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_bytes(content)
    ran = error_of(capsys, ["run", str(path)])
    benched = error_of(capsys, ["bench", "--calls", str(path)])
    assert benched == ran
    assert benched[0] == 2
    assert benched[1].startswith(f"toolnursery: error: {path}")
    assert benched[1].count("\n") == 1


def test_an_unreadable_calls_file_gets_the_same_error_as_run(
    tmp_path: Path, capsys: Capture
) -> None:
    missing = str(tmp_path / "absent.jsonl")
    benched = error_of(capsys, ["bench", "--calls", missing])
    assert benched == error_of(capsys, ["run", missing])
    assert benched[1].startswith(f"toolnursery: error: cannot read CALLS {missing!r}: ")


def test_empty_calls_are_a_usage_error(tmp_path: Path, capsys: Capture) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text("\n")
    assert error_of(capsys, ["bench", "--calls", str(path)]) == (
        2,
        f"toolnursery: error: no tool calls in {path}; nothing to benchmark\n",
    )


def test_calls_from_stdin(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"name": "list_dir"}\n'))
    assert main(["bench", "--calls", "-", "-n", "3", "--json", *QUICK]) == 0
    report, _, _ = report_of(capsys)
    assert (report.tools, report.results_by_code) == ({"list_dir": 3}, {"ok": 3})
    assert report.workload == "examples"  # --calls alone: on the example tools
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert error_of(capsys, ["bench", "--calls", "-"]) == (
        2,
        "toolnursery: error: no tool calls in <stdin>; nothing to benchmark\n",
    )


def test_calls_to_tools_the_registry_lacks_are_a_usage_error(
    tmp_path: Path, capsys: Capture
) -> None:
    calls = write_calls(tmp_path, {"name": "ghost"}, {"name": "read_file"}, {"name": "spook"})
    assert error_of(capsys, ["bench", "--calls", str(calls)]) == (
        2,
        'toolnursery: error: the calls name tools the registry does not have: "ghost", '
        '"spook" (a bare nursery has no body to run for them)\n',
    )


@pytest.mark.parametrize(
    ("option", "limit"),
    [("-n", MAX_CALLS), ("--repeat", MAX_REPEAT), ("--max-parallel", MAX_PARALLEL)],
)
def test_counts_must_be_positive(capsys: Capture, option: str, limit: int) -> None:
    code, err = error_of(capsys, ["bench", option, "0"])
    assert code == 2
    assert err.endswith(
        f"argument {option}: expected a positive integer of at most {limit}, got '0'\n"
    )


@pytest.mark.timeout(20)
def test_a_huge_n_is_refused_before_anything_is_built(capsys: Capture) -> None:
    code, err = error_of(capsys, ["bench", "-n", "99999999999999999999"])
    assert code == 2
    assert err.splitlines()[-1] == (
        f"toolnursery bench: error: argument -n: expected a positive integer of at most "
        f"{MAX_CALLS}, got '99999999999999999999'"
    )


# -- deadlines: the bare side honours each tool's timeout_ms ----------------------------------

STOPPED: list[str] = []


async def stuck(args: Any, ctx: ToolRunContext) -> str:
    await trio.sleep_forever()
    raise AssertionError("unreachable")


def polling(args: Any, ctx: ToolRunContext) -> str:
    """A thread body that stops when its signal fires (a deadline), or gives up."""
    import time

    for _ in range(500):
        if ctx.signal.cancelled:
            STOPPED.append("signal")
            return "stopped"
        time.sleep(0.001)
    STOPPED.append("ran out")
    return "ran out"


def timed_registry(timeout_ms: float | None = 50, default_ms: float | None = None) -> ToolRegistry:
    from toolnursery import install_timeout_policy

    registry = ToolRegistry()
    schema = {"type": "object"}
    registry.register(ToolDefinition("stuck", "s", schema, stuck, timeout_ms=timeout_ms))
    registry.register(ToolDefinition("polling", "p", schema, polling, timeout_ms=timeout_ms))
    install_timeout_policy(registry, default_timeout_ms=default_ms)
    return registry


def defaulted_registry() -> ToolRegistry:
    return timed_registry(timeout_ms=None, default_ms=50)


@pytest.mark.timeout(30)
async def test_the_bare_side_honours_each_tools_timeout_ms() -> None:
    STOPPED.clear()
    calls = [ToolCall("a", "stuck", "{}"), ToolCall("b", "polling", "{}")]
    with trio.fail_after(20):  # each side takes 50 ms a run; a hang fails
        report = await measure(timed_registry(), calls, 2, 1)
    assert report.results_by_code == {"TOOL_TIMEOUT": 2}
    bodies, _ = runs_of(1, 1)
    assert ["signal"] * bodies == STOPPED  # every thread body stopped at its deadline


async def test_a_deadline_only_the_policy_knows_makes_the_bare_side_give_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from toolnursery._cli._bench import BARE_LIMIT_S, BareSideHung

    calls = [ToolCall("a", "stuck", "{}")]
    began = trio.current_time()
    with pytest.raises(BareSideHung, match="did not finish within 10s"):
        await measure(defaulted_registry(), calls, 1, 1)
    assert trio.current_time() - began == pytest.approx(BARE_LIMIT_S, abs=1)


@pytest.mark.timeout(30)
def test_bench_gives_up_with_a_message_when_the_bare_side_cannot_finish(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolnursery._cli import _bench

    monkeypatch.setattr(_bench, "BARE_LIMIT_S", 0.5)
    calls = write_calls(tmp_path, {"id": "a", "name": "stuck"})
    argv = ["bench", "--tools", "test_cli_bench:defaulted_registry", "--calls", str(calls)]
    code, err = error_of(capsys, [*argv, *QUICK])
    assert code == 1
    assert err.startswith("toolnursery: error: the bare side did not finish within")
    assert "timeout_ms" in err
    assert "Traceback" not in err


@pytest.mark.timeout(30)
def test_bench_tools_whose_bodies_time_out_reports_them(tmp_path: Path, capsys: Capture) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "stuck"})
    argv = ["bench", "--tools", "test_cli_bench:timed_registry", "--calls", str(calls)]
    assert main([*argv, "--json", "--repeat", "1", "--progress", "never"]) == 0
    report, _, _ = report_of(capsys)
    assert report.results_by_code == {"TOOL_TIMEOUT": 1}
