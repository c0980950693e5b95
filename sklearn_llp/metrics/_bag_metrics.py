"""Bag-level errors of a classifier's probabilities and a regressor's
predictions (see :ref:`model_selection`)."""

from ..core import (
    BAG_METRICS,
    CLASSIFICATION,
    REGRESSION,
    bag_errors_of,
    check_bags_and_output,
    dask_bag_errors,
    is_dask,
)

_CLASSIFICATION_PARAMETERS = """
    Parameters
    ----------
    bags : array-like, sparse matrix, list of arrays or Bags
        The bag of every row, in any form of
        :func:`~sklearn_llp.core.check_bags` (overlapping bags too).
    props : array-like, DataFrame, Series or dict
        Label proportions, sample-aligned or a per-bag table.
    y_proba : array-like of shape (n_samples, n_classes)
        Predicted probabilities (``predict_proba``) in the order of
        ``classes``; 1-D: the probability of the second class.
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``y_proba``; named ``props`` columns are
        matched to them.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every row within its bag.
"""

_REGRESSION_PARAMETERS = """
    Parameters
    ----------
    bags : array-like, sparse matrix, list of arrays or Bags
        The bag of every row, in any form of
        :func:`~sklearn_llp.core.check_bags`.
    targets : array-like, Series, DataFrame or dict
        The mean of every bag, sample-aligned or a per-bag table.
    y_pred : array-like of shape (n_samples,)
        Predicted target of every row.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every row within its bag.
"""


def _errors(
    task,
    bags,
    values,
    output,
    metrics,
    *,
    classes=None,
    sample_weight=None,
    decision="argmax",
):
    if decision not in ("argmax", "prior"):
        raise ValueError(f"decision must be 'argmax' or 'prior'; got {decision!r}.")
    if is_dask(output) or is_dask(bags):
        if decision != "argmax" or sample_weight is not None:
            raise ValueError(
                "With Dask input, bag errors are reduced partition by partition: "
                "decision='argmax' and no sample_weight."
            )
        return dask_bag_errors(task, bags, values, output, metrics, classes=classes)[0]
    bags, output = check_bags_and_output(
        bags, values, output, task, classes=classes, sample_weight=sample_weight
    )
    return bag_errors_of(bags, output, metrics, decision)


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
    """Several bag errors of a classifier at once: ``{metric: error}``.

    Every error is a mean over bags: L1 (0 to 2) or KL divergence between a
    bag's proportions ``p`` and its estimate -- "hard", the share of its rows
    labelled each class, or "soft", its mean probabilities.
    {parameters}    metrics : iterable of str, default=BAG_METRICS
        Among ``"hard_l1"``, ``"soft_l1"``, ``"hard_kl"``, ``"soft_kl"``.
    decision : {"argmax", "prior"}, default="argmax"
        How rows are labelled for the hard errors: the most probable class,
        or prior matching (class rates equal to the bags'; see
        :ref:`threshold`), which still ranks models that ``argmax`` would tie
        when a rare class is a minority in every bag.

    Returns
    -------
    errors : dict

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_errors
    >>> y_proba = [[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7]]
    >>> props = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]]
    >>> {k: round(v, 4) for k, v in bag_errors([0, 0, 1, 1], props, y_proba).items()}
    {'hard_l1': 0.5, 'soft_l1': 0.5, 'hard_kl': 0.3466, 'soft_kl': 0.2656}
    """
    metrics = tuple(metrics)
    if not metrics or any(m not in BAG_METRICS for m in metrics):
        raise ValueError(f"metrics must be among {BAG_METRICS}; got {metrics}.")
    options = dict(classes=classes, sample_weight=sample_weight, decision=decision)
    return _errors(CLASSIFICATION, bags, props, y_proba, metrics, **options)


def _one(metric, summary, example):
    def error(
        bags, props, y_proba, *, classes=None, sample_weight=None, decision="argmax"
    ):
        options = dict(classes=classes, sample_weight=sample_weight, decision=decision)
        return bag_errors(bags, props, y_proba, metrics=(metric,), **options)[metric]

    error.__name__ = error.__qualname__ = f"{metric}_error"
    error.__doc__ = (
        f"{summary}\n{_CLASSIFICATION_PARAMETERS}    decision : {{'argmax', "
        "'prior'}, default='argmax'\n        See :func:`bag_errors`.\n\n"
        "    Returns\n    -------\n    error : float\n        Lower is better.\n\n"
        "    Examples\n    --------\n    >>> from sklearn_llp.metrics import "
        f"{metric}_error\n    >>> y_proba = [[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], "
        "[0.3, 0.7]]\n    >>> props = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], "
        f"[1.0, 0.0]]\n    >>> round({metric}_error([0, 0, 1, 1], props, y_proba), "
        f"4)\n    {example}\n"
    )
    return error


hard_l1_error = _one(
    "hard_l1",
    "Mean over bags of ``||p - q||_1``, ``q`` the share of the bag's rows\n"
    "    labelled each class. With one row per bag, ``1 - error / 2`` is the\n"
    "    accuracy; the model-selection criterion of the LLP-VAT paper.",
    "0.5",
)
soft_l1_error = _one("soft_l1", "Mean over bags of ``||p - mean(y_proba)||_1``.", "0.5")
hard_kl_error = _one(
    "hard_kl",
    "Mean over bags of ``KL(p || q)``, ``q`` the share of rows labelled\n"
    "    each class (raised to at least ``KL_EPS`` where ``p > 0``).",
    "0.3466",
)
soft_kl_error = _one(
    "soft_kl", "Mean over bags of ``KL(p || mean(y_proba))``.", "0.2656"
)
bag_errors.__doc__ = bag_errors.__doc__.replace(
    "{parameters}", _CLASSIFICATION_PARAMETERS
)


def _regression(metric, summary, example):
    def score(bags, targets, y_pred, *, sample_weight=None):
        return _errors(
            REGRESSION, bags, targets, y_pred, (metric,), sample_weight=sample_weight
        )[metric]

    name = {
        "mse": "bag_mean_squared_error",
        "mae": "bag_mean_absolute_error",
        "r2": "bag_r2_score",
    }[metric]
    score.__name__ = score.__qualname__ = name
    score.__doc__ = (
        f"{summary}\n{_REGRESSION_PARAMETERS}\n    Returns\n    -------\n"
        f"    {'score' if metric == 'r2' else 'error'} : float\n\n"
        f"    Examples\n    --------\n    >>> from sklearn_llp.metrics import {name}\n"
        f"    >>> {name}([0, 0, 1, 1], {{0: 2.0, 1: 5.0}}, [1.0, 2.0, 4.0, 4.0])\n"
        f"    {example}\n"
    )
    return score


bag_mean_squared_error = _regression(
    "mse",
    "Mean over bags of ``(y_a - f_a)^2``, ``y_a`` the bag's mean and ``f_a``\n"
    "    the mean of ``y_pred`` over its rows, bags weighted by size as in\n"
    "    training (on random bags, proportional to an estimate of instance MSE).",
    "0.625",
)
bag_mean_absolute_error = _regression(
    "mae", "Mean over bags of ``|y_a - f_a|`` (see bag_mean_squared_error).", "0.75"
)
bag_r2_score = _regression(
    "r2",
    "R^2 of the predicted bag means, bags weighted by size. It measures the\n"
    "    bag means: on non-random bags (K-means, by region) it is not instance\n"
    "    R^2, and is usually far higher (see :ref:`regression`).",
    "0.7222222222222222",
)
