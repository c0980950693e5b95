"""Inverse-variance weights of noisy bag means."""

import math

import numpy as np
import pandas as pd

from ._mechanisms import _is_real
from ._release import read_bags

_RELEASED = (
    "released must be a per-bag DataFrame, one row per bag, with positive finite "
    "'size' and finite non-negative 'std' columns, as dp_bag_means returns."
)


def noise_aware_bag_weights(
    released, bags=None, *, target_variance=None, n_samples=None
):
    """Inverse-variance weights of noisy bag means, per bag or per row.

    The Gaussian maximum-likelihood weights (:ref:`noise_aware_weights`).

    Parameters
    ----------
    released : DataFrame
        One row per bag id with the columns ``"size"`` and ``"std"``, as
        :func:`dp_bag_means` returns.
    bags : array-like, sparse matrix, list of arrays or Bags, default=None
        Disjoint bags, every row in a released bag: weights per row, and the
        sizes ``n_B`` counted from the rows (not the column ``"size"``, under
        add_remove a noisy count).
    target_variance : float
        Variance ``s**2`` of a row's target around the model; required (0
        keeps only the noise, right only when the noise dominates).
    n_samples : int, default=None
        Number of rows; needed only with bags as row-index lists.

    Returns
    -------
    weights : Series of shape (n_bags,) or ndarray of shape (n_samples,)
        Per bag (indexed like ``released``) or per row, with mean 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.privacy import dp_bag_means, noise_aware_bag_weights
    >>> bags = np.repeat([0, 1, 2], [100, 40, 10])
    >>> table = dp_bag_means(bags, np.linspace(0, 1, 150), 1.0, bounds=(0, 1))
    >>> w = noise_aware_bag_weights(table, target_variance=0.0)  # n_B**2 / v
    >>> w.round(3).tolist()
    [2.564, 0.41, 0.026]
    >>> rows = noise_aware_bag_weights(table, bags, target_variance=0.25)
    >>> rows[[0, 100, 140]].round(3).tolist()  # w_B / n_B, mean 1 over rows
    [1.056, 0.951, 0.634]
    """
    if not isinstance(released, pd.DataFrame) or not {"size", "std"} <= set(released):
        raise ValueError(_RELEASED)
    sizes = released["size"].to_numpy(dtype=np.float64)
    std = released["std"].to_numpy(dtype=np.float64)
    valid = np.isfinite(sizes) & (sizes > 0) & np.isfinite(std) & (std >= 0)
    if released.index.has_duplicates or not valid.all():
        raise ValueError(_RELEASED)
    if not _is_real(target_variance) or not 0 <= target_variance < math.inf:
        raise ValueError(
            "target_variance must be a finite, non-negative number, the variance "
            "of a row's target around the model (e.g. of a first fit's residuals; "
            f"(hi - lo)**2 / 4 bounds it); got {target_variance!r}."
        )
    validated = None if bags is None else read_bags(bags, n_samples)
    if validated is not None:  # the bags' rows give the sizes (add_remove: noisy)
        ids = pd.Index(validated.ids, tupleize_cols=False)
        positions = released.index.get_indexer(ids)
        outside = np.append(positions, -1)[validated.codes] < 0  # code -1: no bag
        if outside.any():
            raise ValueError(
                f"bags has {int(outside.sum())} row(s) in no bag or in a bag not "
                f"in released ({validated.ids[positions < 0][:5].tolist()} are "
                "not): drop them first, keep = released_rows(bags, released)."
            )
        sizes = sizes.copy()
        sizes[positions] = validated.sizes
    variance = target_variance / sizes + std**2
    if np.any(variance == 0):
        raise ValueError(
            "target_variance=0 and a bag's mean has no noise (std 0): its "
            "inverse-variance weight would be infinite. Pass target_variance > 0 "
            "(weights proportional to the bag sizes without noise)."
        )
    weights = 1.0 / variance
    if validated is None:
        return pd.Series(weights / weights.mean(), index=released.index, name="weight")
    per_row = (weights / sizes)[positions][validated.codes]
    return per_row / per_row.mean()
