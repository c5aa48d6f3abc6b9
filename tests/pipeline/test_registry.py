"""Registration, lookup, the schemas() projection, scopes and restrictions.

Reference behaviours B001–B010 (B004 and B011 are out of scope: canonical tool order
belongs to the prompt assembly, and ``run_code`` is Code Mode) and B034–B044.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest

from support import text
from toolnursery import (
    RegistrationError,
    TextContent,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    ToolSchema,
)

PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "Absolute path"}},
    "required": ["path"],
}


def make_tool(name: str, **kwargs: Any) -> ToolDefinition:
    async def body(args: Any, ctx: ToolRunContext) -> list[TextContent]:
        return [TextContent(f"{name} ran")]

    kwargs.setdefault("validate", False)  # these tests call with {}: about views, not args
    return ToolDefinition(
        name, f"the {name} tool", kwargs.pop("parameters", PARAMS), body, **kwargs
    )


def names(registry: ToolRegistry, scope: Any = None) -> list[str]:
    return [s.name for s in registry.schemas(scope)]


# -- A. registration and projection ---------------------------------------------------


@pytest.mark.spec("B001")
def test_schemas_project_only_name_description_parameters() -> None:
    """B001: schemas() is an allowlist — execute, timeout_ms, classifier, presenters never appear."""
    registry = ToolRegistry()
    registry.register(
        make_tool(
            "read",
            timeout_ms=100,
            is_concurrency_safe=lambda args: True,
            present_call=lambda args: None,
            present_result=lambda args, result: None,
        )
    )
    (schema,) = registry.schemas()
    assert type(schema) is ToolSchema
    wire = msgspec.json.decode(msgspec.json.encode(registry.schemas()))
    assert wire == [{"name": "read", "description": "the read tool", "parameters": PARAMS}]
    assert set(wire[0]) == {"name", "description", "parameters"}
    assert [f.name for f in msgspec.structs.fields(ToolSchema)] == [
        "name",
        "description",
        "parameters",
    ]


@pytest.mark.spec("B002")
def test_schemas_are_detached_deep_copies() -> None:
    """B002: mutating a returned schema changes neither the registry nor the next schemas()."""
    registry = ToolRegistry()
    definition = make_tool("read")
    registry.register(definition)
    first = registry.schemas()[0]
    first.parameters["properties"]["path"]["description"] = "mutated"
    first.parameters["properties"]["evil"] = {"type": "string"}
    first.parameters["required"].append("evil")
    second = registry.schemas()[0]
    assert second.parameters == PARAMS
    assert second.parameters is not first.parameters
    assert definition.parameters == PARAMS
    assert registry.schemas()[0].parameters["properties"] is not second.parameters["properties"]


@pytest.mark.spec("B003")
def test_schemas_follow_registration_order_then_scope_tools() -> None:
    """B003: globals in registration order, then scope-local tools; unregister removes."""
    registry = ToolRegistry()
    registry.register(make_tool("zeta"))
    registry.register(make_tool("echo"))
    scope = registry.scope()
    dispose = scope.register(make_tool("scoped"))
    assert names(registry, scope) == ["zeta", "echo", "scoped"]
    assert names(registry) == ["zeta", "echo"]
    dispose()
    assert names(registry, scope) == ["zeta", "echo"]


@pytest.mark.spec("B003")
def test_shadowing_scope_tool_keeps_global_position() -> None:
    """B003: a scope-local tool that shadows a global keeps the global's position."""
    registry = ToolRegistry()
    registry.register(make_tool("a"))
    registry.register(make_tool("b"))
    scope = registry.scope()
    scope.register(make_tool("c"))
    shadow = make_tool("a", parameters={"type": "object", "properties": {}})
    scope.register(shadow)
    assert names(registry, scope) == ["a", "b", "c"]
    assert registry.get("a", scope) is shadow


