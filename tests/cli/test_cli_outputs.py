"""What an output may be (issue 25): never a special file replaced (G03), never an input, a
fork child's seed files included (G04), never a file a live store is writing (G07).

The finding tests fail on the code before these fixes (cb407df); three guard the fixes
rather than reproduce a finding and pass there too (a refused seed writes nothing into a
FIFO, a released session can be exported over, a FIFO without a reader does not stop the
refusals)."""

from __future__ import annotations

import os
import select
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _cli_helpers import FORK_PARENT, OPEN_LOG, REPO, run_cli

from turnfork.core import SessionHeader, decode_log
from turnfork.core.events import SessionEndSeedData, SessionEndSeedEvent
from turnfork.shell import JsonlSessionStore
from turnfork.shell.cli import main
from turnfork.shell.cli.demo import DemoResult, run_demo
from turnfork.shell.logfile import read_log

SEED = OPEN_LOG.read_bytes()
SEED_OF_OPEN_LOG = b"".join(SEED.splitlines(keepends=True)[:232])


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoResult]:
    """The demo's parent and fork child saved by the disk store (the child's seed the hard
    link `seed-0.jsonl` to the parent's file)."""
    root = tmp_path_factory.mktemp("saved")
    result = run_demo(store=JsonlSessionStore(root))
    assert result.ok, result.problems
    return root, result


def _child_dir(saved: tuple[Path, DemoResult]) -> Path:
    fork = saved[1].fork
    assert fork is not None and fork.saved_path is not None
    return Path(fork.saved_path).parent


def _drain_fifo(fifo: Path, *args: str | os.PathLike[str]) -> tuple[int, bytes]:
    """Run ``turnfork ARGS`` while a reader holds ``fifo`` open; what the reader got."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    got = bytearray()
    child = subprocess.Popen([sys.executable, "-m", "turnfork", *map(str, args)], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            ready, _, _ = select.select([reader], [], [], 0.05)
            if ready:
                data = os.read(reader, 1 << 16)
                got += data
                if data:
                    continue
            if child.poll() is not None:
                break
        while data := os.read(reader, 1 << 16):
            got += data
    finally:
        os.close(reader)
        child.wait(timeout=60)
        assert child.stderr is not None
        child.stderr.close()
    return child.returncode, bytes(got)


@pytest.mark.parametrize("command", ["seed", "export"])
def test_a_fifo_out_is_written_into_and_stays_a_fifo(command: str, tmp_path: Path) -> None:
    """`-o FIFO`: its reader gets the bytes, and the FIFO is still there (before: a temporary
    file renamed over it; the FIFO's reader never got a byte)."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    if command == "seed":
        code, got = _drain_fifo(fifo, "seed", OPEN_LOG, "-o", fifo)
        assert (code, got) == (0, SEED_OF_OPEN_LOG)
    else:
        code, got = _drain_fifo(fifo, "export", FORK_PARENT, "-o", fifo, "--force")
        assert code == 0
        assert got.split(b"\n", 1)[0].startswith(b'{"type":"session"')
        assert len(decode_log(got.split(b"\n", 1)[1]).unwrap()) == 200
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def _null_device(tmp_path: Path) -> Path:
    """A character device that takes writes: a node of /dev/null's own (root can make one),
    else /dev/null itself (which a non-root rename cannot touch)."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return node


@pytest.mark.parametrize("command", ["seed", "export"])
def test_a_character_device_out_takes_the_bytes_and_stays_a_device(command: str,
                                                                   tmp_path: Path) -> None:
    """`-o /dev/null`: written into, still a character device (before, as root: replaced by a
    regular file holding the seed; the machine's /dev/null would have been)."""
    device = _null_device(tmp_path)
    args = ["seed", OPEN_LOG] if command == "seed" else ["export", FORK_PARENT, "--force"]
    run = run_cli(*args, "-o", device)
    assert run.code == 0, run
    assert stat.S_ISCHR(device.lstat().st_mode)


@pytest.mark.parametrize("command", ["seed", "export"])
def test_a_socket_out_is_refused_and_kept(command: str, tmp_path: Path) -> None:
    """A socket can be neither replaced nor written into: exit 2, the socket left (before:
    replaced by a regular file)."""
    path = tmp_path / "out.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        args = ["seed", OPEN_LOG] if command == "seed" else ["export", FORK_PARENT, "--force"]
        run = run_cli(*args, "-o", path)
        assert run.code == 2, run
        assert "is a socket" in run.stderr
        assert stat.S_ISSOCK(path.lstat().st_mode)
    finally:
        server.close()


def test_a_refused_seed_writes_nothing_into_a_fifo(tmp_path: Path) -> None:
    """A log that breaks a rule before its cut: nothing reaches the FIFO's reader (the seed is
    spooled, not streamed into it)."""
    lines = SEED.splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines[:10] + lines[11:]))  # a seq missing before the cut
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    code, got = _drain_fifo(fifo, "seed", broken, "-o", fifo)
    assert (code, got) == (3, b"")


