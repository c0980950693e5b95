"""Inverse-variance weights of noisy bag means."""

import math
from numbers import Real

import numpy as np
import pandas as pd

from ._release import read_bags


def noise_aware_bag_weights(
    released, bags=None, *, target_variance=0.0, n_samples=None
):
    """Inverse-variance weights of noisy bag means, per bag or per row.

    A released mean ``m_B`` varies around the model's bag mean by
    ``target_variance / n_B + std_B**2``; weighting a bag's squared error by
    the inverse makes the fit the Gaussian maximum-likelihood one: ``n_B**2
    / noise_var`` for bags swamped by noise, proportional to ``n_B``
    without noise (derivation in :ref:`noise_aware_weights`).

    Parameters
    ----------
    released : DataFrame
        Indexed by bag id, one row per bag, with the columns ``"size"`` and
        ``"std"``, as :func:`dp_bag_means` returns.
    bags : array-like, sparse matrix, list of arrays or Bags, default=None
        Disjoint bags in any form :func:`~sklearn_llp.core.check_bags`
        reads: return one weight per row, ``w_B / n_B``, so that a bag's
        total row weight is proportional to ``w_B``. Every row must be in a
        released bag (:func:`released_rows` selects them).
    target_variance : float, default=0.0
        Variance of a row's target around the model, non-negative
        (``(hi - lo)**2 / 4`` bounds it); 0 keeps only the noise.
    n_samples : int, default=None
        Number of rows; needed only with bags as row-index lists.

    Returns
    -------
    weights : Series of shape (n_bags,) or ndarray of shape (n_samples,)
        Per bag (indexed like ``released``) or per row, with mean 1.

    Raises
    ------
    ValueError
        Naming ``target_variance`` when negative, not finite, or 0 while a
        bag has no noise; ``released`` when malformed; ``bags`` when a row
        is in no released bag.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.privacy import dp_bag_means, noise_aware_bag_weights
    >>> bags = np.repeat([0, 1, 2], [100, 40, 10])
    >>> table = dp_bag_means(bags, np.linspace(0, 1, 150), 1.0, bounds=(0, 1))
    >>> noise_aware_bag_weights(table).round(3).tolist()  # n_B**2 / noise_var
    [2.564, 0.41, 0.026]
    >>> noise_aware_bag_weights(table, target_variance=0.25).round(3).tolist()
    [2.113, 0.761, 0.127]
    >>> rows = noise_aware_bag_weights(table, bags, target_variance=0.25)
    >>> rows[[0, 100, 140]].round(3).tolist()  # w_B / n_B, mean 1 over rows
    [1.056, 0.951, 0.634]
    """
    if (
        not isinstance(released, pd.DataFrame)
        or not {"size", "std"} <= set(released.columns)
        or not released.index.is_unique
    ):
        raise ValueError(
            "released must be a per-bag DataFrame, one row per bag, with the "
            "columns 'size' and 'std', as dp_bag_means returns."
        )
    if (
        isinstance(target_variance, bool)
        or not isinstance(target_variance, Real)
        or not math.isfinite(target_variance)
        or target_variance < 0
    ):
        raise ValueError(
            "target_variance must be a finite, non-negative number; got "
            f"{target_variance!r}."
        )
    sizes = released["size"].to_numpy(dtype=np.float64)
    std = released["std"].to_numpy(dtype=np.float64)
    if not (np.all(np.isfinite(sizes)) and np.all(sizes > 0)) or not (
        np.all(np.isfinite(std)) and np.all(std >= 0)
    ):
        raise ValueError(
            "released must hold positive finite sizes and finite non-negative stds."
        )
    variance = target_variance / sizes + std**2
    if np.any(variance == 0):
        raise ValueError(
            "target_variance=0 and a bag's mean has no noise (std 0): its "
            "inverse-variance weight would be infinite. Pass target_variance > 0 "
            "(weights proportional to the bag sizes without noise)."
        )
    weights = 1.0 / variance
    if bags is None:
        return pd.Series(weights / weights.mean(), index=released.index, name="weight")
    validated = read_bags(bags, n_samples)
    positions = released.index.get_indexer(pd.Index(validated.ids, tupleize_cols=False))
    rows = np.append(positions, -1)[validated.codes]  # code -1: in no bag
    if np.any(rows < 0):
        unknown = validated.ids[positions < 0][:5].tolist()
        n_unbagged = int(np.sum(validated.codes < 0))
        raise ValueError(
            f"bags has {int(np.sum(rows < 0))} row(s) without a released bag ("
            + (f"e.g. of bag(s) {unknown}" if unknown else "")
            + (", " if unknown and n_unbagged else "")
            + (f"{n_unbagged} in no bag" if n_unbagged else "")
            + "): drop them first, keep = released_rows(bags, released)."
        )
    per_row = (weights / sizes)[rows]
    return per_row / per_row.mean()
