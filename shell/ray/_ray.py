"""The one place that imports Ray (the ``ray`` extra), with a clear error when it is missing.
``import ray`` replaces ``sys.excepthook``: the host's is put back. ``msgspec.UNSET`` pickles by
reference to :func:`unset` (``copyreg``): by its own reduction, which names only ``"UNSET"``,
pickle searched every loaded module for it, each time Ray pickled a value holding it.
"""

from __future__ import annotations

import copyreg
import sys
from typing import Any

import msgspec
from msgspec import UnsetType

__all__ = ["ray", "exceptions", "client", "placement_group", "remove_placement_group",
           "PlacementGroupSchedulingStrategy", "driver", "log_dispatcher", "bootstrap_address",
           "unset"]

_host_excepthook = sys.excepthook
try:
    import ray as _ray
    import ray.exceptions as _exceptions
    import ray.util.client as _client
    from ray._private import ray_logging as _ray_logging
    from ray._private import services as _services
    from ray._private import worker as _driver
    from ray.util.placement_group import placement_group as _placement_group
    from ray.util.placement_group import remove_placement_group as _remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy as _strategy
except ImportError as missing:  # pragma: no cover - exercised without the extra
    raise ImportError("turnfork.shell.ray needs Ray: pip install 'turnfork[ray]'") from missing
finally:
    sys.excepthook = _host_excepthook

#: Typed ``Any``: turnfork is checked the same with or without the extra.
ray: Any = _ray
exceptions: Any = _exceptions
client: Any = _client.ray
placement_group: Any = _placement_group
remove_placement_group: Any = _remove_placement_group
PlacementGroupSchedulingStrategy: Any = _strategy
#: Ray internals, used by :mod:`.cluster` only.
driver: Any = _driver
log_dispatcher: Any = _ray_logging.global_worker_stdstream_dispatcher
bootstrap_address: Any = _services.canonicalize_bootstrap_address_or_die


def unset() -> UnsetType:
    return msgspec.UNSET


def _reduce_unset(value: UnsetType) -> tuple[Any, tuple[()]]:
    return unset, ()


copyreg.pickle(UnsetType, _reduce_unset)
