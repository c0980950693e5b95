"""Putting noisy proportions back on the probability simplex."""

import numpy as np
import pandas as pd


def project_to_simplex(props):
    """Euclidean projection of every row onto the probability simplex.

    Puts a raw noisy release back on the simplex that
    :func:`~sklearn_llp.core.check_bags` accepts (:ref:`noisy_proportions`).

    Parameters
    ----------
    props : array-like of shape (..., n_classes) or DataFrame
        Finite vectors along the last axis, e.g. one row per bag.

    Returns
    -------
    projected : ndarray of the same shape, or DataFrame
        Non-negative rows summing to 1; a DataFrame keeps its index and columns.

    Examples
    --------
    >>> from sklearn_llp.privacy import project_to_simplex
    >>> project_to_simplex([[0.7, 0.5], [-0.2, 0.9], [1.3, -0.1]]).tolist()
    [[0.6, 0.4], [0.0, 1.0], [1.0, 0.0]]
    """
    frame = props if isinstance(props, pd.DataFrame) else None
    try:
        values = np.asarray(props, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"props must be numeric; {exc}") from None
    if values.ndim == 0 or values.shape[-1] == 0:
        raise ValueError(
            f"props must have at least one class along its last axis; got shape "
            f"{values.shape}."
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(
            "props contains NaN or infinite values; the projection needs finite "
            "shares: drop or fix those rows first."
        )
    n_classes = values.shape[-1]
    rows = values.reshape(-1, n_classes)
    # The projection is unchanged by adding a constant to a row, and an entry
    # at least 1 below the row's maximum projects to 0: shift by the maximum
    # and floor at -2, so nothing overflows (an overflow to -inf becomes -2).
    with np.errstate(over="ignore"):
        rows = np.maximum(rows - rows.max(axis=1, keepdims=True), -2.0)
    ordered = -np.sort(-rows, axis=1)  # descending
    excess = np.cumsum(ordered, axis=1) - 1.0
    k = np.arange(1, n_classes + 1)
    # the support is the largest k with ordered_k > excess_k / k (a prefix)
    positive = ordered - excess / k > 0
    support = n_classes - np.argmax(positive[:, ::-1], axis=1)
    theta = excess[np.arange(len(rows)), support - 1] / support
    projected = np.maximum(rows - theta[:, None], 0.0).reshape(values.shape)
    if frame is not None:
        return pd.DataFrame(projected, index=frame.index, columns=frame.columns)
    return projected
