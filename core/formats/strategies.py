"""Hypothesis strategies for OpenAI Chat, OpenAI Responses and Anthropic Messages histories.

Rules of this module:

* It imports hypothesis, so ``formats/__init__.py`` never imports it; without hypothesis,
  importing this module says which extra to install.
* A drawn history is a list of plain JSON-shaped items, as an SDK takes them, drawn from one
  format-neutral plan of turns: an optional system or developer message (Chat, Responses), a
  user prompt (text, sometimes an image), steps of the model (reasoning or thinking, text,
  server-side tools, parallel client tool calls) each answered by its results (in any order;
  sometimes followed by a steering user text), and a final step without client calls. Items
  carry provider extras the checkers must ignore.
* Generation never consults the checkers: the completed-turn cut a sample carries, and the
  index and rule of a broken sample's one defect, come from the plan, so the properties that
  compare them with ``core.formats`` are not circular.
* Strategies take the format name (``"openai-chat"``, ``"openai-responses"``, ``"anthropic"``).
  ``closed_histories`` end where a turn completed; ``in_flight_histories`` stop inside their
  last turn, after any complete response of it: after its prompt, after a step's tool calls,
  between their results, or inside a step the provider paused (Anthropic's ``pause_turn``);
  ``histories`` draws either; ``broken_histories`` changes one item of a valid history so that
  exactly one rule breaks, once.

>>> from hypothesis import given, settings
>>> from turnfork.core.formats import openai_chat
>>> @settings(max_examples=20, database=None)
... @given(histories("openai-chat"))
... def check(sample):
...     assert openai_chat.completed_turn_cut(sample.items) == sample.cut
>>> check()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias

import msgspec

from .._checking import checked, unchecked
from .common import FormatName, Rule

try:
    from hypothesis import strategies as st
    from hypothesis.strategies import DrawFn, SearchStrategy
except ImportError as missing:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "turnfork.core.formats.strategies needs hypothesis: install the turnfork[hypothesis] "
        "extra (pip install 'turnfork[hypothesis]')") from missing

__all__ = [
    "Sample",
    "BrokenSample",
    "closed_histories",
    "in_flight_histories",
    "histories",
    "broken_histories",
]

Item: TypeAlias = dict[str, Any]


class Sample(msgspec.Struct, frozen=True, kw_only=True):
    """A drawn history and the length of its completed-turn prefix."""

    items: tuple[Item, ...]
    cut: int


class BrokenSample(msgspec.Struct, frozen=True, kw_only=True):
    """A history with one defect: the index a checker must name, and the rule it breaks."""

    items: tuple[Item, ...]
    index: int
    rule: Rule


_PROMPTS = ("What is the weather in Paris?", "List the files in src.", "naïve café ✓ 😀",
            "line one\nline two", "Run the tests.", 'He said "hi" \\ bye')
_TEXTS = ("Let me check.", "Done.", "Sunny, 21 °C.", "Three files.", "All tests pass.", "ok")
_TOOLS = ("weather", "read_file", "bash", "search_docs")
_ARGS = ('{"city": "Paris"}', '{"path": "src/main.py"}', '{"command": "ls"}', "{}",
         '{"q": "ü"}')
_RESULTS = ("sunny", "file contents", "exit 0", "", "Error: no such file")
_IMAGE_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
              "AAAABJRU5ErkJggg==")


class _Call(msgspec.Struct, frozen=True):
    name: str
    arguments: str
    result: str
    is_error: bool
    image: bool
    kind: str  # Responses: which client call type


class _Step(msgspec.Struct, frozen=True):
    reasoning: bool
    text: str | None
    server: bool
    paused: bool
    calls: tuple[_Call, ...]
    order: tuple[int, ...]
    steer: str | None


class _Turn(msgspec.Struct, frozen=True):
    instruction: str | None
    prompt: str
    image: bool
    steps: tuple[_Step, ...]


class _Plan(msgspec.Struct, frozen=True):
    thinking: bool
    extras: bool
    turns: tuple[_Turn, ...]


#: Responses: the client call types a plan draws (in Chat, a lone ``local_shell_call`` stands for
#: the legacy ``function_call``, which carries no id).
_CALL_KINDS = ("function_call", "function_call", "function_call", "custom_tool_call",
               "computer_call", "local_shell_call", "program")


@unchecked
def _pick(draw: DrawFn, options: tuple[Any, ...]) -> Any:
    return options[draw(st.integers(0, len(options) - 1))]


@unchecked
def _call(draw: DrawFn) -> _Call:
    return _Call(name=_pick(draw, _TOOLS), arguments=_pick(draw, _ARGS),
                 result=_pick(draw, _RESULTS), is_error=draw(st.integers(0, 4)) == 0,
                 image=draw(st.integers(0, 5)) == 0, kind=_pick(draw, _CALL_KINDS))


@unchecked
def _step(draw: DrawFn, *, final: bool) -> _Step:
    calls = () if final else tuple(_call(draw) for _ in range(draw(st.integers(1, 3))))
    order = tuple(draw(st.permutations(range(len(calls))))) if calls else ()
    server = draw(st.integers(0, 3)) == 0
    return _Step(reasoning=draw(st.booleans()),
                 text=(_pick(draw, _TEXTS) if final or draw(st.booleans()) else None),
                 server=server, paused=server and draw(st.booleans()), calls=calls,
                 order=order,
                 steer=None if final or draw(st.integers(0, 4)) else _pick(draw, _PROMPTS))


@unchecked
def _turn(draw: DrawFn) -> _Turn:
    middle = draw(st.integers(0, 3))
    steps = (*(_step(draw, final=False) for _ in range(middle)), _step(draw, final=True))
    return _Turn(instruction=None if draw(st.integers(0, 3)) else "Answer briefly.",
                 prompt=_pick(draw, _PROMPTS), image=draw(st.integers(0, 4)) == 0,
                 steps=steps)


@unchecked
def _plan(draw: DrawFn, min_turns: int, max_turns: int) -> _Plan:
    turns = tuple(_turn(draw) for _ in range(draw(st.integers(min_turns, max_turns))))
    return _Plan(thinking=draw(st.booleans()), extras=draw(st.booleans()), turns=turns)


class _CallSite(msgspec.Struct, frozen=True, kw_only=True):
    """Where one client call and its result sit in a rendered history."""

    call_at: int  # the item holding the call
    step_at: int  # the first item of the call's step
    result_at: int  # the item holding its result (Anthropic: the user message)
    call_id: str
    siblings: int  # calls of its step


class _Rendered:
    """A plan rendered into one format's items, with what the mutations need to know."""

    __slots__ = ("calls", "items", "points", "servers", "thinking_at", "turn_ends")

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.turn_ends: list[int] = []  # length of the history after each completed turn
        self.points: list[int] = []  # in-flight stopping points inside the last turn
        self.calls: list[_CallSite] = []
        self.servers: list[tuple[int, int]] = []  # (assistant message, block) of server uses
        self.thinking_at: list[int] = []  # first assistant message of each turn with thinking

    def push(self, item: Item) -> None:
        """Append an item after which a history may stop in flight."""
        self.items.append(item)
        self.points.append(len(self.items))


