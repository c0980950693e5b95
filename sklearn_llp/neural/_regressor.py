"""``LLPRegressor``: a scikit-learn regressor learned from bag means."""

import warnings

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback

from ..core import Bags
from ..core._read import check_bag_targets, check_instance_targets, num_rows
from ..exceptions import IdentifiabilityWarning
from ..methods._regression import regression_losses
from ..metrics._regression import bag_means_of, regression_errors_of
from ._callbacks import held_out_batch
from ._net import LLPNet, _Callbacks

_SCORE_WITHOUT_TARGETS = (
    "{name}.score(X, y) got no targets, but the model was fitted on bags, so y "
    "may hold bag ids, and an R^2 against them would be meaningless. Pass the "
    "bag means, score(X, bags, targets), for the R^2 of the predicted bag "
    "means; for instance targets y_true of test rows, use "
    "sklearn.metrics.r2_score(y_true, model.predict(X)). Inside GridSearchCV "
    "or cross_validate with metadata routing off, pass "
    "scoring=make_bag_regression_scorer('r2', bags=bags, targets=targets) "
    "from sklearn_llp.metrics, or enable metadata routing and pass "
    "targets=targets to the search's fit."
)

_UNSIZED_REGRESSOR = (
    "{name} sizes its network from the data in fit. To initialize() a model "
    "that was never fitted, pass module__n_features=<number of columns of X> "
    "(the network has one output)."
)

_VALID_METRICS = ("mse", "mae", "r2")


#: A feature whose bag means spread by less than this fraction of its
#: standard deviation has "the same mean in every bag".
_SAME_MEAN_RTOL = 1e-6


def constant_bag_mean_features(bags, X):
    """Indices of the features of ``X`` that vary but have the same
    (weighted) mean in every bag: the bag means cannot separate their effect
    from the intercept. Dense or sparse 2-D ``X`` only (else none)."""
    if X.ndim != 2 or bags.n_bags < 2:
        return np.zeros(0, dtype=np.int64)
    weights = (
        np.ones(len(bags.members))
        if bags.weights is None
        else bags.weights[bags.members]
    )
    # (n_bags, n_samples) averaging matrix of the bags' (weighted) means
    averaging = sp.csr_matrix(
        (weights, (bags.pair_bags, bags.members)),
        shape=(bags.n_bags, bags.n_samples),
    )
    averaging = sp.diags(1.0 / np.asarray(averaging.sum(axis=1)).ravel()) @ averaging
    X = X.astype(np.float64)
    means = averaging @ X
    means = means.toarray() if sp.issparse(means) else np.asarray(means)
    rows = np.unique(bags.members)
    Xb = X[rows]
    if sp.issparse(Xb):
        centre = np.asarray(Xb.mean(axis=0)).ravel()
        spread = np.sqrt(
            np.maximum(np.asarray(Xb.multiply(Xb).mean(axis=0)).ravel() - centre**2, 0)
        )
    else:
        spread = Xb.std(axis=0)
    span = means.max(axis=0) - means.min(axis=0)
    same = (spread > 0) & (span <= _SAME_MEAN_RTOL * spread)
    return np.flatnonzero(same)


def _target_stats(bags):
    """Size-weighted mean and standard deviation of the bag means (the
    standardisation of the targets); a scale of 1 for equal means."""
    sizes = bags.total_weights()
    means = bags.props[:, 0]
    centre = float(np.average(means, weights=sizes))
    scale = float(np.sqrt(np.average((means - centre) ** 2, weights=sizes)))
    if not scale > 1e-12 * max(1.0, abs(centre)):
        scale = 1.0
    return centre, scale


