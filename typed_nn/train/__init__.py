"""Training: the digits data, mini-batches, ``fit`` of a module or a layer model with history and
callbacks (progress, early stopping, checkpoints),
and the history plot (DESIGN.md §8; docs/training.md)."""

from .arrays import ArrayDataset as ArrayDataset
from .callbacks import Callback as Callback
from .callbacks import LambdaCallback as LambdaCallback
from .callbacks import ModelCheckpoint as ModelCheckpoint
from .callbacks import NonFinite as NonFinite
from .callbacks import OnNonFinite as OnNonFinite
from .callbacks import ProgressBar as ProgressBar
from .data import Batch as Batch
from .data import Dataset as Dataset
from .data import Split as Split
from .data import batches as batches
from .data import load_digits as load_digits
from .data import one_hot as one_hot
from .fit import accuracy as accuracy
from .fit import fit as fit
from .fit import predict as predict
from .history import History as History
from .history import plot_history as plot_history
from .model import TrainableModel as TrainableModel
from .schedules import Schedule as Schedule
from .schedules import constant as constant
from .schedules import cosine as cosine
from .schedules import exponential as exponential
from .schedules import step_decay as step_decay
from .schedules import warmup as warmup
from .stopping import EarlyStopping as EarlyStopping
from .stopping import Metric as Metric
from .trainee import LayerModel as LayerModel
