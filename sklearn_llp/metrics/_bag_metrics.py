"""Bag-level errors of an instance classifier (see :ref:`model_selection`)."""

from ..core._errors import BAG_METRICS, _errors

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
