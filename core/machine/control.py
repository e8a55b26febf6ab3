"""What the models see of continuable children: the control tools, the report tool, their
results and prompt sections (DSH's ``dsh-tool-subagent-control``, its ``list-agents`` export,
``dsh-tool-subagent-report`` and the continuable half of ``dsh-tool-subagent``).

Rules of this module:

* Every string here is DSH's, byte for byte: tool descriptions, parameter descriptions, result
  texts, section texts. Schemas are JSON Schema objects with the keys in DSH's order
  (``type``, ``properties``, ``required``; a property's ``type``, ``description``, ``enum``).
* ``send_message``, ``interrupt_agent`` and ``list_agents`` are global tools (a continuable
  child sees them too and may manage its own children); ``report`` exists only for continuable
  children in DSH.
* ``list_agents`` renders one line per entry, in the order given: ``<id> [<status>] — <label>``
  (with ``parent=<id> depth=<n>`` for the descendants scope), a diagnostic as
  ``<id> [diagnostic: <reason>]``; ``(no subagents)`` when empty. One-shot children are not
  listed (they cannot be continued).
* Beside its text, a ``subagent`` call's outcome carries its typed value (DSH's ``value``): the
  foreground run's id and output, the background job's id, or the continuable child's id
  (:data:`SubagentToolValue`); a ``list_agents`` call's, the entries it rendered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from .._checking import checked
from ..delegation import PromptSection
from ..log import ContentBlock, ToolSchema

__all__ = [
    "SEND_MESSAGE",
    "INTERRUPT_AGENT",
    "LIST_AGENTS",
    "REPORT",
    "REPORT_SECTION_NAME",
    "REPORT_SECTION_ORDER",
    "REPORT_SECTION_TEXT",
    "CONTINUABLE_SECTION_ORDER",
    "AgentStatus",
    "ListScope",
    "DiagnosticReason",
    "AgentListEntry",
    "AgentListDiagnostic",
    "ForegroundValue",
    "BackgroundValue",
    "ContinuableValue",
    "SubagentToolValue",
    "send_message_schema",
    "interrupt_agent_schema",
    "list_agents_schema",
    "report_schema",
    "object_tool_schema",
    "report_section",
    "continuable_tool_section",
    "render_started",
    "render_queued",
    "render_interrupt_requested",
    "render_report_accepted",
    "render_agent_list",
    "no_calling_agent",
    "ASK_USER_QUESTION",
    "ASK_USER_QUESTION_DESCRIPTION",
    "ask_user_question_schema",
    "QuestionOption",
    "QuestionIntent",
    "Question",
    "AnswerItem",
    "Answers",
    "questions_from_arguments",
    "intent_refusal",
]

SEND_MESSAGE = "send_message"
INTERRUPT_AGENT = "interrupt_agent"
LIST_AGENTS = "list_agents"
REPORT = "report"

_SEND_MESSAGE_DESCRIPTION = (
    "Send a message to a background subagent by its subagent id, continuing the same "
    "conversation. It becomes the subagent's next turn: if it is still working, the message "
    "waits until its current turn finishes, so it cannot redirect work already underway. This "
    "call returns no answer from the subagent — only confirmation that the message was "
    "delivered — so use it to give it more work. A failure means the message was NOT delivered.")
_INTERRUPT_DESCRIPTION = (
    "Request cancellation of a background agent's current turn by its agent id. The target may "
    "be your direct child or a deeper agent created under you. Only the current turn stops: "
    "messages already queued for the agent stay parked until a later send_message, agents it "
    "started keep running, and the agent itself stays available for follow-ups. This call "
    "returns as soon as the stop request is accepted, so the target may keep running briefly; "
    "interrupting an agent that already finished is an accepted no-op.")
_LIST_DESCRIPTION = (
    "List your continuable background subagents by durable id and label. Use it to recall which "
    "ones you started, not to poll for completion — you are told when one finishes. Status comes "
    "from the live registry: running means the agent is working right now, idle means it is "
    "loaded but between turns (it may be waiting on agents it started), and ready means it "
    "exists only in storage — resumable, not terminal, and not a result waiting to be "
    "collected; a `send_message` starts a new turn on the same conversation, and a direct child "
    "remains a `send_message` candidate in every status. The snapshot is not a delivery promise "
    "— `send_message` performs the authoritative check and may still fail. Children that could "
    "not be read are reported as diagnostics instead of being silently dropped. Scope "
    "`descendants` walks the whole tree below you in stable pre-order, annotating each entry "
    "with its durable direct-parent session id and depth. You may use `send_message` only for "
    "depth-1 entries; deeper entries are candidates for `interrupt_agent` only.")
_REPORT_DESCRIPTION = (
    "Report selected content to the agent that started you. Call this once before you finish, "
    "with a self-contained final result, and earlier for progress or findings that change what "
    "that agent does next. That agent shares your workspace but does not automatically receive "
    "your transcript, tool output, or reasoning, so finishing your work is not itself a result. "
    "Reporting does not end your turn or finish your work, and only your direct parent receives "
    "it. A failed call may still have arrived, so do not blindly repeat it.")

#: The report guidance, a prompt section of each continuable child (DSH ``tool:report``, 117).
REPORT_SECTION_NAME = "tool:report"
REPORT_SECTION_ORDER = 117
REPORT_SECTION_TEXT = (
    "Deliver your result with the report tool before you finish: call it once with a "
    "self-contained answer. The agent that started you shares your workspace but does not "
    "automatically receive your transcript, tool output, or reasoning, so a closing remark such "
    'as "done" leaves it nothing it can use. Report earlier as well whenever a partial finding '
    "changes what that agent should do next; reporting never ends your turn.")
#: The order of a continuable ``subagent`` instance's guidance section (``tool:<name>``).
CONTINUABLE_SECTION_ORDER = 116.5

AgentStatus: TypeAlias = Literal["running", "idle", "ready"]
ListScope: TypeAlias = Literal["children", "descendants"]
DiagnosticReason: TypeAlias = Literal["corrupt", "unsupported", "unavailable"]


class AgentListEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A continuable child as ``list_agents`` shows it."""

    id: str
    label: str
    status: AgentStatus
    #: Its direct parent and depth below the caller (descendants scope only).
    parent: str | None = None
    depth: int | None = None


