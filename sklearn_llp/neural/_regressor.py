"""``LLPRegressor``: a scikit-learn regressor learned from bag means."""

import warnings
from copy import deepcopy

import numpy as np
import scipy.sparse as sp

from ..core import (
    REGRESSION_METRICS,
    LLPRegressorMixin,
    bag_errors_of,
    bag_means,
    over_dask_partitions,
)
from ..exceptions import IdentifiabilityWarning
from ..methods.functional import regression_losses
from ._callbacks import lowest_window_epoch
from ._net import LLPNet, declare_parameters

#: A feature whose bag means spread by less than this fraction of its
#: standard deviation has "the same mean in every bag".
_SAME_MEAN_RTOL = 1e-6


def constant_bag_mean_features(bags, X):
    """Features of 2-D ``X`` that vary but have the same mean in every bag."""
    if X.ndim != 2 or bags.n_bags < 2:
        return np.zeros(0, dtype=np.int64)
    X = X.astype(np.float64)
    means = bag_means(bags, X)
    rows = X[bags.distinct_rows()]
    if sp.issparse(rows):
        centre = np.asarray(rows.mean(axis=0)).ravel()
        square = np.asarray(rows.multiply(rows).mean(axis=0)).ravel()
        spread = np.sqrt(np.maximum(square - centre**2, 0))
    else:
        spread = rows.std(axis=0)
    span = means.max(axis=0) - means.min(axis=0)
    return np.flatnonzero((spread > 0) & (span <= _SAME_MEAN_RTOL * spread))


