"""Behaviour every LLP estimator shares: scoring bags, guarding sklearn paths.

Kept free of torch, so that ``sklearn_llp.linear`` needs none.
"""

import sys
from contextlib import contextmanager
from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ._bags import CLASSIFICATION, REGRESSION, Bags
from ._decision import decide
from ._errors import bag_errors_of, check_predictions, check_proba, decision_of
from ._partitions import over_dask_partitions
from ._read import check_bags, num_rows, values_argument

_SCORE_WITHOUT_VALUES = (
    "{name}.score(X, y) got no {values}, but the model was fitted on bags, so "
    "y holds bag ids and {score} against them would be meaningless. For "
    "the bags' {score_of}, pass the {values}: score(X, bags, {values}). For "
    "instance {labels} y_true of test rows, use sklearn.metrics.{metric}(y_true, "
    "model.predict(X)). In GridSearchCV or cross_validate, pass "
    "scoring=make_bag_scorer('{default}', bags=bags, {values}={values}) from "
    "sklearn_llp.metrics, or enable metadata routing "
    "(sklearn.set_config(enable_metadata_routing=True)) and pass {values}= to "
    "the search's fit."
)

_CROSS_VAL_PREDICT = (
    "scikit-learn's cross_val_predict with method='{method}' treats y as class "
    "labels; here y holds bag ids, so it would return one column per bag, most "
    "of them zero. Use sklearn_llp.model_selection.cross_val_predict(estimator, "
    "X, bags, props, method='predict_proba'), which returns (n_samples, "
    "n_classes) probabilities, or method='predict' for labels."
)


_PIPELINE_SCORE = (
    "Pipeline.score gave {name} no {values}: with metadata routing off it "
    "passes its last step only sample_weight{received}. Turn routing on, "
    "sklearn.set_config(enable_metadata_routing=True), and call "
    "pipeline.score(X, bags, {values}={values}) ({name} requests {values}), or "
    "score the last step: pipeline[-1].score(pipeline[:-1].transform(X), bags, "
    "{values})."
)


def _sklearn_caller(function, depth=12, module="sklearn.model_selection._validation"):
    """The locals of sklearn's ``function`` (of ``module``) if a few frames up."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return None
        name = frame.f_globals.get("__name__")
        if frame.f_code.co_name == function and name == module:
            return frame.f_locals
        frame = frame.f_back
    return None


@contextmanager
def restore_on_error(estimator, names):
    """Restore the attributes ``names`` of ``estimator`` if the block fails."""
    saved = {name: vars(estimator)[name] for name in names if name in vars(estimator)}
    try:
        yield
    except BaseException:
        for name in names:
            vars(estimator).pop(name, None)
        vars(estimator).update(saved)
        raise


def refuse_meaningless_cv(estimator, values, task=CLASSIFICATION):
    """Fail first thing in a fit under a meaningless sklearn cross-validation
    (probabilities from ``cross_val_predict``, scoring without the values)."""
    key = values_argument(task)
    if values is not None:
        predict = _sklearn_caller("_fit_and_predict")
        method = predict and predict.get("method")
        if method in ("predict_proba", "predict_log_proba", "decision_function"):
            raise TypeError(_CROSS_VAL_PREDICT.format(method=method))
    scoring = _sklearn_caller("_fit_and_score")
    if scoring is None:
        return
    scorer = scoring.get("scorer")
    scorers = getattr(scorer, "_scorers", {"score": scorer}).values()
    if values is None:  # y is read as labels; a table scorer reads it as bags
        tables = [s for s in scorers if getattr(s, "table", None) is not None]
        if tables:
            raise ValueError(
                f"fit got no {key}, so it reads y as instance "
                f"{'labels' if task == CLASSIFICATION else 'targets'}, while "
                f"{tables[0]!r} reads the same y as bag ids. Pass the bags' "
                f"{key} to fit: GridSearchCV(...).fit(X, bags, {key}=...) (in a "
                f"Pipeline, <step>__{key}=...), or params={{'{key}': ...}} to "
                "cross_validate / cross_val_score."
            )
        return
    passthrough = any(type(s).__name__ == "_PassthroughScorer" for s in scorers)
    if passthrough and key not in (scoring.get("score_params") or {}):
        name = type(getattr(estimator, "steps", [[0, estimator]])[-1][1]).__name__
        raise ValueError(
            _SCORE_WITHOUT_VALUES.format(name=name, **_SCORE_WORDS[task])
            + " (Raised in fit, so that the search stops instead of scoring NaN.)"
        )


class _LLPScoreMixin:
    """``score`` on bags, shared by the classifier and regressor mixins."""

    def _score_bags(self, X, y, values, sample_weight, task):
        check_is_fitted(self)
        key = values_argument(task)
        if values is None and not isinstance(y, Bags):
            if not self._fit_on_labels_:
                name, words = type(self).__name__, _SCORE_WORDS[task]
                if _sklearn_caller("score", module="sklearn.pipeline") is None:
                    raise ValueError(_SCORE_WITHOUT_VALUES.format(name=name, **words))
                received = _received(sample_weight, num_rows(X), key)
                raise ValueError(
                    _PIPELINE_SCORE.format(name=name, values=key, received=received)
                )
            mixin = ClassifierMixin if task == CLASSIFICATION else RegressorMixin
            return mixin.score(self, X, y, sample_weight=sample_weight)
        classes = getattr(self, "classes_", None)
        given = {key: values, "classes": classes, "sample_weight": sample_weight}
        bags = check_bags(y, n_samples=num_rows(X), task=task, **given)
        if task == REGRESSION:
            y_pred = check_predictions(self.predict(X), bags.n_samples)
            return bag_errors_of(bags, y_pred, ("r2",))["r2"]
        raw = self.predict_proba(X)  # decided in its own dtype, as predict does
        proba = check_proba(raw, bags.n_samples, bags.n_classes)
        error = bag_errors_of(bags, proba, ("hard_l1",), pred=self._decide(raw))
        return 1.0 - error["hard_l1"] / 2.0


def _received(sample_weight, n_samples, key):
    """What a Pipeline's sample_weight says about a positional ``key``."""
    try:  # a dict, table or ragged lists of bags: no row weights
        rows = not isinstance(sample_weight, dict) and np.shape(sample_weight)
    except ValueError:
        rows = ()
    if sample_weight is None or rows == (n_samples,):
        return "" if sample_weight is None else f" (were these the {key}?)"
    return f", and the {key} passed positionally arrived as sample_weight"


