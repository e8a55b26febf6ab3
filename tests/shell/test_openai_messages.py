"""OpenAIChatModel's failures say what to fix (issue 22, "messages that point at the fix"): a
404 names its URL and suggests /v1, a base URL without a scheme says so, a server that ignores
``stream: true`` is named; redirects are never followed (issue 25, G08); a stream has an
overall deadline (issue 25: an endless trickle is a TIMEOUT); constructing a model does not
load the SDK on the event loop."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from typing import Any

import pytest
from fake_openai_server import FakeOpenAI, Reply, chunk

from turnfork.core import (
    FinishChunk,
    FinishError,
    LlmCallConfig,
    LlmFailure,
    MessageSource,
    StreamChunk,
    TextBlock,
    TextDelta,
    TurnEndEvent,
    TurnError,
    UserMessage,
)
from turnfork.core.events import LlmRetryEvent
from turnfork.shell import CountingIds, Host, ManualClock, OpenAIChatModel
from turnfork.shell.models.base import ModelRequest

REQUEST = ModelRequest(config=LlmCallConfig(provider="p", model="m"), system=None, tools=(),
                       messages=(UserMessage(content=(TextBlock(text="the whole conversation"),),
                                             source=MessageSource(kind="user"), id="u1"),))
ANSWER = Reply(events=(chunk({"content": "fine"}, finish="stop"),))


def _run(main: Any, timeout: float = 30.0) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(timeout):
            return await main()
    return asyncio.run(bounded())


def _stream(replies: list[Reply], *, path: str = "/v1", **options: Any,
            ) -> tuple[list[StreamChunk], FakeOpenAI]:
    async def main() -> tuple[list[StreamChunk], FakeOpenAI]:
        async with FakeOpenAI(replies) as server:
            base = f"http://127.0.0.1:{server.port}{path}"
            async with OpenAIChatModel(base_url=base, api_key="k", **options) as model:
                return [c async for c in model.stream(REQUEST)], server
    result: tuple[list[StreamChunk], FakeOpenAI] = _run(main)
    return result


def _failure(chunks: list[StreamChunk]) -> LlmFailure:
    last = chunks[-1]
    assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError), last
    return last.reason.failure


# --------------------------------------------------------------------------- 404 and base URLs


def test_a_404_names_the_url_and_suggests_v1_when_the_path_lacks_it() -> None:
    """A base URL without /v1 against a server that serves under /v1: the message says where
    the request went and what to try."""
    chunks, server = _stream([Reply(status=404, body={"error": {"message": "Not Found"}})],
                             path="")
    failure = _failure(chunks)
    url = f"http://127.0.0.1:{server.port}"
    assert failure.status == 404
    assert f"HTTP 404 from POST {url}/chat/completions" in failure.message
    assert f"try base URL {url}/v1" in failure.message
    assert "Not Found" in failure.message


def test_a_404_under_v1_names_the_url_without_the_suggestion() -> None:
    chunks, server = _stream([Reply(status=404, body={"error": {"message": "Model Not Exist"}})])
    failure = _failure(chunks)
    assert f"from POST http://127.0.0.1:{server.port}/v1/chat/completions" in failure.message
    assert "/v1: try" not in failure.message and failure.code == "MODEL_NOT_FOUND"


@pytest.mark.parametrize(("base_url", "words"), [
    ("localhost:8080/v1", "has no scheme: write it as http://localhost:8080/v1"),
    ("127.0.0.1:11434/v1", "has no scheme: write it as http://127.0.0.1:11434/v1"),
    ("api.deepseek.com", "has no scheme: write it as http://api.deepseek.com (a local server) "
                         "or https://api.deepseek.com"),
    ("ftp://example.com/v1", "is not an http:// or https:// URL"),
    ("http://", "is not an http:// or https:// URL"),
])
def test_a_base_url_without_a_scheme_says_so(base_url: str, words: str) -> None:
    """Before: ``localhost:8080/v1`` was taken for a remote host and asked for an API key."""
    with pytest.raises(ValueError, match="base_url") as raised:
        OpenAIChatModel(base_url=base_url)
    assert words in str(raised.value)


# --------------------------------------------------------------------------- not a stream


def test_a_server_that_ignores_stream_true_is_named() -> None:
    """A 200 with one chat.completion JSON body: before, "SSE stream ended without [DONE]"."""
    completion = {"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    chunks, server = _stream([Reply(body=completion)])
    failure = _failure(chunks)
    assert failure.code == "MALFORMED_RESPONSE"
    assert failure.message == (
        f"the server at http://127.0.0.1:{server.port}/v1/chat/completions answered with one "
        'JSON chat.completion object, not a stream of server-sent events: it ignores "stream": '
        "true; turnfork needs a server that streams chat completions")
    assert len(chunks) == 1


def test_an_error_object_sent_as_a_200_body_is_that_error() -> None:
    chunks, _ = _stream([Reply(body={"error": {"message": "This model's maximum context "
                                                          "length is 8 tokens"}})])
    assert _failure(chunks).code == "CONTEXT_WINDOW_EXCEEDED"


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("status", [307, 308, 302])
def test_a_redirect_is_not_followed_and_the_call_names_it(status: int) -> None:
    """Issue 25, G08: the conversation is not re-sent to the Location; the failure names the
    status and the Location."""
    async def main() -> tuple[list[StreamChunk], FakeOpenAI, FakeOpenAI]:
        async with FakeOpenAI([ANSWER]) as elsewhere:
            target = f"{elsewhere.base_url}/chat/completions"
            redirect = Reply(status=status, headers=(("location", target),),
                             body={"error": {"message": "moved"}})
            async with FakeOpenAI([redirect]) as server, OpenAIChatModel(
                    base_url=server.base_url, api_key="k") as model:
                return [c async for c in model.stream(REQUEST)], server, elsewhere

    chunks, server, elsewhere = _run(main)
    assert len(server.requests) == 1
    assert elsewhere.requests == []
    failure = _failure(chunks)
    assert (failure.code, failure.status) == (f"HTTP_{status}", status)
    assert failure.message == (
        f"HTTP {status} redirect from {server.base_url}/chat/completions to "
        f"{elsewhere.base_url}/chat/completions: redirects are not followed (the conversation "
        "would be sent to another URL); use the final URL as the base URL")


def test_a_redirect_ends_the_turn_with_its_error() -> None:
    """Through an agent (default retry policy): no retry, the turn ends naming the redirect."""
    async def main() -> tuple[list[Any], int]:
        async with FakeOpenAI([Reply(status=307, headers=(("location", "http://other/v1"),))]
                              ) as server:
            host = Host(clock=ManualClock(1_000), ids=CountingIds("id-"))
            model = OpenAIChatModel(base_url=server.base_url, api_key="k")
            host.models.register("p", model)
            agent = host.create_agent(provider="p", model="m")
            agent.followup("hello")
            await agent.when_idle()
            await host.aclose()
            await model.aclose()
            return list(agent.session.events), len(server.requests)

    events, requests = _run(main)
    end = events[-1]
    assert requests == 1
    assert isinstance(end, TurnEndEvent) and isinstance(end.data.reason, TurnError)
    assert end.data.reason.error.code == "HTTP_307"
    assert "redirect" in end.data.reason.error.message and "http://other/v1" in \
        end.data.reason.error.message


# --------------------------------------------------------------------------- the deadline


def test_an_endless_trickle_ends_at_the_stream_deadline() -> None:
    """Issue 25: deltas that never stop, each inside the read timeout, end the call TIMEOUT at
    the overall deadline; what streamed so far stays streamed."""
    chunks, server = _stream([Reply(events=(chunk({"content": "a"}),), end="trickle")],
                             stream_deadline=0.3, timeout=5.0)
    failure = _failure(chunks)
    assert (failure.code, failure.message) == (
        "TIMEOUT", "the provider's response took longer than 0.3 s (stream_deadline)")
    deltas = [c for c in chunks if isinstance(c, TextDelta)]
    assert len(deltas) > 2  # the trickle went on for a while first
    assert len(server.requests) == 1


def test_the_deadline_covers_waiting_for_the_response_too() -> None:
    chunks, _ = _stream([Reply(end="stall")], stream_deadline=0.2, timeout=5.0)
    assert _failure(chunks).message == (
        "the provider's response took longer than 0.2 s (stream_deadline)")


def test_a_deadline_timeout_is_retried_like_any_timeout() -> None:
    """The agent's default policy retries the deadline's TIMEOUT; the retry answers."""
    async def main() -> tuple[list[Any], int]:
        clock = ManualClock(1_000)
        trickle = Reply(events=(chunk({"content": "a"}),), end="trickle")
        async with FakeOpenAI([trickle, ANSWER]) as server:
            host = Host(clock=clock, ids=CountingIds("id-"))
            model = OpenAIChatModel(base_url=server.base_url, api_key="k", stream_deadline=1.0)
            host.models.register("p", model)
            agent = host.create_agent(provider="p", model="m")
            agent.followup("hello")
            idle = asyncio.ensure_future(agent.when_idle())
            while not idle.done():
                if clock.waiting:
                    retry = [e for e in agent.session.events if isinstance(e, LlmRetryEvent)]
                    clock.advance(math.ceil(retry[-1].data.delay_ms))
                await asyncio.sleep(0.001)
            await idle
            await host.aclose()
            await model.aclose()
            return list(agent.session.events), len(server.requests)

    events, requests = _run(main)
    assert requests == 2
    (retry,) = [e for e in events if isinstance(e, LlmRetryEvent)]
    assert retry.data.failure.code == "TIMEOUT"
    end = events[-1]
    assert isinstance(end, TurnEndEvent) and end.data.reason.__struct_config__.tag == "completed"


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), True, "60"])
def test_a_deadline_that_is_not_a_positive_number_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="stream_deadline"):
        OpenAIChatModel(api_key="k", stream_deadline=bad)


def test_the_deadline_can_be_switched_off() -> None:
    model = OpenAIChatModel(api_key="k", stream_deadline=None)
    assert model.stream_deadline is None


# --------------------------------------------------------------------------- construction


def test_constructing_a_model_does_not_load_the_sdk() -> None:
    """The SDK takes seconds to import: a model built inside a running event loop must not
    hold it up, so construction leaves ``openai`` unloaded; the first stream loads it (in a
    worker thread) and gets its answer."""
    code = """
import asyncio, sys
from turnfork.shell.models.openai_chat import OpenAIChatModel
model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="")
print("openai" in sys.modules)
from turnfork.core import LlmCallConfig
from turnfork.shell.models.base import ModelRequest
async def main():
    request = ModelRequest(config=LlmCallConfig(provider="p", model="m"), system=None,
                           tools=(), messages=())
    chunks = [c async for c in model.stream(request)]
    print("openai" in sys.modules, chunks[-1].reason.failure.code)
    await model.aclose()
asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["False", "True", "TRANSPORT"]


def test_two_first_calls_at_once_share_one_client() -> None:
    async def main() -> tuple[list[list[StreamChunk]], int]:
        async with FakeOpenAI([ANSWER, ANSWER]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k") as model:
            async def one() -> list[StreamChunk]:
                return [c async for c in model.stream(REQUEST)]
            both = await asyncio.gather(one(), one())
            return list(both), len(server.requests)

    both, requests = _run(main)
    assert requests == 2
    assert all(isinstance(c[-1], FinishChunk) and not isinstance(c[-1].reason, FinishError)
               for c in both)
