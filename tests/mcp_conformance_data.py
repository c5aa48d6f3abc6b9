"""What the MCP conformance scenarios expect of the tools they call.

The server scenarios of the official conformance suite (see
``scripts/mcp-conformance``) call tools by these names and check these contents.
Both the toolnursery registry (``mcp_conformance_tools.py``) and the SDK-only
reference server (``mcp_conformance_sdk_server.py``) are built from this module.
"""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib
from typing import Any, Final


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _wav_silence() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)  # 10 ms of silence
    return buffer.getvalue()


PNG: Final = base64.b64encode(_png_1x1_red()).decode()
"""A 1x1 red pixel, base64 (``tools-call-image``, ``tools-call-mixed-content``)."""

WAV: Final = base64.b64encode(_wav_silence()).decode()
"""10 ms of silence as a WAV file, base64 (``tools-call-audio``)."""

SIMPLE_TEXT: Final = "This is a simple text response for testing."
ERROR_TEXT: Final = "This tool intentionally returns an error for testing"
MIXED_TEXT: Final = "Multiple content types test:"
EMBEDDED: Final = {
    "uri": "test://embedded-resource",
    "mimeType": "text/plain",
    "text": "This is an embedded resource content.",
}
MIXED_RESOURCE: Final = {
    "uri": "test://mixed-content-resource",
    "mimeType": "application/json",
    "text": '{"test":"data","value":123}',
}
LOG_MESSAGES: Final = ("Tool execution started", "Tool processing data", "Tool execution completed")
LOGGING_DONE: Final = "Tool with logging executed successfully"
PROGRESS_STEPS: Final = (0, 50, 100)
PROGRESS_TOTAL: Final = 100
PROGRESS_DONE: Final = "Tool with progress executed successfully"
STEP_S: Final = 0.05
"""The pause between log messages and between progress reports, as the scenarios ask."""

SCHEMA_TOOL: Final = "json_schema_2020_12_tool"
SCHEMA_2020_12: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
"""``json-schema-2020-12``: ``$schema``, ``$defs`` and ``additionalProperties`` must
survive ``tools/list`` verbatim."""

NO_ARGUMENTS: Final[dict[str, Any]] = {"type": "object", "properties": {}}

TOOLS: Final[tuple[tuple[str, str, dict[str, Any]], ...]] = (
    ("test_simple_text", "Return a simple text.", NO_ARGUMENTS),
    ("test_image_content", "Return a 1x1 PNG image.", NO_ARGUMENTS),
    ("test_audio_content", "Return a short WAV clip.", NO_ARGUMENTS),
    ("test_embedded_resource", "Return an embedded text resource.", NO_ARGUMENTS),
    ("test_multiple_content_types", "Return text, an image and a resource.", NO_ARGUMENTS),
    ("test_tool_with_logging", "Send three info log messages while running.", NO_ARGUMENTS),
    ("test_tool_with_progress", "Report progress 0, 50 and 100 of 100.", NO_ARGUMENTS),
    ("test_error_handling", "Always fail.", NO_ARGUMENTS),
    (SCHEMA_TOOL, "Tool with JSON Schema 2020-12 features", SCHEMA_2020_12),
)
"""Every tool the scenarios call: ``(name, description, inputSchema)``."""

RECONNECTED: Final = "Reconnection test completed: the stream was closed mid-call and resumed."
"""``test_reconnection``'s result once it closed its stream (``server-sse-polling``)."""
NOT_CLOSED: Final = "Reconnection test: no stream to close (not a resumable HTTP call)."
"""Its result where there is no SSE stream to close (in-process, stdio)."""


# The questions of the elicitation scenarios (2025-11-25).
ELICITATION_SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}
ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}
