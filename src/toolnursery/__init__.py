"""toolnursery: a trio-native tool-call pipeline for LLM agents.

Define tools once (:func:`define_tool`, ``@tool``), register them on a
:class:`ToolRegistry`, and run every call through one audited policy pipeline with
:meth:`ToolRegistry.execute` — or a model's whole batch of calls with
:func:`run_tool_calls`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from . import _execution, _presentation
from ._arguments import parse_arguments as parse_arguments
from ._content import AudioContent as AudioContent
from ._content import ContentAnnotations as ContentAnnotations
from ._content import ContentBlock as ContentBlock
from ._content import EmbeddedResource as EmbeddedResource
from ._content import HookContext as HookContext
from ._content import ImageContent as ImageContent
from ._content import ResourceContents as ResourceContents
from ._content import ResourceLink as ResourceLink
from ._content import TextContent as TextContent
from ._content import ToolCall as ToolCall
from ._content import ToolErrorInfo as ToolErrorInfo
from ._content import ToolExecutionResult as ToolExecutionResult
from ._content import ToolResult as ToolResult
from ._content import ToolReturn as ToolReturn
from ._content import ToolSchema as ToolSchema
from ._decisions import EXCLUSIVE as EXCLUSIVE
from ._decisions import PARALLEL as PARALLEL
from ._decisions import Accept as Accept
from ._decisions import Allow as Allow
from ._decisions import Ask as Ask
from ._decisions import Block as Block
from ._decisions import Deny as Deny
from ._decisions import PostToolDecision as PostToolDecision
from ._decisions import PreToolDecision as PreToolDecision
from ._decisions import ResourceKey as ResourceKey
from ._decisions import ToolExecutionMode as ToolExecutionMode
from ._decisions import ToolRestriction as ToolRestriction
from ._define import define_tool as define_tool
from ._define import tool as tool
from ._definition import ToolDefinition as ToolDefinition
from ._definition import ToolOptionArgs as ToolOptionArgs
from ._definition import ToolOptions as ToolOptions
from ._errors import DUPLICATE_CALL_ID as DUPLICATE_CALL_ID
from ._errors import INTERRUPTED as INTERRUPTED
from ._errors import INVALID_TOOL_OUTPUT as INVALID_TOOL_OUTPUT
from ._errors import MCP_REQUEST_FAILED as MCP_REQUEST_FAILED
from ._errors import MCP_SERVER_GONE as MCP_SERVER_GONE
from ._errors import MCP_TOOL_ERROR as MCP_TOOL_ERROR
from ._errors import TOOL_ABORTED as TOOL_ABORTED
from ._errors import TOOL_ABORTED_BEFORE_DISPATCH as TOOL_ABORTED_BEFORE_DISPATCH
from ._errors import TOOL_TIMEOUT as TOOL_TIMEOUT
from ._errors import AbortError as AbortError
from ._errors import AsyncioHostError as AsyncioHostError
from ._errors import DuplicateCallIdError as DuplicateCallIdError
from ._errors import FileToolError as FileToolError
from ._errors import IncompleteCallError as IncompleteCallError
from ._errors import InterruptedCallError as InterruptedCallError
from ._errors import LogFormatError as LogFormatError
from ._errors import McpCallError as McpCallError
from ._errors import McpMountError as McpMountError
from ._errors import McpServerGoneError as McpServerGoneError
from ._errors import NotJSONError as NotJSONError
from ._errors import OutputSchemaError as OutputSchemaError
from ._errors import OutsideRootError as OutsideRootError
from ._errors import RegistrationError as RegistrationError
from ._errors import RemoteToolError as RemoteToolError
from ._errors import ResumeError as ResumeError
from ._errors import StrictSchemaError as StrictSchemaError
from ._errors import StructSchemaError as StructSchemaError
from ._errors import ToolArgsError as ToolArgsError
from ._errors import ToolError as ToolError
from ._errors import ToolNotFoundError as ToolNotFoundError
from ._errors import ToolnurseryError as ToolnurseryError
from ._errors import ToolOutputError as ToolOutputError
from ._errors import ToolTimeoutError as ToolTimeoutError
from ._execution import ApprovalOutcome as ApprovalOutcome
from ._execution import ApprovalRequest as ApprovalRequest
from ._execution import ApprovalService as ApprovalService
from ._execution import ToolDispatchExecution as ToolDispatchExecution
from ._execution import ToolExecution as ToolExecution
from ._execution import ToolExecutionInput as ToolExecutionInput
from ._execution import ToolExecutionToken as ToolExecutionToken
from ._execution import ToolRunContext as ToolRunContext
from ._json import FrozenDict as FrozenDict
from ._json import thaw as thaw
from ._mcp_annotations import McpAnnotations as McpAnnotations
from ._mcp_policy import install_destructive_ask as install_destructive_ask
from ._otel import install_otel_tracing as install_otel_tracing
from ._output import OutputRenderer as OutputRenderer
from ._output import attach_output as attach_output
from ._output import output_schema as output_schema
from ._presentation import DiffCallView as DiffCallView
from ._presentation import DiffResultView as DiffResultView
from ._presentation import FileDiff as FileDiff
from ._presentation import FileLocation as FileLocation
from ._presentation import GenericCallView as GenericCallView
from ._presentation import GenericResultView as GenericResultView
from ._presentation import TerminalCallView as TerminalCallView
from ._presentation import TerminalResultView as TerminalResultView
from ._presentation import ToolCallKind as ToolCallKind
from ._presentation import ToolCallView as ToolCallView
from ._presentation import ToolResultView as ToolResultView
from ._presentation import call_view as call_view
from ._presentation import result_view as result_view
from ._progress import CallReport as CallReport
from ._progress import LogLevel as LogLevel
from ._progress import LogReport as LogReport
from ._progress import ProgressReport as ProgressReport
from ._progress import ReportSink as ReportSink
from ._progress import report_log as report_log
from ._progress import report_progress as report_progress
from ._progress import reporting as reporting
from ._recorder import ContextEvent as ContextEvent
from ._recorder import JsonlRecorder as JsonlRecorder
from ._recorder import ProgressEvent as ProgressEvent
from ._recorder import RecorderEvent as RecorderEvent
from ._recorder import ToolCallEvent as ToolCallEvent
from ._recorder import ToolCallRecorder as ToolCallRecorder
from ._recorder import ToolResultEvent as ToolResultEvent
from ._recorder import iter_log as iter_log
from ._recorder import read_log as read_log
from ._recorder import replay_log as replay_log
from ._registry import Disposer as Disposer
from ._registry import ExecuteWrapper as ExecuteWrapper
from ._registry import PostExecuteListener as PostExecuteListener
from ._registry import PreExecuteListener as PreExecuteListener
from ._registry import ResultObserver as ResultObserver
from ._registry import ToolGuard as ToolGuard
from ._registry import ToolRegistry as ToolRegistry
from ._registry import ToolScope as ToolScope
from ._render import render_markdown as render_markdown
from ._render import render_terminal as render_terminal
from ._resume import ResumedCall as ResumedCall
from ._resume import ResumePlan as ResumePlan
from ._resume import plan_resume as plan_resume
from ._retry import install_retry_policy as install_retry_policy
from ._scheduler import ToolBatch as ToolBatch
from ._scheduler import open_tool_batch as open_tool_batch
from ._scheduler import run_tool_calls as run_tool_calls
from ._schema import SchemaProp as SchemaProp
from ._schema import SchemaSpec as SchemaSpec
from ._schema import SchemaType as SchemaType
from ._schema import schema_spec_to_json_schema as schema_spec_to_json_schema
from ._schema import validate_args as validate_args
from ._signal import CancelSignal as CancelSignal
from ._statistics import ToolStatistics as ToolStatistics
from ._strict import from_strict_arguments as from_strict_arguments
from ._strict import strict_json_schema as strict_json_schema
from ._structured import assert_supported_output_schema as assert_supported_output_schema
from ._structured import validate_structured_value as validate_structured_value
from ._timeout import install_timeout_policy as install_timeout_policy

try:
    __version__: str = _metadata.version("toolnursery")
    """The installed distribution's version (from the package metadata)."""
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

