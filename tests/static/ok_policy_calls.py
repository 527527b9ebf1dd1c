"""Policies given to the calls that take them, which the typed_nn mypy plugin must accept."""

import random

import typed_nn as tn
from typed_nn import CPU, Float32
from typed_nn.layers import (
    MLP,
    AddLayer,
    LayerInMap,
    LayerInput,
    LeftOperand,
    LinearLayer,
    ReLULayer,
    RightOperand,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.model import VarScaleFiller, XavierFiller
from typed_nn.policies import (
    PFeedbackOutput,
    PInitializerIs,
    PKeepDim,
    PKeepDimValueIs,
    PModifyDimNumIs,
    PNoKeepDim,
    PNormVarScale,
    PNoUpdate,
    PolicyContainer,
    PolicyObject,
    PUpdate,
    PUpdateIs,
    PVarScaleFanIn,
    SubPolicyContainer,
    VarScaleDistribution,
    VarScaleFillerPolicy,
)

M32 = tn.Matrix[Float32, CPU]
m = LayerInMap({LeftOperand: M32, RightOperand: M32})

# Different minors; a container plus policies it does not set.
make_train_layer(AddLayer, m, PUpdate, PFeedbackOutput, PModifyDimNumIs(2))
make_infer_layer(AddLayer, PKeepDim, PModifyDimNumIs(2))
make_train_layer(AddLayer, m, PolicyContainer(PUpdate), PFeedbackOutput)
# (sub-containers name sublayers of the layer: a linear layer's "weight" and "bias")
lin = LayerInMap({LayerInput: M32})
base = PolicyContainer(PUpdate, SubPolicyContainer("weight", PNoUpdate))
make_train_layer(LinearLayer, lin, base, PFeedbackOutput, SubPolicyContainer("bias", PNoUpdate))

# A sublayer may set what its parent sets: the sublayer's own policy wins (no conflict).
make_train_layer(LinearLayer, lin, PUpdate, SubPolicyContainer("weight", PNoUpdate))
make_train_layer(LinearLayer, lin, base, SubPolicyContainer("weight", PFeedbackOutput))
PolicyContainer(PUpdate, SubPolicyContainer("w", SubPolicyContainer("x", PUpdate)))
PolicyContainer(PKeepDim, SubPolicyContainer("w", PNoKeepDim, SubPolicyContainer("x", PKeepDim)))
# Sub-containers of one name that set different minors, or of different names.
PolicyContainer(SubPolicyContainer("w", PUpdate), SubPolicyContainer("w", PKeepDim))
PolicyContainer(SubPolicyContainer("w", PUpdate), SubPolicyContainer("b", PNoUpdate))
weight = SubPolicyContainer("w", PKeepDim)
SubPolicyContainer("fc1", weight, SubPolicyContainer("w", PUpdate), PNoKeepDim)

# MLP.build: a policy given replaces the default it sets (PUpdate here); a sublayer's own
# initializer sits below the one weight_init gives (fc1/weight vs fc1/linear/weight).
MLP.build("net", [4, 3, 2], [ReLULayer, None], PNoUpdate, SubPolicyContainer("fc2", PUpdate))
MLP.build(
    "net",
    [4, 3, 2],
    [ReLULayer, None],
    SubPolicyContainer("fc1", SubPolicyContainer("linear", SubPolicyContainer("bias", PInitializerIs("b")))),
    weight_init="w",
)

# The fillers: one distribution and one fan mode; XavierFiller takes the distribution only.
VarScaleFiller(2.0, PNormVarScale, PVarScaleFanIn)
VarScaleFiller(1.0, VarScaleFillerPolicy())
XavierFiller(PNormVarScale)

# bool values where bool (or object) is declared; ints where float is declared.
PKeepDimValueIs(True)
PUpdateIs(False)
PInitializerIs(True)
PolicyObject(VarScaleFillerPolicy, "distribute", VarScaleDistribution.NORM)


# What the plugin cannot know is left to the run-time check (these may raise there, so this
# file, which runs cleanly, does not call them): contents that differ by branch (mypy joins
# them and keeps none), a parameter typed PolicyContainer, a list unpacked.
def left_to_run_time(policies: PolicyContainer) -> None:
    either = PolicyContainer(PUpdate) if random.random() < 0.5 else PolicyContainer(PKeepDim)
    make_infer_layer(AddLayer, either, PNoKeepDim, PModifyDimNumIs(1))
    make_train_layer(AddLayer, m, policies, PNoUpdate)
    make_infer_layer(AddLayer, *[PKeepDim], PNoKeepDim)
