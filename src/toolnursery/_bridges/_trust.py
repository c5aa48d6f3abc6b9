"""The user's messages of a framework's run, trusted in the run's provenance ledger.

Each bridge reads the user's messages where its framework keeps them — LangChain's
``HumanMessage`` in the graph state, pydantic-ai's ``UserPromptPart`` in the run's
messages, openai-agents' input items with role ``user``, smolagents' task — and, when
the call's scope keeps a provenance ledger (the provenance guard made one, or anything
that read ``scope.provenance``), trusts each text once (:func:`trust_user_texts`).
Nothing is read, and nothing made, for a scope without a ledger. Text a model or a tool
wrote is never among them: only the user's own messages are.

The readers import no framework: they recognise the framework's objects by the
attributes the framework documents, so this module loads with any one of them.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._pipeline._ledger import ProvenanceLedger
from .._pipeline._registry import ToolScope

__all__ = [
    "langchain_user_texts",
    "trust_node_input",
    "openai_agents_user_texts",
    "pydantic_ai_user_texts",
    "smolagents_agents",
    "smolagents_turn",
    "smolagents_user_texts",
    "trust_user_texts",
]

_lock = threading.Lock()  # smolagents calls tools from several threads at once
_trusted: weakref.WeakKeyDictionary[ProvenanceLedger, set[str]] = weakref.WeakKeyDictionary()


def trust_user_texts(scope: ToolScope | None, texts: Iterable[str]) -> None:
    """Trust ``texts`` (read only now, lazily) in ``scope``'s ledger, each text once;
    nothing when the scope keeps no ledger (or there is no scope)."""
    if scope is None:
        return
    ledger = scope.existing_provenance()
    if ledger is None:
        return
    with _lock:
        done = _trusted.get(ledger)
        if done is None:
            done = _trusted[ledger] = set()
        new = [text for text in dict.fromkeys(texts) if text and text not in done]
        if new:
            ledger.trust(*new)
            done.update(new)


def _texts(content: Any, kinds: frozenset[str]) -> Iterator[str]:
    """The text of a message's content: a string, or the text parts of a list of parts
    (strings, or mappings whose ``type`` is one of ``kinds``)."""
    if isinstance(content, str):
        yield content
        return
    if not isinstance(content, list | tuple):
        return
    for part in content:
        if isinstance(part, str):
            yield part
        elif isinstance(part, Mapping) and part.get("type") in kinds:
            text = part.get("text")
            if isinstance(text, str):
                yield text


_LANGCHAIN_TEXT = frozenset({"text"})
_OPENAI_TEXT = frozenset({"input_text", "text"})


def langchain_user_texts(input: Any, key: str) -> Iterator[str]:
    """The texts of the ``HumanMessage``\\s of a LangGraph node's input (a state dict,
    a state object, a list of messages, or a ``Send`` payload carrying the state)."""
    if isinstance(input, Mapping) and input.get("__type") == "tool_call_with_context":
        input = input.get("state")
    if isinstance(input, list):
        messages: Any = input
    elif isinstance(input, Mapping):
        messages = input.get(key)
    else:
        messages = getattr(input, key, None)
    for message in messages or ():
        if getattr(message, "type", None) == "human":  # HumanMessage (and its chunk)
            yield from _texts(getattr(message, "content", None), _LANGCHAIN_TEXT)


def trust_node_input(node: Any, input: Any) -> Any:
    r"""A ``ToolBatchNode``'s input, returned, its ``HumanMessage``\s trusted in the
    node's scope's ledger first (unless ``node.trust_user_messages`` is false)."""
    if node.trust_user_messages:
        trust_user_texts(node.agent, langchain_user_texts(input, node.messages_key))
    return input


def pydantic_ai_user_texts(messages: Iterable[Any]) -> Iterator[str]:
    """The texts of the ``UserPromptPart``\\s of a pydantic-ai run's messages."""
    for message in messages:
        for part in getattr(message, "parts", ()):
            if getattr(part, "part_kind", None) == "user-prompt":
                yield from _texts(part.content, frozenset())


def openai_agents_user_texts(items: Iterable[Any]) -> Iterator[str]:
    """The texts of an openai-agents run's input items whose role is ``user``."""
    for item in items:
        role = item.get("role") if isinstance(item, Mapping) else getattr(item, "role", None)
        if role == "user":
            content = (
                item.get("content") if isinstance(item, Mapping) else getattr(item, "content", None)
            )
            yield from _texts(content, _OPENAI_TEXT)


def smolagents_agents() -> tuple[Any, Any]:
    """The smolagents agents on this thread's stack: the innermost (whose step is calling
    the current tool) and the outermost (whose run it is); ``(None, None)`` when no agent
    called. smolagents runs a step's parallel calls in worker threads, each from the
    agent's ``execute_tool_call``, so the agent is on the worker's stack too."""
    from smolagents.agents import MultiStepAgent  # type: ignore[import-untyped,unused-ignore]

    inner = outer = None
    frame = sys._getframe(1)
    while frame is not None:
        if "self" in frame.f_code.co_varnames:
            owner = frame.f_locals.get("self")
            if isinstance(owner, MultiStepAgent):
                outer = owner
                if inner is None:
                    inner = owner
        frame = frame.f_back  # type: ignore[assignment]
    return inner, outer


def smolagents_user_texts(agent: Any) -> Iterator[str]:
    """The tasks of the smolagents agent ``agent`` (the outermost agent calling the
    current tool: a managed agent's task is written by its manager's model, so only the
    outermost agent's count); none for ``None``."""
    if agent is None:
        return
    for step in getattr(agent.memory, "steps", ()):
        if type(step).__name__ == "TaskStep" and isinstance(step.task, str):
            yield step.task
    if isinstance(agent.task, str):  # the run's task (in its memory once the run began)
        yield agent.task


_steps: weakref.WeakKeyDictionary[Any, tuple[object, object, object]] = weakref.WeakKeyDictionary()


def smolagents_turn(agent: Any) -> object | None:
    """A key shared by the calls of ``agent``'s current step, and only by them (``None``
    for no agent): smolagents runs a step's parallel calls in separate threads, and the
    ledger counts them as one batch by it (:attr:`ProvenanceLedger.turns`).

    A step is told apart by the agent's ``step_number`` and the last entry of its
    memory (by identity): neither changes while a step's calls run, and the entry
    changes when the step ends (smolagents appends it to the memory) or a run begins
    (its task is appended, or the memory reset)."""
    if agent is None:
        return None
    memory = getattr(agent, "memory", None)
    steps = getattr(memory, "steps", None) or (None,)
    now = (getattr(agent, "step_number", None), steps[-1])
    with _lock:
        known = _steps.get(agent)
        if known is not None and known[0] == now[0] and known[1] is now[1]:
            return known[2]
        turn = object()
        _steps[agent] = (now[0], now[1], turn)
        return turn
