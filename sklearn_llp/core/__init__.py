"""The validated bag data model shared by every part of the package.

:func:`check_bags` reads bags and proportions in any accepted form and
returns a :class:`Bags`, the one (immutable) representation the classifier,
metrics, scorers and splitters work on; :func:`check_fit_inputs` is the one
reading of the inputs of ``fit`` (bags and proportions, or labels).
"""

from ._bags import Bags
from ._read import (
    PROPS_BAG_TOL,
    PROPS_NEG_TOL,
    PROPS_SUM_TOL,
    UNBAGGED,
    check_bag_targets,
    check_bags,
    check_fit_inputs,
)

__all__ = [
    "PROPS_BAG_TOL",
    "PROPS_NEG_TOL",
    "PROPS_SUM_TOL",
    "UNBAGGED",
    "Bags",
    "check_bag_targets",
    "check_bags",
    "check_fit_inputs",
]
