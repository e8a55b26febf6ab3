"""Starting or joining a Ray cluster from a turnfork host, without surprises in the host process.

Rules:

* The providers never start or join a cluster themselves (and never let Ray start one behind
  their back): the host calls :func:`start_local_cluster` or :func:`connect_cluster` (or
  ``ray.init`` itself) first.
* Both keep the host's SIGTERM handler, ``sys.excepthook`` and ``PYTHONBREAKPOINT``:
  ``ray.init`` replaces them and ``ray.shutdown`` restores nothing.
* :func:`connect_cluster` fails fast, naming the address, when nothing accepts a TCP
  connection there (``ray.init`` would retry for about 14 minutes).
* :func:`start_local_cluster` starts a private cluster owned by this process
  (``address="local"``: never a stale cluster named in ``/tmp/ray`` or ``RAY_ADDRESS``), with
  no dashboard, no usage statistics, token authentication off (nothing leaves the machine's
  loopback that needs it) and an explicit object-store size.
* Ray's head contacts cloud metadata servers (169.254.169.254, metadata.google.internal)
  whenever it starts, usage statistics or not; :func:`network_isolated` tells whether this
  process can reach only loopback (a network namespace of its own), which is how turnfork's
  tests and benchmarks run Ray (``docs/ray.md``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

from ._ray import ray

__all__ = [
    "RayUnavailableError",
    "network_isolated",
    "gcs_address",
    "start_local_cluster",
    "connect_cluster",
]

#: What ``start_local_cluster`` claims of shared memory unless told otherwise (Ray's default
#: is 30 % of the machine's RAM).
DEFAULT_OBJECT_STORE_BYTES = 256 * 2**20


class RayUnavailableError(RuntimeError):
    """No Ray cluster to run children on: not connected, or unreachable at an address."""


def network_isolated() -> bool:
    """Whether this process sees only loopback interfaces (a network namespace of its own)."""
    return all(name == "lo" for _, name in socket.if_nameindex())


def gcs_address() -> str | None:
    """The connected cluster's GCS address (``host:port``), or ``None`` when not connected."""
    if not ray.is_initialized():
        return None
    return str(ray.get_runtime_context().gcs_address)


@contextlib.contextmanager
def _host_handlers_kept() -> Iterator[None]:
    term = signal.getsignal(signal.SIGTERM)
    hook = sys.excepthook
    breakpoint_hook = os.environ.get("PYTHONBREAKPOINT")
    try:
        yield
    finally:
        if term is not None:
            with contextlib.suppress(ValueError):  # not the main thread: Ray installed nothing
                signal.signal(signal.SIGTERM, term)
        sys.excepthook = hook
        if breakpoint_hook is None:
            os.environ.pop("PYTHONBREAKPOINT", None)
        else:
            os.environ["PYTHONBREAKPOINT"] = breakpoint_hook


def _quiet_defaults(init: dict[str, Any]) -> dict[str, Any]:
    init.setdefault("include_dashboard", False)
    init.setdefault("log_to_driver", False)
    init.setdefault("logging_level", logging.WARNING)
    return init


def start_local_cluster(*, num_cpus: int | None = None,
                        object_store_memory: int = DEFAULT_OBJECT_STORE_BYTES,
                        temp_dir: str | None = None, **init: Any) -> str:
    """Start a private local cluster owned by this process; returns its GCS address.

    Args:
        num_cpus: CPUs the cluster offers (default: the machine's). Pool workers need none.
        object_store_memory: bytes of shared memory for the object store.
        temp_dir: where Ray keeps its session files (default ``/tmp/ray``); its socket paths
            must stay under about 100 characters.
        init: further ``ray.init`` keywords.

    Raises:
        RayUnavailableError: Ray is connected already (``ray.shutdown()`` first).
    """
    if ray.is_initialized():
        raise RayUnavailableError("Ray is already connected in this process: call "
                                  "ray.shutdown() before starting a local cluster")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    if temp_dir is not None:
        init["_temp_dir"] = temp_dir
    with _host_handlers_kept():
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=object_store_memory,
                 **_quiet_defaults(init))
    address = gcs_address()
    assert address is not None
    return address


def connect_cluster(address: str, *, timeout: float = 5.0, **init: Any) -> str:
    """Join the running cluster whose GCS is at ``address`` (``host:port``); returns it.

    The cluster's Ray and Python versions must be this process's; a cluster with token
    authentication needs ``RAY_AUTH_MODE=token`` and its token in this process's environment.

    Raises:
        RayUnavailableError: Ray is connected already, or nothing accepts a TCP connection at
            ``address`` within ``timeout`` seconds.
    """
    if ray.is_initialized():
        raise RayUnavailableError("Ray is already connected in this process")
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as error:
        raise RayUnavailableError(f"no Ray cluster answers at {address}: {error}") from error
    os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")
    with _host_handlers_kept():
        ray.init(address=address, **_quiet_defaults(init))
    return address
