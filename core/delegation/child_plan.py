"""The child plan: everything a shell needs to create a fork or spawn child, decided purely.

Rules of this module (wire-format §2.12, §2.13, §4, §6.6, §7.1, §7.6-7.9):

* Two checks, each rule once. :func:`check_request` is what the subagent runtime checks for
  *any* provider before calling it, in DSH's order: capabilities, the depth cap's shape, the
  output schema; it resolves the one-shot descriptor (``{version: 2, mode, provider, label?}``).
  :func:`plan_child` then checks what needs the parent — its depth against the cap, the tool
  filter against the known tools — and decides the child, refusing before any child exists.
  Given a plain :class:`StartRequest` it runs :func:`check_request` first (a vendor's one
  call); given the runtime's :class:`CheckedRequest` it trusts it.
* Fork seed: the parent's completed-turn prefix, as a view (never a copy); none when no turn has
  completed (the child then starts like a spawn). Spawn: no seed.
* Child header: the parent's ``cwd`` and preset, ``parentSession``, ``origin: "subagent"``,
  ``delegationDepth``, and ``seedLength`` only when the seed is non-empty.
* Child options: the parent's provider/model/max_tokens, each replaced by the request's when
  given, and the child's depth. A missing model route is not refused here: the child's first
  model call fails, as DSH's does.
* Composition: the child's system prompt is the parent's deployment prompt, changed only by a
  requested persona (it shadows ``deployment:persona``) and the structured-output instruction;
  the delegation statement is a runtime-context contribution (:data:`DELEGATION_SECTION`), so a
  fork child's request extends its parent's byte for byte.
* Delegated policy, to append after the seed and its ``session/end-seed``, before the first
  turn: the parent's last ``sandbox/mode`` (if any) as ``source: "delegation"``, then
  ``approval/policy: never`` when approval is in use. Payloads only: the shell assigns seq and
  time.
* The child never inherits the parent's tool restrictions; it gets its own filter and persona.
* The caller supplies the child id and creation time: the core has no clock or randomness.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType
from returns.result import Failure, Result, Success

from .._checking import checked, plain_forms
from ..log import (
    SESSION_FORMAT_VERSION,
    SUBAGENT_DESCRIPTOR_VERSION,
    ApprovalPolicyData,
    ContentBlock,
    Event,
    PrefixView,
    SandboxModeData,
    SandboxModeEvent,
    SessionHeader,
    SubagentDescriptorData,
    ToolRestriction,
    Trace,
    completed_turn_prefix,
)
from .depth import resolve_child_depth, validate_max_depth
from .request import (
    AgentOptions,
    Capabilities,
    PromptSection,
    RuntimeOptions,
    StartError,
    StartRequest,
    check_capabilities,
    validate_tool_filter,
)
from .structured import StructuredOutputContract, structured_output_contract, validate_output_schema

# Calls into sibling modules get values this module's checked entry points took in: plain.
(_validate_max_depth, _resolve_child_depth, _check_capabilities, _validate_output_schema,
 _completed_turn_prefix, _validate_tool_filter, _structured_output_contract) = plain_forms(
    validate_max_depth, resolve_child_depth, check_capabilities, validate_output_schema,
    completed_turn_prefix, validate_tool_filter, structured_output_contract)

__all__ = [
    "CheckedRequest",
    "check_request",
    "SUBAGENT_DELEGATION_CONTEXT",
    "DELEGATION_SECTION",
    "PERSONA_SECTION_NAME",
    "PERSONA_SECTION_ORDER",
    "DelegatedPolicy",
    "CompletedPrefix",
    "ParentView",
    "ChildPlan",
    "resolve_child_options",
    "child_header",
    "delegated_policy",
    "one_shot_descriptor",
    "fork_seed",
    "plan_child",
]

SUBAGENT_DELEGATION_CONTEXT = (
    "You are a delegated subagent: your permission scope was fixed when you were started and "
    "cannot be widened from inside this session — operations that require approval are rejected "
    "automatically. When the task needs access beyond that scope, do not retry the denied "
    "operation; state the limitation in your reply so the delegating agent can handle it.")
#: Runtime-context contribution of every child (after the sandbox 110 and approval 115 ones).
DELEGATION_SECTION = PromptSection(name="subagent:delegation", order=120,
                                   text=SUBAGENT_DELEGATION_CONTEXT, kind="context")
#: A persona shadows the deployment persona section of the same name.
PERSONA_SECTION_NAME = "deployment:persona"
PERSONA_SECTION_ORDER = 0

DelegatedPolicy: TypeAlias = SandboxModeData | ApprovalPolicyData


class CompletedPrefix(msgspec.Struct, frozen=True, kw_only=True):
    """A log's completed-turn prefix and the trace there, read together (as a live session
    keeps them): a fork's seed and seed trace, handed on as they are."""

    #: The log through its last ``turn/end`` (a view, never a copy).
    events: Sequence[Event]
    #: The trace of exactly ``events``.
    trace: Trace


