"""The host process stays the host's (issue 27, D8): with ``log_to_driver=False`` what Ray tells
every driver about a dead worker does not reach its output; a driver interrupted by SIGINT
(a user's Ctrl-C) leaves no pending task or unread future behind, and balanced logs on disk;
and no environment variable of Ray's is left set once the cluster is shut down. Each runs in
a process of its own (``_ray_scenarios.py``), so that its output is all it printed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import assert_balanced, turn_ends
from test_ray_cluster_states import HERE, kill_leftovers, scenario, short_dir  # noqa: F401

from turnfork.core import TurnInterrupted
from turnfork.shell import JsonlSessionStore

#: What asyncio or Ray print when a driver leaves work behind or hears of a dead worker.
_NOISE = ("Task was destroyed but it is pending", "Future exception was never retrieved",
          "was never awaited", "A worker died", "(raylet)", "Unhandled error")


def _quiet(output: str) -> list[str]:
    return [line for line in output.splitlines() if any(noise in line for noise in _NOISE)]


@pytest.mark.slow
def test_a_dead_worker_is_not_announced_on_the_driver(short_dir: Path) -> None:  # noqa: F811
    """A worker is killed mid-child: the child's result is error, nothing of Ray's notice
    reaches stdout or stderr, and the process has the same RAY_* variables after the
    cluster's shutdown as before it started (its private home's aside)."""
    done = subprocess.run([sys.executable, str(HERE / "_ray_scenarios.py"), "worker-dies",
                           str(short_dir)], cwd=HERE, capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["stop"] == "error"
    assert summary["after"] == summary["before"]
    assert _quiet(done.stdout + done.stderr) == []
    assert done.stdout.splitlines() == [done.stdout.splitlines()[-1]]


@pytest.mark.slow
def test_an_interrupted_driver_ends_cleanly(short_dir: Path) -> None:  # noqa: F811
    """Two children run on two workers when the driver gets SIGINT: it ends without a
    pending task, an unread future or an unhandled Ray error; every event its sessions held
    is on disk, and loading them repairs each to a balanced log (the children's last turn
    interrupted, as the store's crash repair closes it)."""
    process = subprocess.Popen([sys.executable, str(HERE / "_ray_scenarios.py"), "interrupted",
                                str(short_dir)], cwd=HERE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        running = json.loads(process.stdout.readline())
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["interrupted"] is True
    assert _quiet(out + err) == []
    acknowledged = summary["acknowledged"]
    assert set(acknowledged) == {running["parent"], *running["running"]}
    store = JsonlSessionStore(short_dir / "sessions")
    for session_id, length in acknowledged.items():
        on_disk = store.inspect(session_id).events
        assert len(on_disk) == length, session_id  # nothing acknowledged is lost
        repaired = store.load(session_id).events
        assert list(repaired[:length]) == list(on_disk)
        assert_balanced(repaired, session_id)
    for child in running["running"]:
        assert turn_ends(store.load(child).events)[-1] == TurnInterrupted()
