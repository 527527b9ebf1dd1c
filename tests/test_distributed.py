"""Data-parallel training (typed_nn.distributed): 2 ranks under ``mpiexec -n 2`` against 1
process, the collectives, the errors, and the faults (a rank that raises, a rank killed).

The multi-process tests start ``tests/distributed_worker.py`` under the ``mpiexec`` next to
this Python (``pip install 'typed_nn[distributed]'`` puts MPICH's there); they are skipped
when mpi4py or mpiexec is missing. The rest run in this process on stand-in worlds.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.distributed import World, abort_on_error, data_parallel, launched, world
from typed_nn.distributed.data_parallel import (
    check_batch,
    check_device,
    data_digest,
    local_order,
    shard,
)
from typed_nn.distributed.nccl import NcclWorld
from typed_nn.model import SGD, load_weights
from typed_nn.train import fit
from typed_nn.train.classifier import build_mlp

world_module = importlib.import_module("typed_nn.distributed.world")
ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "distributed_worker.py"


def _mpiexec() -> str | None:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


_NO_MPI = "mpi4py or mpiexec is missing: pip install -e '.[distributed]'"
_MISSING = importlib.util.find_spec("mpi4py") is None or _mpiexec() is None
if _MISSING and os.environ.get("TYPED_NN_REQUIRE_MPI"):  # scripts/check.sh: CI runs them
    raise RuntimeError(f"TYPED_NN_REQUIRE_MPI is set but {_NO_MPI}")
needs_mpi = pytest.mark.skipif(_MISSING, reason=_NO_MPI)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    for name in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"):
        env.pop(name, None)
    return env


def _run(
    n: int, *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    mpiexec = _mpiexec()
    assert mpiexec is not None
    command = [mpiexec, "-n", str(n), sys.executable, *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=_env() | (env or {}), cwd=ROOT
    )


class FakeComm:
    """Rank ``rank`` of ``size``: what the pure helpers and the setup checks ask of mpi4py's
    communicator (every rank answers alike)."""

    def __init__(self, rank: int, size: int) -> None:
        self.rank, self.size = rank, size

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size

    def Iallgather(self, send: np.ndarray, recv: np.ndarray) -> Done:
        recv.reshape(self.size, -1)[...] = send.reshape(1, -1)
        return Done()

    def Iallgatherv(self, send: np.ndarray, spec: list[Any]) -> Done:
        out, (sizes, starts) = spec
        for start, size in zip(starts, sizes, strict=True):
            out[start : start + size] = send
        return Done()


class Done:
    """A non-blocking collective's request, already complete."""

    def Test(self) -> bool:
        return True


# --- 2 ranks against 1 process ----------------------------------------------------------------


@needs_mpi
@pytest.mark.parametrize(
    "optimizer", ["sgd", "momentum", "adam", "module-sgd", "module-momentum", "module-adam"]
)
def test_two_ranks_train_the_weights_one_process_trains(optimizer: str, tmp_path: Path) -> None:
    """Global batch 16 (8 per rank; the epoch's last batch of 11 splits 6 + 5), 3 epochs.

    Tolerance 1e-5 (absolute, weights of size ~1): the ranks sum the same per-sample
    gradients in another order (each rank's half, weighed by its share, then the two halves),
    so each step's float32 gradient differs by a few ulps (float32 eps = 1.2e-7) and the 39
    steps carry it on; measured: about 1e-7. Every rank ends with the same bits, as its
    update is the same function of the same summed gradient. ``module-*``: an nn.Module
    with a typed_nn.optim optimizer, each rank's initial weights drawn from another seed."""
    mode = optimizer if optimizer.startswith("module-") else f"train-{optimizer}"
    alone = subprocess.run(
        [sys.executable, str(WORKER), mode, str(tmp_path / "one")],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    assert alone.returncode == 0
    done = _run(2, str(WORKER), mode, str(tmp_path / "two"))
    assert done.returncode == 0, done.stderr
    one = np.load(tmp_path / "one.rank0.npz")
    ranks = [np.load(tmp_path / f"two.rank{r}.npz") for r in (0, 1)]
    for name in one.files:
        assert np.array_equal(ranks[0][name], ranks[1][name]), name
        np.testing.assert_allclose(ranks[0][name], one[name], rtol=0, atol=1e-5, err_msg=name)
    np.testing.assert_array_equal(ranks[0]["acc"], one["acc"])


@needs_mpi
def test_collectives_on_tensors_across_two_ranks() -> None:
    done = _run(2, str(WORKER), "collectives", "-")
    assert done.returncode == 0, done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank"))
    total = [[10.0, 12.0, 14.0], [16.0, 18.0, 20.0]]
    mean = [[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]]
    gathered = [[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]]
    root = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert lines == [f"rank {r}: {total} {mean} {gathered} {root}" for r in (0, 1)]


@needs_mpi
def test_batch_norm_ranks_score_save_and_stop_on_one_model() -> None:
    """Each rank's running statistics came from its part of the batches, so the ranks scored
    different models, and early stopping stopped one rank while the other waited (a stall):
    rank 0's buffers are broadcast after every epoch."""
    done = _run(2, str(WORKER), "batchnorm", "-")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0] == lines[1]