class _Ids:
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def next(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count:03d}"


# --------------------------------------------------------------------------- OpenAI Chat


@unchecked
def _chat_turn(out: _Rendered, ids: _Ids, plan: _Plan, number: int, turn: _Turn) -> None:
    items = out.items
    if turn.instruction is not None:
        items.append({"role": "developer" if number % 2 else "system",
                      "content": turn.instruction})
    content: Any = turn.prompt
    if turn.image:
        content = [{"type": "text", "text": turn.prompt},
                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,"
                                                              + _IMAGE_PNG}}]
    out.push({"role": "user", "content": content})
    for step in turn.steps:
        message: Item = {"role": "assistant", "content": step.text}
        if plan.extras:
            message.update({"refusal": None, "annotations": [], "audio": None})
        if step.reasoning:
            message["reasoning_content"] = "Thinking it over."
        if not step.calls:
            items.append(message)
            continue
        if len(step.calls) == 1 and step.calls[0].kind == "local_shell_call":
            call = step.calls[0]  # the legacy pair: no id, the function message answers it
            out.push({**message, "function_call": {"name": call.name,
                                                   "arguments": call.arguments}})
            out.push({"role": "function", "name": call.name, "content": call.result})
            if step.steer is not None:
                out.push({"role": "user", "content": step.steer})
            continue
        call_ids = [ids.next("call_") for _ in step.calls]
        message["tool_calls"] = [
            {"id": call_id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            for call_id, call in zip(call_ids, step.calls, strict=True)]
        call_at = len(items)
        out.push(message)
        for position in step.order:
            out.calls.append(_CallSite(call_at=call_at, step_at=call_at,
                                       result_at=len(items), call_id=call_ids[position],
                                       siblings=len(step.calls)))
            out.push({"role": "tool", "tool_call_id": call_ids[position],
                      "content": step.calls[position].result})
        if step.steer is not None:
            out.push({"role": "user", "content": step.steer})


# --------------------------------------------------------------------------- OpenAI Responses


@unchecked
def _responses_turn(out: _Rendered, ids: _Ids, plan: _Plan, number: int, turn: _Turn) -> None:
    items = out.items
    if turn.instruction is not None:
        items.append({"type": "message", "role": "developer" if number % 2 else "system",
                      "content": turn.instruction})
    if turn.image or number % 2:
        parts: list[Item] = [{"type": "input_text", "text": turn.prompt}]
        if turn.image:
            parts.append({"type": "input_image", "detail": "auto",
                          "image_url": "data:image/png;base64," + _IMAGE_PNG})
        items.append({"type": "message", "role": "user", "content": parts})
    else:
        items.append({"role": "user", "content": turn.prompt})
    out.points.append(len(items))
    for step in turn.steps:
        step_at = len(items)
        if step.reasoning:
            reasoning: Item = {"type": "reasoning", "id": ids.next("rs_"), "summary": [
                {"type": "summary_text", "text": "Thinking it over."}]}
            if plan.thinking:
                reasoning["encrypted_content"] = "gAAAAAB" + reasoning["id"]
            items.append(reasoning)
        if step.server:
            items.append({"type": "web_search_call", "id": ids.next("ws_"),
                          "status": "completed",
                          "action": {"type": "search", "query": "weather Paris"}})
        if step.text is not None:
            message: Item = {"type": "message", "role": "assistant", "id": ids.next("msg_"),
                             "status": "completed", "content": [
                                 {"type": "output_text", "text": step.text,
                                  "annotations": []}]}
            if plan.extras:
                message["phase"] = "final_answer"
            items.append(message)
        if not step.calls:
            continue
        sites: list[tuple[int, str, _Call]] = []
        for call in step.calls:
            call_id = ids.next("call_")
            item: Item = {"type": call.kind, "id": ids.next("fc_"), "call_id": call_id,
                          "status": "completed"}
            if call.kind == "program":
                item = {"type": "program", "id": ids.next("prg_"), "call_id": call_id,
                        "code": "return tools.weather()", "fingerprint": "fp1"}
            elif call.kind == "function_call":
                item.update(name=call.name, arguments=call.arguments)
            elif call.kind == "custom_tool_call":
                item.update(name=call.name, input=call.arguments)
            elif call.kind == "computer_call":
                item.update(action={"type": "screenshot"}, pending_safety_checks=[])
            else:
                item.update(action={"type": "exec", "command": ["ls"], "env": {}})
            sites.append((len(items), call_id, call))
            items.append(item)
        out.points.append(len(items))
        for position in step.order:
            call_at, call_id, call = sites[position]
            output: Item = {"type": call.kind + "_output", "call_id": call_id}
            if call.kind == "local_shell_call":  # openai's type names its call by `id`
                output = {"type": "local_shell_call_output", "id": call_id,
                          "output": call.result}
            elif call.kind == "program":
                output = {"type": "program_output", "id": ids.next("prgo_"),
                          "call_id": call_id, "result": call.result, "status": "completed"}
            elif call.kind == "computer_call":
                output["output"] = {"type": "computer_screenshot",
                                    "image_url": "data:image/png;base64," + _IMAGE_PNG}
            elif call.image and call.kind == "function_call":
                output["output"] = [{"type": "input_text", "text": call.result},
                                    {"type": "input_image",
                                     "image_url": "data:image/png;base64," + _IMAGE_PNG}]
            elif "output" not in output and "result" not in output:
                output["output"] = call.result
            out.calls.append(_CallSite(call_at=call_at, step_at=step_at,
                                       result_at=len(items), call_id=call_id,
                                       siblings=len(step.calls)))
            out.push(output)
        if step.steer is not None:
            out.push({"role": "user", "content": step.steer})


# --------------------------------------------------------------------------- Anthropic


@unchecked
def _thinking(plan: _Plan, ids: _Ids) -> Item:
    if plan.extras and ids.count % 3 == 0:
        return {"type": "redacted_thinking", "data": "EmwKAhgBEgy" + ids.next("r")}
    return {"type": "thinking", "thinking": "Thinking it over.",
            "signature": "EqQBCkYIARgC" + ids.next("s")}


@unchecked
def _anthropic_turn(out: _Rendered, ids: _Ids, plan: _Plan, number: int, turn: _Turn) -> None:
    items = out.items
    if turn.instruction is not None and plan.extras:  # anthropic 2.x's SystemMessageParam
        items.append({"role": "system", "content": turn.instruction})
    content: Any = turn.prompt
    if turn.image:
        content = [{"type": "text", "text": turn.prompt},
                   {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                "data": _IMAGE_PNG}}]
    out.push({"role": "user", "content": content})
    for step_number, step in enumerate(turn.steps):
        head: list[Item] = []
        if plan.thinking and (step_number == 0 or step.reasoning):
            if step_number == 0:
                out.thinking_at.append(len(items))
            head.append(_thinking(plan, ids))
        if step.text is not None and step.calls:
            head.append({"type": "text", "text": step.text})
        tail: list[Item] = []
        if step.server:
            use_id = ids.next("srvtoolu_")
            head.append({"type": "server_tool_use", "id": use_id, "name": "web_search",
                         "input": {"query": "weather Paris"}})
            tail.append({"type": "web_search_tool_result", "tool_use_id": use_id,
                         "content": [{"type": "web_search_result", "title": "Weather",
                                      "url": "https://example.com/weather",
                                      "encrypted_content": "Eo8B", "page_age": None}]})
        if step.text is not None and not step.calls:
            tail.append({"type": "text", "text": step.text})
        call_ids = [ids.next("toolu_") for _ in step.calls]
        tail.extend({"type": "tool_use", "id": call_id, "name": call.name,
                     "input": msgspec.json.decode(call.arguments)}
                    for call_id, call in zip(call_ids, step.calls, strict=True))
        if step.server and step.paused:
            out.servers.append((len(items), len(head) - 1))
            out.push({"role": "assistant", "content": head})
            head = []
        elif step.server:
            out.servers.append((len(items), len(head) - 1))
        items.append({"role": "assistant", "content": [*head, *tail]})
        if not step.calls:
            continue
        call_at = len(items) - 1
        out.points.append(len(items))
        results: list[Item] = []
        for position in step.order:
            call = step.calls[position]
            result: Item = {"type": "tool_result", "tool_use_id": call_ids[position]}
            if call.image:
                result["content"] = [{"type": "text", "text": call.result},
                                     {"type": "image", "source": {
                                         "type": "base64", "media_type": "image/png",
                                         "data": _IMAGE_PNG}}]
            elif call.result:
                result["content"] = call.result
            if call.is_error:
                result["is_error"] = True
            results.append(result)
            out.calls.append(_CallSite(call_at=call_at, step_at=call_at,
                                       result_at=len(items), call_id=call_ids[position],
                                       siblings=len(step.calls)))
        if step.steer is not None:
            results.append({"type": "text", "text": step.steer})
        out.push({"role": "user", "content": results})


