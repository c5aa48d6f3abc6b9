"""The ``toolnursery`` command: ``run`` a batch of tool calls, ``replay`` a log, watch
the ``demo``, ``bench`` the pipeline against a bare trio nursery, or ``serve`` a
registry over MCP.

Exit codes: 0 when the batch ran (tool failures are results, not exit codes) or the
log was shown, 1 when the batch itself failed (e.g. the log could not be written), 2
for bad usage or input (nothing ran; a corrupt log), 130 when Ctrl-C cancelled the
batch (every result is still printed).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any, Final, TextIO

import msgspec
import trio

from .._batch._recorder import (
    JsonlRecorder,
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolCallRecorder,
    ToolResultEvent,
)
from .._batch._resume import PlannedRun, read_plan
from .._batch._scheduler import open_tool_batch
from .._core._content import ToolCall, ToolExecutionResult
from .._core._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH, LogFormatError, ResumeError
from .._core._groups import collapse as _sole
from .._core._progress import ProgressReport
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry
from ..examples import example_registry, fill_sandbox
from ._cards import (
    card_width,
    example_presenters,
    read_batches,
    render_card,
    render_replay,
    rich_missing,
    wants_color,
)
from ._demo import render_demo, run_demo
from ._input import FORMATS, CallsInputError, parse_calls, provider_messages
from ._serve import add_serve_parser, serve_command

__all__ = ["main"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130


class UsageError(Exception):
    """Raised when the command line or its input is unusable; nothing has run."""


class _Line(msgspec.Struct, frozen=True):
    id: str
    name: str
    result: ToolExecutionResult


_encode_line = msgspec.json.Encoder().encode


# -- the parser -----------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolnursery",
        description="Run LLM tool calls through toolnursery's policy pipeline and scheduler.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run a batch of tool calls and print the results as JSON lines (or cards)",
        description=(
            "Run the tool calls in CALLS (JSON or JSON lines: toolnursery's "
            '{"id","name","arguments"}, OpenAI\'s tool_calls shape, Anthropic tool_use '
            "blocks or a whole message, Responses function_call items or a whole "
            "response) and print one JSON "
            'line per call, in model order: {"id","name","result"} — or, with --show, '
            "one card per call; with --format, the provider's messages that answer them."
        ),
    )
    run.add_argument("calls", metavar="CALLS", help="a file of tool calls, or - for stdin")
    run.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="a ToolRegistry, or a callable returning one (MODULE may be a path to a .py "
        "file); default: the bundled example tools",
    )
    run.add_argument(
        "--root",
        metavar="DIR",
        help="the directory the example tools work in (default: a temporary sandbox)",
    )
    _common(run)
    run.add_argument(
        "--resume",
        action="store_true",
        help="resume the batch recorded in --log after a crash: committed calls return "
        "their recorded results without running again, interrupted calls of tools that "
        "are not idempotent get an INTERRUPTED result",
    )
    run.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="a progress line on stderr (auto: when stderr is a terminal)",
    )
    run.add_argument(
        "--show",
        action="store_true",
        help="print each call and its result as a card instead of a JSON line (needs rich)",
    )
    run.add_argument(
        "--format",
        choices=FORMATS,
        default="toolnursery",
        help="the output: toolnursery's JSON lines (default), or the messages that answer "
        "the calls in that provider's format, one JSON line each, once the batch is done",
    )
    _width(run)

    replay = commands.add_parser(
        "replay",
        help="print the batches of a --log file as cards",
        description="Print every call recorded in LOG (a --log / JsonlRecorder file) as a "
        "card, batch by batch; a call whose result was never recorded (the batch did not "
        "finish) is shown as pending. A torn last line (a crash mid-write) is skipped.",
    )
    replay.add_argument("log", metavar="LOG", help="the JSON-lines log to show")
    replay.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="the ToolRegistry whose presenters draw the cards, as for run (default: the "
        "bundled example tools; unknown tools get generic cards)",
    )
    replay.add_argument(
        "--markdown", action="store_true", help="print Markdown instead of terminal cards"
    )
    _width(replay)

    demo = commands.add_parser(
        "demo",
        help="run a bundled batch on the example tools and show what ran when",
        description="Run a bundled batch on the example tools in a temporary sandbox and "
        "print a timeline of the tool bodies and every result.",
    )
    _common(demo)
    add_serve_parser(commands)

    from ._bench import add_parser as add_bench_parser

    add_bench_parser(commands, _positive_int)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-parallel",
        type=_positive_int,
        default=10,
        metavar="N",
        help="the most tool bodies running at once (default: 10)",
    )
    parser.add_argument(
        "--log", metavar="PATH", help="append the batch's events to a JSON-lines log"
    )


def _width(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--width",
        type=_positive_int,
        metavar="N",
        help="the cards' width in columns (default: the terminal's, else 80)",
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolnursery")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


# -- main -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``toolnursery`` command.

    Args:
        argv: the arguments after the program name (``sys.argv[1:]`` when ``None``).

    Returns:
        The exit code: 0 ran, 1 the batch failed, 2 bad usage or input, 130 interrupted.
    """
    parser = _parser()
    try:
        options = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports and exits; a caller gets the code
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if options.command == "run":
            return _run_command(options)
        if options.command == "replay":
            return _replay_command(options)
        if options.command == "demo":
            return _demo_command(options)
        if options.command == "serve":
            return serve_command(options, load_registry, _example_registry, _say, UsageError)
        if options.command == "bench":
            from ._bench import bench_command

            return bench_command(options)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        _say(f"error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Ctrl-C outside the batch, or a second one while a cancelled batch drained.
        _say("interrupted")
        return EXIT_INTERRUPTED
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        _say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other tools do.
        _silence_stdout()
        return EXIT_FAILED


def _say(message: str) -> None:
    print(f"toolnursery: {message}", file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


# -- run --------------------------------------------------------------------------------


def _run_command(options: argparse.Namespace) -> int:
    if options.tools is not None and options.root is not None:
        raise UsageError("--root applies to the bundled example tools, not to --tools")
    if options.show:
        _require_rich("--show")
        if options.format != "toolnursery":
            raise UsageError("--show and --format are alternatives: choose one")
    elif options.width is not None:
        raise UsageError("--width applies to --show")
    calls = _read_calls(options.calls)
    registry = load_registry(options.tools) if options.tools is not None else None
    if not calls:
        _say("no tool calls in the input; nothing to run")
        return EXIT_OK
    if options.resume and options.log is None:
        raise UsageError("--resume needs --log: the log of the batch to resume")
    with ExitStack() as stack:
        if registry is None:
            registry = _example_registry(options.root, stack)
        planned = _resume_plan(registry, calls, options.log) if options.resume else None
        recorder = _open_log(options.log, stack)
        to_run = calls if planned is None else planned.calls
        progress = (
            _Progress(sys.stderr, len(to_run), recorder) if _wants_progress(options) else None
        )
        write = _writer(
            progress,
            _card_writer(registry, options) if options.show else None,
            quiet=options.format != "toolnursery",
        )
        try:
            sink: ToolCallRecorder | None = progress if progress is not None else recorder
            if planned is not None:  # events of the calls that run keep their indices
                sink = planned.recorder(sink)
            interrupted, results = trio.run(
                _run_batch,
                registry,
                to_run,
                options.max_parallel,
                sink,
                write,
                partial(_interrupted, progress),
                planned,
            )
        except BrokenPipeError:
            raise
        except Exception as exc:
            if progress is not None:
                progress.clear()
            _say(f"error: the batch failed: {type(exc).__name__}: {exc}")
            return EXIT_FAILED
        if progress is not None:
            progress.finish()
        if options.format != "toolnursery":
            for message in provider_messages(options.format, calls[: len(results)], results):
                sys.stdout.write(_encode_line(message).decode() + "\n")
            sys.stdout.flush()
        if interrupted:
            aborted = sum(
                1
                for r in results
                if r.error is not None
                and r.error.code in (TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH)
            )
            _say(f"interrupted: the batch was cancelled ({aborted} of {len(results)} aborted)")
            return EXIT_INTERRUPTED
        return EXIT_OK


def _read_calls(source: str) -> list[ToolCall]:
    if source == "-":
        name = "<stdin>"
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError:
            raise UsageError("<stdin>: not UTF-8 text") from None
    else:
        name = source
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read CALLS {source!r}: {exc.strerror or exc}") from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise UsageError(f"{source} line {line}: not UTF-8 text") from exc
    try:
        return parse_calls(text, name)
    except CallsInputError as exc:
        raise UsageError(str(exc)) from exc


def _example_registry(root: str | None, stack: ExitStack) -> ToolRegistry:
    if root is None:
        sandbox = stack.enter_context(tempfile.TemporaryDirectory(prefix="toolnursery-"))
        fill_sandbox(sandbox)
        _say(
            f"no --root: the example tools work in a temporary sandbox {sandbox} (removed on exit)"
        )
        return example_registry(sandbox)
    try:
        return example_registry(root)
    except NotADirectoryError:
        raise UsageError(f"--root {root!r} is not a directory") from None


def _resume_plan(registry: ToolRegistry, calls: list[ToolCall], log: str) -> PlannedRun:
    try:
        plan = read_plan(registry, calls, log)
    except (LogFormatError, ResumeError) as exc:
        raise UsageError(f"cannot resume from --log: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"cannot read --log {log!r}: {exc.strerror or exc}") from exc
    if plan.batch_id is None:
        _say(f"--resume: no batch in {log} has these calls; running all {len(calls)}")
    else:
        _say(
            f"--resume: batch {plan.batch_id}: {plan.count('replay')} recorded, "
            f"{plan.count('run')} to run, {plan.count('interrupted')} interrupted"
        )
    return PlannedRun(plan)


def _open_log(path: str | None, stack: ExitStack) -> JsonlRecorder | None:
    if path is None:
        return None
    try:
        recorder = JsonlRecorder(path)
    except OSError as exc:
        raise UsageError(f"cannot open --log {path!r}: {exc.strerror or exc}") from exc
    stack.callback(recorder.close)
    return recorder


def _wants_progress(options: argparse.Namespace) -> bool:
    if options.progress == "auto":
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty is not None and isatty())
    return bool(options.progress == "always")


def load_registry(spec: str) -> ToolRegistry:
    """Resolve a ``--tools MODULE:ATTR`` spec to a :class:`ToolRegistry`.

    ``MODULE`` is a dotted module name (the current directory is importable, as with
    ``python -m``) or a path to a ``.py`` file; ``ATTR`` (dotted) names a registry or
    a callable taking no arguments that returns one.

    Raises:
        UsageError: the spec is malformed, does not import, or names something else.
    """
    module_name, colon, attr = spec.rpartition(":")
    if not colon or not module_name or not attr:
        raise UsageError(f"--tools {spec!r}: expected MODULE:ATTR, e.g. mytools:registry")
    module = _import(module_name, spec)
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(
                f"--tools {spec!r}: {module_name!r} has no attribute {attr!r}"
            ) from None
    if isinstance(target, ToolRegistry):
        return target
    if not callable(target):
        raise UsageError(
            f"--tools {spec!r}: expected a ToolRegistry or a callable returning one, "
            f"got {type(target).__name__}"
        )
    try:
        made = target()
    except Exception as exc:
        raise UsageError(f"--tools {spec!r}: calling {attr}() raised {_describe(exc)}") from exc
    if not isinstance(made, ToolRegistry):
        raise UsageError(
            f"--tools {spec!r}: {attr}() returned {type(made).__name__}, not a ToolRegistry"
        )
    return made


def _import(module_name: str, spec: str) -> Any:
    is_file = module_name.endswith(".py") or os.sep in module_name or "/" in module_name
    try:
        if is_file:
            return _import_file(Path(module_name), spec)
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.insert(0, cwd)
        return importlib.import_module(module_name)
    except UsageError:
        raise
    except ModuleNotFoundError as exc:
        raise UsageError(f"--tools {spec!r}: cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise UsageError(
            f"--tools {spec!r}: importing {module_name!r} raised {_describe(exc)}"
        ) from exc


def _import_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise UsageError(f"--tools {spec!r}: no such file {str(path)!r}")
    name = f"_toolnursery_tools_{abs(hash(path.resolve()))}"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise UsageError(f"--tools {spec!r}: {str(path)!r} is not a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _interrupted(progress: _Progress | None) -> None:
    if progress is not None:
        progress.clear()
    _say("Ctrl-C: cancelling the batch (press again to stop at once)")
    if progress is not None:
        progress.draw()


def _writer(
    progress: _Progress | None,
    show: Callable[[ToolCall, ToolExecutionResult], str] | None = None,
    *,
    quiet: bool = False,
) -> Callable[[ToolCall, ToolExecutionResult], None]:
    def write(call: ToolCall, result: ToolExecutionResult) -> None:
        if quiet:
            return  # the messages are written when the batch is done
        if show is not None:
            line = show(call, result)
        else:
            line = _encode_line(_Line(call.id, call.name, result)).decode() + "\n"
        if progress is not None:
            progress.clear()
        sys.stdout.write(line)
        sys.stdout.flush()
        if progress is not None:
            progress.draw()

    return write


def _require_rich(what: str) -> None:
    if rich_missing():
        raise UsageError(
            f"{what} draws cards with rich, which is not installed: "
            "pip install 'toolnursery[cli]' (or pip install rich)"
        )


def _card_writer(
    registry: ToolRegistry, options: argparse.Namespace
) -> Callable[[ToolCall, ToolExecutionResult], str]:
    width = card_width(options.width)
    color = wants_color()

    def show(call: ToolCall, result: ToolExecutionResult) -> str:
        return render_card(registry, call, result, width=width, color=color)

    return show


async def _run_batch(
    registry: ToolRegistry,
    calls: list[ToolCall],
    max_parallel: int,
    recorder: ToolCallRecorder | None,
    write: Callable[[ToolCall, ToolExecutionResult], None],
    on_interrupt: Callable[[], None],
    planned: PlannedRun | None = None,
) -> tuple[bool, list[ToolExecutionResult]]:
    """Run the batch, writing each result as it commits; Ctrl-C cancels it.

    With ``planned`` (``--resume``), ``calls`` are the calls that run; every call's
    result is still written, in model order.

    Returns:
        Whether Ctrl-C cancelled the batch, and the results in model order.
    """
    cancel = CancelSignal()
    results: list[ToolExecutionResult] = []
    try:
        async with trio.open_nursery() as nursery:
            if threading.current_thread() is threading.main_thread():
                await nursery.start(_cancel_on_sigint, cancel, on_interrupt)
            async with open_tool_batch(
                registry,
                signal=cancel,
                max_parallel=max_parallel,
                recorder=recorder,
                batch_id=None if planned is None else planned.plan.batch_id,
            ) as batch:
                for call in calls:
                    batch.submit(call)
                batch.close()
                async for call, result in batch:
                    results.append(result)
                    if planned is None:
                        write(call, result)
                    else:
                        for shown in planned.ordered(len(results), result):
                            write(*shown)
            nursery.cancel_scope.cancel()
        if planned is not None:
            planned.finish()
            for shown in planned.ordered(len(results), None):
                write(*shown)
            results = planned.merge(results)
    except BaseExceptionGroup as group:
        # The signal task is ours, not the caller's: report the failure itself.
        raise _sole(group) from None
    return cancel.cancelled, results


async def _cancel_on_sigint(
    cancel: CancelSignal,
    on_interrupt: Callable[[], None],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Turn the first Ctrl-C into the batch's cancellation.

    The receiver is closed right after, which restores trio's own handling: a second
    Ctrl-C raises ``KeyboardInterrupt`` instead of waiting for the batch to drain.
    """
    with trio.open_signal_receiver(signal.SIGINT) as received:
        task_status.started()
        async for _ in received:
            cancel.cancel("interrupted (SIGINT)")
            on_interrupt()
            return


class _Progress:
    """A one-line status on a terminal, fed by the batch's recorder events.

    It forwards every event to ``inner`` (the ``--log`` recorder) first, so the
    durable log never depends on the display.
    """

    def __init__(self, stream: TextIO, total: int, inner: JsonlRecorder | None) -> None:
        self.stream = stream
        self.total = total
        self.inner = inner
        self.running: dict[int, str] = {}
        self.progress: dict[int, str] = {}
        self.done = 0
        self.errors = 0
        self.shown = False

    def record(self, event: RecorderEvent, /) -> None:
        if self.inner is not None:
            self.inner.record(event)
        if isinstance(event, ToolCallEvent):
            self.running[event.index] = event.call.name
        elif isinstance(event, ProgressEvent):
            report = event.report
            if not isinstance(report, ProgressReport) or event.index not in self.running:
                return
            self.progress[event.index] = _progress_text(report)
        elif isinstance(event, ToolResultEvent):
            self.running.pop(event.index, None)
            self.progress.pop(event.index, None)
            self.done += 1
            self.errors += event.result.is_error
        else:
            return
        self.draw()

    def status(self) -> str:
        errors = f", {self.errors} failed" if self.errors else ""
        counts = Counter(self.running.values())
        names = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in counts.items())
        running = f"  running: {names}" if names else ""
        latest = next(reversed(self.progress.items()), None)
        if latest is not None:
            running += f"  [{self.running[latest[0]]} {latest[1]}]"
        return f"toolnursery: {self.done}/{self.total} done{errors}{running}"

    def draw(self) -> None:
        width = shutil.get_terminal_size((80, 24)).columns - 1
        self._write("\r\x1b[2K" + self.status()[:width])
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self._write("\r\x1b[2K")
            self.shown = False

    def finish(self) -> None:
        self.clear()
        errors = f", {self.errors} failed" if self.errors else ""
        self._write(f"toolnursery: {self.done}/{self.total} done{errors}\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a display that cannot be written is not worth failing the batch over


def _progress_text(report: ProgressReport) -> str:
    amount = f"{report.progress:g}" + (f"/{report.total:g}" if report.total is not None else "")
    return f"{amount} {report.message}" if report.message else amount


# -- replay -----------------------------------------------------------------------------


def _replay_command(options: argparse.Namespace) -> int:
    if options.markdown and options.width is not None:
        raise UsageError("--width applies to terminal cards, not --markdown")
    if not options.markdown:
        _require_rich("replay")
    registry = load_registry(options.tools) if options.tools is not None else example_presenters()
    try:
        batches, torn = read_batches(options.log)
    except LogFormatError as exc:
        raise UsageError(
            f"{options.log} line {exc.line}: not a toolnursery event: {exc.text!r}"
        ) from exc
    except OSError as exc:
        raise UsageError(f"cannot read LOG {options.log!r}: {exc.strerror or exc}") from exc
    for number in torn:
        _say(f"{options.log} line {number} is a torn event (a writer died mid-write); skipped")
    if not batches:
        _say(f"{options.log}: no tool calls recorded")
        return EXIT_OK
    width = card_width(options.width)
    color = not options.markdown and wants_color()
    for piece in render_replay(
        batches, registry, markdown=options.markdown, width=width, color=color
    ):
        sys.stdout.write(piece)
    sys.stdout.flush()
    return EXIT_OK


# -- demo -------------------------------------------------------------------------------


def _demo_command(options: argparse.Namespace) -> int:
    with ExitStack() as stack:
        recorder = _open_log(options.log, stack)
        sandbox = stack.enter_context(tempfile.TemporaryDirectory(prefix="toolnursery-demo-"))
        fill_sandbox(sandbox)
        run = trio.run(
            partial(run_demo, sandbox, max_parallel=options.max_parallel, recorder=recorder)
        )
        sys.stdout.write(render_demo(run, f"{sandbox} (temporary, removed on exit)"))
        sys.stdout.flush()
    return EXIT_OK
