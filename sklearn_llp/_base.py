"""Behaviour every LLP estimator shares: scoring bags, guarding sklearn paths.

Kept free of torch, so that ``sklearn_llp.linear`` needs none.
"""

import sys

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import _num_samples, check_is_fitted

from .metrics._bag_metrics import bag_errors_of, check_proba
from .utils import Bags, check_bags

_SCORE_WITHOUT_PROPS = (
    "{name}.score(X, y) got no props, but the model was fitted on bags, so y "
    "holds bag ids and an accuracy against them would be meaningless. Pass the "
    "proportions: score(X, bags, props). Inside GridSearchCV or cross_validate "
    "with metadata routing off (scikit-learn's default, where the default "
    "scoring calls score(X, y)), pass scoring=make_bag_scorer('hard_l1', "
    "bags=bags, props=props) from sklearn_llp.metrics, or enable metadata "
    "routing (sklearn.set_config(enable_metadata_routing=True)) and pass "
    "props=props to the search's fit."
)

_CROSS_VAL_PREDICT = (
    "scikit-learn's cross_val_predict with method='{method}' treats y as class "
    "labels; here y holds bag ids, so it would return one column per bag, most "
    "of them zero. Use sklearn_llp.model_selection.cross_val_predict(estimator, "
    "X, bags, props, method='predict_proba'), which returns (n_samples, "
    "n_classes) probabilities, or method='predict' for labels."
)


def _sklearn_cross_val_predict_method(depth=12):
    """The ``method`` of scikit-learn's ``cross_val_predict`` if it is our
    caller (a few frames up, through a Pipeline too), else None.

    That function label-encodes ``y`` and, for probabilities, reshapes them
    to one column per distinct ``y``: per bag id here.
    """
    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return None
        if (
            frame.f_code.co_name == "_fit_and_predict"
            and frame.f_globals.get("__name__") == "sklearn.model_selection._validation"
        ):
            return frame.f_locals.get("method")
        frame = frame.f_back
    return None


def refuse_sklearn_cross_val_predict(props):
    """Raise inside scikit-learn's ``cross_val_predict`` for probabilities of a
    fit on bags (called first thing in ``fit``)."""
    if props is None:
        return
    method = _sklearn_cross_val_predict_method()
    if method in ("predict_proba", "predict_log_proba", "decision_function"):
        raise TypeError(_CROSS_VAL_PREDICT.format(method=method))


class BagScoreMixin(ClassifierMixin):
    """``score`` of an LLP classifier: ``1 - hard_L1 / 2`` on bags.

    The estimator sets ``_fit_on_labels_`` in ``fit`` and may override
    :meth:`_decide` (class index of every row from its probabilities) with
    its decision rule; the default is the most probable class.
    """

    def _decide(self, proba):
        return np.argmax(proba, axis=1)

    def score(self, X, y, props=None, sample_weight=None):
        """``1 - hard_L1 / 2`` on the bags of ``X``; accuracy if fitted on labels.

        The hard L1 error is the mean over bags of ``||p - p_hat||_1`` where
        ``p_hat`` is the fraction of the bag's rows predicted as each class
        (by ``predict``; the paper's model-selection criterion); when every
        bag is a single row the score equals the accuracy.

        A model fitted on bags needs ``props``: ``score(X, bags)`` raises,
        because ``y`` then holds bag ids and an accuracy against them would
        be meaningless. (In GridSearchCV with metadata routing off, where the
        default scoring calls ``score(X, y)``, pass
        ``scoring=make_bag_scorer("hard_l1", bags=bags, props=props)``.) A
        model fitted on labels (``props=None`` in ``fit``) scores accuracy
        against the labels ``y`` when ``props`` is None.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or Bags
            Bag ids (with ``props``) or class labels (without).
        props : array-like, DataFrame, Series or dict, default=None
            Label proportions in any form ``fit`` accepts.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row within its bag (with ``props``), or of every
            row in the accuracy (without).

        Returns
        -------
        score : float
            In [0, 1], greater is better.
        """
        check_is_fitted(self)
        if props is None and not isinstance(y, Bags):
            if not self._fit_on_labels_:
                raise ValueError(_SCORE_WITHOUT_PROPS.format(name=type(self).__name__))
            return super().score(X, y, sample_weight=sample_weight)
        bags = check_bags(
            y,
            props,
            n_samples=_num_samples(X),
            classes=self.classes_,
            sample_weight=sample_weight,
            require_props=True,
        )
        proba = check_proba(self.predict_proba(X), bags.n_samples, bags.n_classes)
        pred = self._decide(proba)
        error = bag_errors_of(bags, proba, ("hard_l1",), pred=pred)["hard_l1"]
        return 1.0 - error / 2.0
