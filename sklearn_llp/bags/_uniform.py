"""Random bags of equal size."""

from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from ._base import _BaseBagGenerator
from ._proportions import UNBAGGED


class UniformBagGenerator(_BaseBagGenerator):
    """Random partition of the rows into bags of equal size.

    The rows are shuffled and cut into consecutive bags of ``bag_size``
    rows: the standard LLP benchmark protocol (e.g. the LLP-VAT paper).
    Bag ids are ``0 .. n_bags_ - 1``.

    A random partition is defined only for the rows it was drawn on, so
    this generator has :meth:`fit_transform` and :meth:`make_bags` but no
    ``transform`` for new rows.

    Parameters
    ----------
    bag_size : int
        Number of rows in every bag (at least 1).
    drop_last : bool, default=True
        What to do with the ``n_samples % bag_size`` rows left over after the
        complete bags. If True, they belong to no bag and get the bag id
        ``-1`` (and, from :meth:`make_bags`, proportions of NaN), so that
        every bag has exactly ``bag_size`` rows; keep ``bags >= 0`` (or the
        fitted ``sample_mask_``) before fitting a classifier. If False, they
        form one smaller last bag and no row is left out.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffle. Pass an int for reproducible bags.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), dtype int64
        Bag id of every row of the fitted ``X``; ``-1`` for a dropped row.
    sample_mask_ : ndarray of shape (n_samples,), dtype bool
        True for the rows that belong to a bag (``labels_ >= 0``).
    n_bags_ : int
        Number of bags.
    bag_ids_ : ndarray of shape (`n_bags_`,)
        The bag ids, ``0 .. n_bags_ - 1``.
    bag_sizes_ : ndarray of shape (`n_bags_`,)
        Number of rows of every bag, in the order of ``bag_ids_``.
    classes_ : ndarray of shape (n_classes,)
        Sorted distinct labels of ``y``; set by :meth:`make_bags` only.
    n_features_in_ : int
        Number of features of the fitted ``X``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of the fitted ``X`` when it is a DataFrame with string
        column names.

    See Also
    --------
    KMeansBagGenerator : Bags of similar rows, of varying size.
    FeatureBagGenerator : Bags of rows sharing column values.
    label_proportions : Per-bag proportion table of labelled data.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.bags import UniformBagGenerator
    >>> X = np.arange(20).reshape(10, 2)
    >>> y = np.array([0, 1, 1, 0, 1, 0, 0, 0, 1, 1])
    >>> gen = UniformBagGenerator(bag_size=4, random_state=0)
    >>> bags, props = gen.make_bags(X, y)
    >>> gen.n_bags_, gen.bag_sizes_.tolist(), int((bags == -1).sum())
    (2, [4, 4], 2)
    >>> keep = bags >= 0  # drop the 2 left-over rows before fitting
    >>> X[keep].shape, props[keep].sum(axis=1).tolist()
    ((8, 2), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    >>> UniformBagGenerator(4, drop_last=False).fit(X).bag_sizes_.tolist()
    [4, 4, 2]
    """

    _parameter_constraints = {
        "bag_size": [Interval(Integral, 1, None, closed="left")],
        "drop_last": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, bag_size, *, drop_last=True, random_state=None):
        self.bag_size = bag_size
        self.drop_last = drop_last
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw a random partition of the rows of ``X`` into bags.

        Parameters
        ----------
        X : array-like of shape (n_samples, ...)
            The instances; only their number matters (any number of
            dimensions, e.g. images, and any dtype).
        y : None
            Ignored; present for API consistency.

        Returns
        -------
        self : UniformBagGenerator
            The fitted generator; ``labels_`` holds the bag ids.
        """
        X = validate_data(
            self,
            X,
            accept_sparse=True,
            dtype=None,
            ensure_all_finite=False,
            allow_nd=True,
        )
        n_samples = X.shape[0]
        n_full = n_samples // self.bag_size
        if n_full == 0 and self.drop_last:
            raise ValueError(
                f"bag_size={self.bag_size} exceeds the number of samples "
                f"({n_samples}): with drop_last=True no bag would be complete. "
                "Lower bag_size or set drop_last=False."
            )
        order = check_random_state(self.random_state).permutation(n_samples)
        labels = np.full(n_samples, UNBAGGED, dtype=np.int64)
        n_kept = n_full * self.bag_size
        labels[order[:n_kept]] = np.repeat(np.arange(n_full), self.bag_size)
        if not self.drop_last and n_kept < n_samples:
            labels[order[n_kept:]] = n_full
        return self._set_labels(labels)
