"""``layer_params``: a MetaNN layer model's parameters as a module tree, so that
``typed_nn.optim``, ``tn.grad``, state dicts and checkpoints serve layer models with the
implementation modules use (one optimizer, one state dict, one checkpoint path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.data.module import gradient_of
from typed_nn.layers import (
    MLP,
    AddLayer,
    BatchNormLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LayerParams,
    ReLULayer,
    layer_init,
    layer_params,
    make_infer_layer,
    make_train_layer,
    model_state,
)
from typed_nn.layers.state_entry import tensor_entry
from typed_nn.model import (
    Adam,
    GaussianFiller,
    GradCollector,
    LoadBuffer,
    ParamInitializer,
    load_checkpoint,
    save_checkpoint,
)
from typed_nn.policies import PInitializerIs, PUpdate

Batch = tn.Matrix[tn.Float32, tn.CPU]


def mlp(name: str = "net", seed: int = 0) -> MLP[tn.Float32, tn.CPU]:
    net = MLP.build(name, [4, 5, 3], [ReLULayer, None], weight_init="w", bias_init="w")
    init = ParamInitializer({"w": GaussianFiller(0.0, 0.5, seed=seed)})
    layer_init(net, init, LoadBuffer(tn.Float32, tn.CPU))
    return net


def batch(seed: int = 1) -> Batch:
    values = np.random.default_rng(seed).normal(size=(6, 4)).astype(np.float32)
    return tn.tensor(values, tn.Float32, tn.CPU, tn.Dim2)


def loss_of(net: MLP[tn.Float32, tn.CPU], x: Batch) -> tn.TensorLike[tn.Float32, tn.CPU, tn.Dim0]:
    out = net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
    return ops.reduce_sum(ops.square(out))


def drop_stacks(net: MLP[tn.Float32, tn.CPU]) -> None:
    net.feed_backward(net.output_cont())  # no gradient fed: pops what the forward kept


def test_the_tree_holds_the_layers_own_tensors_under_dotted_names() -> None:
    net = mlp()
    params = layer_params(net)
    assert isinstance(params, LayerParams)
    names = [n for n, _ in nn.named_parameters(params)]
    assert names == ["net.fc1.weight", "net.fc1.bias", "net.fc2.weight", "net.fc2.bias"]
    by_slash = model_state(net).parameters
    for name, t in nn.named_parameters(params):
        assert t is by_slash[name.replace(".", "/")].read()  # the same tensor, not a copy
    assert nn.named_buffers(params) == []


def test_a_typed_nn_optim_optimizer_trains_a_layer_model_as_the_model_rules_do() -> None:
    # The module path (tn.grad over the tree, optim.Adam) and MetaNN's (feed_backward,
    # grad_collect, typed_nn.model.Adam) give the same weights: one optimizer serves both.
    tree_net, metanet = mlp(), mlp()
    params = layer_params(tree_net)
    opt, rule = optim.Adam(params, lr=0.05), Adam(0.05, decoupled_weight_decay=False)
    for k in range(3):
        x = batch(k)
        opt.step(tn.grad(loss_of(tree_net, x), params))
        drop_stacks(tree_net)
        out = metanet.feed_forward(metanet.input_cont().set(LayerInput, x)).get(LayerOutput)
        metanet.feed_backward(metanet.output_cont().set(LayerOutput, out * 2.0))
        collected: GradCollector[tn.Float32, tn.CPU] = GradCollector(tn.Float32, tn.CPU)
        metanet.grad_collect(collected)
        rule.step(collected)
    assert opt.step_count == rule.step_count == 3
    for name, t in model_state(tree_net).parameters.items():
        other = model_state(metanet).parameters[name].read()
        np.testing.assert_allclose(t.read().numpy(), other.numpy(), rtol=1e-5, atol=1e-6)


def test_a_compiled_step_over_the_tree_counts_in_the_program() -> None:
    net = mlp()
    params = layer_params(net)
    opt = optim.SGD(params, lr=0.01)
    before = [t.numpy().copy() for t in nn.parameters(params)]

    @tn.compile
    def step(x: Batch) -> tn.Scalar[tn.Float32, tn.CPU]:
        loss = loss_of(net, x)
        opt.step(tn.grad(loss, params))
        drop_stacks(net)
        return loss

    losses = [float(step(batch(0)).numpy()) for _ in range(3)]
    assert step.traces == 1
    assert opt.step_count == 3
    assert losses[2] < losses[0]
    assert all(
        not np.array_equal(b, t.numpy()) for b, t in zip(before, nn.parameters(params), strict=True)
    )


def test_state_dict_round_trip_and_a_failed_load_changes_nothing() -> None:
    source, target = layer_params(mlp(seed=0)), layer_params(mlp(seed=5))
    sd = nn.state_dict(source)
    assert list(sd) == ["net.fc1.weight", "net.fc1.bias", "net.fc2.weight", "net.fc2.bias"]
    before = nn.state_dict(target)
    bad = dict(sd, **{"net.fc2.bias": np.zeros(7, np.float32)})
    with pytest.raises(tn.ModuleError, match=r"net\.fc2\.bias: shape \(7,\), the module's \(3,\)"):
        nn.load_state_dict(target, bad)
    for k, v in nn.state_dict(target).items():
        np.testing.assert_array_equal(v, before[k])
    nn.load_state_dict(target, sd)
    for k, v in nn.state_dict(target).items():
        np.testing.assert_array_equal(v, sd[k])


def test_batch_norm_statistics_are_buffers_of_the_tree() -> None:
    in_map = LayerInMap({LayerInput: tn.Matrix[tn.Float32, tn.CPU]})
    bn = make_train_layer(BatchNormLayer, in_map, PUpdate, PInitializerIs("w"))("bn", 3)
    layer_init(
        bn, ParamInitializer({"w": GaussianFiller(0.0, 0.1)}), LoadBuffer(tn.Float32, tn.CPU)
    )
    params = layer_params(bn)
    trained = {n for n, _ in nn.named_parameters(params)}
    kept = {n for n, _ in nn.named_buffers(params)}
    assert trained
    assert kept
    assert not trained & kept
    assert all("running" in n for n in kept)
    assert set(nn.state_dict(params)) == trained | kept


def test_a_checkpoint_of_the_tree_restores_weights_and_optimizer(tmp_path: Path) -> None:
    net = mlp()
    params = layer_params(net)
    opt = optim.Adam(params, lr=0.05)
    opt.step(tn.grad(loss_of(net, batch()), params))
    drop_stacks(net)
    save_checkpoint(tmp_path / "c.safetensors", params, opt, epoch=1)
    saved = nn.state_dict(params)
    opt.step(tn.grad(loss_of(net, batch(2)), params))
    drop_stacks(net)
    fresh = optim.Adam(params, lr=0.05)
    assert load_checkpoint(tmp_path / "c.safetensors", params, fresh).epoch == 1
    assert fresh.step_count == 1
    for k, v in nn.state_dict(params).items():
        np.testing.assert_array_equal(v, saved[k])


def test_a_layer_not_initialised_is_refused_by_name() -> None:
    net = MLP.build("net", [4, 5, 3], [ReLULayer, None], weight_init="w", bias_init="w")
    with pytest.raises(tn.ModuleError, match=r"layer 'net' has parameters not allocated yet"):
        layer_params(net)


def test_something_else_than_a_layer_is_refused() -> None:
    thing: Any = {"w": batch()}
    with pytest.raises(tn.OperandError, match="cannot read the state of a model that is not"):
        layer_params(thing)


def reporting(*names: str) -> Any:
    """A layer whose own state is one parameter per name (what a layer reports)."""
    layer: Any = make_infer_layer(AddLayer)("x")
    entries = [tensor_entry(n, "parameter", tn.zeros((2,), tn.Float32, tn.CPU)) for n in names]
    layer.own_state = lambda: entries
    return layer


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (("net.v1/w",), r"the parameter name 'net\.v1/w' has no path in a module tree"),
        (("net//w",), r"the parameter name 'net//w' has no path in a module tree"),
        (("p", "p/w"), r"'p/w' needs 'p' as a parameter and as a node of others"),
        (("p/w", "p"), r"'p' needs 'p' as a parameter and as a node of others"),
    ],
)
def test_a_name_with_no_tree_path_is_refused(names: tuple[str, ...], problem: str) -> None:
    with pytest.raises(tn.ModuleError, match=problem):
        layer_params(reporting(*names))
    assert [n for n, _ in nn.named_parameters(layer_params(reporting("a/w", "a/b/w")))] == [
        "a.w",
        "a.b.w",
    ]


def collected_grads(net: MLP[tn.Float32, tn.CPU], x: Batch) -> GradCollector[tn.Float32, tn.CPU]:
    """MetaNN's backward of ``loss_of``: the gradient of sum(out^2) is 2 out."""
    out = net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
    net.feed_backward(net.output_cont().set(LayerOutput, out * 2.0))
    collected: GradCollector[tn.Float32, tn.CPU] = GradCollector(tn.Float32, tn.CPU)
    net.grad_collect(collected)
    return collected


