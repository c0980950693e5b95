"""Training methods and their registry (:ref:`methods`); tensor ops: ``functional``."""

from . import functional as functional
from ._auto import AutoMethod
from ._base import DLLP, BagBatch, ConsistencyMethod, LLPMethod
from ._easyllp import EasyLLP
from ._llpfc import LLPFC
from ._noisy import NoisyProportions
from ._pi import PiModel
from ._registry import available_methods, make_method, method_params, register_method
from ._regression import BagLoss, InstanceLoss, InterpolatingLoss, RegressionMethod
from ._rot import ROT
from ._vat import VAT

__all__ = [
    "AutoMethod",
    "DLLP",
    "LLPFC",
    "ROT",
    "VAT",
    "BagBatch",
    "BagLoss",
    "ConsistencyMethod",
    "EasyLLP",
    "InstanceLoss",
    "InterpolatingLoss",
    "LLPMethod",
    "NoisyProportions",
    "PiModel",
    "RegressionMethod",
    "available_methods",
    "make_method",
    "method_params",
    "register_method",
]
