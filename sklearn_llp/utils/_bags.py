"""``Bags``: the one validated representation of bags and their proportions."""

from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


class Bags:
    """Validated bags: which rows each bag holds and, if given, its proportions.

    Built once by :func:`~sklearn_llp.utils.check_bags` from whatever form
    the user passed (one bag id per row, composite keys, a membership matrix,
    lists of row indices; proportions sample-aligned or as a per-bag table)
    and used as it is by the classifier, its batch sampler and validation
    split, the metrics, scorers and splitters. Bags are numbered
    ``0..n_bags-1`` in the order of their sorted ids.

    Internally a set of bags is a list of (bag, row) pairs, bag after bag:
    bag ``j`` holds rows ``members[indptr[j]:indptr[j + 1]]``. Disjoint bags
    have one pair per bagged row; overlapping bags share rows.

    Parameters
    ----------
    indptr : ndarray of shape (n_bags + 1,)
        Offsets of every bag's run of pairs.
    members : ndarray of shape (n_pairs,)
        Row of every pair, sorted within a bag.
    ids : ndarray of shape (n_bags,)
        The user's id of every bag (``0..n_bags-1`` for membership forms).
    n_samples : int
        Number of rows the bags index into.
    props : ndarray of shape (n_bags, n_classes), default=None
        Proportions of every bag, rows summing to exactly 1.
    classes : ndarray of shape (n_classes,), default=None
        Class label of every column of ``props``.
    weights : ndarray of shape (n_samples,), default=None
        Sample weight of every row; None weighs all rows equally. Within a
        bag, predictions are averaged with these weights.
    bag_weights : ndarray of shape (n_bags,), default=None
        Weight of every bag in means over bags; None counts every bag once.
        Set only where each row is its own bag (supervised data), so that a
        row's sample weight weighs its cross-entropy as in scikit-learn.

    Examples
    --------
    >>> from sklearn_llp.utils import check_bags
    >>> bags = check_bags(["b", "a", "a", "b"], [[0, 1], [1, 0], [1, 0], [0, 1]])
    >>> bags.ids.tolist(), bags.sizes.tolist()
    (['a', 'b'], [2, 2])
    >>> bags.props.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(
        self,
        indptr,
        members,
        ids,
        n_samples,
        props=None,
        classes=None,
        weights=None,
        bag_weights=None,
    ):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.members = np.asarray(members, dtype=np.int64)
        self.ids = np.asarray(ids)
        self.n_samples = int(n_samples)
        self.props = props
        self.classes = classes
        self.weights = weights
        self.bag_weights = bag_weights

    def __repr__(self):
        classes = "" if self.classes is None else f", classes={self.classes.tolist()}"
        return (
            f"Bags(n_bags={self.n_bags}, n_samples={self.n_samples}"
            f"{', overlapping' if self.overlapping else ''}{classes})"
        )

    def __len__(self):
        return self.n_bags

    @property
    def n_bags(self):
        return len(self.indptr) - 1

    @property
    def n_classes(self):
        return None if self.props is None else self.props.shape[1]

    @property
    def sizes(self):
        """Number of rows of every bag."""
        return np.diff(self.indptr)

    @cached_property
    def pair_bags(self):
        """Bag of every (bag, row) pair."""
        return np.repeat(np.arange(self.n_bags), self.sizes)

    @cached_property
    def overlapping(self):
        """Whether some row is in more than one bag."""
        if not len(self.members):
            return False
        counts = np.bincount(self.members, minlength=self.n_samples)
        return bool(counts.max() > 1)

    @cached_property
    def codes(self):
        """Bag of every row (disjoint bags only); -1 for a row in no bag."""
        if self.overlapping:
            raise ValueError("Overlapping bags have no single bag per row.")
        codes = np.full(self.n_samples, -1, dtype=np.int64)
        codes[self.members] = self.pair_bags
        return codes

    def total_weights(self):
        """Total sample weight of every bag (its size when unweighted)."""
        if self.weights is None:
            return self.sizes.astype(np.float64)
        return np.bincount(
            self.pair_bags, weights=self.weights[self.members], minlength=self.n_bags
        )

    def membership(self):
        """Sparse ``(n_samples, n_bags)`` indicator matrix (CSC)."""
        return sp.csc_matrix(
            (np.ones(len(self.members), dtype=bool), self.members, self.indptr),
            shape=(self.n_samples, self.n_bags),
        )

    @cached_property
    def components(self):
        """Connected group of every bag: bags sharing a row, directly or
        through other bags, are in one group (each bag its own if disjoint)."""
        if not self.overlapping:
            return np.arange(self.n_bags)
        membership = self.membership().tocsr()
        return connected_components(membership.T @ membership, directed=False)[1]

    def component_rows(self):
        """Component of every row (-1 for a row in no bag) and the number of
        distinct rows in every component."""
        rows = np.full(self.n_samples, -1, dtype=np.int64)
        rows[self.members] = self.components[self.pair_bags]
        n_components = int(self.components.max(initial=-1)) + 1
        return rows, np.bincount(rows[rows >= 0], minlength=n_components)

    def select(self, bag_index):
        """The bags ``bag_index`` (a boolean mask or indices), same rows."""
        bag_index = np.arange(self.n_bags)[bag_index]
        sizes = self.sizes[bag_index]
        starts = self.indptr[bag_index]
        pairs = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(
            sizes.sum()
        )
        return Bags(
            np.concatenate([[0], np.cumsum(sizes)]),
            self.members[pairs],
            self.ids[bag_index],
            self.n_samples,
            props=None if self.props is None else self.props[bag_index],
            classes=self.classes,
            weights=self.weights,
            bag_weights=None
            if self.bag_weights is None
            else self.bag_weights[bag_index],
        )

    def restrict(self, rows):
        """The bags lying wholly within ``rows``, re-indexed to ``X[rows]``.

        Parameters
        ----------
        rows : ndarray of shape (n_rows,)
            Distinct row indices, e.g. one side of a split.

        Returns
        -------
        bags : Bags
            Over ``n_rows`` rows; bags with a member outside ``rows`` are
            dropped.
        kept : ndarray
            Indices of the kept bags in ``self``.
        """
        position = np.full(self.n_samples, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        inside = position[self.members] >= 0
        kept = np.flatnonzero(
            np.bincount(self.pair_bags, weights=inside, minlength=self.n_bags)
            == self.sizes
        )
        sub = self.select(kept)
        sub.members = position[sub.members]
        sub.n_samples = len(rows)
        if self.weights is not None:
            sub.weights = self.weights[rows]
        return sub, kept
