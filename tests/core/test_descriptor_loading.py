"""A log with a malformed or other-version descriptor loads, as DSH's loader reads it; the
descriptor is judged by its readers: cold resume trusts the first of the child's own suffix,
listing the last of the log (DSH descriptor.ts foldSubagentDescriptor, projection.ts; the
session loader in session-persistence/src/coordinator.ts checks no descriptor payload)."""

from __future__ import annotations

import json
from typing import Any

from _budget import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from turnfork.core import decode_log, decode_session, encode_log, trace_log
from turnfork.core.descriptor import (
    DescriptorAt,
    DescriptorError,
    fold_subagent_descriptor,
    identity_descriptor,
    is_descriptor_event,
    parse_subagent_descriptor,
)
from turnfork.core.events import OpaqueEvent, SubagentDescriptorData, SubagentDescriptorEvent


def descriptor_line(seq: int, payload: Any) -> bytes:
    data = json.dumps(payload, separators=(",", ":"))
    return f'{{"type":"subagent/descriptor","seq":{seq},"time":7,"data":{data}}}'.encode()


def log_of(*payloads: Any) -> bytes:
    lines = [b'{"type":"session/end-seed","seq":0,"time":7,"data":{}}']
    lines += [descriptor_line(seq, payload) for seq, payload in enumerate(payloads, start=1)]
    return b"\n".join(lines) + b"\n"


GOOD = {"version": 2, "mode": "continuable", "provider": "spawn", "label": "child work"}
MALFORMED = {"version": 2, "mode": "continuable", "provider": "spawn", "label": 7}
NEWER = {"version": 3, "mode": "resumable", "provider": "spawn", "memory": {"k": 1}}


def test_a_malformed_descriptor_loads_kept_exactly() -> None:
    """A descriptor DSH's service refuses does not fail the log: it is kept as written, the
    log traces clean, and it writes back byte for byte."""
    text = log_of(MALFORMED, "invalid", None, NEWER)
    events = decode_log(text).unwrap()
    assert [type(event) for event in events[1:]] == [OpaqueEvent] * 4
    assert all(is_descriptor_event(event) for event in events[1:])
    assert encode_log(events) == text
    assert trace_log(events).unwrap().is_closed


def test_a_well_formed_descriptor_is_typed() -> None:
    """An accepted descriptor decodes as the typed event, as before."""
    (_, event) = decode_log(log_of(GOOD)).unwrap()
    assert isinstance(event, SubagentDescriptorEvent)
    assert event.data == SubagentDescriptorData(version=2, mode="continuable", provider="spawn",
                                                label="child work")


def test_the_envelope_is_still_checked() -> None:
    """Only the payload is left to the readers: a descriptor without data, or with a
    surfaceOp, is still a bad record named by line and seq."""
    no_data = b'{"type":"subagent/descriptor","seq":0,"time":7}\n'
    assert str(decode_log(no_data).failure()) == (
        "line 1 (seq 0, subagent/descriptor): Object missing required field `data`")
    surfaced = b'{"type":"subagent/descriptor","seq":0,"time":7,"data":{},"surfaceOp":"append"}'
    assert "unknown field `surfaceOp`" in str(decode_log(surfaced).failure())


def test_a_fixture_with_a_malformed_descriptor_reads_alike_on_every_path() -> None:
    """The line-by-line path (projected fixtures) keeps what the fast path keeps."""
    header = b'{"type":"session","version":0,"id":"c","createdAt":1,"delegationDepth":1}\n'
    projected = (b'{"type":"subagent/descriptor","data":{"version":2,"mode":"one-shot",'
                 b'"provider":"spawn","persona":"p","agentModel":"m"}}\n')
    _, events = decode_session(header + projected, projected=True).unwrap()
    assert isinstance(events[0], OpaqueEvent)
    assert fold_subagent_descriptor(events).failure() == DescriptorError(
        message='persisted subagent descriptor payload has unknown field "persona"', seq=0)


