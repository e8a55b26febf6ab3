"""The delegation rules: what a fork or spawn delegation may ask for and what it decides.

Depth (:mod:`.depth`), requests and their checks (:mod:`.request`), the child plan
(:mod:`.child_plan`), reading a child's result (:mod:`.results`), what the parent's model sees
(:mod:`.render`), structured output (:mod:`.structured`) over DSH's JSON Schema subset
(:mod:`.schema_subset`), a tool call's arguments (:mod:`.arguments`) and outcome
(:mod:`.outcome`), and the cache-preserving fork's texts (:mod:`.cache_fork`).

A tier of its own: copy this folder with the log tier (``core/log/``, ``core/_checking.py``,
``core/_json.py``) beside it. It reads the log tier only through that tier's front door. This
``__all__`` is the tier's contract.
"""

from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING as _TYPE_CHECKING

from .arguments import parse_tool_arguments as parse_tool_arguments
from .cache_fork import CLOSING_REPORT_SECTION as CLOSING_REPORT_SECTION
from .cache_fork import PERSONA_CONTEXT_NAME as PERSONA_CONTEXT_NAME
from .cache_fork import PERSONA_CONTEXT_ORDER as PERSONA_CONTEXT_ORDER
from .cache_fork import STRUCTURED_ANSWER_NAME as STRUCTURED_ANSWER_NAME
from .cache_fork import STRUCTURED_ANSWER_ORDER as STRUCTURED_ANSWER_ORDER
from .cache_fork import cache_preserving_context as cache_preserving_context
from .cache_fork import persona_context as persona_context
from .cache_fork import structured_answer as structured_answer
from .cache_fork import structured_answer_context as structured_answer_context
from .child_plan import DELEGATION_SECTION as DELEGATION_SECTION
from .child_plan import PERSONA_SECTION_NAME as PERSONA_SECTION_NAME
from .child_plan import PERSONA_SECTION_ORDER as PERSONA_SECTION_ORDER
from .child_plan import SUBAGENT_DELEGATION_CONTEXT as SUBAGENT_DELEGATION_CONTEXT
from .child_plan import CheckedRequest as CheckedRequest
from .child_plan import ChildPlan as ChildPlan
from .child_plan import CompletedPrefix as CompletedPrefix
from .child_plan import DelegatedPolicy as DelegatedPolicy
from .child_plan import ParentView as ParentView
from .child_plan import check_request as check_request
from .child_plan import child_header as child_header
from .child_plan import delegated_policy as delegated_policy
from .child_plan import fork_seed as fork_seed
from .child_plan import one_shot_descriptor as one_shot_descriptor
from .child_plan import plan_child as plan_child
from .child_plan import resolve_child_options as resolve_child_options
from .depth import DepthError as DepthError
from .depth import DepthProblem as DepthProblem
from .depth import child_depth as child_depth
from .depth import parent_depth as parent_depth
from .depth import resolve_child_depth as resolve_child_depth
from .depth import validate_max_depth as validate_max_depth
from .outcome import ToolOutcome as ToolOutcome
from .render import STOP_REASON_HEADLINES as STOP_REASON_HEADLINES
from .render import SUBAGENT_LABEL_DESCRIPTION as SUBAGENT_LABEL_DESCRIPTION
from .render import SUBAGENT_TOOL_NAME as SUBAGENT_TOOL_NAME
from .render import BackgroundMode as BackgroundMode
from .render import render_infrastructure_failure as render_infrastructure_failure
from .render import render_result_and_dispose_failure as render_result_and_dispose_failure
from .render import render_start_error as render_start_error
from .render import render_tool_result as render_tool_result
from .render import stop_reason_headline as stop_reason_headline
from .render import subagent_prompt_description as subagent_prompt_description
from .render import subagent_tool_description as subagent_tool_description
from .render import subagent_tool_parameters as subagent_tool_parameters
from .render import subagent_tool_schema as subagent_tool_schema
from .request import DEPTH as DEPTH
from .request import INVALID_TOOL_FILTER as INVALID_TOOL_FILTER
from .request import RESERVED_TOOL_NAMES as RESERVED_TOOL_NAMES
from .request import UNSUPPORTED_CAPABILITY as UNSUPPORTED_CAPABILITY
from .request import UNSUPPORTED_SCHEMA as UNSUPPORTED_SCHEMA
from .request import AgentOptions as AgentOptions
from .request import Capabilities as Capabilities
from .request import PromptSection as PromptSection
from .request import RuntimeOptions as RuntimeOptions
from .request import StartError as StartError
from .request import StartRequest as StartRequest
from .request import check_capabilities as check_capabilities
from .request import validate_tool_filter as validate_tool_filter
from .results import DIAGNOSTIC_TRUNCATED as DIAGNOSTIC_TRUNCATED
from .results import MAX_DIAGNOSTIC_BYTES as MAX_DIAGNOSTIC_BYTES
from .results import STOP_REASONS as STOP_REASONS
from .results import RunResult as RunResult
from .results import StopReason as StopReason
from .results import SubagentResult as SubagentResult
from .results import accounting_turn_end as accounting_turn_end
from .results import bound_diagnostic as bound_diagnostic
from .results import describe_failure as describe_failure
from .results import final_assistant_output as final_assistant_output
from .results import output_text as output_text
from .results import read_result as read_result
from .results import read_turn as read_turn
from .results import stop_reason_for as stop_reason_for
from .schema_subset import ANNOTATION_KEYWORDS as ANNOTATION_KEYWORDS
from .schema_subset import CONSTRAINT_KEYWORDS as CONSTRAINT_KEYWORDS
from .schema_subset import SCHEMA_TYPES as SCHEMA_TYPES
from .schema_subset import JsonSchemaError as JsonSchemaError
from .schema_subset import SupportedSchema as SupportedSchema
from .schema_subset import check_object_schema as check_object_schema
from .schema_subset import check_schema as check_schema
from .schema_subset import value_violations as value_violations
from .structured import INVALID_ARGS_ERROR as INVALID_ARGS_ERROR
from .structured import STRUCTURED_OUTPUT_DESCRIPTION as STRUCTURED_OUTPUT_DESCRIPTION
from .structured import STRUCTURED_OUTPUT_INSTRUCTION as STRUCTURED_OUTPUT_INSTRUCTION
from .structured import STRUCTURED_OUTPUT_RECORDED as STRUCTURED_OUTPUT_RECORDED
from .structured import STRUCTURED_OUTPUT_SECTION as STRUCTURED_OUTPUT_SECTION
from .structured import STRUCTURED_OUTPUT_TOOL_NAME as STRUCTURED_OUTPUT_TOOL_NAME
from .structured import InvalidArguments as InvalidArguments
from .structured import OutputSchema as OutputSchema
from .structured import StructuredOutputContract as StructuredOutputContract
from .structured import already_recorded_message as already_recorded_message
from .structured import render_already_recorded as render_already_recorded
from .structured import render_invalid_arguments as render_invalid_arguments
from .structured import render_structured_recorded as render_structured_recorded
from .structured import structured_output_contract as structured_output_contract
from .structured import validate_output_schema as validate_output_schema
from .structured import validate_structured_arguments as validate_structured_arguments

# Every name imported above. mypy reads no built __all__; `import X as X` is its re-export.
if not _TYPE_CHECKING:
    __all__ = [name for name, value in globals().items()
               if not name.startswith("_") and not isinstance(value, _ModuleType)]
