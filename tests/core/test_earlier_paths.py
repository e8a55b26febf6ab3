"""Names that moved keep importing from where they were documented.

The DSH projection moved from the formats' modules to ``core.wire_seed`` (the formats became a
tier without the DSH event model); its earlier names (``openai_chat.from_dsh``, each format's
``from_model_history``, ``common.plain_text``, ``IMAGE_PLACEHOLDER``, ``common.from_dsh_log``,
``HistoryPrefix``) still resolve from their earlier paths, to the bridge's own objects. The core
modules moved into tiers; their earlier paths (``turnfork.core.trace`` and the like) re-export
them (``tests/core/test_front_doors.py`` checks those against their tier modules).
"""

from __future__ import annotations

import importlib
import types
from pathlib import Path

import pytest

from turnfork.core import decode_session, log, wire_seed
from turnfork.core.formats import common

FIXTURE = (Path(__file__).resolve().parent.parent / "fixtures" / "dsh" / "derived"
           / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl")
FORMAT_MODULES = {"openai_chat": "openai-chat", "openai_responses": "openai-responses",
                  "anthropic": "anthropic"}


def _module(short: str) -> types.ModuleType:
    suffix = "" if short == "formats" else "." + short
    return importlib.import_module("turnfork.core.formats" + suffix)


def _events() -> tuple[object, ...]:
    return decode_session(FIXTURE.read_bytes(), projected=True).unwrap()[1]


def test_every_moved_name_resolves_to_the_bridges_object() -> None:
    """Each name a formats module lists as moved is the object ``wire_seed.EARLIER_NAMES``
    holds for it, on every access."""
    assert set(common.MOVED_TO_WIRE_SEED) == set(wire_seed.EARLIER_NAMES)
    for short, names in common.MOVED_TO_WIRE_SEED.items():
        assert set(wire_seed.EARLIER_NAMES[short]) == names, short
        module = _module(short)
        for name in names:
            assert getattr(module, name) is wire_seed.EARLIER_NAMES[short][name], (short, name)
            assert getattr(module, name) is getattr(module, name)
            assert name not in module.__all__


def test_the_earlier_imports_work_as_written() -> None:
    """``from … import`` the way the earlier docs wrote them."""
    from turnfork.core.formats import (  # type: ignore[attr-defined]
        IMAGE_PLACEHOLDER,
        HistoryPrefix,
    )
    from turnfork.core.formats.common import (  # type: ignore[attr-defined]
        from_dsh_log,
        plain_text,
    )
    from turnfork.core.formats.openai_chat import (  # type: ignore[attr-defined]
        from_dsh,
        from_model_history,
    )

    assert HistoryPrefix is log.SequencePrefix
    assert IMAGE_PLACEHOLDER == wire_seed.IMAGE_PLACEHOLDER == "[image omitted]"
    assert plain_text is wire_seed.plain_text
    assert callable(from_dsh) and callable(from_model_history) and callable(from_dsh_log)


@pytest.mark.parametrize("short", sorted(FORMAT_MODULES))
def test_a_formats_from_dsh_is_the_bridge_bound_to_its_format(short: str) -> None:
    """``openai_chat.from_dsh(events)`` and ``from_model_history(messages)`` give what the
    bridge gives for that format, as does ``common.from_dsh_log`` with the format's
    projection; a log that breaks a rule gives its violation."""
    module, format_name = _module(short), FORMAT_MODULES[short]
    events = log.completed_turn_prefix(_events())
    expected = wire_seed.from_dsh(events, format_name).unwrap()
    assert expected, "the fixture's seed projects to nothing"
    assert module.from_dsh(events).unwrap() == expected
    history = log.model_history(log.trace_log(events).unwrap())
    assert module.from_model_history(history) == expected
    projected = common.from_dsh_log(events, module.from_model_history)
    assert projected.unwrap() == expected
    broken = module.from_dsh(events[1:]).failure()
    assert isinstance(broken, log.Violation)


def test_a_name_that_never_lived_there_is_an_attribute_error() -> None:
    for short in ("formats", "common", *FORMAT_MODULES):
        with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
            _module(short).no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        _module("openai_chat").from_dsh_log  # noqa: B018 (common's name, not a format's)


#: The earlier names as docs/ listed them before the move, written out here rather than read
#: from the table under test.
DOCUMENTED_EARLIER_NAMES = {
    "formats": {"IMAGE_PLACEHOLDER", "HistoryPrefix"},
    "common": {"IMAGE_PLACEHOLDER", "HistoryPrefix", "plain_text", "from_dsh_log"},
    "openai_chat": {"from_dsh", "from_model_history"},
    "openai_responses": {"from_dsh", "from_model_history"},
    "anthropic": {"from_dsh", "from_model_history"},
}


def test_every_documented_earlier_name_still_resolves_from_its_module() -> None:
    """Each documented earlier name, and only those, resolves from its module: checked
    against the list above, not against the formats' own table."""
    assert {short: set(names) for short, names in common.MOVED_TO_WIRE_SEED.items()} == \
        DOCUMENTED_EARLIER_NAMES
    for short, names in DOCUMENTED_EARLIER_NAMES.items():
        module = _module(short)
        for name in names:
            assert getattr(module, name) is getattr(wire_seed, name, None) or \
                getattr(module, name) is wire_seed.EARLIER_NAMES[short][name]


def test_a_copy_of_the_formats_without_the_bridge_says_where_the_name_went(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A vendored formats tier without ``wire_seed``: an earlier name is an AttributeError
    that names the bridge, not a ModuleNotFoundError or a silent None."""
    real = importlib.import_module

    def without_bridge(name: str, package: str | None = None) -> types.ModuleType:
        if name.endswith("wire_seed"):
            raise ModuleNotFoundError(name)
        return real(name, package)

    monkeypatch.setattr(common.importlib, "import_module", without_bridge)
    with pytest.raises(AttributeError, match=r"turnfork\.core\.formats\.common\.plain_text "
                                             r"moved to wire_seed .* which this copy does "
                                             r"not hold"):
        common.plain_text  # type: ignore[attr-defined]  # noqa: B018
