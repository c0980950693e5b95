"""Cross-validation splitters for bags: no bag is ever split."""

from ._split import BagKFold, BagShuffleSplit

__all__ = ["BagKFold", "BagShuffleSplit"]
