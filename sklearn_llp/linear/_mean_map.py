"""``MeanMapClassifier``: logistic regression on an estimated mean operator."""

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy import linalg, optimize
from scipy.sparse.linalg import splu
from scipy.special import expit, logsumexp, softmax
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NearestNeighbors
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..bags import warn_if_names_lost
from ..core import (
    LLPClassifierMixin,
    bag_means,
    check_fit_inputs,
    over_dask_partitions,
    refuse_meaningless_cv,
    restore_on_error,
)

_TINY = np.finfo(np.float64).tiny


def _dense(matrix):
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)


def class_means_from_bags(bag_means, props, bag_weights, alpha):
    """Class means that best explain the bag means (:ref:`mean_map`)."""
    weights = bag_weights / bag_weights.sum()
    center = weights @ bag_means
    deviations = bag_means - center
    if alpha > 0:
        gram = props.T @ (weights[:, None] * props)
        gram[np.diag_indices_from(gram)] += alpha
        rhs = props.T @ (weights[:, None] * deviations)
        return center + linalg.solve(gram, rhs, assume_a="pos")
    root = np.sqrt(weights)[:, None]
    return center + np.linalg.lstsq(root * props, root * deviations, rcond=None)[0]


def bag_graph(bag_means, n_neighbors):
    """Laplacian of the k-nearest-neighbour graph of the bag means (:ref:`mean_map`)."""
    n_bags = len(bag_means)
    k = min(n_neighbors, n_bags - 1)
    nearest = NearestNeighbors(n_neighbors=k + 1).fit(bag_means)
    distances, neighbors = nearest.kneighbors(bag_means)
    squared = distances[:, 1:] ** 2  # column 0 is the bag itself
    weights = np.exp(-squared / max(float(np.median(squared)), _TINY)).ravel()
    cells = (np.repeat(np.arange(n_bags), k), neighbors[:, 1:].ravel())
    links = sp.csr_matrix((weights, cells), shape=(n_bags, n_bags))
    links = links.maximum(links.T)
    degrees = np.asarray(links.sum(axis=1)).ravel()
    return (sp.diags(degrees) - links) / n_bags


def bag_class_means_laplacian(
    bag_means, props, bag_weights, alpha, laplacian, n_neighbors
):
    """Class means of every bag, by the Laplacian Mean Map (:ref:`mean_map`)."""
    n_bags, n_classes = props.shape
    weights = bag_weights / bag_weights.sum()
    center = weights @ bag_means
    # unknowns bag-major (row j * n_classes + k): the data term is block
    # diagonal, the smoothing term L kron I
    rows = np.repeat(np.arange(n_bags * n_classes), n_classes)
    slots = np.arange(n_bags * n_classes).reshape(n_bags, n_classes)
    cols = slots.repeat(n_classes, axis=0)
    blocks = weights[:, None, None] * props[:, :, None] * props[:, None, :]
    data = sp.csr_matrix(
        (blocks.ravel(), (rows, cols.ravel())), shape=(n_bags * n_classes,) * 2
    )
    graph = sp.kron(bag_graph(bag_means, n_neighbors), sp.eye(n_classes))
    system = data + laplacian * graph + alpha / n_bags * sp.eye(n_bags * n_classes)
    rhs = (weights[:, None] * props)[:, :, None] * (bag_means - center)[:, None, :]
    solved = splu(sp.csc_matrix(system)).solve(rhs.reshape(n_bags * n_classes, -1))
    return center + solved.reshape(n_bags, n_classes, -1)


def _statistics(X, bags, on_labels, params):
    """Class totals ``T`` and means ``mu``: exact on labels, else by Mean Map."""
    n_samples, n_classes = X.shape[0], len(bags.classes)
    weights = np.ones(n_samples) if bags.weights is None else bags.weights
    pair_weights = weights[bags.members]
    if on_labels:
        codes = np.argmax(bags.props, axis=1)  # bag j is row bags.members[j]
        totals = np.bincount(codes, weights=pair_weights, minlength=n_classes)
        if np.count_nonzero(totals) < 2:
            raise ValueError(
                "y holds only one class (among the rows of positive "
                "sample_weight); at least 2 classes are needed."
            )
        by_class = sp.csr_matrix(
            (pair_weights, (codes, bags.members)), shape=(n_classes, n_samples)
        )
        return totals, _dense(by_class @ X) / np.maximum(totals, _TINY)[:, None]
    bag_totals, means = bags.total_weights(), bag_means(bags, X)
    # a row in several bags counts once in T, with the mean of their props
    times_bagged = np.bincount(bags.members, minlength=n_samples)
    share = pair_weights / times_bagged[bags.members]
    bag_shares = np.bincount(bags.pair_bags, weights=share, minlength=bags.n_bags)
    totals = bag_shares @ bags.props
    if np.count_nonzero(totals > 0) < 2:
        raise ValueError(
            "props give a positive proportion to only one class "
            f"({bags.classes.tolist()[int(np.argmax(totals))]!r}); at least 2 "
            "classes are needed."
        )
    omega = bag_totals if params["bag_weights"] == "size" else np.ones(bags.n_bags)
    alpha, laplacian = params["mean_alpha"], params["laplacian"]
    if laplacian == 0:
        return totals, class_means_from_bags(means, bags.props, omega, alpha)
    per_bag = bag_class_means_laplacian(
        means, bags.props, omega, alpha, laplacian, params["n_neighbors"]
    )
    sums = np.einsum("j,jk,jkd->kd", bag_shares, bags.props, per_bag)
    return totals, sums / np.maximum(totals, _TINY)[:, None]


