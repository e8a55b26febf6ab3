"""Kept importable: the names of :mod:`turnfork.core.machine.loop`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .machine.loop import (
    DEFAULT_MAX_STEPS,
    Backoff,
    BackoffDone,
    Begin,
    CallModel,
    Cancelled,
    CancelRequested,
    Chunk,
    Command,
    EndStream,
    Failed,
    Followup,
    LoopInput,
    LoopProtocolError,
    LoopState,
    LoopStep,
    PrepareStep,
    RunTools,
    Steer,
    StepBlocked,
    StepPrepared,
    Stop,
    StreamEnded,
    ToolDone,
    ToolOutcome,
    TurnProgress,
    Wake,
    feed,
    initial_loop_state,
)

__all__ = [
    "Followup", "Steer", "Begin", "StepPrepared", "StepBlocked", "Chunk", "StreamEnded",
    "BackoffDone", "ToolDone", "Failed", "CancelRequested", "Cancelled", "LoopInput", "Wake",
    "PrepareStep", "CallModel", "EndStream", "Backoff", "RunTools", "Stop", "Command",
    "ToolOutcome", "TurnProgress", "LoopState", "LoopStep", "LoopProtocolError",
    "DEFAULT_MAX_STEPS", "initial_loop_state", "feed",
]
