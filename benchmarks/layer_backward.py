"""Layer backward: what a MetaNN layer's feed_backward costs, now the vjp of its forward.

For each layer kind the forward is built ("forward": the layer also records what its backward
needs), then its backward's gradients are built ("backward build"), and built + evaluated
("backward build+eval"): the input gradient where the layer feeds back and every parameter's
gradient through ``grad_collect``, registered and evaluated in one plan (which also computes
the forward values they need). The gradients are checked against ``tn.vjp`` of the forward
first. Only public layer APIs are used, so the same script times an older commit (before the
hand-written backwards were deleted: run it with that commit's ``PYTHONPATH``, alternating).
Float32, one BLAS thread, min of repeats. The lines are ``_common.race``'s, so
``compare_commits.py`` compares two commits that both print them.

Run: ``python benchmarks/layer_backward.py [--repeats 30] [--only rnn]``.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _common import header, setup_threads

setup_threads()

import numpy as np  # noqa: E402

import typed_nn as tn  # noqa: E402
from typed_nn.layers import (  # noqa: E402
    MLP,
    DotLayer,
    GruStep,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    Previous,
    RecurrentLayer,
    ReLULayer,
    RightOperand,
    SigmoidLayer,
    SingleLayerPerceptron,
    layer_grad_collect,
    layer_init,
    make_train_layer,
)
from typed_nn.model import GaussianFiller, GradCollector, LoadBuffer, ParamInitializer  # noqa: E402
from typed_nn.policies import (  # noqa: E402
    PActFuncIs,
    PFeedbackOutput,
    PInitializerIs,
    PSeqIDsAre,
    PUpdate,
    SeqID,
)
from typed_nn.tags import dim_of_rank  # noqa: E402

F32, CPU = tn.Float32, tn.CPU
M32 = tn.Matrix[tn.Float32, tn.CPU]
H = Previous(LayerOutput)
TRAIN = (PUpdate, PFeedbackOutput, PInitializerIs("w"))


@dataclass
class Case:
    """A layer kind: how to build one (for a variant) and its inputs."""

    name: str
    build: Callable[[], Any]
    """A layer instance, parameters initialised."""
    inputs: dict[type, Any]


def tensor(*shape: int, seed: int) -> Any:
    data = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    return tn.tensor(data, F32, CPU, dim_of_rank(len(shape)))


def initialised(layer: Any) -> Any:
    layer_init(
        layer, ParamInitializer({"w": GaussianFiller(0.0, 0.1, seed=1)}), LoadBuffer(F32, CPU)
    )
    return layer


def elementary(template: type[Any], in_map: LayerInMap) -> Callable[[], Any]:
    def build() -> Any:
        return make_train_layer(template, in_map, PFeedbackOutput)("e")

    return build


def composite(
    template: type[Any], in_map: LayerInMap, *args: Any, policies: tuple[Any, ...] = ()
) -> Callable[[], Any]:
    def build() -> Any:
        return initialised(make_train_layer(template, in_map, *TRAIN, *policies)("c", *args))

    return build


def mlp() -> Any:
    net = MLP.build("net", [64, 128, 10], [ReLULayer, None], weight_init="w", bias_init="w")
    return initialised(net)


def cases() -> list[Case]:
    x32 = tensor(32, 64, seed=2)
    rnn_map = LayerInMap({LayerInput: tn.Tensor3[tn.Float32, tn.CPU], H: M32})
    return [
        Case(
            "dot 32x64 . 64x128 (elementary)",
            elementary(DotLayer, LayerInMap({LeftOperand: M32, RightOperand: M32})),
            {LeftOperand: x32, RightOperand: tensor(64, 128, seed=3)},
        ),
        Case(
            "sigmoid 32x128 (elementary)",
            elementary(SigmoidLayer, LayerInMap({LayerInput: M32})),
            {LayerInput: tensor(32, 128, seed=4)},
        ),
        Case(
            "linear 64->128, batch 32",
            composite(LinearLayer, LayerInMap({LayerInput: M32}), 64, 128),
            {LayerInput: x32},
        ),
        Case(
            "linear 64->128, batch 32, fed a node",
            composite(LinearLayer, LayerInMap({LayerInput: M32}), 64, 128),
            {LayerInput: x32 * 1.0},
        ),
        Case(
            "slp sigmoid 64->128, batch 32",
            composite(
                SingleLayerPerceptron,
                LayerInMap({LayerInput: M32}),
                64,
                128,
                policies=(PActFuncIs(SigmoidLayer),),
            ),
            {LayerInput: x32},
        ),
        Case(
            "gru step 32->64, batch 16",
            composite(GruStep, LayerInMap({LayerInput: M32, H: M32}), 32, 64),
            {LayerInput: tensor(16, 32, seed=5), H: tensor(16, 64, seed=6)},
        ),
        Case(
            "rnn gru 20 steps 32->64, batch 16 (bptt)",
            composite(
                RecurrentLayer,
                rnn_map,
                32,
                64,
                policies=(PActFuncIs(GruStep), PSeqIDsAre(SeqID(LayerInput, 0))),
            ),
            {LayerInput: tensor(20, 16, 32, seed=7), H: tensor(16, 64, seed=8)},
        ),
        Case("mlp digits 64-128-10 relu, batch 32 (fit's policies)", mlp, {LayerInput: x32}),
    ]


class Run:
    """One layer instance: each call builds a fresh forward (timed apart), then times the
    backward's build and evaluation."""

    def __init__(self, case: Case) -> None:
        self.layer = case.build()
        self.inputs = case.inputs
        self.grad: Any = None

    def forward(self) -> Any:
        cont = self.layer.input_cont()
        for port, value in self.inputs.items():
            cont = cont.set(port, value)
        out = self.layer.feed_forward(cont).get(LayerOutput)
        if self.grad is None:
            self.grad = tensor(*out.shape, seed=9)
        return out

    def backward(self) -> list[Any]:
        """The backward's gradients, built (nothing evaluated)."""
        back = self.layer.feed_backward(self.layer.output_cont().set(LayerOutput, self.grad))
        col: GradCollector[Any, Any] = GradCollector(F32, CPU)
        layer_grad_collect(self.layer, col)
        found = [back.get(p) for p in self.layer.input_ports if back.is_set(p)]
        return found + [g for _, _, g in col]

    def run(self, evaluate: bool) -> tuple[float, float, list[Any]]:
        """(forward seconds, backward seconds, evaluated gradients)."""
        gc.disable()
        start = time.perf_counter()
        self.forward()
        forward = time.perf_counter() - start
        start = time.perf_counter()
        grads = self.backward()
        arrays: list[Any] = []
        if evaluate:
            handles = [g.eval_register() for g in grads]
            tn.EvalPlan.eval()
            arrays = [h.data().array for h in handles]
        elapsed = time.perf_counter() - start
        gc.enable()
        self.layer.neutral_invariant()
        return forward, elapsed, arrays


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:9.3f} ms"


