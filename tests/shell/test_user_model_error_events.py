"""An error a server sends in place of a chunk keeps the server's words whatever its shape: an
``{"error": "<text>"}`` (TGI's) or a bare error object ``{"object": "error", "message": …}``
(vLLM's), in the stream or as a whole 200 body, never a generic or misleading text."""

from __future__ import annotations

import json

from returns.result import Failure

from turnfork.core.log import LlmFailure
from turnfork.core.machine import chat_body_failure, chat_stream, chat_stream_event

TGI = {"error": "Input validation error: `inputs` must have less than 4096 tokens",
       "error_type": "validation"}
VLLM = {"object": "error", "message": "This model's maximum context length is 4096 tokens",
        "type": "BadRequestError", "param": None, "code": 400}


def _event_failure(value: object) -> LlmFailure:
    fed = chat_stream_event(chat_stream("0" * 20), json.dumps(value))
    assert isinstance(fed, Failure)
    failure: LlmFailure = fed.failure()
    return failure


def test_an_error_given_as_text_is_the_message() -> None:
    failure = _event_failure(TGI)
    assert (failure.code, failure.message) == ("UNKNOWN", TGI["error"])


def test_a_bare_error_object_in_the_stream_is_an_error_not_an_empty_chunk() -> None:
    failure = _event_failure(VLLM)
    assert (failure.code, failure.message) == ("CONTEXT_WINDOW_EXCEEDED", VLLM["message"])


def test_a_bare_error_object_as_the_body_is_that_error() -> None:
    failure = chat_body_failure(json.dumps(VLLM).encode(), "http://127.0.0.1:8000/v1")
    assert (failure.code, failure.message) == ("CONTEXT_WINDOW_EXCEEDED", VLLM["message"])


def test_an_error_given_as_text_as_the_body_is_the_message() -> None:
    failure = chat_body_failure(json.dumps(TGI).encode(), "http://127.0.0.1:8000/v1")
    assert failure.message == TGI["error"]
