"""Replaying DSH's recorded subagent scenarios through our runtime, and comparing the logs.

DSH's snapshot suite (examples/acp-agent/tests/acp.snapshot.ts, examples/headless-agent/tests/
subagent-inheritance.snapshot.ts) boots its real app against a replay model
(packages/test-support/llm-replay) that serves every session the ``assistant/chunk``s its own
recorded log holds, one model call per (turn, step) group, sessions bound to recorded logs by
the order of their first model call (parent first); a fork child's script comes from its own
events only (past its seed). It then compares the logs it wrote with the recorded ones after
projection: no ``seq``/``time``, ids and cwd tokenised, request-header system prompt and tool
schemas tokenised.

This module does the same with our runtime:

* :class:`ReplayModel` is one :class:`turnfork.shell.Model` for every session of a scenario:
  each call streams exactly the chunks the recorded log holds for that session's next step.
  A session is known by the agent task that calls the model; it claims the next recorded
  script on its first call.
* :func:`run_acp` composes a host the way DSH's ACP snapshot app is composed (the subagent
  tools, providers and policies), runs the parent's prompts, and returns every log; a scenario
  whose app differs composes its own host with the same parts.
* :func:`project` projects a log for comparison: ``seq`` and ``time`` dropped, UUIDs (session
  and message ids) written as one token, the header's ``createdAt`` dropped,
  the session cwd written ``{{cwd}}``, and a request header's ``system``/``tools`` (when
  present) written ``{{system}}``/``{{tools}}``. Nothing else: every other difference is a
  finding. :func:`differences` lists them event by event, and checks that both sides use
  their ids alike (one of ours always stands where one of DSH's does).
"""

from __future__ import annotations

import asyncio
import difflib
import itertools
import json
import re
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from turnfork.core import (
    AssistantChunkEvent,
    Event,
    SessionHeader,
    StreamChunk,
    decode_session,
    encode_event,
    encode_session,
)
from turnfork.shell import (
    Agent,
    ForkProvider,
    Host,
    JsonlSessionStore,
    ModelRequest,
    SpawnProvider,
    SubagentRuntime,
    SubagentTool,
)
from turnfork.shell.subagents import (
    BackgroundJobs,
    JobTools,
    ReportTool,
    SubagentControlTools,
    SubagentStart,
)

T = TypeVar("T")

