"""Shared behaviour of the bag generators."""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from ..core import num_rows
from ._proportions import UNBAGGED, label_proportions


class _BaseBagGenerator(BaseEstimator):
    """Base class of the bag generators.

    A subclass implements ``fit(X, y=None)``, which must end with
    ``self._set_labels(labels)``; this class then provides
    :meth:`fit_transform` and :meth:`make_bags`.
    """

    def _set_labels(self, labels):
        """Store the bag id of every training row and the derived counts."""
        labels = np.asarray(labels, dtype=np.int64)
        self.labels_ = labels
        self.sample_mask_ = labels != UNBAGGED
        self.bag_ids_, self.bag_sizes_ = np.unique(
            labels[self.sample_mask_], return_counts=True
        )
        self.n_bags_ = len(self.bag_ids_)
        return self

    def fit_transform(self, X, y=None):
        """Fit the generator and return the bag id of every row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The instances to put into bags.
        y : None
            Ignored; present for API consistency.

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
            Bag id of every row; ``-1`` marks a row left out of every bag.
        """
        return self.fit(X).labels_.copy()

    def make_bags(self, X, y):
        """Put ``X`` into bags and give every row its bag's label proportions
        (class labels ``y``) or its bag's mean (a continuous ``y``).

        This is the simulation-study verb: from fully labelled data it makes
        the ``(bags, props)`` pair an LLP classifier is fitted on, or the
        ``(bags, targets)`` pair of an LLP regressor. It fits the generator
        (so ``labels_`` and the other fitted attributes are set) and, for
        class labels, sets ``classes_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The instances to put into bags.
        y : array-like of shape (n_samples,)
            Class label of every row, or a continuous target (floats not all
            integral, scikit-learn's ``"continuous"`` target type); only the
            proportions or means leave this method. A target of integral
            values (hours, counts) is read as class labels: use
            :meth:`make_bag_means` for it.

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
            Bag id of every row, ``-1`` for a row left out of every bag.
        props : ndarray of shape (n_samples, n_classes) or (n_samples,)
            Class labels: row ``i`` holds the class proportions of the bag of
            row ``i``, columns in the order of ``classes_`` (the sorted
            distinct labels of ``y``). A continuous ``y``: entry ``i`` is the
            mean of ``y`` over the bag of row ``i`` (``targets`` of
            :class:`~sklearn_llp.LLPRegressor`), and ``classes_`` is not set.
            Rows with bag id ``-1`` are NaN, so that they cannot be fitted on
            by mistake: keep ``bags >= 0`` (the fitted ``sample_mask_``)
            before fitting.
        """
        y = _check_y(X, y)
        continuous = _is_continuous(y)
        bags = self.fit_transform(X)
        if continuous:
            vars(self).pop("classes_", None)
            return bags, _bag_means(bags, y)
        self.classes_ = np.unique(y)
        props = np.full((len(bags), len(self.classes_)), np.nan)
        kept = bags != UNBAGGED
        if kept.any():
            table = label_proportions(bags, y, classes=self.classes_)
            rows = pd.Index(table.index).get_indexer(bags[kept])
            props[kept] = table.to_numpy()[rows]
        return bags, props

    def make_bag_means(self, X, y):
        """Put ``X`` into bags and give every row its bag's mean of ``y``.

        :meth:`make_bags` for a continuous target whatever its values: it
        reads floats that are all integral (hours, counts, ages) as class
        labels, this method never does.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            The target of every row (numbers).

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
            Bag id of every row, ``-1`` for a row left out of every bag.
        targets : ndarray of shape (n_samples,)
            Mean of ``y`` over the bag of every row (NaN for ``-1``): the
            ``targets`` of :class:`~sklearn_llp.LLPRegressor`.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_llp.bags import UniformBagGenerator
        >>> hours = np.array([40, 50, 20, 30])
        >>> bags, means = UniformBagGenerator(2, random_state=0).make_bag_means(
        ...     np.zeros((4, 1)), hours)
        >>> means.tolist() == [
        ...     hours[bags == bags[i]].mean() for i in range(4)]
        True
        """
        y = _check_y(X, y)
        if y.dtype.kind not in "iuf":
            raise ValueError(f"y must hold numbers; got dtype {y.dtype}.")
        bags = self.fit_transform(X)
        vars(self).pop("classes_", None)
        return bags, _bag_means(bags, y)


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


def _is_continuous(y):
    """Floats that are not all integral (scikit-learn's "continuous")."""
    if y.dtype.kind != "f":
        return False
    finite = y[np.isfinite(y)]
    return bool(np.any(finite != np.round(finite)))


def _bag_means(bags, y):
    """Every row's bag mean of the continuous ``y`` (NaN out of every bag)."""
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values.")
    means = np.full(len(bags), np.nan)
    kept = bags != UNBAGGED
    if kept.any():
        codes = np.unique(bags[kept], return_inverse=True)[1].ravel()
        sums = np.bincount(codes, weights=y[kept])
        means[kept] = (sums / np.bincount(codes))[codes]
    return means
