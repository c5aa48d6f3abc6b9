"""Dependencies: deps= on every entry point, ctx.deps, and @tool's Depends(...) injection."""

from __future__ import annotations

import dataclasses
import keyword
import string
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
import pydantic
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolnursery
import toolnursery.aio
from support import code, text
from toolnursery import (
    Dependency,
    DependencyError,
    Depends,
    RegistrationError,
    ToolCall,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    open_tool_batch,
    run_tool_calls,
    tool,
)
from toolnursery._core._execution import ToolExecution, ToolExecutionToken
from toolnursery._core._signal import CancelSignal


class Inbox:
    def __init__(self) -> None:
        self.sent: list[str] = []


class Clock:
    def __init__(self, now: str = "2026-12-01") -> None:
        self.now = now


@dataclasses.dataclass
class Env:
    inbox: Inbox
    clock: Clock


def registry(*tools: Any) -> ToolRegistry:
    reg = ToolRegistry()
    for definition in tools:
        reg.register(definition)
    return reg


async def one(reg: ToolRegistry, name: str, args: Any = None, deps: Any = None) -> Any:
    [result] = await run_tool_calls(reg, [ToolCall("c1", name, args or {})], deps=deps)
    return result


# -- the context carries deps ---------------------------------------------------------------


async def test_ctx_deps_reaches_a_define_tool_body_on_every_entry_point() -> None:
    seen: list[Any] = []

    @tool
    async def probe(ctx: ToolRunContext[Env]) -> str:
        seen.append(ctx.deps)
        return "ok"

    reg = registry(probe)
    env = Env(Inbox(), Clock())
    await run_tool_calls(reg, [ToolCall("a", "probe", {})], deps=env)
    async with open_tool_batch(reg, deps=env) as batch:
        batch.submit(ToolCall("b", "probe", {}))
        batch.close()
    await reg.execute(ToolExecutionInput("c", "probe", {}), deps=env)
    await reg.execute(ToolExecutionInput("d", "probe", {}))
    await run_tool_calls(reg, [ToolCall("e", "probe", {}), ToolCall("f", "probe", {})], deps=1)
    assert seen == [env, env, env, None, 1, 1]


def test_a_standalone_context_carries_deps_and_defaults_to_none() -> None:
    execution = ToolExecution("c", "t", {}, CancelSignal(), None, None, ToolExecutionToken())
    assert ToolRunContext(execution, CancelSignal(), []).deps is None
    ctx: ToolRunContext[Env] = ToolRunContext(execution, CancelSignal(), [], Env(Inbox(), Clock()))
    assert isinstance(ctx.deps.inbox, Inbox)


def test_asyncio_entry_points_pass_deps() -> None:
    import asyncio

    @tool
    def probe(inbox: Inbox = Depends("inbox")) -> str:  # noqa: B008
        inbox.sent.append("x")
        return "ok"

    reg = registry(probe)
    env = Env(Inbox(), Clock())

    async def main() -> None:
        await toolnursery.aio.run_tool_calls(reg, [ToolCall("a", "probe", {})], deps=env)
        await toolnursery.aio.execute(reg, ToolExecutionInput("b", "probe", {}), deps=env)
        async with toolnursery.aio.open_tool_batch(reg, deps=env) as batch:
            batch.submit(ToolCall("c", "probe", {}))
            batch.close()
        await toolnursery.aio.aclose()

    asyncio.run(main())
    assert env.inbox.sent == ["x", "x", "x"]


# -- Depends ---------------------------------------------------------------------------------


@tool
def send_mail(to: str, inbox: Annotated[Inbox, Depends("inbox")]) -> str:
    """Send a mail.

    Args:
        to: the recipient.
    """
    inbox.sent.append(to)
    return f"sent to {to}"


