"""Cross-validation for bags: no bag, or group of overlapping bags, is ever
split; :func:`cross_val_predict` predicts out of fold, one column per class."""

from ._cross_val_predict import cross_val_predict
from ._split import BagKFold, BagShuffleSplit, subset_membership

__all__ = ["BagKFold", "BagShuffleSplit", "cross_val_predict", "subset_membership"]
