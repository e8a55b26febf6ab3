"""A provider's error is classified by its words as DSH's adapter classifies them: an exhausted
quota or balance is QUOTA whatever its status (so a 429 that says so is not retried as a rate
limit), a request too long for the model's context is CONTEXT_WINDOW_EXCEEDED, and a 413 is
INVALID_REQUEST."""

from __future__ import annotations

import pytest
from _shell_helpers import make_host, run
from fake_openai_server import FakeOpenAI, Reply

from turnfork.core.machine import chat_failure_code
from turnfork.core.retry import RetryPolicy
from turnfork.shell import OpenAIChatModel


@pytest.mark.parametrize(("status", "message", "expected"), [
    (429, "You exceeded your current quota, please check your plan and billing details",
     "QUOTA"),
    (429, "Insufficient Balance", "QUOTA"),
    (403, "insufficient_credits", "AUTH"),  # an authorization failure stays one (DSH's order)
    (None, "monthly usage limit reached", "QUOTA"),
    (429, "Rate limit reached for requests per minute", "RATE_LIMIT"),
    (400, "prompt is too long for this model", "CONTEXT_WINDOW_EXCEEDED"),
    (400, "Input exceeds the model's context window of 8192 tokens",
     "CONTEXT_WINDOW_EXCEEDED"),
    (400, "This model's maximum context length is 4096 tokens", "CONTEXT_WINDOW_EXCEEDED"),
    (400, "messages: field required", "INVALID_REQUEST"),
    (413, "Request Entity Too Large", "INVALID_REQUEST"),
])
def test_a_failure_is_classified_by_its_words(status: int | None, message: str,
                                              expected: str) -> None:
    assert chat_failure_code(status, None, message) == expected


def test_a_429_that_says_the_balance_is_spent_is_not_retried() -> None:
    async def main() -> tuple[str | None, int]:
        spent = Reply(status=429, body={"error": {"message": "Insufficient Balance"}})
        async with FakeOpenAI([spent, spent]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            host = make_host()
            host.models.register("p", model, retry=RetryPolicy(max_retries=1))
            agent = host.create_agent(provider="p", model="m")
            result = await agent.run("hi")
            await agent.dispose()
            return (None if result.failure is None else result.failure.code,
                    len(server.requests))

    assert run(main, timeout=30) == ("QUOTA", 1)
