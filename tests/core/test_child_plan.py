"""The child plan: what plan_child decides, checked against real DSH children and properties."""

from __future__ import annotations

from typing import Literal

import msgspec
from _delegation_helpers import SNAPSHOTS, Log, load, tool_result
from hypothesis import given
from hypothesis import strategies as st
from msgspec import UNSET, Raw
from returns.result import Result

from turnfork.core import (
    DELEGATION_SECTION,
    AgentOptions,
    ApprovalPolicyData,
    Capabilities,
    ChildPlan,
    CompletedPrefix,
    ParentView,
    PrefixView,
    RuntimeOptions,
    SandboxModeData,
    SessionHeader,
    StartError,
    StartRequest,
    SubagentDescriptorData,
    TextBlock,
    ToolCallEvent,
    ToolRestriction,
    encode_log,
    plan_child,
    resolve_child_options,
    trace_log,
)

PROMPT = (TextBlock(text="Recall the codeword."),)
INFLIGHT_FORK_PARENT = "derived/fork-parent-inflight-at-subagent-call.DERIVED.jsonl"
PARENT = SessionHeader(id="parent", created_at=5, cwd="/work", delegation_depth=0)


def _plan(parent: ParentView, request: StartRequest, kind: Literal["fork", "spawn"] = "spawn",
          capabilities: Capabilities | None = None,
          known_tools: frozenset[str] | None = None) -> Result[ChildPlan, StartError]:
    return plan_child(parent, request, kind, provider_name=kind, child_id="child", created_at=9,
                      capabilities=capabilities, known_tools=known_tools)


def test_fork_plan_reproduces_the_dsh_fork_child() -> None:
    """Ensures the plan for the in-flight fork parent matches DSH's fork child: header, seed,
    policy and descriptor."""
    parent_header, parent_events = load(INFLIGHT_FORK_PARENT)
    child_header, child_events = load(f"{SNAPSHOTS}subagent-fork-in-process__session.1.jsonl")
    plan = plan_child(
        ParentView(header=parent_header, events=parent_events, approval_in_use=True),
        StartRequest(prompt=PROMPT, label="Recall project codeword"), "fork",
        provider_name="fork", child_id=child_header.id, created_at=child_header.created_at,
    ).unwrap()
    assert plan.header == child_header
    assert plan.seed is not None and len(plan.seed) == 42
    assert list(plan.seed) == list(child_events[:42])
    assert plan.policy == (child_events[43].data,)
    assert plan.descriptor == child_events[47].data
    assert plan.depth == 1 and plan.options.subagent_depth == 1


def test_fork_seed_is_a_view_not_a_copy() -> None:
    """Ensures the seed shares the parent's event objects."""
    _, parent_events = load(INFLIGHT_FORK_PARENT)
    plan = _plan(ParentView(header=PARENT, events=parent_events), StartRequest(prompt=PROMPT),
                 "fork").unwrap()
    assert isinstance(plan.seed, PrefixView)
    assert all(plan.seed[i] is parent_events[i] for i in range(len(plan.seed)))


def test_fork_seed_from_a_trace_equals_the_scanned_one() -> None:
    """Ensures a parent trace gives the same seed as scanning for the last turn/end."""
    _, parent_events = load(INFLIGHT_FORK_PARENT)
    trace = trace_log(parent_events).unwrap()
    with_trace = _plan(ParentView(header=PARENT, events=parent_events, trace=trace),
                       StartRequest(prompt=PROMPT), "fork").unwrap()
    assert with_trace.seed is not None and len(with_trace.seed) == 42


