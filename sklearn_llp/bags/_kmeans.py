"""Bags of similar rows: K-means clusters, optionally after PCA."""

from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.decomposition import PCA
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import _BaseBagGenerator

#: With ``minibatch="auto"``, :class:`~sklearn.cluster.MiniBatchKMeans` is
#: used above this many samples, :class:`~sklearn.cluster.KMeans` otherwise.
MINIBATCH_THRESHOLD = 10_000


class KMeansBagGenerator(_BaseBagGenerator):
    """Bags of similar rows: the K-means clusters of ``X``.

    ``X`` is optionally projected onto its first ``n_components`` principal
    components, then clustered with K-means; each cluster is a bag, so bags
    vary in size and their label proportions are far from the overall
    class balance, as in the LLP-VAT paper (Tsai & Lin, 2020, section 5.4).
    K-means is sensitive to the scale of the features: standardise ``X``
    first (e.g. with :class:`~sklearn.preprocessing.StandardScaler`).

    The paper also subsamples bags larger than 256 rows; this generator
    does not, as the LLP classifiers of this package subsample large bags
    themselves (their ``max_bag_size``).

    Parameters
    ----------
    n_clusters : int
        Number of K-means clusters, an upper bound on the number of bags
        (a cluster left empty is no bag). ``n_samples / n_clusters`` is the
        mean bag size.
    n_components : int, float or None, default=None
        Number of principal components kept before clustering (an int), or
        the fraction of variance to keep (a float in (0, 1)); None clusters
        ``X`` itself.
    minibatch : bool or "auto", default="auto"
        Use :class:`~sklearn.cluster.MiniBatchKMeans` (faster on large data)
        instead of :class:`~sklearn.cluster.KMeans`; ``"auto"`` uses it when
        ``X`` has more than 10,000 rows.
    random_state : int, RandomState instance or None, default=None
        Seed of the PCA solver and of the K-means initialisation.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), dtype int64
        Bag id (cluster label, in ``0 .. n_clusters - 1``) of every row of
        the fitted ``X``.
    sample_mask_ : ndarray of shape (n_samples,), dtype bool
        True for the rows that belong to a bag (all of them).
    n_bags_ : int
        Number of non-empty clusters (at most ``n_clusters``).
    bag_ids_ : ndarray of shape (`n_bags_`,)
        The cluster labels that occur in ``labels_``.
    bag_sizes_ : ndarray of shape (`n_bags_`,)
        Number of rows of every bag, in the order of ``bag_ids_``.
    pca_ : PCA or None
        The fitted projection, None when ``n_components`` is None.
    kmeans_ : KMeans or MiniBatchKMeans
        The fitted clustering.
    classes_ : ndarray of shape (n_classes,)
        Sorted distinct labels of ``y``; set by :meth:`make_bags` only.
    n_features_in_ : int
        Number of features of the fitted ``X``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of the fitted ``X`` when it is a DataFrame with string
        column names.

    See Also
    --------
    UniformBagGenerator : Random bags of equal size.
    FeatureBagGenerator : Bags of rows sharing column values.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.bags import KMeansBagGenerator
    >>> rng = np.random.RandomState(0)
    >>> X = np.vstack([rng.normal(0, 1, (30, 4)), rng.normal(8, 1, (10, 4))])
    >>> y = np.r_[np.zeros(30), np.ones(10)]
    >>> gen = KMeansBagGenerator(n_clusters=2, n_components=2, random_state=0)
    >>> bags, props = gen.make_bags(X, y)
    >>> sorted(gen.bag_sizes_.tolist())
    [10, 30]
    >>> sorted(np.unique(props[:, 1]).tolist())
    [0.0, 1.0]
    >>> gen.transform([[8.0, 8.0, 8.0, 8.0]]) == bags[-1]
    array([ True])
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Cluster the rows of ``X`` into bags.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric instances, ideally standardised.
        y : None
            Ignored; present for API consistency.

        Returns
        -------
        self : KMeansBagGenerator
            The fitted generator; ``labels_`` holds the bag ids.
        """
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        rng = check_random_state(self.random_state)
        if self.n_components is None:
            self.pca_ = None
            Z = X
        else:
            self.pca_ = PCA(n_components=self.n_components, random_state=rng)
            Z = self.pca_.fit_transform(X)
        minibatch = self.minibatch
        if minibatch == "auto":
            minibatch = X.shape[0] > MINIBATCH_THRESHOLD
        estimator = MiniBatchKMeans if minibatch else KMeans
        self.kmeans_ = estimator(
            n_clusters=self.n_clusters, n_init="auto", random_state=rng
        ).fit(Z)
        return self._set_labels(self.kmeans_.labels_)

    def transform(self, X):
        """Assign rows to the bag (cluster) with the nearest centre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New instances with the features of the fitted ``X``.

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
            Bag id of every row. A row may land in a cluster that was empty
            during fit, i.e. in no fitted bag.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        Z = X if self.pca_ is None else self.pca_.transform(X)
        return self.kmeans_.predict(Z).astype(np.int64)
