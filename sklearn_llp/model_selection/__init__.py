"""Cross-validation for bags: no bag is ever split.

:class:`BagKFold` and :class:`BagShuffleSplit` keep bags (and groups of
overlapping bags) whole; :func:`subset_membership` gives the overlapping bags
of one side; :func:`cross_val_predict` gives out-of-fold predictions with one
column per class.
"""

from ._cross_val_predict import cross_val_predict
from ._split import BagKFold, BagShuffleSplit, subset_membership

__all__ = ["BagKFold", "BagShuffleSplit", "cross_val_predict", "subset_membership"]
