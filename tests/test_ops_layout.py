"""permute / permute_inv / transpose, reshape, squeeze / unsqueeze and tile: values vs numpy, MetaNN semantics,
zero-copy reshape, and every build-time error."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from helpers import t32, t64

import typed_nn as tn
from typed_nn import ops


def arange(*shape: int) -> np.ndarray:
    return np.arange(float(np.prod(shape))).reshape(shape)


@pytest.mark.parametrize(
    ("shape", "order"),
    [
        ((2, 3), (1, 0)),
        ((2, 3, 4), (2, 0, 1)),
        ((2, 3, 4), (1, 2, 0)),
        ((2, 3, 4, 5), (3, 1, 0, 2)),
    ],
)
def test_permute_matches_numpy_transpose(shape: tuple[int, ...], order: tuple[int, ...]) -> None:
    data = arange(*shape)
    out = ops.permute(t64(data), order)
    assert out.shape == tuple(shape[i] for i in order)  # out.shape[i] == in.shape[order[i]]
    np.testing.assert_array_equal(out.numpy(), np.transpose(data, order))


def test_permute_accepts_negative_axes() -> None:
    data = arange(2, 3, 4)
    np.testing.assert_array_equal(
        ops.permute(t64(data), (-1, 0, 1)).numpy(), np.transpose(data, (2, 0, 1))
    )


def test_identity_permutation_returns_the_operand() -> None:
    x = t32(arange(2, 3, 4))
    assert ops.permute(x, (0, 1, 2)) is x
    assert ops.permute_inv(x, (0, 1, 2)) is x


def test_permute_inv_undoes_permute() -> None:
    data = arange(2, 3, 4, 5)
    order = (2, 3, 1, 0)
    inv = ops.permute_inv(t64(data), order)
    np.testing.assert_array_equal(inv.numpy(), np.transpose(data, np.argsort(order)))
    back = ops.permute_inv(ops.permute(t64(data), order), order)
    np.testing.assert_array_equal(back.numpy(), data)


def test_transpose_of_a_matrix() -> None:
    data = arange(3, 5)
    out = ops.transpose(t32(data))
    assert out.shape == (5, 3)
    np.testing.assert_array_equal(out.numpy(), data.T)


def test_permute_rejects_a_duplicate_axis() -> None:
    # MetaNN's ValidDims misses this (METANN.md §11.5); typed_nn must not.
    with pytest.raises(
        tn.ShapeError, match=r"cannot build permute: order \(0, 0, 1\) repeats axis 0"
    ):
        ops.permute(t32(arange(2, 3, 4)), (0, 0, 1))


def test_permute_rejects_a_wrong_length_order() -> None:
    ops.transpose(t32(arange(2, 3)))  # (1, 0) checked once as a matrix's order
    with pytest.raises(tn.ShapeError, match=r"is not a permutation of the 3 axes"):
        ops.permute(t32(arange(2, 3, 4)), (1, 0))


def test_permute_rejects_an_axis_out_of_range() -> None:
    with pytest.raises(tn.ShapeError, match=r"names an axis out of range"):
        ops.permute(t32(arange(2, 3)), (0, 2))


def test_permute_rejects_a_non_tuple_order() -> None:
    with pytest.raises(tn.ShapeError, match=r"order must be a tuple of ints"):
        ops.permute(t32(arange(2, 3)), "10")  # type: ignore[call-overload]


def test_transpose_rejects_rank_3() -> None:
    x = t32(arange(2, 3, 4))
    with pytest.raises(
        tn.RankError, match=r"cannot build transpose: it needs a matrix, got rank 3"
    ):
        ops.transpose(x)


def test_reshape_values_and_inferred_dim() -> None:
    data = arange(2, 3, 4)
    out = ops.reshape(t64(data), (4, -1))
    assert out.shape == (4, 6)
    np.testing.assert_array_equal(out.numpy(), data.reshape(4, 6))
    np.testing.assert_array_equal(ops.reshape(t64(data), (-1,)).numpy(), data.ravel())


def test_reshape_of_one_element_to_a_scalar() -> None:
    out = ops.reshape(t64(np.array([[7.0]])), ())
    assert out.shape == ()
    assert out.numpy() == 7.0


def test_a_reshaped_input_handed_out_is_a_copy() -> None:
    """A result never shares an input's memory (#32: a returned view changed with the input):
    reshape is a view inside an expression, a copy when it is the value handed out."""
    x = t32(arange(2, 6))
    result = tn.evaluate(ops.reshape(x, (3, 4)))
    assert not np.shares_memory(result.array, x.array)
    x.assign(x + 1.0)
    np.testing.assert_array_equal(result.numpy(), arange(2, 6).reshape(3, 4))
    node = x + 1.0
    np.testing.assert_array_equal(
        tn.evaluate(ops.reshape(node, (12,)) * 2.0).numpy(), (arange(2, 6).ravel() + 2.0) * 2.0
    )


def test_reshape_rejects_two_inferred_dims() -> None:
    with pytest.raises(tn.ShapeError, match=r"more than one -1 \(too many inference positions\)"):
        ops.reshape(t32(arange(2, 6)), (-1, -1))


def test_reshape_rejects_an_element_count_mismatch() -> None:
    with pytest.raises(
        tn.ShapeError, match=r"element count mismatch(.|\n)*12 elements(.|\n)*10 el"
    ):
        ops.reshape(t32(arange(2, 6)), (2, 5))
    with pytest.raises(tn.ShapeError, match=r"element count mismatch"):
        ops.reshape(t32(arange(2, 6)), (5, -1))


def test_reshape_rejects_a_scalar_target_for_many_elements() -> None:
    with pytest.raises(tn.ShapeError, match=r"cannot reshape 12 elements to a scalar"):
        ops.reshape(t32(arange(2, 6)), ())


def test_reshape_rejects_bad_targets() -> None:
    with pytest.raises(tn.ShapeError, match=r"\(2, -3\) is not a valid target shape"):
        ops.reshape(t32(arange(2, 3)), (2, -3))
    with pytest.raises(tn.ShapeError, match=r"-1 cannot be inferred next to a dim of size 0"):
        ops.reshape(t32(np.zeros((0, 3))), (0, -1))


@pytest.mark.parametrize(
    ("shape", "dim"), [((2, 1, 3), 1), ((2, 1, 3), -2), ((1,), 0), ((4, 1), -1)]
)
def test_squeeze_matches_numpy_and_unsqueeze_undoes_it(shape: tuple[int, ...], dim: int) -> None:
    data = arange(*shape)
    out = ops.squeeze(t64(data), dim)
    np.testing.assert_array_equal(out.numpy(), np.squeeze(data, dim))
    back = ops.unsqueeze(out, dim)
    assert back.shape == shape
    np.testing.assert_array_equal(back.numpy(), data)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_unsqueeze_matches_numpy_expand_dims(dim: int) -> None:
    data = arange(2, 3)
    np.testing.assert_array_equal(ops.unsqueeze(t64(data), dim).numpy(), np.expand_dims(data, dim))


def test_squeeze_and_unsqueeze_gradients_are_reshaped_back() -> None:
    data = arange(2, 1, 3)
    x = t64(data)
    weights = t64(np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]]))
    g = tn.grad(ops.reduce_sum(ops.squeeze(x, 1) * weights), x)
    np.testing.assert_array_equal(g.numpy(), weights.numpy().reshape(2, 1, 3))
    v = t64(np.array([1.0, 2.0]))
    gv = tn.grad(ops.reduce_sum(ops.unsqueeze(v, 0) * t64(np.array([[3.0, 5.0]]))), v)
    np.testing.assert_array_equal(gv.numpy(), [3.0, 5.0])


def test_squeeze_rejects_a_dim_that_is_not_size_1() -> None:
    with pytest.raises(tn.ShapeError, match="cannot build squeeze: dim 0 has size 2, not 1"):
        ops.squeeze(t64(arange(2, 1, 3)), 0)


def test_squeeze_and_unsqueeze_reject_a_dim_out_of_range() -> None:
    with pytest.raises(
        tn.RankError, match=r"cannot build squeeze: dim 3 is out of range(.|\n)*-3 \.\. 2"
    ):
        ops.squeeze(t64(arange(2, 1, 3)), 3)
    with pytest.raises(tn.RankError, match="valid dims : none: a scalar has no dim to drop"):
        ops.squeeze(t64(np.array(1.0)), 0)
    with pytest.raises(tn.RankError, match=r"cannot build unsqueeze: dim -4 is out of range"):
        ops.unsqueeze(t64(arange(2, 3)), -4)
    with pytest.raises(tn.RankError, match=r"cannot build unsqueeze: dim '0' is out of range"):
        ops.unsqueeze(t64(arange(2, 3)), "0")  # type: ignore[call-overload]


def test_unsqueeze_rejects_a_seventh_dim() -> None:
    x = t64(np.zeros((1, 1, 1, 1, 1, 1)))
    with pytest.raises(tn.RankError, match="cannot build unsqueeze: typed_nn data has at most 6"):
        ops.unsqueeze(x, 0)


def test_squeeze_and_unsqueeze_reject_non_data() -> None:
    for op in (ops.squeeze, ops.unsqueeze):
        with pytest.raises(tn.OperandError, match=f"cannot build {op.__name__}: x is not typed_nn"):
            op(np.zeros((1, 2)), 0)  # type: ignore[call-overload]


def test_tile_default_new_dims_are_leading() -> None:
    # MetaNN Tile: out[pos] = x[pos mod muteShape]; the new dims lead by default.
    data = arange(2, 3)
    out = ops.tile(t64(data), (4, 2, 6))
    assert out.shape == (4, 2, 6)
    expected = np.tile(data, (4, 1, 2))
    np.testing.assert_array_equal(out.numpy(), expected)
    for pos in np.ndindex(out.shape):
        assert out.numpy()[pos] == data[pos[1] % 2, pos[2] % 3]


def test_tile_with_explicit_new_dims() -> None:
    data = np.array([1.0, 2.0, 3.0])
    out = ops.tile(t64(data), (3, 2), new_dims=(1,)).numpy()
    np.testing.assert_array_equal(out, [[1, 1], [2, 2], [3, 3]])
    # mute shape (2, 1, 3): out[a, b, c] = x[a % 2, c % 3] (b is the new dim).
    m = arange(2, 3)
    x = t64(m)
    out3 = ops.tile(x, (4, 5, 6), new_dims=(1,)).numpy()
    assert out3.shape == (4, 5, 6)
    for a, b, c in np.ndindex(out3.shape):
        assert out3[a, b, c] == m[a % 2, c % 3]
    assert ops.tile(x, (4, 5, 6), new_dims=(-2,)) == ops.tile(x, (4, 5, 6), new_dims=(1,))


def test_tile_rank_3_to_rank_5() -> None:
    # MetaNN's test_tile_case3: a (2, 5, 3) tensor to (7, 4, 15, 4, 3), new dims 0 and 3.
    m = np.arange(30, dtype=np.int32).reshape(2, 5, 3)
    x = tn.tensor(m, tn.Int32, tn.CPU, tn.Dim3)
    op = ops.tile(x, (7, 4, 15, 4, 3), new_dims=(0, 3))
    five: tn.Tensor5[tn.Int32, tn.CPU] = op  # the static rank follows the target shape
    assert five.rank == 5
    assert op.shape == (7, 4, 15, 4, 3)
    res = op.numpy()
    for a1, a2, a3, a4, a5 in np.ndindex(res.shape):
        assert res[a1, a2, a3, a4, a5] == m[a2 % 2, a3 % 5, a5 % 3]
    # tile's gradient (tile_grad) sums the 7 * 2 * 3 * 4 repeats back at rank 5
    y = tn.tensor(m.astype(np.float64), tn.Float64, tn.CPU, tn.Dim3)
    g = tn.grad(ops.reduce_sum(ops.tile(y, (7, 4, 15, 4, 3), new_dims=(0, 3))), y)
    np.testing.assert_array_equal(g.numpy(), np.full((2, 5, 3), 7 * 2 * 3 * 4 * 1.0))


def test_tile_of_a_scalar_fills() -> None:
    out = ops.tile(tn.scalar(2.5, tn.Float32, tn.CPU), (2, 3)).numpy()
    np.testing.assert_array_equal(out, np.full((2, 3), 2.5, np.float32))


def test_tile_rejects_a_lower_rank_target() -> None:
    with pytest.raises(tn.RankError, match=r"cannot tile rank 2 to rank 1"):
        ops.tile(t32(arange(2, 3)), (6,))


def test_tile_rejects_the_wrong_number_of_new_dims() -> None:
    with pytest.raises(tn.ShapeError, match=r"2 new dim\(s\) given, 1 needed"):
        ops.tile(t32(arange(2, 3)), (4, 2, 3), new_dims=(0, 1))


def test_tile_rejects_duplicate_new_dims() -> None:
    with pytest.raises(tn.ShapeError, match=r"new_dims \(0, 0\) repeats axis 0"):
        ops.tile(t32(np.ones(3)), (2, 2, 3), new_dims=(0, 0))


def test_tile_rejects_a_dim_that_is_not_a_multiple() -> None:
    with pytest.raises(tn.ShapeError, match=r"target dim 2 \(4\) is not a multiple of 3"):
        ops.tile(t32(arange(2, 3)), (5, 2, 4))


def test_layout_ops_reject_non_data() -> None:
    cases: list[Callable[[], object]] = [
        lambda: ops.permute("ab", (0,)),  # type: ignore[call-overload]
        lambda: ops.permute_inv([1.0], (0,)),  # type: ignore[call-overload]
        lambda: ops.transpose(np.ones((2, 2))),  # type: ignore[arg-type]
        lambda: ops.reshape(3.0, (1,)),  # type: ignore[call-overload]
        lambda: ops.tile("ab", (2,)),  # type: ignore[call-overload]
    ]
    for build_op in cases:
        with pytest.raises(tn.OperandError, match=r"operand 1 is not typed_nn data"):
            build_op()
