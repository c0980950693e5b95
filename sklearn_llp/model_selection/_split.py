"""Cross-validation splitters that keep every bag on one side of a split.

With LLP, ``y`` holds the bag ids, and scikit-learn reads an integer ``cv``
(``cv=5``) of a classifier as ``StratifiedKFold`` over ``y``: it stratifies on
the bag ids, which spreads the instances of every bag over all folds. Each
training fold then holds part of every bag, with the whole bag's proportions,
and each test fold scores fragments of bags against proportions that are not
theirs, without any error or warning. The splitters here split by bag instead,
taking the bag ids from ``groups`` or, when ``groups`` is not given, from
``y``, so they work inside GridSearchCV and cross_validate with or without
metadata routing.
"""

import numpy as np
from sklearn.model_selection import GroupKFold, GroupShuffleSplit


def _bag_ids(splitter, y, groups):
    """Bag id of every sample: ``groups`` if given, else ``y``."""
    bags = groups if groups is not None else y
    if bags is None:
        raise ValueError(
            f"{type(splitter).__name__} needs the bag id of every sample: pass "
            "the bags as y (as in fit(X, bags, props)) or as groups."
        )
    bags = np.asarray(bags)
    if bags.ndim != 1:
        raise ValueError(
            f"{type(splitter).__name__} needs one bag id per sample (1-D); got "
            f"{'groups' if groups is not None else 'y'} of shape {bags.shape}."
        )
    return bags


class BagKFold(GroupKFold):
    """K-fold cross-validation over bags: no bag is ever split.

    Every bag lands whole in exactly one test fold, so each sample is tested
    exactly once. The bag ids are taken from ``groups`` if given, else from
    ``y``, which holds them in LLP (``fit(X, bags, props)``).

    Use it as ``cv=`` of GridSearchCV or cross_validate instead of an integer:
    with ``y=bags``, ``cv=5`` is a ``StratifiedKFold`` over the bag ids, which
    spreads every bag over all folds and silently scores fragments of bags.

    ``groups`` is requested under metadata routing (as for GroupKFold) but is
    optional: when only ``y`` reaches :meth:`split`, ``y`` gives the bags.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, 2 at least and at most the number of bags.
    shuffle : bool, default=False
        Whether to shuffle the bags before assigning them to folds. Without
        shuffling, folds are balanced by number of samples.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffling when ``shuffle=True``.

    See Also
    --------
    BagShuffleSplit : Random held-out fractions of the bags.
    sklearn.model_selection.GroupKFold : The splitter this one extends.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.model_selection import BagKFold
    >>> bags = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    >>> X = np.zeros((len(bags), 1))
    >>> for train, test in BagKFold(n_splits=3).split(X, bags):
    ...     print(np.unique(bags[train]), np.unique(bags[test]))
    [0 1] [2]
    [1 2] [0]
    [0 2] [1]
    """

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None):
        super().__init__(n_splits=n_splits, shuffle=shuffle, random_state=random_state)

    def split(self, X, y=None, groups=None):
        """Generate train and test indices, whole bags on each side.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Bag id of every sample; used when ``groups`` is None.
        groups : array-like of shape (n_samples,), default=None
            Bag id of every sample; takes precedence over ``y``.

        Yields
        ------
        train : ndarray
            Training set indices of the split.
        test : ndarray
            Test set indices of the split.
        """
        return super().split(X, y, _bag_ids(self, y, groups))


class BagShuffleSplit(GroupShuffleSplit):
    """Random train/test splits of the bags: no bag is ever split.

    Each split holds out a random fraction of the bags, whole: 10 % by
    default, the validation split of the LLP training protocol.
    The bag ids are taken from ``groups`` if given, else from ``y``.

    Use it as ``cv=`` instead of an integer: with ``y=bags``, ``cv=5`` is a
    ``StratifiedKFold`` over the bag ids, which spreads every bag over all
    folds and silently scores fragments of bags.

    ``groups`` is requested under metadata routing (as for GroupShuffleSplit)
    but is optional: when only ``y`` reaches :meth:`split`, ``y`` gives the
    bags.

    Parameters
    ----------
    n_splits : int, default=5
        Number of re-shuffling and splitting iterations.
    test_size : float or int, default=None
        Fraction (float) or number (int) of bags to hold out; a fraction is
        rounded up, so at least one bag is held out. If None, the complement of
        ``train_size``, or 0.1 when ``train_size`` is None too.
    train_size : float or int, default=None
        Fraction or number of bags to train on. If None, the complement of
        ``test_size``.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws; pass an int for reproducible splits.

    See Also
    --------
    BagKFold : K-fold over bags.
    sklearn.model_selection.GroupShuffleSplit : The splitter this one extends.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.model_selection import BagShuffleSplit
    >>> bags = np.repeat(np.arange(20), 3)
    >>> X = np.zeros((len(bags), 1))
    >>> splitter = BagShuffleSplit(n_splits=2, random_state=0)
    >>> [len(set(bags[test])) for _, test in splitter.split(X, bags)]
    [2, 2]
    """

    def __init__(
        self, n_splits=5, *, test_size=None, train_size=None, random_state=None
    ):
        super().__init__(
            n_splits=n_splits,
            test_size=test_size,
            train_size=train_size,
            random_state=random_state,
        )
        self._default_test_size = 0.1

    def split(self, X, y=None, groups=None):
        """Generate train and test indices, whole bags on each side.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Bag id of every sample; used when ``groups`` is None.
        groups : array-like of shape (n_samples,), default=None
            Bag id of every sample; takes precedence over ``y``.

        Yields
        ------
        train : ndarray
            Training set indices of the split.
        test : ndarray
            Test set indices of the split.
        """
        return super().split(X, y, _bag_ids(self, y, groups))
