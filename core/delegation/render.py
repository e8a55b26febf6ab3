"""What the parent model sees of a delegation: the ``subagent`` tool and its results (§7.5).

Rules of this module:

* A completed run gives the concatenated text blocks of its output (possibly empty), not an
  error; reasoning and tool-call blocks are dropped.
* Any other stop reason is an error result: ``Error: <headline>``, then ``Diagnostic:`` when
  the provider gave one, then the partial text the child produced. No ``error`` key.
* Infrastructure failures are ``Error: <message>``; a failed result plus a failed disposal
  names both. Start refusals carry DSH's ``error`` key when their error class has one.
* The tool's wording depends on whether the provider seeds the child with the parent's
  conversation (fork) or not (spawn). These model-facing strings are DSH's
  (``dsh-tool-subagent``): a base sentence by ``inheritsParentContext`` plus one suffix by how
  the instance runs children (foreground only, one-shot background jobs, continuable).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, TypeAlias

import msgspec
from msgspec import UnsetType

from .._checking import checked, plain
from ..log import TextBlock, ToolSchema  # noqa: F401 - TextBlock: the examples below
from .outcome import ToolOutcome
from .request import StartError
from .results import SubagentResult, output_text

# Calls into sibling modules get values this module's checked entry points took in: plain.
_output_text = plain(output_text)

__all__ = [
    "BackgroundMode",
    "SUBAGENT_TOOL_NAME",
    "STOP_REASON_HEADLINES",
    "output_text",
    "stop_reason_headline",
    "render_tool_result",
    "render_infrastructure_failure",
    "render_result_and_dispose_failure",
    "render_start_error",
    "subagent_tool_description",
    "subagent_prompt_description",
    "SUBAGENT_LABEL_DESCRIPTION",
    "subagent_tool_parameters",
    "subagent_tool_schema",
]

#: How a ``subagent`` tool instance runs children in the background (``run_in_background``).
BackgroundMode: TypeAlias = Literal["one-shot", "continuable"]

#: DSH's default name of the delegation tool.
SUBAGENT_TOOL_NAME = "subagent"

#: Error headlines by stop reason; any other reason X gets ``subagent run ended abnormally (X)``.
STOP_REASON_HEADLINES: Mapping[str, str] = MappingProxyType({
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
    "refusal": "subagent declined the task",
})

_SPAWN_DESCRIPTION = (
    "Delegate a self-contained task to a subagent (a separate agent that works in its own "
    "context) to offload focused, independent work — research, a scoped implementation, an "
    "analysis — so it does not consume this conversation's context. The subagent returns its "
    "result, not its intermediate steps. Give it a complete, standalone prompt: it does not see "
    "this conversation.")
_FORK_DESCRIPTION = (
    "Delegate a task to a subagent that inherits this conversation: a child agent seeded with "
    "all completed turns so far (it does not see the current in-flight turn). Use this when the "
    "subtask builds on this conversation's context — a follow-up analysis, a review, a "
    "continuation — without consuming this conversation's context for the work itself. You "
    "receive its result, not its intermediate steps.")
#: The description's last sentence, by how the tool runs its children.
_SUFFIXES: Mapping[BackgroundMode | None, str] = MappingProxyType({
    None: " This call waits for the subagent and returns its result.",
    "one-shot": " This call waits for the result by default. Set `run_in_background: true` to "
                "return a job id; collect with `job_output` and stop with `job_kill`.",
    "continuable": " This tool runs in the background by default, immediately returns a durable "
                   "subagent id, and keeps the child conversation available for later turns. "
                   "When that run settles, the runtime sends the parent a notice containing its "
                   "outcome and any final assistant message; `send_message` starts a later turn "
                   "in the same child conversation. Set `run_in_background: false` only when "
                   "your next action depends on receiving the result.",
})
_SPAWN_PROMPT = ("The complete, self-contained task for the subagent. It does not share this "
                 "conversation's context, so include everything it needs.")
_FORK_PROMPT = ("The task for the subagent. It already sees this conversation's completed "
                "turns, so build on them freely and state only what is new.")
_BACKGROUND_PARAMETER: Mapping[BackgroundMode, str] = MappingProxyType({
    "one-shot": "Whether to run as a background job and return its id. Defaults to false; "
                "collect with job_output or stop with job_kill.",
    "continuable": "Whether to run in the background and return a durable subagent id "
                   "immediately. Defaults to true. Set false to wait for the result when your "
                   "next action depends on it.",
})
#: The ``description`` parameter's description (it becomes the descriptor ``label``).
SUBAGENT_LABEL_DESCRIPTION = "A short (3-5 word) description of the delegated task, for display."


@checked
def stop_reason_headline(stop_reason: str) -> str | None:
    """The error headline for a stop reason; ``None`` for ``completed``.

    >>> stop_reason_headline("paused")
    'subagent run ended abnormally (paused)'
    """
    if stop_reason == "completed":
        return None
    return STOP_REASON_HEADLINES.get(stop_reason, f"subagent run ended abnormally ({stop_reason})")


@checked
def render_tool_result(result: SubagentResult) -> ToolOutcome:
    """The parent's ``subagent`` tool result for a settled foreground run.

    >>> render_tool_result(SubagentResult(output=(TextBlock(text="OK"),), stop_reason="completed"))
    ToolOutcome(content='OK', is_error=False, error=None, conclude_turn=False, value=None)
    >>> render_tool_result(SubagentResult(output=(), stop_reason="refusal")).content
    'Error: subagent declined the task'
    """
    text = _output_text(result.output)
    headline = stop_reason_headline(result.stop_reason)
    if headline is None:
        return ToolOutcome(text, is_error=False)
    diagnostic = ("" if isinstance(result.diagnostic, UnsetType)
                  else f"\nDiagnostic: {result.diagnostic}")
    partial = f"\nPartial output before the run ended:\n{text}" if text else ""
    return ToolOutcome(f"Error: {headline}{diagnostic}{partial}", is_error=True)


@checked
def render_infrastructure_failure(message: str) -> ToolOutcome:
    """The result when a run's result could not be read at all (its promise rejected).

    >>> render_infrastructure_failure("snapshot disk full").content
    'Error: snapshot disk full'
    """
    return ToolOutcome(f"Error: {message}", is_error=True)


@checked
def render_result_and_dispose_failure(result_error: str, dispose_error: str) -> ToolOutcome:
    """The result when both reading the result and disposing of the run failed.

    The two arguments are the errors as JavaScript's ``String(error)`` renders them,
    ``"<name>: <message>"`` (DSH joins them in an ``AggregateError``).

    >>> render_result_and_dispose_failure("Error: a", "Error: b").content
    'Error: subagent run failed: Error: a; dispose failed: Error: b'
    """
    return ToolOutcome(f"Error: subagent run failed: {result_error}; dispose failed: "
                       f"{dispose_error}", is_error=True)


@checked
def render_start_error(error: StartError) -> ToolOutcome:
    """The result when a delegation is refused before a child exists.

    >>> refused = render_start_error(StartError(code="DEPTH", message="subagent depth 3 exceeds "
    ...                                                                  "maxDepth 2"))
    >>> refused.content, refused.is_error, refused.error
    ('Error: subagent depth 3 exceeds maxDepth 2', True, None)
    """
    return ToolOutcome(f"Error: {error.message}", is_error=True,
                          error=error.error_info())


@checked
def subagent_tool_description(inherits_parent_context: bool,
                              background: BackgroundMode | None = None) -> str:
    """The ``subagent`` tool's description (DSH's words): a fork child inherits this
    conversation's completed turns, a spawn child does not see it; the last sentence says how
    the tool runs children (``background``: ``None`` when ``run_in_background`` is disabled).

    >>> "does not see this conversation" in subagent_tool_description(False)
    True
    """
    base = _FORK_DESCRIPTION if inherits_parent_context else _SPAWN_DESCRIPTION
    return base + _SUFFIXES[background]


@checked
def subagent_prompt_description(inherits_parent_context: bool) -> str:
    """The description of the tool's ``prompt`` parameter."""
    return _FORK_PROMPT if inherits_parent_context else _SPAWN_PROMPT


@checked
def subagent_tool_parameters(inherits_parent_context: bool,
                             background: BackgroundMode | None = None) -> msgspec.Raw:
    """The tool's parameters as JSON Schema: ``description`` and ``prompt`` (required strings),
    and ``run_in_background`` when background runs are enabled."""
    properties: dict[str, object] = {
        "description": {"type": "string", "description": SUBAGENT_LABEL_DESCRIPTION},
        "prompt": {"type": "string",
                   "description": subagent_prompt_description(inherits_parent_context)},
    }
    if background is not None:
        properties["run_in_background"] = {"type": "boolean",
                                           "description": _BACKGROUND_PARAMETER[background]}
    schema = {"type": "object", "properties": properties, "required": ["description", "prompt"]}
    return msgspec.Raw(msgspec.json.encode(schema))


@checked
def subagent_tool_schema(inherits_parent_context: bool, name: str = SUBAGENT_TOOL_NAME,
                         background: BackgroundMode | None = None) -> ToolSchema:
    """The whole tool schema as sent to the model (``name`` lets several instances coexist)."""
    return ToolSchema(
        name=name, description=subagent_tool_description(inherits_parent_context, background),
        parameters=subagent_tool_parameters(inherits_parent_context, background))