@pytest.mark.spec("B005")
async def test_raw_parameters_are_verbatim_and_arguments_not_validated() -> None:
    """B005: a raw definition's JSON Schema is projected verbatim; with validate=False
    (the opt-out of raw-schema validation) arguments reach the body unchecked."""
    registry = ToolRegistry()
    seen: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(args)
        return "ok"

    odd_schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    registry.register(ToolDefinition("raw", "raw tool", odd_schema, body, validate=False))
    assert registry.schemas()[0].parameters == odd_schema
    result = await registry.execute(ToolExecutionInput("c1", "raw", {"unexpected": True}))
    assert result == ToolExecutionResult((TextContent("ok"),), False)
    assert seen == [{"unexpected": True}]
    registry.register(ToolDefinition("checked", "raw tool", odd_schema, body))  # the default
    refused = await registry.execute(ToolExecutionInput("c2", "checked", {"unexpected": True}))
    assert refused.content == (
        TextContent('Error: invalid arguments: missing required property "x"'),
    )
    assert seen == [{"unexpected": True}]


@pytest.mark.spec("B006")
@pytest.mark.parametrize("bad", [0, -1, -0.5, math.inf, -math.inf, math.nan, True, "100"])
def test_register_rejects_non_positive_or_non_finite_timeout(bad: Any) -> None:
    """B006: timeout_ms must be a positive finite number (exact text, Python attribute name)."""
    registry = ToolRegistry()
    with pytest.raises(RegistrationError) as info:
        registry.register(make_tool("slow", timeout_ms=bad))
    assert str(info.value) == 'tool "slow" timeout_ms must be a positive finite number'
    assert registry.get("slow") is None
    assert registry.schemas() == []


@pytest.mark.spec("B006")
@pytest.mark.parametrize("good", [1, 0.5, 100, 2_147_483_647])
def test_register_accepts_positive_finite_timeout(good: float) -> None:
    """B006: a positive finite timeout is kept on the definition."""
    registry = ToolRegistry()
    registry.register(make_tool("slow", timeout_ms=good))
    definition = registry.get("slow")
    assert definition is not None
    assert definition.timeout_ms == good


@pytest.mark.spec("B007")
def test_duplicate_global_name_names_the_scope_alternative() -> None:
    """B007: a duplicate global name raises, pointing at per-agent registration."""
    registry = ToolRegistry()
    first = make_tool("echo")
    registry.register(first)
    with pytest.raises(RegistrationError) as info:
        registry.register(make_tool("echo"))
    assert str(info.value) == (
        'tool "echo" is already registered (for a per-agent variant, '
        "register it on that agent's scope instead)"
    )
    assert registry.get("echo") is first


@pytest.mark.spec("B007")
def test_duplicate_name_within_a_scope_layer() -> None:
    """B007: a duplicate name in one scope layer raises; a scope may reuse a global name."""
    registry = ToolRegistry()
    registry.register(make_tool("echo"))
    scope = registry.scope()
    scope.register(make_tool("echo"))
    with pytest.raises(RegistrationError) as info:
        scope.register(make_tool("echo"))
    assert str(info.value) == 'tool "echo" is already registered in this scope'


@pytest.mark.spec("B008")
def test_register_returns_the_exact_disposer() -> None:
    """B008: the disposer unregisters exactly that tool; calling it twice is harmless."""
    registry = ToolRegistry()
    dispose = registry.register(make_tool("echo"))
    registry.register(make_tool("other"))
    assert not dispose.disposed
    dispose()
    assert dispose.disposed
    assert registry.get("echo") is None
    assert names(registry) == ["other"]
    replacement = make_tool("echo")
    registry.register(replacement)
    dispose()  # a stale disposer must not remove the re-registered tool
    assert registry.get("echo") is replacement


