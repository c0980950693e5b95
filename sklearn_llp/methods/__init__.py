"""Training methods and their registry (:ref:`methods`); tensor ops: ``functional``."""

from . import functional as functional
from ._auto import AutoMethod
from ._base import DLLP, BagBatch, ConsistencyMethod, LLPMethod
from ._easyllp import EasyLLP
from ._hybrid import Hybrid
from ._llpfc import LLPFC
from ._mixbag import MixBag, mixed_bag_labels
from ._noisy import NoisyProportions
from ._pi import PiModel
from ._registry import available_methods, make_method, method_params, register_method
from ._regression import BagLoss, InstanceLoss, InterpolatingLoss, RegressionMethod
from ._rot import ROT
from ._segments import interval_loss
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
    "Hybrid",
    "InstanceLoss",
    "InterpolatingLoss",
    "LLPMethod",
    "MixBag",
    "NoisyProportions",
    "PiModel",
    "RegressionMethod",
    "available_methods",
    "interval_loss",
    "make_method",
    "method_params",
    "mixed_bag_labels",
    "register_method",
]
