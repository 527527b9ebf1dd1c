"""Policies: per-layer choices declared as objects, checked for conflicts, selected by major.

See ``docs/policies.md`` and METANN.md section 4. Only re-exports live here.
"""

from typed_nn.errors import PolicyConflictError as PolicyConflictError
from typed_nn.errors import PolicyError as PolicyError

from .container import AnyPolicyObject as AnyPolicyObject
from .container import PolicyContainer as PolicyContainer
from .container import PolicyItem as PolicyItem
from .container import SubPolicyContainer as SubPolicyContainer
from .dim import DimPolicy as DimPolicy
from .dim import PDimArrayIs as PDimArrayIs
from .dim import PDimCountIs as PDimCountIs
from .dim import PKeepDim as PKeepDim
from .dim import PKeepDimValueIs as PKeepDimValueIs
from .dim import PModifyDimNumIs as PModifyDimNumIs
from .dim import PNoKeepDim as PNoKeepDim
from .grad import GradPolicy as GradPolicy
from .grad import PFeedbackNoOutput as PFeedbackNoOutput
from .grad import PFeedbackOutput as PFeedbackOutput
from .grad import PFeedbackOutputIs as PFeedbackOutputIs
from .grad import PNoUpdate as PNoUpdate
from .grad import PUpdate as PUpdate
from .grad import PUpdateIs as PUpdateIs
from .init import InitPolicy as InitPolicy
from .init import PRandomGeneratorIs as PRandomGeneratorIs
from .layer_structure import LayerStructurePolicy as LayerStructurePolicy
from .layer_structure import PActFuncIs as PActFuncIs
from .layer_structure import PBiasInvolved as PBiasInvolved
from .layer_structure import PBiasNotInvolved as PBiasNotInvolved
from .major import PolicyMajor as PolicyMajor
from .objects import PolicyObject as PolicyObject
from .objects import PolicyTemplate as PolicyTemplate
from .objects import VariadicPolicyTemplate as VariadicPolicyTemplate
from .param import ParamPolicy as ParamPolicy
from .param import PDeviceIs as PDeviceIs
from .param import PElemIs as PElemIs
from .param import PInitializerIs as PInitializerIs
from .param import PParamTypeIs as PParamTypeIs
from .precision import ComputeIn as ComputeIn
from .precision import PComputeElemIs as PComputeElemIs
from .precision import PMixedBFloat16 as PMixedBFloat16
from .precision import PMixedFloat16 as PMixedFloat16
from .precision import PParamElemIs as PParamElemIs
from .precision import PrecisionPolicy as PrecisionPolicy
from .rnn import PDisableBptt as PDisableBptt
from .rnn import PEnableBptt as PEnableBptt
from .rnn import PSeqIDsAre as PSeqIDsAre
from .rnn import RnnPolicy as RnnPolicy
from .rnn import SeqID as SeqID
from .scoping import change_policy as change_policy
from .scoping import plain_policies as plain_policies
from .scoping import sub_policies as sub_policies
from .select import has_policy as has_policy
from .select import policy_select as policy_select
from .value_source import PValueTypeIs as PValueTypeIs
from .value_source import ValueSourcePolicy as ValueSourcePolicy
from .var_scale import PNormVarScale as PNormVarScale
from .var_scale import PUniformVarScale as PUniformVarScale
from .var_scale import PVarScaleFanAvg as PVarScaleFanAvg
from .var_scale import PVarScaleFanIn as PVarScaleFanIn
from .var_scale import PVarScaleFanOut as PVarScaleFanOut
from .var_scale import VarScaleDistribution as VarScaleDistribution
from .var_scale import VarScaleFillerPolicy as VarScaleFillerPolicy
from .var_scale import VarScaleMode as VarScaleMode
