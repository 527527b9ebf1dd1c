"""Policy conflicts in the calls that take policies, caught only by the typed_nn mypy plugin.

Each line below raises at run time (PolicyConflictError; ParamError for the fillers' own
policies); tests/test_policies_plugin.py runs every marked call to pin that. Checked with mypy
only (pyright does not run mypy plugins).
"""

import typed_nn as tn
from typed_nn import CPU, Float32
from typed_nn.layers import (
    MLP,
    AddLayer,
    LayerInMap,
    LeftOperand,
    ReLULayer,
    RightOperand,
    SigmoidLayer,
    TanhLayer,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.model import VarScaleFiller, XavierFiller
from typed_nn.policies import (
    PActFuncIs,
    PFeedbackOutput,
    PInitializerIs,
    PKeepDim,
    PModifyDimNumIs,
    PNoKeepDim,
    PNormVarScale,
    PNoUpdate,
    PolicyContainer,
    PUniformVarScale,
    PUpdate,
    PUpdateIs,
    PVarScaleFanAvg,
    PVarScaleFanIn,
    SubPolicyContainer,
    VarScaleFillerPolicy,
)

M32 = tn.Matrix[Float32, CPU]
m = LayerInMap({LeftOperand: M32, RightOperand: M32})

# Conflicting policies given to the calls that take them, not only to PolicyContainer(...).
make_train_layer(AddLayer, m, PUpdate, PNoUpdate)  # E: GradPolicy.is_update is set by argument 3 (PUpdate) and argument 4 (PNoUpdate)
make_infer_layer(SigmoidLayer, PKeepDim, PNoKeepDim)  # E: Policy conflict: DimPolicy.is_keep_dim
make_infer_layer(AddLayer, PModifyDimNumIs(1), PModifyDimNumIs(2))  # E: DimPolicy.modify_dim_num is set by argument 2 (PModifyDimNumIs(1))
MLP.build("net", [4, 3], [None], PUpdate, PNoUpdate)  # E: is set by argument 4 (PUpdate) and argument 5 (PNoUpdate)
VarScaleFiller(1.0, PNormVarScale, PUniformVarScale)  # E: VarScaleFillerPolicy.distribute is set by argument 2
XavierFiller(PNormVarScale, PUniformVarScale)  # E: Policy conflict: VarScaleFillerPolicy.distribute
VarScaleFiller(2.0, VarScaleFillerPolicy(), PVarScaleFanIn)  # E: VarScaleFillerPolicy.scale_mode is set by argument 2 (VarScaleFillerPolicy())
# Policies the callee adds itself: XavierFiller fixes the fan mode, MLP.build the activations.
XavierFiller(PVarScaleFanIn)  # E: PVarScaleFanAvg (which XavierFiller adds itself) and argument 1 (PVarScaleFanIn)
XavierFiller(PVarScaleFanAvg)  # E: scale_mode is set by PVarScaleFanAvg (which XavierFiller adds itself) and argument 1 (PVarScaleFanAvg)
MLP.build("net", [4, 3, 2], [ReLULayer, None], SubPolicyContainer("fc1", PActFuncIs(TanhLayer)))  # E: in sublayer "fc1": LayerStructurePolicy.act_func is set by PActFuncIs(ReLULayer) (which MLP.build adds itself)
MLP.build("net", [4, 3, 2], [ReLULayer, None], SubPolicyContainer("fc2", SubPolicyContainer("weight", PInitializerIs("x"))), weight_init="w")  # E: in sublayer "fc2/weight": ParamPolicy.initializer

# A container given with further policies that contradict it: a literal, a variable, a `*`.
make_train_layer(AddLayer, m, PolicyContainer(PUpdate), PNoUpdate)  # E: is set by PUpdate in argument 3 (PolicyContainer(PUpdate)) and argument 4 (PNoUpdate)
grad = PolicyContainer(PUpdate, PModifyDimNumIs(2))
make_train_layer(AddLayer, m, grad, PUpdateIs(False))  # E: GradPolicy.is_update is set by PUpdate in argument 3 (grad) and argument 4
make_infer_layer(AddLayer, grad, PModifyDimNumIs(3))  # E: DimPolicy.modify_dim_num is set by PModifyDimNumIs(2) in argument 2 (grad)
make_train_layer(AddLayer, m, grad, PolicyContainer(PNoUpdate))  # E: is set by PUpdate in argument 3 (grad) and PNoUpdate in argument 4
PolicyContainer(*grad, PNoUpdate)  # E: is set by PUpdate in argument 1 (*grad) and argument 2 (PNoUpdate)
scoped = PolicyContainer(PFeedbackOutput, SubPolicyContainer("w", PKeepDim))
make_train_layer(AddLayer, m, scoped, SubPolicyContainer("w", PNoKeepDim))  # E: Policy conflict in sublayer "w": DimPolicy.is_keep_dim is set by PKeepDim in argument 3 (scoped)

# Two SubPolicyContainers of one name: their contents are concatenated, so they conflict.
PolicyContainer(SubPolicyContainer("w", PUpdate), SubPolicyContainer("w", PNoUpdate))  # E: Policy conflict in sublayer "w": GradPolicy.is_update is set by PUpdate in argument 1
weight = SubPolicyContainer("w", PKeepDim)
SubPolicyContainer("fc1", weight, SubPolicyContainer("w", PNoKeepDim))  # E: in sublayer "w": DimPolicy.is_keep_dim is set by PKeepDim in argument 2 (weight)
PolicyContainer(SubPolicyContainer("a", SubPolicyContainer("b", PUpdate)), SubPolicyContainer("a", SubPolicyContainer("b", PNoUpdate)))  # E: in sublayer "a/b": GradPolicy.is_update
make_infer_layer(AddLayer, SubPolicyContainer("w", PKeepDim), PolicyContainer(SubPolicyContainer("w", PNoKeepDim)))  # E: in sublayer "w": DimPolicy.is_keep_dim
