"""The background cases of DSH ``packages/subagent/tool-subagent/tests/tool-subagent.spec.ts``
(the schema's ``run_in_background`` and its concurrency, 71–150 and 336; "background mode",
776–1075; "continuable background mode", 1077–1238; "background preflight failure", 1240–1286)
and ``packages/subagent/subagent/tests/run-settlement.spec.ts`` (10–86), case by case: each test
names the line of the case it ports. DSH's scripted provider is :class:`_Scripted` here."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _continuation_spec import Spec, eventually, no_activation, park, persisted, spec_host
from _shell_helpers import run, types
from _subagent_helpers import result_texts

from turnfork.core import (
    CheckedRequest,
    SubagentResult,
    TextBlock,
    ToolOutcome,
    ToolRestriction,
    ToolResultEvent,
    subagent_tool_schema,
)
from turnfork.core.control import BackgroundValue, ContinuableValue, ForegroundValue
from turnfork.core.jobs import JobOutcome, run_outcome, with_dispose_failure
from turnfork.shell import Agent, Reply, SubagentTool
from turnfork.shell.abort import AbortSignal
from turnfork.shell.subagents import (
    ALL_CAPABILITIES,
    BackgroundJobs,
    ContinuableSeed,
    JobTools,
)
from turnfork.shell.tools import ToolContext, execute_call

_calls = [0]


async def _call(spec: Spec, name: str, args: dict[str, Any], agent: Agent | None = None,
                ) -> ToolOutcome:
    _calls[0] += 1
    tool = spec.host.tools.get(name)
    assert tool is not None
    arguments = json.dumps(args)
    return await execute_call(tool, arguments, ToolContext(
        agent=agent if agent is not None else spec.parent,  # type: ignore[arg-type]
        call_id=f"call-{_calls[0]}", tool_name=name, turn=1, step=1, arguments=arguments))


@dataclass(eq=False)
class _Run:
    """A run of :class:`_Scripted` (no local agent)."""

    id: str
    parent: Agent
    result: asyncio.Future[SubagentResult]
    on_dispose: Callable[[], Awaitable[None]] | None = None
    disposed: bool = False
    label: str | None = None
    seed_length: int = 0
    local_agent: None = None

    async def dispose(self) -> None:
        self.disposed = True
        if self.on_dispose is not None:
            await self.on_dispose()


@dataclass(eq=False)
class _Scripted:
    """DSH's scripted provider: ``begin(request, signal)`` makes the run (or fails)."""

    provider_name: str
    begin: Callable[[CheckedRequest, AbortSignal | None], Awaitable[Any]]
    prepare: Callable[[Any], ContinuableSeed] | None = None
    capabilities: Any = ALL_CAPABILITIES
    inherits_parent_context: bool = False
    starts: list[CheckedRequest] = field(default_factory=list)

    async def start(self, runtime: Any, request: CheckedRequest, *, parent: Agent,
                    signal: AbortSignal | None) -> Any:
        self.starts.append(request)
        made = await self.begin(request, signal)
        if isinstance(made, SubagentResult):
            future: asyncio.Future[SubagentResult] = asyncio.get_running_loop().create_future()
            future.set_result(made)
            return _Run(id=f"scripted-subagent:{self.provider_name}:{parent.id}", parent=parent,
                        result=future)
        made.parent = parent
        return made

    def __getattr__(self, name: str) -> Any:
        if name == "prepare_continuable" and self.prepare is not None:
            return self.prepare
        raise AttributeError(name)


def _answer(text: str, stop_reason: str = "completed", **fields: Any) -> Callable[..., Any]:
    async def begin(request: CheckedRequest, signal: AbortSignal | None) -> SubagentResult:
        return SubagentResult(output=(TextBlock(text=text),), stop_reason=stop_reason, **fields)
    return begin