__all__ = [
    "FIXTURES",
    "Log",
    "Recorded",
    "Replayed",
    "ReplayModel",
    "Projected",
    "load",
    "recorded",
    "acp_recorded",
    "model_script",
    "run_acp",
    "project",
    "differences",
    "assert_types_equal",
    "assert_replays",
    "assert_same_logs",
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dsh"
ACP = "examples__acp-agent__tests__snapshots__"
HEADLESS = "examples__headless-agent__tests__subagent-inheritance-snapshots__"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
#: DSH's headless snapshots replace every UUID with this one token (ids there are not unique).
SESSION_ID_TOKEN = "{{sessionId}}"
#: What an id is written as in a projected log (which id it was is checked apart).
ID_TOKEN = "{{id}}"
CWD_TOKEN = "{{cwd}}"


@dataclass(frozen=True)
class Log:
    """One session's log: its header and its events."""

    header: SessionHeader
    events: tuple[Event, ...]

    @property
    def own_events(self) -> tuple[Event, ...]:
        """The events past the seed (what the session's own model calls produced)."""
        seed = self.header.seed_length
        return self.events[seed if isinstance(seed, int) else 0:]


@dataclass(frozen=True)
class Recorded:
    """A DSH scenario's recorded logs: the root and its children in creation order."""

    name: str
    root: Log
    children: tuple[Log, ...]

    def logs(self) -> tuple[Log, ...]:
        return (self.root, *self.children)


def load(file_name: str) -> Log:
    """A projected DSH fixture from ``tests/fixtures/dsh`` or its ``scenarios/`` folder (seq
    restored by counting)."""
    path = FIXTURES / file_name
    if not path.exists():
        path = FIXTURES / "scenarios" / file_name
    data = path.read_bytes()
    header, events = decode_session(data, projected=True).unwrap()
    return Log(header, events)


def recorded(name: str, root: str, *children: str) -> Recorded:
    return Recorded(name, load(root), tuple(load(child) for child in children))


def acp_recorded(name: str, children: int) -> Recorded:
    """An ACP snapshot scenario's logs: ``session.jsonl`` and ``session.1.jsonl`` …"""
    return recorded(name, f"{ACP}{name}__session.jsonl",
                    *(f"{ACP}{name}__session.{n}.jsonl" for n in range(1, children + 1)))


def model_script(log: Log) -> list[list[StreamChunk]]:
    """The model calls a session made, as llm-replay derives them: the chunks of its own
    ``assistant/chunk`` events grouped by (turn, step), in log order."""
    groups: dict[tuple[int, int], list[StreamChunk]] = {}
    for event in log.own_events:
        if isinstance(event, AssistantChunkEvent):
            groups.setdefault((event.data.turn, event.data.step), []).append(event.data.chunk)
    return list(groups.values())


class ReplayError(AssertionError):
    """The runtime asked for a model call the recording does not have."""


@dataclass
class _Bound:
    index: int
    calls: int = 0


class ReplayModel:
    """Serves each session the model calls its recorded log holds (see the module notes).

    ``scripts[0]`` is the parent's; the others are the children's in the order DSH created
    them. A live session claims the next unclaimed script on its first call (DSH's
    first-call-order binding). :attr:`bound` maps each live session id to the recorded log it
    replays.
    """

    def __init__(self, scripts: Sequence[list[list[StreamChunk]]]) -> None:
        self.scripts = [list(script) for script in scripts]
        self.bound: dict[str, int] = {}
        #: Every call the recording could not serve (the loop turns each into an error).
        self.errors: list[str] = []
        self._cursors: dict[str, _Bound] = {}

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        try:
            return self._stream()
        except ReplayError as error:
            self.errors.append(str(error))
            raise

    def _stream(self) -> AsyncIterator[StreamChunk]:
        session = _calling_session()
        cursor = self._cursors.get(session)
        if cursor is None:
            index = len(self._cursors)
            if index >= len(self.scripts):
                raise ReplayError(f"session {session} makes a model call, but the recording "
                                  f"has only {len(self.scripts)} sessions")
            cursor = self._cursors[session] = _Bound(index)
            self.bound[session] = index
        script = self.scripts[cursor.index]
        if cursor.calls >= len(script):
            raise ReplayError(f"session {session} (recorded log {cursor.index}) makes model "
                              f"call {cursor.calls + 1}; its recording holds {len(script)}")
        chunks = script[cursor.calls]
        cursor.calls += 1
        return _play(chunks)

    def unconsumed(self) -> list[str]:
        """Recorded sessions never bound, or bound with calls left (llm-replay's
        ``assertConsumed``)."""
        left = []
        claimed = {cursor.index: cursor for cursor in self._cursors.values()}
        for index, script in enumerate(self.scripts):
            cursor = claimed.get(index)
            made = 0 if cursor is None else cursor.calls
            if made != len(script):
                left.append(f"recorded log {index}: {made} of {len(script)} model calls made")
        return left


def _calling_session() -> str:
    """The id of the agent whose loop task calls the model (our agent's task is named
    ``agent:<session id>``)."""
    task = asyncio.current_task()
    name = "" if task is None else task.get_name()
    if not name.startswith("agent:"):
        raise ReplayError(f"a model call outside an agent's loop task ({name!r}): cannot tell "
                          "which session it belongs to")
    return name.removeprefix("agent:")


async def _play(chunks: Iterable[StreamChunk]) -> AsyncIterator[StreamChunk]:
    for chunk in chunks:
        await asyncio.sleep(0)  # an await point per chunk, like a network stream
        yield chunk


# --------------------------------------------------------------------------- our side

#: The ACP app's persona (examples/acp-agent/cordis.snapshot.yml); the projection hides the
#: system prompt, but DSH's request header always has one.
ACP_PERSONA = ("You are a coding assistant powered by the deepseek-v4-flash model. Your working "
               "directory is /workspace/acp. Verify your work by running the code or tests. Keep "
               "answers brief and factual.")
ACP_CWD = "/workspace/acp"
PROVIDER = "deepseek-official"
MODEL = "deepseek-v4-flash"


@dataclass
class Run:
    """What a scenario run left: the parent and every child, and the model that bound them."""

    parent: Agent
    model: ReplayModel
    children: dict[str, Agent] = field(default_factory=dict)

    def logs(self) -> tuple[Log, ...]:
        """The parent's log, then each child's in the order of the recorded logs it replayed
        (a child that never called the model follows them, in creation order)."""
        by_index = {index: sid for sid, index in self.model.bound.items()}
        ordered = [by_index[i] for i in sorted(by_index) if by_index[i] != self.parent.id]
        ordered += [sid for sid in self.children if sid not in ordered]
        return (_log_of(self.parent), *(_log_of(self.children[sid]) for sid in ordered))


def _log_of(agent: Agent) -> Log:
    return Log(agent.session.header, tuple(agent.session.events))


def watch_children(runtime: SubagentRuntime, into: dict[str, Agent]) -> None:
    """Record every child the runtime publishes (in creation order)."""

    def seen(event: object) -> None:
        if isinstance(event, SubagentStart):
            child = event.run.local_agent
            assert isinstance(child, Agent), f"child {event.child_id} is not an in-process agent"
            into[event.child_id] = child

    runtime.subscribe(seen)


def run_bounded(main: Callable[[], Awaitable[T]], timeout: float = 10.0) -> T:
    """Run ``main`` under asyncio.run, bounded so a bug fails instead of hanging."""

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await main()

    return asyncio.run(bounded())


Prepare: TypeAlias = Callable[[Host, SubagentRuntime], None]


@dataclass(frozen=True)
class Replayed:
    """Our side of a scenario: every log (parent first, children by the recording each
    replayed) and what the replay model could not match."""

    logs: tuple[Log, ...]
    #: Replay failures and recorded model calls never made (llm-replay's ``assertConsumed``).
    replay_problems: tuple[str, ...] = ()


def replayed(run: Run) -> Replayed:
    return Replayed(run.logs(), (*run.model.errors, *run.model.unconsumed()))


def run_acp(recording: Recorded, prompts: Sequence[str], *, subagent_max_depth: int = 1,
            prepare: Prepare | None = None,
            prepare_parent: Callable[[Agent], None] | None = None,
            child_ids: Sequence[str] = ()) -> Replayed:
    """Run an ACP snapshot scenario through our runtime, composed as DSH's snapshot app
    (examples/acp-agent/cordis.yml + cordis.snapshot.yml) is for the subagent scenarios:

    * JSONL session persistence (here in a temporary directory);
    * model route ``deepseek-official``/``deepseek-v4-flash``, served by :class:`ReplayModel`;
    * sandbox ``danger-full-access`` and approval ``never`` (``DSH_SNAPSHOT`` set), the
      approval service composed (a child gets ``approval/policy never``), the session-title
      plugin composed (fallback titles);
    * providers ``spawn`` and ``fork``; the ``subagent`` tool on ``spawn`` with
      ``backgroundMode: continuable`` (``maxDepth`` 1 or the scenario's), ``subagent_fork`` on
      ``fork`` (``maxDepth`` 1, one-shot, background disabled); the job tools, the control
      tools (``send_message``, ``interrupt_agent``, ``list_agents``) and the child-scoped
      ``report`` tool.

    Each prompt is one ACP ``prompt`` step: queued, then awaited until the parent and every
    background child are quiet (DSH's driver waits for a settlement-notice turn too).
    ``prepare`` may add what a scenario's fixture plugin adds to the app, ``prepare_parent``
    what it does to the root agent once created; ``child_ids`` are the ids the continuation
    manager gives its first children (an authored scenario names them in its text).
    """

    async def main(root: str) -> Replayed:
        host = Host(store=JsonlSessionStore(root), sandbox_mode="danger-full-access",
                    approval_default="never")
        model = ReplayModel([model_script(log) for log in recording.logs()])
        host.models.register(PROVIDER, model)
        runtime = SubagentRuntime(host)
        runtime.register_provider(SpawnProvider("spawn"))
        runtime.register_provider(ForkProvider("fork"))
        runtime.continuation.child_ids = itertools.chain(child_ids, iter(host.ids, None)).__next__
        jobs = BackgroundJobs(host)
        JobTools(jobs).install()
        SubagentTool(provider="spawn", tool_name="subagent", max_depth=subagent_max_depth,
                     background_mode="continuable", jobs=jobs).install(host)
        SubagentTool(provider="fork", tool_name="subagent_fork", max_depth=1,
                     enable_run_in_background=False).install(host)
        SubagentControlTools().install(host)
        ReportTool().install(host)
        children: dict[str, Agent] = {}
        watch_children(runtime, children)
        if prepare is not None:
            prepare(host, runtime)
        parent = host.create_agent(provider=PROVIDER, model=MODEL, cwd=ACP_CWD,
                                   system=ACP_PERSONA, approval=True)
        if prepare_parent is not None:
            prepare_parent(parent)
        try:
            for prompt in prompts:
                parent.followup(prompt)
                while parent.running or runtime.continuation.activations():
                    await parent.when_idle()
                    await asyncio.sleep(0.001)
            return replayed(Run(parent, model, children))
        finally:
            await host.aclose()

    with tempfile.TemporaryDirectory(prefix="turnfork-replay-") as root:
        return run_bounded(lambda: main(root))


# --------------------------------------------------------------------------- the projection


@dataclass(frozen=True)
class Projected:
    """One log projected for comparison: its header record and event records with every id
    written as one token, and the ids each record held, in order."""

    header: dict[str, Any]
    events: list[dict[str, Any]]
    header_ids: list[str]
    event_ids: list[list[str]]


def _scrub(value: Any, found: list[str], cwd: str | None, token: str,
           extra_ids: Sequence[str]) -> Any:
    if isinstance(value, str):
        if cwd:
            value = value.replace(cwd, CWD_TOKEN)
        for extra in extra_ids:
            if extra in value:
                found.append(extra)
                value = value.replace(extra, token)

        def replaced(match: re.Match[str]) -> str:
            found.append(match.group(0).lower())
            return token

        return _UUID.sub(replaced, value)
    if isinstance(value, list):
        return [_scrub(item, found, cwd, token, extra_ids) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item, found, cwd, token, extra_ids) for key, item in value.items()}
    return value