_SCORE_WORDS = {
    CLASSIFICATION: dict(
        values="props",
        score="an accuracy",
        score_of="1 - hard L1 / 2",
        labels="labels",
        metric="accuracy_score",
        default="hard_l1",
    ),
    REGRESSION: dict(
        values="targets",
        score="an R^2",
        score_of="R^2 of the bag means",
        labels="targets",
        metric="r2_score",
        default="r2",
    ),
}


#: ``threshold="auto"`` matches the class prior with more than two classes
#: from this median bag size on (Fashion-MNIST: +0.7 to +3.2 points in bags
#: of 512 and 1,024, -0.2 and -0.3 in bags of 256; ``decision_ceiling.md``).
PRIOR_MATCHING_BAG_SIZE = 512


class LLPClassifierMixin(_LLPScoreMixin, ClassifierMixin):
    """The label-free decision rule of ``threshold``, and ``score`` on bags."""

    def _decision_rule(self, bags=None):
        """``threshold`` with "auto" resolved for ``bags`` (default: training bags)."""
        if self.threshold != "auto":
            return self.threshold
        prior = not getattr(self, "_singleton_bags_", self._fit_on_labels_)
        if len(self.classes_) > 2:  # large bags leave the class rates off
            if bags is None:  # the training bags' median, kept by _fit_decision
                median = getattr(self, "_median_bag_", 0)
            else:
                median = np.median(bags.sizes)
            prior = prior and median >= PRIOR_MATCHING_BAG_SIZE
        return "prior" if prior else "argmax"

    def _check_threshold(self, classes):
        """Refuse a float ``threshold`` unless there are two classes."""
        if isinstance(self.threshold, Real) and len(classes) != 2:
            raise ValueError(
                f"threshold={self.threshold} is a probability threshold of the "
                f"second class, for two classes; there are {len(classes)} "
                f"({list(classes)}). Use threshold='prior' or 'argmax'."
            )

    def _fit_decision(self, bags, proba_of_rows):
        """Fit ``decision_offsets_`` and ``threshold_`` on the training ``bags``."""
        self._singleton_bags_ = bool(bags.sizes.max(initial=0) <= 1)
        self._median_bag_ = float(np.median(bags.sizes)) if bags.n_bags else 0.0
        rule = self._decision_rule()
        if rule != "prior":
            proba = np.zeros((0, len(self.classes_)))
            self.decision_offsets_, self.threshold_ = decision_of(bags, proba, rule)
            return
        rows = bags.distinct_rows()
        sub, _ = bags.restrict(rows)
        proba = proba_of_rows(rows)
        self.decision_offsets_, self.threshold_ = decision_of(sub, proba, rule)

    @over_dask_partitions
    def predict(self, X):
        """Class of every row by the fitted decision rule (``threshold``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)  # checks that the model is fitted
        return self.classes_[self._decide(proba)]

    @over_dask_partitions
    def predict_proba(self, X):
        """Class probabilities, in the order of ``classes_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._class_scores(X, log=False)

    @over_dask_partitions
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, from the logits (finite at 0).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        return self._class_scores(X, log=True)

    def _decide(self, proba):
        """Class index of every row by the fitted rule."""
        offsets = getattr(self, "decision_offsets_", None)
        return decide(proba, offsets, getattr(self, "threshold_", None))

    def score(self, X, y, props=None, sample_weight=None):
        """``1 - hard_L1 / 2`` on the bags of ``X``; accuracy if fitted on labels.

        The hard L1 error is the mean over bags of ``||p - p_hat||_1``, ``p_hat``
        the shares ``predict`` gives the bag's rows. A model fitted on bags needs
        ``props`` (``y`` then holds bag ids).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or Bags
            Bag ids (with ``props``) or class labels (without).
        props : array-like, DataFrame, Series or dict, default=None
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
            In [0, 1], greater is better.
        """
        return self._score_bags(X, y, props, sample_weight, CLASSIFICATION)


class LLPRegressorMixin(_LLPScoreMixin, RegressorMixin):
    """``score`` on bags for a regressor: the R^2 of the bag means."""

    def score(self, X, y, targets=None, sample_weight=None):
        """R^2 of the predicted bag means; R^2 on ``y`` if fitted on targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or Bags
            Bag ids (with ``targets``) or instance targets (without).
        targets : array-like, Series, DataFrame or dict, default=None
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
            At most 1, greater is better.
        """
        return self._score_bags(X, y, targets, sample_weight, REGRESSION)
