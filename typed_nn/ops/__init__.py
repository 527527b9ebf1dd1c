"""The op catalogue: each op declared once (name, checks, result type) and implemented per
device. Everything here builds lazy nodes; nothing computes until evaluation."""

from .activation import gelu as gelu
from .activation import relu as relu
from .activation import relu_grad as relu_grad
from .activation import sigmoid as sigmoid
from .activation import sigmoid_grad as sigmoid_grad
from .activation import silu as silu
from .activation import softplus as softplus
from .activation import tanh as tanh
from .activation import tanh_grad as tanh_grad
from .arithmetic import abs as abs
from .arithmetic import negative as negative
from .arithmetic import sign as sign
from .conv import avg_pool2d as avg_pool2d
from .conv import avg_pool2d_grad as avg_pool2d_grad
from .conv import conv2d as conv2d
from .conv import conv2d_grad_input as conv2d_grad_input
from .conv import conv2d_grad_weight as conv2d_grad_weight
from .conv import max_pool2d as max_pool2d
from .conv import max_pool2d_grad as max_pool2d_grad
from .convert import astype as astype
from .convert import to_device as to_device
from .cross_entropy import binary_cross_entropy_with_logits as binary_cross_entropy_with_logits
from .cross_entropy import cross_entropy as cross_entropy
from .embedding import embedding as embedding
from .embedding import embedding_grad as embedding_grad
from .join import concat as concat
from .join import narrow as narrow
from .join import stack as stack
from .layout import permute as permute
from .layout import permute_inv as permute_inv
from .layout import reshape as reshape
from .layout import tile as tile
from .layout import transpose as transpose
from .loss import huber_loss as huber_loss
from .loss import l1_loss as l1_loss
from .loss import mse_loss as mse_loss
from .loss import nll_loss as nll_loss
from .loss import nll_loss_grad as nll_loss_grad
from .math import abs_grad as abs_grad
from .math import acos as acos
from .math import acos_grad as acos_grad
from .math import acosh as acosh
from .math import acosh_grad as acosh_grad
from .math import asin as asin
from .math import asin_grad as asin_grad
from .math import asinh as asinh
from .math import asinh_grad as asinh_grad
from .math import cos as cos
from .math import cos_grad as cos_grad
from .math import erf as erf
from .math import exp as exp
from .math import exp_grad as exp_grad
from .math import log as log
from .math import log_grad as log_grad
from .math import sin as sin
from .math import sin_grad as sin_grad
from .math import sqrt as sqrt
from .math import sqrt_grad as sqrt_grad
from .math import square as square
from .math import square_grad as square_grad
from .math import tan as tan
from .math import tan_grad as tan_grad
from .node import Operation as Operation
from .pick import label_pick as label_pick
from .pick import label_pick_grad as label_pick_grad
from .random import Generator as Generator
from .random import bernoulli as bernoulli
from .random import default_generator as default_generator
from .random import dropout_mask as dropout_mask
from .random import manual_seed as manual_seed
from .random import normal as normal
from .random import permutation as permutation
from .random import randint as randint
from .random import uniform as uniform
from .reduce import argmax as argmax
from .reduce import reduce_max as reduce_max
from .reduce import reduce_mean as reduce_mean
from .reduce import reduce_sum as reduce_sum
from .select import interpolate as interpolate
from .select import maximum as maximum
from .select import minimum as minimum
from .select import where as where
from .softmax import log_softmax as log_softmax
from .softmax import log_softmax_grad as log_softmax_grad
from .softmax import softmax as softmax
from .softmax import softmax_grad as softmax_grad
from .squeeze import squeeze as squeeze
from .squeeze import unsqueeze as unsqueeze
from .stop_gradient import stop_gradient as stop_gradient
from .structure import dot as dot
from .structure import matmul as matmul

# isort: split
# What the operators on TensorLike build with: data cannot import ops, so ops hands these
# down when it loads (data/tensor.py's UP is the one place data reaches up).
from ..data.tensor import UP as _UP
from . import arithmetic as _arithmetic
from . import rows as _rows
from . import structure as _structure
from .node import build as _build

_UP.build = _build
_UP.ADD = _arithmetic.ADD
_UP.SUB = _arithmetic.SUB
_UP.MUL = _arithmetic.MUL
_UP.DIV = _arithmetic.DIV
_UP.negative = _arithmetic.negative
_UP.abs = _arithmetic.abs
_UP.matmul = _structure.build_matmul
_UP.slice = _rows.slice
_UP.stack_items = _rows.stack_items
