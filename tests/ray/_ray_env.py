"""Where the Ray tests' cluster may start, and what its processes inherit (shared by the
fixture and by the tests that start clusters of their own)."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: What the tests' workers need on their import path besides turnfork: ``_ray_rules``.
WORKER_PATH = str(HERE)


def isolation_problem() -> str | None:
    """Why Ray must not start here, or ``None``."""
    from turnfork.shell.ray import network_isolated

    if network_isolated() or os.environ.get("TURNFORK_RAY_ALLOW_NETWORK") == "1":
        return None
    return ("the Ray tests start a cluster, and Ray's head contacts cloud metadata servers "
            "when it starts: run them with no outside network, e.g. "
            "`.ci/no-network .venv/bin/python -m pytest tests/ray` (docs/ray.md)")


def worker_environment(home: Path) -> dict[str, str]:
    """What the cluster's processes inherit: the tests' modules on the path, a private home
    holding ``ray_bootstrap_config.yaml`` (Ray then skips its cloud probes), quiet Ray."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "ray_bootstrap_config.yaml").write_text("{}\n", encoding="utf-8")
    path = os.environ.get("PYTHONPATH")
    return {"HOME": str(home),
            "PYTHONPATH": WORKER_PATH if not path else f"{WORKER_PATH}{os.pathsep}{path}",
            "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
            "RAY_ENABLE_AUTO_CONNECT": "0", "RAY_DEDUP_LOGS": "0"}
