"""Tool bodies for tests/ray/test_ray.py, in a module Ray workers can import by name.

Bodies signal the test through files (paths come in the arguments): a worker is
another process, so a file is the one signal both sides can see.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import os
import pickle
import time
import uuid
from pathlib import Path
from typing import Any

import attrs
import msgspec
import pydantic
import trio

from toolnursery import (
    AudioContent,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolError,
    ToolReturn,
)


class Pair(msgspec.Struct, frozen=True):
    """Typed arguments (importable, so a worker can rebuild the class)."""

    name: str
    counts: tuple[int, ...]


class QuotaError(ToolError):
    """Raised when a test body reports a ToolError subclass with its own code."""

    code = "QUOTA"


def echo(args: Any, ctx: Any) -> str:
    return f"{ctx.name}:{ctx.call_id}:{msgspec.json.encode(args).decode()}:{type(args).__name__}"


def typed(args: Pair, ctx: Any) -> str:
    return f"{args.name}={sum(args.counts)}"


def returns(args: Any, ctx: Any) -> Any:
    kind = args["kind"]
    if kind == "text":
        return "plain ünïcode text"
    if kind == "return":
        return ToolReturn(
            content=[TextContent("a"), ImageContent(data="aGk=", mime_type="image/png")],
            meta={"n": 1, "f": 0.1, "nested": [1, {"x": None}]},
        )
    if kind == "blocks":
        return [TextContent("one"), TextContent("two")]
    if kind == "block":
        return TextContent("single")
    if kind == "mcp-blocks":
        return [
            AudioContent(data="AAAA", mime_type="audio/wav"),
            ResourceLink(uri="file:///tmp/x.txt", name="x", size=3, meta={"k": [1]}),
        ]
    if kind == "value":
        return {"z": 1, "a": [1.5, True, None, "s"], "big": 2**62}
    if kind == "tool-error":
        raise QuotaError("over quota for " + args.get("who", "?"))
    if kind == "custom-code":
        raise ToolError("custom", code="MY_CODE")
    if kind == "error":
        raise ValueError("bad value")
    if kind == "empty-error":
        raise RuntimeError
    if kind == "unencodable":
        return {"handle": object()}
    raise AssertionError(kind)


async def trio_body(args: Any, ctx: Any) -> str:
    await trio.sleep(0)
    return f"trio:{args['n'] * 2}"


def _mark(directory: str, prefix: str) -> None:
    Path(directory, f"{prefix}-{os.getpid()}-{uuid.uuid4().hex}").write_text(str(time.time()))


def spin_until_cancelled(args: Any, ctx: Any) -> str:
    """Busy-loop (pure Python, no sleep) until Ray interrupts it; record cleanup."""
    Path(args["started"]).write_text(str(os.getpid()))
    try:
        while True:
            sum(range(1000))
    finally:
        Path(args["cleaned"]).write_text("cleaned")


async def trio_spin_until_cancelled(args: Any, ctx: Any) -> str:
    """An async body (run by ``trio.run`` in the worker) cancelled at a checkpoint."""
    Path(args["started"]).write_text(str(os.getpid()))
    try:
        await trio.sleep_forever()
    finally:
        Path(args["cleaned"]).write_text("cleaned")


def ignore_interrupts(args: Any, ctx: Any) -> str:
    """A body that swallows ray.cancel's KeyboardInterrupt: only force stops it."""
    Path(args["started"]).write_text(str(os.getpid()))
    while True:
        try:
            while True:
                sum(range(1000))
        except KeyboardInterrupt:
            Path(args["interrupted"]).write_text("interrupted")


def maybe_crash(args: Any, ctx: Any) -> str:
    """Record a run; crash the worker when asked (or on the first run only)."""
    directory = args["runs"]
    first = not any(Path(directory).iterdir())
    _mark(directory, "run")
    if args.get("crash") == "always" or (args.get("crash") == "first" and first):
        os._exit(3)
    return "survived"


def work(args: Any, ctx: Any) -> str:
    """Sleep in the worker and record the interval it ran in; with ``meet`` (a folder),
    first wait there until ``meet_n`` bodies are running at once (bounded)."""
    start = time.time()
    if "meet" in args:
        Path(args["meet"], ctx.call_id).write_text("here")
        deadline = time.monotonic() + 60
        # Polling: the bodies run in separate worker processes; files are what they share.
        while len(list(Path(args["meet"]).iterdir())) < args["meet_n"]:
            if time.monotonic() > deadline:
                return "gave up"
            time.sleep(0.02)
    time.sleep(args["seconds"])
    Path(args["runs"], f"{ctx.call_id}-{uuid.uuid4().hex}").write_text(f"{start} {time.time()}")
    return "worked"


