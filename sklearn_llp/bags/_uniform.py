"""Random bags of equal size."""

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from ..core import UNBAGGED
from ._base import _BaseBagGenerator


class UniformBagGenerator(_BaseBagGenerator):
    """Random partition of the rows into bags of ``bag_size`` rows.

    A random partition exists only for the rows it was drawn on: no ``transform``.

    Parameters
    ----------
    bag_size : int
        Rows in every bag.
    drop_last : bool, default=True
        Give the left-over rows the id ``-1`` (no bag), or one smaller last bag.
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    labels_, sample_mask_ : ndarray of shape (n_samples,)
        Bag id of every fitted row (``-1``: dropped), and ``labels_ >= 0``.
    n_bags_, bag_ids_, bag_sizes_ : int, ndarray, ndarray
        Number of bags, their ids ``0..n_bags_ - 1`` and their sizes.
    classes_ : ndarray of shape (n_classes,)
        Sorted labels of ``y``, set by :meth:`make_bags` (and by ``fit`` and
        ``fit_transform`` given class labels ``y``).
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.bags import UniformBagGenerator
    >>> X = np.arange(20).reshape(10, 2)
    >>> y = np.array([0, 1, 1, 0, 1, 0, 0, 0, 1, 1])
    >>> gen = UniformBagGenerator(bag_size=4, random_state=0)
    >>> bags, props = gen.make_bags(X, y)
    >>> gen.bag_sizes_.tolist(), int((bags == -1).sum())
    ([4, 4], 2)
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

    def _fit_labels(self, X):
        """Draw the bags of the rows of ``X`` (only their number matters)."""
        given = dict(accept_sparse=True, dtype=None, ensure_all_finite=False)
        X = validate_data(self, X, allow_nd=True, **given)
        n_samples = X.shape[0]
        n_full = n_samples // self.bag_size
        if n_full == 0 and self.drop_last:
            raise ValueError(
                f"bag_size={self.bag_size} exceeds the number of samples "
                f"({n_samples}): with drop_last=True no bag would be complete. "
                "Lower bag_size or set drop_last=False."
            )
        order = check_random_state(self.random_state).permutation(n_samples)
        labels = np.empty(n_samples, dtype=np.int64)
        labels[order] = np.arange(n_samples) // self.bag_size
        if self.drop_last:  # the left-over rows, the last bag: in no bag
            labels[labels == n_full] = UNBAGGED
        return labels
