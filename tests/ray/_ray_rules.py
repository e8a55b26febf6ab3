"""What the Ray tests' children run: a deterministic model that answers from its request, and a
few tools. The same ``configure`` sets up the parent's host and every Ray worker (the fixture
puts this folder on the workers' PYTHONPATH), so a child behaves alike in process and on Ray.

The model reads the task, the last human message it was sent:

* ``say TEXT``: answers TEXT; ``hang``: streams a little, then waits to be cancelled;
  ``hang-then TEXT``: hangs, and answers TEXT when a recovered child's new turn asks it to go
  on (``RECOVERY_PROMPT``);
  ``slow MS TEXT``: waits MS milliseconds, then answers TEXT; ``fail``: the call fails;
* ``recall``: answers the first human message of its history before its task (a fork
  child's seed), or ``nothing``; ``model?``: its route (``provider/model``); ``system?``:
  its system prompt; ``tools?``: its tools' names, sorted, comma-separated;
* ``structured JSON``: calls ``structured_output`` with JSON (which ends the turn);
  ``tool NAME JSON``: calls NAME with JSON, then answers ``tool said: <result>``;
  ``pid``: calls the ``pid`` tool, then answers the process id it returned;
  ``delegate N TASK``: calls the ``subagent`` tool N times in one message with TASK, and
  ``delegate-each A|B``: once per task; then answers ``parent saw: <results joined by |>``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator

from turnfork.core import (
    StreamChunk,
    TextBlock,
    ToolResultBlock,
    ToolResultMessage,
    UserMessage,
)
from turnfork.shell import Host, ModelRequest, Reply, Tool, ToolContext
from turnfork.shell.models.scripted import reply_chunks
from turnfork.shell.questions import Answers, QuestionRequest, UserQuestions

PROVIDER = "rules"
_OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}}


def _text(blocks: object) -> str:
    return "".join(block.text for block in blocks if isinstance(block, TextBlock))  # type: ignore[attr-defined]


def task_of(request: ModelRequest) -> str:
    """The last human message the model was sent."""
    for message in reversed(request.messages):
        if isinstance(message, UserMessage) and message.source.kind == "user":
            return _text(message.content)
    return ""


def _first_human(request: ModelRequest) -> str | None:
    """The first human message, if the history holds one before the task."""
    humans = [_text(message.content) for message in request.messages
              if isinstance(message, UserMessage) and message.source.kind == "user"]
    return humans[0] if len(humans) > 1 else None


def _tool_results(request: ModelRequest) -> list[str]:
    """The texts of the tool results after the last assistant message."""
    results: list[str] = []
    for message in reversed(request.messages):
        if not isinstance(message, ToolResultMessage):
            break
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                results.append(_text(block.content))
    return results[::-1]


def _humans(request: ModelRequest) -> list[str]:
    return [_text(message.content) for message in request.messages
            if isinstance(message, UserMessage) and message.source.kind == "user"]


async def answer(request: ModelRequest) -> Reply:
    """The reply to ``request`` (see the module's rules)."""
    from turnfork.shell.ray import RECOVERY_PROMPT

    task = task_of(request)
    if task == RECOVERY_PROMPT:
        earlier = [human for human in _humans(request) if human != RECOVERY_PROMPT]
        verb, _, rest = (earlier[-1] if earlier else "").partition(" ")
        return Reply.text(rest if verb == "hang-then" else f"resumed: {' '.join(earlier)}")
    verb, _, rest = task.partition(" ")
    after = _tool_results(request)
    if after:
        if verb == "structured":
            return Reply.text("recorded")
        if verb in ("delegate", "delegate-each"):
            return Reply.text("parent saw: " + "|".join(after))
        if verb == "pid":
            return Reply.text(after[0])
        return Reply.text("tool said: " + after[0])
    if verb == "say":
        return Reply.text(rest)
    if verb in ("hang", "hang-then"):
        return Reply.hang("partial")
    if verb == "slow":
        delay, _, text = rest.partition(" ")
        await asyncio.sleep(int(delay) / 1000)
        return Reply.text(text)
    if verb == "fail":
        return Reply.error("PROVIDER_ERROR", "the rules model was told to fail")
    if verb == "recall":
        return Reply.text(_first_human(request) or "nothing")
    if verb == "model?":
        return Reply.text(f"{request.config.provider}/{request.config.model}")
    if verb == "system?":
        return Reply.text(request.system or "")
    if verb == "tools?":
        return Reply.text(",".join(sorted(tool.name for tool in request.tools)))
    if verb == "structured":
        return Reply.tool_call("structured_output", rest)
    if verb == "tool":
        name, _, args = rest.partition(" ")
        return Reply.tool_call(name, args or "{}")
    if verb == "pid":
        return Reply.tool_call("pid", "{}")
    if verb in ("delegate", "delegate-each"):
        if verb == "delegate":
            count, _, child_task = rest.partition(" ")
            tasks = [child_task] * int(count)
        else:
            tasks = rest.split("|")
        return Reply.tool_calls([("subagent", {"description": f"task {index}", "prompt": task})
                                 for index, task in enumerate(tasks)])
    return Reply.text(f"unknown task: {task}")


class RuleModel:
    """A model whose every reply is :func:`answer`'s; ``calls`` counts them."""

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        return self._play(request, self.calls)

    async def _play(self, request: ModelRequest, number: int) -> AsyncIterator[StreamChunk]:
        reply = await answer(request)
        chunks, hangs = reply_chunks(reply, number)
        for chunk in chunks:
            await asyncio.sleep(0)
            yield chunk
        if hangs:
            await asyncio.get_running_loop().create_future()


async def _echo(args: dict[str, object], ctx: object) -> str:
    return f"echo:{args.get('text', '')}"


async def _read(args: dict[str, object], ctx: object) -> str:
    return "read ok"


async def _write(args: dict[str, object], ctx: object) -> str:
    return "write ok"


async def _pid(args: dict[str, object], ctx: object) -> str:
    return str(os.getpid())


async def _clean(args: dict[str, object], ctx: ToolContext) -> str:
    await ctx.request_approval("rm -rf build")
    return "removed"


def configure(host: Host) -> None:
    """Register the rules model and the tools (on the parent's host and on every worker)."""
    host.models.register(PROVIDER, RuleModel())
    host.tools.register(Tool("echo", "echo the text", _OBJECT, _echo, concurrency_safe=True))
    host.tools.register(Tool("read", "read something", _OBJECT, _read, concurrency_safe=True))
    host.tools.register(Tool("write", "write something", _OBJECT, _write))
    host.tools.register(Tool("pid", "the process id", {"type": "object"}, _pid,
                             concurrency_safe=True))
    host.tools.register(Tool("clean", "needs approval", {"type": "object"}, _clean))


def json_text(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def broken_setup(host: Host) -> None:
    """A worker setup that fails (the worker cannot start)."""
    raise RuntimeError("this worker has no models")


async def _stubborn(args: dict[str, object], ctx: object) -> str:
    """A tool that ignores cancellation (for a while): what Ray's backstop is for."""
    deadline = asyncio.get_running_loop().time() + 60
    while asyncio.get_running_loop().time() < deadline:
        try:
            await asyncio.sleep(deadline - asyncio.get_running_loop().time())
        except asyncio.CancelledError:
            continue
    return "finally done"


def stubborn_setup(host: Host) -> None:
    """:func:`configure`, plus a ``stubborn`` tool that swallows its cancellation."""
    configure(host)
    host.tools.register(Tool("stubborn", "ignores cancellation", {"type": "object"},
                             _stubborn))


async def tripwire(request: QuestionRequest) -> Answers:
    """An answerer no delegated child may reach: it fails the tool call with its own text."""
    raise RuntimeError("tripwire: a delegated child's question reached the answerer")


def asking_setup(host: Host) -> None:
    """:func:`configure`, plus the question service with the tripwire as its answerer."""
    configure(host)
    UserQuestions(tripwire).install(host)


async def _env(args: dict[str, object], ctx: object) -> str:
    return os.environ.get(str(args.get("text", "")), "<unset>")


def add_env(host: Host) -> None:
    """An ``env`` tool that answers the environment variable named by its ``text`` (what a
    worker's ``runtime_env`` set), and the rules model under the provider name ``env``."""
    host.models.register("env", RuleModel())
    host.tools.register(Tool("env", "an environment variable", _OBJECT, _env,
                             concurrency_safe=True))


def env_setup(host: Host) -> None:
    """:func:`configure`, plus :func:`add_env`."""
    configure(host)
    add_env(host)


async def _task_name(args: dict[str, object], ctx: object) -> str:
    from turnfork.shell.ray._ray import ray

    return str(ray.get_runtime_context().get_task_name())


def naming_setup(host: Host) -> None:
    """:func:`configure`, plus a ``task`` tool that answers the name of the Ray call the child
    was started by (what the dashboard shows)."""
    configure(host)
    host.tools.register(Tool("task", "the Ray task's name", {"type": "object"}, _task_name,
                             concurrency_safe=True))
