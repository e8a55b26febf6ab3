"""What the loop driving the turn machine decides without awaiting anything: the input it
queues, the failure it reports, and what a step asks the model (its system prompt, runtime
context and request header).

Rules of this module:

* A prompt is text, content blocks or a whole user message; the first two are queued as a
  user message from the user (:func:`user_message`).
* A failure that is not the model's is reported as DSH flattens it: the error chain's texts
  joined by ``": "`` (a re-raise that repeats its cause says it once), code ``UNKNOWN``.
* Sections layer by name: a later layer's section replaces an earlier one of the same name in
  the earlier one's place (:func:`merge_sections`); a kind's sections are ranked by order, ties
  in that place, empty texts dropped (:func:`ranked_sections`).
* The system prompt of a step is the merged sections, a ``tool:<name>`` section emptied when
  the tool is hidden from this agent, every section's prompt variables filled in, the ranked
  ``section`` texts joined by blank lines (:func:`step_system_prompt`).
* A turn's start and end are logged (a failed turn as a warning), no prompt or model text.
* The runtime context of a step is the deployment's policy sections (file policy, approval
  policy) and the layered ``context`` contributions, sorted by order, variables filled in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET
from returns.result import Failure, Result, Success

from .._checking import checked, unchecked
from ..delegation import PromptSection, describe_failure, stop_reason_for
from ..log import (
    ContentBlock,
    EpochHeader,
    Event,
    LlmCallConfig,
    LlmFailure,
    LlmRetryData,
    MessageSource,
    TextBlock,
    ToolSchema,
    TurnEndEvent,
    TurnError,
    TurnStartEvent,
    UserMessage,
)
from .loop import Followup, LoopState, Steer
from .prompt import approval_policy_section, interpolate_prompt, sandbox_policy_section

__all__ = [
    "Prompt",
    "user_message",
    "queued_input",
    "failure_of",
    "pending_input",
    "merge_sections",
    "ranked_sections",
    "step_system_prompt",
    "step_context",
    "policy_sections",
    "step_header",
    "missing_route",
    "retry_note",
    "turn_note",
]

#: A follow-up: text, content blocks or a whole user message.
Prompt: TypeAlias = str | Sequence[ContentBlock] | UserMessage
SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "danger-full-access"]

#: How many causes of an error chain a flattened failure says at most.
_CHAIN_LIMIT = 8


@checked
def user_message(prompt: Prompt, message_id: str) -> UserMessage:
    """A follow-up as the user message it is queued and logged as."""
    if isinstance(prompt, UserMessage):
        return prompt
    content = (TextBlock(text=prompt),) if isinstance(prompt, str) else tuple(prompt)
    return UserMessage(content=content, source=MessageSource(kind="user"), id=message_id)


@checked
def queued_input(message: UserMessage,
                 kind: Literal["followup", "steer", "inject"]) -> Followup | Steer:
    """The machine's input for queued ``message``: a follow-up gets a turn of its own, a steer
    joins the next step boundary (waking an idle agent), an inject does not wake it."""
    if kind == "followup":
        return Followup(message=message)
    return Steer(message=message, wake=kind == "steer")


@checked
def failure_of(error: BaseException) -> LlmFailure:
    """A non-model failure as DSH flattens it: the error chain text, code ``UNKNOWN``."""
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None and len(parts) < _CHAIN_LIMIT:
        text = str(current) or type(current).__name__
        if not parts or parts[-1] != text:
            parts.append(text)
        current = current.__cause__ or (None if current.__suppress_context__
                                        else current.__context__)
    return LlmFailure(message=": ".join(parts), code="UNKNOWN")


@checked
def pending_input(state: LoopState) -> tuple[UserMessage, ...]:
    """Queued input no turn has claimed and no requested cancellation drops."""
    return state.inbox[state.drop_inbox:] + state.steering[state.drop_steering:]


@checked
def merge_sections(*layers: Sequence[PromptSection]) -> tuple[PromptSection, ...]:
    """``layers`` merged by name: a later section replaces an earlier one in its place."""
    merged: dict[str, PromptSection] = {}
    for layer in layers:
        for section in layer:
            merged[section.name] = section
    return tuple(merged.values())


@checked
def ranked_sections(sections: Sequence[PromptSection],
                    kind: Literal["section", "context"]) -> tuple[PromptSection, ...]:
    """The non-empty ``kind`` sections sorted by order (ties keep their place)."""
    ranked = sorted(enumerate(sections), key=lambda pair: (pair[1].order, pair[0]))
    return tuple(section for _, section in ranked if section.kind == kind and section.text)


def _filled(section: PromptSection, variables: Mapping[str, str | None],
            ) -> Result[PromptSection, str]:
    filled = interpolate_prompt(section.text, variables, name=section.name, kind=section.kind)
    if isinstance(filled, Failure):
        return Failure(filled.failure())
    text = filled.unwrap()
    return Success(section if text == section.text
                   else msgspec.structs.replace(section, text=text))


def _all_filled(sections: Sequence[PromptSection], variables: Mapping[str, str | None],
                ) -> Result[tuple[PromptSection, ...], str]:
    done: list[PromptSection] = []
    for section in sections:
        filled = _filled(section, variables)
        if isinstance(filled, Failure):
            return Failure(filled.failure())
        done.append(filled.unwrap())
    return Success(tuple(done))


@checked
def step_system_prompt(sections: Sequence[PromptSection], *, hidden_tools: frozenset[str],
                       variables: Mapping[str, str | None]) -> Result[str, str]:
    """The system prompt of merged ``sections``: ``tool:<name>`` guidance emptied for a
    hidden tool, the variables filled in (the first reference that cannot be filled is the
    failure), the ranked ``section`` texts joined by blank lines."""
    shown = [msgspec.structs.replace(section, text="")
             if section.name.removeprefix("tool:") in hidden_tools
             and section.name.startswith("tool:") else section for section in sections]
    filled = _all_filled(shown, variables)
    if isinstance(filled, Failure):
        return Failure(filled.failure())
    return Success("\n\n".join(section.text
                               for section in ranked_sections(filled.unwrap(), "section")))


@checked
def step_context(own: Sequence[PromptSection], layered: Sequence[PromptSection],
                 variables: Mapping[str, str | None],
                 ) -> Result[tuple[PromptSection, ...], str]:
    """A step's runtime-context contributions: the deployment's ``own`` and the ``layered``
    ones, sorted by order, the variables filled in."""
    return _all_filled(sorted((*own, *layered), key=lambda section: section.order), variables)


@checked
def policy_sections(*, sandbox_mode: SandboxMode | None, workspace: str,
                    approval_policy: Literal["ask", "never"] | None,
                    ) -> tuple[PromptSection, ...]:
    """The deployment's runtime-context contributions: the file policy of the session's
    effective sandbox mode (none without a sandbox) and the approval policy (none without an
    approval service)."""
    own: list[PromptSection] = []
    if sandbox_mode is not None:
        own.append(sandbox_policy_section(sandbox_mode, workspace))
    if approval_policy is not None:
        own.append(approval_policy_section(approval_policy))
    return tuple(own)


@checked
def step_header(*, provider: str, model: str, max_tokens: int | None, system: str,
                tools: Sequence[ToolSchema]) -> EpochHeader:
    """The request header a step's model call is made with (empty parts left out)."""
    config = (LlmCallConfig(provider=provider, model=model) if max_tokens is None
              else LlmCallConfig(provider=provider, model=model, max_tokens=max_tokens))
    return EpochHeader(config=config, system=system or UNSET, tools=tuple(tools) or UNSET)


