"""What a step tells the model besides the conversation: the runtime-context snapshot, the
policy sections and the prompt variables (DSH's agent loop and system-prompt plugin;
wire-format §3.3). How a log holds the snapshot, the session title and the request context is
the log tier's (:mod:`turnfork.core.log.context`).

Rules of this module:

* Runtime context: the ``kind="context"`` contributions in scope (for a child: the delegation
  statement; for a deployment with those services: the file policy of the session's effective
  sandbox mode and the approval policy, in DSH's sentences),
  sorted by order, become one ``user/message`` from the ``@deepseek-ai/dsh-system-prompt``
  plugin: ``Current runtime context. This snapshot supersedes earlier runtime-context
  snapshots.`` and each text, joined by blank lines, with ``form: "snapshot"`` and the
  ``sections`` it was made from. It is written at a step boundary, after the step's claimed
  input, only when its text differs from the snapshot the log retains; when every contribution
  is gone after one was written, the cleared text is written once. Earlier snapshots stay on
  the surface. An agent instance built over an existing log (resumed, or a fork child over its
  seed) retains the newest snapshot then on the surface; after that a snapshot written is
  retained, and a surface replacement citing the retained one makes it no longer retained
  (:meth:`turnfork.core.log.trace.Trace.retained_context`, DSH's ``RuntimeContextProjection``).
* Prompt variables (DSH's system-prompt plugin): every section and runtime-context text may
  reference ``{{provider}}``, ``{{model}}`` and ``{{cwd}}`` (the agent's route and its session's
  working directory), filled in when the step is assembled (:func:`interpolate_prompt`). A
  reference is strict: a malformed group, an unknown name or a variable without a value for
  this agent fails the step; a lone ``{{`` with no later ``}}`` is prose; a filled-in value is
  not scanned again.
* DSH opens every system prompt with its harness identity (:data:`HARNESS_IDENTITY`, order
  −100, before the persona at 0); a deployment that wants DSH's exact prompt adds it to the
  host's sections, where every child inherits it beside its own persona.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec
from returns.result import Failure, Result, Success

from .._checking import checked
from ..delegation import PromptSection
from ..log import RUNTIME_CONTEXT_PLUGIN, MessageSource, TextBlock, UserMessage

__all__ = [
    "SANDBOX_POLICY_ORDER",
    "APPROVAL_POLICY_ORDER",
    "sandbox_policy_section",
    "approval_policy_section",
    "SNAPSHOT_HEADER",
    "CLEARED_CONTEXT_TEXT",
    "snapshot_text",
    "context_message",
    "HARNESS_IDENTITY",
    "PROMPT_VARIABLES",
    "interpolate_prompt",
]

_ENCODE = msgspec.json.Encoder()

SNAPSHOT_HEADER = ("Current runtime context. This snapshot supersedes earlier runtime-context "
                   "snapshots.")
CLEARED_CONTEXT_TEXT = ("Current runtime context: none. Earlier runtime-context snapshots no "
                        "longer apply.")
#: DSH's harness identity section (its system-prompt plugin's ``harness:identity``).
HARNESS_IDENTITY = PromptSection(name="harness:identity", order=-100,
                                 text="You are an AI agent powered by DeepSeek Harness.")
#: The prompt variables an agent fills in (DSH's agent loop registers these three).
PROMPT_VARIABLES = ("provider", "model", "cwd")

#: Where the deployment's policy contributions sit in a snapshot (the delegation statement is
#: at 120).
SANDBOX_POLICY_ORDER = 110
APPROVAL_POLICY_ORDER = 115


@checked
def sandbox_policy_section(mode: Literal["read-only", "workspace-write", "danger-full-access"],
                           workspace: str) -> PromptSection:
    """DSH's file-policy sentence for the session's effective sandbox mode.

    ``workspace``: the session's absolute working directory (quoted as JSON in the text).

    >>> sandbox_policy_section("danger-full-access", "/w").text
    'Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file \
modifications by available operations.'
    """
    if mode == "read-only":
        text = ("Current DSH file policy: read-only. Any available operation enforced by the DSH "
                "file sandbox cannot modify files in the standing mode. Do not refuse a required "
                "modification from this policy alone: try an available tool normally and follow "
                "any denial and escalation guidance it returns.")
    elif mode == "workspace-write":
        text = ("Current DSH file policy: workspace-write. Any available operation enforced by "
                "the DSH file sandbox may modify files under the session workspace: "
                f"{_ENCODE.encode(workspace).decode()}. Some platform temporary areas may also "
                "be writable.")
    else:
        text = ("Current DSH file policy: danger-full-access. The DSH file sandbox does not "
                "restrict file modifications by available operations.")
    return PromptSection(name="sandbox:policy", order=SANDBOX_POLICY_ORDER, text=text,
                         kind="context")


@checked
def approval_policy_section(policy: Literal["ask", "never"]) -> PromptSection:
    """DSH's approval sentence for the session's effective approval policy.

    >>> approval_policy_section("never").text.startswith("Approval prompts are disabled")
    True
    """
    if policy == "never":
        text = ("Approval prompts are disabled in this session: actions that require approval "
                "are rejected automatically — do not request sandbox escalation (do not set "
                "`sandbox_permissions`).")
    else:
        text = ("Approval policy: ask. Operations that require approval may ask through the "
                "configured answerers; without an available answerer, the request fails closed.")
    return PromptSection(name="approval:policy", order=APPROVAL_POLICY_ORDER, text=text,
                         kind="context")


@checked
def snapshot_text(sections: Sequence[PromptSection]) -> str:
    """The snapshot's text for these contributions (in order, non-empty), or the cleared
    text when there are none.

    >>> snapshot_text([])
    'Current runtime context: none. Earlier runtime-context snapshots no longer apply.'
    """
    texts = [section.text for section in sections if section.text]
    if not texts:
        return CLEARED_CONTEXT_TEXT
    return "\n\n".join((SNAPSHOT_HEADER, *texts))


@checked
def context_message(sections: Sequence[PromptSection], *, seen: bool, retained: str | None,
                    message_id: str) -> UserMessage | None:
    """The snapshot a step appends, or ``None`` when the log's retained one still holds.

    Args:
        sections: the contributions in scope now, in order.
        seen: whether the log ever held a snapshot (the cleared text is written only then).
        retained: the text of the snapshot the log retains (``None``: none retained).
        message_id: the new message's id.
    """
    kept = [section for section in sections if section.text]
    if not kept and not seen:
        return None
    text = snapshot_text(kept)
    if text == retained:
        return None
    if kept:
        source = MessageSource.from_wire({
            "kind": "plugin", "plugin": RUNTIME_CONTEXT_PLUGIN, "form": "snapshot",
            "sections": [{"name": section.name, "text": section.text} for section in kept]})
    else:
        source = MessageSource(kind="plugin", plugin=RUNTIME_CONTEXT_PLUGIN)
    return UserMessage(content=(TextBlock(text=text),), source=source, id=message_id)


_VARIABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
_GROUP = re.compile(r"\{\{([^{}]*)\}\}")


@checked
def interpolate_prompt(text: str, variables: Mapping[str, str | None], *, name: str,
                       kind: Literal["section", "context"] = "section") -> Result[str, str]:
    """``text`` with its ``{{variable}}`` references filled in, or DSH's error text.

    Args:
        text: a section's or a runtime-context contribution's text.
        variables: the variables known to this assembly, ``None`` for one without a value.
        name: the contribution's name (the error names it).
        kind: what the contribution is (the error says so).

    >>> interpolate_prompt("You run {{model}}.", {"model": "m1"}, name="p").unwrap()
    'You run m1.'
    >>> interpolate_prompt("a {{ lone", {}, name="p").unwrap()
    'a {{ lone'
    >>> interpolate_prompt("{{nope}}", {"model": "m1"}, name="p").failure()
    'unknown prompt variable "{{nope}}" in section "p"; registered variables: model'
    """
    parts: list[str] = []
    last = 0
    open_at = text.find("{{")
    while open_at >= 0:
        group = _GROUP.match(text, open_at)
        if group is None:
            if text.find("}}", open_at + 2) >= 0:
                return Failure(f'malformed prompt variable reference at '
                               f'"{text[open_at:open_at + 16]}…" in {kind} "{name}" (references '
                               "are complete simple {{name}} groups)")
            parts.append(text[last:open_at + 2])
            last = open_at + 2
        else:
            variable = group.group(1)
            if _VARIABLE_NAME.fullmatch(variable) is None:
                return Failure(f'malformed prompt variable reference "{{{{{variable}}}}}" in '
                               f'{kind} "{name}" (variable names match /^[a-z][a-z0-9_]*$/)')
            if variable not in variables:
                known = ", ".join(variables) or "(none)"
                return Failure(f'unknown prompt variable "{{{{{variable}}}}}" in {kind} '
                               f'"{name}"; registered variables: {known}')
            value = variables[variable]
            if value is None:
                return Failure(f'prompt variable "{{{{{variable}}}}}" has no value for this '
                               f'assembly ({kind} "{name}")')
            parts.append(text[last:open_at])
            parts.append(value)
            last = group.end()
        open_at = text.find("{{", last)
    parts.append(text[last:])
    return Success("".join(parts))
