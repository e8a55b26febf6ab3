"""Continuable children: the rules DSH's continuation manager follows, decided purely.

A continuable child is a subagent the parent can talk to again: it has a durable id (its session
id) and a label, runs its turns one after another as messages arrive, and is resumed from its own
log after it settled or the process restarted. Rules of this module (DSH
``packages/subagent/subagent/src/continuation.ts``, ``lifecycle.ts``, ``descriptor.ts``,
``consumed-work.ts``):

* Start, in DSH's order: :func:`check_continuable` refuses a malformed depth cap, a child deeper
  than the cap and an unusable tool filter, and captures everything read of the parent *now*
  (the route, the delegated policy, the composition) before the provider is asked for a seed;
  :func:`plan_continuable` then places the provider's seed. The child's creation seed is the
  provider's seed (a fork's completed-turn prefix, or nothing) followed by its
  ``subagent/descriptor`` ``{version: 2, mode: "continuable", provider, label, agentProvider?,
  agentModel?, persona?, toolFilter?}``: the descriptor is the last event before
  ``session/end-seed``, between turns, never inside turn 1. The header's ``seedLength`` counts
  the provider's seed only, so the child's own suffix (``events[seedLength:]``) starts with its
  descriptor. No preamble, no one-shot capability check, no output schema.
* Resume needs only the child's log (:func:`resume_terms`): the header's lineage and depth, the
  first descriptor of the own suffix (a fork seed may replay an ancestor's), which must be
  continuable; the last ``approval/policy`` of the own suffix governs (the delegation pinned
  ``never``; a later switch in the child wins), ``never`` when it has none: a policy in a fork
  seed is the parent's, never the child's. Nothing is read of the parent again.
* An epoch (one residency of a child) ends with the stop reason of :func:`epoch_stop_reason`
  over its own events, and its closing message is the final-output rule over them
  (:func:`~.results.final_assistant_output`).
* The parent hears of a settled epoch through a user message (:func:`settlement_notice`), and
  of a report through another (:func:`report_message`); DSH's exact texts and sources.
* Listing folds descriptors last-wins over the whole log (:func:`child_identity`), as DSH's
  identity projection does (cold resume's first-own-suffix rule is a different question).
* Refusals are :class:`~.delegation.StartError` values carrying DSH's code and text; plain DSH
  errors have no ``name``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType
from returns.result import Failure, Result, Success

from .._checking import checked, plain_forms
from ..delegation import (
    DELEGATION_SECTION,
    PERSONA_SECTION_NAME,
    PERSONA_SECTION_ORDER,
    UNSUPPORTED_CAPABILITY,
    AgentOptions,
    DelegatedPolicy,
    ParentView,
    PromptSection,
    RuntimeOptions,
    StartError,
    child_header,
    delegated_policy,
    resolve_child_depth,
    resolve_child_options,
    validate_tool_filter,
)
from ..log import (
    SUBAGENT_DESCRIPTOR_VERSION,
    ApprovalPolicyEvent,
    ContentBlock,
    Event,
    InboxSplicedEvent,
    MessageSource,
    SeededLog,
    SessionHeader,
    StepStartEvent,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    TextBlock,
    ToolRestriction,
    Trace,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndEvent,
    TurnError,
    TurnInterrupted,
    TurnMaxTokens,
    TurnStartEvent,
    UserMessage,
    advance,
    fold_subagent_descriptor,
    identity_descriptor,
)

# Calls into sibling modules get values this module's checked entry points took in: plain.
(_resolve_child_depth, _resolve_child_options, _fold_subagent_descriptor, _identity_descriptor,
 _validate_tool_filter, _advance, _child_header, _delegated_policy) = plain_forms(
    resolve_child_depth, resolve_child_options, fold_subagent_descriptor, identity_descriptor,
    validate_tool_filter, advance, child_header, delegated_policy)

__all__ = [
    "CONTINUATION_UNAVAILABLE",
    "PERSISTENCE_UNAVAILABLE",
    "UNSUPPORTED_CAPABILITY",
    "DUPLICATE_CHILD",
    "NOT_RESUMABLE",
    "UNAUTHORIZED",
    "ACTIVATION_CLOSING",
    "PARENT_UNAVAILABLE",
    "DRAINING",
    "ACTIVATION_TEARDOWN_FAILED",
    "CANCELLED",
    "MALFORMED_DESCRIPTOR",
    "SUMMARY_MAX_CHARS",
    "ContinuableStart",
    "ContinuableTerms",
    "ContinuablePlan",
    "ResumeTerms",
    "ChildIdentity",
    "continuable_descriptor",
    "check_continuable",
    "plan_continuable",
    "resume_terms",
    "child_identity",
    "same_lifecycle",
    "ListingSlot",
    "listing_slots",
    "teardown_failure_text",
    "epoch_stop_reason",
    "bound_summary",
    "settlement_summary",
    "settlement_notice",
    "report_message",
    "refusal",
]

#: ``StartError.code`` values of the continuation manager (DSH ``SubagentError`` codes).
CONTINUATION_UNAVAILABLE = "CONTINUATION_UNAVAILABLE"
PERSISTENCE_UNAVAILABLE = "PERSISTENCE_UNAVAILABLE"
DUPLICATE_CHILD = "DUPLICATE_CHILD"
NOT_RESUMABLE = "NOT_RESUMABLE"
UNAUTHORIZED = "UNAUTHORIZED"
ACTIVATION_CLOSING = "ACTIVATION_CLOSING"
PARENT_UNAVAILABLE = "PARENT_UNAVAILABLE"
DRAINING = "DRAINING"
ACTIVATION_TEARDOWN_FAILED = "ACTIVATION_TEARDOWN_FAILED"
CANCELLED = "CANCELLED"
#: ``StartError.code`` of a resume whose first own descriptor is malformed (a plain error in
#: DSH: its parse text, no ``error`` key).
MALFORMED_DESCRIPTOR = "MALFORMED_DESCRIPTOR"

#: DSH's bound on a notice's ``summary`` (UTF-16 code units, ``…`` included).
SUMMARY_MAX_CHARS = 120

_TEXTS: dict[str, tuple[str, str]] = {
    # key: (code, text with {id}/{other} placeholders)
    "no-manager": (CONTINUATION_UNAVAILABLE, "continuable subagents require the agents service"),
    "no-persistence": (PERSISTENCE_UNAVAILABLE,
                       "continuable subagents require session persistence (load a "
                       "dsh-session-persistence backend)"),
    "no-capability": (UNSUPPORTED_CAPABILITY,
                      'subagent provider "{id}" does not support continuable children (no '
                      "prepareContinuable capability)"),
    "duplicate": (DUPLICATE_CHILD, 'subagent "{id}" already exists'),
    "unavailable": (NOT_RESUMABLE, 'subagent "{id}" is unavailable'),
    "not-continuable": (NOT_RESUMABLE,
                        'subagent "{id}" has no supported continuation state and cannot be '
                        "resumed; do not retry send_message with this id"),
    "exact-parent": (UNAUTHORIZED, 'subagent "{id}" delivery requires the exact live parent agent'),
    "other-parent": (UNAUTHORIZED, 'subagent "{id}" belongs to another parent session'),
    "exact-ancestor": (UNAUTHORIZED, 'interrupting "{id}" requires the exact live ancestor agent'),
    "self-interrupt": (UNAUTHORIZED, 'agent "{id}" cannot interrupt itself'),
    "not-descendant": (UNAUTHORIZED, 'subagent "{id}" is not a live descendant of agent "{other}"'),
    "cannot-report": (UNAUTHORIZED,
                      'agent "{id}" is not a live continuable subagent and cannot report'),
    "teardown-parent": (UNAUTHORIZED,
                        "selected child teardown requires the exact live parent agent"),
    "not-direct-child": (UNAUTHORIZED, 'subagent "{id}" is not a direct child of agent "{other}"'),
    "closing-message": (ACTIVATION_CLOSING,
                        'subagent "{id}" activation is being disposed; the message was not '
                        "accepted"),
    "closing-report": (ACTIVATION_CLOSING,
                       'subagent "{id}" activation is being disposed; the report was not '
                       "delivered"),
    "closing-parent": (ACTIVATION_CLOSING,
                       'subagent parent "{id}" is being disposed; the child was not established'),
    "parent-unavailable": (PARENT_UNAVAILABLE,
                           "direct parent is not live; report was not delivered"),
    "draining": (DRAINING, "continuable subagents are draining; the operation was not admitted"),
    "draining-below": (DRAINING,
                       'continuable subagents below parent "{id}" are draining; the operation '
                       "was not admitted"),
    "listing-cancelled": (CANCELLED, "subagent listing was cancelled"),
}

RefusalKind: TypeAlias = Literal[
    "no-manager", "no-persistence", "no-capability", "duplicate", "unavailable",
    "not-continuable", "exact-parent", "other-parent", "exact-ancestor", "self-interrupt",
    "not-descendant", "cannot-report", "teardown-parent", "not-direct-child",
    "closing-message", "closing-report", "closing-parent", "parent-unavailable", "draining",
    "draining-below", "listing-cancelled"]


@checked
def refusal(kind: RefusalKind, subject: str = "", other: str = "") -> StartError:
    """DSH's ``SubagentError`` for one refusal of the continuation manager.

    ``subject`` is the id the text names (a child, a provider, a root), ``other`` the second
    id where the text has one (the caller of an interrupt, the parent of a teardown).

    >>> refusal("unavailable", "c1").message
    'subagent "c1" is unavailable'
    >>> refusal("not-descendant", "c1", "p").code
    'UNAUTHORIZED'
    """
    code, text = _TEXTS[kind]
    return StartError(code=code, name="SubagentError",
                      message=text.format(id=subject, other=other))


# --------------------------------------------------------------------------- start


class ContinuableStart(msgspec.Struct, frozen=True, kw_only=True):
    """A continuable delegation as asked for (DSH ``startContinuable``'s spec): the first
    prompt, the durable label, and the optional settings; no output schema."""

    prompt: tuple[ContentBlock, ...]
    label: str
    agent_options: AgentOptions | None = None
    max_depth: int | None = None
    tool_filter: ToolRestriction | None = None
    persona: str | None = None


class ContinuableTerms(msgspec.Struct, frozen=True, kw_only=True):
    """What a continuable start captured of the parent before the provider was asked."""

    request: ContinuableStart
    provider_name: str
    depth: int
    #: The child's route and depth: the parent's provider/model/max_tokens, each replaced by
    #: the request's when given.
    options: RuntimeOptions
    descriptor: SubagentDescriptorData
    #: Payloads appended after the creation seed's ``session/end-seed``.
    policy: tuple[DelegatedPolicy, ...]
    #: System-prompt sections of the child's own scope (a persona).
    sections: tuple[PromptSection, ...]
    #: Runtime-context contributions of the child's own scope (the delegation statement).
    context: tuple[PromptSection, ...]
    parent_header: SessionHeader
    agent_preset: str | None = None


class ContinuablePlan(msgspec.Struct, frozen=True, kw_only=True):
    """A continuable child to create: its header, creation seed and everything of its setup."""

    terms: ContinuableTerms
    header: SessionHeader
    #: The provider's seed followed by the descriptor (``session/end-seed`` follows it).
    seed: Sequence[Event]
    #: The trace of ``seed`` when the provider's seed came with its trace: creation is O(1).
    seed_trace: Trace | None
    #: The provider's seed length (the header's ``seedLength``; 0 for a spawn).
    seed_length: int


@checked
def continuable_descriptor(provider_name: str, label: str, options: RuntimeOptions,
                           persona: str | None = None,
                           tool_filter: ToolRestriction | None = None) -> SubagentDescriptorData:
    """The descriptor of a continuable child: undeclared fields stay absent.

    >>> continuable_descriptor("spawn", "child task", RuntimeOptions(provider="p", model="m"))
    SubagentDescriptorData(version=2, mode='continuable', provider='spawn', label='child task', \
agent_provider='p', agent_model='m', persona=UNSET, tool_filter=UNSET)
    """
    return SubagentDescriptorData(
        version=SUBAGENT_DESCRIPTOR_VERSION, mode="continuable", provider=provider_name,
        label=label,
        agent_provider=UNSET if options.provider is None else options.provider,
        agent_model=UNSET if options.model is None else options.model,
        persona=UNSET if persona is None else persona,
        tool_filter=UNSET if tool_filter is None else tool_filter)


def _own_sections(persona: str | None) -> tuple[PromptSection, ...]:
    if persona is None:
        return ()
    return (PromptSection(name=PERSONA_SECTION_NAME, order=PERSONA_SECTION_ORDER, text=persona),)


@checked
def check_continuable(parent: ParentView, request: ContinuableStart, *, provider_name: str,
                      known_tools: Collection[str] | None = None,
                      ) -> Result[ContinuableTerms, StartError]:
    """The checks of a continuable start, in DSH's order, and what it captures of the parent.

    Args:
        parent: the delegating parent as it stands now.
        request: the delegation asked for.
        provider_name: the provider's registry name (the descriptor's ``provider``).
        known_tools: global tool names a tool filter may name; ``None`` skips that check.

    Returns:
        The terms, or the first refusal: a malformed depth cap (plain), a child deeper than the
        cap (plain), an unusable tool filter (plain).

    >>> from turnfork.core import SessionHeader
    >>> view = ParentView(header=SessionHeader(id="p", created_at=0))
    >>> check_continuable(view, ContinuableStart(prompt=(), label="x", max_depth=0),
    ...                   provider_name="spawn").failure().message
    'subagent depth 1 exceeds maxDepth 0'
    """
    header_depth = parent.header.delegation_depth
    resolved = _resolve_child_depth(None if isinstance(header_depth, UnsetType) else header_depth,
                                   parent.options.subagent_depth, request.max_depth)
    match resolved:
        case Failure(depth_error):
            return Failure(StartError.from_depth(depth_error))
    depth = resolved.unwrap()
    if request.tool_filter is not None:
        match _validate_tool_filter(request.tool_filter, known_tools):
            case Failure(filter_error):
                return Failure(filter_error)
    options = _resolve_child_options(parent.options, request.agent_options, depth)
    return Success(ContinuableTerms(
        request=request, provider_name=provider_name, depth=depth, options=options,
        descriptor=continuable_descriptor(provider_name, request.label, options,
                                          request.persona, request.tool_filter),
        policy=_delegated_policy(parent.events, parent.approval_in_use, parent.trace),
        sections=_own_sections(request.persona), context=(DELEGATION_SECTION,),
        parent_header=parent.header, agent_preset=parent.agent_preset))


@checked
def plan_continuable(terms: ContinuableTerms, *, seed: Sequence[Event] | None,
                     seed_trace: Trace | None, child_id: str, created_at: int) -> ContinuablePlan:
    """Place the provider's seed: the creation seed is ``seed`` then the descriptor at seq
    ``len(seed)``, stamped ``created_at``; with ``seed_trace`` (the trace of exactly ``seed``)
    the plan carries the trace of the whole creation seed, so nothing is replayed.

    Raises:
        ValueError: ``seed_trace`` does not cover exactly ``seed``.
    """
    base: Sequence[Event] = () if seed is None else seed
    if seed_trace is not None and seed_trace.length != len(base):
        raise ValueError(f"seed_trace covers {seed_trace.length} events but the seed has "
                         f"{len(base)}")
    descriptor = SubagentDescriptorEvent(seq=len(base), time=created_at, data=terms.descriptor)
    trace: Trace | None = None
    if seed_trace is not None:
        advanced = _advance(seed_trace, descriptor)
        trace = advanced.unwrap() if isinstance(advanced, Success) else None
    return ContinuablePlan(
        terms=terms,
        header=_child_header(terms.parent_header, child_id=child_id, created_at=created_at,
                            depth=terms.depth, seed_length=len(base),
                            agent_preset=terms.agent_preset),
        seed=SeededLog(base, (descriptor,)), seed_trace=trace, seed_length=len(base))


# --------------------------------------------------------------------------- resume


class ResumeTerms(msgspec.Struct, frozen=True, kw_only=True):
    """What a cold resume rebuilds from a child's log alone."""

    child_id: str
    parent_session: str | None
    #: The provider name the descriptor records (it need not be registered any more).
    provider_name: str
    label: str | None
    #: The descriptor's route only (no depth, no max_tokens).
    options: RuntimeOptions
    persona: str | None
    tool_filter: ToolRestriction | None
    #: The policy of the last ``approval/policy`` event of the child's own suffix (``never``
    #: when it has none: a delegated child never asks; a fork seed's events are its parent's).
    approval_policy: Literal["ask", "never"]
    #: The header's ``delegationDepth`` (the floor of every later depth check).
    depth: int | None
    sections: tuple[PromptSection, ...]
    context: tuple[PromptSection, ...]


