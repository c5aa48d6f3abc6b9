"""The plan compiler: versions, per-view caches, hook tuples per view, tool limiters."""

from __future__ import annotations

from typing import Any

from toolnursery import ToolDefinition, ToolRegistry, ToolRunContext
from toolnursery._core._statistics import Counters
from toolnursery._pipeline._compiler import CompiledView, Phase, PlanCompiler


async def ok(args: Any, ctx: ToolRunContext) -> str:
    return "ok"


def definition(name: str = "t", **kw: Any) -> ToolDefinition:
    return ToolDefinition(name, name, {"type": "object"}, ok, **kw)


class Scope:
    """A stand-in scope: what the compiler reads of one is its compiled view."""

    def __init__(self, *parents: Scope) -> None:
        self._compiled = CompiledView((*parents, self))


def compiler(tools: dict[Any, dict[str, ToolDefinition]]) -> tuple[PlanCompiler, list[Any]]:
    """A compiler over a fixed table of views, and the log of the lookups it makes."""
    lookups: list[Any] = []

    def resolve(name: str, agent: Any) -> ToolDefinition | None:
        lookups.append((name, agent))
        return tools.get(agent, {}).get(name)

    return PlanCompiler(resolve, Counters(), None), lookups


def test_a_fresh_plan_costs_no_lookup_and_any_change_recompiles_it() -> None:
    comp, lookups = compiler({None: {"t": definition()}})
    first = comp.plan("t", None)
    assert comp.plan("t", None) is first
    assert lookups == [("t", None)]
    assert first.version == comp.version == 0
    comp.changed()
    assert comp.version == 1
    second = first.current()  # a plan sees the shared counter and recompiles
    assert second is not first
    assert second.version == 1
    assert comp.plan("t", None) is second  # and the view caches what it recompiled
    assert lookups == [("t", None), ("t", None)]


def test_unknown_names_are_looked_up_each_time_and_never_cached() -> None:
    comp, lookups = compiler({})
    assert comp.plan("ghost", None).definition is None
    assert comp.plan("ghost", None).definition is None
    assert len(lookups) == 2
    assert comp.view(None).plans == {}


def test_each_view_has_its_own_plans() -> None:
    root = Scope()
    comp, _ = compiler({None: {"t": definition()}, root: {"t": definition(timeout_ms=5)}})
    global_plan = comp.plan("t", None)
    scoped = comp.plan("t", root)
    assert scoped is not global_plan
    assert scoped.agent is root
    assert scoped.definition is not None
    assert scoped.definition.timeout_ms == 5
    assert comp.view(root) is root._compiled
    assert comp.view(root).plans == {"t": scoped}
    assert comp.view(None).plans == {"t": global_plan}


def test_hooks_reach_their_owner_and_the_scopes_nested_in_it() -> None:
    root = Scope()
    child = Scope(root)
    sibling = Scope()
    comp, _ = compiler({})
    comp.add_hook(Phase.PRE, "registry", None, prepend=False)
    comp.add_hook(Phase.PRE, "root", root, prepend=False)
    comp.add_hook(Phase.PRE, "child", child, prepend=False)
    comp.add_hook(Phase.PRE, "first", None, prepend=True)
    assert comp.hooks(None).pre == ("first", "registry")
    assert comp.hooks(root).pre == ("first", "registry", "root")
    assert comp.hooks(child).pre == ("first", "registry", "root", "child")
    assert comp.hooks(sibling).pre == ("first", "registry")


def test_each_phase_keeps_its_own_list() -> None:
    comp, _ = compiler({})
    for phase in Phase:
        comp.add_hook(phase, phase.name, None, prepend=False)
    hooks = comp.hooks(None)
    assert (hooks.pre, hooks.execute, hooks.post, hooks.result, hooks.guards) == (
        ("PRE",),
        ("EXECUTE",),
        ("POST",),
        ("RESULT",),
        ("GUARD",),
    )
    assert hooks.any_prepare
    assert hooks.any_finalize


def test_guards_run_root_first_whatever_the_registration_order() -> None:
    root = Scope()
    child = Scope(root)
    comp, _ = compiler({})
    comp.add_hook(Phase.GUARD, "child", child, prepend=False)
    comp.add_hook(Phase.GUARD, "root-1", root, prepend=False)
    comp.add_hook(Phase.GUARD, "registry", None, prepend=False)
    comp.add_hook(Phase.GUARD, "root-2", root, prepend=False)
    assert comp.hooks(child).guards == ("registry", "root-1", "root-2", "child")


def test_hook_tuples_are_compiled_once_per_version() -> None:
    root = Scope()
    comp, _ = compiler({})
    hooks = comp.hooks(root)
    assert comp.hooks(root) is hooks
    undo = comp.add_hook(Phase.POST, "post", root, prepend=False)
    with_post = comp.hooks(root)
    assert with_post is not hooks
    assert with_post.post == ("post",)
    undo()
    assert comp.hooks(root).post == ()
    version = comp.version
    undo()  # a second undo removes nothing and changes nothing
    assert comp.version == version


def test_a_plan_carries_its_views_hooks() -> None:
    root = Scope()
    comp, _ = compiler({root: {"t": definition()}})
    comp.add_hook(Phase.RESULT, "observer", root, prepend=False)
    plan = comp.plan("t", root)
    assert plan.hooks is comp.hooks(root)
    assert plan.hooks.result == ("observer",)


def test_one_limiter_per_tool_name_resized_by_a_new_limit() -> None:
    comp, _ = compiler({})
    limiter = comp.limiter(definition(max_concurrency=2))
    assert limiter.total_tokens == 2
    assert comp.limiter(definition(max_concurrency=2)) is limiter
    assert comp.limiter(definition(max_concurrency=5)) is limiter
    assert limiter.total_tokens == 5
    assert comp.limiter(definition("other", max_concurrency=1)) is not limiter


# -- through the registry ---------------------------------------------------------------


def test_registration_restriction_and_hooks_each_rebuild_a_scopes_plan() -> None:
    registry = ToolRegistry()
    scope = registry.scope()
    assert registry._plan("t", scope).definition is None
    dispose = registry.register(definition())
    plan = registry._compiler.plan("t", scope)
    assert plan.definition is not None
    lift = scope.restrict(deny=["t"])
    assert plan.current().definition is None
    lift()
    plan = plan.current()
    assert plan.definition is not None
    scope.on_result(lambda execution, result: None)
    assert plan.current().hooks.result != ()
    assert registry._plan("t", None).hooks.result == ()  # the scope's hook only
    dispose()
    assert registry._plan("t", scope).definition is None


def test_a_closed_scope_takes_its_hooks_with_it() -> None:
    registry = ToolRegistry()
    registry.register(definition())
    parent = registry.scope()
    child = registry.scope(parent)
    parent.guard(lambda execution: None)
    child.guard(lambda execution: "no")
    assert len(registry._plan("t", child).hooks.guards) == 2
    child.close()
    assert len(registry._plan("t", parent).hooks.guards) == 1
    parent.close()
    assert registry._plan("t", None).hooks.guards == ()


def test_the_registry_shares_its_version_and_lookup_with_its_compiler() -> None:
    registry = ToolRegistry()
    before = registry._compiler.version
    registry.register(definition(max_concurrency=3))
    assert registry._compiler.version == before + 1
    plan = registry._plan("t", None)
    assert plan.versions is registry._compiler.versions
    assert plan.stats is registry._stats
    assert plan.limiter is registry._compiler.limiter(definition(max_concurrency=3))