def measure(case: Case, repeats: int) -> dict[str, float]:
    """The best forward, backward build and backward build+eval times of ``case``; the input
    gradients checked against ``tn.vjp`` of the forward first."""
    run = Run(case)
    out = run.forward()
    feeds_back = type(run.layer).is_feedback_output
    wrt = [v for v in case.inputs.values() if isinstance(v, tn.TensorLike) and feeds_back]
    wanted = [w.numpy() for w in tn.vjp(out, wrt, run.grad)]
    got = [g.numpy() for g in run.backward()][: len(wrt)]
    for a, b in zip(wanted, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5, err_msg=case.name)
    run.layer.neutral_invariant()
    best: dict[str, float] = {}
    for evaluate in (False, True):
        run.run(evaluate)  # warm-up (plan caches)
        key = f"backward {'build+eval' if evaluate else 'build'}"
        for _ in range(repeats):
            forward, backward, _ = run.run(evaluate)
            best[key] = min(best.get(key, float("inf")), backward)
            best["forward"] = min(best.get("forward", float("inf")), forward)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--only", default="", help="run the layers whose name contains this")
    args = parser.parse_args()
    header(f"layer forward and backward (the forward's vjp), float32, min of {args.repeats}")
    for case in (c for c in cases() if args.only in c.name):
        best = measure(case, args.repeats if "rnn" not in case.name else max(5, args.repeats // 3))
        for step in ("forward", "backward build", "backward build+eval"):
            print(f"  {case.name}: {step:<20} {_fmt(best[step])}")


if __name__ == "__main__":
    main()
