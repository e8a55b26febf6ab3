"""Kept importable: the names of :mod:`turnfork.core.log.codec`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.codec import (
    MAX_JSON_DEPTH,
    DecodeError,
    WireError,
    check_event,
    check_header,
    decode_header_line,
    decode_log,
    decode_session,
    encode_event,
    encode_header_line,
    encode_log,
    encode_session,
    is_json_line,
)

__all__ = [
    "MAX_JSON_DEPTH", "DecodeError", "WireError", "decode_log", "decode_session",
    "decode_header_line", "encode_log", "encode_session", "encode_event", "encode_header_line",
    "check_event", "check_header", "is_json_line",
]