def _fit_logistic(X, row_weights, totals, means, params):
    """Logistic regression from the class statistics, by L-BFGS (:ref:`mean_map`)."""
    C, fit_intercept = params["C"], params["fit_intercept"]
    n_classes, n_features = means.shape
    total = row_weights.sum()
    weights = row_weights / total
    targets = totals[:, None] * means / total  # the mean operator
    priors = totals / total
    binary = n_classes == 2
    if binary:
        # class 1's statistic, symmetrised: with smoothed class means the two
        # statistics need not add up to the feature total, and the model
        # must not depend on which class is first (exact statistics: as is)
        total_x = _dense(X.T @ weights).ravel() if sp.issparse(X) else weights @ X
        targets = 0.5 * (targets[1] + total_x - targets[0])[None, :]
        priors = priors[1:]
    n_outputs = targets.shape[0]
    n_coef = n_outputs * n_features
    penalty = 1.0 / (C * total)
    # logits as (n_outputs, n_samples): reductions over the classes are then
    # element-wise operations between rows, not short strided reductions
    if sp.issparse(X):
        X_T = X.T.tocsr()
        forward = lambda coef: np.ascontiguousarray(_dense(X @ coef.T).T)  # noqa: E731
        backward = lambda residual: _dense(X_T @ residual.T).T  # noqa: E731
    else:
        forward, backward = (lambda coef: coef @ X.T), (lambda residual: residual @ X)

    def objective(theta):
        coef = theta[:n_coef].reshape(n_outputs, n_features)
        intercept = theta[n_coef:] if fit_intercept else np.zeros(n_outputs)
        logits = forward(coef)
        logits += intercept[:, None]
        if binary:
            log_partition = np.logaddexp(0.0, logits[0])
            proba = expit(logits, out=logits)
        else:  # a stable log-sum-exp, in place (no copy of the logits)
            top = logits.max(axis=0)
            logits -= top
            proba = np.exp(logits, out=logits)
            norm = proba.sum(axis=0)
            proba /= norm
            log_partition = np.log(norm) + top
        value = (
            log_partition @ weights
            - np.vdot(coef, targets)
            - intercept @ priors
            + 0.5 * penalty * np.vdot(coef, coef)
        )
        residual = np.multiply(proba, weights, out=proba)
        grad = [(backward(residual) - targets + penalty * coef).ravel()]
        if fit_intercept:
            grad.append(residual.sum(axis=1) - priors)
        return value, np.concatenate(grad)

    start = np.zeros(n_coef + (n_outputs if fit_intercept else 0))
    ftol = 64 * np.finfo(np.float64).eps
    options = dict(maxiter=params["max_iter"], maxls=50, gtol=params["tol"], ftol=ftol)
    result = optimize.minimize(
        objective, start, jac=True, method="L-BFGS-B", options=options
    )
    if result.status != 0:
        warnings.warn(
            f"L-BFGS did not converge in {result.nit} iterations "
            f"({result.message}). Increase max_iter, or decrease C (a stronger "
            "penalty); standardised features also help.",
            ConvergenceWarning,
            stacklevel=3,
        )
    coef = result.x[:n_coef].reshape(n_outputs, n_features)
    intercept = result.x[n_coef:] if fit_intercept else np.zeros(n_outputs)
    return coef, intercept, int(result.nit)