@unchecked
def _renderer(render_turn: Callable[[_Rendered, _Ids, _Plan, int, _Turn], None],
              ) -> Callable[[_Plan], _Rendered]:
    """A format's rendering of a plan: ``render_turn(out, ids, plan, number, turn)`` renders
    each turn, which is complete where it ends; the in-flight points are the last turn's."""
    @unchecked
    def render(plan: _Plan) -> _Rendered:
        out, ids = _Rendered(), _Ids()
        for number, turn in enumerate(plan.turns):
            out.points = []
            render_turn(out, ids, plan, number, turn)
            out.turn_ends.append(len(out.items))
        return out
    return render


_RENDER: dict[str, Callable[[_Plan], _Rendered]] = {
    "openai-chat": _renderer(_chat_turn),
    "openai-responses": _renderer(_responses_turn),
    "anthropic": _renderer(_anthropic_turn),
}


# --------------------------------------------------------------------------- valid histories


@st.composite
@unchecked
def _closed(draw: DrawFn, fmt: str, min_turns: int, max_turns: int) -> Sample:
    rendered = _RENDER[fmt](_plan(draw, min_turns, max_turns))
    return Sample(items=tuple(rendered.items), cut=len(rendered.items))


@st.composite
@unchecked
def _in_flight(draw: DrawFn, fmt: str, max_turns: int) -> Sample:
    rendered = _RENDER[fmt](_plan(draw, 1, max_turns))
    stop = _pick(draw, tuple(rendered.points))
    before = rendered.turn_ends[-2] if len(rendered.turn_ends) > 1 else 0
    return Sample(items=tuple(rendered.items[:stop]), cut=before)


