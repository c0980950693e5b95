"""Out-of-fold predictions for LLP: one probability column per class."""

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

    scikit-learn's ``cross_val_predict`` would give one probability column per
    bag id (``y`` holds them); here the columns are the classes of ``props``.

    Parameters
    ----------
    estimator : LLP classifier or Pipeline ending in one
        Cloned and fitted on each fold's validated bags.
    X : array-like or DataFrame of shape (n_samples, n_features)
    bags : array-like, DataFrame, sparse matrix or list of arrays
        The bags (:ref:`data_model`).
    props : array-like, DataFrame, Series or dict
        Their label proportions.
    cv : int or splitter, default=None
        Splits the rows into whole bags, every row tested once; ``BagKFold(5)``.
    method : {"predict", "predict_proba"}, default="predict"
        The estimator's method for the held-out rows.
    n_jobs : int, default=None
        Folds fitted in parallel (joblib).
    fit_params : dict, default=None
        Extra arguments of ``fit``; ``sample_weight`` travels with the bags.

    Returns
    -------
    predictions : ndarray of shape (n_samples,) or (n_samples, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.linear import MeanMapClassifier
    >>> from sklearn_llp.model_selection import cross_val_predict
    >>> rng = np.random.RandomState(0)
    >>> y = rng.randint(0, 2, 60)
    >>> X = rng.normal(size=(60, 2)) + 2 * y[:, None]
    >>> bags = np.arange(60) // 6
    >>> props = np.bincount(bags, weights=y)[bags] / 6
    >>> clf = MeanMapClassifier()
    >>> cross_val_predict(clf, X, bags, props, method="predict_proba").shape
    (60, 2)
    """
    if method not in ("predict", "predict_proba"):
        raise ValueError(
            f"method must be 'predict' or 'predict_proba'; got {method!r}."
        )
    n_samples = num_rows(X)
    fit_params = dict(fit_params or {})
    # validated once, with the bags: each fold's Bags carry its rows' weights
    weights = fit_params.pop("sample_weight", None)
    validated = check_bags(
        bags, props, n_samples=n_samples, sample_weight=weights, require_props=True
    )
    if cv is None or isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        cv = BagKFold(5 if cv is None else cv)
    elif isinstance(cv, str) or not hasattr(cv, "split"):
        raise TypeError(
            f"cv must be None, an int (the folds of BagKFold) or a splitter "
            f"with a split method such as BagKFold(5); got {cv!r}."
        )
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
    # columns: the classes, the same in every fold; rows back in their order
    return np.concatenate(results)[np.argsort(tested)]
