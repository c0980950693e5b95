"""Cross-validation for bags: no bag is ever split.

:class:`BagKFold` and :class:`BagShuffleSplit` take one bag id per sample,
or overlapping bags (a sparse membership matrix or a list of index arrays),
which they keep together by connected components; :func:`subset_membership`
gives the overlapping bags of one side of a split;
:func:`cross_val_predict` gives out-of-fold predictions with one column per
class.
"""

from ._cross_val_predict import cross_val_predict
from ._split import BagKFold, BagShuffleSplit, subset_membership

__all__ = ["BagKFold", "BagShuffleSplit", "cross_val_predict", "subset_membership"]
