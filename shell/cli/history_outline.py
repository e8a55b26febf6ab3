"""A wire history as plain data: the outline ``turnfork show`` draws for it (and prints with
``--json``): the one outline model (:mod:`.outline`), read from a history's items, so
:mod:`.render` draws both.

Rules of the outline:

* Each item becomes one line, with its index where a log's line has its seq: the role and its
  text (shortened), what an assistant item holds besides (tool calls by name, reasoning or
  thinking by length, server tool use). A tool call hangs under the item that made it (in Chat
  and Anthropic, a call has no index of its own), and its result under the call, with the
  result's index; a result for no call, and a call with no result yet, say so.
* Items are grouped into turns for the picture: a turn starts with the caller's first item
  after a turn completed, and completes where a step of the model (a run of its items) ends
  with no client tool call made, none waiting, and no server tool call open. That is the
  core's definition of where a turn completes, read here only to draw; the completed-turn cut
  is the core's own (:attr:`History.completed_prefix_length`), always between two turns.
* The cut is an item of kind ``cut``, exactly once; the first rule broken is an item of kind
  ``violation`` before the item that breaks it; a rule broken only by where the history ends
  (calls still waiting, a tool loop without its thinking) is an item of kind ``pending``.
* Every text keeps the history's exact characters: it is made inert where it is drawn.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .app import TurnRange
from .histories import (
    LoadedHistory,
    excluded_words,
    history_state,
    history_verdict,
    span_words,
)
from .outline import (
    Counts,
    Item,
    ItemKind,
    Outline,
    TurnNode,
    answer_call,
    cut_item,
    shorten,
    still_waiting,
    violation_item,
    which_turns,
)
from .terminal import counted

__all__ = ["build_history_outline", "select_history_turns"]

_TEXT_LIMIT = 100
_ARGS_LIMIT = 60
_PROMPT_LIMIT = 60


# --------------------------------------------------------------------------- words


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return "…"


def _quoted(text: str, limit: int = _TEXT_LIMIT) -> str:
    return f'"{shorten(text, limit)}"' if text.strip() else "(no text)"


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else None


def _parts_text(content: Any) -> str:
    """The text of a message's content: a string, or parts (text kept, media named)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else _json_text(content)
    words: list[str] = []
    for part in content:
        kind = _get(part, "type")
        text = _get(part, "text")
        if isinstance(text, str) and kind in (None, "text", "input_text", "output_text",
                                              "summary_text"):
            words.append(text)
        elif kind == "refusal":
            words.append(f"[refusal] {_json_text(_get(part, 'refusal'))}")
        elif kind in ("image_url", "input_image", "image"):
            words.append("[image]")
        elif kind in ("input_audio",):
            words.append("[audio]")
        elif kind in ("file", "input_file", "document"):
            words.append(f"[{'document' if kind == 'document' else 'file'}]")
        elif isinstance(part, str):
            words.append(part)
    return " ".join(word for word in words if word)


# --------------------------------------------------------------------------- pieces


@dataclass
class _Call:
    call_id: str
    text: str
    server: bool = False
    #: Waits only until the caller's next item (a legacy Chat function_call, a Responses
    #: approval request): one the caller leaves behind is no longer waiting, as in the core.
    abandonable: bool = False


#: The key a legacy Chat function_call and its function message pair by (they carry no id).
_LEGACY = "(function_call)"


@dataclass
class _Result:
    call_id: str
    text: str
    error: bool = False
    server: bool = False


@dataclass
class _Piece:
    """One item as drawn, and what it means for the pairing and the turns."""

    #: The model's side of a turn (an output item), else the caller's.
    model: bool
    kind: ItemKind
    #: The item's own line; ``None`` when it holds nothing but results (drawn under calls).
    text: str | None
    calls: list[_Call] = field(default_factory=list)
    #: The item *is* its one call (Responses): the call's line is the item's.
    is_call: bool = False
    results: list[_Result] = field(default_factory=list)
    prompt: str | None = None
    reasoning: int = 0
    assistant: bool = False
    #: A Responses reasoning item: the step needs the item it belongs to after it.
    needs_follower: bool = False


def _not_an_object(item: Any) -> _Piece:
    return _Piece(model=False, kind="event", text=f"not an object: {shorten(_json_text(item), 60)}")


def _with_extras(words: str, extras: list[str]) -> str:
    return f"{words} ({'; '.join(extras)})" if extras else words


