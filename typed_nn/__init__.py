"""typed_nn: a statically typed deep-learning library (MetaNN re-created in typed Python).

Data is tagged by element type, device and rank (``Tensor[Float32, CPU, Dim2]``); operations
build lazy, checked expression graphs; one evaluation runs the whole graph.
"""

from . import ops as ops
from .autodiff import grad as grad
from .autodiff import vjp as vjp
from .data import Matrix as Matrix
from .data import ScalableTensor as ScalableTensor
from .data import Scalar as Scalar
from .data import Tensor as Tensor
from .data import Tensor3 as Tensor3
from .data import Tensor4 as Tensor4
from .data import Tensor5 as Tensor5
from .data import Tensor6 as Tensor6
from .data import TensorLike as TensorLike
from .data import Vector as Vector
from .data import data_category as data_category
from .data import from_dlpack as from_dlpack
from .data import is_matrix as is_matrix
from .data import is_scalar as is_scalar
from .data import is_tensor3 as is_tensor3
from .data import is_tensor4 as is_tensor4
from .data import is_tensor5 as is_tensor5
from .data import is_tensor6 as is_tensor6
from .data import is_vector as is_vector
from .data import ones as ones
from .data import scalar as scalar
from .data import tensor as tensor
from .data import zeros as zeros
from .errors import BackendUnavailableError as BackendUnavailableError
from .errors import CheckpointError as CheckpointError
from .errors import CompileError as CompileError
from .errors import DeviceError as DeviceError
from .errors import DistributedError as DistributedError
from .errors import ElemRangeError as ElemRangeError
from .errors import ElemTypeError as ElemTypeError
from .errors import EvaluationError as EvaluationError
from .errors import ExportError as ExportError
from .errors import IndexRangeError as IndexRangeError
from .errors import LayerError as LayerError
from .errors import MissingBackendError as MissingBackendError
from .errors import MissingDependencyError as MissingDependencyError
from .errors import ModuleError as ModuleError
from .errors import NoImplementationError as NoImplementationError
from .errors import NotEvaluatedError as NotEvaluatedError
from .errors import NumericError as NumericError
from .errors import OperandError as OperandError
from .errors import OptionError as OptionError
from .errors import ParamError as ParamError
from .errors import ParamNotFoundError as ParamNotFoundError
from .errors import RankError as RankError
from .errors import ReadOnlyError as ReadOnlyError
from .errors import RetraceWarning as RetraceWarning
from .errors import SanitizerError as SanitizerError
from .errors import ShapeError as ShapeError
from .errors import TagError as TagError
from .errors import TopologyError as TopologyError
from .errors import TrainingError as TrainingError
from .errors import TypedNNError as TypedNNError
from .errors import WeightFileError as WeightFileError
from .errors import WeightFileNotFoundError as WeightFileNotFoundError
from .evaluate import EvalHandle as EvalHandle
from .evaluate import EvalPlan as EvalPlan
from .evaluate import compile as compile
from .evaluate import evaluate as evaluate
from .inference_mode import inference as inference
from .ops.dynamic import DynamicData as DynamicData
from .ops.dynamic import make_dynamic as make_dynamic
from .ops.random import Generator as Generator
from .ops.random import default_generator as default_generator
from .ops.random import manual_seed as manual_seed
from .ops.rows import BiasVector as BiasVector
from .ops.special import ConstantTensor as ConstantTensor
from .ops.special import ZeroTensor as ZeroTensor
from .tags import CPU as CPU
from .tags import GPU as GPU
from .tags import BFloat16 as BFloat16
from .tags import DeviceTag as DeviceTag
from .tags import Dim0 as Dim0
from .tags import Dim1 as Dim1
from .tags import Dim2 as Dim2
from .tags import Dim3 as Dim3
from .tags import Dim4 as Dim4
from .tags import Dim5 as Dim5
from .tags import Dim6 as Dim6
from .tags import DimTag as DimTag
from .tags import ElemTag as ElemTag
from .tags import Float16 as Float16
from .tags import Float32 as Float32
from .tags import Float64 as Float64
from .tags import FloatTag as FloatTag
from .tags import Int32 as Int32
from .tags import Int64 as Int64
from .tags import IntTag as IntTag
from .threads import get_num_threads as get_num_threads
from .threads import set_num_threads as set_num_threads

# isort: split
# The package's two side effects, LAST so that every public name above exists first: the
# backends register from here only (no module below the facade imports one), then debug mode
# (TYPED_NN_DEBUG=1; docs/debug.md) wraps the public names. Off, it imports nothing more.
from .backends import install as _install_backends
from .debug.switch import enable_if_requested as _enable_if_requested

_install_backends()
_enable_if_requested()