@needs_mpi
def test_the_command_trains_data_parallel_under_mpiexec(tmp_path: Path) -> None:
    main = "import sys; from typed_nn.cli import main; sys.exit(main())"
    args = ["-c", main, "train", "digits", "--epochs", "1", "--widths", "16", "--no-progress"]
    done = _run(2, *args, "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("test accuracy:") == 1  # rank 0 alone prints
    assert (tmp_path / "run" / "digits_mlp.safetensors").exists()
    bad = _run(2, *args, "--batch-size", "33", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2
    assert bad.stderr.count("typed-nn: error:") == 1  # every rank fails, rank 0 says so
    assert (
        "--batch-size 33 is the global batch of 2 ranks: it must be a multiple of 2 (the nearest: 32 or 34)"
        in bad.stderr
    )
    assert not (tmp_path / "bad").exists()


# --- bad input ----------------------------------------------------------------------------------


@needs_mpi
def test_ranks_that_disagree_on_the_model_name_the_first_difference() -> None:
    done = _run(2, str(WORKER), "mismatch", "-")
    assert done.returncode == 3
    expected = (
        "DistributedError: the ranks do not train the same model: rank 1 differs from rank 0.\n"
        "  rank 0 : parameter mlp/fc1/weight: Float32 (12, 16)\n"
        "  rank 1 : parameter mlp/fc1/weight: Float32 (12, 17)\n"
        "hint: build the same model"
    )
    assert done.stdout.count(expected) == 2  # raised on both ranks: neither waits


DIFFERENCES = {
    "samples": ("training samples: 203", "training samples: 80"),
    "same-batches": ("training samples: 203", "training samples: 200"),
    "values": ("training data digest: [0-9a-f]{32}", "training data digest: [0-9a-f]{32}"),
    "batch": ("batch size: 16", "batch size: 32"),
    "epochs": ("epochs: 3", "epochs: 2"),
    "optimizer": (
        r"optimizer: SGD \{'weight_decay': 0.0\}",
        r"optimizer: Momentum \{'weight_decay': 0.0, 'momentum': 0.9, 'nesterov': False\}",
    ),
    "lr": ("learning rate: 0.1", "learning rate: 0.2"),
    "seed": ("seed: 0", "seed: 1"),
}
"""What rank 1 changes in the worker's ``disagree`` mode, and the lines naming it."""


@needs_mpi
def test_ranks_that_disagree_on_the_run_name_the_first_difference_on_every_rank() -> None:
    """Other data (fewer samples, as many batches, other values of the same shapes), another
    batch size, number of epochs, optimizer, learning rate or seed on rank 1: one
    DistributedError on both ranks before the first step, naming the setting and the rank
    (neither waits for the other, none trains on)."""
    done = _run(2, str(WORKER), "disagree", "-", timeout=60)
    assert done.returncode == 0, done.stderr
    for name, (ours, theirs) in DIFFERENCES.items():
        expected = (
            rf"{name}: rank [01]: the ranks do not run the same training: rank 1 differs from "
            rf"rank 0\. \|   rank 0 : {ours} \|   rank 1 : {theirs} \| hint: give every rank "
            r"the same data \(the same rows, in the same order\) and the same fit arguments"
        )
        assert len(re.findall(expected, done.stdout)) == 2, (name, done.stdout)


@needs_mpi
def test_a_rank_that_leaves_does_not_leave_the_others_waiting(tmp_path: Path) -> None:
    """Rank 1 leaves after its first epoch (its error caught): rank 0 waits in the next
    step's all-reduce at most TYPED_NN_COLLECTIVE_TIMEOUT seconds, then fails clearly."""
    start = time.monotonic()
    done = _run(2, str(WORKER), "leave", "-", timeout=60, env={"TYPED_NN_COLLECTIVE_TIMEOUT": "2"})
    assert time.monotonic() - start < 30
    assert "rank 1: RuntimeError: rank 1 leaves" in done.stdout
    assert (
        "rank 0: DistributedError: rank 0 of 2 waited 2 s in all_reduce for the other ranks: a "
        "rank has left the run (an error of its own, or fewer steps than this one).\n"
        "  collective : all_reduce\n"
        "  waited     : 2 s (TYPED_NN_COLLECTIVE_TIMEOUT)\n"
        "hint: read the other ranks' errors;"
    ) in done.stdout


def test_the_collective_timeout_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TYPED_NN_COLLECTIVE_TIMEOUT", raising=False)
    assert world_module.collective_timeout() == 600.0
    monkeypatch.setenv("TYPED_NN_COLLECTIVE_TIMEOUT", "2.5")
    assert world_module.collective_timeout() == 2.5
    monkeypatch.setenv("TYPED_NN_COLLECTIVE_TIMEOUT", "none")
    assert world_module.collective_timeout() is None
    for bad in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv("TYPED_NN_COLLECTIVE_TIMEOUT", bad)
        with pytest.raises(
            tn.DistributedError,
            match=rf"^TYPED_NN_COLLECTIVE_TIMEOUT must be a positive number of seconds, or "
            rf"'none'\.\n  received : '{bad}'\nhint: e\.g\. TYPED_NN_COLLECTIVE_TIMEOUT=600",
        ):
            world_module.collective_timeout()


def test_the_data_digest_reads_small_data_whole_and_large_data_by_spread_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    other = x.copy()
    other[7, 2] += 1
    assert data_digest(x) == data_digest(x.copy())
    assert data_digest(x) != data_digest(other)  # any value, under the size
    assert data_digest(x) != data_digest(x.reshape(15, 2))  # the shape counts
    assert data_digest(x) != data_digest(x.astype(np.float64))  # and the dtype
    monkeypatch.setattr(data_parallel, "DIGEST_BYTES", 16)
    monkeypatch.setattr(data_parallel, "DIGEST_ROWS", 4)  # rows 0, 3, 6 and 9
    sampled = x.copy()
    sampled[7] += 1  # a row the sample skips
    assert data_digest(x) == data_digest(sampled)
    sampled[9] += 1  # one it reads
    assert data_digest(x) != data_digest(sampled)


class Pending:
    """A request the other ranks never complete."""

    def Test(self) -> bool:
        return False


def test_a_collective_the_other_ranks_never_join_ends_after_the_timeout() -> None:
    comm = FakeComm(0, 2)
    comm.Ibarrier = Pending  # type: ignore[attr-defined]
    w = World(comm, timeout=0.05)
    start = time.monotonic()
    with pytest.raises(
        tn.DistributedError,
        match=r"^rank 0 of 2 waited 0\.05 s in barrier for the other ranks: a rank has left",
    ):
        w.barrier()
    assert time.monotonic() - start < 1


@needs_mpi
def test_a_global_batch_the_ranks_cannot_share_is_refused_on_every_rank() -> None:
    done = _run(2, str(WORKER), "batch", "-")
    assert done.returncode == 3
    assert done.stdout.count("cannot split a global batch of 15 samples across 2 ranks") == 2


@needs_mpi
def test_a_part_of_a_batch_one_rank_cannot_take_is_an_error_on_every_rank() -> None:
    """A training batch norm and a last batch split 2 / 1: rank 1's step refuses its part;
    every rank checks every rank's parts before the first step, so no rank waits for it in a
    collective (rank 0 waited out the collective timeout, 10 minutes by default)."""
    start = time.monotonic()
    done = _run(2, str(WORKER), "bn-part", "-")
    assert time.monotonic() - start < 60
    assert done.returncode == 3
    lines = [line for line in done.stdout.splitlines() if line.startswith("rank ")]
    assert len(lines) == 2
    for line in lines:
        assert "TrainingError: cannot train data-parallel: a rank's part of 1 sample(s) is " in line


def test_the_batch_rule() -> None:
    four = World(FakeComm(0, 4))
    with pytest.raises(
        tn.DistributedError,
        match=r"^cannot split a global batch of 3 samples across 4 ranks: it is smaller than "
        r"the number of ranks\.\n(.*\n){3}hint: use a batch size of 4 or 8, or start 3 ranks\.",
    ):
        check_batch(four, 3)
    with pytest.raises(
        tn.DistributedError,
        match=r"it is not divisible by the number of ranks\.\n  batch size : 10 \(global: split "
        r"across the ranks\)\n  ranks      : 4\n  rule       : the global batch size is a "
        r"multiple of the number of ranks\nhint: use a batch size of 8 or 12, or start 2 ranks\.",
    ):
        check_batch(four, 10)
    with pytest.raises(tn.DistributedError, match=r"or train in one process\.$"):
        check_batch(World(FakeComm(0, 2)), 7)
    assert check_batch(four, 32) == 8
    net, _ = build_mlp([4, 3], seed=0)
    with pytest.raises(tn.DistributedError, match="not divisible"):  # fit checks it first
        fit(net, _blobs(8), SGD(0.1), batch_size=6, world=four)


def test_every_sample_of_an_epoch_is_stepped_on_by_exactly_one_rank() -> None:
    order = np.random.default_rng(0).permutation(23)
    for size in (1, 2, 3, 4):
        parts = [local_order(World(FakeComm(r, size)), order, 4 * size) for r in range(size)]
        assert sorted(np.concatenate(parts).tolist()) == list(range(23))
    # The last batch (3 samples) across 4 ranks: rank 3 steps on a stand-in weighed 0.
    shares = [shard(World(FakeComm(r, 4)), 20, 23) for r in range(4)]
    assert [(s.lo, s.hi, s.counted) for s in shares] == [
        (20, 21, True),
        (21, 22, True),
        (22, 23, True),
        (20, 21, False),
    ]
    assert [s.weight for s in shares] == [1 / 3, 1 / 3, 1 / 3, 0.0]
    assert shard(World(), 0, 16) == (0, 16, 1.0, True)


def test_gpu_training_under_mpi_needs_nccl(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cupy without ``cupy.cuda.nccl`` (this machine has none at all): refused on every
    rank before a step."""
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setitem(sys.modules, "cupy.cuda", types.ModuleType("cupy.cuda"))
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", None)  # import fails
    match = (
        r"^GPU training \(rank 0\) of 2 processes needs NCCL, which this cupy does not have\.\n"
        r"(.*\n){3}hint: install NCCL for cupy .*or train on the CPU with --device cpu$"
    )
    with pytest.raises(tn.DistributedError, match=match):
        check_device(World(FakeComm(1, 2)), tn.GPU)
    check_device(World(FakeComm(1, 2)), tn.CPU)  # the CPU needs none
    check_device(World(), tn.GPU)  # nor one process


def test_the_distributed_extra_missing_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from typed_nn.cli import main

    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # not installed
    monkeypatch.setattr(world_module, "_WORLD", [])
    assert main(["train", "digits", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == (
        "typed-nn: error: data-parallel training of 2 processes needs mpi4py, which is not "
        "installed. (install the distributed extra: pip install 'typed_nn[distributed]')\n"
    )
    monkeypatch.setenv("PMI_RANK", "1")  # the other ranks say nothing
    assert main(["train", "digits", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == ""
    assert not (tmp_path / "out").exists()


def test_a_launcher_whose_mpi_is_not_mpi4pys_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("mpi4py")
    fake.MPI = types.SimpleNamespace(COMM_WORLD=FakeComm(0, 1))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mpi4py", fake)
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    monkeypatch.delenv("PMI_SIZE", raising=False)
    monkeypatch.setattr(world_module, "_WORLD", [])
    assert launched() == (2, 4)
    with pytest.raises(
        tn.DistributedError,
        match=r"^the launcher started 4 processes but MPI sees 1: mpi4py was built for another "
        r"MPI than the one that launched this run\.",
    ):
        world_module.world()


# --- a one-process world -------------------------------------------------------------------------


def test_alone_the_world_is_one_process_and_its_collectives_keep_the_values() -> None:
    w = World()
    assert (w.rank, w.size, w.is_root) == (0, 1, True)
    t = tn.tensor([[1.0, 2.0], [3.0, 4.0]], tn.Float32, tn.CPU, tn.Dim2)
    total = w.all_reduce(t)
    assert total is not t
    assert total.numpy().tolist() == t.numpy().tolist()
    assert w.all_reduce(t, "mean").numpy().tolist() == t.numpy().tolist()
    assert w.broadcast(t) is t
    assert w.all_gather(t).shape == (1, 2, 2)
    with pytest.raises(
        tn.OperandError, match=r"^all_reduce: unknown reduction\.\n  received : 'max'"
    ):
        w.all_reduce(t, "max")  # type: ignore[arg-type]
    with pytest.raises(tn.OperandError, match=r"^all_gather needs a principal tensor"):
        w.all_gather(t + t)  # type: ignore[arg-type]
    n = tn.tensor([1, 2], tn.Int32, tn.CPU, tn.Dim1)
    with pytest.raises(tn.OperandError, match=r"the mean of integer tensors is not an integer"):
        w.all_reduce(n, "mean")
    with pytest.raises(tn.OperandError, match=r"^broadcast: the root is not a rank of the world"):
        w.broadcast(t, root=1)


def test_alone_abort_on_error_lets_the_exception_through() -> None:
    with pytest.raises(ValueError, match="alone"), abort_on_error(World()):
        raise ValueError("alone")


def _blobs(n: int) -> Any:
    from typed_nn.train import Dataset

    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return Dataset(x, (x[:, :3].argmax(1)).astype(np.int64), 3)


# --- faults --------------------------------------------------------------------------------------


@needs_mpi
def test_a_rank_that_raises_ends_every_rank(tmp_path: Path) -> None:
    start = time.monotonic()
    done = _run(2, str(WORKER), "raise", str(tmp_path / "w.safetensors"), timeout=60)
    assert time.monotonic() - start < 60
    assert done.returncode != 0
    assert (
        "typed-nn: rank 1 of 2 failed, ending every rank: RuntimeError: a failure on rank 1 only"
        in done.stderr
    )


@needs_mpi
def test_a_rank_killed_mid_epoch_ends_the_run_and_keeps_the_last_weights(
    tmp_path: Path,
) -> None:
    """Rank 1 kills itself (SIGKILL) in the middle of the second epoch, while rank 0 waits
    for it in the step's all-reduce: mpiexec ends rank 0; the weight file rank 0 wrote after
    the first epoch (atomically) loads."""
    path = tmp_path / "w.safetensors"
    start = time.monotonic()
    done = _run(2, str(WORKER), "kill", str(path), timeout=60)
    assert time.monotonic() - start < 60
    assert done.returncode != 0
    _net, params = build_mlp([12, 16, 4], "relu", seed=5)
    weights = dict(params.items())
    before = weights["mlp/fc1/weight"].numpy().copy()
    assert sorted(load_weights(path, params)) == sorted(weights)
    assert not np.array_equal(weights["mlp/fc1/weight"].numpy(), before)
    assert [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]  # no temporary left


# --- NCCL (GPU) on a stand-in ---------------------------------------------------------------------


class _Memory:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _GpuArray:
    def __init__(self, ptr: int, size: int, dtype: str) -> None:
        self.data, self.size, self.dtype = _Memory(ptr), size, np.dtype(dtype)


def test_the_nccl_calls_follow_cupys_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not run on a GPU (this machine has none): the calls' arguments, on a stand-in for
    ``cupy.cuda.nccl`` with cupy's signatures (``NcclCommunicator(ndev, uid, rank)``,
    ``allReduce(send, recv, count, dtype, op, stream)``, ``bcast(buf, count, dtype, root,
    stream)``, ``allGather(send, recv, count, dtype, stream)``)."""
    calls: list[tuple[Any, ...]] = []

    class Communicator:
        def __init__(self, ndev: int, uid: Any, rank: int) -> None:
            calls.append(("init", ndev, uid, rank))

        def allReduce(self, *args: Any) -> None:
            calls.append(("allReduce", *args))

        def bcast(self, *args: Any) -> None:
            calls.append(("bcast", *args))

        def allGather(self, *args: Any) -> None:
            calls.append(("allGather", *args))

    nccl = types.SimpleNamespace(
        NcclCommunicator=Communicator,
        get_unique_id=lambda: "uid",
        NCCL_FLOAT32=7,
        NCCL_FLOAT64=8,
        NCCL_INT32=2,
        NCCL_INT64=4,
        NCCL_SUM=0,
    )
    used: list[int] = []
    cuda = types.SimpleNamespace(
        nccl=nccl,
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 2),
        Device=lambda i: types.SimpleNamespace(use=lambda: used.append(i)),
        get_current_stream=lambda: types.SimpleNamespace(ptr=99),
    )
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", nccl)
    monkeypatch.setenv("MPI_LOCALRANKID", "3")
    w = World(FakeComm(1, 4))
    gpu = NcclWorld.connect(w.rank, w.size, lambda uid: w.all_gather_object(uid)[0])
    assert used == [1]
    assert calls == [("init", 4, None, 1)]
    send, out = _GpuArray(100, 6, "float32"), _GpuArray(200, 6, "float32")
    gpu.all_reduce(send, out)
    gpu.broadcast(_GpuArray(300, 3, "int64"), 0)
    gpu.all_gather(send, _GpuArray(400, 24, "float32"))
    assert calls[1:] == [
        ("allReduce", 100, 200, 6, 7, 0, 99),
        ("bcast", 300, 3, 4, 0, 99),
        ("allGather", 100, 400, 6, 7, 99),
    ]
    with pytest.raises(tn.DistributedError, match=r"^NCCL cannot reduce this element type"):
        gpu.all_reduce(_GpuArray(1, 1, "float16"), _GpuArray(2, 1, "float16"))


@pytest.mark.gpu
@pytest.mark.parametrize("cupy_module", ["emulated"], indirect=True)
def test_the_command_on_the_gpu_under_mpi_without_nccl_says_so_once(
    cupy_module: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """``mpiexec -n 2 typed-nn train digits --device gpu`` with a cupy that has no NCCL (the
    emulator's): exit 2 before a step, rank 0 alone printing the reason and the fix."""
    import typed_nn.cli as cli

    monkeypatch.setattr(cli, "world", lambda: World(FakeComm(0, 2)))
    status = cli.main(["train", "digits", "--device", "gpu", "--out", str(tmp_path / "out")])
    assert status == 2
    assert capsys.readouterr().err == (
        "typed-nn: error: GPU training (rank 0) of 2 processes needs NCCL, which this cupy "
        "does not have. (install NCCL for cupy (pip install nvidia-nccl-cu12 beside "
        "cupy-cuda12x; see cupy's installation guide), or train on the CPU with --device cpu)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_regression_is_refused_data_parallel_before_any_step() -> None:
    from typed_nn.model import SGD
    from typed_nn.train import ArrayDataset, fit
    from typed_nn.train.classifier import build_mlp

    net, _ = build_mlp([3, 4, 1], "relu", seed=0)
    data = ArrayDataset(np.zeros((8, 3), np.float32), np.zeros((8, 1), np.float32))
    with pytest.raises(tn.DistributedError, match=r"cannot train a regression .* data-parallel"):
        fit(net, data, SGD(0.1), epochs=1, batch_size=4, world=World(FakeComm(0, 2)))


def test_a_collective_inside_a_compiled_function_is_refused() -> None:
    """It would run once, on the trace's stand-ins, and its result would be frozen (alone,
    all_reduce returns its tensor: the program would break only under mpiexec)."""
    w = world()
    x = tn.tensor(np.ones((2, 2), np.float32), tn.Float32, tn.CPU, tn.Dim2)
    for collective in (w.all_reduce, w.broadcast, w.all_gather):
        step = tn.compile(lambda a, c=collective: c(a))
        with pytest.raises(
            tn.CompileError,
            match=r"(?s)cannot run \w+ inside a function tn.compile traces.*run the collective "
            "on what the compiled call returns",
        ):
            step(x)


def test_a_rank_that_fails_prints_its_whole_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its items and hint are what the user acts on (only the first line was printed)."""
    w = World(FakeComm(1, 2))
    monkeypatch.setattr(World, "abort", lambda self, code=1: None)
    with pytest.raises(tn.ParamError), abort_on_error(w):
        raise tn.ParamError("cannot go on.\n  lr : 1e9\nhint: use a smaller lr.")
    err = capsys.readouterr().err
    assert err == (
        "typed-nn: rank 1 of 2 failed, ending every rank: ParamError: cannot go on.\n"
        "  lr : 1e9\nhint: use a smaller lr.\n"
    )