def _chat_piece(item: Any) -> _Piece:
    if not isinstance(item, dict):
        return _not_an_object(item)
    role = item.get("role")
    text = _parts_text(item.get("content"))
    if role == "assistant":
        calls = []
        for call in item.get("tool_calls") or ():
            function = _get(call, "function")
            name = _json_text(_get(function, "name"))
            arguments = shorten(_json_text(_get(function, "arguments") or ""), _ARGS_LIMIT)
            calls.append(_Call(_json_text(_get(call, "id")), f"{name}({arguments})"))
        extras = [f"calls {', '.join(c.text.split('(', 1)[0] for c in calls)}"] if calls else []
        reasoning = item.get("reasoning_content")
        chars = len(reasoning) if isinstance(reasoning, str) else 0
        if chars:
            extras.append(f"reasoning {chars} chars")
        if item.get("function_call"):
            function = item["function_call"]
            name = _json_text(_get(function, "name"))
            extras.append(f"legacy function_call {name}")
            arguments = shorten(_json_text(_get(function, "arguments") or ""), _ARGS_LIMIT)
            calls.append(_Call(_LEGACY, f"{name}({arguments})", abandonable=True))
        if isinstance(item.get("refusal"), str):
            extras.append(f"refusal: {shorten(item['refusal'], 40)}")
        words = f"assistant: {_quoted(text)}" if text.strip() else "assistant"
        return _Piece(model=True, kind="assistant", text=_with_extras(words, extras),
                      calls=calls, reasoning=int(bool(chars)), assistant=True)
    if role == "tool":
        return _Piece(model=False, kind="result", text=None,
                      results=[_Result(_json_text(item.get("tool_call_id")), text)])
    if role == "function":
        return _Piece(model=False, kind="result", text=None,
                      results=[_Result(_LEGACY, f"{_json_text(item.get('name'))}: {text}")])
    if role in ("system", "developer"):
        return _Piece(model=False, kind="system", text=f"{role}: {_quoted(text)}")
    if role == "user":
        return _Piece(model=False, kind="user", text=f"user: {_quoted(text)}", prompt=text)
    return _Piece(model=False, kind="event", text=f"role {_json_text(role)}: {_quoted(text)}")


#: As the core reads a Responses item (core.formats.openai_responses): client calls and their
#: outputs, and the other output-side items.
_RESPONSES_CALL_OUTPUTS = {"tool_search_call": "tool_search_output", "program": "program_output"}
_RESPONSES_MODEL_SIDE = frozenset({"reasoning", "mcp_list_tools"})


def _responses_pairing_id(item: dict[str, Any], kind: str) -> Any:
    """The call id an item pairs by, as the core reads it; ``None`` for a server-run search."""
    if kind in ("tool_search_call", "tool_search_output") and (
            item.get("execution") == "server"):
        return None
    if kind == "local_shell_call_output" and item.get("call_id") is None:
        return item.get("id")  # openai's LocalShellCallOutput names its call by `id`
    return item.get("call_id")


def _responses_call_text(item: dict[str, Any], kind: str) -> str:
    name = item.get("name")
    arguments = next((item[key] for key in ("arguments", "input", "action", "operation")
                      if item.get(key) is not None), "")
    head = _json_text(name) if isinstance(name, str) else kind
    return f"{head}({shorten(_json_text(arguments), _ARGS_LIMIT)})"


