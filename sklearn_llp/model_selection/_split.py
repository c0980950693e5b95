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

Overlapping bags (a sparse ``(n_samples, n_bags)`` membership matrix or a
list of index arrays, as :meth:`LLPClassifier.fit` takes them) are split by
the connected components of the bag-overlap graph: bags that share an
instance, directly or through a chain of bags, form one group and stay on one
side, so no instance and no bag is on both sides. :func:`subset_membership`
gives the bags of each side, re-indexed to its rows.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.model_selection import GroupKFold, GroupShuffleSplit
from sklearn.utils.validation import _num_samples

from ..utils import check_membership


def _is_membership(bags):
    """A sparse membership matrix or a list/tuple of 1-D index arrays."""
    return sp.issparse(bags) or (
        isinstance(bags, (list, tuple))
        and len(bags) > 0
        and all(np.ndim(rows) == 1 for rows in bags)
    )


def _bag_source(splitter, y, groups):
    """The bags (``groups`` if given, else ``y``) and the argument's name."""
    name, bags = ("groups", groups) if groups is not None else ("y", y)
    if bags is None:
        raise ValueError(
            f"{type(splitter).__name__} needs the bag id of every sample: pass "
            "the bags as y (as in fit(X, bags, props)) or as groups."
        )
    return name, bags


def _bag_ids(splitter, X, y, groups):
    """Bag id of every sample: ``groups`` if given, else ``y``."""
    name, bags = _bag_source(splitter, y, groups)
    bags = np.asarray(bags)
    if bags.ndim != 1:
        raise ValueError(
            f"{type(splitter).__name__} needs one bag id per sample (1-D), or "
            "overlapping bags as a sparse (n_samples, n_bags) membership matrix "
            f"or a list of index arrays; got {name} of shape {bags.shape}."
        )
    n_samples = _num_samples(X)
    if len(bags) != n_samples:
        raise ValueError(
            f"{name} has {len(bags)} bag ids but X has {n_samples} rows; "
            f"{type(splitter).__name__} needs one bag id per row of X."
        )
    return bags


def _as_membership(bags, n_samples, name):
    """Validate overlapping bags into a CSC ``(n_samples, n_bags)`` matrix."""
    return check_membership(bags, n_samples, name)


def _instance_groups(membership):
    """Connected component of every instance in the instance-bag graph.

    Nodes are the ``n_samples`` instances and the ``n_bags`` bags, with an
    edge for every membership: two instances are in one component exactly
    when a chain of bags links them. Returns the component of every
    instance (``-1`` for an instance in no bag) and the number of components
    that hold a bag.
    """
    n_samples = membership.shape[0]
    graph = sp.bmat([[None, membership], [membership.T, None]], format="csr")
    _, labels = connected_components(graph, directed=False)
    bagged = np.diff(membership.tocsr().indptr) > 0
    groups = np.where(bagged, labels[:n_samples], -1)
    n_groups = len(np.unique(labels[n_samples:]))
    return groups, n_groups


def _split_overlapping(split, splitter, X, bags, name, min_groups):
    """Split the components of overlapping bags with ``split`` (the parent's).

    Rows that belong to no bag carry no proportions and are on neither side.
    """
    n_samples = _num_samples(X)
    groups, n_groups = _instance_groups(_as_membership(bags, n_samples, name))
    if n_groups < min_groups:
        raise ValueError(
            f"{type(splitter).__name__} needs at least {min_groups} groups of "
            f"connected bags, but the bags in {name} form {n_groups}: bags that "
            "share an instance (directly or through other bags) stay together. "
            "Lower n_splits or use bags that overlap less."
        )
    rows = np.flatnonzero(groups >= 0)
    for train, test in split(np.zeros((len(rows), 1)), None, groups[rows]):
        yield rows[train], rows[test]


