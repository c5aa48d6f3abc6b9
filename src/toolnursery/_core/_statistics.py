"""Statistics: counters the pipeline and the scheduler keep, and their frozen snapshot.

The counters are plain integer attributes bumped on the hot path (a call costs a few
increments; with ``phase_timings`` on, two reads of ``time.perf_counter_ns`` per phase
with work); everything derived —
in-flight counts, seconds, read-only mappings — is computed only when a snapshot is
taken. ``ToolRegistry.statistics()`` covers every call through the registry (its
``execute()`` and every batch); ``ToolBatch.statistics()`` one batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from time import perf_counter_ns
from typing import Final

import msgspec
from msgspec.structs import force_setattr

from ._content import ToolExecutionResult
from ._json import FrozenDict

__all__ = ["PHASES", "ToolStatistics"]

PHASES: Final = ("prepare", "wait", "dispatch", "finalize")
"""The phases ``phase_seconds`` reports, in pipeline order."""

OK: Final = "ok"
"""The ``results_by_code`` key of successful results."""
ERROR: Final = "error"
"""The ``results_by_code`` key of error results without an error code."""

now = perf_counter_ns
"""The clock of the phase timers (nanoseconds); tests may replace it."""


class ToolStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """A frozen snapshot of the calls through a registry or a batch.

    Attributes:
        started: calls that entered the pipeline (for a batch: every call it took up,
            including duplicates and the synthetic ``ABORTED_BEFORE_DISPATCH`` ones).
        committed: calls that produced their final result.
        abandoned: calls that started but will never commit: cancelled from an
            enclosing scope, or cut off by a batch's internal failure. (A batch call
            whose ``tool_call`` event its recorder failed to take never reaches the
            registry: the batch counts it started and abandoned, the registry not
            at all.)
        in_flight: ``started - committed - abandoned``: calls under way now. Never
            negative; 0 once every batch and ``execute()`` has returned or raised,
            so then ``started == committed + abandoned``.
        waiting: calls under way that wait for their turn right now — for a tool's
            ``max_concurrency`` (registry and batch), and in a batch also for an
            earlier conflicting call or for a slot under ``max_parallel``.
        results_by_code: committed results by outcome: ``"ok"`` for successes, the
            error code (``"ABORTED"``, ``"TOOL_TIMEOUT"``, …) for errors that carry
            one, ``"error"`` for errors without a code.
        phase_seconds: the time calls spent in each phase, summed over calls:
            ``prepare`` (snapshot, pre-execute, approval, guards), ``wait`` (a batch's
            calls waiting for a conflicting call or a slot), ``dispatch`` (execute
            wrappers and the body, including a wait for the tool's limit) and
            ``finalize`` (post-execute, materialization, observers). Phase times are
            opt-in (``ToolRegistry(phase_timings=True)``, or set the attribute): a
            call that began with them off adds nothing, so with them off all along
            every phase reads ``0.0``.
    """

    started: int = 0
    committed: int = 0
    abandoned: int = 0
    in_flight: int = 0
    waiting: int = 0
    results_by_code: Mapping[str, int] = FrozenDict()
    phase_seconds: Mapping[str, float] = FrozenDict()

    def __post_init__(self) -> None:
        if type(self.results_by_code) is not FrozenDict:
            force_setattr(self, "results_by_code", FrozenDict(self.results_by_code))
        if type(self.phase_seconds) is not FrozenDict:
            force_setattr(self, "phase_seconds", FrozenDict(self.phase_seconds))


class Counters:
    """The mutable counters behind a :class:`ToolStatistics` (internal).

    Times are integer nanoseconds from :data:`now`. A success costs one increment
    (``ok``); :meth:`count_error` counts the rest by code. A batch counts its calls
    and outcomes itself and passes them to :meth:`snapshot`.
    """

    __slots__ = (
        "abandoned",
        "codes",
        "dispatch",
        "errors",
        "finalize",
        "ok",
        "prepare",
        "started",
        "wait",
        "waiting",
    )

    def __init__(self) -> None:
        self.started: int = 0
        self.ok: int = 0
        self.errors: int = 0
        self.codes: dict[str, int] = {}
        self.abandoned: int = 0
        self.waiting: int = 0
        self.prepare: int = 0
        self.wait: int = 0
        self.dispatch: int = 0
        self.finalize: int = 0

    def count_error(self, result: ToolExecutionResult) -> None:
        """Count one committed error result by its code (a success is ``ok += 1``)."""
        self.errors += 1
        error = result.error
        code = ERROR if error is None else error.code
        codes = self.codes
        codes[code] = codes.get(code, 0) + 1

    def snapshot(
        self,
        started: int | None = None,
        committed: int | None = None,
        results_by_code: dict[str, int] | None = None,
        waiting: int | None = None,
    ) -> ToolStatistics:
        """The counters as a frozen :class:`ToolStatistics`.

        Args:
            started: the calls started, when the owner counts them itself.
            committed: the calls committed, likewise.
            results_by_code: the outcome counts, likewise.
            waiting: the calls waiting now, likewise.
        """
        if started is None:
            started = self.started
        if committed is None:
            committed = self.ok + self.errors
        if results_by_code is None:
            results_by_code = {OK: self.ok} if self.ok else {}
            results_by_code.update(self.codes)
        if waiting is None:
            waiting = self.waiting
        abandoned = self.abandoned
        return ToolStatistics(
            started=started,
            committed=committed,
            abandoned=abandoned,
            in_flight=started - committed - abandoned,
            waiting=waiting,
            results_by_code=FrozenDict(sorted(results_by_code.items())),
            phase_seconds=FrozenDict(
                prepare=self.prepare / 1e9,
                wait=self.wait / 1e9,
                dispatch=self.dispatch / 1e9,
                finalize=self.finalize / 1e9,
            ),
        )


def outcome(result: ToolExecutionResult) -> str:
    """The ``results_by_code`` key of one result."""
    if not result.is_error:
        return OK
    error = result.error
    return ERROR if error is None else error.code
