"""Files in the temporary folder that a process holds locked while it works, so that what a
killed process leaves behind is found and removed by the next sweep (Receiver.sweep).

A process holds each such file under an exclusive flock for as long as it works with it; the
kernel lets go of the lock when the process ends, however it ends (kill -9 included). A file
found under a pattern here whose lock is free therefore belongs to no live process. Each file is
created under a hidden name, locked, then renamed to its pattern, so a sweep never meets a file
whose creator has not locked it yet.

    held_file         a MariaDB staging batch (dogana-stage-*.tsv): removed when its load ends;
                      left by a killed gate, removed by the next sweep (remove_abandoned)
    deciding          a staging table's decision under way (dogana-deciding-<table>.lock): the
                      file is removed once the decision is handed back; a gate killed or failed
                      before that leaves it free, and its staging table is abandoned (abandoned)

Where flock does not exist (Windows) nothing is held and nothing is found abandoned: left files
wait for the system's own cleaning, and staging tables for the sweep's age limit.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

BATCH_PREFIX, BATCH_SUFFIX = "dogana-stage-", ".tsv"
DECIDING_PREFIX, DECIDING_SUFFIX = "dogana-deciding-", ".lock"


def folder() -> Path:
    return Path(tempfile.gettempdir())


def _locked(final: Path) -> IO[bytes]:
    """A new file at final, already under this process's exclusive lock."""
    handle, hidden = tempfile.mkstemp(prefix=f".{final.name}.", dir=final.parent)
    file = os.fdopen(handle, "w+b")
    try:
        if fcntl is not None:
            fcntl.flock(file, fcntl.LOCK_EX)
        os.replace(hidden, final)
    except BaseException:
        file.close()
        with contextlib.suppress(OSError):
            os.unlink(hidden)
        raise
    return file


@contextlib.contextmanager
def held_file(
    prefix: str = BATCH_PREFIX, suffix: str = BATCH_SUFFIX
) -> Iterator[tuple[IO[bytes], str]]:
    """A new file named prefix*suffix in the temporary folder, and its path: locked while in
    use, removed after."""
    final = folder() / f"{prefix}{os.urandom(8).hex()}{suffix}"
    file = _locked(final)
    try:
        yield file, str(final)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(final)
        file.close()


def remove_abandoned(
    prefix: str = BATCH_PREFIX, suffix: str = BATCH_SUFFIX, older_than: float = 0.0
) -> list[str]:
    """Remove the files named prefix*suffix in the temporary folder that no live process holds
    (and last changed more than older_than seconds ago); their paths."""
    removed = []
    for path in folder().glob(f"{prefix}*{suffix}"):
        try:
            if time.time() - path.stat().st_mtime < older_than:
                continue
        except OSError:
            continue
        with _free(path) as free:
            if free:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed.append(str(path))
    return removed


@contextlib.contextmanager
def deciding(name: str) -> Iterator[None]:
    """Hold the mark of a decision under way on staging table name, from before the table is
    created until the decision is handed back: removed then; left free when the block raises
    (or the process dies), which tells a sweep the table serves no one (abandoned)."""
    if fcntl is None:
        yield
        return
    final = folder() / f"{DECIDING_PREFIX}{name}{DECIDING_SUFFIX}"
    file = _locked(final)
    try:
        yield
    except BaseException:
        file.close()
        raise
    with contextlib.suppress(OSError):
        os.unlink(final)
    file.close()


def remove_stale_marks(older_than: float) -> list[str]:
    """Remove the free marks last changed more than older_than seconds ago: those of decisions
    that failed before their table was kept (nothing of them left), or whose table, by now,
    any sweep drops for its age; their paths."""
    return remove_abandoned(DECIDING_PREFIX, DECIDING_SUFFIX, older_than)


def abandoned(name: str) -> bool:
    """Whether staging table name's decision was abandoned: its mark is there and free. Its
    mark is removed then, as the caller drops the table."""
    path = folder() / f"{DECIDING_PREFIX}{name}{DECIDING_SUFFIX}"
    with _free(path) as free:
        if free:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return free


@contextlib.contextmanager
def _free(path: Path) -> Iterator[bool]:
    """Whether path exists and no process holds it; when so, this one holds it in the block."""
    if fcntl is None:
        yield False
        return
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below, after the block
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False  # a live process holds it
            return
        try:
            # Its holder may have removed it between our open and our lock: then it is done.
            same = os.stat(path).st_ino == os.fstat(file.fileno()).st_ino
        except OSError:
            same = False
        yield same
    finally:
        file.close()
