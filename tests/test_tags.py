"""Tags: element types know their dtype, ranks their rank; tags are never instantiated."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.tags import (
    DEVICE_TAGS,
    DIM_TAGS,
    ELEM_TAGS,
    MAX_RANK,
    dim_of_rank,
    elem_of_dtype,
    tag_name,
)


@pytest.mark.parametrize(
    ("tag", "dtype"),
    [
        (tn.Float32, np.float32),
        (tn.Float64, np.float64),
        (tn.Int32, np.int32),
        (tn.Int64, np.int64),
    ],
)
def test_elem_tags_know_their_dtype(tag: type[tn.ElemTag], dtype: type[np.generic]) -> None:
    assert tag.dtype == np.dtype(dtype)
    assert elem_of_dtype(np.dtype(dtype)) is tag


def test_float_and_int_families() -> None:
    assert issubclass(tn.Float32, tn.FloatTag)
    assert issubclass(tn.Float64, tn.FloatTag)
    assert issubclass(tn.Int32, tn.IntTag)
    assert issubclass(tn.Int64, tn.IntTag)
    assert not issubclass(tn.Int32, tn.FloatTag)
    assert issubclass(tn.Float16, tn.FloatTag)
    assert issubclass(tn.BFloat16, tn.FloatTag)
    assert set(ELEM_TAGS) == {tn.Float32, tn.Float64, tn.Int32, tn.Int64, tn.Float16, tn.BFloat16}


def test_elem_of_unknown_dtype_is_none() -> None:
    assert elem_of_dtype(np.dtype(np.float16)) is tn.Float16
    assert elem_of_dtype(np.dtype(np.int8)) is None
    assert elem_of_dtype(np.dtype(np.bool_)) is None


def test_devices() -> None:
    assert tn.CPU.name == "CPU"
    assert tn.GPU.name == "GPU"
    assert DEVICE_TAGS == (tn.CPU, tn.GPU)


@pytest.mark.parametrize("rank", range(MAX_RANK + 1))
def test_dim_tags_know_their_rank(rank: int) -> None:
    tag = dim_of_rank(rank)
    assert tag.rank == rank
    assert tag is DIM_TAGS[rank]
    assert tag_name(tag) == f"Dim{rank}"


def test_rank_aliases_are_the_dim_tags() -> None:
    assert [tn.Dim0, tn.Dim1, tn.Dim2, tn.Dim3, tn.Dim4, tn.Dim5, tn.Dim6] == list(DIM_TAGS)
    assert MAX_RANK == 6  # MetaNN has no limit; rank 5 is common (video, grouped attention)


def test_generators_follow_the_rank_tags() -> None:
    # Both overload generators read MAX_RANK from tags.py (their --check runs in
    # tests/test_ops_reduce.py): the highest rank tag has its overloads.
    source = inspect.getsource(importlib.import_module("typed_nn.data.tensor"))
    assert f"Dim{MAX_RANK}]" in source
    assert f"Dim{MAX_RANK + 1}" not in source


@pytest.mark.parametrize("rank", [-1, 7, 17])
def test_dim_of_rank_out_of_range(rank: int) -> None:
    with pytest.raises(tn.RankError, match=rf"typed_nn supports ranks 0 to 6, got rank {rank}\."):
        dim_of_rank(rank)


def test_rank_error_is_a_value_error_with_a_hint() -> None:
    with pytest.raises(ValueError, match=r"hint: reshape the data to at most 6 dims\."):
        dim_of_rank(7)


@pytest.mark.parametrize(
    "tag", [tn.Float32, tn.Int64, tn.CPU, tn.GPU, tn.Dim0, tn.Dim6, tn.ElemTag, tn.DimTag]
)
def test_tags_are_not_instantiable(tag: type[object]) -> None:
    with pytest.raises(TypeError, match=rf"{tag.__name__} is a type tag; use the class itself"):
        tag()


def test_tag_names() -> None:
    assert tag_name(tn.Float32) == "Float32"
    assert tag_name(tn.CPU) == "CPU"
