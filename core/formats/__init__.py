"""The completed-turn cut and balance checking for the wire histories other runtimes hold.

``turnfork.core.formats`` is a tier of its own: it imports nothing of the DSH event model, so a
runtime can copy this folder (with ``core/_checking.py``) alone. Its modules:

* :mod:`.openai_chat` — Chat Completions ``messages``;
* :mod:`.openai_responses` — Responses ``input`` items;
* :mod:`.anthropic` — Anthropic Messages ``messages``.

Each module reads a history of plain JSON-shaped items (dicts, or the SDKs' objects) in one
O(n) pass into a :class:`~.common.History`, and offers ``check_balance`` (a ``returns`` Result
whose failure names the item index, the rule and the provider's complaint; ``strict=True`` adds
the rules about one item's content), and ``completed_turn_prefix`` (a new list of the caller's
own items through the last completed turn, ready for any SDK). :func:`detect_format` tells the
formats apart where the items allow it, and :func:`decode_history` reads a history or a request
body in a named or detected format; :func:`server_side_history` says when a request body's
history is kept by the provider rather than held in the body.

Pure like the rest of the core: relative imports, no I/O; ``formats.strategies`` (hypothesis)
is not imported here. A DSH log becomes one of these formats through :mod:`core.wire_seed`.
"""

from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING as _TYPE_CHECKING

from . import anthropic as anthropic
from . import openai_chat as openai_chat
from . import openai_responses as openai_responses
from .common import FORMAT_NAMES as FORMAT_NAMES
from .common import STRICT_RULES as STRICT_RULES
from .common import FormatName as FormatName
from .common import FormatViolation as FormatViolation
from .common import History as History
from .common import Rule as Rule
from .common import completed_turn_cut as completed_turn_cut
from .common import completed_turn_prefix as completed_turn_prefix
from .common import moved_name as _moved_name
from .detect import decode_history as decode_history
from .detect import detect_format as detect_format
from .detect import history_items as history_items
from .detect import server_side_history as server_side_history

# Every name imported above, the three formats' modules first (mypy reads no built __all__;
# `import X as X` is its re-export), and the earlier paths' names, which the type checker
# does not see.
if not _TYPE_CHECKING:
    __all__ = ["anthropic", "openai_chat", "openai_responses"]
    __all__ += [name for name, value in globals().items()
                if not name.startswith("_") and not isinstance(value, _ModuleType)]

    def __getattr__(name: str) -> object:
        return _moved_name(__name__, __package__, name)