@pytest.mark.spec("B008")
def test_scope_close_unwinds_registrations_last_first() -> None:
    """B008: closing a scope tears down in LIFO order — a later registration goes first."""
    registry = ToolRegistry()
    scope = registry.scope()
    scope.register(make_tool("first"))
    scope.register(make_tool("second"))
    seen: list[list[str]] = []
    registry.on_change(lambda: seen.append(names(registry, scope)))
    scope.close()
    assert seen == [["first"], []]
    assert scope.closed
    with pytest.raises(RegistrationError, match="closed"):
        scope.register(make_tool("late"))


@pytest.mark.spec("B009")
def test_change_fires_on_register_unregister_restrict_and_lift_not_guard() -> None:
    """B009: on_change fires after register, unregister, restrict and lift — not for guards."""
    registry = ToolRegistry()
    events: list[int] = []
    registry.on_change(lambda: events.append(registry._version))
    dispose_tool = registry.register(make_tool("read"))
    assert len(events) == 1
    scope = registry.scope()
    lift = scope.restrict(allow=["read"])
    assert len(events) == 2
    lift()
    assert len(events) == 3
    dispose_tool()
    assert len(events) == 4
    registry.guard(lambda execution: None)
    scope.guard(lambda execution: None)
    assert len(events) == 4
    scope.register(make_tool("mine"))
    assert len(events) == 5


@pytest.mark.spec("B009")
def test_raising_change_listener_rolls_the_registration_back() -> None:
    """B009: register re-raises a change listener's error and rolls the entry back."""
    registry = ToolRegistry()
    failures = [RuntimeError("listener exploded")]

    def listener() -> None:
        if failures:
            raise failures.pop()

    registry.on_change(listener)
    with pytest.raises(RuntimeError, match="listener exploded"):
        registry.register(make_tool("echo"))
    assert registry.get("echo") is None
    assert registry.schemas() == []
    dispose = registry.register(make_tool("echo"))
    assert names(registry) == ["echo"]
    with pytest.raises(RegistrationError):
        registry.register(make_tool("echo"))
    dispose()
    assert registry.get("echo") is None


@pytest.mark.spec("B009")
def test_change_listener_disposer_stops_notifications() -> None:
    """B009: on_change returns a disposer like every other registration."""
    registry = ToolRegistry()
    events: list[str] = []
    dispose = registry.on_change(lambda: events.append("change"))
    registry.register(make_tool("a"))
    dispose()
    registry.register(make_tool("b"))
    assert events == ["change"]


@pytest.mark.spec("B010")
def test_get_resolves_through_the_scope_view() -> None:
    """B010: get() returns what the scope resolves; unknown or restricted-away → None."""
    registry = ToolRegistry()
    global_read = make_tool("read")
    registry.register(global_read)
    registry.register(make_tool("bash"))
    scope = registry.scope()
    scoped_read = make_tool("read")
    scope.register(scoped_read)
    scope.restrict(deny=["bash"])
    assert registry.get("read") is global_read
    assert registry.get("read", scope) is scoped_read
    assert registry.get("bash") is not None
    assert registry.get("bash", scope) is None
    assert registry.get("nope") is None
    assert registry.get("nope", scope) is None


# -- C. scopes and restrictions -------------------------------------------------------


@pytest.mark.spec("B034")
async def test_scoped_tool_is_visible_and_executable_only_for_its_scope() -> None:
    """B034: another scope or no scope gets exactly the unknown-tool error."""
    registry = ToolRegistry()
    mine = registry.scope()
    other = registry.scope()
    mine.register(make_tool("mine"))
    assert names(registry, mine) == ["mine"]
    assert names(registry) == []
    assert names(registry, other) == []
    ok = await registry.execute(ToolExecutionInput("c1", "mine", {}, agent=mine))
    assert ok == ToolExecutionResult((TextContent("mine ran"),), False)
    for agent in (other, None):
        result = await registry.execute(ToolExecutionInput("c2", "mine", {}, agent=agent))
        assert result.is_error
        assert text(result) == 'Error: unknown tool "mine"'
        assert result.error is not None
        assert (result.error.name, result.error.code) == ("ToolNotFoundError", "UNKNOWN_TOOL")


