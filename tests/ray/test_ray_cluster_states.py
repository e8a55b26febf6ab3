"""Bad cluster states give clear errors and balanced logs: no cluster, a worker that cannot
start, an object store that is full, a cluster whose GCS dies mid-run. The scenarios that need
a cluster of their own run in a subprocess (``_ray_scenarios.py``), inside this run's network
namespace; the Ray processes one leaves behind are killed by pid."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import assert_balanced, close, contract_host, request, run, turn_ends

from turnfork.core import TurnInterrupted
from turnfork.shell import JsonlSessionStore, SubagentStartError

HERE = Path(__file__).resolve().parent


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path: Ray's socket paths must stay under 108 bytes."""
    directory = Path(tempfile.mkdtemp(prefix="tf-ray-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def scenario(name: str, directory: Path, timeout: float = 120.0) -> tuple[dict[str, Any],
                                                                          list[int]]:
    """Run a scenario; its summary and the Ray process ids it reported."""
    done = subprocess.run([sys.executable, str(HERE / "_ray_scenarios.py"), name,
                           str(directory)], cwd=HERE, capture_output=True, text=True,
                          timeout=timeout, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    pids = [pid for line in lines for pid in line.get("ray_pids", ())]
    assert done.returncode == 0 and lines, f"{name} failed ({done.returncode}):\n{done.stderr}"
    return lines[-1], pids


def kill_leftovers(pids: list[int]) -> None:
    for pid in set(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_without_a_cluster_the_start_is_refused(tmp_path: Path) -> None:
    """Ray never started: the parent's delegation is refused (RAY_NOT_CONNECTED, saying what
    to call), no child session exists, and the parent's turn completes balanced."""
    summary, pids = scenario("no-cluster", tmp_path)
    assert pids == []
    (result,) = summary["results"]
    assert result["error"] == "RAY_NOT_CONNECTED"
    assert result["text"].startswith("Error: Ray is not connected in this process: call "
                                     "ray.init(address=...)")
    assert summary["answer"] == "parent saw: " + result["text"]
    assert len(summary["sessions"]) == 1 and summary["parent_balanced"]


def test_a_worker_that_cannot_start_refuses_the_start(ray_cluster: str) -> None:
    """A pool whose setup raises on the worker: the start is refused before publication
    (RAY_WORKER_UNAVAILABLE, naming the setup's error) and nothing is left on the host."""
    import _ray_rules

    from turnfork.shell.ray import RayWorkerPool

    broken = RayWorkerPool(_ray_rules.broken_setup, size=1)

    async def main() -> None:
        host, parent, recorder = contract_host(broken)
        before = host.sessions.list()
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("ray-spawn", request("say hi"), parent=parent)
        assert refused.value.code == "RAY_WORKER_UNAVAILABLE"
        assert "this worker has no models" in str(refused.value)
        assert host.sessions.list() == before and recorder.events == []
        await close(host)

    try:
        run(main)
    finally:
        broken.close()


@pytest.mark.slow
def test_a_full_object_store_refuses_the_seed_and_recovers(short_dir: Path) -> None:
    """The store is full of pinned objects and may not fall back to disk: the fork is refused
    (RAY_SEED_NOT_STORED, with Ray's reason) and nothing is left; once the objects are freed
    the next fork runs."""
    summary, pids = scenario("full-store", short_dir)
    kill_leftovers(pids)
    assert summary["filled"].startswith("['OutOfDiskError']")
    warm, refused, accepted = summary["results"]
    assert warm == {"text": "say first", "error": None}
    assert refused["error"] == "RAY_SEED_NOT_STORED"
    assert refused["text"].startswith("Error: the fork seed (")
    assert "could not be put into Ray's object store: OutOfDiskError" in refused["text"]
    assert accepted == {"text": "say first", "error": None}
    assert summary["sessions"] == [summary["parent"]]
    assert summary["parent_balanced"] and summary["live"] == []


@pytest.mark.slow
def test_a_cluster_that_dies_mid_run_leaves_balanced_logs(short_dir: Path) -> None:
    """The GCS is killed while two children run: within seconds both are closed on the host
    with a diagnostic naming the GCS, the parent's turn completes, and every log on disk is
    balanced (the children's last turn interrupted)."""
    summary, pids = scenario("cluster-dies", short_dir)
    kill_leftovers(pids)
    assert summary["stops"] == ["error", "error"]
    for diagnostic in summary["diagnostics"]:
        assert "the Ray cluster's GCS at 127.0.0.1:" in diagnostic
        assert "stopped answering" in diagnostic
    assert summary["answer"].startswith("parent saw: Error: subagent run failed\nDiagnostic: "
                                        "the Ray cluster's GCS")
    store = JsonlSessionStore(short_dir / "sessions")
    assert_balanced(store.inspect(summary["parent"]).events, "parent on disk")
    for child in summary["children"]:
        events = store.inspect(child).events
        assert_balanced(events, "child on disk")
        assert turn_ends(events)[-1] == TurnInterrupted()
