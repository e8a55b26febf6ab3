"""turnfork's pure core: DSH session events, the JSONL codec, balance and the fork seed.

Vendorable: relative imports only; no I/O, no clock, no randomness, no asyncio, no global
mutable state. Every function and method is type-checked at run time by beartype.
"""

from beartype import BeartypeConf
from beartype.claw import beartype_this_package

beartype_this_package(conf=BeartypeConf(
    warning_cls_on_decorator_exception=None,
    # Checks calls, not annotated assignments: module-level `X: TypeAlias = ...` aliases are
    # not values to check, and per-assignment checks would tax the per-event loops.
    claw_is_pep526=False,
))

from .child_plan import *  # noqa: E402, F403
from .child_plan import __all__ as _child_plan_all  # noqa: E402
from .closers import (  # noqa: E402
    ABORTED_BEFORE_DISPATCH_TEXT,
    ABORTED_TEXT,
    TOOL_NOT_STARTED_TEXT,
    TOOL_OUTCOME_UNKNOWN_TEXT,
    close_open_turn,
    tool_result_event,
)
from .codec import (  # noqa: E402
    DecodeError,
    decode_header_line,
    decode_log,
    decode_session,
    encode_event,
    encode_header_line,
    encode_log,
    encode_session,
)
from .delegation import *  # noqa: E402, F403
from .delegation import __all__ as _delegation_all  # noqa: E402
from .depth import *  # noqa: E402, F403
from .depth import __all__ as _depth_all  # noqa: E402
from .events import *  # noqa: E402, F403
from .events import __all__ as _events_all  # noqa: E402
from .history import (  # noqa: E402
    EMPTY_HISTORY,
    HistorySnapshot,
    Message,
    history_snapshot,
    model_history,
)
from .render import *  # noqa: E402, F403
from .render import __all__ as _render_all  # noqa: E402
from .results import *  # noqa: E402, F403
from .results import __all__ as _results_all  # noqa: E402
from .schema_subset import *  # noqa: E402, F403
from .schema_subset import __all__ as _schema_subset_all  # noqa: E402
from .seed import PrefixView, completed_turn_cut, completed_turn_prefix  # noqa: E402
from .structured import *  # noqa: E402, F403
from .structured import __all__ as _structured_all  # noqa: E402
from .trace import (  # noqa: E402
    EMPTY_TRACE,
    TOOL_NOT_STARTED,
    PendingCall,
    SurfaceNode,
    Trace,
    Violation,
    advance,
    check_balance,
    trace_log,
)

__all__ = [
    *_events_all,
    *_depth_all,
    *_delegation_all,
    *_child_plan_all,
    *_results_all,
    *_render_all,
    *_structured_all,
    *_schema_subset_all,
    "ABORTED_BEFORE_DISPATCH_TEXT",
    "ABORTED_TEXT",
    "TOOL_NOT_STARTED_TEXT",
    "TOOL_OUTCOME_UNKNOWN_TEXT",
    "close_open_turn",
    "tool_result_event",
    "DecodeError",
    "decode_log",
    "decode_session",
    "decode_header_line",
    "encode_event",
    "encode_log",
    "encode_session",
    "encode_header_line",
    "Message",
    "model_history",
    "HistorySnapshot",
    "EMPTY_HISTORY",
    "history_snapshot",
    "PrefixView",
    "completed_turn_cut",
    "completed_turn_prefix",
    "EMPTY_TRACE",
    "TOOL_NOT_STARTED",
    "PendingCall",
    "SurfaceNode",
    "Trace",
    "Violation",
    "advance",
    "check_balance",
    "trace_log",
]
