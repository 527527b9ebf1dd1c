"""Evaluation: plans, handles and the executor."""

from .plan import EvalHandle as EvalHandle
from .plan import EvalPlan as EvalPlan
from .plan import evaluate as evaluate
from .plan import register as register
