"""The JSON pieces every reading command shares: the input, a read error, a violation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core import Violation
from ..logfile import LoadedLog, LogReadError

if TYPE_CHECKING:
    from ...core.formats import FormatViolation
    from .histories import LoadedHistory

__all__ = ["input_json", "history_input_json", "error_json", "violation_json",
           "history_violation_json", "where"]


def input_json(path: str, log: LoadedLog | None) -> dict[str, Any]:
    """``path`` as given and what it turned out to be (``None`` fields when unreadable)."""
    return {
        "path": path,
        "file": None if log is None else log.file,
        "format": None if log is None else log.format,
        "projected": None if log is None else log.projected,
        "source": None if log is None else log.description,
        "events": None if log is None else len(log.events),
    }


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


def where(log: LoadedLog, line: int | None) -> str:
    """``file:line`` when a line is known, else the path as given."""
    return log.path if line is None else f"{log.file}:{line}"
