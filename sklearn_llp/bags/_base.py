"""Shared behaviour of the bag generators."""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import _num_samples

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
        """Put ``X`` into bags and give every row its bag's label proportions.

        This is the simulation-study verb: from fully labelled data it makes
        the ``(bags, props)`` pair an LLP classifier is fitted on. It fits
        the generator (so ``labels_`` and the other fitted attributes are
        set) and sets ``classes_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The instances to put into bags.
        y : array-like of shape (n_samples,)
            Class label of every row; only the proportions leave this method.

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
            Bag id of every row, ``-1`` for a row left out of every bag.
        props : ndarray of shape (n_samples, n_classes)
            Row ``i`` holds the class proportions of the bag of row ``i``,
            columns in the order of ``classes_`` (the sorted distinct labels
            of ``y``). Rows with bag id ``-1`` are all NaN, so that they
            cannot be fitted on by mistake: keep ``bags >= 0`` (the fitted
            ``sample_mask_``) before fitting.
        """
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D with one label per row; got {y.shape}.")
        if _num_samples(X) != len(y):
            raise ValueError(
                f"y has {len(y)} labels but X has {_num_samples(X)} rows; give "
                "one class label per row."
            )
        bags = self.fit_transform(X)
        self.classes_ = np.unique(y)
        props = np.full((len(bags), len(self.classes_)), np.nan)
        kept = bags != UNBAGGED
        if kept.any():
            table = label_proportions(bags, y, classes=self.classes_)
            rows = pd.Index(table.index).get_indexer(bags[kept])
            props[kept] = table.to_numpy()[rows]
        return bags, props
