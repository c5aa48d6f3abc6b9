"""The provenance guard's cost: a batch with the guard on, against the same batch without it.

Two measures, each its own interleaved series (rounds alternate bare, pass-through and
guarded runs, order flipping each round; CPU clock; the headline is the ratio of the
medians; the goal is at most 1.3x):

* **one batch** (the issue's measure): three turns fill the ledger first (a contact
  list, an inbox of emails with bodies, a web page, a transaction list), untimed; then
  one batch of ``--calls`` calls is timed: half reads, half outbound calls whose sink
  arguments the guard checks (a recipient from the contacts, a body with a link and an
  address inside). The ledger reads the records of the results a call may see at the
  first question after they commit, so the batch pays for reading those of the turns
  before it (the contacts and the transactions); the three record results it reads
  itself would be read by the next batch's first question (in a run, each batch pays
  for the one before).
* **whole agent run**: the three turns and the batch, timed together.

The bodies await (``trio.sleep(0)``), as real bodies do, and do nothing else: the ratio
is the guard's share of the pipeline's own CPU, the worst case. Every round reads values
of its own (salted), so no cache keyed by a value carries an answer from one round to
the next, and a collection runs before each. What is worked out once per tool
definition (its sink arguments, its record paths) is kept across rounds, as it is
across the runs of an application whose tools are defined once. A middle row registers
a pass-through pre-execute listener and observer (what any policy of that shape costs,
before it checks anything). Beside the ratio of the medians (the headline) each row
gives the median of the per-round ratios (each round's runs are next to each other in
time, so a change of load between rounds moves it less).

Usage: ``python benchmarks/bench_provenance.py [--rounds N] [--calls N] [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Annotated, Any

import trio

from passthrough import observe, pre
from toolnursery import (
    Sink,
    ToolCall,
    ToolRegistry,
    install_provenance_guard,
    run_tool_calls,
    tool,
)


def contact_list(salt: int) -> list[dict[str, str]]:
    return [{"name": f"Person {i}", "email": f"person{i}.{salt}@corp.example"} for i in range(40)]


def mailbox(salt: int) -> list[dict[str, str]]:
    return [
        {
            "id": f"e{i}",
            "from": f"sender{i}.{salt}@mail.example",
            "subject": f"Subject {i}",
            "body": f"Hello, this is message {i}. Meeting notes are at "
            f"https://wiki.example/notes/{i}; call +44 20 7946 {i:04d} or write to "
            f"desk{i}.{salt}@help.example. " * 3,
        }
        for i in range(20)
    ]


def ledger_rows(salt: int) -> list[dict[str, Any]]:
    return [
        {"id": f"t{i}", "recipient": f"GB{i:02d}BARC10{salt % 10000:04d}01{i:04d}", "amount": i}
        for i in range(30)
    ]


# Every round reads values of its own (its salt), so no cache keyed by a value carries a
# check's answer from one round to the next.
DATA: dict[str, Any] = {}
PAGE = "Some article text about tools and agents. " * 60


def fill(salt: int) -> None:
    DATA.update(salt=salt, contacts=contact_list(salt), inbox=mailbox(salt), tx=ledger_rows(salt))


@tool(records=("[].email",), is_concurrency_safe=lambda a: True)
async def contacts() -> list[dict[str, str]]:
    """The address book."""
    await trio.sleep(0)
    return DATA["contacts"]  # type: ignore[no-any-return]


@tool(is_concurrency_safe=lambda a: True)
async def inbox() -> list[dict[str, str]]:
    """The inbox."""
    await trio.sleep(0)
    return DATA["inbox"]  # type: ignore[no-any-return]


@tool(is_concurrency_safe=lambda a: True)
async def web(url: Annotated[str, Sink.URL]) -> str:
    """A web page."""
    await trio.sleep(0)
    return PAGE


@tool(records=("[].recipient",), is_concurrency_safe=lambda a: True)
async def transactions() -> list[dict[str, Any]]:
    """Transactions."""
    await trio.sleep(0)
    return DATA["tx"]  # type: ignore[no-any-return]


@tool(is_concurrency_safe=lambda a: True)
async def send(to: Annotated[str, Sink.PARTY], body: Annotated[str, Sink.CONTENT]) -> str:
    """Send a message."""
    await trio.sleep(0)
    return "sent"


def request() -> str:
    return f"Read my inbox and the notes at https://wiki.example/notes/3x{DATA['salt']}, then tell people."


def history() -> list[list[ToolCall]]:
    return [
        [ToolCall("h1", "contacts", {}), ToolCall("h2", "inbox", {})],
        [ToolCall("h3", "web", {"url": f"https://wiki.example/notes/3x{DATA['salt']}"})],
        [ToolCall("h4", "transactions", {})],
    ]


def batch(calls: int) -> list[ToolCall]:
    made = []
    salt = DATA["salt"]
    for i in range(calls):
        if i % 2:
            to = f"person{i}.{salt}@corp.example"
            body = f"Summary {i}: see https://wiki.example/notes/3x{salt} and ask {to}."
            made.append(ToolCall(f"b{i}", "send", {"to": to, "body": body}))
        else:
            made.append(ToolCall(f"b{i}", ("inbox", "contacts", "transactions")[i % 3], {}))
    return made


ROUNDS = iter(range(1, 1 << 30))


async def one_round(mode: str, calls: int, whole: bool = False) -> float:
    fill(next(ROUNDS))
    registry = ToolRegistry()
    for definition in (contacts, inbox, web, transactions, send):
        registry.register(definition)
    scope = registry.scope()
    if mode == "guard":
        install_provenance_guard(scope, request=request(), unattended=True)
    elif mode == "hooks":  # what any policy of one listener and one observer costs
        scope.on_pre_execute(pre)
        scope.on_result(observe)
    gc.collect()  # no collection left over from the last round
    start = time.process_time()
    for turn in history():
        await run_tool_calls(registry, turn, agent=scope)
    if not whole:  # the measure: the batch alone, after the turns that read
        start = time.process_time()
    results = await run_tool_calls(registry, batch(calls), agent=scope)
    elapsed = time.process_time() - start
    assert not any(r.is_error for r in results), [r.text for r in results if r.is_error]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="4 rounds")
    options = parser.parse_args()
    if options.quick:
        options.rounds = 4
    modes = ("bare", "hooks", "guard")
    for whole in (False, True):
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(3):  # warm the caches of every path
            for mode in modes:
                trio.run(one_round, mode, options.calls, whole)
        for r in range(options.rounds):
            for mode in modes if r % 2 else modes[::-1]:
                times[mode].append(trio.run(one_round, mode, options.calls, whole))
        base = statistics.median(times["bare"])
        hooks = statistics.median(times["hooks"])
        on = statistics.median(times["guard"])
        paired = {
            mode: statistics.median(t / b for t, b in zip(times[mode], times["bare"], strict=True))
            for mode in modes
        }
        what = "whole agent run: 3 turns + a batch" if whole else "one batch (the issue's measure)"
        print(
            f"{what} of {options.calls} calls, {options.rounds} rounds each, CPU clock, interleaved"
        )
        print(f"{'row':<22}{'ms':>10}{'x bare':>9}{'per-round x':>13}")
        print(f"{'bare':<22}{base * 1e3:>10.3f}{1.0:>9.2f}{1.0:>13.2f}")
        print(
            f"{'pass-through hooks':<22}{hooks * 1e3:>10.3f}{hooks / base:>9.2f}"
            f"{paired['hooks']:>13.2f}"
        )
        print(f"{'provenance guard':<22}{on * 1e3:>10.3f}{on / base:>9.2f}{paired['guard']:>13.2f}")
        print(f"goal: at most 1.30x -> {'met' if on / base <= 1.3 else 'MISSED'}\n")


if __name__ == "__main__":
    main()