def hold_until(args: Any, ctx: Any) -> str:
    """Hold the call until a file appears (the test's release); bounded."""
    Path(args["started"]).write_text("started")
    deadline = time.monotonic() + 60
    # Polling: the test process can signal a worker process only through the file.
    while not Path(args["release"]).exists():
        if time.monotonic() > deadline:
            return "gave up"
        time.sleep(0.02)
    return "released"


def counter_setup() -> dict[str, int]:
    return {"calls": 0, "pid": os.getpid()}


def count(args: Any, ctx: Any) -> str:
    state = ctx.state
    state["calls"] += 1
    if args.get("crash"):
        os._exit(4)
    if "started" in args:
        hold_until(args, ctx)
    return f"{state['calls']}@{state['pid']}"


def cpu(args: Any, ctx: Any) -> str:
    total = 0
    for i in range(args["n"]):
        total += i * i
    return str(total)


# --- return values: the same bodies run locally and on Ray (tests/ray/test_ray_values.py) ---

_PIDS = os.environ.get("TOOLNURSERY_TEST_PIDS")
if _PIDS:  # a worker started with this variable says it imported this module
    with open(_PIDS, "a") as _pids:
        _pids.write(f"{os.getpid()}\n")


class Email(pydantic.BaseModel):
    sender: str
    sent: datetime.datetime
    tags: list[str] = []


class Thread(pydantic.BaseModel):
    labels: set[str]
    emails: list[Email]


@attrs.define
class Balance:
    iban: str
    amount: decimal.Decimal


@dataclasses.dataclass
class Holder:
    value: Any


class Cabin(enum.Enum):
    ECONOMY = "economy"


class Point(msgspec.Struct, tag=True):
    x: int
    tags: frozenset[str] = frozenset()


class Opaque:
    """No JSON form."""


WHEN = datetime.datetime(2026, 12, 1, 9, 30, tzinfo=datetime.UTC)
FSNAME = os.fsdecode(b"caf\xe9")  # a lone surrogate, as os.scandir hands out
WORDS = [f"w{i}" for i in range(40)]  # a str set's iteration order differs between processes

VALUES: dict[str, Any] = {
    "pydantic": lambda: [Email(sender="a@x.io", sent=WHEN, tags=["b", "a"])],
    "pydantic-set": lambda: Thread(labels=set(WORDS), emails=[Email(sender="s", sent=WHEN)]),
    "dataclass": lambda: Holder({"when": WHEN.date(), "ids": (uuid.UUID(int=7), 2)}),
    "attrs": lambda: {"balance": Balance("DE00", decimal.Decimal("12.50"))},
    "struct": lambda: Point(1, frozenset(WORDS)),
    "enum": lambda: {"cabin": Cabin.ECONOMY},
    "datetime": lambda: {"at": WHEN, "day": WHEN.date(), "t": WHEN.time()},
    "set": lambda: {"words": set(WORDS)},
    "frozenset": lambda: frozenset(WORDS),
    "mixed-set": lambda: {1, "a", None, 2.5, ("t", 1)},
    "tuple": lambda: (1, ("a", None)),
    "int-keys": lambda: {10: "x", 2: "y"},
    "empty-list": lambda: [],
    "neg-zero": lambda: -0.0,
    "big-int": lambda: 2**100,
    "nan": lambda: {"score": float("nan")},
    "inf": lambda: [1.0, float("inf")],
    "surrogate": lambda: {"name": FSNAME},
    "surrogate-key": lambda: {FSNAME: [FSNAME]},
    "surrogate-text": lambda: FSNAME,
    "surrogate-return": lambda: ToolReturn(content=[TextContent(FSNAME)], meta={"k": FSNAME}),
    "set-in-meta": lambda: ToolReturn(content=[TextContent("x")], meta={"s": {1, 2}}),
    "collision": lambda: {1: "a", "1": "b"},
    "no-form": lambda: {"items": [1, Opaque()]},
}


def values(args: Any, ctx: Any) -> Any:
    return VALUES[args["kind"]]()


def unpickle(args: Any, ctx: Any) -> Any:
    """Return the value pickled in the arguments (the property test's generated value)."""
    return pickle.loads(base64.b64decode(args["blob"]))


def pid(args: Any, ctx: Any) -> str:
    return str(os.getpid())


def marking_setup(directory: str) -> Any:
    """An actor pool's setup that leaves one file per actor that ran it."""

    def setup() -> dict[str, int]:
        Path(directory, f"setup-{os.getpid()}").write_text("ready")
        return counter_setup()

    return setup


def raises_with_surrogate(args: Any, ctx: Any) -> Any:
    """A failure whose text holds a lone surrogate (a file name in the message)."""
    if args.get("tool_error"):
        raise ToolError(f"cannot open {FSNAME}", code="OPEN_" + FSNAME)
    raise OSError(f"cannot open {FSNAME}")
