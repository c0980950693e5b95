"""Validation helpers shared by the estimators, metrics and bag tools."""

from ._validation import (
    PROPS_BAG_TOL,
    PROPS_SUM_TOL,
    check_bag_data,
    check_bag_membership,
    check_bags,
    check_membership,
)

__all__ = [
    "PROPS_BAG_TOL",
    "PROPS_SUM_TOL",
    "check_bag_data",
    "check_bag_membership",
    "check_bags",
    "check_membership",
]
