"""A fork child's seed record that names a size or a count below zero says so, rather than
calling a well-named seed file a stranger to its directory."""

from __future__ import annotations

import json

import pytest

from turnfork.core.log.files import LogReadError, seed_record_in


def _record(**fields: object) -> bytes:
    record = {"type": "turnfork/seed", "file": "seed-0.jsonl", "size": 15721, "events": 75,
              "lastTime": 1, **fields}
    return json.dumps(record).encode()


@pytest.mark.parametrize(("field", "value"), [("size", -1), ("events", -5)])
def test_a_negative_size_or_count_is_named(field: str, value: int) -> None:
    found = seed_record_in(_record(**{field: value}), "child/session.jsonl")
    assert isinstance(found, LogReadError)
    assert found.problem == (f"bad seed record: its {field} is {value}, below zero"), found
    assert found.line == 2


def test_a_bad_file_name_is_still_called_so() -> None:
    found = seed_record_in(_record(file="../x.jsonl"), "child/session.jsonl")
    assert isinstance(found, LogReadError)
    assert found.problem == "bad seed record: '../x.jsonl' is not a seed file of this directory"


def test_a_good_record_reads() -> None:
    found = seed_record_in(_record(), "child/session.jsonl")
    assert not isinstance(found, LogReadError) and found is not None
    assert (found.file, found.size, found.events) == ("seed-0.jsonl", 15721, 75)
