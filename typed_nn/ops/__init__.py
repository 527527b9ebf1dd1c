"""The op catalogue: each op declared once (name, checks, result type) and implemented per
device. Everything here builds lazy nodes; nothing computes until evaluation."""

from .. import backends as _backends  # noqa: F401
from ..backends import numpy as _numpy_backend  # noqa: F401 - registers the CPU implementations
from .arithmetic import abs as abs
from .arithmetic import negative as negative
from .arithmetic import sign as sign
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
from .structure import dot as dot
