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
import difflib
import os
import sys
from collections.abc import Sequence

from ._bench import add_bench_parser, bench_command
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MAX_PARALLEL,
    MAX_WIDTH,
    UsageError,
    bounded_int,
    say,
    version,
)
from ._demo import demo_command
from ._input import FORMATS
from ._replay import replay_command
from ._run import run_command
from ._serve import add_serve_parser, serve_command

__all__ = ["main"]


# -- the parser -----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolnursery",
        description="Run LLM tool calls through toolnursery's policy pipeline and scheduler.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
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
    _batch_options(run)
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
        help="the progress display on stderr: the calls in flight with their progress "
        "bars on a terminal, else one status line (auto: when stderr is a terminal)",
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
    _timeline(replay, "instead of printing cards, draw the log's calls")

    demo = commands.add_parser(
        "demo",
        help="run a bundled batch on the example tools and show what ran when",
        description="Run a bundled batch on the example tools in a temporary sandbox and "
        "print a timeline of the tool bodies and every result.",
    )
    _batch_options(demo)
    _timeline(demo, "also draw the demo batch")
    add_serve_parser(commands)
    add_bench_parser(commands)
    return parser


def _batch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-parallel",
        type=bounded_int(MAX_PARALLEL),
        default=10,
        metavar="N",
        help=f"the most tool bodies running at once (default: 10, at most {MAX_PARALLEL})",
    )
    parser.add_argument(
        "--log", metavar="PATH", help="append the batch's events to a JSON-lines log"
    )


def _timeline(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--timeline",
        metavar="OUT",
        help=f"{what} as a timeline picture in OUT: .svg, or .html (hover a row for its "
        "card); one row per call, waiting, running and committing on one time axis",
    )


def _width(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--width",
        type=bounded_int(MAX_WIDTH),
        metavar="N",
        help=f"the cards' width in columns (default: the terminal's, else 80; at most {MAX_WIDTH})",
    )


# -- main -----------------------------------------------------------------------------


def _unrecognized(parser: argparse.ArgumentParser, command: str | None, unknown: list[str]) -> None:
    """Exit with a usage error naming the unknown options, in the command's own usage,
    with the option each was likely meant to be (``--formt`` → ``--format``); the
    command's arguments are not used (a value after a mistyped option is not a file)."""
    where = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            where = action.choices[command]
    known = [o for action in where._actions for o in action.option_strings]
    hints = []
    for word in unknown:
        close = difflib.get_close_matches(word.split("=")[0], known, n=1)
        hints.append(f"{word} (did you mean {close[0]}?)" if close else word)
    where.error("unrecognized arguments: " + " ".join(hints))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``toolnursery`` command.

    Args:
        argv: the arguments after the program name (``sys.argv[1:]`` when ``None``).

    Returns:
        The exit code: 0 ran, 1 the batch failed, 2 bad usage or input, 130 interrupted.
    """
    parser = _parser()
    try:
        options, unknown = parser.parse_known_args(argv)
        if unknown:
            _unrecognized(parser, options.command, unknown)
    except SystemExit as exc:  # argparse reports and exits; a caller gets the code
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if options.command == "run":
            return run_command(options)
        if options.command == "replay":
            return replay_command(options)
        if options.command == "demo":
            return demo_command(options)
        if options.command == "serve":
            return serve_command(options)
        if options.command == "bench":
            return bench_command(options)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        say(f"error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Ctrl-C outside the batch, or a second one while a cancelled batch drained.
        say("interrupted")
        return EXIT_INTERRUPTED
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other tools do.
        _silence_stdout()
        return EXIT_FAILED


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
