"""Tool calls as a misbehaving OpenAI-compatible server streams them: two calls under one id
end the call as the provider's malformed answer, naming the id and both indexes, never as a
session error blaming the log."""

from __future__ import annotations

import json

from _shell_helpers import make_host, of_type, run
from fake_openai_server import FakeOpenAI, Reply, chunk
from returns.result import Failure

from turnfork.core import TurnEndEvent, TurnError
from turnfork.core.machine import chat_stream, chat_stream_event
from turnfork.shell import OpenAIChatModel


def _call(index: int, call_id: str) -> dict[str, object]:
    return {"index": index, "id": call_id, "type": "function",
            "function": {"name": "echo", "arguments": "{}"}}


TWO_UNDER_ONE_ID = chunk({"tool_calls": [_call(0, "c1"), _call(1, "c1")]})


def test_two_calls_under_one_id_are_a_malformed_response() -> None:
    fed = chat_stream_event(chat_stream("0" * 20), json.dumps(TWO_UNDER_ONE_ID))
    assert isinstance(fed, Failure)
    failure = fed.failure()
    assert failure.code == "MALFORMED_RESPONSE"
    assert failure.message == ("the provider streamed two tool calls with the id 'c1' "
                               "(indexes 0 and 1)")


def test_the_same_id_again_under_its_own_index_is_the_same_call() -> None:
    stream = chat_stream("0" * 20)
    for piece in ({"index": 0, "id": "c1", "function": {"name": "echo", "arguments": "{"}},
                  {"index": 0, "id": "c1", "function": {"arguments": "}"}}):
        fed = chat_stream_event(stream, json.dumps(chunk({"tool_calls": [piece]})))
        stream, _ = fed.unwrap()
    assert [call[2] for call in stream.calls] == ["c1"]


def test_an_agent_whose_server_repeats_an_id_ends_its_turn_malformed() -> None:
    async def main() -> TurnError:
        async with FakeOpenAI([Reply(events=(TWO_UNDER_ONE_ID, chunk(finish="tool_calls")))],
                              ) as server, OpenAIChatModel(base_url=server.base_url,
                                                           api_key="", timeout=5.0) as model:
            host = make_host()
            host.models.register("local", model, retry=None)
            agent = host.create_agent(provider="local", model="m")
            await agent.run("go")
            (end,) = of_type(agent.session.events, TurnEndEvent)
            await agent.dispose()
        assert isinstance(end.data.reason, TurnError)
        return end.data.reason

    reason = run(main, timeout=30)
    assert reason.error.code == "MALFORMED_RESPONSE"
    assert "two tool calls with the id 'c1'" in reason.error.message

