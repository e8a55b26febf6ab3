"""Which descriptor a continuable child's log is read by (DSH's continuation.ts cold resume and
projection.ts / list-children.ts listing; spec packages/subagent/subagent/tests/service.spec.ts
descriptor cases): cold resume trusts the first descriptor of the child's own suffix and refuses
a malformed one with its parse text; listing trusts the last and has no identity when the last
is malformed."""

from __future__ import annotations

import json
from typing import Any

from returns.result import Failure

from turnfork.core import SessionHeader, decode_log
from turnfork.core.continuation import (
    MALFORMED_DESCRIPTOR,
    NOT_RESUMABLE,
    ChildIdentity,
    child_identity,
    resume_terms,
)

GOOD = {"version": 2, "mode": "continuable", "provider": "spawn", "label": "child work"}
MALFORMED = {"version": 2, "mode": "continuable", "provider": "spawn", "label": 7}
HEADER = SessionHeader(id="c", created_at=0, parent_session="p", seed_length=1)


def events_of(*payloads: Any) -> Any:
    lines = ['{"type":"session/end-seed","seq":0,"time":7,"data":{}}']
    lines += [json.dumps({"type": "subagent/descriptor", "seq": seq, "time": 7, "data": payload})
              for seq, payload in enumerate(payloads, start=1)]
    return decode_log(("\n".join(lines) + "\n").encode()).unwrap()


def test_a_malformed_first_descriptor_refuses_resume_with_its_parse_text() -> None:
    """Malformed first, good second: DSH throws the parse error (a plain one), as it does for a
    log holding only the malformed one."""
    for events in (events_of(MALFORMED, GOOD), events_of(MALFORMED)):
        refused = resume_terms(HEADER, events)
        assert isinstance(refused, Failure)
        error = refused.failure()
        assert (error.code, error.name, error.message) == (
            MALFORMED_DESCRIPTOR, None, "persisted subagent descriptor label must be a string")


def test_a_good_first_descriptor_resumes_and_none_is_not_resumable() -> None:
    assert resume_terms(HEADER, events_of(GOOD, MALFORMED)).unwrap().label == "child work"
    assert resume_terms(HEADER, events_of()).failure().code == NOT_RESUMABLE


def test_listing_has_no_identity_when_the_last_descriptor_is_malformed() -> None:
    """Good then malformed: no identity (a settled child is listed corrupt); malformed then
    good: the good one, at its seq."""
    assert child_identity(events_of(GOOD, MALFORMED)) is None
    assert child_identity(events_of(MALFORMED, GOOD)) == ChildIdentity(
        mode="continuable", label="child work", seq=2)
