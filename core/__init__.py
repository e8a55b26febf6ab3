"""turnfork's pure core: DSH session events, the JSONL codec, the turn grammar and machine,
balance, the fork seed and the delegation rules.

Vendorable: relative imports only; no I/O, no clock, no randomness, no asyncio, no global
mutable state. Every public function is type-checked at run time by beartype, from its first
call (importing the core decorates nothing).

The front door (``__all__``) is what a vendor needs. The rest lives in its module and is
importable from there (and from this package): the event model is its own namespace,
``turnfork.core.events``; the grammar tables ``.grammar``; the turn machine's inputs and
commands ``.loop``; model-request retries ``.retry``; the delegation rules ``.depth``,
``.delegation``, ``.child_plan``, ``.results``, ``.render``, ``.structured``; the hypothesis
strategies ``.strategies`` (needs the ``hypothesis`` extra; never imported here).
"""

from . import (
    arguments,
    assembly,
    cache_fork,
    child_plan,
    closers,
    codec,
    context,
    continuation,
    control,
    delegation,
    depth,
    descriptor,
    events,
    grammar,
    history,
    jobs,
    loop,
    outcome,
    render,
    results,
    retry,
    schema_subset,
    seed,
    structured,
    trace,
)
from ._checking import check_public

for _module in (arguments, assembly, child_plan, closers, codec, context, delegation, depth, events,
                grammar, history, loop, outcome, render, results, schema_subset, seed, structured,
                trace, continuation, control, jobs, descriptor, retry, cache_fork):
    check_public(vars(_module))
del _module

# Every public name of the modules is reachable from the package (wrapped above, so checked);
# the front door below is the short list.
from .arguments import *  # noqa: E402, F403
from .assembly import *  # noqa: E402, F403
from .cache_fork import *  # noqa: E402, F403
from .child_plan import *  # noqa: E402, F403
from .closers import *  # noqa: E402, F403
from .codec import *  # noqa: E402, F403
from .context import *  # noqa: E402, F403
from .delegation import *  # noqa: E402, F403
from .depth import *  # noqa: E402, F403
from .events import *  # noqa: E402, F403
from .grammar import *  # noqa: E402, F403
from .history import *  # noqa: E402, F403
from .outcome import *  # noqa: E402, F403
from .render import *  # noqa: E402, F403
from .results import *  # noqa: E402, F403
from .retry import *  # noqa: E402, F403
from .schema_subset import *  # noqa: E402, F403
from .seed import *  # noqa: E402, F403
from .structured import *  # noqa: E402, F403
from .trace import *  # noqa: E402, F403

__all__ = [
    # namespaces
    "events",
    "grammar",
    "loop",
    # reading and writing logs
    "DecodeError",
    "decode_log",
    "decode_session",
    "encode_log",
    "encode_session",
    # balance
    "Trace",
    "Violation",
    "EMPTY_TRACE",
    "advance",
    "trace_log",
    "check_balance",
    # the fork seed
    "PrefixView",
    "completed_turn_prefix",
    "completed_turn_cut",
    # closing a turn
    "close_open_turn",
    # the model's view
    "Message",
    "model_history",
    # the turn machine
    "LoopState",
    "initial_loop_state",
    "feed",
    # delegation
    "StartRequest",
    "AgentOptions",
    "Capabilities",
    "StartError",
    "CheckedRequest",
    "check_request",
    "ParentView",
    "ChildPlan",
    "plan_child",
    # results
    "SubagentResult",
    "read_result",
    "final_assistant_output",
    "ToolOutcome",
    "render_tool_result",
]

from .loop import LoopState, feed, initial_loop_state  # noqa: E402
