"""What the provider adapters add per call, over the scheduler's own per-call cost.

For each format (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) a
batch of N parallel-safe calls with no hooks (body: one checkpoint) is run three ways
in the same process, and each is reported in µs per call (median of repetitions):

* ``bare``: a bare ``trio.open_nursery()`` that ``start_soon``-s the body once per call;
* ``scheduler``: ``open_tool_batch`` fed the N ready-made ``ToolCall`` values, then
  its results iterated (the scheduler's own cost);
* ``adapter``: the whole provider path — the format's stream events (plain dicts, as
  the wire carries them; and, when the SDK is installed, the SDK's own event
  objects, built before timing) through ``stream_calls`` into the same kind of
  batch, its ``pairs()`` iterated, and ``result_messages`` built.

``overhead`` is (adapter − scheduler) / scheduler: the goal is at most 20 %. Because
that difference of two noisy timings is itself noisy, the adapter's own work is also
timed alone: ``feed`` (events → calls, into a batch stand-in that only collects them,
and ``pairs()`` over ready results) and ``messages`` (results → ``result_messages``);
``own`` is (feed − stream + messages) / scheduler, where ``stream`` is the cost of
iterating the recorded events alone (what any loop over the SDK's stream pays).

Times are the CPU time of the thread (``time.thread_time``; trio runs on one thread),
not wall time: on a shared machine a wall clock also counts the time the process
waits for a core. Timings are the minimum over repetitions
(the least disturbed run on a shared machine), interleaved per repetition.
Each call streams as the SDKs do: a start event, its arguments in three deltas, an
end event; one text delta leads the response.

Run: ``python benchmarks/bench_providers.py`` (``--quick``: fewer calls and repetitions).
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import trio

from toolnursery import (
    ToolCall,
    ToolDefinition,
    ToolRegistry,
    ToolRunContext,
    open_tool_batch,
    run_tool_calls,
)
from toolnursery.providers import anthropic, openai_chat, openai_responses

PIECES = ('{"path": ', '"src/file_', '.py"}')


async def body(args: Any, ctx: ToolRunContext) -> str:
    await trio.lowlevel.checkpoint()
    return "ok"


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(
        ToolDefinition(
            name="read",
            description="",
            parameters={"type": "object"},
            execute=body,
            is_concurrency_safe=lambda _: True,
        )
    )
    return reg


def chat_events(n: int) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": "Reading."})]
    for i in range(n):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": "read", "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in PIECES:
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls"))
    return out


def responses_events(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "type": "response.output_text.delta",
            "item_id": "m",
            "output_index": 0,
            "content_index": 0,
            "delta": "Reading.",
            "logprobs": [],
            "sequence_number": 0,
        }
    ]
    out.insert(
        0,
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "sequence_number": 0,
            "item": {
                "type": "message",
                "id": "m",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            },
        },
    )
    for i in range(1, n + 1):
        item = {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": "read",
            "arguments": "",
            "status": "in_progress",
        }
        out.append(
            {
                "type": "response.output_item.added",
                "output_index": i,
                "item": item,
                "sequence_number": 0,
            }
        )
        for piece in PIECES:
            out.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": f"fc_{i}",
                    "output_index": i,
                    "delta": piece,
                    "sequence_number": 0,
                }
            )
        out.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": f"fc_{i}",
                "output_index": i,
                "arguments": "".join(PIECES),
                "sequence_number": 0,
            }
        )
    out.append({"type": "response.completed", "sequence_number": 0, "response": _response()})
    return out


def _response() -> dict[str, Any]:
    return {
        "id": "r",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [],
    }


def anthropic_events(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Reading."},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    for i in range(1, n + 1):
        out.append(
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_{i}",
                    "name": "read",
                    "input": {},
                },
            }
        )
        for piece in PIECES:
            out.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            )
        out.append({"type": "content_block_stop", "index": i})
    out.append({"type": "message_stop"})
    return out


FORMATS: dict[str, tuple[Callable[[int], list[dict[str, Any]]], Any]] = {
    "openai-chat": (chat_events, openai_chat),
    "openai-responses": (responses_events, openai_responses),
    "anthropic": (anthropic_events, anthropic),
}


def sdk_objects(fmt: str, events: list[dict[str, Any]]) -> list[Any] | None:
    """The SDK's own event objects for ``events`` (``None`` without the SDK)."""
    try:
        from pydantic import TypeAdapter

        if fmt == "openai-chat":
            from openai.types.chat import ChatCompletionChunk

            return [ChatCompletionChunk.model_validate(e) for e in events]
        if fmt == "openai-responses":
            from openai.types.responses import ResponseStreamEvent

            adapter: Any = TypeAdapter(ResponseStreamEvent)
        else:
            from anthropic.types import RawMessageStreamEvent

            adapter = TypeAdapter(RawMessageStreamEvent)
        return [adapter.validate_python(e) for e in events]
    except ImportError:
        return None


