"""The task-neutral core: bags, the one reader of their forms, bag errors.

:func:`check_bags` reads bags and their per-bag values in any accepted form
into a :class:`Bags`, which estimators, metrics, scorers and splitters use.
"""

from ._bags import CLASSIFICATION as CLASSIFICATION
from ._bags import REGRESSION as REGRESSION
from ._bags import Bags
from ._decision import class_prior as class_prior
from ._decision import decide as decide
from ._decision import fit_decision as fit_decision
from ._errors import BAG_METRICS as BAG_METRICS
from ._errors import KL_EPS as KL_EPS
from ._errors import METRICS as METRICS
from ._errors import REGRESSION_METRICS as REGRESSION_METRICS
from ._errors import bag_errors_of as bag_errors_of
from ._errors import bag_estimates_of as bag_estimates_of
from ._errors import bag_means as bag_means
from ._errors import check_bags_and_output as check_bags_and_output
from ._errors import check_bags_and_proba as check_bags_and_proba
from ._errors import check_predictions as check_predictions
from ._errors import check_proba as check_proba
from ._errors import decision_of as decision_of
from ._mixins import LLPClassifierMixin as LLPClassifierMixin
from ._mixins import LLPRegressorMixin as LLPRegressorMixin
from ._mixins import refuse_meaningless_cv as refuse_meaningless_cv
from ._mixins import restore_on_error as restore_on_error
from ._partitions import dask_bag_errors as dask_bag_errors
from ._partitions import is_dask as is_dask
from ._partitions import over_dask_partitions as over_dask_partitions
from ._partitions import row_partitions as row_partitions
from ._read import (
    PROPS_BAG_TOL,
    PROPS_NEG_TOL,
    PROPS_SUM_TOL,
    UNBAGGED,
    check_bags,
    check_fit_inputs,
)
from ._read import attach_table as attach_table
from ._read import bags_form as bags_form
from ._read import membership_matrix as membership_matrix
from ._read import num_rows as num_rows
from ._read import values_argument as values_argument

__all__ = [
    "PROPS_BAG_TOL",
    "PROPS_NEG_TOL",
    "PROPS_SUM_TOL",
    "UNBAGGED",
    "Bags",
    "check_bags",
    "check_fit_inputs",
]