class ParentView(msgspec.Struct, frozen=True, kw_only=True):
    """What delegation reads of the parent, at the moment it delegates."""

    header: SessionHeader
    options: RuntimeOptions = RuntimeOptions()
    #: The parent's whole log so far (its current turn is usually still open).
    events: Sequence[Event] = ()
    #: Whether the approval service is composed (its child then gets ``approval/policy: never``).
    approval_in_use: bool = False
    #: The parent's live composed preset; ``None``: the one its header names.
    agent_preset: str | None = None
    #: The parent's trace over exactly ``events``, if kept: the fork cut is then O(1).
    trace: Trace | None = None
    #: The parent's completed-turn prefix with its trace, if kept: the child's seed and seed
    #: trace, as they are (read once with ``trace``).
    completed: CompletedPrefix | None = None


class CheckedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request the subagent runtime checked for its provider: what the provider is handed."""

    request: StartRequest
    provider_name: str
    #: DSH's resolved one-shot descriptor, ``{version: 2, mode, provider, label?}``.
    descriptor: SubagentDescriptorData
    structured: StructuredOutputContract | None = None


@checked
def check_request(provider_name: str, capabilities: Capabilities | None,
                  request: StartRequest) -> Result[CheckedRequest, StartError]:
    """The checks the runtime makes before any provider is called, in DSH's order.

    Args:
        provider_name: the provider's registry name (the descriptor's ``provider``).
        capabilities: the provider's; ``None`` means every capability.
        request: the delegation asked for.

    Returns:
        The checked request, or the first refusal: a missing capability
        (``UNSUPPORTED_CAPABILITY``, it wins over a malformed value), a malformed depth cap, an
        output schema outside the subset.

    >>> check_request("fork", None, StartRequest(prompt=(), max_depth=-1)).failure().message
    'subagent maxDepth must be a non-negative safe integer'
    >>> check_request("fork", None, StartRequest(prompt=(), label="x")).unwrap().descriptor
    SubagentDescriptorData(version=2, mode='one-shot', provider='fork', label='x', \
agent_provider=UNSET, agent_model=UNSET, persona=UNSET, tool_filter=UNSET)
    """
    # A refusal is told by its exact class (``Result`` is an ``ABCMeta`` class: a class
    # pattern costs an abstract ``isinstance`` per check, on every start).
    if capabilities is not None:
        supported = _check_capabilities(provider_name, capabilities, request)
        if type(supported) is Failure:
            return supported
    valid = _validate_max_depth(request.max_depth)
    if type(valid) is Failure:
        return Failure(StartError.from_depth(valid.failure()))
    structured: StructuredOutputContract | None = None
    if request.output_schema is not None:
        match _validate_output_schema(request.output_schema):
            case Failure(schema_error):
                return Failure(schema_error)
            case Success(compiled):
                structured = _structured_output_contract(compiled)
    return Success(CheckedRequest(request=request, provider_name=provider_name,
                                  descriptor=_one_shot_descriptor(provider_name, request.label),
                                  structured=structured))


class ChildPlan(msgspec.Struct, frozen=True, kw_only=True):
    """A child to create: nothing in it is left for the shell to decide."""

    kind: Literal["fork", "spawn"]
    header: SessionHeader
    #: Fork: the parent's completed-turn prefix (a view of its log); ``None``: no seed.
    seed: Sequence[Event] | None
    #: The trace of ``seed`` (the parent's at the cut), when the parent kept one: the child's
    #: session then starts without replaying its seed.
    seed_trace: Trace | None
    options: RuntimeOptions
    #: Payloads to append, in order, after the seed's ``session/end-seed``.
    policy: tuple[DelegatedPolicy, ...]
    #: The one-shot descriptor, appended inside the child's first turn before ``step/start``
    #: (the turn machine's preamble).
    descriptor: SubagentDescriptorData
    prompt: tuple[ContentBlock, ...]
    #: System-prompt sections of the child's own scope (persona, structured output).
    sections: tuple[PromptSection, ...]
    #: Runtime-context contributions of the child's own scope (the delegation statement).
    context: tuple[PromptSection, ...]
    persona: str | None
    tool_filter: ToolRestriction | None
    structured: StructuredOutputContract | None
    depth: int


@checked
def resolve_child_options(parent: RuntimeOptions, requested: AgentOptions | None,
                          depth: int) -> RuntimeOptions:
    """The child's runtime options: each route field requested, else the parent's; its depth.

    >>> resolve_child_options(RuntimeOptions(provider="p", model="m"),
    ...                       AgentOptions(model="n"), 1)
    RuntimeOptions(provider='p', model='n', max_tokens=None, subagent_depth=1)
    """
    wanted = requested or AgentOptions()
    return RuntimeOptions(
        provider=parent.provider if wanted.provider is None else wanted.provider,
        model=parent.model if wanted.model is None else wanted.model,
        max_tokens=parent.max_tokens if wanted.max_tokens is None else wanted.max_tokens,
        subagent_depth=depth)


@checked
def child_header(parent: SessionHeader, *, child_id: str, created_at: int, depth: int,
                 seed_length: int, agent_preset: str | None = None) -> SessionHeader:
    """The child's session header (wire-format §4, §7.9).

    ``agent_preset``: the parent's live preset; ``None`` copies the parent header's.
    """
    preset: str | UnsetType = parent.agent_preset if agent_preset is None else agent_preset
    return SessionHeader(
        version=SESSION_FORMAT_VERSION, id=child_id, created_at=created_at, cwd=parent.cwd,
        parent_session=parent.id, seed_length=seed_length if seed_length > 0 else UNSET,
        origin="subagent", delegation_depth=depth, agent_preset=preset)


@checked
def delegated_policy(parent_events: Sequence[Event], approval_in_use: bool,
                     trace: Trace | None = None) -> tuple[DelegatedPolicy, ...]:
    """The policy payloads a child starts with (wire-format §2.13), in append order.

    With the parent's ``trace`` over exactly ``parent_events`` the override is read from it
    in O(1); otherwise the log is searched from the end.

    >>> delegated_policy((), approval_in_use=True)
    (ApprovalPolicyData(policy='never', source='delegation'),)
    """
    policy: list[DelegatedPolicy] = []
    # The parent's explicit override is the last sandbox/mode of its log, whatever its source.
    if trace is not None and trace.length == len(parent_events):
        if trace.sandbox_mode is not None:
            policy.append(SandboxModeData(mode=trace.sandbox_mode.mode, source="delegation"))
    else:
        for index in range(len(parent_events) - 1, -1, -1):
            event = parent_events[index]
            if isinstance(event, SandboxModeEvent):
                policy.append(SandboxModeData(mode=event.data.mode, source="delegation"))
                break
    if approval_in_use:
        policy.append(ApprovalPolicyData(policy="never", source="delegation"))
    return tuple(policy)


@checked
def one_shot_descriptor(provider_name: str, label: str | None) -> SubagentDescriptorData:
    """The ``subagent/descriptor`` of a one-shot child (wire-format §2.12)."""
    return SubagentDescriptorData(version=SUBAGENT_DESCRIPTOR_VERSION, mode="one-shot",
                                  provider=provider_name,
                                  label=UNSET if label is None else label)


@checked
def fork_seed(events: Sequence[Event], trace: Trace | None = None) -> Sequence[Event] | None:
    """A fork child's seed: the completed-turn prefix of ``events``, ``None`` when empty.

    With a ``trace`` over exactly ``events`` the cut is read from it instead of searched for.
    """
    if trace is not None and trace.length == len(events):
        cut = trace.completed_prefix_length
        prefix: Sequence[Event] = events if cut == len(events) else PrefixView(events, cut)
    else:
        prefix = _completed_turn_prefix(events)
    return prefix if len(prefix) > 0 else None


@checked
def plan_child(parent: ParentView, request: StartRequest | CheckedRequest,
               kind: Literal["fork", "spawn"], *, provider_name: str, child_id: str,
               created_at: int, capabilities: Capabilities | None = None,
               known_tools: Collection[str] | None = None) -> Result[ChildPlan, StartError]:
    """Decide a child: check what is left to check, then derive everything needed to create it.

    Args:
        parent: the delegating parent as it stands now.
        request: the delegation asked for, or the runtime's checked request (not re-checked).
        kind: ``"fork"`` seeds the child with the parent's completed turns, ``"spawn"`` not.
        provider_name: the provider's registry name (descriptor ``provider``).
        child_id: the child's session id (a fresh UUID, from the caller).
        created_at: the child's creation time, epoch milliseconds (from the caller).
        capabilities: the provider's, for a plain request; ``None``: every capability.
        known_tools: global tool names a tool filter may name; ``None`` skips that check.

    Returns:
        The plan, or the first refusal (:class:`StartError`).
    """
    checked: CheckedRequest
    if isinstance(request, StartRequest):
        match _check_request(provider_name, capabilities, request):
            case Failure(refused):
                return Failure(refused)
            case Success(checked):
                pass
    else:
        checked = request
    wanted = checked.request
    header_depth = parent.header.delegation_depth
    resolved = _resolve_child_depth(None if isinstance(header_depth, UnsetType) else header_depth,
                                   parent.options.subagent_depth, wanted.max_depth)
    if type(resolved) is Failure:
        return Failure(StartError.from_depth(resolved.failure()))
    depth = resolved.unwrap()
    if wanted.tool_filter is not None:
        match _validate_tool_filter(wanted.tool_filter, known_tools):
            case Failure(filter_error):
                return Failure(filter_error)
    seed, seed_trace = (_fork_cut(parent) if kind == "fork" else (None, None))
    sections: tuple[PromptSection, ...] = ()
    if wanted.persona is not None:
        sections = (PromptSection(name=PERSONA_SECTION_NAME, order=PERSONA_SECTION_ORDER,
                                  text=wanted.persona),)
    if checked.structured is not None:
        sections = (*sections, checked.structured.section)
    return Success(ChildPlan(
        kind=kind,
        header=_child_header(parent.header, child_id=child_id, created_at=created_at, depth=depth,
                             seed_length=0 if seed is None else len(seed),
                             agent_preset=parent.agent_preset),
        seed=seed,
        seed_trace=seed_trace,
        options=_resolve_child_options(parent.options, wanted.agent_options, depth),
        policy=_delegated_policy(parent.events, parent.approval_in_use, parent.trace),
        descriptor=checked.descriptor,
        prompt=wanted.prompt,
        sections=sections,
        context=_DELEGATION_CONTEXT,
        persona=wanted.persona,
        tool_filter=wanted.tool_filter,
        structured=checked.structured,
        depth=depth))


def _fork_cut(parent: ParentView) -> tuple[Sequence[Event] | None, Trace | None]:
    """The seed and its trace: the parent's kept prefix as it is, else found in its log."""
    kept = parent.completed
    if kept is not None and parent.trace is not None \
            and kept.trace.length == parent.trace.completed_prefix_length == len(kept.events):
        return (kept.events, kept.trace) if kept.trace.length else (None, None)
    return _fork_seed(parent.events, parent.trace), None


#: Every child's runtime-context contributions (a tuple is immutable: made once).
_DELEGATION_CONTEXT = (DELEGATION_SECTION,)

# This module's entry points call its other public functions with values they took in (or
# derived from them): plain, so a start is checked once, at the entry point it came in by.
(_check_request, _child_header, _resolve_child_options, _delegated_policy,
 _one_shot_descriptor, _fork_seed) = plain_forms(
    check_request, child_header, resolve_child_options, delegated_policy, one_shot_descriptor,
    fork_seed)