class AgentListDiagnostic(msgspec.Struct, frozen=True, kw_only=True):
    """A child that could not be read, reported instead of silently dropped."""

    id: str
    reason: DiagnosticReason
    parent: str | None = None
    depth: int | None = None


class ForegroundValue(msgspec.Struct, frozen=True, kw_only=True, tag="foreground",
                      tag_field="kind"):
    """A ``subagent`` call that waited for its child: the run's id and the child's output."""

    run_id: str
    output: tuple[ContentBlock, ...]


class BackgroundValue(msgspec.Struct, frozen=True, kw_only=True, tag="background",
                      tag_field="kind"):
    """A ``subagent`` call that started a one-shot background job: the job's id."""

    job_id: str


class ContinuableValue(msgspec.Struct, frozen=True, kw_only=True, tag="continuable",
                       tag_field="kind"):
    """A ``subagent`` call that started a continuable child: its durable id."""

    subagent_id: str


#: The typed value of a ``subagent`` call (DSH's ``{kind: 'foreground' | 'background' |
#: 'continuable', …}``).
SubagentToolValue: TypeAlias = ForegroundValue | BackgroundValue | ContinuableValue


@checked
def object_tool_schema(name: str, description: str, properties: dict[str, object],
                       required: tuple[str, ...]) -> ToolSchema:
    """A tool whose parameters are one JSON object: ``type``, ``properties`` and (when any)
    ``required``, in DSH's key order.

    >>> bytes(object_tool_schema("t", "d", {}, ()).parameters)
    b'{"type":"object","properties":{}}'
    """
    schema: dict[str, object] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return ToolSchema(name=name, description=description,
                      parameters=msgspec.Raw(msgspec.json.encode(schema)))


@checked
def send_message_schema() -> ToolSchema:
    """``send_message``: ``subagent_id`` and ``message``, both required.

    >>> send_message_schema().name
    'send_message'
    """
    return object_tool_schema(SEND_MESSAGE, _SEND_MESSAGE_DESCRIPTION, {
        "subagent_id": {"type": "string", "description": "The subagent id returned when the "
                                                         "background subagent was started."},
        "message": {"type": "string", "description": "The message to deliver to the subagent."},
    }, ("subagent_id", "message"))


