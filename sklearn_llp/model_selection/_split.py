"""Cross-validation splitters that keep every bag on one side of a split.

With LLP, ``y`` holds the bag ids, and scikit-learn reads an integer ``cv``
(``cv=5``) of a classifier as ``StratifiedKFold`` over ``y``: it stratifies on
the bag ids, which spreads the instances of every bag over all folds. Each
training fold then holds part of every bag, with the whole bag's proportions,
and each test fold scores fragments of bags against proportions that are not
theirs, without any error or warning. The splitters here split by bag instead,
taking the bags from ``groups`` or, when ``groups`` is not given, from ``y``,
so they work inside GridSearchCV and cross_validate with or without metadata
routing.

Bags that overlap (a sparse ``(n_samples, n_bags)`` membership matrix or a
list of row-index arrays) are split by the connected components of the
bag-overlap graph: bags that share a row, directly or through a chain of
bags, form one group and stay on one side, so no row and no bag is on both
sides. :func:`subset_membership` gives the bags of each side.
"""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import GroupKFold, GroupShuffleSplit
from sklearn.utils import check_random_state

from ..core import Bags, bags_form, check_bags, membership_matrix, num_rows


def _validated_bags(splitter, X, y, groups):
    """The bags (``groups`` if given, else ``y``), validated against ``X``."""
    name, bags = ("groups", groups) if groups is not None else ("y", y)
    if bags is None:
        raise ValueError(
            f"{type(splitter).__name__} needs the bag id of every sample: pass "
            "the bags as y (as in fit(X, bags, props)) or as groups."
        )
    return check_bags(bags, n_samples=num_rows(X), name=name), name


def _too_few_groups(splitter, name, n_groups, needed):
    return ValueError(
        f"{type(splitter).__name__} needs at least {needed} bags (groups of "
        f"connected bags, when bags overlap), but the bags in {name} form "
        f"{n_groups}: bags that share an instance (directly or through other "
        "bags) stay together. Lower n_splits, or use more bags or bags that "
        "overlap less."
    )


def _is_count(size):
    return isinstance(size, Integral) and not isinstance(size, bool)


def _group_target(size, n_groups, total_rows, what):
    """Rows (float: a fraction of all rows) or groups (int) to draw."""
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
    """Groups from ``order`` until ``target`` rows (or groups) are reached.

    A group is taken when it brings the row count closer to the target, so
    the drawn rows exceed the target by less than half a group; if every
    group is larger than twice the target, the smallest one is taken.
    """
    taken = np.zeros(len(group_rows), dtype=bool)
    if kind == "groups":
        taken[order[:target]] = True
        return taken
    rows = 0.0
    for group in order:  # once per split, over groups: not in a training step
        size = group_rows[group]
        if size < 2 * (target - rows):
            taken[group] = True
            rows += size
    if not taken.any():
        candidates = order[np.argsort(group_rows[order], kind="stable")]
        taken[candidates[0]] = True
    return taken


def _check_size_sum(test_size, train_size, n_groups, splitter):
    """Refuse sizes that ask for more than there is, as scikit-learn's
    ``GroupShuffleSplit`` does: two fractions summing to more than 1, or two
    numbers of bags summing to more than the bags there are. (With one of
    each, whether they fit depends on the bags drawn: see
    :func:`shuffle_split_groups`.)"""
    if test_size is None or train_size is None:
        return
    if _is_count(test_size) and _is_count(train_size):
        if test_size + train_size > n_groups:
            raise ValueError(
                f"{splitter}: the sum of train_size and test_size = "
                f"{train_size + test_size} bags, should be at most the number of "
                f"bags {n_groups} (groups of connected bags). Reduce test_size "
                "and/or train_size."
            )
    elif not _is_count(test_size) and not _is_count(train_size):
        if test_size + train_size > 1:
            raise ValueError(
                f"{splitter}: the sum of test_size and train_size = "
                f"{test_size + train_size}, should be in the (0, 1) range (they "
                "are fractions of the rows). Reduce test_size and/or train_size."
            )


def shuffle_split_groups(group_rows, test_size, train_size, rng, splitter="split"):
    """One random split of groups of rows: boolean test and train masks.

    Sizes that ask for more than there is are refused, as scikit-learn's
    ``GroupShuffleSplit`` refuses them: two fractions (floats) summing to
    more than 1, two numbers of groups (ints) summing to more than
    ``n_groups``. With one of each, the split is refused when the groups
    left after drawing the test side cannot give ``train_size``: fewer
    groups than an int ``train_size``, or fewer rows than a float
    ``train_size`` of all the rows (test side an int).

    Parameters
    ----------
    group_rows : ndarray of shape (n_groups,)
        Rows of every group (a bag, or a group of connected bags).
    test_size, train_size : float, int or None
        Fraction of the rows (float) or number of groups (int); None is the
        complement of the other (``test_size`` 0.1 when both are None).
    rng : RandomState
    splitter : str, default="split"
        Name of the caller, for error messages.

    Returns
    -------
    train, test : ndarray of bool, shape (n_groups,)

    Raises
    ------
    ValueError
        For invalid or incompatible sizes, and when a side would be empty.
    """
    n_groups = len(group_rows)
    total = float(group_rows.sum())
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
    _check_size_sum(test_size, train_size, n_groups, splitter)
    order = rng.permutation(n_groups)
    if test_size is not None:
        test = _draw_groups(order, group_rows, test_kind, test_target)
    if train_size is None:
        train = ~test
    else:
        rest = order if test_size is None else order[~test[order]]
        if test_size is not None and (
            (kind == "groups" and len(rest) < target)
            or (
                kind == "rows"
                and _is_count(test_size)
                and group_rows[rest].sum() < target * (1 - 1e-9)
            )
        ):
            left = (
                f"{len(rest)} bag(s)"
                if kind == "groups"
                else f"{group_rows[rest].sum() / total:.3g} of the rows"
            )
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
    BagShuffleSplit : Random held-out fractions of the rows, in whole bags.
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
        bags, name = _validated_bags(self, X, y, groups)
        row_group, group_rows = bags.component_rows()
        if len(group_rows) < self.n_splits:
            raise _too_few_groups(self, name, len(group_rows), self.n_splits)
        rows = np.flatnonzero(row_group >= 0)
        for train, test in super().split(rows[:, None], None, row_group[rows]):
            yield rows[train], rows[test]


