"""Bag-level errors and scorers of a regressor learned from bag means.

With aggregate responses every bag gives only the mean of its rows'
targets, so a regressor is judged on how well the mean of its predictions
over every bag matches the given mean: the *predicted bag mean* is the
(sample-weighted) mean of ``y_pred`` over the bag's rows, and the errors
compare it with the bag's mean, each bag counting once whatever its size
(as the classification bag errors do):

- :func:`bag_mean_squared_error`: ``mean_a (y_a - f_a)^2``;
- :func:`bag_mean_absolute_error`: ``mean_a |y_a - f_a|``;
- :func:`bag_r2_score`: ``1 - sum_a (y_a - f_a)^2 / sum_a (y_a - mean(y))^2``,
  the coefficient of determination of the bag means (1 is perfect).

With one row per bag they are scikit-learn's ``mean_squared_error``,
``mean_absolute_error`` and ``r2_score``. The scorers
(:class:`BagRegressionScorer`) follow the classification ones
(:class:`~sklearn_llp.metrics.BagScorer`): the bag means reach them through
metadata routing (``targets``) or from a per-bag table they hold, and a
scorer that gets neither raises instead of scoring something else.
"""

from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.utils.metadata_routing import MetadataRequest

from ..core import Bags
from ..core._read import (
    TARGET_COLUMN,
    _bags_form,
    _lookup_targets,
    _target_values,
    _targets_frame,
    check_bag_targets,
    check_bags,
    num_rows,
)

#: Names of the bag regression metrics, as :class:`BagRegressionScorer` takes them.
BAG_REGRESSION_METRICS = ("mse", "mae", "r2")


def bag_means_of(bags, y_pred):
    """The (weighted) mean of ``y_pred`` over every bag of validated ``bags``
    (no checks)."""
    weights = (
        np.ones(len(bags.members))
        if bags.weights is None
        else bags.weights[bags.members]
    )
    totals = np.bincount(bags.pair_bags, weights=weights, minlength=bags.n_bags)
    sums = np.bincount(
        bags.pair_bags, weights=weights * y_pred[bags.members], minlength=bags.n_bags
    )
    return sums / totals


def regression_errors_of(bag_means, bag_pred, bag_weights=None):
    """``{"mse", "mae", "r2"}`` of predicted against given bag means.

    Each bag counts once (``bag_weights`` weigh them if given). R^2 of bags
    whose means are all equal is 1.0 for a perfect prediction, else 0.0 (as
    scikit-learn's ``r2_score``).
    """
    bag_means = np.asarray(bag_means, dtype=np.float64)
    residual = bag_means - bag_pred
    mse = float(np.average(residual**2, weights=bag_weights))
    mae = float(np.average(np.abs(residual), weights=bag_weights))
    centre = np.average(bag_means, weights=bag_weights)
    total = float(np.average((bag_means - centre) ** 2, weights=bag_weights))
    if total > 0:
        r2 = 1.0 - mse / total
    else:
        r2 = 1.0 if mse == 0 else 0.0
    return {"mse": mse, "mae": mae, "r2": r2}


def _check_y_pred(y_pred, n_samples):
    y_pred = _target_values(y_pred, "y_pred")
    if y_pred.shape[0] != n_samples:
        raise ValueError(
            f"y_pred has {y_pred.shape[0]} values but bags has {n_samples} rows."
        )
    return y_pred


def _n_samples_of(bags, y_pred):
    """Rows of ``y_pred`` (which ``bags`` must cover), checked first so that a
    length mismatch names the two arguments that disagree."""
    try:
        y_pred = np.asarray(y_pred, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"y_pred must hold numbers; {exc}") from exc
    n_samples = y_pred.shape[0] if y_pred.ndim else 1
    form, value = _bags_form(bags, n_samples)
    if form == "ids":
        n_ids = value.shape[0] if value.ndim else 0
        if n_ids != n_samples:
            raise ValueError(
                f"bags has {n_ids} entries but y_pred has {n_samples} values; "
                "give one bag id per sample."
            )
    return n_samples


def _errors(bags, targets, y_pred, sample_weight):
    n_samples = _n_samples_of(bags, y_pred)
    bags = check_bag_targets(
        bags, targets, n_samples=n_samples, sample_weight=sample_weight
    )
    y_pred = _check_y_pred(y_pred, n_samples)
    return regression_errors_of(
        bags.props[:, 0], bag_means_of(bags, y_pred), bags.bag_weights
    )


