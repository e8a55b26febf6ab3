"""What the trace tests compare (not a test module)."""

from __future__ import annotations

import msgspec

from turnfork.core import Event, Trace


def comparable(trace: Trace) -> tuple[dict[str, object], list[tuple[int, Event]]]:
    """A trace's fields, with the surface (compared by identity in SurfaceNode) as a list."""
    surface: list[tuple[int, Event]] = []
    node = trace.surface
    while node is not None:
        surface.append((node.seq, node.event))
        node = node.previous
    fields = msgspec.structs.asdict(trace)
    del fields["surface"]
    return (fields, surface)
