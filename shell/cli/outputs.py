"""Where a command writes: ``-o OUT`` or stdout, never half-written, never over what it may not
replace.

A :class:`Sink` takes the bytes as they are made and makes them visible all at once, at
:meth:`Sink.commit`, or never (:meth:`Sink.abort`):

* a regular ``OUT`` (or a new one) is written to a temporary file in its directory, fsynced,
  then renamed over it (a new file gets ``0666 & ~umask``, an existing one keeps its mode);
  the directory's writer lock (the disk store's, :func:`~shell.jsonl_store.held_directory_lock`)
  is held from the start to the rename, and a directory whose lock another writer holds — a
  live session store — is refused: replacing its file would lose what it appends after;
* a FIFO or a character device (``/dev/null``, a terminal) is never replaced: the bytes are
  spooled to a private temporary file, then written into it at the commit, so a reader of
  the FIFO gets them and a log refused half-way writes nothing; stdout likewise;
* a directory, a socket or a block device is refused (:func:`output_problem`).

Whether ``OUT`` is one of the command's inputs is :func:`~.inputs.is_the_input`'s question,
asked before a sink is opened.
"""

from __future__ import annotations

import abc
import contextlib
import os
import re
import stat
import sys
import tempfile
from typing import IO

__all__ = ["OutputError", "Sink", "output_problem", "open_sink", "write_file", "LOCKED"]

#: Why a file in a directory whose writer lock another writer holds is not written.
LOCKED = ("cannot write: it is in a session directory whose writer lock is held (a live "
          "session store is writing it), and replacing its file would lose what the store "
          "writes next; refused, --force or not")

_COPY = 1 << 20


class OutputError(OSError):
    """``OUT`` cannot be written: the problem in words (``str(exc)``)."""


def output_problem(path: str, *, lock: bool = False) -> str | None:
    """Why ``path`` may not be written (``None``: it may be, replaced or written into);
    ``lock``: also whether its directory's writer lock is held by another writer (asked
    again, and kept, when the file is written)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        return f"cannot write: {exc.strerror or exc}"
    if mode is not None and stat.S_ISDIR(mode):
        return "cannot write: is a directory"
    if mode is not None and stat.S_ISSOCK(mode):
        return "cannot write: is a socket, which can be neither replaced nor written into"
    if mode is not None and stat.S_ISBLK(mode):
        return "cannot write: is a block device: writing into it would destroy what it holds"
    if lock and (mode is None or stat.S_ISREG(mode)):
        from ..jsonl_store import held_directory_lock  # noqa: PLC0415

        directory = os.path.dirname(os.path.abspath(path))
        with contextlib.suppress(OSError), held_directory_lock(directory) as held:
            if not held:
                return LOCKED
    return None


class Sink(abc.ABC):
    """Bytes written as they come and made visible at :meth:`commit`, or never."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self.written = 0

    def write(self, data: bytes) -> None:
        self._handle.write(data)
        self.written += len(data)

    def keep(self, size: int) -> None:
        """Only the first ``size`` bytes written are to be committed."""
        self._handle.flush()
        self._handle.truncate(size)
        self._handle.seek(size)
        self.written = size

    @abc.abstractmethod
    def commit(self) -> None:
        """Make what was kept visible at the target."""

    def abort(self) -> None:
        """Forget what was written: the target stays as it was."""
        with contextlib.suppress(OSError, ValueError):
            self._handle.close()


class _Replacing(Sink):
    """A temporary file beside ``path``, renamed over it at the commit, under the lock."""

    def __init__(self, path: str, directory: str, lock: contextlib.ExitStack) -> None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        descriptor, self._temporary = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
        super().__init__(os.fdopen(descriptor, "wb"))
        self._path, self._directory, self._mode, self._lock = path, directory, mode, lock

    def commit(self) -> None:
        try:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            os.chmod(self._temporary, self._mode)
            os.replace(self._temporary, self._path)
        except BaseException:
            self.abort()
            raise
        self._lock.close()
        with contextlib.suppress(OSError):  # durability of the rename; not every FS allows it
            directory_fd = os.open(self._directory, os.O_RDONLY)
            try:
                os.fsync(directory_fd)
            finally:
                os.close(directory_fd)

    def abort(self) -> None:
        super().abort()
        with contextlib.suppress(OSError):
            os.unlink(self._temporary)
        self._lock.close()