def _name(fmt: FormatName) -> str:
    if fmt not in _RENDER:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(_RENDER)}")
    return fmt


@checked
def closed_histories(fmt: FormatName, *, min_turns: int = 0, max_turns: int = 4,
                     ) -> SearchStrategy[Sample]:
    """Valid histories that end where their last turn completed (``cut == len(items)``)."""
    return _closed(_name(fmt), min_turns, max_turns)


@checked
def in_flight_histories(fmt: FormatName, *, max_turns: int = 4) -> SearchStrategy[Sample]:
    """Valid histories stopped inside their last turn; ``cut`` is where the turn before ended."""
    return _in_flight(_name(fmt), max_turns)


@checked
def histories(fmt: FormatName, *, max_turns: int = 4) -> SearchStrategy[Sample]:
    """Closed or in-flight histories of the format, with their completed-turn cut."""
    return st.one_of(closed_histories(fmt, max_turns=max_turns),
                     in_flight_histories(fmt, max_turns=max_turns))


# --------------------------------------------------------------------------- broken histories

_Mutation: TypeAlias = Callable[[DrawFn, list[Item], _Rendered], tuple[int, Rule]]


@unchecked
def _site(draw: DrawFn, rendered: _Rendered, *, min_siblings: int = 1) -> _CallSite:
    sites = tuple(s for s in rendered.calls if s.siblings >= min_siblings)
    return sites[draw(st.integers(0, len(sites) - 1))]