_PARAMETERS = """
    Parameters
    ----------
    bags : array-like of shape (n_samples,), sparse matrix, list of arrays or Bags
        Bag id of every sample, or overlapping bags (a sparse membership
        matrix or a list of row-index arrays), in any form of
        :func:`sklearn_llp.core.check_bags`; or a
        :class:`~sklearn_llp.core.Bags` from
        :func:`~sklearn_llp.core.check_bag_targets` (then ``targets=None``).
    targets : array-like, Series, DataFrame or dict
        The mean of every bag, in any form of
        :func:`~sklearn_llp.core.check_bag_targets`: one value per row (its
        bag's mean) or a per-bag table keyed by bag id. A single bag is
        accepted.
    y_pred : array-like of shape (n_samples,)
        Predicted target of every row (``estimator.predict(X)``).
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every row within its bag: a bag's predicted mean is the
        weighted mean of its rows' predictions (each bag still counts once).
"""


def bag_mean_squared_error(bags, targets, y_pred, *, sample_weight=None):
    """Mean over bags of the squared error of the predicted bag means.

    For each bag, ``(y_a - f_a)^2`` with ``y_a`` its given mean and ``f_a``
    the mean of ``y_pred`` over its rows; then the mean over bags.
    {parameters}
    Returns
    -------
    error : float
        Lower is better; in the squared units of the target.

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_mean_squared_error
    >>> bags = [0, 0, 1, 1]
    >>> targets = {0: 2.0, 1: 5.0}
    >>> y_pred = [1.0, 2.0, 4.0, 4.0]  # bag means 1.5 and 4.0
    >>> bag_mean_squared_error(bags, targets, y_pred)  # (0.25 + 1) / 2
    0.625
    """
    return _errors(bags, targets, y_pred, sample_weight)["mse"]


def bag_mean_absolute_error(bags, targets, y_pred, *, sample_weight=None):
    """Mean over bags of the absolute error of the predicted bag means.

    For each bag, ``|y_a - f_a|`` with ``y_a`` its given mean and ``f_a`` the
    mean of ``y_pred`` over its rows; then the mean over bags.
    {parameters}
    Returns
    -------
    error : float
        Lower is better; in the units of the target.

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_mean_absolute_error
    >>> bag_mean_absolute_error([0, 0, 1, 1], {0: 2.0, 1: 5.0}, [1.0, 2.0, 4.0, 4.0])
    0.75
    """
    return _errors(bags, targets, y_pred, sample_weight)["mae"]


def bag_r2_score(bags, targets, y_pred, *, sample_weight=None):
    """Coefficient of determination (R^2) of the predicted bag means.

    ``1 - sum_a (y_a - f_a)^2 / sum_a (y_a - mean_b y_b)^2`` over the bags,
    each counting once: 1 when every bag's mean prediction equals its mean,
    0 for predicting the mean of the bag means everywhere. Bags whose means
    are all equal score 1.0 if predicted exactly, else 0.0 (as scikit-learn's
    ``r2_score``). With one row per bag it is ``r2_score``.
    {parameters}
    Returns
    -------
    score : float
        At most 1, greater is better.

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_r2_score
    >>> bag_r2_score([0, 0, 1, 1], {0: 2.0, 1: 5.0}, [1.0, 2.0, 4.0, 4.0])
    0.7222222222222222
    """
    return _errors(bags, targets, y_pred, sample_weight)["r2"]


for _function in (bag_mean_squared_error, bag_mean_absolute_error, bag_r2_score):
    _function.__doc__ = _function.__doc__.replace("{parameters}", _PARAMETERS)
del _function


# ----------------------------------------------------------------------
# scorers
# ----------------------------------------------------------------------
_NO_TARGETS = (
    "{scorer} received no bag means (targets), so it cannot score bags. In "
    "scikit-learn's default configuration (metadata routing off) GridSearchCV "
    "and cross_validate give a scorer only X and y (the bag ids). Either "
    "(1) enable metadata routing, sklearn.set_config(enable_metadata_routing="
    "True) or with sklearn.config_context(enable_metadata_routing=True):, and "
    "pass the means: GridSearchCV(...).fit(X, bags, targets=targets) or "
    "cross_validate(..., params={{'targets': targets}}); or (2) build a scorer "
    "that holds the mean of every bag: make_bag_regression_scorer({metric!r}, "
    "bags=bags, targets=targets) or make_bag_regression_scorer({metric!r}, "
    "targets_table=table) with a Series indexed by bag id."
)


