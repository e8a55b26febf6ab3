"""Reading a persisted ``subagent/descriptor``: DSH's rules, in DSH's check order and words.

Rules of this module (DSH ``packages/subagent/subagent/src/descriptor.ts``
``parseSubagentDescriptor`` and ``foldSubagentDescriptor``, ``projection.ts``
``subagentIdentityProjectionDefinition``):

* DSH's session loader reads a ``subagent/descriptor`` whatever its payload: the payload is
  judged by its readers, the subagent service, not by the log. So the codec keeps a descriptor
  this module would refuse (or of another version) as an
  :class:`~.events.OpaqueEvent` of type ``subagent/descriptor`` with its exact JSON, and a
  typed :class:`~.events.SubagentDescriptorEvent` always holds a descriptor this runtime
  accepts. Both kinds are descriptor events here (:func:`is_descriptor_event`).
* :func:`parse_subagent_descriptor` checks a payload in DSH's order, each refusal in DSH's
  words (every one starts ``persisted subagent descriptor``): a JSON object; a numeric
  ``version``; a version other than :data:`~.events.SUBAGENT_DESCRIPTOR_VERSION` is *no
  descriptor and no error* (this runtime cannot classify it), whatever else the payload
  holds; ``mode`` ``one-shot`` or ``continuable``; no key outside the mode's set (one-shot:
  ``version, mode, provider, label``; continuable adds ``agentProvider, agentModel, persona,
  toolFilter``), the first such key named; a string ``provider``; the label (optional for
  one-shot, required for continuable); the continuable strings; the ``toolFilter`` object
  (known keys, string arrays, at least one of ``allow``/``deny``). The result keeps only the
  keys present, in DSH's order.
* Two folds, two questions. The subagent service (cold resume) trusts the *first* descriptor
  of the child's own suffix — the establishing provider appends exactly one, so a later one
  cannot rewrite the declared composition — and a malformed one is an error
  (:func:`fold_subagent_descriptor`; pass ``start=seedLength``: a fork seed may replay an
  ancestor's descriptor). Listing trusts the *last* descriptor of the whole log (a child's own
  overrides the one its seed replayed), and a malformed or other-version last one is no
  identity, never an error (:func:`identity_descriptor`; DSH's listing calls that child
  ``corrupt`` once it is settled).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET
from returns.result import Failure, Result, Success

from .._checking import checked
from .events import (
    SUBAGENT_DESCRIPTOR_VERSION,
    Event,
    OpaqueEvent,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    ToolRestriction,
)

__all__ = [
    "DESCRIPTOR_EVENT_TYPE",
    "DescriptorError",
    "DescriptorAt",
    "parse_subagent_descriptor",
    "is_descriptor_event",
    "fold_subagent_descriptor",
    "identity_descriptor",
]

#: The wire type of a descriptor event, typed or kept opaque.
DESCRIPTOR_EVENT_TYPE = "subagent/descriptor"

_PREFIX = "persisted subagent descriptor"
_BASE_KEYS = ("version", "mode", "provider", "label")
_ONE_SHOT_KEYS = frozenset(_BASE_KEYS)
_CONTINUABLE_KEYS = frozenset((*_BASE_KEYS, "agentProvider", "agentModel", "persona",
                               "toolFilter"))
_TOOL_FILTER_KEYS = frozenset(("allow", "deny"))


class DescriptorError(msgspec.Struct, frozen=True, kw_only=True):
    """Why a persisted descriptor cannot be trusted: ``message`` is DSH's text, verbatim;
    ``seq`` names the event when the payload came from a log."""

    message: str
    seq: int | None = None

    def __str__(self) -> str:
        return self.message if self.seq is None else f"seq {self.seq}: {self.message}"


class DescriptorAt(msgspec.Struct, frozen=True, kw_only=True):
    """A descriptor and the seq of the event it was read from."""

    seq: int
    data: SubagentDescriptorData


class _Refused(Exception):
    """One rule broken (raised inside this module only; returned as a DescriptorError)."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _known_keys(record: dict[str, Any], keys: frozenset[str], path: str) -> None:
    for key in record:
        if key not in keys:
            raise _Refused(f'{_PREFIX} {path} has unknown field "{key}"')


def _optional_string(record: dict[str, Any], key: str) -> str | None:
    if key not in record:
        return None
    value = record[key]
    if not isinstance(value, str):
        raise _Refused(f"{_PREFIX} {key} must be a string")
    return value


def _optional_strings(record: dict[str, Any], key: str) -> tuple[str, ...] | None:
    if key not in record:
        return None
    value = record[key]
    # A tuple only comes from a typed descriptor (JSON arrays read as lists).
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise _Refused(f"{_PREFIX} toolFilter.{key} must be an array of strings")
    return tuple(value)


def _tool_filter(value: object) -> ToolRestriction:
    if not isinstance(value, dict):
        raise _Refused(f"{_PREFIX} toolFilter must be an object")
    _known_keys(value, _TOOL_FILTER_KEYS, "toolFilter")
    allow = _optional_strings(value, "allow")
    deny = _optional_strings(value, "deny")
    if allow is None and deny is None:
        raise _Refused(f"{_PREFIX} toolFilter must declare allow and/or deny")
    return ToolRestriction(allow=UNSET if allow is None else allow,
                           deny=UNSET if deny is None else deny)


