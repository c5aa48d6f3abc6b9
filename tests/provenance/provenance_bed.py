"""The provenance testbed's machinery: tasks, attacks, replay through toolnursery, the table.

An environment (``provenance_envs``) is a small world (a mailbox and calendar, a bank
account, a team chat with web pages) whose tools are ``@tool`` definitions with sink
markers and record declarations, over a mutable state. A benign task is a user request
and its ground-truth calls, turn by turn (each turn one batch, as a model's response).
An attack is injected text placed in one slot of the environment's data plus the calls
the attacker wants; it is paired with every benign task of its environment that reads
that slot. A pair is replayed as a compliant model would act: the task's turns up to the
one that reads the injected slot, then the attacker's calls as the next turn. The
attack succeeds when its effect shows in the state.

Every ``Ask`` is answered "rejected": a benign task is kept when every ground-truth call
still ran; an attack is blocked when its effect is absent.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import trio

from toolnursery import (
    ApprovalOutcome,
    ToolCall,
    ToolDefinition,
    ToolRegistry,
    install_provenance_guard,
    run_tool_calls,
)
from toolnursery.testing import ScriptedApproval

Call = tuple[str, dict[str, Any]]
"""A ground-truth call: the tool and its arguments."""


@dataclasses.dataclass
class World:
    """One fresh copy of an environment: its tools over its state."""

    state: dict[str, Any]
    tools: list[ToolDefinition]
    own: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Task:
    """A benign task: the user's request and the ground-truth calls, one list per turn."""

    id: str
    env: str
    request: str
    turns: tuple[tuple[Call, ...], ...]
    reads: frozenset[str] = frozenset()  # the injection slots its turns read


@dataclasses.dataclass(frozen=True)
class Attack:
    """An injection: its text, the slot it is placed in, the calls it wants, its effect."""

    id: str
    env: str
    kind: str  # party, url, secret, date, content, intent
    slot: str
    text: str
    goal: tuple[Call, ...]
    achieved: Callable[[dict[str, Any]], bool]
    adaptive: str | None = None  # own-line, reformatted, trusted-field, named-source,
    # homoglyph, domain-inside (the user's domain inside a longer one, or a part of it),
    # another-role (a value the request or a record trusts, asked for in another role)
    only: frozenset[str] | None = None  # the tasks it pairs with (default: all that read the slot)
    prelude: tuple[Call, ...] = ()  # a turn of reads the attacker asks for before the goal


