"""``LLPClassifier``: a scikit-learn classifier trained from label proportions."""

import warnings
from numbers import Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..bags._identifiability import check_identifiability, warn_if_unidentifiable
from ..core import check_fit_inputs
from ..core._decision import class_prior
from ..core._mixins import LLPClassifierMixin
from ..core._read import num_rows
from ..exceptions import FitDivergedError
from ._data import ArrayDataset, subset_rows
from ._net import _UNSIZED, LLPNet


class LLPClassifier(LLPClassifierMixin, LLPNet):
    """Instance classifier learned from bags and their label proportions.

    A PyTorch network trained with skorch on bags of instances, each bag
    labelled only by the proportions of its classes (Learning from Label
    Proportions). ``fit(X, bags, props)`` takes one bag id per row and the
    bags' proportions; ``predict`` then labels single instances. Every batch
    holds whole bags; bag means are segment reductions on the device.

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
    >>> clf.predict(X[:5]).shape
    (5,)
    >>> clf.score(X[keep], bags[keep], props[keep]) > 0.8
    True

    Parameters
    ----------
    method : str or LLPMethod, default="vat"
        The training loss, a component like ``module``: ``"dllp"``
        (proportion loss only), ``"vat"`` (LLP-VAT: proportion loss plus
        virtual adversarial consistency), ``"pi"`` (Pi-model consistency),
        ``"rot"`` (optimal-transport pseudo-labels), ``"llpfc"`` (forward
        correction of bag-position labels), ``"easyllp"`` (debiased instance
        loss), ``"noisy"`` (bags weighted by the likelihood of noisy counts)
        or an :class:`~sklearn_llp.methods.LLPMethod` instance. Its hyperparameters
        are ``method__*`` parameters, e.g. ``method__alpha=0.1``; they
        override an instance's own values (the instance itself is cloned,
        never modified) and are validated before any training. A fresh
        method is built once per ``fit``/``partial_fit``.
    max_epochs : int, default=100
        Epochs per ``fit`` (and per ``partial_fit``).
    lr : float, default=1e-3
        Learning rate.
    batch_size : int or "auto", default="auto"
        Target number of instances per batch; whole bags are packed until it
        is reached, so a batch may exceed it by less than one bag. ``"auto"``
        (the fitted ``batch_size_``) is 128 rows when the median bag (capped
        at ``max_bag_size``) is smaller, else 8 median bags: a bag at least as
        large as the batch is a step of its own, and the proportion gradient
        of a single bag is noisy (Fashion-MNIST in bags of 256: 74.6 %
        held-out accuracy with one bag a step, 82.4 % with 8). The minimum
        grows with the data where steps stay plentiful: on the CPU it is
        ``n_rows / 512`` when that is larger (at most 2048: at least 512
        steps an epoch), on a GPU ``n_rows / 32`` (at most 1024).
    random_state : int, RandomState instance or None, default=None
        Seeds the network's initialisation, the bag shuffling, the validation
        split and the random perturbations; an int makes a CPU fit
        reproducible for a given number of torch threads.
    verbose : int, default=1
        1 prints skorch's epoch table; 0 is silent.
    device : str, torch.device or None, default="auto"
        ``"auto"`` trains on CUDA when available, else on the CPU; or any
        torch device string. ``set_params(device=...)`` on a fitted model
        moves its network and optimizer state there. None moves nothing:
        the network and data stay where torch creates them (the CPU unless
        torch's default device is set); placement is then someone else's
        (:class:`~sklearn_llp.parallel.AcceleratedLLPClassifier`'s
        accelerator).
    threshold : {"auto", "prior", "argmax"} or float, default="auto"
        How ``predict`` turns probabilities into labels (``predict_proba`` is
        the same for every choice). ``"argmax"``: the most probable class
        (two classes: the threshold 0.5, a row at exactly 0.5 going to
        ``classes_[1]``). ``"prior"``: prior matching, without instance
        labels: the decision at which the predicted class rates on the
        training rows equal the class rates of the bags (their size-weighted
        mean proportions), within ties. Two classes: among the cut points
        (the distinct training probabilities of ``classes_[1]``, and one
        above them all), the one whose (weighted) positive rate is closest
        to the bags' rate; between two equally close, the lower. More
        classes: the offsets of the transport problem that assigns the
        training rows to the classes at the bags' rates maximising the
        summed log probability (rows with tied adjusted scores move together;
        see ``sklearn_llp.core._decision``). A model trained on proportions
        matches every bag's mean probability but can predict the common class
        for every row when no bag holds a majority of the rare class; prior
        matching recovers such decisions. A float in (0, 1): the fixed
        threshold ``proba[:, 1] >= threshold`` (two classes). ``"auto"``:
        ``"prior"`` for two classes fitted on bags, ``"argmax"`` otherwise
        (more classes, or labels); see the user guide, "Decisions without
        instance labels" (:ref:`threshold`).
        Fitted: ``decision_offsets_`` and ``threshold_``.
    validation_fraction : float, default=None
        Fraction of the **rows** held out for validation, in whole bags (whole
        groups of connected bags when bags overlap), drawn by
        :class:`~sklearn_llp.model_selection.BagShuffleSplit`: the held-out
        rows exceed the fraction by less than one bag. Every epoch the history
        records ``valid_loss`` (proportion loss) and the bag errors
        ``valid_hard_l1``, ``valid_soft_l1``, ``valid_hard_kl`` and
        ``valid_soft_kl`` (see :mod:`sklearn_llp.metrics`), which skorch's
        ``EarlyStopping``/``Checkpoint`` can monitor. None trains on all bags,
        unless early stopping is on: it then holds out 0.1. The split is
        drawn once per ``fit`` and kept by ``partial_fit``.
    early_stopping : "auto" or bool, default="auto"
        Stop when the held-out bags' hard L1 error (ties broken by the soft
        L1) has not improved for ``n_iter_no_change`` epochs, and restore the
        weights of the best epoch (``best_epoch_``). ``"auto"`` turns it on
        for the methods that overfit their loss as training goes on
        (``"easyllp"``, ``"llpfc"``: their ``early_stopping_default``) when
        they train on bags (not labels) and at least 5 bags are held out
        (50 bags at the default fraction 0.1); it stays off for the
        proportion-loss methods, where holding out bags cost 0.2-0.8 points
        on digits in bags of 16 (``"dllp"``, ``"vat"``, ``"pi"``, ``"rot"``,
        60 epochs, 3 seeds). Measured there, ``"easyllp"`` 71.1 % without
        and 88.1 % with it, ``"llpfc"`` 81.4 % and 89.4 %.
    n_iter_no_change : int, default=10
        Epochs without a new best held-out error after which early stopping
        ends the fit.
    module : torch.nn.Module class or instance, default=None
        The network; it maps a batch of ``X`` to class logits, one tensor of
        shape ``(n_rows, n_classes)``. ``None`` uses
        :class:`~sklearn_llp.modules.MLP`. A class whose ``__init__`` takes
        ``n_features`` and/or ``n_classes`` gets them from the data unless set
        as ``module__n_features``/``module__n_classes``; other arguments are
        ``module__*`` parameters (e.g. ``module__hidden_sizes=(64,)``). An
        instance is a template that is never trained itself: every ``fit``
        (unless ``warm_start=True``) trains a copy in ``module_`` whose
        parameters are reset (``reset_parameters()`` of each submodule, under
        the fit's seed), so seeded fits are identical and estimators that
        share the instance are independent.
    classes : array-like, default=None
        Class labels in the column order of ``props``; default: the columns
        of a per-bag table, else ``0..n_classes-1``.
    max_bag_size : int, default=1024
        Bags with more instances are subsampled afresh every epoch to this
        many, so the memory of a step is bounded while every instance is used
        over the epochs. None never subsamples.
    optimizer : torch optimizer class, default=torch.optim.Adam
    predict_batch_size : int, default=4096
        Rows per forward pass in ``predict`` and ``predict_proba``.
    callbacks : list or tuple of skorch callbacks, default=None
        Extra callbacks, e.g. ``skorch.callbacks.ProgressBar("count")``.
        skorch's ``EpochScoring``/``BatchScoring`` score instances against
        labels, which LLP data do not have, and are refused; the bag errors
        of ``validation_fraction`` are recorded instead.
    warm_start : bool, default=False
        Continue from the current weights on ``fit``; the data must have the
        fitted model's classes and features (else ``fit`` raises and the
        model is left as it was).
    n_threads : int, "auto" or None, default="auto"
        Torch intra-op threads during ``fit`` and ``predict`` on the CPU,
        restored afterwards (torch's setting is process-wide). ``"auto"``
        uses the free cores, decided once per call: the cores of the
        process's CPU affinity (and cgroup quota) less the 1-minute load
        average of other processes (or less what the CPU counters of the
        last 0.1 s show, when lower: the average still counts a process for
        a minute after it has ended), at most ``torch.get_num_threads()`` and
        at least 1 -- so 2 on an idle 2-core machine, 1 beside one busy
        process, and 1 inside a joblib, loky or Dask worker or under a
        ``threadpoolctl`` limit of 1 (see
        :func:`sklearn_llp.neural._runtime.auto_threads`). Threads that wait on a
        busy core are the pathology this avoids: with one other busy process,
        two threads made a VAT fit 33 times slower (79 s against 2.4 s) than
        one. None leaves torch's setting. Results on the CPU are bit-for-bit
        reproducible for a given number of threads, not across thread
        counts: for reproducible fits on a machine whose load varies, pass an
        int.
    precision : {"float32", "bfloat16", "float16"}, default="float32"
        Precision of the network's training passes (``torch.autocast``):
        ``"bfloat16"`` and ``"float16"`` run the forward passes in half
        precision, which GPUs with tensor cores run several times faster;
        the weights, the losses and the bag means stay in float32, and
        ``"float16"`` scales the loss (``torch.amp.GradScaler``) so that
        small gradients do not vanish. Predictions are made in float32.
        On the CPU ``"bfloat16"`` works but is seldom faster.
    **kwargs
        ``method__*``, ``module__*``, ``optimizer__*`` and ``callbacks__*``
        parameters, as in skorch.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, from ``props`` or ``classes``, never from the bag ids.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of a DataFrame ``X``.
    module_ : torch.nn.Module
        The trained network.
    method_ : LLPMethod
        The method object that computed the loss.
    history_ : skorch.History
        Per-epoch and per-batch records (``train_loss``, ``valid_loss``,
        ``dur``...), also as ``history``.
    batch_size_ : int
        The batch size used (``batch_size`` resolved from the bag sizes).
    decision_offsets_ : ndarray of shape (n_classes,)
        Log-probability offsets of the decision rule. With more than two
        classes ``predict`` is exactly ``classes_[np.argmax(np.log(
        proba.astype(np.float64)) + decision_offsets_, axis=1)]``, the first
        maximum on ties (zeros for ``argmax``). With two classes
        ``[0, -logit(threshold_)]``, for information: ``predict`` uses
        ``threshold_``.
    threshold_ : float or None
        With two classes, the probability of ``classes_[1]`` from which
        ``predict`` says ``classes_[1]``: ``predict`` is exactly
        ``classes_[(proba[:, 1] >= threshold_).astype(int)]`` (a Python
        float, so NumPy compares in float32 like ``predict_proba``; the
        prior-matched one is a training probability, or the smallest float32
        above them all; 0.5 for ``argmax``). None otherwise. Usable in
        ``sklearn.model_selection.FixedThresholdClassifier``.
    do_early_stopping_ : bool
        Whether the last ``fit`` stopped early (``early_stopping`` resolved).
    best_epoch_ : int or None
        The epoch (1-based, as in ``history``) whose weights early stopping
        restored; None without early stopping.
    train_bag_ids_ : ndarray or None
        Ids of the bags trained on (without the held-out bags; accumulated
        by ``partial_fit``), which the bag scorers check against the bags
        they score. None when fitted on labels.
    n_train_steps_ : int
        Optimizer steps taken so far.
    total_steps_ : int
        Optimizer steps planned by the ``fit`` that started training; the
        consistency ramp-up is a fraction of it.

    See Also
    --------
    sklearn_llp.methods.VAT : The LLP-VAT loss.
    sklearn_llp.methods.DLLP : The proportion loss alone.

    Notes
    -----
    Everything that can be checked before training is checked before
    training (data, classes against ``threshold``, ``method__*``, callbacks
    that need held-out bags), and a refused ``fit`` leaves the estimator as
    it was. A failure during training (an exception in a callback, a
    diverged loss) leaves it unfitted -- its weights are half-trained -- and
    the next ``fit`` or ``partial_fit`` starts afresh.

    ``fit`` checks whether the bags can identify an instance classifier
    (:func:`~sklearn_llp.bags.check_identifiability`: enough bags whose
    proportions differ, for the classes and features) and issues an
    :class:`~sklearn_llp.exceptions.IdentifiabilityWarning` when they may
    not: fits from different seeds then match every bag yet disagree on
    instances. A fit whose loss becomes NaN or infinite stops with
    :class:`~sklearn_llp.exceptions.FitDivergedError`. ``set_params`` of
    ``module__*`` on a fitted model re-initialises the network (skorch's
    behaviour): a :class:`~sklearn_llp.exceptions.ModelResetWarning` says so
    and the model counts as not fitted until the next ``fit``.
    """

    __metadata_request__fit = {"props": True}
    __metadata_request__partial_fit = {"props": True}
    __metadata_request__score = {"props": True}

    # early stopping follows the held-out hard L1 bag error (ties: soft L1)
    _stopping_record = "hard_l1"

    _parameter_constraints = {
        **LLPNet._parameter_constraints,
        "classes": ["array-like", None],
        "threshold": [
            StrOptions({"auto", "prior", "argmax"}),
            Interval(Real, 0, 1, closed="neither"),
        ],
    }

    def __init__(
        self,
        module=None,
        *,
        method="vat",
        classes=None,
        threshold="auto",
        max_bag_size=1024,
        validation_fraction=None,
        random_state=None,
        optimizer=torch.optim.Adam,
        lr=1e-3,
        max_epochs=100,
        batch_size="auto",
        predict_batch_size=4096,
        callbacks=None,
        warm_start=False,
        verbose=1,
        device="auto",
        n_threads="auto",
        precision="float32",
        early_stopping="auto",
        n_iter_no_change=10,
        **kwargs,
    ):
        super().__init__(
            module,
            method=method,
            max_bag_size=max_bag_size,
            validation_fraction=validation_fraction,
            random_state=random_state,
            optimizer=optimizer,
            lr=lr,
            max_epochs=max_epochs,
            batch_size=batch_size,
            predict_batch_size=predict_batch_size,
            callbacks=callbacks,
            warm_start=warm_start,
            verbose=verbose,
            device=device,
            n_threads=n_threads,
            precision=precision,
            early_stopping=early_stopping,
            n_iter_no_change=n_iter_no_change,
            **kwargs,
        )
        self.classes = classes
        self.threshold = threshold

    # ------------------------------------------------------------------
    # training
    # ------------------------------------------------------------------
    def fit(self, X, y=None, props=None, sample_weight=None, **fit_params):
        """Train from bags and proportions, or from labels if ``props=None``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Instances (numeric; use a ``ColumnTransformer`` for categorical
            columns). Rows of higher-dimensional arrays go to a custom module.
        y : array-like, DataFrame, sparse matrix, list of arrays or Bags
            The bag of every row: an id (int, str, bool, timestamp) or a
            composite key (a tuple, or a DataFrame of key columns); the id
            ``-1`` is refused, it marks rows in no bag. Bags that overlap are
            given as a sparse ``(n_samples, n_bags)`` membership matrix or a
            list of ``n_bags`` arrays of row indices. A
            :class:`~sklearn_llp.core.Bags` (from
            :func:`~sklearn_llp.core.check_bags`) carries its proportions.
            With ``props=None`` (and no ``Bags``), ``y`` holds the class label
            of every row (ordinary supervised learning).
        props : array-like, DataFrame, Series or dict, default=None
            Label proportions: sample-aligned ``(n_samples, n_classes)``
            (each row its bag's proportions), a 1-D positive-class fraction
            for two classes, or a per-bag table indexed by bag id (a pandas
            object with the default index ``0..n-1`` is read by row); with
            overlapping bags, one row per bag ``(n_bags, n_classes)``. Rows
            must sum to 1 within ``sklearn_llp.core.PROPS_SUM_TOL`` (0.01).
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row (e.g. survey weights): a bag's predicted
            proportions are the weighted mean of its rows' probabilities
            (an integer weight counts as that many copies of the row), and
            the consistency losses are weighted means; every bag counts once.
            ``props`` are taken as the bags' (weighted) proportions as given.
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
            As in :meth:`fit`; the data must have the fitted model's classes
            and features.
        classes : array-like, default=None
            Accepted for scikit-learn's API; must match ``classes_`` if the
            model is fitted, else it is used like the ``classes`` parameter.
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPClassifier
        """
        if (
            classes is not None
            and self.__sklearn_is_fitted__()
            and not np.array_equal(classes, self.classes_)
        ):
            raise ValueError("classes must match classes_ of the fitted model.")
        return self._fit(X, y, props, sample_weight, fit_params, True, classes)

    def _fit_inputs(self, X, y, props, sample_weight, classes, continuing):
        """Bags from ids and proportions, or from labels (``props=None``)."""
        n_samples = num_rows(X)
        if not continuing:
            return check_fit_inputs(
                y,
                props,
                n_samples=n_samples,
                sample_weight=sample_weight,
                classes=self.classes if classes is None else classes,
            )
        try:
            bags, on_labels = check_fit_inputs(
                y,
                props,
                n_samples=n_samples,
                sample_weight=sample_weight,
                classes=self.classes_,
            )
        except ValueError as exc:
            raise ValueError(
                f"{exc} The fitted model has classes {self.classes_.tolist()}; "
                "warm_start=True and partial_fit continue training it, so new data "
                "must have the same classes (set warm_start=False to train "
                "afresh)."
            ) from exc
        if not np.array_equal(bags.classes, self.classes_):
            raise ValueError(
                f"props has classes {bags.classes.tolist()} but the model was "
                f"fitted on {self.classes_.tolist()}."
            )
        return bags, on_labels

    def _check_fit_problem(self, bags, on_labels):
        self._check_threshold(bags.classes)

    def _commit_fit_inputs(self, bags, on_labels):
        self.classes_ = bags.classes
        # the rule of earlier weights: argmax until this fit sets its own
        for name in ("decision_offsets_", "threshold_"):
            vars(self).pop(name, None)

    def _warn_if_unidentifiable(self, bags, X):
        # fit -> _fit -> here -> warn_if_unidentifiable: point at the user's call
        warn_if_unidentifiable(check_identifiability(bags, None, X), 4)

    def _after_training(self, dataset):
        self._fit_decision(dataset)

    def _n_outputs(self):
        if hasattr(self, "classes_"):
            return len(self.classes_)
        if self.classes is not None:
            return len(self.classes)
        return None

    def _unsized_message(self):
        return _UNSIZED.format(
            name=type(self).__name__,
            outputs="classes=[...] (or module__n_classes=<number of classes>)",
        )

    # ------------------------------------------------------------------
    # prediction
    # ------------------------------------------------------------------
    def predict_proba(self, X):
        """Class probabilities, in the order of ``classes_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        logits = self._forward_outputs(X)
        proba = torch.softmax(logits.float(), dim=1).numpy()
        if not np.isfinite(proba).all():
            raise ValueError(
                "The network predicts NaN or infinite probabilities: its weights "
                "are not finite (a diverged fit, or weights loaded from one). "
                "Fit again, e.g. with a smaller lr."
            )
        return proba

    def predict(self, X):
        """Class of every row by the fitted decision rule (``threshold``).

        Exactly, with ``proba = self.predict_proba(X)``: two classes,
        ``classes_[(proba[:, 1] >= threshold_).astype(int)]``; more,
        ``classes_[np.argmax(np.log(proba.astype(np.float64)) +
        decision_offsets_, axis=1)]`` (the most probable class for
        ``threshold="argmax"``, whose offsets are zero).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)  # checks that the model is fitted
        return self.classes_[self._decide(proba)]

    def _fit_decision(self, dataset):
        """The decision rule from the training rows (see ``threshold``)."""
        bags = dataset.bags
        rows = np.unique(bags.members)

        def training_proba():
            logits = self.forward(ArrayDataset(subset_rows(dataset.X, rows)))
            proba = torch.softmax(logits.float(), dim=1).numpy()
            if not np.isfinite(proba).all():
                raise FitDivergedError(
                    "After training, the network predicts NaN or infinite "
                    "probabilities for the training rows: the fit diverged. Fit "
                    f"again with a smaller lr (lr={self.lr}) or standardised X."
                )
            return proba

        weights = None if bags.weights is None else bags.weights[rows]
        self._fit_decision_rule(training_proba, class_prior(bags), weights)

    # ------------------------------------------------------------------
    # persistence
    # ------------------------------------------------------------------
    def load_params(self, *args, **kwargs):
        """Load parameters saved by ``save_params`` or a skorch ``Checkpoint``.

        ``load_params(checkpoint=cp)`` loads a ``Checkpoint``'s files. On a
        model that was never fitted, call ``initialize()`` first with
        ``module__n_features`` and ``classes`` (or ``module__n_classes``)
        set, so that the network can be built before its weights are loaded;
        the model then predicts with the loaded weights and ``argmax`` (the
        prior-matched rule needs the training rows: fit, or use
        ``Checkpoint(load_best=True)``, which loads the best weights before
        ``fit`` computes the rule). Loading weights into a fitted model whose
        rule is prior matching keeps ``decision_offsets_`` of the fitted
        weights and warns.
        """
        fitted = self.__sklearn_is_fitted__()
        super().load_params(*args, **kwargs)
        loads_weights = kwargs.get("f_params") is not None or (
            kwargs.get("checkpoint") is not None
        )
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
            if n_features is not None and not hasattr(self, "n_features_in_"):
                self.n_features_in_ = n_features
            if not hasattr(self, "_input_shape_") and n_features is not None:
                self._input_shape_ = (n_features,)
            self.classes_ = (
                np.asarray(self.classes)
                if self.classes is not None
                else np.arange(self._n_outputs() or _module_outputs(self))
            )
            self._fit_on_labels_ = False
            steps = [row.get("train_batch_count", 0) for row in self.history]
            self.n_train_steps_ = int(sum(steps))
            self.total_steps_ = None
            self._weights_stale_ = not loads_weights
        return self


def _module_outputs(net):
    """Number of logits of the module: the classes of a loaded model."""
    last = [p for p in net.module_.parameters() if p.dim() >= 1][-1]
    return int(last.shape[0])
