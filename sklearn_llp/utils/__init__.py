"""The validated bag data model shared by every part of the package.

:func:`check_bags` reads bags and proportions in any accepted form and
returns a :class:`Bags`, the one representation the classifier, metrics,
scorers and splitters work on.
"""

from ._bags import Bags
from ._validation import (
    PROPS_BAG_TOL,
    PROPS_NEG_TOL,
    PROPS_SUM_TOL,
    UNBAGGED,
    check_bags,
)

__all__ = [
    "PROPS_BAG_TOL",
    "PROPS_NEG_TOL",
    "PROPS_SUM_TOL",
    "UNBAGGED",
    "Bags",
    "check_bags",
]
