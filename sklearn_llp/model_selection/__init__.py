"""Cross-validation that never splits a bag (:ref:`model_selection`)."""

from ._cross_val_predict import cross_val_predict
from ._split import BagKFold, BagShuffleSplit, subset_membership

__all__ = ["BagKFold", "BagShuffleSplit", "cross_val_predict", "subset_membership"]
