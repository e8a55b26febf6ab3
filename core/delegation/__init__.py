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

from .arguments import (
    parse_tool_arguments,
)
from .cache_fork import (
    CLOSING_REPORT_SECTION,
    PERSONA_CONTEXT_NAME,
    PERSONA_CONTEXT_ORDER,
    STRUCTURED_ANSWER_NAME,
    STRUCTURED_ANSWER_ORDER,
    cache_preserving_context,
    persona_context,
    structured_answer,
    structured_answer_context,
)
from .child_plan import (
    DELEGATION_SECTION,
    PERSONA_SECTION_NAME,
    PERSONA_SECTION_ORDER,
    SUBAGENT_DELEGATION_CONTEXT,
    CheckedRequest,
    ChildPlan,
    CompletedPrefix,
    DelegatedPolicy,
    ParentView,
    check_request,
    child_header,
    delegated_policy,
    fork_seed,
    one_shot_descriptor,
    plan_child,
    resolve_child_options,
)
from .depth import (
    DepthError,
    DepthProblem,
    child_depth,
    parent_depth,
    resolve_child_depth,
    validate_max_depth,
)
from .outcome import (
    ToolOutcome,
)
from .render import (
    STOP_REASON_HEADLINES,
    SUBAGENT_LABEL_DESCRIPTION,
    SUBAGENT_TOOL_NAME,
    BackgroundMode,
    render_infrastructure_failure,
    render_result_and_dispose_failure,
    render_start_error,
    render_tool_result,
    stop_reason_headline,
    subagent_prompt_description,
    subagent_tool_description,
    subagent_tool_parameters,
    subagent_tool_schema,
)
from .request import (
    DEPTH,
    INVALID_TOOL_FILTER,
    RESERVED_TOOL_NAMES,
    UNSUPPORTED_CAPABILITY,
    UNSUPPORTED_SCHEMA,
    AgentOptions,
    Capabilities,
    PromptSection,
    RuntimeOptions,
    StartError,
    StartRequest,
    check_capabilities,
    validate_tool_filter,
)
from .results import (
    DIAGNOSTIC_TRUNCATED,
    MAX_DIAGNOSTIC_BYTES,
    STOP_REASONS,
    RunResult,
    StopReason,
    SubagentResult,
    accounting_turn_end,
    bound_diagnostic,
    describe_failure,
    final_assistant_output,
    output_text,
    read_result,
    read_turn,
    stop_reason_for,
)
from .schema_subset import (
    ANNOTATION_KEYWORDS,
    CONSTRAINT_KEYWORDS,
    SCHEMA_TYPES,
    JsonSchemaError,
    SupportedSchema,
    check_object_schema,
    check_schema,
    value_violations,
)
from .structured import (
    INVALID_ARGS_ERROR,
    STRUCTURED_OUTPUT_DESCRIPTION,
    STRUCTURED_OUTPUT_INSTRUCTION,
    STRUCTURED_OUTPUT_RECORDED,
    STRUCTURED_OUTPUT_SECTION,
    STRUCTURED_OUTPUT_TOOL_NAME,
    InvalidArguments,
    OutputSchema,
    StructuredOutputContract,
    already_recorded_message,
    render_already_recorded,
    render_invalid_arguments,
    render_structured_recorded,
    structured_output_contract,
    validate_output_schema,
    validate_structured_arguments,
)

__all__ = [
    # request
    "UNSUPPORTED_CAPABILITY", "DEPTH", "INVALID_TOOL_FILTER", "UNSUPPORTED_SCHEMA",
    "RESERVED_TOOL_NAMES", "AgentOptions", "RuntimeOptions", "StartRequest", "Capabilities",
    "StartError", "PromptSection", "check_capabilities", "validate_tool_filter",
    # depth
    "DepthError", "DepthProblem", "parent_depth", "child_depth", "validate_max_depth",
    "resolve_child_depth",
    # child_plan
    "CheckedRequest", "check_request", "SUBAGENT_DELEGATION_CONTEXT", "DELEGATION_SECTION",
    "PERSONA_SECTION_NAME", "PERSONA_SECTION_ORDER", "DelegatedPolicy", "CompletedPrefix",
    "ParentView", "ChildPlan",
    "resolve_child_options", "child_header", "delegated_policy", "one_shot_descriptor", "fork_seed",
    "plan_child",
    # results
    "StopReason", "STOP_REASONS", "SubagentResult", "RunResult", "MAX_DIAGNOSTIC_BYTES",
    "DIAGNOSTIC_TRUNCATED", "final_assistant_output", "output_text", "accounting_turn_end",
    "stop_reason_for", "read_result", "read_turn", "describe_failure", "bound_diagnostic",
    # render
    "BackgroundMode", "SUBAGENT_TOOL_NAME", "STOP_REASON_HEADLINES", "stop_reason_headline",
    "render_tool_result", "render_infrastructure_failure", "render_result_and_dispose_failure",
    "render_start_error", "subagent_tool_description", "subagent_prompt_description",
    "SUBAGENT_LABEL_DESCRIPTION", "subagent_tool_parameters", "subagent_tool_schema",
    # structured
    "STRUCTURED_OUTPUT_TOOL_NAME", "STRUCTURED_OUTPUT_DESCRIPTION", "STRUCTURED_OUTPUT_INSTRUCTION",
    "STRUCTURED_OUTPUT_SECTION", "STRUCTURED_OUTPUT_RECORDED", "INVALID_ARGS_ERROR", "OutputSchema",
    "InvalidArguments", "StructuredOutputContract", "validate_output_schema",
    "validate_structured_arguments", "structured_output_contract", "already_recorded_message",
    "render_structured_recorded", "render_already_recorded", "render_invalid_arguments",
    # schema_subset
    "SCHEMA_TYPES", "CONSTRAINT_KEYWORDS", "ANNOTATION_KEYWORDS", "JsonSchemaError",
    "SupportedSchema", "check_schema", "check_object_schema", "value_violations",
    # arguments
    "parse_tool_arguments",
    # outcome
    "ToolOutcome",
    # cache_fork
    "PERSONA_CONTEXT_NAME", "PERSONA_CONTEXT_ORDER", "STRUCTURED_ANSWER_NAME",
    "STRUCTURED_ANSWER_ORDER", "CLOSING_REPORT_SECTION", "persona_context",
    "structured_answer_context", "cache_preserving_context", "structured_answer",
]
