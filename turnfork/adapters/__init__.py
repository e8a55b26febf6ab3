"""Adapters that bring the completed-turn seed and the balance checks to other runtimes' own types.

* :mod:`turnfork.adapters.pydantic_ai` — pydantic-ai's ``list[ModelMessage]`` (``ctx.messages``
  inside a tool, ``result.all_messages()``);
* :mod:`turnfork.adapters.openai_agents` — the OpenAI Agents SDK's input list
  (``ctx.turn_input`` inside a tool, ``result.to_input_list()``) and its run items.

Each needs its runtime installed (``pip install 'turnfork[interop]'``) and imports it only when
it is itself imported: ``import turnfork.adapters`` loads neither.
"""

__all__: list[str] = []