def _header_record(header: SessionHeader) -> dict[str, Any]:
    line = encode_session(header, ()).split(b"\n", 1)[0]
    record: dict[str, Any] = json.loads(line)
    record.pop("createdAt", None)
    return record


def _event_record(event: Event) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(encode_event(event))
    record.pop("seq", None)
    record.pop("time", None)
    if record["type"] == "request/header":
        header = record["data"].get("header", {})
        if "system" in header:
            header["system"] = "{{system}}"
        if "tools" in header:
            header["tools"] = "{{tools}}"
    return record


def project(log: Log, *, token: str = ID_TOKEN, extra_ids: Sequence[str] = ()) -> Projected:
    """``log`` projected as DSH's snapshot harness projects a session log (see the module
    notes): ids become ``token`` (their values are kept aside, for :func:`differences` to check
    that both logs use theirs alike)."""
    cwd = log.header.cwd if isinstance(log.header.cwd, str) else None
    if cwd == CWD_TOKEN:
        cwd = None
    header_ids: list[str] = []
    header = _scrub(_header_record(log.header), header_ids, cwd, token, extra_ids)
    events, event_ids = [], []
    for event in log.events:
        found: list[str] = []
        events.append(_scrub(_event_record(event), found, cwd, token, extra_ids))
        event_ids.append(found)
    return Projected(header, events, header_ids, event_ids)