@unchecked
def _turn_end(draw: DrawFn, rendered: _Rendered) -> int:
    return rendered.turn_ends[draw(st.integers(0, len(rendered.turn_ends) - 1))]


# Mutations of Chat and Responses alike (a result is one item of its own).

@unchecked
def _drop_result(draw: DrawFn, items: list[Item], rendered: _Rendered) -> tuple[int, Rule]:
    site = _site(draw, rendered)
    del items[site.result_at]
    return site.call_at, "unanswered-call"


@unchecked
def _duplicate_result(draw: DrawFn, items: list[Item], rendered: _Rendered) -> tuple[int, Rule]:
    site = _site(draw, rendered)
    again = dict(items[site.result_at])
    if "id" in again and "call_id" in again:  # an output with an item id of its own: a new one
        again["id"] += "_again"
    items.insert(site.result_at + 1, again)
    return site.result_at + 1, "duplicate-result"


# OpenAI Chat mutations.


@unchecked
def _stray_result(result: Item) -> _Mutation:
    """The mutation that puts ``result``, answering no call, where a turn ends."""
    @unchecked
    def mutation(draw: DrawFn, items: list[Item], rendered: _Rendered) -> tuple[int, Rule]:
        at = _turn_end(draw, rendered)
        items.insert(at, dict(result))  # a fresh item per history, as the others are
        return at, "orphan-result"
    return mutation


@unchecked
def _result_before(where: Literal["call_at", "step_at"]) -> _Mutation:
    """The mutation that moves a call's result before the call (``call_at``), or before the
    whole step that made it (``step_at``: Responses' reasoning keeps its item)."""
    @unchecked
    def mutation(draw: DrawFn, items: list[Item], rendered: _Rendered) -> tuple[int, Rule]:
        site = _site(draw, rendered)
        at = getattr(site, where)
        items.insert(at, items.pop(site.result_at))
        return at, "orphan-result"
    return mutation


@unchecked
def _chat_interleave(draw: DrawFn, items: list[Item], rendered: _Rendered) -> tuple[int, Rule]:
    site = _site(draw, rendered)
    role = _pick(draw, ("user", "system", "developer"))
    items.insert(site.call_at + 1, {"role": role, "content": "Be brief."})
    return site.call_at, "unanswered-call"


