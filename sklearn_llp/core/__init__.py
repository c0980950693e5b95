"""The task-neutral core: bags, the one reader of their forms, decisions.

:func:`check_bags` reads bags and their per-bag values (class proportions,
or bag means for regression) in any accepted form and returns a
:class:`Bags`, the one immutable representation that estimators, metrics,
scorers and splitters work on.
"""

from ._bags import Bags
from ._decision import class_prior as class_prior
from ._decision import decide as decide
from ._decision import fit_decision as fit_decision
from ._errors import bag_errors_of as bag_errors_of
from ._errors import bag_estimates_of as bag_estimates_of
from ._errors import check_bags_and_proba as check_bags_and_proba
from ._errors import check_proba as check_proba
from ._errors import errors_of_pairs as errors_of_pairs
from ._mixins import LLPClassifierMixin as LLPClassifierMixin
from ._mixins import (
    refuse_sklearn_cross_val_predict as refuse_sklearn_cross_val_predict,
)
from ._mixins import restore_on_error as restore_on_error
from ._read import (
    PROPS_BAG_TOL,
    PROPS_NEG_TOL,
    PROPS_SUM_TOL,
    UNBAGGED,
    check_bag_targets,
    check_bags,
    check_fit_inputs,
)
from ._read import num_rows as num_rows

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
