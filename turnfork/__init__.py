"""turnfork: fork and spawn subagents whose seed is the completed-turn prefix.

``turnfork.core`` is the pure, vendorable core (events, codec, balance, the fork seed, the
delegation rules); ``turnfork.shell`` is the asyncio runtime (hosts, agents, stores, models,
subagent providers) and the ``turnfork`` command. In a source checkout they are the top-level
``core/`` and ``shell/`` folders, which the build maps into this package (see
docs/architecture.md).
"""

__version__ = "0.2.0"

__all__ = ["__version__"]
