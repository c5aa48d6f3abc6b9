"""An asyncio program running a model's batch through toolnursery.

A plain ``asyncio.run`` application (a FastAPI handler looks the same: it is already
inside the loop) serves a tiny web site on localhost, then runs one model response's
tool calls through :func:`toolnursery.aio.run_tool_calls`:

* ``fetch_page`` is an **asyncio** tool (``asyncio.open_connection``, as aiohttp or
  httpx would do): declared with ``asyncio_tool``, it runs as a task on this loop;
* ``word_count`` is a **trio** tool: it runs in the trio guest run, side by side.

Then it shows cancellation crossing over: ``asyncio.timeout`` cancels a batch whose
fetch hangs; the asyncio tool sees ``CancelledError`` and cleans up, the batch drains,
and the JSON-lines audit log records the call as ``ABORTED``.

Run it: ``python examples/asyncio_app.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
import urllib.parse
from pathlib import Path

import trio

import toolnursery.aio
from toolnursery import ToolCall, ToolError, ToolRegistry, tool
from toolnursery.aio import asyncio_tool
from toolnursery.log import JsonlRecorder, replay_log

PAGE = b"<html><title>toolnursery</title><body>hello from asyncio</body></html>"
CLEANED_UP: list[str] = []


# -- a tiny web site ------------------------------------------------------------------


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    request = await reader.readline()
    path = request.split()[1] if len(request.split()) > 1 else b"/"
    if path == b"/slow":
        await reader.read()  # answer never; return when the client hangs up
    elif path == b"/":
        writer.write(b"HTTP/1.0 200 OK\r\n\r\n" + PAGE)
    else:
        writer.write(b"HTTP/1.0 404 Not Found\r\n\r\nno such page")
    writer.close()
    await writer.wait_closed()


# -- the tools ------------------------------------------------------------------------


@asyncio_tool
@tool
async def fetch_page(url: str) -> str:
    """Fetch a web page and return its body.

    Args:
        url: an http:// URL.
    """
    parts = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(f"GET {parts.path or '/'} HTTP/1.0\r\n\r\n".encode())
        await writer.drain()
        raw = await reader.read()
    except asyncio.CancelledError:
        CLEANED_UP.append(url)
        raise
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    if status != 200:
        raise ToolError(f"HTTP {status} for {url}", code="HTTP_ERROR")
    return body.decode()


@tool
async def word_count(text: str) -> str:
    """Count the words of a text.

    Args:
        text: the text to count.
    """
    # trio code: this tool runs in the trio guest run, next to the asyncio tool.
    words = await trio.to_thread.run_sync(str.split, text)
    return str(len(words))


# -- the application ------------------------------------------------------------------


async def main() -> None:
    registry = ToolRegistry()
    registry.register(fetch_page)
    registry.register(word_count)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    async with server:
        # One model response: three calls, run concurrently where safe.
        calls = [
            ToolCall("call_1", "fetch_page", f'{{"url": "{base}/"}}'),
            ToolCall("call_2", "word_count", '{"text": "the quick brown fox"}'),
            ToolCall("call_3", "fetch_page", f'{{"url": "{base}/missing"}}'),
        ]
        results = await toolnursery.aio.run_tool_calls(registry, calls)
        for call, result in zip(calls, results, strict=True):
            text = result.content[0].text  # type: ignore[union-attr]
            status = "error" if result.is_error else "ok"
            print(f"{call.name} {status}: {text[:60]}")

        # Cancellation crosses over: the asyncio timeout aborts the batch, which
        # cancels the hanging asyncio tool and waits for its cleanup.
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "batch.jsonl"
            with JsonlRecorder(log) as recorder:
                try:
                    async with asyncio.timeout(0.1):
                        await toolnursery.aio.run_tool_calls(
                            registry,
                            [ToolCall("call_4", "fetch_page", f'{{"url": "{base}/slow"}}')],
                            recorder=recorder,
                        )
                except TimeoutError:
                    pass
            ((_, logged),) = replay_log(log)
            code = logged.error.code if logged is not None and logged.error else "?"
            cleaned = "cleaned up" if f"{base}/slow" in CLEANED_UP else "NOT cleaned up"
            print(f"cancelled: fetch_page {cleaned}, {code}")


if __name__ == "__main__":
    asyncio.run(main())
