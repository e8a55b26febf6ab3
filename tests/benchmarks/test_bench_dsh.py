"""The optional DSH benchmark says clearly why it cannot run, and then runs nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_dsh

ROOT = Path(__file__).resolve().parents[2]


def _checkout(folder: Path, *, name: str = "@deepseek-ai/dsh-root", installed: bool = True,
              complete: bool = True) -> Path:
    """A folder shaped like a DSH checkout, its files empty (nothing in it can run)."""
    needed = bench_dsh._NEEDED if complete else ("package.json",)
    for relative in needed:
        if installed or not relative.startswith("node_modules/"):
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    (folder / "package.json").write_text(json.dumps({"name": name}), encoding="utf-8")
    if installed:
        (folder / "node_modules").mkdir(exist_ok=True)
    return folder


def test_each_missing_piece_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No checkout, no folder, another project, no node_modules, missing files, no node."""
    assert "--dsh PATH" in (bench_dsh.problem(None) or "")
    assert "is not a folder" in (bench_dsh.problem(tmp_path / "absent") or "")
    other = _checkout(tmp_path / "other", name="something-else")
    assert "is not a DSH checkout" in (bench_dsh.problem(other) or "")
    bare = _checkout(tmp_path / "bare", installed=False)
    assert "run `pnpm install`" in (bench_dsh.problem(bare) or "")
    partial = _checkout(tmp_path / "partial", complete=False)
    assert "lacks tsconfig.base.json" in (bench_dsh.problem(partial) or "")
    shaped = _checkout(tmp_path / "shaped")
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    assert "node is not on PATH" in (bench_dsh.problem(shaped) or "")


def test_the_runner_reports_it_unavailable_in_well_formed_json(tmp_path: Path) -> None:
    """`python -m benchmarks --only dsh --dsh MISSING` exits 0 and records why it did not run."""
    output = tmp_path / "dsh.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--only", "dsh", "--dsh", str(tmp_path / "absent"),
         "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    section = json.loads(output.read_text(encoding="utf-8"))["benchmarks"]["dsh"]
    assert section["rows"] == [] and "is not a folder" in section["unavailable"]
    assert "not run: " in done.stdout
