"""Baseline B: stdlib ``json.loads`` per line into dicts, checked in plain Python.

No types are validated: a field of the wrong type surfaces as a ``KeyError`` or a wrong
comparison, if at all. The relational rules are the same as ``core.trace_log``'s and as baseline
A's (see :mod:`benchmarks.baseline_pydantic` for what is left out of the surface rules), written
over dicts.
"""

from __future__ import annotations

import json
from typing import Any

from .checks import TOOL_NOT_STARTED, Outcome, surface_problem

__all__ = ["check", "decode", "decode_and_check"]


def decode(data: bytes) -> list[dict[str, Any]]:
    """One dict per JSONL line."""
    loads = json.loads
    return [loads(line) for line in data.splitlines() if line]


def _surface_problem(event: dict[str, Any], seq: int, surface: list[int]) -> str | None:
    op = event["surfaceOp"]
    replaced = None if op == "append" else (op["start"], op["end"])
    return surface_problem(seq, surface, event["type"], event.get("sourceEventSeqs"), replaced)


def check(events: list[dict[str, Any]]) -> Outcome:
    """The core's balance rules over decoded dicts; the first problem ends the check."""
    open_turn: int | None = None
    open_step: int | None = None
    next_turn = 1
    next_step = 1
    pending: dict[str, bool] = {}  # call id -> its tool/call has been seen
    answered: set[str] = set()
    completed = 0
    surface: list[int] = []
    for seq, event in enumerate(events):
        if event["seq"] != seq:
            return Outcome.failed(seq, f"seq {event['seq']} at position {seq}")
        kind = event["type"]
        data = event["data"]
        if kind == "assistant/chunk":
            if (data["turn"], data["step"]) != (open_turn, open_step):
                return Outcome.failed(seq, "assistant/chunk outside the open step")
        elif kind == "turn/start":
            if open_turn is not None or data["turn"] != next_turn:
                return Outcome.failed(seq, "turn/start out of order")
            open_turn, next_step = data["turn"], 1
            pending, answered = {}, set()
        elif kind == "turn/end":
            if open_turn is None or data["turn"] != open_turn or open_step is not None:
                return Outcome.failed(seq, "turn/end out of order")
            open_turn, next_turn, completed = None, data["turn"] + 1, seq + 1
        elif kind == "step/start":
            if data["turn"] != open_turn or open_step is not None or data["step"] != next_step:
                return Outcome.failed(seq, "step/start out of order")
            open_step = data["step"]
        elif kind == "step/end":
            if (data["turn"], data["step"]) != (open_turn, open_step) or pending:
                return Outcome.failed(seq, "step/end out of order or with calls pending")
            open_step, next_step, answered = None, data["step"] + 1, set()
        elif kind == "assistant/message":
            message = data["message"]
            source = message["source"]
            if (data["turn"], data["step"]) != (open_turn, open_step):
                return Outcome.failed(seq, "assistant/message outside the open step")
            if (source.get("kind") != "model" or not source.get("provider")
                    or not source.get("model")):
                return Outcome.failed(seq, "assistant/message source is not a model")
            problem = _surface_problem(event, seq, surface)
            if problem is not None:
                return Outcome.failed(seq, problem)
            for block in message["content"]:
                if block["type"] == "tool-call":
                    if block["id"] in pending or block["id"] in answered:
                        return Outcome.failed(seq, "assistant/message repeats a tool call")
                    pending[block["id"]] = False
        elif kind == "tool/call":
            if (data["turn"], data["step"]) != (open_turn, open_step):
                return Outcome.failed(seq, "tool/call outside the open step")
            if pending.get(data["callId"]) or data["callId"] in answered:
                return Outcome.failed(seq, "tool/call started twice")
            pending[data["callId"]] = True
        elif kind == "tool/result":
            message = data["message"]
            call_id = message["source"].get("callId")
            blocks = message["content"]
            if (message["source"].get("kind") != "tool" or not isinstance(call_id, str)
                    or not call_id or len(blocks) != 1 or blocks[0]["type"] != "tool-result"
                    or blocks[0]["toolCallId"] != call_id):
                return Outcome.failed(seq, "tool/result message has the wrong shape")
            if event["surfaceOp"] != "append":
                if open_turn is None:
                    return Outcome.failed(seq, "tool/result replacement outside a turn")
                problem = _surface_problem(event, seq, surface)
                if problem is not None:
                    return Outcome.failed(seq, problem)
                continue
            if (data["turn"], data["step"]) != (open_turn, open_step):
                return Outcome.failed(seq, "tool/result outside the open step")
            error = data.get("error")
            repair = (blocks[0].get("isError") is True and error is not None
                      and error["code"] == TOOL_NOT_STARTED)
            if call_id in answered or (not pending.get(call_id) and not repair):
                return Outcome.failed(seq, "tool/result without its tool/call")
            problem = _surface_problem(event, seq, surface)
            if problem is not None:
                return Outcome.failed(seq, problem)
            pending.pop(call_id, None)
            answered.add(call_id)
        elif kind == "user/message":
            problem = _surface_problem(event, seq, surface)
            if problem is not None:
                return Outcome.failed(seq, problem)
        elif kind in ("request/header", "request/context", "todo/write") and open_turn is None:
            return Outcome.failed(seq, f"{kind} outside a turn")
    return Outcome(length=len(events), open_turn=open_turn, open_step=open_step,
                   completed_prefix_length=completed)


def decode_and_check(data: bytes) -> Outcome:
    """Baseline B in one call."""
    return check(decode(data))
