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
  (``dsh-tool-subagent``, foreground-only instance: no ``run_in_background`` parameter).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import msgspec
from msgspec import UnsetType

from .delegation import StartError
from .events import ContentBlock, TextBlock, ToolErrorInfo, ToolSchema
from .results import SubagentResult

__all__ = [
    "SUBAGENT_TOOL_NAME",
    "STOP_REASON_HEADLINES",
    "RenderedResult",
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

#: DSH's default name of the delegation tool.
SUBAGENT_TOOL_NAME = "subagent"

#: Error headlines by stop reason; any other reason X gets ``subagent run ended abnormally (X)``.
STOP_REASON_HEADLINES: Mapping[str, str] = MappingProxyType({
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
    "refusal": "subagent declined the task",
})

_FORK_DESCRIPTION = (
    "Hand a task to a forked child agent. The child starts from this conversation as it stood "
    "at the end of the last finished turn (it does not see the turn in progress), then works "
    "on your prompt with its own tools and context. Only its final answer comes back to you, "
    "so use it for work that builds on what was already said here without filling this "
    "conversation with the steps.")
_SPAWN_DESCRIPTION = (
    "Hand a task to a fresh child agent. The child starts with an empty conversation: it sees "
    "nothing of this one, only your prompt, and works on it with its own tools and context. "
    "Only its final answer comes back to you, so use it for independent work that needs no "
    "history from here.")
_FOREGROUND_SUFFIX = " The call waits until the child is done and returns its answer."
_FORK_PROMPT = ("What the child should do. It already knows the finished turns of this "
                "conversation, so say only what is new.")
_SPAWN_PROMPT = ("What the child should do, stated completely: it knows nothing of this "
                 "conversation, so include every fact it needs.")
#: The ``description`` parameter's description (it becomes the descriptor ``label``).
SUBAGENT_LABEL_DESCRIPTION = "A few words naming the task, shown wherever the run is listed."


class RenderedResult(msgspec.Struct, frozen=True, kw_only=True):
    """A tool result as the model sees it: one text block, the error flag, and the optional
    ``error`` key of the ``tool/result`` event."""

    text: str
    is_error: bool
    error: ToolErrorInfo | None = None

    def content(self) -> tuple[ContentBlock, ...]:
        """The ``tool-result`` block's content: one text block."""
        return (TextBlock(text=self.text),)


def output_text(output: Iterable[ContentBlock]) -> str:
    """The text blocks of an output, concatenated without a separator.

    >>> output_text((TextBlock(text="a"), TextBlock(text="b")))
    'ab'
    """
    return "".join(block.text for block in output if isinstance(block, TextBlock))


def stop_reason_headline(stop_reason: str) -> str | None:
    """The error headline for a stop reason; ``None`` for ``completed``.

    >>> stop_reason_headline("paused")
    'subagent run ended abnormally (paused)'
    """
    if stop_reason == "completed":
        return None
    return STOP_REASON_HEADLINES.get(stop_reason, f"subagent run ended abnormally ({stop_reason})")


def render_tool_result(result: SubagentResult) -> RenderedResult:
    """The parent's ``subagent`` tool result for a settled foreground run.

    >>> render_tool_result(SubagentResult(output=(TextBlock(text="OK"),), stop_reason="completed"))
    RenderedResult(text='OK', is_error=False, error=None)
    >>> render_tool_result(SubagentResult(output=(), stop_reason="refusal")).text
    'Error: subagent declined the task'
    """
    text = output_text(result.output)
    headline = stop_reason_headline(result.stop_reason)
    if headline is None:
        return RenderedResult(text=text, is_error=False)
    diagnostic = ("" if isinstance(result.diagnostic, UnsetType)
                  else f"\nDiagnostic: {result.diagnostic}")
    partial = f"\nPartial output before the run ended:\n{text}" if text else ""
    return RenderedResult(text=f"Error: {headline}{diagnostic}{partial}", is_error=True)


def render_infrastructure_failure(message: str) -> RenderedResult:
    """The result when a run's result could not be read at all (its promise rejected).

    >>> render_infrastructure_failure("snapshot disk full").text
    'Error: snapshot disk full'
    """
    return RenderedResult(text=f"Error: {message}", is_error=True)


def render_result_and_dispose_failure(result_error: str, dispose_error: str) -> RenderedResult:
    """The result when both reading the result and disposing of the run failed.

    >>> render_result_and_dispose_failure("a", "b").text
    'Error: subagent run failed: Error: a; dispose failed: Error: b'
    """
    return RenderedResult(
        text=f"Error: subagent run failed: Error: {result_error}; dispose failed: "
             f"Error: {dispose_error}",
        is_error=True)


def render_start_error(error: StartError) -> RenderedResult:
    """The result when a delegation is refused before a child exists.

    >>> render_start_error(StartError(code="DEPTH", message="subagent depth 3 exceeds maxDepth 2"))
    RenderedResult(text='Error: subagent depth 3 exceeds maxDepth 2', is_error=True, error=None)
    """
    return RenderedResult(text=f"Error: {error.message}", is_error=True,
                          error=error.error_info())


def subagent_tool_description(inherits_parent_context: bool) -> str:
    """The ``subagent`` tool's description: a fork child sees the conversation so far (its
    completed turns), a spawn child sees only the prompt."""
    return (_FORK_DESCRIPTION if inherits_parent_context else _SPAWN_DESCRIPTION) + \
        _FOREGROUND_SUFFIX


def subagent_prompt_description(inherits_parent_context: bool) -> str:
    """The description of the tool's ``prompt`` parameter."""
    return _FORK_PROMPT if inherits_parent_context else _SPAWN_PROMPT


def subagent_tool_parameters(inherits_parent_context: bool) -> msgspec.Raw:
    """The tool's parameters as JSON Schema: ``description`` and ``prompt``, required strings."""
    schema = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": SUBAGENT_LABEL_DESCRIPTION},
            "prompt": {"type": "string",
                       "description": subagent_prompt_description(inherits_parent_context)},
        },
        "required": ["description", "prompt"],
    }
    return msgspec.Raw(msgspec.json.encode(schema))


def subagent_tool_schema(inherits_parent_context: bool,
                         name: str = SUBAGENT_TOOL_NAME) -> ToolSchema:
    """The whole tool schema as sent to the model (``name`` lets several instances coexist)."""
    return ToolSchema(name=name, description=subagent_tool_description(inherits_parent_context),
                      parameters=subagent_tool_parameters(inherits_parent_context))