@pytest.mark.parametrize("command", ["seed", "export"])
def test_a_childs_seed_file_is_an_input(command: str, saved: tuple[Path, DemoResult]) -> None:
    """`export CHILD -o CHILD/seed-0.jsonl --force` (and `seed CHILD -o` it): refused, the seed
    file and the child as they were (before: the seed file overwritten, the child unreadable)."""
    child = _child_dir(saved)
    seed_file = child / "seed-0.jsonl"
    before = seed_file.read_bytes()
    args = (["export", child, "--force"] if command == "export" else ["seed", child])
    run = run_cli(*args, "-o", seed_file)
    assert run.code == 2, run
    assert seed_file.read_bytes() == before
    assert run_cli("check", child).code == 0


def test_the_parents_file_a_seed_links_to_is_an_input(saved: tuple[Path, DemoResult],
                                                      tmp_path: Path) -> None:
    """The child's seed file is a hard link to the parent's file: writing the child's export
    over the parent's file is writing over an input too."""
    _, result = saved
    parent = Path(result.parent_saved_path or "")
    before = parent.read_bytes()
    run = run_cli("export", _child_dir(saved), "-o", parent, "--force")
    assert run.code == 2, run
    assert "was read from" in run.stderr
    assert parent.read_bytes() == before


def test_export_into_a_live_session_is_refused(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A store writing session `s` holds its directory's lock: `export X -o ITS/session.jsonl`
    is refused, `--force` or not, and the store's later appends are all on disk (before: the
    file renamed over; the live writer kept appending to the unlinked inode)."""
    store = JsonlSessionStore(tmp_path / "root")
    session = store.create(SessionHeader(id="s", created_at=0))
    session.append(SessionEndSeedEvent, SessionEndSeedData())
    session.flush()
    target = store.path_for(session.header)
    assert target.exists()
    for force in ([], ["--force"]):
        assert main(["export", str(FORK_PARENT), "-o", str(target), *force]) == 2
        err = capsys.readouterr().err
        assert "writer lock is held" in err and "nothing exported" in err
    session.append(SessionEndSeedEvent, SessionEndSeedData())
    session.flush()
    store.release("s")
    assert len(JsonlSessionStore(tmp_path / "root").inspect("s").events) == 2


def test_export_into_a_live_stores_root_is_refused(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`export X -o STORE --force`, STORE the root of a live store writing X's session: the
    session's file would be replaced under its writer; refused."""
    header = read_log(FORK_PARENT).unwrap().header
    assert header is not None
    root = tmp_path / "root"
    store = JsonlSessionStore(root)
    session = store.create(header)
    session.append(SessionEndSeedEvent, SessionEndSeedData())
    session.flush()
    before = store.path_for(header).read_bytes()
    assert main(["export", str(FORK_PARENT), "-o", str(root), "--force"]) == 2
    assert "writer lock is held" in capsys.readouterr().err
    assert store.path_for(header).read_bytes() == before
    store.release(header.id)


def test_seed_into_a_live_session_is_refused(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`seed -o` replaces its OUT, so a live store's file is refused to it as well."""
    store = JsonlSessionStore(tmp_path / "root")
    session = store.create(SessionHeader(id="s", created_at=0))
    session.append(SessionEndSeedEvent, SessionEndSeedData())
    session.flush()
    target = store.path_for(session.header)
    before = target.read_bytes()
    assert main(["seed", str(OPEN_LOG), "-o", str(target)]) == 2
    assert "writer lock is held" in capsys.readouterr().err
    assert target.read_bytes() == before
    store.release("s")


def test_a_released_session_can_be_exported_over(tmp_path: Path) -> None:
    """No writer, no lock: `--force` replaces the file (under the lock, taken for the write)."""
    store = JsonlSessionStore(tmp_path / "root")
    session = store.create(SessionHeader(id="s", created_at=0))
    session.append(SessionEndSeedEvent, SessionEndSeedData())
    session.flush()
    target = store.path_for(session.header)
    store.release("s")
    run = run_cli("export", FORK_PARENT, "-o", target, "--force")
    assert run.code == 0, run
    assert "replaced the file that was there" in run.stdout


def test_an_output_lock_held_by_another_process_is_refused(tmp_path: Path) -> None:
    """The lock of another process (a store in a second interpreter) refuses the export too."""
    root = tmp_path / "root"
    holder = subprocess.Popen([sys.executable, "-c", f"""
import sys
from turnfork.core import SessionHeader
from turnfork.core.events import SessionEndSeedEvent, SessionEndSeedData
from turnfork.shell import JsonlSessionStore
store = JsonlSessionStore({str(root)!r})
session = store.create(SessionHeader(id="s", created_at=0))
session.append(SessionEndSeedEvent, SessionEndSeedData())
session.flush()
print(store.path_for(session.header), flush=True)
sys.stdin.read()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout is not None
        target = holder.stdout.readline().strip()
        run = run_cli("export", FORK_PARENT, "-o", target, "--force")
        assert run.code == 2 and "writer lock is held" in run.stderr, run
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()


def test_a_fifo_without_a_reader_does_not_stop_the_refusals(tmp_path: Path) -> None:
    """Refusals come before any open: a FIFO named as OUT for a log that cannot be read is
    not opened (it would wait for a reader)."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    done = threading.Event()
    result: list[int] = []

    def run() -> None:
        result.append(main(["seed", str(tmp_path / "missing.jsonl"), "-o", str(fifo)]))
        done.set()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert done.wait(30) and result == [2]
