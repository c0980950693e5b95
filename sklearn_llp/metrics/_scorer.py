"""One scorer for model selection on bags, for both tasks.

The test bags' values arrive through metadata routing, or from a per-bag
table the scorer holds, looked up by bag id.
"""

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.utils.metadata_routing import MetadataRequest

from ..core import (
    CLASSIFICATION,
    METRICS,
    Bags,
    attach_table,
    bag_errors_of,
    check_bags,
    check_predictions,
    check_proba,
    dask_bag_errors,
    is_dask,
    num_rows,
    values_argument,
)
from ..core._partitions import known_rows
from ..core._read import _object_array
from ..exceptions import BagLeakageWarning

_NO_VALUES = (
    "{scorer} received no {noun} ({values}), so it cannot score bags. In "
    "scikit-learn's default configuration (metadata routing off) GridSearchCV and "
    "cross_validate give a scorer only X and y (the bag ids). Either (1) "
    "enable metadata routing (sklearn.set_config(enable_metadata_routing=True)) "
    "and pass {values}= to the search's fit or cross_validate(..., "
    "params={{'{values}': ...}}); or (2) build a scorer that holds every bag's "
    "values: make_bag_scorer({metric!r}, bags=bags, {values}={values})."
)

_LEAK = (
    "{n_trained} of the {n_scored} bags that {scorer} scores {how}, so the "
    "score is not a held-out score. With y=bags, cv=5 (an integer cv, KFold, "
    "StratifiedKFold) splits every bag across the folds and scores fragments "
    "of bags whose other rows were trained on; pass cv=BagKFold(5) "
    "(sklearn_llp.model_selection.BagKFold), which keeps every bag whole in "
    "one fold."
)


def _table_of(bags):
    """The per-bag table of validated ``bags`` (index: bag id)."""
    index = pd.Index(bags.ids, name="bag", tupleize_cols=False)
    if bags.task != CLASSIFICATION:
        return pd.DataFrame({"mean": bags.means}, index=index)
    named = not bags.positional_classes
    columns = pd.Index(bags.classes) if named else pd.RangeIndex(bags.n_classes)
    return pd.DataFrame(bags.props, index=index, columns=columns)


def bag_table(bags, props=None, *, targets=None, classes=None):
    """The per-bag table of bags and their values (``props`` or ``targets``,
    any form of :func:`~sklearn_llp.core.check_bags`), indexed by bag id: one
    column per class, or the column ``mean``.

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_table
    >>> bag_table(["a", "a", "b"], [0.5, 0.5, 1.0]).to_numpy().tolist()
    [[0.5, 0.5], [0.0, 1.0]]
    >>> bag_table(["a", "a", "b"], targets=[2.0, 2.0, 3.5])["mean"].tolist()
    [2.0, 3.5]
    """
    if props is None and targets is None:
        raise TypeError("bag_table needs props or targets.")
    return _table_of(check_bags(bags, props, targets=targets, classes=classes))


def _validated_table(table, task):
    """A user's per-bag table read through the one reader."""
    if not isinstance(table, (pd.DataFrame, pd.Series, Mapping)):
        raise TypeError(
            f"table must be a per-bag table indexed by bag id (a DataFrame, a "
            f"Series or a dict); got {type(table).__name__}. From sample-aligned "
            f"data use make_bag_scorer(metric, bags=bags, {values_argument(task)}=...)."
        )
    index = pd.Index(
        list(table) if isinstance(table, Mapping) else table.index, tupleize_cols=False
    )
    if index.has_duplicates:
        raise ValueError("table repeats a bag id in its index.")
    n = len(index)
    ids = _object_array(list(index)) if index.dtype == object else index.to_numpy()
    bags = Bags(np.arange(n + 1), np.arange(n), ids, n)
    return _table_of(attach_table(bags, table, task, None, "table"))


def _trained_bag_ids(estimator):
    """``train_bag_ids_`` of the LLP model in ``estimator``, or None."""
    for _ in range(8):
        ids = getattr(estimator, "train_bag_ids_", None)
        if ids is not None:
            return ids
        if hasattr(estimator, "steps"):
            estimator = estimator.steps[-1][1]
        elif hasattr(estimator, "best_estimator_"):
            estimator = estimator.best_estimator_
        else:
            return None
    return None


