"""``toolnursery replay``: the batches of a ``--log`` file, as cards or a timeline picture."""

from __future__ import annotations

import argparse
import sys

from .._core._errors import LogFormatError
from ._cards import card_width, example_presenters, read_batches, render_replay, wants_color
from ._common import EXIT_OK, UsageError, load_registry, require_rich, say
from ._timeline import timeline_format, write_timeline

__all__ = ["replay_command"]


def replay_command(options: argparse.Namespace) -> int:
    """Run ``toolnursery replay`` with parsed ``options``.

    Returns:
        The exit code: 0 once the log is shown (an empty log included).

    Raises:
        UsageError: the options are unusable, or the log cannot be read or holds a
            line that is not an event.
    """
    timeline = options.timeline
    if timeline is not None:
        timeline_format(timeline)  # a bad OUT fails before the log is read
        if options.markdown or options.width is not None:
            raise UsageError("--markdown and --width apply to cards, not --timeline")
    if options.markdown and options.width is not None:
        raise UsageError("--width applies to terminal cards, not --markdown")
    if not options.markdown and timeline is None:
        require_rich("replay")
    registry = load_registry(options.tools) if options.tools is not None else example_presenters()
    try:
        batches, torn = read_batches(options.log)
    except LogFormatError as exc:
        raise UsageError(f"{options.log} line {exc.line}: {exc.why}: {exc.text!r}") from exc
    except OSError as exc:
        raise UsageError(f"cannot read LOG {options.log!r}: {exc.strerror or exc}") from exc
    for number in torn:
        say(f"{options.log} line {number} is a torn event (a writer died mid-write); skipped")
    if not batches:
        say(f"{options.log}: no tool calls recorded")
        if timeline is None:
            return EXIT_OK
    if timeline is not None:
        write_timeline(timeline, options.log, registry=registry)
        calls = sum(len(batch.calls) for batch in batches)
        say(f"wrote {timeline}: {calls} call{'s' if calls != 1 else ''}")
        return EXIT_OK
    width = card_width(options.width)
    color = not options.markdown and wants_color()
    for piece in render_replay(
        batches, registry, markdown=options.markdown, width=width, color=color
    ):
        sys.stdout.write(piece)
    sys.stdout.flush()
    return EXIT_OK
