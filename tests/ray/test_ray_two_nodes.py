"""On a 2-node ``ray.cluster_utils.Cluster`` (loopback, a process of its own:
``_ray_two_nodes.py``, run once for this module): ``connect_cluster`` joins through
``RAY_ADDRESS``, a ``ray://`` address (Ray Client) and ``"auto"`` (the ways docs/ray.md's
"Joining a running cluster" names); a ``STRICT_SPREAD`` pool
has one worker per node and its children spread over both; a child on a node that is lost
resumes on the other node's worker (``recover=1``) while its sibling goes on."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_env import isolation_problem

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.slow


def _ray_client_logs(directory: Path) -> str:
    """The end of each Ray Client server log the run left: why a client could not join."""
    tails = []
    for log in sorted(directory.glob("t/session_*/logs/ray_client_server*.err")):
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[-25:]
        tails.append(f"\n--- {log.name} (last {len(lines)} lines)\n" + "\n".join(lines))
    return "".join(tails)


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[dict[str, Any]]:
    problem = isolation_problem()
    if problem is not None:
        pytest.fail(problem)
    directory = Path(tempfile.mkdtemp(prefix="tf-2n-"))  # short: Ray's socket paths
    try:
        done = subprocess.run([sys.executable, str(HERE / "_ray_two_nodes.py"),
                               str(directory)], cwd=HERE, capture_output=True, text=True,
                              timeout=600, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        assert done.returncode == 0 and lines, (
            f"failed ({done.returncode}):\n{done.stderr}{_ray_client_logs(directory)}")
        yield json.loads(lines[-1])
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_ray_address_is_joined_when_no_address_is_given(two_nodes: dict[str, Any]) -> None:
    assert two_nodes["env_joined"] == two_nodes["address"]
    assert two_nodes["env"] == {"fork": ["completed", "say Remember TEAL"]}


def test_a_ray_client_address_runs_children(two_nodes: dict[str, Any]) -> None:
    """Through Ray Client a fork child still recalls its seed; a spawn child has none."""
    assert two_nodes["client_joined"].startswith("ray://127.0.0.1:")
    assert two_nodes["client"] == {"fork": ["completed", "say Remember TEAL"],
                                   "spawn": ["completed", "nothing"]}


def test_auto_finds_the_cluster_this_machine_started(two_nodes: dict[str, Any]) -> None:
    assert two_nodes["auto_joined"] == two_nodes["address"]


def test_strict_spread_puts_one_worker_on_each_node(two_nodes: dict[str, Any]) -> None:
    """The two workers are on two nodes, and 20 children went to both (10 each: the least
    loaded worker takes the next child)."""
    across = two_nodes["auto"]
    assert len(set(across["nodes"].values())) == 2
    assert sorted(across["spread"].values()) == [10, 10]
    assert set(across["spread"]) == set(across["nodes"].values())


def test_a_child_on_a_lost_node_resumes_on_the_other(two_nodes: dict[str, Any]) -> None:
    across = two_nodes["auto"]
    assert (across["stop"], across["answer"]) == ("completed", "recovered")
    assert across["resumed_on"] == across["head"] != across["lost_node"]
    (reason,) = across["recoveries"]
    assert "died before it finished" in reason
    assert across["balanced"] and across["kept_running"]