class BagScorer:
    """Score an LLP estimator on bags, for ``scoring=``; greater is better.

    ``scorer(estimator, X, y)``, ``y`` the bags, returns minus the bag error
    (``"r2"``: the bag R^2). The test bags' values come routed (``props``/
    ``targets``) or from ``table``. Scoring bags the model trained on warns
    (:class:`~sklearn_llp.exceptions.BagLeakageWarning`).

    Parameters
    ----------
    metric : str, default="hard_l1"
        One of :data:`~sklearn_llp.core.METRICS`; its task is the estimator's.
    table : DataFrame, Series or dict, default=None
        Every bag's values, indexed by bag id (see :func:`bag_table`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyClassifier
    >>> from sklearn_llp.metrics import BagScorer
    >>> X, bags = np.zeros((4, 1)), np.array([0, 0, 1, 1])
    >>> props = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]]
    >>> clf = DummyClassifier().fit(X, [0, 0, 0, 1])  # always class 0
    >>> BagScorer("hard_l1")(clf, X, bags, props=props)
    -0.5
    """

    def __init__(self, metric="hard_l1", table=None):
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {tuple(METRICS)}; got {metric!r}.")
        self.metric = metric
        self.task = METRICS[metric]
        self.table = None if table is None else _validated_table(table, self.task)
        self._bag_sizes = None  # every bag's rows, set by make_bag_scorer

    def __repr__(self):
        table = "" if self.table is None else f", table=<{len(self.table)} bags>"
        return f"{type(self).__name__}(metric={self.metric!r}{table})"

    def __call__(self, estimator, X, y=None, values=None, sample_weight=None, **routed):
        """The score of ``estimator`` on the bags ``y`` of ``X``."""
        key = values_argument(self.task)
        if values is None:
            values = routed.get(key)
        if y is None:
            raise ValueError(
                f"{self!r} needs y, the bag id of every row of X, to know which "
                "rows form a bag."
            )
        carried = isinstance(y, Bags) and y.values is not None
        if values is None and self.table is None and not carried:
            raise ValueError(
                _NO_VALUES.format(
                    scorer=repr(self),
                    noun="label proportions" if key == "props" else "bag means",
                    values=key,
                    metric=self.metric,
                )
            )
        classes = getattr(estimator, "classes_", None)
        if is_dask(X):
            return self._score_dask(estimator, X, y, values, sample_weight, classes)
        n_samples = num_rows(X)
        if values is not None or carried:
            bags = check_bags(
                y,
                **{key: values},
                n_samples=n_samples,
                classes=classes,
                sample_weight=sample_weight,
                task=self.task,
            )
        else:
            bags = check_bags(y, n_samples=n_samples, sample_weight=sample_weight)
            bags = attach_table(bags, self.table, self.task, classes, "table")
        self._warn_if_trained_on(estimator, bags, y, sample_weight)
        if self.task != CLASSIFICATION:
            y_pred = check_predictions(estimator.predict(X), n_samples)
            error = bag_errors_of(bags, y_pred, (self.metric,))[self.metric]
            return error if self.metric == "r2" else -error
        proba = check_proba(estimator.predict_proba(X), n_samples, bags.n_classes)
        pred = None
        if self.metric.startswith("hard") and hasattr(estimator, "predict"):
            pred = pd.Index(bags.classes).get_indexer(estimator.predict(X))
            if np.any(pred < 0):
                raise ValueError(
                    f"{type(estimator).__name__}.predict returned labels that are "
                    f"not in its classes_ {bags.classes.tolist()}."
                )
        return -bag_errors_of(bags, proba, (self.metric,), pred=pred)[self.metric]

    def _score_dask(self, estimator, X, y, values, sample_weight, classes):
        """The score on Dask ``X``, reduced partition by partition."""
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with Dask X.")
        if not hasattr(X, "divisions"):  # an array: its rows meet the bags'
            known_rows(X, "X")
        values = self.table if values is None else values
        pred = None
        if self.task != CLASSIFICATION:
            output = estimator.predict(X)
        else:  # hard errors label rows by predict, as on arrays
            output = estimator.predict_proba(X)
            if self.metric.startswith("hard") and hasattr(estimator, "predict"):
                codes = pd.Index(classes).get_indexer
                pred = estimator.predict(X).map_blocks(codes, dtype=np.int64)
        errors, bags = dask_bag_errors(
            self.task, y, values, output, (self.metric,), classes=classes, pred=pred
        )
        self._warn_if_trained_on(estimator, bags, y, None)
        error = errors[self.metric]
        return error if self.metric == "r2" else -error

    def _warn_if_trained_on(self, estimator, bags, y, sample_weight):
        """Warn when scored bags were trained on."""
        trained_ids = _trained_bag_ids(estimator)
        if trained_ids is None or bags.overlapping or not bags.n_bags:
            return
        try:
            ids = pd.Index(bags.ids, tupleize_cols=False)
            trained = np.asarray(ids.isin(np.asarray(trained_ids, dtype=object)))
        except (TypeError, ValueError):
            return
        sizes = getattr(self, "_bag_sizes", None)
        if sizes is not None:
            # zero weights drop rows (even whole bags) from bags, not from the
            # bags the model saw: count every row of y, by id
            rows = bags
            if sample_weight is not None:
                rows = check_bags(y, n_samples=bags.n_samples)
            scored = pd.Series(rows.sizes, pd.Index(rows.ids, tupleize_cols=False))
            full = sizes.reindex(ids).to_numpy(dtype=float)
            trained &= scored.reindex(ids).to_numpy() < full
            how = (
                "hold only part of their rows while the model trained on bags "
                "with the same ids"
            )
            hint = ""
        else:
            how = "were also trained on (train_bag_ids_ of the fitted model)"
            hint = (
                " Scoring the training bags on purpose (return_train_score=True) "
                "warns too: make_bag_scorer(metric, bags=bags, ...) knows the "
                "bags' sizes and warns only for split bags."
            )
        if trained.any():
            counts = dict(n_trained=int(trained.sum()), n_scored=bags.n_bags)
            message = _LEAK.format(**counts, scorer=repr(self), how=how) + hint
            warnings.warn(message, BagLeakageWarning, stacklevel=3)

    def get_metadata_routing(self):
        """Request the bags' values and ``sample_weight`` for ``score``."""
        request = MetadataRequest(owner=repr(self))
        request.score.add_request(param=values_argument(self.task), alias=True)
        request.score.add_request(param="sample_weight", alias=True)
        return request

    def _accept_sample_weight(self):
        # asked by GridSearchCV when sample_weight is passed with routing off
        return True


