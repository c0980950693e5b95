"""Bag-level metrics and scorers for Learning from Label Proportions.

The metrics compare the class proportions a classifier predicts for every bag
with the bag's given proportions; the scorers negate them for ``scoring=`` of
GridSearchCV and cross_validate (greater is better).
"""

from ._bag_metrics import (
    BAG_METRICS,
    KL_EPS,
    bag_errors,
    hard_kl_error,
    hard_l1_error,
    soft_kl_error,
    soft_l1_error,
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
    "KL_EPS",
    "BagScorer",
    "bag_errors",
    "bag_props_table",
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
