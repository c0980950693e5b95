"""Behaviour every LLP estimator shares: scoring bags, guarding sklearn paths.

Kept free of torch, so that ``sklearn_llp.linear`` needs none.
"""

import sys
from contextlib import contextmanager
from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ._bags import Bags
from ._decision import decide, fit_decision
from ._errors import bag_errors_of, check_proba
from ._read import check_bags, num_rows

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


@contextmanager
def restore_on_error(estimator, names):
    """Restore the attributes ``names`` of ``estimator`` if the block fails.

    ``validate_data(reset=True)`` sets ``n_features_in_`` and
    ``feature_names_in_`` before the rest of the input is checked; a refused
    refit must leave them as they were.
    """
    saved = {name: vars(estimator)[name] for name in names if name in vars(estimator)}
    try:
        yield
    except BaseException:
        for name in names:
            vars(estimator).pop(name, None)
        vars(estimator).update(saved)
        raise


def refuse_sklearn_cross_val_predict(props):
    """Raise inside scikit-learn's ``cross_val_predict`` for probabilities of a
    fit on bags (called first thing in ``fit``)."""
    if props is None:
        return
    method = _sklearn_cross_val_predict_method()
    if method in ("predict_proba", "predict_log_proba", "decision_function"):
        raise TypeError(_CROSS_VAL_PREDICT.format(method=method))


class LLPClassifierMixin(ClassifierMixin):
    """What the LLP classifiers share: the label-free decision rule of their
    ``threshold`` parameter and ``score`` on bags (``1 - hard_L1 / 2``).

    The estimator has a ``threshold`` parameter, sets ``classes_`` and
    ``_fit_on_labels_`` in ``fit``, then calls :meth:`_fit_decision_rule`
    with the probabilities of its training rows; ``predict`` is
    ``classes_[self._decide(proba)]``. The rules, exactly: two classes,
    ``proba[:, 1] >= threshold_`` (NumPy's comparison, in the dtype of
    ``proba``); more, ``np.argmax(np.log(proba.astype(np.float64)) +
    decision_offsets_, axis=1)``, the first maximum on ties (see
    :mod:`sklearn_llp.core._decision` for prior matching).
    """

    def _decision_rule(self):
        """``threshold`` resolved for the fitted problem: "argmax", "prior"
        or a float (binary)."""
        if self.threshold != "auto":
            return self.threshold
        binary_bags = len(self.classes_) == 2 and not self._fit_on_labels_
        return "prior" if binary_bags else "argmax"

    def _offsets(self, proba, prior, weights=None):
        """The decision ``(offsets, threshold)`` of the rule for rows with
        probabilities ``proba`` whose bags have the overall class proportions
        ``prior`` (see :func:`sklearn_llp.core._decision.fit_decision`); pass it
        to :meth:`_decide`."""
        return fit_decision(self._decision_rule(), proba, prior, weights)

    def _check_threshold(self, classes):
        """Refuse a float ``threshold`` unless there are two classes; called
        with the data's ``classes`` before fitting, so nothing is trained."""
        if isinstance(self.threshold, Real) and len(classes) != 2:
            raise ValueError(
                f"threshold={self.threshold} is a probability threshold of the "
                f"second class, for two classes; there are {len(classes)} "
                f"({list(classes)}). Use threshold='prior' or 'argmax'."
            )

    def _fit_decision_rule(self, training_proba, prior, weights=None):
        """Set ``decision_offsets_`` and ``threshold_``.

        ``training_proba()`` returns the probabilities of the training rows
        (called only for prior matching), ``weights`` their sample weights
        and ``prior`` the bags' overall class proportions.
        """
        if self._decision_rule() == "prior":
            proba = training_proba()
        else:
            proba = np.zeros((0, len(self.classes_)))
        self.decision_offsets_, self.threshold_ = self._offsets(proba, prior, weights)

    def _decide(self, proba, decision=None):
        """Class index of every row by ``decision`` (an ``(offsets,
        threshold)`` from :meth:`_offsets`), by default the fitted rule: two
        classes, ``proba[:, 1] >= threshold_``; more,
        ``argmax(log(proba.astype(float64)) + decision_offsets_)``."""
        if decision is None:
            decision = (
                getattr(self, "decision_offsets_", None),
                getattr(self, "threshold_", None),
            )
        return decide(proba, *decision)

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
        n_samples = num_rows(X)
        bags = check_bags(
            y,
            props,
            n_samples=n_samples,
            classes=self.classes_,
            sample_weight=sample_weight,
            require_props=True,
        )
        proba = check_proba(self.predict_proba(X), bags.n_samples, bags.n_classes)
        pred = self._decide(proba)
        error = bag_errors_of(bags, proba, ("hard_l1",), pred=pred)["hard_l1"]
        return 1.0 - error / 2.0