def test_a_kept_completed_prefix_is_the_seed_as_it_is() -> None:
    """The parent's completed-turn prefix and its trace, read together, are the child's seed
    and seed trace, the same objects (no view is rebuilt); one that does not match the
    parent's trace is not trusted (the cut is found in the log)."""
    _, parent_events = load(INFLIGHT_FORK_PARENT)
    trace = trace_log(parent_events).unwrap()
    prefix = PrefixView(parent_events, trace.completed_prefix_length)
    at_cut = trace_log(prefix).unwrap()
    kept = CompletedPrefix(events=prefix, trace=at_cut)
    plan = _plan(ParentView(header=PARENT, events=parent_events, trace=trace, completed=kept),
                 StartRequest(prompt=PROMPT), "fork").unwrap()
    assert plan.seed is prefix and plan.seed_trace is at_cut
    stale = CompletedPrefix(events=PrefixView(parent_events, 5),
                            trace=trace_log(parent_events[:5]).unwrap())
    found = _plan(ParentView(header=PARENT, events=parent_events, trace=trace, completed=stale),
                  StartRequest(prompt=PROMPT), "fork").unwrap()
    assert found.seed is not None and len(found.seed) == 42 and found.seed_trace is None
    empty = CompletedPrefix(events=PrefixView(parent_events, 0), trace=trace_log(()).unwrap())
    fresh = trace_log(parent_events[:3]).unwrap()
    unseeded = _plan(ParentView(header=PARENT, events=parent_events[:3], trace=fresh,
                                completed=empty), StartRequest(prompt=PROMPT), "fork").unwrap()
    assert unseeded.seed is None and unseeded.seed_trace is None


def test_spawn_plan_reproduces_the_dsh_spawn_child() -> None:
    """Ensures a spawn plan has no seed and matches DSH's spawn child header and events."""
    parent_header, parent_events = load(f"{SNAPSHOTS}subagent-spawn-in-process__session.jsonl")
    child_header, child_events = load(f"{SNAPSHOTS}subagent-spawn-in-process__session.1.jsonl")
    plan = plan_child(ParentView(header=parent_header, events=parent_events, approval_in_use=True),
                      StartRequest(prompt=PROMPT, label="Reply with CHILD_OK"), "spawn",
                      provider_name="spawn", child_id=child_header.id,
                      created_at=child_header.created_at).unwrap()
    assert plan.seed is None
    assert plan.header == child_header
    assert plan.header.seed_length is UNSET
    assert plan.policy == (child_events[0].data,)
    assert plan.descriptor == child_events[4].data


def test_parent_sandbox_override_is_delegated() -> None:
    """Ensures the parent's explicit sandbox mode reaches the child as a delegation event
    (headless parent-override fixture, no approval service)."""
    name = "examples__headless-agent__tests__subagent-inheritance-snapshots__parent-override__"
    parent_header, parent_events = load(f"{name}parent.expected.jsonl")
    child_header, child_events = load(f"{name}child.expected.jsonl")
    call = next(i for i, e in enumerate(parent_events) if isinstance(e, ToolCallEvent))
    plan = plan_child(ParentView(header=parent_header, events=parent_events[:call + 1]),
                      StartRequest(prompt=PROMPT, label="Delegated write probe"), "spawn",
                      provider_name="spawn", child_id=child_header.id,
                      created_at=child_header.created_at).unwrap()
    assert plan.policy == (child_events[0].data,)
    assert plan.policy == (SandboxModeData(mode="read-only", source="delegation"),)
    assert plan.header == child_header


def test_only_the_last_sandbox_mode_counts_and_precedes_approval() -> None:
    """Ensures the last sandbox/mode wins and approval follows it."""
    events = Log().sandbox("read-only").turn(1).sandbox("workspace-write", delegated=True).events
    plan = _plan(ParentView(header=PARENT, events=events, approval_in_use=True),
                 StartRequest(prompt=PROMPT)).unwrap()
    assert plan.policy == (SandboxModeData(mode="workspace-write", source="delegation"),
                           ApprovalPolicyData(policy="never", source="delegation"))


def test_no_policy_without_override_or_approval() -> None:
    """Ensures nothing is delegated when the parent has neither."""
    assert _plan(ParentView(header=PARENT), StartRequest(prompt=PROMPT)).unwrap().policy == ()