class BagShuffleSplit(GroupShuffleSplit):
    """Random train/test splits of the rows, in whole bags.

    Each split holds out about ``test_size`` of the **rows** (10 % by
    default, the validation split of the LLP training protocol), in whole
    bags: bags are drawn in random order and taken while they bring the
    held-out rows closer to the target, so the held-out rows exceed
    ``test_size`` by less than half a bag -- or, if every bag is larger than
    twice the target, the smallest bag is held out (less than one bag).
    Counting rows rather than bags matters when bag sizes vary: with census
    groups, 10 % of the bags can hold 40 % of the rows. The bag ids are
    taken from ``groups`` if given, else from ``y``.

    Use it as ``cv=`` instead of an integer: with ``y=bags``, ``cv=5`` is a
    ``StratifiedKFold`` over the bag ids, which spreads every bag over all
    folds and silently scores fragments of bags.

    ``groups`` is requested under metadata routing (as for GroupShuffleSplit)
    but is optional: when only ``y`` reaches :meth:`split`, ``y`` gives the
    bags.

    Overlapping bags (a sparse membership matrix or a list of index arrays,
    as ``groups`` or ``y``) are split by the connected components of the
    bag-overlap graph, as in :class:`BagKFold`: a group of connected bags
    counts as one bag here, and :func:`subset_membership` gives the bags of
    each side. ``LLPClassifier(validation_fraction=...)`` holds out its
    validation bags with this splitter.

    Parameters
    ----------
    n_splits : int, default=5
        Number of re-shuffling and splitting iterations.
    test_size : float or int, default=None
        Fraction of the rows (float in (0, 1)) or number of bags (int) to
        hold out. If None, the complement of ``train_size``, or 0.1 when
        ``train_size`` is None too.
    train_size : float or int, default=None
        Fraction of the rows or number of bags to train on, drawn from the
        bags not held out. If None, all of them. As with scikit-learn's
        ``GroupShuffleSplit``, two fractions summing to more than 1 or two
        numbers of bags summing to more than the bags there are raise a
        ValueError; with one of each, so does a split whose held-out bags
        leave too few bags (or rows) for ``train_size``.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws; pass an int for reproducible splits.

    See Also
    --------
    BagKFold : K-fold over bags.
    sklearn.model_selection.GroupShuffleSplit : Counts groups, not rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.model_selection import BagShuffleSplit
    >>> bags = np.repeat(np.arange(20), 3)
    >>> X = np.zeros((len(bags), 1))
    >>> splitter = BagShuffleSplit(n_splits=2, random_state=0)
    >>> [len(test) for _, test in splitter.split(X, bags)]
    [6, 6]
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

    def split_bags(self, bags, *, min_train_bags=1):
        """Generate boolean train and test masks over the bags of a ``Bags``.

        Parameters
        ----------
        bags : Bags
            Validated bags (:func:`~sklearn_llp.core.check_bags`).
        min_train_bags : int, default=1
            Fewest bags the training side may hold (bags, not groups of
            connected bags); a split with fewer raises a ValueError naming
            ``test_size``. Every split has at least one bag on each side.

        Yields
        ------
        train, test : ndarray of bool, shape (n_bags,)

        Raises
        ------
        ValueError
            For sizes that do not fit the bags (see
            :func:`shuffle_split_groups`), or a split leaving fewer than
            ``min_train_bags`` training bags.
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
                    f"{name} leaves {int(train.sum())} of the {len(train)} bags "
                    f"to train on, fewer than the {min_train_bags} required "
                    f"(test_size={self.test_size}, train_size="
                    f"{self.train_size}): use more bags, or hold out fewer "
                    "rows (or none)."
                )
            yield train, test

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
        bags, name = _validated_bags(self, X, y, groups)
        if bags.components.max() < 1:
            raise _too_few_groups(self, name, 1, 2)
        for train, test in self.split_bags(bags):
            yield _rows_of(bags, train), _rows_of(bags, test)


def _rows_of(bags: Bags, bag_mask):
    """Sorted distinct rows of the bags where ``bag_mask`` is True."""
    return np.unique(bags.members[bag_mask[bags.pair_bags]])
