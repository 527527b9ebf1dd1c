"""concat and stack: values vs numpy, negative axes, and every build-time error."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import t32, t64

import typed_nn as tn
from typed_nn import ops
from typed_nn.ops.join import CONCAT
from typed_nn.ops.node import build
from typed_nn.ops.rows import stack_items


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_matches_numpy(axis: int) -> None:
    rng = np.random.default_rng(0)
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for i, shape in enumerate(shapes):
        shape[axis] += i  # different sizes along the joined dim
    arrays = [rng.standard_normal(s) for s in shapes]
    out = ops.concat([t64(a) for a in arrays], axis=axis)
    expected = np.concatenate(arrays, axis=axis)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_concat_of_lazy_items() -> None:
    a, b = np.ones((2, 3)), np.arange(6.0).reshape(2, 3)
    out = ops.concat([t32(a) * 2.0, ops.exp(t32(b))], axis=1).numpy()
    np.testing.assert_allclose(out, np.concatenate([a * 2, np.exp(b)], axis=1), rtol=1e-6)


def test_concat_rejects_a_shape_mismatch() -> None:
    with pytest.raises(
        tn.ShapeError, match=r"item 2 does not fit item 1 \(axis 0\)(.|\n)*dim 1: 3 vs 4"
    ):
        ops.concat([t32(np.ones((2, 3))), t32(np.ones((2, 4)))])


def test_concat_rejects_a_rank_mismatch() -> None:
    with pytest.raises(tn.ShapeError, match=r"rank 2 vs 1"):
        ops.concat([t32(np.ones((2, 3))), t32(np.ones(3))])


def test_concat_rejects_mixed_elements_and_devices() -> None:
    with pytest.raises(tn.ElemTypeError, match=r"cannot build concat: operands have different"):
        ops.concat([t32(np.ones(3)), t64(np.ones(3))])
    cpu = t32(np.ones(3))
    on_gpu = ops.to_device(cpu, tn.GPU)  # building a move needs no GPU
    with pytest.raises(tn.DeviceError, match=r"cannot build concat: operands live on different"):
        ops.concat([cpu, on_gpu])


def test_concat_rejects_scalars_an_empty_list_and_a_bad_axis() -> None:
    s = tn.scalar(1.0, tn.Float32, tn.CPU)
    with pytest.raises(tn.RankError, match=r"a scalar has no dim to join along"):
        ops.concat([s, s])
    with pytest.raises(tn.ShapeError, match=r"cannot build concat: it needs a non-empty list"):
        ops.concat([])
    with pytest.raises(tn.RankError, match=r"cannot build concat: axis 2 is out of range"):
        ops.concat([t32(np.ones((2, 3)))], axis=2)


def test_concat_rejects_a_non_data_item() -> None:
    with pytest.raises(tn.OperandError, match=r"operand 2 is not typed_nn data"):
        ops.concat([t32(np.ones(3)), np.ones(3)])  # type: ignore[arg-type]


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_matches_numpy(axis: int) -> None:
    arrays = [np.arange(6.0).reshape(2, 3) + i for i in range(4)]
    out = ops.stack([t64(a) for a in arrays], axis=axis)
    expected = np.stack(arrays, axis=axis)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_stack_of_scalars_is_a_vector() -> None:
    items = [tn.scalar(float(i), tn.Float32, tn.CPU) for i in range(3)]
    np.testing.assert_array_equal(ops.stack(items).numpy(), [0.0, 1.0, 2.0])


def test_stack_rejects_different_shapes_and_bad_axes() -> None:
    with pytest.raises(tn.ShapeError, match=r"cannot build stack: item shapes differ"):
        ops.stack([t32(np.ones(3)), t32(np.ones(4))])
    with pytest.raises(tn.RankError, match=r"cannot build stack: axis 3 is out of range"):
        ops.stack([t32(np.ones((2, 3)))], axis=3)
    with pytest.raises(tn.ShapeError, match=r"cannot build stack: it needs a non-empty list"):
        ops.stack([])


def test_stack_items_stays_importable_for_scalable_tensors() -> None:
    st = tn.ScalableTensor([t32(np.ones(2)), t32(np.zeros(2))])
    np.testing.assert_array_equal(st.numpy(), [[1, 1], [0, 0]])
    assert stack_items([t32(np.ones(2))]).shape == (1, 2)


def test_the_concat_declaration_checks_the_axis_itself() -> None:
    m = t32(np.ones((2, 3)))
    with pytest.raises(
        tn.ShapeError, match=r"cannot build concat: axis 2 is not a dim of the items"
    ):
        build(CONCAT, (m, m), (2,))
