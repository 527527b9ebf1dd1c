"""``fit`` with ``input_shape``: a convolutional model trained on the digits as images."""

from __future__ import annotations

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.train import LayerModel, accuracy, fit, load_digits
from typed_nn.train.classifier import make_optimizer
from typed_nn.train.cnn import build_cnn


def test_fit_feeds_images_of_input_shape_and_learns() -> None:
    split = load_digits(seed=0)
    net, params = build_cnn(seed=0)
    weight = params.try_get("cnn/conv/weight")
    assert weight is not None
    assert weight.shape == (8, 1, 3, 3)
    assert 0.2 < float(weight.numpy().std()) < 0.8  # MSRA with fan_in 9: std 0.47
    before = {name: params.try_get(name).numpy().copy() for name in params}  # type: ignore[union-attr]
    history = fit(
        LayerModel(net, input_shape=(1, 8, 8)), split.train, make_optimizer("adam", 0.03), epochs=2
    )
    assert history.train_loss[1] < history.train_loss[0]
    for name, old in before.items():
        assert not np.array_equal(params.try_get(name).numpy(), old), name  # type: ignore[union-attr]
    assert accuracy(net, split.test, input_shape=(1, 8, 8)) > 0.85


@pytest.mark.parametrize("shape", [(1, 8, 7), (0, 64), (), [1, 8, 8]])
def test_fit_rejects_an_input_shape_that_is_not_the_features(shape: object) -> None:
    split = load_digits(seed=0)
    net, _ = build_cnn(seed=0)
    with pytest.raises(
        tn.TrainingError, match="input_shape is not a shape of one sample's features"
    ):
        fit(LayerModel(net, input_shape=shape), split.train, make_optimizer("sgd"), epochs=1)  # type: ignore[arg-type]
    with pytest.raises(tn.TrainingError, match="sizes whose product is 64"):
        accuracy(net, split.test, input_shape=shape)  # type: ignore[arg-type]