@pytest.mark.spec("B035")
@pytest.mark.parametrize("scoped_first", [True, False])
async def test_scoped_tool_shadows_global_in_either_order(scoped_first: bool) -> None:
    """B035: the scope runs its own tool; the global view still runs the global."""
    registry = ToolRegistry()
    scope = registry.scope()

    def variant(label: str) -> ToolDefinition:
        async def body(args: Any, ctx: ToolRunContext) -> str:
            return label

        return ToolDefinition("echo", label, {"type": "object"}, body)

    if scoped_first:
        scope.register(variant("scoped"))
        registry.register(variant("global"))
    else:
        registry.register(variant("global"))
        scope.register(variant("scoped"))
    assert names(registry, scope) == ["echo"]
    assert registry.schemas(scope)[0].description == "scoped"
    scoped = await registry.execute(ToolExecutionInput("c1", "echo", {}, agent=scope))
    unscoped = await registry.execute(ToolExecutionInput("c2", "echo", {}))
    assert text(scoped) == "scoped"
    assert text(unscoped) == "global"


@pytest.mark.spec("B036")
async def test_closing_a_scope_leaves_no_residue() -> None:
    """B036: closing removes the scope's tools, restrictions, guards and listeners."""
    registry = ToolRegistry()
    registry.register(make_tool("read"))
    scope = registry.scope()
    scope.register(make_tool("mine"))
    scope.restrict(deny=["read"])
    scope.guard(lambda execution: "scope guard says no")
    seen: list[str] = []

    async def pre(execution: Any, next_: Any) -> Any:
        seen.append("pre")
        return await next_()

    scope.on_pre_execute(pre)
    scope.on_result(lambda execution, result: seen.append("result"))
    denied = await registry.execute(ToolExecutionInput("c1", "mine", {}, agent=scope))
    assert text(denied) == "Error: scope guard says no"
    assert seen == ["pre", "result"]
    scope.close()
    seen.clear()
    assert registry.get("mine", scope) is None
    assert names(registry, scope) == ["read"]
    result = await registry.execute(ToolExecutionInput("c2", "read", {}, agent=scope))
    assert text(result) == "read ran"
    assert seen == []


@pytest.mark.spec("B037")
async def test_allow_restriction_masks_globals_for_that_scope_only() -> None:
    """B037: an allow-list hides other globals for that agent; others are unaffected."""
    registry = ToolRegistry()
    registry.register(make_tool("read"))
    registry.register(make_tool("bash"))
    scope = registry.scope()
    other = registry.scope()
    scope.register(make_tool("mine"))
    scope.restrict(allow=["read"])
    assert names(registry, scope) == ["read", "mine"]
    assert names(registry, other) == ["read", "bash"]
    assert names(registry) == ["read", "bash"]
    hidden = await registry.execute(ToolExecutionInput("c1", "bash", {}, agent=scope))
    assert text(hidden) == 'Error: unknown tool "bash"'
    visible = await registry.execute(ToolExecutionInput("c2", "bash", {}, agent=other))
    assert text(visible) == "bash ran"


@pytest.mark.spec("B038")
def test_restrictions_filter_the_live_global_layer() -> None:
    """B038: deny-only admits later globals; allow-lists exclude them; later scope tools show."""
    registry = ToolRegistry()
    registry.register(make_tool("read"))
    registry.register(make_tool("bash"))
    denying = registry.scope()
    allowing = registry.scope()
    denying.restrict(deny=["bash"])
    allowing.restrict(allow=["read"])
    registry.register(make_tool("late"))
    denying.register(make_tool("own"))
    allowing.register(make_tool("own"))
    assert names(registry, denying) == ["read", "late", "own"]
    assert names(registry, allowing) == ["read", "own"]


