"""`turnfork demo`: the fork scenario end to end, as text, as JSON, saved, and with a real-model
route (never called: no key, or a stand-in model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest
from _cli_helpers import CUT_MARKER, REPO, Run, run_cli

from turnfork.core import (
    ApprovalPolicyEvent,
    Event,
    RequestHeaderEvent,
    SandboxModeEvent,
    SessionEndSeedEvent,
    StepStartEvent,
    SubagentDescriptorEvent,
    ToolCallEvent,
    TurnAborted,
    TurnEndEvent,
    TurnStartEvent,
    completed_turn_cut,
    encode_log,
)
from turnfork.shell import JsonlSessionStore, Reply, ScriptedModel
from turnfork.shell.cli import main
from turnfork.shell.cli.demo import (
    DEMO_START_MS,
    PROJECT,
    USER_TURNS,
    DemoResult,
    child_script,
    demo_summary,
    parent_script,
    run_demo,
)
from turnfork.shell.models import openai_chat

_CONVENTION = "Money is always an int number of cents; never use float for money."


@pytest.fixture(scope="module")
def demo() -> DemoResult:
    """One embedded run, shared by the in-process tests (it is deterministic)."""
    return run_demo()


def _flat(text: str) -> str:
    """Text without panel borders and with whitespace collapsed (panels wrap long lines)."""
    return " ".join(text.replace("│", " ").split())


def _run_without(*args: str, remove: tuple[str, ...]) -> Run:
    env = {k: v for k, v in os.environ.items() if k not in remove}
    env.update({"COLUMNS": "100", "PYTHONIOENCODING": "utf-8"})
    done = subprocess.run([sys.executable, "-m", "turnfork", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def _kind(event: Event) -> str:
    return type(event).__name__


# --------------------------------------------------------------------------- as a subprocess


def test_demo_text_end_to_end(demo: DemoResult) -> None:
    """`turnfork demo` exits 0 and draws the cut, the child's answer and the parent's final
    answer, with no traceback and no colour off a terminal."""
    run = run_cli("demo")
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    assert CUT_MARKER in run.stdout and "fork point" in run.stdout
    fork = demo.fork
    assert fork is not None and demo.parent_final_text is not None
    assert f"fork point: child {fork.child_id} is seeded with the {fork.seed_length} events" \
        in _flat(run.stdout)
    assert _flat(fork.final_text) in _flat(run.stdout)
    assert _flat(demo.parent_final_text) in _flat(run.stdout)
    assert "session/end-seed" in run.stdout and "subagent/descriptor" in run.stdout
    assert "✓ checks:" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert "\x1b[" not in run.stdout


def test_demo_json_summary(demo: DemoResult) -> None:
    """`--json`: the seed is the parent's completed-turn prefix at the fork, the child
    completed, the parent's tool result is exactly the child's final text, logs balanced."""
    run = run_cli("demo", "--json")
    assert run.code == 0, run.stderr
    summary = run.json()
    fork = demo.fork
    assert fork is not None
    at_fork = demo.parent_events[:fork.parent_length_at_fork]
    assert summary["seed_length"] > 0
    assert summary["seed_length"] == summary["prefix_length_at_fork"] \
        == completed_turn_cut(at_fork)
    assert summary["child_stop_reason"] == "completed"
    assert summary["parent_tool_result_text"] == summary["child_final_text"] != ""
    assert summary["balanced"] is True and summary["ok"] is True and summary["problems"] == []
    assert summary["parent_turns"] == ["completed"] * len(USER_TURNS)
    assert summary["parent_session_id"] != summary["child_session_id"]
    assert summary["seed_matches_prefix"] is True
    assert summary["saved"] is None
    assert summary == json.loads(json.dumps(demo_summary(demo)))  # same run in process


def test_demo_save_then_check_and_load(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--save DIR` writes both sessions in DSH's layout; `turnfork check` passes them and
    JsonlSessionStore loads them: the child's file starts with the parent's prefix."""
    run = run_cli("demo", "--save", tmp_path, "--json")
    assert run.code == 0, run.stderr
    summary = run.json()
    parent_file = Path(summary["saved"]["parent"])
    child_file = Path(summary["saved"]["child"])
    parent_id, child_id = summary["parent_session_id"], summary["child_session_id"]
    assert parent_file == tmp_path / "_no-cwd" / parent_id / "session.jsonl"
    assert child_file == tmp_path / "_no-cwd" / child_id / "session.jsonl"
    for path in (parent_file, child_file, child_file.parent):
        assert main(["check", str(path)]) == 0, capsys.readouterr().err
        assert "valid and closed" in capsys.readouterr().out
    store = JsonlSessionStore(tmp_path)
    assert sorted(store.list()) == sorted([parent_id, child_id])
    parent = store.load(parent_id)
    child = store.load(child_id)
    seed_length = summary["seed_length"]
    # a loaded session resumes after a session/end-seed of its own (not written until used)
    assert len(parent.events) == summary["parent_events"] + 1
    assert len(child.events) == summary["child_events"] + 1
    assert isinstance(parent.events[-1], SessionEndSeedEvent)
    assert child.header.seed_length == seed_length
    assert child.header.parent_session == parent_id
    assert encode_log(list(child.events)[:seed_length]) == \
        encode_log(list(parent.events)[:seed_length])
    assert isinstance(child.events[seed_length], SessionEndSeedEvent)