def _last_approval(events: Sequence[Event], start: int) -> Literal["ask", "never"] | None:
    for index in range(len(events) - 1, start - 1, -1):
        event = events[index]
        if isinstance(event, ApprovalPolicyEvent):
            return event.data.policy
    return None


@checked
def resume_terms(header: SessionHeader,
                 events: Sequence[Event]) -> Result[ResumeTerms, StartError]:
    """What resuming a continuable child from its log needs, or why it cannot be resumed.

    The descriptor is the first one of the child's own suffix (``events[seedLength:]``,
    :func:`~.descriptor.fold_subagent_descriptor`); absent, of another version or one-shot, the
    child is not resumable (``NOT_RESUMABLE``, DSH's text); malformed, the refusal is DSH's
    parse text as a plain error (``MALFORMED_DESCRIPTOR``, no ``error`` key), even when a later
    descriptor is well formed.

    >>> from turnfork.core import SessionHeader
    >>> resume_terms(SessionHeader(id="c", created_at=0), ()).failure().code
    'NOT_RESUMABLE'
    """
    start = header.seed_length if isinstance(header.seed_length, int) else 0
    folded = _fold_subagent_descriptor(events, start=start)
    if isinstance(folded, Failure):
        return Failure(StartError(code=MALFORMED_DESCRIPTOR, message=folded.failure().message))
    descriptor = folded.unwrap()
    if descriptor is None or descriptor.version != SUBAGENT_DESCRIPTOR_VERSION \
            or descriptor.mode != "continuable":
        return Failure(refusal("not-continuable", header.id))
    persona = None if isinstance(descriptor.persona, UnsetType) else descriptor.persona
    depth = header.delegation_depth
    parent = header.parent_session
    return Success(ResumeTerms(
        child_id=header.id,
        parent_session=parent if isinstance(parent, str) else None,
        provider_name=descriptor.provider,
        label=None if isinstance(descriptor.label, UnsetType) else descriptor.label,
        options=RuntimeOptions(
            provider=None if isinstance(descriptor.agent_provider, UnsetType)
            else descriptor.agent_provider,
            model=None if isinstance(descriptor.agent_model, UnsetType)
            else descriptor.agent_model),
        persona=persona,
        tool_filter=None if isinstance(descriptor.tool_filter, UnsetType)
        else descriptor.tool_filter,
        approval_policy=_last_approval(events, start) or "never",
        depth=None if isinstance(depth, UnsetType) else depth,
        sections=_own_sections(persona), context=(DELEGATION_SECTION,)))


