"""The host's registries of models (one per provider, with its route's retry policy) and of
live agents (from publication until disposed and quiet)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import DEFAULT_RETRY_POLICY, RetryPolicy
from .models.base import Model

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["ModelRegistry", "AgentRegistry", "UnknownProviderError", "AgentExistsError"]


class UnknownProviderError(LookupError):

    def __init__(self, provider: str) -> None:
        super().__init__(f"no model registered for provider {provider!r}")
        self.provider = provider


class AgentExistsError(ValueError):
    """An agent with that id is already live."""


class ModelRegistry:
    """Models by provider name; a model serves any model name of its provider."""

    def __init__(self) -> None:
        self._routes: dict[str, tuple[Model, RetryPolicy | None]] = {}

    def register(self, provider: str, model: Model, *,
                 retry: RetryPolicy | None = DEFAULT_RETRY_POLICY) -> None:
        """Serve ``provider`` with ``model``, its failed requests retried by ``retry``."""
        if not provider:
            raise ValueError("a provider name must not be empty")
        if provider in self._routes:
            raise ValueError(f"a model is already registered for provider {provider!r}")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a RetryPolicy or None, not {type(retry).__name__}")
        self._routes[provider] = (model, retry)

    def unregister(self, provider: str) -> None:
        if self._routes.pop(provider, None) is None:
            raise UnknownProviderError(provider)

    def retry_policy(self, provider: str) -> RetryPolicy | None:
        """``None`` also when no model serves it: a request that reaches none has no route."""
        return self._routes.get(provider, (None, None))[1]

    def get(self, provider: str) -> Model:
        route = self._routes.get(provider)
        if route is None:
            raise UnknownProviderError(provider)
        return route[0]

    def list(self) -> tuple[str, ...]:
        return tuple(self._routes)

    def __contains__(self, provider: object) -> bool:
        return provider in self._routes


class AgentRegistry:
    """The live agents, in creation order."""

    def __init__(self) -> None:
        self._agents: dict[str, Agent] = {}

    def get(self, agent_id: str) -> Agent | None:
        return self._agents.get(agent_id)

    def list(self) -> tuple[Agent, ...]:
        return tuple(self._agents.values())

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._agents

    def __len__(self) -> int:
        return len(self._agents)

    def add(self, agent: Agent) -> None:
        agent_id = agent.id
        if agent_id in self._agents:
            raise AgentExistsError(f"an agent with id {agent_id!r} is already live")
        self._agents[agent_id] = agent

    def remove(self, agent: Agent) -> None:
        if self._agents.get(agent.id) is agent:
            del self._agents[agent.id]
