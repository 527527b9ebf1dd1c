"""Shape helpers (Caffe Blob / MetaNN Shape): canonical axes, counts, row-major offsets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.shape import canonical_axis, count, format_shape, index_of, offset, shift_index

SHAPE = (7, 2, 3)  # MetaNN's test_shape.cpp shape


def test_format_shape() -> None:
    assert format_shape((4, 3)) == "(4, 3)"
    assert format_shape((5,)) == "(5)"
    assert format_shape(()) == "()"


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_canonical_axis_matches_python_indexing(rank: int) -> None:
    for axis in range(-rank, rank):
        assert canonical_axis(axis, rank) == list(range(rank))[axis]


@pytest.mark.parametrize(("axis", "rank"), [(3, 3), (-4, 3), (0, 0), (-1, 0), (100, 4)])
def test_canonical_axis_out_of_range(axis: int, rank: int) -> None:
    with pytest.raises(tn.ShapeError, match=rf"axis {axis} is out of range for rank {rank}\."):
        canonical_axis(axis, rank)


def test_canonical_axis_message_names_the_valid_axes() -> None:
    with pytest.raises(tn.ShapeError, match=r"valid axes : -3 \.\. 2"):
        canonical_axis(3, 3)
    with pytest.raises(tn.ShapeError, match=r"valid axes : none \(rank 0\)"):
        canonical_axis(0, 0)


def test_count_whole_shape() -> None:
    assert count(SHAPE) == 42
    assert count(()) == 1
    assert count((3, 0, 2)) == 0


@pytest.mark.parametrize("shape", [(7, 2, 3), (4,), (2, 3, 4, 5), ()])
def test_count_ranges_match_numpy(shape: tuple[int, ...]) -> None:
    rank = len(shape)
    for start, end in itertools.combinations_with_replacement(range(rank + 1), 2):
        assert count(shape, start, end) == int(np.prod(shape[start:end], dtype=np.int64))
        assert count(shape, start) == int(np.prod(shape[start:], dtype=np.int64))


def test_count_negative_bounds_count_from_the_end() -> None:
    assert count(SHAPE, -2) == 6
    assert count(SHAPE, 0, -1) == 14
    assert count(SHAPE, -3, -1) == 14


@pytest.mark.parametrize(("start", "end"), [(2, 1), (0, 4), (-4, None), (4, None)])
def test_count_bad_range(start: int, end: int | None) -> None:
    with pytest.raises(tn.ShapeError, match=r"does not name a range of dims of shape \(7, 2, 3\)"):
        count(SHAPE, start, end)


def test_offset_is_row_major_like_numpy() -> None:
    reference = np.arange(42).reshape(SHAPE)
    for index in itertools.product(*(range(d) for d in SHAPE)):
        assert offset(SHAPE, index) == reference[index]
        assert index_of(SHAPE, offset(SHAPE, index)) == index


def test_offset_metann_cases() -> None:
    assert offset(SHAPE, (0, 0, 0)) == 0
    assert offset(SHAPE, (0, 0, 2)) == 2
    assert offset(SHAPE, (0, 1, 0)) == 3
    assert offset(SHAPE, (1, 0, 0)) == 6
    assert offset(SHAPE, (6, 1, 2)) == 41
    assert offset((), ()) == 0


@pytest.mark.parametrize("index", [(7, 0, 0), (0, 2, 0), (0, 0, 3), (0, -1, 0)])
def test_offset_invalid_dimension_index(index: tuple[int, ...]) -> None:
    with pytest.raises(tn.ShapeError, match=r"Invalid dimension index\."):
        offset(SHAPE, index)


def test_offset_message_names_the_dim() -> None:
    with pytest.raises(tn.ShapeError, match=r"(?s)dim   : 1.*index : 2.*size  : 2"):
        offset(SHAPE, (0, 2, 0))


def test_offset_wrong_number_of_indices() -> None:
    with pytest.raises(tn.ShapeError, match=r"an index of 2 dims cannot address shape \(7, 2, 3\)"):
        offset(SHAPE, (0, 0))


def test_index_of_metann_cases() -> None:
    assert index_of(SHAPE, 0) == (0, 0, 0)
    assert index_of(SHAPE, 5) == (0, 1, 2)
    assert index_of(SHAPE, 41) == (6, 1, 2)
    assert index_of((), 0) == ()


@pytest.mark.parametrize("flat", [42, -1, 1000])
def test_index_of_offset_out_of_bound(flat: int) -> None:
    with pytest.raises(tn.ShapeError, match=r"Offset out of bound!"):
        index_of(SHAPE, flat)


def test_index_of_zero_sized_shape_has_no_offsets() -> None:
    with pytest.raises(tn.ShapeError, match=r"Offset out of bound!"):
        index_of((3, 0), 0)


def test_shift_index_every_carry_of_metann_shape() -> None:
    # MetaNN's test_shape.cpp: ShiftIndex for every carry from (0, 0, 0) in Shape(7, 2, 3).
    for carry in range(42):
        assert shift_index(SHAPE, (0, 0, 0), carry) == index_of(SHAPE, carry)
    assert shift_index(SHAPE, (0, 1, 2)) == (1, 0, 0)
    assert shift_index(SHAPE, (3, 1, 1), 4) == (4, 0, 2)
    assert shift_index(SHAPE, (2, 0, 1), 0) == (2, 0, 1)


def test_shift_index_overflow() -> None:
    with pytest.raises(tn.ShapeError, match=r"(?s)Overflow.*carry : 1"):
        shift_index(SHAPE, (6, 1, 2))
    with pytest.raises(tn.ShapeError, match=r"Overflow"):
        shift_index(SHAPE, (0, 0, 0), 42)


def test_shift_index_negative_carry_is_not_implemented() -> None:
    with pytest.raises(tn.ShapeError, match=r"Not implemented yet"):
        shift_index(SHAPE, (1, 0, 0), -1)


def test_shift_index_checks_the_start_index() -> None:
    with pytest.raises(tn.ShapeError, match=r"Invalid dimension index\."):
        shift_index(SHAPE, (7, 0, 0))