# --------------------------------------------------------------------------- listing


class ChildIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """A child's durable identity as listing sees it: the last descriptor of its log."""

    mode: Literal["one-shot", "continuable"]
    label: str | None
    #: The seq of the descriptor's event.
    seq: int


@checked
def child_identity(events: Sequence[Event]) -> ChildIdentity | None:
    """The last ``subagent/descriptor`` of a log (DSH's identity projection, last wins,
    :func:`~.descriptor.identity_descriptor`); ``None`` without one (a live child still being
    created), or when the last is malformed or of an unknown version (a settled child is then
    listed ``corrupt``).

    >>> child_identity(())
    """
    found = _identity_descriptor(events)
    if found is None:
        return None
    label = found.data.label
    return ChildIdentity(mode=found.data.mode, seq=found.seq,
                         label=None if isinstance(label, UnsetType) else label)


@checked
def same_lifecycle(inspected: SessionHeader, enumerated: SessionHeader) -> bool:
    """Whether a session read now is still the one its header was listed as (a session id
    names a slot, not a lifecycle: a child deleted and created again under another parent, say,
    is another one): the same version, id, ``createdAt``, cwd, parent, ``seedLength`` and
    ``delegationDepth`` (DSH's lifecycle witnesses).

    >>> from turnfork.core import SessionHeader
    >>> same_lifecycle(SessionHeader(id="c", created_at=1), SessionHeader(id="c", created_at=2))
    False
    """
    return all(getattr(inspected, key) == getattr(enumerated, key) for key in (
        "version", "id", "created_at", "cwd", "parent_session", "seed_length",
        "delegation_depth"))