@checked
def interrupt_agent_schema() -> ToolSchema:
    """``interrupt_agent``: ``agent_id``, required."""
    return object_tool_schema(INTERRUPT_AGENT, _INTERRUPT_DESCRIPTION, {
        "agent_id": {"type": "string",
                     "description": "The agent id of the running agent to interrupt."},
    }, ("agent_id",))


@checked
def list_agents_schema() -> ToolSchema:
    """``list_agents``: an optional ``scope`` (``children`` or ``descendants``)."""
    return object_tool_schema(LIST_AGENTS, _LIST_DESCRIPTION, {
        "scope": {"type": "string",
                  "description": "children (default) lists direct children only; descendants "
                                 "walks the complete tree below you.",
                  "enum": ["children", "descendants"]},
    }, ())


@checked
def report_schema() -> ToolSchema:
    """``report``: ``output``, required."""
    return object_tool_schema(REPORT, _REPORT_DESCRIPTION, {
        "output": {"type": "string",
                   "description": "Actionable content for your parent; summarize conclusions "
                                  "and reference relevant shared paths."},
    }, ("output",))


@checked
def report_section(kind: Literal["section", "context"] = "section") -> PromptSection:
    """The report guidance (DSH puts it in the system prompt; ``kind="context"`` places it in
    the child's runtime context instead, where it does not change the request head)."""
    return PromptSection(name=REPORT_SECTION_NAME, order=REPORT_SECTION_ORDER,
                         text=REPORT_SECTION_TEXT, kind=kind)


@checked
def continuable_tool_section(tool_name: str) -> PromptSection:
    """The guidance section of a continuable ``subagent`` instance with background runs
    (``tool:<name>``, order 116.5).

    >>> continuable_tool_section("subagent").text.split(".")[0]
    'Use subagent in the background by default'
    """
    return PromptSection(
        name=f"tool:{tool_name}", order=CONTINUABLE_SECTION_ORDER,
        text=f"Use {tool_name} in the background by default. Start independent delegations "
             "together in one assistant message and continue useful work while they run. Set "
             "`run_in_background: false` only when your next action depends on that subagent's "
             "result. When a background run settles, the runtime sends you a notice containing "
             "its outcome and any final assistant message.")


@checked
def render_started(child_id: str) -> str:
    """The ``subagent`` tool's result for a continuable background start."""
    return f"started subagent {child_id}"


@checked
def render_queued(subagent_id: str) -> str:
    """``send_message``'s result (it names the argument, not a resolved id)."""
    return f"message queued as the next turn for subagent {subagent_id}"


@checked
def render_interrupt_requested(agent_id: str) -> str:
    """``interrupt_agent``'s result (also for an absent or finished target)."""
    return f"interrupt requested for agent {agent_id}"


@checked
def render_report_accepted(message_id: str) -> str:
    """``report``'s result: the id of the message the parent accepted."""
    return f"report accepted by the agent that started you as message {message_id}"


@checked
def render_agent_list(entries: Iterable[AgentListEntry | AgentListDiagnostic]) -> str:
    """``list_agents``' result, one line per entry in order (``—`` is U+2014).

    >>> print(render_agent_list([AgentListEntry(id="c1", label="task", status="ready"),
    ...                          AgentListDiagnostic(id="c2", reason="corrupt")]))
    c1 [ready] — task
    c2 [diagnostic: corrupt]
    >>> render_agent_list([])
    '(no subagents)'
    """
    lines: list[str] = []
    for entry in entries:
        where = "" if entry.parent is None else f" parent={entry.parent} depth={entry.depth}"
        if isinstance(entry, AgentListEntry):
            lines.append(f"{entry.id} [{entry.status}]{where} — {entry.label}")
        else:
            lines.append(f"{entry.id} [diagnostic: {entry.reason}]{where}")
    return "\n".join(lines) if lines else "(no subagents)"


