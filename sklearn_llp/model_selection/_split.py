"""Splitters that keep every bag (every group of overlapping bags) on one side."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import GroupKFold, GroupShuffleSplit
from sklearn.utils import check_random_state

from ..core import bags_form, check_bags, membership_matrix, num_rows


def _is_count(size):
    return isinstance(size, Integral) and not isinstance(size, bool)


def _group_target(size, n_groups, total_rows, what):
    """``("groups", n)`` for an int size, ``("rows", n)`` for a fraction."""
    if _is_count(size):
        if not 1 <= size < n_groups:
            raise ValueError(
                f"{what}={size} bags must be at least 1 and fewer than the "
                f"{n_groups} bags (groups of connected bags)."
            )
        return "groups", int(size)
    if isinstance(size, Real) and 0 < size < 1:
        return "rows", float(size) * total_rows
    raise ValueError(
        f"{what} must be a float in (0, 1) (a fraction of the rows) or an int "
        f"(a number of bags); got {size!r}."
    )


def _draw_groups(order, group_rows, kind, target):
    """Groups from ``order`` while they bring the rows closer to ``target``."""
    taken = np.zeros(len(group_rows), dtype=bool)
    if kind == "groups":
        taken[order[:target]] = True
        return taken
    rows = 0.0
    for group in order:  # once per split, over groups: not in a training step
        if group_rows[group] < 2 * (target - rows):
            taken[group] = True
            rows += group_rows[group]
    if not taken.any():
        taken[order[np.argsort(group_rows[order], kind="stable")[0]]] = True
    return taken


def shuffle_split_groups(group_rows, test_size, train_size, rng, splitter="split"):
    """One random split of groups of rows: boolean ``(train, test)`` masks."""
    n_groups, total = len(group_rows), float(group_rows.sum())
    if test_size is None and train_size is None:
        test_size = 0.1
    if n_groups < 2:
        raise ValueError(
            f"{splitter} needs at least 2 bags (groups of connected bags) to "
            f"hold some out; got {n_groups}."
        )
    if test_size is not None:
        test_kind, test_target = _group_target(test_size, n_groups, total, "test_size")
    if train_size is not None:
        kind, target = _group_target(train_size, n_groups, total, "train_size")
    if test_size is not None and train_size is not None:
        both = test_size + train_size
        if _is_count(test_size) and _is_count(train_size) and both > n_groups:
            raise ValueError(
                f"{splitter}: the sum of train_size and test_size = {both} bags, "
                f"should be at most the number of bags {n_groups} (groups of "
                "connected bags). Reduce test_size and/or train_size."
            )
        if not (_is_count(test_size) or _is_count(train_size)) and both > 1:
            raise ValueError(
                f"{splitter}: the sum of test_size and train_size = {both}, should "
                "be in the (0, 1) range (they are fractions of the rows). Reduce "
                "test_size and/or train_size."
            )
    order = rng.permutation(n_groups)
    if test_size is not None:
        test = _draw_groups(order, group_rows, test_kind, test_target)
    if train_size is None:
        train = ~test
    else:
        rest = order if test_size is None else order[~test[order]]
        rest_rows = group_rows[rest].sum()
        if kind == "groups":
            short, left = len(rest) < target, f"{len(rest)} bag(s)"
        else:
            short = _is_count(test_size) and rest_rows < target * (1 - 1e-9)
            left = f"{rest_rows / total:.3g} of the rows"
        if test_size is not None and short:
            raise ValueError(
                f"{splitter}: test_size={test_size} and train_size={train_size} "
                f"do not fit together: the bags held out leave {left} to train "
                f"on (the bags form {n_groups} group(s) of connected bags). "
                "Reduce test_size and/or train_size."
            )
        train = _draw_groups(rest, group_rows, kind, target)
        if test_size is None:
            test = ~train
    if not train.any() or not test.any():
        raise ValueError(
            f"{splitter} leaves no bag on one side: the bags form {n_groups} "
            "group(s) of connected bags, too few or too large for "
            f"test_size={test_size}, train_size={train_size}."
        )
    return train, test


def subset_membership(bags, rows):
    """The overlapping bags that lie wholly within ``rows``, re-indexed to them.

    One side's bags of a split of overlapping bags (:ref:`overlapping_splits`).

    Parameters
    ----------
    bags : sparse matrix of shape (n_samples, n_bags) or list of arrays
        Bag membership: a sparse matrix or a list of row-index arrays.
    rows : array-like of shape (n_rows,)
        Distinct row indices, e.g. one side of a split.

    Returns
    -------
    sub_bags : sparse matrix of shape (n_rows, n_kept) or list of arrays
        The kept bags in the rows of ``X[rows]``, in the form of ``bags``.
    kept : ndarray of shape (n_kept,)
        Indices of the kept bags in ``bags``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.model_selection import subset_membership
    >>> bags = [np.array([0, 1]), np.array([1, 2]), np.array([3, 4])]
    >>> subset_membership(bags, np.array([3, 4, 5]))
    ([array([0, 1])], array([2]))
    """
    if bags_form(bags)[0] not in ("membership", "index_lists"):
        raise TypeError(
            "bags must be overlapping bags: a sparse (n_samples, n_bags) "
            "membership matrix or a list of arrays of row indices; with one bag "
            "id per sample, bags[rows] are the bags of the rows."
        )
    rows = np.asarray(rows)
    if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
        raise TypeError(
            "rows must be a 1-D array of integer row indices (the train or test "
            f"indices of a split); got shape {rows.shape} and dtype {rows.dtype}."
        )
    if rows.size and rows.min() < 0:
        raise ValueError("rows holds negative indices; pass row positions.")
    if len(np.unique(rows)) != len(rows):
        raise ValueError("rows holds repeated indices; every row must be distinct.")
    if sp.issparse(bags):
        n_samples = bags.shape[0]
        if rows.size and rows.max() >= n_samples:
            raise ValueError(
                f"rows holds indices outside [0, {n_samples}) for bags of "
                f"{n_samples} rows."
            )
    else:
        largest = max((int(np.max(b)) for b in bags if np.size(b)), default=-1)
        n_samples = max(largest, int(rows.max(initial=-1))) + 1
    # index lists go in as a matrix: n lists of one row each for n rows would
    # read as a column of bag ids
    matrix = bags if sp.issparse(bags) else membership_matrix(bags, n_samples)
    sub, kept = check_bags(matrix, n_samples=n_samples).restrict(rows)
    if sp.issparse(bags):
        return sub.membership().asformat(bags.format), kept
    return np.split(sub.members, sub.indptr[1:-1]) if len(kept) else [], kept


class _BagSplitter:
    """Reads the bags (``groups``, else ``y``); subclasses split them in ``_split``."""

    def split(self, X, y=None, groups=None):
        """Generate train and test row indices, whole bags on each side.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), sparse matrix or list of arrays
            The bags, used when ``groups`` is None.
        groups : array-like, sparse matrix or list of arrays, default=None
            The bags; takes precedence over ``y``.

        Yields
        ------
        train, test : ndarray
        """
        name, given = ("groups", groups) if groups is not None else ("y", y)
        if given is None:
            raise ValueError(
                f"{type(self).__name__} needs the bag id of every sample: pass "
                "the bags as y (as in fit(X, bags, props)) or as groups."
            )
        bags = check_bags(given, n_samples=num_rows(X), name=name)
        yield from self._split(bags, name)


class BagKFold(_BagSplitter, GroupKFold):
    """K-fold cross-validation over bags: every bag lands whole in one test fold.

    Pass it as ``cv=``: an integer ``cv`` spreads every bag over all folds
    (:ref:`model_selection`).

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at most the number of bags.
    shuffle : bool, default=False
        Shuffle the bags before assigning them to folds (else balanced by rows).
    random_state : int, RandomState instance or None, default=None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.model_selection import BagKFold
    >>> bags = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    >>> [bags[test].tolist() for _, test in BagKFold(3).split(np.zeros((9, 1)), bags)]
    [[2, 2, 2, 2], [0, 0, 0], [1, 1]]
    """

    def _split(self, bags, name):
        row_group, group_rows = bags.component_rows()
        if len(group_rows) < self.n_splits:
            raise ValueError(
                f"{type(self).__name__} needs at least {self.n_splits} bags (groups "
                f"of connected bags, when bags overlap), but the bags in {name} "
                f"form {len(group_rows)}: bags that share an instance (directly or "
                "through other bags) stay together. Lower n_splits, or use more "
                "bags or bags that overlap less."
            )
        rows = np.flatnonzero(row_group >= 0)
        for train, test in GroupKFold.split(self, rows[:, None], None, row_group[rows]):
            yield rows[train], rows[test]


class BagShuffleSplit(_BagSplitter, GroupShuffleSplit):
    """Random train/test splits of the rows, in whole bags.

    Each split holds out about ``test_size`` of the **rows**, not of the bags,
    whose sizes vary (:ref:`model_selection`).

    Parameters
    ----------
    n_splits : int, default=5
    test_size, train_size : float, int or None, default=None
        Fraction of the rows (float) or number of bags (int) on each side.
    random_state : int, RandomState instance or None, default=None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.model_selection import BagShuffleSplit
    >>> bags = np.repeat(np.arange(20), 3)
    >>> splitter = BagShuffleSplit(n_splits=2, random_state=0)
    >>> [len(test) for _, test in splitter.split(np.zeros((60, 1)), bags)]
    [6, 6]
    """

    def split_bags(self, bags, *, min_train_bags=1):
        """Generate boolean ``(train, test)`` masks over the bags of a ``Bags``.

        Parameters
        ----------
        bags : Bags
        min_train_bags : int, default=1
            Fewest bags the training side may hold (fewer: a ValueError).

        Yields
        ------
        train, test : ndarray of bool, shape (n_bags,)
        """
        if not _is_count(min_train_bags) or min_train_bags < 1:
            raise ValueError(
                f"min_train_bags must be a positive int; got {min_train_bags!r}."
            )
        _, group_rows = bags.component_rows()
        rng = check_random_state(self.random_state)
        name = type(self).__name__
        for _ in range(self.n_splits):
            train, test = shuffle_split_groups(
                group_rows, self.test_size, self.train_size, rng, splitter=name
            )
            train, test = train[bags.components], test[bags.components]
            if train.sum() < min_train_bags:
                raise ValueError(
                    f"{name} leaves {int(train.sum())} of the {len(train)} bags to "
                    f"train on, fewer than the {min_train_bags} required "
                    f"(test_size={self.test_size}, train_size={self.train_size}): use "
                    "more bags, or hold out fewer rows (or none)."
                )
            yield train, test

    def _split(self, bags, name):
        for train, test in self.split_bags(bags):
            pairs = bags.pair_bags
            yield bags.distinct_rows(train[pairs]), bags.distinct_rows(test[pairs])