def test_injected_parameters_are_not_in_the_schema() -> None:
    assert send_mail.parameters == {
        "type": "object",
        "properties": {"to": {"type": "string", "description": "the recipient."}},
        "required": ["to"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    "deps",
    [Env(Inbox(), Clock()), {"inbox": Inbox()}],
    ids=["attribute", "mapping key"],
)
async def test_a_named_dependency_is_an_attribute_or_a_mapping_key(deps: Any) -> None:
    result = await one(registry(send_mail), "send_mail", {"to": "ann"}, deps)
    inbox = deps["inbox"] if isinstance(deps, Mapping) else deps.inbox
    assert text(result) == "sent to ann"
    assert inbox.sent == ["ann"]


@pytest.mark.parametrize(
    ("deps", "why"),
    [
        (None, "no deps were given"),
        ({"outbox": Inbox()}, "deps (dict) has none"),
        (Clock(), "deps (Clock) has none"),
    ],
)
async def test_a_missing_dependency_fails_the_call_before_the_body(deps: Any, why: str) -> None:
    ran: list[str] = []

    @tool
    def send(to: str, inbox: Inbox = Depends("inbox")) -> str:  # noqa: B008
        ran.append(to)
        return "sent"

    result = await one(registry(send), "send", {"to": "ann"}, deps)
    assert result.is_error
    assert code(result) == "MISSING_DEPENDENCY"
    assert result.error.name == "DependencyError"
    assert text(result) == f'Error: parameter "inbox" needs the dependency "inbox", but {why}'
    assert ran == []


made: list[str] = []


def session(ctx: ToolRunContext[dict[str, str]]) -> str:
    made.append(ctx.call_id)
    return ctx.deps["user"] + "@" + ctx.call_id


async def test_a_callable_dependency_gets_the_context_once_per_call() -> None:
    made.clear()

    @tool
    async def whoami(
        a: Annotated[str, Depends(session)], b: str = Depends(session), n: int = 0
    ) -> str:
        return f"{a} {b} {n}"

    assert list(whoami.parameters["properties"]) == ["n"]
    reg = registry(whoami)
    calls = [ToolCall("x", "whoami", {}), ToolCall("y", "whoami", {"n": 2})]
    results = await run_tool_calls(reg, calls, deps={"user": "ann"})
    assert [text(r) for r in results] == ["ann@x ann@x 0", "ann@y ann@y 2"]
    assert sorted(made) == ["x", "y"]  # cached within a call, made again for the next


async def test_use_cache_false_resolves_once_per_parameter() -> None:
    count = iter(range(10))

    def ticket() -> int:
        return next(count)

    @tool
    def pair(
        a: int = Depends(ticket, use_cache=False), b: int = Depends(ticket, use_cache=False)
    ) -> str:
        return f"{a},{b}"

    assert text(await one(registry(pair), "pair")) == "0,1"


@dataclasses.dataclass
class Counter:
    """An ``eq=True`` dataclass with ``__call__``: callable, and unhashable."""

    start: int
    calls: int = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.start + self.calls


async def test_an_unhashable_callable_dependency_resolves_once_per_call() -> None:
    counter = Counter(10)

    @tool
    def pair(a: int = Depends(counter), b: int = Depends(counter)) -> str:
        return f"{a},{b}"

    @tool
    async def apair(a: int = Depends(counter), b: int = Depends(counter)) -> str:
        return f"{a},{b}"

    reg = registry(pair, apair)
    assert text(await one(reg, "pair")) == "11,11"  # one value for both parameters
    assert text(await one(reg, "apair")) == "12,12"
    assert text(await one(reg, "pair")) == "13,13"  # and a new one per call
    assert counter.calls == 3


async def token(ctx: ToolRunContext[Any]) -> str:
    await trio.lowlevel.checkpoint()
    return f"token-{ctx.deps}"


async def test_an_async_dependency_is_awaited_for_an_async_body() -> None:
    @tool
    async def call_api(path: str, auth: Annotated[str, Depends(token)]) -> str:
        return f"{path} with {auth}"

    result = await one(registry(call_api), "call_api", {"path": "/x"}, 7)
    assert text(result) == "/x with token-7"


def test_a_sync_body_cannot_depend_on_an_async_callable() -> None:
    def call_api(auth: Annotated[str, Depends(token)]) -> str:
        return auth

    with pytest.raises(RegistrationError, match=r'parameter "auth" depends on the async token'):
        tool(call_api)


async def test_a_sync_body_refuses_an_awaitable_a_dependency_returned() -> None:
    async def later() -> str:
        return "t"

    @tool
    def call_api(auth: str = Depends(lambda: later())) -> str:
        return auth

    result = await one(registry(call_api), "call_api")
    assert code(result) == "MISSING_DEPENDENCY"
    assert "returned an awaitable, which a sync tool body cannot await" in text(result)


async def test_a_dependency_that_raises_fails_the_call_with_its_error() -> None:
    def broken(ctx: ToolRunContext[Any]) -> str:
        raise LookupError("no session")

    @tool
    async def whoami(user: str = Depends(broken)) -> str:
        return user

    result = await one(registry(whoami), "whoami")
    assert result.is_error
    assert text(result) == "Error: no session"


async def test_depends_without_a_dependency_picks_by_the_parameters_class() -> None:
    @tool
    def now(clock: Clock = Depends(), env: Env = Depends()) -> str:  # noqa: B008
        return f"{clock.now} {type(env).__name__}"

    env = Env(Inbox(), Clock("tomorrow"))
    assert text(await one(registry(now), "now", deps=env)) == "tomorrow Env"

    # in a mapping too; deps itself is taken when it is an instance of the class
    @tool
    def clock_only(clock: Clock = Depends()) -> str:  # noqa: B008
        return clock.now

    assert text(await one(registry(clock_only), "clock_only", deps={"c": Clock("x")})) == "x"
    assert text(await one(registry(clock_only), "clock_only", deps=Clock("y"))) == "y"


async def test_depends_by_class_refuses_ambiguity_and_absence() -> None:
    @tool
    def now(clock: Clock = Depends()) -> str:  # noqa: B008
        return clock.now

    reg = registry(now)
    ambiguous = await one(reg, "now", deps={"a": Clock(), "b": Clock()})
    assert text(ambiguous) == (
        'Error: parameter "clock" needs the dependency of type Clock, and deps (dict) has 2 '
        'such values; name one: Depends("<name>")'
    )
    absent = await one(reg, "now", deps=Inbox())
    assert text(absent) == (
        'Error: parameter "clock" needs the dependency of type Clock, but deps (Inbox) has none'
    )


def test_depends_without_a_dependency_needs_a_class() -> None:
    def f(x: int | str = Depends()) -> str:
        return ""

    with pytest.raises(RegistrationError, match=r'parameter "x" is Depends\(\) without a'):
        tool(f)


def test_depends_takes_a_name_a_callable_or_nothing() -> None:
    with pytest.raises(TypeError, match="not int"):
        Depends(3)  # type: ignore[arg-type]
    assert repr(Depends("inbox")) == "Depends('inbox')"
    assert repr(Depends()) == "Depends()"
    assert isinstance(Depends(len), Dependency)


async def test_context_parameters_in_every_spelling_get_the_context() -> None:
    seen: list[Any] = []

    @tool
    def probe(a: ToolRunContext, b: ToolRunContext[Env], /) -> str:
        seen.extend([a, b])
        return "ok"

    assert probe.parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    await one(registry(probe), "probe", deps=1)
    assert seen[0] is seen[1]
    assert seen[0].deps == 1


async def test_positional_only_injected_parameters() -> None:
    @tool
    def send(inbox: Annotated[Inbox, Depends("inbox")], to: str, /) -> str:
        inbox.sent.append(to)
        return "sent"

    env = Env(Inbox(), Clock())
    assert text(await one(registry(send), "send", {"to": "bo"}, env)) == "sent"
    assert env.inbox.sent == ["bo"]


def test_a_dependency_marker_inside_a_type_is_refused() -> None:
    def f(inboxes: list[Annotated[Inbox, Depends("inbox")]]) -> str:
        return ""

    with pytest.raises(RegistrationError, match="must annotate the parameter itself"):
        tool(f)


# -- foreign markers -------------------------------------------------------------------------


class TheirDepends:
    """Another library's marker (AgentDojo's shape: the environment attribute's name)."""

    def __init__(self, env_dependency: str) -> None:
        self.env_dependency = env_dependency


def their_marker(marker: object) -> Dependency | None:
    return Depends(marker.env_dependency) if isinstance(marker, TheirDepends) else None


def their_tool(to: str, inbox: Annotated[Inbox, TheirDepends("inbox")]) -> str:
    inbox.sent.append(to)
    return "sent"


def their_default_tool(to: str, inbox: Inbox = TheirDepends("inbox")) -> str:  # type: ignore[assignment]  # noqa: B008
    inbox.sent.append(to)
    return "sent"


@pytest.mark.parametrize("fn", [their_tool, their_default_tool])
async def test_the_depends_hook_maps_foreign_markers(fn: Any) -> None:
    definition = tool(fn, depends=their_marker)
    assert list(definition.parameters["properties"]) == ["to"]
    env = Env(Inbox(), Clock())
    assert text(await one(registry(definition), fn.__name__, {"to": "cy"}, env)) == "sent"
    assert env.inbox.sent == ["cy"]


def test_without_the_hook_a_foreign_marker_is_refused_by_name() -> None:
    with pytest.raises(RegistrationError, match=r'parameter "inbox": Annotated metadata'):
        tool(their_tool)


def test_the_hook_must_answer_a_dependency_or_none() -> None:
    with pytest.raises(RegistrationError, match="must return Depends"):
        tool(their_tool, depends=lambda m: "inbox")  # type: ignore[arg-type,return-value]

    def boom(marker: object) -> Dependency | None:
        raise RuntimeError("bad marker")

    with pytest.raises(RegistrationError, match="the depends hook raised on the metadata"):
        tool(their_tool, depends=boom)


def test_the_hook_works_as_a_decorator_option() -> None:
    @tool(depends=their_marker, name="send")
    def f(to: str, inbox: Annotated[Inbox, TheirDepends("inbox")]) -> str:
        return ""

    assert f.name == "send"
    assert list(f.parameters["properties"]) == ["to"]


# -- what the model sees ---------------------------------------------------------------------


class Model(pydantic.BaseModel):
    x: int


def test_an_unmarked_class_parameter_is_refused_by_name_on_both_paths() -> None:
    def plain(inbox: Inbox) -> str:
        return ""

    def with_pydantic(model: Model, inbox: Inbox) -> str:
        return ""

    with pytest.raises(RegistrationError, match=r'parameter "inbox" has an unsupported type'):
        tool(plain)
    with pytest.raises(RegistrationError, match=r'parameter "inbox" has an unsupported type'):
        tool(with_pydantic)


_names = st.text(string.ascii_lowercase, min_size=1, max_size=8).filter(
    lambda n: not keyword.iskeyword(n)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(_names, st.sampled_from(["arg", "opt", "named", "annotated", "class", "ctx"])),
        unique_by=lambda p: p[0],
        max_size=6,
    )
)
def test_generated_signatures_never_expose_injected_parameters(
    params: list[tuple[str, str]],
) -> None:
    annotations: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for name, kind in params:
        if kind == "arg":
            annotations[name] = int
        elif kind == "opt":
            annotations[name] = str | None
            defaults[name] = None
        elif kind == "named":
            annotations[name] = Inbox
            defaults[name] = Depends(name)
        elif kind == "annotated":
            annotations[name] = Annotated[Inbox, Depends(name)]
        elif kind == "class":
            annotations[name] = Clock
            defaults[name] = Depends()
        else:
            annotations[name] = ToolRunContext[Any]
    # parameters without defaults first, as Python requires
    order = sorted(annotations, key=lambda n: n in defaults)
    source = ", ".join(f"{n}=__d[{n!r}]" if n in defaults else n for n in order)
    namespace: dict[str, Any] = {"__d": defaults}
    exec(f"def f({source}): return ''", namespace)
    fn = namespace["f"]
    fn.__annotations__ = {n: annotations[n] for n in order}
    definition = tool(fn)
    exposed = {n for n, k in params if k in ("arg", "opt")}
    assert set(definition.parameters["properties"]) == exposed
    assert set(definition.parameters.get("required", ())) == {n for n, k in params if k == "arg"}
    assert msgspec.json.encode(definition.parameters)  # the schema is JSON


async def test_a_missing_dependency_error_is_a_tool_error() -> None:
    assert DependencyError.code == "MISSING_DEPENDENCY"
    assert issubclass(DependencyError, toolnursery.ToolError)
