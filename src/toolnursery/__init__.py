"""toolnursery: a trio-native tool-call pipeline for LLM agents.

Define tools once (:func:`define_tool`, ``@tool``), register them on a
:class:`ToolRegistry`, and run every call through one audited policy pipeline with
:meth:`ToolRegistry.execute` — or a model's whole batch of calls with
:func:`run_tool_calls`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from ._batch._recorder import ContextEvent as ContextEvent
from ._batch._recorder import JsonlRecorder as JsonlRecorder
from ._batch._recorder import ProgressEvent as ProgressEvent
from ._batch._recorder import RecorderEvent as RecorderEvent
from ._batch._recorder import ToolCallEvent as ToolCallEvent
from ._batch._recorder import ToolCallRecorder as ToolCallRecorder
from ._batch._recorder import ToolResultEvent as ToolResultEvent
from ._batch._recorder import iter_log as iter_log
from ._batch._recorder import read_log as read_log
from ._batch._recorder import replay_log as replay_log
from ._batch._resume import ResumedCall as ResumedCall
from ._batch._resume import ResumePlan as ResumePlan
from ._batch._resume import plan_resume as plan_resume
from ._batch._scheduler import ToolBatch as ToolBatch
from ._batch._scheduler import open_tool_batch as open_tool_batch
from ._batch._scheduler import run_tool_calls as run_tool_calls
from ._core._arguments import parse_arguments as parse_arguments
from ._core._content import AudioContent as AudioContent
from ._core._content import ContentAnnotations as ContentAnnotations
from ._core._content import ContentBlock as ContentBlock
from ._core._content import EmbeddedResource as EmbeddedResource
from ._core._content import HookContext as HookContext
from ._core._content import ImageContent as ImageContent
from ._core._content import ResourceContents as ResourceContents
from ._core._content import ResourceLink as ResourceLink
from ._core._content import TextContent as TextContent
from ._core._content import ToolCall as ToolCall
from ._core._content import ToolErrorInfo as ToolErrorInfo
from ._core._content import ToolExecutionResult as ToolExecutionResult
from ._core._content import ToolResult as ToolResult
from ._core._content import ToolReturn as ToolReturn
from ._core._content import ToolSchema as ToolSchema
from ._core._decisions import EXCLUSIVE as EXCLUSIVE
from ._core._decisions import PARALLEL as PARALLEL
from ._core._decisions import Accept as Accept
from ._core._decisions import Allow as Allow
from ._core._decisions import Ask as Ask
from ._core._decisions import Block as Block
from ._core._decisions import Deny as Deny
from ._core._decisions import PostToolDecision as PostToolDecision
from ._core._decisions import PreToolDecision as PreToolDecision
from ._core._decisions import ResourceKey as ResourceKey
from ._core._decisions import ToolExecutionMode as ToolExecutionMode
from ._core._decisions import ToolRestriction as ToolRestriction
from ._core._errors import DUPLICATE_CALL_ID as DUPLICATE_CALL_ID
from ._core._errors import INTERRUPTED as INTERRUPTED
from ._core._errors import INVALID_TOOL_OUTPUT as INVALID_TOOL_OUTPUT
from ._core._errors import MCP_REQUEST_FAILED as MCP_REQUEST_FAILED
from ._core._errors import MCP_SERVER_GONE as MCP_SERVER_GONE
from ._core._errors import MCP_TOOL_ERROR as MCP_TOOL_ERROR
from ._core._errors import TOOL_ABORTED as TOOL_ABORTED
from ._core._errors import TOOL_ABORTED_BEFORE_DISPATCH as TOOL_ABORTED_BEFORE_DISPATCH
from ._core._errors import TOOL_TIMEOUT as TOOL_TIMEOUT
from ._core._errors import AbortError as AbortError
from ._core._errors import AsyncioHostError as AsyncioHostError
from ._core._errors import DuplicateCallIdError as DuplicateCallIdError
from ._core._errors import FileToolError as FileToolError
from ._core._errors import IncompleteCallError as IncompleteCallError
from ._core._errors import InterruptedCallError as InterruptedCallError
from ._core._errors import LogFormatError as LogFormatError
from ._core._errors import McpCallError as McpCallError
from ._core._errors import McpMountError as McpMountError
from ._core._errors import McpServerGoneError as McpServerGoneError
from ._core._errors import NotJSONError as NotJSONError
from ._core._errors import OutputSchemaError as OutputSchemaError
from ._core._errors import OutsideRootError as OutsideRootError
from ._core._errors import RegistrationError as RegistrationError
from ._core._errors import RemoteToolError as RemoteToolError
from ._core._errors import ResumeError as ResumeError
from ._core._errors import StrictSchemaError as StrictSchemaError
from ._core._errors import StructSchemaError as StructSchemaError
from ._core._errors import ToolArgsError as ToolArgsError
from ._core._errors import ToolError as ToolError
from ._core._errors import ToolNotFoundError as ToolNotFoundError
from ._core._errors import ToolnurseryError as ToolnurseryError
from ._core._errors import ToolOutputError as ToolOutputError
from ._core._errors import ToolTimeoutError as ToolTimeoutError
from ._core._execution import ApprovalOutcome as ApprovalOutcome
from ._core._execution import ApprovalRequest as ApprovalRequest
from ._core._execution import ApprovalService as ApprovalService
from ._core._execution import ToolDispatchExecution as ToolDispatchExecution
from ._core._execution import ToolExecution as ToolExecution
from ._core._execution import ToolExecutionInput as ToolExecutionInput
from ._core._execution import ToolExecutionToken as ToolExecutionToken
from ._core._execution import ToolRunContext as ToolRunContext
from ._core._json import FrozenDict as FrozenDict
from ._core._json import thaw as thaw
from ._core._progress import CallReport as CallReport
from ._core._progress import LogLevel as LogLevel
from ._core._progress import LogReport as LogReport
from ._core._progress import ProgressReport as ProgressReport
from ._core._progress import ReportSink as ReportSink
from ._core._progress import report_log as report_log
from ._core._progress import report_progress as report_progress
from ._core._progress import reporting as reporting
from ._core._signal import CancelSignal as CancelSignal
from ._core._statistics import ToolStatistics as ToolStatistics
from ._mcp._policy import install_destructive_ask as install_destructive_ask
from ._pipeline._otel import install_otel_tracing as install_otel_tracing
from ._pipeline._registry import Disposer as Disposer
from ._pipeline._registry import ExecuteWrapper as ExecuteWrapper
from ._pipeline._registry import PostExecuteListener as PostExecuteListener
from ._pipeline._registry import PreExecuteListener as PreExecuteListener
from ._pipeline._registry import ResultObserver as ResultObserver
from ._pipeline._registry import ToolGuard as ToolGuard
from ._pipeline._registry import ToolRegistry as ToolRegistry
from ._pipeline._registry import ToolScope as ToolScope
from ._pipeline._retry import install_retry_policy as install_retry_policy
from ._pipeline._timeout import install_timeout_policy as install_timeout_policy
from ._tools._annotations import McpAnnotations as McpAnnotations
from ._tools._define import define_tool as define_tool
from ._tools._define import tool as tool
from ._tools._definition import ToolDefinition as ToolDefinition
from ._tools._definition import ToolOptionArgs as ToolOptionArgs
from ._tools._definition import ToolOptions as ToolOptions
from ._tools._output import OutputRenderer as OutputRenderer
from ._tools._output import attach_output as attach_output
from ._tools._output import output_schema as output_schema
from ._tools._present import call_view as call_view
from ._tools._present import result_view as result_view
from ._tools._presentation import DiffCallView as DiffCallView
from ._tools._presentation import DiffResultView as DiffResultView
from ._tools._presentation import FileDiff as FileDiff
from ._tools._presentation import FileLocation as FileLocation
from ._tools._presentation import GenericCallView as GenericCallView
from ._tools._presentation import GenericResultView as GenericResultView
from ._tools._presentation import TerminalCallView as TerminalCallView
from ._tools._presentation import TerminalResultView as TerminalResultView
from ._tools._presentation import ToolCallKind as ToolCallKind
from ._tools._presentation import ToolCallView as ToolCallView
from ._tools._presentation import ToolResultView as ToolResultView
from ._tools._render import render_markdown as render_markdown
from ._tools._render import render_terminal as render_terminal
from ._tools._schema import SchemaProp as SchemaProp
from ._tools._schema import SchemaSpec as SchemaSpec
from ._tools._schema import SchemaType as SchemaType
from ._tools._schema import schema_spec_to_json_schema as schema_spec_to_json_schema
from ._tools._schema import validate_args as validate_args
from ._tools._strict import from_strict_arguments as from_strict_arguments
from ._tools._strict import strict_json_schema as strict_json_schema
from ._tools._structured import assert_supported_output_schema as assert_supported_output_schema
from ._tools._structured import validate_structured_value as validate_structured_value

try:
    __version__: str = _metadata.version("toolnursery")
    """The installed distribution's version (from the package metadata)."""
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"


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
