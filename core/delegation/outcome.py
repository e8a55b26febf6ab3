"""What a tool call produced: the one result type of the loop, the tools and the renderers.

A delegation's result as the parent's model sees it, a structured-output capture's answer and
any tool's return value are all a :class:`ToolOutcome`; the turn machine turns it into the
``tool/result`` event (wire-format §2.8).
"""

from __future__ import annotations

import msgspec

from ..log import ContentBlock, TextBlock, ToolErrorInfo

__all__ = ["ToolOutcome"]


class ToolOutcome(msgspec.Struct, frozen=True):
    """A tool call's result: its content, whether it is an error, the optional ``error`` key of
    its ``tool/result``, whether it ends the turn after the step's calls, and its typed value.

    >>> ToolOutcome("Error: no", is_error=True).blocks
    (TextBlock(text='Error: no'),)
    """

    content: str | tuple[ContentBlock, ...]
    is_error: bool = False
    error: ToolErrorInfo | None = None
    conclude_turn: bool = False
    #: The tool's typed result beside its rendered content, for programs (never logged; the
    #: ``subagent`` tool's is a :class:`~.control.SubagentToolValue`).
    value: object = None

    @property
    def blocks(self) -> tuple[ContentBlock, ...]:
        """The result's content blocks (a text result is one text block)."""
        if isinstance(self.content, str):
            return (TextBlock(text=self.content),)
        return self.content

    @property
    def text(self) -> str:
        """The result's text blocks, concatenated."""
        return "".join(block.text for block in self.blocks if isinstance(block, TextBlock))