def _brief(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "…"


def _first_difference(ours: Any, theirs: Any, path: str = "") -> str:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in [*theirs, *(k for k in ours if k not in theirs)]:
            if key not in ours:
                return f"{path}.{key}: missing in ours (DSH: {_brief(theirs[key], 200)})"
            if key not in theirs:
                return f"{path}.{key}: only in ours ({_brief(ours[key], 200)})"
            if ours[key] != theirs[key]:
                return _first_difference(ours[key], theirs[key], f"{path}.{key}")
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{index}]")
    return f"{path or '.'}: ours {_brief(ours)} / DSH {_brief(theirs)}"


def _kind(record: dict[str, Any]) -> str:
    """What events are aligned by: the type, and a user message's source."""
    if record["type"] == "user/message":
        source = record["data"].get("source", {})
        return f"user/message:{source.get('kind')}:{source.get('plugin', '')}"
    return str(record["type"])


class _IdPairing:
    """Both sides must use their ids alike: one of ours always stands where one of DSH's
    does."""

    def __init__(self) -> None:
        self.ours: dict[str, str] = {}
        self.theirs: dict[str, str] = {}

    def check(self, where: str, ours: Sequence[str], theirs: Sequence[str]) -> str | None:
        for a, b in zip(ours, theirs, strict=True):
            was_b, was_a = self.ours.get(a), self.theirs.get(b)
            if was_b not in (None, b):
                return (f"{where}: our id {a} stands where DSH has {b}; before, it stood "
                        f"where DSH has {was_b}")
            if was_a not in (None, a):
                return (f"{where}: our id {a} stands where DSH has {b}; before, DSH's {b} "
                        f"stood where ours has {was_a}")
            self.ours[a], self.theirs[b] = b, a
        return None


