"""Atomic saves: a save killed by SIGKILL leaves the old file intact and its temporary is
removed by the next save, while a live save's temporary (locked) is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import tagged

import typed_nn as tn
from typed_nn.model import load_weights, save_weights
from typed_nn.model.atomic_write import (
    EMPTY_GRACE_SECONDS,
    remove_stale_temporaries,
    temporary_pattern,
)

if sys.platform != "win32":
    import fcntl

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and flock are POSIX")

ROOT = Path(__file__).resolve().parent.parent

BIG_SAVE = """
import sys
import numpy as np
import typed_nn as tn
from typed_nn.model import save_weights
big = tn.tensor(np.ones(int(sys.argv[2]), np.float32), tn.Float32, tn.CPU, tn.Dim1, copy=False)
save_weights(sys.argv[1], {"big": big})
"""

# A save that stops before its fsync until the parent writes a line: a live, locked temporary.
PAUSED_SAVE = """
import os, sys
import numpy as np
import typed_nn as tn
from typed_nn.model import save_weights
real_fsync = os.fsync
def paused_fsync(fd):
    os.fsync = real_fsync
    print("written", flush=True)
    sys.stdin.readline()
    real_fsync(fd)
os.fsync = paused_fsync
save_weights(sys.argv[1], {"w": tn.tensor(np.full(4, 2.0, np.float32), tn.Float32, tn.CPU, tn.Dim1)})
print("saved", flush=True)
"""


def child(code: str, *args: str, piped: bool = False) -> subprocess.Popen[str]:
    """``python -c code args`` with typed_nn importable; stdin and stdout piped if asked."""
    pipe = subprocess.PIPE if piped else None
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], env=env, text=True, stdin=pipe, stdout=pipe
    )


def temporaries(path: Path) -> list[Path]:
    pattern = temporary_pattern(path)
    return [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]


def small(value: float) -> dict[str, tn.Tensor[tn.Float32, tn.CPU, tn.Dim1]]:
    return {"w": tagged(np.full(4, value), tn.Float32)}


def test_a_save_killed_by_sigkill_leaves_a_temporary_that_the_next_save_removes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "model.safetensors"
    save_weights(path, small(1.0))
    before = path.read_bytes()
    proc = child(BIG_SAVE, str(path), str(32 << 20))  # 128 MiB: about half a second to write
    deadline = time.monotonic() + 60
    try:
        while not any(t.stat().st_size for t in temporaries(path)):  # killed mid-write
            assert proc.poll() is None, "the child finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.001)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    [stale] = temporaries(path)
    assert 0 < stale.stat().st_size < (32 << 20) * 4 + 1000
    assert path.read_bytes() == before  # the previous file is intact
    save_weights(path, small(3.0))
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]
    target = small(0.0)
    load_weights(path, target)
    assert target["w"].numpy().tolist() == [3.0] * 4


def test_a_live_saves_temporary_is_never_removed(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_weights(path, small(1.0))
    with child(PAUSED_SAVE, str(path), piped=True) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        try:
            assert proc.stdout.readline() == "written\n"
            [live] = temporaries(path)
            assert live.stat().st_size > 0
            save_weights(path, small(3.0))  # a concurrent save of the same target
            assert live.exists()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == "saved\n"
        finally:
            proc.kill()
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]
    target = small(0.0)
    load_weights(path, target)
    assert target["w"].numpy().tolist() == [2.0] * 4  # the child's save, renamed last


def test_only_unlocked_temporaries_of_the_same_target_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    stale = tmp_path / ".w.safetensors.abc_1234.tmp"
    keep = [
        ".w.safetensors.bak.abc_1234.tmp",  # the temporary of another target, w.safetensors.bak
        ".v.safetensors.abc_1234.tmp",
        "w.safetensors.abc_1234.tmp",
        ".w.safetensors.ABC_1234.tmp",
        ".w.safetensors.abc_12345.tmp",
        ".w.safetensors.abc_1234.tmp.old",
    ]
    for name in [stale.name, *keep]:
        (tmp_path / name).write_bytes(b"partial")
    (tmp_path / ".w.safetensors.folder00.tmp").mkdir()
    os.mkfifo(tmp_path / ".w.safetensors.fifo0000.tmp")  # must not block the save
    locked = tmp_path / ".w.safetensors.locked00.tmp"
    locked.write_bytes(b"a live save")
    empty = tmp_path / ".w.safetensors.empty000.tmp"  # a save between creating and locking
    empty.touch()
    with open(locked, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        save_weights(path, small(1.0))
        assert not stale.exists()
        assert locked.exists()
        assert empty.exists()
    for name in keep:
        assert (tmp_path / name).read_bytes() == b"partial"
    old = time.time() - EMPTY_GRACE_SECONDS - 5
    os.utime(empty, (old, old))
    assert sorted(remove_stale_temporaries(path)) == [empty.name, locked.name]
    assert sorted(os.listdir(tmp_path)) == sorted(
        [*keep, ".w.safetensors.folder00.tmp", ".w.safetensors.fifo0000.tmp", "w.safetensors"]
    )