def test_fork_without_a_completed_turn_has_no_seed() -> None:
    """Ensures a parent still in its first turn forks like a spawn (no seed, no seedLength)."""
    events = Log().user("hi").open_turn(1).events
    plan = _plan(ParentView(header=PARENT, events=events), StartRequest(prompt=PROMPT),
                 "fork").unwrap()
    assert plan.seed is None
    assert plan.header.seed_length is UNSET


def test_fork_seed_stops_at_the_last_turn_end() -> None:
    """Ensures trailing between-turn events and the open turn stay out of the seed."""
    log = Log().turn(1, text="one").turn(2, text="two")
    log.user("queued").open_turn(3)
    plan = _plan(ParentView(header=PARENT, events=log.events), StartRequest(prompt=PROMPT),
                 "fork").unwrap()
    assert plan.seed is not None
    assert plan.header.seed_length == len(plan.seed) == 10


def test_child_header_copies_lineage() -> None:
    """Ensures cwd, parent id, preset, origin and depth are stamped; version is 0."""
    parent = SessionHeader(id="p", created_at=1, cwd="/w", delegation_depth=2, agent_preset="dev")
    header = _plan(ParentView(header=parent), StartRequest(prompt=PROMPT)).unwrap().header
    assert header == SessionHeader(version=0, id="child", created_at=9, cwd="/w",
                                   parent_session="p", origin="subagent", delegation_depth=3,
                                   agent_preset="dev")


def test_live_preset_wins_over_the_header() -> None:
    """Ensures the parent's live composed preset is recorded, not a stale header one."""
    parent = SessionHeader(id="p", created_at=1, agent_preset="old")
    plan = _plan(ParentView(header=parent, agent_preset="new"), StartRequest(prompt=PROMPT))
    assert plan.unwrap().header.agent_preset == "new"


def test_descriptor_is_one_shot_and_label_optional() -> None:
    """Ensures the descriptor is version 2 one-shot, with the label only when given."""
    plan = _plan(ParentView(header=PARENT), StartRequest(prompt=PROMPT)).unwrap()
    assert plan.descriptor == SubagentDescriptorData(version=2, mode="one-shot", provider="spawn")
    assert msgspec.json.encode(plan.descriptor) == \
        b'{"version":2,"mode":"one-shot","provider":"spawn"}'


def test_sections_persona_and_structured_output() -> None:
    """The delegation statement is a runtime-context contribution, not a prompt section; the
    child's own sections are the persona (order 0) and the structured-output instruction (190)
    (DSH child-agent.ts applyChildComposition)."""
    request = StartRequest(prompt=PROMPT, persona="You are terse.",
                           output_schema=Raw(b'{"type":"object"}'))
    plan = _plan(ParentView(header=PARENT), request).unwrap()
    assert [(s.name, s.order, s.kind) for s in plan.sections] == [
        ("deployment:persona", 0, "section"), ("tool:structured_output", 190, "section")]
    assert plan.context == (DELEGATION_SECTION,)
    assert DELEGATION_SECTION.kind == "context"
    assert plan.sections[0].text == "You are terse."
    assert plan.structured is not None
    assert plan.structured.tool.name == "structured_output"
    assert bytes(plan.structured.tool.parameters) == b'{"type":"object"}'


def test_delegation_context_text_is_dsh_exact() -> None:
    """Ensures the delegation sentence is DSH's, byte for byte (seen in its child logs)."""
    assert DELEGATION_SECTION.text == (
        "You are a delegated subagent: your permission scope was fixed when you were started and "
        "cannot be widened from inside this session — operations that require approval are "
        "rejected automatically. When the task needs access beyond that scope, do not retry the "
        "denied operation; state the limitation in your reply so the delegating agent can handle "
        "it.")
    _, child_events = load(f"{SNAPSHOTS}subagent-spawn-in-process__session.1.jsonl")
    assert DELEGATION_SECTION.text in encode_log(child_events).decode()


