"""A ``@tn.compile`` decorated method keeps its signature: on an instance, the method's
parameters after ``self`` and its return type; on the class, the Compiled itself."""

from collections.abc import Callable
from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Float32, nn, ops
from typed_nn.evaluate import Compiled

M32 = tn.Matrix[Float32, CPU]
S32 = tn.Scalar[Float32, CPU]


class Trainer:
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 1)

    @tn.compile
    def step(self, x: M32, y: M32) -> S32:
        return ops.reduce_mean(ops.square(self.fc(x) - y))

    @tn.compile(static=("scale",))
    def scaled(self, x: M32, scale: float = 1.0) -> M32:
        return x * scale


class SubTrainer(Trainer):
    pass


tr = Trainer()
x = tn.zeros((3, 4), Float32, CPU)
y = tn.zeros((3, 1), Float32, CPU)
loss: S32 = tr.step(x, y)
assert_type(tr.step(x, y), S32)
assert_type(tr.step(x=x, y=y), S32)
assert_type(SubTrainer().step(x, y), S32)
assert_type(tr.scaled(x), M32)
assert_type(tr.scaled(x, scale=2.0), M32)
assert_type(Trainer.step(tr, x, y), S32)
on_class: Callable[[Trainer, M32, M32], S32] = Trainer.step
compiled: Compiled[..., S32] = Trainer.step
traces: int = Trainer.step.traces


@tn.compile
def free(x: M32) -> M32:
    return x + x


assert_type(free(x), M32)
