"""OpenAIChatModel credentials on the wire: keyless local servers, explicit keys, env vars."""

from __future__ import annotations

import asyncio
import doctest
from typing import Any

import pytest
from fake_openai_server import FakeOpenAI, Recorded, Reply, chunk, resolve_to_loopback

from turnfork.core import (
    FinishChunk,
    FinishStop,
    LlmCallConfig,
    MessageSource,
    TextBlock,
    TurnCompleted,
    TurnEndEvent,
    UserMessage,
)
from turnfork.shell import Host
from turnfork.shell.models import openai_chat
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import (
    KEYLESS_PLACEHOLDER,
    MissingCredentialError,
    OpenAIChatModel,
    has_credentials,
    is_local_endpoint,
)

OK = Reply(events=(chunk({"content": "ok"}, finish="stop"),))
REQUEST = ModelRequest(config=LlmCallConfig(provider="local", model="llama3"), system=None,
                       tools=(), messages=(UserMessage(content=(TextBlock(text="hi"),),
                                                       source=MessageSource(kind="user"),
                                                       id="u1"),))


@pytest.fixture(autouse=True)
def _keys_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every provider key is set, so a test shows which one (if any) reaches the wire."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-secret")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-secret")


def _one_call(host_name: str | None = None, **options: Any) -> tuple[Recorded, bool]:
    """One streamed call against the fake server (under ``host_name`` if given)."""

    async def main() -> tuple[Recorded, bool]:
        async with FakeOpenAI([OK]) as server:
            url = server.base_url if host_name is None else server.url_for(host_name)
            with resolve_to_loopback(*(() if host_name is None else (host_name,))):
                async with OpenAIChatModel(base_url=url, max_retries=0, timeout=5.0,
                                           **options) as model:
                    chunks = [c async for c in model.stream(REQUEST)]
                    sends_key = model.sends_key
        assert chunks[-1] == FinishChunk(reason=FinishStop())
        (recorded,) = server.requests
        return recorded, sends_key

    return asyncio.run(main())


def _secrets_in(recorded: Recorded) -> list[str]:
    wire = " ".join(f"{k}: {v}" for k, v in recorded.headers.items()) + recorded.raw.decode()
    return [s for s in ("sk-deepseek-secret", "sk-openai-secret", "org-secret", "proj-secret",
                        KEYLESS_PLACEHOLDER) if s in wire]


@pytest.mark.parametrize("url", ["http://127.0.0.1:11434/v1", "http://localhost:8080/v1",
                                 "http://[::1]:8000/v1", "http://127.0.0.2/v1",
                                 "http://ollama.localhost/v1"])
def test_loopback_urls_are_local(url: str) -> None:
    """Ensures that loopback hosts (names and addresses) count as local endpoints."""
    assert is_local_endpoint(url)
    assert has_credentials(url, environ={})


@pytest.mark.parametrize("url", ["https://api.deepseek.com", "http://192.168.1.5:11434/v1",
                                 "http://localhost.example.com/v1", "http://10.0.0.1/v1"])
def test_other_urls_are_not_local(url: str) -> None:
    """Ensures that LAN and public hosts, and look-alike names, are not local endpoints."""
    assert not is_local_endpoint(url)
    assert not has_credentials(url, environ={})


def test_loopback_server_gets_no_key_and_no_environment_secret() -> None:
    """Ensures that a keyless local server gets no Authorization header, no key from the
    environment, no OpenAI account headers, and never the SDK placeholder."""
    recorded, sends_key = _one_call()
    assert not sends_key
    assert "authorization" not in recorded.headers
    assert not {"openai-organization", "openai-project"} & recorded.headers.keys()
    assert _secrets_in(recorded) == []


def test_localhost_name_is_keyless_too() -> None:
    """Ensures that a server reached as localhost gets no Authorization header."""
    recorded, _ = _one_call("localhost")
    assert "authorization" not in recorded.headers
    assert _secrets_in(recorded) == []


def test_explicit_key_reaches_a_local_server() -> None:
    """Ensures that a key passed explicitly is sent even to a loopback server (vLLM --api-key)."""
    recorded, sends_key = _one_call(api_key="local-secret")
    assert sends_key
    assert recorded.headers["authorization"] == "Bearer local-secret"


def test_empty_key_sends_none_to_a_remote_host() -> None:
    """Ensures that api_key="" sends no Authorization header, even to a non-loopback host."""
    recorded, sends_key = _one_call("llm.internal.example", api_key="")
    assert not sends_key
    assert "authorization" not in recorded.headers
    assert _secrets_in(recorded) == []


def test_remote_host_gets_only_its_own_key() -> None:
    """Ensures that a non-OpenAI host gets DEEPSEEK_API_KEY and none of the OpenAI secrets."""
    recorded, _ = _one_call("api.deepseek.com")
    assert recorded.headers["authorization"] == "Bearer sk-deepseek-secret"
    assert _secrets_in(recorded) == ["sk-deepseek-secret"]


def test_openai_host_gets_its_key_and_account_headers() -> None:
    """Ensures that OpenAI's host gets OPENAI_API_KEY and the organization/project headers."""
    recorded, _ = _one_call("api.openai.com")
    assert recorded.headers["authorization"] == "Bearer sk-openai-secret"
    assert recorded.headers["openai-organization"] == "org-secret"
    assert recorded.headers["openai-project"] == "proj-secret"


def test_missing_key_for_a_remote_host_names_the_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ensures that a remote host without a key still fails at construction naming its
    variable, and the message says how to ask for no key."""
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    with pytest.raises(MissingCredentialError) as caught:
        OpenAIChatModel(base_url="http://192.168.1.5:11434/v1")
    assert caught.value.env_var == "DEEPSEEK_API_KEY"
    assert "DEEPSEEK_API_KEY" in str(caught.value) and 'api_key=""' in str(caught.value)
    assert not has_credentials("http://192.168.1.5:11434/v1")
    assert has_credentials("http://192.168.1.5:11434/v1", api_key="")


def test_agent_turn_against_a_keyless_local_server() -> None:
    """Ensures that an agent completes a turn against a local server with no key at all."""

    async def main() -> tuple[list[Recorded], list[TurnEndEvent]]:
        async with FakeOpenAI([OK]) as server:
            host = Host()
            async with OpenAIChatModel("llama3", base_url=server.base_url,
                                       provider_name="local", timeout=5.0) as model:
                host.models.register("local", model)
                agent = host.create_agent(provider="local", model="llama3")
                agent.followup("hi")
                await agent.when_idle()
                ends = [e for e in agent.session.events if isinstance(e, TurnEndEvent)]
                await agent.dispose()
        return server.requests, ends

    requests, ends = asyncio.run(main())
    assert [e.data.reason for e in ends] == [TurnCompleted()]
    assert "authorization" not in requests[0].headers
    assert requests[0].body["model"] == "llama3"


def test_module_examples_run() -> None:
    """Ensures that the examples in the model module's docstrings hold."""
    result = doctest.testmod(openai_chat, optionflags=doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.attempted >= 5
    assert result.failed == 0
