"""Evaluation: plans, handles, the optimised executor and its switches."""

from . import served as served  # registers how tn.inference() runs repeated module calls
from .compiled import Compiled as Compiled
from .compiled import compile as compile
from .executor import clear_plan_cache as clear_plan_cache
from .executor import last_program as last_program
from .options import EvalOptions as EvalOptions
from .options import EvalStats as EvalStats
from .options import options as options
from .options import stats as stats
from .plan import EvalHandle as EvalHandle
from .plan import EvalPlan as EvalPlan
from .plan import evaluate as evaluate
from .plan import register as register
from .pool import BufferPool as BufferPool
from .pool import buffer_pool as buffer_pool
