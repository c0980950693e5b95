"""LLP training methods: each turns a batch of whole bags into a loss.

``LLPClassifier(method=...)`` takes a registered name (``"dllp"``,
``"vat"``, ``"pi"``, ``"rot"``, ``"llpfc"``, ``"easyllp"``, ``"noisy"``;
see :func:`available_methods`) or an :class:`LLPMethod` instance;
``LLPRegressor(method=...)`` one of the regression losses (``"bag"``,
``"instance"``, ``"interpolating"``) or a :class:`RegressionMethod`.
Hyperparameters are ``method__*`` parameters of the estimator
(``LLPClassifier(method="vat", method__alpha=0.1)``), so ``set_params``,
``clone`` and ``GridSearchCV`` reach them. The tensor operations the
methods are built from live in :mod:`sklearn_llp.methods.functional`.
"""

from . import functional
from ._base import DLLP, BagBatch, ConsistencyMethod, LLPMethod
from ._easyllp import EasyLLP
from ._llpfc import LLPFC
from ._noisy import NoisyProportions
from ._pi import PiModel
from ._registry import (
    available_methods,
    make_method,
    method_params,
    register_method,
)
from ._regression import BagLoss, InstanceLoss, InterpolatingLoss, RegressionMethod
from ._rot import ROT
from ._vat import VAT

__all__ = [
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
    "functional",
    "make_method",
    "method_params",
    "register_method",
]
