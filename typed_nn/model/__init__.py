"""Model facilities: parameter fillers, initializer, load buffer, gradient collector,
optimizers, safetensors weight files and PyTorch state dicts (METANN.md §6, DESIGN.md §8)."""

from . import torch_mapping as torch_mapping
from .checkpoint import Checkpoint as Checkpoint
from .checkpoint import load_checkpoint as load_checkpoint
from .checkpoint import save_checkpoint as save_checkpoint
from .clip import clip_by_global_norm as clip_by_global_norm
from .clip import global_norm as global_norm
from .fillers import ConstantFiller as ConstantFiller
from .fillers import Filler as Filler
from .fillers import GaussianFiller as GaussianFiller
from .fillers import MSRAFiller as MSRAFiller
from .fillers import UniformFiller as UniformFiller
from .fillers import VarScaleFiller as VarScaleFiller
from .fillers import XavierFiller as XavierFiller
from .fillers import var_scale_fans as var_scale_fans
from .grad_collector import GradCollector as GradCollector
from .grad_collector import GradInfo as GradInfo
from .initializer import ParamInitializer as ParamInitializer
from .load_buffer import LoadBuffer as LoadBuffer
from .loss_scale import LossScaler as LossScaler
from .optim import SGD as SGD
from .optim import Adam as Adam
from .optim import LearningRate as LearningRate
from .optim import Momentum as Momentum
from .optim import Optimizer as Optimizer
from .optim import ParamGrads as ParamGrads
from .torch_mapping import TorchMapping as TorchMapping
from .torch_state import TorchLoadReport as TorchLoadReport
from .torch_state import from_torch_state_dict as from_torch_state_dict
from .torch_state import to_torch_state_dict as to_torch_state_dict
from .weights import load_weights as load_weights
from .weights import save_weights as save_weights
