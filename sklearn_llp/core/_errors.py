"""Bag-level errors of instance predictions: one definition for both tasks,
and :func:`decision_of`, the one fit of a decision rule."""

import numpy as np
import scipy.sparse as sp
from scipy.special import rel_entr

from ._bags import CLASSIFICATION, REGRESSION
from ._decision import class_prior, decide, fit_decision
from ._read import (
    as_float_matrix,
    bags_form,
    binary_from_fraction,
    check_bags,
    values_argument,
)

#: A predicted proportion of a class the bag holds is raised to at least
#: this before a KL divergence, so a missed class costs a finite penalty.
KL_EPS = 1e-7
#: Rows of ``y_proba`` must sum to 1 within this tolerance (float32 softmax).
PROBA_SUM_TOL = 1e-3
#: The bag errors of each task, as metrics and scorers name them.
BAG_METRICS = ("hard_l1", "soft_l1", "hard_kl", "soft_kl")
REGRESSION_METRICS = ("mse", "mae", "r2")
METRICS = {
    **dict.fromkeys(BAG_METRICS, CLASSIFICATION),
    **dict.fromkeys(REGRESSION_METRICS, REGRESSION),
}


def check_proba(y_proba, n_samples, n_classes):
    """Validated probabilities; a 1-D array is P(second class)."""
    y_proba = as_float_matrix(y_proba, "y_proba")
    if y_proba.ndim == 1:
        y_proba = binary_from_fraction(y_proba, "y_proba")
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


def check_predictions(y_pred, n_samples):
    """Validated regression outputs, one finite value per row."""
    y_pred = as_float_matrix(y_pred, "y_pred")
    if y_pred.ndim == 2 and y_pred.shape[1] == 1:
        y_pred = y_pred[:, 0]
    if y_pred.ndim != 1 or y_pred.shape[0] != n_samples:
        raise ValueError(
            f"y_pred must hold one value per row ({n_samples}); got shape "
            f"{y_pred.shape}."
        )
    if not np.all(np.isfinite(y_pred)):
        raise ValueError("y_pred contains NaN or infinite values.")
    return y_pred


def bag_means(bags, values):
    """Weighted mean of the rows' ``values`` (n_samples, k), dense or sparse,
    over every bag: dense ``(n_bags, k)``, the one definition of a bag mean."""
    weights = np.ones(bags.n_samples) if bags.weights is None else bags.weights
    membership = (weights[bags.members], bags.members, bags.indptr)
    sums = sp.csr_matrix(membership, shape=(bags.n_bags, bags.n_samples)) @ (
        values if sp.issparse(values) else values.reshape(len(values), -1)
    )
    sums = sums.toarray() if sp.issparse(sums) else sums
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / bags.total_weights()[:, None]


def decision_of(bags, proba, rule):
    """``(offsets, threshold)`` of ``rule`` fitted on the rows of ``bags``."""
    if rule == "argmax" or (isinstance(rule, float)):
        return fit_decision(rule, proba[:0])
    rows = bags.distinct_rows()
    weights = None if bags.weights is None else bags.weights[rows]
    return fit_decision(rule, proba[rows], class_prior(bags), weights)


def bag_estimates_of(bags, proba, pred=None):
    """Soft and hard class proportions of every bag (``pred``: default argmax)."""
    pred = np.argmax(proba, axis=1) if pred is None else pred
    one_hot = np.eye(proba.shape[1])[pred]
    return bag_means(bags, proba), bag_means(bags, one_hot)


def _kl(props, estimate):
    estimate = np.where(props > 0, np.maximum(estimate, KL_EPS), estimate)
    estimate = estimate / estimate.sum(axis=1, keepdims=True)
    return np.maximum(rel_entr(props, estimate).sum(axis=1), 0.0)


def bag_errors_of(bags, output, metrics, decision="argmax", pred=None, sizes=None):
    """``{metric: error}`` of validated ``bags`` and per-row ``output`` (no checks).

    ``pred`` (class index per row) or ``decision`` gives hard errors. Regression
    weighs bags by ``Bags.loss_weights`` as training does (``sizes``: the sizes
    when ``bags`` holds one row per bag): on random bags that ranks models as
    their instance MSE would."""
    errors = {}
    if bags.task == REGRESSION:
        means = bags.means
        residual = means - bag_means(bags, output)[:, 0]
        weights = bags.loss_weights(sizes)
        average = lambda v: float(np.average(v, weights=weights))  # noqa: E731
        mse = average(residual**2)
        total = average((means - average(means)) ** 2)
        found = {"mse": mse, "mae": average(np.abs(residual))}
        found["r2"] = 1.0 - mse / total if total > 0 else float(mse == 0)
        return {m: found[m] for m in metrics}
    soft = hard = None
    for metric in metrics:
        kind, distance = metric.split("_")
        if kind == "soft":
            soft = bag_means(bags, output) if soft is None else soft
            estimate = soft
        else:
            if hard is None:
                if pred is None:
                    pred = decide(output, *decision_of(bags, output, decision))
                hard = bag_means(bags, np.eye(output.shape[1])[pred])
            estimate = hard
        if distance == "l1":
            per_bag = np.abs(bags.props - estimate).sum(axis=1)
        else:
            per_bag = _kl(bags.props, estimate)
        errors[metric] = float(np.average(per_bag, weights=bags.bag_weights))
    return errors


def check_bags_and_output(
    bags, values, output, task, *, classes=None, sample_weight=None
):
    """Validated bags and a per-row output of matching length."""
    what = "y_proba" if task == CLASSIFICATION else "y_pred"
    array = as_float_matrix(output, what)
    n_samples = array.shape[0] if array.ndim else 1
    form, value = bags_form(bags, n_samples)
    if form == "bags" and value.n_samples != n_samples:
        raise ValueError(
            f"bags covers {value.n_samples} rows but {what} has {n_samples}."
        )
    if form == "membership" and value.shape[0] != n_samples:
        raise ValueError(
            f"bags (a membership matrix) has {value.shape[0]} rows but {what} "
            f"has {n_samples}; it must be (n_samples, n_bags)."
        )
    n_ids = (value.shape[0] if value.ndim else 0) if form == "ids" else n_samples
    if n_ids != n_samples:
        raise ValueError(
            f"bags has {n_ids} entries but {what} has {n_samples} rows; give "
            "exactly one bag id per row."
        )
    given = {values_argument(task): values, "classes": classes, "task": task}
    bags = check_bags(
        value, n_samples=n_samples, sample_weight=sample_weight, rows_of=what, **given
    )
    if task == CLASSIFICATION:
        return bags, check_proba(array, n_samples, bags.n_classes)
    return bags, check_predictions(array, n_samples)


def check_bags_and_proba(bags, props, y_proba, *, classes=None, sample_weight=None):
    """Validated classification bags and probabilities that match."""
    given = dict(classes=classes, sample_weight=sample_weight)
    return check_bags_and_output(bags, props, y_proba, CLASSIFICATION, **given)
