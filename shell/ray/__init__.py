"""Fork and spawn children on a Ray cluster (the ``ray`` extra: ``pip install 'turnfork[ray]'``).

* :mod:`.provider`: ``RayForkProvider``, ``RaySpawnProvider`` (registered like the in-process
  providers), the ``RayWorkerPool`` they run children on, and ``RemoteChild``, which carries a
  remote child's events into its session on the parent's host.
* :mod:`.worker`: ``ChildWorker``, the pool actor's body, its ``WorkerHost``, and what travels
  between host and worker.
* :mod:`.cluster`: starting a private local cluster or joining a running one without Ray
  changing the host process's signal handler and excepthook.

Nothing in turnfork imports this package: it is imported by the host that wants it. See
``docs/ray.md``.
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
    "RayForkProvider",
    "RaySpawnProvider",
    "RayProvider",
    "RayWorkerPool",
    "RayWorker",
    "RemoteChild",
    "RAY_CAPABILITIES",
    "RAY_NOT_CONNECTED",
    "RAY_WORKER_UNAVAILABLE",
    "RAY_CLUSTER_LOST",
    "RAY_SEED_NOT_STORED",
    "RECOVERY_PROMPT",
    "PLACEMENT_STRATEGIES",
    "CONTROL",
    "WorkerSetup",
    "WorkerHost",
    "WorkerInfo",
    "ChildWorker",
    "ChildSpec",
    "ChildStart",
    "EventsBatch",
    "ChildDone",
    "RayUnavailableError",
    "start_local_cluster",
    "connect_cluster",
    "gcs_address",
    "probe_address",
    "network_isolated",
]
