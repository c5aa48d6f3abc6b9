"""An asked call's arguments, checked before a person is asked about it.

When the pre-execute waterfall answers ``Ask`` and an approval service would be
consulted, :func:`check_before_asking` runs the tool's own argument check first (the
check its ``execute`` would run at dispatch: ``define_tool``'s and ``@tool``'s parser, a
raw schema's check, a mounted MCP tool's). Arguments it refuses end the call with the
tool's ``INVALID_ARGS`` result, the very result the call would have had after a grant,
and nobody is asked. Arguments it accepts are not checked again: the call's plan becomes
a copy whose body is the tool's body on what the check parsed. Should the registry
change before dispatch, the rebuilt plan keeps that body only while the definition is
the one that was checked; a new definition checks the arguments itself, at dispatch.

A call of a name the caller's view does not have, or of a tool that checks nothing
(``validate=False``, a wrapper that hides how it checks), is asked as before; so is one
whose check raised something other than :class:`~toolnursery.ToolArgsError` (no verdict
on the arguments: the body's check says it, at dispatch).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._core._content import ToolExecutionResult
from .._core._errors import ToolArgsError
from .._core._outcomes import failure_result
from .._tools._raw import argument_check

if TYPE_CHECKING:
    from .._core._scope import AgentScope
    from .._tools._definition import ToolDefinition
    from ._call import CallRecord
    from ._plan import ToolPlan

__all__ = ["check_before_asking", "refused_arguments"]


def check_before_asking(call: CallRecord) -> ToolExecutionResult | None:
    """The tool's ``INVALID_ARGS`` result when its check refuses the call's arguments,
    else ``None`` (ask): accepted arguments are kept parsed for the call's dispatch."""
    plan = call.current_plan()
    definition = plan.definition
    if definition is None:
        return None
    split = argument_check(definition.execute)
    if split is None:
        return None
    parse, run = split
    try:
        parsed = parse(call.args)
    except ToolArgsError as exc:
        return failure_result(exc)
    except Exception:
        return None
    call.plan = _checked(plan, definition, _Checked(run, parsed))
    return None


def refused_arguments(definition: ToolDefinition | None, arguments: Any) -> ToolArgsError | None:
    """Why ``definition``'s own argument check refuses ``arguments``, else ``None`` (also
    for a tool that checks nothing, or a check that raised something else): for an asker
    that is no approval service (a served MCP call's client), which must not ask either."""
    split = None if definition is None else argument_check(definition.execute)
    if split is None:
        return None
    try:
        split[0](arguments)
    except ToolArgsError as exc:
        return exc
    except Exception:
        return None
    return None


class _Checked:
    """A body on arguments already checked: ``run(args, parsed, ctx)``."""

    __slots__ = ("parsed", "run")

    def __init__(self, run: Callable[[Any, Any, Any], Any], parsed: Any) -> None:
        self.run = run
        self.parsed = parsed

    def __call__(self, args: Any, ctx: Any) -> Any:
        return self.run(args, self.parsed, ctx)


def _checked(plan: ToolPlan, definition: ToolDefinition, body: _Checked) -> ToolPlan:
    twin = copy.copy(plan)
    twin.body = body
    twin.check = None
    twin.rebuild = _Rebuild(plan.rebuild, definition, body)
    return twin


class _Rebuild:
    """A checked plan's rebuild: the registry's, checked again only for the same definition."""

    __slots__ = ("body", "definition", "rebuild")

    def __init__(
        self,
        rebuild: Callable[[str, AgentScope | None], ToolPlan],
        definition: ToolDefinition,
        body: _Checked,
    ) -> None:
        self.rebuild = rebuild
        self.definition = definition
        self.body = body

    def __call__(self, name: str, agent: AgentScope | None) -> ToolPlan:
        fresh = self.rebuild(name, agent)
        if fresh.definition is self.definition:
            return _checked(fresh, self.definition, self.body)
        return fresh
