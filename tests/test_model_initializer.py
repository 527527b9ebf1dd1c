"""ParamInitializer: fillers by key, preset parameters, the layer -> parameter name map."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import t32, t64

import typed_nn as tn
from typed_nn.model import ConstantFiller, GaussianFiller, ParamInitializer, XavierFiller


def test_fillers_by_any_hashable_key() -> None:
    xavier, zero, gauss = XavierFiller(seed=0), ConstantFiller(0), GaussianFiller(0, 1)
    init = ParamInitializer({1: xavier, ("bias", 2): zero, ConstantFiller: gauss})
    assert init.get_filler(1) is xavier
    assert init.get_filler(("bias", 2)) is zero
    assert init.get_filler(ConstantFiller) is gauss
    assert init.has_filler(1)
    assert not init.has_filler(2)
    init.set_filler(2, zero)
    assert init.get_filler(2) is zero


def test_missing_filler() -> None:
    init = ParamInitializer({"w": ConstantFiller()})
    with pytest.raises(tn.ParamError, match=r"No filler with key 'b'\.(.|\n)*keys +: 'w'"):
        init.get_filler("b")


def test_preset_parameter_is_a_copy() -> None:
    init = ParamInitializer()
    source = t32([[1.0, 2.0], [3.0, 4.0]])
    init.set_param("fc/w", source)
    assert init.is_param_exist("fc/w")
    assert not init.is_param_exist("fc/b")
    source.array[0, 0] = 100.0  # changing the source later does not change the stored copy
    dst = tn.zeros((2, 2), tn.Float32, tn.CPU)
    init.get_param("fc/w", dst)
    assert dst.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    dst.array[1, 1] = -1.0  # nor does changing what was copied out
    again = tn.zeros((2, 2), tn.Float32, tn.CPU)
    init.get_param("fc/w", again)
    assert again.numpy()[1, 1] == 4.0


def test_preset_from_lazy_data_and_numpy() -> None:
    init = ParamInitializer()
    init.set_param("lazy", t64([1.0, 2.0]) * 3.0)
    init.set_param("array", np.array([5, 6], dtype=np.int32))
    dst = tn.zeros((2,), tn.Float32, tn.CPU)  # float64 -> float32 is the same kind
    init.get_param("lazy", dst)
    assert dst.numpy().tolist() == [3.0, 6.0]
    init.get_param("array", dst)  # int -> float too
    assert dst.numpy().tolist() == [5.0, 6.0]


def test_get_param_errors() -> None:
    init = ParamInitializer()
    init.set_param("w", t64([[1.0, 2.0]]))
    with pytest.raises(
        tn.ParamError,
        match=r"cannot initialise 'b': the initializer holds no parameter of that name\.",
    ):
        init.get_param("b", tn.zeros((1, 2), tn.Float64, tn.CPU))
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cannot initialise 'w': the value set_param stored has shape \(1, 2\), the "
        r"layer's parameter .*built at",
    ):
        init.get_param("w", tn.zeros((2, 1), tn.Float64, tn.CPU))
    with pytest.raises(tn.ElemTypeError, match="cannot copy float64 parameter 'w' into Int32"):
        init.get_param("w", tn.zeros((1, 2), tn.Int32, tn.CPU))
    with pytest.raises(tn.OperandError, match=r"get_param\('w', dst\) writes into a principal"):
        init.get_param("w", tn.zeros((1, 2), tn.Float64, tn.CPU) + 1.0)
    with pytest.raises(tn.OperandError, match=r"set_param\('x', \.\.\.\) needs typed_nn data"):
        init.set_param("x", [1.0, 2.0])  # type: ignore[arg-type]


def test_name_map_replaces_the_longest_mapped_prefix() -> None:
    init = ParamInitializer()
    init.add_to_name_map("net/", "model/")
    init.add_to_name_map("net/fc1/", "encoder/")
    init.add_to_name_map("net/fc1/", "encoder/")  # the same mapping again is fine
    assert init.layer_name_to_param_name("net/fc1/weight") == "encoder/weight"
    assert init.layer_name_to_param_name("net/fc2/weight") == "model/fc2/weight"
    assert init.layer_name_to_param_name("other/weight") == "other/weight"


def test_name_map_scans_keys_in_reverse_order() -> None:
    # MetaNN scans its sorted map backwards: of "a" and "ab", "ab" is tried first.
    init = ParamInitializer()
    init.add_to_name_map("ab", "X")
    init.add_to_name_map("a", "Y")
    assert init.layer_name_to_param_name("abc") == "Xc"
    assert init.layer_name_to_param_name("acc") == "Ycc"


def test_name_map_conflict() -> None:
    init = ParamInitializer()
    init.add_to_name_map("net/", "a/")
    with pytest.raises(tn.ParamError, match=r"Parameter name conflict\.(.|\n)*'a/'(.|\n)*'b/'"):
        init.add_to_name_map("net/", "b/")
