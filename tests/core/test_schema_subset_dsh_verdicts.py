"""The subset checker and validator give DSH's verdicts, word for word, on a recorded corpus.

``tests/fixtures/dsh_json_schema/verdicts.jsonl`` holds 400 schemas (valid and not,
most with several violations) and 400 values against supported schemas, each with the
violations DSH's own ``json-schema.ts`` (commit b150a551b8, run under node) reported: see that
folder's README.
"""

from __future__ import annotations

import json
from pathlib import Path

from returns.result import Success

from turnfork.core.schema_subset import check_object_schema, check_schema, value_violations

CORPUS = Path(__file__).parents[1] / "fixtures" / "dsh_json_schema" / "verdicts.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def test_the_corpus_is_what_it_says() -> None:
    """Ensures the corpus holds both kinds of case, valid and invalid ones of each."""
    schemas = [row for row in ROWS if "value" not in row]
    values = [row for row in ROWS if "value" in row]
    assert len(schemas) == len(values) == 400
    assert 50 < sum(row["supported"] for row in schemas) < 350
    assert sum(len(row["violations"]) > 1 for row in schemas) > 100
    assert 50 < sum(not row["violations"] for row in values) < 350


def test_schema_verdicts_are_dshs() -> None:
    """Ensures each schema gets exactly DSH's violations, in DSH's order."""
    differing = []
    for row in ROWS:
        if "value" not in row:
            result = (check_object_schema if row["object"] else check_schema)(row["schema"])
            ours = [] if isinstance(result, Success) else list(result.failure().violations)
            if ours != row["violations"]:
                differing.append((row, ours))
    assert differing == []


def test_value_verdicts_are_dshs() -> None:
    """Ensures each value gets exactly DSH's violations, in DSH's order, with its paths."""
    differing = []
    for row in ROWS:
        if "value" in row:
            ours = value_violations(check_schema(row["schema"]).unwrap(), row["value"],
                                    row["path"])
            if ours != row["violations"]:
                differing.append((row, ours))
    assert differing == []