def bag_targets_table(bags, targets):
    """Collapse sample-aligned bag means to one value per bag.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every sample.
    targets : array-like, Series, DataFrame or dict
        The bag means, in any form of
        :func:`~sklearn_llp.core.check_bag_targets`.

    Returns
    -------
    table : Series of shape (n_bags,)
        Means indexed by bag id (index name ``"bag"``), named ``"mean"``.

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_targets_table
    >>> bag_targets_table(["a", "a", "b"], [2.0, 2.0, 3.5]).to_dict()
    {'a': 2.0, 'b': 3.5}
    """
    bags = check_bag_targets(bags, targets)
    index = pd.Index(bags.ids, name="bag", tupleize_cols=False)
    return pd.Series(bags.props[:, 0], index=index, name="mean")


def _as_targets_table(table):
    if not isinstance(table, (pd.Series, pd.DataFrame, Mapping)):
        raise TypeError(
            "targets_table must be a per-bag table: a Series (or one-column "
            "DataFrame) indexed by bag id, or a dict {bag_id: mean}; got "
            f"{type(table).__name__}. From sample-aligned bags and targets, use "
            "make_bag_regression_scorer(metric, bags=bags, targets=targets) or "
            "bag_targets_table(bags, targets)."
        )
    series = _targets_frame(table, "targets_table")
    if series.index.has_duplicates:
        raise ValueError("targets_table repeats a bag id in its index.")
    values = _target_values(series.to_numpy(), "targets_table")
    return pd.Series(values, index=series.index, name="mean")


class BagRegressionScorer:
    """Score a regressor by the error of its predicted bag means.

    A scorer for ``scoring=`` of :class:`~sklearn.model_selection.GridSearchCV`
    and :func:`~sklearn.model_selection.cross_validate`, the regression
    counterpart of :class:`~sklearn_llp.metrics.BagScorer`. Called as
    ``scorer(estimator, X, y, targets=None)`` with ``y`` the bag id of every
    row of ``X``, it returns ``bag_r2_score`` (``"r2"``) or minus
    ``bag_mean_squared_error`` (``"mse"``) or ``bag_mean_absolute_error``
    (``"mae"``) of ``estimator.predict(X)``: greater is better.

    The bag means come from ``targets`` passed to the call (routed by
    GridSearchCV and cross_validate under metadata routing, sliced to the
    test rows), else from ``targets_table`` looked up by the bag ids in
    ``y``. With neither, the call raises a ``ValueError`` that says how to
    pass them; it never scores against something else.

    Parameters
    ----------
    metric : {"r2", "mse", "mae"}, default="r2"
        The bag metric.
    targets_table : Series, one-column DataFrame or dict, default=None
        The mean of every bag that may be scored, indexed by bag id
        (:func:`bag_targets_table` builds one from sample-aligned data).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyRegressor
    >>> from sklearn_llp.metrics import BagRegressionScorer
    >>> X = np.zeros((4, 1))
    >>> bags = np.array([0, 0, 1, 1])
    >>> reg = DummyRegressor(strategy="constant", constant=3.0).fit(X, np.zeros(4))
    >>> BagRegressionScorer("mse")(reg, X, bags, targets=[2.0, 2.0, 5.0, 5.0])
    -2.5
    >>> BagRegressionScorer("mse", targets_table={0: 2.0, 1: 5.0})(reg, X, bags)
    -2.5
    """

    def __init__(self, metric="r2", targets_table=None):
        if metric not in BAG_REGRESSION_METRICS:
            raise ValueError(
                f"metric must be one of {BAG_REGRESSION_METRICS}; got {metric!r}."
            )
        self.metric = metric
        self.targets_table = (
            None if targets_table is None else _as_targets_table(targets_table)
        )

    def __repr__(self):
        table = ""
        if self.targets_table is not None:
            table = f", targets_table=<{len(self.targets_table)} bags>"
        return f"{type(self).__name__}(metric={self.metric!r}{table})"

    def __call__(self, estimator, X, y=None, targets=None, sample_weight=None):
        """The bag metric of ``estimator`` on the bags in ``y``.

        Parameters
        ----------
        estimator : fitted regressor
            Has ``predict``.
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or Bags
            Bag id of every row of ``X``.
        targets : array-like, Series or dict, default=None
            Means of the test bags (sample-aligned or per bag); routed here
            under metadata routing. Takes precedence over ``targets_table``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row within its bag.

        Returns
        -------
        score : float
            Greater is better: R^2, or minus the error.
        """
        if y is None:
            raise ValueError(
                f"{self!r} needs y, the bag id of every row of X "
                "(fit(X, bags, targets) style), to know which rows form a bag."
            )
        n_samples = num_rows(X)
        if targets is None and not isinstance(y, Bags):
            if self.targets_table is None:
                raise ValueError(
                    _NO_TARGETS.format(scorer=repr(self), metric=self.metric)
                )
            # the table is per bag by construction: look it up by bag id
            # (through check_bag_targets, a table with as many bags as the
            # test rows would read both ways and be refused)
            bags = check_bags(y, n_samples=n_samples, sample_weight=sample_weight)
            means = _lookup_targets(self.targets_table, bags.ids, "targets_table")
            bags = bags.with_props(means[:, None], np.array([TARGET_COLUMN]))
        else:
            bags = check_bag_targets(
                y, targets, n_samples=n_samples, sample_weight=sample_weight
            )
        y_pred = _check_y_pred(estimator.predict(X), n_samples)
        errors = regression_errors_of(
            bags.props[:, 0], bag_means_of(bags, y_pred), bags.bag_weights
        )
        value = errors[self.metric]
        return value if self.metric == "r2" else -value

    def get_metadata_routing(self):
        """Request ``targets`` and ``sample_weight`` for ``score``.

        Returns
        -------
        routing : MetadataRequest
        """
        request = MetadataRequest(owner=repr(self))
        request.score.add_request(param="targets", alias=True)
        request.score.add_request(param="sample_weight", alias=True)
        return request

    def _accept_sample_weight(self):
        return True


