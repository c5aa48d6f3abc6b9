"""Tool definitions and their schemas (private; imports only ``_core``).

``ToolDefinition`` and its options, ``define_tool`` and ``@tool``, the schema DSL and
its validator, Struct/pydantic/docstring parameters, strict provider schemas, typed
outputs and the presentation vocabulary (views and their renderers).
"""

__all__: list[str] = []