def test_cold_resume_trusts_the_first_descriptor_of_the_own_suffix() -> None:
    """The first descriptor after the seed is authoritative: malformed, it is an error even
    with a good one after it; of another version, it is no descriptor; a seed's ancestor
    descriptor is skipped by starting at seedLength."""
    events = decode_log(log_of(MALFORMED, GOOD)).unwrap()
    assert fold_subagent_descriptor(events) == Failure(DescriptorError(
        message="persisted subagent descriptor label must be a string", seq=1))
    assert fold_subagent_descriptor(events, start=2).unwrap() == events[2].data
    newer_first = decode_log(log_of(NEWER, GOOD)).unwrap()
    assert fold_subagent_descriptor(newer_first) == Success(None)
    assert fold_subagent_descriptor(decode_log(log_of()).unwrap()) == Success(None)


def test_listing_trusts_the_last_descriptor() -> None:
    """Listing reads the last descriptor: a child's own overrides its seed's; a malformed or
    other-version last one leaves no identity (never an error)."""
    own_after_ancestor = decode_log(log_of(MALFORMED, GOOD)).unwrap()
    assert identity_descriptor(own_after_ancestor) == DescriptorAt(
        seq=2, data=SubagentDescriptorData(version=2, mode="continuable", provider="spawn",
                                           label="child work"))
    assert identity_descriptor(decode_log(log_of(GOOD, MALFORMED)).unwrap()) is None
    assert identity_descriptor(decode_log(log_of(GOOD, NEWER)).unwrap()) is None
    assert identity_descriptor(decode_log(log_of()).unwrap()) is None


_KEYS = ("version", "mode", "provider", "label", "agentProvider", "agentModel", "persona",
         "toolFilter", "extra")
_STRINGS = st.sampled_from(["", "spawn", "l", "ü"])
_VALUES = st.one_of(
    _STRINGS, st.sampled_from([2, 3, 2.0, 0, True, None, "2", "one-shot", "continuable"]),
    st.lists(_STRINGS, max_size=2),
    st.dictionaries(st.sampled_from(["allow", "deny", "except"]),
                    st.one_of(st.lists(st.one_of(_STRINGS, st.just(7)), max_size=2), _STRINGS),
                    max_size=2))


@st.composite
def payloads(draw: st.DrawFn) -> Any:
    """Descriptor-like payloads, mostly near DSH's shape so every rule gets hit."""
    payload = draw(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=6))
    if draw(st.booleans()):
        payload = {"version": 2, "mode": draw(st.sampled_from(["one-shot", "continuable"])),
                   "provider": "spawn", **payload}
    return draw(st.one_of(st.just(payload), _VALUES)) if draw(st.integers(0, 9)) == 0 \
        else payload


@settings(max_examples=examples(300))
@given(payloads())
@example({"version": 2.0, "mode": "one-shot", "provider": "spawn"})
@example({"version": 2, "mode": "one-shot", "provider": "spawn", "persona": "p", "agentModel": "m"})
def test_typed_only_when_accepted_and_judged_alike(payload: Any) -> None:
    """Whatever the payload, the log loads; the event is typed exactly when DSH's service
    accepts it and its version is written as an integer (``2.0`` is accepted, and kept as
    written); reading it from the log judges it as the payload itself is judged; and it writes
    back equal (byte for byte when kept opaque)."""
    text = descriptor_line(0, payload) + b"\n"
    (event,) = decode_log(text).unwrap()
    direct = parse_subagent_descriptor(payload)
    accepted = isinstance(direct, Success) and direct.unwrap() is not None
    integral = isinstance(payload, dict) and type(payload.get("version")) is int
    assert isinstance(event, SubagentDescriptorEvent) == (accepted and integral)
    folded = fold_subagent_descriptor((event,))
    assert folded == (direct if isinstance(direct, Success)
                      else Failure(DescriptorError(message=direct.failure().message, seq=0)))
    written = encode_log((event,))
    assert json.loads(written) == json.loads(text)
    if not isinstance(event, SubagentDescriptorEvent):
        assert written == text
