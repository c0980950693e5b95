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

from ..core import check_bags
from ..core._decision import class_prior, decide, fit_decision
from ..core._read import (
    _bags_form,
    as_float_matrix,
    binary_from_fraction,
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


_PARAMETERS = """
    Parameters
    ----------
    bags : array-like of shape (n_samples,), sparse matrix or list of arrays
        Bag id of every sample (integers or strings), or bags that may
        overlap: a sparse ``(n_samples, n_bags)`` membership matrix (nonzero
        entries mark membership) or a list of ``n_bags`` arrays of row
        indices of ``y_proba``.
    props : array-like or DataFrame or Series or dict
        Label proportions of the bags, in any form that
        :func:`sklearn_llp.core.check_bags` accepts: with bag ids,
        sample-aligned ``(n_samples, n_classes)``, a 1-D positive-class
        fraction (binary), or a per-bag table indexed by bag id; with
        overlapping bags, one row per bag ``(n_bags, n_classes)`` or a table
        keyed by ``0..n_bags-1``. A single bag is accepted.
    y_proba : array-like of shape (n_samples, n_classes)
        Predicted class probabilities (``predict_proba``), columns in the order
        of ``classes``; for two classes a 1-D array is read as the
        probability of the second class.
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``y_proba`` (``estimator.classes_``); a
        ``props`` DataFrame is reordered to them by column label.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every sample within its bag: a bag's estimate is the
        weighted mean of its members' predictions (each bag still counts
        once in the mean over bags).
"""


def hard_l1_error(
    bags, props, y_proba, *, classes=None, sample_weight=None, decision="argmax"
):
    """Mean over bags of the L1 error of the predicted-label proportions.

    For each bag, ``||p - q||_1`` with ``q`` the fraction of the bag's
    instances predicted as each class (by ``decision``); then the mean over
    bags. Between 0 and 2. With one instance per bag, ``1 - error / 2`` is the
    accuracy.
    {parameters}    decision : {"argmax", "prior"}, default="argmax"
        How instances are labelled: the most probable class, or the labels
        whose class rates over all rows match the overall proportions of the
        bags (prior matching; see ``LLPClassifier(threshold="prior")``). With
        a rare class that no bag holds in majority, ``argmax`` can label every
        row with the common class, so that the error is the same for every
        model (a tie); prior matching still ranks the models.

    Returns
    -------
    error : float
        Mean bag L1 error, lower is better.

    See Also
    --------
    bag_errors : All four bag errors at once.

    Examples
    --------
    >>> from sklearn_llp.metrics import hard_l1_error
    >>> bags = [0, 0, 1, 1]
    >>> props = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]]
    >>> y_proba = [[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7]]
    >>> round(hard_l1_error(bags, props, y_proba), 6)
    0.5
    """
    return _errors(
        bags, props, y_proba, classes, ("hard_l1",), sample_weight, decision
    )["hard_l1"]


def soft_l1_error(bags, props, y_proba, *, classes=None, sample_weight=None):
    """Mean over bags of the L1 error of the mean predicted probabilities.

    For each bag, ``||p - mean(y_proba)||_1`` over the bag's instances; then
    the mean over bags. Between 0 and 2.
    {parameters}
    Returns
    -------
    error : float
        Mean bag L1 error, lower is better.

    See Also
    --------
    bag_errors : All four bag errors at once.

    Examples
    --------
    >>> from sklearn_llp.metrics import soft_l1_error
    >>> bags = [0, 0, 1, 1]
    >>> props = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]]
    >>> y_proba = [[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7]]
    >>> round(soft_l1_error(bags, props, y_proba), 6)
    0.5
    """
    return _errors(bags, props, y_proba, classes, ("soft_l1",), sample_weight)[
        "soft_l1"
    ]


def hard_kl_error(
    bags, props, y_proba, *, classes=None, sample_weight=None, decision="argmax"
):
    """Mean over bags of KL(p || predicted-label proportions).

    For each bag, the Kullback-Leibler divergence ``sum_k p_k log(p_k / q_k)``
    (``0 log 0 = 0``) with ``q`` the fraction of the bag's instances predicted
    as each class by ``decision`` (where ``p_k > 0``, raised to at least
    :data:`KL_EPS`, then renormalised); then the mean over bags. Zero when
    ``q == p``, positive otherwise.
    {parameters}    decision : {"argmax", "prior"}, default="argmax"
        How instances are labelled (see :func:`hard_l1_error`).

    Returns
    -------
    error : float
        Mean bag KL divergence in nats, lower is better.

    See Also
    --------
    bag_errors : All four bag errors at once.

    Examples
    --------
    >>> from sklearn_llp.metrics import hard_kl_error
    >>> bags = [0, 0, 1, 1]
    >>> props = [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]
    >>> y_proba = [[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7]]
    >>> hard_kl_error(bags, props, y_proba)
    0.0
    """
    return _errors(
        bags, props, y_proba, classes, ("hard_kl",), sample_weight, decision
    )["hard_kl"]


def soft_kl_error(bags, props, y_proba, *, classes=None, sample_weight=None):
    """Mean over bags of KL(p || mean predicted probabilities).

    For each bag, the Kullback-Leibler divergence ``sum_k p_k log(p_k / q_k)``
    (``0 log 0 = 0``) with ``q`` the mean of the bag's predicted
    probabilities (where ``p_k > 0``, raised to at least :data:`KL_EPS`, then
    renormalised); then the mean over bags. This is a true divergence, zero
    when ``q == p``; it differs from the bag cross-entropy
    ``-sum_k p_k log q_k`` (the DLLP training loss) by the entropy of ``p``,
    which does not depend on the model.
    {parameters}
    Returns
    -------
    error : float
        Mean bag KL divergence in nats, lower is better.

    See Also
    --------
    bag_errors : All four bag errors at once.

    Examples
    --------
    >>> from sklearn_llp.metrics import soft_kl_error
    >>> bags = [0, 0, 1, 1]
    >>> props = [[0.6, 0.4], [0.6, 0.4], [0.5, 0.5], [0.5, 0.5]]
    >>> y_proba = [[0.8, 0.2], [0.4, 0.6], [0.2, 0.8], [0.8, 0.2]]
    >>> soft_kl_error(bags, props, y_proba)
    0.0
    """
    return _errors(bags, props, y_proba, classes, ("soft_kl",), sample_weight)[
        "soft_kl"
    ]


def bag_errors(
    bags,
    props,
    y_proba,
    *,
    classes=None,
    metrics=BAG_METRICS,
    sample_weight=None,
    decision="argmax",
):
    """Several bag errors at once, validating and averaging only once.

    Parameters
    ----------
    bags : array-like of shape (n_samples,), sparse matrix or list of arrays
        Bag id of every sample (integers or strings), or overlapping bags as
        a sparse ``(n_samples, n_bags)`` membership matrix or a list of
        ``n_bags`` arrays of row indices.
    props : array-like or DataFrame or Series or dict
        Label proportions of the bags, in any form that
        :func:`sklearn_llp.core.check_bags` accepts (one row per
        bag with overlapping bags). A single bag is accepted.
    y_proba : array-like of shape (n_samples, n_classes)
        Predicted class probabilities, columns in the order of ``classes``.
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``y_proba`` (``estimator.classes_``).
    metrics : iterable of str, default=BAG_METRICS
        Which errors to compute, among ``"hard_l1"``, ``"soft_l1"``,
        ``"hard_kl"`` and ``"soft_kl"``.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every sample within its bag (see :func:`hard_l1_error`).
    decision : {"argmax", "prior"}, default="argmax"
        How instances are labelled for the hard errors (see
        :func:`hard_l1_error`).

    Returns
    -------
    errors : dict
        ``{metric: error}``, each as computed by the function of that name
        (:func:`hard_l1_error` and so on).

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_errors
    >>> bags = [0, 0, 1, 1]
    >>> props = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]]
    >>> y_proba = [[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7]]
    >>> {name: round(value, 4) for name, value in bag_errors(
    ...     bags, props, y_proba).items()}
    {'hard_l1': 0.5, 'soft_l1': 0.5, 'hard_kl': 0.3466, 'soft_kl': 0.2656}

    Overlapping bags, as lists of row indices with one row of ``props`` per
    bag (row 1 is in both bags):

    >>> lists = [[0, 1], [1, 2, 3]]
    >>> per_bag = [[0.5, 0.5], [2 / 3, 1 / 3]]
    >>> {name: round(value, 4) for name, value in bag_errors(
    ...     lists, per_bag, y_proba, metrics=["hard_l1", "soft_l1"]).items()}
    {'hard_l1': 0.3333, 'soft_l1': 0.2333}
    """
    metrics = tuple(metrics)
    unknown = [m for m in metrics if m not in BAG_METRICS]
    if unknown or not metrics:
        raise ValueError(f"metrics must be among {BAG_METRICS}; got {metrics}.")
    return _errors(bags, props, y_proba, classes, metrics, sample_weight, decision)


for _function in (hard_l1_error, soft_l1_error, hard_kl_error, soft_kl_error):
    _function.__doc__ = _function.__doc__.replace("{parameters}", _PARAMETERS)
del _function
