"""Starting or joining a Ray cluster from a turnfork host, without surprises in the host process
(rules: ``docs/ray.md``). The providers never start or join one themselves; both ways keep the
host's SIGTERM handler, ``sys.excepthook``, ``PYTHONBREAKPOINT`` and the rest of its
environment, which ``ray.init`` replaces and ``ray.shutdown`` does not restore.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from ._ray import bootstrap_address, client, driver, log_dispatcher, ray

__all__ = ["RayUnavailableError", "network_isolated", "gcs_address", "probe_address",
           "start_local_cluster", "connect_cluster"]

#: Ray's default is 30 % of the machine's RAM.
DEFAULT_OBJECT_STORE_BYTES = 256 * 2**20
CLIENT_SCHEME = "ray://"

_log = logging.getLogger("turnfork.shell.ray")


class RayUnavailableError(RuntimeError):
    """No Ray cluster to run children on: not connected, or unreachable at an address."""


def network_isolated() -> bool:
    """Whether this process sees only loopback interfaces."""
    return all(name == "lo" for _, name in socket.if_nameindex())


def _client_connected() -> bool:
    return bool(client.is_connected())


def gcs_address() -> str | None:
    """The connected cluster's GCS ``host:port`` (``None``: not connected, or through Ray
    Client, which hides it)."""
    if not ray.is_initialized() or _client_connected():
        return None
    return str(ray.get_runtime_context().gcs_address)


#: The Ray Client server this process joined (``host:port``), while connected through it.
_client_server: list[str] = []


def probe_address() -> str | None:
    """Where the cluster answers this process: its GCS, or the Ray Client server joined."""
    if _client_connected():
        return _client_server[-1] if _client_server else None
    return gcs_address()


@contextlib.contextmanager
def _host_process_kept(environment: Mapping[str, str]) -> Iterator[None]:
    """``environment`` for the duration (the cluster's processes inherit it), then every
    variable, the SIGTERM handler and the excepthook back as they were."""
    term = signal.getsignal(signal.SIGTERM)
    hook = sys.excepthook
    kept = {name: os.environ.get(name) for name in (*environment, "PYTHONBREAKPOINT")}
    for name, value in environment.items():
        os.environ.setdefault(name, value)
    try:
        yield
    finally:
        if term is not None:
            with contextlib.suppress(ValueError):  # not the main thread: Ray installed nothing
                signal.signal(signal.SIGTERM, term)
        sys.excepthook = hook
        for variable, previous in kept.items():
            if previous is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = previous


def _quiet_defaults(init: dict[str, Any]) -> dict[str, Any]:
    init.setdefault("include_dashboard", False)
    init.setdefault("log_to_driver", False)
    init.setdefault("logging_level", logging.WARNING)
    return init


def _logs_to_driver() -> bool:
    return any(name == "ray_print_logs" for name, _ in log_dispatcher.handlers)


def _keep_cluster_errors_off_stdout() -> None:
    # Ray's error listener prints them to stdout whatever ``log_to_driver`` says.
    printer = getattr(driver, "print_to_stdstream", None)
    if printer is None or getattr(printer, "turnfork_quiet", False):
        return

    def quiet(data: dict[str, Any], ignore_prefix: bool) -> None:
        if data.get("pid") == "raylet" and not _logs_to_driver():
            for line in data.get("lines", ()):
                _log.info("Ray: %s", line)
            return
        printer(data, ignore_prefix)

    quiet.turnfork_quiet = True  # type: ignore[attr-defined]
    driver.print_to_stdstream = quiet


def start_local_cluster(*, num_cpus: int | None = None,
                        object_store_memory: int = DEFAULT_OBJECT_STORE_BYTES,
                        temp_dir: str | None = None, **init: Any) -> str:
    """Start a private local cluster owned by this process; returns its GCS address.
    ``temp_dir``'s socket paths must stay under about 100 characters; ``init``: further
    ``ray.init`` keywords. Raises :class:`RayUnavailableError` when connected already."""
    if ray.is_initialized():
        raise RayUnavailableError("Ray is already connected in this process: call "
                                  "ray.shutdown() before starting a local cluster")
    if temp_dir is not None:
        init["_temp_dir"] = temp_dir
    _keep_cluster_errors_off_stdout()
    with _host_process_kept({"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_AUTO_CONNECT": "0",
                             "RAY_AUTH_MODE": "disabled"}):
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=object_store_memory,
                 **_quiet_defaults(init))
    address = gcs_address()
    assert address is not None
    return address


def _resolved(address: str | None, temp_dir: str | None) -> str:
    if address is None:
        address = os.environ.get("RAY_ADDRESS") or None
        if address is None:
            raise RayUnavailableError("no Ray cluster address: pass one to connect_cluster "
                                      "(host:port, 'auto' or ray://host:port) or set "
                                      "RAY_ADDRESS")
    if address == "auto":
        try:
            return str(bootstrap_address("auto", temp_dir))
        except ConnectionError as error:
            raise RayUnavailableError(f"no running Ray cluster found for address 'auto' "
                                      f"(ray start --head on this machine): {error}") from error
    return address


def connect_cluster(address: str | None = None, *, timeout: float = 5.0, **init: Any) -> str:
    """Join a running cluster at ``address`` (``host:port``, ``"auto"``, ``ray://host:port``,
    or ``None``: ``RAY_ADDRESS``), waiting ``timeout`` s for a TCP connection there; returns
    the address as joined. Raises :class:`RayUnavailableError` when it cannot."""
    if ray.is_initialized():
        raise RayUnavailableError("Ray is already connected in this process")
    joined = _resolved(address, init.get("_temp_dir"))
    client = joined.startswith(CLIENT_SCHEME)
    endpoint = joined[len(CLIENT_SCHEME):] if client else joined
    host, _, port = endpoint.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as error:
        raise RayUnavailableError(f"no Ray cluster answers at {joined}: {error}") from error
    if not client:  # Ray Client takes few keywords: the driver's own logging is its server's
        _keep_cluster_errors_off_stdout()
        init = _quiet_defaults(init)
    with _host_process_kept({"RAY_ENABLE_AUTO_CONNECT": "0"}):
        ray.init(address=joined, **init)
    if client:
        _client_server[:] = [endpoint]
    return joined