@unchecked
def _chat_duplicate_call(draw: DrawFn, items: list[Item], rendered: _Rendered,
                         ) -> tuple[int, Rule]:
    site = _site(draw, rendered, min_siblings=2)
    calls = items[site.call_at]["tool_calls"]
    first, second = calls[0]["id"], calls[1]["id"]
    items[site.call_at] = {**items[site.call_at],
                           "tool_calls": [calls[0], {**calls[1], "id": first}, *calls[2:]]}
    for index, item in enumerate(items):
        if item.get("role") == "tool" and item.get("tool_call_id") == second:
            items[index] = {**item, "tool_call_id": first}
    return site.call_at, "duplicate-call"


@unchecked
def _chat_no_call_id(draw: DrawFn, items: list[Item], rendered: _Rendered) -> tuple[int, Rule]:
    site = _site(draw, rendered)
    items[site.result_at] = {k: v for k, v in items[site.result_at].items()
                             if k != "tool_call_id"}
    return site.result_at, "shape"


# OpenAI Responses mutations.

@unchecked
def _responses_wrong_output(draw: DrawFn, items: list[Item], rendered: _Rendered,
                            ) -> tuple[int, Rule]:
    site = _site(draw, rendered)
    output = items[site.result_at]
    other = ("custom_tool_call_output" if output["type"] == "function_call_output"
             else "function_call_output")
    items[site.result_at] = {**{k: v for k, v in output.items() if k != "id"}, "type": other,
                             "call_id": site.call_id}
    return site.result_at, "orphan-result"


@unchecked
def _responses_lone_reasoning(draw: DrawFn, items: list[Item], rendered: _Rendered,
                              ) -> tuple[int, Rule]:
    at = _turn_end(draw, rendered)
    items.insert(at, {"type": "reasoning", "id": "rs_lone", "summary": [],
                      "encrypted_content": "gAAAAAB"})
    return at, "reasoning-alone"


@unchecked
def _responses_duplicate_item(draw: DrawFn, items: list[Item], rendered: _Rendered,
                              ) -> tuple[int, Rule]:
    with_ids = tuple(i for i, item in enumerate(items) if _has_item_id(item))
    at = _pick(draw, with_ids)
    items.insert(at + 1, dict(items[at]))
    return at + 1, "duplicate-item"


@unchecked
def _has_item_id(item: Item) -> bool:
    """An `id` of the item's own (a local_shell_call_output's `id` is its call's)."""
    return "id" in item and item.get("type") != "local_shell_call_output"


@unchecked
def _responses_reference(draw: DrawFn, items: list[Item], rendered: _Rendered,
                         ) -> tuple[int, Rule]:
    at = draw(st.integers(0, len(items)))
    items.insert(at, {"type": "item_reference", "id": "msg_stored"})
    return at, "stored-item"


# Anthropic mutations.

@unchecked
def _blocks(items: list[Item], at: int) -> list[Item]:
    return list(items[at]["content"])


@unchecked
def _anthropic_drop_result(draw: DrawFn, items: list[Item], rendered: _Rendered,
                           ) -> tuple[int, Rule]:
    site = _site(draw, rendered)
    kept = [b for b in _blocks(items, site.result_at) if b.get("tool_use_id") != site.call_id]
    if kept:
        items[site.result_at] = {"role": "user", "content": kept}
    else:
        del items[site.result_at]
    return site.call_at, "unanswered-call"


@unchecked
def _results_rewritten(rule: Rule, content: Callable[[list[Item], _CallSite], list[Item]],
                       ) -> _Mutation:
    """The mutation that replaces a call's results message by ``content(its blocks, the call)``,
    a message that breaks ``rule``."""
    @unchecked
    def mutation(draw: DrawFn, items: list[Item], rendered: _Rendered) -> tuple[int, Rule]:
        site = _site(draw, rendered)
        items[site.result_at] = {"role": "user",
                                 "content": content(_blocks(items, site.result_at), site)}
        return site.result_at, rule
    return mutation


@unchecked
def _stray_among(blocks: list[Item], site: _CallSite) -> list[Item]:
    """The blocks with a stray result added where the results, which come first, end."""
    count = sum(1 for b in blocks if b["type"] == "tool_result")
    stray = {"type": "tool_result", "tool_use_id": "toolu_stray", "content": "late"}
    return [*blocks[:count], stray, *blocks[count:]]


_anthropic_text_first = _results_rewritten("results-first", lambda blocks, site: [
    {"type": "text", "text": "Here you go."}, *blocks])