async def replay(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


async def run_bare(n: int) -> None:
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(body, None, None)


async def run_scheduler(reg: ToolRegistry, calls: list[ToolCall]) -> None:
    async with open_tool_batch(reg, max_parallel=len(calls)) as batch:
        for call in calls:
            batch.submit(call)
        batch.close()
        async for _ in batch:
            pass


async def run_adapter(reg: ToolRegistry, module: Any, events: list[Any]) -> None:
    async with open_tool_batch(reg, max_parallel=len(events)) as batch:
        stream = module.stream_calls(replay(events), batch)
        async for _ in stream:
            pass
        async for _ in stream.pairs():
            pass
    messages = module.result_messages(stream.calls, stream.results)
    assert len(stream.results) == len(stream.calls)
    assert messages


class NullBatch:
    """A batch stand-in: collects submissions, answers each with a ready result."""

    def __init__(self, result: Any) -> None:
        self.calls: list[ToolCall] = []
        self.result = result

    def submit(self, call: ToolCall) -> int:
        self.calls.append(call)
        return len(self.calls) - 1

    def close(self) -> None:
        pass

    def __aiter__(self) -> NullBatch:
        self._read = 0
        return self

    async def __anext__(self) -> tuple[ToolCall, Any]:
        if self._read >= len(self.calls):
            raise StopAsyncIteration
        self._read += 1
        return self.calls[self._read - 1], self.result


async def run_feed(module: Any, events: list[Any], result: Any) -> Any:
    batch = NullBatch(result)
    stream = module.stream_calls(replay(events), batch)
    async for _ in stream:
        pass
    async for _ in stream.pairs():
        pass
    return stream


async def timed_all(fns: dict[str, Callable[[], Any]], n: int, reps: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            gc.collect()
            start = time.thread_time()
            await fn()
            samples[name].append((time.thread_time() - start) / n * 1e6)
    return {name: min(values) for name, values in samples.items()}


async def main_async(n: int, reps: int) -> None:
    reg = registry()
    calls = [ToolCall(f"call_{i}", "read", "".join(PIECES)) for i in range(n)]
    print(f"{n} calls per batch, minimum of {reps} repetitions, µs per call")
    print(
        f"{'format':<17} {'events':<6} {'bare':>6} {'scheduler':>9} {'adapter':>8} "
        f"{'overhead':>8} {'stream':>6} {'feed':>6} {'messages':>8} {'own':>6}"
    )
    for fmt, (build, module) in FORMATS.items():
        dicts = build(n)
        kinds = [("dict", dicts)]
        objects = sdk_objects(fmt, dicts)
        if objects is not None:
            kinds.append(("sdk", objects))
        for kind, events in kinds:
            await run_adapter(reg, module, events)  # warm up
            result = (await run_tool_calls(reg, calls[:1]))[0]
            done = await run_feed(module, events, result)
            results = [result] * len(done.calls)
            t = await timed_all(
                {
                    "bare": partial(run_bare, n),
                    "scheduler": partial(run_scheduler, reg, calls),
                    "adapter": partial(run_adapter, reg, module, events),
                    "stream": partial(_iterate, events),
                    "feed": partial(run_feed, module, events, result),
                    "messages": partial(_messages, module, done.calls, results),
                },
                n,
                reps,
            )
            overhead = (t["adapter"] - t["scheduler"]) / t["scheduler"] * 100
            own = (t["feed"] - t["stream"] + t["messages"]) / t["scheduler"] * 100
            print(
                f"{fmt:<17} {kind:<6} {t['bare']:>6.2f} {t['scheduler']:>9.2f} "
                f"{t['adapter']:>8.2f} {overhead:>7.1f}% {t['stream']:>6.2f} {t['feed']:>6.2f} "
                f"{t['messages']:>8.2f} {own:>5.1f}%"
            )


async def _iterate(events: list[Any]) -> None:
    async for _ in replay(events):
        pass


async def _messages(module: Any, calls: list[ToolCall], results: list[Any]) -> None:
    module.result_messages(calls, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer calls and repetitions")
    args = parser.parse_args()
    n, reps = (200, 7) if args.quick else (1000, 15)
    trio.run(main_async, n, reps)


if __name__ == "__main__":
    main()