# Annotations that name a class across an import cycle import it for type checkers
# only; bind those names at runtime now that every module is loaded, so that help(),
# inspect.signature and typing.get_type_hints resolve them (tests/test_introspection.py).
vars(_execution).setdefault("ToolScope", ToolScope)
vars(_presentation).setdefault("ToolDefinition", ToolDefinition)

__all__ = [
    "DUPLICATE_CALL_ID",
    "EXCLUSIVE",
    "INTERRUPTED",
    "INVALID_TOOL_OUTPUT",
    "MCP_REQUEST_FAILED",
    "MCP_SERVER_GONE",
    "MCP_TOOL_ERROR",
    "PARALLEL",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "AbortError",
    "Accept",
    "Allow",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalService",
    "Ask",
    "AsyncioHostError",
    "AudioContent",
    "Block",
    "CallReport",
    "CancelSignal",
    "ContentAnnotations",
    "ContentBlock",
    "ContextEvent",
    "Deny",
    "DiffCallView",
    "DiffResultView",
    "Disposer",
    "DuplicateCallIdError",
    "EmbeddedResource",
    "ExecuteWrapper",
    "FileDiff",
    "FileLocation",
    "FileToolError",
    "FrozenDict",
    "GenericCallView",
    "GenericResultView",
    "HookContext",
    "ImageContent",
    "IncompleteCallError",
    "InterruptedCallError",
    "JsonlRecorder",
    "LogFormatError",
    "LogLevel",
    "LogReport",
    "McpAnnotations",
    "McpCallError",
    "McpMountError",
    "McpServerGoneError",
    "NotJSONError",
    "OutputRenderer",
    "OutputSchemaError",
    "OutsideRootError",
    "PostExecuteListener",
    "PostToolDecision",
    "PreExecuteListener",
    "PreToolDecision",
    "ProgressEvent",
    "ProgressReport",
    "RecorderEvent",
    "RegistrationError",
    "RemoteToolError",
    "ReportSink",
    "ResourceContents",
    "ResourceKey",
    "ResourceLink",
    "ResultObserver",
    "ResumeError",
    "ResumePlan",
    "ResumedCall",
    "SchemaProp",
    "SchemaSpec",
    "SchemaType",
    "StrictSchemaError",
    "StructSchemaError",
    "TerminalCallView",
    "TerminalResultView",
    "TextContent",
    "ToolArgsError",
    "ToolBatch",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallKind",
    "ToolCallRecorder",
    "ToolCallView",
    "ToolDefinition",
    "ToolDispatchExecution",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolExecutionMode",
    "ToolExecutionResult",
    "ToolExecutionToken",
    "ToolGuard",
    "ToolNotFoundError",
    "ToolOptionArgs",
    "ToolOptions",
    "ToolOutputError",
    "ToolRegistry",
    "ToolRestriction",
    "ToolResult",
    "ToolResultEvent",
    "ToolResultView",
    "ToolReturn",
    "ToolRunContext",
    "ToolSchema",
    "ToolScope",
    "ToolStatistics",
    "ToolTimeoutError",
    "ToolnurseryError",
    "assert_supported_output_schema",
    "attach_output",
    "call_view",
    "define_tool",
    "from_strict_arguments",
    "install_destructive_ask",
    "install_otel_tracing",
    "install_retry_policy",
    "install_timeout_policy",
    "iter_log",
    "open_tool_batch",
    "output_schema",
    "parse_arguments",
    "plan_resume",
    "read_log",
    "render_markdown",
    "render_terminal",
    "replay_log",
    "report_log",
    "report_progress",
    "reporting",
    "result_view",
    "run_tool_calls",
    "schema_spec_to_json_schema",
    "strict_json_schema",
    "thaw",
    "tool",
    "validate_args",
    "validate_structured_value",
]
