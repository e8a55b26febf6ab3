"""Mutation testing of the core's log kernel and the formats checkers: ``python -m
benchmarks.mutation``.

Each module below is changed in many small ways (:mod:`.operators`), one change at a time, and
the tests that exercise it are run against each change (:mod:`.runner`): a change no test
notices is a *survivor*, a place where the tests do not pin the code down. The score of a
module is killed / (mutants - equivalent); an *equivalent* mutant is one that cannot change
behaviour, named with its reason in :mod:`.equivalent`. Target: every module at 0.90 or more.

mutmut 3 does not run on this layout (it mutates a copy under ``mutants/``, which the editable
install's finder never serves as ``turnfork.core``): docs/mutation.md says what was tried.
This runner's operators are the families of the measurement it was started from (no string
mutations: texts are checked by the tests that name them, not by mutation).

The modules and their tests are listed here, in one place; a module that moves is one line.
"""

from __future__ import annotations

__all__ = ["MODULES", "short_name"]

_CORE = "tests/core/"
_FORMATS = "tests/formats/"
_EARLIER_PATHS = "tests/core/test_earlier_paths.py"

#: module -> the test paths that exercise it, in the order the run takes them (formats last).
MODULES: dict[str, tuple[str, ...]] = {
    "turnfork.core.log.seed": tuple(_CORE + name for name in (
        "test_seed_views.py", "test_seed_properties.py", "test_trace_properties.py",
        "test_doctests.py")),
    "turnfork.core.log.grammar": tuple(_CORE + name for name in (
        "test_grammar.py", "test_trace.py", "test_trace_fold.py", "test_trace_properties.py",
        "test_closers.py", "test_repair.py", "test_strategies.py", "test_doctests.py")),
    "turnfork.core.log.closers": tuple(_CORE + name for name in (
        "test_closers.py", "test_closers_properties.py", "test_repair.py", "test_doctests.py")),
    "turnfork.core.log.trace": tuple(_CORE + name for name in (
        "test_trace.py", "test_trace_fold.py", "test_trace_properties.py", "test_trace_repr.py",
        "test_trace_kernel.py", "test_check_event.py", "test_surface_replace.py",
        "test_surface_depth.py", "test_retained_context.py", "test_seed_properties.py",
        "test_closers.py", "test_repair.py", "test_dsh_logs.py", "test_trace_surface_mutants.py",
        "test_trace_fold_mutants.py", "test_doctests.py")),
    "turnfork.core.log.codec": tuple(_CORE + name for name in (
        "test_codec.py", "test_codec_fast_path.py", "test_codec_kernel.py",
        "test_codec_messages.py", "test_codec_untrusted_lines.py", "test_check_event.py",
        "test_codec_sessions_and_writing.py", "test_dsh_logs.py", "test_doctests.py")),
    # The earlier paths (a name that moved to wire_seed, asked of its old module) are the
    # formats' own code (common.moved_name), checked from tests/core.
    "turnfork.core.formats.common": (_FORMATS, _EARLIER_PATHS),
    "turnfork.core.formats.openai_chat": (_FORMATS, _EARLIER_PATHS),
    "turnfork.core.formats.openai_responses": (_FORMATS, _EARLIER_PATHS),
    "turnfork.core.formats.anthropic": (_FORMATS, _EARLIER_PATHS),
    "turnfork.core.formats.detect": (_FORMATS,),
}


def short_name(module: str) -> str:
    """How results are named: a log-tier module by its own name (``turnfork.core.log.seed`` ->
    ``seed``), the wire formats' by their folder too (``formats.common``)."""
    return module.removeprefix("turnfork.core.").removeprefix("log.")
