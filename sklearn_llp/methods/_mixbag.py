"""MixBag: mixed bags added to every epoch, with a confidence-interval loss."""

from numbers import Real

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval


class MixBag(BaseEstimator):
    """Mixed bags for few bags (Asanomi et al., ICCV 2023; :ref:`mixbag`).

    For the methods of bag means: ``LLPClassifier(mixbag=...)``.

    Parameters
    ----------
    n_mixed : float, default=1.0
        Mixed bags an epoch, as a multiple of the training bags.
    confidence : float, default=0.99
        Two-sided level of the interval.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> from sklearn_llp.methods import MixBag
    >>> clf = LLPClassifier(method="dllp", mixbag=MixBag(n_mixed=2.0))
    """

    _parameter_constraints: dict = {
        "n_mixed": [Interval(Real, 0, None, closed="neither")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, n_mixed=1.0, confidence=0.99):
        self.n_mixed = n_mixed
        self.confidence = confidence

    def n_mixed_bags(self, n_bags):
        """Mixed bags an epoch of ``n_bags`` bags adds (at least one)."""
        return max(1, int(round(self.n_mixed * n_bags))) if n_bags > 1 else 0

    def draw(self, sizes, capped, rng):
        """One epoch's mixes, ``(n_mixed, 4)``: bags ``i``, ``j`` (``i != j``)
        and the rows taken from each; ``capped``: the rows a bag trains."""
        bags = np.flatnonzero(np.asarray(sizes) > 0)
        n_bags = len(bags)
        n = self.n_mixed_bags(n_bags)
        first = rng.randint(n_bags, size=n)
        second = bags[(first + rng.randint(1, max(n_bags, 2), size=n)) % n_bags]
        first = bags[first]
        rows = np.minimum(capped[first], capped[second])
        share = rng.random_sample(n)
        from_first = np.where(rows > 1, 1 + np.floor(share * (rows - 1)), rows)
        from_first = from_first.astype(np.int64)
        return np.stack([first, second, from_first, rows - from_first], axis=1)


def mixed_bag_labels(props, sizes, mixes, confidence, totals=None):
    """Labels and interval half-widths of mixed bags, ``(n_mixed, n_classes)`` each.

    The label of ``m_i`` rows from bag ``i`` and ``m_j`` from bag ``j`` is
    ``(w_i p_i + w_j p_j) / (w_i + w_j)``, ``w_i = m_i t_i / n_i`` the part's
    expected weight (``t``: ``totals``, the bags' total sample weights, by
    default ``n``): the weighted mean a loss scores. The half-width adds the
    parts' ``z`` hypergeometric standard errors, weighted by their shares (the
    paper's).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.methods import mixed_bag_labels
    >>> props, sizes = np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([101, 50])
    >>> label, margin = mixed_bag_labels(props, sizes, np.array([[0, 1, 25, 25]]), 0.95)
    >>> label.tolist(), margin.round(3).tolist()
    ([[0.75, 0.25]], [[0.085, 0.085]])
    """
    props = np.asarray(props, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    mixes = np.asarray(mixes, dtype=np.int64)
    z = norm.isf((1.0 - confidence) / 2.0)
    bags, taken = mixes[:, :2], mixes[:, 2:].astype(np.float64)
    mass = taken if totals is None else taken * (np.asarray(totals) / sizes)[bags]
    share = mass / mass.sum(1, keepdims=True)
    p = props[bags]  # (n, 2, k)
    label = (share[:, :, None] * p).sum(1)
    n = sizes[bags]
    with np.errstate(divide="ignore", invalid="ignore"):
        finite = np.where(n > 1, (n - taken) / (n - 1), 0.0)
        var = p * (1 - p) * np.where(taken > 0, finite / taken, 0.0)[:, :, None]
    margin = z * (share[:, :, None] * np.sqrt(np.clip(var, 0, None))).sum(1)
    return label, margin