def make_bag_regression_scorer(
    metric="r2", *, targets_table=None, bags=None, targets=None
):
    """Make a :class:`BagRegressionScorer`, holding the bag means if given.

    ``make_bag_regression_scorer(metric)`` expects ``targets`` routed to it
    (metadata routing on). Give ``targets_table``, or ``bags`` and
    ``targets`` of the whole data set, for a scorer that also works with
    routing off: it looks each test bag up by the id in ``y``.

    Parameters
    ----------
    metric : {"r2", "mse", "mae"}, default="r2"
    targets_table : Series, one-column DataFrame or dict, default=None
        Means indexed by bag id.
    bags : array-like of shape (n_samples,), default=None
        Bag id of every sample of the data set the scorer will see.
    targets : array-like, default=None
        Means aligned with ``bags`` (any form of
        :func:`~sklearn_llp.core.check_bag_targets`).

    Returns
    -------
    scorer : BagRegressionScorer

    Examples
    --------
    >>> from sklearn_llp.metrics import make_bag_regression_scorer
    >>> make_bag_regression_scorer("r2", bags=[0, 0, 1], targets=[1.0, 1.0, 2.0])
    BagRegressionScorer(metric='r2', targets_table=<2 bags>)
    """
    if (bags is None) != (targets is None):
        raise ValueError("Pass both bags and targets, or neither.")
    if bags is not None:
        if targets_table is not None:
            raise ValueError("Pass targets_table, or bags and targets, not both.")
        targets_table = bag_targets_table(bags, targets)
    return BagRegressionScorer(metric, targets_table=targets_table)


#: :func:`bag_r2_score` as a scorer; needs ``targets`` routed (routing on).
bag_r2_scorer = BagRegressionScorer("r2")
#: Minus :func:`bag_mean_squared_error`; needs ``targets`` routed (routing on).
bag_mse_scorer = BagRegressionScorer("mse")
#: Minus :func:`bag_mean_absolute_error`; needs ``targets`` routed (routing on).
bag_mae_scorer = BagRegressionScorer("mae")
