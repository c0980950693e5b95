"""Scorers for model selection on LLP data (``scoring=`` of GridSearchCV).

With LLP, ``y`` passed to ``fit``, ``GridSearchCV.fit`` or ``cross_validate``
holds the bag ids, and a scorer needs the label proportions of the test bags
as well. scikit-learn delivers them to a scorer only through metadata
routing; a :class:`BagScorer` therefore works in two ways:

- routing on (``sklearn.set_config(enable_metadata_routing=True)``): the
  scorer requests ``props`` (see :meth:`BagScorer.get_metadata_routing`), so
  the ``props`` given to ``GridSearchCV.fit`` / ``cross_validate(params=...)``
  reach it, sliced to the test samples;
- routing off (the default): the scorer is given only ``X`` and ``y``; build
  it with the per-bag table (:func:`make_bag_scorer`) and it looks each test
  bag up by the id in ``y``.

A scorer that gets neither raises an error that says what to do; it never
returns NaN on its own. A scorer that is given bags the model was trained on
(``train_bag_ids_`` of a fitted ``LLPClassifier``) warns with a
:class:`~sklearn_llp.exceptions.BagLeakageWarning`: a held-out score needs
whole held-out bags (``cv=BagKFold(5)``, never ``cv=5`` with ``y=bags``).
"""

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.utils.metadata_routing import MetadataRequest

from ..core import check_bags
from ..core._errors import BAG_METRICS, bag_errors_of, check_proba
from ..core._read import (
    _class_names,
    _has_class_names,
    _table_to_frame,
    as_float_matrix,
    attach_props_table,
    check_prop_values,
    num_rows,
)
from ..exceptions import BagLeakageWarning

_NO_PROPS = (
    "{scorer} received no label proportions, so it cannot score bags. In "
    "scikit-learn's default configuration (metadata routing off) GridSearchCV "
    "and cross_validate give a scorer only X and y (the bag ids). Either "
    "(1) enable metadata routing, sklearn.set_config(enable_metadata_routing="
    "True) or with sklearn.config_context(enable_metadata_routing=True):, and "
    "pass the proportions: GridSearchCV(...).fit(X, bags, props=props) or "
    "cross_validate(..., params={{'props': props}}); or (2) build a scorer that "
    "holds the proportions of every bag: make_bag_scorer({metric!r}, "
    "bags=bags, props=props) or make_bag_scorer({metric!r}, "
    "props_table=table) with a DataFrame indexed by bag id."
)


_LEAK = (
    "{n_trained} of the {n_scored} bags that {scorer} scores {how}, so the "
    "score is not a held-out score. With y=bags, cv=5 (an integer cv, KFold, "
    "StratifiedKFold) splits every bag across the folds and scores fragments "
    "of bags whose other rows were trained on; pass cv=BagKFold(5) "
    "(sklearn_llp.model_selection.BagKFold), which keeps every bag whole in "
    "one fold."
)


def _trained_bag_ids(estimator):
    """``train_bag_ids_`` of the LLP model in ``estimator`` (itself, a
    Pipeline's last step, a search's ``best_estimator_``), or None."""
    for _ in range(8):  # nested pipelines and searches
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


def _warn_if_trained_on(scorer, estimator, bags):
    """Warn when the scored ``bags`` were also trained on.

    The ids of the scored bags are looked up in the model's
    ``train_bag_ids_``. A scorer that knows every bag's size
    (:func:`make_bag_scorer` with ``bags`` and ``props``) warns only for a
    trained-on bag scored with part of its rows -- the signature of a
    splitter that cut bags in two; scoring whole training bags (a training
    score, ``return_train_score=True``) stays quiet. Without the sizes any
    trained-on bag warns.
    """
    trained_ids = _trained_bag_ids(estimator)
    if trained_ids is None or bags.overlapping or not bags.n_bags:
        return
    try:
        ids = pd.Index(bags.ids, tupleize_cols=False)
        trained = np.asarray(ids.isin(np.asarray(trained_ids, dtype=object)))
    except (TypeError, ValueError):  # ids that cannot be compared
        return
    sizes = getattr(scorer, "_bag_sizes", None)  # absent from old pickles
    if sizes is not None:
        full = sizes.reindex(ids).to_numpy(dtype=float)
        trained &= bags.sizes < full  # NaN (unknown bag) compares False
        how = (
            "hold only part of their rows while the model trained on bags "
            "with the same ids"
        )
    else:
        how = "were also trained on (train_bag_ids_ of the fitted model)"
    if trained.any():
        warnings.warn(
            _LEAK.format(
                n_trained=int(trained.sum()),
                n_scored=bags.n_bags,
                scorer=repr(scorer),
                how=how,
            )
            + (
                ""
                if sizes is not None
                else " Scoring the training bags on purpose (a training "
                "score, return_train_score=True) gives this warning too: "
                "build the scorer with make_bag_scorer(metric, bags=bags, "
                "props=props), which knows the bags' sizes and warns only "
                "for split bags."
            ),
            BagLeakageWarning,
            stacklevel=3,
        )


