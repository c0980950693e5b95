"""Bag-level metrics and scorers for Learning from Label Proportions.

The metrics compare the class proportions a classifier predicts for every bag
with the bag's given proportions; the scorers negate them for ``scoring=`` of
GridSearchCV and cross_validate (greater is better). The regression metrics
compare a regressor's mean prediction over every bag with the bag's given
mean (``bag_mean_squared_error``, ``bag_mean_absolute_error``,
``bag_r2_score``), with their scorers.
"""

from ..core._errors import BAG_METRICS, KL_EPS
from ._bag_metrics import (
    bag_errors,
    hard_kl_error,
    hard_l1_error,
    soft_kl_error,
    soft_l1_error,
)
from ._regression import (
    BAG_REGRESSION_METRICS,
    BagRegressionScorer,
    bag_mae_scorer,
    bag_mean_absolute_error,
    bag_mean_squared_error,
    bag_mse_scorer,
    bag_r2_score,
    bag_r2_scorer,
    bag_targets_table,
    make_bag_regression_scorer,
)
from ._scorers import (
    BagScorer,
    bag_props_table,
    hard_kl_scorer,
    hard_l1_scorer,
    make_bag_scorer,
    soft_kl_scorer,
    soft_l1_scorer,
)

__all__ = [
    "BAG_METRICS",
    "BAG_REGRESSION_METRICS",
    "KL_EPS",
    "BagRegressionScorer",
    "BagScorer",
    "bag_errors",
    "bag_mae_scorer",
    "bag_mean_absolute_error",
    "bag_mean_squared_error",
    "bag_mse_scorer",
    "bag_props_table",
    "bag_r2_score",
    "bag_r2_scorer",
    "bag_targets_table",
    "hard_kl_error",
    "hard_kl_scorer",
    "hard_l1_error",
    "hard_l1_scorer",
    "make_bag_regression_scorer",
    "make_bag_scorer",
    "soft_kl_error",
    "soft_kl_scorer",
    "soft_l1_error",
    "soft_l1_scorer",
]
