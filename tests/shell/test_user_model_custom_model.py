"""A model of the user's own that streams something other than stream chunks ends the turn with a
failure that says so (what it streamed, which provider), not a bare ``AssertionError``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from _shell_helpers import make_host, run

from turnfork.shell.models.base import ModelRequest


class _TextStreamingModel:
    """Streams plain strings, as a first attempt at a model often does."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[object]:
        yield "hello"


def test_a_model_that_streams_text_names_what_it_streamed() -> None:
    async def main() -> tuple[str, str]:
        host = make_host()
        host.models.register("mine", _TextStreamingModel(), retry=None)  # type: ignore[arg-type]
        agent = host.create_agent(provider="mine", model="m")
        result = await agent.run("hi")
        await agent.dispose()
        assert result.failure is not None
        return result.failure.code, result.failure.message

    code, message = run(main)
    assert code == "UNKNOWN"
    assert message == ("the model for provider 'mine' streamed a str ('hello'), "
                       "not a stream chunk (turnfork.core.StreamChunk)")