@checked
def no_calling_agent(tool_name: str) -> str:
    """The refusal of a control tool called outside an agent (a plain error in DSH).

    >>> no_calling_agent("send_message")
    'Error: send_message requires a calling agent (exec.agent was undefined)'
    """
    return f"Error: {tool_name} requires a calling agent (exec.agent was undefined)"


# --------------------------------------------------------------------------- asking the human

#: The human's question tool (DSH ``dsh-tool-ask-user``): its name and description, DSH's words.
ASK_USER_QUESTION = "ask_user_question"
ASK_USER_QUESTION_DESCRIPTION = (
    "Ask the user a concise question when you need confirmation, a choice, or missing "
    "information before proceeding. Send one or more questions, each with a stable id that "
    "will be echoed in the answer.")


def _described(kind: str, description: str) -> dict[str, object]:
    return {"type": kind, "description": description}


def _object_items(properties: dict[str, object], required: list[str]) -> dict[str, object]:
    return {"type": "object", "additionalProperties": True, "properties": properties,
            "required": required}


@checked
def ask_user_question_schema() -> ToolSchema:
    """``ask_user_question``: DSH's compiled JSON Schema, in its key order."""
    option = _object_items({
        "label": _described("string", "Short user-facing option label."),
        "description": _described("string",
                                  "One sentence explaining the tradeoff or impact.")},
        ["label"])
    question = _object_items({
        "id": _described("string", "Stable id for this question; echoed in the answer."),
        "question": _described("string", "The specific question to ask the user."),
        "header": _described("string", "Optional short heading for the question, such as "
                                       '"Confirm" or "Choose Mode".'),
        "options": {**_described("array", "Optional choices to show the user. If you recommend "
                                          'one, put it first and append "(Recommended)" to '
                                          "that label."), "items": option},
        "multi_select": _described("boolean", "Whether the user may select more than one "
                                              "option. Defaults to false.")},
        ["id", "question"])
    return object_tool_schema(ASK_USER_QUESTION, ASK_USER_QUESTION_DESCRIPTION, {
        "questions": {**_described("array", "Questions to ask the user before continuing."),
                      "items": question}}, ("questions",))


class QuestionOption(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One choice offered to the human."""

    label: str
    description: str | None = None


class QuestionIntent(msgspec.Struct, frozen=True, kw_only=True):
    """A question's kind of decision, for a UI: a ``plan-review`` of ``detail``, approved
    by the option labelled ``approve`` (presentation only)."""

    kind: Literal["plan-review"]
    approve: str


class Question(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel"):
    """One question; ``id`` is echoed in its answer."""

    id: str
    question: str
    detail: str | None = None
    header: str | None = None
    options: tuple[QuestionOption, ...] | None = None
    multi_select: bool | None = None
    intent: QuestionIntent | None = None


class AnswerItem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The answer to one question: the labels selected, and any free text."""

    id: str
    selected: tuple[str, ...]
    custom: str | None = None


class Answers(msgspec.Struct, frozen=True, kw_only=True):
    """The human's answer, by question id."""

    answers: tuple[AnswerItem, ...]


@checked
def questions_from_arguments(items: Sequence[Mapping[str, Any]]) -> tuple[Question, ...]:
    """The questions of an ``ask_user_question`` call's (checked) arguments, in order."""
    return tuple(
        Question(id=item["id"], question=item["question"], header=item.get("header"),
                 options=None if item.get("options") is None else tuple(
                     QuestionOption(label=option["label"], description=option.get("description"))
                     for option in item["options"]),
                 multi_select=item.get("multi_select"))
        for item in items)


@checked
def intent_refusal(questions: Sequence[Question]) -> str | None:
    """DSH's ``BAD_INTENT`` text for the first question whose intent names none of its
    options or reviews no detail, else ``None``."""
    for question in questions:
        intent = question.intent
        if intent is None:
            continue
        if not any(option.label == intent.approve for option in question.options or ()):
            return (f"question {question.id} declares intent {intent.kind} whose approve "
                    f"label {json.dumps(intent.approve, ensure_ascii=False)} names none of "
                    "its options")
        if question.detail is None:
            return (f"question {question.id} declares intent {intent.kind} without the "
                    "detail it reviews")
    return None