@declare_parameters
class LLPRegressor(LLPRegressorMixin, LLPNet):
    """Instance regressor learned from bags and the mean target of each bag.

    ``fit(X, bags, targets)``, then ``predict`` gives every row's target, in the
    targets' units (the network learns them standardised; :ref:`regression`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp import LLPRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(400, 3))
    >>> bags = np.repeat(np.arange(40), 10)
    >>> y = X @ [1.0, -2.0, 0.5]
    >>> means = np.bincount(bags, weights=y) / 10
    >>> reg = LLPRegressor(max_epochs=30, verbose=0, random_state=0)
    >>> reg = reg.fit(X, bags, means[bags])
    >>> reg.predict(X[:3]).shape
    (3,)

    Parameters
    ----------{module}
    method : str or RegressionMethod, default="bag"
        ``"bag"`` (squared error of every bag's mean prediction),
        ``"instance"`` (every row regressed on its bag's mean),
        ``"interpolating"`` or a
        :class:`~sklearn_llp.methods.RegressionMethod`.{key}{more}
    Attributes
    ----------
    target_mean_, target_scale_ : float
        The standardisation of the targets (size-weighted over bags).
    module_, method_, batch_size_, best_epoch_, do_early_stopping_, fit_plan_
        As for :class:`~sklearn_llp.LLPClassifier` (``fit_plan_.refit``:
        whether a fit that never stopped refits on every bag).
    stopping_history_ : History or None
        After a refit on every bag: the history that chose ``best_epoch_``.
    train_bag_ids_ : ndarray or None
        The bags trained on, which the bag scorers check.
    n_features_in_, feature_names_in_
        As in scikit-learn.

    See Also
    --------
    sklearn_llp.LLPClassifier : The same from label proportions.
    sklearn_llp.metrics.bag_r2_score : R^2 of predicted bag means, bags
        weighted by size (not instance R^2 when bags are not random).

    Notes
    -----
    Early stopping keeps the middle epoch of the 5 with the lowest mean
    held-out error; with ``early_stopping="auto"`` a fit that never stopped
    is refit on every bag for that many epochs (:ref:`regression_early_stopping`).
    """

    __metadata_request__fit = {"targets": True}
    __metadata_request__partial_fit = {"targets": True}
    __metadata_request__score = {"targets": True}

    _task = "regression"
    _stopping_metric = "mse"
    _early_stopping_supervised = True  # an MLP overfits instance targets too
    _refits = True  # :ref:`regression_early_stopping`
    _stopping_noise = 3.0  # stop on a rise beyond 3 noise scales

    def __init__(self, module=None, *, method="bag", **kwargs):
        super().__init__(module, method=method, **kwargs)

    def fit(self, X, y=None, targets=None, sample_weight=None, **fit_params):
        """Train from bags and their means, or from instance targets.

        Parameters
        ----------
        X : array-like, sparse matrix or Dask collection, shape (n_samples, n_features)
            A Dask array or DataFrame is streamed by partition (:ref:`dask`).
        y : array-like, DataFrame, sparse matrix, list of arrays or Bags
            The bag of every row (or the target of every row when
            ``targets`` is None).
        targets : array-like, Series, DataFrame or dict, default=None
            The mean target of every bag: one value per row or per bag, or a
            table with the columns ``mean``, or ``sum`` and ``size`` (a
            ``dp_bag_means`` release, its ``std`` unused).
        sample_weight : array-like of shape (n_samples,), default=None
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPRegressor
        """
        self._fit(X, y, targets, sample_weight, fit_params, partial=False)
        self.stopping_history_ = None
        stopping = dict(self.callbacks_).get("early_stopping")
        stopped = getattr(stopping, "stopped_", True)
        if self.fit_plan_.refit and self.best_epoch_ and not stopped:
            self._refit(X, y, targets, sample_weight, fit_params)
        return self

    def _refit(self, X, y, targets, sample_weight, fit_params):
        """Fit afresh on every bag for the epochs the held-out bags chose."""
        history, plan = deepcopy(self.history), self.fit_plan_
        epochs = lowest_window_epoch(history[:, f"valid_{self._stopping_metric}"])
        if self.verbose:
            print(
                f"Early stopping never stopped: refitting afresh on every bag, "
                f"the held-out ones too, for {epochs} epochs (the middle of the "
                f"5 with the lowest mean valid_{self._stopping_metric})."
            )
        saved = {"early_stopping": self.early_stopping, "max_epochs": self.max_epochs}
        saved["warm_start"] = self.warm_start  # a refit starts afresh
        self.early_stopping, self.max_epochs, self.warm_start = False, epochs, False
        try:
            with warnings.catch_warnings():  # the first fit gave them
                warnings.simplefilter("ignore")
                self._fit(X, y, targets, sample_weight, fit_params, partial=False)
        finally:
            for name, value in saved.items():
                setattr(self, name, value)
        self.fit_plan_, self.best_epoch_ = plan, epochs
        self.stopping_history_ = history

    def partial_fit(
        self, X, y=None, targets=None, sample_weight=None, classes=None, **fit_params
    ):
        """Train ``max_epochs`` more epochs; the first fit's scale is kept.

        Parameters
        ----------
        X, y, targets, sample_weight
            As in :meth:`fit`.
        classes : None
            In skorch's signature; a regressor has none.
        **fit_params
            Passed to the module's ``forward``.

        Returns
        -------
        self : LLPRegressor
        """
        if classes is not None:
            raise ValueError("classes must be None: a regressor has no classes.")
        self._fit(X, y, targets, sample_weight, fit_params, partial=True)
        self.stopping_history_ = None  # partial fits never refit
        return self

    def _commit_fit_inputs(self, bags, on_labels, continuing):
        if continuing:
            return
        sizes = bags.total_weights()
        centre = float(np.average(bags.means, weights=sizes))
        scale = float(np.sqrt(np.average((bags.means - centre) ** 2, weights=sizes)))
        if not scale > 1e-12 * max(1.0, abs(centre)):
            scale = 1.0
        self.target_mean_, self.target_scale_ = centre, scale

    def _values_of(self, bags):
        return (bags.values - self.target_mean_) / self.target_scale_

    def _n_outputs(self):
        return 1

    def _warn_if_unidentifiable(self, bags, X):
        same = constant_bag_mean_features(bags, X)
        if not len(same):
            return
        names = getattr(self, "feature_names_in_", None)
        shown = [str(names[j]) if names is not None else int(j) for j in same[:5]]
        more = f" and {len(same) - 5} more" if len(same) > 5 else ""
        warnings.warn(
            f"Feature(s) {shown}{more} of X vary within the bags but have the same "
            "mean in every bag: the bag means cannot tell their effect on the target "
            "from a constant, so the fitted model's dependence on them is arbitrary "
            "(fits from different seeds may disagree). Form bags whose mixes of these "
            "features differ, e.g. sklearn_llp.bags.KMeansBagGenerator.",
            IdentifiabilityWarning,
            stacklevel=5,  # fit -> _fit -> _validate_and_train -> here
        )

    def _validation_loss(self, y_pred, bags):
        """The bag loss of the held-out bags (standardised units)."""
        args = (bags.segments, bags.bag_props, bags.weights, bags.bag_weights)
        return regression_losses(y_pred, *args, members=bags.members)[0]

    def _bag_errors(self, bags, logits):
        if logits is None:
            return dict.fromkeys(REGRESSION_METRICS)
        return bag_errors_of(bags, self._unscale(logits), REGRESSION_METRICS)

    def _unscale(self, outputs):
        """The targets of the network's (n, 1) float ``outputs``."""
        y_pred = outputs.numpy()[:, 0].astype(np.float64)
        return y_pred * self.target_scale_ + self.target_mean_

    @property
    def predict_proba(self):
        """Absent: a regressor has no probabilities."""
        raise AttributeError(
            f"{type(self).__name__} has no predict_proba; use predict."
        )

    @over_dask_partitions
    def predict(self, X):
        """Predicted target of every row, in the units of the targets.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._forward_outputs(X, self._unscale, "values")