class BagRegressionErrors(Callback):
    """Record the bag errors of the held-out bags every epoch (regression).

    The regression counterpart of the classifier's bag errors: the
    predictions the validation step made are collected and, at the end of
    the epoch, every held-out bag's (weighted) mean prediction, in the units
    of the target, is compared with its mean. The history gets
    ``valid_mse``, ``valid_mae`` and ``valid_r2`` (see
    :mod:`sklearn_llp.metrics`: each bag counts once) and, for each,
    ``valid_<metric>_best`` (lower error, higher R^2), which skorch's
    ``EarlyStopping``/``Checkpoint`` and ``early_stopping`` follow.
    """

    def on_epoch_begin(self, net, **kwargs):
        self.batches_ = []

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs):
        if training:
            return
        pred, segments, means, weights, bag_weights = held_out_batch(
            y_pred.detach().float().reshape(-1), batch[1]
        )
        self.batches_.append((pred, segments, means.reshape(-1), weights, bag_weights))

    def on_epoch_end(self, net, dataset_valid=None, **kwargs):
        if dataset_valid is None or not getattr(self, "batches_", None):
            return
        batches, self.batches_ = self.batches_, []

        def host(index):
            return np.concatenate(
                [b[index].cpu().numpy().astype(np.float64) for b in batches]
            )

        offsets = np.cumsum([0] + [len(b[2]) for b in batches[:-1]])
        segments = np.concatenate(
            [b[1].cpu().numpy() + o for b, o in zip(batches, offsets)]
        )
        pred = host(0) * net.target_scale_ + net.target_mean_
        means, weights, bag_weights = host(2), host(3), host(4)
        if not np.isfinite(pred).all():
            errors = dict.fromkeys(_VALID_METRICS, np.nan)
        else:
            totals = np.bincount(segments, weights=weights, minlength=len(means))
            sums = np.bincount(segments, weights=weights * pred, minlength=len(means))
            errors = regression_errors_of(means, sums / totals, bag_weights)
        for name in _VALID_METRICS:
            value = errors[name]
            sign = -1.0 if name == "r2" else 1.0
            previous = [
                sign * row[f"valid_{name}"]
                for row in net.history[:-1]
                if np.isfinite(row.get(f"valid_{name}", np.nan))
            ]
            best = bool(np.isfinite(value)) and (
                not previous or sign * value < min(previous)
            )
            net.history.record(f"valid_{name}", value)
            net.history.record(f"valid_{name}_best", best)