def _as_props_table(table):
    """Validate a per-bag table; return it as a float DataFrame."""
    if not isinstance(table, (pd.DataFrame, pd.Series, Mapping)):
        raise TypeError(
            "props_table must be a per-bag table: a DataFrame indexed by bag id "
            "with one column per class, a Series of positive-class fractions "
            "indexed by bag id, or a dict {bag_id: proportions}; got "
            f"{type(table).__name__}. From sample-aligned bags and props, use "
            "make_bag_scorer(metric, bags=bags, props=props) or "
            "bag_props_table(bags, props)."
        )
    frame = _table_to_frame(table, "props_table")
    if frame.index.has_duplicates:
        raise ValueError("props_table repeats a bag id in its index.")
    values = as_float_matrix(frame.to_numpy(), "props_table")
    if values.ndim != 2 or values.shape[1] < 2:
        raise ValueError("props_table needs one column per class, 2 at least.")
    values = check_prop_values(values, "props_table")
    # class names stay names (integers too); unnamed columns stay unnamed
    columns = None
    if isinstance(table, pd.DataFrame):
        columns = _class_names(table.columns)
    elif _has_class_names(table):  # a dict of dicts: the inner keys
        columns = pd.Index(list(frame.columns))
    if columns is not None and columns.has_duplicates:
        raise ValueError(
            f"props_table has duplicate class columns: {columns.tolist()}."
        )
    return pd.DataFrame(values, index=frame.index, columns=columns)


def bag_props_table(bags, props, *, classes=None):
    """Collapse sample-aligned proportions to one row per bag.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every sample.
    props : array-like or DataFrame or Series or dict
        Label proportions, in any form that
        :func:`sklearn_llp.core.check_bags` accepts.
    classes : array-like of shape (n_classes,), default=None
        Class labels, used as column names. Defaults to the columns of a
        ``props`` DataFrame, else ``0..n_classes-1``.

    Returns
    -------
    table : DataFrame of shape (n_bags, n_classes)
        Proportions indexed by bag id (index name ``"bag"``), one column per
        class, rows summing to 1. Columns named after classes are matched to
        a model's ``classes_`` by name; without names or ``classes`` they are
        the default ``RangeIndex`` and read in the order of ``classes_``.

    Examples
    --------
    >>> from sklearn_llp.metrics import bag_props_table
    >>> table = bag_props_table(["a", "a", "b"], [0.5, 0.5, 1.0])
    >>> table.index.tolist(), table.columns.tolist()
    (['a', 'b'], [0, 1])
    >>> table.to_numpy().tolist()
    [[0.5, 0.5], [0.0, 1.0]]
    """
    return _table_of(check_bags(bags, props, classes=classes, require_props=True))


def _table_of(bags):
    """The per-bag proportions table of validated ``bags``."""
    index = pd.Index(bags.ids, name="bag", tupleize_cols=False)
    # class names (integers too) as a plain Index; column numbers as a RangeIndex
    columns = (
        pd.RangeIndex(bags.n_classes)
        if bags.positional_classes
        else pd.Index(bags.classes)
    )
    return pd.DataFrame(bags.props, index=index, columns=columns)


