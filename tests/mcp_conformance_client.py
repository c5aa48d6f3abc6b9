"""The mount as a client under the MCP conformance suite's client scenarios.

Run by the suite as ``python mcp_conformance_client.py URL`` with
``MCP_CONFORMANCE_SCENARIO`` (and, for some scenarios, ``MCP_CONFORMANCE_CONTEXT``)
in the environment: it mounts the scenario's server with ``open_mcp_mount(url=...)``,
then calls the tools the context names (or else every listed tool, with arguments
made from its schema), answering elicitation by accepting the form's defaults. For
``json-schema-2020-12-preservation`` it echoes the focal tool's registered
``parameters`` back to the server, which shows what the mount kept.

The suite's checks are the verdict: the exit status is 0 once the mount worked,
whatever the tools answered (some scenario servers answer only ``tools/list``).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import mcp.types as types
import trio

from toolnursery import ToolExecutionInput, ToolRegistry
from toolnursery.mcp import open_mcp_mount

_SAMPLES: dict[str, Any] = {"number": 1, "integer": 1, "string": "x", "boolean": True}


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy ``schema``'s required properties (simple types only)."""
    properties = schema.get("properties") or {}
    made: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (properties.get(name) or {}).get("type", "string")
        made[name] = _SAMPLES.get(kind if isinstance(kind, str) else "string", "x")
    return made


async def accept_defaults(params: types.ElicitRequestParams) -> types.ElicitResult:
    """Accept the form with each property's default (a user who changed nothing)."""
    if not isinstance(params, types.ElicitRequestFormParams):
        return types.ElicitResult(action="decline")
    properties: dict[str, Any] = dict(params.requested_schema.get("properties") or {})
    content = {k: v["default"] for k, v in properties.items() if "default" in v}
    return types.ElicitResult(action="accept", content=content)


ECHO_SCENARIO = "json-schema-2020-12-preservation"


async def main(url: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    registry = ToolRegistry()
    async with open_mcp_mount(registry, url=url, on_elicit=accept_defaults) as mount:
        print(f"mounted {url} at {mount.protocol_version}: {', '.join(mount.names)}")
        calls = context.get("toolCalls")
        if scenario == ECHO_SCENARIO:
            focal = registry.get("json_schema_2020_12_tool")
            assert focal is not None
            calls = [{"name": "json_schema_echo", "arguments": {"schema": focal.parameters}}]
        elif calls is None:
            calls = []
            for name in mount.names:
                definition = registry.get(name)
                assert definition is not None
                calls.append({"name": name, "arguments": arguments_for(definition.parameters)})
        for index, call in enumerate(calls):
            result = await registry.execute(
                ToolExecutionInput(f"c{index}", call["name"], call.get("arguments") or {})
            )
            print(call["name"], "->", [getattr(b, "text", b) for b in result.content])
    return 0


if __name__ == "__main__":
    sys.exit(trio.run(main, sys.argv[-1]))
