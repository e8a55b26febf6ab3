"""The ModelError family: one exception class per kind of model failure, chosen by the DSH
failure code a model adapter records (DSH llm-deepseek adapter.ts ``httpErrorCode``, llm-pi-ai
stream.ts ``classifyPiAiError``, and OpenAIChatModel's own mapping), with the failure's facts."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai_server import FakeOpenAI
from fake_openai_server import Reply as ServerReply

from turnfork.core import LlmFailure
from turnfork.shell import (
    Host,
    ModelAuthenticationError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitedError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
    OpenAIChatModel,
)
from turnfork.shell.errors import model_error


@pytest.mark.parametrize(("code", "status", "kind"), [
    ("RATE_LIMIT", 429, ModelRateLimitedError),
    ("TIMEOUT", None, ModelTimeoutError),
    ("SERVER", 500, ModelServerError),
    ("SERVER_ERROR", 502, ModelServerError),
    ("UNAVAILABLE", 503, ModelServerError),
    ("HTTP_504", None, ModelServerError),
    ("TRANSPORT", None, ModelTransportError),
    ("NETWORK", None, ModelTransportError),
    ("MODEL_NOT_FOUND", 404, ModelNotFoundError),
    ("HTTP_404", None, ModelNotFoundError),
    ("AUTH", 401, ModelAuthenticationError),
    ("AUTH", 403, ModelAuthenticationError),
    ("INVALID_CREDENTIAL", None, ModelAuthenticationError),
    ("PI_AI_ERROR", 408, ModelTimeoutError),
    ("UNKNOWN", 429, ModelRateLimitedError),
    # codes that name their own kind keep the base class whatever status they came with
    ("QUOTA", 429, ModelError),
    ("CONTEXT_WINDOW_EXCEEDED", 400, ModelError),
    ("INVALID_REQUEST", 400, ModelError),
    ("EMPTY_RESPONSE", None, ModelError),
    ("SCRIPT_EXHAUSTED", None, ModelError),
    ("UNKNOWN", None, ModelError),
])
def test_the_code_chooses_the_class(code: str, status: int | None,
                                    kind: type[ModelError]) -> None:
    failure = (LlmFailure(message="m", code=code) if status is None
               else LlmFailure(message="m", code=code, status=status))
    error = model_error(failure)
    assert type(error) is kind
    assert isinstance(error, ModelError) and error.failure is failure and error.result is None


def test_the_error_exposes_the_failures_facts() -> None:
    failure = LlmFailure(message="Rate limit reached", code="RATE_LIMIT", status=429,
                         provider_retry_after_ms=2000.0, request_id="req-1")
    error = model_error(failure)
    assert isinstance(error, ModelRateLimitedError)
    assert (error.code, error.status, error.retry_after_ms, error.request_id) == (
        "RATE_LIMIT", 429, 2000.0, "req-1")
    assert str(error) == "RATE_LIMIT (HTTP 429): Rate limit reached"
    bare = model_error(LlmFailure(message="x", code="HTTP_502"))
    assert (bare.status, bare.retry_after_ms, bare.request_id) == (502, None, None)


def test_not_found_names_the_url_its_message_names() -> None:
    named = model_error(LlmFailure(
        message="404 Not Found from http://127.0.0.1:8080/chat/completions (no /v1 in the "
                "path?).", code="MODEL_NOT_FOUND", status=404))
    assert isinstance(named, ModelNotFoundError)
    assert named.url == "http://127.0.0.1:8080/chat/completions"
    unnamed = model_error(LlmFailure(message="model gpt-9 does not exist", code="HTTP_404"))
    assert isinstance(unnamed, ModelNotFoundError) and unnamed.url is None


@pytest.mark.parametrize(("status", "kind"), [(401, ModelAuthenticationError),
                                              (404, ModelNotFoundError)])
def test_a_real_http_failure_raises_its_class_from_run(status: int,
                                                       kind: type[ModelError]) -> None:
    """Against a loopback OpenAI-compatible server: the HTTP failure ends the turn ``error``
    and ``run(raise_on_failure=True)`` raises the class of the code OpenAIChatModel wrote."""

    async def main() -> None:
        body = {"error": {"message": f"refused with {status}"}}
        async with FakeOpenAI([ServerReply(status=status, body=body)]) as server, \
                OpenAIChatModel("m", base_url=server.base_url, api_key="k", max_retries=0,
                                timeout=5.0) as model, Host() as host:
            host.models.register("openai", model)
            agent = host.create_agent(provider="openai", model="m")
            with pytest.raises(kind) as raised:
                await agent.run("hello", raise_on_failure=True)
            assert raised.value.status == status
            assert f"refused with {status}" in str(raised.value)
            result = raised.value.result
            assert result is not None and result.stop_reason == "error"
            assert (await agent.when_idle()) == result

    asyncio.run(asyncio.wait_for(main(), 30))
