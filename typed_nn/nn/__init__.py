"""``typed_nn.nn``: models as typed trees of parameters (DESIGN §5c, docs/modules.md).

``nn.Module`` holds a model's parameters, buffers and submodules as typed fields; the tree
walk (``named_parameters``, ``named_buffers``, ``tree_map``) is what ``tn.grad``, the
optimizers of ``typed_nn.optim``, state dicts and checkpoints use. The catalogue's modules
are forwards built from typed_nn's ops; activations are the ops themselves.
"""

from __future__ import annotations

from ..data.module import Module as Module
from ..data.module import buffer as buffer
from ..data.module import buffers as buffers
from ..data.module import named_buffers as named_buffers
from ..data.module import named_parameters as named_parameters
from ..data.module import parameters as parameters
from ..data.module import tree_map as tree_map
from ..ops import relu as relu
from ..ops import sigmoid as sigmoid
from ..ops import softplus as softplus
from ..ops import tanh as tanh
from .conv import AvgPool2d as AvgPool2d
from .conv import BatchNorm as BatchNorm
from .conv import Conv2d as Conv2d
from .conv import Flatten as Flatten
from .conv import MaxPool2d as MaxPool2d
from .layers import Dropout as Dropout
from .layers import Embedding as Embedding
from .layers import LayerNorm as LayerNorm
from .layers import Linear as Linear
from .layers import Sequential as Sequential
from .sequence import GRU as GRU
from .sequence import LSTM as LSTM
from .sequence import MultiHeadAttention as MultiHeadAttention
from .state import load_state_dict as load_state_dict
from .state import state_dict as state_dict

__all__ = [
    "AvgPool2d",
    "BatchNorm",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRU",
    "LSTM",
    "LayerNorm",
    "Linear",
    "MaxPool2d",
    "MultiHeadAttention",
    "Module",
    "Sequential",
    "buffer",
    "buffers",
    "load_state_dict",
    "named_buffers",
    "named_parameters",
    "parameters",
    "relu",
    "sigmoid",
    "softplus",
    "state_dict",
    "tanh",
    "tree_map",
]