class MeanMapClassifier(LLPClassifierMixin, BaseEstimator):
    """Linear classifier learned from bags by Mean Map.

    Class feature sums estimated from the bag means, then logistic regression by
    L-BFGS; dense or sparse ``X``, no PyTorch (:ref:`mean_map`).

    Parameters
    ----------
    C : float, default=1e-3
        Inverse strength of the L2 penalty (strong: the class means are noisy).
    mean_alpha : float, default=1e-4
        Ridge penalty pulling the class means towards the mean of the bags.
    bag_weights : {"size", "uniform"}, default="size"
        Weight of a bag in the least squares: its total sample weight, or 1.
    laplacian : float, default=0.0
        Smoothing of the Laplacian Mean Map; 0 is Mean Map.
    n_neighbors : int, default=10
        Neighbours of a bag in the graph of the Laplacian Mean Map.
    classes : array-like of shape (n_classes,), default=None
        Class labels in the column order of ``props``.
    threshold : {"auto", "prior", "argmax"} or float, default="auto"
        The decision rule of ``predict`` (:ref:`threshold`).
    fit_intercept : bool, default=True
        Fit an unpenalised intercept per class.
    tol : float, default=1e-4
        L-BFGS gradient tolerance, per unit of sample weight.
    max_iter : int, default=500
        Most L-BFGS iterations.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_, intercept_ : ndarray of shape (n_rows, n_features), (n_rows,)
        One row (for ``classes_[1]``) with two classes, else one per class.
    class_means_, class_prior_ : ndarray
        Estimated class means (exact on labels); class shares of the rows.
    threshold_, decision_offsets_ : float or None, ndarray
        The fitted decision rule.
    n_iter_, n_features_in_, feature_names_in_ : ndarray of shape (1,), int, ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_llp.linear import MeanMapClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> bags = np.argsort(np.argsort(X[:, 0])) // 25  # 23 bags along feature 0
    >>> props = np.bincount(bags, weights=y)[bags] / np.bincount(bags)[bags]
    >>> clf = MeanMapClassifier().fit(X, bags, props)  # positive fractions
    >>> bool(np.mean(clf.predict(X) == y) > 0.9)
    True
    """

    __metadata_request__fit = {"props": True}
    __metadata_request__score = {"props": True}

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "mean_alpha": [Interval(Real, 0, None, closed="left")],
        "bag_weights": [StrOptions({"size", "uniform"})],
        "laplacian": [Interval(Real, 0, None, closed="left")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "classes": ["array-like", None],
        "threshold": [
            StrOptions({"auto", "prior", "argmax"}),
            Interval(Real, 0, 1, closed="neither"),
        ],
        "fit_intercept": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        C=1e-3,
        *,
        mean_alpha=1e-4,
        bag_weights="size",
        laplacian=0.0,
        n_neighbors=10,
        classes=None,
        threshold="auto",
        fit_intercept=True,
        tol=1e-4,
        max_iter=500,
    ):
        self.C = C
        self.mean_alpha = mean_alpha
        self.bag_weights = bag_weights
        self.laplacian = laplacian
        self.n_neighbors = n_neighbors
        self.classes = classes
        self.threshold = threshold
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter

    def _validate_X(self, X, reset):
        return validate_data(self, X, reset=reset, accept_sparse="csr", dtype=float)

    def fit(self, X, y=None, props=None, sample_weight=None):
        """Fit from bags and proportions, or from labels if ``props=None``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Numeric instances (standardised, for a comparable ``C``).
        y : array-like, DataFrame, sparse matrix, list of arrays or Bags
            The bags (:ref:`data_model`), or labels when ``props=None``.
        props : array-like, DataFrame, Series or dict, default=None
            The bags' label proportions.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : MeanMapClassifier
        """
        refuse_meaningless_cv(self, props)
        self._validate_params()
        with restore_on_error(self, ("n_features_in_", "feature_names_in_")):
            X = self._validate_X(X, reset=True)
            given = dict(sample_weight=sample_weight, classes=self.classes)
            bags, on_labels = check_fit_inputs(y, props, n_samples=X.shape[0], **given)
            warn_if_names_lost(bags, props, 2)
            self._check_threshold(bags.classes)  # before any fitting
        totals, means = _statistics(X, bags, on_labels, self.get_params())
        rows = bags.distinct_rows()
        X_fit = X if len(rows) == X.shape[0] else X[rows]  # rows in no bag out
        weights = (np.ones(X.shape[0]) if bags.weights is None else bags.weights)[rows]
        self.coef_, self.intercept_, n_iter = _fit_logistic(
            X_fit, weights, totals, means, self.get_params()
        )
        self.classes_ = np.asarray(bags.classes)
        self.class_means_ = means
        self.class_prior_ = totals / totals.sum()
        self.n_iter_ = np.array([n_iter])
        self._fit_on_labels_ = on_labels
        self._fit_decision(bags, lambda rows: self.predict_proba(X[rows]))
        return self

    @over_dask_partitions
    def decision_function(self, X):
        """Logits: of ``classes_[1]`` against ``classes_[0]`` for two classes.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        scores = _dense(X @ self.coef_.T) + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def _class_scores(self, X, log):
        """Probabilities (or their log) from :meth:`decision_function`."""
        scores = self.decision_function(X)
        if scores.ndim == 1 and not log:
            positive = expit(scores)
            return np.column_stack([1.0 - positive, positive])
        if scores.ndim == 1:
            scores = np.column_stack([np.zeros_like(scores), scores])
        if not log:
            return softmax(scores, axis=1)
        return scores - logsumexp(scores, axis=1, keepdims=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