def differences(ours: Sequence[Projected], theirs: Sequence[Projected], *,
                names: Sequence[str] = (), check_ids: bool = True,
                limit: int = 20) -> list[str]:
    """Where two scenarios' projected logs differ: per log the header, then the events aligned
    by their type sequence (an event only one side has is named as such), each with its seq on
    both sides; then whether the ids are used alike across all logs (``check_ids``)."""
    found: list[str] = []
    if len(ours) != len(theirs):
        found.append(f"ours has {len(ours)} sessions, DSH's recording {len(theirs)}")
    pairing = _IdPairing()
    for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        name = names[index] if index < len(names) else f"log {index}"
        if a.header != b.header:
            found.append(f"{name}: header {_first_difference(a.header, b.header)}")
        elif check_ids and (clash := pairing.check(f"{name}: header", a.header_ids,
                                                   b.header_ids)):
            found.append(clash)
        matcher = difflib.SequenceMatcher(a=[_kind(e) for e in a.events],
                                          b=[_kind(e) for e in b.events], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    mine, recorded_event = a.events[i1 + k], b.events[j1 + k]
                    where = f"{name}: ours seq {i1 + k} / DSH seq {j1 + k} {mine['type']}"
                    if mine != recorded_event:
                        found.append(f"{where}: {_first_difference(mine, recorded_event)}")
                    elif check_ids and (clash := pairing.check(
                            where, a.event_ids[i1 + k], b.event_ids[j1 + k])):
                        found.append(clash)
                continue
            if i2 > i1:
                found.append(f"{name}: ours seq {i1}..{i2 - 1} only in ours: "
                             + ", ".join(e["type"] for e in a.events[i1:i2][:12])
                             + f" (first: {_brief(a.events[i1])})")
            if j2 > j1:
                found.append(f"{name}: DSH seq {j1}..{j2 - 1} missing in ours: "
                             + ", ".join(e["type"] for e in b.events[j1:j2][:12])
                             + f" (first: {_brief(b.events[j1])})")
    if len(found) > limit:
        found = [*found[:limit], f"… and {len(found) - limit} more"]
    return found


def assert_types_equal(ours: Sequence[Event], theirs: Sequence[Event]) -> None:
    """Two event sequences have the same types in the same order (named where they part)."""
    from turnfork.core import event_type

    mine, recorded_types = [event_type(e) for e in ours], [event_type(e) for e in theirs]
    if mine == recorded_types:
        return
    report = []
    matcher = difflib.SequenceMatcher(a=mine, b=recorded_types, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            report.append(f"{tag}: ours [{i1}:{i2}] {mine[i1:i2]} / DSH [{j1}:{j2}] "
                          f"{recorded_types[j1:j2]}")
    raise AssertionError("event types differ from DSH's (positions past the seed):\n"
                         + "\n".join(report))


def assert_replays(ours: Replayed, recording: Recorded, **options: Any) -> None:
    """The replay served every recorded model call and nothing else, and every log of ours
    equals DSH's (:func:`assert_same_logs`); the logs are named parent, child 1, …"""
    names = ["parent", *(f"child {n}" for n in range(1, len(recording.children) + 1))]
    problems = [f"replay: {problem}" for problem in ours.replay_problems]
    try:
        assert_same_logs(ours.logs, recording.logs(), names=names, **options)
    except AssertionError as failed:
        raise AssertionError("\n".join([str(failed), *problems])) from None
    assert not problems, "\n".join(problems)


def assert_same_logs(ours: Sequence[Log], theirs: Sequence[Log], *,
                     names: Sequence[str] = (), blanket_ids: bool = False,
                     session_ids: Sequence[str] = (),
                     recorded_aliases: Mapping[str, str] | None = None) -> None:
    """Every log of ours equals DSH's, event for event, after the projection.

    ``blanket_ids``: DSH's recording holds ``{{sessionId}}`` for every id (its headless
    snapshots), so ours are written so too and only their places are compared;
    ``session_ids``: further ids of ours that are not UUIDs (a named session);
    ``recorded_aliases``: ids of an authored recording that stand for another of its ids (an
    author's slip), each mapped to the id it stands for before the ids are compared.
    """
    token = SESSION_ID_TOKEN if blanket_ids else ID_TOKEN
    mine = [project(log, token=token, extra_ids=session_ids) for log in ours]
    aliases = recorded_aliases or {}
    recorded_logs = [
        replace(projected, header_ids=[aliases.get(i, i) for i in projected.header_ids],
                event_ids=[[aliases.get(i, i) for i in ids] for ids in projected.event_ids])
        for projected in (project(log, token=token) for log in theirs)]
    report = differences(mine, recorded_logs, names=names, check_ids=not blanket_ids)
    assert not report, "our logs differ from DSH's:\n" + "\n".join(report)
