"""A long surface is freed without exhausting the C stack."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_freeing_a_trace_with_a_very_long_surface_does_not_crash() -> None:
    """300,000 surface nodes (a 1M-event log holds ~170k) are freed cleanly."""
    script = textwrap.dedent("""
        from turnfork.core import SurfaceNode, Trace, SessionEndSeedEvent
        event = SessionEndSeedEvent(seq=0, time=0)
        node = None
        for seq in range(300_000):
            node = SurfaceNode(seq, event, node)
        trace = Trace(surface=node)
        del node, trace
        print("freed")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "freed"