def _until_aborted(error: Callable[[], BaseException]) -> Callable[..., Any]:
    """A start that waits for its signal and then fails (DSH's pending provider readiness)."""

    async def begin(request: CheckedRequest, signal: AbortSignal | None) -> Any:
        assert signal is not None
        aborted = asyncio.Event()
        signal.add_listener(lambda reason: aborted.set())
        await aborted.wait()
        raise error()
    return begin


_JOBS: dict[int, BackgroundJobs] = {}


def _jobs(spec: Spec) -> BackgroundJobs:
    return _JOBS[id(spec.host)]


def _jobs_host(tmp_path: Path, provider: _Scripted | None = None, *, tools: bool = True,
               **tool_options: Any) -> Spec:
    """The parent of DSH's ``backgroundSetup``: a job registry (and the job tools) and the
    ``subagent`` tool over ``provider`` (DSH's default scripted ``mock``)."""
    spec = spec_host(tmp_path)
    park(spec.parent)
    jobs = BackgroundJobs(spec.host)
    _JOBS[id(spec.host)] = jobs
    if tools:
        JobTools(jobs).install()
    scripted = provider or _Scripted("mock", _answer("child says hi"))
    spec.host.subagents.register_provider(scripted)  # type: ignore[arg-type]
    SubagentTool(provider=scripted.provider_name, jobs=jobs, max_depth=None,
                 **tool_options).install(spec.host)
    return spec


def _continuable_host(tmp_path: Path) -> Spec:
    """DSH's ``continuableSetup``: the spawn provider behind a continuable ``subagent``, one
    scripted answer."""
    spec = spec_host(tmp_path, [Reply.text("continuable answer")])
    park(spec.parent)
    SubagentTool(provider="spawn", background_mode="continuable").install(spec.host)
    return spec


def _background(description: str = "d") -> dict[str, Any]:
    return {"description": description, "prompt": "p", "run_in_background": True}


# --------------------------------------------------------------------------- the tool


