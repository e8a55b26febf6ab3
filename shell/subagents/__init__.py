"""Subagents: the runtime (``host.subagents``, :mod:`.registry`), what it and its providers agree
on (:mod:`.contract`), the in-process providers (:mod:`.providers`) and their runs (:mod:`.run`),
the parent's tools (:mod:`.tool`, :mod:`.control`, :mod:`.jobs`, :mod:`.report`) and the
continuation manager (:mod:`.continuation`). docs/api-shell-subagents.md lists every name.
"""

from .continuation import (
    Activation,
    AncestorAuthority,
    ContinuableSetup,
    ContinuableStarted,
    ContinuationManager,
    InterruptAuthority,
    ListedChild,
    ListedDiagnostic,
    PersistentStore,
    ReportDelivery,
    UserAuthority,
)
from .control import SubagentControlTools
from .jobs import BackgroundJobs, JobHooks, JobTools
from .providers import (
    ALL_CAPABILITIES,
    ContinuableRequest,
    ContinuableSeed,
    ForkProvider,
    InProcessProvider,
    SpawnProvider,
    drive_child,
)
from .registry import (
    ABORTED,
    DUPLICATE_PROVIDER,
    NO_PROVIDER,
    Registration,
    SubagentAbortedError,
    SubagentEnd,
    SubagentError,
    SubagentEvent,
    SubagentHost,
    SubagentListener,
    SubagentProvider,
    SubagentRunHandle,
    SubagentRuntime,
    SubagentStart,
    SubagentStartError,
    raise_on_failure,
)
from .report import ReportTool
from .run import StructuredCapture, SubagentRun
from .tool import BACKGROUND_DISABLED, DEFAULT_MAX_DEPTH, NO_CALLING_AGENT, SubagentTool

__all__ = [
    # .continuation
    "Activation", "AncestorAuthority", "ContinuableSetup", "ContinuableStarted",
    "ContinuationManager", "InterruptAuthority", "ListedChild", "ListedDiagnostic",
    "PersistentStore", "ReportDelivery", "UserAuthority",
    # .control, .jobs, .report, .run, .tool
    "SubagentControlTools", "BackgroundJobs", "JobHooks", "JobTools", "ReportTool",
    "StructuredCapture", "SubagentRun",
    "BACKGROUND_DISABLED", "DEFAULT_MAX_DEPTH", "NO_CALLING_AGENT", "SubagentTool",
    # .providers
    "ALL_CAPABILITIES", "ContinuableRequest", "ContinuableSeed", "ForkProvider",
    "InProcessProvider", "SpawnProvider", "drive_child",
    # .registry
    "ABORTED", "DUPLICATE_PROVIDER", "NO_PROVIDER", "Registration", "SubagentAbortedError",
    "SubagentEnd", "SubagentError", "SubagentEvent", "SubagentHost", "SubagentListener",
    "SubagentProvider", "SubagentRunHandle", "SubagentRuntime", "SubagentStart",
    "SubagentStartError", "raise_on_failure",
]