@pytest.mark.spec("B039")
def test_restrictions_intersect_and_lift_independently() -> None:
    """B039: allow [a, b] + deny [b] → [a]; lifting the allow leaves the deny → [a, c]."""
    registry = ToolRegistry()
    for name in ("a", "b", "c"):
        registry.register(make_tool(name))
    scope = registry.scope()
    lift_allow = scope.restrict(allow=["a", "b"])
    lift_deny = scope.restrict(deny=["b"])
    assert names(registry, scope) == ["a"]
    lift_allow()
    assert names(registry, scope) == ["a", "c"]
    lift_deny()
    assert names(registry, scope) == ["a", "b", "c"]


@pytest.mark.spec("B040")
def test_filter_lists_are_copied_at_restrict_time() -> None:
    """B040: mutating the caller's list after restrict() changes nothing."""
    registry = ToolRegistry()
    registry.register(make_tool("a"))
    registry.register(make_tool("b"))
    scope = registry.scope()
    allow = ["a"]
    scope.restrict(allow=allow)
    allow.append("b")
    registry.register(make_tool("c"))  # bump the view cache
    assert names(registry, scope) == ["a"]


@pytest.mark.spec("B041")
def test_restrict_exists_only_on_scopes() -> None:
    """B041: a registry-global restriction is impossible by construction (scope-only API)."""
    assert not hasattr(ToolRegistry(), "restrict")


@pytest.mark.spec("B041")
def test_empty_filter_is_rejected() -> None:
    """B041: restrict() with neither allow nor deny raises the no-op text."""
    registry = ToolRegistry()
    registry.register(make_tool("real"))
    scope = registry.scope()
    with pytest.raises(RegistrationError) as info:
        scope.restrict()
    assert str(info.value) == (
        "tools.restrict({}) is a no-op: pass `allow` and/or `deny` "
        "(an empty filter is almost always a materialized-empty-config bug)"
    )


@pytest.mark.spec("B041")
def test_unknown_names_are_listed_singular_and_plural() -> None:
    """B041: names that are not inherited tools raise, listing the known tools sorted."""
    registry = ToolRegistry()
    registry.register(make_tool("zulu"))
    registry.register(make_tool("real"))
    scope = registry.scope()
    scope.register(make_tool("local"))
    with pytest.raises(RegistrationError) as one:
        scope.restrict(allow=["reall"])
    assert str(one.value) == (
        'tools.restrict() names unknown global tool "reall"; known global tools: real, zulu'
    )
    with pytest.raises(RegistrationError) as many:
        scope.restrict(deny=["wraith", "ghost", "real"])
    assert str(many.value) == (
        'tools.restrict() names unknown global tools "ghost", "wraith"; '
        "known global tools: real, zulu"
    )
    with pytest.raises(RegistrationError) as own:
        scope.restrict(deny=["local"])
    assert 'unknown global tool "local"' in str(own.value)
    empty = ToolRegistry().scope()
    with pytest.raises(RegistrationError) as none:
        empty.restrict(allow=["x"])
    assert str(none.value) == (
        'tools.restrict() names unknown global tool "x"; known global tools: (none)'
    )
    assert names(registry, scope) == ["zulu", "real", "local"]


@pytest.mark.spec("B043")
def test_empty_allow_hides_every_global_and_empty_deny_is_harmless() -> None:
    """B043: allow=[] is valid and hides all globals; deny=[] has no effect."""
    registry = ToolRegistry()
    registry.register(make_tool("a"))
    hiding = registry.scope()
    hiding.register(make_tool("own"))
    hiding.restrict(allow=[])
    noop = registry.scope()
    noop.restrict(deny=[])
    assert names(registry, hiding) == ["own"]
    assert names(registry, noop) == ["a"]


