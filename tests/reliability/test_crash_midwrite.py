"""Crashes mid-write: a process appending to a disk session is killed with SIGKILL at random
points; reloading keeps every batch whose append returned (written: a crash of the process
cannot lose it, whether or not its group commit has made it durable yet), drops only a torn
tail (with a warning) and closes an open turn with ``interrupted`` (issue 8, item 3; the
acknowledgement rule of group commit, issue 15.4). Fork children started on the way, whose
seed stays in the parent's file, load whole with their acknowledged turn (issue 15.3)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import zstandard
from _writer import SESSION_ID, TEMPLATES, appends, build_template, child_events, digest
from returns.result import Success

from turnfork.core import (
    Event,
    SessionEndSeedEvent,
    SessionHeader,
    TurnEndEvent,
    TurnInterrupted,
    check_balance,
    close_open_turn,
    encode_event,
    encode_log,
    trace_log,
)
from turnfork.shell import JsonlSessionStore, ManualClock
from turnfork.shell.store import SessionRepairWarning

#: The crash, fuzz and load families run after the README command (`.ci/run`), not in it.
pytestmark = pytest.mark.slow

WRITER = Path(__file__).with_name("_writer.py")
REPO = Path(__file__).resolve().parents[2]
RUNS_ENV = "TURNFORK_CRASH_RUNS"
SEED_ENV = "TURNFORK_CRASH_SEED"
#: Kills per CI run (half plain JSONL, half zstd); TURNFORK_CRASH_RUNS=N runs N instead.
CI_RUNS = 30
#: Writers running at once (each waits for its kill point; the machine has few cores).
PARALLEL = 4
#: How long a writer may take to start writing before the run is a failure.
START_LIMIT = 60.0
_ROWS = (b'{"type":"text-chunks"', b'{"type":"reasoning-chunks"', b'{"type":"tool-call-chunks"')


@dataclass(frozen=True)
class Plan:
    """One writer run and where it is killed."""

    number: int
    compression: str
    mode: str
    template: str
    pack: bool
    seed: int
    #: Seconds between the kill trigger and the kill.
    delay: float

    def __str__(self) -> str:
        return (f"run {self.number}: {self.compression} {self.mode} {self.template} "
                f"pack={self.pack} seed={self.seed} delay={self.delay:.3f}s")


@dataclass(frozen=True)
class Killed:
    plan: Plan
    root: Path
    #: The writer's template fingerprint, and the events it reported written (0 if none).
    template: str
    acknowledged: int
    #: The most events it reported durable (committed).
    durable: int
    #: Fork children that reported their own turn written: id -> events.
    children: dict[str, int]
    done: bool
    returncode: int
    stderr: str


def _plans(count: int, seed: int) -> list[Plan]:
    rng = random.Random(seed)
    plans = []
    for number in range(count):
        mode = ("batches", "forks", "agent")[number % 3]
        template = "huge" if mode == "batches" and number % 5 == 1 else "normal"
        # A huge run is killed soon after announcing the 8 MiB batch, which takes some 30 ms
        # (more on a busy machine) to encode, write and fsync: now and then inside its write.
        # Other runs anywhere in the writing.
        delay = (rng.uniform(0, 0.08) if template == "huge"
                 else rng.uniform(0, 0.7 if mode == "agent" else 0.2))
        plans.append(Plan(number=number, compression=("none", "zstd")[number % 2], mode=mode,
                          template=template, pack=rng.random() < 0.5,
                          seed=rng.randrange(2**32), delay=delay))
    return plans


@cache
def _template(name: str) -> tuple[SessionHeader, tuple[Event, ...]]:
    return build_template(name)


@cache
def _appends(template: str, mode: str, seed: int) -> list[tuple[int, int]]:
    return appends(template, mode, seed)


def _append_end(plan: Plan, written: int) -> int:
    """Where the append holding event ``written`` ends (``written`` past the last append)."""
    mode = "batches" if plan.mode == "forks" else plan.mode
    bounds = _appends(plan.template, mode, plan.seed if mode == "batches" else 0)
    return next((end for start, end in bounds if start <= written < end), written)


def _huge_seq(events: tuple[Event, ...]) -> int:
    """Seq of the event holding the 8 MiB tool result."""
    return max(range(len(events)), key=lambda seq: len(encode_event(events[seq])))


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return [line for line in text.split("\n")[:-1] if line]  # complete lines only


def _wait(condition: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    limit = time.monotonic() + START_LIMIT
    while not condition():
        if process.poll() is not None or time.monotonic() > limit:
            return
        time.sleep(0.002)


def _kill_one(plan: Plan, base: Path) -> Killed:
    root = base / f"run-{plan.number}"
    root.mkdir()
    out, err = root / "stdout", root / "stderr"
    command = [sys.executable, str(WRITER), str(root / "sessions"), plan.compression,
               plan.mode, plan.template, "1" if plan.pack else "0", str(plan.seed)]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(command, cwd=REPO, stdout=stdout, stderr=stderr)
    try:
        if plan.template == "huge":
            huge = _huge_seq(_template("huge")[1])
            _wait(lambda: any(line.startswith(">") and int(line[2:]) > huge
                              for line in _lines(out)), process)
        else:
            _wait(lambda: any(line.isdigit() for line in _lines(out)), process)
        time.sleep(plan.delay)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    lines = _lines(out)
    acknowledged = max((int(line) for line in lines if line.isdigit()), default=0)
    durable = max((int(line[2:]) for line in lines if line.startswith("d ")), default=0)
    children = {f"child-{line.split()[1]}": int(line.split()[2])
                for line in lines if line.startswith("c ")}
    fingerprint = next((line.split()[1] for line in lines if line.startswith("template ")), "")
    return Killed(plan=plan, root=root / "sessions", template=fingerprint,
                  acknowledged=acknowledged, durable=durable, children=children,
                  done="done" in lines,
                  returncode=process.returncode, stderr=err.read_text(errors="replace"))


def _records_on_disk(path: Path, compression: str) -> tuple[int, bool]:
    """(events in the whole records of the file, whether its tail is torn), read
    independently of the store: whole lines, whole zstd frames' text and the whole lines of
    an incomplete last frame."""
    data = path.read_bytes()
    if compression == "zstd":
        decompressor = zstandard.ZstdDecompressor()
        parts: list[bytes] = []
        torn = False
        while data:
            frame = decompressor.decompressobj()
            parts.append(frame.decompress(data))
            if not frame.eof:
                torn = True
                break
            data = frame.unused_data
        text = b"".join(parts)
    else:
        text = data
        torn = not data.endswith(b"\n")
    whole = text[:text.rfind(b"\n") + 1].split(b"\n")[1:-1]  # without the header line
    count = 0
    for line in whole:
        if line.startswith(_ROWS):
            record = json.loads(line)
            count += len(record["data"]["args" if "args" in record["data"] else "texts"])
        else:
            count += 1
    return count, torn


def _load(killed: Killed) -> tuple[tuple[Event, ...], list[warnings.WarningMessage]]:
    store = JsonlSessionStore(killed.root, compression="zstd" if killed.plan.compression ==
                              "zstd" else "none", pack_chunks=killed.plan.pack,
                              clock=ManualClock(42))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = store.load(SESSION_ID)
    store.release(SESSION_ID)  # the writer lock goes with it: the next load may take it
    return tuple(session.events), list(caught)


def _check_reload(killed: Killed, file: Path, *, at_least: int, at_most: int) -> str:
    """Load the killed session and check it against the template; returns a summary.

    ``at_least``: events acknowledged as durable; ``at_most``: the most the file may hold."""
    plan = killed.plan
    template = _template(plan.template)[1]
    on_disk, torn = _records_on_disk(file, plan.compression)
    # Nothing acknowledged is lost, and nothing beyond the batch being written is there.
    assert at_least <= on_disk <= at_most, (plan, at_least, on_disk, at_most)

    loaded, caught = _load(killed)
    repairs = [w for w in caught if issubclass(w.category, SessionRepairWarning)]
    assert len(repairs) == len(caught) == (1 if torn else 0), (plan, [str(w) for w in caught])
    # The durable prefix is exactly what the writer wrote.
    assert loaded[:on_disk] == template[:on_disk], (plan, on_disk, torn, len(loaded), file)
    # An open turn is closed with the crash-repair closers, ending in turn/end interrupted.
    kept = template[:on_disk]
    closers = close_open_turn(trace_log(kept).unwrap(), kept, TurnInterrupted())
    assert loaded[on_disk:-1] == closers, plan
    if closers:
        last = closers[-1]
        assert isinstance(last, TurnEndEvent) and last.data.reason == TurnInterrupted(), plan
    assert isinstance(loaded[-1], SessionEndSeedEvent)  # the live session's own marker
    assert isinstance(check_balance(loaded), Success), (plan, check_balance(loaded))

    # The repair was made durable: a second load changes nothing and warns about nothing.
    repaired = file.read_bytes()
    again, caught_again = _load(killed)
    assert not caught_again, (plan, [str(w) for w in caught_again])
    assert again == loaded, plan
    assert file.read_bytes() == repaired, plan
    return f"on disk {on_disk}, closers {len(closers)}, {'torn' if torn else 'whole'}"


def _check_children(killed: Killed) -> str:
    """Every fork child with a file loads whole: its seed (read from the parent's file, after
    the parent's own repair) is the parent's prefix, then its end-seed, then — when it said
    so — its own turn."""
    template = _template(killed.plan.template)[1]
    store = JsonlSessionStore(killed.root, compression="zstd" if killed.plan.compression ==
                              "zstd" else "none", pack_chunks=killed.plan.pack)
    loaded = 0
    for file in sorted(killed.root.glob("*/child-*/session.jsonl*")):
        child_id = file.parent.name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            session = store.load(child_id)
        assert not caught, (killed.plan, child_id, [str(w) for w in caught])
        events = tuple(session.events)
        length = session.header.seed_length
        assert isinstance(length, int) and events[:length] == template[:length], child_id
        assert isinstance(events[length], SessionEndSeedEvent), child_id
        own = child_events(length, trace_log(template[:length]).unwrap().next_turn,
                           template[length - 1].time)
        assert events[length + 1:length + 3] == tuple(own), (killed.plan, child_id)
        assert isinstance(check_balance(events), Success), child_id
        store.release(child_id)
        loaded += 1
    missing = sorted(set(killed.children) - {f.parent.name for f in
                                             killed.root.glob("*/child-*/session.jsonl*")})
    assert not missing, (killed.plan, missing)
    return f"; {loaded} fork children load ({len(killed.children)} acknowledged)"


def _next_write(killed: Killed, written: int) -> tuple[int, bytes]:
    """The end and the bytes of the append the writer would have made next (the rest of one
    a kill cut at a line boundary, if it did)."""
    plan = killed.plan
    template = _template(plan.template)[1]
    end = _append_end(plan, written)
    text = encode_log(template[written:end], pack_chunks=plan.pack)
    if plan.compression == "zstd":
        text = zstandard.ZstdCompressor(write_checksum=True).compress(text)
    return end, text


def _verify(killed: Killed) -> str:
    """Check one killed run: the file as the kill left it, then the same file with the next
    write torn at a random byte (what a kill inside a long write leaves); returns a summary."""
    plan = killed.plan
    assert killed.returncode == -signal.SIGKILL, (plan, killed.returncode, killed.stderr)
    assert not killed.stderr, (plan, killed.stderr)
    assert killed.acknowledged > 0, f"{plan}: the writer never acknowledged a batch"
    assert killed.template == digest(*_template(plan.template)), (
        f"{plan}: the writer built other events than this test expects (code changed "
        "between the two imports?)")
    assert killed.durable <= killed.acknowledged, (plan, killed.durable, killed.acknowledged)
    files = list(killed.root.glob(f"*/{SESSION_ID}/session.jsonl*"))
    assert len(files) == 1, files
    file = files[0]
    raw = file.read_bytes()
    written, torn = _records_on_disk(file, plan.compression)
    state = "done" if killed.done else "killed"
    # The kill fell inside the append after the last acknowledged one, or after it.
    at_most = _append_end(plan, killed.acknowledged)
    summary = (f"{plan}: {state}, acknowledged {killed.acknowledged} (durable "
               f"{killed.durable}), "
               + _check_reload(killed, file, at_least=killed.acknowledged, at_most=at_most))
    if plan.mode == "forks":
        summary += _check_children(killed)
    if torn or written == len(_template(plan.template)[1]):
        return summary
    end, payload = _next_write(killed, written)
    cut = random.Random(plan.seed).randint(1, len(payload) - 1)
    file.write_bytes(raw + payload[:cut])
    simulated = _check_reload(killed, file, at_least=written, at_most=end)
    return f"{summary}; next write torn at byte {cut}/{len(payload)}: {simulated}"


def _run_count() -> int:
    return int(os.environ.get(RUNS_ENV) or CI_RUNS)


def test_sigkill_at_random_points_never_loses_an_acknowledged_batch(tmp_path: Path) -> None:
    """Many writers killed mid-write (both compressions): reload keeps, repairs, is stable."""
    for name in TEMPLATES:  # the test's own copy of what the writer writes
        _template(name)
    seed = int(os.environ.get(SEED_ENV) or random.randrange(2**32))
    print(f"{SEED_ENV}={seed}")  # shown with a failure: the same plans again
    plans = _plans(_run_count(), seed)
    summaries = []
    with ThreadPoolExecutor(PARALLEL) as pool:  # checked here, as the runs end
        runs = [pool.submit(_kill_one, plan, tmp_path) for plan in plans]
        summaries = [_verify(run.result()) for run in as_completed(runs)]
    torn = sum(": on disk" in line and "torn" in line.split(";")[0] for line in summaries)
    print(f"\n{len(summaries)} kills ({SEED_ENV}={seed}), {torn} left a torn tail themselves:")
    print("\n".join(summaries))
