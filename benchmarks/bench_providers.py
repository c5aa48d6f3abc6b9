"""What the provider adapters add per call, over the scheduler alone on the same calls.

For each format (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages), given
as plain dicts (as the wire carries them) and, when the SDK is installed, as the SDK's
own objects (built before timing), a batch of N parallel-safe calls (body: one
checkpoint, no hooks) goes from the provider's response to the provider's result
messages, two ways:

* ``response``: ``calls(response)`` → ``run_tool_calls`` → ``result_messages``;
  against ``run_tool_calls`` on the same ready-made ``ToolCall`` values;
* ``stream``: the format's stream events through ``stream_calls`` into an
  ``open_tool_batch``, the text iterated, ``pairs()`` iterated, ``result_messages``
  built; against ``open_tool_batch`` fed the same ready-made calls and iterated.
  Each call streams as the SDKs do: a start event, its arguments in three deltas, an
  end event; one text delta leads the response.

``overhead`` is (adapter − scheduler) / scheduler, the goal at most 20 %. That
difference of two timings is noisy, so the adapter's own work is also timed alone and
reported as ``own`` (its share of the scheduler's time): for ``response``, ``calls()``
plus ``result_messages()`` over ready results; for ``stream``, the events fed into a
batch stand-in that only collects the calls, ``pairs()`` over ready results and
``result_messages()``, less the cost of iterating the recorded events alone (what any
loop over the SDK's stream pays).

Times are the process's CPU time (``time.process_time``; everything runs on the trio
thread), not wall time: on a shared machine a wall clock also counts the time the
process waits for a core. Every timed run of a row is interleaved: a sample times each
of the row's runs once, one after the other; a repetition is the median of its
samples, and the table shows µs per call and the percentages as the median (min–max)
over the repetitions.

Run: ``python benchmarks/bench_providers.py`` (``--quick``: fewer calls and samples;
``-n N``: the batch's size; ``--repeat R``).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
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


def chat_response(n: int) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "read", "arguments": "".join(PIECES)},
        }
        for i in range(n)
    ]
    message = {"role": "assistant", "content": "Reading.", "tool_calls": calls}
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }


def responses_response(n: int) -> dict[str, Any]:
    text = {"type": "output_text", "text": "Reading.", "annotations": []}
    output: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "m",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
    ]
    output += [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": "read",
            "arguments": "".join(PIECES),
            "status": "completed",
        }
        for i in range(n)
    ]
    return {**_response(), "output": output}


def anthropic_response(n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": "Reading."}]
    content += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {"path": "src/file_.py"}}
        for i in range(n)
    ]
    return {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


FORMATS: dict[str, tuple[Callable[[int], Any], Callable[[int], Any], Any]] = {
    "openai-chat": (chat_response, chat_events, openai_chat),
    "openai-responses": (responses_response, responses_events, openai_responses),
    "anthropic": (anthropic_response, anthropic_events, anthropic),
}


def sdk_response(fmt: str, response: dict[str, Any]) -> Any:
    """The SDK's own response object for ``response`` (``None`` without the SDK)."""
    try:
        if fmt == "openai-chat":
            from openai.types.chat import ChatCompletion

            return ChatCompletion.model_validate(response)
        if fmt == "openai-responses":
            from openai.types.responses import Response

            return Response.model_validate(response)
        from anthropic.types import Message

        return Message.model_validate(response)
    except ImportError:
        return None


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


async def run_calls(reg: ToolRegistry, calls: list[ToolCall]) -> None:
    await run_tool_calls(reg, calls, max_parallel=len(calls))


async def run_response(reg: ToolRegistry, module: Any, response: Any) -> None:
    calls = module.calls(response)
    results = await run_tool_calls(reg, calls, max_parallel=len(calls))
    assert module.result_messages(calls, results)


async def run_response_own(module: Any, response: Any, results: list[Any]) -> None:
    module.result_messages(module.calls(response), results)


async def timed_rows(
    fns: dict[str, Callable[[], Any]], n: int, reps: int, samples: int
) -> dict[str, list[float]]:
    """Per repetition, each run's µs per call: the median of ``samples`` interleaved
    samples (a sample runs each of ``fns`` once, in turn)."""
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        taken: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(samples):
            for name, fn in fns.items():
                gc.collect()
                start = time.process_time()
                await fn()
                taken[name].append((time.process_time() - start) / n * 1e6)
        for name, values in taken.items():
            out[name].append(statistics.median(values))
    return out


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


async def main_async(n: int, reps: int, samples: int) -> None:
    reg = registry()
    calls = [ToolCall(f"call_{i}", "read", "".join(PIECES)) for i in range(n)]
    print(f"python {sys.version.split()[0]}, trio {trio.__version__}")
    print(
        f"{n} calls per batch; CPU µs per call and % of the scheduler's time: "
        f"median (min–max) over {reps} repetitions of {samples} interleaved samples"
    )
    header = (
        f"{'format':<17} {'path':<8} {'input':<5} {'scheduler µs':>20} {'adapter µs':>20} "
        f"{'overhead %':>18} {'own %':>18}"
    )
    print(header)
    print("-" * len(header))
    result = (await run_tool_calls(reg, calls[:1]))[0]
    results = [result] * n
    for fmt, (build_response, build_events, module) in FORMATS.items():
        response = build_response(n)
        events = build_events(n)
        inputs = [("dict", response, events)]
        sdk = sdk_response(fmt, response)
        objects = sdk_objects(fmt, events)
        if sdk is not None and objects is not None:
            inputs.append(("sdk", sdk, objects))
        for kind, whole, streamed in inputs:
            assert len(module.calls(whole)) == n
            rows = {
                "response": {
                    "scheduler": partial(run_calls, reg, calls),
                    "adapter": partial(run_response, reg, module, whole),
                    "own": partial(run_response_own, module, whole, results),
                },
                "stream": {
                    "scheduler": partial(run_scheduler, reg, calls),
                    "adapter": partial(run_adapter, reg, module, streamed),
                    "feed": partial(run_feed, module, streamed, result),
                    "iterate": partial(_iterate, streamed),
                    "messages": partial(_messages, module, calls, results),
                },
            }
            for path, fns in rows.items():
                for fn in fns.values():
                    await fn()  # warm up
                t = await timed_rows(fns, n, reps, samples)
                sched, adapter = t["scheduler"], t["adapter"]
                if path == "response":
                    own = t["own"]
                else:
                    own = [
                        f - i + m
                        for f, i, m in zip(t["feed"], t["iterate"], t["messages"], strict=True)
                    ]
                over = [(a - s) / s * 100 for a, s in zip(adapter, sched, strict=True)]
                own_pct = [o / s * 100 for o, s in zip(own, sched, strict=True)]
                print(
                    f"{fmt:<17} {path:<8} {kind:<5} {spread(sched, '.2f'):>20} "
                    f"{spread(adapter, '.2f'):>20} {spread(over, '.1f'):>18} "
                    f"{spread(own_pct, '.1f'):>18}",
                    flush=True,
                )


async def _iterate(events: list[Any]) -> None:
    async for _ in replay(events):
        pass


async def _messages(module: Any, calls: list[ToolCall], results: list[Any]) -> None:
    module.result_messages(calls, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer calls and samples")
    parser.add_argument("-n", type=int, default=None, help="calls per batch (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per row")
    args = parser.parse_args()
    n, samples = (200, 5) if args.quick else (1000, 9)
    trio.run(main_async, args.n or n, args.repeat, samples)


if __name__ == "__main__":
    main()