def _responses_piece(item: Any) -> _Piece:
    if not isinstance(item, dict):
        return _not_an_object(item)
    given = item.get("type")
    kind: str = given if isinstance(given, str) else "message"
    call_id = _responses_pairing_id(item, kind)
    if kind == "message":
        role = item.get("role")
        text = _parts_text(item.get("content"))
        if role == "assistant":
            words = f"assistant: {_quoted(text)}" if text.strip() else "assistant"
            return _Piece(model=True, kind="assistant", text=words, assistant=True)
        piece_kind: ItemKind = ("user" if role == "user" else
                                "system" if role in ("system", "developer") else "event")
        return _Piece(model=False, kind=piece_kind, text=f"{_json_text(role)}: {_quoted(text)}",
                      prompt=text if role == "user" else None)
    if kind == "reasoning":
        summary = _parts_text(item.get("summary"))
        extras = [f"summary {_quoted(summary, 60)}"] if summary.strip() else []
        if item.get("encrypted_content"):
            extras.append("encrypted")
        return _Piece(model=True, kind="reasoning", text=_with_extras("reasoning", extras),
                      reasoning=1, needs_follower=True)
    if kind == "mcp_approval_request":
        request = _json_text(item.get("id"))
        return _Piece(model=True, kind="event", text=f"mcp_approval_request {request}",
                      calls=[_Call(request, f"approval of {_responses_call_text(item, kind)}",
                                   abandonable=True)])
    if kind == "mcp_approval_response":
        answer = "approved" if item.get("approve") is True else "refused"
        return _Piece(model=False, kind="result", text=None, results=[
            _Result(_json_text(item.get("approval_request_id")), answer)])
    if (kind.endswith("_call") or kind in _RESPONSES_CALL_OUTPUTS) and call_id is not None:
        return _Piece(model=True, kind="tool", text=_responses_call_text(item, kind),
                      calls=[_Call(_json_text(call_id), _responses_call_text(item, kind))],
                      is_call=True)
    if (kind.endswith("_call_output") or kind in _RESPONSES_CALL_OUTPUTS.values()) and (
            call_id is not None):
        output = item.get("output", item.get("result"))
        return _Piece(model=False, kind="result", text=None,
                      results=[_Result(_json_text(call_id), _parts_text(output))])
    if kind.endswith("_call") or (kind.endswith("_output") and kind.startswith("tool_search")):
        status = item.get("status")
        action = _get(item.get("action"), "query") or item.get("queries") or item.get("name")
        words = kind + (f" {_quoted(_json_text(action), 60)}" if action else "")
        words += f" ({_json_text(status)})" if status else ""
        return _Piece(model=True, kind="server", text=words)
    if kind in _RESPONSES_MODEL_SIDE:
        return _Piece(model=True, kind="event", text=kind)
    words = kind + (f" {_json_text(item['id'])}" if item.get("id") is not None else "")
    return _Piece(model=False, kind="event", text=words)


def _anthropic_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list) and all(isinstance(part, dict) for part in content) and any(
            "text" in part for part in content):
        return _parts_text(content)
    if isinstance(content, list) and block.get("type") != "tool_result":
        return counted(len(content), "result")
    return _parts_text(content)


def _anthropic_piece(item: Any) -> _Piece:
    if not isinstance(item, dict):
        return _not_an_object(item)
    role = item.get("role")
    content = item.get("content")
    blocks = content if isinstance(content, list) else []
    text = (content if isinstance(content, str)
            else _parts_text([b for b in blocks if _get(b, "type") != "tool_result"]))
    calls: list[_Call] = []
    results: list[_Result] = []
    thinking = redacted = 0
    for block in blocks:
        kind = _get(block, "type")
        if not isinstance(kind, str):
            continue
        if kind == "tool_use":
            calls.append(_Call(_json_text(block.get("id")),
                               f"{_json_text(block.get('name'))}("
                               f"{shorten(_json_text(block.get('input')), _ARGS_LIMIT)})"))
        elif kind in ("server_tool_use", "mcp_tool_use"):
            calls.append(_Call(_json_text(block.get("id")),
                               f"{_json_text(block.get('name'))}("
                               f"{shorten(_json_text(block.get('input')), _ARGS_LIMIT)}) "
                               "· server tool", server=True))
        elif kind == "tool_result":
            results.append(_Result(_json_text(block.get("tool_use_id")),
                                   _anthropic_result_text(block),
                                   error=block.get("is_error") is True))
        elif kind.endswith("_tool_result"):
            results.append(_Result(_json_text(block.get("tool_use_id")),
                                   f"{kind}: {_anthropic_result_text(block)}", server=True))
        elif kind == "thinking":
            thinking += len(_json_text(block.get("thinking") or ""))
        elif kind == "redacted_thinking":
            redacted += 1
    if role == "assistant":
        extras = []
        client = [c.text.split("(", 1)[0] for c in calls if not c.server]
        server = [c.text.split("(", 1)[0] for c in calls if c.server]
        if client:
            extras.append(f"calls {', '.join(client)}")
        if server:
            extras.append(f"server tool {', '.join(server)}")
        if thinking:
            extras.append(f"thinking {thinking} chars")
        if redacted:
            extras.append(counted(redacted, "redacted thinking block"))
        words = f"assistant: {_quoted(text)}" if text.strip() else "assistant"
        return _Piece(model=True, kind="assistant", text=_with_extras(words, extras),
                      calls=calls, results=results, reasoning=int(bool(thinking or redacted)),
                      assistant=True)
    if role == "user":
        only_results = bool(results) and not text.strip()
        return _Piece(model=False, kind="user" if not only_results else "result",
                      text=None if only_results else f"user: {_quoted(text)}",
                      results=results, prompt=text if text.strip() else None)
    if role == "system":  # anthropic 2.x's SystemMessageParam
        return _Piece(model=False, kind="system", text=f"system: {_quoted(text)}")
    return _Piece(model=False, kind="event", text=f"role {_json_text(role)}: {_quoted(text)}")


