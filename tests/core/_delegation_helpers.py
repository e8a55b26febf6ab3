"""Small builders and fixture loaders shared by the delegation tests (not a test module)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from msgspec import UnsetType

from turnfork.core import (
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    ContentBlock,
    Event,
    InboxSplicedData,
    InboxSplicedEvent,
    MessageSource,
    SandboxModeData,
    SandboxModeEvent,
    SessionEndSeedEvent,
    SessionHeader,
    StepData,
    StepEndEvent,
    StepStartEvent,
    TextBlock,
    TextDelta,
    ToolResultBlock,
    ToolResultEvent,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnStartData,
    TurnStartEvent,
    UserMessage,
    UserMessageEvent,
    decode_session,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dsh"
SNAPSHOTS = "examples__acp-agent__tests__snapshots__"


def tool_result(event: Event) -> tuple[str, bool | UnsetType]:
    """The text and isError flag of a one-text-block ``tool/result`` event."""
    assert isinstance(event, ToolResultEvent)
    block = event.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    text = block.content[0]
    assert isinstance(text, TextBlock)
    return text.text, block.is_error


def load(name: str) -> tuple[SessionHeader, tuple[Event, ...]]:
    """A committed (projected) DSH session fixture: header and events."""
    return decode_session((FIXTURES / name).read_bytes(), projected=True).unwrap()


class Log:
    """Appends events with ``seq`` = position, starting at ``start``."""

    def __init__(self, start: int = 0) -> None:
        self.start = start
        self.events: list[Event] = []

    @property
    def seq(self) -> int:
        return self.start + len(self.events)

    def turn(self, number: int, *, reason: TurnEndReason | None = None, text: str | None = None,
             chunks: tuple[str, ...] = (), step: bool = True, claim: bool = False,
             blocks: tuple[ContentBlock, ...] | None = None) -> Log:
        """One turn: optional claim, one step with optional chunks and assistant message."""
        self.events.append(TurnStartEvent(seq=self.seq, time=0, data=TurnStartData(turn=number)))
        if claim:
            self.events.append(InboxSplicedEvent(seq=self.seq, time=0, data=InboxSplicedData(
                target="next-turn", start=0, removed_count=1, inserted=())))
        if step:
            self.events.append(StepStartEvent(seq=self.seq, time=0,
                                              data=StepData(turn=number, step=1)))
            for piece in chunks:
                data = AssistantChunkData(turn=number, step=1, chunk=TextDelta(index=0, text=piece))
                self.events.append(AssistantChunkEvent(seq=self.seq, time=0, data=data))
            content = blocks if blocks is not None else (
                (TextBlock(text=text),) if text is not None else None)
            if content is not None:
                self.assistant(number, content)
            self.events.append(StepEndEvent(seq=self.seq, time=0,
                                            data=StepData(turn=number, step=1)))
        self.events.append(TurnEndEvent(seq=self.seq, time=0, data=TurnEndData(
            turn=number, reason=reason if reason is not None else TurnCompleted())))
        return self

    def assistant(self, turn: int, content: tuple[ContentBlock, ...]) -> Log:
        message = AssistantMessage(content=content, id=f"m{self.seq}",
                                   source=MessageSource(kind="model", provider="p", model="m"))
        self.events.append(AssistantMessageEvent(
            seq=self.seq, time=0, data=AssistantMessageData(turn=turn, step=1, message=message),
            surface_op="append"))
        return self

    def user(self, text: str) -> Log:
        self.events.append(UserMessageEvent(seq=self.seq, time=0, surface_op="append",
                                            data=UserMessage(content=(TextBlock(text=text),),
                                                             source=MessageSource(kind="user"),
                                                             id=f"u{self.seq}")))
        return self

    def sandbox(self, mode: Literal["read-only", "workspace-write", "danger-full-access"],
                delegated: bool = False) -> Log:
        data = (SandboxModeData(mode=mode, source="delegation") if delegated
                else SandboxModeData(mode=mode))
        self.events.append(SandboxModeEvent(seq=self.seq, time=0, data=data))
        return self

    def approval(self, policy: Literal["ask", "never"]) -> Log:
        self.events.append(ApprovalPolicyEvent(seq=self.seq, time=0, data=ApprovalPolicyData(
            policy=policy)))
        return self

    def end_seed(self) -> Log:
        self.events.append(SessionEndSeedEvent(seq=self.seq, time=0))
        return self

    def open_turn(self, number: int) -> Log:
        """A turn left in flight: started, one step open."""
        self.events.append(TurnStartEvent(seq=self.seq, time=0, data=TurnStartData(turn=number)))
        self.events.append(StepStartEvent(seq=self.seq, time=0,
                                          data=StepData(turn=number, step=1)))
        return self
