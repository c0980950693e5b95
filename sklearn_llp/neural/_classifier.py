"""``LLPClassifier``: a scikit-learn classifier learned from label proportions."""

import warnings
from numbers import Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from ..bags import check_identifiability, warn_if_names_lost, warn_if_unidentifiable
from ..core import BAG_METRICS, LLPClassifierMixin, bag_errors_of, decide, decision_of
from ..exceptions import FitDivergedError
from ..methods import MixBag
from ._data import ArrayDataset, subset_rows
from ._net import LLPNet, declare_parameters


@declare_parameters
class LLPClassifier(LLPClassifierMixin, LLPNet):
    """Instance classifier learned from bags and their label proportions.

    A PyTorch network trained through skorch on whole bags: ``fit(X, bags, props)``
    (:ref:`data_model`, :ref:`methods`), then ``predict`` labels single rows.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_llp import LLPClassifier
    >>> from sklearn_llp.bags import UniformBagGenerator
    >>> X, y = load_digits(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> bags, props = UniformBagGenerator(16, random_state=0).make_bags(X, y)
    >>> keep = bags >= 0  # the last, incomplete bag is dropped
    >>> clf = LLPClassifier(max_epochs=20, verbose=0, random_state=0)
    >>> clf = clf.fit(X[keep], bags[keep], props[keep])
    >>> clf.score(X[keep], bags[keep], props[keep]) > 0.8
    True

    Parameters
    ----------{module}
    method : str or LLPMethod, default="auto"
        The training loss, a component with ``method__*`` parameters:
        ``"dllp"``, ``"vat"`` (LLP-VAT), ``"pi"``, ``"rot"``, ``"llpfc"``,
        ``"easyllp"``, ``"noisy"`` or an
        :class:`~sklearn_llp.methods.LLPMethod`. ``"auto"`` chooses one
        by the bags (:class:`~sklearn_llp.methods.AutoMethod`,
        :ref:`auto_method`); the choice is ``method_``.{key}
    classes : array-like, default=None
        Class labels in the column order of ``props``; default: the named
        columns, else ``0..n_classes-1``.
    threshold : {"auto", "prior", "argmax"} or float, default="auto"
        How ``predict`` turns probabilities into labels: ``"argmax"``,
        ``"prior"`` (the class rates over the training rows match the bags'),
        or a probability threshold of ``classes_[1]`` (:ref:`threshold`).
    mixbag : bool, float or MixBag, default=False
        Add mixed bags to every epoch (:ref:`mixbag`): True is ``MixBag()``, a
        number its ``n_mixed``; for the methods of bag means.{more}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        From ``props`` or ``classes``, never from the bag ids.
    module_ : torch.nn.Module
    fit_plan_ : FitPlan
        Every ``"auto"`` of the last fit, decided from its bags before training.
    method_, batch_size_ : LLPMethod, int
        The method and batch size used (the ones ``"auto"`` chose).
    decision_offsets_, threshold_ : ndarray of shape (n_classes,), float or None
        The fitted decision rule of ``predict`` (:ref:`threshold`).
    do_early_stopping_, best_epoch_ : bool, int or None
        Whether the last fit stopped early; the (1-based) epoch it restored.
    train_bag_ids_ : ndarray or None
        The bags trained on, which the bag scorers check.
    n_train_steps_, total_steps_ : int
        Optimizer steps taken, and planned by the fit (VAT's ramp-up).
    n_features_in_, feature_names_in_
        As in scikit-learn.

    See Also
    --------
    sklearn_llp.LLPRegressor : The same from bag means.
    sklearn_llp.linear.MeanMapClassifier : A fast linear model of bag means.

    """

    __metadata_request__fit = {"props": True}
    __metadata_request__partial_fit = {"props": True}
    __metadata_request__score = {"props": True}

    _task = "classification"
    _stopping_metric = "hard_l1"
    _parameter_constraints = {
        **LLPNet._parameter_constraints,
        "classes": ["array-like", None],
        "threshold": [
            StrOptions({"auto", "prior", "argmax"}),
            Interval(Real, 0, 1, closed="neither"),
        ],
        "mixbag": ["boolean", Interval(Real, 0, None, closed="neither"), MixBag],
    }

    def __init__(
        self,
        module=None,
        *,
        method="auto",
        classes=None,
        threshold="auto",
        mixbag=False,
        **kwargs,
    ):
        super().__init__(module, method=method, **kwargs)
        self.classes = classes
        self.threshold = threshold
        self.mixbag = mixbag

    def fit(self, X, y=None, props=None, sample_weight=None, **fit_params):
        """Train from bags and proportions, or from labels if ``props=None``.

        Parameters
        ----------
        X : array-like, sparse matrix or Dask collection, shape (n_samples, n_features)
            Numeric rows (encode categorical columns in a Pipeline); a Dask
            array or DataFrame is streamed by partition (:ref:`dask`).
        y : array-like, DataFrame, sparse matrix, list of arrays or Bags
            The bag of every row (or class labels when ``props`` is None).
        props : array-like, DataFrame, Series or dict, default=None
            The bags' class proportions, sample-aligned or per bag.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: a bag's prediction is their weighted mean.
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPClassifier
        """
        return self._fit(X, y, props, sample_weight, fit_params, partial=False)

    def partial_fit(
        self, X, y=None, props=None, classes=None, sample_weight=None, **fit_params
    ):
        """Train ``max_epochs`` more epochs without re-initialising.

        Parameters
        ----------
        X, y, props, sample_weight
            As in :meth:`fit`, with the fitted model's classes and features.
        classes : array-like, default=None
            Must match ``classes_`` once fitted.
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPClassifier
        """
        fitted = classes is not None and self.__sklearn_is_fitted__()
        if fitted and not np.array_equal(classes, self.classes_):
            raise ValueError("classes must match classes_ of the fitted model.")
        return self._fit(X, y, props, sample_weight, fit_params, True, classes)

    def _read_fit_inputs(self, X, y, props, sample_weight, classes, continuing):
        try:
            bags, on_labels = super()._read_fit_inputs(
                X, y, props, sample_weight, classes, continuing
            )
        except ValueError as exc:
            if not continuing:
                raise
            raise ValueError(
                f"{exc} The fitted model has classes {self.classes_.tolist()}; "
                "warm_start=True and partial_fit continue training it, so new data "
                "must have the same classes (set warm_start=False to train afresh)."
            ) from exc
        if continuing and not np.array_equal(bags.classes, self.classes_):
            raise ValueError(
                f"props has classes {bags.classes.tolist()} but the model was "
                f"fitted on {self.classes_.tolist()}."
            )
        warn_if_names_lost(bags, props, 5)  # fit -> _fit -> _validate_and_train
        return bags, on_labels

    def _check_fit_problem(self, bags):
        self._check_threshold(bags.classes)

    def _commit_fit_inputs(self, bags, on_labels, continuing):
        self.classes_ = bags.classes
        for name in ("decision_offsets_", "threshold_"):  # argmax until refit
            vars(self).pop(name, None)

    def _warn_if_unidentifiable(self, bags, X):
        # fit -> _fit -> here -> warn: point at the user's call
        warn_if_unidentifiable(check_identifiability(X, bags, None), 5)

    def _n_outputs(self):
        if hasattr(self, "classes_"):
            return len(self.classes_)
        return None if self.classes is None else len(self.classes)

    def _validation_loss(self, y_pred, bags):
        return bags.proportion_loss(y_pred)

    def _bag_errors(self, bags, logits):
        if logits is None:
            return dict.fromkeys(BAG_METRICS)
        # in float32, as predict_proba
        proba = torch.softmax(logits, dim=1).numpy().astype(np.float64)
        pred = decide(proba, *decision_of(bags, proba, self._decision_rule(bags)))
        return bag_errors_of(bags, proba, BAG_METRICS, pred=pred)

    def _after_training(self, dataset):
        """The decision rule, fitted on the training rows."""

        def proba_of_rows(rows):
            logits = self.forward(ArrayDataset(subset_rows(dataset.X, rows)))
            proba = torch.softmax(logits.float(), dim=1).numpy()
            if not np.isfinite(proba).all():
                raise FitDivergedError(
                    "After training, the network predicts NaN or infinite "
                    "probabilities for the training rows: the fit diverged. Fit "
                    f"again with a smaller lr (lr={self.lr}) or standardised X."
                )
            return proba

        self._fit_decision(dataset.bags, proba_of_rows)

    def _class_scores(self, X, log):
        """Softmax (or its log) of the logits, in float32."""
        function = torch.log_softmax if log else torch.softmax
        return self._forward_outputs(
            X, lambda logits: function(logits, dim=1).numpy(), "probabilities"
        )

    def load_params(self, *args, **kwargs):
        """Load weights saved by ``save_params`` or a ``Checkpoint``.

        On a model never fitted, ``initialize()`` it first (with
        ``module__n_features`` and ``classes``): it predicts by ``argmax``.
        Over prior-matching weights, the old rule is kept, with a warning.
        """
        fitted = self.__sklearn_is_fitted__()
        super().load_params(*args, **kwargs)
        given = (kwargs.get(name) for name in ("f_params", "checkpoint"))
        loads_weights = any(value is not None for value in given)
        if fitted and loads_weights and self._decision_rule() == "prior":
            warnings.warn(
                "load_params replaced the weights of a fitted model whose "
                "decision rule (threshold) was fitted on the previous weights: "
                "decision_offsets_ and threshold_ are kept. Refit, or save the "
                "best epoch with Checkpoint(load_best=True) so that fit computes "
                "the rule for it.",
                UserWarning,
                stacklevel=2,
            )
        if not hasattr(self, "classes_"):
            n_features = self.get_params_for("module").get("n_features")
            if n_features is not None:
                vars(self).setdefault("n_features_in_", n_features)
                vars(self).setdefault("_input_shape_", (n_features,))
            outputs = self._n_outputs() or _module_outputs(self)
            named = self.classes is not None
            self.classes_ = np.asarray(self.classes) if named else np.arange(outputs)
            self._fit_on_labels_ = False
            steps = [row.get("train_batch_count", 0) for row in self.history]
            self.n_train_steps_, self.total_steps_ = int(sum(steps)), None
            self._weights_stale_ = not loads_weights
        return self


def _module_outputs(net):
    """Number of logits of the module: the classes of a loaded model."""
    last = [p for p in net.module_.parameters() if p.dim() >= 1][-1]
    return int(last.shape[0])
