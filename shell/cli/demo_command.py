"""``turnfork demo``: run the fork scenario (:mod:`.demo`) and draw it (:mod:`.demo_render`).

Only this command imports the asyncio runtime, the models and ``rich``, and only when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ...core import DEFAULT_RETRY_POLICY, RetryPolicy
from ..jsonl_store import JsonlSessionStore
from ..store import SessionExistsError
from .app import EXIT_NOT_AS_INTENDED, EXIT_OK, EXIT_UNREADABLE
from .demo import DEFAULT_TURN_TIMEOUT, DemoResult, demo_summary, run_demo_async
from .terminal import error, inert, print_json, say

if TYPE_CHECKING:
    from ..models.openai_chat import OpenAIChatModel

__all__ = ["run", "demo_provider"]


def demo_provider(base_url: str) -> str:
    """The provider name the demo registers a real model under, from its endpoint."""
    host = (urlsplit(base_url).hostname or "").lower()
    for name in ("deepseek", "openai"):
        if host == f"{name}.com" or host.endswith(f".{name}.com"):
            return name
    return "openai-compatible"


def _real_model(args: argparse.Namespace, timeout: float,
                ) -> tuple[OpenAIChatModel, str] | str:
    """The OpenAI-compatible model ``--model`` names and its provider, or why there is none."""
    from ..models.openai_chat import (  # noqa: PLC0415 - only --model needs it
        DEEPSEEK_BASE_URL,
        MissingCredentialError,
        OpenAIChatModel,
    )

    base_url = args.base_url or DEEPSEEK_BASE_URL
    provider = demo_provider(base_url)
    try:
        return OpenAIChatModel(args.model, base_url=base_url, api_key=args.api_key,
                               provider_name=provider, timeout=min(60.0, timeout)), provider
    except ValueError as exc:  # a base URL that is no http(s) URL: the message says how
        return f"demo --base-url: {exc}"
    except MissingCredentialError as exc:
        return (f"demo --model {args.model} needs an API key for {base_url}: set "
                f"{exc.env_var} or pass --api-key KEY (or run `turnfork demo` without --model "
                "for the embedded scripted models)")
    except ImportError as exc:
        return str(exc)


def _store(directory: str) -> JsonlSessionStore | str:
    """A store writing under ``directory``, or why it cannot."""
    problem = None
    try:
        if os.path.exists(directory) and not os.path.isdir(directory):
            problem = "not a directory"
        else:
            os.makedirs(directory, exist_ok=True)
            if not os.access(directory, os.W_OK | os.X_OK):
                problem = "permission denied"
    except NotADirectoryError:
        problem = "a component of the path is not a directory"
    except PermissionError:
        problem = "permission denied"
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem is not None:
        return f"{directory}: cannot write: {problem}; nothing written"
    return JsonlSessionStore(directory)


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit 0 all checks passed, 1 not as intended, 2 cannot start."""
    if args.base_url is not None and args.model is None:
        error("demo --base-url needs --model NAME (the embedded demo calls no endpoint)")
        return EXIT_UNREADABLE
    if args.api_key is not None and args.model is None:
        error("demo --api-key needs --model NAME (the embedded demo needs no key)")
        return EXIT_UNREADABLE
    timeout = DEFAULT_TURN_TIMEOUT if args.timeout is None else args.timeout
    if not timeout > 0:
        error(f"demo --timeout must be a positive number of seconds, not {args.timeout:g}")
        return EXIT_UNREADABLE
    retry = DEFAULT_RETRY_POLICY
    if args.max_retries is not None:
        if args.max_retries < 0:
            error(f"demo --max-retries must be 0 or more, not {args.max_retries}")
            return EXIT_UNREADABLE
        try:
            retry = RetryPolicy(max_retries=args.max_retries)
        except ValueError as refused:  # past what a retry count may be (a safe integer)
            error(f"demo --max-retries: {str(refused).removeprefix('retry policy: ')}")
            return EXIT_UNREADABLE
    model: OpenAIChatModel | None = None
    provider = "model"
    if args.model is not None:
        made = _real_model(args, timeout)
        if isinstance(made, str):
            error(made)
            return EXIT_UNREADABLE
        model, provider = made
    store = None
    if args.save is not None:
        opened = _store(args.save)
        if isinstance(opened, str):
            error(opened)
            return EXIT_UNREADABLE
        store = opened

    spinner = None
    if not args.plain and sys.stderr.isatty():
        from rich.console import Console  # noqa: PLC0415 - rich
        from rich.text import Text  # noqa: PLC0415

        spinner = Console(stderr=True).status(Text("turnfork demo: starting"))

    def progress(words: str) -> None:
        if spinner is not None:
            spinner.update(Text(inert(f"turnfork demo: {words}")))

    async def demo() -> DemoResult:
        try:
            return await run_demo_async(model=model, provider=provider,
                                        model_name=args.model or "scripted", store=store,
                                        turn_timeout=timeout, progress=progress, retry=retry)
        finally:
            if model is not None:
                await model.aclose()

    try:
        with spinner if spinner is not None else contextlib.nullcontext():
            result = asyncio.run(demo())
    except SessionExistsError as exc:
        error(f"{args.save}: already holds session {exc.session_id} (from an earlier demo "
              "run?); nothing overwritten: choose another directory")
        return EXIT_UNREADABLE
    except OSError as exc:
        error(f"{args.save or '.'}: cannot write: {exc.strerror or exc}")
        return EXIT_UNREADABLE
    if args.json:
        print_json(demo_summary(result))
    else:
        from .demo_render import render_demo  # noqa: PLC0415 - rich
        from .render import make_console  # noqa: PLC0415

        render_demo(make_console(sys.stdout, plain=args.plain), result)
        sys.stdout.flush()
        if result.parent_saved_path is not None:
            say(f"saved: parent {result.parent_header.id} → {result.parent_saved_path}",
                file=sys.stderr)
            for fork in result.forks:
                say(f"saved: child {fork.child_id} → {fork.saved_path}", file=sys.stderr)
    if not result.ok:
        error("demo: " + "; ".join(result.problems))
        return EXIT_NOT_AS_INTENDED
    return EXIT_OK
