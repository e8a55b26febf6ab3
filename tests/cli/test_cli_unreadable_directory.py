"""A session directory that may not be looked into (mode 000, read without privilege) is
reported as permission denied (issue 25). Before (cb407df): "directory holds no session.jsonl
or session.jsonl.zstd (not a DSH session directory)", since `os.path.lexists` takes the denied
look for an absent file.

The tests run as root, who may read anything: one test denies the look itself (the `lstat` of
a name in the directory fails as it would for another user), the other drops to `nobody` in a
forked process, when root may, and reads there for real."""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from pathlib import Path

import pytest
from _cli_helpers import FORK_PARENT

from turnfork.shell.cli import inputs, main

NOBODY = 65534


def _session_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "s"
    directory.mkdir()
    (directory / "session.jsonl").write_bytes(FORK_PARENT.read_bytes())
    return directory


def test_a_denied_look_into_the_directory_is_permission_denied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every command says `cannot read: permission denied` of the directory, exit 2."""
    directory = _session_dir(tmp_path)
    real_lstat = os.lstat

    def denied(path: str | os.PathLike[str], *args: object, **kwargs: object) -> os.stat_result:
        if os.path.dirname(os.fspath(path)) == str(directory):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", denied)
    for command in ("check", "show", "seed"):
        assert main([command, str(directory)]) == 2
        assert capsys.readouterr().err == (
            f"turnfork: error: {directory}: cannot read: permission denied\n")


def test_a_mode_000_directory_read_without_privilege(tmp_path: Path) -> None:
    """As `nobody` (a forked process that gives up root), a mode-000 session directory is
    `permission denied`."""
    if os.geteuid() != 0:
        directory = _session_dir(tmp_path)
        directory.chmod(0)
        try:
            problem = _problem_of(directory)
        finally:
            directory.chmod(0o755)
        assert problem == f"{directory}: cannot read: permission denied"
        return
    # Every directory above it must let `nobody` through (pytest's own are private).
    public = Path(tempfile.mkdtemp(prefix="turnfork-mode-000-", dir="/tmp"))
    public.chmod(0o755)
    directory = _session_dir(public)
    assert os.path.isdir(directory)
    directory.chmod(0)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, read, report, leave without cleanup
        os.close(read)
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write, _problem_of(directory).encode())
        except BaseException:
            os.write(write, traceback.format_exc().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        reported = pipe.read().decode()
    os.waitpid(pid, 0)
    directory.chmod(0o755)
    shutil.rmtree(public)
    assert reported == f"{directory}: cannot read: permission denied"


def _problem_of(directory: Path) -> str:
    """What the CLI's input reader says of ``directory`` (its message), without importing
    anything new (the forked child may not read the interpreter's own files)."""
    read = inputs.read_input(str(directory))
    return getattr(read, "message", f"read: {read!r}"[:200])
