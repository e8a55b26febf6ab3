"""A provider endpoint inside the process: an httpx mock transport that records each request
body and answers with a fixed text (OpenAI Chat Completions and Responses, Anthropic Messages
streamed as server-sent events, or as one JSON message when the request does not stream), so a
peer's real model classes run with no network. :class:`ScriptedEndpoint` answers each request
with the next of the bodies it was given instead."""

from __future__ import annotations

import json
from typing import Any

import pytest

EXTRA = "needs the interop extra: pip install -e '.[interop]'"
openai = pytest.importorskip("openai", reason=EXTRA)
try:  # the HTTP client the installed openai SDK is built on
    import httpx2 as httpx
except ImportError:
    httpx = pytest.importorskip("httpx", reason=EXTRA)


def _events(text: str, model: str) -> bytes:
    """An Anthropic Messages stream that answers `text`."""
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_child", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 1},
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                   for name, data in events).encode()


class RecordingEndpoint:
    """Records the JSON body of every request; answers every call with `text`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.transport = httpx.MockTransport(self._handle)
        self.client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://endpoint.invalid/v1",
                                         http_client=httpx.AsyncClient(transport=self.transport))

    def anthropic_client(self) -> Any:
        """An Anthropic SDK client on this endpoint."""
        anthropic = pytest.importorskip("anthropic", reason=EXTRA)
        return anthropic.AsyncAnthropic(api_key="sk-test", base_url="http://endpoint.invalid",
                                        http_client=httpx.AsyncClient(transport=self.transport))

    def _handle(self, request: Any) -> Any:
        body = json.loads(request.content)
        self.requests.append((request.url.path, body))
        if request.url.path.endswith("/messages"):
            if not body.get("stream"):
                return httpx.Response(200, json=anthropic_message(
                    [{"type": "text", "text": self.text}], body["model"]))
            return httpx.Response(200, content=_events(self.text, body["model"]),
                                  headers={"content-type": "text/event-stream"})
        if request.url.path.endswith("/responses"):
            return httpx.Response(200, json={
                "id": "resp_1", "object": "response", "created_at": 0, "model": body["model"],
                "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": [], "output": [{
                    "type": "message", "id": "msg_child", "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": self.text, "annotations": []}]}],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}})
        return httpx.Response(200, json={
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": self.text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def first_history(self) -> list[dict[str, Any]]:
        """The conversation of the first request: chat `messages` or responses `input`."""
        path, body = self.requests[0]
        return list(body["input"] if path.endswith("/responses") else body["messages"])


def anthropic_message(content: list[dict[str, Any]], model: str = "claude-sonnet-4-5",
                      stop_reason: str = "end_turn") -> dict[str, Any]:
    """An Anthropic Messages response body."""
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def responses_body(output: list[dict[str, Any]], model: str = "gpt-4o") -> dict[str, Any]:
    """An OpenAI Responses response body."""
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": model,
            "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "output": output,
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def chat_body(message: dict[str, Any], model: str = "gpt-4o") -> dict[str, Any]:
    """An OpenAI Chat Completions response body."""
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class ScriptedEndpoint:
    """Answers each request with the next scripted JSON body; records every request body."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=self.replies.pop(0))

    def openai(self) -> Any:
        return openai.OpenAI(api_key="sk-test", base_url="http://endpoint.invalid/v1",
                             http_client=httpx.Client(transport=self.transport))

    def async_openai(self) -> Any:
        return openai.AsyncOpenAI(api_key="sk-test", base_url="http://endpoint.invalid/v1",
                                  http_client=httpx.AsyncClient(transport=self.transport))

    def anthropic(self) -> Any:
        anthropic = pytest.importorskip("anthropic", reason=EXTRA)
        return anthropic.Anthropic(api_key="sk-test", base_url="http://endpoint.invalid",
                                   http_client=httpx.Client(transport=self.transport))