def _parse(value: object) -> SubagentDescriptorData | None:
    if not isinstance(value, dict):
        raise _Refused(f"{_PREFIX} payload must be an object")
    version = value.get("version")
    if not _is_number(version):
        raise _Refused(f"{_PREFIX} version must be a number")
    if version != SUBAGENT_DESCRIPTOR_VERSION:
        return None
    mode = value.get("mode")
    if mode not in ("one-shot", "continuable"):  # a tuple: mode may be unhashable
        raise _Refused(f'{_PREFIX} mode must be "one-shot" or "continuable"')
    _known_keys(value, _ONE_SHOT_KEYS if mode == "one-shot" else _CONTINUABLE_KEYS, "payload")
    provider = value.get("provider")
    if not isinstance(provider, str):
        raise _Refused(f"{_PREFIX} provider must be a string")
    if mode == "one-shot":
        label = _optional_string(value, "label")
        return SubagentDescriptorData(version=SUBAGENT_DESCRIPTOR_VERSION, mode=mode,
                                      provider=provider,
                                      label=UNSET if label is None else label)
    label = value.get("label")
    if not isinstance(label, str):
        raise _Refused(f"{_PREFIX} label must be a string")
    agent_provider = _optional_string(value, "agentProvider")
    agent_model = _optional_string(value, "agentModel")
    persona = _optional_string(value, "persona")
    tool_filter = _tool_filter(value["toolFilter"]) if "toolFilter" in value else None
    return SubagentDescriptorData(
        version=SUBAGENT_DESCRIPTOR_VERSION, mode=mode, provider=provider, label=label,
        agent_provider=UNSET if agent_provider is None else agent_provider,
        agent_model=UNSET if agent_model is None else agent_model,
        persona=UNSET if persona is None else persona,
        tool_filter=UNSET if tool_filter is None else tool_filter)


@checked
def parse_subagent_descriptor(payload: object, *, seq: int | None = None,
                              ) -> Result[SubagentDescriptorData | None, DescriptorError]:
    """A persisted descriptor payload checked by DSH's rules (see the module notes).

    Args:
        payload: the event's ``data`` as a JSON value (``dict``, ``list``, ``str``, number,
            ``bool``, ``None``), or a :class:`~.events.SubagentDescriptorData` (read as it
            would be written).
        seq: the event's seq, to name it in the error.

    Returns:
        ``Success(descriptor)`` rebuilt with only the keys present; ``Success(None)`` for a
        version this runtime cannot classify; ``Failure(DescriptorError)`` in DSH's words.

    >>> parse_subagent_descriptor({"version": 2, "mode": "one-shot", "provider": "spawn"})
    <Success: SubagentDescriptorData(version=2, mode='one-shot', provider='spawn', label=UNSET, \
agent_provider=UNSET, agent_model=UNSET, persona=UNSET, tool_filter=UNSET)>
    >>> parse_subagent_descriptor({"version": 3, "anything": True})
    <Success: None>
    >>> print(parse_subagent_descriptor({"version": 2, "mode": "continuable", "provider": "p"},
    ...                                 seq=4).failure())
    seq 4: persisted subagent descriptor label must be a string
    """
    if isinstance(payload, SubagentDescriptorData):
        payload = msgspec.to_builtins(payload)
    try:
        return Success(_parse(payload))
    except _Refused as refused:
        return Failure(DescriptorError(message=str(refused), seq=seq))


@checked
def is_descriptor_event(event: Event) -> bool:
    """Whether ``event`` is a ``subagent/descriptor``, typed or kept opaque by the codec."""
    return isinstance(event, SubagentDescriptorEvent) or (
        isinstance(event, OpaqueEvent) and event.type == DESCRIPTOR_EVENT_TYPE)


def _payload(event: SubagentDescriptorEvent | OpaqueEvent) -> object:
    if isinstance(event, SubagentDescriptorEvent):
        return event.data
    # The standard library reads lone-surrogate escapes as JSON.parse does (msgspec refuses).
    return json.loads(bytes(event.data))


def _read(event: Event) -> Result[SubagentDescriptorData | None, DescriptorError]:
    assert isinstance(event, SubagentDescriptorEvent | OpaqueEvent)
    return parse_subagent_descriptor(_payload(event), seq=event.seq)


@checked
def fold_subagent_descriptor(events: Sequence[Event], *, start: int = 0,
                             ) -> Result[SubagentDescriptorData | None, DescriptorError]:
    """The first descriptor of ``events[start:]``, checked (DSH ``foldSubagentDescriptor``:
    what cold resume trusts; pass the header's ``seedLength`` as ``start``).

    ``Success(None)`` when there is none or it is of another version; a malformed first one is
    a ``Failure`` even when a later one is well formed (the first is authoritative).

    >>> fold_subagent_descriptor(())
    <Success: None>
    """
    for index in range(start, len(events)):
        event = events[index]
        if is_descriptor_event(event):
            return _read(event)
    return Success(None)


@checked
def identity_descriptor(events: Sequence[Event]) -> DescriptorAt | None:
    """The last descriptor of ``events`` when it is one this runtime accepts (DSH's identity
    projection, last wins); ``None`` without one, or when the last is malformed or of another
    version (never an error: a listing reports such a settled child ``corrupt``).

    >>> identity_descriptor(())
    """
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if is_descriptor_event(event):
            read = _read(event)
            data = read.unwrap() if isinstance(read, Success) else None
            return None if data is None else DescriptorAt(seq=event.seq, data=data)
    return None