_anthropic_orphan = _results_rewritten("orphan-result", _stray_among)
_anthropic_duplicate_result = _results_rewritten("duplicate-result", lambda blocks, site: [
    next(b for b in blocks if b.get("tool_use_id") == site.call_id), *blocks])


@unchecked
def _anthropic_duplicate_call(draw: DrawFn, items: list[Item], rendered: _Rendered,
                              ) -> tuple[int, Rule]:
    site = _site(draw, rendered, min_siblings=2)
    blocks = _blocks(items, site.call_at)
    uses = [k for k, b in enumerate(blocks) if b["type"] == "tool_use"]
    first, second = blocks[uses[0]]["id"], blocks[uses[1]]["id"]
    blocks[uses[1]] = {**blocks[uses[1]], "id": first}
    items[site.call_at] = {"role": "assistant", "content": blocks}
    items[site.result_at] = {"role": "user", "content": [
        {**b, "tool_use_id": first} if b.get("tool_use_id") == second else b
        for b in _blocks(items, site.result_at)]}
    return site.call_at, "duplicate-call"


@unchecked
def _server_sites(rendered: _Rendered, items: list[Item]) -> tuple[tuple[int, int], ...]:
    """Server uses whose assistant turn is followed by a user message."""
    return tuple((at, block) for at, block in rendered.servers
                 if any(item["role"] == "user" for item in items[at + 1:]))


@unchecked
def _anthropic_drop_server_result(draw: DrawFn, items: list[Item], rendered: _Rendered,
                                  ) -> tuple[int, Rule]:
    at, block = _pick(draw, _server_sites(rendered, items))
    use_id = items[at]["content"][block]["id"]
    for index in range(at, len(items)):
        blocks = items[index]["content"]
        if isinstance(blocks, list) and any(b.get("tool_use_id") == use_id for b in blocks):
            items[index] = {**items[index], "content": [
                b for b in blocks if b.get("tool_use_id") != use_id]}
            break
    return at, "server-call-unanswered"


@unchecked
def _anthropic_drop_server_use(draw: DrawFn, items: list[Item], rendered: _Rendered,
                               ) -> tuple[int, Rule]:
    at, block = _pick(draw, tuple(rendered.servers))
    use_id = items[at]["content"][block]["id"]
    kept = [b for b in items[at]["content"] if b.get("id") != use_id]
    if kept:
        items[at] = {**items[at], "content": kept}
    else:  # a paused turn's first message held only the use
        del items[at]
    for index in range(at, len(items)):
        blocks = items[index]["content"]
        if isinstance(blocks, list) and any(b.get("tool_use_id") == use_id for b in blocks):
            return index, "orphan-result"
    raise AssertionError("a server use without its result was rendered")


@unchecked
def _anthropic_unsigned(draw: DrawFn, items: list[Item], rendered: _Rendered,
                        ) -> tuple[int, Rule]:
    at = _pick(draw, tuple(rendered.thinking_at))
    blocks = _blocks(items, at)
    blocks[0] = {"type": "thinking", "thinking": "Thinking it over."}
    items[at] = {"role": "assistant", "content": blocks}
    return at, "shape"


@unchecked
def _thinking_loops(rendered: _Rendered, items: list[Item]) -> tuple[tuple[int, int], ...]:
    """(results message, the turn's opening message) of open loops left with thinking after
    that opening message loses its thinking block."""
    loops = []
    starts = rendered.thinking_at
    for site in rendered.calls:
        opening = max((s for s in starts if s <= site.call_at), default=None)
        if opening is None:
            continue
        kept = items[:site.result_at + 1]
        evidence = sum(1 for k, item in enumerate(kept) if k != opening
                       and isinstance(item["content"], list)
                       and any(b["type"] in ("thinking", "redacted_thinking")
                               for b in item["content"]))
        if evidence:
            loops.append((site.result_at, opening))
    return tuple(sorted(set(loops)))


@unchecked
def _anthropic_strip_thinking(draw: DrawFn, items: list[Item], rendered: _Rendered,
                              ) -> tuple[int, Rule]:
    end, opening = _pick(draw, _thinking_loops(rendered, items))
    del items[end + 1:]
    items[opening] = {"role": "assistant", "content": [
        b for b in items[opening]["content"] if b["type"] not in ("thinking",
                                                                  "redacted_thinking")]}
    return opening, "thinking-first"