class _Spooled(Sink):
    """A private temporary file, copied into the target (a FIFO, a device, stdout) at the
    commit."""

    def __init__(self, path: str | None) -> None:
        super().__init__(tempfile.TemporaryFile())  # noqa: SIM115 - kept until the commit
        self._path = path

    def commit(self) -> None:
        try:
            self._handle.seek(0)
            if self._path is None:
                sys.stdout.flush()
                out = sys.stdout.buffer
                self._copy(out)
                out.flush()
            else:
                # O_NONBLOCK is not used: a FIFO waits for its reader, as `cat > fifo` does.
                with open(self._path, "wb", buffering=0) as out:
                    self._copy(out)
        finally:
            self.abort()

    def _copy(self, out: IO[bytes]) -> None:
        # JSON leaves C1, DEL, the separators and the bidi controls raw; on a terminal they
        # would act (U+202E reverses what follows), so there they are written as the \uNNNN
        # escape of the same character. A file or a pipe gets the bytes as they are.
        terminal = _isatty(out)
        held = b""
        while piece := self._handle.read(_COPY):
            if terminal:
                piece, held = _whole_characters(held + piece)
                piece = _RAW_IN_JSON.sub(_escaped, piece)
            self._write(out, piece)
        self._write(out, held)

    @staticmethod
    def _write(out: IO[bytes], data: bytes) -> None:
        view = memoryview(data)
        while view:  # a pipe or a device may take a write in parts
            taken = out.write(view)
            view = view[len(view) if taken is None else taken:]


#: What JSON's encoders leave raw and a terminal may act on, in UTF-8: DEL, C1, U+061C,
#: U+200E/F, U+2028/9, U+202A–E, U+2066–9 (see :func:`.terminal.inert_json`).
_RAW_IN_JSON = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]"
                          rb"|\xe2\x81[\xa6-\xa9]")


def _escaped(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode("utf-8"))


def _whole_characters(data: bytes) -> tuple[bytes, bytes]:
    """``data`` split before a UTF-8 sequence its end cuts short (held for the next piece)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # the lead byte of the last character
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return (data, b"") if back >= length else (data[:-back], data[-back:])
    return data, b""


def _isatty(out: IO[bytes]) -> bool:
    try:
        return out.isatty()
    except (OSError, ValueError):
        return False


def open_sink(output: str | None) -> Sink:
    """A sink for ``output`` (``None``: stdout).

    Raises:
        OutputError: ``output`` may not be written (:func:`output_problem`), or its
            directory's writer lock is held by another writer.
        OSError: the temporary file cannot be made.
    """
    if output is None:
        return _Spooled(None)
    problem = output_problem(output)
    if problem is not None:
        raise OutputError(problem)
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(output).st_mode):
            return _Spooled(output)  # a FIFO or a character device: written into
    from ..jsonl_store import held_directory_lock  # noqa: PLC0415

    directory = os.path.dirname(os.path.abspath(output))
    lock = contextlib.ExitStack()
    try:
        if not lock.enter_context(held_directory_lock(directory)):
            raise OutputError(LOCKED)
        return _Replacing(output, directory, lock)
    except BaseException:
        lock.close()
        raise


def write_file(output: str | None, data: bytes) -> None:
    """``data`` to ``output`` (``None``: stdout) by :func:`open_sink`'s rules, whole or not at
    all (raises ``OSError``; :class:`OutputError` says why ``output`` is refused)."""
    sink = open_sink(output)
    try:
        sink.write(data)
    except BaseException:
        sink.abort()
        raise
    sink.commit()
