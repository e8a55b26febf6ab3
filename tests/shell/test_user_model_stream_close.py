"""A call that fails mid-stream closes what it opened: no generator of it is left to the garbage
collector, whose finalizer would leave a task on the loop."""

from __future__ import annotations

from _shell_helpers import make_host, run
from fake_openai_server import FakeOpenAI, Reply, chunk

from turnfork.shell import OpenAIChatModel


def test_a_stream_ended_by_a_malformed_event_leaves_no_task_behind() -> None:
    """The body of a call that failed mid-stream is closed with the call, not left to the
    garbage collector (whose finalizer would leave a task on the loop)."""
    async def main() -> str:
        async with FakeOpenAI([Reply(events=("not json", chunk({"content": "late"})))],
                              ) as server, OpenAIChatModel(base_url=server.base_url,
                                                           api_key="", timeout=5.0) as model:
            host = make_host()
            host.models.register("local", model, retry=None)
            agent = host.create_agent(provider="local", model="m")
            result = await agent.run("go")
            await agent.dispose()
        assert result.failure is not None
        return result.failure.code

    assert run(main, timeout=30) == "MALFORMED_RESPONSE"
