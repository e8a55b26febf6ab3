"""Run-time type checking policy for the core's hot loops.

``beartype_this_package`` checks every call in the core. The per-event helpers of the decoder
and the trace run tens of thousands of times per log, behind public entry points that are
checked, so they opt out: ``unchecked`` is beartype's own no-op strategy, which the package
hook honours. Static checking (mypy --strict) still covers them.
"""

from beartype import BeartypeConf, BeartypeStrategy, beartype

__all__ = ["unchecked"]

unchecked = beartype(conf=BeartypeConf(strategy=BeartypeStrategy.O0))