class ListingSlot(msgspec.Struct, frozen=True, kw_only=True):
    """A delegated session a listing reports: its parent on the walk, its depth below the
    root, whether a delegated session names it as its parent."""

    header: SessionHeader
    parent: str
    depth: int
    has_children: bool


def _delegated(header: SessionHeader) -> bool:
    return header.origin == "subagent"


@checked
def listing_slots(headers: Sequence[SessionHeader], root_id: str, *,
                  descendants: bool = False) -> tuple[ListingSlot, ...]:
    """The delegated sessions a listing of ``root_id`` reads, by their headers alone: its
    children oldest first (``createdAt``, then id), or ``descendants`` in stable pre-order through
    sessions of any kind (each level counts in ``depth``); cycle-safe."""
    parents = {h.parent_session for h in headers
               if _delegated(h) and isinstance(h.parent_session, str)}
    children: dict[str, list[SessionHeader]] = {}
    for header in headers:
        if isinstance(header.parent_session, str):
            children.setdefault(header.parent_session, []).append(header)
    for siblings in children.values():
        siblings.sort(key=lambda h: (h.created_at, h.id))
    slots: list[ListingSlot] = []
    seen = {root_id}
    stack = [(h, root_id, 1) for h in reversed(children.get(root_id, ()))]
    while stack:
        header, parent, depth = stack.pop()
        if header.id in seen:
            continue
        seen.add(header.id)
        if _delegated(header):
            slots.append(ListingSlot(header=header, parent=parent, depth=depth,
                                     has_children=header.id in parents))
        if descendants:
            stack.extend((h, header.id, depth + 1)
                         for h in reversed(children.get(header.id, ())))
    return tuple(slots)


