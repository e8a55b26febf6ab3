"""What a stream assembles into, as DSH's block assembler does (packages/llm/llm/tests/
assembler.spec.ts, ``describe('BlockAssembler replay metadata')`` and its block rules)."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw

from turnfork.core import (
    BlockEnd,
    BlockStart,
    FinishChunk,
    FinishMaxTokens,
    FinishStop,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
)
from turnfork.core.assembly import (
    EMPTY_ASSEMBLY,
    StreamAssembly,
    assemble_chunk,
    assembled_blocks,
    interrupted_blocks,
)


def _assemble(*chunks: StreamChunk) -> StreamAssembly:
    assembly = EMPTY_ASSEMBLY
    for seq, chunk in enumerate(chunks):
        assembly = assemble_chunk(assembly, seq, chunk)
    return assembly


def _replay(entries: list[str] | None, **extra: object) -> Raw:
    envelope: dict[str, object] = {"response": {"id": "r1"}, **extra}
    if entries is not None:
        envelope["blocks"] = entries
    return Raw(msgspec.json.encode(envelope))


CALL = ToolCallBlock(id="c1", name="echo", arguments="{}")


def test_max_tokens_prunes_replay_entries_with_the_dropped_tool_calls() -> None:
    """'prunes per-block replay entries with the tool calls a max-tokens finish drops': text,
    tool call, reasoning → text and reasoning, entries 0 and 2, only response and blocks."""
    assembly = _assemble(
        BlockEnd(index=0, block=TextBlock(text="t")), BlockEnd(index=1, block=CALL),
        BlockEnd(index=2, block=ReasoningBlock(text="r")),
        FinishChunk(reason=FinishMaxTokens(),
                    replay_state=_replay(["meta-0", "meta-1", "meta-2"], extra="x")))
    blocks, replay = assembled_blocks(assembly)
    assert blocks == (TextBlock(text="t"), ReasoningBlock(text="r"))
    assert isinstance(replay, Raw)
    assert msgspec.json.decode(replay) == {"response": {"id": "r1"},
                                           "blocks": ["meta-0", "meta-2"]}


def test_misaligned_replay_entries_are_dropped() -> None:
    """'omits replay metadata whose per-block entries misalign with the emitted blocks'."""
    assembly = _assemble(BlockEnd(index=0, block=TextBlock(text="a")),
                         BlockEnd(index=1, block=TextBlock(text="b")),
                         FinishChunk(reason=FinishStop(), replay_state=_replay(["only"])))
    assert assembled_blocks(assembly)[1] is UNSET


def test_replay_passes_through_when_nothing_is_dropped() -> None:
    """'passes replay metadata through unchanged when assembly drops nothing' and 'keeps a
    text-only max-tokens response and its replay metadata intact'."""
    replay = _replay(["m0"], extra="kept")
    for reason in (FinishStop(), FinishMaxTokens()):
        assembly = _assemble(BlockEnd(index=0, block=TextBlock(text="a")),
                             FinishChunk(reason=reason, replay_state=replay))
        assert assembled_blocks(assembly)[1] is replay


def test_a_replay_without_block_entries_survives_a_tool_call_drop() -> None:
    """'keeps a max-tokens replay state with no per-block entries across a tool-call drop'."""
    replay = _replay(None)
    assembly = _assemble(BlockEnd(index=0, block=TextBlock(text="a")),
                         BlockEnd(index=1, block=CALL),
                         FinishChunk(reason=FinishMaxTokens(), replay_state=replay))
    blocks, kept = assembled_blocks(assembly)
    assert blocks == (TextBlock(text="a"),) and kept is replay


def test_a_half_streamed_call_counts_and_is_dropped_on_max_tokens() -> None:
    """DSH's max-tokens-continue fixture: a closed text block and a tool call seen only as a
    delta; the message keeps the text, the replay keeps the text's entry."""
    assembly = _assemble(
        BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Hel"),
        TextDelta(index=0, text="lo"), BlockEnd(index=0, block=TextBlock(text="Hello")),
        BlockStart(index=1, block_type="tool-call"),
        ToolCallDelta(index=1, id="c9", name="write", arguments_delta='{"pa'),
        FinishChunk(reason=FinishMaxTokens(),
                    replay_state=_replay([{"type": "text"}, {"type": "tool-call"}])))  # type: ignore[list-item]
    blocks, replay = assembled_blocks(assembly)
    assert blocks == (TextBlock(text="Hello"),)
    assert isinstance(replay, Raw)
    assert msgspec.json.decode(replay)["blocks"] == [{"type": "text"}]


def test_open_blocks_assemble_from_their_deltas_and_block_end_wins() -> None:
    """Blocks never closed assemble from their deltas (a call's id defaults to call-<index>);
    deltas after block-end and a second close are ignored."""
    assembly = _assemble(
        TextDelta(index=0, text="a"), TextDelta(index=0, text="b"),
        ReasoningDelta(index=1, text="why"),
        ToolCallDelta(index=2, id="", arguments_delta="{}"),
        BlockEnd(index=3, block=TextBlock(text="final")), TextDelta(index=3, text="late"),
        BlockEnd(index=3, block=TextBlock(text="second close")),
        FinishChunk(reason=FinishStop()))
    blocks, _ = assembled_blocks(assembly)
    assert blocks == (TextBlock(text="ab"), ReasoningBlock(text="why"),
                      ToolCallBlock(id="call-2", name="", arguments="{}"),
                      TextBlock(text="final"))
    assert assembly.chunk_seqs == tuple(range(8))


def test_an_interrupted_stream_keeps_only_text_with_content() -> None:
    """Interruption keeps text and reasoning with non-whitespace text, never tool calls."""
    assembly = _assemble(TextDelta(index=0, text="  "), ReasoningDelta(index=1, text="hm"),
                         BlockEnd(index=2, block=CALL), TextDelta(index=3, text="part"))
    assert interrupted_blocks(assembly) == (ReasoningBlock(text="hm"), TextBlock(text="part"))
