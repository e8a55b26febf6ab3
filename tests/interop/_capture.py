"""A loopback-free OpenAI endpoint: an httpx mock transport that records each request body and
answers with a fixed text, so a peer's real OpenAI model classes can run with no network."""

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


class RecordingEndpoint:
    """Records the JSON body of every request; answers chat and responses calls with `text`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[tuple[str, dict[str, Any]]] = []
        transport = httpx.MockTransport(self._handle)
        self.client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://endpoint.invalid/v1",
                                         http_client=httpx.AsyncClient(transport=transport))

    def _handle(self, request: Any) -> Any:
        body = json.loads(request.content)
        self.requests.append((request.url.path, body))
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