class BagScorer:
    """Score an LLP classifier by a bag error; greater is better.

    A scorer for ``scoring=`` of :class:`~sklearn.model_selection.GridSearchCV`,
    :func:`~sklearn.model_selection.cross_validate` and the like. Called as
    ``scorer(estimator, X, y, props=None)`` with ``y`` the bag id of every row
    of ``X``, it returns minus the bag error (see :func:`bag_errors`) of
    ``estimator.predict_proba(X)``, so that greater is better, like every
    scikit-learn score. The hard errors count the labels of
    ``estimator.predict(X)``, so an estimator's own decision rule is scored
    (``LLPClassifier``'s prior-matched threshold for two classes, which keeps
    models from tying when ``argmax`` would predict one class everywhere).

    The proportions of the test bags come from, in this order:

    1. ``props`` passed to the call. Under metadata routing
       (``sklearn.set_config(enable_metadata_routing=True)``) the scorer
       requests ``props``, so GridSearchCV and cross_validate route the
       ``props`` given to them here, sliced to the test samples;
    2. ``props_table``, looked up by the bag ids in ``y``. This is the way in
       scikit-learn's default configuration (routing off), where a scorer
       inside GridSearchCV receives only ``X`` and ``y``.

    With neither, the call raises a ``ValueError`` that says how to pass the
    proportions. GridSearchCV and cross_validate turn scorer errors into a
    warning and NaN scores unless ``error_score="raise"``; the warning holds
    the message.

    Scoring bags that the model was trained on (``train_bag_ids_`` of a
    fitted ``LLPClassifier``, also inside a Pipeline) gives a
    :class:`~sklearn_llp.exceptions.BagLeakageWarning` naming
    :class:`~sklearn_llp.model_selection.BagKFold`: ``cv=5`` with ``y=bags``
    splits every bag across the folds. A scorer from
    ``make_bag_scorer(metric, bags=bags, props=props)`` knows every bag's
    size and warns only for bags scored with part of their rows, so a
    training score of whole bags (``return_train_score=True`` under
    ``BagKFold``) stays quiet.

    Parameters
    ----------
    metric : {"hard_l1", "soft_l1", "hard_kl", "soft_kl"}
        The bag error: :func:`hard_l1_error`, :func:`soft_l1_error`,
        :func:`hard_kl_error` or :func:`soft_kl_error`.
    props_table : DataFrame or Series or dict, default=None
        Proportions of every bag that may be scored, indexed by bag id: a
        DataFrame with one column per class (named after the classes, or
        ``0..n_classes-1`` to be read in the order of ``classes_``), a Series
        of positive-class fractions, or a dict ``{bag_id: proportions}``.
        :func:`bag_props_table` builds one from sample-aligned data.

    Attributes
    ----------
    metric : str
        The bag error.
    props_table : DataFrame or None
        The validated table, rows summing to 1.

    See Also
    --------
    make_bag_scorer : Build a scorer, from sample-aligned data if need be.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyClassifier
    >>> from sklearn_llp.metrics import BagScorer
    >>> X = np.zeros((4, 1))
    >>> bags = np.array([0, 0, 1, 1])
    >>> props = np.array([[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]])
    >>> clf = DummyClassifier().fit(X, [0, 0, 0, 1])  # always predicts class 0
    >>> BagScorer("hard_l1")(clf, X, bags, props=props)
    -0.5
    >>> table = {0: [0.5, 0.5], 1: [1.0, 0.0]}
    >>> BagScorer("hard_l1", props_table=table)(clf, X, bags)
    -0.5
    """

    def __init__(self, metric="hard_l1", props_table=None):
        if metric not in BAG_METRICS:
            raise ValueError(f"metric must be one of {BAG_METRICS}; got {metric!r}.")
        self.metric = metric
        self.props_table = None if props_table is None else _as_props_table(props_table)
        # rows of every bag of the whole data set, set by make_bag_scorer
        self._bag_sizes = None

    def __repr__(self):
        table = ""
        if self.props_table is not None:
            table = f", props_table=<{len(self.props_table)} bags>"
        return f"{type(self).__name__}(metric={self.metric!r}{table})"

    def __call__(self, estimator, X, y=None, props=None, sample_weight=None):
        """Minus the bag error of ``estimator`` on the bags in ``y``.

        Parameters
        ----------
        estimator : fitted classifier
            Has ``predict_proba`` and ``classes_``.
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            Bag id of every row of ``X``.
        props : array-like or DataFrame or Series or dict, default=None
            Proportions of the test bags (sample-aligned or a per-bag table);
            routed here under metadata routing. Takes precedence over
            ``props_table``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row within its bag (see
            :func:`~sklearn_llp.metrics.hard_l1_error`).

        Returns
        -------
        score : float
            Minus the bag error: 0 is perfect, greater is better.
        """
        if y is None:
            raise ValueError(
                f"{self!r} needs y, the bag id of every row of X "
                "(fit(X, bags, props) style), to know which rows form a bag."
            )
        if props is None and self.props_table is None:
            raise ValueError(_NO_PROPS.format(scorer=repr(self), metric=self.metric))
        n_samples = num_rows(X)
        classes = getattr(estimator, "classes_", None)
        if props is not None:
            bags = check_bags(
                y,
                props,
                n_samples=n_samples,
                classes=classes,
                sample_weight=sample_weight,
                require_props=True,
            )
        else:
            bags = attach_props_table(
                check_bags(y, n_samples=n_samples, sample_weight=sample_weight),
                self.props_table,
                classes,
            )
        _warn_if_trained_on(self, estimator, bags)
        proba = check_proba(estimator.predict_proba(X), n_samples, bags.n_classes)
        pred = None
        if self.metric.startswith("hard") and hasattr(estimator, "predict"):
            # the estimator's own decision rule (e.g. a prior-matched threshold)
            pred = pd.Index(bags.classes).get_indexer(estimator.predict(X))
            if np.any(pred < 0):
                raise ValueError(
                    f"{type(estimator).__name__}.predict returned labels that are "
                    f"not in its classes_ {bags.classes.tolist()}."
                )
        return -bag_errors_of(bags, proba, (self.metric,), pred=pred)[self.metric]

    def get_metadata_routing(self):
        """Request ``props`` for ``score``, as a scorer under metadata routing.

        Returns
        -------
        routing : MetadataRequest
            ``props`` requested for the ``score`` method.
        """
        request = MetadataRequest(owner=repr(self))
        request.score.add_request(param="props", alias=True)
        request.score.add_request(param="sample_weight", alias=True)
        return request

    def _accept_sample_weight(self):
        # Asked by GridSearchCV and _MultimetricScorer when sample_weight is
        # passed with routing off: weights apply within every bag.
        return True