def test_continuable_mode_needs_a_provider_that_prepares_continuable_children(
        tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:71 — a continuable instance on a provider without
    ``prepare_continuable`` is refused when it is mounted: ``provider "mock" does not support
    `backgroundMode: continuable```."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        spec.host.subagents.register_provider(_Scripted("mock", _answer("x")))  # type: ignore[arg-type]
        with pytest.raises(ValueError, match='provider "mock" does not support '
                                             "`backgroundMode: continuable`"):
            SubagentTool(provider="mock", background_mode="continuable",
                         max_depth=None).install(spec.host)
        await spec.host.aclose()

    run(main)


def test_the_default_tool_offers_run_in_background(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:103 — by default the model sees ``description``, ``prompt`` and
    ``run_in_background`` (no provider parameter), and the description names ``job_output``
    (on earlier code the default one-shot tool offered only the first two)."""

    async def main() -> None:
        spec = _jobs_host(tmp_path)
        tool = spec.host.tools.get("subagent")
        assert tool is not None
        properties = json.loads(bytes(tool.schema.parameters))["properties"]
        assert sorted(properties) == ["description", "prompt", "run_in_background"]
        assert "job_output" in tool.description
        await spec.host.aclose()

    run(main)


def test_a_disabled_instance_has_no_run_in_background_and_refuses_a_forced_one(
        tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:112 (the parameter and the ``job_output`` sentence absent when
    the instance disables background runs) and :120 (a forced ``run_in_background: true`` is
    refused at the call, the provider never asked; without it the call runs)."""

    async def main() -> None:
        provider = _Scripted("mock", _answer("child says hi"))
        spec = _jobs_host(tmp_path, provider, enable_run_in_background=False)
        tool = spec.host.tools.get("subagent")
        assert tool is not None
        assert tool.schema == subagent_tool_schema(False, "subagent")
        assert "job_output" not in tool.description
        forced = await _call(spec, "subagent", _background())
        assert forced.is_error
        assert "run_in_background is disabled for this tool instance" in forced.text
        assert provider.starts == []
        foreground = await _call(spec, "subagent", {"description": "d", "prompt": "p"})
        assert (foreground.is_error, foreground.text) == (False, "child says hi")
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("mode", ["one-shot", "continuable"])
def test_every_subagent_call_is_concurrency_safe(tmp_path: Path, mode: str) -> None:
    """DSH tool-subagent.spec.ts:135 (foreground and background calls) and :1103 (continuable
    background calls): the tool runs beside its siblings."""

    async def main() -> None:
        spec = _jobs_host(tmp_path) if mode == "one-shot" else _continuable_host(tmp_path)
        tool = spec.host.tools.get("subagent")
        assert tool is not None and tool.concurrency_safe
        await spec.host.aclose()

    run(main)


def test_no_continuable_guidance_while_the_provider_is_absent(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:336 — a continuable instance whose provider is not registered:
    no tool, and no guidance in any system prompt."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        SubagentTool(provider="later-continuable", background_mode="continuable",
                     max_depth=None).install(spec.host)
        assert "subagent" not in spec.host.tools
        assert "Use subagent in the background" not in spec.parent.system_prompt()
        await spec.host.aclose()

    run(main)


# --------------------------------------------------------------------------- one-shot jobs


def test_a_continuable_capable_provider_stays_one_shot_in_one_shot_mode(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:800 — in one-shot background mode a provider that could
    prepare continuable children is only started as a job; it is never asked to prepare."""

    async def main() -> None:
        prepared: list[object] = []

        def prepare(request: Any) -> ContinuableSeed:
            prepared.append(request)
            raise AssertionError("one-shot policy must not prepare a continuable child")

        provider = _Scripted("resumable", _answer("one-shot answer"), prepare=prepare)
        spec = _jobs_host(tmp_path, provider, tool_name="subagent_resumable",
                          background_mode="one-shot")
        started = await _call(spec, "subagent_resumable", _background("work"))
        assert started.text == "started background subagent job subagent-1"
        assert prepared == []
        await spec.host.aclose()

    run(main)


def test_a_job_id_at_once_and_the_answer_through_job_output(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:841 — ``started background subagent job subagent-1`` with the
    typed value ``{kind: background, jobId}``; ``job_output`` with ``wait`` returns the answer
    and ``[status: completed]``, and a second read the same."""

    async def main() -> None:
        spec = _jobs_host(tmp_path, _Scripted("mock", _answer("background answer")))
        started = await _call(spec, "subagent", _background("deep research"))
        assert (started.is_error, started.text) == (
            False, "started background subagent job subagent-1")
        assert started.value == BackgroundValue(job_id="subagent-1")
        collected = await _call(spec, "job_output", {"job_id": "subagent-1", "wait": True})
        assert collected.text == "background answer\n[status: completed]"
        again = await _call(spec, "job_output", {"job_id": "subagent-1"})
        assert again.text == "background answer\n[status: completed]"
        await spec.host.aclose()

    run(main)


def test_a_providers_diagnostic_is_kept_in_a_failed_jobs_detail(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:871 — a run ending ``error`` with a provider diagnostic:
    ``(no new output)`` and ``[status: failed, error; diagnostic: …]`` (its output is not the
    job's)."""

    async def main() -> None:
        provider = _Scripted("mock", _answer(
            "not background output", stop_reason="error",
            diagnostic="Claude Code cancelled an unattended dialog"))
        spec = _jobs_host(tmp_path, provider)
        assert (await _call(spec, "subagent", _background())).text == (
            "started background subagent job subagent-1")
        output = await _call(spec, "job_output", {"job_id": "subagent-1", "wait": True})
        assert output.text == ("(no new output)\n[status: failed, error; diagnostic: Claude "
                               "Code cancelled an unattended dialog]")
        await spec.host.aclose()

    run(main)


def test_background_without_a_job_registry_fails_loud(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:901 — an instance with no job registry: ``background jobs
    unavailable: load @deepseek-ai/dsh-jobs …``, an error result."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        spec.host.subagents.register_provider(_Scripted("mock", _answer("x")))  # type: ignore[arg-type]
        SubagentTool(provider="mock", max_depth=None).install(spec.host)
        result = await _call(spec, "subagent", _background())
        assert result.is_error
        assert "background jobs unavailable: load @deepseek-ai/dsh-jobs" in result.text
        await spec.host.aclose()

    run(main)


def test_a_call_whose_turn_is_already_cancelled_starts_nothing(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:908 — a background call reached after its turn's cancellation
    was requested (here: cancelled the moment the model's message announcing it is logged) is
    not dispatched: no job, no provider start (on earlier code the job started). The model is
    told DSH's ``Error: tool call aborted before dispatch`` (code ``ABORTED_BEFORE_DISPATCH``):
    the call was logged but never started."""

    async def main() -> None:
        provider = _Scripted("mock", _answer("x"))
        spec = _jobs_host(tmp_path, provider)
        spec.parent.pre_step_hooks.clear()
        spec.model.add(Reply.tool_call("subagent", _background()))

        def cancel_at_the_message(events: Any) -> None:
            if "assistant/message" in types(events):
                spec.parent.cancel()

        spec.parent.session.listeners.append(cancel_at_the_message)
        spec.parent.followup("go")
        await spec.parent.when_idle()
        assert provider.starts == []
        assert result_texts(spec.parent.session.events) == [
            "Error: tool call aborted before dispatch"]
        codes = [event.data.error.code for event in spec.parent.session.events
                 if isinstance(event, ToolResultEvent) and event.data.error]
        assert codes == ["ABORTED_BEFORE_DISPATCH"]
        assert _jobs(spec).list(spec.parent) == []
        await spec.host.aclose()

    run(main)


def test_a_start_that_fails_later_settles_a_failed_job(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:922 — the job id at once; the provider's start then fails:
    ``[status: failed, Error: setup failed]``."""

    async def main() -> None:
        async def broken(request: CheckedRequest, signal: AbortSignal | None) -> Any:
            raise RuntimeError("setup failed")

        spec = _jobs_host(tmp_path, _Scripted("broken-start", broken),
                          tool_name="subagent_broken")
        started = await _call(spec, "subagent_broken", _background("broken"))
        assert started.text == "started background subagent job subagent-1"
        output = await _call(spec, "job_output", {"job_id": "subagent-1", "wait": True})
        assert "[status: failed, Error: setup failed]" in output.text
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("provider_ran", [True, False])
def test_a_job_killed_while_its_start_is_pending_settles_killed(tmp_path: Path,
                                                                provider_ran: bool) -> None:
    """DSH tool-subagent.spec.ts:951 — ``job_kill`` while the provider's start still waits: the
    job settles ``killed``. Also when the kill comes before the start ran at all (the runtime
    then refuses the start before any provider is handed an aborted signal; on earlier code
    that job stayed ``stopping`` for ever)."""

    async def main() -> None:
        provider = _Scripted("pending-start",
                             _until_aborted(lambda: RuntimeError("startup aborted")))
        spec = _jobs_host(tmp_path, provider, tool_name="subagent_pending")
        await _call(spec, "subagent_pending", _background("pending"))
        if provider_ran:
            await eventually(lambda: bool(provider.starts))
        await _call(spec, "job_kill", {"job_id": "subagent-1", "reason": "no longer needed"})
        output = await _call(spec, "job_output", {"job_id": "subagent-1", "wait": True})
        assert output.text == "(no new output)\n[status: killed]"
        assert bool(provider.starts) == provider_ran
        await spec.host.aclose()

    run(main)


def test_a_failed_startup_rollback_after_a_kill_is_a_failed_job(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:988 — the provider's start, aborted by ``job_kill``, fails with
    an exception group (startup and its cleanup both failed): the job is ``failed`` with
    ``AggregateError: startup failed and cleanup also failed`` (on earlier code the group was
    rendered ``Error: … (2 sub-exceptions)``)."""

    async def main() -> None:
        provider = _Scripted("broken-start-rollback", _until_aborted(
            lambda: ExceptionGroup("startup failed and cleanup also failed",
                                   [RuntimeError("startup aborted"),
                                    RuntimeError("cleanup failed")])))
        spec = _jobs_host(tmp_path, provider, tool_name="subagent_broken_rollback")
        await _call(spec, "subagent_broken_rollback", _background("broken rollback"))
        await eventually(lambda: bool(provider.starts))
        await _call(spec, "job_kill", {"job_id": "subagent-1"})
        output = await _call(spec, "job_output", {"job_id": "subagent-1", "wait": True})
        assert ("[status: failed, AggregateError: startup failed and cleanup also failed]"
                in output.text)
        await spec.host.aclose()

    run(main)


def test_job_kill_reasons_reach_the_run_signal(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:1030 — two running jobs killed, one with a reason and one
    without: the runs' signals carry ``superseded`` and the default ``background subagent task
    killed``; both settle ``killed``."""

    async def main() -> None:
        reasons: list[object] = []
        counter = [0]

        async def hanging(request: CheckedRequest, signal: AbortSignal | None) -> Any:
            assert signal is not None
            counter[0] += 1
            result: asyncio.Future[SubagentResult] = asyncio.get_running_loop().create_future()

            def settle(reason: object) -> None:
                reasons.append(reason)
                result.set_result(SubagentResult(output=(), stop_reason="aborted"))

            signal.add_listener(settle)
            return _Run(id=f"hang-{counter[0]}", parent=None, result=result)  # type: ignore[arg-type]

        spec = _jobs_host(tmp_path, _Scripted("hanging", hanging), tool_name="subagent_hang")
        one = await _call(spec, "subagent_hang", _background("one"))
        two = await _call(spec, "subagent_hang", _background("two"))
        assert (one.text, two.text) == ("started background subagent job subagent-1",
                                        "started background subagent job subagent-2")
        await eventually(lambda: counter[0] == 2)
        with_reason = await _call(spec, "job_kill", {"job_id": "subagent-1",
                                                     "reason": "superseded"})
        without = await _call(spec, "job_kill", {"job_id": "subagent-2"})
        assert (with_reason.text, without.text) == (
            "requested cancellation of job subagent-1", "requested cancellation of job subagent-2")
        assert reasons == ["superseded", "background subagent task killed"]
        killed = await _call(spec, "job_output", {"job_id": "subagent-1", "wait": True})
        assert killed.text == "(no new output)\n[status: killed]"
        await spec.host.aclose()

    run(main)


def test_no_child_starts_when_the_job_cannot_be_admitted(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:1241 — a job registry no job tools serve refuses the job
    (``no job controller serves this agent``) before any child exists: the provider is never
    started."""

    async def main() -> None:
        provider = _Scripted("probe", _answer("x"))
        spec = _jobs_host(tmp_path, provider, tools=False, tool_name="subagent_probe")
        result = await _call(spec, "subagent_probe", _background())
        assert result.is_error and "no job controller serves this agent" in result.text
        assert provider.starts == []
        await spec.host.aclose()

    run(main)


# --------------------------------------------------------------------------- continuable


def test_a_continuable_instance_defaults_to_background_and_returns_the_durable_id(
        tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:1113 — the wording (no job tools, ``send_message``, ``runs in
    the background by default``; ``Defaults to true``), the guidance section, a call without
    ``run_in_background`` answering ``started subagent <id>`` (value ``{kind: continuable,
    subagentId}``) and no job; the id names a durable session with its descriptor and the
    child's answer."""

    async def main() -> None:
        spec = _continuable_host(tmp_path)
        tool = spec.host.tools.get("subagent")
        assert tool is not None
        assert "job_output" not in tool.description and "job_kill" not in tool.description
        assert "send_message" in tool.description
        assert "runs in the background by default" in tool.description
        assert "never poll or wait on it" not in tool.description
        background = json.loads(bytes(tool.schema.parameters))["properties"]["run_in_background"]
        assert "Defaults to true" in background["description"]
        prompt = spec.parent.system_prompt()
        assert "Use subagent in the background by default" in prompt
        assert "runtime sends you a notice containing its outcome" in prompt
        started = await _call(spec, "subagent", {"description": "continuable work",
                                                 "prompt": "dig in"})
        found = re.fullmatch(r"started subagent (\S+)", started.text)
        assert not started.is_error and found is not None
        assert started.value == ContinuableValue(subagent_id=found.group(1))
        await no_activation(spec.host, found.group(1))
        events = types(persisted(spec.host, found.group(1)))
        assert "subagent/descriptor" in events and "assistant/message" in events
        await spec.host.aclose()

    run(main)


def test_the_guidance_is_empty_for_an_agent_whose_scope_hides_the_tool(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:1152 — a root parent whose own scope denies ``subagent``: the
    tool is not its to call, and the ``tool:subagent`` guidance is empty in its system prompt
    (on earlier code only a child's was)."""

    async def main() -> None:
        spec = _continuable_host(tmp_path)
        spec.parent.tools.restrict(ToolRestriction(deny=("subagent",)))
        assert not spec.parent.tools.permits("subagent")
        assert "Use subagent in the background" not in spec.parent.system_prompt()
        other = spec.host.create_agent("other", provider="mock", model="mock")
        assert "Use subagent in the background" in other.system_prompt()
        await spec.host.aclose()

    run(main)


def test_run_in_background_false_waits_for_a_one_shot_answer(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:1161 — ``run_in_background: false`` on a continuable instance:
    the answer (value ``{kind: foreground, …}``), no job and no continuable child."""

    async def main() -> None:
        spec = _continuable_host(tmp_path)
        result = await _call(spec, "subagent", {"description": "blocking work",
                                                "prompt": "dig in",
                                                "run_in_background": False})
        assert (result.is_error, result.text) == (False, "continuable answer")
        assert isinstance(result.value, ForegroundValue)
        assert result.value.output == (TextBlock(text="continuable answer"),)
        assert spec.manager.activations() == ()
        await spec.host.aclose()

    run(main)


def test_a_cancelled_continuable_start_leaves_its_sibling_alone(tmp_path: Path) -> None:
    """DSH tool-subagent.spec.ts:1175 — two continuable calls in flight together; one is
    cancelled inside its child's creation window (DSH: during the provider's preparation, which
    is synchronous for ours): it leaves no agent and no session, while the other starts its
    child (value ``{kind: continuable, subagentId}``), which runs."""

    async def main() -> None:
        spec = _continuable_host(tmp_path)
        windows: list[str] = []
        calls: list[asyncio.Future[ToolOutcome]] = []

        def seen(child: Agent) -> Any:
            windows.append(child.id)
            if len(windows) == 1:
                calls[0].cancel()  # the first call, cancelled inside its child's window
            return lambda: None

        spec.manager.register_setup(seen)
        cancelled = asyncio.ensure_future(_call(spec, "subagent", _background("cancelled")))
        surviving = asyncio.ensure_future(_call(spec, "subagent", _background("surviving")))
        calls.append(cancelled)
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        succeeded = await surviving
        cancelled_id, surviving_id = windows
        assert spec.host.agents.get(cancelled_id) is None
        assert not spec.host.sessions.exists(cancelled_id)
        assert succeeded.value == ContinuableValue(subagent_id=surviving_id)
        await no_activation(spec.host, surviving_id)
        events = types(persisted(spec.host, surviving_id))
        assert "subagent/descriptor" in events and "assistant/message" in events
        await spec.host.aclose()

    run(main)


# --------------------------------------------------------------------------- run settlement


@pytest.mark.parametrize(("stop_reason", "outcome"), [
    ("completed", JobOutcome(status="completed", output="partial")),
    ("aborted", JobOutcome(status="killed")),
    ("error", JobOutcome(status="failed", detail="error")),
    ("max-tokens", JobOutcome(status="failed", detail="max-tokens")),
    ("refusal", JobOutcome(status="failed", detail="refusal")),
    ("paused", JobOutcome(status="failed", detail="paused"))])
def test_each_stop_reason_maps_onto_its_job_outcome(stop_reason: str,
                                                    outcome: JobOutcome) -> None:
    """DSH run-settlement.spec.ts:11 (one case per stop reason): ``completed`` keeps the
    output's text, ``aborted`` is ``killed``, anything else is ``failed`` with the reason."""
    assert run_outcome(SubagentResult(output=(TextBlock(text="partial"),),
                                      stop_reason=stop_reason)) == outcome


def test_a_run_is_disposed_before_its_outcome_is_reported(tmp_path: Path) -> None:
    """DSH run-settlement.spec.ts:28 — on both result paths the run is disposed before the job
    settles: a completed run (``completed``, its text), a rejected result (``failed``,
    ``Error: transport gone``), a failed disposal (``dispose failed: Error: reap failed``) and
    both (``Error: result failed; dispose failed: Error: reap failed``)."""

    order: list[str] = []

    def runs(result: SubagentResult | BaseException, dispose_error: str | None) -> Any:
        async def begin(request: CheckedRequest, signal: AbortSignal | None) -> Any:
            future: asyncio.Future[SubagentResult] = asyncio.get_running_loop().create_future()
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

            async def dispose() -> None:
                order.append("dispose")
                if dispose_error is not None:
                    raise RuntimeError(dispose_error)

            return _Run(id="child", parent=None, result=future,  # type: ignore[arg-type]
                        on_dispose=dispose)
        return begin

    cases = [
        (SubagentResult(output=(TextBlock(text="ok"),), stop_reason="completed"), None,
         "ok\n[status: completed]"),
        (RuntimeError("transport gone"), None,
         "(no new output)\n[status: failed, Error: transport gone]"),
        (SubagentResult(output=(), stop_reason="completed"), "reap failed",
         "(no new output)\n[status: failed, dispose failed: Error: reap failed]"),
        (RuntimeError("result failed"), "reap failed",
         "(no new output)\n[status: failed, Error: result failed; dispose failed: Error: reap "
         "failed]")]

    async def main() -> None:
        for index, (result, dispose_error, expected) in enumerate(cases):
            spec = _jobs_host(tmp_path / str(index), _Scripted("mock", runs(result,
                                                                            dispose_error)))
            await _call(spec, "subagent", _background())
            output = await _call(spec, "job_output", {"job_id": "subagent-1", "wait": True})
            order.append("reported")
            assert output.text == expected
            await spec.host.aclose()
        assert order == ["dispose", "reported"] * 4
        assert with_dispose_failure(JobOutcome(status="completed", output="ok"),
                                    "Error: reap failed").detail == (
            "dispose failed: Error: reap failed")

    run(main)


def test_a_providers_diagnostic_stays_separate_in_the_outcome() -> None:
    """DSH run-settlement.spec.ts:71 — a run ending ``error`` with partial output and a provider
    diagnostic: ``failed``, detail ``error; diagnostic: <text>`` (the output is not the
    detail)."""
    assert run_outcome(SubagentResult(
        output=(TextBlock(text="partial assistant text"),), stop_reason="error",
        diagnostic="Claude Code denied a tool request")) == JobOutcome(
        status="failed", detail="error; diagnostic: Claude Code denied a tool request")