_PIECE = {"openai-chat": _chat_piece, "openai-responses": _responses_piece,
          "anthropic": _anthropic_piece}


# --------------------------------------------------------------------------- the outline


class _Builder:
    """Walks the items once, keeping the open turn, the step, and the calls waiting."""

    def __init__(self, loaded: LoadedHistory) -> None:
        history = loaded.history
        self.cut = history.completed_prefix_length
        self.violation = history.violation
        self.end_violation = history.end_violation
        self.top: list[TurnNode | Item] = []
        self.turn: TurnNode | None = None
        self.counts = Counts(items=len(history.source))
        #: call id → (its line, its turn, a server call, abandonable)
        self.calls: dict[str, tuple[Item, TurnNode | None, bool, bool]] = {}
        self.in_step = False
        self.step_calls = False
        #: The step's last item so far is reasoning still waiting for its item.
        self.reasoning_open = False
        self.last = -1

    # ------------------------------------------------------------------ turns

    def mark_cut(self) -> None:
        self.top.append(cut_item(self.cut, f"{span_words(0, self.cut)}, "
                                           f"{counted(self.cut, 'item')}",
                                 "a fork child is seeded with the items above"))

    def complete_turn(self) -> None:
        turn = self.turn
        if turn is None:
            return
        turn.reason, turn.end_seq = "completed", self.last
        self.counts.completed_turns += 1
        self.turn = None

    def open_turn(self, index: int) -> TurnNode:
        if self.turn is None:
            if index == self.cut and index:
                self.mark_cut()
            self.counts.turns += 1
            self.turn = TurnNode(turn=self.counts.turns, start_seq=index,
                                 in_flight=index >= self.cut)
            self.top.append(self.turn)
        return self.turn

    def _waiting(self) -> bool:
        return any(not server for _, _, server, _ in self.calls.values())

    def _server_open(self) -> bool:
        return any(server for _, _, server, _ in self.calls.values())

    def end_step(self) -> None:
        """A caller's item (or the end) after the model's items: the turn may complete."""
        if not self.in_step:
            return
        self.in_step = False
        if not (self.step_calls or self.reasoning_open or self._waiting()
                or self._server_open()):
            self.complete_turn()

    # ------------------------------------------------------------------ items

    def add(self, turn: TurnNode, item: Item) -> None:
        turn.entries.append(item)

    def feed(self, index: int, piece: _Piece) -> None:
        if piece.model:
            if not self.in_step:
                self.in_step, self.step_calls = True, False
                self.open_turn(index).steps += 1
                self.counts.steps += 1
            self.reasoning_open = piece.needs_follower
        else:
            self.end_step()
            answered = {result.call_id for result in piece.results}
            for call_id in [c for c, (_, _, _, left) in self.calls.items()
                            if left and c not in answered]:
                del self.calls[call_id]  # left behind by the caller: no longer waiting
        if index == self.cut and self.turn is not None and index:
            # The core completed a turn here that the picture did not see end: follow the core.
            self.in_step = False
            self.complete_turn()
        turn = self.open_turn(index)
        self.last = index
        if self.violation is not None and self.violation.index == index:
            turn.entries.append(violation_item(index, self.violation.problem,
                                               self.violation.rule))
            turn.violation_seq = index
        if self.end_violation is not None and self.end_violation.index == index:
            turn.entries.append(Item(seq=index, kind="pending",
                                     text=f"open: {self.end_violation.message} "
                                          f"(rule: {self.end_violation.rule})"))
        if piece.prompt is not None and turn.prompt is None:
            turn.prompt = shorten(piece.prompt, _PROMPT_LIMIT)
        self._count(piece)
        line: Item | None = None
        if piece.text is not None:
            line = Item(seq=index, kind=piece.kind, text=piece.text)
            self.add(turn, line)
        for call in piece.calls:
            if piece.is_call and line is not None:
                call_item = line
            else:
                call_item = Item(seq=index, kind="call", text=call.text)
                (line.children if line is not None else turn.entries).append(call_item)
            if not call.server:
                turn.add_call(call.text.split("(", 1)[0])
                self.step_calls = True
            self.calls[call.call_id] = (call_item, turn, call.server, call.abandonable)
        for result in piece.results:
            self._result(turn, index, result)

    def _count(self, piece: _Piece) -> None:
        counts = self.counts
        counts.tool_calls += sum(1 for call in piece.calls if not call.server)
        counts.server_tool_calls += sum(1 for call in piece.calls if call.server) + (
            piece.kind == "server")
        counts.tool_results += sum(1 for result in piece.results if not result.server)
        counts.error_results += sum(1 for result in piece.results if result.error)
        counts.assistant_messages += piece.assistant
        counts.user_messages += piece.kind == "user"
        counts.reasoning += piece.reasoning

    def _result(self, turn: TurnNode, index: int, result: _Result) -> None:
        if result.error:
            turn.error_results += 1
        waiting = self.calls.pop(result.call_id, None)
        words = _quoted(result.text)
        if waiting is not None:
            answer_call(waiting[0], index, words, error=result.error)
            return
        turn.entries.append(Item(seq=index, kind="result", error=True,
                                 text=f"result for {result.call_id} (no call): {words}"))

    def finish(self) -> None:
        self.end_step()
        if self.cut == self.counts.items and self.turn is not None and self.cut:
            self.in_step = False
            self.complete_turn()
        if self.turn is not None:
            self.turn.end_seq = self.last
        if self.cut == self.counts.items and self.cut:
            self.mark_cut()
        for call, turn, _, _ in self.calls.values():
            still_waiting(call, turn, "… no result yet (the history ends here)")
        self.calls.clear()


