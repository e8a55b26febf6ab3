"""A cache-preserving Ray fork (``RayForkProvider(cache_preserving=True)``, ours, not DSH's)
composes its child as the in-process one does (tests/shell/test_cache_preserving_fork.py): the
parent's system prompt and tool list, the persona after the seed, a forbidden tool listed and
refused when called, the output schema answered in the closing message; DSH's mode stays the
default of both."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import assert_balanced, close, contract_host, one_turn, request, run, text

from turnfork.core import ToolRestriction
from turnfork.shell import ForkProvider
from turnfork.shell.ray import RayForkProvider

CACHED = {"in-process": "fork-cached", "ray": "ray-fork-cached"}


def _host(pool: Any) -> tuple[Any, Any]:
    host, parent, _ = contract_host(pool)
    host.prompt_sections.set("notes", "Be brief.", order=50)
    parent.prompt_sections.set("deployment:persona", "You are the parent.", order=0)
    host.subagents.register_provider(ForkProvider("fork-cached", cache_preserving=True))
    host.subagents.register_provider(RayForkProvider(pool, "ray-fork-cached",
                                                     cache_preserving=True))
    return host, parent


async def _answers(host: Any, parent: Any, provider: str, task: str,
                   **fields: Any) -> tuple[str, str, Any]:
    run_ = await host.subagents.start(provider, request(task, **fields), parent=parent)
    result = await run_.result
    await run_.dispose()
    assert_balanced(run_.child.session.events, "child")
    return result.stop_reason, text(result.output), result


def test_the_ray_child_sees_its_parents_system_prompt_and_tools_as_in_process(
        pool: Any) -> None:
    """With a persona and a filter, each cache-preserving child's system prompt and tool
    list are its parent's, on Ray as in process; the DSH-mode Ray fork differs."""

    async def main() -> None:
        host, parent = _host(pool)
        await one_turn(parent, "say seeded")
        narrowed = {"persona": "You review.",
                    "tool_filter": ToolRestriction(allow=("read", "echo"))}
        system: dict[str, str] = {}
        tools: dict[str, str] = {}
        for where, name in CACHED.items():
            _, system[where], _ = await _answers(host, parent, name, "system?", **narrowed)
            _, tools[where], _ = await _answers(host, parent, name, "tools?", **narrowed)
        assert system["ray"] == system["in-process"] == "You are the parent.\n\nBe brief."
        assert tools["ray"] == tools["in-process"]
        assert tools["ray"] == ",".join(sorted(tool.name for tool in parent.tools.tools()))
        _, dsh_system, _ = await _answers(host, parent, "ray-fork", "system?", **narrowed)
        _, dsh_tools, _ = await _answers(host, parent, "ray-fork", "tools?", **narrowed)
        assert dsh_system == "You review.\n\nBe brief."
        assert dsh_tools == "echo,read"
        await close(host)

    run(main)


def test_a_forbidden_tool_is_refused_on_ray_in_the_in_process_words(pool: Any) -> None:
    """A tool the filter denies is still offered and its call refused: the Ray child's
    refusal is the in-process child's, and the tool does not run."""

    async def main() -> None:
        host, parent = _host(pool)
        await one_turn(parent, "say seeded")
        said: dict[str, str] = {}
        for where, name in CACHED.items():
            stop, said[where], _ = await _answers(
                host, parent, name, 'tool write {"path": "x", "text": "y"}',
                tool_filter=ToolRestriction(deny=("write",)))
            assert stop == "completed"
        assert said["ray"] == said["in-process"]
        assert said["ray"].startswith("tool said: Error: ")
        await close(host)

    run(main)


def test_the_structured_value_is_read_from_the_closing_message_on_ray(pool: Any) -> None:
    """In this mode the child offers no structured_output tool: its answer's JSON is the
    value, on Ray as in process."""
    schema = b'{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"]}'

    async def main() -> None:
        import msgspec

        host, parent = _host(pool)
        await one_turn(parent, "say seeded")
        for name in CACHED.values():
            stop, _, result = await _answers(host, parent, name, 'say {"colour": "BLUE"}',
                                             output_schema=msgspec.Raw(schema))
            assert stop == "completed", name
            assert msgspec.json.decode(bytes(result.structured)) == {"colour": "BLUE"}, name
        await close(host)

    run(main)