def make_bag_scorer(metric="hard_l1", *, props_table=None, bags=None, props=None):
    """Make a :class:`BagScorer`, holding the bags' proportions if given.

    ``make_bag_scorer(metric)`` gives a scorer that expects ``props`` routed
    to it (metadata routing on). Give ``props_table``, or ``bags`` and
    ``props`` of the whole data set, for a scorer that also works with routing
    off: it looks each test bag up by the id in ``y``.

    Parameters
    ----------
    metric : {"hard_l1", "soft_l1", "hard_kl", "soft_kl"}, default="hard_l1"
        The bag error; the scorer returns minus it.
    props_table : DataFrame or Series or dict, default=None
        Proportions indexed by bag id (see :class:`BagScorer`).
    bags : array-like of shape (n_samples,), default=None
        Bag id of every sample of the data set the scorer will see. The
        scorer also keeps every bag's size, so that it warns
        (:class:`~sklearn_llp.exceptions.BagLeakageWarning`) only when a bag
        the model trained on is scored with part of its rows.
    props : array-like, default=None
        Proportions aligned with ``bags`` (any form that
        :func:`sklearn_llp.core.check_bags` accepts).

    Returns
    -------
    scorer : BagScorer
        Callable as ``scorer(estimator, X, y)``, greater is better.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyClassifier
    >>> from sklearn_llp.metrics import make_bag_scorer
    >>> X = np.zeros((4, 1))
    >>> bags = np.array([0, 0, 1, 1])
    >>> props = np.array([[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]])
    >>> clf = DummyClassifier().fit(X, [0, 0, 0, 1])  # always predicts class 0
    >>> scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    >>> scorer
    BagScorer(metric='hard_l1', props_table=<2 bags>)
    >>> scorer(clf, X, bags)
    -0.5
    """
    if (bags is None) != (props is None):
        raise ValueError("Pass both bags and props, or neither.")
    if bags is None:
        return BagScorer(metric, props_table=props_table)
    if props_table is not None:
        raise ValueError("Pass props_table, or bags and props, not both.")
    checked = check_bags(bags, props, require_props=True)
    scorer = BagScorer(metric, props_table=_table_of(checked))
    if not checked.overlapping:
        scorer._bag_sizes = pd.Series(
            checked.sizes, index=pd.Index(checked.ids, tupleize_cols=False)
        )
    return scorer


#: Minus :func:`hard_l1_error`; needs ``props`` routed (routing on).
hard_l1_scorer = BagScorer("hard_l1")
#: Minus :func:`soft_l1_error`; needs ``props`` routed (routing on).
soft_l1_scorer = BagScorer("soft_l1")
#: Minus :func:`hard_kl_error`; needs ``props`` routed (routing on).
hard_kl_scorer = BagScorer("hard_kl")
#: Minus :func:`soft_kl_error`; needs ``props`` routed (routing on).
soft_kl_scorer = BagScorer("soft_kl")
