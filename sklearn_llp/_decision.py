"""Label-free decision rules: turn probabilities into labels without labels.

A model trained on proportions matches every bag's mean probability, but the
most probable class of an instance need not be its label: with a rare class
that is a minority in every bag, ``argmax`` can predict the common class for
every row (F1 of 0 for the rare class), although the probabilities rank the
rows well. Prior matching shifts the decision so that the predicted class
rates over the rows equal the class rates the bags reveal, which needs no
instance label.
"""

import numpy as np

#: Iterations of the multiclass offset fit (each is one argmax over the rows).
_PRIOR_ITERATIONS = 200


def class_prior(bags):
    """Overall class proportions of the rows of ``bags`` (weights counted).

    Parameters
    ----------
    bags : Bags
        Validated bags with proportions.

    Returns
    -------
    prior : ndarray of shape (n_classes,)
        ``sum_B W_B p_B / sum_B W_B`` with ``W_B`` the total weight of bag B.
    """
    totals = bags.total_weights()
    return totals @ bags.props / totals.sum()


def _weighted_quantile(values, q, weights):
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    position = np.searchsorted(cumulative, q * cumulative[-1], side="left")
    return values[order[min(position, len(values) - 1)]]


def prior_offsets(proba, prior, weights=None):
    """Log-probability offsets whose argmax predicts every class at its prior.

    ``argmax(log proba + offsets)`` predicts class ``c`` for a fraction
    ``prior[c]`` of the (weighted) rows, as nearly as ties allow. With two
    classes this is a threshold on the probability of the second class, set
    at the ``1 - prior[1]`` quantile; with more, the offsets are fitted by
    damped steps of ``log(prior / rate)`` (at most 0.5 nat each), keeping
    the offsets whose predicted rates are closest to the prior in L1.

    Parameters
    ----------
    proba : ndarray of shape (n_samples, n_classes)
    prior : ndarray of shape (n_classes,)
    weights : ndarray of shape (n_samples,), default=None

    Returns
    -------
    offsets : ndarray of shape (n_classes,)
        Zero for the first class.
    """
    n_samples, n_classes = proba.shape
    weights = np.ones(n_samples) if weights is None else np.asarray(weights, float)
    tiny = np.finfo(np.float64).tiny
    log_proba = np.log(np.maximum(proba, tiny))
    if n_classes == 2:
        threshold = _weighted_quantile(proba[:, 1], 1.0 - prior[1], weights)
        threshold = float(np.clip(threshold, 1e-12, 1 - 1e-12))
        # p1 >= t  <=>  log p1 - log p0 >= logit(t); nudge to include t itself
        return np.array([0.0, -np.log(threshold / (1 - threshold)) + 1e-12])
    offsets = np.zeros(n_classes)
    best, best_gap = offsets, np.inf
    floor = 0.5 / n_samples  # a class predicted nowhere: a finite step
    for _ in range(_PRIOR_ITERATIONS):
        predicted = np.argmax(log_proba + offsets, axis=1)
        rates = np.bincount(predicted, weights=weights, minlength=n_classes)
        rates = rates / weights.sum()
        gap = np.abs(rates - prior).sum()
        if gap < best_gap:
            best, best_gap = offsets, gap
        step = np.log(np.maximum(prior, floor)) - np.log(np.maximum(rates, floor))
        offsets = offsets + 0.5 * np.clip(step, -1.0, 1.0)
        offsets = offsets - offsets[0]
    return best


def decide(proba, offsets=None):
    """Class index of every row: ``argmax(log proba + offsets)``."""
    if offsets is None or not np.any(offsets):
        return np.argmax(proba, axis=1)
    tiny = np.finfo(np.float64).tiny
    return np.argmax(np.log(np.maximum(proba, tiny)) + offsets, axis=1)


def threshold_of(offsets):
    """The probability threshold of the second class that binary offsets mean."""
    return float(1.0 / (1.0 + np.exp(offsets[1] - offsets[0])))
