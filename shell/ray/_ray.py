"""The one place that imports Ray (the ``ray`` extra), with a clear error when it is missing.

``import ray`` replaces ``sys.excepthook`` (Ray reports uncaught errors to its cluster); the
host's own hook is put back, so importing turnfork's Ray provider changes nothing in the host
process by itself.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["ray", "exceptions"]

_host_excepthook = sys.excepthook
try:
    import ray as _ray
    import ray.exceptions as _exceptions
except ImportError as missing:  # pragma: no cover - exercised without the extra
    raise ImportError("turnfork.shell.ray needs Ray: pip install 'turnfork[ray]'") from missing
finally:
    sys.excepthook = _host_excepthook

#: The ``ray`` module (typed ``Any``: turnfork is checked the same with or without the extra).
ray: Any = _ray
#: ``ray.exceptions``.
exceptions: Any = _exceptions