def make_bag_scorer(
    metric="hard_l1", *, table=None, bags=None, props=None, targets=None
):
    """A :class:`BagScorer` that holds every bag's values if given.

    With ``bags`` and ``props`` (or ``targets``), or a ``table``, the scorer
    works with metadata routing off and knows every bag's size.

    Examples
    --------
    >>> from sklearn_llp.metrics import make_bag_scorer
    >>> make_bag_scorer("hard_l1", bags=[0, 0, 1], props=[0.5, 0.5, 1.0])
    BagScorer(metric='hard_l1', table=<2 bags>)
    >>> make_bag_scorer("r2", bags=[0, 0, 1], targets=[1.0, 1.0, 2.0])
    BagScorer(metric='r2', table=<2 bags>)
    """
    scorer = BagScorer(metric)
    key = values_argument(scorer.task)
    values = props if key == "props" else targets
    other = targets if key == "props" else props
    if other is not None:
        raise TypeError(
            f"metric={metric!r} scores {scorer.task}: pass {key}=, not "
            f"{'targets' if key == 'props' else 'props'}=."
        )
    if (bags is None) != (values is None):
        raise ValueError(f"Pass both bags and {key}, or neither.")
    if bags is None:
        return BagScorer(metric, table=table)
    if table is not None:
        raise ValueError(f"Pass table, or bags and {key}, not both.")
    validated = check_bags(bags, **{key: values}, task=scorer.task)
    scorer.table = _table_of(validated)
    index = pd.Index(validated.ids, tupleize_cols=False)
    scorer._bag_sizes = pd.Series(validated.sizes, index=index)
    return scorer


#: Minus :func:`hard_l1_error` (the paper's model-selection criterion).
hard_l1_scorer = BagScorer("hard_l1")
#: Minus :func:`soft_l1_error`.
soft_l1_scorer = BagScorer("soft_l1")
#: Minus :func:`hard_kl_error`.
hard_kl_scorer = BagScorer("hard_kl")
#: Minus :func:`soft_kl_error`.
soft_kl_scorer = BagScorer("soft_kl")
#: :func:`bag_r2_score` as a scorer.
bag_r2_scorer = BagScorer("r2")
#: Minus :func:`bag_mean_squared_error`.
bag_mse_scorer = BagScorer("mse")
#: Minus :func:`bag_mean_absolute_error`.
bag_mae_scorer = BagScorer("mae")
