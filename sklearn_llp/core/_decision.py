"""Label-free decision rules: class rates matching the bags' (:ref:`prior_matching`)."""

import math

import numpy as np

_FLOOR = -1000.0  # log of a zero probability while matching (it cannot win)
_T_FACTOR, _T_LAST = 30.0, 1e-8  # temperatures: divided by 30 down to 1e-8
_TOL = 1e-9  # Newton stops at a class-total residual of 1e-9 of the weight


def class_prior(bags):
    """Class proportions of the rows of ``bags``: the size-weighted mean of
    ``props``, or of a privacy release's raw shares ``counts / n_B`` where
    ``bags`` carry them (unbiased; projected shares are pulled toward 1/C).

    Examples
    --------
    >>> from sklearn_llp.core import check_bags
    >>> bags = check_bags([0, 0, 1], [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]])
    >>> class_prior(bags).round(3).tolist()
    [0.667, 0.333]
    """
    totals, props = bags.total_weights(), np.asarray(bags.props, dtype=np.float64)
    raw = bags.released_counts()
    if raw is not None:
        props = np.where(np.isnan(raw), props, raw / bags.sizes[:, None])
    prior = np.maximum(totals @ props, 0.0)  # a noisy total may fall below 0
    if not prior.sum() > 0:
        prior = totals @ np.asarray(bags.props, dtype=np.float64)
    return prior / prior.sum()


def prior_threshold(proba_1, prior_1, weights=None):
    """The cut point whose (weighted) positive rate is closest to ``prior_1``."""
    proba_1 = np.asarray(proba_1)
    weights = np.ones(len(proba_1)) if weights is None else np.asarray(weights, float)
    keep = weights > 0
    if not keep.any():
        return 0.5
    values, inverse = np.unique(proba_1[keep], return_inverse=True)
    weight_of = np.bincount(inverse.ravel(), weights=weights[keep])
    total = weight_of.sum()
    at_or_above = np.cumsum(weight_of[::-1])[::-1]  # weight of p >= values[j]
    target = float(prior_1) * total
    distance = np.append(np.abs(at_or_above - target), abs(target))
    best = np.flatnonzero(distance <= distance.min() + 1e-9 * total)[0]
    if best < len(values):
        return float(values[best])
    above = np.float32(values[-1])
    if float(above) <= values[-1]:
        above = np.nextafter(above, np.float32(np.inf))
    return float(above)


def _binary_offsets(threshold):
    """``[0, -logit(threshold)]``: the log-offsets a binary threshold means."""
    t = min(max(float(threshold), 1e-300), 1.0 - 2.0**-53)
    return np.array([0.0, math.log1p(-t) - math.log(t)])


def _softmax(adjusted, t):
    """Row-wise softmax of ``adjusted / t``, in place."""
    adjusted -= adjusted.max(axis=1)[:, None]
    adjusted *= 1.0 / t
    np.exp(adjusted, out=adjusted)
    adjusted /= adjusted.sum(axis=1)[:, None]
    return adjusted


def _newton(scores, target, weights, offsets, t, tol, max_move):
    """Damped Newton steps on ``g_t``; False if the offsets move apart ``max_move``."""
    start, k = offsets, len(target)
    pi = _softmax(scores + offsets, t)
    for _ in range(100):
        grad = np.einsum("i,ij->j", weights, pi) - target
        if np.abs(grad).sum() <= tol:
            break
        weighted = pi * weights[:, None]
        hess = (np.diag(weighted.sum(axis=0)) - pi.T @ weighted)[1:, 1:] / t
        lam = np.linalg.norm(grad[1:]) / (32 * t)
        step = np.zeros(k)
        step[1:] = np.linalg.solve(hess + lam * np.eye(k - 1), -grad[1:])
        for _ in range(50):  # g_t(o + d) - g_t(o), without cancellation
            ratio = np.einsum("ij,j->i", pi, np.expm1(step / t))
            change = t * (weights @ np.log1p(ratio)) - target @ step
            if change <= 1e-4 * (grad @ step):
                break
            step /= 2
        else:
            break  # float64's floor: no step decreases g_t
        offsets = offsets + step
        pi = _softmax(scores + offsets, t)
        if np.ptp(offsets - start) > max_move:
            return offsets, False
    return offsets, True


