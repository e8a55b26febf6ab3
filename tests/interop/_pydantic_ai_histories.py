"""Chat histories as pydantic-ai `ModelMessage`s, for the kit's examples: consecutive assistant
messages become one `ModelResponse` (text, then tool calls), consecutive others one
`ModelRequest` (system and developer messages as system prompt parts, tool messages as tool
returns, the rest as user prompts), in their order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)


def _request_part(message: dict[str, Any]) -> Any:
    role, content = message["role"], message.get("content")
    if role == "tool":
        return ToolReturnPart("tool", str(content), tool_call_id=message["tool_call_id"])
    if role in ("system", "developer"):
        return SystemPromptPart(str(content))
    return UserPromptPart(content if isinstance(content, str) else str(content))


def as_model_messages(items: Sequence[dict[str, Any]]) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for message in items:
        if message["role"] == "assistant":
            parts: list[Any] = []
            if isinstance(message.get("content"), str) and message["content"]:
                parts.append(TextPart(message["content"]))
            parts.extend(ToolCallPart(call["function"]["name"], call["function"].get("arguments"),
                                      tool_call_id=call["id"])
                         for call in message.get("tool_calls") or ())
            if out and isinstance(out[-1], ModelResponse):
                out[-1] = ModelResponse(parts=[*out[-1].parts, *parts])
            else:
                out.append(ModelResponse(parts=parts))
            continue
        part = _request_part(message)
        if out and isinstance(out[-1], ModelRequest):
            out[-1] = ModelRequest(parts=[*out[-1].parts, part])
        else:
            out.append(ModelRequest(parts=[part]))
    return out
