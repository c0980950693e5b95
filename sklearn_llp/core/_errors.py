"""Bag-level errors of an instance classifier on LLP data.

LLP data label bags, not instances, so a classifier is judged on how well the
class proportions it predicts for every bag match the bag's given proportions.
Two bag estimates are compared with the given proportions ``p``:

- the *hard* estimate, the fraction of the bag's instances predicted as each
  class (``argmax`` of ``y_proba``, ties going to the first class as in
  ``predict``);
- the *soft* estimate, the mean of the bag's predicted probabilities.

Bags may overlap (a sparse membership matrix or a list of index arrays,
with one row of proportions per bag): a bag's estimate then averages the
predictions of its own members, an instance counting in every bag it
belongs to. Internally every metric works on (bag, instance) pairs -- a
gather of the members' predictions and a segment sum per bag -- so disjoint
and overlapping bags take the same path.

Each is compared with ``p`` by the L1 distance ``sum_k |p_k - q_k|`` (between
0 and 2) or by the Kullback-Leibler divergence ``sum_k p_k log(p_k / q_k)``
(0 when ``q == p``, with ``0 log 0 = 0``). Every error is the mean over bags,
each bag counting once whatever its size.
"""

import numpy as np
from scipy.special import rel_entr

from ._decision import class_prior, decide, fit_decision
from ._read import (
    _bags_form,
    as_float_matrix,
    binary_from_fraction,
    check_bags,
)

#: Before a KL divergence is taken, the predicted proportion of every class
#: that the bag holds (``p_k > 0``) is raised to at least ``KL_EPS`` and the row
#: renormalised, so a class that a bag holds but that is never predicted in it
#: costs a large finite penalty (at most about ``-log(KL_EPS)`` = 16.1 nats)
#: instead of infinity. Classes with ``p_k = 0`` add ``0 log 0 = 0`` and are
#: left alone, so the divergence is exactly 0 when the estimate equals ``p``.
KL_EPS = 1e-7

#: Rows of ``y_proba`` must sum to 1 within this absolute tolerance (float32
#: softmax outputs); they are then renormalised.
PROBA_SUM_TOL = 1e-3

#: Names of the four bag errors, in the order :func:`bag_errors` returns them.
BAG_METRICS = ("hard_l1", "soft_l1", "hard_kl", "soft_kl")


def check_proba(y_proba, n_samples, n_classes):
    """Validate predicted probabilities; a 1-D array is P(second class)."""
    y_proba = as_float_matrix(y_proba, "y_proba")
    if y_proba.ndim == 1:
        y_proba = binary_from_fraction(y_proba)
    if y_proba.ndim != 2:
        raise ValueError(
            f"y_proba must have shape (n_samples, n_classes); got {y_proba.shape}."
        )
    if y_proba.shape[0] != n_samples:
        raise ValueError(
            f"y_proba has {y_proba.shape[0]} rows but bags has {n_samples} entries."
        )
    if y_proba.shape[1] != n_classes:
        raise ValueError(
            f"y_proba has {y_proba.shape[1]} columns but props has {n_classes} "
            "classes; pass one probability column per class, in the order of "
            "the props columns (classes_)."
        )
    if not np.all(np.isfinite(y_proba)):
        raise ValueError(
            "y_proba contains NaN or infinite values (a model whose training "
            "diverged?)."
        )
    if y_proba.min(initial=0.0) < -PROBA_SUM_TOL:
        raise ValueError(
            "y_proba contains negative values; pass probabilities "
            "(predict_proba), not decision scores."
        )
    sums = y_proba.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > PROBA_SUM_TOL):
        raise ValueError(
            f"y_proba rows must sum to 1 (tolerance {PROBA_SUM_TOL}); pass "
            "probabilities (predict_proba), not decision scores."
        )
    return np.clip(y_proba, 0.0, None) / sums[:, None]


