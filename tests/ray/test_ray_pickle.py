"""``msgspec.UNSET`` pickles by reference once turnfork's Ray provider is imported (issue 27,
D5: its own reduction names only ``"UNSET"``, so pickle searched every loaded module for it,
0.14-0.23 ms each time Ray pickled a value that holds it)."""

from __future__ import annotations

import pickle
import sys
import types
from collections.abc import Iterator

import msgspec
import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")


class _Watched(types.ModuleType):
    """A module that counts the attributes looked up on it and has none."""

    looked = 0

    def __getattr__(self, name: str) -> object:
        _Watched.looked += 1
        raise AttributeError(name)


@pytest.fixture
def watched_first() -> Iterator[type[_Watched]]:
    """A watched module at the front of ``sys.modules``, where a module search starts."""
    saved = dict(sys.modules)
    sys.modules.clear()
    sys.modules["turnfork_watched"] = _Watched("turnfork_watched")
    sys.modules.update(saved)
    _Watched.looked = 0
    try:
        yield _Watched
    finally:
        sys.modules.pop("turnfork_watched", None)


def test_unset_pickles_without_a_module_search(watched_first: type[_Watched]) -> None:
    """Pickling UNSET (with pickle and with Ray's cloudpickle) looks in no module and gives
    UNSET itself back."""
    from ray import cloudpickle

    import turnfork.shell.ray  # noqa: F401  (registers the reduction)

    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        data = dumps(msgspec.UNSET)
        assert loads(data) is msgspec.UNSET
        assert b"turnfork.shell.ray._ray" in data
    assert watched_first.looked == 0
