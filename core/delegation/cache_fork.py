"""The cache-preserving fork: what a fork child differs in moves behind its seed.

Not DSH's: DSH puts a child's persona and structured-output instruction in its system prompt,
its filter narrows its tool list and its own tools join that list, so any child that differs
from its parent renders a request whose prefix ends near its start (a provider then bills the
whole inherited history as cache misses). In this mode (opt-in, beside DSH's default) the
child's system prompt and tool list are its parent's, byte for byte, and everything of its own
rides in its runtime context, which it writes after its seed:

* a persona becomes a runtime-context contribution (:data:`PERSONA_CONTEXT_NAME`, order 121,
  right after the delegation statement), worded to take precedence over the system prompt's;
* a requested output schema becomes an instruction to give the final answer as one JSON
  object matching the schema (:data:`STRUCTURED_ANSWER_NAME`, order 190); the answer's text is
  validated as a ``structured_output`` call's arguments are (:func:`structured_answer`);
* a continuable child whose parent does not list the ``report`` tool is told that its closing
  message of each turn is what reaches the agent that started it
  (:data:`CLOSING_REPORT_SECTION`): that message travels in the settlement notice already.

What a tool filter forbids stays listed and is refused when called (the shell's scope), in
DSH's words for a tool the caller's scope does not have.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Raw
from returns.result import Success

from .._checking import checked, plain
from ..log import ContentBlock, TextBlock
from .request import PromptSection
from .structured import StructuredOutputContract, validate_structured_arguments

# Calls into sibling modules get values this module's checked entry points took in: plain.
_validate_structured_arguments = plain(validate_structured_arguments)

__all__ = [
    "PERSONA_CONTEXT_NAME",
    "PERSONA_CONTEXT_ORDER",
    "STRUCTURED_ANSWER_NAME",
    "STRUCTURED_ANSWER_ORDER",
    "CLOSING_REPORT_SECTION",
    "persona_context",
    "structured_answer_context",
    "cache_preserving_context",
    "structured_answer",
]

PERSONA_CONTEXT_NAME = "subagent:persona"
PERSONA_CONTEXT_ORDER = 121
STRUCTURED_ANSWER_NAME = "subagent:structured-answer"
STRUCTURED_ANSWER_ORDER = 190

#: The guidance of a continuable child that has no ``report`` tool in its list.
CLOSING_REPORT_SECTION = PromptSection(
    name="subagent:closing-report", order=117, kind="context",
    text="You are a background subagent. The agent that started you receives your closing "
         "message when each of your turns ends: put in it what that agent needs (conclusions, "
         "and the shared paths they rest on). There is no separate report tool for you.")


@checked
def persona_context(persona: str) -> PromptSection:
    """A delegated persona as a runtime-context contribution.

    >>> persona_context("You review code.").text.endswith("You review code.")
    True
    """
    return PromptSection(
        name=PERSONA_CONTEXT_NAME, order=PERSONA_CONTEXT_ORDER, kind="context",
        text="For this delegated task, take the role below. Where it differs from the system "
             f"prompt, it takes precedence.\n\n{persona}")


@checked
def structured_answer_context(contract: StructuredOutputContract) -> PromptSection:
    """The instruction to answer with one JSON object matching the requested schema."""
    schema = bytes(contract.output_schema.schema).decode("utf-8")
    return PromptSection(
        name=STRUCTURED_ANSWER_NAME, order=STRUCTURED_ANSWER_ORDER, kind="context",
        text="When you have your final answer, you MUST give it as your closing message: one "
             "JSON object matching the schema below exactly, and nothing else (no prose, no "
             "code fence). Only that message counts as your result.\n\nSchema: " + schema)


@checked
def cache_preserving_context(persona: str | None,
                             structured: StructuredOutputContract | None
                             ) -> tuple[PromptSection, ...]:
    """The runtime-context contributions a cache-preserving child adds to its delegation
    statement, in order: its persona, its structured-answer instruction.

    >>> [section.name for section in cache_preserving_context("Be terse.", None)]
    ['subagent:persona']
    """
    own: list[PromptSection] = []
    if persona is not None:
        own.append(persona_context(persona))
    if structured is not None:
        own.append(structured_answer_context(structured))
    return tuple(own)


@checked
def structured_answer(contract: StructuredOutputContract,
                      output: Sequence[ContentBlock] | None) -> Raw | None:
    """The structured value a closing message carries: its text blocks joined, validated as
    ``structured_output`` arguments are; ``None`` when there is no text or it does not match
    (the run then ends as one that captured no value).

    >>> from msgspec import Raw
    >>> from turnfork.core import structured_output_contract, validate_output_schema
    >>> contract = structured_output_contract(validate_output_schema(
    ...     Raw(b'{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}')
    ... ).unwrap())
    >>> bytes(structured_answer(contract, (TextBlock(text=' {"n": 3} '),)))
    b'{"n": 3}'
    >>> structured_answer(contract, (TextBlock(text='{"n": "3"}'),)) is None
    True
    """
    if output is None:
        return None
    text = "".join(block.text for block in output if isinstance(block, TextBlock)).strip()
    if not text:
        return None
    validated = _validate_structured_arguments(contract.output_schema, text)
    return validated.unwrap() if isinstance(validated, Success) else None
