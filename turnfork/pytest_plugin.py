"""turnfork's pytest plugin (entry point ``turnfork`` of the group ``pytest11``).

It adds one fixture, ``wire_format``: a test that asks for it runs once per wire format
(``openai-chat``, ``openai-responses``, ``anthropic``), to pair with :mod:`turnfork.testing`'s
``histories(wire_format)`` and ``assert_balanced(…, wire_format)``. It is there only with the
``hypothesis`` extra installed: without hypothesis the plugin defines nothing. It imports no
other part of turnfork, sets no hypothesis profile and touches no other fixture, so a project's
own test run is as it was (``-p no:turnfork`` turns it off).
"""

from __future__ import annotations

import importlib.util

import pytest

__all__ = ["WIRE_FORMATS"]

#: The formats the fixture runs over (``core.formats.FORMAT_NAMES``, spelt out so that loading
#: the plugin imports nothing of turnfork).
WIRE_FORMATS = ("openai-chat", "openai-responses", "anthropic")


def _has_hypothesis() -> bool:
    try:
        return importlib.util.find_spec("hypothesis") is not None
    except (ImportError, ValueError):  # a broken or blocked installation counts as absent
        return False


if _has_hypothesis():

    @pytest.fixture(params=WIRE_FORMATS)
    def wire_format(request: pytest.FixtureRequest) -> str:
        """Each wire format in turn (the test runs once per format)."""
        return str(request.param)
