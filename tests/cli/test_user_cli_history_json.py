"""``show --json`` of a wire history writes the outline an entry at a time, byte for byte what
one ``json.dumps`` of the whole outline gave: that one string (and its escaped copy) cost 2 GB
for a 27 MB history of 400,000 items."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from turnfork.shell.cli import show
from turnfork.shell.cli.histories import read_history
from turnfork.shell.cli.history_outline import build_history_outline
from turnfork.shell.cli.terminal import inert_json

HISTORIES = Path(__file__).resolve().parent / "histories"


def _whole(outline: object) -> str:
    return inert_json(json.dumps(outline.as_json(), indent=2,  # type: ignore[attr-defined]
                                 ensure_ascii=False)) + "\n"


@pytest.mark.parametrize("name", ["chat-parent-delegating.json", "anthropic-request.json",
                                  "plain.json"])
def test_the_streamed_outline_is_the_whole_outline(name: str) -> None:
    loaded = read_history(str(HISTORIES / name), str(HISTORIES / name), "anthropic"
                          if name.startswith("anthropic") else "openai-chat")
    assert not isinstance(loaded, Exception) and not hasattr(loaded, "problem")
    outline = build_history_outline(loaded)  # type: ignore[arg-type]
    out = io.StringIO()
    show._write_history_json(outline, out)
    assert out.getvalue() == _whole(outline)


def test_an_empty_history_streams_as_an_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]")
    loaded = read_history(str(path), str(path), "openai-chat")
    outline = build_history_outline(loaded)  # type: ignore[arg-type]
    out = io.StringIO()
    show._write_history_json(outline, out)
    assert out.getvalue() == _whole(outline)
    assert json.loads(out.getvalue())["items"] == 0


def test_the_history_outline_is_not_dumped_whole(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """No single dump holds every entry: each is written on its own."""
    from turnfork.shell.cli.app import main

    dumps = json.dumps
    sizes: list[int] = []

    def measured(value: object, **kwargs: object) -> str:
        text = dumps(value, **kwargs)  # type: ignore[arg-type]
        sizes.append(len(text))
        return text

    monkeypatch.setattr(show.json, "dumps", measured)
    path = HISTORIES / "chat-parent-delegating.json"
    assert main(["show", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert max(sizes) < len(out) / 2
    assert json.loads(out)["items"] == 8
