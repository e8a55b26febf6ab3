"""Subagents: the runtime registry, the in-process fork and spawn providers with their shared
driver, the runs they return, and the parent's ``subagent`` tool.

* :mod:`.contract`: what the runtime, the providers and the runs agree on: the refusal codes
  and errors, the ``SubagentProvider``, ``SubagentRunHandle`` and ``SubagentHost`` protocols,
  the lifecycle records ``SubagentStart`` and ``SubagentEnd`` (re-exported by :mod:`.registry`).
* :mod:`.registry`: ``SubagentRuntime`` (``host.subagents``).
* :mod:`.providers`: ``ForkProvider``, ``SpawnProvider`` and the driver that carries out the
  core's child plan.
* :mod:`.run`: ``SubagentRun`` and the structured-output capture.
* :mod:`.tool`: ``SubagentTool``.
* :mod:`.control`: ``SubagentControlTools`` (``send_message``, ``interrupt_agent``,
  ``list_agents``); :mod:`.jobs`: ``BackgroundJobs`` and ``JobTools`` (one-shot background
  runs, ``job_output``/``job_list``/``job_kill``).
* :mod:`.continuation`: ``ContinuationManager`` (``host.subagents.continuation``): continuable
  children a parent can talk to again, resumed from their logs.
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
    "ABORTED",
    "Activation",
    "AncestorAuthority",
    "BackgroundJobs",
    "JobHooks",
    "JobTools",
    "SubagentControlTools",
    "ContinuableSetup",
    "ContinuableStarted",
    "ContinuationManager",
    "InterruptAuthority",
    "ListedChild",
    "ListedDiagnostic",
    "PersistentStore",
    "ReportDelivery",
    "ReportTool",
    "UserAuthority",
    "ALL_CAPABILITIES",
    "BACKGROUND_DISABLED",
    "DEFAULT_MAX_DEPTH",
    "DUPLICATE_PROVIDER",
    "NO_CALLING_AGENT",
    "NO_PROVIDER",
    "ContinuableRequest",
    "ContinuableSeed",
    "ForkProvider",
    "InProcessProvider",
    "Registration",
    "SpawnProvider",
    "StructuredCapture",
    "SubagentAbortedError",
    "SubagentEnd",
    "SubagentError",
    "SubagentEvent",
    "SubagentHost",
    "SubagentListener",
    "SubagentProvider",
    "SubagentRun",
    "SubagentRunHandle",
    "SubagentRuntime",
    "SubagentStart",
    "SubagentStartError",
    "SubagentTool",
    "drive_child",
    "raise_on_failure",
]