def _match(scores, target, weights):
    """The minimiser of ``g_t`` at ``t = 1e-8``, by continuation in ``t``."""
    total = weights.sum()
    mean = np.einsum("i,ij->j", weights, np.exp(scores)) / total
    offsets = np.log(target / total) - np.log(np.maximum(mean, 1e-300))
    t = max(1.0, np.ptp(scores)) / 32
    while True:
        band = 100 * t
        while True:
            adjusted = scores + offsets
            top = adjusted.max(axis=1)
            is_top = adjusted == top[:, None]
            second = np.where(is_top, -np.inf, adjusted).max(axis=1)
            near = (top - second < band) | (is_top.sum(axis=1) > 1)
            near |= near.mean() > 0.5  # most rows: all of them
            fixed = np.einsum("i,ij->j", weights * ~near, is_top)
            move = band - 50 * t if not near.all() else np.inf
            rows = np.asfortranarray(scores[near])  # fast row reductions
            solved, ok = _newton(
                rows, target - fixed, weights[near], offsets, t, _TOL * total, move
            )
            if ok:
                break
            band *= 8
        offsets = solved - solved[0]
        if t == _T_LAST:
            return offsets
        t = max(t / _T_FACTOR, _T_LAST)


def prior_offsets(proba, prior, weights=None):
    """Log-probability offsets whose argmax predicts every class at its prior."""
    proba, prior = np.asarray(proba), np.asarray(prior, dtype=np.float64)
    if proba.shape[1] == 2:
        return _binary_offsets(prior_threshold(proba[:, 1], prior[1], weights))
    weights = np.ones(len(proba)) if weights is None else np.asarray(weights, float)
    keep, offsets = weights > 0, np.zeros(proba.shape[1])
    if not keep.any() or prior.sum() <= 0:
        return offsets
    with np.errstate(divide="ignore"):
        scores = np.maximum(np.log(proba[keep].astype(np.float64)), _FLOOR)
    weights, classes, zero = weights[keep], prior > 0, prior <= 0
    if classes.sum() > 1:  # identical rows (equal bytes) are solved once
        rows = np.ascontiguousarray(scores[:, classes])
        keys = rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1])))
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        target = prior[classes] / prior.sum() * weights.sum()
        row_weights = np.bincount(inverse.ravel(), weights=weights)
        offsets[classes] = _match(np.asfortranarray(rows[first]), target, row_weights)
    top = (scores[:, classes] + offsets[classes]).max(axis=1)
    offsets[zero] = (top[:, None] - scores[:, zero]).min(axis=0) - 1.0
    return offsets


def fit_decision(rule, proba, prior=None, weights=None):
    """``(offsets, threshold)`` of a rule: ``"argmax"``, ``"prior"`` or a float."""
    n_classes = proba.shape[1]
    if rule == "argmax":
        return np.zeros(n_classes), (0.5 if n_classes == 2 else None)
    if rule == "prior" and n_classes != 2:
        return prior_offsets(proba, prior, weights), None
    if rule == "prior":
        threshold = prior_threshold(proba[:, 1], prior[1], weights)
    else:
        threshold = float(rule)
    return _binary_offsets(threshold), threshold


def decide(proba, offsets=None, threshold=None):
    """Class index of every row: by ``threshold``, else ``offsets``, else argmax."""
    if threshold is not None:
        return (proba[:, 1] >= float(threshold)).astype(np.intp)
    if offsets is None:
        return np.argmax(proba, axis=1)
    with np.errstate(divide="ignore"):
        scores = np.log(np.asarray(proba, dtype=np.float64))
    return np.argmax(scores + offsets, axis=1)
