"""The JSON pieces every reading command shares: the input, a read error, a violation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core import Violation
from ..logfile import LoadedLog, LogReadError, LogStream, TornTail

if TYPE_CHECKING:
    from ...core.formats import FormatViolation
    from .histories import LoadedHistory

__all__ = ["input_json", "history_input_json", "error_json", "violation_json",
           "history_violation_json", "torn_json", "where"]


def input_json(path: str, log: LoadedLog | LogStream | None,
               events: int | None = None) -> dict[str, Any]:
    """``path`` as given and what it turned out to be (``None`` fields when unreadable);
    ``events``: how many it holds (a stream's count, once read)."""
    if events is None and isinstance(log, LoadedLog):
        events = len(log.events)
    return {
        "path": path,
        "file": None if log is None else log.file,
        "format": None if log is None else log.format,
        "projected": None if log is None else log.projected,
        "source": None if log is None else log.description,
        "events": None if log is None else events,
    }


def torn_json(torn: TornTail | None) -> dict[str, object] | None:
    """What the read left out by the torn-tail rule: ``{line, bytes, cause, keep_bytes,
    message}``."""
    if torn is None:
        return None
    return {"line": torn.line, "bytes": torn.dropped_bytes, "cause": torn.cause,
            "keep_bytes": torn.keep_bytes, "message": torn.words}


def history_input_json(path: str, loaded: LoadedHistory) -> dict[str, Any]:
    """A wire history's ``path`` and what it turned out to be."""
    return {
        "path": path,
        "file": loaded.file,
        "format": loaded.format,
        "layout": loaded.layout,
        "detected": loaded.detected,
        "thinking": loaded.thinking,
        "source": loaded.description,
        "items": loaded.items,
    }


def error_json(error: LogReadError) -> dict[str, object]:
    return {"file": error.file, "line": error.line, "seq": error.seq,
            "event_type": error.event_type, "problem": error.problem,
            "message": error.message}


def violation_json(violation: Violation, line: int | None) -> dict[str, object]:
    return {"seq": violation.seq, "rule": violation.rule, "message": violation.problem,
            "line": line}


def history_violation_json(violation: FormatViolation | None,
                           loaded: LoadedHistory) -> dict[str, object] | None:
    if violation is None:
        return None
    return {"index": violation.index, "rule": violation.rule, "message": violation.problem,
            "line": loaded.line_of(violation.index)}


def where(log: LoadedLog | LogStream, line: int | None, file: str | None = None) -> str:
    """``file:line`` when a line is known (``file``: the log's own unless given), else the
    path as given."""
    return log.path if line is None else f"{file or log.file}:{line}"
