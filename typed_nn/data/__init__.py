"""Data kinds: the abstract TensorLike, the principal Tensor and the lazy kinds."""

from .category import data_category as data_category
from .category import is_matrix as is_matrix
from .category import is_scalar as is_scalar
from .category import is_tensor3 as is_tensor3
from .category import is_tensor4 as is_tensor4
from .category import is_tensor5 as is_tensor5
from .category import is_tensor6 as is_tensor6
from .category import is_vector as is_vector
from .dlpack import from_dlpack as from_dlpack
from .scalable import ScalableTensor as ScalableTensor
from .tensor import Matrix as Matrix
from .tensor import Scalar as Scalar
from .tensor import Tensor as Tensor
from .tensor import Tensor3 as Tensor3
from .tensor import Tensor4 as Tensor4
from .tensor import Tensor5 as Tensor5
from .tensor import Tensor6 as Tensor6
from .tensor import TensorLike as TensorLike
from .tensor import Vector as Vector

# isort: split
# After ``.tensor``: pyright binds the submodule name on ``from .tensor import``; the
# factory ``tensor`` must be the last binding of the name (else ``tn.tensor`` is a module).
from .factories import ones as ones
from .factories import scalar as scalar
from .factories import tensor as tensor
from .factories import zeros as zeros