@checked
def teardown_failure_text(child_id: str, failures: Sequence[str]) -> str:
    """What a teardown that failed at one or more boundaries says."""
    if len(failures) == 1:
        return failures[0]
    return (f'subagent "{child_id}" activation teardown failed at {len(failures)} '
            f"boundaries: {'; '.join(failures)}")


# --------------------------------------------------------------------------- an epoch ends


@checked
def epoch_stop_reason(events: Sequence[Event]) -> str:
    """Why a continuable child's epoch ended, from its own events (DSH ``epochStopReason``).

    The accounting turn is the last ``turn/end`` of a turn that entered a step, or that
    claimed inbox input and did not end ``completed``. ``max-tokens`` → ``max-tokens``;
    ``aborted`` or ``interrupted`` → ``aborted``; ``error`` → ``error``; ``blocked`` →
    ``refusal``; ``completed`` or no accounting turn → ``aborted`` when accepted work was
    cancelled out of the inbox unrun after it, else ``completed``.

    >>> epoch_stop_reason(())
    'completed'
    """
    stepped: set[int] = set()
    claimed: set[int] = set()
    open_turn: int | None = None
    end: TurnEndEvent | None = None
    dropped = False
    for event in events:
        if isinstance(event, TurnStartEvent):
            open_turn = event.data.turn
        elif isinstance(event, StepStartEvent):
            stepped.add(event.data.turn)
        elif isinstance(event, InboxSplicedEvent):
            data = event.data
            if isinstance(data.removed_count, UnsetType):
                continue
            if not isinstance(data.outcome, UnsetType) and data.outcome == "canceled":
                dropped = dropped or not data.inserted
            elif open_turn is not None:
                claimed.add(open_turn)
        elif isinstance(event, TurnEndEvent):
            turn = event.data.turn
            open_turn = None
            was_stepped = turn in stepped
            stepped.discard(turn)
            was_claimed = turn in claimed
            claimed.discard(turn)
            if was_stepped or (was_claimed and not isinstance(event.data.reason, TurnCompleted)):
                end, dropped = event, False
    reason = None if end is None else end.data.reason
    if isinstance(reason, TurnMaxTokens):
        return "max-tokens"
    if isinstance(reason, TurnAborted | TurnInterrupted):
        return "aborted"
    if isinstance(reason, TurnError):
        return "error"
    if isinstance(reason, TurnBlocked):
        return "refusal"
    if reason is None or isinstance(reason, TurnCompleted):
        return "aborted" if dropped else "completed"
    return "error"


