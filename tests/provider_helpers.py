"""Shared by the provider tests: a small registry, SDK-type validation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter

from toolnursery import (
    Accept,
    HookContext,
    ImageContent,
    TextContent,
    ToolArgsError,
    ToolDefinition,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
)

PNG = "iVBORw0KGgo="

PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Where."},
        "limit": {"type": "integer", "default": 10},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
    },
    "required": ["path"],
}


def registry(ran: list[tuple[str, Any]] | None = None) -> ToolRegistry:
    """``echo`` (parallel-safe), ``picture`` (an image) and ``hint`` (adds a context)."""
    ran = [] if ran is None else ran
    reg = ToolRegistry()

    async def echo(args: Any, ctx: ToolRunContext) -> str:
        if not isinstance(args, dict) or not isinstance(args.get("path"), str):
            raise ToolArgsError(['"path" must be a string'])
        ran.append(("echo", args))
        return f"echo {args['path']}"

    async def picture(args: Any, ctx: ToolRunContext) -> ToolReturn:
        ran.append(("picture", args))
        return ToolReturn([TextContent("a picture"), ImageContent(PNG, "image/png")])

    async def hint(args: Any, ctx: ToolRunContext) -> str:
        ran.append(("hint", args))
        return "hinted"

    reg.register(
        ToolDefinition(
            name="echo",
            description="Echo a path.",
            parameters=PARAMS,
            execute=echo,
            is_concurrency_safe=lambda _: True,
            validate=False,  # echo refuses bad arguments itself, with a text the tests read
        )
    )
    reg.register(
        ToolDefinition(
            name="picture", description="Draw.", parameters={"type": "object"}, execute=picture
        )
    )
    reg.register(
        ToolDefinition(name="hint", description="", parameters={"type": "object"}, execute=hint)
    )

    async def post(execution: Any, result: Any, next_: Any) -> Any:
        if execution.name == "hint":
            return Accept(
                additional_contexts=[
                    HookContext(
                        [TextContent("remember this"), ImageContent(PNG, "image/png")], "test"
                    )
                ]
            )
        return await next_()

    reg.on_post_execute(post)
    return reg


def _exhaust(value: Any) -> Any:
    """Run pydantic's lazy ``Iterable`` validators to the end (they validate on use)."""
    if isinstance(value, dict):
        return {k: _exhaust(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_exhaust(v) for v in value]
    if isinstance(value, Iterator) or type(value).__name__ == "ValidatorIterator":
        return [_exhaust(v) for v in value]
    return value


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def accepts(param_type: Any, value: Any) -> Any:
    """Validate ``value`` against an SDK request TypedDict; returns the validated form.

    The adapter is kept alive: the lazy validators it returns still refer to it.
    """
    adapter = _ADAPTERS.get(param_type)
    if adapter is None:
        adapter = _ADAPTERS[param_type] = TypeAdapter(param_type)
    return _exhaust(adapter.validate_python(value))
