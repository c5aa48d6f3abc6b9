"""toolnursery: a trio-native tool-call pipeline for LLM agents.

Define tools once (:func:`define_tool`, ``@tool``), register them on a
:class:`ToolRegistry`, and run every call through one audited policy pipeline with
:meth:`ToolRegistry.execute` — or a model's whole batch of calls with
:func:`run_tool_calls`.

How a UI shows calls and results is in :mod:`toolnursery.presentation`; recording a
batch, reading its log back and planning a resume in :mod:`toolnursery.log`.
"""

from __future__ import annotations

from ._batch._scheduler import ToolBatch as ToolBatch
from ._batch._scheduler import open_tool_batch as open_tool_batch
from ._batch._scheduler import run_tool_calls as run_tool_calls
from ._core import _execution
from ._core._arguments import parse_arguments as parse_arguments
from ._core._asking import Elicitation as Elicitation
from ._core._asking import Sample as Sample
from ._core._asking import elicit as elicit
from ._core._asking import sample as sample
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
from ._core._errors import DependencyError as DependencyError
from ._core._errors import DuplicateCallIdError as DuplicateCallIdError
from ._core._errors import ElicitationUnavailableError as ElicitationUnavailableError
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
from ._core._homes import fixup_module_metadata as _fixup_module_metadata
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
from ._core._provenance import Origin as Origin
from ._core._provenance import ProvenanceFinding as ProvenanceFinding
from ._core._provenance import Sink as Sink
from ._core._signal import CancelSignal as CancelSignal
from ._core._statistics import ToolStatistics as ToolStatistics
from ._mcp._policy import install_destructive_ask as install_destructive_ask
from ._pipeline._ledger import ProvenanceLedger as ProvenanceLedger
from ._pipeline._otel import install_otel_tracing as install_otel_tracing
from ._pipeline._provenance import RecordedApprovals as RecordedApprovals
from ._pipeline._provenance import install_provenance_guard as install_provenance_guard
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
from ._tools import _presentation
from ._tools._annotations import McpAnnotations as McpAnnotations
from ._tools._define import define_tool as define_tool
from ._tools._define import tool as tool
from ._tools._definition import ToolDefinition as ToolDefinition
from ._tools._definition import ToolOptionArgs as ToolOptionArgs
from ._tools._definition import ToolOptions as ToolOptions
from ._tools._inject import Dependency as Dependency
from ._tools._inject import Depends as Depends
from ._tools._output import OutputRenderer as OutputRenderer
from ._tools._output import attach_output as attach_output
from ._tools._output import output_schema as output_schema
from ._tools._schema import SchemaProp as SchemaProp
from ._tools._schema import SchemaSpec as SchemaSpec
from ._tools._schema import SchemaType as SchemaType
from ._tools._schema import schema_spec_to_json_schema as schema_spec_to_json_schema
from ._tools._schema import validate_args as validate_args
from ._tools._strict import from_strict_arguments as from_strict_arguments
from ._tools._strict import strict_json_schema as strict_json_schema
from ._tools._structured import assert_supported_output_schema as assert_supported_output_schema
from ._tools._structured import validate_structured_value as validate_structured_value

__version__ = "0.1.0"
"""This release's version (the package metadata's too: pyproject.toml reads it from here)."""

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
    "Deny",
    "Dependency",
    "DependencyError",
    "Depends",
    "Disposer",
    "DuplicateCallIdError",
    "Elicitation",
    "ElicitationUnavailableError",
    "EmbeddedResource",
    "ExecuteWrapper",
    "FileToolError",
    "FrozenDict",
    "HookContext",
    "ImageContent",
    "IncompleteCallError",
    "InterruptedCallError",
    "LogFormatError",
    "LogLevel",
    "LogReport",
    "McpAnnotations",
    "McpCallError",
    "McpMountError",
    "McpServerGoneError",
    "NotJSONError",
    "Origin",
    "OutputRenderer",
    "OutputSchemaError",
    "OutsideRootError",
    "PostExecuteListener",
    "PostToolDecision",
    "PreExecuteListener",
    "PreToolDecision",
    "ProgressReport",
    "ProvenanceFinding",
    "ProvenanceLedger",
    "RecordedApprovals",
    "RegistrationError",
    "RemoteToolError",
    "ReportSink",
    "ResourceContents",
    "ResourceKey",
    "ResourceLink",
    "ResultObserver",
    "ResumeError",
    "Sample",
    "SchemaProp",
    "SchemaSpec",
    "SchemaType",
    "Sink",
    "StrictSchemaError",
    "StructSchemaError",
    "TextContent",
    "ToolArgsError",
    "ToolBatch",
    "ToolCall",
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
    "ToolReturn",
    "ToolRunContext",
    "ToolSchema",
    "ToolScope",
    "ToolStatistics",
    "ToolTimeoutError",
    "ToolnurseryError",
    "assert_supported_output_schema",
    "attach_output",
    "define_tool",
    "elicit",
    "from_strict_arguments",
    "install_destructive_ask",
    "install_otel_tracing",
    "install_provenance_guard",
    "install_retry_policy",
    "install_timeout_policy",
    "open_tool_batch",
    "output_schema",
    "parse_arguments",
    "report_log",
    "report_progress",
    "reporting",
    "run_tool_calls",
    "sample",
    "schema_spec_to_json_schema",
    "strict_json_schema",
    "thaw",
    "tool",
    "validate_args",
    "validate_structured_value",
]

_fixup_module_metadata(__name__, __all__)

# The thin public modules load after the package's own fixup, so that a name both
# export (the log's errors) keeps the package, home of the error tree, as its home.
from . import log as log  # noqa: E402
from . import presentation as presentation  # noqa: E402
