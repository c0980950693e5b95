"""Cross-validated predictions for LLP: one probability column per class."""

import numbers

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.utils import _safe_indexing

from ..core import check_bags, num_rows
from ._split import BagKFold


def _fit_and_predict(estimator, X, bags, train, test, method, fit_params):
    train_bags, _ = bags.restrict(train)  # carries the fold's sample weights
    estimator.fit(_safe_indexing(X, train), train_bags, **fit_params)
    return getattr(estimator, method)(_safe_indexing(X, test))


def _check_cv(cv):
    """``BagKFold`` for None or an int, as scikit-learn reads ``cv``."""
    if cv is None:
        return BagKFold(5)
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        return BagKFold(cv)
    if isinstance(cv, str) or not hasattr(cv, "split"):
        raise TypeError(
            f"cv must be None, an int (the folds of BagKFold) or a splitter "
            f"with a split method such as BagKFold(5); got {cv!r}."
        )
    return cv


def cross_val_predict(
    estimator,
    X,
    bags,
    props,
    *,
    cv=None,
    method="predict",
    n_jobs=None,
    fit_params=None,
):
    """Predictions for every row from a model that did not train on its bag.

    The LLP counterpart of :func:`sklearn.model_selection.cross_val_predict`:
    every row is predicted by a clone of ``estimator`` fitted on the other
    folds' bags. scikit-learn's function treats ``y`` as class labels: with
    ``y`` holding bag ids, ``method="predict_proba"`` would give one column per
    bag (``LLPClassifier`` refuses that call and points here). Here the
    columns are the classes of ``props``, the same in every fold.

    Parameters
    ----------
    estimator : LLPClassifier or Pipeline ending in one
        Cloned for every fold; fitted as ``fit(X_train, bags_train)`` with the
        fold's validated :class:`~sklearn_llp.core.Bags` (proportions and
        sample weights included).
    X : array-like or DataFrame of shape (n_samples, n_features)
    bags : array-like, DataFrame, sparse matrix or list of arrays
        The bags, in any form :func:`~sklearn_llp.core.check_bags` accepts.
    props : array-like, DataFrame, Series or dict
        Their proportions, in any form :func:`~sklearn_llp.core.check_bags`
        accepts.
    cv : int or splitter, default=None
        Splits rows into whole bags; default ``BagKFold(5)``, an int ``k``
        is ``BagKFold(k)``. Every bagged row must be tested exactly once.
    method : {"predict", "predict_proba"}, default="predict"
        The estimator's method to call on the held-out rows.
    n_jobs : int, default=None
        Folds fitted in parallel (joblib).
    fit_params : dict, default=None
        Extra keyword arguments of ``fit`` (e.g. ``max_epochs`` for a
        Pipeline step is a parameter, not a fit parameter). A
        ``"sample_weight"`` (one weight per row of ``X``) is validated with
        the bags, before any fold is fitted, and reaches every fold's ``fit``
        through its bags, restricted to the fold's rows; a row of weight 0
        is still predicted.

    Returns
    -------
    predictions : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Class labels, or probabilities with columns in the order of the
        classes of ``props``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp import LLPClassifier
    >>> from sklearn_llp.model_selection import cross_val_predict
    >>> rng = np.random.RandomState(0)
    >>> y = rng.randint(0, 2, 60)
    >>> X = rng.normal(size=(60, 2)) + 2 * y[:, None]
    >>> bags = np.arange(60) // 6
    >>> props = np.bincount(bags, weights=y)[bags] / 6
    >>> clf = LLPClassifier(method="dllp", max_epochs=5, verbose=0, random_state=0)
    >>> cross_val_predict(clf, X, bags, props, cv=None, method="predict_proba").shape
    (60, 2)
    """
    if method not in ("predict", "predict_proba"):
        raise ValueError(
            f"method must be 'predict' or 'predict_proba'; got {method!r}."
        )
    n_samples = num_rows(X)
    fit_params = dict(fit_params or {})
    # validated once, with the bags: each fold's Bags carry its rows' weights
    validated = check_bags(
        bags,
        props,
        n_samples=n_samples,
        sample_weight=fit_params.pop("sample_weight", None),
        require_props=True,
    )
    cv = _check_cv(cv)
    splits = list(cv.split(X, bags))
    tested = np.concatenate([test for _, test in splits])
    if len(tested) != n_samples or len(np.unique(tested)) != n_samples:
        raise ValueError(
            "cross_val_predict needs every row tested exactly once: cv must "
            "partition the rows (e.g. BagKFold), and every row must be in a bag."
        )
    results = Parallel(n_jobs=n_jobs)(
        delayed(_fit_and_predict)(
            clone(estimator), X, validated, train, test, method, fit_params
        )
        for train, test in splits
    )
    first = np.asarray(results[0])
    predictions = np.empty((n_samples, *first.shape[1:]), dtype=first.dtype)
    for (_, test), result in zip(splits, results):
        predictions[test] = result
    return predictions
