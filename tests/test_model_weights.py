"""Weight files: round trips, interoperability with the safetensors package, atomic writes,
and damaged or mismatched files rejected with every parameter unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors.numpy as st
from helpers import tagged

import typed_nn as tn
from typed_nn.model import LoadBuffer, load_weights, save_weights

Params = dict[str, tn.Tensor[Any, Any, Any]]


def make_params(seed: int = 0) -> Params:
    rng = np.random.default_rng(seed)
    return {
        "fc1/weight": tagged(rng.normal(size=(4, 3)), tn.Float32),
        "fc1/bias": tagged(rng.normal(size=(3,)), tn.Float32),
        "scale": tagged(np.array(2.5), tn.Float64),
        "steps": tagged(np.arange(6, dtype=np.int64).reshape(1, 2, 3), tn.Int64),
        "ids": tagged(np.array([1, -2], dtype=np.int32), tn.Int32),
        "conv": tagged(rng.normal(size=(2, 1, 2, 2)), tn.Float64),
        "empty": tagged(np.zeros((0, 3)), tn.Float32),
    }


def snapshot(params: Params) -> dict[str, np.ndarray]:
    return {k: v.numpy().copy() for k, v in params.items()}


def assert_same(params: Params, values: dict[str, np.ndarray]) -> None:
    assert set(params) == set(values)
    for name, t in params.items():
        assert np.array_equal(t.numpy(), values[name]), name


def write_raw(path: Path, header: object, data: bytes, pad: bool = True) -> None:
    raw = json.dumps(header).encode()
    if pad:
        raw += b" " * (-len(raw) % 8)
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)


def test_round_trip_every_element_type_and_rank(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    saved = make_params(0)
    save_weights(path, saved)
    target = make_params(1)
    arrays = {k: v.array for k, v in target.items()}
    assert load_weights(path, target) == tuple(sorted(saved))
    assert_same(target, snapshot(saved))
    assert all(target[k].array is arrays[k] for k in target)  # copied into the same memory


def test_the_safetensors_package_reads_our_files(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    params = make_params()
    save_weights(path, params, metadata={"format": "np", "epoch": "3"})
    loaded = st.load_file(str(path))
    assert set(loaded) == set(params)
    for name, t in params.items():
        assert loaded[name].dtype == t.numpy().dtype
        assert np.array_equal(loaded[name], t.numpy())
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    assert header_len % 8 == 0
    header = json.loads(path.read_bytes()[8 : 8 + header_len])
    assert header["__metadata__"] == {"format": "np", "epoch": "3"}
    assert header["fc1/weight"]["shape"] == [4, 3]


def test_files_are_byte_identical_to_the_safetensors_package(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    params = make_params()
    save_weights(ours, params, metadata={"format": "np"})  # one key: theirs orders keys randomly
    st.save_file({k: v.numpy() for k, v in params.items()}, str(theirs), metadata={"format": "np"})
    assert ours.read_bytes() == theirs.read_bytes()


def test_files_written_by_the_safetensors_package_load(tmp_path: Path) -> None:
    path = tmp_path / "theirs.safetensors"
    rng = np.random.default_rng(3)
    arrays: dict[str, np.ndarray] = {
        "w": rng.normal(size=(5, 2)).astype(np.float32),
        "b": rng.normal(size=(2,)),
        "n": np.array([7, 8, 9], dtype=np.int32),
    }
    st.save_file(arrays, str(path), metadata={"framework": "numpy"})
    params: Params = {
        "w": tn.zeros((5, 2), tn.Float32, tn.CPU),
        "b": tn.zeros((2,), tn.Float64, tn.CPU),
        "n": tn.zeros((3,), tn.Int32, tn.CPU),
    }
    load_weights(path, params)
    for name, t in params.items():
        assert np.array_equal(t.numpy(), arrays[name])


def test_load_buffer_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "buffer.safetensors"
    buf = LoadBuffer(tn.Float32, tn.CPU)
    w = tagged(np.arange(6.0).reshape(2, 3), tn.Float32)
    buf.set("w", w)
    buf.set("b", tagged(np.ones(3), tn.Float32))
    save_weights(path, buf)
    fresh = LoadBuffer(tn.Float32, tn.CPU)
    assert load_weights(path, fresh) == ("b", "w")
    loaded = fresh.try_get("w", tn.Dim2)
    assert loaded is not None
    assert np.array_equal(loaded.numpy(), w.numpy())
    loaded.array[0, 0] = 42.0  # a new tensor owns its memory
    assert w.numpy()[0, 0] == 0.0
    # A buffer that already holds a name is loaded into in place (its tensor is shared).
    kept = tn.zeros((2, 3), tn.Float32, tn.CPU)
    partial = LoadBuffer(tn.Float32, tn.CPU)
    partial.set("w", kept)
    load_weights(path, partial)
    assert partial.try_get("w") is kept
    assert np.array_equal(kept.numpy(), w.numpy())


def test_lazy_values_are_evaluated_on_save(tmp_path: Path) -> None:
    path = tmp_path / "lazy.safetensors"
    x = tagged(np.array([1.0, 2.0]), tn.Float64)
    save_weights(path, {"y": x * 3.0})
    assert st.load_file(str(path))["y"].tolist() == [3.0, 6.0]


def test_save_is_atomic_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    save_weights(path, {"a": tagged(np.ones(2), tn.Float32)})
    before = path.read_bytes()
    with pytest.raises(tn.OperandError, match="cannot save 'b': it is not typed_nn data"):
        save_weights(path, {"a": tagged(np.zeros(2), tn.Float32), "b": np.ones(2)})  # type: ignore[dict-item]
    assert path.read_bytes() == before
    os.chmod(path, 0o640)
    save_weights(path, {"a": tagged(np.zeros(2), tn.Float32)})
    assert os.listdir(tmp_path) == ["w.safetensors"]
    assert path.stat().st_mode & 0o777 == 0o640  # overwriting keeps the file's permissions


def test_saving_to_a_symbolic_link_writes_the_file_it_names(tmp_path: Path) -> None:
    """As ``open(link, "wb")`` and ``torch.save`` do: ``latest -> run_5`` stays a link."""
    target, link = tmp_path / "run_5.safetensors", tmp_path / "latest.safetensors"
    save_weights(target, {"a": tagged(np.ones(2), tn.Float32)})
    link.symlink_to(target.name)
    save_weights(link, {"a": tagged(np.zeros(2), tn.Float32)})
    assert link.is_symlink()
    loaded = tagged(np.ones(2), tn.Float32)
    load_weights(target, {"a": loaded})
    np.testing.assert_array_equal(loaded.numpy(), [0.0, 0.0])


def test_save_errors(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    t = tagged(np.ones(2), tn.Float32)
    with pytest.raises(tn.ParamError, match="cannot save a parameter named '__metadata__'"):
        save_weights(path, {"__metadata__": t})
    with pytest.raises(tn.ParamError, match="cannot save a parameter named ''"):
        save_weights(path, {"": t})
    with pytest.raises(tn.ParamError, match="metadata must map strings to strings"):
        save_weights(path, {"a": t}, metadata={"epoch": 3})  # type: ignore[dict-item]
    assert not path.exists()


# --- loads that must fail and change nothing ---------------------------------------------


def check_rejected(path: Path, pattern: str, strict: bool = True) -> None:
    params = make_params(7)
    before = snapshot(params)
    with pytest.raises(tn.WeightFileError, match=pattern):
        load_weights(path, params, strict=strict)
    assert_same(params, before)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "model.safetensors"
    save_weights(path, make_params(0))
    return path


def test_truncated_files(saved: Path) -> None:
    data = saved.read_bytes()
    saved.write_bytes(data[:-5])
    check_rejected(saved, "the file is truncated: a tensor's bytes run past its end")
    saved.write_bytes(data[:6])
    check_rejected(saved, "the file has 6 bytes, fewer than the 8-byte header length")
    saved.write_bytes(data[:40])
    check_rejected(saved, r"the header length \d+ does not fit")


def test_corrupted_headers(saved: Path) -> None:
    data = saved.read_bytes()
    size = int.from_bytes(data[:8], "little")
    saved.write_bytes((10**12).to_bytes(8, "little") + data[8:])
    check_rejected(saved, r"the header length 1000000000000 does not fit")
    saved.write_bytes(data[:8] + b"{" + b"x" * (size - 1) + data[8 + size :])
    check_rejected(saved, "the header is not valid JSON")
    saved.write_bytes(data[:8] + b"\xff" * size + data[8 + size :])
    check_rejected(saved, "the header is not valid JSON")
    write_raw(saved, [1, 2], b"")
    check_rejected(saved, "the header is a JSON list, not an object")
    write_raw(saved, {"__metadata__": {"a": 1}}, b"")
    check_rejected(saved, "__metadata__ must map strings to strings")


def test_duplicate_names_in_the_header(saved: Path) -> None:
    entry = '{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
    raw = f'{{"a":{entry},"a":{entry}}}'.encode()
    raw += b" " * (-len(raw) % 8)
    saved.write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0" * 4)
    check_rejected(saved, "duplicate key 'a'")


@pytest.mark.parametrize(
    ("entry", "pattern"),
    [
        ({"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}, "dtype 'U8' is not supported"),
        (
            {"shape": [2], "data_offsets": [0, 8]},
            "a tensor entry lacks dtype, shape or data_offsets",
        ),
        ({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}, r"sizes in \[0, 2\*\*64\)"),
        ({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 8]}, r"sizes in \[0, 2\*\*64\)"),
        (
            {"dtype": "F32", "shape": [2**64, 0], "data_offsets": [0, 8]},
            r"the shape \[18446744073709551616, 0\] is not a list of sizes",
        ),
        ({"dtype": "F32", "shape": [2], "data_offsets": [-1, 7]}, "is not a range"),
        (
            {"dtype": "F32", "shape": [1] * 7, "data_offsets": [0, 4]},
            "has rank 7; typed_nn supports",
        ),
        ({"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}, "is not a range"),
        ({"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}, "does not match the shape"),
    ],
)
def test_invalid_entries(tmp_path: Path, entry: dict[str, object], pattern: str) -> None:
    path = tmp_path / "bad.safetensors"
    write_raw(path, {"fc1/bias": entry}, b"\0" * 16)
    check_rejected(path, pattern)


def test_overlapping_gapped_and_trailing_data(tmp_path: Path) -> None:
    path = tmp_path / "bad.safetensors"
    f32 = {"dtype": "F32", "shape": [2]}
    write_raw(
        path,
        {"a": {**f32, "data_offsets": [0, 8]}, "b": {**f32, "data_offsets": [4, 12]}},
        b"\0" * 12,
    )
    check_rejected(path, "the byte ranges of two tensors overlap")
    write_raw(
        path,
        {"a": {**f32, "data_offsets": [0, 8]}, "b": {**f32, "data_offsets": [12, 20]}},
        b"\0" * 20,
    )
    check_rejected(path, "the byte ranges of two tensors leave a gap")
    write_raw(path, {"a": {**f32, "data_offsets": [0, 8]}}, b"\0" * 10)
    check_rejected(path, "2 bytes follow the last tensor")


def test_mismatched_names_shapes_and_dtypes(saved: Path, tmp_path: Path) -> None:
    params = make_params(0)
    other = tmp_path / "other.safetensors"
    changed = dict(params)
    changed["fc1/bias"] = tagged(np.ones(4), tn.Float32)  # shape
    changed["scale"] = tagged(np.array(1.0), tn.Float32)  # dtype F32 where Float64 is declared
    save_weights(other, changed)
    check_rejected(
        other, r"'fc1/bias' +: file has F32\[4\], parameter is Tensor\[Float32, CPU, Dim1\]\(3\)"
    )
    check_rejected(other, r"'scale' +: file has F32\[\], parameter is Tensor\[Float64, CPU, Dim0\]")
    renamed = {("fc9/bias" if k == "fc1/bias" else k): v for k, v in params.items()}
    save_weights(other, renamed)
    check_rejected(other, r"missing in file +: 'fc1/bias'(.|\n)*not a parameter +: 'fc9/bias'")
    # strict=False loads the common names (with the right shapes) and ignores the rest.
    target = make_params(7)
    assert "fc1/bias" not in load_weights(other, target, strict=False)
    assert np.array_equal(target["fc1/weight"].numpy(), params["fc1/weight"].numpy())


def test_a_load_buffer_of_another_element_type(saved: Path) -> None:
    buf = LoadBuffer(tn.Float64, tn.CPU)
    with pytest.raises(
        tn.WeightFileError,
        match=r"'fc1/bias' +: file has F32\[3\], parameter is LoadBuffer\[Float64, CPU\]",
    ):
        load_weights(saved, buf)
    assert len(buf) == 0
    strict_buf = LoadBuffer(tn.Float32, tn.CPU)
    strict_buf.set("extra", tn.zeros((1,), tn.Float32, tn.CPU))
    with pytest.raises(tn.WeightFileError, match=r"missing in file +: 'extra'"):
        load_weights(saved, strict_buf)
    assert list(strict_buf) == ["extra"]


def test_load_usage_errors(saved: Path) -> None:
    with pytest.raises(tn.OperandError, match="load_weights needs a mapping name -> tensor"):
        load_weights(saved, [1, 2])  # type: ignore[arg-type]
    lazy = {"fc1/bias": tagged(np.ones(3), tn.Float32) * 2.0}
    with pytest.raises(
        tn.OperandError, match="cannot load into 'fc1/bias': only principal tensors"
    ):
        load_weights(saved, lazy, strict=False)  # type: ignore[arg-type]


# --- issue 17: read-only targets, hostile headers, unencodable names, bad paths ------------


def test_a_read_only_parameter_is_rejected_before_any_parameter_is_written(saved: Path) -> None:
    params = make_params(7)
    params["scale"].array.flags.writeable = False  # loaded after 'conv', 'empty', 'fc1/*', 'ids'
    before = snapshot(params)
    with pytest.raises(
        tn.WeightFileError,
        match=r"parameters are read-only\.\n(.|\n)*read-only +: 'scale'\n(.|\n)*nothing was changed",
    ):
        load_weights(saved, params)
    assert_same(params, before)  # 'conv', 'empty', 'fc1/*' untouched
    layer = saved.with_name("layer.safetensors")
    save_weights(layer, {k: v for k, v in make_params(0).items() if k.startswith("fc1/")})
    buf = LoadBuffer(tn.Float32, tn.CPU)
    frozen = tn.zeros((3,), tn.Float32, tn.CPU)
    frozen.array.flags.writeable = False
    buf.set("fc1/bias", frozen)
    with pytest.raises(tn.WeightFileError, match=r"read-only +: 'fc1/bias'"):
        load_weights(layer, buf)
    assert list(buf) == ["fc1/bias"]  # 'fc1/weight' not added either


@pytest.mark.parametrize(
    "header",
    [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000],
    ids=["lists", "objects"],
)
def test_a_json_bomb_header_is_a_weight_file_error(tmp_path: Path, header: bytes) -> None:
    path = tmp_path / "bomb.safetensors"
    header += b" " * (-len(header) % 8)
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(tn.WeightFileError, match="the header nests too deeply") as info:
        load_weights(path, make_params())
    assert len(str(info.value)) < 1000


def many_names_file(path: Path, count: int, dtype: str = "F32") -> None:
    empty = {"dtype": dtype, "shape": [0], "data_offsets": [0, 0]}
    write_raw(path, {f"layer{i:06d}/w": empty for i in range(count)}, b"")


def test_300000_names_give_a_few_names_and_a_count(tmp_path: Path) -> None:
    path = tmp_path / "many.safetensors"
    many_names_file(path, 300_000)
    with pytest.raises(
        tn.WeightFileError,
        match=r"not a parameter +: 'layer000000/w', 'layer000001/w', 'layer000002/w', "
        r"'layer000003/w', 'layer000004/w' and 299,995 more \(300,000 in all\)\n",
    ) as info:
        load_weights(path, {"a": tn.zeros((1,), tn.Float32, tn.CPU)})
    assert len(str(info.value)) < 1000
    many_names_file(path, 20_000)  # per-tensor mismatches are bounded the same way
    with pytest.raises(
        tn.WeightFileError,
        match=r"'layer000004/w' +: file has F32\[0\], parameter is LoadBuffer\[Float64, CPU\]\n"
        r" +\.\.\. +: 19,995 more tensors do not match\n",
    ) as info:
        load_weights(path, LoadBuffer(tn.Float64, tn.CPU))
    assert len(str(info.value)) < 1500


def test_huge_fields_of_a_damaged_file_are_quoted_briefly(tmp_path: Path) -> None:
    path = tmp_path / "huge.safetensors"
    name = "n" * 1_000_000
    write_raw(path, {name: {"dtype": "X" * 1_000_000, "shape": [0], "data_offsets": [0, 0]}}, b"")
    with pytest.raises(tn.WeightFileError, match=r"dtype 'XXX+\.\.\.X+' is not supported") as info:
        load_weights(path, make_params())
    assert len(str(info.value)) < 1000
    nested = {"dtype": "F32", "shape": [[[[[[1]]]]]] * 100_000, "data_offsets": [0, 0]}
    write_raw(path, {name: nested}, b"")
    with pytest.raises(
        tn.WeightFileError, match=r"the shape \[\[\[\[...\]\]\], .*\] is not a list of sizes"
    ) as info:
        load_weights(path, make_params())
    assert len(str(info.value)) < 1000
    entry = '{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    raw = f'{{"{name}":{entry},"{name}":{entry}}}'.encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw)
    with pytest.raises(tn.WeightFileError, match=r"duplicate key 'nnn+\.\.\.n+'") as info:
        load_weights(path, make_params())
    assert len(str(info.value)) < 1000


def test_a_name_utf8_cannot_encode_is_rejected_on_save(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    t = tagged(np.ones(2), tn.Float32)
    with pytest.raises(
        tn.WeightFileError,
        match=r"a parameter name cannot be encoded in UTF-8\.\n"
        r" +parameter name : 'fc\\udc801/w'\n +at +: character 2: '\\udc80', a lone surrogate",
    ):
        save_weights(path, {"fc\udc801/w": t})
    with pytest.raises(tn.WeightFileError, match=r"a metadata value cannot be encoded in UTF-8"):
        save_weights(path, {"w": t}, metadata={"source": "caf\udce9"})
    assert os.listdir(tmp_path) == []


def test_missing_paths_and_folders_are_weight_file_errors(tmp_path: Path) -> None:
    params = make_params()
    missing = tmp_path / "missing.safetensors"
    with pytest.raises(
        tn.WeightFileNotFoundError,
        match=r"cannot load weights from .*missing\.safetensors: no such file",
    ) as info:
        load_weights(missing, params)
    assert isinstance(info.value, FileNotFoundError)  # `except FileNotFoundError` still works
    assert isinstance(info.value.__cause__, FileNotFoundError)
    with pytest.raises(
        tn.WeightFileError, match=r"cannot load weights from .*: it is a folder"
    ) as err:
        load_weights(tmp_path, params)
    assert not isinstance(err.value, OSError)
    with pytest.raises(
        tn.WeightFileNotFoundError,
        match=r"cannot save weights to .*w\.safetensors: its folder does not exist\.(.|\n)*"
        r"hint: create the folder first",
    ):
        save_weights(tmp_path / "no" / "such" / "w.safetensors", params)
    with pytest.raises(tn.WeightFileError, match=r"cannot save weights to .*: it is a folder"):
        save_weights(tmp_path, params)
    assert os.listdir(tmp_path) == []  # no temporary left behind


def test_other_os_errors_are_weight_file_errors_with_the_os_error_as_cause(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("not a folder")
    with pytest.raises(
        tn.WeightFileError,
        match=r"cannot save weights to .*plain\.txt/w\.safetensors: not a directory\.\n"
        r"(.|\n)*hint: check the path's permissions and the free space; the previous file",
    ) as info:
        save_weights(plain / "w.safetensors", make_params())
    assert isinstance(info.value.__cause__, NotADirectoryError)
    with pytest.raises(tn.WeightFileError, match=r"cannot load weights from .*: not a directory"):
        load_weights(plain / "w.safetensors", make_params())
