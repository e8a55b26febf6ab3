"""The Ray tests run on a real local cluster that this session starts (``pip install -e
'.[ray]'``); without Ray they skip.

CI installs the extra and sets TURNFORK_REQUIRE_RAY=1: then a skipped Ray test, or none
collected, fails the run instead of passing it quietly.

Ray's head contacts cloud metadata servers whenever it starts, so these tests refuse to start
a cluster unless the process can reach only loopback (otherwise they skip, saying why, or fail
under TURNFORK_REQUIRE_RAY=1): run them in a network namespace of their own,
``.ci/no-network .venv/bin/python -m pytest tests/ray`` (see docs/ray.md). On top of
that, the cluster starts with ``~/ray_bootstrap_config.yaml`` present in a private home, which
keeps Ray's usage code from probing at all.

Each module skips on ``importorskip("ray.actor")``, not ``"ray"``: pytest puts ``tests/`` on
``sys.path``, so without the extra ``import ray`` finds this folder as a namespace package and
succeeds.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _ray_env import isolation_problem, worker_environment

REQUIRED = os.environ.get("TURNFORK_REQUIRE_RAY") == "1"
#: Shared memory the test cluster's object store may claim.
OBJECT_STORE_BYTES = 128 * 2**20


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not REQUIRED:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped or session.testscollected == 0:
        names = ", ".join(report.nodeid for report in skipped) or "no test collected"
        print(f"\nTURNFORK_REQUIRE_RAY=1: the Ray tests must run, not skip ({names})")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A local cluster for the whole session (2 CPUs, a small object store); its address."""
    pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")
    problem = isolation_problem()
    if problem is not None:
        # Outside CI a reachable network skips them, saying why; CI requires them to run.
        (pytest.fail if REQUIRED else pytest.skip)(problem)
    from turnfork.shell.ray import start_local_cluster
    from turnfork.shell.ray._ray import ray

    # A short path: Ray's socket paths must stay under 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="tf-ray-"))
    home = os.environ.get("HOME")
    os.environ.update(worker_environment(root / "home"))
    try:
        address = start_local_cluster(num_cpus=2, object_store_memory=OBJECT_STORE_BYTES,
                                      temp_dir=str(root / "t"))
    finally:  # the cluster's processes keep the private home; this one gets its own back
        if home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = home
    yield address
    ray.shutdown()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pool(ray_cluster: str) -> Iterator[Any]:
    """Two pool workers configured by ``_ray_rules.configure``, shared by the tests."""
    import _ray_rules

    from turnfork.shell.ray import RayWorkerPool

    workers = RayWorkerPool(_ray_rules.configure, size=2, stop_timeout=5.0)
    yield workers
    workers.close()