def _bag_means(segments, n_bags, y_proba, pred, weights=None):
    """Weighted mean over every bag of one-hot predictions or probabilities.

    One ``np.bincount`` over the flattened (bag, class) index: no loop.
    ``segments`` and ``y_proba`` have one row per (bag, member) pair; with
    ``pred`` (the predicted class index of every pair) the mean is of the
    one-hot predictions ("hard"), else of the probabilities ("soft").
    """
    n_classes = y_proba.shape[1]
    if weights is None:
        weights = np.ones(len(segments))
    totals = np.bincount(segments, weights=weights, minlength=n_bags)
    if pred is not None:
        flat = segments * n_classes + pred
        values = weights
    else:
        flat = (segments[:, None] * n_classes + np.arange(n_classes)).ravel()
        values = (y_proba * weights[:, None]).ravel()
    sums = np.bincount(flat, weights=values, minlength=n_bags * n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums.reshape(n_bags, n_classes) / totals[:, None]


def _l1(bag_props, estimate):
    return np.abs(bag_props - estimate).sum(axis=1)


def _kl(bag_props, estimate):
    estimate = np.where(bag_props > 0, np.maximum(estimate, KL_EPS), estimate)
    estimate /= estimate.sum(axis=1, keepdims=True)
    per_bag = rel_entr(bag_props, estimate).sum(axis=1)
    # >= 0 by Gibbs' inequality; clip float rounding only.
    return np.maximum(per_bag, 0.0)


def errors_of_pairs(
    segments,
    bag_props,
    pair_proba,
    metrics=BAG_METRICS,
    weights=None,
    bag_weights=None,
    pair_pred=None,
):
    """Bag errors from already validated (bag, member) pairs (no checks).

    The fast path for code that scores the same bags repeatedly (e.g. a
    classifier's validation bags once per epoch).

    Parameters
    ----------
    segments : ndarray of shape (n_pairs,), dtype int
        Bag of every pair in ``0..n_bags-1``, every bag occurring.
    bag_props : ndarray of shape (n_bags, n_classes)
        Proportions of every bag, rows summing to 1.
    pair_proba : ndarray of shape (n_pairs, n_classes)
        Predicted probabilities of every pair's member, rows summing to 1.
    metrics : iterable of str, default=BAG_METRICS
        Which of ``"hard_l1"``, ``"soft_l1"``, ``"hard_kl"``, ``"soft_kl"``.
    weights : ndarray of shape (n_pairs,), default=None
        Sample weight of every pair's member.
    bag_weights : ndarray of shape (n_bags,), default=None
        Weight of every bag in the mean over bags (None: each bag once).
    pair_pred : ndarray of shape (n_pairs,), default=None
        Predicted class index of every pair's member for the hard errors;
        None: the ``argmax`` of ``pair_proba``.

    Returns
    -------
    errors : dict
        ``{metric: error}``.
    """
    n_bags = bag_props.shape[0]
    estimates = {}
    errors = {}
    for metric in metrics:
        kind, distance = metric.split("_")
        if kind not in estimates:
            pred = None
            if kind == "hard":
                pred = np.argmax(pair_proba, axis=1) if pair_pred is None else pair_pred
            estimates[kind] = _bag_means(segments, n_bags, pair_proba, pred, weights)
        per_bag = (_l1 if distance == "l1" else _kl)(bag_props, estimates[kind])
        errors[metric] = float(np.average(per_bag, weights=bag_weights))
    return errors


def bag_errors_of(bags, y_proba, metrics=BAG_METRICS, decision="argmax", pred=None):
    """Bag errors of validated :class:`~sklearn_llp.core.Bags` (no checks).

    ``pred`` (class index of every row) gives the hard estimates; else
    ``decision`` decides from ``y_proba``: ``"argmax"``, or ``"prior"``
    (labels whose class rates over the rows match the bags' overall
    proportions, the rule of ``LLPClassifier(threshold="prior")``: see
    :func:`sklearn_llp.core._decision.fit_decision`).
    """
    if pred is None and decision == "prior":
        rule = fit_decision("prior", y_proba, class_prior(bags), bags.weights)
        pred = decide(y_proba, *rule)
    weights = None if bags.weights is None else bags.weights[bags.members]
    return errors_of_pairs(
        bags.pair_bags,
        bags.props,
        y_proba[bags.members],
        metrics,
        weights,
        bags.bag_weights,
        None if pred is None else pred[bags.members],
    )


def _n_samples(bags, y_proba):
    """The rows of ``y_proba``, which ``bags`` must match, and ``bags`` read
    in its form (:func:`~sklearn_llp.core.check_bags`).

    A list of index arrays does not say how many samples there are; ``y_proba``
    does. Checked before the bags, so that a length mismatch names the two
    arguments that disagree.
    """
    y_proba = as_float_matrix(y_proba, "y_proba")
    n_samples = y_proba.shape[0] if y_proba.ndim else 1
    form, value = _bags_form(bags, n_samples)
    if form == "bags" and value.n_samples != n_samples:
        raise ValueError(
            f"bags covers {value.n_samples} rows but y_proba has {n_samples}."
        )
    if form == "membership" and value.shape[0] != n_samples:
        raise ValueError(
            f"bags (a membership matrix) has {value.shape[0]} rows but y_proba "
            f"has {n_samples}; it must be (n_samples, n_bags)."
        )
    if form == "ids":
        n_ids = value.shape[0] if value.ndim else 0
        if n_ids != n_samples:
            raise ValueError(
                f"bags has {n_ids} entries but y_proba has {n_samples} rows; "
                "give one bag id per sample (row of y_proba)."
            )
    return n_samples, value


def _check_decision(decision):
    if decision not in ("argmax", "prior"):
        raise ValueError(f"decision must be 'argmax' or 'prior'; got {decision!r}.")


def check_bags_and_proba(bags, props, y_proba, *, classes=None, sample_weight=None):
    """Validated :class:`~sklearn_llp.core.Bags` and probabilities that match."""
    n_samples, bags = _n_samples(bags, y_proba)
    bags = check_bags(
        bags,
        props,
        n_samples=n_samples,
        classes=classes,
        sample_weight=sample_weight,
        require_props=True,
    )
    return bags, check_proba(y_proba, n_samples, bags.n_classes)


def bag_estimates_of(bags, y_proba, pred=None):
    """Soft and hard predicted proportions of every bag (no checks).

    Returns the (weighted) mean probabilities of every bag's rows, and the
    fraction of them predicted as each class (``pred``, the class index of
    every row, or the ``argmax`` of ``y_proba``).
    """
    weights = None if bags.weights is None else bags.weights[bags.members]
    pred = np.argmax(y_proba, axis=1) if pred is None else pred
    pair_proba = y_proba[bags.members]
    return (
        _bag_means(bags.pair_bags, bags.n_bags, pair_proba, None, weights),
        _bag_means(
            bags.pair_bags, bags.n_bags, pair_proba, pred[bags.members], weights
        ),
    )


def _errors(
    bags, props, y_proba, classes, metrics, sample_weight=None, decision="argmax"
):
    _check_decision(decision)
    bags, y_proba = check_bags_and_proba(
        bags, props, y_proba, classes=classes, sample_weight=sample_weight
    )
    return bag_errors_of(bags, y_proba, metrics, decision)