def build_history_outline(loaded: LoadedHistory) -> Outline:
    """The picture of ``loaded`` as data (see the module docstring), every turn drawn."""
    history = loaded.history
    builder = _Builder(loaded)
    if builder.cut == 0:
        builder.mark_cut()
    piece_of = _PIECE[loaded.format]
    for index, item in enumerate(history.source):
        builder.feed(index, piece_of(item))
    builder.finish()
    return Outline(
        reader="history", path=loaded.path, source=loaded.description, format=loaded.format,
        layout=loaded.layout, length=loaded.items, cut=history.completed_prefix_length,
        state=history_state(history), verdict=history_verdict(history),
        excluded=excluded_words(history), counts=builder.counts,
        window=(0, loaded.items), entries=builder.top)


# --------------------------------------------------------------------------- choosing turns


def _turns(entries: Iterable[TurnNode | Item]) -> list[TurnNode]:
    return [entry for entry in entries if isinstance(entry, TurnNode)]


def select_history_turns(outline: Outline, *, turns: TurnRange | None = None,
                         tail: int | None = None) -> Outline | str:
    """``outline`` with only the chosen turns drawn (the others one ``elided`` line per
    stretch), or why no turn is chosen."""
    every = _turns(outline.entries)
    if turns is not None:
        chosen = {id(turn) for turn in every if turn.turn in turns}
        asked = f"--turns {turns}"
    else:
        count = len(every) if tail is None else tail
        chosen = {id(turn) for turn in every[max(len(every) - count, 0):]}
        asked = f"--tail {count}"
    if not chosen:
        held = which_turns("history", (1, len(every)) if every else None,
                           distinct=len(every) > 1)
        return f"{asked}: no such turn ({held})"
    entries: list[TurnNode | Item] = []
    hidden: list[TurnNode] = []

    def flush() -> None:
        if not hidden:
            return
        first, last = hidden[0].start_seq, hidden[-1].end_seq
        stop = (last if last is not None else first) + 1
        numbers = (f"turn {hidden[0].turn}" if len(hidden) == 1
                   else f"turns {hidden[0].turn}..{hidden[-1].turn}")
        entries.append(Item(seq=first, kind="elided",
                            text=f"{span_words(first, stop)} · not drawn: "
                                 f"{counted(stop - first, 'item')} ({numbers})"))
        hidden.clear()

    for entry in outline.entries:
        if isinstance(entry, TurnNode) and id(entry) not in chosen:
            hidden.append(entry)
            continue
        flush()
        entries.append(entry)
    flush()
    drawn = [turn for turn in every if id(turn) in chosen]
    last_end = drawn[-1].end_seq
    window = (drawn[0].start_seq, outline.length if last_end is None else last_end + 1)
    return dataclasses.replace(outline, window=window, entries=entries)
