"""``Bags``: the one validated representation of bags and their per-bag values."""

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


def _read_only(values, dtype=None):
    """``values`` as an array nobody can write to, copied if the caller holds it."""
    if values is None:
        return None
    array = np.asarray(values, dtype=dtype)
    if array.flags.writeable:
        if array is values or not array.flags.owndata:  # shared with the caller
            array = array.copy()
        array.flags.writeable = False
    return array


def _check_weights(sample_weight, n_samples):
    """Validated sample weights; None when they weigh nothing (all equal)."""
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sample_weight must hold numbers; {exc}") from exc
    if weights.ndim == 0:
        weights = np.full(n_samples, float(weights))
    if weights.shape != (n_samples,):
        raise ValueError(
            f"sample_weight has shape {weights.shape} but there are {n_samples} rows "
            "(X, bags); give one weight per row."
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("sample_weight must be finite and non-negative.")
    if not weights.sum() > 0:
        raise ValueError(
            "sample_weight is zero for every row: nothing to learn from; give "
            "some rows a positive weight."
        )
    if np.all(weights == weights[0]):
        return None  # equal weights weigh nothing: exactly as unweighted
    return weights


def _is_default_index(index):
    """An unnamed ``RangeIndex`` from 0: row numbers, not bag ids."""
    return (
        isinstance(index, pd.RangeIndex)
        and index.name is None
        and index.start == 0
        and index.step == 1
    )


def release_of(values):
    """A release's ``attrs`` (a table's, or a dict) with its named class
    columns; None when ``values`` are no release."""
    attrs = values if isinstance(values, dict) else getattr(values, "attrs", None)
    if not attrs or "noise_scale" not in attrs:
        return None
    columns = getattr(values, "columns", None)
    named = columns is not None and not _is_default_index(columns)
    if attrs.get("counts") is not None and named:
        return {**attrs, "counts": {**attrs["counts"], "columns": list(columns)}}
    return dict(attrs)


def _frozen(array):
    """A freshly computed array, made read-only in place."""
    array.flags.writeable = False
    return array


def _take(values, index):
    return None if values is None else values[index]


#: The two tasks a :class:`Bags` can carry values for.
CLASSIFICATION, REGRESSION = "classification", "regression"
_INT, _FLOAT = np.int64, np.float64
_ARRAYS = [("indptr", _INT), ("members", _INT), ("ids", None), ("values", _FLOAT)]
_ARRAYS += [("classes", None), ("weights", _FLOAT), ("bag_weights", _FLOAT)]


@dataclass(frozen=True, eq=False, repr=False)
class Bags:
    """Validated bags: which rows each bag holds and, if given, its values.

    Built by :func:`~sklearn_llp.core.check_bags`; immutable (``with_*``,
    :meth:`select` and :meth:`restrict` return new objects). Bag ``j`` holds
    rows ``members[indptr[j]:indptr[j + 1]]``; ``values`` are class
    proportions (columns ``classes``) or bag means, by ``task``; ``weights``
    weigh rows, ``bag_weights`` bags; ``release``, the ``attrs`` of the
    privacy release the values were read from (its noise and raw counts).

    Examples
    --------
    >>> from sklearn_llp.core import check_bags
    >>> bags = check_bags(["b", "a", "a", "b"], [[0, 1], [1, 0], [1, 0], [0, 1]])
    >>> bags
    Bags(n_bags=2, n_samples=4, classes=[0, 1])
    >>> bags.ids.tolist(), bags.sizes.tolist(), bags.props.tolist()
    (['a', 'b'], [2, 2], [[1.0, 0.0], [0.0, 1.0]])
    >>> bags.with_weights([1.0, 2.0, 0.0, 1.0]).sizes.tolist()  # weight 0: out
    [1, 2]
    """

    indptr: np.ndarray
    members: np.ndarray
    ids: np.ndarray
    n_samples: int
    values: np.ndarray | None = None
    task: str | None = None
    classes: np.ndarray | None = None
    weights: np.ndarray | None = None
    bag_weights: np.ndarray | None = None
    positional_classes: bool = False
    release: dict | None = None

    def __post_init__(self):
        # frozen: the converted values go in through object.__setattr__
        for name, dtype in _ARRAYS:
            object.__setattr__(self, name, _read_only(getattr(self, name), dtype))
        object.__setattr__(self, "n_samples", int(self.n_samples))
        object.__setattr__(self, "positional_classes", bool(self.positional_classes))
        self._check_shapes()

    def __setstate__(self, state):
        # unpickled arrays (e.g. in a joblib worker) come back writable
        vars(self).update(state)
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False

    def _check_shapes(self):
        """Catch an inconsistent construction (a bug, not a user error)."""
        n_bags, n_pairs = self.n_bags, int(self.indptr[-1]) if len(self.indptr) else 0
        expected = {
            "ids": (self.ids, (n_bags,)),
            "members": (self.members, (n_pairs,)),
            "weights": (self.weights, (self.n_samples,)),
            "bag_weights": (self.bag_weights, (n_bags,)),
        }
        if self.values is not None:
            if self.task not in (CLASSIFICATION, REGRESSION):
                raise ValueError(f"Bags.task must name the values' task; {self.task}")
            width = len(self.classes) if self.task == CLASSIFICATION else 1
            expected["values"] = (self.values, (n_bags, width))
        for name, (value, shape) in expected.items():
            if value is not None and value.shape != shape:
                raise ValueError(
                    f"Bags.{name} has shape {value.shape}; expected {shape}."
                )

    def __repr__(self):
        classes = "" if self.classes is None else f", classes={self.classes.tolist()}"
        if self.task == REGRESSION:
            classes = ", means"
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
    def props(self):
        """Class proportions ``(n_bags, n_classes)``, or the means as one column."""
        return self.values

    @property
    def means(self):
        """Mean target of every bag, ``(n_bags,)``; None unless regression."""
        return self.values[:, 0] if self.task == REGRESSION else None

    @property
    def n_classes(self):
        return len(self.classes) if self.task == CLASSIFICATION else None

    @property
    def sizes(self):
        """Number of rows of every bag."""
        return np.diff(self.indptr)

    @cached_property
    def pair_bags(self):
        """Bag of every (bag, row) pair."""
        return _frozen(np.repeat(np.arange(self.n_bags), self.sizes))

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
        return _frozen(codes)

    def distinct_rows(self, pairs=slice(None)):
        """The sorted distinct rows of ``pairs`` (default all), by a count."""
        counts = np.bincount(self.members[pairs], minlength=self.n_samples)
        return np.flatnonzero(counts)

    def total_weights(self):
        """Total sample weight of every bag (its size when unweighted)."""
        if self.weights is None:
            return self.sizes.astype(np.float64)
        return np.bincount(
            self.pair_bags, weights=self.weights[self.members], minlength=self.n_bags
        )

    def loss_weights(self, totals=None):
        """Weight of every bag in a loss: total sample weight x ``bag_weights``."""
        totals = self.total_weights() if totals is None else np.asarray(totals, float)
        return totals if self.bag_weights is None else totals * self.bag_weights

    def released_counts(self):
        """The release's raw class counts of every bag (NaN: none), or None."""
        counts = (self.release or {}).get("counts")
        if counts is None or self.task != CLASSIFICATION:
            return None
        index = pd.Index(counts["ids"], tupleize_cols=False)
        frame = pd.DataFrame(counts["values"], index=index, dtype=np.float64)
        if counts.get("columns") is not None:  # named: matched by name
            frame = frame.set_axis(counts["columns"], axis=1).reindex(
                columns=self.classes
            )
        return frame.reindex(pd.Index(self.ids, tupleize_cols=False)).to_numpy()

    def membership(self):
        """Sparse ``(n_samples, n_bags)`` indicator matrix (CSC)."""
        return sp.csc_matrix(
            (np.ones(len(self.members), dtype=bool), self.members, self.indptr),
            shape=(self.n_samples, self.n_bags),
        )

    @cached_property
    def components(self):
        """Connected group of every bag (bags sharing a row are in one group)."""
        if not self.overlapping:
            return _frozen(np.arange(self.n_bags))
        membership = self.membership().tocsr()
        groups = connected_components(membership.T @ membership, directed=False)[1]
        return _frozen(groups)

    @property
    def n_groups(self):
        """Number of :attr:`components`: the units a held-out split takes whole."""
        return int(self.components.max(initial=-1)) + 1

    def component_rows(self):
        """Component of every row (-1: no bag), and distinct rows per component."""
        rows = np.full(self.n_samples, -1, dtype=np.int64)
        rows[self.members] = self.components[self.pair_bags]
        return rows, np.bincount(rows[rows >= 0], minlength=self.n_groups)

    def select(self, bag_index):
        """The bags ``bag_index`` (a boolean mask or indices), same rows."""
        bag_index = np.arange(self.n_bags)[bag_index]
        sizes = self.sizes[bag_index]
        starts = self.indptr[bag_index]
        pairs = np.repeat(starts - np.cumsum(sizes) + sizes, sizes)
        pairs += np.arange(sizes.sum())
        return replace(
            self,
            indptr=np.concatenate([[0], np.cumsum(sizes)]),
            members=self.members[pairs],
            ids=self.ids[bag_index],
            values=_take(self.values, bag_index),
            bag_weights=_take(self.bag_weights, bag_index),
        )

    def restrict(self, rows):
        """``(bags, kept)``: the bags wholly within ``rows``, re-indexed to them."""
        rows = np.asarray(rows, dtype=np.int64)
        position = np.full(self.n_samples, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        inside = position[self.members] >= 0
        n_inside = np.bincount(self.pair_bags, weights=inside, minlength=self.n_bags)
        kept = np.flatnonzero(n_inside == self.sizes)
        sub = self.select(kept)
        weights, bag_weights = _take(self.weights, rows), sub.bag_weights
        if weights is not None and np.all(weights == weights[:1]):
            # equal weights weigh nothing, as check_bags reads them
            weights = bag_weights = None
        given = dict(n_samples=len(rows), weights=weights, bag_weights=bag_weights)
        return replace(sub, members=position[sub.members], **given), kept

    def with_values(self, values, task, classes=None, *, positional=False):
        """The same bags carrying per-bag ``values`` of ``task`` (a new object)."""
        given = dict(classes=classes, positional_classes=positional)
        return replace(self, values=values, task=task, **given)

    def with_weights(self, sample_weight):
        """The bags weighted by ``sample_weight``; emptied bags are dropped."""
        weights = _check_weights(sample_weight, self.n_samples)
        if sample_weight is None:
            return self
        if self.weights is not None:
            if weights is not None and np.array_equal(weights, self.weights):
                return self
            raise ValueError(
                "sample_weight differs from the weights these bags already carry "
                "(a Bags validated with sample_weight); pass the same weights or "
                "none, or validate the bags afresh from their ids with the new "
                "sample_weight."
            )
        if weights is None:
            return self
        keep = weights[self.members] > 0
        if keep.all():
            return replace(self, weights=weights)
        sizes = np.bincount(self.pair_bags[keep], minlength=self.n_bags)
        full = sizes > 0
        return replace(
            self,
            indptr=np.concatenate([[0], np.cumsum(sizes[full])]),
            members=self.members[keep],
            ids=self.ids[full],
            values=_take(self.values, full),
            bag_weights=_take(self.bag_weights, full),
            weights=weights,
        )
