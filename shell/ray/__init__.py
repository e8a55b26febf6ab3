"""Fork and spawn children on a Ray cluster (the ``ray`` extra: ``pip install 'turnfork[ray]'``):
the providers and their pool (:mod:`.provider`), the worker actor and its wire (:mod:`.worker`),
and joining a cluster without Ray changing the host process (:mod:`.cluster`). Nothing in
turnfork imports this package. See ``docs/ray.md``.
"""

from .cluster import (
    RayUnavailableError,
    connect_cluster,
    gcs_address,
    network_isolated,
    probe_address,
    start_local_cluster,
)
from .provider import (
    PLACEMENT_STRATEGIES,
    RAY_CAPABILITIES,
    RAY_CLUSTER_LOST,
    RAY_NOT_CONNECTED,
    RAY_SEED_NOT_STORED,
    RAY_WORKER_UNAVAILABLE,
    RECOVERY_PROMPT,
    RayForkProvider,
    RayProvider,
    RaySpawnProvider,
    RayWorker,
    RayWorkerPool,
    RemoteChild,
)
from .worker import (
    CONTROL,
    ChildDone,
    ChildSpec,
    ChildStart,
    ChildWorker,
    EventsBatch,
    WorkerHost,
    WorkerInfo,
    WorkerSetup,
)

__all__ = [
    "RayForkProvider", "RaySpawnProvider", "RayProvider", "RayWorkerPool", "RayWorker",
    "RemoteChild", "RAY_CAPABILITIES", "RAY_NOT_CONNECTED", "RAY_WORKER_UNAVAILABLE",
    "RAY_CLUSTER_LOST", "RAY_SEED_NOT_STORED", "RECOVERY_PROMPT", "PLACEMENT_STRATEGIES",
    "CONTROL", "WorkerSetup", "WorkerHost", "WorkerInfo", "ChildWorker", "ChildSpec",
    "ChildStart", "EventsBatch", "ChildDone", "RayUnavailableError", "start_local_cluster",
    "connect_cluster", "gcs_address", "probe_address", "network_isolated",
]
