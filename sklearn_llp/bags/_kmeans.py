"""Bags of similar rows: K-means clusters, optionally after PCA."""

from numbers import Integral

import numpy as np
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.decomposition import PCA
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import _BaseBagGenerator

#: ``minibatch="auto"`` uses MiniBatchKMeans above this many rows.
MINIBATCH_THRESHOLD = 10_000


class KMeansBagGenerator(_BaseBagGenerator):
    """Bags of similar rows: the K-means clusters of ``X`` (optionally after PCA).

    Bags of varying size whose proportions stray far from the class mix, as
    in the LLP-VAT paper (Tsai & Lin, 2020, 5.4). Standardise ``X`` first.

    Parameters
    ----------
    n_clusters : int
        Number of clusters, so at most as many bags.
    n_components : int, float or None, default=None
        PCA components kept (an int) or share of variance kept (a float).
    minibatch : bool or "auto", default="auto"
        Use MiniBatchKMeans; ``"auto"``: above 10,000 rows.
    random_state : int, RandomState instance or None, default=None
        Seed of the PCA solver and the K-means initialisation.

    Attributes
    ----------
    labels_, sample_mask_, n_bags_, bag_ids_, bag_sizes_, classes_
        As in :class:`UniformBagGenerator`; bag ids are cluster labels.
    pca_, kmeans_ : PCA or None, KMeans or MiniBatchKMeans
        The fitted projection and clustering.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.bags import KMeansBagGenerator
    >>> rng = np.random.RandomState(0)
    >>> X = np.vstack([rng.normal(0, 1, (30, 4)), rng.normal(8, 1, (10, 4))])
    >>> gen = KMeansBagGenerator(n_clusters=2, random_state=0)
    >>> bags = gen.fit_transform(X)
    >>> sorted(gen.bag_sizes_.tolist())
    [10, 30]
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "n_components": [
            None,
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0, 1, closed="neither"),
        ],
        "minibatch": ["boolean", StrOptions({"auto"})],
        "random_state": ["random_state"],
    }

    def __init__(
        self, n_clusters, *, n_components=None, minibatch="auto", random_state=None
    ):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.minibatch = minibatch
        self.random_state = random_state

    def _fit_labels(self, X):
        """Cluster the rows of ``X``: the cluster of every row."""
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        rng = check_random_state(self.random_state)
        self.pca_ = None
        if self.n_components is not None:
            self.pca_ = PCA(n_components=self.n_components, random_state=rng)
        Z = X if self.pca_ is None else self.pca_.fit_transform(X)
        auto = self.minibatch == "auto"
        minibatch = X.shape[0] > MINIBATCH_THRESHOLD if auto else self.minibatch
        estimator = MiniBatchKMeans if minibatch else KMeans
        self.kmeans_ = estimator(self.n_clusters, n_init="auto", random_state=rng)
        self.kmeans_.fit(Z)
        return self.kmeans_.labels_

    def transform(self, X):
        """The bag (nearest cluster centre) of every row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        Z = X if self.pca_ is None else self.pca_.transform(X)
        return self.kmeans_.predict(Z).astype(np.int64)
