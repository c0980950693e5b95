"""What the bag generators share."""

import warnings
import weakref

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, _fit_context

from ..core import UNBAGGED, bag_means, num_rows
from ._proportions import id_bags, label_proportions

#: make_bags warns when numeric labels take more distinct values than this.
_MANY_LABELS = 20
#: id -> (weak reference, classes) of the props make_bags returned whose
#: columns' names are not their positions: what an unnamed array loses.
_NAMED_PROPS = {}


class _BaseBagGenerator(BaseEstimator):
    """A subclass gives ``_fit_labels(X)``: the bag id of every row of ``X``."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Form the bags of the rows of ``X``, as the class describes.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
            Class labels: sets ``classes_``, as :meth:`make_bags` does.

        Returns
        -------
        self : object
        """
        self.labels_ = np.asarray(self._fit_labels(X), dtype=np.int64)
        self.sample_mask_ = self.labels_ != UNBAGGED
        bagged = self.labels_[self.sample_mask_]
        self.bag_ids_, self.bag_sizes_ = np.unique(bagged, return_counts=True)
        self.n_bags_ = len(self.bag_ids_)
        vars(self).pop("classes_", None)
        if y is not None:  # class labels, read as make_bags reads them
            self.classes_ = np.unique(_class_labels(self.labels_, y))
        return self

    def fit_transform(self, X, y=None):
        """Fit and return the bag id of every row of ``X`` (``-1``: no bag).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
            Class labels: sets ``classes_``, as :meth:`make_bags` does.

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
        """
        return self.fit(X, y).labels_.copy()

    def make_bags(self, X, y):
        """Fit, and give every row its bag's class proportions (sets ``classes_``).

        The task is never guessed from ``y``: non-integral numbers are refused, and
        many distinct integers (a count, a score) warn; see :meth:`make_bag_means`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
            Bag id of every row, ``-1`` for a row in no bag.
        props : ndarray of shape (n_samples, n_classes)
            Every row's bag proportions; NaN in no bag.
        """
        y = _class_labels(X, y)
        bags = self.fit_transform(X)
        self.classes_ = np.unique(y)
        props = np.full((len(bags), len(self.classes_)), np.nan)
        if self.sample_mask_.any():
            table = label_proportions(bags, y, classes=self.classes_)
            rows = pd.Index(table.index).get_indexer(bags[self.sample_mask_])
            props[self.sample_mask_] = table.to_numpy()[rows]
        if not np.array_equal(self.classes_, np.arange(len(self.classes_))):
            key = id(props)
            forget = lambda _: _NAMED_PROPS.pop(key, None)  # noqa: E731
            _NAMED_PROPS[key] = (weakref.ref(props, forget), self.classes_)
        return bags, props

    def make_bag_means(self, X, y):
        """Fit, and give every row its bag's mean of ``y`` (NaN in no bag).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Numbers, integral ones (hours, counts) included.

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
        targets : ndarray of shape (n_samples,)
            The ``targets`` of :class:`~sklearn_llp.LLPRegressor`.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_llp.bags import UniformBagGenerator
        >>> gen = UniformBagGenerator(2, random_state=0)
        >>> bags, means = gen.make_bag_means(np.zeros((4, 1)), [40, 50, 20, 30])
        >>> sorted(means.tolist())
        [25.0, 25.0, 45.0, 45.0]
        """
        y = _check_y(X, y)
        if y.dtype.kind not in "iuf":
            raise ValueError(f"y must hold numbers; got dtype {y.dtype}.")
        y = y.astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values.")
        bags = self.fit_transform(X)
        validated = id_bags(bags)  # code -1 (no bag): NaN
        return bags, np.append(bag_means(validated, y), np.nan)[validated.codes]


def _check_y(X, y):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per row; got {y.shape}.")
    if num_rows(X) != len(y):
        raise ValueError(
            f"y has {len(y)} labels but X has {num_rows(X)} rows; give "
            "one class label per row."
        )
    return y


def _class_labels(X, y):
    """``y`` checked as class labels: the task is never guessed from ``y``."""
    y = _check_y(X, y)
    if y.dtype.kind in "iuf":
        finite = y[np.isfinite(y)] if y.dtype.kind == "f" else y
        if np.any(finite != np.round(finite)):
            raise ValueError(
                "y holds non-integral numbers, which are no class labels; for the bag "
                "means of a continuous target use make_bag_means(X, y)."
            )
        n_values = len(np.unique(finite))
        if n_values > _MANY_LABELS:
            warnings.warn(
                f"y holds {n_values} distinct numbers, read as {n_values} "
                "classes; if they are a count or a score, their bag means "
                "are make_bag_means(X, y).",
                UserWarning,
                stacklevel=3,
            )
    return y


def warn_if_names_lost(bags, props, stacklevel):
    """Warn when ``bags`` read the unnamed ``props`` (or a view of them)
    that :meth:`make_bags` returned for classes other than 0, 1, ...: the
    estimator's ``classes_`` are then the columns' positions."""
    found = None
    while found is None and isinstance(props, np.ndarray):
        ref, classes = _NAMED_PROPS.get(id(props), (lambda: None, None))
        found, props = (classes if ref() is props else None), props.base
    if found is None or not bags.positional_classes:
        return
    warnings.warn(
        f"props come from make_bags, whose y held the classes {found.tolist()}; "
        "an array has no column names, so classes_ are the positions "
        f"{bags.classes.tolist()} and predict returns them. Pass classes= "
        "(the bag generator's classes_) to name them.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )
