"""One model call as the agent carries it out: the request streamed, each chunk reported to the
call's span and handed to the turn machine until it says the stream is over, the stream closed
whatever happens."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core import Command, EndStream, EpochHeader, Message, Stop, StreamChunk
from .models.base import Model, ModelRequest
from .telemetry import ModelCallSpan

__all__ = ["stream_call"]


async def stream_call(header: EpochHeader, messages: Sequence[Message],
                      model: Callable[[str], Model], span: ModelCallSpan | None,
                      on_chunk: Callable[[StreamChunk], Command | None],
                      ) -> EndStream | Stop | None:
    """Stream ``header``'s call over ``messages`` from the model serving its provider; the
    first ``EndStream`` or ``Stop`` ``on_chunk`` answers ends the stream and is returned
    (``None``: the stream ended by itself). The span ends with the call's error, if any."""
    request = ModelRequest(
        config=header.config, system=header.system if isinstance(header.system, str) else None,
        tools=header.tools if isinstance(header.tools, tuple) else (), messages=messages)
    error: BaseException | None = None
    try:
        stream = model(header.config.provider).stream(request)
        try:
            async for chunk in stream:
                if span is not None:
                    span.chunk(chunk)
                answer = on_chunk(chunk)
                if isinstance(answer, EndStream | Stop):
                    return answer
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
    except Exception as exc:
        error = exc
        raise
    finally:
        if span is not None:
            span.end(error)
    return None