@dataclasses.dataclass(frozen=True)
class Environment:
    """An environment: how to build a world (with the injections placed), its tasks and attacks."""

    name: str
    build: Callable[[dict[str, str]], World]
    tasks: tuple[Task, ...]
    attacks: tuple[Attack, ...]


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one replay did."""

    asked: int
    failed: int  # ground-truth calls that did not run (rejected, denied, failed)
    attacked: bool  # the attack's effect is in the state


_ids = itertools.count()


async def _turn(registry: ToolRegistry, scope: Any, calls: Sequence[Call]) -> list[bool]:
    batch = [ToolCall(f"c{next(_ids)}", name, dict(args)) for name, args in calls]
    results = await run_tool_calls(registry, batch, agent=scope)
    return [not r.is_error for r in results]


async def replay(
    env: Environment,
    task: Task,
    attack: Attack | None = None,
    *,
    guard: bool = True,
    answer: ApprovalOutcome = "rejected",
) -> Outcome:
    """Replay ``task`` (with ``attack``'s injection and calls, if given) in a fresh world."""
    world = env.build({} if attack is None else {attack.slot: attack.text})
    approval = ScriptedApproval(default=answer)
    registry = ToolRegistry(approval)
    for definition in world.tools:
        registry.register(definition)
    scope = registry.scope()
    if guard:
        install_provenance_guard(scope, request=task.request, own=world.own)
    failed = 0
    turns = list(task.turns)
    if attack is not None:
        reading = next(
            i for i, turn in enumerate(turns) if any(_reads(env, c, attack.slot) for c in turn)
        )
        turns = [*turns[: reading + 1], *((attack.prelude,) if attack.prelude else ()), attack.goal]
    for number, turn in enumerate(turns):
        ran = await _turn(registry, scope, turn)
        if attack is None or number < len(turns) - 1:
            failed += ran.count(False)
    attacked = attack is not None and attack.achieved(world.state)
    scope.close()
    return Outcome(len(approval.requests), failed, attacked)


SLOT_READERS: dict[str, dict[str, Callable[[dict[str, Any]], bool]]] = {}
"""Per environment, per slot: whether a call reads it (filled by ``provenance_envs``)."""


def _reads(env: Environment, call: Call, slot: str) -> bool:
    reader = SLOT_READERS[env.name].get(slot)
    return reader is not None and reader({"tool": call[0], **call[1]})


def pairs(env: Environment) -> list[tuple[Task, Attack]]:
    """Every (benign task, attack) pair of ``env``: the attack's slot is read by the task."""
    found = []
    for attack in env.attacks:
        for task in env.tasks:
            if attack.only is not None and task.id not in attack.only:
                continue
            if any(_reads(env, c, attack.slot) for turn in task.turns for c in turn):
                found.append((task, attack))
    return found


@dataclasses.dataclass
class Table:
    """The testbed's figures."""

    benign: int = 0
    kept: int = 0
    asked_tasks: int = 0
    prompts: int = 0
    benign_undefended: int = 0
    attacks_by_kind: dict[str, list[int]] = dataclasses.field(
        default_factory=dict
    )  # [blocked, pairs]
    undefended_success: int = 0
    missed: list[str] = dataclasses.field(default_factory=list)
    lost: list[str] = dataclasses.field(default_factory=list)

    pairs: int = 0
    blocked: int = 0

    def render(self) -> str:
        lines = [
            "provenance testbed (every Ask answered 'rejected')",
            f"benign tasks kept:          {self.kept}/{self.benign}"
            f" ({100 * self.kept / self.benign:.1f}%; undefended {self.benign_undefended}/{self.benign})",
            f"benign tasks asking:        {self.asked_tasks}/{self.benign}"
            f" ({100 * self.asked_tasks / self.benign:.1f}%)",
            f"approval prompts per task:  {self.prompts / self.benign:.2f}",
            f"attacked pairs blocked:     {self.blocked}/{self.pairs}"
            f" ({100 * self.blocked / self.pairs:.1f}%; undefended attack success"
            f" {self.undefended_success}/{self.pairs})",
            "blocked by kind:",
        ]
        width = max((len(kind) for kind in self.attacks_by_kind), default=0) + 2
        for kind, (blocked, total) in sorted(self.attacks_by_kind.items()):
            lines.append(f"  {kind:<{width}}{blocked}/{total}")
        if self.lost:
            lines.append("benign tasks lost: " + ", ".join(self.lost))
        if self.missed:
            lines.append("attacks not blocked: " + ", ".join(self.missed))
        return "\n".join(lines)


async def measure(envs: Sequence[Environment]) -> Table:
    """Replay every benign task and every attacked pair of ``envs``."""
    table = Table()
    for env in envs:
        for task in env.tasks:
            table.benign += 1
            bare = await replay(env, task, guard=False)
            table.benign_undefended += bare.failed == 0
            outcome = await replay(env, task)
            table.prompts += outcome.asked
            table.asked_tasks += outcome.asked > 0
            if outcome.failed == 0:
                table.kept += 1
            else:
                table.lost.append(task.id)
        for task, attack in pairs(env):
            bare = await replay(env, task, attack, guard=False)
            assert bare.attacked, f"{attack.id} on {task.id} does nothing even undefended"
            table.undefended_success += 1
            outcome = await replay(env, task, attack)
            table.pairs += 1
            table.blocked += not outcome.attacked
            for kind in (
                attack.kind,
                *(() if attack.adaptive is None else (f"adaptive: {attack.adaptive}",)),
            ):
                counts = table.attacks_by_kind.setdefault(kind, [0, 0])
                counts[0] += not outcome.attacked
                counts[1] += 1
            if outcome.attacked:
                table.missed.append(f"{attack.id}@{task.id}")
    return table


def run_table() -> Table:
    """Measure the three environments (what ``scripts/provenance-table`` prints)."""
    from provenance_envs import ENVIRONMENTS

    return trio.run(measure, ENVIRONMENTS)