def test_demo_save_refuses_a_directory_that_holds_the_sessions(tmp_path: Path) -> None:
    """A second `--save` into the same DIR: one error line, exit 2, files untouched."""
    assert main(["demo", "--save", str(tmp_path), "--json"]) == 0
    files = sorted(tmp_path.rglob("session.jsonl"))
    before = [path.read_bytes() for path in files]
    run = run_cli("demo", "--save", tmp_path)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert run.stderr.startswith(f"turnfork: error: {tmp_path}: already holds session ")
    assert [path.read_bytes() for path in sorted(tmp_path.rglob("session.jsonl"))] == before


def test_demo_save_into_a_file_is_refused(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`--save` naming a regular file: one error line, exit 2, nothing run."""
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["demo", "--save", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"turnfork: error: {target}: cannot write: not a directory; "
                            "nothing written\n")
    assert target.read_text() == "x"


def test_demo_model_without_key_says_so_in_one_line() -> None:
    """`--model deepseek-chat` with DEEPSEEK_API_KEY removed: exit 2, one stderr line naming
    the variable, nothing on stdout, no traceback."""
    run = _run_without("demo", "--model", "deepseek-chat",
                       remove=("DEEPSEEK_API_KEY", "OPENAI_API_KEY"))
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert run.stderr.startswith("turnfork: error: demo --model deepseek-chat needs an API key")
    assert "set DEEPSEEK_API_KEY" in run.stderr
    assert "Traceback" not in run.stderr


def test_demo_model_key_variable_follows_the_base_url(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str],
                                                      ) -> None:
    """OpenAI's URL needs OPENAI_API_KEY (a DeepSeek key does not count)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-not-for-openai")
    assert main(["demo", "--model", "gpt-4o-mini", "--base-url",
                 "https://api.openai.com/v1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "set OPENAI_API_KEY" in captured.err and captured.err.count("\n") == 1


@pytest.mark.parametrize("args", [["--base-url", "https://example.com/v1"],
                                  ["--timeout", "0"], ["--timeout", "soon"]])
def test_demo_bad_usage_exits_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """--base-url without --model, or a timeout that is not a positive number: exit 2."""
    assert main(["demo", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error:" in captured.err and "Traceback" not in captured.err


def test_demo_help(capsys: pytest.CaptureFixture[str]) -> None:
    """`turnfork demo --help` exits 0 and documents every option and the exit status."""
    assert main(["demo", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: turnfork demo ")
    for option in ("--model NAME", "--base-url URL", "--save DIR", "--timeout SECONDS",
                   "--plain", "--json", "exit status:"):
        assert option in out, option


# --------------------------------------------------------------------------- in process


def test_child_log_is_the_parent_prefix_then_its_own_turn(demo: DemoResult) -> None:
    """The child's seed is the parent's prefix objects through turn 2's turn/end; then
    end-seed, the delegated policy, and its turn with the descriptor before step/start."""
    fork = demo.fork
    assert fork is not None
    n = fork.seed_length
    assert n == fork.prefix_length_at_fork == fork.header.seed_length
    assert all(fork.events[i] is demo.parent_events[i] for i in range(n))
    assert fork.seed_shared and fork.seed_matches_prefix
    last_seeded = demo.parent_events[n - 1]
    assert isinstance(last_seeded, TurnEndEvent) and last_seeded.data.turn == 2
    call = demo.parent_events[fork.call_seq or 0]
    assert isinstance(call, ToolCallEvent) and call.data.name == "subagent"
    assert call.data.turn == 3 and call.data.step == 2 and call.seq >= n  # in flight
    own = fork.events[n:]
    assert isinstance(own[0], SessionEndSeedEvent)
    assert isinstance(own[1], SandboxModeEvent) and own[1].data.source == "delegation"
    assert isinstance(own[2], ApprovalPolicyEvent) and own[2].data.policy == "never"
    kinds = [_kind(event) for event in own]
    turn_start = kinds.index("TurnStartEvent")
    descriptor = kinds.index("SubagentDescriptorEvent")
    first_step = kinds.index("StepStartEvent")
    assert turn_start < descriptor < first_step
    assert isinstance(own[descriptor], SubagentDescriptorEvent)
    assert isinstance(own[turn_start], TurnStartEvent) and isinstance(own[first_step],
                                                                      StepStartEvent)
    assert fork.header.parent_session == demo.parent_header.id
    assert fork.header.delegation_depth == 1
    assert fork.balanced and demo.balanced


def test_child_answer_shows_it_saw_the_seed(demo: DemoResult) -> None:
    """The child quotes a README convention it can know only from turn 1 (its seed): the
    text is not in its prompt nor in the file it read itself."""
    fork = demo.fork
    assert fork is not None
    assert _CONVENTION in PROJECT["README.md"]
    assert _CONVENTION in fork.final_text
    assert _CONVENTION not in fork.prompt and _CONVENTION not in PROJECT["shop/cart.py"]
    seed_text = encode_log(list(demo.parent_events[:fork.seed_length])).decode()
    assert _CONVENTION in seed_text


def test_parent_gets_only_the_child_text_and_uses_it(demo: DemoResult) -> None:
    """The parent's tool result is the child's final text exactly; its final answer is built
    from that result; the demo reports no problems."""
    fork = demo.fork
    assert fork is not None
    assert fork.stop_reason == "completed"
    assert fork.tool_result_text == fork.final_text
    assert fork.result_seq is not None and fork.result_seq > (fork.call_seq or 0)
    assert demo.parent_final_text is not None
    for headline in ("line 16: float money", "line 18: fractions of a cent",
                     "line 3: unused helper"):
        assert headline in fork.final_text and headline in demo.parent_final_text
    assert demo.ok and demo.problems == ()
    assert demo.parent_turns == ("completed",) * len(USER_TURNS)


def test_embedded_demo_is_deterministic(demo: DemoResult) -> None:
    """Injected clock and ids: a second run gives the same summary and the same logs."""
    again = run_demo()
    assert demo_summary(again) == demo_summary(demo)
    assert encode_log(list(again.parent_events)) == encode_log(list(demo.parent_events))
    assert demo.parent_header.created_at == DEMO_START_MS


def test_progress_reports_the_fork() -> None:
    """The progress callback hears about every turn and about the child's run."""
    heard: list[str] = []
    result = run_demo(progress=heard.append)
    fork = result.fork
    assert fork is not None
    assert f"turn 3 of {len(USER_TURNS)}: waiting for the model" in heard
    assert any(words.startswith(f"fork child {fork.child_id} runs its own turn")
               for words in heard)
    assert any(words.startswith(f"fork child {fork.child_id} finished (completed)")
               for words in heard)


def _one_model_script() -> list[Any]:
    """The embedded replies in call order, for one model that plays both roles."""
    parent = parent_script()
    return [*parent[:7], *child_script(), parent[7]]


def test_one_model_for_both_roles_inherits_the_route() -> None:
    """The real-model route: one model for parent and child (the child inherits it), the
    system clock and uuid ids; the scenario still checks out."""
    result = run_demo(model=ScriptedModel(_one_model_script()), provider="stand-in",
                      model_name="m1")
    fork = result.fork
    assert result.ok, result.problems
    assert fork is not None and not result.embedded
    headers = [e for e in fork.events[fork.seed_length:] if isinstance(e, RequestHeaderEvent)]
    assert [(h.data.header.config.provider, h.data.header.config.model) for h in headers] \
        == [("stand-in", "m1")]
    uuid.UUID(result.parent_header.id)
    assert result.parent_events[0].time > DEMO_START_MS


def test_a_model_that_never_delegates_is_reported() -> None:
    """Three plain answers: every turn completes but nothing was delegated (not ok)."""
    result = run_demo(model=ScriptedModel([Reply.text("a"), Reply.text("b"),
                                           Reply.text("c")]))
    assert result.forks == () and result.balanced and not result.ok
    assert result.problems == ("the model never called the subagent tool: nothing was "
                               "delegated",)


def test_a_failing_turn_stops_the_demo() -> None:
    """A model error in turn 1: the demo stops there and says why; the log stays balanced."""
    result = run_demo(model=ScriptedModel([Reply.error("AUTH", "bad key")]))
    assert result.parent_turns == ("error",)
    assert result.problems[0] == "the parent's turn 1 ended error AUTH: bad key"
    assert "the demo stopped after turn 1 of 3" in result.problems
    assert result.balanced


def test_a_turn_that_hangs_is_cancelled_at_the_timeout() -> None:
    """A model that never answers: the turn is cancelled at the timeout, the log closed."""
    result = run_demo(model=ScriptedModel([Reply.hang("thinking")]), turn_timeout=0.2)
    assert result.problems[0] == ("the parent's turn 1 took longer than 0.2 s and was "
                                  "cancelled")
    ends = [e for e in result.parent_events if isinstance(e, TurnEndEvent)]
    assert len(ends) == 1 and isinstance(ends[0].data.reason, TurnAborted)
    assert result.balanced


class _StandIn(ScriptedModel):
    """Takes OpenAIChatModel's place in the CLI: records how it was built and closed."""

    made: ClassVar[list[_StandIn]] = []

    def __init__(self, model: str, **options: Any) -> None:
        script = _one_model_script() if model == "delegates" else [Reply.text("no")] * 3
        super().__init__(script)
        self.name, self.options, self.closed = model, options, False
        _StandIn.made.append(self)

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.parametrize(("name", "code"), [("delegates", 0), ("declines", 1)])
def test_cli_model_route_with_a_stand_in(name: str, code: int, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`--model NAME` with a key builds the OpenAI-compatible model for the base URL, runs the
    scenario on it, closes it, and exits 0 or 1 (one error line) by the outcome."""
    monkeypatch.setattr(openai_chat, "OpenAIChatModel", _StandIn)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    _StandIn.made.clear()
    assert main(["demo", "--model", name, "--json", "--timeout", "30"]) == code
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    (model,) = _StandIn.made
    assert model.closed
    assert model.options["base_url"] == "https://api.deepseek.com"
    assert model.options["provider_name"] == "deepseek"
    assert summary["model"] == {"embedded": False, "provider": "deepseek", "model": name}
    assert summary["ok"] is (code == 0)
    if code:
        assert captured.err == ("turnfork: error: demo: the model never called the subagent "
                                "tool: nothing was delegated\n")
    else:
        assert captured.err == ""
        assert summary["parent_tool_result_text"] == summary["child_final_text"]


def test_summary_is_plain_json(demo: DemoResult) -> None:
    """The summary holds only JSON types (msgspec can encode it as-is)."""
    summary = demo_summary(demo)
    assert msgspec.json.decode(msgspec.json.encode(summary)) == summary
