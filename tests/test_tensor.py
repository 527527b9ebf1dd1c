"""The principal Tensor and its factories: rank/dtype checks, views, equality, repr."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from helpers import t32, untyped

import typed_nn as tn
import typed_nn.debug
from typed_nn import CPU, Dim0, Dim1, Dim2, Float32, Float64, Int32, Int64, ops


def test_tensor_from_nested_lists() -> None:
    t = tn.tensor([[1, 2, 3], [4, 5, 6]], Float32, CPU, Dim2)
    assert t.shape == (2, 3)
    assert t.rank == 2
    assert t.size == 6
    assert t.elem is Float32
    assert t.device is CPU
    assert t.numpy().dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), [[1, 2, 3], [4, 5, 6]])


def test_repr_is_the_compact_form() -> None:
    assert repr(tn.zeros((4, 3), Float32, CPU)) == "Tensor[Float32, CPU, Dim2](4, 3)"
    assert repr(tn.scalar(1.0, Float64, CPU)) == "Tensor[Float64, CPU, Dim0]()"
    assert repr(tn.zeros((5,), Int64, CPU)) == "Tensor[Int64, CPU, Dim1](5)"


@pytest.mark.parametrize("data", [[1.0, 2.0], [[[1.0]]], 3.0])
def test_tensor_rank_must_match_dim(data: object) -> None:
    with pytest.raises(tn.RankError, match=r"tensor: data of rank \d cannot be a Dim2 tensor\."):
        untyped.tensor(data, Float32, CPU, Dim2)


def test_rank_error_hint_names_the_right_dim() -> None:
    with pytest.raises(tn.RankError, match=r"pass dim=tn\.Dim3"):
        tn.tensor(np.zeros((1, 2, 3)), Float32, CPU, Dim2)


def test_same_kind_conversions_are_allowed() -> None:
    assert tn.tensor([1, 2], Float32, CPU, Dim1).numpy().dtype == np.float32
    assert tn.tensor(np.array([1.5], np.float64), Float32, CPU, Dim1).numpy()[0] == 1.5
    assert tn.tensor(np.array([7], np.int64), Int32, CPU, Dim1).numpy().dtype == np.int32


@pytest.mark.parametrize(
    ("data", "elem", "received"),
    [
        ([1.5], Int32, "float64"),
        (np.array([1.0], np.float32), Int64, "float32"),
        (["a"], Float32, "<U1"),
        ([1 + 2j], Float64, "complex128"),
    ],
)
def test_other_conversions_are_elem_type_errors(
    data: object, elem: type[tn.ElemTag], received: str
) -> None:
    with pytest.raises(
        tn.ElemTypeError, match=rf"tensor: cannot convert {received} data to {elem.__name__}\."
    ):
        untyped.tensor(data, elem, CPU, Dim1)


def test_elem_type_error_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"declared : Int32 \(int32\)"):
        tn.tensor([0.5], Int32, CPU, Dim1)


def test_narrowing_ints_that_do_not_fit_are_errors() -> None:
    with pytest.raises(tn.ElemTypeError, match=r"tensor: values do not fit in Int32\."):
        tn.scalar(2**40, Int32, CPU)
    with pytest.raises(tn.ElemTypeError, match=r"int64 values -2147483649 \.\. 0"):
        tn.tensor([-(2**31) - 1, 0], Int32, CPU, Dim1)
    assert tn.tensor([2**31 - 1, -(2**31)], Int32, CPU, Dim1).numpy().tolist() == [
        2**31 - 1,
        -(2**31),
    ]


def test_copy_false_shares_the_numpy_array() -> None:
    data = np.zeros(3, np.float32)
    shared = tn.tensor(data, Float32, CPU, Dim1, copy=False)
    copied = tn.tensor(data, Float32, CPU, Dim1)
    data[0] = 5.0
    assert shared.numpy()[0] == 5.0
    assert copied.numpy()[0] == 0.0


def test_copy_false_still_converts_a_different_dtype() -> None:
    data = np.zeros(3, np.float64)
    t = tn.tensor(data, Float32, CPU, Dim1, copy=False)
    data[0] = 5.0
    assert t.numpy()[0] == 0.0


@pytest.mark.parametrize(
    ("shape", "rank"),
    [
        ((), 0),
        ((3,), 1),
        ((2, 3), 2),
        ((2, 3, 4), 3),
        ((1, 2, 3, 4), 4),
        ((1, 2, 3, 4, 2), 5),
        ((1, 2, 1, 2, 1, 2), 6),
    ],
)
def test_zeros_and_ones_take_rank_from_shape(shape: tuple[int, ...], rank: int) -> None:
    z = untyped.zeros(shape, Float64, CPU)
    o = untyped.ones(shape, Int32, CPU)
    assert (z.rank, o.rank) == (rank, rank)
    assert z.shape == shape
    np.testing.assert_array_equal(z.numpy(), np.zeros(shape))
    np.testing.assert_array_equal(o.numpy(), np.ones(shape))
    assert o.numpy().dtype == np.int32


def test_zeros_rejects_bad_shapes() -> None:
    with pytest.raises(tn.ShapeError, match=r"zeros needs a shape tuple of non-negative ints"):
        tn.zeros((2, -1), Float32, CPU)
    with pytest.raises(tn.ShapeError, match=r"got \[2, 3\]"):
        untyped.zeros([2, 3], Float32, CPU)
    with pytest.raises(tn.ShapeError, match=r"ones needs a shape tuple"):
        tn.ones((True,), Float32, CPU)
    with pytest.raises(tn.RankError, match=r"got rank 7"):
        untyped.zeros((1, 2, 3, 4, 5, 6, 7), Float32, CPU)


def test_scalar_value() -> None:
    s = tn.scalar(2.5, Float32, CPU)
    assert s.rank == 0
    assert s.shape == ()
    assert s.value() == 2.5
    assert isinstance(tn.scalar(3, Int64, CPU).value(), int)


def test_value_needs_a_scalar() -> None:
    with pytest.raises(
        tn.RankError, match=r"value\(\) needs a scalar, got Tensor\[Float32, CPU, Dim1\]\(2\)"
    ):
        t32([1.0, 2.0]).value()


def test_tensor_constructor_checks_rank_dtype_and_device() -> None:
    with pytest.raises(tn.RankError, match=r"from an array of rank 1"):
        tn.Tensor(np.zeros(3, np.float32), Float32, CPU, Dim2)
    with pytest.raises(tn.ElemTypeError, match=r"from float64 data"):
        tn.Tensor(np.zeros(3), Float32, CPU, Dim1)
    with pytest.raises(tn.DeviceError, match=r"a CPU tensor needs a numpy array"):
        tn.Tensor(np.float32(1.0), Float32, CPU, Dim0)


def test_slices_share_memory() -> None:
    m = tn.tensor(np.arange(12).reshape(4, 3), Float32, CPU, Dim2)
    row = m[1]
    assert row.shape == (3,)
    assert repr(row) == "Tensor[Float32, CPU, Dim1](3)"
    row.array[0] = 100.0
    assert m.numpy()[1, 0] == 100.0
    m.array[3, 2] = -1.0
    assert m[-1].numpy()[2] == -1.0
    element = m[2][1]
    assert element.rank == 0
    assert element.value() == 7.0


def test_ranks_5_and_6_are_typed_too() -> None:
    video = tn.zeros((2, 3, 4, 5, 6), Float32, CPU)  # N, C, T, H, W
    t5: tn.Tensor5[Float32, CPU] = video
    t6: tn.Tensor6[Float32, CPU] = tn.ones((1, 2, 1, 2, 1, 2), Float32, CPU)
    assert (t5.rank, t6.rank) == (5, 6)
    assert (t5.dim, t6.dim) == (tn.Dim5, tn.Dim6)
    assert tn.is_tensor5(t5)
    assert tn.is_tensor6(t6)
    assert not tn.is_tensor5(t6)
    assert not tn.is_tensor6(t5)
    assert tn.data_category(t6 * 2.0) == 6
    frame: tn.Tensor4[Float32, CPU] = video[1]
    np.testing.assert_array_equal(frame.numpy(), np.zeros((3, 4, 5, 6)))
    # x.dim is x's rank tag: it rebuilds x's type
    copy: tn.Tensor[Float32, CPU, tn.Dim5] = tn.tensor(video.numpy(), Float32, CPU, video.dim)
    assert copy.shape == video.shape


def test_slices_of_rank_3_and_4() -> None:
    data = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    t4 = tn.tensor(data, Float32, CPU, tn.Dim4, copy=False)
    np.testing.assert_array_equal(t4[1].numpy(), data[1])
    np.testing.assert_array_equal(t4[1][2].numpy(), data[1, 2])
    np.testing.assert_array_equal(t4[1][2][3].numpy(), data[1, 2, 3])
    assert t4[1][2][3][4].value() == data[1, 2, 3, 4]


@pytest.mark.parametrize("index", [3, -4, 100])
def test_slice_out_of_bound(index: int) -> None:
    m = t32(np.zeros((3, 2)))
    with pytest.raises(
        tn.ShapeError,
        match=rf"(?s)^cannot take row {index} of a tensor with 3 rows \(ID out of bound\)\..*index : {index}.*valid : -3 \.\. 2",
    ):
        m[index]


def test_slice_rejects_non_int_indices() -> None:
    m = t32(np.zeros((3, 2)))
    with pytest.raises(
        tn.ShapeError, match=r"cannot index Tensor\[Float32, CPU, Dim2\]\(3, 2\) with bool"
    ):
        untyped.Tensor.__getitem__(m, True)
    with pytest.raises(tn.ShapeError, match=r"with float 1\.0"):
        untyped.Tensor.__getitem__(m, 1.0)
    assert untyped.Tensor.__getitem__(m, np.int64(1)).shape == (2,)


def test_scalar_cannot_be_indexed() -> None:
    with pytest.raises(tn.RankError, match=r"cannot index a scalar tensor"):
        untyped.Tensor.__getitem__(tn.scalar(1.0, Float32, CPU), 0)


def test_assign_writes_into_memory_and_views_see_it() -> None:
    m = t32(np.ones((2, 3)))
    row = m[0]
    out = m.assign(m * 2.0 + 1.0)
    assert out is m
    np.testing.assert_array_equal(m.numpy(), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(row.numpy(), [3.0, 3.0, 3.0])


def test_equality_is_memory_identity_for_rank_above_zero() -> None:
    a = t32([[1.0, 2.0], [3.0, 4.0]])
    same_values = t32([[1.0, 2.0], [3.0, 4.0]])
    assert a == a
    assert a != same_values
    assert a[0] == a[0]  # two views of the same memory
    assert a[0] != a[1]
    assert hash(a[0]) == hash(a[0])
    assert copy.copy(a) == a
    assert copy.deepcopy(a) != a
    np.testing.assert_array_equal(copy.deepcopy(a).numpy(), a.numpy())


def test_views_of_the_same_memory_with_other_layout_differ() -> None:
    data = np.arange(4, dtype=np.float32).reshape(2, 2)
    a = tn.tensor(data, Float32, CPU, Dim2, copy=False)
    transposed = tn.tensor(data.T, Float32, CPU, Dim2, copy=False)
    flat = tn.tensor(data.reshape(4), Float32, CPU, Dim1, copy=False)
    same = tn.tensor(data, Float32, CPU, Dim2, copy=False)
    assert a == same
    assert hash(a) == hash(same)
    assert a != transposed
    assert a != flat


def test_scalar_equality_is_by_value() -> None:
    assert tn.scalar(2.0, Float32, CPU) == tn.scalar(2, Float32, CPU)
    assert hash(tn.scalar(2.0, Float32, CPU)) == hash(tn.scalar(2, Float32, CPU))
    assert tn.scalar(2.0, Float32, CPU) != tn.scalar(3.0, Float32, CPU)
    # values of different types are never equal (METANN.md 1.4)
    assert tn.scalar(2.0, Float32, CPU) != tn.scalar(2.0, Float64, CPU)
    assert t32(np.arange(3))[2] == tn.scalar(2.0, Float32, CPU)


def test_scalar_equality_follows_assign() -> None:
    s = tn.scalar(1.0, Float32, CPU)
    assert s == tn.scalar(1.0, Float32, CPU)
    s.assign(tn.scalar(2.0, Float32, CPU) + tn.scalar(3.0, Float32, CPU))
    assert s.value() == 5.0
    assert s == tn.scalar(5.0, Float32, CPU)
    assert s != tn.scalar(1.0, Float32, CPU)
    assert hash(s) == hash(tn.scalar(5.0, Float32, CPU))


def test_tensor_is_never_equal_to_other_things() -> None:
    a = t32([1.0])
    assert a != np.array([1.0], np.float32)
    assert a != [1.0]
    assert a != a + 0


def test_numpy_array_protocol_copies_when_asked() -> None:
    t = t32([1.0, 2.0])
    copied = np.array(t)
    copied[0] = 99.0
    assert t.numpy()[0] == 1.0
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(t + 1.0), [2.0, 3.0])


def test_numpy_of_a_cpu_tensor_is_a_view() -> None:
    t = t32([1.0, 2.0])
    t.numpy()[1] = 7.0
    assert t.numpy()[1] == 7.0


def test_evaluating_a_tensor_returns_it() -> None:
    t = t32([1.0, 2.0])
    assert tn.evaluate(t) is t
    assert t.eval_register().data() is t


def test_float_narrowing_that_makes_an_inf_is_an_elem_range_error() -> None:
    data = np.array([[1.0, 1e300], [-1e300, 2.0]])
    with pytest.raises(
        tn.ElemRangeError,
        match=r"(?s)^tensor: 1e\+300 does not fit in Float32 \(it would become inf\)\.\n"
        r"  declared     : Float32 \(finite up to ±3\.4028235e\+38\)\n"
        r"  received     : float64 1e\+300 at index \[0, 1\]\n"
        r"  out of range : 2 of 4 values\n"
        r"hint: declare a wider element type \(tn\.Float64\)",
    ):
        tn.tensor(data, Float32, CPU, Dim2)
    with pytest.raises(
        ValueError, match=r"-1e\+300 does not fit in Float32 \(it would become -inf"
    ):
        tn.scalar(-1e300, Float32, CPU)


def test_float_narrowing_keeps_infinities_and_nans_of_the_data() -> None:
    t = tn.tensor([np.inf, -np.inf, np.nan, 1e300 * 1e-290], Float32, CPU, Dim1)
    assert t.numpy()[:2].tolist() == [np.inf, -np.inf]
    assert np.isnan(t.numpy()[2])


def test_narrowing_ints_that_do_not_fit_are_value_errors_too() -> None:
    with pytest.raises(ValueError, match=r"tensor: values do not fit in Int32\."):
        tn.scalar(2**40, Int32, CPU)


@pytest.mark.parametrize(
    ("data", "dim", "where"),
    [
        ([[1.0], [1.0, 2.0]], Dim2, r"data\[1\] has 2 items, but data\[0\] has 1 item"),
        ([[[1.0, 2.0]], [[1.0]]], tn.Dim3, r"data\[1\]\[0\] has 1 item, but data\[0\]\[0\] has 2"),
        ([[1.0, 2.0], 3.0], Dim2, r"data\[1\] is float 3\.0, but data\[0\] has 2 items"),
        ([np.ones(2), np.ones(3)], Dim2, r"data\[1\] has 3 items, but data\[0\] has 2 items"),
    ],
    ids=["rows", "deeper", "number beside a row", "arrays"],
)
def test_ragged_nested_lists_are_a_shape_error(
    data: object, dim: type[tn.DimTag], where: str
) -> None:
    with pytest.raises(
        tn.ShapeError,
        match=rf"(?s)^tensor: the nested lists are ragged \(they make no rectangular shape\)\.\n"
        rf"  received : {where}.*\nhint: give every row",
    ):
        untyped.tensor(data, Float32, CPU, dim)


@pytest.mark.parametrize(
    ("tags", "wrong", "expected"),
    [
        (
            (str, CPU, Dim1),
            r"elem must be an element tag, got str",
            r"elem       : str   <- expected",
        ),
        ((CPU, Float32, Dim1), r"elem must be an element tag, got CPU", r"elem       : CPU   <-"),
        ((Float32, "cpu", Dim1), r"device must be a device tag, got str 'cpu'", r"device     :"),
        ((Float32, CPU, 1), r"dim must be a rank tag, got int 1", r"dim        : int 1   <-"),
        ((tn.FloatTag, CPU, Dim1), r"elem must be an element tag, got FloatTag", r"Int64"),
    ],
    ids=["str elem", "swapped", "str device", "int dim", "abstract elem"],
)
def test_tensor_tags_must_be_tags_of_their_kind(
    tags: tuple[object, ...], wrong: str, expected: str
) -> None:
    with pytest.raises(
        tn.TagError,
        match=rf"(?s)^tensor: {wrong}\.\n  parameters : tensor\(\.\.\., elem, device, dim\)\n"
        rf".*{expected}.*hint: pass the tags in this order, e\.g\. "
        r"tn\.tensor\(data, tn\.Float32, tn\.CPU, tn\.Dim1\)",
    ):
        untyped.tensor([1.0], *tags)
    assert issubclass(tn.TagError, TypeError)


def test_zeros_and_ones_check_their_tags() -> None:
    with pytest.raises(tn.TagError, match=r"^zeros: elem must be an element tag, got CPU\."):
        untyped.zeros((2,), CPU, CPU)
    with pytest.raises(tn.TagError, match=r"^ones: device must be a device tag, got Float32\."):
        untyped.ones((2,), Float32, Float32)


def test_assign_into_an_evaluated_result_is_a_read_only_error() -> None:
    result = tn.evaluate(t32([1.0, 2.0]) * 2.0)  # a read-only view of a cached value
    with pytest.raises(
        tn.ReadOnlyError,
        match=r"(?s)^cannot assign: the tensor's memory is read-only\.\n"
        r"  tensor : Tensor\[Float32, CPU, Dim1\]\(2\)\n  why    : results of tn\.evaluate.*"
        r"hint: write into a tensor you allocated",
    ):
        result.assign(t32([0.0, 0.0]))
    assert result.numpy().tolist() == [2.0, 4.0]


def test_assign_into_a_shared_read_only_array_is_a_read_only_error() -> None:
    data = np.ones(2, np.float32)
    data.flags.writeable = False
    shared = tn.tensor(data, Float32, CPU, Dim1, copy=False)
    with pytest.raises(ValueError, match=r"cannot assign: the tensor's memory is read-only"):
        shared.assign(t32([0.0, 0.0]))


def test_indexing_with_other_than_an_int_says_how_to_take_a_column() -> None:
    x = tn.zeros((2, 3, 4), tn.Float32, tn.CPU)
    hint = (
        r"hint: use an int for a row; a range of rows or columns is ops\.narrow\(x, dim, start, "
        r"length\) \(x\[:, -1\] of a \(B, T, D\) tensor: ops\.reshape\(ops\.narrow\(x, 1, T - 1, "
        r"1\), \(B, D\)\)\)\."
    )
    for index in (slice(None), 1.0):
        with pytest.raises(tn.ShapeError, match=hint):
            x[index]  # type: ignore[index]
        with pytest.raises(tn.ShapeError, match=hint):
            (x + 1.0)[index]  # type: ignore[index]  # a lazy value's rows
    column = ops.reshape(ops.narrow(x, 1, 2, 1), (2, 4))
    assert column.shape == (2, 4)  # the hint's recipe gives numpy's x[:, -1]


def test_a_lazy_values_row_out_of_bound_says_which_and_how_many() -> None:
    x = tn.zeros((4, 2), tn.Float32, tn.CPU)
    with pytest.raises(
        tn.ShapeError, match=r"^cannot take row 4 of data with 4 rows \(ID out of bound\)\."
    ):
        (x + 1.0)[4]


def test_a_bfloat16_numpy_scalar_is_a_number_operand() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = tn.ones((2,), tn.BFloat16, tn.CPU)
    np.testing.assert_array_equal((x * ml_dtypes.bfloat16(0.5)).numpy().astype(np.float32), 0.5)


def test_the_mean_loss_of_an_empty_batch_says_so() -> None:
    logits = tn.zeros((0, 3), tn.Float32, tn.CPU)
    labels = tn.zeros((0,), tn.Int64, tn.CPU)
    with pytest.raises(
        tn.ShapeError, match=r"^cannot take the mean loss of an empty batch \(no positions"
    ):
        ops.cross_entropy(logits, labels)
    assert ops.cross_entropy(logits, labels, reduction="sum").numpy() == 0.0


def test_the_truth_value_of_data_is_an_error() -> None:
    """``if loss:`` took any data as true (inside tn.compile, once, at the trace)."""
    x = t32([0.0, 0.0])
    for value in (x, ops.reduce_sum(x), ops.reduce_sum(x) * 0.0):
        with pytest.raises(
            tn.OperandError,
            match=r"(?s)cannot take the truth value of .*hint: read a value first: x.item\(\) > 0",
        ):
            bool(value)
    assert ops.reduce_sum(x).item() == 0.0  # the way to read it
    f = tn.compile(lambda a: a if ops.reduce_sum(a) else -a)
    with pytest.raises(tn.OperandError, match="cannot take the truth value"):
        f(x)


def test_iterating_gives_the_rows_as_numpy_does() -> None:
    """Python's fallback (``x[i]`` until IndexError) met the row-out-of-bound error."""
    m = tn.tensor(np.arange(6.0).reshape(3, 2), Float64, CPU, Dim2)
    rows: list[tn.TensorLike[tn.Float64, tn.CPU, tn.Dim1]] = list(m)
    assert [r.numpy().tolist() for r in rows] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    summed = tn.compile(lambda a: ops.stack([r * 2.0 for r in a]))(m)
    np.testing.assert_array_equal(summed.numpy(), np.arange(6.0).reshape(3, 2) * 2.0)
    with pytest.raises(tn.ShapeError, match=r"cannot iterate over .*: it has no rows"):
        list(ops.reduce_sum(m))


