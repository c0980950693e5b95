"""LLP training methods: each turns a batch of whole bags into a loss.

``LLPClassifier(method=...)`` takes a registered name (``"dllp"``,
``"vat"``, ``"pi"``, ``"rot"``, ``"llpfc"``, ``"easyllp"``, ``"noisy"``;
see :func:`available_methods`) or an :class:`LLPMethod` instance;
``LLPRegressor(method=...)`` one of the regression losses (``"bag"``,
``"instance"``, ``"interpolating"``; ``available_methods("regression")``)
or a :class:`RegressionMethod` instance. Their
hyperparameters are ``method__*`` parameters of the classifier
(``LLPClassifier(method="vat", method__alpha=0.1)``), so ``set_params``,
``clone`` and ``GridSearchCV(param_grid={"method__alpha": [...]})`` reach them.
"""

from ._base import (
    DLLP,
    BagBatch,
    ConsistencyMethod,
    LLPMethod,
    clean_logits,
    perturbation_mode,
)
from ._easyllp import EasyLLP, bag_spread, easyllp_loss
from ._llpfc import LLPFC, forward_correction_loss, llpfc_transition_matrices
from ._losses import (
    exp_rampup,
    gather_rows,
    kl_divergence_with_logits,
    l2_normalize,
    proportion_loss,
    segment_mean,
    segment_sum,
    weighted_mean,
)
from ._noisy import (
    NoisyProportions,
    noisy_proportion_loss,
    noisy_proportion_weights,
)
from ._pi import PiModel, pi_loss
from ._registry import (
    available_methods,
    make_method,
    method_params,
    register_method,
)
from ._regression import (
    BagLoss,
    InstanceLoss,
    InterpolatingLoss,
    RegressionMethod,
    interpolating_loss,
    regression_losses,
)
from ._rot import ROT, pseudo_label_loss, sinkhorn_pseudo_labels
from ._vat import VAT, vat_loss, vat_perturbation

__all__ = [
    "BagBatch",
    "BagLoss",
    "ConsistencyMethod",
    "DLLP",
    "EasyLLP",
    "InstanceLoss",
    "InterpolatingLoss",
    "LLPFC",
    "LLPMethod",
    "NoisyProportions",
    "PiModel",
    "ROT",
    "RegressionMethod",
    "VAT",
    "available_methods",
    "clean_logits",
    "bag_spread",
    "easyllp_loss",
    "exp_rampup",
    "forward_correction_loss",
    "kl_divergence_with_logits",
    "l2_normalize",
    "llpfc_transition_matrices",
    "make_method",
    "method_params",
    "noisy_proportion_loss",
    "noisy_proportion_weights",
    "gather_rows",
    "interpolating_loss",
    "perturbation_mode",
    "pi_loss",
    "proportion_loss",
    "pseudo_label_loss",
    "register_method",
    "regression_losses",
    "segment_mean",
    "segment_sum",
    "sinkhorn_pseudo_labels",
    "vat_loss",
    "vat_perturbation",
    "weighted_mean",
]
