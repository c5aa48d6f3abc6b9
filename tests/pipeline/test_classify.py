"""Fail-closed classification: ``ToolRegistry.execution_mode`` (reference B137–B144).

B140 (a ``define_tool`` classifier with invalid arguments) is tested with define_tool.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from toolnursery import (
    EXCLUSIVE,
    PARALLEL,
    TextContent,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionMode,
    ToolRegistry,
    ToolRunContext,
)


async def _body(args: Any, ctx: ToolRunContext) -> list[TextContent]:
    return [TextContent("ok")]


def tool(name: str = "t", classifier: Any = None) -> ToolDefinition:
    return ToolDefinition(name, "d", {"type": "object"}, _body, is_concurrency_safe=classifier)


def mode(registry: ToolRegistry, name: str = "t", arguments: Any = None, agent: Any = None) -> Any:
    return registry.execution_mode(
        ToolExecutionInput("c1", name, {} if arguments is None else arguments, agent=agent)
    )


@pytest.mark.spec("B137")
def test_only_an_explicit_true_is_parallel() -> None:
    """B137: a classifier returning exactly True → parallel."""
    registry = ToolRegistry()
    registry.register(tool(classifier=lambda args: True))
    assert mode(registry) == PARALLEL
    assert mode(registry) == ToolExecutionMode("parallel")


@pytest.mark.spec("B138")
def test_no_classifier_or_unknown_tool_is_exclusive() -> None:
    """B138: no declaration → exclusive; an unknown tool → exclusive."""
    registry = ToolRegistry()
    registry.register(tool())
    assert mode(registry) == EXCLUSIVE
    assert mode(registry, "ghost") == EXCLUSIVE


@pytest.mark.spec("B139")
def test_classification_is_per_call_arguments() -> None:
    """B139: the same tool is parallel for reads and exclusive for writes."""
    registry = ToolRegistry()
    registry.register(tool(classifier=lambda args: args["mode"] == "read"))
    assert mode(registry, arguments={"mode": "read"}) == PARALLEL
    assert mode(registry, arguments={"mode": "write"}) == EXCLUSIVE


@pytest.mark.spec("B141")
@pytest.mark.parametrize("returned", ["yes", 1, [True], (True,), None, False, 1.0])
def test_truthy_non_boolean_results_are_exclusive(returned: Any) -> None:
    """B141: anything but exactly True — including truthy values — is exclusive."""
    registry = ToolRegistry()
    registry.register(tool(classifier=lambda args: returned))
    assert mode(registry) == EXCLUSIVE


@pytest.mark.spec("B141")
def test_raising_classifier_is_exclusive() -> None:
    """B141: a raising classifier never widens what runs."""
    registry = ToolRegistry()

    def classifier(args: Any) -> bool:
        raise KeyError("mode")

    registry.register(tool(classifier=classifier))
    assert mode(registry) == EXCLUSIVE


@pytest.mark.spec("B142")
def test_raw_classifier_receives_the_arguments_as_given() -> None:
    """B142: a raw classifier receives the input's arguments as given — as a frozen
    snapshot (a deliberate difference from the reference, which passes the caller's own
    object): a classifier must not be able to change the arguments that later run."""
    registry = ToolRegistry()
    seen: list[Any] = []

    def classifier(args: Any) -> bool:
        seen.append(args)
        return True

    registry.register(tool(classifier=classifier))
    arguments = {"anything": 1}
    assert mode(registry, arguments=arguments) == PARALLEL
    assert seen == [arguments]
    with pytest.raises(TypeError):
        seen[0]["anything"] = 2
    assert arguments == {"anything": 1}


@pytest.mark.spec("B143")
def test_mode_is_a_tagged_object_not_a_boolean() -> None:
    """B143: ToolExecutionMode carries kind 'parallel' | 'exclusive' and encodes as an object."""
    assert PARALLEL.kind == "parallel"
    assert EXCLUSIVE.kind == "exclusive"
    assert not isinstance(PARALLEL, bool)
    assert msgspec.json.encode(PARALLEL) == b'{"kind":"parallel"}'
    assert msgspec.json.decode(b'{"kind":"exclusive"}', type=ToolExecutionMode) == EXCLUSIVE
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"kind":"sometimes"}', type=ToolExecutionMode)


@pytest.mark.spec("B144")
def test_classification_resolves_through_the_callers_scope() -> None:
    """B144: a tool hidden by restriction, or in another agent's scope, is exclusive."""
    registry = ToolRegistry()
    registry.register(tool("shared", classifier=lambda args: True))
    restricted = registry.scope()
    restricted.register(tool("mine", classifier=lambda args: True))
    restricted.restrict(deny=["shared"])
    other = registry.scope()
    assert mode(registry, "shared") == PARALLEL
    assert mode(registry, "shared", agent=restricted) == EXCLUSIVE
    assert mode(registry, "mine", agent=restricted) == PARALLEL
    assert mode(registry, "mine", agent=other) == EXCLUSIVE
    assert mode(registry, "mine") == EXCLUSIVE


@pytest.mark.spec("B144")
def test_scoped_shadow_classifies_with_its_own_classifier() -> None:
    """B144: a scope's shadowing tool decides for that scope only."""
    registry = ToolRegistry()
    registry.register(tool("t", classifier=lambda args: True))
    scope = registry.scope()
    scope.register(tool("t", classifier=lambda args: False))
    assert mode(registry, "t") == PARALLEL
    assert mode(registry, "t", agent=scope) == EXCLUSIVE