class LLPRegressor(RegressorMixin, LLPNet):
    """Instance regressor learned from bags and the mean target of each bag.

    Learning from aggregate responses: every bag of rows is labelled only by
    the mean of a continuous target over its rows (conversion value per
    campaign, average hours per district...). ``fit(X, bags, targets)``
    takes one bag id per row and the bags' means; ``predict`` then predicts
    the target of single rows, in its original units. A PyTorch network
    trained with skorch, on the same machinery as
    :class:`~sklearn_llp.LLPClassifier`: every batch holds whole bags and
    bag means are segment reductions on the device. The targets are
    standardised internally (``target_mean_``, ``target_scale_``).

    ``fit(X, y)`` without ``targets`` trains an ordinary regressor on the
    instance targets ``y`` (each row its own bag).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp import LLPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(640, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=640)
    >>> bags = rng.permutation(640) // 8  # 80 bags of 8 rows
    >>> means = np.bincount(bags, weights=y)[bags] / 8  # every row its bag's mean
    >>> reg = LLPRegressor(module__hidden_sizes=(), max_epochs=60, lr=0.01,
    ...                    verbose=0, random_state=0)
    >>> reg = reg.fit(X, bags, means)
    >>> reg.predict(X[:3]).shape
    (3,)
    >>> from sklearn.metrics import r2_score
    >>> r2_score(y, reg.predict(X)) > 0.95  # instance R^2, from bag means only
    True

    Parameters
    ----------
    method : str or RegressionMethod, default="bag"
        The training loss: ``"bag"`` (the size-weighted squared error of every
        bag's mean prediction, :class:`~sklearn_llp.methods.BagLoss`),
        ``"instance"`` (every row regressed on its bag's mean,
        :class:`~sklearn_llp.methods.InstanceLoss`), ``"interpolating"``
        (between the two, with ``method__rho`` in [0, 1],
        :class:`~sklearn_llp.methods.InterpolatingLoss`; Javanmard et al.,
        ICLR 2024) or a :class:`~sklearn_llp.methods.RegressionMethod`
        instance. Hyperparameters are ``method__*`` parameters.
    max_epochs : int, default=100
        Epochs per ``fit`` (and per ``partial_fit``).
    lr : float, default=1e-3
        Learning rate.
    batch_size : int or "auto", default="auto"
        Target number of instances per batch, whole bags packed until it is
        reached; ``"auto"`` as in :class:`~sklearn_llp.LLPClassifier`.
    random_state : int, RandomState instance or None, default=None
        Seeds the network's initialisation, the bag shuffling and the
        validation split; an int makes a CPU fit reproducible for a given
        number of torch threads.
    verbose : int, default=1
        1 prints skorch's epoch table; 0 is silent.
    device : str, torch.device or None, default="auto"
        ``"auto"`` trains on CUDA when available, else on the CPU; or any
        torch device string; None moves nothing (see
        :class:`~sklearn_llp.LLPClassifier`).
    validation_fraction : float, default=None
        Fraction of the rows held out for validation, in whole bags. Every
        epoch the history records ``valid_loss`` (the bag loss, in
        standardised units) and ``valid_mse``, ``valid_mae`` and
        ``valid_r2``: the errors of the held-out bags' mean predictions (see
        :func:`~sklearn_llp.metrics.bag_mean_squared_error`), which skorch's
        ``EarlyStopping``/``Checkpoint`` can monitor. None trains on all
        bags.
    early_stopping : "auto" or bool, default="auto"
        True holds out ``validation_fraction`` of the bags (0.1 if None),
        stops after ``n_iter_no_change`` epochs without a lower held-out
        ``valid_mse`` and restores the best epoch's weights. ``"auto"`` turns
        it on for methods whose ``early_stopping_default`` is True (every
        regression loss: see :class:`~sklearn_llp.methods.RegressionMethod`
        for the measurements) when at least 5 bags (or rows, for instance
        targets) are held out; False never.
    n_iter_no_change : int, default=10
        Epochs without improvement before early stopping ends the fit.
    module : torch.nn.Module class or instance, default=None
        The network; it maps a batch of ``X`` to one tensor of shape
        ``(n_rows, 1)``. ``None`` uses :class:`~sklearn_llp.modules.MLP`
        with one output. A class whose ``__init__`` takes ``n_features``
        and/or ``n_classes`` gets them from the data (``n_classes=1``, the
        output width) unless set as ``module__*`` parameters; an instance is
        a template that is never trained itself (see
        :class:`~sklearn_llp.LLPClassifier`).
    max_bag_size : int, default=1024
        Bags with more instances are subsampled afresh every epoch to this
        many. None never subsamples.
    optimizer : torch optimizer class, default=torch.optim.Adam
    predict_batch_size : int, default=4096
        Rows per forward pass in ``predict``.
    callbacks : list or tuple of skorch callbacks, default=None
        Extra callbacks (skorch's ``EpochScoring``/``BatchScoring`` are
        refused: the rows have no instance targets).
    warm_start : bool, default=False
        Continue from the current weights (and target standardisation) on
        ``fit``.
    n_threads : int, "auto" or None, default="auto"
        Torch intra-op threads during ``fit`` and ``predict`` on the CPU (see
        :class:`~sklearn_llp.LLPClassifier`).
    precision : {"float32", "bfloat16", "float16"}, default="float32"
        Precision of the network's training passes; losses and bag means
        stay in float32.
    **kwargs
        ``method__*``, ``module__*``, ``optimizer__*`` and ``callbacks__*``
        parameters, as in skorch.

    Attributes
    ----------
    target_mean_ : float
        Size-weighted mean of the bag means (the instance targets' mean for
        ``fit(X, y)``); ``predict`` adds it back.
    target_scale_ : float
        Size-weighted standard deviation of the bag means (1.0 if they are
        all equal); the network learns the targets divided by it.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of a DataFrame ``X``.
    module_ : torch.nn.Module
        The trained network (in standardised units).
    method_ : RegressionMethod
        The method object that computed the loss.
    history_ : skorch.History
        Per-epoch and per-batch records, also as ``history``.
    batch_size_ : int
        The batch size used.
    n_train_steps_ : int
        Optimizer steps taken so far.

    See Also
    --------
    sklearn_llp.LLPClassifier : The same from label proportions.
    sklearn_llp.metrics.bag_r2_score : R^2 of predicted bag means.

    Notes
    -----
    As for :class:`~sklearn_llp.LLPClassifier`, everything that can be
    checked is checked before training and a refused ``fit`` leaves the
    estimator as it was. ``score(X, bags, targets)`` is the R^2 of the
    predicted bag means (:func:`~sklearn_llp.metrics.bag_r2_score`); a model
    fitted on instance targets scores R^2 against ``y`` as any
    scikit-learn regressor. A model fitted on bags refuses ``score(X, y)``
    without ``targets``, where ``y`` could be bag ids.

    The network learns standardised targets, so the weights that
    ``save_params`` writes (and ``Checkpoint`` saves) are in standardised
    units: load them into the model that wrote them, or one fitted on the
    same targets (equal ``target_mean_`` and ``target_scale_``), e.g. with
    ``Checkpoint(load_best=True)`` during ``fit``. To move a fitted model,
    pickle it.
    """

    __metadata_request__fit = {"targets": True}
    __metadata_request__partial_fit = {"targets": True}
    __metadata_request__score = {"targets": True}

    # early stopping follows the held-out bag mean squared error
    _stopping_record = "mse"
    _method_task = "regression"
    # an MLP overfits instance targets too: on Adult's weekly hours (34,189
    # training people, 100 epochs) test R^2 -0.118, with early stopping 0.23
    _early_stopping_supervised = True

    def __init__(
        self,
        module=None,
        *,
        method="bag",
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

    # ------------------------------------------------------------------
    # training
    # ------------------------------------------------------------------
    def fit(self, X, y=None, targets=None, sample_weight=None, **fit_params):
        """Train from bags and their means, or from instance targets.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Instances (numeric). Rows of higher-dimensional arrays go to a
            custom module.
        y : array-like, DataFrame, sparse matrix, list of arrays or Bags
            The bag of every row, in any form
            :meth:`LLPClassifier.fit <sklearn_llp.LLPClassifier.fit>` takes
            (ids, composite keys, a membership matrix or row-index lists for
            overlapping bags), or a :class:`~sklearn_llp.core.Bags` from
            :func:`~sklearn_llp.core.check_bag_targets` carrying its means.
            With ``targets=None`` (and no ``Bags``), the target of every row
            (ordinary supervised regression).
        targets : array-like, Series, DataFrame or dict, default=None
            The mean target of every bag: one value per row (its bag's mean,
            equal within a bag), or a per-bag table keyed by bag id (a
            Series, a one-column DataFrame or a dict ``{bag_id: mean}``); with
            overlapping bags one value per bag. See
            :func:`~sklearn_llp.core.check_bag_targets`.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row: a bag's predicted mean is the weighted mean
            of its rows' predictions and its weight in the loss its total
            weight; ``targets`` are taken as the bags' weighted means.
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPRegressor
        """
        return self._fit(X, y, targets, sample_weight, fit_params, partial=False)

    def partial_fit(
        self, X, y=None, targets=None, sample_weight=None, classes=None, **fit_params
    ):
        """Train ``max_epochs`` more epochs without re-initialising.

        Parameters
        ----------
        X, y, targets, sample_weight
            As in :meth:`fit`; the target standardisation of the first fit
            is kept.
        classes : None
            Must be None; in the signature because skorch's ``partial_fit``
            has it (a regressor has no classes).
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPRegressor
        """
        if classes is not None:
            raise ValueError("classes must be None: a regressor has no classes.")
        return self._fit(X, y, targets, sample_weight, fit_params, partial=True)

    def _fit_inputs(self, X, y, props, sample_weight, classes, continuing):
        """Bags from ids and means, or singleton bags from instance targets."""
        n_samples = num_rows(X)
        if props is not None or isinstance(y, Bags):
            bags = check_bag_targets(
                y,
                props,
                n_samples=n_samples,
                sample_weight=sample_weight,
                min_bags=2,
            )
            on_labels = False
        else:
            bags = check_instance_targets(y, n_samples, sample_weight)
            on_labels = True
            if bags.n_bags < 2:
                raise ValueError(
                    "y: at least 2 rows of positive sample_weight are needed."
                )
        # committed by _commit_fit_inputs once every check has passed
        self._new_target_stats = None if continuing else _target_stats(bags)
        return bags, on_labels

    def _commit_fit_inputs(self, bags, on_labels):
        stats = vars(self).pop("_new_target_stats", None)
        if stats is not None:
            self.target_mean_, self.target_scale_ = stats

    def _n_outputs(self):
        return 1

    def _warn_if_unidentifiable(self, bags, X):
        """Warn when a feature has the same mean in every bag: its effect on
        the target cannot be told from the intercept by the bag means."""
        same = constant_bag_mean_features(bags, X)
        if not len(same):
            return
        names = getattr(self, "feature_names_in_", None)
        shown = [str(names[j]) if names is not None else int(j) for j in same[:5]]
        more = f" and {len(same) - 5} more" if len(same) > 5 else ""
        warnings.warn(
            f"Feature(s) {shown}{more} of X vary within the bags but have the "
            "same mean in every bag: the bag means cannot tell their effect on "
            "the target from a constant, so the fitted model's dependence on "
            "them is arbitrary (fits from different seeds may disagree). Form "
            "bags whose mixes of these features differ, e.g. "
            "sklearn_llp.bags.KMeansBagGenerator.",
            IdentifiabilityWarning,
            stacklevel=4,  # fit -> _fit -> here
        )

    def _unsized_message(self):
        return _UNSIZED_REGRESSOR.format(name=type(self).__name__)

    def _bag_batch(self, target):
        """The batch's bags with their means standardised."""
        bags = super()._bag_batch(target)
        means = (bags.bag_props - self.target_mean_) / self.target_scale_
        return bags._replace(bag_props=means)

    def _validation_loss(self, y_pred, bags):
        """The bag loss of the held-out bags (standardised units)."""
        return regression_losses(
            y_pred,
            bags.segments,
            bags.bag_props,
            bags.weights,
            bags.bag_weights,
            members=bags.members,
        )[0]

    @property
    def _default_callbacks(self):
        callbacks = [
            (name, BagRegressionErrors() if name == "valid_bag_errors" else callback)
            for name, callback in super()._default_callbacks
        ]
        return _Callbacks(callbacks)

    # ------------------------------------------------------------------
    # prediction
    # ------------------------------------------------------------------
    @property
    def predict_proba(self):
        """Absent: a regressor has no probabilities (skorch's ``NeuralNet``
        defines one, which is hidden here so that ``hasattr`` is False)."""
        raise AttributeError(
            f"{type(self).__name__} has no predict_proba; use predict."
        )

    def predict(self, X):
        """Predicted target of every row, in the units of the targets.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        outputs = self._forward_outputs(X).float().numpy()[:, 0]
        y_pred = outputs.astype(np.float64) * self.target_scale_ + self.target_mean_
        if not np.isfinite(y_pred).all():
            raise ValueError(
                "The network predicts NaN or infinite values: its weights are "
                "not finite (a diverged fit, or weights loaded from one). Fit "
                "again, e.g. with a smaller lr."
            )
        return y_pred

    def score(self, X, y, targets=None, sample_weight=None):
        """R^2 of the predicted bag means; R^2 on ``y`` if fitted on targets.

        With ``targets`` (or ``y`` a :class:`~sklearn_llp.core.Bags`), ``y``
        holds the bags and the score is
        :func:`~sklearn_llp.metrics.bag_r2_score` of the predictions: the
        R^2 of every bag's mean prediction against its mean. Without, ``y``
        holds instance targets and the score is scikit-learn's R^2; a model
        fitted on bags refuses it (``y`` would be bag ids in GridSearchCV's
        default scoring): use ``sklearn.metrics.r2_score(y_true,
        model.predict(X))`` for instance targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or Bags
            Bag ids (with ``targets``) or instance targets (without).
        targets : array-like, Series or dict, default=None
            Bag means in any form ``fit`` accepts.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of every row within its bag (with ``targets``), or in the
            R^2 (without).

        Returns
        -------
        score : float
            At most 1, greater is better.
        """
        check_is_fitted(self)
        if targets is None and not isinstance(y, Bags):
            if not self._fit_on_labels_:
                raise ValueError(
                    _SCORE_WITHOUT_TARGETS.format(name=type(self).__name__)
                )
            return super().score(X, y, sample_weight=sample_weight)
        bags = check_bag_targets(
            y, targets, n_samples=num_rows(X), sample_weight=sample_weight
        )
        y_pred = self.predict(X)
        means = bag_means_of(bags, y_pred)
        return regression_errors_of(bags.props[:, 0], means, bags.bag_weights)["r2"]