_MUTATIONS: dict[str, dict[str, tuple[_Mutation, Callable[[_Rendered, list[Item]], bool]]]] = {
    "openai-chat": {
        "drop-result": (_drop_result, lambda r, i: bool(r.calls)),
        "interleave": (_chat_interleave, lambda r, i: bool(r.calls)),
        "duplicate-result": (_duplicate_result, lambda r, i: bool(r.calls)),
        "orphan": (_stray_result({"role": "tool", "tool_call_id": "call_stray",
                                   "content": "late"}), lambda r, i: True),
        "result-first": (_result_before("call_at"), lambda r, i: bool(r.calls)),
        "duplicate-call": (_chat_duplicate_call,
                           lambda r, i: any(s.siblings > 1 for s in r.calls)),
        "no-call-id": (_chat_no_call_id, lambda r, i: bool(r.calls)),
    },
    "openai-responses": {
        "drop-output": (_drop_result, lambda r, i: bool(r.calls)),
        "orphan": (_stray_result({"type": "function_call_output", "call_id": "call_stray",
                                   "output": "x"}), lambda r, i: True),
        "duplicate-output": (_duplicate_result, lambda r, i: bool(r.calls)),
        "output-first": (_result_before("step_at"), lambda r, i: bool(r.calls)),
        "wrong-output": (_responses_wrong_output, lambda r, i: bool(r.calls)),
        "lone-reasoning": (_responses_lone_reasoning, lambda r, i: True),
        "duplicate-item": (_responses_duplicate_item,
                           lambda r, i: any(_has_item_id(item) for item in i)),
        "stored-item": (_responses_reference, lambda r, i: True),
    },
    "anthropic": {
        "drop-result": (_anthropic_drop_result, lambda r, i: bool(r.calls)),
        "text-first": (_anthropic_text_first, lambda r, i: bool(r.calls)),
        "orphan": (_anthropic_orphan, lambda r, i: bool(r.calls)),
        "duplicate-result": (_anthropic_duplicate_result, lambda r, i: bool(r.calls)),
        "duplicate-call": (_anthropic_duplicate_call,
                           lambda r, i: any(s.siblings > 1 for s in r.calls)),
        "drop-server-result": (_anthropic_drop_server_result,
                               lambda r, i: bool(_server_sites(r, i))),
        "drop-server-use": (_anthropic_drop_server_use, lambda r, i: bool(r.servers)),
        "unsigned-thinking": (_anthropic_unsigned, lambda r, i: bool(r.thinking_at)),
        "strip-thinking": (_anthropic_strip_thinking,
                           lambda r, i: bool(_thinking_loops(r, i))),
    },
}


@unchecked
def _anthropic_fallback(draw: DrawFn, items: list[Item], rendered: _Rendered,
                        ) -> tuple[int, Rule]:
    at = _turn_end(draw, rendered)
    items.insert(at, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_stray", "content": "late"}]})
    return at, "orphan-result"


@st.composite
@unchecked
def _broken(draw: DrawFn, fmt: str, max_turns: int) -> BrokenSample:
    rendered = _RENDER[fmt](_plan(draw, 1, max_turns))
    items = list(rendered.items)
    mutations = {name: mutate for name, (mutate, applies) in _MUTATIONS[fmt].items()
                 if applies(rendered, items)}
    if not mutations:  # an Anthropic history without a tool call: a stray result
        mutations = {"orphan": _anthropic_fallback}
    name = _pick(draw, tuple(sorted(mutations)))
    index, rule = mutations[name](draw, items, rendered)
    return BrokenSample(items=tuple(items), index=index, rule=rule)


@checked
def broken_histories(fmt: FormatName, *, max_turns: int = 3) -> SearchStrategy[BrokenSample]:
    """A valid history with exactly one defect, and where and which rule it breaks.

    Defects: a result dropped, answered twice, stray, or moved before its call; a message
    slipped between calls and their results; one id for two calls; a result without its
    ``tool_call_id`` (Chat); an output of the wrong type, a reasoning item alone, an item
    repeated, an ``item_reference`` (Responses); text before the results, a server tool's result
    or use dropped, an unsigned thinking block, an open tool loop whose turn lost its thinking
    (Anthropic). Every item before ``index`` is untouched.
    """
    return _broken(_name(fmt), max_turns)