def subset_membership(bags, rows):
    """The overlapping bags that lie wholly within ``rows``, re-indexed to them.

    With overlapping bags, :class:`BagKFold` and :class:`BagShuffleSplit`
    yield instance indices; this gives the bags of one side of a split, as
    ``fit(X[rows], sub_bags, props[kept])`` and the metrics take them. Bags
    with a member outside ``rows`` are dropped (with those splitters, every
    bag lies wholly on one side, so none is dropped).

    Parameters
    ----------
    bags : sparse matrix of shape (n_samples, n_bags) or list of arrays
        Bag membership: nonzero entries of a sparse matrix, or a list of
        ``n_bags`` arrays of row indices.
    rows : array-like of shape (n_rows,)
        Distinct integer row indices, e.g. the ``train`` or ``test`` array of
        a split.

    Returns
    -------
    sub_bags : sparse matrix of shape (n_rows, n_kept) or list of arrays
        Membership of the kept bags in the rows of ``X[rows]``, in the form of
        ``bags``: a sparse matrix (same format) or a list of ``n_kept`` arrays
        of distinct positions in ``rows`` (sorted when ``rows`` is, as the
        indices of a split are).
    kept : ndarray of shape (n_kept,)
        Indices of the kept bags in ``bags``, in order: ``props[kept]`` are
        their proportions (one row per bag).

    See Also
    --------
    BagKFold, BagShuffleSplit : Split overlapping bags into connected groups.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.model_selection import subset_membership
    >>> bags = [np.array([0, 1]), np.array([1, 2]), np.array([3, 4])]
    >>> sub_bags, kept = subset_membership(bags, np.array([3, 4, 5]))
    >>> sub_bags, kept
    ([array([0, 1])], array([2]))
    """
    if not _is_membership(bags):
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
    membership = _as_membership(bags, n_samples, "bags")
    position = np.full(n_samples, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    sizes = np.diff(membership.indptr)
    pair_bags = np.repeat(np.arange(len(sizes)), sizes)
    pair_rows = position[membership.indices]
    inside = np.bincount(pair_bags, weights=pair_rows >= 0, minlength=len(sizes))
    kept = np.flatnonzero(inside == sizes)
    keep_pair = np.isin(pair_bags, kept)
    kept_sizes = sizes[kept]
    indices = pair_rows[keep_pair]
    if not sp.issparse(bags):
        if not len(kept):
            return [], kept
        return np.split(indices, np.cumsum(kept_sizes)[:-1]), kept
    indptr = np.concatenate([[0], np.cumsum(kept_sizes)])
    sub = sp.csc_matrix(
        (np.ones(len(indices)), indices, indptr), shape=(len(rows), len(kept))
    )
    return sub.asformat(bags.format), kept


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

    Overlapping bags -- a sparse ``(n_samples, n_bags)`` membership matrix or
    a list of index arrays, passed as ``groups`` or ``y`` -- are split by the
    connected components of the bag-overlap graph: bags linked by shared
    instances form one group and land in the same fold, so no instance and no
    bag is on both sides. Rows in no bag are on neither side. The splits are
    instance indices; :func:`subset_membership` gives the bags of each side.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, 2 at least and at most the number of bags (of groups
        of connected bags, with overlapping bags).
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

    Overlapping bags as lists of row indices: bags 0 and 1 share row 2, so
    they stay together; each side's bags come from
    :func:`subset_membership`.

    >>> from sklearn_llp.model_selection import subset_membership
    >>> lists = [np.array([0, 1, 2]), np.array([2, 3]), np.array([4, 5]),
    ...          np.array([6, 7, 8])]
    >>> X = np.zeros((9, 1))
    >>> for train, test in BagKFold(n_splits=3).split(X, groups=lists):
    ...     test_bags, kept = subset_membership(lists, test)
    ...     print(test, kept, [b.tolist() for b in test_bags])
    [0 1 2 3] [0 1] [[0, 1, 2], [2, 3]]
    [6 7 8] [3] [[0, 1, 2]]
    [4 5] [2] [[0, 1]]
    """

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None):
        super().__init__(n_splits=n_splits, shuffle=shuffle, random_state=random_state)

    def split(self, X, y=None, groups=None):
        """Generate train and test indices, whole bags on each side.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), sparse matrix or list of arrays
            Bag id of every sample, or overlapping bags (a sparse
            ``(n_samples, n_bags)`` membership matrix or a list of index
            arrays); used when ``groups`` is None.
        groups : array-like of shape (n_samples,), sparse matrix or list of \
arrays, default=None
            The bags, in the same forms as ``y``; takes precedence over ``y``.

        Yields
        ------
        train : ndarray
            Training set indices of the split.
        test : ndarray
            Test set indices of the split.
        """
        name, bags = _bag_source(self, y, groups)
        if _is_membership(bags):
            yield from _split_overlapping(
                super().split, self, X, bags, name, self.n_splits
            )
        else:
            yield from super().split(X, y, _bag_ids(self, X, y, groups))


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

    Overlapping bags (a sparse membership matrix or a list of index arrays,
    as ``groups`` or ``y``) are split by the connected components of the
    bag-overlap graph, as in :class:`BagKFold`: ``test_size`` and
    ``train_size`` then count groups of connected bags, and
    :func:`subset_membership` gives the bags of each side.

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
        y : array-like of shape (n_samples,), sparse matrix or list of arrays
            Bag id of every sample, or overlapping bags (a sparse
            ``(n_samples, n_bags)`` membership matrix or a list of index
            arrays); used when ``groups`` is None.
        groups : array-like of shape (n_samples,), sparse matrix or list of \
arrays, default=None
            The bags, in the same forms as ``y``; takes precedence over ``y``.

        Yields
        ------
        train : ndarray
            Training set indices of the split.
        test : ndarray
            Test set indices of the split.
        """
        name, bags = _bag_source(self, y, groups)
        if _is_membership(bags):
            yield from _split_overlapping(super().split, self, X, bags, name, 2)
        else:
            yield from super().split(X, y, _bag_ids(self, X, y, groups))
