"""Bag-level metrics and the bag scorer for model selection without labels.

The classification errors compare every bag's proportions with the share of
its rows a classifier labels each class ("hard") or its mean probabilities
("soft"), by L1 or KL; the regression metrics compare every bag's mean with
the mean prediction over its rows. :class:`BagScorer` turns any of them into
a ``scoring=`` for GridSearchCV and cross_validate (greater is better).
"""

from ..core import BAG_METRICS, KL_EPS, REGRESSION_METRICS
from ._bag_metrics import (
    bag_errors,
    bag_mean_absolute_error,
    bag_mean_squared_error,
    bag_r2_score,
    hard_kl_error,
    hard_l1_error,
    soft_kl_error,
    soft_l1_error,
)
from ._scorer import (
    BagScorer,
    bag_mae_scorer,
    bag_mse_scorer,
    bag_r2_scorer,
    bag_table,
    hard_kl_scorer,
    hard_l1_scorer,
    make_bag_scorer,
    soft_kl_scorer,
    soft_l1_scorer,
)

__all__ = [
    "BAG_METRICS",
    "KL_EPS",
    "REGRESSION_METRICS",
    "BagScorer",
    "bag_errors",
    "bag_mae_scorer",
    "bag_mean_absolute_error",
    "bag_mean_squared_error",
    "bag_mse_scorer",
    "bag_r2_score",
    "bag_r2_scorer",
    "bag_table",
    "hard_kl_error",
    "hard_kl_scorer",
    "hard_l1_error",
    "hard_l1_scorer",
    "make_bag_scorer",
    "soft_kl_error",
    "soft_kl_scorer",
    "soft_l1_error",
    "soft_l1_scorer",
]
