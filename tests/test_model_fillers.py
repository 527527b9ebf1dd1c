"""Fillers: statistics on large draws (MetaNN's filler tests, with asserts), seeding, fan
rules, and every error message."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import t64

import typed_nn as tn
from typed_nn.model import (
    ConstantFiller,
    Filler,
    GaussianFiller,
    MSRAFiller,
    UniformFiller,
    VarScaleFiller,
    XavierFiller,
    var_scale_fans,
)
from typed_nn.policies import (
    PNormVarScale,
    PolicyConflictError,
    PUniformVarScale,
    PUpdate,
    PVarScaleFanIn,
    PVarScaleFanOut,
    VarScaleDistribution,
    VarScaleFillerPolicy,
    VarScaleMode,
)

BIG = (1000, 3000)  # MetaNN's test matrix


def big(elem: type[tn.ElemTag] = tn.Float32) -> tn.Tensor[tn.ElemTag, tn.CPU, tn.Dim2]:
    return tn.zeros(BIG, elem, tn.CPU)


def assert_stats(values: np.ndarray, mean: float, std: float) -> None:
    n = values.size
    # 6 standard errors of the sample mean and of the sample std.
    assert abs(values.mean() - mean) < 6 * std / math.sqrt(n) + 1e-6
    assert abs(values.std() - std) < 6 * std / math.sqrt(2 * n)


def test_constant_filler_fills_every_rank() -> None:
    for shape in [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)]:
        t = t64(np.ones(shape))
        ConstantFiller().fill(t)
        assert np.all(t.numpy() == 0)
        ConstantFiller(3).fill(t)
        assert np.all(t.numpy() == 3)


def test_constant_filler_integer_data() -> None:
    t = tn.zeros((4,), tn.Int32, tn.CPU)
    ConstantFiller(7).fill(t)
    assert t.numpy().tolist() == [7, 7, 7, 7]
    with pytest.raises(tn.ParamError, match=r"ConstantFiller\(0.5\) cannot fill integer data"):
        ConstantFiller(0.5).fill(t)


def test_fill_writes_into_the_tensors_memory() -> None:
    t = tn.zeros((2, 3), tn.Float32, tn.CPU)
    array = t.array
    GaussianFiller(0.0, 1.0, seed=1).fill(t)
    assert t.array is array
    assert t.numpy().dtype == np.float32
    assert np.all(array != 0)


def test_gaussian_statistics() -> None:
    t = big()
    GaussianFiller(1.5, 3.3, seed=0).fill(t)
    assert_stats(t.numpy().astype(np.float64), 1.5, 3.3)


def test_uniform_statistics() -> None:
    t = big(tn.Float64)
    UniformFiller(-1, 1, seed=0).fill(t)
    values = t.numpy()
    assert values.min() >= -1
    assert values.max() < 1
    assert_stats(values, 0.0, 2 / math.sqrt(12))


def test_uniform_integers_include_both_ends() -> None:
    t = tn.zeros((10000,), tn.Int64, tn.CPU)
    UniformFiller(-2, 3, seed=0).fill(t)
    assert set(t.numpy().tolist()) == {-2, -1, 0, 1, 2, 3}
    UniformFiller(0.5, 2.5, seed=0).fill(t)  # real bounds: the integers inside
    assert set(t.numpy().tolist()) == {1, 2}
    with pytest.raises(tn.ParamError, match=r"UniformFiller\(0.2, 0.8\) contains no integer"):
        UniformFiller(0.2, 0.8).fill(t)


def test_same_seed_same_values_and_streams_continue() -> None:
    a, b = tn.zeros((50,), tn.Float32, tn.CPU), tn.zeros((50,), tn.Float32, tn.CPU)
    for make in (
        lambda s: GaussianFiller(0, 1, seed=s),
        lambda s: UniformFiller(0, 1, seed=s),
        lambda s: XavierFiller(seed=s),
        lambda s: MSRAFiller(seed=s),
    ):
        make(7).fill(a)
        make(7).fill(b)
        assert np.array_equal(a.numpy(), b.numpy())
        make(8).fill(b)
        assert not np.array_equal(a.numpy(), b.numpy())
    filler = GaussianFiller(0, 1, seed=3)
    filler.fill(a)
    filler.fill(b)
    assert not np.array_equal(a.numpy(), b.numpy())  # the second fill continues the stream


def test_a_generator_is_shared() -> None:
    rng = np.random.default_rng(5)
    a = tn.zeros((20,), tn.Float64, tn.CPU)
    GaussianFiller(0, 1, seed=rng).fill(a)
    assert np.array_equal(a.numpy(), np.random.default_rng(5).normal(0, 1, 20))


def test_var_scale_fans() -> None:
    assert var_scale_fans(()) == (1, 1)
    assert var_scale_fans((7,)) == (1, 1)
    assert var_scale_fans((64, 128)) == (64, 128)
    assert var_scale_fans((2, 3, 4)) == (12, 8)  # a conv1d weight (out, in, kw)
    assert var_scale_fans((5, 2, 3, 4)) == (24, 60)  # OIHW: fan_in C*KH*KW, fan_out O*KH*KW
    assert var_scale_fans((8, 1, 3, 3)) == (9, 72)  # the conv weight (not 24)


@pytest.mark.parametrize(
    ("mode", "fan"),
    [(VarScaleMode.FAN_IN, 1000), (VarScaleMode.FAN_OUT, 3000), (VarScaleMode.FAN_AVG, 2000)],
)
@pytest.mark.parametrize("distribute", list(VarScaleDistribution))
def test_var_scale_statistics(
    mode: VarScaleMode, fan: int, distribute: VarScaleDistribution
) -> None:
    t = big()
    VarScaleFiller(3.0, VarScaleFillerPolicy(distribute, mode), seed=0).fill(t)
    values = t.numpy().astype(np.float64)
    std = math.sqrt(3.0 / fan)
    assert_stats(values, 0.0, std)
    limit = math.sqrt(3) * std
    if distribute is VarScaleDistribution.UNIFORM:
        assert np.abs(values).max() <= limit * (1 + 1e-6)
    else:
        assert np.abs(values).max() > limit  # normal draws have tails


def test_var_scale_policy_objects_and_defaults() -> None:
    t = big()
    VarScaleFiller(seed=0).fill(t)  # defaults: uniform, fan average, factor 1
    assert np.abs(t.numpy()).max() <= math.sqrt(3 / 2000) * (1 + 1e-6)
    VarScaleFiller(2.0, PNormVarScale, PVarScaleFanOut, seed=0).fill(t)
    assert_stats(t.numpy().astype(np.float64), 0.0, math.sqrt(2 / 3000))


def test_var_scale_rank3_reads_a_conv_layout() -> None:
    t = tn.zeros((40, 50, 60), tn.Float64, tn.CPU)
    VarScaleFiller(1.0, PNormVarScale, PVarScaleFanIn, seed=0).fill(t)  # fan_in = 50*60
    assert_stats(t.numpy(), 0.0, math.sqrt(1 / 3000))


def test_msra_on_a_conv_weight_uses_c_kh_kw() -> None:
    """An OIHW conv weight (64, 3, 5, 5): fan_in 3*5*5 = 75 (MetaNN's count / last gave 960)."""
    t = tn.zeros((64, 3, 5, 5), tn.Float64, tn.CPU)
    MSRAFiller(seed=0).fill(t)
    assert_stats(t.numpy(), 0.0, math.sqrt(2 / 75))


def test_xavier_and_msra() -> None:
    t = big()
    XavierFiller(seed=0).fill(t)
    values = t.numpy().astype(np.float64)
    assert_stats(values, 0.0, math.sqrt(1 / 2000))
    assert np.abs(values).max() <= math.sqrt(3 / 2000) * (1 + 1e-6)
    XavierFiller(PNormVarScale, seed=0).fill(t)
    assert np.abs(t.numpy()).max() > math.sqrt(3 / 2000)
    MSRAFiller(seed=0).fill(t)
    assert_stats(t.numpy().astype(np.float64), 0.0, math.sqrt(2 / 1000))


def test_var_scale_fills_an_empty_tensor() -> None:
    t = tn.zeros((0, 3), tn.Float32, tn.CPU)
    XavierFiller(seed=0).fill(t)
    assert t.shape == (0, 3)


def test_filler_argument_errors() -> None:
    with pytest.raises(tn.ParamError, match=r"Invalid std\."):
        GaussianFiller(0.0, 0.0)
    with pytest.raises(tn.ParamError, match=r"Invalid std\."):
        GaussianFiller(0.0, -1.0)
    with pytest.raises(tn.ParamError, match="GaussianFiller: mean must be a finite number"):
        GaussianFiller(float("nan"), 1.0)
    with pytest.raises(tn.ParamError, match="min is larger or equal to max"):
        UniformFiller(1.0, 1.0)
    with pytest.raises(tn.ParamError, match="min is larger or equal to max"):
        UniformFiller(2.0, -1.0)
    with pytest.raises(tn.ParamError, match="VarScaleFiller: factor must be > 0"):
        VarScaleFiller(0.0)


def test_var_scale_policy_errors() -> None:
    with pytest.raises(tn.ParamError, match="VarScaleFiller takes VarScaleFillerPolicy objects"):
        VarScaleFiller(1.0, PUpdate)  # type: ignore[arg-type]
    with pytest.raises(tn.ParamError, match="VarScaleFiller takes VarScaleFillerPolicy objects"):
        VarScaleFiller(1.0, VarScaleFillerPolicy(), PNormVarScale)  # type: ignore[policy-conflict]
    with pytest.raises(
        PolicyConflictError, match=r"two policies set VarScaleFillerPolicy\.distribute"
    ):
        VarScaleFiller(1.0, PNormVarScale, PUniformVarScale)  # type: ignore[policy-conflict]
    with pytest.raises(tn.ParamError, match="XavierFiller fixes the fan mode"):
        XavierFiller(PVarScaleFanIn)  # type: ignore[arg-type, policy-conflict]


def test_fill_errors() -> None:
    ints = tn.zeros((3,), tn.Int32, tn.CPU)
    for filler in (GaussianFiller(0, 1), XavierFiller(), MSRAFiller()):
        with pytest.raises(tn.ElemTypeError, match="draws real numbers and cannot fill integer"):
            filler.fill(ints)
    lazy = tn.zeros((3,), tn.Float32, tn.CPU) + 1.0
    with pytest.raises(tn.OperandError, match="GaussianFiller can only fill a principal tensor"):
        GaussianFiller(0, 1).fill(lazy)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "filler",
    [ConstantFiller(1.0), GaussianFiller(seed=0), UniformFiller(0.0, 1.0, seed=0), XavierFiller()],
    ids=lambda f: type(f).__name__,
)
def test_filling_a_read_only_tensor_is_a_read_only_error(filler: Filler) -> None:
    result = tn.evaluate(tn.zeros((2, 3), tn.Float32, tn.CPU) + 1.0)  # evaluated: read-only
    name = type(filler).__name__
    with pytest.raises(
        tn.ReadOnlyError,
        match=rf"(?s)^cannot fill with {name}: the tensor's memory is read-only\.\n"
        r"  tensor : Tensor\[Float32, CPU, Dim2\]\(2, 3\)",
    ):
        filler.fill(result)
    assert result.numpy().tolist() == [[1.0] * 3] * 2
