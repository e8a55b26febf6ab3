"""What one model call's stream assembles into (DSH's block assembler, wire-format §2.5-2.6).

Rules of this module:

* Blocks are kept per stream ``index`` in first-seen order. ``block-end`` is authoritative and
  freezes its block (later deltas for that index are ignored, and so is a second close); a
  block never closed assembles from its deltas: text and reasoning from their text, a tool call
  from its id (default ``call-<index>``), name (default ``""``) and argument deltas.
* The finish reason is the ``finish`` chunk's (``None`` until one arrives; the loop treats a
  stream that ends without one as cut, where DSH's assembler assumes ``stop``).
* On a ``max-tokens`` finish every tool call is dropped, complete or not: none can run safely.
  The replay envelope's ``blocks`` are pruned in step with the kept blocks (the envelope is then
  its ``response`` and the kept entries only); an envelope whose ``blocks`` do not align with
  the blocks seen is dropped; one without ``blocks`` passes through.
* An interrupted stream keeps only its text and reasoning blocks with non-whitespace text.
* Immutable and persistent: :func:`assemble_chunk` is O(1) in the chunks seen before, so a
  state can be kept per chunk without copying the stream.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .._checking import checked
from ..log import (
    BlockEnd,
    BlockStart,
    ContentBlock,
    FinishChunk,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)

__all__ = ["StreamAssembly", "EMPTY_ASSEMBLY", "assemble_chunk", "assembled_blocks",
           "interrupted_blocks", "ASSEMBLY_KINDS"]

#: The block kinds a stream can leave open (``block-start`` or deltas without ``block-end``).
ASSEMBLY_KINDS = ("text", "reasoning", "tool-call")


class _Pieces(msgspec.Struct, frozen=True, gc=False):
    """A persistent list of strings, newest first."""

    head: str
    rest: _Pieces | None


def _join(pieces: _Pieces | None) -> str:
    parts: list[str] = []
    while pieces is not None:
        parts.append(pieces.head)
        pieces = pieces.rest
    return "".join(reversed(parts))


class _Partial(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    kind: str
    text: _Pieces | None = None
    call_id: str | None = None
    call_name: str | None = None
    #: The ``block-end`` block: authoritative once set.
    block: ContentBlock | None = None


class _Seqs(msgspec.Struct, frozen=True, gc=False):
    head: int
    rest: _Seqs | None


class StreamAssembly(msgspec.Struct, frozen=True, kw_only=True):
    """One model call's stream so far."""

    #: Partial blocks in first-seen order (a stream holds few blocks).
    partials: tuple[_Partial, ...] = ()
    seqs: _Seqs | None = None
    usage: TokenUsage | None = None
    finish: FinishReason | None = None
    replay_state: Raw | UnsetType = UNSET

    @property
    def chunk_seqs(self) -> tuple[int, ...]:
        """The seqs of the chunks folded so far, in stream order."""
        found: list[int] = []
        node = self.seqs
        while node is not None:
            found.append(node.head)
            node = node.rest
        return tuple(reversed(found))



EMPTY_ASSEMBLY = StreamAssembly()


def _tag(value: msgspec.Struct) -> str:
    return str(value.__struct_config__.tag)


def _with_partial(assembly: StreamAssembly, index: int, kind: str) -> tuple[int, _Partial]:
    for position, partial in enumerate(assembly.partials):
        if partial.index == index:
            return position, partial
    return len(assembly.partials), _Partial(index=index, kind=kind)


def _replace(assembly: StreamAssembly, position: int, partial: _Partial,
             seqs: _Seqs) -> StreamAssembly:
    partials = assembly.partials
    updated = (*partials[:position], partial, *partials[position + 1:])
    return msgspec.structs.replace(assembly, partials=updated, seqs=seqs)


