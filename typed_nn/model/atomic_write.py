"""Replace a file atomically, and clean up the temporaries of saves that were killed.

:func:`write_atomic` writes the new bytes to a temporary file beside the target, named
``.NAME.XXXXXXXX.tmp`` (``tempfile.mkstemp``'s 8 characters from ``[a-z0-9_]``), fsyncs it and
renames it over the target: readers see the old file or the new one, never a mix, and a crash
at any point leaves the old file intact. A save killed outright (SIGKILL, the OOM killer)
cannot remove its temporary, so each save first removes the *stale* temporaries of the same
target (:func:`remove_stale_temporaries`).

A temporary is stale when no live save is writing it. Each save holds an exclusive
``flock`` on its temporary from just after creating it until it has been renamed, and the
kernel releases that lock when the process dies, however it dies; so a temporary whose lock
can be taken has no writer. The one moment a live save's temporary is unlocked, between
creating and locking it, the file is empty: an empty temporary is removed only once it is
:data:`EMPTY_GRACE_SECONDS` old. Where files cannot be locked (file systems without
``flock``) temporaries are kept. On Windows a file that a live save has open cannot be
removed, so there the removal itself is the check.

>>> write_atomic(Path("weights.bin"), [header_bytes, array.data])
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["EMPTY_GRACE_SECONDS", "remove_stale_temporaries", "temporary_pattern", "write_atomic"]

EMPTY_GRACE_SECONDS = 60.0
"""An *empty* temporary younger than this is kept: it may be a save that has created it and
not yet locked it (a gap of microseconds; the margin covers clock steps)."""

if sys.platform != "win32":
    import fcntl


def temporary_pattern(path: Path) -> re.Pattern[str]:
    """The names of ``path``'s temporaries (and of no other target's)."""
    return re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}\.tmp")


def write_atomic(path: Path, chunks: Iterable[bytes | memoryview]) -> None:
    """Write ``chunks`` to a locked temporary beside ``path``, fsync it, rename it over ``path``.

    Stale temporaries of ``path`` are removed first. A target that exists keeps its
    permission bits; a new one gets 0o644. A symbolic link is written through, as ``open``
    writes (the file it names is replaced, the link stays). On any failure the temporary is
    removed and the target is unchanged.
    """
    if path.is_symlink():
        path = path.resolve()
    directory = path.parent
    remove_stale_temporaries(path)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        _lock(fd)  # held until the file is closed, after the rename
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_directory(directory)


def remove_stale_temporaries(path: Path) -> list[str]:
    """Remove the temporaries of ``path`` that no live save is writing; returns their names."""
    pattern = temporary_pattern(path)
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return [
        name for name in names if pattern.fullmatch(name) and _remove_if_stale(path.parent / name)
    ]


def _lock(fd: int) -> None:
    if sys.platform == "win32":  # no flock; an open file cannot be removed there anyway
        return
    with contextlib.suppress(OSError):  # no flock on this file system: save, unprotected
        fcntl.flock(fd, fcntl.LOCK_EX)


def _unlocked(fd: int) -> bool:
    """Whether no other open file holds a lock on ``fd``'s file (we hold it afterwards)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held by a live writer (EWOULDBLOCK), or locks unsupported: keep it
        return False
    return True


def _remove_if_stale(tmp: Path) -> bool:
    if sys.platform == "win32":  # a live save's open file cannot be removed: removal is the check
        try:
            tmp.unlink()
        except OSError:
            return False
        return True
    try:
        before = os.lstat(tmp)
        if not stat.S_ISREG(before.st_mode):  # never open a FIFO or follow a link
            return False
        fd = os.open(tmp, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))  # NFS locks need write
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        young = time.time() - st.st_mtime < EMPTY_GRACE_SECONDS
        if (st.st_size == 0 and young) or not _unlocked(fd):
            return False
        if os.lstat(tmp).st_ino != st.st_ino:  # replaced since it was opened
            return False
        tmp.unlink()  # while holding its lock: no save can be writing it
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