@checked
def bound_summary(summary: str) -> str:
    """A notice summary bounded as DSH bounds it: at most 120 UTF-16 code units, the last one
    an ellipsis when cut.

    >>> bound_summary("x" * 121)[-2:]
    'x…'
    >>> len(bound_summary("x" * 121))
    120
    """
    units = summary.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * SUMMARY_MAX_CHARS:
        return summary
    kept = units[:2 * (SUMMARY_MAX_CHARS - 1)].decode("utf-16-le", "surrogatepass")
    return f"{kept}…"


@checked
def settlement_summary(child_id: str, stop_reason: str) -> str:
    """The opening line of a settlement notice, by the epoch's stop reason (DSH's words).

    >>> settlement_summary("c1", "refusal")
    'Background subagent c1 declined the task.'
    """
    subject = f"Background subagent {child_id}"
    match stop_reason:
        case "completed":
            return f"{subject} finished and will do no further work unless you send it more."
        case "aborted":
            return f"{subject} was stopped before it finished."
        case "max-tokens":
            return f"{subject} ran out of room before it finished."
        case "refusal":
            return f"{subject} declined the task."
        case "error":
            return f"{subject} failed before it finished."
    return f"{subject} ended abnormally ({stop_reason}) before it finished."


@checked
def settlement_notice(child_id: str, stop_reason: str, output: tuple[ContentBlock, ...] | None,
                      *, message_id: str) -> UserMessage:
    """The user message that tells the parent a child's epoch settled: the summary line, then
    ``Its closing message:`` and the epoch's final assistant content as it is (any block
    type), or ``It left no closing message.``; source ``subagent-settled`` ``notice``.

    >>> notice = settlement_notice("c1", "completed", (TextBlock(text="OK"),), message_id="m")
    >>> [block.text for block in notice.content]  # doctest: +NORMALIZE_WHITESPACE
    ['Background subagent c1 finished and will do no further work unless you send it more.',
     'Its closing message:', 'OK']
    """
    summary = settlement_summary(child_id, stop_reason)
    closing: tuple[ContentBlock, ...] = (
        (TextBlock(text="It left no closing message."),) if output is None
        else (TextBlock(text="Its closing message:"), *output))
    return UserMessage(
        content=(TextBlock(text=summary), *closing),
        source=MessageSource(kind="subagent-settled", form="notice",
                             summary=bound_summary(summary), sender_session_id=child_id),
        id=message_id)


@checked
def report_message(child_id: str, content: tuple[ContentBlock, ...], *,
                   message_id: str) -> UserMessage:
    """What a parent receives of a child's report: ``Background subagent <id> reported:`` then
    the reported content; source ``subagent-report`` ``relay`` from the child.

    >>> report_message("c1", (TextBlock(text="FOUND"),), message_id="m").content[0].text
    'Background subagent c1 reported:'
    """
    return UserMessage(
        content=(TextBlock(text=f"Background subagent {child_id} reported:"), *content),
        source=MessageSource(kind="subagent-report", form="relay", sender_session_id=child_id),
        id=message_id)