@checked
def assemble_chunk(assembly: StreamAssembly, seq: int, chunk: StreamChunk) -> StreamAssembly:
    """Fold the chunk logged at ``seq`` into the assembly."""
    seqs = _Seqs(seq, assembly.seqs)
    if isinstance(chunk, FinishChunk):
        return msgspec.structs.replace(assembly, seqs=seqs, finish=chunk.reason,
                                       replay_state=chunk.replay_state)
    if isinstance(chunk, UsageChunk):
        return msgspec.structs.replace(assembly, seqs=seqs, usage=chunk.usage)
    if isinstance(chunk, BlockStart):
        position, partial = _with_partial(assembly, chunk.index, chunk.block_type)
        if position < len(assembly.partials):
            return msgspec.structs.replace(assembly, seqs=seqs)
        return _replace(assembly, position, partial, seqs)
    if isinstance(chunk, BlockEnd):
        position, partial = _with_partial(assembly, chunk.index, _tag(chunk.block))
        if partial.block is not None:  # first close wins
            return msgspec.structs.replace(assembly, seqs=seqs)
        return _replace(assembly, position,
                        msgspec.structs.replace(partial, block=chunk.block), seqs)
    if isinstance(chunk, TextDelta | ReasoningDelta):
        kind = "text" if isinstance(chunk, TextDelta) else "reasoning"
        position, partial = _with_partial(assembly, chunk.index, kind)
        if partial.block is not None:  # a straggler after block-end
            return msgspec.structs.replace(assembly, seqs=seqs)
        return _replace(assembly, position, msgspec.structs.replace(
            partial, text=_Pieces(chunk.text, partial.text)), seqs)
    assert isinstance(chunk, ToolCallDelta)
    position, partial = _with_partial(assembly, chunk.index, "tool-call")
    if partial.block is not None:
        return msgspec.structs.replace(assembly, seqs=seqs)
    named = partial.call_name if isinstance(chunk.name, UnsetType) or not chunk.name \
        else chunk.name
    return _replace(assembly, position, msgspec.structs.replace(
        partial, call_id=chunk.id, call_name=named,
        text=_Pieces(chunk.arguments_delta, partial.text)), seqs)


def _block(partial: _Partial) -> ContentBlock | None:
    if partial.block is not None:
        return partial.block
    if partial.kind == "text":
        return TextBlock(text=_join(partial.text))
    if partial.kind == "reasoning":
        return ReasoningBlock(text=_join(partial.text))
    if partial.kind == "tool-call":
        return ToolCallBlock(id=partial.call_id or f"call-{partial.index}",
                             name=partial.call_name or "", arguments=_join(partial.text))
    return None  # an open block of a kind that cannot be assembled from deltas


@checked
def assembled_blocks(assembly: StreamAssembly,
                     ) -> tuple[tuple[ContentBlock, ...], Raw | UnsetType]:
    """The message a finished stream assembles into, and its replay envelope.

    Raises:
        ValueError: a block of a kind that only ``block-end`` can give was left open (DSH
            refuses to assemble it too).
    """
    every: list[ContentBlock] = []
    for partial in assembly.partials:
        block = _block(partial)
        if block is None:
            raise ValueError(f'cannot assemble incomplete block of type "{partial.kind}"')
        every.append(block)
    drop_calls = assembly.finish is not None and _tag(assembly.finish) == "max-tokens"
    kept = [not (drop_calls and isinstance(block, ToolCallBlock)) for block in every]
    blocks = tuple(block for block, keep in zip(every, kept, strict=True) if keep)
    return blocks, _pruned_replay(assembly.replay_state, kept)


def _pruned_replay(replay: Raw | UnsetType, kept: list[bool]) -> Raw | UnsetType:
    if isinstance(replay, UnsetType):
        return replay
    envelope = msgspec.json.decode(replay)
    entries = envelope.get("blocks") if isinstance(envelope, dict) else None
    if not isinstance(entries, list):
        return replay
    if len(entries) != len(kept):
        return UNSET  # entries that do not align with the blocks cannot be trusted
    if all(kept):
        return replay
    # DSH rebuilds the envelope from its response and the kept entries only.
    pruned: dict[str, object] = {}
    if "response" in envelope:
        pruned["response"] = envelope["response"]
    pruned["blocks"] = [entry for entry, keep in zip(entries, kept, strict=True) if keep]
    return Raw(msgspec.json.encode(pruned))


@checked
def interrupted_blocks(assembly: StreamAssembly) -> tuple[ContentBlock, ...]:
    """What a cancelled stream leaves: its text and reasoning with non-whitespace text."""
    kept: list[ContentBlock] = []
    for partial in assembly.partials:
        kind = partial.kind if partial.block is None else _tag(partial.block)
        if kind not in ("text", "reasoning"):
            continue
        block = _block(partial)
        if isinstance(block, TextBlock | ReasoningBlock) and block.text.strip():
            kept.append(block)
    return tuple(kept)