@checked
def missing_route(agent_id: str) -> str:
    """Why a step of an agent without a provider or model cannot be made (DSH's text)."""
    return (f'agent "{agent_id}" has no provider/model: set AgentOptions.provider and '
            "AgentOptions.model or supply both via the agent/request waterfall")


@checked
def retry_note(retry: LlmRetryData, delay_ms: float) -> str:
    """What is logged of a scheduled retry (a failed model request and its wait)."""
    budget = (f"{retry.retry} of {retry.max_retries}" if retry.mode == "normal"
              else f"{retry.retry} (always)")
    return (f"the request to {retry.provider} failed ({retry.failure.code}: "
            f"{retry.failure.message}); retry {budget} in {delay_ms:.0f} ms "
            f"(turn {retry.turn}, step {retry.step})")


@unchecked  # asked of every appended event: a run-time check would cost each chunk
def turn_note(event: Event) -> tuple[bool, str] | None:
    """What is logged of an appended turn boundary: whether it is a warning (a turn that
    failed), and the text; ``None`` for any other event. No prompt or model text is in it."""
    if type(event) is TurnStartEvent:
        return False, f"turn {event.data.turn} started"
    if type(event) is not TurnEndEvent:
        return None
    reason = event.data.reason
    if isinstance(reason, TurnError):
        return True, f"turn {event.data.turn} failed: {describe_failure(reason.error)}"
    return False, f"turn {event.data.turn} ended: {stop_reason_for(reason)}"