@pytest.mark.spec("B044")
def test_scope_chains_restrict_what_is_inherited() -> None:
    """B044: a restriction filters what a scope inherits (global and ancestors), never its own."""
    registry = ToolRegistry()
    registry.register(make_tool("g1"))
    registry.register(make_tool("g2"))
    parent = registry.scope()
    parent.register(make_tool("p1"))
    child = registry.scope(parent)
    child.register(make_tool("c1"))
    assert names(registry, child) == ["g1", "g2", "p1", "c1"]
    child.restrict(deny=["p1"])
    assert names(registry, child) == ["g1", "g2", "c1"]
    assert names(registry, parent) == ["g1", "g2", "p1"]
    parent.restrict(deny=["g2"])
    assert names(registry, child) == ["g1", "c1"]
    with pytest.raises(RegistrationError, match='unknown global tool "c1"'):
        child.restrict(deny=["c1"])
    parent.close()
    assert child.closed


def test_scope_parent_must_belong_to_the_registry_and_be_open() -> None:
    """Nested scopes: a foreign or closed parent is a programmer error."""
    registry = ToolRegistry()
    foreign = ToolRegistry().scope()
    with pytest.raises(RegistrationError):
        registry.scope(foreign)
    closed = registry.scope()
    closed.close()
    with pytest.raises(RegistrationError):
        registry.scope(closed)


def test_register_rejects_malformed_definitions() -> None:
    """Registration validates the definition's shape before touching any layer."""
    registry = ToolRegistry()
    with pytest.raises(RegistrationError):
        registry.register("not a definition")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError):
        registry.register(make_tool(""))
    with pytest.raises(RegistrationError):
        registry.register(ToolDefinition("x", "d", [], lambda a, c: "x"))  # type: ignore[arg-type]
    with pytest.raises(RegistrationError):
        registry.register(ToolDefinition("x", "d", {}, "not callable"))  # type: ignore[arg-type]
    assert registry.schemas() == []


def test_hook_registration_rejects_wrong_kinds() -> None:
    """Guards and observers are synchronous; every hook must be callable."""
    registry = ToolRegistry()

    async def async_guard(execution: Any) -> None:
        return None

    async def async_observer(execution: Any, result: Any) -> None:
        return None

    with pytest.raises(RegistrationError, match="synchronous"):
        registry.guard(async_guard)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="synchronous"):
        registry.on_result(async_observer)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="callable"):
        registry.on_pre_execute(42)  # type: ignore[arg-type]


@pytest.mark.spec("B006")
def test_timeout_above_one_year_is_rejected_with_its_own_text() -> None:
    """B006/B172: a budget beyond one year cannot be a deadline; rejected at registration."""
    registry = ToolRegistry()
    with pytest.raises(RegistrationError) as info:
        registry.register(make_tool("slow", timeout_ms=365 * 24 * 3600 * 1000 + 1))
    assert str(info.value) == 'tool "slow" timeout_ms must be at most one year (31536000000 ms)'


@pytest.mark.spec("B036")
async def test_close_undoes_everything_even_when_a_change_listener_raises() -> None:
    """B036/B008: a raising change listener cannot leave a closed scope's residue behind."""
    registry = ToolRegistry()
    registry.register(make_tool("read"))
    parent = registry.scope()
    child = registry.scope(parent)
    parent.register(make_tool("a"))
    parent.register(make_tool("b"))
    child.register(make_tool("c"))
    parent.restrict(deny=["read"])
    parent.guard(lambda execution: "still guarded")
    calls: list[int] = []

    def exploding() -> None:
        calls.append(1)
        raise RuntimeError("change listener exploded")

    registry.on_change(exploding)
    with pytest.raises(RuntimeError, match="change listener exploded"):
        parent.close()
    assert parent.closed
    assert child.closed
    assert len(calls) == 4  # c, restriction, b, a: each undo still ran
    assert names(registry, parent) == ["read"]
    assert names(registry, child) == ["read"]
    result = await registry.execute(ToolExecutionInput("c1", "read", {}, agent=parent))
    assert text(result) == "read ran"