def test_depth_refusal_matches_the_depth_two_fixture() -> None:
    """Ensures the depth-2 grandchild's delegation is refused with the fixture's text."""
    header, events = load(f"{SNAPSHOTS}subagent-depth-two-rejection__session.2.jsonl")
    error = _plan(ParentView(header=header, events=events),
                  StartRequest(prompt=PROMPT, max_depth=2)).failure()
    assert (f"Error: {error.message}", True) == tool_result(events[18])
    assert error.error_info() is None


def test_checks_run_in_dsh_order() -> None:
    """Ensures capabilities are checked before depth, and depth before the tool filter."""
    deep = ParentView(header=SessionHeader(id="p", created_at=1, delegation_depth=5))
    request = StartRequest(prompt=PROMPT, max_depth=1, tool_filter=ToolRestriction())
    assert _plan(deep, request, capabilities=Capabilities()).failure().code == \
        "UNSUPPORTED_CAPABILITY"
    assert _plan(deep, request).failure().code == "DEPTH"
    shallow = ParentView(header=PARENT)
    assert _plan(shallow, request).failure().code == "INVALID_TOOL_FILTER"


def test_bad_schema_is_refused_before_depth() -> None:
    """Ensures an unsupported output schema is refused (before any child exists)."""
    request = StartRequest(prompt=PROMPT, output_schema=Raw(b'{"type":"string"}'))
    error = _plan(ParentView(header=PARENT), request).failure()
    assert error.name == "JsonSchemaError"
    assert error.code == "UNSUPPORTED_SCHEMA"


def test_tool_filter_checked_against_known_tools() -> None:
    """Ensures unknown tool names are refused when the known tools are given."""
    request = StartRequest(prompt=PROMPT, tool_filter=ToolRestriction(allow=("web",)))
    assert _plan(ParentView(header=PARENT), request,
                 known_tools=frozenset({"read"})).failure().code == "INVALID_TOOL_FILTER"
    plan = _plan(ParentView(header=PARENT), request, known_tools=frozenset({"web"})).unwrap()
    assert plan.tool_filter == ToolRestriction(allow=("web",))


names = st.none() | st.text(min_size=1, max_size=8)
tokens = st.none() | st.integers(min_value=1, max_value=10**6)


@given(parent=st.builds(RuntimeOptions, provider=names, model=names, max_tokens=tokens,
                        subagent_depth=st.none() | st.integers(0, 5)),
       requested=st.none() | st.builds(AgentOptions, provider=names, model=names,
                                       max_tokens=tokens),
       depth=st.integers(1, 100))
def test_explicit_overrides_win_and_absent_ones_inherit(
        parent: RuntimeOptions, requested: AgentOptions | None, depth: int) -> None:
    """Ensures each option is the request's when given, else the parent's; depth is stamped."""
    child = resolve_child_options(parent, requested, depth)
    wanted = requested or AgentOptions()
    for field in ("provider", "model", "max_tokens"):
        override = getattr(wanted, field)
        assert getattr(child, field) == (getattr(parent, field) if override is None else override)
    assert child.subagent_depth == depth


@given(header_depth=st.integers(0, 20), runtime_depth=st.none() | st.integers(0, 20),
       model=names)
def test_plan_options_follow_the_parent(header_depth: int, runtime_depth: int | None,
                                        model: str | None) -> None:
    """Ensures a plan's options inherit the parent's route and carry the child depth, which
    equals the header's delegationDepth."""
    parent = ParentView(header=SessionHeader(id="p", created_at=1, delegation_depth=header_depth),
                        options=RuntimeOptions(provider="deepseek", model="v4",
                                               subagent_depth=runtime_depth))
    plan = _plan(parent, StartRequest(prompt=PROMPT, agent_options=AgentOptions(model=model)))
    child = plan.unwrap()
    assert child.options.provider == "deepseek"
    assert child.options.model == (model or "v4")
    assert child.options.subagent_depth == child.header.delegation_depth == child.depth
    assert child.depth == max(header_depth, runtime_depth or 0) + 1