def test_ops_and_modules_take_numpy_numbers_for_their_parameters() -> None:
    """As docs/modules.md says (np.int64 dims and counts, np.float32 rates were refused with
    messages calling valid values out of range); statically they are ints and floats. Debug
    mode checks them as the Python numbers they stand for (beartype refused them)."""
    from typed_nn import nn

    x = tn.tensor(np.arange(24.0).reshape(4, 6), Float64, CPU, Dim2)
    numbers: Any = (np.int64(0), np.int64(1), np.int64(2), np.int64(4), np.float32(0.25))
    i0, i1, i2, i4, quarter = numbers
    np.testing.assert_array_equal(ops.reduce_sum(x, i0).numpy(), x.numpy().sum(0))
    np.testing.assert_array_equal(ops.narrow(x, 0, i1, 2).numpy(), x.numpy()[1:3])
    assert ops.reshape(x, (i4, 6)).shape == (4, 6)
    assert ops.tile(x[0], (i2, 6)).shape == (2, 6)
    assert ops.permute(ops.reshape(x, (2, 2, 6)), (i1, i0, i2)).shape == (2, 2, 6)
    np.testing.assert_allclose(ops.softmax(x, i1).numpy().sum(1), [1.0] * 4)
    labels = tn.tensor(np.array([0, 1, 2, 3]), Int64, CPU, Dim1)
    assert np.isfinite(ops.cross_entropy(x, labels, label_smoothing=quarter).item())
    assert nn.Dropout(quarter).p == 0.25
    assert ops.concat([x, x], axis=i1).shape == (4, 12)
    assert ops.stack([x, x], i0).shape == (2, 4, 6)
    assert ops.squeeze(ops.unsqueeze(x, i0), i0).shape == (4, 6)
    assert ops.dot(x, ops.transpose(x), i1).shape == (4, 4)
    assert ops.reduce_mean(x, first=i1).shape == (6,)
    assert ops.argmax(x, i1).shape == (4,)
    yes: Any = np.bool_(True)
    assert ops.reduce_max(x, -1, keep_dim=yes).shape == (4, 1)
    assert np.isfinite(ops.huber_loss(x, x * 0.5, delta=quarter).item())
    padding: Any = np.int64(-100)
    assert np.isfinite(ops.cross_entropy(x, labels, ignore_index=padding).item())
    assert tn.zeros((i2, 3), Float64, CPU).shape == (2, 3)
    assert tn.scalar(quarter, Float64, CPU).item() == 0.25
    assert tn.tensor((1.0, 2.0), Float64, CPU, Dim1).shape == (2,)  # a tuple is array-like
    g = tn.Generator(0)
    assert ops.normal(g, (i2, 3)).shape == (2, 3)
    assert ops.uniform(g, (3,), low=quarter).shape == (3,)
    assert ops.permutation(g, i4).shape == (4,)


def test_a_copy_that_is_not_a_bool_is_refused() -> None:
    with pytest.raises(tn.ParamError, match=r"(?s)tensor: copy must be a bool.*received : 'no'"):
        tn.tensor([1.0], Float64, CPU, Dim1, copy="no")  # type: ignore[arg-type]