def test_collected_gradients_as_a_tree_equal_tn_grad_over_the_tree() -> None:
    net = mlp()
    params = layer_params(net)
    expected = tn.grad(loss_of(net, batch(3)), params)
    drop_stacks(net)
    grads = collected_grads(net, batch(3)).gradients_of(params)
    assert type(grads) is LayerParams
    assert gradient_of(grads) is params
    got, want = nn.named_parameters(grads), dict(nn.named_parameters(expected))
    assert [n for n, _ in got] == list(want)
    for name, g in got:
        np.testing.assert_allclose(g.numpy(), want[name].numpy(), rtol=1e-5, atol=1e-6)


def test_metanns_backward_feeds_a_typed_nn_optim_optimizer() -> None:
    # One optimizer for both walks: feed_backward + grad_collect, or tn.grad over the tree.
    collected_net, tree_net = mlp(), mlp()
    by_collector, by_grad = layer_params(collected_net), layer_params(tree_net)
    opt_c, opt_g = optim.Adam(by_collector, lr=0.05), optim.Adam(by_grad, lr=0.05)
    for k in range(3):
        opt_c.step(collected_grads(collected_net, batch(k)).gradients_of(by_collector))
        opt_g.step(tn.grad(loss_of(tree_net, batch(k)), by_grad))
        drop_stacks(tree_net)
    for (name, w), (_, v) in zip(
        nn.named_parameters(by_collector), nn.named_parameters(by_grad), strict=True
    ):
        np.testing.assert_allclose(w.numpy(), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_parameter_that_collected_nothing_gets_a_zero_gradient() -> None:
    params = layer_params(mlp())
    empty: GradCollector[tn.Float32, tn.CPU] = GradCollector(tn.Float32, tn.CPU)
    grads = nn.named_parameters(empty.gradients_of(params))
    assert all(isinstance(g, tn.ZeroTensor) for _, g in grads)
    assert [g.shape for _, g in grads] == [w.shape for _, w in nn.named_parameters(params)]


def test_collected_gradients_of_another_model_are_refused() -> None:
    net, other = mlp("net"), mlp("other")
    collected = collected_grads(net, batch(0))
    with pytest.raises(
        tn.ModuleError,
        match=r"GradCollector.gradients_of: 4 collected weight\(s\) are not parameters of the "
        r"LayerParams\.(.|\n)*'net/fc1/weight'(.|\n)*hint: pass layer_params\(net\)",
    ):
        collected.gradients_of(layer_params(other))


def test_collected_gradients_need_a_module() -> None:
    empty: GradCollector[tn.Float32, tn.CPU] = GradCollector(tn.Float32, tn.CPU)
    with pytest.raises(
        tn.ModuleError,
        match=r"GradCollector.gradients_of needs the module tree of the parameters\.(.|\n)*"
        r"received : function",
    ):
        empty.gradients_of(model_state)  # type: ignore[type-var]
