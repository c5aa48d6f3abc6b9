"""Provider formats: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages.

One module per format — :mod:`~toolnursery.providers.openai_chat`,
:mod:`~toolnursery.providers.openai_responses`,
:mod:`~toolnursery.providers.anthropic` — each with the same functions:

* ``tools(registry, scope)``: the tools a scope can see, in the format's ``tools``;
* ``calls(response)``: the response's tool calls as :class:`~toolnursery.ToolCall`;
* ``result_messages(calls, results)``: the results (and contexts) as the format's
  next input;
* ``stream_calls(stream, batch)``: a :class:`ToolStream` that submits each streamed
  call to a batch the moment it is complete;
* ``assistant_messages(stream)``: what a streamed response amounts to, for the
  history.

The modules read the SDKs' objects and plain dicts alike and import no SDK:
``pip install -e '.[openai]'`` or ``'.[anthropic]'`` in a checkout, for the
clients themselves.
"""

from __future__ import annotations

from .._core._homes import fixup_module_metadata as _fixup_module_metadata
from ._common import StrictReader as StrictReader
from ._common import strict_parameters as strict_parameters
from ._stream import Batch as Batch
from ._stream import ToolStream as ToolStream

__all__ = ["Batch", "StrictReader", "ToolStream", "strict_parameters"]

_fixup_module_metadata(__name__, __all__)
