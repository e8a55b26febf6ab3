"""DSH's on-disk directory names: projectKey(cwd) and encodeSegment(id) (wire-format §5.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnfork.shell.store import decode_segment, encode_segment, project_dir_name, project_key


@pytest.mark.parametrize(("cwd", "key"), [
    ("/home/u/proj", "--home-u-proj--"),
    ("/", "--root--"),
    ("", "--root--"),
    ("//a\\\\b::c/:\\d", "--a-b-c-d--"),
    ("/x/.hidden_dir-1", "--x-.hidden_dir-1--"),
    ("/home/~user", "--home-~007Euser--"),
    ("/tmp/a b", "--tmp-a~0020b--"),
    ("/café", "--caf~00E9--"),
    ("/😀", "--~D83D~DE00--"),
    ("/-lead", "--lead--"),
    ("{{cwd}}", "--~007B~007Bcwd~007D~007D--"),
])
def test_project_key(cwd: str, key: str) -> None:
    """Separator runs become one dash, safe characters stay, others are ~XXXX code units."""
    assert project_key(cwd) == key


def test_project_key_truncates_the_slug_to_251() -> None:
    """The slug is cut to 251 characters before the -- wrapping (255 in all)."""
    key = project_key("/" + "a" * 400)
    assert key == "--" + "a" * 251 + "--"
    assert len(key) == 255


def test_project_dir_name_without_cwd() -> None:
    """A session without cwd lives under _no-cwd."""
    assert project_dir_name(None) == "_no-cwd"
    assert project_dir_name("/w") == "--w--"


@pytest.mark.parametrize(("session_id", "segment"), [
    ("ea339828-1f2e-4c5d-9a8b-7c6d5e4f3a2b", "ea339828-1f2e-4c5d-9a8b-7c6d5e4f3a2b"),
    (".", "~002E"),
    ("..", "~002E~002E"),
    ("a.b", "a.b"),
    ("session-1", "session-1"),
    ("a/b:c\\d", "a~002Fb~003Ac~005Cd"),
    ("{{sessionId}}", "~007B~007BsessionId~007D~007D"),
])
def test_encode_segment(session_id: str, segment: str) -> None:
    """Ids are escaped per code unit, without the separator rule; . and .. are escaped."""
    assert encode_segment(session_id) == segment
    assert decode_segment(segment) == session_id


def test_empty_id_is_an_error() -> None:
    """encodeSegment refuses an empty id."""
    with pytest.raises(ValueError, match="must not be empty"):
        encode_segment("")


@pytest.mark.parametrize("segment", ["", "a~00", "a~00zz", "a b", "~002e"])
def test_decode_segment_refuses_foreign_names(segment: str) -> None:
    """Names the encoder cannot produce are refused."""
    with pytest.raises(ValueError):
        decode_segment(segment)


@given(st.text(min_size=1))
def test_segment_round_trip(session_id: str) -> None:
    """decode_segment inverts encode_segment for every id."""
    segment = encode_segment(session_id)
    assert decode_segment(segment) == session_id
    assert segment not in (".", "..") and "/" not in segment
